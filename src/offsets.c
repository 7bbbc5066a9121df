/*-------------------------------------------------------------------------
 *
 * offsets.c
 *	  Offsets: snapshot arithmetic, the low bound of a batch and the
 *	  row-limit cut (PgQ's design).
 *
 * An offset is a pg_snapshot: the rows of a batch are those whose cq_xid
 * (tracking.c) is visible in the end snapshot and not in the start snapshot.
 * Transactions that commit out of order are therefore neither lost nor
 * counted twice.
 *
 * Snapshot arithmetic happens here in C on the text form "xmin:xmax:xip,..."
 * (pg_snapshot's I/O format).  Everything here is pure computation except
 * cq_snap_current (reads the current snapshot) and cq_offsets_limit (reads
 * the new rows per transaction through SPI, in the caller's SPI connection
 * and with the caller's user and search_path).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/snapmgr.h"
#include "utils/xid8.h"

#include "access/relation.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "offsets.h"
#include "snapmemo.h"
#include "citus.h"
#include "sql_builder.h"
#include "xid48.h"
#include "stamp_type.h"

/* Datum of a full transaction id (batch parameters). */
Datum
cq_xid8_datum(uint64 x)
{
	return FullTransactionIdGetDatum(FullTransactionIdFromU64(x));
}

/*
 * cq_snapshot_datum
 *	  Datum of a pg_snapshot given as text (batch parameters; snapmemo.c).
 */
Datum
cq_snapshot_datum(const char *text)
{
	return cq_snapmemo_in(text);
}

/*
 * cq_snap_parse
 *	  Parse pg_snapshot text.
 */
CqSnap *
cq_snap_parse(const char *text)
{
	CqSnap	   *s = palloc0(sizeof(CqSnap));
	const char *p = text;
	char	   *end;
	int			cap = 8;

	s->xmin = strtou64(p, &end, 10);
	if (*end != ':')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "pg_snapshot", text)));
	p = end + 1;
	s->xmax = strtou64(p, &end, 10);
	if (*end != ':')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "pg_snapshot", text)));
	p = end + 1;
	s->xip = palloc(sizeof(uint64) * cap);
	while (*p)
	{
		uint64		x = strtou64(p, &end, 10);

		if (end == p)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for type %s: \"%s\"", "pg_snapshot", text)));
		if (s->nxip == cap)
		{
			cap *= 2;
			s->xip = repalloc(s->xip, sizeof(uint64) * cap);
		}
		s->xip[s->nxip++] = x;
		p = end;
		if (*p == ',')
			p++;
	}
	return s;
}

/*
 * snap_text
 *	  pg_snapshot text of s.
 */
static char *
snap_text(const CqSnap *s)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, UINT64_FORMAT ":" UINT64_FORMAT ":", s->xmin, s->xmax);
	for (int i = 0; i < s->nxip; i++)
		appendStringInfo(&buf, "%s" UINT64_FORMAT, i ? "," : "", s->xip[i]);
	return buf.data;
}

/*
 * cq_snap_text
 *	  pg_snapshot text of s (exported).
 */
char *
cq_snap_text(const CqSnap *s)
{
	return snap_text(s);
}

/*
 * current_snapshot_text
 *	  pg_current_snapshot() as text, called directly rather than through
 *	  SPI (a statement per batch end, planned in every new backend): with
 *	  a snapshot taken now as the active one, as SPI would take for a
 *	  statement (in READ COMMITTED a new one; else the transaction's).
 */
static char *
current_snapshot_text(void)
{
	LOCAL_FCINFO(fcinfo, 0);
	Datum		snap;
	char	   *text;

	PushActiveSnapshot(GetTransactionSnapshot());
	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	snap = pg_current_snapshot(fcinfo);
	text = cq_snapmemo_out(snap);
	PopActiveSnapshot();
	return text;
}

/*
 * snap_add_running
 *	  Put transaction x, visible in s, among its running ones.
 */
