/*-------------------------------------------------------------------------
 *
 * colmap.h
 *	  Column numbers of named columns of a relation, cached per call site
 *	  until the relation's cache entry is invalidated (colmap.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_COLMAP_H
#define CQ_COLMAP_H

#include "postgres.h"

#include "utils/rel.h"

#define CQ_COLMAP_MAX 32

/*
 * One call site's columns: a static CqColMap per site, zero-initialized
 * (CQ_COLMAP_INIT); names must be string constants (compared by address).
 */
typedef struct CqColMap
{
	struct CqColMap *next;		/* registered maps (colmap.c) */
	bool		registered;
	bool		valid;
	Oid			relid;
	int			n;
	const char *names[CQ_COLMAP_MAX];
	AttrNumber	atts[CQ_COLMAP_MAX];	/* InvalidAttrNumber: no such column */
} CqColMap;

#define CQ_COLMAP_INIT {0}

extern const AttrNumber *cq_colmap_get(CqColMap *map, Relation rel, const char *const *names,
									   int n);
extern Oid	cq_colmap_cq_relid(const char *relname);

#endif							/* CQ_COLMAP_H */
