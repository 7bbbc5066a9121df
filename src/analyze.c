/*-------------------------------------------------------------------------
 *
 * analyze.c
 *	  Query analysis: what a continuous query is made of, and every
 *	  "not supported" check, in one place.
 *
 * Input is an analyzed (not rewritten) Query.  Output is a CqAnalysis: the
 * streaming source, the grouping keys, and each aggregate decomposed into
 * mergeable state columns through the table below.  Adding an aggregate is
 * one entry in that table.
 *
 * The checks follow Spark's UnsupportedOperationChecker (see
 * reference/spark-semantics.md §1.2, §7.2), with PostgreSQL error codes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/stratnum.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "common/int.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_relation.h"
#include "utils/rel.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/ruleutils.h"
#include "utils/fmgroids.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "analyze.h"
#include "citus.h"
#include "citus_copy.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "aggregates.h"
#include "timeexpr.h"
#include "catalog.h"
#include "joinspec.h"

/* Walker state for collecting aggregates. */
typedef struct CollectCtx
{
	CqAnalysis *an;
	const char *name;
} CollectCtx;

/*
 * add_expr_once
 *	  Position of expr in *list, appending it when new (0-based).
 */
static int
add_expr_once(List **list, Node *expr)
{
	int			i = 0;
	ListCell   *lc;

	foreach(lc, *list)
	{
		if (equal(lfirst(lc), expr))
			return i;
		i++;
	}
	*list = lappend(*list, expr);
	return i;
}

/*
 * has_btree_opclass
 *	  Has type a default btree operator class (GetDefaultOpClass)?  Asked
 *	  through the type cache, which keeps the answer for the backend and
 *	  which the batch's own statements ask for the same types anyway: a
 *	  new backend's first batch then scans pg_opclass once per type, not
 *	  twice.
 */
static bool
has_btree_opclass(Oid type)
{
	return OidIsValid(lookup_type_cache(type, TYPECACHE_BTREE_OPFAMILY)->btree_opf);
}

/*
 * check_distinct_agg
 *	  agg(DISTINCT x) keeps the (group, value) pairs seen in a table whose
 *	  unique index finds them again (state.c): the aggregate must be one
 *	  of the table's, and x of a type that can be a column with a btree
 *	  equality that is the one DISTINCT uses.
 */
static void
check_distinct_agg(Aggref *agg, const struct CqAggKind *kind, Oid argtype)
{
	SortGroupClause *sgc = linitial(agg->aggdistinct);
	TypeCacheEntry *tc;
	Oid			eqop = InvalidOid;

	if (kind == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s(DISTINCT ...) is not supported in continuous queries",
						get_func_name(agg->aggfnoid)),
				 errdetail("DISTINCT is supported for the built-in aggregates count, sum, avg, min, max, the variance and stddev family, bool_and, bool_or, every, bit_and, bit_or and bit_xor."),
				 errhint("Aggregate without DISTINCT, or group by the column.")));
	if (cq_agg_kind_idempotent(kind))
		return;					/* the same without DISTINCT: no values are kept */
	if (get_typtype(argtype) == TYPTYPE_PSEUDO)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use %s(DISTINCT ...) on type %s in a continuous query",
						get_func_name(agg->aggfnoid), format_type_be(argtype)),
				 errdetail("The values seen are kept in a table, and a column cannot have pseudo-type %s.",
						   format_type_be(argtype)),
				 errhint("Aggregate DISTINCT over a column, or over a value of a composite type created with CREATE TYPE.")));
	tc = lookup_type_cache(argtype, TYPECACHE_BTREE_OPFAMILY);
	if (OidIsValid(tc->btree_opf))
		eqop = get_opfamily_member(tc->btree_opf, tc->btree_opintype, tc->btree_opintype,
								   BTEqualStrategyNumber);
	if (!OidIsValid(eqop) || eqop != sgc->eqop)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use %s(DISTINCT ...) on type %s in a continuous query",
						get_func_name(agg->aggfnoid), format_type_be(argtype)),
				 errdetail("The values seen are kept in a table with a unique btree index, and type %s has no default btree operator class whose equality DISTINCT uses.",
						   format_type_be(argtype)),
				 errhint("Aggregate DISTINCT over a column or a cast to a type with a btree operator class.")));
}

/*
 * add_distinct_set
 *	  The values of DISTINCT aggregate a (argument and FILTER registered):
 *	  an existing set with the same argument and FILTER, or a new one.
 *	  Returns its index (0-based).
 */
static int
add_distinct_set(CqAnalysis *an, CqAgg *a)
{
	Node	   *arg = (Node *) ((TargetEntry *) linitial(a->aggref->args))->expr;
	CqDistinctSet *set;
	ListCell   *lc;

	foreach(lc, an->distinct_sets)
	{
		set = lfirst(lc);
		if (set->arg_col == a->arg_col && set->filter_col == a->filter_col)
			return foreach_current_index(lc);
	}
	set = palloc0(sizeof(CqDistinctSet));
	set->arg_col = a->arg_col;
	set->filter_col = a->filter_col;
	set->type = exprType(arg);
	set->typmod = exprTypmod(arg);
	set->collation = type_is_collatable(set->type) ? a->aggref->inputcollid : InvalidOid;
	an->distinct_sets = lappend(an->distinct_sets, set);
	return list_length(an->distinct_sets) - 1;
}

/*
 * collect_aggs_walker
 *	  Find every Aggref, check it can be merged, and register it once.
 */
