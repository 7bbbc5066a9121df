/*-------------------------------------------------------------------------
 *
 * store_update.c
 *	  The changed groups of a later batch of an update query on the store,
 *	  written to its target from C (issue 12 goal 5).
 *
 * An incremental batch of an update-mode aggregation with grouping keys
 * writes the groups it changed (m) by the upsert (sink.c,
 * existing_groups_ctes: CqStoreSql.sink, or sink_existing when no group
 * is new): o1 inserts the groups new to the state; for the others, ou
 * updates the target rows of their keys whose non-key columns changed (by
 * binary image, record_image_ne), oi inserts those whose row is missing,
 * and with HAVING od deletes the rows of those that no longer pass it.
 * At a hundred small queries that statement was the largest part of a
 * batch's fixed CPU: the executor start of its CTEs (a ModifyTable node
 * each, joins, the target's index opened three times) for a few rows
 * (bench/batch_cg.sh).
 *
 * Here the same writes are made row by row from C, as logical
 * replication's apply makes its own (execReplication.c): one SELECT over
 * m gives each changed group's key hash h, its _ins flag, its outputs
 * and HAVING as the upsert computes them (CqStoreSql.load_changed, the
 * only statement left); for each group, the target rows of its keys are
 * found through pg_cq's index on hash_record(ROW(keys)) with the h the
 * store computed (the same value: cq_store_set_h), their keys compared by
 * GROUP BY's equality, NULL matching NULL (a hash collision finds other
 * groups' rows, which are skipped), under the SELECT's snapshot, which is
 * what the upsert's CTEs all read; then each row is updated, deleted or
 * inserted through the table access method (heap_update: a HOT update
 * where the page has room, else the new version's index entry inserted
 * with h, the key columns being unchanged) exactly where the upsert would:
 *
 *	 new group (only with_new, the statement with o1): inserted if HAVING;
 *	 HAVING true (or none): each row found whose non-key columns differ
 *		 from the outputs in binary image is updated, its key columns kept
 *		 as they are (SET names only the others); no row found: inserted;
 *	 HAVING false or NULL: each row found is deleted.
 *
 * The written rows (updated and inserted, not deleted) are the
 * statement's count.  A row that a concurrent transaction updated or
 * deleted after the snapshot is handled as the executor's UPDATE and
 * DELETE handle it under READ COMMITTED (the only level a batch runs
 * at): its latest version is locked and, if it still holds the group's
 * keys (and for an update still differs), written; a deleted one is
 * skipped and not inserted again (the snapshot still shows it, as oi's
 * NOT EXISTS sees it).  NOT NULL is checked as the executor checks it.
 *
 * Only where those writes are all the statement would do: the target
 * qualifies for cq_target_load_new (a plain table: no trigger, rule,
 * row-level security, CHECK, generated or identity column; not a
 * partition, whose constraint an UPDATE checks, nor a Citus table, nor an
 * inheritance parent, whose children the statement's UPDATE, DELETE and
 * NOT EXISTS read too; every
 * column an output of the same type; pg_cq's key-hash index, ready and
 * valid, its only index), the current user (the query's owner) holds
 * SELECT, INSERT, and UPDATE and DELETE where the statement has them, at
 * the table level; and the replica identity check an UPDATE or DELETE
 * makes at its start passes (else its error, as the statement raises it).
 * Checked in every batch under the target's lock.  Otherwise, or with
 * cq.target_update_in_c off, the batch runs MERGE where merge.c takes it
 * (keys NOT NULL), else the statement.  Where it applies this path comes
 * first, MERGE included: it measured faster than both statements
 * (bench/merge.sh, merge.c).
 *
 * Order.  The groups come in the store's order, random to the target's
 * index; each is written as it comes.  Where they are many for a large
 * index (in_key_order) they are first sorted by h, in work_mem (spilling
 * beyond), and then written one by one in that order, exactly as they
 * would be in the other (write_in_key_order): each probe then reads the
 * leaf page the previous one read, or the next.  Session 43 measured why
 * (bench/README.md, "Session 43"): at 1M target groups and 100k changed,
 * in the store's order the writer was no faster than MERGE's nested loop
 * over the same index (probes random over a 1M-row index and heap, in a
 * shared buffer pool that the benchmark's eight such targets overfill).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "store_update.h"
#include "guc.h"
#include "rowload.h"
#include "sql_builder.h"
#include "store_load.h"

/* The statement's columns before the outputs: h, _ins */
#define UPD_FIRST_OUTPUT 2

