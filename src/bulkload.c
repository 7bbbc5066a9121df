/*-------------------------------------------------------------------------
 *
 * bulkload.c
 *	  Batch 0 over history on the table path, loaded directly (issue 12
 *	  goal 2): one scan of the source's aggregated groups writes each group
 *	  to the state table and its row to the target by a heap insert, as
 *	  COPY and CREATE TABLE AS write, instead of the batch statement's
 *	  INSERT ... RETURNING chain.
 *
 * The batch statement of batch 0 (plan.c's batch_sql with history) inserts
 * d, the partial aggregates of every group, into the empty state with
 * RETURNING, keeps those rows (CTE m, spilled to a temporary file beyond
 * work_mem), and inserts the target rows computed from them; d itself is
 * kept too, to count the rows read.  At a million groups those copies
 * (written to and read back from temporary files) and the executor's
 * per-row INSERT work made the fold about twice the plain GROUP BY's CPU
 * (bench/README.md, "Fold efficiency").  Here a SELECT of d's rows, each
 * with the target row computed from it (the final values, the query's
 * outputs and its HAVING, as the statement computes them), goes to a
 * DestReceiver that inserts the state tuple and, where HAVING holds, the
 * target tuple, as COPY inserts: buffered, a thousand rows (or 64 kB) at a
 * time written by table_multi_insert (each page filled under one lock, one
 * WAL record per page of the logged target instead of one per row),
 * through a BulkInsertState (the page being filled stays pinned); the
 * rows read are the sum of the groups' counts.
 * Nothing is kept in between, and no executor INSERT runs per row.
 *
 * The tuples are formed from the SELECT's columns without the coercions
 * of an INSERT, so the path is taken only when that changes nothing: the
 * columns' types agree, and the tables run nothing an INSERT would run
 * besides the heap insert: no index (batch.c dropped them for the load,
 * to build them after it) but pg_cq's own on the key hash, which the load
 * builds itself after it from the hashes and TIDs of the rows it wrote
 * (cq_bulk_index_plan, build_index), no trigger, rule, row-level security, CHECK
 * constraint, generated or identity column, every column of the target
 * one of the query's outputs, and the current user (the query's owner)
 * holds INSERT on both; NOT NULL is checked here as the executor checks
 * it.  Otherwise (cq_bulk_fold returns false before it runs anything) the
 * batch statement runs as before.  cq.bulk_load = off turns the path off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/hio.h"
#include "storage/bufmgr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "storage/procarray.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "storage/buffile.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "bulkload.h"
#include "citus.h"
#include "delta.h"
#include "guc.h"
#include "sql_builder.h"
#include "state.h"
#include "sink.h"
#include "store.h"

/*
 * Rows are inserted as COPY inserts them: buffered, up to BULK_MAX_ROWS rows
 * or BULK_MAX_BYTES of their data per table, then written together by
 * table_multi_insert, which fills each page under one lock and, for a
 * logged table, writes one WAL record per page rather than one per row.
 */
#define BULK_MAX_ROWS 1000
#define BULK_MAX_BYTES 65535

typedef struct BulkBuffer
{
	Relation	rel;
	TupleDesc	desc;			/* a copy of rel's, unpinned: see store_row */
	int			options;		/* table_multi_insert's */
	TupleTableSlot *slots[BULK_MAX_ROWS];	/* created as needed */
	int			nused;
	Size		bytes;
	BufFile    *keys;			/* (h, TID) of each row written, for its index; or NULL */
	int32		h[BULK_MAX_ROWS];	/* the rows' key hashes, when keys */
} BulkBuffer;

/* What keys holds per row: the index key and the row's TID. */
typedef struct BulkKey
{
	int32		h;
	ItemPointerData tid;
} BulkKey;

