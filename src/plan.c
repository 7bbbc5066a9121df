/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  The SQL a batch runs, built from an analyzed query.
 *
 * A batch is one statement per step, set-based:
 *
 *	 d: partial aggregates of the new rows    (the user's FROM/WHERE, deparsed,
 *											   plus the offset-range predicate)
 *	 m: merged into the state table            (INSERT ... ON CONFLICT)
 *	 f: final values of the changed groups     (table-driven final expressions)
 *	 o: written to the target                  (per output mode)
 *
 * The user's expressions are never edited as text: they are deparsed from
 * the analyzed tree with search_path pinned to pg_catalog, so every name is
 * schema-qualified.  Expressions over aggregates are rewritten as trees
 * (aggregate -> column of the final view cq_state.f_<id>) and deparsed
 * against that view.
 *
 * Parameters of every batch statement:
 *	 $1 xid8  lowest transaction id that can be new
 *	 $2 xid8  xmax of the batch's end snapshot
 *	 $3 pg_snapshot  end offset (S_cur)
 *	 $4 pg_snapshot  start offset (S_prev)
 *	 $5 timestamptz  the batch's watermark, NULL = -infinity (main statement);
 *					 the watermark delay, interval (count statement)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
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
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "nodes/readfuncs.h"

#include "pg_cq.h"

#define NPARAMS 4

/*
 * pin_search_path / unpin_search_path
 *	  Deparse under search_path = pg_catalog so that every user object is
 *	  printed schema-qualified.
 */
static int
pin_search_path(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

static void
unpin_search_path(int nest)
{
	AtEOXact_GUC(false, nest);
}

/*
 * make_param
 *	  An external parameter $n of the given type.
 */
static Param *
make_param(int n, Oid type)
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
 *	  cq_xid <op> $n, with the built-in xid8 operator.
 */
static Expr *
xid8_op(const char *op, Var *xid, int param)
{
	Oid			opno = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString(pstrdup(op))),
										XID8OID, XID8OID);

	if (!OidIsValid(opno))
		elog(ERROR, "pg_cq: xid8 operator %s not found", op);
	return make_opclause(opno, BOOLOID, false, (Expr *) xid,
						 (Expr *) make_param(param, XID8OID), InvalidOid, InvalidOid);
}

/*
 * visible_in
 *	  pg_visible_in_snapshot(cq_xid, $n)
 */
static Expr *
visible_in(Var *xid, int param)
{
	return (Expr *) makeFuncExpr(F_PG_VISIBLE_IN_SNAPSHOT, BOOLOID,
								 list_make2(xid, make_param(param, PG_SNAPSHOTOID)),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/*
 * delta_quals
 *	  The rows of the source new in this batch: visible in S_cur and not in
 *	  S_prev, restricted to the transaction-id range [$1, $2) so that the
 *	  BRIN index on cq_xid bounds the scan.  The history variant (batch 0
 *	  with starting = earliest) also reads rows from before tracking began,
 *	  whose cq_xid is NULL.
 */
static Node *
delta_quals(CqAnalysis *an, bool history)
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
	xid = makeVar(an->source_rti, att, XID8OID, -1, InvalidOid, 0);
	range = make_andclause(list_make4(xid8_op(">=", xid, 1),
									  xid8_op("<", xid, 2),
									  visible_in(xid, 3),
									  make_notclause(visible_in(xid, 4))));
	if (history)
	{
		/*
		 * Batch 0 with starting = earliest: S_prev sees nothing, so the rows
		 * are the history rows (NULL) and those visible in S_cur; testing
		 * NULL first keeps the per-row cost of a large backlog low.
		 */
		NullTest   *nt = makeNode(NullTest);

		nt->arg = (Expr *) copyObject(xid);
		nt->nulltesttype = IS_NULL;
		nt->location = -1;
		range = make_orclause(list_make2(nt, make_andclause(list_make2(xid8_op("<", xid, 2),
																		visible_in(xid, 3)))));
	}
	return (Node *) range;
}

/*
 * inner_sql
 *	  The user's query restricted to new rows.  For aggregations its select
 *	  list becomes the grouping keys g<i>, aggregate arguments x<i> and
 *	  FILTER conditions f<i>; stateless queries keep theirs.
 */
static char *
inner_sql(CqAnalysis *an, bool history)
{
	Query	   *q = copyObject(an->query);
	char	   *sql;
	int			nest;

	q->jointree->quals = make_and_qual(q->jointree->quals, delta_quals(an, history));
	q->sortClause = NIL;

	if (an->is_aggregate)
	{
		List	   *tlist = NIL;
		int			resno = 1;
		int			i;
		ListCell   *lc;

		i = 1;
		foreach(lc, an->group_exprs)
			tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
												   psprintf("g%d", i++), false));
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

	nest = pin_search_path();
	sql = pg_get_querydef(q, false);
	unpin_search_path(nest);
	return sql;
}