typedef struct TargetUpdate
{
	DestReceiver pub;
	Relation	rel;
	TupleDesc	desc;			/* rel's */
	Relation	idx;			/* pg_cq's index on the key hash */
	IndexInfo  *iinfo;			/* built at its first insert */
	IndexScanDesc scan;
	MemoryContext scan_cxt;		/* the scan's: what it keeps across rows */
	TupleTableSlot *found;		/* a row of the index scan */
	TupleTableSlot *latest;		/* a row's latest version, locked */
	TupleTableSlot *row;		/* the row written (virtual) */
	int		   *map;			/* per attribute: its statement column, -1 dropped */
	bool	   *keep;			/* per attribute: a key output, kept by an update */
	AttrNumber *key_att;		/* per grouping key: its attribute */
	int		   *key_col;		/* per grouping key: its statement column */
	int			nkeys;
	FmgrInfo   *eq;				/* per grouping key: GROUP BY's equality */
	const Oid  *coll;
	int			having_col;		/* -1: no HAVING */
	bool		with_new;		/* the statement inserts new groups (o1) */
	bool		nonkeys;		/* some output is not a key (the statement's UPDATE) */
	Snapshot	snapshot;		/* the SELECT's: what the upsert reads */
	CommandId	cid;
	MemoryContext row_cxt;
	bool		in_key_order;	/* sort the groups by h first (in_key_order) */
	Tuplesortstate *sort;		/* with in_key_order: the groups received */
	TupleTableSlot *sorted;		/* a group read back from it */
	int64		written;
	int64		updated;
	int64		inserted;
	int64		deleted;
} TargetUpdate;

/*
 * keys_match
 *	  Does target row t hold the keys of the statement row values/isnull,
 *	  by GROUP BY's equality, NULL matching NULL (cq_state_append_key_equal)?
 */
static bool
keys_match(TargetUpdate *tu, HeapTuple t, Datum *values, bool *isnull)
{
	for (int g = 0; g < tu->nkeys; g++)
	{
		int			c = tu->key_col[g];
		bool		tnull;
		Datum		tv = heap_getattr(t, tu->key_att[g], tu->desc, &tnull);

		if (tnull != isnull[c])
			return false;
		if (tnull)
			continue;
		if (!DatumGetBool(FunctionCall2Coll(&tu->eq[g], tu->coll[g], tv, values[c])))
			return false;
	}
	return true;
}

/*
 * changed
 *	  Do t's non-key columns differ from the outputs in binary image
 *	  (record_image_ne of the two rows, as ou compares them)?
 */
static bool
changed(TargetUpdate *tu, HeapTuple t, Datum *values, bool *isnull)
{
	for (int i = 0; i < tu->desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tu->desc, i);
		int			c = tu->map[i];
		bool		tnull;
		Datum		tv;

		if (c < 0 || tu->keep[i])
			continue;
		tv = heap_getattr(t, i + 1, tu->desc, &tnull);
		if (tnull != isnull[c])
			return true;
		if (!tnull && !datum_image_eq(tv, values[c], att->attbyval, att->attlen))
			return true;
	}
	return false;
}

/*
 * form_row
 *	  The row to write into tu->row: the outputs, except that with old the
 *	  key columns keep old's values (an update); after the executor's NOT
 *	  NULL check (its error, with the failing row).
 */
static void
form_row(TargetUpdate *tu, HeapTuple old, Datum *values, bool *isnull)
{
	TupleTableSlot *slot = tu->row;

	ExecClearTuple(slot);
	for (int i = 0; i < tu->desc->natts; i++)
	{
		if (tu->map[i] < 0)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
			continue;
		}
		if (old != NULL && tu->keep[i])
			slot->tts_values[i] = heap_getattr(old, i + 1, tu->desc, &slot->tts_isnull[i]);
		else
		{
			slot->tts_values[i] = values[tu->map[i]];
			slot->tts_isnull[i] = isnull[tu->map[i]];
		}
	}
	cq_rowload_check_not_null(tu->rel, slot->tts_values, slot->tts_isnull, old ? tu->keep : NULL);
	ExecStoreVirtualTuple(slot);
}

