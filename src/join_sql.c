/*-------------------------------------------------------------------------
 *
 * join_sql.c
 *	  The SQL of a join of two streams' batches (join.c runs them): the
 *	  user's query over the buffer tables, the statements that add new
 *	  rows, evict, rebuild and count, and for an aggregation over the join
 *	  the statements that fold its matches into the state and close
 *	  windows.  The user's query is edited as a tree and deparsed, never as
 *	  text.  Everything here only builds SQL text; nothing runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "join_sql.h"
#include "delta.h"
#include "catalog.h"
#include "objects.h"
#include "security.h"
#include "sink.h"
#include "sql_builder.h"
#include "state.h"
#include "tracking.h"
#include "stamp_type.h"

/*
 * et_sql
 *	  A side's event time as a timestamptz, from column `col` (SQL) of its
 *	  event-time column's type: a timestamp's value at UTC, exactly.
 */
static char *
et_sql(CqJoinSide *side, const char *col)
{
	if (side->et_attno == InvalidAttrNumber)
		return "NULL::pg_catalog.timestamptz";
	if (side->et_is_tz)
		return pstrdup(col);
	return psprintf("pg_catalog.timezone('UTC'::pg_catalog.text, %s)", col);
}

/*
 * src_et_sql
 *	  A side's event time read from source alias s, as et_sql.
 */
static char *
src_et_sql(CqJoinSide *side)
{
	if (side->et_attno == InvalidAttrNumber)
		return "NULL::pg_catalog.timestamptz";
	return et_sql(side, psprintf("s.%s", quote_identifier(get_attname(side->relid, side->et_attno, false))));
}

/*
 * param_et_sql
 *	  Timestamptz parameter $n as a value comparable to the side's
 *	  event-time column itself (lets an index on it serve).
 */
static char *
param_et_sql(CqJoinSide *side, int n)
{
	if (side->et_is_tz)
		return psprintf("$%d", n);
	return psprintf("pg_catalog.timezone('UTC'::pg_catalog.text, $%d)", n);
}

/*
 * buffer_column_list
 *	  "a3, a5" (with prefix before each), the buffer columns of a side.
 */
static char *
buffer_column_list(CqJoinSide *side, const char *prefix)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, side->attnos)
		appendStringInfo(&buf, "%s%sa%d", buf.len ? ", " : "", prefix, lfirst_int(lc));
	return buf.data;
}

/*
 * source_column_list
 *	  "s.x AS a3, s.y AS a5", the source columns a side's buffer keeps.
 */
static char *
source_column_list(CqJoinSide *side)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, side->attnos)
		appendStringInfo(&buf, "%ss.%s AS a%d", buf.len ? ", " : "",
						 quote_identifier(get_attname(side->relid, lfirst_int(lc), false)),
						 lfirst_int(lc));
	return buf.data;
}

/*
 * new_in_range_sql
 *	  "visible in $3 and not in $4" for the cq_xid column x of relid: one
 *	  call of cq.xid_new when the catalog has it (delta.c), else two of
 *	  pg_visible_in_snapshot.
 */
static char *
new_in_range_sql(Oid relid, const char *x)
{
	if (OidIsValid(cq_delta_xid_new_function(relid)))
		return psprintf("cq.%2$s(s.%1$s, $3, $4)", x, cq_delta_xid_new_name(cq_delta_stamp_type(relid)));
	return psprintf("pg_catalog.pg_visible_in_snapshot(s.%1$s, $3) "
					"AND NOT pg_catalog.pg_visible_in_snapshot(s.%1$s, $4)", x);
}

/*
 * range_sql
 *	  The rows of alias s in the offset range $1..$4 (delta.c's predicate,
 *	  as text); history: batch 0 also reads rows from before tracking.
 */
static char *
range_sql(Oid relid, bool history)
{
	const char *x = quote_identifier(get_attname(relid, cq_source_tracking_attnum(relid), false));
	/* the column type's operators against xid8 (a cq.xid48 cq_xid: cq's) */
	Oid			type = cq_delta_stamp_type(relid);
	const char *ge = cq_stamp_operator_sql(type, ">=");
	const char *lt = cq_stamp_operator_sql(type, "<");

	if (history)
		return psprintf("(s.%1$s IS NULL OR (s.%1$s %2$s $2 "
						"AND pg_catalog.pg_visible_in_snapshot(s.%1$s, $3)))", x, lt);
	return psprintf("s.%1$s %2$s $1 AND s.%1$s %3$s $2 AND %4$s",
					x, ge, lt, new_in_range_sql(relid, x));
}

