/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  The per-batch rows of the catalog: cq.offsets (the offset a batch
 *	  reached, its watermarks) and cq.progress (its metrics).
 *
 * Callers have SPI connected and are inside a transaction; every statement
 * runs in a superuser section (security.c), as catalog.c's do.  A batch's
 * rows are written in the batch's transaction, so the offset commits with
 * the target writes or not at all.  Results are allocated in the caller's
 * memory context.
 *
 * For a timestamp (without time zone) event-time column, batches compute
 * event times and watermarks as the column's values at UTC (exact and
 * monotone).  The rows show them read in the query's time zone instead
 * (naive_in_zone), and since 0.2 cq.offsets also keeps the watermarks as
 * the column's values (batch_watermark_ntz, watermark_ntz), which is what
 * the next batch reads back: never a conversion back from a shown value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "progress.h"
#include "colmap.h"
#include "snapmemo.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"

/*
 * spi_text
 *	  Text value of column `col` of the first SPI row; NULL if null.  A
 *	  text column is copied directly (no output function look-up per value,
 *	  as SPI_getvalue does: this is read for every batch).
 */
static char *
spi_text(int col)
{
	bool		isnull;
	Datum		d;

	if (SPI_gettypeid(SPI_tuptable->tupdesc, col) != TEXTOID)
		return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

/* int8 value of column `col` of the first SPI row, or ifnull. */
static int64
spi_int64(int col, int64 ifnull)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? ifnull : DatumGetInt64(d);
}

/*
 * spi_watermark
 *	  A watermark of the first SPI row as the engine compares it: column
 *	  `ntz_col` (cq.offsets.*_ntz, 0 = none: a 0.1 catalog) when not null,
 *	  a timestamp (without time zone) event time whose bits are the value at
 *	  UTC, exactly; else column `col` (a timestamptz column's watermark, or
 *	  a timestamp column's value at UTC as recorded before 0.2).  False for
 *	  NULL (-infinity).
 */
static bool
spi_watermark(int col, int ntz_col, TimestampTz *wm)
{
	bool		isnull = true;
	Datum		d = (Datum) 0;

	if (ntz_col > 0)
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, ntz_col, &isnull);
	if (!isnull)
	{
		*wm = (TimestampTz) DatumGetTimestamp(d);
		return true;
	}
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);
	*wm = isnull ? 0 : DatumGetTimestampTz(d);
	return !isnull;
}

/*
 * naive_in_zone
 *	  What a timestamp (without time zone) event time t (its value at UTC,
 *	  as batches compute it) shows as in cq.progress, cq.offsets and
 *	  cq.status: the timestamptz that reads as t in time zone `zone` (the
 *	  query's creator's), as `t AT TIME ZONE zone` computes it: a value in
 *	  a spring-forward gap is taken with the offset before the gap (02:30
 *	  reads as 03:30), an ambiguous one of a fall-back with the offset after
 *	  it.  Not an error where that lies outside the timestamptz range (a
 *	  value within a day of its ends): -infinity or infinity.  An unknown
 *	  zone (none, or one the time zone database no longer has) is UTC.
 */
static TimestampTz
naive_in_zone(TimestampTz t, const char *zone)
{
	pg_tz	   *tz = zone ? pg_tzset(zone) : NULL;
	struct pg_tm tm;
	fsec_t		fsec;
	int			offset;
	TimestampTz result;

	if (tz == NULL || TIMESTAMP_NOT_FINITE(t))
		return t;
	if (timestamp2tm((Timestamp) t, NULL, &tm, &fsec, NULL, NULL) != 0)
		return t;
	offset = DetermineTimeZoneOffset(&tm, tz);
	if (tm2timestamp(&tm, fsec, &offset, &result) != 0)
	{
		/* the offset is in seconds west of Greenwich */
		if (offset > 0)
			TIMESTAMP_NOEND(result);
		else
			TIMESTAMP_NOBEGIN(result);
	}
	return result;
}

/*
 * Direct reads of cq.offsets and cq.progress by their primary keys.
 *
 * Every batch reads its query's last offset (after locking the query's
 * row).  As a SQL statement that costs a parse, plan and executor start in
 * every new backend, and an executor start per batch after that; read
 * through the primary key index with a snapshot taken as SPI would take
 * one for a statement, it costs an index probe.  The statement stays
 * for a catalog whose keys are not the expected ones.
 */

/* An opened table and its primary key, the key's columns as expected. */
typedef struct PkScan
{
	Relation	rel;
	Relation	idx;
	int			nkeys;			/* key columns before batch_id */
} PkScan;

/*
 * pk_open
 *	  Open cq.<relname> and its primary key, lockmode held to the end of
 *	  the transaction (as a statement would); false (nothing left
 *	  open) unless the key is (schema, name, batch_id) on a 0.2 catalog or
 *	  (name, batch_id) on a 0.1 catalog.
 */
static bool
pk_open(const char *relname, bool v02, PkScan *pk, LOCKMODE lockmode)
{
	Oid			relid = cq_colmap_cq_relid(relname);
	Oid			idxid;
	static const char *const cols[3] = {"schema", "name", "batch_id"};
	static CqColMap maps[2] = {CQ_COLMAP_INIT, CQ_COLMAP_INIT};
	int			first = v02 ? 0 : 1;
	const AttrNumber *atts;
	bool		ok;

	if (!OidIsValid(relid))
		return false;
	pk->rel = table_open(relid, lockmode);
	idxid = RelationGetPrimaryKeyIndex(pk->rel);
	if (!OidIsValid(idxid))
	{
		table_close(pk->rel, NoLock);
		return false;
	}
	pk->idx = index_open(idxid, lockmode);
	pk->nkeys = 2 - first;
	ok = pk->idx->rd_index->indnkeyatts == 3 - first;
	/* the key's column numbers, one map per table (colmap.c) */
	atts = cq_colmap_get(&maps[strcmp(relname, "offsets") == 0 ? 0 : 1], pk->rel, cols, 3);
	for (int i = first; i < 3 && ok; i++)
		ok = pk->idx->rd_index->indkey.values[i - first] == atts[i];
	if (!ok)
	{
		index_close(pk->idx, NoLock);
		table_close(pk->rel, NoLock);
	}
	return ok;
}

/* Close what pk_open opened, keeping the locks. */
static void
pk_close(PkScan *pk)
{
	index_close(pk->idx, NoLock);
	table_close(pk->rel, NoLock);
}

