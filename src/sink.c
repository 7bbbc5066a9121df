/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Writing the target: its DDL and key index, the outputs over the final
 *	  view, and the append/update writes of a batch (complete mode reloads
 *	  the target from the state: plan.c).
 *
 * Outputs are the user's select list rewritten as trees (aggregate ->
 * column of the final view cq_state.f_<id>) and deparsed against that view
 * with search_path pinned to pg_catalog.  Everything here only builds SQL
 * text; nothing runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "nodes/readfuncs.h"

#include "sink.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "aggregates.h"
#include "analyze.h"
#include "delta.h"
#include "state.h"

/* Mutator context: rewrite outputs over the final view. */
typedef struct OutputCtx
{
	CqAnalysis *an;
	Oid			viewid;
} OutputCtx;

/*
 * cq_sink_target_key_columns
 *	  The quoted target column of each grouping key, in grouping order (the
 *	  first output that is that key).  Update mode selects every key.
 */
List *
cq_sink_target_key_columns(CqAnalysis *an)
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
 * cq_sink_target_key_attnums
 *	  The attribute number in rel (the target) of each grouping key's
 *	  column, in grouping order (the first output that is that key): the
 *	  columns of the index cq_sink_target_key_index_sql makes for a hashed
 *	  state.
 */
List *
cq_sink_target_key_attnums(CqAnalysis *an, Relation rel)
{
	List	   *keys = NIL;

	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		ListCell   *lc,
				   *lk;

		forboth(lc, an->outputs, lk, an->output_key)
		{
			if (lfirst_int(lk) == g)
			{
				keys = lappend_int(keys, attnameAttNum(rel, ((TargetEntry *) lfirst(lc))->resname, false));
				break;
			}
		}
	}
	return keys;
}

/*
 * cq_sink_is_key_hash_index
 *	  Is this index a btree on the one expression hash_record(ROW(c1, ...,
 *	  cn)) over exactly the target columns keys, in that order (the index
 *	  cq_sink_target_key_index_sql makes for a hashed state)?
 */
bool
cq_sink_is_key_hash_index(Relation idx, List *keys)
{
	List	   *exprs = RelationGetIndexExpressions(idx);
	FuncExpr   *fe;
	RowExpr    *row;
	ListCell   *lc,
			   *lk;

	if (idx->rd_index->indnkeyatts != 1 || list_length(exprs) != 1 ||
		RelationGetIndexPredicate(idx) != NIL || idx->rd_rel->relam != BTREE_AM_OID)
		return false;
	fe = linitial(exprs);
	if (!IsA(fe, FuncExpr) || fe->funcid != F_HASH_RECORD || list_length(fe->args) != 1)
		return false;
	row = linitial(fe->args);
	if (!IsA(row, RowExpr) || list_length(row->args) != list_length(keys))
		return false;
	forboth(lc, row->args, lk, keys)
	{
		Var		   *v = lfirst(lc);

		if (!IsA(v, Var) || v->varattno != lfirst_int(lk))
			return false;
	}
	return true;
}

/*
 * cq_sink_target_key_index_sql
 *	  DDL of the index an update-mode target is probed by.  With a hashed
 *	  state (see cq_state_table_sql), an index on the hash of the key
 *	  columns: a key of any size fits in it.  Otherwise a unique index on
 *	  the keys that treats NULL as a value, for ON CONFLICT.
 */
char *
cq_sink_target_key_index_sql(CqAnalysis *an, const char *qualname, bool hashed)
{
	if (hashed)
		return psprintf("CREATE INDEX ON %s ((%s))", qualname,
						cq_state_key_hash_sql(an, "", cq_sink_target_key_columns(an)));
	/* every output that is a key: the ON CONFLICT clause names them all */
	return psprintf("CREATE UNIQUE INDEX ON %s (%s) NULLS NOT DISTINCT", qualname,
					cq_sink_target_columns(an, "", true, false));
}

/*
 * cq_sink_target_table_sql
 *	  DDL of a target table with the query's output columns.
 */
