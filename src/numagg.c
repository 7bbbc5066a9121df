/*-------------------------------------------------------------------------
 *
 * numagg.c
 *	  sum, min and max of numeric for the partial states of a batch (the
 *	  generated statements' d), cheaper per row than PostgreSQL's own and
 *	  with exactly their results.
 *
 * PostgreSQL's sum(numeric) (numeric_avg_accum) and max/min(numeric)
 * (numeric_larger/numeric_smaller) copy every input: a numeric read from a
 * heap tuple has a 1-byte varlena header, which PG_GETARG_NUMERIC turns into
 * a palloc'd 4-byte-header copy, once per aggregate and row, and the sum
 * then adds it digit by digit into a NumericSumAccum.  These read the packed
 * value in place (either header, digits read unaligned) instead:
 *
 *	cq.numeric_sum(numeric)	an int128 of the inputs scaled to the largest
 *		display scale seen so far, while each input and the sum fit in it;
 *		any input or sum that does not fit is added in numeric (numeric_add)
 *		to a second part, and the final adds the two.  NaN, Infinity and
 *		-Infinity are counted apart, as do_numeric_accum() does.  Result:
 *		NULL without a non-NULL input, NaN with a NaN (or both infinities),
 *		else the exact sum at the largest display scale of the inputs: what
 *		numeric_sum() returns, byte for byte (the same packed form
 *		make_result() builds).
 *	cq.numeric_max(numeric), cq.numeric_min(numeric)	the transition value
 *		is the numeric itself, compared in place as cmp_numerics() orders
 *		them (NaN above +Infinity); of equal values the later one is kept,
 *		as numeric_larger() and numeric_smaller() do (1.0 vs 1.00).  When the
 *		kept value does not change the transition function returns it
 *		unchanged and nodeAgg copies nothing; a compressed or out-of-line
 *		value is kept detoasted.
 *
 * The 0.2 catalog declares them (pg_cq--0.1--0.2.sql); aggregates.c chooses
 * them for d's partial states when they exist, else generates PostgreSQL's
 * sum, min and max as before.  The stored states and every merge and final
 * expression are unchanged: a state made by either is the same value.
 * Without a 128-bit integer type the sum adds every input in numeric.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

#include "numagg.h"

/*
 * The packed numeric format (numeric.c's NumericShort/NumericLong, the
 * on-disk format, stable across releases): the first 16-bit word holds the
 * flag bits, then either sign, display scale and weight (short), or sign
 * and display scale followed by a 16-bit weight (long); then the base-10000
 * digits, stripped of leading and trailing zero digits.
 */
#define NUM_SIGN_MASK		0xC000
#define NUM_POS				0x0000
#define NUM_NEG				0x4000
#define NUM_SHORT			0x8000
#define NUM_SPECIAL			0xC000
#define NUM_NAN				0xC000
#define NUM_PINF			0xD000
#define NUM_NINF			0xF000
#define NUM_SHORT_SIGN_MASK	0x2000
#define NUM_SHORT_DSCALE_MASK 0x1F80
#define NUM_SHORT_DSCALE_SHIFT 7
#define NUM_SHORT_DSCALE_MAX (NUM_SHORT_DSCALE_MASK >> NUM_SHORT_DSCALE_SHIFT)
#define NUM_SHORT_WEIGHT_SIGN_MASK 0x0040
#define NUM_SHORT_WEIGHT_MASK 0x003F
#define NUM_SHORT_WEIGHT_MIN (-(NUM_SHORT_WEIGHT_MASK + 1))
#define NUM_DSCALE_MASK		0x3FFF
#define NUM_NBASE			10000

/*
 * A varlena with a 1-byte header held inline (VARATT_IS_SHORT is true of
 * a TOAST pointer's header too).
 */
#define NUM_INLINE_SHORT(p) (VARATT_IS_SHORT(p) && !VARATT_IS_EXTERNAL(p))

