/*-------------------------------------------------------------------------
 *
 * delta.c
 *	  The new rows of a batch: the offset-range predicate on cq_xid, the
 *	  user's query restricted to it, and the count statement.
 *
 * The user's expressions are never edited as text: the analyzed tree gets
 * the predicate as a qual and is deparsed with search_path pinned to
 * pg_catalog (security.c), so every name is schema-qualified.  The
 * predicate reads the batch parameters $1..$4 (see plan.c).  Everything
 * here only builds SQL text; nothing runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "nodes/readfuncs.h"

#include "delta.h"
#include "security.h"
#include "sql_builder.h"
#include "analyze.h"
#include "tracking.h"
#include "citus.h"
#include "catalog.h"
#include "stamp_type.h"

static char *inner_sql(CqAnalysis *an, Node *restriction, bool bytewise);

/*
 * cq_make_param
 *	  An external parameter $n of the given type.
 */
Param *
cq_make_param(int n, Oid type)
{
	Param	   *p = makeNode(Param);

	p->paramkind = PARAM_EXTERN;
	p->paramid = n;
	p->paramtype = type;
	p->paramtypmod = -1;
	p->paramcollid = InvalidOid;
	p->location = -1;
	return p;
}

/*
 * xid8_op
 *	  cq_xid <op> $n ($n an xid8), with the operator of the column's type:
 *	  xid8's own, or cq.xid48's (cq.xid48, xid8), which the BRIN index's
 *	  family holds.
 */
static Expr *
xid8_op(const char *op, Var *xid, int param)
{
	return make_opclause(cq_stamp_operator(xid->vartype, op), BOOLOID, false, (Expr *) xid,
						 (Expr *) cq_make_param(param, XID8OID), InvalidOid, InvalidOid);
}

/*
 * as_xid8
 *	  cq_xid as an xid8: itself, or a cq.xid48 through its implicit cast
 *	  (for pg_visible_in_snapshot and cq.node_visible, which take xid8).
 */
static Expr *
as_xid8(Var *xid)
{
	Oid			cast;

	if (xid->vartype == XID8OID)
		return (Expr *) xid;
	cast = cq_catalog_function("xid48_to_xid8", 1, &xid->vartype);
	if (!OidIsValid(cast))
		elog(ERROR, "pg_cq: function cq.xid48_to_xid8 not found");
	return (Expr *) makeFuncExpr(cast, XID8OID, list_make1(xid), InvalidOid, InvalidOid,
								 COERCE_IMPLICIT_CAST);
}

/*
 * visible_in
 *	  pg_visible_in_snapshot(cq_xid, $n)
 */
