/*-------------------------------------------------------------------------
 *
 * delta_page.c
 *	  One page of the bitmap of an incremental batch's new rows, for
 *	  delta_scan.c: its visible rows, with the visibility of a run of rows
 *	  of one inserting transaction decided once (issue 12, goal 3: the
 *	  fold's CPU per ingested row).
 *
 * The BRIN index on cq_xid gives lossy pages: heapam's bitmap scan
 * (heapam_scan_bitmap_next_block) tests every row of such a page with
 * HeapTupleSatisfiesVisibility.  The batch reads the rows just written:
 * their xmin is not yet hinted committed, so each row asks whether its
 * xmin is the current transaction, in the snapshot, committed in the clog,
 * and whether the commit record is flushed far enough to set the hint
 * bit (with synchronous_commit = off it is often not, and the next row
 * asks again): ~250 instructions a row of bench/ingest_cg.sh's batch
 * (session 41), where a page holds ~60 rows of one or two 1000-row
 * INSERTs.
 *
 * HeapTupleSatisfiesMVCC's answer for a row whose xmax is invalid (hinted
 * HEAP_XMAX_INVALID, as an inserted row is) and which was not moved by a
 * pre-9.0 VACUUM FULL depends only on its xmin and its xmin hint bits,
 * unless the xmin is the current transaction (then on the row's cmin):
 * the current transaction aside, "in the snapshot", "committed" and
 * "aborted" are fixed for a snapshot once the transaction has ended.  So
 * here the first row of each such run on the page is tested by heapam's
 * own function, and the next rows with the same xmin and the same hint
 * bits get its answer and the xmin hint bit it set (SetHintBits'
 * conditions, the commit record flushed or the page's LSN past it, held
 * for the first on the same page and cannot become false: both LSNs only
 * advance); the page is marked dirty for the hints as SetHintBits marks
 * it.  Every other row (a deleted, updated or locked one, one of the
 * current transaction, a non-MVCC snapshot) is tested by heapam's
 * function as before.
 *
 * What stays heapam's own (table_scan_bitmap_next_block): exact pages
 * (not from BRIN), and serializable transactions, where each row's
 * predicate lock and conflict-out check go with its visibility.  The page
 * is read as heapam reads it: pin traded through the scan's buffer (the
 * scan's end releases it), heap_page_prune_opt, share lock while testing,
 * claimed pages past the relation's size at the scan's start ignored; the
 * visible rows' offsets go to the scan's rs_vistuples, as heapam leaves
 * them.
 *
 * A copy of a core frame, tied to PostgreSQL 15.  The read below mirrors
 * heapam_scan_bitmap_next_block (src/backend/access/heap/heapam_handler.c)
 * of PostgreSQL 15, step by step: the block past rs_nblocks skipped, the
 * buffer read with ReleaseAndReadBuffer into rs_cbuf, heap_page_prune_opt,
 * the share lock, the loop over the lossy page's line pointers that fills
 * rs_vistuples, the unlock, rs_ntuples.  That function and the fields of
 * HeapScanDescData it uses are not an API: each major version may change
 * them (PostgreSQL 17 rewrote the bitmap scan's interface), and a stale
 * copy would not fail, it would return other rows.  So only a build against
 * PostgreSQL 15 (CQ_HEAPAM_CHECKED in delta_page.h: PG_VERSION_NUM
 * 150000-159999) compiles this copy; any other version gets heapam's own
 * reader (table_scan_bitmap_next_block, every page as heapam tests it:
 * correct, without the saving), and delta_scan.c, which reads what either
 * leaves in the scan, stops such a build with an #error.  Before
 * widening that range for a new major version, compare this function with
 * that version's heapam_scan_bitmap_next_block and HeapTupleSatisfiesMVCC
 * (heapam_visibility.c) line by line, and delta_scan.c's reading of
 * rs_vistuples with its heapam_scan_bitmap_next_tuple.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "delta_page.h"

/* the infomask bits HeapTupleSatisfiesMVCC reads for a row whose xmax is invalid */
#define DP_FLAGS	(HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID | HEAP_XMAX_INVALID | HEAP_MOVED)

