/*-------------------------------------------------------------------------
 *
 * brin_insert.c
 *	  Rows into the BRIN index on cq_xid of a tracked source: brininsert
 *	  without re-reading the index's metapage and revmap page for every row,
 *	  without the row's value unless its range has a summary, and without
 *	  the index call at all for a row whose range has none.  stamp.c puts
 *	  it on the write path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_page.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "lib/ilist.h"
#include "nodes/makefuncs.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "brin_insert.h"
#include "inval.h"
#include "stamp_type.h"

/*
 * The BRIN index on cq_xid.  PostgreSQL 15's brininsert() reads the index's
 * metapage and the revmap page of the row's page range for every row it is
 * given (about a quarter of what inserting a row into a tracked table
 * costs), though for nearly every row of a tracked source it then has
 * nothing to do: rows land in the table's last page range, which pg_cq
 * leaves unsummarized while it fills (cq_source_summarize), and an
 * unsummarized range has no index tuple to update.
 *
 * cq_brininsert does what brininsert does, keeping for the whole statement
 * (in indexInfo->ii_AmCache, like PostgreSQL 17) the metapage's figures and
 * a pin on the revmap page it read last: per row, it then only reads the
 * range's revmap entry.  A range with an
 * index tuple (summarized, or being summarized: a placeholder) goes to
 * brininsert itself.  This is safe against concurrent summarization for the
 * reason brininsert is: the row is in the heap before its revmap entry is
 * read, and a summarization puts the range's placeholder tuple in the
 * revmap before it scans the range (including rows of transactions in
 * progress); so either the entry read here is the placeholder or a summary
 * (brininsert updates it), or the scan will see the row (range_has_tuple
 * says why the entry may be read without the page's lock).  The revmap only
 * grows: pages past the cached last revmap page mean the metapage is read
 * again, never that the range is unsummarized.
 *
 * Nor does a row hand over its cq_xid: the statement's IndexInfo (its own
 * copy) names the row's tableoid as the index's column (values_from_heap),
 * so ExecInsertIndexTuples does not deform the stored row up to cq_xid, the
 * last column; a row whose range has an index tuple reads cq_xid back from
 * the table (heap_value) before brininsert widens the summary with it.
 * INSERT makes the cache at ExecutorStart (every row skips the deform),
 * COPY at its first row (which hands over its real value).
 *
 * It replaces aminsert in the relation cache entry of each BRIN index whose
 * key is of type xid8 (pg_cq's operator class cq.xid8_minmax_ops), when an
 * INSERT or COPY is about to write the table (the entry keeps it until it
 * is rebuilt).  The index stays a plain BRIN index in the catalog: nothing
 * changes for dump, restore, pg_upgrade or brin_summarize_range().
 *
 * The revmap pin is held by the resource owner that was current when it
 * was taken, and released when the statement's memory goes
 * (ii_Context's reset callback), at the end of a COPY (its ResultRelInfo
 * lives in longer memory), or, on error, by the resource owner itself:
 * a resource-release callback then forgets it.
 */
typedef struct BrinInsertCache
{
	const char *magic;			/* brin_cache_magic: ours, not brininsert's */
	void	   *brin_cache;		/* brininsert's own ii_AmCache (a BrinDesc) */
	BlockNumber pages_per_range;	/* from the metapage */
	BlockNumber last_revmap_page;	/* from the metapage (only grows) */
	Buffer		revmap_buf;		/* pinned revmap page, or InvalidBuffer */
	ResourceOwner owner;		/* holds the pin */
	uint64		seq;			/* creation order (end of a COPY) */
	dlist_node	node;			/* in pinned_caches while pinned */
	MemoryContextCallback reset;	/* on ii_Context */
	bool		autosummarize;	/* the index's option, at the first row */
	AttrNumber	heap_att;		/* > 0: later rows' values are read from
								 * the heap (values_from_heap) */
	BlockNumber range_start;	/* first heap block of the range whose... */
	volatile ItemPointerData *entry;	/* ...revmap entry (in revmap_buf) was
										 * read last, or NULL */
	volatile BlockNumber *last_revmap;	/* or: the metapage's lastRevmapPage
										 * (revmap_buf is the metapage), when
										 * no revmap page covered that range */
	BlockNumber range_mapblk;	/* the revmap page that would cover it */
	bool		gate_tried;		/* brin_gate_rows ran */
	ExprState	gate;			/* brin_row_gate's state, when installed */
	Relation	index;			/* the index (open for the statement) */
	uint8		value_copy[8];	/* heap_value's copy of a cq.xid48's bytes */
} BrinInsertCache;

static const char brin_cache_magic[] = "pg_cq brin insert cache";
static dlist_head pinned_caches = DLIST_STATIC_INIT(pinned_caches);
static uint64 brin_cache_seq = 0;

