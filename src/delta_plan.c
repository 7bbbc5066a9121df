/*-------------------------------------------------------------------------
 *
 * delta_plan.c
 *	  The plan of a batch's d statement on the store: its bitmap heap scan
 *	  of the source without the recheck of the cq_xid range.
 *
 * d finds the new rows through the BRIN index on cq_xid: [$1, $2) is the
 * index condition, cq.xid_new(cq_xid, $3, $4) the filter (delta.c,
 * cq_delta_quals).  A BRIN bitmap is lossy: the bitmap heap scan rechecks
 * every row of the pages it names against the index condition (two xid8
 * comparisons a row, each a function call), then runs the filter.  The
 * range is implied by the filter: a row visible in S_cur ($3) has cq_xid
 * below its xmax, which $2 is; one not visible in S_prev ($4) but visible
 * in S_cur is at or above S_prev's xmax, or one of its running
 * transactions that S_cur sees, and $1 is the least of those
 * (cq_snap_low_bound); the rebuild of a store (cq_store_rebuild) passes 0
 * and its S_cur's xmax.  So the recheck of the range changes no result,
 * and a planner hook drops it from d's plan as the planner makes it: only
 * while store_fold.c runs d (cq_delta_plan_begin), only for d's own saved
 * statement, known by the address of its text (the plan cache passes the
 * planner its plan source's copy): not a statement of the same text that
 * a function d calls plans meanwhile, with its own parameters (session
 * 36: the text alone was compared), only a bitmap
 * heap scan of the source whose recheck is exactly that range over
 * cq_xid and whose filter calls cq.xid_new over cq_xid.  bench/batch_cg.sh
 * BCG_KIND=history: a batch of 10k new rows 44.57M -> 42.92M instructions
 * (session 35).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/plancache.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "delta_plan.h"
#include "delta.h"
#include "tracking.h"

static planner_hook_type prev_planner = NULL;

/*
 * the d statement being run (cq_delta_plan_begin), or InvalidOid / NULL:
 * its plan source's text, compared by address
 */
static Oid	delta_source = InvalidOid;
static const char *delta_sql = NULL;

/* is e the Var of cq_xid (att) in the scan of scanrelid? */
static bool
is_xid_var(Node *e, Index scanrelid, AttrNumber att)
{
	return e != NULL && IsA(e, Var) && ((Var *) e)->varno == scanrelid &&
		((Var *) e)->varattno == att && ((Var *) e)->varlevelsup == 0;
}

/* is e a Param or a Const (the custom plan's value of a Param) */
static bool
is_value(Node *e)
{
	return e != NULL && (IsA(e, Param) || IsA(e, Const));
}

/* is qual exactly cq_xid >= value AND cq_xid < value (in either order)? */
static bool
is_xid_range(List *qual, Index scanrelid, AttrNumber att)
{
	bool		ge = false;
	bool		lt = false;
	ListCell   *lc;

	if (list_length(qual) != 2)
		return false;
	foreach(lc, qual)
	{
		OpExpr	   *op = lfirst(lc);
		RegProcedure fn;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
			!is_xid_var(linitial(op->args), scanrelid, att) || !is_value(lsecond(op->args)))
			return false;
		fn = get_opcode(op->opno);
		if (fn == F_XID8GE)
			ge = true;
		else if (fn == F_XID8LT)
			lt = true;
		else
			return false;
	}
	return ge && lt;
}

/* does qual (implicitly ANDed) call cq.xid_new(cq_xid, value, value)? */
static bool
calls_xid_new(List *qual, Index scanrelid, AttrNumber att, Oid xid_new)
{
	ListCell   *lc;

	foreach(lc, qual)
	{
		FuncExpr   *fe = lfirst(lc);

		if (IsA(fe, FuncExpr) && fe->funcid == xid_new && list_length(fe->args) == 3 &&
			is_xid_var(linitial(fe->args), scanrelid, att) &&
			is_value(lsecond(fe->args)) && is_value(lthird(fe->args)))
			return true;
	}
	return false;
}

/* drop the range recheck of the source's bitmap heap scans in plan */
static void
strip_rechecks(PlannedStmt *stmt, Plan *plan, AttrNumber att, Oid xid_new)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, BitmapHeapScan))
	{
		BitmapHeapScan *bhs = (BitmapHeapScan *) plan;
		Index		rti = bhs->scan.scanrelid;

		if (rt_fetch(rti, stmt->rtable)->relid == delta_source &&
			is_xid_range(bhs->bitmapqualorig, rti, att) &&
			calls_xid_new(plan->qual, rti, att, xid_new))
			bhs->bitmapqualorig = NIL;
	}
	else if (IsA(plan, SubqueryScan))
		strip_rechecks(stmt, ((SubqueryScan *) plan)->subplan, att, xid_new);
	else if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			strip_rechecks(stmt, lfirst(lc), att, xid_new);
	strip_rechecks(stmt, plan->lefttree, att, xid_new);
	strip_rechecks(stmt, plan->righttree, att, xid_new);
}

/*
 * delta_planner
 *	  Planner hook: d's plan, as the planner made it, without the recheck
 *	  (see above).
 */
static PlannedStmt *
delta_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	PlannedStmt *stmt;

	if (prev_planner)
		stmt = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (OidIsValid(delta_source) && delta_sql != NULL && query_string == delta_sql &&
		stmt->commandType == CMD_SELECT)
	{
		AttrNumber	att = cq_source_tracking_attnum(delta_source);
		Oid			xid_new = cq_delta_xid_new_function(delta_source);
		ListCell   *lc;

		if (att == InvalidAttrNumber || !OidIsValid(xid_new))
			return stmt;
		strip_rechecks(stmt, stmt->planTree, att, xid_new);
		foreach(lc, stmt->subplans)
			strip_rechecks(stmt, lfirst(lc), att, xid_new);
	}
	return stmt;
}

/*
 * cq_delta_plan_begin
 *	  store_fold.c runs the d statement over source, saved as plan (one
 *	  statement): its plan, if made now, loses the recheck.
 *	  cq_delta_plan_end after, also on error.
 */
void
cq_delta_plan_begin(Oid source, SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);

	delta_source = InvalidOid;
	delta_sql = NULL;
	if (list_length(sources) != 1)
		return;
	delta_source = source;
	delta_sql = ((CachedPlanSource *) linitial(sources))->query_string;
}

void
cq_delta_plan_end(void)
{
	delta_source = InvalidOid;
	delta_sql = NULL;
}

/*
 * cq_delta_plan_init
 *	  Install the planner hook (_PG_init).
 */
void
cq_delta_plan_init(void)
{
	prev_planner = planner_hook;
	planner_hook = delta_planner;
}
