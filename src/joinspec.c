/*-------------------------------------------------------------------------
 *
 * joinspec.c
 *	  Analysis of a join of two streams (Spark's stream-stream join): which
 *	  tables are the streams, their event-time columns and watermark
 *	  delays, the bound the join condition puts on each side's buffered
 *	  rows, and every shape Spark rejects (or pg_cq does not support yet).
 *
 * A query joins two streams when its source option names two tables
 * ('impressions, clicks'), or, for a stored query, when the catalog
 * recorded a second stream.  Only analysis happens here: join.c builds
 * and runs the batches.  Nothing is modified in the caller's tree.
 *
 * The state bound follows Spark's StreamingJoinHelper.getStateValueWatermark:
 * each conjunct of the join condition of the form
 *	  X.et + c1  <op>  Y.et + c2		(op one of <, <=, >, >=, =)
 * over the event-time columns of the two streams, with constant intervals
 * without months, says how old a row of one side may be and still match a
 * future row of the other, whose event time is above the watermark W (a
 * row at or below it is dropped as late).  For X > Y + c, rows of X with
 * event time <= W + c can never match again; for X >= Y + c, Spark keeps a
 * millisecond more (<= W + c - 1 ms is evicted); X = Y + c bounds both
 * sides exactly.  The smallest bound over the conjuncts wins.  An interval
 * with days (whose length in a time zone with daylight saving time may be
 * 23 or 25 hours) makes the bound an hour more conservative.
 *
 * A conjunct date_bin(s, X.et, o) = date_bin(s, Y.et, o), with the same
 * constant stride and origin on both sides, is Spark's time window in the
 * join keys (getOneSideStateWatermarkPredicate's key predicate): a row
 * whose bin ends at or before W can match no future row, whose bin ends
 * after W.  Both sides then evict the rows below the start of W's bin
 * (cq_joinspec_side_bound), and an aggregation over the join takes the
 * start of W's bin as the least event time a later match can have; as a
 * linear bound it gives X > Y - s, which the batch's range condition uses.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "joinspec.h"
#include "options.h"
#include "catalog.h"

#define USECS_PER_MS INT64CONST(1000)

/*
 * split_list
 *	  The comma-separated entries of an option value, trimmed.
 */
static List *
split_list(const char *value)
{
	List	   *out = NIL;
	char	   *copy = pstrdup(value);
	char	   *tok;
	char	   *save;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		while (*tok == ' ' || *tok == '\t' || *tok == '\n')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n'); e--)
			e[-1] = '\0';
		out = lappend(out, tok);
	}
	return out;
}

/*
 * stream_relid
 *	  The table one entry of the source option names.
 */
static Oid
stream_relid(const char *name)
{
	Oid			relid;

	relid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(name)), NoLock, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("source table \"%s\" does not exist", name)));
	return relid;
}

/*
 * cq_joinspec_source_relids
 *	  The tables a source option value names ('a', or 'a, b' for a join of
 *	  two streams), in order; an error for one that does not exist.
 */
List *
cq_joinspec_source_relids(const char *source)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, split_list(source))
		out = lappend_oid(out, stream_relid(lfirst(lc)));
	return out;
}

/*
 * jointree_side
 *	  0 or 1 when the join-tree node is that stream's RangeTblRef, else -1.
 */
static int
jointree_side(CqJoinSpec *js, Node *node)
{
	for (int s = 0; s < 2; s++)
		if (node && IsA(node, RangeTblRef) && ((RangeTblRef *) node)->rtindex == (int) js->side[s].rti)
			return s;
	return -1;
}

/*
 * check_jointree
 *	  Inner joins between the streams and static tables; or one outer join
 *	  (left, right, full) of the two streams themselves, with nothing else
 *	  in FROM.  Sets js->jointype and each side's preserved flag.
 */
