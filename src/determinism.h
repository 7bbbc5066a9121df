/*-------------------------------------------------------------------------
 *
 * determinism.h
 *	  Refusals of what a batch would evaluate other than a plain SELECT
 *	  (determinism.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DETERMINISM_H
#define CQ_DETERMINISM_H

#include "nodes/parsenodes.h"

extern void cq_determinism_check(Query *query, const char *name);

#endif							/* CQ_DETERMINISM_H */
