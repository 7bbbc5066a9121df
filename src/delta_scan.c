/*-------------------------------------------------------------------------
 *
 * delta_scan.c
 *	  The new rows of an incremental batch on the store read in C, for
 *	  deltagg.c's aggregation (issue 12, goal 3: the fold's CPU per
 *	  ingested row).
 *
 * Where deltagg.c aggregates d's rows, the batch still ran the statement
 * sql->delta_c ("SELECT keys, arguments FROM (new rows) i": a bitmap heap
 * scan of the source over its BRIN index on cq_xid, the filter
 * cq.xid_new(cq_xid, $3, $4), the projection).  Of the ~2,150 instructions
 * a folded row (bench/ingest_cg.sh, session 38) that scan took ~1,320:
 * the filter and the projection ~590 of it, with every column of a row
 * deformed to reach cq_xid (the table's last column) and each step through
 * the expression interpreter.  This reads the same rows itself, with the
 * same access methods: the BRIN index's bitmap for [$1, $2)
 * (index_getbitmap), then the heap's bitmap scan (table_scan_bitmap_next_
 * block/_tuple: heapam's visibility, hint bits and SSI, in the snapshot
 * the statement would take); per row it reads cq_xid from the stored
 * tuple (alone at a fixed offset, else with the columns before it) and
 * tests it as cq.xid_new does (its C function, cq_xid_is_new), and only
 * for the rows that pass deforms the columns on to the last one the query
 * reads, evaluates the query's WHERE and each key and argument (a plain
 * column read from the slot, a function or operator over columns and
 * constants called directly, anything else through an ExprState built
 * once a batch), and hands the values to deltagg.c (cq_deltagg_add).
 * bench/ingest_cg.sh: 2,162 -> 1,806 instructions a folded row (session
 * 39, bench/results/ingest-s39-cscan.md).
 *
 * Handled (cq_delta_scan_build; anything else runs sql->delta_c):
 *	the query reads one plain table (the source; not partitioned, ONLY or
 *	without inheritance children when the batch runs), no CTE, no
 *	sub-select, no set-returning function; its WHERE, keys and arguments
 *	read that table's user columns (no system or whole-row column) through
 *	functions, operators, casts, CASE and the like (no parameter,
 *	aggregate or window function: deltagg.c already rules out volatile
 *	functions).  At run time (cq_delta_scan_run, else the statement): the
 *	GUC cq.delta_scan_in_c, parameters not NULL, the columns read still of
 *	the types planned, cq_xid of type xid8 or cq.xid48 with its
 *	single-column BRIN index (valid, no predicate, its opfamily having the
 *	column type's >= and < against xid8, the bounds' type), no
 *	row-level security applied to the source for the current user.
 *
 * Privileges: the statement's executor checks SELECT on the source's
 * columns it reads (its range table's selectedCols: those of the WHERE,
 * the keys, all the arguments and FILTER conditions (the inner query
 * selects them all) and cq_xid); this does the same check
 * (ExecCheckRTPerms) before reading, so an owner without them gets the
 * statement's error, nothing read.  Likewise USAGE on the schemas the
 * statement names objects of (its parse looks them up; see schema_walker)
 * and EXECUTE on a function called directly (direct_call).  A function
 * the planning inlined (and one it calls) is a dependency of the plan
 * cache entry (cq_delta_scan_inval_items): replaced, or its EXECUTE
 * revoked, it is planned again as the statement is.  Errors while
 * reading carry the statement's context line ("SQL statement ..."), as
 * SPI's do.
 *
 * Differences from the statement: the statement's filter evaluates the
 * query's WHERE before cq.xid_new (the planner keeps the order of equal
 * cost quals) over every row of the bitmap's lossy pages; this tests
 * cq_xid first, so a WHERE that raises an error for a row that is not new
 * raises it only in the statement.  No read-ahead of the bitmap's pages
 * (effective_io_concurrency): the batch's pages are those just written.
 *
 * What must follow PostgreSQL: read_rows reads the page heapam's bitmap
 * scan left in HeapScanDescData (rs_cbuf pinned, the visible rows'
 * offsets in rs_vistuples[rs_cindex .. rs_ntuples - 1]) as PostgreSQL 15's
 * heapam_scan_bitmap_next_tuple does, which is no API: another major
 * version may lay them out otherwise (17 moved the bitmap scan's state),
 * and a stale reading would return other rows, not fail.  So a build
 * against any version but those delta_page.h's CQ_HEAPAM_CHECKED names
 * stops with an #error saying what to compare first.
 *
 * Memory: the ExprStates and the bitmap live in a context of the run,
 * deleted at its end; each row's values are reset after cq_deltagg_add
 * (which copies what it keeps).  Locks: AccessShareLock on the source and
 * its index, held to the end of the transaction as the executor holds them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "delta_page.h"

#if !CQ_HEAPAM_CHECKED
#error "delta_scan.c reads HeapScanDescData's rs_vistuples, rs_ntuples, rs_cindex and rs_cbuf as PostgreSQL 15's heapam_scan_bitmap_next_tuple does: compare it and delta_page.c with this version's heapam_handler.c before widening CQ_HEAPAM_CHECKED (delta_page.h)"
#endif
#include "delta_scan.h"
#include "deltagg.h"
#include "guc.h"
#include "offsets.h"
#include "security.h"
#include "tracking.h"
#include "stamp_type.h"

struct CqDeltaScan
{
	Oid			relid;			/* the source */
	bool		inh;			/* read without ONLY: its children too */
	List	   *exprs;			/* per scan column: its expression, planned */
	List	   *quals;			/* the query's WHERE, planned, implicitly ANDed */
	List	   *vars;			/* every Var of the above (their types checked) */
	Bitmapset  *cols;			/* the columns the statement reads, but cq_xid
								 * (attno - FirstLowInvalidHeapAttributeNumber) */
	List	   *inval_items;	/* PlanInvalItems of exprs and quals as planned */
	List	   *nsps;			/* the schemas of what the statement names (OIDs) */
};

