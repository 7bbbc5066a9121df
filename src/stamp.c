/*-------------------------------------------------------------------------
 *
 * stamp.c
 *	  The write path of a tracked source: statements that leave cq_xid to
 *	  its default skip the stamp row trigger, rows go into the BRIN index on
 *	  cq_xid without re-reading its metapage and revmap page for every row
 *	  (cq_brininsert, below), and the stamp trigger cannot be dropped or
 *	  disabled while queries read the table.
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
 *
 * What a table's statements may skip is decided once and kept until the
 * relation cache invalidates the table (trigger, default or column changes
 * all do): fast_tables, keyed by OID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/brin.h"
#include "access/brin_internal.h"
#include "access/brin_page.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/sysattr.h"
#include "access/table.h"
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
#include "lib/ilist.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "port/atomics.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "tcop/utility.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "stamp.h"
#include "citus.h"
#include "tracking.h"
#include "wakeup.h"

typedef struct FastTable
{
	Oid			relid;			/* hash key */
	bool		fast;			/* stamp_fast_table() */
	AttrNumber	att;			/* cq_xid */
	bool		wakeup;			/* cq_wakeup goes too (wakeup_only) */
	char		wakeup_enabled; /* its tgenabled */
	TriggerDesc *made_from;		/* rel->trigdesc the copy was made from */
	TriggerDesc *copy;			/* what a swap puts in rel->trigdesc */
	bool		in_use;			/* swapped in now */
	bool		stale;			/* invalidated while swapped in */
	bool		index_known;	/* index is set (open_sole_index) */
	Oid			index;			/* the table's only index, or InvalidOid */
	IndexInfo  *index_info;		/* BuildIndexInfo's of it, when plain */
} FastTable;

/* a swap in progress */
typedef struct StampSwap
{
	Relation	rel;			/* the table, kept open */
	FastTable  *entry;			/* its fast_tables entry */
	TriggerDesc *real;			/* its TriggerDesc, held by us while swapped */
	TriggerDesc *fast;			/* entry->copy, in rel->trigdesc while swapped */
} StampSwap;

static HTAB *fast_tables = NULL;

/* bumped by every invalidation of fast_tables: an entry found before is still there */
static uint64 fast_tables_inval_count = 0;

/* the swap in progress (of an INSERT's ExecutorStart or of a COPY), if any */
static StampSwap *active_swap = NULL;

/* cq.stamp() and cq.wakeup(), looked up again after any change of pg_proc */
static Oid	stamp_func = InvalidOid;
static Oid	wakeup_func = InvalidOid;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
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
 *	  Is column att's default exactly pg_catalog.pg_current_xact_id()?  The
 *	  stored expression (adbin) seen canonical last is kept, so that the
 *	  check per statement is a string comparison, not a parse.
 */
