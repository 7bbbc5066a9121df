/*-------------------------------------------------------------------------
 *
 * merge.h
 *	  The MERGE path of update mode (merge.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_MERGE_H
#define CQ_MERGE_H

#include "postgres.h"
#include "lib/stringinfo.h"
#include "analyze.h"
#include "catalog.h"

extern bool cq_merge_eligible(CqAnalysis *an, CqQuery *q, char **why);
extern bool cq_merge_applies(CqAnalysis *an, CqQuery *q);
extern bool cq_merge_groups_bounded(CqAnalysis *an);
extern void cq_merge_append(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target,
							const char *sep, const char *metrics_cte);
extern bool cq_merge_chosen(int64 groups);
/* How a batch wrote an update query's target (cq_merge_note, cq.explain) */
typedef enum CqTargetWriter
{
	CQ_WRITER_UPSERT,			/* the upsert statement (sink.c) */
	CQ_WRITER_MERGE,			/* MERGE (this file) */
	CQ_WRITER_C					/* from C (store_update.c, store_load.c) */
} CqTargetWriter;

extern void cq_merge_note(int32 query_id, CqTargetWriter writer, int64 groups);
extern bool cq_merge_last(int32 query_id, CqTargetWriter *writer, int64 *groups);
extern char *cq_merge_explain(int32 query_id, bool eligible, const char *why, bool store,
							  bool c_writer);

#endif							/* CQ_MERGE_H */
