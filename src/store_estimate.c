/*-------------------------------------------------------------------------
 *
 * store_estimate.c
 *	  Will the state of batch 0 fit in the shared-memory store?  An
 *	  estimate made before the batch runs (issue 12 goal 2, issue 15 item
 *	  4), so that a query whose history is far beyond cq.state_memory takes
 *	  the table path up front instead of folding into the store and then
 *	  moving its state to the table (switch_to_table in batch.c).
 *
 * The groups: the product of each grouping key's distinct values in the
 * source's statistics, bounded by the rows batch 0 reads: the source's
 * (pg_class.reltuples) for a query without WHERE or joins, else the rows
 * the planner expects the batch's partial aggregation to read (its d
 * statement over history, planned without parameter values), and then
 * also by the planner's estimate of its groups.  The planner counts a key that is an expression of a
 * column as having the column's distinct values: for the time buckets a
 * stream is typically grouped by (date_trunc, date_bin of a timestamp
 * column) that is the number of rows, far above the number of buckets;
 * here such a key counts the buckets between the column's lowest and
 * highest value in its statistics.  A key that is neither a constant, a
 * column of the source with statistics, nor such a bucket makes the
 * estimate unknown: the query stays in the store (the move still happens
 * if it outgrows the budget), since an overestimate would keep a query
 * that fits out of the store for good.
 *
 * The bytes: the estimated groups times what a state row costs in the
 * store, its columns laid out as heap_form_tuple lays them out (each
 * aligned as its type says; a varlena value short enough for a 1-byte
 * header unaligned, as it is stored).  A fixed-width column takes its
 * type's length; a variable-width one the width ANALYZE measured for the
 * source column it comes from (a grouping key that is a column), or for
 * the partial of min or max of a column (one of the column's values) and
 * of sum of a numeric column (its values' width and 2 bytes: one more
 * base-10000 digit, a sum of up to 10,000 times the values), also when
 * computed by cq.numeric_min, _max and _sum (numagg.c); any other
 * the planner's width for its type (32 bytes for a numeric), as before
 * session 28, when every column took the planner's width: a state row of
 * two numeric partials was estimated at 123 bytes where the store counted
 * 76 (bench/fold.sh, ~1M groups), which kept queries that fit out of the
 * store.  A partitioned source's widths are its tree's statistics; d's
 * four event-time statistics after the state row are not counted (the
 * store does not keep them).  Either way the batch's result is the
 * same: only the path differs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "parser/scansup.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "store_estimate.h"
#include "guc.h"
#include "store_private.h"

/*
 * row_bytes_for
 *	  What a state row of natts columns and width bytes of data costs in the
 *	  store, counted as store.c counts a row it holds (row_bytes: the
 *	  minimal tuple and its node).
 */
static int64
row_bytes_for(int width, int natts)
{
	return (int64) (MAXALIGN(SizeofHeapTupleHeader + BITMAPLEN(natts)) + width -
					HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET) + (int64) sizeof(StoreNode);
}

/*
 * value_width
 *	  The width ANALYZE measured for the values of expr, an expression of
 *	  query q (a column of the source, through subqueries and CTEs; the
 *	  partial of min or max of such a column, or of sum of a numeric one),
 *	  or -1 when not known (see the file header).
 */
