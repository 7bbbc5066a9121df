/*-------------------------------------------------------------------------
 *
 * store.h
 *	  The shared-memory state store of a query (store.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_H
#define CQ_STORE_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"
#include "progress.h"
#include "store_setup.h"
#include "store_xact.h"
#include "utils/tuplestore.h"

/* The statements a batch of a query on the store runs (built by plan.c). */
typedef struct CqStoreSql
{
	char	   *delta;			/* d: the new rows' partial state rows ($1..$4) */
	char	   *delta_history;	/* same, batch 0 reading history rows */
	char	   *delta_c;		/* d's scan alone, aggregated in C (deltagg.c), or NULL */
	struct CqDeltaAgg *deltagg; /* its aggregation */
	struct CqDeltaScan *deltascan;	/* its rows read in C (delta_scan.c), or NULL */
	char	   *delta_history_all;	/* same without the test of cq_xid, or NULL
									 * (cq_delta_history_all_sql) */
	char	   *merge;			/* merged state rows of the pairs in cq_mp */
	char	   *sink;			/* target writes over m and x (none: complete) */
	char	   *sink_history;	/* same, batch 0 */
	bool		sink_history_plain; /* it reads m's state columns only (no _sid, _ins) */
	char	   *sink_merge;		/* update mode: sink by MERGE (merge.c), or NULL */
	char	   *sink_existing;	/* sink for an m without new groups (no o1), or NULL */
	char	   *sink_new;		/* sink for an m of new groups only (o1 alone), or NULL */
	char	   *complete;		/* complete mode: reload the target from cq_all */
	char	   *merge_kinds;	/* per part p<i>, char i-1: its CqMergeKind + 'A' */
	bool		counts;			/* single scan: d's rows give the batch's row count */
	bool		et_stats;		/* and its event-time statistics (4 columns after the state row) */
	Oid			source;			/* the source table, read by delta_history_all */
	/* sink_history_plain: d with each group's target row (store_load.c) */
	char	   *load_history;	/* delta_history's d, then the outputs (and HAVING) */
	char	   *load_history_all;	/* same over delta_history_all's d, or NULL */
	Oid			target;
	char	  **out_names;		/* the outputs' names */
	int			nout;
	/* of the target when the plan was built (cq_sink_target_facts) */
	bool		target_has_columns; /* every output's column */
	bool		update_triggers;	/* an UPDATE fires a statement trigger */
	bool		having;			/* load_history's last column is HAVING */
	/* a later batch of new groups only, written from C (cq_target_load_new) */
	char	   *load_new;		/* over m: h, then the outputs (and HAVING), or NULL */
	int		   *key_outs;		/* per grouping key: the output that gives it, or -1 */
	int			nkeys;
	/* a later batch's changed groups, written from C (cq_target_update) */
	char	   *load_changed;	/* over m: h, _ins, the outputs (and HAVING), or NULL */
	bool	   *out_key;		/* per output: a grouping key (an UPDATE keeps its column) */
} CqStoreSql;

/* What a fold on the store did (the metrics the SQL path's statement returns). */
typedef struct CqStoreMetrics
{
	int64		updated;		/* state rows changed (m) */
	int64		inserted;		/* of which new groups */
	int64		removed;		/* evicted (x) */
	int64		dropped;		/* late groups of the delta */
	int64		output_rows;
	bool		wrote;			/* a target statement ran */
	bool		by_merge;		/* and it was sink_merge */
	bool		by_c;			/* or the rows were written from C */
	/* CqStoreSql.counts: the batch's rows and event-time statistics */
	int64		input_rows;
	bool		has_event_time;
	TimestampTz et_min;
	TimestampTz et_max;
	TimestampTz et_avg;
	/* the fold's phases, in this backend's CPU time (ms; DEBUG1 report) */
	double		d_ms;			/* the d statement */
	double		lookup_ms;		/* lookups, puts (cq.bench_split_batch; else inside d_ms) */
	double		load_ms;		/* batch 0's target rows loaded (likewise) */
	double		merge_ms;		/* the merge statement and its results */
	double		evict_ms;		/* eviction */
	double		enr_ms;			/* building m and x */
	double		sink_ms;		/* the target statement */
	bool		untested;		/* d read the history without testing cq_xid */
} CqStoreMetrics;

extern CqStore *cq_store_open(CqQuery *q, CqAnalysis *an, const CqLastOffset *last, bool *lost);
extern bool cq_store_read(Oid dboid, int32 query_id, Tuplestorestate *ts, TupleDesc desc);
extern int64 cq_store_touch(Oid dboid, int32 query_id);
extern int64 cq_store_rows(CqStore *st);
extern bool cq_store_over_budget(CqStore *st);
extern bool cq_store_switched(CqStore *st);
extern bool cq_store_info(Oid dboid, int32 query_id, Oid rowtype, int64 *batch_id, int64 *rows,
						  int64 *bytes);

#endif							/* CQ_STORE_H */
