/*-------------------------------------------------------------------------
 *
 * bulkload.h
 *	  Batch 0 over history on the table path, loaded directly (bulkload.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_BULKLOAD_H
#define CQ_BULKLOAD_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"

/* What a direct load of batch 0 did. */
typedef struct CqBulkResult
{
	int64		groups;			/* state rows inserted */
	int64		input_rows;		/* source rows folded (sum of their counts) */
	int64		output_rows;	/* target rows inserted */
	bool		untested;		/* the history's rows read without testing cq_xid */
	bool		state_index_built;	/* the state's index built from the load's key hashes */
	bool		target_index_built; /* the target's */
} CqBulkResult;

/* The indexes a direct load builds itself (cq_bulk_index_plan). */
typedef struct CqBulkIndexes
{
	Oid			state_index;	/* the state's index on h, or InvalidOid: none */
	Oid			target_index;	/* the target's on the hash of its keys, or InvalidOid */
} CqBulkIndexes;

extern char *cq_bulk_sql(CqAnalysis *an, CqQuery *q, Oid viewid, bool untested);
extern bool cq_bulk_index_plan(CqAnalysis *an, CqQuery *q, CqBulkIndexes *ix);
extern bool cq_bulk_fold(CqAnalysis *an, CqQuery *q, const char *sql, const char *sql_all,
						 int nargs, Oid *types, Datum *values, const char *nulls,
						 const CqBulkIndexes *ix, CqBulkResult *res);

#endif							/* CQ_BULKLOAD_H */
