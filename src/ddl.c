/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  ProcessUtility and object-access hooks: the DDL surface of pg_cq.
 *
 *	 CREATE TABLE t WITH (cq.*) AS SELECT ...   register a continuous query
 *	 ALTER TABLE t SET (cq.*) / RESET (cq.*)    change its options
 *	 DROP TABLE t (and anything that drops its  forget the query
 *	 internal view cq_state.q_<id>)
 *	 REASSIGN OWNED, ALTER VIEW cq_state.q_<id>  the query's owner follows
 *	 OWNER TO
 *	 ALTER TABLE t SET SCHEMA, ALTER SCHEMA      the query's schema follows
 *	 ... RENAME                                  its target's
 *
 * Core rejects the "cq" option namespace, so the hook strips the cq.*
 * options from a copy of the statement before passing it on.  The hook
 * steps aside while pg_cq itself is being created or dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/createas.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "ddl.h"
#include "store.h"
#include "wakeup.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "catalog.h"
#include "progress.h"
#include "analyze.h"
#include "determinism.h"
#include "tracking.h"
#include "objects.h"
#include "batch.h"
#include "launcher.h"
#include "api.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access = NULL;

/* true while DROP EXTENSION pg_cq runs: the catalog is going away */
static bool dropping_extension = false;

/*
 * extension_ready
 *	  pg_cq is installed in this database and not being created or dropped.
 */
static bool
extension_ready(void)
{
	Oid			ext;

	if (dropping_extension || !IsTransactionState())
		return false;
	ext = get_extension_oid("pg_cq", true);
	if (!OidIsValid(ext))
		return false;
	if (creating_extension && CurrentExtensionObject == ext)
		return false;
	return true;
}

/*
 * split_cq_options
 *	  Move DefElems of namespace "cq" from *options into the result.
 */
static List *
split_cq_options(List **options)
{
	List	   *cq = NIL;
	List	   *rest = NIL;
	ListCell   *lc;

	foreach(lc, *options)
	{
		DefElem    *def = lfirst(lc);

		if (def->defnamespace && strcmp(def->defnamespace, "cq") == 0)
			cq = lappend(cq, def);
		else
			rest = lappend(rest, def);
	}
	*options = rest;
	return cq;
}

/*
 * options_from_defelems
 *	  CqOptions from cq.* DefElems (RESET entries have no value).
 */
static void
options_from_defelems(CqOptions *opts, List *defs, bool reset_allowed)
{
	ListCell   *lc;

	foreach(lc, defs)
	{
		DefElem    *def = lfirst(lc);
		ListCell   *prev;

		/* as core refuses a repeated storage parameter */
		foreach(prev, defs)
		{
			if (prev == lc)
				break;
			if (strcmp(((DefElem *) lfirst(prev))->defname, def->defname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("parameter \"cq.%s\" specified more than once", def->defname)));
		}
		if (def->arg == NULL && reset_allowed)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot reset continuous query option \"cq.%s\"", def->defname),
					 errhint("Set the option to the value you want with ALTER TABLE ... SET.")));
		cq_options_set(opts, def->defname, defGetString(def));
	}
}

/*
 * name_outputs
 *	  CREATE TABLE t (a, b) AS SELECT ...: the names given are those of the
 *	  query's outputs, as core gives them to t's columns (the rest keep
 *	  theirs; too many names are core's error), so that the query writes
 *	  the columns it created.
 */
static void
name_outputs(Query *query, List *colnames)
{
	ListCell   *lc;
	ListCell   *name = list_head(colnames);

	foreach(lc, query->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resjunk)
			continue;
		if (name == NULL)
			break;
		tle->resname = pstrdup(strVal(lfirst(name)));
		name = lnext(colnames, name);
	}
}

/*
 * process_create_table_as
 *	  CREATE TABLE t WITH (cq.*) AS SELECT: let core create the table with
 *	  no data, then register the query.  WITH DATA (the default) runs the
 *	  first batch at once, in this transaction.
 */
