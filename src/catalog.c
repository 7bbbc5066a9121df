/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  All reads and writes of the cq.* catalog tables.
 *
 * Callers have SPI connected and are inside a transaction.  Writes run as
 * the bootstrap superuser (users get SELECT only on the catalog, so offsets
 * cannot be forged); reads run as whoever calls.  Results are allocated in
 * the caller's memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_cq.h"
#include "shmem.h"

#define QUERY_COLUMNS \
	"name, id, owner::oid, source::oid, target::oid, output_mode, \"trigger\", event_time, " \
	"watermark_delay::text, max_rows_per_trigger, starting, state_storage, complete_refresh, " \
	"state, query_tree, state_table::oid, start_offset::text, run_id::text, cluster_id, timezone"

/* Text value of column `col` of the first SPI row, copied; NULL if null. */
static char *
spi_text(int col)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	return v;
}

static int64
spi_int64(int col, int64 ifnull)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	if (isnull)
		return ifnull;
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case OIDOID:
			return DatumGetObjectId(d);
		default:
			return DatumGetInt64(d);
	}
}

/*
 * cq_catalog_version
 *	  Version of the pg_cq catalog installed in the current database, as
 *	  CQ_CATALOG_0_1, CQ_CATALOG_0_2, ...; 0 when pg_cq is not installed.
 *	  The library serves every database of the cluster, each with the
 *	  catalog of the version it installed or last updated to (ALTER
 *	  EXTENSION pg_cq UPDATE): code that reads or writes something a later
 *	  version added must ask first.
 */
int
cq_catalog_version(void)
{
	Oid			ext = get_extension_oid("pg_cq", true);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	int			version = 0;

	if (!OidIsValid(ext))
		return 0;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
		{
			char	   *v = TextDatumGetCString(d);

			/* "0.N" -> N; later majors would need their own numbering */
			if (strncmp(v, "0.", 2) == 0)
				version = atoi(v + 2);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * cq_catalog_get_query
 *	  Load a query by name.  With lock, its row is locked FOR NO KEY UPDATE
 *	  until the end of the transaction: that is what serializes batches of
 *	  one query (worker or cq.run alike).
 */
CqQuery *
cq_catalog_get_query(const char *name, bool missing_ok, bool lock)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	CqQuery    *q;
	Oid			save_uid;
	int			save_sec;
	char	   *wm;

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("continuous query name must not be null")));

	values[0] = CStringGetTextDatum(name);
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec_cached(lock ? "SELECT " QUERY_COLUMNS " FROM cq.queries WHERE name = $1 FOR NO KEY UPDATE"
					   : "SELECT " QUERY_COLUMNS " FROM cq.queries WHERE name = $1",
					   SPI_OK_SELECT, 1, types, values, NULL);
	cq_restore_user(save_uid, save_sec);

	if (SPI_processed == 0)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous query \"%s\" does not exist", name)));
	}

	q = palloc0(sizeof(CqQuery));
	q->name = spi_text(1);
	q->id = (int32) spi_int64(2, 0);
	q->owner = (Oid) spi_int64(3, 0);
	q->source = (Oid) spi_int64(4, 0);
	q->target = (Oid) spi_int64(5, 0);
	cq_options_init(&q->opts);
	q->opts.output_mode = spi_text(6);
	q->opts.trigger = spi_text(7);
	q->opts.event_time = spi_text(8);
	wm = spi_text(9);
	q->opts.watermark = wm;
	q->opts.max_rows_per_trigger = spi_int64(10, 0);
	q->opts.starting = spi_text(11);
	q->opts.state_storage = spi_text(12);
	q->opts.complete_refresh = spi_text(13);
	q->state = spi_text(14);
	q->query_tree = spi_text(15);
	q->state_table = (Oid) spi_int64(16, 0);
	q->start_offset = spi_text(17);
	q->run_id = spi_text(18);
	q->cluster_id = spi_text(19);
	q->timezone = spi_text(20);
	cq_options_finish(&q->opts);
	return q;
}

