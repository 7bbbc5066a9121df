/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The shared-memory state store (issue 15): a query created with
 *	  state_storage = 'memory' keeps its state rows in a hash table in
 *	  dynamic shared memory instead of its state table.
 *
 * Layout.  One dynamic shared area (DSA) for the whole cluster, created
 * lazily by the first backend that needs it; its handle and that of its
 * directory (a dshash keyed by database and query id) are in pg_cq's fixed
 * segment (shmem.c), guarded by the lock "pg_cq store".  A query's
 * directory entry points to its header (StoreHeader): the handle of its
 * group table, the batch id the table reflects, row and byte counts, and
 * a condition variable.  The group table (store_table.c: open addressing,
 * one slot per hash, fewer pages to touch than a dshash) is keyed by a
 * 64-bit hash of the grouping keys (each key's extended hash function,
 * with the key's collation: the equality GROUP BY uses hashes consistently
 * with it); each slot holds a chain of nodes, one per group with that hash,
 * and each node the group's state row (keys, n, [e], partials, [h]: the
 * row type of the state table) as a MinimalTuple right after the node, in
 * its allocation (cq_store_alloc_node, store_node.c).  Groups are
 * matched by hash, then by their keys with each key's GROUP BY equality
 * (NULL keys match NULL keys).
 *
 * A batch (batch.c) runs the partial aggregation of its new rows (d) as a
 * statement, looks every group up in the store, merges the existing ones
 * with one statement over the pairs (the aggregates' own merge templates,
 * CqPart.merge, so that results are those of the table path), applies the
 * late filter and the watermark's eviction in C, and passes the changed
 * rows (m) and the evicted ones (x) to the target-writing statement of
 * sink.c as ephemeral named relations, as triggers pass transition tables.
 *
 * Transactions: store_xact.c (a batch's changes reach the store only if
 * its transaction commits).
 *
 * Memory: the rows and node overhead of a query are counted (what
 * cq.state_store_info and cq.progress.state_bytes show) and limited by
 * cq.state_memory (per query): the batch that outgrows it moves the query
 * to the table path (switch_to_table in batch.c); pre-commit checks the
 * limit once more, as a last guard.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/dshash.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/value.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
#include "utils/wait_event.h"

#include "store.h"
#include "citus.h"
#include "store_private.h"
#include "store_node.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"
#include "aggregates.h"
#include "state.h"
#include "sink.h"


/*
 * cq_store_open
 *	  The store of a query for a batch in this transaction (the caller
 *	  holds the query's catalog row lock, and last is the last committed
 *	  batch read after it).  Waits while a publication is in flight.  When
 *	  the store does not reflect the last committed batch, the batch
 *	  replaces it: *lost is then true when batches were committed (the
 *	  caller rebuilds it with cq_store_rebuild), false for batch 0.
 */
