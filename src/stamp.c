/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  The write path of a tracked source: statements that leave cq_xid to
 *	  its default skip the stamp row trigger, rows go into the BRIN index on
 *	  cq_xid through brin_insert.c (installed here: an INSERT's indexes are
 *	  opened at its ExecutorStart, a single-row INSERT's sole index with an
 *	  IndexInfo made once, open_sole_index; a single-row INSERT's row is
 *	  checked at the statement's ExecutorFinish, defer_row), and
 *	  the stamp trigger cannot be dropped or disabled while queries read the
 *	  table.
 *
 * The row trigger zz_cq_stamp only compares when the column's default
 * stamped the row: the statement did not give cq_xid a value and the default
 * is pg_current_xact_id().  Yet a BEFORE ... FOR EACH ROW INSERT trigger
 * costs a call per row, and makes COPY insert row by row instead of in
 * batches.  When a statement is known to leave cq_xid to that default, the
 * trigger is kept out of its insert path: the table's TriggerDesc in the
 * relation cache is swapped, while the executor (or COPY) builds the
 * statement's ResultRelInfo, for a copy without trig_insert_before_row.
 * The trigger stays in the catalog and fires for everything else: other
 * statements, UPDATE and DELETE, partitions (routing builds their
 * ResultRelInfo later), logical replication apply.
 *
 * INSERT: the swap lasts ExecutorStart, which runs no user code.  COPY:
 * it lasts the whole COPY (CopyFrom builds its ResultRelInfo at the start
 * and offers no hook); user code that COPY runs (other columns' defaults,
 * CHECK constraints, AFTER triggers) and writes to the same table starts
 * a statement of its own, whose ExecutorStart or ProcessUtility puts the
 * real TriggerDesc back while it builds its ResultRelInfo (nested_begin).
 * A COPY's swap also puts a Const in the place of cq_xid's default
 * (copy_const_begin) and, when the table's only index is the BRIN index on
 * cq_xid, hides it from the COPY's ResultRelInfo while brin_heap.c gives
 * the rows to it from the table's access method (copy_gate_begin); a
 * multi-row INSERT into such a table does the latter too (brin_swap_insert,
 * cq_brin_heap_insert).
 *
 * What a table's statements may skip is decided once and kept until the
 * relation cache invalidates the table (trigger, default or column changes
 * all do): fast_tables, keyed by OID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/xid8.h"

#include "stamp.h"
#include "stamp_type.h"
#include "brin_insert.h"
#include "brin_heap.h"
#include "citus.h"
#include "tracking.h"
#include "wakeup.h"
#include "inval.h"

typedef struct FastTable
{
	Oid			relid;			/* hash key */
	bool		fast;			/* stamp_fast_table() */
	AttrNumber	att;			/* cq_xid */
	Oid			type;			/* its type: xid8 or cq.xid48 */
	Oid			default_func;	/* its default's function (canonical_default) */
	bool		wakeup;			/* cq_wakeup goes too (wakeup_only) */
	char		wakeup_enabled; /* its tgenabled */
	TriggerDesc *made_from;		/* rel->trigdesc the copy was made from */
	TriggerDesc *copy;			/* what a swap puts in rel->trigdesc */
	bool		in_use;			/* swapped in now */
	bool		stale;			/* invalidated while swapped in */
	bool		index_known;	/* index is set (open_sole_index) */
	Oid			index;			/* the table's only index, or InvalidOid */
	IndexInfo  *index_info;		/* BuildIndexInfo's of it, when plain */
	Relation	rel;			/* the table's relation cache entry... */
	uint64		rel_count;		/* ...while fast_tables_inval_count is this */
} FastTable;

/* a swap in progress */
typedef struct StampSwap
{
	Relation	rel;			/* the table, kept open */
	FastTable  *entry;			/* its fast_tables entry */
	TriggerDesc *real;			/* its TriggerDesc, held by us while swapped */
	TriggerDesc *fast;			/* entry->copy, in rel->trigdesc while swapped */
	AttrDefault *def;			/* a COPY's: cq_xid's default in rel->rd_att, whose... */
	char	   *real_adbin;		/* ...expression is held here while... */
	char	   *const_adbin;	/* ...this one, a Const, is there (copy_const_begin) */
	bool		trig_suspended; /* nested_begin put the real TriggerDesc back */
	bool		def_suspended;	/* nested_begin put the real default back */
	CqBrinHeap *gate;			/* a COPY's rows meet the index in the heap... */
	bool		index_suspended;	/* ...and relhasindex is false, unless this */
} StampSwap;

static HTAB *fast_tables = NULL;

/*
 * bumped by every invalidation of fast_tables and every entry removed: while
 * it stays the same, an entry found before is still there
 */
static uint64 fast_tables_inval_count = 0;

/* the entry an INSERT's ExecutorStart found last (fast_table_find) */
static Oid	found_relid = InvalidOid;
static FastTable *found_entry = NULL;
static uint64 found_count = 0;

/* the swap in progress (of an INSERT's ExecutorStart or of a COPY), if any */
static StampSwap *active_swap = NULL;

/* cq.stamp() and cq.wakeup(), looked up again after any change of pg_proc */
static Oid	stamp_func = InvalidOid;
static Oid	wakeup_func = InvalidOid;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * pg_cq_function
 *	  cq.stamp() or cq.wakeup(), cached.
 */
static Oid
pg_cq_function(bool stamp)
{
	if (!OidIsValid(stamp ? stamp_func : wakeup_func))
	{
		stamp_func = cq_tracking_trigger_function("stamp");
		wakeup_func = cq_tracking_trigger_function("wakeup");
	}
	return stamp ? stamp_func : wakeup_func;
}

/*
 * canonical_default
 *	  Is column att's default exactly a call without arguments of func,
 *	  pg_catalog.pg_current_xact_id() (xid8) or cq.current_xid48()
 *	  (cq.xid48)?  The stored expression (adbin) seen canonical last for
 *	  each type is kept, so that the check is a string comparison, not a
 *	  parse.
 */
static bool
canonical_default(Relation rel, AttrNumber att, Oid func)
{
	static char *canonicals[2] = {NULL, NULL};
	char	  **cp = &canonicals[func == F_PG_CURRENT_XACT_ID ? 0 : 1];
	char	   *canonical = *cp;
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	if (constr == NULL)
		return false;
	for (int i = 0; i < constr->num_defval; i++)
	{
		if (constr->defval[i].adnum == att)
		{
			const char *adbin = constr->defval[i].adbin;
			Node	   *expr;

			if (canonical != NULL && strcmp(adbin, canonical) == 0)
				return true;
			expr = stringToNode(adbin);
			if (!OidIsValid(func) || !IsA(expr, FuncExpr) || ((FuncExpr *) expr)->funcid != func ||
				((FuncExpr *) expr)->args != NIL)
				return false;
			if (canonical != NULL)
				pfree(canonical);
			*cp = MemoryContextStrdup(TopMemoryContext, adbin);
			return true;
		}
	}
	return false;
}

/*
 * stamp_is_only_before_insert
 *	  Is zz_cq_stamp, calling cq.stamp(), the table's only BEFORE ... FOR
 *	  EACH ROW INSERT trigger?  Any other could set cq_xid, and zz_cq_stamp,
 *	  firing last, would have to restamp.
 */
static bool
stamp_is_only_before_insert(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;
	Oid			func = InvalidOid;

	if (td == NULL || !td->trig_insert_before_row || td->trig_insert_instead_row)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (!TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_ROW, TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_INSERT))
			continue;
		if (OidIsValid(func) || strcmp(t->tgname, CQ_STAMP_TRIGGER) != 0)
			return false;
		func = t->tgfoid;
	}
	return OidIsValid(func) && func == pg_cq_function(true);
}