static bool
canonical_default(Relation rel, AttrNumber att)
{
	static char *canonical = NULL;
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
			if (!IsA(expr, FuncExpr) || ((FuncExpr *) expr)->funcid != F_PG_CURRENT_XACT_ID ||
				((FuncExpr *) expr)->args != NIL)
				return false;
			if (canonical != NULL)
				pfree(canonical);
			canonical = MemoryContextStrdup(TopMemoryContext, adbin);
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
 *	  zz_cq_stamp and whose cq_xid default is pg_current_xact_id().  Sets
 *	  *att to cq_xid's attribute number.
 */
static bool
stamp_fast_table(Relation rel, AttrNumber *att)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		!stamp_is_only_before_insert(rel))
		return false;
	*att = InvalidAttrNumber;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && a->atttypid == XID8OID &&
			strcmp(NameStr(a->attname), CQ_TRACKING_COLUMN) == 0)
			*att = a->attnum;
	}
	return *att != InvalidAttrNumber && canonical_default(rel, *att);
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
	e->copy = NULL;
	e->made_from = rel->trigdesc;
	PG_TRY();
	{
		e->fast = stamp_fast_table(rel, &e->att);
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
 * nested_begin
 *	  A statement that starts while a swap is in progress (user code a COPY
 *	  runs, or SPI run by another module's ExecutorStart hook) gets the real
 *	  TriggerDesc while it builds its ResultRelInfos, and swaps nothing
 *	  itself.  Returns the swap suspended, or NULL.
 */
static StampSwap *
nested_begin(void)
{
	StampSwap  *swap = active_swap;

	if (swap == NULL || swap->fast == NULL || swap->rel->trigdesc != swap->fast)
		return NULL;
	swap->rel->trigdesc = swap->real;
	return swap;
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
	if (swap == NULL || swap->fast == NULL)
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
 * leaves_default
 *	  Do the new rows take column att from the expression
 *	  pg_catalog.pg_current_xact_id() itself (what the default puts there
 *	  when the statement leaves the column out)?
 */
static bool
leaves_default(Plan *sub, AttrNumber att)
{
	ListCell   *lc;

	foreach(lc, sub->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		if (tle->resno == att)
			return !tle->resjunk && IsA(tle->expr, FuncExpr) &&
				((FuncExpr *) tle->expr)->funcid == F_PG_CURRENT_XACT_ID &&
				((FuncExpr *) tle->expr)->args == NIL;
	}
	return false;
}

/*
 * The BRIN index on cq_xid.  PostgreSQL 15's brininsert() reads the index's
 * metapage and the revmap page of the row's page range for every row it is
 * given (about a quarter of what inserting a row into a tracked table
 * costs), though for nearly every row of a tracked source it then has
 * nothing to do: rows land in the table's last page range, which pg_cq
 * leaves unsummarized while it fills (cq_source_summarize), and an
 * unsummarized range has no index tuple to update.
 *
 * cq_brininsert does what brininsert does, keeping for the whole statement
 * (in indexInfo->ii_AmCache, like PostgreSQL 17) the metapage's figures and
 * a pin on the revmap page it read last: per row, it then only reads the
 * range's revmap entry.  A range with an
 * index tuple (summarized, or being summarized: a placeholder) goes to
 * brininsert itself.  This is safe against concurrent summarization for the
 * reason brininsert is: the row is in the heap before its revmap entry is
 * read, and a summarization puts the range's placeholder tuple in the
 * revmap before it scans the range (including rows of transactions in
 * progress); so either the entry read here is the placeholder or a summary
 * (brininsert updates it), or the scan will see the row (range_has_tuple
 * says why the entry may be read without the page's lock).  The revmap only
 * grows: pages past the cached last revmap page mean the metapage is read
 * again, never that the range is unsummarized.
 *
 * Nor does a row hand over its cq_xid: the statement's IndexInfo (its own
 * copy) names the row's tableoid as the index's column (values_from_heap),
 * so ExecInsertIndexTuples does not deform the stored row up to cq_xid, the
 * last column; a row whose range has an index tuple reads cq_xid back from
 * the table (heap_value) before brininsert widens the summary with it.
 * INSERT makes the cache at ExecutorStart (every row skips the deform),
 * COPY at its first row (which hands over its real value).
 *
 * It replaces aminsert in the relation cache entry of each BRIN index whose
 * key is of type xid8 (pg_cq's operator class cq.xid8_minmax_ops), when an
 * INSERT or COPY is about to write the table (the entry keeps it until it
 * is rebuilt).  The index stays a plain BRIN index in the catalog: nothing
 * changes for dump, restore, pg_upgrade or brin_summarize_range().
 *
 * The revmap pin is held by the resource owner that was current when it
 * was taken, and released when the statement's memory goes
 * (ii_Context's reset callback), at the end of a COPY (its ResultRelInfo
 * lives in longer memory), or, on error, by the resource owner itself:
 * a resource-release callback then forgets it.
 */
typedef struct BrinInsertCache
{
	const char *magic;			/* brin_cache_magic: ours, not brininsert's */
	void	   *brin_cache;		/* brininsert's own ii_AmCache (a BrinDesc) */
	BlockNumber pages_per_range;	/* from the metapage */
	BlockNumber last_revmap_page;	/* from the metapage (only grows) */
	Buffer		revmap_buf;		/* pinned revmap page, or InvalidBuffer */
	ResourceOwner owner;		/* holds the pin */
	uint64		seq;			/* creation order (end of a COPY) */
	dlist_node	node;			/* in pinned_caches while pinned */
	MemoryContextCallback reset;	/* on ii_Context */
	bool		autosummarize;	/* the index's option, at the first row */
	AttrNumber	heap_att;		/* > 0: later rows' values are read from
								 * the heap (values_from_heap) */
	BlockNumber range_start;	/* first heap block of the range whose... */
	volatile ItemPointerData *entry;	/* ...revmap entry (in revmap_buf) was
										 * read last, or NULL */
	volatile BlockNumber *last_revmap;	/* or: the metapage's lastRevmapPage
										 * (revmap_buf is the metapage), when
										 * no revmap page covered that range */
	BlockNumber range_mapblk;	/* the revmap page that would cover it */
	bool		gate_tried;		/* brin_gate_rows ran */
	ExprState	gate;			/* brin_row_gate's state, when installed */
	Relation	index;			/* the index (open for the statement) */
} BrinInsertCache;

static const char brin_cache_magic[] = "pg_cq brin insert cache";
static dlist_head pinned_caches = DLIST_STATIC_INIT(pinned_caches);
static uint64 brin_cache_seq = 0;

/*
 * The shared buffers that the metapage and the revmap page of the index
 * written last were found in: a statement that writes the index again (a
 * single-row INSERT after another) pins them with ReadRecentBuffer, which
 * checks that they still hold the page, without the buffer mapping look-up.
 */
static Oid	recent_index = InvalidOid;
static Buffer recent_meta = InvalidBuffer;
static Buffer recent_revmap = InvalidBuffer;

/*
 * The metapage's figures of the index written last, and the storage they
 * were read from: pages per range is fixed when the index's storage is
 * built (a rebuild, ALTER INDEX ... SET included, makes new storage), and
 * the last revmap page only grows, so a single-row INSERT after another
 * does not read the metapage again (a range past the figure read it again:
 * range_has_tuple).
 */
static RelFileNode recent_node;
static BlockNumber recent_pages_per_range = 0;
static BlockNumber recent_last_revmap_page = 0;

/*
 * brin_cache_unpin
 *	  Release the cache's revmap pin, as the resource owner that took it.
 */
static void
brin_cache_unpin(BrinInsertCache *c)
{
	Buffer		buf = c->revmap_buf;
	ResourceOwner save = CurrentResourceOwner;

	if (!BufferIsValid(buf))
		return;
	c->revmap_buf = InvalidBuffer;
	c->entry = NULL;
	c->last_revmap = NULL;
	dlist_delete(&c->node);
	CurrentResourceOwner = c->owner;
	ReleaseBuffer(buf);
	CurrentResourceOwner = save;
}

/*
 * brin_cache_reset
 *	  Memory context callback: the statement's memory (ii_Context) goes.
 */
static void
brin_cache_reset(void *arg)
{
	brin_cache_unpin((BrinInsertCache *) arg);
}

/*
 * brin_cache_resowner
 *	  Resource-release callback: a resource owner released its buffer pins
 *	  (error, or a pin left at commit): the caches it held pins for forget
 *	  them.  CurrentResourceOwner is the owner being released.
 */
static void
brin_cache_resowner(ResourceReleasePhase phase, bool isCommit, bool isTopLevel, void *arg)
{
	dlist_mutable_iter it;

	if (phase != RESOURCE_RELEASE_BEFORE_LOCKS)
		return;
	dlist_foreach_modify(it, &pinned_caches)
	{
		BrinInsertCache *c = dlist_container(BrinInsertCache, node, it.cur);

		if (c->owner == CurrentResourceOwner)
		{
			c->revmap_buf = InvalidBuffer;
			c->entry = NULL;
			c->last_revmap = NULL;
			dlist_delete(&c->node);
		}
	}
}

/*
 * brin_cache_unpin_since
 *	  Release the pins of the caches made after seq (the end of a COPY).
 */
static void
brin_cache_unpin_since(uint64 seq)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &pinned_caches)
	{
		BrinInsertCache *c = dlist_container(BrinInsertCache, node, it.cur);

		if (c->seq > seq)
			brin_cache_unpin(c);
	}
}

/*
 * read_recent
 *	  Pin block blk of an index: in *recent if it still holds it, else
 *	  read it (and remember where).
 */
static Buffer
read_recent(Relation idx, BlockNumber blk, Buffer *recent)
{
	if (recent_index != RelationGetRelid(idx))
	{
		recent_index = RelationGetRelid(idx);
		recent_meta = recent_revmap = InvalidBuffer;
	}
	if (BufferIsValid(*recent) && ReadRecentBuffer(idx->rd_node, MAIN_FORKNUM, blk, *recent))
		return *recent;
	*recent = ReadBuffer(idx, blk);
	return *recent;
}

/*
 * brin_read_meta
 *	  Read pages per range and the last revmap page from the metapage.
 */
static void
brin_read_meta(BrinInsertCache *c, Relation idx)
{
	Buffer		meta = read_recent(idx, BRIN_METAPAGE_BLKNO, &recent_meta);
	BrinMetaPageData *md;

	LockBuffer(meta, BUFFER_LOCK_SHARE);
	md = (BrinMetaPageData *) PageGetContents(BufferGetPage(meta));
	c->pages_per_range = md->pagesPerRange;
	c->last_revmap_page = md->lastRevmapPage;
	UnlockReleaseBuffer(meta);
	recent_node = idx->rd_node;
	recent_pages_per_range = c->pages_per_range;
	recent_last_revmap_page = c->last_revmap_page;
}

/*
 * brin_recent_meta
 *	  The metapage's figures, from what was read last if it was read from
 *	  the same storage, else from the metapage.
 */
static void
brin_recent_meta(BrinInsertCache *c, Relation idx)
{
	if (recent_index == RelationGetRelid(idx) && recent_pages_per_range > 0 &&
		RelFileNodeEquals(recent_node, idx->rd_node))
	{
		c->pages_per_range = recent_pages_per_range;
		c->last_revmap_page = recent_last_revmap_page;
		return;
	}
	brin_read_meta(c, idx);
}

/*
 * cache_pin
 *	  Make block blk of the index (the metapage or a revmap page) the one
 *	  the cache keeps pinned, held by the current resource owner.
 */
static void
cache_pin(BrinInsertCache *c, Relation idx, BlockNumber blk)
{
	if (BufferIsValid(c->revmap_buf) && BufferGetBlockNumber(c->revmap_buf) == blk)
		return;
	brin_cache_unpin(c);
	c->revmap_buf = read_recent(idx, blk, blk == BRIN_METAPAGE_BLKNO ? &recent_meta : &recent_revmap);
	c->owner = CurrentResourceOwner;
	dlist_push_head(&pinned_caches, &c->node);
}

/*
 * range_has_tuple
 *	  Does the revmap point the range of heap block blk at an index tuple
 *	  (a summary or a placeholder)?
 *
 * Past the heap blocks the revmap's pages cover (1,360 ranges a page: 43,520
 * heap pages, 340 MB, at pg_cq's 32 pages per range) no range has a tuple
 * until a summarization extends the revmap, which pg_cq's batches do only
 * for full ranges: every row of a growing table lands there.  Such a range
 * is kept with a pin on the metapage, and later rows in it read the
 * metapage's last revmap page without the page's lock (cached_range_empty),
 * instead of pinning, locking and reading the metapage each (which also
 * made two writers of a table contend for its buffer).
 */
static pg_noinline bool
range_has_tuple(BrinInsertCache *c, Relation idx, BlockNumber blk)
{
	BlockNumber range = blk / c->pages_per_range;
	BlockNumber mapblk = range / REVMAP_PAGE_MAXITEMS + 1;	/* after the metapage */
	RevmapContents *contents;

	if (mapblk > c->last_revmap_page)
	{
		BrinMetaPageData *md;

		/*
		 * The revmap may have grown since it was read: look at the metapage
		 * (pinned for the range's later rows), as cached_range_empty does
		 * and for the reason the entry is read without a lock below.
		 */
		cache_pin(c, idx, BRIN_METAPAGE_BLKNO);
		md = (BrinMetaPageData *) PageGetContents(BufferGetPage(c->revmap_buf));
		c->last_revmap = (volatile BlockNumber *) &md->lastRevmapPage;
		c->range_mapblk = mapblk;
		c->range_start = range * c->pages_per_range;
		pg_memory_barrier();
		if (mapblk > *c->last_revmap)
			return false;		/* no revmap page covers the range yet */
		brin_read_meta(c, idx);
	}
	cache_pin(c, idx, mapblk);
	c->last_revmap = NULL;

	/*
	 * The entry is read without the page's content lock (which every
	 * writer of the table would otherwise take and release, on the same
	 * cache line, for every row).  What matters is only whether its offset
	 * number (one aligned uint16) is 0, and a stale 0 cannot hide a
	 * summarization that might miss the row: the summarizer sets the entry
	 * (placeholder) under the exclusive lock before it locks the row's heap
	 * page to scan it, and this backend released its lock on that page
	 * (heap_insert) before getting here.  If the summarizer's scan locked
	 * the page first, the placeholder was set before this backend locked
	 * the page, so the read below (after a full barrier) sees it;
	 * otherwise the scan sees the row.  The pinned page stays a revmap page
	 * (the revmap only grows) and is not evicted.  The same holds for the
	 * metapage's last revmap page, which a summarizer extending the revmap
	 * sets (under the metapage's exclusive lock) before the placeholder.
	 */
	contents = (RevmapContents *) PageGetContents(BufferGetPage(c->revmap_buf));
	c->entry = (volatile ItemPointerData *) &contents->rm_tids[range % REVMAP_PAGE_MAXITEMS];
	c->range_start = range * c->pages_per_range;
	pg_memory_barrier();
	return c->entry->ip_posid != InvalidOffsetNumber;
}

/*
 * cached_range_empty
 *	  Is heap block blk in the range read last (range_has_tuple), which has
 *	  no index tuple still?  1: yes; 0: it has one; -1: another range, or
 *	  the revmap grew since it had no page for the range (read it again).
 */
static inline int
cached_range_empty(BrinInsertCache *c, BlockNumber blk)
{
	if (blk - c->range_start >= c->pages_per_range)
		return -1;
	if (c->entry != NULL)
	{
		pg_memory_barrier();
		return c->entry->ip_posid == InvalidOffsetNumber;
	}
	if (c->last_revmap != NULL)
	{
		pg_memory_barrier();
		return *c->last_revmap < c->range_mapblk ? 1 : -1;
	}
	return -1;
}

static bool brin_insert_slow(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
							 Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
							 IndexInfo *indexInfo);

/*
 * values_from_heap
 *	  Stop FormIndexDatum from reading the indexed column of later rows
 *	  (which, being the table's last column as cq_xid usually is, costs a
 *	  deform of the whole stored row, a third of what the index adds to an
 *	  insert): the statement's IndexInfo (its own copy, built by
 *	  ExecOpenIndices) takes the row's tableoid instead, which the slot
 *	  holds.  Nearly every row lands in a range without an index tuple and
 *	  needs no value; the others read it from the row in the table
 *	  (heap_value).  Only for a plain column of a heap table, by value, and
 *	  not for CREATE INDEX CONCURRENTLY's validation (ii_Concurrent), whose
 *	  TIDs are the roots of HOT chains.
 */
static pg_noinline void
values_from_heap(BrinInsertCache *c, Relation heap, IndexInfo *indexInfo)
{
	AttrNumber	att = indexInfo->ii_IndexAttrNumbers[0];

	if (heap == NULL || heap->rd_rel->relam != HEAP_TABLE_AM_OID || indexInfo->ii_NumIndexAttrs != 1 ||
		att <= 0 || att > RelationGetDescr(heap)->natts || indexInfo->ii_Expressions != NIL ||
		indexInfo->ii_Concurrent || !TupleDescAttr(RelationGetDescr(heap), att - 1)->attbyval)
		return;
	c->heap_att = att;
	indexInfo->ii_IndexAttrNumbers[0] = TableOidAttributeNumber;
}

/*
 * heap_value
 *	  The indexed column of the row at tid, which this backend has just
 *	  written (so it is there, and stays while its transaction runs).
 */
static Datum
heap_value(BrinInsertCache *c, Relation heap, ItemPointer tid, bool *isnull)
{
	HeapTupleData tuple;
	Buffer		buf;
	Datum		value;

	tuple.t_self = *tid;
	if (!heap_fetch(heap, SnapshotAny, &tuple, &buf, true))
		elog(ERROR, "pg_cq: row (%u,%u) of table \"%s\" not found",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid), RelationGetRelationName(heap));
	value = heap_getattr(&tuple, c->heap_att, RelationGetDescr(heap), isnull);
	ReleaseBuffer(buf);			/* the value is by value */
	return value;
}

