/*-------------------------------------------------------------------------
 *
 * restore.c
 *	  Continuous queries restored from a dump into another cluster.
 *
 * pg_dump saves the definitions (cq.queries is an extension configuration
 * table), the targets, the sources with their cq_xid values and the
 * internal objects in cq_state, but not the offsets: they are transaction
 * ids of the old cluster and mean nothing in the new one, and neither do the
 * restored cq_xid values.  A query whose cluster_id is not this cluster's is
 * therefore started over before its next batch: every restored source row
 * becomes history (cq_xid = NULL), the target and the internal objects are
 * emptied and recreated, and batch 0 recomputes the result from all rows of
 * the source.  Rows that the old cluster had dropped as late are counted this
 * time (they are not late for a batch 0).
 *
 * Runs in the batch's transaction, which holds the query's catalog row lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "utils/syscache.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/lsyscache.h"

#include "restore.h"
#include "citus_copy.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"
#include "tracking.h"
#include "objects.h"

/*
 * cq_rel_owner
 *	  The owner of a relation.
 */
Oid
cq_rel_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * restored_query_tree
 *	  The query as the restored query view q_<id> holds it.  The stored tree
 *	  names relations and functions by the old cluster's OIDs; the view was
 *	  dumped as SQL and restored with this cluster's.
 */
static char *
restored_query_tree(CqQuery *q)
{
	Oid			nsp = get_namespace_oid("cq_state", false);
	Oid			viewid = get_relname_relid(psprintf("q_%d", q->id), nsp);
	Relation	rel;
	Query	   *vq;
	ListCell   *lc;
	char	   *tree = NULL;

	if (!OidIsValid(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("cannot restore continuous query \"%s\": its query view cq_state.q_%d is missing",
						q->name, q->id),
				 errhint("Drop the query with cq.drop_query and create it again.")));
	rel = relation_open(viewid, AccessShareLock);
	vq = get_view_query(rel);
	foreach(lc, vq->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY)
		{
			tree = nodeToString(rte->subquery);
			break;
		}
	}
	relation_close(rel, AccessShareLock);
	if (tree == NULL)
		elog(ERROR, "pg_cq: query view of \"%s\" has no query", q->name);
	return tree;
}

/*
 * cq_restore_if_moved
 *	  If q was restored from another cluster, start it over and return its
 *	  reloaded catalog row; else return q.
 */
CqQuery *
cq_restore_if_moved(CqQuery *q)
{
	Oid			types[4] = {TEXTOID, TEXTOID, NAMEOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	CqSecurity	sec;
	char	   *here = cq_catalog_cluster_id();

	if (q->cluster_id != NULL && strcmp(q->cluster_id, here) == 0)
		return q;

	ereport(LOG,
			(errmsg("pg_cq: continuous query \"%s\" was restored from another cluster; starting it over",
					q->name),
			 errdetail("Its offsets are transaction ids of cluster %s.",
					   q->cluster_id ? q->cluster_id : "?")));

	/* the definition in this cluster's terms */
	cq_catalog_update_query(q->id, NULL, restored_query_tree(q));

	/*
	 * Restored rows are history (rows written here since the restore too).
	 * User code may run (triggers), so this runs as the table's owner, as
	 * emptying the target runs as the query's owner, both with a pinned
	 * search_path.
	 */
	cq_source_forget_stamps(q->source, cq_rel_owner(q->source));
	cq_security_owner(q->owner, &sec);
	cq_spi_exec(psprintf("TRUNCATE %s", cq_sql_relname_str(q->target)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);

	values[0] = CStringGetTextDatum(q->name);
	values[1] = CStringGetTextDatum(here);
	values[2] = q->schema ? DirectFunctionCall1(namein, CStringGetDatum(q->schema)) : (Datum) 0;
	nulls[2] = q->schema ? ' ' : 'n';
	values[3] = Int32GetDatum(q->id);
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("WITH o AS (DELETE FROM cq.offsets WHERE %s), "
						 "p AS (DELETE FROM cq.progress WHERE %s) "
						 "UPDATE cq.queries SET cluster_id = $2, start_offset = '" CQ_EARLIEST_OFFSET "', starting = 'earliest', "
						 "run_id = pg_catalog.gen_random_uuid(), state = 'active', last_error = NULL "
						 "WHERE id OPERATOR(pg_catalog.=) $4",
						 cq_catalog_rows_of("offsets", 1, 3), cq_catalog_rows_of("progress", 1, 3)),
				SPI_OK_UPDATE, 4, types, values, nulls);
	cq_security_restore(&sec);
	/* a Citus reference or local source: the copy in this cluster (citus_copy.c) */
	cq_citus_copy_start(q->source, q->id);
	CommandCounterIncrement();

	q = cq_catalog_get_query_by_id(q->id, false, true);
	cq_objects_recreate(q);
	CommandCounterIncrement();
	return cq_catalog_get_query_by_id(q->id, false, true);
}