/*
 * ngroup_cols
 *	  Key columns of the state table: one per grouping expression, or the
 *	  constant key g0 for an aggregate without GROUP BY.
 */
static int
ngroup_cols(CqAnalysis *an)
{
	return an->group_exprs == NIL ? 1 : list_length(an->group_exprs);
}

static void
append_group_cols(StringInfo buf, CqAnalysis *an, const char *prefix, const char *sep)
{
	if (an->group_exprs == NIL)
		appendStringInfo(buf, "%sg0", prefix);
	else
		for (int i = 1; i <= list_length(an->group_exprs); i++)
			appendStringInfo(buf, "%s%sg%d", i > 1 ? sep : "", prefix, i);
}

/*
 * evicts
 *	  Does the state carry a window end (column e) for late filtering and
 *	  eviction?  Needs a watermark and a grouping key that carries it.
 */
static bool
evicts(CqAnalysis *an)
{
	return an->has_watermark && an->wm_key >= 0;
}

/*
 * wm_param
 *	  The batch's watermark ($5, timestamptz, NULL = -infinity) in the type
 *	  of the event-time column.
 */
static const char *
wm_param(CqAnalysis *an)
{
	return an->et_is_tz ? "$5" : "($5 AT TIME ZONE 'UTC')";
}

/*
 * cq_plan_state_table_sql
 *	  DDL of the state table: keys, the row count n, partial states p<i>,
 *	  and a unique index on the keys that treats NULL as a value.
 */
char *
cq_plan_state_table_sql(CqAnalysis *an, const char *qualname, bool logged)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 1;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE %sTABLE %s (", logged ? "" : "UNLOGGED ", qualname);
	if (an->group_exprs == NIL)
		appendStringInfoString(&buf, "g0 pg_catalog.bool NOT NULL, ");
	foreach(lc, an->group_exprs)
	{
		Node	   *e = lfirst(lc);

		appendStringInfo(&buf, "g%d %s%s, ", i++,
						 cq_sql_type(exprType(e), exprTypmod(e)),
						 cq_sql_collate(exprCollation(e), exprType(e)));
	}
	appendStringInfoString(&buf, "n pg_catalog.int8 NOT NULL");
	if (evicts(an))
	{
		Node	   *k = list_nth(an->group_exprs, an->wm_key);

		appendStringInfo(&buf, ", e %s", cq_sql_type(exprType(k), -1));
	}
	foreach(lc, an->parts)
	{
		CqPart	   *part = lfirst(lc);

		appendStringInfo(&buf, ", p%d %s%s", foreach_current_index(lc) + 1, part->type,
						 OidIsValid(part->collation) ?
						 psprintf(" COLLATE %s", generate_collation_name(part->collation)) : "");
	}
	appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
	append_group_cols(&buf, an, "", ", ");
	appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	if (evicts(an))
		appendStringInfo(&buf, "; CREATE INDEX ON %s (e)", qualname);
	return buf.data;
}

/*
 * final_select_list
 *	  "s.g1 AS g1, ..., <final> AS a1, ..." over state rows aliased s.
 */
