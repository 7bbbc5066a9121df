/*-------------------------------------------------------------------------
 *
 * sql_builder.c
 *	  The only place that turns names into SQL text, plus SPI helpers.
 *
 * Identifiers are always resolved from OIDs at the time of use and quoted,
 * so renamed tables keep working; values always travel as $n parameters.
 * Type and collation names are schema-qualified because generated SQL runs
 * under a fixed search_path.
 *
 * Queries and expressions are deparsed through cq_sql_querydef and
 * cq_sql_expression, which first make explicit every operator the text
 * would name only implicitly (ready_mutator), and print an xml constant
 * in a form that reads back under any xmloption (ready_xml), an array
 * constant with NULL elements under any array_nulls (ready_array), a
 * composite one holding either as ROW(...) (ready_composite).
 *
 * SPI helpers raise an error on any unexpected return code.  Switching
 * users is security.c's business.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/memutils.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "access/htup_details.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/xml.h"
#include "common/hashfn.h"

#include "sql_builder.h"

/*
 * cq_sql_ident
 *	  Append a quoted identifier.
 */
void
cq_sql_ident(StringInfo buf, const char *ident)
{
	appendStringInfoString(buf, quote_identifier(ident));
}

/*
 * cq_sql_relname
 *	  Append the schema-qualified, quoted name of a relation.
 */
void
cq_sql_relname(StringInfo buf, Oid relid)
{
	char	   *relname = get_rel_name(relid);
	Oid			nsp = get_rel_namespace(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	appendStringInfoString(buf,
						   quote_qualified_identifier(get_namespace_name(nsp), relname));
}

/*
 * cq_sql_relname_str
 *	  The schema-qualified, quoted name of a relation, palloc'd.
 */
char *
cq_sql_relname_str(Oid relid)
{
	StringInfoData buf;

	initStringInfo(&buf);
	cq_sql_relname(&buf, relid);
	return buf.data;
}

/*
 * cq_sql_type
 *	  Schema-qualified type name with its modifier, usable in DDL.
 */
char *
cq_sql_type(Oid type, int32 typmod)
{
	return format_type_extended(type, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * cq_sql_collation
 *	  " COLLATE schema.name", always qualified (ruleutils'
 *	  generate_collation_name leaves out the schema when the current
 *	  search_path shows it, and a batch built in a user's session runs
 *	  under the pinned search_path), or "" for InvalidOid.
 */
char *
cq_sql_collation(Oid collation)
{
	HeapTuple	tp;
	Form_pg_collation coll;
	char	   *result;

	if (!OidIsValid(collation))
		return "";
	tp = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	coll = (Form_pg_collation) GETSTRUCT(tp);
	result = psprintf(" COLLATE %s",
					  quote_qualified_identifier(get_namespace_name(coll->collnamespace),
												 NameStr(coll->collname)));
	ReleaseSysCache(tp);
	return result;
}

/*
 * cq_sql_collate
 *	  cq_sql_collation for a collatable type whose collation differs from
 *	  the type's default, else "".
 */
char *
cq_sql_collate(Oid collation, Oid type)
{
	if (!OidIsValid(collation) || collation == get_typcollation(type))
		return "";
	return cq_sql_collation(collation);
}

/*
 * Deparsing for generated SQL.
 *
 * Callers deparse under search_path = pg_catalog (cq_security_deparse_begin),
 * so ruleutils qualifies every function, operator, type and relation of
 * another schema, and the text runs under pg_catalog, pg_temp (pg_temp is
 * never searched for functions and operators, and comes after pg_catalog
 * for types and relations).  Four constructs print no operator, and
 * parsing their text looks "=" up by name again: a IS [NOT] DISTINCT FROM
 * b, NULLIF(a, b), CASE a WHEN b ... and JOIN ... USING / NATURAL JOIN.
 * Under the pinned path that finds no operator for a type whose equality
 * lives in another schema (the batch fails), or a different one: for a type
 * with an implicit cast to text (citext, say) text's case-sensitive "=".
 * ready_mutator rewrites those whose operator a look-up by name would not
 * find again into forms that print it (schema-qualified when needed):
 *   a IS DISTINCT FROM b -> CASE WHEN a IS NULL THEN b IS NOT NULL
 *                           WHEN b IS NULL THEN true ELSE NOT (a op b) END
 *   NULLIF(a, b)         -> CASE WHEN a op b THEN NULL ELSE a END
 *   CASE a WHEN b ...    -> CASE WHEN a op b ...
 *   JOIN ... USING (c)   -> JOIN ... ON <its conditions>
 * The first three evaluate a (and b) more than once: with volatile
 * arguments they are refused instead.  A USING join whose merged columns
 * are not plain references to one side's columns (or that has an alias)
 * is refused too.  Nothing changes for operators found again, the usual
 * case (pg_catalog's, or any whose schema the deparse path shows).
 */
typedef struct ReadyContext
{
	List	   *rtable;			/* of the query being walked */
} ReadyContext;

static Node *ready_mutator(Node *node, ReadyContext *ctx);

/*
 * op_found_again
 *	  Would parsing "a <name> b", with a and b of the types their text shows
 *	  (implicit coercions are not printed), find operator opno under the
 *	  current search_path?
 */
static bool
op_found_again(Oid opno, Node *a, Node *b)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Operator	found;
	bool		same;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opno);
	found = oper(NULL, list_make1(makeString(pstrdup(NameStr(((Form_pg_operator) GETSTRUCT(tup))->oprname)))),
				 exprType(strip_implicit_coercions(a)), exprType(strip_implicit_coercions(b)), true, -1);
	ReleaseSysCache(tup);
	same = found != NULL && oprid(found) == opno;
	if (found != NULL)
		ReleaseSysCache(found);
	return same;
}

/*
 * must_spell
 *	  Must construct `what` comparing a and b with opno be rewritten (its
 *	  operator would not be found again)?  Error out when it has volatile
 *	  arguments (args), which the rewrite would evaluate more than once.
 */
static bool
must_spell(Oid opno, Node *a, Node *b, Node *args, const char *what)
{
	if (op_found_again(opno, a, b))
		return false;
	if (contain_volatile_functions(args))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use %s with a volatile argument on operator %s in a continuous query",
						what, format_operator(opno)),
				 errdetail("pg_cq runs the query with search_path set to pg_catalog, pg_temp, where %s would not find this operator again; spelled out, the comparison would evaluate its arguments more than once.",
						   what),
				 errhint("Compare with the operator itself, as in a OPERATOR(schema.=) b.")));
	return true;
}