/*
 * jointree_is_side
 *	  Is the join-tree node the RangeTblRef of range-table index rti?
 */
static bool
jointree_is_side(Node *node, Index rti)
{
	return node && IsA(node, RangeTblRef) && ((RangeTblRef *) node)->rtindex == (int) rti;
}

/* Which buffered rows of a stream a statement reads (buffers_sql). */
typedef enum BufRows
{
	ROWS_ALL,					/* every buffered row */
	ROWS_NEW,					/* added by this batch ($6) */
	ROWS_OLD,					/* added before this batch */
	ROWS_EVICTED,				/* outer joins: unmatched rows at or below the
								 * eviction bound ($1), or without event time */
	ROWS_NONE					/* none (the nullable side of ROWS_EVICTED) */
} BufRows;

/* What buffers_sql makes of the user's query. */
typedef enum BufQuery
{
	QUERY_MATCHES,				/* its matched rows (an outer join as inner) */
	QUERY_PAIRS,				/* ctid (tid) of side tid_side's rows that
								 * match, for the join's ON condition only */
	QUERY_UNMATCHED				/* outer joins: the preserved side's rows
								 * extended with NULLs */
} BufQuery;

/*
 * agg_input_tlist
 *	  The select list of an aggregation's input rows, as
 *	  cq_delta_inner_sql makes it for one stream: grouping keys g<i>,
 *	  aggregate arguments x<i>, FILTER conditions f<i>; no grouping.
 */
static void
agg_input_tlist(CqAnalysis *an, Query *q)
{
	List	   *tlist = NIL;
	int			resno = 1;
	ListCell   *lc;

	foreach(lc, an->group_exprs)
		tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
											   psprintf("g%d", foreach_current_index(lc) + 1), false));
	foreach(lc, an->arg_exprs)
		tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
											   psprintf("x%d", foreach_current_index(lc) + 1), false));
	foreach(lc, an->filter_exprs)
		tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
											   psprintf("f%d", foreach_current_index(lc) + 1), false));
	if (tlist == NIL)
		tlist = list_make1(makeTargetEntry((Expr *) makeBoolConst(true, false), resno++, "g0", false));
	q->targetList = tlist;
	q->groupClause = NIL;
	q->groupDistinct = false;
	q->hasAggs = false;
	q->havingQual = NULL;
	q->sortClause = NIL;
	q->distinctClause = NIL;
}

/*
 * rows_qual
 *	  The condition on stream s's buffer rows for `rows` (ROWS_EVICTED: with
 *	  the eviction bound in parameter $bound_param).
 */
static Node *
rows_qual(CqJoinSide *side, BufRows rows, int bound_param)
{
	int			batch_att = list_length(side->attnos) + 1;

	if (rows == ROWS_ALL)
		return NULL;
	if (rows == ROWS_NONE)
		return (Node *) makeBoolConst(false, false);
	if (rows == ROWS_EVICTED)
	{
		Oid			type = side->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID;
		Var		   *et = makeVar(side->rti, cq_joinspec_buffer_attno(side, side->et_attno), type, -1, InvalidOid, 0);
		Oid			le = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString("<=")), type, type);
		NullTest   *nt = makeNode(NullTest);

		nt->arg = (Expr *) copyObject(et);
		nt->nulltesttype = IS_NULL;
		nt->location = -1;
		return (Node *) make_andclause(list_make2(
												  make_orclause(list_make2(make_opclause(le, BOOLOID, false, (Expr *) et,
																						 (Expr *) cq_make_param(bound_param, type),
																						 InvalidOid, InvalidOid),
																		   nt)),
												  make_notclause((Expr *) makeVar(side->rti, batch_att + 1, BOOLOID,
																				  -1, InvalidOid, 0))));
	}
	return (Node *) make_opclause(OpernameGetOprid(list_make2(makeString("pg_catalog"),
															  makeString(rows == ROWS_NEW ? "=" : "<")),
												   INT8OID, INT8OID),
								  BOOLOID, false,
								  (Expr *) makeVar(side->rti, batch_att, INT8OID, -1, InvalidOid, 0),
								  (Expr *) cq_make_param(6, INT8OID), InvalidOid, InvalidOid);
}

