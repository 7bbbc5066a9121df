/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  The SQL a batch runs, assembled from its stages and cached per
 *	  backend.
 *
 * plan.c only assembles and caches: the stages build their own parts
 * (delta.c: new rows; state.c: merge and eviction; sink.c: target writes).
 *
 * A batch is one statement per step, set-based:
 *
 *	 d: partial aggregates of the new rows    (the user's FROM/WHERE, deparsed,
 *											   plus the offset-range predicate)
 *	 m: merged into the state table            (probe, UPDATE existing, INSERT new)
 *	 f: final values of the changed groups     (table-driven final expressions)
 *	 o: written to the target                  (per output mode)
 *
 * The user's expressions are never edited as text: they are deparsed from
 * the analyzed tree with search_path pinned to pg_catalog, so every name is
 * schema-qualified.  Expressions over aggregates are rewritten as trees
 * (aggregate -> column of the final view cq_state.f_<id>) and deparsed
 * against that view.
 *
 * Parameters of every batch statement:
 *	 $1 xid8  lowest transaction id that can be new
 *	 $2 xid8  xmax of the batch's end snapshot
 *	 $3 pg_snapshot  end offset (S_cur)
 *	 $4 pg_snapshot  start offset (S_prev)
 *	 $5 timestamptz  the batch's watermark, NULL = -infinity (main statement
 *					 only; the next watermark is computed in C from the
 *					 maximum event time the statements return)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteManip.h"
#include "parser/parse_oper.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "nodes/readfuncs.h"

#include "plan.h"
#include "sql_builder.h"
#include "catalog.h"
#include "analyze.h"
#include "deltagg.h"
#include "delta_scan.h"
#include "tracking.h"
#include "citus.h"
#include "citus_copy.h"
#include "delta.h"
#include "state.h"
#include "sink.h"
#include "dedup.h"
#include "session.h"
#include "store_fold.h"
#include "merge.h"
#include "bulkload.h"
#include "inval.h"
#include "plan_deps.h"
#include "settings_pin.h"


/*
 * metrics_select
 *	  The final SELECT of a batch statement: state rows updated, inserted,
 *	  removed, aggregated rows dropped as late, output rows.
 */
static char *
metrics_select(CqAnalysis *an, bool has_o, bool has_o1)
{
	const char *input = "0::int8, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz";

	if (an->single_scan && an->et_attno != InvalidAttrNumber)
	{
		const char *tz = an->et_is_tz ? "" : " AT TIME ZONE 'UTC'";

		input = psprintf("(SELECT coalesce(sum(n), 0) FROM d)::int8, (SELECT min(et_min) FROM d)%s, "
						 "(SELECT max(et_max) FROM d)%s, "
						 "(SELECT %s FROM (SELECT sum(et_sum) / nullif(sum(et_n), 0) AS x FROM d) a)",
						 tz, tz, cq_delta_avg_time_sql("a.x"));
	}
	else if (an->single_scan)
		input = "(SELECT coalesce(sum(n), 0) FROM d)::int8, NULL::timestamptz, NULL::timestamptz, "
			"NULL::timestamptz";
	return psprintf(" SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM m WHERE _ins), %s, %s, %s, %s",
					cq_state_evicts(an) ? "(SELECT count(*) FROM x)" : "0::int8",
					cq_state_evicts(an) ? psprintf("(SELECT count(*) FROM d WHERE e <= %s)", cq_state_wm_param(an)) : "0::int8",
					has_o1 ? "((SELECT count(*) FROM o) + (SELECT count(*) FROM o1))" :
					has_o ? "(SELECT count(*) FROM o)" : "0::int8", input);
}

/*
 * batch_sql
 *	  The main statement of a batch: fold the new rows into the state
 *	  (state.c), write the target (sink.c), return one row of metrics:
 *	  state rows updated, inserted, removed, rows dropped as late, output
 *	  rows.
 */
static char *
batch_sql(CqAnalysis *an, CqQuery *q, Oid viewid, const char *target, bool history)
{
	StringInfoData buf;
	char	   *state;
	bool		has_o;
	bool		has_o1;

	if (an->is_dedup)
		return cq_dedup_batch_sql(an, cq_sql_relname_str(q->state_table), target, history);
	if (!an->is_aggregate)
		return cq_sink_stateless_sql(an, target, history);

	if (an->session)
		return cq_session_batch_sql(an, q->opts.mode, cq_sql_relname_str(q->state_table), viewid,
									target, history);

	initStringInfo(&buf);
	state = cq_sql_relname_str(q->state_table);
	appendStringInfo(&buf, "WITH %s", cq_state_upsert_ctes(an, state, history, true, history));
	cq_sink_write_ctes(&buf, an, q->opts.mode, viewid, target, history, &has_o, &has_o1);
	appendStringInfoString(&buf, metrics_select(an, has_o, has_o1));
	return buf.data;
}

/*
 * batch_sql_merge
 *	  batch_sql (batch 1 on) writing the target by MERGE (merge.c): the same
 *	  state CTEs, then f, od and MERGE.  MERGE returns no row in
 *	  PostgreSQL 15, so the metrics row's values (but the rows written,
 *	  MERGE's row count) go to cq.batch_metrics from CTE st, as integers
 *	  separated by spaces (event times in microseconds since 1970, or
 *	  infinity, -infinity; N for NULL), for fold() in batch.c.
 */