static Expr *
make_null_test(Node *arg, NullTestType type)
{
	NullTest   *nt = makeNode(NullTest);

	nt->arg = (Expr *) copyObject(arg);
	nt->nulltesttype = type;
	nt->argisrow = false;
	nt->location = -1;
	return (Expr *) nt;
}

static CaseWhen *
make_when(Expr *cond, Expr *result)
{
	CaseWhen   *w = makeNode(CaseWhen);

	w->expr = cond;
	w->result = result;
	w->location = -1;
	return w;
}

static CaseExpr *
make_case(Oid type, Oid collid, List *whens, Expr *otherwise)
{
	CaseExpr   *c = makeNode(CaseExpr);

	c->casetype = type;
	c->casecollid = collid;
	c->arg = NULL;
	c->args = whens;
	c->defresult = otherwise;
	c->location = -1;
	return c;
}

/*
 * ready_distinct
 *	  a IS DISTINCT FROM b, when its "=" would not be found again.
 */
static Node *
ready_distinct(DistinctExpr *d)
{
	Node	   *a = linitial(d->args);
	Node	   *b = lsecond(d->args);

	if (!must_spell(d->opno, a, b, (Node *) d->args, "IS DISTINCT FROM"))
		return (Node *) d;
	return (Node *) make_case(BOOLOID, InvalidOid,
							  list_make2(make_when(make_null_test(a, IS_NULL), make_null_test(b, IS_NOT_NULL)),
										 make_when(make_null_test(b, IS_NULL),
												   (Expr *) makeBoolConst(true, false))),
							  make_notclause(make_opclause(d->opno, BOOLOID, false, (Expr *) copyObject(a), (Expr *) copyObject(b), InvalidOid, d->inputcollid)));
}