static void
process_create_table_as(PlannedStmt *pstmt, const char *queryString,
						ProcessUtilityContext context, ParamListInfo params,
						QueryEnvironment *queryEnv, DestReceiver *dest,
						QueryCompletion *qc, List *cqopts)
{
	CreateTableAsStmt *stmt = (CreateTableAsStmt *) pstmt->utilityStmt;
	IntoClause *into = stmt->into;
	Query	   *query = (Query *) stmt->query;
	CqOptions	opts;
	Oid			nsp;
	Oid			target;
	bool		with_data = !into->skipData;
	char	   *name = into->rel->relname;

	cq_options_init(&opts);
	options_from_defelems(&opts, cqopts, false);
	cq_options_finish(&opts);

	if (stmt->objtype != OBJECT_TABLE || stmt->is_select_into)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("continuous query options are only valid in CREATE TABLE ... AS")));
	if (!IsA(query, Query) || query->commandType != CMD_SELECT || query->utilityStmt)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a continuous query must be a SELECT statement")));
	if (into->rel->relpersistence == RELPERSISTENCE_TEMP || into->onCommit != ONCOMMIT_NOOP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the target of a continuous query cannot be a temporary table"),
				 errdetail("Background workers cannot write another session's temporary tables.")));
	if (into->rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the target of a continuous query cannot be an unlogged table"),
				 errdetail("A crash would empty it while the query's offsets stay: its results would be lost for good."),
				 errhint("Use CREATE TABLE without UNLOGGED; the query's state is unlogged by default (cq.state_storage) and rebuilt after a crash.")));
	if (stmt->if_not_exists && CreateTableAsRelExists(stmt))
		return;					/* core's NOTICE was given; register nothing */

	if (into->colNames != NIL)
		name_outputs(query, into->colNames);

	/* reject a bad query before core creates anything */
	(void) cq_analyze_query(query, &opts, name);
	cq_determinism_check(query, name);

	into->skipData = true;
	nsp = RangeVarGetCreationNamespace(into->rel);
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, false, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, false, context, params, queryEnv, dest, qc);
	CommandCounterIncrement();
	target = get_relname_relid(into->rel->relname, nsp);
	if (!OidIsValid(target))
		elog(ERROR, "pg_cq: table \"%s\" was not created", into->rel->relname);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_api_register(name, NULL, query, &opts, target, true);
	if (with_data)
	{
		CqBatchResult res;

		CommandCounterIncrement();
		cq_batch_run(cq_catalog_id_for_relation(target, true), true, &res);
		if (qc)
			SetQueryCompletion(qc, CMDTAG_SELECT, res.output_rows);
	}
	SPI_finish();
}

/*
 * process_alter_table
 *	  ALTER TABLE t SET (cq.*): strip the cq options and apply them to t's
 *	  query.  Returns false when nothing is left for core to do.
 */
static bool
process_alter_table(AlterTableStmt *stmt)
{
	List	   *cqdefs = NIL;
	List	   *cmds = NIL;
	ListCell   *lc;
	Oid			relid;
	char	   *name;
	CqOptions	changes;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype == AT_SetRelOptions || cmd->subtype == AT_ResetRelOptions)
		{
			List	   *defs = (List *) cmd->def;

			cqdefs = list_concat(cqdefs, split_cq_options(&defs));
			cmd->def = (Node *) defs;
			if (defs == NIL)
				continue;
		}
		cmds = lappend(cmds, cmd);
	}
	if (cqdefs == NIL)
		return true;
	/* before the query's catalog row is written (core checks after this hook) */
	PreventCommandIfReadOnly("ALTER TABLE");
	stmt->cmds = cmds;

	relid = RangeVarGetRelidExtended(stmt->relation, ShareUpdateExclusiveLock,
									 stmt->missing_ok ? RVR_MISSING_OK : 0,
									 RangeVarCallbackOwnsTable, NULL);
	if (!OidIsValid(relid))
		return cmds != NIL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	name = cq_catalog_name_for_relation(relid, true);
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("table \"%s\" is not the target of a continuous query", get_rel_name(relid)),
				 errhint("cq.* options apply only to tables created with CREATE TABLE ... WITH (cq.*) AS.")));
	cq_options_init(&changes);
	options_from_defelems(&changes, cqdefs, true);
	cq_api_alter(name, &changes);
	SPI_finish();
	return cmds != NIL;
}

/*
 * drops_pg_cq
 *	  Is pg_cq one of the extensions a DROP EXTENSION names?  (Nothing
 *	  else drops pg_cq: no extension depends on it, and its objects cannot
 *	  be dropped one by one.)  Dropping another extension leaves the drop
 *	  hook on: its CASCADE may drop a query's internal view.
 */
static bool
drops_pg_cq(DropStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->objects)
		if (strcmp(strVal(lfirst(lc)), "pg_cq") == 0)
			return true;
	return false;
}

