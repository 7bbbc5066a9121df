/*-------------------------------------------------------------------------
 *
 * store_xact.c
 *	  The shared-memory state store (store.c) at the ends of transactions:
 *	  a batch's overlay published at commit or discarded at abort, the
 *	  stores of dropped queries freed when the drop commits.
 *
 * Transactions.  Changes go to the transaction's overlay and reach the
 * store only if the batch's transaction commits.  The overlay's items and
 * each changed group's new row (a node of its own) are written into the
 * area as the batch makes them (session 31; before, they were kept in the
 * backend's memory until PRE_COMMIT copied them, ~146 bytes a changed
 * group), but linked into no table that another backend reads: at
 * PRE_COMMIT (errors are still allowed there: the transaction then
 * aborts) new groups' nodes are linked with their rows invisible and the
 * query's header is marked "publication in flight"; at COMMIT pointers are
 * swapped (nothing can fail): a changed group's node takes its old one's
 * place, which is freed; at abort, or at the abort of the subtransaction
 * that opened the overlay (or a backend's exit, which aborts), the items
 * and nodes are freed and nothing changed.  The area thus holds both
 * versions of every changed row until COMMIT (cq.state_memory limits the
 * store's rows, as before).  Between the moment a commit
 * becomes visible (the row lock on the catalog row, which serializes
 * batches, is free from then on) and its COMMIT callback, the next batch
 * of the query could start: it waits on the condition variable while a
 * publication is in flight, so it never reads a store older than the last
 * committed batch.  A store whose batch id is not the last committed one
 * (none yet after a restart: shared memory is rebuilt empty; a crash, a
 * reset) is rebuilt from the source by the batch, exactly as the lost
 * unlogged state table is (rebuild_state in batch.c), and published with
 * it.  The store of a dropped query is freed when the drop commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "lib/dshash.h"
#include "storage/condition_variable.h"
#include "utils/dsa.h"
#include "utils/memutils.h"

#include "store_xact.h"
#include "store_private.h"
#include "store_node.h"
#include "guc.h"
#include "shmem.h"

dshash_table *cq_store_dir = NULL;
List	   *cq_store_xact_stores = NIL;

static dshash_parameters dir_params = {
	sizeof(StoreKey), sizeof(StoreDirEntry), dshash_memcmp, dshash_memhash, 0
};

/*
 * cq_store_attach
 *	  Attach to the store's area and directory, creating them on first use.
 */
void
cq_store_attach(void)
{
	MemoryContext old;

	if (cq_store_area != NULL)
		return;
	if (cq_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cq's shared memory is not available"),
				 errhint("Add pg_cq to shared_preload_libraries.")));
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockAcquire(cq_shared->store_lock, LW_EXCLUSIVE);
	if (!cq_shared->store_ready)
	{
		int			tranche = LWLockNewTrancheId();
		dsa_area   *area = dsa_create(tranche);
		dshash_table *dir;

		dsa_pin(area);
		dsa_pin_mapping(area);
		dir_params.tranche_id = tranche;
		dir = dshash_create(area, &dir_params, NULL);
		cq_shared->store_tranche = tranche;
		cq_shared->store_dir = dshash_get_hash_table_handle(dir);
		cq_shared->store_area = dsa_get_handle(area);
		cq_shared->store_ready = true;
		cq_store_area = area;
		cq_store_dir = dir;
	}
	else
	{
		dsa_area   *area = dsa_attach(cq_shared->store_area);

		dsa_pin_mapping(area);
		dir_params.tranche_id = cq_shared->store_tranche;
		cq_store_dir = dshash_attach(area, &dir_params, cq_shared->store_dir, NULL);
		cq_store_area = area;
	}
	LWLockRegisterTranche(cq_shared->store_tranche, "pg_cq store");
	LWLockRelease(cq_shared->store_lock);
	MemoryContextSwitchTo(old);
}

/*
 * cq_store_find_header
 *	  The directory entry of a query, locked (exclusive or shared), or NULL
 *	  when it has none and create is false.  With create, an entry without
 *	  a header gets a new, invalid one.
 */