CqStore *
cq_store_open(CqQuery *q, CqAnalysis *an, const CqLastOffset *last, bool *lost)
{
	CqStore    *st;
	StoreDirEntry *d;
	StoreHeader *h;
	MemoryContext old;
	HASHCTL		ctl;
	ListCell   *lc;
	bool		valid;
	bool		busy;
	int64		published;
	dsa_pointer table = InvalidDsaPointer;

	*lost = false;
	foreach(lc, cq_store_xact_stores)
	{
		st = lfirst(lc);
		if (st->key.dboid == MyDatabaseId && st->key.query_id == q->id &&
			st->state_table != q->state_table)
			break;				/* a query this transaction dropped had its id */
	}
	if (lc != NULL || cq_store_dropped_here(MyDatabaseId, q->id))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot run a batch of continuous query \"%s\" in this transaction", q->name),
				 errdetail("A query with its internal id %d was dropped in this transaction, and its state in shared memory is freed when the transaction commits.", q->id),
				 errhint("Commit the transaction first.")));
	foreach(lc, cq_store_xact_stores)
	{
		st = lfirst(lc);
		if (st->key.dboid == MyDatabaseId && st->key.query_id == q->id)
		{
			/*
			 * one another level opened for a batch that found nothing new
			 * (CALL cq.run commits only the batches that ran; the query's
			 * row lock kept other batches out): at most a rebuild, which an
			 * abort here may drop (the next batch rebuilds), so this level
			 * takes it over
			 */
			if (st->subid != GetCurrentSubTransactionId() && !st->ran && !st->switched)
				st->subid = GetCurrentSubTransactionId();
			if (st->subid != GetCurrentSubTransactionId())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot run another batch of continuous query \"%s\" in this subtransaction", q->name),
						 errdetail("The query keeps its state in shared memory (state_storage = 'memory') and already ran a batch at another level of this transaction."),
						 errhint("Commit the transaction first.")));
			return st;
		}
	}

	cq_store_attach();
	cq_store_register_callbacks();
	old = MemoryContextSwitchTo(TopTransactionContext);
	st = palloc0(sizeof(CqStore));
	st->cxt = AllocSetContextCreate(TopTransactionContext, "pg_cq store overlay", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(st->cxt);
	st->key.dboid = MyDatabaseId;
	st->key.query_id = q->id;
	cq_store_setup_keys(st, q, an);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(OvEntry);
	ctl.hcxt = st->cxt;
	st->overlay = hash_create("pg_cq store overlay", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ctl.keysize = sizeof(dsa_pointer);
	ctl.entrysize = sizeof(TouchedEntry);
	st->touched = hash_create("pg_cq store touched", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	st->subid = GetCurrentSubTransactionId();
	st->state_table = q->state_table;
	MemoryContextSwitchTo(old);

	/*
	 * Wait while the previous batch's publication is in flight, reading the
	 * header under its entry's lock while still the entry's (see discard).
	 */
	d = cq_store_find_header(&st->key, true, true);
	st->header = d->header;
	h = cq_store_header_of(st);
	ConditionVariablePrepareToSleep(&cq_shared->store_cv);
	dshash_release_lock(cq_store_dir, d);
	for (;;)
	{
		d = cq_store_find_header(&st->key, false, false);
		if (d == NULL || d->header != st->header)
		{
			if (d)
				dshash_release_lock(cq_store_dir, d);
			ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							errmsg("the state store of continuous query \"%s\" was freed while a batch waited for it", q->name)));
		}
		busy = h->inflight >= 0;
		valid = h->valid && h->rowtype == st->desc->tdtypeid;
		published = h->published;
		table = h->table;
		st->rows = h->rows;
		st->bytes = h->bytes;
		st->has_evict_wm = h->has_evict_wm;
		st->evict_wm = h->evict_wm;
		st->image_batch = h->image_batch;
		st->image_at = h->image_at;
		st->image_base = h->image_base;
		st->min_e = h->min_e;
		dshash_release_lock(cq_store_dir, d);
		if (!busy)
			break;
		ConditionVariableSleep(&cq_shared->store_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();

	st->batch_id = last->found ? last->batch_id : -1;
	if (valid && last->found && published == last->batch_id)
	{
		old = MemoryContextSwitchTo(st->cxt);
		st->table = cq_gt_attach(cq_store_area, table);
		MemoryContextSwitchTo(old);
	}
	else
	{
		/* batch 0, or lost: start from empty */
		st->replace = true;
		st->rows = st->bytes = 0;
		st->has_evict_wm = false;
		st->min_e = PG_INT64_MAX;
		/* the first image is due cq.state_image_batches batches from here */
		st->image_batch = -1;
		st->image_base = st->batch_id;
		st->image_at = GetCurrentTimestamp();
		*lost = last->found;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	cq_store_xact_stores = lappend(cq_store_xact_stores, st);
	MemoryContextSwitchTo(old);
	return st;
}

/*
 * index_overlay
 *	  Enter the items put since the last lookup into the overlay's hash
 *	  table.  A batch's fold puts each group of its d statement once and
 *	  looks none of them up again (d has one row per group: see
 *	  cq_store_lookup_published), so the index is made only when a later
 *	  lookup needs it, not once per group put.
 */
static void
index_overlay(CqStore *st)
{
	int64		n = st->nitems;

	for (int64 i = st->n_indexed; i < n; i++)
	{
		OvItem	   *it = cq_store_item_at(st, i);
		bool		found;
		OvEntry    *ov = hash_search(st->overlay, &it->hash, HASH_ENTER, &found);

		if (!found)
			ov->first = NULL;
		it->next = ov->first;
		ov->first = it;
	}
	st->n_indexed = n;
}

/*
 * find_published
 *	  The published row of the group with these keys (ref->hash set), if
 *	  any, into ref.
 */
static void
find_published(CqStore *st, Datum *values, bool *nulls, StoreRef *ref)
{
	dsa_pointer *head;

	if (st->table == NULL)
		return;
	cq_store_link_pending(st);
	/* no lock: only this batch changes the table until it commits */
	head = cq_gt_find(st->table, ref->hash);
	if (head == NULL)
		return;
	for (dsa_pointer np = *head; DsaPointerIsValid(np);)
	{
		StoreNode  *node = dsa_get_address(cq_store_area, np);

		if (DsaPointerIsValid(node->tuple))
		{
			HeapTuple	t = cq_store_shared_tuple(node->tuple);

			if (cq_store_keys_match(st, t, values, nulls))
			{
				ref->tup = t;
				ref->node = np;
				ref->tuple = node->tuple;
				break;
			}
			pfree(t);
		}
		np = node->next;
	}
}

/*
 * ref_init
 *	  A reference to the group with these keys, not found yet.
 */
static inline void
ref_init(CqStore *st, Datum *values, bool *nulls, StoreRef *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->hash = cq_store_key_hash(st, values, nulls);
	ref->node = InvalidDsaPointer;
	ref->tuple = InvalidDsaPointer;
}

/*
 * lookup
 *	  The current row of the group with these keys: the overlay's, else
 *	  the published one.
 */
void
cq_store_lookup(CqStore *st, Datum *values, bool *nulls, StoreRef *ref)
{
	ref_init(st, values, nulls, ref);
	if (st->nitems != 0)
	{
		OvEntry    *ov;

		index_overlay(st);
		ov = hash_search(st->overlay, &ref->hash, HASH_FIND, NULL);
		for (OvItem *it = ov ? ov->first : NULL; it != NULL; it = it->next)
		{
			if (cq_store_keys_match(st, &it->tup, values, nulls))
			{
				ref->item = it;
				ref->node = it->node;
				ref->tup = it->deleted ? NULL : &it->tup;
				return;
			}
		}
	}
	find_published(st, values, nulls, ref);
}

/*
 * lookup_published
 *	  lookup of a group the overlay does not hold (the caller knows: the
 *	  groups of one d statement are distinct, and the overlay held none
 *	  when its fold began): the published row only.
 */
void
cq_store_lookup_published(CqStore *st, Datum *values, bool *nulls, StoreRef *ref)
{
	ref_init(st, values, nulls, ref);
	find_published(st, values, nulls, ref);
}

/*
 * row_bytes
 *	  What a row costs in the store (row_bytes_len: of a row of t_len).
 */
static int64
row_bytes_len(uint32 t_len)
{
	return (int64) (t_len - HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET) + NODE_OVERHEAD;
}

static int64
row_bytes(HeapTuple t)
{
	return row_bytes_len(t->t_len);
}

/*
 * note_e
 *	  Keep min_e a lower bound of the window ends of the rows (tup put).
 */
static inline void
note_e(CqStore *st, HeapTuple tup)
{
	if (st->e_att != 0)
	{
		bool		isnull;
		Datum		e = heap_getattr(tup, st->e_att, st->desc, &isnull);

		if (!isnull && DatumGetInt64(e) < st->min_e)
			st->min_e = DatumGetInt64(e);
	}
}

/*
 * Values out of line.  The store outlives the transaction of the batch
 * that put a row, and a TOAST pointer of a row of d points into a source
 * table, whose chunks VACUUM removes once the source row is gone: d passes
 * source values through as they were read (a group key; min or max of a
 * group with one row, whose transition value nodeAgg copies from the
 * input; a merged min or max that keeps the new value).  So a row is put
 * with such values fetched (sql/161); heap_form_tuple marks a row that
 * holds one (HEAP_HASEXTERNAL), and put_built checks its values.
 */
static void
fetch_external(TupleDesc desc, Datum *values, bool *nulls)
{
	for (int i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attlen == -1 && !nulls[i] &&
			VARATT_IS_EXTERNAL(DatumGetPointer(values[i])))
			values[i] = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(values[i])));
}

/*
 * put
 *	  Make a copy of tup (NULL: delete) the group's row in the overlay; ref
 *	  is what lookup found for it.  Returns the copy (NULL: deleted), a
 *	  header over the row in the area, valid until the group is put again;
 *	  tup stays the caller's.  Keeps min_e a lower bound of the rows'
 *	  window ends.  Nothing is kept in the backend's memory: the item and
 *	  the row are in the area (see OvItem).
 */
HeapTuple
cq_store_put(CqStore *st, StoreRef *ref, HeapTuple tup)
{
	OvItem	   *it = ref->item;
	int64		bytes = 0;
	int64		rows = 0;

	Assert(!st->prepared);
	if (tup && HeapTupleHasExternal(tup))
		tup = toast_flatten_tuple(tup, st->desc);	/* see fetch_external */
	if (ref->tup != NULL)
	{
		bytes -= row_bytes(ref->tup);
		rows--;
	}
	if (tup)
	{
		bytes += row_bytes(tup);
		rows++;
	}
	if (it == NULL)
	{
		/* a new item, entered into the overlay's index by the next lookup */
		it = cq_store_item_slot(st);
		it->hash = ref->hash;
		it->node = ref->node;
		if (tup)
			cq_store_own_row(it, tup);
		else if (ref->tup != NULL)
			it->tup = *ref->tup;	/* a published row: its keys */
		else
			elog(ERROR, "pg_cq: no row to delete");
		st->nitems++;
		ref->item = it;
	}
	else if (tup)
		cq_store_own_row(it, tup);
	it->deleted = tup == NULL;
	if (tup)
		note_e(st, tup);
	st->bytes += bytes;
	st->rows += rows;
	return tup ? &it->tup : NULL;
}

/*
 * scan_all
 *	  Every row of the store as this transaction sees it (published rows
 *	  the overlay does not replace, then the overlay's), as ScanRow *.
 */
List *
cq_store_scan_all(CqStore *st)
{
	List	   *rows = NIL;

	if (st->table)
		cq_store_link_pending(st);
	/* the published nodes the overlay replaces */
	for (int64 i = 0; i < st->nitems; i++)
	{
		OvItem	   *it = cq_store_item_at(st, i);

		if (DsaPointerIsValid(it->node))
			(void) hash_search(st->touched, &it->node, HASH_ENTER, NULL);
	}
	if (st->table)
	{
		uint64		n;
		CqGroupSlot *slots = cq_gt_slots(st->table, &n);

		/* no lock: only this batch changes the table until it commits */
		for (uint64 i = 0; i < n; i++)
		{
			for (dsa_pointer np = slots[i].head; DsaPointerIsValid(np);)
			{
				StoreNode  *node = dsa_get_address(cq_store_area, np);

				if (DsaPointerIsValid(node->tuple) &&
					hash_search(st->touched, &np, HASH_FIND, NULL) == NULL)
				{
					ScanRow    *r = palloc0(sizeof(ScanRow));

					r->ref.hash = slots[i].hash;
					r->ref.node = np;
					r->ref.tuple = node->tuple;
					r->ref.tup = cq_store_shared_tuple(node->tuple);
					rows = lappend(rows, r);
				}
				np = node->next;
			}
		}
	}
	for (int64 i = 0; i < st->nitems; i++)
	{
		OvItem	   *it = cq_store_item_at(st, i);
		ScanRow    *r;

		if (it->deleted)
			continue;
		r = palloc0(sizeof(ScanRow));
		r->ref.hash = it->hash;
		r->ref.node = it->node;
		r->ref.item = it;
		r->ref.tup = &it->tup;
		rows = lappend(rows, r);
	}
	return rows;
}

/*
 * put_built
 *	  A new group of a store that starts empty in this transaction (batch
 *	  0, a rebuild, an image load: st->replace with nothing read or put
 *	  yet; the caller knows the group is not in the store), its row
 *	  (values/nulls, the state row) written straight into a group table of
 *	  the store's own in the area, as publication would have copied it.
 *	  That table becomes the header's at COMMIT by one pointer (publish)
 *	  and is freed at abort (discard, or the abort of the subtransaction
 *	  that opened the store); no other backend sees it before.  Meanwhile
 *	  it serves this transaction as a published table serves a batch
 *	  (lookups, scans, the overlay's later changes, prepared and published
 *	  into it).  So no overlay item and no local copy of the row are made,
 *	  and nothing is copied at PRE_COMMIT: at 100k groups those were ~7k
 *	  pages first touched and a copy of every row, about a tenth of batch
 *	  0's CPU (bench/README.md, store section, session 27).  The row is
 *	  formed right in its node (since session 34; before, formed locally,
 *	  then copied).  Returns a header over it (valid until the next call),
 *	  or NULL when it
 *	  must go to the overlay instead (cq_store_put_owned): the store did
 *	  not start empty, or its rows would pass cq.state_memory (the batch
 *	  then moves to the table path: the table holds no more than the
 *	  budget).  Values out of line are fetched into values[] (see
 *	  fetch_external).  May raise an error (out of shared memory).
 */
HeapTuple
cq_store_put_built(CqStore *st, Datum *values, bool *nulls)
{
	MemoryContext old;
	HeapTuple	t;
	dsa_pointer row;
	dsa_pointer np;
	int64		bytes;
	uint32		len;
	Size		data_len;

	if (!st->own_table)
	{
		if (!st->replace || st->table != NULL || st->nitems != 0 || st->switched || st->prepared)
			return NULL;
		old = MemoryContextSwitchTo(st->cxt);
		st->table = cq_gt_create(cq_store_area, cq_shared->store_tranche, st->expect_groups);
		st->pending_max = 1024;
		st->pending = palloc(sizeof(CqGroupSlot) * st->pending_max);
		st->pending_tmp = palloc(sizeof(CqGroupSlot) * st->pending_max);
		MemoryContextSwitchTo(old);
		/* from here on the table is st's published table, to be swapped in */
		st->own_table = st->building = true;
		st->replace = false;
	}
	if (!st->building)
		return NULL;
	fetch_external(st->desc, values, nulls);
	len = cq_store_row_len(st->desc, values, nulls, &data_len);
	bytes = row_bytes_len(len);
	if (st->bytes + bytes > (int64) cq_state_memory_kb * 1024)
	{
		cq_store_link_pending(st);
		st->building = false;
		return NULL;
	}
	/* linked later, together with the next groups (cq_store_link_pending) */
	if (st->npending == STORE_LINK_MAX)
		cq_store_link_pending(st);
	else if (st->npending == st->pending_max)
	{
		/* from 1,024: a small batch 0 takes little memory */
		st->pending_max *= 2;
		st->pending = repalloc(st->pending, sizeof(CqGroupSlot) * st->pending_max);
		st->pending_tmp = repalloc(st->pending_tmp, sizeof(CqGroupSlot) * st->pending_max);
	}
	/* formed in its node: the row returned is a header over it there */
	np = cq_store_alloc_node_values(st->desc, values, nulls, len, data_len, &row);
	cq_store_set_view(&st->built, row);
	t = &st->built;
	st->pending[st->npending].hash = cq_store_key_hash(st, values, nulls);
	st->pending[st->npending++].head = np;
	st->bytes += bytes;
	st->rows++;
	note_e(st, t);
	return t;
}

/*
 * cq_store_info
 *	  The batch id, rows and bytes of a query's published store; false
 *	  when it has none (or one of another row type than rowtype, its state
 *	  table's: a dropped query's that had this id).
 */
bool
cq_store_info(Oid dboid, int32 query_id, Oid rowtype, int64 *batch_id, int64 *rows, int64 *bytes)
{
	StoreKey	key = {dboid, query_id};
	StoreDirEntry *d;
	bool		ok = false;

	if (cq_shared == NULL || !cq_shared->store_ready || cq_store_dropped_here(dboid, query_id))
		return false;
	cq_store_attach();
	d = dshash_find(cq_store_dir, &key, false);
	if (d == NULL)
		return false;
	if (DsaPointerIsValid(d->header))
	{
		StoreHeader *h = dsa_get_address(cq_store_area, d->header);

		ok = h->valid && h->rowtype == rowtype;	/* not a dropped query's */
		*batch_id = h->published;
		*rows = h->rows;
		*bytes = h->bytes;
	}
	dshash_release_lock(cq_store_dir, d);
	return ok;
}

/*
 * walk_published
 *	  fn(row, arg) for every row of published store h, under the table's
 *	  lock (shared).  The caller holds h's directory entry locked, so the
 *	  table cannot be replaced meanwhile.
 */
static void
walk_published(StoreHeader *h, void (*fn) (MinimalTuple row, void *arg), void *arg)
{
	CqGroupTable *table = cq_gt_attach(cq_store_area, h->table);
	CqGroupSlot *slots;
	uint64		n;

	cq_gt_lock(table, LW_SHARED);
	slots = cq_gt_slots(table, &n);
	for (uint64 i = 0; i < n; i++)
	{
		for (dsa_pointer np = slots[i].head; DsaPointerIsValid(np);)
		{
			StoreNode  *node = dsa_get_address(cq_store_area, np);

			if (DsaPointerIsValid(node->tuple))
				fn(dsa_get_address(cq_store_area, node->tuple), arg);
			np = node->next;
		}
	}
	cq_gt_unlock(table);
	pfree(table);
}

/* walk_published callback of cq_store_read: the row into the tuplestore arg */
static void
put_row(MinimalTuple row, void *arg)
{
	HeapTuple	t = heap_tuple_from_minimal_tuple(row);

	tuplestore_puttuple((Tuplestorestate *) arg, t);
	heap_freetuple(t);
}

/* walk_published callback of cq_store_touch: read a byte of the row, count it */
static void
touch_row(MinimalTuple row, void *arg)
{
	volatile char sink = *(volatile char *) row;

	(void) sink;
	(*(int64 *) arg)++;
}

/*
 * cq_store_read
 *	  Put every row of a query's store into ts (rows of desc, the state
 *	  table's row type): the published rows, or, in a transaction that ran
 *	  a batch of the query, the rows as that batch left them (what its
 *	  target shows in the transaction, as the state table of the table path
 *	  would).  False when the query has no valid store (before its first
 *	  batch after a restart).
 */
bool
cq_store_read(Oid dboid, int32 query_id, Tuplestorestate *ts, TupleDesc desc)
{
	StoreKey	key = {dboid, query_id};
	StoreDirEntry *d;
	StoreHeader *h;
	ListCell   *lc;

	if (cq_store_dropped_here(dboid, query_id))
		return false;			/* the store is the dropped query's */
	foreach(lc, cq_store_xact_stores)
	{
		CqStore    *st = lfirst(lc);
		ListCell   *rc;

		if (st->key.dboid != dboid || st->key.query_id != query_id || st->switched)
			continue;
		if (st->desc->tdtypeid != desc->tdtypeid)
			return false;		/* a dropped query's, which had this id */
		foreach(rc, cq_store_scan_all(st))
			tuplestore_puttuple(ts, ((ScanRow *) lfirst(rc))->ref.tup);
		return true;
	}
	if (cq_shared == NULL || !cq_shared->store_ready)
		return false;
	cq_store_attach();
	d = dshash_find(cq_store_dir, &key, false);
	if (d == NULL)
		return false;
	if (!DsaPointerIsValid(d->header) ||
		!(h = dsa_get_address(cq_store_area, d->header))->valid ||
		h->rowtype != desc->tdtypeid)
	{
		/* none, or a dropped query's that had this id (DROP EXTENSION) */
		dshash_release_lock(cq_store_dir, d);
		return false;
	}
	walk_published(h, put_row, ts);
	dshash_release_lock(cq_store_dir, d);
	return true;
}

/*
 * cq_store_touch
 *	  Read a byte of every slot page, node and row of a query's published
 *	  store, so that this process has touched their pages before its first
 *	  batch of the query looks groups up (warm.c: a process pays for the
 *	  first touch of each page, bench/README.md "Cold first batch").
 *	  Returns the rows seen; 0 when the query has no valid store.
 */
int64
cq_store_touch(Oid dboid, int32 query_id)
{
	StoreKey	key = {dboid, query_id};
	StoreDirEntry *d;
	StoreHeader *h;
	int64		rows = 0;

	if (cq_shared == NULL || !cq_shared->store_ready)
		return 0;
	cq_store_attach();
	d = dshash_find(cq_store_dir, &key, false);
	if (d == NULL)
		return 0;
	if (DsaPointerIsValid(d->header) &&
		(h = dsa_get_address(cq_store_area, d->header))->valid)
		walk_published(h, touch_row, &rows);
	dshash_release_lock(cq_store_dir, d);
	return rows;
}

/*
 * cq_store_over_budget
 *	  Would the store exceed cq.state_memory after this batch?
 */
bool
cq_store_over_budget(CqStore *st)
{
	return st->bytes > (int64) cq_state_memory_kb * 1024;
}

/*
 * cq_store_switched
 *	  Has this transaction moved the query to the table path?
 */
bool
cq_store_switched(CqStore *st)
{
	return st->switched;
}

/*
 * cq_store_rows
 *	  Rows of the store as this transaction sees it.
 */
int64
cq_store_rows(CqStore *st)
{
	return st->rows;
}
