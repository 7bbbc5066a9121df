/*-------------------------------------------------------------------------
 *
 * plan_deps.h
 *	  What a cached analysis and its SQL depend on (plan_deps.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_PLAN_DEPS_H
#define CQ_PLAN_DEPS_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"

typedef struct CqPlanDeps CqPlanDeps;

extern CqPlanDeps *cq_plan_deps_collect(CqQuery *q, CqAnalysis *an, Query *stored, Oid read,
										List *more_items, MemoryContext cxt);
extern bool cq_plan_deps_has_rel(const CqPlanDeps *deps, Oid relid);
extern bool cq_plan_deps_has_hash(const CqPlanDeps *deps, int cacheid, uint32 hashvalue);
extern bool cq_plan_deps_unchanged(const CqPlanDeps *deps);

#endif							/* CQ_PLAN_DEPS_H */
