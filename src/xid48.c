/*-------------------------------------------------------------------------
 *
 * xid48.c
 *	  cq.xid48: a transaction id with epoch (an xid8's value) in 6 bytes.
 *
 * docs/design-stamp.md says why: a narrower exact stamp for cq_xid.  The
 * value is the xid8's own (epoch << 32 | xid), exact while it is below 2^48
 * (epochs below 65536); xid8 -> cq.xid48 fails above with
 * ERRCODE_PROGRAM_LIMIT_EXCEEDED, cq.xid48 -> xid8 never fails.  Text is
 * the xid8's (decimal; a literal written for xid8 means the same value),
 * binary I/O an 8-byte integer as xid8send's, so clients read either type
 * the same way.  The bytes are xid48.h's.
 *
 * Comparisons with cq.xid48 or xid8 on either side compare the 64-bit
 * values; they and xid8's own operators form one btree family (the planner
 * combines bounds across the types), the equalities one hash family (the
 * hash of a value is xid8's, hashint8's), and the cross-type operators sit
 * in the BRIN minmax family too, so that cq_xid >= $1::xid8 scans a BRIN
 * index of a cq.xid48 column.
 *
 * Every function is strict and allocates its result, if by reference, in
 * the caller's memory context; none keeps state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/fmgrprotos.h"
#include "utils/sortsupport.h"
#include "utils/xid8.h"

#include "xid48.h"

PG_FUNCTION_INFO_V1(cq_xid48_in);
PG_FUNCTION_INFO_V1(cq_xid48_out);
PG_FUNCTION_INFO_V1(cq_xid48_recv);
PG_FUNCTION_INFO_V1(cq_xid48_send);
PG_FUNCTION_INFO_V1(cq_xid48);
PG_FUNCTION_INFO_V1(cq_xid48_to_xid8);
PG_FUNCTION_INFO_V1(cq_current_xid48);
PG_FUNCTION_INFO_V1(cq_xid48_sortsupport);
PG_FUNCTION_INFO_V1(cq_xid48_hash);
PG_FUNCTION_INFO_V1(cq_xid48_hash_extended);

/*
 * xid48_does_not_fit: the error for a value of 2^48 or more.  The detail
 * gives the cluster's epoch: only a cluster whose epoch was raised by hand
 * (pg_resetwal -e) makes such transaction ids.
 */
static void
pg_attribute_noreturn()
xid48_does_not_fit(uint64 value)
{
	FullTransactionId next = ReadNextFullTransactionId();

	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("transaction id %llu does not fit in cq.xid48",
					(unsigned long long) value),
			 errdetail("The cluster's epoch is %u; cq.xid48 holds transaction ids of epochs below 65536 (values below 2^48).",
					   EpochFromFullTransactionId(next)),
			 errhint("Store such transaction ids as xid8.")));
}

/*
 * cq_xid48_from_u64: value as a cq.xid48 datum, 6 bytes palloc'd in the
 * current memory context; the error above when it does not fit.
 */
Datum
cq_xid48_from_u64(uint64 value)
{
	void	   *bytes;

	if (value >= CQ_XID48_LIMIT)
		xid48_does_not_fit(value);
	bytes = palloc(CQ_XID48_LEN);
	cq_xid48_put(bytes, value);
	return PointerGetDatum(bytes);
}

/* argument n of the current function, of either type, as its value */
#define ARG_XID48(n)	cq_xid48_get(PG_GETARG_POINTER(n))
#define ARG_XID8(n)		U64FromFullTransactionId(PG_GETARG_FULLTRANSACTIONID(n))

/*
 * cq_xid48_in: decimal text, as xid8in reads it (base prefixes too: '010'
 * is 8 for both types), but stricter: text that is not a number, a minus
 * sign or anything after the digits but spaces is an error, where xid8in
 * reads 0 or what the digits before it say.
 */
Datum
cq_xid48_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	const char *s = str;
	char	   *end;
	uint64		value;

	while (isspace((unsigned char) *s))
		s++;
	if (!isdigit((unsigned char) *s) && !(*s == '+' && isdigit((unsigned char) s[1])))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "cq.xid48", str)));
	errno = 0;
	value = strtou64(s, &end, 0);
	if (errno == ERANGE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value \"%s\" is out of range for type %s", str, "cq.xid48")));
	while (isspace((unsigned char) *end))
		end++;
	if (*end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "cq.xid48", str)));
	PG_RETURN_DATUM(cq_xid48_from_u64(value));
}

/*
 * cq_xid48_out: the value in decimal, as xid8out writes it.
 */
Datum
cq_xid48_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(psprintf(UINT64_FORMAT, ARG_XID48(0)));
}

/*
 * cq_xid48_recv: an 8-byte integer, as xid8recv reads it; the error above
 * when it does not fit.
 */
Datum
cq_xid48_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_DATUM(cq_xid48_from_u64((uint64) pq_getmsgint64(buf)));
}

/*
 * cq_xid48_send: the value as an 8-byte integer, as xid8send writes it.
 */
Datum
cq_xid48_send(PG_FUNCTION_ARGS)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) ARG_XID48(0));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * cq_xid48: the cast xid8 -> cq.xid48 (assignment); the error above when
 * the value does not fit.
 */
