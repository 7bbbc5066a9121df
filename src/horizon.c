/*-------------------------------------------------------------------------
 *
 * horizon.c
 *	  The BRIN scan of a batch's new rows without the heap pages that
 *	  cannot hold them (page LSN against a sampled WAL position).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/fmgroids.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "horizon.h"

/*
 * Scans of new rows that skip old pages.
 *
 * The last page range of a source stays unsummarized while it fills (see
 * cq_source_summarize), so a BRIN scan for the rows of a batch gets all of
 * its pages (up to CQ_BRIN_PAGES_PER_RANGE), and the heap scan then reads
 * and rejects every older row on them: for a source with many queries and
 * small batches, most of each batch's work.  Exact, cheaper: a heap page
 * whose LSN is not after some WAL position L cannot hold a row version
 * created after L, and rows whose cq_xid is at least X were all created
 * after L when L was read before X was the next transaction id:
 *	 - a row's cq_xid is the id of the transaction that inserted it (the
 *	   stamp, stamp.c); an UPDATE keeps it, so a newer version of the row
 *	   is created later still;
 *	 - an id x >= X was assigned after X was read (ids are handed out in
 *	   order under XidGenLock), so the WAL record of any row version that
 *	   transaction (or a later one) writes starts at or after L (space is
 *	   reserved in order under insertpos_lck), and ends after L; heap
 *	   changes of a WAL-logged table set the page LSN to that end, and page
 *	   LSNs only grow.
 * So the pages of a BRIN bitmap whose scan keys bound cq_xid from below
 * by v (>= v, > v, = v) may be left out when their LSN is at most the L
 * of a sample (L, X) with X <= v: none holds a row the scan's quals accept.
 * Pages the table gains after the check are kept (harmless; a row put
 * there is newer than the scan's snapshot anyway).  Only for permanent
 * tables with wal_level replica or higher: unlogged and temporary tables
 * write no WAL, and at wal_level minimal a table made in the inserting
 * transaction may be synced at commit without WAL (page LSNs untouched).
 * A writer that gives cq_xid a value behind the stamp's back (the stamp
 * trigger disabled by the owner) breaks the first point; such a row was
 * never certain to be read exactly once anyway.
 *
 * Samples (L, X) are taken at each batch (cq_source_summarize) and after
 * each filtered scan, at most one per millisecond in the whole server,
 * into rings in shared memory that every backend reads: a sample's
 * statement holds for every transaction of the server, whichever backend
 * took it (an id x >= X, in any backend, is assigned after X was read; the
 * WAL of any backend is reserved in one order), so the first batch of a
 * new backend (CALL cq.run from pg_cron) can use the samples its
 * predecessors took.  Another backend's transaction that was running when
 * a sample was taken has an id below the sample's X: its rows are not
 * covered by that sample, only by samples whose X is at most its id (taken
 * before it got one), whose L is before its rows.  A scan uses the newest
 * sample with X <= v (the rows of a batch need one taken a little before
 * its S_prev: while transactions that were running then are still running,
 * none qualifies and nothing is left out).  A sample is read and written
 * under the rings' lock, (L, X) as one; the rings are rebuilt empty at
 * every start of shared memory (after a crash too).  The BRIN indexes on
 * cq_xid get horizon_getbitmap as their amgetbitmap in this backend's
 * relation cache (as stamp.c swaps aminsert) when a batch summarizes them.
 */
typedef struct HorizonSample
{
	XLogRecPtr	lsn;			/* WAL insert position, read first */
	uint64		next_xid;		/* next full transaction id, read after */
} HorizonSample;

/*
 * Three rings of samples, at least 1 ms, 1 s and 1 min apart, so that a
 * server running many batches a second (workers) still has a sample old
 * enough for a query whose last batch was seconds or minutes ago.
 */
#define HORIZON_LEVELS 3
#define HORIZON_SAMPLES 256

typedef struct HorizonRing
{
	int64		spacing_us;
	int			count;
	int			newest;
	TimestampTz taken;
	HorizonSample samples[HORIZON_SAMPLES];
} HorizonRing;

/* the rings in shared memory, and their lock */
typedef struct HorizonShared
{
	LWLock	   *lock;
	HorizonRing rings[HORIZON_LEVELS];
} HorizonShared;

#define HORIZON_TRANCHE "pg_cq horizon"

static HorizonShared *horizon = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * horizon_shmem_request
 *	  shmem_request_hook: ask for the rings and their lock.
 */
static void
horizon_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(HorizonShared)));
	RequestNamedLWLockTranche(HORIZON_TRANCHE, 1);
}

/*
 * horizon_shmem_startup
 *	  shmem_startup_hook: create (or attach to) the rings, empty.
 */
static void
horizon_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	horizon = ShmemInitStruct(HORIZON_TRANCHE, sizeof(HorizonShared), &found);
	if (!found)
	{
		memset(horizon, 0, sizeof(HorizonShared));
		horizon->lock = &(GetNamedLWLockTranche(HORIZON_TRANCHE))->lock;
		horizon->rings[0].spacing_us = 1000;
		horizon->rings[1].spacing_us = USECS_PER_SEC;
		horizon->rings[2].spacing_us = 60 * USECS_PER_SEC;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * cq_horizon_shmem_init
 *	  Install the hooks that set up the shared rings; from _PG_init.
 */
void
cq_horizon_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = horizon_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = horizon_shmem_startup;
}

/*
 * cq_source_sample_horizon
 *	  Take a sample (L, X) for the scans of all backends (see above) into
 *	  each ring whose spacing has passed since its newest sample; a ring
 *	  whose newest sample has the same X gets the newer L instead.  Read
 *	  under the rings' lock, so the samples of each ring are in the order
 *	  of their L and X.
 */
