/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  Per-database scheduler: decides when each query runs a batch, and
 *	  hands batches to a small pool of workers (cq.max_workers).
 *
 * One dynamic background worker per database ("pg_cq scheduler"),
 * connected as the bootstrap superuser, search_path pinned for the whole
 * process (security.c).  It never runs user SQL itself; it
 * reads cq.queries (on start, when a committing backend bumped the
 * database's catalog generation, and every cq.naptime) and keeps, in
 * process-local memory, one SchedQuery per query:
 *	 - trigger '0': due when a commit to its source marked its shared slot
 *	   pending (wakeup.c), after a batch cut short by max_rows_per_trigger,
 *	   and on every catalog reload (the fallback poll); but after a batch
 *	   that read R rows and took D of the worker's CPU, not before its end +
 *	   min(max(cq.coalesce_factor x D, cq.coalesce_row_us x R),
 *	   cq.coalesce_max_delay) (the hold): under
 *	   a stream of commits batches then grow and their fixed cost is shared
 *	   by more rows, one query takes at most ~1/(factor + 1) of a worker
 *	   until the cap, and a commit after the hold runs at once (a sparse
 *	   stream keeps its latency).  D is CPU time, not wall time: on a busy
 *	   machine a batch's wall time includes waiting for a core, which the
 *	   factor would multiply into the latency.  No hold after a row limit
 *	   (backlog), a failure, a dead worker or a resume; the reload does not
 *	   shorten it.  Workers apply the same rule to the reruns of their
 *	   visit and wait out a hold themselves (worker.c), unless due queries
 *	   wait for a worker (nudge_workers);
 *	 - interval: due at the next multiple of the interval (Unix epoch
 *	   aligned); when a batch overruns the next tick it is due at once,
 *	   missed ticks are not replayed.  A tick is taken only when something
 *	   may be new: a commit to the source marked the query's slot pending
 *	   (as for '0'), a batch was cut short or a watermark must close
 *	   windows, or the periodic reload (the fallback poll) came.  Other
 *	   ticks are skipped without a timer, a worker or a transaction, so an
 *	   idle query costs nothing however short its interval; after idle
 *	   ticks, the first tick after the commit runs;
 *	 - available_now: never;
 *	 - failed: retried after 1, 2, 4, ... 300 s; paused: never.
 * Due queries go to idle workers (worker.c) through their shared worker
 * slots, the longest-waiting first (since the commit that made it pending,
 * its tick, its retry time; among equals the one given to a worker least
 * recently): under a stream of commits, which makes every '0' query over
 * the source due again at once, each query then waits for the others once
 * between two of its batches.  In groups: a worker gets a due query and
 * the next due queries (in that order) over the same source (an even share
 * per worker, at most CQ_WORKER_GROUP_MAX), runs their batches one after
 * the other, one transaction each, writes each outcome into its slot
 * (collected as soon as we look) and sets our latch when the visit is
 * over.  A worker that is idle when no due query is left for it takes the
 * batches of another worker's group that this worker has not begun (steal):
 * a long batch, a lock wait or a worker the machine does not schedule does
 * not keep the rest of its group waiting.  A query is never given to two
 * workers at once (a batch taken back is marked so under the lock, and the
 * worker checks before it begins each one; the catalog row lock
 * serializes it against CALL cq.run anyway).
 *
 * Workers are started on demand, up to cq.max_workers, and stay (also
 * when a CALL cq.run found none idle to hand its batches to, handoff.c); extra
 * ones are stopped when the setting is lowered.  When the scheduler exits
 * it asks its workers to exit too.  When pg_cq is dropped from the
 * database the scheduler marks its slot ABSENT and exits.
 *
 * Memory: SchedQuery array and worker handles in TopMemoryContext; catalog
 * reads in a short transaction whose memory is released at commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "common/int.h"
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

#include "scheduler.h"
#include "timeexpr.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "catalog.h"
#include "inval.h"


#define MAX_BACKOFF_S 300

/* How a query is triggered. */
typedef enum SchedTrigger
{
	TRIG_ZERO,					/* '0': as fast as possible, woken by commits */
	TRIG_INTERVAL,				/* processing-time interval */
	TRIG_NOW					/* available_now: never in the background */
} SchedTrigger;

/* What the scheduler knows about one query. */
typedef struct SchedQuery
{
	int32		id;
	char		name[NAMEDATALEN];
	Oid			source;
	SchedTrigger trigger;
	int64		interval_us;
	char		state;			/* 'a'ctive, 'p'aused, 'f'ailed */
	bool		seen;			/* found by the last reload */
	bool		due;			/* run as soon as a worker is free */
	TimestampTz due_since;		/* due: since then (the commit that made it
								 * pending; the poll; a rerun's end) */
	uint64		assigned_seq;	/* when last given to a worker (dispatch
								 * order; 0 = never) */
	TimestampTz assigned_key;	/* and how long it had waited then (steal) */
	bool		maybe_new;		/* interval: take the next tick (see header) */
	bool		no_wakeup;		/* no status slot: commits cannot mark it */
	TimestampTz next_tick;		/* interval: next tick */
	int			worker;			/* worker slot running it, or -1 */
	int			nfailures;
	TimestampTz retry_at;
	int64		last_batch_id;
	int			slot;			/* its status slot (cq_shared->queries), -1 = none */
	TimestampTz last_end;		/* trigger '0': its last batch ended then (0 = */
	int64		last_cpu_us;	/* no hold) and took this much CPU (the hold) */
	int64		last_rows;		/* and read this many rows (the hold) */
} SchedQuery;

static Oid	my_dboid = InvalidOid;
static SchedQuery *queries = NULL;
static int	nqueries = 0;
static int	maxqueries = 0;
/* a query new since the first reload, run by CALLs: to warm up for (warm_new_query) */
static bool reloaded = false;
static int32 warm_new = 0;
static uint64 assign_counter = 0;	/* assigned_seq of the last assignment */

/* our workers: slot index and handle; -1 = unused */
static int *my_workers = NULL;
static BackgroundWorkerHandle **my_handles = NULL;
static int	max_my_workers = 0;
static TimestampTz worker_start_retry = 0;

/*
 * unix_us
 *	  Microseconds since the Unix epoch (ticks are aligned to it, as in
 *	  Spark).
 */
static int64
unix_us(TimestampTz t)
{
	return t + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

/*
 * next_tick_after
 *	  The first multiple of the interval strictly after t.
 */
static TimestampTz
next_tick_after(TimestampTz t, int64 interval_us)
{
	int64		u = unix_us(t);

	return t + (interval_us - (u % interval_us));
}

/*
 * cq_coalesce_hold_until
 *	  The earliest start of a trigger '0' query's next batch after one that
 *	  ended at `ended`, took cpu_us (the worker's CPU time) and read rows:
 *	  its end plus the larger of cq.coalesce_factor x cpu_us and
 *	  cq.coalesce_row_us x rows, at most cq.coalesce_max_delay (0 when the
 *	  cap or the factor is off, or ended is 0: a batch cut short by a row
 *	  limit, a resumed or new query).  The rows' term lets batches grow
 *	  to the cap under heavy ingest where the factor alone settles on
 *	  small ones: on a busy machine the worker's CPU per row is small
 *	  against the rate rows come in (goal 3: 5-7k-row batches at 200k
 *	  rows/s, whose fixed cost was a large share); at 10,000 single-row
 *	  commits/s it adds ~0.2 ms.  See the file header.  Also the worker's
 *	  rule for running a query again in the same visit.
 */
TimestampTz
cq_coalesce_hold_until(TimestampTz ended, int64 cpu_us, int64 rows)
{
	int64		hold;

	if (ended == 0 || cq_coalesce_max_delay_ms <= 0 || cq_coalesce_factor <= 0)
		return 0;
	hold = Max(Max(cpu_us, 0) * cq_coalesce_factor,
			   Min(Max(rows, 0), (int64) 1000000000) * cq_coalesce_row_us);
	hold = Min((int64) cq_coalesce_max_delay_ms * 1000, hold);
	return ended + hold;
}

/*
 * held
 *	  Is trigger '0' query q still in its hold after its last batch?
 *	  Computed with the settings of now, so that a reload applies at once.
 */
static bool
held(SchedQuery *q, TimestampTz now, TimestampTz *until)
{
	if (q->trigger != TRIG_ZERO)
		return false;
	*until = cq_coalesce_hold_until(q->last_end, q->last_cpu_us, q->last_rows);
	return now < *until;
}

/*
 * idle_message
 *	  What cq.status says of a query between batches.
 */
static CqMessage
idle_message(SchedQuery *q)
{
	if (q->state != 'a' || q->trigger == TRIG_NOW)
		return CQ_MSG_STOPPED;
	return q->trigger == TRIG_ZERO ? CQ_MSG_WAITING_DATA : CQ_MSG_WAITING_TRIGGER;
}

/*
 * scheduler_exit
 *	  on_shmem_exit: release our database slot, tell our workers to go and
 *	  hand their slots back (see CqWorkerSlot), wake the launcher (it
 *	  restarts us if we did not mean to exit).  Whatever made us exit
 *	  (pg_terminate_backend, an error, DROP DATABASE), no worker slot stays
 *	  taken; a crash-restart rebuilds shared memory anyway.
 */
static void
scheduler_exit(int code, Datum arg)
{
	CqDbSlot   *db;
	Latch	   *launcher = NULL;

	if (cq_shared == NULL)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(my_dboid);
	if (db && db->pid == MyProcPid)
	{
		db->pid = 0;
		db->latch = NULL;
	}
	for (int i = 0; i < cq_shared->nworkers; i++)
	{
		CqWorkerSlot *w = &cq_shared->workers[i];

		if (!w->in_use || w->dboid != my_dboid)
			continue;
		if (w->pid == 0)
			w->in_use = false;	/* not running: nobody else would free it */
		else
		{
			/* running: it exits and frees the slot itself */
			w->stop = true;
			w->orphaned = true;
			if (w->latch)
				SetLatch(w->latch);
		}
	}
	for (int i = 0; i < cq_shared->nqueries; i++)
		if (cq_shared->queries[i].in_use && cq_shared->queries[i].dboid == my_dboid)
			cq_shared->queries[i].in_use = false;
	cq_shmem_queries_changed();
	launcher = cq_shared->launcher_latch;
	LWLockRelease(cq_shared->lock);
	if (launcher)
		SetLatch(launcher);
}

/*
 * leave
 *	  Exit on purpose; `absent`: pg_cq is not installed here, do not
 *	  restart us until asked.
 */
static void
leave(bool absent)
{
	CqDbSlot   *db;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(my_dboid);
	if (db && db->pid == MyProcPid)
		db->state = absent ? CQ_DB_ABSENT : CQ_DB_UNKNOWN;
	LWLockRelease(cq_shared->lock);
	proc_exit(0);
}

/*
 * mark_maybe_new
 *	  Something may be new for interval query q: take its next tick.  If
 *	  ticks went by unused while it was idle, that is the first one after
 *	  now, not one in the past.
 */
static void
mark_maybe_new(SchedQuery *q, TimestampTz now)
{
	if (q->trigger != TRIG_INTERVAL)
		return;
	if (!q->maybe_new && q->next_tick != 0 && q->next_tick <= now)
		q->next_tick = next_tick_after(now, q->interval_us);
	q->maybe_new = true;
}

/*
 * make_due
 *	  Query q is due, new rows waiting since `since`: the longest-waiting
 *	  due query is served first (dispatch), so a query already due keeps
 *	  the earlier time.
 */
static void
make_due(SchedQuery *q, TimestampTz since)
{
	if (!q->due || since < q->due_since)
		q->due_since = since;
	q->due = true;
}

/*
 * find_query
 *	  Local entry of a query id, or NULL.
 */
static SchedQuery *
find_query(int32 id)
{
	for (int i = 0; i < nqueries; i++)
		if (queries[i].id == id)
			return &queries[i];
	return NULL;
}

/*
 * query_slot
 *	  The status slot of q, or NULL: the one publish_status gave it (only
 *	  this scheduler claims and frees the slots of its database), checked,
 *	  else looked up.  Spares a search of every slot per query under the
 *	  exclusive lock that committing backends wait for.  Caller holds the
 *	  lock.
 */
static CqQuerySlot *
query_slot(SchedQuery *q)
{
	if (q->slot >= 0 && q->slot < cq_shared->nqueries)
	{
		CqQuerySlot *s = &cq_shared->queries[q->slot];

		if (s->in_use && s->dboid == my_dboid && s->query_id == q->id)
			return s;
	}
	return cq_shmem_find_query(my_dboid, q->id);
}

/*
 * parse_trigger
 *	  Trigger text (normalized by options.c) into kind and interval.
 */
static void
parse_trigger(SchedQuery *q, const char *text)
{
	Interval   *iv;

	if (strcmp(text, "available_now") == 0)
	{
		q->trigger = TRIG_NOW;
		return;
	}
	if (strcmp(text, "0") == 0)
	{
		q->trigger = TRIG_ZERO;
		return;
	}
	iv = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
											   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	/* intervals stored before the limit existed: the longest one, never a wrap */
	if (!cq_interval_usecs(iv, &q->interval_us) || q->interval_us > CQ_TRIGGER_MAX_USECS)
		q->interval_us = CQ_TRIGGER_MAX_USECS;
	q->trigger = q->interval_us > 0 ? TRIG_INTERVAL : TRIG_ZERO;
}

/*
 * query_entry
 *	  The scheduler's entry of query id, added (due at once) when new.
 */
static SchedQuery *
query_entry(int32 id)
{
	SchedQuery *q = find_query(id);

	if (q != NULL)
		return q;
	if (nqueries == maxqueries)
	{
		maxqueries = Max(16, maxqueries * 2);
		queries = queries ?
			repalloc(queries, sizeof(SchedQuery) * maxqueries) :
			MemoryContextAlloc(TopMemoryContext, sizeof(SchedQuery) * maxqueries);
	}
	q = &queries[nqueries++];
	memset(q, 0, sizeof(*q));
	q->id = id;
	q->worker = -1;
	q->slot = -1;
	q->state = 'a';
	q->due = true;
	return q;
}

/*
 * update_query
 *	  Take row r of the SPI result of read_queries into the query's entry.
 */
static void
update_query(uint64 r, TimestampTz now)
{
	HeapTuple	tup = SPI_tuptable->vals[r];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	char	   *state = SPI_getvalue(tup, desc, 4);
	bool		no_batch;
	Datum		last = SPI_getbinval(tup, desc, 6, &no_batch);
	int32		id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	bool		known = find_query(id) != NULL;
	SchedQuery *q = query_entry(id);
	char		old_state;

	q->seen = true;
	strlcpy(q->name, SPI_getvalue(tup, desc, 2), NAMEDATALEN);
	parse_trigger(q, SPI_getvalue(tup, desc, 3));
	q->source = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
	q->last_batch_id = no_batch ? -1 : DatumGetInt64(last);
	old_state = q->state;
	q->state = state[0];
	if (q->state == 'a' && old_state != 'a')
	{
		/* resumed (or recovered): forget the backoff, run now */
		q->nfailures = 0;
		q->retry_at = 0;
		make_due(q, now);
		q->last_end = 0;
	}
	if (q->state == 'f' && q->nfailures == 0)
	{
		/* failed before we knew it (e.g. before a restart) */
		q->nfailures = 1;
		q->retry_at = now + USECS_PER_SEC;
	}
	if (q->trigger == TRIG_ZERO)
		make_due(q, now);
	if (q->trigger == TRIG_INTERVAL && q->next_tick == 0)
		q->next_tick = now;
	mark_maybe_new(q, now);		/* the fallback poll */
	/*
	 * a new query run by CALLs, created with its first batch (CREATE TABLE
	 * ... AS): an idle worker warms up for it (warm_new_query)
	 */
	if (!known && reloaded && q->trigger == TRIG_NOW && q->state == 'a' && q->last_batch_id >= 0)
		warm_new = id;
}

/*
 * warm_new_query
 *	  An idle worker of the pool warms up (warm.c) for query warm_new and
 *	  becomes the one its calls prefer (handoff.c), so that its next call
 *	  does not pay the worker's first batch of the query: a query run only
 *	  by CALL cq.run (available_now) that appeared with its first batch
 *	  done (batch 0 of one made by CREATE TABLE ... AS), or the query of a call
 *	  that found no idle worker and ran in-process (call_worker started a
 *	  worker for it; the caller asks once its batches committed, so that
 *	  the warm-up sees what they made).  No worker is started for it; while
 *	  none is idle (one starting), it waits for the next round.
 */
static void
warm_new_query(void)
{
	Latch	   *latch = NULL;
	bool		any = false;

	if (warm_new == 0)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int k = 0; k < max_my_workers; k++)
	{
		int			w = my_workers[k];
		CqWorkerSlot *slot;

		if (w < 0)
			continue;
		any = true;
		slot = &cq_shared->workers[w];
		if (slot->in_use && slot->pid != 0 && !slot->stop && !slot->busy &&
			slot->query_id == 0 && slot->call_pid == 0 && slot->warm_query == 0)
		{
			slot->warm_query = warm_new;
			slot->call_last_query = warm_new;
			latch = slot->latch;
			break;
		}
	}
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);
	/* none idle: it stays for the next round while a worker may become so (one starting) */
	if (latch || !any)
		warm_new = 0;
}