/*
 * pk_scan
 *	  Begin a scan of pk's primary key over the query's rows (name, and
 *	  schema on a 0.2 catalog) and, unless strategy is InvalidStrategy, those
 *	  whose batch_id is =, <= or >= batch_id (strategy).
 */
static IndexScanDesc
pk_scan(PkScan *pk, Snapshot snap, Datum name, Datum schema, StrategyNumber strategy,
		int64 batch_id)
{
	ScanKeyData key[3];
	int			n = 0;
	IndexScanDesc scan;

	if (pk->nkeys == 2)
	{
		ScanKeyEntryInitialize(&key[n], 0, n + 1, BTEqualStrategyNumber, InvalidOid,
							   pk->idx->rd_indcollation[n], F_NAMEEQ, schema);
		n++;
	}
	ScanKeyEntryInitialize(&key[n], 0, n + 1, BTEqualStrategyNumber, InvalidOid,
						   pk->idx->rd_indcollation[n], F_TEXTEQ, name);
	n++;
	if (strategy != InvalidStrategy)
	{
		ScanKeyEntryInitialize(&key[n], 0, n + 1, strategy, InvalidOid,
							   pk->idx->rd_indcollation[n],
							   strategy == BTLessEqualStrategyNumber ? F_INT8LE :
							   strategy == BTGreaterEqualStrategyNumber ? F_INT8GE : F_INT8EQ,
							   Int64GetDatum(batch_id));
		n++;
	}
	scan = index_beginscan(pk->rel, pk->idx, snap, n, 0);
	index_rescan(scan, key, n, NULL, 0);
	return scan;
}

/*
 * pk_first
 *	  Into slot, the first row in direction dir of the query's rows
 *	  (name, and schema on a 0.2 catalog), and with batch_id = *batch_id
 *	  unless batch_id is NULL; false if none.
 */
static bool
pk_first(PkScan *pk, Snapshot snap, Datum name, Datum schema, const int64 *batch_id,
		 ScanDirection dir, TupleTableSlot *slot)
{
	IndexScanDesc scan = pk_scan(pk, snap, name, schema,
								 batch_id ? BTEqualStrategyNumber : InvalidStrategy,
								 batch_id ? *batch_id : 0);
	bool		found = index_getnext_slot(scan, dir, slot);

	index_endscan(scan);
	return found;
}

/* Column att of the slot's row; NULL if att is InvalidAttrNumber (no such column). */
static Datum
pk_col(TupleTableSlot *slot, AttrNumber att, bool *isnull)
{
	if (att == InvalidAttrNumber)
	{
		*isnull = true;
		return (Datum) 0;
	}
	return slot_getattr(slot, att, isnull);
}

/*
 * pk_watermark
 *	  spi_watermark for a row read directly: column ntz_att (InvalidAttrNumber
 *	  = none, a 0.1 catalog) when not null, else column att.
 */
static bool
pk_watermark(TupleTableSlot *slot, AttrNumber att, AttrNumber ntz_att, TimestampTz *wm)
{
	bool		isnull = true;
	Datum		d = (Datum) 0;

	if (ntz_att != InvalidAttrNumber)
		d = pk_col(slot, ntz_att, &isnull);
	if (!isnull)
	{
		*wm = (TimestampTz) DatumGetTimestamp(d);
		return true;
	}
	d = pk_col(slot, att, &isnull);
	*wm = isnull ? 0 : DatumGetTimestampTz(d);
	return !isnull;
}

/*
 * The started_at of the last batch of each query this backend committed.
 *
 * A batch reads its query's last cq.offsets row, and the started_at of the
 * cq.progress row of the same batch (for input_rows_per_second): a second
 * table and index opened and probed, ~17k instructions a batch
 * (bench/batch_cg.sh).  The backend that ran that batch knows it: a batch's
 * started_at is remembered when its transaction commits, never when the
 * batch was rolled back (in full or to a savepoint), with its end offset,
 * which tells it apart from a batch of the same id of another run of the
 * query (after cq.reset).  A batch another backend ran since is not the
 * remembered one: read from the table.
 */
typedef struct Started
{
	int32		id;				/* the query's id (hash key) */
	int64		batch_id;
	TimestampTz started_at;
	char	   *end_offset;		/* in TopMemoryContext */
	SubTransactionId subid;		/* pending: the subtransaction that wrote it */
} Started;

static HTAB *started_committed = NULL;
static List *started_pending = NIL;	/* Started *, in TopMemoryContext */

static void offset_hint_set(int32 id, int64 batch_id);

static void
started_free(Started *s)
{
	pfree(s->end_offset);
	pfree(s);
}

/*
 * started_xact / started_subxact
 *	  At commit the pending rows become known; at abort (or PREPARE: the
 *	  commit comes in another backend) they are forgotten, and so are those
 *	  of a subtransaction rolled back (and of those it started).
 */
static void
started_xact(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT && event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, started_pending)
	{
		Started    *s = lfirst(lc);
		bool		found;
		Started    *e;

		if (event != XACT_EVENT_COMMIT)
		{
			started_free(s);
			continue;
		}
		e = hash_search(started_committed, &s->id, HASH_ENTER, &found);
		if (found)
			pfree(e->end_offset);
		offset_hint_set(s->id, s->batch_id);	/* the next read starts there */
		e->batch_id = s->batch_id;
		e->started_at = s->started_at;
		e->end_offset = s->end_offset;
		pfree(s);
	}
	list_free(started_pending);
	started_pending = NIL;
}

static void
started_subxact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
				void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, started_pending)
	{
		Started    *s = lfirst(lc);

		if (s->subid >= mySubid)
		{
			started_free(s);
			started_pending = foreach_delete_current(started_pending, lc);
		}
	}
}

/*
 * started_remember
 *	  Batch batch_id of query id, ending at end_offset, started at
 *	  started_at: known once this transaction commits.
 */