/*
 * What this backend knows of the BRIN indexes on xid8 it wrote last, one
 * slot per index (BRIN_RECENT_SLOTS, the oldest slot taken for another):
 *
 * - the shared buffers that the metapage and the revmap page were found in:
 *   a statement that writes the index again (a single-row INSERT after
 *   another) pins them with ReadRecentBuffer, which checks that they still
 *   hold the page, without the buffer mapping look-up;
 * - the metapage's figures and the storage they were read from, so that a
 *   single-row INSERT after another does not read the metapage again.
 *
 * Why the figures may be kept across statements and transactions (the
 * reads of range_has_tuple and cached_range_empty stay as argued there):
 * pages per range is written into the metapage when the index's storage is
 * built, and stays what it is for that storage (ALTER INDEX ... SET
 * (pages_per_range) takes effect at the next build); the last revmap page
 * only grows (a summarization extends the revmap, nothing shrinks it: BRIN
 * never truncates an index, desummarization clears entries), so a figure
 * read earlier is at most the current one, and a range past it reads the
 * metapage itself (range_has_tuple) before it concludes anything.  What
 * ends the figures is new storage: TRUNCATE, REINDEX, VACUUM FULL,
 * CLUSTER, ALTER ... SET TABLESPACE give the index a new relfilenode
 * (checked at every use), but a TRUNCATE of a table created or truncated in
 * the same transaction rebuilds the index in place, in the same relfilenode
 * and with the pages per range of its options then; every one of these
 * sends a relation cache invalidation of the index, which empties its slot
 * (brin_recent_inval; all slots when the whole cache is reset).  A statement
 * that writes the index holds its RowExclusiveLock, which none of them can
 * take meanwhile, and its own copy of the figures.
 */
typedef struct BrinRecent
{
	Oid			index;			/* InvalidOid: a free slot */
	RelFileNode node;			/* the storage the figures were read from */
	BlockNumber pages_per_range;	/* 0: not read */
	BlockNumber last_revmap_page;
	Buffer		meta;			/* where the metapage was found last */
	Buffer		revmap;			/* where a revmap page was found last */
} BrinRecent;

#define BRIN_RECENT_SLOTS 8

static BrinRecent recent_slots[BRIN_RECENT_SLOTS];
static int	recent_used = 0;	/* the slot used last */
static int	recent_next = 0;	/* the slot taken next */

/*
 * brin_recent
 *	  The slot of an index, taken (the oldest taken) if it has none.
 */
static inline BrinRecent *
brin_recent(Relation idx)
{
	Oid			relid = RelationGetRelid(idx);
	BrinRecent *r = &recent_slots[recent_used];

	if (likely(r->index == relid))
		return r;
	for (int i = 0; i < BRIN_RECENT_SLOTS; i++)
	{
		if (recent_slots[i].index == relid)
		{
			recent_used = i;
			return &recent_slots[i];
		}
	}
	recent_used = recent_next;
	recent_next = (recent_next + 1) % BRIN_RECENT_SLOTS;
	r = &recent_slots[recent_used];
	r->index = relid;
	r->pages_per_range = 0;
	r->meta = r->revmap = InvalidBuffer;
	return r;
}

/*
 * brin_recent_inval
 *	  Relation cache invalidation callback: forget what is known of the
 *	  index (of every index, for InvalidOid).
 */
static void
brin_recent_inval(Datum arg, Oid relid)
{
	for (int i = 0; i < BRIN_RECENT_SLOTS; i++)
	{
		if (!OidIsValid(relid) || recent_slots[i].index == relid)
		{
			recent_slots[i].index = InvalidOid;
			recent_slots[i].pages_per_range = 0;
			recent_slots[i].meta = recent_slots[i].revmap = InvalidBuffer;
		}
	}
}

/*
 * brin_cache_unpin
 *	  Release the cache's revmap pin, as the resource owner that took it.
 */
static void
brin_cache_unpin(BrinInsertCache *c)
{
	Buffer		buf = c->revmap_buf;
	ResourceOwner save = CurrentResourceOwner;

	if (!BufferIsValid(buf))
		return;
	c->revmap_buf = InvalidBuffer;
	c->entry = NULL;
	c->last_revmap = NULL;
	dlist_delete(&c->node);
	CurrentResourceOwner = c->owner;
	ReleaseBuffer(buf);
	CurrentResourceOwner = save;
}

/*
 * brin_cache_reset
 *	  Memory context callback: the statement's memory (ii_Context) goes.
 */
static void
brin_cache_reset(void *arg)
{
	brin_cache_unpin((BrinInsertCache *) arg);
}

/*
 * brin_cache_resowner
 *	  Resource-release callback: a resource owner released its buffer pins
 *	  (error, or a pin left at commit): the caches it held pins for forget
 *	  them.  CurrentResourceOwner is the owner being released.
 */