static char *
batch_sql_merge(CqAnalysis *an, CqQuery *q, Oid viewid, const char *target)
{
	StringInfoData buf;
	StringInfoData st;

	initStringInfo(&st);
	appendStringInfoString(&st, "st AS MATERIALIZED (SELECT pg_catalog.set_config('cq.batch_metrics', "
						   "pg_catalog.concat_ws(' '");
	for (int c = 1; c <= 6; c++)
		appendStringInfo(&st, ", COALESCE(r.c%d::pg_catalog.text, 'N')", c);
	for (int c = 7; c <= 9; c++)
		appendStringInfo(&st, ", CASE WHEN r.c%1$d IS NULL THEN 'N' WHEN pg_catalog.isfinite(r.c%1$d) "
						 "THEN ((EXTRACT(epoch FROM r.c%1$d) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8)::pg_catalog.text "
						 "ELSE r.c%1$d::pg_catalog.text END", c);
	appendStringInfo(&st, "), true) AS c FROM (%s) r(c1, c2, c3, c4, c5, c6, c7, c8, c9))",
					 metrics_select(an, false, false));
	initStringInfo(&buf);
	appendStringInfo(&buf, "WITH %s", cq_state_upsert_ctes(an, cq_sql_relname_str(q->state_table),
														   false, true, false));
	cq_merge_append(&buf, an, viewid, target, ", ", st.data);
	return buf.data;
}

/*
 * split_sql
 *	  For measurements only (cq.bench_split_batch): batch_sql of a table
 *	  path aggregation in update mode without eviction, in two statements,
 *	  so that its state part and its target writes can be timed apart: the
 *	  state CTEs returning m's rows (each with the batch's row count,
 *	  _nin), and the same target-writing CTEs (sink.c) reading m as an
 *	  ephemeral relation, as the store's target statement does.  Not built
 *	  for other queries.
 */
static void
split_sql(CqAnalysis *an, CqQuery *q, Oid viewid, const char *target, CqPlan *plan)
{
	StringInfoData buf;
	bool		has_o;
	bool		has_o1;

	plan->split_state_sql = plan->split_sink_sql = NULL;
	if (!an->is_aggregate || an->is_dedup || an->session || an->distinct_sets != NIL ||
		an->group_exprs == NIL || cq_state_evicts(an) || q->opts.mode != CQ_MODE_UPDATE ||
		plan->use_store || an->join != NULL || an->et_attno != InvalidAttrNumber)
		return;
	plan->split_state_sql = psprintf("WITH %s SELECT m.*, (SELECT coalesce(sum(n), 0) FROM d)::int8 AS _nin FROM m",
									 cq_state_upsert_ctes(an, cq_sql_relname_str(q->state_table),
														  false, true, false));
	initStringInfo(&buf);
	cq_sink_write_ctes(&buf, an, q->opts.mode, viewid, target, false, &has_o, &has_o1);
	plan->split_sink_sql = psprintf("WITH %s SELECT %s", buf.data + 2,
									has_o1 ? "(SELECT count(*) FROM o) + (SELECT count(*) FROM o1)" :
									"(SELECT count(*) FROM o)");
}

/*
 * count_statements
 *	  The statements that count a batch's rows before the main statement:
 *	  rows of the batch with event-time statistics, new rows per
 *	  transaction (row limit), history rows.  only is "ONLY " or "", source
 *	  the quoted source.
 */
static void
count_statements(CqAnalysis *an, CqPlan *plan, const char *only, const char *source)
{
	const char *pred;

	bool		per_node = cq_citus_node_source(an->source_relid);

	/* a source stamped per node (citus.c): $3 and $4 are per-node offsets */
	if (per_node)
		pred = psprintf("%1$s >= $1 AND %1$s < $2 AND cq.node_visible($3, %2$s, %1$s) "
						"AND NOT cq.node_visible($4, %2$s, %1$s)",
						CQ_TRACKING_COLUMN, CQ_NODE_COLUMN);
	else
		pred = cq_delta_pred_sql(an->source_relid, false);
	{
		/* rows of the batch, and event-time statistics of the rows the query reads */
		const char *pred_history = per_node ?
			psprintf("%1$s IS NULL OR (%1$s < $2 AND cq.node_visible($3, %2$s, %1$s))",
					 CQ_TRACKING_COLUMN, CQ_NODE_COLUMN) :
			cq_delta_pred_sql(an->source_relid, true);

		if (an->et_attno != InvalidAttrNumber)
		{
			plan->count_sql = cq_delta_count_stats_sql(an, psprintf("%s%s", only, source), pred, false);
			plan->count_sql_history = cq_delta_count_stats_sql(an, psprintf("%s%s", only, source), pred_history, true);
		}
		else
		{
			const char *stats = "NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz, "
				"NULL::pg_catalog.timestamptz";

			plan->count_sql = psprintf("SELECT count(*), %s FROM %s%s WHERE %s",
									   stats, only, source, pred);
			plan->count_sql_history = psprintf("SELECT count(*), %s FROM %s%s WHERE %s",
											   stats, only, source, pred_history);
		}
	}
	/* ordered as xid8 (numerically), the first $5 transactions only */
	plan->count_xids_sql = psprintf("SELECT %s, count(*) FROM %s%s WHERE %s%s GROUP BY %s ORDER BY %s LIMIT $5",
									CQ_TRACKING_COLUMN, only, source, pred,
									per_node ? " AND " CQ_NODE_COLUMN " = $6" : "",
									CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN);
	plan->count_history_sql = psprintf("SELECT count(*) FROM %s%s WHERE %s IS NULL",
									   only, source, CQ_TRACKING_COLUMN);
}

