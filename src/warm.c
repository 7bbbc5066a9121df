/*-------------------------------------------------------------------------
 *
 * warm.c
 *	  A pool worker started for a CALL cq.run warms up for that call's
 *	  query while it is idle, before the next call of the query comes.
 *
 * A CALL cq.run that finds no idle worker runs its batches itself and asks
 * the scheduler for a worker (handoff.c); the next call of the same query
 * (pg_cron's next run) is handed to that worker, which handoff.c prefers.
 * Its first batch of the query used to cost what a new backend's does
 * (bench/README.md, "Cold first batch": 80-90 ms of CPU at 10M rows of
 * history instead of 15-20 ms): the relation and catalog caches of the
 * query's relations, the analysis and generated SQL (plan.c), and first
 * touches of the pages the batch reads -- the target's index leaves into
 * which it inserts, the source's BRIN index, the store's slots and rows
 * (a process pays for the first touch of each page of shared memory on the
 * virtual machines this was measured on, 8-50 us a page).  The scheduler
 * therefore gives the new worker the query (CqWorkerSlot.warm_query) and
 * the worker, idle, does that work now (cq_warm_query; only for a query
 * whose first batch committed), in a transaction
 * of its own that changes nothing: it reads the query's catalog row and
 * last offset, builds the analysis and SQL into the per-backend cache
 * (plan.c), reads the blocks of the target's (and a state table's)
 * indexes, of the target itself when it fits, and of the source's BRIN
 * indexes through shared buffers (at most an eighth of them, as batch 0
 * does in rowload.c), touching each page, and touches the store's pages
 * (store.c).  Relations locked by someone else are skipped (no waiting
 * behind DDL), and a CALL cq.run posted to the worker meanwhile cuts the
 * page touches short (the caller waits for it).  A warm-up that fails (the
 * query dropped meanwhile) says so at DEBUG1 and is forgotten: it is only
 * an optimization.  It never waits for a lock: one that is not free at
 * once ends the attempt, which is tried again a little later (see
 * WARM_LOCK_RETRIES).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "warm.h"
#include "catalog.h"
#include "plan.h"
#include "progress.h"
#include "store.h"
#include "shmem.h"
#include "handoff.h"

/* our worker slot, while cq_warm_query runs */
static int	warm_slot = -1;

/*
 * call_posted
 *	  Has a caller posted a CALL cq.run to us meanwhile, or the scheduler
 *	  assigned us batches?  Then the warm-up stops touching pages: they are
 *	  waiting for us.
 */
static bool
call_posted(void)
{
	bool		posted;

	LWLockAcquire(cq_shared->lock, LW_SHARED);
	posted = cq_handoff_pending(warm_slot) || cq_shared->workers[warm_slot].busy;
	LWLockRelease(cq_shared->lock);
	return posted;
}

/*
 * touch_relation
 *	  Read every block of rel through shared buffers (at most *budget of
 *	  them, decreased by what was read) and a byte of each 4 kB page of it.
 *	  Returns the blocks read.
 */
static int64
touch_relation(Relation rel, int64 *budget)
{
	BlockNumber n = RelationGetNumberOfBlocks(rel);
	int64		read = 0;
	volatile char sink = 0;

	for (BlockNumber b = 0; b < n && *budget > 0; b++, (*budget)--, read++)
	{
		Buffer		buf;
		const char *page;

		CHECK_FOR_INTERRUPTS();
		if (read % 256 == 0 && call_posted())
		{
			*budget = 0;
			break;
		}
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, b, RBM_NORMAL, NULL);
		page = (const char *) BufferGetPage(buf);
		for (int off = 0; off < BLCKSZ; off += 4096)
			sink += page[off];
		ReleaseBuffer(buf);
	}
	(void) sink;
	return read;
}

/*
 * touch_table
 *	  touch_relation of table relid's indexes (only its BRIN ones with
 *	  brin_only), then of the table itself with heap when it fits in what
 *	  is left of *budget (the target: update mode rewrites its rows).  A relation that someone else has locked
 *	  (conflicting with ACCESS SHARE: DDL) or that is gone is skipped.
 */