static void
brin_cache_resowner(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	dlist_mutable_iter it;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS)
		return;
	dlist_foreach_modify(it, &pinned_caches)
	{
		BrinInsertCache *c = dlist_container(BrinInsertCache, node, it.cur);

		if (c->owner == CurrentResourceOwner)
		{
			c->revmap_buf = InvalidBuffer;
			c->entry = NULL;
			c->last_revmap = NULL;
			dlist_delete(&c->node);
		}
	}
}

/*
 * cq_brin_unpin_since
 *	  Release the pins of the caches made after seq (the end of a COPY).
 */
void
cq_brin_unpin_since(uint64 seq)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &pinned_caches)
	{
		BrinInsertCache *c = dlist_container(BrinInsertCache, node, it.cur);

		if (c->seq > seq)
			brin_cache_unpin(c);
	}
}

/*
 * read_recent
 *	  Pin block blk of an index: in the buffer it was found in last (the
 *	  metapage's or a revmap page's, of the index's slot) if that still
 *	  holds it, else read it (and remember where).
 */
static Buffer
read_recent(Relation idx, BlockNumber blk)
{
	BrinRecent *r = brin_recent(idx);
	Buffer	   *recent = blk == BRIN_METAPAGE_BLKNO ? &r->meta : &r->revmap;

	if (BufferIsValid(*recent) && ReadRecentBuffer(idx->rd_node, MAIN_FORKNUM, blk, *recent))
		return *recent;
	*recent = ReadBuffer(idx, blk);
	return *recent;
}

/*
 * brin_read_meta
 *	  Read pages per range and the last revmap page from the metapage.
 */
static void
brin_read_meta(BrinInsertCache *c, Relation idx)
{
	Buffer		meta = read_recent(idx, BRIN_METAPAGE_BLKNO);
	BrinRecent *r;
	BrinMetaPageData *md;

	LockBuffer(meta, BUFFER_LOCK_SHARE);
	md = (BrinMetaPageData *) PageGetContents(BufferGetPage(meta));
	c->pages_per_range = md->pagesPerRange;
	c->last_revmap_page = md->lastRevmapPage;
	UnlockReleaseBuffer(meta);
	r = brin_recent(idx);
	r->node = idx->rd_node;
	r->pages_per_range = c->pages_per_range;
	r->last_revmap_page = c->last_revmap_page;
}

/*
 * brin_recent_meta
 *	  The metapage's figures, from what was read last if it was read from
 *	  the same storage and no invalidation of the index came since, else
 *	  from the metapage.
 */
static void
brin_recent_meta(BrinInsertCache *c, Relation idx)
{
	BrinRecent *r = brin_recent(idx);

	if (r->pages_per_range > 0 && RelFileNodeEquals(r->node, idx->rd_node))
	{
		c->pages_per_range = r->pages_per_range;
		c->last_revmap_page = r->last_revmap_page;
		return;
	}
	brin_read_meta(c, idx);
}

/*
 * cache_pin
 *	  Make block blk of the index (the metapage or a revmap page) the one
 *	  the cache keeps pinned, held by the current resource owner.
 */
static void
cache_pin(BrinInsertCache *c, Relation idx, BlockNumber blk)
{
	if (BufferIsValid(c->revmap_buf) && BufferGetBlockNumber(c->revmap_buf) == blk)
		return;
	brin_cache_unpin(c);
	c->revmap_buf = read_recent(idx, blk);
	c->owner = CurrentResourceOwner;
	dlist_push_head(&pinned_caches, &c->node);
}

/*
 * range_has_tuple
 *	  Does the revmap point the range of heap block blk at an index tuple
 *	  (a summary or a placeholder)?
 *
 * Past the heap blocks the revmap's pages cover (1,360 ranges a page: 43,520
 * heap pages, 340 MB, at pg_cq's 32 pages per range) no range has a tuple
 * until a summarization extends the revmap, which pg_cq's batches do only
 * for full ranges: every row of a growing table lands there.  Such a range
 * is kept with a pin on the metapage, and later rows in it read the
 * metapage's last revmap page without the page's lock (cached_range_empty),
 * instead of pinning, locking and reading the metapage each (which also
 * made two writers of a table contend for its buffer).
 */
