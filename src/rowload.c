/*-------------------------------------------------------------------------
 *
 * rowload.c
 *	  Rows written to an empty table as COPY writes them, and its key-hash
 *	  index built from what was written: the one row-load buffer of batch
 *	  0's direct loads (bulkload.c's state and target on the table path,
 *	  store_load.c's target on the store) and of the store's image
 *	  (store_fold.c).
 *
 * Rows are buffered, up to ROWLOAD_MAX_ROWS rows or ROWLOAD_MAX_BYTES of
 * their data, then written together by table_multi_insert, which fills
 * each page under one lock and, for a logged table, writes one WAL record
 * per page rather than one per row, through a BulkInsertState (the page
 * being filled stays pinned).  The rows are formed without the coercions
 * of an INSERT, so a caller takes this path only when that changes
 * nothing: the table takes an INSERT as a plain heap insert
 * (cq_rowload_plain_table), the columns' types agree
 * (cq_rowload_map_columns); NOT NULL is checked here as the executor
 * checks it.
 *
 * A load may keep each row's key hash and TID (CQ_ROWLOAD_KEYS) to build
 * the table's one index, a btree on the key hash as pg_cq makes it
 * (cq_rowload_buildable_index), from them after the load
 * (cq_rowload_build_index) instead of a scan of the table evaluating the
 * index's expression on every row.
 *
 * Memory: the slots and their tuples live in the context current at
 * cq_rowload_begin; the keys in a temporary file until the index build,
 * which reads them back a chunk (work_mem) at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/hio.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "executor/tuptable.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/buffile.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "rowload.h"
#include "citus.h"
#include "heappage.h"
#include "guc.h"
#include "sink.h"
#include "sql_builder.h"
#include "state.h"

#define ROWLOAD_MAX_ROWS 1000
#define ROWLOAD_MAX_BYTES 65535

/* What the keys file holds per row: the index key and the row's TID. */
typedef struct RowKey
{
	int32		h;
	ItemPointerData tid;
} RowKey;

struct CqRowLoad
{
	Relation	rel;
	TupleDesc	desc;			/* a copy of rel's, unpinned: see cq_rowload_begin */
	int			options;		/* table_multi_insert's */
	CommandId	cid;
	BulkInsertState bis;
	BlockNumber ring_from;		/* CQ_ROWLOAD_CACHED: the ring from this block on */
	MemoryContext cxt;			/* of the slots and their tuples */
	TupleTableSlot *slots[ROWLOAD_MAX_ROWS];	/* created as needed */
	int			nused;
	Size		bytes;
	int64		rows;			/* rows written */
	BufFile    *keys;			/* (h, TID) of each row written, for its index; or NULL */
	int32		h[ROWLOAD_MAX_ROWS];	/* the buffered rows' key hashes, when keys or idx */
	Relation	idx;			/* the key-hash index each row's h goes into, or NULL */
	IndexInfo  *iinfo;
	CqHeapPages *pages;			/* CQ_ROWLOAD_DIRECT: whole pages (heappage.c), or NULL */
	BlockNumber direct_from;	/* CQ_ROWLOAD_DIRECT: whole pages from this block on, or invalid */
};

/*
 * cq_rowload_plain_table
 *	  rel takes an INSERT as a heap insert and nothing else: a plain table
 *	  (not a Citus table, whose rows live in its shards) without triggers,
 *	  rules, row-level security, CHECK constraints, generated or identity
 *	  columns, on which the current user holds INSERT, and USAGE on its
 *	  schema (the statement names the table: without it, its error), and
 *	  without indexes but index (one cq_rowload_buildable_index found,
 *	  which the load builds from the keys it writes).
 */
bool
cq_rowload_plain_table(Relation rel, Oid index)
{
	List	   *indexes;

	if (!cq_rel_takes_heap_inserts(rel) ||
		cq_citus_kind(RelationGetRelid(rel)) != CQ_CITUS_NONE ||
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_INSERT) != ACLCHECK_OK ||
		pg_namespace_aclcheck(RelationGetNamespace(rel), GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		return false;
	indexes = RelationGetIndexList(rel);
	return indexes == NIL ||
		(OidIsValid(index) && list_length(indexes) == 1 && linitial_oid(indexes) == index);
}

/*
 * cq_rowload_map_columns
 *	  For each attribute of rel, the statement column (of result, from
 *	  first on, names[k] the name of column first + k) that gives it, by
 *	  name, into map (-1: dropped); false unless every attribute is given
 *	  exactly one and the types agree (same type; same type modifier
 *	  unless the attribute has none).
 */
bool
cq_rowload_map_columns(Relation rel, TupleDesc result, int first, char **names, int nnames, int *map)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			used = 0;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Form_pg_attribute col;
		int			k;

		map[i] = -1;
		if (att->attisdropped)
			continue;
		for (k = 0; k < nnames; k++)
			if (strcmp(names[k], NameStr(att->attname)) == 0)
				break;
		if (k == nnames || first + k >= result->natts)
			return false;
		col = TupleDescAttr(result, first + k);
		if (col->atttypid != att->atttypid ||
			(att->atttypmod != -1 && col->atttypmod != att->atttypmod))
			return false;
		map[i] = first + k;
		used++;
	}
	return used == nnames;
}

