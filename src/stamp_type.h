/*-------------------------------------------------------------------------
 *
 * stamp_type.h
 *	  The type of a source's cq_xid column, xid8 or cq.xid48, and what its
 *	  readers need of it (stamp_type.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STAMP_TYPE_H
#define CQ_STAMP_TYPE_H

#include "postgres.h"

#include "access/attnum.h"

#include "xid48.h"

extern Oid	cq_stamp_xid48_type(void);
extern Oid	cq_stamp_current_xid48_function(void);
extern bool cq_stamp_type_ok(Oid type);
extern Oid	cq_stamp_type_of(Oid relid, AttrNumber att);
extern Oid	cq_stamp_operator(Oid coltype, const char *op);
extern char *cq_stamp_operator_sql(Oid coltype, const char *op);
extern int	cq_stamp_key_strategy(Oid fn, Datum arg, uint64 *value);
extern int	cq_stamp_cmp_strategy(Oid fn, bool *arg_xid8);
extern Datum cq_stamp_datum(uint64 value, Oid type);
extern void *cq_stamp_current_bytes(void);
extern Oid	cq_stamp_new_type(bool distributed);

/*
 * cq_stamp_get
 *	  The value of a cq_xid datum: an xid8 (by value) or a cq.xid48 (by
 *	  reference, 6 bytes); byval is the column's typbyval (attbyval).
 */
static inline uint64
cq_stamp_get(Datum d, bool byval)
{
	return byval ? DatumGetUInt64(d) : cq_xid48_get(DatumGetPointer(d));
}

#endif							/* CQ_STAMP_TYPE_H */
