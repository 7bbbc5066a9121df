/*-------------------------------------------------------------------------
 *
 * shard.h
 *	  The shards' side of a batch over a Citus source stamped per node
 *	  (shard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_SHARD_H
#define CQ_SHARD_H

extern void cq_shard_init(void);

#endif							/* CQ_SHARD_H */
