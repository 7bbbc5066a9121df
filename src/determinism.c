/*-------------------------------------------------------------------------
 *
 * determinism.c
 *	  Refuse the parts of a continuous query that a batch would evaluate
 *	  other than a plain SELECT over the same rows does: TABLESAMPLE, and
 *	  volatile functions in expressions over a group (HAVING, the select
 *	  list outside aggregate arguments and grouping keys).
 *
 * What a batch evaluates once per source row (WHERE, a grouping key, an
 * aggregate's argument or FILTER, a stateless select list, a set-returning
 * function in FROM) is the same as a plain SELECT that reads the row once:
 * a volatile function there (random() < 0.1 as a sample, nextval() as a
 * row number) gives the target one possible result of the plain query, and
 * is allowed (docs/semantics.md, "Volatile functions").  Two things are not:
 *	 - TABLESAMPLE: a batch reads only the stream's new rows, by their
 *	   stamps, and every static table again; a sample of either is not the
 *	   sample a plain SELECT over all the rows takes (of a static table, a
 *	   new one every batch);
 *	 - a volatile function in an expression over a group: a batch evaluates
 *	   it for every group it changes, again in later batches, and may
 *	   evaluate HAVING twice for one group in one batch (the rows leaving
 *	   HAVING are deleted by one statement, the others written by another),
 *	   so a group could be kept with stale aggregates; a plain SELECT
 *	   evaluates it once per group.
 *
 * Only reads the query tree; allocates nothing that outlives the call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_proc.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"

#include "determinism.h"

/*
 * tablesample_walker
 *	  True if a range-table entry of the query or of any subquery in it
 *	  has TABLESAMPLE; *relid is its table.
 */
static bool
tablesample_walker(Node *node, Oid *relid)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION && rte->tablesample != NULL)
		{
			*relid = rte->relid;
			return true;
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, tablesample_walker, relid, QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, tablesample_walker, relid);
}

/*
 * func_volatile_is: check_functions_in_node's callback, true for a volatile
 * function.
 */
static bool
func_volatile_is(Oid func, void *context)
{
	return func_volatile(func) == PROVOLATILE_VOLATILE;
}

typedef struct GroupExprCtx
{
	List	   *group_exprs;	/* the grouping expressions */
} GroupExprCtx;

/*
 * group_volatile_walker
 *	  True if node calls a volatile function outside aggregate calls (whose
 *	  arguments and FILTER are evaluated once per row) and outside the
 *	  grouping expressions (evaluated once per row too).
 */
static bool
group_volatile_walker(Node *node, GroupExprCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref) || IsA(node, GroupingFunc))
		return false;
	if (list_member(ctx->group_exprs, node))
		return false;
	if (check_functions_in_node(node, func_volatile_is, NULL))
		return true;
	return expression_tree_walker(node, group_volatile_walker, ctx);
}

/*
 * cq_determinism_check
 *	  Refuse TABLESAMPLE anywhere in query, and, when it aggregates, a
 *	  volatile function in HAVING or in its select list outside aggregate
 *	  arguments and grouping keys (HAVING max(random()) > 0.5 is allowed:
 *	  its random() is drawn once a row).  name: the query's, for the messages.
 */
void
cq_determinism_check(Query *query, const char *name)
{
	Oid			relid = InvalidOid;
	GroupExprCtx ctx = {NIL};
	ListCell   *lc;

	if (tablesample_walker((Node *) query, &relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TABLESAMPLE is not supported in continuous queries"),
				 errdetail("Continuous query \"%s\" samples table \"%s\": a batch reads only the stream's new rows and every static table again, so its sample is not the one a plain SELECT over all the rows takes.",
						   name, get_rel_name(relid)),
				 errhint("Filter the rows in WHERE instead: a condition on random() there is evaluated once for each row a batch reads.")));
	if (!query->hasAggs && query->groupClause == NIL && query->havingQual == NULL)
		return;
	foreach(lc, query->groupClause)
		ctx.group_exprs = lappend(ctx.group_exprs,
								  get_sortgroupclause_expr(lfirst(lc), query->targetList));
	if (group_volatile_walker(query->havingQual, &ctx))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("volatile functions in HAVING are not supported in continuous queries"),
				 errdetail("Continuous query \"%s\" evaluates HAVING for a group in every batch that changes the group, and may evaluate it twice in one batch; a plain SELECT evaluates it once per group.",
						   name),
				 errhint("Compute the volatile value per row, in an aggregate's argument or the WHERE clause, or declare the function STABLE or IMMUTABLE if it is.")));
	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (group_volatile_walker((Node *) tle->expr, &ctx))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("volatile functions over the groups of an aggregation are not supported in continuous queries"),
					 errdetail("Column \"%s\" of continuous query \"%s\" calls a volatile function outside an aggregate's arguments and the grouping keys: a batch evaluates it for every group it changes, again in later batches; a plain SELECT evaluates it once per group.",
							   tle->resname ? tle->resname : "?column?", name),
					 errhint("Compute the volatile value per row, in an aggregate's argument or a grouping key, or declare the function STABLE or IMMUTABLE if it is.")));
	}
	list_free(ctx.group_exprs);
}
