/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Waking schedulers at commit: new source rows and catalog changes.
 *
 * A tracked source has an AFTER INSERT ... FOR EACH STATEMENT trigger,
 * cq_wakeup, whose C function only remembers the table in backend-local
 * memory.  Functions that change cq.queries call cq_wakeup_catalog_changed.
 * At commit, an XactCallback (registered in every backend from _PG_init)
 * marks the queries over those tables as pending in shared memory and sets
 * the latch of the database's scheduler; for a catalog change it bumps the
 * database's catalog generation, or asks the launcher to start a scheduler
 * when none runs.  Abort and PREPARE forget everything (a prepared
 * transaction's rows are found by the scheduler's periodic poll).
 *
 * The callback runs after the commit is visible to new snapshots
 * (CommitTransaction calls it after ProcArrayEndTransaction), so a woken
 * worker always finds the rows.  It must not raise errors: it only takes
 * the pg_cq LWLock and sets latches.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "wakeup.h"
#include "shmem.h"

PG_FUNCTION_INFO_V1(cq_wakeup);

#define MAX_PENDING_SOURCES 16

/* backend-local, reset at the end of every transaction */
static bool catalog_changed = false;
static int	npending = 0;
static bool pending_overflow = false;	/* too many tables: wake them all */
static Oid	pending_sources[MAX_PENDING_SOURCES];

/*
 * reset_pending
 *	  Forget what this transaction noted.
 */
static void
reset_pending(void)
{
	catalog_changed = false;
	npending = 0;
	pending_overflow = false;
}

/*
 * wants_wakeup
 *	  Does this transaction's commit concern query slot q: a query over one
 *	  of the tables it inserted into, that commits wake (the scheduler sets
 *	  wake_on_commit for trigger '0' and interval queries)?
 */
static bool
wants_wakeup(CqQuerySlot *q)
{
	if (!q->in_use || q->dboid != MyDatabaseId || !q->wake_on_commit)
		return false;
	if (pending_overflow)
		return true;
	for (int j = 0; j < npending; j++)
		if (pending_sources[j] == q->source)
			return true;
	return false;
}

/*
 * notify_at_commit
 *	  Publish what this transaction noted (see file header).  The
 *	  scheduler's latch is set only when something changed for it: a
 *	  catalog change, or a query that was not pending yet (if it was,
 *	  whoever made it pending woke the scheduler, which has not collected
 *	  it yet) and that no worker has (is_trigger_active: from the
 *	  assignment until the scheduler took the outcome; the worker reruns
 *	  it at the end of its round, or wakes the scheduler at the end of its
 *	  visit, which then collects the outcome before it looks at pending).  Setting another process's latch is a kill() system call,
 *	  the most expensive part of a single-row INSERT's commit otherwise;
 *	  the first pass, under a shared lock, finds out whether it is needed.
 *	  Before it, when no query of the cluster is woken by commits (paused,
 *	  available-now or no queries), wake_slots says so without the lock,
 *	  whose cache line every committing writer would otherwise write.
 *	  Reading it without the lock is reading it just before taking the
 *	  lock: the scheduler sets the slots and the count together, under the
 *	  exclusive lock, and a query given wake_on_commit later finds the
 *	  rows committed before by itself (a new or resumed query is due at
 *	  once).
 */
static void
notify_at_commit(void)
{
	CqDbSlot   *db;
	Latch	   *latch = NULL;
	bool		want_scheduler = false;
	bool		wake = catalog_changed;

	if (cq_shared == NULL || !OidIsValid(MyDatabaseId))
		return;

	if (!catalog_changed)
	{
		bool		mark = false;

		pg_memory_barrier();
		if (pg_atomic_read_u32(&cq_shared->wake_slots) == 0)
			return;
		LWLockAcquire(cq_shared->lock, LW_SHARED);
		for (int i = 0; i < cq_shared->queries_used && !mark; i++)
			if (!cq_shared->queries[i].pending && wants_wakeup(&cq_shared->queries[i]))
				mark = true;
		LWLockRelease(cq_shared->lock);
		if (!mark)
			return;
	}

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(MyDatabaseId);
	if (db)
	{
		if (catalog_changed)
			db->catalog_gen++;
		latch = db->latch;
	}
	if (catalog_changed && (db == NULL || (db->state != CQ_DB_RUNNING && db->state != CQ_DB_STARTING)))
		want_scheduler = true;

	if (npending > 0 || pending_overflow)
	{
		for (int i = 0; i < cq_shared->queries_used; i++)
		{
			CqQuerySlot *q = &cq_shared->queries[i];

			if (!q->pending && wants_wakeup(q))
			{
				q->pending = true;
				/* this commit's time, taken at commit (no clock read) */
				q->pending_since = GetCurrentTransactionStopTimestamp();
				/* a worker has it: it looks at pending itself, or wakes the scheduler */
				if (!q->is_trigger_active)
					wake = true;
			}
		}
	}
	LWLockRelease(cq_shared->lock);

	if (latch && (wake || catalog_changed))
		SetLatch(latch);
	if (want_scheduler)
		cq_shmem_request_scheduler(MyDatabaseId);
}

/*
 * cq_xact_callback
 *	  Commit: publish; abort or prepare: forget.
 */
static void
cq_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (catalog_changed || npending > 0 || pending_overflow)
				notify_at_commit();
			reset_pending();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			reset_pending();
			break;
		default:
			break;
	}
}

/*
 * cq_wakeup_init
 *	  Register the commit callback; called from _PG_init.
 */
void
cq_wakeup_init(void)
{
	RegisterXactCallback(cq_xact_callback, NULL);
}

/*
 * cq_wakeup_catalog_changed
 *	  cq.queries changed in this transaction: at commit the scheduler
 *	  re-reads it (or the launcher starts one).
 */
void
cq_wakeup_catalog_changed(void)
{
	catalog_changed = true;
}

/*
 * cq_wakeup_note_source
 *	  Note a table this transaction inserted into: at commit the queries
 *	  over it are woken.  What the trigger cq_wakeup does, also called for
 *	  statements that run without it (stamp.c).
 */
void
cq_wakeup_note_source(Oid relid)
{
	if (pending_overflow)
		return;
	for (int i = 0; i < npending; i++)
		if (pending_sources[i] == relid)
			return;
	if (npending < MAX_PENDING_SOURCES)
		pending_sources[npending++] = relid;
	else
		pending_overflow = true;
}

/*
 * cq_wakeup
 *	  The statement trigger of tracked sources: note the table.
 */
Datum
cq_wakeup(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("cq.wakeup() must be called as a trigger")));
	cq_wakeup_note_source(RelationGetRelid(td->tg_relation));
	PG_RETURN_POINTER(NULL);
}
