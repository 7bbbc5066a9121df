/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The cluster launcher: one scheduler per database that has pg_cq.
 *
 * A static background worker ("pg_cq launcher", registered from _PG_init,
 * restarted by the postmaster 5 s after it dies) connected to no database:
 *	 - every cq.naptime it scans pg_database (templates and databases that
 *	   refuse connections are skipped) and starts a scheduler in every
 *	   database it has not probed yet; a scheduler that finds no pg_cq there
 *	   exits and marks its slot ABSENT, and the launcher leaves that database
 *	   alone until asked again (no extra configuration: no list of
 *	   databases to maintain);
 *	 - fast path: a backend that commits a change to cq.queries in a
 *	   database without a running scheduler puts the database in the
 *	   request queue and sets the launcher's latch;
 *	 - a scheduler that died (killed, FATAL error) is restarted after 1 s.
 * Schedulers are dynamic workers with BGW_NEVER_RESTART: after a
 * crash-restart the postmaster forgets them and the launcher starts fresh
 * ones, so there are never two per database (a scheduler also refuses to
 * run when its database slot already has a live pid).
 *
 * DROP DATABASE, CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... RENAME
 * need the database to themselves: when the user has the rights core will
 * ask for (cq_launcher_ddl_database), the DDL hook calls
 * cq_launcher_stop_database, which blocks the database's slot, terminates
 * its scheduler and workers and waits for them to exit.
 *
 * Memory: the launcher's state lives in TopMemoryContext; the pg_database
 * scan runs in a short transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/sinval.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "launcher.h"
#include "guc.h"
#include "shmem.h"
#include "inval.h"


#define CRASH_RESTART_DELAY_MS 1000
#define DB_BLOCK_MS (60 * 1000)
#define DB_STOP_WAIT_MS (10 * 1000)

/* launcher-local: handles of the schedulers it started, by db slot */
static BackgroundWorkerHandle **handles = NULL;

/* launcher-local: databases known to lack pg_cq */
static List *absent_dbs = NIL;

/*
 * cq_launcher_register
 *	  Register the static launcher; called from _PG_init.
 */
void
cq_launcher_register(void)
{
	BackgroundWorker w;

	/*
	 * pg_upgrade starts both clusters in binary-upgrade mode to dump and
	 * restore the schema: no batch may run then.
	 */
	if (IsBinaryUpgrade)
		return;
	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = 5;
	snprintf(w.bgw_library_name, BGW_MAXLEN, "pg_cq");
	snprintf(w.bgw_function_name, BGW_MAXLEN, "cq_launcher_main");
	snprintf(w.bgw_name, BGW_MAXLEN, "pg_cq launcher");
	snprintf(w.bgw_type, BGW_MAXLEN, "pg_cq launcher");
	RegisterBackgroundWorker(&w);
}

/*
 * launcher_exit
 *	  on_shmem_exit: nobody can wake us any more.
 */
static void
launcher_exit(int code, Datum arg)
{
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	if (cq_shared->launcher_pid == MyProcPid)
	{
		cq_shared->launcher_pid = 0;
		cq_shared->launcher_latch = NULL;
	}
	LWLockRelease(cq_shared->lock);
}

/*
 * list_databases
 *	  OIDs of the databases a scheduler may connect to.
 */
static List *
list_databases(void)
{
	List	   *result = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext outer = CurrentMemoryContext;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (db->datistemplate || !db->datallowconn || db->datconnlimit == -2)
			continue;			/* -2: a half-dropped database (15.4+) */
		old = MemoryContextSwitchTo(outer);
		result = lappend_oid(result, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

/*
 * scan_databases
 *	  Create slots for databases not yet probed; free the slots (and
 *	  forget) databases that no longer exist.
 */
static void
scan_databases(void)
{
	List	   *dbs = list_databases();
	ListCell   *lc;
	List	   *still_absent = NIL;

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);

		if (list_member_oid(absent_dbs, dboid))
		{
			still_absent = lappend_oid(still_absent, dboid);
			continue;
		}
		if (cq_shmem_get_db(dboid) == NULL)
			break;				/* every slot taken: later */
	}
	for (int i = 0; i < cq_shared->ndbs; i++)
	{
		CqDbSlot   *db = &cq_shared->dbs[i];

		if (db->in_use && db->pid == 0 && handles[i] == NULL && !list_member_oid(dbs, db->dboid))
			db->in_use = false;
	}
	cq_shared->rescan = false;
	LWLockRelease(cq_shared->lock);
	list_free(absent_dbs);
	absent_dbs = still_absent;
	list_free(dbs);
}

/*
 * drain_requests
 *	  Databases whose scheduler was asked for: probe them again now.
 */
static void
drain_requests(void)
{
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < cq_shared->nrequests; i++)
	{
		Oid			dboid = cq_shared->requests[i];
		CqDbSlot   *db;

		absent_dbs = list_delete_oid(absent_dbs, dboid);
		db = cq_shmem_get_db(dboid);
		if (db && db->state == CQ_DB_ABSENT && db->pid == 0)
			db->state = CQ_DB_UNKNOWN;
	}
	cq_shared->nrequests = 0;
	LWLockRelease(cq_shared->lock);
}

