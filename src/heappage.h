/*-------------------------------------------------------------------------
 *
 * heappage.h
 *	  Heap pages of a batch-0 load written whole, outside shared buffers
 *	  (heappage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_HEAPPAGE_H
#define CQ_HEAPPAGE_H

#include "postgres.h"
#include "access/htup.h"
#include "storage/block.h"
#include "storage/off.h"
#include "utils/relcache.h"

typedef struct CqHeapPages CqHeapPages;

/* called with a written page's rows: h[off - 1] is the key hash of (blkno, off), off 1..maxoff */
typedef void (*CqHeapPageKeys) (void *arg, const int32 *h, BlockNumber blkno, OffsetNumber maxoff);

extern bool cq_heappage_usable(Relation rel);
extern CqHeapPages *cq_heappage_begin(Relation rel, CommandId cid, CqHeapPageKeys keys, void *keys_arg);
extern void cq_heappage_add(CqHeapPages *hp, HeapTuple tup, int32 h);
extern int64 cq_heappage_end(CqHeapPages *hp);

#endif							/* CQ_HEAPPAGE_H */
