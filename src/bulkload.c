/*-------------------------------------------------------------------------
 *
 * bulkload.c
 *	  Batch 0 over history on the table path, loaded directly (issue 12
 *	  goal 2): one scan of the source's aggregated groups writes each group
 *	  to the state table and its row to the target by a heap insert, as
 *	  COPY and CREATE TABLE AS write, instead of the batch statement's
 *	  INSERT ... RETURNING chain.
 *
 * The batch statement of batch 0 (plan.c's batch_sql with history) inserts
 * d, the partial aggregates of every group, into the empty state with
 * RETURNING, keeps those rows (CTE m, spilled to a temporary file beyond
 * work_mem), and inserts the target rows computed from them; d itself is
 * kept too, to count the rows read.  At a million groups those copies
 * (written to and read back from temporary files) and the executor's
 * per-row INSERT work made the fold about twice the plain GROUP BY's CPU
 * (bench/README.md, "Fold efficiency").  Here a SELECT of d's rows, each
 * with the target row computed from it (the final values, the query's
 * outputs and its HAVING, as the statement computes them), goes to a
 * DestReceiver that inserts the state tuple and, where HAVING holds, the
 * target tuple, as COPY inserts: buffered, a thousand rows (or 64 kB) at a
 * time written by table_multi_insert (each page filled under one lock, one
 * WAL record per page of the logged target instead of one per row),
 * through a BulkInsertState (the page being filled stays pinned); the
 * rows read are the sum of the groups' counts.
 * Nothing is kept in between, and no executor INSERT runs per row.
 *
 * The tuples are formed from the SELECT's columns without the coercions
 * of an INSERT, so the path is taken only when that changes nothing: the
 * columns' types agree, and the tables run nothing an INSERT would run
 * besides the heap insert: no index (batch.c dropped them for the load,
 * to build them after it) but pg_cq's own on the key hash, which the load
 * builds itself after it from the hashes and TIDs of the rows it wrote
 * (cq_bulk_index_plan, rowload.c), no trigger, rule, row-level security, CHECK
 * constraint, generated or identity column, every column of the target
 * one of the query's outputs, and the current user (the query's owner)
 * holds INSERT on both; NOT NULL is checked here as the executor checks
 * it.  Otherwise (cq_bulk_fold returns false before it runs anything) the
 * batch statement runs as before.  cq.bulk_load = off turns the path off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "bulkload.h"
#include "citus.h"
#include "delta.h"
#include "guc.h"
#include "rowload.h"
#include "sql_builder.h"
#include "state.h"
#include "sink.h"
#include "store.h"

/* The receiver of the load's SELECT. */
typedef struct BulkDest
{
	DestReceiver pub;
	Relation	state;
	Relation	target;
	int		   *smap;			/* per state attribute: its SELECT column (0-based), -1 dropped */
	int		   *tmap;			/* the same per target attribute */
	int			ncol;			/* SELECT column of the group's row count n */
	int			hcol;			/* SELECT column of the key hash h, -1 without */
	int			having_col;		/* SELECT column of HAVING, -1 without */
	CqRowLoad  *sload;			/* the state's rows (rowload.c) */
	CqRowLoad  *tload;			/* the target's */
	MemoryContext rowcxt;
	CqBulkResult *res;
} BulkDest;

/*
 * cq_bulk_sql
 *	  The SELECT of a direct load of batch 0 over history, or NULL when the
 *	  query is not one the path serves: an update-mode aggregation with
 *	  GROUP BY on the table path without event time, windows the
 *	  watermark closes, DISTINCT aggregates, session windows or a join of
 *	  streams.  Its columns: the state row (g1..gN, n, p1..pK, h when the
 *	  state is keyed by a hash), the query's outputs, then HAVING as a
 *	  boolean (when the query has one), all over d, the batch statement's
 *	  partial aggregates.  untested: over the history without the test of
 *	  cq_xid (cq_delta_history_all_sql; NULL where that cannot be).
 */
