/*-------------------------------------------------------------------------
 *
 * tracking.c
 *	  Tracking a source: the cq_xid column, its BRIN index, the stamp
 *	  trigger and the wake-up trigger (summarize.c keeps the index
 *	  summarized).
 *
 * Tracking adds one column, cq_xid xid8 (or cq.xid48, cq.stamp_type), whose
 * default is the inserting transaction's id; rows that existed before are
 * NULL ("history").  Both types hold the same values; the code reads the
 * column's type (xid8 by value, cq.xid48 by reference: stamp_type.h).  The row
 * trigger zz_cq_stamp (cq_stamp) makes sure of that id whatever a writer
 * gave the column, on every table whose rows reach the source, and keeps
 * UPDATEs from changing it.  Tracking changes tables only with their
 * owner's rights.  A batch reads the rows whose cq_xid lies between two
 * offsets (offsets.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_revmap.h"
#include "access/brin_tuple.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"
#include "utils/memutils.h"

#include "tracking.h"
#include "horizon.h"
#include "wakeup.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"
#include "stamp_type.h"
#include "citus.h"

PG_FUNCTION_INFO_V1(cq_stamp);

/* true while pg_cq drops a stamp trigger itself (stamp.c lets it) */
static bool stamp_ddl_allowed = false;

/*
 * cq_source_tracking_attnum
 *	  Attribute number of cq_xid in the source, or InvalidAttrNumber.
 */
AttrNumber
cq_source_tracking_attnum(Oid relid)
{
	return get_attnum(relid, CQ_TRACKING_COLUMN);
}

static void desummarize_last_range(Oid relid);

/*
 * has_tracking_index
 *	  Does the table have the BRIN index on cq_xid?
 */
static bool
has_tracking_index(Oid relid, AttrNumber att)
{
	Relation	heap = table_open(relid, AccessShareLock);
	bool		result = OidIsValid(cq_tracking_index(heap, att));

	table_close(heap, AccessShareLock);
	return result;
}

/*
 * cq_tracking_trigger_function
 *	  OID of the trigger function cq.<name>(), or InvalidOid when the
 *	  installed catalog has none (cq.stamp came with catalog 0.2).
 */
Oid
cq_tracking_trigger_function(const char *name)
{
	return cq_catalog_function(name, 0, NULL);
}

/*
 * cq_tracking_has_trigger
 *	  Does the table have a trigger (of its own or cloned from a partitioned
 *	  parent) that calls function func?  A trigger its owner disabled still
 *	  counts: pg_cq does not override that choice.
 */
bool
cq_tracking_has_trigger(Oid relid, Oid func)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	bool		found = false;

	if (rel->trigdesc)
		for (int i = 0; i < rel->trigdesc->numtriggers && !found; i++)
			found = rel->trigdesc->triggers[i].tgfoid == func;
	relation_close(rel, AccessShareLock);
	return found;
}

/*
 * column_has_default
 *	  Does column att of the table have a default?
 */
static bool
column_has_default(Oid relid, AttrNumber att)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(att));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_attribute) GETSTRUCT(tup))->atthasdef;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * unstamped_children
 *	  Tables that inherit from relid (at any depth) without being
 *	  partitions and have no stamp trigger: PostgreSQL clones row triggers
 *	  to partitions only.  Rows inserted straight into such a child reach
 *	  the source too.
 */
static List *
unstamped_children(Oid relid, Oid stamp)
{
	List	   *result = NIL;
	ListCell   *lc;

	if (!OidIsValid(stamp) || !has_subclass(relid))
		return NIL;
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			child = lfirst_oid(lc);

		if (child != relid && !get_rel_relispartition(child) &&
			get_rel_relkind(child) == RELKIND_RELATION && !cq_tracking_has_trigger(child, stamp))
			result = lappend_oid(result, child);
	}
	return result;
}

/*
 * check_tracking_owner
 *	  Tracking changes a table (column, default, index, triggers): only its
 *	  owner may have that done, whoever creates the query.
 */
static void
check_tracking_owner(Oid relid, Oid source)
{
	if (!pg_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid)),
				 errdetail(relid == source ?
						   "Tracking new rows of table \"%s\" adds the column \"%s\", its index and triggers, or whichever of them it lacks." :
						   "Rows of this table reach the source \"%s\" of the query, so tracking them adds a trigger to it.",
						   get_rel_name(source), CQ_TRACKING_COLUMN),
				 errhint("Have the table's owner create the first continuous query over it.")));
}

/*
 * add_stamp_trigger
 *	  The row trigger that stamps cq_xid (see cq_stamp).  It fires even
 *	  when session_replication_role = replica (logical replication apply
 *	  included): a stamp from another transaction, or another server, is
 *	  always wrong.
 */
