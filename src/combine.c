/*-------------------------------------------------------------------------
 *
 * combine.c
 *	  Generic combinable aggregates: any aggregate whose pg_aggregate row
 *	  has a combine function (and serial/deserial functions when its
 *	  transition type is internal) is computed per batch and merged, as
 *	  parallel aggregation does.
 *
 * Three SQL-callable pieces, called from the SQL aggregates.c generates:
 *
 *	cq.agg_partial(aggfnoid, filter, args...)	an aggregate: runs the target
 *		aggregate's transition function over a batch's rows and returns its
 *		transition value as a cq.agg_state;
 *	cq.agg_combine(stored, new)		the target's combine function;
 *	cq.agg_final(state, NULL::result, aggfnoid, NULL::arg...)	its final
 *		function (or the transition value itself).
 *
 * A cq.agg_state is a varlena: a header (format version, aggregate OID,
 * resolved transition type, input collation, NULL flag) and the transition
 * value, serialized by the aggregate's serialfn when its transition type is
 * internal, else by datumSerialize().  Such values are made only here: the
 * type's input function accepts text (so that pg_dump's copy of a state
 * table restores) but yields a value that holds no state and that every
 * function refuses; the type has no binary input.  So a deserial function
 * only ever reads bytes its own serial function wrote for the same
 * aggregate, whatever a role passes to these functions, which are therefore
 * safe to grant to PUBLIC: every call also checks the caller's EXECUTE right
 * on the aggregate and its owner's rights on the support functions, as the
 * executor does.
 *
 * Transition, combine and final functions are called as nodeAgg.c calls
 * them: strictness and NULL initial value rules, pass-by-reference values
 * kept in the aggregate context, and an AggState as fcinfo->context so that
 * AggCheckCallContext() accepts them.  In cq.agg_partial that is the real
 * AggState of the aggregate being computed; cq.agg_combine and cq.agg_final
 * are plain functions and build a minimal AggState whose aggregate context
 * is a standalone ExprContext freed (callbacks run) before they return.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "parser/parse_agg.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "combine.h"

/* Format version of a cq.agg_state; 0 marks a value read from text. */
#define AGG_STATE_VERSION 1
#define AGG_STATE_FROM_TEXT 0

/* flags */
#define AGG_STATE_NULL 0x0001	/* the transition value is NULL */

/* Header of a cq.agg_state; the transition value's bytes follow. */
typedef struct AggStateHeader
{
	int32		vl_len_;		/* varlena header */
	uint32		version;
	Oid			aggfnoid;		/* the aggregate */
	Oid			transtype;		/* its resolved transition type */
	Oid			collation;		/* its input collation */
	uint32		flags;
} AggStateHeader;

#define AGG_STATE_DATA(h) ((char *) (h) + sizeof(AggStateHeader))
#define AGG_STATE_DATALEN(h) (VARSIZE(h) - sizeof(AggStateHeader))

/* What a call needs of one aggregate; cached in fn_extra. */
typedef struct AggInfo
{
	Oid			aggfnoid;
	int			nargs;			/* input types checked, or -1 (combine) */
	Oid			argtypes[FUNC_MAX_ARGS];
	Oid			transtype;
	int16		transtyplen;
	bool		transtypbyval;
	bool		initval_isnull;
	Datum		initval;
	FmgrInfo	transfn;		/* fn_oid InvalidOid unless nargs >= 0 */
	FmgrInfo	combinefn;
	FmgrInfo	serialfn;		/* fn_oid InvalidOid unless internal */
	FmgrInfo	deserialfn;
	FmgrInfo	finalfn;		/* fn_oid InvalidOid when none or nargs < 0 */
	int			nfinalargs;
	Oid			resulttype;		/* InvalidOid when nargs < 0 */
	int16		resulttyplen;
	bool		resulttypbyval;
} AggInfo;

/* Per-group state of cq.agg_partial, in the group's aggregate context. */
typedef struct PartialState
{
	AggInfo    *info;
	Datum		transValue;
	bool		transValueIsNull;
	bool		noTransValue;	/* no input yet, NULL initial value */
} PartialState;

PG_FUNCTION_INFO_V1(cq_agg_state_in);
PG_FUNCTION_INFO_V1(cq_agg_state_out);
PG_FUNCTION_INFO_V1(cq_agg_partial_trans);
PG_FUNCTION_INFO_V1(cq_agg_partial_final);
PG_FUNCTION_INFO_V1(cq_agg_combine);
PG_FUNCTION_INFO_V1(cq_agg_final);

