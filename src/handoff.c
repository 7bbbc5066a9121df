/*-------------------------------------------------------------------------
 *
 * handoff.c
 *	  CALL cq.run hands its batches to an idle worker of the database's
 *	  pool and waits for it (issue 12 goal 4).
 *
 * A new backend pays for warming up a process (relation and catalog
 * caches, plans, first touches of its pages: bench/README.md, "Cold first
 * batch"); a pool worker has done that already.  So a non-atomic CALL
 * cq.run (pg_cron runs one in a new backend each time) that finds an idle
 * worker of its database runs its batches there:
 *
 * Caller (cq_handoff_run, from cq_run after the isolation check, the
 * target snapshot and, by name (below), the schemas the name may be in;
 * or after the name and owner checks):
 *	 1. claims an idle worker under the shared lock (CqWorkerSlot.call_pid):
 *		running, not stopping, no group assigned (the scheduler assigns
 *		only workers without a call, under the same lock).  None idle, or
 *		no scheduler: returns false, the caller runs the batches itself,
 *		and the scheduler is asked (call_wanted) to start a worker for the
 *		next call if the pool is not full.  With no scheduler running (a
 *		new database whose only queries are called, or one restarting)
 *		the wish is left in the database's slot and the launcher asked for
 *		the scheduler, which starts the worker when it comes up; otherwise
 *		no worker would ever start for calls alone.  Once those batches
 *		committed, the caller asks for an idle worker to warm up for the
 *		query (cq_handoff_ran_here, warm.c), which the next call then
 *		prefers.  It never waits for a
 *		worker;
 *	 2. puts the request in a new DSM segment (query id or, by name, the
 *		name's schemas and the caller's user; name as written, once, the
 *		target snapshot, the caller's settings, see below) with a
 *		shm_mq for the worker's messages, and sets the worker's latch;
 *	 3. waits, relaying every NOTICE (and WARNING ...) the worker sends as
 *		it comes and keeping its error.  The caller's transaction wrote
 *		nothing (no transaction id; not in a subtransaction): one that
 *		wrote (an enclosing procedure's or DO block's work) runs the
 *		batches itself, since the worker could neither see what it wrote
 *		nor get the locks it holds.  It commits first, as the in-process
 *		path does after a batch, so its snapshot does not hold back
 *		vacuum's horizon for a long call;
 *	 4. when the worker is done (it cleared call_pid): re-throws the
 *		worker's error, if any (same SQLSTATE, message, detail, hint,
 *		context), or returns.
 * A cancel, statement_timeout or lock of the caller ends its wait with an
 * error, which is caught: the worker is cancelled (SIGINT, only while it
 * still serves this call), the caller waits, interrupts held, until it is
 * done (its batch rolled back), then re-throws its own error.  A caller
 * that exits (pg_terminate_backend, its client gone: the wait polls the
 * socket) cancels the worker from before_shmem_exit.  A worker that dies
 * before it started is no harm (the caller runs the batches itself);
 * after, the caller gets ERRCODE_CONNECTION_FAILURE: the batches that
 * committed stay, the one running rolled back (the offsets decide, no row
 * is counted twice).
 *
 * Worker (cq_handoff_serve, from worker.c's loop): attaches, redirects its
 * client messages into the queue (pq_redirect_to_shm_mq, as parallel
 * workers do), applies the caller's settings, runs cq_callrun_loop non-
 * atomically in its own transactions -- the same loop as in the caller --
 * sends its error if any, then restores its settings and message
 * channel and frees the call.  pg_stat_activity shows it as "pg_cq: CALL
 * cq.run(...) for PID n".
 *
 * By name: a caller that has not read the query yet (cq_run, the usual
 * case; not with Citus installed, see cq_run) sends the name without its schema, the schemas to look in (its
 * search_path and rights decided them: catalog_name.c) and its user; the
 * worker reads the query there and checks that user's ownership, as the
 * caller would (the same errors), in the call's first transaction, then
 * takes the query's state, watermark and per-node goal as the caller
 * would have.  The claim prefers the worker whose last call or warm-up
 * was of a query of that name (call_last_key).
 *
 * Settings: every setting of the caller that a user may change (USERSET,
 * SUSET) and that comes from its role, its client connection or SET in
 * the session is applied in the worker for the call (session level) and
 * RESET after it: cq.work_mem, work_mem, TimeZone, DateStyle (the
 * NOTICEs' watermark), lock_timeout, cq.complete_lock_timeout ... all
 * follow the caller (a batch then sets its query's TimeZone, DateStyle,
 * IntervalStyle... over them, as in the caller: settings_pin.c).  Not passed: role and session_authorization (the
 * caller's rights were checked; the batch runs as the owner in both
 * paths), search_path (a batch pins its own), a default_tablespace the
 * caller may not create in (security.c), client_encoding (the worker
 * sends in the database's, the caller converts), application_name, the
 * transaction's isolation and default_transaction_isolation (batches are
 * READ COMMITTED in both).  statement_timeout runs in the caller (it
 * covers the whole CALL, as in-process).  Each setting is applied with the
 * context and role that set it in the caller (GucContext scontext, srole),
 * never as the worker's superuser: a placeholder that a plain role set for
 * a library the caller has not loaded (plpgsql.variable_conflict, an
 * extension's PGC_SUSET parameter) is refused with a WARNING in a worker
 * that has the library, or once the call loads it, as the caller's own
 * session would refuse it then.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "libpq/libpq.h"
#include "libpq/libpq-be.h"
#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "handoff.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "callrun.h"
#include "catalog_name.h"
#include "batch.h"

#define HANDOFF_MAGIC	0x63716866
#define HANDOFF_QUEUE_SIZE	16384

/* The request, at the start of the call's DSM segment. */
typedef struct HandoffHeader
{
	uint32		magic;
	int32		id;
	bool		once;
	bool		has_watermark;
	bool		was_failed;
	bool		has_node_target;
	bool		by_name;		/* the worker finds the query: see file header */
	Oid			caller;			/* by name: the user asking */
	int			npath;			/* by name: schemas to look in */
	pid_t		caller_pid;
	/* written by the worker */
	bool		started;		/* attached: it runs the batches now */
	bool		finished;		/* the loop ended (its error, if any, was sent) */
	/* offsets in the segment */
	Size		name_off;
	Size		target_off;
	Size		node_target_off;
	Size		settings_off;	/* name\0value\0how\0 ... \0 */
	Size		objname_off;	/* by name: the name without schema, as shown, */
	Size		shown_off;
	Size		path_off;		/* and the schemas (Oid[npath]) */
	Size		queue_off;
} HandoffHeader;

