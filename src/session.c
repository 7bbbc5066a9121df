/*-------------------------------------------------------------------------
 *
 * session.c
 *	  Session windows (issue 11): cq.session_window(ts, gap), the state of
 *	  a query grouped by it, and the statement of its batches.
 *
 * A session of a key is [first event, last event + gap); the sessions of a
 * key that overlap or only touch merge (Spark's MergingSessionsIterator:
 * a session joins the current one when its start <= the current end).
 * cq.session_window gives each row its own session [ts, ts + gap); the
 * query groups by (keys, session_start, session_end) and the batch merges.
 *
 * State: one row per open session, keyed by every grouping key (the
 * session's bounds included), with the row count n and the partial
 * aggregates p<i> as for any aggregation (state.c), and the hash h of all
 * keys when they hash (the target is matched by it, sink.c); found per key
 * through an index on the hash of the keys other than the session.
 *
 * A batch is one statement:
 *	 d:  partial aggregates of the new rows per key and own session (Spark's
 *		 partial aggregation), with e = the own session's end;
 *	 dl: those not late: e > W (Spark's late filter on the raw row's
 *		 session [ts, ts + gap), before merging);
 *	 pc: the pieces to merge: dl and the state sessions of its keys;
 *	 pb, pn: gaps and islands over the pieces of each key, in order of
 *		 start: a piece starts a new island when its start is after the
 *		 largest end before it (touching pieces merge);
 *	 mg: one merged session per island with a new piece: its bounds, and
 *		 the N-ary merge of its pieces' partial states (aggregates.c,
 *		 cq_agg_part_merge_n; stored pieces first, the new one last);
 *	 mz, md: the state sessions merged are deleted (a row that bridges
 *		 sessions makes them one);
 *	 mi: the merged sessions are inserted;
 *	 m:  the merged sessions as the sink reads changed groups, with _ins =
 *		 their bounds are new (no stored session merged into them had the
 *		 same bounds: mg's _same);
 *	 x:  sessions closed by the watermark (end <= W) that the batch did not
 *		 merge leave the state, after md (a merged session ends after W: its
 *		 new piece does);
 *	 then the sink's CTEs (sink.c) write m (update) or x (append), and in
 *	 update mode oz deletes the target rows of sessions merged away (their
 *	 old bounds are kept in mg).  No step joins two CTEs (whose sizes the
 *	 planner cannot know): the flags and old bounds travel in mg.
 *
 * Update mode is a deliberate difference from Spark, which rejects it for
 * session windows because its sinks cannot retract a row: pg_cq deletes
 * the row of a session merged away, in the batch's transaction.
 *
 * Lost state: with a watermark that drops late rows, the state cannot be
 * refolded from the source.  A row dropped as late (its own session ended
 * at or before the watermark of its batch) may lie inside or touch a
 * session that is still open (one whose end is after the last watermark),
 * and a row of the same key and time range processed by an earlier batch,
 * under a smaller watermark, was kept: neither a row's own session nor its
 * merged session, compared with the last watermark, tells the two apart
 * (example in docs/semantics.md).  So that state is always a logged table
 * (cq_session_state_logged), as SELECT DISTINCT within a watermark is
 * (dedup.c), and has no rebuild statement.  Without a watermark (or in
 * complete mode, which never drops a row) every processed row is in the
 * state, and the rebuild is the same fold over all of them.
 *
 * Everything here but cq_session_window only builds SQL text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"

#include "session.h"
#include "timeexpr.h"
#include "sql_builder.h"
#include "aggregates.h"
#include "delta.h"
#include "state.h"
#include "sink.h"

PG_FUNCTION_INFO_V1(cq_session_window);
PG_FUNCTION_INFO_V1(cq_session_end);

/*
 * own_session_end
 *	  The end ts + gap of the own session of a row at ts; false when the row
 *	  has none: an infinite ts, a non-positive gap (Spark filters such rows
 *	  out), or an end outside the timestamp range.  A gap with months is an
 *	  error, as for cq.window.
 */