static void
add_stamp_trigger(Oid relid)
{
	char	   *rel = cq_sql_relname_str(relid);

	/*
	 * Two statements, not one string: Citus forwards a utility statement's
	 * whole query string to the shards, where several commands in one
	 * string are refused.
	 */
	cq_spi_exec(psprintf("CREATE TRIGGER " CQ_STAMP_TRIGGER " BEFORE INSERT OR UPDATE OR DELETE ON %s "
						 "FOR EACH ROW EXECUTE FUNCTION cq.stamp()", rel),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_spi_exec(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER " CQ_STAMP_TRIGGER, rel),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
}

/*
 * own_stamp_trigger
 *	  Does the table have a stamp trigger of its own (not cloned from a
 *	  partitioned parent)?
 */
static bool
own_stamp_trigger(Oid relid)
{
	Relation	trel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&key[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(CQ_STAMP_TRIGGER));
	scan = systable_beginscan(trel, TriggerRelidNameIndexId, true, NULL, 2, key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		found = !OidIsValid(((Form_pg_trigger) GETSTRUCT(tup))->tgparentid);
	systable_endscan(scan);
	table_close(trel, AccessShareLock);
	return found;
}

/*
 * drop_own_stamp_triggers
 *	  Before a partitioned table gets the stamp trigger, which PostgreSQL
 *	  clones to its partitions, or a table becomes a partition of one that
 *	  has it: drop the stamp triggers its partitions (or the table) have of
 *	  their own, as sources tracked before, or the clone would collide with
 *	  them.  The clone does the same.  rels are the tables to look at,
 *	  ancestors first; the current user must own them.
 */
static void
drop_own_stamp_triggers(List *rels, Oid source)
{
	ListCell   *lc;

	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);

		if (!own_stamp_trigger(relid))
			continue;
		check_tracking_owner(relid, source);
		stamp_ddl_allowed = true;
		PG_TRY();
		{
			cq_spi_exec(psprintf("DROP TRIGGER " CQ_STAMP_TRIGGER " ON %s", cq_sql_relname_str(relid)),
						SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		}
		PG_FINALLY();
		{
			stamp_ddl_allowed = false;
		}
		PG_END_TRY();
	}
}

/*
 * relation_ancestors
 *	  Every table relid inherits from, at any depth (partitions included).
 */
static List *
relation_ancestors(Oid relid)
{
	List	   *result = NIL;
	List	   *todo = list_make1_oid(relid);
	Relation	inh = table_open(InheritsRelationId, AccessShareLock);

	while (todo != NIL)
	{
		Oid			rel = linitial_oid(todo);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		todo = list_delete_first(todo);
		ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(rel));
		scan = systable_beginscan(inh, InheritsRelidSeqnoIndexId, true, NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Oid			parent = ((Form_pg_inherits) GETSTRUCT(tup))->inhparent;

			if (!list_member_oid(result, parent))
			{
				result = lappend_oid(result, parent);
				todo = lappend_oid(todo, parent);
			}
		}
		systable_endscan(scan);
	}
	table_close(inh, AccessShareLock);
	return result;
}

/*
 * cq_source_reached
 *	  The source of some continuous query that rows of relid reach: relid
 *	  itself or a table it inherits from (as a partition or not), or
 *	  InvalidOid.  Caller has SPI connected.
 */
Oid
cq_source_reached(Oid relid)
{
	ListCell   *lc;

	if (cq_catalog_relation_is_source(relid))
		return relid;
	foreach(lc, relation_ancestors(relid))
		if (cq_catalog_relation_is_source(lfirst_oid(lc)))
			return lfirst_oid(lc);
	return InvalidOid;
}

/*
 * cq_source_check_logged
 *	  A source (with every table whose rows reach it through inheritance)
 *	  or a target must be a logged table: a crash empties unlogged tables
 *	  while the offsets, the target and the catalog stay, so rows would be
 *	  lost, or counted but gone from the source.  Nor may an inheritance
 *	  child of a source be temporary (workers cannot read it) or a foreign
 *	  table (its rows live on another server: no stamp of this cluster's
 *	  transactions, no snapshot of ours orders them, and a batch's scan of
 *	  the source would read them through the wrapper, failing or counting
 *	  rows an offset cannot tell apart).  relid is the table to check, with
 *	  its descendants; source is the query's source, or InvalidOid when
 *	  relid is a target.
 */
void
cq_source_check_logged(Oid relid, Oid source)
{
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			rel = lfirst_oid(lc);
		char		persistence = get_rel_persistence(rel);

		if (persistence == RELPERSISTENCE_TEMP && OidIsValid(source) && rel != source)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s\" cannot be temporary: its rows reach the source \"%s\" of a continuous query",
							get_rel_name(rel), get_rel_name(source)),
					 errdetail("Background workers cannot read another session's temporary tables.")));
		if (get_rel_relkind(rel) == RELKIND_FOREIGN_TABLE && OidIsValid(source))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("foreign table \"%s\" cannot be a partition or child of the source \"%s\" of a continuous query",
							get_rel_name(rel), get_rel_name(source)),
					 errdetail("A continuous query reads rows stored in this database, in the order of its transactions; the rows of a foreign table are stored elsewhere."),
					 errhint("Use a local table, or load the foreign rows into the source with INSERT ... SELECT.")));
		if (persistence != RELPERSISTENCE_UNLOGGED)
			continue;
		if (!OidIsValid(source))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the target of a continuous query cannot be an unlogged table"),
					 errdetail("A crash would empty table \"%s\" while the query's offsets stay: its results would be lost for good.",
							   get_rel_name(rel)),
					 errhint("Use a logged table; the query's state is unlogged by default (cq.state_storage) and rebuilt after a crash.")));
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 rel == source ?
				 errmsg("the source of a continuous query cannot be an unlogged table") :
				 errmsg("table \"%s\" cannot be unlogged: its rows reach the source \"%s\" of a continuous query",
						get_rel_name(rel), get_rel_name(source)),
				 errdetail("A crash would empty table \"%s\" while the query's offsets stay: its rows would be counted in the target but gone from the source, or never counted.",
						   get_rel_name(rel)),
				 errhint("Use a logged table (ALTER TABLE ... SET LOGGED).")));
	}
}

/*
 * cq_source_before_attach
 *	  ALTER TABLE parent ATTACH PARTITION child, before PostgreSQL runs it:
 *	  when the parent has the stamp trigger, its clone replaces the child's
 *	  own ones.  The caller owns both tables (ATTACH requires it).  Caller
 *	  has SPI connected.
 */
void
cq_source_before_attach(Oid parent, Oid child)
{
	Oid			stamp = cq_tracking_trigger_function("stamp");

	if (!OidIsValid(stamp) || !cq_tracking_has_trigger(parent, stamp))
		return;
	drop_own_stamp_triggers(find_all_inheritors(child, NoLock, NULL), parent);
}

/*
 * cq_source_after_inherit
 *	  child has just become a partition or an inheritance child of some
 *	  table (CREATE TABLE ... PARTITION OF / INHERITS, ALTER TABLE ...
 *	  ATTACH PARTITION / INHERIT).  If its rows now reach a source, it must
 *	  be logged, and tables that are not partitions need the stamp trigger
 *	  (partitions have the clone).  Rows the child already had keep their
 *	  cq_xid: a NULL one is history, like the rows a source had when it was
 *	  first tracked (a detached and re-attached partition is not counted
 *	  twice).  Caller has SPI connected.
 */
