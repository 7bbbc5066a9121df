/*-------------------------------------------------------------------------
 *
 * insert_check.h
 *	  Positional INSERTs that would give a source's cq_xid a value meant
 *	  for a later column, refused at parse analysis (insert_check.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_INSERT_CHECK_H
#define CQ_INSERT_CHECK_H

extern void cq_insert_check_init(void);

#endif							/* CQ_INSERT_CHECK_H */