StoreDirEntry *
cq_store_find_header(StoreKey *key, bool exclusive, bool create)
{
	StoreDirEntry *d;
	bool		found;

	if (!create)
		return dshash_find(cq_store_dir, key, exclusive);
	d = dshash_find_or_insert(cq_store_dir, key, &found);
	if (!found)
		d->header = InvalidDsaPointer;
	if (!DsaPointerIsValid(d->header))
	{
		dsa_pointer hp = dsa_allocate0(cq_store_area, sizeof(StoreHeader));
		StoreHeader *h = dsa_get_address(cq_store_area, hp);

		h->valid = false;
		h->published = -1;
		h->inflight = -1;
		h->image_batch = -1;
		d->header = hp;
	}
	return d;
}

/*
 * cq_store_header_of
 *	  The header of a store.
 */
StoreHeader *
cq_store_header_of(CqStore *st)
{
	return (StoreHeader *) dsa_get_address(cq_store_area, st->header);
}

/*
 * cq_store_link_pending
 *	  Link the nodes put_built made and has not linked yet into its table
 *	  (cq_store_put_built), up to STORE_LINK_MAX at a time, in the order of
 *	  their slots (cq_gt_sort_by_slot): at ~1M groups each insert at a
 *	  random place of the 32 MB slot array was a cache and TLB miss, 4-5%
 *	  of batch 0 (bench/README.md, Fold efficiency, rounds 8 and 10).  A
 *	  node counts as linked once it is: if linking fails (out of memory),
 *	  drop_own_table frees those left (a second call goes on unsorted).
 */
void
cq_store_link_pending(CqStore *st)
{
	if (st->nlinked == 0)
		cq_gt_sort_by_slot(st->table, &st->pending, &st->pending_tmp, st->npending);
	for (; st->nlinked < st->npending; st->nlinked++)
		cq_store_link_new_node(st->table, st->pending[st->nlinked].hash, st->pending[st->nlinked].head);
	st->npending = st->nlinked = 0;
}

/* Stores of queries dropped in this transaction, freed if it commits (cq_store_forget) */
typedef struct PendingForget
{
	StoreKey	key;
	SubTransactionId subid;		/* the (sub)transaction that dropped it */
} PendingForget;

static List *pending_forgets = NIL;

/*
 * cq_store_dropped_here
 *	  Was query query_id of database dboid dropped in this transaction,
 *	  alone or with every query of its database (DROP EXTENSION, DROP
 *	  DATABASE: cq_store_forget with CQ_STORE_ALL_QUERIES)?
 */
bool
cq_store_dropped_here(Oid dboid, int32 query_id)
{
	ListCell   *lc;

	foreach(lc, pending_forgets)
	{
		StoreKey   *k = &((PendingForget *) lfirst(lc))->key;

		if (k->dboid == dboid && (k->query_id == query_id || k->query_id == CQ_STORE_ALL_QUERIES))
			return true;
	}
	return false;
}

static bool callbacks_registered = false;

static void store_xact_callback(XactEvent event, void *arg);
static void store_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);
static void forget_pending(void);

/*
 * cq_store_register_callbacks
 *	  The transaction callbacks that publish or discard overlays, once.
 */
void
cq_store_register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(store_xact_callback, NULL);
	RegisterSubXactCallback(store_subxact_callback, NULL);
	callbacks_registered = true;
}

/*
 * drop_own_table
 *	  Free the table st built (put_built) when it is not to become the
 *	  header's.  Raises no error.
 */
static void
drop_own_table(CqStore *st)
{
	if (!st->own_table)
		return;
	for (; st->nlinked < st->npending; st->nlinked++)
		cq_store_free_node(st->pending[st->nlinked].head);
	st->npending = st->nlinked = 0;
	cq_store_destroy_table(st->table);
	st->table = NULL;
	st->own_table = st->building = false;
}

/*
 * for_each_item
 *	  fn for every overlay item, with its hash.
 */
static void
for_each_item(CqStore *st, void (*fn) (CqStore *st, uint64 hash, OvItem *it))
{
	for (int64 i = 0; i < st->nitems; i++)
	{
		OvItem	   *it = cq_store_item_at(st, i);

		fn(st, it->hash, it);
	}
}