/*
 * process_drop_extension
 *	  Run DROP EXTENSION pg_cq with the drop hook switched off: the catalog
 *	  it would update is being dropped too.
 */
static void
process_drop_extension(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					   ProcessUtilityContext context, ParamListInfo params,
					   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	bool		saved = dropping_extension;

	PG_TRY();
	{
		dropping_extension = true;
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		dropping_extension = saved;
	}
	PG_END_TRY();
}

/*
 * process_database_ddl
 *	  (pg_cq workers) A statement that needs a database without other
 *	  sessions: stop that database's pg_cq scheduler and workers first, let
 *	  them start again if the statement fails or kept the database.  Returns
 *	  false when the statement is not one of those (nothing was run).
 */
static bool
process_database_ddl(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					 ProcessUtilityContext context, ParamListInfo params,
					 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	bool		dropping;
	Oid			dboid = cq_launcher_ddl_database(pstmt->utilityStmt, &dropping);

	if (!OidIsValid(dboid))
		return false;
	cq_launcher_stop_database(dboid);
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		cq_launcher_unblock_database(dboid);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!dropping)
		cq_launcher_unblock_database(dboid);
	return true;
}

/*
 * lock_dropped_targets
 *	  DROP TABLE of a target (or, with CASCADE, of a source) deletes its
 *	  query's catalog row (see cq_object_access).  A batch locks that row
 *	  first and its tables second; lock the rows of the queries whose tables
 *	  are dropped before core locks the tables, in the same order, so a DROP
 *	  waits for a running batch instead of deadlocking with it.  This runs
 *	  before core checks that the caller may drop the table: tables the
 *	  caller may not drop (core's rule: owner of the table or of its schema)
 *	  are skipped, core refuses them next.
 */
static void
lock_dropped_targets(DropStmt *stmt)
{
	ListCell   *lc;
	bool		connected = false;

	foreach(lc, stmt->objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);
		Oid			types[1] = {OIDOID};
		Datum		values[1];
		CqSecurity	sec;

		if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
			continue;
		if (!pg_class_ownercheck(relid, GetUserId()) &&
			!pg_namespace_ownercheck(get_rel_namespace(relid), GetUserId()))
			continue;
		if (!connected && SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		connected = true;
		values[0] = ObjectIdGetDatum(relid);
		cq_security_superuser(&sec);
		cq_spi_exec("SELECT 1 FROM cq.queries WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
					"OR source OPERATOR(pg_catalog.=) $1::pg_catalog.regclass FOR UPDATE",
					SPI_OK_SELECT, 1, types, values, NULL);
		cq_security_restore(&sec);
	}
	if (connected)
		SPI_finish();
}

/*
 * refuse_internal_table_change
 *	  The tables of schema cq_state (state tables, join buffers) belong to
 *	  their query's owner, but their columns are pg_cq's: the shared-memory
 *	  store keeps a query's rows in its state table's layout and reads them
 *	  by it, batches by its column names.  ALTER TABLE and RENAME COLUMN of
 *	  such a table are for pg_cq's own superuser sections only (a column
 *	  type changed under the store would have its rows read as another
 *	  type); its owner is refused.  Views of cq_state are left alone (ALTER
 *	  VIEW of a query view is how its owner changes).
 */
static void
refuse_internal_table_change(RangeVar *rv)
{
	Oid			relid;

	if (superuser())
		return;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION ||
		get_rel_namespace(relid) != get_namespace_oid("cq_state", true))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot alter table \"%s\" of schema cq_state", get_rel_name(relid)),
			 errdetail("It holds rows of a continuous query in the layout pg_cq made; only pg_cq changes it."),
			 errhint("Change the continuous query instead (cq.alter_query), or drop and create it again.")));
}

/*
 * process_rename_column
 *	  ALTER TABLE ... RENAME COLUMN: queries whose event-time column is
 *	  the renamed one (of this table, or of a child the rename recurses
 *	  to) take its new name, in the same transaction.  The event time is
 *	  kept as a name; everything else a query reads is in its stored tree
 *	  and follows renames by itself.
 */