/*
 * ready_nullif
 *	  NULLIF(a, b), when its "=" would not be found again.
 */
static Node *
ready_nullif(NullIfExpr *n)
{
	Node	   *a = linitial(n->args);
	Node	   *b = lsecond(n->args);

	if (!must_spell(n->opno, a, b, (Node *) n->args, "NULLIF"))
		return (Node *) n;
	return (Node *) make_case(n->opresulttype, n->opcollid,
							  list_make1(make_when(make_opclause(n->opno, BOOLOID, false, (Expr *) copyObject(a), (Expr *) copyObject(b), InvalidOid, n->inputcollid),
												   (Expr *) makeNullConst(n->opresulttype, exprTypmod(a),
																		  n->opcollid))),
							  (Expr *) copyObject(a));
}

/*
 * case_when_op
 *	  The comparison of a simple CASE's WHEN, whose left operand is a
 *	  CaseTestExpr (possibly under implicit coercions), as the parser
 *	  builds it; else NULL.
 */
static OpExpr *
case_when_op(CaseWhen *w)
{
	OpExpr	   *op = (OpExpr *) w->expr;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
		!IsA(strip_implicit_coercions(linitial(op->args)), CaseTestExpr))
		return NULL;
	return op;
}

/*
 * replace_case_test
 *	  A copy of e (a CaseTestExpr under implicit coercions) with arg in
 *	  place of the CaseTestExpr.
 */
static Node *
replace_case_test(Node *e, Node *arg)
{
	if (IsA(e, CaseTestExpr))
		return copyObject(arg);
	if (IsA(e, RelabelType))
	{
		RelabelType *r = copyObject((RelabelType *) e);

		r->arg = (Expr *) replace_case_test((Node *) ((RelabelType *) e)->arg, arg);
		return (Node *) r;
	}
	if (IsA(e, FuncExpr) && list_length(((FuncExpr *) e)->args) >= 1)
	{
		FuncExpr   *f = copyObject((FuncExpr *) e);

		linitial(f->args) = replace_case_test(linitial(((FuncExpr *) e)->args), arg);
		return (Node *) f;
	}
	if (IsA(e, CoerceViaIO))
	{
		CoerceViaIO *c = copyObject((CoerceViaIO *) e);

		c->arg = (Expr *) replace_case_test((Node *) ((CoerceViaIO *) e)->arg, arg);
		return (Node *) c;
	}
	if (IsA(e, ArrayCoerceExpr))
	{
		ArrayCoerceExpr *c = copyObject((ArrayCoerceExpr *) e);

		c->arg = (Expr *) replace_case_test((Node *) ((ArrayCoerceExpr *) e)->arg, arg);
		return (Node *) c;
	}
	if (IsA(e, CoerceToDomain))
	{
		CoerceToDomain *c = copyObject((CoerceToDomain *) e);

		c->arg = (Expr *) replace_case_test((Node *) ((CoerceToDomain *) e)->arg, arg);
		return (Node *) c;
	}
	elog(ERROR, "pg_cq: unexpected node %d over a CASE test value", (int) nodeTag(e));
	return NULL;
}

/*
 * ready_case
 *	  CASE a WHEN b ..., when the "=" of one of its WHENs would not be
 *	  found again: the searched form CASE WHEN a op b ...
 */
static Node *
ready_case(CaseExpr *c)
{
	ListCell   *lc;
	bool		spell = false;
	List	   *whens = NIL;
	CaseExpr   *r;

	if (c->arg == NULL)
		return (Node *) c;
	foreach(lc, c->args)
		if (case_when_op(lfirst(lc)) == NULL)
			return (Node *) c;	/* printed whole: nothing is implicit */
	foreach(lc, c->args)
	{
		OpExpr	   *op = case_when_op(lfirst(lc));

		spell |= must_spell(op->opno, (Node *) c->arg, lsecond(op->args), (Node *) c->arg, "CASE ... WHEN");
	}
	if (!spell)
		return (Node *) c;
	foreach(lc, c->args)
	{
		CaseWhen   *w = lfirst(lc);
		OpExpr	   *op = copyObject(case_when_op(w));

		linitial(op->args) = replace_case_test(linitial(case_when_op(w)->args), (Node *) c->arg);
		whens = lappend(whens, make_when((Expr *) op, w->result));
	}
	r = make_case(c->casetype, c->casecollid, whens, c->defresult);
	r->location = c->location;
	return (Node *) r;
}

