/*-------------------------------------------------------------------------
 *
 * batch_index.h
 *	  Indexes dropped before batch 0's load and built after it
 *	  (batch_index.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BATCH_INDEX_H
#define CQ_BATCH_INDEX_H

#include "postgres.h"
#include "nodes/pg_list.h"
#include "analyze.h"
#include "catalog.h"

extern List *cq_batch_unindex_state(CqQuery *q, CqAnalysis *an);
extern List *cq_batch_unindex_target(CqQuery *q, CqAnalysis *an);
extern void cq_batch_build_indexes(List *defs);
extern void cq_batch_build_indexes_as_user(List *defs);
extern void cq_batch_analyze_loaded(CqQuery *q, CqAnalysis *an, bool state, bool target);

#endif							/* CQ_BATCH_INDEX_H */
