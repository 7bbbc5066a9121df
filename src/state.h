/*-------------------------------------------------------------------------
 *
 * state.h
 *	  A query's state table: DDL, final view, merge and eviction (state.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STATE_H
#define CQ_STATE_H

#include "postgres.h"
#include "lib/stringinfo.h"
#include "analyze.h"

#define CQ_KEY_HASH_COLUMN "h"	/* hash of the grouping keys in a state table */

extern int	cq_state_ngroup_cols(CqAnalysis *an);
extern void cq_state_append_group_cols(StringInfo buf, CqAnalysis *an, const char *prefix,
									   const char *sep);
extern void cq_state_append_key_equal(StringInfo buf, CqAnalysis *an, int g, const char *l,
									  const char *r);
extern void cq_state_append_keys_equal(StringInfo buf, CqAnalysis *an, const char *l,
									   List *left_cols, const char *r, bool null_safe);
extern char *cq_state_key_hash_sql(CqAnalysis *an, const char *prefix, List *cols);
extern bool cq_state_hashed(Oid state_table);
extern bool cq_state_evicts(CqAnalysis *an);
extern void cq_state_delta_cte(StringInfo buf, CqAnalysis *an, bool history);
extern void cq_state_delta_cte_all(StringInfo buf, CqAnalysis *an);
extern void cq_state_delta_cte_fold(StringInfo buf, CqAnalysis *an, bool history, bool all);
extern const char *cq_state_wm_param(CqAnalysis *an);
extern char *cq_state_table_sql(CqAnalysis *an, const char *qualname, bool logged);
extern char *cq_state_distinct_table_sql(CqAnalysis *an, const char *qualname, bool logged);
extern char *cq_state_final_select_list(CqAnalysis *an);
extern char *cq_state_final_view_sql(CqAnalysis *an, const char *viewname, const char *statename);
extern char *cq_state_upsert_ctes(CqAnalysis *an, const char *state, bool history, bool evict,
								  bool empty);

#endif							/* CQ_STATE_H */
