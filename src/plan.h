/*-------------------------------------------------------------------------
 *
 * plan.h
 *	  The SQL a batch runs, assembled and cached (plan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_PLAN_H
#define CQ_PLAN_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"
#include "store.h"

/* The SQL a batch runs, built from an analysis (plan.c). */
typedef struct CqPlan
{
	char	   *batch_sql;		/* main statement: returns metrics */
	char	   *batch_sql_history;	/* same, batch 0 reading history rows */
	char	   *complete_sql;	/* complete mode: reload target from state */
	char	   *count_sql;		/* how many new rows? (num_input_rows) */
	char	   *count_sql_history;	/* same, batch 0 with history */
	char	   *count_xids_sql; /* new rows per transaction (row limit) */
	char	   *rebuild_sql;	/* refold all processed rows into empty state */
	bool		single_scan;	/* main statement also returns the batch's row count */
	char	   *count_history_sql;
	bool		use_store;		/* state in the shared-memory store (store.c) */
	CqStoreSql	store;			/* its statements */
	/* cq.bench_split_batch (table path, update mode): batch_sql in two */
	char	   *split_state_sql;	/* the state CTEs: m's rows, then d's row count */
	char	   *split_sink_sql; /* the target writes over m, an ephemeral relation */
	/* update mode's MERGE path (merge.c) */
	bool		merge_eligible; /* every key NOT NULL, a plain target... */
	char	   *merge_why;		/* why (not), for cq.explain */
	char	   *batch_sql_merge;	/* table path: batch_sql with MERGE, statistics
									 * through cq.batch_metrics; NULL when the new
									 * rows do not bound the changed groups */
	char	   *bulk_sql;		/* batch 0 over history loaded directly (bulkload.c),
								 * or NULL */
	char	   *bulk_sql_all;	/* the same without the test of cq_xid, or NULL */
} CqPlan;

extern CqPlan *cq_plan_build(CqAnalysis *an, CqQuery *q);
extern void cq_plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan);
extern bool cq_plan_runs_empty(CqAnalysis *an);
extern uint64 cq_plan_generation(void);
extern char *cq_plan_key(CqQuery *q);

#endif							/* CQ_PLAN_H */
