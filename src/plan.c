/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  The SQL a batch runs, built from an analyzed query.
 *
 * A batch is one statement per step, set-based:
 *
 *	 d: partial aggregates of the new rows    (the user's FROM/WHERE, deparsed,
 *											   plus the offset-range predicate)
 *	 m: merged into the state table            (probe, UPDATE existing, INSERT new)
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
 *	 $5 timestamptz  the batch's watermark, NULL = -infinity (main statement
 *					 only; the next watermark is computed in C from the
 *					 maximum event time the statements return)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
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

static char *target_columns(CqAnalysis *an, const char *prefix, bool keys_only, bool nonkeys_only);

/*
 * key_eq_operator
 *	  "OPERATOR(schema.=)" for grouping key g (0-based): the equality GROUP
 *	  BY uses for its type, schema-qualified, so that keys of extension
 *	  types (citext, ltree, hstore, isn...) compare as the plain query
 *	  groups them, whatever the search_path.
 */
static char *
key_eq_operator(CqAnalysis *an, int g)
{
	Oid			opno = list_nth_oid(an->group_eqops, g);
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Form_pg_operator op;
	char	   *sql;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	op = (Form_pg_operator) GETSTRUCT(tup);
	sql = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(op->oprnamespace)),
				   NameStr(op->oprname));
	ReleaseSysCache(tup);
	return sql;
}

/*
 * append_keys_equal
 *	  "l.g1 = r.g1 AND ..." with each key's own equality (l and r are SQL
 *	  prefixes such as "s." and "d."; right_cols, if given, names the right
 *	  side's columns per key).  With null_safe, NULL keys match NULL keys,
 *	  as GROUP BY puts them in one group.
 */
static void
append_keys_equal(StringInfo buf, CqAnalysis *an, const char *l, List *left_cols,
				  const char *r, bool null_safe)
{
	int			ng = ngroup_cols(an);

	for (int g = 0; g < ng; g++)
	{
		const char *lcol = left_cols ? (const char *) list_nth(left_cols, g) :
			an->group_exprs == NIL ? "g0" : psprintf("g%d", g + 1);
		const char *rcol = an->group_exprs == NIL ? "g0" : psprintf("g%d", g + 1);
		const char *op = an->group_exprs == NIL ? "OPERATOR(pg_catalog.=)" : key_eq_operator(an, g);

		if (g > 0)
			appendStringInfoString(buf, " AND ");
		if (null_safe)
			appendStringInfo(buf, "(%s%s %s %s%s OR (%s%s IS NULL AND %s%s IS NULL))",
							 l, lcol, op, r, rcol, l, lcol, r, rcol);
		else
			appendStringInfo(buf, "%s%s %s %s%s", l, lcol, op, r, rcol);
	}
}

/*
 * key_hash_sql
 *	  The hash of a row's grouping keys, consistent with their equality
 *	  (hash_record() hashes each field with its type's default hash
 *	  opclass; a NULL field hashes as 0), over columns named g1.. or, when
 *	  cols is given, as listed, each after prefix.
 */
static char *
key_hash_sql(CqAnalysis *an, const char *prefix, List *cols)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "pg_catalog.hash_record(ROW(");
	for (int g = 0; g < list_length(an->group_exprs); g++)
		appendStringInfo(&buf, "%s%s%s", g > 0 ? ", " : "", prefix,
						 cols ? (const char *) list_nth(cols, g) : psprintf("g%d", g + 1));
	appendStringInfoString(&buf, "))");
	return buf.data;
}

/*
 * target_key_columns
 *	  The quoted target column of each grouping key, in grouping order (the
 *	  first output that is that key).  Update mode selects every key.
 */
