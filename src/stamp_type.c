/*-------------------------------------------------------------------------
 *
 * stamp_type.c
 *	  The type of a source's cq_xid column: xid8, or pg_cq's cq.xid48 (the
 *	  same value in 6 bytes, docs/design-stamp.md), and what the column's
 *	  readers need of it.
 *
 * Both types are supported side by side: cq.stamp_type chooses the type of
 * a column tracking adds, every other path reads the column's atttypid.
 * cq.xid48 is an extension type, its OID and those of its functions and
 * operators differ per database and installation: they are looked up in
 * the extension's schema once a backend and forgotten at any change of
 * pg_type or pg_proc (an extension dropped, created or updated sends one);
 * InvalidOid on a 0.1 catalog, which has no cq.xid48.
 *
 * A batch's bounds ($1, $2) stay xid8 whatever the column's type: the
 * cross-type operators (cq.xid48, xid8) of the type's btree and BRIN
 * families compare them with the column, so statements, parameter types
 * and cached plans are the same for both; only the operators differ.
 *
 * No memory is kept but the OIDs; datums made here are palloc'd in the
 * caller's context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/xid8.h"

#include "stamp_type.h"
#include "guc.h"
#include "catalog.h"

/* a comparison function whose strategy a scan key's function tells */
typedef struct StampCmp
{
	Oid			fn;
	int			strategy;		/* BT*StrategyNumber */
	bool		arg_byval;		/* its right argument: xid8, else cq.xid48 */
} StampCmp;

#define NCMP 15

static struct
{
	bool		known;			/* looked up since the last invalidation */
	Oid			xid48;			/* cq.xid48, or InvalidOid (catalog 0.1) */
	Oid			current;		/* cq.current_xid48() */
	StampCmp	cmp[NCMP];		/* xid8's, (xid48, xid8) and (xid48, xid48) */
	int			ncmp;
}			st;

static bool callbacks = false;

/* bumped by every invalidation: a look-up it overtook is not kept */
static uint64 inval_count = 0;

/*
 * stamp_type_inval
 *	  pg_type or pg_proc changed: look everything up again.
 */
static void
stamp_type_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	st.known = false;
	inval_count++;
}

/*
 * add_cmp
 *	  Note function cq.<prefix>_<suffix>(cq.xid48, right) of strategy s.
 */
static void
add_cmp(Oid fn, int strategy, bool arg_byval)
{
	if (!OidIsValid(fn) || st.ncmp == NCMP)
		return;
	st.cmp[st.ncmp].fn = fn;
	st.cmp[st.ncmp].strategy = strategy;
	st.cmp[st.ncmp].arg_byval = arg_byval;
	st.ncmp++;
}

/*
 * look_up
 *	  The OIDs, once after each invalidation.
 */
static void
look_up(void)
{
	static const char *const names[5] = {"lt", "le", "eq", "ge", "gt"};
	static const int strategies[5] = {BTLessStrategyNumber, BTLessEqualStrategyNumber,
	BTEqualStrategyNumber, BTGreaterEqualStrategyNumber, BTGreaterStrategyNumber};
	Oid			nsp;
	uint64		count;

	if (st.known)
		return;
	if (!callbacks)
	{
		CacheRegisterSyscacheCallback(TYPEOID, stamp_type_inval, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, stamp_type_inval, (Datum) 0);
		callbacks = true;
	}
	count = inval_count;
	memset(&st, 0, sizeof(st));
	add_cmp(F_XID8LT, BTLessStrategyNumber, true);
	add_cmp(F_XID8LE, BTLessEqualStrategyNumber, true);
	add_cmp(F_XID8EQ, BTEqualStrategyNumber, true);
	add_cmp(F_XID8GE, BTGreaterEqualStrategyNumber, true);
	add_cmp(F_XID8GT, BTGreaterStrategyNumber, true);
	nsp = get_namespace_oid("cq", true);
	if (OidIsValid(nsp))
		st.xid48 = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("xid48"),
								   ObjectIdGetDatum(nsp));
	if (OidIsValid(st.xid48))
	{
		Oid			cross[2] = {st.xid48, XID8OID};
		Oid			same[2] = {st.xid48, st.xid48};

		st.current = cq_catalog_function("current_xid48", 0, NULL);
		for (int i = 0; i < 5; i++)
		{
			add_cmp(cq_catalog_function(psprintf("xid48_xid8_%s", names[i]), 2, cross), strategies[i], true);
			add_cmp(cq_catalog_function(psprintf("xid48_%s", names[i]), 2, same), strategies[i], false);
		}
	}
	/* an invalidation taken meanwhile (by a look-up above): next time again */
	st.known = count == inval_count;
}

/*
 * cq_stamp_xid48_type
 *	  OID of cq.xid48, or InvalidOid (a catalog without it: 0.1).
 */
Oid
cq_stamp_xid48_type(void)
{
	look_up();
	return st.xid48;
}

/*
 * cq_stamp_current_xid48_function
 *	  OID of cq.current_xid48(), the default of a cq.xid48 cq_xid, or
 *	  InvalidOid.
 */
Oid
cq_stamp_current_xid48_function(void)
{
	look_up();
	return st.current;
}

/*
 * cq_stamp_type_ok
 *	  Can a cq_xid column be of this type?
 */
bool
cq_stamp_type_ok(Oid type)
{
	return type == XID8OID || (OidIsValid(type) && type == cq_stamp_xid48_type());
}

/*
 * cq_stamp_type_of
 *	  The type of column att (cq_xid) of the table, or InvalidOid when it
 *	  has none or it is neither xid8 nor cq.xid48.
 */
