/*-------------------------------------------------------------------------
 *
 * api.c
 *	  SQL-callable functions: validate, then call the modules.
 *
 * cq_api_register is shared by cq.create_query and the CREATE TABLE ... WITH
 * (cq.*) AS hook: it analyzes the query, tracks the source, creates the
 * query's internal objects and catalog row, all in the caller's transaction.
 *
 * The query's internal objects (query view, state table, final view) are
 * objects.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/readfuncs.h"
#include "parser/analyze.h"
#include "parser/parse_relation.h"
#include "parser/scansup.h"
#include "catalog/pg_rewrite.h"
#include "rewrite/rewriteSupport.h"
#include "access/genam.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/regproc.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/ruleutils.h"
#include "utils/fmgroids.h"
#include "catalog/pg_am.h"

#include "api.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "catalog.h"
#include "catalog_name.h"
#include "store.h"
#include "progress.h"
#include "analyze.h"
#include "determinism.h"
#include "tracking.h"
#include "offsets.h"
#include "state.h"
#include "sink.h"
#include "objects.h"
#include "batch.h"
#include "callrun.h"
#include "handoff.h"
#include "plan.h"
#include "join.h"
#include "citus.h"
#include "citus_copy.h"
#include "restore.h"
#include "settings_pin.h"
#include "joinspec.h"

PG_FUNCTION_INFO_V1(cq_create_query);
PG_FUNCTION_INFO_V1(cq_state_rows);
PG_FUNCTION_INFO_V1(cq_state_store_info);
PG_FUNCTION_INFO_V1(cq_drop_query);
PG_FUNCTION_INFO_V1(cq_alter_query);
PG_FUNCTION_INFO_V1(cq_run);

/*
 * check_name
 *	  A query name: not null, not empty, fits in an identifier.
 */
static void
check_name(const char *name)
{
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("continuous query name must not be null")));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("continuous query name must not be empty")));
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("continuous query name \"%s\" is too long", name),
				 errdetail("Names are limited to %d bytes, like table names.", NAMEDATALEN - 1)));
}

/*
 * check_name_parts
 *	  Since 0.2 a name given to cq.create_query is read as regclass input
 *	  reads a table's ("q", "s.q", a part in double quotes kept as
 *	  written), but a part too long for an identifier is refused rather
 *	  than cut short.  Measures the parts as SplitIdentifierString splits
 *	  them; syntax errors are left to it.
 */
static void
check_name_parts(const char *name)
{
	bool		quoted = false;
	int			len = 0;

	for (const char *p = name;; p++)
	{
		if (quoted && *p == '"' && p[1] == '"')
		{
			len++;				/* "" inside quotes is one " */
			p++;
			continue;
		}
		if (quoted && *p == '"')
			quoted = false;
		else if (!quoted && *p == '"' && len == 0)
			quoted = true;
		else if (*p != '\0' && (quoted || (*p != '.' && !scanner_isspace(*p))))
			len++;
		else if (*p == '.' || *p == '\0')
		{
			if (len >= NAMEDATALEN)
				ereport(ERROR,
						(errcode(ERRCODE_NAME_TOO_LONG),
						 errmsg("continuous query name \"%s\" is too long", name),
						 errdetail("Names are limited to %d bytes, like table names.", NAMEDATALEN - 1)));
			len = 0;
		}
		if (*p == '\0')
			break;
	}
}

/*
 * check_owner
 *	  Only the query's owner (or a superuser) may change or drop it.
 */
static void
check_owner(CqQuery *q)
{
	cq_catalog_check_owner(q, GetUserId());
}

/*
 * cq_api_owned_query
 *	  Load a query the caller owns (or has the privileges of), for a
 *	  function that changes or runs it.  Ownership is checked before
 *	  anything else happens to the query: only then, with lock, is its row
 *	  locked FOR NO KEY UPDATE (waiting for a running batch) and read again,
 *	  and checked again (the owner may have changed meanwhile).
 */
CqQuery *
cq_api_owned_query(const char *name, bool lock)
{
	CqQuery    *q = cq_catalog_get_query(name, false, false);

	check_owner(q);
	if (lock)
	{
		/* the query the name found, whatever the name finds meanwhile */
		q = cq_catalog_get_query_by_id(q->id, true, true);
		if (q == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("continuous query \"%s\" does not exist", name)));
		check_owner(q);
	}
	return q;
}

/*
 * check_target_columns
 *	  An existing target must have the query's output columns, by name and
 *	  type, in any order; extra columns must have defaults or allow NULL.
 */
static void
check_target_columns(CqAnalysis *an, Oid target, const char *name)
{
	Relation	rel = table_open(target, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;

	foreach(lc, an->outputs)
	{
		TargetEntry *tle = lfirst(lc);
		Oid			type = exprType((Node *) tle->expr);
		bool		found = false;

		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped || strcmp(NameStr(att->attname), tle->resname) != 0)
				continue;
			found = true;
			if (att->atttypid != type)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("target table \"%s\" does not match continuous query \"%s\"",
								RelationGetRelationName(rel), name),
						 errdetail("Column \"%s\" has type %s, but the query produces %s.",
								   tle->resname, format_type_be(att->atttypid), format_type_be(type)),
						 errhint("Drop the table or choose another target.")));
		}
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("target table \"%s\" does not match continuous query \"%s\"",
							RelationGetRelationName(rel), name),
					 errdetail("The table has no column \"%s\".", tle->resname),
					 errhint("Drop the table or choose another target.")));
	}
	table_close(rel, AccessShareLock);
}

