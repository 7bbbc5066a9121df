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

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "parser/parse_relation.h"
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
	target = try_table_open(q->target, RowExclusiveLock);
	if (target == NULL)
		return false;
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
	/* a target dropped since the batch began: the statement gives its error */
	rel = try_table_open(sql->target, RowExclusiveLock);
	if (rel == NULL)
		return NULL;
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
	/*
	 * COPY's ring beyond the blocks that batch 0 reads back into shared
	 * buffers at its end, in buffers of their own before (cq_rowload_begin):
	 * the read-back takes the target's heap in update mode alone (batch.c),
	 * the only mode whose batch 0 loads its target here (load_result needs
	 * sink_history_plain, which store_sql.c sets for update mode only)
	 */
	Assert(sql->sink_history_plain);
	tl->load = cq_rowload_begin(rel, 0, (OidIsValid(index) ? CQ_ROWLOAD_KEYS : 0) | CQ_ROWLOAD_RING |
								CQ_ROWLOAD_CACHED | CQ_ROWLOAD_DIRECT);
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

/*
 * New groups of a later batch, written from C.
 *
 * A batch whose changed groups are all new to the state (every _ins of m
 * true, as when a time-series query's new rows open new minutes) runs
 * sink_new, a plain INSERT of their target rows.  Where that INSERT does
 * nothing but heap inserts and the index entries of the target's one index,
 * pg_cq's btree on hash_record(ROW(keys)), the rows of load_new (the same
 * target rows, after each group's key hash h) go to the target as COPY
 * writes them (rowload.c, buffered, one WAL record per page) and each row's
 * index entry is inserted with the h the store computed for the group
 * (the same value: cq_store_set_h, checked as for batch 0 by the key
 * columns' types and collations), sparing the executor's insert of each
 * row and the evaluation of the index's expression.  The conditions are
 * batch 0's (cq_target_load_begin), checked in every such batch under the
 * target's lock: a plain table (no trigger, rule, row-level security,
 * CHECK, generated or identity column; not a Citus table), INSERT granted
 * to the current user (the query's owner), every column an output of the
 * same type; and that index its only one, ready and valid.
 */
typedef struct NewReceiver
{
	DestReceiver pub;
	CqTargetLoad *tl;
} NewReceiver;

/* receiveSlot: the target row of one group (h, the outputs, HAVING) */
static bool
new_receive(TupleTableSlot *slot, DestReceiver *self)
{
	CqTargetLoad *tl = ((NewReceiver *) self)->tl;

	slot_getallattrs(slot);
	/* every group of m was put by fold_row, which set its h */
	if (slot->tts_isnull[0])
		elog(ERROR, "pg_cq: a new group without its key hash");
	cq_target_load_row(tl, slot->tts_values, slot->tts_isnull, DatumGetInt32(slot->tts_values[0]));
	return true;
}

static void
new_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
new_shutdown(DestReceiver *self)
{
}

/*
 * cq_target_key_index
 *	  The target's only index if it is pg_cq's key-hash index over the
 *	  columns of the grouping keys, each of the type of the state's key
 *	  column and of the collation the store hashes that key with (coll: so
 *	  the store's h is its value); else InvalidOid.  Also for the changed
 *	  groups written from C (store_update.c).
 */