static int32
value_width(Query *q, Node *expr, int depth)
{
	if (depth > 8 || expr == NULL)
		return -1;
	expr = strip_implicit_coercions(expr);
	while (IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (IsA(expr, Var))
	{
		Var		   *v = (Var *) expr;
		RangeTblEntry *rte;
		Query	   *sub = NULL;
		TargetEntry *tle;

		if (v->varlevelsup != 0 || v->varattno <= 0 || v->varno < 1 ||
			v->varno > list_length(q->rtable))
			return -1;
		rte = rt_fetch(v->varno, q->rtable);
		if (rte->rtekind == RTE_RELATION)
		{
			int32		w = get_attavgwidth(rte->relid, v->varattno);
			HeapTuple	tup;

			if (w > 0)
				return w;
			/* a partitioned table has only the statistics of its tree */
			tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(rte->relid),
								  Int16GetDatum(v->varattno), BoolGetDatum(true));
			if (HeapTupleIsValid(tup))
			{
				w = ((Form_pg_statistic) GETSTRUCT(tup))->stawidth;
				ReleaseSysCache(tup);
			}
			return w > 0 ? w : -1;
		}
		if (rte->rtekind == RTE_SUBQUERY)
			sub = rte->subquery;
		else if (rte->rtekind == RTE_CTE && rte->ctelevelsup == 0)
		{
			ListCell   *lc;

			foreach(lc, q->cteList)
			{
				CommonTableExpr *cte = lfirst(lc);

				if (strcmp(cte->ctename, rte->ctename) == 0 && IsA(cte->ctequery, Query))
					sub = (Query *) cte->ctequery;
			}
		}
		if (sub == NULL || (tle = get_tle_by_resno(sub->targetList, v->varattno)) == NULL)
			return -1;
		return value_width(sub, (Node *) tle->expr, depth + 1);
	}
	if (IsA(expr, Aggref))
	{
		Aggref	   *a = (Aggref *) expr;
		char	   *name;
		Node	   *arg;
		int32		w;

		Oid			nsp;

		if (list_length(a->args) != 1 || a->aggorder != NIL || a->aggdistinct != NIL)
			return -1;
		nsp = get_func_namespace(a->aggfnoid);
		arg = (Node *) ((TargetEntry *) linitial(a->args))->expr;
		if (exprType(arg) != a->aggtype)
			return -1;
		name = get_func_name(a->aggfnoid);
		if (name == NULL)
			return -1;
		/* cq.numeric_sum, _min, _max (numagg.c): PostgreSQL's sum, min, max */
		if (OidIsValid(nsp) && nsp == get_namespace_oid("cq", true) &&
			(strcmp(name, "numeric_sum") == 0 || strcmp(name, "numeric_min") == 0 ||
			 strcmp(name, "numeric_max") == 0))
		{
			name += strlen("numeric_");
			nsp = PG_CATALOG_NAMESPACE;
		}
		if (nsp != PG_CATALOG_NAMESPACE)
			return -1;
		if (strcmp(name, "min") != 0 && strcmp(name, "max") != 0 &&
			(strcmp(name, "sum") != 0 || a->aggtype != NUMERICOID))
			return -1;
		w = value_width(q, arg, depth + 1);
		return w < 0 ? -1 : w + (strcmp(name, "sum") == 0 ? 2 : 0);
	}
	return -1;
}

/*
 * row_data_width
 *	  The data bytes of a row of q's result but its last `extra` columns
 *	  as heap_form_tuple lays them out (see the file header), or -1 when q
 *	  is not a plain SELECT.
 */
static int
row_data_width(Query *q, int extra)
{
	ListCell   *lc;
	int			off = 0;
	int			keep = list_length(q->targetList) - extra;

	if (q->commandType != CMD_SELECT)
		return -1;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Oid			type = exprType((Node *) tle->expr);
		int16		typlen;
		bool		byval;
		char		align;
		int32		w;

		if (foreach_current_index(lc) >= keep)
			break;
		if (tle->resjunk)
			continue;
		get_typlenbyvalalign(type, &typlen, &byval, &align);
		if (typlen > 0)
		{
			off = att_align_nominal(off, align) + typlen;
			continue;
		}
		w = typlen == -1 ? value_width(q, (Node *) tle->expr, 0) : -1;
		if (w < 0)
			w = get_typavgwidth(type, exprTypmod((Node *) tle->expr));
		/* a short varlena (1-byte header) is stored unaligned */
		if (typlen != -1 || w > VARATT_SHORT_MAX)
			off = att_align_nominal(off, align);
		off += w;
	}
	return off;
}

