/*-------------------------------------------------------------------------
 *
 * pg_cq.c
 *	  Module entry point: PG_MODULE_MAGIC and _PG_init only.
 *
 * pg_cq must be loaded through shared_preload_libraries: its DDL hook has to
 * see every DROP TABLE (or a dropped target would leave its query behind),
 * and background workers and shared memory can only be set up there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "guc.h"
#include "horizon.h"
#include "shmem.h"
#include "wakeup.h"
#include "launcher.h"
#include "ddl.h"
#include "truncate.h"
#include "stamp.h"
#include "tracking.h"
#include "insert_check.h"
#include "citus.h"
#include "shard.h"
#include "delta_plan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * _PG_init
 *	  Refuse to load outside shared_preload_libraries, then initialize each
 *	  module.
 */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_cq must be loaded via shared_preload_libraries"),
				 errhint("Add pg_cq to the shared_preload_libraries configuration parameter and restart the server.")));

	cq_guc_init();
	cq_shmem_init();
	cq_horizon_shmem_init();
	cq_wakeup_init();
	cq_ddl_init();
	cq_truncate_init();
	cq_stamp_init();
	cq_insert_check_init();
	cq_citus_init();
	cq_shard_init();
	cq_delta_plan_init();
	cq_launcher_register();
}