static Expr *
visible_in(Var *xid, int param)
{
	return (Expr *) makeFuncExpr(F_PG_VISIBLE_IN_SNAPSHOT, BOOLOID,
								 list_make2(as_xid8(xid), cq_make_param(param, PG_SNAPSHOTOID)),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * cq_delta_xid_new_function
 *	  OID of cq.xid_new(xid8, pg_snapshot, pg_snapshot) (cq.xid48_new(cq.xid48,
 *	  ...) for a cq.xid48 cq_xid: an overload of cq.xid_new would make a call
 *	  with an untyped literal ambiguous) for the predicate over source, or
 *	  InvalidOid before
 *	  the 0.2 catalog and for a Citus table (whose predicate runs on the
 *	  workers, which need not have it): then the batch predicate keeps its
 *	  two pg_visible_in_snapshot() calls.  Looked up whenever SQL is built
 *	  (not cached: an extension dropped and created again gets a new OID).
 */
Oid
cq_delta_xid_new_function(Oid source)
{
	Oid			types[3] = {XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};

	if (cq_catalog_version() < CQ_CATALOG_0_2 || cq_citus_kind(source) != CQ_CITUS_NONE)
		return InvalidOid;
	types[0] = cq_delta_stamp_type(source);
	return cq_catalog_function(cq_delta_xid_new_name(types[0]), 3, types);
}

/*
 * cq_delta_xid_new_name
 *	  The name in schema cq of the batch's row test for a cq_xid of type
 *	  type (cq_delta_xid_new_function).
 */
const char *
cq_delta_xid_new_name(Oid type)
{
	return type == XID8OID ? "xid_new" : "xid48_new";
}

/*
 * cq_delta_stamp_type
 *	  The type of source's cq_xid: xid8 or cq.xid48 (xid8 when it has
 *	  none, for the callers' defaults; cq_delta_quals reports that).
 */
Oid
cq_delta_stamp_type(Oid source)
{
	Oid			type = cq_stamp_type_of(source, cq_source_tracking_attnum(source));

	return OidIsValid(type) ? type : XID8OID;
}

/*
 * cq_delta_pred_sql
 *	  cq_delta_quals as text over the column cq_xid of source, for the
 *	  statements that count a batch's rows (plan.c); not for sources
 *	  stamped per node.  The bounds' operators are the column type's,
 *	  spelled OPERATOR(schema.op) (cq_stamp_operator_sql says why); xid8's
 *	  stay bare, as before (the statements run under search_path =
 *	  pg_catalog, pg_temp).
 */
char *
cq_delta_pred_sql(Oid source, bool history)
{
	const char *x = CQ_TRACKING_COLUMN;
	Oid			type = cq_delta_stamp_type(source);
	const char *ge = type == XID8OID ? ">=" : cq_stamp_operator_sql(type, ">=");
	const char *lt = type == XID8OID ? "<" : cq_stamp_operator_sql(type, "<");
	Oid			xid_new = cq_delta_xid_new_function(source);

	if (history)
		return psprintf("%s IS NULL OR pg_catalog.pg_visible_in_snapshot(%s, $3)", x, x);
	if (OidIsValid(xid_new))
		return psprintf("%1$s %2$s $1 AND %1$s %3$s $2 AND cq.%4$s(%1$s, $3, $4)", x, ge, lt,
						cq_delta_xid_new_name(type));
	return psprintf("%1$s %2$s $1 AND %1$s %3$s $2 AND pg_catalog.pg_visible_in_snapshot(%1$s, $3) "
					"AND NOT pg_catalog.pg_visible_in_snapshot(%1$s, $4)", x, ge, lt);
}

/*
 * node_visible_in
 *	  cq.node_visible($n, cq_node, cq_xid): a source stamped per node
 *	  (citus.c), $n a per-node offset (text).
 */
static Expr *
node_visible_in(Var *xid, Var *node, int param)
{
	return (Expr *) makeFuncExpr(cq_citus_node_visible_function(), BOOLOID,
								 list_make3(cq_make_param(param, TEXTOID), node, xid),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * cq_delta_quals
 *	  The rows of the source new in this batch: visible in S_cur and not in
 *	  S_prev, restricted to the transaction-id range [$1, $2) so that the
 *	  BRIN index on cq_xid bounds the scan.  The history variant (batch 0
 *	  with starting = earliest) also reads rows from before tracking began,
 *	  whose cq_xid is NULL.
 */
Node *
cq_delta_quals(CqAnalysis *an, bool history)
{
	AttrNumber	att = cq_source_tracking_attnum(an->source_relid);
	Var		   *xid;
	Expr	   *range;

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" has no column \"%s\"",
						get_rel_name(an->source_relid), CQ_TRACKING_COLUMN),
				 errdetail("pg_cq finds new rows through that column."),
				 errhint("Recreate the continuous query to track the source again.")));
	/* the column's type: xid8, or cq.xid48 (by reference) */
	xid = makeVar(an->source_rti, att, cq_delta_stamp_type(an->source_relid), -1, InvalidOid, 0);
	if (cq_citus_node_source(an->source_relid))
	{
		/*
		 * Stamped per node: [$1, $2) bounds every node's new ids (the BRIN
		 * index), and each row is judged by the snapshots of the node that
		 * stamped it in the per-node offsets $3 and $4 (text).
		 */
		Var		   *node = makeVar(an->source_rti, get_attnum(an->source_relid, CQ_NODE_COLUMN),
								   INT8OID, -1, InvalidOid, 0);

		range = make_andclause(list_make4(xid8_op(">=", xid, 1),
										  xid8_op("<", xid, 2),
										  node_visible_in(xid, node, 3),
										  make_notclause(node_visible_in(copyObject(xid), copyObject(node), 4))));
		if (history)
		{
			NullTest   *nt = makeNode(NullTest);

			nt->arg = (Expr *) copyObject(xid);
			nt->nulltesttype = IS_NULL;
			nt->location = -1;
			range = make_orclause(list_make2(nt, make_andclause(list_make2(xid8_op("<", xid, 2),
																			node_visible_in(xid, node, 3)))));
		}
		return (Node *) range;
	}
	if (history)
	{
		/*
		 * Batch 0 with starting = earliest: S_prev sees nothing, so the rows
		 * are the history rows (NULL) and those visible in S_cur; testing
		 * NULL first keeps the per-row cost of a large backlog low.  No
		 * range: the batch reads the whole table, and visible in S_cur
		 * implies cq_xid < xmax(S_cur) = $2.
		 */
		NullTest   *nt = makeNode(NullTest);

		nt->arg = (Expr *) xid;
		nt->nulltesttype = IS_NULL;
		nt->location = -1;
		return (Node *) make_orclause(list_make2(nt, visible_in(copyObject(xid), 3)));
	}

	/*
	 * [$1, $2) bounds the scan (the BRIN index); the snapshots decide.  The
	 * range is implied by them (visible in S_cur: below its xmax, $2; not
	 * visible in S_prev: at or above its xmax, or running then and so not
	 * below the low bound $1), so the test is one call to cq.xid_new when
	 * the catalog has it.
	 */
	{
		Oid			xid_new = cq_delta_xid_new_function(an->source_relid);

		if (OidIsValid(xid_new))
			return (Node *) make_andclause(list_make3(xid8_op(">=", xid, 1),
													  xid8_op("<", xid, 2),
													  makeFuncExpr(xid_new, BOOLOID,
																   list_make3(copyObject(xid),
																			  cq_make_param(3, PG_SNAPSHOTOID),
																			  cq_make_param(4, PG_SNAPSHOTOID)),
																   InvalidOid, InvalidOid,
																   COERCE_EXPLICIT_CALL)));
	}
	range = make_andclause(list_make4(xid8_op(">=", xid, 1),
									  xid8_op("<", xid, 2),
									  visible_in(xid, 3),
									  make_notclause(visible_in(xid, 4))));
	return (Node *) range;
}

/*
 * cq_delta_inner_sql
 *	  The user's query restricted to new rows.  For aggregations its select
 *	  list becomes the grouping keys g<i>, aggregate arguments x<i> and
 *	  FILTER conditions f<i>; stateless queries keep theirs.
 */
char *
cq_delta_inner_sql(CqAnalysis *an, bool history)
{
	/* an aggregation over a join of two streams: the batch's matches (join.c) */
	if (an->join_delta_sql)
		return pstrdup(an->join_delta_sql);
	return inner_sql(an, cq_delta_quals(an, history), false);
}

/*
 * cq_delta_history_all_ok
 *	  Can batch 0 read the history without the test of cq_xid when every
 *	  row passes it (cq_delta_history_all_sql)?  A plain table read alone:
 *	  its BRIN summaries and blocks are those of the rows read
 *	  (cq_tracking_history_all), not a partitioned or Citus table (whose
 *	  rows are elsewhere).  Checked again when the batch runs.
 */
bool
cq_delta_history_all_ok(CqAnalysis *an)
{
	return an->is_aggregate && an->join_delta_sql == NULL && !an->distinct_sets &&
		list_length(an->query->rtable) == 1 &&
		get_rel_relkind(an->source_relid) == RELKIND_RELATION &&
		cq_citus_kind(an->source_relid) == CQ_CITUS_NONE;
}

/*
 * cq_delta_history_all_sql
 *	  cq_delta_inner_sql(an, true) without the test of cq_xid, for a batch
 *	  0 that found every row of the source passing it, in the snapshot it
 *	  reads with (cq_tracking_history_all): the test reads the last column
 *	  of each row, about 160 instructions a row of a backlog, 5% of a plain
 *	  GROUP BY's work.  Only where cq_delta_history_all_ok.
 */
char *
cq_delta_history_all_sql(CqAnalysis *an)
{
	return inner_sql(an, NULL, false);
}

/*
 * cq_delta_fold_inner_sql
 *	  The new rows of a d statement whose rows only C code reads, the
 *	  store's (store_sql.c): cq_delta_inner_sql (all: cq_delta_history_all_sql),
 *	  with each grouping key of type text, varchar or bpchar under a
 *	  deterministic collation other than "C" compared under "C" (see
 *	  bytewise_key); a join of two streams keeps cq_delta_inner_sql's.
 */
char *
cq_delta_fold_inner_sql(CqAnalysis *an, bool history, bool all)
{
	/* a join's matches: its own statement (cq_delta_inner_sql) */
	if (an->join_delta_sql && !all)
		return cq_delta_inner_sql(an, history);
	return inner_sql(an, all ? NULL : cq_delta_quals(an, history), true);
}

/*
 * bytewise_key
 *	  A grouping key of d, e, under "C" (a CollateExpr) when it is a
 *	  string under a deterministic collation other than "C".  Equality
 *	  under a deterministic collation is byte equality, and texteq,
 *	  bpchareq and their hash functions then compare and hash the bytes
 *	  whatever the collation: GROUP BY forms the same groups, but under
 *	  "C" each call skips the locale look-ups (lc_collate_is_c's cache,
 *	  pg_newlocale_from_collation), twice a row of d (the hash and the
 *	  equality of the hash aggregation): 3,644 -> 3,592 instructions a
 *	  row (-1.4 %) of the ingest bench's batch (bench/ingest_cg.sh,
 *	  session 33).  Only for a
 *	  statement whose rows C code folds (fold_row looks them up with the
 *	  store's own equality under the column's collation) and that orders
 *	  nothing by its keys: d, not the load statements, whose HAVING may.
 */
static Expr *
bytewise_key(Expr *e)
{
	Oid			type = exprType((Node *) e);
	Oid			coll = exprCollation((Node *) e);
	CollateExpr *c;

	if ((type != TEXTOID && type != VARCHAROID && type != BPCHAROID) ||
		!OidIsValid(coll) || coll == C_COLLATION_OID || !get_collation_isdeterministic(coll))
		return e;
	c = makeNode(CollateExpr);
	c->arg = e;
	c->collOid = C_COLLATION_OID;
	c->location = -1;
	return (Expr *) c;
}

/*
 * inner_sql
 *	  cq_delta_inner_sql's query with the given restriction; bytewise: its
 *	  string keys under "C" (bytewise_key).
 */
static char *
inner_sql(CqAnalysis *an, Node *restriction, bool bytewise)
{
	Query	   *q;
	char	   *sql;
	int			nest;

	q = copyObject(an->query);
	q->jointree->quals = make_and_qual(q->jointree->quals, restriction);
	q->sortClause = NIL;

	if (an->is_aggregate)
	{
		List	   *tlist = NIL;
		int			resno = 1;
		int			i;
		ListCell   *lc;

		i = 1;
		foreach(lc, an->group_exprs)
		{
			Expr	   *e = copyObject(lfirst(lc));

			tlist = lappend(tlist, makeTargetEntry(bytewise ? bytewise_key(e) : e, resno++,
												   psprintf("g%d", i++), false));
		}
		i = 1;
		foreach(lc, an->arg_exprs)
			tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
												   psprintf("x%d", i++), false));
		i = 1;
		foreach(lc, an->filter_exprs)
			tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
												   psprintf("f%d", i++), false));
		if (an->single_scan && an->et_attno != InvalidAttrNumber)
			tlist = lappend(tlist, makeTargetEntry((Expr *) makeVar(an->source_rti, an->et_attno,
																	an->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID,
																	-1, InvalidOid, 0),
												   resno++, "et", false));
		if (tlist == NIL)
			tlist = list_make1(makeTargetEntry((Expr *) makeBoolConst(true, false),
											   resno++, "g0", false));
		q->targetList = tlist;
		q->groupClause = NIL;
		q->groupDistinct = false;
		q->hasAggs = false;
		q->havingQual = NULL;
	}

	nest = cq_security_deparse_begin();
	sql = cq_sql_querydef(q);
	cq_security_deparse_end(nest);
	return sql;
}