static bool
collect_aggs_walker(Node *node, CollectCtx *ctx)
{
	CqAnalysis *an = ctx->an;

	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;
		Oid			argtype = InvalidOid;
		const struct CqAggKind *kind;
		CqAgg	   *a;
		ListCell   *lc;

		if (agg->agglevelsup != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("outer-level aggregates are not supported in continuous queries")));
		if (agg->aggkind != AGGKIND_NORMAL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ordered-set aggregate %s is not supported in continuous queries",
							format_procedure(agg->aggfnoid)),
					 errdetail("Ordered-set and hypothetical-set aggregates cannot be merged from partial results.")));
		if (agg->aggorder != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("aggregate %s with ORDER BY is not supported in continuous queries",
							format_procedure(agg->aggfnoid)),
					 errdetail("An aggregate whose result depends on input order cannot be merged from partial results.")));
		if (list_length(agg->args) == 1)
			argtype = exprType((Node *) ((TargetEntry *) linitial(agg->args))->expr);

		/* the table's fast path, else the generic path if it can combine */
		kind = list_length(agg->args) <= 1 ? cq_agg_kind_find(agg, argtype) : NULL;
		if (agg->aggdistinct != NIL)
			check_distinct_agg(agg, kind, argtype);
		if (kind == NULL)
			cq_agg_generic_check(agg);

		/* the same aggregate twice shares its state */
		foreach(lc, an->aggs)
		{
			if (equal(((CqAgg *) lfirst(lc))->aggref, agg))
				return false;
		}

		a = palloc0(sizeof(CqAgg));
		a->aggref = agg;
		a->kind = kind;
		a->arg_type = argtype;
		a->builtin_numeric = cq_citus_kind(an->source_relid) != CQ_CITUS_NONE ||
			(an->join && cq_citus_kind(an->join->side[1].relid) != CQ_CITUS_NONE);
		a->filter_col = agg->aggfilter ? add_expr_once(&an->filter_exprs, (Node *) agg->aggfilter) : -1;
		if (kind != NULL)
		{
			a->arg_col = agg->args ? add_expr_once(&an->arg_exprs,
												   (Node *) ((TargetEntry *) linitial(agg->args))->expr) : -1;
			if (agg->aggdistinct != NIL && !cq_agg_kind_idempotent(kind))
				a->distinct_col = add_distinct_set(an, a) + 1;
			for (int k = 0; k < cq_agg_kind_nparts(kind); k++)
				a->part[k] = cq_agg_add_part(&an->parts, a, k);
		}
		else
		{
			a->arg_col = -1;
			foreach(lc, agg->args)
				a->arg_cols = lappend_int(a->arg_cols,
										  add_expr_once(&an->arg_exprs,
														(Node *) ((TargetEntry *) lfirst(lc))->expr));
			a->part[0] = cq_agg_generic_add_part(&an->parts, a);
		}
		an->aggs = lappend(an->aggs, a);
		return false;			/* arguments cannot contain aggregates */
	}
	return expression_tree_walker(node, collect_aggs_walker, ctx);
}

/*
 * rangetable_mentions_walker
 *	  True if a query tree reads relation *relid anywhere.
 */
static bool
rangetable_mentions_walker(Node *node, Oid *relid)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		return rte->rtekind == RTE_RELATION && rte->relid == *relid;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, rangetable_mentions_walker, relid,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, rangetable_mentions_walker, relid);
}

/*
 * jointree_has_rti
 *	  Is range-table entry rti below this join-tree node?
 */
static bool
jointree_has_rti(Node *node, Index rti)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblRef))
		return ((RangeTblRef *) node)->rtindex == (int) rti;
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		return jointree_has_rti(j->larg, rti) || jointree_has_rti(j->rarg, rti);
	}
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			if (jointree_has_rti(lfirst(lc), rti))
				return true;
	}
	return false;
}

/*
 * check_joins
 *	  Stream-static joins: inner joins, and outer joins with the stream on
 *	  the preserved side (Spark's stream-static support matrix).
 */
static void
check_joins(Node *node, Index rti)
{
	if (node == NULL)
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			check_joins(lfirst(lc), rti);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;
		bool		in_left = jointree_has_rti(j->larg, rti);
		bool		in_right = jointree_has_rti(j->rarg, rti);

		if ((j->jointype == JOIN_FULL && (in_left || in_right)) ||
			(j->jointype == JOIN_LEFT && in_right) ||
			(j->jointype == JOIN_RIGHT && in_left))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s JOIN with the streaming table on the nullable side is not supported",
							j->jointype == JOIN_FULL ? "FULL" : j->jointype == JOIN_LEFT ? "LEFT" : "RIGHT"),
					 errdetail("The streaming table must be on the preserved side of an outer join with static tables."),
					 errhint("Use an inner join, or put the streaming table on the preserved side.")));
		check_joins(j->larg, rti);
		check_joins(j->rarg, rti);
	}
}

/*
 * wanted_source
 *	  The stream the source option names, or the one a stored query
 *	  recorded, or InvalidOid.
 */
static Oid
wanted_source(Query *q, CqOptions *opts)
{
	Oid			wanted = InvalidOid;
	ListCell   *lc;

	if (opts->source)
	{
		List	   *names = stringToQualifiedNameList(opts->source);

		wanted = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);
		if (!OidIsValid(wanted))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("source table \"%s\" does not exist", opts->source)));
	}
	else if (OidIsValid(opts->source_relid))
	{
		/*
		 * A stored query: its stream is the one recorded at creation (the
		 * source option itself is not stored), if the query still reads it;
		 * otherwise the rules for a new query apply, so that a changed query
		 * that reads another table is refused as a change of source.
		 */
		foreach(lc, q->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);

			if (rte->rtekind == RTE_RELATION && rte->relid == opts->source_relid)
				wanted = opts->source_relid;
		}
	}
	return wanted;
}

/*
 * no_source
 *	  Error: no table in FROM.
 */
static void
no_source(Query *q, const char *name)
{
	ListCell   *lc;

	foreach(lc, q->rtable)
		if (((RangeTblEntry *) lfirst(lc))->rtekind == RTE_SUBQUERY)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("subqueries in FROM over the streaming table are not supported"),
					 errhint("Read the streaming table directly in the FROM clause.")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("continuous query \"%s\" has no streaming source", name),
			 errdetail("The FROM clause must name a table."),
			 errhint("A subquery in FROM cannot be the stream: name the table directly.")));
}

/*
 * several_sources
 *	  Error: the stream appears twice, or several tables could be it.
 */
