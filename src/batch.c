/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  One batch of a continuous query, in the caller's transaction.
 *
 * Protocol (DESIGN.md "Data flow of one batch"):
 *	 1. lock the query's catalog row (serializes batches of one query);
 *	 2. S_prev = end offset of the last batch, S_cur = current snapshot,
 *		taken after the lock so that S_cur never precedes S_prev;
 *	 3. nothing new -> no batch; max_rows_per_trigger may end S_cur early at
 *		a transaction boundary;
 *	 4. as the query's owner, with search_path = pg_catalog, pg_temp:
 *		fold the new rows into state and write the target;
 *	 5. record the offset and progress.
 * The caller commits.  Everything above commits or rolls back together,
 * which is the whole exactly-once argument.  Every statement gets its own
 * snapshot (READ COMMITTED): the explicit snapshot predicate, not MVCC
 * alone, restricts the rows read.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/readfuncs.h"
#include "utils/builtins.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/comment.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"
#include "utils/xid8.h"
#include "utils/timestamp.h"

#include "batch.h"
#include "batch_guard.h"
#include "batch_index.h"
#include "delta_plan.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "sink.h"
#include "sql_builder.h"
#include "options.h"
#include "catalog.h"
#include "progress.h"
#include "analyze.h"
#include "tracking.h"
#include "summarize.h"
#include "horizon.h"
#include "offsets.h"
#include "timeexpr.h"
#include "plan.h"
#include "restore.h"
#include "status.h"
#include "join.h"
#include "store.h"
#include "merge.h"
#include "bulkload.h"
#include "store_fold.h"
#include "store_estimate.h"
#include "store_load.h"
#include "rowload.h"
#include "state.h"
#include "objects.h"
#include "citus.h"
#include "settings_pin.h"

/*
 * Everything run_as_owner needs to know about the batch to run.
 */
typedef struct BatchInput
{
	CqQuery    *q;
	CqAnalysis *an;
	CqPlan	   *plan;
	const char *prev_text;		/* S_prev */
	bool		per_node;		/* a Citus source stamped per node: the
								 * offsets below are per-node (offsets.c) */
	const char *start_text;		/* the start offset (rebuilds) */
	const char *prev_coord;		/* per_node: S_prev of cq.offsets (the
								 * coordinator's snapshot) */
	bool		history;		/* batch 0 reading rows from before tracking */
	bool		runs_empty;		/* runs with no row (history, cq_plan_runs_empty) */
	bool		unlimited;		/* ignore max_rows_per_trigger */
	bool		nodata_due;		/* the watermark advanced after the last batch */
	bool		nodata_only;	/* run only a due no-data batch */
	CqStore    *store;			/* state in the shared-memory store, or NULL */
	TimestampTz t0;
} BatchInput;

/*
 * read_event_time
 *	  Event-time statistics (min, max, avg) from columns col.. of the SPI
 *	  row into res; NULL when no row the query read had a finite event time.
 */
static void
read_event_time(CqBatchResult *res, int col)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	res->has_event_time = !isnull;
	if (!isnull)
	{
		res->et_min = DatumGetTimestampTz(d);
		res->et_max = DatumGetTimestampTz(SPI_getbinval(tup, desc, col + 1, &isnull));
		res->et_avg = DatumGetTimestampTz(SPI_getbinval(tup, desc, col + 2, &isnull));
	}
}

/*
 * event_time_stats
 *	  Read count(*) and the event-time statistics of the count statement's
 *	  row; returns the row count.
 */
static int64
event_time_stats(CqBatchResult *res)
{
	bool		isnull;
	int64		n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	read_event_time(res, 2);
	return n;
}

/*
 * watermark_candidate
 *	  max event time - delay, the watermark a batch whose largest (finite)
 *	  event time is max proposes; false when it lies before the first
 *	  timestamp (no watermark yet) or the delay is longer than any (stored
 *	  by an earlier version).  The delay is a fixed length (a month counts
 *	  31 days, as in Spark): cq_options_delay_usecs.
 */
static bool
watermark_candidate(CqQuery *q, TimestampTz max, TimestampTz *candidate)
{
	int64		delay;

	if (q->opts.watermark_delay == NULL ||
		!cq_options_delay_usecs(q->opts.watermark_delay, &delay))
		return false;
	if (pg_sub_s64_overflow(max, delay, candidate) || !IS_VALID_TIMESTAMP(*candidate))
		return false;
	return true;
}

/* The parameter types of the batch statements ($1..$5, see plan.c). */
static const Oid batch_param_types[5] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID, TIMESTAMPTZOID};

/* The owner's part of a batch while it runs: what its steps share. */
typedef struct OwnerBatch
{
	BatchInput *in;
	CqBatchResult *res;
	Oid			types[5];
	Datum		params[5];		/* $1..$5 of the batch statements */
	char		nulls[5];
	CqSnap	   *prev;			/* S_prev */
	CqSnap	   *cur;			/* S_cur, possibly cut short by the row limit */
	CqNodeSnap *nprev;			/* per_node: S_prev and S_cur (prev, cur unused) */
	CqNodeSnap *ncur;
	char	   *cur_text;
	int64		input_rows;
	bool		nodata;			/* no new rows in the range */
} OwnerBatch;

/*
 * end_offset
 *	  S_cur is the current snapshot; the parameters $1..$4 of the range
 *	  between S_prev and it.
 */
static void
end_offset(OwnerBatch *ob)
{
	BatchInput *in = ob->in;

	if (in->per_node)
	{
		/* every node's snapshot, each taken before the batch reads it */
		ob->nprev = cq_nsnap_parse(in->prev_text);
		ob->cur_text = cq_nsnap_current(in->q->source, in->q->owner, in->prev_text);
		ob->ncur = cq_nsnap_parse(ob->cur_text);
		ob->params[0] = cq_xid8_datum(cq_nsnap_low_bound(ob->nprev, ob->ncur));
		ob->params[1] = cq_xid8_datum(cq_nsnap_xmax(ob->ncur));
		ob->params[2] = CStringGetTextDatum(ob->cur_text);
		ob->params[3] = CStringGetTextDatum(in->prev_text);
		ob->nodata = in->nodata_only || (!in->runs_empty && cq_nsnap_nothing_new(ob->nprev, ob->ncur));
		return;
	}
	ob->prev = cq_snap_parse(in->prev_text);
	ob->cur_text = cq_snap_current_source(in->q->source, in->prev_text);
	ob->cur = cq_snap_parse(ob->cur_text);
	ob->params[0] = cq_xid8_datum(cq_snap_low_bound(ob->prev, ob->cur));
	ob->params[1] = cq_xid8_datum(ob->cur->xmax);
	ob->params[2] = cq_snapshot_datum(ob->cur_text);
	ob->params[3] = cq_snapshot_datum(in->prev_text);
	ob->nodata = in->nodata_only || (!in->runs_empty && cq_snap_nothing_new(ob->prev, ob->cur));
}