/*
 * index_entry
 *	  The key-hash index entry (h) of the row just written at tu->row's
 *	  TID; unchanged: an update that kept the keys (the executor's hint to
 *	  the btree, index_unchanged_by_update).
 */
static void
index_entry(TargetUpdate *tu, int32 h, bool unchanged)
{
	Datum		value = Int32GetDatum(h);
	bool		null = false;

	if (tu->iinfo == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(tu));

		tu->iinfo = BuildIndexInfo(tu->idx);
		MemoryContextSwitchTo(old);
	}
	index_insert(tu->idx, &value, &null, &tu->row->tts_tid, tu->rel, UNIQUE_CHECK_NO, unchanged,
				 tu->iinfo);
}

/*
 * insert_row
 *	  Insert the group's row (the outputs) and its index entry.
 */
static void
insert_row(TargetUpdate *tu, Datum *values, bool *isnull, int32 h)
{
	form_row(tu, NULL, values, isnull);
	table_tuple_insert(tu->rel, tu->row, tu->cid, 0, NULL);
	index_entry(tu, h, false);
	tu->inserted++;
	tu->written++;
}

/*
 * self_modified
 *	  A row this command already modified: skipped, as the executor skips
 *	  it (ExecUpdate, ExecDelete), unless a later command did (a trigger's:
 *	  none here, but the same error).
 */
static void
self_modified(TargetUpdate *tu, TM_FailureData *tmfd, const char *what)
{
	if (tmfd->cmax != tu->cid)
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
				 errmsg("tuple to be %s was already modified by an operation triggered by the current command",
						what),
				 errhint("Consider using an AFTER trigger instead of a BEFORE trigger to propagate changes to other rows.")));
}

/*
 * lock_latest
 *	  A row (tid) that a concurrent transaction updated after the
 *	  snapshot: lock its latest version into tu->latest (its TID into
 *	  *tid), as the executor does before its EvalPlanQual recheck, and
 *	  return it if it still holds the group's keys; NULL when it was
 *	  deleted, or no longer is the group's.
 */
