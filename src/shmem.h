/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Shared state of the background machinery (see shmem.c for which lock
 *	  guards which field).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SHMEM_H
#define CQ_SHMEM_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/nodes.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm_impl.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/dsa.h"

/* What cq.status says about a query (Spark's status messages). */
typedef enum CqMessage
{
	CQ_MSG_STOPPED = 0,			/* "Stopped": paused, failed, available_now */
	CQ_MSG_WAITING_DATA,		/* "Waiting for data to arrive" */
	CQ_MSG_PROCESSING,			/* "Processing new data" */
	CQ_MSG_WAITING_TRIGGER,		/* "Waiting for next trigger" */
	CQ_MSG_CLEANUP,				/* "No new data but cleaning up state" */
	CQ_MSG_INITIALIZING			/* "Initializing sources" */
} CqMessage;

/* Life cycle of a database's scheduler, as the launcher sees it. */
typedef enum CqDbState
{
	CQ_DB_UNKNOWN = 0,			/* probe it: start a scheduler */
	CQ_DB_STARTING,				/* scheduler registered, not yet running */
	CQ_DB_RUNNING,				/* scheduler running (pid set) */
	CQ_DB_ABSENT				/* pg_cq not installed there: wait for a request */
} CqDbState;

/* One database that may run continuous queries. */
typedef struct CqDbSlot
{
	bool		in_use;
	Oid			dboid;
	CqDbState	state;
	pid_t		pid;			/* scheduler, 0 if none */
	Latch	   *latch;			/* scheduler's latch, NULL if none */
	uint32		catalog_gen;	/* bumped when cq.queries changed */
	TimestampTz blocked_until;	/* no scheduler before (DROP/CREATE DATABASE) */
	TimestampTz restart_at;		/* launcher: earliest restart after a crash */
	bool		call_wanted;	/* a CALL cq.run found no idle worker: start
								 * one for the next call (handoff.c) */
	int32		call_wanted_query;	/* a call of this query ran in-process for
									 * want of a worker: one warms up for it
									 * (warm.c) */
} CqDbSlot;

/* Most batches a worker is given at once (scheduler.c, "groups"). */
#define CQ_WORKER_GROUP_MAX 16

/*
 * One long-lived worker of a scheduler.  The slot is free again (in_use =
 * false) once both are done with it: the scheduler frees it when it sees
 * its worker gone; a scheduler that exits frees the slots of workers that
 * are not running and orphans the others, which free their slot when they
 * exit.  A worker started for an older claim of the slot (its generation)
 * does not take it.
 */
typedef struct CqWorkerSlot
{
	bool		in_use;			/* claimed by a scheduler */
	uint32		generation;		/* bumped by every claim */
	bool		orphaned;		/* its scheduler exited: the worker frees it */
	Oid			dboid;
	pid_t		pid;			/* 0 until the worker has started */
	Latch	   *latch;
	bool		stop;			/* scheduler asks the worker to exit */
	bool		busy;			/* a group is assigned and not finished */
	bool		yield;			/* scheduler: due queries wait for a worker,
								 * end the visit after the round */
	int32		query_id;		/* first query of the group, 0 = none assigned */
	/*
	 * The group: due queries of one source, each run as a batch (one
	 * transaction) in turn in one visit of the worker, so the scheduler and
	 * the worker exchange latches once per group, not once per batch.
	 */
	int			nqueries;
	int32		query_ids[CQ_WORKER_GROUP_MAX];
	char		query_names[CQ_WORKER_GROUP_MAX][NAMEDATALEN];
	bool		rerun_ok[CQ_WORKER_GROUP_MAX];	/* trigger '0': the worker may run
												 * it again in the same visit */
	CqMessage	idle_msg[CQ_WORKER_GROUP_MAX];	/* cq.status's message once its
												 * batch is over */
	/* outcome per query, written by the worker as each batch ends */
	bool		done[CQ_WORKER_GROUP_MAX];	/* its batch is over (outcome below) */
	bool		collected[CQ_WORKER_GROUP_MAX]; /* the scheduler took the outcome;
												 * set before the batch is done:
												 * taken back for an idle
												 * worker (not started) */
	bool		started[CQ_WORKER_GROUP_MAX];	/* the worker began its batch (it
												 * can no longer be taken back) */
	bool		ran[CQ_WORKER_GROUP_MAX];	/* a batch was committed */
	bool		failed[CQ_WORKER_GROUP_MAX];	/* the batch failed (recorded in the
												 * catalog) */
	bool		more[CQ_WORKER_GROUP_MAX];	/* a row limit ended the batch early */
	TimestampTz ended[CQ_WORKER_GROUP_MAX]; /* when the batch ended */
	int64		cpu_us[CQ_WORKER_GROUP_MAX];	/* and the CPU time it took (the
												 * trigger '0' hold, scheduler.c) */
	int64		rows[CQ_WORKER_GROUP_MAX];	/* and the rows it read (same) */

	/*
	 * A CALL cq.run handed to this worker (handoff.c): the caller claims an
	 * idle worker (no group, not busy) by setting call_pid, then posts its
	 * request (call_dsm); the worker clears both when done.  The scheduler
	 * assigns no group to a worker with a call.
	 */
	pid_t		call_pid;		/* caller, 0 = none */
	Latch	   *call_latch;		/* the caller's latch */
	dsm_handle	call_dsm;		/* the request, DSM_HANDLE_INVALID until posted */
	int32		call_last_query;	/* query of its last call (the caller's choice) */
	uint32		call_last_key;	/* and its name's key (cq_handoff_name_key), for a
								 * call by name; 0 = none */
	int32		warm_query;		/* scheduler: warm up for this query while
								 * idle (warm.c), 0 = none */
} CqWorkerSlot;