static void
snap_add_running(CqSnap *s, uint64 x)
{
	int			i;

	/* insert x into the sorted xip */
	s->xip = repalloc(s->xip, sizeof(uint64) * (s->nxip + 1));
	for (i = s->nxip; i > 0 && s->xip[i - 1] > x; i--)
		s->xip[i] = s->xip[i - 1];
	s->xip[i] = x;
	s->nxip++;
	s->xmin = Min(s->xmin, x);
}

/*
 * cq_snap_current
 *	  pg_current_snapshot() as text, with the current transaction in
 *	  progress.  Every offset is taken with it (a batch's end, the start of
 *	  a query created with starting = 'latest' or reset, cq.run's goal).
 *
 *	  Core leaves a backend's own transaction out of its snapshots: once a
 *	  transaction that started later has finished, the snapshot counts ours
 *	  as finished too, and rows that ours writes after the offset (an
 *	  INSERT after CALL cq.run in the same transaction block) would be
 *	  behind every later offset, never read.  In progress, they are read
 *	  by the first batch after our commit; rows ours wrote before the
 *	  offset likewise (a batch never reads uncommitted rows).  A
 *	  transaction without an id yet gets one at or above this snapshot's
 *	  xmax, which is in progress for it anyway.  Only the top-level id
 *	  matters: cq_xid is pg_current_xact_id(), the top-level id, in
 *	  subtransactions too.
 */
char *
cq_snap_current(void)
{
	FullTransactionId top = GetTopFullTransactionIdIfAny();
	char	   *text;
	CqSnap	   *s;
	uint64		x;

	text = current_snapshot_text();
	if (!FullTransactionIdIsValid(top))
		return text;
	s = cq_snap_parse(text);
	x = U64FromFullTransactionId(top);
	if (!cq_snap_visible(s, x))
		return text;
	snap_add_running(s, x);
	return snap_text(s);
}

/*
 * cq_snap_current_source
 *	  The end snapshot of a batch over source: cq_snap_current, and for a
 *	  Citus distributed source (citus.c) taken behind the 2PC barrier, with
 *	  the coordinator transactions whose COMMIT PREPARED failed on a node
 *	  (orphans, committed later by Citus' recovery) kept in progress.  Only
 *	  the records of transactions new since prev_text (S_prev) are checked:
 *	  older ones were checked by the batch that moved past them.  Caller
 *	  has SPI connected.
 */
char *
cq_snap_current_source(Oid source, const char *prev_text)
{
	char	   *text;
	List	   *records;
	List	   *fresh = NIL;
	List	   *orphans;
	CqSnap	   *s;
	CqSnap	   *prev;
	ListCell   *lc;

	if (!OidIsValid(source) || cq_citus_kind(source) != CQ_CITUS_HASH)
		return cq_snap_current();
	if (!cq_citus_relation_stamped_by_coordinator(source))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" became a Citus distributed table after continuous queries began to read it",
						get_rel_name(source)),
				 errdetail("Its rows are stamped by each node's own transactions, which the coordinator's snapshots cannot order; pg_cq stamps distributed sources with cq.coordinator_xact_id()."),
				 errhint("Drop and recreate the continuous queries over it.")));
	if (!cq_citus_barrier_begin())
		return cq_snap_current();
	text = cq_snap_current();
	records = cq_citus_barrier_end();
	s = cq_snap_parse(text);
	prev = cq_snap_parse(prev_text);
	foreach(lc, records)
	{
		CqCitusRecord *r = lfirst(lc);

		if (cq_snap_visible(s, r->xid) && !cq_snap_visible(prev, r->xid))
			fresh = lappend(fresh, r);
	}
	orphans = cq_citus_orphans(fresh);
	if (orphans == NIL)
		return text;
	foreach(lc, orphans)
	{
		uint64		x = *(uint64 *) lfirst(lc);

		if (cq_snap_visible(s, x))
			snap_add_running(s, x);
		ereport(LOG,
				(errmsg("pg_cq: a batch over \"%s\" treats transaction " UINT64_FORMAT " as in progress",
						get_rel_name(source), x),
				 errdetail("Its COMMIT PREPARED has not reached every Citus node yet; its rows there are read once Citus' recovery commits them.")));
	}
	return snap_text(s);
}

