/*-------------------------------------------------------------------------
 *
 * dedup.h
 *	  SELECT DISTINCT [ON] over a stream: Spark's dropDuplicates (dedup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DEDUP_H
#define CQ_DEDUP_H

#include "postgres.h"
#include "analyze.h"

extern char *cq_dedup_state_table_sql(CqAnalysis *an, const char *qualname, bool logged);
extern char *cq_dedup_batch_sql(CqAnalysis *an, const char *state, const char *target,
								bool history);
extern char *cq_dedup_rebuild_sql(CqAnalysis *an, const char *state, bool history);

#endif							/* CQ_DEDUP_H */
