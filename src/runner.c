/*-------------------------------------------------------------------------
 *
 * runner.c
 *	  Running one batch and recording its failure: the one place workers
 *	  and CALL cq.run share.
 *
 * SPEC §7: a query whose batch fails goes 'failed' with the error in
 * last_error; the batch changed nothing (target, state, offset and progress
 * stay as they were).  One rule decides what a failure is
 * (cq_runner_is_failure): a cancel (pg_cancel_backend, statement_timeout)
 * or a lock timeout (a complete-mode batch that could not lock its target
 * in time) says nothing about the query, so the batch is only rolled back
 * and the next trigger, poll or call retries it.
 *
 * Three ways to run, by who owns the transaction:
 *	 CQ_RUN_XACT	a worker: the batch runs in a transaction of its own; on
 *					error the error is logged, the transaction aborted and
 *					the failure recorded in another transaction (status.c);
 *					the error is not re-thrown.
 *	 CQ_RUN_SUBXACT	non-atomic CALL cq.run (SPI connected with
 *					SPI_OPT_NONATOMIC): the batch runs in an internal
 *					subtransaction; on error it is rolled back, the failure
 *					written and committed (SPI_commit), and the error
 *					re-thrown to the caller.  A subtransaction, not
 *					SPI_rollback, because the error may come from inside
 *					nested SPI levels (a PL/pgSQL function called by the
 *					query): rolling back the subtransaction pops them.
 *	 CQ_RUN_ATOMIC	CALL inside a transaction block, or cq.run called from a
 *					function: nothing can be committed separately, the error
 *					just propagates and the caller's transaction rolls back.
 *
 * In a pg_cq worker (a scheduled batch, or a CALL cq.run handed to one) a
 * batch runs at most cq.batch_timeout: then it is canceled, and unlike
 * other cancels that is a failure (the query goes 'failed', the worker's
 * backoff applies), so that one query cannot keep a worker of the shared
 * pool busy (batch_timeout_*).  A timer that fires after the batch's last
 * interrupt check leaves its cancel pending once the batch succeeded:
 * that cancel is dropped before the commit, as postgres.c drops a cancel
 * that arrives when no statement runs, or it would cancel whatever the
 * worker does next (the next batch of a handed-off CALL, whose caller
 * would get "canceling statement due to user request").  A cancel of a
 * user (SIGINT: pg_cancel_backend, the caller of a handed-off CALL) is
 * told apart by the worker's own SIGINT handler and stays pending.
 *
 * Memory: the batch runs in the caller's memory context, which the caller
 * resets per batch (the worker's loop context, cq.run's batch context); the
 * error copy lives there too, and CurrentMemoryContext is that context
 * again on return.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <malloc.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/timeout.h"

#include "runner.h"
#include "guc.h"
#include "catalog.h"
#include "status.h"

/*
 * cq_runner_is_failure
 *	  The one rule: does this error make the query 'failed'?  Not a cancel,
 *	  not a lock timeout.
 */
bool
cq_runner_is_failure(ErrorData *edata)
{
	return edata->sqlerrcode != ERRCODE_QUERY_CANCELED &&
		edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE;
}

/* the timeout of a worker's batch (cq.batch_timeout), registered once */
static TimeoutId batch_timeout_id = MAX_TIMEOUTS;
static volatile sig_atomic_t batch_timed_out = false;

/* set by cq_runner_worker_init: this process is a worker of the pool */
static bool in_pool_worker = false;

/* a SIGINT (a user's cancel) arrived since the batch began */
static volatile sig_atomic_t batch_user_cancel = false;

/*
 * runner_cancel_handler
 *	  SIGINT of a pool worker: a user's cancel, as StatementCancelHandler
 *	  handles it, remembered so that batch_timeout_disarm keeps it.
 */
static void
runner_cancel_handler(SIGNAL_ARGS)
{
	batch_user_cancel = true;
	StatementCancelHandler(postgres_signal_arg);
}

/*
 * cq_runner_worker_init
 *	  In a pool worker (worker.c), before it unblocks signals: batches get
 *	  cq.batch_timeout, and SIGINT goes through runner_cancel_handler.
 *	  Only there: a CALL in another background worker (pg_cron's) runs in
 *	  the caller's own process, bounded by statement_timeout.
 */
void
cq_runner_worker_init(void)
{
	in_pool_worker = true;
	pqsignal(SIGINT, runner_cancel_handler);
}

/*
 * batch_timeout_handler
 *	  cq.batch_timeout elapsed: cancel the batch as a statement cancel does.
 */
