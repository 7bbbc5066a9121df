/*-------------------------------------------------------------------------
 *
 * state.c
 *	  A query's state table: its DDL, its final view, and the CTEs of a
 *	  batch that merge the new rows' partial aggregates into it (d, m) and
 *	  evict closed windows (x); for DISTINCT aggregates, the (group, value)
 *	  pairs seen, kept in a table of their own (di, dv, xd).
 *
 * Groups are matched with each key's own equality (schema-qualified
 * OPERATOR()), by a hash of the keys (column h) when every key type hashes
 * consistently with it, else through a unique index on the keys.  The
 * merge expressions come from the aggregate table (aggregates.c).
 * Everything here only builds SQL text; nothing runs.
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

#include "state.h"
#include "sql_builder.h"
#include "aggregates.h"
#include "analyze.h"
#include "delta.h"

/*
 * cq_state_ngroup_cols
 *	  Key columns of the state table: one per grouping expression, or the
 *	  constant key g0 for an aggregate without GROUP BY.
 */
int
cq_state_ngroup_cols(CqAnalysis *an)
{
	return an->group_exprs == NIL ? 1 : list_length(an->group_exprs);
}

void
cq_state_append_group_cols(StringInfo buf, CqAnalysis *an, const char *prefix, const char *sep)
{
	if (an->group_exprs == NIL)
		appendStringInfo(buf, "%sg0", prefix);
	else
		for (int i = 1; i <= list_length(an->group_exprs); i++)
			appendStringInfo(buf, "%s%sg%d", i > 1 ? sep : "", prefix, i);
}

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
 * key_op
 *	  key_eq_operator of key g, or plain equality for the single key g0 of
 *	  a query without GROUP BY expressions.
 */
static const char *
key_op(CqAnalysis *an, int g)
{
	return an->group_exprs == NIL ? "OPERATOR(pg_catalog.=)" : key_eq_operator(an, g);
}

/*
 * cq_state_append_key_equal
 *	  "(l = r OR both NULL)" for grouping key g (l and r are column
 *	  references), with the key's own equality: NULL keys match NULL keys,
 *	  as GROUP BY puts them in one group.  For a key of a composite type,
 *	  "IS NULL" is also true of a value whose fields are all NULL, which
 *	  GROUP BY keeps apart from a NULL key: there both sides are tested for
 *	  being NULL values themselves (num_nulls counts NULL arguments).
 */
void
cq_state_append_key_equal(StringInfo buf, CqAnalysis *an, int g, const char *l, const char *r)
{
	const char *op = key_op(an, g);

	if (an->group_exprs != NIL && type_is_rowtype(exprType(list_nth(an->group_exprs, g))))
		appendStringInfo(buf, "(%s %s %s OR pg_catalog.num_nulls(%s, %s) OPERATOR(pg_catalog.=) 2)",
						 l, op, r, l, r);
	else
		appendStringInfo(buf, "(%s %s %s OR (%s IS NULL AND %s IS NULL))", l, op, r, l, r);
}

/*
 * cq_state_append_keys_equal
 *	  "l.g1 = r.g1 AND ..." with each key's own equality (l and r are SQL
 *	  prefixes such as "s." and "d."; right_cols, if given, names the right
 *	  side's columns per key).  With null_safe, NULL keys match NULL keys
 *	  (cq_state_append_key_equal).
 */
void
cq_state_append_keys_equal(StringInfo buf, CqAnalysis *an, const char *l, List *left_cols,
				  const char *r, bool null_safe)
{
	int			ng = cq_state_ngroup_cols(an);

	for (int g = 0; g < ng; g++)
	{
		const char *lcol = left_cols ? (const char *) list_nth(left_cols, g) :
			an->group_exprs == NIL ? "g0" : psprintf("g%d", g + 1);
		const char *rcol = an->group_exprs == NIL ? "g0" : psprintf("g%d", g + 1);

		if (g > 0)
			appendStringInfoString(buf, " AND ");
		if (null_safe)
			cq_state_append_key_equal(buf, an, g, psprintf("%s%s", l, lcol), psprintf("%s%s", r, rcol));
		else
			appendStringInfo(buf, "%s%s %s %s%s", l, lcol, key_op(an, g), r, rcol);
	}
}

