/*-------------------------------------------------------------------------
 *
 * brin_heap.c
 *	  A COPY into a tracked source without the executor's per-row index
 *	  work: the rows meet the BRIN index on cq_xid right after the heap
 *	  took them, in the table's access method, instead of through
 *	  ExecInsertIndexTuples.  stamp.c puts it on a COPY's write path.
 *
 * Why.  A COPY into a table with an index calls, for every row,
 * ExecInsertIndexTuples (whose gate, brin_row_gate, then finds nearly every
 * row in a range without an index tuple and sends it nowhere),
 * ExecARInsertTriggers and list_free (CopyMultiInsertBufferFlush calls them
 * for each row of a table with indexes): about 150 instructions a row, the
 * largest part of what a tracked source cost a COPY above an untracked
 * table with the same column.  For the one index of a tracked source that
 * is a BRIN index on cq_xid with the gate, that work is what
 * cq_brin_row_skips does for the row's TID, and index_insert for the few
 * rows whose range has an index tuple.
 *
 * How.  While the COPY runs (cq_brin_heap_begin .. cq_brin_heap_end), the
 * table's relation cache entry has
 * - an access method that is heap's with tuple_insert and multi_insert
 *   wrapped (cq_brin_gate_am): heap's, then each row through the gate and,
 *   unless it skips, index_insert (cq_brininsert reads the row's cq_xid from
 *   the table);
 * - relhasindex false (stamp.c), so that the COPY's ResultRelInfo opens no
 *   index (ExecOpenIndices returns at once) and the executor does nothing
 *   per row for indexes.
 * Every row that enters the table's heap through the access method while
 * it is installed meets the index in it, whoever inserts it (user code the
 * COPY runs as well: its own statements open the index too, stamp.c's
 * nested_begin, and a row given to the index twice only widens its summary
 * by what it holds).  The exactness argument is brininsert's and
 * range_has_tuple's: the row is in the heap before its range's revmap entry
 * is read.
 *
 * What could take the wrapper away: a relation cache rebuild of the table
 * while the COPY runs (an invalidation: another session's GRANT or ANALYZE,
 * say) installs heap's access method again.  The relation cache callback
 * (brin_heap_inval), which runs right after every rebuild and before
 * anything can insert again, puts it back.  As a last guard, the end of the
 * COPY compares the rows the wrapper saw with the rows the COPY reports:
 * fewer is an error (the COPY's rows roll back), never a row left out of
 * the index.
 *
 * Memory: a gate lives in the memory that is current at its begin (the
 * COPY's), its index cache and revmap pin as cq_brin_statement_begin's
 * (released at the COPY's end, cq_brin_unpin_since).  The index stays
 * locked (RowExclusiveLock) until the transaction ends, as an INSERT's does
 * (stamp.c, keep_index_locks).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/xact.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "executor/tuptable.h"
#include "utils/rel.h"

#include "brin_heap.h"
#include "brin_insert.h"
#include "inval.h"

/*
 * brin_heap_inval
 *	  Relation cache callback: a rebuilt entry of a table being written by
 *	  a gated statement gets cq_brin_gate_am back.
 */
static void
brin_heap_inval(Datum arg, Oid relid)
{
	for (CqBrinHeap *g = cq_brin_gates; g != NULL; g = g->next)
		if ((!OidIsValid(relid) || relid == RelationGetRelid(g->heap)) &&
			g->heap->rd_tableam == GetHeapamTableAmRoutine())
			g->heap->rd_tableam = cq_brin_gate_am();
}

/*
 * gate_find
 *	  The innermost gate of a table, or NULL.
 */
static CqBrinHeap *
gate_find(Oid relid)
{
	for (CqBrinHeap *g = cq_brin_gates; g != NULL; g = g->next)
		if (RelationGetRelid(g->heap) == relid)
			return g;
	return NULL;
}

/*
 * cq_brin_heap_begin
 *	  Gate the rows a COPY writes into heap, whose only index is index:
 *	  when it is a BRIN index on xid8 that takes the gate (as the row of a
 *	  single-row INSERT may wait for it, cq_brin_row_can_wait).  Returns
 *	  NULL (nothing done) otherwise.  The caller then hides the table's
 *	  indexes from the COPY (relhasindex) until cq_brin_heap_end.
 */
CqBrinHeap *
cq_brin_heap_begin(Relation heap, Oid index)
{
	Relation	idx;
	CqBrinHeap *g;

	if (heap->rd_rel->relkind != RELKIND_RELATION)
		return NULL;
	idx = index_open(index, RowExclusiveLock);
	cq_brin_swap_aminsert(idx);
	g = cq_brin_heap_begin_open(heap, idx, BuildIndexInfo(idx));
	if (g == NULL)
		index_close(idx, NoLock);
	else
		g->close = true;
	return g;
}