static char *
final_select_list(CqAnalysis *an)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 1;

	initStringInfo(&buf);
	append_group_cols(&buf, an, "s.", ", ");
	foreach(lc, an->aggs)
	{
		CqAgg	   *a = lfirst(lc);
		char	   *p[3] = {"NULL", "NULL", "NULL"};

		for (int k = 0; k < cq_agg_kind_nparts(a->kind); k++)
			p[k] = a->part[k] < 0 ? "s.n" : psprintf("s.p%d", a->part[k] + 1);
		appendStringInfo(&buf, ", (");
		appendStringInfo(&buf, cq_agg_kind_final(a->kind), p[0], p[1], p[2]);
		appendStringInfo(&buf, ")::%s AS a%d", cq_sql_type(a->aggref->aggtype, -1), i++);
	}
	return buf.data;
}

/*
 * cq_plan_final_view_sql
 *	  A view of final aggregate values per group; outputs are deparsed
 *	  against it, and complete mode reloads the target from it.
 */
char *
cq_plan_final_view_sql(CqAnalysis *an, const char *viewname, const char *statename)
{
	return psprintf("CREATE VIEW %s AS SELECT %s FROM %s s",
					viewname, final_select_list(an), statename);
}

/*
 * cq_plan_target_table_sql
 *	  DDL of a target table with the query's output columns.
 */
char *
cq_plan_target_table_sql(CqAnalysis *an, const char *qualname)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE TABLE %s (", qualname);
	foreach(lc, an->outputs)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = (Node *) tle->expr;

		appendStringInfo(&buf, "%s%s %s%s", first ? "" : ", ",
						 quote_identifier(tle->resname),
						 cq_sql_type(exprType(e), exprTypmod(e)),
						 cq_sql_collate(exprCollation(e), exprType(e)));
		first = false;
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* Mutator context: rewrite outputs over the final view. */
typedef struct OutputCtx
{
	CqAnalysis *an;
	Oid			viewid;
} OutputCtx;

/*
 * output_mutator
 *	  Replace grouping expressions by view columns g<i> and aggregates by
 *	  a<i>; any other column of the source is an error (it would need to be
 *	  grouped).
 */
static Node *
output_mutator(Node *node, OutputCtx *ctx)
{
	CqAnalysis *an = ctx->an;
	int			i = 0;
	ListCell   *lc;

	if (node == NULL)
		return NULL;
	foreach(lc, an->group_exprs)
	{
		if (equal(lfirst(lc), node))
			return (Node *) makeVar(1, i + 1, exprType(node), exprTypmod(node),
									exprCollation(node), 0);
		i++;
	}
	if (IsA(node, Aggref))
	{
		i = 0;
		foreach(lc, an->aggs)
		{
			Aggref	   *agg = ((CqAgg *) lfirst(lc))->aggref;

			if (equal(agg, node))
				return (Node *) makeVar(1, ngroup_cols(an) + i + 1, agg->aggtype, -1,
										agg->aggcollid, 0);
			i++;
		}
		elog(ERROR, "pg_cq: aggregate not found in analysis");
	}
	if (IsA(node, Var))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" must appear in the GROUP BY clause of a continuous query",
						get_attname(((Var *) node)->varno == an->source_rti ? an->source_relid :
									rt_fetch(((Var *) node)->varno, an->query->rtable)->relid,
									((Var *) node)->varattno, true) ?: "?"),
				 errdetail("Columns functionally dependent on a primary key must still be grouped.")));
	return expression_tree_mutator(node, output_mutator, ctx);
}

/*
 * output_list
 *	  The outputs as SQL over the final view aliased f (columns g<i>, a<i>).
 */
static char *
output_list(CqAnalysis *an, Oid viewid)
{
	StringInfoData buf;
	OutputCtx	ctx = {an, viewid};
	List	   *dpcontext = deparse_context_for("f", viewid);
	ListCell   *lc;
	bool		first = true;
	int			nest = pin_search_path();

	initStringInfo(&buf);
	foreach(lc, an->outputs)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *e = output_mutator((Node *) copyObject(tle->expr), &ctx);

		appendStringInfo(&buf, "%s%s", first ? "" : ", ",
						 deparse_expression(e, dpcontext, true, false));
		first = false;
	}
	unpin_search_path(nest);
	return buf.data;
}

/*
 * target_columns
 *	  "(c1, c2, ...)" with the output names, quoted.
 */
