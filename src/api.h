/*-------------------------------------------------------------------------
 *
 * api.h
 *	  SQL-callable functions and what the DDL hook shares with them (api.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_API_H
#define CQ_API_H

#include "postgres.h"
#include "nodes/parsenodes.h"
#include "catalog.h"

extern Oid	cq_api_register(const char *name, const char *query_text, Query *query,
							CqOptions *opts, Oid target, bool target_created);
extern void cq_api_alter(const char *name, CqOptions *opts);
extern void cq_api_alter_query(const char *name, const char *query_text);
extern CqQuery *cq_api_owned_query(const char *name, bool lock);
extern void cq_api_check_owner(CqQuery *q);

#endif							/* CQ_API_H */