/*
 * check_source_columns
 *	  Every batch reads the source's cq_xid (and its event-time column),
 *	  which the query itself may not name: the owner needs SELECT on them
 *	  too, not only on the columns the query reads (checked as for a
 *	  SELECT).  Call after the source is tracked.
 */
static void
check_source_columns(CqAnalysis *an, const char *name)
{
	Oid			relid = an->source_relid;
	AttrNumber	cols[2];

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		return;
	cols[0] = cq_source_tracking_attnum(relid);
	cols[1] = an->et_attno;
	for (int i = 0; i < 2; i++)
	{
		if (cols[i] == InvalidAttrNumber ||
			pg_attribute_aclcheck(relid, cols[i], GetUserId(), ACL_SELECT) == ACLCHECK_OK)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column %s of table %s",
						get_attname(relid, cols[i], false), get_rel_name(relid)),
				 errdetail("Every batch of continuous query \"%s\" reads column \"%s\" of its source%s.",
						   name, get_attname(relid, cols[i], false),
						   i == 0 ? " to find new rows" : " for event time"),
				 errhint("Grant SELECT on that column (or on the table) to the query's owner.")));
	}
}

/*
 * check_target_table
 *	  The target must be a permanent, logged table: background workers
 *	  cannot write another session's temporary tables, and a crash would
 *	  empty an unlogged one while the offsets stay.
 */
static void
check_target_table(Oid target)
{
	if (get_rel_persistence(target) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the target of a continuous query cannot be a temporary table"),
				 errdetail("Background workers cannot write another session's temporary tables.")));
	cq_source_check_logged(target, InvalidOid);
}

/*
 * check_target_not_source
 *	  A query cannot write the table it reads as a stream: every batch's
 *	  rows would be new rows for the next, without end.
 */
static void
check_target_not_source(Oid target, Oid source, const char *name)
{
	if (target == source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the target of continuous query \"%s\" cannot be its source", name)));
}

/* cq.queries.state_path of a query the store cannot hold, before the reason */
#define STATE_PATH_UNSUPPORTED "table: not supported by the store"
/* cq.queries.state_path of a query with state_storage 'logged' in the store */
#define STATE_PATH_LOGGED_IMAGE "memory: logged image"

/*
 * choose_state_storage
 *	  Where a new query keeps its state (opts->state_storage) and why
 *	  (opts->state_path, shown by cq.queries and cq.status).  A query whose
 *	  state_storage was not given takes cq.default_state_storage.  'memory'
 *	  and 'logged' use the shared-memory store when it can hold the query
 *	  (cq_store_supported) and the catalog is 0.2 (it has the image
 *	  tables); its image is then an unlogged or a logged table.  Otherwise
 *	  'logged' keeps its state in a logged table, and a default 'memory' in
 *	  an unlogged one, the reason recorded; an explicit 'memory' the store
 *	  cannot hold is an error (objects.c).  Stateless queries keep the value
 *	  as before and have no path.
 */
static void
choose_state_storage(CqAnalysis *an, CqOptions *opts)
{
	const char *why;
	bool		memory = strcmp(opts->state_storage, "memory") == 0;
	bool		logged = strcmp(opts->state_storage, "logged") == 0;

	opts->state_path = NULL;
	if (!an->is_aggregate && !an->is_dedup && an->join == NULL)
	{
		if (opts->state_storage_default)
			opts->state_storage = "unlogged";	/* no state: as before */
		return;
	}
	if (cq_catalog_version() < CQ_CATALOG_0_2)
	{
		/* 0.1: no image tables, no path; the store only when asked for */
		if (memory && opts->state_storage_default)
			opts->state_storage = "unlogged";
		return;
	}
	if (!memory && !logged)
		opts->state_path = opts->state_storage_default ?
			psprintf("table: cq.default_state_storage is '%s'", opts->state_storage) :
			"table: requested";
	else if (memory && !opts->state_storage_default)
		opts->state_path = "memory: requested";
	else if (!cq_store_supported(an, InvalidOid, &why))
	{
		/* the reason is a sentence: shown without its final period */
		char	   *reason = pstrdup(why);
		size_t		len = strlen(reason);

		if (len > 0 && reason[len - 1] == '.')
			reason[len - 1] = '\0';
		if (memory)
			opts->state_storage = "unlogged";
		opts->state_path = psprintf(STATE_PATH_UNSUPPORTED " (%s)", reason);
	}
	else
		opts->state_path = logged ? STATE_PATH_LOGGED_IMAGE : "memory";
}

/*
 * rechoose_state_storage
 *	  The query of q changes before its first batch (replace_query): a
 *	  state place chosen by default (state_path "memory", or a table because
 *	  the store could not hold the old query), or by the shape of a 'logged'
 *	  query (the store with a logged image, or a logged table), is chosen
 *	  again for the new query, which the store may or may not hold.  Other
 *	  choices stay.
 */