static void
check_jointree(CqJoinSpec *js, Query *q, Node *node)
{
	if (node == NULL)
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			check_jointree(js, q, lfirst(lc));
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		if (j->jointype != JOIN_INNER)
		{
			int			l = jointree_side(js, j->larg);
			int			r = jointree_side(js, j->rarg);
			const char *name = j->jointype == JOIN_FULL ? "FULL" : j->jointype == JOIN_LEFT ? "LEFT" :
				j->jointype == JOIN_RIGHT ? "RIGHT" : "this";

			if ((j->jointype != JOIN_LEFT && j->jointype != JOIN_RIGHT && j->jointype != JOIN_FULL) ||
				l < 0 || r < 0 || list_length(((FromExpr *) q->jointree)->fromlist) != 1 ||
				linitial(((FromExpr *) q->jointree)->fromlist) != node)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%s JOIN in a join of two streams is not supported here", name),
						 errdetail("An outer join of two streams must join the two streams themselves, with no other table in FROM."),
						 errhint("Join static tables in another query over the target.")));
			js->jointype = j->jointype;
			js->side[l].preserved = j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL;
			js->side[r].preserved = j->jointype == JOIN_RIGHT || j->jointype == JOIN_FULL;
		}
		check_jointree(js, q, j->larg);
		check_jointree(js, q, j->rarg);
	}
}

/*
 * collect_quals
 *	  The conjuncts of every join condition and of WHERE.
 */
static List *
collect_quals(Node *node, List *out)
{
	if (node == NULL)
		return out;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			out = collect_quals(lfirst(lc), out);
		return collect_quals(((FromExpr *) node)->quals, out);
	}
	if (IsA(node, JoinExpr))
	{
		out = collect_quals(((JoinExpr *) node)->larg, out);
		out = collect_quals(((JoinExpr *) node)->rarg, out);
		return collect_quals(((JoinExpr *) node)->quals, out);
	}
	if (IsA(node, RangeTblRef))
		return out;
	if (is_andclause(node))
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) node)->args)
			out = collect_quals(lfirst(lc), out);
		return out;
	}
	if (IsA(node, List))
	{
		ListCell   *lc;

		foreach(lc, (List *) node)
			out = collect_quals(lfirst(lc), out);
		return out;
	}
	return lappend(out, node);
}

/* Walker context: the Vars of a query level. */
typedef struct VarsCtx
{
	CqJoinSpec *js;
	Query	   *q;				/* to follow Vars of join aliases, or NULL */
	Bitmapset  *varnos;			/* range-table indexes read */
	List	   *attnos[2];		/* per side: columns read */
	bool		whole_row;		/* a whole-row or system column of a stream */
} VarsCtx;

/*
 * vars_walker
 *	  Collect what vars_of needs; Vars of this level only.
 */
static bool
vars_walker(Node *node, VarsCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup != 0)
			return false;
		if (ctx->q && v->varattno > 0)
		{
			/* a column of a JOIN ... ON/USING: the stream column it stands for */
			RangeTblEntry *rte = rt_fetch(v->varno, ctx->q->rtable);

			if (rte->rtekind == RTE_JOIN && v->varattno <= list_length(rte->joinaliasvars))
				return vars_walker(list_nth(rte->joinaliasvars, v->varattno - 1), ctx);
		}
		ctx->varnos = bms_add_member(ctx->varnos, v->varno);
		for (int s = 0; s < 2; s++)
		{
			if (v->varno != (int) ctx->js->side[s].rti)
				continue;
			if (v->varattno <= 0)
				ctx->whole_row = true;
			else
				ctx->attnos[s] = list_append_unique_int(ctx->attnos[s], v->varattno);
		}
		return false;
	}
	return expression_tree_walker(node, vars_walker, ctx);
}

/*
 * side_of
 *	  0 or 1 when every Var of expr reads that stream (and at least one
 *	  does), else -1.
 */
static int
side_of(CqJoinSpec *js, Node *expr)
{
	VarsCtx		ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.js = js;
	(void) vars_walker(expr, &ctx);
	for (int s = 0; s < 2; s++)
		if (bms_membership(ctx.varnos) == BMS_SINGLETON &&
			bms_is_member(js->side[s].rti, ctx.varnos))
			return s;
	return -1;
}

