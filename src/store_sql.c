/*-------------------------------------------------------------------------
 *
 * store_sql.c
 *	  The statements of a batch on the shared-memory state store (issue
 *	  15): d in the state row's layout (and, for batch 0 of an update
 *	  query, with each group's target row: store_load.c), the merge
 *	  statement over the pairs, the target statements over m and x, the
 *	  complete mode's reload.  Built once per plan (plan.c); run by
 *	  store_fold.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "store_sql.h"
#include "store_private.h"
#include "sql_builder.h"
#include "aggregates.h"
#include "state.h"
#include "sink.h"
#include "delta.h"
#include "inval.h"
#include "deltagg.h"
#include "delta_scan.h"

/*
 * load_column
 *	  A column of the state row (or an event-time statistic) through the
 *	  layers of the load statement: s.<name> AS _s_<name> in f, then
 *	  f._s_<name> in its result.
 */
static void
load_column(StringInfo scols, StringInfo fcols, const char *name)
{
	char	   *alias = (char *) quote_identifier(psprintf("_s_%s", name));

	appendStringInfo(scols, ", s.%s AS %s", quote_identifier(name), alias);
	appendStringInfo(fcols, "%sf.%s", fcols->len ? ", " : "", alias);
}

/*
 * build_load_sql
 *	  Batch 0's load statements (store_load.c): d's rows as the store
 *	  takes them (the state row in s, its columns acols, with the
 *	  event-time statistics), then each group's target row as
 *	  sink_history's INSERT computes it from the state row (the final
 *	  values f, the outputs over f, HAVING as a boolean): the result is
 *	  fcols, the outputs, HAVING.  Also load_new, a later batch's target
 *	  rows of new groups from m, when the state has the key hash (has_h).
 */
static void
build_load_sql(CqAnalysis *an, CqQuery *q, Oid viewid, CqStoreSql *sql, const char *acols,
			   const char *scols, const char *fcols, bool has_h)
{
	char	   *having = cq_sink_having_sql(an, viewid);
	StringInfoData buf;
	ListCell   *lc;
	int			k = 0;

	for (int h = 0; h < 2; h++)
	{
		if (h == 1 && !cq_delta_history_all_ok(an))
		{
			sql->load_history_all = NULL;
			break;
		}
		initStringInfo(&buf);
		appendStringInfoString(&buf, "WITH ");
		if (h == 1)
			cq_state_delta_cte_all(&buf, an);
		else
			cq_state_delta_cte(&buf, an, true);
		appendStringInfo(&buf, " SELECT %s, %s", fcols, cq_sink_output_list(an, viewid));
		if (having)
			appendStringInfo(&buf, ", ((%s) IS TRUE)", having);
		appendStringInfo(&buf, " FROM (SELECT %s%s FROM (SELECT %s FROM d) s) f",
						 cq_state_final_select_list(an), scols, acols);
		if (h == 1)
			sql->load_history_all = buf.data;
		else
			sql->load_history = buf.data;
	}
	sql->target = q->target;
	sql->having = having != NULL;
	sql->nout = list_length(an->outputs);
	sql->out_names = palloc(sizeof(char *) * sql->nout);
	foreach(lc, an->outputs)
		sql->out_names[k++] = pstrdup(((TargetEntry *) lfirst(lc))->resname);

	/*
	 * A later batch whose groups are all new, written from C
	 * (cq_target_load_new): over m, each group's key hash h, then its
	 * target row as sink_new's INSERT computes it; and which output gives
	 * each grouping key, to check that the target's index is on them.
	 */
	sql->load_new = NULL;
	sql->nkeys = list_length(an->group_exprs);
	sql->key_outs = palloc(sizeof(int) * Max(sql->nkeys, 1));
	for (int g = 0; g < sql->nkeys; g++)
	{
		ListCell   *lk;

		sql->key_outs[g] = -1;
		foreach(lk, an->output_key)
			if (lfirst_int(lk) == g)
			{
				sql->key_outs[g] = foreach_current_index(lk);
				break;
			}
	}
	sql->out_key = palloc(sizeof(bool) * Max(sql->nout, 1));
	k = 0;
	foreach(lc, an->output_key)
		sql->out_key[k++] = lfirst_int(lc) >= 0;
	sql->load_changed = NULL;
	if (has_h)
	{
		StringInfoData hs;
		StringInfoData hf;
		char	   *tail = psprintf("%s%s%s%s FROM (SELECT %s", cq_sink_output_list(an, viewid),
									having ? ", ((" : "", having ? having : "",
									having ? ") IS TRUE)" : "", cq_state_final_select_list(an));

		initStringInfo(&hs);
		initStringInfo(&hf);
		load_column(&hs, &hf, CQ_KEY_HASH_COLUMN);
		sql->load_new = psprintf("SELECT %s, %s%s FROM m s) f /* new groups, written from C */",
								 hf.data, tail, hs.data);

		/*
		 * any later batch's changed groups (cq_target_update): over the m
		 * that has the flags, with each group's _ins; the state table's
		 * OID makes the text, and so the saved plan, this query's own
		 */
		load_column(&hs, &hf, "_ins");
		sql->load_changed = psprintf("SELECT %s, %s%s FROM m s) f /* changed groups of state %u, written from C */",
									 hf.data, tail, hs.data, q->state_table);
	}
}

