/*-------------------------------------------------------------------------
 *
 * options.c
 *	  Options of a continuous query (SPEC §1): names, values, defaults.
 *
 * The same options arrive from three places — CREATE TABLE ... WITH (cq.*),
 * ALTER TABLE ... SET (cq.*) and the cq.create_query / cq.alter_query
 * arguments — and are validated here only, so every route gives the same
 * errors.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/formatting.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "options.h"
#include "timeexpr.h"

/*
 * shown
 *	  A user-given value as quoted in a message: long values are cut.
 */
static const char *
shown(const char *value)
{
	if (strlen(value) <= 64)
		return value;
	return psprintf("%.*s...", pg_mbcliplen(value, strlen(value), 64), value);
}

static const char *const option_names[] = {
	"output_mode", "trigger", "event_time", "watermark", "max_rows_per_trigger",
	"starting", "source", "state_storage", "complete_refresh", NULL
};

/*
 * cq_options_in_memory
 *	  Does a query with these options keep its state in the shared-memory
 *	  store?  state_storage 'memory' does; 'logged' does when the store could
 *	  hold it (state_path 'memory: logged image', catalog 0.2), its image
 *	  then being a logged table.
 */
bool
cq_options_in_memory(const CqOptions *opts)
{
	if (opts->state_storage == NULL)
		return false;
	if (strcmp(opts->state_storage, "memory") == 0)
		return true;
	return cq_options_logged_image(opts);
}

/*
 * cq_options_logged_image
 *	  A query in the store whose image survives a crash: state_storage
 *	  'logged' on the store path.
 */
bool
cq_options_logged_image(const CqOptions *opts)
{
	return opts->state_storage != NULL && strcmp(opts->state_storage, "logged") == 0 &&
		opts->state_path != NULL && strncmp(opts->state_path, "memory", 6) == 0;
}

/*
 * cq_options_init
 *	  All options "not given".
 */
void
cq_options_init(CqOptions *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->max_rows_per_trigger = -1;
}

/*
 * cq_options_set
 *	  Set one option by name (DDL form, without the "cq." prefix).
 *	  Unknown names are an error listing the valid ones.
 */
void
cq_options_set(CqOptions *opts, const char *name, const char *value)
{
	if (value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("continuous query option \"%s\" requires a value", name)));

	if (strcmp(name, "output_mode") == 0)
		opts->output_mode = pstrdup(value);
	else if (strcmp(name, "trigger") == 0)
		opts->trigger = pstrdup(value);
	else if (strcmp(name, "event_time") == 0)
		opts->event_time = pstrdup(value);
	else if (strcmp(name, "watermark") == 0)
		opts->watermark = pstrdup(value);
	else if (strcmp(name, "max_rows_per_trigger") == 0)
	{
		char	   *end;
		long long	v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno != 0 || end == value || *end != '\0' || v < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"max_rows_per_trigger\": \"%s\"", shown(value)),
					 errhint("Use a positive number of rows, or 0 for no limit.")));
		opts->max_rows_per_trigger = v;
	}
	else if (strcmp(name, "starting") == 0)
		opts->starting = pstrdup(value);
	else if (strcmp(name, "source") == 0)
		opts->source = pstrdup(value);
	else if (strcmp(name, "state_storage") == 0)
		opts->state_storage = pstrdup(value);
	else if (strcmp(name, "complete_refresh") == 0)
		opts->complete_refresh = pstrdup(value);
	else
	{
		StringInfoData valid;

		initStringInfo(&valid);
		for (int i = 0; option_names[i]; i++)
			appendStringInfo(&valid, "%s%s", i ? ", " : "", option_names[i]);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized continuous query option \"%s\"", shown(name)),
				 errhint("Valid options are: %s.", valid.data)));
	}
}

/*
 * check_choice
 *	  Error unless value is one of the choices (case-insensitive); returns
 *	  the index and normalizes value to lower case.
 */
static int
check_choice(const char *option, char **value, const char *const *choices,
			 const char *hint)
{
	char	   *lower = asc_tolower(*value, strlen(*value));

	for (int i = 0; choices[i]; i++)
		if (strcmp(lower, choices[i]) == 0)
		{
			*value = lower;
			return i;
		}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for continuous query option \"%s\": \"%s\"", option, shown(*value)),
			 errhint("%s", hint)));
	return -1;					/* keep compiler quiet */
}