static pg_noinline bool
range_has_tuple(BrinInsertCache *c, Relation idx, BlockNumber blk)
{
	BlockNumber range = blk / c->pages_per_range;
	BlockNumber mapblk = range / REVMAP_PAGE_MAXITEMS + 1;	/* after the metapage */
	RevmapContents *contents;

	if (mapblk > c->last_revmap_page)
	{
		BrinMetaPageData *md;

		/*
		 * The revmap may have grown since it was read: look at the metapage
		 * (pinned for the range's later rows), as cached_range_empty does
		 * and for the reason the entry is read without a lock below.
		 */
		cache_pin(c, idx, BRIN_METAPAGE_BLKNO);
		md = (BrinMetaPageData *) PageGetContents(BufferGetPage(c->revmap_buf));
		c->last_revmap = (volatile BlockNumber *) &md->lastRevmapPage;
		c->range_mapblk = mapblk;
		c->range_start = range * c->pages_per_range;
		pg_memory_barrier();
		if (mapblk > *c->last_revmap)
			return false;		/* no revmap page covers the range yet */
		brin_read_meta(c, idx);
	}
	cache_pin(c, idx, mapblk);
	c->last_revmap = NULL;

	/*
	 * The entry is read without the page's content lock (which every
	 * writer of the table would otherwise take and release, on the same
	 * cache line, for every row).  What matters is only whether its offset
	 * number (one aligned uint16) is 0, and a stale 0 cannot hide a
	 * summarization that might miss the row: the summarizer sets the entry
	 * (placeholder) under the exclusive lock before it locks the row's heap
	 * page to scan it, and this backend released its lock on that page
	 * (heap_insert) before getting here.  If the summarizer's scan locked
	 * the page first, the placeholder was set before this backend locked
	 * the page, so the read below (after a full barrier) sees it;
	 * otherwise the scan sees the row.  The pinned page stays a revmap page
	 * (the revmap only grows) and is not evicted.  The same holds for the
	 * metapage's last revmap page, which a summarizer extending the revmap
	 * sets (under the metapage's exclusive lock) before the placeholder.
	 */
	contents = (RevmapContents *) PageGetContents(BufferGetPage(c->revmap_buf));
	c->entry = (volatile ItemPointerData *) &contents->rm_tids[range % REVMAP_PAGE_MAXITEMS];
	c->range_start = range * c->pages_per_range;
	pg_memory_barrier();
	return c->entry->ip_posid != InvalidOffsetNumber;
}

/*
 * cq_brin_row_in_summary
 *	  Does the revmap point the range of the row at tid, which this backend
 *	  has just inserted, at an index tuple (a summary or a placeholder):
 *	  must the row go to the index?  For the row of a single-row INSERT
 *	  that skipped ExecInsertIndexTuples (stamp.c, defer_row), asked at the
 *	  statement's end instead, without a statement cache: range_has_tuple's
 *	  reading (safe against a concurrent summarization for the reasons given
 *	  there), the page pinned only while its entry is read.  False after
 *	  the check index_insert would have made (the gate's, brin_row_gate).
 */
bool
cq_brin_row_in_summary(Relation idx, ItemPointer tid)
{
	BrinInsertCache c;
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	BlockNumber range;
	BlockNumber mapblk;
	bool		found = true;

	brin_recent_meta(&c, idx);
	range = blk / c.pages_per_range;
	mapblk = range / REVMAP_PAGE_MAXITEMS + 1;	/* after the metapage */
	if (mapblk > c.last_revmap_page)
	{
		/* the revmap may have grown since it was read: the metapage says */
		Buffer		meta = read_recent(idx, BRIN_METAPAGE_BLKNO);
		volatile BlockNumber *last;

		last = (volatile BlockNumber *) &((BrinMetaPageData *) PageGetContents(BufferGetPage(meta)))->lastRevmapPage;
		pg_memory_barrier();
		found = mapblk <= *last;
		ReleaseBuffer(meta);
		if (found)
			brin_read_meta(&c, idx);
	}
	if (found)
	{
		Buffer		buf = read_recent(idx, mapblk);
		volatile ItemPointerData *entry;

		entry = &((RevmapContents *) PageGetContents(BufferGetPage(buf)))->rm_tids[range % REVMAP_PAGE_MAXITEMS];
		pg_memory_barrier();
		found = entry->ip_posid != InvalidOffsetNumber;
		ReleaseBuffer(buf);
	}
	if (!found && IsolationIsSerializable())
		CheckForSerializableConflictIn(idx, NULL, InvalidBlockNumber);
	return found;
}

/*
 * cached_range_empty
 *	  Is heap block blk in the range read last (range_has_tuple), which has
 *	  no index tuple still?  1: yes; 0: it has one; -1: another range, or
 *	  the revmap grew since it had no page for the range (read it again).
 */
static inline int
cached_range_empty(BrinInsertCache *c, BlockNumber blk)
{
	if (blk - c->range_start >= c->pages_per_range)
		return -1;
	if (c->entry != NULL)
	{
		pg_memory_barrier();
		return c->entry->ip_posid == InvalidOffsetNumber;
	}
	if (c->last_revmap != NULL)
	{
		pg_memory_barrier();
		return *c->last_revmap < c->range_mapblk ? 1 : -1;
	}
	return -1;
}

static bool brin_insert_slow(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
							 Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
							 IndexInfo *indexInfo);

/*
 * values_from_heap
 *	  Stop FormIndexDatum from reading the indexed column of later rows
 *	  (which, being the table's last column as cq_xid usually is, costs a
 *	  deform of the whole stored row, a third of what the index adds to an
 *	  insert): the statement's IndexInfo (its own copy, built by
 *	  ExecOpenIndices) takes the row's tableoid instead, which the slot
 *	  holds.  Nearly every row lands in a range without an index tuple and
 *	  needs no value; the others read it from the row in the table
 *	  (heap_value).  Only for a plain column of a heap table, by value, and
 *	  not for CREATE INDEX CONCURRENTLY's validation (ii_Concurrent), whose
 *	  TIDs are the roots of HOT chains.
 */
