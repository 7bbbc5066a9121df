/*-------------------------------------------------------------------------
 *
 * sink.h
 *	  Writing the target (sink.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SINK_H
#define CQ_SINK_H

#include "postgres.h"
#include "lib/stringinfo.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"
#include "analyze.h"

extern List *cq_sink_target_key_columns(CqAnalysis *an);
extern List *cq_sink_target_key_attnums(CqAnalysis *an, Relation rel);
extern bool cq_sink_is_key_hash_index(Relation idx, List *keys);
extern char *cq_sink_target_key_index_sql(CqAnalysis *an, const char *qualname, bool hashed);
extern char *cq_sink_target_table_sql(CqAnalysis *an, const char *qualname);
extern char *cq_sink_output_list_part(CqAnalysis *an, Oid viewid, bool keys_only,
									  bool nonkeys_only);
extern char *cq_sink_output_list(CqAnalysis *an, Oid viewid);
extern char *cq_sink_having_sql(CqAnalysis *an, Oid viewid);
extern char *cq_sink_having_where(CqAnalysis *an, Oid viewid);
extern char *cq_sink_target_columns(CqAnalysis *an, const char *prefix, bool keys_only,
									bool nonkeys_only);
extern char *cq_sink_stateless_sql(CqAnalysis *an, const char *target, bool history);
extern void cq_sink_write_ctes(StringInfo buf, CqAnalysis *an, CqOutputMode mode, Oid viewid,
							   const char *target, bool history, bool *has_o, bool *has_o1);
extern void cq_sink_write_ctes_sized(StringInfo buf, CqAnalysis *an, CqOutputMode mode, Oid viewid,
									 const char *target, bool history, bool sized,
									 bool *has_o, bool *has_o1);
extern void cq_sink_existing_ctes(StringInfo buf, CqAnalysis *an, Oid viewid, const char *target);
extern void cq_sink_check_target_types(CqAnalysis *an, CqOutputMode mode, Oid target,
									   const char *name);
extern void cq_sink_target_facts(Oid target, char **names, int n, LOCKMODE lockmode,
								 bool *has_columns, bool *update_triggers);
extern void cq_sink_having_delete_cte(StringInfo buf, CqAnalysis *an, Oid viewid,
									  const char *target, const char *match);
extern char *cq_sink_update_rewrite_sql(CqAnalysis *an, Oid viewid, const char *target,
										const char *state);

extern bool cq_sink_statement_triggers(Oid target);

#endif							/* CQ_SINK_H */