static void
rechoose_state_storage(CqQuery *q, CqAnalysis *an)
{
	char	   *path = cq_catalog_state_path(q->id);
	bool		unsupported;

	if (path == NULL)
		return;
	unsupported = strncmp(path, STATE_PATH_UNSUPPORTED, strlen(STATE_PATH_UNSUPPORTED)) == 0;
	if (strcmp(q->opts.state_storage, "logged") == 0)
	{
		/* the store if it can hold the query, else a logged table */
		if (!unsupported && strcmp(path, STATE_PATH_LOGGED_IMAGE) != 0)
			return;
	}
	else if (strcmp(path, "memory") == 0 || unsupported)
		q->opts.state_storage = "memory";
	else
		return;
	q->opts.state_storage_default = true;
	choose_state_storage(an, &q->opts);
	cq_catalog_set_state_storage(q->id, q->opts.state_storage, q->opts.state_path);
}

/*
 * cq_api_register
 *	  Register a continuous query over an existing target table.  Returns
 *	  the target.  Caller has SPI connected.
 */
Oid
cq_api_register(const char *name, const char *query_text, Query *query,
				CqOptions *opts, Oid target, bool target_created)
{
	CqAnalysis *an;
	char	   *start_offset;
	int32		id;

	check_name(name);
	cq_options_finish(opts);
	cq_options_check_limits(opts);

	/* since 0.2, names are unique in the target's schema */
	if (cq_catalog_get_query_in(get_rel_namespace(target), name, true, false) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("continuous query \"%s\" already exists", name)));
	if (cq_catalog_name_for_relation(target, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is already the target of continuous query \"%s\"",
						get_rel_name(target), cq_catalog_name_for_relation(target, true))));

	an = cq_analyze_query(query, opts, name);
	cq_determinism_check(query, name);

	/* the owner needs the rights the query needs (SELECT on what it reads) */
	ExecCheckRTPerms(an->query->rtable, true);
	if (!pg_class_ownercheck(target, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(target)),
				 errdetail("The target of a continuous query must belong to the query's owner.")));
	if (get_rel_relkind(target) != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", get_rel_name(target))));
	check_target_table(target);
	cq_source_check_logged(an->source_relid, an->source_relid);
	check_target_not_source(target, an->source_relid, name);
	if (!target_created)
	{
		check_target_columns(an, target, name);
		cq_spi_exec(psprintf("SELECT 1 FROM %s LIMIT 1", cq_sql_relname_str(target)),
					SPI_OK_SELECT, 0, NULL, NULL, NULL);
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("target table \"%s\" is not empty", get_rel_name(target)),
					 errdetail("A continuous query writes its whole result into its target."),
					 errhint("Empty the table first, or choose another target.")));
	}
	if (opts->mode == CQ_MODE_UPDATE)
		cq_objects_ensure_key_index(an, target, an->keys_hashable);	/* the state will be hashed alike */

	cq_source_track(an->source_relid);
	check_source_columns(an, name);
	if (an->join)
	{
		/* the second stream of a join of two streams */
		cq_source_check_logged(an->join->side[1].relid, an->join->side[1].relid);
		check_target_not_source(target, an->join->side[1].relid, name);
		cq_source_track(an->join->side[1].relid);
		if (cq_citus_node_source(an->source_relid) || cq_citus_node_source(an->join->side[1].relid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("continuous query \"%s\" joins two streams, one of them a Citus distributed table", name),
					 errdetail("The rows of a distributed source are stamped on the node that stores them, and joins of two streams do not read such offsets yet."),
					 errhint("Join the distributed stream with a table, or stream from local tables.")));
	}

	choose_state_storage(an, opts);

	if (strcmp(opts->starting, "earliest") == 0)
		start_offset = CQ_EARLIEST_OFFSET;
	else
	{
		start_offset = cq_snap_current();
	}

	id = cq_catalog_insert_query(name, GetUserId(), an->source_relid, target,
								 query_text ? query_text : cq_objects_deparse_query(an->query),
								 opts, nodeToString(an->query), start_offset);
	cq_batch_node_start(an->source_relid, id, strcmp(opts->starting, "earliest") != 0);
	cq_citus_copy_start(an->source_relid, id);
	cq_objects_create(an, id, GetUserId(), target, opts);
	if (an->join)
		cq_join_create(an, name, id, GetUserId(), opts);
	cq_objects_comment_target(target, name, opts);	/* \dt+ target says what feeds it */
	return target;
}

/* Argument helpers */
static char *
arg_text(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/*
 * query_text_error_callback
 *	  Report a syntax or analysis error's position inside the query text
 *	  (as SQL functions do), since that text is not the client's statement.
 */
static void
query_text_error_callback(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

/*
 * parse_query_text
 *	  Parse and analyze a query given as text; nothing of it is executed.
 *	  It must be exactly one SELECT.
 */
static Query *
parse_query_text(const char *name, const char *query_text)
{
	List	   *raw;
	RawStmt    *stmt;
	Query	   *query;
	ErrorContextCallback errcb;

	if (query_text == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("query of continuous query \"%s\" must not be null", name)));
	if (query_text[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query of continuous query \"%s\" must not be empty", name)));

	/* errors in the text point into it, not into the calling statement */
	errcb.callback = query_text_error_callback;
	errcb.arg = (void *) query_text;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	raw = pg_parse_query(query_text);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query of continuous query \"%s\" must be exactly one SELECT statement", name)));
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt) || ((SelectStmt *) stmt->stmt)->intoClause != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("a continuous query must be a SELECT statement")));
	query = parse_analyze_fixedparams(stmt, query_text, NULL, 0, NULL);
	error_context_stack = errcb.previous;
	return query;
}

