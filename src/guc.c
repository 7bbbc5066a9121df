/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  Every configuration parameter of pg_cq, in one place.
 *
 * The "cq" prefix is reserved so that a misspelt cq.* setting is reported
 * instead of silently creating a placeholder.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "guc.h"

/* complete mode: how long a batch waits for the target's lock before giving up */
int			cq_lock_timeout_ms = 1000;

/* work_mem of batch statements, in kB; -1 = the session's work_mem */
int			cq_work_mem_kb = 4096;

/* background execution (launcher.c, scheduler.c, worker.c) */
int			cq_max_queries = 1024;	/* status slots in shared memory */
int			cq_max_workers = 2;	/* batch workers per database */
int			cq_naptime_ms = 5000;	/* launcher scan, catalog reload, fallback poll */
int			cq_coalesce_max_delay_ms = 100;	/* trigger '0': longest hold after a batch */
int			cq_coalesce_factor = 4;	/* trigger '0': hold = factor x the batch's time */
int			cq_custom_plan_rows = 5000;	/* store batches: custom plan of d from this */
int			cq_coalesce_row_us = 5;	/* trigger '0': and at least this x its rows */

/* CALL cq.run hands its batches to an idle pool worker (handoff.c) */
bool		cq_run_in_worker = true;

/* longest batch a worker runs before canceling it as a failure (runner.c) */
int			cq_batch_timeout_ms = 0;
/* internal, tests only: a wait after a batch, before its commit (runner.c) */
int			cq_debug_batch_end_delay_ms = 0;

/* TRUNCATE of a source with continuous queries (truncate.c) */
bool		cq_allow_source_truncate = false;

/* Citus distributed sources newly tracked are stamped per node (citus.c) */
bool		cq_citus_per_node = true;

/* measurements only: shard queries of per-node batches as they come (shard.c) */
bool		cq_citus_shard_scans = true;

/* every node's snapshot through the batch's own Citus connections (citus.c) */
bool		cq_citus_snapshot_probes = true;
int			cq_state_memory_kb = 131072;
int			cq_state_image_batches = 0;
int			cq_state_image_interval_s = 300;

/* measurements only: a table path batch in two statements (batch.c) */
bool		cq_bench_split_batch = false;
bool		cq_bulk_load = true;
/* d's partial aggregation of an incremental batch on the store in C (deltagg.c) */
bool		cq_delta_agg_in_c = true;
/* and its new rows read in C, without the statement's scan (delta_scan.c) */
bool		cq_delta_scan_in_c = true;
/* an incremental batch's changed groups written to the target in C (store_update.c) */
bool		cq_target_update_in_c = true;
int			cq_target_update_order = CQ_ORDER_AUTO;
/* batch 0 maps fewer pages: its target load in buffers, the store's pages populated (rowload.c, store_node.c) */
bool		cq_fold_page_economy = true;
/* batch 0 of an update query reads its target's heap back into shared buffers (rowload.c) */
bool		cq_batch0_read_back = false;
/* batch 0's loads write whole heap pages outside shared buffers (heappage.c) */
int			cq_fold_direct_pages = CQ_DIRECT_ON;

static const struct config_enum_entry direct_pages_options[] = {
	{"off", CQ_DIRECT_OFF, false},
	{"on", CQ_DIRECT_ON, false},
	{"always", CQ_DIRECT_ALWAYS, false},
	{"false", CQ_DIRECT_OFF, true},
	{"true", CQ_DIRECT_ON, true},
	{"no", CQ_DIRECT_OFF, true},
	{"yes", CQ_DIRECT_ON, true},
	{"0", CQ_DIRECT_OFF, true},
	{"1", CQ_DIRECT_ON, true},
	{NULL, 0, false}
};
/* update mode: batches changing at most this many groups use MERGE (merge.c); -1: all */
int			cq_merge_max_groups = -1;
/* internal: a MERGE batch statement's statistics (plan.c, batch.c) */
char	   *cq_batch_metrics = NULL;

/* where a new query keeps its state when it does not say (options.c, api.c) */
int			cq_default_state_storage = CQ_STORAGE_MEMORY;

/* cq.stamp_type */
int			cq_stamp_type = CQ_STAMP_XID8;

static const struct config_enum_entry stamp_type_options[] = {
	{"xid8", CQ_STAMP_XID8, false},
	{"xid48", CQ_STAMP_XID48, false},
	{NULL, 0, false}
};