static List *
target_key_columns(CqAnalysis *an)
{
	List	   *cols = NIL;

	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		ListCell   *lc,
				   *lk;
		char	   *col = NULL;

		forboth(lc, an->outputs, lk, an->output_key)
		{
			if (lfirst_int(lk) == g)
			{
				col = (char *) quote_identifier(((TargetEntry *) lfirst(lc))->resname);
				break;
			}
		}
		if (col == NULL)
			elog(ERROR, "pg_cq: grouping key %d is not an output", g + 1);
		cols = lappend(cols, col);
	}
	return cols;
}

/*
 * cq_plan_target_key_index_sql
 *	  DDL of the index an update-mode target is probed by.  With a hashed
 *	  state (see cq_plan_state_table_sql), an index on the hash of the key
 *	  columns: a key of any size fits in it.  Otherwise a unique index on
 *	  the keys that treats NULL as a value, for ON CONFLICT.
 */
char *
cq_plan_target_key_index_sql(CqAnalysis *an, const char *qualname, bool hashed)
{
	if (hashed)
		return psprintf("CREATE INDEX ON %s ((%s))", qualname,
						key_hash_sql(an, "", target_key_columns(an)));
	/* every output that is a key: the ON CONFLICT clause names them all */
	return psprintf("CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT", qualname,
					target_columns(an, "", true, false));
}

/*
 * cq_plan_state_hashed
 *	  Is this state table keyed by a hash of its keys (column h)?  State
 *	  tables created before that layout have a unique index on the keys
 *	  instead, and keep it.
 */