/*
 * cq_brin_heap_begin_open
 *	  cq_brin_heap_begin for an index the caller opened, with its IndexInfo
 *	  (an INSERT's, whose ResultRelInfo the caller then gives no index until
 *	  cq_brin_heap_end; the caller closes the index).
 */
CqBrinHeap *
cq_brin_heap_begin_open(Relation heap, Relation idx, IndexInfo *ii)
{
	CqBrinHeap *g;

	/* left by a statement that failed (gated_gone): no gate goes on */
	if (heap->rd_tableam == cq_brin_gate_am() && gate_find(RelationGetRelid(heap)) == NULL)
		heap->rd_tableam = GetHeapamTableAmRoutine();
	if (heap->rd_rel->relkind != RELKIND_RELATION || heap->rd_tableam != GetHeapamTableAmRoutine() ||
		ii->ii_NumIndexAttrs != 1 || ii->ii_IndexAttrNumbers[0] <= 0 || !cq_brin_row_can_wait(idx, ii))
		return NULL;
	cq_brin_statement_begin(idx, heap, ii);
	if (!cq_brin_has_gate(ii))
		return NULL;			/* no gate after all: the statement's own index path */
	g = palloc0(sizeof(CqBrinHeap));
	g->att = idx->rd_index->indkey.values[0];
	g->heap = heap;
	g->index = idx;
	g->info = ii;
	g->level = GetCurrentTransactionNestLevel();
	g->next = cq_brin_gates;
	cq_brin_gates = g;
	heap->rd_tableam = cq_brin_gate_am();
	return g;
}

/*
 * cq_brin_heap_end
 *	  End a gate: heap's access method back (unless an outer statement's
 *	  gate of the table goes on), the index closed if cq_brin_heap_begin
 *	  opened it (its lock kept) and aborting is false.  rows: the rows the
 *	  statement reports it inserted, or -1 (it failed): more than the gate
 *	  saw is an error.
 */
void
cq_brin_heap_end(CqBrinHeap *g, int64 rows, bool aborting)
{
	uint64		seen = g->rows;
	const char *name = pstrdup(RelationGetRelationName(g->heap));

	for (CqBrinHeap **p = &cq_brin_gates; *p != NULL; p = &(*p)->next)
	{
		if (*p == g)
		{
			*p = g->next;
			break;
		}
	}
	if (g->heap->rd_tableam == cq_brin_gate_am() && gate_find(RelationGetRelid(g->heap)) == NULL)
		g->heap->rd_tableam = GetHeapamTableAmRoutine();
	if (g->close && !aborting)
		index_close(g->index, NoLock);
	pfree(g);
	if (rows >= 0 && (uint64) rows > seen)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("pg_cq: %lld rows written into table \"%s\", %llu seen by its BRIN index",
						(long long) rows, name, (unsigned long long) seen)));
}

/*
 * A multi-row INSERT whose rows meet the index in the table's access method
 * (cq_brin_heap_insert).
 */
typedef struct GatedInsert
{
	EState	   *estate;			/* the statement's */
	ResultRelInfo *rri;			/* its table's: ri_NumIndices 0 meanwhile */
	CqBrinHeap *gate;
	MemoryContextCallback gone; /* on es_query_cxt */
	struct GatedInsert *next;
} GatedInsert;

/* the statements whose rows meet the index in the access method, innermost first */
static GatedInsert *gated_inserts = NULL;

/*
 * gated_unlink
 *	  Take a statement's entry out of gated_inserts, if there.
 */
static bool
gated_unlink(GatedInsert *gi)
{
	for (GatedInsert **p = &gated_inserts; *p != NULL; p = &(*p)->next)
	{
		if (*p == gi)
		{
			*p = gi->next;
			return true;
		}
	}
	return false;
}

/*
 * gated_gone
 *	  Memory context callback: the statement's memory, where its entry and
 *	  gate are, goes.  Normally they were taken out before
 *	  (cq_brin_heap_insert_end); an error's abort deletes the executor's
 *	  memory of its portals before the abort callbacks run
 *	  (brin_heap_abort): then they are taken out of the lists here, and the
 *	  table gets heap's access method back unless an outer statement's gate
 *	  of it goes on.  The relation cache entry is still there: the abort
 *	  releases the executor's references to it only after (the resource
 *	  owner's release follows AtAbort_Portals and AtSubAbort_Portals, and
 *	  SPI's memory, deleted after the release, was ended by brin_heap_abort
 *	  before).  Left as cq_brin_gate_am's, the table's access method failed
 *	  heap_getnext ("only heap AM is supported") in this backend until a
 *	  row was inserted again: brin_summarize_new_values and VACUUM's BRIN
 *	  summarization (session 43, sql/222).
 */
