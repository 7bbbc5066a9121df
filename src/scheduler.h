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

PGDLLEXPORT extern void cq_scheduler_main(Datum arg);

#endif							/* CQ_SCHEDULER_H */
