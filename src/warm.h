/*-------------------------------------------------------------------------
 *
 * warm.h
 *	  A pool worker warms up for a query before its first call (warm.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_WARM_H
#define CQ_WARM_H

#include "postgres.h"

extern void cq_warm_query(int32 id, int slot);

#endif							/* CQ_WARM_H */
