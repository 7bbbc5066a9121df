/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  A batch worker of a database's pool (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_WORKER_H
#define CQ_WORKER_H

#include "postgres.h"

PGDLLEXPORT extern void cq_worker_main(Datum arg);

#endif							/* CQ_WORKER_H */
