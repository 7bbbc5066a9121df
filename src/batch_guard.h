/*-------------------------------------------------------------------------
 *
 * batch_guard.h
 *	  No batch of a query inside one of its own batches (batch_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BATCH_GUARD_H
#define CQ_BATCH_GUARD_H

#include "postgres.h"
#include "catalog.h"
#include "progress.h"

typedef void (*CqBatchBody) (CqQuery *q, const CqLastOffset *last_in, int flags,
							 CqBatchResult *res);

extern void cq_batch_guard_run(CqQuery *q, CqBatchBody body, const CqLastOffset *last_in,
							   int flags, CqBatchResult *res);

#endif							/* CQ_BATCH_GUARD_H */