void
cq_source_after_inherit(Oid child)
{
	Oid			source = cq_source_reached(child);
	Oid			stamp = cq_tracking_trigger_function("stamp");
	ListCell   *lc;

	if (!OidIsValid(source))
		return;
	cq_source_check_logged(child, source);
	if (!OidIsValid(stamp))
		return;
	foreach(lc, find_all_inheritors(child, NoLock, NULL))
	{
		Oid			rel = lfirst_oid(lc);

		if (get_rel_relispartition(rel) || get_rel_relkind(rel) != RELKIND_RELATION ||
			cq_source_tracking_attnum(rel) == InvalidAttrNumber || cq_tracking_has_trigger(rel, stamp))
			continue;
		check_tracking_owner(rel, source);
		add_stamp_trigger(rel);
	}
}

/*
 * add_wakeup_trigger
 *	  Give a tracked source its cq_wakeup trigger (cq_source_track found it
 *	  missing).  Created as the current user, who owns the table
 *	  (cq_source_track checked): pg_cq never changes a table with rights its
 *	  caller lacks.  Caller has SPI connected.
 */
static void
add_wakeup_trigger(Oid relid)
{
	cq_spi_exec(psprintf("CREATE TRIGGER cq_wakeup AFTER INSERT ON %s "
						 "FOR EACH STATEMENT EXECUTE FUNCTION cq.wakeup()",
						 cq_sql_relname_str(relid)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
}

/* What tracking a source needs: cq_source_track's plan. */
typedef struct TrackPlan
{
	AttrNumber	att;			/* cq_xid, or InvalidAttrNumber */
	Oid			type;			/* its type, or the type to add it with */
	char	   *rel;			/* the source, quoted */
	Oid			stamp;			/* cq.stamp(), InvalidOid on catalog 0.1 */
	Oid			wakeup;			/* cq.wakeup() */
	bool		add_column;
	bool		add_index;
	bool		add_wakeup;
	bool		add_stamp;
	bool		add_default;
	bool		fresh;			/* a column nobody stamped */
	bool		distributed;	/* a Citus table (hash, reference, local) */
	bool		per_node;		/* ... stamped where its rows are stored */
	bool		add_node;		/* add cq_node (per_node) */
	List	   *children;		/* inheriting tables without the stamp trigger */
} TrackPlan;

/*
 * plan_tracking
 *	  What the source lacks.  An existing cq_xid must be xid8 or cq.xid48;
 *	  a new one gets cq.stamp_type's type (cq_stamp_new_type).
 */
static void
plan_tracking(Oid relid, TrackPlan *tp)
{
	CqCitusKind kind;

	tp->att = cq_source_tracking_attnum(relid);
	tp->rel = cq_sql_relname_str(relid);
	tp->stamp = cq_tracking_trigger_function("stamp");
	tp->wakeup = cq_tracking_trigger_function("wakeup");
	tp->add_column = tp->att == InvalidAttrNumber;
	if (!tp->add_column)
	{
		Oid			type = get_atttype(relid, tp->att);

		if (!cq_stamp_type_ok(type))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of source \"%s\" has type %s, not xid8",
							CQ_TRACKING_COLUMN, get_rel_name(relid), format_type_be(type)),
					 errdetail("pg_cq uses that column to find new rows."),
					 errhint("Rename or drop the column.")));
		tp->type = type;
	}
	tp->add_index = tp->add_column || !has_tracking_index(relid, tp->att);
	tp->add_wakeup = tp->add_column || !cq_tracking_has_trigger(relid, tp->wakeup);
	tp->add_stamp = OidIsValid(tp->stamp) && (tp->add_column || !cq_tracking_has_trigger(relid, tp->stamp));
	tp->children = unstamped_children(relid, tp->stamp);
	/* a column nobody stamped: neither index nor triggers, and no query reads it */
	tp->fresh = tp->add_column ||
		(tp->add_index && tp->add_wakeup && (tp->add_stamp || !OidIsValid(tp->stamp)) &&
		 !cq_catalog_relation_is_source(relid));
	/* without the stamp trigger (catalog 0.1) the default is all there is */
	tp->add_default = tp->fresh || (!OidIsValid(tp->stamp) && !column_has_default(relid, tp->att));
	kind = cq_citus_kind(relid);
	tp->distributed = kind != CQ_CITUS_NONE;
	if (tp->add_column)
		tp->type = cq_stamp_new_type(tp->distributed);
	else if (tp->distributed && tp->type != XID8OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of Citus table \"%s\" has type %s, not xid8",
						CQ_TRACKING_COLUMN, get_rel_name(relid), format_type_be(tp->type)),
				 errdetail("pg_cq stamps Citus tables with xid8 only."),
				 errhint("Drop the column; pg_cq adds it again.")));
	/*
	 * Stamped per node (citus.c, offsets.c): a distributed table tracked
	 * now, or one that already has cq_node.  Its cq_xid has no default
	 * (the shards' trigger stamps every new row, so the write-path shortcut
	 * of stamp.c, which skips the trigger for the canonical default, never
	 * applies); cq_node's default 0 marks a row to stamp.  A reference
	 * table or a Citus local table always (whatever cq.citus_per_node
	 * says): batches read the coordinator's copy, which only the copy's
	 * own trigger stamps with the coordinator's ids (citus_copy.c).
	 */
	tp->per_node = tp->distributed &&
		(cq_citus_node_stamped(relid) || (tp->fresh && cq_citus_per_node_available()) ||
		 kind == CQ_CITUS_REFERENCE || kind == CQ_CITUS_LOCAL);
	tp->add_node = tp->per_node && !cq_citus_node_stamped(relid);
	if (tp->per_node)
		tp->add_default = tp->add_node;
	else if (tp->distributed && !tp->add_column && !tp->add_default)
	{
		/* distributed after it was tracked: the coordinator stamps now */
		Relation	rel = relation_open(relid, AccessShareLock);

		tp->add_default = !cq_citus_coordinator_default(rel, tp->att);
		relation_close(rel, AccessShareLock);
	}
}