/*
 * quals_found_again
 *	  Is every operator of a USING join's conditions (an AND of OpExprs)
 *	  found again by name?
 */
static bool
quals_found_again(Node *quals)
{
	ListCell   *lc;

	if (quals == NULL)
		return true;
	if (IsA(quals, OpExpr))
		return list_length(((OpExpr *) quals)->args) != 2 ||
			op_found_again(((OpExpr *) quals)->opno, linitial(((OpExpr *) quals)->args),
						   lsecond(((OpExpr *) quals)->args));
	if (is_andclause(quals))
	{
		foreach(lc, ((BoolExpr *) quals)->args)
			if (!quals_found_again(lfirst(lc)))
				return false;
	}
	return true;
}

/*
 * ready_join
 *	  JOIN ... USING / NATURAL JOIN printed as ON its conditions, when one
 *	  of their operators would not be found again.  ruleutils then prints a
 *	  merged column of the (unnamed) join as the column of the side it is
 *	  taken from; one that is not a plain column of a side (FULL JOIN, or
 *	  columns of different types) is refused.
 */
static Node *
ready_join(JoinExpr *j, ReadyContext *ctx)
{
	RangeTblEntry *rte;
	ListCell   *lc;
	int			i = 0;

	if ((j->usingClause == NIL && !j->isNatural) || quals_found_again(j->quals))
		return (Node *) j;
	rte = j->rtindex > 0 && j->rtindex <= list_length(ctx->rtable) ? rt_fetch(j->rtindex, ctx->rtable) : NULL;
	if (rte == NULL || rte->rtekind != RTE_JOIN || rte->alias != NULL || j->alias != NULL ||
		j->join_using_alias != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use JOIN ... USING with an alias in a continuous query over these columns"),
				 errdetail("pg_cq runs the query with search_path set to pg_catalog, pg_temp, where USING would not find the columns' equality operator again."),
				 errhint("Write the join condition with ON.")));
	foreach(lc, rte->joinaliasvars)
	{
		if (i++ >= rte->joinmergedcols)
			break;
		if (lfirst(lc) != NULL && !IsA(lfirst(lc), Var))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot use JOIN ... USING in a continuous query over these columns"),
					 errdetail("pg_cq runs the query with search_path set to pg_catalog, pg_temp, where USING would not find the columns' equality operator again, and a merged column here is not a column of one side (a FULL JOIN, or columns of different types)."),
					 errhint("Write the join condition with ON.")));
	}
	j->usingClause = NIL;
	j->isNatural = false;
	return (Node *) j;
}

/*
 * ready_xml
 *	  An xml constant printed as XMLPARSE(DOCUMENT|CONTENT '...' PRESERVE
 *	  WHITESPACE), not '...'::xml, which xml_in reads under the xmloption
 *	  of the session that parses the statement: a batch of a worker, or
 *	  of a session with xmloption = document, or the plan cache's new
 *	  analysis of a saved statement after a SET, failed on a content
 *	  constant (sql/163).  XMLPARSE with PRESERVE WHITESPACE checks the
 *	  text as xml_in does and returns it unchanged: the same value.  A
 *	  document is parsed as one (PostgreSQL 15's content mode refuses a
 *	  DOCTYPE).  A domain over xml keeps its cast.
 */
static Node *
ready_xml(Const *c)
{
	Oid			base = getBaseType(c->consttype);
	XmlExpr    *x;

	if (base != XMLOID || c->constisnull)
		return (Node *) c;
	x = makeNode(XmlExpr);
	x->op = IS_XMLPARSE;
	x->xmloption = xml_is_document((xmltype *) DatumGetPointer(c->constvalue)) ?
		XMLOPTION_DOCUMENT : XMLOPTION_CONTENT;
	x->args = list_make2(makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, c->constvalue, false, false),
						 makeBoolConst(true, false));
	x->type = XMLOID;
	x->typmod = -1;
	x->location = -1;
	if (base == c->consttype)
		return (Node *) x;
	return (Node *) makeRelabelType((Expr *) x, c->consttype, c->consttypmod, InvalidOid,
									COERCE_EXPLICIT_CAST);
}