/*
 * cq_snap_visible
 *	  Is transaction x visible (committed or aborted, not in progress) in s?
 *	  Same rule as pg_visible_in_snapshot().
 */
bool
cq_snap_visible(const CqSnap *s, uint64 x)
{
	if (x < s->xmin)
		return true;
	if (x >= s->xmax)
		return false;
	for (int i = 0; i < s->nxip; i++)
		if (s->xip[i] == x)
			return false;
	return true;
}

/*
 * cq_snap_low_bound
 *	  Lowest transaction id that can be new between prev and cur: xmax(prev),
 *	  or an older transaction that was running at prev and is finished in
 *	  cur.  A transaction still running does not hold the bound back.
 */
uint64
cq_snap_low_bound(const CqSnap *prev, const CqSnap *cur)
{
	uint64		lo = prev->xmax;

	for (int i = 0; i < prev->nxip; i++)
		if (prev->xip[i] < lo && cq_snap_visible(cur, prev->xip[i]))
			lo = prev->xip[i];
	return lo;
}

/*
 * cq_snap_nothing_new
 *	  True when no transaction finished between prev and cur, so no batch
 *	  can have rows.
 */
bool
cq_snap_nothing_new(const CqSnap *prev, const CqSnap *cur)
{
	if (cur->xmax != prev->xmax)
		return false;
	for (int i = 0; i < prev->nxip; i++)
		if (cq_snap_visible(cur, prev->xip[i]))
			return false;
	return true;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * cq_snap_cut
 *	  The snapshot "prev plus the chosen transactions": used when
 *	  max_rows_per_trigger ends a batch early.  chosen are the new
 *	  transactions taken (ascending, all below cut); every new transaction
 *	  below `cut` must be chosen.  Whatever is not chosen stays invisible, so
 *	  the next batch reads it: a transaction is never split.
 */
char *
cq_snap_cut(const CqSnap *prev, const CqSnap *cur, uint64 cut,
			const uint64 *chosen, int nchosen)
{
	uint64		xmax = Max(prev->xmax, cut);
	uint64	   *xip = palloc(sizeof(uint64) * (prev->nxip + cur->nxip + 1));
	int			n = 0;
	StringInfoData buf;

	/* running at prev and not taken now */
	for (int i = 0; i < prev->nxip; i++)
	{
		bool		taken = false;

		for (int j = 0; j < nchosen; j++)
			if (chosen[j] == prev->xip[i])
				taken = true;
		if (!taken)
			xip[n++] = prev->xip[i];
	}
	/* started after prev, below the cut, still running at cur */
	for (int i = 0; i < cur->nxip; i++)
		if (cur->xip[i] >= prev->xmax && cur->xip[i] < xmax)
			xip[n++] = cur->xip[i];
	qsort(xip, n, sizeof(uint64), cmp_u64);

	initStringInfo(&buf);
	appendStringInfo(&buf, UINT64_FORMAT ":" UINT64_FORMAT ":", n > 0 ? Min(xip[0], xmax) : xmax, xmax);
	for (int i = 0; i < n; i++)
		if (i == 0 || xip[i] != xip[i - 1])
			appendStringInfo(&buf, "%s" UINT64_FORMAT, i ? "," : "", xip[i]);
	return buf.data;
}

/*
 * cq_snap_covers
 *	  Does `end` see everything `target` sees?  (Used by cq.run to stop once
 *	  everything committed before the call is processed.)
 */
bool
cq_snap_covers(const CqSnap *end, const CqSnap *target)
{
	if (end->xmax < target->xmax)
	{
		/* transactions in [end.xmax, target.xmax) visible in target */
		for (uint64 x = end->xmax; x < target->xmax; x++)
			if (cq_snap_visible(target, x))
				return false;
	}
	for (int i = 0; i < end->nxip; i++)
		if (cq_snap_visible(target, end->xip[i]))
			return false;
	return true;
}

/*
 * limit_scan
 *	  The loop of cq_offsets_limit over one transaction-id space: choose the
 *	  new transactions in [from, xmax) in id order while their rows fit in
 *	  limit (rows so far in *rows), reading them with count_xids ($1, $2:
 *	  the id range; args[2..] set by the caller, $5 set here).  Appends to
 *	  *chosen (capacity *cap).  Returns true when every new transaction
 *	  below xmax was chosen.
 */
static bool
limit_scan(SPIPlanPtr count_xids, Datum *args, uint64 from, uint64 xmax, int64 limit,
		   int64 *rows, uint64 **chosen, int *nchosen, int *cap)
{
	uint64		span = (uint64) Min(Max(limit, 1), (int64) 1 << 32) * 4;
	bool		overflow = false;	/* a transaction did not fit */
	bool		full = false;

	while (!full && from < xmax)
	{
		uint64		to = (xmax - from <= span) ? xmax : from + span;

		args[0] = cq_xid8_datum(from);
		args[1] = cq_xid8_datum(to);
		/* each transaction has a row: more than this many cannot fit */
		args[4] = Int64GetDatum(Max(limit - *rows, 0) + 1);
		if (SPI_execute_plan(count_xids, args, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "pg_cq: could not count new rows per transaction");
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			bool		isnull;
			Datum		xid = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
			/* the source's cq_xid: xid8 by value, cq.xid48 by reference */
			uint64		x = cq_stamp_get(xid, TupleDescAttr(SPI_tuptable->tupdesc, 0)->attbyval);
			int64		cnt = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));

			if (*rows + cnt > limit && (*nchosen > 0 || *rows > 0))
			{
				overflow = full = true; /* too big for the rest (or history filled it) */
				break;
			}
			if (*nchosen == *cap)
			{
				*cap *= 2;
				*chosen = repalloc(*chosen, sizeof(uint64) * *cap);
			}
			(*chosen)[(*nchosen)++] = x;
			*rows += cnt;
		}
		SPI_freetuptable(SPI_tuptable);
		if (*rows >= limit)
			full = true;
		from = to;
		span = span > PG_UINT64_MAX / 8 ? PG_UINT64_MAX : span * 8;
	}
	return !overflow && from >= xmax;
}