/*
 * is_stream_equality
 *	  An equality between an expression of one stream and one of the other
 *	  (Spark's equi-join keys).
 */
static bool
is_stream_equality(CqJoinSpec *js, Node *qual)
{
	OpExpr	   *op;
	Oid			lefttype;
	int			a,
				b;

	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return false;
	op = (OpExpr *) qual;
	lefttype = exprType(linitial(op->args));
	if (!op_mergejoinable(op->opno, lefttype) && !op_hashjoinable(op->opno, lefttype))
		return false;
	a = side_of(js, linitial(op->args));
	b = side_of(js, lsecond(op->args));
	return a >= 0 && b >= 0 && a != b;
}

/* A linear event-time term: the event time of side `side` + c microseconds. */
typedef struct TimeTerm
{
	int			side;
	int64		c;
	bool		days;			/* an interval with days contributed */
} TimeTerm;

/*
 * time_term
 *	  expr as a TimeTerm: a stream's event-time column plus or minus
 *	  constant intervals without months; false for anything else.
 */
static bool
time_term(CqJoinSpec *js, Node *expr, TimeTerm *t)
{
	while (expr && IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (expr == NULL)
		return false;
	if (IsA(expr, Var))
	{
		Var		   *v = (Var *) expr;

		if (v->varlevelsup != 0)
			return false;
		for (int s = 0; s < 2; s++)
			if (v->varno == (int) js->side[s].rti && v->varattno == js->side[s].et_attno &&
				js->side[s].et_attno != InvalidAttrNumber)
			{
				t->side = s;
				t->c = 0;
				t->days = false;
				return true;
			}
		return false;
	}
	if (IsA(expr, OpExpr) && list_length(((OpExpr *) expr)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) expr;
		Oid			fn = get_opcode(op->opno);
		bool		plus = (fn == F_TIMESTAMPTZ_PL_INTERVAL || fn == F_TIMESTAMP_PL_INTERVAL);
		bool		minus = (fn == F_TIMESTAMPTZ_MI_INTERVAL || fn == F_TIMESTAMP_MI_INTERVAL);
		Const	   *k = (Const *) lsecond(op->args);
		Interval   *iv;
		int64		us;

		if (!(plus || minus) || !IsA(k, Const) || k->constisnull || k->consttype != INTERVALOID)
			return false;
		iv = DatumGetIntervalP(k->constvalue);
		if (iv->month != 0 || !cq_options_delay_usecs(iv, &us))
			return false;
		if (!time_term(js, linitial(op->args), t))
			return false;
		t->c += plus ? us : -us;
		t->days |= iv->day != 0;
		return true;
	}
	return false;
}

/*
 * note_bound
 *	  Side s's rows with event time <= W + bound can match no future row:
 *	  keep the smallest such bound.
 */
static void
note_bound(CqJoinSide *side, int64 bound, bool days)
{
	if (days)
		bound -= USECS_PER_HOUR;
	if (!side->bounded || bound < side->bound_us)
		side->bound_us = bound;
	side->bounded = true;
}

/*
 * bin_term
 *	  expr as date_bin(stride, event time of a stream, origin) with a
 *	  constant stride without months and a constant origin: the stream's
 *	  side, stride and origin; false for anything else.
 */
static bool
bin_term(CqJoinSpec *js, Node *expr, int *side, int64 *stride, TimestampTz *origin)
{
	FuncExpr   *fe;
	Const	   *k;
	Const	   *o;
	Interval   *iv;
	TimeTerm	t;

	while (expr && IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (expr == NULL || !IsA(expr, FuncExpr))
		return false;
	fe = (FuncExpr *) expr;
	if ((fe->funcid != F_DATE_BIN_INTERVAL_TIMESTAMPTZ_TIMESTAMPTZ &&
		 fe->funcid != F_DATE_BIN_INTERVAL_TIMESTAMP_TIMESTAMP) || list_length(fe->args) != 3)
		return false;
	k = (Const *) linitial(fe->args);
	o = (Const *) lthird(fe->args);
	if (!IsA(k, Const) || k->constisnull || k->consttype != INTERVALOID ||
		!IsA(o, Const) || o->constisnull)
		return false;
	iv = DatumGetIntervalP(k->constvalue);
	/* date_bin's own stride: a day is 24 hours; months are an error there */
	if (iv->month != 0 || pg_mul_s64_overflow(iv->day, USECS_PER_DAY, stride) ||
		pg_add_s64_overflow(*stride, iv->time, stride) || *stride <= 0)
		return false;
	if (!time_term(js, lsecond(fe->args), &t) || t.c != 0)
		return false;
	*side = t.side;
	*origin = DatumGetTimestampTz(o->constvalue);
	return true;
}

/*
 * bin_bounds
 *	  A conjunct date_bin(s, X.et, o) = date_bin(s, Y.et, o) (file header):
 *	  note the bins on both sides; false when qual is not one.
 */
static bool
bin_bounds(CqJoinSpec *js, OpExpr *op)
{
	Oid			fn = get_opcode(op->opno);
	int			ls,
				rs;
	int64		lstride,
				rstride;
	TimestampTz lorigin,
				rorigin;

	if ((fn != F_TIMESTAMPTZ_EQ && fn != F_TIMESTAMP_EQ) ||
		!bin_term(js, linitial(op->args), &ls, &lstride, &lorigin) ||
		!bin_term(js, lsecond(op->args), &rs, &rstride, &rorigin) ||
		ls == rs || lstride != rstride || lorigin != rorigin)
		return false;
	for (int s = 0; s < 2; s++)
	{
		note_bound(&js->side[s], -lstride, false);	/* same bin: X > Y - stride */
		if (js->side[s].grid_us == 0)
		{
			js->side[s].grid_us = lstride;
			js->side[s].grid_origin = lorigin;
		}
	}
	return true;
}

/*
 * cq_joinspec_side_bound
 *	  Where side's rows stand when the watermark is w: with evict, the
 *	  event time at or below which its buffered rows can match no future
 *	  row (w + its linear bound, or, when the condition equates bins of the
 *	  two event times, the last microsecond before the start of w's bin if
 *	  that is later: a row in an earlier bin cannot share a bin with a row
 *	  above w); without, the lowest event time a future match can have
 *	  from this side (w + the linear bound, or the start of w's bin if
 *	  later), which an aggregation over the join takes as its watermark.
 *	  False when the side is not bounded or the bound is out of range.
 */
bool
cq_joinspec_side_bound(const CqJoinSide *side, TimestampTz w, bool evict, TimestampTz *out)
{
	int64		diff;
	int64		delta;
	TimestampTz start;

	if (!side->bounded || pg_add_s64_overflow(w, side->bound_us, out))
		return false;
	if (side->grid_us > 0 && !pg_sub_s64_overflow(w, side->grid_origin, &diff))
	{
		/* the start of w's bin: origin + floor((w - origin) / stride) * stride */
		delta = diff - diff % side->grid_us;
		if (diff < 0 && diff % side->grid_us != 0)
			delta -= side->grid_us;
		if (!pg_add_s64_overflow(side->grid_origin, delta, &start))
		{
			if (evict)
				start--;
			if (start > *out)
				*out = start;
		}
	}
	return true;
}

/*
 * time_bounds
 *	  The bound a conjunct X.et + c1 <op> Y.et + c2 puts on each side
 *	  (file header).
 */
static void
time_bounds(CqJoinSpec *js, Node *qual)
{
	OpExpr	   *op;
	Oid			fn;
	TimeTerm	l,
				r;
	bool		days;

	if (!IsA(qual, OpExpr) || list_length(((OpExpr *) qual)->args) != 2)
		return;
	op = (OpExpr *) qual;
	if (bin_bounds(js, op))
		return;
	if (!time_term(js, linitial(op->args), &l) || !time_term(js, lsecond(op->args), &r) ||
		l.side == r.side)
		return;
	days = l.days || r.days;
	fn = get_opcode(op->opno);

	/* l.et + l.c <op> r.et + r.c */
	if (fn == F_TIMESTAMPTZ_LT || fn == F_TIMESTAMP_LT)
		note_bound(&js->side[r.side], l.c - r.c, days);	/* r > l + (l.c - r.c) */
	else if (fn == F_TIMESTAMPTZ_LE || fn == F_TIMESTAMP_LE)
		note_bound(&js->side[r.side], l.c - r.c - USECS_PER_MS, days);
	else if (fn == F_TIMESTAMPTZ_GT || fn == F_TIMESTAMP_GT)
		note_bound(&js->side[l.side], r.c - l.c, days);	/* l > r + (r.c - l.c) */
	else if (fn == F_TIMESTAMPTZ_GE || fn == F_TIMESTAMP_GE)
		note_bound(&js->side[l.side], r.c - l.c - USECS_PER_MS, days);
	else if (fn == F_TIMESTAMPTZ_EQ || fn == F_TIMESTAMP_EQ)
	{
		note_bound(&js->side[l.side], r.c - l.c, days);
		note_bound(&js->side[r.side], l.c - r.c, days);
	}
}

/*
 * event_times
 *	  The event_time option of a join names one column per stream, in the
 *	  order of the source option, each optionally qualified by the
 *	  stream's table name or alias ('impressions.ts, clicks.ts').  A stored
 *	  query has them as bare names in event_time and join_event_time.
 */
static void
event_times(CqJoinSpec *js, Query *q, CqOptions *opts, bool stored)
{
	List	   *names;

	if (opts->event_time == NULL)
		return;
	if (stored || opts->join_event_time != NULL)	/* recorded, or analyzed before */
		names = list_make2(opts->event_time, opts->join_event_time);
	else
		names = split_list(opts->event_time);
	if (list_length(names) != 2 || linitial(names) == NULL || lsecond(names) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for continuous query option \"event_time\": \"%s\"", opts->event_time),
				 errdetail("A join of two streams takes one event-time column per stream."),
				 errhint("List them in the order of the source option: cq.event_time = 'impressions.ts, clicks.ts'.")));
	for (int s = 0; s < 2; s++)
	{
		char	   *entry = list_nth(names, s);
		char	   *dot = strrchr(entry, '.');
		char	   *col = dot ? dot + 1 : entry;
		CqJoinSide *side = &js->side[s];
		Oid			type;

		if (dot)
		{
			char	   *qual = pnstrdup(entry, dot - entry);

			if (strcmp(qual, side->refname) != 0 && strcmp(qual, get_rel_name(side->relid)) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("event_time column \"%s\" is not a column of stream \"%s\"",
								entry, get_rel_name(side->relid)),
						 errdetail("Entry %d of the event_time option belongs to entry %d of the source option.", s + 1, s + 1)));
		}
		side->et_attno = get_attnum(side->relid, col);
		if (side->et_attno == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("event_time column \"%s\" does not exist in source \"%s\"",
							col, get_rel_name(side->relid))));
		/* a domain over either type is read as its base type */
		type = getBaseType(get_atttype(side->relid, side->et_attno));
		if (type != TIMESTAMPTZOID && type != TIMESTAMPOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("event_time column \"%s\" must be of type timestamp with time zone or timestamp", col),
					 errdetail("Column \"%s\" has type %s.", col,
							   format_type_be(get_atttype(side->relid, side->et_attno)))));
		side->et_is_tz = (type == TIMESTAMPTZOID);
	}
	if (!stored && opts->join_event_time == NULL)
	{
		/* recorded as bare column names, one per stream */
		opts->event_time = get_attname(js->side[0].relid, js->side[0].et_attno, false);
		opts->join_event_time = get_attname(js->side[1].relid, js->side[1].et_attno, false);
	}
}