/*
 * clear_unstamped
 *	  A fresh column that existed before: its values, which pg_cq did not
 *	  stamp, are cleared (history).
 */
static void
clear_unstamped(Oid relid, Oid stamp)
{
	ListCell   *lc;

	/*
	 * SET DEFAULT took ACCESS EXCLUSIVE: no insert is in progress.  Each
	 * table of the tree on its own: one that has the stamp trigger
	 * (tracked on its own before) holds valid stamps only.
	 */
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			leaf = lfirst_oid(lc);

		if (get_rel_relkind(leaf) != RELKIND_RELATION ||
			(OidIsValid(stamp) && cq_tracking_has_trigger(leaf, stamp)))
			continue;
		check_tracking_owner(leaf, relid);
		cq_spi_exec(psprintf("UPDATE ONLY %s SET %s = NULL WHERE %s OPERATOR(pg_catalog.>=) "
							 "pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())",
							 cq_sql_relname_str(leaf), CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN),
					SPI_OK_UPDATE, 0, NULL, NULL, NULL);
	}
}

/*
 * stamp_default_sql
 *	  The default of cq_xid: the inserting transaction's id, as the column's
 *	  type, the coordinator's on Citus.
 */
static const char *
stamp_default_sql(TrackPlan *tp)
{
	if (tp->distributed)
		return "cq.coordinator_xact_id()";
	return tp->type == XID8OID ? "pg_catalog.pg_current_xact_id()" : "cq.current_xid48()";
}

/*
 * add_tracking
 *	  Add what plan_tracking found missing.
 */
static void
add_tracking(Oid relid, TrackPlan *tp)
{
	ListCell   *lc;
	int			nest = -1;

	/*
	 * Citus forwards each statement to the shards; it refuses triggers on
	 * distributed tables unless told they are safe.  Ours are: the stamp
	 * trigger keeps the coordinator's stamp on the shards (cq_stamp), and
	 * cq_wakeup only notes the table on the node it fires on.
	 */
	if (tp->distributed)
		nest = cq_citus_guc_begin("citus.enable_unsafe_triggers", "on");
	if (tp->add_column)
		cq_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s %s", tp->rel, CQ_TRACKING_COLUMN,
							 format_type_be_qualified(tp->type)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	if (tp->add_node)
	{
		/* ADD COLUMN then SET DEFAULT: existing rows keep NULL (history) */
		cq_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s pg_catalog.int8", tp->rel, CQ_NODE_COLUMN),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		cq_spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT '0'::pg_catalog.int8",
							 tp->rel, CQ_NODE_COLUMN),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		if (!tp->add_column)
			cq_spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", tp->rel, CQ_TRACKING_COLUMN),
						SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	}
	/* ADD COLUMN then SET DEFAULT: no rewrite, existing rows stay NULL */
	else if (tp->add_default)
		cq_spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s",
							 tp->rel, CQ_TRACKING_COLUMN, stamp_default_sql(tp)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	if (tp->fresh && !tp->add_column)
		clear_unstamped(relid, tp->stamp);

	/*
	 * No autosummarize: each batch summarizes the full ranges it is about
	 * to read (cq_source_summarize), and with small ranges autosummarize
	 * floods autovacuum's work-item queue under bulk inserts (a LOG line
	 * "request for BRIN range summarization ... was not recorded" per
	 * range once it is full) and runs summarization concurrently with the
	 * writers, for nothing.
	 */
	if (tp->add_index)
	{
		cq_spi_exec(psprintf("CREATE INDEX ON %s USING brin (%s %s) "
							 "WITH (pages_per_range = %d)",
							 tp->rel, CQ_TRACKING_COLUMN,
							 tp->type == XID8OID ? "cq.xid8_minmax_ops" : "cq.xid48_minmax_ops",
							 CQ_BRIN_PAGES_PER_RANGE),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		desummarize_last_range(relid);
	}
	if (tp->add_wakeup)
		add_wakeup_trigger(relid);
	if (tp->add_stamp)
	{
		if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
			drop_own_stamp_triggers(list_delete_first(find_all_inheritors(relid, NoLock, NULL)), relid);
		add_stamp_trigger(relid);
	}
	foreach(lc, tp->children)
		add_stamp_trigger(lfirst_oid(lc));
	cq_citus_guc_end(nest);
}

/*
 * report_tracking
 *	  The NOTICE saying what tracking added.
 */