/*
 * prepare_item
 *	  PRE_COMMIT, one item: its row is already in its own node in the area
 *	  (cq_store_own_row); nothing is copied.  A replaced store's rows are linked
 *	  into the new table (invisible until publish), a new group's node
 *	  into the published table with its row invisible; a changed group's
 *	  node takes the old one's place at publish.  The item is marked
 *	  linked as soon as its node is (cq_store_link_node may raise an error before:
 *	  then discard frees the node).
 */
static void
prepare_item(CqStore *st, uint64 hash, OvItem *it)
{
	StoreNode  *node;

	if (it->deleted)
		return;
	node = dsa_get_address(cq_store_area, it->newnode);
	if (st->replace)
	{
		/* the new table is invisible until publish: its rows visible in it */
		node->tuple = NODE_ROW(it->newnode);
		cq_store_link_node(st->newtable, hash, it->newnode);
		it->linked = true;
		return;
	}
	if (DsaPointerIsValid(it->node))
	{
		/* linked by publish, in the old node's place */
		node->tuple = NODE_ROW(it->newnode);
		return;
	}
	/* a new group: its node linked now, its row invisible until publish */
	cq_store_link_node(st->table, hash, it->newnode);
	it->linked = true;
}

/*
 * mark_inflight
 *	  Mark st's publication in flight in its header; false when the query
 *	  was dropped in this transaction (its header gone or replaced):
 *	  nothing to publish.
 */
static bool
mark_inflight(CqStore *st)
{
	StoreDirEntry *d = cq_store_find_header(&st->key, true, false);

	if (d == NULL || d->header != st->header)
	{
		if (d)
			dshash_release_lock(cq_store_dir, d);
		return false;
	}
	cq_store_header_of(st)->inflight = st->batch_id;
	st->prepared = true;
	dshash_release_lock(cq_store_dir, d);
	return true;
}

/*
 * prepare
 *	  PRE_COMMIT: check the budget, mark the publication in flight, link
 *	  the overlay's new rows, already in the area, where publish needs
 *	  them (invisible to readers until publish).
 */
static void
prepare(CqStore *st)
{
	MemoryContext old;
	double		t0;

	if (st->switched)
	{
		/* nothing to copy: publish drops the store (its table attached now) */
		if (!mark_inflight(st))
			return;
		old = MemoryContextSwitchTo(st->cxt);
		if (st->table == NULL && cq_store_header_of(st)->valid)
			st->table = cq_gt_attach(cq_store_area, cq_store_header_of(st)->table);
		MemoryContextSwitchTo(old);
		return;
	}
	if (st->bytes > (int64) cq_state_memory_kb * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("state of continuous query %d exceeds cq.state_memory", st->key.query_id),
				 errdetail("Its state would take " INT64_FORMAT " bytes in shared memory; the limit is %d kB.",
						   st->bytes, cq_state_memory_kb),
				 errhint("Raise cq.state_memory, or recreate the query with state_storage = 'unlogged'.")));
	if (!mark_inflight(st))
		return;
	if (st->own_table)
		cq_store_link_pending(st);

	old = MemoryContextSwitchTo(st->cxt);
	if (st->replace)
	{
		st->newtable = cq_gt_create(cq_store_area, cq_shared->store_tranche, (uint64) st->rows);
		if (st->table == NULL && cq_store_header_of(st)->valid)
			st->table = cq_gt_attach(cq_store_area, cq_store_header_of(st)->table);
	}
	t0 = cq_store_cpu_ms();
	/* new groups are linked into the published table now (rows invisible) */
	if (st->table && !st->replace)
		cq_gt_lock(st->table, LW_EXCLUSIVE);
	for_each_item(st, prepare_item);
	if (st->table && !st->replace)
		cq_gt_unlock(st->table);
	MemoryContextSwitchTo(old);
	elog(DEBUG1, "pg_cq: store publication of batch " INT64_FORMAT ": " INT64_FORMAT " changed rows prepared in %.3f ms (CPU time)",
		 st->batch_id, st->nitems, cq_store_cpu_ms() - t0);
}

/*
 * publish_item
 *	  COMMIT, one item (the table's lock held when there is one): a deleted
 *	  group's node unlinked and freed, with its own node if it has one; a
 *	  changed group's node in the place of the old one, which is freed; a
 *	  new group's row made visible.  A replaced store's rows are in the
 *	  new table already.  Raises no error.
 */
