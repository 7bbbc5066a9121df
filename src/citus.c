/*-------------------------------------------------------------------------
 *
 * citus.c
 *	  Citus hash-distributed tables as sources, in the coordinator's xid
 *	  space (issue 14, docs/scale-out.md, "Smaller fallback" of the
 *	  scale-out design).
 *
 * pg_cq's exactly-once argument needs the stamp of a row and the snapshots
 * of a batch to come from one transaction-id space.  On a Citus cluster
 * that space is the coordinator's:
 *	 - the cq_xid default of a distributed source is cq.coordinator_xact_id(),
 *	   which returns the coordinator's transaction id and raises on any other
 *	   node.  Citus evaluates it on the coordinator for the writes it routes
 *	   from there (INSERT VALUES, COPY, INSERT ... SELECT pushed down to
 *	   colocated shards) and ships the value to the shards as a constant;
 *	   writes issued on a worker, and INSERT ... SELECT that Citus
 *	   repartitions (which evaluates the default in the workers' tasks),
 *	   fail instead of stamping a worker's id;
 *	 - the planner hook refuses, on the coordinator, an INSERT that gives
 *	   cq_xid a value of its own (and on a worker, any INSERT into the
 *	   source); COPY likewise (cq_citus_check_copy);
 *	 - the shards' stamp trigger keeps the value the coordinator computed
 *	   (tracking.c): a shard move copies rows with their stamps;
 *	 - a distributed commit becomes visible on the coordinator before its
 *	   COMMIT PREPARED reaches the workers.  A batch takes its snapshot
 *	   holding pg_dist_transaction in EXCLUSIVE mode (cq_citus_barrier_begin),
 *	   which waits for the commits in that window: each holds ROW EXCLUSIVE
 *	   on it from its PREPARE until after its COMMIT PREPARED were sent.  A
 *	   COMMIT PREPARED that failed (an orphan, which Citus' recovery commits
 *	   later) is found by asking the nodes for their prepared transactions
 *	   (cq_citus_orphans); the batch treats its coordinator transaction (the
 *	   record's xmin) as still in progress.
 * Citus is looked up by name at run time (pg_dist_partition,
 * pg_dist_local_group, pg_dist_transaction, run_command_on_all_nodes), never
 * linked: without Citus every function here answers "not Citus".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/array.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/xid8.h"

#include "citus.h"
#include "catalog.h"
#include "guc.h"
#include "security.h"
#include "sql_builder.h"
#include "wakeup.h"

PG_FUNCTION_INFO_V1(cq_coordinator_xact_id);

#define CQ_TRACKING_COLUMN_NAME "cq_xid"
#define CITUS_INTERNAL_PREFIX "citus_internal"

static planner_hook_type prev_planner = NULL;

/* cq.coordinator_xact_id(), looked up again after any change of pg_proc */
static Oid	stamp_func = InvalidOid;

/* cq.node_visible(text, bigint, xid8), likewise */
static Oid	node_visible_func = InvalidOid;

/* this node's Citus group, cached for one (local) transaction */
static LocalTransactionId group_lxid = InvalidLocalTransactionId;
static int32 group_id = 0;

/* pg_dist_transaction while a barrier holds it */
static Oid	barrier_rel = InvalidOid;

/*
 * functions_inval
 *	  pg_proc changed: look cq.coordinator_xact_id() up again.
 */
static void
functions_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	stamp_func = InvalidOid;
	node_visible_func = InvalidOid;
}

/*
 * citus_catalog
 *	  OID of Citus' catalog table pg_catalog.<name>, or InvalidOid.
 */
static Oid
citus_catalog(const char *name)
{
	return get_relname_relid(name, PG_CATALOG_NAMESPACE);
}

/*
 * cq_citus_stamp_function
 *	  OID of cq.coordinator_xact_id(), or InvalidOid (catalog 0.1).
 */
Oid
cq_citus_stamp_function(void)
{
	if (!OidIsValid(stamp_func))
		stamp_func = cq_catalog_function("coordinator_xact_id", 0, NULL);
	return stamp_func;
}

/*
 * cq_citus_node_visible_function
 *	  OID of cq.node_visible(text, bigint, xid8), or InvalidOid (a catalog
 *	  without per-node offsets).
 */
Oid
cq_citus_node_visible_function(void)
{
	static const Oid args[3] = {TEXTOID, INT8OID, XID8OID};

	if (!OidIsValid(node_visible_func))
		node_visible_func = cq_catalog_function("node_visible", 3, args);
	return node_visible_func;
}

/*
 * cq_citus_per_node_available
 *	  Are newly tracked distributed sources stamped per node (per-node
 *	  offsets)?  When the catalog has them (0.2, cq.node_offsets and
 *	  cq.node_visible) and cq.citus_per_node is on; otherwise they are
 *	  stamped by the coordinator (cq.coordinator_xact_id()).
 */
bool
cq_citus_per_node_available(void)
{
	return cq_citus_per_node && OidIsValid(cq_citus_node_visible_function()) &&
		OidIsValid(get_relname_relid("node_offsets", get_namespace_oid("cq", true)));
}

/*
 * cq_citus_node_att
 *	  The column cq_node of a table stamped per node (the shell table of a
 *	  distributed source, or one of its shards), or InvalidAttrNumber: with
 *	  Citus installed, a column cq_node bigint with a default, and cq_xid
 *	  without one (pg_cq gives cq_xid the default pg_current_xact_id() on
 *	  every other table it tracks).
 */
