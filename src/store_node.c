/*-------------------------------------------------------------------------
 *
 * store_node.c
 *	  The shared-memory store's area and the pieces store.c builds from
 *	  it: a group's node with its row right after it (alloc_node, link,
 *	  unlink, a header over a row in place), a group table freed with its
 *	  nodes, and the overlay's items and changed rows, written into the
 *	  area as a batch makes them (session 31; see store.c's header).
 *	  Moved out of store.c, which attaches the area.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "utils/dsa.h"
#include "utils/memutils.h"

#include "store_node.h"
#include "store_private.h"
#include "store_table.h"
#include "prefault.h"

dsa_area   *cq_store_area = NULL;

/*
 * A fresh store's nodes (put_built: batch 0, a rebuild, an image load; the
 * only caller of cq_store_alloc_node_values): the pages mapped ahead of them
 * (cq_prefault; 64 pages).  A later batch's nodes (cq_store_alloc_node) go
 * to the free space of a used area, where mapping ahead would map pages
 * nothing writes soon.
 */
#define STORE_PREFAULT_AHEAD (256 * 1024)

/*
 * cq_store_free_node
 *	  Free a node (and the row after it).  In builds that clobber freed
 *	  memory (CLOBBER_FREED_MEMORY, assert-enabled PostgreSQL; or
 *	  -DCQ_CLOBBER_STORE) the node and its row are overwritten first, as
 *	  pfree does: the area's freed memory otherwise stays readable and
 *	  intact, so a read of a freed row returns the right bytes and goes
 *	  unnoticed until the segment is given back (then a segfault).  Raises
 *	  no error.
 */
void
cq_store_free_node(dsa_pointer np)
{
#if defined(CLOBBER_FREED_MEMORY) || defined(CQ_CLOBBER_STORE)
	char	   *n = dsa_get_address(cq_store_area, np);

	memset(n, 0x7f, NODE_ROW_OFFSET + ((MinimalTuple) (n + NODE_ROW_OFFSET))->t_len);
#endif
	dsa_free(cq_store_area, np);
}

/*
 * cq_store_set_view, cq_store_shared_tuple
 *	  A heap tuple header (t; a new one) over a row in the area, without
 *	  copying it: a published row stays where it is while the batch runs
 *	  (rows change only when a batch of the query publishes, and batches
 *	  are serialized), an overlay item's until the group is put again.  The
 *	  bytes before the minimal tuple are not the row's: read it with
 *	  heap_getattr/heap_deform_tuple, copy it with cq_store_own_tuple.
 */
void
cq_store_set_view(HeapTuple t, dsa_pointer tuple)
{
	MinimalTuple mtup = dsa_get_address(cq_store_area, tuple);

	t->t_len = mtup->t_len + MINIMAL_TUPLE_OFFSET;
	ItemPointerSetInvalid(&t->t_self);
	t->t_tableOid = InvalidOid;
	t->t_data = (HeapTupleHeader) ((char *) mtup - MINIMAL_TUPLE_OFFSET);
}

HeapTuple
cq_store_shared_tuple(dsa_pointer tuple)
{
	HeapTuple	t = palloc(sizeof(HeapTupleData));

	cq_store_set_view(t, tuple);
	return t;
}

/*
 * cq_store_item_slot
 *	  Room for the next item (st->nitems), zeroed, not counted yet: a new
 *	  chunk of items in the area when the last one is full, its pointer
 *	  kept before anything else can fail (cq_store_free_items frees
 *	  it).  May raise an error (out of memory).
 */
OvItem *
cq_store_item_slot(CqStore *st)
{
	OvItem	   *it;

	if (st->nitems == (int64) st->nchunks * OV_ITEM_CHUNK)
	{
		dsa_pointer dp;

		if (st->nchunks == st->maxchunks)
		{
			int			n = Max(16, st->maxchunks * 2);

			if (st->chunks == NULL)
			{
				st->chunks = MemoryContextAlloc(st->cxt, sizeof(OvItem *) * n);
				st->chunk_dp = MemoryContextAlloc(st->cxt, sizeof(dsa_pointer) * n);
			}
			else
			{
				st->chunks = repalloc(st->chunks, sizeof(OvItem *) * n);
				st->chunk_dp = repalloc(st->chunk_dp, sizeof(dsa_pointer) * n);
			}
			st->maxchunks = n;
		}
		dp = dsa_allocate(cq_store_area, sizeof(OvItem) * OV_ITEM_CHUNK);
		st->chunk_dp[st->nchunks] = dp;
		st->chunks[st->nchunks++] = dsa_get_address(cq_store_area, dp);
	}
	it = cq_store_item_at(st, st->nitems);
	memset(it, 0, sizeof(*it));
	it->node = InvalidDsaPointer;
	it->newnode = InvalidDsaPointer;
	return it;
}