/* The receiver of the load's SELECT. */
typedef struct BulkDest
{
	DestReceiver pub;
	Relation	state;
	Relation	target;
	int		   *smap;			/* per state attribute: its SELECT column (0-based), -1 dropped */
	int		   *tmap;			/* the same per target attribute */
	int			ncol;			/* SELECT column of the group's row count n */
	int			hcol;			/* SELECT column of the key hash h, -1 without */
	int			having_col;		/* SELECT column of HAVING, -1 without */
	BulkInsertState sbis;
	BulkInsertState tbis;
	BulkBuffer	sbuf;			/* state rows waiting for their multi-insert */
	BulkBuffer	tbuf;			/* target rows waiting for theirs */
	CommandId	cid;
	MemoryContext rowcxt;
	MemoryContext cxt;			/* of the buffers' slots and their tuples */
	CqBulkResult *res;
} BulkDest;

/*
 * cq_bulk_sql
 *	  The SELECT of a direct load of batch 0 over history, or NULL when the
 *	  query is not one the path serves: an update-mode aggregation with
 *	  GROUP BY on the table path without event time, windows the
 *	  watermark closes, DISTINCT aggregates, session windows or a join of
 *	  streams.  Its columns: the state row (g1..gN, n, p1..pK, h when the
 *	  state is keyed by a hash), the query's outputs, then HAVING as a
 *	  boolean (when the query has one), all over d, the batch statement's
 *	  partial aggregates.  untested: over the history without the test of
 *	  cq_xid (cq_delta_history_all_sql; NULL where that cannot be).
 */
char *
cq_bulk_sql(CqAnalysis *an, CqQuery *q, Oid viewid, bool untested)
{
	StringInfoData buf;
	char	   *having;
	int			nparts = list_length(an->parts);

	if (!an->is_aggregate || an->is_dedup || an->session || an->distinct_sets != NIL ||
		an->group_exprs == NIL || cq_state_evicts(an) || q->opts.mode != CQ_MODE_UPDATE ||
		an->join != NULL || an->et_attno != InvalidAttrNumber ||
		!OidIsValid(q->state_table) || !OidIsValid(viewid) ||
		(untested && !cq_delta_history_all_ok(an)))
		return NULL;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	if (untested)
		cq_state_delta_cte_all(&buf, an);
	else
		cq_state_delta_cte(&buf, an, true);
	appendStringInfoString(&buf, " SELECT ");
	cq_state_append_group_cols(&buf, an, "f.", ", ");
	appendStringInfoString(&buf, ", f._s_n");
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(&buf, ", f._s_p%d", p);
	if (an->hash_keys)
		appendStringInfo(&buf, ", f._s_%s", CQ_KEY_HASH_COLUMN);
	appendStringInfo(&buf, ", %s", cq_sink_output_list(an, viewid));
	having = cq_sink_having_sql(an, viewid);
	if (having)
		appendStringInfo(&buf, ", ((%s) IS TRUE)", having);
	appendStringInfo(&buf, " FROM (SELECT %s, s.n AS _s_n", cq_state_final_select_list(an));
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(&buf, ", s.p%d AS _s_p%d", p, p);
	if (an->hash_keys)
		appendStringInfo(&buf, ", s.%s AS _s_%s", CQ_KEY_HASH_COLUMN, CQ_KEY_HASH_COLUMN);
	appendStringInfoString(&buf, " FROM d s) f");
	return buf.data;
}

/*
 * plain_table
 *	  rel takes an INSERT as a heap insert and nothing else: a plain table
 *	  (not a Citus table, whose rows live in its shards) without triggers,
 *	  rules, row-level security, CHECK constraints, generated or identity
 *	  columns, on which the current user holds INSERT, and without indexes
 *	  but index (the one cq_bulk_index_plan found, which the load builds
 *	  from the keys it writes).
 */