static void
publish_item(CqStore *st, uint64 hash, OvItem *it)
{
	if (it->deleted)
	{
		if (DsaPointerIsValid(it->newnode))
			cq_store_free_node(it->newnode);	/* never linked */
		if (!st->replace && DsaPointerIsValid(it->node))
			cq_store_unlink_node(st->table, hash, it->node);
		return;
	}
	if (st->replace)
		return;
	if (DsaPointerIsValid(it->node))
	{
		/* under the table's lock: the new node takes the old one's place */
		dsa_pointer *head = cq_gt_find(st->table, hash);
		dsa_pointer *link = head;

		while (link && DsaPointerIsValid(*link) && *link != it->node)
			link = &((StoreNode *) dsa_get_address(cq_store_area, *link))->next;
		if (link && *link == it->node)
		{
			((StoreNode *) dsa_get_address(cq_store_area, it->newnode))->next =
				((StoreNode *) dsa_get_address(cq_store_area, it->node))->next;
			*link = it->newnode;
			cq_store_free_node(it->node);
		}
		else
			cq_store_free_node(it->newnode);	/* not reached: batches are serialized */
	}
	else
		((StoreNode *) dsa_get_address(cq_store_area, it->newnode))->tuple = NODE_ROW(it->newnode);
}

/*
 * publish
 *	  COMMIT: make the prepared copies the store's rows.  Raises no error.
 */
static void
publish(CqStore *st)
{
	StoreDirEntry *d;
	StoreHeader *h;
	CqGroupTable *old_table = NULL;

	if (!st->prepared)
	{
		cq_store_free_items(st, true);
		drop_own_table(st);		/* the query was dropped meanwhile */
		return;
	}
	if (st->switched)
	{
		/* the query moved to its state table: the store is no more */
		cq_store_free_items(st, true);
		drop_own_table(st);
		d = dshash_find(cq_store_dir, &st->key, true);
		if (d == NULL || d->header != st->header)
		{
			if (d)
				dshash_release_lock(cq_store_dir, d);
			return;
		}
		h = cq_store_header_of(st);
		old_table = h->valid ? (st->table ? st->table : cq_gt_attach(cq_store_area, h->table)) : NULL;
		h->valid = false;
		h->inflight = -1;
		h->rows = h->bytes = 0;
		ConditionVariableBroadcast(&cq_shared->store_cv); /* under the lock: see discard */
		dshash_release_lock(cq_store_dir, d);
		if (old_table)
			cq_store_destroy_table(old_table);
		return;
	}
	if (st->table && !st->replace)
		cq_gt_lock(st->table, LW_EXCLUSIVE);
	for_each_item(st, publish_item);
	if (st->table && !st->replace)
		cq_gt_unlock(st->table);
	cq_store_free_items(st, false);
	d = dshash_find(cq_store_dir, &st->key, true);
	if (d == NULL || d->header != st->header)
	{
		if (d)
			dshash_release_lock(cq_store_dir, d);
		drop_own_table(st);
		return;
	}
	h = cq_store_header_of(st);
	if (st->replace)
	{
		old_table = h->valid ? st->table : NULL;
		h->table = cq_gt_handle(st->newtable);
	}
	else if (st->own_table)
	{
		/* the table built by this batch (put_built) replaces any other */
		old_table = h->valid ? cq_gt_attach(cq_store_area, h->table) : NULL;
		h->table = cq_gt_handle(st->table);
	}
	h->valid = true;
	h->rowtype = st->desc->tdtypeid;
	h->published = st->batch_id;
	h->inflight = -1;
	h->rows = st->rows;
	h->bytes = st->bytes;
	h->has_evict_wm = st->has_evict_wm;
	h->evict_wm = st->evict_wm;
	h->image_batch = st->image_batch;
	h->image_at = st->image_at;
	h->image_base = st->image_base;
	h->min_e = st->min_e;
	ConditionVariableBroadcast(&cq_shared->store_cv); /* under the lock: see discard */
	dshash_release_lock(cq_store_dir, d);
	if (old_table)
		cq_store_destroy_table(old_table);
}

