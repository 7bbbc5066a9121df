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
 * not shadow; operators and functions are never looked up there.)  A
 * superuser section also sets aside a default_tablespace its caller may
 * not create in (the internal tables it creates would land there, past the
 * ACL check a superuser passes).
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

#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
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

	/*
	 * Pinned already (a background process is for its life, see
	 * cq_security_pin_process; an enclosing section): setting it again
	 * would only have the schemas looked up anew, here and when the section
	 * ends (~10k instructions a batch in a worker: bench/batch_cg.sh with
	 * BCG_PINNED=1).  The pin guarantees a value, whoever set it; what user
	 * code SETs inside the section ends with it all the same (the GUC nest
	 * level above).
	 */
	if (namespace_search_path == NULL || strcmp(namespace_search_path, CQ_SAFE_SEARCH_PATH) != 0)
		(void) set_config_option("search_path", CQ_SAFE_SEARCH_PATH, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * tablespace_usable
 *	  May user create in the tablespace named name?  Yes for '' (the
 *	  database's default) and for a name that is no tablespace (PostgreSQL
 *	  then uses the default too).
 */
static bool
tablespace_usable(const char *name, Oid user)
{
	Oid			spc;

	if (name == NULL || name[0] == '\0')
		return true;
	spc = get_tablespace_oid(name, true);
	return !OidIsValid(spc) || spc == MyDatabaseTableSpace ||
		pg_tablespace_aclcheck(spc, user, ACL_CREATE) == ACLCHECK_OK;
}

/*
 * pin_tablespace
 *	  The internal tables and indexes a superuser section creates go where
 *	  default_tablespace says, as its caller's own tables would, but only
 *	  to a tablespace the caller may create in: a superuser passes every
 *	  tablespace's ACL check.  Otherwise default_tablespace is '' for the
 *	  section (the database's default, which needs no right).
 */
static void
pin_tablespace(Oid caller)
{
	if (tablespace_usable(GetConfigOption("default_tablespace", true, false), caller))
		return;
	(void) set_config_option("default_tablespace", "", PGC_USERSET, PGC_S_SESSION,
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
	pin_tablespace(s->save_uid);

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
 * cq_security_passes_setting
 *	  May the caller's value of a setting go to the worker that runs its
 *	  CALL cq.run (handoff.c), as the bootstrap superuser between sections?
 *	  Not search_path, which every batch pins anyway, nor a
 *	  default_tablespace the caller may not create in (a superuser section
 *	  of the caller sets it aside, see pin_tablespace; the worker's would
 *	  not know the caller).
 */
bool
cq_security_passes_setting(const char *name, const char *value)
{
	if (pg_strcasecmp(name, "search_path") == 0)
		return false;
	if (pg_strcasecmp(name, "default_tablespace") == 0)
		return tablespace_usable(value, GetUserId());
	return true;
}

/*
 * cq_security_deparse_begin / cq_security_deparse_end
 *	  Deparse under search_path = pg_catalog so that every user object is
 *	  printed schema-qualified, and with the constants printed so that they
 *	  read back the same under any setting (as pg_dump prints them):
 *	  DateStyle ISO, IntervalStyle postgres, extra_float_digits 3.  The
 *	  text is parsed later, not always under the settings it was printed
 *	  with: a backend's cached SQL (plan.c) is run after a SET, a pool
 *	  worker's by the next caller with that caller's settings, and
 *	  PostgreSQL's plan cache analyzes a saved plan's statement again under
 *	  the settings of the moment.  Under the session's settings a date was
 *	  printed '04/03/2026' under DateStyle 'SQL, DMY' and read back as
 *	  April 3 under 'ISO, MDY', and a float8 lost digits under a negative
 *	  extra_float_digits (sql/152).  (standard_conforming_strings, which
 *	  changes how a string is printed and read back alike, is in plan.c's
 *	  cache key instead.)
 */
int
cq_security_deparse_begin(void)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("DateStyle", "ISO", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("IntervalStyle", "postgres", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return nest;
}

void
cq_security_deparse_end(int nest)
{
	AtEOXact_GUC(false, nest);
}

/*
 * cq_security_target_rls
 *	  A query that reads its target to write it (reads: update mode, or
 *	  complete mode's DELETE refresh; batch.c, before every batch) cannot
 *	  run where row-level security applies to its owner on the
 *	  target (FORCE ROW LEVEL SECURITY on a target it owns, or a target of
 *	  another role with row-level security on), unless the owner bypasses
 *	  it: rows the SELECT policies hide from the owner are invisible to the
 *	  batch's statements, so the upsert found a hidden group's row missing
 *	  and inserted it again (two rows of one group; MERGE too, and complete
 *	  mode's reload kept the rows its DELETE did not see), and its UPDATE
 *	  left it as it was (session 36, t/096).  The batch fails instead, with
 *	  what to change.
 */
void
cq_security_target_rls(Oid target, Oid owner, bool reads, const char *name)
{
	if (!reads || !OidIsValid(target) ||
		check_enable_rls(target, owner, true) != RLS_ENABLED)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("continuous query \"%s\" cannot write its target \"%s\": row-level security applies to its owner there",
					name, get_rel_name(target)),
			 errdetail("The query rewrites its target's rows, and rows its policies hide from its owner would be written again beside the hidden ones."),
			 errhint("Let the owner see every row: ALTER TABLE ... NO FORCE ROW LEVEL SECURITY on a target it owns, or DISABLE ROW LEVEL SECURITY.")));
}
