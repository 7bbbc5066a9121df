/*-------------------------------------------------------------------------
 *
 * store_load.h
 *	  Batch 0 of an update query on the store: its target rows written as
 *	  COPY writes them, its target index built from them (store_load.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_LOAD_H
#define CQ_STORE_LOAD_H

#include "postgres.h"
#include "analyze.h"
#include "catalog.h"
#include "store.h"
#include "utils/relcache.h"

typedef struct CqTargetLoad CqTargetLoad;

extern bool cq_target_load_index_plan(CqAnalysis *an, CqQuery *q, const CqStoreSql *sql, Oid *index);
extern CqTargetLoad *cq_target_load_begin(const CqStoreSql *sql, Oid index);
extern void cq_target_load_row(CqTargetLoad *tl, Datum *values, bool *isnull, int32 h);
extern int64 cq_target_load_end(CqTargetLoad *tl);
extern bool cq_target_load_new(const CqStoreSql *sql, TupleDesc state, const Oid *coll, uint64 groups,
							   int64 *written);
extern Oid	cq_target_key_index(const CqStoreSql *sql, Relation rel, TupleDesc state, const Oid *coll);

#endif							/* CQ_STORE_LOAD_H */