static void
process_rename_column(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					  ProcessUtilityContext context, ParamListInfo params,
					  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	RenameStmt *stmt = (RenameStmt *) pstmt->utilityStmt;
	Oid			relid;
	char	   *oldname = pstrdup(stmt->subname);
	char	   *newname = pstrdup(stmt->newname);
	List	   *relids = NIL;

	refuse_internal_table_change(stmt->relation);
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);

	/*
	 * The queries' rows first, as a batch locks them (see
	 * lock_dropped_targets); only for the table's owner, who alone may
	 * rename its columns: nobody else can hold a query up this way.
	 */
	if (OidIsValid(relid))
	{
		relids = stmt->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
		if (pg_class_ownercheck(relid, GetUserId()))
		{
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "pg_cq: SPI_connect failed");
			(void) cq_catalog_rename_event_time(relids, oldname, NULL);
			SPI_finish();
		}
	}

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);

	if (relids == NIL)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	(void) cq_catalog_rename_event_time(relids, oldname, newname);
	SPI_finish();
}

/*
 * refuse_unlogged
 *	  ALTER TABLE t SET UNLOGGED of a query's target or of a table whose
 *	  rows reach a source: a crash would empty it while the offsets stay.
 *	  The internal objects of pg_cq keep the persistence their query's
 *	  state_storage gave them (the crash rebuild depends on it).
 */
static void
refuse_unlogged(Oid relid, AlterTableType subtype)
{
	char	   *name;
	Oid			source;

	if (get_rel_namespace(relid) == get_namespace_oid("cq_state", true))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change whether \"%s\" is logged", get_rel_name(relid)),
				 errdetail("It belongs to a continuous query, whose option state_storage decides it."),
				 errhint("Drop and recreate the query with the state_storage you want.")));
	if (subtype != AT_SetUnLogged)
		return;
	name = cq_catalog_name_for_relation(relid, true);
	if (name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" is the target of continuous query \"%s\" and cannot be unlogged",
						get_rel_name(relid), name),
				 errdetail("A crash would empty it while the query's offsets stay: its results would be lost for good."),
				 errhint("Keep the table logged; the query's state is unlogged by default (cq.state_storage) and rebuilt after a crash.")));
	source = cq_source_reached(relid);
	if (OidIsValid(source))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 relid == source ?
				 errmsg("table \"%s\" is the source of a continuous query and cannot be unlogged",
						get_rel_name(relid)) :
				 errmsg("table \"%s\" cannot be unlogged: its rows reach the source \"%s\" of a continuous query",
						get_rel_name(relid), get_rel_name(source)),
				 errdetail("A crash would empty it while the query's offsets stay: its rows would be counted in the target but gone from the source, or never counted."),
				 errhint("Keep the table logged, or drop the queries that read it first.")));
}

/*
 * check_alter_table
 *	  Before ALTER TABLE runs: refuse any change of a table of cq_state by
 *	  its owner (refuse_internal_table_change), SET UNLOGGED of a source or target,
 *	  prepare ATTACH PARTITION under a source (cq_source_before_attach).
 *	  Returns the table that becomes a partition or inheritance child
 *	  (ATTACH PARTITION, INHERIT), for after_inherit, or InvalidOid.
 */
static Oid
check_alter_table(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			relid = InvalidOid;
	Oid			child = InvalidOid;
	bool		connected = false;

	refuse_internal_table_change(stmt->relation);
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst(lc);

		if (cmd->subtype != AT_SetUnLogged && cmd->subtype != AT_SetLogged &&
			cmd->subtype != AT_AttachPartition && cmd->subtype != AT_AddInherit)
			continue;
		if (!OidIsValid(relid))
			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
		if (!OidIsValid(relid))
			break;
		if (!connected && SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		connected = true;
		switch (cmd->subtype)
		{
			case AT_SetUnLogged:
			case AT_SetLogged:
				refuse_unlogged(relid, cmd->subtype);
				break;
			case AT_AttachPartition:
				child = RangeVarGetRelid(((PartitionCmd *) cmd->def)->name, NoLock, true);
				if (OidIsValid(child))
					cq_source_before_attach(relid, child);
				break;
			case AT_AddInherit:
				child = relid;
				break;
			default:
				break;
		}
	}
	if (connected)
		SPI_finish();
	return child;
}

/*
 * after_inherit
 *	  After CREATE TABLE ... PARTITION OF / INHERITS, ALTER TABLE ...
 *	  ATTACH PARTITION / INHERIT: a table whose rows now reach a source
 *	  must be logged and stamp them (cq_source_after_inherit).
 */
static void
after_inherit(Oid child)
{
	if (!OidIsValid(child))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_source_after_inherit(child);
	SPI_finish();
}

