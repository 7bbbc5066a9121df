/*-------------------------------------------------------------------------
 *
 * store_setup.c
 *	  What a query's shared-memory store is made of, decided from its
 *	  analysis and state table: whether the query can use the store, the
 *	  state row's layout, the keys' hash and equality functions (and a
 *	  row's key hashes: cq_store_key_hash, cq_store_set_h; whether a row
 *	  has given keys: cq_store_keys_match), and whether existing groups
 *	  are merged in C (store.c keeps the store itself).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "nodes/nodeFuncs.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "store_setup.h"
#include "inval.h"
#include "citus.h"
#include "state.h"

/*
 * cq_store_used
 *	  Does this query keep its state in the store?
 */
bool
cq_store_used(CqQuery *q, CqAnalysis *an)
{
	return cq_options_in_memory(&q->opts) && an->is_aggregate && !an->is_dedup;
}

/*
 * cq_store_supported
 *	  Can this aggregation keep its state in the store?  If not, *why says
 *	  why (a sentence).
 */
bool
cq_store_supported(CqAnalysis *an, Oid state_table, const char **why)
{
	ListCell   *lc;

	if (an->is_dedup)
	{
		*why = "SELECT DISTINCT keeps its state in a table.";
		return false;
	}
	if (cq_citus_node_source(an->source_relid))
	{
		*why = "A query over a Citus distributed source keeps its state in a table.";
		return false;
	}
	if (an->session)
	{
		*why = "Session windows keep their sessions in a table.";
		return false;
	}
	if (an->join != NULL)
	{
		*why = "A join of two streams keeps its buffered rows in tables.";
		return false;
	}
	if (an->distinct_sets != NIL)
	{
		*why = "DISTINCT aggregates keep the values they have seen in a table.";
		return false;
	}
	foreach(lc, an->group_exprs)
	{
		Oid			type = exprType(lfirst(lc));
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC | TYPECACHE_HASH_OPFAMILY);
		Oid			eqop = list_nth_oid(an->group_eqops, foreach_current_index(lc));

		if (!OidIsValid(tc->hash_extended_proc) || !OidIsValid(tc->hash_opf) ||
			!op_in_opfamily(eqop, tc->hash_opf))
		{
			*why = psprintf("Grouping key type %s has no hash function consistent with its equality.",
							format_type_be(type));
			return false;
		}
	}
	if (cq_state_evicts(an))
	{
		Oid			type = getBaseType(exprType(list_nth(an->group_exprs, an->wm_key)));

		if (type != TIMESTAMPOID && type != TIMESTAMPTZOID)
		{
			*why = psprintf("The window end of the watermark key is of type %s.", format_type_be(type));
			return false;
		}
	}
	return true;
}

/*
 * state_att
 *	  Attribute number of a state table column, or 0.
 */
AttrNumber
cq_store_state_att(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i + 1;
	return 0;
}

/*
 * setup_layout
 *	  The state row's layout: its type (the state table's row type), n
 *	  and the parts.
 */
static void
setup_layout(CqStore *st, Oid state_table)
{
	Relation	rel = table_open(state_table, AccessShareLock);

	st->desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, AccessShareLock);
	st->n_att = cq_store_state_att(st->desc, "n");
	st->nparts = 0;
	st->p_att = palloc0(sizeof(AttrNumber) * st->desc->natts);
	for (int i = 0; i < st->desc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(st->desc, i)->attname);

		if (name[0] == 'p' && name[1] >= '1' && name[1] <= '9')
			st->p_att[st->nparts++] = i + 1;
	}
}

/*
 * setup_keys
 *	  The state row's layout and the keys' hash and equality functions.
 */