static void
report_tracking(Oid relid, TrackPlan *tp)
{
	const char *dflt = tp->distributed ? "cq.coordinator_xact_id()" :
		tp->type == XID8OID ? "pg_current_xact_id()" : "cq.current_xid48()";
	const char *type = tp->type == XID8OID ? "xid8" : "cq.xid48";

	if (tp->add_node)
		ereport(NOTICE,
				(errmsg("pg_cq now tracks new rows of distributed table \"%s\"", get_rel_name(relid)),
				 errdetail("%s column \"%s\" bigint DEFAULT 0, a BRIN index on \"%s\", the statement trigger cq_wakeup and the row trigger %s, which stamps each new row on the node that stores it with that node's transaction id and identity; existing rows are history.",
						   tp->add_column ? "Added column \"" CQ_TRACKING_COLUMN "\" xid8 and" : "Added",
						   CQ_NODE_COLUMN, CQ_TRACKING_COLUMN, CQ_STAMP_TRIGGER)));
	else if (tp->add_column)
		ereport(NOTICE,
				(errmsg("pg_cq now tracks new rows of table \"%s\"", get_rel_name(relid)),
				 OidIsValid(tp->stamp) ?
				 errdetail("Added column \"%s\" %s DEFAULT %s, a BRIN index on it, the statement trigger cq_wakeup and the row trigger %s; existing rows keep NULL.",
						   CQ_TRACKING_COLUMN, type, dflt, CQ_STAMP_TRIGGER) :
				 errdetail("Added column \"%s\" %s DEFAULT %s, a BRIN index on it and the statement trigger cq_wakeup; existing rows keep NULL.",
						   CQ_TRACKING_COLUMN, type, dflt)));
	else if (tp->fresh)
		ereport(NOTICE,
				(errmsg("pg_cq now tracks new rows of table \"%s\"", get_rel_name(relid)),
				 errdetail("Its column \"%s\" now has DEFAULT %s, a BRIN index and pg_cq's triggers; existing rows are history (values pg_cq did not stamp were cleared).",
						   CQ_TRACKING_COLUMN, dflt)));
	else
	{
		StringInfoData added;

		initStringInfo(&added);
		if (tp->add_default)
			appendStringInfo(&added, ", the default %s of \"%s\"", dflt, CQ_TRACKING_COLUMN);
		if (tp->add_index)
			appendStringInfo(&added, ", the BRIN index on \"%s\"", CQ_TRACKING_COLUMN);
		if (tp->add_wakeup)
			appendStringInfoString(&added, ", the statement trigger cq_wakeup");
		if (tp->add_stamp)
			appendStringInfoString(&added, ", the row trigger " CQ_STAMP_TRIGGER);
		if (tp->children != NIL)
			appendStringInfo(&added, ", the row trigger " CQ_STAMP_TRIGGER " on %d inheriting table(s)",
							 list_length(tp->children));
		ereport(NOTICE,
				(errmsg("pg_cq added what tracking table \"%s\" lacked", get_rel_name(relid)),
				 errdetail("Added %s.", added.data + 2)));
	}
}

/*
 * cq_source_track
 *	  Make sure the source is tracked: the column cq_xid xid8 DEFAULT
 *	  pg_current_xact_id(), a BRIN index on it, the statement trigger
 *	  cq_wakeup and (catalog 0.2) the row trigger zz_cq_stamp, on the table
 *	  and on any table inheriting from it.  Whatever is missing is added as
 *	  the current user, who must own the tables changed; a source that has
 *	  everything needs nothing of its caller (SELECT on it was checked
 *	  before).
 *
 *	  A cq_xid column that existed before tracking began (made by the user,
 *	  or left by an earlier installation of pg_cq) holds values pg_cq did
 *	  not stamp: rows present now are history, so a value that is not an
 *	  already finished transaction of this cluster is cleared (a valid old
 *	  stamp reads as history anyway).  Caller has SPI connected.
 */
AttrNumber
cq_source_track(Oid relid)
{
	TrackPlan	tp;
	ListCell   *lc;

	plan_tracking(relid, &tp);
	if (!tp.add_index && !tp.add_wakeup && !tp.add_stamp && !tp.add_default && tp.children == NIL)
		return tp.att;
	check_tracking_owner(relid, relid);
	foreach(lc, tp.children)
		check_tracking_owner(lfirst_oid(lc), relid);
	add_tracking(relid, &tp);
	report_tracking(relid, &tp);
	return cq_source_tracking_attnum(relid);
}

/* ---- the stamp trigger ---- */

/*
 * Row movement.  An UPDATE that moves a row to another partition fires the
 * BEFORE UPDATE and BEFORE DELETE row triggers on the old partition, then
 * the BEFORE INSERT row triggers on the new one.  Such an insert is not a
 * new row (an UPDATE is not seen by continuous queries): it keeps its
 * stamp.  The UPDATE notes the row, the DELETE of that same row confirms
 * the move, and the next insert with the same cq_xid consumes the note.
 */
typedef enum MoveState
{
	MOVE_NONE,
	MOVE_UPDATED,				/* BEFORE UPDATE ran for the row */
	MOVE_DELETED				/* ... then BEFORE DELETE of the same row */
} MoveState;

static struct
{
	MoveState	state;
	Oid			relid;
	ItemPointerData tid;
	FullTransactionId xact;
	bool		isnull;
	uint64		value;
}			moving;

/* tables whose cq_xid pg_cq itself rewrites (cq_source_forget_stamps) */
static List *stamp_bypass = NIL;

cq_stamp_first_row_hook_type cq_stamp_first_row_hook = NULL;

/* per trigger call site (FmgrInfo): where cq_xid is in the table */
typedef struct StampCache
{
	Oid			relid;
	AttrNumber	att;
	bool		byval;			/* cq_xid is xid8 (else cq.xid48, by reference) */
	bool		coordinator;	/* default cq.coordinator_xact_id(): Citus */
	AttrNumber	node_att;		/* cq_node: stamped per node (Citus), or 0 */
} StampCache;

/*
 * same_stamp
 *	  Are two cq_xid values (possibly NULL) equal?  Compared as values
 *	  (cq_stamp_get: xid8 by value, cq.xid48 by reference).
 */
static bool
same_stamp(bool byval, bool isnull1, Datum d1, bool isnull2, Datum d2)
{
	if (isnull1 || isnull2)
		return isnull1 && isnull2;
	return cq_stamp_get(d1, byval) == cq_stamp_get(d2, byval);
}

/*
 * current_stamp
 *	  The current top-level transaction's id as a cq_xid datum of the
 *	  cache's type; a cq.xid48's bytes are made once a transaction
 *	  (cq_stamp_current_bytes), not a palloc a row.
 */
static inline Datum
current_stamp(StampCache *cache)
{
	if (cache->byval)
		return FullTransactionIdGetDatum(GetTopFullTransactionId());
	return PointerGetDatum(cq_stamp_current_bytes());
}

/*
 * stamp_cache
 *	  The attribute number of cq_xid in the trigger's table, cached in
 *	  fn_extra per relation.  At an INSERT's first row of the table (a
 *	  partition rows are routed to, say), cq_stamp_first_row_hook.
 */