/* Vars of the source only (user columns), nothing the reader cannot evaluate */
typedef struct ScanWalk
{
	Index		rti;
	List	   *vars;
} ScanWalk;

static bool
scan_walker(Node *node, ScanWalk *w)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0 || v->varno != w->rti || v->varattno <= 0)
			return true;
		w->vars = lappend(w->vars, v);
		return false;
	}
	if (IsA(node, Param) || IsA(node, SubLink) || IsA(node, SubPlan) ||
		IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc) ||
		IsA(node, CurrentOfExpr) || IsA(node, NextValueExpr) || IsA(node, PlaceHolderVar))
		return true;
	if (expression_returns_set(node))
		return true;
	return expression_tree_walker(node, scan_walker, (void *) w);
}

/*
 * The schemas of the objects the statement names (it names every one
 * outside pg_catalog by its schema, and is parsed again whenever a schema
 * changes): its source, the functions and operators of its expressions,
 * the types it casts to or writes constants of, the collations of its
 * COLLATE clauses; those of the expressions as planned too (the functions
 * and casts of an inlined function's body, parsed when it is inlined).  Not
 * the type or collation of a column or of a function's result, which it
 * does not name.  The statement's parse needs USAGE on each, and so the
 * reader checks it (check_privileges): without it the owner read the new
 * rows of a table in a schema it had lost USAGE on, which the statement
 * (and the owner's own SELECT) refused.
 */
static void
add_nsp(List **nsps, int cacheid, Oid oid, AttrNumber nspattr)
{
	HeapTuple	tup;
	bool		isnull;
	Datum		nsp;

	if (!OidIsValid(oid))
		return;
	tup = SearchSysCache1(cacheid, ObjectIdGetDatum(oid));
	if (!HeapTupleIsValid(tup))
		return;
	nsp = SysCacheGetAttr(cacheid, tup, nspattr, &isnull);
	/* pg_catalog is searched without USAGE (recomputeNamespacePath) */
	if (!isnull && DatumGetObjectId(nsp) != PG_CATALOG_NAMESPACE)
		*nsps = list_append_unique_oid(*nsps, DatumGetObjectId(nsp));
	ReleaseSysCache(tup);
}

typedef struct SchemaWalk
{
	List	   *nsps;
	bool		consts;			/* constants' types too (not in a planned tree:
								 * a function folded into one is not named) */
} SchemaWalk;

static bool
schema_walker(Node *node, SchemaWalk *w)
{
	List	  **nsps = &w->nsps;
	Oid			type = InvalidOid;

	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_FuncExpr:
			/* a cast names its type, not its function */
			if (((FuncExpr *) node)->funcformat == COERCE_EXPLICIT_CALL)
				add_nsp(nsps, PROCOID, ((FuncExpr *) node)->funcid, Anum_pg_proc_pronamespace);
			else if (((FuncExpr *) node)->funcformat == COERCE_EXPLICIT_CAST)
				type = ((FuncExpr *) node)->funcresulttype;
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			add_nsp(nsps, OPEROID, ((OpExpr *) node)->opno, Anum_pg_operator_oprnamespace);
			break;
		case T_ScalarArrayOpExpr:
			add_nsp(nsps, OPEROID, ((ScalarArrayOpExpr *) node)->opno, Anum_pg_operator_oprnamespace);
			break;
		case T_RowCompareExpr:
			{
				ListCell   *lc;

				foreach(lc, ((RowCompareExpr *) node)->opnos)
					add_nsp(nsps, OPEROID, lfirst_oid(lc), Anum_pg_operator_oprnamespace);
			}
			break;
		case T_Const:
			if (w->consts)
				type = ((Const *) node)->consttype;
			break;
		case T_RelabelType:
			if (((RelabelType *) node)->relabelformat == COERCE_EXPLICIT_CAST)
				type = ((RelabelType *) node)->resulttype;
			break;
		case T_CoerceViaIO:
			if (((CoerceViaIO *) node)->coerceformat == COERCE_EXPLICIT_CAST)
				type = ((CoerceViaIO *) node)->resulttype;
			break;
		case T_ArrayCoerceExpr:
			if (((ArrayCoerceExpr *) node)->coerceformat == COERCE_EXPLICIT_CAST)
				type = ((ArrayCoerceExpr *) node)->resulttype;
			break;
		case T_CoerceToDomain:
			if (((CoerceToDomain *) node)->coercionformat == COERCE_EXPLICIT_CAST)
				type = ((CoerceToDomain *) node)->resulttype;
			break;
		case T_CollateExpr:
			add_nsp(nsps, COLLOID, ((CollateExpr *) node)->collOid, Anum_pg_collation_collnamespace);
			break;
		default:
			break;
	}
	add_nsp(nsps, TYPEOID, type, Anum_pg_type_typnamespace);
	return expression_tree_walker(node, schema_walker, (void *) w);
}

