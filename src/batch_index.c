/*-------------------------------------------------------------------------
 *
 * batch_index.c
 *	  Batch 0's bulk path (batch.c): the indexes of pg_cq's own tables and
 *	  of an update query's target dropped before a load into empty tables
 *	  and built again after it, sorted, then the loaded tables analyzed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/comment.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/ruleutils.h"

#include "batch_index.h"
#include "security.h"
#include "sql_builder.h"
#include "state.h"

/*
 * drop_indexes
 *	  Drop the indexes of pg_cq's own table relid (a state table or a
 *	  table of DISTINCT pairs) and return their definitions, to be built
 *	  again by cq_batch_build_indexes once the table is loaded: a bulk load then a
 *	  sorted index build costs much less than an index insert per row in
 *	  hash order (issue 12 goal 2).  Both run in the batch's transaction,
 *	  so a failed batch leaves the indexes as they were; the DROP locks the
 *	  table until the batch commits (batches of a query are serialized by
 *	  its catalog row lock anyway).  Only if that lock is free at once (a
 *	  reader such as pg_dump holding the table makes the batch keep its
 *	  indexes rather than wait).  Appends to defs.
 */
static List *
drop_indexes(Oid relid, List *defs)
{
	Relation	rel;
	List	   *indexes;
	List	   *names = NIL;
	ListCell   *lc;

	if (!OidIsValid(relid) || !ConditionalLockRelationOid(relid, AccessExclusiveLock))
		return defs;
	rel = table_open(relid, NoLock);
	indexes = RelationGetIndexList(rel);
	table_close(rel, NoLock);
	foreach(lc, indexes)
	{
		Oid			idx = lfirst_oid(lc);

		defs = lappend(defs, pg_get_indexdef_string(idx));
		names = lappend(names, quote_qualified_identifier(get_namespace_name(get_rel_namespace(idx)),
														  get_rel_name(idx)));
	}
	foreach(lc, names)
		cq_spi_exec(psprintf("DROP INDEX %s", (char *) lfirst(lc)), SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	return defs;
}

/*
 * cq_batch_unindex_state
 *	  Before a fold into an empty state with plain INSERTs (batch 0 over
 *	  history, a rebuild of lost unlogged state): drop the indexes of the
 *	  state and of its table of DISTINCT pairs; returns their definitions
 *	  for cq_batch_build_indexes.  Not for deduplication, whose statements rely on
 *	  its unique index.  Internal objects of cq_state: as superuser (the
 *	  owner may not create in that schema).
 */
List *
cq_batch_unindex_state(CqQuery *q, CqAnalysis *an)
{
	List	   *defs = NIL;
	CqSecurity	sec;

	if (!an->is_aggregate || an->is_dedup || !OidIsValid(q->state_table))
		return NIL;
	cq_security_superuser(&sec);
	defs = drop_indexes(q->state_table, defs);
	if (an->distinct_sets)
		defs = drop_indexes(get_relname_relid(psprintf("sd_%d", q->id),
											  get_namespace_oid("cq_state", false)),
							defs);
	cq_security_restore(&sec);
	return defs;
}

/*
 * cq_batch_unindex_target
 *	  Batch 0 over history of an update query with GROUP BY writes every
 *	  group to the empty target with a plain INSERT (sink.c): drop the
 *	  target's index on its keys for that load too, and return its
 *	  definition for cq_batch_build_indexes_as_user.  Only when the target is a
 *	  plain table in the state pg_cq made it, with its one index (not
 *	  backing a constraint, not the replica identity, not clustered, no
 *	  comment: nothing a rebuild from its definition would lose), which
 *	  the current user (the query's owner) owns and may create in, and
 *	  only if its lock is free now: the DROP then holds the target until
 *	  the batch commits (readers of the empty target wait for the full
 *	  one), but never queues behind a reader.  Otherwise nothing changes.
 */
List *
cq_batch_unindex_target(CqQuery *q, CqAnalysis *an)
{
	Relation	rel;
	List	   *indexes;
	Oid			idx;
	Oid			target = q->target;
	bool		ok;

	if (q->opts.mode != CQ_MODE_UPDATE || an->group_exprs == NIL || !OidIsValid(target) ||
		get_rel_relkind(target) != RELKIND_RELATION ||
		!pg_class_ownercheck(target, GetUserId()) ||
		pg_namespace_aclcheck(get_rel_namespace(target), GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		return NIL;
	/* the lock the batch's INSERT takes anyway, then the upgrade only if free */
	rel = table_open(target, RowExclusiveLock);
	indexes = RelationGetIndexList(rel);
	ok = list_length(indexes) == 1 && !OidIsValid(rel->rd_replidindex);
	table_close(rel, NoLock);
	if (!ok)
		return NIL;
	idx = linitial_oid(indexes);
	if (OidIsValid(get_index_constraint(idx)) || GetComment(idx, RelationRelationId, 0) != NULL ||
		get_index_isclustered(idx) || !get_index_isvalid(idx) ||
		!ConditionalLockRelationOid(target, AccessExclusiveLock))
		return NIL;
	return drop_indexes(target, NIL);
}

/*
 * build_index
 *	  Run one index definition of drop_indexes, its sort within the
 *	  batch's memory budget: maintenance_work_mem = work_mem (which
 *	  cq.work_mem set), as the plain GROUP BY of the query would have.  A
 *	  larger budget made it slower, not faster, where memory a process
 *	  touches for the first time is expensive: building the index of a
 *	  million-row state took 1.7 s of CPU with 256MB, sorting in memory
 *	  (17,000 page faults), and 0.9-1.2 s with 4MB, sorting on disk (3,700;
 *	  bench/README.md, "Fold efficiency").  Replaces SPI_tuptable.
 */
static void
build_index(const char *def)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("maintenance_work_mem", psprintf("%d", Max(work_mem, 1024)),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	cq_spi_exec(def, SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nest);
}

/*
 * cq_batch_build_indexes_as_user
 *	  Build the indexes cq_batch_unindex_target dropped, as the current user.
 *	  Replaces SPI_tuptable.
 */
void
cq_batch_build_indexes_as_user(List *defs)
{
	ListCell   *lc;

	foreach(lc, defs)
		build_index((char *) lfirst(lc));
}

/*
 * cq_batch_build_indexes
 *	  Build the indexes cq_batch_unindex_state dropped (as superuser, see there).
 *	  Replaces SPI_tuptable.
 */
void
cq_batch_build_indexes(List *defs)
{
	ListCell   *lc;
	CqSecurity	sec;

	if (defs == NIL)
		return;
	cq_security_superuser(&sec);
	foreach(lc, defs)
		build_index((char *) lfirst(lc));
	cq_security_restore(&sec);
}

/*
 * cq_batch_analyze_loaded
 *	  After batch 0's load: ANALYZE the state table (as superuser, see
 *	  cq_batch_unindex_state) when its indexes were rebuilt (state), and the target
 *	  when its index was (target: cq_batch_unindex_target or the direct load built
 *	  it, the owner's table then), so that
 *	  the next batches are planned for their real sizes.  Without it the
 *	  state's index on the key hash was estimated to return 0.5% of the
 *	  rows per value (no statistics yet), and each group of a batch probed
 *	  the state with a bitmap scan: a batch of 200,000 rows into 180,000 of
 *	  a million groups took 11.3 s of CPU, 7.0 s with the statistics
 *	  (bench/README.md, "Fold efficiency").  Autovacuum would analyze them
 *	  too, but only after batches already planned without.
 *
 *	  What the batches need is the tables' sizes and that the key hash
 *	  (the state's column h, the target's index expression) is nearly
 *	  unique: a sample of 3,000 rows (default_statistics_target = 10, for
 *	  columns without a target of their own) tells that as well as
 *	  ANALYZE's default 30,000, and a state keyed by h is analyzed on h
 *	  alone.  ANALYZE sorted 30,000 values of each column (numeric partial
 *	  aggregates among them): 13% of the instructions of batch 0 at
 *	  200,000 groups (bench/README.md, "Fold efficiency").  Autovacuum's
 *	  next ANALYZE uses the usual target.  Replaces SPI_tuptable.
 */
void
cq_batch_analyze_loaded(CqQuery *q, CqAnalysis *an, bool state, bool target)
{
	CqSecurity	sec;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("default_statistics_target", "10", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (state)
	{
		cq_security_superuser(&sec);
		cq_spi_exec(psprintf("ANALYZE %s%s", cq_sql_relname_str(q->state_table),
							 an->hash_keys ? " (" CQ_KEY_HASH_COLUMN ")" : ""),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		cq_security_restore(&sec);
	}
	if (target)
		cq_spi_exec(psprintf("ANALYZE %s", cq_sql_relname_str(q->target)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	AtEOXact_GUC(true, nest);
}