/*
 * stamp_fast_table
 *	  May statements that leave cq_xid to its default skip the stamp trigger
 *	  of this table?  A plain table (not a partition: routing reads the
 *	  relation cache later) whose only BEFORE ROW INSERT trigger is
 *	  zz_cq_stamp and whose cq_xid default is pg_current_xact_id() (an
 *	  xid8 column) or cq.current_xid48() (a cq.xid48 one).  Sets the entry's
 *	  att (cq_xid's attribute number), type and default_func.
 */
static bool
stamp_fast_table(Relation rel, FastTable *e)
{
	TupleDesc	desc = RelationGetDescr(rel);

	e->att = InvalidAttrNumber;
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		!stamp_is_only_before_insert(rel))
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN) == 0 &&
			cq_stamp_type_ok(a->atttypid))
		{
			e->att = a->attnum;
			e->type = a->atttypid;
		}
	}
	if (e->att == InvalidAttrNumber)
		return false;
	e->default_func = e->type == XID8OID ? F_PG_CURRENT_XACT_ID : cq_stamp_current_xid48_function();
	return canonical_default(rel, e->att, e->default_func);
}

/*
 * wakeup_only
 *	  Is cq_wakeup, calling cq.wakeup(), the table's only AFTER INSERT ...
 *	  FOR EACH STATEMENT trigger, without a WHEN condition?  Sets *enabled
 *	  to its tgenabled.
 */
static bool
wakeup_only(TriggerDesc *td, char *enabled)
{
	Trigger    *found = NULL;

	if (!td->trig_insert_after_statement || td->trig_insert_new_table)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		Trigger    *t = &td->triggers[i];

		if (!TRIGGER_TYPE_MATCHES(t->tgtype, TRIGGER_TYPE_STATEMENT, TRIGGER_TYPE_AFTER, TRIGGER_TYPE_INSERT))
			continue;
		if (found != NULL)
			return false;
		found = t;
	}
	if (found == NULL || found->tgqual != NULL || found->tgfoid != pg_cq_function(false))
		return false;
	*enabled = found->tgenabled;
	return true;
}

/*
 * drop_fast_table
 *	  Forget an entry of fast_tables (later, if it is swapped in now).
 */
static void
drop_fast_table(FastTable *e)
{
	Oid			relid = e->relid;

	if (e->in_use)
	{
		e->stale = true;
		return;
	}
	if (e->copy != NULL)
		FreeTriggerDesc(e->copy);
	if (e->index_info != NULL)
		pfree(e->index_info);
	hash_search(fast_tables, &relid, HASH_REMOVE, NULL);
	fast_tables_inval_count++;
}

/*
 * fast_tables_inval
 *	  Relation cache invalidation callback: forget the table (or all), or
 *	  the table whose only index it is (open_sole_index).
 */
static void
fast_tables_inval(Datum arg, Oid relid)
{
	FastTable  *e = NULL;
	HASH_SEQ_STATUS status;

	fast_tables_inval_count++;
	if (fast_tables == NULL)
		return;
	if (OidIsValid(relid) && (e = hash_search(fast_tables, &relid, HASH_FIND, NULL)) != NULL)
	{
		drop_fast_table(e);
		return;
	}
	hash_seq_init(&status, fast_tables);
	while ((e = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || (e->index_known && e->index == relid))
			drop_fast_table(e);
}

/*
 * functions_inval
 *	  pg_proc changed: look cq.stamp() and cq.wakeup() up again, and decide
 *	  again for every table.
 */
static void
functions_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	stamp_func = wakeup_func = InvalidOid;
	fast_tables_inval(arg, InvalidOid);
}

/*
 * fast_table_find
 *	  The fast_tables entry of a table, or NULL: the one found last without
 *	  a hash look-up, while no invalidation came and no entry went since
 *	  (the common case: statement after statement into one table).
 */
static inline FastTable *
fast_table_find(Oid relid)
{
	FastTable  *e;

	if (relid == found_relid && found_count == fast_tables_inval_count)
		return found_entry;
	if (fast_tables == NULL)
		return NULL;
	e = hash_search(fast_tables, &relid, HASH_FIND, NULL);
	if (e != NULL)
	{
		found_relid = relid;
		found_entry = e;
		found_count = fast_tables_inval_count;
	}
	return e;
}

/*
 * fast_table
 *	  The fast_tables entry of an open table, made if missing; NULL while
 *	  the entry is swapped in.
 */