/*
 * cq_offsets_limit
 *	  With max_rows_per_trigger, end the batch after the first transactions
 *	  (in id order) whose rows reach the limit; a transaction is never
 *	  split, so one larger than the limit forms a batch alone.  Returns the
 *	  (possibly earlier) end snapshot; *nrows is the number of rows up to
 *	  it (history rows `already` included).
 *
 *	  Only what the cut needs is read: the new rows of the first few
 *	  transactions above the low bound, in id ranges that grow eightfold
 *	  until the limit is reached or cur's xmax is, and at most one
 *	  transaction more than can fit.  (Reading every pending transaction
 *	  for every batch made a backlog cost quadratic time.)  params are the
 *	  batch's $1..$4: low bound, cur's xmax, cur, prev; count_xids_sql is
 *	  the plan's statement counting new rows per transaction.
 */
char *
cq_offsets_limit(const char *count_xids_sql, CqSnap *prev, CqSnap *cur, const char *cur_text,
				 Datum *params, int64 limit, int64 already, int64 *nrows)
{
	Oid			types[5] = {XID8OID, XID8OID, PG_SNAPSHOTOID, PG_SNAPSHOTOID, INT8OID};
	Datum		args[5];
	SPIPlanPtr	count_xids = cq_spi_plan(count_xids_sql, 5, types);
	uint64		from = U64FromFullTransactionId(DatumGetFullTransactionId(params[0]));
	int			cap = 16;
	uint64	   *chosen = palloc(sizeof(uint64) * cap);
	int			nchosen = 0;
	int64		rows = already;
	bool		all;

	args[2] = params[2];
	args[3] = params[3];
	all = limit_scan(count_xids, args, from, cur->xmax, limit, &rows, &chosen, &nchosen, &cap);
	*nrows = rows;
	if (all)
		return (char *) cur_text;	/* every new transaction was chosen */
	return cq_snap_cut(prev, cur, nchosen > 0 ? chosen[nchosen - 1] + 1 : prev->xmax,
					   chosen, nchosen);
}