/*
 * cq_delta_avg_time_sql
 *	  to_timestamp() of an average epoch (float8 SQL, repeated: an
 *	  aggregate or a column), kept inside the timestamp range: the average
 *	  of event times at the very end of the range may round past it.
 */
char *
cq_delta_avg_time_sql(const char *epoch)
{
	return psprintf("to_timestamp(CASE WHEN %1$s > 9224318015999::pg_catalog.float8 THEN 9224318015999::pg_catalog.float8 "
					"WHEN %1$s < -210866803200::pg_catalog.float8 THEN -210866803200::pg_catalog.float8 "
					"ELSE %1$s END)", epoch);
}

/*
 * only_source_vars_walker
 *	  True if a Var of this query level reads anything but the stream.
 */
static bool
only_source_vars_walker(Node *node, Index *source_rti)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup == 0 && ((Var *) node)->varno != *source_rti;
	return expression_tree_walker(node, only_source_vars_walker, source_rti);
}

/*
 * stats_rows_simple
 *	  Does every stream row passing the WHERE clause reach the query once,
 *	  whatever else the FROM clause holds?  True when the FROM clause is the
 *	  stream and cq.window() calls over its event-time column (a row with a
 *	  finite event time has a window) and the WHERE clause reads the stream
 *	  only.  Then the rows the query reads are those its WHERE clause keeps,
 *	  found in one scan.
 */