/*
 * read_queries
 *	  Read cq.queries in a transaction of its own.  Returns false when
 *	  pg_cq is not installed (any more).
 */
static bool
read_queries(TimestampTz now)
{
	bool		installed;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	installed = OidIsValid(get_extension_oid("pg_cq", true));
	if (installed)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		pgstat_report_activity(STATE_RUNNING, "pg_cq scheduler: reading cq.queries");
		/* a query's offsets: same name and, since 0.2, same schema */
		cq_spi_exec(psprintf("SELECT q.id, q.name, q.\"trigger\", q.state, q.source::pg_catalog.oid, "
							 "(SELECT pg_catalog.max(o.batch_id) FROM cq.offsets o "
							 "  WHERE o.name OPERATOR(pg_catalog.=) q.name%s) "
							 "FROM cq.queries q",
							 cq_catalog_version() >= CQ_CATALOG_0_2 ?
							 " AND o.schema OPERATOR(pg_catalog.=) q.schema" : ""),
					SPI_OK_SELECT, 0, NULL, NULL, NULL);
		for (uint64 r = 0; r < SPI_processed; r++)
			update_query(r, now);
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return installed;
}

/*
 * publish_status
 *	  One status slot per query: free the slots of dropped queries, claim
 *	  one for each new query (none when all are taken: then no status and
 *	  no commit wake-ups).
 */
