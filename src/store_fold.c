/*-------------------------------------------------------------------------
 *
 * store_fold.c
 *	  A batch of a query on the shared-memory state store (issue 15): the
 *	  fold of its new rows into the store (lookups, the merge of existing
 *	  groups, the late filter and eviction, the ephemeral relations m and
 *	  x for sink.c's statements; its statements are store_sql.c's), the
 *	  rebuild, the image in the state table and the recovery from it, and
 *	  the move to the table path beyond the budget.  The store itself (the
 *	  area, the group tables, the overlay and its publication at commit) is
 *	  store.c; see its header for the design.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "nodes/params.h"
#include "lib/dshash.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"
#include "utils/wait_event.h"

#include "store.h"
#include "store_private.h"
#include "store_fold.h"
#include "guc.h"
#include "shmem.h"
#include "security.h"
#include "sql_builder.h"
#include "catalog.h"
#include "aggregates.h"
#include "state.h"
#include "sink.h"
#include "merge.h"
#include "delta.h"
#include "deltagg.h"
#include "delta_scan.h"
#include "store_load.h"
#include "store_update.h"
#include "delta_plan.h"
#include "rowload.h"

/*
 * register_enr
 *	  Make a tuplestore readable by name in this SPI connection's statements.
 */
static void
register_enr(const char *name, TupleDesc desc, Tuplestorestate *ts)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));

	enr->md.name = pstrdup(name);
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = tuplestore_tuple_count(ts);
	enr->reldata = ts;
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "pg_cq: could not register relation %s", name);
}

static void
unregister_enr(const char *name)
{
	(void) SPI_unregister_relation(name);
}

/*
 * late
 *	  Is a state row of a window the watermark wm has closed (e <= wm)?
 *	  Timestamps of either kind compare as their int64 values: the
 *	  watermark of a timestamp column is its value at UTC.
 */
static bool
late(CqStore *st, Datum *values, bool *nulls, bool has_wm, TimestampTz wm)
{
	if (st->e_att == 0 || !has_wm || nulls[st->e_att - 1])
		return false;
	return DatumGetInt64(values[st->e_att - 1]) <= wm;
}

/*
 * run_delta
 *	  Run a d statement; returns its result (state row layout).
 */
static SPITupleTable *
run_delta(const char *sql, Datum *params, const char *nulls, uint64 *n)
{
	Oid			types[4] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};

	if (SPI_execute_plan(cq_spi_plan(sql, 4, types), params, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "pg_cq: delta statement failed");
	*n = SPI_processed;
	return SPI_tuptable;
}

static HeapTuple put_new(CqStore *st, bool fresh, StoreRef *ref, Datum *values, bool *isnull);

/*
 * cq_store_rebuild
 *	  Refill a replaced store with the partial aggregates of every row
 *	  processed so far (delta_sql over the range given), keeping the
 *	  windows still open at the last batch's watermark (the argument of
 *	  rebuild_state in batch.c).  Returns the number of rows.
 */
int64
cq_store_rebuild(CqStore *st, const char *delta_sql, Datum *params, const char *nulls,
				 bool has_wm, TimestampTz wm)
{
	uint64		n;
	SPITupleTable *tt = run_delta(delta_sql, params, nulls, &n);
	Datum	   *values = palloc(sizeof(Datum) * tt->tupdesc->natts);
	bool	   *isnull = palloc(sizeof(bool) * tt->tupdesc->natts);
	int64		rows = 0;

	bool		fresh = st->table == NULL && st->nitems == 0;

	Assert(st->replace);
	for (uint64 i = 0; i < n; i++)
	{
		StoreRef	ref;

		heap_deform_tuple(tt->vals[i], tt->tupdesc, values, isnull);
		if (late(st, values, isnull, has_wm, wm))
			continue;
		cq_store_set_h(st, values, isnull);
		if (!fresh)
			cq_store_lookup(st, values, isnull, &ref);
		(void) put_new(st, fresh, &ref, values, isnull);
		rows++;
	}
	SPI_freetuptable(tt);
	return rows;
}

/*
 * BatchCount: the batch's rows and event-time statistics summed over the
 * rows of d, as the SQL path's batch statement computes them from its d
 * (metrics_select in plan.c): sum(n); min(et_min), max(et_max); the
 * average epoch sum(et_sum) / sum(et_n), added in d's order as sum(float8)
 * does, through to_timestamp() kept inside the timestamp range.
 */
typedef struct BatchCount
{
	int64		rows;
	bool		has_et;
	int64		et_min;
	int64		et_max;
	double		et_sum;
	int64		et_n;
} BatchCount;

/*
 * count_row
 *	  Add a row of d (values/isnull, the state row then with et_stats its
 *	  four statistics) to c.
 */
static void
count_row(CqStore *st, const CqStoreSql *sql, BatchCount *c, Datum *values, bool *isnull)
{
	int			a = st->desc->natts;

	if (!isnull[st->n_att - 1])
		c->rows += DatumGetInt64(values[st->n_att - 1]);
	if (!sql->et_stats || isnull[a])
		return;
	/* et_min is NULL exactly when the group had no finite event time */
	if (!c->has_et || DatumGetInt64(values[a]) < c->et_min)
		c->et_min = DatumGetInt64(values[a]);
	if (!c->has_et || DatumGetInt64(values[a + 1]) > c->et_max)
		c->et_max = DatumGetInt64(values[a + 1]);
	c->et_sum = c->has_et ? c->et_sum + DatumGetFloat8(values[a + 2]) : DatumGetFloat8(values[a + 2]);
	c->et_n += DatumGetInt64(values[a + 3]);
	c->has_et = true;
}

/*
 * count_done
 *	  The batch's row count and event-time statistics into metrics.
 */
static void
count_done(BatchCount *c, CqStoreMetrics *metrics)
{
	double		x;

	metrics->input_rows = c->rows;
	metrics->has_event_time = c->has_et;
	if (!c->has_et)
		return;
	metrics->et_min = c->et_min;
	metrics->et_max = c->et_max;
	x = c->et_sum / (double) c->et_n;
	if (x > 9224318015999.0)
		x = 9224318015999.0;
	else if (x < -210866803200.0)
		x = -210866803200.0;
	metrics->et_avg = DatumGetTimestampTz(DirectFunctionCall1(float8_timestamptz, Float8GetDatum(x)));
}

/*
 * m_desc
 *	  The state row with _sid and _ins (m), or plain (x, cq_all).
 */
static TupleDesc
m_desc(CqStore *st, bool with_flags)
{
	int			natts = st->desc->natts;
	TupleDesc	desc = CreateTemplateTupleDesc(natts + (with_flags ? 2 : 0));

	for (int i = 0; i < natts; i++)
		TupleDescCopyEntry(desc, i + 1, st->desc, i + 1);
	if (with_flags)
	{
		TupleDescInitEntry(desc, natts + 1, "_sid", INT8OID, -1, 0);
		TupleDescInitEntry(desc, natts + 2, "_ins", BOOLOID, -1, 0);
	}
	for (int i = 0; i < desc->natts; i++)
		TupleDescAttr(desc, i)->attnotnull = false;
	return desc;
}