/* e planned for the executor (as expression_planner), its dependencies into ds */
static Node *
planned(Node *e, struct CqDeltaScan *ds)
{
	List	   *rels = NIL;
	List	   *items = NIL;
	Node	   *p = (Node *) expression_planner_with_deps((Expr *) copyObject(e), &rels, &items);

	ds->inval_items = list_concat(ds->inval_items, items);
	return p;
}

/*
 * cq_delta_scan_build
 *	  What cq_delta_scan_run needs to read sql->delta_c's rows for the
 *	  query an whose d deltagg.c aggregates (da), or NULL when the query
 *	  is not of the shapes handled (see the header); owner: the query's.
 */
struct CqDeltaScan *
cq_delta_scan_build(CqAnalysis *an, const struct CqDeltaAgg *da, Oid owner)
{
	CqSecurity	sec;
	Query	   *q = an->query;
	RangeTblEntry *rte;
	RangeTblRef *rtr;
	struct CqDeltaScan *ds;
	ScanWalk	w = {an->source_rti, NIL};
	SchemaWalk	sw;
	List	   *exprs;
	ListCell   *lc;

	if (q->cteList != NIL || q->hasSubLinks || q->hasTargetSRFs || q->hasRecursive ||
		q->rowMarks != NIL || q->setOperations != NULL || q->groupingSets != NIL ||
		q->hasWindowFuncs || list_length(q->rtable) != 1 ||
		list_length(q->jointree->fromlist) != 1)
		return NULL;
	rtr = linitial(q->jointree->fromlist);
	if (!IsA(rtr, RangeTblRef) || rtr->rtindex != (int) an->source_rti)
		return NULL;
	rte = rt_fetch(rtr->rtindex, q->rtable);
	if (rte->rtekind != RTE_RELATION || rte->relid != an->source_relid ||
		rte->tablesample != NULL || get_rel_relkind(rte->relid) != RELKIND_RELATION)
		return NULL;
	exprs = cq_deltagg_scan_exprs(da, an);
	/* the inner query selects every argument and FILTER condition: the statement reads their columns */
	if (scan_walker((Node *) exprs, &w) || scan_walker(q->jointree->quals, &w) ||
		scan_walker((Node *) an->arg_exprs, &w) || scan_walker((Node *) an->filter_exprs, &w))
		return NULL;
	ds = palloc0(sizeof(*ds));
	ds->relid = rte->relid;
	ds->inh = rte->inh;
	ds->vars = w.vars;
	foreach(lc, w.vars)
		ds->cols = bms_add_member(ds->cols, ((Var *) lfirst(lc))->varattno -
								  FirstLowInvalidHeapAttributeNumber);
	/*
	 * Planned as the statement's planner does, inlining SQL functions: the
	 * functions inlined (one called by an inlined one too, which is not in
	 * the query tree) are kept as the plan's dependencies, so that a change
	 * of one builds this again, as it plans the statement again (the
	 * reader went on with the body inlined before, and no EXECUTE was
	 * checked for it).  Planned as the owner, search_path pinned, as the
	 * statement is: the planner runs an immutable function of constants
	 * (and checks EXECUTE on a function it inlines), and the plan is built
	 * by whoever runs the batch first in a backend (a worker, as the
	 * bootstrap superuser; a superuser's cq.run or cq.explain): a query
	 * owner's function ran so as the superuser.
	 */
	cq_security_owner(owner, &sec);
	foreach(lc, exprs)
		ds->exprs = lappend(ds->exprs, planned((Node *) lfirst(lc), ds));
	if (q->jointree->quals != NULL)
		ds->quals = make_ands_implicit((Expr *) planned(q->jointree->quals, ds));
	cq_security_restore(&sec);
	sw.nsps = NIL;
	add_nsp(&sw.nsps, RELOID, rte->relid, Anum_pg_class_relnamespace);
	sw.consts = true;
	(void) schema_walker((Node *) list_make4(exprs, q->jointree->quals, an->arg_exprs, an->filter_exprs), &sw);
	sw.consts = false;
	(void) schema_walker((Node *) list_make2(ds->exprs, ds->quals), &sw);
	ds->nsps = sw.nsps;
	return ds;
}

