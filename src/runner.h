/*-------------------------------------------------------------------------
 *
 * runner.h
 *	  Running a batch and recording its failure (runner.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_RUNNER_H
#define CQ_RUNNER_H

#include "postgres.h"

typedef enum CqRunMode
{
	CQ_RUN_XACT,				/* a worker: in a transaction of its own */
	CQ_RUN_SUBXACT,				/* non-atomic CALL cq.run: in a subtransaction */
	CQ_RUN_ATOMIC				/* in the caller's transaction, errors propagate */
} CqRunMode;
typedef void (*CqRunBody) (void *arg);
extern bool cq_runner_is_failure(ErrorData *edata);
extern void cq_runner_worker_init(void);
extern bool cq_runner_run(int32 id, CqRunMode mode, CqRunBody body, void *arg);

#endif							/* CQ_RUNNER_H */