/*
 * check_fn_right
 *	  The aggregate's owner must be allowed to execute a support function,
 *	  as ExecInitAgg checks.
 */
static void
check_fn_right(Oid fn, Oid owner)
{
	AclResult	aclresult;

	if (!OidIsValid(fn))
		return;
	aclresult = pg_proc_aclcheck(fn, owner, ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(fn));
}

/*
 * agg_info_build
 *	  Look up aggregate aggfnoid in mcxt: check the caller may execute it,
 *	  that it can be combined, and (nargs >= 0) that argtypes are its input
 *	  types; resolve its polymorphic transition and result types; prepare
 *	  its support functions with expressions carrying the argument types,
 *	  as nodeAgg.c does, for get_fn_expr_argtype().
 *
 *	  With nargs < 0 (cq.agg_combine, which sees no inputs) the transition
 *	  type is state_transtype, which a state header recorded.
 */
static AggInfo *
agg_info_build(Oid aggfnoid, int nargs, const Oid *argtypes, Oid state_transtype,
			   MemoryContext mcxt)
{
	AggInfo    *info;
	HeapTuple	aggtup;
	HeapTuple	proctup;
	Form_pg_aggregate aggform;
	Form_pg_proc procform;
	AclResult	aclresult;
	MemoryContext old;
	Datum		initval;
	bool		initval_isnull;
	Oid			owner;
	Expr	   *expr;
	Oid			inputs[FUNC_MAX_ARGS];

	aggtup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(aggtup))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("function with OID %u is not an aggregate", aggfnoid)));
	proctup = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(proctup))
		elog(ERROR, "cache lookup failed for function %u", aggfnoid);
	aggform = (Form_pg_aggregate) GETSTRUCT(aggtup);
	procform = (Form_pg_proc) GETSTRUCT(proctup);
	owner = procform->proowner;

	aclresult = pg_proc_aclcheck(aggfnoid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_AGGREGATE, get_func_name(aggfnoid));

	if (aggform->aggkind != AGGKIND_NORMAL || OidIsValid(procform->provariadic) ||
		!OidIsValid(aggform->aggcombinefn) ||
		(aggform->aggtranstype == INTERNALOID &&
		 (!OidIsValid(aggform->aggserialfn) || !OidIsValid(aggform->aggdeserialfn))))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("aggregate %s cannot be computed from partial states",
						format_procedure(aggfnoid)),
				 errdetail("Only plain, non-variadic aggregates with a combine function (and serialization functions for an internal state) can.")));

	info = MemoryContextAllocZero(mcxt, sizeof(AggInfo));
	info->aggfnoid = aggfnoid;
	info->nargs = nargs;
	info->transtype = aggform->aggtranstype;
	if (nargs >= 0)
	{
		Oid		   *declared = procform->proargtypes.values;

		if (nargs != procform->pronargs)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("aggregate %s takes %d arguments, not %d",
							format_procedure(aggfnoid), procform->pronargs, nargs)));
		for (int i = 0; i < nargs; i++)
		{
			if (!OidIsValid(argtypes[i]) || argtypes[i] == UNKNOWNOID ||
				(!IsPolymorphicType(declared[i]) && declared[i] != ANYOID &&
				 !IsBinaryCoercible(argtypes[i], declared[i])))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("argument %d of aggregate %s has type %s, not %s",
								i + 1, format_procedure(aggfnoid),
								format_type_be(argtypes[i]), format_type_be(declared[i]))));
			info->argtypes[i] = argtypes[i];
		}
		if (!check_generic_type_consistency(argtypes, declared, nargs))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("argument types do not match the polymorphic arguments of aggregate %s",
							format_procedure(aggfnoid))));
		info->resulttype = enforce_generic_type_consistency(argtypes, declared, nargs,
															procform->prorettype, false);
		get_typlenbyval(info->resulttype, &info->resulttyplen, &info->resulttypbyval);
		memcpy(inputs, argtypes, nargs * sizeof(Oid));
		info->transtype = resolve_aggregate_transtype(aggfnoid, aggform->aggtranstype,
													  inputs, nargs);
		if (OidIsValid(state_transtype) && state_transtype != info->transtype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("state of aggregate %s has transition type %s, not %s",
							format_procedure(aggfnoid), format_type_be(state_transtype),
							format_type_be(info->transtype))));
	}
	else if (IsPolymorphicType(info->transtype))
		info->transtype = state_transtype;
	else if (state_transtype != info->transtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("state of aggregate %s has transition type %s, not %s",
						format_procedure(aggfnoid), format_type_be(state_transtype),
						format_type_be(info->transtype))));
	get_typlenbyval(info->transtype, &info->transtyplen, &info->transtypbyval);

	check_fn_right(aggform->aggtransfn, owner);
	check_fn_right(aggform->aggcombinefn, owner);
	check_fn_right(aggform->aggfinalfn, owner);
	if (info->transtype == INTERNALOID)
	{
		check_fn_right(aggform->aggserialfn, owner);
		check_fn_right(aggform->aggdeserialfn, owner);
	}

	old = MemoryContextSwitchTo(mcxt);
	if (nargs >= 0)
	{
		build_aggregate_transfn_expr(inputs, nargs, 0, false, info->transtype, InvalidOid,
									 aggform->aggtransfn, InvalidOid, &expr, NULL);
		fmgr_info_cxt(aggform->aggtransfn, &info->transfn, mcxt);
		fmgr_info_set_expr((Node *) expr, &info->transfn);

		/* strict transition function, NULL initial value: nodeAgg's rule */
		initval = SysCacheGetAttr(AGGFNOID, aggtup, Anum_pg_aggregate_agginitval, &initval_isnull);
		if (info->transfn.fn_strict && initval_isnull &&
			(nargs < 1 || !IsBinaryCoercible(inputs[0], info->transtype)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
					 errmsg("aggregate %u needs to have compatible input type and transition type",
							aggfnoid)));
		info->initval_isnull = initval_isnull;
		if (!initval_isnull)
		{
			Oid			typinput;
			Oid			typioparam;

			getTypeInputInfo(info->transtype, &typinput, &typioparam);
			info->initval = OidInputFunctionCall(typinput, TextDatumGetCString(initval),
												 typioparam, -1);
		}

		if (OidIsValid(aggform->aggfinalfn))
		{
			info->nfinalargs = aggform->aggfinalextra ? nargs + 1 : 1;
			build_aggregate_finalfn_expr(inputs, info->nfinalargs, info->transtype,
										 info->resulttype, InvalidOid, aggform->aggfinalfn, &expr);
			fmgr_info_cxt(aggform->aggfinalfn, &info->finalfn, mcxt);
			fmgr_info_set_expr((Node *) expr, &info->finalfn);
		}
	}

	/* the combine function's expression is its transition-style call on two states */
	inputs[0] = info->transtype;
	build_aggregate_transfn_expr(inputs, 1, 0, false, info->transtype, InvalidOid,
								 aggform->aggcombinefn, InvalidOid, &expr, NULL);
	fmgr_info_cxt(aggform->aggcombinefn, &info->combinefn, mcxt);
	fmgr_info_set_expr((Node *) expr, &info->combinefn);
	if (info->transtype == INTERNALOID)
	{
		build_aggregate_serialfn_expr(aggform->aggserialfn, &expr);
		fmgr_info_cxt(aggform->aggserialfn, &info->serialfn, mcxt);
		fmgr_info_set_expr((Node *) expr, &info->serialfn);
		build_aggregate_deserialfn_expr(aggform->aggdeserialfn, &expr);
		fmgr_info_cxt(aggform->aggdeserialfn, &info->deserialfn, mcxt);
		fmgr_info_set_expr((Node *) expr, &info->deserialfn);
	}
	MemoryContextSwitchTo(old);

	ReleaseSysCache(proctup);
	ReleaseSysCache(aggtup);
	return info;
}