char *
cq_sink_target_table_sql(CqAnalysis *an, const char *qualname)
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
				return (Node *) makeVar(1, cq_state_ngroup_cols(an) + i + 1, agg->aggtype, -1,
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
 * cq_sink_output_list_part
 *	  The outputs (all, or only the keys or only the others) as SQL over the
 *	  final view aliased f (columns g<i>, a<i>).
 */
char *
cq_sink_output_list_part(CqAnalysis *an, Oid viewid, bool keys_only, bool nonkeys_only)
{
	StringInfoData buf;
	OutputCtx	ctx = {an, viewid};
	List	   *dpcontext = deparse_context_for("f", viewid);
	ListCell   *lc,
			   *lk;
	bool		first = true;
	int			nest = cq_security_deparse_begin();

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
						 cq_sql_expression(e, dpcontext));
		first = false;
	}
	cq_security_deparse_end(nest);
	return buf.data;
}

/*
 * cq_sink_output_list
 *	  Every output as SQL over the final view aliased f.
 */
char *
cq_sink_output_list(CqAnalysis *an, Oid viewid)
{
	return cq_sink_output_list_part(an, viewid, false, false);
}

/*
 * cq_sink_having_sql
 *	  The query's HAVING condition as SQL over the final view aliased f
 *	  (rewritten as the outputs are), or NULL without HAVING.  A group is
 *	  in the result only where it is true (NULL is not).
 */
char *
cq_sink_having_sql(CqAnalysis *an, Oid viewid)
{
	OutputCtx	ctx = {an, viewid};
	List	   *dpcontext;
	Node	   *e;
	char	   *sql;
	int			nest;

	if (an->query->havingQual == NULL)
		return NULL;
	dpcontext = deparse_context_for("f", viewid);
	nest = cq_security_deparse_begin();
	e = output_mutator((Node *) copyObject(an->query->havingQual), &ctx);
	sql = cq_sql_expression(e, dpcontext);
	cq_security_deparse_end(nest);
	return sql;
}

/*
 * having_and
 *	  " AND (<having>)", or "" without HAVING: appended to a condition on f.
 */
static char *
having_and(CqAnalysis *an, Oid viewid)
{
	char	   *having = cq_sink_having_sql(an, viewid);

	return having ? psprintf(" AND (%s)", having) : "";
}

/*
 * cq_sink_having_where
 *	  " WHERE (<having>)", or "" without HAVING: the groups of f that are
 *	  in the result.
 */
char *
cq_sink_having_where(CqAnalysis *an, Oid viewid)
{
	char	   *having = cq_sink_having_sql(an, viewid);

	return having ? psprintf(" WHERE (%s)", having) : "";
}

/*
 * cq_sink_target_columns
 *	  "(c1, c2, ...)" with the output names, quoted.
 */
char *
cq_sink_target_columns(CqAnalysis *an, const char *prefix, bool keys_only, bool nonkeys_only)
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
 * cq_sink_stateless_sql
 *	  The whole statement of a batch of a query without aggregation: its
 *	  new rows are appended to the target.  Returns the same metrics row as
 *	  an aggregation's statement.
 */
char *
cq_sink_stateless_sql(CqAnalysis *an, const char *target, bool history)
{
	return psprintf("WITH o AS (INSERT INTO %s (%s) %s RETURNING 1) "
					"SELECT 0::int8, 0::int8, 0::int8, 0::int8, count(*), count(*), "
					"NULL::timestamptz, NULL::timestamptz, NULL::timestamptz FROM o",
					target, cq_sink_target_columns(an, "", false, false),
					cq_delta_inner_sql(an, history));
}

/*
 * having_delete_cte
 *	  Update mode with HAVING: ", od AS (...)" deleting from the target
 *	  the changed groups that no longer satisfy HAVING (false or NULL),
 *	  matched by key as match says (target alias t, f the changed groups).
 *	  Groups the batch did not change are not touched.
 */
