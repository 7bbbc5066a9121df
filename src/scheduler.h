/*-------------------------------------------------------------------------
 *
 * scheduler.h
 *	  A database's scheduler (scheduler.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SCHEDULER_H
#define CQ_SCHEDULER_H

#include "postgres.h"

#include "datatype/timestamp.h"

PGDLLEXPORT extern void cq_scheduler_main(Datum arg);
extern TimestampTz cq_coalesce_hold_until(TimestampTz ended, int64 cpu_us, int64 rows);

#endif							/* CQ_SCHEDULER_H */