/*
 * column_stats
 *	  Distinct values (a NULL counting as one) of a column of the source,
 *	  from pg_statistic, and its lowest and highest value among the
 *	  histogram's bounds and the most common values when want_range (an
 *	  int64 datum: timestamp or timestamptz); false without statistics.
 */
static bool
column_stats(Oid relid, AttrNumber attnum, bool inh, double rows, double *distinct,
			 bool want_range, int64 *lo, int64 *hi)
{
	HeapTuple	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid),
									  Int16GetDatum(attnum), BoolGetDatum(inh));
	Form_pg_statistic st;
	bool		ranged = false;

	if (!HeapTupleIsValid(tup))
		return false;
	st = (Form_pg_statistic) GETSTRUCT(tup);
	*distinct = st->stadistinct >= 0 ? st->stadistinct : -st->stadistinct * rows;
	if (st->stanullfrac > 0)
		*distinct += 1;
	*distinct = Max(*distinct, 1);
	if (want_range)
	{
		int			kinds[2] = {STATISTIC_KIND_HISTOGRAM, STATISTIC_KIND_MCV};

		for (int k = 0; k < 2; k++)
		{
			AttStatsSlot sslot;

			if (!get_attstatsslot(&sslot, tup, kinds[k], InvalidOid, ATTSTATSSLOT_VALUES))
				continue;
			for (int i = 0; i < sslot.nvalues; i++)
			{
				int64		v = DatumGetInt64(sslot.values[i]);

				*lo = ranged ? Min(*lo, v) : v;
				*hi = ranged ? Max(*hi, v) : v;
				ranged = true;
			}
			free_attstatsslot(&sslot);
		}
	}
	ReleaseSysCache(tup);
	return !want_range || ranged;
}

/*
 * trunc_width
 *	  The width in microseconds of date_trunc's unit (an average one for
 *	  months and longer), or 0 for a unit not known here.
 */
static double
trunc_width(const char *unit)
{
	static const struct
	{
		const char *name;
		double		us;
	}			units[] = {
		{"microseconds", 1}, {"milliseconds", 1e3}, {"second", 1e6}, {"minute", 6e7},
		{"hour", 3.6e9}, {"day", 8.64e10}, {"week", 6.048e11}, {"month", 2.6298e12},
		{"quarter", 7.8894e12}, {"year", 3.15576e13}, {"decade", 3.15576e14},
		{"century", 3.15576e15}, {"millennium", 3.15576e16}
	};
	char	   *lower = downcase_truncate_identifier(unit, strlen(unit), false);
	size_t		len = strlen(lower);

	/* date_trunc takes plurals too ('minutes') */
	if (len > 1 && lower[len - 1] == 's' && strcmp(lower, "microseconds") != 0 &&
		strcmp(lower, "milliseconds") != 0)
		lower[len - 1] = '\0';
	for (int i = 0; i < lengthof(units); i++)
		if (strcmp(lower, units[i].name) == 0)
			return units[i].us;
	return 0;
}

/*
 * bucket_width
 *	  If expr is a time bucket of a column (date_trunc(unit, col [, zone])
 *	  or date_bin(stride, col, origin) with constant unit or stride), its
 *	  width in microseconds, and *col the column; else 0.
 */
static double
bucket_width(Node *expr, Var **col)
{
	FuncExpr   *f;
	Node	   *width;
	Node	   *arg;

	if (!IsA(expr, FuncExpr))
		return 0;
	f = (FuncExpr *) expr;
	if (list_length(f->args) < 2)
		return 0;
	width = linitial(f->args);
	arg = strip_implicit_coercions(lsecond(f->args));
	if (!IsA(width, Const) || ((Const *) width)->constisnull || !IsA(arg, Var))
		return 0;
	*col = (Var *) arg;
	switch (f->funcid)
	{
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ:
		case F_DATE_TRUNC_TEXT_TIMESTAMP:
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ_TEXT:
			return trunc_width(TextDatumGetCString(((Const *) width)->constvalue));
		case F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP:
		case F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ:
			{
				Interval   *iv = DatumGetIntervalP(((Const *) width)->constvalue);

				if (iv->month != 0)
					return 0;
				return Max((double) iv->time + (double) iv->day * USECS_PER_DAY, 0);
			}
		default:
			return 0;
	}
}

