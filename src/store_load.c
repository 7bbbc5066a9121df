/*-------------------------------------------------------------------------
 *
 * store_load.c
 *	  Batch 0 over history of an update query on the store writes every
 *	  group to the empty target.  Instead of keeping the groups in m (a
 *	  tuplestore of copies) and running the plain INSERT over it (the
 *	  executor's insert of each row, a WAL record per row), the batch's d
 *	  statement also computes each group's target row, its outputs and
 *	  HAVING as that INSERT computes them from the state row (the load
 *	  statement, CqStoreSql.load_history), and store_fold.c's receiver
 *	  hands those rows here as the executor makes them: they go to the
 *	  target as COPY writes them (rowload.c).
 *
 * The rows are formed from the statement's columns without the coercions
 * of an INSERT, so the path is taken only when that changes nothing, as
 * for the table path's direct load (bulkload.c): every column of the target
 * is an output of the same type, and the target runs nothing an INSERT
 * would run besides the heap insert (no trigger, rule, row-level security,
 * CHECK, generated or identity column: cq_rowload_plain_table), it is not
 * a Citus table, and the current user (the query's owner) holds INSERT on
 * it; NOT NULL is checked as the executor checks it.  Otherwise
 * cq_target_load_begin returns NULL and the batch runs the INSERT.
 *
 * The target's index: batch.c asks first whether the load can build it
 * (cq_target_load_index_plan): pg_cq's btree on hash_record(ROW(keys)),
 * built from the key hash h the store computes for each group (the same
 * value, cq_store_set_h) and the TIDs of the rows written, as bulkload.c
 * builds the table path's (cq_rowload_build_index); else batch.c drops
 * it for the load and builds it again after by its definition.
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
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"

#include "store_load.h"
#include "guc.h"
#include "rowload.h"
#include "sink.h"
#include "sql_builder.h"
#include "store.h"

struct CqTargetLoad
{
	Relation	rel;
	int		   *map;			/* per target attribute: its statement column, -1 dropped */
	int			having_col;		/* statement column of HAVING, -1 without */
	Oid			index;			/* the index built from the load's keys, or InvalidOid */
	CqRowLoad  *load;
};

/*
 * load_result
 *	  The result of the load statement of sql, or NULL when batch 0 does
 *	  not write its target by a load (cq.bulk_load off, a target
 *	  statement that reads more than the state row).  The measurement
 *	  split (cq.bench_split_batch) keeps the load since session 32: its
 *	  profile is the path the batch takes.
 */
static TupleDesc
load_result(const CqStoreSql *sql)
{
	Oid			types[4] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};
	List	   *sources;

	if (!cq_bulk_load || !sql->sink_history_plain || sql->load_history == NULL)
		return NULL;
	sources = SPI_plan_get_plan_sources(cq_spi_plan(sql->load_history, 4, types));
	if (list_length(sources) != 1)
		return NULL;
	return ((CachedPlanSource *) linitial(sources))->resultDesc;
}

/*
 * cq_target_load_index_plan
 *	  Before batch 0 over history of a query on the store whose target
 *	  rows may be loaded (cq_target_load_begin): can that load build the
 *	  target's index itself (cq_rowload_buildable_index)?  Then *index
 *	  names it (InvalidOid: the target has none), its locks are taken, and
 *	  batch.c leaves it in place; otherwise false, and batch.c drops it for
 *	  the load and builds it after by its definition.  Only for a state
 *	  keyed by the key hash, whose grouping keys hash as the target's key
 *	  columns do, on a target the current user (the query's owner) owns.
 *	  In the batch's SPI connection.
 */
bool
cq_target_load_index_plan(CqAnalysis *an, CqQuery *q, const CqStoreSql *sql, Oid *index)
{
	TupleDesc	result;
	Relation	target;
	List	   *keys;
	bool		ok;

	*index = InvalidOid;
	if (!an->hash_keys || an->group_exprs == NIL || !OidIsValid(q->target) ||
		get_rel_relkind(q->target) != RELKIND_RELATION || !pg_class_ownercheck(q->target, GetUserId()) ||
		(result = load_result(sql)) == NULL)
		return false;
	target = table_open(q->target, RowExclusiveLock);
	keys = cq_sink_target_key_attnums(an, target);
	ok = cq_rowload_same_key_columns(target, keys, result, list_length(an->group_exprs)) &&
		cq_rowload_buildable_index(target, keys, index);
	table_close(target, NoLock);
	return ok;
}

/*
 * cq_target_load_begin
 *	  Start writing the target rows of sql's load statement (its columns:
 *	  the state row and what follows it, then the query's outputs, then
 *	  HAVING as a boolean when sql->having) into the empty target, or NULL
 *	  when the path does not apply (see the file header): nothing was done.
 *	  index: the one index the target may have, which the load builds
 *	  (cq_target_load_index_plan), or InvalidOid.
 */
CqTargetLoad *
cq_target_load_begin(const CqStoreSql *sql, Oid index)
{
	TupleDesc	result = load_result(sql);
	int			first;
	Relation	rel;
	CqTargetLoad *tl;

	if (result == NULL || !OidIsValid(sql->target))
		return NULL;
	first = result->natts - sql->nout - (sql->having ? 1 : 0);
	if (first < 0 || (sql->having && TupleDescAttr(result, result->natts - 1)->atttypid != BOOLOID))
		return NULL;
	rel = table_open(sql->target, RowExclusiveLock);
	tl = palloc0(sizeof(CqTargetLoad));
	tl->map = palloc(sizeof(int) * RelationGetDescr(rel)->natts);
	if (!cq_rowload_plain_table(rel, index) ||
		!cq_rowload_map_columns(rel, result, first, sql->out_names, sql->nout, tl->map))
	{
		table_close(rel, NoLock);
		return NULL;
	}
	tl->rel = rel;
	tl->having_col = sql->having ? first + sql->nout : -1;
	tl->index = index;
	/* COPY's ring: nothing reads the pages back in the batch (cq_rowload_begin) */
	tl->load = cq_rowload_begin(rel, 0, (OidIsValid(index) ? CQ_ROWLOAD_KEYS : 0) | CQ_ROWLOAD_RING);
	return tl;
}

/*
 * cq_target_load_row
 *	  The target row of a statement row (values/isnull), whose group's key
 *	  hash is h, unless HAVING leaves the group out.
 */
void
cq_target_load_row(CqTargetLoad *tl, Datum *values, bool *isnull, int32 h)
{
	if (tl->having_col >= 0 && (isnull[tl->having_col] || !DatumGetBool(values[tl->having_col])))
		return;
	cq_rowload_values(tl->load, tl->map, values, isnull, h);
}

/*
 * cq_target_load_end
 *	  Insert the rows still buffered, build the target's index from their
 *	  keys (when it has one), release the load; returns the rows written.
 */
int64
cq_target_load_end(CqTargetLoad *tl)
{
	int64		rows = cq_rowload_finish(tl->load);

	CommandCounterIncrement();
	if (OidIsValid(tl->index))
	{
		double		t0 = cq_store_cpu_ms();

		cq_rowload_build_index(tl->load, tl->index);
		elog(DEBUG1, "pg_cq: store fold: batch 0's target index built from the load's key hashes %.3f ms (CPU time)",
			 cq_store_cpu_ms() - t0);
	}
	table_close(tl->rel, NoLock);
	return rows;
}
