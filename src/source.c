/*-------------------------------------------------------------------------
 *
 * source.c
 *	  Offsets: snapshot batching over a tracked source table (PgQ's design).
 *
 * Tracking adds one column, cq_xid xid8, whose default is the inserting
 * transaction's id; rows that existed before are NULL ("history").  An
 * offset is a pg_snapshot: the rows of a batch are those whose cq_xid is
 * visible in the end snapshot and not in the start snapshot.  Transactions
 * that commit out of order are therefore neither lost nor counted twice.
 *
 * Snapshot arithmetic happens here in C on the text form "xmin:xmax:xip,..."
 * (pg_snapshot's I/O format).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/brin.h"
#include "access/genam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "pg_cq.h"
#include "source.h"
#include "shmem.h"

/*
 * cq_source_tracking_attnum
 *	  Attribute number of cq_xid in the source, or InvalidAttrNumber.
 */
AttrNumber
cq_source_tracking_attnum(Oid relid)
{
	return get_attnum(relid, CQ_TRACKING_COLUMN);
}

/*
 * cq_source_track
 *	  Make sure the source has the tracking column and its index.  Adding the
 *	  column with a separate SET DEFAULT does not rewrite the table (existing
 *	  rows stay NULL = history).  Runs as the current user, who must own the
 *	  table.  Caller has SPI connected.
 */
AttrNumber
cq_source_track(Oid relid)
{
	AttrNumber	att = cq_source_tracking_attnum(relid);
	char	   *rel = cq_sql_relname_str(relid);

	if (att != InvalidAttrNumber)
	{
		Oid			type = get_atttype(relid, att);

		if (type != XID8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of source \"%s\" has type %s, not xid8",
							CQ_TRACKING_COLUMN, get_rel_name(relid), format_type_be(type)),
					 errdetail("pg_cq uses that column to find new rows."),
					 errhint("Rename or drop the column.")));
		cq_wakeup_ensure_trigger(relid);	/* sources tracked before it existed */
		return att;
	}

	cq_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s pg_catalog.xid8", rel, CQ_TRACKING_COLUMN),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_spi_exec(psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT pg_catalog.pg_current_xact_id()",
						 rel, CQ_TRACKING_COLUMN),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	/*
	 * No autosummarize: each batch summarizes the full ranges it is about
	 * to read (cq_source_summarize), and with small ranges autosummarize
	 * floods autovacuum's work-item queue under bulk inserts (a LOG line
	 * "request for BRIN range summarization ... was not recorded" per
	 * range once it is full) and runs summarization concurrently with the
	 * writers, for nothing.
	 */
	cq_spi_exec(psprintf("CREATE INDEX ON %s USING brin (%s cq.xid8_minmax_ops) "
						 "WITH (pages_per_range = %d)",
						 rel, CQ_TRACKING_COLUMN, CQ_BRIN_PAGES_PER_RANGE),
				SPI_OK_UTILITY, 0, NULL, NULL, NULL);
	cq_wakeup_ensure_trigger(relid);
	ereport(NOTICE,
			(errmsg("pg_cq now tracks new rows of table \"%s\"", get_rel_name(relid)),
			 errdetail("Added column \"%s\" xid8 DEFAULT pg_current_xact_id(), a BRIN index on it and the statement trigger cq_wakeup; existing rows keep NULL.",
					   CQ_TRACKING_COLUMN)));
	return cq_source_tracking_attnum(relid);
}

/*
 * tracking_index
 *	  The BRIN index on cq_xid of a (leaf) table, or InvalidOid.
 */
static Oid
tracking_index(Relation heap, AttrNumber att)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Oid			idx = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(idx));
		Form_pg_index ix;

		if (!HeapTupleIsValid(tup))
			continue;
		ix = (Form_pg_index) GETSTRUCT(tup);
		if (ix->indnatts == 1 && ix->indkey.values[0] == att)
		{
			HeapTuple	ctup = SearchSysCache1(RELOID, ObjectIdGetDatum(idx));

			if (HeapTupleIsValid(ctup))
			{
				if (((Form_pg_class) GETSTRUCT(ctup))->relam == BRIN_AM_OID)
					result = idx;
				ReleaseSysCache(ctup);
			}
		}
		ReleaseSysCache(tup);
		if (OidIsValid(result))
			break;
	}
	list_free(indexes);
	return result;
}

