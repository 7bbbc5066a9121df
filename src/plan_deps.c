/*-------------------------------------------------------------------------
 *
 * plan_deps.c
 *	  What a query's cached analysis and SQL (plan.c) were built from: the
 *	  relations, functions, types and collations a change of which can
 *	  change them.
 *
 * plan.c used to drop every cached entry on any relation, function or
 * type invalidation in the database, and those are frequent where nothing
 * of a query changed: autovacuum's ANALYZE or VACUUM of any table (an
 * in-place update of its pg_class row), a CREATE TEMP TABLE (a relation and
 * its row types).  A pool worker lost its warm-up (warm.c) so, and a
 * long-lived worker rebuilt a query's analysis every few batches.  An
 * entry now keeps:
 *	 - its relations: the query tree's (views, joined tables, regclass
 *	   constants), its source, the relation its batches read (a Citus copy),
 *	   target, state table, final view and DISTINCT values table,
 *	   each with a fingerprint of everything of it the analysis and the SQL
 *	   can depend on (names, columns and their types, constraints, default
 *	   expressions, indexes, triggers, rules, row-level security policies,
 *	   inheritance children), but not its statistics or storage (relpages,
 *	   reltuples, relfrozenxid, relfilenode: VACUUM, ANALYZE, TRUNCATE);
 *	 - the hash values (as the syscache invalidation gives them) of the
 *	   functions the query calls (with its aggregates' support functions
 *	   and the functions of its operators and grouping equality operators),
 *	   of every type of its expressions and of its relations' columns, of
 *	   every collation they use or compare under (renaming one renames
 *	   what the SQL prints: the batch failed when its statement was parsed
 *	   again), and of the schemas of all of them and of its operators.
 * An invalidation of one of its relations has the entry checked before it
 * is used again: its relations' fingerprints are taken again, and only a
 * difference rebuilds it.  An invalidation of one of its functions, types,
 * collations or schemas rebuilds it.  A reset of a whole cache, and any
 * operator change (rare; the operators the SQL spells are looked up by type
 * as well as taken from the tree), still rebuild every entry: plan.c's
 * callbacks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "rewrite/prs2lock.h"
#include "rewrite/rowsecurity.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "plan_deps.h"

struct CqPlanDeps
{
	int			nrels;
	Oid		   *rels;
	char	  **fps;			/* each one's fingerprint; NULL: it was missing */
	int			nprocs;
	uint32	   *procs;			/* PROCOID hash values */
	int			ntypes;
	uint32	   *types;			/* TYPEOID hash values */
	int			ncolls;
	uint32	   *colls;			/* COLLOID hash values */
	int			nnsps;
	uint32	   *nsps;			/* NAMESPACEOID hash values */
	bool		any_nsp;		/* any schema's change: more_items has a function */
};

typedef struct Collected
{
	List	   *rels;			/* OID */
	List	   *procs;			/* OID */
	List	   *types;			/* OID */
	List	   *colls;			/* OID, not the database's default */
	List	   *nsps;			/* OID: the schemas of all of them */
} Collected;

/*
 * add_collation
 *	  A collation the SQL may name or compare under (InvalidOid: none).
 *	  The database's default is never altered or dropped.
 */
static void
add_collation(Collected *c, Oid coll)
{
	if (OidIsValid(coll) && coll != DEFAULT_COLLATION_OID)
		c->colls = list_append_unique_oid(c->colls, coll);
}

/*
 * add_proc
 *	  A function the SQL may name or call (InvalidOid: none).
 */
static void
add_proc(Collected *c, Oid fn)
{
	if (OidIsValid(fn))
		c->procs = list_append_unique_oid(c->procs, fn);
}

/*
 * add_aggregate
 *	  An aggregate and what its state columns are made of: its support
 *	  functions and transition types (analyze.c writes a user-defined
 *	  aggregate's partial, merge and final steps with them).
 */
