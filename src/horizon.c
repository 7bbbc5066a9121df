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
#include "access/brin_page.h"
#include "access/brin_tuple.h"
#include "access/xact.h"
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
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/syscache.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "horizon.h"
#include "inval.h"
#include "stamp_type.h"

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
		uint64		v;
		int			strategy;

		if (key->sk_attno != 1 || (key->sk_flags & (SK_ISNULL | SK_SEARCHNULL | SK_SEARCHNOTNULL |
													 SK_SEARCHARRAY | SK_ROW_HEADER)) != 0)
			continue;
		/* xid8's comparisons, and cq.xid48's with xid8 or cq.xid48 */
		strategy = cq_stamp_key_strategy(key->sk_func.fn_oid, key->sk_argument, &v);

		if (strategy == BTGreaterEqualStrategyNumber || strategy == BTGreaterStrategyNumber ||
			strategy == BTEqualStrategyNumber)
		{
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
 * The summaries of a BRIN index on cq_xid as this backend last read them.
 *
 * bringetbitmap reads the revmap entry and the summary of every page range
 * of the table at each scan (~1,000 instructions a range: 2.7 M at 10M
 * rows, most of a small batch), though all but the last few ranges never
 * change.  Every change of a page of a WAL-logged BRIN index (a summary
 * widened, a placeholder inserted or replaced, a range desummarized, a
 * tuple moved, a revmap entry set, a page turned into a revmap page) is
 * WAL-logged and sets the page's LSN under its exclusive lock, and page
 * LSNs only grow.  So a summary decoded from a regular page is still that
 * page's content while the page's LSN is the one read then, and a revmap
 * page's entries likewise.  Each scan reads the metapage, every revmap page
 * and every regular page that holds a summary (about 20 pages at 10M rows),
 * each under its share lock as bringetbitmap reads them, and decodes only
 * what lies on pages whose LSN moved; the pages are read after the scan's
 * snapshot was taken, so every summary widened by a transaction that
 * committed before it is seen, as with bringetbitmap.  A range is left out
 * only when its summary cannot hold a value the scan's keys accept (all
 * NULL, or its max below the lower bound, or its min at or above the upper
 * bound); unsummarized ranges, placeholders and empty ranges are kept, a
 * superset of what bringetbitmap keeps.  Only for pg_cq's own minmax
 * opclass on xid8, keys of xid8 comparisons with non-null arguments, a
 * permanent index with WAL (the horizon's conditions), outside
 * serializable transactions; anything unexpected on a page (a tuple not
 * where its revmap entry says) drops the cache and falls back to
 * bringetbitmap for that scan.  The entries are keyed by the index's OID;
 * one whose index may be gone (a relcache invalidation of it, or of every
 * relation) is looked up in the catalog before the next scan through the
 * cache (sweep_summary_caches) and removed when its index no longer
 * exists, so the summaries of dropped indexes do not stay until the
 * backend exits.  (The invalidation only marks: it may come in the middle
 * of a scan, at a catalog lookup, while the scan uses the entry.)
 */
typedef struct CachedRange
{
	ItemPointerData tid;		/* the revmap's entry (invalid: unsummarized) */
	bool		known;			/* decoded from tid's page at page_lsn */
	bool		keep;			/* placeholder or empty range: always kept */
	bool		allnulls;
	uint64		min;
	uint64		max;
} CachedRange;

typedef struct SummaryCache
{
	Oid			index;			/* hash key */
	Oid			relfilenode;
	BlockNumber ppr;
	int64		nranges;		/* entries of ranges */
	CachedRange *ranges;
	BlockNumber nrevmap;		/* entries of revmap_lsn (block 1 on) */
	XLogRecPtr *revmap_lsn;
	BlockNumber npages;			/* entries of page_lsn (by index block) */
	XLogRecPtr *page_lsn;
	bool		recheck;		/* its index may have been dropped */
} SummaryCache;

static HTAB *summary_caches = NULL;
static bool summary_recheck = false;	/* some entry's recheck is set */

/*
 * cache_reset
 *	  Forget what entry holds (its index was rebuilt, or a page held
 *	  something unexpected).
 */
static void
cache_reset(SummaryCache *c, Oid relfilenode)
{
	if (c->ranges)
		pfree(c->ranges);
	if (c->revmap_lsn)
		pfree(c->revmap_lsn);
	if (c->page_lsn)
		pfree(c->page_lsn);
	c->relfilenode = relfilenode;
	c->ppr = 0;
	c->nranges = 0;
	c->ranges = NULL;
	c->nrevmap = 0;
	c->revmap_lsn = NULL;
	c->npages = 0;
	c->page_lsn = NULL;
}

/*
 * summary_cache_inval
 *	  Relcache invalidation callback: the entry of relid (every entry when
 *	  relid is InvalidOid) is to be checked before the next scan.
 */
static void
summary_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SummaryCache *c;

	if (summary_caches == NULL)
		return;
	if (OidIsValid(relid))
	{
		c = hash_search(summary_caches, &relid, HASH_FIND, NULL);
		if (c != NULL)
			c->recheck = summary_recheck = true;
		return;
	}
	hash_seq_init(&status, summary_caches);
	while ((c = hash_seq_search(&status)) != NULL)
		c->recheck = summary_recheck = true;
}