static void
publish_status(void)
{
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < cq_shared->queries_used; i++)
	{
		CqQuerySlot *s = &cq_shared->queries[i];
		SchedQuery *q;

		if (!s->in_use || s->dboid != my_dboid)
			continue;
		q = find_query(s->query_id);
		if (q == NULL || !q->seen)
			s->in_use = false;
	}
	for (int i = 0; i < nqueries; i++)
	{
		SchedQuery *q = &queries[i];
		CqQuerySlot *s = query_slot(q);

		if (s == NULL)
		{
			for (int j = 0; j < cq_shared->nqueries; j++)
				if (!cq_shared->queries[j].in_use)
				{
					s = &cq_shared->queries[j];
					memset(s, 0, sizeof(*s));
					s->in_use = true;
					s->dboid = my_dboid;
					s->query_id = q->id;
					break;
				}
			q->no_wakeup = (s == NULL);
			q->slot = -1;
			if (s == NULL)
				continue;		/* full: no status, no commit wake-ups */
		}
		q->no_wakeup = false;
		q->slot = (int) (s - cq_shared->queries);
		s->source = q->source;
		s->wake_on_commit = (q->trigger != TRIG_NOW);
		if (q->worker < 0)
		{
			s->message = idle_message(q);
			s->is_trigger_active = false;
			s->batch_over = false;
			s->last_batch_id = q->last_batch_id;
		}
	}
	cq_shmem_queries_changed();
	LWLockRelease(cq_shared->lock);
}

