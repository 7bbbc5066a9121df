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
 * which is the whole exactly-once argument.
 *
 * Every statement gets its own snapshot (READ COMMITTED) so the rows read
 * are restricted by the explicit snapshot predicate, not by MVCC alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/readfuncs.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/xid8.h"
#include "utils/timestamp.h"

#include "pg_cq.h"
#include "source.h"
#include "shmem.h"

/* Milliseconds since t0. */
static double
ms_since(TimestampTz t0)
{
	return (double) (GetCurrentTimestamp() - t0) / 1000.0;
}

/* Datum helpers for the batch parameters. */
static Datum
xid8_datum(uint64 x)
{
	return FullTransactionIdGetDatum(FullTransactionIdFromU64(x));
}

static Datum
snapshot_datum(const char *text)
{
	return DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(text));
}

/*
 * limit_offset
 *	  With max_rows_per_trigger, end the batch after the first transactions
 *	  (in id order) whose rows reach the limit; a transaction is never
 *	  split, so one larger than the limit forms a batch alone.  Returns the
 *	  (possibly earlier) end snapshot.
 */
static char *
limit_offset(CqPlan *plan, CqSnap *prev, CqSnap *cur, const char *cur_text,
			 Datum *params, Oid *types, int64 limit, int64 already, int64 *nrows)
{
	uint64	   *chosen;
	int			nchosen = 0;
	int64		rows = already;
	uint64		cut = 0;
	uint64		n;

	cq_spi_exec(plan->count_xids_sql, SPI_OK_SELECT, 4, types, params, NULL);
	n = SPI_processed;
	*nrows = already;
	if (n == 0)
		return (char *) cur_text;
	chosen = palloc(sizeof(uint64) * n);
	for (uint64 i = 0; i < n; i++)
	{
		char	   *x = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *c = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		int64		cnt = strtoi64(c, NULL, 10);

		if (nchosen > 0 && rows + cnt > limit)
			break;
		if (nchosen == 0 && rows > 0 && rows + cnt > limit)
			break;				/* history alone filled the batch */
		chosen[nchosen++] = strtou64(x, NULL, 10);
		cut = chosen[nchosen - 1] + 1;
		rows += cnt;
	}
	*nrows = rows;
	if ((uint64) nchosen == n)
		return (char *) cur_text;
	if (nchosen == 0)
		cut = prev->xmax;
	return cq_snap_cut(prev, cur, cut, chosen, nchosen);
}

/*
 * run_as_owner
 *	  The owner's part of the batch: find the range, fold, write.
 *	  Returns false when there was nothing to do.
 */
static bool
run_as_owner(CqQuery *q, CqPlan *plan, const char *prev_text, bool history,
			 bool unlimited, CqBatchResult *res, TimestampTz t0)
{
	Oid			types[4] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};
	Datum		params[4];
	CqSnap	   *prev = cq_snap_parse(prev_text);
	CqSnap	   *cur;
	char	   *cur_text;
	TimestampTz t1;
	int64		input_rows;

	cq_spi_exec("SELECT pg_catalog.pg_current_snapshot()::text", SPI_OK_SELECT, 0, NULL, NULL, NULL);
	cur_text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	cur = cq_snap_parse(cur_text);

	if (!history && cq_snap_nothing_new(prev, cur))
		return false;

	params[0] = xid8_datum(cq_snap_low_bound(prev, cur));
	params[1] = xid8_datum(cur->xmax);
	params[2] = snapshot_datum(cur_text);
	params[3] = snapshot_datum(prev_text);

	/* the source rows of the batch: Spark's numInputRows */
	if (SPI_execute_plan(cq_spi_plan(history ? plan->count_sql_history : plan->count_sql, 4, types),
						 params, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: could not count new rows");
	{
		bool		isnull;

		input_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	if (input_rows == 0 && !history)
		return false;
	cq_worker_report_message(CQ_MSG_PROCESSING);	/* cq.status, when run by a worker */

	if (q->opts.max_rows_per_trigger > 0 && !unlimited)
	{
		int64		hist = 0;
		int64		limited_rows;

		if (history)
		{
			cq_spi_exec(plan->count_history_sql, SPI_OK_SELECT, 0, NULL, NULL, NULL);
			hist = strtoi64(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), NULL, 10);
		}
		cur_text = limit_offset(plan, prev, cur, cur_text, params, types,
								q->opts.max_rows_per_trigger, hist, &limited_rows);
		cur = cq_snap_parse(cur_text);
		params[1] = xid8_datum(cur->xmax);
		params[2] = snapshot_datum(cur_text);
		input_rows = limited_rows;
	}
	res->start_offset = pstrdup(prev_text);
	res->end_offset = pstrdup(cur_text);
	res->latest_offset_ms = ms_since(t0);

	/* fold the new rows into state and target */
	t1 = GetCurrentTimestamp();
	if (SPI_execute_plan(cq_spi_plan(history ? plan->batch_sql_history : plan->batch_sql, 4, types),
						 params, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pg_cq: batch statement failed");
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		res->input_rows = input_rows;
		res->state_updated = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		res->state_total += DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		res->output_rows = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	}

	if (q->opts.mode == CQ_MODE_COMPLETE)
	{
		/* replace the whole result, in this transaction */
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
		if (SPI_execute_plan(cq_spi_plan(plan->complete_sql, 0, NULL), NULL, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "pg_cq: could not reload the target");
		res->output_rows = SPI_processed;
	}
	res->add_batch_ms = ms_since(t1);
	return true;
}

/*
 * cq_batch_run
 *	  Run one batch of query `name` in the current transaction (SPI
 *	  connected).  `unlimited` ignores max_rows_per_trigger.  res->ran is
 *	  false when there was nothing to do; then nothing was written.
 */
void
cq_batch_run(const char *name, bool unlimited, CqBatchResult *res)
{
	TimestampTz t0 = GetCurrentTimestamp();
	CqQuery    *q;
	CqLastOffset last;
	CqAnalysis *an;
	CqPlan	   *plan;
	bool		history;
	const char *prev_text;
	Oid			save_uid;
	int			save_sec;
	int			nest;
	bool		ran;

	memset(res, 0, sizeof(*res));
	res->started_at = t0;

	q = cq_catalog_get_query(name, false, true);
	cq_catalog_last_offset(name, &last);
	history = !last.found && strcmp(q->opts.starting, "earliest") == 0;
	prev_text = last.found ? last.end_offset : q->start_offset;
	res->batch_id = last.found ? last.batch_id + 1 : 0;
	res->state_total = last.state_rows;

	an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	plan = cq_plan_build(an, q);

	cq_as_user(q->owner, &save_uid, &save_sec);
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	ran = run_as_owner(q, plan, prev_text, history, unlimited, res, t0);
	AtEOXact_GUC(false, nest);
	cq_restore_user(save_uid, save_sec);

	if (!ran)
		return;

	res->ran = true;
	res->duration_ms = ms_since(t0);
	res->processed_rows_per_second = res->input_rows / Max(res->duration_ms, 1.0) * 1000.0;
	res->input_rows_per_second = last.last_started_at == 0 ? -1 :
		res->input_rows / Max((double) (t0 - last.last_started_at) / 1000000.0, 0.001);
	cq_catalog_record_batch(q, res);
}