static HeapTuple
lock_latest(TargetUpdate *tu, ItemPointer tid, LockTupleMode mode, Datum *values, bool *isnull,
			const char *what)
{
	TM_FailureData tmfd;
	TM_Result	res;
	HeapTuple	t;

	res = table_tuple_lock(tu->rel, tid, tu->snapshot, tu->latest, tu->cid, mode, LockWaitBlock,
						   TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
	switch (res)
	{
		case TM_Ok:
			break;
		case TM_Deleted:
			return NULL;
		case TM_SelfModified:
			self_modified(tu, &tmfd, what);
			return NULL;
		default:
			elog(ERROR, "unexpected table_tuple_lock status: %u", res);
	}
	t = ExecFetchSlotHeapTuple(tu->latest, false, NULL);
	if (!keys_match(tu, t, values, isnull))
		return NULL;
	*tid = tu->latest->tts_tid;
	return t;
}

/*
 * update_row
 *	  Update target row old (found under the snapshot) to the group's
 *	  outputs, its keys kept; after a concurrent update, its latest
 *	  version, if still the group's and still different.
 */
static void
update_row(TargetUpdate *tu, HeapTuple old, Datum *values, bool *isnull, int32 h)
{
	ItemPointerData tid = old->t_self;

	for (;;)
	{
		TM_FailureData tmfd;
		LockTupleMode lockmode;
		bool		update_indexes;
		TM_Result	res;

		form_row(tu, old, values, isnull);
		res = table_tuple_update(tu->rel, &tid, tu->row, tu->cid, tu->snapshot, InvalidSnapshot,
								 true, &tmfd, &lockmode, &update_indexes);
		switch (res)
		{
			case TM_Ok:
				if (update_indexes)
					index_entry(tu, h, true);
				tu->updated++;
				tu->written++;
				return;
			case TM_SelfModified:
				self_modified(tu, &tmfd, "updated");
				return;
			case TM_Deleted:
				return;
			case TM_Updated:
				old = lock_latest(tu, &tid, lockmode, values, isnull, "updated");
				if (old == NULL || !changed(tu, old, values, isnull))
					return;
				break;
			default:
				elog(ERROR, "unrecognized table_tuple_update status: %u", res);
		}
	}
}

/*
 * delete_row
 *	  Delete target row old (a group that left HAVING); after a concurrent
 *	  update, its latest version if still the group's.
 */
static void
delete_row(TargetUpdate *tu, HeapTuple old, Datum *values, bool *isnull)
{
	ItemPointerData tid = old->t_self;

	for (;;)
	{
		TM_FailureData tmfd;
		TM_Result	res;

		res = table_tuple_delete(tu->rel, &tid, tu->cid, tu->snapshot, InvalidSnapshot, true, &tmfd,
								 false);
		switch (res)
		{
			case TM_Ok:
				tu->deleted++;
				return;
			case TM_SelfModified:
				self_modified(tu, &tmfd, "deleted");
				return;
			case TM_Deleted:
				return;
			case TM_Updated:
				if (lock_latest(tu, &tid, LockTupleExclusive, values, isnull, "deleted") == NULL)
					return;
				break;
			default:
				elog(ERROR, "unrecognized table_tuple_delete status: %u", res);
		}
	}
}

/*
 * find_rows
 *	  The target rows (copies, t_self their TIDs) of the group of key hash
 *	  h whose keys are values/isnull's, visible to the snapshot.
 */
static List *
find_rows(TargetUpdate *tu, int32 h, Datum *values, bool *isnull)
{
	ScanKeyData key;
	List	   *rows = NIL;

	MemoryContext row_cxt = MemoryContextSwitchTo(tu->scan_cxt);

	/*
	 * In the scan's context: the btree keeps what it allocates while
	 * scanning (the array of items to mark dead, made when a row version
	 * is found dead) until index_endscan frees it
	 */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(h));
	index_rescan(tu->scan, &key, 1, NULL, 0);
	while (index_getnext_slot(tu->scan, ForwardScanDirection, tu->found))
	{
		HeapTuple	t = ExecFetchSlotHeapTuple(tu->found, false, NULL);

		/* another group of the same key hash: not this one's */
		if (keys_match(tu, t, values, isnull))
		{
			MemoryContextSwitchTo(row_cxt);
			t = heap_copytuple(t);
			t->t_self = tu->found->tts_tid;
			rows = lappend(rows, t);
			MemoryContextSwitchTo(tu->scan_cxt);
		}
	}
	MemoryContextSwitchTo(row_cxt);
	return rows;
}

/*
 * write_group
 *	  Write one changed group (h, _ins, the outputs, HAVING) to the target.
 */