/* The call this backend is waiting for (the exit callback cancels it). */
typedef struct HandoffCall
{
	int			slot;
	uint32		generation;
	pid_t		worker_pid;
	dsm_handle	handle;
} HandoffCall;

static HandoffCall current = {-1, 0, 0, 0};
static bool exit_registered = false;

/*
 * the query of our last call that found no idle worker (cq_handoff_ran_here);
 * -1: a call by name
 */
static int32 unserved_query = 0;

/* Settings never passed (see file header). */
static const char *const unpassed[] = {
	"role", "session_authorization", "client_encoding", "application_name",
	"transaction_isolation", "transaction_read_only", "transaction_deferrable",
	"default_transaction_isolation", "cq.run_in_worker", "cq.batch_metrics", NULL
};

/*
 * passed_setting
 *	  Does the caller's value of g go to the worker?
 */
static bool
passed_setting(struct config_generic *g)
{
	if (g->context != PGC_USERSET && g->context != PGC_SUSET)
		return false;
	/* the config file, the server's command line and database defaults: the worker has them too */
	if (g->source < PGC_S_USER || g->source == PGC_S_OVERRIDE || g->source == PGC_S_TEST)
		return false;
	for (int i = 0; unpassed[i] != NULL; i++)
		if (pg_strcasecmp(g->name, unpassed[i]) == 0)
			return false;
	return true;
}

/*
 * serialize_settings
 *	  The caller's settings that go to the worker, as name\0value\0how\0
 *	  triples ending with \0; "how" is "scontext srole placeholder": the
 *	  GucContext and role that set the value here, and whether it is a
 *	  placeholder of a library this session has not loaded (apply_settings).
 */