/*
 * no_rows
 *	  Is rel empty to every snapshot, now and later: no page, or (a heap)
 *	  every tuple in its pages dead to VACUUM, inserted by a transaction
 *	  that aborted or deleted by one that committed before the oldest
 *	  snapshot still running?  Such tuples are what an index build by a
 *	  scan leaves out, so an index built from the load's rows alone is the
 *	  same.  This lets a batch 0 retried after a failed one (its load's
 *	  rows left dead in the pages) build the indexes from the load's key
 *	  hashes again.  The caller keeps other writers out (ShareLock); a
 *	  writer still running when it was taken would have held rel.  The
 *	  scan stops at the first tuple that is not dead.
 */
static bool
no_rows(Relation rel)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	TransactionId oldest;
	BufferAccessStrategy strategy;
	bool		dead = true;

	if (nblocks == 0)
		return true;
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		return false;
	oldest = GetOldestNonRemovableTransactionId(rel);
	strategy = GetAccessStrategy(BAS_BULKREAD);
	for (BlockNumber blk = 0; dead && blk < nblocks; blk++)
	{
		Buffer		buf;
		Page		page;
		OffsetNumber maxoff;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		maxoff = PageIsNew(page) ? InvalidOffsetNumber : PageGetMaxOffsetNumber(page);
		for (OffsetNumber off = FirstOffsetNumber; dead && off <= maxoff; off++)
		{
			ItemId		item = PageGetItemId(page, off);
			HeapTupleData tup;

			if (!ItemIdIsNormal(item))
				continue;
			tup.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tup.t_len = ItemIdGetLength(item);
			tup.t_tableOid = RelationGetRelid(rel);
			ItemPointerSet(&tup.t_self, blk, off);
			dead = HeapTupleSatisfiesVacuum(&tup, oldest, buf) == HEAPTUPLE_DEAD;
		}
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(strategy);
	return dead;
}

/*
 * cq_rowload_buildable_index
 *	  Can batch 0's load build the index of rel (the state when keys is
 *	  NIL, else the target with its key columns keys) from the key hashes
 *	  it writes, rather than batch.c dropping it and building it again by
 *	  a scan?  True when rel has no index (*index InvalidOid: nothing to
 *	  build), or exactly one, a btree as pg_cq makes it on the key hash
 *	  (the state's column h; the target's hash_record(ROW(keys))), rel is
 *	  empty to every snapshot (no_rows: no page, or only the dead rows of
 *	  a failed load), and nobody but this transaction writes it from now
 *	  on.
 *
 *	  Locks: only if no other transaction holds rel at all (the
 *	  AccessExclusiveLock batch.c's DROP INDEX needed, taken only if free
 *	  at once, as there), ShareLock on rel (no writer but this
 *	  transaction) and AccessExclusiveLock on the index (the build's),
 *	  both to the end of the transaction; the AccessExclusiveLock on rel is
 *	  let go at once (and the other two again when no_rows finds a row).
 *	  So a reader already holding rel keeps batch 0 from
 *	  this path, as it kept batch.c from dropping the index, and a reader
 *	  coming later waits only if it opens the index (planning a query
 *	  does), where it waited for the whole table before.
 */
bool
cq_rowload_buildable_index(Relation rel, List *keys, Oid *index)
{
	List	   *indexes = RelationGetIndexList(rel);
	Oid			relid = RelationGetRelid(rel);
	Oid			idxid;
	Relation	idx;
	Form_pg_index ix;
	bool		ok;

	*index = InvalidOid;
	if (indexes == NIL)
		return true;
	if (list_length(indexes) != 1)
		return false;
	idxid = linitial_oid(indexes);
	idx = index_open(idxid, AccessShareLock);
	ix = idx->rd_index;
	ok = idx->rd_rel->relam == BTREE_AM_OID && !ix->indisunique && !ix->indisexclusion &&
		ix->indnatts == 1 && ix->indisvalid && ix->indisready && ix->indislive &&
		TupleDescAttr(RelationGetDescr(idx), 0)->atttypid == INT4OID &&
		(keys != NIL ? cq_sink_is_key_hash_index(idx, keys) :
		 (ix->indkey.values[0] == cq_rel_attnum(rel, CQ_KEY_HASH_COLUMN) &&
		  RelationGetIndexExpressions(idx) == NIL && RelationGetIndexPredicate(idx) == NIL));
	index_close(idx, NoLock);
	if (!ok || !ConditionalLockRelationOid(relid, AccessExclusiveLock))
		return false;
	/* nobody else holds rel: the rest is granted at once */
	ok = ConditionalLockRelationOid(idxid, AccessExclusiveLock);
	if (ok)
		LockRelationOid(relid, ShareLock);
	UnlockRelationOid(relid, AccessExclusiveLock);
	/* no writer but this transaction from here on; readers only wait for the index */
	if (ok && !no_rows(rel))
	{
		UnlockRelationOid(idxid, AccessExclusiveLock);
		UnlockRelationOid(relid, ShareLock);
		ok = false;
	}
	if (ok)
		*index = idxid;
	return ok;
}

