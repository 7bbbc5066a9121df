/*-------------------------------------------------------------------------
 *
 * options.h
 *	  Options of a continuous query: parsing, defaults, limits (options.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_OPTIONS_H
#define CQ_OPTIONS_H

#include "postgres.h"
#include "utils/timestamp.h"

#define CQ_DAYS_PER_MONTH 31		/* a month of watermark delay, as Spark counts it */
#define CQ_TRIGGER_MAX_USECS (INT64CONST(365) * USECS_PER_DAY)	/* longest trigger interval */

/* Output modes (SPEC §3). */
typedef enum CqOutputMode
{
	CQ_MODE_APPEND,				/* INSERT rows that can never change */
	CQ_MODE_UPDATE,				/* upsert result rows that changed */
	CQ_MODE_COMPLETE			/* replace the whole result */
} CqOutputMode;

/*
 * Options of a continuous query, as given by the user (DDL or function).
 * NULL / -1 fields mean "not given"; cq_options_finish() fills defaults.
 */
typedef struct CqOptions
{
	char	   *output_mode;
	char	   *trigger;
	char	   *event_time;
	char	   *watermark;
	int64		max_rows_per_trigger;	/* 0 = unlimited, -1 = not given */
	char	   *starting;
	char	   *source;
	char	   *state_storage;
	char	   *complete_refresh;
	Oid			source_relid;	/* the stream as recorded in the catalog (the
								 * source option is kept only as this OID), or
								 * InvalidOid */

	/*
	 * A join of two streams (joinspec.c): the second stream, its event-time
	 * column and watermark delay.  The source, event_time and watermark
	 * options then list one entry per stream; cq_options_finish splits the
	 * watermark option into watermark (first) and join_watermark (second).
	 */
	Oid			join_source_relid;	/* as recorded in the catalog, or InvalidOid */
	char	   *join_event_time;	/* column name, as recorded */
	char	   *join_watermark;

	/* parsed forms, set by cq_options_finish() */
	CqOutputMode mode;
	bool		state_storage_default;	/* state_storage was not given: it is
										 * cq.default_state_storage's, which
										 * the query may not be able to use */
	char	   *state_path;		/* where the state is and why, as
								 * cq.queries.state_path shows it: set when a
								 * query is created (api.c) or read from a
								 * 0.2 catalog, else NULL */
	Interval   *watermark_delay;
	Interval   *join_watermark_delay;	/* of the second stream of a join */
} CqOptions;

extern void cq_options_init(CqOptions *opts);
extern void cq_options_set(CqOptions *opts, const char *name, const char *value);
extern void cq_options_finish(CqOptions *opts);
extern void cq_options_check_limits(CqOptions *opts);
extern bool cq_options_delay_usecs(const Interval *iv, int64 *us);
extern const char *cq_mode_name(CqOutputMode mode);
extern bool cq_options_in_memory(const CqOptions *opts);
extern bool cq_options_logged_image(const CqOptions *opts);

#endif							/* CQ_OPTIONS_H */
