/*-------------------------------------------------------------------------
 *
 * horizon.h
 *	  Scans of new rows that skip old heap pages (horizon.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_HORIZON_H
#define CQ_HORIZON_H

#include "utils/relcache.h"

extern void cq_horizon_shmem_init(void);
extern void cq_source_sample_horizon(void);
extern void cq_horizon_swap_getbitmap(Relation idx);

#endif							/* CQ_HORIZON_H */