/*
 * cq_rowload_same_key_columns
 *	  Does each key column of the target (keys, its attribute numbers in
 *	  grouping order) hash as the load's key hash h hashes that key: the
 *	  statement's column i of result for the i-th key, over whose values h
 *	  is computed (same type, same collation: a nondeterministic collation
 *	  hashes by it)?  ngroups: the query's grouping keys.
 */
bool
cq_rowload_same_key_columns(Relation target, List *keys, TupleDesc result, int ngroups)
{
	ListCell   *lc;

	if (list_length(keys) != ngroups || ngroups > result->natts)
		return false;
	foreach(lc, keys)
	{
		Form_pg_attribute t;
		Form_pg_attribute g = TupleDescAttr(result, foreach_current_index(lc));

		if (lfirst_int(lc) <= 0)
			return false;
		t = TupleDescAttr(RelationGetDescr(target), lfirst_int(lc) - 1);
		if (t->atttypid != g->atttypid || t->attcollation != g->attcollation)
			return false;
	}
	return true;
}

/*
 * page_keys
 *	  The keys of a page written whole (heappage.c): each row's key hash
 *	  and TID into the keys file, as flush_rows notes them.
 */
static void
page_keys(void *arg, const int32 *h, BlockNumber blkno, OffsetNumber maxoff)
{
	CqRowLoad  *rl = (CqRowLoad *) arg;
	RowKey		keys[MaxHeapTuplesPerPage];

	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		keys[off - 1].h = h[off - 1];
		ItemPointerSet(&keys[off - 1].tid, blkno, off);
	}
	BufFileWrite(rl->keys, keys, sizeof(RowKey) * maxoff);
}

/*
 * cq_rowload_begin
 *	  Start writing rows to rel (opened and locked by the caller, open
 *	  until cq_rowload_finish): options are table_multi_insert's; flags
 *	  CQ_ROWLOAD_KEYS to keep each row's key hash and TID for
 *	  cq_rowload_build_index, CQ_ROWLOAD_RING for COPY's ring of buffers,
 *	  CQ_ROWLOAD_DIRECT for whole pages written outside shared buffers
 *	  (heappage.c: a load into an empty table, where that module can and
 *	  the pages are not read back into buffers of their own, below).
 *
 *	  Either way a BulkInsertState keeps the page being filled pinned
 *	  from one row to the next.  Without the ring every new page takes a
 *	  buffer of its own, which the backend touches for the first time (on
 *	  this project's virtual machine some 40 us a page: the page faults and
 *	  the zeroing), and the write-out is left to the checkpointer, as for
 *	  an INSERT.  With the ring (16 MB of buffers, reused) the backend
 *	  writes the pages out itself as the ring comes round (their WAL
 *	  flushed first), into the kernel's pages the file's extension made.
 *	  The ring pays only when nothing reads the pages back soon: the
 *	  store's target load, whose index is built from the load's keys,
 *	  takes it (at ~1M groups about 2,000 of some 4,500 samples of its
 *	  heap inserts less, bench/README.md, "Fold efficiency", round 9);
 *	  session 23 measured no gain while the index builds still scanned
 *	  the table, reading the evicted pages back into other buffers.
 *	  CQ_ROWLOAD_CACHED: batch 0 reads its target's pages back into
 *	  shared buffers at its end (cq_rowload_cache, up to
 *	  cq_rowload_cache_blocks): the ring's write-out and that read-back
 *	  of the same pages (a pwrite and a pread per page, the second into
 *	  buffers the backend then maps anyway) cost more than keeping the
 *	  pages in buffers of their own, which the read-back then finds
 *	  (session 40, issue 12 goal 2: at ~1M groups ~10k pages); so no ring
 *	  for that many blocks, the ring beyond.  Only with cq.batch0_read_back
 *	  on: off (the default since session 41), batch 0 reads no heap back,
 *	  and the ring maps ~2k buffers where buffers of their own map ~10k
 *	  (at ~1M groups 15k fewer page faults in batch 0, about 6 % of its
 *	  CPU; the first later batch that updates most of the rows reads
 *	  their pages then: bench/README.md, "Fold efficiency", session 41).
 */