/*
 * key_distinct
 *	  Distinct values of one grouping key in the source's statistics, or
 *	  -1 when unknown (see the file header).
 */
static double
key_distinct(CqAnalysis *an, Node *expr, bool inh, double rows)
{
	Var		   *col = NULL;
	double		width;
	double		distinct;
	int64		lo = 0;
	int64		hi = 0;

	expr = strip_implicit_coercions(expr);
	if (IsA(expr, Const))
		return 1;
	if (IsA(expr, Var))
	{
		col = (Var *) expr;
		if (col->varno != an->source_rti || col->varlevelsup != 0 || col->varattno <= 0 ||
			!column_stats(an->source_relid, col->varattno, inh, rows, &distinct, false, NULL, NULL))
			return -1;
		return distinct;
	}
	width = bucket_width(expr, &col);
	if (width <= 0 || col->varno != an->source_rti || col->varlevelsup != 0 || col->varattno <= 0 ||
		(getBaseType(col->vartype) != TIMESTAMPOID && getBaseType(col->vartype) != TIMESTAMPTZOID) ||
		!column_stats(an->source_relid, col->varattno, inh, rows, &distinct, true, &lo, &hi))
		return -1;
	/* buckets between the lowest and the highest value, NULL one more */
	return Min(distinct, floor(((double) hi - (double) lo) / width) + 2);
}

/*
 * source_rows
 *	  The source's rows as its statistics count them (pg_class.reltuples),
 *	  or -1 when it was never analyzed.
 */
static double
source_rows(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		rows;

	if (!HeapTupleIsValid(tup))
		return -1;
	rows = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return rows;
}

/*
 * find_agg
 *	  The first grouping Agg node of a plan tree (or its subplans), or NULL.
 */
static Agg *
find_agg(Plan *plan, List *subplans)
{
	ListCell   *lc;

	if (plan == NULL)
		return NULL;
	if (IsA(plan, Agg) && ((Agg *) plan)->aggstrategy != AGG_PLAIN)
		return (Agg *) plan;
	if (IsA(plan, SubqueryScan))
		return find_agg(((SubqueryScan *) plan)->subplan, subplans);
	if (IsA(plan, CteScan))
		return find_agg(list_nth(subplans, ((CteScan *) plan)->ctePlanId - 1), subplans);
	foreach(lc, plan->initPlan)
	{
		Agg		   *agg = find_agg(list_nth(subplans, ((SubPlan *) lfirst(lc))->plan_id - 1), subplans);

		if (agg)
			return agg;
	}
	if (plan->lefttree)
		return find_agg(plan->lefttree, subplans);
	return NULL;
}

/*
 * cq_store_estimate
 *	  Estimated groups and store bytes of batch 0 over history, whose d
 *	  statement is delta_sql (parameters $1 xid8, $2 xid8, $3 and $4
 *	  pg_snapshot), whose rows are state rows; false when unknown
 *	  (see the file header).  Plans the statement, as the current user,
 *	  with an active snapshot.
 */
