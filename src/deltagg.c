/*-------------------------------------------------------------------------
 *
 * deltagg.c
 *	  d's partial aggregation in C, for the incremental batch of a query
 *	  on the shared-memory store (issue 12, goal 3: the fold's CPU per
 *	  ingested row).
 *
 * d (store_sql.c) is "SELECT keys, count(*), partials FROM (new rows) i
 * GROUP BY keys", its rows folded into the store by store_fold.c's
 * receiver.  Of its ~3,200 instructions a row (bench/ingest_cg.sh, session
 * 35) the hash aggregation took ~1,650: the look-up (the keys hashed by
 * fmgr calls, each probe's stored minimal tuple deformed and compared by
 * the expression interpreter) and the transitions (interpreter steps and
 * an fmgr call per partial).  For the common shapes this aggregates the
 * new rows here instead: the statement is only the scan ("SELECT keys,
 * arguments FROM (new rows) i", cq_deltagg_build), and this receiver
 * hashes the keys by their bytes, keeps the groups in an open-addressing
 * table and updates the partials in place; at the end each group's row,
 * in d's layout and with d's values, goes to the fold's receiver in the
 * order the groups were first seen.
 *
 * The shapes (anything else keeps d; cq.delta_agg_in_c = off too):
 *	keys	by-value types whose equality is that of their bits (integers,
 *			date, timestamp[tz], bool, oid; the Datum's bits above the
 *			type's own made alike: norm_key), and text or varchar under a
 *			deterministic collation (compared bytewise, as d compares them:
 *			delta.c's bytewise_key); NULL is a key of its own
 *	state	count(*), count(x), numeric's cq.numeric_sum/_max/_min
 *			(numagg.c, which this calls), sum of int2 and int4, min and max
 *			of integers, date and timestamp[tz], each in its own state
 *			column of its partial's type (d casts nothing then); the key
 *			hash h (NULL in d: the store computes it)
 *	not		without keys (d returns a row for no input), DISTINCT, FILTER,
 *			event-time statistics, windows (e), joins, Citus sources, other
 *			aggregates, a volatile function anywhere in the query or in
 *			the source's row-level security policies (d would call it
 *			again for the rows scanned when the groups outgrow memory)
 *
 * Both produce the same rows: count as int8; the sum is numagg.c's state
 * and final; min and max keep the value cq_numeric_smaller/larger keep
 * (the later of equal values), copied as nodeAgg copies it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/table.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rowsecurity.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "deltagg.h"
#include "numagg.h"
#include "aggregates.h"
#include "citus.h"
#include "delta.h"
#include "guc.h"
#include "state.h"

/* what a state column of d's row is made of (CqDeltaAgg.colk) */
#define DA_KEY		'k'			/* a grouping key */
#define DA_ROWS		'n'			/* count(*) */
#define DA_COUNT	'c'			/* count(x) */
#define DA_SUM		's'			/* cq.numeric_sum(x) */
#define DA_MAX		'M'			/* cq.numeric_max(x) */
#define DA_MIN		'm'			/* cq.numeric_min(x) */
#define DA_ISUM		'i'			/* sum(x) of int2 or int4 (an int8) */
#define DA_VMAX		'X'			/* max(x) of an integer, date or timestamp[tz] */
#define DA_VMIN		'x'			/* min(x) of the same */
#define DA_NULL		'0'			/* NULL: the key hash h */

/* a key's comparison (CqDeltaAgg.keyk) */
#define DA_BYVAL	'v'			/* by value, equal when the Datums are */
#define DA_BYTES	't'			/* a string, equal when its bytes are */

