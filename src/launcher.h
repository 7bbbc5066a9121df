/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The launcher: one scheduler per database (launcher.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_LAUNCHER_H
#define CQ_LAUNCHER_H

#include "postgres.h"
#include "nodes/nodes.h"

extern void cq_launcher_register(void);
extern void cq_launcher_stop_database(Oid dboid);
extern void cq_launcher_unblock_database(Oid dboid);
extern Oid	cq_launcher_ddl_database(Node *stmt, bool *dropping);
PGDLLEXPORT extern void cq_launcher_main(Datum arg);

#endif							/* CQ_LAUNCHER_H */
