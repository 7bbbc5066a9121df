/*-------------------------------------------------------------------------
 *
 * progress.h
 *	  The per-batch rows of the catalog: cq.offsets and cq.progress
 *	  (progress.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_PROGRESS_H
#define CQ_PROGRESS_H

#include "postgres.h"
#include "utils/timestamp.h"
#include "catalog.h"

#define CQ_PROGRESS_KEEP 100	/* batches of history kept per query */

/* Metrics of one batch: a cq.offsets and a cq.progress row. */
typedef struct CqBatchResult
{
	bool		ran;			/* false: nothing to do, no batch recorded */
	int64		batch_id;
	TimestampTz started_at;
	double		duration_ms;
	double		latest_offset_ms;
	double		add_batch_ms;
	int64		input_rows;
	double		input_rows_per_second;
	double		processed_rows_per_second;
	int64		state_updated;
	int64		state_total;
	int64		state_removed;
	bool		has_state_bytes;	/* false: stateless (state_bytes NULL) */
	int64		state_bytes;	/* bytes the state takes after the batch */
	int64		dropped_by_watermark;
	int64		output_rows;
	char	   *start_offset;
	char	   *end_offset;
	char	   *node_end_offset;	/* per-node end offset (Citus), or NULL */
	bool		nodata;			/* a no-data batch run to advance the watermark */
	bool		has_watermark;	/* watermark in effect is not -infinity */
	TimestampTz watermark;		/* watermark in effect for the batch */
	bool		has_next_watermark;
	TimestampTz next_watermark; /* watermark after the batch */
	bool		et_utc;			/* event-time column is a timestamp: the event
								 * times and watermarks are its values at UTC
								 * (cq_progress_record_batch shows them in the
								 * query's time zone) */
	bool		has_event_time; /* event-time statistics of the input rows */
	TimestampTz et_min;
	TimestampTz et_max;
	TimestampTz et_avg;
	double		rebuild_ms;		/* lost state rebuilt before the batch, or -1 */
	bool		nodata_due_next;	/* the watermark advanced: a no-data batch is due */
} CqBatchResult;

/* The last committed batch of a query. */
typedef struct CqLastOffset
{
	bool		found;
	int64		batch_id;
	char	   *end_offset;
	int64		state_rows;
	TimestampTz last_started_at;	/* started_at of its progress row, or 0 */
	bool		has_batch_watermark;
	TimestampTz batch_watermark;	/* watermark the batch used */
	bool		has_watermark;
	TimestampTz watermark;		/* watermark after the batch */
} CqLastOffset;

extern void cq_progress_last_offset(CqQuery *q, CqLastOffset *last);
extern void cq_progress_record_batch(CqQuery *q, CqBatchResult *res);
extern void cq_progress_set_state_rows(CqQuery *q, int64 batch_id, int64 rows);
extern bool cq_progress_last_watermark(CqQuery *q, TimestampTz *watermark);
extern int64 cq_progress_table_bytes(Oid relid);
extern char *cq_progress_node_offset(int32 query_id, int64 batch_id);
extern void cq_progress_record_node_offset(int32 query_id, int64 batch_id, const char *offset);
extern void cq_progress_reset_node_offsets(int32 query_id, const char *start);

#endif							/* CQ_PROGRESS_H */