struct CqDeltaAgg
{
	int			ng;				/* keys: the scan's columns 0..ng-1 */
	char	   *keyk;			/* per key: DA_BYVAL or DA_BYTES */
	char	   *keyw;			/* per key of DA_BYVAL: its type's bytes (1, 2, 4, 8) */
	int		   *keycol;			/* per key: its state column */
	int			ncols;			/* columns of d's row (the state row) */
	char	   *colk;			/* per column: DA_* */
	int		   *arg;			/* per column: its scan column (keys, x) */
	char	   *width;			/* per column of DA_ISUM/VMAX/VMIN: its input's
								 * bytes (2, 4, 8) */
	int			nscan;			/* the scan's columns: keys, then the x used */
	int		   *scanx;			/* per scan column past the keys: its x<N>, N */
	int			skip;			/* batches left that keep d: one ran out of memory */
	int			nagg;			/* the columns of partials (n, c, s, M, m) */
	int		   *aggcol;			/* their state columns, in order */
};

/* one group: per column a count, a value and its NULL flag */
typedef struct DaGroup
{
	uint32		hash;
	int64	   *acc;
	Datum	   *vals;
	bool	   *nulls;
} DaGroup;

/* a partial's update, as cq_deltagg_add reads it (CqDeltaAgg's arrays in one) */
typedef struct DaOp
{
	int			col;			/* its state column */
	int			arg;			/* its scan column */
	char		kind;			/* DA_* */
	char		width;			/* CqDeltaAgg.width */
} DaOp;

typedef struct DaState
{
	DestReceiver pub;
	struct CqDeltaAgg *da;
	DestReceiver *fold;			/* gets each group's row at the end */
	TupleDesc	desc;			/* of those rows */
	MemoryContext cxt;			/* the groups */
	MemoryContext row_cxt;		/* what one row needs (detoasted values) */
	Datum	   *keys;			/* the row's keys, detoasted */
	DaGroup   **table;			/* open addressing, linear probing */
	uint32		mask;
	DaGroup   **groups;			/* in the order first seen */
	int64		ngroups;
	int64		maxgroups;
	Size		budget;			/* memory d's hash aggregation would have */
	bool		full;			/* the groups outgrew it: the scan stopped */
	DaOp	   *ops;			/* per partial (da->nagg) */
} DaState;

/*
 * key_kind
 *	  Is a key of this type and collation compared by its Datum or bytes?
 *	  *width: a by-value type's bytes (see norm_key).
 */
static char
key_kind(Oid type, Oid coll, char *width)
{
	*width = 8;
	switch (type)
	{
		case INT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* by reference where a Datum has 32 bits */
			return FLOAT8PASSBYVAL ? DA_BYVAL : 0;
		case INT2OID:
		case INT4OID:
		case OIDOID:
		case DATEOID:
		case BOOLOID:
			*width = get_typlen(type);
			return DA_BYVAL;
		case TEXTOID:
		case VARCHAROID:
			if (coll == C_COLLATION_OID || !OidIsValid(coll) || get_collation_isdeterministic(coll))
				return DA_BYTES;
			return 0;
		default:
			return 0;
	}
}

/* the kind of a partial's SQL (CqPart.partial) and its column x<N>, or 0 */
static char
part_kind(const char *partial, int *x)
{
	static const struct
	{
		const char *fmt;
		char		kind;
	}			forms[] = {
		{"count(i.x%d)%n", DA_COUNT},
		{"cq.numeric_sum(i.x%d)%n", DA_SUM},
		{"cq.numeric_max(i.x%d)%n", DA_MAX},
		{"cq.numeric_min(i.x%d)%n", DA_MIN},
		{"sum(i.x%d)%n", DA_ISUM},
		{"max(i.x%d)%n", DA_VMAX},
		{"min(i.x%d)%n", DA_VMIN},
	};

	for (int f = 0; f < lengthof(forms); f++)
	{
		int			len = 0;

		if (sscanf(partial, forms[f].fmt, x, &len) == 1 && len == (int) strlen(partial))
			return forms[f].kind;
	}
	return 0;
}

/*
 * part_fits
 *	  Does this aggregates a partial of this kind over an argument of type
 *	  arg into a state column of type col as d would (no cast between)?
 *	  *width: the argument's bytes, for the by-value kinds.
 */
