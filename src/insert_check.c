/*-------------------------------------------------------------------------
 *
 * insert_check.c
 *	  Positional INSERTs into a source whose cq_xid is not its last column,
 *	  refused at parse analysis (the post_parse_analyze hook).
 *
 * Tracking adds cq_xid as the table's last column; a column added after
 * tracking comes after it.  An INSERT that names no columns fills them in
 * table order, so a writer who does not know of cq_xid gives it the value
 * meant for the next column (an integer or a quoted literal is valid xid8
 * input), the stamp trigger replaces it, and the value is lost.  Parse
 * analysis refuses such an INSERT, as PostgreSQL refuses a value for a
 * GENERATED ALWAYS identity column: the checks below run once per
 * statement analyzed (a prepared statement: once), never per row, and cost
 * a plain INSERT into a source whose cq_xid is last one name comparison.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "utils/rel.h"

#include "insert_check.h"
#include "tracking.h"
#include "stamp_type.h"
#include "citus.h"

static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;

/*
 * stamp_fires_on_insert
 *	  Does the table have the stamp trigger (by name), enabled, firing
 *	  before each inserted row?  One its owner or pg_restore
 *	  --disable-triggers disabled leaves cq_xid as given, so nothing given
 *	  there is lost.
 */
static bool
stamp_fires_on_insert(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;

	if (td == NULL || !td->trig_insert_before_row)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (strcmp(t->tgname, CQ_STAMP_TRIGGER) == 0)
			return t->tgenabled != TRIGGER_DISABLED &&
				TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW, TRIGGER_TYPE_BEFORE,
									 TRIGGER_TYPE_INSERT);
	}
	return false;
}

/*
 * stamp_column_not_last
 *	  cq_xid's attribute number if the table has a column (not dropped,
 *	  not pg_cq's cq_node) after it, else InvalidAttrNumber; *later is
 *	  the first such column.
 *	  Reads the descriptor from its end: a source whose cq_xid is last (all
 *	  but those altered after tracking) costs one name comparison.
 */
static AttrNumber
stamp_column_not_last(Relation rel, const char **later)
{
	TupleDesc	desc = RelationGetDescr(rel);

	*later = NULL;
	for (int i = desc->natts - 1; i >= 0; i--)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (a->attisdropped)
			continue;
		/* pg_cq's own per-node stamp on Citus (citus.c) is no writer's column */
		if (a->atttypid == INT8OID && a->atthasdef && strcmp(NameStr(a->attname), CQ_NODE_COLUMN) == 0)
			continue;
		if (strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN) == 0 && cq_stamp_type_ok(a->atttypid))
			return *later != NULL ? a->attnum : InvalidAttrNumber;
		*later = NameStr(a->attname);
	}
	return InvalidAttrNumber;
}

/*
 * stamp_value_given
 *	  Is expr, which an INSERT of query q assigns to cq_xid, a value the
 *	  writer wrote into the statement: a constant other than NULL or a
 *	  parameter, in VALUES or in the select list of INSERT ... SELECT
 *	  (through casts)?  Not DEFAULT, NULL (it meant NULL for the next
 *	  column, which gets NULL: nothing is lost) or a value read from a
 *	  table (INSERT ... SELECT * from another source copies its stamps,
 *	  which the trigger replaces, as documented).  Any other expression
 *	  counts as given.
 */
static bool
stamp_value_given(Node *expr, Query *q)
{
	for (;;)
	{
		if (expr == NULL)
			return false;
		if (IsA(expr, RelabelType))
			expr = (Node *) ((RelabelType *) expr)->arg;
		else if (IsA(expr, CoerceViaIO))
			expr = (Node *) ((CoerceViaIO *) expr)->arg;
		else if (IsA(expr, CoerceToDomain))
			expr = (Node *) ((CoerceToDomain *) expr)->arg;
		else if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcformat != COERCE_EXPLICIT_CALL &&
				 list_length(((FuncExpr *) expr)->args) == 1)
			expr = linitial(((FuncExpr *) expr)->args);
		else
			break;
	}
	if (IsA(expr, SetToDefault))
		return false;
	if (IsA(expr, Const))
		return !((Const *) expr)->constisnull;
	if (IsA(expr, Var))
	{
		Var		   *var = (Var *) expr;
		RangeTblEntry *rte;
		ListCell   *lc;

		if (var->varlevelsup != 0 || var->varno < 1 || var->varno > list_length(q->rtable))
			return false;
		rte = rt_fetch(var->varno, q->rtable);
		if (rte->rtekind == RTE_VALUES)
		{
			foreach(lc, rte->values_lists)
				if (stamp_value_given(list_nth((List *) lfirst(lc), var->varattno - 1), q))
					return true;
			return false;
		}
		if (rte->rtekind == RTE_SUBQUERY && rte->subquery->setOperations == NULL)
		{
			TargetEntry *tle = get_tle_by_resno(rte->subquery->targetList, var->varattno);

			return tle != NULL && stamp_value_given((Node *) tle->expr, rte->subquery);
		}
		return false;
	}
	return true;
}

/*
 * check_insert_stamp
 *	  Refuse INSERT q into rel when it gives cq_xid a value (see above) and
 *	  the table has a column after cq_xid.
 */
static void
check_insert_stamp(Relation rel, Query *q)
{
	const char *later;
	AttrNumber	att;
	ListCell   *lc;

	if (rel->trigdesc == NULL || !rel->trigdesc->trig_insert_before_row)
		return;
	att = stamp_column_not_last(rel, &later);
	if (att == InvalidAttrNumber || !stamp_fires_on_insert(rel))
		return;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resno == att && !tle->resjunk && stamp_value_given((Node *) tle->expr, q))
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 errmsg("cannot insert a non-DEFAULT value into column \"%s\" of table \"%s\"",
							CQ_TRACKING_COLUMN, RelationGetRelationName(rel)),
					 errdetail("pg_cq stamps each row with the id of the transaction that inserted it. Column \"%s\" was added after \"%s\", so a value given to \"%s\" was likely meant for \"%s\" and would be lost.",
							   later, CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN, later),
					 errhint("Name the columns in the INSERT and leave \"%s\" out.", CQ_TRACKING_COLUMN)));
	}
}

/*
 * tracking_post_parse_analyze
 *	  post_parse_analyze_hook: check_insert_stamp for an INSERT, and for
 *	  INSERTs in its WITH (their tables are locked by the analysis).
 */
static void
tracking_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	ListCell   *lc;

	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	if (query->commandType == CMD_INSERT && pstate->p_target_relation != NULL)
		check_insert_stamp(pstate->p_target_relation, query);
	if (!query->hasModifyingCTE)
		return;
	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);
		Query	   *sub = (Query *) cte->ctequery;

		if (IsA(sub, Query) && sub->commandType == CMD_INSERT && sub->resultRelation > 0)
		{
			/* (an error releases the reference with the transaction) */
			Relation	rel = relation_open(rt_fetch(sub->resultRelation, sub->rtable)->relid, NoLock);

			check_insert_stamp(rel, sub);
			relation_close(rel, NoLock);
		}
	}
}

/*
 * cq_insert_check_init
 *	  Install the parse analysis hook (from _PG_init).
 */
void
cq_insert_check_init(void)
{
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = tracking_post_parse_analyze;
}