static Node *ready_const(Const *c);

/*
 * int_array
 *	  The constant int4[] of the n values v, as an ARRAY[] of them.
 */
static Node *
int_array(const int *v, int n)
{
	ArrayExpr  *a = makeNode(ArrayExpr);

	a->array_typeid = INT4ARRAYOID;
	a->element_typeid = INT4OID;
	a->location = -1;
	for (int i = 0; i < n; i++)
		a->elements = lappend(a->elements, makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
													 Int32GetDatum(v[i]), false, true));
	return (Node *) a;
}

/*
 * array_level
 *	  ARRAY[...] of the elements (ready_const) of dimension dim on of an
 *	  array of type c->consttype, from the element *next on (advanced).
 */
static Node *
array_level(Const *c, Oid elem, int ndim, const int *dims, int dim, Node **elems, int *next)
{
	ArrayExpr  *a = makeNode(ArrayExpr);

	a->array_typeid = c->consttype;
	a->array_collid = c->constcollid;
	a->element_typeid = elem;
	a->multidims = dim < ndim - 1;
	a->location = -1;
	for (int i = 0; i < dims[dim]; i++)
		a->elements = lappend(a->elements, dim < ndim - 1 ?
							  array_level(c, elem, ndim, dims, dim + 1, elems, next) :
							  elems[(*next)++]);
	return (Node *) a;
}

/*
 * ready_array
 *	  An array constant printed as ARRAY[...] of its elements when one is
 *	  NULL or needs ready_const, not as '{...}'::type[]: array_in reads an
 *	  unquoted NULL element as the string "NULL" under array_nulls = off
 *	  (an error for other element types), each xml element under
 *	  xmloption (sql/163), each composite one by record_in (ready_composite).
 *	  Of any number of dimensions (ARRAY[ARRAY[...], ...]); one dimension
 *	  whose lower bound is not 1 as array_cat(array_fill(first, ARRAY[1],
 *	  ARRAY[lower bound]), ARRAY[the others]) (array_cat keeps its first
 *	  argument's bounds, sql/170).  The planner folds ARRAY[] of constants
 *	  back into the constant.  Several dimensions whose lower bounds are
 *	  not all 1 stay as they are (no expression makes those bounds).
 */
