/*-------------------------------------------------------------------------
 *
 * snapmemo.h
 *	  The last pg_snapshot values converted between text and datum
 *	  (snapmemo.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SNAPMEMO_H
#define CQ_SNAPMEMO_H

#include "postgres.h"

extern Datum cq_snapmemo_in(const char *text);
extern char *cq_snapmemo_out(Datum datum);

#endif							/* CQ_SNAPMEMO_H */