static bool
part_fits(char kind, Oid arg, Oid col, char *width)
{
	switch (kind)
	{
		case DA_COUNT:
			return col == INT8OID;
		case DA_SUM:
		case DA_MAX:
		case DA_MIN:
			return arg == NUMERICOID && col == NUMERICOID;
		case DA_ISUM:
			/* int2_sum and int4_sum: an int8, added without overflow checks */
			*width = arg == INT2OID ? 2 : 4;
			return (arg == INT2OID || arg == INT4OID) && col == INT8OID;
		case DA_VMAX:
		case DA_VMIN:
			*width = get_typlen(arg);
			return col == arg && (arg == INT2OID || arg == INT4OID || arg == INT8OID ||
								  arg == DATEOID || arg == TIMESTAMPOID ||
								  arg == TIMESTAMPTZOID);
	}
	return false;
}

/*
 * volatile_policies
 *	  Has the source (relid) row-level security with a policy whose
 *	  conditions may call a volatile function (a sublink: another table's
 *	  policies, not in the condition itself)?  Row-level security adds its
 *	  policies' conditions to the scan of every row, as the query's own
 *	  WHERE: with the C aggregation they would be called again for the
 *	  rows scanned when the groups outgrow memory (an audit function
 *	  logging each row it is asked about logged those twice).  The plan is
 *	  rebuilt when the source's policies change (plan_deps.c).
 */
static bool
volatile_policies(Oid relid)
{
	Relation	rel = try_table_open(relid, AccessShareLock);
	bool		found = false;
	ListCell   *lc;

	if (rel == NULL)
		return false;
	if (rel->rd_rel->relrowsecurity && rel->rd_rsdesc != NULL)
		foreach(lc, rel->rd_rsdesc->policies)
		{
			RowSecurityPolicy *p = lfirst(lc);

			if (p->hassublinks || contain_volatile_functions((Node *) p->qual) ||
				contain_volatile_functions((Node *) p->with_check_qual))
				found = true;
		}
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * cq_deltagg_build
 *	  When d's shape is one this aggregates (see the header), its scan
 *	  statement (sql->delta_c) and the layout (sql->deltagg); else both
 *	  NULL.  state: the state table's descriptor (d's row).
 */