AttrNumber
cq_citus_node_att(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	node = InvalidAttrNumber;
	bool		xid_default = true;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (a->attisdropped)
			continue;
		if (a->atttypid == INT8OID && a->atthasdef && strcmp(NameStr(a->attname), CQ_NODE_COLUMN) == 0)
			node = a->attnum;
		else if (a->atttypid == XID8OID && strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN_NAME) == 0)
			xid_default = a->atthasdef;
	}
	if (node == InvalidAttrNumber || xid_default || !OidIsValid(citus_catalog("pg_dist_partition")))
		return InvalidAttrNumber;
	return node;
}

/*
 * cq_citus_node_stamped
 *	  Is the table stamped per node (cq_citus_node_att)?
 */
bool
cq_citus_node_stamped(Oid relid)
{
	Relation	rel;
	bool		result;

	if (get_attnum(relid, CQ_NODE_COLUMN) == InvalidAttrNumber)
		return false;
	rel = relation_open(relid, AccessShareLock);
	result = cq_citus_node_att(rel) != InvalidAttrNumber;
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * snapshot_rows
 *	  Append to result (in cxt) the "node=snapshot" answers of the SPI
 *	  result just read: per row, name_cols columns naming the node, then
 *	  whether it answered (success) and its answer.  An error for a node
 *	  that did not answer.
 */
static List *
snapshot_rows(List *result, MemoryContext cxt, int name_cols)
{
	uint64		nrows = SPI_processed;

	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		char	   *ok = SPI_getvalue(t, d, name_cols + 1);
		char	   *res = SPI_getvalue(t, d, name_cols + 2);
		MemoryContext old;

		if (ok == NULL || strcmp(ok, "t") != 0 || res == NULL)
		{
			StringInfoData node;

			initStringInfo(&node);
			for (int c = 1; c <= name_cols; c++)
			{
				char	   *v = SPI_getvalue(t, d, c);

				appendStringInfo(&node, "%s%s", c > 1 ? ":" : "", v ? v : "?");
			}
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not read the snapshot of Citus node %s", node.data),
					 errdetail("A batch over a distributed source reads each node's rows against that node's snapshot: %s",
							   res ? res : "no answer."),
					 errhint("The batch runs again once the node answers.")));
		}
		old = MemoryContextSwitchTo(cxt);
		result = lappend(result, pstrdup(res));
		MemoryContextSwitchTo(old);
	}
	return result;
}

/*
 * all_nodes_snapshots
 *	  Every node's "node=snapshot" (node: its system identifier) through
 *	  run_command_on_all_nodes: Citus opens a new connection to each node
 *	  (this one too) and closes it after.  The fallback of
 *	  cq_citus_node_snapshots.  As superuser with search_path pinned.
 */
static List *
all_nodes_snapshots(void)
{
	List	   *result = NIL;
	CqSecurity	sec;
	MemoryContext cxt = CurrentMemoryContext;

	cq_security_superuser(&sec);
	cq_spi_exec("SELECT r.nodeid, r.success, r.result "
				"FROM pg_catalog.run_command_on_all_nodes("
				"'SELECT pg_catalog.concat(s.system_identifier, ''='', pg_catalog.pg_current_snapshot()) "
				" FROM pg_catalog.pg_control_system() s') r",
				SPI_OK_SELECT, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);
	return snapshot_rows(result, cxt, 1);
}

/*
 * A value of a source's distribution column that Citus routes to a given
 * shard, found once per shard and backend (probe_value): a shard id names
 * one hash range for good (a split makes new ids), so it stays valid.
 */
typedef struct ProbeValue
{
	int64		shardid;		/* hash key */
	char	   *value;			/* text of the value, NULL when none found */
} ProbeValue;

static HTAB *probe_values = NULL;

/*
 * probe_candidates
 *	  An SQL expression of integer i giving distinct texts that the input
 *	  function of type accepts, or NULL when pg_cq has none for it: only
 *	  built-in base types of the numeric, string, date and time categories,
 *	  and uuid (a type of an extension may hash or compare otherwise).
 *	  *max_i: how many to try.
 */
static const char *
probe_candidates(Oid type, int *max_i)
{
	char		category;
	bool		preferred;

	*max_i = 99999;
	if (type >= FirstNormalObjectId || get_typtype(type) != TYPTYPE_BASE)
		return NULL;
	switch (type)
	{
		case INT2OID:
			*max_i = 32767;
			return "i::pg_catalog.text";
		case UUIDOID:
			return "pg_catalog.lpad(pg_catalog.to_hex(i), 32, '0')";
		case DATEOID:
		case TIMESTAMPOID:
			return "(DATE '2000-01-01' OPERATOR(pg_catalog.+) i)::pg_catalog.text";
		case TIMESTAMPTZOID:
			return "(DATE '2000-01-01' OPERATOR(pg_catalog.+) i)::pg_catalog.text OPERATOR(pg_catalog.||) ' 00:00:00+00'";
		case CHAROID:
		case BOOLOID:
			return NULL;
		default:
			break;
	}
	get_type_category_preferred(type, &category, &preferred);
	if (category == TYPCATEGORY_NUMERIC || category == TYPCATEGORY_STRING)
		return "i::pg_catalog.text";
	return NULL;
}

/*
 * probe_value
 *	  The text of a value of source's distribution column (of type) that
 *	  Citus routes to shardid (get_shard_id_for_distribution_column over
 *	  candidate texts), or NULL.  Found once per shard and backend.  The
 *	  search runs as superuser in a subtransaction: a candidate the type
 *	  refuses ends it with no value rather than failing the batch.
 *	  Caller has SPI connected.
 */