/*
 * cq_delta_scan_inval_items
 *	  The PlanInvalItems of what ds's expressions were planned from (the
 *	  functions inlined, the domains elided): plan.c's entry depends on them.
 */
List *
cq_delta_scan_inval_items(const struct CqDeltaScan *ds)
{
	return ds != NULL ? ds->inval_items : NIL;
}

/*
 * cq_delta_scan_copy
 *	  A copy of ds (or NULL) in the current memory context.
 */
struct CqDeltaScan *
cq_delta_scan_copy(const struct CqDeltaScan *ds)
{
	struct CqDeltaScan *c;

	if (ds == NULL)
		return NULL;
	c = palloc(sizeof(*c));
	c->relid = ds->relid;
	c->inh = ds->inh;
	c->exprs = copyObject(ds->exprs);
	c->quals = copyObject(ds->quals);
	c->vars = copyObject(ds->vars);
	c->cols = bms_copy(ds->cols);
	c->inval_items = copyObject(ds->inval_items);
	c->nsps = list_copy(ds->nsps);
	return c;
}

/*
 * usable_index
 *	  The BRIN index on cq_xid (att) of rel opened, with its scan keys for
 *	  cq_xid >= lo AND cq_xid < hi as the executor builds them, or NULL
 *	  when it is not there or not of the form handled.
 */
static Relation
usable_index(Relation rel, AttrNumber att, Datum lo, Datum hi, ScanKeyData *keys)
{
	Oid			idx = cq_tracking_index(rel, att);
	Relation	irel;
	Oid			ge;
	Oid			lt;

	if (!OidIsValid(idx))
		return NULL;
	irel = index_open(idx, AccessShareLock);
	/* the column's type (xid8 or cq.xid48) against the bounds, xid8 */
	ge = get_opfamily_member(irel->rd_opfamily[0], irel->rd_opcintype[0], XID8OID,
							 BTGreaterEqualStrategyNumber);
	lt = get_opfamily_member(irel->rd_opfamily[0], irel->rd_opcintype[0], XID8OID, BTLessStrategyNumber);
	if (!irel->rd_index->indisvalid || !heap_attisnull(irel->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		irel->rd_opcintype[0] != TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid ||
		!cq_stamp_type_ok(irel->rd_opcintype[0]) || !OidIsValid(ge) || !OidIsValid(lt))
	{
		index_close(irel, NoLock);
		return NULL;
	}
	ScanKeyEntryInitialize(&keys[0], 0, 1, BTGreaterEqualStrategyNumber, XID8OID, InvalidOid,
						   get_opcode(ge), lo);
	ScanKeyEntryInitialize(&keys[1], 0, 1, BTLessStrategyNumber, XID8OID, InvalidOid,
						   get_opcode(lt), hi);
	return irel;
}

/*
 * are the columns ds reads still of the types planned, and cq_xid an xid8
 * or a cq.xid48?
 */
static bool
columns_match(const struct CqDeltaScan *ds, TupleDesc desc, AttrNumber att)
{
	ListCell   *lc;

	if (att <= 0 || att > desc->natts || !cq_stamp_type_ok(TupleDescAttr(desc, att - 1)->atttypid))
		return false;
	foreach(lc, ds->vars)
	{
		Var		   *v = lfirst(lc);
		Form_pg_attribute a;

		if (v->varattno > desc->natts)
			return false;
		a = TupleDescAttr(desc, v->varattno - 1);
		if (a->attisdropped || a->atttypid != v->vartype || a->atttypmod != v->vartypmod ||
			a->attcollation != v->varcollid)
			return false;
	}
	return true;
}

/*
 * check_privileges
 *	  The parser's and the executor's checks of the statement: USAGE on the
 *	  schemas it names objects of (ds->nsps), SELECT on the source's
 *	  columns it reads (cq_xid, att, among them), for the current user (the
 *	  statement's RTE has no checkAsUser); errors as they do.
 */
static void
check_privileges(const struct CqDeltaScan *ds, Relation rel, AttrNumber att)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	ListCell   *lc;

	/* the schemas the statement's parse looks its names up in */
	foreach(lc, ds->nsps)
	{
		AclResult	aclresult = pg_namespace_aclcheck(lfirst_oid(lc), GetUserId(), ACL_USAGE);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_SCHEMA, get_namespace_name(lfirst_oid(lc)));
	}

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = AccessShareLock;
	rte->inh = ds->inh;
	rte->requiredPerms = ACL_SELECT;
	rte->selectedCols = bms_add_member(bms_copy(ds->cols), att - FirstLowInvalidHeapAttributeNumber);
	(void) ExecCheckRTPerms(list_make1(rte), true);
}

