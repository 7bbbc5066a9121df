/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  A batch worker of a database's pool: runs the batches its scheduler
 *	  assigns, one transaction each.
 *
 * A dynamic background worker ("pg_cq worker"), started by the scheduler
 * with the index of the worker slot it claimed, connected as the bootstrap
 * superuser (so NOLOGIN owners work: cq_batch_run switches to the query's
 * owner, security-restricted, with a fixed search_path; security.c), its
 * search_path pinned for the whole process so that no database or role
 * default reaches the catalog work it does as superuser.  Loop: wait on
 * the latch; when the slot is busy, run one batch of each query of the
 * assigned group in turn (up to CQ_WORKER_GROUP_MAX, each in its own
 * transaction, so a failing query changes nothing for the others; not
 * those the scheduler took back for an idle worker before they began,
 * begin_next), write
 * each outcome into the slot as it ends, then clear busy and set the
 * scheduler's latch.
 *
 * A batch, in one transaction:
 *	 1. lock the query's catalog row (cq_catalog_get_query_by_id, FOR NO KEY
 *		UPDATE) and skip it if it was paused or dropped meanwhile;
 *	 2. skip cheaply when no transaction finished since the last offset
 *		(no row lock is held longer than needed, no batch is recorded);
 *	 3. cq_batch_run as the owner;
 *	 4. a retried 'failed' query that got through is 'active' again.
 The transaction and the error handling are runner.c's (CQ_RUN_XACT):
 * on error the error is logged with the context "while running batch N of
 * continuous query ...", the transaction is aborted (so the batch changed
 * nothing: target, state and offset stay), and the failure is recorded in a
 * separate transaction: state 'failed', last_error.  The scheduler retries
 * it with backoff; other queries are not affected.  A cancel
 * (pg_cancel_backend) or a complete-mode lock timeout is no failure: the
 * batch is simply run again at the next trigger.  What cq.status shows is
 * written through status.c.
 *
 * Batches run READ COMMITTED, whatever the database's default (see
 * cq_worker_main).
 *
 * Between groups the worker may serve a CALL cq.run handed to it
 * (handoff.c): the caller claimed it while it was idle, and the scheduler
 * assigns it nothing until the call is over.
 *
 * SIGTERM (pg_terminate_backend, DROP DATABASE) exits at once through
 * die(); the open batch rolls back and the scheduler runs it again.
 *
 * Memory: a process-lifetime context for the error copy and names; each
 * batch's allocations live in its transaction's contexts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/resource.h>
#include <time.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/sinval.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "worker.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "catalog.h"
#include "progress.h"
#include "offsets.h"
#include "citus.h"
#include "status.h"
#include "batch.h"
#include "runner.h"
#include "scheduler.h"
#include "handoff.h"
#include "warm.h"
#include "inval.h"

static int	my_slot = -1;
static uint32 my_generation = 0;	/* the claim of the slot we were started for */
static Oid	my_dboid = InvalidOid;
static MemoryContext worker_context = NULL;

/* Most batches in one visit (a group and its reruns, see continue_group). */
#define CQ_WORKER_VISIT_MAX (4 * CQ_WORKER_GROUP_MAX)

/* error context of a batch */
typedef struct BatchContext
{
	const char *name;
	int64		batch_id;
} BatchContext;

/*
 * batch_error_context
 *	  "while running batch N of continuous query "name"".
 */
static void
batch_error_context(void *arg)
{
	BatchContext *c = (BatchContext *) arg;

	errcontext("while running batch " INT64_FORMAT " of continuous query \"%s\"",
			   c->batch_id, c->name);
}

/*
 * worker_exit
 *	  on_shmem_exit: free our pid and latch, wake the scheduler (it frees
 *	  the slot and reruns an interrupted batch); free the slot ourselves if
 *	  the scheduler that claimed it has exited.
 */