static void
several_sources(CqAnalysis *an, Oid wanted, int nrel, int nwanted, const char *name)
{
	ListCell   *lc;

	if (OidIsValid(wanted) || nrel == nwanted)
	{
		/* the stream itself appears twice: a stream-stream join */
		bool		same = true;
		Oid			first = InvalidOid;

		foreach(lc, an->query->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);

			if (rte->rtekind != RTE_RELATION)
				continue;
			if (!OidIsValid(first))
				first = rte->relid;
			else if (rte->relid != first)
				same = false;
		}
		if (same || OidIsValid(wanted))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the streaming table \"%s\" appears more than once in the query",
							get_rel_name(an->source_relid)),
					 errdetail("Joins between two streams are not supported.")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("continuous query \"%s\" reads more than one table", name),
			 errdetail("Exactly one table of the query is the stream; the others are read as static tables."),
			 errhint("Name the streaming table with the source option (cq.source).")));
}

/*
 * find_source
 *	  The range-table entry of the stream: the only table in FROM, or the
 *	  one the source option names.
 */
static void
find_source(CqAnalysis *an, CqOptions *opts, const char *name)
{
	Query	   *q = an->query;
	Oid			wanted = wanted_source(q, opts);
	int			nrel = 0;
	int			nwanted = 0;
	ListCell   *lc;
	Index		rti = 0;

	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		rti++;
		if (rte->rtekind != RTE_RELATION)
			continue;
		nrel++;
		if (OidIsValid(wanted) ? rte->relid == wanted : true)
		{
			nwanted++;
			an->source_rti = rti;
			an->source_relid = rte->relid;
		}
	}

	if (opts->source && nwanted == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source table \"%s\" is not in the FROM clause of the query", opts->source)));
	if (nrel == 0)
		no_source(q, name);
	if (nwanted > 1 || (!OidIsValid(wanted) && nrel > 1))
		several_sources(an, wanted, nrel, nwanted, name);
}

/*
 * check_citus_source
 *	  A Citus table as a source (docs/scale-out.md, issue 14): a
 *	  hash-distributed table is read on the coordinator, whose transaction
 *	  ids stamp every row (citus.c), once the catalog has
 *	  cq.coordinator_xact_id() (0.2).  A reference table or a Citus local
 *	  table is read through the coordinator's copy (citus_copy.c), which
 *	  must exist.  The other kinds (single-shard, append, range) are
 *	  refused.
 */
static void
check_citus_source(Oid relid)
{
	CqCitusKind kind = cq_citus_kind(relid);

	if (kind == CQ_CITUS_NONE)
		return;
	if (kind == CQ_CITUS_OTHER)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\" is a Citus table that is not hash-distributed, a reference table or a Citus local table",
						get_rel_name(relid)),
				 errdetail("Single-shard, append- and range-distributed tables are untested as sources of continuous queries."),
				 errhint("Stream from a hash-distributed table (create_distributed_table), a reference table, a Citus local table or a local table; see docs/scale-out.md.")));
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\" is a Citus distributed table", get_rel_name(relid)),
				 errdetail("Distributed sources need pg_cq's catalog 0.2 (cq.coordinator_xact_id()); this database has 0.1."),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE.")));
	if (!cq_citus_is_coordinator())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\" is a Citus distributed table and this node is a worker", get_rel_name(relid)),
				 errdetail("Continuous queries over a distributed table run on the Citus coordinator, in its transaction-id space."),
				 errhint("Create the query on the coordinator.")));
	if (kind == CQ_CITUS_REFERENCE || kind == CQ_CITUS_LOCAL)
		(void) cq_citus_copy_relation(relid, false);
}

/*
 * check_source_table
 *	  The stream must be a permanent (or unlogged) table; a Citus table
 *	  only as check_citus_source allows.
 */
static void
check_source_table(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	check_citus_source(relid);

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("source \"%s\" is not a table", get_rel_name(relid)),
				 errdetail("The streaming source of a continuous query must be a table or a partitioned table, not a %s.",
						   relkind == RELKIND_VIEW ? "view" :
						   relkind == RELKIND_MATVIEW ? "materialized view" :
						   relkind == RELKIND_FOREIGN_TABLE ? "foreign table" : "relation of this kind")));
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("source \"%s\" is a temporary table", get_rel_name(relid)),
				 errdetail("Background workers cannot read another session's temporary tables.")));
}

/*
 * check_event_time
 *	  The event_time option names a timestamp column of the stream.
 */
static void
check_event_time(CqAnalysis *an, CqOptions *opts)
{
	AttrNumber	att;
	Oid			type;

	an->wm_key = -1;
	an->has_watermark = opts->watermark != NULL;
	if (opts->event_time == NULL)
		return;
	att = get_attnum(an->source_relid, opts->event_time);
	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("event_time column \"%s\" does not exist in source \"%s\"",
						opts->event_time, get_rel_name(an->source_relid))));
	/* a domain over either type is read as its base type (PostgreSQL coerces it so) */
	type = getBaseType(get_atttype(an->source_relid, att));
	if (type != TIMESTAMPTZOID && type != TIMESTAMPOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("event_time column \"%s\" must be of type timestamp with time zone or timestamp",
						opts->event_time),
				 errdetail("Column \"%s\" has type %s.", opts->event_time,
						   format_type_be(get_atttype(an->source_relid, att)))));
	an->et_attno = att;
	an->et_is_tz = (type == TIMESTAMPTZOID);
}

/*
 * is_event_time
 *	  Is expr the event-time column of the stream (possibly relabeled)?
 */
static bool
is_event_time(CqAnalysis *an, Node *expr)
{
	while (expr && IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (expr == NULL || !IsA(expr, Var) || ((Var *) expr)->varlevelsup != 0)
		return false;
	/* a join of two streams: the event time of either stream (Spark keeps both) */
	for (int s = 0; an->join && s < 2; s++)
		if (((Var *) expr)->varno == (int) an->join->side[s].rti &&
			((Var *) expr)->varattno == an->join->side[s].et_attno &&
			an->join->side[s].et_attno != InvalidAttrNumber)
			return true;
	return ((Var *) expr)->varno == an->source_rti && ((Var *) expr)->varattno == an->et_attno;
}

/*
 * cq_function_rte
 *	  The call of function cq.<name>() that a function RTE consists of, or
 *	  NULL: cq.window() and cq.session_window() in FROM.
 */
static FuncExpr *
cq_function_rte(RangeTblEntry *rte, const char *name)
{
	RangeTblFunction *rtf;
	FuncExpr   *fe;
	Oid			nsp = get_namespace_oid("cq", true);

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1)
		return NULL;
	rtf = linitial(rte->functions);
	if (!IsA(rtf->funcexpr, FuncExpr))
		return NULL;
	fe = (FuncExpr *) rtf->funcexpr;
	if (get_func_namespace(fe->funcid) != nsp || strcmp(get_func_name(fe->funcid), name) != 0)
		return NULL;
	return fe;
}

