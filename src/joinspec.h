/*-------------------------------------------------------------------------
 *
 * joinspec.h
 *	  A join of two streams: its analysis and every "not supported" check
 *	  for it (joinspec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_JOINSPEC_H
#define CQ_JOINSPEC_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"
#include "options.h"

/* One of the two streams of a join, in the order of the source option. */
typedef struct CqJoinSide
{
	Index		rti;			/* range-table index in the query */
	Oid			relid;
	char	   *refname;		/* its alias (or table name) in the query */
	AttrNumber	et_attno;		/* event-time column, or InvalidAttrNumber */
	bool		et_is_tz;		/* timestamptz (else timestamp) */
	bool		has_delay;		/* watermark delay given */
	int64		delay_us;		/* the delay, as cq_options_delay_usecs counts it */
	bool		bounded;		/* the join condition bounds this side's rows
								 * by the other side's event time (below) */
	int64		bound_us;		/* buffered rows with event time <= W +
								 * bound_us can match no future row of the
								 * other side: evicted (W = the watermark) */
	int64		grid_us;		/* > 0: the condition equates this side's
								 * date_bin(grid_us, et, grid_origin) with the
								 * other side's (Spark's window in the join
								 * keys): rows in a bin that ends at or before
								 * W are evicted too */
	TimestampTz grid_origin;
	bool		preserved;		/* an outer join keeps this side's unmatched rows */
	List	   *attnos;			/* int: the columns the query reads, event time
								 * included, ascending: the columns of its
								 * buffer table, in this order */
} CqJoinSide;

/* What joinspec.c finds in a join of two streams. */
typedef struct CqJoinSpec
{
	CqJoinSide	side[2];
	bool		has_watermark;	/* both streams have an event time and a delay */
	JoinType	jointype;		/* JOIN_INNER, or the outer join of the streams */
} CqJoinSpec;

#define CQ_JOIN_BATCH_COLUMN "cq_join_batch"	/* buffer column: batch that added the row */
#define CQ_JOIN_MATCHED_COLUMN "cq_join_matched"	/* outer joins: the row has matched */

extern CqJoinSpec *cq_joinspec_analyze(Query *q, CqOptions *opts, const char *name);
extern bool cq_joinspec_names_two(const CqOptions *opts);
extern List *cq_joinspec_source_relids(const char *source);
extern void cq_joinspec_check_change(CqJoinSpec *old, Query *old_q, CqJoinSpec *new, Query *new_q,
									 const char *name);
extern bool cq_joinspec_side_bound(const CqJoinSide *side, TimestampTz w, bool evict,
								   TimestampTz *out);
extern int	cq_joinspec_buffer_attno(CqJoinSide *side, AttrNumber source_attno);
extern AttrNumber cq_joinspec_key_attno(CqJoinSpec *js, Query *q, int s);

#endif							/* CQ_JOINSPEC_H */