Oid
cq_stamp_type_of(Oid relid, AttrNumber att)
{
	Oid			type;

	if (att == InvalidAttrNumber)
		return InvalidOid;
	type = get_atttype(relid, att);
	return cq_stamp_type_ok(type) ? type : InvalidOid;
}

/*
 * cq_stamp_operator
 *	  The operator op (">=", "<", ...) comparing a cq_xid of type coltype
 *	  with an xid8 (a batch's bound): pg_catalog's for xid8, cq's
 *	  (cq.xid48, xid8) for cq.xid48.  An error when there is none.
 */
Oid
cq_stamp_operator(Oid coltype, const char *op)
{
	const char *schema = coltype == XID8OID ? "pg_catalog" : "cq";
	Oid			opno = OpernameGetOprid(list_make2(makeString((char *) schema), makeString(pstrdup(op))),
										coltype, XID8OID);

	if (!OidIsValid(opno))
		elog(ERROR, "pg_cq: operator %s.%s (%s, xid8) not found", schema, op, format_type_be(coltype));
	return opno;
}

/*
 * cq_stamp_operator_sql
 *	  cq_stamp_operator as SQL text, OPERATOR(schema.op), the schema named
 *	  from the operator's OID: generated SQL runs under search_path =
 *	  pg_catalog, pg_temp, where a bare ">=" between a cq.xid48 column and
 *	  an xid8 would resolve to xid8's operator through the implicit cast,
 *	  (cq_xid)::xid8 >= $1, which no index of the column serves.
 */
char *
cq_stamp_operator_sql(Oid coltype, const char *op)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(cq_stamp_operator(coltype, op)));
	char	   *nsp;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "pg_cq: cache lookup failed for operator %s", op);
	nsp = get_namespace_name(((Form_pg_operator) GETSTRUCT(tup))->oprnamespace);
	ReleaseSysCache(tup);
	return psprintf("OPERATOR(%s.%s)", quote_identifier(nsp), op);
}

/*
 * cq_stamp_key_strategy
 *	  The btree strategy of a scan key on cq_xid whose comparison function
 *	  is fn (xid8's, or cq.xid48's with an xid8 or cq.xid48 on the right),
 *	  with *value its argument's value; 0 for any other function.
 */
int
cq_stamp_key_strategy(Oid fn, Datum arg, uint64 *value)
{
	bool		arg_xid8;
	int			strategy = cq_stamp_cmp_strategy(fn, &arg_xid8);

	if (strategy != 0)
		*value = cq_stamp_get(arg, arg_xid8);
	return strategy;
}

/*
 * cq_stamp_cmp_strategy
 *	  The btree strategy of comparison function fn on a cq_xid (xid8's, or
 *	  cq.xid48's with an xid8 or a cq.xid48 on the right: *arg_xid8 says
 *	  which), or 0 for any other function.
 */
int
cq_stamp_cmp_strategy(Oid fn, bool *arg_xid8)
{
	look_up();
	for (int i = 0; i < st.ncmp; i++)
		if (st.cmp[i].fn == fn)
		{
			*arg_xid8 = st.cmp[i].arg_byval;
			return st.cmp[i].strategy;
		}
	return 0;
}

/*
 * cq_stamp_datum
 *	  value as a datum of type (xid8, or cq.xid48: 6 bytes palloc'd in the
 *	  current memory context).
 */
Datum
cq_stamp_datum(uint64 value, Oid type)
{
	if (type == XID8OID)
		return FullTransactionIdGetDatum(FullTransactionIdFromU64(value));
	return cq_xid48_from_u64(value);
}

/*
 * cq_stamp_new_type
 *	  The type of a cq_xid column tracking adds now: cq.stamp_type's, but
 *	  xid8 for a Citus table (its stamps come from the coordinator's or the
 *	  nodes' xid spaces; citus.c reads xid8 only) and, with a NOTICE, when
 *	  the cluster's next transaction id is past 2^47 (half of what
 *	  cq.xid48 holds).  cq.stamp_type = 'xid48' on a catalog without the
 *	  type is an error.
 */
Oid
cq_stamp_new_type(bool distributed)
{
	Oid			xid48;

	if (cq_stamp_type != CQ_STAMP_XID48)
		return XID8OID;
	xid48 = cq_stamp_xid48_type();
	if (!OidIsValid(xid48))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cq.stamp_type \"xid48\" needs pg_cq 0.2"),
				 errdetail("The pg_cq catalog of this database has no type cq.xid48."),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE, or set cq.stamp_type to \"xid8\".")));
	if (distributed)
	{
		ereport(NOTICE,
				(errmsg("pg_cq stamps this source with xid8, not cq.xid48"),
				 errdetail("It is a Citus table: its stamps come from other nodes' transaction ids, which pg_cq keeps as xid8.")));
		return XID8OID;
	}
	if (U64FromFullTransactionId(ReadNextFullTransactionId()) >= (CQ_XID48_LIMIT >> 1))
	{
		ereport(NOTICE,
				(errmsg("pg_cq stamps this source with xid8, not cq.xid48"),
				 errdetail("The cluster's next transaction id, %llu, is past 2^47.",
						   (unsigned long long) U64FromFullTransactionId(ReadNextFullTransactionId())),
				 errhint("cq.xid48 holds transaction ids below 2^48.")));
		return XID8OID;
	}
	return xid48;
}

/*
 * cq_stamp_current_bytes
 *	  The current top-level transaction's id as a cq.xid48's bytes, the
 *	  same pointer for the whole transaction (cq_xid48_current).
 */
void *
cq_stamp_current_bytes(void)
{
	return unconstify(void *, cq_xid48_current());
}