static void
started_remember(int32 id, int64 batch_id, TimestampTz started_at, const char *end_offset)
{
	MemoryContext old;
	Started    *s;
	ListCell   *lc;

	if (started_committed == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(Started);
		started_committed = hash_create("pg_cq batch starts", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		RegisterXactCallback(started_xact, NULL);
		RegisterSubXactCallback(started_subxact, NULL);
	}
	/* one a query: its latest (an earlier one's loss is a read from the table) */
	foreach(lc, started_pending)
		if (((Started *) lfirst(lc))->id == id)
		{
			started_free(lfirst(lc));
			started_pending = foreach_delete_current(started_pending, lc);
		}
	old = MemoryContextSwitchTo(TopMemoryContext);
	s = palloc(sizeof(Started));
	s->id = id;
	s->batch_id = batch_id;
	s->started_at = started_at;
	s->end_offset = pstrdup(end_offset);
	s->subid = GetCurrentSubTransactionId();
	started_pending = lappend(started_pending, s);
	MemoryContextSwitchTo(old);
}

/*
 * started_known
 *	  The started_at of batch batch_id of query id ending at end_offset,
 *	  if this backend committed it; false if not known.
 */
static bool
started_known(int32 id, int64 batch_id, const char *end_offset, TimestampTz *started_at)
{
	Started    *e;

	if (started_committed == NULL || end_offset == NULL)
		return false;
	e = hash_search(started_committed, &id, HASH_FIND, NULL);
	if (e == NULL || e->batch_id != batch_id || strcmp(e->end_offset, end_offset) != 0)
		return false;
	*started_at = e->started_at;
	return true;
}

/*
 * The batch id of each query's last cq.offsets row as this backend last read
 * it, or last committed: where the next read starts.  The last row was
 * found by a backward scan of the query's primary key range, and a btree
 * scan reads every entry of its range on the page it lands on before
 * returning the first: with the query's CQ_PROGRESS_KEEP rows on the page
 * (and the entries of deleted ones not vacuumed yet), a hundred key checks
 * and more for one row.  From the batch id known last, a forward scan of
 * the ids from there reads that row and any newer one (another backend's
 * batch).  The id is only where to start: the answer is the last visible
 * row of the ids from there, which is the last row of all when there is
 * any; when there is none (a reset started the ids over, a batch rolled
 * back) the backward scan runs as before.
 */
typedef struct OffsetHint
{
	int32		id;				/* the query's id (hash key) */
	int64		batch_id;
} OffsetHint;

static HTAB *offset_hints = NULL;

/* Where the next read of query id's last row starts: batch_id (also kept at commit). */
static void
offset_hint_set(int32 id, int64 batch_id)
{
	if (offset_hints == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(OffsetHint);
		offset_hints = hash_create("pg_cq offset hints", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	((OffsetHint *) hash_search(offset_hints, &id, HASH_ENTER, NULL))->batch_id = batch_id;
}

/*
 * pk_last_from
 *	  Into slot, the last visible row of the query's rows of pk's table
 *	  with batch_id >= from (forward scan); false if none.
 */
static bool
pk_last_from(PkScan *pk, Snapshot snap, Datum name, Datum schema, int64 from,
			 TupleTableSlot *slot)
{
	IndexScanDesc scan = pk_scan(pk, snap, name, schema, BTGreaterEqualStrategyNumber, from);
	bool		found = false;
	TupleTableSlot *row = table_slot_create(pk->rel, NULL);

	while (index_getnext_slot(scan, ForwardScanDirection, row))
	{
		ExecCopySlot(slot, row);
		found = true;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(row);
	return found;
}

/*
 * last_offset_row
 *	  Into slot, the query's last row of the cq.offsets of off (see
 *	  OffsetHint); false if none.
 */
static bool
last_offset_row(PkScan *off, Snapshot snap, int32 id, Datum name, Datum schema,
				TupleTableSlot *slot)
{
	OffsetHint *h = offset_hints ? hash_search(offset_hints, &id, HASH_FIND, NULL) : NULL;

	if (h != NULL && pk_last_from(off, snap, name, schema, h->batch_id, slot))
		return true;
	if (!pk_first(off, snap, name, schema, NULL, BackwardScanDirection, slot))
	{
		/* none: read from the start next time */
		if (h != NULL)
			hash_search(offset_hints, &id, HASH_REMOVE, NULL);
		return false;
	}
	return true;
}

/*
 * last_offset_direct
 *	  cq_progress_last_offset through the primary keys: the last cq.offsets
 *	  row of the query (backward scan) and the started_at of its cq.progress
 *	  row, with a snapshot taken now after a command counter increment, as
 *	  SPI takes one for a statement.  False, having read nothing, when a key
 *	  is not as expected.
 */
static bool
last_offset_direct(CqQuery *q, CqLastOffset *last, bool v02)
{
	PkScan		off;
	PkScan		prog;
	Datum		name;
	Datum		schema;
	char		schema_null;
	Snapshot	snap;
	TupleTableSlot *slot;
	bool		isnull;
	Datum		d;
	bool		direct = true;
	AttrNumber	att[7];

	cq_catalog_key_values(q, &name, &schema, &schema_null);
	if (v02 && schema_null == 'n')
		return false;
	if (!pk_open("offsets", v02, &off, AccessShareLock))
		return false;
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	snap = GetActiveSnapshot();

	/* the columns read, by number (colmap.c), copied before anything processes invalidations */
	{
		static const char *const names[] = {"batch_id", "end_offset", "state_rows", "batch_watermark",
		"watermark", "batch_watermark_ntz", "watermark_ntz"};
		static CqColMap map = CQ_COLMAP_INIT;

		memset(att, 0, sizeof(att));
		memcpy(att, cq_colmap_get(&map, off.rel, names, v02 ? 7 : 5),
			   sizeof(AttrNumber) * (v02 ? 7 : 5));
	}
	slot = table_slot_create(off.rel, NULL);
	if (last_offset_row(&off, snap, q->id, name, schema, slot))
	{
		int64		batch_id;
		TupleTableSlot *pslot;

		last->found = true;
		batch_id = DatumGetInt64(pk_col(slot, att[0], &isnull));
		last->batch_id = batch_id;
		offset_hint_set(q->id, batch_id);
		d = pk_col(slot, att[1], &isnull);
		last->end_offset = isnull ? NULL : cq_snapmemo_out(d);
		d = pk_col(slot, att[2], &isnull);
		last->state_rows = isnull ? 0 : DatumGetInt64(d);
		last->has_batch_watermark = pk_watermark(slot, att[3], att[5], &last->batch_watermark);
		last->has_watermark = pk_watermark(slot, att[4], att[6], &last->watermark);

		if (started_known(q->id, batch_id, last->end_offset, &last->last_started_at))
			;					/* this backend committed that batch */
		else if (pk_open("progress", v02, &prog, AccessShareLock))
		{
			pslot = table_slot_create(prog.rel, NULL);
			if (pk_first(&prog, snap, name, schema, &batch_id, ForwardScanDirection, pslot))
			{
				d = pk_col(pslot, cq_rel_attnum(prog.rel, "started_at"), &isnull);
				last->last_started_at = isnull ? 0 : DatumGetTimestampTz(d);
			}
			ExecDropSingleTupleTableSlot(pslot);
			pk_close(&prog);
		}
		else
			direct = false;
	}
	ExecDropSingleTupleTableSlot(slot);
	PopActiveSnapshot();
	pk_close(&off);
	if (!direct)
		memset(last, 0, sizeof(*last));	/* the statement reads it all again */
	return direct;
}

/*
 * cq_progress_last_offset
 *	  The last committed batch of a query (found = false before batch 0).
 *	  Its watermarks are those the engine compares (spi_watermark).  Read
 *	  directly (last_offset_direct), else by a statement.
 */
void
cq_progress_last_offset(CqQuery *q, CqLastOffset *last)
{
	Oid			types[2] = {TEXTOID, NAMEOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		v02;
	CqSecurity	sec;

	memset(last, 0, sizeof(*last));
	v02 = cq_catalog_version() >= CQ_CATALOG_0_2;
	if (last_offset_direct(q, last, v02))
		return;
	cq_catalog_key_values(q, &values[0], &values[1], &nulls[1]);
	/*
	 * The progress row is fetched by a subquery, a primary-key probe: as a
	 * join, the cached generic plan may scan the whole (bloated) table.
	 */
	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("SELECT o.batch_id, o.end_offset::pg_catalog.text, o.state_rows, "
				"(SELECT p.started_at FROM cq.progress p "
				"  WHERE %s AND p.batch_id OPERATOR(pg_catalog.=) o.batch_id), "
				"o.batch_watermark, o.watermark%s "
				"FROM cq.offsets o "
				"WHERE %s ORDER BY o.batch_id DESC LIMIT 1",
				cq_catalog_rows_of("p", 1, 2),
				v02 ? ", o.batch_watermark_ntz, o.watermark_ntz" : "",
				cq_catalog_rows_of("o", 1, 2)),
				SPI_OK_SELECT, 2, types, values, nulls);
	cq_security_restore(&sec);
	if (SPI_processed == 0)
		return;
	last->found = true;
	last->batch_id = spi_int64(1, 0);
	last->end_offset = spi_text(2);
	last->state_rows = spi_int64(3, 0);
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull);

		last->last_started_at = isnull ? 0 : DatumGetTimestampTz(d);
	}
	last->has_batch_watermark = spi_watermark(5, v02 ? 7 : 0, &last->batch_watermark);
	last->has_watermark = spi_watermark(6, v02 ? 8 : 0, &last->watermark);
}

/*
 * Direct writes of a batch's cq.offsets and cq.progress rows.
 *
 * As a statement, the record costs an executor start of four ModifyTable
 * nodes and two foreign-key checks (each a statement of its own) per
 * batch.  Written directly, it is two heap inserts, their primary key
 * entries and two index probes for the rows that fall out of the window.
 * The foreign keys to cq.queries need no check: every batch records its
 * rows with its query's row locked FOR NO KEY UPDATE (cq_catalog_get_query_
 * by_id, in the same transaction) and with that row's key, so the row
 * cannot go nor change its key before the batch commits, which is what the
 * check's FOR KEY SHARE lock would ensure.  The full sweep every
 * CQ_PROGRESS_KEEP batches is a direct range delete too (as a statement
 * it made one batch in a hundred pay the executor start and the checks).
 * The statement stays for tables that are not
 * as pg_cq made them: another access method or index, trigger (but the foreign keys' own),
 * rule, check constraint, a column not written here that has a default or
 * is NOT NULL, or a column of another type.
 */

/* A column of a direct insert: its name, type and value. */
typedef struct DirectCol
{
	const char *name;
	Oid			type;
	Datum		value;
	bool		isnull;
} DirectCol;

/* A table ready for a direct insert: opened, its row formed. */
typedef struct DirectRow
{
	PkScan		pk;
	HeapTuple	tup;
	Datum	   *values;
	bool	   *isnull;
} DirectRow;

/*
 * direct_prepare
 *	  Open cq.<relname> (RowExclusiveLock, as an INSERT) and form its row
 *	  of cols; false (nothing left open) unless the table is as the file
 *	  comment above says.
 */
static bool
direct_prepare(const char *relname, bool v02, DirectCol *cols, int ncols, DirectRow *row)
{
	Relation	rel;
	TupleDesc	desc;
	TriggerDesc *trig;
	List	   *indexes;
	bool		ok;
	int			found = 0;
	static CqColMap maps[2] = {CQ_COLMAP_INIT, CQ_COLMAP_INIT};
	const char *names[CQ_COLMAP_MAX];
	const AttrNumber *atts;
	int		   *colof;			/* attribute -> its entry in cols, or -1 */

	Assert(ncols <= CQ_COLMAP_MAX);
	if (!pk_open(relname, v02, &row->pk, RowExclusiveLock))
		return false;
	rel = row->pk.rel;
	desc = RelationGetDescr(rel);
	trig = rel->trigdesc;
	indexes = RelationGetIndexList(rel);
	ok = rel->rd_rel->relkind == RELKIND_RELATION && rel->rd_rel->relam == HEAP_TABLE_AM_OID &&
		!rel->rd_rel->relhasrules &&
		list_length(indexes) == 1 &&
		row->pk.idx->rd_index->indnatts == row->pk.idx->rd_index->indnkeyatts &&
		row->pk.idx->rd_index->indimmediate &&
		RelationGetIndexExpressions(row->pk.idx) == NIL &&
		RelationGetIndexPredicate(row->pk.idx) == NIL &&
		(desc->constr == NULL || desc->constr->num_check == 0);
	for (int i = 0; ok && trig != NULL && i < trig->numtriggers; i++)
	{
		Trigger    *t = &trig->triggers[i];

		/* only the foreign key to cq.queries the row lock stands for */
		ok = RI_FKey_trigger_type(t->tgfoid) == RI_TRIGGER_FK &&
			t->tgconstrrelid == cq_colmap_cq_relid("queries");
	}
	list_free(indexes);

	/* each column's number, one map per table (colmap.c) */
	for (int c = 0; c < ncols; c++)
		names[c] = cols[c].name;
	atts = cq_colmap_get(&maps[strcmp(relname, "offsets") == 0 ? 0 : 1], rel, names, ncols);
	colof = palloc(sizeof(int) * desc->natts);
	for (int a = 0; a < desc->natts; a++)
		colof[a] = -1;
	for (int c = 0; c < ncols; c++)
		if (atts[c] != InvalidAttrNumber && colof[atts[c] - 1] < 0)
			colof[atts[c] - 1] = c;
	row->values = palloc(sizeof(Datum) * desc->natts);
	row->isnull = palloc(sizeof(bool) * desc->natts);
	for (int a = 0; ok && a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		int			c = colof[a];

		row->values[a] = (Datum) 0;
		row->isnull[a] = true;
		if (att->attisdropped)
			continue;
		if (c < 0)
		{
			/* left out: as the statement leaves it, null */
			ok = !att->attnotnull && !att->atthasdef && att->attgenerated == '\0';
			continue;
		}
		ok = att->atttypid == cols[c].type && (!cols[c].isnull || !att->attnotnull);
		row->values[a] = cols[c].value;
		row->isnull[a] = cols[c].isnull;
		found++;
	}
	if (!ok || found != ncols)
	{
		pk_close(&row->pk);
		return false;
	}
	row->tup = heap_form_tuple(desc, row->values, row->isnull);
	return true;
}

/*
 * Where this backend inserted the cq.offsets and cq.progress rows of each
 * query's recent batches (their TIDs, with the table's relfilenode).
 *
 * Every batch deletes the rows of the batch CQ_PROGRESS_KEEP back: found by
 * a probe of the primary key, a descent with a collation-aware comparison
 * of the query's name at each level, ~5k instructions a table in the
 * steady state (bench/batch_cg.sh BCG_WARM, session 36).  When this backend
 * inserted that row, its TID is known: the row there is read with the
 * same snapshot and deleted when it is visible and has the query's key
 * (schema, name, batch_id).  That is the row the probe finds: the key is
 * unique among the rows a snapshot sees.  A TID is only a guess (the row
 * may be gone, its slot reused by another row after a vacuum, the batch
 * rolled back, the table rewritten or truncated): anything else than such
 * a row, and the probe runs as before.
 */
#define TID_RING 128			/* > CQ_PROGRESS_KEEP */

typedef struct RowTids
{
	int32		id;				/* the query's id (hash key) */
	int64		batch[TID_RING];	/* batch id of each slot, or -1 */
	Oid			relfilenode[2][TID_RING];	/* [0] cq.offsets, [1] cq.progress */
	ItemPointerData tid[2][TID_RING];
} RowTids;

static HTAB *row_tids = NULL;

/* Batch batch_id's row of table which (0 offsets, 1 progress) of query id is at tid in rel. */
static void
row_tid_remember(int32 id, int which, int64 batch_id, Relation rel, ItemPointer tid)
{
	RowTids    *e;
	bool		found;
	int			k;

	if (batch_id < 0)
		return;
	if (row_tids == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(RowTids);
		row_tids = hash_create("pg_cq progress row tids", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(row_tids, &id, HASH_ENTER, &found);
	if (!found)
		for (k = 0; k < TID_RING; k++)
			e->batch[k] = -1;
	k = (int) (batch_id % TID_RING);
	if (e->batch[k] != batch_id)
	{
		e->batch[k] = batch_id;
		e->relfilenode[0][k] = e->relfilenode[1][k] = InvalidOid;
	}
	e->relfilenode[which][k] = rel->rd_node.relNode;
	e->tid[which][k] = *tid;
}

/*
 * row_tid_fetch
 *	  Into slot, the row of batch_id of query id (keys name, schema) in the
 *	  table of pk (which: 0 offsets, 1 progress) at the TID this backend
 *	  inserted it at, when it is still there, visible to snap and has that
 *	  key; false otherwise.
 */
static bool
row_tid_fetch(PkScan *pk, int which, Snapshot snap, int32 id, Datum name, Datum schema,
			  int64 batch_id, TupleTableSlot *slot)
{
	RowTids    *e = row_tids && batch_id >= 0 ? hash_search(row_tids, &id, HASH_FIND, NULL) : NULL;
	int			k = (int) (batch_id % TID_RING);
	ItemPointerData tid;
	int			first = pk->nkeys == 2 ? 0 : 1;
	bool		isnull;
	Datum		d;

	if (e == NULL || e->batch[k] != batch_id ||
		e->relfilenode[which][k] != pk->rel->rd_node.relNode)
		return false;
	tid = e->tid[which][k];
	/* a vacuum may have truncated the table since */
	if (ItemPointerGetBlockNumber(&tid) >= RelationGetNumberOfBlocks(pk->rel) ||
		!table_tuple_fetch_row_version(pk->rel, &tid, snap, slot))
		return false;
	/* the key, compared as the primary key's equality does (deterministic collations) */
	for (int i = first; i < 3; i++)
	{
		AttrNumber	att = pk->idx->rd_index->indkey.values[i - first];

		d = slot_getattr(slot, att, &isnull);
		if (isnull)
			return false;
		if (i == 0 && strncmp(NameStr(*DatumGetName(d)), NameStr(*DatumGetName(schema)),
							  NAMEDATALEN) != 0)
			return false;
		if (i == 1 && !DatumGetBool(DirectFunctionCall2Coll(texteq, pk->idx->rd_indcollation[1 - first],
															  d, name)))
			return false;
		if (i == 2 && DatumGetInt64(d) != batch_id)
			return false;
	}
	return true;
}

/*
 * direct_trim
 *	  Delete the query's row of batch_id from the table of pk (which: 0
 *	  offsets, 1 progress), if any, as the statement's DELETE would with
 *	  snapshot snap: found at the TID this backend inserted it at, else by
 *	  a probe of the primary key.  A row another transaction changed
 *	  meanwhile is left to the next full sweep.
 */
static void
direct_trim(PkScan *pk, int which, Snapshot snap, int32 id, Datum name, Datum schema,
			int64 batch_id)
{
	TupleTableSlot *slot = table_slot_create(pk->rel, NULL);

	if (row_tid_fetch(pk, which, snap, id, name, schema, batch_id, slot) ||
		pk_first(pk, snap, name, schema, &batch_id, ForwardScanDirection, slot))
	{
		TM_FailureData tmfd;

		(void) table_tuple_delete(pk->rel, &slot->tts_tid, GetCurrentCommandId(true), snap,
								  InvalidSnapshot, true, &tmfd, false);
	}
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * direct_sweep
 *	  Delete every row of the query up to batch_id upto from the table of
 *	  pk, as the statement's range DELETE would with snapshot snap (the
 *	  full sweep every CQ_PROGRESS_KEEP batches).  A row another
 *	  transaction changed meanwhile is left to the next sweep.
 */
static void
direct_sweep(PkScan *pk, Snapshot snap, Datum name, Datum schema, int64 upto)
{
	IndexScanDesc scan = pk_scan(pk, snap, name, schema, BTLessEqualStrategyNumber, upto);
	TupleTableSlot *slot = table_slot_create(pk->rel, NULL);

	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		TM_FailureData tmfd;

		(void) table_tuple_delete(pk->rel, &slot->tts_tid, GetCurrentCommandId(true), snap,
								  InvalidSnapshot, true, &tmfd, false);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * direct_insert
 *	  Insert row's tuple into its table and its primary key (a duplicate
 *	  key is the same error as the statement's), remember where (the row of
 *	  batch_id of query id in table which: see RowTids), then close the
 *	  table.
 */
static void
direct_insert(DirectRow *row, int32 id, int which, int64 batch_id)
{
	Relation	rel = row->pk.rel;
	Relation	idx = row->pk.idx;
	Datum		ivalues[INDEX_MAX_KEYS];
	bool		iisnull[INDEX_MAX_KEYS];

	heap_insert(rel, row->tup, GetCurrentCommandId(true), 0, NULL);
	for (int i = 0; i < idx->rd_index->indnkeyatts; i++)
	{
		AttrNumber	att = idx->rd_index->indkey.values[i];

		ivalues[i] = row->values[att - 1];
		iisnull[i] = row->isnull[att - 1];
	}
	index_insert(idx, ivalues, iisnull, &row->tup->t_self, rel, UNIQUE_CHECK_YES, false,
				 BuildIndexInfo(idx));
	row_tid_remember(id, which, batch_id, rel, &row->tup->t_self);
	pk_close(&row->pk);
}

/*
 * record_direct
 *	  cq_progress_record_batch's rows written directly (see above): v are
 *	  the statement's parameters ($n = v[n - 1]).  False, having written
 *	  nothing, when the statement must do it.
 */
static bool
record_direct(CqQuery *q, CqBatchResult *r, bool v02, Datum *v, char *n)
{
	DirectRow	off;
	DirectRow	prog;
	Datum		start = cq_snapmemo_in(r->start_offset);
	Datum		end = cq_snapmemo_in(r->end_offset);
	int			first = v02 ? 0 : 1;
	Snapshot	snap;

#define DCOL(name, type, i) {name, type, v[i], n[i] == 'n'}
	DirectCol	ocols[] = {
		{"schema", NAMEOID, v[24], n[24] == 'n'},
		DCOL("name", TEXTOID, 0), DCOL("batch_id", INT8OID, 1),
		{"start_offset", PG_SNAPSHOTOID, start, false}, {"end_offset", PG_SNAPSHOTOID, end, false},
		DCOL("state_rows", INT8OID, 4), DCOL("batch_watermark", TIMESTAMPTZOID, 17),
		DCOL("watermark", TIMESTAMPTZOID, 18), DCOL("committed_at", TIMESTAMPTZOID, 22),
		DCOL("batch_watermark_ntz", TIMESTAMPOID, 25), DCOL("watermark_ntz", TIMESTAMPOID, 26)
	};
	DirectCol	pcols[] = {
		{"schema", NAMEOID, v[24], n[24] == 'n'},
		DCOL("name", TEXTOID, 0), DCOL("batch_id", INT8OID, 1),
		{"run_id", UUIDOID, DirectFunctionCall1(uuid_in, CStringGetDatum(q->run_id)), false},
		DCOL("started_at", TIMESTAMPTZOID, 6), DCOL("duration_ms", FLOAT8OID, 7),
		DCOL("durations", JSONBOID, 8),
		DCOL("num_input_rows", INT8OID, 9), DCOL("input_rows_per_second", FLOAT8OID, 10),
		DCOL("processed_rows_per_second", FLOAT8OID, 11), DCOL("num_state_rows_total", INT8OID, 4),
		DCOL("num_state_rows_updated", INT8OID, 12), DCOL("num_state_rows_removed", INT8OID, 13),
		DCOL("num_rows_dropped_by_watermark", INT8OID, 14), DCOL("num_output_rows", INT8OID, 15),
		{"start_offset", PG_SNAPSHOTOID, start, false}, {"end_offset", PG_SNAPSHOTOID, end, false},
		DCOL("watermark", TIMESTAMPTZOID, 17), DCOL("event_time_min", TIMESTAMPTZOID, 19),
		DCOL("event_time_max", TIMESTAMPTZOID, 20), DCOL("event_time_avg", TIMESTAMPTZOID, 21),
		DCOL("state_bytes", INT8OID, 27)
	};
#undef DCOL

	/* a 0.2 catalog without the query's schema: the statement */
	if (v02 && n[24] == 'n')
		return false;
	/* a 0.1 catalog has no schema, *_ntz nor state_bytes columns */
	if (!direct_prepare("offsets", v02, ocols + first, lengthof(ocols) - (v02 ? 0 : 3), &off))
		return false;
	if (!direct_prepare("progress", v02, pcols + first, lengthof(pcols) - (v02 ? 0 : 2), &prog))
	{
		pk_close(&off.pk);
		return false;
	}

	/* the rows that fall out of the window, read as the statement would */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	snap = GetActiveSnapshot();
	if (r->batch_id % CQ_PROGRESS_KEEP == 0)
	{
		direct_sweep(&off.pk, snap, v[0], v[24], r->batch_id - CQ_PROGRESS_KEEP);
		direct_sweep(&prog.pk, snap, v[0], v[24], r->batch_id - CQ_PROGRESS_KEEP);
	}
	else
	{
		direct_trim(&off.pk, 0, snap, q->id, v[0], v[24], r->batch_id - CQ_PROGRESS_KEEP);
		direct_trim(&prog.pk, 1, snap, q->id, v[0], v[24], r->batch_id - CQ_PROGRESS_KEEP);
	}
	PopActiveSnapshot();

	direct_insert(&off, q->id, 0, r->batch_id);
	direct_insert(&prog, q->id, 1, r->batch_id);
	CommandCounterIncrement();
	return true;
}

/*
 * push_ms
 *	  Into the object st builds, key: ms as a number of three decimals, the
 *	  value the text "%.3f" gives: from whole microseconds (a decimal of
 *	  scale 3 made directly: formatting and parsing a float took ~18k
 *	  instructions a batch), or through the text when out of their range.
 */
static void
push_ms(JsonbParseState **st, const char *key, double ms)
{
	JsonbValue	k;
	JsonbValue	v;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	(void) pushJsonbValue(st, WJB_KEY, &k);
	v.type = jbvNumeric;
	if (fabs(ms) < 1e12)
		v.val.numeric = int64_div_fast_to_numeric((int64) llround(ms * 1000.0), 3);
	else
		v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
															CStringGetDatum(psprintf("%.3f", ms)),
															ObjectIdGetDatum(InvalidOid),
															Int32GetDatum(-1)));
	(void) pushJsonbValue(st, WJB_VALUE, &v);
}

/*
 * durations_jsonb
 *	  cq.progress.durations of batch r: latestOffset, addBatch,
 *	  triggerExecution and, after a state rebuild, stateRebuild (ms).
 */
static Datum
durations_jsonb(const CqBatchResult *r)
{
	JsonbParseState *st = NULL;
	JsonbValue *obj;

	(void) pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	push_ms(&st, "latestOffset", r->latest_offset_ms);
	push_ms(&st, "addBatch", r->add_batch_ms);
	push_ms(&st, "triggerExecution", r->duration_ms);
	if (r->rebuild_ms >= 0)
		push_ms(&st, "stateRebuild", r->rebuild_ms);
	obj = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(obj));
}

/*
 * cq_progress_record_batch
 *	  Record a committed batch: its offset row and progress row, keeping the
 *	  last CQ_PROGRESS_KEEP of each.  Runs in the batch's transaction, so
 *	  the offset commits with the target writes or not at all, with the
 *	  query's row locked.  Written directly (record_direct), else by a
 *	  statement.
 */
void
cq_progress_record_batch(CqQuery *q, CqBatchResult *r)
{
#define NREC 28
	Oid			types[NREC] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, INT8OID,
		TEXTOID, TIMESTAMPTZOID, FLOAT8OID, JSONBOID, INT8OID, FLOAT8OID, FLOAT8OID,
		INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, NAMEOID,
	TIMESTAMPOID, TIMESTAMPOID, INT8OID};
	Datum		values[NREC];
	char		nulls[NREC];
	bool		v02 = cq_catalog_version() >= CQ_CATALOG_0_2;
	bool		ntz = v02 && r->et_utc;
	int			i;
	CqSecurity	sec;

	memset(nulls, ' ', sizeof(nulls));
	cq_catalog_key_values(q, &values[0], &values[24], &nulls[24]);
	values[1] = Int64GetDatum(r->batch_id);
	values[2] = CStringGetTextDatum(r->start_offset);
	values[3] = CStringGetTextDatum(r->end_offset);
	values[4] = Int64GetDatum(r->state_total);
	values[5] = CStringGetTextDatum(q->run_id);
	values[6] = TimestampTzGetDatum(r->started_at);
	values[7] = Float8GetDatum(r->duration_ms);
	values[8] = durations_jsonb(r);
	values[9] = Int64GetDatum(r->input_rows);
	values[10] = Float8GetDatum(r->input_rows_per_second);
	if (r->input_rows_per_second < 0)
		nulls[10] = 'n';
	values[11] = Float8GetDatum(r->processed_rows_per_second);
	values[12] = Int64GetDatum(r->state_updated);
	values[13] = Int64GetDatum(r->state_removed);
	values[14] = Int64GetDatum(r->dropped_by_watermark);
	values[15] = Int64GetDatum(r->output_rows);
	values[16] = Int64GetDatum(r->batch_id - CQ_PROGRESS_KEEP);
	values[17] = TimestampTzGetDatum(r->watermark);
	nulls[17] = r->has_watermark ? ' ' : 'n';
	values[18] = TimestampTzGetDatum(r->next_watermark);
	nulls[18] = r->has_next_watermark ? ' ' : 'n';
	values[19] = TimestampTzGetDatum(r->et_min);
	values[20] = TimestampTzGetDatum(r->et_max);
	values[21] = TimestampTzGetDatum(r->et_avg);
	nulls[19] = nulls[20] = nulls[21] = r->has_event_time ? ' ' : 'n';
	values[22] = GetCurrentTimestamp();
	values[27] = Int64GetDatum(r->state_bytes);
	nulls[27] = r->has_state_bytes ? ' ' : 'n';

	/*
	 * A timestamp (without time zone) event-time column: batches compute
	 * its values at UTC.  Since 0.2 cq.offsets keeps the watermarks as such
	 * values (exact: the next batch reads them back), and what both tables
	 * show are the column's values read in the query's time zone.  With a
	 * 0.1 catalog, everything stays at UTC.
	 */
	values[25] = TimestampGetDatum((Timestamp) r->watermark);
	nulls[25] = ntz ? nulls[17] : 'n';
	values[26] = TimestampGetDatum((Timestamp) r->next_watermark);
	nulls[26] = ntz ? nulls[18] : 'n';
	if (ntz)
	{
		for (i = 17; i <= 21; i++)
			values[i] = TimestampTzGetDatum(naive_in_zone(DatumGetTimestampTz(values[i]), q->timezone));
	}

	/*
	 * Batch ids are consecutive, so one row of each table falls out of the
	 * window per batch: delete exactly that one (an index probe; a range
	 * delete would walk every dead index entry left since the last vacuum).
	 * Every CQ_PROGRESS_KEEP batches the range is swept in full, in case
	 * anything older was left behind.
	 */
	values[23] = Int64GetDatum(r->batch_id % CQ_PROGRESS_KEEP == 0 ? PG_INT64_MIN :
							   r->batch_id - CQ_PROGRESS_KEEP);
	started_remember(q->id, r->batch_id, r->started_at, r->end_offset);
	if (record_direct(q, r, v02, values, nulls))
		return;

	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("WITH o AS (INSERT INTO cq.offsets (name, batch_id, start_offset, end_offset, state_rows, "
				"  batch_watermark, watermark, committed_at%1$s%5$s) "
				"  VALUES ($1, $2, $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $5, $18, $19, $23%2$s%6$s)), "
				"p AS (INSERT INTO cq.progress (name, batch_id, run_id, started_at, duration_ms, durations, "
				"  num_input_rows, input_rows_per_second, processed_rows_per_second, num_state_rows_total, "
				"  num_state_rows_updated, num_state_rows_removed, num_rows_dropped_by_watermark, "
				"  num_output_rows, start_offset, end_offset, watermark, event_time_min, event_time_max, "
				"  event_time_avg%1$s%7$s) "
				"  VALUES ($1, $2, $6::pg_catalog.uuid, $7, $8, $9, $10, $11, $12, $5, $13, $14, $15, $16, "
				"  $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $18, $20, $21, $22%2$s%8$s)), "
				"x AS (DELETE FROM cq.offsets WHERE %3$s "
				"  AND batch_id OPERATOR(pg_catalog.<=) $17 AND batch_id OPERATOR(pg_catalog.>=) $24), "
				"y AS (DELETE FROM cq.progress WHERE %4$s "
				"  AND batch_id OPERATOR(pg_catalog.<=) $17 AND batch_id OPERATOR(pg_catalog.>=) $24) "
				"SELECT 1", v02 ? ", schema" : "", v02 ? ", $25" : "",
				cq_catalog_rows_of("offsets", 1, 25), cq_catalog_rows_of("progress", 1, 25),
				v02 ? ", batch_watermark_ntz, watermark_ntz" : "", v02 ? ", $26, $27" : "",
				v02 ? ", state_bytes" : "", v02 ? ", $28" : ""),
					   SPI_OK_SELECT, NREC, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_progress_set_state_rows
 *	  Correct the state row count of the last batch after a rebuild.
 */
void
cq_progress_set_state_rows(CqQuery *q, int64 batch_id, int64 rows)
{
	Oid			types[4] = {TEXTOID, INT8OID, INT8OID, NAMEOID};
	Datum		values[4] = {0, Int64GetDatum(batch_id), Int64GetDatum(rows), 0};
	char		nulls[4] = {' ', ' ', ' ', ' '};
	CqSecurity	sec;

	cq_catalog_key_values(q, &values[0], &values[3], &nulls[3]);
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("UPDATE cq.offsets SET state_rows = $3 WHERE %s AND batch_id OPERATOR(pg_catalog.=) $2",
						 cq_catalog_rows_of("offsets", 1, 4)),
				SPI_OK_UPDATE, 4, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_progress_last_watermark
 *	  The watermark recorded with a query's last batch, as cq.offsets shows
 *	  it (for cq.status; for a timestamp event-time column, not what
 *	  batches compare: see cq_progress_last_offset); false if none.
 */
bool
cq_progress_last_watermark(CqQuery *q, TimestampTz *watermark)
{
	Oid			types[2] = {TEXTOID, NAMEOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	bool		isnull = true;
	Datum		d;
	CqSecurity	sec;

	cq_catalog_key_values(q, &values[0], &values[1], &nulls[1]);
	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("SELECT watermark FROM cq.offsets WHERE %s ORDER BY batch_id DESC LIMIT 1",
								cq_catalog_rows_of("offsets", 1, 2)),
					   SPI_OK_SELECT, 2, types, values, nulls);
	cq_security_restore(&sec);
	if (SPI_processed == 0)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return false;
	*watermark = DatumGetTimestampTz(d);
	return true;
}

/*
 * relation_bytes
 *	  Bytes of the main fork of an open relation (pg_relation_size's
 *	  answer): its block count, an lseek of its open file.
 */
static int64
relation_bytes(Relation rel)
{
	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
		return 0;
	return (int64) RelationGetNumberOfBlocks(rel) * BLCKSZ;
}

/*
 * cq_progress_table_bytes
 *	  Bytes a state table takes, for cq.progress.state_bytes: the main
 *	  forks of the table, of its indexes and of its TOAST table and index,
 *	  which is pg_total_relation_size less the free space and visibility
 *	  maps (whose existence would cost a file open each to check).  Cheap
 *	  enough for every batch: a block count per relation, under
 *	  AccessShareLock (the batch holds a stronger lock on the table
 *	  already).  0 when there is no such relation.
 */
int64
cq_progress_table_bytes(Oid relid)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	int64		bytes;
	Oid			toast;

	if (!OidIsValid(relid))
		return 0;
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return 0;
	bytes = relation_bytes(rel);
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

		bytes += relation_bytes(idx);
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);
	toast = rel->rd_rel->reltoastrelid;
	relation_close(rel, AccessShareLock);
	if (OidIsValid(toast))
		bytes += cq_progress_table_bytes(toast);
	return bytes;
}

