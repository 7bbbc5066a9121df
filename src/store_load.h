/*-------------------------------------------------------------------------
 *
 * store_load.h
 *	  Batch 0 of an update query on the store: its target rows written as
 *	  COPY writes them (store_load.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_LOAD_H
#define CQ_STORE_LOAD_H

#include "postgres.h"
#include "access/tupdesc.h"

typedef struct CqTargetLoad CqTargetLoad;

extern CqTargetLoad *cq_target_load_begin(Oid target, TupleDesc result, int first, char **names,
										  int nnames, bool having);
extern void cq_target_load_row(CqTargetLoad *tl, Datum *values, bool *isnull);
extern int64 cq_target_load_end(CqTargetLoad *tl);

#endif							/* CQ_STORE_LOAD_H */