/*
 * cq_delta_page_read
 *	  As table_scan_bitmap_next_block(scan, tbmres) on a heap scan: the
 *	  visible rows of the page tbmres names into the scan's rs_vistuples
 *	  (rs_ntuples of them, rs_cindex 0), its buffer pinned in rs_cbuf;
 *	  false when it has none.  See the header for what differs.
 */
#if !CQ_HEAPAM_CHECKED
/* not checked against this version's heapam (see the header): heapam's reader */
bool
cq_delta_page_read(TableScanDesc scan, TBMIterateResult *tbmres)
{
	return table_scan_bitmap_next_block(scan, tbmres);
}
#else
bool
cq_delta_page_read(TableScanDesc scan, TBMIterateResult *tbmres)
{
	HeapScanDesc hscan = (HeapScanDesc) scan;
	Relation	rel = scan->rs_rd;
	Snapshot	snapshot = scan->rs_snapshot;
	BlockNumber blk = tbmres->blockno;
	Buffer		buffer;
	Page		page;
	OffsetNumber maxoff;
	int			ntup = 0;
	TransactionId cxid = InvalidTransactionId;	/* the run's xmin, or none */
	uint16		cflags = 0;		/* its rows' DP_FLAGS */
	uint16		chint = 0;		/* the xmin hint its first row got */
	bool		cvisible = false;	/* its rows' visibility */
	bool		hinted = false;

	if (tbmres->ntuples >= 0 || IsolationIsSerializable() ||
		snapshot->snapshot_type != SNAPSHOT_MVCC)
		return table_scan_bitmap_next_block(scan, tbmres);

	hscan->rs_cindex = 0;
	hscan->rs_ntuples = 0;
	/* the relation may have grown since the scan began: as heapam, not read */
	if (blk >= hscan->rs_nblocks)
		return false;
	hscan->rs_cbuf = ReleaseAndReadBuffer(hscan->rs_cbuf, rel, blk);
	hscan->rs_cblock = blk;
	buffer = hscan->rs_cbuf;
	heap_page_prune_opt(rel, buffer);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off))
	{
		ItemId		lp = PageGetItemId(page, off);
		HeapTupleHeader td;
		uint16		flags;
		bool		valid;

		if (!ItemIdIsNormal(lp))
			continue;
		td = (HeapTupleHeader) PageGetItem(page, lp);
		flags = td->t_infomask & DP_FLAGS;
		if (flags == cflags && TransactionIdIsValid(cxid) &&
			HeapTupleHeaderGetRawXmin(td) == cxid)
		{
			valid = cvisible;
			if (chint != 0)
			{
				td->t_infomask |= chint;
				hinted = true;
			}
		}
		else
		{
			HeapTupleData tup;
			TransactionId xmin = HeapTupleHeaderGetRawXmin(td);

			tup.t_data = td;
			tup.t_len = ItemIdGetLength(lp);
			tup.t_tableOid = RelationGetRelid(rel);
			ItemPointerSet(&tup.t_self, blk, off);
			valid = HeapTupleSatisfiesVisibility(&tup, snapshot, buffer);
			/* the start of a run: a row whose answer depends on its xmin alone */
			if ((flags & (HEAP_XMAX_INVALID | HEAP_MOVED)) == HEAP_XMAX_INVALID &&
				TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin))
			{
				cxid = xmin;
				cflags = flags;
				cvisible = valid;
				chint = td->t_infomask & ~flags & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID);
			}
			else
				cxid = InvalidTransactionId;
		}
		if (valid)
			hscan->rs_vistuples[ntup++] = off;
	}
	/* as SetHintBits marks the page for each hint it sets */
	if (hinted)
		MarkBufferDirtyHint(buffer, true);
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	hscan->rs_ntuples = ntup;
	return ntup > 0;
}
#endif							/* PostgreSQL 15 */
