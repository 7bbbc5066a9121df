/*-------------------------------------------------------------------------
 *
 * dedup.c
 *	  SELECT DISTINCT and DISTINCT ON (keys) over a stream without
 *	  aggregation, Spark's dropDuplicates: a row (or key) is written to the
 *	  target the first time it is seen and never again.
 *
 * The state table cq_state.s_<id> holds the keys seen (g1..gN, compared
 * NULL-safely with each key's own equality, found through the hash of the
 * keys h or a unique index on them, as aggregation state is: state.c).
 * With an event time and a watermark it is Spark's
 * dropDuplicatesWithinWatermark: rows late for the batch's watermark W are
 * dropped, and the state also holds e, the time the key expires: the event
 * time of the row written for it plus the watermark delay (NULL when that
 * row had no event time: such a key never expires).  A later duplicate of
 * a key in the state is dropped and leaves e as it is; at the end of each
 * batch, keys with e <= W leave the state, and a duplicate that arrives
 * after that is written again (with a new e).
 *
 * A batch is one statement:
 *	 i: the new rows (the user's query without DISTINCT, restricted to them)
 *	 d: one row per key of the batch (not late): the one it would write, with
 *		e and h
 *	 dk: each with the state row of its key (_sid), if any
 *	 mi: keys new to the state are inserted
 *	 x: keys expired at W leave the state (a new key cannot be: its row is
 *		not late, so e > W)
 *	 o: the rows of keys not in the state are written to the target
 *
 * Lost state: without a watermark the state is the set of keys of every row
 * processed so far, so an unlogged state emptied by a crash-restart is
 * refolded exactly from the source.  Within a watermark it is not: whether
 * a key lives depends on which of its rows was written, hence on the order
 * rows arrived in and the watermark of each past batch.  So that state is
 * always a logged table, whatever state_storage says
 * (cq_dedup_state_table_sql), and is never rebuilt (plan.c gives it no
 * rebuild statement).  Everything here only builds SQL text; nothing runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "dedup.h"
#include "security.h"
#include "sql_builder.h"
#include "delta.h"
#include "state.h"
#include "sink.h"

/*
 * inner_sql
 *	  The user's query restricted to the batch's new rows, without DISTINCT:
 *	  every output and DISTINCT ON key as column c<resno>, and the event
 *	  time et.
 */
static char *
inner_sql(CqAnalysis *an, bool history)
{
	Query	   *q = copyObject(an->query);
	List	   *tlist = NIL;
	AttrNumber	resno = 1;
	ListCell   *lc;
	char	   *sql;
	int			nest;

	q->jointree->quals = make_and_qual(q->jointree->quals, cq_delta_quals(an, history));
	q->sortClause = NIL;
	q->distinctClause = NIL;
	q->hasDistinctOn = false;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk && !list_member_int(an->dedup_refs, tle->resno))
			continue;
		tlist = lappend(tlist, makeTargetEntry(tle->expr, resno++, psprintf("c%d", tle->resno), false));
	}
	if (an->et_attno != InvalidAttrNumber)
		tlist = lappend(tlist, makeTargetEntry((Expr *) makeVar(an->source_rti, an->et_attno,
																an->et_is_tz ? TIMESTAMPTZOID : TIMESTAMPOID,
																-1, InvalidOid, 0),
											   resno++, "et", false));
	q->targetList = tlist;

	nest = cq_security_deparse_begin();
	sql = cq_sql_querydef(q);
	cq_security_deparse_end(nest);
	return sql;
}

/*
 * append_keys
 *	  "i.c<r1>, i.c<r2>, ..." (the DISTINCT keys), with " AS g<k>" when
 *	  named.
 */
static void
append_keys(StringInfo buf, CqAnalysis *an, bool named)
{
	ListCell   *lc;

	foreach(lc, an->dedup_refs)
		appendStringInfo(buf, "%si.c%d%s", foreach_current_index(lc) > 0 ? ", " : "", lfirst_int(lc),
						 named ? psprintf(" AS g%d", foreach_current_index(lc) + 1) : "");
}