/*
 * pairs_desc
 *	  The pairs' relation of the merge statement: _k, the stored row, _nn,
 *	  _np<i>.
 */
static TupleDesc
pairs_desc(CqStore *st)
{
	int			natts = st->desc->natts;
	TupleDesc	mpdesc = CreateTemplateTupleDesc(1 + natts + 1 + st->nparts);

	TupleDescInitEntry(mpdesc, 1, "_k", INT4OID, -1, 0);
	for (int i = 0; i < natts; i++)
		TupleDescCopyEntry(mpdesc, i + 2, st->desc, i + 1);
	TupleDescInitEntry(mpdesc, natts + 2, "_nn", INT8OID, -1, 0);
	for (int p = 0; p < st->nparts; p++)
	{
		TupleDescCopyEntry(mpdesc, natts + 3 + p, st->desc, st->p_att[p]);
		namestrcpy(&TupleDescAttr(mpdesc, natts + 2 + p)->attname, psprintf("_np%d", p + 1));
	}
	for (int i = 0; i < mpdesc->natts; i++)
		TupleDescAttr(mpdesc, i)->attnotnull = false;
	return mpdesc;
}

/*
 * merge_value
 *	  One state column merged as its template does (see setup_merge in
 *	  store.c): sv and sn point to the stored value, replaced by the merged
 *	  one; nv/nn the new partial.  + is strict; coalesce(a + b, a, b) takes the
 *	  non-NULL one; least(new, stored) and greatest(new, stored) skip NULLs
 *	  and keep the first (new) of equal values, as ExecEvalMinMax does.
 */
static inline void
merge_value(CqMergeKind kind, FmgrInfo *fn, Oid coll, Datum *sv, bool *sn, Datum nv, bool nn)
{
	switch (kind)
	{
		case CQ_MERGE_ADD:
			if (*sn || nn)
				*sn = true;
			else
				*sv = FunctionCall2Coll(fn, coll, *sv, nv);
			break;
		case CQ_MERGE_SUM:
			if (nn)
				break;
			if (*sn)
			{
				*sv = nv;
				*sn = false;
			}
			else
				*sv = FunctionCall2Coll(fn, coll, *sv, nv);
			break;
		case CQ_MERGE_LEAST:
		case CQ_MERGE_GREATEST:
			if (nn)
				break;
			if (*sn)
			{
				*sv = nv;
				*sn = false;
			}
			else
			{
				int32		cmp = DatumGetInt32(FunctionCall2Coll(fn, coll, nv, *sv));

				/* the result starts as new; stored replaces it only if strictly better */
				if (kind == CQ_MERGE_LEAST ? cmp <= 0 : cmp >= 0)
					*sv = nv;
			}
			break;
		case CQ_MERGE_OTHER:
			elog(ERROR, "pg_cq: no merge in C for this state column");
	}
}

/*
 * merge_row
 *	  The merged row of an existing group (stored, state row layout) and
 *	  the new partials (values/isnull of d), in C: the stored row with n
 *	  and each part merged, as the merge statement computes it.  In
 *	  the current memory context (cq_store_put copies it into the area).
 */
static HeapTuple
merge_row(CqStore *st, HeapTuple stored, Datum *values, bool *isnull, Datum *sv, bool *sn)
{
	int			na = st->n_att - 1;

	heap_deform_tuple(stored, st->desc, sv, sn);
	if (sn[na] || isnull[na])
		sn[na] = true;
	else
		sv[na] = FunctionCall2(&st->nplus, sv[na], values[na]);
	for (int p = 0; p < st->nparts; p++)
	{
		int			a = st->p_att[p] - 1;

		merge_value(st->pkind[p], &st->pfn[p], st->pcoll[p], &sv[a], &sn[a], values[a], isnull[a]);
	}
	return heap_form_tuple(st->desc, sv, sn);
}

/*
 * put_new
 *	  Put the row of a group of a d statement's result, which lookup did
 *	  not find, or without lookup when the store is empty (fresh: no
 *	  published table, nothing in the overlay): d has one row per group by
 *	  GROUP BY's equality, the store's.  A store that started empty in
 *	  this transaction takes the row straight into the table it builds
 *	  (cq_store_put_built); the row returned is then valid until the next
 *	  put; else it is the overlay's.
 */
static HeapTuple
put_new(CqStore *st, bool fresh, StoreRef *ref, Datum *values, bool *isnull)
{
	HeapTuple	t;
	HeapTuple	ov;

	if (fresh && (t = cq_store_put_built(st, values, isnull)) != NULL)
		return t;
	t = heap_form_tuple(st->desc, values, isnull);
	if (fresh)
	{
		memset(ref, 0, sizeof(*ref));
		ref->hash = cq_store_key_hash(st, values, isnull);
		ref->node = InvalidDsaPointer;
	}
	ov = cq_store_put(st, ref, t);
	heap_freetuple(t);
	return ov;
}

/*
 * MOut: the changed rows of a fold as the ephemeral relation m of the
 * target statement (state row, _sid, _ins; plain: the state row alone,
 * for batch 0's INSERT, which reads no flag), written as they are made.
 */
typedef struct MOut
{
	Tuplestorestate *ts;		/* NULL: no target statement */
	TupleDesc	desc;			/* m_desc(st, !plain) */
	bool		plain;			/* no _sid, _ins: the state row copied */
	Datum	   *values;
	bool	   *isnull;
	int64		sid;
	int64		ins;			/* rows of groups new to the state (_ins) */
} MOut;

/*
 * put_m
 *	  A changed row (values/isnull in the state row layout, formed as t in
 *	  the state row layout) into m.
 */
static void
put_m(CqStore *st, MOut *mo, HeapTuple t, Datum *values, bool *isnull, bool ins)
{
	int			natts = st->desc->natts;

	if (mo == NULL || mo->ts == NULL)
		return;
	if (mo->plain)
	{
		/* the row made for the overlay, copied: not formed a second time */
		tuplestore_puttuple(mo->ts, t);
		return;
	}
	memcpy(mo->values, values, sizeof(Datum) * natts);
	memcpy(mo->isnull, isnull, sizeof(bool) * natts);
	mo->values[natts] = Int64GetDatum(++mo->sid);
	mo->isnull[natts] = false;
	mo->values[natts + 1] = BoolGetDatum(ins);
	mo->isnull[natts + 1] = false;
	mo->ins += ins ? 1 : 0;
	tuplestore_putvalues(mo->ts, mo->desc, mo->values, mo->isnull);
}

/*
 * FoldState: the merge of a d statement's rows into the overlay, row by
 * row as the statement makes them (fold_row, called by FoldReceiver),
 * then the merge statement over the pairs (fold_end).
 */
