/*-------------------------------------------------------------------------
 *
 * store_update.h
 *	  The changed groups of a later batch of an update query on the store,
 *	  written to its target from C (store_update.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_UPDATE_H
#define CQ_STORE_UPDATE_H

#include "postgres.h"
#include "fmgr.h"
#include "store.h"

extern bool cq_target_update(const CqStoreSql *sql, TupleDesc state, FmgrInfo *eq, const Oid *coll,
							 uint64 groups, bool with_new, int64 *written);

#endif							/* CQ_STORE_UPDATE_H */
