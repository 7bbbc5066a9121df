/*-------------------------------------------------------------------------
 *
 * callrun.h
 *	  The batch loop of CALL cq.run, in the caller or in a worker
 *	  (callrun.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CALLRUN_H
#define CQ_CALLRUN_H

#include "postgres.h"

/* One CALL cq.run, as the caller decided it (api.c). */
typedef struct CqCallRun
{
	const char *name;			/* as the caller wrote it (the NOTICEs) */
	int32		id;
	bool		once;
	bool		has_watermark;	/* the query has one: a no-data batch may end it */
	bool		was_failed;		/* state was 'failed' when the caller read it */
	const char *target;			/* pg_snapshot text: everything committed before the call */
	const char *node_target;	/* per-node goal of a source stamped per node, or NULL */
	/* handed off by name (handoff.c): the worker finds the query, id 0 until then */
	const char *objname;		/* the name without its schema; NULL: id known */
	const char *shown;			/* the name as errors show it */
	const Oid  *path;			/* schemas to look in (catalog_name.c) */
	int			npath;
	Oid			caller;			/* the user asking (the owner check) */
} CqCallRun;

extern void cq_callrun_loop(const CqCallRun *r, bool atomic);

#endif							/* CQ_CALLRUN_H */