static void
add_aggregate(Collected *c, Oid aggfn)
{
	HeapTuple	tup;
	Form_pg_aggregate agg;

	add_proc(c, aggfn);
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfn));
	if (!HeapTupleIsValid(tup))
		return;
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	add_proc(c, agg->aggtransfn);
	add_proc(c, agg->aggfinalfn);
	add_proc(c, agg->aggcombinefn);
	add_proc(c, agg->aggserialfn);
	add_proc(c, agg->aggdeserialfn);
	add_proc(c, agg->aggmtransfn);
	add_proc(c, agg->aggminvtransfn);
	add_proc(c, agg->aggmfinalfn);
	c->types = list_append_unique_oid(c->types, agg->aggtranstype);
	if (OidIsValid(agg->aggmtranstype))
		c->types = list_append_unique_oid(c->types, agg->aggmtranstype);
	ReleaseSysCache(tup);
}

/*
 * add_operator
 *	  An operator's function (the operator itself: plan.c rebuilds every
 *	  entry on any operator change).
 */
static void
add_operator(Collected *c, Oid opno)
{
	HeapTuple	tup;

	if (!OidIsValid(opno))
		return;
	add_proc(c, get_opcode(opno));
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		return;
	c->nsps = list_append_unique_oid(c->nsps, ((Form_pg_operator) GETSTRUCT(tup))->oprnamespace);
	ReleaseSysCache(tup);
}

/*
 * collect_walker
 *	  The relations, functions and types of a query tree, subqueries and
 *	  range-table functions included.
 */
static bool
collect_walker(Node *node, Collected *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = (Query *) node;
		ListCell   *lc;

		foreach(lc, query->rtable)
		{
			RangeTblEntry *rte = lfirst(lc);

			if (rte->rtekind == RTE_RELATION)
				c->rels = list_append_unique_oid(c->rels, rte->relid);
		}
		/* the operators of GROUP BY, DISTINCT and ORDER BY (not expressions) */
		foreach(lc, list_concat(list_concat(list_copy(query->groupClause), query->distinctClause),
								query->sortClause))
		{
			SortGroupClause *sgc = lfirst(lc);

			add_operator(c, sgc->eqop);
			add_operator(c, sgc->sortop);
		}
		return query_tree_walker(query, collect_walker, (void *) c, 0);
	}
	switch (nodeTag(node))
	{
		case T_Aggref:
			add_aggregate(c, ((Aggref *) node)->aggfnoid);
			break;
		case T_WindowFunc:
			add_aggregate(c, ((WindowFunc *) node)->winfnoid);
			break;
		case T_FuncExpr:
			add_proc(c, ((FuncExpr *) node)->funcid);
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			add_operator(c, ((OpExpr *) node)->opno);
			break;
		case T_ScalarArrayOpExpr:
			add_operator(c, ((ScalarArrayOpExpr *) node)->opno);
			break;
		case T_RowCompareExpr:
			{
				ListCell   *lc;

				foreach(lc, ((RowCompareExpr *) node)->opnos)
					add_operator(c, lfirst_oid(lc));
				foreach(lc, ((RowCompareExpr *) node)->inputcollids)
					add_collation(c, lfirst_oid(lc));
			}
			break;
		default:
			break;
	}
	switch (nodeTag(node))
	{
		case T_Var:
		case T_Const:
		case T_Param:
		case T_Aggref:
		case T_WindowFunc:
		case T_SubscriptingRef:
		case T_FuncExpr:
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
		case T_FieldSelect:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ArrayCoerceExpr:
		case T_ConvertRowtypeExpr:
		case T_CollateExpr:
		case T_CaseExpr:
		case T_ArrayExpr:
		case T_RowExpr:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_CoerceToDomain:
			c->types = list_append_unique_oid(c->types, exprType(node));
			add_collation(c, exprCollation(node));
			break;
		default:
			break;
	}
	/* the collation a function, operator or aggregate compares under */
	add_collation(c, exprInputCollation(node));
	if (IsA(node, Const) && ((Const *) node)->consttype == REGCLASSOID &&
		!((Const *) node)->constisnull)
		c->rels = list_append_unique_oid(c->rels, DatumGetObjectId(((Const *) node)->constvalue));
	return expression_tree_walker(node, collect_walker, (void *) c);
}

/*
 * rel_fingerprint
 *	  Everything of relation relid that a query's analysis and SQL can
 *	  depend on, as a string; NULL when it does not exist.  Not what
 *	  VACUUM, ANALYZE or TRUNCATE change.  Adds its columns' types and
 *	  collations to *into when into is not NULL.  Locks the relation as a
 *	  batch does (ACCESS SHARE, held to the end of the transaction).
 */