static void
serialize_settings(StringInfo buf)
{
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();

	for (int i = 0; i < n; i++)
	{
		const char *value;

		if (!passed_setting(vars[i]))
			continue;
		value = GetConfigOption(vars[i]->name, true, false);
		/* search_path, a default_tablespace the caller may not use (security.c) */
		if (!cq_security_passes_setting(vars[i]->name, value))
			continue;
		appendStringInfoString(buf, vars[i]->name);
		appendStringInfoChar(buf, '\0');
		appendStringInfoString(buf, value ? value : "");
		appendStringInfoChar(buf, '\0');
		appendStringInfo(buf, "%d %u %d", (int) vars[i]->scontext, vars[i]->srole,
						 (vars[i]->flags & GUC_CUSTOM_PLACEHOLDER) != 0);
		appendStringInfoChar(buf, '\0');
	}
	appendStringInfoChar(buf, '\0');
}

/*
 * serving
 *	  Is the worker we claimed still on our call?  Caller holds the lock.
 */
static bool
serving(const HandoffCall *c)
{
	CqWorkerSlot *w = &cq_shared->workers[c->slot];

	return w->in_use && w->generation == c->generation && w->pid == c->worker_pid &&
		w->call_pid == MyProcPid && w->call_dsm == c->handle;
}

/*
 * cancel_worker
 *	  Cancel the batch the worker runs for our call (SIGINT, as
 *	  pg_cancel_backend), unless it is done with the call.
 */
static void
cancel_worker(const HandoffCall *c)
{
	LWLockAcquire(cq_shared->lock, LW_SHARED);
	if (serving(c))
		(void) kill(c->worker_pid, SIGINT);
	LWLockRelease(cq_shared->lock);
}

/*
 * release_claim
 *	  Give back a claim we made (nothing was posted, or the call is
 *	  abandoned), if it is still ours.
 */