/*
 * cq_store_own_row
 *	  Make t the row of item it, in its own node: written over the node it
 *	  has when of the same size (linked nowhere yet: nothing else reads
 *	  it), else a new node, the old one freed once the item names the new
 *	  one (an error in dsa_allocate leaves the item as it was).  May raise
 *	  an error (out of shared memory).
 */
void
cq_store_own_row(OvItem *it, HeapTuple t)
{
	dsa_pointer row;

	Assert(!it->linked);
	if (DsaPointerIsValid(it->newnode) && it->tup.t_len == t->t_len)
		cq_store_fill_tuple(dsa_get_address(cq_store_area, NODE_ROW(it->newnode)), t);
	else
	{
		dsa_pointer old = it->newnode;

		it->newnode = cq_store_alloc_node(t, false, &row);
		if (DsaPointerIsValid(old))
			cq_store_free_node(old);
	}
	cq_store_set_view(&it->tup, NODE_ROW(it->newnode));
}

/*
 * cq_store_free_items
 *	  Free the overlay's items and, with nodes, the nodes of theirs not
 *	  linked into a table (linked ones are the table's: published, or freed
 *	  with it, or unlinked by discard_item).  Raises no error.
 */
void
cq_store_free_items(CqStore *st, bool nodes)
{
	if (nodes)
	{
		for (int64 i = 0; i < st->nitems; i++)
		{
			OvItem	   *it = cq_store_item_at(st, i);

			if (DsaPointerIsValid(it->newnode) && !it->linked)
				cq_store_free_node(it->newnode);
		}
	}
	for (int c = 0; c < st->nchunks; c++)
	{
#if defined(CLOBBER_FREED_MEMORY) || defined(CQ_CLOBBER_STORE)
		memset(st->chunks[c], 0x7f, sizeof(OvItem) * OV_ITEM_CHUNK);
#endif
		dsa_free(cq_store_area, st->chunk_dp[c]);
	}
	st->nchunks = 0;
	st->nitems = st->n_indexed = 0;
}

/*
 * cq_store_fill_tuple
 *	  Write a row as a MinimalTuple at mt (t->t_len - MINIMAL_TUPLE_OFFSET
 *	  bytes).
 */
void
cq_store_fill_tuple(MinimalTuple mt, HeapTuple t)
{
	uint32		len = t->t_len - MINIMAL_TUPLE_OFFSET;

	/*
	 * As minimal_tuple_from_heap_tuple, without the local copy, and with the
	 * padding zeroed: cq_store_shared_tuple's header over the row reads its t_ctid
	 * there, and heap_getattr checks a tuple whose t_ctid marks a versioned
	 * datum against its type, which the bytes before the row do not hold.
	 */
	memcpy(mt, (char *) t->t_data + MINIMAL_TUPLE_OFFSET, len);
	mt->t_len = len;
	memset(mt->mt_padding, 0, MINIMAL_TUPLE_PADDING);
}

/*
 * cq_store_alloc_node
 *	  A node (not linked) with a copy of row t right after it, in one
 *	  allocation: a new process pays for the first touch of each page, and
 *	  a lookup then touches one place for both, not two allocations of
 *	  different size classes far apart.  *row: the row; the node's tuple is
 *	  *row when visible, else invalid (not yet published).
 */
dsa_pointer
cq_store_alloc_node(HeapTuple t, bool visible, dsa_pointer *row)
{
	dsa_pointer np = dsa_allocate(cq_store_area, NODE_ROW_OFFSET + t->t_len - MINIMAL_TUPLE_OFFSET);
	StoreNode  *node = dsa_get_address(cq_store_area, np);

	*row = np + NODE_ROW_OFFSET;
	cq_store_fill_tuple((MinimalTuple) ((char *) node + NODE_ROW_OFFSET), t);
	node->next = InvalidDsaPointer;
	node->tuple = visible ? *row : InvalidDsaPointer;
	return np;
}

/*
 * cq_store_row_len
 *	  The t_len heap_form_tuple would give the row values/nulls of desc
 *	  (the heap tuple's: its minimal tuple is MINIMAL_TUPLE_OFFSET
 *	  shorter), and *data_len its data's, for cq_store_alloc_node_values.
 */
uint32
cq_store_row_len(TupleDesc desc, Datum *values, bool *nulls, Size *data_len)
{
	Size		hoff = SizeofHeapTupleHeader;

	for (int i = 0; i < desc->natts; i++)
		if (nulls[i])
		{
			hoff += BITMAPLEN(desc->natts);
			break;
		}
	*data_len = heap_compute_data_size(desc, values, nulls);
	return MAXALIGN(hoff) + *data_len;
}