/* what kind of value a packed numeric holds */
typedef enum CqNumKind
{
	CQ_NUM_FINITE,				/* a number */
	CQ_NUM_NAN,					/* NaN */
	CQ_NUM_PINF,				/* Infinity */
	CQ_NUM_NINF					/* -Infinity */
} CqNumKind;

/* a packed numeric read in place */
typedef struct CqNum
{
	CqNumKind	kind;
	bool		neg;			/* finite and negative */
	int			weight;			/* of the first digit (finite) */
	int			dscale;			/* display scale (finite) */
	int			ndigits;
	const char *digits;			/* ndigits int16, unaligned */
} CqNum;

/*
 * num_read
 *	  Reads the numeric datum d in place.  A compressed or out-of-line
 *	  value (rare for numeric) is detoasted into the current memory context.
 */
static inline void
num_read(Datum d, CqNum *n)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	const char *data;
	int			len;
	uint16		head;

	if (NUM_INLINE_SHORT(v))
	{
		data = VARDATA_SHORT(v);
		len = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;
	}
	else
	{
		if (VARATT_IS_EXTENDED(v))
			v = pg_detoast_datum_packed(v);
		data = VARDATA_ANY(v);
		len = VARSIZE_ANY_EXHDR(v);
	}
	memcpy(&head, data, sizeof(head));
	if ((head & NUM_SIGN_MASK) == NUM_SPECIAL)
	{
		/* a 4-byte NaN of an old release has the same first word */
		n->kind = head == NUM_PINF ? CQ_NUM_PINF : head == NUM_NINF ? CQ_NUM_NINF : CQ_NUM_NAN;
		n->neg = false;
		n->weight = n->dscale = n->ndigits = 0;
		n->digits = NULL;
		return;
	}
	n->kind = CQ_NUM_FINITE;
	if ((head & NUM_SIGN_MASK) == NUM_SHORT)
	{
		n->neg = (head & NUM_SHORT_SIGN_MASK) != 0;
		n->dscale = (head & NUM_SHORT_DSCALE_MASK) >> NUM_SHORT_DSCALE_SHIFT;
		n->weight = ((head & NUM_SHORT_WEIGHT_SIGN_MASK) ? ~NUM_SHORT_WEIGHT_MASK : 0) |
			(head & NUM_SHORT_WEIGHT_MASK);
		n->digits = data + sizeof(uint16);
		n->ndigits = (len - (int) sizeof(uint16)) / (int) sizeof(int16);
	}
	else
	{
		int16		weight;

		memcpy(&weight, data + sizeof(uint16), sizeof(weight));
		n->neg = (head & NUM_SIGN_MASK) == NUM_NEG;
		n->dscale = head & NUM_DSCALE_MASK;
		n->weight = weight;
		n->digits = data + 2 * sizeof(uint16);
		n->ndigits = (len - 2 * (int) sizeof(uint16)) / (int) sizeof(int16);
	}
}

/* digit i of a finite CqNum */
static inline int
num_digit(const CqNum *n, int i)
{
	int16		d;

	memcpy(&d, n->digits + i * sizeof(int16), sizeof(d));
	return d;
}

/*
 * num_cmp_abs
 *	  Compares the absolute values of two finite numbers, as numeric.c's
 *	  cmp_abs_common().
 */
static int
num_cmp_abs(const CqNum *a, const CqNum *b)
{
	int			wa = a->weight;
	int			wb = b->weight;
	int			ia = 0;
	int			ib = 0;

	/* digits of a above b's first digit, or the reverse */
	while (wa > wb && ia < a->ndigits)
	{
		if (num_digit(a, ia++) != 0)
			return 1;
		wa--;
	}
	while (wb > wa && ib < b->ndigits)
	{
		if (num_digit(b, ib++) != 0)
			return -1;
		wb--;
	}
	/* at this point, either wa == wb or we've run out of digits */
	if (wa == wb)
	{
		while (ia < a->ndigits && ib < b->ndigits)
		{
			int			d = num_digit(a, ia++) - num_digit(b, ib++);

			if (d != 0)
				return d > 0 ? 1 : -1;
		}
	}
	/* the longer one is larger if any of its remaining digits is not zero */
	while (ia < a->ndigits)
		if (num_digit(a, ia++) != 0)
			return 1;
	while (ib < b->ndigits)
		if (num_digit(b, ib++) != 0)
			return -1;
	return 0;
}