static StampCache *
stamp_cache(FunctionCallInfo fcinfo, Relation rel, bool insert)
{
	StampCache *cache;

	cache = (StampCache *) fcinfo->flinfo->fn_extra;
	if (cache == NULL || cache->relid != RelationGetRelid(rel))
	{
		TupleDesc	desc = RelationGetDescr(rel);

		if (cache == NULL)
			cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(StampCache));
		cache->relid = RelationGetRelid(rel);
		cache->att = InvalidAttrNumber;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute a = TupleDescAttr(desc, i);

			if (!a->attisdropped && strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN) == 0 &&
				cq_stamp_type_ok(a->atttypid))
			{
				cache->att = a->attnum;
				cache->byval = a->attbyval;
			}
		}
		cache->coordinator = cq_citus_coordinator_default(rel, cache->att);
		cache->node_att = cq_citus_node_att(rel);
		fcinfo->flinfo->fn_extra = cache;
		if (insert && cq_stamp_first_row_hook)
			cq_stamp_first_row_hook(rel);
	}
	return cache;
}

/*
 * stamp_insert
 *	  INSERT: stamp the row with the inserting transaction's id, unless it
 *	  is the second half of a row moved between partitions (it keeps its
 *	  stamp) or already carries that id.
 */
static Datum
stamp_insert(TriggerData *td, StampCache *cache)
{
	Relation	rel = td->tg_relation;
	bool		isnull;
	Datum		d;
	FullTransactionId xact;
	bool		moved;
	Datum		stamp;
	bool		nonull = false;
	int			col;

	if (cache->att == InvalidAttrNumber)
		return PointerGetDatum(td->tg_trigtuple);
	if (cache->node_att != InvalidAttrNumber)
	{
		/*
		 * A shard of a Citus distributed source stamped per node: a new row
		 * (cq_node is its default 0) gets this node's transaction id and
		 * identity, whatever node the statement was issued on and whatever
		 * cq_xid it carried.  A row with a node already set, or with NULL
		 * (history), is a copy of a stored row (a shard move or split) and
		 * keeps its stamp.  citus.c keeps other values of cq_node out of the
		 * INSERTs and COPYs issued into the distributed table.
		 */
		Datum		values[2];
		bool		nulls[2] = {false, false};
		int			cols[2];

		d = slot_getattr(td->tg_trigslot, cache->node_att, &isnull);
		if (isnull || DatumGetInt64(d) != 0)
			return PointerGetDatum(td->tg_trigtuple);
		cols[0] = cache->att;
		values[0] = current_stamp(cache);
		cols[1] = cache->node_att;
		values[1] = Int64GetDatum((int64) GetSystemIdentifier());
		return PointerGetDatum(heap_modify_tuple_by_cols(td->tg_trigtuple, RelationGetDescr(rel),
														 2, cols, values, nulls));
	}
	d = slot_getattr(td->tg_trigslot, cache->att, &isnull);
	if (cache->coordinator)
	{
		/*
		 * A shard (or the shell table) of a Citus distributed source: the
		 * coordinator stamped the row with its own transaction's id, which
		 * this node cannot check and must not replace; citus.c keeps other
		 * values out of the writes routed through the coordinator.  A shard
		 * move copies rows with their stamps, NULL (history) included.
		 */
		return PointerGetDatum(td->tg_trigtuple);
	}
	xact = GetTopFullTransactionId();
	moved = moving.state == MOVE_DELETED &&
		FullTransactionIdEquals(moving.xact, xact) &&
		(isnull ? moving.isnull : !moving.isnull && cq_stamp_get(d, cache->byval) == moving.value);
	if (moving.state == MOVE_DELETED)
		moving.state = MOVE_NONE;
	if (moved || (!isnull && cq_stamp_get(d, cache->byval) == U64FromFullTransactionId(xact)))
		return PointerGetDatum(td->tg_trigtuple);
	stamp = current_stamp(cache);
	col = cache->att;
	return PointerGetDatum(heap_modify_tuple_by_cols(td->tg_trigtuple, RelationGetDescr(rel),
													 1, &col, &stamp, &nonull));
}

/*
 * stamp_update
 *	  UPDATE: the stamp cannot change (except through pg_cq's own bypass);
 *	  remember the row, in case the UPDATE moves it to another partition.
 */
static Datum
stamp_update(TriggerData *td, StampCache *cache)
{
	Relation	rel = td->tg_relation;
	bool		isnull;
	Datum		d;
	bool		newnull;
	Datum		newd;

	if (cache->att == InvalidAttrNumber)
		return PointerGetDatum(td->tg_newtuple);
	d = slot_getattr(td->tg_trigslot, cache->att, &isnull);
	newd = slot_getattr(td->tg_newslot, cache->att, &newnull);
	if (cache->node_att != InvalidAttrNumber && !list_member_oid(stamp_bypass, RelationGetRelid(rel)))
	{
		bool		n1;
		bool		n2;
		Datum		v1 = slot_getattr(td->tg_trigslot, cache->node_att, &n1);
		Datum		v2 = slot_getattr(td->tg_newslot, cache->node_att, &n2);

		if (n1 != n2 || (!n1 && DatumGetInt64(v1) != DatumGetInt64(v2)))
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 errmsg("column \"%s\" of table \"%s\" cannot be changed",
							CQ_NODE_COLUMN, RelationGetRelationName(rel)),
					 errdetail("pg_cq stamps each row with the node and transaction that inserted it; continuous queries find new rows by them."),
					 errhint("Leave the column out of the UPDATE.  To have a row processed again, insert it again.")));
	}
	if (!same_stamp(cache->byval, isnull, d, newnull, newd) &&
		!list_member_oid(stamp_bypass, RelationGetRelid(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_GENERATED_ALWAYS),
				 errmsg("column \"%s\" of table \"%s\" cannot be changed",
						CQ_TRACKING_COLUMN, RelationGetRelationName(rel)),
				 errdetail("pg_cq stamps each row with the id of the transaction that inserted it; continuous queries find new rows by it."),
				 errhint("Leave the column out of the UPDATE.  To have a row processed again, insert it again.")));
	moving.state = MOVE_UPDATED;
	moving.relid = RelationGetRelid(rel);
	moving.tid = td->tg_trigtuple->t_self;
	moving.xact = GetTopFullTransactionId();
	moving.isnull = isnull;
	moving.value = isnull ? 0 : cq_stamp_get(d, cache->byval);
	return PointerGetDatum(td->tg_newtuple);
}

