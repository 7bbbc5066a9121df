/*-------------------------------------------------------------------------
 *
 * join_sql.h
 *	  The SQL of a join of two streams' batches (join_sql.c), for join.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_JOIN_SQL_H
#define CQ_JOIN_SQL_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"

/* The SQL of a join's batch, built from its analysis (join.c's file header). */
typedef struct CqJoinSql
{
	char	   *add[2];			/* per stream: new rows into buffer (history / not) */
	char	   *add_history[2];
	char	   *output;			/* matches into the target */
	char	   *evict[2];		/* per stream: rows that can no longer match */
	char	   *count;			/* rows in the buffers */
	char	   *rebuild[2];		/* per stream: refill a lost buffer */
	char	   *matched[2];		/* outer joins, per preserved stream: mark matched rows */
	char	   *emit[2];		/* outer joins, per preserved stream: unmatched rows out */
	char	   *count_xids;		/* max_rows_per_trigger: new rows of both streams per
								 * transaction ($1..$4, $5 the most to return) */
	char	   *count_history;	/* rows of both streams from before tracking */
	char	   *fold;			/* aggregation: the matches into its state ($5, $6, $7) */
	char	   *close;			/* aggregation: closed windows to the target ($5) */
} CqJoinSql;

/* Parameters of the statements of an aggregation over a join. */
#define AGG_NPARAMS 9		/* $8, $9: outer joins, each stream's eviction bound */

extern void cq_join_sql_build(CqAnalysis *an, CqQuery *q, Oid bufs[2], const char *late, CqJoinSql *js);
extern List *cq_join_sql_list(CqJoinSql *js);
extern void cq_join_sql_copy(CqJoinSql *dst, CqJoinSql *src);

#endif							/* CQ_JOIN_SQL_H */
