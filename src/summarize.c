/*-------------------------------------------------------------------------
 *
 * summarize.c
 *	  Keeping the BRIN index on cq_xid summarized up to the last full page
 *	  range of a source, so that a batch's index scan reads only the ranges
 *	  that can hold its new rows.
 *
 * brin_summarize_range reads a whole range and widens its summary row by
 * row through the opclass; for pg_cq's own single-column minmax index on
 * cq_xid the range's min and max are computed here directly and written
 * as BRIN would (summarize_xid_range), taking the locks BRIN takes.  Which
 * ranges a backend already summarized is remembered per index, so that
 * back-to-back batches do not ask again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_pageops.h"
#include "access/brin_revmap.h"
#include "access/brin_tuple.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/xid8.h"

#include "summarize.h"
#include "horizon.h"
#include "security.h"
#include "tracking.h"
#include "stamp_type.h"

/*
 * The last full page range that this backend found summarized, per BRIN
 * index on cq_xid (and relfilenode: TRUNCATE, VACUUM FULL or REINDEX start
 * over), so that a batch does not ask brin_summarize_range about the same
 * range again and again (with its locks) while the table fills the next
 * one.  A range desummarized by hand meanwhile stays so until the table
 * grows past the next range: scans then read it whole, as they would any
 * unsummarized range.
 */
typedef struct SummarizedKey
{
	Oid			index;
	Oid			relfilenode;
} SummarizedKey;

typedef struct SummarizedEntry
{
	SummarizedKey key;
	int64		upto;			/* first block of that range, or -1 */
} SummarizedEntry;

static HTAB *summarized = NULL;

/*
 * XidRangeSummary
 *	  The minmax summary of one page range of cq_xid, as BRIN keeps it
 *	  (brin.c's add_values_to_range and union_tuples for one column):
 *	  empty = no tuple seen, allnulls = no non-null value seen.
 */
typedef struct XidRangeSummary
{
	bool		empty;
	bool		allnulls;
	bool		hasnulls;
	uint64		min;
	uint64		max;
} XidRangeSummary;

/*
 * xid_summary_add
 *	  Widen s by one value (or NULL).
 */
static inline void
xid_summary_add(XidRangeSummary *s, uint64 x, bool isnull)
{
	s->empty = false;
	if (isnull)
		s->hasnulls = true;
	else if (s->allnulls)
	{
		s->allnulls = false;
		s->min = s->max = x;
	}
	else if (x < s->min)
		s->min = x;
	else if (x > s->max)
		s->max = x;
}

/*
 * xid_summary_union
 *	  Widen s by the summary an index tuple holds (what concurrent
 *	  inserters added to the placeholder), as union_tuples does.
 */
static void
xid_summary_union(BrinDesc *bdesc, XidRangeSummary *s, BrinTuple *tup)
{
	BrinMemTuple *d = brin_deform_tuple(bdesc, tup, NULL);
	BrinValues *col = &d->bt_columns[0];
	/* xid8 by value, cq.xid48 by reference */
	bool		byval = TupleDescAttr(bdesc->bd_tupdesc, 0)->attbyval;

	if (d->bt_empty_range)
		return;
	if (s->empty)
	{
		s->empty = false;
		s->allnulls = col->bv_allnulls;
		s->hasnulls = col->bv_hasnulls;
		if (!col->bv_allnulls)
		{
			s->min = cq_stamp_get(col->bv_values[0], byval);
			s->max = cq_stamp_get(col->bv_values[1], byval);
		}
		return;
	}
	if (!s->allnulls && (col->bv_hasnulls || col->bv_allnulls))
		s->hasnulls = true;
	if (col->bv_allnulls)
		return;
	if (s->allnulls)
	{
		s->allnulls = false;
		s->hasnulls = true;
		s->min = cq_stamp_get(col->bv_values[0], byval);
		s->max = cq_stamp_get(col->bv_values[1], byval);
		return;
	}
	s->min = Min(s->min, cq_stamp_get(col->bv_values[0], byval));
	s->max = Max(s->max, cq_stamp_get(col->bv_values[1], byval));
}

/*
 * xid_summary_tuple
 *	  The index tuple of summary s for the range starting at heapBlk.
 */
