/*-------------------------------------------------------------------------
 *
 * rowload.h
 *	  Rows written to an empty table as COPY writes them, and its key-hash
 *	  index built from what was written (rowload.c): batch 0's direct
 *	  loads (bulkload.c, store_load.c) and the store's image.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_ROWLOAD_H
#define CQ_ROWLOAD_H

#include "postgres.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

typedef struct CqRowLoad CqRowLoad;

/* cq_rowload_begin's flags */
#define CQ_ROWLOAD_KEYS 0x01	/* keep each row's key hash and TID for its index */
#define CQ_ROWLOAD_RING 0x02	/* COPY's ring of buffers (else the page stays pinned, no ring) */
#define CQ_ROWLOAD_CACHED 0x04	/* no ring for the blocks cq_rowload_cache would read back, the ring after */
#define CQ_ROWLOAD_DIRECT 0x08	/* an empty table: whole pages outside shared buffers where heappage.c can */

extern bool cq_rowload_plain_table(Relation rel, Oid index);
extern bool cq_rowload_map_columns(Relation rel, TupleDesc result, int first, char **names,
								   int nnames, int *map);
extern void cq_rowload_check_not_null(Relation rel, Datum *values, bool *isnull, const bool *kept);
extern bool cq_rowload_buildable_index(Relation rel, List *keys, Oid *index);
extern bool cq_rowload_same_key_columns(Relation target, List *keys, TupleDesc result, int ngroups);
extern CqRowLoad *cq_rowload_begin(Relation rel, int options, int flags);
extern void cq_rowload_values(CqRowLoad *rl, const int *map, Datum *values, bool *isnull, int32 h);
extern void cq_rowload_tuple(CqRowLoad *rl, HeapTuple tup);
extern void cq_rowload_index_inserts(CqRowLoad *rl, Oid index);
extern int64 cq_rowload_finish(CqRowLoad *rl);
extern void cq_rowload_build_index(CqRowLoad *rl, Oid index);
extern int64 cq_rowload_cache_blocks(void);
extern void cq_rowload_cache(Oid target, bool target_heap, Oid state);

#endif							/* CQ_ROWLOAD_H */