static void
having_delete_cte(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target,
				  const char *match)
{
	char	   *having = cq_sink_having_sql(an, viewid);

	if (having == NULL)
		return;
	appendStringInfo(buf, ", od AS (DELETE FROM %s t USING f WHERE NOT f._ins "
					 "AND (%s) IS NOT TRUE AND %s)",
					 target, having, match);
}

/*
 * cq_sink_having_delete_cte
 *	  having_delete_cte for the MERGE path (merge.c): the same deletion of
 *	  changed groups that left HAVING, before its MERGE.
 */
void
cq_sink_having_delete_cte(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target,
						  const char *match)
{
	having_delete_cte(buf, an, viewid, target, match);
}

/*
 * existing_groups_ctes
 *	  Update mode after batch 0, with grouping keys: the CTEs o1 (groups new
 *	  to the state) and o (the others).  sized: m is an ephemeral relation
 *	  whose plan is made for its row count (cq_spi_plan_rows), not a CTE
 *	  estimated from the source's statistics.  Without with_o1, no o1: for
 *	  an m known to hold no new group (cq_sink_existing_ctes).
 */
static void
existing_groups_ctes(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target,
					 const char *all_cols, const char *nonkeys, bool sized, bool with_o1)
{
	/*
	 * Groups new to the state are new to the target: a plain
	 * INSERT, much cheaper than ON CONFLICT's speculative
	 * insertion.  The others are updated where their row
	 * changed and inserted where it is missing (a row deleted
	 * by hand is written again).  A row "changed" when its
	 * binary image did (record_image_ne, the function of the
	 * *<> operator, as REFRESH MATERIALIZED VIEW
	 * CONCURRENTLY compares rows): equal values that print
	 * differently, such as numeric 1.0 and 1.00, are
	 * rewritten so that the target shows what the query
	 * shows.  A function call, not the operator between two
	 * rows cast to record: a deparsed statement (Citus
	 * re-plans one by deparsing it) loses those casts, and
	 * the parser then compares the rows column by column,
	 * with a *<> that no column type has.
	 */
	char	   *hav = having_and(an, viewid);

	if (with_o1)
		appendStringInfo(buf, ", o1 AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE f._ins%s RETURNING 1)",
						 target, all_cols, cq_sink_output_list(an, viewid), hav);
	if (an->hash_keys)
	{
		/*
		 * Found through the target's index on the hash of its
		 * keys: rows that changed are updated; the groups not
		 * updated are looked up once more and inserted if their
		 * row is missing (the statement's snapshot still shows
		 * the rows ou updates, so the second probe alone is
		 * exact).  When m's size is known to the planner, an
		 * anti-join with ou (by the state row _sid) first spares
		 * the updated groups that probe (a tenth of a small
		 * batch's target statement).  Not otherwise: estimated
		 * from the source's statistics, the new rows of a batch
		 * are one row as soon as their transaction ids pass the
		 * histogram, and the planner then rescans ou for every
		 * row of f (a nested-loop anti-join): a 5,000-group batch
		 * took 0.7 s, a 50,000-group one minutes.  (NOT IN over
		 * ou turns quadratic when ou is too large to hash.)
		 */
		List	   *tkeys = cq_sink_target_key_columns(an);
		StringInfoData match;

		initStringInfo(&match);
		appendStringInfo(&match, "%s OPERATOR(pg_catalog.=) f.%s AND ",
						 cq_state_key_hash_sql(an, "t.", tkeys), CQ_KEY_HASH_COLUMN);
		cq_state_append_keys_equal(&match, an, "t.", tkeys, "f.", true);
		if (nonkeys[0] != '\0')
		{
			appendStringInfo(buf, ", ou AS (UPDATE %s t SET (%s) = ROW(%s) FROM f "
							 "WHERE NOT f._ins%s AND %s AND "
							 "pg_catalog.record_image_ne(ROW(%s), ROW(%s)) "
							 "RETURNING f._sid)",
							 target, nonkeys, cq_sink_output_list_part(an, viewid, false, true),
							 hav, match.data, cq_sink_target_columns(an, "t.", false, true),
							 cq_sink_output_list_part(an, viewid, false, true));
			appendStringInfo(buf, ", oi AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE NOT f._ins%s "
							 "%sAND NOT EXISTS (SELECT FROM %s t WHERE %s) RETURNING 1)",
							 target, all_cols, cq_sink_output_list(an, viewid), hav,
							 sized ? "AND NOT EXISTS (SELECT FROM ou WHERE ou._sid OPERATOR(pg_catalog.=) f._sid) " : "",
							 target, match.data);
			appendStringInfoString(buf, ", o AS (SELECT 1 FROM ou UNION ALL SELECT 1 FROM oi)");
		}
		else
			appendStringInfo(buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f WHERE NOT f._ins%s "
							 "AND NOT EXISTS (SELECT FROM %s t WHERE %s) RETURNING 1)",
							 target, all_cols, cq_sink_output_list(an, viewid), hav, target, match.data);
		having_delete_cte(buf, an, viewid, target, match.data);
	}
	else
	{
		/* upserted through the target's unique index on the keys */
		appendStringInfo(buf, ", o AS (INSERT INTO %s AS t (%s) SELECT %s FROM f WHERE NOT f._ins%s ON CONFLICT (%s) ",
						 target, all_cols, cq_sink_output_list(an, viewid), hav,
						 cq_sink_target_columns(an, "", true, false));
		if (nonkeys[0] == '\0')
			appendStringInfoString(buf, "DO NOTHING");
		else
			appendStringInfo(buf, "DO UPDATE SET (%s) = ROW(%s) WHERE pg_catalog.record_image_ne(ROW(%s), ROW(%s))",
							 nonkeys, cq_sink_target_columns(an, "excluded.", false, true),
							 cq_sink_target_columns(an, "t.", false, true),
							 cq_sink_target_columns(an, "excluded.", false, true));
		appendStringInfoString(buf, " RETURNING 1)");
		{
			StringInfoData match;

			initStringInfo(&match);
			cq_state_append_keys_equal(&match, an, "t.", cq_sink_target_key_columns(an), "f.", true);
			having_delete_cte(buf, an, viewid, target, match.data);
		}
	}
}