/*
 * brin_cache_make
 *	  The statement's cache, at its first row (for the index in indexInfo).
 */
static pg_noinline BrinInsertCache *
brin_cache_make(Relation idx, Relation heap, IndexInfo *indexInfo)
{
	BrinInsertCache *c = MemoryContextAllocZero(indexInfo->ii_Context, sizeof(BrinInsertCache));

	c->magic = brin_cache_magic;
	c->revmap_buf = InvalidBuffer;
	c->seq = ++brin_cache_seq;
	brin_recent_meta(c, idx);
	c->autosummarize = BrinGetAutoSummarize(idx);
	c->reset.func = brin_cache_reset;
	c->reset.arg = c;
	MemoryContextRegisterResetCallback(indexInfo->ii_Context, &c->reset);
	indexInfo->ii_AmCache = c;
	return c;
}

/*
 * brin_row_gate
 *	  The evalfunc of the statement's index predicate: does this row go to
 *	  index_insert?
 *
 * The rows that need no index call at all.  ExecInsertIndexTuples calls
 * FormIndexDatum and index_insert for every row and index, about 170
 * instructions a row for the BRIN index on cq_xid, though nearly every row
 * lands in a range without an index tuple, where cq_brininsert then does
 * nothing.  So the statement's IndexInfo (its own copy, as for
 * values_from_heap) gets a predicate, as a partial index has, whose state
 * (ii_PredicateState, which ExecInsertIndexTuples evaluates when
 * ii_Predicate is not empty) is a function of ours: it reads the inserted
 * row's block from the slot (ExecInsertIndexTuples sets it as the scan tuple
 * of the expression context, its tts_tid set by the insert) and says false
 * for a row in the range read last that still has no index tuple, or in
 * another range whose revmap entry it then reads and finds empty (what
 * cq_brininsert answers without calling brininsert), after doing what
 * index_insert does before it calls the access method (the serializable
 * conflict check on the index, the reindex check); true sends the row on to
 * index_insert and cq_brininsert as before.  The decision is
 * cached_range_empty's and range_has_tuple's, so the reasons it is safe
 * against a concurrent summarization are those given at range_has_tuple.  Not with
 * autosummarize (brininsert is asked at the first row of every range), for
 * a partial index, or for CREATE INDEX CONCURRENTLY's validation.  The
 * state lives in the statement's cache (BrinInsertCache.gate).
 */
