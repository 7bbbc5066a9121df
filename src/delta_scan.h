/*-------------------------------------------------------------------------
 *
 * delta_scan.h
 *	  The new rows of an incremental batch on the store read in C for
 *	  deltagg.c's aggregation (delta_scan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DELTA_SCAN_H
#define CQ_DELTA_SCAN_H

#include "postgres.h"
#include "tcop/dest.h"
#include "analyze.h"

struct CqDeltaAgg;
struct CqDeltaScan;

extern struct CqDeltaScan *cq_delta_scan_build(CqAnalysis *an, const struct CqDeltaAgg *da, Oid owner);
extern struct CqDeltaScan *cq_delta_scan_copy(const struct CqDeltaScan *ds);
extern List *cq_delta_scan_inval_items(const struct CqDeltaScan *ds);
extern bool cq_delta_scan_run(const struct CqDeltaScan *ds, const char *sql, DestReceiver *agg,
							  Datum *params, const char *nulls, bool read_only);

#endif							/* CQ_DELTA_SCAN_H */