bool
cq_store_estimate(CqAnalysis *an, const char *delta_sql, double *groups, double *bytes)
{
	Oid			types[4] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};
	RangeTblEntry *rte = rt_fetch(an->source_rti, an->query->rtable);
	List	   *raw = pg_parse_query(delta_sql);
	List	   *queries;
	PlannedStmt *stmt;
	Agg		   *agg;
	double		product = 1;
	double		rows;
	double		reltuples;
	bool		plain;
	bool		inh;
	int			width;
	ListCell   *lc;

	if (an->group_exprs == NIL || list_length(raw) != 1)
		return false;
	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, raw), delta_sql, types, 4, NULL);
	if (list_length(queries) != 1)
		return false;
	/*
	 * The state row's width, before planning (which changes the tree):
	 * d's columns but the four event-time statistics that follow it when
	 * the batch counts its rows from d (store_sql.c)
	 */
	width = row_data_width(linitial_node(Query, queries),
						   an->single_scan && an->et_attno != InvalidAttrNumber ? 4 : 0);
	PushActiveSnapshot(GetTransactionSnapshot());
	stmt = pg_plan_query(linitial_node(Query, queries), delta_sql, 0, NULL);
	PopActiveSnapshot();
	agg = find_agg(stmt->planTree, stmt->subplans);
	if (agg == NULL || agg->plan.lefttree == NULL)
		return false;

	/*
	 * The rows d reads: without a WHERE or a join, the source's (the
	 * planner cannot know that the filter on cq_xid keeps them all: the
	 * column is new, without statistics), else what the planner expects
	 */
	plain = an->query->jointree->quals == NULL && list_length(an->query->rtable) == 1;
	reltuples = plain ? source_rows(an->source_relid) : -1;
	rows = reltuples >= 0 ? Max(reltuples, 1) : Max(agg->plan.lefttree->plan_rows, 1);
	/* statistics of the source with its children, if it has any (as the planner reads them) */
	inh = rte->inh && (get_rel_relkind(an->source_relid) == RELKIND_PARTITIONED_TABLE ||
					   has_subclass(an->source_relid));
	foreach(lc, an->group_exprs)
	{
		double		distinct = key_distinct(an, lfirst(lc), inh, rows);

		if (distinct < 0)
			return false;
		product = Min(product * distinct, rows);
	}
	*groups = plain ? product : Min(agg->plan.plan_rows, product);
	if (width < 0)
		width = stmt->planTree->plan_width;
	*bytes = *groups * (double) row_bytes_for(width, list_length(stmt->planTree->targetlist));
	return true;
}

/*
 * cq_store_expect
 *	  Batch 0 of a store that starts empty is estimated (cq_store_estimate)
 *	  at groups groups taking bytes: the group table it builds
 *	  (cq_store_put_built) starts with slots for them, so that it is not
 *	  doubled 13 times on the way to 1M groups, each time zeroing a new
 *	  array, moving every slot and freeing the old one (~1% of batch 0 at
 *	  1M groups; inserts into the full-size array from the first group on
 *	  miss the cache more, which put_built's linked groups make up for:
 *	  bench/README.md, Fold efficiency, round 8).  Within the budget:
 *	  no more groups than cq.state_memory holds at the estimated bytes a
 *	  group (a row costs at least an empty one), and a slot array of at
 *	  most a quarter of cq.state_memory, so that an estimate far too high
 *	  reserves no more than that; past the groups it was made for the table
 *	  doubles as before.  The slots are not counted in the store's bytes
 *	  (cq.state_store_info), as the doubled ones are not.
 */
void
cq_store_expect(CqStore *st, double groups, double bytes)
{
	double		budget = (double) cq_state_memory_kb * 1024.0;
	double		per_group;
	uint64		expect;

	if (st == NULL || !st->replace || st->own_table || !(groups >= 1.0))
		return;
	per_group = Max(bytes / groups, (double) row_bytes_for(0, st->desc->natts));
	/* rounded as the DEBUG1 line of the estimate shows it */
	expect = (uint64) Min(rint(groups), floor(budget / per_group));
	while (expect > 0 && (double) cq_gt_bytes_for(expect) > budget / 4)
		expect /= 2;
	st->expect_groups = expect;
}
