/*-------------------------------------------------------------------------
 *
 * objects.c
 *	  A query's internal objects: the query view, the state table and the
 *	  final view in schema cq_state, with their dependencies.
 *
 * Internal objects of query <id>, in schema cq_state, owned by the query's
 * owner:
 *	 q_<id>  a view of the user's query: holds the dependencies on the
 *			 source, its columns and functions (so DROP and ALTER of them are
 *			 refused as for any view), and is auto-dropped with the target
 *	 s_<id>  the state table (aggregations, SELECT DISTINCT), auto-dropped
 *			 with q_<id>
 *	 f_<id>  final values per group over s_<id>
 *	 sd_<id> the (group, value) pairs seen by DISTINCT aggregates, when the
 *			 query has some: part of the state (same storage, emptied and
 *			 rebuilt with it), auto-dropped with q_<id>
 *
 * They are created and dropped as superuser (security.c) and handed to the
 * owner; the update-mode target's key index is created as the owner.  Both
 * api.c (create, alter, drop) and restore.c (a query restored from a dump)
 * call down to here.  Everything runs in the caller's transaction, with SPI
 * connected.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_rewrite.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "miscadmin.h"
#include "nodes/readfuncs.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteSupport.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "objects.h"
#include "store.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "catalog.h"
#include "analyze.h"
#include "tracking.h"
#include "state.h"
#include "sink.h"
#include "dedup.h"
#include "session.h"

/*
 * true while pg_cq itself drops a query's internal objects to recreate them
 * (ddl.c's hooks then stand aside)
 */
bool		cq_objects_recreating = false;

/*
 * cq_objects_name
 *	  "cq_state.<prefix>_<id>", quoted.
 */
char *
cq_objects_name(const char *prefix, int32 id)
{
	return quote_qualified_identifier("cq_state", psprintf("%s_%d", prefix, id));
}

/*
 * cq_objects_relid
 *	  OID of cq_state.<prefix>_<id>.
 */
Oid
cq_objects_relid(const char *prefix, int32 id)
{
	return get_relname_relid(psprintf("%s_%d", prefix, id),
							 get_namespace_oid("cq_state", false));
}

/*
 * add_auto_dependency
 *	  dependent is dropped automatically with referenced.
 */
static void
add_auto_dependency(Oid dependent, Oid referenced)
{
	ObjectAddress dep,
				ref;

	ObjectAddressSet(dep, RelationRelationId, dependent);
	ObjectAddressSet(ref, RelationRelationId, referenced);
	recordDependencyOn(&dep, &ref, DEPENDENCY_AUTO);
}

/*
 * cq_objects_ensure_key_index
 *	  Update mode finds a group's row in the target by its keys: with a
 *	  hashed state, through an index on the hash of the key columns (in
 *	  grouping order); otherwise through a unique index on exactly those
 *	  columns that treats NULL as a value (ON CONFLICT).  Creates the index
 *	  unless the target has one.
 */