/*
 * update_ctes
 *	  Update mode: the CTEs f (final values of the changed groups) and o
 *	  (and o1) that write them to the target.
 */
static void
update_ctes(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target, bool history,
			bool sized, bool with_o1)
{
	char	   *all_cols = cq_sink_target_columns(an, "", false, false);
	char	   *nonkeys = cq_sink_target_columns(an, "", false, true);

	appendStringInfo(buf, ", f AS (SELECT %s, s._ins%s FROM m s)", cq_state_final_select_list(an),
					 an->hash_keys && !history ? psprintf(", s.%s, s._sid", CQ_KEY_HASH_COLUMN) : "");
	if (an->group_exprs == NIL)
	{
		/* one result row: replace it */
		appendStringInfo(buf, ", y AS (DELETE FROM %s)", target);
		appendStringInfo(buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f%s RETURNING 1)",
						 target, all_cols, cq_sink_output_list(an, viewid),
						 cq_sink_having_where(an, viewid));
	}
	else if (history)
	{
		/*
		 * Batch 0: state and target are empty, every group is
		 * new.  (The statements for existing groups would find
		 * nothing, but their estimated cost over a large history
		 * made the planner JIT-compile the batch: a second.)
		 */
		appendStringInfo(buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f%s RETURNING 1)",
						 target, all_cols, cq_sink_output_list(an, viewid),
						 cq_sink_having_where(an, viewid));
	}
	else
		existing_groups_ctes(buf, an, viewid, target, all_cols, nonkeys, sized, with_o1);
}

/*
 * cq_sink_write_ctes
 *	  Append to a batch statement (after the state CTEs d, m and x) the
 *	  CTEs that write the target in the query's output mode.  *has_o and
 *	  *has_o1 say which output CTEs exist, for the metrics.  Complete mode
 *	  writes nothing here: the target is reloaded from the state after the
 *	  statement (CqPlan.complete_sql).
 */
