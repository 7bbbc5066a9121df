/*-------------------------------------------------------------------------
 *
 * pg_cq.h
 *	  Declarations shared by the modules of pg_cq.
 *
 * Each module owns one concern (see README, "Architecture"); cross-module
 * functions are named cq_<module>_<verb>.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_CQ_H
#define PG_CQ_H

#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#define CQ_TRACKING_COLUMN "cq_xid"
#define CQ_KEY_HASH_COLUMN "h"	/* hash of the grouping keys in a state table */
#define CQ_STAMP_TRIGGER "zz_cq_stamp"	/* row trigger that stamps cq_xid */
#define CQ_PROGRESS_KEEP 100	/* batches of history kept per query */
#define CQ_BRIN_PAGES_PER_RANGE 32	/* pages per BRIN range on cq_xid */
#define CQ_DAYS_PER_MONTH 31		/* a month of watermark delay, as Spark counts it */
#define CQ_TRIGGER_MAX_USECS (INT64CONST(365) * USECS_PER_DAY)	/* longest trigger interval */

/*
 * start_offset of a query whose batch 0 reads every row already in the
 * source, history (cq_xid NULL) included: starting = 'earliest' when the
 * query was created or last reset.  A changed `starting` option takes effect
 * only then (as Spark's startingOffsets): start_offset records what batch 0
 * included, for the crash rebuild of lost state.
 */
#define CQ_EARLIEST_OFFSET "1:1:"
#define cq_query_reads_history(q) (strcmp((q)->start_offset, CQ_EARLIEST_OFFSET) == 0)

/* Output modes (SPEC §3). */
typedef enum CqOutputMode
{
	CQ_MODE_APPEND,				/* INSERT rows that can never change */
	CQ_MODE_UPDATE,				/* upsert result rows that changed */
	CQ_MODE_COMPLETE			/* replace the whole result */
} CqOutputMode;

/*
 * Options of a continuous query, as given by the user (DDL or function).
 * NULL / -1 fields mean "not given"; cq_options_finish() fills defaults.
 */
typedef struct CqOptions
{
	char	   *output_mode;
	char	   *trigger;
	char	   *event_time;
	char	   *watermark;
	int64		max_rows_per_trigger;	/* 0 = unlimited, -1 = not given */
	char	   *starting;
	char	   *source;
	char	   *state_storage;
	char	   *complete_refresh;
	Oid			source_relid;	/* the stream as recorded in the catalog (the
								 * source option is kept only as this OID), or
								 * InvalidOid */

	/* parsed forms, set by cq_options_finish() */
	CqOutputMode mode;
	Interval   *watermark_delay;
} CqOptions;

/* A row of cq.queries, as the batch runner needs it. */
typedef struct CqQuery
{
	char	   *name;			/* its name in its schema */
	char	   *schema;			/* its target's schema; NULL on a 0.1 catalog,
								 * where names are unique in the database */
	int32		id;
	Oid			owner;
	Oid			source;
	Oid			target;
	CqOptions	opts;
	char	   *state;
	char	   *query_tree;
	Oid			state_table;
	char	   *start_offset;
	char	   *run_id;
	char	   *cluster_id;		/* system identifier its offsets belong to */
	char	   *timezone;		/* TimeZone its batches run in */
} CqQuery;

/* One state column p<N>: a partial aggregate of the new rows and its merge. */
typedef struct CqPart
{
	char	   *partial;		/* SQL over the inner columns: "sum(i.x1) FILTER (WHERE i.f1)" */
	const char *merge;			/* %1$s = stored value, %2$s = new value */
	char	   *type;			/* SQL type of the column */
	Oid			collation;		/* or InvalidOid */
} CqPart;

/* One aggregate of the query, decomposed into mergeable state columns. */
struct CqAggKind;
typedef struct CqAgg
{
	Aggref	   *aggref;
	const struct CqAggKind *kind;
	int			part[3];		/* index into CqAnalysis.parts per kind part; -1 = column n */
	int			arg_col;		/* inner column x<N> of the argument, or -1 */
	int			filter_col;		/* inner column f<N> of FILTER, or -1 */
	Oid			arg_type;
} CqAgg;