static bool
plain_table(Relation rel, Oid index)
{
	List	   *indexes;

	if (!cq_rel_takes_heap_inserts(rel) ||
		cq_citus_kind(RelationGetRelid(rel)) != CQ_CITUS_NONE ||
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;
	indexes = RelationGetIndexList(rel);
	return indexes == NIL ||
		(OidIsValid(index) && list_length(indexes) == 1 && linitial_oid(indexes) == index);
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
 * buildable_index
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
static bool
buildable_index(Relation rel, List *keys, Oid *index)
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
 * cq_bulk_index_plan
 *	  Before batch 0 over history of a query whose direct load may run
 *	  (cq_bulk_sql): can that load build the indexes of the state and the
 *	  target itself (buildable_index)?  Then *ix names them, their locks
 *	  are taken, and batch.c leaves them in place; otherwise false, and
 *	  batch.c drops them for the load and builds them after it by their
 *	  definitions, as before.  Only for a state keyed by the key hash h, on
 *	  a target the current user (the query's owner) owns.
 */
bool
cq_bulk_index_plan(CqAnalysis *an, CqQuery *q, CqBulkIndexes *ix)
{
	Relation	state;
	Relation	target;
	bool		ok;

	memset(ix, 0, sizeof(*ix));
	if (!cq_bulk_load || !an->hash_keys || !OidIsValid(q->state_table) || !OidIsValid(q->target) ||
		get_rel_relkind(q->target) != RELKIND_RELATION || !pg_class_ownercheck(q->target, GetUserId()))
		return false;
	state = table_open(q->state_table, RowExclusiveLock);
	target = table_open(q->target, RowExclusiveLock);
	ok = buildable_index(target, cq_sink_target_key_attnums(an, target), &ix->target_index) &&
		buildable_index(state, NIL, &ix->state_index);
	table_close(target, NoLock);
	table_close(state, NoLock);
	return ok;
}

/*
 * map_columns
 *	  For each attribute of rel, the SELECT column (of result, from first
 *	  on, names[k] the name of column first + k) that gives it, by name;
 *	  false unless every attribute is given exactly one and the types agree
 *	  (same type; same type modifier unless the attribute has none).
 */
static bool
map_columns(Relation rel, TupleDesc result, int first, char **names, int nnames, int *map)
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
 * flush_rows
 *	  Insert the rows buffered for one table; with keys, note each row's
 *	  key hash and TID there for its index.
 */
static void
flush_rows(BulkDest *d, BulkBuffer *buf, BulkInsertState bis)
{
	if (buf->nused == 0)
		return;
	table_multi_insert(buf->rel, buf->slots, buf->nused, d->cid, buf->options, bis);
	if (buf->keys)
	{
		BulkKey		keys[BULK_MAX_ROWS];

		for (int i = 0; i < buf->nused; i++)
		{
			keys[i].h = buf->h[i];
			keys[i].tid = buf->slots[i]->tts_tid;
		}
		BufFileWrite(buf->keys, keys, sizeof(BulkKey) * buf->nused);
	}
	for (int i = 0; i < buf->nused; i++)
		ExecClearTuple(buf->slots[i]);
	buf->nused = 0;
	buf->bytes = 0;
}

/*
 * store_row
 *	  Form the row of buf's table from the SELECT's columns (map), after
 *	  the executor's NOT NULL check, as a tuple of its own (the SELECT's
 *	  values last until the next row only), and insert the buffered rows
 *	  when the buffer is full.
 */
static void
store_row(BulkDest *d, BulkBuffer *buf, int *map, TupleTableSlot *in, BulkInsertState bis)
{
	Relation	rel = buf->rel;
	TupleDesc	desc = RelationGetDescr(rel);
	TupleTableSlot *slot;
	MemoryContext old;

	if (buf->slots[buf->nused] == NULL)
	{
		/*
		 * In the receiver's context: the slot's tuple is made in it.  Over a
		 * copy of the relation's descriptor, not the relation's own: a slot
		 * pins a reference-counted descriptor in the resource owner, whose
		 * table of references beyond 64 is an open-addressing hash keyed by
		 * the descriptor's address, so a thousand slots of one relation make
		 * one run of a thousand entries; every other pin and release in the
		 * load (hash_record of each group's keys pins the row type's
		 * descriptor) that hashes into that run walks it: 11-13% of batch 0's
		 * CPU at a million groups (bench/README.md, "Fold efficiency").  The
		 * copy's reference count is -1: never pinned.
		 */
		old = MemoryContextSwitchTo(d->cxt);
		if (buf->desc == NULL)
			buf->desc = CreateTupleDescCopy(desc);
		buf->slots[buf->nused] = MakeSingleTupleTableSlot(buf->desc, table_slot_callbacks(rel));
		MemoryContextSwitchTo(old);
	}
	slot = buf->slots[buf->nused];
	ExecClearTuple(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		if (map[i] < 0)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
			continue;
		}
		slot->tts_values[i] = in->tts_values[map[i]];
		slot->tts_isnull[i] = in->tts_isnull[map[i]];
		if (slot->tts_isnull[i] && TupleDescAttr(desc, i)->attnotnull)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
							NameStr(TupleDescAttr(desc, i)->attname), RelationGetRelationName(rel)),
					 errtablecol(rel, i + 1)));
	}
	if (buf->keys)
		buf->h[buf->nused] = DatumGetInt32(in->tts_values[d->hcol]);
	ExecStoreVirtualTuple(slot);
	ExecMaterializeSlot(slot);
	/* the tuple just formed (not a second pass over the values to size them) */
	buf->bytes += ExecFetchSlotHeapTuple(slot, false, NULL)->t_len;
	if (++buf->nused == BULK_MAX_ROWS || buf->bytes >= BULK_MAX_BYTES)
		flush_rows(d, buf, bis);
}