/*
 * not_late
 *	  Condition on i keeping the rows not late for the batch's watermark
 *	  ("true" without eviction).
 */
static const char *
not_late(CqAnalysis *an)
{
	const char *wm = cq_state_wm_param(an);

	if (!an->dedup_evicts)
		return "true";
	return psprintf("(%s IS NULL OR i.et IS NULL OR i.et OPERATOR(pg_catalog.>) %s)", wm, wm);
}

/*
 * expires_sql
 *	  SQL of the time a key expires whose written row has event time et:
 *	  et + the watermark delay, as a fixed length (cq_options_delay_usecs);
 *	  'infinity' when that lies beyond the last timestamp (or the delay does
 *	  not fit: then the watermark never moves), NULL when et is NULL.  The
 *	  constants are spelled so that no DateStyle, IntervalStyle or TimeZone
 *	  changes them.
 */
static char *
expires_sql(CqAnalysis *an, const char *et)
{
	const char *type = an->et_is_tz ? "pg_catalog.timestamptz" : "pg_catalog.timestamp";
	Timestamp	bound;
	struct pg_tm tm;
	fsec_t		fsec;

	if (!an->dedup_delay_ok || pg_sub_s64_overflow(END_TIMESTAMP - 1, an->dedup_delay_us, &bound) ||
		bound < MIN_TIMESTAMP ||
		timestamp2tm(bound, NULL, &tm, &fsec, NULL, NULL) != 0 || tm.tm_year <= 0)
		return psprintf("CASE WHEN %s IS NOT NULL THEN 'infinity'::%s END", et, type);
	return psprintf("CASE WHEN %s OPERATOR(pg_catalog.>) '%04d-%02d-%02d %02d:%02d:%02d.%06d%s'::%s "
					"THEN 'infinity'::%s ELSE %s OPERATOR(pg_catalog.+) '" INT64_FORMAT
					" microseconds'::pg_catalog.interval END",
					et, tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
					(int) fsec, an->et_is_tz ? "+00" : "", type, type, et, an->dedup_delay_us);
}

/*
 * delta_ctes
 *	  "i AS (...), d AS (...)": the batch's rows, and one row per key of
 *	  those not late: the outputs c<resno>, keys g<k>, the time e the key
 *	  expires if this row is written (its event time + the delay), key hash
 *	  h.  Which row of a key a batch keeps is the one with the earliest
 *	  event time (NULL last), then the least other outputs (those that can
 *	  be sorted): deterministic, but not part of the contract.
 */
static void
delta_ctes(StringInfo buf, CqAnalysis *an, bool history)
{
	ListCell   *lc;

	appendStringInfo(buf, "i AS (%s), d AS (SELECT DISTINCT ON (", inner_sql(an, history));
	append_keys(buf, an, false);
	appendStringInfoString(buf, ") ");
	foreach(lc, an->outputs)
		appendStringInfo(buf, "i.c%d, ", ((TargetEntry *) lfirst(lc))->resno);
	append_keys(buf, an, true);
	if (an->dedup_evicts)
		appendStringInfo(buf, ", %s AS e", expires_sql(an, "i.et"));
	if (an->keys_hashable)
	{
		List	   *cols = NIL;

		foreach(lc, an->dedup_refs)
			cols = lappend(cols, psprintf("c%d", lfirst_int(lc)));
		appendStringInfo(buf, ", %s AS %s", cq_state_key_hash_sql(an, "i.", cols), CQ_KEY_HASH_COLUMN);
	}
	appendStringInfo(buf, " FROM i WHERE %s", not_late(an));
	appendStringInfoString(buf, " ORDER BY ");
	append_keys(buf, an, false);
	if (an->et_attno != InvalidAttrNumber)
		appendStringInfoString(buf, ", i.et");
	foreach(lc, an->outputs)
	{
		TargetEntry *tle = lfirst(lc);

		if (!list_member_int(an->dedup_refs, tle->resno) &&
			OidIsValid(lookup_type_cache(exprType((Node *) tle->expr), TYPECACHE_LT_OPR)->lt_opr))
			appendStringInfo(buf, ", i.c%d", tle->resno);
	}
	appendStringInfoChar(buf, ')');
}