/*
 * num_cmp
 *	  cmp_numerics() over packed values: -Infinity < numbers < Infinity <
 *	  NaN, and NaN equal to NaN.
 */
static int
num_cmp(const CqNum *a, const CqNum *b)
{
	static const int rank[] = {[CQ_NUM_NINF] = 0,[CQ_NUM_FINITE] = 1,[CQ_NUM_PINF] = 2,[CQ_NUM_NAN] = 3};

	if (a->kind != CQ_NUM_FINITE || b->kind != CQ_NUM_FINITE)
		return rank[a->kind] < rank[b->kind] ? -1 : rank[a->kind] > rank[b->kind] ? 1 : 0;
	if (a->ndigits == 0)
		return b->ndigits == 0 ? 0 : b->neg ? 1 : -1;
	if (b->ndigits == 0)
		return a->neg ? -1 : 1;
	if (a->neg != b->neg)
		return a->neg ? -1 : 1;
	return a->neg ? num_cmp_abs(b, a) : num_cmp_abs(a, b);
}

/*
 * num_cmp_short
 *	  num_cmp() of two values in the short format whose first digit is not
 *	  zero (all of a packed value's digits are the number's: a nonzero
 *	  first digit makes the weight the order of magnitude); false when
 *	  either is not such a value (then num_cmp() decides).  a and b point
 *	  at varlenas with 1-byte headers.
 */
static pg_attribute_always_inline bool
num_cmp_short(const char *a, const char *b, int *cmp)
{
	uint16		ha;
	uint16		hb;
	int			na = (VARSIZE_SHORT(a) - VARHDRSZ_SHORT - sizeof(uint16)) / sizeof(int16);
	int			nb = (VARSIZE_SHORT(b) - VARHDRSZ_SHORT - sizeof(uint16)) / sizeof(int16);
	const char *da = a + VARHDRSZ_SHORT + sizeof(uint16);
	const char *db = b + VARHDRSZ_SHORT + sizeof(uint16);
	int16		x;
	int16		y;
	int			wa;
	int			wb;
	int			r = 0;

	memcpy(&ha, a + VARHDRSZ_SHORT, sizeof(ha));
	memcpy(&hb, b + VARHDRSZ_SHORT, sizeof(hb));
	if ((ha & NUM_SIGN_MASK) != NUM_SHORT || (hb & NUM_SIGN_MASK) != NUM_SHORT ||
		na == 0 || nb == 0)
		return false;
	memcpy(&x, da, sizeof(x));
	memcpy(&y, db, sizeof(y));
	if (x == 0 || y == 0)
		return false;
	if ((ha ^ hb) & NUM_SHORT_SIGN_MASK)
	{
		*cmp = (ha & NUM_SHORT_SIGN_MASK) ? -1 : 1;
		return true;
	}
	wa = ((ha & NUM_SHORT_WEIGHT_SIGN_MASK) ? ~NUM_SHORT_WEIGHT_MASK : 0) | (ha & NUM_SHORT_WEIGHT_MASK);
	wb = ((hb & NUM_SHORT_WEIGHT_SIGN_MASK) ? ~NUM_SHORT_WEIGHT_MASK : 0) | (hb & NUM_SHORT_WEIGHT_MASK);
	if (wa != wb)
		r = wa > wb ? 1 : -1;
	else
	{
		int			i;

		for (i = 0; i < na && i < nb; i++)
		{
			memcpy(&x, da + i * sizeof(int16), sizeof(x));
			memcpy(&y, db + i * sizeof(int16), sizeof(y));
			if (x != y)
				break;
		}
		if (i < na && i < nb)
			r = x > y ? 1 : -1;
		else if (na != nb)
			r = na > nb ? 1 : -1;	/* a packed value's last digit is not zero */
	}
	*cmp = (ha & NUM_SHORT_SIGN_MASK) ? -r : r;
	return true;
}