static bool
own_session_end(int64 ts, Interval *iv, int64 *end)
{
	int64		gap;

	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session window gap cannot contain months or years"),
				 errhint("Use days, hours, minutes or seconds.")));
	if (!cq_interval_usecs(iv, &gap))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("session window gap out of range")));
	return !(TIMESTAMP_NOT_FINITE(ts) || gap <= 0 ||
			 pg_add_s64_overflow(ts, gap, end) || *end >= END_TIMESTAMP);
}

/*
 * cq_session_window
 *	  The C set-returning form of cq.session_window(ts, gap): one row (ts,
 *	  ts + gap), the row's own session; none for a NULL ts or gap or when
 *	  own_session_end says so.  Since the 0.2 catalog's last definition,
 *	  cq.session_window is a SQL function over cq_session_end that the
 *	  planner inlines (no function scan per row); this stays for the
 *	  definition the upgrade script creates first.
 */
Datum
cq_session_window(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	tupdesc;
	int64		ts;
	int64		end;

	InitMaterializedSRF(fcinfo, 0);
	tupdesc = rsinfo->setDesc;
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		return (Datum) 0;
	ts = PG_GETARG_INT64(0);
	if (!own_session_end(ts, PG_GETARG_INTERVAL_P(1), &end))
		return (Datum) 0;
	{
		Datum		values[2] = {Int64GetDatum(ts), Int64GetDatum(end)};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * cq_session_end
 *	  cq.session_end(ts, gap) (strict): ts + gap, the end of the row's own
 *	  session, or NULL when the row has none (own_session_end).  For
 *	  timestamp and timestamptz alike (the same int64).  cq.session_window
 *	  is "SELECT ts, e WHERE e IS NOT NULL" over it: a SQL function the
 *	  planner inlines into the query, so a batch evaluates one scalar call
 *	  per row instead of a function scan (a tuplestore) per row.
 */
Datum
cq_session_end(PG_FUNCTION_ARGS)
{
	int64		end;

	if (!own_session_end(PG_GETARG_INT64(0), PG_GETARG_INTERVAL_P(1), &end))
		PG_RETURN_NULL();
	PG_RETURN_INT64(end);
}

/*
 * cq_session_state_logged
 *	  Must the state be a logged table, whatever state_storage says?  When
 *	  the watermark drops late rows (see the file header).
 */
bool
cq_session_state_logged(CqAnalysis *an, CqOutputMode mode)
{
	return cq_state_evicts(an) && mode != CQ_MODE_COMPLETE;
}

/* "g<N>" of grouping key g (0-based) */
static char *
gcol(int g)
{
	return psprintf("g%d", g + 1);
}

/*
 * append_other_keys
 *	  The keys other than the session's, "<prefix>g1, <prefix>g3...", each
 *	  with " AS g<N>" when alias.
 */
static void
append_other_keys(StringInfo buf, CqAnalysis *an, const char *prefix, bool alias)
{
	bool		first = true;

	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		if (g == an->session_start_key || g == an->session_end_key)
			continue;
		appendStringInfo(buf, "%s%s%s", first ? "" : ", ", prefix, gcol(g));
		if (alias)
			appendStringInfo(buf, " AS %s", gcol(g));
		first = false;
	}
}

/*
 * other_keys_hash
 *	  The hash of the keys other than the session's (the state's index).
 */
static char *
other_keys_hash(CqAnalysis *an, const char *prefix)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "pg_catalog.hash_record(ROW(");
	append_other_keys(&buf, an, prefix, false);
	appendStringInfoString(&buf, "))");
	return buf.data;
}

/*
 * append_other_keys_equal
 *	  "l.gN = r.gN AND ..." over the keys other than the session's, NULL
 *	  matching NULL, with each key's own equality.
 */
