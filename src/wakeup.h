/*-------------------------------------------------------------------------
 *
 * wakeup.h
 *	  Waking schedulers at commit (wakeup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_WAKEUP_H
#define CQ_WAKEUP_H

#include "postgres.h"

extern void cq_wakeup_init(void);
extern void cq_wakeup_catalog_changed(void);
extern void cq_wakeup_note_source(Oid relid);

#endif							/* CQ_WAKEUP_H */