/*
 * agg_info_cached
 *	  The AggInfo of this call site (fn_extra) if it is for the same
 *	  aggregate, transition type and inputs, else a new one.
 */
static AggInfo *
agg_info_cached(FunctionCallInfo fcinfo, Oid aggfnoid, int nargs, const Oid *argtypes,
				Oid state_transtype)
{
	AggInfo    *info = (AggInfo *) fcinfo->flinfo->fn_extra;

	if (info != NULL && info->aggfnoid == aggfnoid && info->nargs == nargs &&
		(!OidIsValid(state_transtype) || info->transtype == state_transtype) &&
		(nargs < 0 || memcmp(info->argtypes, argtypes, nargs * sizeof(Oid)) == 0))
		return info;
	info = agg_info_build(aggfnoid, nargs, argtypes, state_transtype, fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = info;
	return info;
}

/*
 * call_argtypes
 *	  Types of arguments first.. of this call (the VARIADIC "any" part),
 *	  into argtypes; returns their number.  An explicit VARIADIC array is
 *	  refused: the aggregate's inputs must be spelled out.
 */
static int
call_argtypes(FunctionCallInfo fcinfo, int first, Oid *argtypes, const char *fname)
{
	int			nargs = PG_NARGS() - first;

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s does not accept a VARIADIC array", fname),
				 errhint("Pass the aggregate's arguments one by one.")));
	if (nargs < 0 || nargs > FUNC_MAX_ARGS - 1)
		elog(ERROR, "%s called with %d arguments", fname, PG_NARGS());
	for (int i = 0; i < nargs; i++)
	{
		argtypes[i] = get_fn_expr_argtype(fcinfo->flinfo, first + i);
		if (!OidIsValid(argtypes[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("could not determine the type of argument %d of %s", first + i + 1, fname)));
	}
	return nargs;
}

