/*-------------------------------------------------------------------------
 *
 * restore.h
 *	  Queries restored from a dump into another cluster (restore.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_RESTORE_H
#define CQ_RESTORE_H

#include "postgres.h"
#include "catalog.h"

extern CqQuery *cq_restore_if_moved(CqQuery *q);
extern Oid	cq_rel_owner(Oid relid);

#endif							/* CQ_RESTORE_H */
