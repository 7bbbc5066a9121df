/*-------------------------------------------------------------------------
 *
 * merge.c
 *	  The MERGE path of update mode (issue 12 goal 7): which queries may
 *	  write their target by one MERGE instead of the upsert (sink.c), the
 *	  statement, and the per-batch choice by size.
 *
 * The upsert writes the changed groups f with three CTEs: o1 inserts the
 * groups new to the state, ou updates existing ones whose row changed (by
 * binary image), oi inserts those whose row is missing; od deletes those
 * that left HAVING.  The MERGE path keeps od and replaces the rest by
 *
 *	 MERGE INTO target t USING f ON NOT f._ins AND <keys equal>
 *	 WHEN MATCHED AND (having) AND record_image_ne(t's row, f's row)
 *		 THEN UPDATE SET ...
 *	 WHEN NOT MATCHED AND (having) THEN INSERT ...
 *
 * which writes exactly the same rows: a new group (f._ins) never matches,
 * so it is inserted as o1 would; an existing one is updated where ou would
 * and inserted where oi would; rows that did not change are not rewritten;
 * MERGE's row count is o1 + ou + oi, the rows written.  The keys are
 * compared with plain equality (through the target's index on their hash,
 * or its unique index on them), which finds a group's row only if no key
 * is NULL: the path is taken only when every key is provably NOT NULL
 * (cq_merge_eligible), else the upsert, whose comparison is null-safe.
 *
 * Which writer a batch takes, as measured (bench/merge.sh, session 38;
 * bench/README.md "MERGE"; CPU of CALL cq.run, 1k-300k changed groups of
 * 4k- and 1M-group targets): on the store, the C writer (store_update.c)
 * first wherever the target qualifies, whatever the keys: it was the
 * fastest, or within 1%, in 11 of 12 rows (0.56-1.01x MERGE's target
 * write; once 1.07x the upsert statement's), so store_fold.c tries it
 * before MERGE.  Otherwise MERGE where every key is NOT NULL:
 * against the upsert statement it took 0.68-1.12x the store's target write
 * and 0.84-1.24x the table path's batch, no crossover up to 300k changed
 * groups, so cq.merge_max_groups defaults to -1, every batch (a positive
 * value limits it: on the store the changed groups are counted before the
 * target write; on the table path the batch's new rows are counted first,
 * a scan more, and bound them).  On the table path only queries without
 * joins or set-returning functions, whose new rows bound the changed
 * groups, have a MERGE statement (plan.c); the others keep the upsert.  The
 * writer of each batch is noted for cq.explain (cq_merge_note).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "merge.h"
#include "guc.h"
#include "citus.h"
#include "state.h"
#include "sink.h"

/*
 * attr_not_null
 *	  Does column attno of relation relid carry NOT NULL?
 */
static bool
attr_not_null(Oid relid, AttrNumber attno)
{
	HeapTuple	tup;
	bool		notnull;

	if (attno <= 0)
		return false;
	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attno));
	if (!HeapTupleIsValid(tup))
		return false;
	notnull = ((Form_pg_attribute) GETSTRUCT(tup))->attnotnull &&
		!((Form_pg_attribute) GETSTRUCT(tup))->attisdropped;
	ReleaseSysCache(tup);
	return notnull;
}

/*
 * has_outer_join
 *	  Is there an outer join anywhere in a join tree (its columns may then
 *	  be NULL whatever their constraints)?
 */
static bool
has_outer_join(Node *node)
{
	if (node == NULL)
		return false;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			if (has_outer_join(lfirst(lc)))
				return true;
		return false;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		return j->jointype != JOIN_INNER || has_outer_join(j->larg) || has_outer_join(j->rarg);
	}
	return false;
}

/*
 * is_cq_window
 *	  Is a range-table entry a call of cq.window() in FROM?  Its columns
 *	  window_start and window_end are never NULL: it returns no row for a
 *	  NULL time.
 */
static bool
is_cq_window(RangeTblEntry *rte)
{
	RangeTblFunction *rtf;
	FuncExpr   *fe;
	Oid			nsp = get_namespace_oid("cq", true);
	char	   *name;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1 || rte->funcordinality)
		return false;
	rtf = linitial(rte->functions);
	if (!IsA(rtf->funcexpr, FuncExpr))
		return false;
	fe = (FuncExpr *) rtf->funcexpr;
	name = get_func_name(fe->funcid);
	return OidIsValid(nsp) && get_func_namespace(fe->funcid) == nsp && name != NULL &&
		strcmp(name, "window") == 0;
}