static void
setup_keys(CqStore *st, CqQuery *q, CqAnalysis *an)
{
	int			ng = cq_state_ngroup_cols(an);

	setup_layout(st, q->state_table);
	st->ng = ng;
	st->e_att = cq_state_evicts(an) ? cq_store_state_att(st->desc, "e") : 0;
	st->eq = palloc0(sizeof(FmgrInfo) * ng);
	st->hashfn = palloc0(sizeof(FmgrInfo) * ng);
	st->coll = palloc0(sizeof(Oid) * ng);
	st->hproc = palloc0(sizeof(FmgrInfo) * ng);
	st->h_att = cq_store_state_att(st->desc, CQ_KEY_HASH_COLUMN);
	st->keyless = an->group_exprs == NIL;
	for (int g = 0; g < ng; g++)
	{
		Oid			type = an->group_exprs ? exprType(list_nth(an->group_exprs, g)) : BOOLOID;
		Oid			eqop = an->group_exprs ? list_nth_oid(an->group_eqops, g) : BooleanEqualOperator;
		TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC);

		if (!OidIsValid(tc->hash_extended_proc))
			elog(ERROR, "pg_cq: no extended hash function for type %s", format_type_be(type));
		fmgr_info_cxt(get_opcode(eqop), &st->eq[g], st->cxt);
		fmgr_info_cxt(tc->hash_extended_proc, &st->hashfn[g], st->cxt);
		if (st->h_att != 0 && !st->keyless)
		{
			tc = lookup_type_cache(type, TYPECACHE_HASH_PROC);
			if (!OidIsValid(tc->hash_proc))
				elog(ERROR, "pg_cq: no hash function for type %s", format_type_be(type));
			fmgr_info_cxt(tc->hash_proc, &st->hproc[g], st->cxt);
		}
		st->coll[g] = an->group_exprs ? exprCollation(list_nth(an->group_exprs, g)) : InvalidOid;
	}
}

/*
 * plus_proc
 *	  The function of pg_catalog's operator + for (type, type) returning
 *	  type (what "a + b" of a merge template resolves to, search_path being
 *	  pinned to pg_catalog first), or InvalidOid.
 */
static Oid
plus_proc(Oid type)
{
	Oid			opr;

	opr = OpernameGetOprid(list_make2(makeString("pg_catalog"), makeString("+")), type, type);
	if (!OidIsValid(opr) || get_op_rettype(opr) != type)
		return InvalidOid;
	return get_opcode(opr);
}

/*
 * setup_merge
 *	  Can existing groups be merged in C (merge_row in store_fold.c) rather
 *	  than by the merge statement?  Yes when n and every part use a merge
 *	  of CqMergeKind other than CQ_MERGE_OTHER (kinds: per part p<i>, char
 *	  i-1, the kind + 'A', from CqStoreSql) over a plain base type without
 *	  typmod (the statement's CAST back to the column's type is then a
 *	  no-op): + is pg_catalog's operator for the type, least()/greatest()
 *	  compare with the type's default btree comparison and the column's
 *	  collation, as ExecEvalMinMax does.  Once per store and transaction.
 */
static void
setup_merge(CqStore *st, const char *kinds)
{
	Oid			proc;

	if (st->merge_ready)
		return;
	st->merge_ready = true;
	st->cmerge = false;
	if (st->n_att == 0 || kinds == NULL)
		return;
	proc = plus_proc(TupleDescAttr(st->desc, st->n_att - 1)->atttypid);
	if (!OidIsValid(proc))
		return;
	fmgr_info_cxt(proc, &st->nplus, st->cxt);
	st->pkind = MemoryContextAllocZero(st->cxt, sizeof(CqMergeKind) * Max(st->nparts, 1));
	st->pfn = MemoryContextAllocZero(st->cxt, sizeof(FmgrInfo) * Max(st->nparts, 1));
	st->pcoll = MemoryContextAllocZero(st->cxt, sizeof(Oid) * Max(st->nparts, 1));
	for (int p = 0; p < st->nparts; p++)
	{
		Form_pg_attribute att = TupleDescAttr(st->desc, st->p_att[p] - 1);
		int			part_no = atoi(NameStr(att->attname) + 1);

		if (part_no < 1 || part_no > (int) strlen(kinds) || att->atttypmod != -1 ||
			get_typtype(att->atttypid) != TYPTYPE_BASE)
			return;
		st->pkind[p] = (CqMergeKind) (kinds[part_no - 1] - 'A');
		st->pcoll[p] = att->attcollation;
		if (st->pkind[p] == CQ_MERGE_ADD || st->pkind[p] == CQ_MERGE_SUM)
			proc = plus_proc(att->atttypid);
		else if (st->pkind[p] == CQ_MERGE_LEAST || st->pkind[p] == CQ_MERGE_GREATEST)
			proc = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC)->cmp_proc;
		else
			proc = InvalidOid;
		if (!OidIsValid(proc))
			return;
		fmgr_info_cxt(proc, &st->pfn[p], st->cxt);
	}
	st->cmerge = true;
}

/*
 * cq_store_merges_in_c
 *	  Are the existing groups of a query on the store merged in C rather
 *	  than by its merge statement (cq_store_setup_merge's choice, for the
 *	  query's state row and merge kinds)?  For cq.explain.
 */