static char *
target_columns(CqAnalysis *an, const char *prefix, bool keys_only, bool nonkeys_only)
{
	StringInfoData buf;
	ListCell   *lc,
			   *lk;
	bool		first = true;

	initStringInfo(&buf);
	forboth(lc, an->outputs, lk, an->output_key)
	{
		TargetEntry *tle = lfirst(lc);
		bool		is_key = lfirst_int(lk) >= 0;

		if ((keys_only && !is_key) || (nonkeys_only && is_key))
			continue;
		appendStringInfo(&buf, "%s%s%s", first ? "" : ", ", prefix, quote_identifier(tle->resname));
		first = false;
	}
	return buf.data;
}

/*
 * late_filter
 *	  Condition on d keeping groups that are not late ("" when nothing can
 *	  be late).
 */
static const char *
late_filter(CqAnalysis *an)
{
	if (!evicts(an))
		return "";
	return psprintf("($5 IS NULL OR e IS NULL OR e > %s)", wm_param(an));
}

/*
 * state_insert
 *	  "INSERT INTO state AS s (cols) SELECT cols FROM <from> [WHERE <cond>]"
 */
static char *
state_insert(CqAnalysis *an, const char *state, const char *from, const char *cond)
{
	StringInfoData buf;
	StringInfoData cols;

	initStringInfo(&cols);
	append_group_cols(&cols, an, "", ", ");
	appendStringInfoString(&cols, evicts(an) ? ", n, e" : ", n");
	for (int p = 1; p <= list_length(an->parts); p++)
		appendStringInfo(&cols, ", p%d", p);
	initStringInfo(&buf);
	appendStringInfo(&buf, "INSERT INTO %s AS s (%s) SELECT %s FROM %s%s%s",
					 state, cols.data, cols.data, from, cond[0] ? " WHERE " : "", cond);
	return buf.data;
}

/*
 * state_upsert_ctes
 *	  "d AS (...), m AS (...)": partial aggregates of the new rows merged
 *	  into the state; m returns the changed state rows with _ins = inserted.
 */