static FastTable *
fast_table(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	FastTable  *e;
	bool		found;

	if (fast_tables == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(FastTable);
		fast_tables = hash_create("pg_cq fast tables", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	e = hash_search(fast_tables, &relid, HASH_ENTER, &found);
	if (found)
	{
		if (e->in_use)
			return NULL;
		if (!e->fast || e->made_from == rel->trigdesc)
			return e;
		if (e->copy != NULL)
			FreeTriggerDesc(e->copy);
	}

	/*
	 * Catalog look-ups below may process invalidations: in_use keeps the
	 * callback from removing the entry meanwhile (it marks it stale).
	 */
	e->in_use = true;
	e->stale = e->fast = e->wakeup = e->index_known = false;
	e->index = InvalidOid;
	e->index_info = NULL;
	e->rel = NULL;
	e->copy = NULL;
	e->made_from = rel->trigdesc;
	PG_TRY();
	{
		e->fast = stamp_fast_table(rel, e);
		if (e->fast)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			e->copy = CopyTriggerDesc(rel->trigdesc);
			MemoryContextSwitchTo(old);
			e->copy->trig_insert_before_row = false;
			e->wakeup = wakeup_only(e->copy, &e->wakeup_enabled);
			if (e->wakeup)
				e->copy->trig_insert_after_statement = false;
			if (!e->copy->trig_insert_after_row && !e->copy->trig_insert_instead_row &&
				!e->copy->trig_insert_before_statement && !e->copy->trig_insert_after_statement &&
				!e->copy->trig_insert_new_table)
			{
				/*
				 * Nothing left that an INSERT or COPY fires: a copy without
				 * triggers, which gives the statement's ResultRelInfo none
				 * (CopyTriggerDesc), so it does not copy the table's
				 * triggers for nothing.  (ON CONFLICT, which could fire
				 * UPDATE triggers, never takes the fast path.)
				 */
				FreeTriggerDesc(e->copy);
				e->copy = MemoryContextAllocZero(TopMemoryContext, sizeof(TriggerDesc));
				e->copy->triggers = MemoryContextAllocZero(TopMemoryContext, sizeof(Trigger));
			}
		}
	}
	PG_CATCH();
	{
		e->in_use = false;
		drop_fast_table(e);
		PG_RE_THROW();
	}
	PG_END_TRY();
	e->in_use = false;
	if (e->stale)
	{
		drop_fast_table(e);
		return NULL;
	}
	return e;
}

/*
 * swap_begin
 *	  Put the entry's copy of rel's TriggerDesc (without
 *	  trig_insert_before_row) in the relation cache.  When cq_wakeup is the
 *	  table's only AFTER INSERT statement trigger the copy goes without it
 *	  too (the after-trigger queue costs a single-row INSERT more than the
 *	  rest of what tracking adds but the index): the table is noted for the
 *	  wake-up at commit here, if the trigger would fire in this session, as
 *	  it would when the statement ends (if the statement fails, its
 *	  transaction or subtransaction rolls back: at worst a query is woken
 *	  for nothing).
 */
static void
swap_begin(StampSwap *swap, Relation rel, FastTable *e)
{
	swap->rel = rel;
	swap->entry = e;
	swap->real = rel->trigdesc;
	swap->fast = e->copy;
	e->in_use = true;
	if (e->wakeup &&
		(e->wakeup_enabled == TRIGGER_FIRES_ALWAYS ||
		 (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA ?
		  e->wakeup_enabled == TRIGGER_FIRES_ON_REPLICA :
		  e->wakeup_enabled == TRIGGER_FIRES_ON_ORIGIN)))
		cq_wakeup_note_source(RelationGetRelid(rel));
	rel->trigdesc = swap->fast;
}

/*
 * swap_end
 *	  Put the real TriggerDesc back.  If the relation cache rebuilt the
 *	  entry meanwhile, it either kept the copy (equal triggers: the real one
 *	  goes back) or installed a new TriggerDesc and freed the copy (then the
 *	  real one, ours, is freed).
 */
static void
swap_end(StampSwap *swap)
{
	FastTable  *e = swap->entry;

	if (swap->fast != NULL)
	{
		if (swap->rel->trigdesc == swap->fast)
			swap->rel->trigdesc = swap->real;
		else
		{
			FreeTriggerDesc(swap->real);
			e->copy = NULL;
			e->stale = true;
		}
	}
	swap->real = swap->fast = NULL;
	e->in_use = false;
	if (e->stale)
		drop_fast_table(e);
}

/*
 * copy_const_begin
 *	  A COPY's swap: the table's default of cq_xid, pg_current_xact_id(),
 *	  replaced by a Const of its value in the relation cache entry's
 *	  TupleDesc while the COPY runs, so that BeginCopyFrom, which reads the
 *	  default from there (build_column_default), evaluates a Const for
 *	  every row instead of the function call: about 75 instructions a row
 *	  (ExecInterpExpr's function call step, PreventCommandDuringRecovery,
 *	  RecoveryInProgress, GetTopFullTransactionId), a third of what the
 *	  tracked table cost a COPY above an untracked table with the same
 *	  column and a constant default.  The value is the one the call would
 *	  return, the top-level transaction's id, which does not change while
 *	  it runs; it is assigned here, before the first row instead of at it,
 *	  as an INSERT's is (xid_const_begin, which says why that is harmless;
 *	  may_stamp_early, the same conditions).  Nothing is written: the
 *	  catalog keeps pg_current_xact_id(), and copy_const_end puts the
 *	  expression back, on error too.  A statement that starts during the
 *	  COPY (user code it runs) gets the expression back meanwhile
 *	  (nested_begin), as it gets the real TriggerDesc; a statement parsed
 *	  during the COPY by such code (its rewriter reads defaults before any
 *	  hook of ours runs) may plan the Const, whose value is this
 *	  transaction's and is right in it, and in a later transaction is not
 *	  pg_current_xact_id() to the fast path (default_entry): the stamp
 *	  trigger fires and stamps its rows.  If the relation cache rebuilds the
 *	  entry during the COPY, the rebuilt TupleDesc differs from ours (the
 *	  default's text) and replaces it; ours, the COPY's, is kept until the
 *	  transaction ends (RelationDestroyRelation), and gets its expression
 *	  back too.
 */
static void
copy_const_begin(StampSwap *swap)
{
	TupleConstr *constr = RelationGetDescr(swap->rel)->constr;
	AttrDefault *def = NULL;
	Const	   *value;

	if (constr == NULL)
		return;
	for (int i = 0; i < constr->num_defval; i++)
		if (constr->defval[i].adnum == swap->entry->att)
			def = &constr->defval[i];
	if (def == NULL)
		return;
	if (swap->entry->type == XID8OID)
		value = makeConst(XID8OID, -1, InvalidOid, sizeof(FullTransactionId),
						  FullTransactionIdGetDatum(GetTopFullTransactionId()), false, FLOAT8PASSBYVAL);
	else
		value = makeConst(swap->entry->type, -1, InvalidOid, CQ_XID48_LEN,
						  PointerGetDatum(cq_stamp_current_bytes()), false, false);
	swap->const_adbin = nodeToString(value);
	swap->real_adbin = def->adbin;
	swap->def = def;
	def->adbin = swap->const_adbin;
}

/*
 * copy_const_end
 *	  Put cq_xid's default expression back (copy_const_begin).
 */
static void
copy_const_end(StampSwap *swap)
{
	if (swap->def == NULL)
		return;
	swap->def->adbin = swap->real_adbin;
	swap->def = NULL;
}

/*
 * sole_index
 *	  The only index of the table of a fast_tables entry, or InvalidOid.
 */
static Oid
sole_index(Relation rel, FastTable *e)
{
	if (!e->index_known)
	{
		List	   *indexes = RelationGetIndexList(rel);

		e->index = list_length(indexes) == 1 ? linitial_oid(indexes) : InvalidOid;
		e->index_known = true;
		list_free(indexes);
	}
	return e->index;
}

/*
 * copy_gate_begin
 *	  A COPY's swap: when the table's only index is the BRIN index on
 *	  cq_xid with the gate, its rows meet the index in the table's access
 *	  method (brin_heap.c says why and how), and the COPY's ResultRelInfo
 *	  gets no index: relhasindex false in the relation cache entry while the
 *	  COPY runs (only ExecOpenIndices and the planner of a statement that
 *	  user code plans meanwhile read it here; such a statement's executor
 *	  opens the indexes as before, nested_begin).
 */
static void
copy_gate_begin(StampSwap *swap)
{
	Oid			index = sole_index(swap->rel, swap->entry);

	if (!OidIsValid(index) || swap->entry->stale)
		return;
	swap->gate = cq_brin_heap_begin(swap->rel, index);
	if (swap->gate != NULL)
		swap->rel->rd_rel->relhasindex = false;
}

/*
 * copy_gate_end
 *	  End a COPY's gate (copy_gate_begin): rows is what the COPY reports it
 *	  inserted (checked against what the gate saw), or -1.
 */
static void
copy_gate_end(StampSwap *swap, int64 rows)
{
	CqBrinHeap *gate = swap->gate;

	if (gate == NULL)
		return;
	swap->gate = NULL;
	swap->rel->rd_rel->relhasindex = true;
	cq_brin_heap_end(gate, rows, false);
}

/*
 * nested_begin
 *	  A statement that starts while a swap is in progress (user code a COPY
 *	  runs, or SPI run by another module's ExecutorStart hook) gets the real
 *	  TriggerDesc while it builds its ResultRelInfos (and the real default,
 *	  copy_const_begin, and the table's indexes, copy_gate_begin), and
 *	  swaps nothing itself.  Returns the swap
 *	  suspended, or NULL.
 */
static StampSwap *
nested_begin(void)
{
	StampSwap  *swap = active_swap;

	if (swap == NULL)
		return NULL;
	if (swap->def != NULL && swap->def->adbin == swap->const_adbin)
	{
		swap->def->adbin = swap->real_adbin;
		swap->def_suspended = true;
	}
	if (swap->fast != NULL && swap->rel->trigdesc == swap->fast)
	{
		swap->rel->trigdesc = swap->real;
		swap->trig_suspended = true;
	}
	if (swap->gate != NULL && !swap->rel->rd_rel->relhasindex)
	{
		swap->rel->rd_rel->relhasindex = true;
		swap->index_suspended = true;
	}
	return swap->def_suspended || swap->trig_suspended || swap->index_suspended ? swap : NULL;
}

/*
 * nested_end
 *	  Resume the swap nested_begin suspended.  If the relation cache rebuilt
 *	  the entry with other triggers meanwhile (freeing the real TriggerDesc),
 *	  the swap is over.
 */
static void
nested_end(StampSwap *swap)
{
	if (swap == NULL)
		return;
	if (swap->def_suspended)
	{
		swap->def->adbin = swap->const_adbin;
		swap->def_suspended = false;
	}
	if (swap->index_suspended)
	{
		if (swap->gate != NULL)
			swap->rel->rd_rel->relhasindex = false;
		swap->index_suspended = false;
	}
	if (!swap->trig_suspended)
		return;
	swap->trig_suspended = false;
	if (swap->fast == NULL)
		return;
	if (swap->rel->trigdesc == swap->real)
		swap->rel->trigdesc = swap->fast;
	else
	{
		swap->entry->stale = true;
		swap->real = swap->fast = NULL;
	}
}

/*
 * insert_target
 *	  The table a plain INSERT (no ON CONFLICT, no data-modifying WITH)
 *	  writes, or InvalidOid; *sub is the plan computing its new rows.
 */
static Oid
insert_target(PlannedStmt *pstmt, Plan **sub)
{
	ModifyTable *mt;
	RangeTblEntry *rte;

	if (pstmt->commandType != CMD_INSERT || pstmt->hasModifyingCTE ||
		pstmt->planTree == NULL || !IsA(pstmt->planTree, ModifyTable))
		return InvalidOid;
	mt = (ModifyTable *) pstmt->planTree;
	if (mt->operation != CMD_INSERT || mt->onConflictAction != ONCONFLICT_NONE ||
		list_length(mt->resultRelations) != 1 || outerPlan(mt) == NULL)
		return InvalidOid;
	rte = rt_fetch(linitial_int(mt->resultRelations), pstmt->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION)
		return InvalidOid;
	*sub = outerPlan(mt);
	return rte->relid;
}

/*
 * default_entry
 *	  The entry of the new rows' column e->att, if it is the expression
 *	  pg_catalog.pg_current_xact_id() (cq.current_xid48() for a cq.xid48
 *	  column) itself (what the default puts there when the statement leaves
 *	  the column out), else NULL.
 */
static TargetEntry *
default_entry(Plan *sub, FastTable *e)
{
	ListCell   *lc;

	foreach(lc, sub->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resno == e->att)
			return !tle->resjunk && IsA(tle->expr, FuncExpr) &&
				((FuncExpr *) tle->expr)->funcid == e->default_func &&
				((FuncExpr *) tle->expr)->args == NIL ? tle : NULL;
	}
	return NULL;
}

