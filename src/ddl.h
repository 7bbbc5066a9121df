/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  ProcessUtility and object-access hooks (ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DDL_H
#define CQ_DDL_H

#include "postgres.h"

extern void cq_ddl_init(void);

#endif							/* CQ_DDL_H */