/*
 * cq_plan_build
 *	  Every statement a batch of this query may run.  The final view must
 *	  exist for aggregations.
 */
CqPlan *
cq_plan_build(CqAnalysis *an, CqQuery *q)
{
	CqPlan	   *plan = palloc0(sizeof(CqPlan));
	char	   *target = cq_sql_relname_str(q->target);
	char	   *source = cq_sql_relname_str(an->source_relid);
	Oid			viewid = InvalidOid;
	RangeTblEntry *rte = rt_fetch(an->source_rti, an->query->rtable);
	const char *only = rte->inh ? "" : "ONLY ";

	/*
	 * One scan of the new rows suffices when every source row of the batch
	 * reaches the aggregation exactly once (no WHERE, no joins, no window
	 * expansion, no set-returning function in the select list, after which
	 * a stateless query's output rows are not its input rows): its row
	 * count and event-time statistics come from the partial aggregates.
	 * Otherwise a separate count statement runs first.
	 */
	an->single_scan = an->query->jointree->quals == NULL &&
		list_length(an->query->rtable) == 1 && !an->query->hasTargetSRFs &&
		(an->is_aggregate ? an->group_exprs != NIL : an->et_attno == InvalidAttrNumber) &&
		!(q->opts.max_rows_per_trigger > 0) && !an->is_dedup;
	/* the store counts the batch's rows from its d statement's rows (store_fold.c) */
	plan->use_store = cq_store_used(q, an);
	plan->single_scan = an->single_scan;
	an->hash_keys = an->is_aggregate && cq_state_hashed(q->state_table);
	if (an->distinct_sets)
	{
		Oid			pairs = get_relname_relid(psprintf("sd_%d", q->id),
											  get_namespace_oid("cq_state", false));

		if (!OidIsValid(pairs))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("state of continuous query \"%s\" is missing", q->name),
					 errdetail("The table of values seen by its DISTINCT aggregates does not exist."),
					 errhint("Drop and recreate the continuous query.")));
		an->distinct_state = cq_sql_relname_str(pairs);
	}

	if (an->is_aggregate)
	{
		viewid = get_relname_relid(psprintf("f_%d", q->id), get_namespace_oid("cq_state", false));
		if (!OidIsValid(viewid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("state of continuous query \"%s\" is missing", q->name),
					 errhint("Drop and recreate the continuous query.")));
		/*
		 * The final expressions are generated anew rather than read from
		 * the view, which keeps those of the version that created it.
		 */
		plan->complete_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM (SELECT %s FROM %s s) f%s",
									  target, cq_sink_target_columns(an, "", false, false),
									  cq_sink_output_list(an, viewid), cq_state_final_select_list(an),
									  cq_sql_relname_str(q->state_table),
									  cq_sink_having_where(an, viewid));
	}
	/* a column type changed since creation: a clear error, not the compare's */
	cq_sink_check_target_types(an, q->opts.mode, q->target, q->name);
	plan->merge_eligible = cq_merge_eligible(an, q, &plan->merge_why);
	if (plan->use_store)
	{
		cq_store_build_sql(an, q, viewid, &plan->store);
		if (plan->merge_eligible)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			appendStringInfoString(&buf, "WITH ");
			cq_merge_append(&buf, an, viewid, target, "", NULL);
			plan->store.sink_merge = buf.data;
		}
	}
	else if (plan->merge_eligible && cq_merge_groups_bounded(an))
		plan->batch_sql_merge = batch_sql_merge(an, q, viewid, target);
	else if (plan->merge_eligible)
	{
		plan->merge_eligible = false;
		plan->merge_why = "on the table path a batch is sized by its new rows, which do not bound "
			"the groups it changes in a query with joins or functions in FROM (cq.window)";
	}
	plan->batch_sql = batch_sql(an, q, viewid, target, false);
	plan->batch_sql_history = batch_sql(an, q, viewid, target, true);
	split_sql(an, q, viewid, target, plan);
	if (!plan->use_store)
	{
		plan->bulk_sql = cq_bulk_sql(an, q, viewid, false);
		plan->bulk_sql_all = cq_bulk_sql(an, q, viewid, true);
	}
	if (an->session)
		plan->rebuild_sql = cq_session_rebuild_sql(an, q->opts.mode,
												   cq_sql_relname_str(q->state_table),
												   cq_query_reads_history(q));
	else if (an->is_aggregate)
	{
		/*
		 * Rebuild of lost state: the same fold over every row processed so
		 * far, keeping windows still open at the last batch; the target is
		 * not touched (it already holds the results).  History rows are in
		 * it when batch 0 read them (whatever `starting` says now).
		 */
		bool		history = cq_query_reads_history(q);

		plan->rebuild_sql = psprintf("WITH %s SELECT count(*) FROM m",
									 cq_state_upsert_ctes(an, cq_sql_relname_str(q->state_table),
													   history, false, true));
	}
	else if (an->is_dedup && !an->dedup_evicts)	/* else logged: dedup.c */
		plan->rebuild_sql = cq_dedup_rebuild_sql(an, cq_sql_relname_str(q->state_table),
												 cq_query_reads_history(q));

	count_statements(an, plan, only, source);
	return plan;
}

