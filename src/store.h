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
#include "utils/tuplestore.h"

/* The statements a batch of a query on the store runs (built by plan.c). */
typedef struct CqStoreSql
{
	char	   *delta;			/* d: the new rows' partial state rows ($1..$4) */
	char	   *delta_history;	/* same, batch 0 reading history rows */
	char	   *merge;			/* merged state rows of the pairs in cq_mp */
	char	   *sink;			/* target writes over m and x (none: complete) */
	char	   *sink_history;	/* same, batch 0 */
	char	   *complete;		/* complete mode: reload the target from cq_all */
} CqStoreSql;

/* What a fold on the store did (the metrics the SQL path's statement returns). */
typedef struct CqStoreMetrics
{
	int64		updated;		/* state rows changed (m) */
	int64		inserted;		/* of which new groups */
	int64		removed;		/* evicted (x) */
	int64		dropped;		/* late groups of the delta */
	int64		output_rows;
	/* the fold's phases, in this backend's CPU time (ms; DEBUG1 report) */
	double		d_ms;			/* the d statement */
	double		lookup_ms;		/* lookups, overlay puts, pairs */
	double		merge_ms;		/* the merge statement and its results */
	double		evict_ms;		/* eviction */
	double		enr_ms;			/* building m and x */
	double		sink_ms;		/* the target statement */
} CqStoreMetrics;

typedef struct CqStore CqStore;

extern bool cq_store_supported(CqAnalysis *an, Oid state_table, const char **why);
extern bool cq_store_used(CqQuery *q, CqAnalysis *an);
extern void cq_store_build_sql(CqAnalysis *an, CqQuery *q, Oid viewid, CqStoreSql *sql);
extern CqStore *cq_store_open(CqQuery *q, CqAnalysis *an, const CqLastOffset *last, bool *lost);
extern int64 cq_store_rebuild(CqStore *st, const char *delta_sql, Datum *params, const char *nulls,
							  bool has_wm, TimestampTz wm);
extern void cq_store_fold(CqStore *st, const CqStoreSql *sql, bool history, Datum *params,
						  const char *nulls, bool has_wm, TimestampTz wm, bool evict,
						  CqStoreMetrics *metrics);
extern uint64 cq_store_refresh_begin(CqStore *st);
extern void cq_store_refresh_end(void);
extern void cq_store_batch_done(CqStore *st, int64 batch_id);
extern int64 cq_store_rows(CqStore *st);
extern bool cq_store_over_budget(CqStore *st);
extern bool cq_store_switched(CqStore *st);
extern void cq_store_switch_to_table(CqStore *st, CqQuery *q);
extern bool cq_store_image_due(CqStore *st, int64 batch_id);
extern void cq_store_write_image(CqStore *st, CqQuery *q, int64 batch_id, const char *end_offset);
extern bool cq_store_load_image(CqStore *st, CqQuery *q, const CqLastOffset *last, bool has_wm,
								TimestampTz wm, int64 *image_batch, char **image_offset);
extern int64 cq_store_replay(CqStore *st, const CqStoreSql *sql, Datum *params, const char *nulls,
							 bool has_wm, TimestampTz wm);
extern void cq_store_forget(Oid dboid, int32 query_id);
extern bool cq_store_read(Oid dboid, int32 query_id, Tuplestorestate *ts, TupleDesc desc);
extern bool cq_store_info(Oid dboid, int32 query_id, int64 *batch_id, int64 *rows, int64 *bytes);

#endif							/* CQ_STORE_H */
