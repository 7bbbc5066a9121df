/*-------------------------------------------------------------------------
 *
 * settings_pin.c
 *	  The settings a continuous query's batches run with, as its creator
 *	  had them: TimeZone (cq.queries.timezone) and those that change how
 *	  values are written as text or read from it (cq.queries.settings).
 *
 * A batch evaluates the query's expressions; a cast to or from text (a
 * GROUP BY ts::date::text, an interval written out, a float concatenated
 * into a key) depends on DateStyle, IntervalStyle, extra_float_digits and
 * bytea_output.  Left to whoever runs the batch (the database default in
 * a background worker, the caller's session in CALL cq.run, also when a
 * pool worker serves the call), one query could write one group as two
 * target rows ('02/01/2026' and '2026-01-02').  So cq.create_query
 * records its creator's values ('name=value' elements of a text[]) and
 * every batch sets them, as it sets TimeZone: session-level with
 * GUC_ACTION_SAVE, inside the GUC nest level cq_security_owner opened, so
 * that cq_security_restore (or the transaction's end on an error) puts
 * back the runner's values.
 *
 * The same holds for every setting that changes what an expression of
 * the query returns while a batch runs (session 42), each checked to
 * change a value: lc_monetary (money to and from text, to_char's L),
 * lc_numeric (to_char's D and G, to_number), lc_time (to_char's TM
 * names), xmloption (text::xml accepted or not, xml_is_well_formed),
 * xmlbinary (bytea in xmlelement: base64 or hex), array_nulls (NULL in
 * text read as an array), default_text_search_config (to_tsvector(text)),
 * timezone_abbreviations (text read as a timestamp with an abbreviation:
 * 'IST' is +02 or +05:30) and quote_all_identifiers (quote_ident, %I,
 * regclass::text).  Not pinned, because they change no value a batch
 * computes: standard_conforming_strings, escape_string_warning,
 * backslash_quote and transform_null_equals act when a text is parsed
 * (the query once, at creation; plan.c keys its SQL on the first);
 * search_path is pinned by security.c; lc_messages changes messages
 * only; lc_collate and lc_ctype are the database's; client_encoding acts
 * at the client's connection; the planner's settings choose plans.
 *
 * A locale or a text search configuration is the server's: one the
 * creator had may be missing where a batch runs (another server after a
 * restore, a locale removed).  Setting it then fails the batch with an
 * error that says which setting and why, never a batch under the
 * runner's value (another key).
 *
 * The query's SQL is printed under its settings too (plan.c, join.c,
 * cq_settings_pin_begin): a money constant is printed in lc_monetary's
 * format, and read back by the batch under the same.
 *
 * A query created before the column existed (NULL) runs with the
 * runner's values, as before.  Only the names in pinned[] are set from a
 * row: the list may grow without a catalog change, and a row edited by
 * hand cannot set anything else.  A query created before a name joined
 * the list has none for it: the runner's value, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/elog.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/memutils.h"

#include "settings_pin.h"

/* the settings recorded at creation, beside TimeZone */
static const char *const pinned[] = {
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"bytea_output",
	/* session 42 */
	"lc_monetary",
	"lc_numeric",
	"lc_time",
	"xmloption",
	"xmlbinary",
	"array_nulls",
	"default_text_search_config",
	"timezone_abbreviations",
	"quote_all_identifiers",
};

/*
 * cq_settings_pin_capture
 *	  The current values of the pinned settings, as a text[] of
 *	  'name=value' elements (the value of cq.queries.settings).
 */
Datum
cq_settings_pin_capture(void)
{
	Datum		elems[lengthof(pinned)];

	for (int i = 0; i < lengthof(pinned); i++)
		elems[i] = CStringGetTextDatum(psprintf("%s=%s", pinned[i],
												GetConfigOption(pinned[i], false, false)));
	return PointerGetDatum(construct_array(elems, lengthof(pinned), TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * cq_settings_pin_lines
 *	  A cq.queries.settings value (text[]) as its elements joined by
 *	  newlines, as CqQuery keeps it (the SPI read writes the same with
 *	  array_to_string); null elements are left out.
 */
char *
cq_settings_pin_lines(Datum array)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	StringInfoData buf;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			continue;
		if (buf.len > 0)
			appendStringInfoChar(&buf, '\n');
		appendStringInfoString(&buf, TextDatumGetCString(elems[i]));
	}
	return buf.data;
}

/*
 * set_pinned
 *	  Set name to value for the current GUC nest level.  A value the server
 *	  refuses (a locale it does not have) fails the batch saying so.
 */
static void
set_pinned(const char *name, const char *value)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE)
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not set \"%s\" to \"%s\" for a batch of a continuous query", name, value),
				 errdetail("The query's batches run with the value its creator had (cq.queries.settings), which this server refuses: %s%s%s",
						   edata->message, edata->detail ? " " : "", edata->detail ? edata->detail : ""),
				 errhint("Make the value valid on this server (a locale must be installed where PostgreSQL runs), or drop the query and create it again with a value the server accepts.")));
	}
	PG_END_TRY();
}

