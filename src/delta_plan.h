/*-------------------------------------------------------------------------
 *
 * delta_plan.h
 *	  The plan of a batch's d statement: its bitmap heap scan of the source
 *	  without the recheck of the cq_xid range; the settings a batch's
 *	  statements are planned under (delta_plan.c).
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
extern int	cq_delta_plan_scan_settings(bool history, bool no_sort);
extern void cq_delta_plan_scan_end(int token);

#endif							/* CQ_DELTA_PLAN_H */
