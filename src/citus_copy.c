/*-------------------------------------------------------------------------
 *
 * citus_copy.c
 *	  Citus reference tables and Citus local tables as sources (issue 14,
 *	  docs/scale-out.md, "Reference tables and Citus local tables").
 *
 * Such a table has a copy (a shard placement) on the coordinator: a
 * reference table once the coordinator is in Citus' metadata (group 0), a
 * Citus local table always (its one shard).  A batch reads that copy, by
 * its shard table's name, as a plain local table, with the coordinator's
 * one-server offsets: its stamp trigger (tracking.c, per node as for
 * distributed tables) stamps each row stored there with the coordinator's
 * transaction id, whichever node issued the write, and the coordinator's
 * part of a two-phase commit becomes visible there exactly when the
 * coordinator's snapshots see its id as finished.  Every batch reads the
 * same copy, so every row is read once: the one-server argument.
 *
 * The copy a query began with is recorded (cq.queries.read_relation); a
 * batch fails when it is gone (the coordinator removed from the metadata)
 * or was replaced (added again: the new copy holds rows stamped elsewhere,
 * which the coordinator's offsets cannot judge).  Citus' table conversions
 * (undistribute_table, alter_distributed_table, create_distributed_table
 * of a Citus local table) replace the table and drop the old one with
 * CASCADE, which drops its queries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"

#include "citus_copy.h"
#include "citus.h"
#include "catalog.h"
#include "security.h"
#include "sql_builder.h"

/*
 * recorded_copy
 *	  The copy query id began to read (cq.queries.read_relation), or
 *	  InvalidOid.  Caller has SPI connected.
 */
static Oid
recorded_copy(int32 id)
{
	char	   *value;

	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return InvalidOid;
	value = cq_catalog_query_value(id, "read_relation");
	return value ? atooid(value) : InvalidOid;
}

/*
 * record_copy
 *	  Record the copy query id reads (cq.queries.read_relation).  Caller
 *	  has SPI connected.
 */
