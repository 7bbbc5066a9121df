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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
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

PG_FUNCTION_INFO_V1(cq_explain);

/*
 * explain_text
 *	  The batch statement of query q with a header of comments: the
 *	  settings it runs with and what each parameter is.
 */
static char *
explain_text(CqQuery *q, CqAnalysis *an, CqPlan *plan)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "-- %s\n", cq_objects_target_comment(q->target, q->name, &q->opts));
	appendStringInfo(&buf, "-- a batch runs this statement as role %s, with search_path = pg_catalog, pg_temp,\n",
					 quote_identifier(GetUserNameFromId(q->owner, false)));
	appendStringInfo(&buf, "-- TimeZone = '%s'%s and, after batch 0, enable_seqscan, enable_sort and jit off\n",
					 q->timezone ? q->timezone : "UTC",
					 cq_work_mem_kb > 0 ? psprintf(", work_mem = %dkB", cq_work_mem_kb) : "");
	if (cq_citus_node_source(q->source))
		appendStringInfoString(&buf,
							   "-- parameters (a Citus source stamped per node: offsets per node):\n"
							   "--   $1 xid8         lowest transaction id that can be new on any node\n"
							   "--   $2 xid8         highest xmax of the batch's end offset\n"
							   "--   $3 text         end offset of the batch (cq.node_offsets.end_offset)\n"
							   "--   $4 text         start offset: the previous batch's end offset\n");
	else
		appendStringInfoString(&buf,
							   "-- parameters:\n"
							   "--   $1 xid8         lowest transaction id that can be new (bounds the BRIN scan)\n"
							   "--   $2 xid8         xmax of the batch's end offset\n"
							   "--   $3 pg_snapshot  end offset of the batch (cq.offsets.end_offset)\n"
							   "--   $4 pg_snapshot  start offset: the previous batch's end offset\n");
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
		sql = explain_text(q, an, plan);
	}
	MemoryContextSwitchTo(caller_cxt);
	result = cstring_to_text(sql);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