typedef struct FoldState
{
	CqStore    *st;
	const CqStoreSql *sql;
	bool		has_wm;
	TimestampTz wm;
	MOut	   *mo;				/* NULL: no target statement */
	CqStoreMetrics *metrics;
	MemoryContext cxt;			/* where the fold's pairs and lists live */
	MemoryContext row_cxt;		/* what one row of d needs, reset per row */
	Datum	   *values;			/* a row of d, then room for m's flags */
	bool	   *isnull;
	Datum	   *sv;				/* merge_row's stored row */
	bool	   *sn;
	BatchCount	count;
	bool		fresh;			/* no published table, empty overlay: no lookups */
	bool		ov_empty;		/* empty overlay: lookups in the published table only */
	List	   *pairs;			/* StoreRef * of existing groups for the merge statement */
	TupleDesc	mpdesc;
	Tuplestorestate *ts;		/* their rows (cq_mp) */
	uint64		rows;			/* rows of d */
	int64		changed;		/* groups put (m) */
	int			nstate;			/* d's columns the store takes (state row, statistics) */
	CqTargetLoad *tl;			/* batch 0's target rows after them (store_load.c), or NULL */
} FoldState;

/*
 * fold_begin
 *	  Start the merge of a d statement's rows (see merge_row and fold_row).
 */
static void
fold_begin(FoldState *fs, CqStore *st, const CqStoreSql *sql, bool has_wm, TimestampTz wm,
		   MOut *mo, CqStoreMetrics *metrics)
{
	int			natts = st->desc->natts;
	int			room = natts + 2 + (sql->et_stats ? 4 : 0);

	memset(fs, 0, sizeof(*fs));
	fs->st = st;
	fs->sql = sql;
	fs->has_wm = has_wm;
	fs->wm = wm;
	fs->mo = mo;
	fs->metrics = metrics;
	fs->cxt = CurrentMemoryContext;
	fs->row_cxt = AllocSetContextCreate(fs->cxt, "pg_cq fold row", ALLOCSET_SMALL_SIZES);
	fs->values = palloc(sizeof(Datum) * room);
	fs->isnull = palloc(sizeof(bool) * room);
	fs->sv = palloc(sizeof(Datum) * natts);
	fs->sn = palloc(sizeof(bool) * natts);
	fs->fresh = st->table == NULL && st->nitems == 0;
	fs->ov_empty = st->nitems == 0;
	fs->mpdesc = pairs_desc(st);
	fs->nstate = natts + (sql->et_stats ? 4 : 0);
	cq_store_setup_merge(st, sql->merge_kinds);
}

/*
 * keep_pair
 *	  An existing group the merge statement merges (fold_end): its
 *	  reference kept in fs->cxt, with a copy of the header over its row
 *	  (ref->tup lives in the row's context), and the pair (stored row, new
 *	  partials) written into cq_mp.
 */
static void
keep_pair(FoldState *fs, StoreRef *ref, Datum *values, bool *isnull)
{
	CqStore    *st = fs->st;
	int			natts = st->desc->natts;
	TupleDesc	mpdesc = fs->mpdesc;
	Datum	   *pv = palloc(sizeof(Datum) * mpdesc->natts);
	bool	   *pn = palloc(sizeof(bool) * mpdesc->natts);
	MemoryContext old;
	StoreRef   *keep;

	pv[0] = Int32GetDatum(list_length(fs->pairs));
	pn[0] = false;
	heap_deform_tuple(ref->tup, st->desc, pv + 1, pn + 1);
	pv[natts + 1] = values[st->n_att - 1];
	pn[natts + 1] = isnull[st->n_att - 1];
	for (int p = 0; p < st->nparts; p++)
	{
		pv[natts + 2 + p] = values[st->p_att[p] - 1];
		pn[natts + 2 + p] = isnull[st->p_att[p] - 1];
	}
	old = MemoryContextSwitchTo(fs->cxt);
	if (fs->ts == NULL)
		fs->ts = tuplestore_begin_heap(false, false, work_mem);
	keep = palloc(sizeof(StoreRef) + sizeof(HeapTupleData));
	*keep = *ref;
	keep->tup = (HeapTuple) (keep + 1);
	*keep->tup = *ref->tup;
	fs->pairs = lappend(fs->pairs, keep);
	MemoryContextSwitchTo(old);
	tuplestore_puttuple(fs->ts, heap_form_tuple(mpdesc, pv, pn));
}

/*
 * fold_row
 *	  One row of d (values/isnull: the state row, then with et_stats its
 *	  four statistics; writable, room for m's flags): counted, then left
 *	  out when late (e <= wm; returns false), put as it is when its group
 *	  is new, merged in C (merge_row) when every column allows it, else
 *	  kept for the merge statement.  d has one row per group by GROUP BY's equality,
 *	  the store's: a fresh store needs no lookup, and when the overlay was
 *	  empty as the fold began, none of d's groups can be in it.
 */
static bool
fold_row(FoldState *fs, Datum *values, bool *isnull)
{
	CqStore    *st = fs->st;
	StoreRef	ref;
	MemoryContext old;
	bool		put = true;

	/*
	 * What the row needs (the header over a published row, the merged
	 * values, the row formed before put copies it into the overlay) is
	 * freed with the next row: kept until the end of the fold, they were
	 * ~250 bytes a changed group (bench/README.md, "Private memory of a
	 * batch")
	 */
	MemoryContextReset(fs->row_cxt);
	old = MemoryContextSwitchTo(fs->row_cxt);
	fs->rows++;
	if (fs->sql->counts)
		count_row(st, fs->sql, &fs->count, values, isnull);
	if (late(st, values, isnull, fs->has_wm, fs->wm))
	{
		fs->metrics->dropped++;
		put = false;
	}
	else
	{
		cq_store_set_h(st, values, isnull);
		if (!fs->fresh && fs->ov_empty)
			cq_store_lookup_published(st, values, isnull, &ref);
		else if (!fs->fresh)
			cq_store_lookup(st, values, isnull, &ref);
		if (fs->fresh || ref.tup == NULL)
		{
			HeapTuple	t = put_new(st, fs->fresh, &ref, values, isnull);

			fs->changed++;
			put_m(st, fs->mo, t, values, isnull, true);
			fs->metrics->inserted++;
		}
		else if (st->cmerge)
		{
			HeapTuple	t = merge_row(st, ref.tup, values, isnull, fs->sv, fs->sn);

			/*
			 * m first: sv's by-reference values point into the stored row,
			 * which put frees when it is the overlay's and the merged row
			 * has another size (cq_store_own_row; sql/139)
			 */
			put_m(st, fs->mo, t, fs->sv, fs->sn, false);
			(void) cq_store_put(st, &ref, t);
			fs->changed++;
		}
		else
			keep_pair(fs, &ref, values, isnull);
	}
	MemoryContextSwitchTo(old);
	return put;
}

/*
 * fold_end
 *	  The batch's counts, then the existing groups not merged in C merged
 *	  by the merge statement (the aggregates' own merge expressions).
 *	  Returns the number of groups put (m).
 */
