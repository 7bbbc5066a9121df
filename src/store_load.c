/*-------------------------------------------------------------------------
 *
 * store_load.c
 *	  Batch 0 over history of an update query on the store writes every
 *	  group to the empty target.  Instead of keeping the groups in m (a
 *	  tuplestore of copies) and running the plain INSERT over it (the
 *	  executor's insert of each row, a WAL record per row), the batch's d
 *	  statement also computes each group's target row, its outputs and
 *	  HAVING as that INSERT computes them from the state row (store_fold.c's
 *	  load statement), and store_fold.c's receiver hands those rows here as
 *	  the executor makes them: they go to the target as COPY writes, a
 *	  thousand (or 64 kB) at a time by table_multi_insert (each page filled
 *	  under one lock, one WAL record per page), through a BulkInsertState.
 *
 * The rows are formed from the statement's columns without the coercions
 * of an INSERT, so the path is taken only when that changes nothing, as
 * for the table path's direct load (bulkload.c): every column of the target
 * is an output of the same type, and the target runs nothing an INSERT
 * would run besides the heap insert (no index: batch.c dropped it for the
 * load, to build it after; no trigger, rule, row-level security, CHECK,
 * generated or identity column), it is not a Citus table, and the current
 * user (the query's owner) holds INSERT on it; NOT NULL is checked here as
 * the executor checks it.  Otherwise cq_target_load_begin returns NULL and
 * the batch runs the INSERT.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/hio.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "store_load.h"
#include "citus.h"
#include "sql_builder.h"

#define LOAD_MAX_ROWS 1000
#define LOAD_MAX_BYTES 65535

struct CqTargetLoad
{
	Relation	rel;
	TupleDesc	desc;			/* a copy of rel's, never pinned (see bulkload.c's store_row), without NOT NULL */
	int		   *map;			/* per target attribute: its statement column, -1 dropped */
	int			having_col;		/* statement column of HAVING, -1 without */
	TupleTableSlot *slots[LOAD_MAX_ROWS];
	int			nused;
	Size		bytes;
	CommandId	cid;
	BulkInsertState bis;
	MemoryContext cxt;
	int64		rows;
};

/*
 * cq_target_load_begin
 *	  Start writing the rows of a statement whose result is result (names:
 *	  the query's output names, columns first .. first + nnames - 1; then,
 *	  with having, HAVING as a boolean) into the empty target, or NULL when
 *	  the path does not apply (see the file header): nothing was done.
 */
CqTargetLoad *
cq_target_load_begin(Oid target, TupleDesc result, int first, char **names, int nnames,
					 bool having)
{
	Relation	rel;
	TupleDesc	desc;
	CqTargetLoad *tl;
	int			used = 0;
	BulkInsertState bis;

	if (!OidIsValid(target) || result->natts != first + nnames + (having ? 1 : 0) ||
		(having && TupleDescAttr(result, first + nnames)->atttypid != BOOLOID))
		return NULL;
	rel = table_open(target, RowExclusiveLock);
	desc = RelationGetDescr(rel);
	if (!cq_rel_takes_heap_inserts(rel) || RelationGetIndexList(rel) != NIL ||
		cq_citus_kind(target) != CQ_CITUS_NONE ||
		pg_class_aclcheck(target, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	tl = palloc0(sizeof(CqTargetLoad));
	tl->map = palloc(sizeof(int) * desc->natts);
	/* each attribute given by exactly one output of its type, by name */
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Form_pg_attribute col;
		int			k;

		tl->map[i] = -1;
		if (att->attisdropped)
			continue;
		for (k = 0; k < nnames; k++)
			if (strcmp(names[k], NameStr(att->attname)) == 0)
				break;
		col = k < nnames ? TupleDescAttr(result, first + k) : NULL;
		if (col == NULL || col->atttypid != att->atttypid ||
			(att->atttypmod != -1 && col->atttypmod != att->atttypmod))
		{
			table_close(rel, NoLock);
			return NULL;
		}
		tl->map[i] = first + k;
		used++;
	}
	if (used != nnames)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	tl->rel = rel;
	tl->desc = CreateTupleDescCopy(desc);
	tl->having_col = having ? first + nnames : -1;
	tl->cid = GetCurrentCommandId(true);
	tl->cxt = CurrentMemoryContext;
	/* the page being filled stays pinned; no ring (see bulkload.c) */
	bis = GetBulkInsertState();
	FreeAccessStrategy(bis->strategy);
	bis->strategy = NULL;
	tl->bis = bis;
	return tl;
}

/*
 * flush
 *	  Insert the buffered rows.
 */
static void
flush(CqTargetLoad *tl)
{
	if (tl->nused == 0)
		return;
	table_multi_insert(tl->rel, tl->slots, tl->nused, tl->cid, 0, tl->bis);
	for (int i = 0; i < tl->nused; i++)
		ExecClearTuple(tl->slots[i]);
	tl->nused = 0;
	tl->bytes = 0;
}

/*
 * cq_target_load_row
 *	  The target row of a statement row (values/isnull), unless HAVING
 *	  leaves the group out: formed as a tuple of its own (the statement's
 *	  values last until its next row), after the executor's NOT NULL
 *	  check, and inserted with the rows buffered before it when the buffer
 *	  is full.
 */
void
cq_target_load_row(CqTargetLoad *tl, Datum *values, bool *isnull)
{
	TupleDesc	desc = tl->desc;
	TupleDesc	reldesc = RelationGetDescr(tl->rel);	/* desc, a copy, has no NOT NULL */
	TupleTableSlot *slot;

	if (tl->having_col >= 0 && (isnull[tl->having_col] || !DatumGetBool(values[tl->having_col])))
		return;
	if (tl->slots[tl->nused] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(tl->cxt);

		tl->slots[tl->nused] = MakeSingleTupleTableSlot(desc, table_slot_callbacks(tl->rel));
		MemoryContextSwitchTo(old);
	}
	slot = tl->slots[tl->nused];
	ExecClearTuple(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		int			c = tl->map[i];

		slot->tts_values[i] = c < 0 ? (Datum) 0 : values[c];
		slot->tts_isnull[i] = c < 0 || isnull[c];
		if (slot->tts_isnull[i] && TupleDescAttr(reldesc, i)->attnotnull)
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
							NameStr(TupleDescAttr(desc, i)->attname), RelationGetRelationName(tl->rel)),
					 errtablecol(tl->rel, i + 1)));
	}
	tl->bytes += heap_compute_data_size(desc, slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
	ExecMaterializeSlot(slot);
	tl->rows++;
	if (++tl->nused == LOAD_MAX_ROWS || tl->bytes >= LOAD_MAX_BYTES)
		flush(tl);
}

/*
 * cq_target_load_end
 *	  Insert the rows still buffered, release the load; returns the rows
 *	  written.
 */
int64
cq_target_load_end(CqTargetLoad *tl)
{
	int64		rows = tl->rows;

	flush(tl);
	FreeBulkInsertState(tl->bis);
	table_finish_bulk_insert(tl->rel, 0);
	for (int i = 0; i < LOAD_MAX_ROWS && tl->slots[i]; i++)
		ExecDropSingleTupleTableSlot(tl->slots[i]);
	table_close(tl->rel, NoLock);
	CommandCounterIncrement();
	return rows;
}