void
cq_objects_ensure_key_index(CqAnalysis *an, Oid target, bool hashed)
{
	Relation	rel;
	List	   *keys = NIL;
	List	   *indexes;
	ListCell   *lc,
			   *lk;
	bool		found = false;

	if (!an->is_aggregate || an->group_exprs == NIL)
		return;

	rel = table_open(target, AccessShareLock);
	if (hashed)
	{
		keys = cq_sink_target_key_attnums(an, rel);
	}
	else
	{
		forboth(lc, an->outputs, lk, an->output_key)
		{
			if (lfirst_int(lk) >= 0)
				keys = lappend_int(keys, attnameAttNum(rel, ((TargetEntry *) lfirst(lc))->resname, false));
		}
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = idx->rd_index;

		if (hashed)
			found |= cq_sink_is_key_hash_index(idx, keys);
		else if (ix->indisunique && ix->indnullsnotdistinct && ix->indnkeyatts == list_length(keys) &&
				 RelationGetIndexExpressions(idx) == NIL && RelationGetIndexPredicate(idx) == NIL)
		{
			bool		same = true;

			for (int i = 0; i < ix->indnkeyatts; i++)
				if (!list_member_int(keys, ix->indkey.values[i]))
					same = false;
			found |= same;
		}
		index_close(idx, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	if (found)
		return;

	cq_spi_exec(cq_sink_target_key_index_sql(an, cq_sql_relname_str(target), hashed),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
}

/*
 * cq_objects_deparse_query
 *	  The query as text with every name schema-qualified.
 */
char *
cq_objects_deparse_query(Query *query)
{
	int			nest = cq_security_deparse_begin();
	char	   *sql;

	sql = cq_sql_querydef(query);
	cq_security_deparse_end(nest);
	return sql;
}

/*
 * query_view_sql
 *	  DDL of the query view q_<id>.  It wraps the query so that its only
 *	  column never changes: a changed query replaces the view's rule (and
 *	  its dependencies) while the view, which state and final view hang on,
 *	  stays.
 */
static char *
query_view_sql(const char *qview, CqAnalysis *an, bool replace)
{
	return psprintf("CREATE %sVIEW %s AS SELECT 1 AS query FROM (%s) q",
					replace ? "OR REPLACE " : "", qview, cq_objects_deparse_query(an->query));
}

/*
 * add_column_dependency
 *	  The rule of query view qview_id depends on column attno of relid.
 */
static void
add_column_dependency(Oid qview_id, Oid relid, AttrNumber attno)
{
	ObjectAddress dep,
				ref;

	ObjectAddressSet(dep, RewriteRelationId, get_rewrite_oid(qview_id, ViewSelectRuleName, false));
	ObjectAddressSubSet(ref, RelationRelationId, relid, attno);
	recordDependencyOn(&dep, &ref, DEPENDENCY_NORMAL);
}

/*
 * add_rule_dependencies
 *	  The tracking column (cq_xid) and the event-time column of each stream
 *	  cannot be dropped or change type while the query view reads it, even
 *	  when the query itself does not mention them (a renamed event-time
 *	  column is followed: see ddl.c).  The view's rule depends on them, as
 *	  on the columns the query reads, so that core's messages name the view
 *	  (a dependency of the view itself is one ALTER COLUMN ... TYPE does not
 *	  expect: it raised an internal error for cq_xid before session 42).
 *	  A replaced rule loses its dependencies (CREATE OR REPLACE VIEW records
 *	  those of the new query only): every replacement calls this again.
 */
static void
add_rule_dependencies(Oid qview_id, CqAnalysis *an)
{
	add_column_dependency(qview_id, an->source_relid, cq_source_tracking_attnum(an->source_relid));
	if (an->et_attno != InvalidAttrNumber)
		add_column_dependency(qview_id, an->source_relid, an->et_attno);
	if (an->join != NULL)
	{
		CqJoinSide *side = &an->join->side[1];

		add_column_dependency(qview_id, side->relid, cq_source_tracking_attnum(side->relid));
		if (side->et_attno != InvalidAttrNumber)
			add_column_dependency(qview_id, side->relid, side->et_attno);
	}
}

/*
 * state_source
 *	  What the final view of query id reads: its state table, or for a
 *	  query in the shared-memory store (catalog 0.2; cq_options_in_memory)
 *	  its store through cq.state_rows.
 */
static char *
state_source(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};

	if (cq_catalog_version() >= CQ_CATALOG_0_2)
	{
		cq_spi_exec("SELECT 1 FROM cq.queries WHERE id OPERATOR(pg_catalog.=) $1 "
					"AND (state_storage OPERATOR(pg_catalog.=) 'memory' "
					"OR (state_storage OPERATOR(pg_catalog.=) 'logged' "
					"AND pg_catalog.starts_with(state_path, 'memory')))",
					SPI_OK_SELECT, 1, types, values, NULL);
		if (SPI_processed == 1)
			return psprintf("cq.state_rows(%d, NULL::%s)", id, cq_objects_name("s", id));
	}
	return cq_objects_name("s", id);
}

/*
 * cq_objects_replace_final_view
 *	  Replace final view f_<id> by the final values of the groups that
 *	  satisfy the query's HAVING condition (all groups without HAVING), so
 *	  that it shows what the target shows.  Its columns stay: the condition
 *	  is deparsed against the view as it is.  Caller is in a superuser
 *	  section.
 */
void
cq_objects_replace_final_view(int32 id, CqAnalysis *an)
{
	char	   *fview = cq_objects_name("f", id);
	Oid			viewid = cq_objects_relid("f", id);

	cq_spi_exec(psprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM (SELECT %s FROM %s s) f%s",
						 fview, cq_state_final_select_list(an), state_source(id),
						 cq_sink_having_where(an, viewid)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	CommandCounterIncrement();
}

/*
 * create_state_objects
 *	  State table s_<id> (with sd_<id> for DISTINCT aggregates) and final
 *	  view f_<id> of an aggregation (only the state table for SELECT
 *	  DISTINCT), owned by the query's owner, auto-dropped with the query
 *	  view.  Runs as superuser.
 */
static void
create_state_objects(CqAnalysis *an, int32 id, Oid owner, CqOptions *opts)
{
	const char *owner_name = quote_identifier(GetUserNameFromId(owner, false));
	char	   *state = cq_objects_name("s", id);
	char	   *fview = cq_objects_name("f", id);
	Oid			state_id;
	Oid			qview_id = cq_objects_relid("q", id);
	char	   *pairs = cq_objects_name("sd", id);
	char	   *pairs_sql = NULL;

	if (!an->is_aggregate && !an->is_dedup)
	{
		cq_catalog_set_state_table(id, InvalidOid);
		return;
	}
	if (strcmp(opts->state_storage, "memory") == 0)
	{
		const char *why;

		if (!cq_store_supported(an, InvalidOid, &why))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("continuous query cannot keep its state in shared memory"),
					 errdetail("%s", why),
					 errhint("Leave state_storage out, or use 'unlogged' or 'logged': the state is then kept in a table.")));
	}
	if (an->is_dedup)
	{
		/* SELECT DISTINCT: the keys seen, no final view */
		cq_spi_exec(cq_dedup_state_table_sql(an, state, strcmp(opts->state_storage, "logged") == 0),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		cq_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s; REVOKE ALL ON %s FROM PUBLIC",
							 state, owner_name, state),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	}
	else
	{
		/*
		 * The state of an aggregation over a join of two streams is always
		 * logged: a crash rebuild from the sources would need the rows the
		 * buffers have evicted while their windows are still open (join.c).
		 */
		bool		logged = strcmp(opts->state_storage, "logged") == 0 || an->join != NULL;

		pairs_sql = cq_state_distinct_table_sql(an, pairs, logged);
		cq_spi_exec(an->session ?
					cq_session_state_table_sql(an, state, logged, opts->mode) :
					cq_state_table_sql(an, state, logged),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		cq_spi_exec(cq_state_final_view_sql(an, fview, state_source(id)), SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		if (an->query->havingQual)
		{
			CommandCounterIncrement();
			cq_objects_replace_final_view(id, an);
		}
		cq_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s; ALTER VIEW %s OWNER TO %s; "
							 "REVOKE ALL ON %s, %s FROM PUBLIC",
							 state, owner_name, fview, owner_name, state, fview),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
		if (pairs_sql)
			cq_spi_exec(psprintf("%s; ALTER TABLE %s OWNER TO %s; REVOKE ALL ON %s FROM PUBLIC",
								 pairs_sql, pairs, owner_name, pairs),
						SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	}
	CommandCounterIncrement();
	state_id = cq_objects_relid("s", id);
	add_auto_dependency(state_id, qview_id);
	if (!an->is_dedup)
		add_auto_dependency(cq_objects_relid("f", id), qview_id);
	if (pairs_sql)
		add_auto_dependency(cq_objects_relid("sd", id), qview_id);
	cq_catalog_set_state_table(id, state_id);
	if (strcmp(opts->state_storage, "unlogged") == 0)
		cq_catalog_state_valid(id, -1);
}

/*
 * cq_objects_create
 *	  The query view, state table and final view (see file header).  They
 *	  are created as superuser in cq_state and handed to the owner.
 */
void
cq_objects_create(CqAnalysis *an, int32 id, Oid owner, Oid target, CqOptions *opts)
{
	char	   *qview = cq_objects_name("q", id);
	const char *owner_name = quote_identifier(GetUserNameFromId(owner, false));
	CqSecurity	sec;
	Oid			qview_id;

	cq_security_superuser(&sec);
	cq_spi_exec(query_view_sql(qview, an, false), SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_spi_exec(psprintf("ALTER VIEW %s OWNER TO %s; REVOKE ALL ON %s FROM PUBLIC",
						 qview, owner_name, qview),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	CommandCounterIncrement();
	qview_id = cq_objects_relid("q", id);
	add_auto_dependency(qview_id, target);
	add_rule_dependencies(qview_id, an);
	create_state_objects(an, id, owner, opts);
	cq_security_restore(&sec);
	CommandCounterIncrement();
}

/*
 * cq_objects_recreate
 *	  Drop whatever internal objects of a query exist and create them anew
 *	  (with their dependencies) from its stored tree.  Used when a query is
 *	  restored from a dump, which keeps the objects but not pg_depend.
 */
void
cq_objects_recreate(CqQuery *q)
{
	CqAnalysis *an = cq_analyze_query((Query *) stringToNode(q->query_tree), &q->opts, q->name);
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_objects_recreating = true;
	PG_TRY();
	{
		cq_spi_exec(psprintf("DROP VIEW IF EXISTS %s, %s CASCADE; DROP TABLE IF EXISTS %s, %s CASCADE",
							 cq_objects_name("f", q->id), cq_objects_name("q", q->id), cq_objects_name("s", q->id),
							 cq_objects_name("sd", q->id)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	}
	PG_FINALLY();
	{
		cq_objects_recreating = false;
	}
	PG_END_TRY();
	cq_security_restore(&sec);
	CommandCounterIncrement();
	cq_objects_create(an, q->id, q->owner, q->target, &q->opts);

	/* the new state may be keyed otherwise than the restored target's index */
	if (q->opts.mode == CQ_MODE_UPDATE)
	{
		cq_security_owner(q->owner, &sec);
		cq_objects_ensure_key_index(an, q->target, an->keys_hashable);
		cq_security_restore(&sec);
		CommandCounterIncrement();
	}
}

/*
 * cq_objects_drop
 *	  Drop q_<id> and, through dependencies, the state of a query.
 */
void
cq_objects_drop(CqQuery *q)
{
	Oid			qview = cq_objects_relid("q", q->id);
	CqSecurity	sec;

	if (!OidIsValid(qview))
		return;
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("DROP VIEW IF EXISTS %s CASCADE", cq_objects_name("q", q->id)),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);
}

/*
 * cq_objects_replace_query_view
 *	  Replace the rule of query view q_<id> by a changed query (the view,
 *	  which state and final view hang on, stays).  Caller is in a superuser
 *	  section.
 */
void
cq_objects_replace_query_view(int32 id, CqAnalysis *an)
{
	cq_spi_exec(query_view_sql(cq_objects_name("q", id), an, true),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	CommandCounterIncrement();
	add_rule_dependencies(cq_objects_relid("q", id), an);
}

/*
 * cq_objects_replace
 *	  A query replaced before its first batch: drop its state, replace the
 *	  query view and its dependencies on the source, and create the state
 *	  objects of the new query.  Caller is in a superuser section.
 */
void
cq_objects_replace(CqQuery *q, CqAnalysis *an)
{
	Oid			qview_id = cq_objects_relid("q", q->id);

	if (OidIsValid(q->state_table))
		cq_spi_exec(psprintf("DROP TABLE %s CASCADE", cq_objects_name("s", q->id)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	if (OidIsValid(cq_objects_relid("sd", q->id)))
		cq_spi_exec(psprintf("DROP TABLE %s", cq_objects_name("sd", q->id)),
					SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_spi_exec(query_view_sql(cq_objects_name("q", q->id), an, true), SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	deleteDependencyRecordsForSpecific(RelationRelationId, qview_id, DEPENDENCY_NORMAL,
									   RelationRelationId, q->source);
	add_rule_dependencies(qview_id, an);
	CommandCounterIncrement();
	create_state_objects(an, q->id, q->owner, &q->opts);
}

/* every comment pg_cq writes starts so; other comments are the owner's */
#define CQ_COMMENT_PREFIX "continuous query "
#define CQ_COMMENT_MARK ": output mode "

/*
 * comment_is_ours
 *	  Whether a table comment is one pg_cq wrote (or there is none).
 */
static bool
comment_is_ours(const char *comment)
{
	return comment == NULL ||
		(strncmp(comment, CQ_COMMENT_PREFIX, strlen(CQ_COMMENT_PREFIX)) == 0 &&
		 strstr(comment, CQ_COMMENT_MARK) != NULL);
}

/*
 * cq_objects_target_comment
 *	  "continuous query s.q: output mode m, trigger 't'", plus the event
 *	  time and watermark when set.
 */
char *
cq_objects_target_comment(Oid target, const char *name, CqOptions *opts)
{
	StringInfoData buf;
	char	   *nsp = get_namespace_name(get_rel_namespace(target));

	initStringInfo(&buf);
	appendStringInfo(&buf, CQ_COMMENT_PREFIX "%s" CQ_COMMENT_MARK "%s, trigger '%s'",
					 quote_qualified_identifier(nsp, name),
					 opts->output_mode, opts->trigger);
	if (opts->event_time)
		appendStringInfo(&buf, ", event time %s", quote_identifier(opts->event_time));
	if (opts->watermark_delay)
		appendStringInfo(&buf, ", watermark '%s'",
						 DatumGetCString(DirectFunctionCall1(interval_out,
															 IntervalPGetDatum(opts->watermark_delay))));
	return buf.data;
}

/*
 * cq_objects_comment_target
 *	  Describe query `name` (options `opts`, defaults filled) in the comment
 *	  of its target table, unless the table carries a comment pg_cq did not
 *	  write.  The caller has checked that the user owns the query.
 */
void
cq_objects_comment_target(Oid target, const char *name, CqOptions *opts)
{
	if (!comment_is_ours(GetComment(target, RelationRelationId, 0)))
		return;
	CreateComments(target, RelationRelationId, 0, cq_objects_target_comment(target, name, opts));
}