/*
 * lock_queries_where
 *	  Lock (FOR UPDATE) the catalog rows of the queries matching cond, a
 *	  fixed condition on cq.queries q with $1 an oid; see
 *	  lock_dropped_targets for why.
 */
static void
lock_queries_where(const char *cond, Oid arg)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(arg)};
	CqSecurity	sec;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT 1 FROM cq.queries q WHERE %s FOR UPDATE OF q", cond),
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	SPI_finish();
}

/*
 * lock_dropped_owners
 *	  DROP SCHEMA ... CASCADE and DROP OWNED drop targets and sources
 *	  without a DROP TABLE: lock the rows of the queries they can reach
 *	  first, as lock_dropped_targets does, so that they wait for a running
 *	  batch instead of deadlocking with it.  Only where the caller passes
 *	  core's check (owner of the schema; privileges of the role), which
 *	  runs after this hook.
 */
static void
lock_dropped_owners(Node *parsetree)
{
	ListCell   *lc;

	if (IsA(parsetree, DropStmt))
	{
		foreach(lc, ((DropStmt *) parsetree)->objects)
		{
			Oid			nsp = get_namespace_oid(strVal(lfirst(lc)), true);

			if (!OidIsValid(nsp) || !pg_namespace_ownercheck(nsp, GetUserId()))
				continue;
			lock_queries_where("(SELECT c.relnamespace FROM pg_catalog.pg_class c "
							   "WHERE c.oid OPERATOR(pg_catalog.=) q.target::pg_catalog.oid) "
							   "OPERATOR(pg_catalog.=) $1 "
							   "OR (SELECT c.relnamespace FROM pg_catalog.pg_class c "
							   "WHERE c.oid OPERATOR(pg_catalog.=) q.source::pg_catalog.oid) "
							   "OPERATOR(pg_catalog.=) $1", nsp);
		}
		return;
	}
	foreach(lc, ((DropOwnedStmt *) parsetree)->roles)
	{
		Oid			role = get_rolespec_oid(lfirst(lc), true);

		if (!OidIsValid(role) || !has_privs_of_role(GetUserId(), role))
			continue;
		lock_queries_where("q.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
						   "OR (SELECT c.relowner FROM pg_catalog.pg_class c "
						   "WHERE c.oid OPERATOR(pg_catalog.=) q.target::pg_catalog.oid) "
						   "OPERATOR(pg_catalog.=) $1 "
						   "OR (SELECT c.relowner FROM pg_catalog.pg_class c "
						   "WHERE c.oid OPERATOR(pg_catalog.=) q.source::pg_catalog.oid) "
						   "OPERATOR(pg_catalog.=) $1", role);
	}
}

/*
 * has_cq_options
 *	  Does a CREATE TABLE AS or ALTER TABLE SET/RESET name an option of
 *	  namespace cq?
 */
static bool
has_cq_options(Node *parsetree)
{
	bool		has_cq = false;
	ListCell   *lc;

	if (IsA(parsetree, CreateTableAsStmt))
	{
		IntoClause *into = ((CreateTableAsStmt *) parsetree)->into;

		foreach(lc, into ? into->options : NIL)
			if (((DefElem *) lfirst(lc))->defnamespace &&
				strcmp(((DefElem *) lfirst(lc))->defnamespace, "cq") == 0)
				has_cq = true;
	}
	else
	{
		foreach(lc, ((AlterTableStmt *) parsetree)->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);
			ListCell   *lc2;

			if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
				continue;
			foreach(lc2, (List *) cmd->def)
				if (((DefElem *) lfirst(lc2))->defnamespace &&
					strcmp(((DefElem *) lfirst(lc2))->defnamespace, "cq") == 0)
					has_cq = true;
		}
	}
	return has_cq;
}

/*
 * cq_ProcessUtility
 *	  The ProcessUtility hook.
 */