/* ---- per-node offsets (Citus distributed sources) ---- */

/* what a node unknown to an offset sees: nothing */
static CqSnap *
earliest(void)
{
	return cq_snap_parse("1:1:");
}

/*
 * cq_nsnap_parse
 *	  Parse a per-node offset "node=snapshot;...".
 */
CqNodeSnap *
cq_nsnap_parse(const char *text)
{
	CqNodeSnap *m = palloc0(sizeof(CqNodeSnap));
	char	   *copy = pstrdup(text);
	char	   *save = NULL;
	char	   *entry;

	for (entry = strtok_r(copy, ";", &save); entry != NULL; entry = strtok_r(NULL, ";", &save))
	{
		char	   *eq = strchr(entry, '=');
		char	   *end;
		int64		node;

		if (eq == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid per-node offset \"%s\"", text),
					 errdetail("A per-node offset is a list of node=snapshot entries separated by semicolons.")));
		*eq = '\0';
		errno = 0;
		node = strtoi64(entry, &end, 10);
		if (errno != 0 || *end != '\0' || end == entry)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid per-node offset \"%s\"", text),
					 errdetail("A per-node offset is a list of node=snapshot entries separated by semicolons.")));
		cq_nsnap_set(m, node, cq_snap_parse(eq + 1));
	}
	return m;
}

/*
 * cq_nsnap_text
 *	  Text form of a per-node offset.
 */
char *
cq_nsnap_text(const CqNodeSnap *m)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < m->n; i++)
		appendStringInfo(&buf, "%s" INT64_FORMAT "=%s", i ? ";" : "", m->node[i], snap_text(m->snap[i]));
	return buf.data;
}

/*
 * cq_nsnap_get
 *	  The snapshot of node in m, or NULL.
 */
CqSnap *
cq_nsnap_get(const CqNodeSnap *m, int64 node)
{
	for (int i = 0; i < m->n; i++)
		if (m->node[i] == node)
			return m->snap[i];
	return NULL;
}

/*
 * cq_nsnap_set
 *	  Set (or add, in node order) node's snapshot in m.
 */
void
cq_nsnap_set(CqNodeSnap *m, int64 node, CqSnap *s)
{
	int			i;

	for (i = 0; i < m->n; i++)
		if (m->node[i] == node)
		{
			m->snap[i] = s;
			return;
		}
	m->node = m->n == 0 ? palloc(sizeof(int64)) : repalloc(m->node, sizeof(int64) * (m->n + 1));
	m->snap = m->n == 0 ? palloc(sizeof(CqSnap *)) : repalloc(m->snap, sizeof(CqSnap *) * (m->n + 1));
	for (i = m->n; i > 0 && m->node[i - 1] > node; i--)
	{
		m->node[i] = m->node[i - 1];
		m->snap[i] = m->snap[i - 1];
	}
	m->node[i] = node;
	m->snap[i] = s;
	m->n++;
}

/*
 * cq_nsnap_visible
 *	  Is transaction x of node visible in m (false for a node m does not
 *	  know)?
 */
bool
cq_nsnap_visible(const CqNodeSnap *m, int64 node, uint64 x)
{
	CqSnap	   *s = cq_nsnap_get(m, node);

	return s != NULL && cq_snap_visible(s, x);
}

/*
 * cq_nsnap_low_bound
 *	  The lowest transaction id, over every node of cur, that can be new
 *	  between prev and cur (cq_snap_low_bound per node): a bound of the
 *	  xid8 range the batch scans, the per-node test does the rest.
 */
