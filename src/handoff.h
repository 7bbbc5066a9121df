/*-------------------------------------------------------------------------
 *
 * handoff.h
 *	  CALL cq.run's batches in an idle pool worker (handoff.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_HANDOFF_H
#define CQ_HANDOFF_H

#include "postgres.h"

#include "callrun.h"

extern bool cq_handoff_applies(void);
extern uint32 cq_handoff_name_key(const char *objname);
extern bool cq_handoff_run(const CqCallRun *r);
extern void cq_handoff_ran_here(int32 id);
extern bool cq_handoff_pending(int slot);
extern void cq_handoff_serve(int slot, MemoryContext worker_cxt);

#endif							/* CQ_HANDOFF_H */