/*
 * A function or operator over columns and constants (date_bin('1 minute',
 * ts, '2000-01-01')): called directly, its constants set once a run.  The
 * expression interpreter spent ~95 instructions a row around the ~35 of
 * timestamptz_bin (bench/ingest_cg.sh, session 39).
 */
typedef struct DirectCall
{
	FmgrInfo	flinfo;
	FunctionCallInfo fcinfo;
	bool		strict;
	bool		constnull;		/* strict, and a constant argument is NULL */
	int			nvars;
	int		   *argno;			/* per Var argument: its position */
	AttrNumber *attno;			/* and its column */
} DirectCall;

/* a run's reader: the source's slot, the ExprStates, the row's values */
typedef struct ScanRun
{
	ExprContext *econtext;
	ExprState  *qual;			/* the WHERE, or NULL */
	int			ncols;
	AttrNumber *direct;			/* per scan column: a plain column's attno, or 0 */
	DirectCall **calls;			/* per other scan column: its call, or NULL */
	ExprState **states;			/* per other scan column: its ExprState */
	AttrNumber	last;			/* the last column the Vars read */
	Datum	   *values;
	bool	   *nulls;
	TupleTableSlot *row;		/* the row read: a virtual slot, deform_row's */
	AttrNumber	need;			/* deform_row's columns: through last and cq_xid */
	int			nfixed;			/* the leading fixed-length columns */
	uint32	   *fixoff;			/* their offsets in a row without NULLs */
	uint32		fixend;			/* the offset past them */
	int16	   *attlen;			/* per column 1..need: its length (-1: varlena) */
	uint8	   *amask;			/* its alignment in bytes, less one */
	bool	   *byval;			/* passed by value */
} ScanRun;

/* e's DirectCall, or NULL when it is not a call over columns and constants */
static DirectCall *
direct_call(Node *e)
{
	Oid			funcid;
	Oid			collid;
	List	   *args;
	DirectCall *dc;
	ListCell   *lc;
	AclResult	aclresult;
	int			i = 0;

	if (IsA(e, FuncExpr) && !((FuncExpr *) e)->funcretset)
	{
		funcid = ((FuncExpr *) e)->funcid;
		collid = ((FuncExpr *) e)->inputcollid;
		args = ((FuncExpr *) e)->args;
	}
	else if (IsA(e, OpExpr) && !((OpExpr *) e)->opretset)
	{
		funcid = ((OpExpr *) e)->opfuncid;
		collid = ((OpExpr *) e)->inputcollid;
		args = ((OpExpr *) e)->args;
	}
	else
		return NULL;
	foreach(lc, args)
		if (!IsA(lfirst(lc), Var) && !IsA(lfirst(lc), Const))
			return NULL;
	if (list_length(args) > FUNC_MAX_ARGS)
		return NULL;
	/* the EXECUTE privilege, as the interpreter's ExecInitFunc checks it */
	aclresult = pg_proc_aclcheck(funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(funcid));
	InvokeFunctionExecuteHook(funcid);
	dc = palloc0(sizeof(DirectCall));
	fmgr_info(funcid, &dc->flinfo);
	fmgr_info_set_expr(e, &dc->flinfo);
	dc->strict = dc->flinfo.fn_strict;
	dc->fcinfo = palloc0(SizeForFunctionCallInfo(list_length(args)));
	InitFunctionCallInfoData(*dc->fcinfo, &dc->flinfo, list_length(args), collid, NULL, NULL);
	dc->argno = palloc(sizeof(int) * list_length(args));
	dc->attno = palloc(sizeof(AttrNumber) * list_length(args));
	foreach(lc, args)
	{
		Node	   *a = lfirst(lc);

		if (IsA(a, Const))
		{
			dc->fcinfo->args[i].value = ((Const *) a)->constvalue;
			dc->fcinfo->args[i].isnull = ((Const *) a)->constisnull;
			dc->constnull |= dc->strict && ((Const *) a)->constisnull;
		}
		else
		{
			dc->argno[dc->nvars] = i;
			dc->attno[dc->nvars++] = ((Var *) a)->varattno;
		}
		i++;
	}
	return dc;
}

/*
 * call_direct
 *	  dc's result for the row in slot (deformed past its columns), in the
 *	  row's memory context: as the interpreter's step calls it (NULL for a
 *	  NULL argument of a strict function; usage counted by track_functions).
 */