uint64
cq_nsnap_low_bound(const CqNodeSnap *prev, const CqNodeSnap *cur)
{
	uint64		lo = PG_UINT64_MAX;

	for (int i = 0; i < cur->n; i++)
	{
		CqSnap	   *p = cq_nsnap_get(prev, cur->node[i]);

		lo = Min(lo, cq_snap_low_bound(p ? p : earliest(), cur->snap[i]));
	}
	return lo == PG_UINT64_MAX ? 0 : lo;
}

/*
 * cq_nsnap_node_low_bound
 *	  cq_snap_low_bound for node i of cur alone: every transaction of that
 *	  node new between prev and cur is at least this, and below its xmax in
 *	  cur (the per-node ranges of a shard's scan, shard.c).
 */
uint64
cq_nsnap_node_low_bound(const CqNodeSnap *prev, const CqNodeSnap *cur, int i)
{
	CqSnap	   *p = cq_nsnap_get(prev, cur->node[i]);

	return cq_snap_low_bound(p ? p : earliest(), cur->snap[i]);
}

/*
 * cq_nsnap_xmax
 *	  The largest xmax of m's nodes (1 when it knows none).
 */
uint64
cq_nsnap_xmax(const CqNodeSnap *m)
{
	uint64		x = 1;

	for (int i = 0; i < m->n; i++)
		x = Max(x, m->snap[i]->xmax);
	return x;
}

/*
 * cq_nsnap_nothing_new
 *	  No transaction finished on any node between prev and cur.
 */
bool
cq_nsnap_nothing_new(const CqNodeSnap *prev, const CqNodeSnap *cur)
{
	for (int i = 0; i < cur->n; i++)
	{
		CqSnap	   *p = cq_nsnap_get(prev, cur->node[i]);

		if (!cq_snap_nothing_new(p ? p : earliest(), cur->snap[i]))
			return false;
	}
	return true;
}

/*
 * cq_nsnap_covers
 *	  Does `end` see, on every node, everything `target` sees?
 */
bool
cq_nsnap_covers(const CqNodeSnap *end, const CqNodeSnap *target)
{
	for (int i = 0; i < target->n; i++)
	{
		CqSnap	   *e = cq_nsnap_get(end, target->node[i]);

		if (!cq_snap_covers(e ? e : earliest(), target->snap[i]))
			return false;
	}
	return true;
}

/*
 * cq_node_self
 *	  This node's identity in per-node offsets: its system identifier.
 */
int64
cq_node_self(void)
{
	return (int64) GetSystemIdentifier();
}

/*
 * cq_nsnap_current
 *	  The end offset of a batch over a source stamped per node: every node's
 *	  current snapshot (citus.c asks the other nodes; this node's is
 *	  cq_snap_current, with our own transaction in progress), each taken
 *	  before the batch reads that node.  A node of S_prev that did not
 *	  answer because it left the cluster keeps its snapshot of S_prev.
 *	  owner: the query's owner, whose Citus connections the batch uses
 *	  (InvalidOid: superuser).  Caller has SPI connected.
 */
char *
cq_nsnap_current(Oid source, Oid owner, const char *prev_text)
{
	CqNodeSnap *prev = cq_nsnap_parse(prev_text);
	CqNodeSnap *cur = palloc0(sizeof(CqNodeSnap));
	int64		self = cq_node_self();
	ListCell   *lc;

	foreach(lc, cq_citus_node_snapshots(source, owner))
	{
		CqNodeSnap *one = cq_nsnap_parse((char *) lfirst(lc));

		for (int i = 0; i < one->n; i++)
		{
			if (one->node[i] == self)
				continue;
			if (cq_nsnap_get(cur, one->node[i]) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("two nodes of the Citus cluster have the same system identifier " INT64_FORMAT,
								one->node[i]),
						 errdetail("Continuous queries over \"%s\" tell the nodes that stamp its rows apart by their system identifier; nodes made from a copy of another node's data directory share it.",
								   get_rel_name(source)),
						 errhint("Give each node its own data directory (initdb), or use a streaming replica only as a failover target.")));
			cq_nsnap_set(cur, one->node[i], one->snap[i]);
		}
	}
	cq_nsnap_set(cur, self, cq_snap_parse(cq_snap_current()));
	for (int i = 0; i < prev->n; i++)
		if (cq_nsnap_get(cur, prev->node[i]) == NULL)
			cq_nsnap_set(cur, prev->node[i], prev->snap[i]);
	return cq_nsnap_text(cur);
}