/*
 * discard_item
 *	  Abort, one item: its own node unlinked and freed if prepare linked it
 *	  into the published table, freed if linked nowhere; one linked into a
 *	  replaced store's new table is freed with it.  Raises no error.
 */
static void
discard_item(CqStore *st, uint64 hash, OvItem *it)
{
	if (!DsaPointerIsValid(it->newnode))
		return;
	if (!it->linked)
		cq_store_free_node(it->newnode);
	else if (!st->replace)
		cq_store_unlink_node(st->table, hash, it->newnode);
	it->newnode = InvalidDsaPointer;
}

/*
 * discard
 *	  Abort: free the overlay's items and rows in the area, and what
 *	  prepare made; the store stays as it was.
 */
static void
discard(CqStore *st)
{
	StoreDirEntry *d;
	bool		lock = st->prepared && !st->switched && st->table && !st->replace;

	if (lock)
		cq_gt_lock(st->table, LW_EXCLUSIVE);
	for_each_item(st, discard_item);
	if (lock)
		cq_gt_unlock(st->table);
	cq_store_free_items(st, false);
	if (!st->prepared)
	{
		drop_own_table(st);
		return;
	}
	if (st->replace && st->newtable)
		cq_store_destroy_table(st->newtable);
	drop_own_table(st);
	d = dshash_find(cq_store_dir, &st->key, true);

	/*
	 * The waiters (cq_store_open) are woken while the directory entry is
	 * still locked, and only when st's header is still the entry's: a
	 * header is freed only under that lock (free_entry, by a drop's
	 * forget_now).  No wake-up is lost: a waiter is on the condition
	 * variable's list (PrepareToSleep) before it reads inflight under the
	 * same lock, so it either sees -1 or is woken by this broadcast (of the
	 * store's one condition variable, never freed).  publish does the same.
	 */
	if (d && d->header == st->header)
	{
		cq_store_header_of(st)->inflight = -1;
		ConditionVariableBroadcast(&cq_shared->store_cv);
	}
	if (d)
		dshash_release_lock(cq_store_dir, d);
}

/*
 * free_overlay
 *	  Free what st holds, never to be published (the caller takes it out
 *	  of cq_store_xact_stores).
 */
static void
free_overlay(CqStore *st)
{
	cq_store_free_items(st, true);
	drop_own_table(st);
}

/*
 * store_xact_callback
 *	  Publish at commit, discard at abort (see file header).
 */
static void
store_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			foreach(lc, cq_store_xact_stores)
				prepare(lfirst(lc));
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* an overlay no batch was folded into has nothing to publish */
			foreach(lc, cq_store_xact_stores)
			{
				CqStore    *st = lfirst(lc);

				if (!st->ran && !st->switched)
				{
					free_overlay(st);
					cq_store_xact_stores = foreach_delete_current(cq_store_xact_stores, lc);
				}
			}
			if (cq_store_xact_stores != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that ran a batch of a continuous query with state_storage 'memory'")));
			/* its COMMIT PREPARED runs no callback here: free them now */
			forget_pending();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			foreach(lc, cq_store_xact_stores)
				publish(lfirst(lc));
			cq_store_xact_stores = NIL;
			forget_pending();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			foreach(lc, cq_store_xact_stores)
				discard(lfirst(lc));
			cq_store_xact_stores = NIL;
			pending_forgets = NIL;
			break;
		default:
			break;
	}
}

/*
 * cq_store_discard
 *	  cq.reset: this transaction's overlay of the query holds the state
 *	  before the reset; dropped, the next batch (batch 0) opens the store
 *	  afresh instead of folding into it (counting every row twice, before
 *	  session 42).  Unpublished, it leaves a rolled-back reset's next batch
 *	  a store behind the offsets, which that batch rebuilds.
 */
void
cq_store_discard(Oid dboid, int32 query_id)
{
	ListCell   *lc;

	foreach(lc, cq_store_xact_stores)
	{
		CqStore    *st = lfirst(lc);

		if (st->key.dboid == dboid && st->key.query_id == query_id)
		{
			free_overlay(st);
			cq_store_xact_stores = foreach_delete_current(cq_store_xact_stores, lc);
		}
	}
}