/*
 * Per-backend cache of analyses and generated SQL, so that a worker's
 * batches skip re-analysis and deparsing.  An entry is valid while the
 * query's catalog row is unchanged (its text, tree and options) and what it
 * was built from did not change (plan_deps.c): an invalidation of one of
 * its relations has it checked before its next use (only a changed
 * definition rebuilds it, not the statistics VACUUM and ANALYZE write), one
 * of its functions, types, collations or schemas rebuilds it, and so does
 * any operator change and a reset of a whole cache (relid or hash value 0,
 * which may stand for any change).  Invalidations of other objects, which
 * autovacuum and temporary tables cause all the time, leave it.  The SQL is
 * rebuilt from the tree with current names (renames keep working).
 *
 * Settings.  The SQL is printed under fixed ones (search_path, DateStyle,
 * IntervalStyle, extra_float_digits: cq_security_deparse_begin), so that it
 * reads back the same under any, an xml constant as XMLPARSE and an
 * array constant with a NULL element as ARRAY[] (which no xmloption or
 * array_nulls changes: sql_builder.c); standard_conforming_strings, which
 * decides how a string constant with a backslash is printed and read
 * alike, and lc_monetary, which does for a money constant (its symbol,
 * separators and decimal places: no text reads back the same under every
 * locale), are in the key (plan_key; sql/152, t/099).  No cq.* setting
 * changes the analysis or the SQL: those that choose a batch's path
 * (cq.merge_max_groups, cq.bulk_load, cq.custom_plan_rows, cq.state_memory,
 * cq.bench_split_batch) are read at each batch and choose among the
 * statements of one entry;
 * cq.citus_shard_scans adds, where a shard query is planned, a condition
 * its own conditions imply (shard.c).  The planner's settings (enable_*,
 * work_mem, jit, the costs; those delta.c sets for a batch too) choose a
 * plan, not a result: they are in neither the entry nor its saved plans'
 * keys, and a saved generic plan made under others stays correct, as
 * PostgreSQL's own plan cache keeps one.  TimeZone changes no text either (a
 * timestamptz constant is printed with its offset); a batch sets the
 * query's own.
 */
typedef struct CqPlanCacheEntry
{
	int32		id;				/* hash key: the query's internal id */
	bool		stale;			/* rebuild before use */
	bool		check;			/* a relation of it changed: compare them */
	bool		checking;		/* being compared (still set: the comparison
								 * failed with an error; rebuild) */
	char	   *key;			/* catalog values the plan was built from */
	Oid			read;			/* the relation its batches read */
	MemoryContext cxt;
	CqAnalysis *an;
	CqPlan	   *plan;
	CqPlanDeps *deps;
} CqPlanCacheEntry;

static HTAB *plan_entries = NULL;
static uint64 plan_generation = 0;
static bool sweep_wanted = false;	/* a relation of an entry changed: it
									 * may be a dropped query's */

/*
 * plan_invalidate_rel
 *	  A relation's cache entry was invalidated (InvalidOid: all of them):
 *	  check the entries built from it, or drop all.
 */
static void
plan_invalidate_rel(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;

	plan_generation++;
	if (plan_entries == NULL)
		return;
	hash_seq_init(&status, plan_entries);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!OidIsValid(relid))
			entry->stale = true;
		else if (entry->deps != NULL && cq_plan_deps_has_rel(entry->deps, relid))
			entry->check = sweep_wanted = true;
	}
}

/*
 * plan_invalidate_syscache
 *	  A function, type, collation, operator or schema changed (hash value
 *	  0: any of them may have): drop the entries built from it; every entry
 *	  for an operator, or a reset.
 */
static void
plan_invalidate_syscache(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;
	bool		all = hashvalue == 0 || cacheid == OPEROID;

	plan_generation++;
	if (plan_entries == NULL)
		return;
	hash_seq_init(&status, plan_entries);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (all || entry->deps == NULL || cq_plan_deps_has_hash(entry->deps, cacheid, hashvalue))
			entry->stale = true;
}

/*
 * plan_cache_init
 *	  The cache's table and its invalidation callbacks, once per backend.
 */