/*
 * query_name_rv
 *	  The query's name as a relation name: on a 0.2 catalog "q" or "s.q"
 *	  (a query lives in its target's schema), *name set to its last part;
 *	  on 0.1 taken as it is.
 */
static RangeVar *
query_name_rv(char **name)
{
	RangeVar   *rv_name;

	if (*name == NULL || (*name)[0] == '\0' || cq_catalog_version() < CQ_CATALOG_0_2)
	{
		/* 0.1: names are unique in the database and taken as they are */
		check_name(*name);
		rv_name = makeRangeVar(NULL, *name, -1);
	}
	else
	{
		/* a query lives in its target's schema: "q" or "s.q", as a table */
		char	   *schemaname;

		check_name_parts(*name);
		DeconstructQualifiedName(stringToQualifiedNameList(*name), &schemaname, name);
		rv_name = makeRangeVar(schemaname, *name, -1);
	}
	return rv_name;
}

/*
 * options_from_args
 *	  The options of cq.create_query from its arguments 2, 3 and 5-11.
 */
static void
options_from_args(FunctionCallInfo fcinfo, CqOptions *opts)
{
	cq_options_init(opts);
	opts->output_mode = arg_text(fcinfo, 2);
	opts->trigger = arg_text(fcinfo, 3);
	opts->event_time = arg_text(fcinfo, 5);
	opts->watermark = arg_text(fcinfo, 6);
	if (!PG_ARGISNULL(7))
	{
		opts->max_rows_per_trigger = PG_GETARG_INT64(7);
		if (opts->max_rows_per_trigger < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"max_rows_per_trigger\": " INT64_FORMAT,
							opts->max_rows_per_trigger),
					 errhint("Use a positive number of rows, or 0 for no limit.")));
	}
	opts->starting = arg_text(fcinfo, 8);
	opts->source = arg_text(fcinfo, 9);
	opts->state_storage = arg_text(fcinfo, 10);
	opts->complete_refresh = arg_text(fcinfo, 11);
	cq_options_finish(opts);
}

/*
 * cq_create_query
 *	  cq.create_query(name, query, output_mode, trigger, target, event_time,
 *	  watermark, max_rows_per_trigger, starting, source, state_storage,
 *	  complete_refresh) returns regclass
 */
Datum
cq_create_query(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0);
	char	   *query_text = arg_text(fcinfo, 1);
	char	   *target_text = arg_text(fcinfo, 4);
	CqOptions	opts;
	Query	   *query;
	RangeVar   *rv;
	RangeVar   *rv_name;
	Oid			target;
	bool		created = false;
	CqAnalysis *an;

	PreventCommandIfReadOnly("cq.create_query()");
	rv_name = query_name_rv(&name);
	options_from_args(fcinfo, &opts);

	query = parse_query_text(name, query_text);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");

	/* the target: an existing table with matching columns, or a new one */
	/* the target: given as a possibly qualified name, or the query's name itself */
	rv = target_text ? makeRangeVarFromNameList(stringToQualifiedNameList(target_text))
		: rv_name;
	target = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(target))
	{
		Oid			nsp = RangeVarGetCreationNamespace(rv);

		an = cq_analyze_query(query, &opts, name);
		cq_spi_exec(cq_sink_target_table_sql(an, quote_qualified_identifier(get_namespace_name(nsp), rv->relname)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		CommandCounterIncrement();
		target = get_relname_relid(rv->relname, nsp);
		created = true;
	}
	if (rv_name->schemaname != NULL &&
		strcmp(rv_name->schemaname, get_namespace_name(get_rel_namespace(target))) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("continuous query \"%s.%s\" must be in the schema of its target",
						rv_name->schemaname, name),
				 errdetail("Target \"%s\" is in schema \"%s\".", get_rel_name(target),
						   get_namespace_name(get_rel_namespace(target))),
				 errhint("Name the query without a schema: it takes its target's.")));
	cq_api_register(name, query_text, query, &opts, target, created);
	SPI_finish();
	PG_RETURN_OID(target);
}

/*
 * cq_drop_query
 *	  cq.drop_query(name, drop_target): drop the query, keep the table unless
 *	  asked.
 */
