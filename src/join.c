/*-------------------------------------------------------------------------
 *
 * join.c
 *	  Joins of two streams (Spark's stream-stream inner join, append mode):
 *	  the buffer tables, the batch, and the rebuild of lost buffers.
 *
 * Each stream has a buffer table in cq_state, jl_<id> for the first of the
 * source option and jr_<id> for the second (unlogged unless
 * state_storage = 'logged', owned by the query's owner, dropped with the
 * query): the columns of the stream the query reads, named a<attno>, and
 * cq_join_batch, the batch that added the row.  A logged table jd_<id>
 * remembers the rows dropped as late (stream, cq_xid, event time) while a
 * rebuild could still take them for buffered rows.
 *
 * A batch (one transaction, as the query's owner, in the caller's SPI
 * connection), with W the watermark in effect (the minimum of the two
 * streams' watermarks after the previous batch, Spark's default policy):
 *	 1. the new rows of each stream (the snapshot range S_prev..S_cur,
 *		database-wide, so the same range gives each stream's new rows
 *		exactly once) with event time <= W are dropped as late and counted;
 *		the others are added to the stream's buffer, marked with the batch;
 *	 2. the user's query runs twice over the buffers: the first stream's
 *		new rows with every buffered row of the second (new ones included),
 *		then the first stream's older rows with the second's new rows, so
 *		each pair of rows meets exactly once; the matches are appended to
 *		the target;
 *	 3. rows that can match no future row (event time <= W + the bound the
 *		join condition implies, joinspec.c) leave the buffers;
 *	 4. each stream's watermark becomes max(its watermark, max event time
 *		read - its delay); the query's next watermark is their minimum
 *		(never backwards; -infinity until both streams have rows).
 * No-data batches run when the watermark advanced and a buffer can shrink.
 *
 * Outer joins (left, right, full) add a column cq_join_matched to the
 * buffers: after step 2 the rows of a preserved side that met a row of the
 * other side under the ON condition are marked, and in step 3 its unmatched
 * rows are written extended with NULLs before they leave the buffer (the
 * user's query over them with ON ... AND false).  Their buffers are logged,
 * so the matched flags survive a crash.
 *
 * After a crash-restart emptied unlogged buffers, they are rebuilt from the
 * sources: every row processed by the last committed batch that was not
 * dropped as late (jd_<id>) and is above the last eviction bound.
 *
 * An aggregation over the join (Spark 3.5+, append mode) takes the
 * matches of step 2, and an outer join's NULL-extended rows of step 3, as
 * its input rows: they are folded into its state table (always logged:
 * objects.c) and the windows its watermark closes are written
 * (agg_watermark, run_aggregation).  The statements are built in
 * join_sql.c and cached per backend (join_plan_get).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/transam.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "rewrite/rewriteSupport.h"
#include "rewrite/prs2lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"
#include "utils/syscache.h"
#include "access/htup_details.h"
#include "nodes/readfuncs.h"

#include "join.h"
#include "citus.h"
#include "join_sql.h"
#include "delta.h"
#include "delta_plan.h"
#include "guc.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"
#include "progress.h"
#include "tracking.h"
#include "summarize.h"
#include "offsets.h"
#include "timeexpr.h"
#include "restore.h"
#include "sink.h"
#include "objects.h"
#include "plan.h"
#include "state.h"
#include "status.h"
#include "settings_pin.h"

#define NPARAMS 6				/* $1..$6 of the batch statements */

static const Oid batch_types[NPARAMS] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID,
TIMESTAMPTZOID, INT8OID};

/* Buffer table names: jl_<id> (first stream), jr_<id> (second). */
static const char *const buffer_prefix[2] = {"jl", "jr"};

/*
 * buffers
 *	  The buffer tables of a query and the quoted name of its table of
 *	  late rows; false when they are missing.
 */
static bool
buffers(CqQuery *q, Oid bufs[2], char **late)
{
	for (int s = 0; s < 2; s++)
	{
		bufs[s] = cq_objects_relid(buffer_prefix[s], q->id);
		if (!OidIsValid(bufs[s]))
			return false;
	}
	*late = cq_objects_name("jd", q->id);
	return OidIsValid(cq_objects_relid("jd", q->id));
}

/*
 * cq_join_create
 *	  A new join of two streams: record its second stream in the catalog,
 *	  track it, create the buffer tables and the table of late rows (as
 *	  superuser in cq_state, handed to the owner, dropped with the query
 *	  view q_<id>).  The first buffer is the query's state table: its loss
 *	  after a crash-restart is what the sentinel detects.  A join whose
 *	  buffers the watermark will never shrink gets a warning, as Spark's
 *	  guide warns of unbounded state.
 */