/*
 * cq_offsets_limit_nodes
 *	  cq_offsets_limit for a per-node offset: the nodes in order, each
 *	  choosing its new transactions (count_xids_sql reads one node, $6)
 *	  while the rows fit; once the limit is reached the remaining nodes
 *	  stay at prev.  A transaction is never split.  Returns the end
 *	  offset; *nrows the rows up to it.
 */
char *
cq_offsets_limit_nodes(const char *count_xids_sql, CqNodeSnap *prev, CqNodeSnap *cur,
					   const char *prev_text, int64 limit, int64 already, int64 *nrows)
{
	Oid			types[6] = {XID8OID, XID8OID, TEXTOID, TEXTOID, INT8OID, INT8OID};
	Datum		args[6];
	SPIPlanPtr	count_xids = cq_spi_plan(count_xids_sql, 6, types);
	int64		rows = already;
	CqNodeSnap *end = palloc0(sizeof(CqNodeSnap));

	args[2] = CStringGetTextDatum(cq_nsnap_text(cur));
	args[3] = CStringGetTextDatum(prev_text);
	for (int i = 0; i < cur->n; i++)
	{
		CqSnap	   *p = cq_nsnap_get(prev, cur->node[i]);
		CqSnap	   *c = cur->snap[i];
		int			cap = 16;
		uint64	   *chosen = palloc(sizeof(uint64) * cap);
		int			nchosen = 0;

		if (p == NULL)
			p = earliest();
		args[5] = Int64GetDatum(cur->node[i]);
		if (!limit_scan(count_xids, args, cq_snap_low_bound(p, c), c->xmax, limit,
						&rows, &chosen, &nchosen, &cap))
			c = cq_snap_parse(cq_snap_cut(p, c, nchosen > 0 ? chosen[nchosen - 1] + 1 : p->xmax,
										  chosen, nchosen));
		cq_nsnap_set(end, cur->node[i], c);
	}
	*nrows = rows;
	return cq_nsnap_text(end);
}

/* ---- SQL functions of per-node offsets ---- */

PG_FUNCTION_INFO_V1(cq_node_id);
PG_FUNCTION_INFO_V1(cq_node_visible);

/*
 * cq_node_id
 *	  cq.node_id(): this node's identity in per-node offsets, its system
 *	  identifier (what the shards' stamp trigger writes into cq_node).
 */
Datum
cq_node_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(cq_node_self());
}

/* cq.node_visible's offset, parsed once per call site and text */
typedef struct NodeVisibleCache
{
	text	   *offset;
	CqNodeSnap *map;
} NodeVisibleCache;

/*
 * cq_node_visible
 *	  cq.node_visible(offset text, node bigint, xid xid8): is transaction
 *	  xid of node visible in the per-node offset (false for a node the
 *	  offset does not know)?  The predicate of a batch over a source
 *	  stamped per node, evaluated on the nodes that store the rows; the
 *	  offset is a constant, parsed once.
 */
Datum
cq_node_visible(PG_FUNCTION_ARGS)
{
	text	   *offset = PG_GETARG_TEXT_PP(0);
	int64		node = PG_GETARG_INT64(1);
	uint64		x = U64FromFullTransactionId(PG_GETARG_FULLTRANSACTIONID(2));
	NodeVisibleCache *cache = (NodeVisibleCache *) fcinfo->flinfo->fn_extra;

	if (cache == NULL || VARSIZE_ANY_EXHDR(cache->offset) != VARSIZE_ANY_EXHDR(offset) ||
		memcmp(VARDATA_ANY(cache->offset), VARDATA_ANY(offset), VARSIZE_ANY_EXHDR(offset)) != 0)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (cache == NULL)
			cache = palloc0(sizeof(NodeVisibleCache));
		cache->offset = (text *) PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0));
		cache->map = cq_nsnap_parse(text_to_cstring(offset));
		fcinfo->flinfo->fn_extra = cache;
		MemoryContextSwitchTo(old);
	}
	PG_RETURN_BOOL(cq_nsnap_visible(cache->map, node, x));
}