static void
write_group(TargetUpdate *tu, TupleTableSlot *slot)
{
	Datum	   *values;
	bool	   *isnull;
	int32		h;
	bool		having;
	MemoryContext old;

	slot_getallattrs(slot);
	values = slot->tts_values;
	isnull = slot->tts_isnull;
	/* every group of m was put by fold_row, which set its h */
	if (isnull[0] || isnull[1])
		elog(ERROR, "pg_cq: a changed group without its key hash");
	h = DatumGetInt32(values[0]);
	having = tu->having_col < 0 || (!isnull[tu->having_col] && DatumGetBool(values[tu->having_col]));
	old = MemoryContextSwitchTo(tu->row_cxt);
	if (DatumGetBool(values[1]))
	{
		/* new to the state (o1): no row to find */
		if (!tu->with_new)
			elog(ERROR, "pg_cq: a new group in a batch of existing groups");
		if (having)
			insert_row(tu, values, isnull, h);
	}
	else
	{
		List	   *rows = find_rows(tu, h, values, isnull);
		ListCell   *lc;

		if (!having)
			foreach(lc, rows)
				delete_row(tu, lfirst(lc), values, isnull);
		else if (rows == NIL)
			insert_row(tu, values, isnull, h);
		else
			foreach(lc, rows)
				if (changed(tu, lfirst(lc), values, isnull))
					update_row(tu, lfirst(lc), values, isnull, h);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(tu->row_cxt);
}

/*
 * write_in_key_order
 *	  With in_key_order, at the end of the SELECT's rows (still under its
 *	  snapshot and command id): the groups received, sorted by key hash,
 *	  each written by write_group.  The same rows are read and written as
 *	  in the store's order, each group's exactly as there, so the order
 *	  makes no difference to the result: a group's target rows are its own
 *	  (GROUP BY's equality), and what this command writes is invisible to
 *	  the snapshot (a version it updated stays the one it sees).
 */
static void
write_in_key_order(TargetUpdate *tu)
{
	tuplesort_performsort(tu->sort);
	while (tuplesort_gettupleslot(tu->sort, true, false, tu->sorted, NULL))
		write_group(tu, tu->sorted);
	tuplesort_end(tu->sort);
	tu->sort = NULL;
}

/*
 * receiveSlot: one changed group, written now, or with in_key_order kept
 * for update_shutdown
 */
static bool
update_receive(TupleTableSlot *slot, DestReceiver *self)
{
	TargetUpdate *tu = (TargetUpdate *) self;

	if (tu->sort != NULL)
		tuplesort_puttupleslot(tu->sort, slot);
	else
		write_group(tu, slot);
	return true;
}

/*
 * update_startup
 *	  The SELECT's snapshot, which the upsert's CTEs would all read: taken
 *	  after SPI's CommandCounterIncrement, it shows none of the rows this
 *	  command writes (their cmin is its curcid) and still the versions it
 *	  replaces.  The index scan is opened with it here, where it is the
 *	  active snapshot, and closed when the SELECT's rows end.
 */
static void
update_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	TargetUpdate *tu = (TargetUpdate *) self;

	tu->snapshot = GetActiveSnapshot();
	tu->cid = GetCurrentCommandId(true);
	Assert(tu->snapshot->curcid == tu->cid);
	tu->scan_cxt = CurrentMemoryContext;
	tu->scan = index_beginscan(tu->rel, tu->idx, tu->snapshot, 1, 0);
	if (tu->in_key_order)
	{
		AttrNumber	col = 1;
		Oid			op = Int4LessOperator;
		Oid			coll = InvalidOid;
		bool		nulls_first = false;

		tu->sort = tuplesort_begin_heap(typeinfo, 1, &col, &op, &coll, &nulls_first, work_mem, NULL,
										TUPLESORT_NONE);
		tu->sorted = MakeSingleTupleTableSlot(typeinfo, &TTSOpsMinimalTuple);
	}
}

static void
update_shutdown(DestReceiver *self)
{
	TargetUpdate *tu = (TargetUpdate *) self;

	if (tu->sort != NULL)
	{
		write_in_key_order(tu);
		ExecDropSingleTupleTableSlot(tu->sorted);
	}
	if (tu->scan)
		index_endscan(tu->scan);
	tu->scan = NULL;
}

static void
update_destroy(DestReceiver *self)
{
}

/*
 * in_key_order
 *	  Are the changed groups written in the order of their key hash h (the
 *	  order of pg_cq's index on the target, idx), sorted first, rather than
 *	  as the SELECT returns them (the store's order, random to the index)?
 *	  With cq.target_update_order "auto", where they are many for a large
 *	  index: at least KEY_ORDER_MIN_GROUPS, at least half as many as its
 *	  pages, and the index at least KEY_ORDER_MIN_PAGES.  Then most leaf
 *	  pages hold the keys of several groups, which in the store's order
 *	  each probe reads again (in a target larger than shared buffers often
 *	  evicted meanwhile, and dirty: written out to be read back), and in
 *	  key order read and write once, the descents sharing their upper
 *	  pages and a new row version's index entry going to the page its probe
 *	  just read.  Fewer groups share almost no page, and a smaller index
 *	  stays in the CPU's caches in any order: there the sort would only
 *	  cost.  bench/merge.sh, session 43 (bench/README.md, "Session 43"):
 *	  at 1M target groups key order took 0.76x the target write of the
 *	  store's order at 100k changed groups, 0.87-0.88x at 10k-30k.  (A
 *	  variant that also fetched the rows in TID order, their TIDs read from
 *	  the index alone, cost 1.5x at 4k groups: without the index scan's
 *	  own heap fetch no dead index entry is marked, and every batch
 *	  fetched every dead version again.)
 *	  "key": every batch, "store": none (tests, measurements).
 */