void
cq_sink_write_ctes(StringInfo buf, CqAnalysis *an, CqOutputMode mode, Oid viewid,
				   const char *target, bool history, bool *has_o, bool *has_o1)
{
	cq_sink_write_ctes_sized(buf, an, mode, viewid, target, history, false, has_o, has_o1);
}

/*
 * cq_sink_write_ctes_sized
 *	  cq_sink_write_ctes, for a statement that reads m and x as ephemeral
 *	  relations planned for their size (sized: the shared-memory store).
 */
void
cq_sink_write_ctes_sized(StringInfo buf, CqAnalysis *an, CqOutputMode mode, Oid viewid,
						 const char *target, bool history, bool sized,
						 bool *has_o, bool *has_o1)
{
	*has_o = *has_o1 = false;
	switch (mode)
	{
		case CQ_MODE_APPEND:
			/* closed windows, final now, are written once */
			appendStringInfo(buf, ", f AS (SELECT %s FROM x s)", cq_state_final_select_list(an));
			appendStringInfo(buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM f%s RETURNING 1)",
							 target, cq_sink_target_columns(an, "", false, false),
							 cq_sink_output_list(an, viewid), cq_sink_having_where(an, viewid));
			*has_o = true;
			break;
		case CQ_MODE_UPDATE:
			update_ctes(buf, an, viewid, target, history, sized, true);
			*has_o = true;
			*has_o1 = an->group_exprs != NIL && !history;
			break;
		case CQ_MODE_COMPLETE:
			break;
	}
}

/*
 * cq_sink_existing_ctes
 *	  Update mode with grouping keys, after batch 0, on the store: the CTEs
 *	  of cq_sink_write_ctes_sized without o1, for a batch whose m holds no
 *	  group new to the state (every _ins false: o1 would insert nothing).
 *	  A warm batch of a small query rarely makes a new group, and o1's
 *	  executor start (a ModifyTable node with the target's indexes opened,
 *	  its scan of f and its count) was about a fifth of its target
 *	  statement (session 33, bench/batch_cg.sh).
 */
void
cq_sink_existing_ctes(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target)
{
	Assert(an->group_exprs != NIL);
	update_ctes(buf, an, viewid, target, false, true, false);
}

/*
 * cq_sink_target_facts
 *	  What a batch on the store asks of its update-mode target: has it
 *	  every column of names (n of them), and does an UPDATE of it fire a
 *	  statement-level trigger (BEFORE or AFTER)?  The statement without o1
 *	  (cq_sink_existing_ctes) runs only over a target that has the columns:
 *	  over a column renamed or dropped, its first reference to it is ou's
 *	  WHERE ("column t.n does not exist"), and the full statement's o1 fails
 *	  with the clear error that the query records (column "n" of relation
 *	  "t" does not exist).  The upsert's ou fires the UPDATE statement
 *	  triggers in every batch, even one that updates no row: the INSERT of
 *	  a batch of new groups alone (CqStoreSql.sink_new) runs only where
 *	  none would miss them.  Asked when the plan is built (lockmode
 *	  AccessShareLock, as its fingerprint locks the target; a target gone:
 *	  neither shortcut), and by a batch whose target changed since
 *	  (RowExclusiveLock, the statement's).
 */
void
cq_sink_target_facts(Oid target, char **names, int n, LOCKMODE lockmode, bool *has_columns,
					 bool *update_triggers)
{
	Relation	rel = try_table_open(target, lockmode);
	TriggerDesc *td;

	*has_columns = false;
	*update_triggers = true;
	if (rel == NULL)
		return;
	*has_columns = true;
	for (int i = 0; *has_columns && i < n; i++)
		*has_columns = cq_rel_attnum(rel, names[i]) != InvalidAttrNumber;
	td = rel->trigdesc;
	*update_triggers = td != NULL &&
		(td->trig_update_before_statement || td->trig_update_after_statement ||
		 td->trig_delete_before_statement || td->trig_delete_after_statement);
	table_close(rel, NoLock);
}

