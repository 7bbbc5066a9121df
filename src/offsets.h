/*-------------------------------------------------------------------------
 *
 * offsets.h
 *	  Snapshot arithmetic, low bound and row-limit cut (offsets.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_OFFSETS_H
#define CQ_OFFSETS_H

/* A pg_snapshot in C: visible = (x < xmin) or (x < xmax and x not in xip). */
typedef struct CqSnap
{
	uint64		xmin;
	uint64		xmax;
	int			nxip;
	uint64	   *xip;
} CqSnap;

extern CqSnap *cq_snap_parse(const char *text);
extern char *cq_snap_current(void);
extern char *cq_snap_current_source(Oid source, const char *prev_text);
extern bool cq_snap_visible(const CqSnap *s, uint64 x);
extern uint64 cq_snap_low_bound(const CqSnap *prev, const CqSnap *cur);
extern bool cq_snap_nothing_new(const CqSnap *prev, const CqSnap *cur);
extern char *cq_snap_cut(const CqSnap *prev, const CqSnap *cur, uint64 cut,
						 const uint64 *chosen, int nchosen);
extern bool cq_snap_covers(const CqSnap *end, const CqSnap *target);
extern char *cq_offsets_limit(const char *count_xids_sql, CqSnap *prev, CqSnap *cur, const char *cur_text,
							  Datum *params, int64 limit, int64 already, int64 *nrows);

/*
 * A per-node offset (Citus distributed sources, issue 14): one snapshot per
 * node, keyed by the node's identity (cq.node_id()), nodes ascending.  Text
 * form "node=snapshot;node=snapshot"; "" knows no node.  A node it does not
 * know sees nothing (as CQ_EARLIEST_OFFSET).
 */
typedef struct CqNodeSnap
{
	int			n;
	int64	   *node;
	CqSnap	  **snap;
} CqNodeSnap;

extern CqNodeSnap *cq_nsnap_parse(const char *text);
extern char *cq_nsnap_text(const CqNodeSnap *m);
extern CqSnap *cq_nsnap_get(const CqNodeSnap *m, int64 node);
extern void cq_nsnap_set(CqNodeSnap *m, int64 node, CqSnap *s);
extern bool cq_nsnap_visible(const CqNodeSnap *m, int64 node, uint64 x);
extern uint64 cq_nsnap_low_bound(const CqNodeSnap *prev, const CqNodeSnap *cur);
extern uint64 cq_nsnap_node_low_bound(const CqNodeSnap *prev, const CqNodeSnap *cur, int i);
extern uint64 cq_nsnap_xmax(const CqNodeSnap *m);
extern bool cq_nsnap_nothing_new(const CqNodeSnap *prev, const CqNodeSnap *cur);
extern bool cq_nsnap_covers(const CqNodeSnap *end, const CqNodeSnap *target);
extern char *cq_nsnap_current(Oid source, Oid owner, const char *prev_text);
extern char *cq_offsets_limit_nodes(const char *count_xids_sql, CqNodeSnap *prev, CqNodeSnap *cur,
									const char *prev_text, int64 limit, int64 already, int64 *nrows);
extern char *cq_snap_text(const CqSnap *s);
extern int64 cq_node_self(void);

extern Datum cq_xid8_datum(uint64 x);
extern bool cq_xid_is_new(uint64 x, const struct varlena *cur, const struct varlena *prev);
extern Datum cq_snapshot_datum(const char *text);

#endif							/* CQ_OFFSETS_H */