/*
 * state_cols
 *	  "g1, ..., gN[, e][, h]": the columns of a state row.
 */
static char *
state_cols(CqAnalysis *an, const char *prefix)
{
	StringInfoData buf;

	initStringInfo(&buf);
	cq_state_append_group_cols(&buf, an, prefix, ", ");
	if (an->dedup_evicts)
		appendStringInfo(&buf, ", %se", prefix);
	if (an->keys_hashable)
		appendStringInfo(&buf, ", %s%s", prefix, CQ_KEY_HASH_COLUMN);
	return buf.data;
}

/*
 * output_values
 *	  "<from>.c<resno>, ...": the outputs, in target column order.
 */
static char *
output_values(CqAnalysis *an, const char *from)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, an->outputs)
		appendStringInfo(&buf, "%s%s.c%d", foreach_current_index(lc) > 0 ? ", " : "", from,
						 ((TargetEntry *) lfirst(lc))->resno);
	return buf.data;
}

/*
 * cq_dedup_state_table_sql
 *	  DDL of the state table of seen keys: g1..gN in the keys' types and
 *	  collations, e (when the key expires) with a watermark, and how keys are
 *	  found (see cq_state_table_sql): an index on the key hash h when every
 *	  key type hashes consistently with its equality, else a unique index on
 *	  the keys that treats NULL as a value.
 */
char *
cq_dedup_state_table_sql(CqAnalysis *an, const char *qualname, bool logged)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	/* within a watermark, state cannot be rebuilt: always logged (file header) */
	appendStringInfo(&buf, "CREATE %sTABLE %s (", logged || an->dedup_evicts ? "" : "UNLOGGED ", qualname);
	foreach(lc, an->group_exprs)
	{
		Node	   *e = lfirst(lc);

		appendStringInfo(&buf, "%sg%d %s%s", foreach_current_index(lc) > 0 ? ", " : "",
						 foreach_current_index(lc) + 1, cq_sql_type(exprType(e), exprTypmod(e)),
						 cq_sql_collate(exprCollation(e), exprType(e)));
	}
	if (an->dedup_evicts)
		appendStringInfo(&buf, ", e %s", an->et_is_tz ? "pg_catalog.timestamptz" : "pg_catalog.timestamp");
	if (an->keys_hashable)
		appendStringInfo(&buf, ", %s pg_catalog.int4 NOT NULL); CREATE INDEX ON %s (%s)",
						 CQ_KEY_HASH_COLUMN, qualname, CQ_KEY_HASH_COLUMN);
	else
	{
		appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
		cq_state_append_group_cols(&buf, an, "", ", ");
		appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	}
	if (an->dedup_evicts)
		appendStringInfo(&buf, "; CREATE INDEX ON %s (e)", qualname);
	return buf.data;
}

/*
 * late_count
 *	  SQL counting the batch's rows dropped as late.
 */
static const char *
late_count(CqAnalysis *an)
{
	if (!an->dedup_evicts)
		return "0::pg_catalog.int8";
	return psprintf("(SELECT count(*) FROM i WHERE NOT %s)", not_late(an));
}

/*
 * cq_dedup_batch_sql
 *	  The main statement of a batch (see the file header); it returns the
 *	  metrics row of an aggregation's statement (plan.c): state rows
 *	  updated (as Spark counts them for deduplication: the keys put, that
 *	  is the new ones), inserted, removed, rows dropped as late, output
 *	  rows.  With history (batch 0), the state is empty: every key of the
 *	  batch is new.
 */