/*
 * cut
 *	  With max_rows_per_trigger, the row limit may end the batch early:
 *	  find where (offsets.c), first.
 */
static void
cut(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqQuery    *q = in->q;
	int64		hist = 0;
	int64		limited_rows;

	if (ob->nodata || q->opts.max_rows_per_trigger <= 0 || in->unlimited)
		return;
	if (in->history)
	{
		cq_spi_exec(in->plan->count_history_sql, SPI_OK_SELECT, 0, NULL, NULL, NULL);
		hist = strtoi64(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), NULL, 10);
	}
	if (in->per_node)
	{
		ob->cur_text = cq_offsets_limit_nodes(in->plan->count_xids_sql, ob->nprev, ob->ncur, in->prev_text,
											  q->opts.max_rows_per_trigger, hist, &limited_rows);
		ob->ncur = cq_nsnap_parse(ob->cur_text);
		ob->params[1] = cq_xid8_datum(cq_nsnap_xmax(ob->ncur));
		ob->params[2] = CStringGetTextDatum(ob->cur_text);
		ob->nodata = (limited_rows == 0 && !in->runs_empty);
		return;
	}
	ob->cur_text = cq_offsets_limit(in->plan->count_xids_sql, ob->prev, ob->cur, ob->cur_text,
									ob->params, q->opts.max_rows_per_trigger, hist, &limited_rows);
	ob->cur = cq_snap_parse(ob->cur_text);
	ob->params[1] = cq_xid8_datum(ob->cur->xmax);
	ob->params[2] = cq_snapshot_datum(ob->cur_text);
	ob->nodata = (limited_rows == 0 && !in->runs_empty);
}

/*
 * merge_needs_count
 *	  Does the table path need the batch's row count before its statement,
 *	  to choose between MERGE and the upsert (merge.c)?
 */
static bool
merge_needs_count(BatchInput *in)
{
	return !in->history && in->store == NULL && in->plan->batch_sql_merge != NULL &&
		cq_merge_max_groups > 0;
}

/*
 * count
 *	  The source rows of the batch (Spark's numInputRows) and event-time
 *	  statistics, from the count statement, unless the main statement
 *	  counts them itself.
 *
 *	  A single scan learns that the batch had no row only after its
 *	  statement ran; the batch then records nothing (no batch id is used),
 *	  but the statement wrote the target, with no row.  Where that shows
 *	  (a statement-level trigger on the target fires), the count statement
 *	  runs first, so that a poll or call that finds nothing new does not
 *	  run the statement (SPEC §5: no new data, no batch).
 */