static Node *
ready_array(Const *c)
{
	ArrayType  *arr;
	Oid			elem;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			ndim;
	bool		ones = true;
	bool		changed;
	Node	  **elems;
	int			next = 0;
	int			one = 1;
	FuncExpr   *fill;
	ArrayExpr  *rest;

	if (c->constisnull || (elem = get_element_type(c->consttype)) == InvalidOid ||
		get_typtype(c->consttype) != TYPTYPE_BASE)
		return (Node *) c;
	arr = DatumGetArrayTypeP(c->constvalue);
	ndim = ARR_NDIM(arr);
	if (ndim < 1)
		return (Node *) c;
	for (int d = 0; d < ndim; d++)
		ones &= ARR_LBOUND(arr)[d] == 1;
	if (!ones && ndim > 1)
		return (Node *) c;
	get_typlenbyvalalign(elem, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(arr, elem, elmlen, elmbyval, elmalign, &values, &nulls, &n);
	changed = ARR_HASNULL(arr);
	elems = palloc(sizeof(Node *) * n);
	for (int i = 0; i < n; i++)
	{
		Const	   *e = makeConst(elem, -1, c->constcollid, elmlen, values[i], nulls[i], elmbyval);

		elems[i] = ready_const(e);
		changed |= elems[i] != (Node *) e;
	}
	if (!changed)
		return (Node *) c;
	if (ones)
		return array_level(c, elem, ndim, ARR_DIMS(arr), 0, elems, &next);
	/* one dimension from another lower bound */
	fill = makeFuncExpr(F_ARRAY_FILL_ANYELEMENT__INT4__INT4, c->consttype,
						list_make3(elems[0], int_array(&one, 1), int_array(ARR_LBOUND(arr), 1)),
						InvalidOid, c->constcollid, COERCE_EXPLICIT_CALL);
	rest = makeNode(ArrayExpr);
	rest->array_typeid = c->consttype;
	rest->array_collid = c->constcollid;
	rest->element_typeid = elem;
	rest->location = -1;
	for (int i = 1; i < n; i++)
		rest->elements = lappend(rest->elements, elems[i]);
	return (Node *) makeFuncExpr(F_ARRAY_CAT, c->consttype, list_make2(fill, rest), InvalidOid,
								 c->constcollid, COERCE_EXPLICIT_CALL);
}

/*
 * ready_composite
 *	  A constant of a composite type printed as ROW(...)::type of its
 *	  columns when one of them needs ready_const, not as '(...)'::type:
 *	  record_in reads each column by its type's input function under the
 *	  settings of the moment (an array with a NULL element under
 *	  array_nulls, xml under xmloption), sql/170.
 */
static Node *
ready_composite(Const *c)
{
	HeapTupleHeader td;
	HeapTupleData tup;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	RowExpr    *r;
	bool		changed = false;

	if (c->constisnull || get_typtype(c->consttype) != TYPTYPE_COMPOSITE)
		return (Node *) c;
	td = DatumGetHeapTupleHeader(c->constvalue);
	desc = lookup_rowtype_tupdesc(c->consttype, -1);
	tup.t_len = HeapTupleHeaderGetDatumLength(td);
	tup.t_data = td;
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	heap_deform_tuple(&tup, desc, values, nulls);
	r = makeNode(RowExpr);
	r->row_typeid = c->consttype;
	r->row_format = COERCE_EXPLICIT_CAST;
	r->location = -1;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Node	   *arg;

		/* a dropped column: a NULL, as the parser's coercion to the type puts */
		if (att->attisdropped)
			arg = (Node *) makeNullConst(INT4OID, -1, InvalidOid);
		else
		{
			Const	   *e = makeConst(att->atttypid, att->atttypmod, att->attcollation, att->attlen,
									  values[i], nulls[i], att->attbyval);

			arg = ready_const(e);
			changed |= arg != (Node *) e;
		}
		r->args = lappend(r->args, arg);
		r->colnames = lappend(r->colnames, makeString(pstrdup(NameStr(att->attname))));
	}
	ReleaseTupleDesc(desc);
	return changed ? (Node *) r : (Node *) c;
}

/*
 * ready_const
 *	  A constant in a form that reads back as the same value under any
 *	  setting (ready_xml, ready_array, ready_composite); c itself when its
 *	  text does.
 */
static Node *
ready_const(Const *c)
{
	Node	   *node = ready_xml(c);

	if (node == (Node *) c)
		node = ready_array(c);
	if (node == (Node *) c)
		node = ready_composite(c);
	return node;
}

static Node *
ready_mutator(Node *node, ReadyContext *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		List	   *save = ctx->rtable;
		Query	   *q;

		ctx->rtable = ((Query *) node)->rtable;
		q = query_tree_mutator((Query *) node, ready_mutator, ctx, 0);
		ctx->rtable = save;
		return (Node *) q;
	}
	node = expression_tree_mutator(node, ready_mutator, ctx);
	switch (nodeTag(node))
	{
		case T_DistinctExpr:
			return ready_distinct((DistinctExpr *) node);
		case T_NullIfExpr:
			return ready_nullif((NullIfExpr *) node);
		case T_CaseExpr:
			return ready_case((CaseExpr *) node);
		case T_JoinExpr:
			return ready_join((JoinExpr *) node, ctx);
		case T_Const:
			return ready_const((Const *) node);
		default:
			return node;
	}
}

/*
 * cq_sql_querydef
 *	  pg_get_querydef of q ready for the pinned search_path (see above).
 *	  Caller is between cq_security_deparse_begin and _end.  q is not
 *	  changed.
 */
char *
cq_sql_querydef(Query *q)
{
	ReadyContext ctx = {NIL};

	return pg_get_querydef((Query *) ready_mutator((Node *) q, &ctx), false);
}