static char *
probe_value(Oid source, int64 shardid, Oid type)
{
	ProbeValue *entry;
	bool		found;
	const char *candidates;
	int			max_i;
	char	   *volatile value = NULL;
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	if (probe_values == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(ProbeValue);
		ctl.hcxt = TopMemoryContext;
		probe_values = hash_create("pg_cq Citus probe values", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(probe_values, &shardid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->value;
	candidates = probe_candidates(type, &max_i);
	if (candidates != NULL)
	{
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			CqSecurity	sec;
			Oid			types[2] = {REGCLASSOID, INT8OID};
			Datum		args[2] = {ObjectIdGetDatum(source), Int64GetDatum(shardid)};
			char	   *sql = psprintf("SELECT g.c FROM pg_catalog.generate_series(0, %d) i, "
									   "LATERAL (SELECT %s AS c) g "
									   "WHERE pg_catalog.get_shard_id_for_distribution_column($1, g.c) "
									   "OPERATOR(pg_catalog.=) $2 LIMIT 1",
									   max_i, candidates);

			cq_security_superuser(&sec);
			cq_spi_exec(sql, SPI_OK_SELECT, 2, types, args, NULL);
			cq_security_restore(&sec);
			if (SPI_processed == 1)
				value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
			value = NULL;
		}
		PG_END_TRY();
	}
	entry = hash_search(probe_values, &shardid, HASH_ENTER, &found);
	entry->value = value ? MemoryContextStrdup(TopMemoryContext, value) : NULL;
	return entry->value;
}

/*
 * probe_node
 *	  One node's "node=snapshot" through the batch's own Citus connections:
 *	  a query over source that Citus routes to the shard its value (of
 *	  column att, type) falls in, so that the whole query runs on the node
 *	  that stores it.  Its scan, under LIMIT 0, never runs (and would be a
 *	  TID scan of an item that cannot exist: no page read).  As the
 *	  query's owner (the user whose connections the batch's shard queries
 *	  use), or as superuser when owner is invalid.  NULL when the answer
 *	  did not come from another node (Citus did not route it).  Caller has
 *	  SPI connected.
 */
static char *
probe_node(Oid source, AttrNumber att, Oid type, const char *value, Oid owner)
{
	CqSecurity	sec;
	Oid			typinput;
	Oid			typioparam;
	Datum		arg;
	char	   *sql;
	char	   *res = NULL;
	char	   *self;

	getTypeInputInfo(type, &typinput, &typioparam);
	arg = OidInputFunctionCall(typinput, (char *) value, typioparam, -1);
	sql = psprintf("SELECT pg_catalog.concat(cq.node_id(), '=', pg_catalog.pg_current_snapshot()) "
				   "WHERE NOT EXISTS (SELECT 1 FROM %s WHERE %s OPERATOR(pg_catalog.=) $1 "
				   "AND ctid OPERATOR(pg_catalog.=) '(0,0)' LIMIT 0)",
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
											  get_rel_name(source)),
				   quote_identifier(get_attname(source, att, false)));
	if (OidIsValid(owner))
		cq_security_owner(owner, &sec);
	else
		cq_security_superuser(&sec);
	cq_spi_exec(sql, SPI_OK_SELECT, 1, &type, &arg, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 1)
		res = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	self = psprintf(INT64_FORMAT "=", (int64) GetSystemIdentifier());
	if (res == NULL || strncmp(res, self, strlen(self)) == 0)
		return NULL;
	return res;
}

/*
 * some_nodes_snapshots
 *	  The "node=snapshot" of the nodes named (host, port) through
 *	  master_run_on_worker: new connections, closed after.  As superuser
 *	  with search_path pinned.  Appends to result.
 */
static List *
some_nodes_snapshots(List *hosts, List *ports, List *result)
{
	CqSecurity	sec;
	MemoryContext cxt = CurrentMemoryContext;
	int			n = list_length(hosts);
	Datum	   *h = palloc(sizeof(Datum) * n);
	Datum	   *p = palloc(sizeof(Datum) * n);
	Oid			types[2] = {TEXTARRAYOID, INT4ARRAYOID};
	Datum		args[2];

	for (int i = 0; i < n; i++)
	{
		h[i] = CStringGetTextDatum((char *) list_nth(hosts, i));
		p[i] = Int32GetDatum(list_nth_int(ports, i));
	}
	args[0] = PointerGetDatum(construct_array(h, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(p, n, INT4OID, 4, true, TYPALIGN_INT));
	cq_security_superuser(&sec);
	cq_spi_exec("SELECT r.node_name, r.node_port, r.success, r.result "
				"FROM pg_catalog.master_run_on_worker($1, $2, pg_catalog.array_fill("
				"'SELECT pg_catalog.concat(cq.node_id(), ''='', pg_catalog.pg_current_snapshot())'::pg_catalog.text, "
				"ARRAY[pg_catalog.cardinality($1)]), true) r",
				SPI_OK_SELECT, 2, types, args, NULL);
	cq_security_restore(&sec);
	return snapshot_rows(result, cxt, 2);
}

/*
 * cq_citus_node_snapshots
 *	  Every other node's current snapshot, as "node=snapshot" (node: its
 *	  system identifier, given by the node itself), for a batch over source
 *	  run by owner (InvalidOid: superuser).
 *
 *	  Each node that stores a shard of source is asked through the batch
 *	  transaction's own Citus connections (probe_node: one round trip per
 *	  node, over the connection Citus keeps open between transactions), so
 *	  that a batch opens no connection of its own.  The snapshot is the one
 *	  of that statement on the node.  The batch's shard queries, later
 *	  statements of the same READ COMMITTED transaction, read under later
 *	  snapshots on whichever connection Citus picks, and those see every
 *	  transaction that this one sees as finished: each node's snapshot is
 *	  taken before the batch reads that node, as when it came from a
 *	  connection of its own.  A node with no shard of source (just added,
 *	  or drained) is asked through a new connection (some_nodes_snapshots),
 *	  and every node is when a probe is not possible (a distribution column
 *	  of a type pg_cq has no values for, cq.citus_snapshot_probes off) or
 *	  the answers are not one per node (a shard moved in between):
 *	  run_command_on_all_nodes, as before.  A node that does not answer
 *	  fails the batch: without its snapshot the rows stored there cannot be
 *	  judged.  Caller has SPI connected.
 */
List *
cq_citus_node_snapshots(Oid source, Oid owner)
{
	List	   *result = NIL;
	CqSecurity	sec;
	MemoryContext cxt = CurrentMemoryContext;
	AttrNumber	att = InvalidAttrNumber;
	Oid			type = InvalidOid;
	Oid			types[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(source)};
	List	   *hosts = NIL;	/* every other node: host, port, first shard */
	List	   *ports = NIL;
	List	   *shards = NIL;
	List	   *other_hosts = NIL;	/* those without a shard of source */
	List	   *other_ports = NIL;
	ListCell   *lc;

	if (!cq_citus_snapshot_probes || !OidIsValid(source))
		return all_nodes_snapshots();

	/* the source's distribution column, and every other node's shards of it */
	cq_security_superuser(&sec);
	cq_spi_exec("SELECT pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) "
				"FROM pg_catalog.pg_dist_partition p "
				"WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1 AND p.partmethod OPERATOR(pg_catalog.=) 'h'",
				SPI_OK_SELECT, 1, types, args, NULL);
	if (SPI_processed == 1)
	{
		char	   *col = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		att = col ? get_attnum(source, col) : InvalidAttrNumber;
		if (att != InvalidAttrNumber)
			type = get_atttype(source, att);
	}
	cq_spi_exec("SELECT n.nodename, n.nodeport, "
				"       (SELECT pg_catalog.min(p.shardid) "
				"          FROM pg_catalog.pg_dist_placement p "
				"          JOIN pg_catalog.pg_dist_shard s ON s.shardid OPERATOR(pg_catalog.=) p.shardid "
				"         WHERE s.logicalrelid OPERATOR(pg_catalog.=) $1 "
				"           AND p.groupid OPERATOR(pg_catalog.=) n.groupid "
				"           AND p.shardstate OPERATOR(pg_catalog.=) 1) "
				"FROM pg_catalog.pg_dist_node n "
				"WHERE n.isactive "
				"  AND n.nodecluster OPERATOR(pg_catalog.=) pg_catalog.current_setting('citus.cluster_name') "
				"  AND n.noderole::pg_catalog.text OPERATOR(pg_catalog.=) "
				"      CASE WHEN pg_catalog.current_setting('citus.use_secondary_nodes') OPERATOR(pg_catalog.=) 'always' "
				"           THEN 'secondary' ELSE 'primary' END "
				"  AND n.groupid OPERATOR(pg_catalog.<>) ALL (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) "
				"ORDER BY n.nodename, n.nodeport",
				SPI_OK_SELECT, 1, types, args, NULL);
	cq_security_restore(&sec);
	if (!OidIsValid(type))
		return all_nodes_snapshots();
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		bool		isnull;

		hosts = lappend(hosts, SPI_getvalue(t, d, 1));
		ports = lappend_int(ports, DatumGetInt32(SPI_getbinval(t, d, 2, &isnull)));
		shards = lappend(shards, SPI_getvalue(t, d, 3));	/* NULL: none */
	}

	/* each node with a shard of source: one routed probe */
	for (int i = 0; i < list_length(hosts); i++)
	{
		char	   *shard = list_nth(shards, i);
		char	   *value;
		char	   *answer;
		MemoryContext old;

		if (shard == NULL)
		{
			other_hosts = lappend(other_hosts, list_nth(hosts, i));
			other_ports = lappend_int(other_ports, list_nth_int(ports, i));
			continue;
		}
		value = probe_value(source, strtoi64(shard, NULL, 10), type);
		answer = value ? probe_node(source, att, type, value, owner) : NULL;
		if (answer == NULL)
			return all_nodes_snapshots();
		old = MemoryContextSwitchTo(cxt);
		result = lappend(result, pstrdup(answer));
		MemoryContextSwitchTo(old);
	}
	if (other_hosts != NIL)
		result = some_nodes_snapshots(other_hosts, other_ports, result);

	/* one answer per node: a node twice means a shard moved meanwhile */
	foreach(lc, result)
	{
		const char *a = lfirst(lc);
		const char *eq = strchr(a, '=');
		ListCell   *lc2;

		for_each_from(lc2, result, foreach_current_index(lc) + 1)
		{
			if (eq == NULL || strncmp((const char *) lfirst(lc2), a, eq - a + 1) == 0)
				return all_nodes_snapshots();
		}
	}
	return result;
}

/*
 * cq_citus_kind
 *	  What pg_dist_partition says of the table: hash-distributed, reference,
 *	  Citus local, another kind, or not a Citus table.
 */
CqCitusKind
cq_citus_kind(Oid relid)
{
	Oid			distrel = citus_catalog("pg_dist_partition");
	Relation	rel;
	AttrNumber	att;
	AttrNumber	method_att;
	AttrNumber	model_att;
	AttrNumber	coloc_att;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	CqCitusKind kind = CQ_CITUS_NONE;

	if (!OidIsValid(distrel))
		return CQ_CITUS_NONE;
	rel = table_open(distrel, AccessShareLock);
	att = attnameAttNum(rel, "logicalrelid", false);
	method_att = attnameAttNum(rel, "partmethod", false);
	model_att = attnameAttNum(rel, "repmodel", false);
	coloc_att = attnameAttNum(rel, "colocationid", false);
	if (att == InvalidAttrNumber || method_att == InvalidAttrNumber || model_att == InvalidAttrNumber ||
		coloc_att == InvalidAttrNumber)
	{
		table_close(rel, AccessShareLock);
		return CQ_CITUS_NONE;
	}
	ScanKeyInit(&key, att, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		char		method = DatumGetChar(heap_getattr(tup, method_att, RelationGetDescr(rel), &isnull));
		char		model = DatumGetChar(heap_getattr(tup, model_att, RelationGetDescr(rel), &isnull));
		int32		coloc = DatumGetInt32(heap_getattr(tup, coloc_att, RelationGetDescr(rel), &isnull));

		if (method == 'h')
			kind = CQ_CITUS_HASH;
		else if (method == 'n' && model == 't')
			kind = CQ_CITUS_REFERENCE;
		else if (method == 'n' && model == 's' && coloc == 0)
			kind = CQ_CITUS_LOCAL;	/* a single-shard table has a colocation group */
		else
			kind = CQ_CITUS_OTHER;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return kind;
}

/*
 * local_group
 *	  This node's Citus group (pg_dist_local_group.groupid: 0 on the
 *	  coordinator, and on a node that was never added to a cluster), read
 *	  once per transaction; 0 without Citus.
 */
static int32
local_group(void)
{
	Oid			relid;
	Relation	rel;
	AttrNumber	att;
	SysScanDesc scan;
	HeapTuple	tup;

	if (group_lxid == MyProc->lxid && group_lxid != InvalidLocalTransactionId)
		return group_id;
	group_id = 0;
	relid = citus_catalog("pg_dist_local_group");
	if (OidIsValid(relid))
	{
		rel = table_open(relid, AccessShareLock);
		att = attnameAttNum(rel, "groupid", false);
		if (att != InvalidAttrNumber)
		{
			scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
			tup = systable_getnext(scan);
			if (HeapTupleIsValid(tup))
			{
				bool		isnull;
				Datum		d = heap_getattr(tup, att, RelationGetDescr(rel), &isnull);

				if (!isnull)
					group_id = DatumGetInt32(d);
			}
			systable_endscan(scan);
		}
		table_close(rel, AccessShareLock);
	}
	group_lxid = MyProc->lxid;
	return group_id;
}

/*
 * cq_citus_is_coordinator
 *	  Is this node the Citus coordinator (group 0), or not in a Citus
 *	  cluster at all?
 */
bool
cq_citus_is_coordinator(void)
{
	return local_group() == 0;
}

/*
 * cq_coordinator_xact_id
 *	  cq.coordinator_xact_id(): the cq_xid default of a distributed source.
 *	  pg_current_xact_id() on the coordinator; an error on any other node,
 *	  whose transaction ids the coordinator's snapshots cannot judge.
 */
Datum
cq_coordinator_xact_id(PG_FUNCTION_ARGS)
{
	int32		group = local_group();

	if (group != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rows of a distributed source of continuous queries can only be stamped on the Citus coordinator"),
				 errdetail("The default of column \"%s\" was computed on node group %d.  Either the statement was issued on a worker, or it is an INSERT ... SELECT that Citus runs by repartitioning the rows between the workers; a worker's transaction id cannot be ordered by the coordinator's snapshots, so the row would be lost or counted late.",
						   CQ_TRACKING_COLUMN_NAME, group),
				 errhint("Write through the coordinator: INSERT ... VALUES or COPY there, or an INSERT ... SELECT that Citus pushes down to colocated shards (select the distribution column from a table colocated with the source).")));
	PG_RETURN_FULLTRANSACTIONID(GetTopFullTransactionId());
}

/*
 * is_stamp_call
 *	  Is expr a call of cq.coordinator_xact_id()?
 */
static bool
is_stamp_call(Node *expr)
{
	return expr != NULL && IsA(expr, FuncExpr) &&
		((FuncExpr *) expr)->funcid == cq_citus_stamp_function() &&
		((FuncExpr *) expr)->args == NIL;
}

/*
 * cq_citus_coordinator_default
 *	  Is column att's default cq.coordinator_xact_id()?  True on the shell
 *	  table of a tracked distributed source and on its shards (Citus copies
 *	  the default to them).
 */
bool
cq_citus_coordinator_default(Relation rel, AttrNumber att)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	if (constr == NULL || att == InvalidAttrNumber || !OidIsValid(cq_citus_stamp_function()))
		return false;
	for (int i = 0; i < constr->num_defval; i++)
		if (constr->defval[i].adnum == att)
			return is_stamp_call(stringToNode(constr->defval[i].adbin));
	return false;
}

