/*-------------------------------------------------------------------------
 *
 * prefault.h
 *	  Pages of shared memory mapped in bulk before their first use
 *	  (prefault.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_PREFAULT_H
#define CQ_PREFAULT_H

#include "postgres.h"

extern void cq_prefault_reset(void);
extern void cq_prefault(void *addr, Size len, Size ahead);

#endif							/* CQ_PREFAULT_H */