/* What analyze.c finds in a query. */
typedef struct CqAnalysis
{
	Query	   *query;			/* analyzed query (private copy) */
	Index		source_rti;		/* range-table index of the stream */
	Oid			source_relid;
	bool		is_aggregate;	/* GROUP BY or aggregates */
	List	   *group_exprs;	/* grouping expressions (Node *) */
	List	   *group_eqops;	/* OID: GROUP BY's equality operator per key */
	bool		keys_hashable;	/* every key type hashes consistently with it */
	List	   *aggs;			/* CqAgg * */
	List	   *arg_exprs;		/* aggregate arguments, inner columns x1.. */
	List	   *filter_exprs;	/* FILTER conditions, inner columns f1.. */
	List	   *parts;			/* CqPart *: state columns p1..pN, shared when equal */
	List	   *outputs;		/* non-junk TargetEntry of the query */
	List	   *output_key;		/* int per output: grouping index or -1 */

	/* event time (all unset without the event_time option) */
	AttrNumber	et_attno;		/* event-time column of the source */
	bool		et_is_tz;		/* timestamptz (else timestamp) */
	int			wm_key;			/* grouping key that carries the watermark, or -1 */
	char	   *wm_end_fmt;		/* SQL of that key's window end; %1$s = the key */
	bool		has_watermark;	/* watermark option set */

	/* set by cq_plan_build */
	bool		single_scan;	/* batch rows counted by the main statement itself */
	bool		hash_keys;		/* state keyed by a hash of the keys (column h),
								 * not by a unique index on them */
} CqAnalysis;

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
} CqPlan;

/* Metrics of one batch: a cq.offsets and a cq.progress row. */
typedef struct CqBatchResult
{
	bool		ran;			/* false: nothing to do, no batch recorded */
	int64		batch_id;
	TimestampTz started_at;
	double		duration_ms;
	double		latest_offset_ms;
	double		add_batch_ms;
	int64		input_rows;
	double		input_rows_per_second;
	double		processed_rows_per_second;
	int64		state_updated;
	int64		state_total;
	int64		state_removed;
	int64		dropped_by_watermark;
	int64		output_rows;
	char	   *start_offset;
	char	   *end_offset;
	bool		nodata;			/* a no-data batch run to advance the watermark */
	bool		has_watermark;	/* watermark in effect is not -infinity */
	TimestampTz watermark;		/* watermark in effect for the batch */
	bool		has_next_watermark;
	TimestampTz next_watermark; /* watermark after the batch */
	bool		et_utc;			/* event-time column is a timestamp: the event
								 * times and watermarks are its values at UTC */
	bool		has_event_time; /* event-time statistics of the input rows */
	TimestampTz et_min;
	TimestampTz et_max;
	TimestampTz et_avg;
	double		rebuild_ms;		/* lost state rebuilt before the batch, or -1 */
	bool		nodata_due_next;	/* the watermark advanced: a no-data batch is due */
} CqBatchResult;

/* The last committed batch of a query. */
typedef struct CqLastOffset
{
	bool		found;
	int64		batch_id;
	char	   *end_offset;
	int64		state_rows;
	TimestampTz last_started_at;	/* started_at of its progress row, or 0 */
	bool		has_batch_watermark;
	TimestampTz batch_watermark;	/* watermark the batch used */
	bool		has_watermark;
	TimestampTz watermark;		/* watermark after the batch */
} CqLastOffset;

/* guc.c */
extern void cq_guc_init(void);
extern int	cq_lock_timeout_ms;
extern int	cq_work_mem_kb;
extern int	cq_max_queries;
extern int	cq_max_workers;
extern int	cq_naptime_ms;
extern bool cq_allow_source_truncate;

/* options.c */
extern void cq_options_init(CqOptions *opts);
extern void cq_options_set(CqOptions *opts, const char *name, const char *value);
extern void cq_options_finish(CqOptions *opts);
extern void cq_options_check_limits(CqOptions *opts);
extern bool cq_options_delay_usecs(const Interval *iv, int64 *us);
extern const char *cq_mode_name(CqOutputMode mode);

/* analyze.c */
extern CqAnalysis *cq_analyze_query(Query *query, CqOptions *opts, const char *name);
extern char *cq_analyze_state_signature(CqAnalysis *an);

/* aggregates.c */
extern const struct CqAggKind *cq_agg_kind_find(Aggref *agg, Oid argtype);
extern int	cq_agg_add_part(CqAnalysis *an, CqAgg *a, int k);
extern const char *cq_agg_kind_final(const struct CqAggKind *kind);
extern int	cq_agg_kind_nparts(const struct CqAggKind *kind);

/* delta.c */
extern Node *cq_delta_quals(CqAnalysis *an, bool history);
extern char *cq_delta_inner_sql(CqAnalysis *an, bool history);
extern char *cq_delta_avg_time_sql(const char *epoch);
extern char *cq_delta_count_stats_sql(CqAnalysis *an, const char *from, const char *pred,
									  bool history);