/*
 * num_cmp_datums
 *	  cmp_numerics() of two numeric datums, read in place.
 */
static inline int
num_cmp_datums(Datum a, Datum b)
{
	CqNum		na;
	CqNum		nb;
	int			cmp;

	if (NUM_INLINE_SHORT(DatumGetPointer(a)) && NUM_INLINE_SHORT(DatumGetPointer(b)) &&
		num_cmp_short(DatumGetPointer(a), DatumGetPointer(b), &cmp))
		return cmp;
	num_read(a, &na);
	num_read(b, &nb);
	return num_cmp(&na, &nb);
}

/*
 * num_kept
 *	  The input min or max keeps, as its transition value: as it is, unless
 *	  compressed or out of line (a TOAST pointer must not outlive the
 *	  scan's row in the aggregate's state, nor reach the state rows), then
 *	  detoasted as numeric_larger() returns it.
 */
static inline Datum
num_kept(Datum d)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);

	if (VARATT_IS_EXTENDED(v) && !NUM_INLINE_SHORT(v))
		return PointerGetDatum(pg_detoast_datum(v));
	return d;
}

/*
 * cq_numeric_keeps, cq_numeric_kept
 *	  For deltagg.c's min and max of numeric: does a min (max: a max)
 *	  whose value is kept stay so against the input in, as
 *	  cq_numeric_smaller (cq_numeric_larger) decides (of equal values the
 *	  later one wins)?  If not, its new value is cq_numeric_kept(in).
 */
bool
cq_numeric_keeps(Datum kept, Datum in, bool max)
{
	int			cmp = num_cmp_datums(kept, in);

	return max ? cmp > 0 : cmp < 0;
}

Datum
cq_numeric_kept(Datum in)
{
	return num_kept(in);
}

PG_FUNCTION_INFO_V1(cq_numeric_larger);

/*
 * cq_numeric_larger
 *	  cq.numeric_larger(numeric, numeric): the transition function of
 *	  cq.numeric_max; numeric_larger() without copying its arguments.
 */
Datum
cq_numeric_larger(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(num_kept(num_cmp_datums(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)) > 0 ?
							 PG_GETARG_DATUM(0) : PG_GETARG_DATUM(1)));
}

PG_FUNCTION_INFO_V1(cq_numeric_smaller);

/*
 * cq_numeric_smaller
 *	  cq.numeric_smaller(numeric, numeric): the transition function of
 *	  cq.numeric_min; numeric_smaller() without copying its arguments.
 */
Datum
cq_numeric_smaller(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(num_kept(num_cmp_datums(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)) < 0 ?
							 PG_GETARG_DATUM(0) : PG_GETARG_DATUM(1)));
}

/*
 * The state of cq.numeric_sum, in the aggregate's context.
 */
struct CqNumSum
{
#ifdef HAVE_INT128
	int128		isum;			/* finite inputs added here, in 10^-iscale */
#endif
	int			iscale;			/* largest display scale of isum's inputs */
	bool		seen;			/* any non-NULL input */
	bool		nan;			/* a NaN input */
	bool		pinf;			/* an Infinity input */
	bool		ninf;			/* a -Infinity input */
	Numeric		nsum;			/* the other finite inputs' sum, or NULL */
	MemoryContext aggcxt;		/* the aggregate's context */
};

/*
 * nsum_add
 *	  Adds a numeric to the state's numeric part, in the aggregate's
 *	  context (the previous part freed).
 */