static const struct config_enum_entry state_storage_options[] = {
	{"memory", CQ_STORAGE_MEMORY, false},
	{"unlogged", CQ_STORAGE_UNLOGGED, false},
	{"logged", CQ_STORAGE_LOGGED, false},
	{NULL, 0, false}
};

static const struct config_enum_entry target_update_order_options[] = {
	{"auto", CQ_ORDER_AUTO, false},
	{"key", CQ_ORDER_KEY, false},
	{"store", CQ_ORDER_STORE, false},
	{NULL, 0, false}
};

/*
 * cq_default_state_storage_name
 *	  The value of cq.default_state_storage, as the option spells it.
 */
const char *
cq_default_state_storage_name(void)
{
	switch (cq_default_state_storage)
	{
		case CQ_STORAGE_UNLOGGED:
			return "unlogged";
		case CQ_STORAGE_LOGGED:
			return "logged";
		default:
			return "memory";
	}
}

/*
 * cq_guc_init
 *	  Define the GUCs; called from _PG_init.
 */
void
cq_guc_init(void)
{
	DefineCustomIntVariable("cq.work_mem",
							"Memory for each sort, hash table and CTE buffer of a batch; -1 uses work_mem.",
							"A batch statement holds a hash aggregation (hash_mem_multiplier times this) "
							"and a few CTE buffers at once, each spilling to disk beyond this size.",
							&cq_work_mem_kb,
							4096, -1, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.state_memory",
							"Shared memory the state of one continuous query in the shared-memory store may take.",
							"Counted as the size of its state rows plus a small overhead per group; a batch "
							"that would exceed it fails (the state is unchanged).",
							&cq_state_memory_kb,
							131072, 64, MAX_KILOBYTES,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("cq.default_state_storage",
							 "Where a new continuous query keeps its state when its state_storage option is not given.",
							 "\"memory\" (the default) keeps it in the shared-memory state store when the store can "
							 "hold the query and in an unlogged table otherwise; \"unlogged\" and \"logged\" "
							 "choose a state table.",
							 &cq_default_state_storage,
							 CQ_STORAGE_MEMORY, state_storage_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("cq.stamp_type",
							 "Type of the column cq_xid that pg_cq adds to a source it starts to track.",
							 "\"xid8\" (the default) or \"xid48\", pg_cq's 6-byte cq.xid48 (catalog 0.2), "
							 "which holds the same transaction ids in 2 bytes less.  Read only when a source "
							 "is first tracked; a cq_xid column keeps its type, and both types work.",
							 &cq_stamp_type,
							 CQ_STAMP_XID8, stamp_type_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("cq.state_image_batches",
							"Batches after which a query in the shared-memory store writes its state table image.",
							"After a restart the store is loaded from the image and only the rows of later "
							"batches are folded again; 0 (the default) = never by count, only by "
							"cq.state_image_interval: an image rewrites the whole state, which a query "
							"running many small batches (trigger '0') would pay every few seconds.",
							&cq_state_image_batches,
							0, 0, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.state_image_interval",
							"Time after which a query in the shared-memory store writes its state table image.",
							"0 = never by time.",
							&cq_state_image_interval_s,
							300, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.complete_lock_timeout",
							"Time a complete-mode batch waits to lock its target before retrying later.",
							"Truncate-and-reload needs an exclusive lock on the target; a long reader "
							"must not queue dashboards behind it.",
							&cq_lock_timeout_ms,
							1000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.max_queries",
							"Continuous queries whose live status is kept in shared memory (whole cluster).",
							"Queries beyond this still run, but cq.status shows them as stopped and "
							"commits do not wake them (they are polled every cq.naptime).",
							&cq_max_queries,
							1024, 16, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.max_workers",
							"Background processes running batches, per database.",
							"They are taken from max_worker_processes, as is each database's scheduler "
							"and the launcher.",
							&cq_max_workers,
							2, 0, 64,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.naptime",
							"How often the launcher looks for databases and schedulers re-read the catalog.",
							"Also the fallback poll of trigger '0' queries for commits that cannot wake "
							"them (COMMIT PREPARED, logical replication, disabled triggers).",
							&cq_naptime_ms,
							5000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.run_in_worker",
							 "Lets CALL cq.run run its batches in an idle worker of the database's pool.",
							 "Outside a transaction block, when a worker is idle, the batches run in that "
							 "long-lived process (warm caches and plans) while the caller waits and gets "
							 "its NOTICEs and errors; otherwise, or off, in the caller's own process.",
							 &cq_run_in_worker,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("cq.batch_timeout",
							"Longest time a batch may run in a pg_cq worker; 0 is no limit.",
							"A batch that runs longer in a worker (scheduled, or a CALL cq.run handed to "
							"one) is canceled and rolled back, and its query goes failed with the error in "
							"last_error and is retried with backoff, so one query cannot hold a worker of "
							"the shared pool.",
							&cq_batch_timeout_ms,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("cq.debug_batch_end_delay",
							"Internal, for tests only: a wait after each batch, before its commit.",
							"No interrupt is checked during it, so that a test can have cq.batch_timeout "
							"fire after the batch's last check.  0 (the default) = none.",
							&cq_debug_batch_end_delay_ms,
							0, 0, 60 * 1000,
							PGC_SUSET, GUC_UNIT_MS | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("cq.coalesce_max_delay",
							"Longest time a trigger '0' query waits after a batch before the next one.",
							"After a batch that took D, the next batch starts no earlier than its end "
							"plus the smaller of this and cq.coalesce_factor x D, so that under a stream "
							"of commits batches grow and their fixed cost is shared by more rows; a commit "
							"after that runs at once. 0 = no wait.",
							&cq_coalesce_max_delay_ms,
							100, 0, 10000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.coalesce_factor",
							"Wait of a trigger '0' query after a batch, in multiples of the batch's time.",
							"Bounds the share of a worker one query's batches take under a stream of "
							"commits to about 1/(factor + 1), until cq.coalesce_max_delay caps the wait. "
							"0 = no wait.",
							&cq_coalesce_factor,
							4, 0, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.coalesce_row_us",
							"Wait of a trigger '0' query after a batch, in microseconds per row it read.",
							"The wait after a batch is at least this times its rows (up to "
							"cq.coalesce_max_delay), so that under heavy ingest batches grow until the cap "
							"even when cq.coalesce_factor x D does not reach it; small batches hardly "
							"notice it. 0 = only cq.coalesce_factor.",
							&cq_coalesce_row_us,
							5, 0, 100000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("cq.custom_plan_rows",
							"Rows of a query's previous batch from which its next batch's new rows are read with a custom plan.",
							"A batch on the shared-memory store reads its new rows with a plan made for "
							"its own offsets (constants) instead of the cached generic one (parameters "
							"evaluated for every row) when the query's previous batch in this process "
							"read at least this many rows. -1 = never.",
							&cq_custom_plan_rows,
							5000, -1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.allow_source_truncate",
							 "Allows TRUNCATE of a table that continuous queries read as their source.",
							 "Targets keep the results of the truncated rows; a later rebuild of lost "
							 "unlogged state forgets them.",
							 &cq_allow_source_truncate,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.citus_per_node",
							 "Stamps the rows of Citus distributed sources on the node that stores them.",
							 "Applies when a distributed table becomes a source: on, its rows are read "
							 "against each node's own snapshots (writes through any node); off, they are "
							 "stamped by the coordinator's transaction (writes through the coordinator only).",
							 &cq_citus_per_node,
							 true,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.citus_shard_scans",
							 "Lets a batch's shard queries read only new rows on the nodes that store them.",
							 "Per-node cq_xid ranges for the shards' BRIN indexes, their summarization and "
							 "scan settings (docs/scale-out.md); off only to measure without them.",
							 &cq_citus_shard_scans,
							 true,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.citus_snapshot_probes",
							 "Takes the Citus nodes' snapshots of a batch through its own Citus connections.",
							 "One routed query per node over a shard of the source (docs/scale-out.md); off, "
							 "through run_command_on_all_nodes, which opens new connections: only to measure.",
							 &cq_citus_snapshot_probes,
							 true,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.bench_split_batch",
							 "Runs a batch of an update query on the table path as two statements, for measurements.",
							 "The state statement and the target statement over its changed rows; their CPU "
							 "time is reported at DEBUG1.  Queries without windows or event time only.",
							 &cq_bench_split_batch,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.bulk_load",
							 "Loads batch 0 over history of an update query on the state table path directly.",
							 "Each group goes to the state table and its row to the target by a heap insert, "
							 "as COPY writes, where the tables allow it (docs/reference.md); off runs the "
							 "batch statement instead.  Likewise the state table image of a query on the "
							 "store, its indexes built after the load.  The results are the same.",
							 &cq_bulk_load,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.target_update_in_c",
							 "Writes the changed groups of an incremental batch on the store to the target in C.",
							 "An update query's changed groups are updated, inserted or deleted in its target "
							 "row by row, where the target allows it (docs/reference.md); off runs the upsert "
							 "statement instead.  The results are the same.",
							 &cq_target_update_in_c,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("cq.target_update_order",
							 "The order in which the C writer takes a batch's changed groups.",
							 "\"auto\" (the default): sorted by their key hash, the order of pg_cq's index on "
							 "the target, where they are at least 1,024, at least half as many as the index's "
							 "pages, and the index has at least 1,024 pages; else as the store returns them "
							 "(docs/reference.md).  \"key\": sorted in every batch; \"store\": never, as "
							 "before; for tests and measurements.  The results are the same.",
							 &cq_target_update_order,
							 CQ_ORDER_AUTO, target_update_order_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.delta_agg_in_c",
							 "Aggregates the new rows of an incremental batch on the store in C.",
							 "For the common keys and partial aggregates (docs/reference.md): the batch's "
							 "statement only scans the new rows, and pg_cq groups them; off runs the "
							 "aggregation in the statement.  The results are the same.",
							 &cq_delta_agg_in_c,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.delta_scan_in_c",
							 "Reads the new rows of an incremental batch on the store in C.",
							 "Where cq.delta_agg_in_c applies and the query reads one table's columns "
							 "(docs/reference.md): pg_cq reads the new rows through the BRIN index "
							 "itself instead of running the batch's scan statement.  The results "
							 "are the same.",
							 &cq_delta_scan_in_c,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.fold_page_economy",
							 "Batch 0 over history maps fewer pages of memory one at a time.",
							 "With cq.batch0_read_back on, its target rows go to shared buffers of their own "
							 "rather than through a ring whose pages the batch writes out and reads back; and "
							 "the shared-memory store maps its new pages in bulk (docs/reference.md).  Off: as "
							 "before, for measurements.  The results are the same.",
							 &cq_fold_page_economy,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("cq.batch0_read_back",
							 "Batch 0 over history of an update query reads its target's heap into shared buffers at its end.",
							 "Its indexes are read back either way.  Off (the default since 0.2's session 41): "
							 "the target's rows go through COPY's ring, and the next batches read the pages "
							 "they update from the operating system; on: they go to shared buffers of their "
							 "own as far as the read-back goes (cq.fold_page_economy), which then finds them "
							 "(docs/reference.md).  The results are the same.",
							 &cq_batch0_read_back,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("cq.fold_direct_pages",
							 "Batch 0 over history writes the rows it loads into empty tables as whole pages.",
							 "The target's rows (and on the table path the state's) are placed on pages in "
							 "private memory, each written once at the table's end and WAL-logged as a full "
							 "page image, instead of going through shared buffers one new page at a time "
							 "(docs/reference.md).  on: the pages beyond the first ones COPY's ring keeps "
							 "in shared buffers (a small target stays there, as before); always: every page; "
							 "off: as before, for measurements.  Not for tables whose changes logical "
							 "decoding reads.  The results are the same.",
							 &cq_fold_direct_pages,
							 CQ_DIRECT_ON, direct_pages_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("cq.merge_max_groups",
							"Changed groups up to which a batch of an update query writes its target by MERGE.",
							"Only for queries whose keys are all NOT NULL (cq.explain says which), and on the "
							"store only where the C writer (cq.target_update_in_c) does not apply; other batches "
							"take the upsert statement.  -1 (the default) = always MERGE, which bench/merge.sh "
							"measured at least as fast as the upsert statement up to 100,000 changed groups; "
							"0 = never.  On the table path a positive value is compared with the batch's new "
							"rows, counted first.",
							&cq_merge_max_groups,
							-1, -1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("cq.batch_metrics",
							   "Internal: the statistics of a batch statement that returns no row (MERGE).",
							   NULL,
							   &cq_batch_metrics,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_NO_RESET_ALL | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved("cq");
}