static void
cq_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				  ProcessUtilityContext context, ParamListInfo params,
				  QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			new_child = InvalidOid;

	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION &&
		drops_pg_cq((DropStmt *) parsetree))
	{
		cq_wakeup_catalog_changed();	/* workers: the scheduler notices at commit */
		process_drop_extension(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		return;
	}

	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_TABLE &&
		extension_ready())
		lock_dropped_targets((DropStmt *) parsetree);
	if (((IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_SCHEMA &&
		  ((DropStmt *) parsetree)->behavior == DROP_CASCADE) ||
		 IsA(parsetree, DropOwnedStmt)) && extension_ready())
		lock_dropped_owners(parsetree);

	/* workers (launcher.c): DROP/CREATE ... TEMPLATE/RENAME DATABASE need it to themselves */
	if ((IsA(parsetree, DropdbStmt) || IsA(parsetree, CreatedbStmt) || IsA(parsetree, RenameStmt)) &&
		process_database_ddl(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc))
		return;

	if (IsA(parsetree, RenameStmt) && ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
		((RenameStmt *) parsetree)->relationType == OBJECT_TABLE && extension_ready())
	{
		process_rename_column(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		return;
	}

	if (IsA(parsetree, CreateTableAsStmt) || IsA(parsetree, AlterTableStmt))
	{
		if (has_cq_options(parsetree))
		{
			if (!extension_ready())
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("extension \"pg_cq\" is not installed in this database"),
						 errhint("Run CREATE EXTENSION pg_cq.")));
			pstmt = copyObject(pstmt);
			parsetree = pstmt->utilityStmt;
			if (IsA(parsetree, CreateTableAsStmt))
			{
				IntoClause *into = ((CreateTableAsStmt *) parsetree)->into;
				List	   *cqopts = split_cq_options(&into->options);

				process_create_table_as(pstmt, queryString, context, params, queryEnv, dest, qc, cqopts);
				return;
			}
			if (!process_alter_table((AlterTableStmt *) parsetree))
				return;
			readOnlyTree = false;
		}
	}

	/*
	 * Tables joining a source's inheritance tree, or becoming unlogged
	 * (pg_upgrade's restore of the schema is left alone: nothing changes).
	 */
	if (IsA(parsetree, AlterTableStmt) && !IsBinaryUpgrade && extension_ready())
		new_child = check_alter_table((AlterTableStmt *) parsetree);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);

	/* CREATE [FOREIGN] TABLE ... PARTITION OF / INHERITS */
	if ((IsA(parsetree, CreateStmt) || IsA(parsetree, CreateForeignTableStmt)) &&
		((CreateStmt *) parsetree)->inhRelations != NIL &&
		!IsBinaryUpgrade && extension_ready())
		new_child = RangeVarGetRelid(((CreateStmt *) parsetree)->relation, NoLock, true);
	after_inherit(new_child);
}

/*
 * query_view_id
 *	  The query id N if relid is a query view cq_state.q_N, else 0.
 */
static int32
query_view_id(Oid relid)
{
	char	   *relname;
	Oid			cq_state;

	if (get_rel_relkind(relid) != RELKIND_VIEW)
		return 0;
	cq_state = get_namespace_oid("cq_state", true);
	if (!OidIsValid(cq_state) || get_rel_namespace(relid) != cq_state)
		return 0;
	relname = get_rel_name(relid);
	if (relname == NULL || strncmp(relname, "q_", 2) != 0)
		return 0;
	return atoi(relname + 2);
}

/*
 * relowner_now
 *	  The owner of a relation as this very command left it (the object
 *	  access hook runs before the command's catalog changes are visible
 *	  through the caches), and, if nsp is not NULL, its schema.
 */
