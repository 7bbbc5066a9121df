/*-------------------------------------------------------------------------
 *
 * heappage.c
 *	  Heap pages of a batch-0 load written whole, outside shared buffers
 *	  (issue 12 goal 2): the rows of rowload.c's loads into an empty table
 *	  are placed on pages in private memory and each full page is written
 *	  once at the relation's end, as CREATE INDEX writes its pages
 *	  (nbtsort.c), instead of going through the buffer manager.
 *
 * Through the buffer manager, PostgreSQL 15 extends a heap one page at a
 * time: under the relation's extension lock, a zeroed page is written to
 * the file (smgrextend), a shared buffer is mapped for it (its first touch
 * is a page fault of this process), the rows are placed there, and COPY's
 * ring later writes the page out a second time.  At ~1M groups that was
 * 6-8 % of batch 0's CPU (bench/README.md, "Fold efficiency", round 15).
 * Here a page is filled in a private buffer (reused: no new memory per
 * page), up to HEAPPAGE_GROUP pages are WAL-logged together as full page
 * images (log_newpages: one record, the hole between the line pointers and
 * the tuples left out) when the relation needs WAL, and written by
 * smgrextend once each.
 *
 * Invariants that make this as safe as the buffered path:
 *	- Blocks are appended under the relation's extension lock, at the
 *	  length smgrnblocks gives under it: nobody else can hold a buffer of a
 *	  block that did not exist, and a concurrent insert through the buffer
 *	  manager extends after ours.  Readers see the rows as any other rows of
 *	  the inserting transaction: xmin is ours, cmin the load's command id.
 *	- WAL before data, and no checkpoint in between: the full page images
 *	  are logged and the pages written with DELAY_CHKPT_START set (cleared
 *	  on error too), so a checkpoint whose redo point follows the images
 *	  waits until the pages are in the file and their segments registered
 *	  for its fsync (smgrextend without skipFsync); one whose redo point
 *	  precedes them replays them after a crash.  Without WAL (an unlogged
 *	  table, or wal_level = minimal and a file created in this transaction,
 *	  which PostgreSQL syncs at commit), the segments are registered for the
 *	  checkpoint's fsync as the buffer manager's writes would be.
 *	- Only a heap whose changes need no logical decoding (log_newpages
 *	  carries no rows a decoder could read): cq_heappage_usable.
 *	- A row is prepared as heap_insert prepares it (heap_prepare_insert is
 *	  static): the transaction's xid and the command id, xmax invalid, TOAST
 *	  where it is too long; its t_ctid points at itself.  The statistics
 *	  count the rows inserted (pgstat_count_heap_insert).  No free space is
 *	  recorded (VACUUM does it, as after a table rewrite): later inserts
 *	  extend the table rather than fill the last page.
 *
 * Which loads and pages: rowload.c's loads with CQ_ROWLOAD_DIRECT (batch 0's
 * into empty tables), with cq.fold_direct_pages on from the block on where
 * COPY's ring would start writing its own pages out (the first ones stay in
 * shared buffers for the next batches, as a small target did before), with
 * always from the first.
 *
 * Memory: the page buffer and the keys of its rows, in the context current
 * at cq_heappage_begin.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "catalog/catalog.h"
#include "catalog/pg_am.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "storage/proc.h"
#include "storage/smgr.h"
#include "utils/rel.h"

#include "heappage.h"
#include "guc.h"

/* pages written together: log_newpages' limit per record */
#define HEAPPAGE_GROUP XLR_MAX_BLOCK_ID

struct CqHeapPages
{
	Relation	rel;
	TransactionId xid;
	CommandId	cid;
	Size		save_free;		/* the fillfactor's free space */
	char	   *pages;			/* HEAPPAGE_GROUP pages, BLCKSZ each */
	int			npages;			/* full pages waiting, then the one being filled */
	int32	   *h;				/* per page, per offset: the row's key hash */
	CqHeapPageKeys keys;		/* where the (h, TID) of written rows go, or NULL */
	void	   *keys_arg;
	int64		rows;
};

/*
 * cq_heappage_usable
 *	  May rel's new rows be written by this module?  A heap table (the heap
 *	  access method itself) whose rows logical decoding does not read, with
 *	  cq.fold_direct_pages on or always (which pages: rowload.c decides).
 */
bool
cq_heappage_usable(Relation rel)
{
	return cq_fold_direct_pages != CQ_DIRECT_OFF &&
		rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->rd_rel->relam == HEAP_TABLE_AM_OID &&
		!RelationIsLogicallyLogged(rel);
}

/*
 * cq_heappage_begin
 *	  Start writing rows to rel (cq_heappage_usable, locked by the caller
 *	  for its load) with command id cid.  keys (may be NULL) is called with
 *	  each written page's key hashes and TIDs.
 */
CqHeapPages *
cq_heappage_begin(Relation rel, CommandId cid, CqHeapPageKeys keys, void *keys_arg)
{
	CqHeapPages *hp = palloc0(sizeof(CqHeapPages));

	Assert(cq_heappage_usable(rel));
	hp->rel = rel;
	hp->xid = GetCurrentTransactionId();
	hp->cid = cid;
	hp->save_free = RelationGetTargetPageFreeSpace(rel, HEAP_DEFAULT_FILLFACTOR);
	hp->pages = palloc((Size) BLCKSZ * HEAPPAGE_GROUP);
	hp->h = palloc(sizeof(int32) * HEAPPAGE_GROUP * MaxHeapTuplesPerPage);
	hp->keys = keys;
	hp->keys_arg = keys_arg;
	/* as heap_multi_insert: a serializable reader of the table conflicts */
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	PageInit((Page) hp->pages, BLCKSZ, 0);
	return hp;
}

