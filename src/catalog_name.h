/*-------------------------------------------------------------------------
 *
 * catalog_name.h
 *	  A continuous query by the name a user gives (catalog_name.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CATALOG_NAME_H
#define CQ_CATALOG_NAME_H

#include "catalog.h"

extern bool cq_catalog_name_path(const char *name, bool missing_ok, char **objname,
								 char **shown, Oid **path, int *n);
extern char *cq_catalog_shown_name(const char *name);
extern CqQuery *cq_catalog_get_query_on(const char *objname, const char *shown,
										const Oid *path, int n, bool missing_ok, bool lock);
extern CqQuery *cq_catalog_get_query(const char *name, bool missing_ok, bool lock);
extern void cq_catalog_check_owner(CqQuery *q, Oid role);

#endif							/* CQ_CATALOG_NAME_H */
