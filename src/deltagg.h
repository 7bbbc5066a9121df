/*-------------------------------------------------------------------------
 *
 * deltagg.h
 *	  d's partial aggregation in C for a batch on the store (deltagg.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DELTAGG_H
#define CQ_DELTAGG_H

#include "postgres.h"
#include "access/tupdesc.h"
#include "tcop/dest.h"
#include "analyze.h"
#include "store.h"

extern void cq_deltagg_build(CqAnalysis *an, TupleDesc state, CqStoreSql *sql);
extern struct CqDeltaAgg *cq_deltagg_copy(const struct CqDeltaAgg *da);
extern DestReceiver *cq_deltagg_begin(struct CqDeltaAgg *da, DestReceiver *fold, TupleDesc state);
extern bool cq_deltagg_add(DestReceiver *self, Datum *v, bool *n);
extern List *cq_deltagg_scan_exprs(const struct CqDeltaAgg *da, CqAnalysis *an);
extern bool cq_deltagg_end(DestReceiver *self);

#endif							/* CQ_DELTAGG_H */
