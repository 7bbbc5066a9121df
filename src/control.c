/*-------------------------------------------------------------------------
 *
 * control.c
 *	  SQL-callable control of running queries: cq.pause, cq.resume,
 *	  cq.reset, and the shared-memory status behind the cq.status view.
 *
 * pause/resume/reset check that the caller owns the query (or has the
 * privileges of its owner), then lock its catalog row (FOR NO KEY UPDATE,
 * like a batch), so they wait for a running batch and no batch starts
 * until they commit.  The scheduler re-reads the catalog when they commit
 * (wakeup.c).  After the ownership check, catalog changes run as the
 * bootstrap superuser and cq.reset's TRUNCATEs as the query's owner
 * (security.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "security.h"
#include "status.h"
#include "sql_builder.h"
#include "catalog.h"
#include "offsets.h"
#include "batch.h"
#include "api.h"
#include "objects.h"
#include "join.h"
#include "store.h"

PG_FUNCTION_INFO_V1(cq_pause);
PG_FUNCTION_INFO_V1(cq_resume);
PG_FUNCTION_INFO_V1(cq_reset);
PG_FUNCTION_INFO_V1(cq_status_slots);

/*
 * locked_query
 *	  Load a query the caller owns, then lock it; SPI must be connected.
 */
static CqQuery *
locked_query(FunctionCallInfo fcinfo)
{
	CqQuery    *q;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("continuous query name must not be null")));
	/* its caller's name, as nextval() gives its own */
	PreventCommandIfReadOnly(psprintf("cq.%s()", get_func_name(fcinfo->flinfo->fn_oid)));
	q = cq_api_owned_query(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	return q;
}

/*
 * set_state_locked
 *	  Set the state of the query named by the first argument, after
 *	  checking ownership and taking its row lock (so a running batch
 *	  finishes first).
 */
static void
set_state_locked(FunctionCallInfo fcinfo, const char *state)
{
	CqQuery    *q;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	q = locked_query(fcinfo);
	cq_catalog_set_state(q->id, state, NULL, NULL);
	SPI_finish();
}

/*
 * cq_pause
 *	  cq.pause(name): no more batches until cq.resume.
 */
Datum
cq_pause(PG_FUNCTION_ARGS)
{
	set_state_locked(fcinfo, "paused");
	PG_RETURN_VOID();
}

/*
 * cq_resume
 *	  cq.resume(name): a paused or failed query is active again (its error
 *	  is cleared, its retry backoff forgotten) and runs at once.
 */
Datum
cq_resume(PG_FUNCTION_ARGS)
{
	set_state_locked(fcinfo, "active");
	PG_RETURN_VOID();
}

/*
 * cq_reset
 *	  cq.reset(name): forget offsets, progress and state, empty the target,
 *	  start over from the `starting` option with a new run id.  The query
 *	  becomes active, and takes the caller's TimeZone and pinned settings
 *	  (settings_pin.c) as a new query takes its creator's: no value
 *	  computed under the old ones is left (the target is empty), and
 *	  cq.alter_query before the first batch takes the alterer's likewise.  TRUNCATE makes it quick; it takes ACCESS EXCLUSIVE
 *	  locks on the target and state table until commit.
 */
Datum
cq_reset(PG_FUNCTION_ARGS)
{
	CqQuery    *q;
	char	   *start_offset = CQ_EARLIEST_OFFSET;
	CqSecurity	sec;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	q = locked_query(fcinfo);

	/* as the owner of both tables: a TRUNCATE trigger on the target is user code */
	cq_security_owner(q->owner, &sec);
	if (OidIsValid(q->state_table))
		cq_spi_exec(psprintf("TRUNCATE %s", cq_sql_relname_str(q->state_table)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	if (OidIsValid(cq_objects_relid("sd", q->id)))
		cq_spi_exec(psprintf("TRUNCATE %s", cq_objects_name("sd", q->id)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_join_reset(q);			/* a join of two streams: its buffers */
	cq_spi_exec(psprintf("TRUNCATE %s", cq_sql_relname_str(q->target)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	if (strcmp(q->opts.starting, "latest") == 0)
	{
		start_offset = cq_snap_current();
	}
	cq_security_restore(&sec);
	cq_catalog_reset(q, start_offset);
	cq_catalog_capture_settings(q->id);
	cq_store_discard(MyDatabaseId, q->id);	/* an overlay of a batch before it */
	cq_batch_node_start(q->source, q->id, strcmp(q->opts.starting, "latest") == 0);
	cq_status_forget(q->id);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * cq_status_slots
 *	  The status slots of the current database, copied under the lock:
 *	  (query_id, message, is_data_available, is_trigger_active,
 *	  worker_pid, watermark, last_batch_id).  The cq.status view joins
 *	  them to cq.queries.  Only the queries the caller can see in
 *	  cq.queries (row-level security, pg_cq 0.2) are shown: a watermark
 *	  tells something about the data.
 */
Datum
cq_status_slots(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CqQuerySlot *copy;
	int			n = 0;
	int32	   *visible;
	uint64		nvisible;

	InitMaterializedSRF(fcinfo, 0);
	if (cq_shared == NULL)
		PG_RETURN_VOID();

	copy = palloc(sizeof(CqQuerySlot) * cq_shared->nqueries);
	LWLockAcquire(cq_shared->lock, LW_SHARED);
	for (int i = 0; i < cq_shared->queries_used; i++)
		if (cq_shared->queries[i].in_use && cq_shared->queries[i].dboid == MyDatabaseId)
			copy[n++] = cq_shared->queries[i];
	LWLockRelease(cq_shared->lock);

	/* the ids of the queries the caller may see, read with its rights */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_spi_exec("SELECT id FROM cq.queries", SPI_OK_SELECT, 0, NULL, NULL, NULL);
	nvisible = SPI_processed;
	visible = SPI_palloc(sizeof(int32) * (nvisible + 1));
	for (uint64 r = 0; r < nvisible; r++)
	{
		bool		isnull;

		visible[r] = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
												 1, &isnull));
	}
	SPI_finish();

	for (int i = 0; i < n; i++)
	{
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};
		bool		shown = false;

		for (uint64 r = 0; r < nvisible && !shown; r++)
			shown = visible[r] == copy[i].query_id;
		if (!shown)
			continue;

		values[0] = Int32GetDatum(copy[i].query_id);
		values[1] = CStringGetTextDatum(cq_shmem_message_text(copy[i].message));
		values[2] = BoolGetDatum(copy[i].is_data_available);
		/* a batch runs or waits its turn; not once it is over (worker.c, batch_over) */
		values[3] = BoolGetDatum(copy[i].is_trigger_active && !copy[i].batch_over);
		values[4] = Int32GetDatum(copy[i].worker_pid);
		nulls[4] = copy[i].worker_pid == 0 || copy[i].batch_over;
		values[5] = TimestampTzGetDatum(copy[i].watermark);
		nulls[5] = !copy[i].has_watermark;
		values[6] = Int64GetDatum(copy[i].last_batch_id);
		nulls[6] = copy[i].last_batch_id < 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
