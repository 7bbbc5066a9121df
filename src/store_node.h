/*-------------------------------------------------------------------------
 *
 * store_node.h
 *	  The shared-memory store's area and what store.c builds from it: a
 *	  group's node with its row (alloc, link, unlink, a header over a row),
 *	  a group table's destruction, and the overlay's items and rows in the
 *	  area (store_node.c).  Not for other modules: they use store.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_NODE_H
#define CQ_STORE_NODE_H

#include "postgres.h"
#include "access/htup.h"
#include "utils/dsa.h"
#include "store_private.h"
#include "store_setup.h"

#define NODE_OVERHEAD ((int64) sizeof(StoreNode))
#define NODE_ROW_OFFSET MAXALIGN(sizeof(StoreNode))
#define NODE_ROW(np) ((np) + NODE_ROW_OFFSET)

/* the store's area, attached by store.c (store_attach) */
extern dsa_area *cq_store_area;

/*
 * cq_store_item_at
 *	  The overlay's i-th item.
 */
static inline OvItem *
cq_store_item_at(CqStore *st, int64 i)
{
	return &st->chunks[i / OV_ITEM_CHUNK][i % OV_ITEM_CHUNK];
}

extern void cq_store_set_view(HeapTuple t, dsa_pointer tuple);
extern HeapTuple cq_store_shared_tuple(dsa_pointer tuple);
extern OvItem *cq_store_item_slot(CqStore *st);
extern void cq_store_own_row(OvItem *it, HeapTuple t);
extern void cq_store_free_items(CqStore *st, bool nodes);
extern void cq_store_fill_tuple(MinimalTuple mt, HeapTuple t);
extern dsa_pointer cq_store_alloc_node(HeapTuple t, bool visible, dsa_pointer *row);
extern uint32 cq_store_row_len(TupleDesc desc, Datum *values, bool *nulls, Size *data_len);
extern dsa_pointer cq_store_alloc_node_values(TupleDesc desc, Datum *values, bool *nulls,
											  uint32 len, Size data_len, dsa_pointer *row);
extern void cq_store_free_node(dsa_pointer np);
extern void cq_store_link_node(CqGroupTable *table, uint64 hash, dsa_pointer np);
extern void cq_store_link_new_node(CqGroupTable *table, uint64 hash, dsa_pointer np);
extern void cq_store_unlink_node(CqGroupTable *table, uint64 hash, dsa_pointer np);
extern void cq_store_destroy_table(CqGroupTable *table);

#endif							/* CQ_STORE_NODE_H */