void
cq_deltagg_build(CqAnalysis *an, TupleDesc state, CqStoreSql *sql)
{
	struct CqDeltaAgg *da;
	StringInfoData cols;
	int			ng = list_length(an->group_exprs);
	int		   *xcol;			/* x<N> -> its scan column, or -1 */
	int			nx = list_length(an->arg_exprs);
	int			next;

	sql->delta_c = NULL;
	sql->deltagg = NULL;
	/*
	 * A Citus source: d's aggregation runs on its workers, not its rows
	 * here.  A volatile function anywhere in the query (or in the
	 * source's row-level security policies): when the groups
	 * outgrow memory the scan stops and d reads the rows again
	 * (cq_deltagg_end), which would call it again for the rows already
	 * scanned (a nextval() advanced twice); d alone calls it once a row.
	 */
	if (ng == 0 || an->distinct_sets != NIL || an->join_delta_sql != NULL || an->is_dedup ||
		contain_volatile_functions((Node *) an->query) || volatile_policies(an->source_relid) ||
		(an->single_scan && an->et_attno != InvalidAttrNumber) ||
		cq_citus_kind(an->source_relid) != CQ_CITUS_NONE)
		return;
	da = palloc0(sizeof(*da));
	da->ng = ng;
	da->keyk = palloc(ng);
	da->keyw = palloc(ng);
	da->keycol = palloc(sizeof(int) * ng);
	da->ncols = state->natts;
	da->colk = palloc(state->natts);
	da->arg = palloc(sizeof(int) * state->natts);
	da->width = palloc0(state->natts);
	da->scanx = palloc0(sizeof(int) * (ng + nx));
	xcol = palloc(sizeof(int) * (nx + 1));
	for (int k = 0; k <= nx; k++)
		xcol[k] = -1;
	initStringInfo(&cols);
	for (int k = 0; k < ng; k++)
	{
		Node	   *e = list_nth(an->group_exprs, k);

		da->keyk[k] = key_kind(exprType(e), exprCollation(e), &da->keyw[k]);
		if (da->keyk[k] == 0)
			return;
		da->keycol[k] = -1;
		appendStringInfo(&cols, "%si.g%d", k ? ", " : "", k + 1);
	}
	next = ng;
	for (int i = 0; i < state->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(state, i);
		const char *name = NameStr(att->attname);
		int			g;
		int			len = 0;

		if (name[0] == 'p' && name[1] >= '1' && name[1] <= '9')
		{
			CqPart	   *part = list_nth(an->parts, atoi(name + 1) - 1);
			int			x = 0;
			char		kind = part_kind(part->partial, &x);

			if (kind == 0 || x < 1 || x > nx || att->atttypmod != -1 ||
				!part_fits(kind, exprType(list_nth(an->arg_exprs, x - 1)), att->atttypid,
						   &da->width[i]))
				return;
			if (xcol[x] < 0)
			{
				da->scanx[next] = x;
				xcol[x] = next++;
				appendStringInfo(&cols, ", i.x%d", x);
			}
			da->colk[i] = kind;
			da->arg[i] = xcol[x];
		}
		else if (strcmp(name, "n") == 0)
			da->colk[i] = DA_ROWS;
		else if (strcmp(name, CQ_KEY_HASH_COLUMN) == 0)
			da->colk[i] = DA_NULL;
		else if (sscanf(name, "g%d%n", &g, &len) == 1 && len == (int) strlen(name) &&
				 g >= 1 && g <= ng && da->keycol[g - 1] < 0 &&
				 att->atttypid == exprType(list_nth(an->group_exprs, g - 1)))
		{
			da->colk[i] = DA_KEY;
			da->arg[i] = g - 1;
			da->keycol[g - 1] = i;
		}
		else
			return;
	}
	for (int k = 0; k < ng; k++)
		if (da->keycol[k] < 0)
			return;
	sql->delta_c = psprintf("SELECT %s FROM (%s) i", cols.data,
							cq_delta_fold_inner_sql(an, false, false));
	da->nscan = next;
	da->aggcol = palloc(sizeof(int) * state->natts);
	for (int i = 0; i < state->natts; i++)
		if (da->colk[i] != DA_KEY && da->colk[i] != DA_NULL)
			da->aggcol[da->nagg++] = i;
	sql->deltagg = da;
}

/*
 * cq_deltagg_copy
 *	  A copy of da (or NULL) in the current memory context.
 */
struct CqDeltaAgg *
cq_deltagg_copy(const struct CqDeltaAgg *da)
{
	struct CqDeltaAgg *c;

	if (da == NULL)
		return NULL;
	c = palloc(sizeof(*c));
	*c = *da;
	c->keyk = memcpy(palloc(da->ng), da->keyk, da->ng);
	c->keyw = memcpy(palloc(da->ng), da->keyw, da->ng);
	c->keycol = memcpy(palloc(sizeof(int) * da->ng), da->keycol, sizeof(int) * da->ng);
	c->colk = memcpy(palloc(da->ncols), da->colk, da->ncols);
	c->arg = memcpy(palloc(sizeof(int) * da->ncols), da->arg, sizeof(int) * da->ncols);
	c->width = memcpy(palloc(da->ncols), da->width, da->ncols);
	c->aggcol = memcpy(palloc(sizeof(int) * da->ncols), da->aggcol, sizeof(int) * da->ncols);
	c->scanx = memcpy(palloc(sizeof(int) * da->nscan), da->scanx, sizeof(int) * da->nscan);
	return c;
}

/*
 * norm_key
 *	  A by-value key of width bytes as its type's own macro makes its Datum:
 *	  the bits above them are not the same for every equal value.  An int4
 *	  relabeled from an oid (a binary-coercible cast: (t::oid)::int4) keeps
 *	  the oid's Datum, zero-extended, where an int4 column's is
 *	  sign-extended: the two -1 of "CASE WHEN c THEN (t::oid)::int4 ELSE
 *	  i END" were two groups, which d's int4 equality makes one.
 */