static void
record_copy(int32 id, Oid copy)
{
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		values[2] = {Int32GetDatum(id), ObjectIdGetDatum(copy)};
	CqSecurity	sec;

	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return;
	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET read_relation = $2 WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * citus_catalog_scan
 *	  Open Citus' catalog table pg_catalog.<name> and begin a heap scan of
 *	  the rows whose column col equals value (an int8 or oid column); NULL
 *	  (*rel unset) when Citus has no such table or column.
 */
static SysScanDesc
citus_catalog_scan(const char *name, const char *col, Datum value, Relation *rel, AttrNumber *att)
{
	Oid			relid = get_relname_relid(name, PG_CATALOG_NAMESPACE);
	ScanKeyData key;
	Oid			type;

	if (!OidIsValid(relid))
		return NULL;
	*rel = table_open(relid, AccessShareLock);
	*att = attnameAttNum(*rel, col, false);
	if (*att == InvalidAttrNumber)
	{
		table_close(*rel, AccessShareLock);
		return NULL;
	}
	type = TupleDescAttr(RelationGetDescr(*rel), *att - 1)->atttypid;
	ScanKeyInit(&key, *att, BTEqualStrategyNumber, type == INT8OID ? F_INT8EQ : F_OIDEQ, value);
	return systable_beginscan(*rel, InvalidOid, false, NULL, 1, &key);
}

/*
 * source_shard
 *	  The shard id of a reference table or Citus local table (its only
 *	  shard), or 0.
 */
static int64
source_shard(Oid source)
{
	Relation	rel;
	AttrNumber	att;
	SysScanDesc scan = citus_catalog_scan("pg_dist_shard", "logicalrelid", ObjectIdGetDatum(source), &rel, &att);
	HeapTuple	tup;
	int64		shardid = 0;

	if (scan == NULL)
		return 0;
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		AttrNumber	id_att = attnameAttNum(rel, "shardid", false);
		bool		isnull;

		if (id_att != InvalidAttrNumber)
			shardid = DatumGetInt64(heap_getattr(tup, id_att, RelationGetDescr(rel), &isnull));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return shardid;
}

/*
 * placed_on_coordinator
 *	  Has shard shardid a placement in group 0 (the coordinator)?
 */
static bool
placed_on_coordinator(int64 shardid)
{
	Relation	rel;
	AttrNumber	att;
	SysScanDesc scan = citus_catalog_scan("pg_dist_placement", "shardid", Int64GetDatum(shardid), &rel, &att);
	AttrNumber	group_att;
	HeapTuple	tup;
	bool		found = false;

	if (scan == NULL)
		return false;
	group_att = attnameAttNum(rel, "groupid", false);
	while (!found && group_att != InvalidAttrNumber && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;

		found = DatumGetInt32(heap_getattr(tup, group_att, RelationGetDescr(rel), &isnull)) == 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * shard_table
 *	  The shard table of source's shard shardid on this node, in the
 *	  source's schema, InvalidOid if absent: named <table>_<shardid>, or,
 *	  when that is too long, as Citus' shard_name(regclass, bigint) says
 *	  (Citus shortens long names with a hash).
 */
static Oid
shard_table(Oid source, int64 shardid)
{
	char	   *name = psprintf("%s_" INT64_FORMAT, get_rel_name(source), shardid);

	if (strlen(name) >= NAMEDATALEN)
	{
		Oid			types[2] = {REGCLASSOID, INT8OID};
		Datum		values[2] = {ObjectIdGetDatum(source), Int64GetDatum(shardid)};
		List	   *names;

		if (SPI_connect() != SPI_OK_CONNECT ||
			SPI_execute_with_args("SELECT pg_catalog.shard_name($1, $2)", 2, types, values, NULL,
								  true, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "pg_cq: shard_name() of shard " INT64_FORMAT " failed", shardid);
		names = stringToQualifiedNameList(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		name = pstrdup(strVal(llast(names)));
		SPI_finish();
	}
	return get_relname_relid(name, get_rel_namespace(source));
}

/*
 * cq_citus_copy_relation
 *	  The coordinator's copy of a reference table or Citus local table: the
 *	  table of its shard placed in group 0.  Without one, an error saying
 *	  how to give the coordinator a copy, or InvalidOid if missing_ok.
 *	  InvalidOid for any other table.
 */
Oid
cq_citus_copy_relation(Oid source, bool missing_ok)
{
	CqCitusKind kind = cq_citus_kind(source);
	int64		shardid;
	Oid			copy = InvalidOid;

	if (kind != CQ_CITUS_REFERENCE && kind != CQ_CITUS_LOCAL)
		return InvalidOid;
	shardid = source_shard(source);
	if (shardid != 0 && placed_on_coordinator(shardid))
		copy = shard_table(source, shardid);
	if (!OidIsValid(copy) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the Citus coordinator has no copy of %s \"%s\"",
						kind == CQ_CITUS_REFERENCE ? "reference table" : "Citus local table",
						get_rel_name(source)),
				 errdetail("A continuous query over a reference table or a Citus local table reads the coordinator's own copy of it (its shard placed in node group 0), stamped with the coordinator's transaction ids."),
				 errhint(kind == CQ_CITUS_REFERENCE ?
						 "Add the coordinator to Citus' metadata, SELECT citus_set_coordinator_host('host', port), which copies reference tables to it; then create the query." :
						 "See docs/scale-out.md.")));
	return copy;
}

/*
 * check_foreign_stamps
 *	  The coordinator's copy may hold rows stamped on other nodes: copied
 *	  with their stamps when the copy was made (the coordinator added to
 *	  the metadata after they were written).  One stamped with an id below
 *	  the coordinator's current xmin is judged old and committed by every
 *	  later snapshot of the coordinator, as it is (history for
 *	  starting = earliest, never new for latest); one at or above it could
 *	  be taken for a new row of the coordinator later.  A query is not
 *	  created while such rows exist.  Caller has SPI connected.
 */
static void
check_foreign_stamps(Oid source, Oid copy)
{
	CqSecurity	sec;
	char	   *max = NULL;

	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT pg_catalog.max(cq_xid)::pg_catalog.text, "
						 "pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())::pg_catalog.text "
						 "FROM ONLY %s WHERE cq_node OPERATOR(pg_catalog.<>) cq.node_id() "
						 "AND cq_xid OPERATOR(pg_catalog.>=) pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())",
						 cq_sql_relname_str(copy)),
				SPI_OK_SELECT, 0, NULL, NULL, NULL);
	if (SPI_processed == 1)
		max = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (max != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the coordinator's copy of \"%s\" holds rows stamped on other nodes with transaction ids the coordinator has not passed",
						get_rel_name(source)),
				 errdetail("The copy was made from another node's copy after those rows were written there (the coordinator added to the metadata later); they keep that node's stamps, up to %s, and the coordinator's own transaction ids are at %s.  A batch judges the copy's rows by the coordinator's snapshots, which could take them for new rows.",
						   max, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errhint("Create the query once the coordinator's transaction ids (pg_current_xact_id()) have passed %s.", max)));
	cq_security_restore(&sec);
}

