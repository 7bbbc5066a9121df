/*-------------------------------------------------------------------------
 *
 * explain.h
 *	  What feeds a target: its comment, and cq.explain (explain.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_EXPLAIN_H
#define CQ_EXPLAIN_H

#include "pg_cq.h"

extern void cq_explain_comment_target(Oid target, const char *name, CqOptions *opts);

#endif							/* CQ_EXPLAIN_H */
