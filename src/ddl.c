/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  ProcessUtility and object-access hooks: the DDL surface of pg_cq.
 *
 *	 CREATE TABLE t WITH (cq.*) AS SELECT ...   register a continuous query
 *	 ALTER TABLE t SET (cq.*) / RESET (cq.*)    change its options
 *	 DROP TABLE t (and anything that drops its  forget the query
 *	 internal view cq_state.q_<id>)
 *
 * Core rejects the "cq" option namespace, so the hook strips the cq.*
 * options from a copy of the statement before passing it on.  The hook
 * steps aside while pg_cq itself is being created or dropped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
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
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "pg_cq.h"
#include "shmem.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access = NULL;

/* true while DROP EXTENSION pg_cq runs: the catalog is going away */
static bool dropping_extension = false;

/* true while pg_cq itself drops a query's internal objects to recreate them */
bool		cq_ddl_recreating = false;

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

		if (def->arg == NULL && reset_allowed)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot reset continuous query option \"cq.%s\"", def->defname),
					 errhint("Set the option to the value you want with ALTER TABLE ... SET.")));
		cq_options_set(opts, def->defname, defGetString(def));
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

	/* reject a bad query before core creates anything */
	(void) cq_analyze_query(query, &opts, name);

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
		cq_batch_run(name, true, &res);
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
 * process_drop_extension
 *	  Run DROP EXTENSION with the drop hook switched off: the catalog it
 *	  would update is being dropped too.
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
 *	  waits for a running batch instead of deadlocking with it.
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
		Oid			save_uid;
		int			save_sec;

		if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
			continue;
		if (!connected && SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		connected = true;
		values[0] = ObjectIdGetDatum(relid);
		cq_as_superuser(&save_uid, &save_sec);
		cq_spi_exec("SELECT 1 FROM cq.queries WHERE target = $1::pg_catalog.regclass "
					"OR source = $1::pg_catalog.regclass FOR UPDATE",
					SPI_OK_SELECT, 1, types, values, NULL);
		cq_restore_user(save_uid, save_sec);
	}
	if (connected)
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
 *	  Before ALTER TABLE runs: refuse SET UNLOGGED of a source or target,
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

	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
	{
		cq_wakeup_catalog_changed();	/* workers: the scheduler notices at commit */
		process_drop_extension(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		return;
	}

	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_TABLE &&
		extension_ready())
		lock_dropped_targets((DropStmt *) parsetree);

	/* workers (launcher.c): DROP/CREATE ... TEMPLATE/RENAME DATABASE need it to themselves */
	if ((IsA(parsetree, DropdbStmt) || IsA(parsetree, CreatedbStmt) || IsA(parsetree, RenameStmt)) &&
		process_database_ddl(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc))
		return;

	if (IsA(parsetree, CreateTableAsStmt) || IsA(parsetree, AlterTableStmt))
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

		if (has_cq)
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

	if (IsA(parsetree, CreateStmt) && ((CreateStmt *) parsetree)->inhRelations != NIL &&
		!IsBinaryUpgrade && extension_ready())
		new_child = RangeVarGetRelid(((CreateStmt *) parsetree)->relation, NoLock, true);
	after_inherit(new_child);
}

/*
 * cq_object_access
 *	  When a target table or a query's internal view is dropped, forget the
 *	  query (in the dropping transaction).
 */
static void
cq_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);

	if (access != OAT_DROP || classId != RelationRelationId || subId != 0 || cq_ddl_recreating)
		return;
	{
		char		relkind = get_rel_relkind(objectId);
		Oid			nsp;
		char	   *relname;
		char	   *name = NULL;
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
			name = cq_catalog_name_for_relation(objectId, true);
		else
		{
			Oid			types[1] = {INT4OID};
			Datum		values[1] = {Int32GetDatum(atoi(relname + 2))};

			cq_spi_exec("SELECT name FROM cq.queries WHERE id = $1", SPI_OK_SELECT, 1, types, values, NULL);
			if (SPI_processed > 0)
				name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		}
		if (name)
			cq_catalog_delete_query(name);	/* internal objects go by dependency */
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