/*
 * next_pinned
 *	  The next line "name=value" of settings at *p whose name is in
 *	  pinned[]: that name's index, with *value; *p moves past it.  -1 at
 *	  the end.  Lines of other names, or without '=', are skipped.
 */
static int
next_pinned(const char **p, char **value)
{
	while (*p != NULL && **p != '\0')
	{
		const char *line = *p;
		const char *end = strchr(line, '\n');
		int			len = end ? end - line : strlen(line);
		const char *eq = memchr(line, '=', len);

		*p = end ? end + 1 : NULL;
		if (eq == NULL)
			continue;
		for (int i = 0; i < lengthof(pinned); i++)
			if (strlen(pinned[i]) == eq - line && pg_strncasecmp(line, pinned[i], eq - line) == 0)
			{
				*value = pnstrdup(eq + 1, len - (eq - line) - 1);
				return i;
			}
	}
	return -1;
}

/*
 * A batch compares the row's values with the current ones (and sets those
 * that differ) twice: when its SQL is looked up and when it runs.  Through
 * GetConfigOption (a search of the GUC table by name) after parsing the
 * row's text, that was ~17k instructions each time for 14 settings
 * (bench/batch_cg.sh, session 42).  So the text parsed last is kept
 * parsed (a query's row changes only when it is altered; a worker runs
 * one query after another, so one entry is enough to spare the parse of
 * a query's batches run in a row), and each setting's GUC record is found
 * once per process (built-in records stay where they are) and its value
 * read as GetConfigOption reads it.
 */
#define TZ_INDEX	lengthof(pinned)	/* TimeZone's slot in records[] */

typedef struct PinnedValue
{
	int			which;			/* index in pinned[] */
	char	   *value;
} PinnedValue;

static char *parsed_text = NULL;	/* the settings text parsed last */
static PinnedValue *parsed;
static int	nparsed;
static struct config_generic *records[lengthof(pinned) + 1];

/*
 * parse_settings
 *	  The pinned settings of a row's settings text, in parsed[0..nparsed).
 */
static void
parse_settings(const char *settings)
{
	MemoryContext old;
	const char *p = settings;
	char	   *value;
	int			which;
	int			n = 1;

	if (parsed_text != NULL && strcmp(parsed_text, settings) == 0)
		return;
	if (parsed_text != NULL)
	{
		for (int i = 0; i < nparsed; i++)
			pfree(parsed[i].value);
		pfree(parsed);
		pfree(parsed_text);
		parsed_text = NULL;
	}
	for (const char *c = settings; *c; c++)
		n += (*c == '\n');
	old = MemoryContextSwitchTo(TopMemoryContext);
	parsed = palloc(n * sizeof(PinnedValue));
	nparsed = 0;
	while ((which = next_pinned(&p, &value)) >= 0)
	{
		parsed[nparsed].which = which;
		parsed[nparsed++].value = value;
	}
	parsed_text = pstrdup(settings);
	MemoryContextSwitchTo(old);
}

/*
 * current_value
 *	  The current value of pinned[which] (TimeZone for TZ_INDEX) as
 *	  GetConfigOption writes it.
 */
