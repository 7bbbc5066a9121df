/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  cq.explain(name), the SQL a batch runs, for psql users (the comment
 *	  on a target that says what feeds it is objects.c's).
 *
 * cq.explain reads the query through cq_api_owned_query (the ownership rule
 * of every cq.* function; catalog reads run in a security.c superuser
 * section) and returns the statement plan.c built for it, as a batch runs
 * it, with the offsets as $n parameters and a header saying what each is.
 * It runs nothing: the SQL is only generated.
 *
 * A query whose state is in the shared-memory store (store.c) runs other
 * statements: d (the partial aggregates of the new rows), the merge of
 * existing groups when it is not done in C, and the target statement over
 * the changed and evicted groups that the batch passes as ephemeral named
 * relations; cq.explain shows them in that order, each ended by ";", with
 * the steps done in C between them, the store's current size and image,
 * and how to make those relations to EXPLAIN the statements outside a batch.
 * Every aggregation's text says where its state is and why
 * (cq.queries.state_path).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/lsyscache.h"

#include "explain.h"
#include "citus.h"
#include "api.h"
#include "catalog.h"
#include "plan.h"
#include "objects.h"
#include "guc.h"
#include "join.h"
#include "security.h"
#include "sql_builder.h"
#include "store_fold.h"
#include "state.h"
#include "store.h"
#include "merge.h"
#include "settings_pin.h"
#include "delta.h"

PG_FUNCTION_INFO_V1(cq_explain);

/*
 * append_state_path
 *	  Where the query keeps its state and why (cq.queries.state_path),
 *	  for a query with state on a catalog that records it.
 */
static void
append_state_path(StringInfo buf, CqQuery *q)
{
	char	   *path = OidIsValid(q->state_table) ? cq_catalog_state_path(q->id) : NULL;

	if (path)
		appendStringInfo(buf, "-- state: %s (cq.queries.state_path)\n", path);
}

/*
 * append_settings
 *	  The role and settings the statements of a batch run with.
 */
static void
append_settings(StringInfo buf, CqQuery *q, const char *what)
{
	appendStringInfo(buf, "-- a batch runs %s as role %s, with search_path = pg_catalog, pg_temp,\n",
					 what, quote_identifier(GetUserNameFromId(q->owner, false)));
	appendStringInfo(buf, "-- TimeZone = '%s'%s and, after batch 0, enable_seqscan, enable_sort and jit off\n",
					 q->timezone ? q->timezone : "UTC",
					 cq_work_mem_kb > 0 ? psprintf(", work_mem = %dkB", cq_work_mem_kb) : "");
	appendStringInfo(buf, "-- %s\n", cq_settings_pin_describe_line(q->settings));
}

/* The offsets, parameters $1 to $4 of the batch statement and of d. */
#define OFFSET_PARAMETERS \
	"--   $1 xid8         lowest transaction id that can be new (bounds the BRIN scan)\n" \
	"--   $2 xid8         xmax of the batch's end offset\n" \
	"--   $3 pg_snapshot  end offset of the batch (cq.offsets.end_offset)\n" \
	"--   $4 pg_snapshot  start offset: the previous batch's end offset\n"

/*
 * append_stamp_type
 *	  A line naming the type of the source's cq_xid when it is not xid8
 *	  (cq.stamp_type = 'xid48'): the bounds $1 and $2 stay xid8.
 */
static void
append_stamp_type(StringInfo buf, CqQuery *q)
{
	Oid			type = cq_delta_stamp_type(q->source);

	if (type != XID8OID)
		appendStringInfo(buf, "--   (the source's cq_xid is %s: compared with $1 and $2 by its operators of\n"
						 "--   the same name against xid8, which its BRIN index serves)\n",
						 format_type_be_qualified(type));
}

/*
 * explain_text
 *	  The batch statement of query q with a header of comments: where its
 *	  state is, the settings it runs with and what each parameter is.
 */
static char *
explain_text(CqQuery *q, CqAnalysis *an, CqPlan *plan)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "-- %s\n", cq_objects_target_comment(q->target, q->name, &q->opts));
	append_state_path(&buf, q);
	if (cq_merge_applies(an, q))
		appendStringInfoString(&buf, cq_merge_explain(q->id, plan->batch_sql_merge != NULL,
													  plan->merge_why, false, false));
	append_settings(&buf, q, "this statement");
	if (cq_citus_per_node_offsets(q->source))
		appendStringInfoString(&buf,
							   "-- parameters (a Citus source stamped per node: offsets per node):\n"
							   "--   $1 xid8         lowest transaction id that can be new on any node\n"
							   "--   $2 xid8         highest xmax of the batch's end offset\n"
							   "--   $3 text         end offset of the batch (cq.node_offsets.end_offset)\n"
							   "--   $4 text         start offset: the previous batch's end offset\n");
	else
		appendStringInfoString(&buf, "-- parameters:\n" OFFSET_PARAMETERS);
	append_stamp_type(&buf, q);
	if (strstr(plan->batch_sql, "$5") != NULL && an->et_is_tz)
		appendStringInfoString(&buf,
							   "--   $5 timestamptz  watermark in effect for the batch, NULL = -infinity\n");
	else if (strstr(plan->batch_sql, "$5") != NULL)
		appendStringInfoString(&buf,
							   "--   $5 timestamptz  watermark in effect for the batch, NULL = -infinity, as the\n"
							   "--                   timestamp event-time column's value at UTC (batches compare\n"
							   "--                   the column's values at UTC): cq.offsets.batch_watermark_ntz\n"
							   "--                   AT TIME ZONE 'UTC'\n");
	appendStringInfoString(&buf,
						   "-- it returns: state rows updated, inserted, removed; rows dropped as late;\n"
						   "-- rows written; row count and event-time statistics of the batch\n");
	if (q->opts.mode == CQ_MODE_COMPLETE && plan->complete_sql)
		appendStringInfo(&buf, "-- then, complete mode: the target is emptied and reloaded by\n--   %s\n",
						 plan->complete_sql);
	appendStringInfo(&buf, "%s", plan->batch_sql);
	if (plan->batch_sql_merge != NULL)
		appendStringInfo(&buf, ";\n\n-- the MERGE path: the same, writing the target by MERGE; it returns no row (MERGE\n"
						 "-- has no RETURNING in PostgreSQL 15): the statistics go to cq.batch_metrics and\n"
						 "-- the rows written are MERGE's row count\n%s", plan->batch_sql_merge);
	return buf.data;
}