/*
 * range_qual
 *	  For matches (QUERY_MATCHES, QUERY_PAIRS): "a.et >= b.et + bound_a"
 *	  for each stream a that the join condition bounds by the other stream
 *	  b's event time, over the buffer columns.  Redundant: eviction rests on
 *	  the same implication (a row of a with a.et <= W + bound_a matches no
 *	  row of b with b.et > W, so every match has a.et >= b.et + bound_a),
 *	  but the planner can use it as an index range on a's event time for
 *	  each row of b: the user's condition, written "c.ts <= i.ts + 1 hour",
 *	  gives only one end of the range of i.ts, and a batch with many new
 *	  rows then scans most of the other buffer once per new row.
 */
static Node *
range_qual(CqJoinSpec *js)
{
	Node	   *qual = NULL;

	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *a = &js->side[s];
		CqJoinSide *b = &js->side[1 - s];
		Oid			type = a->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID;
		Interval   *iv;
		Oid			plus;
		Oid			ge;
		Expr	   *rhs;

		if (!a->bounded || a->et_attno == InvalidAttrNumber || b->et_attno == InvalidAttrNumber ||
			a->et_is_tz != b->et_is_tz)
			continue;
		iv = palloc0(sizeof(Interval));
		iv->time = a->bound_us;
		plus = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString("+")), type, INTERVALOID);
		ge = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString(">=")), type, type);
		if (!OidIsValid(plus) || !OidIsValid(ge))
			continue;
		rhs = make_opclause(plus, type, false,
							(Expr *) makeVar(b->rti, cq_joinspec_buffer_attno(b, b->et_attno), type, -1, InvalidOid, 0),
							(Expr *) makeConst(INTERVALOID, -1, InvalidOid, sizeof(Interval),
											   IntervalPGetDatum(iv), false, false),
							InvalidOid, InvalidOid);
		qual = make_and_qual(qual, (Node *) make_opclause(ge, BOOLOID, false,
														  (Expr *) makeVar(a->rti, cq_joinspec_buffer_attno(a, a->et_attno),
																		   type, -1, InvalidOid, 0),
														  rhs, InvalidOid, InvalidOid));
	}
	return qual;
}

/*
 * buffers_sql_ext
 *	  The user's query with each stream replaced by its buffer table, its
 *	  rows restricted by rows[s], made into `what`; with agg_input, its
 *	  select list is an aggregation's input columns (agg_input_tlist).  The tree is edited
 *	  (columns renumbered to the buffer's), never the text.
 */