char *
cq_bulk_sql(CqAnalysis *an, CqQuery *q, Oid viewid, bool untested)
{
	StringInfoData buf;
	char	   *having;
	int			nparts = list_length(an->parts);

	if (!an->is_aggregate || an->is_dedup || an->session || an->distinct_sets != NIL ||
		an->group_exprs == NIL || cq_state_evicts(an) || q->opts.mode != CQ_MODE_UPDATE ||
		an->join != NULL || an->et_attno != InvalidAttrNumber ||
		!OidIsValid(q->state_table) || !OidIsValid(viewid) ||
		(untested && !cq_delta_history_all_ok(an)))
		return NULL;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	if (untested)
		cq_state_delta_cte_all(&buf, an);
	else
		cq_state_delta_cte(&buf, an, true);
	appendStringInfoString(&buf, " SELECT ");
	cq_state_append_group_cols(&buf, an, "f.", ", ");
	appendStringInfoString(&buf, ", f._s_n");
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(&buf, ", f._s_p%d", p);
	if (an->hash_keys)
		appendStringInfo(&buf, ", f._s_%s", CQ_KEY_HASH_COLUMN);
	appendStringInfo(&buf, ", %s", cq_sink_output_list(an, viewid));
	having = cq_sink_having_sql(an, viewid);
	if (having)
		appendStringInfo(&buf, ", ((%s) IS TRUE)", having);
	appendStringInfo(&buf, " FROM (SELECT %s, s.n AS _s_n", cq_state_final_select_list(an));
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(&buf, ", s.p%d AS _s_p%d", p, p);
	if (an->hash_keys)
		appendStringInfo(&buf, ", s.%s AS _s_%s", CQ_KEY_HASH_COLUMN, CQ_KEY_HASH_COLUMN);
	appendStringInfoString(&buf, " FROM d s) f");
	return buf.data;
}

/*
 * cq_bulk_index_plan
 *	  Before batch 0 over history of a query whose direct load may run
 *	  (cq_bulk_sql): can that load build the indexes of the state and the
 *	  target itself (cq_rowload_buildable_index)?  Then *ix names them, their locks
 *	  are taken, and batch.c leaves them in place; otherwise false, and
 *	  batch.c drops them for the load and builds them after it by their
 *	  definitions, as before.  Only for a state keyed by the key hash h, on
 *	  a target the current user (the query's owner) owns.
 */
bool
cq_bulk_index_plan(CqAnalysis *an, CqQuery *q, CqBulkIndexes *ix)
{
	Relation	state;
	Relation	target;
	bool		ok;

	memset(ix, 0, sizeof(*ix));
	if (!cq_bulk_load || !an->hash_keys || !OidIsValid(q->state_table) || !OidIsValid(q->target) ||
		get_rel_relkind(q->target) != RELKIND_RELATION || !pg_class_ownercheck(q->target, GetUserId()))
		return false;
	state = table_open(q->state_table, RowExclusiveLock);
	target = table_open(q->target, RowExclusiveLock);
	ok = cq_rowload_buildable_index(target, cq_sink_target_key_attnums(an, target), &ix->target_index) &&
		cq_rowload_buildable_index(state, NIL, &ix->state_index);
	table_close(target, NoLock);
	table_close(state, NoLock);
	return ok;
}

/*
 * bulk_startup, bulk_receive, bulk_shutdown, bulk_destroy
 *	  The DestReceiver: every group to the state, those HAVING keeps to the
 *	  target.
 */
static void
bulk_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static bool
bulk_receive(TupleTableSlot *slot, DestReceiver *self)
{
	BulkDest   *d = (BulkDest *) self;
	MemoryContext old = MemoryContextSwitchTo(d->rowcxt);

	int32		h;

	slot_getallattrs(slot);
	h = d->hcol >= 0 ? DatumGetInt32(slot->tts_values[d->hcol]) : 0;
	cq_rowload_values(d->sload, d->smap, slot->tts_values, slot->tts_isnull, h);
	d->res->groups++;
	d->res->input_rows += DatumGetInt64(slot->tts_values[d->ncol]);
	if (d->having_col < 0 ||
		(!slot->tts_isnull[d->having_col] && DatumGetBool(slot->tts_values[d->having_col])))
	{
		cq_rowload_values(d->tload, d->tmap, slot->tts_values, slot->tts_isnull, h);
		d->res->output_rows++;
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(d->rowcxt);
	return true;
}

static void
bulk_shutdown(DestReceiver *self)
{
}

static void
bulk_destroy(DestReceiver *self)
{
}

static bool bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, bool read_only, int nargs,
					  Oid *types, Datum *values, const char *nulls, const CqBulkIndexes *ix,
					  CqBulkResult *res);

