/*-------------------------------------------------------------------------
 *
 * batch_guard.c
 *	  No batch of a query inside one of its own batches.
 *
 * A batch runs user code: triggers and rules on its target, the functions
 * its query calls.  Such code may call cq.run: for another query that is a
 * batch like any other, but for the query whose batch is running it would
 * run that batch again inside itself, reading the same rows a second time
 * (before session 42 the outer batch then failed on the key of the offset
 * the inner one had recorded, or, when the inner batch fired the same code
 * again, the recursion ended in an internal error).  So a batch of a query
 * already running one in this process is refused.
 *
 * The queries whose batch runs here are a list in TopMemoryContext,
 * innermost last; an error unwinds it (PG_FINALLY), whoever catches it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "batch_guard.h"

static List *running_batches = NIL;

/*
 * cq_batch_guard_run
 *	  body(q, last_in, flags, res), unless a batch of q runs in this
 *	  process already: then an error (55006, object in use).
 */
void
cq_batch_guard_run(CqQuery *q, CqBatchBody body, const CqLastOffset *last_in, int flags,
				   CqBatchResult *res)
{
	MemoryContext old;

	if (list_member_int(running_batches, q->id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot run a batch of continuous query \"%s\" inside one of its own batches",
						q->name),
				 errdetail("A trigger, rule or function that its batch runs called cq.run for the same query."),
				 errhint("Run the query after its batch, not from code its batch runs.")));
	old = MemoryContextSwitchTo(TopMemoryContext);
	running_batches = lappend_int(running_batches, q->id);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		body(q, last_in, flags, res);
	}
	PG_FINALLY();
	{
		running_batches = list_delete_last(running_batches);
	}
	PG_END_TRY();
}