bool
cq_store_merges_in_c(Oid state_table, const char *kinds)
{
	CqStore		st;

	memset(&st, 0, sizeof(st));
	st.cxt = CurrentMemoryContext;
	setup_layout(&st, state_table);
	setup_merge(&st, kinds);
	return st.cmerge;
}

/*
 * What setup_keys and setup_merge decide for a query, kept for its next
 * batches in this backend.
 *
 * A store is opened per batch (per transaction), and deciding its layout
 * and functions again each time was ~9.5k instructions a small batch
 * (the state table opened and its descriptor copied, the type cache and
 * the operator look-ups, the FmgrInfos; bench/batch_cg.sh, session 36).
 * What they decide depends on the state table's descriptor, on the
 * analysis' keys (types, equality operators, collations, evictions) and
 * merge kinds, which are compared, and on the catalogs of types,
 * operators and functions: any invalidation of the state table (or of
 * every relation) or of a pg_type, pg_operator, pg_proc, pg_opclass or
 * pg_amproc entry makes the entries of every query decide again.  The
 * FmgrInfos are then the ones the store calls (their fn_extra caches live
 * as long as the entry).  An entry decided again keeps its old memory
 * until the end of the transaction, which a store of it may still use.
 */
typedef struct SetupEntry
{
	int32		query_id;		/* hash key */
	bool		valid;
	uint64		inval_seen;		/* setup_inval count when filled */
	MemoryContext cxt;
	Oid			state_table;
	int			ng;
	bool		evicts;
	Oid		   *types;			/* per key */
	Oid		   *eqops;
	Oid		   *colls;
	CqStore		keys;			/* the fields setup_keys sets, in cxt */
	bool		merge_done;		/* keys' merge fields set, for merge_kinds */
	char	   *merge_kinds;	/* NULL: none */
} SetupEntry;

static HTAB *setups = NULL;
static uint64 setup_invals = 0;

/* Relation cache and syscache callbacks: every entry decides again. */
static void
setup_inval_rel(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	SetupEntry *e;

	if (setups == NULL)
		return;
	setup_invals++;
	hash_seq_init(&seq, setups);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (!OidIsValid(relid) || e->state_table == relid)
			e->valid = false;
}

static void
setup_inval_sys(Datum arg, int cacheid, uint32 hashvalue)
{
	setup_inval_rel(arg, InvalidOid);
}

/* The key inputs of an analysis, as setup_keys reads them. */
static void
key_inputs(CqAnalysis *an, int ng, int g, Oid *type, Oid *eqop, Oid *coll)
{
	*type = an->group_exprs ? exprType(list_nth(an->group_exprs, g)) : BOOLOID;
	*eqop = an->group_exprs ? list_nth_oid(an->group_eqops, g) : BooleanEqualOperator;
	*coll = an->group_exprs ? exprCollation(list_nth(an->group_exprs, g)) : InvalidOid;
}

/*
 * setup_entry
 *	  The entry of query q when it holds what setup_keys decides for q and
 *	  an (hit), else the entry emptied for setup_keys to fill.
 */
