/*-------------------------------------------------------------------------
 *
 * truncate.h
 *	  TRUNCATE of a source (truncate.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_TRUNCATE_H
#define CQ_TRUNCATE_H

#include "postgres.h"

extern void cq_truncate_init(void);

#endif							/* CQ_TRUNCATE_H */