Datum
cq_xid48(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(cq_xid48_from_u64(ARG_XID8(0)));
}

/*
 * cq_xid48_to_xid8: the cast cq.xid48 -> xid8 (implicit); never fails.
 */
Datum
cq_xid48_to_xid8(PG_FUNCTION_ARGS)
{
	PG_RETURN_FULLTRANSACTIONID(FullTransactionIdFromU64(ARG_XID48(0)));
}

/* the top-level transaction cq_xid48_current made bytes for last, and them */
static FullTransactionId current_xact = {0};
static uint8 *current_bytes = NULL;

/*
 * cq_xid48_current: the current top-level transaction's id (assigned if it
 * has none) as the 6 bytes of a cq.xid48, the error above when it does not
 * fit.  The bytes are made once a transaction, in TopTransactionContext,
 * and the same pointer is returned until the transaction ends: the id does
 * not change while it runs, and is never that of a later transaction of
 * this backend, so the pointer is never used once its memory is gone.
 * Callers must not change or free the bytes (no datum of a fixed-length
 * type is changed in place or freed by whoever reads it).
 */
const void *
cq_xid48_current(void)
{
	FullTransactionId top = GetTopFullTransactionId();

	if (unlikely(current_bytes == NULL || !FullTransactionIdEquals(top, current_xact)))
	{
		uint64		value = U64FromFullTransactionId(top);
		uint8	   *bytes;

		if (value >= CQ_XID48_LIMIT)
			xid48_does_not_fit(value);
		bytes = MemoryContextAlloc(TopTransactionContext, CQ_XID48_LEN);
		cq_xid48_put(bytes, value);
		current_bytes = bytes;
		current_xact = top;
	}
	return current_bytes;
}

/*
 * cq_current_xid48: pg_current_xact_id() as a cq.xid48 (assigns the
 * transaction an id if it has none); refused during recovery as
 * pg_current_xact_id() is.  COPY evaluates a column default once a row:
 * the datum is cq_xid48_current's, made once a transaction, not a palloc
 * a call (+58-70 instructions a row, bench/README.md's stamp round 13).
 */
Datum
cq_current_xid48(PG_FUNCTION_ARGS)
{
	PreventCommandDuringRecovery("cq.current_xid48()");
	PG_RETURN_POINTER(cq_xid48_current());
}

/*
 * Comparisons.  XID48_COMPARISONS(prefix, left, right) defines the six
 * operators' functions prefix_eq ... prefix_ge and the btree support
 * function prefix_cmp for arguments read by the macros left and right.
 */
#define XID48_COMPARE(prefix, suffix, left, right, result) \
PG_FUNCTION_INFO_V1(prefix##_##suffix); \
Datum \
prefix##_##suffix(PG_FUNCTION_ARGS) \
{ \
	uint64		a = left(0); \
	uint64		b = right(1); \
	result; \
}

#define XID48_COMPARISONS(prefix, left, right) \
XID48_COMPARE(prefix, eq, left, right, PG_RETURN_BOOL(a == b)) \
XID48_COMPARE(prefix, ne, left, right, PG_RETURN_BOOL(a != b)) \
XID48_COMPARE(prefix, lt, left, right, PG_RETURN_BOOL(a < b)) \
XID48_COMPARE(prefix, le, left, right, PG_RETURN_BOOL(a <= b)) \
XID48_COMPARE(prefix, gt, left, right, PG_RETURN_BOOL(a > b)) \
XID48_COMPARE(prefix, ge, left, right, PG_RETURN_BOOL(a >= b)) \
XID48_COMPARE(prefix, cmp, left, right, PG_RETURN_INT32(a < b ? -1 : (a > b ? 1 : 0)))

XID48_COMPARISONS(cq_xid48, ARG_XID48, ARG_XID48)
XID48_COMPARISONS(cq_xid48_xid8, ARG_XID48, ARG_XID8)
XID48_COMPARISONS(cq_xid8_xid48, ARG_XID8, ARG_XID48)

/*
 * xid48_fastcmp: the sort comparator of two cq.xid48 datums.
 */
static int
xid48_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	uint64		a = cq_xid48_get(DatumGetPointer(x));
	uint64		b = cq_xid48_get(DatumGetPointer(y));

	return a < b ? -1 : (a > b ? 1 : 0);
}

/*
 * cq_xid48_sortsupport: btree support function 2 (sorts and index builds
 * compare without a function call per pair).
 */
Datum
cq_xid48_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = xid48_fastcmp;
	PG_RETURN_VOID();
}

/*
 * cq_xid48_hash: the value's hash, xid8's (hashint8 of the value), so that
 * the hash family can hold the cross-type equalities.
 */
Datum
cq_xid48_hash(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(hashint8, Int64GetDatum((int64) ARG_XID48(0)));
}

/*
 * cq_xid48_hash_extended: the seeded hash, xid8's (hashint8extended).
 */
Datum
cq_xid48_hash_extended(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall2(hashint8extended, Int64GetDatum((int64) ARG_XID48(0)),
							   PG_GETARG_DATUM(1));
}