static int64
fold_end(FoldState *fs)
{
	CqStore    *st = fs->st;
	Datum	   *values = fs->values;
	bool	   *isnull = fs->isnull;
	double		t0 = cq_store_cpu_ms();

	count_done(&fs->count, fs->metrics);
	if (fs->pairs != NIL)
	{
		SPITupleTable *tt;

		register_enr(STORE_ENR_PAIRS, fs->mpdesc, fs->ts);
		if (SPI_execute_plan(cq_spi_plan_rows(fs->sql->merge, 0, NULL, list_length(fs->pairs)),
							 NULL, NULL, false, 0) != SPI_OK_SELECT ||
			SPI_processed != list_length(fs->pairs))
			elog(ERROR, "pg_cq: merge statement failed");
		unregister_enr(STORE_ENR_PAIRS);
		tt = SPI_tuptable;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		kn;
			int			k = DatumGetInt32(heap_getattr(tt->vals[i], 1, tt->tupdesc, &kn));
			StoreRef   *ref = list_nth(fs->pairs, k);
			HeapTuple	t;

			heap_deform_tuple(tt->vals[i], tt->tupdesc, values, isnull);
			t = heap_form_tuple(st->desc, values + 1, isnull + 1);
			(void) cq_store_put(st, ref, t);
			fs->changed++;
			put_m(st, fs->mo, t, values + 1, isnull + 1, false);
			heap_freetuple(t);
		}
		SPI_freetuptable(tt);
	}
	if (fs->ts)
		tuplestore_end(fs->ts);
	MemoryContextDelete(fs->row_cxt);
	fs->metrics->merge_ms = cq_store_cpu_ms() - t0;
	return fs->changed;
}

/*
 * FoldReceiver: the DestReceiver of a d statement, which folds each row
 * into the store as the executor makes it (fold_row) instead of
 * collecting d's result in an SPI tuple table first.  An error raised
 * meanwhile aborts the batch's (sub)transaction, which discards the
 * overlay with every row put so far (store.c).
 */
typedef struct FoldReceiver
{
	DestReceiver pub;
	FoldState  *fs;
} FoldReceiver;

/*
 * fold_receive
 *	  receiveSlot of FoldReceiver: fold one row of d; then, with a target
 *	  load, write the group's target row (the columns after d's).
 */
static bool
fold_receive(TupleTableSlot *slot, DestReceiver *self)
{
	FoldState  *fs = ((FoldReceiver *) self)->fs;
	MemoryContext old;
	bool		put;

	slot_getallattrs(slot);
	/* pass-by-reference values stay in the slot's row until the next one */
	memcpy(fs->values, slot->tts_values, sizeof(Datum) * fs->nstate);
	memcpy(fs->isnull, slot->tts_isnull, sizeof(bool) * fs->nstate);
	old = MemoryContextSwitchTo(fs->cxt);
	put = fold_row(fs, fs->values, fs->isnull);
	MemoryContextSwitchTo(old);
	if (put && fs->tl)
		cq_target_load_row(fs->tl, slot->tts_values, slot->tts_isnull,
						   fs->st->h_att ? DatumGetInt32(fs->values[fs->st->h_att - 1]) : 0);
	return true;
}

/*
 * fold_startup
 *	  rStartup of FoldReceiver: d's rows must be the state row (and its
 *	  four event-time statistics), as fold_row reads them.
 */
static void
fold_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	FoldState  *fs = ((FoldReceiver *) self)->fs;

	if (typeinfo->natts != fs->nstate +
		(fs->tl ? fs->sql->nout + (fs->sql->having ? 1 : 0) : 0))
		elog(ERROR, "pg_cq: unexpected row of the delta statement");
}

/*
 * fold_shutdown, fold_destroy
 *	  rShutdown and rDestroy of FoldReceiver: nothing to release (the
 *	  receiver lives on fold_delta's stack, its state in the caller's).
 */
static void
fold_shutdown(DestReceiver *self)
{
}

static void
fold_destroy(DestReceiver *self)
{
}

/*
 * Custom plans of d for large batches.
 *
 * d's saved plan turns generic after its first five executions (the plan
 * cache's rule: a generic plan costs no more than the custom ones): the
 * batch's offsets $1..$4 stay parameters, and every row that the scan reads
 * evaluates them again (a parameter step for each in the recheck of the
 * BRIN bitmap's lossy pages and in the call of cq.xid_new).  In a custom
 * plan they are constants, put into the calls' arguments once when the
 * plan starts: 4.3% fewer instructions per folded row for bench/run.sh's
 * ingest query (3,846 -> 3,680 a row, callgrind, bench/ingest_cg.sh), for
 * one planning of d per batch (~0.3M instructions, the cost of ~2k rows).
 * How many rows a batch reads is known only after it ran, so the previous
 * batch of the query in this process decides (cq.custom_plan_rows): under
 * heavy ingest, batches grow and keep their size from one to the next
 * (bench/README.md, goal 3), while the small batches of many queries or
 * of a sparse stream keep the generic plan and its low latency.  One entry
 * per query, in a small table indexed by the query's id (a collision only
 * costs a generic plan).
 */
#define LAST_ROWS_SLOTS 64

typedef struct LastRows
{
	Oid			dboid;
	int32		query_id;
	int64		rows;
} LastRows;

static LastRows last_rows[LAST_ROWS_SLOTS];

/* the slot of st's query */
static LastRows *
last_rows_slot(CqStore *st)
{
	return &last_rows[(uint32) st->key.query_id % LAST_ROWS_SLOTS];
}

/* whether this batch's d gets a custom plan (see above) */
static bool
want_custom_plan(CqStore *st)
{
	LastRows   *l = last_rows_slot(st);

	return cq_custom_plan_rows >= 0 && l->dboid == st->key.dboid &&
		l->query_id == st->key.query_id && l->rows >= cq_custom_plan_rows;
}

/* remember the rows this batch read, for the next one's want_custom_plan */
static void
remember_rows(CqStore *st, int64 rows)
{
	LastRows   *l = last_rows_slot(st);

	l->dboid = st->key.dboid;
	l->query_id = st->key.query_id;
	l->rows = rows;
}

/*
 * fold_delta
 *	  Run a d statement (sql, parameters $1..$4 as run_delta's) and fold
 *	  its rows into the overlay as they come (fold_begin must have run).
 *	  custom: with a custom plan (see want_custom_plan).
 */
static void fold_delta_ext(FoldState *fs, const char *sql, Datum *params, const char *nulls,
						   bool read_only, bool custom);

static void
fold_delta(FoldState *fs, const char *sql, Datum *params, const char *nulls, bool custom)
{
	fold_delta_ext(fs, sql, params, nulls, false, custom);
}

/*
 * fold_delta_ext
 *	  fold_delta, when read_only in the active snapshot rather than a new
 *	  one.  A custom plan is asked for by the saved plan's own option
 *	  (CURSOR_OPT_CUSTOM_PLAN, set for this execution only), not by
 *	  plan_cache_mode: that setting would also hold for the statements of
 *	  functions the query calls (a PL/pgSQL function called for every row
 *	  would plan its statements every time), and a plan_cache_mode the
 *	  session set still wins.
 */