bool
cq_plan_state_hashed(Oid state_table)
{
	return OidIsValid(state_table) &&
		get_attnum(state_table, CQ_KEY_HASH_COLUMN) != InvalidAttrNumber;
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
 *	  and how groups are found.  When every key type can be hashed
 *	  consistently with its equality, the state holds the hash of the keys
 *	  (column h) and an index on it; groups are matched by hash and then by
 *	  their keys, so a key of any size works (a btree entry holds at most
 *	  about 2.7 kB).  No unique index is needed: batches of one query are
 *	  serialized by the lock on its catalog row.  Otherwise (and for
 *	  aggregates without GROUP BY), a unique index on the keys that treats
 *	  NULL as a value.
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
	if (an->keys_hashable)
		appendStringInfo(&buf, ", %s pg_catalog.int4 NOT NULL); CREATE INDEX ON %s (%s)",
						 CQ_KEY_HASH_COLUMN, qualname, CQ_KEY_HASH_COLUMN);
	else
	{
		appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
		append_group_cols(&buf, an, "", ", ");
		appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	}
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
 *	  against its columns.
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
 * output_list_part
 *	  The outputs (all, or only the keys or only the others) as SQL over the
 *	  final view aliased f (columns g<i>, a<i>).
 */
static char *
output_list_part(CqAnalysis *an, Oid viewid, bool keys_only, bool nonkeys_only)
{
	StringInfoData buf;
	OutputCtx	ctx = {an, viewid};
	List	   *dpcontext = deparse_context_for("f", viewid);
	ListCell   *lc,
			   *lk;
	bool		first = true;
	int			nest = pin_search_path();

	initStringInfo(&buf);
	forboth(lc, an->outputs, lk, an->output_key)
	{
		TargetEntry *tle = lfirst(lc);
		bool		is_key = lfirst_int(lk) >= 0;
		Node	   *e;

		if ((keys_only && !is_key) || (nonkeys_only && is_key))
			continue;
		e = output_mutator((Node *) copyObject(tle->expr), &ctx);
		appendStringInfo(&buf, "%s%s", first ? "" : ", ",
						 deparse_expression(e, dpcontext, true, false));
		first = false;
	}
	unpin_search_path(nest);
	return buf.data;
}

/*
 * output_list
 *	  Every output as SQL over the final view aliased f.
 */
static char *
output_list(CqAnalysis *an, Oid viewid)
{
	return output_list_part(an, viewid, false, false);
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
	if (an->hash_keys)
		appendStringInfo(&cols, ", %s", CQ_KEY_HASH_COLUMN);
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
		appendStringInfoString(&buf, ", min(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_min, "
							   "max(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_max, "
							   "sum(date_part('epoch', i.et)) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_sum, "
							   "count(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_n");
	foreach(lc, an->parts)
		appendStringInfo(&buf, ", %s AS p%d", ((CqPart *) lfirst(lc))->partial,
						 foreach_current_index(lc) + 1);
	if (evicts(an))
	{
		appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, an->wm_end_fmt, psprintf("i.g%d", an->wm_key + 1));
		appendStringInfoString(&buf, " AS e");
	}
	if (an->hash_keys)
		appendStringInfo(&buf, ", %s AS %s", key_hash_sql(an, "i.", NIL), CQ_KEY_HASH_COLUMN);
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
	else if (an->hash_keys)
	{
		/*
		 * Classify the groups by a probe of the hash index (NULL keys too:
		 * they hash like any value), then update the existing ones and
		 * plainly insert the new ones.  A scalar subquery, not EXISTS: the
		 * planner may turn an EXISTS into a hashed subplan that reads the
		 * whole state, and it does so when it overestimates the new rows (no
		 * statistics on cq_xid yet: it expects the whole source), which cost
		 * 40-300 ms per batch at 200k groups.  A probe per group is what a
		 * batch wants.
		 */
		StringInfoData match;

		initStringInfo(&match);
		appendStringInfo(&match, "s.%s OPERATOR(pg_catalog.=) d.%s AND ",
						 CQ_KEY_HASH_COLUMN, CQ_KEY_HASH_COLUMN);
		append_keys_equal(&match, an, "s.", NIL, "d.", true);
		appendStringInfo(&buf, ", dk AS (SELECT d.*, "
						 "((SELECT true FROM %s s WHERE %s LIMIT 1) IS NOT NULL) AS _old "
						 "FROM d%s%s)",
						 state, match.data,
						 late_filter(an)[0] ? " WHERE " : "", late_filter(an));
		appendStringInfo(&buf, ", mu AS (UPDATE %s s SET n = s.n + d.n", state);
		foreach(lc, an->parts)
		{
			int			p = foreach_current_index(lc) + 1;

			appendStringInfo(&buf, ", p%d = ", p);
			appendStringInfo(&buf, ((CqPart *) lfirst(lc))->merge,
							 psprintf("s.p%d", p), psprintf("d.p%d", p));
		}
		appendStringInfo(&buf, " FROM dk d WHERE d._old AND %s RETURNING s.*, s.ctid AS _sid, false AS _ins)", match.data);
		appendStringInfo(&buf, ", mi AS (%s RETURNING s.*, s.ctid AS _sid, true AS _ins)",
						 state_insert(an, state, "dk", "NOT _old"));
		appendStringInfoString(&buf, ", m AS (SELECT * FROM mu UNION ALL SELECT * FROM mi)");
	}
	else
	{
		/*
		 * State keyed by a unique index on the keys.  Classify the groups by
		 * an index probe, then update the existing ones and plainly insert
		 * the new ones: both cheaper than INSERT ... ON CONFLICT.  Groups
		 * with a NULL key cannot be probed with "=" and take the ON CONFLICT
		 * path (NULLS NOT DISTINCT makes it NULL-safe).
		 */
		StringInfoData keys;
		StringInfoData nullkey;
		int			ng = ngroup_cols(an);

		initStringInfo(&keys);
		initStringInfo(&nullkey);
		append_keys_equal(&keys, an, "s.", NIL, "d.", false);
		for (int g = 1; g <= ng; g++)
			appendStringInfo(&nullkey, "%sd.%s IS NULL", g > 1 ? " OR " : "",
							 an->group_exprs == NIL ? "g0" : psprintf("g%d", g));
		/* a scalar subquery, not EXISTS: see the hashed layout above */
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
 * avg_time_sql
 *	  to_timestamp() of an average epoch (float8 SQL, repeated: an
 *	  aggregate or a column), kept inside the timestamp range: the average
 *	  of event times at the very end of the range may round past it.
 */
static char *
avg_time_sql(const char *epoch)
{
	return psprintf("to_timestamp(CASE WHEN %1$s > 9224318015999::pg_catalog.float8 THEN 9224318015999::pg_catalog.float8 "
					"WHEN %1$s < -210866803200::pg_catalog.float8 THEN -210866803200::pg_catalog.float8 "
					"ELSE %1$s END)", epoch);
}

/*
 * metrics_select
 *	  The final SELECT of a batch statement: state rows updated, inserted,
 *	  removed, aggregated rows dropped as late, output rows.
 */
static char *
metrics_select(CqAnalysis *an, bool has_o, bool has_o1)
{
	const char *input = "0::int8, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz";

	if (an->single_scan && an->et_attno != InvalidAttrNumber)
	{
		const char *tz = an->et_is_tz ? "" : " AT TIME ZONE 'UTC'";

		input = psprintf("(SELECT coalesce(sum(n), 0) FROM d)::int8, (SELECT min(et_min) FROM d)%s, "
						 "(SELECT max(et_max) FROM d)%s, "
						 "(SELECT %s FROM (SELECT sum(et_sum) / nullif(sum(et_n), 0) AS x FROM d) a)",
						 tz, tz, avg_time_sql("a.x"));
	}
	else if (an->single_scan)
		input = "(SELECT coalesce(sum(n), 0) FROM d)::int8, NULL::timestamptz, NULL::timestamptz, "
			"NULL::timestamptz";
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
						 "NULL::timestamptz, NULL::timestamptz, NULL::timestamptz FROM o",
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

				appendStringInfo(&buf, ", f AS (SELECT %s, s._ins%s FROM m s)", final_select_list(an),
								 an->hash_keys && !history ? psprintf(", s.%s, s._sid", CQ_KEY_HASH_COLUMN) : "");
				if (an->group_exprs == NIL)
				{
					/* one result row: replace it */
					appendStringInfo(&buf, ", y AS (DELETE FROM %s)", target);
					appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f RETURNING 1)",
									 target, all_cols, output_list(an, viewid));
				}
				else if (history)
				{
					/*
					 * Batch 0: state and target are empty, every group is
					 * new.  (The statements for existing groups would find
					 * nothing, but their estimated cost over a large history
					 * made the planner JIT-compile the batch: a second.)
					 */
					appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f RETURNING 1)",
									 target, all_cols, output_list(an, viewid));
				}
				else
				{
					/*
					 * Groups new to the state are new to the target: a plain
					 * INSERT, much cheaper than ON CONFLICT's speculative
					 * insertion.  The others are updated where their row
					 * changed and inserted where it is missing (a row deleted
					 * by hand is written again).  A row "changed" when its
					 * binary image did (the *<> operator, as REFRESH
					 * MATERIALIZED VIEW CONCURRENTLY compares rows): equal
					 * values that print differently, such as numeric 1.0
					 * and 1.00, are rewritten so that the target shows what
					 * the query shows.  (The casts to record keep the
					 * parser from comparing the rows column by column.)
					 */
					appendStringInfo(&buf, ", o1 AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE f._ins RETURNING 1)",
									 target, all_cols, output_list(an, viewid));
					if (an->hash_keys)
					{
						/*
						 * Found through the target's index on the hash of its
						 * keys: rows that changed are updated; the groups not
						 * updated (their state row _sid) are looked up once
						 * more and inserted if their row is missing.
						 */
						List	   *tkeys = target_key_columns(an);
						StringInfoData match;

						initStringInfo(&match);
						appendStringInfo(&match, "%s OPERATOR(pg_catalog.=) f.%s AND ",
										 key_hash_sql(an, "t.", tkeys), CQ_KEY_HASH_COLUMN);
						append_keys_equal(&match, an, "t.", tkeys, "f.", true);
						if (nonkeys[0] != '\0')
						{
							appendStringInfo(&buf, ", ou AS (UPDATE %s t SET (%s) = ROW(%s) FROM f "
											 "WHERE NOT f._ins AND %s AND "
											 "ROW(%s)::pg_catalog.record OPERATOR(pg_catalog.*<>) ROW(%s)::pg_catalog.record "
											 "RETURNING f._sid)",
											 target, nonkeys, output_list_part(an, viewid, false, true),
											 match.data, target_columns(an, "t.", false, true),
											 output_list_part(an, viewid, false, true));
							appendStringInfo(&buf, ", oi AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE NOT f._ins "
											 "AND NOT (f._sid OPERATOR(pg_catalog.=) ANY (SELECT _sid FROM ou)) "
											 "AND NOT EXISTS (SELECT FROM %s t WHERE %s) RETURNING 1)",
											 target, all_cols, output_list(an, viewid), target, match.data);
							appendStringInfoString(&buf, ", o AS (SELECT 1 FROM ou UNION ALL SELECT 1 FROM oi)");
						}
						else
							appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE NOT f._ins "
											 "AND NOT EXISTS (SELECT FROM %s t WHERE %s) RETURNING 1)",
											 target, all_cols, output_list(an, viewid), target, match.data);
					}
					else
					{
						/* upserted through the target's unique index on the keys */
						appendStringInfo(&buf, ", o AS (INSERT INTO %s AS t (%s) SELECT %s FROM f WHERE NOT f._ins ON CONFLICT (%s) ",
										 target, all_cols, output_list(an, viewid),
										 target_columns(an, "", true, false));
						if (nonkeys[0] == '\0')
							appendStringInfoString(&buf, "DO NOTHING");
						else
							appendStringInfo(&buf, "DO UPDATE SET (%s) = ROW(%s) WHERE ROW(%s)::pg_catalog.record OPERATOR(pg_catalog.*<>) ROW(%s)::pg_catalog.record",
											 nonkeys, target_columns(an, "excluded.", false, true),
											 target_columns(an, "t.", false, true),
											 target_columns(an, "excluded.", false, true));
						appendStringInfoString(&buf, " RETURNING 1)");
					}
				}
				appendStringInfoString(&buf, metrics_select(an, true, an->group_exprs != NIL && !history));
				break;
			}
		case CQ_MODE_COMPLETE:
			appendStringInfoString(&buf, metrics_select(an, false, false));
			break;
	}
	return buf.data;
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
 * count_stats_sql
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
static char *
count_stats_sql(CqAnalysis *an, const char *from, const char *pred, bool history)
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
		q->jointree->quals = delta_quals(an, history);
		q->targetList = list_make2(makeTargetEntry((Expr *) et, 1, "et", false),
								   makeTargetEntry((Expr *) k, 2, "k", false));
		nest = pin_search_path();
		inner = pg_get_querydef(q, false);
		unpin_search_path(nest);
		finite = psprintf("i.k IS TRUE AND %s", finite);
		return psprintf("SELECT count(*), min(i.et) FILTER (WHERE %s)%s, max(i.et) FILTER (WHERE %s)%s, %s "
						"FROM (%s) i",
						finite, tz, finite, tz,
						avg_time_sql(psprintf("(avg(extract(epoch FROM i.et)) FILTER (WHERE %s))::pg_catalog.float8",
											  finite)),
						inner);
	}

	/*
	 * Joins: the stream rows that find their partners, each once however
	 * many it finds (identified by table and tuple id).
	 */
	q->jointree->quals = make_and_qual(q->jointree->quals, delta_quals(an, history));
	q->targetList = list_make3(makeTargetEntry((Expr *) makeVar(an->source_rti, TableOidAttributeNumber,
																OIDOID, -1, InvalidOid, 0),
											   1, "t", false),
							   makeTargetEntry((Expr *) makeVar(an->source_rti, SelfItemPointerAttributeNumber,
																TIDOID, -1, InvalidOid, 0),
											   2, "c", false),
							   makeTargetEntry((Expr *) et, 3, "et", false));
	nest = pin_search_path();
	inner = pg_get_querydef(q, false);
	unpin_search_path(nest);
	return psprintf("SELECT (SELECT count(*) FROM %s WHERE %s), min(i.et)%s, max(i.et)%s, "
					"%s FROM (SELECT DISTINCT j.t, j.c, j.et FROM (%s) j WHERE pg_catalog.isfinite(j.et)) i",
					from, pred, tz, tz, avg_time_sql("avg(extract(epoch FROM i.et))::pg_catalog.float8"), inner);
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
	an->hash_keys = an->is_aggregate && cq_plan_state_hashed(q->state_table);

	if (an->is_aggregate)
	{
		viewid = get_relname_relid(psprintf("f_%d", q->id), get_namespace_oid("cq_state", false));
		if (!OidIsValid(viewid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("state of continuous query \"%s\" is missing", q->name),
					 errhint("Drop and recreate the continuous query.")));
		/*
		 * The final expressions are generated anew rather than read from
		 * the view, which keeps those of the version that created it.
		 */
		plan->complete_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM (SELECT %s FROM %s s) f",
									  target, target_columns(an, "", false, false),
									  output_list(an, viewid), final_select_list(an),
									  cq_sql_relname_str(q->state_table));
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
		/* rows of the batch, and event-time statistics of the rows the query reads */
		const char *pred_history = psprintf("%s IS NULL OR (%s < $2 AND pg_catalog.pg_visible_in_snapshot(%s, $3))",
											CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN);

		if (an->et_attno != InvalidAttrNumber)
		{
			plan->count_sql = count_stats_sql(an, psprintf("%s%s", only, source), pred, false);
			plan->count_sql_history = count_stats_sql(an, psprintf("%s%s", only, source), pred_history, true);
		}
		else
		{
			const char *stats = "NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz, "
				"NULL::pg_catalog.timestamptz";

			plan->count_sql = psprintf("SELECT count(*), %s FROM %s%s WHERE %s",
									   stats, only, source, pred);
			plan->count_sql_history = psprintf("SELECT count(*), %s FROM %s%s WHERE %s",
											   stats, only, source, pred_history);
		}
	}
	/* ordered as xid8 (numerically), the first $5 transactions only */
	plan->count_xids_sql = psprintf("SELECT %s, count(*) FROM %s%s WHERE %s GROUP BY %s ORDER BY %s LIMIT $5",
									CQ_TRACKING_COLUMN, only, source, pred, CQ_TRACKING_COLUMN,
									CQ_TRACKING_COLUMN);
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
 * plan_sql_list
 *	  Every statement text of a plan (NULLs included), for forgetting their
 *	  saved SPI plans.
 */
