/*-------------------------------------------------------------------------
 *
 * callrun.c
 *	  The batch loop of CALL cq.run: one code for the caller's own process
 *	  and for a pool worker serving the call (handoff.c).
 *
 * cq_callrun_loop runs batches of one query until its offsets cover the
 * target the caller took (everything committed before the call), or one
 * batch with once; then, for a query with a watermark, the no-data batch
 * that lets the last watermark close windows.  A NOTICE per batch, and
 * "no new data" when none ran.  Non-atomic (SPI connected with
 * SPI_OPT_NONATOMIC): each batch commits on its own (SPI_commit), a
 * failing batch leaves the query 'failed' (runner.c, CQ_RUN_SUBXACT) and
 * its error propagates; atomic (inside a transaction block): the batches
 * share the caller's transaction.
 *
 * Memory: each batch's leftovers are freed before the next one (a
 * context under the caller's, which survives SPI_commit: SPI's procedure
 * context).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "callrun.h"
#include "catalog.h"
#include "offsets.h"
#include "batch.h"
#include "runner.h"
#include "status.h"

/*
 * timestamp_str
 *	  A timestamp (without time zone) in ISO format, as timestamptz_to_str
 *	  shows a timestamptz.
 */
static const char *
timestamp_str(Timestamp t)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char	   *buf = palloc(MAXDATELEN + 1);

	if (TIMESTAMP_NOT_FINITE(t))
		EncodeSpecialTimestamp(t, buf);
	else if (timestamp2tm(t, NULL, &tm, &fsec, NULL, NULL) == 0)
		EncodeDateTime(&tm, fsec, false, 0, NULL, USE_ISO_DATES, buf);
	else
		strlcpy(buf, "(timestamp out of range)", MAXDATELEN + 1);
	return buf;
}

/*
 * report_batch
 *	  The NOTICE cq.run gives per batch.  The watermark of a timestamp
 *	  event-time column is shown as such a value (batches compute it at
 *	  UTC; cq.offsets.watermark_ntz holds it so).
 */
static void
report_batch(const char *name, CqBatchResult *res)
{
	if (res->nodata)
		ereport(NOTICE,
				(errmsg("continuous query \"%s\": batch " INT64_FORMAT ": no new data, watermark %s, %lld output rows",
						name, res->batch_id,
						res->et_utc ? timestamp_str(res->watermark) : timestamptz_to_str(res->watermark),
						(long long) res->output_rows)));
	else
		ereport(NOTICE,
				(errmsg("continuous query \"%s\": batch " INT64_FORMAT ": %lld input rows, %lld output rows",
						name, res->batch_id, (long long) res->input_rows, (long long) res->output_rows)));
}

/* Arguments of run_body. */
typedef struct RunArgs
{
	int32		id;
	int			flags;
	CqBatchResult *res;
} RunArgs;

/* The batch proper, for the runner. */
static void
run_body(void *arg)
{
	RunArgs    *a = (RunArgs *) arg;

	cq_batch_run_ext(a->id, a->flags, a->res);
}

/*
 * run_batch
 *	  One batch for cq.run, through the runner: in non-atomic mode a
 *	  failure is recorded; in atomic mode the error just propagates.  A
 *	  batch that runs makes a 'failed' query 'active' again, in its
 *	  transaction.
 */
static void
run_batch(int32 id, int flags, bool atomic, CqBatchResult *res, bool *was_failed)
{
	RunArgs		a = {id, flags, res};

	(void) cq_runner_run(id, atomic ? CQ_RUN_ATOMIC : CQ_RUN_SUBXACT, run_body, &a);
	if (res->ran && *was_failed)
	{
		cq_catalog_set_state(id, "active", NULL, "failed");
		*was_failed = false;
	}
}

/*
 * batch_done
 *	  A batch of the call ran: commit it (non-atomic), then forget the last
 *	  batch and watermark of the query's status slot, which are the
 *	  scheduler's (from its last reload) or a worker's last batch, both
 *	  older than this one, so that cq.status shows this batch from
 *	  cq.offsets (atomic: once the caller commits; nothing of it should the
 *	  caller roll back).
 */
static void
batch_done(int32 id, bool atomic)
{
	if (!atomic)
		SPI_commit();
	cq_status_forget(id);
}

/*
 * cq_callrun_loop
 *	  The batches of one CALL cq.run (see file header).  The caller has
 *	  checked the name, the isolation level and the caller's rights, and
 *	  connected SPI (non-atomic unless atomic).
 */
void
cq_callrun_loop(const CqCallRun *r, bool atomic)
{
	CqSnap	   *target = cq_snap_parse(r->target);
	bool		was_failed = r->was_failed;
	int			nbatches = 0;
	MemoryContext outer_cxt = CurrentMemoryContext;
	MemoryContext batch_cxt;

	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq batch", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(batch_cxt);
	for (;;)
	{
		CqBatchResult res;
		bool		done;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(batch_cxt);
		run_batch(r->id, r->once ? CQ_BATCH_UNLIMITED : 0, atomic, &res, &was_failed);
		if (!res.ran)
			break;
		nbatches++;
		report_batch(r->name, &res);
		done = r->once ||
			(r->node_target ? cq_nsnap_covers(cq_nsnap_parse(res.node_end_offset), cq_nsnap_parse(r->node_target)) :
			 cq_snap_covers(cq_snap_parse(res.end_offset), target));
		batch_done(r->id, atomic);
		if (done)
		{
			/*
			 * the no-data batch that lets the last watermark close windows
			 * (only queries with a watermark can need one)
			 */
			if (!r->once && r->has_watermark)
			{
				run_batch(r->id, CQ_BATCH_NODATA_ONLY, atomic, &res, &was_failed);
				if (res.ran)
				{
					report_batch(r->name, &res);
					batch_done(r->id, atomic);
				}
			}
			break;
		}
	}
	MemoryContextSwitchTo(outer_cxt);
	MemoryContextDelete(batch_cxt);
	if (nbatches == 0)
		ereport(NOTICE,
				(errmsg("continuous query \"%s\": no new data", r->name)));
}