/*
 * start_scheduler
 *	  Register the dynamic scheduler of a database.
 */
static BackgroundWorkerHandle *
start_scheduler(Oid dboid)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *handle;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(w.bgw_library_name, BGW_MAXLEN, "pg_cq");
	snprintf(w.bgw_function_name, BGW_MAXLEN, "cq_scheduler_main");
	snprintf(w.bgw_name, BGW_MAXLEN, "pg_cq scheduler for database %u", dboid);
	snprintf(w.bgw_type, BGW_MAXLEN, "pg_cq scheduler");
	w.bgw_main_arg = ObjectIdGetDatum(dboid);
	w.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&w, &handle))
		handle = NULL;
	MemoryContextSwitchTo(old);
	return handle;
}

/*
 * manage_schedulers
 *	  Notice schedulers that are gone, start the ones that are wanted.
 *	  Returns the milliseconds until something is due, or -1.
 */
static long
manage_schedulers(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next = 0;
	int			nstart = 0;
	int		   *to_start = palloc(sizeof(int) * cq_shared->ndbs);
	bool	   *stopped = palloc0(sizeof(bool) * cq_shared->ndbs);

	/* handle states outside our lock (they take BackgroundWorkerLock) */
	for (int i = 0; i < cq_shared->ndbs; i++)
	{
		pid_t		pid;

		if (handles[i] && GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(handles[i]);
			handles[i] = NULL;
			stopped[i] = true;
		}
	}

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < cq_shared->ndbs; i++)
	{
		CqDbSlot   *db = &cq_shared->dbs[i];

		if (!db->in_use)
			continue;
		if (db->pid == 0 && handles[i] == NULL &&
			(db->state == CQ_DB_RUNNING || db->state == CQ_DB_STARTING))
		{
			/* died, or never came up: try again soon */
			db->state = CQ_DB_UNKNOWN;
			db->restart_at = now + CRASH_RESTART_DELAY_MS * (int64) 1000;
		}
		if (db->state == CQ_DB_ABSENT && db->pid == 0 && handles[i] == NULL)
		{
			absent_dbs = lappend_oid(absent_dbs, db->dboid);
			db->in_use = false;
			continue;
		}
		if (db->state != CQ_DB_UNKNOWN || handles[i] != NULL)
			continue;
		if (now < db->restart_at || now < db->blocked_until)
		{
			TimestampTz t = Max(db->restart_at, db->blocked_until);

			if (next == 0 || t < next)
				next = t;
			continue;
		}
		db->state = CQ_DB_STARTING;
		to_start[nstart++] = i;
	}
	LWLockRelease(cq_shared->lock);

	for (int k = 0; k < nstart; k++)
	{
		int			i = to_start[k];
		Oid			dboid = cq_shared->dbs[i].dboid;

		handles[i] = start_scheduler(dboid);
		if (handles[i] == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("pg_cq could not start the scheduler of database %u", dboid),
					 errhint("Raise max_worker_processes.")));
			LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
			cq_shared->dbs[i].state = CQ_DB_UNKNOWN;
			cq_shared->dbs[i].restart_at = now + cq_naptime_ms * (int64) 1000;
			LWLockRelease(cq_shared->lock);
			if (next == 0 || cq_shared->dbs[i].restart_at < next)
				next = cq_shared->dbs[i].restart_at;
		}
	}
	pfree(to_start);
	pfree(stopped);
	if (next == 0)
		return -1;
	return Max(0, (long) ((next - now) / 1000) + 1);
}

/*
 * cq_launcher_main
 *	  Entry point of the launcher.
 */