/*
 * check_shape
 *	  What Spark rejects for a join of two streams, and what pg_cq does
 *	  not support over one yet.
 */
static void
check_shape(Query *q, CqOptions *opts, const char *name)
{
	bool		aggregates = q->hasAggs || q->groupClause != NIL || q->havingQual != NULL;

	if (opts->mode != CQ_MODE_APPEND)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("join between two streams is not supported in %s output mode, only in append output mode",
						cq_mode_name(opts->mode)),
				 errdetail("A joined row is final once written: continuous query \"%s\" only appends.", name),
				 errhint("Use output mode \"append\".")));
	/*
	 * Spark (3.5+, multiple stateful operators) aggregates the output of a
	 * stream-stream join in append mode, windowed on an event time of the
	 * join: analyze.c checks that as for one stream.
	 */
	if (q->distinctClause != NIL && !aggregates)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("SELECT DISTINCT over a join of two streams is not supported"),
				 errhint("Deduplicate the joined rows with another continuous query over the target.")));
	if (q->sortClause != NIL && !aggregates)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ORDER BY is not supported in continuous queries without aggregation"),
				 errhint("Sort when reading the target table.")));
	if (q->hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-returning functions in a join of two streams are not supported"),
				 errhint("Join the two streams on plain expressions of their columns.")));
}