/*
 * cq_catalog_cluster_id
 *	  The identifier of the installation a query's offsets (transaction
 *	  ids) belong to, as text.  Catalog 0.2: the id in cq.installation, made
 *	  by CREATE EXTENSION and carried over with the database's files by
 *	  pg_upgrade, but not by pg_dump (a restored database gets a new one,
 *	  and its queries start over: restore.c).  Catalog 0.1: the system
 *	  identifier, which pg_upgrade changes too.  Cached per backend for the
 *	  extension's OID (DROP and CREATE EXTENSION make a new one).  Caller
 *	  has SPI connected.
 */
char *
cq_catalog_cluster_id(void)
{
	static Oid	cached_ext = InvalidOid;
	static char *cached_id = NULL;
	Oid			ext = get_extension_oid("pg_cq", true);
	Oid			save_uid;
	int			save_sec;
	char	   *id = NULL;

	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return psprintf(UINT64_FORMAT, GetSystemIdentifier());
	if (cached_id != NULL && ext == cached_ext)
		return pstrdup(cached_id);

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("SELECT id::pg_catalog.text FROM cq.installation", SPI_OK_SELECT, 0, NULL, NULL, NULL);
	cq_restore_user(save_uid, save_sec);
	if (SPI_processed > 0)
		id = spi_text(1);
	if (id == NULL)
		return psprintf(UINT64_FORMAT, GetSystemIdentifier());	/* row deleted by hand */
	if (cached_id)
		pfree(cached_id);
	cached_id = MemoryContextStrdup(TopMemoryContext, id);
	cached_ext = ext;
	return id;
}

/*
 * cq_catalog_name_for_relation
 *	  Name of the query whose target (as_target) or state table is relid,
 *	  or NULL.
 */
char *
cq_catalog_name_for_relation(Oid relid, bool as_target)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	Oid			save_uid;
	int			save_sec;

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec(as_target ? "SELECT name FROM cq.queries WHERE target = $1::regclass"
				: "SELECT name FROM cq.queries WHERE state_table = $1::regclass",
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
	return SPI_processed > 0 ? spi_text(1) : NULL;
}

/*
 * cq_catalog_relation_is_source
 *	  Is relid the source of some continuous query (of any owner)?
 */
bool
cq_catalog_relation_is_source(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	Oid			save_uid;
	int			save_sec;

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("SELECT 1 FROM cq.queries WHERE source::pg_catalog.oid OPERATOR(pg_catalog.=) $1 LIMIT 1",
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
	return SPI_processed > 0;
}

/*
 * cq_catalog_last_offset
 *	  The last committed batch of a query (found = false before batch 0).
 */
void
cq_catalog_last_offset(const char *name, CqLastOffset *last)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	memset(last, 0, sizeof(*last));
	/*
	 * The progress row is fetched by a subquery, a primary-key probe: as a
	 * join, the cached generic plan may scan the whole (bloated) table.
	 */
	cq_spi_exec_cached("SELECT o.batch_id, o.end_offset::text, o.state_rows, "
				"(SELECT p.started_at FROM cq.progress p WHERE p.name = o.name AND p.batch_id = o.batch_id), "
				"o.batch_watermark, o.watermark "
				"FROM cq.offsets o "
				"WHERE o.name = $1 ORDER BY o.batch_id DESC LIMIT 1",
				SPI_OK_SELECT, 1, types, values, NULL);
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
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5, &isnull);
		last->has_batch_watermark = !isnull;
		last->batch_watermark = isnull ? 0 : DatumGetTimestampTz(d);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6, &isnull);
		last->has_watermark = !isnull;
		last->watermark = isnull ? 0 : DatumGetTimestampTz(d);
	}
}

/*
 * cq_catalog_record_batch
 *	  Record a committed batch: its offset row and progress row, keeping the
 *	  last CQ_PROGRESS_KEEP of each.  Runs in the batch's transaction, so
 *	  the offset commits with the target writes or not at all.
 */