/*
 * sweep_summary_caches
 *	  Remove the entries marked by summary_cache_inval whose index no
 *	  longer exists (current, being scanned, does).
 */
static void
sweep_summary_caches(Oid current)
{
	HASH_SEQ_STATUS status;
	SummaryCache *c;

	if (!summary_recheck)
		return;
	summary_recheck = false;
	hash_seq_init(&status, summary_caches);
	while ((c = hash_seq_search(&status)) != NULL)
	{
		if (!c->recheck)
			continue;
		c->recheck = false;
		/* (a lookup may run invalidations: they only mark entries) */
		if (c->index == current || SearchSysCacheExists1(RELOID, ObjectIdGetDatum(c->index)))
			continue;
		elog(DEBUG1, "pg_cq: forgot the cached BRIN summaries of dropped index %u", c->index);
		cache_reset(c, InvalidOid);
		(void) hash_search(summary_caches, &c->index, HASH_REMOVE, NULL);
	}
}

/*
 * grow_array
 *	  *arr (of *n elements of size sz, zeroed) made at least want long.
 */
static void *
grow_array(void *arr, int64 *n, int64 want, Size sz)
{
	if (want <= *n)
		return arr;
	if (arr == NULL)
		arr = MemoryContextAllocZero(TopMemoryContext, want * sz);
	else
	{
		arr = repalloc(arr, want * sz);
		memset((char *) arr + *n * sz, 0, (want - *n) * sz);
	}
	*n = want;
	return arr;
}

/*
 * scan_bounds
 *	  The scan's keys as [lo, hi) on cq_xid; false when a key is not an
 *	  xid8 comparison with a non-null argument on the index's column.
 */
static bool
scan_bounds(IndexScanDesc scan, uint64 *lo, uint64 *hi)
{
	*lo = 0;
	*hi = PG_UINT64_MAX;
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		uint64		v;
		int			strategy;

		if (key->sk_attno != 1 || key->sk_flags != 0)
			return false;
		/* xid8's comparisons, and cq.xid48's with xid8 or cq.xid48 */
		strategy = cq_stamp_key_strategy(key->sk_func.fn_oid, key->sk_argument, &v);
		if (strategy == 0 || v == PG_UINT64_MAX)
			return false;
		if (strategy == BTGreaterEqualStrategyNumber || strategy == BTEqualStrategyNumber)
			*lo = Max(*lo, v);
		else if (strategy == BTGreaterStrategyNumber)
			*lo = Max(*lo, v + 1);
		if (strategy == BTLessStrategyNumber)
			*hi = Min(*hi, v);
		else if (strategy == BTLessEqualStrategyNumber || strategy == BTEqualStrategyNumber)
			*hi = Min(*hi, v + 1);
	}
	return true;
}

/*
 * decode_range
 *	  The summary of range rng from its tuple at c->ranges[rng].tid on the
 *	  share-locked page; false when the tuple is not there.  *bdesc and
 *	  *dtup are made by the first call of a scan and reused by the next
 *	  ones, as bringetbitmap does: a BrinMemTuple has a memory context of
 *	  its own, and one per range (brin_deform_tuple without one to reuse)
 *	  was a context and 8 kB of fresh memory for each of the 3,400 ranges
 *	  at 10M rows: ~70 ms of page first touches in a backend's first scan
 *	  of such a source (session 31).
 */
static bool
decode_range(SummaryCache *c, int64 rng, Page page, BrinDesc **bdesc, BrinMemTuple **dtup,
			 Relation idx)
{
	CachedRange *r = &c->ranges[rng];
	OffsetNumber off = ItemPointerGetOffsetNumber(&r->tid);
	ItemId		lp;
	BrinTuple  *tup;

	if (!BRIN_IS_REGULAR_PAGE(page) || off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, off);
	if (!ItemIdIsUsed(lp))
		return false;
	tup = (BrinTuple *) PageGetItem(page, lp);
	if (tup->bt_blkno != (BlockNumber) (rng * c->ppr))
		return false;
	r->known = true;
	r->keep = BrinTupleIsPlaceholder(tup) || BrinTupleIsEmptyRange(tup);
	if (!r->keep)
	{
		BrinMemTuple *d;

		if (*bdesc == NULL)
			*bdesc = brin_build_desc(idx);
		d = *dtup = brin_deform_tuple(*bdesc, tup, *dtup);
		r->allnulls = d->bt_columns[0].bv_allnulls;
		if (!r->allnulls)
		{
			/* xid8 by value, cq.xid48 by reference */
			bool		byval = TupleDescAttr((*bdesc)->bd_tupdesc, 0)->attbyval;

			r->min = cq_stamp_get(d->bt_columns[0].bv_values[0], byval);
			r->max = cq_stamp_get(d->bt_columns[0].bv_values[1], byval);
		}
	}
	return true;
}