/*
 * unringed_bulk_insert_state
 *	  A BulkInsertState that keeps the page being filled pinned from one
 *	  row to the next, without the ring of buffers COPY's has: with the
 *	  ring the pages written leave shared buffers at once (the backend
 *	  writing them out, the target's WAL flushed first), and the index
 *	  builds after the load read them back from the kernel into other
 *	  buffers.  Measured on the loaded machine, the same CPU time and page
 *	  faults either way (bench/README.md, "Fold efficiency"); without the
 *	  ring the write-out is left to the checkpointer, as for an INSERT.
 */
static BulkInsertState
unringed_bulk_insert_state(void)
{
	BulkInsertState bis = GetBulkInsertState();

	FreeAccessStrategy(bis->strategy);
	bis->strategy = NULL;
	return bis;
}

/*
 * The index builds of a load (cq_bulk_index_plan): the btree's own build
 * (index_build, as REINDEX runs it: a new empty file, then ambuild) reads
 * the table through its access method's index_build_range_scan, which
 * evaluates the index's expression on every row (the target's
 * hash_record(ROW(keys)): 27% of the builds' instructions at 183k groups,
 * bench/README.md, "Fold efficiency").  The load has those values already,
 * as the column h of each row it wrote, with the rows' TIDs (BulkBuffer's
 * keys): for the build, the table's relation descriptor points to a copy
 * of its access method whose index_build_range_scan hands the btree those
 * (h, TID) pairs instead, the rows the scan would have found (the table
 * was empty, and nobody else writes it: buildable_index).  The descriptor
 * is restored right after; if it is rebuilt in between (an invalidation),
 * the build scans the table as usual and gets the same index.
 */
typedef struct KeyFeed
{
	Oid			index;			/* the index being built */
	BufFile    *keys;
	const TableAmRoutine *am;	/* the table's own */
} KeyFeed;

static KeyFeed feed;
static TableAmRoutine feed_am;