void
cq_catalog_record_batch(CqQuery *q, CqBatchResult *r)
{
#define NREC 24
	Oid			types[NREC] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, INT8OID,
		TEXTOID, TIMESTAMPTZOID, FLOAT8OID, TEXTOID, INT8OID, FLOAT8OID, FLOAT8OID,
		INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
	TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[NREC];
	char		nulls[NREC];
	Oid			save_uid;
	int			save_sec;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(q->name);
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
	 * Batch ids are consecutive, so one row of each table falls out of the
	 * window per batch: delete exactly that one (an index probe; a range
	 * delete would walk every dead index entry left since the last vacuum).
	 * Every CQ_PROGRESS_KEEP batches the range is swept in full, in case
	 * anything older was left behind.
	 */
	values[23] = Int64GetDatum(r->batch_id % CQ_PROGRESS_KEEP == 0 ? PG_INT64_MIN :
							   r->batch_id - CQ_PROGRESS_KEEP);

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec_cached("WITH o AS (INSERT INTO cq.offsets (name, batch_id, start_offset, end_offset, state_rows, "
				"  batch_watermark, watermark, committed_at) "
				"  VALUES ($1, $2, $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $5, $18, $19, $23)), "
				"p AS (INSERT INTO cq.progress (name, batch_id, run_id, started_at, duration_ms, durations, "
				"  num_input_rows, input_rows_per_second, processed_rows_per_second, num_state_rows_total, "
				"  num_state_rows_updated, num_state_rows_removed, num_rows_dropped_by_watermark, "
				"  num_output_rows, start_offset, end_offset, watermark, event_time_min, event_time_max, "
				"  event_time_avg) "
				"  VALUES ($1, $2, $6::pg_catalog.uuid, $7, $8, $9::pg_catalog.jsonb, $10, $11, $12, $5, $13, $14, $15, $16, "
				"  $3::pg_catalog.pg_snapshot, $4::pg_catalog.pg_snapshot, $18, $20, $21, $22)), "
				"x AS (DELETE FROM cq.offsets WHERE name = $1 AND batch_id <= $17 AND batch_id >= $24), "
				"y AS (DELETE FROM cq.progress WHERE name = $1 AND batch_id <= $17 AND batch_id >= $24) "
				"SELECT 1",
					   SPI_OK_SELECT, NREC, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_insert_query
 *	  Insert a cq.queries row; returns its internal id.
 */
int32
cq_catalog_insert_query(const char *name, Oid owner, Oid source, Oid target,
						const char *query_text, CqOptions *o,
						const char *query_tree, const char *start_offset)
{
	Oid			types[17] = {TEXTOID, OIDOID, OIDOID, OIDOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[17];
	char		nulls[17];
	Oid			save_uid;
	int			save_sec;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = ObjectIdGetDatum(owner);
	values[2] = ObjectIdGetDatum(source);
	values[3] = ObjectIdGetDatum(target);
	values[4] = CStringGetTextDatum(query_text);
	values[5] = CStringGetTextDatum(o->output_mode);
	values[6] = CStringGetTextDatum(o->trigger);
	values[7] = o->event_time ? CStringGetTextDatum(o->event_time) : (Datum) 0;
	nulls[7] = o->event_time ? ' ' : 'n';
	values[8] = o->watermark ? CStringGetTextDatum(o->watermark) : (Datum) 0;
	nulls[8] = o->watermark ? ' ' : 'n';
	values[9] = Int64GetDatum(o->max_rows_per_trigger);
	nulls[9] = o->max_rows_per_trigger > 0 ? ' ' : 'n';
	values[10] = CStringGetTextDatum(o->starting);
	values[11] = CStringGetTextDatum(o->state_storage);
	values[12] = CStringGetTextDatum(o->complete_refresh);
	values[13] = CStringGetTextDatum(query_tree);
	values[14] = CStringGetTextDatum(start_offset);
	values[15] = (Datum) 0;
	nulls[15] = 'n';

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	values[15] = CStringGetTextDatum(cq_catalog_cluster_id());
	nulls[15] = ' ';
	values[16] = CStringGetTextDatum(GetConfigOption("TimeZone", false, false));
	nulls[16] = ' ';
	cq_spi_exec("INSERT INTO cq.queries (name, owner, source, target, query, output_mode, \"trigger\", "
				"event_time, watermark_delay, max_rows_per_trigger, starting, state_storage, "
				"complete_refresh, query_tree, start_offset, cluster_id, timezone) "
				"VALUES ($1, $2::pg_catalog.regrole, $3::pg_catalog.regclass, $4::pg_catalog.regclass, "
				"$5, $6, $7, $8, $9::pg_catalog.interval, $10, $11, $12, $13, $14, "
				"$15::pg_catalog.pg_snapshot, $16, $17) RETURNING id",
				SPI_OK_INSERT_RETURNING, 17, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
	return (int32) spi_int64(1, 0);
}

/*
 * cq_catalog_set_state_table
 *	  Remember the state table of a query.
 */
void
cq_catalog_set_state_table(int32 id, Oid state_table)
{
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		values[2] = {Int32GetDatum(id), ObjectIdGetDatum(state_table)};
	Oid			save_uid;
	int			save_sec;

	char		nulls[2] = {' ', OidIsValid(state_table) ? ' ' : 'n'};

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.queries SET state_table = $2::pg_catalog.regclass WHERE id = $1",
				SPI_OK_UPDATE, 2, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_delete_query
 *	  Delete a query's row; its offsets and progress go with it.
 */
void
cq_catalog_delete_query(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	Oid			save_uid;
	int			save_sec;

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("DELETE FROM cq.queries WHERE name = $1", SPI_OK_DELETE, 1, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_update_options
 *	  Store changed options (already validated).
 */
void
cq_catalog_update_options(const char *name, CqOptions *o)
{
	Oid			types[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID,
	TEXTOID, TEXTOID, TEXTOID};
	Datum		values[9];
	char		nulls[9];
	Oid			save_uid;
	int			save_sec;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(o->output_mode);
	values[2] = CStringGetTextDatum(o->trigger);
	values[3] = o->event_time ? CStringGetTextDatum(o->event_time) : (Datum) 0;
	nulls[3] = o->event_time ? ' ' : 'n';
	values[4] = o->watermark ? CStringGetTextDatum(o->watermark) : (Datum) 0;
	nulls[4] = o->watermark ? ' ' : 'n';
	values[5] = Int64GetDatum(o->max_rows_per_trigger);
	nulls[5] = o->max_rows_per_trigger > 0 ? ' ' : 'n';
	values[6] = CStringGetTextDatum(o->starting);
	values[7] = CStringGetTextDatum(o->state_storage);
	values[8] = CStringGetTextDatum(o->complete_refresh);

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.queries SET output_mode = $2, \"trigger\" = $3, event_time = $4, "
				"watermark_delay = $5::pg_catalog.interval, max_rows_per_trigger = $6, starting = $7, "
				"state_storage = $8, complete_refresh = $9 WHERE name = $1",
				SPI_OK_UPDATE, 9, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_state_lost
 *	  Has the query's unlogged state been emptied by a crash-restart?
 */
bool
cq_catalog_state_lost(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	Oid			save_uid;
	int			save_sec;

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec_cached("SELECT 1 FROM cq.state_sentinel WHERE query_id = $1",
					   SPI_OK_SELECT, 1, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
	return SPI_processed == 0;
}

/*
 * cq_catalog_state_valid
 *	  Mark the query's state as complete (after creation or a rebuild), and
 *	  record a rebuild's duration when rebuild_ms >= 0.
 */
void
cq_catalog_state_valid(int32 id, double rebuild_ms)
{
	Oid			types[2] = {INT4OID, FLOAT8OID};
	Datum		values[2] = {Int32GetDatum(id), Float8GetDatum(rebuild_ms)};
	Oid			save_uid;
	int			save_sec;

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("INSERT INTO cq.state_sentinel VALUES ($1) ON CONFLICT DO NOTHING",
				SPI_OK_INSERT, 1, types, values, NULL);
	if (rebuild_ms >= 0)
		cq_spi_exec("UPDATE cq.queries SET state_rebuilt_at = pg_catalog.now(), state_rebuild_ms = $2 "
					"WHERE id = $1", SPI_OK_UPDATE, 2, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_set_state_rows
 *	  Correct the state row count of the last batch after a rebuild.
 */
void
cq_catalog_set_state_rows(const char *name, int64 batch_id, int64 rows)
{
	Oid			types[3] = {TEXTOID, INT8OID, INT8OID};
	Datum		values[3] = {CStringGetTextDatum(name), Int64GetDatum(batch_id), Int64GetDatum(rows)};
	Oid			save_uid;
	int			save_sec;

	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.offsets SET state_rows = $3 WHERE name = $1 AND batch_id = $2",
				SPI_OK_UPDATE, 3, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_update_query
 *	  Store a changed query text and tree (already validated).
 */
void
cq_catalog_update_query(const char *name, const char *query_text, const char *query_tree)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3] = {CStringGetTextDatum(name),
		query_text ? CStringGetTextDatum(query_text) : (Datum) 0,
	CStringGetTextDatum(query_tree)};
	char		nulls[3] = {' ', query_text ? ' ' : 'n', ' '};
	Oid			save_uid;
	int			save_sec;

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.queries SET query = coalesce($2, query), query_tree = $3 WHERE name = $1",
				SPI_OK_UPDATE, 3, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
}

/* ---- background execution (issue 4): query state and live status ---- */

/*
 * cq_catalog_set_state
 *	  Set a query's state ('active', 'paused', 'failed') and last_error
 *	  (NULL clears it).  With only_if, only a query in that state changes.
 *	  The scheduler re-reads the catalog at commit.
 */
void
cq_catalog_set_state(const char *name, const char *state, const char *error,
					 const char *only_if)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Oid			save_uid;
	int			save_sec;

	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(state);
	values[2] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[2] = error ? ' ' : 'n';
	values[3] = only_if ? CStringGetTextDatum(only_if) : (Datum) 0;
	nulls[3] = only_if ? ' ' : 'n';

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.queries SET state = $2, last_error = $3 "
				"WHERE name = $1 AND ($4 IS NULL OR state = $4)",
				SPI_OK_UPDATE, 4, types, values, nulls);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_last_watermark
 *	  The watermark recorded with a query's last batch; false if none.
 */
bool
cq_catalog_last_watermark(const char *name, TimestampTz *watermark)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	bool		isnull = true;
	Datum		d;

	cq_spi_exec_cached("SELECT watermark FROM cq.offsets WHERE name = $1 ORDER BY batch_id DESC LIMIT 1",
					   SPI_OK_SELECT, 1, types, values, NULL);
	if (SPI_processed == 0)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return false;
	*watermark = DatumGetTimestampTz(d);
	return true;
}

/*
 * cq_catalog_reset
 *	  Start a query over: forget its offsets and progress, new run id,
 *	  batch 0 starts from `start_offset`, state 'active'.
 */
void
cq_catalog_reset(const char *name, const char *start_offset)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(name), CStringGetTextDatum(start_offset)};
	Oid			save_uid;
	int			save_sec;

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("WITH o AS (DELETE FROM cq.offsets WHERE name = $1), "
				"p AS (DELETE FROM cq.progress WHERE name = $1) "
				"UPDATE cq.queries SET run_id = pg_catalog.gen_random_uuid(), state = 'active', "
				"last_error = NULL, start_offset = $2::pg_catalog.pg_snapshot WHERE name = $1",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
}

/*
 * cq_catalog_set_start_offset
 *	  The offset batch 0 of a query starts from (before it has run).
 */
void
cq_catalog_set_start_offset(const char *name, const char *start_offset)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(name), CStringGetTextDatum(start_offset)};
	Oid			save_uid;
	int			save_sec;

	cq_wakeup_catalog_changed();
	cq_as_superuser(&save_uid, &save_sec);
	cq_spi_exec("UPDATE cq.queries SET start_offset = $2::pg_catalog.pg_snapshot "
				"WHERE name OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_restore_user(save_uid, save_sec);
}