void
cq_join_create(CqAnalysis *an, const char *name, int32 id, Oid owner, CqOptions *opts)
{
	const char *owner_name = quote_identifier(GetUserNameFromId(owner, false));
	/* an outer join's buffers (their matched flags) are logged: nothing to rebuild */
	bool		logged = strcmp(opts->state_storage, "logged") == 0 || an->join->jointype != JOIN_INNER;
	Oid			qview_id = cq_objects_relid("q", id);
	Oid			types[4] = {INT4OID, OIDOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	Interval   *delay2 = opts->join_watermark_delay ? opts->join_watermark_delay : opts->watermark_delay;
	CqSecurity	sec;

	if (strcmp(opts->state_storage, "memory") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous query cannot keep its state in shared memory"),
				 errdetail("A join of two streams keeps its buffered rows in tables."),
				 errhint("Leave state_storage out, or use 'unlogged' or 'logged': the state is then kept in a table.")));
	values[0] = Int32GetDatum(id);
	values[1] = ObjectIdGetDatum(an->join->side[1].relid);
	values[2] = opts->join_event_time ? CStringGetTextDatum(opts->join_event_time) : (Datum) 0;
	nulls[2] = opts->join_event_time ? ' ' : 'n';
	values[3] = delay2 ? DirectFunctionCall1(interval_out, IntervalPGetDatum(delay2)) : (Datum) 0;
	if (delay2)
		values[3] = CStringGetTextDatum(DatumGetCString(values[3]));
	nulls[3] = delay2 ? ' ' : 'n';

	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET join_source = $2::pg_catalog.regclass, join_event_time = $3, "
				"join_watermark_delay = $4::pg_catalog.interval WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 4, types, values, nulls);

	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		char	   *buf = cq_objects_name(buffer_prefix[s], id);
		StringInfoData ddl;
		ListCell   *lc;
		ObjectAddress dep,
					ref;

		initStringInfo(&ddl);
		appendStringInfo(&ddl, "CREATE %sTABLE %s (", logged ? "" : "UNLOGGED ", buf);
		foreach(lc, side->attnos)
		{
			Oid			type;
			int32		typmod;
			Oid			coll;

			get_atttypetypmodcoll(side->relid, lfirst_int(lc), &type, &typmod, &coll);
			appendStringInfo(&ddl, "a%d %s%s, ", lfirst_int(lc), cq_sql_type(type, typmod),
							 cq_sql_collate(coll, type));
		}
		appendStringInfo(&ddl, "%s pg_catalog.int8 NOT NULL%s)", CQ_JOIN_BATCH_COLUMN,
						 an->join->jointype != JOIN_INNER ?
						 ", " CQ_JOIN_MATCHED_COLUMN " pg_catalog.bool NOT NULL DEFAULT false" : "");
		cq_spi_exec(ddl.data, SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		cq_spi_exec(psprintf("CREATE INDEX ON %s (%s)", buf, CQ_JOIN_BATCH_COLUMN),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		if (side->bounded)
		{
			AttrNumber	key = cq_joinspec_key_attno(an->join, an->query, s);

			/* eviction reads the event time alone; matches, key and range */
			cq_spi_exec(psprintf("CREATE INDEX ON %s (a%d)", buf, side->et_attno),
						SPI_OK_UTILITY, 0, NULL, NULL, NULL);
			if (key != InvalidAttrNumber && key != side->et_attno)
				cq_spi_exec(psprintf("CREATE INDEX ON %s (a%d, a%d)", buf, key, side->et_attno),
							SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		}
		cq_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s; REVOKE ALL ON %s FROM PUBLIC",
							 buf, owner_name, buf),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		CommandCounterIncrement();
		ObjectAddressSet(dep, RelationRelationId, cq_objects_relid(buffer_prefix[s], id));
		ObjectAddressSet(ref, RelationRelationId, qview_id);
		recordDependencyOn(&dep, &ref, DEPENDENCY_AUTO);
	}
	{
		char	   *late = cq_objects_name("jd", id);
		ObjectAddress dep,
					ref;

		cq_spi_exec(psprintf("CREATE TABLE %s (side pg_catalog.int2 NOT NULL, xid pg_catalog.xid8, "
							 "ts pg_catalog.timestamptz NOT NULL); "
							 "ALTER TABLE %s OWNER TO %s; REVOKE ALL ON %s FROM PUBLIC",
							 late, late, owner_name, late),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		CommandCounterIncrement();
		ObjectAddressSet(dep, RelationRelationId, cq_objects_relid("jd", id));
		ObjectAddressSet(ref, RelationRelationId, qview_id);
		recordDependencyOn(&dep, &ref, DEPENDENCY_AUTO);
	}
	/* an aggregation's state table is its groups' (objects.c), the buffers are its input */
	if (!an->is_aggregate)
		cq_catalog_set_state_table(id, cq_objects_relid(buffer_prefix[0], id));

	/* Spark's guide: without a time bound the state of a join is unbounded */
	if (!(an->join->side[0].bounded && an->join->side[1].bounded))
		ereport(WARNING,
				(errmsg("the state of continuous query \"%s\" grows without bound",
						name),
				 errdetail("%s",
						   !an->join->has_watermark ?
						   "Without an event time and a watermark for both streams, every row of both is kept to match future rows." :
						   psprintf("The join condition does not bound how old a row of \"%s\" may be and still match: every row of it is kept.",
									get_rel_name(an->join->side[an->join->side[0].bounded ? 1 : 0].relid))),
				 errhint("Add a time-range condition between the event times, e.g. b.ts BETWEEN a.ts AND a.ts + interval '1 hour', as Spark's guide advises.")));
	if (!logged)
		cq_catalog_state_valid(id, -1);
	cq_security_restore(&sec);
	CommandCounterIncrement();
}

/*
 * cq_join_reset
 *	  cq.reset of a join: empty both buffers and the late rows.  As the
 *	  owner (the caller switched).
 */
void
cq_join_reset(CqQuery *q)
{
	Oid			bufs[2];
	char	   *late;

	if (!OidIsValid(q->opts.join_source_relid) || !buffers(q, bufs, &late))
		return;
	cq_spi_exec(psprintf("TRUNCATE %s, %s, %s", cq_sql_relname_str(bufs[0]),
						 cq_sql_relname_str(bufs[1]), late),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
}

/*
 * last_side_watermarks
 *	  The watermark of each stream after the last batch (cq.offsets).
 */
static void
last_side_watermarks(CqQuery *q, bool has[2], TimestampTz wm[2])
{
	Oid			types[2] = {TEXTOID, NAMEOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	CqSecurity	sec;

	has[0] = has[1] = false;
	cq_catalog_key_values(q, &values[0], &values[1], &nulls[1]);
	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("SELECT o.source_watermarks[1], o.source_watermarks[2] FROM cq.offsets o "
								"WHERE %s ORDER BY o.batch_id DESC LIMIT 1",
								cq_catalog_rows_of("o", 1, 2)),
					   SPI_OK_SELECT, 2, types, values, nulls);
	cq_security_restore(&sec);
	for (int s = 0; s < 2 && SPI_processed > 0; s++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, s + 1, &isnull);

		has[s] = !isnull;
		wm[s] = isnull ? 0 : DatumGetTimestampTz(d);
	}
}

/*
 * record_sides
 *	  The per-stream columns of the batch's cq.offsets and cq.progress rows.
 */
static void
record_sides(CqQuery *q, int64 batch_id, bool has[2], TimestampTz wm[2], int64 rows[2],
			 int64 dropped[2])
{
	Oid			types[9] = {TEXTOID, NAMEOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
	INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		values[9];
	char		nulls[9];
	CqSecurity	sec;

	memset(nulls, ' ', sizeof(nulls));
	cq_catalog_key_values(q, &values[0], &values[1], &nulls[1]);
	values[2] = Int64GetDatum(batch_id);
	for (int s = 0; s < 2; s++)
	{
		values[3 + s] = TimestampTzGetDatum(wm[s]);
		nulls[3 + s] = has[s] ? ' ' : 'n';
		values[5 + s] = Int64GetDatum(rows[s]);
		values[7 + s] = Int64GetDatum(dropped[s]);
	}
	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("WITH o AS (UPDATE cq.offsets o SET source_watermarks = ARRAY[$4, $5] "
								"  WHERE %s AND o.batch_id OPERATOR(pg_catalog.=) $3) "
								"UPDATE cq.progress p SET num_state_rows_per_source = ARRAY[$6, $7], "
								"  num_rows_dropped_per_source = ARRAY[$8, $9] "
								"WHERE %s AND p.batch_id OPERATOR(pg_catalog.=) $3",
								cq_catalog_rows_of("o", 1, 2), cq_catalog_rows_of("p", 1, 2)),
					   SPI_OK_UPDATE, 9, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * rebuild
 *	  Refill the buffers a crash-restart emptied (file header).  As the
 *	  owner.  Returns the rows buffered.
 */
static int64
rebuild(CqAnalysis *an, CqQuery *q, CqJoinSql *sql, CqLastOffset *last, double *ms)
{
	Oid			types[5] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID, TIMESTAMPTZOID};
	Datum		params[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	CqSnap	   *end = cq_snap_parse(last->end_offset);
	TimestampTz t0 = GetCurrentTimestamp();
	int64		rows = 0;

	params[0] = cq_xid8_datum(0);
	params[1] = cq_xid8_datum(end->xmax);
	params[2] = cq_snapshot_datum(last->end_offset);
	params[3] = cq_snapshot_datum(q->start_offset);
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		TimestampTz bound;
		bool		isnull;

		nulls[4] = 'n';
		if (last->has_batch_watermark &&
			cq_joinspec_side_bound(side, last->batch_watermark, true, &bound))
		{
			params[4] = TimestampTzGetDatum(bound);
			nulls[4] = ' ';
		}
		cq_spi_exec_cached(sql->rebuild[s], SPI_OK_SELECT, 5, types, params, nulls);
		rows += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	*ms = cq_ms_since(t0);
	ereport(LOG,
			(errmsg("pg_cq: rebuilt lost state of continuous query \"%s\": " INT64_FORMAT " rows in %.1f ms",
					q->name, rows, *ms),
			 errdetail("A crash-restart empties unlogged tables; the buffered rows of the join were read again from its sources.")));
	return rows;
}

/* What one batch of a join reads from one stream. */
typedef struct SideRead
{
	int64		rows;
	int64		late;
	int64		added;
	bool		has_et;
	TimestampTz et_min;
	TimestampTz et_max;
	double		et_avg_epoch;
	int64		et_count;
} SideRead;

/*
 * add_new_rows
 *	  Step 1 of a batch for stream s (file header).
 */
static void
add_new_rows(const char *sql, Datum *params, const char *nulls, SideRead *r)
{
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	cq_spi_exec_cached(sql, SPI_OK_SELECT, NPARAMS, (Oid *) batch_types, params, nulls);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	r->rows = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	r->late = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
	r->added = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	d = SPI_getbinval(tup, desc, 4, &isnull);
	r->has_et = !isnull;
	if (r->has_et)
	{
		r->et_min = DatumGetTimestampTz(d);
		r->et_max = DatumGetTimestampTz(SPI_getbinval(tup, desc, 5, &isnull));
		r->et_avg_epoch = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
															 SPI_getbinval(tup, desc, 6, &isnull)));
		r->et_count = DatumGetInt64(SPI_getbinval(tup, desc, 7, &isnull));
	}
}

/*
 * agg_watermark
 *	  The watermark of an aggregation over the join when the join's is w
 *	  (Spark's StreamingSymmetricHashJoinExec.produceOutputWatermark: the
 *	  minimum of w and each bounded side's state watermark w + bound, below
 *	  which it evicts its rows, or the start of w's bin for equal date_bin
 *	  windows, where Spark takes w itself).  A match written in a batch with join
 *	  watermark w pairs rows above their sides' eviction bounds, so its
 *	  event times, and the end of its window, lie above it: the join never
 *	  writes a row the aggregation would drop as late, and a window that
 *	  ends at or before it can receive no more rows.  (A side the condition
 *	  does not bound keeps every row, and its old rows may still match:
 *	  Spark ignores them here, and so does pg_cq.)  False when there is no
 *	  watermark (-infinity).
 */
static bool
agg_watermark(CqJoinSpec *js, bool has, TimestampTz w, TimestampTz *out)
{
	TimestampTz b;

	if (!has)
		return false;
	*out = w;
	for (int s = 0; s < 2; s++)
		if (js->side[s].bounded)
		{
			if (!cq_joinspec_side_bound(&js->side[s], w, false, &b))
				return false;
			if (b < *out)
				*out = b;
		}
	return IS_VALID_TIMESTAMP(*out);
}

/*
 * run_aggregation
 *	  Step 2 of a batch of an aggregation over the join (agg_sql): fold the
 *	  matches into its state, then write and remove the windows its
 *	  watermark closed.  params are the join's batch parameters; late_has
 *	  and late_wm the join watermark of the previous batch.
 */
static void
run_aggregation(CqAnalysis *an, CqJoinSql *sql, Datum *params, const char *nulls, bool late_has,
				TimestampTz late_wm, CqBatchResult *res, int64 *folded, int64 *closed)
{
	Datum		p[AGG_NPARAMS];
	char		n[AGG_NPARAMS];
	Oid			types[AGG_NPARAMS] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID,
	TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	TimestampTz w;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	memcpy(p, params, sizeof(Datum) * NPARAMS);
	memcpy(n, nulls, NPARAMS);
	n[4] = agg_watermark(an->join, res->has_watermark, res->watermark, &w) ? ' ' : 'n';
	p[4] = TimestampTzGetDatum(n[4] == ' ' ? w : 0);
	n[6] = agg_watermark(an->join, late_has, late_wm, &w) ? ' ' : 'n';
	p[6] = TimestampTzGetDatum(n[6] == ' ' ? w : 0);
	/* the eviction bounds of step 3, as values of the event-time columns' types */
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];

		types[7 + s] = side->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID;
		n[7 + s] = side->preserved && res->has_watermark &&
			cq_joinspec_side_bound(side, res->watermark, true, &w) ? ' ' : 'n';
		p[7 + s] = TimestampTzGetDatum(n[7 + s] == ' ' ? w : 0);
	}

	cq_spi_exec_cached(sql->fold, SPI_OK_SELECT, AGG_NPARAMS, types, p, n);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*folded = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	res->dropped_by_watermark += DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	*closed = 0;
	res->output_rows = 0;
	if (n[4] == ' ')
	{
		cq_spi_exec_cached(sql->close, SPI_OK_SELECT, AGG_NPARAMS, types, p, n);
		*closed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		res->output_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
}

/*
 * run_batch
 *	  Steps 1-4 of a batch (file header), as the owner.  False when there
 *	  was nothing to do.
 */
/*
 * cut
 *	  With max_rows_per_trigger, end the batch after the first transactions
 *	  whose rows of both streams together reach the limit (offsets.c, as for
 *	  one stream: a transaction is never split).  Returns the end offset;
 *	  *none when the range it leaves holds no new row.
 */
static char *
cut(CqQuery *q, CqJoinSql *sql, CqSnap *prev, const char *prev_text, CqSnap *cur, char *cur_text,
	bool history, bool *none)
{
	Datum		params[4];
	int64		hist = 0;
	int64		rows;

	if (history)
	{
		cq_spi_exec(sql->count_history, SPI_OK_SELECT, 0, NULL, NULL, NULL);
		hist = strtoi64(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), NULL, 10);
	}
	params[0] = cq_xid8_datum(cq_snap_low_bound(prev, cur));
	params[1] = cq_xid8_datum(cur->xmax);
	params[2] = cq_snapshot_datum(cur_text);
	params[3] = cq_snapshot_datum(prev_text);
	cur_text = cq_offsets_limit(sql->count_xids, prev, cur, cur_text, params,
								q->opts.max_rows_per_trigger, hist, &rows);
	*none = rows == 0 && !history;
	return cur_text;
}

