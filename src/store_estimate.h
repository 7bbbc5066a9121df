/*-------------------------------------------------------------------------
 *
 * store_estimate.h
 *	  The estimate of batch 0's state in the shared-memory store, made
 *	  before it runs (store_estimate.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_ESTIMATE_H
#define CQ_STORE_ESTIMATE_H

#include "postgres.h"
#include "analyze.h"
#include "store.h"

extern bool cq_store_estimate(CqAnalysis *an, const char *delta_sql, double *groups, double *bytes);
extern void cq_store_expect(CqStore *st, double groups, double bytes);

#endif							/* CQ_STORE_ESTIMATE_H */