/*
 * cq_joinspec_names_two
 *	  Do the options make the query a join of two streams?  For a new query
 *	  the source option names two tables; a stored one has its second
 *	  stream recorded.
 */
bool
cq_joinspec_names_two(const CqOptions *opts)
{
	return opts->source == NULL ? OidIsValid(opts->join_source_relid) :
		strchr(opts->source, ',') != NULL;
}

/*
 * find_streams
 *	  The range-table entries of the two streams; the others may be static
 *	  tables only.
 */
static void
find_streams(CqJoinSpec *js, Query *q, Oid relids[2])
{
	ListCell   *lc;
	Index		rti = 0;
	int			found[2] = {0, 0};

	if (relids[0] == relids[1])
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a join of the stream \"%s\" with itself is not supported", get_rel_name(relids[0])),
				 errhint("Name two different tables in the source option.")));
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		rti++;
		if (rte->rtekind == RTE_JOIN)
			continue;
		if (rte->rtekind != RTE_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s in FROM of a join of two streams are not supported",
							rte->rtekind == RTE_SUBQUERY ? "subqueries" :
							rte->rtekind == RTE_FUNCTION ? "functions" : "such items"),
					 errhint("Join the two streams, and static tables, by name.")));
		for (int s = 0; s < 2; s++)
			if (rte->relid == relids[s])
			{
				found[s]++;
				js->side[s].rti = rti;
				js->side[s].relid = rte->relid;
				js->side[s].refname = rte->eref->aliasname;
			}
	}
	for (int s = 0; s < 2; s++)
	{
		if (found[s] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("source table \"%s\" is not in the FROM clause of the query", get_rel_name(relids[s]))));
		if (found[s] > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the streaming table \"%s\" appears more than once in the query",
							get_rel_name(relids[s])),
					 errdetail("Each of the two streams of a join is read once.")));
	}
}