/*
 * expr_not_null
 *	  Is grouping expression e never NULL?  Only what is sure: a non-NULL
 *	  constant, a column with NOT NULL of a table (not an inheritance
 *	  parent, whose children may lack it; partitions cannot) in a query
 *	  without outer joins, the window columns of cq.window(), and
 *	  date_trunc()/date_bin() (windows) of such values.  Anything else
 *	  may be NULL.
 */
static bool
expr_not_null(CqAnalysis *an, Node *e, const char **what)
{
	if (e == NULL)
		return false;
	if (IsA(e, Const))
	{
		*what = "a constant";
		return !((Const *) e)->constisnull;
	}
	if (IsA(e, RelabelType))
		return expr_not_null(an, (Node *) ((RelabelType *) e)->arg, what);
	if (IsA(e, Var))
	{
		Var		   *v = (Var *) e;
		RangeTblEntry *rte;

		if (v->varlevelsup != 0 || v->varno < 1 || v->varno > list_length(an->query->rtable) ||
			has_outer_join((Node *) an->query->jointree))
			return false;
		rte = rt_fetch(v->varno, an->query->rtable);
		if (rte->rtekind == RTE_RELATION)
		{
			if (rte->inh && get_rel_relkind(rte->relid) != RELKIND_PARTITIONED_TABLE &&
				has_subclass(rte->relid))
				return false;
			*what = "a NOT NULL column";
			return attr_not_null(rte->relid, v->varattno);
		}
		if (is_cq_window(rte) && (v->varattno == 1 || v->varattno == 2))
		{
			*what = "a window of cq.window()";
			return true;
		}
		return false;
	}
	if (IsA(e, FuncExpr))
	{
		FuncExpr   *fe = (FuncExpr *) e;
		ListCell   *lc;
		const char *arg_what;

		/* strict, and never NULL for values that are not (infinity stays) */
		if (fe->funcid != F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ &&
			fe->funcid != F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP &&
			fe->funcid != F_DATE_TRUNC_TEXT_TIMESTAMPTZ &&
			fe->funcid != F_DATE_TRUNC_TEXT_TIMESTAMP)
			return false;
		foreach(lc, fe->args)
			if (!expr_not_null(an, lfirst(lc), &arg_what))
				return false;
		*what = "a window (date_bin or date_trunc) of NOT NULL values";
		return true;
	}
	return false;
}

/*
 * cq_merge_eligible
 *	  May batches of this query write its target by MERGE?  An update-mode
 *	  aggregation with grouping keys, every key provably NOT NULL (its
 *	  target column carries NOT NULL, or its grouping expression cannot be
 *	  NULL), into a plain table without rules that Citus does not
 *	  distribute.  *why says why or why not (cq.explain).
 */
bool
cq_merge_eligible(CqAnalysis *an, CqQuery *q, char **why)
{
	StringInfoData buf;
	char		relkind;
	HeapTuple	tup;
	bool		hasrules;

	if (q->opts.mode != CQ_MODE_UPDATE || !an->is_aggregate || an->is_dedup ||
		an->group_exprs == NIL)
	{
		*why = "not an update-mode aggregation with grouping keys";
		return false;
	}
	if (an->session || an->join != NULL)
	{
		*why = an->session ? "session windows write their target by their own statements" :
			"a join of two streams writes its target by its own statements";
		return false;
	}
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(q->target));
	if (!HeapTupleIsValid(tup))
	{
		*why = "the target does not exist";
		return false;
	}
	relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	hasrules = ((Form_pg_class) GETSTRUCT(tup))->relhasrules;
	ReleaseSysCache(tup);
	if (relkind != RELKIND_RELATION || hasrules)
	{
		*why = hasrules ? "the target has rules, which MERGE does not support" :
			"the target is not a plain table";
		return false;
	}
	if (cq_citus_kind(q->target) != CQ_CITUS_NONE)
	{
		*why = "the target is a Citus table";
		return false;
	}

	initStringInfo(&buf);
	appendStringInfoString(&buf, "every key is NOT NULL (");
	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		ListCell   *lc,
				   *lk;
		const char *col = NULL;
		const char *what = NULL;

		forboth(lc, an->outputs, lk, an->output_key)
		{
			if (lfirst_int(lk) == g)
			{
				col = ((TargetEntry *) lfirst(lc))->resname;
				break;
			}
		}
		if (col == NULL)
		{
			*why = "a grouping key is not an output";
			return false;
		}
		if (attr_not_null(q->target, get_attnum(q->target, col)))
			what = "its target column carries NOT NULL";
		else if (!expr_not_null(an, list_nth(an->group_exprs, g), &what))
		{
			*why = psprintf("key %s may be NULL: its target column has no NOT NULL and its grouping "
							"expression is not provably NOT NULL (a NULL key needs the upsert's "
							"null-safe comparison)", quote_identifier(col));
			return false;
		}
		appendStringInfo(&buf, "%s%s: %s", g > 0 ? "; " : "", quote_identifier(col), what);
	}
	appendStringInfoChar(&buf, ')');
	*why = buf.data;
	return true;
}