/*
 * may_stamp_early
 *	  May the statement be started with cq_xid's pg_current_xact_id()
 *	  replaced by its value (xid_const_begin)?  In a transaction that may
 *	  write and is not in parallel mode.
 */
static inline bool
may_stamp_early(void)
{
	return !XactReadOnly && !IsInParallelMode();
}

/*
 * makes_one_row
 *	  Does the plan computing the new rows make exactly one row (a Result
 *	  without input or one-time filter: INSERT ... VALUES of one row)?
 *	  Then its row may wait for its index (defer_row).
 */
static inline bool
makes_one_row(Plan *sub)
{
	return IsA(sub, Result) && outerPlan(sub) == NULL && ((Result *) sub)->resconstantqual == NULL;
}

/*
 * xid_const_begin
 *	  Put a Const holding the top-level transaction's id in the place of
 *	  the entry's pg_current_xact_id() while the statement starts
 *	  (cq_stamp_ExecutorStart puts the expression back: the plan is the
 *	  plan cache's; the executor copies a Const's value into the projection
 *	  it builds).  Building the function call cost a single-row INSERT a
 *	  permission check and catalog look-ups (about 450 instructions more
 *	  than a Const), and its call again.  The value is the same:
 *	  pg_current_xact_id() is the top-level transaction's id, which does
 *	  not change while it runs.  The id is assigned here, before the rows
 *	  are computed instead of while the first one is: their first insert
 *	  would assign one anyway, unless the statement fails or makes no row
 *	  (its transaction, or only its subtransaction, then ends with an id
 *	  assigned, as when a later column or a constraint fails: a batch
 *	  waits for it as for any writer, and finds no row of it).  For an
 *	  INSERT of many rows (INSERT ... SELECT, multi-row VALUES) the call
 *	  was also evaluated for every row: about 75 instructions a row
 *	  (ExecInterpExpr's function call, PreventCommandDuringRecovery,
 *	  GetTopFullTransactionId), a fifth of what tracking added to a
 *	  1000-row INSERT.  XactReadOnly (may_stamp_early) excludes hot
 *	  standby, where pg_current_xact_id() is refused, and keeps a read-only
 *	  transaction from being given an id before its INSERT is refused.
 */
