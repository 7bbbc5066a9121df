/*-------------------------------------------------------------------------
 *
 * delta_plan.h
 *	  The plan of a batch's d statement: its bitmap heap scan of the source
 *	  without the recheck of the cq_xid range (delta_plan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DELTA_PLAN_H
#define CQ_DELTA_PLAN_H

#include "postgres.h"

#include "executor/spi.h"

extern void cq_delta_plan_init(void);
extern void cq_delta_plan_begin(Oid source, SPIPlanPtr plan);
extern void cq_delta_plan_end(void);

#endif							/* CQ_DELTA_PLAN_H */