/*
 * cq_merge_applies
 *	  Is the query one whose target the upsert or MERGE writes (an
 *	  update-mode aggregation with grouping keys, not a session window or
 *	  a join of two streams), so that cq.explain says which?
 */
bool
cq_merge_applies(CqAnalysis *an, CqQuery *q)
{
	return q->opts.mode == CQ_MODE_UPDATE && an->is_aggregate && !an->is_dedup &&
		an->group_exprs != NIL && !an->session && an->join == NULL;
}

/*
 * cq_merge_groups_bounded
 *	  Does the number of a batch's new rows bound the number of groups it
 *	  changes (one row, one group: no joins, no function in FROM, no
 *	  set-returning function)?
 */
bool
cq_merge_groups_bounded(CqAnalysis *an)
{
	return list_length(an->query->rtable) == 1 && !an->query->hasTargetSRFs && an->join == NULL;
}

/*
 * cq_merge_append
 *	  Append to buf (a WITH clause so far, sep its separator before the
 *	  next CTE) the CTE f of the changed groups (from m), od with HAVING,
 *	  metrics_cte when given (the table path's statistics: MERGE has no
 *	  RETURNING in PostgreSQL 15) and the MERGE that writes the target.
 *	  With metrics_cte, f is read through a left join from its one row, so
 *	  that it is computed even when no group changed.
 */
void
cq_merge_append(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target,
				const char *sep, const char *metrics_cte)
{
	List	   *tkeys = cq_sink_target_key_columns(an);
	char	   *having = cq_sink_having_sql(an, viewid);
	char	   *nonkeys = cq_sink_target_columns(an, "", false, true);
	StringInfoData match;

	initStringInfo(&match);
	if (an->hash_keys)
		appendStringInfo(&match, "%s OPERATOR(pg_catalog.=) f.%s AND ",
						 cq_state_key_hash_sql(an, "t.", tkeys), CQ_KEY_HASH_COLUMN);
	cq_state_append_keys_equal(&match, an, "t.", tkeys, "f.", false);

	appendStringInfo(buf, "%sf AS (SELECT %s, s._ins%s FROM m s)", sep, cq_state_final_select_list(an),
					 an->hash_keys ? psprintf(", s.%s", CQ_KEY_HASH_COLUMN) : "");
	cq_sink_having_delete_cte(buf, an, viewid, target, match.data);
	if (metrics_cte)
		appendStringInfo(buf, ", %s", metrics_cte);
	appendStringInfo(buf, " MERGE INTO %s t USING %s ON NOT f._ins AND %s", target,
					 metrics_cte ? "(SELECT f.* FROM st LEFT JOIN f ON true) f" : "f", match.data);
	if (nonkeys[0] != '\0')
	{
		char	   *vals = cq_sink_output_list_part(an, viewid, false, true);

		appendStringInfo(buf, " WHEN MATCHED%s%s%s AND pg_catalog.record_image_ne(ROW(%s), ROW(%s)) "
						 "THEN UPDATE SET (%s) = ROW(%s)",
						 having ? " AND (" : "", having ? having : "", having ? ")" : "",
						 cq_sink_target_columns(an, "t.", false, true), vals, nonkeys, vals);
	}
	appendStringInfo(buf, " WHEN NOT MATCHED%s%s%s%s THEN INSERT (%s) VALUES (%s)",
					 metrics_cte ? " AND f._ins IS NOT NULL" : "",
					 having ? " AND (" : "", having ? having : "", having ? ")" : "",
					 cq_sink_target_columns(an, "", false, false), cq_sink_output_list(an, viewid));
}

/*
 * cq_merge_chosen
 *	  Does a batch that changes at most groups groups take MERGE
 *	  (cq.merge_max_groups: -1 always, 0 never)?
 */