static void
worker_exit(int code, Datum arg)
{
	CqDbSlot   *db;
	Latch	   *latch = NULL;
	Latch	   *caller;

	if (cq_shared == NULL || my_slot < 0)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	cq_shared->workers[my_slot].pid = 0;
	cq_shared->workers[my_slot].latch = NULL;
	/* a caller waiting for a call we serve: we are gone (handoff.c) */
	caller = cq_shared->workers[my_slot].call_pid != 0 ?
		cq_shared->workers[my_slot].call_latch : NULL;
	if (cq_shared->workers[my_slot].orphaned)
		cq_shared->workers[my_slot].in_use = false; /* our scheduler is gone */
	db = cq_shmem_find_db(my_dboid);
	if (db)
		latch = db->latch;
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);
	if (caller)
		SetLatch(caller);
}

/*
 * nothing_new
 *	  True when no transaction finished since the query's last offset, so
 *	  a batch cannot have rows.  Never true for batch 0 over history, nor
 *	  for queries with a watermark (a no-data batch may be due).  Sets
 *	  *last to the query's last offset (read after the row lock) and
 *	  *next_batch to the id the next batch will get.
 */
static bool
nothing_new(CqQuery *q, CqLastOffset *last, int64 *next_batch)
{
	const char *prev;

	cq_progress_last_offset(q, last);
	*next_batch = last->found ? last->batch_id + 1 : 0;
	if (q->opts.watermark != NULL)
		return false;
	if (!last->found && cq_query_reads_history(q))
		return false;
	if (cq_citus_per_node_offsets(q->source))
		return false;			/* the batch asks every node (per-node offsets) */
	prev = last->found ? last->end_offset : q->start_offset;
	return cq_snap_nothing_new(cq_snap_parse(prev), cq_snap_parse(cq_snap_current()));
}

/* A batch of the assigned query: what run_batch and its body share. */
typedef struct WorkerBatch
{
	int32		query_id;
	BatchContext bctx;			/* for the error context */
	bool		ran;			/* a batch was recorded */
	bool		more;			/* rows or a no-data batch left */
	int64		rows;			/* the rows it read, when it ran */
	bool		has_watermark;	/* after the batch, when it ran */
	TimestampTz watermark;
	int64		last_batch_id;
} WorkerBatch;

/*
 * batch_body
 *	  The batch proper, in the transaction cq_runner_run opened (see file
 *	  header, steps 1-4).
 */
static void
batch_body(void *arg)
{
	WorkerBatch *wb = (WorkerBatch *) arg;
	CqBatchResult res;
	ErrorContextCallback errcb;
	CqQuery    *q;
	CqLastOffset last;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	cq_batch_before_lock();
	q = cq_catalog_get_query_by_id(wb->query_id, true, true);
	if (q != NULL && strcmp(q->state, "paused") != 0 &&
		!nothing_new(q, &last, &wb->bctx.batch_id))
	{
		/* a snapshot taken after the row lock */
		PopActiveSnapshot();
		PushActiveSnapshot(GetTransactionSnapshot());
		if (q->schema != NULL)
			wb->bctx.name = quote_qualified_identifier(q->schema, q->name);
		errcb.callback = batch_error_context;
		errcb.arg = &wb->bctx;
		errcb.previous = error_context_stack;
		error_context_stack = &errcb;
		cq_batch_run_query(q, &last, 0, &res);
		error_context_stack = errcb.previous;
		wb->ran = res.ran;
		wb->rows = res.ran ? res.input_rows : 0;
		/* rows left behind by a row limit, or windows a new watermark closes */
		wb->more = (res.ran && q->opts.max_rows_per_trigger > 0 &&
					res.input_rows >= q->opts.max_rows_per_trigger) ||
			(res.ran && res.nodata_due_next);
		if (res.ran)
		{
			TimestampTz wm = 0;

			wb->last_batch_id = res.batch_id;
			/* the batch recorded a watermark only when it had one: read it as shown */
			wb->has_watermark = res.has_next_watermark &&
				cq_progress_last_watermark(q, &wm);
			wb->watermark = wm;
		}
	}
	if (q != NULL && strcmp(q->state, "failed") == 0)
		cq_catalog_set_state(wb->query_id, "active", NULL, "failed");
	SPI_finish();
	PopActiveSnapshot();
}

