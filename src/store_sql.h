/*-------------------------------------------------------------------------
 *
 * store_sql.h
 *	  The statements of a batch on the shared-memory state store
 *	  (store_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_SQL_H
#define CQ_STORE_SQL_H

#include "postgres.h"
#include "store.h"

extern void cq_store_build_sql(CqAnalysis *an, CqQuery *q, Oid viewid, CqStoreSql *sql);
extern void cq_store_sql_target_facts(const CqStoreSql *sql, bool *has_columns, bool *update_triggers);

#endif							/* CQ_STORE_SQL_H */
