/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  Citus distributed tables as sources: the coordinator's xid space
 *	  (citus.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_CITUS_H
#define CQ_CITUS_H

#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* what pg_dist_partition says of a table */
typedef enum CqCitusKind
{
	CQ_CITUS_NONE,				/* not a Citus table (or no Citus) */
	CQ_CITUS_HASH,				/* hash-distributed */
	CQ_CITUS_REFERENCE,			/* reference table */
	CQ_CITUS_LOCAL,				/* Citus local table (coordinator only) */
	CQ_CITUS_OTHER				/* single-shard, append, range */
} CqCitusKind;

/* a committed pg_dist_transaction record: a 2PC of the coordinator */
typedef struct CqCitusRecord
{
	int32		groupid;		/* node group the transaction was prepared on */
	char	   *gid;			/* its prepared-transaction name */
	uint64		xid;			/* the coordinator transaction that wrote it */
} CqCitusRecord;

/* the column a source stamped per node keeps its stamping node in */
#define CQ_NODE_COLUMN "cq_node"

extern void cq_citus_init(void);
extern bool cq_citus_per_node_available(void);
extern Oid	cq_citus_node_visible_function(void);
extern AttrNumber cq_citus_node_att(Relation rel);
extern bool cq_citus_node_stamped(Oid relid);
extern bool cq_citus_node_source(Oid relid);
extern bool cq_citus_installed(void);
extern bool cq_citus_per_node_offsets(Oid relid);
extern List *cq_citus_node_snapshots(Oid source, Oid owner);
extern CqCitusKind cq_citus_kind(Oid relid);
extern bool cq_citus_is_coordinator(void);
extern Oid	cq_citus_stamp_function(void);
extern bool cq_citus_coordinator_default(Relation rel, AttrNumber att);
extern bool cq_citus_relation_stamped_by_coordinator(Oid relid);
extern int	cq_citus_guc_begin(const char *name, const char *value);
extern void cq_citus_guc_end(int nest);
extern bool cq_citus_barrier_begin(void);
extern List *cq_citus_barrier_end(void);
extern List *cq_citus_orphans(List *records);
extern void cq_citus_check_copy(Node *parsetree);
extern void cq_citus_check_truncate(Oid relid);

#endif							/* CQ_CITUS_H */