static Datum
brin_row_gate(ExprState *state, ExprContext *econtext, bool *isnull)
{
	BrinInsertCache *c = (BrinInsertCache *) ((char *) state - offsetof(BrinInsertCache, gate));
	BlockNumber blk = ItemPointerGetBlockNumber(&econtext->ecxt_scantuple->tts_tid);
	int			known = cached_range_empty(c, blk);

	*isnull = false;
	if (unlikely(known != 1))
	{
		/* another range (or the statement's first row): read its entry */
		if (known == 0 || ReindexIsProcessingIndex(RelationGetRelid(c->index)) ||
			range_has_tuple(c, c->index, blk))
			return BoolGetDatum(true);
	}
	else if (unlikely(ReindexIsProcessingIndex(RelationGetRelid(c->index))))
		return BoolGetDatum(true);
	CheckForSerializableConflictIn(c->index, NULL, InvalidBlockNumber);
	return BoolGetDatum(false);
}

/*
 * brin_gate_rows
 *	  Gate the statement's rows (brin_row_gate): an INSERT's from its
 *	  ExecutorStart on (so the row of a single-row INSERT reads its revmap
 *	  entry in the gate, without FormIndexDatum and index_insert), a COPY's
 *	  from its first row that reaches cq_brininsert.
 */