CqRowLoad *
cq_rowload_begin(Relation rel, int options, int flags)
{
	CqRowLoad  *rl = palloc0(sizeof(CqRowLoad));

	rl->rel = rel;
	rl->options = options;
	rl->cid = GetCurrentCommandId(true);
	rl->cxt = CurrentMemoryContext;
	rl->bis = GetBulkInsertState();
	rl->ring_from = InvalidBlockNumber;
	if ((flags & CQ_ROWLOAD_CACHED) && cq_fold_page_economy && cq_batch0_read_back)
	{
		FreeAccessStrategy(rl->bis->strategy);
		rl->bis->strategy = NULL;
		rl->ring_from = (BlockNumber) cq_rowload_cache_blocks();
	}
	else if (!(flags & CQ_ROWLOAD_RING))
	{
		FreeAccessStrategy(rl->bis->strategy);
		rl->bis->strategy = NULL;
	}
	if (flags & CQ_ROWLOAD_KEYS)
		rl->keys = BufFileCreateTemp(false);

	/*
	 * Whole pages outside shared buffers for a load into an empty table,
	 * unless batch 0 reads the heap back into buffers of its own; with
	 * cq.fold_direct_pages on, from the block on where COPY's ring would
	 * start to write its own pages out (a target that fits stays in shared
	 * buffers for the next batches, as before), with always from the first
	 */
	rl->direct_from = InvalidBlockNumber;
	if ((flags & CQ_ROWLOAD_DIRECT) && cq_heappage_usable(rel) && rl->ring_from == InvalidBlockNumber)
	{
		rl->direct_from = cq_fold_direct_pages == CQ_DIRECT_ALWAYS ? 0 :
			(BlockNumber) Min(NBuffers / 8, 16 * 1024 * 1024 / BLCKSZ);
		if (rl->direct_from == 0)
			rl->pages = cq_heappage_begin(rel, rl->cid, rl->keys ? page_keys : NULL, rl);
	}

	/*
	 * The slots over a copy of the relation's descriptor, not the
	 * relation's own: a slot pins a reference-counted descriptor in the
	 * resource owner, whose table of references beyond 64 is an
	 * open-addressing hash keyed by the descriptor's address, so a thousand
	 * slots of one relation make one run of a thousand entries; every other
	 * pin and release in the load (hash_record of each group's keys pins
	 * the row type's descriptor) that hashes into that run walks it: 11-13%
	 * of batch 0's CPU at a million groups (bench/README.md, "Fold
	 * efficiency").  The copy's reference count is -1: never pinned.  It
	 * has no NOT NULL (CreateTupleDescCopy clears attnotnull): the checks
	 * read the relation's own descriptor.
	 */
	rl->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	return rl;
}

/*
 * cq_rowload_index_inserts
 *	  Insert each row's entry into index, a btree on the key hash as pg_cq
 *	  makes it (a column of type int4 whose value is the h given with each
 *	  row; locked by the caller), as the rows are written: the load of a
 *	  table that has rows already (cq_target_load_new).
 */
void
cq_rowload_index_inserts(CqRowLoad *rl, Oid index)
{
	rl->idx = index_open(index, RowExclusiveLock);
	rl->iinfo = BuildIndexInfo(rl->idx);
}

/*
 * flush_pages
 *	  flush_rows of a load in whole pages: each buffered row onto them.
 */
static void
flush_pages(CqRowLoad *rl)
{
	Assert(rl->idx == NULL);
	for (int i = 0; i < rl->nused; i++)
	{
		cq_heappage_add(rl->pages, ExecFetchSlotHeapTuple(rl->slots[i], true, NULL), rl->h[i]);
		ExecClearTuple(rl->slots[i]);
	}
	rl->nused = 0;
	rl->bytes = 0;
}

/*
 * flush_rows
 *	  Insert the buffered rows; with keys, note each row's key hash and TID
 *	  there for the index; with idx, insert each row's entry into it.
 */
