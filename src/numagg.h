/*-------------------------------------------------------------------------
 *
 * numagg.h
 *	  sum, min and max of numeric for d's partial states (numagg.c), for
 *	  deltagg.c's aggregation in C too.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_NUMAGG_H
#define CQ_NUMAGG_H

#include "postgres.h"

typedef struct CqNumSum CqNumSum;

extern CqNumSum *cq_numsum_create(MemoryContext cxt);
extern void cq_numsum_add(CqNumSum *st, Datum num);
extern Datum cq_numsum_result(CqNumSum *st, bool *isnull);
extern bool cq_numeric_keeps(Datum kept, Datum in, bool max);
extern Datum cq_numeric_kept(Datum in);

#endif							/* CQ_NUMAGG_H */
