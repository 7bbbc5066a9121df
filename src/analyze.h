/*-------------------------------------------------------------------------
 *
 * analyze.h
 *	  Query analysis and every "not supported" check (analyze.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_ANALYZE_H
#define CQ_ANALYZE_H

#include "postgres.h"
#include "nodes/parsenodes.h"
#include "options.h"
#include "aggregates.h"
#include "joinspec.h"

/*
 * The values of DISTINCT aggregates with the same argument and FILTER: the
 * (group, value) pairs seen so far are kept in the query's auxiliary state
 * table, column v<N> (state.c).
 */
typedef struct CqDistinctSet
{
	int			arg_col;		/* inner column x<N> of the argument */
	int			filter_col;		/* inner column f<N> of FILTER, or -1 */
	Oid			type;
	int32		typmod;
	Oid			collation;		/* the aggregate's input collation, or InvalidOid */
} CqDistinctSet;

/* What analyze.c finds in a query. */
typedef struct CqAnalysis
{
	Query	   *query;			/* analyzed query (private copy) */
	Index		source_rti;		/* range-table index of the stream */
	Oid			source_relid;
	bool		is_aggregate;	/* GROUP BY or aggregates */
	List	   *group_exprs;	/* grouping expressions (Node *) */
	List	   *group_eqops;	/* OID: GROUP BY's equality operator per key */
	bool		keys_hashable;	/* every key type hashes consistently with it */
	List	   *aggs;			/* CqAgg * */
	List	   *arg_exprs;		/* aggregate arguments, inner columns x1.. */
	List	   *filter_exprs;	/* FILTER conditions, inner columns f1.. */
	List	   *parts;			/* CqPart *: state columns p1..pN, shared when equal */
	List	   *distinct_sets;	/* CqDistinctSet *: values of DISTINCT aggregates */
	List	   *outputs;		/* non-junk TargetEntry of the query */
	List	   *output_key;		/* int per output: grouping index or -1 */

	/* event time (all unset without the event_time option) */
	AttrNumber	et_attno;		/* event-time column of the source */
	bool		et_is_tz;		/* timestamptz (else timestamp) */
	int			wm_key;			/* grouping key that carries the watermark, or -1 */
	char	   *wm_end_fmt;		/* SQL of that key's window end; %1$s = the key */
	bool		has_watermark;	/* watermark option set */

	/* SELECT DISTINCT [ON] without aggregation (dedup.c) */
	bool		is_dedup;		/* keys: group_exprs and group_eqops */
	List	   *dedup_refs;		/* int: resno of each DISTINCT key's entry */
	bool		dedup_evicts;	/* watermark: seen keys leave the state */
	bool		dedup_delay_ok; /* the delay as a fixed length fits (else keys
								 * never expire: the watermark never moves) */
	int64		dedup_delay_us; /* the watermark delay: a key expires at the
								 * event time of its written row + this */

	/* session windows: cq.session_window(ts, gap) in FROM (session.c) */
	bool		session;		/* grouped by a session window */
	int			session_start_key;	/* grouping key of session_start */
	int			session_end_key;	/* grouping key of session_end */
	int64		session_gap_us; /* the constant gap, in microseconds; 0 when
								 * the gap is an expression per row */
	/* a join of two streams (joinspec.c, join.c), or NULL */
	CqJoinSpec *join;
	/* an aggregation over it (join.c sets these to build its batches) */
	char	   *join_delta_sql; /* the rows to aggregate: the batch's matches */
	int			late_param;		/* $n of the watermark late groups are
								 * dropped by (0: $5, the eviction one) */

	/* set by cq_plan_build */
	bool		single_scan;	/* batch rows counted by the main statement itself */
	bool		hash_keys;		/* state keyed by a hash of the keys (column h),
								 * not by a unique index on them */
	char	   *distinct_state;	/* quoted name of the table of (group, value)
								 * pairs of DISTINCT aggregates, or NULL */
} CqAnalysis;

extern CqAnalysis *cq_analyze_query(Query *query, CqOptions *opts, const char *name);
extern char *cq_analyze_state_signature(CqAnalysis *an);

#endif							/* CQ_ANALYZE_H */
