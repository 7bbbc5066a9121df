/*-------------------------------------------------------------------------
 *
 * inval.h
 *	  pg_cq's one relation cache invalidation callback, and the catch-up
 *	  of its idle processes (inval.c).
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
extern void cq_inval_catch_up(const char *who);

#endif							/* CQ_INVAL_H */