static void
nsum_add(CqNumSum *st, Numeric num, MemoryContext aggcxt)
{
	MemoryContext old = MemoryContextSwitchTo(aggcxt);
	Numeric		prev = st->nsum;

	if (prev == NULL)
		st->nsum = DatumGetNumericCopy(NumericGetDatum(num));
	else
	{
		st->nsum = numeric_add_opt_error(prev, num, NULL);
		pfree(prev);
	}
	MemoryContextSwitchTo(old);
}

#ifdef HAVE_INT128

#define POW10_MAX 38			/* 10^38 < 2^127 */

/* 10^k as an int128, 0 <= k <= POW10_MAX */
static int128
pow10_128(int k)
{
	static int128 table[POW10_MAX + 1];

	if (table[0] == 0)
	{
		table[0] = 1;
		for (int i = 1; i <= POW10_MAX; i++)
			table[i] = table[i - 1] * 10;
	}
	return table[k];
}

/* 10^k as an int64, 0 <= k <= 18 */
static const int64 pow10_64[] = {
	INT64CONST(1), INT64CONST(10), INT64CONST(100), INT64CONST(1000), INT64CONST(10000),
	INT64CONST(100000), INT64CONST(1000000), INT64CONST(10000000), INT64CONST(100000000),
	INT64CONST(1000000000), INT64CONST(10000000000), INT64CONST(100000000000),
	INT64CONST(1000000000000), INT64CONST(10000000000000), INT64CONST(100000000000000),
	INT64CONST(1000000000000000), INT64CONST(10000000000000000),
	INT64CONST(100000000000000000), INT64CONST(1000000000000000000)
};

/*
 * scale_int64
 *	  *v times 10^e, for -3 <= e <= 18, if exact and in range (a negative e
 *	  drops the last digit's zeros below the display scale: constant
 *	  divisors); false otherwise.
 */
static inline bool
scale_int64(int64 *v, int e)
{
	int64		q;

	if (e >= 0)
		return e <= 18 && !__builtin_mul_overflow(*v, pow10_64[e], v);
	switch (-e)
	{
		case 1:
			q = *v / 10;
			break;
		case 2:
			q = *v / 100;
			break;
		case 3:
			q = *v / 1000;
			break;
		default:
			return false;		/* nonzero digits below the scale: never packed */
	}
	if (q * pow10_64[-e] != *v)
		return false;
	*v = q;
	return true;
}

/*
 * num_to_int128
 *	  The finite number n times 10^scale as an int128, if it is an integer
 *	  that fits; false otherwise.  (scale >= n's display scale: a packed
 *	  numeric has no nonzero digit beyond its display scale.)  Values of up
 *	  to 4 base-10000 digits (16 decimal ones) take 64-bit arithmetic only.
 */
static bool
num_to_int128(const CqNum *n, int scale, int128 *out)
{
	int			e;

	if (n->ndigits == 0)
	{
		*out = 0;
		return true;
	}
	/* the digits as an integer v: n = v * 10^e / 10^scale */
	e = 4 * (n->weight - n->ndigits + 1) + scale;
	if (n->ndigits <= 4)
	{
		int64		v = 0;

		for (int i = 0; i < n->ndigits; i++)
			v = v * NUM_NBASE + num_digit(n, i);
		if (scale_int64(&v, e))
		{
			*out = n->neg ? -v : v;
			return true;
		}
	}
	/* larger values */
	{
		int128		v = 0;

		if (e > POW10_MAX || e < -3)
			return false;
		for (int i = 0; i < n->ndigits; i++)
			if (__builtin_mul_overflow(v, (int128) NUM_NBASE, &v) ||
				__builtin_add_overflow(v, (int128) num_digit(n, i), &v))
				return false;
		if (e > 0 && __builtin_mul_overflow(v, pow10_128(e), &v))
			return false;
		if (e < 0)
		{
			if (v % pow10_64[-e] != 0)
				return false;
			v /= pow10_64[-e];
		}
		*out = n->neg ? -v : v;
		return true;
	}
}

/*
 * u64_decimal
 *	  Appends the decimal digits of u (as values 0-9), at least mindigits
 *	  of them (zeros in front); returns how many.
 */
