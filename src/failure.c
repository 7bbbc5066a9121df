/*-------------------------------------------------------------------------
 *
 * failure.c
 *	  A batch of CALL cq.run that fails is recorded, as a worker's would be.
 *
 * SPEC §7: a query whose batch fails goes 'failed' with the error in
 * last_error.  Workers do that in worker.c (they own their transactions).
 * CALL cq.run in non-atomic mode (not inside a transaction block) commits
 * each batch on its own, so it can do the same: the batch runs in an
 * internal subtransaction; on error the subtransaction is rolled back (the
 * batch changed nothing: target, state, offset and progress stay as they
 * were), the failure is written and committed, and the error is re-thrown
 * to the caller.  A subtransaction, not SPI_rollback, because the error may
 * come from inside nested SPI levels (a PL/pgSQL function called by the
 * query): rolling back the subtransaction pops them, so our SPI connection
 * is the current one again.
 *
 * In atomic mode (CALL inside a transaction block, or cq.run called from a
 * function) nothing can be committed separately: the error just propagates
 * and the caller's transaction rolls back as a whole.
 *
 * Memory: the error copy and the batch result live in the caller's memory
 * context (SPI's procedure context, which survives SPI_commit).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "utils/resowner.h"

#include "pg_cq.h"

/*
 * cq_failure_run_batch
 *	  cq_batch_run_ext(id, flags, res) for non-atomic CALL cq.run (SPI
 *	  connected with SPI_OPT_NONATOMIC, no subtransaction open).  On error:
 *	  nothing of the batch remains, the query is 'failed' with last_error
 *	  (committed), and the error is re-thrown.  A query cancel is only
 *	  re-thrown.
 */
void
cq_failure_run_batch(int32 id, int flags, CqBatchResult *res)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		cq_batch_run_ext(id, flags, res);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;

		/*
		 * A cancel (the user's, or statement_timeout) says nothing about the
		 * query: the batch is rolled back and that is all, the next call
		 * retries it (workers follow the same rule).  The catalog row may be
		 * gone (dropped meanwhile): then nothing is updated.
		 */
		if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED)
		{
			cq_catalog_set_state(id, "failed", edata->message, NULL);
			SPI_commit();
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
}