static bool
run_batch(CqAnalysis *an, CqQuery *q, CqJoinSql *sql, const char *prev_text, bool history,
		  bool nodata_only, bool nodata_due, CqBatchResult *res, bool side_has[2],
		  TimestampTz side_wm[2], int64 rows[2], int64 dropped[2], CqLastOffset *last,
		  bool unlimited)
{
	int64		agg_folded = 0;
	int64		agg_closed = 0;
	int64		agg_rows = 0;

	Datum		params[NPARAMS];
	char		nulls[NPARAMS];
	CqSnap	   *prev = cq_snap_parse(prev_text);
	/* a distributed stream, either side, takes the 2PC barrier (citus.c) */
	char	   *cur_text = cq_snap_current_source(cq_citus_kind(q->source) == CQ_CITUS_HASH ?
												  q->source : an->join->side[1].relid, prev_text);
	CqSnap	   *cur = cq_snap_parse(cur_text);
	bool		nodata;
	SideRead	r[2];
	int			nest;
	bool		isnull;
	TimestampTz t1;
	double		et_sum = 0;
	int64		et_n = 0;

	memset(nulls, ' ', sizeof(nulls));
	memset(r, 0, sizeof(r));
	nodata = nodata_only || (!history && cq_snap_nothing_new(prev, cur));
	if (!nodata && q->opts.max_rows_per_trigger > 0 && !unlimited)
	{
		cur_text = cut(q, sql, prev, prev_text, cur, cur_text, history, &nodata);
		cur = cq_snap_parse(cur_text);
	}
	if (nodata && !nodata_due)
		return false;
	if (nodata)
	{
		cur_text = (char *) prev_text;
		cur = prev;
		res->nodata = true;
		cq_status_report_message(CQ_MSG_CLEANUP);
	}
	params[0] = cq_xid8_datum(cq_snap_low_bound(prev, cur));
	params[1] = cq_xid8_datum(cur->xmax);
	params[2] = cq_snapshot_datum(cur_text);
	params[3] = cq_snapshot_datum(prev_text);
	params[4] = TimestampTzGetDatum(res->watermark);
	nulls[4] = res->has_watermark ? ' ' : 'n';
	params[5] = Int64GetDatum(res->batch_id);

	t1 = GetCurrentTimestamp();
	nest = cq_delta_plan_scan_settings(history, false);
	for (int s = 0; s < 2; s++)
		add_new_rows(history ? sql->add_history[s] : sql->add[s], params, nulls, &r[s]);
	cq_delta_plan_scan_end(nest);
	res->latest_offset_ms = cq_ms_since(res->started_at);

	if (!nodata && !history && r[0].rows + r[1].rows == 0)
	{
		/* only transactions without rows for these streams finished */
		if (!nodata_due)
			return false;
		res->nodata = true;
	}
	if (!res->nodata)
		cq_status_report_message(CQ_MSG_PROCESSING);
	res->start_offset = pstrdup(prev_text);
	res->end_offset = pstrdup(cur_text);

	/* step 2: the matches (into the aggregation's state, if it aggregates) */
	res->dropped_by_watermark = 0;
	if (sql->fold)
	{
		/* outer joins: unmatched rows to evict feed the aggregation, matched ones marked first */
		for (int s = 0; s < 2; s++)
			if (sql->matched[s])
				cq_spi_exec_cached(sql->matched[s], SPI_OK_UPDATE, NPARAMS, (Oid *) batch_types, params, nulls);
		run_aggregation(an, sql, params, nulls, last->found && last->has_batch_watermark,
						last->batch_watermark, res, &agg_folded, &agg_closed);
	}
	else
	{
		cq_spi_exec_cached(sql->output, SPI_OK_SELECT, NPARAMS, (Oid *) batch_types, params, nulls);
		res->output_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		for (int s = 0; s < 2; s++)
			if (sql->matched[s])
				cq_spi_exec_cached(sql->matched[s], SPI_OK_UPDATE, NPARAMS, (Oid *) batch_types, params, nulls);
	}

	/* step 3: eviction with the watermark in effect (outer joins: unmatched rows out first) */
	res->state_removed = 0;
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		TimestampTz bound;
		Oid			type = TIMESTAMPTZOID;
		Datum		b;

		if (!res->has_watermark || !cq_joinspec_side_bound(side, res->watermark, true, &bound))
			continue;
		b = TimestampTzGetDatum(bound);
		if (sql->emit[s])
		{
			/* the bound as a value of the column's type (a timestamp's: at UTC) */
			Oid			et_type = side->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID;

			cq_spi_exec_cached(sql->emit[s], SPI_OK_SELECT, 1, &et_type, &b, NULL);
			res->output_rows += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		}
		cq_spi_exec_cached(sql->evict[s], SPI_OK_SELECT, 1, &type, &b, NULL);
		res->state_removed += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	cq_spi_exec_cached(sql->count, SPI_OK_SELECT, 0, NULL, NULL, NULL);
	for (int s = 0; s < 2; s++)
		rows[s] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, s + 1, &isnull));
	agg_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));

	/* step 4: watermarks (state rows: both buffers and the aggregation's groups) */
	res->input_rows = r[0].rows + r[1].rows;
	res->state_updated = r[0].added + r[1].added + agg_folded;
	res->state_total = rows[0] + rows[1] + agg_rows;
	res->state_removed += agg_closed;
	res->dropped_by_watermark += r[0].late + r[1].late;
	res->has_event_time = false;
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		TimestampTz cand;

		dropped[s] = r[s].late;
		if (!r[s].has_et)
			continue;
		if (!res->has_event_time || r[s].et_min < res->et_min)
			res->et_min = r[s].et_min;
		if (!res->has_event_time || r[s].et_max > res->et_max)
			res->et_max = r[s].et_max;
		res->has_event_time = true;
		et_sum += r[s].et_avg_epoch * r[s].et_count;
		et_n += r[s].et_count;
		if (side->has_delay && !pg_sub_s64_overflow(r[s].et_max, side->delay_us, &cand) &&
			IS_VALID_TIMESTAMP(cand) && (!side_has[s] || cand > side_wm[s]))
		{
			side_has[s] = true;
			side_wm[s] = cand;
		}
	}
	if (et_n > 0)
		res->et_avg = (TimestampTz) ((et_sum / et_n - ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)) * USECS_PER_SEC);
	res->has_next_watermark = res->has_watermark;
	res->next_watermark = res->watermark;
	if (an->join->has_watermark && side_has[0] && side_has[1])
	{
		TimestampTz global = Min(side_wm[0], side_wm[1]);

		if (!res->has_next_watermark || global > res->next_watermark)
		{
			res->has_next_watermark = true;
			res->next_watermark = global;
		}
	}
	res->add_batch_ms = cq_ms_since(t1);
	return true;
}