static bool
stats_rows_simple(CqAnalysis *an)
{
	ListCell   *lc;

	foreach(lc, an->query->jointree->fromlist)
	{
		Node	   *n = lfirst(lc);
		RangeTblEntry *rte;
		RangeTblFunction *rtf;
		FuncExpr   *fe;
		Node	   *arg;

		if (!IsA(n, RangeTblRef))
			return false;
		if (((RangeTblRef *) n)->rtindex == (int) an->source_rti)
			continue;
		rte = rt_fetch(((RangeTblRef *) n)->rtindex, an->query->rtable);
		if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1)
			return false;
		rtf = linitial(rte->functions);
		if (!IsA(rtf->funcexpr, FuncExpr))
			return false;
		fe = (FuncExpr *) rtf->funcexpr;
		if (get_func_namespace(fe->funcid) != get_namespace_oid("cq", true) ||
			strcmp(get_func_name(fe->funcid), "window") != 0 || fe->args == NIL)
			return false;
		arg = linitial(fe->args);
		if (IsA(arg, NamedArgExpr))
			return false;
		if (!IsA(arg, Var) || ((Var *) arg)->varno != an->source_rti ||
			((Var *) arg)->varattno != an->et_attno || ((Var *) arg)->varlevelsup != 0)
			return false;
	}
	return !only_source_vars_walker(an->query->jointree->quals, &an->source_rti);
}