static const char *
current_value(int which)
{
	const char *name = which == TZ_INDEX ? "TimeZone" : pinned[which];
	struct config_generic *rec = records[which];
	static char buf[64];

	if (rec == NULL)
	{
		struct config_generic **vars = get_guc_variables();
		int			nvars = GetNumConfigOptions();

		for (int i = 0; i < nvars && rec == NULL; i++)
			if (pg_strcasecmp(vars[i]->name, name) == 0 && (vars[i]->flags & GUC_CUSTOM_PLACEHOLDER) == 0)
				rec = vars[i];
		if (rec == NULL)
			return GetConfigOption(name, false, false);
		records[which] = rec;
	}
	switch (rec->vartype)
	{
		case PGC_BOOL:
			return *((struct config_bool *) rec)->variable ? "on" : "off";
		case PGC_INT:
			snprintf(buf, sizeof(buf), "%d", *((struct config_int *) rec)->variable);
			return buf;
		case PGC_REAL:
			snprintf(buf, sizeof(buf), "%g", *((struct config_real *) rec)->variable);
			return buf;
		case PGC_STRING:
			return *((struct config_string *) rec)->variable ? *((struct config_string *) rec)->variable : "";
		case PGC_ENUM:
			return config_enum_lookup_by_value((struct config_enum *) rec,
											   *((struct config_enum *) rec)->variable);
	}
	return GetConfigOption(name, false, false);
}

/*
 * set_if_differs
 *	  Set pinned[which] (TimeZone for TZ_INDEX) to value for the current GUC
 *	  nest level, unless it has it.
 */
static void
set_if_differs(int which, const char *value)
{
	if (strcmp(current_value(which), value) != 0)
		set_pinned(which == TZ_INDEX ? "TimeZone" : pinned[which], value);
}

/*
 * cq_settings_pin_apply
 *	  Set TimeZone and the settings of a query's row (either NULL: left as
 *	  they are) for its batch.  The caller has opened a GUC nest level
 *	  (cq_security_owner) whose end restores them.
 */
void
cq_settings_pin_apply(const char *timezone, const char *settings)
{
	if (timezone)
		set_if_differs(TZ_INDEX, timezone);
	if (settings == NULL)
		return;
	parse_settings(settings);
	for (int i = 0; i < nparsed; i++)
		set_if_differs(parsed[i].which, parsed[i].value);
}

/*
 * pin_differs
 *	  Does the current value of TimeZone or of a setting of the row differ
 *	  from the row's?
 */
static bool
pin_differs(const char *timezone, const char *settings)
{
	if (timezone && strcmp(current_value(TZ_INDEX), timezone) != 0)
		return true;
	if (settings == NULL)
		return false;
	parse_settings(settings);
	for (int i = 0; i < nparsed; i++)
		if (strcmp(current_value(parsed[i].which), parsed[i].value) != 0)
			return true;
	return false;
}

/*
 * cq_settings_pin_begin / cq_settings_pin_end
 *	  cq_settings_pin_apply in a GUC nest level of its own, for work outside
 *	  a batch's (cq_security_owner's) that must see the query's settings:
 *	  printing its SQL (a money constant is printed in lc_monetary's
 *	  format, and the batch reads it back under the query's), and the key
 *	  the SQL is cached under.  begin returns the level for end, 0 when
 *	  every value was already the row's (no level opened: a batch under
 *	  its creator's settings pays only the comparison).  An error between
 *	  them ends the level with the (sub)transaction.
 */
int
cq_settings_pin_begin(const char *timezone, const char *settings)
{
	int			nest;

	if (!pin_differs(timezone, settings))
		return 0;
	nest = NewGUCNestLevel();
	cq_settings_pin_apply(timezone, settings);
	return nest;
}

void
cq_settings_pin_end(int nest)
{
	if (nest > 0)
		AtEOXact_GUC(true, nest);
}

/*
 * cq_settings_pin_describe_line
 *	  The pinned settings of a query's row for cq.explain's header, after
 *	  TimeZone: "DateStyle = 'ISO, MDY', IntervalStyle = 'postgres', ...
 *	  (its creator's)", or what applies to a query without them.
 */
char *
cq_settings_pin_describe_line(const char *settings)
{
	const char *p = settings;
	int			which;
	char	   *value;
	StringInfoData buf;

	initStringInfo(&buf);
	while ((which = next_pinned(&p, &value)) >= 0)
		appendStringInfo(&buf, "%s%s = '%s'", buf.len > 0 ? ", " : "", pinned[which], value);
	if (buf.len == 0)
	{
		for (int i = 0; i < lengthof(pinned); i++)
			appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", pinned[i]);
		appendStringInfoString(&buf, ": those of the session running it");
		return buf.data;
	}
	appendStringInfoString(&buf, " (its creator's)");
	return buf.data;
}