static void
plan_cache_init(void)
{
	HASHCTL		ctl;

	if (plan_entries != NULL)
		return;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(CqPlanCacheEntry);
	plan_entries = hash_create("pg_cq analyses", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	cq_relcache_callback(plan_invalidate_rel, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, plan_invalidate_syscache, (Datum) 0);
	CacheRegisterSyscacheCallback(TYPEOID, plan_invalidate_syscache, (Datum) 0);
	CacheRegisterSyscacheCallback(COLLOID, plan_invalidate_syscache, (Datum) 0);
	CacheRegisterSyscacheCallback(OPEROID, plan_invalidate_syscache, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, plan_invalidate_syscache, (Datum) 0);
}

/*
 * cq_plan_generation
 *	  The cache's generation: it changes whenever a relation, function,
 *	  type, collation, operator or schema changes.  For other caches of
 *	  generated SQL (join.c): an entry built at generation g is valid while
 *	  it is g.
 */
uint64
cq_plan_generation(void)
{
	plan_cache_init();
	return plan_generation;
}

/*
 * plan_key
 *	  Everything of the catalog row the generated SQL depends on, and the
 *	  catalog's version (the SQL chosen for 0.1 is never run on 0.2; an
 *	  ALTER EXTENSION UPDATE changes no relation of the query).
 */
static char *
plan_key(CqQuery *q)
{
	return psprintf("%s|%d", cq_plan_key(q), cq_catalog_version());
}

/*
 * key_tail
 *	  cq_plan_key without the query tree it starts with.  plan_key_is
 *	  compares a key with these pieces in this order: change both.
 */
static char *
key_tail(CqQuery *q)
{
	return psprintf("%s|%s|%s|%s|" INT64_FORMAT "|%s|%s|%u|%u|%u|%s|%d|%s",
					q->opts.output_mode, q->opts.event_time ? q->opts.event_time : "",
					q->opts.watermark ? q->opts.watermark : "", q->opts.starting,
					q->opts.max_rows_per_trigger, q->opts.state_storage, q->opts.complete_refresh,
					q->target, q->state_table, q->owner, q->start_offset,
					(int) standard_conforming_strings, locale_monetary);
}

/*
 * key_next
 *	  Does the key at *p go on with the n bytes of s, then sep?  Then *p
 *	  moves past them.
 */
static bool
key_next(const char **p, const char *s, size_t n, char sep)
{
	if (strncmp(*p, s, n) != 0 || (*p)[n] != sep)
		return false;
	*p += n + 1;
	return true;
}

/* key_next for a string, an unsigned (%u) and a 64-bit integer, each followed by '|' */
static bool
key_str(const char **p, const char *s)
{
	return key_next(p, s, strlen(s), '|');
}

static bool
key_u32(const char **p, uint32 v)
{
	char		buf[12];

	return key_next(p, buf, pg_ultoa_n(v, buf), '|');
}

static bool
key_i64(const char **p, int64 v)
{
	char		buf[MAXINT8LEN + 1];

	return key_next(p, buf, pg_lltoa(v, buf), '|');
}

/*
 * plan_key_is
 *	  Is key plan_key(q)?  Without printing the query tree (kilobytes) into
 *	  a new key in every batch (~9k instructions a batch), nor the rest of
 *	  it (key_tail, ~3k: session 36): the key is compared piece by piece
 *	  with what plan_key prints, in its order, which is comparing it with
 *	  the whole text.
 */
static bool
plan_key_is(const char *key, CqQuery *q)
{
	const char *p = key;
	char		buf[12];

	return key_str(&p, q->query_tree) &&
		key_str(&p, q->opts.output_mode) &&
		key_str(&p, q->opts.event_time ? q->opts.event_time : "") &&
		key_str(&p, q->opts.watermark ? q->opts.watermark : "") &&
		key_str(&p, q->opts.starting) &&
		key_i64(&p, q->opts.max_rows_per_trigger) &&
		key_str(&p, q->opts.state_storage) &&
		key_str(&p, q->opts.complete_refresh) &&
		key_u32(&p, q->target) &&
		key_u32(&p, q->state_table) &&
		key_u32(&p, q->owner) &&
		key_str(&p, q->start_offset) &&
		key_next(&p, buf, pg_ltoa((int) standard_conforming_strings, buf), '|') &&
		key_str(&p, locale_monetary ? locale_monetary : "(null)") &&
		key_next(&p, buf, pg_ltoa(cq_catalog_version(), buf), '\0');
}

/*
 * cq_plan_key
 *	  plan_key for other caches of generated SQL (join.c).  With
 *	  standard_conforming_strings: a string constant with a backslash is
 *	  printed as the setting wants it read, and SQL printed under one value
 *	  and first prepared under the other read another string (sql/152);
 *	  with lc_monetary: a money constant printed under one locale was
 *	  read under another by the plan cache's new analysis of a saved
 *	  statement (another value, or an error: t/099).
 */
char *
cq_plan_key(CqQuery *q)
{
	return psprintf("%s|%s", q->query_tree, key_tail(q));
}

/*
 * plan_sql_list
 *	  Every statement text of a plan (NULLs included), for forgetting their
 *	  saved SPI plans.
 */
static List *
plan_sql_list(CqPlan *plan)
{
	List	   *l = NIL;

	l = lappend(l, plan->batch_sql);
	l = lappend(l, plan->batch_sql_history);
	l = lappend(l, plan->complete_sql);
	l = lappend(l, plan->count_sql);
	l = lappend(l, plan->count_sql_history);
	l = lappend(l, plan->count_xids_sql);
	l = lappend(l, plan->count_history_sql);
	l = lappend(l, plan->rebuild_sql);
	l = lappend(l, plan->store.delta);
	l = lappend(l, plan->store.delta_c);
	l = lappend(l, plan->store.delta_history);
	l = lappend(l, plan->store.delta_history_all);
	l = lappend(l, plan->store.merge);
	l = lappend(l, plan->store.sink);
	l = lappend(l, plan->split_state_sql);
	l = lappend(l, plan->split_sink_sql);
	l = lappend(l, plan->store.sink_history);
	l = lappend(l, plan->store.complete);
	l = lappend(l, plan->store.sink_merge);
	l = lappend(l, plan->store.sink_existing);
	l = lappend(l, plan->store.sink_new);
	l = lappend(l, plan->batch_sql_merge);
	l = lappend(l, plan->bulk_sql);
	l = lappend(l, plan->bulk_sql_all);
	l = lappend(l, plan->store.load_history);
	l = lappend(l, plan->store.load_history_all);
	l = lappend(l, plan->store.load_new);
	l = lappend(l, plan->store.load_changed);
	return l;
}

/*
 * forget_entry_plans
 *	  Free the saved SPI plans of an entry's statements, except those that a
 *	  new plan of the same query (keep, or NULL) still uses: a plan prepared
 *	  for a query that changed or is gone would never be used again.
 */
static void
forget_entry_plans(CqPlanCacheEntry *entry, CqPlan *keep)
{
	List	   *keep_sql = keep ? plan_sql_list(keep) : NIL;
	ListCell   *lc,
			   *lk;

	foreach(lc, plan_sql_list(entry->plan))
	{
		const char *sql = lfirst(lc);
		bool		kept = false;

		if (sql == NULL)
			continue;
		foreach(lk, keep_sql)
			if (lfirst(lk) && strcmp(lfirst(lk), sql) == 0)
				kept = true;
		if (!kept)
			cq_spi_plan_forget(sql);
	}
}

/*
 * sweep_dropped
 *	  Evict the entries (and their saved SPI plans) of queries that no
 *	  longer exist: every query has a view cq_state.q_<id> for as long as it
 *	  exists.  Runs when an entry is built, and after an invalidation of a
 *	  relation of any entry (dropping a query drops its state table or
 *	  final view), so a long-lived worker does not keep the plans of every
 *	  query it ever ran.
 */
static void
sweep_dropped(int32 keep_id)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;
	Oid			nsp = get_namespace_oid("cq_state", true);

	hash_seq_init(&status, plan_entries);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->id == keep_id ||
			(OidIsValid(nsp) && OidIsValid(get_relname_relid(psprintf("q_%d", entry->id), nsp))))
			continue;
		forget_entry_plans(entry, NULL);
		MemoryContextDelete(entry->cxt);
		(void) hash_search(plan_entries, &entry->id, HASH_REMOVE, NULL);
	}
}