/* ---- per-node offsets (Citus distributed sources, cq.node_offsets) ---- */

/*
 * cq_progress_node_offset
 *	  The per-node offset of query_id recorded for batch_id (-1: where
 *	  batch 0 starts), or NULL.  Caller has SPI connected.
 */
char *
cq_progress_node_offset(int32 query_id, int64 batch_id)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		values[2] = {Int32GetDatum(query_id), Int64GetDatum(batch_id)};
	CqSecurity	sec;
	char	   *result = NULL;
	MemoryContext cxt = CurrentMemoryContext;

	cq_security_superuser(&sec);
	cq_spi_exec("SELECT end_offset FROM cq.node_offsets WHERE query_id OPERATOR(pg_catalog.=) $1 "
				"AND batch_id OPERATOR(pg_catalog.=) $2",
				SPI_OK_SELECT, 2, types, values, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		result = MemoryContextStrdup(cxt, v);
	}
	return result;
}

/*
 * cq_progress_record_node_offset
 *	  Record the per-node end offset of batch_id of query_id, and forget
 *	  those of earlier batches (the start, -1, stays: rebuilds read it).
 *	  Caller has SPI connected.
 */
void
cq_progress_record_node_offset(int32 query_id, int64 batch_id, const char *offset)
{
	Oid			types[3] = {INT4OID, INT8OID, TEXTOID};
	Datum		values[3] = {Int32GetDatum(query_id), Int64GetDatum(batch_id), CStringGetTextDatum(offset)};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec("WITH d AS (DELETE FROM cq.node_offsets WHERE query_id OPERATOR(pg_catalog.=) $1 "
				"  AND batch_id OPERATOR(pg_catalog.>=) 0 AND batch_id OPERATOR(pg_catalog.<) $2) "
				"INSERT INTO cq.node_offsets (query_id, batch_id, end_offset) VALUES ($1, $2, $3)",
				SPI_OK_INSERT, 3, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * cq_progress_reset_node_offsets
 *	  Forget every per-node offset of query_id; with start, record it as
 *	  where batch 0 starts (-1).  Caller has SPI connected.
 */
void
cq_progress_reset_node_offsets(int32 query_id, const char *start)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(query_id), start ? CStringGetTextDatum(start) : (Datum) 0};
	char		nulls[2] = {' ', start ? ' ' : 'n'};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec("DELETE FROM cq.node_offsets WHERE query_id OPERATOR(pg_catalog.=) $1",
				SPI_OK_DELETE, 1, types, values, nulls);
	if (start)
		cq_spi_exec("INSERT INTO cq.node_offsets (query_id, batch_id, end_offset) VALUES ($1, -1, $2)",
					SPI_OK_INSERT, 2, types, values, nulls);
	cq_security_restore(&sec);
}