#define KEY_ORDER_MIN_GROUPS 1024
#define KEY_ORDER_MIN_PAGES 1024

static bool
in_key_order(Relation idx, uint64 groups)
{
	BlockNumber pages;

	if (cq_target_update_order != CQ_ORDER_AUTO)
		return cq_target_update_order == CQ_ORDER_KEY;
	if (groups < KEY_ORDER_MIN_GROUPS)
		return false;
	pages = RelationGetNumberOfBlocks(idx);
	return pages >= KEY_ORDER_MIN_PAGES && groups * 2 >= (uint64) pages;
}

/*
 * qualifies
 *	  Does the target (rel, locked) take the upsert's writes as this file
 *	  makes them (see the header), as far as the target itself says?
 *	  *index: pg_cq's key-hash index.  Asked before the SELECT's plan is
 *	  looked up: a target that never qualifies costs only this.
 */
static bool
qualifies(TargetUpdate *tu, const CqStoreSql *sql, TupleDesc state, Oid *index)
{
	Relation	rel = tu->rel;
	AclMode		need = ACL_SELECT | ACL_INSERT;

	if (tu->nonkeys)
		need |= ACL_UPDATE;
	if (sql->having)
		need |= ACL_DELETE;
	*index = cq_target_key_index(sql, rel, state, tu->coll);
	/*
	 * An inheritance parent: the statement's UPDATE, DELETE and NOT EXISTS
	 * read its children too (no ONLY), which its index does not cover
	 */
	return OidIsValid(*index) && !rel->rd_rel->relispartition && !rel->rd_rel->relhassubclass &&
		cq_rowload_plain_table(rel, *index) &&
		pg_class_aclmask(RelationGetRelid(rel), GetUserId(), need, ACLMASK_ALL) == need;
}

/*
 * map_target
 *	  The target's columns in the SELECT's result (every one an output of
 *	  the same type: cq_rowload_map_columns) and its key columns, into tu;
 *	  false if they do not match.  Then the replica identity check that the
 *	  statement's UPDATE and DELETE make at their start (its error).
 */
static bool
map_target(TargetUpdate *tu, const CqStoreSql *sql, TupleDesc result)
{
	if (!cq_rowload_map_columns(tu->rel, result, UPD_FIRST_OUTPUT, sql->out_names, sql->nout, tu->map))
		return false;
	for (int i = 0; i < tu->desc->natts; i++)
		tu->keep[i] = tu->map[i] >= 0 && sql->out_key[tu->map[i] - UPD_FIRST_OUTPUT];
	for (int g = 0; g < sql->nkeys; g++)
	{
		tu->key_col[g] = UPD_FIRST_OUTPUT + sql->key_outs[g];
		tu->key_att[g] = InvalidAttrNumber;
		for (int i = 0; i < tu->desc->natts; i++)
			if (tu->map[i] == tu->key_col[g])
				tu->key_att[g] = i + 1;
		if (tu->key_att[g] == InvalidAttrNumber)
			return false;
	}
	if (tu->nonkeys)
		CheckCmdReplicaIdentity(tu->rel, CMD_UPDATE);
	if (sql->having)
		CheckCmdReplicaIdentity(tu->rel, CMD_DELETE);
	return true;
}

/*
 * cq_target_update
 *	  Write the changed groups of m (registered; groups of them) to the
 *	  target from C, as the upsert would (see the file header), or false
 *	  when the path does not apply: nothing was done, the caller runs the
 *	  statement.  with_new: the statement is the one with o1 (m may hold
 *	  new groups).  state: the state row; eq/coll: per grouping key, the
 *	  store's equality and collation.  *written: the statement's count.
 */
