/*-------------------------------------------------------------------------
 *
 * store_setup.h
 *	  What a query's store is made of (store_setup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_SETUP_H
#define CQ_STORE_SETUP_H

#include "postgres.h"
#include "access/tupdesc.h"
#include "analyze.h"
#include "catalog.h"
#include "store_private.h"

typedef struct CqStore CqStore;

extern bool cq_store_supported(CqAnalysis *an, Oid state_table, const char **why);
extern bool cq_store_used(CqQuery *q, CqAnalysis *an);
extern bool cq_store_merges_in_c(Oid state_table, const char *kinds);
extern AttrNumber cq_store_state_att(TupleDesc desc, const char *name);
extern void cq_store_setup_keys(CqStore *st, CqQuery *q, CqAnalysis *an);
extern void cq_store_setup_merge(CqStore *st, const char *kinds);

extern double cq_store_cpu_ms(void);

#endif							/* CQ_STORE_SETUP_H */