/*
 * stamp_delete
 *	  DELETE: the first half of a row moved between partitions when it
 *	  deletes the row just updated.
 */
static Datum
stamp_delete(TriggerData *td)
{
	Relation	rel = td->tg_relation;

	if (moving.state == MOVE_UPDATED && moving.relid == RelationGetRelid(rel) &&
		ItemPointerEquals(&moving.tid, &td->tg_trigtuple->t_self) &&
		FullTransactionIdEquals(moving.xact, GetTopFullTransactionId()))
		moving.state = MOVE_DELETED;
	else
		moving.state = MOVE_NONE;
	return PointerGetDatum(td->tg_trigtuple);
}

/*
 * cq_stamp
 *	  BEFORE INSERT OR UPDATE OR DELETE ... FOR EACH ROW trigger of tracked
 *	  sources (zz_cq_stamp; named to fire after the table's other BEFORE
 *	  triggers, which fire in name order).
 *
 *	  INSERT: cq_xid must be the inserting (top-level) transaction's id,
 *	  whatever the statement gave: an explicit value, a copy of another
 *	  table's cq_xid (INSERT ... SELECT *, COPY with the column), NULL
 *	  because the default was dropped or a partition attached without it.
 *	  The common case, the default already filled it, only compares.
 *
 *	  UPDATE: cq_xid cannot change (the row's stamp says when it was
 *	  inserted; a changed stamp would count it again or never).  DELETE:
 *	  only notes row movement (see above).
 */
Datum
cq_stamp(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	StampCache *cache;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("cq.stamp() must be called as a BEFORE ... FOR EACH ROW trigger")));
	cache = stamp_cache(fcinfo, td->tg_relation, TRIGGER_FIRED_BY_INSERT(td->tg_event));
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		return stamp_insert(td, cache);
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		return stamp_update(td, cache);
	if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		return stamp_delete(td);
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("cq.stamp() must be called for INSERT, UPDATE or DELETE")));
	PG_RETURN_NULL();
}

/*
 * cq_source_forget_stamps
 *	  Make every row of the source history (cq_xid = NULL): a query
 *	  restored from another cluster starts over (restore.c).  Runs as the
 *	  table's owner, as user code may run (its triggers), with search_path
 *	  pinned to pg_catalog, pg_temp.  Caller has SPI connected.
 */
void
cq_source_forget_stamps(Oid relid, Oid owner)
{
	CqSecurity	sec;
	List	   *saved = stamp_bypass;

	cq_security_owner(owner, &sec);
	PG_TRY();
	{
		stamp_bypass = find_all_inheritors(relid, NoLock, NULL);
		cq_spi_exec(psprintf("UPDATE %s SET %s = NULL WHERE %s IS NOT NULL",
							 cq_sql_relname_str(relid), CQ_TRACKING_COLUMN, CQ_TRACKING_COLUMN),
					SPI_OK_UPDATE, 0, NULL, NULL, NULL);
	}
	PG_FINALLY();
	{
		stamp_bypass = saved;
	}
	PG_END_TRY();
	cq_security_restore(&sec);
}

/*
 * cq_tracking_index
 *	  The BRIN index on cq_xid of a (leaf) table, or InvalidOid.
 */
Oid
cq_tracking_index(Relation heap, AttrNumber att)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Oid			idx = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(idx));
		Form_pg_index ix;

		if (!HeapTupleIsValid(tup))
			continue;
		ix = (Form_pg_index) GETSTRUCT(tup);
		if (ix->indnatts == 1 && ix->indkey.values[0] == att)
		{
			HeapTuple	ctup = SearchSysCache1(RELOID, ObjectIdGetDatum(idx));

			if (HeapTupleIsValid(ctup))
			{
				if (((Form_pg_class) GETSTRUCT(ctup))->relam == BRIN_AM_OID)
					result = idx;
				ReleaseSysCache(ctup);
			}
		}
		ReleaseSysCache(tup);
		if (OidIsValid(result))
			break;
	}
	list_free(indexes);
	return result;
}

/*
 * Past this many unsummarized blocks at the end of the table,
 * cq_tracking_history_all does not read them to test their rows: the
 * batch's statement then tests them (a backlog stamped since tracking began
 * and not yet summarized).
 */
#define CQ_HISTORY_TAIL_BLOCKS (4 * CQ_BRIN_PAGES_PER_RANGE)

/*
 * cq_tracking_history_all
 *	  Does every row of the table relid that the snapshot sees pass batch
 *	  0's test of cq_xid (NULL: history, or visible in the end offset cur,
 *	  a pg_snapshot)?  The leading ranges by their BRIN summaries of cq_xid
 *	  (all NULL, or a highest id below cur's xmin: visible in cur whatever
 *	  it is); the unsummarized tail after them (the range being filled is
 *	  left so: desummarize_last_range, cq_source_summarize), up to
 *	  CQ_HISTORY_TAIL_BLOCKS, by reading its rows.  False at the first
 *	  placeholder or range with another id.
 *
 *	  Exact for a snapshot taken before this call: a row's inserter widens
 *	  the summary of its range before it commits (the guarantee bitmap scans
 *	  of BRIN indexes rely on), and extends the table before that (blocks
 *	  past the ones counted here hold no row the snapshot sees).  The
 *	  caller's statement must read with that snapshot.  False without a
 *	  valid tracking index, or with inheritance children.
 */