static void
flush_rows(CqRowLoad *rl)
{
	if (rl->nused == 0)
		return;
	if (rl->pages)
	{
		flush_pages(rl);
		return;
	}
	table_multi_insert(rl->rel, rl->slots, rl->nused, rl->cid, rl->options, rl->bis);
	/* CQ_ROWLOAD_CACHED: past the blocks batch 0 reads back, the ring */
	if (rl->ring_from != InvalidBlockNumber && BufferIsValid(rl->bis->current_buf) &&
		BufferGetBlockNumber(rl->bis->current_buf) >= rl->ring_from)
	{
		/* in the load's context, as the insert state (flush_rows runs in a row's) */
		MemoryContext old = MemoryContextSwitchTo(rl->cxt);

		ReleaseBulkInsertStatePin(rl->bis);
		rl->bis->strategy = GetAccessStrategy(BAS_BULKWRITE);
		rl->ring_from = InvalidBlockNumber;
		MemoryContextSwitchTo(old);
	}
	/* CQ_ROWLOAD_DIRECT: past its first blocks, the next rows in whole pages */
	if (rl->direct_from != InvalidBlockNumber && BufferIsValid(rl->bis->current_buf) &&
		BufferGetBlockNumber(rl->bis->current_buf) + 1 >= rl->direct_from)
	{
		/* in the load's context (flush_rows runs in a row's) */
		MemoryContext old = MemoryContextSwitchTo(rl->cxt);

		ReleaseBulkInsertStatePin(rl->bis);
		rl->pages = cq_heappage_begin(rl->rel, rl->cid, rl->keys ? page_keys : NULL, rl);
		rl->direct_from = InvalidBlockNumber;
		MemoryContextSwitchTo(old);
	}
	if (rl->keys)
	{
		RowKey		keys[ROWLOAD_MAX_ROWS];

		for (int i = 0; i < rl->nused; i++)
		{
			keys[i].h = rl->h[i];
			keys[i].tid = rl->slots[i]->tts_tid;
		}
		BufFileWrite(rl->keys, keys, sizeof(RowKey) * rl->nused);
	}
	for (int i = 0; rl->idx != NULL && i < rl->nused; i++)
	{
		Datum		h = Int32GetDatum(rl->h[i]);
		bool		hnull = false;

		index_insert(rl->idx, &h, &hnull, &rl->slots[i]->tts_tid, rl->rel, UNIQUE_CHECK_NO, false,
					 rl->iinfo);
	}
	for (int i = 0; i < rl->nused; i++)
		ExecClearTuple(rl->slots[i]);
	rl->nused = 0;
	rl->bytes = 0;
}

/*
 * next_slot
 *	  The slot of the next buffered row, made when first needed.
 */
static TupleTableSlot *
next_slot(CqRowLoad *rl)
{
	if (rl->slots[rl->nused] == NULL)
	{
		/* in the load's context: the slot's tuple is made in it */
		MemoryContext old = MemoryContextSwitchTo(rl->cxt);

		rl->slots[rl->nused] = MakeSingleTupleTableSlot(rl->desc, table_slot_callbacks(rl->rel));
		MemoryContextSwitchTo(old);
	}
	return rl->slots[rl->nused];
}

/*
 * failing_row
 *	  The DETAIL of the executor's error for a row of rel (values/isnull
 *	  per attribute) that fails a constraint, as ExecBuildSlotValueDescription
 *	  makes it: "(v1, v2, ...)" when the current user may read the table,
 *	  else "(c1, c2) = (v1, v2)" of the columns the statement writes
 *	  (kept: per attribute, not written, as an UPDATE's key columns; NULL:
 *	  all are, an INSERT) or that the user may read; no DETAIL when none
 *	  is shown, or row-level security applies.  A value is cut at 64
 *	  bytes (then "...").
 */
static char *
failing_row(Relation rel, Datum *values, bool *isnull, const bool *kept)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			relid = RelationGetRelid(rel);
	bool		table_perm;
	bool		any = false;
	StringInfoData buf;
	StringInfoData cols;

	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return NULL;
	table_perm = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
	initStringInfo(&buf);
	initStringInfo(&cols);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *val;
		int			len;

		if (att->attisdropped)
			continue;
		if (!table_perm)
		{
			if ((kept != NULL && kept[i]) &&
				pg_attribute_aclcheck(relid, att->attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
				continue;
			appendStringInfoString(&cols, any ? ", " : "(");
			appendStringInfoString(&cols, NameStr(att->attname));
		}
		if (isnull[i])
			val = "null";
		else
		{
			Oid			out;
			bool		varlena;

			getTypeOutputInfo(att->atttypid, &out, &varlena);
			val = OidOutputFunctionCall(out, values[i]);
		}
		appendStringInfoString(&buf, any ? ", " : "(");
		len = strlen(val);
		if (len <= 64)
			appendBinaryStringInfo(&buf, val, len);
		else
		{
			appendBinaryStringInfo(&buf, val, pg_mbcliplen(val, len, 64));
			appendStringInfoString(&buf, "...");
		}
		any = true;
	}
	if (!any)
		return NULL;
	appendStringInfoChar(&buf, ')');
	if (table_perm)
		return buf.data;
	appendStringInfo(&cols, ") = %s", buf.data);
	return cols.data;
}

