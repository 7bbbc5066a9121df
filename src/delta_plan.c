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
 * The settings a batch's statements are planned under
 * (cq_delta_plan_scan_settings): enable_seqscan and jit off (and
 * enable_sort), see there.  They matter to the planner only, and a
 * batch's statements are saved plans, planned again only when
 * invalidated: set around every batch, they cost ~7.7k instructions a
 * batch (three set_config_option calls and the walk of every setting by
 * AtEOXact_GUC that any set makes) for plans already made.  So a batch
 * only marks its region, and the planner hook sets them, at a GUC nest
 * level of its own, around each planning within the region (a statement
 * of the batch planned again, a statement of a function it calls planned
 * as it runs): every plan made within the region is made under them, as
 * when they were set for the whole region.  Outside the planner the
 * region shows the session's values (current_setting() in a user's
 * function), and a plan made outside the region and run within it (none
 * of the batch's own: they run within it only) keeps the JIT the plan
 * chose.  A region ends with the (sub)transaction it began in when that
 * aborts (transaction callbacks), as a GUC nest level would.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/xact.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/plancache.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "delta_plan.h"
#include "delta.h"
#include "tracking.h"
#include "stamp_type.h"

static planner_hook_type prev_planner = NULL;

/*
 * the d statement being run (cq_delta_plan_begin), or InvalidOid / NULL:
 * its plan source's text, compared by address
 */
static Oid	delta_source = InvalidOid;
static const char *delta_sql = NULL;

/* the open scan-settings regions, innermost last, and where each began */
#define SCAN_REGIONS_MAX 8
typedef struct ScanRegion
{
	bool		no_sort;		/* enable_sort off too */
	SubTransactionId subid;		/* the subtransaction it began in */
} ScanRegion;
static ScanRegion scan_regions[SCAN_REGIONS_MAX];
static int	scan_depth = 0;
static bool scan_callbacks = false;

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
		int			strategy;
		bool		arg_xid8;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
			!is_xid_var(linitial(op->args), scanrelid, att) || !is_value(lsecond(op->args)))
			return false;
		fn = get_opcode(op->opno);
		/* xid8's >= and <, or cq.xid48's against an xid8 (the bounds' type) */
		strategy = cq_stamp_cmp_strategy(fn, &arg_xid8);
		if (strategy == BTGreaterEqualStrategyNumber && arg_xid8)
			ge = true;
		else if (strategy == BTLessStrategyNumber && arg_xid8)
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
 * plan_with_settings
 *	  The next planner, under the scan settings when a region is open (see
 *	  file header): set at a nest level of their own, back when it is done
 *	  (an error unwinds them with the (sub)transaction, as any setting).
 */
static PlannedStmt *
plan_with_settings(Query *parse, const char *query_string, int cursorOptions,
				   ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	int			nest = -1;

	if (scan_depth > 0)
	{
		bool		no_sort = false;

		for (int i = 0; i < scan_depth; i++)
			no_sort |= scan_regions[i].no_sort;
		nest = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		/* the disabled path's cost would otherwise trigger JIT compilation */
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		if (no_sort)
			(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	}
	if (prev_planner)
		stmt = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return stmt;
}

/*
 * delta_planner
 *	  Planner hook: plans within a batch's scan-settings region under them;
 *	  d's plan, as the planner made it, without the recheck (see above).
 */
static PlannedStmt *
delta_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	PlannedStmt *stmt = plan_with_settings(parse, query_string, cursorOptions, boundParams);

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
 * scan_xact_callback, scan_subxact_callback
 *	  A region ends with the transaction, and with an aborted
 *	  subtransaction it began in (or within: subtransaction ids grow).
 */
static void
scan_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		scan_depth = 0;
}

static void
scan_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	while (scan_depth > 0 && scan_regions[scan_depth - 1].subid >= mySubid)
		scan_depth--;
}

/*
 * cq_delta_plan_scan_settings
 *	  New rows are found through the BRIN index on cq_xid.  Until the
 *	  source is analyzed after tracking began, the planner has no
 *	  correlation statistics for cq_xid and would scan the whole table for
 *	  every batch; only batch 0 reading history really wants that.  So,
 *	  unless history, what is planned until cq_delta_plan_scan_end is
 *	  planned with enable_seqscan and jit off; with no_sort, enable_sort
 *	  too (the same missing statistics make a sort look cheaper than
 *	  hashing the groups of an aggregation).  Set by the planner hook, for
 *	  the plannings only (see file header).  Returns the token to pass to
 *	  cq_delta_plan_scan_end (also when history).
 */
int
cq_delta_plan_scan_settings(bool history, bool no_sort)
{
	int			token = scan_depth;

	if (history)
		return token;
	/* batches inside batches: cq.run from code a batch runs, of another query */
	if (scan_depth >= SCAN_REGIONS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_STATEMENT_TOO_COMPLEX),
				 errmsg("batches of continuous queries nested too deeply"),
				 errdetail("Code that a batch runs (a trigger on its target, a function of its query) may run batches of other queries %d levels deep.",
						   SCAN_REGIONS_MAX - 1)));
	if (!scan_callbacks)
	{
		RegisterXactCallback(scan_xact_callback, NULL);
		RegisterSubXactCallback(scan_subxact_callback, NULL);
		scan_callbacks = true;
	}
	scan_regions[scan_depth].no_sort = no_sort;
	scan_regions[scan_depth].subid = GetCurrentSubTransactionId();
	scan_depth++;
	return token;
}

/*
 * cq_delta_plan_scan_end
 *	  End the region cq_delta_plan_scan_settings began (and any left open
 *	  within it).
 */
void
cq_delta_plan_scan_end(int token)
{
	if (token >= 0 && scan_depth > token)
		scan_depth = token;
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
