/*-------------------------------------------------------------------------
 *
 * status.c
 *	  Status writes: what cq.status and cq.queries show about a batch while
 *	  and after it runs.
 *
 * Two kinds of writes:
 *	 - shared memory (the query's CqQuerySlot, behind cq.status): the
 *	   worker running its batch, the status message, the last batch and
 *	   watermark, whether data is left; written under cq_shared->lock held
 *	   exclusively, never while waiting for anything else;
 *	 - the catalog (cq.queries.state, last_error) of a failed batch, in a
 *	   transaction of its own.
 * A batch run by CALL cq.run has no slot: cq_status_report_message is then a
 * no-op.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"

#include "status.h"
#include "shmem.h"
#include "catalog.h"

static Oid	status_dboid = InvalidOid;
static int32 current_query_id = 0;	/* query of the running batch, for status */

/*
 * cq_status_batch_begin
 *	  A worker starts a batch of a query of database dboid: remember the
 *	  query for cq_status_report_message and show this process as its
 *	  worker (the scheduler may not have known it yet).
 */
void
cq_status_batch_begin(Oid dboid, int32 query_id)
{
	CqQuerySlot *s;

	status_dboid = dboid;
	current_query_id = query_id;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	s = cq_shmem_find_query(dboid, query_id);
	if (s)
		s->worker_pid = MyProcPid;
	LWLockRelease(cq_shared->lock);
}

/*
 * cq_status_report_message
 *	  Set the status message of the query whose batch this worker is
 *	  running (no-op outside a worker, e.g. in CALL cq.run).  Called by
 *	  batch.c once it knows whether the batch has data.
 */
void
cq_status_report_message(CqMessage msg)
{
	CqQuerySlot *s;

	if (current_query_id == 0 || cq_shared == NULL)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	s = cq_shmem_find_query(status_dboid, current_query_id);
	if (s)
	{
		s->message = msg;
		s->is_data_available = (msg == CQ_MSG_PROCESSING);
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * cq_status_batch_end
 *	  A worker's batch is over: when it ran, its id and the watermark after
 *	  it; whether rows are left behind (only when a row limit cut the batch
 *	  short, or a no-data batch is due).
 */
void
cq_status_batch_end(int32 query_id, bool ran, int64 last_batch_id, bool has_watermark,
					TimestampTz watermark, bool more)
{
	CqQuerySlot *s;

	current_query_id = 0;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	s = cq_shmem_find_query(status_dboid, query_id);
	if (s)
	{
		if (ran)
		{
			s->last_batch_id = last_batch_id;
			s->has_watermark = has_watermark;
			s->watermark = watermark;
		}
		/* rows left behind only when a row limit cut the batch short */
		s->is_data_available = more;
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * cq_status_forget
 *	  cq.reset, or a batch of CALL cq.run: the last batch and watermark the
 *	  status slot of a query of this database holds are no longer known, so
 *	  cq.status falls back to cq.offsets (which the reset empties, or the
 *	  batch adds to, in the same transaction; if it rolls back, cq.offsets
 *	  still has the old ones).  The scheduler fills the slot again at its
 *	  next reload, a worker at the end of its next batch.
 */
void
cq_status_forget(int32 query_id)
{
	CqQuerySlot *s;

	if (cq_shared == NULL)
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	s = cq_shmem_find_query(MyDatabaseId, query_id);
	if (s)
	{
		s->last_batch_id = -1;
		s->has_watermark = false;
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * cq_status_record_failure
 *	  In a transaction of its own (no transaction may be open): state
 *	  'failed', last_error.  An error on the way is logged, not thrown.
 */
void
cq_status_record_failure(int32 query_id, const char *message)
{
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "pg_cq: SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		cq_catalog_set_state(query_id, "failed", message, NULL);
		PopActiveSnapshot();
		SPI_finish();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
}