/*
 * cq_rowload_check_not_null
 *	  The executor's NOT NULL check (ExecConstraints) of a row of rel
 *	  (values/isnull per attribute) that a statement writes, and its error
 *	  for the first column that fails, with the failing row (failing_row;
 *	  kept: see there).
 */
void
cq_rowload_check_not_null(Relation rel, Datum *values, bool *isnull, const bool *kept)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		char	   *detail;

		if (!isnull[i] || !TupleDescAttr(desc, i)->attnotnull)
			continue;
		detail = failing_row(rel, values, isnull, kept);
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
						NameStr(TupleDescAttr(desc, i)->attname), RelationGetRelationName(rel)),
				 detail ? errdetail("Failing row contains %s.", detail) : 0,
				 errtablecol(rel, i + 1)));
	}
}

/*
 * added
 *	  A row of t_len bytes is in the next slot: insert the buffered rows
 *	  when the buffer is full.
 */
static void
added(CqRowLoad *rl, Size t_len)
{
	rl->bytes += t_len;
	rl->rows++;
	if (++rl->nused == ROWLOAD_MAX_ROWS || rl->bytes >= ROWLOAD_MAX_BYTES)
		flush_rows(rl);
}

/*
 * cq_rowload_values
 *	  Write the row whose attribute i is values/isnull[map[i]] (map[i] < 0:
 *	  a dropped attribute), h its key hash (read with CQ_ROWLOAD_KEYS),
 *	  after the executor's NOT NULL check; formed as a tuple of its own
 *	  (the caller's values may last until its next row only).
 */
void
cq_rowload_values(CqRowLoad *rl, const int *map, Datum *values, bool *isnull, int32 h)
{
	TupleDesc	desc = rl->desc;
	TupleTableSlot *slot = next_slot(rl);

	ExecClearTuple(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		if (map[i] < 0)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
			continue;
		}
		slot->tts_values[i] = values[map[i]];
		slot->tts_isnull[i] = isnull[map[i]];
	}
	cq_rowload_check_not_null(rl->rel, slot->tts_values, slot->tts_isnull, NULL);
	rl->h[rl->nused] = h;
	ExecStoreVirtualTuple(slot);
	ExecMaterializeSlot(slot);
	/* the tuple just formed (not a second pass over the values to size them) */
	added(rl, ExecFetchSlotHeapTuple(slot, false, NULL)->t_len);
}

/*
 * cq_rowload_tuple
 *	  Write tup, a row of the table's columns that lasts until the rows
 *	  buffered are written (cq_rowload_finish), after the executor's NOT
 *	  NULL check; without keys.
 */
void
cq_rowload_tuple(CqRowLoad *rl, HeapTuple tup)
{
	TupleTableSlot *slot = next_slot(rl);

	Assert(rl->keys == NULL);
	ExecForceStoreHeapTuple(tup, slot, false);
	if (HeapTupleHasNulls(tup))
	{
		slot_getallattrs(slot);
		cq_rowload_check_not_null(rl->rel, slot->tts_values, slot->tts_isnull, NULL);
	}
	added(rl, tup->t_len);
}

/*
 * cq_rowload_finish
 *	  Insert the rows still buffered, release the insert state and the
 *	  slots; returns the rows written.  The relation stays open; with keys,
 *	  cq_rowload_build_index is next.
 */
int64
cq_rowload_finish(CqRowLoad *rl)
{
	flush_rows(rl);
	if (rl->pages)
		(void) cq_heappage_end(rl->pages);
	rl->pages = NULL;
	if (rl->idx)
		index_close(rl->idx, NoLock);
	rl->idx = NULL;
	FreeBulkInsertState(rl->bis);
	rl->bis = NULL;
	table_finish_bulk_insert(rl->rel, rl->options);
	for (int i = 0; i < ROWLOAD_MAX_ROWS && rl->slots[i]; i++)
	{
		ExecDropSingleTupleTableSlot(rl->slots[i]);
		rl->slots[i] = NULL;
	}
	return rl->rows;
}

/*
 * The index build of a load (cq_rowload_buildable_index): the btree's own
 * build (index_build, as REINDEX runs it: a new empty file, then ambuild)
 * reads the table through its access method's index_build_range_scan,
 * which evaluates the index's expression on every row (the target's
 * hash_record(ROW(keys)): 27% of the builds' instructions at 183k groups,
 * bench/README.md, "Fold efficiency").  The load has those values already,
 * as the key hash of each row it wrote, with the rows' TIDs (the keys
 * file): for the build, the table's relation descriptor points to a copy
 * of its access method whose index_build_range_scan hands the btree those
 * (h, TID) pairs instead, the rows the scan would have found (the table
 * was empty, and nobody else writes it: cq_rowload_buildable_index).  The
 * descriptor is restored right after; if it is rebuilt in between (an
 * invalidation), the build scans the table as usual and gets the same
 * index.
 *
 * The pairs go in the btree's order (h as a signed int4, then TID), a
 * chunk at a time within the batch's memory budget (work_mem): each chunk
 * read from the file (TIDs ascending, as written) and sorted by h with a
 * stable radix sort, a byte a pass.  The btree's sort then finds its runs
 * sorted (up to a chunk): at 100k groups a fifth of the build's
 * instructions less than in the order written
 * (bench/results/store-fold-s28-A.md).
 */