/*
 * cq_state_key_hash_sql
 *	  The hash of a row's grouping keys, consistent with their equality
 *	  (hash_record() hashes each field with its type's default hash
 *	  opclass; a NULL field hashes as 0), over columns named g1.. or, when
 *	  cols is given, as listed, each after prefix.
 */
char *
cq_state_key_hash_sql(CqAnalysis *an, const char *prefix, List *cols)
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
 * cq_state_hashed
 *	  Is this state table keyed by a hash of its keys (column h)?  State
 *	  tables created before that layout have a unique index on the keys
 *	  instead, and keep it.
 */
bool
cq_state_hashed(Oid state_table)
{
	return OidIsValid(state_table) &&
		get_attnum(state_table, CQ_KEY_HASH_COLUMN) != InvalidAttrNumber;
}

/*
 * cq_state_evicts
 *	  Does the state carry a window end (column e) for late filtering and
 *	  eviction?  Needs a watermark and a grouping key that carries it.
 */
bool
cq_state_evicts(CqAnalysis *an)
{
	return an->has_watermark && an->wm_key >= 0;
}

/*
 * cq_state_wm_param
 *	  The batch's watermark ($5, timestamptz, NULL = -infinity) in the type
 *	  of the event-time column.
 */
const char *
cq_state_wm_param(CqAnalysis *an)
{
	return an->et_is_tz ? "$5" : "($5 AT TIME ZONE 'UTC')";
}

/*
 * late_param
 *	  The watermark a group is dropped as late by, in the type of the
 *	  event-time column: $5 as cq_state_wm_param, or, for an aggregation
 *	  over a join of two streams, the $n join.c names (Spark's late events
 *	  of a later stateful operator are judged by the previous batch's
 *	  watermark, its eviction by the current one).  *param is its bare $n.
 */
static const char *
late_param(CqAnalysis *an, const char **param)
{
	char	   *p;

	if (an->late_param == 0)
	{
		*param = "$5";
		return cq_state_wm_param(an);
	}
	p = psprintf("$%d", an->late_param);
	*param = p;
	return an->et_is_tz ? p : psprintf("(%s AT TIME ZONE 'UTC')", p);
}

/*
 * append_key_column_defs
 *	  Column definitions of the grouping keys g1..gN of a state table (g0,
 *	  always true, without GROUP BY), each followed by ", ".
 */
static void
append_key_column_defs(StringInfo buf, CqAnalysis *an)
{
	ListCell   *lc;

	if (an->group_exprs == NIL)
		appendStringInfoString(buf, "g0 pg_catalog.bool NOT NULL, ");
	foreach(lc, an->group_exprs)
	{
		Node	   *e = lfirst(lc);

		appendStringInfo(buf, "g%d %s%s, ", foreach_current_index(lc) + 1,
						 cq_sql_type(exprType(e), exprTypmod(e)),
						 cq_sql_collate(exprCollation(e), exprType(e)));
	}
}

/*
 * cq_state_table_sql
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
cq_state_table_sql(CqAnalysis *an, const char *qualname, bool logged)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE %sTABLE %s (", logged ? "" : "UNLOGGED ", qualname);
	append_key_column_defs(&buf, an);
	appendStringInfoString(&buf, "n pg_catalog.int8 NOT NULL");
	if (cq_state_evicts(an))
	{
		Node	   *k = list_nth(an->group_exprs, an->wm_key);

		appendStringInfo(&buf, ", e %s", cq_sql_type(exprType(k), -1));
	}
	foreach(lc, an->parts)
	{
		CqPart	   *part = lfirst(lc);

		appendStringInfo(&buf, ", p%d %s%s", foreach_current_index(lc) + 1, part->type,
						 cq_sql_collation(part->collation));
	}
	if (an->keys_hashable)
		appendStringInfo(&buf, ", %s pg_catalog.int4 NOT NULL); CREATE INDEX ON %s (%s)",
						 CQ_KEY_HASH_COLUMN, qualname, CQ_KEY_HASH_COLUMN);
	else
	{
		appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
		cq_state_append_group_cols(&buf, an, "", ", ");
		appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	}
	if (cq_state_evicts(an))
		appendStringInfo(&buf, "; CREATE INDEX ON %s (e)", qualname);
	return buf.data;
}

/*
 * cq_state_distinct_table_sql
 *	  DDL of the table of (group, value) pairs that DISTINCT aggregates have
 *	  seen, or NULL when the query has none: the keys as in the state
 *	  table, the window end e when the state evicts, the set j the value
 *	  belongs to and the value in column v<j> (the other v columns NULL).
 *	  A unique index on all of them that treats NULL as a value finds a
 *	  pair again (NULL keys included) with each type's btree equality, the
 *	  one DISTINCT uses (checked by analyze.c).
 */