static void
release_claim(const HandoffCall *c)
{
	CqWorkerSlot *w = &cq_shared->workers[c->slot];

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (w->in_use && w->generation == c->generation && w->call_pid == MyProcPid &&
		w->call_dsm == c->handle)
	{
		w->call_pid = 0;
		w->call_latch = NULL;
		w->call_dsm = DSM_HANDLE_INVALID;
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * handoff_exit
 *	  before_shmem_exit: a caller that exits mid-call (terminated, client
 *	  gone) cancels the worker's batch.
 */
static void
handoff_exit(int code, Datum arg)
{
	if (current.slot >= 0 && cq_shared != NULL)
		cancel_worker(&current);
	current.slot = -1;
}

/*
 * claim_worker
 *	  Claim an idle worker of our database for query id, or for a call by
 *	  name (id 0) of a query whose name has key (see file header, step 1):
 *	  the one that served or warmed up for this query last if it is idle,
 *	  else the first idle one.  When none is idle, ask the scheduler for one, and
 *	  the launcher for the scheduler when it does not run.
 */
static bool
claim_worker(int32 id, uint32 key, HandoffCall *c)
{
	CqDbSlot   *db;
	int			found = -1;
	Latch	   *wake = NULL;
	bool		want_scheduler = false;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(MyDatabaseId);
	if (db != NULL && db->pid != 0 && db->state == CQ_DB_RUNNING)
	{
		for (int i = 0; i < cq_shared->nworkers; i++)
		{
			CqWorkerSlot *w = &cq_shared->workers[i];
			bool		last;

			if (!w->in_use || w->dboid != MyDatabaseId || w->pid == 0 || w->latch == NULL ||
				w->stop || w->orphaned || w->busy || w->query_id != 0 || w->call_pid != 0)
				continue;
			/* its last call or warm-up: of this query (a call by name: of this name) */
			last = id != 0 ? w->call_last_query == id : w->call_last_key == key;
			if (found < 0 || last)
				found = i;
			if (last)
				break;
		}
		if (found >= 0)
		{
			CqWorkerSlot *w = &cq_shared->workers[found];

			w->call_pid = MyProcPid;
			w->call_latch = MyLatch;
			w->call_dsm = DSM_HANDLE_INVALID;
			if (id != 0)
				w->call_last_query = id;
			c->slot = found;
			c->generation = w->generation;
			c->worker_pid = w->pid;
			c->handle = DSM_HANDLE_INVALID;
		}
		else
		{
			unserved_query = id != 0 ? id : -1;
			if (!db->call_wanted)
			{
				db->call_wanted = true;
				wake = db->latch;
			}
		}
	}
	else
	{
		/*
		 * The scheduler, once up, starts the worker (scheduler.c,
		 * call_worker).  The slot is created if missing; one the launcher
		 * found without pg_cq (ABSENT, which it would free, and the wish
		 * with it) is to be probed again, as the request below says too.
		 */
		db = cq_shmem_get_db(MyDatabaseId);
		if (db != NULL)
		{
			db->call_wanted = true;
			if (db->state == CQ_DB_ABSENT && db->pid == 0)
				db->state = CQ_DB_UNKNOWN;
		}
		unserved_query = id != 0 ? id : -1;
		want_scheduler = true;
	}
	LWLockRelease(cq_shared->lock);
	if (wake)
		SetLatch(wake);
	if (want_scheduler)
		cq_shmem_request_scheduler(MyDatabaseId);
	return found >= 0;
}

/*
 * post_request
 *	  The call's segment: header, strings, settings (serialize_settings,
 *	  made before: this runs without a resource owner, so it reads no
 *	  catalog), queue (step 2).
 */
static dsm_segment *
post_request(const CqCallRun *r, HandoffCall *c, StringInfo settings, shm_mq_handle **mqh)
{
	Size		name_len = strlen(r->name) + 1;
	Size		target_len = strlen(r->target) + 1;
	Size		node_len = r->node_target ? strlen(r->node_target) + 1 : 1;
	Size		objname_len = r->objname ? strlen(r->objname) + 1 : 1;
	Size		shown_len = r->objname ? strlen(r->shown) + 1 : 1;
	Size		path_len = r->objname ? sizeof(Oid) * r->npath : 0;
	Size		size;
	HandoffHeader *h;
	dsm_segment *seg;
	char	   *base;
	shm_mq	   *mq;

	size = MAXALIGN(sizeof(HandoffHeader));
	size += MAXALIGN(name_len) + MAXALIGN(target_len) + MAXALIGN(node_len) +
		MAXALIGN(settings->len) + MAXALIGN(objname_len) + MAXALIGN(shown_len) + MAXALIGN(path_len);
	size += HANDOFF_QUEUE_SIZE;
	seg = dsm_create(size, 0);
	base = dsm_segment_address(seg);
	h = (HandoffHeader *) base;
	memset(h, 0, sizeof(*h));
	h->magic = HANDOFF_MAGIC;
	h->id = r->id;
	h->once = r->once;
	h->has_watermark = r->has_watermark;
	h->was_failed = r->was_failed;
	h->has_node_target = r->node_target != NULL;
	h->by_name = r->objname != NULL;
	h->caller = r->caller;
	h->npath = h->by_name ? r->npath : 0;
	h->caller_pid = MyProcPid;
	h->name_off = MAXALIGN(sizeof(HandoffHeader));
	h->target_off = h->name_off + MAXALIGN(name_len);
	h->node_target_off = h->target_off + MAXALIGN(target_len);
	h->settings_off = h->node_target_off + MAXALIGN(node_len);
	h->objname_off = h->settings_off + MAXALIGN(settings->len);
	h->shown_off = h->objname_off + MAXALIGN(objname_len);
	h->path_off = h->shown_off + MAXALIGN(shown_len);
	h->queue_off = h->path_off + MAXALIGN(path_len);
	memcpy(base + h->name_off, r->name, name_len);
	memcpy(base + h->target_off, r->target, target_len);
	memcpy(base + h->node_target_off, r->node_target ? r->node_target : "", node_len);
	memcpy(base + h->settings_off, settings->data, settings->len);
	memcpy(base + h->objname_off, h->by_name ? r->objname : "", objname_len);
	memcpy(base + h->shown_off, h->by_name ? r->shown : "", shown_len);
	if (path_len > 0)
		memcpy(base + h->path_off, r->path, path_len);
	mq = shm_mq_create(base + h->queue_off, HANDOFF_QUEUE_SIZE);
	shm_mq_set_receiver(mq, MyProc);
	*mqh = shm_mq_attach(mq, seg, NULL);
	c->handle = dsm_segment_handle(seg);
	return seg;
}

/*
 * relay
 *	  One message of the worker: a notice is given to our client now (as
 *	  in-process, before the batch's successors), an error is kept for the
 *	  end (in cxt).
 */
static void
relay(const char *data, Size nbytes, ErrorData **error, MemoryContext cxt)
{
	StringInfoData msg;
	ErrorData	edata;
	char		type;

	if (nbytes < 1)
		return;
	type = data[0];
	if (type != 'E' && type != 'N')
		return;					/* nothing else is sent: no rows, no parameters */
	msg.data = (char *) data + 1;
	msg.len = (int) nbytes - 1;
	msg.maxlen = msg.len;
	msg.cursor = 0;
	if (type == 'N')
	{
		pq_parse_errornotice(&msg, &edata);
		if (edata.elevel >= ERROR)
			edata.elevel = WARNING;
		ThrowErrorData(&edata);
	}
	else if (*error == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		*error = palloc(sizeof(ErrorData));
		pq_parse_errornotice(&msg, *error);
		MemoryContextSwitchTo(old);
	}
}

/*
 * drain
 *	  Relay every message queued now.  Returns false once the worker
 *	  detached.
 */
static bool
drain(shm_mq_handle *mqh, bool quiet, ErrorData **error, MemoryContext cxt)
{
	for (;;)
	{
		Size		nbytes;
		void	   *data;
		shm_mq_result res = shm_mq_receive(mqh, &nbytes, &data, true);

		if (res == SHM_MQ_WOULD_BLOCK)
			return true;
		if (res == SHM_MQ_DETACHED)
			return false;
		if (!quiet)
			relay(data, nbytes, error, cxt);
	}
}

/*
 * check_caller
 *	  Our own interrupts (cancel, statement_timeout, termination) and our
 *	  client: a client that went away ends the backend, as a failed send
 *	  would in-process, and the exit callback cancels the worker.
 */
static void
check_caller(void)
{
	if (MyProcPort != NULL && whereToSendOutput == DestRemote && !pq_check_connection())
	{
		ClientConnectionLost = true;
		InterruptPending = true;
	}
	CHECK_FOR_INTERRUPTS();
}

/*
 * wait_call
 *	  Step 3: relay the worker's messages until it is done with the call.
 *	  An error of ours (cancel, timeout) cancels the worker and is kept for
 *	  the end; from then on interrupts are held.  Returns true when the
 *	  worker finished (false: it exited first); *started says whether it
 *	  began.
 */
static bool
wait_call(HandoffHeader *h, shm_mq_handle *mqh, ErrorData **worker_error,
		  ErrorData **own_error, bool *started)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool attached = true;
	volatile bool holding = false;
	bool		finished;

	for (;;)
	{
		bool		busy;

		if (attached)
			attached = drain(mqh, false, worker_error, cxt);
		LWLockAcquire(cq_shared->lock, LW_SHARED);
		busy = serving(&current);
		LWLockRelease(cq_shared->lock);
		if (!busy)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (holding)
			continue;
		PG_TRY();
		{
			check_caller();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			*own_error = CopyErrorData();
			FlushErrorState();
			HOLD_INTERRUPTS();
			holding = true;
			cancel_worker(&current);
		}
		PG_END_TRY();
	}
	/* what it sent before it let go of the call */
	if (attached)
		(void) drain(mqh, false, worker_error, cxt);
	pg_read_barrier();
	*started = h->started;
	finished = h->finished;
	if (holding)
		RESUME_INTERRUPTS();
	return finished;
}

/*
 * cq_handoff_applies
 *	  May a CALL cq.run be handed off at all (cq.run_in_worker, a pool)?
 */
bool
cq_handoff_applies(void)
{
	return cq_run_in_worker && cq_shared != NULL && IsUnderPostmaster;
}

/*
 * cq_handoff_name_key
 *	  The key of a query's name (without its schema) that a call by name
 *	  prefers a worker by (call_last_key); never 0.
 */
uint32
cq_handoff_name_key(const char *objname)
{
	return hash_bytes((const unsigned char *) objname, strlen(objname)) | 1;
}

/*
 * cq_handoff_run
 *	  Run the batches of CALL cq.run r in an idle worker (see file
 *	  header).  Returns false, having done nothing, when the hand-off does
 *	  not apply (setting off, no idle worker, the worker gone before it
 *	  started): the caller runs them itself.  The caller has connected SPI
 *	  non-atomically.
 */
bool
cq_handoff_run(const CqCallRun *r)
{
	HandoffCall c;
	dsm_segment *volatile seg = NULL;
	shm_mq_handle *volatile mqh = NULL;
	HandoffHeader *h;
	ErrorData  *worker_error = NULL;
	ErrorData  *own_error = NULL;
	bool		started = false;
	bool		finished;
	Latch	   *volatile latch = NULL;
	ResourceOwner owner = CurrentResourceOwner;
	StringInfoData settings;

	if (!cq_handoff_applies())
		return false;

	/*
	 * A caller whose transaction wrote (it has a transaction id: an
	 * enclosing procedure or DO block created, changed, paused or reset
	 * the query, took row locks, ran DDL) or that runs in a subtransaction
	 * runs its batches itself: a worker cannot see what it wrote (a query
	 * it created "does not exist") and would wait for the locks it holds
	 * while it waits for the worker (the call hung; before session 42).
	 */
	if (FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()) || IsSubTransaction())
		return false;
	/* the caller's settings, read before the claim (catalog reads: see post_request) */
	initStringInfo(&settings);
	serialize_settings(&settings);
	if (!claim_worker(r->objname ? 0 : r->id, r->objname ? cq_handoff_name_key(r->objname) : 0, &c))
	{
		pfree(settings.data);
		return false;
	}
	if (!exit_registered)
	{
		before_shmem_exit(handoff_exit, (Datum) 0);
		exit_registered = true;
	}
	/* a segment of the session: it must outlive our snapshot's release */
	CurrentResourceOwner = NULL;
	PG_TRY();
	{
		{
			shm_mq_handle *q;

			seg = post_request(r, &c, &settings, &q);
			mqh = q;
		}
		pfree(settings.data);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		CurrentResourceOwner = owner;
		release_claim(&c);
		if (seg)
			dsm_detach(seg);
		PG_RE_THROW();
	}
	PG_END_TRY();
	h = (HandoffHeader *) dsm_segment_address(seg);

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	{
		CqWorkerSlot *w = &cq_shared->workers[c.slot];
		HandoffCall claimed = c;

		claimed.handle = DSM_HANDLE_INVALID;
		if (serving(&claimed))
		{
			w->call_dsm = c.handle;
			latch = w->latch;
			current = c;
		}
	}
	LWLockRelease(cq_shared->lock);
	if (latch == NULL)
	{
		/* the worker exited meanwhile: nothing ran */
		dsm_detach(seg);
		return false;
	}
	SetLatch(latch);

	PG_TRY();
	{
		/*
		 * The caller, which wrote nothing, commits its transaction, as a
		 * batch of the in-process path would: it lets its snapshot go, so
		 * that a long call does not hold back vacuum's horizon.
		 */
		SPI_commit();
		finished = wait_call(h, mqh, &worker_error, &own_error, &started);
	}
	PG_CATCH();
	{
		/* an error relaying (not an interrupt): cancel, wait, then report it */
		HOLD_INTERRUPTS();
		cancel_worker(&current);
		for (;;)
		{
			bool		busy;

			LWLockAcquire(cq_shared->lock, LW_SHARED);
			busy = serving(&current);
			LWLockRelease(cq_shared->lock);
			if (!busy)
				break;
			(void) drain(mqh, true, NULL, NULL);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		current.slot = -1;
		dsm_detach(seg);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
	current.slot = -1;
	dsm_detach(seg);
	release_claim(&c);			/* a worker that exited left it set */

	if (own_error != NULL)
		ReThrowError(own_error);
	if (!started)
		return false;			/* it exited before it began: run them here */
	if (worker_error != NULL && worker_error->elevel < FATAL)
		ThrowErrorData(worker_error);
	if (!finished || worker_error != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("lost the pg_cq worker running continuous query \"%s\" for this call", r->name),
				 worker_error && worker_error->message ?
				 errdetail("The worker reported: %s  Batches it committed stay committed; the batch it was running was rolled back.",
						   worker_error->message) :
				 errdetail("Batches it committed stay committed; the batch it was running was rolled back."),
				 errhint("Call cq.run again: it goes on from the last committed batch.")));
	return true;
}

/*
 * apply_settings
 *	  The caller's settings, at session level, each as the context and role
 *	  that set it in the caller (serialize_settings), so that the caller
 *	  sets nothing here it could not set itself: the permission checks of
 *	  set_config_option_ext (PGC_SUSET, GRANT SET ON PARAMETER) apply now,
 *	  and to a placeholder when the library that defines it is loaded later
 *	  in the call.  A placeholder of the caller refused so gives a WARNING,
 *	  as a session loading the library does; any other failure an ERROR.
 *	  Each name goes to *names as it is set (to RESET after the call, also
 *	  when one fails).  In a transaction of its own (the checks read the
 *	  catalog).
 */
static void
apply_settings(const char *p, List *volatile *names)
{
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	while (*p != '\0')
	{
		const char *name = p;
		const char *value = name + strlen(name) + 1;
		const char *how = value + strlen(value) + 1;
		int			scontext;
		Oid			srole;
		int			placeholder;

		p = how + strlen(how) + 1;
		if (sscanf(how, "%d %u %d", &scontext, &srole, &placeholder) != 3)
			elog(ERROR, "pg_cq: malformed setting \"%s\" in a CALL cq.run request", name);
		MemoryContextSwitchTo(cxt);
		*names = lappend(*names, pstrdup(name));
		MemoryContextSwitchTo(TopTransactionContext);
		(void) set_config_option_ext(name, value, (GucContext) scontext, PGC_S_SESSION, srole,
									 GUC_ACTION_SET, true, placeholder ? WARNING : ERROR, false);
	}
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
}

/*
 * reset_settings
 *	  RESET what apply_settings set.
 */
static void
reset_settings(List *names)
{
	ListCell   *lc;

	foreach(lc, names)
		(void) set_config_option((const char *) lfirst(lc), NULL, PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SET, true, WARNING, false);
}

/*
 * find_query
 *	  A call by name (see file header): the query the caller's schemas
 *	  hold, if the caller (its user) owns it, with what the caller would
 *	  have read of it.  Our slot remembers it for the next claim.  In the
 *	  call's first transaction, SPI connected.
 */
static void
find_query(HandoffHeader *h, CqCallRun *r, CqWorkerSlot *w)
{
	char	   *base = (char *) h;
	CqQuery    *q;

	q = cq_catalog_get_query_on(base + h->objname_off, base + h->shown_off,
								(const Oid *) (base + h->path_off), h->npath, false, false);
	cq_catalog_check_owner(q, h->caller);
	r->id = q->id;
	r->has_watermark = q->opts.watermark != NULL;
	r->was_failed = strcmp(q->state, "failed") == 0;
	r->node_target = cq_batch_node_goal(q->source, q->owner);	/* a source stamped per node */
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	w->call_last_query = q->id;
	w->call_last_key = cq_handoff_name_key(base + h->objname_off);
	LWLockRelease(cq_shared->lock);
}

/*
 * cq_handoff_pending
 *	  Has a caller posted a call to worker slot `slot`?  Caller holds the
 *	  lock.
 */
bool
cq_handoff_pending(int slot)
{
	CqWorkerSlot *w = &cq_shared->workers[slot];

	return w->call_pid != 0 && w->call_dsm != DSM_HANDLE_INVALID;
}

/*
 * cq_handoff_serve
 *	  Worker side: serve the call posted to our slot (see file header).
 *	  Called outside a transaction, in the worker's loop; returns there
 *	  with the worker's own settings and message channel back.
 */
void
cq_handoff_serve(int slot, MemoryContext worker_cxt)
{
	CqWorkerSlot *w = &cq_shared->workers[slot];
	dsm_handle	handle;
	pid_t		caller;
	dsm_segment *seg;
	HandoffHeader *h;
	shm_mq_handle *mqh;
	const PQcommMethods *save_methods = PqCommMethods;
	CommandDest save_dest = whereToSendOutput;
	ProtocolVersion save_protocol = FrontendProtocol;
	MemoryContext call_cxt;
	List	   *volatile names = NIL;
	volatile Portal portal = NULL;
	CqCallRun	r;
	Latch	   *volatile latch = NULL;
	Latch	   *sched;
	CqDbSlot   *db;
	ResourceOwner owner = CurrentResourceOwner;

	LWLockAcquire(cq_shared->lock, LW_SHARED);
	handle = w->call_dsm;
	caller = w->call_pid;
	LWLockRelease(cq_shared->lock);

	call_cxt = AllocSetContextCreate(TopMemoryContext, "pg_cq call", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(call_cxt);
	CurrentResourceOwner = NULL;	/* the mapping lasts until we detach */
	seg = dsm_attach(handle);
	CurrentResourceOwner = owner;
	h = seg ? (HandoffHeader *) dsm_segment_address(seg) : NULL;
	if (h != NULL && h->magic == HANDOFF_MAGIC && h->caller_pid == caller)
	{
		char	   *base = (char *) h;
		shm_mq	   *mq = (shm_mq *) (base + h->queue_off);

		shm_mq_set_sender(mq, MyProc);
		mqh = shm_mq_attach(mq, seg, NULL);
		pq_redirect_to_shm_mq(seg, mqh);
		SetClientEncoding(GetDatabaseEncoding());
		memset(&r, 0, sizeof(r));
		r.name = base + h->name_off;
		r.id = h->id;
		r.once = h->once;
		r.has_watermark = h->has_watermark;
		r.was_failed = h->was_failed;
		r.target = base + h->target_off;
		r.node_target = h->has_node_target ? base + h->node_target_off : NULL;
		pgstat_report_activity(STATE_RUNNING,
							   psprintf("pg_cq: CALL cq.run('%s') for PID %d", r.name, (int) caller));
		h->started = true;
		PG_TRY();
		{
			apply_settings(base + h->settings_off, &names);
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();

			/*
			 * An active portal, as a CALL runs in: SPI's non-atomic context
			 * lives in its memory, and a statement after SPI_commit takes
			 * its snapshot as the portal's (EnsurePortalSnapshotExists).
			 * Dropped here, or by the abort.
			 */
			portal = CreateNewPortal();
			portal->visible = false;
			portal->status = PORTAL_READY;	/* as PortalStart leaves it */
			MarkPortalActive(portal);
			ActivePortal = portal;
			PortalContext = portal->portalContext;
			/* the first transaction's snapshot is the portal's, as for a CALL */
			PushActiveSnapshot(GetTransactionSnapshot());
			portal->portalSnapshot = GetActiveSnapshot();
			if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
				elog(ERROR, "pg_cq: SPI_connect failed");
			if (h->by_name)
				find_query(h, &r, w);
			cq_callrun_loop(&r, false);
			SPI_finish();
			if (portal->portalSnapshot != NULL && ActiveSnapshotSet())
				PopActiveSnapshot();
			portal->portalSnapshot = NULL;
			ActivePortal = NULL;
			PortalContext = NULL;
			MarkPortalDone(portal);
			PortalDrop(portal, false);
			portal = NULL;
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			/* to the caller, through the queue (and to the log) */
			EmitErrorReport();
			/* as PortalRun does: an active portal outlives the abort */
			if (portal != NULL)
				MarkPortalFailed(portal);
			AbortCurrentTransaction();
			FlushErrorState();
		}
		PG_END_TRY();
		ActivePortal = NULL;
		PortalContext = NULL;
		MemoryContextSwitchTo(call_cxt);
		pg_write_barrier();
		h->finished = true;
		reset_settings(names);
		PqCommMethods = save_methods;
		whereToSendOutput = save_dest;
		FrontendProtocol = save_protocol;
	}

	/* idle before the caller returns (pg_stat_activity shows the call's end) */
	pgstat_report_activity(STATE_IDLE, NULL);
	/* free the call, then let go of the segment (the caller waits for both) */
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (w->call_pid == caller && w->call_dsm == handle)
	{
		latch = w->call_latch;
		w->call_pid = 0;
		w->call_latch = NULL;
		w->call_dsm = DSM_HANDLE_INVALID;
	}
	db = cq_shmem_find_db(w->dboid);
	sched = db ? db->latch : NULL;
	LWLockRelease(cq_shared->lock);
	if (seg)
		dsm_detach(seg);
	PqCommMethods = save_methods;
	whereToSendOutput = save_dest;
	if (latch)
		SetLatch(latch);
	/* due queries may have waited for us */
	if (sched)
		SetLatch(sched);
	QueryCancelPending = false; /* a late cancel of the caller has nothing to cancel */
	pgstat_report_stat(true);
	MemoryContextSwitchTo(worker_cxt);
	MemoryContextDelete(call_cxt);
}

/*
 * cq_handoff_ran_here
 *	  The caller ran the batches of its call of query id itself because no
 *	  worker was idle (cq_handoff_run asked the scheduler for one), and
 *	  they committed: ask the scheduler to have a worker warm up for the
 *	  query now (warm.c), so that its next call does not pay the worker's
 *	  first batch.  After the batches, so that the warm-up sees them.
 */
void
cq_handoff_ran_here(int32 id)
{
	CqDbSlot   *db;
	Latch	   *wake = NULL;

	if ((unserved_query != id && unserved_query != -1) || cq_shared == NULL)
		return;
	unserved_query = 0;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(MyDatabaseId);
	if (db != NULL && db->pid != 0 && db->state == CQ_DB_RUNNING)
	{
		db->call_wanted_query = id;
		wake = db->latch;
	}
	LWLockRelease(cq_shared->lock);
	if (wake)
		SetLatch(wake);
}