static Expr *
xid_const_begin(TargetEntry *tle, Const *value, Oid type)
{
	Expr	   *expr = tle->expr;

	memset(value, 0, sizeof(Const));
	value->xpr.type = T_Const;
	value->consttype = type;
	value->consttypmod = -1;
	value->constcollid = InvalidOid;
	if (type == XID8OID)
	{
		value->constlen = sizeof(FullTransactionId);
		value->constvalue = FullTransactionIdGetDatum(GetTopFullTransactionId());
		value->constbyval = FLOAT8PASSBYVAL;
	}
	else
	{
		/* cq.xid48: 6 bytes by reference, kept until the transaction ends */
		value->constlen = CQ_XID48_LEN;
		value->constvalue = PointerGetDatum(cq_stamp_current_bytes());
		value->constbyval = false;
	}
	value->location = -1;
	tle->expr = (Expr *) value;
	return expr;
}

/*
 * open_sole_index
 *	  ExecOpenIndices, for the table of a swap (a plain INSERT that leaves
 *	  cq_xid to its default) whose only index is the one its fast_tables
 *	  entry names (a tracked source's BRIN index on cq_xid, usually): the
 *	  index opened and locked the same way, without the list of the table's
 *	  indexes and, for an index on plain columns without a predicate, with
 *	  a copy of the IndexInfo that BuildIndexInfo made for the entry's
 *	  first statement (about 600 of the 2,100 instructions ExecOpenIndices
 *	  costs a single-row INSERT).  The entry goes with any invalidation of
 *	  the table or the index (fast_tables_inval): creating or dropping an
 *	  index, changing its pg_index row or options, all send one.  If one
 *	  came while the statement started, the list is taken again
 *	  (ExecOpenIndices: false), or, while the index's lock was taken, its
 *	  IndexInfo is made again, as ExecOpenIndices makes it after the lock.
 *	  In the statement's memory.
 */
static bool
open_sole_index(ResultRelInfo *rri, FastTable *e)
{
	struct
	{
		Relation	idx;
		IndexInfo  *iip;
		IndexInfo	ii;
	}		   *arrays;			/* the executor's arrays, and the copy: one palloc */
	Relation	idx;
	IndexInfo  *ii;

	if (e->stale || !OidIsValid(sole_index(rri->ri_RelationDesc, e)))
		return false;
	idx = index_open(e->index, RowExclusiveLock);
	arrays = palloc(sizeof(*arrays));
	if (e->index_info != NULL && !e->stale)
	{
		ii = &arrays->ii;
		memcpy(ii, e->index_info, sizeof(IndexInfo));
		ii->ii_Context = CurrentMemoryContext;
	}
	else
	{
		ii = BuildIndexInfo(idx);
		if (!e->stale && ii->ii_Expressions == NIL && ii->ii_Predicate == NIL &&
			ii->ii_OpclassOptions == NULL && ii->ii_ExclusionOps == NULL && ii->ii_UniqueOps == NULL)
		{
			e->index_info = MemoryContextAlloc(TopMemoryContext, sizeof(IndexInfo));
			memcpy(e->index_info, ii, sizeof(IndexInfo));
		}
	}
	arrays->idx = idx;
	arrays->iip = ii;
	rri->ri_NumIndices = 1;
	rri->ri_IndexRelationDescs = &arrays->idx;
	rri->ri_IndexRelationInfo = &arrays->iip;
	return true;
}

/*
 * The row of a single-row INSERT whose index check waits for the
 * statement's ExecutorFinish (defer_row).
 */
typedef struct DeferredRow
{
	EState	   *estate;			/* the statement's */
	ResultRelInfo *rri;			/* its table's: ri_NumIndices 0 meanwhile */
	PlanState  *source;			/* the Result that makes the row */
	MemoryContextCallback gone; /* on es_query_cxt: unlinks it */
	struct DeferredRow *next;
} DeferredRow;

/* the statements whose row waits, innermost first */
static DeferredRow *deferred_rows = NULL;

/*
 * deferred_unlink
 *	  Take a statement's entry out of deferred_rows, if there.
 */
static void
deferred_unlink(DeferredRow *d)
{
	for (DeferredRow **p = &deferred_rows; *p != NULL; p = &(*p)->next)
	{
		if (*p == d)
		{
			*p = d->next;
			return;
		}
	}
}

/*
 * deferred_gone
 *	  Memory context callback: the statement's memory goes (its end, or an
 *	  error before its ExecutorFinish: then its row goes with the
 *	  transaction or subtransaction that aborts).
 */
static void
deferred_gone(void *arg)
{
	deferred_unlink((DeferredRow *) arg);
}

/*
 * defer_row
 *	  A single-row INSERT (makes_one_row) into a table whose only index,
 *	  opened by open_sole_index, is the BRIN index on cq_xid that would get
 *	  the gate (brin_row_gate; cq_brin_row_can_wait): its row skips
 *	  ExecInsertIndexTuples, and the revmap entry of its range is read at
 *	  the statement's ExecutorFinish instead (deferred_check,
 *	  cq_brin_row_in_summary), without the statement cache and gate that
 *	  cq_brin_statement_begin makes.  ExecInsertIndexTuples, the gate and
 *	  the cache cost such an INSERT about 700 instructions, among them the
 *	  statement's per-tuple expression context that ExecInsertIndexTuples
 *	  makes (and the statement's end frees) only to evaluate the gate.
 *	  Reading the entry later is as exact: what makes the answer safe
 *	  against a concurrent summarization is that the row is in the table
 *	  before the range's revmap entry is read (range_has_tuple,
 *	  brin_insert.c), whenever that is before the transaction ends; the
 *	  index's lock is held all along.  Nor can anything read the index in
 *	  between and miss the row: without RETURNING and WITH CHECK OPTIONs
 *	  (the caller's conditions) no user code runs between the row's insert
 *	  and ExecutorFinish (AFTER triggers run in it, after the check), and
 *	  the statement's own snapshot does not see its row.  In the
 *	  statement's memory.
 */