static char *
state_upsert_ctes(CqAnalysis *an, const char *state, bool history, bool evict, bool empty)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "d AS (SELECT ");
	if (an->group_exprs == NIL)
		appendStringInfoString(&buf, "true AS g0");
	else
		append_group_cols(&buf, an, "i.", ", ");
	appendStringInfoString(&buf, ", count(*) AS n");
	if (an->single_scan && an->et_attno != InvalidAttrNumber)
		appendStringInfoString(&buf, ", min(i.et) AS et_min, max(i.et) AS et_max, "
							   "sum(date_part('epoch', i.et)) AS et_sum, count(i.et) AS et_n");
	foreach(lc, an->parts)
		appendStringInfo(&buf, ", %s AS p%d", ((CqPart *) lfirst(lc))->partial,
						 foreach_current_index(lc) + 1);
	if (evicts(an))
	{
		appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, an->wm_end_fmt, psprintf("i.g%d", an->wm_key + 1));
		appendStringInfoString(&buf, " AS e");
	}
	appendStringInfo(&buf, " FROM (%s) i", inner_sql(an, history));
	if (an->group_exprs != NIL)
	{
		appendStringInfoString(&buf, " GROUP BY ");
		append_group_cols(&buf, an, "i.", ", ");
	}

	appendStringInfoString(&buf, ")");
	if (empty)
	{
		/* batch 0 or a rebuild: the state is empty, every group is new */
		appendStringInfo(&buf, ", m AS (%s RETURNING s.*, true AS _ins)",
						 state_insert(an, state, "d", late_filter(an)));
	}
	else
	{
		/*
		 * Classify the groups by an index probe, then update the existing
		 * ones and plainly insert the new ones: both cheaper than INSERT ...
		 * ON CONFLICT.  Groups with a NULL key cannot be probed with "=" and
		 * take the ON CONFLICT path (NULLS NOT DISTINCT makes it NULL-safe).
		 */
		StringInfoData keys;
		StringInfoData nullkey;
		int			ng = ngroup_cols(an);

		initStringInfo(&keys);
		initStringInfo(&nullkey);
		for (int g = 1; g <= ng; g++)
		{
			const char *col = an->group_exprs == NIL ? "g0" : psprintf("g%d", g);

			appendStringInfo(&keys, "%ss.%s = d.%s", g > 1 ? " AND " : "", col, col);
			appendStringInfo(&nullkey, "%sd.%s IS NULL", g > 1 ? " OR " : "", col);
		}
		/*
		 * A scalar subquery, not EXISTS: the planner may turn an EXISTS into
		 * a hashed subplan that reads the whole state, and it does so when
		 * it overestimates the new rows (no statistics on cq_xid yet: it
		 * expects the whole source), which cost 40-300 ms per batch at
		 * 200k groups.  A probe per group is what a batch wants.
		 */
		appendStringInfo(&buf, ", dk AS (SELECT d.*, (%s) AS _nullkey, "
						 "((SELECT true FROM %s s WHERE %s LIMIT 1) IS NOT NULL) AS _old "
						 "FROM d%s%s)",
						 nullkey.data, state, keys.data,
						 late_filter(an)[0] ? " WHERE " : "", late_filter(an));
		appendStringInfo(&buf, ", mu AS (UPDATE %s s SET n = s.n + d.n", state);
		foreach(lc, an->parts)
		{
			int			p = foreach_current_index(lc) + 1;

			appendStringInfo(&buf, ", p%d = ", p);
			appendStringInfo(&buf, ((CqPart *) lfirst(lc))->merge,
							 psprintf("s.p%d", p), psprintf("d.p%d", p));
		}
		appendStringInfo(&buf, " FROM dk d WHERE d._old AND %s RETURNING s.*, false AS _ins)", keys.data);
		appendStringInfo(&buf, ", mi AS (%s RETURNING s.*, true AS _ins)",
						 state_insert(an, state, "dk", "NOT _old AND NOT _nullkey"));
		appendStringInfo(&buf, ", mn AS (%s ON CONFLICT (", state_insert(an, state, "dk", "_nullkey"));
		append_group_cols(&buf, an, "", ", ");
		appendStringInfoString(&buf, ") DO UPDATE SET n = s.n + excluded.n");
		foreach(lc, an->parts)
		{
			int			p = foreach_current_index(lc) + 1;

			appendStringInfo(&buf, ", p%d = ", p);
			appendStringInfo(&buf, ((CqPart *) lfirst(lc))->merge,
							 psprintf("s.p%d", p), psprintf("excluded.p%d", p));
		}
		appendStringInfoString(&buf, " RETURNING s.*, (s.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS _ins)");
		appendStringInfoString(&buf, ", m AS (SELECT * FROM mu UNION ALL SELECT * FROM mi UNION ALL SELECT * FROM mn)");
	}
	/* x: windows closed by the watermark leave the state */
	if (evicts(an) && evict)
		appendStringInfo(&buf, ", x AS (DELETE FROM %s s WHERE s.e <= %s RETURNING s.*)",
						 state, wm_param(an));
	return buf.data;
}

/*
 * metrics_select
 *	  The final SELECT of a batch statement: state rows updated, inserted,
 *	  removed, aggregated rows dropped as late, output rows.
 */
static char *
metrics_select(CqAnalysis *an, bool has_o, bool has_o1)
{
	const char *input = "0::int8, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz";

	if (an->single_scan && an->et_attno != InvalidAttrNumber)
	{
		const char *tz = an->et_is_tz ? "" : " AT TIME ZONE 'UTC'";

		input = psprintf("(SELECT coalesce(sum(n), 0) FROM d)::int8, (SELECT min(et_min) FROM d)%s, "
						 "(SELECT max(et_max) FROM d)%s, "
						 "to_timestamp((SELECT sum(et_sum) / nullif(sum(et_n), 0) FROM d)), "
						 "((SELECT max(et_max) FROM d) - $6)%s", tz, tz, tz);
	}
	else if (an->single_scan)
		input = "(SELECT coalesce(sum(n), 0) FROM d)::int8, NULL::timestamptz, NULL::timestamptz, "
			"NULL::timestamptz, NULL::timestamptz";
	return psprintf(" SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM m WHERE _ins), %s, %s, %s, %s",
					evicts(an) ? "(SELECT count(*) FROM x)" : "0::int8",
					evicts(an) ? psprintf("(SELECT count(*) FROM d WHERE e <= %s)", wm_param(an)) : "0::int8",
					has_o1 ? "((SELECT count(*) FROM o) + (SELECT count(*) FROM o1))" :
					has_o ? "(SELECT count(*) FROM o)" : "0::int8", input);
}

