/*-------------------------------------------------------------------------
 *
 * aggregates.c
 *	  The aggregate table: how each supported aggregate is decomposed into
 *	  mergeable state columns, merged and finalized.
 *
 * Adding an aggregate is one entry in agg_kinds.  Only this file knows the
 * table's layout: analyze.c finds an aggregate's kind and registers its
 * state columns through cq_agg_kind_find and cq_agg_add_part; state.c and
 * sink.c read the final expression through cq_agg_final_template.  Pure
 * computation: no SPI, no catalog writes.
 *
 * Any other aggregate that PostgreSQL can combine takes the generic path
 * (combine.c): one state column of type cq.agg_state per aggregate, the
 * partial cq.agg_partial(aggregate, filter, arguments...), the merge
 * cq.agg_combine(stored, new) and the final cq.agg_final(state, NULL::result,
 * aggregate, NULL::argument...).  The table's entries stay: their plain SQL
 * aggregates and operators are faster than fmgr calls through a serialized
 * state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "aggregates.h"
#include "catalog.h"
#include "combine.h"
#include "sql_builder.h"

/*
 * How one aggregate is split into state columns.
 *
 * Templates: partial uses %1$s for the argument; type TYPE_AGG means the
 * aggregate's own result type, TYPE_SUM that of sum() over the argument;
 * merge uses %1$s (stored) and %2$s (new); state columns with the same
 * partial expression and type are shared between aggregates;
 * final uses %1$s, %2$s, %3$s for the parts.  Generated SQL runs with
 * search_path = pg_catalog, so operators need no qualification.
 */
typedef struct CqAggPart
{
	const char *partial;
	Oid			type;			/* TYPE_AGG: the aggregate's own; TYPE_SUM: sum()'s */
	const char *merge;
	const char *numeric;		/* partial over a numeric argument with 0.2's
								 * cq.numeric_* aggregates (numagg.c), or NULL */
} CqAggPart;

#define TYPE_AGG InvalidOid
#define TYPE_SUM ((Oid) 1)

typedef enum CqArgClass
{
	ARG_ANY,					/* any input type */
	ARG_EXACT,					/* int2, int4, int8, numeric */
	ARG_FLOAT,					/* float4, float8 */
	ARG_INTERVAL				/* interval */
} CqArgClass;

typedef struct CqAggKind
{
	const char *name;			/* pg_catalog aggregate name */
	bool		star;			/* count(*) */
	CqArgClass	argclass;
	int			nparts;
	CqAggPart	parts[3];
	const char *final;
} CqAggKind;

/*
 * MERGE_LEAST, MERGE_GREATEST: of equal values that print differently
 * (numeric 1.0 and 1.00, float 0 and -0, citext 'A' and 'a'), min and max
 * keep the one read last, as PostgreSQL's transition functions do
 * (numeric_larger(), float8larger(), text_larger() return their second
 * argument unless the first is strictly greater).  least() and greatest()
 * keep the first of equal arguments, so the newer value goes first.
 */
#define MERGE_LEAST "least(%2$s, %1$s)"
#define MERGE_GREATEST "greatest(%2$s, %1$s)"
#define MERGE_ADD "%1$s + %2$s"
#define MERGE_SUM "coalesce(%1$s + %2$s, %1$s, %2$s)"
#define PART_COUNT {"count(%1$s)", INT8OID, MERGE_ADD}
#define PART_SUM {"sum(%1$s)", TYPE_SUM, MERGE_SUM, "cq.numeric_sum(%1$s)"}
#define PART_NSUM {"sum(%1$s::pg_catalog.numeric)", NUMERICOID, MERGE_SUM}
#define PART_NSUMSQ {"sum(%1$s::pg_catalog.numeric * %1$s::pg_catalog.numeric)", NUMERICOID, MERGE_SUM}
#define PART_F8STATE {"cq.float8_state(%1$s::pg_catalog.float8)", FLOAT8ARRAYOID, "float8_combine(%1$s, %2$s)"}

/*
 * Exact variance of numeric input, computed as numeric_stddev_internal()
 * does: numerator n*Sxx - Sx*Sx (exact), divided at numeric_div's scale.
 * The square root is taken 20 digits beyond that scale and rounded to it,
 * which matches sqrt_var()'s correctly rounded result (SQL's sqrt() alone
 * works one digit past the scale and would round twice).  NaN and
 * infinite inputs make the numerator NaN (inf - inf, or NaN), and the
 * result NaN, as numeric_stddev_internal() returns for them; scale() of
 * NaN is NULL, so stddev must not round it.
 */