static void
defer_row(QueryDesc *queryDesc, ResultRelInfo *rri)
{
	DeferredRow *d = palloc(sizeof(DeferredRow));

	d->estate = queryDesc->estate;
	d->rri = rri;
	d->source = outerPlanState(queryDesc->planstate);
	d->gone.func = deferred_gone;
	d->gone.arg = d;
	MemoryContextRegisterResetCallback(queryDesc->estate->es_query_cxt, &d->gone);
	d->next = deferred_rows;
	deferred_rows = d;
	/* ExecInsert (ExecInsertIndexTuples) sees no index; the executor keeps it open */
	rri->ri_NumIndices = 0;
}

/*
 * deferred_check
 *	  At a statement's ExecutorFinish (or ExecutorEnd, if no ExecutorFinish
 *	  came), if its row waits (defer_row): the table's index back in its
 *	  ResultRelInfo, and the row, if its range has an index tuple, through
 *	  ExecInsertIndexTuples, as ExecInsert would have done (cq_brininsert
 *	  then makes the statement's cache, with the row's value).  The row is in
 *	  the table's slot of the statement (ri_newTupleSlot: ExecInsert's,
 *	  made for the statement, its tts_tid set by the insert).  If no row was
 *	  inserted, the Result did not make it (the statement never ran); a row
 *	  made but not found is an error, not a row left out of the index.
 */
static void
deferred_check(EState *estate)
{
	DeferredRow *d;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	MemoryContext old;

	for (d = deferred_rows; d != NULL && d->estate != estate; d = d->next)
		;
	if (d == NULL)
		return;
	deferred_unlink(d);
	rri = d->rri;
	rri->ri_NumIndices = 1;
	slot = rri->ri_newTupleSlot;
	if (slot == NULL || !ItemPointerIsValid(&slot->tts_tid) ||
		slot->tts_tableOid != RelationGetRelid(rri->ri_RelationDesc))
	{
		if (d->source != NULL && IsA(d->source, ResultState) && !((ResultState *) d->source)->rs_done)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("pg_cq: the row inserted into table \"%s\" was not found for its BRIN index",
						RelationGetRelationName(rri->ri_RelationDesc))));
	}
	if (!cq_brin_row_in_summary(rri->ri_IndexRelationDescs[0], &slot->tts_tid))
		return;
	old = MemoryContextSwitchTo(estate->es_query_cxt);
	ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL);
	MemoryContextSwitchTo(old);
}

/*
 * brin_swap_insert
 *	  cq_brin_swap_aminsert for the indexes of the table an INSERT writes.
 *	  The executor opens them at the first row (ExecInsert): they are opened
 *	  here instead, the same way, in the statement's memory (the table of a
 *	  swap, if any, by open_sole_index).  (Partitions that rows are routed
 *	  to are opened later, untouched.)
 */