/*
 * tracking_att
 *	  cq_xid (xid8) of an open table, or InvalidAttrNumber.
 */
static AttrNumber
tracking_att(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && a->atttypid == XID8OID &&
			strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN_NAME) == 0)
			return a->attnum;
	}
	return InvalidAttrNumber;
}

/*
 * cq_citus_relation_stamped_by_coordinator
 *	  Does the table (a shell table or a shard) have cq_xid with the
 *	  default cq.coordinator_xact_id()?
 */
bool
cq_citus_relation_stamped_by_coordinator(Oid relid)
{
	Relation	rel;
	bool		result;

	if (!OidIsValid(cq_citus_stamp_function()) || get_attnum(relid, CQ_TRACKING_COLUMN_NAME) == InvalidAttrNumber)
		return false;
	rel = relation_open(relid, AccessShareLock);
	result = cq_citus_coordinator_default(rel, tracking_att(rel));
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * distributed_source
 *	  Is relid the shell table of a distributed source stamped by the
 *	  coordinator (not a shard: shards have no pg_dist_partition row)?
 *	  Sets *att to its cq_xid.
 */
static bool
distributed_source(Oid relid, AttrNumber *att)
{
	Relation	rel;
	bool		result;

	if (!OidIsValid(cq_citus_stamp_function()) ||
		get_attnum(relid, CQ_TRACKING_COLUMN_NAME) == InvalidAttrNumber)
		return false;
	rel = relation_open(relid, AccessShareLock);
	*att = tracking_att(rel);
	result = cq_citus_coordinator_default(rel, *att);
	relation_close(rel, AccessShareLock);
	return result && cq_citus_kind(relid) != CQ_CITUS_NONE;
}

/*
 * refuse_worker_write
 *	  A write into a distributed source issued on a worker.
 */
static void
refuse_worker_write(Oid relid)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("rows of distributed table \"%s\" can only be written through the Citus coordinator",
					get_rel_name(relid)),
			 errdetail("Continuous queries read this table: each new row is stamped with the id of the coordinator's transaction, and this node (group %d) has transaction ids of its own, which the coordinator's snapshots cannot order.",
					   local_group()),
			 errhint("Issue the INSERT or COPY on the coordinator.")));
}

