/*-------------------------------------------------------------------------
 *
 * objects.h
 *	  A query's internal objects in cq_state (objects.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_OBJECTS_H
#define CQ_OBJECTS_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"

extern char *cq_objects_name(const char *prefix, int32 id);
extern Oid	cq_objects_relid(const char *prefix, int32 id);
extern void cq_objects_ensure_key_index(CqAnalysis *an, Oid target, bool hashed);
extern char *cq_objects_deparse_query(Query *query);
extern void cq_objects_create(CqAnalysis *an, int32 id, Oid owner, Oid target, CqOptions *opts);
extern void cq_objects_recreate(CqQuery *q);
extern bool cq_objects_recreating;
extern void cq_objects_drop(CqQuery *q);
extern void cq_objects_replace_query_view(int32 id, CqAnalysis *an);
extern void cq_objects_replace_final_view(int32 id, CqAnalysis *an);
extern void cq_objects_replace(CqQuery *q, CqAnalysis *an);
extern char *cq_objects_target_comment(Oid target, const char *name, CqOptions *opts);
extern void cq_objects_comment_target(Oid target, const char *name, CqOptions *opts);

#endif							/* CQ_OBJECTS_H */