/*
 * window_arg
 *	  Argument n (0: ts, 1: size, 2: slide, 3: origin) of a cq.window() call
 *	  as written, positional or named; NULL when it takes its default.
 */
static Node *
window_arg(FuncExpr *fe, int n)
{
	ListCell   *lc;

	foreach(lc, fe->args)
	{
		Node	   *arg = lfirst(lc);

		if (IsA(arg, NamedArgExpr))
		{
			if (((NamedArgExpr *) arg)->argnumber == n)
				return (Node *) ((NamedArgExpr *) arg)->arg;
		}
		else if (foreach_current_index(lc) == n)
			return arg;
	}
	return NULL;
}

/*
 * window_end_fmt
 *	  If grouping expression expr is a window over the event-time column
 *	  (or that column itself), the SQL of its window end with %1$s standing
 *	  for the key; else NULL.
 */
static char *
window_end_fmt(CqAnalysis *an, Node *expr)
{
	if (is_event_time(an, expr))
		return "%1$s";
	if (IsA(expr, FuncExpr))
	{
		FuncExpr   *fe = (FuncExpr *) expr;

		if ((fe->funcid == F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ ||
			 fe->funcid == F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP) &&
			is_event_time(an, lsecond(fe->args)))
		{
			char	   *size = cq_interval_sql(linitial(fe->args), "size", true);

			return size ? cq_window_end_sql(fe->funcid == F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ,
										 size) : NULL;
		}
		if ((fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ ||
			 fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMP) &&
			is_event_time(an, lsecond(fe->args)))
		{
			const char *step = cq_date_trunc_step(linitial(fe->args));

			return step ? cq_window_end_sql(fe->funcid == F_DATE_TRUNC_TEXT_TIMESTAMPTZ,
										 psprintf("%s::pg_catalog.interval", step)) : NULL;
		}
	}
	if (IsA(expr, Var) && ((Var *) expr)->varlevelsup == 0)
	{
		Var		   *v = (Var *) expr;
		FuncExpr   *fe = cq_function_rte(rt_fetch(v->varno, an->query->rtable), "window");

		if (fe && is_event_time(an, window_arg(fe, 0)))
		{
			if (v->varattno == 2)
				return "%1$s";
			if (v->varattno == 1)
			{
				char	   *size = cq_interval_sql(window_arg(fe, 1), "size", true);

				return size ? cq_window_end_sql(an->et_is_tz, size) : NULL;
			}
		}
	}
	return NULL;
}

/*
 * check_window_calls
 *	  Constant sizes, slides and origins of cq.window() calls are checked
 *	  at creation rather than at the first row.
 */
static void
check_window_calls(CqAnalysis *an)
{
	ListCell   *lc;

	foreach(lc, an->query->rtable)
	{
		FuncExpr   *fe = cq_function_rte(lfirst(lc), "window");
		Node	   *origin;

		if (fe == NULL)
			continue;
		origin = window_arg(fe, 3);
		if (origin && IsA(origin, Const) && !((Const *) origin)->constisnull &&
			TIMESTAMP_NOT_FINITE(DatumGetInt64(((Const *) origin)->constvalue)))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("origin out of range"),
					 errdetail("The origin of a window grid must be finite.")));
		(void) cq_interval_sql(window_arg(fe, 1), "size", false);
		if (cq_interval_sql(window_arg(fe, 2), "slide", false) &&
			cq_interval_sql(window_arg(fe, 1), NULL, false))
		{
			Interval   *size = DatumGetIntervalP(((Const *) window_arg(fe, 1))->constvalue);
			Interval   *slide = DatumGetIntervalP(((Const *) window_arg(fe, 2))->constvalue);
			int64		size_us,
						slide_us;

			/* both checked above: positive, no months, no overflow */
			(void) cq_interval_usecs(size, &size_us);
			(void) cq_interval_usecs(slide, &slide_us);
			if (slide_us > size_us)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("window slide must be positive and at most the window size")));
		}
	}
}

/*
 * session_rti
 *	  The range-table index of the query's cq.session_window() call, or 0;
 *	  *call is set to the call.
 */
static Index
session_rti(CqAnalysis *an, FuncExpr **call)
{
	ListCell   *lc;

	foreach(lc, an->query->rtable)
	{
		FuncExpr   *fe = cq_function_rte(lfirst(lc), "session_window");

		if (fe)
		{
			*call = fe;
			return foreach_current_index(lc) + 1;
		}
	}
	*call = NULL;
	return 0;
}

/*
 * find_session_window
 *	  Session windows (session.c): at most one cq.session_window() call, not
 *	  with time windows, in an aggregation, with a positive gap of fixed
 *	  length when it is a constant (else an expression per row that is not
 *	  volatile: Spark's dynamic gap), and only on a 0.2 catalog.  Sets
 *	  an->session and the gap; the grouping keys are checked by
 *	  check_session_keys.
 */