char *
cq_dedup_batch_sql(CqAnalysis *an, const char *state, const char *target, bool history)
{
	StringInfoData buf;
	StringInfoData match;
	const char *cols = state_cols(an, "");
	const char *wm = cq_state_wm_param(an);
	const char *tail = "0::pg_catalog.int8, NULL::pg_catalog.timestamptz, "
		"NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz";

	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	delta_ctes(&buf, an, history);
	if (history)
	{
		appendStringInfo(&buf, ", mi AS (INSERT INTO %s (%s) SELECT %s FROM d RETURNING 1)",
						 state, cols, cols);
		appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM d RETURNING 1)",
						 target, cq_sink_target_columns(an, "", false, false), output_values(an, "d"));
		appendStringInfo(&buf, " SELECT (SELECT count(*) FROM mi), (SELECT count(*) FROM mi), 0::pg_catalog.int8, "
						 "%s, (SELECT count(*) FROM o), %s", late_count(an), tail);
		return buf.data;
	}

	/* the state row of each key: a probe per key (see merge_hashed in state.c) */
	initStringInfo(&match);
	if (an->keys_hashable)
		appendStringInfo(&match, "s.%s OPERATOR(pg_catalog.=) d.%s AND ",
						 CQ_KEY_HASH_COLUMN, CQ_KEY_HASH_COLUMN);
	cq_state_append_keys_equal(&match, an, "s.", NIL, "d.", true);
	appendStringInfo(&buf, ", dk AS (SELECT d.*, p._sid FROM d "
					 "LEFT JOIN LATERAL (SELECT s.ctid AS _sid FROM %s s WHERE %s LIMIT 1) p ON true)",
					 state, match.data);
	appendStringInfo(&buf, ", mi AS (INSERT INTO %s (%s) SELECT %s FROM dk WHERE dk._sid IS NULL RETURNING 1)",
					 state, cols, cols);
	if (an->dedup_evicts)
	{
		/*
		 * As Spark: a duplicate found its key in the state before eviction
		 * (it is dropped and leaves e as it is); then every key expired at
		 * W leaves, those of the batch's duplicates too.
		 */
		appendStringInfo(&buf, ", x AS (DELETE FROM %s s WHERE s.e OPERATOR(pg_catalog.<=) %s RETURNING 1)",
						 state, wm);
	}
	appendStringInfo(&buf, ", o AS (INSERT INTO %s (%s) SELECT %s FROM dk WHERE dk._sid IS NULL RETURNING 1)",
					 target, cq_sink_target_columns(an, "", false, false), output_values(an, "dk"));
	appendStringInfo(&buf, " SELECT (SELECT count(*) FROM mi), (SELECT count(*) FROM mi), %s, %s, "
					 "(SELECT count(*) FROM o), %s",
					 an->dedup_evicts ? "(SELECT count(*) FROM x)" : "0::pg_catalog.int8",
					 late_count(an), tail);
	return buf.data;
}

/*
 * cq_dedup_rebuild_sql
 *	  Refill lost state of a query without watermark (see the file
 *	  header): the keys of the rows processed so far, into the empty state;
 *	  the target is not touched.  Returns the number of state rows.  The
 *	  state of a deduplication within a watermark is logged and never
 *	  rebuilt.
 */
char *
cq_dedup_rebuild_sql(CqAnalysis *an, const char *state, bool history)
{
	StringInfoData buf;
	const char *cols = state_cols(an, "");

	Assert(!an->dedup_evicts);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	delta_ctes(&buf, an, history);
	appendStringInfo(&buf, ", m AS (INSERT INTO %s (%s) SELECT %s FROM d RETURNING 1) SELECT count(*) FROM m",
					 state, cols, cols);
	return buf.data;
}