/*
 * refuse_given_stamp
 *	  An INSERT or COPY that gives cq_xid a value of its own.
 */
static void
refuse_given_stamp(Oid relid)
{
	ereport(ERROR,
			(errcode(ERRCODE_GENERATED_ALWAYS),
			 errmsg("column \"%s\" of distributed table \"%s\" cannot be given a value",
					CQ_TRACKING_COLUMN_NAME, get_rel_name(relid)),
			 errdetail("Continuous queries read this table: pg_cq stamps each new row with the id of the coordinator's transaction through the column's default, and on a distributed table the shards cannot check a value given instead."),
			 errhint("Leave the column out of the INSERT or COPY column list.")));
}

/*
 * cq_citus_node_source
 *	  Is relid the shell table of a distributed source stamped per node
 *	  (not a shard: shards have no pg_dist_partition row)?
 */
bool
cq_citus_node_source(Oid relid)
{
	return cq_citus_node_stamped(relid) && cq_citus_kind(relid) != CQ_CITUS_NONE;
}

/*
 * cq_citus_installed
 *	  Is Citus installed in this database (its pg_dist_partition exists)?
 *	  One catalog cache look-up.
 */
bool
cq_citus_installed(void)
{
	return OidIsValid(citus_catalog("pg_dist_partition"));
}