/* cq_bulk_fold's run: the direct load, read-only in cq_delta_run_history's snapshot */
typedef struct BulkRun
{
	CqAnalysis *an;
	CqQuery    *q;
	int			nargs;
	Oid		   *types;
	Datum	   *values;
	const char *nulls;
	const CqBulkIndexes *ix;
	CqBulkResult *res;
} BulkRun;

static bool
bulk_run(const char *sql, void *arg)
{
	BulkRun    *r = (BulkRun *) arg;

	return bulk_fold(r->an, r->q, sql, true, r->nargs, r->types, r->values, r->nulls, r->ix, r->res);
}

/*
 * cq_bulk_fold
 *	  Run batch 0 over history of the query as a direct load: sql is its
 *	  cq_bulk_sql, run with the batch statement's parameters, or sql_all
 *	  (cq_bulk_sql untested, or NULL) when every row of the source passes
 *	  the test of cq_xid (cq_delta_run_history decides, as for the store's
 *	  batch 0).  Returns
 *	  false, having done nothing, when the path does not apply now
 *	  (cq.bulk_load off, or the state or target not as the file header
 *	  says; indexes still there when batch.c could not drop them).  Runs
 *	  as the query's owner, in the batch's SPI connection; the state and
 *	  target are empty.
 */
bool
cq_bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, const char *sql_all, int nargs,
			 Oid *types, Datum *values, const char *nulls, const CqBulkIndexes *ix,
			 CqBulkResult *res)
{
	BulkRun		r = {an, q, nargs, types, values, nulls, ix, res};
	bool		untested;
	bool		done;

	if (sql_all == NULL || !cq_bulk_load || nargs < 3)
		return bulk_fold(an, q, sql, false, nargs, types, values, nulls, ix, res);
	done = cq_delta_run_history(an->source_relid, values[2], sql, sql_all, bulk_run, &r,
								&untested);
	res->untested = done && untested;
	if (res->untested)
		elog(DEBUG1, "pg_cq: table fold: batch 0 read the history's rows without testing cq_xid");
	return done;
}

/*
 * bulk_fold
 *	  cq_bulk_fold with the statement sql; read_only: in the active
 *	  snapshot rather than a new one.
 */