Datum
cq_drop_query(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0);
	bool		drop_target = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	CqQuery    *q;

	PreventCommandIfReadOnly("cq.drop_query()");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	q = cq_api_owned_query(name, true);
	cq_catalog_delete_query(q->id);
	cq_store_forget(MyDatabaseId, q->id);
	cq_objects_drop(q);
	if (drop_target)
		cq_spi_exec(psprintf("DROP TABLE %s", cq_sql_relname_str(q->target)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * source_is_current
 *	  Does the source option value (a table, or two for a join of two
 *	  streams: 'a, b') name the stream(s) the query reads?  Given anew, it
 *	  changes nothing.  (The option itself is not stored: its streams are.)
 */
static bool
source_is_current(CqQuery *q, const char *source)
{
	List	   *relids = cq_joinspec_source_relids(source);
	int			nstreams = OidIsValid(q->opts.join_source_relid) ? 2 : 1;

	if (list_length(relids) != nstreams || !list_member_oid(relids, q->source))
		return false;
	return nstreams == 1 || list_member_oid(relids, q->opts.join_source_relid);
}

/*
 * cq_api_alter
 *	  Change options of a query.  Options that change what is stored
 *	  (output mode, event time, watermark, starting, state storage) would
 *	  invalidate the state and are refused with a hint to recreate.
 *	  Caller has SPI connected.
 */
void
cq_api_alter(const char *name, CqOptions *changes)
{
	CqQuery    *q = cq_api_owned_query(name, true);
	CqOptions	o = q->opts;

#define REFUSE_CHANGE(field, label) \
	if (changes->field && (o.field == NULL || strcmp(changes->field, o.field) != 0)) \
		ereport(ERROR, \
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED), \
				 errmsg("cannot change option \"%s\" of continuous query \"%s\"", label, q->name), \
				 errdetail("The query's state and target depend on it."), \
				 errhint("Drop and recreate the query with the new option.")))

	REFUSE_CHANGE(output_mode, "output_mode");
	REFUSE_CHANGE(event_time, "event_time");
	REFUSE_CHANGE(watermark, "watermark");
	REFUSE_CHANGE(state_storage, "state_storage");
	/* (Spark: a restart from a checkpoint cannot change its input sources) */
	if (changes->source && !source_is_current(q, changes->source))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change option \"source\" of continuous query \"%s\"", q->name),
				 errdetail("The query's offsets, state and target belong to the stream it reads, \"%s\".",
						   get_rel_name(q->source)),
				 errhint("Drop and recreate the query with the new option.")));
	cq_options_check_limits(changes);

	if (changes->trigger)
		o.trigger = changes->trigger;
	if (changes->max_rows_per_trigger >= 0)
		o.max_rows_per_trigger = changes->max_rows_per_trigger;
	if (changes->starting)
		o.starting = changes->starting;
	if (changes->complete_refresh)
		o.complete_refresh = changes->complete_refresh;
	cq_options_finish(&o);
	if (strcmp(o.starting, q->opts.starting) != 0)
	{
		CqLastOffset last;

		cq_progress_last_offset(q, &last);
		if (!last.found)
		{
			/* before batch 0: it starts from the new option */
			char	   *start_offset = CQ_EARLIEST_OFFSET;

			if (strcmp(o.starting, "latest") == 0)
			{
				start_offset = cq_snap_current();
			}
			cq_catalog_set_start_offset(q, start_offset);
			cq_batch_node_start(q->source, q->id, strcmp(o.starting, "latest") == 0);
		}
		else
			ereport(NOTICE,
					(errmsg("option \"starting\" of continuous query \"%s\" takes effect when it starts over", q->name),
					 errdetail("Batch 0 has run: the query goes on from its last offset."),
					 errhint("Run cq.reset(name) to start over from the new option.")));
	}
	cq_catalog_update_options(q->id, &o);
	cq_objects_comment_target(q->target, q->name, &o);	/* \dt+ target says what feeds it */
}

/*
 * replace_query
 *	  Before any batch: take the new query whatever its shape; the state
 *	  objects are recreated for it and a new source is tracked.
 */
static void
replace_query(CqQuery *q, CqAnalysis *an, const char *query_text)
{
	CqSecurity	sec;
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		values[2] = {Int32GetDatum(q->id), ObjectIdGetDatum(an->source_relid)};

	ExecCheckRTPerms(an->query->rtable, true);
	check_target_not_source(q->target, an->source_relid, q->name);
	check_target_columns(an, q->target, q->name);
	if (q->opts.mode == CQ_MODE_UPDATE)
		cq_objects_ensure_key_index(an, q->target, an->keys_hashable);	/* the new state is hashed alike */
	cq_source_check_logged(an->source_relid, an->source_relid);
	cq_source_track(an->source_relid);
	check_source_columns(an, q->name);
	cq_catalog_update_query(q->id, query_text, nodeToString(an->query));
	rechoose_state_storage(q, an);

	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET source = $2::pg_catalog.regclass WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_objects_replace(q, an);
	cq_security_restore(&sec);
	CommandCounterIncrement();
}

/*
 * having_changed
 *	  A running query's HAVING clause was added, removed or changed: the
 *	  final view shows the new condition, and the target is made equal to
 *	  the query's result with it now rather than group by group as batches
 *	  change them (a group no batch touches again would keep the old
 *	  answer).  Update mode rewrites the target from every group of the
 *	  state (rows of windows already evicted stay as they are); complete
 *	  mode reloads it.  Append mode cannot revisit the windows it already
 *	  wrote: the new condition applies to the windows closed from now on.
 *	  A query with its state in shared memory is rewritten from its
 *	  published store (cq.state_rows), which must be there (not yet
 *	  rebuilt after a restart: refused, as lost unlogged state is).
 */