/*
 * cq_citus_per_node_offsets
 *	  Is relid a hash-distributed source stamped per node, whose batches
 *	  keep an offset per node?  A reference table or a Citus local table,
 *	  also stamped per node, is read through the coordinator's copy with
 *	  the coordinator's offsets (citus_copy.c).
 */
bool
cq_citus_per_node_offsets(Oid relid)
{
	return cq_citus_node_stamped(relid) && cq_citus_kind(relid) == CQ_CITUS_HASH;
}

/*
 * refuse_given_node
 *	  An INSERT or COPY that gives cq_node a value of its own.
 */
static void
refuse_given_node(Oid relid)
{
	ereport(ERROR,
			(errcode(ERRCODE_GENERATED_ALWAYS),
			 errmsg("column \"%s\" of distributed table \"%s\" cannot be given a value",
					CQ_NODE_COLUMN, get_rel_name(relid)),
			 errdetail("Continuous queries read this table: the node that stores a new row stamps it with its transaction id and its identity; a row that arrives with a node already set is taken for a copy (a shard move) and keeps its stamp."),
			 errhint("Leave the column out of the INSERT or COPY column list.")));
}

/*
 * is_unstamped
 *	  Is expr the constant 0, the default of cq_node (a row the storing
 *	  node stamps)?
 */
static bool
is_unstamped(Node *expr)
{
	if (expr != NULL && !IsA(expr, Const))
		expr = eval_const_expressions(NULL, expr);
	return expr != NULL && IsA(expr, Const) && ((Const *) expr)->consttype == INT8OID &&
		!((Const *) expr)->constisnull && DatumGetInt64(((Const *) expr)->constvalue) == 0;
}

/*
 * column_accepted
 *	  Does the INSERT (rewritten: defaults filled in) give column att only
 *	  values that accept() takes, in the target list or in every row of a
 *	  VALUES list?  A column absent from the target list is accepted.
 */
static bool
column_accepted(Query *parse, AttrNumber att, bool (*accept) (Node *expr))
{
	ListCell   *lc;

	foreach(lc, parse->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Node	   *expr = (Node *) tle->expr;

		if (tle->resjunk || tle->resno != att)
			continue;
		if (accept(expr))
			return true;
		if (IsA(expr, Var) && ((Var *) expr)->varlevelsup == 0)
		{
			Var		   *var = (Var *) expr;
			RangeTblEntry *vrte = rt_fetch(var->varno, parse->rtable);
			bool		ok = vrte->rtekind == RTE_VALUES;
			ListCell   *row;

			if (ok)
				foreach(row, vrte->values_lists)
					ok = ok && accept(list_nth(lfirst(row), var->varattno - 1));
			return ok;
		}
		return false;
	}
	return true;
}

/*
 * check_insert_node
 *	  An INSERT into a distributed source stamped per node, on any node:
 *	  cq_node must be left to its default 0 (the shards' trigger stamps
 *	  the row where it is stored; cq_xid is restamped there whatever the
 *	  statement gave), in the target list or in every row of a VALUES
 *	  list.
 */
