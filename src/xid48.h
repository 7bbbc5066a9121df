/*-------------------------------------------------------------------------
 *
 * xid48.h
 *	  cq.xid48, an xid8's value in 6 bytes (xid48.c): its on-disk bytes.
 *
 * A cq.xid48 datum is a pointer to 6 bytes (typlen 6, typbyval false,
 * typalign 'c': the bytes may lie at any address), the value's low 48 bits
 * in little-endian order, whatever the machine's byte order: the format is
 * on disk in users' tables.  Every value below CQ_XID48_LIMIT has exactly
 * one representation, so equal values have equal bytes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_XID48_H
#define CQ_XID48_H

#include "postgres.h"

/* bytes of a value; values are below CQ_XID48_LIMIT (2^48) */
#define CQ_XID48_LEN	6
#define CQ_XID48_LIMIT	(UINT64CONST(1) << 48)

/*
 * cq_xid48_get: the value held by the 6 bytes at p (any alignment).
 */
static inline uint64
cq_xid48_get(const void *p)
{
	const uint8 *b = (const uint8 *) p;

	return (uint64) b[0] | ((uint64) b[1] << 8) | ((uint64) b[2] << 16) |
		((uint64) b[3] << 24) | ((uint64) b[4] << 32) | ((uint64) b[5] << 40);
}

/*
 * cq_xid48_put: writes value (below CQ_XID48_LIMIT: the caller checked)
 * into the 6 bytes at p.
 */
static inline void
cq_xid48_put(void *p, uint64 value)
{
	uint8	   *b = (uint8 *) p;

	b[0] = (uint8) value;
	b[1] = (uint8) (value >> 8);
	b[2] = (uint8) (value >> 16);
	b[3] = (uint8) (value >> 24);
	b[4] = (uint8) (value >> 32);
	b[5] = (uint8) (value >> 40);
}

extern Datum cq_xid48_from_u64(uint64 value);
extern const void *cq_xid48_current(void);

#endif							/* CQ_XID48_H */