static List *
plan_sql_list(CqPlan *plan)
{
	List	   *l = NIL;

	l = lappend(l, plan->batch_sql);
	l = lappend(l, plan->batch_sql_history);
	l = lappend(l, plan->complete_sql);
	l = lappend(l, plan->count_sql);
	l = lappend(l, plan->count_sql_history);
	l = lappend(l, plan->count_xids_sql);
	l = lappend(l, plan->count_history_sql);
	l = lappend(l, plan->rebuild_sql);
	return l;
}

/*
 * forget_entry_plans
 *	  Free the saved SPI plans of an entry's statements, except those that a
 *	  new plan of the same query (keep, or NULL) still uses: a plan prepared
 *	  for a query that changed or is gone would never be used again.
 */
static void
forget_entry_plans(CqPlanCacheEntry *entry, CqPlan *keep)
{
	List	   *keep_sql = keep ? plan_sql_list(keep) : NIL;
	ListCell   *lc,
			   *lk;

	foreach(lc, plan_sql_list(entry->plan))
	{
		const char *sql = lfirst(lc);
		bool		kept = false;

		if (sql == NULL)
			continue;
		foreach(lk, keep_sql)
			if (lfirst(lk) && strcmp(lfirst(lk), sql) == 0)
				kept = true;
		if (!kept)
			cq_spi_plan_forget(sql);
	}
}

