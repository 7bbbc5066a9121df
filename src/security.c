/*-------------------------------------------------------------------------
 *
 * security.c
 *	  The only place that switches users: every section of pg_cq that runs
 *	  with rights its caller lacks goes through here.
 *
 * Two kinds of sections:
 *	 - superuser: catalog maintenance (cq.* tables, internal objects in
 *	   cq_state) as the bootstrap superuser; only fixed SQL written in pg_cq
 *	   runs in it, with every operator spelled OPERATOR(pg_catalog.x) and
 *	   every type and function schema-qualified; on Citus, without DDL
 *	   propagation (internal objects stay on the node that made them);
 *	 - owner: a query's own SQL as its owner, in a security-restricted
 *	   operation as REFRESH MATERIALIZED VIEW does (no SET ROLE, no
 *	   temporary objects, no deferred triggers of user code).
 * Both pin search_path = pg_catalog, pg_temp for their duration, so that
 * neither the caller's search_path nor a database or role default reaches
 * them: an operator, function or type of an attacker's schema can never be
 * picked instead of pg_catalog's.  (pg_temp last: temporary relations do
 * not shadow; operators and functions are never looked up there.)
 *
 * Sections nest, and must be left in the reverse order they were entered.
 * An error inside one needs no cleanup here: aborting the (sub)transaction
 * that catches it restores both the user id and the GUC nest level, so a
 * PG_CATCH that does not abort a (sub)transaction must not swallow errors
 * from inside a section.
 *
 * Background processes (scheduler, workers) connect as the bootstrap
 * superuser: cq_security_pin_process() pins their search_path for the
 * whole process, before they read anything.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "security.h"


#define CQ_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/*
 * enter
 *	  Switch to uid with the given extra security context bits and pin
 *	  search_path; remember what to restore.
 */
static void
enter(Oid uid, int extra_sec, CqSecurity *s)
{
	GetUserIdAndSecContext(&s->save_uid, &s->save_sec);
	SetUserIdAndSecContext(uid, s->save_sec | SECURITY_LOCAL_USERID_CHANGE | extra_sec);
	s->nest = NewGUCNestLevel();
	(void) set_config_option("search_path", CQ_SAFE_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * cq_security_superuser
 *	  Enter a superuser section (catalog maintenance, fixed SQL only).
 */
void
cq_security_superuser(CqSecurity *s)
{
	enter(BOOTSTRAP_SUPERUSERID, 0, s);

	/*
	 * On a Citus node, pg_cq's internal objects (cq_state.*) are local:
	 * Citus would otherwise propagate the views to every worker (where they
	 * collide with pg_cq used there) and warn about each.
	 */
	if (GetConfigOption("citus.enable_ddl_propagation", true, false) != NULL)
		(void) set_config_option("citus.enable_ddl_propagation", "off", PGC_SUSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * cq_security_owner
 *	  Enter a section that runs a query's SQL as `owner`, in a
 *	  security-restricted operation.
 */
void
cq_security_owner(Oid owner, CqSecurity *s)
{
	enter(owner, SECURITY_RESTRICTED_OPERATION, s);
}

/*
 * cq_security_restore
 *	  Leave the section: every GUC changed inside it (the pinned path, and
 *	  whatever user code set) goes back, then the user id.
 */
void
cq_security_restore(CqSecurity *s)
{
	AtEOXact_GUC(false, s->nest);
	SetUserIdAndSecContext(s->save_uid, s->save_sec);
}

/*
 * cq_security_pin_process
 *	  Background processes, right after connecting: search_path =
 *	  pg_catalog, pg_temp for the life of the process.  A database-level
 *	  or role-level search_path (ALTER DATABASE ... SET, which the
 *	  database's owner may run) was applied at connection time; this is
 *	  applied as a client connection option would be, which outranks those
 *	  and becomes the value RESET returns to, while user code may still SET
 *	  its own (functions with SET search_path keep working).
 */
void
cq_security_pin_process(void)
{
	SetConfigOption("search_path", CQ_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_CLIENT);
}

/*
 * cq_security_is_pinned_setting
 *	  Is this the setting security.c pins for every batch (search_path)?
 *	  A CALL cq.run handed to a worker does not pass the caller's value
 *	  (handoff.c): the batch pins its own either way.
 */
bool
cq_security_is_pinned_setting(const char *name)
{
	return pg_strcasecmp(name, "search_path") == 0;
}

/*
 * cq_security_deparse_begin / cq_security_deparse_end
 *	  Deparse under search_path = pg_catalog so that every user object is
 *	  printed schema-qualified.
 */
int
cq_security_deparse_begin(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

void
cq_security_deparse_end(int nest)
{
	AtEOXact_GUC(false, nest);
}