static void
gated_gone(void *arg)
{
	GatedInsert *gi = arg;
	Relation	heap = gi->gate->heap;

	if (!gated_unlink(gi))
		return;
	for (CqBrinHeap **p = &cq_brin_gates; *p != NULL; p = &(*p)->next)
	{
		if (*p == gi->gate)
		{
			*p = gi->gate->next;
			break;
		}
	}
	if (heap->rd_tableam == cq_brin_gate_am() && gate_find(RelationGetRelid(heap)) == NULL)
		heap->rd_tableam = GetHeapamTableAmRoutine();
}

/*
 * brin_heap_abort
 *	  The (sub)transaction at nesting level "level" aborts: the gates its
 *	  statements made that are still there (their memory too: gated_gone)
 *	  end, innermost first, before the abort releases the relations they
 *	  name (and may free a relation cache entry whose table it created):
 *	  heap's access method back where no outer statement's gate of the
 *	  table goes on, the indexes left to the abort.  A COPY's gate ended
 *	  already (stamp.c ends it while the error passes).
 */
static void
brin_heap_abort(int level)
{
	while (gated_inserts != NULL && gated_inserts->gate->level >= level)
		gated_inserts = gated_inserts->next;
	while (cq_brin_gates != NULL && cq_brin_gates->level >= level)
		cq_brin_heap_end(cq_brin_gates, -1, true);
}

static void
brin_heap_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		brin_heap_abort(0);
}

static void
brin_heap_subxact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		brin_heap_abort(GetCurrentTransactionNestLevel());
}

/*
 * cq_brin_heap_insert
 *	  A multi-row INSERT (stamp.c: on the fast path, its ResultRelInfo's
 *	  only index opened) into a table whose only index is the BRIN index
 *	  on cq_xid with the gate: its rows meet the index in
 *	  the table's access method (brin_heap.c), and its ResultRelInfo has no
 *	  index until the statement's ExecutorFinish (cq_brin_heap_insert_end), so that
 *	  ExecInsert calls no ExecInsertIndexTuples, whose gate then sent
 *	  nearly every row nowhere (about 150 instructions a row).  A row meets
 *	  the index at the same point as before, right after the heap took it,
 *	  before AFTER triggers, WITH CHECK OPTIONs and RETURNING.  In the
 *	  statement's memory.
 */
bool
cq_brin_heap_insert(EState *estate, ResultRelInfo *rri)
{
	CqBrinHeap *gate = cq_brin_heap_begin_open(rri->ri_RelationDesc, rri->ri_IndexRelationDescs[0],
											   rri->ri_IndexRelationInfo[0]);
	GatedInsert *gi;

	if (gate == NULL)
		return false;
	gi = palloc(sizeof(GatedInsert));
	gi->estate = estate;
	gi->rri = rri;
	gi->gate = gate;
	gi->gone.func = gated_gone;
	gi->gone.arg = gi;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &gi->gone);
	gi->next = gated_inserts;
	gated_inserts = gi;
	rri->ri_NumIndices = 0;
	return true;
}

/*
 * cq_brin_heap_insert_end
 *	  At a statement's ExecutorFinish (check: the rows it reports inserted
 *	  against the gate's count) or ExecutorEnd: end its gate (cq_brin_heap_insert),
 *	  its table's index back in its ResultRelInfo.
 */
void
cq_brin_heap_insert_end(EState *estate, bool check)
{
	GatedInsert *gi;

	if (likely(gated_inserts == NULL))
		return;
	for (gi = gated_inserts; gi != NULL && gi->estate != estate; gi = gi->next)
		;
	if (gi == NULL)
		return;
	gated_unlink(gi);
	gi->rri->ri_NumIndices = 1;
	cq_brin_heap_end(gi->gate, check ? (int64) estate->es_processed : -1, false);
}

/*
 * cq_brin_heap_init
 *	  Register the relation cache callback; called from cq_stamp_init.
 */
void
cq_brin_heap_init(void)
{
	cq_relcache_callback(brin_heap_inval, (Datum) 0);
	RegisterXactCallback(brin_heap_xact, NULL);
	RegisterSubXactCallback(brin_heap_subxact, NULL);
}
