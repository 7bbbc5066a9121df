/*-------------------------------------------------------------------------
 *
 * copy_xid.c
 *	  The cq_xid default of a running COPY FROM, pg_current_xact_id(),
 *	  evaluated as the transaction's id without the function call, from
 *	  the COPY's first flush of rows into a tracked table on.
 *
 * COPY FROM computes the defaults of the columns its input leaves out for
 * every row (NextCopyFrom), each through its own ExprState: for cq_xid, an
 * interpreted function call, pg_current_xact_id(), which refuses to run
 * during recovery and returns the top-level transaction's id, assigning
 * one if there is none.  Of the ~460 instructions a row that tracking
 * adds to a COPY, that call was ~100 (session 34, callgrind): the
 * interpreter's run of a FUNCEXPR step, the recovery check, the call.
 *
 * Nothing in COPY offers a hook between building those ExprStates and
 * evaluating them; but its rows reach pg_cq's BRIN insert (brin_insert.c)
 * when COPY flushes its first buffer of rows (up to 1,000 rows or 64 kB),
 * and while it runs, COPY's error context callback, CopyFromErrorCallback,
 * is on error_context_stack with the COPY's state as its argument.  There
 * the ExprState of a default that is exactly pg_catalog.pg_current_xact_id()
 * (its expression is kept in the ExprState) gets an evalfunc of ours that
 * returns GetTopFullTransactionId(): the same value, for the rest of the
 * COPY's rows.
 *
 * Why the same: pg_current_xact_id() is the top-level transaction's id,
 * which does not change while the transaction runs (subtransactions have
 * ids of their own, which it does not return); the rows flushed already
 * made the transaction take one (their defaults, or their heap inserts),
 * so no id is assigned earlier than it would have been (an empty COPY
 * never gets here).  The recovery check cannot fail later in a COPY whose
 * rows have been inserted: recovery does not begin in a running primary,
 * and COPY FROM is refused on a standby before any row.  Only the
 * ExprState of the COPY whose callback is innermost on the stack is
 * changed: it belongs to that COPY (its memory goes with the COPY's), and
 * the change does not depend on which table the COPY loads, so a COPY
 * nested in user code that another COPY runs is handled alike.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "executor/execExpr.h"
#include "nodes/primnodes.h"
#include "utils/elog.h"
#include "utils/fmgroids.h"
#include "utils/xid8.h"

#include "copy_xid.h"

/*
 * copy_xid_eval
 *	  evalfunc of a COPY's pg_current_xact_id() default, once the
 *	  transaction has its id: that id.
 */
static Datum
copy_xid_eval(ExprState *state, ExprContext *econtext, bool *isnull)
{
	*isnull = false;
	return FullTransactionIdGetDatum(GetTopFullTransactionId());
}

/*
 * is_current_xact_id
 *	  Is the expression exactly pg_catalog.pg_current_xact_id()?
 */
static bool
is_current_xact_id(Expr *expr)
{
	return expr != NULL && IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcid == F_PG_CURRENT_XACT_ID &&
		((FuncExpr *) expr)->args == NIL;
}

/*
 * cq_copy_xid_default
 *	  Called by a COPY's first row into a tracked table's BRIN index: the
 *	  running COPY's pg_current_xact_id() default, if any, is evaluated by
 *	  copy_xid_eval from now on (only once the transaction has an id).
 */
void
cq_copy_xid_default(void)
{
#if PG_VERSION_NUM < 160000
	ErrorContextCallback *ec;
	CopyFromState cstate = NULL;

	if (!FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
		return;
	for (ec = error_context_stack; ec != NULL; ec = ec->previous)
	{
		if (ec->callback == CopyFromErrorCallback)
		{
			cstate = (CopyFromState) ec->arg;
			break;
		}
	}
	if (cstate == NULL)
		return;
	/* PostgreSQL 15: defexprs[i] is the default of column defmap[i] */
	for (int i = 0; i < cstate->num_defaults; i++)
	{
		ExprState  *state = cstate->defexprs[i];

		if (state != NULL && state->evalfunc != copy_xid_eval && is_current_xact_id(state->expr))
			state->evalfunc = copy_xid_eval;
	}
#endif
}