static Datum
call_direct(DirectCall *dc, TupleTableSlot *slot, ExprContext *econtext, bool *isnull)
{
	FunctionCallInfo fcinfo = dc->fcinfo;
	MemoryContext old;
	Datum		d;

	for (int i = 0; i < dc->nvars; i++)
	{
		NullableDatum *a = &fcinfo->args[dc->argno[i]];

		a->value = slot->tts_values[dc->attno[i] - 1];
		a->isnull = slot->tts_isnull[dc->attno[i] - 1];
		if (a->isnull && dc->strict)
		{
			*isnull = true;
			return (Datum) 0;
		}
	}
	if (dc->constnull)
	{
		*isnull = true;
		return (Datum) 0;
	}
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	fcinfo->isnull = false;
	if (pgstat_track_functions <= dc->flinfo.fn_stats)
		d = FunctionCallInvoke(fcinfo);
	else
	{
		PgStat_FunctionCallUsage fcusage;

		pgstat_init_function_usage(fcinfo, &fcusage);
		d = FunctionCallInvoke(fcinfo);
		pgstat_end_function_usage(&fcusage, true);
	}
	MemoryContextSwitchTo(old);
	*isnull = fcinfo->isnull;
	return d;
}

/* the ExprStates of a run, in the current memory context */
static void
scan_run_init(ScanRun *r, const struct CqDeltaScan *ds, Relation rel, AttrNumber att)
{
	ListCell   *lc;
	int			c = 0;

	TupleDesc	desc = RelationGetDescr(rel);
	uint32		off = 0;

	/* every column NULL but those deform_row sets */
	r->row = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	memset(r->row->tts_isnull, true, sizeof(bool) * desc->natts);
	ExecStoreVirtualTuple(r->row);
	/* the offsets of the leading fixed-length columns in a row without NULLs */
	r->fixoff = palloc(sizeof(uint32) * (desc->natts + 1));
	for (r->nfixed = 0; r->nfixed < desc->natts; r->nfixed++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, r->nfixed);

		if (a->attlen <= 0)
			break;
		off = att_align_nominal(off, a->attalign);
		r->fixoff[r->nfixed] = off;
		off += a->attlen;
	}
	r->fixend = off;
	r->attlen = palloc(sizeof(int16) * desc->natts);
	r->amask = palloc(sizeof(uint8) * desc->natts);
	r->byval = palloc(sizeof(bool) * desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		r->attlen[i] = a->attlen;
		r->amask[i] = att_align_nominal(1, a->attalign) - 1;
		r->byval[i] = a->attbyval;
	}
	r->econtext = CreateStandaloneExprContext();
	r->econtext->ecxt_scantuple = r->row;
	r->qual = ds->quals != NIL ? ExecInitQual(ds->quals, NULL) : NULL;
	r->ncols = list_length(ds->exprs);
	r->direct = palloc0(sizeof(AttrNumber) * r->ncols);
	r->states = palloc0(sizeof(ExprState *) * r->ncols);
	r->calls = palloc0(sizeof(DirectCall *) * r->ncols);
	r->values = palloc0(sizeof(Datum) * r->ncols);
	r->nulls = palloc0(sizeof(bool) * r->ncols);
	r->last = 0;
	foreach(lc, ds->vars)
		r->last = Max(r->last, ((Var *) lfirst(lc))->varattno);
	r->need = Max(r->last, att);
	foreach(lc, ds->exprs)
	{
		Node	   *e = lfirst(lc);

		if (IsA(e, Var))
			r->direct[c] = ((Var *) e)->varattno;
		else if ((r->calls[c] = direct_call(e)) == NULL)
			r->states[c] = ExecInitExpr((Expr *) e, NULL);
		c++;
	}
}

/*
 * scan_row
 *	  The row in r->row, whose cq_xid is new: into the aggregation unless
 *	  the WHERE rejects it.  False when the aggregation stopped.
 */
static bool
scan_row(ScanRun *r, DestReceiver *agg)
{
	bool		ok = true;

	if (r->qual == NULL || ExecQual(r->qual, r->econtext))
	{
		Datum	   *rowv = r->row->tts_values;
		bool	   *rown = r->row->tts_isnull;

		slot_getsomeattrs(r->row, r->last);
		for (int c = 0; c < r->ncols; c++)
		{
			int			d = r->direct[c];

			if (d > 0)
			{
				r->values[c] = rowv[d - 1];
				r->nulls[c] = rown[d - 1];
			}
			else if (r->calls[c] != NULL)
				r->values[c] = call_direct(r->calls[c], r->row, r->econtext, &r->nulls[c]);
			else
				r->values[c] = ExecEvalExprSwitchContext(r->states[c], r->econtext, &r->nulls[c]);
		}
		ok = cq_deltagg_add(agg, r->values, r->nulls);
	}
	/* the call only when something was allocated (the common case: not) */
	if (!r->econtext->ecxt_per_tuple_memory->isReset ||
		r->econtext->ecxt_per_tuple_memory->firstchild != NULL)
		ResetExprContext(r->econtext);
	return ok;
}