static void
having_changed(CqQuery *q, CqAnalysis *an)
{
	CqSecurity	sec;
	CqPlan	   *plan;
	Oid			viewid;
	char	   *target = cq_sql_relname_str(q->target);
	bool		memory = cq_options_in_memory(&q->opts);
	char	   *state;
	int			nest;

	if (q->opts.mode != CQ_MODE_APPEND && strcmp(q->opts.state_storage, "unlogged") == 0 &&
		cq_catalog_state_lost(q->id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot change the HAVING clause of continuous query \"%s\" while its state is lost", q->name),
				 errdetail("Its unlogged state was emptied by a crash and is rebuilt by the next batch; the target is rewritten from the state when HAVING changes."),
				 errhint("Run CALL cq.run(name) first, or wait for the next batch, then try again.")));

	if (memory && cq_catalog_version() < CQ_CATALOG_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change the HAVING clause of continuous query \"%s\"", q->name),
				 errdetail("Its state is kept in shared memory (state_storage = 'memory'), which the pg_cq catalog of this database cannot read yet."),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE first.")));
	if (memory && q->opts.mode != CQ_MODE_APPEND)
	{
		CqLastOffset last;
		int64		batch_id;
		int64		rows;
		int64		bytes;

		/* the target is rewritten from the store, which a restart empties */
		cq_progress_last_offset(q, &last);
		if (last.found && !cq_store_info(MyDatabaseId, q->id, get_rel_type_id(q->state_table), &batch_id, &rows, &bytes))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot change the HAVING clause of continuous query \"%s\" while its state is not in shared memory", q->name),
					 errdetail("Its shared-memory state store is built again by the next batch after a restart; the target is rewritten from the state when HAVING changes."),
					 errhint("Run CALL cq.run(name) first, or wait for the next batch, then try again.")));
	}

	cq_security_superuser(&sec);
	cq_objects_replace_final_view(q->id, an);
	cq_security_restore(&sec);

	viewid = cq_objects_relid("f", q->id);
	nest = cq_settings_pin_begin(q->timezone, q->settings);	/* printed as it runs */
	plan = cq_plan_build(an, q);	/* sets an->hash_keys */
	cq_settings_pin_end(nest);
	if (memory)
	{
		/*
		 * The published store, through cq.state_rows (what the final view
		 * reads); its rows have no ctid: the rewrite's row ids are numbers.
		 */
		char	   *rows = psprintf("cq.state_rows(%d, NULL::%s)", q->id, cq_sql_relname_str(q->state_table));

		state = psprintf("(SELECT r.*, pg_catalog.row_number() OVER () AS ctid FROM %s r)", rows);
		plan->complete_sql = psprintf("INSERT INTO %s (%s) SELECT %s FROM (SELECT %s FROM %s s) f%s",
									  target, cq_sink_target_columns(an, "", false, false),
									  cq_sink_output_list(an, viewid), cq_state_final_select_list(an),
									  rows, cq_sink_having_where(an, viewid));
	}
	else
		state = cq_sql_relname_str(q->state_table);
	/* as a batch runs: the owner, search_path pinned, the creator's time zone and settings */
	cq_security_owner(q->owner, &sec);
	cq_settings_pin_apply(q->timezone, q->settings);
	if (q->opts.mode == CQ_MODE_UPDATE)
		cq_spi_exec(cq_sink_update_rewrite_sql(an, viewid, target, state),
					SPI_OK_SELECT, 0, NULL, NULL, NULL);
	else if (q->opts.mode == CQ_MODE_COMPLETE)
	{
		cq_spi_exec(psprintf("DELETE FROM %s", target), SPI_OK_DELETE, 0, NULL, NULL, NULL);
		cq_spi_exec(plan->complete_sql, SPI_OK_INSERT, 0, NULL, NULL, NULL);
	}
	cq_security_restore(&sec);
	CommandCounterIncrement();
}

/*
 * cq_api_alter_query
 *	  Replace the query of a running continuous query, following Spark's
 *	  rules for restarting on an existing checkpoint: filters and
 *	  projections may change; the stream, static tables, windows, grouping
 *	  keys and aggregates (the state's shape and meaning) may not.  The new
 *	  query takes effect from the next batch.  Caller has SPI connected.
 */