/*
 * summarize_leaf
 *	  Summarize the full, unsummarized page ranges at the end of one table,
 *	  newest first, stopping at the first one already summarized.  The
 *	  table's SHARE UPDATE EXCLUSIVE lock (the one brin_summarize_range
 *	  takes, taken here only if free) is released as soon as that is done,
 *	  not at commit: summaries are not transactional, and VACUUM, ANALYZE
 *	  and autovacuum must not wait for (or skip) a source that back-to-back
 *	  batches read.
 */
static void
summarize_leaf(Oid relid)
{
	Relation	heap;
	Relation	irel;
	Oid			idx;
	BlockNumber nblocks;
	BlockNumber ppr;
	AttrNumber	att = cq_source_tracking_attnum(relid);

	if (att == InvalidAttrNumber ||
		!ConditionalLockRelationOid(relid, ShareUpdateExclusiveLock))
		return;
	heap = table_open(relid, NoLock);
	idx = tracking_index(heap, att);
	nblocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, NoLock);
	if (OidIsValid(idx))
	{
		irel = index_open(idx, AccessShareLock);
		ppr = BrinGetPagesPerRange(irel);
		index_close(irel, AccessShareLock);

		for (int64 blk = (int64) (nblocks / ppr) * ppr - ppr; blk >= 0; blk -= ppr)
		{
			if (DatumGetInt32(DirectFunctionCall2(brin_summarize_range, ObjectIdGetDatum(idx),
												  Int64GetDatum(blk))) == 0)
				break;
		}
	}
	UnlockRelationOid(relid, ShareUpdateExclusiveLock);
}

/*
 * cq_source_summarize
 *	  Keep the BRIN index on cq_xid summarized up to the last full page
 *	  range.  An unsummarized range matches every scan, so without this each
 *	  batch would read every row inserted since autovacuum last summarized
 *	  the index.  The last, partial range is left alone: summarizing it would
 *	  make every insert into it update the summary.  Skipped when another
 *	  process holds the table's SHARE UPDATE EXCLUSIVE lock (autovacuum is
 *	  then on it).  Runs as superuser (summarizing requires ownership);
 *	  the lock is released before returning.
 */
void
cq_source_summarize(Oid relid)
{
	CqSecurity	sec;

	cq_security_superuser(&sec);
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(relid, NoLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
				summarize_leaf(lfirst_oid(lc));
	}
	else
		summarize_leaf(relid);
	cq_security_restore(&sec);
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
		elog(ERROR, "pg_cq: invalid snapshot \"%s\"", text);
	p = end + 1;
	s->xmax = strtou64(p, &end, 10);
	if (*end != ':')
		elog(ERROR, "pg_cq: invalid snapshot \"%s\"", text);
	p = end + 1;
	s->xip = palloc(sizeof(uint64) * cap);
	while (*p)
	{
		uint64		x = strtou64(p, &end, 10);

		if (end == p)
			elog(ERROR, "pg_cq: invalid snapshot \"%s\"", text);
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
 *	  subtransactions too.  Caller has SPI connected.
 */
char *
cq_snap_current(void)
{
	FullTransactionId top = GetTopFullTransactionIdIfAny();
	char	   *text;
	CqSnap	   *s;
	uint64		x;
	int			i;

	cq_spi_exec_cached("SELECT pg_catalog.pg_current_snapshot()::pg_catalog.text", SPI_OK_SELECT, 0, NULL, NULL, NULL);
	text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (!FullTransactionIdIsValid(top))
		return text;
	s = cq_snap_parse(text);
	x = U64FromFullTransactionId(top);
	if (!cq_snap_visible(s, x))
		return text;

	/* insert x into the sorted xip */
	s->xip = repalloc(s->xip, sizeof(uint64) * (s->nxip + 1));
	for (i = s->nxip; i > 0 && s->xip[i - 1] > x; i--)
		s->xip[i] = s->xip[i - 1];
	s->xip[i] = x;
	s->nxip++;
	s->xmin = Min(s->xmin, x);
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