static void
append_other_keys_equal(StringInfo buf, CqAnalysis *an, const char *l, const char *r)
{
	bool		first = true;

	for (int g = 0; g < list_length(an->group_exprs); g++)
	{
		char	   *c = gcol(g);

		if (g == an->session_start_key || g == an->session_end_key)
			continue;
		if (!first)
			appendStringInfoString(buf, " AND ");
		cq_state_append_key_equal(buf, an, g, psprintf("%s%s", l, c), psprintf("%s%s", r, c));
		first = false;
	}
}

/*
 * cq_session_state_table_sql
 *	  DDL of the state table of a session-window query (file header):
 *	  the keys g1..gN, n, the partial states p<i>, and h (the hash of all
 *	  keys) with an index on the hash of the other keys when they hash,
 *	  else a unique index on all keys; an index on the session end for
 *	  eviction.  Logged when cq_session_state_logged says so.
 */
char *
cq_session_state_table_sql(CqAnalysis *an, const char *qualname, bool logged, CqOutputMode mode)
{
	StringInfoData buf;
	ListCell   *lc;

	logged = logged || cq_session_state_logged(an, mode);
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE %sTABLE %s (", logged ? "" : "UNLOGGED ", qualname);
	foreach(lc, an->group_exprs)
	{
		Node	   *e = lfirst(lc);

		appendStringInfo(&buf, "g%d %s%s, ", foreach_current_index(lc) + 1,
						 cq_sql_type(exprType(e), exprTypmod(e)),
						 cq_sql_collate(exprCollation(e), exprType(e)));
	}
	appendStringInfoString(&buf, "n pg_catalog.int8 NOT NULL");
	foreach(lc, an->parts)
	{
		CqPart	   *part = lfirst(lc);

		appendStringInfo(&buf, ", p%d %s%s", foreach_current_index(lc) + 1, part->type,
						 cq_sql_collation(part->collation));
	}
	if (an->keys_hashable)
		appendStringInfo(&buf, ", %s pg_catalog.int4 NOT NULL); CREATE INDEX ON %s ((%s))",
						 CQ_KEY_HASH_COLUMN, qualname, other_keys_hash(an, ""));
	else
	{
		appendStringInfo(&buf, "); CREATE UNIQUE INDEX ON %s (", qualname);
		cq_state_append_group_cols(&buf, an, "", ", ");
		appendStringInfoString(&buf, ") NULLS NOT DISTINCT");
	}
	appendStringInfo(&buf, "; CREATE INDEX ON %s (%s)", qualname, gcol(an->session_end_key));
	return buf.data;
}

/*
 * merge_ctes
 *	  "d AS (...), ..., m AS (...)[, x AS (...)]": the new rows' sessions
 *	  merged into the state (file header).  empty: the state is known to be
 *	  empty (batch 0, a rebuild): no stored pieces, nothing deleted.  evict:
 *	  closed sessions leave the state (x).
 */
static void
merge_ctes(StringInfo buf, CqAnalysis *an, const char *state, bool history, bool empty,
		   bool evict)
{
	const char *s = gcol(an->session_start_key);
	const char *e = gcol(an->session_end_key);
	const char *order;
	ListCell   *lc;
	int			nparts = list_length(an->parts);

	/* d: partial aggregates per key and own session */
	appendStringInfoString(buf, "d AS (SELECT ");
	cq_state_append_group_cols(buf, an, "i.", ", ");
	appendStringInfoString(buf, ", count(*) AS n");
	foreach(lc, an->parts)
		appendStringInfo(buf, ", %s AS p%d", ((CqPart *) lfirst(lc))->partial,
						 foreach_current_index(lc) + 1);
	appendStringInfo(buf, ", i.%s AS e FROM (%s) i WHERE i.%s IS NOT NULL GROUP BY ", e,
					 cq_delta_inner_sql(an, history), s);
	cq_state_append_group_cols(buf, an, "i.", ", ");
	appendStringInfoChar(buf, ')');

	/* dl: not late */
	appendStringInfoString(buf, ", dl AS (SELECT * FROM d");
	if (cq_state_evicts(an))
		appendStringInfo(buf, " WHERE $5 IS NULL OR d.e OPERATOR(pg_catalog.>) %s",
						 cq_state_wm_param(an));
	appendStringInfoChar(buf, ')');

	/* pc: the pieces, stored ones of the batch's keys first */
	appendStringInfoString(buf, ", pc AS (");
	if (!empty)
	{
		appendStringInfoString(buf, "SELECT ");
		cq_state_append_group_cols(buf, an, "s.", ", ");
		appendStringInfoString(buf, ", s.n");
		for (int p = 1; p <= nparts; p++)
			appendStringInfo(buf, ", s.p%d", p);
		appendStringInfoString(buf, ", s.ctid AS _sid, 0 AS _new FROM (SELECT DISTINCT ");
		append_other_keys(buf, an, "dl.", true);
		appendStringInfo(buf, " FROM dl) k JOIN %s s ON ", state);
		if (an->hash_keys)
			appendStringInfo(buf, "%s OPERATOR(pg_catalog.=) %s AND ",
							 other_keys_hash(an, "s."), other_keys_hash(an, "k."));
		append_other_keys_equal(buf, an, "s.", "k.");
		appendStringInfoString(buf, " UNION ALL ");
	}
	appendStringInfoString(buf, "SELECT ");
	cq_state_append_group_cols(buf, an, "dl.", ", ");
	appendStringInfoString(buf, ", dl.n");
	foreach(lc, an->parts)
		appendStringInfo(buf, ", dl.p%d::%s AS p%d", foreach_current_index(lc) + 1,
						 ((CqPart *) lfirst(lc))->type, foreach_current_index(lc) + 1);
	appendStringInfoString(buf, ", NULL::pg_catalog.tid AS _sid, 1 AS _new FROM dl)");

	/* pb, pn: islands of pieces that overlap or touch, per key */
	order = psprintf("ORDER BY pc.%s, pc._new, pc.%s", s, e);
	appendStringInfo(buf, ", pb AS (SELECT pc.*, CASE WHEN pc.%s OPERATOR(pg_catalog.<=) "
					 "max(pc.%s) OVER (PARTITION BY ", s, e);
	append_other_keys(buf, an, "pc.", false);
	appendStringInfo(buf, " %s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
					 "THEN 0 ELSE 1 END AS _brk FROM pc)", order);
	appendStringInfoString(buf, ", pn AS (SELECT pc.*, sum(pc._brk) OVER (PARTITION BY ");
	append_other_keys(buf, an, "pc.", false);
	appendStringInfo(buf, " %s ROWS UNBOUNDED PRECEDING) AS _isl FROM pb pc)", order);

	/* mg: one merged session per island with a new piece */
	appendStringInfoString(buf, ", mg AS (SELECT ");
	append_other_keys(buf, an, "pn.", true);
	appendStringInfo(buf, ", min(pn.%s) AS %s, max(pn.%s) AS %s, sum(pn.n)::pg_catalog.int8 AS n",
					 s, s, e, e);
	foreach(lc, an->parts)
	{
		CqPart	   *part = lfirst(lc);
		const char *merge_n = cq_agg_part_merge_n(part);
		int			p = foreach_current_index(lc) + 1;

		if (merge_n == NULL)
			elog(ERROR, "pg_cq: no N-ary merge for state column p%d (%s)", p, part->merge);
		appendStringInfoString(buf, ", (");
		appendStringInfo(buf, merge_n, psprintf("pn.p%d", p),
						 psprintf("ORDER BY pn._new, pn.%s, pn.%s", s, e));
		appendStringInfo(buf, ")::%s AS p%d", part->type, p);
	}
	appendStringInfo(buf, ", array_agg(pn._sid) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) AS _sids"
					 ", array_agg(pn.%s) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) AS _olds"
					 ", array_agg(pn.%s) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) AS _olde"
					 ", (count(*) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) OPERATOR(pg_catalog.=) 1"
					 " AND min(pn.%s) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) OPERATOR(pg_catalog.=) min(pn.%s)"
					 " AND max(pn.%s) FILTER (WHERE pn._new OPERATOR(pg_catalog.=) 0) OPERATOR(pg_catalog.=) max(pn.%s)) AS _same"
					 ", row_number() OVER () AS _rn FROM pn GROUP BY ", s, e, s, s, e, e);
	append_other_keys(buf, an, "pn.", false);
	appendStringInfoString(buf, ", pn._isl HAVING bool_or(pn._new OPERATOR(pg_catalog.=) 1))");

	/* mz, md: stored sessions merged leave the state */
	if (!empty)
		appendStringInfo(buf, ", mz AS (SELECT unnest(mg._sids) AS _sid FROM mg)"
						 ", md AS (DELETE FROM %s s WHERE s.ctid OPERATOR(pg_catalog.=) "
						 "ANY (ARRAY(SELECT mz._sid FROM mz)) RETURNING 1)", state);

	/* mi: the merged sessions, after md (one unique index may hold both) */
	appendStringInfo(buf, ", mi AS (INSERT INTO %s AS s (", state);
	cq_state_append_group_cols(buf, an, "", ", ");
	appendStringInfoString(buf, ", n");
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(buf, ", p%d", p);
	if (an->hash_keys)
		appendStringInfo(buf, ", %s", CQ_KEY_HASH_COLUMN);
	appendStringInfoString(buf, ") SELECT ");
	cq_state_append_group_cols(buf, an, "mg.", ", ");
	appendStringInfoString(buf, ", mg.n");
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(buf, ", mg.p%d", p);
	if (an->hash_keys)
		appendStringInfo(buf, ", %s", cq_state_key_hash_sql(an, "mg.", NIL));
	appendStringInfoString(buf, " FROM mg");
	if (!empty)
		appendStringInfoString(buf, " WHERE (SELECT count(*) FROM md) OPERATOR(pg_catalog.>=) 0");
	appendStringInfoString(buf, " RETURNING 1)");

	/*
	 * m: the merged sessions as the sink reads changed state rows (state.c's
	 * m): their columns, the key hash h, _ins = their bounds are new (no
	 * stored session merged into them had the same: _same), and _sid, a
	 * distinct identity per row (the sink only matches rows of m with it).
	 * Taken from mg, not from mi's RETURNING: no join is needed.
	 */
	appendStringInfoString(buf, ", m AS (SELECT ");
	cq_state_append_group_cols(buf, an, "mg.", ", ");
	appendStringInfoString(buf, ", mg.n");
	for (int p = 1; p <= nparts; p++)
		appendStringInfo(buf, ", mg.p%d", p);
	if (an->hash_keys)
		appendStringInfo(buf, ", %s AS %s", cq_state_key_hash_sql(an, "mg.", NIL), CQ_KEY_HASH_COLUMN);
	appendStringInfoString(buf, ", pg_catalog.format('(%s,1)', mg._rn)::pg_catalog.tid AS _sid, "
						   "mg._same IS NOT TRUE AS _ins FROM mg)");

	/*
	 * x: closed sessions the batch did not merge.  After md (the gate):
	 * a stored session md deleted is skipped by this DELETE of the same
	 * command, without error and without a row, so a session merged with a
	 * new row is never evicted as it was; the merged one ends after W.
	 */
	if (cq_state_evicts(an) && evict)
	{
		appendStringInfo(buf, ", x AS (DELETE FROM %s s WHERE s.%s OPERATOR(pg_catalog.<=) %s",
						 state, e, cq_state_wm_param(an));
		if (!empty)
			appendStringInfoString(buf, " AND (SELECT count(*) FROM md) OPERATOR(pg_catalog.>=) 0");
		appendStringInfoString(buf, " RETURNING s.*)");
	}
}

/*
 * merged_away_cte
 *	  Update mode: ", oz AS (...)" deleting the target rows of the stored
 *	  sessions merged into another, found through the target's key index;
 *	  not those of an island whose merged session kept the bounds of its
 *	  one stored session (_same: the sink rewrites that row).
 */
static void
merged_away_cte(StringInfo buf, CqAnalysis *an, const char *target)
{
	List	   *tkeys = cq_sink_target_key_columns(an);
	const char *s = gcol(an->session_start_key);
	const char *e = gcol(an->session_end_key);

	appendStringInfoString(buf, ", oz AS (DELETE FROM ");
	appendStringInfo(buf, "%s t USING (SELECT ", target);
	append_other_keys(buf, an, "mg.", true);
	appendStringInfo(buf, ", unnest(mg._olds) AS %s, unnest(mg._olde) AS %s FROM mg "
					 "WHERE mg._same IS NOT TRUE) z WHERE ", s, e);
	if (an->hash_keys)
		appendStringInfo(buf, "%s OPERATOR(pg_catalog.=) %s AND ",
						 cq_state_key_hash_sql(an, "t.", tkeys), cq_state_key_hash_sql(an, "z.", NIL));
	cq_state_append_keys_equal(buf, an, "t.", tkeys, "z.", true);
	appendStringInfoString(buf, ")");
}

/*
 * cq_session_batch_sql
 *	  The main statement of a batch of a session-window query: merge,
 *	  evict, write the target; returns the metrics row plan.c's statements
 *	  return (state rows updated, net inserted, removed, rows dropped as
 *	  late, output rows, and no input statistics: the count statement
 *	  gives them).
 */
char *
cq_session_batch_sql(CqAnalysis *an, CqOutputMode mode, const char *state, Oid viewid,
					 const char *target, bool history)
{
	StringInfoData buf;
	bool		has_o;
	bool		has_o1;
	bool		evicts = cq_state_evicts(an);

	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	merge_ctes(&buf, an, state, history, history, true);
	cq_sink_write_ctes(&buf, an, mode, viewid, target, history, &has_o, &has_o1);
	if (mode == CQ_MODE_UPDATE && !history)
		merged_away_cte(&buf, an, target);
	appendStringInfo(&buf, " SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM mi)%s, %s, %s, %s, "
					 "0::pg_catalog.int8, NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz, "
					 "NULL::pg_catalog.timestamptz",
					 history ? "" : " - (SELECT count(*) FROM md)",
					 evicts ? "(SELECT count(*) FROM x)" : "0::pg_catalog.int8",
					 evicts ? psprintf("(SELECT count(*) FROM d WHERE d.e OPERATOR(pg_catalog.<=) %s)",
									   cq_state_wm_param(an)) : "0::pg_catalog.int8",
					 has_o1 ? "((SELECT count(*) FROM o) + (SELECT count(*) FROM o1))" :
					 has_o ? "(SELECT count(*) FROM o)" : "0::pg_catalog.int8");
	return buf.data;
}

/*
 * cq_session_rebuild_sql
 *	  Refill lost state: the same merge over every row processed, into the
 *	  empty state, without touching the target; NULL when the state is
 *	  logged and never rebuilt (file header).
 */
char *
cq_session_rebuild_sql(CqAnalysis *an, CqOutputMode mode, const char *state, bool history)
{
	StringInfoData buf;

	if (cq_session_state_logged(an, mode))
		return NULL;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "WITH ");
	merge_ctes(&buf, an, state, history, true, false);
	appendStringInfoString(&buf, " SELECT count(*) FROM mi");
	return buf.data;
}