static pg_noinline void
brin_gate_rows(BrinInsertCache *c, Relation idx, IndexInfo *indexInfo)
{
	/* the predicate's expression, never evaluated (its state is the gate) */
	static List *gate_predicate = NIL;

	c->gate_tried = true;
	if (c->autosummarize || indexInfo->ii_Predicate != NIL || indexInfo->ii_PredicateState != NULL ||
		indexInfo->ii_Concurrent)
		return;
	if (gate_predicate == NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		gate_predicate = list_make1(makeBoolConst(true, false));
		MemoryContextSwitchTo(old);
	}
	c->gate.type = T_ExprState;
	c->gate.flags = EEO_FLAG_IS_QUAL;
	c->gate.evalfunc = brin_row_gate;
	c->index = idx;
	indexInfo->ii_Predicate = gate_predicate;
	indexInfo->ii_PredicateState = &c->gate;
}

/*
 * brin_statement_cache
 *	  The statement's cache, with the row value read from the heap
 *	  (values_from_heap).
 */
static BrinInsertCache *
brin_statement_cache(Relation idx, Relation heap, IndexInfo *indexInfo)
{
	BrinInsertCache *c = brin_cache_make(idx, heap, indexInfo);

	values_from_heap(c, heap, indexInfo);
	return c;
}