static void
fold_delta_ext(FoldState *fs, const char *sql, Datum *params, const char *nulls,
			   bool read_only, bool custom)
{
	Oid			types[4] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID};
	FoldReceiver recv;
	SPIExecuteOptions options;
	ParamListInfo pl = makeParamList(4);
	SPIPlanPtr	plan;
	List	   *flagged = NIL;	/* plan sources whose option this call set */
	ListCell   *lc;
	DestReceiver *agg = NULL;	/* the new rows aggregated in C (deltagg.c) */

	for (int i = 0; i < 4; i++)
	{
		pl->params[i].value = params[i];
		pl->params[i].isnull = nulls != NULL && nulls[i] == 'n';
		pl->params[i].pflags = PARAM_FLAG_CONST;
		pl->params[i].ptype = types[i];
	}
	memset(&recv, 0, sizeof(recv));
	recv.pub.receiveSlot = fold_receive;
	recv.pub.rStartup = fold_startup;
	recv.pub.rShutdown = fold_shutdown;
	recv.pub.rDestroy = fold_destroy;
	/* any tag but DestNone and DestSPI: SPI reports SPI_OK_SELECT, keeps no rows */
	recv.pub.mydest = DestTuplestore;
	recv.fs = fs;
	memset(&options, 0, sizeof(options));
	options.params = pl;
	options.read_only = read_only;
	options.dest = (DestReceiver *) &recv;
	if (sql == fs->sql->delta && fs->sql->deltagg != NULL && cq_delta_agg_in_c && fs->tl == NULL &&
		(agg = cq_deltagg_begin(fs->sql->deltagg, options.dest, fs->st->desc)) != NULL)
	{
		options.dest = agg;
		sql = fs->sql->delta_c;
		/* its rows read in C (delta_scan.c), else by the statement */
		if (cq_delta_scan_run(fs->sql->deltascan, sql, agg, params, nulls, read_only))
		{
			if (!cq_deltagg_end(agg))
				fold_delta_ext(fs, fs->sql->delta, params, nulls, read_only, custom);
			return;
		}
	}
	plan = cq_spi_plan(sql, 4, types);
	if (custom)
	{
		foreach(lc, SPI_plan_get_plan_sources(plan))
		{
			CachedPlanSource *ps = (CachedPlanSource *) lfirst(lc);

			if ((ps->cursor_options & CURSOR_OPT_CUSTOM_PLAN) == 0)
			{
				ps->cursor_options |= CURSOR_OPT_CUSTOM_PLAN;
				flagged = lappend(flagged, ps);
			}
		}
	}
	/* the saved plan outlives an error: its option is cleared either way */
	PG_TRY();
	{
		cq_delta_plan_begin(fs->sql->source, plan);	/* its plan without the recheck */
		if (SPI_execute_plan_extended(plan, &options) != SPI_OK_SELECT)
			elog(ERROR, "pg_cq: delta statement failed");
	}
	PG_FINALLY();
	{
		cq_delta_plan_end();
		foreach(lc, flagged)
			((CachedPlanSource *) lfirst(lc))->cursor_options &= ~CURSOR_OPT_CUSTOM_PLAN;
	}
	PG_END_TRY();
	list_free(flagged);
	/* the groups outgrew memory and the scan stopped: d, whose aggregation spills */
	if (agg != NULL && !cq_deltagg_end(agg))
		fold_delta_ext(fs, fs->sql->delta, params, nulls, read_only, custom);
}

/* fold_history's run: d read-only in cq_delta_run_history's snapshot */
typedef struct HistoryFold
{
	FoldState  *fs;
	Datum	   *params;
	const char *nulls;
} HistoryFold;

static bool
history_fold_run(const char *sql, void *arg)
{
	HistoryFold *h = (HistoryFold *) arg;

	fold_delta_ext(h->fs, sql, h->params, h->nulls, true, false);
	return true;
}

/*
 * fold_history
 *	  Batch 0's d over the history (delta, or with a target load its load
 *	  statement): without the test of cq_xid (delta_all) when every row the
 *	  statement sees passes it, else with it (cq_delta_run_history decides,
 *	  as for bulkload.c).
 */
static void
fold_history(FoldState *fs, const CqStoreSql *sql, const char *delta, const char *delta_all,
			 Datum *params, const char *nulls)
{
	HistoryFold h = {fs, params, nulls};

	(void) cq_delta_run_history(sql->source, params[2], delta, delta_all, history_fold_run, &h,
								&fs->metrics->untested);
}

/*
 * split_fold
 *	  For measurements (cq.bench_split_batch): the rows of d collected
 *	  first, then folded, so that d and the fold are timed apart; with
 *	  batch 0's target load (fs->tl), d is the load statement as without
 *	  the split, its rows folded into the store first, then their target
 *	  rows written, each timed (metrics' lookup_ms and load_ms).  Before
 *	  session 32 the split ran batch 0 without the load (d, then the
 *	  plain INSERT over m), so its profile was not the path the batch
 *	  takes.  t0: the CPU time at the start of the batch.
 */
static void
split_fold(FoldState *fs, const CqStoreSql *sql, bool history, Datum *params, const char *nulls,
		   double t0)
{
	CqStoreMetrics *metrics = fs->metrics;
	uint64		n;
	SPITupleTable *tt = run_delta(fs->tl ? sql->load_history : history ? sql->delta_history : sql->delta,
								  params, nulls, &n);
	int			natts = tt->tupdesc->natts;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *isnull = palloc(sizeof(bool) * natts);
	bool	   *put = palloc(sizeof(bool) * Max(n, 1));
	int32	   *h = palloc(sizeof(int32) * Max(n, 1));

	if (natts != fs->nstate + (fs->tl ? sql->nout + (sql->having ? 1 : 0) : 0))
		elog(ERROR, "pg_cq: unexpected row of the delta statement");
	metrics->d_ms = cq_store_cpu_ms() - t0;
	t0 = cq_store_cpu_ms();
	for (uint64 i = 0; i < n; i++)
	{
		/* fold_row's row is the state row (fs->values has room for it) */
		heap_deform_tuple(tt->vals[i], tt->tupdesc, values, isnull);
		memcpy(fs->values, values, sizeof(Datum) * fs->nstate);
		memcpy(fs->isnull, isnull, sizeof(bool) * fs->nstate);
		put[i] = fold_row(fs, fs->values, fs->isnull);
		h[i] = fs->st->h_att ? DatumGetInt32(fs->values[fs->st->h_att - 1]) : 0;
	}
	metrics->lookup_ms = cq_store_cpu_ms() - t0;
	t0 = cq_store_cpu_ms();
	for (uint64 i = 0; i < n && fs->tl; i++)
	{
		if (!put[i])
			continue;
		heap_deform_tuple(tt->vals[i], tt->tupdesc, values, isnull);
		cq_target_load_row(fs->tl, values, isnull, h[i]);
	}
	metrics->load_ms = cq_store_cpu_ms() - t0;
	SPI_freetuptable(tt);
	pfree(values);
	pfree(isnull);
	pfree(put);
	pfree(h);
}

/*
 * cq_store_fold
 *	  A batch on the store: run d, merge it into the overlay, evict the
 *	  windows the watermark closed, write the target (sql->sink, reading m
 *	  and x).  has_wm/wm: the batch's watermark as the SQL path's $5.
 *	  Batch 0 over history (history) may write its target rows by a load
 *	  (store_load.c), which builds target_index (cq_target_load_index_plan;
 *	  InvalidOid: none to build).
 */