static void
count(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqPlan	   *plan = in->plan;

	if (ob->nodata)
		return;

	/*
	 * A single scan counts its rows itself, but the MERGE path needs the
	 * count first to choose (merge.c), and so does a target with statement
	 * triggers (above; the store writes the target only when groups
	 * changed, complete mode only in refresh)
	 */
	if (plan->single_scan && !merge_needs_count(in) &&
		!(!in->history && in->store == NULL && in->q->opts.mode != CQ_MODE_COMPLETE &&
		  OidIsValid(in->q->target) && cq_sink_statement_triggers(in->q->target)))
		return;
	if (SPI_execute_plan(cq_spi_plan(in->history ? plan->count_sql_history : plan->count_sql, 4, ob->types),
						 ob->params, ob->nulls, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: could not count new rows");
	ob->input_rows = event_time_stats(ob->res);
	ob->nodata = (ob->input_rows == 0 && !in->runs_empty);
}

/*
 * nodata_batch
 *	  Nothing new: run only the batch that lets a new watermark close
 *	  windows, over the empty range S_prev..S_prev.  False when none is due.
 */
static bool
nodata_batch(OwnerBatch *ob)
{
	if (!ob->in->nodata_due)
		return false;
	ob->res->nodata = true;
	ob->res->has_event_time = false;
	ob->input_rows = 0;
	cq_status_report_message(CQ_MSG_CLEANUP);	/* cq.status, when run by a worker */
	ob->cur_text = (char *) ob->in->prev_text;
	ob->params[1] = cq_xid8_datum(ob->in->per_node ? cq_nsnap_xmax(ob->nprev) : ob->prev->xmax);
	ob->params[2] = ob->params[3];
	return true;
}

/*
 * split_exec
 *	  SPI_execute_plan of one of fold_split's statements; not inlined, so
 *	  that a profile (callgrind) tells the two apart.
 */
static pg_noinline int
split_exec_state(SPIPlanPtr plan, Datum *params, const char *nulls)
{
	return SPI_execute_plan(plan, params, nulls, false, 0);
}

static pg_noinline int
split_exec_sink(SPIPlanPtr plan)
{
	return SPI_execute_plan(plan, NULL, NULL, false, 0);
}

/*
 * fold_split
 *	  fold in two statements, for measurements (cq.bench_split_batch; see
 *	  split_sql in plan.c): the state statement, then the target statement
 *	  reading its changed rows as the ephemeral relation m, as the store's
 *	  does.  Reports both statements' CPU time at DEBUG1.
 */
static void
fold_split(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqBatchResult *res = ob->res;
	SPITupleTable *tt;
	uint64		n;
	int64		inserted = 0;
	int			ins_att;
	int			sid_att;
	bool		isnull;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	Tuplestorestate *ts;
	EphemeralNamedRelation enr;
	double		t0 = cq_store_cpu_ms();
	double		state_ms;
	double		enr_ms;

	if (split_exec_state(cq_spi_plan(in->plan->split_state_sql, 5, ob->types),
						 ob->params, ob->nulls) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: state statement failed");
	tt = SPI_tuptable;
	n = SPI_processed;
	state_ms = cq_store_cpu_ms() - t0;
	t0 = cq_store_cpu_ms();
	ins_att = SPI_fnumber(tt->tupdesc, "_ins");
	sid_att = SPI_fnumber(tt->tupdesc, "_sid");
	/* _sid numbers the rows (int8), as in the store's m, rather than their ctid */
	desc = CreateTupleDescCopy(tt->tupdesc);
	if (sid_att > 0)
		TupleDescInitEntry(desc, sid_att, "_sid", INT8OID, -1, 0);
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	/* m within the batch's work_mem (cq.work_mem), as the store's m (store_fold.c) */
	ts = tuplestore_begin_heap(false, false, work_mem);
	for (uint64 i = 0; i < n; i++)
	{
		heap_deform_tuple(tt->vals[i], tt->tupdesc, values, nulls);
		if (DatumGetBool(values[ins_att - 1]))
			inserted++;
		if (sid_att > 0)
			values[sid_att - 1] = Int64GetDatum((int64) i + 1);
		tuplestore_puttuple(ts, heap_form_tuple(desc, values, nulls));
	}
	if (in->plan->single_scan && !ob->nodata)
	{
		ob->input_rows = n > 0 ? DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc,
															 tt->tupdesc->natts, &isnull)) : 0;
		res->has_event_time = false;
	}
	res->state_updated = n;
	res->state_total += inserted;
	res->state_removed = 0;
	res->dropped_by_watermark = 0;
	res->output_rows = 0;
	enr = palloc0(sizeof(EphemeralNamedRelationData));
	enr->md.name = "m";
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = n;
	enr->reldata = ts;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "pg_cq: could not register relation m");
	SPI_freetuptable(tt);
	enr_ms = cq_store_cpu_ms() - t0;
	t0 = cq_store_cpu_ms();
	if (n > 0)
	{
		if (split_exec_sink(cq_spi_plan_rows(in->plan->split_sink_sql, 0, NULL, n)) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "pg_cq: target statement failed");
		res->output_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	(void) SPI_unregister_relation("m");
	tuplestore_end(ts);
	elog(DEBUG1, "pg_cq: table fold (split): state statement %.3f ms (%llu groups), m %.3f ms, target statement %.3f ms (CPU time)",
		 state_ms, (unsigned long long) n, enr_ms, cq_store_cpu_ms() - t0);
}

/*
 * metric_value
 *	  The next value of cq.batch_metrics (see batch_sql_merge in plan.c):
 *	  false for N (NULL).  Event times come in microseconds since 1970.
 */
static bool
metric_value(char **pos, bool is_time, int64 *value)
{
	char	   *tok = *pos;
	char	   *end = tok ? strchr(tok, ' ') : NULL;

	*pos = end ? end + 1 : NULL;
	if (end)
		*end = '\0';
	if (tok == NULL || tok[0] == '\0')
		elog(ERROR, "pg_cq: the batch statement left no statistics");
	if (strcmp(tok, "N") == 0)
		return false;
	if (is_time && strcmp(tok, "infinity") == 0)
		*value = DT_NOEND;
	else if (is_time && strcmp(tok, "-infinity") == 0)
		*value = DT_NOBEGIN;
	else
	{
		*value = strtoi64(tok, NULL, 10);
		if (is_time)
			*value -= (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	}
	return true;
}

/*
 * fold_merge
 *	  fold by the MERGE statement (plan.c's batch_sql_merge): the same
 *	  metrics, from cq.batch_metrics, and the rows written from MERGE's
 *	  row count.
 */
static void
fold_merge(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqBatchResult *res = ob->res;
	char	   *pos;
	int64		v[9];
	bool		has[9];

	(void) set_config_option("cq.batch_metrics", "", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	if (SPI_execute_plan(cq_spi_plan(in->plan->batch_sql_merge, 5, ob->types),
						 ob->params, ob->nulls, false, 0) != SPI_OK_MERGE)
		elog(ERROR, "pg_cq: batch statement failed");
	res->output_rows = (int64) SPI_processed;
	pos = pstrdup(cq_batch_metrics ? cq_batch_metrics : "");
	for (int i = 0; i < 9; i++)
		has[i] = metric_value(&pos, i >= 6, &v[i]);
	res->state_updated = v[0];
	res->state_total += v[1];
	res->state_removed = v[2];
	res->state_total -= res->state_removed;
	res->dropped_by_watermark = v[3];
	if (in->plan->single_scan && !ob->nodata)
	{
		ob->input_rows = v[5];
		res->has_event_time = has[6];
		if (has[6])
		{
			res->et_min = v[6];
			res->et_max = v[7];
			res->et_avg = v[8];
		}
	}
}

/*
 * fold
 *	  The main statement: fold the new rows into state and target, read
 *	  its metrics row.  Batch 0 over history folds into an empty state
 *	  with plain INSERTs (state.c): its indexes are dropped for the load
 *	  and built after it (cq_batch_unindex_state), and so is the target's
 *	  (cq_batch_unindex_target).  Where bulkload.c's direct load applies, it
 *	  replaces the statement, and where it can build the key-hash indexes
 *	  itself from what it writes (cq_bulk_index_plan) they are not dropped.
 */
static void
fold(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqBatchResult *res = ob->res;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	List	   *index_defs = NIL;
	List	   *target_index_defs = NIL;
	double		t0;

	ob->params[4] = TimestampTzGetDatum(res->watermark);
	ob->nulls[4] = (res->has_watermark && in->q->opts.mode != CQ_MODE_COMPLETE) ? ' ' : 'n';
	if (in->history)
	{
		CqBulkResult bulk;
		CqBulkIndexes ix;
		bool		built_by_load = in->plan->bulk_sql != NULL && cq_bulk_index_plan(in->an, in->q, &ix);
		bool		loaded;

		if (!built_by_load)
		{
			index_defs = cq_batch_unindex_state(in->q, in->an);
			target_index_defs = cq_batch_unindex_target(in->q, in->an);
		}
		t0 = cq_store_cpu_ms();
		loaded = cq_bulk_fold(in->an, in->q, in->plan->bulk_sql, in->plan->bulk_sql_all, 5, ob->types,
							  ob->params, ob->nulls, built_by_load ? &ix : NULL, &bulk);
		if (!loaded && built_by_load)
		{
			/* the load refused after all (types or collations): as before */
			index_defs = cq_batch_unindex_state(in->q, in->an);
			target_index_defs = cq_batch_unindex_target(in->q, in->an);
			loaded = cq_bulk_fold(in->an, in->q, in->plan->bulk_sql, in->plan->bulk_sql_all, 5,
								  ob->types, ob->params, ob->nulls, NULL, &bulk);
		}
		if (loaded)
		{
			res->state_updated = bulk.groups;
			res->state_total += bulk.groups;
			res->state_removed = 0;
			res->dropped_by_watermark = 0;
			res->output_rows = bulk.output_rows;
			if (in->plan->single_scan && !ob->nodata)
			{
				ob->input_rows = bulk.input_rows;
				res->has_event_time = false;
			}
			elog(DEBUG1, "pg_cq: table fold: batch 0 loaded directly %.3f ms (CPU time)", cq_store_cpu_ms() - t0);
			t0 = cq_store_cpu_ms();
			cq_batch_build_indexes(index_defs);
			cq_batch_build_indexes_as_user(target_index_defs);
			elog(DEBUG1, "pg_cq: table fold: batch 0's indexes built %.3f ms (CPU time)", cq_store_cpu_ms() - t0);
			t0 = cq_store_cpu_ms();
			cq_batch_analyze_loaded(in->q, in->an, index_defs != NIL || bulk.state_index_built,
						   target_index_defs != NIL || bulk.target_index_built);
			elog(DEBUG1, "pg_cq: table fold: state and target analyzed %.3f ms (CPU time)", cq_store_cpu_ms() - t0);
			return;
		}
	}
	else if (cq_bench_split_batch && in->plan->split_state_sql != NULL)
	{
		fold_split(ob);
		return;
	}
	t0 = cq_store_cpu_ms();
	if (!in->history && in->plan->batch_sql_merge != NULL)
	{
		bool		merge = cq_merge_chosen(ob->nodata ? 0 : ob->input_rows);

		cq_merge_note(in->q->id, merge ? CQ_WRITER_MERGE : CQ_WRITER_UPSERT, ob->nodata ? 0 : ob->input_rows);
		if (merge)
		{
			fold_merge(ob);
			elog(DEBUG1, "pg_cq: table fold: batch statement (MERGE) %.3f ms (CPU time)", cq_store_cpu_ms() - t0);
			return;
		}
	}
	if (SPI_execute_plan(cq_spi_plan(in->history ? in->plan->batch_sql_history : in->plan->batch_sql, 5, ob->types),
						 ob->params, ob->nulls, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pg_cq: batch statement failed");
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	res->state_updated = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	res->state_total += DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	res->state_removed = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	res->state_total -= res->state_removed;
	res->dropped_by_watermark = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	res->output_rows = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	if (in->plan->single_scan && !ob->nodata)
	{
		ob->input_rows = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
		read_event_time(res, 7);
	}
	elog(DEBUG1, "pg_cq: table fold: batch statement %.3f ms (CPU time)", cq_store_cpu_ms() - t0);
	/* after reading the statement's result: these replace SPI_tuptable */
	cq_batch_build_indexes(index_defs);
	cq_batch_build_indexes_as_user(target_index_defs);
	cq_batch_analyze_loaded(in->q, in->an, index_defs != NIL, target_index_defs != NIL);
}

/*
 * fold_store
 *	  fold for a query whose state is in the shared-memory store
 *	  (store.c): the same metrics from the store's fold.  Batch 0 over
 *	  history writes every group to the empty target, by a load
 *	  (store_load.c) or a plain INSERT, as on the table path: the target's
 *	  index is built after it, by the load from the key hashes it wrote
 *	  where it can (cq_target_load_index_plan), else from its definition
 *	  (cq_batch_unindex_target).
 */
static void
fold_store(OwnerBatch *ob)
{
	BatchInput *in = ob->in;
	CqBatchResult *res = ob->res;
	CqStoreMetrics m;
	bool		has_wm = res->has_watermark && in->q->opts.mode != CQ_MODE_COMPLETE;
	List	   *target_index_defs = NIL;
	Oid			target_index = InvalidOid;

	if (in->history &&
		!cq_target_load_index_plan(in->an, in->q, &in->plan->store, &target_index))
		target_index_defs = cq_batch_unindex_target(in->q, in->an);
	cq_store_fold(in->store, &in->plan->store, in->history, ob->params, ob->nulls,
				  has_wm, res->watermark, true, target_index, &m);
	cq_batch_build_indexes_as_user(target_index_defs);
	res->state_updated = m.updated;
	res->state_total += m.inserted;
	res->state_removed = m.removed;
	res->state_total -= res->state_removed;
	res->dropped_by_watermark = m.dropped;
	res->output_rows = m.output_rows;
	if (!in->history && m.wrote && cq_merge_applies(in->an, in->q))
		cq_merge_note(in->q->id, m.by_merge ? CQ_WRITER_MERGE : m.by_c ? CQ_WRITER_C : CQ_WRITER_UPSERT, m.updated);
	if (in->plan->single_scan && !ob->nodata)
	{
		ob->input_rows = m.input_rows;
		res->has_event_time = m.has_event_time;
		res->et_min = m.et_min;
		res->et_max = m.et_max;
		res->et_avg = m.et_avg;
	}
}

/*
 * next_watermark
 *	  max(W, max event time - delay), never backwards.  The maximum is over
 *	  the rows the query read with a finite event time.
 */
static void
next_watermark(CqQuery *q, CqBatchResult *res)
{
	TimestampTz next_candidate = 0;

	res->has_next_watermark = res->has_watermark;
	res->next_watermark = res->watermark;
	if (res->has_event_time && watermark_candidate(q, res->et_max, &next_candidate) &&
		(!res->has_next_watermark || next_candidate > res->next_watermark))
	{
		res->has_next_watermark = true;
		res->next_watermark = next_candidate;
	}
}

/*
 * refresh
 *	  Complete mode: replace the whole result from the state, in this
 *	  transaction (TRUNCATE waits at most cq.complete_lock_timeout).
 */
static void
refresh(CqQuery *q, CqPlan *plan, CqStore *store, CqBatchResult *res)
{
	int64		store_rows = -1;
	Tuplestorestate *all = NULL;

	if (strcmp(q->opts.complete_refresh, "delete") == 0)
		cq_spi_exec(psprintf("DELETE FROM %s", cq_sql_relname_str(q->target)),
					SPI_OK_DELETE, 0, NULL, NULL, NULL);
	else
	{
		int			nest = NewGUCNestLevel();

		(void) set_config_option("lock_timeout", psprintf("%d", cq_lock_timeout_ms),
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		cq_spi_exec(psprintf("TRUNCATE %s", cq_sql_relname_str(q->target)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		AtEOXact_GUC(true, nest);
	}
	if (store)
		all = cq_store_refresh_begin(store, &store_rows);
	if (SPI_execute_plan(cq_spi_plan_rows(store ? plan->store.complete : plan->complete_sql, 0, NULL,
										  store_rows),
						 NULL, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "pg_cq: could not reload the target");
	res->output_rows = SPI_processed;
	if (store)
		cq_store_refresh_end(all);
}

/*
 * run_as_owner
 *	  The owner's part of the batch: end offset, row-limit cut, count,
 *	  fold, complete-mode refresh.  Returns false when there was nothing to
 *	  do.
 */
static bool
run_as_owner(BatchInput *in, CqBatchResult *res)
{
	OwnerBatch	ob;
	TimestampTz t1;
	int			scan_nest;

	memset(&ob, 0, sizeof(ob));
	ob.in = in;
	ob.res = res;
	memcpy(ob.types, batch_param_types, sizeof(ob.types));
	if (in->per_node)
		ob.types[2] = ob.types[3] = TEXTOID;	/* per-node offsets */
	memset(ob.nulls, ' ', sizeof(ob.nulls));

	end_offset(&ob);
	scan_nest = cq_delta_plan_scan_settings(in->history, true);
	cut(&ob);
	count(&ob);
	if (ob.nodata && !nodata_batch(&ob))
	{
		cq_delta_plan_scan_end(scan_nest);
		return false;
	}
	if (!res->nodata)
		cq_status_report_message(CQ_MSG_PROCESSING);	/* cq.status, when run by a worker */
	if (in->per_node)
	{
		/* cq.offsets and cq.progress show this node's snapshots */
		CqSnap	   *self = cq_nsnap_get(ob.ncur ? ob.ncur : ob.nprev, cq_node_self());

		res->start_offset = pstrdup(in->prev_coord);
		res->end_offset = ob.cur_text == in->prev_text || self == NULL ?
			pstrdup(in->prev_coord) : cq_snap_text(self);
		res->node_end_offset = pstrdup(ob.cur_text);
	}
	else
	{
		res->start_offset = pstrdup(in->prev_text);
		res->end_offset = pstrdup(ob.cur_text);
	}
	res->latest_offset_ms = cq_ms_since(in->t0);

	t1 = GetCurrentTimestamp();
	if (in->store)
		fold_store(&ob);
	else
		fold(&ob);
	cq_delta_plan_scan_end(scan_nest);
	if (in->history)			/* what it wrote past shared buffers, read into them */
		cq_rowload_cache(in->q->target, in->q->opts.mode == CQ_MODE_UPDATE,
						 in->store ? InvalidOid : in->q->state_table);

	if (in->plan->single_scan && !ob.nodata && ob.input_rows == 0 && !in->runs_empty)
	{
		/* no row of the source: only a new watermark made it a (no-data) batch */
		if (!in->nodata_due)
			return false;
		res->nodata = true;
	}
	res->input_rows = ob.input_rows;
	next_watermark(in->q, res);
	if (in->q->opts.mode == CQ_MODE_COMPLETE)
		refresh(in->q, in->plan, in->store, res);
	res->add_batch_ms = cq_ms_since(t1);
	return true;
}

/*
 * rebuild_state
 *	  Refill a query's empty unlogged state (DESIGN.md "State").  The
 *	  rebuild needs no history: a row can only have been dropped as late for
 *	  a window that is now closed, and closed windows are final in the
 *	  target, so the state is the partial aggregate of every row the query
 *	  has processed (those visible in the last committed offset and not in
 *	  its start offset, plus history rows when starting = earliest),
 *	  restricted to windows still open at the last batch.  Runs as the owner.
 *	  Returns the number of state rows.
 */
static int64
rebuild_state(BatchInput *in, CqLastOffset *last, double *ms)
{
	Oid			types[5] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID, TIMESTAMPTZOID};
	Datum		params[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	TimestampTz t0 = GetCurrentTimestamp();
	int64		rows;
	bool		isnull;
	List	   *index_defs;

	params[0] = cq_xid8_datum(0);
	if (in->per_node)
	{
		/* last->end_offset and start_text are per-node offsets */
		types[2] = types[3] = TEXTOID;
		params[1] = cq_xid8_datum(cq_nsnap_xmax(cq_nsnap_parse(last->end_offset)));
		params[2] = CStringGetTextDatum(last->end_offset);
		params[3] = CStringGetTextDatum(in->start_text);
	}
	else
	{
		params[1] = cq_xid8_datum(cq_snap_parse(last->end_offset)->xmax);
		params[2] = cq_snapshot_datum(last->end_offset);
		params[3] = cq_snapshot_datum(in->q->start_offset);
	}
	params[4] = TimestampTzGetDatum(last->batch_watermark);
	nulls[4] = (last->has_batch_watermark && in->q->opts.mode != CQ_MODE_COMPLETE) ? ' ' : 'n';
	index_defs = cq_batch_unindex_state(in->q, in->an);
	if (SPI_execute_plan(cq_spi_plan(in->plan->rebuild_sql, 5, types), params, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: could not rebuild state");
	rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	cq_batch_build_indexes(index_defs);
	*ms = cq_ms_since(t0);
	ereport(LOG,
			(errmsg("pg_cq: rebuilt lost state of continuous query \"%s\": " INT64_FORMAT " rows in %.1f ms",
					in->q->name, rows, *ms),
			 errdetail("A crash-restart empties unlogged tables; the state was refolded from the source.")));
	return rows;
}

/*
 * rebuild_store
 *	  rebuild_state for a query whose store is lost (shared memory is
 *	  empty after a restart or crash, or another batch's publication never
 *	  happened): the same refold, into the store, from the same rows.
 *	  Runs as the owner.  Returns the number of state rows.
 */
static int64
rebuild_store(BatchInput *in, CqLastOffset *last, double *ms)
{
	Datum		params[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	CqSnap	   *end = cq_snap_parse(last->end_offset);
	TimestampTz t0 = GetCurrentTimestamp();
	int64		rows;
	bool		has_wm = last->has_batch_watermark && in->q->opts.mode != CQ_MODE_COMPLETE;
	int64		image_batch;
	char	   *image_offset;

	/* from the image: its rows, then the rows of the batches after it */
	if (cq_store_load_image(in->store, in->q, last, has_wm, last->batch_watermark,
							&image_batch, &image_offset))
	{
		rows = cq_store_rows(in->store);
		if (image_batch < last->batch_id)
		{
			CqSnap	   *from = cq_snap_parse(image_offset);

			params[0] = cq_xid8_datum(cq_snap_low_bound(from, end));
			params[1] = cq_xid8_datum(end->xmax);
			params[2] = cq_snapshot_datum(last->end_offset);
			params[3] = cq_snapshot_datum(image_offset);
			rows = cq_store_replay(in->store, &in->plan->store, params, nulls, has_wm,
								   last->batch_watermark);
		}
		*ms = cq_ms_since(t0);
		ereport(LOG,
				(errmsg("pg_cq: restored lost state of continuous query \"%s\" from its image of batch " INT64_FORMAT ": " INT64_FORMAT " rows in %.1f ms",
						in->q->name, image_batch, rows, *ms),
				 errdetail("Its shared-memory state store was missing; the rows of batches " INT64_FORMAT " to " INT64_FORMAT " were folded again.",
						   image_batch + 1, last->batch_id)));
		return rows;
	}

	params[0] = cq_xid8_datum(0);
	params[1] = cq_xid8_datum(end->xmax);
	params[2] = cq_snapshot_datum(last->end_offset);
	params[3] = cq_snapshot_datum(in->q->start_offset);
	rows = cq_store_rebuild(in->store,
							cq_query_reads_history(in->q) ? in->plan->store.delta_history : in->plan->store.delta,
							params, nulls,
							last->has_batch_watermark && in->q->opts.mode != CQ_MODE_COMPLETE,
							last->batch_watermark);
	*ms = cq_ms_since(t0);
	ereport(LOG,
			(errmsg("pg_cq: rebuilt lost state of continuous query \"%s\": " INT64_FORMAT " rows in %.1f ms",
					in->q->name, rows, *ms),
			 errdetail("Its shared-memory state store was missing; the state was refolded from the source.")));
	return rows;
}

/*
 * move_to_table
 *	  In the batch's transaction, write the query's state table from its
 *	  store, make the table path the query's (state_storage 'unlogged', or
 *	  'logged' for a query whose image was logged: its table is; the state
 *	  valid, the final view reading the table, state_path = path) and drop
 *	  the store at commit.  Returns the new state_storage.
 */
static const char *
move_to_table(BatchInput *in, const char *path)
{
	CqSecurity	sec;
	CqAnalysis *an;
	const char *storage = cq_options_logged_image(&in->q->opts) ? "logged" : "unlogged";

	cq_store_switch_to_table(in->store, in->q);
	cq_catalog_set_state_storage(in->q->id, storage, path);
	cq_security_superuser(&sec);
	CommandCounterIncrement();
	an = cq_analyze_query((Query *) stringToNode(in->q->query_tree), &in->q->opts, in->q->name);
	cq_objects_replace_final_view(in->q->id, an);
	cq_security_restore(&sec);
	if (strcmp(storage, "unlogged") == 0)
		cq_catalog_state_valid(in->q->id, -1);
	return storage;
}

/*
 * switch_to_table
 *	  The store of a query outgrew cq.state_memory: move it to the table
 *	  path (move_to_table), state_path saying why at which batch.
 */
static void
switch_to_table(BatchInput *in, int64 batch_id)
{
	const char *storage;

	storage = move_to_table(in, psprintf("table: moved after exceeding cq.state_memory (%d kB) at batch " INT64_FORMAT,
										 cq_state_memory_kb, batch_id));
	ereport(WARNING,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("continuous query \"%s\" moved its state from shared memory to its state table", in->q->name),
			 errdetail("Its state takes more than cq.state_memory (%d kB); cq.queries.state_storage is now '%s'.",
					   cq_state_memory_kb, storage),
			 errhint("To keep it in shared memory, raise cq.state_memory and recreate the query.")));
}

/*
 * table_up_front
 *	  Batch 0 over history of a query on the store whose state, as
 *	  estimated before it runs (store_estimate.c), would not fit in
 *	  cq.state_memory: the query takes the table path now, before the batch
 *	  folds anything into the store (which it would then have to move:
 *	  switch_to_table), state_path saying why.  Not for a query that asked
 *	  for the store itself (state_storage 'memory' given): it stays unless
 *	  it really outgrows the budget.  An estimate too low changes nothing
 *	  (the move still happens); one too high keeps a query that would have
 *	  fit out of the store, the batch's results being the same either way.
 *	  A query that stays gets its store's group table sized up front for
 *	  the estimated groups (cq_store_expect, within the budget), so that
 *	  batch 0 does not double it again and again.  Returns true when the
 *	  query moved (the caller plans it again).
 */
static bool
table_up_front(BatchInput *in)
{
	CqSecurity	sec;
	double		groups;
	double		bytes;
	bool		known;
	const char *storage;
	char	   *path;
	bool		requested = in->q->opts.state_path != NULL &&
		strcmp(in->q->opts.state_path, "memory: requested") == 0;

	/* planned as the owner, search_path pinned */
	cq_security_owner(in->q->owner, &sec);
	known = cq_store_estimate(in->an, in->plan->store.delta_history, &groups, &bytes);
	cq_security_restore(&sec);
	if (known)
		elog(DEBUG1, "pg_cq: continuous query \"%s\": batch 0 estimated at %.0f groups, %.0f bytes in the store",
			 in->q->name, groups, bytes);
	else
		elog(DEBUG1, "pg_cq: continuous query \"%s\": no estimate of batch 0's groups", in->q->name);
	if (known && (requested || bytes <= (double) cq_state_memory_kb * 1024.0))
		cq_store_expect(in->store, groups, bytes);	/* it stays */
	if (!known || requested || bytes <= (double) cq_state_memory_kb * 1024.0)
		return false;
	path = psprintf("table: estimated %.0f groups of %.0f bytes in the store, above cq.state_memory (%d kB), at batch 0",
					groups, bytes / groups, cq_state_memory_kb);
	storage = move_to_table(in, path);
	in->q->opts.state_storage = pstrdup(storage);
	in->q->opts.state_path = path;
	ereport(NOTICE,
			(errmsg("continuous query \"%s\" keeps its state in its state table", in->q->name),
			 errdetail("The planner estimates %.0f groups for its first batch, about %.0f kB in shared memory, more than cq.state_memory (%d kB); cq.queries.state_storage is now '%s'.",
					   groups, bytes / 1024.0, cq_state_memory_kb, storage),
			 errhint("To keep it in shared memory, raise cq.state_memory, or create the query with state_storage = 'memory'.")));
	return true;
}

/*
 * keep_result
 *	  Copy what res points to into the caller's memory context: the rest of
 *	  the batch's allocations go with its SPI connection.
 */
static void
keep_result(CqBatchResult *res, MemoryContext cxt)
{
	if (res->start_offset)
		res->start_offset = MemoryContextStrdup(cxt, res->start_offset);
	if (res->end_offset)
		res->end_offset = MemoryContextStrdup(cxt, res->end_offset);
	if (res->node_end_offset)
		res->node_end_offset = MemoryContextStrdup(cxt, res->node_end_offset);
}

/*
 * run_query
 *	  The batch of cq_batch_run_query, in an SPI connection of its own:
 *	  everything it allocates, SPI result tables included, is freed when
 *	  that connection ends, so that a caller running many batches (CALL
 *	  cq.run) does not grow with them.
 */
static void
run_query(CqQuery *q, const CqLastOffset *last_in, int flags, CqBatchResult *res)
{
	BatchInput	in;
	CqLastOffset last;
	CqSecurity	sec;
	bool		ran;
	bool		rebuild;
	bool		rebuild_sql;
	bool		store_lost = false;
	int			nest;

	memset(res, 0, sizeof(*res));
	memset(&in, 0, sizeof(in));
	in.t0 = res->started_at = GetCurrentTimestamp();

	in.q = cq_restore_if_moved(q);
	if (in.q != q && OidIsValid(in.q->opts.join_source_relid))
		cq_join_restored(in.q);	/* a restored join of two streams: both streams, its buffers */
	if (last_in && in.q == q)
		last = *last_in;
	else
		cq_progress_last_offset(in.q, &last);
	in.history = !last.found && cq_query_reads_history(in.q);
	in.prev_text = last.found ? last.end_offset : in.q->start_offset;
	in.start_text = in.q->start_offset;
	in.per_node = OidIsValid(in.q->source) && cq_citus_per_node_offsets(in.q->source);
	if (in.per_node)
	{
		/* per-node offsets: cq.offsets has the coordinator's snapshots only */
		char	   *start = cq_progress_node_offset(in.q->id, -1);

		in.start_text = start ? start : "";
		in.prev_coord = in.prev_text;
		if (last.found)
		{
			last.end_offset = cq_progress_node_offset(in.q->id, last.batch_id);
			if (last.end_offset == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("continuous query \"%s\" has no per-node offset for batch " INT64_FORMAT,
								in.q->name, last.batch_id),
						 errdetail("Its source \"%s\" is stamped on the Citus node that stores each row; cq.node_offsets keeps where the last batch ended on each node.",
								   get_rel_name(in.q->source)),
						 errhint("Reset the query (cq.reset) to start it over.")));
		}
		in.prev_text = last.found ? last.end_offset : in.start_text;
		if (OidIsValid(in.q->opts.join_source_relid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a join of two streams cannot read Citus distributed table \"%s\"",
							get_rel_name(in.q->source))));
	}
	in.unlimited = (flags & CQ_BATCH_UNLIMITED) != 0;
	in.nodata_only = (flags & CQ_BATCH_NODATA_ONLY) != 0;
	res->batch_id = last.found ? last.batch_id + 1 : 0;
	res->state_total = last.state_rows;
	res->has_watermark = last.has_watermark;
	res->watermark = last.watermark;

	cq_security_target_rls(in.q->target, in.q->owner, in.q->opts.mode == CQ_MODE_UPDATE || (in.q->opts.mode ==
						   CQ_MODE_COMPLETE && strcmp(in.q->opts.complete_refresh, "delete") == 0), in.q->name);
	/* a join of two streams runs its own batches (join.c) */
	if (OidIsValid(in.q->opts.join_source_relid))
	{
		cq_join_run_query(in.q, &last, in.nodata_only, in.unlimited, res);
		return;
	}

	/* its SQL printed, estimated (table_up_front) and run under its creator's settings (settings_pin.c) */
	nest = cq_settings_pin_begin(in.q->timezone, in.q->settings);
	cq_plan_get(in.q, &in.an, &in.plan);
	in.runs_empty = in.history || (!last.found && cq_plan_runs_empty(in.an));
	res->et_utc = in.an->et_attno != InvalidAttrNumber && !in.an->et_is_tz;

	/* a watermark that advanced must still close windows (or evict seen keys) */
	in.nodata_due = last.found && last.has_watermark &&
		(in.an->wm_key >= 0 || in.an->dedup_evicts) &&
		in.q->opts.mode != CQ_MODE_COMPLETE &&
		(!last.has_batch_watermark || last.watermark > last.batch_watermark);
	if (in.nodata_only && !in.nodata_due)
	{
		cq_settings_pin_end(nest);
		return;
	}

	/* bound the scan of new rows to unsummarized pages of this batch */
	if (!in.history)
		cq_source_summarize(in.an->source_relid);	/* a Citus copy: plan.c */

	/* unlogged state emptied by a crash-restart: rebuild it first */
	res->rebuild_ms = -1;
	rebuild = OidIsValid(in.q->state_table) &&
		strcmp(in.q->opts.state_storage, "unlogged") == 0 &&
		cq_catalog_state_lost(in.q->id);
	/* the state of a deduplication within a watermark is logged (dedup.c): nothing to refill */
	rebuild_sql = rebuild && in.plan->rebuild_sql != NULL;

	/* the shared-memory store, as the last committed batch left it */
	if (in.plan->use_store)
		in.store = cq_store_open(in.q, in.an, &last, &store_lost);
	/* batch 0 over history that the store is not expected to hold: the table path */
	if (in.store && in.history && !store_lost && table_up_front(&in))
	{
		in.store = NULL;
		cq_plan_get(in.q, &in.an, &in.plan);
	}

	/* as the owner, search_path pinned; work_mem (set where it differs) ends with it */
	cq_security_owner(in.q->owner, &sec);
	if (cq_work_mem_kb > 0 && work_mem != cq_work_mem_kb)
		(void) set_config_option("work_mem", psprintf("%d", cq_work_mem_kb), PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (rebuild_sql && last.found)
		res->state_total = rebuild_state(&in, &last, &res->rebuild_ms);
	if (store_lost)
		res->state_total = rebuild_store(&in, &last, &res->rebuild_ms);
	ran = run_as_owner(&in, res);
	cq_security_restore(&sec);
	cq_settings_pin_end(nest);

	if (store_lost)
	{
		/* recorded as a rebuild of lost unlogged state is (state_rebuilt_at) */
		cq_catalog_state_valid(in.q->id, Max(res->rebuild_ms, 0));
		if (!ran)
			cq_progress_set_state_rows(in.q, last.batch_id, res->state_total);
	}
	/* a store that outgrew its budget (in this batch or its rebuild) moves to the table */
	if (in.store && cq_store_over_budget(in.store))
		switch_to_table(&in, ran ? res->batch_id : last.batch_id);

	if (rebuild)
	{
		/* the rebuild commits with this batch, or with nothing if none ran */
		cq_catalog_state_valid(in.q->id, rebuild_sql ? Max(res->rebuild_ms, 0) : -1);
		if (rebuild_sql && !ran && last.found)
			cq_progress_set_state_rows(in.q, last.batch_id, res->state_total);
	}
	if (!ran)
		return;

	res->ran = true;
	if (in.store)
	{
		cq_store_batch_done(in.store, res->batch_id);
		if (!cq_store_switched(in.store) && cq_store_image_due(in.store, in.q, res->batch_id))
			cq_store_write_image(in.store, in.q, res->batch_id, res->end_offset);
	}
	res->nodata_due_next = (in.an->wm_key >= 0 || in.an->dedup_evicts) &&
		in.q->opts.mode != CQ_MODE_COMPLETE &&
		res->has_next_watermark &&
		(!res->has_watermark || res->next_watermark > res->watermark);
	/* the state's bytes: in the store, or in the state table (cq.progress.state_bytes) */
	res->has_state_bytes = OidIsValid(in.q->state_table);
	if (in.store && !cq_store_switched(in.store))
		res->state_bytes = cq_store_bytes(in.store);
	else if (res->has_state_bytes)
		res->state_bytes = cq_progress_table_bytes(in.q->state_table);
	res->duration_ms = cq_ms_since(in.t0);
	res->processed_rows_per_second = res->input_rows / Max(res->duration_ms, 1.0) * 1000.0;
	res->input_rows_per_second = last.last_started_at == 0 ? -1 :
		res->input_rows / Max((double) (in.t0 - last.last_started_at) / 1000000.0, 0.001);
	cq_progress_record_batch(in.q, res);
	if (in.per_node)
		cq_progress_record_node_offset(in.q->id, res->batch_id, res->node_end_offset);
}

/*
 * cq_batch_node_start
 *	  A query over source was created or reset: if the source is stamped
 *	  per node (Citus), record where batch 0 starts on each node (latest:
 *	  every node's current snapshot; earliest: nothing, every node from
 *	  its first row).  Caller has SPI connected.
 */
void
cq_batch_node_start(Oid source, int32 id, bool latest)
{
	if (!OidIsValid(source) || !cq_citus_per_node_offsets(source))
		return;
	cq_progress_reset_node_offsets(id, latest ? cq_nsnap_current(source, InvalidOid, "") : NULL);
}

/*
 * cq_batch_node_goal
 *	  For cq.run over a source stamped per node: every node's current
 *	  snapshot (what the batches must cover), else NULL; owner: the
 *	  query's owner.  Caller has SPI connected.
 */
char *
cq_batch_node_goal(Oid source, Oid owner)
{
	if (!OidIsValid(source) || !cq_citus_per_node_offsets(source))
		return NULL;
	return cq_nsnap_current(source, owner, "");
}

/*
 * cq_batch_run
 *	  Run one batch of query `id` in the current transaction (SPI
 *	  connected).  `unlimited` ignores max_rows_per_trigger.  res->ran is
 *	  false when there was nothing to do; then nothing was written.
 */
void
cq_batch_run(int32 id, bool unlimited, CqBatchResult *res)
{
	cq_batch_run_ext(id, unlimited ? CQ_BATCH_UNLIMITED : 0, res);
}

/*
 * cq_batch_run_ext
 *	  cq_batch_run with flags: CQ_BATCH_UNLIMITED, CQ_BATCH_NODATA_ONLY (run
 *	  the no-data batch a new watermark calls for, and nothing else).
 *
 *	  Watermarks (SPEC §4): the batch uses W = the watermark computed after
 *	  the previous batch (NULL = -infinity before the first); after it,
 *	  W' = max(W, max event time read - delay).  When W' > W and nothing new
 *	  is waiting, a no-data batch runs with W' so that closed windows are
 *	  emitted (append) and evicted (append, update).
 */
void
cq_batch_run_ext(int32 id, int flags, CqBatchResult *res)
{
	MemoryContext caller = CurrentMemoryContext;

	cq_batch_before_lock();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_batch_guard_run(cq_catalog_get_query_by_id(id, false, true), run_query, NULL, flags, res);
	keep_result(res, caller);
	SPI_finish();
}

/*
 * cq_batch_before_lock
 *	  Called before a batch locks its query's row (which gives its
 *	  transaction an id): a scan-horizon sample (horizon.c) whose X is at
 *	  most that id.  The batch's end offset counts its own transaction as
 *	  running, so the next batch's low bound is this id, and only samples
 *	  taken before it was assigned serve that batch's scan; the samples a
 *	  batch takes later (summarizing, after its scan) have larger X.
 *	  Without this one, the newest usable sample was the previous batch's,
 *	  older than the rows this batch reads, and the next batch re-read
 *	  their pages in its BRIN range (one range, ~3,000 rows of a 10k-row
 *	  batch in bench/results/batchcost-s27.md).  Only a sample: harmless
 *	  whenever it is taken.
 */
void
cq_batch_before_lock(void)
{
	if (!FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
		cq_source_sample_horizon();
}

/*
 * cq_batch_run_query
 *	  cq_batch_run_ext for a query the caller has already loaded with its
 *	  row lock (cq_catalog_get_query*(..., lock = true)) in this transaction,
 *	  and, when last_in is not NULL, whose last offset it read after taking
 *	  the lock: saves reading the same catalog rows twice per batch.
 */
void
cq_batch_run_query(CqQuery *q, const CqLastOffset *last_in, int flags, CqBatchResult *res)
{
	MemoryContext caller = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_batch_guard_run(q, run_query, last_in, flags, res);
	keep_result(res, caller);
	SPI_finish();
}