/*
 * cq_citus_copy_start
 *	  A query over source was created: record the copy its batches read
 *	  (nothing for other sources), which must not hold rows stamped on
 *	  other nodes that the coordinator's snapshots cannot judge.  Caller
 *	  has SPI connected.
 */
void
cq_citus_copy_start(Oid source, int32 id)
{
	Oid			copy = cq_citus_copy_relation(source, true);

	if (!OidIsValid(copy))
		return;
	check_foreign_stamps(source, copy);
	record_copy(id, copy);
}

/*
 * cq_citus_read_relation
 *	  The relation a batch of query id (name) reads for source: the source
 *	  itself, or the coordinator's copy of a reference table or Citus local
 *	  table, which must be the copy the query began with.  An error when
 *	  that copy is gone or was replaced, or when the source became such a
 *	  table after the query began.  Caller has SPI connected.
 */
Oid
cq_citus_read_relation(Oid source, int32 id, const char *name)
{
	CqCitusKind kind;
	Oid			recorded;
	Oid			copy;

	if (!OidIsValid(source) || !OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return source;
	kind = cq_citus_kind(source);

	/*
	 * Only these kinds have a recorded copy: Citus' conversions to another
	 * kind (undistribute_table, alter_distributed_table,
	 * create_distributed_table) replace the table and drop its queries.
	 */
	if (kind != CQ_CITUS_REFERENCE && kind != CQ_CITUS_LOCAL)
		return source;
	recorded = recorded_copy(id);
	copy = cq_citus_copy_relation(source, true);
	if (OidIsValid(copy) && copy == recorded)
		return copy;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg(!OidIsValid(recorded) ?
					"source \"%s\" of continuous query \"%s\" became a Citus reference table or Citus local table after the query began to read it" :
					!OidIsValid(copy) ?
					"the coordinator's copy of source \"%s\" of continuous query \"%s\" is gone" :
					"the coordinator's copy of source \"%s\" of continuous query \"%s\" was replaced",
					get_rel_name(source), name),
			 errdetail("Batches read the coordinator's own copy (shard) of a reference table or Citus local table, with the coordinator's offsets; %s",
					   !OidIsValid(recorded) ?
					   "this query's offsets were taken over the table itself." :
					   !OidIsValid(copy) ?
					   "it was dropped (the coordinator removed from Citus' metadata)." :
					   "a new copy holds rows stamped on other nodes, which those offsets cannot judge."),
			 errhint("Drop and recreate the continuous query.")));
	return InvalidOid;			/* keep the compiler quiet */
}
