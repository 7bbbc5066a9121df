/*-------------------------------------------------------------------------
 *
 * sql_builder.h
 *	  Quoting identifiers, types and collations; running SQL through SPI
 *	  (sql_builder.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SQL_BUILDER_H
#define CQ_SQL_BUILDER_H

#include "postgres.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/rel.h"

extern void cq_sql_ident(StringInfo buf, const char *ident);
extern void cq_sql_relname(StringInfo buf, Oid relid);
extern char *cq_sql_relname_str(Oid relid);
extern char *cq_sql_type(Oid type, int32 typmod);
extern char *cq_sql_collation(Oid collation);
extern char *cq_sql_collate(Oid collation, Oid type);
extern char *cq_sql_querydef(Query *q);
extern char *cq_sql_expression(Node *e, List *dpcontext);
extern void cq_spi_exec(const char *sql, int expected, int nargs, Oid *types,
						Datum *values, const char *nulls);
extern void cq_spi_exec_cached(const char *sql, int expected, int nargs, Oid *types,
							   Datum *values, const char *nulls);
extern SPIPlanPtr cq_spi_plan(const char *sql, int nargs, Oid *types);
extern SPIPlanPtr cq_spi_plan_rows(const char *sql, int nargs, Oid *types, int64 rows);
extern void cq_spi_plan_forget(const char *sql);
extern AttrNumber cq_rel_attnum(Relation rel, const char *name);
extern AttrNumber cq_rel_column(Relation rel, const char *name, Oid type);
extern bool cq_rel_takes_heap_inserts(Relation rel);

#endif							/* CQ_SQL_BUILDER_H */
