/*-------------------------------------------------------------------------
 *
 * rowcache.h
 *	  What this backend made of a catalog row, kept with the row's bytes
 *	  (rowcache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_ROWCACHE_H
#define CQ_ROWCACHE_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"

typedef struct CqRowCacheKey
{
	Oid			relid;
	int32		key;
} CqRowCacheKey;

typedef struct CqRowCacheEntry
{
	CqRowCacheKey key;			/* hash key */
	bool		valid;			/* holds a row (the fields below) */
	uint32		variant;		/* the caller's settings it was read under */
	Size		len;			/* bytes: the row from t_bits to its end */
	char	   *bytes;
	int			natts;
	uint8		hoff;
	bool		hasnull;
	uint64		seen;			/* invalidations at the last lookup */
	MemoryContext cxt;			/* bytes and payload */
	void	   *payload;		/* what the caller made of the row */
} CqRowCacheEntry;

extern HeapTuple cq_rowcache_inline(HeapTuple tup, TupleDesc desc);
extern CqRowCacheEntry *cq_rowcache_lookup(Oid relid, int32 key, uint32 variant, HeapTuple tup,
										   bool *hit);
extern MemoryContext cq_rowcache_fill(CqRowCacheEntry *e, uint32 variant, HeapTuple tup);

#endif							/* CQ_ROWCACHE_H */