/*
 * cq_joinspec_analyze
 *	  NULL when the query does not join two streams.  Otherwise its
 *	  analysis; every unsupported shape is an error.  For a new query
 *	  (source option given) opts->event_time and opts->join_event_time are
 *	  set to the bare column names the catalog records.
 */
CqJoinSpec *
cq_joinspec_analyze(Query *q, CqOptions *opts, const char *name)
{
	CqJoinSpec *js;
	bool		stored = opts->source == NULL;
	Oid			relids[2];
	List	   *quals;
	ListCell   *lc;
	bool		equality = false;
	VarsCtx		ctx;

	if (!cq_joinspec_names_two(opts))
	{
		if (opts->join_watermark != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("continuous query option \"watermark\" lists two delays but \"%s\" does not join two streams", name),
					 errhint("Give one watermark delay.")));
		return NULL;
	}
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("joins of two streams need the pg_cq 0.2 catalog"),
				 errhint("Run ALTER EXTENSION pg_cq UPDATE.")));

	/*
	 * Before the streams are looked for in FROM: a semi or anti join reads
	 * the second stream in a subquery (EXISTS, IN), not in FROM.
	 */
	if (q->hasSubLinks)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("subqueries in a join of two streams are not supported"),
				 errdetail("Semi and anti joins of two streams (EXISTS, NOT EXISTS, IN over a stream) are not implemented."),
				 errhint("Join the two streams in FROM on plain expressions of their columns.")));

	js = palloc0(sizeof(CqJoinSpec));
	if (stored)
	{
		relids[0] = opts->source_relid;
		relids[1] = opts->join_source_relid;
	}
	else
	{
		List	   *names = split_list(opts->source);

		if (list_length(names) != 2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for continuous query option \"source\": \"%s\"", opts->source),
					 errdetail("A join of streams names exactly two tables."),
					 errhint("Name the two streams: cq.source = 'impressions, clicks'.")));
		relids[0] = stream_relid(linitial(names));
		relids[1] = stream_relid(lsecond(names));
	}

	find_streams(js, q, relids);
	js->jointype = JOIN_INNER;
	check_jointree(js, q, (Node *) q->jointree);
	check_shape(q, opts, name);
	event_times(js, q, opts, stored);

	/* the columns each buffer keeps; no whole-row or system columns */
	memset(&ctx, 0, sizeof(ctx));
	ctx.js = js;
	ctx.q = q;
	(void) query_tree_walker(q, vars_walker, &ctx, QTW_IGNORE_JOINALIASES);
	if (ctx.whole_row)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("whole-row and system column references to a stream of a join are not supported"),
				 errhint("Name the columns.")));
	for (int s = 0; s < 2; s++)
	{
		CqJoinSide *side = &js->side[s];
		Interval   *delay = s == 0 ? opts->watermark_delay :
			(opts->join_watermark_delay ? opts->join_watermark_delay : opts->watermark_delay);

		if (side->et_attno != InvalidAttrNumber)
			ctx.attnos[s] = list_append_unique_int(ctx.attnos[s], side->et_attno);
		list_sort(ctx.attnos[s], list_int_cmp);
		side->attnos = ctx.attnos[s];
		side->has_delay = delay != NULL && side->et_attno != InvalidAttrNumber &&
			cq_options_delay_usecs(delay, &side->delay_us);
	}
	js->has_watermark = js->side[0].has_delay && js->side[1].has_delay;

	/* an outer join's keys and time bounds are in its ON clause (WHERE filters its result) */
	if (js->jointype != JOIN_INNER)
		quals = collect_quals(((JoinExpr *) linitial(((FromExpr *) q->jointree)->fromlist))->quals, NIL);
	else
		quals = collect_quals((Node *) q->jointree, NIL);
	foreach(lc, quals)
	{
		equality |= is_stream_equality(js, lfirst(lc));
		if (js->has_watermark)
			time_bounds(js, lfirst(lc));
	}
	/*
	 * Spark (UnsupportedOperationChecker.checkForStreamStreamJoinWatermark):
	 * the unmatched rows of a preserved side are written once the watermark
	 * proves they cannot match: its rows must be bounded by the other
	 * side's event time.  A full join needs both (Spark asks for one, and
	 * keeps the other side's unmatched rows for ever).
	 */
	for (int s = 0; s < 2; s++)
		if (js->side[s].preserved && !js->side[s].bounded)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("stream-stream %s join is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition",
							js->jointype == JOIN_LEFT ? "LeftOuter" : js->jointype == JOIN_RIGHT ? "RightOuter" : "FullOuter"),
					 errdetail("The unmatched rows of \"%s\" are written once the watermark proves they can match no more rows: the ON condition must bound its event time by that of \"%s\", and both streams need an event time and a watermark.",
							   get_rel_name(relids[s]), get_rel_name(relids[1 - s])),
					 errhint("Add a time-range condition to ON, e.g. b.ts BETWEEN a.ts AND a.ts + interval '1 hour'.")));
	if (!equality)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream-stream join without equality predicate is not supported"),
				 errdetail("The join condition of continuous query \"%s\" has no equality between a column of \"%s\" and one of \"%s\".",
						   name, get_rel_name(relids[0]), get_rel_name(relids[1])),
				 errhint("Join the streams on a key: ON a.key = b.key AND ...")));

	return js;
}