static char *
buffers_sql_ext(CqAnalysis *an, Oid bufs[2], const BufRows rows[2], BufQuery what, int tid_side,
				bool agg_input, int bound_param)
{
	Query	   *q = copyObject(an->query);
	Node	   *extra = NULL;
	JoinExpr   *outer = NULL;
	int			nest;
	char	   *sql;

	if (agg_input)
		agg_input_tlist(an, q);

	/*
	 * The columns of JOIN ... ON/USING aliases list every column of the
	 * streams; those the buffers do not keep become dropped (NULL) entries,
	 * which the query does not read (joinspec.c follows those it reads).
	 */
	{
		ListCell   *lc;

		foreach(lc, q->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);
			ListCell   *la;

			if (rte->rtekind != RTE_JOIN)
				continue;
			foreach(la, rte->joinaliasvars)
			{
				Node	   *n = strip_implicit_coercions(lfirst(la));

				for (int s = 0; n && IsA(n, Var) && s < 2; s++)
					if (((Var *) n)->varno == (int) an->join->side[s].rti &&
						((Var *) n)->varlevelsup == 0 &&
						cq_joinspec_buffer_attno(&an->join->side[s], ((Var *) n)->varattno) == InvalidAttrNumber)
						lfirst(la) = NULL;
			}
		}
	}
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		int			natts = llast_int(side->attnos);	/* the largest column read */
		AttrMap    *map = make_attrmap(natts);
		bool		whole_row = false;
		RangeTblEntry *rte;
		List	   *colnames = NIL;
		ListCell   *lc;

		for (int a = 1; a <= natts; a++)
			map->attnums[a - 1] = cq_joinspec_buffer_attno(side, a);
		q = (Query *) map_variable_attnos((Node *) q, side->rti, 0, map, InvalidOid, &whole_row);
		rte = rt_fetch(side->rti, q->rtable);
		rte->relid = bufs[s];
		rte->relkind = RELKIND_RELATION;
		rte->inh = false;
		foreach(lc, side->attnos)
			colnames = lappend(colnames, makeString(psprintf("a%d", lfirst_int(lc))));
		colnames = lappend(colnames, makeString(CQ_JOIN_BATCH_COLUMN));
		if (an->join->jointype != JOIN_INNER)
			colnames = lappend(colnames, makeString(CQ_JOIN_MATCHED_COLUMN));
		rte->alias = makeAlias(side->refname, NIL);
		rte->eref = makeAlias(side->refname, colnames);
	}

	/* the outer join of the two streams (joinspec.c: the only item in FROM) */
	if (an->join->jointype != JOIN_INNER)
		outer = (JoinExpr *) linitial(q->jointree->fromlist);
	if (outer && what != QUERY_UNMATCHED)
	{
		/* matched rows are those of the inner join */
		outer->jointype = JOIN_INNER;
		rt_fetch(outer->rtindex, q->rtable)->jointype = JOIN_INNER;
	}
	if (what == QUERY_PAIRS)
	{
		/* rows that satisfy the ON condition, whatever WHERE says of the result */
		q->targetList = list_make1(makeTargetEntry((Expr *) makeVar(an->join->side[tid_side].rti,
																	SelfItemPointerAttributeNumber,
																	TIDOID, -1, InvalidOid, 0),
												   1, "tid", false));
		q->jointree->quals = NULL;
		/* no grouping of an aggregation over the join: only pairs */
		q->groupClause = NIL;
		q->groupDistinct = false;
		q->hasAggs = false;
		q->havingQual = NULL;
		q->sortClause = NIL;
		q->distinctClause = NIL;
	}
	for (int s = 0; s < 2; s++)
	{
		if (what == QUERY_UNMATCHED && rows[s] == ROWS_NONE)
		{
			/*
			 * The nullable side reads nothing: ON ... AND false, and the
			 * preserved side's rows come out extended with NULLs; a full
			 * join does so as a left or right join, so that the other side's
			 * rows do not come out too.
			 */
			int			preserved = 1 - s;

			outer->quals = make_and_qual(outer->quals, rows_qual(&an->join->side[s], ROWS_NONE, bound_param));
			if (outer->jointype == JOIN_FULL)
			{
				outer->jointype = jointree_is_side(outer->larg, an->join->side[preserved].rti) ? JOIN_LEFT : JOIN_RIGHT;
				rt_fetch(outer->rtindex, q->rtable)->jointype = outer->jointype;
			}
		}
		else
			extra = make_and_qual(extra, rows_qual(&an->join->side[s], rows[s], bound_param));
	}
	if (what == QUERY_MATCHES || what == QUERY_PAIRS)
		extra = make_and_qual(extra, range_qual(an->join));
	q->jointree->quals = make_and_qual(q->jointree->quals, extra);
	nest = cq_security_deparse_begin();
	sql = cq_sql_querydef(q);
	cq_security_deparse_end(nest);
	return sql;
}

/*
 * buffers_sql
 *	  buffers_sql_ext for the user's select list, eviction bound in $1.
 */
static char *
buffers_sql(CqAnalysis *an, Oid bufs[2], const BufRows rows[2], BufQuery what, int tid_side)
{
	return buffers_sql_ext(an, bufs, rows, what, tid_side, false, 1);
}


/*
 * agg_sql
 *	  An aggregation over the join (Spark 3.5+: a windowed aggregation,
 *	  append mode, after a stream-stream join): the batch's matches, both
 *	  halves of step 2, are the new input rows of the state machinery
 *	  (state.c, sink.c) in place of a stream's new rows.  fold merges their
 *	  partial aggregates into the state, dropping groups whose window ended
 *	  at or before $7 (late: the aggregation's watermark of the previous
 *	  batch, see agg_watermark); close then writes the windows that end at
 *	  or before $5 (its watermark of this batch) to the target and removes
 *	  them.  Two statements: the windows fold inserts must be visible to
 *	  close.  $6 is the batch id.
 */
