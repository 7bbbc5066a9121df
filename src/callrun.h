/*-------------------------------------------------------------------------
 *
 * callrun.h
 *	  The batch loop of CALL cq.run, in the caller or in a worker
 *	  (callrun.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CALLRUN_H
#define CQ_CALLRUN_H

#include "postgres.h"

/* One CALL cq.run, as the caller decided it (api.c). */
typedef struct CqCallRun
{
	const char *name;			/* as the caller wrote it (the NOTICEs) */
	int32		id;
	bool		once;
	bool		has_watermark;	/* the query has one: a no-data batch may end it */
	bool		was_failed;		/* state was 'failed' when the caller read it */
	const char *target;			/* pg_snapshot text: everything committed before the call */
	const char *node_target;	/* per-node goal of a source stamped per node, or NULL */
} CqCallRun;

extern void cq_callrun_loop(const CqCallRun *r, bool atomic);

#endif							/* CQ_CALLRUN_H */
