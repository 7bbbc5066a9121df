/*-------------------------------------------------------------------------
 *
 * store_fold.h
 *	  A batch on the shared-memory state store: the fold of its new rows,
 *	  the image and recovery (store_fold.c; its statements: store_sql.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_FOLD_H
#define CQ_STORE_FOLD_H

#include "postgres.h"
#include "store.h"
#include "store_sql.h"

extern int64 cq_store_rebuild(CqStore *st, const char *delta_sql, Datum *params, const char *nulls,
							  bool has_wm, TimestampTz wm);
extern void cq_store_fold(CqStore *st, const CqStoreSql *sql, bool history, Datum *params,
						  const char *nulls, bool has_wm, TimestampTz wm, bool evict,
						  Oid target_index, CqStoreMetrics *metrics);
extern Tuplestorestate *cq_store_refresh_begin(CqStore *st, int64 *rows);
extern void cq_store_refresh_end(Tuplestorestate *ts);
extern void cq_store_batch_done(CqStore *st, int64 batch_id);
extern int64 cq_store_bytes(CqStore *st);
extern void cq_store_switch_to_table(CqStore *st, CqQuery *q);
extern bool cq_store_image_due(CqStore *st, CqQuery *q, int64 batch_id);
extern const char *cq_store_image_table(CqQuery *q);
extern void cq_store_write_image(CqStore *st, CqQuery *q, int64 batch_id, const char *end_offset);
extern bool cq_store_load_image(CqStore *st, CqQuery *q, const CqLastOffset *last, bool has_wm,
								TimestampTz wm, int64 *image_batch, char **image_offset);
extern int64 cq_store_replay(CqStore *st, const CqStoreSql *sql, Datum *params, const char *nulls,
							 bool has_wm, TimestampTz wm);

#endif							/* CQ_STORE_FOLD_H */