void
cq_source_sample_horizon(void)
{
	TimestampTz now;
	XLogRecPtr	lsn;
	uint64		next;

	if (horizon == NULL || RecoveryInProgress())
		return;
	now = GetCurrentTimestamp();
	/* an unlocked look first: most calls come within the millisecond */
	if (horizon->rings[0].count > 0 && now >= horizon->rings[0].taken &&
		now - horizon->rings[0].taken < horizon->rings[0].spacing_us)
		return;
	LWLockAcquire(horizon->lock, LW_EXCLUSIVE);
	/* first the WAL position, then the next id (both read under locks: ordered) */
	lsn = GetXLogInsertRecPtr();
	next = U64FromFullTransactionId(ReadNextFullTransactionId());
	for (int l = 0; l < HORIZON_LEVELS; l++)
	{
		HorizonRing *r = &horizon->rings[l];

		if (r->count > 0 && now >= r->taken && now - r->taken < r->spacing_us)
			continue;
		r->taken = now;
		if (r->count > 0 && r->samples[r->newest].next_xid == next)
		{
			r->samples[r->newest].lsn = lsn;
			continue;
		}
		r->newest = (r->newest + 1) % HORIZON_SAMPLES;
		r->samples[r->newest].lsn = lsn;
		r->samples[r->newest].next_xid = next;
		if (r->count < HORIZON_SAMPLES)
			r->count++;
	}
	LWLockRelease(horizon->lock);
}

/*
 * scan_horizon
 *	  The L of the newest sample whose X is at most the lower bound the
 *	  scan's keys put on cq_xid; false when there is none (no bound, no
 *	  such sample, or page LSNs cannot be relied on).
 */
static bool
scan_horizon(IndexScanDesc scan, Relation heap, XLogRecPtr *lsn)
{
	bool		bounded = false;
	bool		found = false;
	uint64		bound = 0;

	if (horizon == NULL || !XLogIsNeeded() || RecoveryInProgress() ||
		heap->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return false;
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		Oid			fn = key->sk_func.fn_oid;

		if (key->sk_attno != 1 || (key->sk_flags & (SK_ISNULL | SK_SEARCHNULL | SK_SEARCHNOTNULL |
													 SK_SEARCHARRAY | SK_ROW_HEADER)) != 0)
			continue;
		if (fn == F_XID8GE || fn == F_XID8GT || fn == F_XID8EQ)
		{
			uint64		v = U64FromFullTransactionId(DatumGetFullTransactionId(key->sk_argument));

			if (!bounded || v > bound)
				bound = v;
			bounded = true;
		}
	}
	if (!bounded)
		return false;
	/* samples are in order: the newest valid one of each ring, the latest L */
	LWLockAcquire(horizon->lock, LW_SHARED);
	for (int l = 0; l < HORIZON_LEVELS; l++)
	{
		HorizonRing *r = &horizon->rings[l];

		for (int n = 0, i = r->newest; n < r->count;
			 n++, i = (i + HORIZON_SAMPLES - 1) % HORIZON_SAMPLES)
		{
			if (r->samples[i].next_xid <= bound)
			{
				if (!found || r->samples[i].lsn > *lsn)
					*lsn = r->samples[i].lsn;
				found = true;
				break;
			}
		}
	}
	LWLockRelease(horizon->lock);
	return found;
}

/*
 * horizon_getbitmap
 *	  amgetbitmap of a BRIN index on cq_xid: brin's bitmap without the
 *	  pages that cannot hold a row the scan wants (see above).
 */
static int64
horizon_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	Relation	heap;
	XLogRecPtr	horizon_lsn = InvalidXLogRecPtr;
	TIDBitmap  *all;
	TBMIterator *it;
	TBMIterateResult *page;
	BlockNumber nblocks;
	int64		result;

	heap = table_open(IndexGetRelation(RelationGetRelid(scan->indexRelation), false),
					  AccessShareLock);
	if (!scan_horizon(scan, heap, &horizon_lsn))
	{
		table_close(heap, AccessShareLock);
		return bringetbitmap(scan, tbm);
	}
	all = tbm_create(work_mem * 1024L, NULL);
	result = bringetbitmap(scan, all);
	nblocks = RelationGetNumberOfBlocks(heap);
	it = tbm_begin_iterate(all);
	while ((page = tbm_iterate(it)) != NULL)
	{
		if (page->blockno < nblocks)
		{
			Buffer		buf = ReadBuffer(heap, page->blockno);
			XLogRecPtr	page_lsn;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page_lsn = PageGetLSN(BufferGetPage(buf));
			UnlockReleaseBuffer(buf);
			if (page_lsn <= horizon_lsn)
				continue;		/* no row version newer than the horizon */
		}
		tbm_add_page(tbm, page->blockno);
	}
	tbm_end_iterate(it);
	tbm_free(all);
	table_close(heap, AccessShareLock);
	cq_source_sample_horizon();
	return result;
}

/*
 * cq_horizon_swap_getbitmap
 *	  Make horizon_getbitmap the amgetbitmap of an open BRIN index on one
 *	  xid8 column (this backend's relation cache entry keeps it until it
 *	  is rebuilt).
 */
void
cq_horizon_swap_getbitmap(Relation idx)
{
	if (idx->rd_indam->amgetbitmap == bringetbitmap && idx->rd_index != NULL &&
		idx->rd_index->indnatts == 1 && idx->rd_opcintype[0] == XID8OID)
		idx->rd_indam->amgetbitmap = horizon_getbitmap;
}