typedef struct KeyFeed
{
	Oid			index;			/* the index being built */
	BufFile    *keys;			/* NULL: not feeding */
	int64		nkeys;
	const TableAmRoutine *am;	/* the table's own */
} KeyFeed;

static KeyFeed feed;
static TableAmRoutine feed_am;

/*
 * sort_keys
 *	  Sort n pairs by h (signed) with a stable LSD radix sort; tmp: room
 *	  for n more.  Returns the sorted array (keys or tmp).
 */
static RowKey *
sort_keys(RowKey *keys, RowKey *tmp, int64 n)
{
	for (int shift = 0; shift < 32; shift += 8)
	{
		int64		count[257] = {0};
		RowKey	   *t;

		for (int64 i = 0; i < n; i++)
			count[((((uint32) keys[i].h) ^ 0x80000000) >> shift & 0xFF) + 1]++;
		for (int d = 0; d < 256; d++)
			count[d + 1] += count[d];
		for (int64 i = 0; i < n; i++)
			tmp[count[(((uint32) keys[i].h) ^ 0x80000000) >> shift & 0xFF]++] = keys[i];
		t = keys;
		keys = tmp;
		tmp = t;
	}
	return keys;
}

static double
feed_range_scan(Relation table_rel, Relation index_rel, IndexInfo *index_info, bool allow_sync,
				bool anyvisible, bool progress, BlockNumber start_blockno, BlockNumber numblocks,
				IndexBuildCallback callback, void *callback_state, TableScanDesc scan)
{
	int64		chunk;
	RowKey	   *buf;
	RowKey	   *tmp;
	int64		done = 0;

	if (feed.keys == NULL || RelationGetRelid(index_rel) != feed.index || scan != NULL ||
		start_blockno != 0 || numblocks != InvalidBlockNumber)
		return feed.am->index_build_range_scan(table_rel, index_rel, index_info, allow_sync,
												anyvisible, progress, start_blockno, numblocks,
												callback, callback_state, scan);
	chunk = Max(Min(feed.nkeys, (int64) work_mem * 1024 / (2 * (int64) sizeof(RowKey))), 1);
	buf = palloc_extended(sizeof(RowKey) * chunk, MCXT_ALLOC_HUGE);
	tmp = palloc_extended(sizeof(RowKey) * chunk, MCXT_ALLOC_HUGE);
	if (BufFileSeek(feed.keys, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("pg_cq: could not rewind the key hashes of batch 0's load: %m")));
	while (done < feed.nkeys)
	{
		int64		n = Min(chunk, feed.nkeys - done);
		RowKey	   *keys;

		if (BufFileRead(feed.keys, buf, sizeof(RowKey) * n) != sizeof(RowKey) * n)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("pg_cq: could not read the key hashes of batch 0's load")));
		keys = sort_keys(buf, tmp, n);
		for (int64 i = 0; i < n; i++)
		{
			Datum		value = Int32GetDatum(keys[i].h);
			bool		isnull = false;

			callback(index_rel, &keys[i].tid, &value, &isnull, true, callback_state);
		}
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf);
	pfree(tmp);
	elog(DEBUG1, "pg_cq: index \"%s\" built from the %lld key hashes of batch 0's load",
		 RelationGetRelationName(index_rel), (long long) feed.nkeys);
	return (double) feed.nkeys;
}

/*
 * cq_rowload_build_index
 *	  Build index of the load's table (cq_rowload_buildable_index, locked
 *	  there) from the key hashes and TIDs the load wrote (after
 *	  cq_rowload_finish and a CommandCounterIncrement), as REINDEX builds
 *	  it (a new file, the old one dropped at commit, kept if the batch
 *	  fails), its sort within the batch's memory budget
 *	  (maintenance_work_mem = work_mem, as batch.c's build_index).  The
 *	  pairs go to the btree in its order, a chunk at a time (see
 *	  KeyFeed).  Releases the keys.
 */