/*
 * store_subxact_callback
 *	  A subtransaction that opened an overlay aborted: forget the overlay
 *	  (nothing was copied yet); the drops it made are undone.  One that
 *	  committed hands both to its parent.
 */
static void
store_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, cq_store_xact_stores)
		{
			CqStore    *st = lfirst(lc);

			if (st->subid == mySubid)
			{
				free_overlay(st);
				cq_store_xact_stores = foreach_delete_current(cq_store_xact_stores, lc);
			}
		}
		foreach(lc, pending_forgets)
			if (((PendingForget *) lfirst(lc))->subid == mySubid)
				pending_forgets = foreach_delete_current(pending_forgets, lc);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, cq_store_xact_stores)
		{
			CqStore    *st = lfirst(lc);

			if (st->subid == mySubid)
				st->subid = parentSubid;
		}
		foreach(lc, pending_forgets)
			if (((PendingForget *) lfirst(lc))->subid == mySubid)
				((PendingForget *) lfirst(lc))->subid = parentSubid;
	}
}

/*
 * free_entry
 *	  Free the header and group table of a directory entry, locked
 *	  exclusively by the caller, unless its publication is in flight (a
 *	  batch whose commit is visible and whose COMMIT callback has not run:
 *	  the drop cannot overlap one, it holds the locks the batch held until
 *	  then; then a later drop frees it).  Returns whether the entry may be
 *	  deleted.  Raises no error.
 */
static bool
free_entry(StoreDirEntry *d)
{
	StoreHeader *h;

	if (!DsaPointerIsValid(d->header))
		return true;
	h = dsa_get_address(cq_store_area, d->header);
	if (h->inflight >= 0)
		return false;
	if (h->valid)
		cq_store_destroy_table(cq_gt_attach(cq_store_area, h->table));
	dsa_free(cq_store_area, d->header);
	return true;
}

/*
 * forget_now
 *	  Free the store of a dropped query (no batch of it runs: the drop held
 *	  its catalog row lock), or with CQ_STORE_ALL_QUERIES those of every
 *	  query of the database (pg_cq or the database dropped: no batch of
 *	  them runs either).  Raises no error.
 */
static void
forget_now(StoreKey *key)
{
	StoreDirEntry *d;

	if (key->query_id == CQ_STORE_ALL_QUERIES)
	{
		dshash_seq_status status;

		dshash_seq_init(&status, cq_store_dir, true);
		while ((d = dshash_seq_next(&status)) != NULL)
			if (d->key.dboid == key->dboid && free_entry(d))
				dshash_delete_current(&status);
		dshash_seq_term(&status);
		return;
	}
	d = dshash_find(cq_store_dir, key, true);
	if (d == NULL)
		return;
	if (free_entry(d))
		dshash_delete_entry(cq_store_dir, d);
	else
		dshash_release_lock(cq_store_dir, d);
}

/*
 * forget_pending
 *	  Free the stores this transaction dropped (after its own were published).
 */
static void
forget_pending(void)
{
	ListCell   *lc;

	foreach(lc, pending_forgets)
		forget_now(&((PendingForget *) lfirst(lc))->key);
	pending_forgets = NIL;
}

/*
 * cq_store_forget
 *	  The store of a query being dropped is freed if the drop commits, not
 *	  now: a batch this transaction ran may have its table attached, and a
 *	  savepoint rolled back can bring the query back.  query_id
 *	  CQ_STORE_ALL_QUERIES: the stores of every query of the database
 *	  (DROP EXTENSION pg_cq, whatever statement drops it, in the database;
 *	  DROP DATABASE from another one), freed at the drop's commit as well.
 *	  A crash before that commit's callback runs loses nothing: the
 *	  restart empties shared memory.
 */
void
cq_store_forget(Oid dboid, int32 query_id)
{
	PendingForget *pf;
	MemoryContext old;

	if (cq_shared == NULL || !cq_shared->store_ready)
		return;
	cq_store_attach();
	cq_store_register_callbacks();
	old = MemoryContextSwitchTo(TopTransactionContext);
	pf = palloc(sizeof(PendingForget));
	pf->key = (StoreKey) {dboid, query_id};
	pf->subid = GetCurrentSubTransactionId();
	pending_forgets = lappend(pending_forgets, pf);
	MemoryContextSwitchTo(old);
}