static inline Datum
norm_key(char width, Datum v)
{
	switch (width)
	{
		case 1:
			return BoolGetDatum(DatumGetBool(v));
		case 2:
			return Int16GetDatum(DatumGetInt16(v));
		case 4:
			return Int32GetDatum(DatumGetInt32(v));
	}
	return v;
}

/*
 * short_words
 *	  A string of 1 to 8 bytes as two 32-bit words that hold every byte of
 *	  it: the first and last four (overlapping below 8), or below 4 the
 *	  first, middle and last byte.  Two strings of the same length are
 *	  equal when their words are; the hash mixes the words and the length.
 *	  Loads of a fixed size, in line: for a 6-byte key, hash_bytes and a
 *	  memcmp call cost ~75 instructions a row, a loop over the bytes ~85
 *	  (bench/ingest_cg.sh, session 41).
 */
static inline void
short_words(const char *p, Size len, uint32 *lo, uint32 *hi)
{
	if (len >= 4)
	{
		memcpy(lo, p, 4);
		memcpy(hi, p + len - 4, 4);
	}
	else
	{
		*lo = (uint8) p[0] | ((uint32) (uint8) p[len / 2] << 8) | ((uint32) (uint8) p[len - 1] << 16);
		*hi = 0;
	}
}

/* the hash of a string's bytes (as hash_bytes, but 1 to 8 bytes through short_words) */
static inline uint32
key_string_hash(const char *p, Size len)
{
	uint32		lo;
	uint32		hi;
	uint64		w;

	if (len == 0 || len > 8)
		return hash_bytes((const unsigned char *) p, len);
	short_words(p, len, &lo, &hi);
	w = ((uint64) hi << 32 | lo) ^ ((uint64) len << 59);
	w ^= w >> 33;
	w *= UINT64CONST(0xff51afd7ed558ccd);
	w ^= w >> 33;
	return (uint32) w;
}

/* are two strings of len bytes equal? */
static inline bool
key_string_equal(const char *a, const char *b, Size len)
{
	uint32		alo;
	uint32		ahi;
	uint32		blo;
	uint32		bhi;

	if (len == 0 || len > 8)
		return memcmp(a, b, len) == 0;
	short_words(a, len, &alo, &ahi);
	short_words(b, len, &blo, &bhi);
	return alo == blo && ahi == bhi;
}

/*
 * key_hash
 *	  The hash of a key value (not NULL); *v normalized (norm_key) or
 *	  detoasted in the row's context.
 */
static inline uint32
key_hash(char kind, char width, Datum *v)
{
	struct varlena *p;

	if (kind == DA_BYVAL)
	{
		uint64		u;

		*v = norm_key(width, *v);
		u = (uint64) *v;

		return murmurhash32((uint32) (u ^ (u >> 32)));
	}
	p = (struct varlena *) DatumGetPointer(*v);
	/* as pg_detoast_datum_packed (a TOAST pointer's header is "short" too) */
	if (VARATT_IS_EXTERNAL(p) || VARATT_IS_COMPRESSED(p))
	{
		p = detoast_attr(p);
		*v = PointerGetDatum(p);
	}
	return key_string_hash(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p));
}

/* are a group's keys those of the row (v as key_hash left them)? */
static inline bool
keys_equal(const struct CqDeltaAgg *da, DaGroup *g, Datum *v, bool *n)
{
	for (int k = 0; k < da->ng; k++)
	{
		int			c = da->keycol[k];

		if (g->nulls[c] != n[k])
			return false;
		if (n[k])
			continue;
		if (da->keyk[k] == DA_BYVAL)
		{
			if (g->vals[c] != v[k])
				return false;
		}
		else
		{
			struct varlena *a = (struct varlena *) DatumGetPointer(g->vals[c]);
			struct varlena *b = (struct varlena *) DatumGetPointer(v[k]);
			Size		la = VARSIZE_ANY_EXHDR(a);

			const char *pa = VARDATA_ANY(a);
			const char *pb = VARDATA_ANY(b);

			if (la != VARSIZE_ANY_EXHDR(b) || !key_string_equal(pa, pb, la))
				return false;
		}
	}
	return true;
}