static void
agg_sql(CqAnalysis *an, CqQuery *q, Oid bufs[2], CqJoinSql *js)
{
	static const BufRows first_new[2] = {ROWS_NEW, ROWS_ALL};
	static const BufRows second_new[2] = {ROWS_OLD, ROWS_NEW};
	const char *state = cq_sql_relname_str(q->state_table);
	Oid			viewid = cq_objects_relid("f", q->id);
	StringInfoData buf;
	bool		has_o;
	bool		has_o1;

	if (!OidIsValid(q->state_table) || !OidIsValid(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("state of continuous query \"%s\" is missing", q->name),
				 errhint("Drop and recreate the continuous query.")));
	an->hash_keys = cq_state_hashed(q->state_table);
	an->late_param = 7;
	an->join_delta_sql = psprintf("(%s) UNION ALL (%s)",
								  buffers_sql_ext(an, bufs, first_new, QUERY_MATCHES, 0, true, 1),
								  buffers_sql_ext(an, bufs, second_new, QUERY_MATCHES, 0, true, 1));
	/*
	 * Outer joins: a preserved stream's unmatched rows leaving its buffer in
	 * this batch (event time at or below the bound in $8 or $9, NULL when
	 * nothing is evicted), extended with NULLs, are input rows too.
	 */
	for (int s = 0; s < 2; s++)
	{
		BufRows		evicted[2];

		if (!an->join->side[s].preserved)
			continue;
		evicted[s] = ROWS_EVICTED;
		evicted[1 - s] = ROWS_NONE;
		an->join_delta_sql = psprintf("%s UNION ALL (SELECT * FROM (%s) u WHERE $%d IS NOT NULL)",
									  an->join_delta_sql,
									  buffers_sql_ext(an, bufs, evicted, QUERY_UNMATCHED, 0, true, 8 + s),
									  8 + s);
	}
	js->fold = psprintf("WITH %s SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM m WHERE _ins), "
						"(SELECT count(*) FROM d WHERE NOT (%s))",
						cq_state_upsert_ctes(an, state, false, false, false),
						psprintf("($7 IS NULL OR d.e IS NULL OR d.e OPERATOR(pg_catalog.>) %s)",
								 an->et_is_tz ? "$7" : "($7 AT TIME ZONE 'UTC')"));
	initStringInfo(&buf);
	appendStringInfo(&buf, "WITH x AS (DELETE FROM %s s WHERE s.e OPERATOR(pg_catalog.<=) %s RETURNING s.*)",
					 state, cq_state_wm_param(an));
	cq_sink_write_ctes(&buf, an, CQ_MODE_APPEND, viewid, cq_sql_relname_str(q->target), false,
					   &has_o, &has_o1);
	appendStringInfoString(&buf, " SELECT (SELECT count(*) FROM x), (SELECT count(*) FROM o)");
	js->close = buf.data;
}

/*
 * cq_join_sql_build
 *	  Every statement of a join's batches.  Buffers bufs, late rows in
 *	  `late` (quoted names).
 */