/*
 * batch_sql
 *	  The main statement of a batch.  Returns one row: state rows updated,
 *	  inserted, removed, rows dropped as late, output rows.
 */
static char *
batch_sql(CqAnalysis *an, CqQuery *q, Oid viewid, const char *target, bool history)
{
	StringInfoData buf;
	char	   *state;
	char	   *all_cols = target_columns(an, "", false, false);

	initStringInfo(&buf);
	if (!an->is_aggregate)
	{
		appendStringInfo(&buf,
						 "WITH o AS (INSERT INTO %s (%s) %s RETURNING 1) "
						 "SELECT 0::int8, 0::int8, 0::int8, 0::int8, count(*), count(*), "
						 "NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz FROM o",
						 target, all_cols, inner_sql(an, history));
		return buf.data;
	}

	state = cq_sql_relname_str(q->state_table);
	appendStringInfo(&buf, "WITH %s", state_upsert_ctes(an, state, history, true, history));

	switch (q->opts.mode)
	{
		case CQ_MODE_APPEND:
			/* closed windows, final now, are written once */
			appendStringInfo(&buf, ", f AS (SELECT %s FROM x s)", final_select_list(an));
			appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f RETURNING 1)",
							 target, all_cols, output_list(an, viewid));
			appendStringInfoString(&buf, metrics_select(an, true, false));
			break;
		case CQ_MODE_UPDATE:
			{
				char	   *nonkeys = target_columns(an, "", false, true);

				appendStringInfo(&buf, ", f AS (SELECT %s, s._ins FROM m s)", final_select_list(an));
				if (an->group_exprs == NIL)
				{
					/* one result row: replace it */
					appendStringInfo(&buf, ", y AS (DELETE FROM %s)", target);
					appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f RETURNING 1)",
									 target, all_cols, output_list(an, viewid));
				}
				else
				{
					/*
					 * Groups new to the state are new to the target: a plain
					 * INSERT, much cheaper than ON CONFLICT's speculative
					 * insertion.  The others are upserted (a missing row is
					 * written again).
					 */
					appendStringInfo(&buf, ", o1 AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE f._ins RETURNING 1)",
									 target, all_cols, output_list(an, viewid));
					appendStringInfo(&buf, ", o AS (INSERT INTO %s AS t (%s) SELECT %s FROM f WHERE NOT f._ins ON CONFLICT (%s) ",
									 target, all_cols, output_list(an, viewid),
									 target_columns(an, "", true, false));
					if (nonkeys[0] == '\0')
						appendStringInfoString(&buf, "DO NOTHING");
					else
						appendStringInfo(&buf, "DO UPDATE SET (%s) = ROW(%s) WHERE ROW(%s) IS DISTINCT FROM ROW(%s)",
										 nonkeys, target_columns(an, "excluded.", false, true),
										 target_columns(an, "t.", false, true),
										 target_columns(an, "excluded.", false, true));
					appendStringInfoString(&buf, " RETURNING 1)");
				}
				appendStringInfoString(&buf, metrics_select(an, true, an->group_exprs != NIL));
				break;
			}
		case CQ_MODE_COMPLETE:
			appendStringInfoString(&buf, metrics_select(an, false, false));
			break;
	}
	return buf.data;
}

/*
 * cq_plan_build
 *	  Every statement a batch of this query may run.  The final view must
 *	  exist for aggregations.
 */