static pg_noinline void
values_from_heap(BrinInsertCache *c, Relation heap, IndexInfo *indexInfo)
{
	AttrNumber	att = indexInfo->ii_IndexAttrNumbers[0];

	if (heap == NULL || heap->rd_rel->relam != HEAP_TABLE_AM_OID || indexInfo->ii_NumIndexAttrs != 1 ||
		att <= 0 || att > RelationGetDescr(heap)->natts || indexInfo->ii_Expressions != NIL ||
		indexInfo->ii_Concurrent || !TupleDescAttr(RelationGetDescr(heap), att - 1)->attbyval)
		return;
	c->heap_att = att;
	indexInfo->ii_IndexAttrNumbers[0] = TableOidAttributeNumber;
}

/*
 * heap_value
 *	  The indexed column of the row at tid, which this backend has just
 *	  written (so it is there, and stays while its transaction runs).
 */
static Datum
heap_value(BrinInsertCache *c, Relation heap, ItemPointer tid, bool *isnull)
{
	HeapTupleData tuple;
	Buffer		buf;
	Datum		value;

	tuple.t_self = *tid;
	if (!heap_fetch(heap, SnapshotAny, &tuple, &buf, true))
		elog(ERROR, "pg_cq: row (%u,%u) of table \"%s\" not found",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid), RelationGetRelationName(heap));
	value = heap_getattr(&tuple, c->heap_att, RelationGetDescr(heap), isnull);

	/*
	 * An xid8 is by value; a cq.xid48 points into the page, which may go
	 * once unpinned: its 6 bytes are copied first (into the cache, no
	 * palloc a row; brininsert copies what it keeps).
	 */
	if (!*isnull && !TupleDescAttr(RelationGetDescr(heap), c->heap_att - 1)->attbyval)
	{
		memcpy(c->value_copy, DatumGetPointer(value), CQ_XID48_LEN);
		value = PointerGetDatum(c->value_copy);
	}
	ReleaseBuffer(buf);
	return value;
}

/*
 * brin_cache_make
 *	  The statement's cache, at its first row (for the index in indexInfo).
 */
static pg_noinline BrinInsertCache *
brin_cache_make(Relation idx, Relation heap, IndexInfo *indexInfo)
{
	BrinInsertCache *c = MemoryContextAllocZero(indexInfo->ii_Context, sizeof(BrinInsertCache));

	c->magic = brin_cache_magic;
	c->revmap_buf = InvalidBuffer;
	c->seq = ++brin_cache_seq;
	brin_recent_meta(c, idx);
	c->autosummarize = BrinGetAutoSummarize(idx);
	c->reset.func = brin_cache_reset;
	c->reset.arg = c;
	MemoryContextRegisterResetCallback(indexInfo->ii_Context, &c->reset);
	indexInfo->ii_AmCache = c;
	return c;
}

/*
 * brin_row_gate
 *	  The evalfunc of the statement's index predicate: does this row go to
 *	  index_insert?
 *
 * The rows that need no index call at all.  ExecInsertIndexTuples calls
 * FormIndexDatum and index_insert for every row and index, about 170
 * instructions a row for the BRIN index on cq_xid, though nearly every row
 * lands in a range without an index tuple, where cq_brininsert then does
 * nothing.  So the statement's IndexInfo (its own copy, as for
 * values_from_heap) gets a predicate, as a partial index has, whose state
 * (ii_PredicateState, which ExecInsertIndexTuples evaluates when
 * ii_Predicate is not empty) is a function of ours: it reads the inserted
 * row's block from the slot (ExecInsertIndexTuples sets it as the scan tuple
 * of the expression context, its tts_tid set by the insert) and says false
 * for a row in the range read last that still has no index tuple, or in
 * another range whose revmap entry it then reads and finds empty (what
 * cq_brininsert answers without calling brininsert), after doing what
 * index_insert does before it calls the access method (the serializable
 * conflict check on the index); true sends the row on to index_insert and
 * cq_brininsert as before.  An index that a REINDEX (or CLUSTER, VACUUM
 * FULL) of this backend is rebuilding or has yet to rebuild gets no gate:
 * checked once, where the gate is installed (brin_gate_rows), not for every
 * row (~10 instructions), because that cannot change while the statement
 * runs: a statement nested in a rebuild (user code an index expression
 * runs) ends before the rebuild moves on, and a rebuild cannot start on
 * an index the statement has open (CheckTableNotInUse).  The decision is
 * cached_range_empty's and range_has_tuple's, so the reasons it is safe
 * against a concurrent summarization are those given at range_has_tuple.  Not with
 * autosummarize (brininsert is asked at the first row of every range), for
 * a partial index, or for CREATE INDEX CONCURRENTLY's validation.  The
 * state lives in the statement's cache (BrinInsertCache.gate).
 */
