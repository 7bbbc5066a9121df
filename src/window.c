/*-------------------------------------------------------------------------
 *
 * window.c
 *	  cq.window(ts, size, slide, origin): the time windows containing ts.
 *
 * Windows are [start, start + size) with start = origin + k * slide, the
 * same arithmetic as date_bin(): intervals are fixed lengths in
 * microseconds (days count 24 hours), months and years are rejected.  A
 * row belongs to ceil(size / slide) windows when slide < size (sliding
 * windows) and to exactly one when slide = size (tumbling, the default).
 * NULL and infinite ts belong to no window, and only windows that lie inside
 * the timestamp range exist; an infinite origin is an error.  Works on
 * timestamptz and timestamp alike: both are microseconds since 2000-01-01.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "timeexpr.h"


PG_FUNCTION_INFO_V1(cq_window);

/* State across calls of the SRF. */
typedef struct WindowState
{
	int64		start;			/* start of the next window to return */
	int64		last;			/* start of the last window */
	int64		size;
	int64		slide;
} WindowState;

/*
 * interval_usecs
 *	  An interval as a fixed number of microseconds; months are an error.
 */
static int64
interval_usecs(Interval *iv, const char *what)
{
	int64		us;

	if (iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window %s cannot contain months or years", what),
				 errhint("Use days, hours, minutes or seconds; group by date_trunc('month', ts) for calendar months.")));
	if (!cq_interval_usecs(iv, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("window %s out of range", what)));
	return us;
}

/*
 * window_range
 *	  Set st->start and st->last to the first and last start of the windows
 *	  containing ts that exist: windows whose start or end falls outside the
 *	  timestamp range are left out (a row at the edge of the range belongs
 *	  to fewer windows, or none).  No step can overflow, so any finite ts
 *	  and origin work (date_bin() fails when ts - origin does not fit).
 */
static void
window_range(WindowState *st, int64 ts, int64 origin)
{
	int64		size = st->size;
	int64		slide = st->slide;
	int64		ts_mod,
				origin_mod,
				mod,
				first,
				last,
				hi;

	/*
	 * Last window start: ts floored to the slide grid.  (ts - origin) mod
	 * slide is computed from ts mod slide and origin mod slide, each in
	 * [0, slide): ts - origin itself may not fit in 64 bits.
	 */
	ts_mod = ts % slide;
	if (ts_mod < 0)
		ts_mod += slide;
	origin_mod = origin % slide;
	if (origin_mod < 0)
		origin_mod += slide;
	mod = ts_mod - origin_mod;
	if (mod < 0)
		mod += slide;
	if (pg_sub_s64_overflow(ts, mod, &last) || last < MIN_TIMESTAMP)
		return;
	/* first window still containing ts: start > ts - size */
	if (pg_sub_s64_overflow(last, ((size - mod - 1) / slide) * slide, &first) ||
		first < MIN_TIMESTAMP)
		first = last - ((last - MIN_TIMESTAMP) / slide) * slide;
	/* window ends must stay inside the range too: start < END_TIMESTAMP - size */
	hi = END_TIMESTAMP - size;
	if (last >= hi)
	{
		if (first >= hi)
			return;
		last = first + ((hi - 1 - first) / slide) * slide;
	}
	st->start = first;
	st->last = last;
}

/*
 * cq_window
 *	  SRF over (ts, size, slide, origin) returning (window_start, window_end).
 */
Datum
cq_window(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	WindowState *st;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;
		TupleDesc	tupdesc;
		int64		ts,
					origin,
					size,
					slide;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "pg_cq: cq.window must return a composite type");
		funcctx->tuple_desc = BlessTupleDesc(tupdesc);

		if (PG_ARGISNULL(1))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("window size must not be null")));
		size = interval_usecs(PG_GETARG_INTERVAL_P(1), "size");
		slide = PG_ARGISNULL(2) ? size : interval_usecs(PG_GETARG_INTERVAL_P(2), "slide");
		if (size <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("window size must be positive")));
		if (slide <= 0 || slide > size)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("window slide must be positive and at most the window size")));

		st = palloc0(sizeof(WindowState));
		st->size = size;
		st->slide = slide;
		st->start = 1;
		st->last = 0;			/* no rows unless set below */
		if (!PG_ARGISNULL(3) && TIMESTAMP_NOT_FINITE(PG_GETARG_INT64(3)))
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("origin out of range"),
					 errdetail("The origin of a window grid must be finite.")));
		if (!PG_ARGISNULL(0) && !PG_ARGISNULL(3) && !TIMESTAMP_NOT_FINITE(PG_GETARG_INT64(0)))
		{
			ts = PG_GETARG_INT64(0);
			origin = PG_GETARG_INT64(3);
			window_range(st, ts, origin);
		}
		funcctx->user_fctx = st;
		MemoryContextSwitchTo(oldcontext);
	}

	funcctx = SRF_PERCALL_SETUP();
	st = funcctx->user_fctx;
	if (st->start <= st->last)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};
		HeapTuple	tuple;

		values[0] = Int64GetDatum(st->start);
		values[1] = Int64GetDatum(st->start + st->size);
		st->start += st->slide;
		tuple = heap_form_tuple(funcctx->tuple_desc, values, nulls);
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum(tuple));
	}
	SRF_RETURN_DONE(funcctx);
}