CqPlan *
cq_plan_build(CqAnalysis *an, CqQuery *q)
{
	CqPlan	   *plan = palloc0(sizeof(CqPlan));
	char	   *target = cq_sql_relname_str(q->target);
	char	   *source = cq_sql_relname_str(an->source_relid);
	Oid			viewid = InvalidOid;
	const char *pred;
	RangeTblEntry *rte = rt_fetch(an->source_rti, an->query->rtable);
	const char *only = rte->inh ? "" : "ONLY ";

	/*
	 * One scan of the new rows suffices when every source row of the batch
	 * reaches the aggregation exactly once (no WHERE, no joins, no window
	 * expansion): its row count and event-time statistics come from the
	 * partial aggregates.  Otherwise a separate count statement runs first.
	 */
	an->single_scan = an->query->jointree->quals == NULL &&
		list_length(an->query->rtable) == 1 &&
		(an->is_aggregate ? an->group_exprs != NIL : an->et_attno == InvalidAttrNumber) &&
		!(q->opts.max_rows_per_trigger > 0);
	plan->single_scan = an->single_scan;

	if (an->is_aggregate)
	{
		viewid = get_relname_relid(psprintf("f_%d", q->id), get_namespace_oid("cq_state", false));
		if (!OidIsValid(viewid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("state of continuous query \"%s\" is missing", q->name),
					 errhint("Drop and recreate the continuous query.")));
		plan->complete_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM %s f",
									  target, target_columns(an, "", false, false),
									  output_list(an, viewid), cq_sql_relname_str(viewid));
	}
	plan->batch_sql = batch_sql(an, q, viewid, target, false);
	plan->batch_sql_history = batch_sql(an, q, viewid, target, true);
	if (an->is_aggregate)
	{
		/*
		 * Rebuild of lost state: the same fold over every row processed so
		 * far, keeping windows still open at the last batch; the target is
		 * not touched (it already holds the results).  History rows are in
		 * it when batch 0 read them (whatever `starting` says now).
		 */
		bool		history = cq_query_reads_history(q);

		plan->rebuild_sql = psprintf("WITH %s SELECT count(*) FROM m",
									 state_upsert_ctes(an, cq_sql_relname_str(q->state_table),
													   history, false, true));
	}

	pred = psprintf("%s >= $1 AND %s < $2 AND pg_catalog.pg_visible_in_snapshot(%s, $3) "
					"AND NOT pg_catalog.pg_visible_in_snapshot(%s, $4)",
					CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN);
	{
		/* rows of the batch, and event-time statistics of them */
		const char *stats = "NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz, "
			"NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz";

		if (an->et_attno != InvalidAttrNumber)
		{
			const char *et = quote_identifier(get_attname(an->source_relid, an->et_attno, false));
			const char *tz = an->et_is_tz ? "" : " AT TIME ZONE 'UTC'";

			stats = psprintf("min(%s)%s, max(%s)%s, "
							 "to_timestamp(avg(extract(epoch FROM %s))::pg_catalog.float8), "
							 "(max(%s) - $5)%s",
							 et, tz, et, tz, et, et, tz);
		}
		plan->count_sql = psprintf("SELECT count(*), %s FROM %s%s WHERE %s",
								   stats, only, source, pred);
		plan->count_sql_history = psprintf("SELECT count(*), %s FROM %s%s WHERE %s IS NULL OR "
										   "(%s < $2 AND pg_catalog.pg_visible_in_snapshot(%s, $3))",
										   stats, only, source, CQ_TRACKING_COLUMN,
										   CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN);
	}
	plan->count_xids_sql = psprintf("SELECT %s::text, count(*) FROM %s%s WHERE %s GROUP BY 1 ORDER BY %s",
									CQ_TRACKING_COLUMN, only, source, pred, CQ_TRACKING_COLUMN);
	plan->count_history_sql = psprintf("SELECT count(*) FROM %s%s WHERE %s IS NULL",
									   only, source, CQ_TRACKING_COLUMN);
	return plan;
}

/*
 * Per-backend cache of analyses and generated SQL, so that a worker's
 * batches skip re-analysis and deparsing.  An entry is valid while the
 * query's catalog row is unchanged (its text, tree and options) and no
 * relation, function, type, operator or schema changed since it was built:
 * any such invalidation bumps plan_generation, and the SQL is rebuilt from
 * the tree with current names (renames keep working).
 */
