/*-------------------------------------------------------------------------
 *
 * catalog_ddl.c
 *	  The changes of cq.queries that DDL on a query's relations makes
 *	  (ddl.c's hooks, tracking.c's guards): a new owner, the rename of an
 *	  event-time column, and whether a table is some query's source; and
 *	  the DDL of a query itself: its state table, changed options, its row
 *	  deleted (moved out of catalog.c, which is full, in session 33); the
 *	  insert of a new query's row (session 36), its settings taken anew
 *	  when its text is replaced before its first batch (session 42).
 *
 * As in catalog.c: callers have SPI connected and are inside a
 * transaction, and every statement runs in a superuser section
 * (security.c: search_path pinned, operators spelled
 * OPERATOR(pg_catalog.x)).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "catalog.h"
#include "options.h"
#include "wakeup.h"
#include "security.h"
#include "settings_pin.h"
#include "sql_builder.h"

/*
 * cq_catalog_set_owner
 *	  Record a query's new owner (its query view changed owner).
 */
void
cq_catalog_set_owner(int32 id, Oid owner)
{
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		values[2] = {Int32GetDatum(id), ObjectIdGetDatum(owner)};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET owner = $2::pg_catalog.regrole "
				"WHERE id OPERATOR(pg_catalog.=) $1 AND owner OPERATOR(pg_catalog.<>) $2::pg_catalog.regrole",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_relation_is_source
 *	  Is relid the source of some continuous query (of any owner)?
 */
bool
cq_catalog_relation_is_source(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	/* since 0.2, the second stream of a join (join_source) is a source too */
	cq_spi_exec(cq_catalog_version() >= CQ_CATALOG_0_2 ?
				"SELECT 1 FROM cq.queries WHERE source::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
				"OR join_source::pg_catalog.oid OPERATOR(pg_catalog.=) $1 LIMIT 1" :
				"SELECT 1 FROM cq.queries WHERE source::pg_catalog.oid OPERATOR(pg_catalog.=) $1 LIMIT 1",
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	return SPI_processed > 0;
}

/*
 * cq_catalog_rename_event_time
 *	  A column named oldname of the tables relids was renamed newname: the
 *	  queries reading one of them whose event-time column it was name it
 *	  by its new name (cq.queries.event_time always shows the current
 *	  name, and a dump restores it).  Returns the number of queries.  With
 *	  newname NULL, only lock their rows, as a batch does before it locks
 *	  its tables: called before the rename locks the tables, a rename waits
 *	  for a running batch instead of deadlocking with it.
 */
uint64
cq_catalog_rename_event_time(List *relids, const char *oldname, const char *newname)
{
	Oid			types[3] = {OIDARRAYOID, TEXTOID, TEXTOID};
	Datum		values[3];
	Datum	   *oids = palloc(sizeof(Datum) * Max(list_length(relids), 1));
	CqSecurity	sec;
	int			n = 0;
	ListCell   *lc;

	foreach(lc, relids)
		oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	values[0] = PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	values[1] = CStringGetTextDatum(oldname);
	values[2] = newname ? CStringGetTextDatum(newname) : (Datum) 0;

	cq_security_superuser(&sec);
	if (newname == NULL)
		cq_spi_exec("SELECT 1 FROM cq.queries "
					"WHERE event_time OPERATOR(pg_catalog.=) $2 "
					"AND source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) FOR NO KEY UPDATE",
					SPI_OK_SELECT, 2, types, values, NULL);
	else
		cq_spi_exec("UPDATE cq.queries SET event_time = $3 "
					"WHERE event_time OPERATOR(pg_catalog.=) $2 "
					"AND source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
					SPI_OK_UPDATE, 3, types, values, NULL);
	n = (int) SPI_processed;
	if (cq_catalog_version() >= CQ_CATALOG_0_2)
	{
		/* the event-time column of the second stream of a join */
		if (newname == NULL)
			cq_spi_exec("SELECT 1 FROM cq.queries "
						"WHERE join_event_time OPERATOR(pg_catalog.=) $2 "
						"AND join_source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) FOR NO KEY UPDATE",
						SPI_OK_SELECT, 2, types, values, NULL);
		else
			cq_spi_exec("UPDATE cq.queries SET join_event_time = $3 "
						"WHERE join_event_time OPERATOR(pg_catalog.=) $2 "
						"AND join_source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)",
						SPI_OK_UPDATE, 3, types, values, NULL);
		n += (int) SPI_processed;
	}
	cq_security_restore(&sec);
	return n;
}

/*
 * cq_catalog_set_state_table
 *	  Remember the state table of a query.
 */
void
cq_catalog_set_state_table(int32 id, Oid state_table)
{
	Oid			types[2] = {INT4OID, OIDOID};
	Datum		values[2] = {Int32GetDatum(id), ObjectIdGetDatum(state_table)};
	CqSecurity	sec;

	char		nulls[2] = {' ', OidIsValid(state_table) ? ' ' : 'n'};

	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET state_table = $2::pg_catalog.regclass WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 2, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_delete_query
 *	  Delete a query's row; its offsets and progress go with it.
 */
void
cq_catalog_delete_query(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	CqSecurity	sec;

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec("DELETE FROM cq.queries WHERE id OPERATOR(pg_catalog.=) $1", SPI_OK_DELETE, 1, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_update_options
 *	  Store changed options (already validated).
 */
void
cq_catalog_update_options(int32 id, CqOptions *o)
{
	Oid			types[1 + CQ_CATALOG_NOPTIONS] = {INT4OID};
	Datum		values[1 + CQ_CATALOG_NOPTIONS];
	char		nulls[1 + CQ_CATALOG_NOPTIONS];
	CqSecurity	sec;

	values[0] = Int32GetDatum(id);
	nulls[0] = ' ';
	/* $2 to $9 */
	cq_catalog_options_datums(o, &types[1], &values[1], &nulls[1]);

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET output_mode = $2, \"trigger\" = $3, event_time = $4, "
				"watermark_delay = $5::pg_catalog.interval, max_rows_per_trigger = $6, starting = $7, "
				"state_storage = $8, complete_refresh = $9 WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 1 + CQ_CATALOG_NOPTIONS, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_options_datums
 *	  The options of a cq.queries row as statement parameters, the
 *	  CQ_CATALOG_NOPTIONS from types[0], values[0] and nulls[0]: output_mode,
 *	  trigger, event_time, watermark_delay (text: the statement casts it),
 *	  max_rows_per_trigger (NULL when not positive), starting,
 *	  state_storage, complete_refresh.  For the INSERT of a new query and
 *	  the UPDATE of its options (catalog_ddl.c), in that order in both.
 */
void
cq_catalog_options_datums(CqOptions *o, Oid *types, Datum *values, char *nulls)
{
	static const Oid option_types[CQ_CATALOG_NOPTIONS] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	INT8OID, TEXTOID, TEXTOID, TEXTOID};

	memcpy(types, option_types, sizeof(option_types));
	memset(nulls, ' ', CQ_CATALOG_NOPTIONS);
	values[0] = CStringGetTextDatum(o->output_mode);
	values[1] = CStringGetTextDatum(o->trigger);
	values[2] = o->event_time ? CStringGetTextDatum(o->event_time) : (Datum) 0;
	nulls[2] = o->event_time ? ' ' : 'n';
	values[3] = o->watermark ? CStringGetTextDatum(o->watermark) : (Datum) 0;
	nulls[3] = o->watermark ? ' ' : 'n';
	values[4] = Int64GetDatum(o->max_rows_per_trigger);
	nulls[4] = o->max_rows_per_trigger > 0 ? ' ' : 'n';
	values[5] = CStringGetTextDatum(o->starting);
	values[6] = CStringGetTextDatum(o->state_storage);
	values[7] = CStringGetTextDatum(o->complete_refresh);
}

/*
 * cq_catalog_insert_query
 *	  Insert a cq.queries row; returns its internal id.
 */
int32
cq_catalog_insert_query(const char *name, Oid owner, Oid source, Oid target,
						const char *query_text, CqOptions *o,
						const char *query_tree, const char *start_offset)
{
	Oid			types[19] = {TEXTOID, OIDOID, OIDOID, OIDOID, TEXTOID};
	Datum		values[19];
	char		nulls[19];
	CqSecurity	sec;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(name);
	values[1] = ObjectIdGetDatum(owner);
	values[2] = ObjectIdGetDatum(source);
	values[3] = ObjectIdGetDatum(target);
	values[4] = CStringGetTextDatum(query_text);
	/* $6 to $13 */
	cq_catalog_options_datums(o, &types[5], &values[5], &nulls[5]);
	for (int i = 13; i < 18; i++)
		types[i] = TEXTOID;
	values[13] = CStringGetTextDatum(query_tree);
	values[14] = CStringGetTextDatum(start_offset);
	values[15] = (Datum) 0;
	nulls[15] = 'n';

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	values[15] = CStringGetTextDatum(cq_catalog_cluster_id());
	nulls[15] = ' ';
	values[16] = CStringGetTextDatum(GetConfigOption("TimeZone", false, false));
	nulls[16] = ' ';
	values[17] = o->state_path ? CStringGetTextDatum(o->state_path) : (Datum) 0;
	nulls[17] = o->state_path ? ' ' : 'n';
	/* the settings its batches run with beside TimeZone (settings_pin.c) */
	types[18] = TEXTARRAYOID;
	values[18] = cq_settings_pin_capture();
	/* since 0.2, a query lives in its target's schema */
	if (cq_catalog_version() >= CQ_CATALOG_0_2)
		cq_spi_exec("INSERT INTO cq.queries (name, owner, source, target, query, output_mode, \"trigger\", "
					"event_time, watermark_delay, max_rows_per_trigger, starting, state_storage, "
					"complete_refresh, query_tree, start_offset, cluster_id, timezone, schema, state_path, "
					"settings) "
					"SELECT $1, $2::pg_catalog.regrole, $3::pg_catalog.regclass, $4::pg_catalog.regclass, "
					"$5, $6, $7, $8, $9::pg_catalog.interval, $10, $11, $12, $13, $14, "
					"$15::pg_catalog.pg_snapshot, $16, $17, n.nspname, $18, $19 "
					"FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
					"  ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
					"WHERE c.oid OPERATOR(pg_catalog.=) $4 RETURNING id",
					SPI_OK_INSERT_RETURNING, 19, types, values, nulls);
	else
		cq_spi_exec("INSERT INTO cq.queries (name, owner, source, target, query, output_mode, \"trigger\", "
					"event_time, watermark_delay, max_rows_per_trigger, starting, state_storage, "
					"complete_refresh, query_tree, start_offset, cluster_id, timezone) "
					"VALUES ($1, $2::pg_catalog.regrole, $3::pg_catalog.regclass, $4::pg_catalog.regclass, "
					"$5, $6, $7, $8, $9::pg_catalog.interval, $10, $11, $12, $13, $14, "
					"$15::pg_catalog.pg_snapshot, $16, $17) RETURNING id",
					SPI_OK_INSERT_RETURNING, 17, types, values, nulls);
	if (SPI_processed != 1)
		elog(ERROR, "pg_cq: target %u of continuous query \"%s\" not found", target, name);
	cq_security_restore(&sec);
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		/* the id column: integer (int8 accepted too, as catalog.c reads it) */
		if (isnull)
			return 0;
		return SPI_gettypeid(SPI_tuptable->tupdesc, 1) == INT4OID ? DatumGetInt32(d) :
			(int32) DatumGetInt64(d);
	}
}

/*
 * cq_catalog_capture_settings
 *	  Record the current TimeZone and pinned settings (settings_pin.c) as
 *	  the query's, as cq_catalog_insert_query does for a new query: for a
 *	  query text that replaces the old one before any batch computed a
 *	  value under the old ones (cq.alter_query).  On a 0.1 catalog only
 *	  TimeZone (it has no settings column).
 */
void
cq_catalog_capture_settings(int32 id)
{
	Oid			types[3] = {INT4OID, TEXTOID, TEXTARRAYOID};
	Datum		values[3];
	CqSecurity	sec;

	values[0] = Int32GetDatum(id);
	values[1] = CStringGetTextDatum(GetConfigOption("TimeZone", false, false));
	values[2] = cq_settings_pin_capture();
	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	if (cq_catalog_version() >= CQ_CATALOG_0_2)
		cq_spi_exec("UPDATE cq.queries SET timezone = $2, settings = $3 WHERE id OPERATOR(pg_catalog.=) $1",
					SPI_OK_UPDATE, 3, types, values, NULL);
	else
		cq_spi_exec("UPDATE cq.queries SET timezone = $2 WHERE id OPERATOR(pg_catalog.=) $1",
					SPI_OK_UPDATE, 2, types, values, NULL);
	cq_security_restore(&sec);
}