/*
 * brin_insert_summary
 *	  brininsert, for a row whose range has an index tuple (or whose insert
 *	  asks for autosummarization): with the row's value read from the table
 *	  unless values[] hold it (the statement's first row).
 */
static pg_noinline bool
brin_insert_summary(BrinInsertCache *c, bool values_given, Relation idx, Datum *values, bool *isnull,
					ItemPointer heaptid, Relation heap, IndexUniqueCheck checkUnique,
					bool indexUnchanged, IndexInfo *indexInfo)
{
	Datum		value;
	bool		null;
	bool		result;

	if (c->heap_att > 0 && !values_given)
	{
		value = heap_value(c, heap, heaptid, &null);
		values = &value;
		isnull = &null;
	}
	indexInfo->ii_AmCache = c->brin_cache;
	result = brininsert(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
	c->brin_cache = indexInfo->ii_AmCache;
	indexInfo->ii_AmCache = c;
	return result;
}

/*
 * cq_brininsert
 *	  aminsert of a BRIN index on xid8: brininsert, which does nothing when
 *	  the row's range has no index tuple, without reading the metapage and
 *	  the revmap page for every row, and without the row's value unless the
 *	  range has an index tuple (values_from_heap).  The revmap entry of the
 *	  range read last is kept: a row in the same range reads it again, and
 *	  nothing else.
 */
static bool
cq_brininsert(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
			  Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			  IndexInfo *indexInfo)
{
	BrinInsertCache *c = indexInfo->ii_AmCache;

	/* a row in the range of the row before: read its entry again */
	if (likely(c != NULL && c->magic == brin_cache_magic && !c->autosummarize &&
			   cached_range_empty(c, ItemPointerGetBlockNumber(heaptid)) == 1))
		return false;
	return brin_insert_slow(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
}

/*
 * brin_insert_slow
 *	  cq_brininsert, for the first row of a statement and rows in another
 *	  range than the row before, or in a range with an index tuple.
 */
static pg_noinline bool
brin_insert_slow(Relation idx, Datum *values, bool *isnull, ItemPointer heaptid,
				 Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
				 IndexInfo *indexInfo)
{
	BrinInsertCache *c = indexInfo->ii_AmCache;
	BlockNumber blk = ItemPointerGetBlockNumber(heaptid);
	bool		first_row = false;

	if (c == NULL)
	{
		c = brin_statement_cache(idx, heap, indexInfo);
		first_row = true;		/* values[] are this row's */
	}
	else if (c->magic != brin_cache_magic)
		/* brininsert's cache: the statement began before the swap */
		return brininsert(idx, values, isnull, heaptid, heap, checkUnique, indexUnchanged, indexInfo);
	if (!c->gate_tried)
		brin_gate_rows(c, idx, indexInfo);

	/*
	 * The first row of a range's first page, with autosummarize: brininsert
	 * asks autovacuum to summarize the previous range.
	 */
	if (!(c->autosummarize && blk > 0 && blk % c->pages_per_range == 0 &&
		  ItemPointerGetOffsetNumber(heaptid) == FirstOffsetNumber))
	{
		int			known = cached_range_empty(c, blk);

		/* the range of the row before: its entry was read again */
		if (known == 1 || (known == -1 && !range_has_tuple(c, idx, blk)))
			return false;
	}
	return brin_insert_summary(c, first_row, idx, values, isnull, heaptid, heap, checkUnique,
							   indexUnchanged, indexInfo);
}

/*
 * brin_swap_aminsert
 *	  Make cq_brininsert the aminsert of an open index, if it is a BRIN
 *	  index on one xid8 column.
 */
static void
brin_swap_aminsert(Relation idx)
{
	if (idx->rd_indam->aminsert == brininsert && idx->rd_index != NULL &&
		idx->rd_index->indnatts == 1 && idx->rd_opcintype[0] == XID8OID)
		idx->rd_indam->aminsert = cq_brininsert;
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

	if (e->stale)
		return false;
	if (!e->index_known)
	{
		List	   *indexes = RelationGetIndexList(rri->ri_RelationDesc);

		e->index = list_length(indexes) == 1 ? linitial_oid(indexes) : InvalidOid;
		e->index_known = true;
		list_free(indexes);
	}
	if (!OidIsValid(e->index))
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
 * brin_swap_insert
 *	  brin_swap_aminsert for the indexes of the table an INSERT writes.
 *	  The executor opens them at the first row (ExecInsert): they are opened
 *	  here instead, the same way, in the statement's memory (the table of a
 *	  swap, if any, by open_sole_index).  (Partitions that rows are routed
 *	  to are opened later, untouched.)
 */
static void
brin_swap_insert(QueryDesc *queryDesc, StampSwap *swap)
{
	ModifyTableState *mts = (ModifyTableState *) queryDesc->planstate;
	ModifyTable *mt;

	if (queryDesc->operation != CMD_INSERT || mts == NULL || !IsA(mts, ModifyTableState))
		return;
	mt = (ModifyTable *) mts->ps.plan;
	for (int r = 0; r < mts->mt_nrels; r++)
	{
		ResultRelInfo *rri = &mts->resultRelInfo[r];
		Relation	rel = rri->ri_RelationDesc;

		if (rel->rd_rel->relkind != RELKIND_RELATION || !rel->rd_rel->relhasindex)
			continue;
		if (rri->ri_IndexRelationDescs == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);

			if (swap->rel == NULL || RelationGetRelid(swap->rel) != RelationGetRelid(rel) ||
				!open_sole_index(rri, swap->entry))
				ExecOpenIndices(rri, mt->onConflictAction != ONCONFLICT_NONE);
			MemoryContextSwitchTo(old);
		}
		for (int i = 0; i < rri->ri_NumIndices; i++)
		{
			Relation	idx = rri->ri_IndexRelationDescs[i];
			IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

			if (idx == NULL)
				continue;
			brin_swap_aminsert(idx);

			/*
			 * The statement's cache and gate, made now: FormIndexDatum skips
			 * the column from the first row on (values_from_heap), and the
			 * gate decides from the first row on (brin_row_gate).
			 */
			if (idx->rd_indam->aminsert == cq_brininsert && ii->ii_AmCache == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);

				brin_gate_rows(brin_statement_cache(idx, rel, ii), idx, ii);
				MemoryContextSwitchTo(old);
			}
		}
	}
}