/*
 * Per-backend cache of the analysis and statements of joins, as plan.c
 * keeps them for other queries: a worker's batches skip re-analysis and
 * deparsing.  An entry is valid while the query's catalog row is unchanged
 * and no relation, function, type, operator or schema changed since it was
 * built (plan.c's generation).  Only what a batch reads of the analysis is
 * kept: the join's streams and bounds, and whether it aggregates.
 */
typedef struct JoinCacheEntry
{
	int32		id;				/* hash key: the query's internal id */
	uint64		generation;
	char	   *key;			/* catalog values the entry was built from */
	MemoryContext cxt;
	CqAnalysis *an;
	CqJoinSql		sql;
	Oid			bufs[2];
	char	   *late;
} JoinCacheEntry;

static HTAB *join_entries = NULL;

/*
 * copy_join_analysis
 *	  What a batch reads of a join's analysis, copied into the current
 *	  memory context.
 */
static CqAnalysis *
copy_join_analysis(CqAnalysis *an)
{
	CqAnalysis *copy = palloc0(sizeof(CqAnalysis));

	copy->source_relid = an->source_relid;
	copy->is_aggregate = an->is_aggregate;
	copy->et_is_tz = an->et_is_tz;
	copy->has_watermark = an->has_watermark;
	copy->join = palloc(sizeof(CqJoinSpec));
	*copy->join = *an->join;
	for (int s = 0; s < 2; s++)
	{
		copy->join->side[s].refname = pstrdup(an->join->side[s].refname);
		copy->join->side[s].attnos = list_copy(an->join->side[s].attnos);
	}
	return copy;
}