Oid
cq_target_key_index(const CqStoreSql *sql, Relation rel, TupleDesc state, const Oid *coll)
{
	List	   *indexes = RelationGetIndexList(rel);
	List	   *keys = NIL;
	Relation	idx;
	Form_pg_index ix;
	bool		ok;

	if (list_length(indexes) != 1 || sql->nkeys == 0 || sql->nkeys > state->natts)
		return InvalidOid;
	for (int g = 0; g < sql->nkeys; g++)
	{
		AttrNumber	att = sql->key_outs[g] < 0 ? InvalidAttrNumber :
			attnameAttNum(rel, sql->out_names[sql->key_outs[g]], false);
		Form_pg_attribute t;

		if (att <= 0)
			return InvalidOid;
		t = TupleDescAttr(RelationGetDescr(rel), att - 1);
		if (t->atttypid != TupleDescAttr(state, g)->atttypid ||
			t->attcollation != coll[g])
			return InvalidOid;
		keys = lappend_int(keys, att);
	}
	idx = index_open(linitial_oid(indexes), RowExclusiveLock);
	ix = idx->rd_index;
	/* one column: no INCLUDE column, whose value the row's entry would lack */
	ok = ix->indnatts == 1 &&
		!ix->indisunique && !ix->indisexclusion && ix->indisvalid && ix->indisready && ix->indislive &&
		TupleDescAttr(RelationGetDescr(idx), 0)->atttypid == INT4OID &&
		cq_sink_is_key_hash_index(idx, keys);
	index_close(idx, NoLock);
	return ok ? linitial_oid(indexes) : InvalidOid;
}

/*
 * cq_target_load_new
 *	  Write the target rows of m's groups, all new (see above; m is
 *	  registered, groups of them), from C; false when the path does not
 *	  apply: nothing was done, the caller runs sink_new.  *written: the
 *	  rows written (HAVING leaves some groups out).  state: the state row;
 *	  coll: per grouping key, the collation the store hashes it with.
 */
bool
cq_target_load_new(const CqStoreSql *sql, TupleDesc state, const Oid *coll, uint64 groups,
				   int64 *written)
{
	SPIPlanPtr	plan;
	List	   *sources;
	TupleDesc	result;
	Relation	rel;
	Oid			index;
	CqTargetLoad tl;
	NewReceiver recv;
	SPIExecuteOptions options;

	if (!cq_bulk_load || sql->load_new == NULL || !OidIsValid(sql->target))
		return false;
	plan = cq_spi_plan_rows(sql->load_new, 0, NULL, groups);
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		return false;
	result = ((CachedPlanSource *) linitial(sources))->resultDesc;
	if (result == NULL || result->natts != 1 + sql->nout + (sql->having ? 1 : 0) ||
		TupleDescAttr(result, 0)->atttypid != INT4OID ||
		(sql->having && TupleDescAttr(result, result->natts - 1)->atttypid != BOOLOID))
		return false;
	rel = try_table_open(sql->target, RowExclusiveLock);
	if (rel == NULL)
		return false;			/* dropped: the statement gives its error */
	memset(&tl, 0, sizeof(tl));
	tl.map = palloc(sizeof(int) * RelationGetDescr(rel)->natts);
	index = cq_target_key_index(sql, rel, state, coll);
	if (!OidIsValid(index) || !cq_rowload_plain_table(rel, index) ||
		!cq_rowload_map_columns(rel, result, 1, sql->out_names, sql->nout, tl.map))
	{
		table_close(rel, NoLock);
		return false;
	}
	tl.rel = rel;
	tl.having_col = sql->having ? 1 + sql->nout : -1;
	tl.index = InvalidOid;
	/* no ring: the pages stay in shared buffers, as the INSERT's would */
	tl.load = cq_rowload_begin(rel, 0, 0);
	cq_rowload_index_inserts(tl.load, index);

	memset(&recv, 0, sizeof(recv));
	recv.pub.receiveSlot = new_receive;
	recv.pub.rStartup = new_startup;
	recv.pub.rShutdown = new_shutdown;
	recv.pub.rDestroy = new_shutdown;
	/* any tag but DestNone and DestSPI: SPI reports SPI_OK_SELECT, keeps no rows */
	recv.pub.mydest = DestTuplestore;
	recv.tl = &tl;
	memset(&options, 0, sizeof(options));
	options.dest = (DestReceiver *) &recv;
	if (SPI_execute_plan_extended(plan, &options) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: target statement failed");
	*written = cq_rowload_finish(tl.load);
	CommandCounterIncrement();
	table_close(rel, NoLock);
	elog(DEBUG1, "pg_cq: store fold: %lld target rows of new groups written from C",
		 (long long) *written);
	return true;
}
