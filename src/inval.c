/*-------------------------------------------------------------------------
 *
 * inval.c
 *	  pg_cq's one relation cache invalidation callback, which calls the
 *	  callbacks of pg_cq's modules in turn.
 *
 * A backend has room for only MAX_RELCACHE_CALLBACKS (10 in PostgreSQL
 * 15) relation cache callbacks, shared by every library it loads, and
 * running out is FATAL for the backend that registers one too many.  Citus alone takes several; pg_cq once took one per module (plan
 * cache, catalog version, write path, BRIN summary cache), which with
 * Citus loaded left a pool worker unable to open its summary cache (t/citus/
 * 001).  Here pg_cq takes one slot, whatever number of modules need it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "inval.h"

#include "storage/sinval.h"

#define CQ_MAX_RELCACHE_CALLBACKS 16

typedef struct CqRelcacheCallback
{
	RelcacheCallbackFunction func;
	Datum		arg;
} CqRelcacheCallback;

static CqRelcacheCallback callbacks[CQ_MAX_RELCACHE_CALLBACKS];
static int	ncallbacks = 0;
static uint64 generation = 0;	/* invalidations seen (any relation) */
static uint64 mark = 0;			/* generation at cq_relcache_mark */

/*
 * call_all
 *	  The callback PostgreSQL calls: each module's, in the order they came.
 */
static void
call_all(Datum arg, Oid relid)
{
	generation++;
	for (int i = 0; i < ncallbacks; i++)
		callbacks[i].func(callbacks[i].arg, relid);
}

/*
 * cq_relcache_callback
 *	  As CacheRegisterRelcacheCallback, for a module of pg_cq: func is
 *	  called with arg on every relation cache invalidation of this backend
 *	  (relid InvalidOid: all relations), for the life of the backend.  The
 *	  same func and arg twice is registered once.
 */
void
cq_relcache_callback(RelcacheCallbackFunction func, Datum arg)
{
	for (int i = 0; i < ncallbacks; i++)
		if (callbacks[i].func == func && callbacks[i].arg == arg)
			return;
	if (ncallbacks == CQ_MAX_RELCACHE_CALLBACKS)
		elog(FATAL, "pg_cq: out of relation cache callback slots");
	if (ncallbacks == 0)
		CacheRegisterRelcacheCallback(call_all, (Datum) 0);
	callbacks[ncallbacks].func = func;
	callbacks[ncallbacks].arg = arg;
	ncallbacks++;
}

/*
 * cq_relcache_mark / cq_relcache_changed
 *	  Has any relation had an invalidation since the last mark?  plan.c
 *	  marks when a batch gets its plan (before it checks or builds it), so
 *	  that what the plan says of a relation (CqStoreSql's facts about the
 *	  target) can be used later in the batch, after the relation is locked,
 *	  when nothing changed meanwhile, and read again otherwise.  (Only once
 *	  a module registered a callback: plan.c has, before its first mark.)
 */
void
cq_relcache_mark(void)
{
	mark = generation;
}

bool
cq_relcache_changed(void)
{
	return generation != mark;
}

/*
 * cq_inval_catch_up
 *	  Idle, read the invalidation messages other backends sent, as an idle
 *	  session does between its client's statements, when asked to:
 *	  sinval.c signals the backend furthest behind in the shared queue
 *	  (catchupInterruptPending).  A pg_cq process that waits on its latch
 *	  starts no transaction, so never read them while it waited: on a busy
 *	  server (DDL, ANALYZE, autovacuum: thousands of messages) the queue
 *	  overran it and its next transaction reset every cache -- for a pool
 *	  worker the analyses and SQL its warm-up built (t/074, t/109); for the
 *	  scheduler and the launcher, which may wait up to cq.naptime (an hour
 *	  at most), their catalog caches (t/107).  The autovacuum launcher does
 *	  the same.  Runs a transaction of its own, whose commit leaves
 *	  CurrentMemoryContext at TopMemoryContext.  who: "worker" and the like,
 *	  for the DEBUG1 line.
 */
void
cq_inval_catch_up(const char *who)
{
	ProcessCatchupInterrupt();
	ereport(DEBUG1, (errmsg_internal("pg_cq: idle %s read the invalidation messages sent meanwhile", who)));
}
