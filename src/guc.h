/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  Every GUC of pg_cq (guc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_GUC_H
#define CQ_GUC_H

#include "postgres.h"

extern void cq_guc_init(void);
extern int	cq_lock_timeout_ms;
extern int	cq_work_mem_kb;
extern int	cq_max_queries;
extern int	cq_max_workers;
extern int	cq_naptime_ms;
extern int	cq_coalesce_max_delay_ms;
extern int	cq_coalesce_factor;
extern int	cq_coalesce_row_us;
extern int	cq_custom_plan_rows;
extern bool cq_run_in_worker;
extern int	cq_batch_timeout_ms;
extern int	cq_debug_batch_end_delay_ms;
extern bool cq_allow_source_truncate;
extern bool cq_citus_per_node;
extern bool cq_citus_shard_scans;
extern bool cq_citus_snapshot_probes;
extern int	cq_state_memory_kb;
extern int	cq_state_image_batches;
extern int	cq_state_image_interval_s;
extern bool cq_bench_split_batch;
extern bool cq_bulk_load;
extern bool cq_delta_agg_in_c;
extern bool cq_fold_page_economy;
extern bool cq_batch0_read_back;
extern int	cq_fold_direct_pages;

/* cq.fold_direct_pages: which pages of batch 0's loads go past shared buffers (heappage.c) */
typedef enum CqDirectPages
{
	CQ_DIRECT_OFF,				/* none: every page through shared buffers */
	CQ_DIRECT_ON,				/* those beyond what COPY's ring keeps in shared buffers */
	CQ_DIRECT_ALWAYS			/* every page (tests, measurements) */
} CqDirectPages;
extern bool cq_delta_scan_in_c;
extern bool cq_target_update_in_c;
extern int	cq_target_update_order;

/* cq.target_update_order: the order in which the C writer takes its groups */
typedef enum CqTargetUpdateOrder
{
	CQ_ORDER_AUTO,				/* key-hash order where they are many (store_update.c) */
	CQ_ORDER_KEY,				/* key-hash order in every batch */
	CQ_ORDER_STORE				/* the store's order in every batch */
} CqTargetUpdateOrder;
extern int	cq_merge_max_groups;
extern char *cq_batch_metrics;

/* cq.default_state_storage */
typedef enum CqStorageDefault
{
	CQ_STORAGE_MEMORY,
	CQ_STORAGE_UNLOGGED,
	CQ_STORAGE_LOGGED
} CqStorageDefault;
extern int	cq_default_state_storage;
extern const char *cq_default_state_storage_name(void);

/* cq.stamp_type: the type of a cq_xid column tracking adds (stamp_type.c) */
typedef enum CqStampType
{
	CQ_STAMP_XID8,				/* pg_catalog.xid8, 8 bytes */
	CQ_STAMP_XID48				/* cq.xid48, 6 bytes (catalog 0.2) */
} CqStampType;
extern int	cq_stamp_type;

#endif							/* CQ_GUC_H */