static SetupEntry *
setup_entry(CqQuery *q, CqAnalysis *an, int ng, bool *hit)
{
	SetupEntry *e;
	bool		found;
	bool		same;

	if (setups == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(SetupEntry);
		ctl.hcxt = TopMemoryContext;
		setups = hash_create("pg_cq store setups", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		cq_relcache_callback(setup_inval_rel, (Datum) 0);
		CacheRegisterSyscacheCallback(TYPEOID, setup_inval_sys, (Datum) 0);
		CacheRegisterSyscacheCallback(OPEROID, setup_inval_sys, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, setup_inval_sys, (Datum) 0);
		CacheRegisterSyscacheCallback(CLAOID, setup_inval_sys, (Datum) 0);
		CacheRegisterSyscacheCallback(AMPROCNUM, setup_inval_sys, (Datum) 0);
	}
	e = hash_search(setups, &q->id, HASH_ENTER, &found);
	if (!found)
	{
		e->valid = false;
		e->cxt = NULL;
	}
	same = found && e->valid && e->state_table == q->state_table && e->ng == ng &&
		e->evicts == cq_state_evicts(an);
	for (int g = 0; same && g < ng; g++)
	{
		Oid			type,
					eqop,
					coll;

		key_inputs(an, ng, g, &type, &eqop, &coll);
		same = e->types[g] == type && e->eqops[g] == eqop && e->colls[g] == coll;
	}
	*hit = same;
	if (same)
		return e;
	/* a store of this transaction may still use the old memory */
	if (e->cxt != NULL)
		MemoryContextSetParent(e->cxt, TopTransactionContext);
	e->cxt = AllocSetContextCreate(TopMemoryContext, "pg_cq store setup", ALLOCSET_SMALL_SIZES);
	e->valid = false;
	e->inval_seen = setup_invals;
	e->state_table = q->state_table;
	e->ng = ng;
	e->evicts = cq_state_evicts(an);
	e->types = MemoryContextAlloc(e->cxt, sizeof(Oid) * Max(ng, 1));
	e->eqops = MemoryContextAlloc(e->cxt, sizeof(Oid) * Max(ng, 1));
	e->colls = MemoryContextAlloc(e->cxt, sizeof(Oid) * Max(ng, 1));
	for (int g = 0; g < ng; g++)
		key_inputs(an, ng, g, &e->types[g], &e->eqops[g], &e->colls[g]);
	e->merge_done = false;
	e->merge_kinds = NULL;
	return e;
}

/* Copy the fields setup_keys (with merge: and setup_merge) sets from src to dst. */
static void
copy_setup(CqStore *dst, const CqStore *src, bool merge)
{
	dst->desc = src->desc;
	dst->ng = src->ng;
	dst->n_att = src->n_att;
	dst->e_att = src->e_att;
	dst->nparts = src->nparts;
	dst->p_att = src->p_att;
	dst->eq = src->eq;
	dst->hashfn = src->hashfn;
	dst->coll = src->coll;
	dst->h_att = src->h_att;
	dst->keyless = src->keyless;
	dst->hproc = src->hproc;
	if (!merge)
		return;
	dst->merge_ready = src->merge_ready;
	dst->cmerge = src->cmerge;
	dst->nplus = src->nplus;
	dst->pkind = src->pkind;
	dst->pfn = src->pfn;
	dst->pcoll = src->pcoll;
}

/*
 * cq_store_setup_keys
 *	  The state row's layout and the keys' hash and equality functions
 *	  (setup_keys), as decided for an earlier batch of the query when
 *	  nothing they depend on changed since (see above).
 */
void
cq_store_setup_keys(CqStore *st, CqQuery *q, CqAnalysis *an)
{
	int			ng = cq_state_ngroup_cols(an);
	bool		hit;
	SetupEntry *e = setup_entry(q, an, ng, &hit);
	MemoryContext old;

	if (hit)
	{
		copy_setup(st, &e->keys, false);
		return;
	}
	memset(&e->keys, 0, sizeof(CqStore));
	e->keys.cxt = e->cxt;
	old = MemoryContextSwitchTo(e->cxt);
	setup_keys(&e->keys, q, an);
	MemoryContextSwitchTo(old);
	/* an invalidation while it was decided (a catalog look-up took it): decide again next time */
	e->valid = e->inval_seen == setup_invals;
	copy_setup(st, &e->keys, false);
}

/*
 * cq_store_setup_merge
 *	  setup_merge, once per store and transaction, as decided for an
 *	  earlier batch when st was set up from the same entry (its
 *	  descriptor is the entry's) with the same kinds.
 */
void
cq_store_setup_merge(CqStore *st, const char *kinds)
{
	SetupEntry *e = setups ? hash_search(setups, &st->key.query_id, HASH_FIND, NULL) : NULL;
	MemoryContext old;

	if (st->merge_ready)
		return;
	if (e == NULL || !e->valid || e->keys.desc != st->desc)
	{
		setup_merge(st, kinds);
		return;
	}
	if (e->merge_done && (kinds == NULL ? e->merge_kinds == NULL :
						  e->merge_kinds != NULL && strcmp(kinds, e->merge_kinds) == 0))
	{
		copy_setup(st, &e->keys, true);
		return;
	}
	e->keys.merge_ready = false;
	old = MemoryContextSwitchTo(e->cxt);
	setup_merge(&e->keys, kinds);
	e->merge_kinds = kinds ? pstrdup(kinds) : NULL;
	MemoryContextSwitchTo(old);
	e->merge_done = true;
	e->valid = e->valid && e->inval_seen == setup_invals;
	copy_setup(st, &e->keys, true);
}

static uint32 key_h(CqStore *st, Datum *values, bool *nulls);

/*
 * key_hash
 *	  64-bit hash of a row's keys (values/nulls in the state row layout).
 *	  A state keyed by the key hash h has it in the row already: every row
 *	  the store hashes has its h (d's rows get it from cq_store_set_h before
 *	  any lookup or put; the image's rows, the stored rows, carry theirs),
 *	  so the store's hash is made from h alone, not by hashing the keys a
 *	  second time (session 34: 357 instructions a group down to 46, batch
 *	  0 at ~200k groups 0.8 % fewer instructions, bench/fold_cg.sh; every
 *	  lookup of an incremental batch saves the same).  Equal keys have equal h (their hash functions
 *	  with GROUP BY's collation), so the chains stay right; 32 bits of h
 *	  spread over the 64 (the slot table mixes them again, home()).
 */
uint64
cq_store_key_hash(CqStore *st, Datum *values, bool *nulls)
{
	uint64		h = UINT64CONST(0x9e3779b97f4a7c15);

	if (st->h_att != 0)
	{
		uint32		kh = nulls[st->h_att - 1] ? key_h(st, values, nulls) :
			DatumGetUInt32(values[st->h_att - 1]);

		return ((uint64) murmurhash32(kh) << 32) | kh;
	}

	for (int g = 0; g < st->ng; g++)
	{
		uint64		k = UINT64CONST(0x5bd1e9955bd1e995);

		if (!nulls[g])
			k = DatumGetUInt64(FunctionCall2Coll(&st->hashfn[g], st->coll[g], values[g],
												 UInt64GetDatum(0)));
		h = hash_combine64(h, k);
	}
	return h;
}

/*
 * key_h
 *	  The key hash h of a row's keys (values/nulls in the state row
 *	  layout): hash_record(ROW(g1, ...)) as the SQL path computes it
 *	  (cq_state_key_hash_sql) and the target's index is probed by: each key
 *	  hashed by its type's hash function with its collation, NULL as 0,
 *	  combined as result * 31 + hash.
 */
static uint32
key_h(CqStore *st, Datum *values, bool *nulls)
{
	uint32		h = 0;

	for (int g = 0; g < st->ng && !st->keyless; g++)
	{
		uint32		k = 0;

		if (!nulls[g])
			k = DatumGetUInt32(FunctionCall1Coll(&st->hproc[g], st->coll[g], values[g]));
		h = (h << 5) - h + k;
	}
	return h;
}

/*
 * set_h
 *	  The key hash h of a row of d (values/nulls in the state row layout),
 *	  which the store's d statement leaves NULL (key_h).
 */
void
cq_store_set_h(CqStore *st, Datum *values, bool *nulls)
{
	if (st->h_att == 0)
		return;
	values[st->h_att - 1] = UInt32GetDatum(key_h(st, values, nulls));
	nulls[st->h_att - 1] = false;
}

/*
 * cq_store_keys_match
 *	  Are tup's keys those of values/nulls, by GROUP BY's equality?
 */
bool
cq_store_keys_match(CqStore *st, HeapTuple tup, Datum *values, bool *nulls)
{
	for (int g = 0; g < st->ng; g++)
	{
		bool		isnull;
		Datum		v = heap_getattr(tup, g + 1, st->desc, &isnull);

		if (isnull != nulls[g])
			return false;
		if (isnull)
			continue;
		if (!DatumGetBool(FunctionCall2Coll(&st->eq[g], st->coll[g], v, values[g])))
			return false;
	}
	return true;
}

/*
 * cq_store_own_tuple
 *	  A local copy of a row found by lookup or scan_all: a header over a
 *	  MinimalTuple in the area (a published row, see shared_tuple, or an
 *	  overlay item's), copied as heap_tuple_from_minimal_tuple makes it.
 */
HeapTuple
cq_store_own_tuple(HeapTuple t)
{
	return heap_tuple_from_minimal_tuple((MinimalTuple) ((char *) t->t_data + MINIMAL_TUPLE_OFFSET));
}

/*
 * cpu_ms
 *	  This backend's CPU time in milliseconds (the phase timings of a fold
 *	  are CPU time: on a loaded machine wall time mostly measures waiting).
 *	  The timings only go to DEBUG1 messages: 0 when those go nowhere, for
 *	  the clock is a system call (a few percent of a small batch's CPU).
 */
double
cq_store_cpu_ms(void)
{
	struct timespec ts;

	if (!message_level_is_interesting(DEBUG1))
		return 0;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1000000.0;
}
