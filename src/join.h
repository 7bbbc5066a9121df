/*-------------------------------------------------------------------------
 *
 * join.h
 *	  Joins of two streams: buffers, batches, rebuild (join.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_JOIN_H
#define CQ_JOIN_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"
#include "progress.h"

extern void cq_join_create(CqAnalysis *an, const char *name, int32 id, Oid owner, CqOptions *opts);
extern void cq_join_reset(CqQuery *q);
extern char *cq_join_explain(CqQuery *q);
extern void cq_join_restored(CqQuery *q);
extern void cq_join_run_query(CqQuery *q, CqLastOffset *last, bool nodata_only, bool unlimited,
							  CqBatchResult *res);

#endif							/* CQ_JOIN_H */