/* state.c */
extern int	cq_state_ngroup_cols(CqAnalysis *an);
extern void cq_state_append_group_cols(StringInfo buf, CqAnalysis *an, const char *prefix,
									   const char *sep);
extern void cq_state_append_keys_equal(StringInfo buf, CqAnalysis *an, const char *l,
									   List *left_cols, const char *r, bool null_safe);
extern char *cq_state_key_hash_sql(CqAnalysis *an, const char *prefix, List *cols);
extern bool cq_state_hashed(Oid state_table);
extern bool cq_state_evicts(CqAnalysis *an);
extern const char *cq_state_wm_param(CqAnalysis *an);
extern char *cq_state_table_sql(CqAnalysis *an, const char *qualname, bool logged);
extern char *cq_state_final_select_list(CqAnalysis *an);
extern char *cq_state_final_view_sql(CqAnalysis *an, const char *viewname, const char *statename);
extern char *cq_state_upsert_ctes(CqAnalysis *an, const char *state, bool history, bool evict,
								  bool empty);

/* sink.c */
extern List *cq_sink_target_key_columns(CqAnalysis *an);
extern char *cq_sink_target_key_index_sql(CqAnalysis *an, const char *qualname, bool hashed);
extern char *cq_sink_target_table_sql(CqAnalysis *an, const char *qualname);
extern char *cq_sink_output_list_part(CqAnalysis *an, Oid viewid, bool keys_only,
									  bool nonkeys_only);
extern char *cq_sink_output_list(CqAnalysis *an, Oid viewid);
extern char *cq_sink_target_columns(CqAnalysis *an, const char *prefix, bool keys_only,
									bool nonkeys_only);
extern char *cq_sink_stateless_sql(CqAnalysis *an, const char *target, bool history);
extern void cq_sink_write_ctes(StringInfo buf, CqAnalysis *an, CqOutputMode mode, Oid viewid,
							   const char *target, bool history, bool *has_o, bool *has_o1);

/* plan.c */
extern CqPlan *cq_plan_build(CqAnalysis *an, CqQuery *q);
extern void cq_plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan);

/* tracking.c */
extern AttrNumber cq_source_track(Oid relid);
extern AttrNumber cq_source_tracking_attnum(Oid relid);
extern void cq_source_summarize(Oid relid);
extern void cq_source_forget_stamps(Oid relid, Oid owner);
extern Oid	cq_source_reached(Oid relid);
extern void cq_source_check_logged(Oid relid, Oid source);
extern void cq_source_before_attach(Oid parent, Oid child);
extern void cq_source_after_inherit(Oid child);

/* catalog.c */
#define CQ_CATALOG_0_1 1		/* pg_cq--0.1.sql */
#define CQ_CATALOG_0_2 2		/* pg_cq--0.1--0.2.sql applied */
extern int	cq_catalog_version(void);
extern CqQuery *cq_catalog_get_query(const char *name, bool missing_ok, bool lock);
extern CqQuery *cq_catalog_get_query_in(Oid nsp, const char *name, bool missing_ok, bool lock);
extern CqQuery *cq_catalog_get_query_by_id(int32 id, bool missing_ok, bool lock);
extern char *cq_catalog_name_for_relation(Oid relid, bool as_target);
extern int32 cq_catalog_id_for_relation(Oid relid, bool as_target);
extern char *cq_catalog_rows_of(const char *alias, int name_param, int schema_param);
extern void cq_catalog_sync_schema(Oid relid, Oid nsp);
extern void cq_catalog_set_owner(int32 id, Oid owner);
extern bool cq_catalog_relation_is_source(Oid relid);
extern char *cq_catalog_cluster_id(void);
extern void cq_catalog_last_offset(CqQuery *q, CqLastOffset *last);
extern void cq_catalog_record_batch(CqQuery *q, CqBatchResult *res);
extern int32 cq_catalog_insert_query(const char *name, Oid owner, Oid source, Oid target,
									 const char *query_text, CqOptions *opts,
									 const char *query_tree, const char *start_offset);
extern void cq_catalog_set_state_table(int32 id, Oid state_table);
extern void cq_catalog_delete_query(int32 id);
extern void cq_catalog_update_options(int32 id, CqOptions *opts);
extern void cq_catalog_update_query(int32 id, const char *query_text, const char *query_tree);
extern uint64 cq_catalog_rename_event_time(List *relids, const char *oldname, const char *newname);
extern bool cq_catalog_state_lost(int32 id);
extern void cq_catalog_set_state_rows(CqQuery *q, int64 batch_id, int64 rows);
extern void cq_catalog_state_valid(int32 id, double rebuild_ms);
extern void cq_catalog_set_state(int32 id, const char *state, const char *error,
								 const char *only_if);