/*
 * append_store_now
 *	  The store's size now (cq.state_store_info) and its image in the state
 *	  table (cq.state_images, or cq.logged_state_images for a logged image,
 *	  when written by this run of the query).
 */
static void
append_store_now(StringInfo buf, CqQuery *q)
{
	int64		batch_id;
	int64		rows;
	int64		bytes;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	CqSecurity	sec;

	if (cq_store_info(MyDatabaseId, q->id, get_rel_type_id(q->state_table), &batch_id, &rows, &bytes))
		appendStringInfo(buf, "-- store now: batch " INT64_FORMAT ", " INT64_FORMAT " rows, " INT64_FORMAT
						 " bytes (cq.state_store_info)\n", batch_id, rows, bytes);
	else
		appendStringInfoString(buf,
							   "-- store now: not in shared memory (no batch yet, or none since a restart: the next\n"
							   "-- batch loads the image and folds the source rows of the batches after it, or\n"
							   "-- refolds every row from the source when there is no valid image)\n");
	values[0] = Int32GetDatum(q->id);
	values[1] = CStringGetTextDatum(q->run_id);
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT batch_id, end_offset::pg_catalog.text, written_at::pg_catalog.text "
						 "FROM %s WHERE query_id OPERATOR(pg_catalog.=) $1 "
						 "AND run_id OPERATOR(pg_catalog.=) $2::pg_catalog.uuid", cq_store_image_table(q)),
				SPI_OK_SELECT, 2, types, values, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 1)
		appendStringInfo(buf, "-- image: the store of batch %s (end offset %s), written at %s\n",
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2),
						 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
	else
		appendStringInfoString(buf, "-- image: none yet\n");
	appendStringInfo(buf,
					 "-- (%s; rewritten every cq.state_image_interval, or every\n"
					 "-- cq.state_image_batches batches when set, by the batch then due)\n",
					 cq_store_image_table(q));
}

/*
 * pairs_columns
 *	  The columns the merge statement's pairs cq_mp add after the stored
 *	  state row (store_fold.c's pairs_desc): _nn and _np<i> per part, as
 *	  a select list over the state table s.
 */