static Oid
relowner_now(Oid relid, Oid *nsp)
{
	Relation	rel = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	ScanKeyInit(&key, Anum_pg_class_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, ClassOidIndexId, true, SnapshotSelf, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		if (nsp)
			*nsp = ((Form_pg_class) GETSTRUCT(tup))->relnamespace;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return owner;
}

/*
 * nspname_now
 *	  The name of a schema as this very command left it (see relowner_now),
 *	  or NULL.
 */
static char *
nspname_now(Oid nsp)
{
	Relation	rel = table_open(NamespaceRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *name = NULL;

	ScanKeyInit(&key, Anum_pg_namespace_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(nsp));
	scan = systable_beginscan(rel, NamespaceOidIndexId, true, SnapshotSelf, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		name = pstrdup(NameStr(((Form_pg_namespace) GETSTRUCT(tup))->nspname));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return name;
}

/*
 * sync_query_schema
 *	  A query lives in its target's schema (cq.queries.schema, since 0.2):
 *	  when a table moves to another schema (ALTER TABLE ... SET SCHEMA) or
 *	  a schema is renamed (ALTER SCHEMA ... RENAME), the queries of the
 *	  tables concerned follow, in the same transaction.  classId and
 *	  objectId are those of the altered relation or schema.  Cheap when
 *	  neither moved: the caches still show the object as it was before the
 *	  command, so only a real move reaches the catalog.
 */
static void
sync_query_schema(Oid classId, Oid objectId)
{
	Oid			nsp = InvalidOid;
	Oid			relid = InvalidOid;

	if (classId == RelationRelationId)
	{
		if (get_rel_relkind(objectId) != RELKIND_RELATION)
			return;
		(void) relowner_now(objectId, &nsp);
		if (!OidIsValid(nsp) || nsp == get_rel_namespace(objectId))
			return;
		relid = objectId;
	}
	else
	{
		char	   *oldname = get_namespace_name(objectId);
		char	   *newname = nspname_now(objectId);

		if (oldname == NULL || newname == NULL || strcmp(oldname, newname) == 0)
			return;
		nsp = objectId;
	}
	if (!extension_ready())
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_catalog_sync_schema(relid, nsp);
	SPI_finish();
}

/*
 * sync_query_owner
 *	  The owner of a query is the owner of its query view q_<id>: it was
 *	  created with it, and PostgreSQL's own rules apply to that view
 *	  (REASSIGN OWNED moves it, DROP OWNED drops it and with it the query,
 *	  DROP ROLE is refused while the role owns it).  When the view changes
 *	  owner (REASSIGN OWNED, ALTER VIEW ... OWNER TO), cq.queries.owner
 *	  follows, in the same transaction: batches then run as the new owner,
 *	  who may run, alter and drop the query.
 */
static void
sync_query_owner(Oid relid)
{
	int32		id = query_view_id(relid);
	Oid			owner;

	if (id <= 0 || !extension_ready())
		return;
	owner = relowner_now(relid, NULL);
	if (!OidIsValid(owner))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_catalog_set_owner(id, owner);
	SPI_finish();
}

/*
 * cq_object_access
 *	  When a target table or a query's internal view is dropped, forget the
 *	  query (in the dropping transaction); when pg_cq or a database is
 *	  dropped, the stores of its queries are freed at commit.
 */
static void
cq_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);

	if (access == OAT_POST_ALTER && classId == NamespaceRelationId && !cq_objects_recreating)
	{
		sync_query_schema(classId, objectId);
		return;
	}
	if (access == OAT_DROP && classId == ExtensionRelationId &&
		objectId == get_extension_oid("pg_cq", true))
	{
		/* whatever drops pg_cq: its queries' stores go at commit */
		cq_store_forget(MyDatabaseId, CQ_STORE_ALL_QUERIES);
		return;
	}
	if (access == OAT_DROP && classId == DatabaseRelationId)
	{
		/* from another database: its stores go at commit */
		cq_store_forget(objectId, CQ_STORE_ALL_QUERIES);
		return;
	}
	if (classId != RelationRelationId || subId != 0 || cq_objects_recreating)
		return;
	if (access == OAT_POST_ALTER)
	{
		sync_query_owner(objectId);
		sync_query_schema(classId, objectId);
		return;
	}
	if (access != OAT_DROP)
		return;
	{
		char		relkind = get_rel_relkind(objectId);
		Oid			nsp;
		char	   *relname;
		int32		id = 0;
		Oid			cq_state;

		if (relkind != RELKIND_RELATION && relkind != RELKIND_VIEW)
			return;
		if (!extension_ready())
			return;
		nsp = get_rel_namespace(objectId);
		cq_state = get_namespace_oid("cq_state", true);
		relname = get_rel_name(objectId);
		if (relkind == RELKIND_VIEW && (nsp != cq_state || strncmp(relname, "q_", 2) != 0))
			return;
		if (relkind == RELKIND_RELATION && nsp == cq_state)
			return;
		if (relkind == RELKIND_RELATION && isTempNamespace(nsp))
			return;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		if (relkind == RELKIND_RELATION)
			id = cq_catalog_id_for_relation(objectId, true);
		else
			id = atoi(relname + 2);
		if (id > 0)
		{
			cq_catalog_delete_query(id);	/* internal objects go by dependency */
			cq_store_forget(MyDatabaseId, id);
		}
		SPI_finish();
	}
}

/*
 * cq_ddl_init
 *	  Install the hooks; called from _PG_init.
 */
void
cq_ddl_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = cq_ProcessUtility;
	prev_object_access = object_access_hook;
	object_access_hook = cq_object_access;
}