bool
cq_tracking_history_all(Oid relid, Datum cur, Snapshot snapshot)
{
	AttrNumber	att = cq_source_tracking_attnum(relid);
	Relation	heap;
	Relation	irel;
	Oid			idx;
	BrinDesc   *bdesc;
	BrinRevmap *revmap;
	BlockNumber ppr;
	BlockNumber nblocks;
	BlockNumber blk;
	Buffer		buf = InvalidBuffer;
	uint64		xmin;
	bool		byval;
	bool		all = true;
	BrinTuple  *copy = NULL;
	Size		copy_size = 0;
	BrinMemTuple *dt = NULL;

	AcceptInvalidationMessages();
	if (att == InvalidAttrNumber || has_subclass(relid))
		return false;
	heap = table_open(relid, AccessShareLock);
	idx = cq_tracking_index(heap, att);
	if (!OidIsValid(idx) || heap->rd_rel->relam != HEAP_TABLE_AM_OID)
	{
		table_close(heap, AccessShareLock);
		return false;
	}
	irel = index_open(idx, AccessShareLock);
	/* the summaries are read as minmax's: the highest id is bv_values[1] */
	if (!irel->rd_index->indisvalid || !irel->rd_index->indisready ||
		index_getprocid(irel, 1, BRIN_PROCNUM_OPCINFO) != F_BRIN_MINMAX_OPCINFO)
	{
		index_close(irel, AccessShareLock);
		table_close(heap, AccessShareLock);
		return false;
	}
	xmin = DatumGetUInt64(DirectFunctionCall1(pg_snapshot_xmin, cur));
	/* the summaries' values: xid8 by value, cq.xid48 by reference */
	byval = TupleDescAttr(RelationGetDescr(irel), 0)->attbyval;
	nblocks = RelationGetNumberOfBlocks(heap);
	bdesc = brin_build_desc(irel);
	revmap = brinRevmapInitialize(irel, &ppr, snapshot);
	for (blk = 0; blk < nblocks; blk += ppr)
	{
		OffsetNumber off;
		Size		size;
		BrinTuple  *tup;
		BrinValues *bv;

		CHECK_FOR_INTERRUPTS();
		tup = brinGetTupleForHeapBlock(revmap, blk, &buf, &off, &size, BUFFER_LOCK_SHARE, snapshot);
		if (tup == NULL)
			break;				/* not summarized: the tail */
		/* one copy and one BrinMemTuple reused for every range, as brin.c does */
		tup = copy = brin_copy_tuple(tup, size, copy, &copy_size);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		dt = brin_deform_tuple(bdesc, tup, dt);
		bv = &dt->bt_columns[0];
		if (dt->bt_placeholder ||
			!(bv->bv_allnulls ||
			  cq_stamp_get(bv->bv_values[1], byval) < xmin))
		{
			all = false;
			break;
		}
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	brinRevmapTerminate(revmap);
	if (dt)
		MemoryContextDelete(dt->bt_context);
	brin_free_desc(bdesc);
	index_close(irel, AccessShareLock);

	/* the tail: its rows that the snapshot sees, tested one by one */
	if (all && blk < nblocks)
	{
		TableScanDesc scan;
		TupleTableSlot *slot;

		if (nblocks - blk > CQ_HISTORY_TAIL_BLOCKS)
			all = false;
		else
		{
			scan = table_beginscan_strat(heap, snapshot, 0, NULL, false, false);
			heap_setscanlimits(scan, blk, nblocks - blk);
			slot = table_slot_create(heap, NULL);
			while (all && table_scan_getnextslot(scan, ForwardScanDirection, slot))
			{
				bool		isnull;
				Datum		x = slot_getattr(slot, att, &isnull);

				all = isnull || DatumGetBool(DirectFunctionCall2(pg_visible_in_snapshot, x, cur));
			}
			ExecDropSingleTupleTableSlot(slot);
			table_endscan(scan);
		}
	}
	table_close(heap, AccessShareLock);
	return all;
}

/*
 * desummarize_last_range
 *	  A BRIN index build summarizes every range, the last, partial one too
 *	  (range 0 of an empty table: an empty summary); every row then
 *	  inserted into that range until the table grows past it would go
 *	  through the summary (brininsert's whole path: reading and comparing
 *	  it, widening it for each new transaction).  Leave the last range of a
 *	  fresh tracking index unsummarized, as cq_source_summarize keeps the
 *	  ranges being filled; the index scans of batches read it whole anyway.
 *	  The table is locked by the index build.
 */
static void
desummarize_last_range(Oid relid)
{
	List	   *tables = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ?
		find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	ListCell   *lc;

	foreach(lc, tables)
	{
		Oid			leaf = lfirst_oid(lc);
		AttrNumber	att;
		Relation	heap;
		Oid			idx;
		BlockNumber nblocks;
		BlockNumber ppr;
		Relation	irel;

		if (get_rel_relkind(leaf) != RELKIND_RELATION ||
			(att = cq_source_tracking_attnum(leaf)) == InvalidAttrNumber)
			continue;
		heap = table_open(leaf, NoLock);
		idx = cq_tracking_index(heap, att);
		nblocks = RelationGetNumberOfBlocks(heap);
		table_close(heap, NoLock);
		if (!OidIsValid(idx))
			continue;
		irel = index_open(idx, AccessShareLock);
		ppr = BrinGetPagesPerRange(irel);
		index_close(irel, AccessShareLock);
		if (nblocks == 0 || nblocks % ppr != 0)
			(void) DirectFunctionCall2(brin_desummarize_range, ObjectIdGetDatum(idx),
									   Int64GetDatum((int64) (nblocks / ppr) * ppr));
	}
}


/*
 * cq_tracking_dropping_stamp
 *	  Is pg_cq dropping a stamp trigger itself right now?  (stamp.c refuses
 *	  everyone else's DROP TRIGGER zz_cq_stamp.)
 */
bool
cq_tracking_dropping_stamp(void)
{
	return stamp_ddl_allowed;
}
