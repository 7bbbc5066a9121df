/*-------------------------------------------------------------------------
 *
 * stamp.h
 *	  The write path of a tracked source (stamp.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STAMP_H
#define CQ_STAMP_H

extern void cq_stamp_init(void);

#endif							/* CQ_STAMP_H */