/*
 * reload
 *	  Re-read cq.queries; leave if pg_cq is gone.  New queries and resumed
 *	  ones are due at once; '0' queries are all due (the fallback poll).
 */
static void
reload(TimestampTz now)
{
	for (int i = 0; i < nqueries; i++)
		queries[i].seen = false;

	if (!read_queries(now))
		leave(true);

	/* forget dropped queries (a running batch finds the row gone) */
	for (int i = 0; i < nqueries;)
	{
		if (!queries[i].seen && queries[i].worker < 0)
			queries[i] = queries[--nqueries];
		else
			i++;
	}
	publish_status();
}

/*
 * collect_pending
 *	  Take the commit wake-ups: '0' queries are due (when their hold is
 *	  over), interval queries take their next tick.
 */
static void
collect_pending(TimestampTz now)
{
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < nqueries; i++)
	{
		SchedQuery *q = &queries[i];
		CqQuerySlot *s = query_slot(q);
		TimestampTz until;

		/*
		 * A query a worker has is left to it: the worker clears pending as
		 * its batch begins (that batch sees those commits) and takes it
		 * again in its visit, or we collect it once its outcome is in.
		 * Taken as due here, before its batch, it would keep that early
		 * time and be served first again after the batch.
		 */
		if (s && s->pending && q->worker < 0)
		{
			/*
			 * A '0' query in its hold stays pending: the commits until its
			 * batch need not wake us again (assign clears it).
			 */
			if (q->trigger == TRIG_ZERO)
				make_due(q, s->pending_since != 0 ? s->pending_since : now);
			if (!held(q, now, &until))
				s->pending = false;
			mark_maybe_new(q, now);
		}
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * batch_done
 *	  A worker finished (or died running) a batch of query query_id: retry
 *	  it, back off after a failure, or run it again when more is left; note
 *	  when it ended and how long it took (the hold of a trigger '0' query);
 *	  show it idle in cq.status.
 */
static void
batch_done(int32 query_id, bool dead, bool failed, bool more, TimestampTz ended,
		   int64 cpu_us, int64 rows, TimestampTz now)
{
	SchedQuery *q = find_query(query_id);

	if (q == NULL)
		return;
	q->worker = -1;
	/* the hold after a batch; none after a row limit (backlog) or a death */
	q->last_end = (dead || failed || more) ? 0 : ended;
	q->last_cpu_us = cpu_us;
	q->last_rows = rows;
	if (dead)
		make_due(q, now);		/* killed mid-batch: it rolled back, run again */
	else if (failed)
	{
		q->state = 'f';
		q->nfailures++;
		q->retry_at = now + Min((int64) 1 << Min(q->nfailures - 1, 20),
								MAX_BACKOFF_S) * USECS_PER_SEC;
	}
	else
	{
		if (q->state == 'f')
			q->state = 'a';
		q->nfailures = 0;
		if (more)
			make_due(q, now);	/* behind the queries waiting now */
	}
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	{
		CqQuerySlot *s = query_slot(q);

		if (s)
		{
			s->is_trigger_active = false;
			s->batch_over = false;
			s->worker_pid = 0;
			s->message = idle_message(q);
			if (q->state == 'f')
				s->message = CQ_MSG_STOPPED;
		}
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * collect_results
 *	  Batches that finished (also those of a group still running), workers
 *	  that died (the queries of their group not done yet are run again).
 */
static void
collect_results(TimestampTz now)
{
	for (int k = 0; k < max_my_workers; k++)
	{
		int			w = my_workers[k];
		CqWorkerSlot *slot;
		pid_t		pid;
		bool		dead = false;
		int			n = 0;
		int32		ids[CQ_WORKER_GROUP_MAX];
		bool		dead_q[CQ_WORKER_GROUP_MAX];
		bool		failed[CQ_WORKER_GROUP_MAX];
		bool		more[CQ_WORKER_GROUP_MAX];
		TimestampTz ended[CQ_WORKER_GROUP_MAX];
		int64		cpu_us[CQ_WORKER_GROUP_MAX];
		int64		rows[CQ_WORKER_GROUP_MAX];

		if (w < 0)
			continue;
		slot = &cq_shared->workers[w];
		if (my_handles[k] && GetBackgroundWorkerPid(my_handles[k], &pid) == BGWH_STOPPED)
			dead = true;

		LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
		if (slot->query_id != 0)
		{
			for (int j = 0; j < slot->nqueries && j < CQ_WORKER_GROUP_MAX; j++)
			{
				if (slot->collected[j] || (!slot->done[j] && !dead && slot->busy))
					continue;
				/* done, or not run by a group that ended early or a worker that died */
				slot->collected[j] = true;
				ids[n] = slot->query_ids[j];
				dead_q[n] = !slot->done[j];
				failed[n] = slot->done[j] && slot->failed[j];
				more[n] = slot->done[j] && slot->more[j];
				ended[n] = slot->done[j] ? slot->ended[j] : 0;
				cpu_us[n] = slot->cpu_us[j];
				rows[n] = slot->rows[j];
				n++;
			}
			if (dead || !slot->busy)
			{
				slot->query_id = 0;
				slot->nqueries = 0;
			}
		}
		if (dead)
			slot->in_use = false;
		LWLockRelease(cq_shared->lock);

		if (dead)
		{
			my_workers[k] = -1;
			if (my_handles[k])
				pfree(my_handles[k]);
			my_handles[k] = NULL;
		}
		for (int j = 0; j < n; j++)
			batch_done(ids[j], dead_q[j], failed[j], more[j], ended[j], cpu_us[j], rows[j], now);
	}
}

/*
 * start_worker
 *	  Claim a worker slot and start a worker for it.  Returns the slot, or
 *	  -1.
 */
static int
start_worker(int k, TimestampTz now)
{
	BackgroundWorker bw;
	BackgroundWorkerHandle *handle;
	int			w = -1;
	uint32		generation = 0;

	if (now < worker_start_retry)
		return -1;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < cq_shared->nworkers; i++)
		if (!cq_shared->workers[i].in_use)
		{
			CqWorkerSlot *slot = &cq_shared->workers[i];

			generation = slot->generation + 1;
			memset(slot, 0, sizeof(*slot));
			slot->in_use = true;
			slot->generation = generation;
			slot->dboid = my_dboid;
			w = i;
			break;
		}
	LWLockRelease(cq_shared->lock);
	if (w < 0)
		return -1;

	memset(&bw, 0, sizeof(bw));
	bw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bw.bgw_library_name, BGW_MAXLEN, "pg_cq");
	snprintf(bw.bgw_function_name, BGW_MAXLEN, "cq_worker_main");
	snprintf(bw.bgw_name, BGW_MAXLEN, "pg_cq worker %d for database %u", w, my_dboid);
	snprintf(bw.bgw_type, BGW_MAXLEN, "pg_cq worker");
	bw.bgw_main_arg = Int32GetDatum(w);
	memcpy(bw.bgw_extra, &generation, sizeof(generation));
	bw.bgw_notify_pid = MyProcPid;
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		bool		ok = RegisterDynamicBackgroundWorker(&bw, &handle);

		MemoryContextSwitchTo(old);
		if (!ok)
		{
			LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
			cq_shared->workers[w].in_use = false;
			LWLockRelease(cq_shared->lock);
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("pg_cq could not start a worker"),
					 errhint("Raise max_worker_processes or lower cq.max_workers.")));
			worker_start_retry = now + cq_naptime_ms * (int64) 1000;
			return -1;
		}
	}
	my_workers[k] = w;
	my_handles[k] = handle;
	return w;
}