static void
find_session_window(CqAnalysis *an, const char *name)
{
	ListCell   *lc;
	FuncExpr   *fe = NULL;
	bool		has_window = false;
	Node	   *gap;
	Interval   *iv;
	int64		us;

	foreach(lc, an->query->rtable)
	{
		FuncExpr   *call = cq_function_rte(lfirst(lc), "session_window");

		has_window |= cq_function_rte(lfirst(lc), "window") != NULL;
		if (call && fe)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a continuous query may have only one session window"),
					 errdetail("Continuous query \"%s\" calls cq.session_window more than once.", name)));
		if (call)
			fe = call;
	}
	if (fe == NULL)
		return;
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session windows need version 0.2 of extension pg_cq"),
				 errdetail("The database's pg_cq catalog is version 0.1, which has no session windows."),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE.")));
	if (has_window)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session windows cannot be combined with time windows"),
				 errdetail("Continuous query \"%s\" calls both cq.session_window and cq.window.", name),
				 errhint("Group by one kind of window.")));
	if (!an->is_aggregate)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session windows are supported only in aggregations"),
				 errdetail("Continuous query \"%s\" calls cq.session_window but does not group by it.", name),
				 errhint("Group by a key, session_start and session_end, and aggregate.")));
	gap = window_arg(fe, 1);
	while (gap && IsA(gap, RelabelType))
		gap = (Node *) ((RelabelType *) gap)->arg;
	if (gap && !IsA(gap, Const))
	{
		/*
		 * Spark's dynamic gap: an expression per row.  A row whose gap is
		 * NULL, zero or negative has no session (cq.session_window).  It must
		 * give the same gap whenever the row is read (rebuild).
		 */
		if (contain_volatile_functions(gap))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("session window gap must not be volatile"),
					 errdetail("Continuous query \"%s\" computes the gap of a row with a volatile function; a row must keep its session.", name),
					 errhint("Compute the gap from the row's columns, or write a constant interval.")));
		an->session = true;
		an->session_gap_us = 0;
		return;
	}
	if (gap == NULL || ((Const *) gap)->constisnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("session window gap must not be null"),
				 errhint("Write the gap as an interval literal, such as interval '10 minutes'.")));
	iv = DatumGetIntervalP(((Const *) gap)->constvalue);
	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session window gap cannot contain months or years"),
				 errhint("Use days, hours, minutes or seconds.")));
	if (!cq_interval_usecs(iv, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("session window gap out of range")));
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("session window gap must be positive"),
				 errdetail("The gap is %s.", DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv)))),
				 errhint("Write a gap longer than zero, such as interval '10 minutes'.")));
	an->session = true;
	an->session_gap_us = us;
}

/*
 * references_rti_walker
 *	  Does an expression read a column of range-table entry *rti?
 */
static bool
references_rti_walker(Node *node, Index *rti)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno == *rti && ((Var *) node)->varlevelsup == 0;
	return expression_tree_walker(node, references_rti_walker, rti);
}

/*
 * check_session_keys
 *	  A session-window aggregation groups by session_start, session_end and
 *	  at least one other key (Spark: a global aggregation over session
 *	  windows is not supported).  The session columns are read only as
 *	  those keys: anywhere else (WHERE, another key, an aggregate) they
 *	  would be a row's own session, not its merged one.  DISTINCT
 *	  aggregates are not supported (their seen values are kept per group,
 *	  and sessions merge).  The watermark key is the session end when the
 *	  session is over the event-time column.
 */
static void
check_session_keys(CqAnalysis *an, CqOptions *opts, const char *name)
{
	FuncExpr   *fe;
	Index		rti = session_rti(an, &fe);
	ListCell   *lc;

	an->session_start_key = an->session_end_key = -1;
	foreach(lc, an->group_exprs)
	{
		Node	   *g = lfirst(lc);

		if (IsA(g, Var) && ((Var *) g)->varno == rti && ((Var *) g)->varlevelsup == 0 &&
			(((Var *) g)->varattno == 1 || ((Var *) g)->varattno == 2))
		{
			if (((Var *) g)->varattno == 1)
				an->session_start_key = foreach_current_index(lc);
			else
				an->session_end_key = foreach_current_index(lc);
		}
		else if (references_rti_walker(g, &rti))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("session window columns may be grouped only as they are"),
					 errdetail("GROUP BY expression %d of continuous query \"%s\" computes on session_start or session_end.",
							   foreach_current_index(lc) + 1, name),
					 errhint("Group by session_start and session_end themselves and compute in the select list.")));
	}
	if (an->session_start_key < 0 || an->session_end_key < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a session window must be grouped by both session_start and session_end"),
				 errdetail("Continuous query \"%s\" calls cq.session_window but does not group by both of its columns.", name),
				 errhint("GROUP BY a key, s.session_start, s.session_end.")));
	if (list_length(an->group_exprs) < 3)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("global aggregation with session window in streaming query is not supported"),
				 errdetail("Continuous query \"%s\" groups by the session window alone; sessions are formed per key.", name),
				 errhint("Group by at least one column besides session_start and session_end, as Spark requires.")));
	if (references_rti_walker((Node *) an->arg_exprs, &rti) ||
		references_rti_walker((Node *) an->filter_exprs, &rti) ||
		references_rti_walker(an->query->jointree->quals, &rti))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session window columns may be read only as grouping keys"),
				 errdetail("Continuous query \"%s\" reads session_start or session_end in WHERE, an aggregate or its FILTER, where it would be the row's own session, not its merged one.", name),
				 errhint("Use the session columns in the select list or HAVING only.")));
	if (an->distinct_sets != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT aggregates over session windows are not supported"),
				 errdetail("Continuous query \"%s\" has a DISTINCT aggregate; the values it has seen are kept per group, and sessions merge.", name),
				 errhint("Aggregate without DISTINCT, or use min, max, bool_and, bool_or, bit_and or bit_or, for which DISTINCT changes nothing.")));
	an->wm_key = -1;
	an->wm_end_fmt = NULL;
	if (an->has_watermark && opts->event_time && is_event_time(an, window_arg(fe, 0)))
	{
		an->wm_key = an->session_end_key;
		an->wm_end_fmt = "%1$s";
	}
}

/*
 * keys_hashable
 *	  Can the state be keyed by a hash of the grouping keys?  Every key type
 *	  needs a default hash opclass whose equality is the one GROUP BY uses,
 *	  so that hash_record() agrees with it (numeric 1.0 and 1.00, citext 'A'
 *	  and 'a' hash alike).  An aggregate without GROUP BY has one constant
 *	  key and needs no hash.
 */