/*
 * brin_swap_table
 *	  brin_swap_aminsert for the indexes of a table about to be written by
 *	  COPY, which opens them itself (with the same lock), or whose stamp
 *	  trigger fires for the first time in a statement (a partition that
 *	  rows are routed to: its indexes are open already).
 */
static void
brin_swap_table(Relation rel)
{
	List	   *indexes;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_RELATION || !rel->rd_rel->relhasindex)
		return;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), RowExclusiveLock);

		brin_swap_aminsert(idx);
		index_close(idx, NoLock);
	}
	list_free(indexes);
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

	if (outer == NULL && !(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		relid = insert_target(queryDesc->plannedstmt, &sub);
	if (OidIsValid(relid))
	{
		FastTable  *e = fast_tables ? hash_search(fast_tables, &relid, HASH_FIND, NULL) : NULL;
		bool		leaves = false;

		/* a table known not to qualify costs one lookup */
		if (e == NULL || (e->fast && !e->in_use && (leaves = leaves_default(sub, e->att))))
		{
			uint64		invals = fast_tables_inval_count;
			Relation	rel = relation_open(relid, NoLock);	/* the plan holds its lock */

			/*
			 * The entry found is current unless opening the table processed
			 * an invalidation or the table's triggers changed: else it is
			 * made again (fast_table).
			 */
			if (!(leaves && invals == fast_tables_inval_count && e->made_from == rel->trigdesc))
			{
				e = fast_table(rel);
				leaves = e != NULL && e->fast && leaves_default(sub, e->att);
			}
			if (leaves)
			{
				swap_begin(&swap, rel, e);
				active_swap = &swap;
			}
			else
				relation_close(rel, NoLock);
		}
	}
	PG_TRY();
	{
		if (prev_ExecutorStart)
			prev_ExecutorStart(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
		if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
			brin_swap_insert(queryDesc, &swap);
	}
	PG_FINALLY();
	{
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
	uint64		seq = brin_cache_seq;
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

			brin_swap_table(target);
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
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
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
		brin_cache_unpin_since(seq);
}

/*
 * cq_stamp_init
 *	  Install the write-path hooks; called from _PG_init.
 */
void
cq_stamp_init(void)
{
	CacheRegisterRelcacheCallback(fast_tables_inval, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, functions_inval, (Datum) 0);
	RegisterResourceReleaseCallback(brin_cache_resowner, NULL);
	cq_stamp_first_row_hook = brin_swap_table;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = cq_stamp_ExecutorStart;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = cq_stamp_ProcessUtility;
}