/*
 * idle_worker
 *	  A worker with nothing assigned (started if needed), or -1.
 */
static int
idle_worker(TimestampTz now)
{
	int			free_k = -1;
	int			count = 0;

	for (int k = 0; k < max_my_workers; k++)
	{
		int			w = my_workers[k];

		if (w < 0)
		{
			if (free_k < 0)
				free_k = k;
			continue;
		}
		count++;
		if (cq_shared->workers[w].query_id == 0 && !cq_shared->workers[w].stop &&
			cq_shared->workers[w].call_pid == 0)
			return w;
	}
	if (free_k >= 0 && count < cq_max_workers)
		return start_worker(free_k, now);
	return -1;
}

/*
 * want_query
 *	  Is query q to run now?  Lowers *next to its next timed event (tick,
 *	  retry, end of a hold) when it is not.
 */
static bool
want_query(SchedQuery *q, TimestampTz now, TimestampTz *next)
{
	bool		want;

	if (q->worker >= 0 || !q->seen || q->trigger == TRIG_NOW || q->state == 'p')
		return false;
	if (q->state == 'f')
	{
		want = now >= q->retry_at;
		if (!want && (*next == 0 || q->retry_at < *next))
			*next = q->retry_at;
	}
	else if (q->trigger == TRIG_ZERO)
	{
		TimestampTz until;

		want = q->due;
		if (want && held(q, now, &until))
		{
			want = false;
			if (*next == 0 || until < *next)
				*next = until;
		}
	}
	else
	{
		/* an idle tick is skipped, with no timer (see file header) */
		if (!q->due && !q->maybe_new && !q->no_wakeup)
			return false;
		want = q->due || now >= q->next_tick;
		if (!want && (*next == 0 || q->next_tick < *next))
			*next = q->next_tick;
	}
	return want;
}