void
cq_join_sql_build(CqAnalysis *an, CqQuery *q, Oid bufs[2], const char *late, CqJoinSql *js)
{
	static const BufRows first_new[2] = {ROWS_NEW, ROWS_ALL};
	static const BufRows second_new[2] = {ROWS_OLD, ROWS_NEW};
	bool		reads_history = cq_query_reads_history(q);

	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &an->join->side[s];
		const char *buf = cq_sql_relname_str(bufs[s]);
		const char *src = cq_sql_relname_str(side->relid);
		const char *xcol = quote_identifier(get_attname(side->relid, cq_source_tracking_attnum(side->relid), false));

		for (int h = 0; h < 2; h++)
		{
			char	   *sql = psprintf(
									   "WITH n AS (SELECT %s, %s AS et, s.%s AS x FROM %s s WHERE %s), "
									   "i AS (INSERT INTO %s (%s, %s) SELECT %s, $6 FROM n "
									   "  WHERE $5 IS NULL OR n.et IS NULL OR n.et OPERATOR(pg_catalog.>) $5 RETURNING 1), "
									   "d AS (INSERT INTO %s (side, xid, ts) SELECT DISTINCT %d::pg_catalog.int2, n.x, n.et FROM n "
									   "  WHERE n.et OPERATOR(pg_catalog.<=) $5) "
									   "SELECT count(*), count(*) FILTER (WHERE n.et OPERATOR(pg_catalog.<=) $5), "
									   "(SELECT count(*) FROM i), "
									   "min(n.et) FILTER (WHERE pg_catalog.isfinite(n.et)), "
									   "max(n.et) FILTER (WHERE pg_catalog.isfinite(n.et)), "
									   "avg(EXTRACT(epoch FROM n.et)) FILTER (WHERE pg_catalog.isfinite(n.et)), "
									   "count(n.et) FILTER (WHERE pg_catalog.isfinite(n.et)) FROM n",
									   source_column_list(side), src_et_sql(side),
									   xcol, src, range_sql(side->relid, h == 1),
									   buf, buffer_column_list(side, ""), CQ_JOIN_BATCH_COLUMN,
									   buffer_column_list(side, "n."),
									   late, s);

			if (h == 0)
				js->add[s] = sql;
			else
				js->add_history[s] = sql;
		}

		js->evict[s] = psprintf("WITH e AS (DELETE FROM %s b WHERE b.a%d OPERATOR(pg_catalog.<=) %s OR b.a%d IS NULL RETURNING 1), "
								"l AS (DELETE FROM %s WHERE side OPERATOR(pg_catalog.=) %d::pg_catalog.int2 "
								"  AND ts OPERATOR(pg_catalog.<=) $1) "
								"SELECT count(*) FROM e",
								buf, side->et_attno, param_et_sql(side, 1), side->et_attno, late, s);

		/*
		 * Rebuild ($1..$4: the processed range, as batch.c's rebuild; $5:
		 * the last eviction bound or NULL): the processed rows not dropped
		 * as late and not evicted.
		 */
		js->rebuild[s] = psprintf("WITH r AS (INSERT INTO %1$s (%2$s, %3$s) SELECT %4$s, 0 FROM "
								  "(SELECT %5$s, %6$s AS et, s.%7$s AS x FROM %8$s s WHERE %9$s(s.%7$s OPERATOR(pg_catalog.>=) $1 "
								  "  AND s.%7$s OPERATOR(pg_catalog.<) $2 AND %12$s)) n "
								  "WHERE ($5 IS NULL OR n.et OPERATOR(pg_catalog.>) $5) "
								  "AND NOT EXISTS (SELECT 1 FROM %10$s l WHERE l.side OPERATOR(pg_catalog.=) %11$d::pg_catalog.int2 "
								  "  AND l.xid OPERATOR(pg_catalog.=) n.x AND l.ts OPERATOR(pg_catalog.=) n.et) RETURNING 1) "
								  "SELECT count(*) FROM r",
								  buf, buffer_column_list(side, ""), CQ_JOIN_BATCH_COLUMN,
								  buffer_column_list(side, "n."),
								  source_column_list(side),
								  src_et_sql(side),
								  xcol, src,
								  reads_history ? psprintf("s.%s IS NULL OR ", xcol) : "",
								  late, s, new_in_range_sql(side->relid, xcol));
	}
	js->fold = js->close = js->output = NULL;
	if (an->is_aggregate)
		agg_sql(an, q, bufs, js);
	else
		js->output = psprintf("WITH o AS (INSERT INTO %s (%s) (%s) UNION ALL (%s) RETURNING 1) SELECT count(*) FROM o",
							  cq_sql_relname_str(q->target), cq_sink_target_columns(an, "", false, false),
							  buffers_sql(an, bufs, first_new, QUERY_MATCHES, 0),
							  buffers_sql(an, bufs, second_new, QUERY_MATCHES, 0));

	/*
	 * Outer joins: the rows of a preserved side that matched in this batch
	 * are marked; at eviction the unmatched ones are written extended with
	 * NULLs ($1 the eviction bound, as a value of the event-time column's
	 * type).
	 */
	for (int s = 0; s < 2; s++)
	{
		BufRows		evicted[2];

		js->matched[s] = js->emit[s] = NULL;
		if (!an->join->side[s].preserved)
			continue;
		js->matched[s] = psprintf("WITH p AS ((%s) UNION ALL (%s)) "
								  "UPDATE %s b SET %s = true FROM p "
								  "WHERE b.ctid OPERATOR(pg_catalog.=) p.tid AND NOT b.%s",
								  buffers_sql(an, bufs, first_new, QUERY_PAIRS, s),
								  buffers_sql(an, bufs, second_new, QUERY_PAIRS, s),
								  cq_sql_relname_str(bufs[s]), CQ_JOIN_MATCHED_COLUMN, CQ_JOIN_MATCHED_COLUMN);
		evicted[s] = ROWS_EVICTED;
		evicted[1 - s] = ROWS_NONE;
		if (an->is_aggregate)
			continue;			/* they are the aggregation's input (agg_sql) */
		js->emit[s] = psprintf("WITH o AS (INSERT INTO %s (%s) %s RETURNING 1) SELECT count(*) FROM o",
							   cq_sql_relname_str(q->target), cq_sink_target_columns(an, "", false, false),
							   buffers_sql(an, bufs, evicted, QUERY_UNMATCHED, 0));
	}
	/* max_rows_per_trigger: both streams' new rows per transaction, in id order (offsets.c) */
	{
		const char *x[2];

		for (int s = 0; s < 2; s++)
			x[s] = quote_identifier(get_attname(an->join->side[s].relid,
												cq_source_tracking_attnum(an->join->side[s].relid), false));
		js->count_xids = psprintf("SELECT u.x, sum(u.n)::pg_catalog.int8 FROM "
								  "(SELECT s.%s AS x, count(*) AS n FROM %s s WHERE %s GROUP BY 1 UNION ALL "
								  "SELECT s.%s AS x, count(*) AS n FROM %s s WHERE %s GROUP BY 1) u "
								  "GROUP BY u.x ORDER BY u.x LIMIT $5",
								  x[0], cq_sql_relname_str(an->join->side[0].relid),
								  range_sql(an->join->side[0].relid, false),
								  x[1], cq_sql_relname_str(an->join->side[1].relid),
								  range_sql(an->join->side[1].relid, false));
		js->count_history = psprintf("SELECT (SELECT count(*) FROM %s s WHERE s.%s IS NULL) + "
									 "(SELECT count(*) FROM %s s WHERE s.%s IS NULL)",
									 cq_sql_relname_str(an->join->side[0].relid), x[0],
									 cq_sql_relname_str(an->join->side[1].relid), x[1]);
	}
	js->count = psprintf("SELECT (SELECT count(*) FROM %s), (SELECT count(*) FROM %s), %s",
						 cq_sql_relname_str(bufs[0]), cq_sql_relname_str(bufs[1]),
						 an->is_aggregate ?
						 psprintf("(SELECT count(*) FROM %s)", cq_sql_relname_str(q->state_table)) :
						 "0::pg_catalog.int8");
}