/* a new group of the row's keys, its partials empty */
static DaGroup *
new_group(DaState *s, uint32 hash, Datum *v, bool *n)
{
	const struct CqDeltaAgg *da = s->da;
	MemoryContext old = MemoryContextSwitchTo(s->cxt);
	DaGroup    *g = palloc(sizeof(DaGroup));

	g->hash = hash;
	g->acc = palloc0(sizeof(int64) * da->ncols);
	g->vals = palloc0(sizeof(Datum) * da->ncols);
	g->nulls = palloc(sizeof(bool) * da->ncols);
	for (int c = 0; c < da->ncols; c++)
	{
		g->nulls[c] = da->colk[c] != DA_ROWS && da->colk[c] != DA_COUNT;
		if (da->colk[c] == DA_KEY)
		{
			int			k = da->arg[c];

			g->nulls[c] = n[k];
			if (!n[k])
				g->vals[c] = da->keyk[k] == DA_BYVAL ? v[k] : datumCopy(v[k], false, -1);
		}
	}
	if (s->ngroups == s->maxgroups)
	{
		s->maxgroups *= 2;
		s->groups = repalloc(s->groups, sizeof(DaGroup *) * s->maxgroups);
	}
	s->groups[s->ngroups++] = g;
	MemoryContextSwitchTo(old);
	return g;
}

/* the table twice as large (at 3/4 full) */
static void
grow(DaState *s)
{
	uint32		size = (s->mask + 1) * 2;
	DaGroup   **t = MemoryContextAllocZero(s->cxt, sizeof(DaGroup *) * size);

	for (int64 i = 0; i < s->ngroups; i++)
	{
		uint32		j = s->groups[i]->hash & (size - 1);

		while (t[j] != NULL)
			j = (j + 1) & (size - 1);
		t[j] = s->groups[i];
	}
	pfree(s->table);
	s->table = t;
	s->mask = size - 1;
}

/* min or max of numeric: the row's value v replaces the group's unless kept */
static inline void
min_max(DaState *s, DaGroup *g, int c, Datum v, bool max)
{
	MemoryContext old;
	Datum		nv;

	if (!g->nulls[c] && cq_numeric_keeps(g->vals[c], v, max))
		return;
	nv = cq_numeric_kept(v);
	old = MemoryContextSwitchTo(s->cxt);
	if (!g->nulls[c])
		pfree(DatumGetPointer(g->vals[c]));
	g->vals[c] = datumCopy(nv, false, -1);
	g->nulls[c] = false;
	MemoryContextSwitchTo(old);
}

/*
 * cq_deltagg_add
 *	  One new row into its group: v and n its scan columns (keys, then the
 *	  arguments used, as sql->delta_c returns them; cq_deltagg_scan_exprs).
 *	  self: cq_deltagg_begin's receiver.  False when the groups outgrew
 *	  memory: the caller stops reading (cq_deltagg_end then says so).  The
 *	  values are copied where kept: the caller may free them after.
 */