static Datum
brin_row_gate(ExprState *state, ExprContext *econtext, bool *isnull)
{
	BrinInsertCache *c = (BrinInsertCache *) ((char *) state - offsetof(BrinInsertCache, gate));
	BlockNumber blk = ItemPointerGetBlockNumber(&econtext->ecxt_scantuple->tts_tid);
	int			known = cached_range_empty(c, blk);

	*isnull = false;
	/* another range (or the statement's first row): read its entry */
	if (unlikely(known != 1) && (known == 0 || range_has_tuple(c, c->index, blk)))
		return BoolGetDatum(true);

	/*
	 * index_insert's check, called only in a serializable transaction: it
	 * returns at once in any other (a transaction gets the serializable
	 * state it checks, MySerializableXact, only when its isolation level is
	 * serializable); the call was a third of what the gate cost a row.
	 */
	if (unlikely(IsolationIsSerializable()))
		CheckForSerializableConflictIn(c->index, NULL, InvalidBlockNumber);
	return BoolGetDatum(false);
}

/* the gates of statements in progress (brin_heap.c) */
CqBrinHeap *cq_brin_gates = NULL;

/* heap's access method, and heap's with tuple_insert and multi_insert wrapped */
static const TableAmRoutine *heap_am = NULL;
static TableAmRoutine gate_am;

/*
 * gate_lookup
 *	  The innermost gate of a table whose access method is gate_am but is
 *	  not the innermost gate's table, or NULL: then the statement that
 *	  installed it ended (an error ended it before cq_brin_heap_end), and
 *	  the table gets heap's back (the statement inserting now has its
 *	  indexes in its ResultRelInfo).
 */
static pg_noinline CqBrinHeap *
gate_lookup(Relation rel)
{
	for (CqBrinHeap *g = cq_brin_gates; g != NULL; g = g->next)
		if (RelationGetRelid(g->heap) == RelationGetRelid(rel))
			return g;
	rel->rd_tableam = heap_am;
	return NULL;
}

/*
 * gate_index_row
 *	  index_insert for a row whose range has an index tuple (cq_brininsert
 *	  then widens the summary).
 */
static pg_noinline void
gate_index_row(CqBrinHeap *g, Relation rel, TupleTableSlot *slot)
{
	Datum		value;
	bool		isnull;

	value = slot_getattr(slot, g->att, &isnull);
	index_insert(g->index, &value, &isnull, &slot->tts_tid, rel, UNIQUE_CHECK_NO, false, g->info);
}

/*
 * gate_rows
 *	  brin_row_gate for rows just inserted into the heap of a gated table
 *	  (brin_heap.c), outside ExecInsertIndexTuples: each row whose range
 *	  has an index tuple goes to index_insert.  The statement's cache and
 *	  gate are in the gate's IndexInfo (cq_brin_heap_begin_open checked).
 *	  The reasons it is safe against a concurrent summarization are those
 *	  given at range_has_tuple: every row is in the heap before the barrier
 *	  below, and the revmap entries are read after it (what
 *	  cached_range_empty reads, without its barrier for every row).
 */
static inline void
gate_rows(Relation rel, TupleTableSlot **slots, int nslots)
{
	CqBrinHeap *g = cq_brin_gates;
	BrinInsertCache *c;

	if (unlikely(g == NULL || RelationGetRelid(g->heap) != RelationGetRelid(rel)) &&
		(g = gate_lookup(rel)) == NULL)
		return;
	g->rows += nslots;
	c = g->info->ii_AmCache;
	pg_memory_barrier();
	for (int i = 0; i < nslots; i++)
	{
		BlockNumber blk = ItemPointerGetBlockNumber(&slots[i]->tts_tid);
		int			known;

		if (blk - c->range_start >= c->pages_per_range)
			known = -1;
		else if (c->entry != NULL)
			known = c->entry->ip_posid == InvalidOffsetNumber;
		else if (c->last_revmap != NULL)
			known = *c->last_revmap < c->range_mapblk ? 1 : -1;
		else
			known = -1;
		if (unlikely(known != 1) && (known == 0 || range_has_tuple(c, c->index, blk)))
			gate_index_row(g, rel, slots[i]);
		else if (unlikely(IsolationIsSerializable()))
			CheckForSerializableConflictIn(c->index, NULL, InvalidBlockNumber);
	}
}

static void
gate_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid, int options,
				  struct BulkInsertStateData *bistate)
{
	heap_am->tuple_insert(rel, slot, cid, options, bistate);
	gate_rows(rel, &slot, 1);
}

static void
gate_multi_insert(Relation rel, TupleTableSlot **slots, int nslots, CommandId cid, int options,
				  struct BulkInsertStateData *bistate)
{
	heap_am->multi_insert(rel, slots, nslots, cid, options, bistate);
	gate_rows(rel, slots, nslots);
}