static char *
rel_fingerprint(Oid relid, Collected *into)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	Form_pg_class c;
	TupleDesc	desc;
	StringInfoData b;
	List	   *indexes;
	ListCell   *lc;

	if (rel == NULL)
		return NULL;
	c = rel->rd_rel;
	desc = RelationGetDescr(rel);
	initStringInfo(&b);
	appendStringInfo(&b, "%s|%u|%u|%u|%u|%u|%c|%c|%d|%d|%d%d%d%d%d%d|%c",
					 NameStr(c->relname), c->relnamespace, c->reltype, c->reloftype, c->relowner,
					 c->relam, c->relkind, c->relpersistence, c->relnatts, c->relchecks,
					 c->relhasrules, c->relhastriggers, c->relhassubclass, c->relrowsecurity,
					 c->relforcerowsecurity, c->relispartition, c->relreplident);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		appendStringInfo(&b, "|a%s:%u:%d:%d:%u:%d%d%d:%d:%d", NameStr(a->attname), a->atttypid,
						 a->atttypmod, a->attndims, a->attcollation, a->attnotnull,
						 a->attisdropped, a->atthasdef, (int) a->attidentity, (int) a->attgenerated);
		if (into && !a->attisdropped)
		{
			into->types = list_append_unique_oid(into->types, a->atttypid);
			add_collation(into, a->attcollation);
		}
	}
	if (desc->constr)
	{
		for (int i = 0; i < desc->constr->num_defval; i++)
			appendStringInfo(&b, "|d%d:%s", desc->constr->defval[i].adnum,
							 desc->constr->defval[i].adbin);
		for (int i = 0; i < desc->constr->num_check; i++)
			appendStringInfo(&b, "|c%s:%s:%d%d", desc->constr->check[i].ccname,
							 desc->constr->check[i].ccbin, desc->constr->check[i].ccvalid,
							 desc->constr->check[i].ccnoinherit);
	}
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
		appendStringInfo(&b, "|i%u", lfirst_oid(lc));
	if (rel->trigdesc)
		for (int i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			Trigger    *t = &rel->trigdesc->triggers[i];

			appendStringInfo(&b, "|t%u:%u:%d:%c:%d", t->tgoid, t->tgfoid, t->tgtype, t->tgenabled,
							 t->tgqual != NULL);
		}
	/* a view's definition too (CREATE OR REPLACE VIEW keeps its rule's OID) */
	if (rel->rd_rules)
		for (int i = 0; i < rel->rd_rules->numLocks; i++)
		{
			RewriteRule *r = rel->rd_rules->rules[i];

			appendStringInfo(&b, "|r%u:%d:%c:%s:%s", r->ruleId, (int) r->event, r->enabled,
							 nodeToString(r->qual), nodeToString(r->actions));
		}
	if (rel->rd_rsdesc)
		foreach(lc, rel->rd_rsdesc->policies)
		{
			RowSecurityPolicy *p = lfirst(lc);

			appendStringInfo(&b, "|p%s:%c:%d", p->policy_name, p->polcmd, p->permissive);
		}
	if (c->relhassubclass)
		foreach(lc, find_inheritance_children(relid, NoLock))
			appendStringInfo(&b, "|h%u", lfirst_oid(lc));
	relation_close(rel, NoLock);
	return b.data;
}

/*
 * add_namespaces_of
 *	  The schemas of the objects oids of syscache cacheid, whose column
 *	  nspattr names their schema (those gone meanwhile are left out).
 */
