/*-------------------------------------------------------------------------
 *
 * catalog_name.c
 *	  A continuous query by the name a user gives (cq.run, cq.drop_query
 *	  and the others), in two steps that may run in two processes.
 *
 * Since 0.2 a query lives in its target's schema and the name is read as
 * regclass input reads a table's.  The first step (cq_catalog_name_path)
 * needs the user's search_path and rights: the schemas where the name may
 * be; the second (cq_catalog_get_query_on) reads cq.queries in them and
 * needs neither.  A CALL cq.run handed to a pool worker (handoff.c) takes
 * the first step in the caller and the second in the worker, whose
 * relation cache has cq.queries already: a new backend (pg_cron's CALL)
 * would spend some 0.6-0.7 ms of CPU building it (its 32 columns, the
 * row security policy, the foreign keys' triggers, two indexes) for one
 * row (session 33, 10M-row benchmark).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/regproc.h"

#include "catalog_name.h"

/*
 * cq_catalog_name_path
 *	  Step 1 on a 0.2 catalog: the name parsed ("q" or "s.q", unquoted parts
 *	  folded to lower case) into *objname, shown as errors show it
 *	  (*shown), and the schemas to look in, in order (*n of them, palloc'd):
 *	  "s.q" is query q of schema s (the caller needs USAGE on s, as for a
 *	  table; a missing schema is an error unless missing_ok, then no
 *	  schema); "q" is the first query named q in a schema of the caller's
 *	  search_path (schemas without USAGE and pg_temp are skipped).  Returns
 *	  false on a 0.1 catalog (names unique in the database, taken as they
 *	  are: cq_catalog_get_query).  Must run with the caller's search_path
 *	  and user.
 */
bool
cq_catalog_name_path(const char *name, bool missing_ok, char **objname, char **shown,
					 Oid **path, int *n)
{
	List	   *names;
	char	   *schemaname;

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("continuous query name must not be null")));
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return false;
	names = stringToQualifiedNameList(name);
	*shown = NameListToString(names);
	DeconstructQualifiedName(names, &schemaname, objname);
	if (schemaname != NULL)
	{
		Oid			nsp = LookupExplicitNamespace(schemaname, missing_ok);

		*path = palloc(sizeof(Oid));
		(*path)[0] = nsp;
		*n = OidIsValid(nsp) ? 1 : 0;
	}
	else
	{
		int			len = fetch_search_path_array(NULL, 0);

		*path = palloc(sizeof(Oid) * Max(len, 1));
		/* as RelnameGetRelid: USAGE only, no temporary schema */
		*n = Min(len, fetch_search_path_array(*path, len));
	}
	return true;
}

/*
 * cq_catalog_shown_name
 *	  A query name as a user gives it, shown as errors show it: parsed,
 *	  without quotes ('s.q' is s.q, '"My Q"' is My Q).  On a 0.1 catalog
 *	  the name as it is.
 */
char *
cq_catalog_shown_name(const char *name)
{
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return pstrdup(name);
	return NameListToString(stringToQualifiedNameList(name));
}

/*
 * cq_catalog_get_query_on
 *	  Step 2: the first query named objname in the schemas of path (step
 *	  1), or NULL (an error naming it as shown unless missing_ok).  No
 *	  privilege is checked; with lock, see cq_catalog_get_query_in.
 */
CqQuery *
cq_catalog_get_query_on(const char *objname, const char *shown, const Oid *path, int n,
						bool missing_ok, bool lock)
{
	CqQuery    *q = NULL;

	for (int i = 0; i < n && q == NULL; i++)
		q = cq_catalog_get_query_in(path[i], objname, true, lock);
	if (q == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous query \"%s\" does not exist", shown)));
	return q;
}

/*
 * cq_catalog_get_query
 *	  Load a query by its name as a user gives it (both steps above; on a
 *	  0.1 catalog the name as it is).  With lock, see fetch_query.  Must
 *	  run with the caller's search_path and user.
 */
CqQuery *
cq_catalog_get_query(const char *name, bool missing_ok, bool lock)
{
	char	   *objname;
	char	   *shown;
	Oid		   *path;
	int			n;

	if (!cq_catalog_name_path(name, missing_ok, &objname, &shown, &path, &n))
	{
		/* 0.1: the schema does not matter */
		Oid			any = InvalidOid;

		return cq_catalog_get_query_on(name, name, &any, 1, missing_ok, lock);
	}
	return cq_catalog_get_query_on(objname, shown, path, n, missing_ok, lock);
}

/*
 * cq_catalog_check_owner
 *	  Only the query's owner (or a role with its privileges, a superuser)
 *	  may change, drop or run it: role is the user asking.
 */
void
cq_catalog_check_owner(CqQuery *q, Oid role)
{
	if (!has_privs_of_role(role, q->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of continuous query \"%s\"", q->name)));
}