static void
check_insert_node(Query *parse, Oid relid)
{
	if (!column_accepted(parse, get_attnum(relid, CQ_NODE_COLUMN), is_unstamped))
		refuse_given_node(relid);
	/* Citus does not fire the shell table's statement trigger: wake here */
	if (cq_citus_is_coordinator())
		cq_wakeup_note_source(relid);
}

/*
 * check_insert
 *	  An INSERT into a distributed source (rewritten: defaults filled in):
 *	  on a worker refused; on the coordinator cq_xid must come from its
 *	  default, in the target list or in every row of a VALUES list.
 */
static void
check_insert(Query *parse)
{
	RangeTblEntry *rte = rt_fetch(parse->resultRelation, parse->rtable);
	AttrNumber	att;

	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION)
		return;
	if (cq_citus_node_source(rte->relid))
	{
		check_insert_node(parse, rte->relid);
		return;
	}
	if (!distributed_source(rte->relid, &att))
		return;
	if (!cq_citus_is_coordinator())
		refuse_worker_write(rte->relid);
	if (!column_accepted(parse, att, is_stamp_call))
		refuse_given_stamp(rte->relid);
	/* Citus does not fire the shell table's statement trigger: wake here */
	cq_wakeup_note_source(rte->relid);
}

/*
 * cq_citus_planner
 *	  Planner hook (pg_cq loads after Citus, so this runs before Citus'
 *	  distributed planner): INSERTs into distributed sources are checked.
 */
static PlannedStmt *
cq_citus_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	if (parse->commandType == CMD_INSERT && parse->resultRelation > 0 && IsTransactionState() &&
		OidIsValid(citus_catalog("pg_dist_partition")))
		check_insert(parse);
	if (prev_planner)
		return prev_planner(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * cq_citus_check_copy
 *	  COPY FROM into a distributed source: on a worker refused; on the
 *	  coordinator it must leave cq_xid to its default (a column list
 *	  without it).  Shards (Citus' own COPY into them, shard moves) are
 *	  not checked.
 */
void
cq_citus_check_copy(Node *parsetree)
{
	CopyStmt   *stmt;
	Oid			relid;
	AttrNumber	att;
	ListCell   *lc;

	if (!IsA(parsetree, CopyStmt) || !IsTransactionState())
		return;
	stmt = (CopyStmt *) parsetree;
	if (!stmt->is_from || stmt->relation == NULL || !OidIsValid(citus_catalog("pg_dist_partition")))
		return;
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (OidIsValid(relid) && cq_citus_node_source(relid))
	{
		/* any node; a column list without cq_node (see check_insert_node) */
		if (stmt->attlist == NIL)
			refuse_given_node(relid);
		foreach(lc, stmt->attlist)
			if (strcmp(strVal(lfirst(lc)), CQ_NODE_COLUMN) == 0)
				refuse_given_node(relid);
		if (cq_citus_is_coordinator())
			cq_wakeup_note_source(relid);
		return;
	}
	if (!OidIsValid(relid) || !distributed_source(relid, &att))
		return;
	if (!cq_citus_is_coordinator())
		refuse_worker_write(relid);
	if (stmt->attlist == NIL)
		refuse_given_stamp(relid);
	foreach(lc, stmt->attlist)
		if (strcmp(strVal(lfirst(lc)), CQ_TRACKING_COLUMN_NAME) == 0)
			refuse_given_stamp(relid);
	cq_wakeup_note_source(relid);
}

/*
 * citus_internal_backend
 *	  Is this session one of Citus' connections between nodes (its
 *	  application_name says so)?  A guard against mistakes, not a security
 *	  check: what such a session does the coordinator decided.
 */
static bool
citus_internal_backend(void)
{
	const char *app = GetConfigOption("application_name", true, false);

	return app != NULL && strncmp(app, CITUS_INTERNAL_PREFIX, strlen(CITUS_INTERNAL_PREFIX)) == 0;
}

/*
 * cq_citus_check_truncate
 *	  TRUNCATE, on a worker, of a distributed source or of one of its
 *	  shards, issued there (not by the coordinator, whose own guard
 *	  decided): refused.  The worker's pg_cq catalog knows no queries; the
 *	  default cq.coordinator_xact_id() marks the table.
 */
void
cq_citus_check_truncate(Oid relid)
{
	if (cq_citus_is_coordinator() || citus_internal_backend() ||
		!(cq_citus_relation_stamped_by_coordinator(relid) || cq_citus_node_stamped(relid)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("cannot truncate \"%s\" on a Citus worker because continuous queries read it as their source",
					get_rel_name(relid)),
			 errdetail("Their sources are append-only: the targets, on the coordinator, would keep the results of the removed rows."),
			 errhint("Truncate on the coordinator, where cq.allow_source_truncate decides.")));
}

/*
 * cq_citus_guc_begin / cq_citus_guc_end
 *	  Set a Citus setting for a section, if Citus defined it (else
 *	  nothing; returns -1).  The section ends with cq_citus_guc_end, which
 *	  puts back every setting changed since.
 */
int
cq_citus_guc_begin(const char *name, const char *value)
{
	int			nest;

	if (GetConfigOption(name, true, false) == NULL)
		return -1;
	nest = NewGUCNestLevel();
	(void) set_config_option(name, value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

void
cq_citus_guc_end(int nest)
{
	if (nest >= 0)
		AtEOXact_GUC(false, nest);
}

/*
 * cq_citus_barrier_begin
 *	  Before a batch takes its snapshot: LOCK pg_dist_transaction IN
 *	  EXCLUSIVE MODE, which waits for every distributed commit between its
 *	  local commit and its COMMIT PREPARED on the workers.  Taken in C: no
 *	  rights on Citus' catalog are needed.  False without Citus.
 */
bool
cq_citus_barrier_begin(void)
{
	Oid			relid = citus_catalog("pg_dist_transaction");

	if (!OidIsValid(relid))
		return false;
	LockRelationOid(relid, ExclusiveLock);
	barrier_rel = relid;
	return true;
}

/*
 * widen_xid
 *	  The full id of a 32-bit transaction id of the recent past.
 */
static uint64
widen_xid(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next) && epoch > 0)
		epoch--;
	return ((uint64) epoch << 32) | xid;
}

/*
 * cq_citus_barrier_end
 *	  Right after the snapshot: the committed records of pg_dist_transaction
 *	  (each a transaction prepared on a node by a coordinator transaction,
 *	  the record's xmin, which committed), then the lock is released.  Citus
 *	  keeps records until its recovery (every citus.recover_2pc_interval)
 *	  finds their prepared transactions gone.
 */
List *
cq_citus_barrier_end(void)
{
	List	   *result = NIL;
	Relation	rel;
	AttrNumber	group_att;
	AttrNumber	gid_att;
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(barrier_rel))
		return NIL;
	rel = table_open(barrier_rel, AccessShareLock);
	group_att = attnameAttNum(rel, "groupid", false);
	gid_att = attnameAttNum(rel, "gid", false);
	if (group_att != InvalidAttrNumber && gid_att != InvalidAttrNumber)
	{
		/* a fresh catalog snapshot: the commits the lock waited for are in */
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);
			bool		gnull;
			bool		inull;
			Datum		g = heap_getattr(tup, group_att, RelationGetDescr(rel), &gnull);
			Datum		id = heap_getattr(tup, gid_att, RelationGetDescr(rel), &inull);
			CqCitusRecord *r;

			if (gnull || inull || !TransactionIdIsNormal(xmin) || HeapTupleHeaderXminFrozen(tup->t_data))
				continue;
			r = palloc(sizeof(CqCitusRecord));
			r->groupid = DatumGetInt32(g);
			r->gid = TextDatumGetCString(id);
			r->xid = widen_xid(xmin);
			result = lappend(result, r);
		}
		systable_endscan(scan);
	}
	table_close(rel, AccessShareLock);
	UnlockRelationOid(barrier_rel, ExclusiveLock);
	barrier_rel = InvalidOid;
	return result;
}

