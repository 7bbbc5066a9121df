/*-------------------------------------------------------------------------
 *
 * delta.h
 *	  The new rows of a batch (delta.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DELTA_H
#define CQ_DELTA_H

#include "postgres.h"
#include "analyze.h"

extern Param *cq_make_param(int n, Oid type);
extern Oid	cq_delta_xid_new_function(Oid source);
extern Oid	cq_delta_stamp_type(Oid source);
extern const char *cq_delta_xid_new_name(Oid type);
extern char *cq_delta_pred_sql(Oid source, bool history);
extern Node *cq_delta_quals(CqAnalysis *an, bool history);
extern char *cq_delta_inner_sql(CqAnalysis *an, bool history);
extern bool cq_delta_history_all_ok(CqAnalysis *an);
extern char *cq_delta_history_all_sql(CqAnalysis *an);
extern char *cq_delta_fold_inner_sql(CqAnalysis *an, bool history, bool all);
/* runs a statement of batch 0 (cq_delta_run_history); returns the caller's result */
typedef bool (*CqHistoryRun) (const char *sql, void *arg);
extern bool cq_delta_run_history(Oid source, Datum cur, const char *sql, const char *sql_all,
								 CqHistoryRun run, void *arg, bool *untested);
extern char *cq_delta_avg_time_sql(const char *epoch);
extern char *cq_delta_count_stats_sql(CqAnalysis *an, const char *from, const char *pred,
									  bool history);

#endif							/* CQ_DELTA_H */