extern bool cq_catalog_last_watermark(CqQuery *q, TimestampTz *watermark);
extern void cq_catalog_reset(CqQuery *q, const char *start_offset);
extern void cq_catalog_set_start_offset(CqQuery *q, const char *start_offset);

/* batch.c */
#define CQ_BATCH_UNLIMITED 0x01	/* ignore max_rows_per_trigger */
#define CQ_BATCH_NODATA_ONLY 0x02	/* only a pending no-data batch */
extern void cq_batch_run(int32 id, bool unlimited, CqBatchResult *res);
extern void cq_batch_run_ext(int32 id, int flags, CqBatchResult *res);
extern void cq_batch_run_query(CqQuery *q, const CqLastOffset *last_in, int flags,
							   CqBatchResult *res);

/* ddl.c */
extern void cq_ddl_init(void);
extern bool cq_ddl_recreating;

/* truncate.c */
extern void cq_truncate_init(void);

/* runner.c */
typedef enum CqRunMode
{
	CQ_RUN_XACT,				/* a worker: in a transaction of its own */
	CQ_RUN_SUBXACT,				/* non-atomic CALL cq.run: in a subtransaction */
	CQ_RUN_ATOMIC				/* in the caller's transaction, errors propagate */
} CqRunMode;
typedef void (*CqRunBody) (void *arg);
extern bool cq_runner_is_failure(ErrorData *edata);
extern bool cq_runner_run(int32 id, CqRunMode mode, CqRunBody body, void *arg);

/* status.c (the shared-memory writes are declared in shmem.h) */
extern void cq_status_record_failure(int32 query_id, const char *message);

/* objects.c */
extern char *cq_objects_name(const char *prefix, int32 id);
extern Oid	cq_objects_relid(const char *prefix, int32 id);
extern void cq_objects_ensure_key_index(CqAnalysis *an, Oid target, bool hashed);
extern char *cq_objects_deparse_query(Query *query);
extern void cq_objects_create(CqAnalysis *an, int32 id, Oid owner, Oid target, CqOptions *opts);
extern void cq_objects_recreate(CqQuery *q);
extern void cq_objects_drop(CqQuery *q);
extern void cq_objects_replace_query_view(int32 id, CqAnalysis *an);
extern void cq_objects_replace(CqQuery *q, CqAnalysis *an);

/* api.c */
extern Oid	cq_api_register(const char *name, const char *query_text, Query *query,
							CqOptions *opts, Oid target, bool target_created);
extern void cq_api_alter(const char *name, CqOptions *opts);
extern void cq_api_alter_query(const char *name, const char *query_text);
extern CqQuery *cq_api_owned_query(const char *name, bool lock);

/* restore.c */
extern CqQuery *cq_restore_if_moved(CqQuery *q);
extern void cq_api_check_owner(CqQuery *q);

/* sql_builder.c */
extern void cq_sql_ident(StringInfo buf, const char *ident);
extern void cq_sql_relname(StringInfo buf, Oid relid);
extern char *cq_sql_relname_str(Oid relid);
extern char *cq_sql_type(Oid type, int32 typmod);
extern char *cq_sql_collate(Oid collation, Oid type);
extern void cq_spi_exec(const char *sql, int expected, int nargs, Oid *types,
						Datum *values, const char *nulls);
extern void cq_spi_exec_cached(const char *sql, int expected, int nargs, Oid *types,
							   Datum *values, const char *nulls);
extern SPIPlanPtr cq_spi_plan(const char *sql, int nargs, Oid *types);
extern void cq_spi_plan_forget(const char *sql);

/* security.c: the only place that switches users (see its header) */
typedef struct CqSecurity
{
	Oid			save_uid;		/* user and security context to restore */
	int			save_sec;
	int			nest;			/* GUC nest level of the pinned search_path */
} CqSecurity;
extern void cq_security_superuser(CqSecurity *s);
extern void cq_security_owner(Oid owner, CqSecurity *s);
extern void cq_security_restore(CqSecurity *s);
extern void cq_security_pin_process(void);
extern int	cq_security_deparse_begin(void);
extern void cq_security_deparse_end(int nest);

#endif							/* PG_CQ_H */