/*
 * cq_join_sql_list
 *	  Every statement text of a CqJoinSql (NULLs included).
 */
List *
cq_join_sql_list(CqJoinSql *js)
{
	List	   *l = NIL;

	for (int s = 0; s < 2; s++)
	{
		l = lappend(l, js->add[s]);
		l = lappend(l, js->add_history[s]);
		l = lappend(l, js->evict[s]);
		l = lappend(l, js->rebuild[s]);
		l = lappend(l, js->matched[s]);
		l = lappend(l, js->emit[s]);
	}
	l = lappend(l, js->output);
	l = lappend(l, js->count);
	l = lappend(l, js->count_xids);
	l = lappend(l, js->count_history);
	l = lappend(l, js->fold);
	l = lappend(l, js->close);
	return l;
}

/*
 * cq_join_sql_copy
 *	  A CqJoinSql's statements, copied into the current memory context.
 */
void
cq_join_sql_copy(CqJoinSql *dst, CqJoinSql *src)
{
#define COPY_SQL(f) dst->f = src->f ? pstrdup(src->f) : NULL
	for (int s = 0; s < 2; s++)
	{
		COPY_SQL(add[s]);
		COPY_SQL(add_history[s]);
		COPY_SQL(evict[s]);
		COPY_SQL(rebuild[s]);
		COPY_SQL(matched[s]);
		COPY_SQL(emit[s]);
	}
	COPY_SQL(output);
	COPY_SQL(count);
	COPY_SQL(count_xids);
	COPY_SQL(count_history);
	COPY_SQL(fold);
	COPY_SQL(close);
#undef COPY_SQL
}