/*
 * state_serialize
 *	  A cq.agg_state holding a transition value of info's aggregate,
 *	  palloc'd in the current memory context.  context is the AggState the
 *	  serial function sees.
 */
static bytea *
state_serialize(AggInfo *info, Oid collation, Datum value, bool isnull, Node *context)
{
	AggStateHeader *h;
	char	   *data = NULL;
	Size		len = 0;

	if (!isnull && info->transtype == INTERNALOID)
	{
		LOCAL_FCINFO(sfc, 1);
		Datum		res;

		InitFunctionCallInfoData(*sfc, &info->serialfn, 1, InvalidOid, context, NULL);
		sfc->args[0].value = value;
		sfc->args[0].isnull = false;
		res = FunctionCallInvoke(sfc);
		isnull = sfc->isnull;
		if (!isnull)
		{
			bytea	   *b = DatumGetByteaPP(res);

			data = VARDATA_ANY(b);
			len = VARSIZE_ANY_EXHDR(b);
		}
	}
	else if (!isnull)
	{
		char	   *p;

		/* a toasted transition value (the first input, strict rule) is read first */
		if (info->transtyplen == -1 && !VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(value)))
			value = PointerGetDatum(PG_DETOAST_DATUM(value));
		len = datumEstimateSpace(value, false, info->transtypbyval, info->transtyplen);
		data = p = palloc(len);
		datumSerialize(value, false, info->transtypbyval, info->transtyplen, &p);
	}

	h = palloc0(sizeof(AggStateHeader) + len);
	SET_VARSIZE(h, sizeof(AggStateHeader) + len);
	h->version = AGG_STATE_VERSION;
	h->aggfnoid = info->aggfnoid;
	h->transtype = info->transtype;
	h->collation = collation;
	h->flags = isnull ? AGG_STATE_NULL : 0;
	if (len > 0)
		memcpy(AGG_STATE_DATA(h), data, len);
	return (bytea *) h;
}

/*
 * state_header
 *	  Detoasted argument argno, a cq.agg_state made by this module.
 */
static AggStateHeader *
state_header(FunctionCallInfo fcinfo, int argno)
{
	AggStateHeader *h = (AggStateHeader *) PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));

	if (VARSIZE(h) < sizeof(AggStateHeader) || h->version == AGG_STATE_FROM_TEXT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value of type cq.agg_state holds no aggregate state"),
				 errdetail("It was read from text, which does not carry the state."),
				 errhint("A continuous query restored from a dump recomputes its state from its source.")));
	if (h->version != AGG_STATE_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized cq.agg_state format version %u", h->version)));
	return h;
}

/*
 * state_deserialize
 *	  The transition value in h, in the current memory context.
 */