bool
cq_deltagg_add(DestReceiver *self, Datum *v, bool *n)
{
	DaState    *s = (DaState *) self;
	const struct CqDeltaAgg *da = s->da;
	MemoryContext old = MemoryContextSwitchTo(s->row_cxt);
	uint32		hash = 0;
	uint32		j;
	DaGroup    *g;

	for (int k = 0; k < da->ng; k++)
	{
		s->keys[k] = v[k];
		hash = hash_combine(hash, n[k] ? 0x5bd1e995 : key_hash(da->keyk[k], da->keyw[k], &s->keys[k]));
	}
	for (j = hash & s->mask; (g = s->table[j]) != NULL; j = (j + 1) & s->mask)
		if (g->hash == hash && keys_equal(da, g, s->keys, n))
			break;
	if (g == NULL)
	{
		g = new_group(s, hash, s->keys, n);
		s->table[j] = g;
		if ((uint64) s->ngroups * 4 > (uint64) (s->mask + 1) * 3)
			grow(s);
		/* more groups than d's hash aggregation keeps in memory: stop (see cq_deltagg_end) */
		if (s->ngroups % 256 == 0 && MemoryContextMemAllocated(s->cxt, true) > s->budget)
		{
			s->full = true;
			MemoryContextSwitchTo(old);
			return false;
		}
	}
	for (const DaOp *op = s->ops, *end = s->ops + da->nagg; op < end; op++)
	{
		int			c = op->col;
		int			a = op->arg;

		switch (op->kind)
		{
			case DA_ROWS:
				g->acc[c]++;
				break;
			case DA_COUNT:
				g->acc[c] += !n[a];
				break;
			case DA_SUM:
				if (n[a])
					break;
				if (g->nulls[c])
				{
					g->vals[c] = PointerGetDatum(cq_numsum_create(s->cxt));
					g->nulls[c] = false;
				}
				cq_numsum_add((CqNumSum *) DatumGetPointer(g->vals[c]), v[a]);
				break;
			case DA_MAX:
			case DA_MIN:
				if (!n[a])
					min_max(s, g, c, v[a], op->kind == DA_MAX);
				break;
			case DA_ISUM:
			case DA_VMAX:
			case DA_VMIN:
				if (!n[a])
				{
					int64		x = op->width == 2 ? DatumGetInt16(v[a]) :
						op->width == 4 ? DatumGetInt32(v[a]) : DatumGetInt64(v[a]);

					if (g->nulls[c])
						g->acc[c] = x;
					else if (op->kind == DA_ISUM)
						g->acc[c] += x;
					else if (op->kind == DA_VMAX ? x > g->acc[c] : x < g->acc[c])
						g->acc[c] = x;
					g->nulls[c] = false;
				}
				break;
		}
	}
	MemoryContextSwitchTo(old);
	/* a detoasted key or numeric (rare): the call only then */
	if (!s->row_cxt->isReset)
		MemoryContextReset(s->row_cxt);
	return true;
}

/*
 * da_receive
 *	  receiveSlot: one new row (keys, then the arguments) into its group.
 */
static bool
da_receive(TupleTableSlot *slot, DestReceiver *self)
{
	slot_getallattrs(slot);
	return cq_deltagg_add(self, slot->tts_values, slot->tts_isnull);
}

/*
 * cq_deltagg_scan_exprs
 *	  The expressions of sql->delta_c's columns, in order (the grouping
 *	  keys, then the arguments used), from the query's analysis an (whose
 *	  Vars read an->source_rti); for delta_scan.c, which computes them.
 */
List *
cq_deltagg_scan_exprs(const struct CqDeltaAgg *da, CqAnalysis *an)
{
	List	   *l = NIL;

	for (int c = 0; c < da->nscan; c++)
		l = lappend(l, c < da->ng ? list_nth(an->group_exprs, c) :
					list_nth(an->arg_exprs, da->scanx[c] - 1));
	return l;
}

static void
da_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	DaState    *s = (DaState *) self;

	if (typeinfo->natts != s->da->nscan)
		elog(ERROR, "pg_cq: unexpected row of the delta scan");
}

static void
da_shutdown(DestReceiver *self)
{
}

static void
da_destroy(DestReceiver *self)
{
}

/*
 * cq_deltagg_begin
 *	  A receiver for sql->delta_c's rows that aggregates them as d would,
 *	  for cq_deltagg_end to pass d's rows to fold (state: their layout).
 */