void
cq_api_alter_query(const char *name, const char *query_text)
{
	CqQuery    *q = cq_api_owned_query(name, true);
	Query	   *query = parse_query_text(name, query_text);
	CqAnalysis *old_an;
	CqAnalysis *new_an;
	CqLastOffset last;

	old_an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	new_an = cq_analyze_query(query, &q->opts, q->name);
	cq_determinism_check(query, q->name);
	cq_progress_last_offset(q, &last);

	if (old_an->join || new_an->join)
	{
		/* a join of two streams: its buffers are made for the columns it reads */
		CqSecurity	sec;

		cq_joinspec_check_change(old_an->join, old_an->query, new_an->join, new_an->query, name);
		/* an aggregation over it: its state is made for its keys, aggregates and HAVING */
		if (new_an->is_aggregate != old_an->is_aggregate ||
			(new_an->is_aggregate &&
			 (strcmp(cq_analyze_state_signature(new_an), cq_analyze_state_signature(old_an)) != 0 ||
			  !equal(new_an->query->havingQual, old_an->query->havingQual))))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change the grouping keys, aggregates, windows, HAVING or tables of continuous query \"%s\"", name),
					 errdetail("The state of its aggregation over a join of two streams was built for them; only filters and the select list may change."),
					 errhint("Drop the query and create it again.")));
		ExecCheckRTPerms(new_an->query->rtable, true);
		check_target_columns(new_an, q->target, name);
		cq_catalog_update_query(q->id, query_text, nodeToString(new_an->query));
		if (!last.found)
			cq_catalog_capture_settings(q->id);	/* see below */
		cq_security_superuser(&sec);
		cq_objects_replace_query_view(q->id, new_an);
		cq_security_restore(&sec);
		return;
	}
	if (!last.found)
	{
		/*
		 * No batch yet (new, or after cq.reset, which empties the target):
		 * nothing to keep, any query goes.  No value was computed under the
		 * settings recorded with the old text: the new text takes the
		 * alterer's, as a new query its creator's (settings_pin.c).  After
		 * a batch the recorded ones stay: the state's and the target's keys
		 * were computed under them, and a key computed anew under others
		 * would be another group.
		 */
		replace_query(q, new_an, query_text);
		cq_catalog_capture_settings(q->id);
		return;
	}
	if (new_an->source_relid != old_an->source_relid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change the source of continuous query \"%s\"", name),
				 errdetail("Its offsets belong to table \"%s\".", get_rel_name(old_an->source_relid)),
				 errhint("Run cq.reset(name) first to start over without offsets and state.")));
	if ((new_an->is_dedup || old_an->is_dedup) &&
		(new_an->is_dedup != old_an->is_dedup ||
		 strcmp(cq_analyze_state_signature(new_an), cq_analyze_state_signature(old_an)) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change SELECT DISTINCT, its DISTINCT ON keys or tables of continuous query \"%s\"", name),
				 errdetail("The query's state holds the keys seen so far; only filters and the select list of DISTINCT ON may change."),
				 errhint("Run cq.reset(name) first to start over without offsets and state.")));
	if (new_an->is_aggregate != old_an->is_aggregate ||
		strcmp(cq_analyze_state_signature(new_an), cq_analyze_state_signature(old_an)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change the grouping keys, aggregates, windows or tables of continuous query \"%s\"", name),
				 errdetail("The query's state was built for them; only filters and the select list may change."),
				 errhint("Run cq.reset(name) first to start over without offsets and state.")));
	ExecCheckRTPerms(new_an->query->rtable, true);
	check_source_columns(new_an, name);
	check_target_columns(new_an, q->target, name);
	if (q->opts.mode == CQ_MODE_UPDATE)
		cq_objects_ensure_key_index(new_an, q->target, cq_state_hashed(q->state_table));

	cq_catalog_update_query(q->id, query_text, nodeToString(new_an->query));
	{
		CqSecurity	sec;

		cq_security_superuser(&sec);
		cq_objects_replace_query_view(q->id, new_an);
		cq_security_restore(&sec);
	}
	if (new_an->is_aggregate && !equal(new_an->query->havingQual, old_an->query->havingQual))
		having_changed(q, new_an);
}

/*
 * cq_alter_query
 *	  cq.alter_query(name, output_mode, trigger, event_time, watermark,
 *	  max_rows_per_trigger, starting, state_storage, complete_refresh,
 *	  query [, source: 0.2]): NULL keeps an option.
 */
Datum
cq_alter_query(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0);
	CqOptions	changes;
	char	   *query_text;

	PreventCommandIfReadOnly("cq.alter_query()");
	cq_options_init(&changes);
	changes.output_mode = arg_text(fcinfo, 1);
	changes.trigger = arg_text(fcinfo, 2);
	changes.event_time = arg_text(fcinfo, 3);
	changes.watermark = arg_text(fcinfo, 4);
	if (!PG_ARGISNULL(5))
	{
		changes.max_rows_per_trigger = PG_GETARG_INT64(5);
		if (changes.max_rows_per_trigger < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"max_rows_per_trigger\": " INT64_FORMAT,
							changes.max_rows_per_trigger),
					 errhint("Use a positive number of rows, or 0 for no limit.")));
	}
	changes.starting = arg_text(fcinfo, 6);
	changes.state_storage = arg_text(fcinfo, 7);
	changes.complete_refresh = arg_text(fcinfo, 8);
	query_text = arg_text(fcinfo, 9);
	/* source: since 0.2 (refused unless it names the current stream) */
	if (PG_NARGS() > 10)
		changes.source = arg_text(fcinfo, 10);

	/* normalize the given values the same way stored ones were */
	{
		CqOptions	check = changes;

		cq_options_finish(&check);
		if (changes.output_mode)
			changes.output_mode = check.output_mode;
		if (changes.state_storage)
			changes.state_storage = check.state_storage;
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	cq_api_alter(name, &changes);
	if (query_text)
		cq_api_alter_query(name, query_text);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * check_run
 *	  cq.run needs a name, a read-write transaction (a batch on the
 *	  shared-memory store wrote its target and offsets from C in a read-only
 *	  one before session 42, and another failed on its first statement) and
 *	  a READ COMMITTED transaction: a batch must see
 *	  the batches that committed while it waited for the query's row lock;
 *	  with one snapshot for the whole transaction it would read the offset
 *	  as of its start and process those rows again.
 */
static void
check_run(const char *name)
{
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("continuous query name must not be null")));
	/* a batch writes (its target, state and offsets, some from C only) */
	PreventCommandIfReadOnly("cq.run()");
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot run continuous query \"%s\" in a %s transaction", name,
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("A batch reads the offsets of concurrent batches, which a transaction snapshot hides."),
				 errhint("Call cq.run in a READ COMMITTED transaction: BEGIN ISOLATION LEVEL READ COMMITTED, "
						 "or SET default_transaction_isolation = 'read committed'.")));
}

/*
 * cq_run
 *	  CALL cq.run(name, once): available-now.  Processes everything
 *	  committed before the call, one transaction per batch (when called
 *	  outside a transaction block), a NOTICE per batch (callrun.c).  once
 *	  => one batch, ignoring max_rows_per_trigger.  Outside a transaction
 *	  block a failing batch leaves the query 'failed' with last_error
 *	  (committed) before the error reaches the caller; a batch that runs
 *	  clears an earlier failure.  Refused in REPEATABLE READ and
 *	  SERIALIZABLE transactions.  The checks and the target are the
 *	  caller's; outside a transaction block the batches run in an idle
 *	  pool worker when there is one (cq.run_in_worker, handoff.c), else
 *	  here.  Handed off, the caller only resolves the name to the schemas
 *	  to look in (its search_path and rights) and the worker reads the
 *	  query there and checks the caller's ownership (catalog_name.c): a new
 *	  backend then does not build its cache of cq.queries for one row.
 */