/*
 * equality_keys
 *	  The equalities between the two streams of a join.
 */
static List *
equality_keys(CqJoinSpec *js, Query *q)
{
	List	   *keys = NIL;
	ListCell   *lc;

	foreach(lc, collect_quals((Node *) q->jointree, NIL))
		if (is_stream_equality(js, lfirst(lc)))
			keys = lappend(keys, lfirst(lc));
	return keys;
}

/*
 * cq_joinspec_key_attno
 *	  The column of stream s that the first equality between the two
 *	  streams compares as it is (a plain column, maybe relabeled), or
 *	  InvalidAttrNumber: join.c indexes its buffer on it and the event time,
 *	  so that a new row of the other stream finds its matches by key within
 *	  the time range instead of scanning every key's rows in that range.
 */
AttrNumber
cq_joinspec_key_attno(CqJoinSpec *js, Query *q, int s)
{
	ListCell   *lc;

	foreach(lc, equality_keys(js, q))
	{
		OpExpr	   *op = lfirst(lc);
		ListCell   *la;

		foreach(la, op->args)
		{
			Node	   *arg = lfirst(la);

			while (arg && IsA(arg, RelabelType))
				arg = (Node *) ((RelabelType *) arg)->arg;
			if (arg && IsA(arg, Var) && ((Var *) arg)->varlevelsup == 0 &&
				((Var *) arg)->varno == (int) js->side[s].rti && ((Var *) arg)->varattno > 0)
				return ((Var *) arg)->varattno;
		}
	}
	return InvalidAttrNumber;
}

