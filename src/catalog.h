/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The cq.* catalog rows: queries, offsets, progress (catalog.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CATALOG_H
#define CQ_CATALOG_H

#include "postgres.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"
#include "options.h"

/*
 * start_offset of a query whose batch 0 reads every row already in the
 * source, history (cq_xid NULL) included: starting = 'earliest' when the
 * query was created or last reset.  A changed `starting` option takes effect
 * only then (as Spark's startingOffsets): start_offset records what batch 0
 * included, for the crash rebuild of lost state.
 */
#define CQ_EARLIEST_OFFSET "1:1:"
#define cq_query_reads_history(q) (strcmp((q)->start_offset, CQ_EARLIEST_OFFSET) == 0)

/* A row of cq.queries, as the batch runner needs it. */
typedef struct CqQuery
{
	char	   *name;			/* its name in its schema */
	char	   *schema;			/* its target's schema; NULL on a 0.1 catalog,
								 * where names are unique in the database */
	int32		id;
	Oid			owner;
	Oid			source;
	Oid			target;
	CqOptions	opts;
	char	   *state;
	char	   *query_tree;
	Oid			state_table;
	char	   *start_offset;
	char	   *run_id;
	char	   *cluster_id;		/* system identifier its offsets belong to */
	char	   *timezone;		/* TimeZone its batches run in */
	char	   *settings;		/* and these settings: "name=value" lines
								 * (settings_pin.c); NULL on a 0.1 catalog
								 * or for a query created before 0.2 */
} CqQuery;

#define CQ_CATALOG_0_1 1		/* pg_cq--0.1.sql */
#define CQ_CATALOG_0_2 2		/* pg_cq--0.1--0.2.sql applied */
extern int	cq_catalog_version(void);
extern Oid	cq_catalog_function(const char *name, int nargs, const Oid *argtypes);
extern CqQuery *cq_catalog_get_query_in(Oid nsp, const char *name, bool missing_ok, bool lock);
extern CqQuery *cq_catalog_get_query_by_id(int32 id, bool missing_ok, bool lock);
extern char *cq_catalog_name_for_relation(Oid relid, bool as_target);
extern int32 cq_catalog_id_for_relation(Oid relid, bool as_target);
extern char *cq_catalog_rows_of(const char *alias, int name_param, int schema_param);
extern void cq_catalog_key_values(CqQuery *q, Datum *name, Datum *schema, char *schema_null);
extern void cq_catalog_sync_schema(Oid relid, Oid nsp);
extern void cq_catalog_set_owner(int32 id, Oid owner);
extern bool cq_catalog_relation_is_source(Oid relid);
extern char *cq_catalog_cluster_id(void);
/* the options of a cq.queries row as statement parameters (catalog.c) */
#define CQ_CATALOG_NOPTIONS 8
extern void cq_catalog_options_datums(CqOptions *o, Oid *types, Datum *values, char *nulls);
extern int32 cq_catalog_insert_query(const char *name, Oid owner, Oid source, Oid target,
									 const char *query_text, CqOptions *opts,
									 const char *query_tree, const char *start_offset);
extern void cq_catalog_capture_settings(int32 id);
extern void cq_catalog_set_state_table(int32 id, Oid state_table);
extern void cq_catalog_delete_query(int32 id);
extern void cq_catalog_update_options(int32 id, CqOptions *opts);
extern void cq_catalog_update_query(int32 id, const char *query_text, const char *query_tree);
extern uint64 cq_catalog_rename_event_time(List *relids, const char *oldname, const char *newname);
extern bool cq_catalog_state_lost(int32 id);
extern void cq_catalog_state_valid(int32 id, double rebuild_ms);
extern char *cq_catalog_state_path(int32 id);
extern char *cq_catalog_query_value(int32 id, const char *column);
extern void cq_catalog_set_state_storage(int32 id, const char *storage, const char *path);
extern void cq_catalog_set_state(int32 id, const char *state, const char *error,
								 const char *only_if);
extern void cq_catalog_reset(CqQuery *q, const char *start_offset);
extern void cq_catalog_set_start_offset(CqQuery *q, const char *start_offset);

#endif							/* CQ_CATALOG_H */