static bool
keys_hashable(CqAnalysis *an)
{
	ListCell   *lc,
			   *lo;

	if (an->group_exprs == NIL)
		return false;
	forboth(lc, an->group_exprs, lo, an->group_eqops)
	{
		TypeCacheEntry *tc = lookup_type_cache(exprType(lfirst(lc)),
											   TYPECACHE_HASH_PROC | TYPECACHE_HASH_OPFAMILY);

		if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->hash_opf) ||
			!op_in_opfamily(lfirst_oid(lo), tc->hash_opf))
			return false;
	}
	return true;
}

/*
 * Clauses a continuous query may not have, checked in this order: the
 * field of Query that holds the clause (a pointer, non-NULL when present,
 * or a bool), and the error it gets.  LIMIT and OFFSET share their error.
 */
typedef struct CqClauseCheck
{
	size_t		offset;			/* of the field in Query */
	bool		is_bool;		/* field is a bool (else a pointer) */
	const char *message;
	const char *detail;			/* or NULL */
	const char *hint;			/* or NULL */
} CqClauseCheck;

#define CLAUSE(field) offsetof(Query, field), false
#define FLAG(field) offsetof(Query, field), true

static const CqClauseCheck unsupported_clauses[] = {
	{CLAUSE(setOperations), "UNION, INTERSECT and EXCEPT are not supported in continuous queries", NULL, NULL},
	{CLAUSE(cteList), "WITH queries are not supported in continuous queries", NULL,
	"Write the common table expression as a join or define it as a view over static tables."},
	{FLAG(hasWindowFuncs), "window functions are not supported in continuous queries",
		"Only time-window aggregation is supported on a stream.",
	"Group by a time window: cq.window(ts, size) or date_bin(size, ts, origin)."},
	{FLAG(hasSubLinks), "subqueries in expressions are not supported in continuous queries", NULL,
	"Join the static table instead."},
	{CLAUSE(limitCount), "LIMIT and OFFSET are not supported in continuous queries",
		"A stream has no end, so its first rows are not defined.", "Limit the rows when reading the target table."},
	{CLAUSE(limitOffset), "LIMIT and OFFSET are not supported in continuous queries",
		"A stream has no end, so its first rows are not defined.", "Limit the rows when reading the target table."},
	{CLAUSE(groupingSets), "GROUPING SETS, ROLLUP and CUBE are not supported in continuous queries", NULL, NULL},
	{CLAUSE(rowMarks), "FOR UPDATE and FOR SHARE are not supported in continuous queries", NULL, NULL},
};

/*
 * check_clauses
 *	  Reject the first clause of unsupported_clauses the query has.  In a
 *	  join of two streams (two_streams) subqueries are left to joinspec.c,
 *	  whose error names the semi and anti joins they would be.
 */
static void
check_clauses(Query *q, bool two_streams)
{
	for (int i = 0; i < lengthof(unsupported_clauses); i++)
	{
		const CqClauseCheck *c = &unsupported_clauses[i];
		const char *field = (const char *) q + c->offset;
		bool		present = c->is_bool ? *(const bool *) field : *(void *const *) field != NULL;

		if (present && !(two_streams && c->offset == offsetof(Query, hasSubLinks)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s", c->message),
					 c->detail ? errdetail("%s", c->detail) : 0,
					 c->hint ? errhint("%s", c->hint) : 0));
	}
}

/*
 * check_from_subqueries
 *	  Subqueries in FROM may read static tables only.
 */
static void
check_from_subqueries(CqAnalysis *an)
{
	ListCell   *lc;

	foreach(lc, an->query->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY &&
			rangetable_mentions_walker((Node *) rte->subquery, &an->source_relid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("subqueries in FROM over the streaming table are not supported"),
					 errhint("Read the streaming table directly in the FROM clause.")));
	}
}

/*
 * check_stateless
 *	  A query without aggregation: no complete mode, no ORDER BY.
 */
static void
check_stateless(CqAnalysis *an, CqOptions *opts, const char *name)
{
	if (opts->mode == CQ_MODE_COMPLETE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("complete output mode is not supported when there are no streaming aggregations"),
				 errdetail("Continuous query \"%s\" has no GROUP BY and no aggregate.", name),
				 errhint("Use output mode \"append\" or \"update\".")));
	if (an->query->sortClause)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ORDER BY is not supported in continuous queries without aggregation"),
				 errhint("Sort when reading the target table.")));
}

/*
 * collect_group_keys
 *	  The grouping expressions and their equality operators; every key
 *	  type needs a btree opclass.
 */
static void
collect_group_keys(CqAnalysis *an)
{
	Query	   *q = an->query;
	ListCell   *lc;

	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		Node	   *expr = get_sortgroupclause_expr(sgc, q->targetList);
		Oid			type = exprType(expr);

		if (!has_btree_opclass(type))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot group by type %s in a continuous query", format_type_be(type)),
					 errdetail("State and target tables are keyed with a btree index on the grouping columns.")));
		an->group_exprs = lappend(an->group_exprs, expr);
		an->group_eqops = lappend_oid(an->group_eqops, sgc->eqop);
	}
}

/*
 * find_watermark_key
 *	  The grouping key that carries the watermark: the first that is the
 *	  event-time column or a window over it.
 */
static void
find_watermark_key(CqAnalysis *an, CqOptions *opts)
{
	int			i = 0;
	ListCell   *lc;

	if (!opts->event_time)
		return;
	foreach(lc, an->group_exprs)
	{
		char	   *fmt = window_end_fmt(an, lfirst(lc));

		if (fmt)
		{
			an->wm_key = i;
			an->wm_end_fmt = fmt;
			break;
		}
		i++;
	}
}

/*
 * check_aggregation_srfs
 *	  Set-returning functions may expand the rows of a stream (select list
 *	  of a stateless query, or LATERAL in FROM before aggregating), but not
 *	  the result rows of an aggregation: PostgreSQL evaluates a select-list
 *	  SRF of a grouped query after grouping, so one group would give several
 *	  target rows, which its grouping keys cannot identify.
 */