/*
 * forget_entry
 *	  Free an entry's saved SPI plans, except those the statements in keep
 *	  (or NULL) still use, and its memory.
 */
static void
forget_entry(JoinCacheEntry *entry, CqJoinSql *keep)
{
	List	   *keep_sql = keep ? cq_join_sql_list(keep) : NIL;
	ListCell   *lc,
			   *lk;

	foreach(lc, cq_join_sql_list(&entry->sql))
	{
		bool		kept = false;

		if (lfirst(lc) == NULL)
			continue;
		foreach(lk, keep_sql)
			kept |= lfirst(lk) != NULL && strcmp(lfirst(lk), lfirst(lc)) == 0;
		if (!kept)
			cq_spi_plan_forget(lfirst(lc));
	}
	MemoryContextDelete(entry->cxt);
}

/*
 * join_plan_get
 *	  The analysis, statements, buffers and table of late rows of a join,
 *	  from the cache or built now (then cached).  As plan.c, a new entry is
 *	  built completely before it replaces the old one.  Entries of queries
 *	  that no longer exist (no view q_<id>) are dropped then.
 */
static void
join_plan_get(CqQuery *q, CqAnalysis **an, CqJoinSql **sql, Oid bufs[2], char **late)
{
	char	   *key = psprintf("%s|%u|%s|%s", cq_plan_key(q), q->opts.join_source_relid,
							   q->opts.join_event_time ? q->opts.join_event_time : "",
							   q->opts.join_watermark ? q->opts.join_watermark : "");
	uint64		gen = cq_plan_generation();
	JoinCacheEntry *entry;
	bool		found;
	CqAnalysis *new_an;
	CqJoinSql		new_sql;
	Oid			new_bufs[2];
	char	   *new_late;
	MemoryContext cxt;
	MemoryContext old;
	JoinCacheEntry built;

	if (join_entries == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(JoinCacheEntry);
		join_entries = hash_create("pg_cq joins", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(join_entries, &q->id, HASH_FIND, &found);
	if (!found || entry->generation != gen || strcmp(entry->key, key) != 0)
	{
		new_an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
		if (!buffers(q, new_bufs, &new_late))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the buffer tables of continuous query \"%s\" are missing", q->name),
					 errhint("Drop the query and create it again.")));
		cq_join_sql_build(new_an, q, new_bufs, new_late, &new_sql);

		cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq join", ALLOCSET_SMALL_SIZES);
		old = MemoryContextSwitchTo(cxt);
		memset(&built, 0, sizeof(built));
		built.id = q->id;
		built.generation = gen;
		built.key = pstrdup(key);
		built.cxt = cxt;
		built.an = copy_join_analysis(new_an);
		cq_join_sql_copy(&built.sql, &new_sql);
		built.bufs[0] = new_bufs[0];
		built.bufs[1] = new_bufs[1];
		built.late = pstrdup(new_late);
		MemoryContextSwitchTo(old);

		/* nothing fails from here on */
		entry = hash_search(join_entries, &q->id, HASH_ENTER, &found);
		if (found)
			forget_entry(entry, &built.sql);
		MemoryContextSetParent(cxt, CacheMemoryContext);
		*entry = built;

		/* the entries of dropped queries */
		{
			HASH_SEQ_STATUS status;
			JoinCacheEntry *e;
			Oid			nsp = get_namespace_oid("cq_state", true);

			hash_seq_init(&status, join_entries);
			while ((e = hash_seq_search(&status)) != NULL)
			{
				if (e->id == q->id ||
					(OidIsValid(nsp) && OidIsValid(get_relname_relid(psprintf("q_%d", e->id), nsp))))
					continue;
				forget_entry(e, NULL);
				(void) hash_search(join_entries, &e->id, HASH_REMOVE, NULL);
			}
		}
	}
	*an = entry->an;
	*sql = &entry->sql;
	bufs[0] = entry->bufs[0];
	bufs[1] = entry->bufs[1];
	*late = entry->late;
}

