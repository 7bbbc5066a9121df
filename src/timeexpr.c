/*-------------------------------------------------------------------------
 *
 * timeexpr.c
 *	  Interval and window-end helpers for the analysis of event time:
 *	  the fixed length of an interval, constant intervals as SQL literals,
 *	  overflow-free window ends in SQL, the step of date_trunc's units.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/formatting.h"
#include "utils/timestamp.h"

#include "timeexpr.h"

/*
 * cq_interval_usecs
 *	  The length of an interval without months in microseconds (days count
 *	  24 hours, as in date_bin()); false on overflow.
 */
bool
cq_interval_usecs(const Interval *iv, int64 *us)
{
	return !(pg_mul_s64_overflow((int64) iv->day, USECS_PER_DAY, us) ||
			 pg_add_s64_overflow(*us, iv->time, us));
}

/*
 * cq_interval_sql
 *	  A constant interval as a SQL literal; checks it is a positive fixed
 *	  length when `what` is given.  With `exact`, the literal is the fixed
 *	  length in hours, minutes and seconds: adding it to a timestamptz adds
 *	  that many microseconds, as date_bin() and cq.window() count, and not
 *	  calendar days of the session's time zone.
 */
char *
cq_interval_sql(Node *c, const char *what, bool exact)
{
	Interval   *iv;
	int64		us;

	if (c == NULL || !IsA(c, Const) || ((Const *) c)->constisnull ||
		((Const *) c)->consttype != INTERVALOID)
		return NULL;
	iv = DatumGetIntervalP(((Const *) c)->constvalue);
	if (what && iv->month == 0 && !cq_interval_usecs(iv, &us))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("window %s out of range", what)));
	if (what && iv->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("window %s cannot contain months or years", what),
				 errhint("Use days, hours, minutes or seconds; group by date_trunc('month', ts) for calendar months.")));
	if (what && (iv->day < 0 || iv->time < 0 || (iv->day == 0 && iv->time <= 0) ||
				 (iv->day > 0 && iv->time < 0)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window %s must be positive", what)));
	if (exact && iv->month == 0 && cq_interval_usecs(iv, &us))
	{
		Interval   *fixed = palloc0(sizeof(Interval));

		fixed->time = us;
		iv = fixed;
	}
	return psprintf("%s::pg_catalog.interval",
					quote_literal_cstr(DatumGetCString(DirectFunctionCall1(interval_out,
																		   PointerGetDatum(iv)))));
}

/*
 * cq_window_end_sql
 *	  The window end "key + step" as a format with %1$s for the key, which
 *	  cannot overflow: a window whose end lies beyond the last timestamp
 *	  (an infinite key too) ends at infinity and never closes; -infinity
 *	  stays -infinity, NULL stays NULL.  step is an interval literal.
 */
char *
cq_window_end_sql(bool tz, const char *step)
{
	const char *type = tz ? "pg_catalog.timestamptz" : "pg_catalog.timestamp";
	const char *last = tz ? "'294276-12-31 23:59:59.999999+00'" : "'294276-12-31 23:59:59.999999'";

	return psprintf("(CASE WHEN %%1$s <= (%s::%s - %s) THEN %%1$s + %s "
					"WHEN %%1$s IS NOT NULL THEN 'infinity'::%s END)",
					last, type, step, step, type);
}

/*
 * cq_date_trunc_step
 *	  The length of one unit of date_trunc as an interval literal, or NULL.
 */
const char *
cq_date_trunc_step(Node *unit)
{
	char	   *lower;
	int			type,
				val;

	if (unit == NULL || !IsA(unit, Const) || ((Const *) unit)->constisnull)
		return NULL;
	lower = asc_tolower(TextDatumGetCString(((Const *) unit)->constvalue),
						strlen(TextDatumGetCString(((Const *) unit)->constvalue)));
	type = DecodeUnits(0, lower, &val);
	if (type != UNITS)
		return NULL;
	switch (val)
	{
		case DTK_MICROSEC:
			return "'1 microsecond'";
		case DTK_MILLISEC:
			return "'1 millisecond'";
		case DTK_SECOND:
			return "'1 second'";
		case DTK_MINUTE:
			return "'1 minute'";
		case DTK_HOUR:
			return "'1 hour'";
		case DTK_DAY:
			return "'1 day'";
		case DTK_WEEK:
			return "'7 days'";
		case DTK_MONTH:
			return "'1 month'";
		case DTK_QUARTER:
			return "'3 months'";
		case DTK_YEAR:
			return "'1 year'";
		case DTK_DECADE:
			return "'10 years'";
		case DTK_CENTURY:
			return "'100 years'";
		case DTK_MILLENNIUM:
			return "'1000 years'";
	}
	return NULL;
}

/*
 * cq_ms_since
 *	  Milliseconds of wall clock since t0.
 */
double
cq_ms_since(TimestampTz t0)
{
	return (double) (GetCurrentTimestamp() - t0) / 1000.0;
}