/*
 * wait_key
 *	  Since when due query q has waited for a worker: the commit that made a
 *	  '0' query pending (or the poll, or a rerun's end), an interval
 *	  query's tick, a failed query's retry time.
 */
static TimestampTz
wait_key(const SchedQuery *q)
{
	if (q->state == 'f')
		return q->retry_at;
	if (q->trigger == TRIG_INTERVAL && !q->due)
		return q->next_tick;
	return q->due_since;
}

/*
 * wait_cmp
 *	  qsort order of dispatch's wanted queries (indexes into queries[]):
 *	  the longest-waiting first; among equals (one commit made them all
 *	  pending) the one given to a worker least recently.
 */
static int
wait_cmp(const void *a, const void *b)
{
	const SchedQuery *qa = &queries[*(const int *) a];
	const SchedQuery *qb = &queries[*(const int *) b];
	TimestampTz ka = wait_key(qa);
	TimestampTz kb = wait_key(qb);

	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (qa->assigned_seq != qb->assigned_seq)
		return qa->assigned_seq < qb->assigned_seq ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

/*
 * not_begun
 *	  q is in a busy worker's group and that worker has not begun its batch:
 *	  its place in the group (an idle worker may take it, steal), else -1.
 *	  Caller holds the lock.
 */
static int
not_begun(const SchedQuery *q)
{
	CqWorkerSlot *slot;

	if (q->worker < 0)
		return -1;
	slot = &cq_shared->workers[q->worker];
	if (!slot->busy)
		return -1;
	for (int j = 0; j < slot->nqueries && j < CQ_WORKER_GROUP_MAX; j++)
		if (slot->query_ids[j] == q->id)
			return (slot->started[j] || slot->done[j] || slot->collected[j]) ? -1 : j;
	return -1;
}

/*
 * taken_cmp
 *	  qsort order of steal's candidates: wait_cmp's, by how long each had
 *	  waited when its worker got it.
 */
static int
taken_cmp(const void *a, const void *b)
{
	const SchedQuery *qa = &queries[*(const int *) a];
	const SchedQuery *qb = &queries[*(const int *) b];

	if (qa->assigned_key != qb->assigned_key)
		return qa->assigned_key < qb->assigned_key ? -1 : 1;
	if (qa->assigned_seq != qb->assigned_seq)
		return qa->assigned_seq < qb->assigned_seq ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

static bool assign(const int *wanted_group, int n, int w, bool steal, TimestampTz now);

/*
 * steal
 *	  A worker is idle and no due query is left for it, while batches wait
 *	  in the group of a busy worker behind the batch it runs (a long batch,
 *	  a lock wait, a worker the machine does not schedule): give the idle
 *	  worker about half of them, the longest-waiting first, over one
 *	  source.  They are taken back from the busy worker only if it has not
 *	  begun them (assign, under the lock; the worker checks before each
 *	  batch).  Returns true when it gave something.
 */
static bool
steal(TimestampTz now)
{
	int		   *cand = palloc(sizeof(int) * nqueries);
	int			ncand = 0;
	int			group[CQ_WORKER_GROUP_MAX];
	int			n = 0;
	int			w;
	bool		gave = false;

	LWLockAcquire(cq_shared->lock, LW_SHARED);
	for (int i = 0; i < nqueries; i++)
		if (not_begun(&queries[i]) >= 0)
			cand[ncand++] = i;
	LWLockRelease(cq_shared->lock);
	if (ncand > 0 && (w = idle_worker(now)) >= 0)
	{
		int			share = Min(CQ_WORKER_GROUP_MAX, Max(1, ncand / 2));

		if (ncand > 1)
			qsort(cand, ncand, sizeof(int), taken_cmp);
		group[n++] = cand[0];
		for (int b = 1; b < ncand && n < share; b++)
			if (queries[cand[b]].source == queries[cand[0]].source)
				group[n++] = cand[b];
		gave = assign(group, n, w, true, now) && queries[cand[0]].worker == w;
	}
	pfree(cand);
	return gave;
}

/*
 * nudge_workers
 *	  Due queries wait for a worker: ask busy workers to end their visit
 *	  after the current round, and wake those that wait out a trigger '0'
 *	  hold of their group (worker.c, continue_group).
 */
static void
nudge_workers(void)
{
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int k = 0; k < max_my_workers; k++)
	{
		CqWorkerSlot *slot;

		if (my_workers[k] < 0)
			continue;
		slot = &cq_shared->workers[my_workers[k]];
		if (slot->busy && !slot->yield)
		{
			slot->yield = true;
			if (slot->latch)
				SetLatch(slot->latch);
		}
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * assign
 *	  Give the group of n queries (indexes into queries[]) to worker w.
 *	  Returns false when a CALL cq.run claimed the worker meanwhile
 *	  (handoff.c; idle_worker read the slot without the lock).
 */
static bool
assign(const int *wanted_group, int n, int w, bool steal, TimestampTz now)
{
	CqWorkerSlot *slot = &cq_shared->workers[w];
	Latch	   *latch;
	int			group[CQ_WORKER_GROUP_MAX];

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (slot->call_pid != 0)
	{
		LWLockRelease(cq_shared->lock);
		return false;
	}
	if (steal)
	{
		/* take back those their worker has still not begun (worker.c) */
		int			m = 0;

		for (int j = 0; j < n; j++)
		{
			SchedQuery *q = &queries[wanted_group[j]];
			int			k = not_begun(q);

			if (k < 0)
				continue;
			cq_shared->workers[q->worker].collected[k] = true;
			group[m++] = wanted_group[j];
		}
		n = m;
		if (n == 0)
		{
			LWLockRelease(cq_shared->lock);
			return true;
		}
	}
	else
		memcpy(group, wanted_group, sizeof(int) * n);
	slot->query_id = queries[group[0]].id;
	slot->nqueries = n;
	for (int j = 0; j < n; j++)
	{
		SchedQuery *q = &queries[group[j]];
		CqQuerySlot *s = query_slot(q);

		slot->query_ids[j] = q->id;
		strlcpy(slot->query_names[j], q->name, NAMEDATALEN);
		/* an interval query waits for its next tick, a failed one for its backoff */
		slot->rerun_ok[j] = (q->trigger == TRIG_ZERO && q->state == 'a');
		slot->idle_msg[j] = idle_message(q);
		slot->done[j] = slot->collected[j] = slot->started[j] = false;
		slot->ran[j] = slot->failed[j] = slot->more[j] = false;
		slot->ended[j] = 0;
		slot->cpu_us[j] = 0;
		slot->rows[j] = 0;
		if (s)
		{
			s->is_trigger_active = true;
			s->batch_over = false;
			s->worker_pid = slot->pid;
			s->pending = false;
		}
	}
	slot->busy = true;
	slot->yield = false;
	latch = slot->latch;
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);

	for (int j = 0; j < n; j++)
	{
		SchedQuery *q = &queries[group[j]];

		q->worker = w;
		q->assigned_key = wait_key(q);
		q->due = false;
		q->assigned_seq = ++assign_counter;
		q->maybe_new = false;	/* the batch sees every commit until now */
		if (q->trigger == TRIG_INTERVAL)
			q->next_tick = next_tick_after(now, q->interval_us);
	}
	return true;
}

/*
 * dispatch
 *	  Give every due query to a worker while there are workers.  Fair: the
 *	  longest-waiting query first (wait_cmp), so that under load (every
 *	  commit makes every '0' query over the source due again) each query
 *	  waits for the others once between two of its batches, whatever the
 *	  order in which the workers come back: served in turn from a fixed
 *	  list, the boundaries of the groups moved from one round to the next
 *	  and some queries waited for up to 1.7 times the others' batches.  A
 *	  worker gets a group: the due query and the next due queries (in that
 *	  order) over the same source, about an even share of the due queries
 *	  per worker (cq.max_workers) and at most CQ_WORKER_GROUP_MAX, run one
 *	  after the other in one visit.  Returns the time of the next timed
 *	  event (tick, retry), or 0.
 */
static TimestampTz
dispatch(TimestampTz now)
{
	TimestampTz next = 0;
	int		   *wanted;
	int			nwanted = 0;
	int			nworkers = Max(cq_max_workers, 1);
	int			share;
	bool		out = false;	/* no idle worker left */

	if (nqueries == 0)
		return 0;
	wanted = palloc(sizeof(int) * nqueries);
	for (int i = 0; i < nqueries; i++)
		if (want_query(&queries[i], now, &next))
			wanted[nwanted++] = i;
	if (nwanted > 1)
		qsort(wanted, nwanted, sizeof(int), wait_cmp);
	share = Min(CQ_WORKER_GROUP_MAX, Max(1, (nwanted + nworkers - 1) / nworkers));
	for (int a = 0; a < nwanted; a++)
	{
		int			group[CQ_WORKER_GROUP_MAX];
		int			n = 0;
		int			w;
		SchedQuery *q = &queries[wanted[a]];

		if (q->worker >= 0)
			continue;			/* in an earlier group */
		w = idle_worker(now);
		if (w < 0)
		{
			nudge_workers();
			out = true;
			break;				/* a worker's latch will bring us back */
		}
		group[n++] = wanted[a];
		for (int b = a + 1; b < nwanted && n < share; b++)
		{
			SchedQuery *o = &queries[wanted[b]];

			if (o->worker < 0 && o->source == q->source)
				group[n++] = wanted[b];
		}
		if (!assign(group, n, w, false, now))
		{
			out = true;
			break;				/* its call's end wakes us */
		}
	}
	pfree(wanted);
	/* every due query has a worker: batches waiting behind others' next */
	for (int k = 0; k < max_my_workers && !out && steal(now); k++)
		;
	return next;
}

/*
 * call_worker
 *	  A CALL cq.run found no idle worker (handoff.c): have one for the
 *	  next call, started if the pool is not full.  It stays, as workers
 *	  started for due queries do.
 */
static void
call_worker(CqDbSlot *db, TimestampTz now)
{
	bool		wanted;
	int32		warm;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	wanted = db->call_wanted;
	db->call_wanted = false;
	warm = db->call_wanted_query;
	db->call_wanted_query = 0;
	LWLockRelease(cq_shared->lock);
	if (wanted)
		(void) idle_worker(now);
	if (warm != 0)
		warm_new = warm;		/* warm_new_query gives it to the new worker */
}

/*
 * trim_workers
 *	  cq.max_workers was lowered: stop idle workers past it.  A worker busy
 *	  with a batch (or lent to a CALL) is not interrupted; returns true while
 *	  such workers keep the pool above the setting, so that the loop tries
 *	  again once they are idle (else a worker busy at the reload would stay
 *	  until the next one).  at_reload: called for the reload itself, which
 *	  says so at DEBUG1 when busy workers keep the pool above the setting.
 */
static bool
trim_workers(bool at_reload)
{
	int			live = 0;
	bool		over;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int k = 0; k < max_my_workers; k++)
	{
		int			w = my_workers[k];

		if (w >= 0 && !cq_shared->workers[w].stop)
			live++;
	}
	for (int k = 0; k < max_my_workers && live > cq_max_workers; k++)
	{
		int			w = my_workers[k];

		if (w < 0 || cq_shared->workers[w].stop ||
			cq_shared->workers[w].query_id != 0 || cq_shared->workers[w].call_pid != 0)
			continue;
		cq_shared->workers[w].stop = true;
		if (cq_shared->workers[w].latch)
			SetLatch(cq_shared->workers[w].latch);
		live--;
	}
	over = live > cq_max_workers;
	LWLockRelease(cq_shared->lock);
	if (over && at_reload)
		elog(DEBUG1, "pg_cq: %d workers, above cq.max_workers = %d: busy ones stop when idle",
			 live, cq_max_workers);
	return over;
}

/*
 * cq_scheduler_main
 *	  Entry point of a database's scheduler; arg is the database OID.
 */
void
cq_scheduler_main(Datum arg)
{
	CqDbSlot   *db;
	bool		ok = false;
	uint32		seen_gen = 0;
	bool		trim_pending = false;
	TimestampTz next_reload = 0;

	my_dboid = DatumGetObjectId(arg);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* claim the database before connecting, so DROP DATABASE can see us */
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(my_dboid);
	if (db && db->pid == 0 && GetCurrentTimestamp() >= db->blocked_until)
	{
		db->pid = MyProcPid;
		db->latch = MyLatch;
		db->state = CQ_DB_RUNNING;
		seen_gen = db->catalog_gen;
		ok = true;
	}
	LWLockRelease(cq_shared->lock);
	if (!ok)
		proc_exit(0);			/* a duplicate, or the database is being dropped */
	on_shmem_exit(scheduler_exit, (Datum) 0);

	BackgroundWorkerInitializeConnectionByOid(my_dboid, InvalidOid, 0);
	/* before anything runs: no database or role default search_path */
	cq_security_pin_process();
	/* its catalog reads, like the workers' batches, whatever the defaults */
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_SESSION);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_SESSION);

	max_my_workers = 64;
	my_workers = MemoryContextAlloc(TopMemoryContext, sizeof(int) * max_my_workers);
	my_handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(BackgroundWorkerHandle *) * max_my_workers);
	for (int k = 0; k < max_my_workers; k++)
		my_workers[k] = -1;

	for (;;)
	{
		TimestampTz now;
		TimestampTz next;
		uint32		gen;
		long		timeout;

		QueryCancelPending = false; /* it runs no user statement to cancel */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			trim_pending = trim_workers(true);
			/* a shorter cq.naptime applies now, not after the old period */
			if (next_reload > GetCurrentTimestamp() + cq_naptime_ms * (int64) 1000)
				next_reload = GetCurrentTimestamp() + cq_naptime_ms * (int64) 1000;
		}
		if (catchupInterruptPending)
			cq_inval_catch_up("scheduler");

		now = GetCurrentTimestamp();
		LWLockAcquire(cq_shared->lock, LW_SHARED);
		gen = db->catalog_gen;
		LWLockRelease(cq_shared->lock);
		collect_results(now);
		if (trim_pending)		/* before dispatch hands an extra worker work */
			trim_pending = trim_workers(false);
		if (gen != seen_gen || now >= next_reload)
		{
			seen_gen = gen;
			reload(now);
			reloaded = true;
			next_reload = now + cq_naptime_ms * (int64) 1000;
		}
		collect_pending(now);
		next = dispatch(now);
		call_worker(db, now);
		warm_new_query();

		if (next == 0 || next > next_reload)
			next = next_reload;
		timeout = (long) ((next - GetCurrentTimestamp()) / 1000) + 1;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
