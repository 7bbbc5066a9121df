/*-------------------------------------------------------------------------
 *
 * summarize.h
 *	  Keeping the BRIN index on cq_xid of a source summarized
 *	  (summarize.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SUMMARIZE_H
#define CQ_SUMMARIZE_H

#include "postgres.h"

extern void cq_source_summarize(Oid relid);
extern void cq_source_summarize_shard(Oid relid);

#endif							/* CQ_SUMMARIZE_H */
