/*-------------------------------------------------------------------------
 *
 * brin_heap.h
 *	  A COPY's rows into the BRIN index on cq_xid from the table's access
 *	  method (brin_heap.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BRIN_HEAP_H
#define CQ_BRIN_HEAP_H

#include "postgres.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"
#include "brin_insert.h"

extern CqBrinHeap *cq_brin_heap_begin(Relation heap, Oid index);
extern CqBrinHeap *cq_brin_heap_begin_open(Relation heap, Relation idx, IndexInfo *ii);
extern void cq_brin_heap_end(CqBrinHeap *g, int64 rows, bool aborting);
extern bool cq_brin_heap_insert(EState *estate, ResultRelInfo *rri);
extern void cq_brin_heap_insert_end(EState *estate, bool check);
extern void cq_brin_heap_init(void);

#endif							/* CQ_BRIN_HEAP_H */
