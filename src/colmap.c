/*-------------------------------------------------------------------------
 *
 * colmap.c
 *	  Column numbers of named columns of a relation, cached per call site.
 *
 * The per-batch catalog reads and writes (a query's cq.queries row, the
 * last offset, the offset and progress rows) find each column they read or
 * write by name in the relation's tuple descriptor: 24 names for a query's
 * row, each a linear search with a string comparison per column.  That was
 * about 4% of the instructions of a small batch (bench/batch_cg.sh, session
 * 33).  A call site's column numbers only change when the relation's
 * columns do (ALTER TABLE: an extension update adds columns), which
 * invalidates the relation's cache entry; the map is dropped then, by
 * pg_cq's relation cache callback (inval.c), at the same moments the
 * relation's tuple descriptor would be rebuilt.  The relation passed is
 * open (locked), so the invalidations its lock made this backend accept
 * have been processed, as for its tuple descriptor.
 *
 * The same per-batch code opens pg_cq's tables cq.queries, cq.offsets and
 * cq.progress by name, two catalog look-ups each (the schema, then the
 * table; ~1,200 instructions, five to seven times a batch):
 * cq_colmap_cq_relid keeps the answers until any pg_class or pg_namespace
 * row changes (a syscache callback), which is when a look-up could answer
 * otherwise; invalidations are processed at the same moments as for the
 * catalog caches, so it answers as the look-ups would.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/namespace.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "colmap.h"
#include "inval.h"
#include "sql_builder.h"

static CqColMap *maps = NULL;	/* every map used so far */

/*
 * colmap_inval
 *	  Relation cache callback: forget the maps of relid (all of them when
 *	  relid is InvalidOid).
 */
static void
colmap_inval(Datum arg, Oid relid)
{
	for (CqColMap *m = maps; m != NULL; m = m->next)
		if (!OidIsValid(relid) || m->relid == relid)
			m->valid = false;
}

/*
 * cq_colmap_get
 *	  The column numbers of names[0..n-1] in rel (InvalidAttrNumber for a
 *	  name it has no column of, dropped columns ignored), as cq_rel_attnum
 *	  finds them, from map when it was filled for the same relation and
 *	  names since the relation's last invalidation.  The array lives as long
 *	  as the map is valid: read it before anything that may process
 *	  invalidations (opening or locking a relation, a catalog look-up).
 */
const AttrNumber *
cq_colmap_get(CqColMap *map, Relation rel, const char *const *names, int n)
{
	bool		same = map->valid && map->relid == RelationGetRelid(rel) && map->n == n;

	Assert(n <= CQ_COLMAP_MAX);
	for (int i = 0; same && i < n; i++)
		same = map->names[i] == names[i];
	if (same)
		return map->atts;
	if (!map->registered)
	{
		cq_relcache_callback(colmap_inval, (Datum) 0);
		map->next = maps;
		maps = map;
		map->registered = true;
	}
	for (int i = 0; i < n; i++)
	{
		map->names[i] = names[i];
		map->atts[i] = cq_rel_attnum(rel, names[i]);
	}
	map->n = n;
	map->relid = RelationGetRelid(rel);
	map->valid = true;
	return map->atts;
}

/* cq_colmap_cq_relid's answers: cq.<relid_names[i]> */
static const char *const relid_names[] = {"queries", "offsets", "progress"};
static Oid	relids[lengthof(relid_names)];
static bool relids_valid = false;

/* Syscache callback (pg_class, pg_namespace): forget every answer. */
static void
relid_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	relids_valid = false;
}

/*
 * cq_colmap_cq_relid
 *	  The OID of pg_cq's table cq.<relname> (InvalidOid if there is none),
 *	  as get_relname_relid in the schema cq would answer; relname one of
 *	  queries, offsets, progress (else looked up each time).
 */
Oid
cq_colmap_cq_relid(const char *relname)
{
	static bool registered = false;
	int			i;

	for (i = 0; i < lengthof(relid_names); i++)
		if (strcmp(relid_names[i], relname) == 0)
			break;
	if (i < lengthof(relid_names) && relids_valid)
		return relids[i];
	if (!registered)
	{
		CacheRegisterSyscacheCallback(RELNAMENSP, relid_inval, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACENAME, relid_inval, (Datum) 0);
		registered = true;
	}
	if (i == lengthof(relid_names))
	{
		Oid			nsp = get_namespace_oid("cq", true);

		return OidIsValid(nsp) ? get_relname_relid(relname, nsp) : InvalidOid;
	}
	/* valid from here: an invalidation during the look-ups clears it again */
	relids_valid = true;
	{
		Oid			nsp = get_namespace_oid("cq", true);

		for (int j = 0; j < lengthof(relid_names); j++)
			relids[j] = OidIsValid(nsp) ? get_relname_relid(relid_names[j], nsp) : InvalidOid;
	}
	return relids[i];
}
