/*-------------------------------------------------------------------------
 *
 * shard.c
 *	  The shards' side of a batch over a Citus source stamped per node
 *	  (issue 14, docs/scale-out.md): a shard query reads only new rows.
 *
 * A batch's statement restricts the source's rows with
 *	 cq_xid >= $1 AND cq_xid < $2 AND cq.node_visible($3, cq_node, cq_xid)
 *	 AND NOT cq.node_visible($4, cq_node, cq_xid)
 * and Citus sends it to the nodes that store the shards with the offsets
 * $3 and $4 as constants.  [$1, $2) is the union of every node's range, and
 * the nodes' transaction counters differ: on a node whose counter runs
 * ahead, the union covers every row it stamped since the query began.  And
 * the settings and the BRIN summarization a batch applies on one server
 * (cq_delta_plan_scan_settings, cq_source_summarize) happen on the coordinator,
 * whose shell table is empty: the shards were scanned in full.
 *
 * pg_cq is loaded on every node, so its planner hook sees the shard query
 * where it is planned.  There, an AND list holding both node_visible calls
 * with constant offsets gets one more condition, implied by the two calls:
 *	 (cq_node = n1 AND cq_xid >= lo1 AND cq_xid < xmax1) OR ...
 * one arm per node of the end offset (a row of a node the end offset does
 * not know is not visible in it): lo is the node's low bound between its
 * start and end snapshots, xmax its end snapshot's (cq_nsnap_node_low_bound;
 * outside [lo, xmax) no transaction of that node is visible in the end
 * snapshot and not in the start snapshot).  The arms are keyed by the node
 * that stamped the row, so rows that came with a shard move are found too.
 * Each arm bounds cq_xid with constants: the planner makes a BitmapOr of
 * BRIN scans.  The shard's BRIN index is summarized up to its last full
 * range first (without the scan horizon, tracking.c), and the query is
 * planned with enable_seqscan and jit off, as a batch is on one server.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/xid8.h"

#include "shard.h"
#include "citus.h"
#include "guc.h"
#include "offsets.h"
#include "tracking.h"
#include "summarize.h"

static planner_hook_type prev_planner = NULL;

typedef struct ShardWalk
{
	Query	   *query;			/* the query whose quals are being walked */
	List	   *shards;			/* tables whose scan got per-node ranges */
	Oid			visible;		/* cq.node_visible(text, bigint, xid8) */
} ShardWalk;

/*
 * visible_call
 *	  node, if it is cq.node_visible(<text constant>, Var, Var), else NULL.
 */
static FuncExpr *
visible_call(Node *node, Oid visible)
{
	FuncExpr   *f;

	if (node == NULL || !IsA(node, FuncExpr))
		return NULL;
	f = (FuncExpr *) node;
	if (f->funcid != visible || list_length(f->args) != 3 ||
		!IsA(linitial(f->args), Const) || ((Const *) linitial(f->args))->constisnull ||
		((Const *) linitial(f->args))->consttype != TEXTOID ||
		!IsA(lsecond(f->args), Var) || !IsA(lthird(f->args), Var) ||
		((Var *) lsecond(f->args))->varlevelsup != 0 || ((Var *) lthird(f->args))->varlevelsup != 0)
		return NULL;
	return f;
}

/*
 * xid8_operator
 *	  The built-in xid8 operator op.
 */
static Oid
xid8_operator(const char *op)
{
	Oid			opno = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString(pstrdup(op))),
										XID8OID, XID8OID);

	if (!OidIsValid(opno))
		elog(ERROR, "pg_cq: xid8 operator %s not found", op);
	return opno;
}

/*
 * xid8_bound
 *	  xid <op> constant x, with the built-in xid8 operator op.
 */
static Expr *
xid8_bound(const char *op, Var *xid, uint64 x)
{
	Oid			opno = xid8_operator(op);
	int16		len;
	bool		byval;

	get_typlenbyval(XID8OID, &len, &byval);
	return make_opclause(opno, BOOLOID, false, (Expr *) copyObject(xid),
						 (Expr *) makeConst(XID8OID, -1, InvalidOid, len, cq_xid8_datum(x), false, byval),
						 InvalidOid, InvalidOid);
}

/*
 * node_ranges
 *	  The condition implied by node_visible(end) AND NOT node_visible(start):
 *	  one arm per node of end with new transactions, constant false if none.
 *	  Sets [*lo, *hi) to the union of the arms' ranges (empty: lo >= hi).
 */
static Expr *
node_ranges(const char *end_text, const char *start_text, Var *node, Var *xid,
			uint64 *lo_all, uint64 *hi_all)
{
	CqNodeSnap *end = cq_nsnap_parse(end_text);
	CqNodeSnap *start = cq_nsnap_parse(start_text);
	Oid			int8eq = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString("=")),
										  INT8OID, INT8OID);
	List	   *arms = NIL;

	*lo_all = PG_UINT64_MAX;
	*hi_all = 0;

	for (int i = 0; i < end->n; i++)
	{
		uint64		lo = cq_nsnap_node_low_bound(start, end, i);
		uint64		hi = end->snap[i]->xmax;

		if (lo >= hi)
			continue;
		*lo_all = Min(*lo_all, lo);
		*hi_all = Max(*hi_all, hi);
		arms = lappend(arms, make_andclause(list_make3(
													   make_opclause(int8eq, BOOLOID, false, (Expr *) copyObject(node),
																	 (Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
																						Int64GetDatum(end->node[i]), false, FLOAT8PASSBYVAL),
																	 InvalidOid, InvalidOid),
													   xid8_bound(">=", xid, lo),
													   xid8_bound("<", xid, hi))));
	}
	if (arms == NIL)
		return (Expr *) makeBoolConst(false, false);
	if (list_length(arms) == 1)
		return linitial(arms);
	return make_orclause(arms);
}