static BrinTuple *
xid_summary_tuple(BrinDesc *bdesc, BlockNumber heapBlk, const XidRangeSummary *s, Size *size)
{
	BrinMemTuple *d = brin_new_memtuple(bdesc);
	BrinValues *col = &d->bt_columns[0];

	d->bt_empty_range = s->empty;
	col->bv_allnulls = s->allnulls;
	col->bv_hasnulls = s->hasnulls;
	if (!s->allnulls)
	{
		/* a cq.xid48's bytes palloc'd here; brin_form_tuple copies them */
		Oid			type = TupleDescAttr(bdesc->bd_tupdesc, 0)->atttypid;

		col->bv_values[0] = cq_stamp_datum(s->min, type);
		col->bv_values[1] = cq_stamp_datum(s->max, type);
	}
	return brin_form_tuple(bdesc, heapBlk, d, size);
}

/*
 * summarize_xid_range
 *	  What brin_summarize_range does for one full range of the cq_xid
 *	  index, at a fraction of its cost: brin.c reads the range through an
 *	  index build scan (a visibility test, a slot and an expression context
 *	  per tuple: about 1,600 instructions a row, a fifth of a 10k-row
 *	  batch).  Here each page is read once under a share lock and cq_xid is
 *	  taken from every stored tuple, dead ones included.  When cq_xid is
 *	  the tuple's last stored attribute and not NULL (rows written since
 *	  tracking began, no column added after it), its 8 bytes end the tuple
 *	  (heap_form_tuple: t_len = t_hoff + data length, attributes laid out in
 *	  order), so they are read from there without walking the variable-width
 *	  columns before it (~300 instructions a row); any other row goes
 *	  through heap_getattr.  The summary can
 *	  only be wider than brin.c's (it leaves out tuples dead to everyone),
 *	  never narrower, so every scan still finds every row.  Concurrent
 *	  inserts follow brin.c's protocol: a placeholder tuple is inserted
 *	  before the pages are read; an inserter that comes later widens the
 *	  placeholder, our update then fails, and we merge its values and retry.
 *	  Returns false, doing nothing, if the range is already summarized.
 *	  *bdesc is the index's BrinDesc, built here when first needed.  The
 *	  caller holds the table's SHARE UPDATE EXCLUSIVE lock and the
 *	  range lies below the table's end.
 */