/*
 * parse_interval
 *	  An interval from text, with errors in the options' own words.
 */
static Interval *
parse_interval(const char *option, const char *value)
{
	Interval   *result = NULL;

	PG_TRY();
	{
		result = DatumGetIntervalP(DirectFunctionCall3(interval_in,
													   CStringGetDatum(value),
													   ObjectIdGetDatum(InvalidOid),
													   Int32GetDatum(-1)));
	}
	PG_CATCH();
	{
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for continuous query option \"%s\": \"%s\"", option, shown(value)),
				 errhint("Use an interval such as '10 seconds' or '5 minutes'.")));
	}
	PG_END_TRY();
	return result;
}

/*
 * interval_is_negative
 *	  True if any part of the interval is negative.
 */
static bool
interval_is_negative(Interval *iv)
{
	return iv->month < 0 || iv->day < 0 || iv->time < 0;
}

/*
 * cq_options_delay_usecs
 *	  A watermark delay as a fixed number of microseconds, as Spark counts
 *	  it (IntervalUtils.getDuration): a month is 31 days, a year 12 such
 *	  months, a day 24 hours, so the delay does not depend on the calendar
 *	  or the time zone of the event times it is subtracted from.  Returns
 *	  false when the length does not fit in 64 bits (longer than the whole
 *	  timestamp range).
 */
bool
cq_options_delay_usecs(const Interval *iv, int64 *us)
{
	int64		months_us;
	int64		days_us;

	if (pg_mul_s64_overflow((int64) iv->month, CQ_DAYS_PER_MONTH * USECS_PER_DAY, &months_us) ||
		pg_mul_s64_overflow((int64) iv->day, USECS_PER_DAY, &days_us) ||
		pg_add_s64_overflow(months_us, days_us, us) ||
		pg_add_s64_overflow(*us, iv->time, us))
		return false;
	return true;
}

/*
 * split_watermark
 *	  A join of two streams may give one watermark delay per stream,
 *	  "10 minutes, 1 hour": the first stays in watermark, the second goes to
 *	  join_watermark (an interval never contains a comma).  More than two
 *	  entries is an error; whether the query joins two streams at all is
 *	  checked with the query (joinspec.c).
 */
static void
split_watermark(CqOptions *opts)
{
	char	   *comma;

	if (opts->watermark == NULL || (comma = strchr(opts->watermark, ',')) == NULL)
		return;
	if (strchr(comma + 1, ',') != NULL || opts->join_watermark != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for continuous query option \"watermark\": \"%s\"", shown(opts->watermark)),
				 errdetail("A join of two streams takes one delay for both, or one delay per stream."),
				 errhint("Give one interval, or two separated by a comma in the order of the source option.")));
	opts->join_watermark = pstrdup(comma + 1);
	opts->watermark = pnstrdup(opts->watermark, comma - opts->watermark);
}

/*
 * cq_options_check_limits
 *	  Range checks of values a user gives now (creation, alter).  They are
 *	  not part of cq_options_finish: values stored by an earlier version
 *	  must still load (and be dropped), and their use is made safe where
 *	  they are used.
 */
void
cq_options_check_limits(CqOptions *opts)
{
	if (opts->trigger != NULL && pg_strcasecmp(opts->trigger, "available_now") != 0 &&
		pg_strcasecmp(opts->trigger, "available now") != 0 && strcmp(opts->trigger, "0") != 0)
	{
		Interval   *iv = parse_interval("trigger", opts->trigger);
		int64		us;

		if (!cq_interval_usecs(iv, &us) || us > CQ_TRIGGER_MAX_USECS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"trigger\": \"%s\"", shown(opts->trigger)),
					 errdetail("A trigger interval can be at most %d days.",
							   (int) (CQ_TRIGGER_MAX_USECS / USECS_PER_DAY)),
					 errhint("Use a shorter interval, or trigger = 'available_now' and run the query with CALL cq.run.")));
	}
	for (int i = 0; i < 2; i++)
	{
		const char *w = i == 0 ? opts->watermark : opts->join_watermark;
		Interval   *iv;
		int64		us;

		if (w == NULL)
			continue;
		iv = parse_interval("watermark", w);

		if (!cq_options_delay_usecs(iv, &us))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"watermark\": \"%s\"", shown(w)),
					 errdetail("The delay is longer than the range of timestamps."),
					 errhint("Use a delay of at most 106751991 days (a month counts as 31 days).")));
	}
}

