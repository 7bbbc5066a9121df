/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared memory of pg_cq: database, worker and query slots.
 *
 * One fixed segment, requested from shmem_request_hook and set up in
 * shmem_startup_hook (PG 15).  Its size is fixed at server start:
 *	 - database slots and worker slots: max_worker_processes each (every
 *	   scheduler and every worker is a background worker, so there can never
 *	   be more of them);
 *	 - query slots: cq.max_queries (a postmaster setting).
 *
 * Locking: one LWLock of the named tranche "pg_cq" guards every field of
 * every slot, the launcher's pid/latch and its request queue.  Critical
 * sections are a few loads and stores; nothing is allocated, no error is
 * raised and no other lock is taken while it is held.  Latches are set
 * after the lock is released where that is easy, never required.
 *
 * Who writes what:
 *	 - CqShared.launcher_*: the launcher (set at start, cleared at exit);
 *	   requests: any backend appends, the launcher drains.
 *	 - CqDbSlot: the launcher creates and frees slots and sets state
 *	   STARTING/UNKNOWN; the scheduler sets pid/latch/state RUNNING or
 *	   ABSENT; committing backends bump catalog_gen; DROP/CREATE DATABASE
 *	   set blocked_until; a CALL cq.run that finds no idle worker sets
 *	   call_wanted, creating the slot (UNKNOWN) or turning ABSENT into
 *	   UNKNOWN when no scheduler runs (handoff.c).
 *	 - CqWorkerSlot: the scheduler claims a slot and assigns a group of
 *	   queries (busy = true) and marks outcomes collected (or, before the
 *	   batch is started, takes it back for an idle worker); the worker sets
 *	   pid/latch, started before each batch, each query's outcome (done)
 *	   and, after the visit, busy = false.
 *	 - CqQuerySlot: the scheduler creates and frees them on catalog reload
 *	   and writes message/is_trigger_active between batches; the worker
 *	   writes worker_pid, message and results during a batch; committing
 *	   backends set pending and pending_since (only where wake_on_commit, set by the scheduler
 *	   for trigger '0' and interval queries, and only waking the scheduler
 *	   when pending was false and no worker has the query); a worker that
 *	   reruns its group clears pending.
 * The whole segment is rebuilt empty after a crash-restart; nothing in it
 * needs to survive (durable state is in the cq.* tables).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "shmem.h"
#include "guc.h"

CqShared   *cq_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

#define CQ_TRANCHE "pg_cq"
#define CQ_STORE_TRANCHE "pg_cq store"

/*
 * shared_size
 *	  Bytes of the segment.
 */
static Size
shared_size(void)
{
	Size		size = MAXALIGN(sizeof(CqShared));

	size = add_size(size, MAXALIGN(mul_size(max_worker_processes, sizeof(CqDbSlot))));
	size = add_size(size, MAXALIGN(mul_size(max_worker_processes, sizeof(CqWorkerSlot))));
	size = add_size(size, MAXALIGN(mul_size(cq_max_queries, sizeof(CqQuerySlot))));
	return size;
}

/*
 * cq_shmem_request
 *	  shmem_request_hook: ask for the segment and the lock.
 */
static void
cq_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche(CQ_TRANCHE, 1);
	RequestNamedLWLockTranche(CQ_STORE_TRANCHE, 1);
}

/*
 * cq_shmem_startup
 *	  shmem_startup_hook: create (or attach to) the segment.
 */
