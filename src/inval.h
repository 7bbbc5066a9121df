/*-------------------------------------------------------------------------
 *
 * inval.h
 *	  pg_cq's one relation cache invalidation callback (inval.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_INVAL_H
#define CQ_INVAL_H

#include "postgres.h"

#include "utils/inval.h"

extern void cq_relcache_callback(RelcacheCallbackFunction func, Datum arg);
extern void cq_relcache_mark(void);
extern bool cq_relcache_changed(void);

#endif							/* CQ_INVAL_H */