/*
 * copy_analysis
 *	  What the cache keeps of an analysis, copied into the current memory
 *	  context: what the SQL is made from is left out, but not the outputs
 *	  and state columns batch 0's direct load maps (bulkload.c): without
 *	  them a batch 0 run with the cached plan (a retry in the same
 *	  worker) silently took the batch statement instead.  Nor the
 *	  DISTINCT aggregates' value sets: without them such a batch 0 (after
 *	  cq.explain in the session, say) kept the index of the table of
 *	  (group, value) pairs while it filled it (session 29).
 */
static CqAnalysis *
copy_analysis(CqAnalysis *new_an)
{
	CqAnalysis *copy_an;
	ListCell   *lc;

	copy_an = palloc(sizeof(CqAnalysis));
	*copy_an = *new_an;
	copy_an->query = copyObject(new_an->query);
	copy_an->group_exprs = copyObject(new_an->group_exprs);
	copy_an->group_eqops = list_copy(new_an->group_eqops);
	copy_an->aggs = NIL;		/* only the SQL is used from the cache ... */
	copy_an->arg_exprs = NIL;
	copy_an->filter_exprs = NIL;
	copy_an->parts = NIL;		/* ... and what batch 0's direct load reads */
	foreach(lc, new_an->parts)
	{
		CqPart	   *p = lfirst(lc);
		CqPart	   *c = palloc(sizeof(CqPart));

		c->partial = pstrdup(p->partial);
		c->merge = pstrdup(p->merge);
		c->type = pstrdup(p->type);
		c->collation = p->collation;
		copy_an->parts = lappend(copy_an->parts, c);
	}
	copy_an->distinct_sets = NIL;	/* plain structs; batch.c's unindex_state reads them */
	foreach(lc, new_an->distinct_sets)
	{
		CqDistinctSet *c = palloc(sizeof(CqDistinctSet));

		*c = *(CqDistinctSet *) lfirst(lc);
		copy_an->distinct_sets = lappend(copy_an->distinct_sets, c);
	}
	copy_an->distinct_state = new_an->distinct_state ? pstrdup(new_an->distinct_state) : NULL;
	copy_an->outputs = copyObject(new_an->outputs);
	copy_an->output_key = list_copy(new_an->output_key);
	copy_an->dedup_refs = list_copy(new_an->dedup_refs);
	copy_an->wm_end_fmt = new_an->wm_end_fmt ? pstrdup(new_an->wm_end_fmt) : NULL;
	return copy_an;
}

/*
 * copy_plan_sql
 *	  A plan's statements, copied into the current memory context.
 */