static void
check_aggregation_srfs(CqAnalysis *an, const char *name)
{
	if (an->query->hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-returning functions in the select list of an aggregation are not supported in continuous queries"),
				 errdetail("Continuous query \"%s\" aggregates; a set-returning function in its select list would expand each group's result into several rows, which its grouping keys cannot identify in the target.", name),
				 errhint("Expand the rows before aggregating, with the function in FROM: FROM src, LATERAL unnest(src.a) AS x ... GROUP BY x; or expand the target's rows when reading it.")));
}

/*
 * analyze_aggregation
 *	  A query with GROUP BY or aggregates: output mode and ORDER BY checks,
 *	  grouping keys, aggregates, the watermark key.
 */
static void
analyze_aggregation(CqAnalysis *an, CqOptions *opts, const char *name)
{
	CollectCtx	ctx = {an, name};

	check_aggregation_srfs(an, name);
	if (opts->mode == CQ_MODE_APPEND && !an->has_watermark)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("append output mode is not supported for streaming aggregations without a watermark"),
				 errdetail("Continuous query \"%s\" aggregates, and without a watermark on a grouping key every result row can still change.", name),
				 errhint("Use output mode \"update\" or \"complete\", or set cq.event_time and cq.watermark and group by the event-time column or a window over it.")));
	if (an->query->sortClause && opts->mode != CQ_MODE_COMPLETE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ORDER BY is supported only in complete output mode"),
				 errhint("Sort when reading the target table.")));

	collect_group_keys(an);
	an->keys_hashable = keys_hashable(an);
	expression_tree_walker((Node *) an->query->targetList, collect_aggs_walker, &ctx);
	/*
	 * HAVING's aggregates, after the select list's: state columns too.  The
	 * walker itself sees the root, which may be an aggregate (HAVING
	 * bool_or(x)): expression_tree_walker would only visit its arguments.
	 */
	(void) collect_aggs_walker(an->query->havingQual, &ctx);
	find_watermark_key(an, opts);
	if (an->session)
		check_session_keys(an, opts, name);
	if (opts->mode == CQ_MODE_APPEND && an->wm_key < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("append output mode is not supported for streaming aggregations without a watermark"),
				 errdetail("Continuous query \"%s\" has a watermark, but no grouping key is its event-time column \"%s\" or a window over it.",
						   name, opts->event_time ? opts->event_time : ""),
				 errhint("Group by cq.window(%s, ...), date_bin(..., %s, ...), date_trunc(..., %s) or %s itself, or use output mode \"update\".",
						 opts->event_time, opts->event_time, opts->event_time, opts->event_time)));
}

/*
 * analyze_join_aggregation
 *	  An aggregation over a join of two streams (Spark 3.5+: a stateful
 *	  operator after a stream-stream join, append mode only, joinspec.c):
 *	  as over one stream, the append mode needs a grouping key that is an
 *	  event-time column of one of the streams or a window over it.  Its
 *	  window end's type is that column's.  DISTINCT aggregates are not
 *	  supported here (Spark rejects them on streams).
 */
static void check_date_bin_strides(CqAnalysis *an);

static void
analyze_join_aggregation(CqAnalysis *an, CqOptions *opts, const char *name)
{
	analyze_aggregation(an, opts, name);
	check_date_bin_strides(an);
	if (an->distinct_sets != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT aggregates over a join of two streams are not supported"),
				 errdetail("Spark: distinct aggregations are not supported on streaming DataFrames/Datasets."),
				 errhint("Use approx_count_distinct-like aggregates (hll) or aggregate the joined rows in another continuous query.")));
	if (an->wm_key >= 0)
		an->et_is_tz = getBaseType(exprType(list_nth(an->group_exprs, an->wm_key))) == TIMESTAMPTZOID;
}

/*
 * check_date_bin_strides
 *	  Constant date_bin strides of the grouping keys are checked at
 *	  creation too.
 */
static void
check_date_bin_strides(CqAnalysis *an)
{
	ListCell   *lc;

	foreach(lc, an->group_exprs)
	{
		Node	   *g = lfirst(lc);

		if (IsA(g, FuncExpr) &&
			(((FuncExpr *) g)->funcid == F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ ||
			 ((FuncExpr *) g)->funcid == F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP))
			(void) cq_interval_sql(linitial(((FuncExpr *) g)->args), "size", false);
	}
}

/*
 * collect_outputs
 *	  The outputs, and which of them are grouping keys.
 */
static void
collect_outputs(CqAnalysis *an)
{
	ListCell   *lc;

	foreach(lc, an->query->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		int			key = -1;
		int			i = 0;
		ListCell   *lc2;

		if (tle->resjunk)
			continue;
		foreach(lc2, an->group_exprs)
		{
			if (equal(lfirst(lc2), tle->expr))
			{
				key = i;
				break;
			}
			i++;
		}
		an->outputs = lappend(an->outputs, tle);
		an->output_key = lappend_int(an->output_key, key);
	}
}

/*
 * check_update_keys
 *	  Update mode writes the target by key: every grouping key must be an
 *	  output.
 */
static void
check_update_keys(CqAnalysis *an, CqOptions *opts)
{
	if (!an->is_aggregate || opts->mode != CQ_MODE_UPDATE)
		return;
	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		if (!list_member_int(an->output_key, g))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("update output mode needs every GROUP BY expression in the select list"),
					 errdetail("The target is updated by key, and GROUP BY expression %d is not selected.", g + 1),
					 errhint("Add the expression to the select list, or use output mode \"complete\".")));
	}
}

/*
 * analyze_distinct
 *	  SELECT DISTINCT and DISTINCT ON (keys) over a stream without
 *	  aggregation: Spark's dropDuplicates (dedup.c).  The keys are the
 *	  DISTINCT expressions with their equality; over an aggregation,
 *	  DISTINCT is accepted only where it changes nothing (every GROUP BY
 *	  expression selected: the groups are distinct already) and dropped.
 */
