/*-------------------------------------------------------------------------
 *
 * explain.h
 *	  cq.explain (explain.c): the SQL a batch runs.  Only the SQL function.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_EXPLAIN_H
#define CQ_EXPLAIN_H

#include "fmgr.h"

extern Datum cq_explain(PG_FUNCTION_ARGS);

#endif							/* CQ_EXPLAIN_H */
