/*-------------------------------------------------------------------------
 *
 * snapmemo.c
 *	  The last few pg_snapshot values converted between text and datum,
 *	  remembered.
 *
 * A batch's start offset is the previous batch's end: read back from
 * cq.offsets as a datum and printed (the text is what offsets.c computes
 * with), then read in again for the batch's statement parameters and for
 * its cq.offsets and cq.progress rows; its end offset, printed from the
 * current snapshot, is read in twice the same way.  pg_snapshot_in and
 * pg_snapshot_out depend on no setting: one value always converts the
 * same way, so the conversions of a value seen among the last few are
 * answered from memory (~4k instructions a batch, bench/batch_cg.sh).
 *
 * A value is looked up in one slot of a table indexed by its hash (one
 * table by text, one by datum), so that the batches of many queries in
 * turn each find their own last offset.  A datum's text is looked up only
 * among pg_snapshot_out's results: a text read in may be written another
 * way (duplicate running ids, which pg_snapshot_in drops).
 *
 * Memory: a context of its own under TopMemoryContext holds the pairs,
 * datums with a 4-byte header; what is handed out is a copy in the
 * caller's context (a slot may be taken by the next conversion).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"

#include "snapmemo.h"

/* direct-mapped: a slot by the hash of the text (in) or of the datum (out) */
#define SNAPMEMO_SLOTS 256

typedef struct SnapMemo
{
	char	   *text;			/* NULL: empty */
	struct varlena *datum;		/* its pg_snapshot, 4-byte header */
} SnapMemo;

static SnapMemo by_text[SNAPMEMO_SLOTS];	/* pg_snapshot_in's results */
static SnapMemo by_datum[SNAPMEMO_SLOTS];	/* pg_snapshot_out's */
static MemoryContext memo_cxt = NULL;

/*
 * memo_put
 *	  Keep text and the pg_snapshot whose payload is data (len bytes) in
 *	  slot m, in place of what it held.
 */
static void
memo_put(SnapMemo *m, const char *text, const char *data, Size len)
{
	char	   *t;
	struct varlena *d;

	if (memo_cxt == NULL)
		memo_cxt = AllocSetContextCreate(TopMemoryContext, "pg_cq snapshot conversions",
										 ALLOCSET_SMALL_SIZES);
	/* the new pair first: an allocation that fails leaves the slot as it was */
	t = MemoryContextStrdup(memo_cxt, text);
	d = MemoryContextAlloc(memo_cxt, len + VARHDRSZ);
	SET_VARSIZE(d, len + VARHDRSZ);
	memcpy(VARDATA(d), data, len);
	if (m->text != NULL)
	{
		pfree(m->text);
		pfree(m->datum);
	}
	m->text = t;
	m->datum = d;
}

/*
 * cq_snapmemo_in
 *	  pg_snapshot_in(text), palloc'd.
 */
Datum
cq_snapmemo_in(const char *text)
{
	size_t		n = strlen(text);
	SnapMemo   *m = &by_text[hash_bytes((const unsigned char *) text, (int) n) % SNAPMEMO_SLOTS];
	Datum		d;

	if (m->text != NULL && strcmp(m->text, text) == 0)
	{
		struct varlena *copy = palloc(VARSIZE(m->datum));

		memcpy(copy, m->datum, VARSIZE(m->datum));
		return PointerGetDatum(copy);
	}
	d = DirectFunctionCall1(pg_snapshot_in, CStringGetDatum(text));
	memo_put(m, text, VARDATA(DatumGetPointer(d)), VARSIZE(DatumGetPointer(d)) - VARHDRSZ);
	return d;
}

/*
 * cq_snapmemo_out
 *	  pg_snapshot_out(datum), palloc'd; what it prints is read in as
 *	  this datum again (cq_snapmemo_in).  A compressed or out-of-line datum
 *	  is converted without the memo (a pg_snapshot is small: never seen).
 */
char *
cq_snapmemo_out(Datum datum)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(datum);
	const char *data;
	Size		len;
	SnapMemo   *m;
	char	   *text;

	if (VARATT_IS_COMPRESSED(v) || VARATT_IS_EXTERNAL(v))
		return DatumGetCString(DirectFunctionCall1(pg_snapshot_out, datum));
	data = VARDATA_ANY(v);
	len = VARSIZE_ANY_EXHDR(v);
	m = &by_datum[hash_bytes((const unsigned char *) data, (int) len) % SNAPMEMO_SLOTS];
	if (m->text != NULL && VARSIZE(m->datum) - VARHDRSZ == len &&
		memcmp(VARDATA(m->datum), data, len) == 0)
		return pstrdup(m->text);
	text = DatumGetCString(DirectFunctionCall1(pg_snapshot_out, datum));
	memo_put(m, text, data, len);
	/* the text printed reads in as this datum (pg_snapshot_in of a printed one) */
	memo_put(&by_text[hash_bytes((const unsigned char *) text, (int) strlen(text)) % SNAPMEMO_SLOTS],
			 text, data, len);
	return text;
}