/*
 * cq_brin_gate_am
 *	  Heap's access method with tuple_insert and multi_insert wrapped: each
 *	  row then meets the BRIN index of the innermost gate of its table.
 */
const TableAmRoutine *
cq_brin_gate_am(void)
{
	if (heap_am == NULL)
	{
		heap_am = GetHeapamTableAmRoutine();
		gate_am = *heap_am;
		gate_am.tuple_insert = gate_tuple_insert;
		gate_am.multi_insert = gate_multi_insert;
	}
	return &gate_am;
}

/*
 * cq_brin_has_gate
 *	  Did cq_brin_statement_begin give indexInfo the statement's cache and
 *	  gate?
 */
bool
cq_brin_has_gate(IndexInfo *indexInfo)
{
	BrinInsertCache *c = indexInfo->ii_AmCache;

	return c != NULL && c->magic == brin_cache_magic && indexInfo->ii_PredicateState == &c->gate;
}

/*
 * brin_gate_rows
 *	  Gate the statement's rows (brin_row_gate): an INSERT's from its
 *	  ExecutorStart on (so the row of a single-row INSERT reads its revmap
 *	  entry in the gate, without FormIndexDatum and index_insert), a COPY's
 *	  from its first row that reaches cq_brininsert.
 */
static pg_noinline void
brin_gate_rows(BrinInsertCache *c, Relation idx, IndexInfo *indexInfo)
{
	/* the predicate's expression, never evaluated (its state is the gate) */
	static List *gate_predicate = NIL;

	c->gate_tried = true;
	if (c->autosummarize || indexInfo->ii_Predicate != NIL || indexInfo->ii_PredicateState != NULL ||
		indexInfo->ii_Concurrent || ReindexIsProcessingIndex(RelationGetRelid(idx)))
		return;
	if (gate_predicate == NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		gate_predicate = list_make1(makeBoolConst(true, false));
		MemoryContextSwitchTo(old);
	}
	c->gate.type = T_ExprState;
	c->gate.flags = EEO_FLAG_IS_QUAL;
	c->gate.evalfunc = brin_row_gate;
	c->index = idx;
	indexInfo->ii_Predicate = gate_predicate;
	indexInfo->ii_PredicateState = &c->gate;
}

/*
 * brin_statement_cache
 *	  The statement's cache, with the row value read from the heap
 *	  (values_from_heap).
 */
static BrinInsertCache *
brin_statement_cache(Relation idx, Relation heap, IndexInfo *indexInfo)
{
	BrinInsertCache *c = brin_cache_make(idx, heap, indexInfo);

	values_from_heap(c, heap, indexInfo);
	return c;
}

/*
 * brin_insert_summary
 *	  brininsert, for a row whose range has an index tuple (or whose insert
 *	  asks for autosummarization): with the row's value read from the table
 *	  unless values[] hold it (the statement's first row).
 */
