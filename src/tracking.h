/*-------------------------------------------------------------------------
 *
 * tracking.h
 *	  Tracking a source: cq_xid, its BRIN index, stamp and wake-up triggers
 *	  (tracking.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_TRACKING_H
#define CQ_TRACKING_H

#include "postgres.h"
#include "access/attnum.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#define CQ_TRACKING_COLUMN "cq_xid"
#define CQ_STAMP_TRIGGER "zz_cq_stamp"	/* row trigger that stamps cq_xid */
#define CQ_BRIN_PAGES_PER_RANGE 32	/* pages per BRIN range on cq_xid */

extern AttrNumber cq_source_track(Oid relid);
extern AttrNumber cq_source_tracking_attnum(Oid relid);
extern Oid	cq_tracking_index(Relation heap, AttrNumber att);
extern bool cq_tracking_history_all(Oid relid, Datum cur, Snapshot snapshot);
extern void cq_source_forget_stamps(Oid relid, Oid owner);
extern Oid	cq_source_reached(Oid relid);
extern void cq_source_check_logged(Oid relid, Oid source);
extern void cq_source_before_attach(Oid parent, Oid child);
extern void cq_source_after_inherit(Oid child);
extern Oid	cq_tracking_trigger_function(const char *name);
extern bool cq_tracking_dropping_stamp(void);
extern bool cq_tracking_has_trigger(Oid relid, Oid func);

/*
 * Called by the stamp trigger at its first row of a table in a statement
 * (set by stamp.c: the table's BRIN index on cq_xid takes pg_cq's insert
 * routine, for partitions that rows are routed to).
 */
typedef void (*cq_stamp_first_row_hook_type) (Relation rel);
extern PGDLLIMPORT cq_stamp_first_row_hook_type cq_stamp_first_row_hook;

#endif							/* CQ_TRACKING_H */