char *
cq_state_distinct_table_sql(CqAnalysis *an, const char *qualname, bool logged)
{
	StringInfoData buf;
	ListCell   *lc;

	if (an->distinct_sets == NIL)
		return NULL;
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE %sTABLE %s (", logged ? "" : "UNLOGGED ", qualname);
	append_key_column_defs(&buf, an);
	if (cq_state_evicts(an))
	{
		Node	   *k = list_nth(an->group_exprs, an->wm_key);

		appendStringInfo(&buf, "e %s, ", cq_sql_type(exprType(k), -1));
	}
	appendStringInfoString(&buf, "j pg_catalog.int4 NOT NULL");
	foreach(lc, an->distinct_sets)
	{
		CqDistinctSet *set = lfirst(lc);

		appendStringInfo(&buf, ", v%d %s%s", foreach_current_index(lc) + 1,
						 cq_sql_type(set->type, set->typmod),
						 cq_sql_collate(set->collation, set->type));
	}
	appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
	cq_state_append_group_cols(&buf, an, "", ", ");
	appendStringInfoString(&buf, ", j");
	for (int v = 1; v <= list_length(an->distinct_sets); v++)
		appendStringInfo(&buf, ", v%d", v);
	appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	if (cq_state_evicts(an))
		appendStringInfo(&buf, "; CREATE INDEX ON %s (e)", qualname);
	return buf.data;
}

/*
 * cq_state_final_select_list
 *	  "s.g1 AS g1, ..., <final> AS a1, ..." over state rows aliased s.
 */
char *
cq_state_final_select_list(CqAnalysis *an)
{
	StringInfoData buf;
	ListCell   *lc;
	int			i = 1;

	initStringInfo(&buf);
	cq_state_append_group_cols(&buf, an, "s.", ", ");
	foreach(lc, an->aggs)
	{
		CqAgg	   *a = lfirst(lc);
		char	   *p[3] = {"NULL", "NULL", "NULL"};

		for (int k = 0; k < cq_agg_nparts(a); k++)
			p[k] = a->part[k] < 0 ? "s.n" : psprintf("s.p%d", a->part[k] + 1);
		appendStringInfo(&buf, ", (");
		appendStringInfo(&buf, cq_agg_final_template(a), p[0], p[1], p[2]);
		appendStringInfo(&buf, ")::%s AS a%d", cq_sql_type(a->aggref->aggtype, -1), i++);
	}
	return buf.data;
}

/*
 * cq_state_final_view_sql
 *	  A view of final aggregate values per group; outputs are deparsed
 *	  against its columns.
 */
char *
cq_state_final_view_sql(CqAnalysis *an, const char *viewname, const char *statename)
{
	return psprintf("CREATE VIEW %s AS SELECT %s FROM %s s",
					viewname, cq_state_final_select_list(an), statename);
}

/*
 * late_filter
 *	  Condition on d keeping groups that are not late ("" when nothing can
 *	  be late).
 */
static const char *
late_filter(CqAnalysis *an)
{
	const char *p;
	const char *wm;

	if (!cq_state_evicts(an))
		return "";
	wm = late_param(an, &p);
	return psprintf("(%s IS NULL OR e IS NULL OR e > %s)", p, wm);
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
	cq_state_append_group_cols(&cols, an, "", ", ");
	appendStringInfoString(&cols, cq_state_evicts(an) ? ", n, e" : ", n");
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
 * distinct_ctes
 *	  "di AS (...), dv AS (...), ": the new rows of the batch (di, read
 *	  twice), and the (group, value) pairs of DISTINCT aggregates among
 *	  them that were never seen before, inserted into the table of pairs
 *	  (dv returns those).  NULL values are no pair (DISTINCT aggregates
 *	  skip them), nor are the values of rows a FILTER rejects or of late
 *	  groups, whose windows are closed.  The insert and the fold of its
 *	  pairs are one statement of the batch's transaction.  empty: the
 *	  table is known to be empty (batch 0 or a rebuild, as the state), so
 *	  every pair is new and a plain insert suffices (sets differ in j).
 */
static void
distinct_ctes(StringInfo buf, CqAnalysis *an, bool history, bool empty)
{
	StringInfoData cols;
	const char *late = "";
	int			nsets = list_length(an->distinct_sets);
	ListCell   *lc;

	if (cq_state_evicts(an))
	{
		char	   *e = psprintf(an->wm_end_fmt, psprintf("i.g%d", an->wm_key + 1));
		const char *p;
		const char *wm = late_param(an, &p);

		late = psprintf(" AND (%s IS NULL OR %s IS NULL OR %s > %s)", p, e, e, wm);
	}
	appendStringInfo(buf, "di AS (%s), ", cq_delta_inner_sql(an, history));

	initStringInfo(&cols);
	cq_state_append_group_cols(&cols, an, "", ", ");
	if (cq_state_evicts(an))
		appendStringInfoString(&cols, ", e");
	appendStringInfoString(&cols, ", j");
	for (int v = 1; v <= nsets; v++)
		appendStringInfo(&cols, ", v%d", v);
	appendStringInfo(buf, "dv AS (INSERT INTO %s AS a (%s) ", an->distinct_state, cols.data);
	foreach(lc, an->distinct_sets)
	{
		CqDistinctSet *set = lfirst(lc);
		int			j = foreach_current_index(lc) + 1;

		appendStringInfo(buf, "%sSELECT DISTINCT ", j > 1 ? " UNION ALL " : "");
		if (an->group_exprs == NIL)
			appendStringInfoString(buf, "true");
		else
			cq_state_append_group_cols(buf, an, "i.", ", ");
		if (cq_state_evicts(an))
		{
			appendStringInfoString(buf, ", ");
			appendStringInfo(buf, an->wm_end_fmt, psprintf("i.g%d", an->wm_key + 1));
		}
		appendStringInfo(buf, ", %d", j);
		for (int v = 1; v <= nsets; v++)
		{
			if (v == j)
				appendStringInfo(buf, ", i.x%d", set->arg_col + 1);
			else
				appendStringInfo(buf, ", NULL::%s",
								 cq_sql_type(((CqDistinctSet *) list_nth(an->distinct_sets, v - 1))->type, -1));
		}
		appendStringInfo(buf, " FROM di i WHERE i.x%d IS NOT NULL", set->arg_col + 1);
		if (set->filter_col >= 0)
			appendStringInfo(buf, " AND i.f%d", set->filter_col + 1);
		appendStringInfoString(buf, late);
	}
	appendStringInfo(buf, "%s RETURNING ", empty ? "" : " ON CONFLICT DO NOTHING");
	cq_state_append_group_cols(buf, an, "a.", ", ");
	appendStringInfoString(buf, ", a.j");
	for (int v = 1; v <= nsets; v++)
		appendStringInfo(buf, ", a.v%d", v);
	appendStringInfoString(buf, "), ");
}

/*
 * distinct_source
 *	  The rows d aggregates when the query has DISTINCT aggregates: the new
 *	  rows (di) with y<j> NULL, and the new pairs (dv) with the value in
 *	  y<j> and every column of di NULL except the keys, so that only
 *	  DISTINCT partials see them (and _j, set for them only, keeps them
 *	  out of the row count n).  The columns of di are those
 *	  cq_delta_inner_sql gives an aggregation, in its order.
 */
static char *
distinct_source(CqAnalysis *an)
{
	StringInfoData buf;
	ListCell   *lc;
	int			nsets = list_length(an->distinct_sets);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT di.*, NULL::pg_catalog.int4 AS _j");
	foreach(lc, an->distinct_sets)
	{
		CqDistinctSet *set = lfirst(lc);

		appendStringInfo(&buf, ", NULL::%s%s AS y%d", cq_sql_type(set->type, set->typmod),
						 cq_sql_collate(set->collation, set->type), foreach_current_index(lc) + 1);
	}
	appendStringInfoString(&buf, " FROM di UNION ALL SELECT ");
	if (an->group_exprs != NIL)
		cq_state_append_group_cols(&buf, an, "dv.", ", ");
	foreach(lc, an->arg_exprs)
	{
		Node	   *x = lfirst(lc);

		appendStringInfo(&buf, "%sNULL::%s%s",
						 an->group_exprs == NIL && foreach_current_index(lc) == 0 ? "" : ", ",
						 cq_sql_type(exprType(x), exprTypmod(x)),
						 cq_sql_collate(exprCollation(x), exprType(x)));
	}
	foreach(lc, an->filter_exprs)
		appendStringInfoString(&buf, ", NULL::pg_catalog.bool");
	if (an->single_scan && an->et_attno != InvalidAttrNumber)
		appendStringInfo(&buf, ", NULL::%s", an->et_is_tz ? "pg_catalog.timestamptz" : "pg_catalog.timestamp");
	appendStringInfoString(&buf, ", dv.j");
	for (int v = 1; v <= nsets; v++)
		appendStringInfo(&buf, ", dv.v%d", v);
	appendStringInfoString(&buf, " FROM dv");
	return buf.data;
}

static void delta_cte_from(StringInfo buf, CqAnalysis *an, const char *inner);

/*
 * delta_cte
 *	  "d AS (...)": the partial aggregates of the new rows per group (with
 *	  event-time statistics when the main statement counts the rows, the
 *	  window end e, the key hash h).
 */
static void
delta_cte(StringInfo buf, CqAnalysis *an, bool history)
{
	delta_cte_from(buf, an, an->distinct_sets ? distinct_source(an) : cq_delta_inner_sql(an, history));
}

/*
 * delta_cte_from
 *	  delta_cte over the given new rows (SQL of cq_delta_inner_sql's shape).
 */
static void
delta_cte_from(StringInfo buf, CqAnalysis *an, const char *inner)
{
	ListCell   *lc;

	appendStringInfoString(buf, "d AS (SELECT ");
	if (an->group_exprs == NIL)
		appendStringInfoString(buf, "true AS g0");
	else
		cq_state_append_group_cols(buf, an, "i.", ", ");
	appendStringInfoString(buf, an->distinct_sets ? ", count(*) FILTER (WHERE i._j IS NULL) AS n" :
						   ", count(*) AS n");
	if (an->single_scan && an->et_attno != InvalidAttrNumber)
		appendStringInfoString(buf, ", min(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_min, "
							   "max(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_max, "
							   "sum(date_part('epoch', i.et)) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_sum, "
							   "count(i.et) FILTER (WHERE pg_catalog.isfinite(i.et)) AS et_n");
	foreach(lc, an->parts)
		appendStringInfo(buf, ", %s AS p%d", ((CqPart *) lfirst(lc))->partial,
						 foreach_current_index(lc) + 1);
	if (cq_state_evicts(an))
	{
		appendStringInfoString(buf, ", ");
		appendStringInfo(buf, an->wm_end_fmt, psprintf("i.g%d", an->wm_key + 1));
		appendStringInfoString(buf, " AS e");
	}
	if (an->hash_keys)
		appendStringInfo(buf, ", %s AS %s", cq_state_key_hash_sql(an, "i.", NIL), CQ_KEY_HASH_COLUMN);
	appendStringInfo(buf, " FROM (%s) i", inner);
	if (an->group_exprs != NIL)
	{
		appendStringInfoString(buf, " GROUP BY ");
		cq_state_append_group_cols(buf, an, "i.", ", ");
	}
	appendStringInfoString(buf, ")");
}

/*
 * cq_state_delta_cte
 *	  "d AS (...)" alone (see delta_cte), for the shared-memory store
 *	  (store.c), which merges d in C.  No DISTINCT aggregates there.
 */
void
cq_state_delta_cte(StringInfo buf, CqAnalysis *an, bool history)
{
	delta_cte(buf, an, history);
}

/*
 * cq_state_delta_cte_fold
 *	  cq_state_delta_cte (all: cq_state_delta_cte_all) for a d statement
 *	  whose rows the store folds in C, its string keys compared bytewise
 *	  (cq_delta_fold_inner_sql).
 */
void
cq_state_delta_cte_fold(StringInfo buf, CqAnalysis *an, bool history, bool all)
{
	/* DISTINCT aggregates (not on the store): delta_cte's own source */
	if (an->distinct_sets && !all)
		delta_cte(buf, an, history);
	else
		delta_cte_from(buf, an, cq_delta_fold_inner_sql(an, history, all));
}

/*
 * cq_state_delta_cte_all
 *	  cq_state_delta_cte(buf, an, true) over cq_delta_history_all_sql: the
 *	  history without the test of cq_xid.
 */
void
cq_state_delta_cte_all(StringInfo buf, CqAnalysis *an)
{
	delta_cte_from(buf, an, cq_delta_history_all_sql(an));
}

/*
 * append_merges
 *	  ", p1 = <merge of s.p1 and <from>.p1>, ..." for every state column.
 */
static void
append_merges(StringInfo buf, CqAnalysis *an, const char *from)
{
	ListCell   *lc;

	foreach(lc, an->parts)
	{
		int			p = foreach_current_index(lc) + 1;

		appendStringInfo(buf, ", p%d = ", p);
		appendStringInfo(buf, ((CqPart *) lfirst(lc))->merge,
						 psprintf("s.p%d", p), psprintf("%s.p%d", from, p));
	}
}

/*
 * merge_hashed
 *	  ", dk, mu, mi, m": merge into a state keyed by the hash of its keys.
 *
 *	  Classify the groups by a probe of the hash index (NULL keys too: they
 *	  hash like any value), then update the existing ones and plainly
 *	  insert the new ones.  A scalar subquery, not EXISTS: the planner may
 *	  turn an EXISTS into a hashed subplan that reads the whole state, and
 *	  it does so when it overestimates the new rows (no statistics on cq_xid
 *	  yet: it expects the whole source), which cost 40-300 ms per batch at
 *	  200k groups.  A probe per group is what a batch wants.
 */
static void
merge_hashed(StringInfo buf, CqAnalysis *an, const char *state)
{
	StringInfoData match;

	initStringInfo(&match);
	appendStringInfo(&match, "s.%s OPERATOR(pg_catalog.=) d.%s AND ",
					 CQ_KEY_HASH_COLUMN, CQ_KEY_HASH_COLUMN);
	cq_state_append_keys_equal(&match, an, "s.", NIL, "d.", true);
	appendStringInfo(buf, ", dk AS (SELECT d.*, "
					 "((SELECT true FROM %s s WHERE %s LIMIT 1) IS NOT NULL) AS _old "
					 "FROM d%s%s)",
					 state, match.data,
					 late_filter(an)[0] ? " WHERE " : "", late_filter(an));
	appendStringInfo(buf, ", mu AS (UPDATE %s s SET n = s.n + d.n", state);
	append_merges(buf, an, "d");
	appendStringInfo(buf, " FROM dk d WHERE d._old AND %s RETURNING s.*, s.ctid AS _sid, false AS _ins)", match.data);
	appendStringInfo(buf, ", mi AS (%s RETURNING s.*, s.ctid AS _sid, true AS _ins)",
					 state_insert(an, state, "dk", "NOT _old"));
	appendStringInfoString(buf, ", m AS (SELECT * FROM mu UNION ALL SELECT * FROM mi)");
}

/*
 * merge_keyed
 *	  ", dk, mu, mi, mn, m": merge into a state keyed by a unique index on
 *	  its keys.
 *
 *	  Classify the groups by an index probe, then update the existing ones
 *	  and plainly insert the new ones: both cheaper than INSERT ... ON
 *	  CONFLICT.  Groups with a NULL key cannot be probed with "=" and take
 *	  the ON CONFLICT path (NULLS NOT DISTINCT makes it NULL-safe).
 */
static void
merge_keyed(StringInfo buf, CqAnalysis *an, const char *state)
{
	StringInfoData keys;
	StringInfoData nullkey;
	int			ng = cq_state_ngroup_cols(an);

	initStringInfo(&keys);
	initStringInfo(&nullkey);
	cq_state_append_keys_equal(&keys, an, "s.", NIL, "d.", false);
	for (int g = 1; g <= ng; g++)
		appendStringInfo(&nullkey, "%sd.%s IS NULL", g > 1 ? " OR " : "",
						 an->group_exprs == NIL ? "g0" : psprintf("g%d", g));
	/* a scalar subquery, not EXISTS: see merge_hashed */
	appendStringInfo(buf, ", dk AS (SELECT d.*, (%s) AS _nullkey, "
					 "((SELECT true FROM %s s WHERE %s LIMIT 1) IS NOT NULL) AS _old "
					 "FROM d%s%s)",
					 nullkey.data, state, keys.data,
					 late_filter(an)[0] ? " WHERE " : "", late_filter(an));
	appendStringInfo(buf, ", mu AS (UPDATE %s s SET n = s.n + d.n", state);
	append_merges(buf, an, "d");
	appendStringInfo(buf, " FROM dk d WHERE d._old AND %s RETURNING s.*, false AS _ins)", keys.data);
	appendStringInfo(buf, ", mi AS (%s RETURNING s.*, true AS _ins)",
					 state_insert(an, state, "dk", "NOT _old AND NOT _nullkey"));
	appendStringInfo(buf, ", mn AS (%s ON CONFLICT (", state_insert(an, state, "dk", "_nullkey"));
	cq_state_append_group_cols(buf, an, "", ", ");
	appendStringInfoString(buf, ") DO UPDATE SET n = s.n + excluded.n");
	append_merges(buf, an, "excluded");
	appendStringInfoString(buf, " RETURNING s.*, (s.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS _ins)");
	appendStringInfoString(buf, ", m AS (SELECT * FROM mu UNION ALL SELECT * FROM mi UNION ALL SELECT * FROM mn)");
}

/*
 * cq_state_upsert_ctes
 *	  "d AS (...), m AS (...)": partial aggregates of the new rows merged
 *	  into the state; m returns the changed state rows with _ins = inserted.
 *	  With evict, x deletes the windows the watermark closed.  empty: the
 *	  state is known to be empty (batch 0 or a rebuild).
 */
char *
cq_state_upsert_ctes(CqAnalysis *an, const char *state, bool history, bool evict, bool empty)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (an->distinct_sets)
		distinct_ctes(&buf, an, history, empty);
	delta_cte(&buf, an, history);
	if (empty)
	{
		/* batch 0 or a rebuild: the state is empty, every group is new */
		appendStringInfo(&buf, ", m AS (%s RETURNING s.*, true AS _ins)",
						 state_insert(an, state, "d", late_filter(an)));
	}
	else if (an->hash_keys)
		merge_hashed(&buf, an, state);
	else
		merge_keyed(&buf, an, state);
	/* x: windows closed by the watermark leave the state */
	if (cq_state_evicts(an) && evict)
		appendStringInfo(&buf, ", x AS (DELETE FROM %s s WHERE s.e <= %s RETURNING s.*)",
						 state, cq_state_wm_param(an));
	/* xd: and so do their DISTINCT aggregates' pairs */
	if (cq_state_evicts(an) && evict && an->distinct_sets)
		appendStringInfo(&buf, ", xd AS (DELETE FROM %s s WHERE s.e <= %s)",
						 an->distinct_state, cq_state_wm_param(an));
	return buf.data;
}