DestReceiver *
cq_deltagg_begin(struct CqDeltaAgg *da, DestReceiver *fold, TupleDesc state)
{
	DaState    *s;

	if (da->skip > 0)
	{
		da->skip--;
		return NULL;
	}
	s = palloc0(sizeof(DaState));
	s->budget = get_hash_memory_limit();
	if (state->natts != da->ncols)
		elog(ERROR, "pg_cq: the state row does not match the delta's aggregation");
	s->pub.receiveSlot = da_receive;
	s->pub.rStartup = da_startup;
	s->pub.rShutdown = da_shutdown;
	s->pub.rDestroy = da_destroy;
	/* any tag but DestNone and DestSPI: SPI reports SPI_OK_SELECT, keeps no rows */
	s->pub.mydest = DestTuplestore;
	s->da = da;
	s->fold = fold;
	s->desc = state;
	s->cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq delta aggregation",
								   ALLOCSET_DEFAULT_SIZES);
	s->row_cxt = AllocSetContextCreate(s->cxt, "pg_cq delta row", ALLOCSET_SMALL_SIZES);
	s->keys = MemoryContextAlloc(s->cxt, sizeof(Datum) * da->ng);
	s->mask = 1023;
	s->table = MemoryContextAllocZero(s->cxt, sizeof(DaGroup *) * (s->mask + 1));
	s->maxgroups = 1024;
	s->groups = MemoryContextAlloc(s->cxt, sizeof(DaGroup *) * s->maxgroups);
	s->ops = MemoryContextAlloc(s->cxt, sizeof(DaOp) * Max(da->nagg, 1));
	for (int i = 0; i < da->nagg; i++)
	{
		int			c = da->aggcol[i];

		s->ops[i].col = c;
		s->ops[i].arg = da->arg[c];
		s->ops[i].kind = da->colk[c];
		s->ops[i].width = da->width[c];
	}
	return &s->pub;
}

/*
 * cq_deltagg_end
 *	  Each group's row, as d returns it, to the fold's receiver; then the
 *	  groups are freed.  False when the groups outgrew the memory d's hash
 *	  aggregation has (hash_mem: work_mem x hash_mem_multiplier), which
 *	  would spill them to disk: then the scan stopped early, nothing went
 *	  to the fold, and the caller runs d instead (and so do the query's
 *	  next 16 batches in this process).  Stopping is the executor's own
 *	  way (receiveSlot returns false); handing over the groups formed so
 *	  far would give the fold a group twice, which it must not get.
 */
bool
cq_deltagg_end(DestReceiver *self)
{
	DaState    *s = (DaState *) self;
	struct CqDeltaAgg *da = (struct CqDeltaAgg *) s->da;
	TupleTableSlot *slot;
	MemoryContext old;

	if (s->full)
	{
		elog(DEBUG1, "pg_cq: the new rows' groups outgrew hash_mem (%zu bytes); the batch aggregates them in its statement",
			 s->budget);
		da->skip = 16;
		MemoryContextDelete(s->cxt);
		pfree(s);
		return false;
	}
	slot = MakeSingleTupleTableSlot(s->desc, &TTSOpsVirtual);

	for (int64 i = 0; i < s->ngroups; i++)
	{
		DaGroup    *g = s->groups[i];

		old = MemoryContextSwitchTo(s->row_cxt);
		ExecClearTuple(slot);
		for (int c = 0; c < da->ncols; c++)
		{
			slot->tts_isnull[c] = g->nulls[c];
			slot->tts_values[c] = g->vals[c];
			switch (da->colk[c])
			{
				case DA_ROWS:
				case DA_COUNT:
					slot->tts_values[c] = Int64GetDatum(g->acc[c]);
					slot->tts_isnull[c] = false;
					break;
				case DA_SUM:
					slot->tts_values[c] =
						cq_numsum_result(g->nulls[c] ? NULL : (CqNumSum *) DatumGetPointer(g->vals[c]),
										 &slot->tts_isnull[c]);
					break;
				case DA_ISUM:
					slot->tts_values[c] = Int64GetDatum(g->acc[c]);
					break;
				case DA_VMAX:
				case DA_VMIN:
					slot->tts_values[c] = da->width[c] == 2 ? Int16GetDatum((int16) g->acc[c]) :
						da->width[c] == 4 ? Int32GetDatum((int32) g->acc[c]) : Int64GetDatum(g->acc[c]);
					break;
				case DA_NULL:
					slot->tts_isnull[c] = true;
					slot->tts_values[c] = (Datum) 0;
					break;
			}
		}
		ExecStoreVirtualTuple(slot);
		MemoryContextSwitchTo(old);
		s->fold->receiveSlot(slot, s->fold);
		MemoryContextReset(s->row_cxt);
	}
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(s->cxt);
	pfree(s);
	return true;
}