/*
 * cq_join_run_query
 *	  A batch of a join of two streams, in the caller's transaction and SPI
 *	  connection (batch.c's run_query, which has read the last offset and
 *	  filled res's batch id and watermark).  nodata_only: only a due
 *	  no-data batch; unlimited: ignore max_rows_per_trigger.  res->ran is
 *	  false when there was nothing to do.
 */
void
cq_join_run_query(CqQuery *q, CqLastOffset *last, bool nodata_only, bool unlimited,
				  CqBatchResult *res)
{
	Oid			bufs[2];
	char	   *late;
	CqJoinSql    *sql;
	CqAnalysis *an;
	bool		history = !last->found && cq_query_reads_history(q);
	const char *prev_text = last->found ? last->end_offset : q->start_offset;
	bool		bounded;
	bool		nodata_due;
	bool		rebuild_needed;
	bool		ran;
	bool		side_has[2];
	TimestampTz side_wm[2];
	int64		rows[2] = {0, 0};
	int64		dropped[2] = {0, 0};
	CqSecurity	sec;
	int			nest;

	/* printed under the query's settings, as it runs (settings_pin.c) */
	nest = cq_settings_pin_begin(q->timezone, q->settings);
	join_plan_get(q, &an, &sql, bufs, &late);
	cq_settings_pin_end(nest);
	/* a new watermark shrinks the buffers, or closes windows of an aggregation */
	bounded = an->join->side[0].bounded || an->join->side[1].bounded || an->is_aggregate;
	res->et_utc = !an->join->side[0].et_is_tz && !an->join->side[1].et_is_tz &&
		an->join->side[0].et_attno != InvalidAttrNumber;

	nodata_due = last->found && last->has_watermark && bounded &&
		(!last->has_batch_watermark || last->watermark > last->batch_watermark);
	if (nodata_only && !nodata_due)
		return;
	if (last->found)
		last_side_watermarks(q, side_has, side_wm);
	else
		side_has[0] = side_has[1] = false;

	if (!history)
		for (int s = 0; s < 2; s++)
			cq_source_summarize(an->join->side[s].relid);

	res->rebuild_ms = -1;
	rebuild_needed = get_rel_persistence(bufs[0]) == RELPERSISTENCE_UNLOGGED && cq_catalog_state_lost(q->id);

	cq_security_owner(q->owner, &sec);
	if (cq_work_mem_kb > 0)
		(void) set_config_option("work_mem", psprintf("%d", cq_work_mem_kb), PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	cq_settings_pin_apply(q->timezone, q->settings);
	if (rebuild_needed)
	{
		cq_spi_exec(psprintf("TRUNCATE %s, %s", cq_sql_relname_str(bufs[0]), cq_sql_relname_str(bufs[1])),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		if (last->found)
			res->state_total = rebuild(an, q, sql, last, &res->rebuild_ms);
	}
	ran = run_batch(an, q, sql, prev_text, history, nodata_only, nodata_due, res,
					side_has, side_wm, rows, dropped, last, unlimited);
	cq_security_restore(&sec);

	if (rebuild_needed)
	{
		cq_catalog_state_valid(q->id, Max(res->rebuild_ms, 0));
		if (!ran && last->found)
			cq_progress_set_state_rows(q, last->batch_id, res->state_total);
	}
	if (!ran)
		return;
	res->ran = true;
	res->nodata_due_next = bounded && res->has_next_watermark &&
		(!res->has_watermark || res->next_watermark > res->watermark);
	/* the state's bytes: both buffers, and the groups of an aggregation over the join */
	res->has_state_bytes = true;
	res->state_bytes = cq_progress_table_bytes(bufs[0]) + cq_progress_table_bytes(bufs[1]);
	if (OidIsValid(q->state_table) && q->state_table != bufs[0])
		res->state_bytes += cq_progress_table_bytes(q->state_table);
	res->duration_ms = cq_ms_since(res->started_at);
	res->processed_rows_per_second = res->input_rows / Max(res->duration_ms, 1.0) * 1000.0;
	res->input_rows_per_second = last->last_started_at == 0 ? -1 :
		res->input_rows / Max((double) (res->started_at - last->last_started_at) / 1000000.0, 0.001);
	cq_progress_record_batch(q, res);
	record_sides(q, res->batch_id, side_has, side_wm, rows, dropped);
}

/*
 * cq_join_explain
 *	  cq.explain of a join of two streams: the statements of a batch, in
 *	  the order they run, with what each parameter is.
 */
char *
cq_join_explain(CqQuery *q)
{
	CqAnalysis *an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	Oid			bufs[2];
	char	   *late;
	CqJoinSql		sql;
	StringInfoData buf;
	char	   *path;

	if (!buffers(q, bufs, &late))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the buffer tables of continuous query \"%s\" are missing", q->name),
				 errhint("Drop the query and create it again.")));
	cq_join_sql_build(an, q, bufs, late, &sql);
	initStringInfo(&buf);
	appendStringInfo(&buf, "-- %s\n", cq_objects_target_comment(q->target, q->name, &q->opts));
	path = cq_catalog_state_path(q->id);
	if (path)
		appendStringInfo(&buf, "-- state: %s (cq.queries.state_path)\n", path);
	appendStringInfo(&buf, "-- a join of two streams: a batch runs these statements as role %s, with\n"
					 "-- search_path = pg_catalog, pg_temp and TimeZone = '%s'\n"
					 "-- parameters: $1 xid8 lowest transaction id that can be new, $2 xid8 xmax of the\n"
					 "-- end offset, $3 pg_snapshot end offset, $4 pg_snapshot start offset, $5 timestamptz\n"
					 "-- watermark in effect (NULL = -infinity), $6 int8 batch id\n",
					 quote_identifier(GetUserNameFromId(q->owner, false)), q->timezone ? q->timezone : "UTC");
	appendStringInfo(&buf, "-- %s\n", cq_settings_pin_describe_line(q->settings));
	for (int s = 0; s < 2; s++)
		appendStringInfo(&buf, "-- 1.%d new rows of %s into its buffer, late rows counted:\n%s;\n", s + 1,
						 get_rel_name(an->join->side[s].relid), sql.add[s]);
	if (sql.fold)
		appendStringInfo(&buf, "-- 2. the matches, aggregated into the state ($5 = the aggregation's watermark: the\n"
						 "-- join's minus the largest eviction lag of its streams; $7 = the same of the previous batch):\n"
						 "%s;\n-- 2.1 windows closed by the watermark, appended to the target:\n%s;\n",
						 sql.fold, sql.close);
	else
		appendStringInfo(&buf, "-- 2. the matches, appended to the target:\n%s;\n", sql.output);
	for (int s = 0; s < 2; s++)
		if (sql.matched[s])
			appendStringInfo(&buf, "-- 2.%d outer join: rows of %s that matched in this batch are marked:\n%s;\n",
							 s + 1, get_rel_name(an->join->side[s].relid), sql.matched[s]);
	for (int s = 0; s < 2; s++)
		if (an->join->side[s].bounded)
			appendStringInfo(&buf, "-- 3.%d eviction from the buffer of %s ($1 = watermark %s " INT64_FORMAT " microseconds%s):\n%s;\n",
							 s + 1, get_rel_name(an->join->side[s].relid),
							 an->join->side[s].bound_us < 0 ? "-" : "+",
							 an->join->side[s].bound_us < 0 ? -an->join->side[s].bound_us : an->join->side[s].bound_us,
							 an->join->side[s].grid_us > 0 ?
							 ", or the start of its date_bin bin minus 1 microsecond if later" : "",
							 sql.evict[s]);
	for (int s = 0; s < 2; s++)
		if (sql.emit[s])
			appendStringInfo(&buf, "-- before 3.%d, outer join: its unmatched rows to evict are written with NULLs:\n%s;\n",
							 s + 1, sql.emit[s]);
	return buf.data;
}

/*
 * cq_join_restored
 *	  A join of two streams restored from a dump was started over
 *	  (restore.c): its second stream's rows become history too, and its
 *	  buffers are made anew (the dump kept their rows and lost their
 *	  dependencies).  Runs in the batch's transaction, before its batch.
 */
void
cq_join_restored(CqQuery *q)
{
	CqAnalysis *an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	Oid			relid = an->join->side[1].relid;
	CqSecurity	sec;

	cq_source_forget_stamps(relid, cq_rel_owner(relid));
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("DROP TABLE IF EXISTS %s, %s, %s", cq_objects_name(buffer_prefix[0], q->id),
						 cq_objects_name(buffer_prefix[1], q->id), cq_objects_name("jd", q->id)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);
	CommandCounterIncrement();
	cq_join_create(an, q->name, q->id, q->owner, &q->opts);
	q->state_table = cq_objects_relid(an->is_aggregate ? "s" : buffer_prefix[0], q->id);
}