static bool
summarize_xid_range(Relation heap, AttrNumber att, Relation irel, BrinDesc **bdesc,
					BrinRevmap *revmap, BlockNumber ppr, BlockNumber heapBlk)
{
	TupleDesc	desc = RelationGetDescr(heap);
	Form_pg_attribute xatt = TupleDescAttr(desc, att - 1);

	/*
	 * cq_xid: xid8, 8 bytes by value, or cq.xid48, 6 bytes by reference
	 * aligned to 1 (no padding before them either)
	 */
	bool		byval = xatt->attbyval;
	bool		tail = byval ? xatt->attlen == (int16) sizeof(uint64) : xatt->attlen == CQ_XID48_LEN;
	XidRangeSummary s = {true, true, false, 0, 0};
	Buffer		buf = InvalidBuffer;
	Buffer		phbuf = InvalidBuffer;
	OffsetNumber off;
	BrinTuple  *phtup;
	Size		phsz;

	if (brinGetTupleForHeapBlock(revmap, heapBlk, &buf, &off, NULL, BUFFER_LOCK_SHARE, NULL) != NULL)
	{
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		ReleaseBuffer(buf);
		return false;
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	if (*bdesc == NULL)
		*bdesc = brin_build_desc(irel);

	phtup = brin_form_placeholder_tuple(*bdesc, heapBlk, &phsz);
	off = brin_doinsert(irel, ppr, revmap, &phbuf, heapBlk, phtup, phsz);

	for (BlockNumber blk = heapBlk; blk < heapBlk + ppr; blk++)
	{
		Buffer		hbuf = ReadBufferExtended(heap, MAIN_FORKNUM, blk, RBM_NORMAL, NULL);
		Page		page;
		OffsetNumber maxoff;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(hbuf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(hbuf);
		maxoff = PageIsNew(page) ? InvalidOffsetNumber : PageGetMaxOffsetNumber(page);
		for (OffsetNumber o = FirstOffsetNumber; o <= maxoff; o = OffsetNumberNext(o))
		{
			ItemId		lp = PageGetItemId(page, o);
			HeapTupleData tup;
			Datum		d;
			bool		isnull;

			if (!ItemIdIsNormal(lp))
				continue;
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			if (tail && HeapTupleHeaderGetNatts(tup.t_data) == att &&
				!(HeapTupleHasNulls(&tup) && att_isnull(att - 1, tup.t_data->t_bits)))
			{
				uint64		x;

				/* the last stored attribute, fixed-width: it ends the tuple */
				if (byval)
					memcpy(&x, (char *) tup.t_data + tup.t_len - sizeof(x), sizeof(x));
				else
					x = cq_xid48_get((char *) tup.t_data + tup.t_len - CQ_XID48_LEN);
				xid_summary_add(&s, x, false);
				continue;
			}
			tup.t_tableOid = RelationGetRelid(heap);
			ItemPointerSet(&tup.t_self, blk, o);
			d = heap_getattr(&tup, att, desc, &isnull);
			xid_summary_add(&s, isnull ? 0 : cq_stamp_get(d, byval), isnull);
		}
		UnlockReleaseBuffer(hbuf);
	}

	for (;;)
	{
		Size		newsz;
		BrinTuple  *newtup = xid_summary_tuple(*bdesc, heapBlk, &s, &newsz);
		bool		done;

		CHECK_FOR_INTERRUPTS();
		done = brin_doupdate(irel, ppr, revmap, heapBlk, phbuf, off, phtup, phsz, newtup, newsz,
							 brin_can_do_samepage_update(phbuf, phsz, newsz));
		brin_free_tuple(phtup);
		brin_free_tuple(newtup);
		if (done)
			break;
		/* an inserter changed the placeholder (or it moved): merge and retry */
		phtup = brinGetTupleForHeapBlock(revmap, heapBlk, &phbuf, &off, &phsz, BUFFER_LOCK_SHARE, NULL);
		if (phtup == NULL)
			elog(ERROR, "pg_cq: missing BRIN placeholder tuple for block %u of \"%s\"",
				 heapBlk, RelationGetRelationName(irel));
		phtup = brin_copy_tuple(phtup, phsz, NULL, NULL);
		LockBuffer(phbuf, BUFFER_LOCK_UNLOCK);
		xid_summary_union(*bdesc, &s, phtup);
	}
	ReleaseBuffer(phbuf);
	return true;
}

/*
 * fast_summary_ok
 *	  Can summarize_xid_range summarize this index: one xid8 or cq.xid48
 *	  column with the minmax support functions (pg_cq's own
 *	  cq.xid8_minmax_ops or cq.xid48_minmax_ops), valid,
 *	  not in recovery?  Otherwise brin_summarize_range does it.
 */
static bool
fast_summary_ok(Relation irel)
{
	return !RecoveryInProgress() &&
		irel->rd_index->indisvalid &&
		RelationGetDescr(irel)->natts == 1 &&
		cq_stamp_type_ok(TupleDescAttr(RelationGetDescr(irel), 0)->atttypid) &&
		index_getprocid(irel, 1, BRIN_PROCNUM_OPCINFO) == F_BRIN_MINMAX_OPCINFO;
}

/*
 * summarize_leaf
 *	  Summarize the full, unsummarized page ranges at the end of one table,
 *	  newest first, stopping at the first one already summarized; nothing
 *	  when the last full range is the one found summarized before.  The
 *	  table's SHARE UPDATE EXCLUSIVE lock (the one brin_summarize_range
 *	  takes, taken here only if free) is released as soon as that is done,
 *	  not at commit: summaries are not transactional, and VACUUM, ANALYZE
 *	  and autovacuum must not wait for (or skip) a source that back-to-back
 *	  batches read (summarize_xid_range when the index is pg_cq's own,
 *	  else brin_summarize_range).  With horizon, also makes
 *	  horizon_getbitmap the index's amgetbitmap.
 */
static void
summarize_leaf(Oid relid, bool horizon)
{
	Relation	heap;
	Relation	irel;
	Oid			idx;
	BlockNumber nblocks;
	BlockNumber ppr;
	AttrNumber	att = cq_source_tracking_attnum(relid);
	SummarizedKey key;
	SummarizedEntry *entry;
	bool		found;
	int64		last;
	CqSecurity	sec;

	if (att == InvalidAttrNumber)
		return;
	/* the lock the batch's scan takes anyway */
	heap = table_open(relid, AccessShareLock);
	idx = cq_tracking_index(heap, att);
	nblocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, NoLock);
	if (!OidIsValid(idx))
		return;
	irel = index_open(idx, AccessShareLock);
	ppr = BrinGetPagesPerRange(irel);
	if (horizon)
		cq_horizon_swap_getbitmap(irel);
	memset(&key, 0, sizeof(key));
	key.index = idx;
	key.relfilenode = irel->rd_node.relNode;
	/* kept, as the table's: the batch's scan of it takes the same lock (not released and taken again) */
	index_close(irel, NoLock);

	last = (int64) (nblocks / ppr) * ppr - ppr;
	if (last < 0)
		return;
	if (summarized == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(SummarizedKey);
		ctl.entrysize = sizeof(SummarizedEntry);
		summarized = hash_create("pg_cq summarized ranges", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(summarized, &key, HASH_ENTER, &found);
	if (!found)
		entry->upto = -1;
	else if (entry->upto >= last)
		return;
	if (!ConditionalLockRelationOid(relid, ShareUpdateExclusiveLock))
		return;
	cq_security_superuser(&sec);
	heap = table_open(relid, NoLock);
	irel = index_open(idx, ShareUpdateExclusiveLock);
	if (fast_summary_ok(irel))
	{
		BrinRevmap *revmap = brinRevmapInitialize(irel, &ppr, NULL);
		BrinDesc   *bdesc = NULL;

		for (int64 blk = last; blk >= 0; blk -= ppr)
		{
			if (!summarize_xid_range(heap, att, irel, &bdesc, revmap, ppr, (BlockNumber) blk))
				break;
		}
		brinRevmapTerminate(revmap);
		if (bdesc)
			brin_free_desc(bdesc);
		index_close(irel, ShareUpdateExclusiveLock);
	}
	else
	{
		index_close(irel, ShareUpdateExclusiveLock);
		for (int64 blk = last; blk >= 0; blk -= ppr)
		{
			if (DatumGetInt32(DirectFunctionCall2(brin_summarize_range, ObjectIdGetDatum(idx),
												  Int64GetDatum(blk))) == 0)
				break;
		}
	}
	table_close(heap, NoLock);
	UnlockRelationOid(relid, ShareUpdateExclusiveLock);
	cq_security_restore(&sec);
	entry->upto = last;
}

/*
 * summarize_source
 *	  Summarize the leaves of relid (itself, or a partitioned table's
 *	  partitions), with or without the scan horizon (summarize_leaf).
 *	  Summarizing requires ownership: summarize_leaf takes the superuser
 *	  section only when it summarizes, not for the look-ups that find
 *	  nothing to do in most batches (~1.5k instructions a batch).
 */
static void
summarize_source(Oid relid, bool horizon)
{
	char		relkind;

	if (horizon)
		cq_source_sample_horizon();
	relkind = get_rel_relkind(relid);
	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
				summarize_leaf(lfirst_oid(lc), horizon);
	}
	else if (relkind == RELKIND_RELATION)
		summarize_leaf(relid, horizon);
}

/*
 * cq_source_summarize
 *	  Keep the BRIN index on cq_xid summarized up to the last full page
 *	  range.  An unsummarized range matches every scan, so without this each
 *	  batch would read every row inserted since autovacuum last summarized
 *	  the index.  The last, partial range is left alone: summarizing it would
 *	  make every insert into it update the summary.  Skipped when another
 *	  process holds the table's SHARE UPDATE EXCLUSIVE lock (autovacuum is
 *	  then on it).  The lock is released before returning.
 */
void
cq_source_summarize(Oid relid)
{
	summarize_source(relid, true);
}

/*
 * cq_source_summarize_shard
 *	  cq_source_summarize for a shard of a Citus source stamped per node,
 *	  on the node that stores it (shard.c), without the scan horizon: a
 *	  shard holds rows stamped by other nodes (moves, splits), whose ids
 *	  cannot be compared with this node's WAL positions.
 */
void
cq_source_summarize_shard(Oid relid)
{
	summarize_source(relid, false);
}