Datum
cq_run(PG_FUNCTION_ARGS)
{
	char	   *name = arg_text(fcinfo, 0);
	bool		once = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	bool		atomic = !(fcinfo->context && IsA(fcinfo->context, CallContext) &&
						   !castNode(CallContext, fcinfo->context)->atomic);
	CqCallRun	r;
	CqQuery    *q;
	bool		tried = false;

	check_run(name);
	if (SPI_connect_ext(atomic ? 0 : SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");

	/* everything committed before the call */
	memset(&r, 0, sizeof(r));
	r.target = cq_snap_current();
	r.name = cq_catalog_shown_name(name);	/* NOTICEs name it as errors do */
	r.once = once;

	/*
	 * handed off by name: the worker finds the query and checks the owner.
	 * Not with Citus: a source stamped per node needs every node's goal
	 * taken at the call, here (cq_batch_node_goal), which needs the query.
	 */
	if (!atomic && cq_handoff_applies() && !cq_citus_installed() &&
		cq_catalog_name_path(name, false, (char **) &r.objname, (char **) &r.shown,
							 (Oid **) &r.path, &r.npath))
	{
		r.caller = GetUserId();
		tried = true;
		if (cq_handoff_run(&r))
		{
			SPI_finish();
			PG_RETURN_VOID();
		}
		r.objname = NULL;
	}

	q = cq_api_owned_query(name, false);
	r.id = q->id;
	r.has_watermark = q->opts.watermark != NULL;
	r.was_failed = strcmp(q->state, "failed") == 0;
	r.node_target = cq_batch_node_goal(q->source, q->owner);	/* a source stamped per node */
	if (atomic || tried || !cq_handoff_run(&r))
	{
		cq_callrun_loop(&r, atomic);
		if (!atomic)
			cq_handoff_ran_here(r.id);	/* a worker warms up for the next call */
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * cq_api_check_owner
 *	  check_owner for other modules (control.c): only the query's owner or
 *	  a superuser may pause, resume or reset it.
 */
void
cq_api_check_owner(CqQuery *q)
{
	check_owner(q);
}

/*
 * cq_state_rows
 *	  cq.state_rows(query_id, NULL::cq_state.s_<id>): the state rows of a
 *	  query with state_storage = 'memory', read from its shared-memory
 *	  store; before the first batch after a restart (no store yet), from
 *	  its state table image.  Its final view reads them.  The caller needs
 *	  SELECT on the state table or on the final view.  The image is read
 *	  as the state table's owner (security-restricted, search_path
 *	  pinned): whatever its owner made of that table runs with the
 *	  owner's rights, never a superuser's.
 */
Datum
cq_state_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int32		id;
	Oid			relid;
	Oid			fview;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("query id must not be null")));
	id = PG_GETARG_INT32(0);
	relid = get_typ_typrelid(get_fn_expr_argtype(fcinfo->flinfo, 1));
	if (!OidIsValid(relid) || relid != cq_objects_relid("s", id))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("row type does not match the state table of continuous query %d", id),
				 errhint("Call it as cq.state_rows(id, NULL::cq_state.s_<id>).")));
	fview = cq_objects_relid("f", id);
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		(!OidIsValid(fview) || pg_class_aclcheck(fview, GetUserId(), ACL_SELECT) != ACLCHECK_OK))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	InitMaterializedSRF(fcinfo, 0);
	if (!cq_store_read(MyDatabaseId, id, rsinfo->setResult, rsinfo->setDesc))
	{
		CqSecurity	sec;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		cq_security_owner(cq_rel_owner(relid), &sec);
		cq_spi_exec(psprintf("SELECT * FROM %s", cq_sql_relname_str(relid)), SPI_OK_SELECT, 0, NULL, NULL, NULL);
		cq_security_restore(&sec);
		for (uint64 i = 0; i < SPI_processed; i++)
			tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
		SPI_finish();
	}
	PG_RETURN_VOID();
}

/*
 * cq_state_store_info
 *	  cq.state_store_info(name): the batch id, rows and bytes (as counted
 *	  against cq.state_memory) of the published store of a query whose
 *	  owner's privileges the caller has (as cq.queries shows it); NULL
 *	  when it has none in shared memory now.
 */
Datum
cq_state_store_info(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	CqQuery    *q;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int64		batch_id;
	int64		rows;
	int64		bytes;
	int32		id;
	Oid			rowtype;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "pg_cq: return type must be a row type");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	q = cq_catalog_get_query(name, false, false);
	check_owner(q);				/* its size tells about its data */
	id = q->id;
	rowtype = get_rel_type_id(q->state_table);
	SPI_finish();
	if (!cq_store_info(MyDatabaseId, id, rowtype, &batch_id, &rows, &bytes))
		PG_RETURN_NULL();
	values[0] = Int64GetDatum(batch_id);
	values[1] = Int64GetDatum(rows);
	values[2] = Int64GetDatum(bytes);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