typedef struct CqPlanCacheEntry
{
	int32		id;				/* hash key: the query's internal id */
	uint64		generation;
	char	   *key;			/* catalog values the plan was built from */
	MemoryContext cxt;
	CqAnalysis *an;
	CqPlan	   *plan;
} CqPlanCacheEntry;

static HTAB *plan_entries = NULL;
static uint64 plan_generation = 0;

static void
plan_invalidate_rel(Datum arg, Oid relid)
{
	plan_generation++;
}

static void
plan_invalidate_syscache(Datum arg, int cacheid, uint32 hashvalue)
{
	plan_generation++;
}

/*
 * plan_key
 *	  Everything of the catalog row the generated SQL depends on.
 */
static char *
plan_key(CqQuery *q)
{
	return psprintf("%s|%s|%s|%s|%s|" INT64_FORMAT "|%s|%s|%u|%u|%u|%s",
					q->query_tree, q->opts.output_mode, q->opts.event_time ? q->opts.event_time : "",
					q->opts.watermark ? q->opts.watermark : "", q->opts.starting,
					q->opts.max_rows_per_trigger, q->opts.state_storage, q->opts.complete_refresh,
					q->target, q->state_table, q->owner, q->start_offset);
}

/*
 * cq_plan_get
 *	  The analysis and SQL of a query, from the cache or built now.
 */
void
cq_plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan)
{
	CqPlanCacheEntry *entry;
	bool		found;
	char	   *key = plan_key(q);
	MemoryContext old;

	if (plan_entries == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(CqPlanCacheEntry);
		plan_entries = hash_create("pg_cq analyses", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(plan_invalidate_rel, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, plan_invalidate_syscache, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, plan_invalidate_syscache, (Datum) 0);
		CacheRegisterSyscacheCallback(OPEROID, plan_invalidate_syscache, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, plan_invalidate_syscache, (Datum) 0);
	}

	entry = hash_search(plan_entries, &q->id, HASH_FIND, &found);
	if (found && entry->generation == plan_generation && strcmp(entry->key, key) == 0)
	{
		*an = entry->an;
		*plan = entry->plan;
		return;
	}

	/* build in the caller's context; keep a copy only once it succeeded */
	{
		uint64		gen = plan_generation;
		CqAnalysis *new_an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
		CqPlan	   *new_plan = cq_plan_build(new_an, q);
		MemoryContext cxt = AllocSetContextCreate(CacheMemoryContext, "pg_cq analysis",
												  ALLOCSET_SMALL_SIZES);

		if (found)
			MemoryContextDelete(entry->cxt);
		entry = hash_search(plan_entries, &q->id, HASH_ENTER, NULL);

		old = MemoryContextSwitchTo(cxt);
		entry->an = palloc(sizeof(CqAnalysis));
		*entry->an = *new_an;
		entry->an->query = copyObject(new_an->query);
		entry->an->group_exprs = copyObject(new_an->group_exprs);
		entry->an->aggs = NIL;	/* only the SQL is used from the cache */
		entry->an->arg_exprs = NIL;
		entry->an->filter_exprs = NIL;
		entry->an->parts = NIL;
		entry->an->outputs = NIL;
		entry->an->output_key = NIL;
		entry->an->wm_end_fmt = new_an->wm_end_fmt ? pstrdup(new_an->wm_end_fmt) : NULL;
		entry->plan = palloc0(sizeof(CqPlan));
#define COPY_SQL(f) entry->plan->f = new_plan->f ? pstrdup(new_plan->f) : NULL
		COPY_SQL(batch_sql);
		COPY_SQL(batch_sql_history);
		COPY_SQL(complete_sql);
		COPY_SQL(count_sql);
		COPY_SQL(count_sql_history);
		COPY_SQL(count_xids_sql);
		COPY_SQL(count_history_sql);
		COPY_SQL(rebuild_sql);
#undef COPY_SQL
		entry->plan->single_scan = new_plan->single_scan;
		entry->key = pstrdup(key);
		MemoryContextSwitchTo(old);
		entry->cxt = cxt;
		entry->generation = gen;
		*an = new_an;
		*plan = new_plan;
	}
}