static int
u64_decimal(uint64 u, int mindigits, char *out)
{
	char		rev[20];
	int			n = 0;

	while (u != 0 || n < mindigits)
	{
		rev[n++] = (char) (u % 10);
		u /= 10;
	}
	for (int i = 0; i < n; i++)
		out[i] = rev[n - 1 - i];
	return n;
}

/*
 * int128_to_num
 *	  The numeric v * 10^-scale with display scale scale, in the packed
 *	  form numeric.c's make_result() gives it: leading and trailing zero
 *	  digits stripped, zero positive with weight 0, the short header when
 *	  scale and weight fit in it.
 */
static Numeric
int128_to_num(int128 v, int scale)
{
	char		dec[48];		/* decimal digits of |v|, 4 zeros each side */
	int			ndec = 0;
	bool		neg = v < 0;
	unsigned __int128 u = neg ? -(unsigned __int128) v : (unsigned __int128) v;
	int16		digits[16];
	int			ndigits = 0;
	int			weight = 0;
	Numeric		result;
	Size		len;
	char	   *p;

	if (u != 0)
	{
		char		num[40];
		int			nrev;
		int			dweight;
		int			offset;
		int			i;

		/* decimal digits of u, in two 64-bit halves when it needs them */
		if ((u >> 64) == 0)
			nrev = u64_decimal((uint64) u, 1, num);
		else
		{
			const unsigned __int128 e19 = (unsigned __int128) pow10_64[18] * 10;

			nrev = u64_decimal((uint64) (u / e19), 1, num);
			nrev += u64_decimal((uint64) (u % e19), 19, num + nrev);
		}
		/* as set_var_from_str() aligns decimal digits to base-10000 ones */
		dweight = nrev - 1 - scale;
		if (dweight >= 0)
			weight = (dweight + 1 + 3) / 4 - 1;
		else
			weight = -((-dweight - 1) / 4 + 1);
		offset = (weight + 1) * 4 - (dweight + 1);
		memset(dec, 0, sizeof(dec));
		memcpy(dec + offset, num, nrev);
		ndec = offset + nrev;
		ndigits = (ndec + 3) / 4;
		for (i = 0; i < ndigits; i++)
			digits[i] = (int16) (((dec[4 * i] * 10 + dec[4 * i + 1]) * 10 + dec[4 * i + 2]) * 10 + dec[4 * i + 3]);
		/* the first digit is not zero (offset < 4); strip trailing zeros */
		while (ndigits > 0 && digits[ndigits - 1] == 0)
			ndigits--;
	}
	else
		neg = false;

	if (scale <= NUM_SHORT_DSCALE_MAX && weight <= NUM_SHORT_WEIGHT_MASK &&
		weight >= NUM_SHORT_WEIGHT_MIN)
	{
		uint16		head = NUM_SHORT | (neg ? NUM_SHORT_SIGN_MASK : 0) |
			(scale << NUM_SHORT_DSCALE_SHIFT) |
			(weight < 0 ? NUM_SHORT_WEIGHT_SIGN_MASK : 0) | (weight & NUM_SHORT_WEIGHT_MASK);

		len = VARHDRSZ + sizeof(uint16) + ndigits * sizeof(int16);
		result = (Numeric) palloc(len);
		p = (char *) result + VARHDRSZ;
		memcpy(p, &head, sizeof(head));
		p += sizeof(head);
	}
	else
	{
		uint16		head = (neg ? NUM_NEG : NUM_POS) | (scale & NUM_DSCALE_MASK);
		int16		w = (int16) weight;

		len = VARHDRSZ + 2 * sizeof(uint16) + ndigits * sizeof(int16);
		result = (Numeric) palloc(len);
		p = (char *) result + VARHDRSZ;
		memcpy(p, &head, sizeof(head));
		memcpy(p + sizeof(head), &w, sizeof(w));
		p += 2 * sizeof(head);
	}
	SET_VARSIZE(result, len);
	memcpy(p, digits, ndigits * sizeof(int16));
	return result;
}