static double
feed_range_scan(Relation table_rel, Relation index_rel, IndexInfo *index_info, bool allow_sync,
				bool anyvisible, bool progress, BlockNumber start_blockno, BlockNumber numblocks,
				IndexBuildCallback callback, void *callback_state, TableScanDesc scan)
{
	BulkKey		keys[BULK_MAX_ROWS];
	double		n = 0;
	size_t		got;

	if (feed.keys == NULL || RelationGetRelid(index_rel) != feed.index || scan != NULL ||
		start_blockno != 0 || numblocks != InvalidBlockNumber)
		return feed.am->index_build_range_scan(table_rel, index_rel, index_info, allow_sync,
												anyvisible, progress, start_blockno, numblocks,
												callback, callback_state, scan);
	if (BufFileSeek(feed.keys, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("pg_cq: could not rewind the key hashes of batch 0's load: %m")));
	while ((got = BufFileRead(feed.keys, keys, sizeof(keys))) > 0)
	{
		if (got % sizeof(BulkKey) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("pg_cq: could not read the key hashes of batch 0's load")));
		for (int i = 0; i < got / sizeof(BulkKey); i++)
		{
			Datum		value = Int32GetDatum(keys[i].h);
			bool		isnull = false;

			callback(index_rel, &keys[i].tid, &value, &isnull, true, callback_state);
		}
		n += got / sizeof(BulkKey);
		CHECK_FOR_INTERRUPTS();
	}
	elog(DEBUG1, "pg_cq: index \"%s\" built from the %.0f key hashes of batch 0's load",
		 RelationGetRelationName(index_rel), n);
	return n;
}

/*
 * build_index
 *	  Build index of heap from the key hashes and TIDs in keys, as REINDEX
 *	  builds it (a new file, the old one dropped at commit, kept if the
 *	  batch fails), its sort within the batch's memory budget
 *	  (maintenance_work_mem = work_mem, as batch.c's build_index).
 */
static void
build_index(Relation heap, Oid index, BufFile *keys)
{
	Relation	idx = index_open(index, NoLock);	/* locked: buildable_index */
	IndexInfo  *info;
	const TableAmRoutine *am = heap->rd_tableam;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("maintenance_work_mem", psprintf("%d", Max(work_mem, 1024)),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	CheckTableNotInUse(idx, "REINDEX INDEX");
	TransferPredicateLocksToHeapRelation(idx);
	RelationSetNewRelfilenode(idx, idx->rd_rel->relpersistence);
	info = BuildIndexInfo(idx);
	feed_am = *am;
	feed_am.index_build_range_scan = feed_range_scan;
	feed.index = index;
	feed.keys = keys;
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
	index_close(idx, NoLock);
	AtEOXact_GUC(true, nest);
}

/*
 * same_key_columns
 *	  Does each key column of the target (in grouping order) hash as the
 *	  load's key hash h hashes that key: the SELECT's column g<i> of result,
 *	  over whose values d computes h (same type, same collation: a
 *	  nondeterministic collation hashes by it)?
 */
static bool
same_key_columns(CqAnalysis *an, Relation target, TupleDesc result)
{
	List	   *keys = cq_sink_target_key_attnums(an, target);
	ListCell   *lc;

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
	return list_length(keys) == list_length(an->group_exprs);
}

/*
 * bulk_startup, bulk_receive, bulk_shutdown, bulk_destroy
 *	  The DestReceiver: every group to the state, those HAVING keeps to the
 *	  target.
 */
static void
bulk_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	BulkDest   *d = (BulkDest *) self;

	d->cid = GetCurrentCommandId(true);
}

static bool
bulk_receive(TupleTableSlot *slot, DestReceiver *self)
{
	BulkDest   *d = (BulkDest *) self;
	MemoryContext old = MemoryContextSwitchTo(d->rowcxt);

	slot_getallattrs(slot);
	store_row(d, &d->sbuf, d->smap, slot, d->sbis);
	d->res->groups++;
	d->res->input_rows += DatumGetInt64(slot->tts_values[d->ncol]);
	if (d->having_col < 0 ||
		(!slot->tts_isnull[d->having_col] && DatumGetBool(slot->tts_values[d->having_col])))
	{
		store_row(d, &d->tbuf, d->tmap, slot, d->tbis);
		d->res->output_rows++;
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(d->rowcxt);
	return true;
}

static void
bulk_shutdown(DestReceiver *self)
{
}

static void
bulk_destroy(DestReceiver *self)
{
}

static bool bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, bool read_only, int nargs,
					  Oid *types, Datum *values, const char *nulls, const CqBulkIndexes *ix,
					  CqBulkResult *res);

