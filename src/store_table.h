/*-------------------------------------------------------------------------
 *
 * store_table.h
 *	  The group table of a query's shared-memory state store (store.c): an
 *	  open-addressing hash table in the store's DSA area from the 64-bit
 *	  hash of a group's keys to the head of its chain of nodes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_TABLE_H
#define CQ_STORE_TABLE_H

#include "postgres.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"

/* A group table as a backend sees it (backend-local, over the shared one). */
typedef struct CqGroupTable CqGroupTable;

/* A slot: a hash and the head of its groups' chain (invalid: empty). */
typedef struct CqGroupSlot
{
	uint64		hash;
	dsa_pointer head;
} CqGroupSlot;

extern uint64 cq_gt_bytes_for(uint64 expected);
extern CqGroupTable *cq_gt_create(dsa_area *area, int tranche, uint64 expected);
extern CqGroupTable *cq_gt_attach(dsa_area *area, dsa_pointer handle);
extern dsa_pointer cq_gt_handle(CqGroupTable *t);
extern void cq_gt_destroy(CqGroupTable *t);
extern void cq_gt_lock(CqGroupTable *t, LWLockMode mode);
extern void cq_gt_unlock(CqGroupTable *t);
extern dsa_pointer *cq_gt_find(CqGroupTable *t, uint64 hash);
extern dsa_pointer *cq_gt_insert(CqGroupTable *t, uint64 hash);
extern void cq_gt_sort_by_slot(CqGroupTable *t, CqGroupSlot **items, CqGroupSlot **tmp, int n);
extern void cq_gt_delete(CqGroupTable *t, dsa_pointer *head);
extern CqGroupSlot *cq_gt_slots(CqGroupTable *t, uint64 *nslots);

#endif							/* CQ_STORE_TABLE_H */