/*
 * cq_delta_count_stats_sql
 *	  The count statement of a query with an event-time column: the rows of
 *	  the batch (all new source rows, Spark's numInputRows) and min, max and
 *	  average event time of the rows the query reads, each stream row once:
 *	  those its FROM and WHERE clauses keep, with a finite event time.
 *	  Infinite and NULL event times never count (an 'infinity' row would
 *	  hold the watermark at infinity for good).  `from` is the source as
 *	  "[ONLY ]schema.table", `pred` the batch's rows of it; history selects
 *	  the predicate variant of batch 0 reading rows from before tracking.
 *	  A timestamp column's values are reported as timestamptz at UTC.
 */
char *
cq_delta_count_stats_sql(CqAnalysis *an, const char *from, const char *pred, bool history)
{
	Query	   *q = copyObject(an->query);
	Var		   *et = makeVar(an->source_rti, an->et_attno,
							 an->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID, -1, InvalidOid, 0);
	const char *tz = an->et_is_tz ? "" : " AT TIME ZONE 'UTC'";
	const char *finite = "pg_catalog.isfinite(i.et)";
	char	   *inner;
	int			nest;

	q->groupClause = NIL;
	q->groupDistinct = false;
	q->hasAggs = false;
	q->havingQual = NULL;
	q->sortClause = NIL;
	q->distinctClause = NIL;

	if (stats_rows_simple(an))
	{
		/* one scan: the WHERE clause becomes a column k */
		Node	   *k = q->jointree->quals ? q->jointree->quals : (Node *) makeBoolConst(true, false);
		RangeTblRef *rtr = makeNode(RangeTblRef);

		rtr->rtindex = an->source_rti;
		q->jointree->fromlist = list_make1(rtr);	/* windows only repeat rows */
		q->jointree->quals = cq_delta_quals(an, history);
		q->targetList = list_make2(makeTargetEntry((Expr *) et, 1, "et", false),
								   makeTargetEntry((Expr *) k, 2, "k", false));
		nest = cq_security_deparse_begin();
		inner = cq_sql_querydef(q);
		cq_security_deparse_end(nest);
		finite = psprintf("i.k IS TRUE AND %s", finite);
		return psprintf("SELECT count(*), min(i.et) FILTER (WHERE %s)%s, max(i.et) FILTER (WHERE %s)%s, %s "
						"FROM (%s) i",
						finite, tz, finite, tz,
						cq_delta_avg_time_sql(psprintf("(avg(extract(epoch FROM i.et)) FILTER (WHERE %s))::pg_catalog.float8",
											  finite)),
						inner);
	}

	/*
	 * Joins: the stream rows that find their partners, each once however
	 * many it finds (identified by table and tuple id).
	 */
	q->jointree->quals = make_and_qual(q->jointree->quals, cq_delta_quals(an, history));
	q->targetList = list_make3(makeTargetEntry((Expr *) makeVar(an->source_rti, TableOidAttributeNumber,
																OIDOID, -1, InvalidOid, 0),
											   1, "t", false),
							   makeTargetEntry((Expr *) makeVar(an->source_rti, SelfItemPointerAttributeNumber,
																TIDOID, -1, InvalidOid, 0),
											   2, "c", false),
							   makeTargetEntry((Expr *) et, 3, "et", false));
	nest = cq_security_deparse_begin();
	inner = cq_sql_querydef(q);
	cq_security_deparse_end(nest);
	return psprintf("SELECT (SELECT count(*) FROM %s WHERE %s), min(i.et)%s, max(i.et)%s, "
					"%s FROM (SELECT DISTINCT j.t, j.c, j.et FROM (%s) j WHERE pg_catalog.isfinite(j.et)) i",
					from, pred, tz, tz, cq_delta_avg_time_sql("avg(extract(epoch FROM i.et))::pg_catalog.float8"), inner);
}