/* cq_bulk_fold's run: the direct load, read-only in cq_delta_run_history's snapshot */
typedef struct BulkRun
{
	CqAnalysis *an;
	CqQuery    *q;
	int			nargs;
	Oid		   *types;
	Datum	   *values;
	const char *nulls;
	const CqBulkIndexes *ix;
	CqBulkResult *res;
} BulkRun;

static bool
bulk_run(const char *sql, void *arg)
{
	BulkRun    *r = (BulkRun *) arg;

	return bulk_fold(r->an, r->q, sql, true, r->nargs, r->types, r->values, r->nulls, r->ix, r->res);
}

/*
 * cq_bulk_fold
 *	  Run batch 0 over history of the query as a direct load: sql is its
 *	  cq_bulk_sql, run with the batch statement's parameters, or sql_all
 *	  (cq_bulk_sql untested, or NULL) when every row of the source passes
 *	  the test of cq_xid (cq_delta_run_history decides, as for the store's
 *	  batch 0).  Returns
 *	  false, having done nothing, when the path does not apply now
 *	  (cq.bulk_load off, or the state or target not as the file header
 *	  says; indexes still there when batch.c could not drop them).  Runs
 *	  as the query's owner, in the batch's SPI connection; the state and
 *	  target are empty.
 */
bool
cq_bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, const char *sql_all, int nargs,
			 Oid *types, Datum *values, const char *nulls, const CqBulkIndexes *ix,
			 CqBulkResult *res)
{
	BulkRun		r = {an, q, nargs, types, values, nulls, ix, res};
	bool		untested;
	bool		done;

	if (sql_all == NULL || !cq_bulk_load || nargs < 3)
		return bulk_fold(an, q, sql, false, nargs, types, values, nulls, ix, res);
	done = cq_delta_run_history(an->source_relid, values[2], sql, sql_all, bulk_run, &r,
								&untested);
	res->untested = done && untested;
	if (res->untested)
		elog(DEBUG1, "pg_cq: table fold: batch 0 read the history's rows without testing cq_xid");
	return done;
}

/*
 * bulk_fold
 *	  cq_bulk_fold with the statement sql; read_only: in the active
 *	  snapshot rather than a new one.
 */
