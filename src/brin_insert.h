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

extern void cq_brin_insert_init(void);
extern void cq_brin_swap_aminsert(Relation idx);
extern bool cq_brin_is_ours(Relation idx);
extern void cq_brin_swap_table(Relation rel);
extern void cq_brin_statement_begin(Relation idx, Relation heap, IndexInfo *indexInfo);
extern bool cq_brin_row_can_wait(Relation idx, IndexInfo *indexInfo);
extern bool cq_brin_row_in_summary(Relation idx, ItemPointer tid);
extern uint64 cq_brin_cache_seq(void);
extern void cq_brin_unpin_since(uint64 seq);

#endif							/* CQ_BRIN_INSERT_H */
