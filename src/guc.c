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

#include "utils/guc.h"

#include "pg_cq.h"

/* complete mode: how long a batch waits for the target's lock before giving up */
int			cq_lock_timeout_ms = 1000;

/*
 * cq_guc_init
 *	  Define the GUCs; called from _PG_init.
 */
void
cq_guc_init(void)
{
	DefineCustomIntVariable("cq.complete_lock_timeout",
							"Time a complete-mode batch waits to lock its target before retrying later.",
							"Truncate-and-reload needs an exclusive lock on the target; a long reader "
							"must not queue dashboards behind it.",
							&cq_lock_timeout_ms,
							1000, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("cq");
}