/* ---- the batch predicate ---- */

/*
 * The layout of a pg_snapshot datum (xid8funcs.c keeps it private; the
 * same since PostgreSQL 13).
 */
typedef struct CqPgSnapshot
{
	int32		vl_len_;
	uint32		nxip;
	FullTransactionId xmin;
	FullTransactionId xmax;
	FullTransactionId xip[FLEXIBLE_ARRAY_MEMBER];
} CqPgSnapshot;

/*
 * snapshot_sees
 *	  pg_visible_in_snapshot(x, s): x finished (committed or aborted) as
 *	  of s.  xip is sorted (pg_snapshot_in and pg_current_snapshot make it
 *	  so).
 */
static inline bool
snapshot_sees(const CqPgSnapshot *s, uint64 x)
{
	uint32		lo = 0;
	uint32		hi = s->nxip;

	if (x < U64FromFullTransactionId(s->xmin))
		return true;
	if (x >= U64FromFullTransactionId(s->xmax))
		return false;
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;
		uint64		m = U64FromFullTransactionId(s->xip[mid]);

		if (m == x)
			return false;
		if (m < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return true;
}

/*
 * cq_xid_is_new
 *	  cq.xid_new's test in C (delta_scan.c calls it for every row it
 *	  reads): is x visible in cur and not in prev, two detoasted
 *	  pg_snapshot values?
 */
bool
cq_xid_is_new(uint64 x, const struct varlena *cur, const struct varlena *prev)
{
	return snapshot_sees((const CqPgSnapshot *) cur, x) &&
		!snapshot_sees((const CqPgSnapshot *) prev, x);
}

PG_FUNCTION_INFO_V1(cq_xid_new);

/*
 * cq_xid_new
 *	  cq.xid_new(xid xid8, cur pg_snapshot, prev pg_snapshot): is xid
 *	  visible in cur and not in prev?  Exactly
 *	  pg_visible_in_snapshot(xid, cur) AND NOT pg_visible_in_snapshot(xid,
 *	  prev), in one call: the per-row predicate of a batch's new rows.
 */
Datum
cq_xid_new(PG_FUNCTION_ARGS)
{
	uint64		x = U64FromFullTransactionId(PG_GETARG_FULLTRANSACTIONID(0));
	const CqPgSnapshot *cur = (const CqPgSnapshot *) PG_GETARG_VARLENA_P(1);
	const CqPgSnapshot *prev = (const CqPgSnapshot *) PG_GETARG_VARLENA_P(2);

	PG_RETURN_BOOL(snapshot_sees(cur, x) && !snapshot_sees(prev, x));
}

PG_FUNCTION_INFO_V1(cq_xid48_new);

/*
 * cq_xid48_new
 *	  cq.xid48_new(xid cq.xid48, cur pg_snapshot, prev pg_snapshot):
 *	  cq.xid_new for a cq.xid48 cq_xid (6 bytes by reference), without
 *	  the cast to xid8 a row.
 */
Datum
cq_xid48_new(PG_FUNCTION_ARGS)
{
	uint64		x = cq_xid48_get(PG_GETARG_POINTER(0));
	const CqPgSnapshot *cur = (const CqPgSnapshot *) PG_GETARG_VARLENA_P(1);
	const CqPgSnapshot *prev = (const CqPgSnapshot *) PG_GETARG_VARLENA_P(2);

	PG_RETURN_BOOL(snapshot_sees(cur, x) && !snapshot_sees(prev, x));
}