/*
 * cq_citus_orphans
 *	  Of the records given, the coordinator transactions (uint64 ids, as
 *	  a list of pointers) whose prepared transaction is still pending on its
 *	  node: their COMMIT PREPARED failed, and Citus' recovery will commit
 *	  them later.  A node that cannot be asked counts as holding all of
 *	  its group's records.  As superuser (run_command_on_all_nodes and the
 *	  nodes' pg_prepared_xacts), with search_path pinned.  Caller has SPI
 *	  connected.
 */
List *
cq_citus_orphans(List *records)
{
	List	   *result = NIL;
	CqSecurity	sec;
	ListCell   *lc;
	MemoryContext cxt = CurrentMemoryContext;
	uint64		nrows;
	List	   *answers = NIL;	/* per answering group: "groupid" -> gid list */

	if (records == NIL)
		return NIL;
	cq_security_superuser(&sec);
	cq_spi_exec("SELECT n.groupid, r.success, r.result "
				"FROM pg_catalog.run_command_on_all_nodes("
				"'SELECT pg_catalog.string_agg(gid, '' '') FROM pg_catalog.pg_prepared_xacts "
				" WHERE gid OPERATOR(pg_catalog.~~) ''citus\\_%''') r "
				"JOIN pg_catalog.pg_dist_node n ON n.nodeid OPERATOR(pg_catalog.=) r.nodeid",
				SPI_OK_SELECT, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);
	nrows = SPI_processed;
	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple	t = SPI_tuptable->vals[i];
		TupleDesc	d = SPI_tuptable->tupdesc;
		char	   *group = SPI_getvalue(t, d, 1);
		char	   *ok = SPI_getvalue(t, d, 2);
		char	   *res = SPI_getvalue(t, d, 3);
		bool		success = ok != NULL && strcmp(ok, "t") == 0;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		/* " groupid t gid gid ... ": a node that failed to answer has "f" */
		answers = lappend(answers, psprintf(" %s %s %s ", group ? group : "-", success ? "t" : "f",
											success && res != NULL ? res : ""));
		MemoryContextSwitchTo(old);
	}
	foreach(lc, records)
	{
		CqCitusRecord *r = lfirst(lc);
		char	   *head = psprintf(" %d ", r->groupid);
		char	   *gid = psprintf(" %s ", r->gid);
		bool		pending = false;
		ListCell   *a;

		foreach(a, answers)
		{
			char	   *ans = lfirst(a);

			if (strncmp(ans, head, strlen(head)) != 0)
				continue;
			if (ans[strlen(head)] != 't' || strstr(ans + strlen(head) + 1, gid) != NULL)
				pending = true;
		}
		if (pending)
		{
			uint64	   *x = palloc(sizeof(uint64));

			*x = r->xid;
			result = lappend(result, x);
		}
	}
	return result;
}

/*
 * cq_citus_init
 *	  Install the planner hook; called from _PG_init.
 */
void
cq_citus_init(void)
{
	CacheRegisterSyscacheCallback(PROCOID, functions_inval, (Datum) 0);
	prev_planner = planner_hook;
	planner_hook = cq_citus_planner;
}