static Datum
state_deserialize(AggInfo *info, AggStateHeader *h, Node *context, bool *isnull)
{
	if (h->flags & AGG_STATE_NULL)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (info->transtype == INTERNALOID)
	{
		LOCAL_FCINFO(dfc, 2);
		Size		len = AGG_STATE_DATALEN(h);
		bytea	   *b = palloc(VARHDRSZ + len);
		Datum		res;

		SET_VARSIZE(b, VARHDRSZ + len);
		memcpy(VARDATA(b), AGG_STATE_DATA(h), len);
		InitFunctionCallInfoData(*dfc, &info->deserialfn, 2, InvalidOid, context, NULL);
		dfc->args[0].value = PointerGetDatum(b);
		dfc->args[0].isnull = false;
		dfc->args[1].value = (Datum) 0;
		dfc->args[1].isnull = false;
		res = FunctionCallInvoke(dfc);
		*isnull = dfc->isnull;
		return res;
	}
	else
	{
		char	   *p = AGG_STATE_DATA(h);

		return datumRestore(&p, isnull);
	}
}

/*
 * fake_aggstate
 *	  An AggState whose aggregate context is econtext, for support
 *	  functions called outside an Agg node.
 */
static AggState *
fake_aggstate(ExprContext *econtext)
{
	AggState   *aggstate = makeNode(AggState);

	aggstate->curaggcontext = econtext;
	aggstate->tmpcontext = econtext;
	return aggstate;
}

/*
 * cq_agg_state_in
 *	  Text input of cq.agg_state: accepted (a dump of a state table must
 *	  restore) but the value holds no state, so that no role can make a
 *	  deserial function read bytes of its choice.
 */
Datum
cq_agg_state_in(PG_FUNCTION_ARGS)
{
	AggStateHeader *h = palloc0(sizeof(AggStateHeader));

	SET_VARSIZE(h, sizeof(AggStateHeader));
	h->version = AGG_STATE_FROM_TEXT;
	PG_RETURN_POINTER(h);
}

/*
 * cq_agg_state_out
 *	  Display form of a cq.agg_state: the aggregate and the state's size.
 */
Datum
cq_agg_state_out(PG_FUNCTION_ARGS)
{
	AggStateHeader *h = (AggStateHeader *) PG_DETOAST_DATUM(PG_GETARG_DATUM(0));

	if (VARSIZE(h) < sizeof(AggStateHeader) || h->version != AGG_STATE_VERSION)
		PG_RETURN_CSTRING(pstrdup("(no state)"));
	PG_RETURN_CSTRING(psprintf("(aggregate %u, %s, %u bytes)", h->aggfnoid,
							   (h->flags & AGG_STATE_NULL) ? "null" : "value",
							   (unsigned) AGG_STATE_DATALEN(h)));
}

/*
 * cq_agg_partial_trans
 *	  Transition function of cq.agg_partial(aggfnoid oid, filter bool,
 *	  VARIADIC "any"): the target aggregate's transition function applied
 *	  to the row's arguments, when filter is true, with nodeAgg.c's rules
 *	  (advance_transition_function).  The first call of a group creates the
 *	  group's state, so a group always has one, even when no row passes the
 *	  filter.
 */