static CqPlan *
copy_plan_sql(CqPlan *new_plan)
{
	CqPlan	   *copy_plan;

	copy_plan = palloc0(sizeof(CqPlan));
#define COPY_SQL(f) copy_plan->f = new_plan->f ? pstrdup(new_plan->f) : NULL
	COPY_SQL(batch_sql);
	COPY_SQL(batch_sql_history);
	COPY_SQL(complete_sql);
	COPY_SQL(count_sql);
	COPY_SQL(count_sql_history);
	COPY_SQL(count_xids_sql);
	COPY_SQL(count_history_sql);
	COPY_SQL(rebuild_sql);
	COPY_SQL(store.delta);
	COPY_SQL(store.delta_c);
	COPY_SQL(store.delta_history);
	COPY_SQL(store.delta_history_all);
	COPY_SQL(store.merge);
	COPY_SQL(store.sink);
	COPY_SQL(store.sink_history);
	COPY_SQL(store.complete);
	COPY_SQL(store.merge_kinds);
	COPY_SQL(split_state_sql);
	COPY_SQL(split_sink_sql);
	COPY_SQL(store.sink_merge);
	COPY_SQL(store.sink_existing);
	COPY_SQL(store.sink_new);
	COPY_SQL(batch_sql_merge);
	COPY_SQL(merge_why);
	COPY_SQL(bulk_sql);
	COPY_SQL(bulk_sql_all);
	COPY_SQL(store.load_history);
	COPY_SQL(store.load_history_all);
	COPY_SQL(store.load_new);
	COPY_SQL(store.load_changed);
#undef COPY_SQL
	copy_plan->store.target = new_plan->store.target;
	copy_plan->store.having = new_plan->store.having;
	copy_plan->store.target_has_columns = new_plan->store.target_has_columns;
	copy_plan->store.update_triggers = new_plan->store.update_triggers;
	copy_plan->store.nout = new_plan->store.nout;
	copy_plan->store.out_names = new_plan->store.nout ? palloc(sizeof(char *) * new_plan->store.nout) : NULL;
	for (int i = 0; i < new_plan->store.nout; i++)
		copy_plan->store.out_names[i] = pstrdup(new_plan->store.out_names[i]);
	copy_plan->store.nkeys = new_plan->store.nkeys;
	copy_plan->store.key_outs = new_plan->store.nkeys ? palloc(sizeof(int) * new_plan->store.nkeys) : NULL;
	for (int i = 0; i < new_plan->store.nkeys; i++)
		copy_plan->store.key_outs[i] = new_plan->store.key_outs[i];
	copy_plan->store.out_key = NULL;
	if (new_plan->store.out_key)
	{
		copy_plan->store.out_key = palloc(sizeof(bool) * Max(new_plan->store.nout, 1));
		memcpy(copy_plan->store.out_key, new_plan->store.out_key, sizeof(bool) * new_plan->store.nout);
	}
	copy_plan->merge_eligible = new_plan->merge_eligible;
	copy_plan->use_store = new_plan->use_store;
	copy_plan->store.counts = new_plan->store.counts;
	copy_plan->store.deltagg = cq_deltagg_copy(new_plan->store.deltagg);
	copy_plan->store.deltascan = cq_delta_scan_copy(new_plan->store.deltascan);
	copy_plan->store.et_stats = new_plan->store.et_stats;
	copy_plan->store.source = new_plan->store.source;
	copy_plan->store.sink_history_plain = new_plan->store.sink_history_plain;
	copy_plan->single_scan = new_plan->single_scan;
	return copy_plan;
}

/*
 * read_copy
 *	  The query tree of a query over source, reading the relation read
 *	  instead (the coordinator's copy of a Citus reference or local source,
 *	  citus_copy.c), before it is analyzed: the source's range-table entry
 *	  names the copy, and the source's columns are renumbered by name (a
 *	  shard table and its shell table number their columns differently
 *	  when columns were dropped before one of them was made).  Tracking,
 *	  DDL and TRUNCATE guards stay on the source (the query's catalog row).
 */
static Query *
read_copy(Query *query, Oid source, Oid read)
{
	Relation	srel = relation_open(source, AccessShareLock);
	Relation	crel = relation_open(read, AccessShareLock);
	AttrMap    *map = build_attrmap_by_name_if_req(RelationGetDescr(crel), RelationGetDescr(srel));
	ListCell   *lc;
	int			rti = 0;

	foreach(lc, query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		bool		whole_row = false;

		rti++;
		if (rte->rtekind != RTE_RELATION || rte->relid != source)
			continue;
		if (map != NULL)
			query = (Query *) map_variable_attnos((Node *) query, rti, 0, map, InvalidOid, &whole_row);
		if (whole_row)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a continuous query over \"%s\" cannot use its whole row",
							RelationGetRelationName(srel)),
					 errdetail("Its batches read the coordinator's copy \"%s\", whose columns are numbered differently.",
							   RelationGetRelationName(crel)),
					 errhint("Name the columns.")));
		rt_fetch(rti, query->rtable)->relid = read;	/* query may be a new copy */
	}
	relation_close(crel, AccessShareLock);
	relation_close(srel, AccessShareLock);
	return query;
}

/*
 * entry_usable
 *	  May entry (of query q, read through read) be used as it is?  After an invalidation of one of its relations,
 *	  their fingerprints are compared with those it was built from (which
 *	  locks them, reading the invalidations that came meanwhile: the check
 *	  is repeated while one of its relations had one during it).
 */