static void
analyze_distinct(CqAnalysis *an, CqOptions *opts, const char *name)
{
	Query	   *q = an->query;
	ListCell   *lc;

	if (an->is_aggregate)
	{
		bool		trivial = !q->hasDistinctOn;

		foreach(lc, q->groupClause)
		{
			Node	   *g = get_sortgroupclause_expr(lfirst(lc), q->targetList);
			bool		selected = false;
			ListCell   *lt;

			foreach(lt, q->targetList)
				if (!((TargetEntry *) lfirst(lt))->resjunk && equal(((TargetEntry *) lfirst(lt))->expr, g))
					selected = true;
			trivial &= selected;
		}
		if (!trivial)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s over an aggregation is not supported in continuous queries",
							q->hasDistinctOn ? "DISTINCT ON" : "SELECT DISTINCT"),
					 errdetail("Continuous query \"%s\" would deduplicate the rows of an aggregation, whose groups change from batch to batch.", name),
					 errhint("Select every GROUP BY expression and drop DISTINCT: the groups are distinct already.")));
		q->distinctClause = NIL;
		q->hasDistinctOn = false;
		return;
	}
	if (opts->mode == CQ_MODE_COMPLETE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("complete output mode is not supported for SELECT DISTINCT"),
				 errdetail("Continuous query \"%s\" deduplicates a stream: each row is written once, when it is first seen.", name),
				 errhint("Use output mode \"append\" or \"update\" (the same for SELECT DISTINCT).")));
	if (q->hasDistinctOn && q->sortClause)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("DISTINCT ON with ORDER BY is not supported in continuous queries"),
				 errdetail("The row written for a key is the first one seen; a later row cannot replace it."),
				 errhint("Remove ORDER BY, or group by the keys and aggregate instead.")));
	foreach(lc, q->distinctClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);
		Oid			type = exprType((Node *) tle->expr);

		if (!OidIsValid(sgc->sortop) || !has_btree_opclass(type))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot use type %s in SELECT DISTINCT of a continuous query", format_type_be(type)),
					 errdetail("Seen keys are kept in a state table, keyed with a btree index.")));
		an->group_exprs = lappend(an->group_exprs, tle->expr);
		an->group_eqops = lappend_oid(an->group_eqops, sgc->eqop);
		an->dedup_refs = lappend_int(an->dedup_refs, tle->resno);
	}
	an->is_dedup = true;
	an->keys_hashable = keys_hashable(an);
	an->dedup_evicts = an->has_watermark && an->et_attno != InvalidAttrNumber;
	an->dedup_delay_ok = an->dedup_evicts && opts->watermark_delay != NULL &&
		cq_options_delay_usecs(opts->watermark_delay, &an->dedup_delay_us);
}

/*
 * cq_analyze_query
 *	  Analyze a continuous query and reject every unsupported shape, each
 *	  with its own message.  The query is copied; the caller's tree is not
 *	  modified.
 */
CqAnalysis *
cq_analyze_query(Query *query, CqOptions *opts, const char *name)
{
	CqAnalysis *an = palloc0(sizeof(CqAnalysis));
	Query	   *q;

	if (query->commandType != CMD_SELECT || query->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a continuous query must be a SELECT statement")));

	q = an->query = copyObject(query);
	check_clauses(q, cq_joinspec_names_two(opts));

	/* a join of two streams: joinspec.c checks it, join.c runs it */
	an->join = cq_joinspec_analyze(q, opts, name);
	if (an->join)
	{
		for (int s = 1; s >= 0; s--)
			check_source_table(an->join->side[s].relid);
		an->source_rti = an->join->side[0].rti;
		an->source_relid = an->join->side[0].relid;
		an->et_attno = an->join->side[0].et_attno;
		an->et_is_tz = an->join->side[0].et_is_tz;
		an->has_watermark = an->join->has_watermark;
		an->wm_key = -1;
		an->is_aggregate = q->hasAggs || q->groupClause != NIL || q->havingQual != NULL;
		if (an->is_aggregate)
			analyze_join_aggregation(an, opts, name);
		collect_outputs(an);
		return an;
	}

	find_source(an, opts, name);
	check_source_table(an->source_relid);
	check_from_subqueries(an);
	check_joins((Node *) q->jointree, an->source_rti);
	check_event_time(an, opts);

	an->is_aggregate = q->hasAggs || q->groupClause != NIL || q->havingQual != NULL;
	find_session_window(an, name);
	if (q->distinctClause)
		analyze_distinct(an, opts, name);
	if (!an->is_aggregate)
		check_stateless(an, opts, name);
	else
		analyze_aggregation(an, opts, name);
	check_window_calls(an);
	check_date_bin_strides(an);
	collect_outputs(an);
	check_update_keys(an, opts);
	return an;
}

/*
 * cq_analyze_state_signature
 *	  Text identifying what a query's state depends on: its FROM clause
 *	  (stream, static tables, windows), grouping expressions and aggregates
 *	  with their arguments and filters, the keys of SELECT DISTINCT [ON],
 *	  but not its WHERE clause or its select list.  Two versions of a query
 *	  may share state (Spark's rules for changing a running query) only if
 *	  their signatures are equal.
 */
char *
cq_analyze_state_signature(CqAnalysis *an)
{
	Query	   *q = copyObject(an->query);
	List	   *tlist = NIL;
	ListCell   *lc;
	int			resno = 1;
	int			nest;
	char	   *sql;

	foreach(lc, an->group_exprs)
	{
		/* the keys of SELECT DISTINCT are named apart from grouping keys */
		tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno,
											   psprintf(an->is_dedup ? "distinct%d" : "c%d", resno),
											   false));
		resno++;
	}
	foreach(lc, an->aggs)
	{
		tlist = lappend(tlist, makeTargetEntry((Expr *) copyObject(((CqAgg *) lfirst(lc))->aggref),
											   resno, psprintf("c%d", resno), false));
		resno++;
	}
	if (tlist == NIL)
		tlist = list_make1(makeTargetEntry((Expr *) makeBoolConst(true, false), 1, "s", false));
	q->targetList = tlist;
	q->jointree->quals = NULL;
	q->groupClause = NIL;
	q->havingQual = NULL;
	q->sortClause = NIL;
	q->distinctClause = NIL;
	q->hasDistinctOn = false;

	nest = cq_security_deparse_begin();
	sql = cq_sql_querydef(q);
	cq_security_deparse_end(nest);
	return sql;
}