Datum
cq_agg_partial_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	PartialState *st;
	AggInfo    *info;
	Oid			argtypes[FUNC_MAX_ARGS];
	int			nargs;
	Oid			aggfnoid;
	Datum		newVal;
	bool		newIsNull;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cq.agg_partial_trans called in non-aggregate context")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("aggregate OID of cq.agg_partial must not be null")));
	aggfnoid = PG_GETARG_OID(1);
	nargs = PG_NARGS() - 3;
	info = (AggInfo *) fcinfo->flinfo->fn_extra;
	if (info == NULL)
	{
		/* first row of the aggregate: types checked once */
		nargs = call_argtypes(fcinfo, 3, argtypes, "cq.agg_partial");
		info = agg_info_cached(fcinfo, aggfnoid, nargs, argtypes, InvalidOid);
	}
	else if (info->aggfnoid != aggfnoid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("aggregate OID of cq.agg_partial must be the same for every row")));

	if (PG_ARGISNULL(0))
	{
		st = MemoryContextAllocZero(aggcontext, sizeof(PartialState));
		st->info = info;
		st->transValueIsNull = info->initval_isnull;
		st->noTransValue = info->initval_isnull;
		if (!info->initval_isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(aggcontext);

			st->transValue = datumCopy(info->initval, info->transtypbyval, info->transtyplen);
			MemoryContextSwitchTo(old);
		}
	}
	else
		st = (PartialState *) PG_GETARG_POINTER(0);

	/* FILTER (WHERE ...): a NULL or false condition skips the row */
	if (PG_ARGISNULL(2) || !PG_GETARG_BOOL(2))
		PG_RETURN_POINTER(st);

	if (info->transfn.fn_strict)
	{
		for (int i = 0; i < nargs; i++)
			if (PG_ARGISNULL(3 + i))
				PG_RETURN_POINTER(st);
		if (st->noTransValue)
		{
			/* the first non-NULL input becomes the transition value */
			MemoryContext old = MemoryContextSwitchTo(aggcontext);

			st->transValue = datumCopy(PG_GETARG_DATUM(3), info->transtypbyval, info->transtyplen);
			MemoryContextSwitchTo(old);
			st->transValueIsNull = false;
			st->noTransValue = false;
			PG_RETURN_POINTER(st);
		}
		if (st->transValueIsNull)
			PG_RETURN_POINTER(st);
	}

	{
		LOCAL_FCINFO(tfc, FUNC_MAX_ARGS);

		InitFunctionCallInfoData(*tfc, &info->transfn, nargs + 1, PG_GET_COLLATION(),
								 fcinfo->context, NULL);
		tfc->args[0].value = st->transValue;
		tfc->args[0].isnull = st->transValueIsNull;
		for (int i = 0; i < nargs; i++)
			tfc->args[i + 1] = fcinfo->args[3 + i];
		newVal = FunctionCallInvoke(tfc);
		newIsNull = tfc->isnull;
	}

	/* a new pass-by-reference value moves into the aggregate context */
	if (!info->transtypbyval && DatumGetPointer(newVal) != DatumGetPointer(st->transValue))
	{
		if (!newIsNull)
		{
			MemoryContext old = MemoryContextSwitchTo(aggcontext);

			if (!(DatumIsReadWriteExpandedObject(newVal, false, info->transtyplen) &&
				  MemoryContextGetParent(DatumGetEOHP(newVal)->eoh_context) == CurrentMemoryContext))
				newVal = datumCopy(newVal, false, info->transtyplen);
			MemoryContextSwitchTo(old);
		}
		if (!st->transValueIsNull)
		{
			if (DatumIsReadWriteExpandedObject(st->transValue, false, info->transtyplen))
				DeleteExpandedObject(st->transValue);
			else
				pfree(DatumGetPointer(st->transValue));
		}
	}
	st->transValue = newVal;
	st->transValueIsNull = newIsNull;
	PG_RETURN_POINTER(st);
}

/*
 * cq_agg_partial_final
 *	  Final function of cq.agg_partial: the group's transition value as a
 *	  cq.agg_state.
 */
Datum
cq_agg_partial_final(PG_FUNCTION_ARGS)
{
	PartialState *st;

	if (!AggCheckCallContext(fcinfo, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cq.agg_partial_final called in non-aggregate context")));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (PartialState *) PG_GETARG_POINTER(0);
	PG_RETURN_BYTEA_P(state_serialize(st->info, PG_GET_COLLATION(), st->transValue,
									  st->transValueIsNull, fcinfo->context));
}

/*
 * cq_agg_combine
 *	  cq.agg_combine(stored, new): the two states merged by the aggregate's
 *	  combine function, with nodeAgg.c's strict-combine rules.  A NULL
 *	  argument is no state: the other one is returned.
 */
Datum
cq_agg_combine(PG_FUNCTION_ARGS)
{
	AggStateHeader *h1;
	AggStateHeader *h2;
	AggInfo    *info;
	ExprContext *econtext;
	AggState   *aggstate;
	MemoryContext old;
	Datum		v1;
	Datum		v2;
	bool		n1;
	bool		n2;
	Datum		res;
	bool		resnull;
	bytea	   *result;

	if (PG_ARGISNULL(0) && PG_ARGISNULL(1))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
	{
		int			argno = PG_ARGISNULL(0) ? 1 : 0;

		(void) state_header(fcinfo, argno);
		PG_RETURN_DATUM(PG_GETARG_DATUM(argno));
	}
	h1 = state_header(fcinfo, 0);
	h2 = state_header(fcinfo, 1);
	if (h1->aggfnoid != h2->aggfnoid || h1->transtype != h2->transtype ||
		h1->collation != h2->collation)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot combine states of different aggregates"),
				 errdetail("The states are of aggregates %u and %u.", h1->aggfnoid, h2->aggfnoid)));
	info = agg_info_cached(fcinfo, h1->aggfnoid, -1, NULL, h1->transtype);

	econtext = CreateStandaloneExprContext();
	aggstate = fake_aggstate(econtext);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	v1 = state_deserialize(info, h1, (Node *) aggstate, &n1);
	v2 = state_deserialize(info, h2, (Node *) aggstate, &n2);
	if (info->combinefn.fn_strict && (n1 || n2))
	{
		res = n2 ? v1 : v2;
		resnull = n1 && n2;
	}
	else
	{
		LOCAL_FCINFO(cfc, 2);

		InitFunctionCallInfoData(*cfc, &info->combinefn, 2, h1->collation,
								 (Node *) aggstate, NULL);
		cfc->args[0].value = v1;
		cfc->args[0].isnull = n1;
		cfc->args[1].value = v2;
		cfc->args[1].isnull = n2;
		res = FunctionCallInvoke(cfc);
		resnull = cfc->isnull;
	}
	MemoryContextSwitchTo(old);
	result = state_serialize(info, h1->collation, res, resnull, (Node *) aggstate);
	FreeExprContext(econtext, true);
	PG_RETURN_BYTEA_P(result);
}