void
cq_store_fold(CqStore *st, const CqStoreSql *sql, bool history, Datum *params,
			  const char *nulls, bool has_wm, TimestampTz wm, bool evict, Oid target_index,
			  CqStoreMetrics *metrics)
{
	int			natts = st->desc->natts;
	Datum	   *values = palloc(sizeof(Datum) * (natts + 2));
	bool	   *isnull = palloc(sizeof(bool) * (natts + 2));
	int64		m;				/* changed groups */
	List	   *x = NIL;		/* HeapTuple evicted */
	ListCell   *lc;
	double		t0 = cq_store_cpu_ms();
	const char *sink = history ? sql->sink_history : sql->sink;
	MOut		mo;
	FoldState	fs;
	CqTargetLoad *tl = NULL;
	bool		custom = false;

	memset(metrics, 0, sizeof(*metrics));
	memset(&mo, 0, sizeof(mo));
	if (history)
		tl = cq_target_load_begin(sql, target_index);
	if (sink != NULL && tl == NULL)
	{
		/*
		 * m's rows in memory up to the batch's work_mem (cq.work_mem), then
		 * in a temporary file: the target statement reads them once.  Up to
		 * maintenance_work_mem (64MB by default) before session 30: at 1M
		 * changed groups that was 64 MB more private memory (the tuples
		 * freed when the tuplestore spilled stay in the context's free
		 * lists) for +0.7% of the batch's instructions (bench/README.md,
		 * "Private memory of a batch")
		 */
		mo.ts = tuplestore_begin_heap(false, false, work_mem);
		mo.plain = history && sql->sink_history_plain;
		mo.desc = m_desc(st, !mo.plain);
		mo.values = values;
		mo.isnull = isnull;
	}
	fold_begin(&fs, st, sql, has_wm, wm, &mo, metrics);
	fs.tl = tl;
	if (cq_bench_split_batch)
		split_fold(&fs, sql, history, params, nulls, t0);
	else
	{
		/* d, each of its rows folded as it comes (the lookups are in d's time) */
		if (tl)
			fold_history(&fs, sql, sql->load_history, sql->load_history_all, params, nulls);
		else if (history && sql->delta_history_all != NULL)
			fold_history(&fs, sql, sql->delta_history, sql->delta_history_all, params, nulls);
		else
		{
			custom = !history && want_custom_plan(st);
			fold_delta(&fs, history ? sql->delta_history : sql->delta, params, nulls, custom);
		}
		metrics->d_ms = cq_store_cpu_ms() - t0;
	}
	m = fold_end(&fs);
	metrics->updated = m;
	remember_rows(st, metrics->input_rows);
	t0 = cq_store_cpu_ms();
	if (tl)
	{
		/* the target rows are written: no target statement */
		metrics->output_rows = cq_target_load_end(tl);
		metrics->wrote = true;
		sink = NULL;
		metrics->sink_ms = cq_store_cpu_ms() - t0;
		t0 = cq_store_cpu_ms();
	}

	/* windows the watermark closed leave the state */
	if (evict && st->e_att != 0 && has_wm && (!st->has_evict_wm || st->evict_wm != wm))
	{
		/* a scan only when a window closed: no row has e < min_e */
		if (st->min_e <= wm)
		{
			TimestampTz min_e = PG_INT64_MAX;

			foreach(lc, cq_store_scan_all(st))
			{
				ScanRow    *r = lfirst(lc);
				bool		en;
				Datum		e = heap_getattr(r->ref.tup, st->e_att, st->desc, &en);

				if (en)
					continue;
				if (DatumGetInt64(e) > wm)
				{
					min_e = Min(min_e, DatumGetInt64(e));
					continue;
				}
				x = lappend(x, cq_store_own_tuple(r->ref.tup));
				cq_store_put(st, &r->ref, NULL);
			}
			st->min_e = min_e;
		}
		st->has_evict_wm = true;
		st->evict_wm = wm;
	}
	metrics->removed = list_length(x);
	metrics->evict_ms = cq_store_cpu_ms() - t0;
	t0 = cq_store_cpu_ms();

	/* write the target from m (made by fold_row and fold_end) and x */
	if ((m != 0 || x != NIL) && sink != NULL)
	{
		TupleDesc	xd = m_desc(st, false);
		Tuplestorestate *xts = tuplestore_begin_heap(false, false, work_mem);
		bool		on;
		int			rc;

		foreach(lc, x)
			tuplestore_puttuple(xts, lfirst(lc));
		register_enr("m", mo.desc, mo.ts);
		register_enr("x", xd, xts);
		metrics->enr_ms = cq_store_cpu_ms() - t0;
		t0 = cq_store_cpu_ms();
		metrics->wrote = true;
		{
			/*
			 * no new group: the statement without o1 (its other INSERT into
			 * the target fires the same statement triggers: once a query),
			 * over a target that has its columns (else o1's clear error)
			 */
			bool		has_columns = false;
			bool		update_triggers = true;

			if (!history && sql->sink_existing != NULL)
				cq_store_sql_target_facts(sql, &has_columns, &update_triggers);
			if (!history && mo.ins == 0 && sql->sink_existing != NULL && has_columns)
				sink = sql->sink_existing;
			/* only new groups: o1 alone, a plain INSERT (ou and oi write nothing) */
			else if (!history && x == NIL && sql->sink_new != NULL &&
					 mo.ins == (int64) tuplestore_tuple_count(mo.ts) && !update_triggers)
				sink = sql->sink_new;

			/*
			 * its rows written from C where they can be (store_load.c,
			 * store_update.c): measured faster than both statements
			 * (merge.c); else MERGE for a small batch with keys NOT NULL;
			 * else the statement
			 */
			if (sink == sql->sink_new &&
				cq_target_load_new(sql, st->desc, st->coll, tuplestore_tuple_count(mo.ts),
								   &metrics->output_rows))
				rc = SPI_OK_FINISH;
			else if (!history && (sink == sql->sink_existing || sink == sql->sink) &&
					 cq_target_update(sql, st->desc, st->eq, st->coll, tuplestore_tuple_count(mo.ts),
									  sink == sql->sink, &metrics->output_rows))
				rc = SPI_OK_FINISH;
			else if (!history && sql->sink_merge != NULL && cq_merge_chosen(m))
			{
				rc = SPI_execute_plan(cq_spi_plan_rows(sql->sink_merge, 0, NULL,
													   tuplestore_tuple_count(mo.ts) + list_length(x)),
									  NULL, NULL, false, 0);
				if (rc != SPI_OK_MERGE)
					elog(ERROR, "pg_cq: target statement failed");
				metrics->output_rows = (int64) SPI_processed;
				metrics->by_merge = true;
				sink = sql->sink_merge;
			}
			else
				rc = SPI_execute_plan(cq_spi_plan_rows(sink, 0, NULL,
													   tuplestore_tuple_count(mo.ts) + list_length(x)),
									  NULL, NULL, false, 0);
			metrics->by_c = (rc == SPI_OK_FINISH);
			if (rc == SPI_OK_INSERT)
				metrics->output_rows = SPI_processed;	/* a plain INSERT (batch 0) */
			else if (rc == SPI_OK_SELECT && SPI_processed == 1)
				metrics->output_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
																   SPI_tuptable->tupdesc, 1, &on));
			else if (rc != SPI_OK_FINISH && rc != SPI_OK_MERGE)	/* from C or MERGE: set */
				elog(ERROR, "pg_cq: target statement failed");
		}
		unregister_enr("m");
		unregister_enr("x");
		tuplestore_end(xts);
		metrics->sink_ms = cq_store_cpu_ms() - t0;
	}
	if (mo.ts)
		tuplestore_end(mo.ts);
	if (cq_bench_split_batch)
		elog(DEBUG1, "pg_cq: store fold: d %.3f ms (%llu groups%s), lookups %.3f ms, target rows loaded %.3f ms, merge statement %.3f ms, eviction %.3f ms, m and x %.3f ms, target statement %.3f ms (CPU time)",
			 metrics->d_ms, (unsigned long long) fs.rows, fs.fresh ? ", a fresh store: put without lookups" : "",
			 metrics->lookup_ms, metrics->load_ms, metrics->merge_ms,
			 metrics->evict_ms, metrics->enr_ms, metrics->sink_ms);
	else
		elog(DEBUG1, "pg_cq: store fold: d %.3f ms (%llu groups, each looked up and put as d makes it%s%s%s%s), merge statement %.3f ms, eviction %.3f ms, m and x %.3f ms, target statement %.3f ms (CPU time)",
			 metrics->d_ms, (unsigned long long) fs.rows,
			 metrics->untested ? "; the history's rows read without testing cq_xid" : "",
			 tl ? "; its target rows loaded as it made them" : "",
			 custom ? "; with a custom plan" : "",
			 sink != NULL && sink == sql->sink_new ? "; all new: the target by its INSERT alone" : "",
			 metrics->merge_ms,
			 metrics->evict_ms, metrics->enr_ms, metrics->sink_ms);
}