/*
 * isum_flush
 *	  Moves the integer part of the state into its numeric part (the
 *	  integer part keeps its scale, now carried by the numeric part too).
 */
static void
isum_flush(CqNumSum *st, MemoryContext aggcxt)
{
	Numeric		num = int128_to_num(st->isum, st->iscale);

	nsum_add(st, num, aggcxt);
	pfree(num);
	st->isum = 0;
}

/*
 * isum_add
 *	  Adds the finite number n to the integer part of the state, if it and
 *	  the sum fit (the part rescaled to n's display scale when larger, or
 *	  moved to the numeric part when that does not fit); false if n must
 *	  go to the numeric part.
 */
static bool
isum_add(CqNumSum *st, const CqNum *n, MemoryContext aggcxt)
{
	int128		v;

	if (n->dscale > st->iscale)
	{
		int			up = n->dscale - st->iscale;
		int128		scaled;

		if (!num_to_int128(n, n->dscale, &v))
			return false;
		if (st->isum != 0)
		{
			if (up > POW10_MAX || __builtin_mul_overflow(st->isum, pow10_128(up), &scaled))
				isum_flush(st, aggcxt);
			else
				st->isum = scaled;
		}
		st->iscale = n->dscale;
	}
	else if (!num_to_int128(n, st->iscale, &v))
		return false;
	{
		int128		sum;

		if (__builtin_add_overflow(st->isum, v, &sum))
		{
			isum_flush(st, aggcxt);
			sum = v;
		}
		st->isum = sum;
	}
	return true;
}

/*
 * isum_add_short
 *	  isum_add() of the most common input, inline: a value with a 1-byte
 *	  varlena header (as read from a heap tuple), the short format, the
 *	  state's scale as its display scale and at most 4 digits; false for
 *	  any other (then isum_add() decides) or when the sum would overflow.
 */
static inline bool
isum_add_short(CqNumSum *st, const char *p)
{
	uint16		head;
	int			nd = (VARSIZE_SHORT(p) - VARHDRSZ_SHORT - sizeof(uint16)) / sizeof(int16);
	const char *dig = p + VARHDRSZ_SHORT + sizeof(uint16);
	int64		v = 0;
	int			w;
	int			e;
	int128		sum;

	memcpy(&head, p + VARHDRSZ_SHORT, sizeof(head));
	if ((head & NUM_SIGN_MASK) != NUM_SHORT || nd > 4 ||
		(head & NUM_SHORT_DSCALE_MASK) >> NUM_SHORT_DSCALE_SHIFT != st->iscale)
		return false;
	if (nd > 0)
	{
		for (int i = 0; i < nd; i++)
		{
			int16		d;

			memcpy(&d, dig + i * sizeof(int16), sizeof(d));
			v = v * NUM_NBASE + d;
		}
		w = ((head & NUM_SHORT_WEIGHT_SIGN_MASK) ? ~NUM_SHORT_WEIGHT_MASK : 0) |
			(head & NUM_SHORT_WEIGHT_MASK);
		e = 4 * (w - nd + 1) + st->iscale;
		if (!scale_int64(&v, e))
			return false;
		if (head & NUM_SHORT_SIGN_MASK)
			v = -v;
	}
	if (__builtin_add_overflow(st->isum, (int128) v, &sum))
		return false;
	st->isum = sum;
	return true;
}
#endif							/* HAVE_INT128 */

/*
 * nsum_accum
 *	  Adds a non-NULL numeric to a state (the transition's work, shared
 *	  with deltagg.c's aggregation through cq_numsum_add): inlined in
 *	  both, as the transition's body was before (a call cost ~16
 *	  instructions a row of bench/ingest_cg.sh's batch).
 */