/*
 * cq_agg_final
 *	  cq.agg_final(state, NULL::result, aggfnoid, NULL::arg...): the
 *	  aggregate's final value of a state (of no input when state is NULL),
 *	  as finalize_aggregate() computes it.  The second argument carries the
 *	  result type, the trailing ones the input types (which a polymorphic
 *	  final function may read); both are checked against the aggregate.
 */
Datum
cq_agg_final(PG_FUNCTION_ARGS)
{
	AggStateHeader *h = NULL;
	AggInfo    *info;
	Oid			argtypes[FUNC_MAX_ARGS];
	int			nargs;
	Oid			resulttype;
	Oid			collation = PG_GET_COLLATION();
	ExprContext *econtext;
	AggState   *aggstate;
	MemoryContext old;
	Datum		value;
	bool		isnull;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("aggregate OID of cq.agg_final must not be null")));
	nargs = call_argtypes(fcinfo, 3, argtypes, "cq.agg_final");
	if (!PG_ARGISNULL(0))
	{
		h = state_header(fcinfo, 0);
		if (h->aggfnoid != PG_GETARG_OID(2))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("state is of aggregate %u, not %u", h->aggfnoid, PG_GETARG_OID(2))));
		collation = h->collation;
	}
	info = agg_info_cached(fcinfo, PG_GETARG_OID(2), nargs, argtypes,
						   h ? h->transtype : InvalidOid);
	resulttype = get_fn_expr_argtype(fcinfo->flinfo, 1);
	if (resulttype != info->resulttype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("aggregate %s returns %s, not %s", format_procedure(info->aggfnoid),
						format_type_be(info->resulttype), format_type_be(resulttype))));

	econtext = CreateStandaloneExprContext();
	aggstate = fake_aggstate(econtext);
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	if (h != NULL)
		value = state_deserialize(info, h, (Node *) aggstate, &isnull);
	else
	{
		isnull = info->initval_isnull;
		value = isnull ? (Datum) 0 :
			datumCopy(info->initval, info->transtypbyval, info->transtyplen);
	}
	if (OidIsValid(info->finalfn.fn_oid))
	{
		LOCAL_FCINFO(ffc, FUNC_MAX_ARGS);
		bool		anynull = isnull;

		InitFunctionCallInfoData(*ffc, &info->finalfn, info->nfinalargs, collation,
								 (Node *) aggstate, NULL);
		ffc->args[0].value = value;
		ffc->args[0].isnull = isnull;
		for (int i = 1; i < info->nfinalargs; i++)
		{
			ffc->args[i].value = (Datum) 0;
			ffc->args[i].isnull = true;
			anynull = true;
		}
		if (ffc->flinfo->fn_strict && anynull)
			isnull = true;
		else
		{
			value = FunctionCallInvoke(ffc);
			isnull = ffc->isnull;
		}
	}
	MemoryContextSwitchTo(old);
	if (!isnull)
		value = datumCopy(value, info->resulttypbyval, info->resulttyplen);
	FreeExprContext(econtext, true);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(value);
}
