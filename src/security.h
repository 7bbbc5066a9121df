/*-------------------------------------------------------------------------
 *
 * security.h
 *	  The only place that switches users and pins search_path (security.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SECURITY_H
#define CQ_SECURITY_H

#include "postgres.h"

typedef struct CqSecurity
{
	Oid			save_uid;		/* user and security context to restore */
	int			save_sec;
	int			nest;			/* GUC nest level of the pinned search_path */
} CqSecurity;

extern void cq_security_superuser(CqSecurity *s);
extern void cq_security_owner(Oid owner, CqSecurity *s);
extern void cq_security_restore(CqSecurity *s);
extern void cq_security_pin_process(void);
extern bool cq_security_passes_setting(const char *name, const char *value);
extern int	cq_security_deparse_begin(void);
extern void cq_security_deparse_end(int nest);
extern void cq_security_target_rls(Oid target, Oid owner, bool reads, const char *name);

#endif							/* CQ_SECURITY_H */