static int64
touch_table(Oid relid, bool brin_only, bool heap, int64 *budget)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	int64		read = 0;

	if (!OidIsValid(relid) || *budget <= 0 ||
		!ConditionalLockRelationOid(relid, AccessShareLock))
		return 0;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(relid, AccessShareLock);
		return 0;
	}
	if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW)
	{
		relation_close(rel, AccessShareLock);
		return 0;
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Oid			ix = lfirst_oid(lc);
		Relation	idx;

		if (!ConditionalLockRelationOid(ix, AccessShareLock))
			continue;
		idx = try_relation_open(ix, NoLock);
		if (idx == NULL)
		{
			UnlockRelationOid(ix, AccessShareLock);
			continue;
		}
		if (idx->rd_rel->relkind == RELKIND_INDEX && idx->rd_index->indisvalid &&
			(!brin_only || idx->rd_rel->relam == BRIN_AM_OID))
			read += touch_relation(idx, budget);
		relation_close(idx, AccessShareLock);
	}
	if (heap && RelationGetNumberOfBlocks(rel) <= *budget)
		read += touch_relation(rel, budget);
	relation_close(rel, AccessShareLock);
	return read;
}

/*
 * A warm-up that met a lock held by another transaction (lock_timeout,
 * below) tries again WARM_LOCK_RETRIES times, WARM_LOCK_RETRY_MS apart,
 * holding nothing meanwhile: the query's creator (CREATE TABLE ... AS of an
 * available_now query, whose reload may come before its commit) holds the
 * locks of the new relations until it commits (t/074 missed the warm-up).
 */
#define WARM_LOCK_RETRIES	50
#define WARM_LOCK_RETRY_MS	10

static bool warm_once(int32 id, int slot);

/*
 * cq_warm_query
 *	  Warm this worker (its slot: slot) up for query id (see file
 *	  header).  Called by a pool worker outside a transaction.  A call
 *	  posted to it meanwhile cuts the page touches short, and ends the
 *	  retries.
 */
void
cq_warm_query(int32 id, int slot)
{
	for (int attempt = 0; !warm_once(id, slot); attempt++)
	{
		if (attempt >= WARM_LOCK_RETRIES || call_posted())
			break;
		/* the worker's loop looks at its slot again after us: no wake-up is lost */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 WARM_LOCK_RETRY_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (call_posted())
			break;
	}
}

/*
 * warm_once
 *	  One attempt of cq_warm_query, in a transaction of its own; false
 *	  when a lock was not free (lock_timeout), to try again.
 */
static bool
warm_once(int32 id, int slot)
{
	MemoryContext cxt = CurrentMemoryContext;
	TimestampTz t0 = GetCurrentTimestamp();
	int64		blocks = 0;
	int64		rows = 0;
	bool		found = false;

	warm_slot = slot;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		CqQuery    *q;

		/*
		 * Never wait for a lock: the catalog read and the analysis lock
		 * the query's relations one by one, and waiting behind a DROP
		 * TABLE of several of them while holding another made a deadlock
		 * that the user's DROP lost (session 34, sql/143 in CI;
		 * t/098).  A lock that is not free within a millisecond ends
		 * this attempt (caught below; cq_warm_query tries again); the
		 * setting goes with this transaction.
		 */
		(void) set_config_option("lock_timeout", "1", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
		PushActiveSnapshot(GetTransactionSnapshot());
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		q = cq_catalog_get_query_by_id(id, true, false);
		if (q != NULL)
		{
			/* a call by name prefers us (handoff.c) */
			LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
			cq_shared->workers[slot].call_last_key = cq_handoff_name_key(q->name);
			LWLockRelease(cq_shared->lock);
		}
		/* a join of two streams has batches of its own (join.c): its caches stay cold */
		if (q != NULL && !OidIsValid(q->opts.join_source_relid))
		{
			CqLastOffset last;

			cq_progress_last_offset(q, &last);
			found = last.found;
		}
		/*
		 * Before its first batch there is nothing to warm (an empty store
		 * and target), and batch 0 rebuilds the target's index only if
		 * its lock is free at once: stay away from it.
		 */
		if (found)
		{
			CqAnalysis *an;
			CqPlan	   *plan;
			int64		budget = NBuffers / 8;

			cq_plan_get(q, &an, &plan);
			blocks += touch_table(q->target, false, true, &budget);
			blocks += touch_table(q->state_table, false, false, &budget);
			blocks += touch_table(an->source_relid, true, false, &budget);
			if (plan->use_store && !call_posted())
				rows = cq_store_touch(MyDatabaseId, id);
		}
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		locked;

		/*
		 * Only an optimization, which a query dropped meanwhile ends (its
		 * relations gone): say why at DEBUG1, and go on.
		 */
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(DEBUG1,
				(errcode(edata->sqlerrcode),
				 errmsg("pg_cq: warm-up for continuous query %d failed: %s", id, edata->message)));
		locked = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
		FreeErrorData(edata);
		return !locked;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	if (found)
		elog(DEBUG1, "pg_cq: worker warmed up for continuous query %d in %.3f ms: %lld blocks, %lld store rows",
			 id, (double) (GetCurrentTimestamp() - t0) / 1000.0, (long long) blocks, (long long) rows);
	return true;
}