static pg_noinline bool
brin_insert_summary(BrinInsertCache *c, bool values_given, Relation idx, Datum *values, bool *isnull,
					ItemPointer heaptid, Relation heap, IndexUniqueCheck checkUnique,
					bool indexUnchanged, IndexInfo *indexInfo)
{
	Datum		value;
	bool		null;
	bool		result;

	if (c->heap_att > 0 && !values_given)
	{
		value = heap_value(c, heap, heaptid, &null);
		values = &value;
		isnull = &null;
	}
	indexInfo->ii_AmCache = c->brin_cache;
	result = brininsert(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
	c->brin_cache = indexInfo->ii_AmCache;
	indexInfo->ii_AmCache = c;
	return result;
}

/*
 * cq_brininsert
 *	  aminsert of a BRIN index on xid8: brininsert, which does nothing when
 *	  the row's range has no index tuple, without reading the metapage and
 *	  the revmap page for every row, and without the row's value unless the
 *	  range has an index tuple (values_from_heap).  The revmap entry of the
 *	  range read last is kept: a row in the same range reads it again, and
 *	  nothing else.
 */
static bool
cq_brininsert(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
			  Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			  IndexInfo *indexInfo)
{
	BrinInsertCache *c = indexInfo->ii_AmCache;

	/* a row in the range of the row before: read its entry again */
	if (likely(c != NULL && c->magic == brin_cache_magic && !c->autosummarize &&
			   cached_range_empty(c, ItemPointerGetBlockNumber(heaptid)) == 1))
		return false;
	return brin_insert_slow(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
}

/*
 * brin_insert_slow
 *	  cq_brininsert, for the first row of a statement and rows in another
 *	  range than the row before, or in a range with an index tuple.
 */
static pg_noinline bool
brin_insert_slow(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
				 Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
				 IndexInfo *indexInfo)
{
	BrinInsertCache *c = indexInfo->ii_AmCache;
	BlockNumber blk = ItemPointerGetBlockNumber(heaptid);
	bool		first_row = false;

	if (c == NULL)
	{
		c = brin_statement_cache(idx, heap, indexInfo);
		first_row = true;		/* values[] are this row's */
	}
	else if (c->magic != brin_cache_magic)
		/* brininsert's cache: the statement began before the swap */
		return brininsert(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
	if (!c->gate_tried)
		brin_gate_rows(c, idx, indexInfo);

	/*
	 * The first row of a range's first page, with autosummarize: brininsert
	 * asks autovacuum to summarize the previous range.
	 */
	if (!(c->autosummarize && blk > 0 && blk % c->pages_per_range == 0 &&
		  ItemPointerGetOffsetNumber(heaptid) == FirstOffsetNumber))
	{
		int			known = cached_range_empty(c, blk);

		/* the range of the row before: its entry was read again */
		if (known == 1 || (known == -1 && !range_has_tuple(c, idx, blk)))
			return false;
	}
	return brin_insert_summary(c, first_row, idx, values, isnull, heaptid, heap, checkUnique,
							   indexUnchanged, indexInfo);
}

/*
 * cq_brin_swap_aminsert
 *	  Make cq_brininsert the aminsert of an open index, if it is a BRIN
 *	  index on one column of type xid8 or cq.xid48.
 */
void
cq_brin_swap_aminsert(Relation idx)
{
	if (idx->rd_indam->aminsert == brininsert && idx->rd_index != NULL &&
		idx->rd_index->indnatts == 1 && cq_stamp_type_ok(idx->rd_opcintype[0]))
		idx->rd_indam->aminsert = cq_brininsert;
}

/*
 * cq_brin_is_ours
 *	  Is cq_brininsert the aminsert of an open index?
 */
bool
cq_brin_is_ours(Relation idx)
{
	return idx->rd_indam->aminsert == cq_brininsert;
}

/*
 * cq_brin_swap_table
 *	  cq_brin_swap_aminsert for the indexes of a table about to be written by
 *	  COPY, which opens them itself (with the same lock), or whose stamp
 *	  trigger fires for the first time in a statement (a partition that
 *	  rows are routed to: its indexes are open already).
 */
void
cq_brin_swap_table(Relation rel)
{
	List	   *indexes;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_RELATION || !rel->rd_rel->relhasindex)
		return;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), RowExclusiveLock);

		cq_brin_swap_aminsert(idx);
		index_close(idx, NoLock);
	}
	list_free(indexes);
}

/*
 * cq_brin_statement_begin
 *	  An INSERT's statement cache and gate for an index whose aminsert is
 *	  cq_brininsert, made at its ExecutorStart (in the statement's memory,
 *	  the current context): FormIndexDatum skips the column from the first
 *	  row on (values_from_heap), and the gate decides from the first row on
 *	  (brin_row_gate).  Not for an index that takes no inserts yet (CREATE
 *	  INDEX CONCURRENTLY or REINDEX CONCURRENTLY before its build: its file
 *	  is still empty, and reading its metapage failed every INSERT into the
 *	  table meanwhile); ExecInsertIndexTuples passes it by.
 */
void
cq_brin_statement_begin(Relation idx, Relation heap, IndexInfo *indexInfo)
{
	if (idx->rd_indam->aminsert == cq_brininsert && indexInfo->ii_AmCache == NULL &&
		indexInfo->ii_ReadyForInserts)
		brin_gate_rows(brin_statement_cache(idx, heap, indexInfo), idx, indexInfo);
}

/*
 * cq_brin_row_can_wait
 *	  May the row of a single-row INSERT skip ExecInsertIndexTuples for
 *	  this index, to ask cq_brin_row_in_summary at the statement's end
 *	  (stamp.c, defer_row)?  When the index would get the gate
 *	  (brin_gate_rows' conditions) and takes inserts.
 */
bool
cq_brin_row_can_wait(Relation idx, IndexInfo *indexInfo)
{
	return idx->rd_indam->aminsert == cq_brininsert && indexInfo->ii_AmCache == NULL &&
		indexInfo->ii_ReadyForInserts && !BrinGetAutoSummarize(idx) && indexInfo->ii_Predicate == NIL &&
		indexInfo->ii_PredicateState == NULL && !indexInfo->ii_Concurrent &&
		!ReindexIsProcessingIndex(RelationGetRelid(idx));
}

/*
 * cq_brin_cache_seq
 *	  The creation number of the statement cache made last: those made
 *	  after it are released by cq_brin_unpin_since (the end of a COPY).
 */
uint64
cq_brin_cache_seq(void)
{
	return brin_cache_seq;
}

/*
 * cq_brin_insert_init
 *	  Forget the pins a resource owner releases (brin_cache_resowner), and
 *	  what is known of an index whose relation cache entry is invalidated
 *	  (brin_recent_inval); called from cq_stamp_init.
 */
void
cq_brin_insert_init(void)
{
	RegisterResourceReleaseCallback(brin_cache_resowner, NULL);
	cq_relcache_callback(brin_recent_inval, (Datum) 0);
}
