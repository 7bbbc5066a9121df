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

extern bool cq_store_estimate(CqAnalysis *an, const char *delta_sql, double *groups, double *bytes);

#endif							/* CQ_STORE_ESTIMATE_H */