/*
 * cq_joinspec_check_change
 *	  cq.alter_query of a join of two streams (Spark's rules for changing a
 *	  running stream-stream join: its type and keys may not change, other
 *	  changes of its condition are "ill-defined").  pg_cq allows filters
 *	  and the select list to change over the same columns of each stream
 *	  (its buffers keep those) with the same keys and time bounds.  old or
 *	  new may be NULL (not a join).
 */
void
cq_joinspec_check_change(CqJoinSpec *old, Query *old_q, CqJoinSpec *new, Query *new_q,
						 const char *name)
{
	bool		same = old != NULL && new != NULL && old->jointype == new->jointype;
	ListCell   *a,
			   *b;

	for (int s = 0; same && s < 2; s++)
	{
		same = old->side[s].relid == new->side[s].relid &&
			old->side[s].bounded == new->side[s].bounded &&
			(!old->side[s].bounded || old->side[s].bound_us == new->side[s].bound_us) &&
			old->side[s].grid_us == new->side[s].grid_us &&
			(old->side[s].grid_us == 0 || old->side[s].grid_origin == new->side[s].grid_origin) &&
			equal(old->side[s].attnos, new->side[s].attnos);
	}
	if (same)
	{
		List	   *ko = equality_keys(old, old_q);
		List	   *kn = equality_keys(new, new_q);

		/* the same keys, in any order (equal() ignores parse locations) */
		same = list_length(ko) == list_length(kn);
		foreach(a, ko)
		{
			bool		found = false;

			foreach(b, kn)
				found |= equal(lfirst(a), lfirst(b));
			same &= found;
		}
	}
	if (!same)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change the streams, join type, join keys, time bounds or columns read of continuous query \"%s\"", name),
				 errdetail("Its buffers hold the columns it reads of each stream, kept as long as its time bounds say; only filters and the select list over them may change."),
				 errhint("Drop the query and create it again.")));
}

/*
 * cq_joinspec_buffer_attno
 *	  The column of a side's buffer table that holds source column attno
 *	  (buffer columns follow side->attnos), or InvalidAttrNumber.
 */
int
cq_joinspec_buffer_attno(CqJoinSide *side, AttrNumber source_attno)
{
	int			i = 1;
	ListCell   *lc;

	foreach(lc, side->attnos)
	{
		if (lfirst_int(lc) == source_attno)
			return i;
		i++;
	}
	return InvalidAttrNumber;
}
