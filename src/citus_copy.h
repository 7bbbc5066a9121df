/*-------------------------------------------------------------------------
 *
 * citus_copy.h
 *	  Citus reference tables and Citus local tables as sources: batches
 *	  read the coordinator's own copy (citus_copy.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CITUS_COPY_H
#define CQ_CITUS_COPY_H

#include "postgres.h"

extern Oid	cq_citus_copy_relation(Oid source, bool missing_ok);
extern Oid	cq_citus_read_relation(Oid source, int32 id, const char *name);
extern void cq_citus_copy_start(Oid source, int32 id);

#endif							/* CQ_CITUS_COPY_H */