void
cq_rowload_build_index(CqRowLoad *rl, Oid index)
{
	Relation	heap = rl->rel;
	Relation	idx = index_open(index, NoLock);	/* locked: cq_rowload_buildable_index */
	IndexInfo  *info;
	const TableAmRoutine *am = heap->rd_tableam;
	int			nest = NewGUCNestLevel();

	Assert(rl->keys != NULL);
	(void) set_config_option("maintenance_work_mem", psprintf("%d", Max(work_mem, 1024)),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	CheckTableNotInUse(idx, "REINDEX INDEX");
	TransferPredicateLocksToHeapRelation(idx);
	RelationSetNewRelfilenode(idx, idx->rd_rel->relpersistence);
	info = BuildIndexInfo(idx);
	feed_am = *am;
	feed_am.index_build_range_scan = feed_range_scan;
	feed.index = index;
	feed.keys = rl->keys;
	feed.nkeys = rl->rows;
	feed.am = am;
	heap->rd_tableam = &feed_am;
	PG_TRY();
	{
		index_build(heap, idx, info, true, false);
	}
	PG_FINALLY();
	{
		if (heap->rd_tableam == &feed_am)
			heap->rd_tableam = am;
		feed.keys = NULL;
	}
	PG_END_TRY();
	BufFileClose(rl->keys);
	rl->keys = NULL;
	index_close(idx, NoLock);
	AtEOXact_GUC(true, nest);
}

/*
 * cache_relation
 *	  Read rel's blocks into shared buffers, at most *budget of them (less
 *	  what was read): as pg_prewarm does, each block through the buffer
 *	  manager's usual strategy, so that they stay.
 */
static void
cache_relation(Relation rel, int64 *budget)
{
	BlockNumber n = RelationGetNumberOfBlocks(rel);

	for (BlockNumber b = 0; b < n && *budget > 0; b++, (*budget)--)
	{
		CHECK_FOR_INTERRUPTS();
		ReleaseBuffer(ReadBufferExtended(rel, MAIN_FORKNUM, b, RBM_NORMAL, NULL));
	}
}

/*
 * cache_table
 *	  The indexes of table relid (indexes) and its own blocks
 *	  (heap, when all of them fit) read into shared buffers, at most
 *	  *budget blocks in all (decreased by what was read).  Batch 0 writes
 *	  the target and a state table past shared buffers (an index build
 *	  writes its pages to the file directly; a load or a large INSERT
 *	  through a ring of a few buffers), and each incremental batch then
 *	  inserts into random leaves of the target's index on the keys' hash
 *	  (and updates random rows): the first batches after batch 0 read
 *	  those pages from the operating system one at a time, 30-45 % of
 *	  such a batch in the pool worker at 216k groups, and the reads fall
 *	  off only as the index fills shared buffers (bench/README.md, "Round
 *	  10 (session 31)").  Blocks already in shared buffers cost a look-up.
 *	  Not for a relation without storage of its own (partitioned).
 */
static void
cache_table(Oid relid, bool indexes, bool heap, int64 *budget)
{
	Relation	rel;
	ListCell   *lc;

	if (!OidIsValid(relid) || *budget <= 0)
		return;
	rel = try_table_open(relid, AccessShareLock);
	if (rel == NULL)
		return;
	if (rel->rd_rel->relkind == RELKIND_RELATION || rel->rd_rel->relkind == RELKIND_MATVIEW)
	{
		foreach(lc, indexes ? RelationGetIndexList(rel) : NIL)
		{
			Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

			if (idx->rd_rel->relkind == RELKIND_INDEX && idx->rd_index->indisvalid)
				cache_relation(idx, budget);
			index_close(idx, AccessShareLock);
		}
		if (heap && RelationGetNumberOfBlocks(rel) <= *budget)
			cache_relation(rel, budget);
	}
	table_close(rel, AccessShareLock);
}

/*
 * cq_rowload_cache_blocks
 *	  The blocks cq_rowload_cache reads into shared buffers at most.
 */
int64
cq_rowload_cache_blocks(void)
{
	return NBuffers / 8;
}

/*
 * cq_rowload_cache
 *	  At the end of batch 0: cache_table of the target (its heap too with
 *	  target_heap, update mode, which rewrites its rows, when
 *	  cq.batch0_read_back is on) and of the state table
 *	  (state; InvalidOid: none, or the store), in all at most an eighth
 *	  of shared buffers (cq_rowload_cache_blocks).
 */
void
cq_rowload_cache(Oid target, bool target_heap, Oid state)
{
	int64		budget = cq_rowload_cache_blocks();
	TimestampTz t0 = GetCurrentTimestamp();

	cache_table(target, true, false, &budget);
	cache_table(state, true, false, &budget);
	cache_table(target, false, target_heap && cq_batch0_read_back, &budget);
	cache_table(state, false, true, &budget);
	elog(DEBUG1, "pg_cq: batch 0 read %lld blocks of its tables into shared buffers in %.3f ms",
		 (long long) (cq_rowload_cache_blocks() - budget),
		 (double) (GetCurrentTimestamp() - t0) / 1000.0);
}
