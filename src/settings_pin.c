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
 * A query created before the column existed (NULL) runs with the
 * runner's values, as before.  Only the names in pinned[] are set from a
 * row: the list may grow without a catalog change, and a row edited by
 * hand cannot set anything else.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "settings_pin.h"

/* the settings recorded at creation, beside TimeZone */
static const char *const pinned[] = {
	"DateStyle",
	"IntervalStyle",
	"extra_float_digits",
	"bytea_output",
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
 * set_if_differs
 *	  Set name to value for the current GUC nest level, unless it has it.
 */
static void
set_if_differs(const char *name, const char *value)
{
	const char *cur = GetConfigOption(name, true, false);

	if (cur == NULL || strcmp(cur, value) != 0)
		(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * next_pinned
 *	  The next line "name=value" of settings at *p whose name is in
 *	  pinned[]: that name, with *value; *p moves past it.  NULL at the end.
 *	  Lines of other names, or without '=', are skipped.
 */
static const char *
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
				return pinned[i];
			}
	}
	return NULL;
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
	const char *p = settings;
	const char *name;
	char	   *value;

	if (timezone)
		set_if_differs("TimeZone", timezone);
	while ((name = next_pinned(&p, &value)) != NULL)
		set_if_differs(name, value);
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
	const char *name;
	char	   *value;
	StringInfoData buf;

	initStringInfo(&buf);
	while ((name = next_pinned(&p, &value)) != NULL)
		appendStringInfo(&buf, "%s%s = '%s'", buf.len > 0 ? ", " : "", name, value);
	if (buf.len == 0)
		return "DateStyle, IntervalStyle, extra_float_digits, bytea_output: those of the session running it";
	appendStringInfoString(&buf, " (its creator's)");
	return buf.data;
}