static bool
entry_usable(CqPlanCacheEntry *entry, CqQuery *q, Oid read)
{
	bool		same;

	if (entry->stale || entry->checking || entry->read != read || !plan_key_is(entry->key, q))
		return false;
	for (int tries = 0; entry->check && tries < 3; tries++)
	{
		entry->check = false;
		entry->checking = true;
		same = cq_plan_deps_unchanged(entry->deps);
		entry->checking = false;
		/*
		 * changed: stale, so that a rebuild that fails (an error the batch
		 * records) leaves no entry that the next batch would take as
		 * checked (check is already cleared)
		 */
		if (!same)
			entry->stale = true;
		if (entry->stale)
			return false;
		if (!entry->check)
			elog(DEBUG1, "pg_cq: analysis and SQL of continuous query %d kept: its relations are unchanged",
				 entry->id);
	}
	return !entry->check;
}

/*
 * plan_get
 *	  The analysis and SQL of a query, from the cache or built now.
 *
 *	  A new entry is built completely, in a context that belongs to the
 *	  caller until then, before it replaces the old one: an error on the way
 *	  (in analysis, in SQL generation, out of memory) leaves the cache as it
 *	  was, never with an entry that points to freed memory.  An invalidation
 *	  that comes while it is built (of anything: plan_generation) leaves it
 *	  stale, as it may have been read before it.
 */
static void
plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan)
{
	CqPlanCacheEntry *entry;
	bool		found;
	char	   *key;
	MemoryContext old;
	uint64		gen;
	Query	   *stored;
	CqAnalysis *new_an;
	CqPlan	   *new_plan;
	MemoryContext cxt;
	CqAnalysis *copy_an;
	CqPlan	   *copy_plan;
	CqPlanDeps *copy_deps;
	char	   *copy_key;
	Oid			read;

	plan_cache_init();
	/* what the plan says of its relations holds while none changes (store_fold.c) */
	cq_relcache_mark();
	read = cq_citus_read_relation(q->source, q->id, q->name);

	/* entries of dropped queries go (their relations' invalidations ask for it) */
	if (sweep_wanted)
	{
		sweep_wanted = false;
		sweep_dropped(q->id);
	}
	entry = hash_search(plan_entries, &q->id, HASH_FIND, &found);
	if (found && entry_usable(entry, q, read))
	{
		*an = entry->an;
		*plan = entry->plan;
		return;
	}

	/* build in the caller's context */
	gen = plan_generation;
	key = plan_key(q);
	stored = (Query *) stringToNode(q->query_tree);
	if (read == q->source)
		new_an = cq_analyze_query(copyObject(stored), &q->opts, q->name);
	else
	{
		CqOptions	opts = q->opts;

		opts.source_relid = read;
		new_an = cq_analyze_query(read_copy(copyObject(stored), q->source, read),
								  &opts, q->name);
	}
	new_plan = cq_plan_build(new_an, q);

	/* the copy to keep, in a context freed with the caller's until it is complete */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq analysis", ALLOCSET_SMALL_SIZES);
	copy_deps = cq_plan_deps_collect(q, new_an, stored, read,
									 cq_delta_scan_inval_items(new_plan->store.deltascan), cxt);
	old = MemoryContextSwitchTo(cxt);
	copy_an = copy_analysis(new_an);
	copy_plan = copy_plan_sql(new_plan);
	copy_key = pstrdup(key);
	MemoryContextSwitchTo(old);

	/* an entry for a new query may be allocated here; nothing fails after it */
	entry = hash_search(plan_entries, &q->id, HASH_ENTER, &found);
	if (found)
	{
		forget_entry_plans(entry, copy_plan);
		MemoryContextDelete(entry->cxt);
	}
	MemoryContextSetParent(cxt, CacheMemoryContext);
	entry->cxt = cxt;
	entry->an = copy_an;
	entry->plan = copy_plan;
	entry->deps = copy_deps;
	entry->key = copy_key;
	entry->read = read;
	entry->check = false;
	entry->checking = false;
	entry->stale = plan_generation != gen;

	sweep_dropped(q->id);
	*an = new_an;
	*plan = new_plan;
	/* t/074_warm_worker.pl: a warmed-up worker's first call builds nothing */
	elog(DEBUG1, "pg_cq: analysis and SQL of continuous query %d built", q->id);
}

/*
 * cq_plan_get
 *	  plan_get under the query's own settings (settings_pin.c): its SQL is
 *	  printed, and cached under a key (lc_monetary), as the batch that runs
 *	  it under them reads it back.
 */
void
cq_plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan)
{
	int			nest = cq_settings_pin_begin(q->timezone, q->settings);

	plan_get(q, an, plan);
	cq_settings_pin_end(nest);
}

/*
 * cq_plan_runs_empty
 *	  Does batch 0 of the query an describes run even when no row is new?
 *	  A global aggregation (aggregates without GROUP BY) has one result row
 *	  from the start, as the query has over no rows (SPEC §2: "one result
 *	  row"): its batch 0 writes it, count(*) 0, when it starts from
 *	  'latest' or nothing was in the table yet (over history batch 0 always
 *	  runs).  Not a join of two streams (join.c runs its own batches).
 *	  A worker's check that nothing is new (worker.c) never holds before
 *	  batch 0: the transaction that created or reset the query committed
 *	  after its start offset.
 */
bool
cq_plan_runs_empty(CqAnalysis *an)
{
	return an->is_aggregate && an->group_exprs == NIL && an->join == NULL && !an->session;
}
