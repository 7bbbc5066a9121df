/*-------------------------------------------------------------------------
 *
 * brin_insert.h
 *	  Rows into the BRIN index on cq_xid of a tracked source (brin_insert.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BRIN_INSERT_H
#define CQ_BRIN_INSERT_H

#include "postgres.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"

/*
 * A statement's rows meeting the BRIN index in the table's access method
 * (brin_heap.c manages these; cq_brin_gate_am's wrappers read them).
 */
typedef struct CqBrinHeap
{
	Relation	heap;			/* the table (kept open by the caller) */
	Relation	index;			/* its BRIN index on cq_xid */
	bool		close;			/* opened by cq_brin_heap_begin */
	IndexInfo  *info;			/* with the statement's cache and gate */
	AttrNumber	att;			/* the indexed column */
	uint64		rows;			/* rows the wrappers saw */
	int			level;			/* transaction nesting level at its begin */
	struct CqBrinHeap *next;
} CqBrinHeap;

/* the gates of statements in progress, innermost first */
extern CqBrinHeap *cq_brin_gates;

extern void cq_brin_insert_init(void);
extern const struct TableAmRoutine *cq_brin_gate_am(void);
extern void cq_brin_swap_aminsert(Relation idx);
extern bool cq_brin_is_ours(Relation idx);
extern void cq_brin_swap_table(Relation rel);
extern void cq_brin_statement_begin(Relation idx, Relation heap, IndexInfo *indexInfo);
extern bool cq_brin_row_can_wait(Relation idx, IndexInfo *indexInfo);
extern bool cq_brin_row_in_summary(Relation idx, ItemPointer tid);
extern bool cq_brin_has_gate(IndexInfo *indexInfo);
extern uint64 cq_brin_cache_seq(void);
extern void cq_brin_unpin_since(uint64 seq);

#endif							/* CQ_BRIN_INSERT_H */