/*
 * implied_bound
 *	  Is arg "xid >= c" with c <= lo, or "xid < c" with c >= hi (xid8
 *	  constants): implied by per-node ranges within [lo, hi)?  The batch's
 *	  own [$1, $2) is: the planner would otherwise take that single range
 *	  for the BRIN scan rather than the per-node arms.
 */
static bool
implied_bound(Node *arg, Var *xid, uint64 lo, uint64 hi)
{
	OpExpr	   *op;
	Const	   *c;
	uint64		v;

	if (arg == NULL || !IsA(arg, OpExpr) || list_length(((OpExpr *) arg)->args) != 2)
		return false;
	op = (OpExpr *) arg;
	if (!equal(linitial(op->args), xid) || !IsA(lsecond(op->args), Const))
		return false;
	c = lsecond(op->args);
	if (c->consttype != XID8OID || c->constisnull)
		return false;
	v = U64FromFullTransactionId(DatumGetFullTransactionId(c->constvalue));
	return (op->opno == xid8_operator(">=") && v <= lo) || (op->opno == xid8_operator("<") && v >= hi);
}

/*
 * add_ranges
 *	  An AND list with node_visible(end) and NOT node_visible(start) over
 *	  the same columns gets the per-node ranges (once: Citus plans the
 *	  coordinator's subplans with the offsets as constants too, and the
 *	  shard query it sends then has them); the scanned table is noted for
 *	  summarization and the scan settings.
 */
static void
add_ranges(BoolExpr *and, ShardWalk *w)
{
	FuncExpr   *end = NULL;
	FuncExpr   *start = NULL;
	Expr	   *ranges;
	ListCell   *lc;
	RangeTblEntry *rte;
	Var		   *xid;
	uint64		lo;
	uint64		hi;

	foreach(lc, and->args)
	{
		Node	   *arg = lfirst(lc);
		FuncExpr   *f;

		if (end == NULL && (f = visible_call(arg, w->visible)) != NULL)
			end = f;
		else if (start == NULL && is_notclause(arg) &&
				 (f = visible_call((Node *) get_notclausearg((Expr *) arg), w->visible)) != NULL)
			start = f;
	}
	if (end == NULL || start == NULL ||
		!equal(lsecond(end->args), lsecond(start->args)) || !equal(lthird(end->args), lthird(start->args)))
		return;
	xid = lthird(end->args);
	if (w->query == NULL || xid->varno <= 0 || xid->varno > list_length(w->query->rtable))
		return;
	rte = rt_fetch(xid->varno, w->query->rtable);
	/* a shard (or the shell table) of a source stamped per node only */
	if (rte->rtekind != RTE_RELATION || !cq_citus_node_stamped(rte->relid))
		return;
	ranges = node_ranges(TextDatumGetCString(((Const *) linitial(end->args))->constvalue),
						 TextDatumGetCString(((Const *) linitial(start->args))->constvalue),
						 lsecond(end->args), xid, &lo, &hi);
	/* the coordinator's planner may have added them (its shard query) */
	if (!list_member(and->args, ranges))
		and->args = lappend(and->args, ranges);
	if (lo < hi)
	{
		List	   *args = NIL;

		foreach(lc, and->args)
			if (!implied_bound(lfirst(lc), xid, lo, hi))
				args = lappend(args, lfirst(lc));
		and->args = args;
	}
	w->shards = list_append_unique_oid(w->shards, rte->relid);
}

/*
 * shard_walker
 *	  Every AND list of the query and its subqueries (add_ranges).
 */
static bool
shard_walker(Node *node, ShardWalk *w)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *outer = w->query;
		bool		result;

		w->query = (Query *) node;
		result = query_tree_walker((Query *) node, shard_walker, w, 0);
		w->query = outer;
		return result;
	}
	if (is_andclause(node))
		add_ranges((BoolExpr *) node, w);
	return expression_tree_walker(node, shard_walker, w);
}

/*
 * cq_shard_planner
 *	  Planner hook: a shard query of a batch (see above) gets the per-node
 *	  ranges, its shards' BRIN indexes summarized, and is planned with
 *	  enable_seqscan and jit off.  Any other query is planned as it comes.
 */
static PlannedStmt *
cq_shard_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	ShardWalk	w = {NULL, NIL, InvalidOid};
	int			nest = -1;
	PlannedStmt *result;
	ListCell   *lc;

	/* Citus defines its settings when loaded: without it, nothing to do */
	if (parse->commandType == CMD_SELECT && cq_citus_shard_scans && IsTransactionState() &&
		GetConfigOption("citus.shard_count", true, false) != NULL &&
		OidIsValid(w.visible = cq_citus_node_visible_function()))
	{
		(void) shard_walker((Node *) parse, &w);
		foreach(lc, w.shards)
			cq_source_summarize_shard(lfirst_oid(lc));
		if (w.shards != NIL)
		{
			nest = NewGUCNestLevel();
			(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
			(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
		}
	}
	if (prev_planner)
		result = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		result = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return result;
}

/*
 * cq_shard_init
 *	  Install the planner hook; called from _PG_init (after cq_citus_init).
 */
void
cq_shard_init(void)
{
	prev_planner = planner_hook;
	planner_hook = cq_shard_planner;
}
