/*-------------------------------------------------------------------------
 *
 * timeexpr.h
 *	  Interval and window-end helpers (timeexpr.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_TIMEEXPR_H
#define CQ_TIMEEXPR_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "nodes/nodes.h"

extern bool cq_interval_usecs(const Interval *iv, int64 *us);
extern char *cq_interval_sql(Node *c, const char *what, bool exact);
extern char *cq_window_end_sql(bool tz, const char *step);
extern const char *cq_date_trunc_step(Node *unit);

extern double cq_ms_since(TimestampTz t0);

#endif							/* CQ_TIMEEXPR_H */