/* Live status of one query (cq.status). */
typedef struct CqQuerySlot
{
	bool		in_use;
	Oid			dboid;
	int32		query_id;
	Oid			source;			/* tracked source, for commit wake-ups */
	bool		pending;		/* a commit to the source is not processed yet */
	TimestampTz pending_since;	/* commit time of the commit that set pending
								 * (the oldest one the query has not seen:
								 * the scheduler serves the longest-waiting
								 * query first) */
	bool		wake_on_commit; /* commits to the source mark it pending and
								 * wake the scheduler (trigger '0' and
								 * interval queries; not available_now) */
	CqMessage	message;
	bool		is_data_available;
	bool		is_trigger_active;	/* a worker has it (assigned until the
									 * scheduler took the outcome) */
	bool		batch_over;		/* ... but its batch is over: the worker holds
								 * it for a rerun (a trigger '0' hold) or
								 * runs the rest of its group; cq.status
								 * shows it idle */
	pid_t		worker_pid;
	int64		last_batch_id;	/* -1: none */
	bool		has_watermark;
	TimestampTz watermark;
} CqQuerySlot;

#define CQ_LAUNCHER_REQUESTS 16

/* Everything in the segment. */
typedef struct CqShared
{
	LWLock	   *lock;			/* guards every field below */
	pid_t		launcher_pid;
	Latch	   *launcher_latch;
	int			nrequests;		/* databases whose scheduler is wanted now */
	Oid			requests[CQ_LAUNCHER_REQUESTS];
	bool		rescan;			/* requests overflowed: rescan everything */
	int			ndbs;
	int			nworkers;
	int			nqueries;
	int			queries_used;	/* no query slot at or above is in_use: the
								 * bound of every scan of queries, kept by
								 * cq_shmem_queries_changed() */
	pg_atomic_uint32 wake_slots;	/* slots in use with wake_on_commit, also
									 * kept by cq_shmem_queries_changed(); read
									 * without the lock by committing writers
									 * (wakeup.c) */
	CqDbSlot   *dbs;
	CqWorkerSlot *workers;
	CqQuerySlot *queries;
	/* the shared-memory state store (store.c), guarded by store_lock */
	LWLock	   *store_lock;
	bool		store_ready;	/* store_area and store_dir are set */
	dsa_handle	store_area;
	dsa_pointer store_dir;		/* dshash_table_handle of its directory */
	int			store_tranche;	/* LWLock tranche of its hash tables */
	ConditionVariable store_cv; /* broadcast when a store's inflight is cleared */
} CqShared;

extern CqShared *cq_shared;

extern void cq_shmem_init(void);
extern CqDbSlot *cq_shmem_find_db(Oid dboid);
extern CqDbSlot *cq_shmem_get_db(Oid dboid);
extern CqQuerySlot *cq_shmem_find_query(Oid dboid, int32 query_id);
extern void cq_shmem_queries_changed(void);
extern void cq_shmem_request_scheduler(Oid dboid);
extern const char *cq_shmem_message_text(CqMessage msg);

#endif							/* CQ_SHMEM_H */
