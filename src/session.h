/*-------------------------------------------------------------------------
 *
 * session.h
 *	  Session windows: state table, batch and rebuild statements
 *	  (session.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SESSION_H
#define CQ_SESSION_H

#include "postgres.h"
#include "analyze.h"
#include "options.h"

extern bool cq_session_state_logged(CqAnalysis *an, CqOutputMode mode);
extern char *cq_session_state_table_sql(CqAnalysis *an, const char *qualname, bool logged,
										CqOutputMode mode);
extern char *cq_session_batch_sql(CqAnalysis *an, CqOutputMode mode, const char *state,
								  Oid viewid, const char *target, bool history);
extern char *cq_session_rebuild_sql(CqAnalysis *an, CqOutputMode mode, const char *state,
									bool history);

#endif							/* CQ_SESSION_H */