static void
batch_timeout_handler(void)
{
	batch_timed_out = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/*
 * batch_timeout_begin
 *	  Arm cq.batch_timeout for a batch of a pg_cq worker; false (nothing
 *	  armed) elsewhere or when it is 0.
 */
static bool
batch_timeout_begin(void)
{
	batch_timed_out = false;
	batch_user_cancel = false;
	if (cq_batch_timeout_ms <= 0 || !in_pool_worker)
		return false;
	if (batch_timeout_id == MAX_TIMEOUTS)
		batch_timeout_id = RegisterTimeout(USER_TIMEOUT, batch_timeout_handler);
	enable_timeout_after(batch_timeout_id, cq_batch_timeout_ms);
	return true;
}

/*
 * batch_timeout_end
 *	  Disarm it; true if it fired during the batch.
 */
static bool
batch_timeout_end(bool armed)
{
	if (!armed)
		return false;
	disable_timeout(batch_timeout_id, false);
	return batch_timed_out;
}

/*
 * batch_timeout_disarm
 *	  The batch succeeded (before its commit): disarm the timer, and if it
 *	  fired after the batch's last interrupt check, drop the cancel it made
 *	  (see file header), unless a user's cancel came too.  Cleared first,
 *	  then the user's flag read: a SIGINT at any point leaves its cancel
 *	  pending.
 */
static void
batch_timeout_disarm(bool armed)
{
	if (!batch_timeout_end(armed))
		return;
	QueryCancelPending = false;
	if (batch_user_cancel)
	{
		QueryCancelPending = true;
		InterruptPending = true;
	}
	batch_timed_out = false;
}

/*
 * debug_batch_end_delay
 *	  cq.debug_batch_end_delay (tests only): wait that long after the batch
 *	  and before its commit, with no interrupt check, so that a test can
 *	  have cq.batch_timeout fire in the window batch_timeout_disarm closes.
 *	  Signals do not shorten it.
 */
static void
debug_batch_end_delay(void)
{
	TimestampTz until;

	if (cq_debug_batch_end_delay_ms <= 0)
		return;
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), cq_debug_batch_end_delay_ms);
	while (GetCurrentTimestamp() < until)
		pg_usleep(10000L);
}

/*
 * batch_timeout_error
 *	  The error a batch canceled by cq.batch_timeout reports (to last_error,
 *	  and to the caller of a CALL handed to the worker) instead of the
 *	  cancel's "canceling statement due to user request".
 */
static void
batch_timeout_error(ErrorData *edata)
{
	edata->sqlerrcode = ERRCODE_QUERY_CANCELED;
	edata->message = psprintf("canceling the batch: it ran longer than cq.batch_timeout (%d ms)",
							  cq_batch_timeout_ms);
	edata->detail = pstrdup("The batch was rolled back; the query is failed and its batches are retried with backoff.");
	edata->hint = pstrdup("Make the query cheaper (a filter, max_rows_per_trigger), or ask a superuser to raise cq.batch_timeout.");
}

/*
 * end_transaction
 *	  Close the batch's (sub)transaction, committed or rolled back, and
 *	  return to the caller's memory context and resource owner.
 */
static void
end_transaction(CqRunMode mode, bool commit, MemoryContext cxt, ResourceOwner owner)
{
	if (mode == CQ_RUN_XACT)
	{
		if (commit)
			CommitTransactionCommand();
		else
			AbortCurrentTransaction();
	}
	else if (commit)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	if (mode == CQ_RUN_SUBXACT)
		CurrentResourceOwner = owner;
}

/*
 * keep_batch_memory
 *	  Once per process that runs batches: let malloc keep the memory a batch
 *	  frees for the next statement and the next batch.  By default glibc
 *	  serves blocks over 128 kB (a HashAggregate's bucket array sized from
 *	  the planner's estimate, which grows with the source: 384 kB at 10M
 *	  rows) with mmap, unmaps them when freed and trims the heap's free top,
 *	  so every batch touches fresh pages again: about a hundred page faults
 *	  per batch even with nothing new, each tens of microseconds on a
 *	  virtual machine that shadows page tables.  Blocks up to 16 MB now
 *	  come from the heap, and up to 16 MB of free heap top is kept.
 */
static void
keep_batch_memory(void)
{
	static bool done = false;

	if (done)
		return;
	done = true;
	(void) mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
	(void) mallopt(M_TRIM_THRESHOLD, 16 * 1024 * 1024);
}

/*
 * cq_runner_run
 *	  Run body(arg), one batch of query id, the way mode says (see file
 *	  header).  Returns true when the batch failed by the rule above (with
 *	  CQ_RUN_XACT only: the other modes re-throw every error).  With
 *	  CQ_RUN_XACT the caller has no transaction open; body runs in a new one
 *	  that the runner commits.
 */
bool
cq_runner_run(int32 id, CqRunMode mode, CqRunBody body, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool failed = false;
	volatile bool timeout_armed;

	keep_batch_memory();
	if (mode == CQ_RUN_ATOMIC)
	{
		body(arg);
		return false;
	}
	if (mode == CQ_RUN_XACT)
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
	}
	else
	{
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
	}
	timeout_armed = batch_timeout_begin();
	PG_TRY();
	{
		body(arg);
		debug_batch_end_delay();
		batch_timeout_disarm(timeout_armed);
		end_transaction(mode, true, cxt, owner);
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		timed_out;

		/* PG_CATCH has restored error_context_stack to the caller's */
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		timed_out = batch_timeout_end(timeout_armed) && edata->sqlerrcode == ERRCODE_QUERY_CANCELED;
		if (mode == CQ_RUN_XACT && !timed_out)
			EmitErrorReport();
		FlushErrorState();
		if (timed_out)
		{
			batch_timeout_error(edata);
			if (mode == CQ_RUN_XACT)
			{
				/* logged as the worker logs a batch's error */
				edata->elevel = LOG;
				ThrowErrorData(edata);
				edata->elevel = ERROR;
			}
		}
		end_transaction(mode, false, cxt, owner);
		failed = timed_out || cq_runner_is_failure(edata);
		if (mode == CQ_RUN_XACT)
		{
			if (failed)
				cq_status_record_failure(id, edata->message);
			FreeErrorData(edata);
		}
		else
		{
			/* the catalog row may be gone (dropped meanwhile): then nothing is updated */
			if (failed)
			{
				cq_catalog_set_state(id, "failed", edata->message, NULL);
				SPI_commit();
			}
			ReThrowError(edata);
		}
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return failed;
}