/*
 * cpu_now_us
 *	  CPU time of this process so far, in microseconds.  A batch runs in
 *	  the worker itself (SPI), so the difference around it is the batch's
 *	  cost, without the time the process waited for a core on a busy
 *	  machine (which the trigger '0' hold would multiply).
 */
static int64
cpu_now_us(void)
{
#ifdef CLOCK_PROCESS_CPUTIME_ID
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
#endif
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) != 0)
			return 0;
		return (int64) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	}
}

/*
 * run_batch
 *	  One batch of the assigned query (see file header), through the
 *	  runner: a failure is recorded there, a cancel or lock timeout is not
 *	  one.  Sets the outcome flags.
 */
static void
run_batch(int32 query_id, const char *name, bool *ran, bool *failed, bool *more, int64 *rows)
{
	WorkerBatch wb;

	memset(&wb, 0, sizeof(wb));
	wb.query_id = query_id;
	wb.bctx.name = name;
	wb.bctx.batch_id = 0;
	wb.last_batch_id = -1;
	cq_status_batch_begin(my_dboid, query_id);

	pgstat_report_activity(STATE_RUNNING,
							psprintf("pg_cq: batch of continuous query \"%s\"", name));
	*failed = cq_runner_run(query_id, CQ_RUN_XACT, batch_body, &wb);
	MemoryContextSwitchTo(worker_context);
	*ran = wb.ran;
	*more = wb.more;
	*rows = wb.rows;

	cq_status_batch_end(query_id, wb.ran, wb.last_batch_id, wb.has_watermark, wb.watermark,
						wb.more);
	/* at most once a second between the batches of a group (run_assigned flushes at its end) */
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * claim_slot
 *	  Take the worker slot we were started for, unless it was claimed
 *	  again meanwhile, is stopping, or its database's scheduler is gone or
 *	  blocked.  Sets my_dboid.
 */
static bool
claim_slot(void)
{
	CqDbSlot   *db;
	bool		ok = false;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (my_slot >= 0 && my_slot < cq_shared->nworkers && cq_shared->workers[my_slot].in_use &&
		cq_shared->workers[my_slot].generation == my_generation &&
		cq_shared->workers[my_slot].pid == 0 && !cq_shared->workers[my_slot].stop)
	{
		my_dboid = cq_shared->workers[my_slot].dboid;
		db = cq_shmem_find_db(my_dboid);
		if (db && db->pid != 0 && GetCurrentTimestamp() >= db->blocked_until)
		{
			cq_shared->workers[my_slot].pid = MyProcPid;
			cq_shared->workers[my_slot].latch = MyLatch;
			ok = true;
		}
	}
	LWLockRelease(cq_shared->lock);
	return ok;
}

/*
 * running_elsewhere
 *	  Is query id in the group of another busy worker of our database, its
 *	  batch not done yet?  Caller holds the lock.
 */
static bool
running_elsewhere(int32 id)
{
	for (int i = 0; i < cq_shared->nworkers; i++)
	{
		CqWorkerSlot *w = &cq_shared->workers[i];

		if (i == my_slot || !w->in_use || w->dboid != my_dboid || !w->busy)
			continue;
		for (int j = 0; j < w->nqueries && j < CQ_WORKER_GROUP_MAX; j++)
			if (w->query_ids[j] == id && !w->done[j] && !w->collected[j])
				return true;
	}
	return false;
}

/*
 * batch_over
 *	  The batch of the group's query k is over: until it runs again in this
 *	  visit (continue_group) or the scheduler takes the outcome, cq.status
 *	  shows the query idle, as the scheduler will (is_trigger_active false,
 *	  no worker, the idle message; "Stopped" after a failure), rather than
 *	  as running while the worker holds it (a trigger '0' hold) or runs the
 *	  rest of the group.  Its is_trigger_active stays set for the commit
 *	  wake-ups (wakeup.c: a worker has it).  Caller holds the lock.
 */
static void
batch_over(CqWorkerSlot *slot, int32 id, int k, bool failed)
{
	CqQuerySlot *s = cq_shmem_find_query(my_dboid, id);

	if (s == NULL)
		return;
	s->batch_over = true;
	s->message = failed ? CQ_MSG_STOPPED : slot->idle_msg[k];
}

/*
 * begin_next
 *	  The next batch of the round to run, from group position `from`: the
 *	  first flagged in run[] that the scheduler has not taken back for an
 *	  idle worker meanwhile (scheduler.c, steal: rather than let it wait
 *	  here behind the batches before it) is marked started, so that it can
 *	  no longer be taken; those taken back are unflagged.  Marking it in
 *	  the lock section that records the previous batch costs no extra lock
 *	  per batch.  Its pending is cleared (the batch sees those commits), so
 *	  that the next commit dates how long the query waits again (the
 *	  scheduler's order).  Caller holds the lock.
 */
static void
begin_next(CqWorkerSlot *slot, bool *run, int n, int from)
{
	for (int k = from; k < n; k++)
	{
		if (!run[k])
			continue;
		if (slot->collected[k])
		{
			run[k] = false;
			continue;
		}
		slot->started[k] = true;
		/* its snapshot, taken after this, sees every commit until now */
		{
			CqQuerySlot *qs = cq_shmem_find_query(my_dboid, slot->query_ids[k]);

			if (qs)
				qs->pending = false;
		}
		return;
	}
}

/*
 * continue_group
 *	  After a round of the group's batches: should we run again, without
 *	  going back to the scheduler, the trigger-'0' queries of the group
 *	  that commits made pending meanwhile (an interval query waits for its
 *	  next tick)?  Only when every batch of the round went
 *	  through (a failure's backoff and a row limit's rerun are the
 *	  scheduler's) and no query outside the group waits for a worker
 *	  (pending, and not in another worker's group): then the scheduler
 *	  would only give us the same queries again, two latch round trips
 *	  later.  Under a stream of commits this is how a query's batches
 *	  follow each other.  Those to run are flagged in run[]; they are
 *	  taken (pending cleared, as the scheduler does when it assigns, before
 *	  their batches take their snapshots) and not done again.  A batch the
 *	  scheduler has already collected is not run again (it may have given
 *	  the query to another worker).  A query still in its hold after its
 *	  last batch (cq.coalesce_max_delay, scheduler.c) is not run yet: it
 *	  stays pending, and when no query of the group can run now *wait is
 *	  set to the end of the first hold (0 = none: the visit ends), which
 *	  the caller waits for here rather than going back to the scheduler
 *	  (two latch round trips per batch under a stream).  The scheduler
 *	  sets yield when a due query finds no idle worker: then the visit
 *	  ends after the round (or the wait).
 */
static bool
continue_group(CqWorkerSlot *slot, const int32 *ids, int n, bool *run, TimestampTz *wait)
{
	bool		any = false;
	CqDbSlot   *db;
	CqQuerySlot *qs[CQ_WORKER_GROUP_MAX];
	TimestampTz now;

	*wait = 0;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(my_dboid);
	if (slot->stop || slot->yield || db == NULL || db->pid == 0)
		goto done;
	for (int k = 0; k < n; k++)
		if (!slot->done[k] || slot->failed[k] || slot->more[k])
			goto done;
	for (int i = 0; i < cq_shared->queries_used; i++)
	{
		CqQuerySlot *s = &cq_shared->queries[i];
		bool		mine = false;

		if (!s->in_use || s->dboid != my_dboid || !s->pending)
			continue;
		for (int k = 0; k < n && !mine; k++)
			mine = (ids[k] == s->query_id);
		if (!mine && !running_elsewhere(s->query_id))
			goto done;			/* it waits for a worker: back to the scheduler */
	}
	now = GetCurrentTimestamp();
	for (int k = 0; k < n; k++)
	{
		TimestampTz until;

		qs[k] = cq_shmem_find_query(my_dboid, ids[k]);
		run[k] = qs[k] != NULL && qs[k]->pending && !slot->collected[k] && slot->rerun_ok[k];
		until = cq_coalesce_hold_until(slot->ended[k], slot->cpu_us[k], slot->rows[k]);
		if (run[k] && now < until)
		{
			run[k] = false;
			if (*wait == 0 || until < *wait)
				*wait = until;
		}
		any |= run[k];
	}
	for (int k = 0; k < n && any; k++)
		if (run[k])
		{
			qs[k]->pending = false;
			qs[k]->batch_over = false;
			slot->done[k] = false;
			slot->started[k] = false;
		}
	if (any)
		begin_next(slot, run, n, 0);
done:
	LWLockRelease(cq_shared->lock);
	return any;
}

/*
 * run_assigned
 *	  Run the batches of the group the scheduler assigned, one transaction
 *	  each, in order; write each outcome into the slot as its batch ends
 *	  (the scheduler may take it before the group is over).  Then, while
 *	  continue_group says so, the group's queries that commits made
 *	  pending again (after waiting out a trigger '0' hold here), at most
 *	  CQ_WORKER_VISIT_MAX batches in all; then
 *	  clear busy and wake the scheduler once.  A stop request (our
 *	  scheduler exits) ends the visit early: the batches not run are
 *	  simply not done.
 */
static void
run_assigned(CqWorkerSlot *slot)
{
	int32		ids[CQ_WORKER_GROUP_MAX];
	char		names[CQ_WORKER_GROUP_MAX][NAMEDATALEN];
	bool		run[CQ_WORKER_GROUP_MAX];
	int			n;
	int			total = 0;
	bool		stop = false;
	Latch	   *latch = NULL;
	CqDbSlot   *db;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	n = Min(Max(slot->nqueries, 0), CQ_WORKER_GROUP_MAX);
	memcpy(ids, slot->query_ids, sizeof(int32) * n);
	memcpy(names, slot->query_names, NAMEDATALEN * n);
	for (int k = 0; k < n; k++)
		run[k] = true;
	begin_next(slot, run, n, 0);
	LWLockRelease(cq_shared->lock);

	for (;;)
	{
		bool		again = false;

		/*
		 * The CPU clock is a system call (not the vDSO's): one reading a
		 * batch, the end of one batch being the start of the next of the
		 * round (which so also counts the few stores between them).
		 */
		int64		cpu_start = -1;

		for (int k = 0; k < n && !stop; k++)
		{
			bool		ran,
						failed,
						more;
			int64		cpu0;
			int64		cpu_end;
			int64		rows;

			if (!run[k])
				continue;		/* not to run, or taken back (begin_next) */
			CHECK_FOR_INTERRUPTS();
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			if (cpu_start < 0)
				cpu_start = cpu_now_us();
			run_batch(ids[k], names[k], &ran, &failed, &more, &rows);
			cpu_end = cpu_now_us();
			cpu0 = cpu_end - cpu_start;
			cpu_start = cpu_end;
			MemoryContextReset(worker_context);
			total++;
			LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
			slot->ran[k] = ran;
			slot->failed[k] = failed;
			slot->more[k] = more;
			/* no hold after a batch that found nothing (a poll, an idle tick) */
			slot->ended[k] = ran ? GetCurrentTimestamp() : 0;
			slot->cpu_us[k] = cpu0;
			slot->rows[k] = rows;
			slot->done[k] = true;
			batch_over(slot, ids[k], k, failed);
			begin_next(slot, run, n, k + 1);
			db = cq_shmem_find_db(my_dboid);
			stop = slot->stop || db == NULL || db->pid == 0;
			LWLockRelease(cq_shared->lock);
			QueryCancelPending = false; /* a cancel between batches has nothing to cancel */
		}
		if (stop || total >= CQ_WORKER_VISIT_MAX)
			break;
		/* again at once, or after the hold of a query of the group */
		for (;;)
		{
			TimestampTz wait;
			long		ms;

			if (continue_group(slot, ids, n, run, &wait))
			{
				again = true;
				break;
			}
			if (wait == 0)
				break;
			ms = (long) ((wait - GetCurrentTimestamp()) / 1000) + 1;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 Max(ms, 1), PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			QueryCancelPending = false; /* nothing to cancel between batches */
			CHECK_FOR_INTERRUPTS();
		}
		if (!again)
			break;
	}

	ereport(DEBUG1, (errmsg_internal("pg_cq: worker visit ran %d batches of a group of %d queries",
									 total, n)));
	pgstat_report_stat(true);	/* going idle: what the batches counted */
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	slot->busy = false;
	db = cq_shmem_find_db(my_dboid);
	if (db)
		latch = db->latch;
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * catch_up_invalidations
 *	  Idle, read the invalidation messages other backends sent, when the
 *	  shared queue asks us to (inval.c): else on a busy server the queue
 *	  overran the worker and its next transaction reset all its caches --
 *	  the analyses and SQL its warm-up built (plan.c) with them, which the
 *	  next call then rebuilt (t/074, t/109).
 */
static void
catch_up_invalidations(void)
{
	/* in a transaction of its own, whose commit leaves TopMemoryContext */
	cq_inval_catch_up("worker");
	MemoryContextSwitchTo(worker_context);
}

/*
 * cq_worker_main
 *	  Entry point of a worker; arg is its worker slot.
 */
void
cq_worker_main(Datum arg)
{
	CqDbSlot   *db;

	my_slot = DatumGetInt32(arg);
	memcpy(&my_generation, MyBgworkerEntry->bgw_extra, sizeof(my_generation));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	cq_runner_worker_init();	/* SIGINT, cq.batch_timeout */
	BackgroundWorkerUnblockSignals();

	if (!claim_slot())
		proc_exit(0);
	on_shmem_exit(worker_exit, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(my_dboid, InvalidOid, 0);
	/* before anything runs: no database or role default search_path */
	cq_security_pin_process();

	/*
	 * Batches run READ COMMITTED whatever the database's, the role's or the
	 * server's default: with a transaction snapshot a batch would read the
	 * query's catalog row and offsets as they were before it waited for
	 * the row lock, and fail on (or process again) a batch committed
	 * meanwhile.  Autovacuum does the same.  At session level, so that a
	 * reload of the configuration keeps it.
	 */
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_SESSION);

	/*
	 * And read-write whatever default_transaction_read_only says (a
	 * database set read-only by default for its users): a batch writes its
	 * target, state and offsets, and its failure into cq.queries.  Before
	 * session 42 a query on the shared-memory store ran (its writes from
	 * C), any other failed on its first statement and then again on
	 * recording the failure, at every poll.
	 */
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_SESSION);

	worker_context = AllocSetContextCreate(TopMemoryContext, "pg_cq worker",
										   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(worker_context);

	for (;;)
	{
		CqWorkerSlot *slot = &cq_shared->workers[my_slot];
		bool		stop,
					busy,
					call;
		int32		warm;

		/* a cancel between batches has nothing to cancel (as for an idle session) */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (catchupInterruptPending)
			catch_up_invalidations();

		LWLockAcquire(cq_shared->lock, LW_SHARED);
		db = cq_shmem_find_db(my_dboid);
		stop = slot->stop || db == NULL || db->pid == 0;
		busy = slot->busy;
		call = cq_handoff_pending(my_slot);
		warm = slot->warm_query;
		LWLockRelease(cq_shared->lock);

		if (busy)
		{
			run_assigned(slot);
			continue;
		}
		if (call)
		{
			/* a CALL cq.run handed to us, even when asked to stop after it */
			cq_handoff_serve(my_slot, worker_context);
			MemoryContextReset(worker_context);
			continue;
		}
		if (stop)
			proc_exit(0);
		if (warm != 0)
		{
			/* idle: warm up for the query whose call started us (warm.c) */
			LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
			if (slot->warm_query == warm)
				slot->warm_query = 0;
			LWLockRelease(cq_shared->lock);
			cq_warm_query(warm, my_slot);
			MemoryContextReset(worker_context);
			continue;
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 cq_naptime_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
