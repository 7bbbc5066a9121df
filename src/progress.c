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

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "progress.h"
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
 *	  Open cq.<relname> and its primary key, AccessShareLock held to the
 *	  end of the transaction (as a statement would); false (nothing left
 *	  open) unless the key is (schema, name, batch_id) on a 0.2 catalog or
 *	  (name, batch_id) on a 0.1 catalog.
 */
static bool
pk_open(const char *relname, bool v02, PkScan *pk)
{
	Oid			nsp = get_namespace_oid("cq", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid(relname, nsp) : InvalidOid;
	Oid			idxid;
	const char *cols[3] = {"schema", "name", "batch_id"};
	int			first = v02 ? 0 : 1;
	bool		ok;

	if (!OidIsValid(relid))
		return false;
	pk->rel = table_open(relid, AccessShareLock);
	idxid = RelationGetPrimaryKeyIndex(pk->rel);
	if (!OidIsValid(idxid))
	{
		table_close(pk->rel, NoLock);
		return false;
	}
	pk->idx = index_open(idxid, AccessShareLock);
	pk->nkeys = 2 - first;
	ok = pk->idx->rd_index->indnkeyatts == 3 - first;
	for (int i = first; i < 3 && ok; i++)
		ok = pk->idx->rd_index->indkey.values[i - first] == get_attnum(relid, cols[i]);
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
 * pk_first
 *	  Into slot, the first row in direction dir of the query's rows
 *	  (name, and schema on a 0.2 catalog), and with batch_id = *batch_id
 *	  unless batch_id is NULL; false if none.
 */
static bool
pk_first(PkScan *pk, Snapshot snap, Datum name, Datum schema, const int64 *batch_id,
		 ScanDirection dir, TupleTableSlot *slot)
{
	ScanKeyData key[3];
	int			n = 0;
	IndexScanDesc scan;
	bool		found;

	if (pk->nkeys == 2)
	{
		ScanKeyEntryInitialize(&key[n], 0, n + 1, BTEqualStrategyNumber, InvalidOid,
							   pk->idx->rd_indcollation[n], F_NAMEEQ, schema);
		n++;
	}
	ScanKeyEntryInitialize(&key[n], 0, n + 1, BTEqualStrategyNumber, InvalidOid,
						   pk->idx->rd_indcollation[n], F_TEXTEQ, name);
	n++;
	if (batch_id)
	{
		ScanKeyEntryInitialize(&key[n], 0, n + 1, BTEqualStrategyNumber, InvalidOid,
							   pk->idx->rd_indcollation[n], F_INT8EQ, Int64GetDatum(*batch_id));
		n++;
	}
	scan = index_beginscan(pk->rel, pk->idx, snap, n, 0);
	index_rescan(scan, key, n, NULL, 0);
	found = index_getnext_slot(scan, dir, slot);
	index_endscan(scan);
	return found;
}

/* Column `col` of the slot's row (a row of pk's table); NULL if no such column. */
static Datum
pk_col(PkScan *pk, TupleTableSlot *slot, const char *col, bool *isnull)
{
	AttrNumber	att = get_attnum(RelationGetRelid(pk->rel), col);

	if (att == InvalidAttrNumber)
	{
		*isnull = true;
		return (Datum) 0;
	}
	return slot_getattr(slot, att, isnull);
}

/*
 * pk_watermark
 *	  spi_watermark for a row read directly: column ntz_col (NULL = none,
 *	  a 0.1 catalog) when not null, else column col.
 */
static bool
pk_watermark(PkScan *pk, TupleTableSlot *slot, const char *col, const char *ntz_col,
			 TimestampTz *wm)
{
	bool		isnull = true;
	Datum		d = (Datum) 0;

	if (ntz_col)
		d = pk_col(pk, slot, ntz_col, &isnull);
	if (!isnull)
	{
		*wm = (TimestampTz) DatumGetTimestamp(d);
		return true;
	}
	d = pk_col(pk, slot, col, &isnull);
	*wm = isnull ? 0 : DatumGetTimestampTz(d);
	return !isnull;
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

	cq_catalog_key_values(q, &name, &schema, &schema_null);
	if (v02 && schema_null == 'n')
		return false;
	if (!pk_open("offsets", v02, &off))
		return false;
	if (!pk_open("progress", v02, &prog))
	{
		pk_close(&off);
		return false;
	}
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	snap = GetActiveSnapshot();

	slot = table_slot_create(off.rel, NULL);
	if (pk_first(&off, snap, name, schema, NULL, BackwardScanDirection, slot))
	{
		int64		batch_id;
		TupleTableSlot *pslot;

		last->found = true;
		batch_id = DatumGetInt64(pk_col(&off, slot, "batch_id", &isnull));
		last->batch_id = batch_id;
		d = pk_col(&off, slot, "end_offset", &isnull);
		last->end_offset = isnull ? NULL : DatumGetCString(DirectFunctionCall1(pg_snapshot_out, d));
		d = pk_col(&off, slot, "state_rows", &isnull);
		last->state_rows = isnull ? 0 : DatumGetInt64(d);
		last->has_batch_watermark = pk_watermark(&off, slot, "batch_watermark",
												 v02 ? "batch_watermark_ntz" : NULL,
												 &last->batch_watermark);
		last->has_watermark = pk_watermark(&off, slot, "watermark", v02 ? "watermark_ntz" : NULL,
										   &last->watermark);

		pslot = table_slot_create(prog.rel, NULL);
		if (pk_first(&prog, snap, name, schema, &batch_id, ForwardScanDirection, pslot))
		{
			d = pk_col(&prog, pslot, "started_at", &isnull);
			last->last_started_at = isnull ? 0 : DatumGetTimestampTz(d);
		}
		ExecDropSingleTupleTableSlot(pslot);
	}
	ExecDropSingleTupleTableSlot(slot);
	PopActiveSnapshot();
	pk_close(&prog);
	pk_close(&off);
	return true;
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
 * cq_progress_record_batch
 *	  Record a committed batch: its offset row and progress row, keeping the
 *	  last CQ_PROGRESS_KEEP of each.  Runs in the batch's transaction, so
 *	  the offset commits with the target writes or not at all.
 */
void
cq_progress_record_batch(CqQuery *q, CqBatchResult *r)
{
#define NREC 27
	Oid			types[NREC] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, INT8OID,
		TEXTOID, TIMESTAMPTZOID, FLOAT8OID, TEXTOID, INT8OID, FLOAT8OID, FLOAT8OID,
		INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, NAMEOID,
	TIMESTAMPOID, TIMESTAMPOID};
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
	values[8] = CStringGetTextDatum(psprintf("{\"latestOffset\": %.3f, \"addBatch\": %.3f, \"triggerExecution\": %.3f%s}",
											 r->latest_offset_ms, r->add_batch_ms, r->duration_ms,
											 r->rebuild_ms >= 0 ? psprintf(", \"stateRebuild\": %.3f", r->rebuild_ms) : ""));
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

	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("WITH o AS (INSERT INTO cq.offsets (name, batch_id, start_offset, end_offset, state_rows, "
				"  batch_watermark, watermark, committed_at%1$s%5$s) "
				"  VALUES ($1, $2, $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $5, $18, $19, $23%2$s%6$s)), "
				"p AS (INSERT INTO cq.progress (name, batch_id, run_id, started_at, duration_ms, durations, "
				"  num_input_rows, input_rows_per_second, processed_rows_per_second, num_state_rows_total, "
				"  num_state_rows_updated, num_state_rows_removed, num_rows_dropped_by_watermark, "
				"  num_output_rows, start_offset, end_offset, watermark, event_time_min, event_time_max, "
				"  event_time_avg%1$s) "
				"  VALUES ($1, $2, $6::pg_catalog.uuid, $7, $8, $9::pg_catalog.jsonb, $10, $11, $12, $5, $13, $14, $15, $16, "
				"  $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $18, $20, $21, $22%2$s)), "
				"x AS (DELETE FROM cq.offsets WHERE %3$s "
				"  AND batch_id OPERATOR(pg_catalog.<=) $17 AND batch_id OPERATOR(pg_catalog.>=) $24), "
				"y AS (DELETE FROM cq.progress WHERE %4$s "
				"  AND batch_id OPERATOR(pg_catalog.<=) $17 AND batch_id OPERATOR(pg_catalog.>=) $24) "
				"SELECT 1", v02 ? ", schema" : "", v02 ? ", $25" : "",
				cq_catalog_rows_of("offsets", 1, 25), cq_catalog_rows_of("progress", 1, 25),
				v02 ? ", batch_watermark_ntz, watermark_ntz" : "", v02 ? ", $26, $27" : ""),
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