#define NUM_VAR(minn, denom) \
	"CASE WHEN %1$s <= " minn " THEN NULL " \
	"WHEN %1$s::numeric * %3$s - %2$s * %2$s <= 0 THEN 0::numeric " \
	"ELSE (%1$s::numeric * %3$s - %2$s * %2$s) / (" denom ") END"
#define NUM_STDDEV(minn, denom) \
	"CASE WHEN %1$s <= " minn " THEN NULL " \
	"WHEN %1$s::numeric * %3$s - %2$s * %2$s <= 0 THEN 0::numeric " \
	"ELSE (SELECT CASE WHEN v = 'NaN'::numeric THEN v " \
	"ELSE round(sqrt(round(v, scale(v) + 20)), scale(v)) END FROM (SELECT " \
	"(%1$s::numeric * %3$s - %2$s * %2$s) / (" denom ") AS v) v) END"
#define DENOM_SAMP "%1$s::numeric * (%1$s - 1)::numeric"
#define DENOM_POP "%1$s::numeric * %1$s::numeric"

static const CqAggKind agg_kinds[] = {
	{"count", true, ARG_ANY, 1, {{"count(*)", INT8OID, MERGE_ADD}}, "%1$s"},
	{"count", false, ARG_ANY, 1, {PART_COUNT}, "%1$s"},
	{"sum", false, ARG_ANY, 1, {{"sum(%1$s)", TYPE_AGG, MERGE_SUM, "cq.numeric_sum(%1$s)"}}, "%1$s"},
	{"avg", false, ARG_EXACT, 2, {PART_SUM, PART_COUNT},
	"CASE WHEN %2$s = 0 THEN NULL ELSE %1$s::numeric / %2$s::numeric END"},
	/* avg(float): float8_accum() sums from +0, so an all -0 input averages to 0 */
	{"avg", false, ARG_FLOAT, 2,
		{{"sum(%1$s::pg_catalog.float8)", FLOAT8OID, MERGE_SUM}, PART_COUNT},
	"CASE WHEN %2$s = 0 THEN NULL ELSE (%1$s + 0::float8) / %2$s::float8 END"},
	{"avg", false, ARG_INTERVAL, 2, {{"sum(%1$s)", INTERVALOID, MERGE_SUM}, PART_COUNT},
	"CASE WHEN %2$s = 0 THEN NULL ELSE %1$s / %2$s::float8 END"},
	{"min", false, ARG_ANY, 1, {{"min(%1$s)", TYPE_AGG, MERGE_LEAST, "cq.numeric_min(%1$s)"}}, "%1$s"},
	{"max", false, ARG_ANY, 1, {{"max(%1$s)", TYPE_AGG, MERGE_GREATEST, "cq.numeric_max(%1$s)"}}, "%1$s"},
	{"var_samp", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_VAR("1", DENOM_SAMP)},
	{"variance", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_VAR("1", DENOM_SAMP)},
	{"var_pop", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_VAR("0", DENOM_POP)},
	{"stddev_samp", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_STDDEV("1", DENOM_SAMP)},
	{"stddev", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_STDDEV("1", DENOM_SAMP)},
	{"stddev_pop", false, ARG_EXACT, 3, {PART_COUNT, PART_NSUM, PART_NSUMSQ}, NUM_STDDEV("0", DENOM_POP)},
	{"var_samp", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_var_samp(%1$s)"},
	{"variance", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_var_samp(%1$s)"},
	{"var_pop", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_var_pop(%1$s)"},
	{"stddev_samp", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_stddev_samp(%1$s)"},
	{"stddev", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_stddev_samp(%1$s)"},
	{"stddev_pop", false, ARG_FLOAT, 1, {PART_F8STATE}, "float8_stddev_pop(%1$s)"},
	{"bool_and", false, ARG_ANY, 1, {{"bool_and(%1$s)", TYPE_AGG, "coalesce(%1$s AND %2$s, %1$s, %2$s)"}}, "%1$s"},
	{"every", false, ARG_ANY, 1, {{"every(%1$s)", TYPE_AGG, "coalesce(%1$s AND %2$s, %1$s, %2$s)"}}, "%1$s"},
	{"bool_or", false, ARG_ANY, 1, {{"bool_or(%1$s)", TYPE_AGG, "coalesce(%1$s OR %2$s, %1$s, %2$s)"}}, "%1$s"},
	{"bit_and", false, ARG_ANY, 1, {{"bit_and(%1$s)", TYPE_AGG, "coalesce(%1$s & %2$s, %1$s, %2$s)"}}, "%1$s"},
	{"bit_or", false, ARG_ANY, 1, {{"bit_or(%1$s)", TYPE_AGG, "coalesce(%1$s | %2$s, %1$s, %2$s)"}}, "%1$s"},
	{"bit_xor", false, ARG_ANY, 1, {{"bit_xor(%1$s)", TYPE_AGG, "coalesce(%1$s # %2$s, %1$s, %2$s)"}}, "%1$s"},
};

/* Accessors for state.c and sink.c, which must not know the table's layout. */
const char *
cq_agg_kind_final(const CqAggKind *kind)
{
	return kind->final;
}

int
cq_agg_kind_nparts(const CqAggKind *kind)
{
	return kind->nparts;
}

/*
 * cq_agg_kind_idempotent
 *	  Does a value seen twice leave the aggregate unchanged (min, max, the
 *	  boolean and bitwise and/or)?  Then agg(DISTINCT x) equals agg(x) and
 *	  needs no record of the values seen.
 */
bool
cq_agg_kind_idempotent(const CqAggKind *kind)
{
	static const char *const names[] = {"min", "max", "bool_and", "bool_or", "every",
	"bit_and", "bit_or"};

	for (int i = 0; i < lengthof(names); i++)
		if (strcmp(kind->name, names[i]) == 0)
			return true;
	return false;
}

/*
 * arg_class_matches
 *	  Does an input type belong to an argument class?
 */
static bool
arg_class_matches(CqArgClass cls, Oid type)
{
	switch (cls)
	{
		case ARG_ANY:
			return true;
		case ARG_EXACT:
			return type == INT2OID || type == INT4OID || type == INT8OID || type == NUMERICOID;
		case ARG_FLOAT:
			return type == FLOAT4OID || type == FLOAT8OID;
		case ARG_INTERVAL:
			return type == INTERVALOID;
	}
	return false;
}

/*
 * cq_agg_kind_find
 *	  The decomposition of a built-in aggregate, or NULL.
 */
const CqAggKind *
cq_agg_kind_find(Aggref *agg, Oid argtype)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	const char *name;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", agg->aggfnoid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	name = pstrdup(NameStr(proc->proname));
	if (proc->pronamespace != PG_CATALOG_NAMESPACE)
	{
		ReleaseSysCache(tup);
		return NULL;
	}
	ReleaseSysCache(tup);

	for (int i = 0; i < lengthof(agg_kinds); i++)
	{
		const CqAggKind *k = &agg_kinds[i];

		if (strcmp(k->name, name) != 0 || k->star != agg->aggstar)
			continue;
		if (!agg->aggstar && !arg_class_matches(k->argclass, argtype))
			continue;
		return k;
	}
	return NULL;
}

/*
 * numeric_aggs_present
 *	  Does the catalog have cq.numeric_sum, cq.numeric_min and cq.numeric_max
 *	  (0.2)?  Their results are PostgreSQL's sum, min and max exactly, for
 *	  fewer instructions a row (numagg.c); a 0.1 catalog keeps PostgreSQL's.
 *	  Asked whenever SQL is built: generated SQL is cached with the
 *	  catalog's version (plan.c).  Not over a Citus source
 *	  (CqAgg.builtin_numeric): its partial aggregates may run on worker
 *	  nodes, whose catalog need not have them.
 */
static bool
numeric_aggs_present(void)
{
	Oid			arg = NUMERICOID;

	return cq_catalog_version() >= CQ_CATALOG_0_2 &&
		OidIsValid(cq_catalog_function("numeric_sum", 1, &arg)) &&
		OidIsValid(cq_catalog_function("numeric_min", 1, &arg)) &&
		OidIsValid(cq_catalog_function("numeric_max", 1, &arg));
}

/*
 * cq_agg_add_part
 *	  The state column for part k of aggregate a: an existing one in *parts with the
 *	  same partial expression and type, column n (the row count) for a plain
 *	  count(*), or a new one.  Returns its index, or -1 for n.  A DISTINCT
 *	  aggregate's partial reads its new values y<N> (see state.c).
 */
int
cq_agg_add_part(List **parts, CqAgg *a, int k)
{
	const CqAggPart *kp = &a->kind->parts[k];
	CqPart	   *part = palloc0(sizeof(CqPart));
	Oid			type = kp->type;
	int			i = 0;
	ListCell   *lc;

	/* a DISTINCT aggregate reads the batch's new values, FILTER applied */
	part->partial = psprintf(kp->numeric && a->arg_type == NUMERICOID && !a->builtin_numeric &&
							 numeric_aggs_present() ?
							 kp->numeric : kp->partial,
							 a->distinct_col > 0 ? psprintf("i.y%d", a->distinct_col) :
							 a->arg_col >= 0 ? psprintf("i.x%d", a->arg_col + 1) : "");
	if (a->filter_col >= 0 && a->distinct_col == 0)
		part->partial = psprintf("%s FILTER (WHERE i.f%d)", part->partial, a->filter_col + 1);
	else if (strcmp(part->partial, "count(*)") == 0)
		return -1;
	part->merge = kp->merge;
	if (type == TYPE_SUM)
		type = (a->arg_type == INT2OID || a->arg_type == INT4OID) ? INT8OID : NUMERICOID;
	else if (type == TYPE_AGG)
	{
		type = a->aggref->aggtype;
		if (type_is_collatable(type))
			part->collation = a->aggref->inputcollid;
	}
	part->type = cq_sql_type(type, -1);

	foreach(lc, *parts)
	{
		CqPart	   *other = lfirst(lc);

		if (strcmp(other->partial, part->partial) == 0 && strcmp(other->type, part->type) == 0 &&
			other->collation == part->collation)
			return i;
		i++;
	}
	*parts = lappend(*parts, part);
	return i;
}

/*
 * cq_agg_part_merge_n
 *	  The N-ary form of a state column's binary merge (CqPart.merge), for
 *	  session windows (session.c), where a row that bridges sessions merges
 *	  any number of partial states into one: an aggregate over them, with
 *	  %1$s the column and %2$s an ORDER BY clause (stored states first, the
 *	  new one last, so that of equal values min and max keep the one read
 *	  last, as MERGE_LEAST and MERGE_GREATEST do).  Its result is cast back
 *	  to the column's type (sum over int8 gives numeric).  NULL for a merge
 *	  this table does not know.
 */
const char *
cq_agg_part_merge_n(const CqPart *part)
{
	static const char *const map[][2] = {
		{MERGE_ADD, "sum(%1$s %2$s)"},
		{MERGE_SUM, "sum(%1$s %2$s)"},
		{MERGE_LEAST, "min(%1$s %2$s)"},
		{MERGE_GREATEST, "max(%1$s %2$s)"},
		{"float8_combine(%1$s, %2$s)", "cq.float8_merge(%1$s %2$s)"},
		{"coalesce(%1$s AND %2$s, %1$s, %2$s)", "bool_and(%1$s %2$s)"},
		{"coalesce(%1$s OR %2$s, %1$s, %2$s)", "bool_or(%1$s %2$s)"},
		{"coalesce(%1$s & %2$s, %1$s, %2$s)", "bit_and(%1$s %2$s)"},
		{"coalesce(%1$s | %2$s, %1$s, %2$s)", "bit_or(%1$s %2$s)"},
		{"coalesce(%1$s # %2$s, %1$s, %2$s)", "bit_xor(%1$s %2$s)"},
		{CQ_AGG_COMBINE "(%1$s, %2$s)", "cq.agg_merge(%1$s %2$s)"},
	};

	for (int i = 0; i < lengthof(map); i++)
		if (strcmp(part->merge, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/*
 * cq_agg_part_merge_kind
 *	  Which of the self-mergeable binary merges a state column uses (its
 *	  CqPart.merge), for the store's merge in C (store_fold.c), which must
 *	  compute exactly what the template does: CQ_MERGE_ADD "a + b",
 *	  CQ_MERGE_SUM "coalesce(a + b, a, b)", CQ_MERGE_LEAST "least(new,
 *	  stored)", CQ_MERGE_GREATEST "greatest(new, stored)"; CQ_MERGE_OTHER
 *	  for any other.
 */
CqMergeKind
cq_agg_part_merge_kind(const CqPart *part)
{
	if (strcmp(part->merge, MERGE_ADD) == 0)
		return CQ_MERGE_ADD;
	if (strcmp(part->merge, MERGE_SUM) == 0)
		return CQ_MERGE_SUM;
	if (strcmp(part->merge, MERGE_LEAST) == 0)
		return CQ_MERGE_LEAST;
	if (strcmp(part->merge, MERGE_GREATEST) == 0)
		return CQ_MERGE_GREATEST;
	return CQ_MERGE_OTHER;
}

/* Accessors for state.c: either path. */
const char *
cq_agg_final_template(const CqAgg *a)
{
	return a->kind ? a->kind->final : a->final;
}

int
cq_agg_nparts(const CqAgg *a)
{
	return a->kind ? a->kind->nparts : 1;
}

/*
 * cq_agg_generic_check
 *	  Raise an error unless an aggregate outside the table can take the
 *	  generic path: it has arguments, is not variadic, has a combine
 *	  function, and serialization functions when its state is internal;
 *	  and the catalog has the generic path's objects (0.2).
 */
void
cq_agg_generic_check(Aggref *agg)
{
	HeapTuple	tup;
	Form_pg_aggregate aggform;
	const char *why = NULL;
	bool		variadic;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", agg->aggfnoid);
	variadic = OidIsValid(((Form_pg_proc) GETSTRUCT(tup))->provariadic);
	ReleaseSysCache(tup);
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", agg->aggfnoid);
	aggform = (Form_pg_aggregate) GETSTRUCT(tup);
	if (!OidIsValid(aggform->aggcombinefn))
		why = psprintf("Aggregate %s has no combine function, so the partial results of two batches cannot be merged.", format_procedure(agg->aggfnoid));
	else if (aggform->aggtranstype == INTERNALOID &&
			 (!OidIsValid(aggform->aggserialfn) || !OidIsValid(aggform->aggdeserialfn)))
		why = psprintf("The state of aggregate %s is of type internal and it has no serialization functions, so it cannot be stored between batches.", format_procedure(agg->aggfnoid));
	else if (variadic)
		why = psprintf("Aggregate %s is variadic.", format_procedure(agg->aggfnoid));
	else if (agg->args == NIL)
		why = psprintf("Aggregate %s has no arguments; of those, only count(*) is supported.", format_procedure(agg->aggfnoid));
	ReleaseSysCache(tup);
	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s is not supported in continuous queries", format_procedure(agg->aggfnoid)),
				 errdetail_internal("%s", why),
				 errhint("Use an aggregate that PostgreSQL can combine (pg_aggregate.aggcombinefn), as for parallel aggregation.")));
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s needs version 0.2 of extension pg_cq", format_procedure(agg->aggfnoid)),
				 errdetail("The database's pg_cq catalog is version 0.1, which computes only count, sum, avg, min, max, the variance and stddev family and the boolean and bitwise aggregates."),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE.")));
}

/*
 * sql_type_template
 *	  cq_sql_type() for use inside a format template: '%' doubled.
 */
static char *
sql_type_template(Oid type)
{
	const char *t = cq_sql_type(type, -1);
	StringInfoData buf;

	initStringInfo(&buf);
	for (; *t; t++)
	{
		if (*t == '%')
			appendStringInfoChar(&buf, '%');
		appendStringInfoChar(&buf, *t);
	}
	return buf.data;
}

/*
 * cq_agg_generic_add_part
 *	  The cq.agg_state column of a generic aggregate a (arg_cols and
 *	  filter_col set), shared with an equal one already in *parts; sets its
 *	  final template.  The aggregate is named by a regprocedure constant, so
 *	  that the final view depends on it.  Returns the column's index.
 */
int
cq_agg_generic_add_part(List **parts, CqAgg *a)
{
	CqPart	   *part = palloc0(sizeof(CqPart));
	StringInfoData buf;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s('%u'::pg_catalog.regprocedure, ", CQ_AGG_PARTIAL, a->aggref->aggfnoid);
	if (a->filter_col >= 0)
		appendStringInfo(&buf, "i.f%d", a->filter_col + 1);
	else
		appendStringInfoString(&buf, "true");
	foreach(lc, a->arg_cols)
		appendStringInfo(&buf, ", i.x%d", lfirst_int(lc) + 1);
	appendStringInfoChar(&buf, ')');
	part->partial = buf.data;
	part->merge = CQ_AGG_COMBINE "(%1$s, %2$s)";
	part->type = CQ_AGG_STATE_TYPE;

	initStringInfo(&buf);
	appendStringInfo(&buf, "%s(%%1$s, NULL::%s, '%u'::pg_catalog.regprocedure", CQ_AGG_FINAL,
					 sql_type_template(a->aggref->aggtype), a->aggref->aggfnoid);
	foreach(lc, a->aggref->args)
		appendStringInfo(&buf, ", NULL::%s",
						 sql_type_template(exprType((Node *) ((TargetEntry *) lfirst(lc))->expr)));
	appendStringInfoChar(&buf, ')');
	a->final = buf.data;

	foreach(lc, *parts)
	{
		CqPart	   *other = lfirst(lc);

		if (strcmp(other->partial, part->partial) == 0 && strcmp(other->type, part->type) == 0)
			return i;
		i++;
	}
	*parts = lappend(*parts, part);
	return i;
}
