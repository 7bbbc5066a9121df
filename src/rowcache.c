/*-------------------------------------------------------------------------
 *
 * rowcache.c
 *	  What this backend made of a catalog row, kept with the row's bytes:
 *	  a row stored with the same bytes is read the same way, without
 *	  reading it again.
 *
 * Every batch reads its query's cq.queries row (twice for CALL cq.run: the
 * name look-up, then the locked read) and turns its ~25 columns into a
 * CqQuery: a slot deform, a string copy per column, an output function for
 * the non-text ones.  That was ~24k instructions a read (bench/batch_cg.sh,
 * session 36), for a row that changes only when the query is altered,
 * paused, failed or reset.  A row version is immutable, and two rows with
 * the same data bytes (null bitmap and attributes, the same number of
 * attributes) under the same tuple descriptor hold the same values: the
 * entry of a key (the query's id) keeps those bytes and what the caller
 * made of them, and answers only when the bytes it is shown are the same.
 * Compared are the bytes, not the row's identity (ctid, xmin), so that no
 * reuse of a slot or a transaction id can make a stale entry match.
 *
 * A row with a value stored out of line is compared in its flattened form
 * (cq_rowcache_inline: the value fetched from TOAST, still compressed if it
 * was), never by the out-of-line pointer in its bytes, which could be
 * another value's after the row is gone: a long query's row (its query
 * tree TOASTed) was read, fetched and decompressed, whole every batch
 * (~108k instructions, bench/results/ingest-s38.md); the fetch alone is a
 * fraction of that.
 * An entry is dropped when its relation's cache entry is invalidated (the
 * tuple descriptor may change: ALTER TABLE, an extension update), through
 * pg_cq's relation cache callback (inval.c); one filled while an
 * invalidation came (a catalog look-up of the caller processed it) is not
 * used.  What the caller made may also depend on settings (an interval's
 * output follows IntervalStyle): they are the caller's `variant`, compared
 * with the bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "rowcache.h"
#include "inval.h"

/* the cached rows, by (relation, key) */
static HTAB *rows = NULL;
static uint64 invalidations = 0;	/* rowcache_inval calls so far */

/*
 * rowcache_inval
 *	  Relation cache callback: forget the rows of relid (of every relation
 *	  when relid is InvalidOid).
 */
static void
rowcache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	CqRowCacheEntry *e;

	invalidations++;
	if (rows == NULL)
		return;
	hash_seq_init(&seq, rows);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!OidIsValid(relid) || e->key.relid == relid)
			e->valid = false;
}

/* The bytes of tup that hold its values: null bitmap, padding, attributes. */
#define ROW_DATA(tup) ((char *) (tup)->t_data + offsetof(HeapTupleHeaderData, t_bits))
#define ROW_LEN(tup) ((tup)->t_len - offsetof(HeapTupleHeaderData, t_bits))

/*
 * cq_rowcache_inline
 *	  tup itself when no value of it is stored out of line, else a copy
 *	  with those values fetched in (compressed ones stay compressed;
 *	  toast_flatten_tuple): the form cq_rowcache_lookup and
 *	  cq_rowcache_fill compare and keep.  The caller frees a copy
 *	  (result != tup).
 */
HeapTuple
cq_rowcache_inline(HeapTuple tup, TupleDesc desc)
{
	if (!HeapTupleHasExternal(tup))
		return tup;
	return toast_flatten_tuple(tup, desc);
}

/*
 * cq_rowcache_lookup
 *	  The entry of key in relid (made, empty, if there is none), and
 *	  whether it holds row tup as read under variant (*hit; then its
 *	  payload is what the caller made of it).  On a miss the caller may
 *	  fill it (cq_rowcache_fill) with the same tup.
 */
CqRowCacheEntry *
cq_rowcache_lookup(Oid relid, int32 key, uint32 variant, HeapTuple tup, bool *hit)
{
	CqRowCacheKey k;
	CqRowCacheEntry *e;
	bool		found;

	if (rows == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(CqRowCacheKey);
		ctl.entrysize = sizeof(CqRowCacheEntry);
		ctl.hcxt = TopMemoryContext;
		rows = hash_create("pg_cq row cache", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		cq_relcache_callback(rowcache_inval, (Datum) 0);
	}
	memset(&k, 0, sizeof(k));
	k.relid = relid;
	k.key = key;
	e = hash_search(rows, &k, HASH_ENTER, &found);
	if (!found)
	{
		e->valid = false;
		e->cxt = AllocSetContextCreate(TopMemoryContext, "pg_cq row cache entry",
									   ALLOCSET_SMALL_SIZES);
		e->bytes = NULL;
		e->payload = NULL;
	}
	e->seen = invalidations;
	*hit = e->valid && e->variant == variant && e->len == ROW_LEN(tup) &&
		e->natts == HeapTupleHeaderGetNatts(tup->t_data) &&
		e->hoff == tup->t_data->t_hoff &&
		e->hasnull == HeapTupleHasNulls(tup) &&
		memcmp(e->bytes, ROW_DATA(tup), e->len) == 0;
	return e;
}

/*
 * cq_rowcache_fill
 *	  Make entry e (from cq_rowcache_lookup of tup and variant, a miss)
 *	  hold tup's bytes, its payload emptied; returns the memory context the
 *	  caller makes the payload in (set e->payload), or NULL when the row is
 *	  not to be kept (a value stored out of line: tup was not made by
 *	  cq_rowcache_inline; or an invalidation came since the lookup).
 */
MemoryContext
cq_rowcache_fill(CqRowCacheEntry *e, uint32 variant, HeapTuple tup)
{
	e->valid = false;
	e->payload = NULL;
	MemoryContextReset(e->cxt);
	e->bytes = NULL;
	if (HeapTupleHasExternal(tup) || e->seen != invalidations)
		return NULL;
	e->len = ROW_LEN(tup);
	e->bytes = MemoryContextAlloc(e->cxt, e->len);
	memcpy(e->bytes, ROW_DATA(tup), e->len);
	e->natts = HeapTupleHeaderGetNatts(tup->t_data);
	e->hoff = tup->t_data->t_hoff;
	e->hasnull = HeapTupleHasNulls(tup);
	e->variant = variant;
	e->valid = true;
	return e->cxt;
}