/*
 * history_all_settings
 *	  For a statement over cq_delta_history_all_sql: sorting off.  Without
 *	  the test of cq_xid the planner takes the whole table's rows for the
 *	  groups of an expression it has no statistics on (as many groups as
 *	  rows) and would sort them all, where the statement with the test
 *	  (estimated to keep a third of them) hashes, as the plain GROUP BY
 *	  does: 2.7x the GROUP BY's CPU for 5M rows into 4k groups.  Returns
 *	  the GUC nest level to restore (AtEOXact_GUC).
 */
static int
history_all_settings(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

/*
 * cq_delta_run_history
 *	  Batch 0 over the history of source, with end offset cur (a
 *	  pg_snapshot): run(sql_all, arg) when sql_all is given and every row
 *	  the statement will see passes the test of cq_xid
 *	  (cq_tracking_history_all, not for a Citus table: its rows are on the
 *	  workers), with history_all_settings; else run(sql, arg).  Either
 *	  runs read-only in the snapshot pushed here, before the BRIN summaries
 *	  are read (what makes the check exact): run must execute its SPI
 *	  statement with read_only.  *untested: whether sql_all ran.  Returns
 *	  run's result.  The one place store_fold.c's and bulkload.c's batch 0
 *	  decide it.
 */
bool
cq_delta_run_history(Oid source, Datum cur, const char *sql, const char *sql_all,
					 CqHistoryRun run, void *arg, bool *untested)
{
	volatile bool result = false;

	*untested = false;
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		*untested = sql_all != NULL && cq_citus_kind(source) == CQ_CITUS_NONE &&
			cq_tracking_history_all(source, cur, GetActiveSnapshot());
		if (*untested)
		{
			int			nest = history_all_settings();

			result = run(sql_all, arg);
			AtEOXact_GUC(true, nest);
		}
		else
			result = run(sql, arg);
	}
	PG_FINALLY();
	{
		PopActiveSnapshot();
	}
	PG_END_TRY();
	return result;
}