static void
brin_swap_insert(QueryDesc *queryDesc, StampSwap *swap, bool one_row)
{
	ModifyTableState *mts = (ModifyTableState *) queryDesc->planstate;
	ModifyTable *mt;
	MemoryContext old;

	if (queryDesc->operation != CMD_INSERT || mts == NULL || !IsA(mts, ModifyTableState))
		return;
	mt = (ModifyTable *) mts->ps.plan;
	old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	for (int r = 0; r < mts->mt_nrels; r++)
	{
		ResultRelInfo *rri = &mts->resultRelInfo[r];
		Relation	rel = rri->ri_RelationDesc;
		bool		sole = false;

		if (rel->rd_rel->relkind != RELKIND_RELATION || !rel->rd_rel->relhasindex)
			continue;
		if (rri->ri_IndexRelationDescs == NULL &&
			!(sole = (swap->rel != NULL && RelationGetRelid(swap->rel) == RelationGetRelid(rel) &&
					  open_sole_index(rri, swap->entry))))
			ExecOpenIndices(rri, mt->onConflictAction != ONCONFLICT_NONE);
		for (int i = 0; i < rri->ri_NumIndices; i++)
		{
			Relation	idx = rri->ri_IndexRelationDescs[i];

			if (idx == NULL)
				continue;
			cq_brin_swap_aminsert(idx);
			if (one_row && sole && mts->mt_nrels == 1 && mt->returningLists == NIL &&
				rri->ri_WithCheckOptions == NIL && cq_brin_row_can_wait(idx, rri->ri_IndexRelationInfo[i]))
				defer_row(queryDesc, rri);
			else if (!(sole && mts->mt_nrels == 1 && cq_brin_heap_insert(queryDesc->estate, rri)))
				/* the statement's cache and gate, made now */
				cq_brin_statement_begin(idx, rel, rri->ri_IndexRelationInfo[i]);
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * open_fast_table
 *	  relation_open(relid, NoLock) of the table of a fast_tables entry that
 *	  an INSERT's ExecutorStart swaps (the plan holds the table's lock): the
 *	  relation cache entry the table was opened as by the statement before,
 *	  referenced again without the relation cache's hash look-up, if no
 *	  invalidation came since (fast_tables_inval_count unchanged).  A
 *	  relation cache entry that no one references is freed only when an
 *	  invalidation of it (or of all) is processed, and pg_cq's invalidation
 *	  callback, which bumps the count, runs right after (a table created in
 *	  a transaction or subtransaction that aborts: its entry goes at the
 *	  abort, before the abort processes the invalidation of the creation);
 *	  an entry referenced while an invalidation comes is rebuilt in place.
 *	  Builds with RELCACHE_FORCE_RELEASE free an entry when its last
 *	  reference goes: they always look the table up.
 */
static Relation
open_fast_table(FastTable *e, Oid relid)
{
#ifndef RELCACHE_FORCE_RELEASE
	if (e->rel != NULL && e->rel_count == fast_tables_inval_count && e->rel->rd_isvalid &&
		RelationGetRelid(e->rel) == relid)
	{
		RelationIncrementReferenceCount(e->rel);
		return e->rel;
	}
#endif
	return relation_open(relid, NoLock);
}

/*
 * cq_stamp_ExecutorStart
 *	  ExecutorStart hook: an INSERT that leaves cq_xid to the default of a
 *	  table whose only BEFORE ROW INSERT trigger is zz_cq_stamp is started
 *	  without that trigger in its insert path.  Any other statement that
 *	  starts during a swap gets the real TriggerDesc.
 */
static void
cq_stamp_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	StampSwap	swap = {0};
	StampSwap  *outer = active_swap;
	StampSwap  *volatile nested = nested_begin();
	Oid			relid = InvalidOid;
	Plan	   *sub = NULL;
	TargetEntry *volatile xid_entry = NULL;
	Expr	   *volatile xid_expr = NULL;
	Const		xid_value;
	volatile Oid xid_type = InvalidOid;
	volatile bool one_row = false;

	if (outer == NULL && !(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		relid = insert_target(queryDesc->plannedstmt, &sub);
	if (OidIsValid(relid))
	{
		FastTable  *e = fast_table_find(relid);
		TargetEntry *tle = NULL;
		bool		leaves = false;

		/* a table known not to qualify costs one lookup */
		if (e == NULL || (e->fast && !e->in_use && (leaves = (tle = default_entry(sub, e)) != NULL)))
		{
			uint64		invals = fast_tables_inval_count;

			/* the plan holds the table's lock */
			Relation	rel = leaves ? open_fast_table(e, relid) : relation_open(relid, NoLock);

			/*
			 * The entry found is current unless opening the table processed
			 * an invalidation or the table's triggers changed: else it is
			 * made again (fast_table).
			 */
			if (!(leaves && invals == fast_tables_inval_count && e->made_from == rel->trigdesc))
			{
				e = fast_table(rel);
				leaves = e != NULL && e->fast && (tle = default_entry(sub, e)) != NULL;
			}
			if (leaves)
			{
				e->rel = rel;
				e->rel_count = fast_tables_inval_count;
				swap_begin(&swap, rel, e);
				active_swap = &swap;
				if (may_stamp_early())
				{
					xid_entry = tle;
					xid_type = e->type;
					one_row = makes_one_row(sub);
				}
			}
			else
				relation_close(rel, NoLock);
		}
	}
	PG_TRY();
	{
		if (xid_entry != NULL)
			xid_expr = xid_const_begin(xid_entry, &xid_value, xid_type);
		if (prev_ExecutorStart)
			prev_ExecutorStart(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
		if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
			brin_swap_insert(queryDesc, &swap, xid_expr != NULL && one_row);
	}
	PG_FINALLY();
	{
		/* the plan is the plan cache's: its expression goes back */
		if (xid_expr != NULL)
			xid_entry->expr = xid_expr;
		if (swap.rel != NULL)
			swap_end(&swap);
		active_swap = outer;
		nested_end(nested);
	}
	PG_END_TRY();
	if (swap.rel != NULL)
		relation_close(swap.rel, NoLock);
}

/*
 * keep_index_locks
 *	  Close the indexes of the tables an INSERT wrote, when all of them
 *	  are BRIN indexes on xid8 (cq_brininsert: a tracked source's), without
 *	  releasing the RowExclusiveLock the executor took on them
 *	  (ExecOpenIndices, open_sole_index): the transaction keeps it until it
 *	  ends, as it keeps the table's, and as it keeps the locks on the indexes
 *	  that planning a statement opens.  Releasing a lock on its own cost a
 *	  single-row INSERT about 1,000 instructions; the end of the
 *	  transaction releases it with the others for about 600, and a later
 *	  statement of the transaction finds it held (taking it cost 800).  Nothing that the index's lock excludes could have run before the
 *	  transaction ends anyway unless it also ran without conflicting with
 *	  the table's lock, which is kept (ALTER INDEX ... SET TABLESPACE waits
 *	  for the end of the transaction instead of the statement's).
 */
static void
keep_index_locks(EState *estate)
{
	ListCell   *lc;

	foreach(lc, estate->es_opened_result_relations)
	{
		ResultRelInfo *rri = lfirst(lc);
		int			n = rri->ri_NumIndices;
		bool		ours = n > 0;

		for (int i = 0; i < n && ours; i++)
			ours = rri->ri_IndexRelationDescs[i] != NULL && cq_brin_is_ours(rri->ri_IndexRelationDescs[i]);
		if (!ours)
			continue;
		/* ExecCloseIndices (ExecutorEnd) closes none of them now */
		rri->ri_NumIndices = 0;
		for (int i = 0; i < n; i++)
		{
			index_close(rri->ri_IndexRelationDescs[i], NoLock);
			rri->ri_IndexRelationDescs[i] = NULL;
		}
	}
}

/*
 * cq_stamp_ExecutorFinish
 *	  ExecutorFinish hook: the row of a single-row INSERT that waits
 *	  (defer_row) is checked, before AFTER triggers run.
 */
static void
cq_stamp_ExecutorFinish(QueryDesc *queryDesc)
{
	if (unlikely(deferred_rows != NULL))
		deferred_check(queryDesc->estate);
	cq_brin_heap_insert_end(queryDesc->estate, true);
	if (prev_ExecutorFinish)
		prev_ExecutorFinish(queryDesc);
	else
		standard_ExecutorFinish(queryDesc);
}

/*
 * cq_stamp_ExecutorEnd
 *	  ExecutorEnd hook: the row of a single-row INSERT that still waits
 *	  (defer_row: no ExecutorFinish came) is checked; an INSERT's BRIN
 *	  indexes on xid8 stay locked (keep_index_locks).
 */
static void
cq_stamp_ExecutorEnd(QueryDesc *queryDesc)
{
	if (unlikely(deferred_rows != NULL))
		deferred_check(queryDesc->estate);
	cq_brin_heap_insert_end(queryDesc->estate, false);
	if (queryDesc->operation == CMD_INSERT && queryDesc->estate != NULL)
		keep_index_locks(queryDesc->estate);
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/*
 * copy_leaves_default
 *	  Is the statement a COPY FROM into a table, whose column list leaves
 *	  cq_xid out?  (Without a column list COPY reads every column.)
 */
static bool
copy_leaves_default(Node *parsetree)
{
	CopyStmt   *stmt;
	ListCell   *lc;

	if (!IsA(parsetree, CopyStmt))
		return false;
	stmt = (CopyStmt *) parsetree;
	if (!stmt->is_from || stmt->relation == NULL || stmt->query != NULL || stmt->attlist == NIL)
		return false;
	foreach(lc, stmt->attlist)
		if (strcmp(strVal(lfirst(lc)), CQ_TRACKING_COLUMN) == 0)
			return false;
	return true;
}

/*
 * refuse_stamp_ddl
 *	  Refuse a statement that would drop or disable the stamp trigger of a
 *	  table whose rows reach the source of a continuous query.
 */
static void
refuse_stamp_ddl(Oid relid, const char *what)
{
	Oid			source;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_cq: SPI_connect failed");
	source = cq_source_reached(relid);
	SPI_finish();
	if (!OidIsValid(source))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot %s trigger \"%s\" on table \"%s\"", what, CQ_STAMP_TRIGGER, get_rel_name(relid)),
			 errdetail("It stamps the rows that reach table \"%s\", the source of a continuous query, with the id of the transaction that inserts them; without it the query could miss rows.",
					   get_rel_name(source)),
			 errhint("Drop the continuous queries over table \"%s\" first.", get_rel_name(source))));
}

/*
 * check_stamp_ddl
 *	  DROP TRIGGER zz_cq_stamp, ALTER TABLE ... DISABLE/ENABLE [REPLICA]
 *	  TRIGGER zz_cq_stamp or ... DISABLE/ENABLE TRIGGER USER/ALL (which
 *	  disable it, or make it fire no longer under session_replication_role
 *	  = replica) on a table whose rows reach a source: refused, except to
 *	  superusers (pg_restore --disable-triggers disables and enables
 *	  TRIGGER ALL around a data-only restore) and to pg_cq itself.
 */
static void
check_stamp_ddl(Node *parsetree)
{
	ListCell   *lc;

	/*
	 * Other statements first, without the look-ups below (cq.stamp() by
	 * name: two catalog cache searches, which every utility statement of a
	 * user without superuser rights, an EXECUTE or COPY say, paid).
	 */
	if (!IsA(parsetree, DropStmt) && !IsA(parsetree, AlterTableStmt))
		return;
	if (cq_tracking_dropping_stamp() || !IsTransactionState() || superuser() ||
		!OidIsValid(cq_tracking_trigger_function("stamp")))
		return;
	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_TRIGGER)
	{
		foreach(lc, ((DropStmt *) parsetree)->objects)
		{
			List	   *names = lfirst(lc);
			Oid			relid;

			if (list_length(names) < 2 ||
				strcmp(strVal(llast(names)), CQ_STAMP_TRIGGER) != 0)
				continue;
			relid = RangeVarGetRelid(makeRangeVarFromNameList(list_truncate(list_copy(names),
																			 list_length(names) - 1)),
									 NoLock, true);
			if (OidIsValid(relid))
				refuse_stamp_ddl(relid, "drop");
		}
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		Oid			relid = InvalidOid;

		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = lfirst(lc);
			bool		named = cmd->name != NULL && strcmp(cmd->name, CQ_STAMP_TRIGGER) == 0;

			if (!(((cmd->subtype == AT_DisableTrig || cmd->subtype == AT_EnableTrig ||
					cmd->subtype == AT_EnableReplicaTrig) && named) ||
				  cmd->subtype == AT_DisableTrigAll || cmd->subtype == AT_DisableTrigUser ||
				  cmd->subtype == AT_EnableTrigAll || cmd->subtype == AT_EnableTrigUser))
				continue;
			if (!OidIsValid(relid))
				relid = RangeVarGetRelid(stmt->relation, NoLock, true);
			if (OidIsValid(relid) && cq_tracking_has_trigger(relid, cq_tracking_trigger_function("stamp")))
				refuse_stamp_ddl(relid, cmd->subtype == AT_DisableTrig || cmd->subtype == AT_DisableTrigAll ||
								 cmd->subtype == AT_DisableTrigUser ? "disable" : "change the firing of");
		}
	}
}