bool
cq_target_update(const CqStoreSql *sql, TupleDesc state, FmgrInfo *eq, const Oid *coll,
				 uint64 groups, bool with_new, int64 *written)
{
	SPIPlanPtr	plan;
	List	   *sources;
	TupleDesc	result;
	TargetUpdate *tu;
	Oid			index;
	SPIExecuteOptions options;

	if (!cq_target_update_in_c || sql->load_changed == NULL || !OidIsValid(sql->target) ||
		sql->nkeys == 0 || sql->out_key == NULL)
		return false;
	tu = palloc0(sizeof(TargetUpdate));
	/* a target gone: the statement's own error */
	tu->rel = try_table_open(sql->target, RowExclusiveLock);
	if (tu->rel == NULL)
		return false;
	tu->desc = RelationGetDescr(tu->rel);
	tu->map = palloc(sizeof(int) * tu->desc->natts);
	tu->keep = palloc0(sizeof(bool) * tu->desc->natts);
	tu->nkeys = sql->nkeys;
	tu->key_att = palloc(sizeof(AttrNumber) * sql->nkeys);
	tu->key_col = palloc(sizeof(int) * sql->nkeys);
	tu->eq = eq;
	tu->coll = coll;
	for (int k = 0; k < sql->nout; k++)
		tu->nonkeys |= !sql->out_key[k];
	if (!qualifies(tu, sql, state, &index))
	{
		table_close(tu->rel, NoLock);
		return false;
	}
	plan = cq_spi_plan_rows(sql->load_changed, 0, NULL, groups);
	sources = SPI_plan_get_plan_sources(plan);
	result = list_length(sources) == 1 ? ((CachedPlanSource *) linitial(sources))->resultDesc : NULL;
	if (result == NULL || result->natts != UPD_FIRST_OUTPUT + sql->nout + (sql->having ? 1 : 0) ||
		TupleDescAttr(result, 0)->atttypid != INT4OID || TupleDescAttr(result, 1)->atttypid != BOOLOID ||
		(sql->having && TupleDescAttr(result, result->natts - 1)->atttypid != BOOLOID) ||
		!map_target(tu, sql, result))
	{
		table_close(tu->rel, NoLock);
		return false;
	}
	tu->having_col = sql->having ? UPD_FIRST_OUTPUT + sql->nout : -1;
	tu->with_new = with_new;
	tu->idx = index_open(index, RowExclusiveLock);
	tu->in_key_order = in_key_order(tu->idx, groups);
	tu->found = table_slot_create(tu->rel, NULL);
	tu->latest = table_slot_create(tu->rel, NULL);
	tu->row = MakeSingleTupleTableSlot(tu->desc, &TTSOpsVirtual);
	tu->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq target update row",
										ALLOCSET_SMALL_SIZES);
	tu->pub.receiveSlot = update_receive;
	tu->pub.rStartup = update_startup;
	tu->pub.rShutdown = update_shutdown;
	tu->pub.rDestroy = update_destroy;
	/* any tag but DestNone and DestSPI: SPI reports SPI_OK_SELECT, keeps no rows */
	tu->pub.mydest = DestTuplestore;
	memset(&options, 0, sizeof(options));
	options.dest = (DestReceiver *) tu;
	/* on an error the transaction's abort releases the scan's buffers */
	if (SPI_execute_plan_extended(plan, &options) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: target statement failed");
	*written = tu->written;
	ExecDropSingleTupleTableSlot(tu->found);
	ExecDropSingleTupleTableSlot(tu->latest);
	ExecDropSingleTupleTableSlot(tu->row);
	MemoryContextDelete(tu->row_cxt);
	index_close(tu->idx, NoLock);
	CommandCounterIncrement();
	table_close(tu->rel, NoLock);
	elog(DEBUG1, "pg_cq: store fold: %llu changed groups written from C: %lld rows updated, %lld inserted, %lld deleted%s",
		 (unsigned long long) groups, (long long) tu->updated, (long long) tu->inserted,
		 (long long) tu->deleted, tu->in_key_order ? " (in key-hash order)" : "");
	return true;
}