/*
 * sweep_dropped
 *	  Evict the entries (and their saved SPI plans) of queries that no
 *	  longer exist: every query has a view cq_state.q_<id> for as long as it
 *	  exists.  Runs when an entry is built, which any DROP causes through
 *	  its invalidations, so a long-lived worker does not keep the plans of
 *	  every query it ever ran.
 */
static void
sweep_dropped(int32 keep_id)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;
	Oid			nsp = get_namespace_oid("cq_state", true);

	hash_seq_init(&status, plan_entries);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->id == keep_id ||
			(OidIsValid(nsp) && OidIsValid(get_relname_relid(psprintf("q_%d", entry->id), nsp))))
			continue;
		forget_entry_plans(entry, NULL);
		MemoryContextDelete(entry->cxt);
		(void) hash_search(plan_entries, &entry->id, HASH_REMOVE, NULL);
	}
}

/*
 * cq_plan_get
 *	  The analysis and SQL of a query, from the cache or built now.
 *
 *	  A new entry is built completely, in a context that belongs to the
 *	  caller until then, before it replaces the old one: an error on the way
 *	  (in analysis, in SQL generation, out of memory) leaves the cache as it
 *	  was, never with an entry that points to freed memory.
 */
void
cq_plan_get(CqQuery *q, CqAnalysis **an, CqPlan **plan)
{
	CqPlanCacheEntry *entry;
	bool		found;
	char	   *key = plan_key(q);
	MemoryContext old;
	uint64		gen;
	CqAnalysis *new_an;
	CqPlan	   *new_plan;
	MemoryContext cxt;
	CqAnalysis *copy_an;
	CqPlan	   *copy_plan;
	char	   *copy_key;

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

	/* build in the caller's context */
	gen = plan_generation;
	new_an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	new_plan = cq_plan_build(new_an, q);

	/* the copy to keep, in a context freed with the caller's until it is complete */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq analysis", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	copy_an = palloc(sizeof(CqAnalysis));
	*copy_an = *new_an;
	copy_an->query = copyObject(new_an->query);
	copy_an->group_exprs = copyObject(new_an->group_exprs);
	copy_an->group_eqops = list_copy(new_an->group_eqops);
	copy_an->aggs = NIL;		/* only the SQL is used from the cache */
	copy_an->arg_exprs = NIL;
	copy_an->filter_exprs = NIL;
	copy_an->parts = NIL;
	copy_an->outputs = NIL;
	copy_an->output_key = NIL;
	copy_an->wm_end_fmt = new_an->wm_end_fmt ? pstrdup(new_an->wm_end_fmt) : NULL;
	copy_plan = palloc0(sizeof(CqPlan));
#define COPY_SQL(f) copy_plan->f = new_plan->f ? pstrdup(new_plan->f) : NULL
	COPY_SQL(batch_sql);
	COPY_SQL(batch_sql_history);
	COPY_SQL(complete_sql);
	COPY_SQL(count_sql);
	COPY_SQL(count_sql_history);
	COPY_SQL(count_xids_sql);
	COPY_SQL(count_history_sql);
	COPY_SQL(rebuild_sql);
#undef COPY_SQL
	copy_plan->single_scan = new_plan->single_scan;
	copy_key = pstrdup(key);
	MemoryContextSwitchTo(old);

	/* an entry for a new query may be allocated here; nothing fails after it */
	entry = hash_search(plan_entries, &q->id, HASH_ENTER, &found);
	if (found)
	{
		forget_entry_plans(entry, copy_plan);
		MemoryContextDelete(entry->cxt);
	}
	MemoryContextSetParent(cxt, CacheMemoryContext);
	entry->cxt = cxt;
	entry->an = copy_an;
	entry->plan = copy_plan;
	entry->key = copy_key;
	entry->generation = gen;

	sweep_dropped(q->id);
	*an = new_an;
	*plan = new_plan;
}