static void
add_namespaces_of(Collected *c, List *oids, int cacheid, AttrNumber nspattr)
{
	ListCell   *lc;

	foreach(lc, oids)
	{
		HeapTuple	tup = SearchSysCache1(cacheid, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		isnull;
		Datum		nsp;

		if (!HeapTupleIsValid(tup))
			continue;
		nsp = SysCacheGetAttr(cacheid, tup, nspattr, &isnull);
		if (!isnull)
			c->nsps = list_append_unique_oid(c->nsps, DatumGetObjectId(nsp));
		ReleaseSysCache(tup);
	}
}

/*
 * add_namespaces
 *	  The schemas of the collected relations, functions, types and
 *	  collations: renaming one renames what the SQL prints.
 */
static void
add_namespaces(Collected *c)
{
	ListCell   *lc;

	foreach(lc, c->rels)
	{
		Oid			nsp = get_rel_namespace(lfirst_oid(lc));

		if (OidIsValid(nsp))
			c->nsps = list_append_unique_oid(c->nsps, nsp);
	}
	add_namespaces_of(c, c->procs, PROCOID, Anum_pg_proc_pronamespace);
	add_namespaces_of(c, c->types, TYPEOID, Anum_pg_type_typnamespace);
	add_namespaces_of(c, c->colls, COLLOID, Anum_pg_collation_collnamespace);
}

/*
 * hash_values
 *	  The syscache hash values of the OIDs in oids, for cache cacheid.
 */
static uint32 *
hash_values(int cacheid, List *oids)
{
	uint32	   *h = palloc(sizeof(uint32) * Max(list_length(oids), 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, oids)
		h[i++] = GetSysCacheHashValue1(cacheid, ObjectIdGetDatum(lfirst_oid(lc)));
	return h;
}

/*
 * add_internal
 *	  Query id's relation of cq_state named prefix<id>, if there is one.
 */
static void
add_internal(Collected *c, const char *prefix, int32 id)
{
	Oid			nsp = get_namespace_oid("cq_state", true);
	Oid			relid;

	if (!OidIsValid(nsp))
		return;
	relid = get_relname_relid(psprintf("%s%d", prefix, id), nsp);
	if (OidIsValid(relid))
		c->rels = list_append_unique_oid(c->rels, relid);
}

/*
 * copy_hashes
 *	  hashes[0..n) into the current memory context, with the PlanInvalItems
 *	  of items for cache cacheid after them; *n counts them.
 */
static uint32 *
copy_hashes(const uint32 *hashes, int *n, List *items, int cacheid)
{
	uint32	   *h = palloc(sizeof(uint32) * (*n + list_length(items) + 1));
	ListCell   *lc;

	memcpy(h, hashes, sizeof(uint32) * *n);
	foreach(lc, items)
	{
		PlanInvalItem *item = lfirst(lc);

		if (item->cacheId == cacheid)
			h[(*n)++] = item->hashValue;
	}
	return h;
}

/*
 * cq_plan_deps_collect
 *	  The dependencies of query q's analysis an (built from stored, its
 *	  catalog tree, over relation read), with their fingerprints as they
 *	  are now, allocated in cxt (the work in the current memory context);
 *	  more_items: PlanInvalItems of expressions planned for the plan
 *	  (delta_scan.c's: the functions they inline).
 */
CqPlanDeps *
cq_plan_deps_collect(CqQuery *q, CqAnalysis *an, Query *stored, Oid read, List *more_items,
					 MemoryContext cxt)
{
	CqPlanDeps *deps;
	Collected	c = {NIL, NIL, NIL, NIL, NIL};
	List	   *rels_planner = NIL;
	List	   *items = NIL;
	bool		rls = false;
	ListCell   *lc;
	int			nrels;
	Oid		   *rels;
	char	  **fps;
	uint32	   *procs,
			   *types,
			   *colls,
			   *nsps;
	int			i;
	MemoryContext old;

	(void) collect_walker((Node *) stored, &c);
	(void) collect_walker((Node *) an->query, &c);
	foreach(lc, an->group_eqops)
		add_operator(&c, lfirst_oid(lc));
	/* what the planner would depend on, as a cached plan does (domains, regclass constants) */
	extract_query_dependencies((Node *) copyObject(an->query), &rels_planner, &items, &rls);
	items = list_concat(items, more_items);
	foreach(lc, rels_planner)
		c.rels = list_append_unique_oid(c.rels, lfirst_oid(lc));
	foreach(lc, list_make4_oid(q->source, q->target, q->state_table, read))
		if (OidIsValid(lfirst_oid(lc)))
			c.rels = list_append_unique_oid(c.rels, lfirst_oid(lc));
	if (OidIsValid(q->opts.join_source_relid))
		c.rels = list_append_unique_oid(c.rels, q->opts.join_source_relid);
	add_internal(&c, "f_", q->id);
	add_internal(&c, "sd_", q->id);

	nrels = list_length(c.rels);
	rels = palloc(sizeof(Oid) * Max(nrels, 1));
	fps = palloc(sizeof(char *) * Max(nrels, 1));
	i = 0;
	foreach(lc, c.rels)
	{
		rels[i] = lfirst_oid(lc);
		fps[i] = rel_fingerprint(rels[i], &c);
		i++;
	}
	add_namespaces(&c);
	procs = hash_values(PROCOID, c.procs);
	types = hash_values(TYPEOID, c.types);
	colls = hash_values(COLLOID, c.colls);
	nsps = hash_values(NAMESPACEOID, c.nsps);

	old = MemoryContextSwitchTo(cxt);
	deps = palloc0(sizeof(CqPlanDeps));
	deps->nrels = nrels;
	deps->rels = palloc(sizeof(Oid) * Max(nrels, 1));
	memcpy(deps->rels, rels, sizeof(Oid) * nrels);
	deps->fps = palloc(sizeof(char *) * Max(nrels, 1));
	for (i = 0; i < nrels; i++)
		deps->fps[i] = fps[i] ? pstrdup(fps[i]) : NULL;
	/* the planner's items are PROCOID and TYPEOID hash values already */
	deps->nprocs = list_length(c.procs);
	deps->procs = copy_hashes(procs, &deps->nprocs, items, PROCOID);
	deps->ntypes = list_length(c.types);
	deps->types = copy_hashes(types, &deps->ntypes, items, TYPEOID);
	deps->ncolls = list_length(c.colls);
	deps->colls = copy_hashes(colls, &deps->ncolls, NIL, COLLOID);
	deps->nnsps = list_length(c.nsps);
	deps->nsps = copy_hashes(nsps, &deps->nnsps, NIL, NAMESPACEOID);
	/*
	 * A function inlined into an expression planned for the plan (one that
	 * an inlined SQL function calls is in no tree here): its schema is not
	 * known, and a change of it (USAGE revoked, a rename) fails the body's
	 * parse when the statement inlines it again; so any schema's change
	 * rebuilds the entry, which inlines it again too.
	 */
	foreach(lc, more_items)
		if (((PlanInvalItem *) lfirst(lc))->cacheId == PROCOID)
			deps->any_nsp = true;
	MemoryContextSwitchTo(old);
	return deps;
}

/*
 * cq_plan_deps_has_rel
 *	  Was the entry built from relation relid?
 */
bool
cq_plan_deps_has_rel(const CqPlanDeps *deps, Oid relid)
{
	for (int i = 0; i < deps->nrels; i++)
		if (deps->rels[i] == relid)
			return true;
	return false;
}

/*
 * cq_plan_deps_has_hash
 *	  Was the entry built from a function (cacheid PROCOID), type (TYPEOID),
 *	  collation (COLLOID) or schema (NAMESPACEOID) of this hash value?
 *	  (Another object of the same hash value rebuilds it for nothing, as a
 *	  cached plan is.)  True for any other cache.
 */
bool
cq_plan_deps_has_hash(const CqPlanDeps *deps, int cacheid, uint32 hashvalue)
{
	const uint32 *h;
	int			n;

	if (cacheid == PROCOID)
		h = deps->procs, n = deps->nprocs;
	else if (cacheid == TYPEOID)
		h = deps->types, n = deps->ntypes;
	else if (cacheid == COLLOID)
		h = deps->colls, n = deps->ncolls;
	else if (cacheid == NAMESPACEOID && deps->any_nsp)
		return true;
	else if (cacheid == NAMESPACEOID)
		h = deps->nsps, n = deps->nnsps;
	else
		return true;

	for (int i = 0; i < n; i++)
		if (h[i] == hashvalue)
			return true;
	return false;
}

/*
 * cq_plan_deps_unchanged
 *	  Are the entry's relations as they were when it was built?  Each is
 *	  locked as the batch locks it, which reads the invalidations that came
 *	  meanwhile: the caller checks that none of its relations had one while
 *	  this ran.
 */
bool
cq_plan_deps_unchanged(const CqPlanDeps *deps)
{
	for (int i = 0; i < deps->nrels; i++)
	{
		char	   *fp = rel_fingerprint(deps->rels[i], NULL);

		if ((fp == NULL) != (deps->fps[i] == NULL) ||
			(fp != NULL && strcmp(fp, deps->fps[i]) != 0))
			return false;
	}
	return true;
}