static bool
bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, bool read_only, int nargs, Oid *types,
		  Datum *values, const char *nulls, const CqBulkIndexes *ix, CqBulkResult *res)
{
	CqBulkIndexes none = {InvalidOid, InvalidOid};
	SPIPlanPtr	plan;
	List	   *sources;
	TupleDesc	result;
	Relation	state;
	Relation	target;
	int			ngroups = list_length(an->group_exprs);
	int			nparts = list_length(an->parts);
	int			nstate = ngroups + 1 + nparts + (an->hash_keys ? 1 : 0);
	int			nout = list_length(an->outputs);
	char	  **snames;
	char	  **tnames;
	int			k = 0;
	bool		ok;
	BulkDest	d;
	ParamListInfo params;
	SPIExecuteOptions opts;
	ListCell   *lc;

	memset(res, 0, sizeof(*res));
	/* (a Citus source: its distributed SELECT is left to the statement) */
	if (!cq_bulk_load || sql == NULL || cq_citus_kind(an->source_relid) != CQ_CITUS_NONE)
		return false;
	plan = cq_spi_plan(sql, nargs, types);
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1 || ((CachedPlanSource *) linitial(sources))->resultDesc == NULL)
		return false;
	result = ((CachedPlanSource *) linitial(sources))->resultDesc;
	if (result->natts != nstate + nout + (an->query->havingQual ? 1 : 0))
		return false;

	/* the SELECT's columns for the state, then the target */
	snames = palloc(sizeof(char *) * nstate);
	for (int g = 1; g <= ngroups; g++)
		snames[k++] = psprintf("g%d", g);
	snames[k++] = "n";
	for (int p = 1; p <= nparts; p++)
		snames[k++] = psprintf("p%d", p);
	if (an->hash_keys)
		snames[k++] = CQ_KEY_HASH_COLUMN;
	tnames = palloc(sizeof(char *) * nout);
	k = 0;
	foreach(lc, an->outputs)
		tnames[k++] = ((TargetEntry *) lfirst(lc))->resname;

	state = table_open(q->state_table, RowExclusiveLock);
	target = table_open(q->target, RowExclusiveLock);
	memset(&d, 0, sizeof(d));
	d.smap = palloc(sizeof(int) * RelationGetDescr(state)->natts);
	d.tmap = palloc(sizeof(int) * RelationGetDescr(target)->natts);
	if (ix == NULL || !an->hash_keys)
		ix = &none;
	ok = cq_rowload_plain_table(state, ix->state_index) &&
		cq_rowload_plain_table(target, ix->target_index) &&
		cq_rowload_map_columns(state, result, 0, snames, nstate, d.smap) &&
		cq_rowload_map_columns(target, result, nstate, tnames, nout, d.tmap) &&
		TupleDescAttr(result, ngroups)->atttypid == INT8OID &&
		(an->query->havingQual == NULL || TupleDescAttr(result, nstate + nout)->atttypid == BOOLOID) &&
		(!OidIsValid(ix->target_index) ||
		 cq_rowload_same_key_columns(target, cq_sink_target_key_attnums(an, target), result, ngroups));
	if (!ok)
	{
		table_close(target, NoLock);
		table_close(state, NoLock);
		return false;
	}

	d.pub.receiveSlot = bulk_receive;
	d.pub.rStartup = bulk_startup;
	d.pub.rShutdown = bulk_shutdown;
	d.pub.rDestroy = bulk_destroy;
	d.pub.mydest = DestNone;
	d.state = state;
	d.target = target;
	d.ncol = ngroups;
	d.hcol = an->hash_keys ? nstate - 1 : -1;
	d.having_col = an->query->havingQual ? nstate + nout : -1;
	d.sload = cq_rowload_begin(state, TABLE_INSERT_SKIP_FSM,
							   (OidIsValid(ix->state_index) ? CQ_ROWLOAD_KEYS : 0) | CQ_ROWLOAD_DIRECT);
	d.tload = cq_rowload_begin(target, 0, (OidIsValid(ix->target_index) ? CQ_ROWLOAD_KEYS : 0) |
							   CQ_ROWLOAD_DIRECT);
	d.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq bulk load row",
									 ALLOCSET_DEFAULT_SIZES);
	d.res = res;

	params = makeParamList(nargs);
	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = nulls[i] == 'n';
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = types[i];
	}
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = read_only;
	opts.dest = (DestReceiver *) &d;
	if (SPI_execute_plan_extended(plan, &opts) < 0)
		elog(ERROR, "pg_cq: the direct load of batch 0 failed");
	(void) cq_rowload_finish(d.sload);
	(void) cq_rowload_finish(d.tload);
	MemoryContextDelete(d.rowcxt);
	CommandCounterIncrement();
	if (OidIsValid(ix->state_index) || OidIsValid(ix->target_index))
	{
		double		t0 = cq_store_cpu_ms();

		if (OidIsValid(ix->state_index))
		{
			cq_rowload_build_index(d.sload, ix->state_index);
			res->state_index_built = true;
		}
		if (OidIsValid(ix->target_index))
		{
			cq_rowload_build_index(d.tload, ix->target_index);
			res->target_index_built = true;
		}
		elog(DEBUG1, "pg_cq: table fold: batch 0's indexes built from the load's key hashes %.3f ms (CPU time)",
			 cq_store_cpu_ms() - t0);
	}
	table_close(target, NoLock);
	table_close(state, NoLock);
	return true;
}