/*
 * cq_sql_expression
 *	  deparse_expression of e (prefixed, no implicit casts shown) ready for
 *	  the pinned search_path.  Caller is between cq_security_deparse_begin
 *	  and _end.  e is not changed.
 */
char *
cq_sql_expression(Node *e, List *dpcontext)
{
	ReadyContext ctx = {NIL};

	return deparse_expression(ready_mutator(e, &ctx), dpcontext, true, false);
}

/*
 * cq_spi_exec
 *	  Run one statement through SPI with parameters; error unless SPI returns
 *	  the expected code (0 = any success).
 */
void
cq_spi_exec(const char *sql, int expected, int nargs, Oid *types,
			Datum *values, const char *nulls)
{
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc < 0 || (expected != 0 && rc != expected))
		elog(ERROR, "pg_cq: SPI failed (%s) while running: %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * cq_spi_exec_cached
 *	  cq_spi_exec through a saved plan (cq_spi_plan): for the constant
 *	  statements every batch runs, so that they are parsed and planned once
 *	  per backend instead of once per batch.
 */
void
cq_spi_exec_cached(const char *sql, int expected, int nargs, Oid *types,
				   Datum *values, const char *nulls)
{
	int			rc;

	rc = SPI_execute_plan(cq_spi_plan(sql, nargs, types), values, nulls, false, 0);
	if (rc < 0 || (expected != 0 && rc != expected))
		elog(ERROR, "pg_cq: SPI failed (%s) while running: %s",
			 SPI_result_code_string(rc), sql);
}

/*
 * Plans are cached per backend, keyed by their SQL text: generated SQL is
 * rebuilt from OIDs for every batch, so a rename produces new text and a new
 * plan, while an unchanged query reuses its saved plan.
 */
typedef struct CqPlanCacheEntry
{
	char		key[NAMEDATALEN];	/* hash of the text, as a string */
	char	   *sql;
	SPIPlanPtr	plan;
} CqPlanCacheEntry;

static HTAB *plan_cache = NULL;

/*
 * The entries found last, by the address of the text asked for (one slot
 * an address, direct-mapped): a batch asks for the same statements, by the
 * same strings of the cached analysis (plan.c), in every batch, and hashing
 * their text (kilobytes) and printing a key cost ~3k instructions a
 * statement (bench/batch_cg.sh).  A hit is still checked against the
 * entry's text (an address may be reused for another one);
 * cq_spi_plan_forget, which removes entries, empties it.
 */
#define CQ_PLAN_MEMO 256
typedef struct CqPlanMemo
{
	const char *sql;			/* the address asked for */
	int			nargs;
	int			size_class;
	CqPlanCacheEntry *entry;
} CqPlanMemo;
static CqPlanMemo plan_memo[CQ_PLAN_MEMO];

#define memo_slot(sql) (&plan_memo[((uintptr_t) (sql) >> 3) % CQ_PLAN_MEMO])

/*
 * memo_add
 *	  Remember entry as the one for the text at sql (see plan_memo).
 */
static void
memo_add(const char *sql, int nargs, int size_class, CqPlanCacheEntry *entry)
{
	CqPlanMemo *m = memo_slot(sql);

	m->sql = sql;
	m->nargs = nargs;
	m->size_class = size_class;
	m->entry = entry;
}

/*
 * cq_spi_plan
 *	  A saved SPI plan for the statement, prepared on first use.
 */
SPIPlanPtr
cq_spi_plan(const char *sql, int nargs, Oid *types)
{
	return cq_spi_plan_rows(sql, nargs, types, -1);
}

/*
 * cq_spi_plan_rows
 *	  cq_spi_plan for a statement that reads ephemeral named relations
 *	  holding about rows rows (-1: none).  A plan over an ephemeral
 *	  relation is made for the relation's size when it is prepared, and a
 *	  statement without parameters keeps its generic plan forever: a plan
 *	  made for a one-row batch (a nested loop that rescans a CTE for every
 *	  row) turned quadratic on a 50,000-row batch, which then ran for
 *	  minutes.  So such statements keep one plan per size class: up to 16
 *	  rows, then classes four times as large (each prepared by the first
 *	  batch of its class, with that batch's sizes).
 */
SPIPlanPtr
cq_spi_plan_rows(const char *sql, int nargs, Oid *types, int64 rows)
{
	CqPlanCacheEntry *entry;
	char		key[NAMEDATALEN];
	bool		found;
	SPIPlanPtr	plan;
	int			size_class = -1;

	if (rows >= 0)
	{
		size_class = 0;
		for (int64 r = rows; r > 16; r >>= 2)
			size_class++;
	}

	if (plan_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = NAMEDATALEN;
		ctl.entrysize = sizeof(CqPlanCacheEntry);
		plan_cache = hash_create("pg_cq plans", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	}

	{
		CqPlanMemo *m = memo_slot(sql);

		if (m->sql == sql && m->entry != NULL && m->nargs == nargs &&
			m->size_class == size_class && strcmp(m->entry->sql, sql) == 0)
			return m->entry->plan;
	}

	snprintf(key, sizeof(key), "%08x.%zu.%d.%d",
			 hash_bytes((const unsigned char *) sql, strlen(sql)), strlen(sql), nargs,
			 size_class);
	entry = hash_search(plan_cache, key, HASH_FIND, &found);
	if (found && strcmp(entry->sql, sql) == 0)
	{
		memo_add(sql, nargs, size_class, entry);
		return entry->plan;
	}

	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "pg_cq: could not prepare statement (%s): %s",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "pg_cq: could not save plan");

	if (found)
	{
		SPI_freeplan(entry->plan);
		pfree(entry->sql);
	}
	else
		entry = hash_search(plan_cache, key, HASH_ENTER, NULL);
	entry->sql = MemoryContextStrdup(TopMemoryContext, sql);
	entry->plan = plan;
	memo_add(sql, nargs, size_class, entry);
	return plan;
}

/*
 * cq_spi_plan_forget
 *	  Free the saved plans of a statement text (prepared with any number of
 *	  parameters), if any: the statement will not run again.  A later
 *	  cq_spi_plan of the same text prepares it anew.
 */
void
cq_spi_plan_forget(const char *sql)
{
	HASH_SEQ_STATUS status;
	CqPlanCacheEntry *entry;

	if (plan_cache == NULL)
		return;
	memset(plan_memo, 0, sizeof(plan_memo));
	hash_seq_init(&status, plan_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (strcmp(entry->sql, sql) != 0)
			continue;
		SPI_freeplan(entry->plan);
		pfree(entry->sql);
		(void) hash_search(plan_cache, entry->key, HASH_REMOVE, NULL);
	}
}

/*
 * cq_rel_attnum
 *	  The number of rel's column name (not dropped), or InvalidAttrNumber:
 *	  get_attnum read from the open relation's descriptor, so that a new
 *	  backend reading pg_cq's catalog tables by column name does not look
 *	  each column up in pg_attribute (and cache it) once more.
 */
AttrNumber
cq_rel_attnum(Relation rel, const char *name)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return att->attnum;
	}
	return InvalidAttrNumber;
}

/*
 * cq_rel_takes_heap_inserts
 *	  Is a heap insert of a row all an INSERT into rel would do, besides
 *	  its indexes: a plain table, not a partition, without triggers, rules,
 *	  row-level security, CHECK constraints, generated or identity
 *	  columns?  (The direct loads of bulkload.c, store_load.c and of the
 *	  store's image.)
 */
bool
cq_rel_takes_heap_inserts(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	/* a partition: an INSERT into it checks its partition constraint */
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->trigdesc != NULL ||
		rel->rd_rel->relhasrules || rel->rd_rel->relrowsecurity ||
		(desc->constr && (desc->constr->num_check > 0 || desc->constr->has_generated_stored)))
		return false;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->attidentity != '\0')
			return false;
	return true;
}

/*
 * cq_rel_column
 *	  cq_rel_attnum of a column of type type; InvalidAttrNumber when there
 *	  is no such column or it has another type.
 */
AttrNumber
cq_rel_column(Relation rel, const char *name, Oid type)
{
	AttrNumber	att = cq_rel_attnum(rel, name);

	if (att == InvalidAttrNumber || TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid != type)
		return InvalidAttrNumber;
	return att;
}
