/*-------------------------------------------------------------------------
 *
 * copy_xid.h
 *	  The cq_xid default of a running COPY FROM, evaluated without the
 *	  function call once the transaction has its id (copy_xid.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_COPY_XID_H
#define CQ_COPY_XID_H

#include "postgres.h"

extern void cq_copy_xid_default(void);

#endif							/* CQ_COPY_XID_H */