/*
 * cq_options_finish
 *	  Fill defaults (SPEC §1), validate every value and parse the typed
 *	  forms.  Cross-option rules that need the query (watermark on a
 *	  grouping key, ...) are checked by analyze.c.
 */
void
cq_options_finish(CqOptions *opts)
{
	static const char *const modes[] = {"append", "update", "complete", NULL};
	static const char *const startings[] = {"earliest", "latest", NULL};
	static const char *const storages[] = {"unlogged", "logged", "memory", NULL};
	static const char *const refreshes[] = {"truncate", "delete", NULL};

	if (opts->output_mode == NULL)
		opts->output_mode = "append";
	opts->mode = (CqOutputMode) check_choice("output_mode", &opts->output_mode, modes,
											 "Valid output modes are \"append\", \"update\" and \"complete\".");

	if (opts->trigger == NULL)
		opts->trigger = "0";
	{
		char	   *t = asc_tolower(opts->trigger, strlen(opts->trigger));

		if (strcmp(t, "available_now") == 0 || strcmp(t, "available now") == 0)
			opts->trigger = "available_now";
		else if (strcmp(t, "0") == 0)
			opts->trigger = "0";
		else
		{
			Interval   *iv = parse_interval("trigger", opts->trigger);

			if (interval_is_negative(iv))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for continuous query option \"trigger\": \"%s\"", shown(opts->trigger)),
						 errdetail("A trigger interval cannot be negative.")));
			if (iv->month != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for continuous query option \"trigger\": \"%s\"", shown(opts->trigger)),
						 errdetail("Trigger intervals in months or years are not supported."),
						 errhint("Use days, hours, minutes or seconds.")));
			if (iv->day == 0 && iv->time == 0)
				opts->trigger = "0";
		}
	}

	split_watermark(opts);
	if (opts->join_watermark != NULL)
	{
		opts->join_watermark_delay = parse_interval("watermark", opts->join_watermark);
		if (interval_is_negative(opts->join_watermark_delay))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"watermark\": \"%s\"", shown(opts->join_watermark)),
					 errdetail("A watermark delay cannot be negative.")));
	}
	if (opts->watermark != NULL)
	{
		opts->watermark_delay = parse_interval("watermark", opts->watermark);
		if (interval_is_negative(opts->watermark_delay))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"watermark\": \"%s\"", shown(opts->watermark)),
					 errdetail("A watermark delay cannot be negative.")));
		if (opts->event_time == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous query option \"watermark\" requires \"event_time\""),
					 errhint("Name the event-time column of the source with cq.event_time.")));
	}

	if (opts->max_rows_per_trigger < 0)
		opts->max_rows_per_trigger = 0;

	if (opts->starting == NULL)
		opts->starting = "earliest";
	check_choice("starting", &opts->starting, startings,
				 "Valid values are \"earliest\" and \"latest\".");

	if (opts->state_storage == NULL)
	{
		/* a query that cannot use the default falls back to 'unlogged' (api.c) */
		opts->state_storage = pstrdup(cq_default_state_storage_name());
		opts->state_storage_default = true;
	}
	check_choice("state_storage", &opts->state_storage, storages,
				 "Valid values are \"unlogged\", \"logged\" and \"memory\".");

	if (opts->complete_refresh == NULL)
		opts->complete_refresh = "truncate";
	check_choice("complete_refresh", &opts->complete_refresh, refreshes,
				 "Valid values are \"truncate\" and \"delete\".");
}

/*
 * cq_mode_name
 *	  The SQL spelling of an output mode.
 */
const char *
cq_mode_name(CqOutputMode mode)
{
	switch (mode)
	{
		case CQ_MODE_APPEND:
			return "append";
		case CQ_MODE_UPDATE:
			return "update";
		case CQ_MODE_COMPLETE:
			return "complete";
	}
	return "?";
}
