/*-------------------------------------------------------------------------
 *
 * combine.h
 *	  Generic combinable aggregates: partial states of any aggregate with a
 *	  combine function, merged and finalized by PostgreSQL's own catalog
 *	  functions (combine.c).
 *
 * combine.c defines only SQL-callable functions (cq.agg_partial,
 * cq.agg_combine, cq.agg_final and the cq.agg_state type's I/O); the SQL
 * that calls them is built by aggregates.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_COMBINE_H
#define CQ_COMBINE_H

#include "postgres.h"

/* SQL names of the generic path's objects (schema cq, pg_cq--0.1--0.2.sql) */
#define CQ_AGG_STATE_TYPE "cq.agg_state"
#define CQ_AGG_PARTIAL "cq.agg_partial"
#define CQ_AGG_COMBINE "cq.agg_combine"
#define CQ_AGG_FINAL "cq.agg_final"

#endif							/* CQ_COMBINE_H */