/*
 * cq_store_refresh_begin
 *	  Complete mode: make every row of the store readable as cq_all for
 *	  the reload statement; *rows is how many.  Returns the tuplestore for
 *	  cq_store_refresh_end.  It is the caller's, in the current memory
 *	  context (an error before the end frees it with that context and its
 *	  temporary file with the resource owner; nothing static points to
 *	  it, session 29).
 */
Tuplestorestate *
cq_store_refresh_begin(CqStore *st, int64 *rows)
{
	Tuplestorestate *ts = tuplestore_begin_heap(false, false, work_mem);
	ListCell   *lc;

	foreach(lc, cq_store_scan_all(st))
		tuplestore_puttuple(ts, ((ScanRow *) lfirst(lc))->ref.tup);
	register_enr(STORE_ENR_ALL, m_desc(st, false), ts);
	if (rows)
		*rows = (int64) tuplestore_tuple_count(ts);
	return ts;
}

/*
 * cq_store_refresh_end
 *	  Forget cq_all and free its rows (a temporary file beyond work_mem).
 */
void
cq_store_refresh_end(Tuplestorestate *ts)
{
	unregister_enr(STORE_ENR_ALL);
	tuplestore_end(ts);
}

/*
 * cq_store_image_due
 *	  Is it time to write the state table image after this batch
 *	  (cq.state_image_batches batches or cq.state_image_interval since the
 *	  last one, or none since the store was built)?  A logged image is also
 *	  written by a store's first batch (batch 0, or the first after a
 *	  rebuild from the source): a crash then never needs the whole source
 *	  again, as the state table of 'logged' never did.
 */
bool
cq_store_image_due(CqStore *st, CqQuery *q, int64 batch_id)
{
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return false;
	if (st->image_batch < 0 && cq_options_logged_image(&q->opts))
		return true;
	if (cq_state_image_batches <= 0 && cq_state_image_interval_s <= 0)
		return false;
	/* a new store counts from the batch before its first (see cq_store_open) */
	if (cq_state_image_batches > 0 &&
		batch_id - (st->image_batch >= 0 ? st->image_batch : st->image_base) >= cq_state_image_batches)
		return true;
	return cq_state_image_interval_s > 0 &&
		GetCurrentTimestamp() - st->image_at >= (int64) cq_state_image_interval_s * USECS_PER_SEC;
}

/*
 * cq_store_image_table
 *	  Where the image of q is recorded: cq.state_images, unlogged like its
 *	  state table, or for state_storage 'logged' cq.logged_state_images,
 *	  logged like its state table (a crash-restart keeps both).
 */
const char *
cq_store_image_table(CqQuery *q)
{
	return cq_options_logged_image(&q->opts) ? "cq.logged_state_images" : "cq.state_images";
}

/*
 * image_table_plain
 *	  The state table takes the store's rows as they are by heap inserts:
 *	  a plain table without triggers, rules, row-level security, CHECK
 *	  constraints, generated or identity columns, its columns those of the
 *	  store (none dropped, the same types).  pg_cq made it so; otherwise
 *	  the image is written by an INSERT.
 */
static bool
image_table_plain(CqStore *st, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (!cq_rel_takes_heap_inserts(rel) || desc->natts != st->desc->natts)
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != TupleDescAttr(st->desc, i)->atttypid)
			return false;
	}
	return true;
}

/*
 * load_image
 *	  Write the store's rows to the state table, truncated in this
 *	  transaction, without touching its indexes, then build them from the
 *	  table (PostgreSQL's reindex_relation, as TRUNCATE builds them empty):
 *	  an index insert per row in the store's hash order was most of the
 *	  image write's cost (issue 15; bench/results/image-s25.md).  The rows
 *	  (copies of the store's tuples, the same columns) go as COPY writes
 *	  them (rowload.c, with COPY's ring of buffers); the index build of a
 *	  logged table is WAL-logged as REINDEX's.  The sort of the build within
 *	  the batch's memory budget, maintenance_work_mem = work_mem, as
 *	  batch.c's build_index.  Returns false, having done nothing, when the
 *	  table is not plain (image_table_plain) or cq.bulk_load is off.
 */
static bool
load_image(CqStore *st, Oid relid)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	CqRowLoad  *load;
	ReindexParams params = {0};
	int			nest;
	ListCell   *lc;

	if (!cq_bulk_load || !image_table_plain(st, rel))
	{
		table_close(rel, NoLock);
		return false;
	}
	load = cq_rowload_begin(rel, TABLE_INSERT_SKIP_FSM, CQ_ROWLOAD_RING | CQ_ROWLOAD_DIRECT);
	/* copies of the store's tuples (their columns are the table's) */
	foreach(lc, cq_store_scan_all(st))
		cq_rowload_tuple(load, ((ScanRow *) lfirst(lc))->ref.tup);
	(void) cq_rowload_finish(load);
	table_close(rel, NoLock);
	CommandCounterIncrement();

	nest = NewGUCNestLevel();
	(void) set_config_option("maintenance_work_mem", psprintf("%d", Max(work_mem, 1024)),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) reindex_relation(relid, REINDEX_REL_CHECK_CONSTRAINTS, &params);
	AtEOXact_GUC(true, nest);
	CommandCounterIncrement();
	return true;
}