/*
 * deform_row
 *	  Columns 1..r->need of the stored row td into r->row (the slot's other
 *	  columns stay NULL): heap_deform_tuple's walk, stopped there, the
 *	  leading fixed-length columns of a row without NULLs at the offsets
 *	  scan_run_init computed.  A column the row does not have (added to the
 *	  table after it was written) is its missing value or NULL, as a slot
 *	  gives it.
 */
static pg_attribute_always_inline void
deform_row(ScanRun *r, TupleDesc desc, HeapTupleHeader td)
{
	Datum	   *values = r->row->tts_values;
	bool	   *isnull = r->row->tts_isnull;
	char	   *tp = (char *) td + td->t_hoff;
	bool		hasnulls = ((td->t_infomask & HEAP_HASNULL) != 0);
	int			n = Min(r->need, HeapTupleHeaderGetNatts(td));
	uint32		off = 0;
	int			i = 0;

	if (!hasnulls)
	{
		int			f = Min(n, r->nfixed);

		for (; i < f; i++)
		{
			values[i] = r->byval[i] ? fetch_att(tp + r->fixoff[i], true, r->attlen[i]) :
				PointerGetDatum(tp + r->fixoff[i]);
			isnull[i] = false;
		}
		off = i < r->nfixed ? r->fixoff[i] : r->fixend;
	}
	for (; i < n; i++)
	{
		int16		len = r->attlen[i];

		if (hasnulls && att_isnull(i, td->t_bits))
		{
			values[i] = (Datum) 0;
			isnull[i] = true;
			continue;
		}
		isnull[i] = false;
		if (len == -1)
		{
			/* a zero byte pads a 4-byte header to its alignment (att_align_pointer) */
			if (!VARATT_NOT_PAD_BYTE(tp + off))
				off = (off + r->amask[i]) & ~(uint32) r->amask[i];
			values[i] = PointerGetDatum(tp + off);
			off += VARSIZE_ANY(tp + off);
		}
		else if (len > 0)
		{
			off = (off + r->amask[i]) & ~(uint32) r->amask[i];
			values[i] = r->byval[i] ? fetch_att(tp + off, true, len) : PointerGetDatum(tp + off);
			off += len;
		}
		else
		{
			/* a cstring */
			off = att_align_nominal(off, TupleDescAttr(desc, i)->attalign);
			values[i] = PointerGetDatum(tp + off);
			off += strlen(tp + off) + 1;
		}
	}
	for (; i < r->need; i++)
		values[i] = getmissingattr(desc, i + 1, &isnull[i]);
}

/*
 * read_rows
 *	  The bitmap of the index's pages for [keys), then each visible row of
 *	  those pages in snapshot whose cq_xid is new in cur and not in prev
 *	  into the aggregation (scan_row).
 */
static void
read_rows(ScanRun *r, Relation rel, Relation irel, ScanKeyData *keys, AttrNumber att,
		  Snapshot snapshot, const struct varlena *cur, const struct varlena *prev,
		  DestReceiver *agg)
{
	IndexScanDesc iscan;
	TIDBitmap  *tbm = tbm_create(work_mem * 1024L, NULL);
	TBMIterator *it;
	TBMIterateResult *tbmres;
	TableScanDesc scan;
	HeapScanDesc hscan;
	TupleDesc	desc = RelationGetDescr(rel);
	Form_pg_attribute xatt = TupleDescAttr(desc, att - 1);
	bool		more = true;

	/* as the executor's bitmap index scan: its predicate lock (BRIN has none of its own) */
	iscan = index_beginscan_bitmap(irel, snapshot, 2);
	index_rescan(iscan, keys, 2, NULL, 0);
	(void) index_getbitmap(iscan, tbm);
	index_endscan(iscan);

	scan = table_beginscan_bm(rel, snapshot, 0, NULL);
	hscan = (HeapScanDesc) scan;
	it = tbm_begin_iterate(tbm);
	while (more && (tbmres = tbm_iterate(it)) != NULL)
	{
		Page		page;

		CHECK_FOR_INTERRUPTS();
		/* the page's visible rows' offsets, as heapam's (delta_page.c) */
		if (!cq_delta_page_read(scan, tbmres))
			continue;
		page = BufferGetPage(hscan->rs_cbuf);

		/*
		 * Each visible row as heapam_scan_bitmap_next_tuple would return it
		 * (counted as fetched), read from the page the scan keeps pinned
		 * without storing it in a buffer slot to deform it there.
		 */
		for (; hscan->rs_cindex < hscan->rs_ntuples; hscan->rs_cindex++)
		{
			ItemId		lp = PageGetItemId(page, hscan->rs_vistuples[hscan->rs_cindex]);
			HeapTupleHeader td = (HeapTupleHeader) PageGetItem(page, lp);
			Datum		x;

			pgstat_count_heap_fetch(rel);

			/*
			 * cq_xid in the leading fixed-length columns of a row without
			 * NULLs: read alone, and the row deformed only when it is new.
			 * Else deformed with the columns before it, which the row needs
			 * when it is new: a walk to cq_xid alone (nocachegetattr) cost
			 * as much again (session 39: 238 instructions a row, the deform
			 * of the same columns 227).
			 */
			if (att <= r->nfixed && (td->t_infomask & HEAP_HASNULL) == 0 &&
				att <= HeapTupleHeaderGetNatts(td))
			{
				x = fetchatt(xatt, (char *) td + td->t_hoff + r->fixoff[att - 1]);
				if (!cq_xid_is_new(cq_stamp_get(x, xatt->attbyval), cur, prev))
					continue;
				deform_row(r, desc, td);
			}
			else
			{
				deform_row(r, desc, td);
				x = r->row->tts_values[att - 1];
				/* cq.xid_new(cq_xid, $3, $4): NULL (a history row) is not new */
				if (r->row->tts_isnull[att - 1] ||
					!cq_xid_is_new(cq_stamp_get(x, xatt->attbyval), cur, prev))
					continue;
			}
			if (!scan_row(r, agg))
			{
				more = false;
				break;
			}
		}
	}
	tbm_end_iterate(it);
	table_endscan(scan);
	tbm_free(tbm);
}