static char *
pairs_columns(Oid state_table)
{
	Relation	rel = table_open(state_table, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	int			p = 0;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "s.n::pg_catalog.int8 AS _nn");
	for (int i = 0; i < desc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(desc, i)->attname);

		if (!TupleDescAttr(desc, i)->attisdropped && name[0] == 'p' && name[1] >= '1' && name[1] <= '9')
			appendStringInfo(&buf, ", s.%s AS _np%d", quote_identifier(name), ++p);
	}
	table_close(rel, AccessShareLock);
	return buf.data;
}

/*
 * explain_store_text
 *	  cq.explain of a query on the shared-memory store: its statements in
 *	  the order a batch (from batch 1 on) runs them, each ended by ";" (the
 *	  first, d, can be prepared as the table path's statement is), with
 *	  what the batch does in C between them and how to make the relations
 *	  the others read, to EXPLAIN them outside a batch.
 */
static char *
explain_store_text(CqQuery *q, CqAnalysis *an, CqPlan *plan)
{
	StringInfoData buf;
	CqStoreSql *sql = &plan->store;
	char	   *state = cq_sql_relname_str(q->state_table);
	bool		evicts = cq_state_evicts(an) && q->opts.mode != CQ_MODE_COMPLETE;
	int			step = 1;
	int			sink_step;

	initStringInfo(&buf);
	appendStringInfo(&buf, "-- %s\n", cq_objects_target_comment(q->target, q->name, &q->opts));
	append_state_path(&buf, q);
	if (cq_merge_applies(an, q))
		appendStringInfoString(&buf, cq_merge_explain(q->id, sql->sink_merge != NULL,
													  plan->merge_why, true, sql->load_changed != NULL));
	appendStringInfo(&buf, "-- the groups' state rows (of the row type of %s, which holds the\n"
					 "-- store's image) are in pg_cq's shared-memory store\n", state);
	append_store_now(&buf, q);
	append_settings(&buf, q, "these statements");
	appendStringInfoString(&buf, "-- parameters of statement 1 (d):\n" OFFSET_PARAMETERS);
	append_stamp_type(&buf, q);
	if (evicts && an->et_is_tz)
		appendStringInfoString(&buf, "-- applied in C (no statement reads it):\n"
							   "--   watermark       in effect for the batch, none = -infinity: cq.offsets.batch_watermark\n");
	else if (evicts)
		appendStringInfoString(&buf, "-- applied in C (no statement reads it):\n"
							   "--   watermark       in effect for the batch, none = -infinity, as the timestamp\n"
							   "--                   event-time column's value at UTC (batches compare the column's\n"
							   "--                   values at UTC): cq.offsets.batch_watermark_ntz\n");

	appendStringInfo(&buf, "\n-- %d. d: the partial aggregates of the batch's new rows, one row per group, as state\n"
					 "-- rows%s\n", step++,
					 sql->et_stats ? ", then the event-time statistics of the group's rows" :
					 sql->delta_c && cq_delta_agg_in_c ?
					 ", made in C (cq.delta_agg_in_c) from the new rows this statement reads: their\n"
					 "-- keys, then the aggregates' arguments" : "");
	appendStringInfo(&buf, "%s;\n", sql->delta_c && cq_delta_agg_in_c ? sql->delta_c : sql->delta);
	if (sql->delta_c && cq_delta_agg_in_c && sql->deltascan && cq_delta_scan_in_c)
		appendStringInfoString(&buf, "-- (its rows read in C (cq.delta_scan_in_c) through the BRIN index on cq_xid when\n"
							   "-- the batch runs, unless row-level security applies to the source)\n");

	appendStringInfoString(&buf, "\n-- in C: each group of d is looked up in the store by a hash of its keys (compared\n"
						   "-- with GROUP BY's equality)");
	if (evicts)
		appendStringInfoString(&buf, "; groups of windows that ended at or before the\n"
							   "-- watermark are dropped as late");
	appendStringInfoString(&buf, "; new groups are added as they are");
	if (cq_store_merges_in_c(q->state_table, sql->merge_kinds))
		appendStringInfoString(&buf, "; existing ones are merged\n"
							   "-- in C (count, sum, min and max of plain types: no merge statement)\n");
	else
	{
		appendStringInfoString(&buf, "\n");
		appendStringInfo(&buf, "\n-- %d. merge: the existing groups merged with their new partial aggregates, over their\n"
						 "-- pairs cq_mp (_k, the stored state row, _nn and _np<i>: the new count and partials).\n"
						 "-- To EXPLAIN it: CREATE TEMP TABLE cq_mp AS SELECT 0 AS _k, s.*, %s\n"
						 "-- FROM %s s WITH NO DATA\n",
						 step++, pairs_columns(q->state_table), state);
		appendStringInfo(&buf, "%s;\n", sql->merge);
	}
	if (evicts)
		appendStringInfoString(&buf, "\n-- in C: the groups of windows that ended at or before the watermark leave the\n"
							   "-- store (x)\n");
	if (q->opts.mode == CQ_MODE_COMPLETE)
	{
		appendStringInfo(&buf, "\n-- %d. complete mode: the target is emptied (%s) and reloaded from cq_all, every\n"
						 "-- group of the store.\n"
						 "-- To EXPLAIN it: CREATE TEMP TABLE cq_all AS SELECT * FROM %s WITH NO DATA\n",
						 step++, strcmp(q->opts.complete_refresh, "delete") == 0 ? "DELETE" : "TRUNCATE", state);
		appendStringInfo(&buf, "%s;\n", sql->complete);
	}
	else
	{
		appendStringInfo(&buf, "\n-- %d. the target: written from m (the changed groups: state rows, _sid, and _ins,\n"
						 "-- true for a new group) and x (the evicted groups: state rows), which the batch\n"
						 "-- passes as ephemeral relations; it returns the rows written.\n"
						 "-- To EXPLAIN it: CREATE TEMP TABLE m AS SELECT s.*, 0::pg_catalog.int8 AS _sid,\n"
						 "-- false AS _ins FROM %s s WITH NO DATA, and\n"
						 "-- CREATE TEMP TABLE x AS SELECT * FROM %s WITH NO DATA\n",
						 step++, state, state);
		appendStringInfo(&buf, "%s;\n", sql->sink);
		sink_step = step - 1;
		if (sql->sink_merge != NULL)
		{
			appendStringInfo(&buf, "\n-- %d. MERGE: instead of statement %d when the C writer does not write the\n"
							 "-- batch's groups and cq.merge_max_groups allows it (target write, above): the\n"
							 "-- same rows written, from the same m\n",
							 step, sink_step);
			step++;
			appendStringInfo(&buf, "%s;\n", sql->sink_merge);
		}
		/* the variants store_fold.c runs instead of the upsert (session 35) */
		if (sql->sink_existing != NULL)
		{
			appendStringInfo(&buf, "\n-- %d. no new group: instead of statement %d when no group the batch changed is\n"
							 "-- new to the store (m's _ins all false), MERGE is not chosen and the target has\n"
							 "-- its columns: the same without o1\n", step++, sink_step);
			appendStringInfo(&buf, "%s;\n", sql->sink_existing);
		}
		if (sql->sink_new != NULL)
		{
			appendStringInfo(&buf, "\n-- %d. only new groups: instead of statement %d when every group the batch changed\n"
							 "-- is new to the store (m's _ins all true), no window was evicted (x is empty),\n"
							 "-- MERGE is not chosen, and the target has no statement-level UPDATE or DELETE\n"
							 "-- trigger (the upsert fires those in every batch): the plain INSERT of those groups\n",
							 step++, sink_step);
			appendStringInfo(&buf, "%s;\n", sql->sink_new);
		}
	}
	appendStringInfoString(&buf, "\n-- at commit the batch's changes are published to the store (discarded at abort)\n");
	return buf.data;
}

/*
 * cq_explain
 *	  cq.explain(name text) RETURNS text: the SQL a batch of the query runs
 *	  (batch 1 onwards), for EXPLAIN.  Only for a role with the owner's
 *	  privileges, as every cq.* function.
 */
Datum
cq_explain(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MemoryContext caller_cxt = CurrentMemoryContext;
	CqQuery    *q;
	CqAnalysis *an;
	CqPlan	   *plan;
	char	   *sql;
	text	   *result;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	q = cq_api_owned_query(name, false);
	if (q->cluster_id == NULL || strcmp(q->cluster_id, cq_catalog_cluster_id()) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("continuous query \"%s\" has not run since it was restored", q->name),
				 errdetail("Its internal objects are recreated before its first batch in this installation."),
				 errhint("Run it once with CALL cq.run(name), then explain it.")));
	if (OidIsValid(q->opts.join_source_relid))
		sql = cq_join_explain(q);	/* a join of two streams (join.c) */
	else
	{
		cq_plan_get(q, &an, &plan);
		sql = plan->use_store ? explain_store_text(q, an, plan) : explain_text(q, an, plan);
	}
	MemoryContextSwitchTo(caller_cxt);
	result = cstring_to_text(sql);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