/*
 * cq_store_write_image
 *	  Replace the state table's rows by the store's (as this transaction
 *	  sees it: the batch's) and record the batch it reflects (end_offset
 *	  NULL: none, the table becomes the state), in the batch's
 *	  transaction.  The state table is written as the query's owner, as a
 *	  batch on the table path writes it: it is the owner's table, and its
 *	  triggers, rules, defaults and index expressions are the owner's
 *	  code, which must not run as superuser.  The image row is pg_cq's
 *	  catalog, written as superuser.
 */
void
cq_store_write_image(CqStore *st, CqQuery *q, int64 batch_id, const char *end_offset)
{
	CqSecurity	sec;
	Oid			types[4] = {INT4OID, TEXTOID, INT8OID, TEXTOID};
	Datum		values[4];
	char	   *state = cq_sql_relname_str(q->state_table);
	double		t0 = cq_store_cpu_ms();
	bool		loaded;

	values[0] = Int32GetDatum(q->id);
	values[1] = CStringGetTextDatum(q->run_id);
	values[2] = Int64GetDatum(batch_id);
	values[3] = end_offset ? CStringGetTextDatum(end_offset) : (Datum) 0;
	cq_security_owner(q->owner, &sec);
	cq_spi_exec(psprintf("TRUNCATE %s", state), SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	loaded = load_image(st, q->state_table);
	if (!loaded)
	{
		Tuplestorestate *all = cq_store_refresh_begin(st, NULL);

		cq_spi_exec(psprintf("INSERT INTO %s SELECT * FROM %s", state, STORE_ENR_ALL),
					SPI_OK_INSERT, 0, NULL, NULL, NULL);
		cq_store_refresh_end(all);
	}
	cq_security_restore(&sec);
	elog(DEBUG1, "pg_cq: state image: %lld rows %s in %.3f ms (CPU time)",
		 (long long) st->rows, loaded ? "loaded, indexes built after" : "inserted",
		 cq_store_cpu_ms() - t0);
	cq_security_superuser(&sec);
	if (end_offset == NULL)
	{
		/* the table is the state itself now (cq_store_switch_to_table) */
		cq_spi_exec(psprintf("DELETE FROM %s WHERE query_id OPERATOR(pg_catalog.=) $1", cq_store_image_table(q)),
					SPI_OK_DELETE, 1, types, values, NULL);
		cq_security_restore(&sec);
		return;
	}
	cq_spi_exec(psprintf("INSERT INTO %s AS i (query_id, run_id, batch_id, end_offset) "
						 "VALUES ($1, $2::pg_catalog.uuid, $3, $4::pg_catalog.pg_snapshot) "
						 "ON CONFLICT (query_id) DO UPDATE SET run_id = excluded.run_id, batch_id = excluded.batch_id, "
						 "end_offset = excluded.end_offset, written_at = pg_catalog.clock_timestamp()",
						 cq_store_image_table(q)),
				SPI_OK_INSERT, 4, types, values, NULL);
	cq_security_restore(&sec);
	st->image_batch = batch_id;
	st->image_at = GetCurrentTimestamp();
}

/*
 * cq_store_load_image
 *	  Load a replaced store from its state table image when one is valid
 *	  (written by this run of the query, for a batch not after the last
 *	  committed one; a crash empties an unlogged image and its row
 *	  together, and keeps a logged one), keeping the windows still open at
 *	  wm.  Returns false when there is none; else the image's batch id and
 *	  end offset.
 */
bool
cq_store_load_image(CqStore *st, CqQuery *q, const CqLastOffset *last, bool has_wm, TimestampTz wm,
					int64 *image_batch, char **image_offset)
{
	CqSecurity	sec;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	bool		isnull;
	int64		batch;
	SPITupleTable *tt;
	uint64		n;
	Datum	   *v = palloc(sizeof(Datum) * st->desc->natts);
	bool	   *nl = palloc(sizeof(bool) * st->desc->natts);
	bool		fresh = st->table == NULL && st->nitems == 0;	/* one row per group */

	if (cq_catalog_version() < CQ_CATALOG_0_2 || !last->found)
		return false;
	values[0] = Int32GetDatum(q->id);
	values[1] = CStringGetTextDatum(q->run_id);
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT batch_id, end_offset::pg_catalog.text FROM %s "
						 "WHERE query_id OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2::pg_catalog.uuid",
						 cq_store_image_table(q)),
				SPI_OK_SELECT, 2, types, values, NULL);
	if (SPI_processed != 1)
	{
		cq_security_restore(&sec);
		return false;
	}
	batch = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*image_offset = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if (batch > last->batch_id)
	{
		cq_security_restore(&sec);
		return false;
	}
	cq_spi_exec(psprintf("SELECT * FROM %s", cq_sql_relname_str(q->state_table)),
				SPI_OK_SELECT, 0, NULL, NULL, NULL);
	cq_security_restore(&sec);
	tt = SPI_tuptable;
	n = SPI_processed;
	for (uint64 i = 0; i < n; i++)
	{
		StoreRef	ref;

		heap_deform_tuple(tt->vals[i], tt->tupdesc, v, nl);
		if (late(st, v, nl, has_wm, wm))
			continue;
		if (!fresh)
			cq_store_lookup(st, v, nl, &ref);
		(void) put_new(st, fresh, &ref, v, nl);
	}
	SPI_freetuptable(tt);
	*image_batch = batch;
	st->image_batch = batch;
	st->image_at = GetCurrentTimestamp();
	return true;
}

/*
 * cq_store_replay
 *	  Fold the rows of delta_sql's range into a store loaded from an image
 *	  (state only, no target writes), keeping windows still open at wm.
 *	  Returns the store's rows.
 */
int64
cq_store_replay(CqStore *st, const CqStoreSql *sql, Datum *params, const char *nulls,
				bool has_wm, TimestampTz wm)
{
	CqStoreMetrics metrics;
	FoldState	fs;

	memset(&metrics, 0, sizeof(metrics));
	fold_begin(&fs, st, sql, has_wm, wm, NULL, &metrics);
	/* a replay reads the rows of every batch since the image: a large range */
	fold_delta(&fs, sql->delta, params, nulls, cq_custom_plan_rows >= 0);
	(void) fold_end(&fs);
	return st->rows;
}

/*
 * cq_store_switch_to_table
 *	  Move a query's state to its state table (the table path) in this
 *	  transaction: write the table from the store, forget the image row;
 *	  at commit the store is dropped.  The caller changes the catalog.
 */
void
cq_store_switch_to_table(CqStore *st, CqQuery *q)
{
	cq_store_write_image(st, q, st->batch_id, NULL);
	st->switched = true;
}

/*
 * cq_store_bytes
 *	  Bytes of the store as this transaction sees it: what its publication
 *	  leaves in cq.state_store_info's state_bytes.
 */
int64
cq_store_bytes(CqStore *st)
{
	return st->bytes;
}

/*
 * cq_store_batch_done
 *	  The batch that will be published with the overlay.
 */
void
cq_store_batch_done(CqStore *st, int64 batch_id)
{
	st->batch_id = batch_id;
	st->ran = true;
}