static void
cq_shmem_startup(void)
{
	bool		found;
	char	   *p;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	cq_shared = ShmemInitStruct("pg_cq", shared_size(), &found);
	if (!found)
	{
		memset(cq_shared, 0, shared_size());
		cq_shared->lock = &(GetNamedLWLockTranche(CQ_TRANCHE))->lock;
		cq_shared->store_lock = &(GetNamedLWLockTranche(CQ_STORE_TRANCHE))->lock;
		cq_shared->store_ready = false;
		ConditionVariableInit(&cq_shared->store_cv);
		cq_shared->ndbs = max_worker_processes;
		cq_shared->nworkers = max_worker_processes;
		cq_shared->nqueries = cq_max_queries;
		pg_atomic_init_u32(&cq_shared->wake_slots, 0);
		p = (char *) cq_shared + MAXALIGN(sizeof(CqShared));
		cq_shared->dbs = (CqDbSlot *) p;
		p += MAXALIGN(mul_size(max_worker_processes, sizeof(CqDbSlot)));
		cq_shared->workers = (CqWorkerSlot *) p;
		p += MAXALIGN(mul_size(max_worker_processes, sizeof(CqWorkerSlot)));
		cq_shared->queries = (CqQuerySlot *) p;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * cq_shmem_init
 *	  Install the hooks; called from _PG_init (after the GUCs are defined,
 *	  so cq.max_queries is known when the request hook runs).
 */
void
cq_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = cq_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = cq_shmem_startup;
}

/*
 * cq_shmem_find_db
 *	  The slot of a database, or NULL.  Caller holds the lock.
 */
CqDbSlot *
cq_shmem_find_db(Oid dboid)
{
	for (int i = 0; i < cq_shared->ndbs; i++)
		if (cq_shared->dbs[i].in_use && cq_shared->dbs[i].dboid == dboid)
			return &cq_shared->dbs[i];
	return NULL;
}

/*
 * cq_shmem_get_db
 *	  The slot of a database, created (state UNKNOWN) if missing; NULL when
 *	  every slot is taken.  Caller holds the lock exclusively.
 */
CqDbSlot *
cq_shmem_get_db(Oid dboid)
{
	CqDbSlot   *slot = cq_shmem_find_db(dboid);

	if (slot)
		return slot;
	for (int i = 0; i < cq_shared->ndbs; i++)
		if (!cq_shared->dbs[i].in_use)
		{
			slot = &cq_shared->dbs[i];
			memset(slot, 0, sizeof(*slot));
			slot->in_use = true;
			slot->dboid = dboid;
			slot->state = CQ_DB_UNKNOWN;
			return slot;
		}
	return NULL;
}

/*
 * Where this backend last found a query's slot, by query id (index + 1,
 * 0 = none; ids that share an entry take it from each other).  The
 * scheduler claims at most one slot per (database, query id) (it looks
 * for the query's slot before it claims one), so a slot that is in use for
 * the same database and id, read under the lock, is the one a scan would
 * find: the hint is only ever believed after that check.  A worker looks
 * its queries up several times a batch (begin_next, batch_over,
 * continue_group, status.c) under the exclusive lock that committing
 * backends wait for; with many queries a scan of every slot each time was
 * that lock's longest hold.
 */
#define CQ_SLOT_HINTS 1024
static int	slot_hint[CQ_SLOT_HINTS];

/*
 * cq_shmem_find_query
 *	  The status slot of a query, or NULL.  Caller holds the lock.
 */
CqQuerySlot *
cq_shmem_find_query(Oid dboid, int32 query_id)
{
	int		   *hint = &slot_hint[(uint32) query_id % CQ_SLOT_HINTS];
	int			h = *hint - 1;

	if (h >= 0 && h < cq_shared->queries_used)
	{
		CqQuerySlot *q = &cq_shared->queries[h];

		if (q->in_use && q->dboid == dboid && q->query_id == query_id)
			return q;
	}
	for (int i = 0; i < cq_shared->queries_used; i++)
	{
		CqQuerySlot *q = &cq_shared->queries[i];

		if (q->in_use && q->dboid == dboid && q->query_id == query_id)
		{
			*hint = i + 1;
			return q;
		}
	}
	return NULL;
}

/*
 * cq_shmem_queries_changed
 *	  Query slots were taken or freed: lower or raise queries_used to just
 *	  past the last slot in use, so that the scans of every commit into a
 *	  tracked source (wakeup.c) read only the slots ever used, not all
 *	  cq.max_queries of them; and count the slots that commits wake
 *	  (wake_slots: with none, a commit takes no lock).  Caller holds the
 *	  lock exclusively.
 */
void
cq_shmem_queries_changed(void)
{
	int			n = cq_shared->nqueries;
	uint32		wake = 0;

	while (n > 0 && !cq_shared->queries[n - 1].in_use)
		n--;
	cq_shared->queries_used = n;
	for (int i = 0; i < n; i++)
		if (cq_shared->queries[i].in_use && cq_shared->queries[i].wake_on_commit)
			wake++;
	pg_atomic_write_u32(&cq_shared->wake_slots, wake);
}

/*
 * cq_shmem_request_scheduler
 *	  Ask the launcher to start the scheduler of a database now (the fast
 *	  path after a query is created).  Never raises an error: it runs from
 *	  a commit callback.
 */
void
cq_shmem_request_scheduler(Oid dboid)
{
	Latch	   *latch;

	if (cq_shared == NULL)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (cq_shared->nrequests < CQ_LAUNCHER_REQUESTS)
		cq_shared->requests[cq_shared->nrequests++] = dboid;
	else
		cq_shared->rescan = true;
	latch = cq_shared->launcher_latch;
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * cq_shmem_message_text
 *	  Spark's wording of a status message.
 */
const char *
cq_shmem_message_text(CqMessage msg)
{
	switch (msg)
	{
		case CQ_MSG_STOPPED:
			return "Stopped";
		case CQ_MSG_WAITING_DATA:
			return "Waiting for data to arrive";
		case CQ_MSG_PROCESSING:
			return "Processing new data";
		case CQ_MSG_WAITING_TRIGGER:
			return "Waiting for next trigger";
		case CQ_MSG_CLEANUP:
			return "No new data but cleaning up state";
		case CQ_MSG_INITIALIZING:
			return "Initializing sources";
	}
	return "Stopped";
}