void
cq_launcher_main(Datum arg)
{
	TimestampTz next_scan = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	handles = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(BackgroundWorkerHandle *) * cq_shared->ndbs);

	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	cq_shared->launcher_pid = MyProcPid;
	cq_shared->launcher_latch = MyLatch;
	/* schedulers started by a previous launcher keep running; lost starts are retried */
	for (int i = 0; i < cq_shared->ndbs; i++)
		if (cq_shared->dbs[i].in_use && cq_shared->dbs[i].pid == 0 &&
			cq_shared->dbs[i].state == CQ_DB_STARTING)
			cq_shared->dbs[i].state = CQ_DB_UNKNOWN;
	LWLockRelease(cq_shared->lock);
	before_shmem_exit(launcher_exit, (Datum) 0);

	for (;;)
	{
		TimestampTz now;
		long		timeout;
		long		due;
		bool		rescan;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (catchupInterruptPending)
			cq_inval_catch_up("launcher");

		now = GetCurrentTimestamp();
		LWLockAcquire(cq_shared->lock, LW_SHARED);
		rescan = cq_shared->rescan;
		LWLockRelease(cq_shared->lock);
		if (rescan || now >= next_scan)
		{
			scan_databases();
			next_scan = now + cq_naptime_ms * (int64) 1000;
		}
		drain_requests();
		due = manage_schedulers();

		timeout = (long) ((next_scan - GetCurrentTimestamp()) / 1000) + 1;
		if (due >= 0 && due < timeout)
			timeout = due;
		pgstat_report_activity(STATE_IDLE, NULL);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * cq_launcher_stop_database
 *	  Make a database free of pg_cq processes for DROP DATABASE and the
 *	  like: block its slot (no scheduler starts for a minute, or until
 *	  cq_launcher_unblock_database), terminate its scheduler and workers,
 *	  wait up to 10 s for them to exit.  Runs in the backend executing the
 *	  DDL.
 */
void
cq_launcher_stop_database(Oid dboid)
{
	TimestampTz deadline = GetCurrentTimestamp() + DB_STOP_WAIT_MS * (int64) 1000;

	if (cq_shared == NULL || !OidIsValid(dboid))
		return;

	for (;;)
	{
		pid_t	   *pids = palloc(sizeof(pid_t) * (cq_shared->nworkers + 1));
		int			npids = 0;
		CqDbSlot   *db;

		LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
		db = cq_shmem_find_db(dboid);
		if (db == NULL && (db = cq_shmem_get_db(dboid)) != NULL)
			db->state = CQ_DB_ABSENT;	/* never probed (e.g. template0): keep it so */
		if (db)
		{
			db->blocked_until = GetCurrentTimestamp() + DB_BLOCK_MS * (int64) 1000;
			if (db->pid != 0)
				pids[npids++] = db->pid;
		}
		for (int i = 0; i < cq_shared->nworkers; i++)
		{
			CqWorkerSlot *w = &cq_shared->workers[i];

			if (w->in_use && w->dboid == dboid && w->pid != 0)
				pids[npids++] = w->pid;
		}
		LWLockRelease(cq_shared->lock);

		if (npids == 0 || GetCurrentTimestamp() >= deadline)
		{
			pfree(pids);
			return;
		}
		for (int i = 0; i < npids; i++)
			(void) kill(pids[i], SIGTERM);
		pfree(pids);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * cq_launcher_unblock_database
 *	  The DDL that needed the database is over (or failed): its scheduler
 *	  may start again at once.
 */
void
cq_launcher_unblock_database(Oid dboid)
{
	CqDbSlot   *db;
	Latch	   *latch = NULL;

	if (cq_shared == NULL || !OidIsValid(dboid))
		return;
	LWLockAcquire(cq_shared->lock, LW_EXCLUSIVE);
	db = cq_shmem_find_db(dboid);
	if (db)
	{
		db->blocked_until = 0;
		db->restart_at = 0;
		latch = cq_shared->launcher_latch;
	}
	LWLockRelease(cq_shared->lock);
	if (latch)
		SetLatch(latch);
}

/*
 * has_createdb_privilege
 *	  Does the current user have CREATEDB (or superuser)?  Core's own test,
 *	  which dbcommands.c keeps static.
 */
static bool
has_createdb_privilege(void)
{
	HeapTuple	tup;
	bool		result = false;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * is_template
 *	  pg_database.datistemplate of a database.
 */
static bool
is_template(Oid dboid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * cq_launcher_ddl_database
 *	  The database a utility statement needs to itself (DROP DATABASE,
 *	  CREATE DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME), or
 *	  InvalidOid.  *dropping is set for DROP DATABASE.
 *
 *	  InvalidOid also when the current user may not run the statement on
 *	  that database by core's rules, checked here first: otherwise any role
 *	  could stop a database's scheduler and workers with a statement that
 *	  is bound to fail.  DROP and RENAME need the database's ownership
 *	  (RENAME also CREATEDB); copying a database needs CREATEDB and either a
 *	  template or its ownership.  (Superusers pass every test.)  Core then
 *	  refuses the statement with its own error.
 */
Oid
cq_launcher_ddl_database(Node *stmt, bool *dropping)
{
	Oid			dboid = InvalidOid;

	*dropping = false;
	if (IsA(stmt, DropdbStmt))
	{
		*dropping = true;
		dboid = get_database_oid(((DropdbStmt *) stmt)->dbname, true);
		if (OidIsValid(dboid) && !pg_database_ownercheck(dboid, GetUserId()))
			dboid = InvalidOid;
	}
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *def = lfirst(lc);

			if (strcmp(def->defname, "template") == 0 && def->arg != NULL)
				dboid = get_database_oid(defGetString(def), true);
		}
		if (OidIsValid(dboid) &&
			(!has_createdb_privilege() ||
			 (!is_template(dboid) && !pg_database_ownercheck(dboid, GetUserId()))))
			dboid = InvalidOid;
	}
	else if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
	{
		dboid = get_database_oid(((RenameStmt *) stmt)->subname, true);
		if (OidIsValid(dboid) &&
			(!pg_database_ownercheck(dboid, GetUserId()) || !has_createdb_privilege()))
			dboid = InvalidOid;
	}
	return dboid;
}