/* errors while reading: in the statement's context, as SPI reports them */
static void
scan_error_context(void *arg)
{
	errcontext("SQL statement \"%s\"", (const char *) arg);
}

/*
 * cq_delta_scan_run
 *	  sql->delta_c's rows (sql: its text, for the context of errors), for the parameters $1..$4 (nulls as SPI's),
 *	  into deltagg.c's aggregation agg (cq_deltagg_begin's): read as the
 *	  statement would (fold_delta_ext: read_only in the active snapshot,
 *	  else in a new one after a command counter increment, as SPI runs it).
 *	  False, having read nothing, when ds is NULL, cq.delta_scan_in_c is
 *	  off or the source is not of the form handled (the header): the
 *	  caller runs the statement then.  A stop of the aggregation (the
 *	  groups outgrew memory) ends the read; cq_deltagg_end says so.
 */
bool
cq_delta_scan_run(const struct CqDeltaScan *ds, const char *sql, DestReceiver *agg,
				  Datum *params, const char *nulls, bool read_only)
{
	ErrorContextCallback errcb;
	Relation	rel;
	Relation	irel;
	AttrNumber	att;
	ScanKeyData keys[2];
	MemoryContext cxt;
	MemoryContext old;
	ScanRun		r;
	Snapshot	snapshot;
	struct varlena *cur;
	struct varlena *prev;

	if (ds == NULL || !cq_delta_scan_in_c || (read_only && !ActiveSnapshotSet()))
		return false;
	for (int i = 0; i < 4; i++)
		if (nulls != NULL && nulls[i] == 'n')
			return false;
	rel = try_table_open(ds->relid, AccessShareLock);
	if (rel == NULL)
		return false;
	att = cq_source_tracking_attnum(ds->relid);
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relam != HEAP_TABLE_AM_OID ||
		(ds->inh && rel->rd_rel->relhassubclass) ||
		check_enable_rls(ds->relid, InvalidOid, true) == RLS_ENABLED ||
		!columns_match(ds, RelationGetDescr(rel), att) ||
		(irel = usable_index(rel, att, params[0], params[1], keys)) == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}
	errcb.callback = scan_error_context;
	errcb.arg = (void *) sql;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	check_privileges(ds, rel, att);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_cq delta scan", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	cur = pg_detoast_datum_copy((struct varlena *) DatumGetPointer(params[2]));
	prev = pg_detoast_datum_copy((struct varlena *) DatumGetPointer(params[3]));
	scan_run_init(&r, ds, rel, att);
	if (!read_only)
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		CommandCounterIncrement();
		UpdateActiveSnapshotCommandId();
	}
	snapshot = RegisterSnapshot(GetActiveSnapshot());
	read_rows(&r, rel, irel, keys, att, snapshot, cur, prev, agg);
	elog(DEBUG1, "pg_cq: the batch's new rows of \"%s\" read in C (cq.delta_scan_in_c)",
		 RelationGetRelationName(rel));
	UnregisterSnapshot(snapshot);
	if (!read_only)
		PopActiveSnapshot();
	FreeExprContext(r.econtext, true);
	ExecDropSingleTupleTableSlot(r.row);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	index_close(irel, NoLock);
	table_close(rel, NoLock);
	error_context_stack = errcb.previous;
	return true;
}