/*
 * cached_getbitmap
 *	  bringetbitmap's pages (or more) for this scan from the cached
 *	  summaries (see above) into tbm; false when it cannot (the pages it
 *	  added are harmless: the caller then adds bringetbitmap's).
 */
static bool
cached_getbitmap(IndexScanDesc scan, Relation heap, TIDBitmap *tbm, int64 *npages)
{
	Relation	idx = scan->indexRelation;
	Oid			key = RelationGetRelid(idx);
	uint64		lo;
	uint64		hi;
	SummaryCache *c;
	bool		found;
	Buffer		buf;
	Page		page;
	BlockNumber ppr;
	BlockNumber last_revmap;
	BlockNumber nblocks;
	BlockNumber idx_blocks;
	int64		nranges;
	int64		n;
	BrinDesc   *bdesc = NULL;
	BrinMemTuple *dtup = NULL;
	bool	   *looked;			/* per index page: looked at in this scan */
	XLogRecPtr *seen;			/* its LSN at the first look */
	bool	   *unstable;		/* its LSN moved during this scan */
	bool		ok = true;

	if (IsolationIsSerializable() || !RelationNeedsWAL(idx) ||
		index_getprocid(idx, 1, BRIN_PROCNUM_OPCINFO) != F_BRIN_MINMAX_OPCINFO ||
		!scan_bounds(scan, &lo, &hi))
		return false;
	if (summary_caches == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SummaryCache);
		summary_caches = hash_create("pg_cq BRIN summaries", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		cq_relcache_callback(summary_cache_inval, (Datum) 0);
	}
	sweep_summary_caches(key);
	c = hash_search(summary_caches, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) c + sizeof(Oid), 0, sizeof(SummaryCache) - sizeof(Oid));
		c->relfilenode = InvalidOid;
	}
	if (c->relfilenode != idx->rd_node.relNode)
		cache_reset(c, idx->rd_node.relNode);

	buf = ReadBuffer(idx, BRIN_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	ppr = ((BrinMetaPageData *) PageGetContents(page))->pagesPerRange;
	last_revmap = ((BrinMetaPageData *) PageGetContents(page))->lastRevmapPage;
	UnlockReleaseBuffer(buf);
	idx_blocks = RelationGetNumberOfBlocks(idx);
	if (ppr == 0 || last_revmap >= idx_blocks)
		return false;
	if (c->ppr != ppr)
	{
		cache_reset(c, idx->rd_node.relNode);
		c->ppr = ppr;
	}
	nblocks = RelationGetNumberOfBlocks(heap);
	nranges = ((int64) nblocks + ppr - 1) / ppr;
	c->ranges = grow_array(c->ranges, &c->nranges,
						   Max(nranges, (int64) last_revmap * REVMAP_PAGE_MAXITEMS), sizeof(CachedRange));
	n = c->nrevmap;
	c->revmap_lsn = grow_array(c->revmap_lsn, &n, last_revmap, sizeof(XLogRecPtr));
	c->nrevmap = (BlockNumber) n;
	n = c->npages;
	c->page_lsn = grow_array(c->page_lsn, &n, idx_blocks, sizeof(XLogRecPtr));
	c->npages = (BlockNumber) n;

	/* the revmap: the entries of a page whose LSN moved are read again */
	for (BlockNumber r = 1; ok && r <= last_revmap; r++)
	{
		XLogRecPtr	lsn;

		buf = ReadBuffer(idx, r);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		lsn = PageGetLSN(page);
		if (!BRIN_IS_REVMAP_PAGE(page))
			ok = false;
		else if (lsn != c->revmap_lsn[r - 1])
		{
			RevmapContents *rm = (RevmapContents *) PageGetContents(page);
			int64		first = (int64) (r - 1) * REVMAP_PAGE_MAXITEMS;

			/* a summary that stayed where it was is checked by its page's LSN */
			for (int64 i = 0; i < REVMAP_PAGE_MAXITEMS; i++)
			{
				if (memcmp(&c->ranges[first + i].tid, &rm->rm_tids[i], sizeof(ItemPointerData)) != 0)
					c->ranges[first + i].known = false;
				c->ranges[first + i].tid = rm->rm_tids[i];
			}
			c->revmap_lsn[r - 1] = lsn;
		}
		UnlockReleaseBuffer(buf);
	}

	/* the summaries: decoded again where their page's LSN is not the cached one */
	looked = palloc0(sizeof(bool) * idx_blocks);
	seen = palloc0(sizeof(XLogRecPtr) * idx_blocks);
	unstable = palloc0(sizeof(bool) * idx_blocks);
	buf = InvalidBuffer;
	*npages = 0;
	for (int64 rng = 0; ok && rng < nranges; rng++)
	{
		CachedRange *r = &c->ranges[rng];
		bool		add = true;

		if (rng < (int64) last_revmap * REVMAP_PAGE_MAXITEMS && ItemPointerIsValid(&r->tid))
		{
			BlockNumber pb = ItemPointerGetBlockNumber(&r->tid);
			XLogRecPtr	lsn;

			if (pb <= last_revmap || pb >= idx_blocks)
			{
				ok = false;
				break;
			}
			if (!BufferIsValid(buf) || BufferGetBlockNumber(buf) != pb)
			{
				if (BufferIsValid(buf))
					UnlockReleaseBuffer(buf);
				buf = ReadBuffer(idx, pb);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
			}
			page = BufferGetPage(buf);
			lsn = PageGetLSN(page);
			if (!looked[pb])
			{
				looked[pb] = true;
				seen[pb] = lsn;
			}
			else if (seen[pb] != lsn)
				unstable[pb] = true;
			if ((!r->known || lsn != c->page_lsn[pb]) && !decode_range(c, rng, page, &bdesc, &dtup, idx))
			{
				ok = false;
				break;
			}
			add = r->keep || (!r->allnulls && r->max >= lo && r->min < hi);
		}
		else
			r->known = false;	/* unsummarized: kept */
		if (add)
		{
			BlockNumber end = Min((BlockNumber) ((rng + 1) * ppr), nblocks);

			for (BlockNumber b = (BlockNumber) (rng * ppr); b < end; b++)
				tbm_add_page(tbm, b);
			*npages += end - (BlockNumber) (rng * ppr);
		}
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
	/* ranges this scan did not look at are decoded again when it next does */
	for (int64 rng = nranges; rng < c->nranges; rng++)
		c->ranges[rng].known = false;
	/* a page is trusted at the LSN seen only if it held still during the scan */
	for (BlockNumber b = 0; ok && b < idx_blocks; b++)
		if (looked[b])
			c->page_lsn[b] = unstable[b] ? InvalidXLogRecPtr : seen[b];
	pfree(looked);
	pfree(seen);
	pfree(unstable);
	if (dtup)
	{
		MemoryContextDelete(dtup->bt_context);
		pfree(dtup);
	}
	if (bdesc)
		brin_free_desc(bdesc);
	if (!ok)
		cache_reset(c, idx->rd_node.relNode);
	return ok;
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
	int64		result;

	heap = table_open(IndexGetRelation(RelationGetRelid(scan->indexRelation), false),
					  AccessShareLock);
	if (!scan_horizon(scan, heap, &horizon_lsn))
	{
		table_close(heap, AccessShareLock);
		return bringetbitmap(scan, tbm);
	}
	all = tbm_create(work_mem * 1024L, NULL);
	if (cached_getbitmap(scan, heap, all, &result))
		result *= 10;			/* as bringetbitmap counts */
	else
		result = bringetbitmap(scan, all);

	/*
	 * Every page in `all` exists: cached_getbitmap and bringetbitmap add
	 * only pages below the table's size as they read it, and the table
	 * cannot shrink while we hold a lock on it (truncation takes ACCESS
	 * EXCLUSIVE).  So no size is read here again (an lseek a batch).
	 */
	it = tbm_begin_iterate(all);
	while ((page = tbm_iterate(it)) != NULL)
	{
		Buffer		buf = ReadBuffer(heap, page->blockno);
		XLogRecPtr	page_lsn;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page_lsn = PageGetLSN(BufferGetPage(buf));
		UnlockReleaseBuffer(buf);
		if (page_lsn <= horizon_lsn)
			continue;			/* no row version newer than the horizon */
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
 *	  xid8 or cq.xid48 column (this backend's relation cache entry keeps it until it
 *	  is rebuilt).
 */
void
cq_horizon_swap_getbitmap(Relation idx)
{
	if (idx->rd_indam->amgetbitmap == bringetbitmap && idx->rd_index != NULL &&
		idx->rd_index->indnatts == 1 && cq_stamp_type_ok(idx->rd_opcintype[0]))
		idx->rd_indam->amgetbitmap = horizon_getbitmap;
}