static bool
bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, bool read_only, int nargs, Oid *types,
		  Datum *values, const char *nulls, const CqBulkIndexes *ix, CqBulkResult *res)
{
	CqBulkIndexes none = {InvalidOid, InvalidOid};
	SPIPlanPtr	plan;
	List	   *sources;
	TupleDesc	result;
	Relation	state;
	Relation	target;
	int			ngroups = list_length(an->group_exprs);
	int			nparts = list_length(an->parts);
	int			nstate = ngroups + 1 + nparts + (an->hash_keys ? 1 : 0);
	int			nout = list_length(an->outputs);
	char	  **snames;
	char	  **tnames;
	int			k = 0;
	bool		ok;
	BulkDest	d;
	ParamListInfo params;
	SPIExecuteOptions opts;
	ListCell   *lc;

	memset(res, 0, sizeof(*res));
	/* (a Citus source: its distributed SELECT is left to the statement) */
	if (!cq_bulk_load || sql == NULL || cq_citus_kind(an->source_relid) != CQ_CITUS_NONE)
		return false;
	plan = cq_spi_plan(sql, nargs, types);
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1 || ((CachedPlanSource *) linitial(sources))->resultDesc == NULL)
		return false;
	result = ((CachedPlanSource *) linitial(sources))->resultDesc;
	if (result->natts != nstate + nout + (an->query->havingQual ? 1 : 0))
		return false;

	/* the SELECT's columns for the state, then the target */
	snames = palloc(sizeof(char *) * nstate);
	for (int g = 1; g <= ngroups; g++)
		snames[k++] = psprintf("g%d", g);
	snames[k++] = "n";
	for (int p = 1; p <= nparts; p++)
		snames[k++] = psprintf("p%d", p);
	if (an->hash_keys)
		snames[k++] = CQ_KEY_HASH_COLUMN;
	tnames = palloc(sizeof(char *) * nout);
	k = 0;
	foreach(lc, an->outputs)
		tnames[k++] = ((TargetEntry *) lfirst(lc))->resname;

	state = table_open(q->state_table, RowExclusiveLock);
	target = table_open(q->target, RowExclusiveLock);
	memset(&d, 0, sizeof(d));
	d.smap = palloc(sizeof(int) * RelationGetDescr(state)->natts);
	d.tmap = palloc(sizeof(int) * RelationGetDescr(target)->natts);
	if (ix == NULL || !an->hash_keys)
		ix = &none;
	ok = plain_table(state, ix->state_index) && plain_table(target, ix->target_index) &&
		map_columns(state, result, 0, snames, nstate, d.smap) &&
		map_columns(target, result, nstate, tnames, nout, d.tmap) &&
		TupleDescAttr(result, ngroups)->atttypid == INT8OID &&
		(an->query->havingQual == NULL || TupleDescAttr(result, nstate + nout)->atttypid == BOOLOID) &&
		(!OidIsValid(ix->target_index) || same_key_columns(an, target, result));
	if (!ok)
	{
		table_close(target, NoLock);
		table_close(state, NoLock);
		return false;
	}

	d.pub.receiveSlot = bulk_receive;
	d.pub.rStartup = bulk_startup;
	d.pub.rShutdown = bulk_shutdown;
	d.pub.rDestroy = bulk_destroy;
	d.pub.mydest = DestNone;
	d.state = state;
	d.target = target;
	d.cxt = CurrentMemoryContext;
	d.sbuf.rel = state;
	d.sbuf.options = TABLE_INSERT_SKIP_FSM;
	d.tbuf.rel = target;
	d.tbuf.options = 0;
	d.ncol = ngroups;
	d.hcol = an->hash_keys ? nstate - 1 : -1;
	if (OidIsValid(ix->state_index))
		d.sbuf.keys = BufFileCreateTemp(false);
	if (OidIsValid(ix->target_index))
		d.tbuf.keys = BufFileCreateTemp(false);
	d.having_col = an->query->havingQual ? nstate + nout : -1;
	d.sbis = unringed_bulk_insert_state();
	d.tbis = unringed_bulk_insert_state();
	d.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq bulk load row",
									 ALLOCSET_DEFAULT_SIZES);
	d.res = res;

	params = makeParamList(nargs);
	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = nulls[i] == 'n';
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = types[i];
	}
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = read_only;
	opts.dest = (DestReceiver *) &d;
	if (SPI_execute_plan_extended(plan, &opts) < 0)
		elog(ERROR, "pg_cq: the direct load of batch 0 failed");
	flush_rows(&d, &d.sbuf, d.sbis);
	flush_rows(&d, &d.tbuf, d.tbis);

	FreeBulkInsertState(d.sbis);
	FreeBulkInsertState(d.tbis);
	table_finish_bulk_insert(state, TABLE_INSERT_SKIP_FSM);
	table_finish_bulk_insert(target, 0);
	for (int i = 0; i < BULK_MAX_ROWS; i++)
	{
		if (d.sbuf.slots[i])
			ExecDropSingleTupleTableSlot(d.sbuf.slots[i]);
		if (d.tbuf.slots[i])
			ExecDropSingleTupleTableSlot(d.tbuf.slots[i]);
	}
	MemoryContextDelete(d.rowcxt);
	CommandCounterIncrement();
	if (d.sbuf.keys || d.tbuf.keys)
	{
		double		t0 = cq_store_cpu_ms();

		if (d.sbuf.keys)
		{
			build_index(state, ix->state_index, d.sbuf.keys);
			BufFileClose(d.sbuf.keys);
			res->state_index_built = true;
		}
		if (d.tbuf.keys)
		{
			build_index(target, ix->target_index, d.tbuf.keys);
			BufFileClose(d.tbuf.keys);
			res->target_index_built = true;
		}
		elog(DEBUG1, "pg_cq: table fold: batch 0's indexes built from the load's key hashes %.3f ms (CPU time)",
			 cq_store_cpu_ms() - t0);
	}
	table_close(target, NoLock);
	table_close(state, NoLock);
	return true;
}