/*
 * cq_stamp_ProcessUtility
 *	  ProcessUtility hook: a COPY FROM that leaves cq_xid to the default of
 *	  a table whose only BEFORE ROW INSERT trigger is zz_cq_stamp runs
 *	  without that trigger in its insert path (so in batches).  A utility
 *	  statement that starts during such a COPY gets the real TriggerDesc.
 */
static void
cq_stamp_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
						   ProcessUtilityContext context, ParamListInfo params,
						   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	StampSwap	swap = {0};
	StampSwap  *outer = active_swap;
	StampSwap  *volatile nested;
	volatile Relation rel = NULL;
	uint64		seq = cq_brin_cache_seq();
	bool		copy_from = IsA(pstmt->utilityStmt, CopyStmt) &&
		((CopyStmt *) pstmt->utilityStmt)->is_from;

	/* before nested_begin: nothing may fail between it and PG_TRY */
	check_stamp_ddl(pstmt->utilityStmt);
	if (copy_from)
		cq_citus_check_copy(pstmt->utilityStmt);
	if (copy_from && ((CopyStmt *) pstmt->utilityStmt)->relation != NULL && IsTransactionState())
	{
		/* the lock COPY FROM takes on the table it then opens the same way */
		Oid			relid = RangeVarGetRelid(((CopyStmt *) pstmt->utilityStmt)->relation,
											 RowExclusiveLock, true);

		if (OidIsValid(relid))
		{
			Relation	target = relation_open(relid, NoLock);

			cq_brin_swap_table(target);
			relation_close(target, NoLock);
		}
	}
	nested = nested_begin();
	if (outer == NULL && copy_leaves_default(pstmt->utilityStmt) && IsTransactionState())
	{
		/* the lock COPY FROM takes on the table it then opens the same way */
		Oid			relid = RangeVarGetRelid(((CopyStmt *) pstmt->utilityStmt)->relation,
											 RowExclusiveLock, true);

		if (OidIsValid(relid))
		{
			FastTable  *e;

			rel = table_open(relid, NoLock);
			e = fast_table(rel);
			if (e != NULL && e->fast)
			{
				swap_begin(&swap, rel, e);
				active_swap = &swap;
			}
		}
	}
	PG_TRY();
	{
		if (swap.rel != NULL && may_stamp_early())
			copy_const_begin(&swap);
		if (swap.rel != NULL)
			copy_gate_begin(&swap);
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		copy_gate_end(&swap, qc != NULL && qc->commandTag == CMDTAG_COPY ? (int64) qc->nprocessed : -1);
	}
	PG_FINALLY();
	{
		copy_gate_end(&swap, -1);
		copy_const_end(&swap);
		if (swap.rel != NULL)
			swap_end(&swap);
		active_swap = outer;
		nested_end(nested);
	}
	PG_END_TRY();
	if (rel != NULL)
		table_close(rel, NoLock);
	/* the COPY's ResultRelInfo outlives it: its revmap pins do not */
	if (copy_from)
		cq_brin_unpin_since(seq);
}

/*
 * cq_stamp_init
 *	  Install the write-path hooks; called from _PG_init.
 */
void
cq_stamp_init(void)
{
	cq_relcache_callback(fast_tables_inval, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, functions_inval, (Datum) 0);
	cq_brin_insert_init();
	cq_brin_heap_init();
	cq_stamp_first_row_hook = cq_brin_swap_table;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = cq_stamp_ExecutorStart;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = cq_stamp_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = cq_stamp_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = cq_stamp_ProcessUtility;
}
