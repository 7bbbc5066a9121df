/*-------------------------------------------------------------------------
 *
 * sql_builder.c
 *	  The only place that turns names into SQL text, plus SPI helpers.
 *
 * Identifiers are always resolved from OIDs at the time of use and quoted,
 * so renamed tables keep working; values always travel as $n parameters.
 * Type and collation names are schema-qualified because generated SQL runs
 * under a fixed search_path.
 *
 * SPI helpers raise an error on any unexpected return code.  Switching
 * users is security.c's business.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/memutils.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "common/hashfn.h"

#include "sql_builder.h"

/*
 * cq_sql_ident
 *	  Append a quoted identifier.
 */
void
cq_sql_ident(StringInfo buf, const char *ident)
{
	appendStringInfoString(buf, quote_identifier(ident));
}

/*
 * cq_sql_relname
 *	  Append the schema-qualified, quoted name of a relation.
 */
void
cq_sql_relname(StringInfo buf, Oid relid)
{
	char	   *relname = get_rel_name(relid);
	Oid			nsp = get_rel_namespace(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	appendStringInfoString(buf,
						   quote_qualified_identifier(get_namespace_name(nsp), relname));
}

/*
 * cq_sql_relname_str
 *	  The schema-qualified, quoted name of a relation, palloc'd.
 */
char *
cq_sql_relname_str(Oid relid)
{
	StringInfoData buf;

	initStringInfo(&buf);
	cq_sql_relname(&buf, relid);
	return buf.data;
}

/*
 * cq_sql_type
 *	  Schema-qualified type name with its modifier, usable in DDL.
 */
char *
cq_sql_type(Oid type, int32 typmod)
{
	return format_type_extended(type, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * cq_sql_collation
 *	  " COLLATE schema.name", always qualified (ruleutils'
 *	  generate_collation_name leaves out the schema when the current
 *	  search_path shows it, and a batch built in a user's session runs
 *	  under the pinned search_path), or "" for InvalidOid.
 */
char *
cq_sql_collation(Oid collation)
{
	HeapTuple	tp;
	Form_pg_collation coll;
	char	   *result;

	if (!OidIsValid(collation))
		return "";
	tp = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	coll = (Form_pg_collation) GETSTRUCT(tp);
	result = psprintf(" COLLATE %s",
					  quote_qualified_identifier(get_namespace_name(coll->collnamespace),
												 NameStr(coll->collname)));
	ReleaseSysCache(tp);
	return result;
}

/*
 * cq_sql_collate
 *	  cq_sql_collation for a collatable type whose collation differs from
 *	  the type's default, else "".
 */
char *
cq_sql_collate(Oid collation, Oid type)
{
	if (!OidIsValid(collation) || collation == get_typcollation(type))
		return "";
	return cq_sql_collation(collation);
}

/*
 * cq_spi_exec
 *	  Run one statement through SPI with parameters; error unless SPI returns
 *	  the expected code (0 = any success).
 */
void
cq_spi_exec(const char *sql, int expected, int nargs, Oid *types,
			Datum *values, const char *nulls)
{
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc < 0 || (expected != 0 && rc != expected))
		elog(ERROR, "pg_cq: SPI failed (%s) while running: %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * cq_spi_exec_cached
 *	  cq_spi_exec through a saved plan (cq_spi_plan): for the constant
 *	  statements every batch runs, so that they are parsed and planned once
 *	  per backend instead of once per batch.
 */
void
cq_spi_exec_cached(const char *sql, int expected, int nargs, Oid *types,
				   Datum *values, const char *nulls)
{
	int			rc;

	rc = SPI_execute_plan(cq_spi_plan(sql, nargs, types), values, nulls, false, 0);
	if (rc < 0 || (expected != 0 && rc != expected))
		elog(ERROR, "pg_cq: SPI failed (%s) while running: %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * Plans are cached per backend, keyed by their SQL text: generated SQL is
 * rebuilt from OIDs for every batch, so a rename produces new text and a new
 * plan, while an unchanged query reuses its saved plan.
 */
typedef struct CqPlanCacheEntry
{
	char		key[NAMEDATALEN];	/* hash of the text, as a string */
	char	   *sql;
	SPIPlanPtr	plan;
} CqPlanCacheEntry;

static HTAB *plan_cache = NULL;

/*
 * cq_spi_plan
 *	  A saved SPI plan for the statement, prepared on first use.
 */
SPIPlanPtr
cq_spi_plan(const char *sql, int nargs, Oid *types)
{
	return cq_spi_plan_rows(sql, nargs, types, -1);
}

/*
 * cq_spi_plan_rows
 *	  cq_spi_plan for a statement that reads ephemeral named relations
 *	  holding about rows rows (-1: none).  A plan over an ephemeral
 *	  relation is made for the relation's size when it is prepared, and a
 *	  statement without parameters keeps its generic plan forever: a plan
 *	  made for a one-row batch (a nested loop that rescans a CTE for every
 *	  row) turned quadratic on a 50,000-row batch, which then ran for
 *	  minutes.  So such statements keep one plan per size class: up to 16
 *	  rows, then classes four times as large (each prepared by the first
 *	  batch of its class, with that batch's sizes).
 */
SPIPlanPtr
cq_spi_plan_rows(const char *sql, int nargs, Oid *types, int64 rows)
{
	CqPlanCacheEntry *entry;
	char		key[NAMEDATALEN];
	bool		found;
	SPIPlanPtr	plan;
	int			size_class = -1;

	if (rows >= 0)
	{
		size_class = 0;
		for (int64 r = rows; r > 16; r >>= 2)
			size_class++;
	}

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = NAMEDATALEN;
		ctl.entrysize = sizeof(CqPlanCacheEntry);
		plan_cache = hash_create("pg_cq plans", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	}

	snprintf(key, sizeof(key), "%08x.%zu.%d.%d",
			 hash_bytes((const unsigned char *) sql, strlen(sql)), strlen(sql), nargs,
			 size_class);
	entry = hash_search(plan_cache, key, HASH_FIND, &found);
	if (found && strcmp(entry->sql, sql) == 0)
		return entry->plan;

	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "pg_cq: could not prepare statement (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "pg_cq: could not save plan");

	if (found)
	{
		SPI_freeplan(entry->plan);
		pfree(entry->sql);
	}
	else
		entry = hash_search(plan_cache, key, HASH_ENTER, NULL);
	entry->sql = MemoryContextStrdup(TopMemoryContext, sql);
	entry->plan = plan;
	return plan;
}

/*
 * cq_spi_plan_forget
 *	  Free the saved plans of a statement text (prepared with any number of
 *	  parameters), if any: the statement will not run again.  A later
 *	  cq_spi_plan of the same text prepares it anew.
 */
void
cq_spi_plan_forget(const char *sql)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;

	if (plan_cache == NULL)
		return;
	hash_seq_init(&status, plan_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (strcmp(entry->sql, sql) != 0)
			continue;
		SPI_freeplan(entry->plan);
		pfree(entry->sql);
		(void) hash_search(plan_cache, entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * cq_rel_attnum
 *	  The number of rel's column name (not dropped), or InvalidAttrNumber:
 *	  get_attnum read from the open relation's descriptor, so that a new
 *	  backend reading pg_cq's catalog tables by column name does not look
 *	  each column up in pg_attribute (and cache it) once more.
 */
AttrNumber
cq_rel_attnum(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

/*
 * cq_rel_takes_heap_inserts
 *	  Is a heap insert of a row all an INSERT into rel would do, besides
 *	  its indexes: a plain table without triggers, rules, row-level
 *	  security, CHECK constraints, generated or identity columns?  (The
 *	  direct loads of bulkload.c and of the store's image.)
 */
bool
cq_rel_takes_heap_inserts(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL ||
		rel->rd_rel->relhasrules || rel->rd_rel->relrowsecurity ||
		(desc->constr && (desc->constr->num_check > 0 || desc->constr->has_generated_stored)))
		return false;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->attidentity != '\0')
			return false;
	return true;
}

/*
 * cq_rel_column
 *	  cq_rel_attnum of a column of type type; InvalidAttrNumber when there
 *	  is no such column or it has another type.
 */
AttrNumber
cq_rel_column(Relation rel, const char *name, Oid type)
{
	AttrNumber	att = cq_rel_attnum(rel, name);

	if (att == InvalidAttrNumber || TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid != type)
		return InvalidAttrNumber;
	return att;
}
