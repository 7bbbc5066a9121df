/*-------------------------------------------------------------------------
 *
 * truncate.c
 *	  TRUNCATE of a table that continuous queries read as their source.
 *
 * Sources are append-only for pg_cq: a batch reads the rows that became
 * visible since the last offset, and a lost unlogged state is rebuilt from
 * the source rows the last offset covers (DESIGN.md "State").  TRUNCATE
 * breaks both silently: the targets keep the results of the removed rows,
 * and a later rebuild would forget them for groups and windows that are
 * still open.  So TRUNCATE of a source with continuous queries is refused,
 * unless cq.allow_source_truncate is on: then the targets keep the results
 * of the truncated rows, queries go on with the rows inserted afterwards,
 * and docs/guarantees.md says what a later crash-rebuild of unlogged state
 * forgets (cq.reset starts a query over from what is left).
 *
 * A table that is also the target of a query (chained queries) may always
 * be truncated: pg_cq itself truncates targets (complete mode, cq.reset).
 * A partition of a partitioned source is part of that source.
 *
 * The check runs in the object-access hook (OAT_TRUNCATE), called for every
 * relation a TRUNCATE empties, cascaded ones included, in the truncating
 * transaction, before core checks that the caller may truncate the table:
 * tables it may not truncate are left to core.  Tables without the
 * tracking column are never looked up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

#include "truncate.h"
#include "citus.h"
#include "guc.h"
#include "security.h"
#include "catalog.h"
#include "sql_builder.h"
#include "tracking.h"

static object_access_hook_type prev_object_access = NULL;

/*
 * queries_reading
 *	  Names of the queries whose source is relid, as "a", "b" (NULL if
 *	  none), unless relid is also a query's target.  As superuser: every
 *	  query counts, whoever owns it.
 */
static char *
queries_reading(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *names = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	CqSecurity	sec;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_security_superuser(&sec);
	/* since 0.2 the second stream of a join (join_source) is a source too */
	cq_spi_exec(psprintf("SELECT pg_catalog.string_agg(pg_catalog.quote_ident(name), ', ' ORDER BY name) "
						 "FROM cq.queries WHERE (source OPERATOR(pg_catalog.=) $1::pg_catalog.regclass%s) "
						 "AND NOT EXISTS (SELECT 1 FROM cq.queries "
						 "                WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass)",
						 cq_catalog_version() >= CQ_CATALOG_0_2 ?
						 " OR join_source OPERATOR(pg_catalog.=) $1::pg_catalog.regclass" : ""),
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 1)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (v != NULL)
			names = MemoryContextStrdup(cxt, v);
	}
	SPI_finish();
	return names;
}

/*
 * cq_truncate_object_access
 *	  OAT_TRUNCATE of a tracked source with continuous queries: refuse,
 *	  unless cq.allow_source_truncate is on.
 */
static void
cq_truncate_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	Oid			ext;
	char	   *names;

	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);

	if (access != OAT_TRUNCATE || classId != RelationRelationId)
		return;
	if (!IsTransactionState() || cq_source_tracking_attnum(objectId) == InvalidAttrNumber)
		return;
	/* on a Citus worker, whose catalog knows no queries (citus.c) */
	cq_citus_check_truncate(objectId);
	if (cq_allow_source_truncate)
		return;
	/*
	 * Core checks the caller's right to truncate after this hook: a table
	 * it may not truncate is refused next.  (Not so for a partition or an
	 * inheritance child: core checks only the rights on the table named.)
	 */
	if (pg_class_aclcheck(objectId, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK &&
		!get_rel_relispartition(objectId) && !has_superclass(objectId))
		return;
	ext = get_extension_oid("pg_cq", true);
	if (!OidIsValid(ext) || (creating_extension && CurrentExtensionObject == ext))
		return;

	/* a partition of a partitioned source is part of that source */
	names = queries_reading(objectId);
	if (names == NULL && get_rel_relispartition(objectId))
	{
		ListCell   *lc;

		foreach(lc, get_partition_ancestors(objectId))
		{
			if ((names = queries_reading(lfirst_oid(lc))) != NULL)
				break;
		}
	}
	if (names == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("cannot truncate \"%s\" because continuous queries read it as their source",
					get_rel_name(objectId)),
			 errdetail("Continuous queries over it: %s.  Their sources are append-only: "
					   "the targets would keep the results of the removed rows.", names),
			 errhint("Drop the queries, or set cq.allow_source_truncate to on "
					 "(then use cq.reset to start a query over from the rows that are left).")));
}

/*
 * cq_truncate_init
 *	  Install the hook; called from _PG_init.
 */
void
cq_truncate_init(void)
{
	prev_object_access = object_access_hook;
	object_access_hook = cq_truncate_object_access;
}