/*
 * cq_store_alloc_node_values
 *	  cq_store_alloc_node (visible) of the row values/nulls of desc, formed
 *	  right in the node, as heap_form_minimal_tuple forms it (len and
 *	  data_len from cq_store_row_len), with the padding zeroed as
 *	  cq_store_fill_tuple leaves it: the same bytes without a local row to
 *	  form, copy and free (batch 0's puts, session 34).  May raise an error
 *	  (out of memory).
 */
dsa_pointer
cq_store_alloc_node_values(TupleDesc desc, Datum *values, bool *nulls, uint32 len, Size data_len,
						   dsa_pointer *row)
{
	uint32		mlen = len - MINIMAL_TUPLE_OFFSET;
	dsa_pointer np = dsa_allocate(cq_store_area, NODE_ROW_OFFSET + mlen);
	StoreNode  *node = dsa_get_address(cq_store_area, np);
	MinimalTuple mt = (MinimalTuple) ((char *) node + NODE_ROW_OFFSET);
	uint32		hoff = len - data_len;	/* the heap tuple's t_hoff */
	bool		hasnull = false;

	for (int i = 0; i < desc->natts && !hasnull; i++)
		hasnull = nulls[i];
	/* the next nodes come after it: their pages mapped together (prefault.c) */
	cq_prefault(node, NODE_ROW_OFFSET + mlen, STORE_PREFAULT_AHEAD);
	memset(mt, 0, mlen);
	mt->t_len = mlen;
	HeapTupleHeaderSetNatts(mt, desc->natts);
	mt->t_hoff = hoff;
	heap_fill_tuple(desc, values, nulls, (char *) mt + hoff - MINIMAL_TUPLE_OFFSET, data_len,
					&mt->t_infomask, hasnull ? mt->t_bits : NULL);
	*row = np + NODE_ROW_OFFSET;
	node->next = InvalidDsaPointer;
	node->tuple = *row;
	return np;
}

/*
 * cq_store_link_node
 *	  Put node np at the head of the chain of hash in table (its lock held
 *	  exclusively, or the table not visible yet).  May raise an error.
 */
void
cq_store_link_node(CqGroupTable *table, uint64 hash, dsa_pointer np)
{
	StoreNode  *node = dsa_get_address(cq_store_area, np);
	dsa_pointer *head = cq_gt_insert(table, hash);

	node->next = *head;
	*head = np;
}

/*
 * cq_store_link_new_node
 *	  cq_store_link_node for a node never linked (its next invalid, as
 *	  cq_store_alloc_node leaves it): the node is written only when the
 *	  chain has one already, so batch 0's linking (link_pending in
 *	  store.c) does not bring its nodes back into the cache.  May raise an
 *	  error.
 */
void
cq_store_link_new_node(CqGroupTable *table, uint64 hash, dsa_pointer np)
{
	dsa_pointer *head = cq_gt_insert(table, hash);

	Assert(!DsaPointerIsValid(((StoreNode *) dsa_get_address(cq_store_area, np))->next));
	if (DsaPointerIsValid(*head))
		((StoreNode *) dsa_get_address(cq_store_area, np))->next = *head;
	*head = np;
}

/*
 * cq_store_unlink_node
 *	  Remove a node from its chain and free it and its tuple (the table's
 *	  lock held exclusively).  Raises no error.
 */
void
cq_store_unlink_node(CqGroupTable *table, uint64 hash, dsa_pointer np)
{
	dsa_pointer *head = cq_gt_find(table, hash);
	dsa_pointer *link;

	if (head == NULL)
		return;
	for (link = head; DsaPointerIsValid(*link);)
	{
		StoreNode  *node = dsa_get_address(cq_store_area, *link);

		if (*link == np)
		{
			*link = node->next;
			cq_store_free_node(np);
			break;
		}
		link = &node->next;
	}
	if (!DsaPointerIsValid(*head))
		cq_gt_delete(table, head);
}

/*
 * cq_store_destroy_table
 *	  Free a group table with its nodes and rows.
 */
void
cq_store_destroy_table(CqGroupTable *table)
{
	uint64		n;
	CqGroupSlot *slots = cq_gt_slots(table, &n);

	for (uint64 i = 0; i < n; i++)
	{
		for (dsa_pointer np = slots[i].head; DsaPointerIsValid(np);)
		{
			dsa_pointer next = ((StoreNode *) dsa_get_address(cq_store_area, np))->next;

			cq_store_free_node(np);
			np = next;
		}
	}
	cq_gt_destroy(table);
}

