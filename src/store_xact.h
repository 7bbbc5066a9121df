/*-------------------------------------------------------------------------
 *
 * store_xact.h
 *	  The state store at the ends of transactions (store_xact.c): what a
 *	  drop or a reset of a query asks of it.  Included by store.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_XACT_H
#define CQ_STORE_XACT_H

#include "postgres.h"

/* cq_store_forget's query_id: every query of the database (ids start at 1) */
#define CQ_STORE_ALL_QUERIES 0

extern void cq_store_forget(Oid dboid, int32 query_id);
extern void cq_store_discard(Oid dboid, int32 query_id);

#endif							/* CQ_STORE_XACT_H */