/*
 * cq_sink_check_target_types
 *	  The target of an update-mode query (name) with grouping keys: does
 *	  each column a non-key output writes still have the output's type, as
 *	  creation required (api.c, check_target_columns)?  The statements that update its rows
 *	  (the upsert's ou, MERGE) compare the row with the outputs by binary
 *	  image (record_image_ne), which fails on columns of different types
 *	  ("cannot compare dissimilar column types ... at record column 1")
 *	  as soon as an existing group changes, while a batch of new groups
 *	  only wrote; ALTER TABLE ... ALTER COLUMN ... TYPE (a wider type, a
 *	  domain) of such a column so made the query fail with that error now
 *	  and then.  It fails every batch now, with the error creation gives
 *	  and a hint.  The key columns are compared by their equality operator
 *	  and hash, which may hold across types (int4 to int8): left alone.
 *	  Asked when the plan is built (its fingerprint holds the target's
 *	  column types, so a change rebuilds it); a target gone or a column
 *	  missing are the statement's own errors.
 */
void
cq_sink_check_target_types(CqAnalysis *an, CqOutputMode mode, Oid target, const char *name)
{
	Relation	rel;
	ListCell   *lc,
			   *lk;

	if (mode != CQ_MODE_UPDATE || !an->is_aggregate || an->group_exprs == NIL ||
		an->is_dedup || an->session || an->join != NULL)
		return;
	rel = try_table_open(target, AccessShareLock);
	if (rel == NULL)
		return;
	forboth(lc, an->outputs, lk, an->output_key)
	{
		TargetEntry *tle = lfirst(lc);
		AttrNumber	att = lfirst_int(lk) >= 0 ? InvalidAttrNumber : cq_rel_attnum(rel, tle->resname);
		Oid			type = exprType((Node *) tle->expr);
		Oid			has;

		if (att == InvalidAttrNumber)
			continue;
		has = TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid;
		if (has != type)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target table \"%s\" does not match continuous query \"%s\"",
							RelationGetRelationName(rel), name),
					 errdetail("Column \"%s\" has type %s, but the query produces %s.",
							   tle->resname, format_type_be(has), format_type_be(type)),
					 errhint("Change the column back to type %s, or drop the continuous query and create it again.",
							 format_type_be(type))));
	}
	/* kept, as the plan's fingerprint keeps it: not taken again during the build */
	table_close(rel, NoLock);
}

/*
 * cq_sink_update_rewrite_sql
 *	  Update mode: one statement that makes the target agree with every
 *	  group of the state, as if each had changed in a batch: rows that
 *	  satisfy HAVING are written (updated where they differ, inserted where
 *	  missing), the others deleted.  Rows of groups no longer in the state
 *	  (windows evicted by the watermark) are not touched.  For a changed
 *	  HAVING clause (cq.alter_query); an->hash_keys must be set (plan.c).
 */
char *
cq_sink_update_rewrite_sql(CqAnalysis *an, Oid viewid, const char *target, const char *state)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "WITH m AS (SELECT s.*, s.ctid AS _sid, false AS _ins FROM %s s)", state);
	update_ctes(&buf, an, viewid, target, false, false, true);
	appendStringInfoString(&buf, " SELECT count(*) FROM o");
	return buf.data;
}

/*
 * cq_sink_statement_triggers
 *	  Does a write to the query's target fire a statement-level trigger
 *	  (INSERT, UPDATE or DELETE, BEFORE or AFTER)?  PostgreSQL fires those
 *	  even for a statement that writes no row.  The lock is the one the
 *	  batch's statement takes on the target anyway.
 */
bool
cq_sink_statement_triggers(Oid target)
{
	Relation	rel = table_open(target, RowExclusiveLock);
	TriggerDesc *td = rel->trigdesc;
	bool		found = td != NULL &&
		(td->trig_insert_before_statement || td->trig_insert_after_statement ||
		 td->trig_update_before_statement || td->trig_update_after_statement ||
		 td->trig_delete_before_statement || td->trig_delete_after_statement);

	table_close(rel, NoLock);
	return found;
}