bool
cq_merge_chosen(int64 groups)
{
	if (cq_merge_max_groups == 0)
		return false;
	return cq_merge_max_groups < 0 || groups <= (int64) cq_merge_max_groups;
}

/* The writer of each query's last batch in this backend (cq.explain). */
typedef struct MergeLast
{
	int32		query_id;		/* hash key */
	CqTargetWriter writer;
	int64		groups;
} MergeLast;

static HTAB *merge_last = NULL;

/* How cq.explain and the DEBUG1 message name a writer. */
static const char *
writer_name(CqTargetWriter writer)
{
	switch (writer)
	{
		case CQ_WRITER_MERGE:
			return "MERGE";
		case CQ_WRITER_C:
			return "the C writer";
		case CQ_WRITER_UPSERT:
			break;
	}
	return "the upsert statement";
}

/*
 * cq_merge_note
 *	  Remember the writer a batch of the query took in this backend.
 */
void
cq_merge_note(int32 query_id, CqTargetWriter writer, int64 groups)
{
	MergeLast  *e;

	if (merge_last == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(MergeLast);
		merge_last = hash_create("pg_cq merge paths", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(merge_last, &query_id, HASH_ENTER, NULL);
	e->writer = writer;
	e->groups = groups;
	elog(DEBUG1, "pg_cq: the batch wrote its target by %s (%lld changed groups or new rows)",
		 writer_name(writer), (long long) groups);
}

/*
 * cq_merge_last
 *	  The writer of the query's last batch in this backend, if any.
 */
bool
cq_merge_last(int32 query_id, CqTargetWriter *writer, int64 *groups)
{
	MergeLast  *e;

	if (merge_last == NULL)
		return false;
	e = hash_search(merge_last, &query_id, HASH_FIND, NULL);
	if (e == NULL)
		return false;
	*writer = e->writer;
	*groups = e->groups;
	return true;
}

/*
 * cq_merge_explain
 *	  cq.explain's comment on how the target is written: which writer and
 *	  why, and the writer of the last batch run in this session.  store:
 *	  the query is on the store; c_writer: its batches may write the
 *	  target from C (cq_target_update), which then comes first.
 */
char *
cq_merge_explain(int32 query_id, bool eligible, const char *why, bool store, bool c_writer)
{
	StringInfoData buf;
	CqTargetWriter writer;
	int64		groups;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "-- target write: ");
	if (c_writer)
		appendStringInfo(&buf, "the C writer (src/store_update.c) where the target qualifies,\n"
						 "-- checked in every batch (a plain table whose only index is pg_cq's key-hash\n"
						 "-- index, without triggers, rules, row-level security, CHECK, generated or\n"
						 "-- identity columns, its privileges granted to the owner): it measured faster\n"
						 "-- than both statements (bench/README.md, MERGE)%s; otherwise\n-- ",
						 cq_target_update_in_c ? "" : ", but cq.target_update_in_c\n-- is off");
	if (!eligible)
		appendStringInfo(&buf, "the upsert statement, not MERGE: %s\n", why);
	else
	{
		if (cq_merge_max_groups < 0)
			appendStringInfoString(&buf, "MERGE (statement below) in every batch (cq.merge_max_groups = -1)");
		else if (cq_merge_max_groups == 0)
			appendStringInfoString(&buf, "the upsert statement, not MERGE (cq.merge_max_groups = 0)");
		else
			appendStringInfo(&buf, "MERGE (statement below) when the batch %s at most\n"
							 "-- cq.merge_max_groups = %d, else the upsert statement",
							 store ? "changed" : "has new rows (each changes one group)",
							 cq_merge_max_groups);
		appendStringInfo(&buf, ":\n-- MERGE measured at least as fast as the upsert statement (bench/README.md, MERGE).\n"
						 "-- It compares the keys with plain equality, and %s\n", why);
	}
	if (cq_merge_last(query_id, &writer, &groups) && groups == 0)
		appendStringInfo(&buf, "-- last batch in this session: %s (no %s)\n", writer_name(writer),
						 store ? "changed groups" : "new rows");
	else if (cq_merge_last(query_id, &writer, &groups))
		appendStringInfo(&buf, "-- last batch in this session: %s (" INT64_FORMAT " %s)\n",
						 writer_name(writer), groups,
						 store ? (groups == 1 ? "changed group" : "changed groups") :
						 (groups == 1 ? "new row" : "new rows"));
	return buf.data;
}