/* page i of the group */
static inline Page
group_page(CqHeapPages *hp, int i)
{
	return (Page) (hp->pages + (Size) i * BLCKSZ);
}

/*
 * write_group
 *	  Append the full pages (and with last the one being filled, if it has
 *	  rows) to the relation: under its extension lock, at its end, WAL first
 *	  with no checkpoint in between (see the file header).
 */
static void
write_group(CqHeapPages *hp, bool last)
{
	Relation	rel = hp->rel;
	int			n = hp->npages + ((last && PageGetMaxOffsetNumber(group_page(hp, hp->npages)) > 0) ? 1 : 0);
	BlockNumber blknos[HEAPPAGE_GROUP];
	Page		pages[HEAPPAGE_GROUP];
	BlockNumber first;
	bool		wal = RelationNeedsWAL(rel);

	if (n == 0)
		return;
	LockRelationForExtension(rel, ExclusiveLock);
	first = RelationGetNumberOfBlocks(rel);
	for (int i = 0; i < n; i++)
	{
		Page		page = group_page(hp, i);
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

		blknos[i] = first + i;
		pages[i] = page;
		/* each row's t_ctid is its own TID, as RelationPutHeapTuple sets it */
		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			HeapTupleHeader t = (HeapTupleHeader) PageGetItem(page, PageGetItemId(page, off));

			ItemPointerSet(&t->t_ctid, blknos[i], off);
		}
	}
	Assert((MyProc->delayChkptFlags & DELAY_CHKPT_START) == 0);
	MyProc->delayChkptFlags |= DELAY_CHKPT_START;
	PG_TRY();
	{
		if (wal)
			log_newpages(&rel->rd_node, MAIN_FORKNUM, n, blknos, pages, true);
		for (int i = 0; i < n; i++)
		{
			PageSetChecksumInplace(pages[i], blknos[i]);
			/* not skipFsync: the checkpoint fsyncs the segment (see the header) */
			smgrextend(RelationGetSmgr(rel), MAIN_FORKNUM, blknos[i], (char *) pages[i], false);
		}
	}
	PG_FINALLY();
	{
		MyProc->delayChkptFlags &= ~DELAY_CHKPT_START;
	}
	PG_END_TRY();
	UnlockRelationForExtension(rel, ExclusiveLock);
	if (hp->keys != NULL)
	{
		for (int i = 0; i < n; i++)
		{
			OffsetNumber maxoff = PageGetMaxOffsetNumber(pages[i]);

			hp->keys(hp->keys_arg, hp->h + i * MaxHeapTuplesPerPage, blknos[i], maxoff);
		}
	}
	hp->npages = 0;
	PageInit(group_page(hp, 0), BLCKSZ, 0);
}

/*
 * cq_heappage_add
 *	  Write tup (a row of the relation's columns, whose header is set here
 *	  as heap_insert sets it in its caller's tuple) whose key hash is h.
 */
void
cq_heappage_add(CqHeapPages *hp, HeapTuple tup, int32 h)
{
	HeapTuple	heaptup = tup;
	Page		page;
	OffsetNumber off;

	/* prepared as heap_prepare_insert prepares it */
	tup->t_data->t_infomask &= ~(HEAP_XACT_MASK);
	tup->t_data->t_infomask2 &= ~(HEAP2_XACT_MASK);
	tup->t_data->t_infomask |= HEAP_XMAX_INVALID;
	HeapTupleHeaderSetXmin(tup->t_data, hp->xid);
	HeapTupleHeaderSetCmin(tup->t_data, hp->cid);
	HeapTupleHeaderSetXmax(tup->t_data, 0);
	tup->t_tableOid = RelationGetRelid(hp->rel);
	if (HeapTupleHasExternal(tup) || tup->t_len > TOAST_TUPLE_THRESHOLD)
		heaptup = heap_toast_insert_or_update(hp->rel, tup, NULL, 0);
	if (heaptup->t_len > MaxHeapTupleSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("row is too big: size %zu, maximum size %zu",
						(size_t) heaptup->t_len, (size_t) MaxHeapTupleSize)));

	/* a page is full when the row would leave less than the fillfactor's space */
	page = group_page(hp, hp->npages);
	if (PageGetMaxOffsetNumber(page) > 0 &&
		PageGetHeapFreeSpace(page) < MAXALIGN(heaptup->t_len) + hp->save_free)
	{
		if (++hp->npages == HEAPPAGE_GROUP)
			write_group(hp, false);
		page = group_page(hp, hp->npages);
		PageInit(page, BLCKSZ, 0);
	}
	off = PageAddItem(page, (Item) heaptup->t_data, heaptup->t_len, InvalidOffsetNumber, false, true);
	if (off == InvalidOffsetNumber)
		elog(ERROR, "pg_cq: failed to add a row to a new heap page");
	hp->h[hp->npages * MaxHeapTuplesPerPage + off - 1] = h;
	hp->rows++;
	if (heaptup != tup)
		heap_freetuple(heaptup);
}

/*
 * cq_heappage_end
 *	  Write the pages still in memory; returns the rows written.  The
 *	  buffer is freed; the relation stays open.
 */
int64
cq_heappage_end(CqHeapPages *hp)
{
	int64		rows = hp->rows;

	write_group(hp, true);
	pgstat_count_heap_insert(hp->rel, rows);
	pfree(hp->pages);
	pfree(hp->h);
	pfree(hp);
	return rows;
}
