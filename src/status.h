/*-------------------------------------------------------------------------
 *
 * status.h
 *	  Status writes: cq.status slots and a failed batch's catalog row
 *	  (status.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STATUS_H
#define CQ_STATUS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "shmem.h"

extern void cq_status_batch_begin(Oid dboid, int32 query_id);
extern void cq_status_report_message(CqMessage msg);
extern void cq_status_forget(int32 query_id);
extern void cq_status_batch_end(int32 query_id, bool ran, int64 last_batch_id,
								bool has_watermark, TimestampTz watermark, bool more);
extern void cq_status_record_failure(int32 query_id, const char *message);

#endif							/* CQ_STATUS_H */