static pg_attribute_always_inline void
nsum_accum(CqNumSum *st, Datum d)
{
	CqNum		n;

	st->seen = true;
#ifdef HAVE_INT128
	if (NUM_INLINE_SHORT(DatumGetPointer(d)) && isum_add_short(st, DatumGetPointer(d)))
		return;
#endif
	num_read(d, &n);
	switch (n.kind)
	{
		case CQ_NUM_NAN:
			st->nan = true;
			break;
		case CQ_NUM_PINF:
			st->pinf = true;
			break;
		case CQ_NUM_NINF:
			st->ninf = true;
			break;
		case CQ_NUM_FINITE:
#ifdef HAVE_INT128
			if (isum_add(st, &n, st->aggcxt))
				break;
#endif
			nsum_add(st, DatumGetNumeric(d), st->aggcxt);
			break;
	}
}

PG_FUNCTION_INFO_V1(cq_numeric_sum_accum);

/*
 * cq_numeric_sum_accum
 *	  cq.numeric_sum_accum(internal, numeric): the transition function of
 *	  cq.numeric_sum (not strict: the state is made at the first non-NULL
 *	  input).
 */
Datum
cq_numeric_sum_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	CqNumSum   *st;

	st = PG_ARGISNULL(0) ? NULL : (CqNumSum *) PG_GETARG_POINTER(0);
	if (PG_ARGISNULL(1))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	if (st == NULL)
	{
		/* the state lives in the aggregate's context: checked at the first input */
		if (!AggCheckCallContext(fcinfo, &aggcxt))
			elog(ERROR, "cq_numeric_sum_accum called in non-aggregate context");
		st = cq_numsum_create(aggcxt);
	}
	nsum_accum(st, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(st);
}

/*
 * cq_numsum_create, cq_numsum_add, cq_numsum_result
 *	  cq.numeric_sum's state, transition and final outside an aggregate
 *	  (deltagg.c): a state in cxt, a non-NULL input added, the sum (NULL
 *	  before any input).
 */
CqNumSum *
cq_numsum_create(MemoryContext cxt)
{
	CqNumSum   *st = (CqNumSum *) MemoryContextAllocZero(cxt, sizeof(CqNumSum));

	st->aggcxt = cxt;
	return st;
}

void
cq_numsum_add(CqNumSum *st, Datum num)
{
	nsum_accum(st, num);
}

/*
 * special_num
 *	  NaN, Infinity or -Infinity as make_result() packs them.
 */
static Numeric
special_num(uint16 head)
{
	Numeric		result = (Numeric) palloc(VARHDRSZ + sizeof(uint16));

	SET_VARSIZE(result, VARHDRSZ + sizeof(uint16));
	memcpy((char *) result + VARHDRSZ, &head, sizeof(head));
	return result;
}

Datum
cq_numsum_result(CqNumSum *st, bool *isnull)
{
	Numeric		result = NULL;

	*isnull = st == NULL || !st->seen;
	if (*isnull)
		return (Datum) 0;
	if (st->nan || (st->pinf && st->ninf))
		return NumericGetDatum(special_num(NUM_NAN));
	if (st->pinf)
		return NumericGetDatum(special_num(NUM_PINF));
	if (st->ninf)
		return NumericGetDatum(special_num(NUM_NINF));
#ifdef HAVE_INT128
	result = int128_to_num(st->isum, st->iscale);
#endif
	if (st->nsum != NULL)
		result = result ? numeric_add_opt_error(result, st->nsum, NULL) :
			DatumGetNumericCopy(NumericGetDatum(st->nsum));
	return NumericGetDatum(result);
}

PG_FUNCTION_INFO_V1(cq_numeric_sum_final);

/*
 * cq_numeric_sum_final
 *	  cq.numeric_sum_final(internal): the final function of
 *	  cq.numeric_sum, numeric_sum()'s result.
 */
Datum
cq_numeric_sum_final(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result = cq_numsum_result(PG_ARGISNULL(0) ? NULL :
										  (CqNumSum *) PG_GETARG_POINTER(0), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