/*
 * cq_store_build_sql
 *	  The statements of a batch on the store (see CqStoreSql).
 */
void
cq_store_build_sql(CqAnalysis *an, CqQuery *q, Oid viewid, CqStoreSql *sql)
{
	Relation	rel = table_open(q->state_table, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	StringInfoData cols;
	StringInfoData merges;
	StringInfoData acols;
	StringInfoData scols;
	StringInfoData fcols;
	char	   *target = cq_sql_relname_str(q->target);
	bool		has_o;
	bool		has_o1;
	bool		has_h = false;	/* the state has the key hash h */

	/* d in the state row's layout, partials in the state columns' types */
	initStringInfo(&cols);
	initStringInfo(&merges);
	initStringInfo(&acols);
	initStringInfo(&scols);
	initStringInfo(&fcols);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		char	   *qname = (char *) quote_identifier(name);
		int			len = cols.len;

		if (name[0] == 'p' && name[1] >= '1' && name[1] <= '9')
		{
			int			p = atoi(name + 1);
			CqPart	   *part = list_nth(an->parts, p - 1);
			char	   *type = format_type_with_typemod(att->atttypid, att->atttypmod);

			appendStringInfo(&cols, "%sCAST(d.%s AS %s)", i ? ", " : "", qname, type);
			appendStringInfo(&merges, ", CAST((");
			appendStringInfo(&merges, part->merge, psprintf("s.%s", qname), psprintf("s._np%d", p));
			appendStringInfo(&merges, ") AS %s)", type);
		}
		else if (strcmp(name, "n") == 0)
		{
			appendStringInfo(&cols, "%sd.n", i ? ", " : "");
			appendStringInfoString(&merges, ", s.n + s._nn");
		}
		else if (strcmp(name, CQ_KEY_HASH_COLUMN) == 0)
		{
			has_h = true;
			/* computed in C (cq_store_set_h): the planner drops d's hash_record() */
			appendStringInfo(&cols, "%sNULL::pg_catalog.int4", i ? ", " : "");
			appendStringInfo(&merges, ", s.%s", qname);
		}
		else
		{
			appendStringInfo(&cols, "%sd.%s", i ? ", " : "", qname);
			appendStringInfo(&merges, ", s.%s", qname);
		}
		/* the load statement's layers: the column named, then passed on */
		appendStringInfo(&acols, "%s%s AS %s", i ? ", " : "", cols.data + len + (i ? 2 : 0), qname);
		load_column(&scols, &fcols, name);
	}
	cq_deltagg_build(an, desc, sql);
	sql->deltascan = sql->deltagg ? cq_delta_scan_build(an, sql->deltagg, q->owner) : NULL;
	table_close(rel, AccessShareLock);

	/* the merge of each part, for the merge in C (the cached analysis has no parts) */
	sql->merge_kinds = palloc0(list_length(an->parts) + 1);
	for (int p = 0; p < list_length(an->parts); p++)
		sql->merge_kinds[p] = 'A' + (char) cq_agg_part_merge_kind(list_nth(an->parts, p));

	/* one scan: d's rows give the row count (n) and event-time statistics */
	sql->counts = an->single_scan;
	sql->et_stats = an->single_scan && an->et_attno != InvalidAttrNumber;
	if (sql->et_stats)
	{
		appendStringInfoString(&cols, ", d.et_min, d.et_max, d.et_sum, d.et_n");
		appendStringInfoString(&acols, ", d.et_min, d.et_max, d.et_sum, d.et_n");
		load_column(&scols, &fcols, "et_min");
		load_column(&scols, &fcols, "et_max");
		load_column(&scols, &fcols, "et_sum");
		load_column(&scols, &fcols, "et_n");
	}
	for (int h = 0; h < 2; h++)
	{
		initStringInfo(&buf);
		appendStringInfoString(&buf, "WITH ");
		cq_state_delta_cte_fold(&buf, an, h == 1, false);
		appendStringInfo(&buf, " SELECT %s FROM d", cols.data);
		if (h == 1)
			sql->delta_history = buf.data;
		else
			sql->delta = buf.data;
	}
	sql->delta_history_all = NULL;
	sql->source = an->source_relid;
	if (cq_delta_history_all_ok(an))
	{
		initStringInfo(&buf);
		appendStringInfoString(&buf, "WITH ");
		cq_state_delta_cte_fold(&buf, an, true, true);
		appendStringInfo(&buf, " SELECT %s FROM d", cols.data);
		sql->delta_history_all = buf.data;
	}
	/*
	 * Saved plans are found by their text (cq_spi_plan), and a plan over an
	 * ephemeral relation is never invalidated: the state table's OID makes
	 * the text of each query's merge its own, so that a query whose state
	 * columns have other types never runs another query's plan.
	 */
	sql->merge = psprintf("SELECT s._k%s FROM %s s /* state %u */", merges.data, STORE_ENR_PAIRS,
						  q->state_table);

	sql->sink = sql->sink_history = sql->sink_existing = sql->sink_new = NULL;
	sql->load_history = sql->load_history_all = sql->load_new = sql->load_changed = NULL;
	sql->key_outs = NULL;
	sql->out_key = NULL;
	sql->nkeys = 0;
	sql->target = InvalidOid;
	sql->out_names = NULL;
	sql->nout = 0;
	sql->having = false;
	sql->sink_history_plain = false;
	if (q->opts.mode != CQ_MODE_COMPLETE)
	{
		for (int h = 0; h < 2; h++)
		{
			StringInfoData ctes;

			initStringInfo(&ctes);
			cq_sink_write_ctes_sized(&ctes, an, q->opts.mode, viewid, target, h == 1, true,
									 &has_o, &has_o1);
			if (strncmp(ctes.data, ", ", 2) != 0)
				elog(ERROR, "pg_cq: unexpected target statement");
			initStringInfo(&buf);
			appendStringInfo(&buf, "WITH %s SELECT %s", ctes.data + 2,
							 has_o1 ? "(SELECT count(*) FROM o) + (SELECT count(*) FROM o1)" :
							 has_o ? "(SELECT count(*) FROM o)" : "0::int8");
			if (h == 1)
				sql->sink_history = buf.data;
			else
				sql->sink = buf.data;
		}
		/*
		 * a batch whose changed groups all exist: the target statement
		 * without o1 (its check of the target's columns reads target and
		 * out_names, set with sink_history_plain below)
		 */
		if (q->opts.mode == CQ_MODE_UPDATE && an->group_exprs != NIL)
		{
			StringInfoData ctes;

			initStringInfo(&ctes);
			cq_sink_existing_ctes(&ctes, an, viewid, target);
			sql->sink_existing = psprintf("WITH %s SELECT (SELECT count(*) FROM o)", ctes.data + 2);
		}
		/*
		 * Batch 0 over history in update mode writes every group to the
		 * empty target (sink.c's history CTEs): a plain INSERT, whose row
		 * count is the output, without the RETURNING rows of a CTE
		 */
		sql->sink_history_plain = q->opts.mode == CQ_MODE_UPDATE && an->group_exprs != NIL;
		if (sql->sink_history_plain)
		{
			sql->sink_history = psprintf("INSERT INTO %s (%s) SELECT %s FROM (SELECT %s FROM m s) f%s",
										 target, cq_sink_target_columns(an, "", false, false),
										 cq_sink_output_list(an, viewid), cq_state_final_select_list(an),
										 cq_sink_having_where(an, viewid));
			/*
			 * a later batch whose changed groups are all new to the state
			 * (every _ins true, as when a time-series query's new rows
			 * open new minutes): the same INSERT, o1 alone, over an m
			 * that has the flags (its own text: its own saved plan)
			 */
			sql->sink_new = psprintf("%s /* new groups */", sql->sink_history);
			build_load_sql(an, q, viewid, sql, acols.data, scols.data, fcols.data, has_h);
			/* which of sink_existing and sink_new may run: decided here, not per batch */
			cq_sink_target_facts(sql->target, sql->out_names, sql->nout, AccessShareLock,
								 &sql->target_has_columns, &sql->update_triggers);
		}
	}
	sql->complete = psprintf("INSERT INTO %s (%s) SELECT %s FROM (SELECT %s FROM %s s) f%s",
							 target, cq_sink_target_columns(an, "", false, false),
							 cq_sink_output_list(an, viewid), cq_state_final_select_list(an),
							 STORE_ENR_ALL, cq_sink_having_where(an, viewid));
}

/*
 * cq_store_sql_target_facts
 *	  sql's facts about its target (cq_sink_target_facts) as the target is
 *	  now: the plan's, when no relation changed since the batch got it
 *	  (cq_relcache_mark), else read again.  Locks the target as the
 *	  statement will, which reads the invalidations that came meanwhile:
 *	  a trigger created or a column renamed before this batch locked the
 *	  target is seen here as by the statement.
 */
void
cq_store_sql_target_facts(const CqStoreSql *sql, bool *has_columns, bool *update_triggers)
{
	LockRelationOid(sql->target, RowExclusiveLock);
	if (!cq_relcache_changed())
	{
		*has_columns = sql->target_has_columns;
		*update_triggers = sql->update_triggers;
	}
	else
		cq_sink_target_facts(sql->target, sql->out_names, sql->nout, RowExclusiveLock,
							 has_columns, update_triggers);
}
