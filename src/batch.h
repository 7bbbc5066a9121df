/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  One batch of a continuous query (batch.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BATCH_H
#define CQ_BATCH_H

#include "postgres.h"
#include "catalog.h"
#include "progress.h"

#define CQ_BATCH_UNLIMITED 0x01	/* ignore max_rows_per_trigger */
#define CQ_BATCH_NODATA_ONLY 0x02	/* only a pending no-data batch */
extern void cq_batch_node_start(Oid source, int32 id, bool latest);
extern char *cq_batch_node_goal(Oid source, Oid owner);
extern void cq_batch_run(int32 id, bool unlimited, CqBatchResult *res);
extern void cq_batch_run_ext(int32 id, int flags, CqBatchResult *res);
extern void cq_batch_before_lock(void);
extern void cq_batch_run_query(CqQuery *q, const CqLastOffset *last_in, int flags,
							   CqBatchResult *res);

#endif							/* CQ_BATCH_H */
