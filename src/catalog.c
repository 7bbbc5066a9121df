/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reads and writes of cq.queries (and of the rows of cq.offsets and
 *	  cq.progress that go with a query as a whole: reset, restore); the
 *	  per-batch rows are progress.c's.
 *
 * Callers have SPI connected and are inside a transaction.  Every statement
 * runs in a superuser section (security.c: search_path pinned, operators
 * spelled OPERATOR(pg_catalog.x)): users get SELECT only on the catalog, so
 * offsets cannot be forged, and since 0.2 only on the rows of their own
 * queries (row-level security), which pg_cq itself must see all of.
 * Results are allocated in the caller's memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "rowcache.h"
#include "colmap.h"
#include "wakeup.h"
#include "security.h"
#include "sql_builder.h"
#include "options.h"
#include "inval.h"
#include "settings_pin.h"

#define QUERY_COLUMNS \
	"name, id, owner::pg_catalog.oid, source::pg_catalog.oid, target::pg_catalog.oid, output_mode, " \
	"\"trigger\", event_time, watermark_delay::pg_catalog.text, max_rows_per_trigger, starting, " \
	"state_storage, complete_refresh, state, query_tree, state_table::pg_catalog.oid, " \
	"start_offset::pg_catalog.text, run_id::pg_catalog.text, cluster_id, timezone"

/*
 * spi_text
 *	  Text value of column `col` of the first SPI row, copied; NULL if
 *	  null.  text and name columns (all but a few of a query's row, read for
 *	  every batch) are copied directly, without a look-up of the type's
 *	  output function per value as SPI_getvalue does.
 */
static char *
spi_text(int col)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	Datum		d;

	switch (SPI_gettypeid(desc, col))
	{
		case TEXTOID:
			d = SPI_getbinval(tup, desc, col, &isnull);
			return isnull ? NULL : TextDatumGetCString(d);
		case NAMEOID:
			d = SPI_getbinval(tup, desc, col, &isnull);
			return isnull ? NULL : pstrdup(NameStr(*DatumGetName(d)));
		default:
			return SPI_getvalue(tup, desc, col);
	}
}

static int64
spi_int64(int col, int64 ifnull)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	if (isnull)
		return ifnull;
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case OIDOID:
			return DatumGetObjectId(d);
		default:
			return DatumGetInt64(d);
	}
}

/*
 * cq_catalog_version's answer, for the local transaction version_lxid; and
 * whether it still holds for later transactions (version_valid: no
 * relation cache invalidation came since; version_rel is cq.queries)
 */
static int	version_known = 0;
static LocalTransactionId version_lxid = InvalidLocalTransactionId;
static bool version_valid = false;
static Oid	version_rel = InvalidOid;
static Oid	version_ext = InvalidOid;	/* pg_extension OID of pg_cq, read with it */
static bool version_callback = false;

/*
 * forget_version
 *	  Relation cache callback: cq_catalog_version asks again when
 *	  cq.queries (version_rel) changed, or on a reset of the whole cache.
 *	  Other relations' invalidations (autovacuum analyzing a target, a
 *	  batch's own writes) do not change the installed version, and
 *	  forgetting on them made each batch read the catalog again
 *	  (test/72_scan_horizon under load).  So an upgrade script must change
 *	  cq.queries (0.1 -> 0.2 alters it: row level security), as t/008
 *	  checks with batches running across ALTER EXTENSION UPDATE.
 */
static void
forget_version(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && relid != version_rel)
		return;
	version_lxid = InvalidLocalTransactionId;
	version_valid = false;
}

/*
 * cq_catalog_function
 *	  OID of pg_cq's function cq.<name>(argtypes), or InvalidOid when the
 *	  installed catalog has none (functions that came with a later version
 *	  than the database's) or the extension is not there.  Not cached: an
 *	  extension dropped and created again gives its functions new OIDs.
 */
Oid
cq_catalog_function(const char *name, int nargs, const Oid *argtypes)
{
	Oid			nsp = get_namespace_oid("cq", true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
						   PointerGetDatum(buildoidvector(argtypes, nargs)),
						   ObjectIdGetDatum(nsp));
}

/*
 * cq_catalog_version
 *	  Version of the pg_cq catalog installed in the current database, as
 *	  CQ_CATALOG_0_1, CQ_CATALOG_0_2, ...; 0 when pg_cq is not installed.
 *	  The library serves every database of the cluster, each with the
 *	  catalog of the version it installed or last updated to (ALTER
 *	  EXTENSION pg_cq UPDATE): code that reads or writes something a later
 *	  version added must ask first.
 *
 *	  The answer holds until the end of the transaction: cq.queries is
 *	  locked (ACCESS SHARE) before the version is read, and an update
 *	  alters cq.queries before anything else of the catalog, so it waits
 *	  for this transaction, or this transaction waited for it and reads
 *	  the version it committed.  (A batch that chose its SQL for 0.1 never
 *	  meets a 0.2 catalog.)  So the answer is remembered for the rest of
 *	  the transaction, unless a relation cache invalidation arrives (an
 *	  update in this very transaction alters cq.queries).
 */
int
cq_catalog_version(void)
{
	Oid			ext;
	Oid			cq_nsp;
	Oid			queries;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	int			version = 0;

	if (!version_callback)
	{
		cq_relcache_callback(forget_version, (Datum) 0);
		version_callback = true;
	}
	if (version_lxid == MyProc->lxid && version_lxid != InvalidLocalTransactionId)
		return version_known;
	if (version_valid)
	{
		/*
		 * An earlier transaction's answer (a worker asks once per batch):
		 * it holds unless cq.queries changed since.  Invalidations that
		 * committed before this transaction began were taken at its start;
		 * locking cq.queries waits for an update under way and takes its
		 * invalidation (unless this transaction holds the lock already,
		 * which keeps any update out).  Either clears version_valid.
		 */
		LockRelationOid(version_rel, AccessShareLock);
		if (version_valid)
		{
			version_lxid = MyProc->lxid;
			return version_known;
		}
	}

	ext = get_extension_oid("pg_cq", true);
	if (!OidIsValid(ext))
		return 0;
	cq_nsp = get_namespace_oid("cq", true);
	queries = OidIsValid(cq_nsp) ? get_relname_relid("queries", cq_nsp) : InvalidOid;
	if (OidIsValid(queries))
		LockRelationOid(queries, AccessShareLock);
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
		{
			char	   *v = TextDatumGetCString(d);

			/* "0.N" -> N; later majors would need their own numbering */
			if (strncmp(v, "0.", 2) == 0)
				version = atoi(v + 2);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	version_known = version;
	version_lxid = MyProc->lxid;
	version_valid = OidIsValid(queries);
	version_rel = queries;
	version_ext = ext;
	return version;
}

/*
 * fetch_query
 *	  The query whose cq.queries row matches `cond` (over $1..$nargs), or
 *	  NULL.  With lock, its row is locked FOR NO KEY UPDATE until the end of
 *	  the transaction: that is what serializes batches of one query (worker
 *	  or cq.run alike).
 */
static CqQuery *
fetch_query(const char *cond, int nargs, Oid *types, Datum *values, bool lock)
{
	bool		v02 = cq_catalog_version() >= CQ_CATALOG_0_2;
	CqQuery    *q;
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec_cached(psprintf("SELECT " QUERY_COLUMNS ", %s FROM cq.queries WHERE %s%s",
								v02 ? "schema, join_source::pg_catalog.oid, join_event_time, "
								"join_watermark_delay::pg_catalog.text, state_path, "
								"pg_catalog.array_to_string(settings, E'\\n')" : "NULL::pg_catalog.name", cond,
								lock ? " FOR NO KEY UPDATE" : ""),
					   SPI_OK_SELECT, nargs, types, values, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 0)
		return NULL;

	q = palloc0(sizeof(CqQuery));
	q->name = spi_text(1);
	q->id = (int32) spi_int64(2, 0);
	q->owner = (Oid) spi_int64(3, 0);
	q->source = (Oid) spi_int64(4, 0);
	q->target = (Oid) spi_int64(5, 0);
	cq_options_init(&q->opts);
	q->opts.output_mode = spi_text(6);
	q->opts.trigger = spi_text(7);
	q->opts.event_time = spi_text(8);
	q->opts.watermark = spi_text(9);
	q->opts.max_rows_per_trigger = spi_int64(10, 0);
	q->opts.starting = spi_text(11);
	q->opts.state_storage = spi_text(12);
	q->opts.complete_refresh = spi_text(13);
	q->state = spi_text(14);
	q->query_tree = spi_text(15);
	q->state_table = (Oid) spi_int64(16, 0);
	q->start_offset = spi_text(17);
	q->run_id = spi_text(18);
	q->cluster_id = spi_text(19);
	q->timezone = spi_text(20);
	q->schema = spi_text(21);
	if (v02)
	{
		/* the second stream of a join (joinspec.c) */
		q->opts.join_source_relid = (Oid) spi_int64(22, 0);
		q->opts.join_event_time = spi_text(23);
		q->opts.join_watermark = spi_text(24);
		q->opts.state_path = spi_text(25);
		q->settings = spi_text(26);
	}
	cq_options_finish(&q->opts);
	q->opts.source_relid = q->source;	/* which table of a join is the stream */
	return q;
}

/*
 * Direct read of a query's row by its id.
 *
 * Every batch (worker or cq.run) reads its query's row by id and locks it
 * FOR NO KEY UPDATE.  As a statement that is a parse and plan in every new
 * backend and an executor start (with its row mark) per batch; read through
 * the unique index on id and locked with table_tuple_lock as ExecLockRows
 * locks a row of SELECT ... FOR NO KEY UPDATE, it is an index probe and a
 * tuple lock, with the same outcome: the lock waits for a running batch
 * (or any transaction that locked or changed the row), then the latest
 * committed version of the row is locked and read (READ COMMITTED); a row
 * deleted meanwhile, or whose id changed, is not found; under REPEATABLE
 * READ or SERIALIZABLE a concurrent change is a serialization failure.
 * The statement stays for a catalog whose id column or index is not the
 * expected one, or whose columns have other types.
 */

/* How a column of cq.queries is read directly. */
typedef enum
{
	QC_TEXT,					/* as text: its output function, as ::text */
	QC_OID,						/* oid, regclass, regrole: the OID */
	QC_INT,						/* int4 or int8 */
	QC_LINES					/* text[]: its elements, one a line */
} QueryColKind;

/*
 * query_col
 *	  Column att (InvalidAttrNumber: none) of the row in slot (of cq.queries, rel), into *str or
 *	  *num (NULL or ifnull when null); false if the table has no such
 *	  column or it has a type this does not read as kind.
 */
static bool
query_col(Relation rel, TupleTableSlot *slot, AttrNumber att, QueryColKind kind,
		  char **str, int64 *num, int64 ifnull)
{
	Oid			type;
	bool		isnull;
	Datum		d;

	if (att == InvalidAttrNumber)
		return false;
	type = TupleDescAttr(RelationGetDescr(rel), att - 1)->atttypid;
	d = slot_getattr(slot, att, &isnull);
	switch (kind)
	{
		case QC_TEXT:
			if (isnull)
				*str = NULL;
			else if (type == TEXTOID)
				*str = TextDatumGetCString(d);
			else if (type == NAMEOID)
				*str = pstrdup(NameStr(*DatumGetName(d)));
			else
			{
				Oid			out;
				bool		varlena;

				getTypeOutputInfo(type, &out, &varlena);
				*str = OidOutputFunctionCall(out, d);
			}
			return true;
		case QC_OID:
			if (type != OIDOID && type != REGCLASSOID && type != REGROLEOID)
				return false;
			*num = isnull ? ifnull : DatumGetObjectId(d);
			return true;
		case QC_INT:
			if (type != INT4OID && type != INT8OID)
				return false;
			*num = isnull ? ifnull : type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
			return true;
		case QC_LINES:
			if (type != TEXTARRAYOID)
				return false;
			*str = isnull ? NULL : cq_settings_pin_lines(d);
			return true;
	}
	return false;
}

/* The columns query_from_slot reads, in query_col_names' order (0.2 ones last). */
typedef enum
{
	QA_NAME,
	QA_ID,
	QA_OWNER,
	QA_SOURCE,
	QA_TARGET,
	QA_OUTPUT_MODE,
	QA_TRIGGER,
	QA_EVENT_TIME,
	QA_WATERMARK_DELAY,
	QA_MAX_ROWS_PER_TRIGGER,
	QA_STARTING,
	QA_STATE_STORAGE,
	QA_COMPLETE_REFRESH,
	QA_STATE,
	QA_QUERY_TREE,
	QA_STATE_TABLE,
	QA_START_OFFSET,
	QA_RUN_ID,
	QA_CLUSTER_ID,
	QA_TIMEZONE,
	QA_COUNT_01,				/* the columns of a 0.1 catalog */
	QA_SCHEMA = QA_COUNT_01,
	QA_JOIN_SOURCE,
	QA_JOIN_EVENT_TIME,
	QA_JOIN_WATERMARK_DELAY,
	QA_STATE_PATH,
	QA_SETTINGS,
	QA_COUNT
} QueryAtt;

static const char *const query_col_names[QA_COUNT] = {
	"name",
	"id",
	"owner",
	"source",
	"target",
	"output_mode",
	"trigger",
	"event_time",
	"watermark_delay",
	"max_rows_per_trigger",
	"starting",
	"state_storage",
	"complete_refresh",
	"state",
	"query_tree",
	"state_table",
	"start_offset",
	"run_id",
	"cluster_id",
	"timezone",
	"schema",
	"join_source",
	"join_event_time",
	"join_watermark_delay",
	"state_path",
	"settings",
};
static CqColMap query_cols = CQ_COLMAP_INIT;

/*
 * query_copy
 *	  A copy of q in cxt: the struct, its strings in one block, its
 *	  intervals.
 */
static CqQuery *
query_copy(MemoryContext cxt, const CqQuery *q)
{
	CqQuery    *c = MemoryContextAlloc(cxt, sizeof(CqQuery));
	char	  **strs[] = {&c->name, &c->schema, &c->state, &c->query_tree, &c->start_offset,
		&c->run_id, &c->cluster_id, &c->timezone, &c->opts.output_mode, &c->opts.trigger,
		&c->opts.event_time, &c->opts.watermark, &c->opts.starting, &c->opts.source,
		&c->opts.state_storage, &c->opts.complete_refresh, &c->opts.join_event_time,
		&c->opts.join_watermark, &c->opts.state_path, &c->settings};
	Interval  **ivs[] = {&c->opts.watermark_delay, &c->opts.join_watermark_delay};
	size_t		lens[lengthof(strs)];
	size_t		total = 0;
	char	   *p;

	*c = *q;
	for (int i = 0; i < lengthof(strs); i++)
		total += (lens[i] = *strs[i] ? strlen(*strs[i]) + 1 : 0);
	p = MemoryContextAlloc(cxt, Max(total, 1));
	for (int i = 0; i < lengthof(strs); i++)
		if (*strs[i] != NULL)
		{
			memcpy(p, *strs[i], lens[i]);
			*strs[i] = p;
			p += lens[i];
		}
	for (int i = 0; i < lengthof(ivs); i++)
		if (*ivs[i] != NULL)
		{
			Interval   *iv = MemoryContextAlloc(cxt, sizeof(Interval));

			*iv = **ivs[i];
			*ivs[i] = iv;
		}
	return c;
}

/*
 * query_read
 *	  The columns of the cq.queries row in slot, into a new CqQuery, before
 *	  cq_options_finish; NULL when a column is missing or of another type.
 */
static CqQuery *
query_read(Relation rel, TupleTableSlot *slot, bool v02, const AttrNumber *att)
{
	CqQuery    *q = palloc0(sizeof(CqQuery));
	int64		n[8];
	char	   *dummy;
	bool		ok;

	cq_options_init(&q->opts);
	ok = query_col(rel, slot, att[QA_NAME], QC_TEXT, &q->name, NULL, 0) &&
		query_col(rel, slot, att[QA_ID], QC_INT, &dummy, &n[0], 0) &&
		query_col(rel, slot, att[QA_OWNER], QC_OID, &dummy, &n[1], 0) &&
		query_col(rel, slot, att[QA_SOURCE], QC_OID, &dummy, &n[2], 0) &&
		query_col(rel, slot, att[QA_TARGET], QC_OID, &dummy, &n[3], 0) &&
		query_col(rel, slot, att[QA_OUTPUT_MODE], QC_TEXT, &q->opts.output_mode, NULL, 0) &&
		query_col(rel, slot, att[QA_TRIGGER], QC_TEXT, &q->opts.trigger, NULL, 0) &&
		query_col(rel, slot, att[QA_EVENT_TIME], QC_TEXT, &q->opts.event_time, NULL, 0) &&
		query_col(rel, slot, att[QA_WATERMARK_DELAY], QC_TEXT, &q->opts.watermark, NULL, 0) &&
		query_col(rel, slot, att[QA_MAX_ROWS_PER_TRIGGER], QC_INT, &dummy, &n[4], 0) &&
		query_col(rel, slot, att[QA_STARTING], QC_TEXT, &q->opts.starting, NULL, 0) &&
		query_col(rel, slot, att[QA_STATE_STORAGE], QC_TEXT, &q->opts.state_storage, NULL, 0) &&
		query_col(rel, slot, att[QA_COMPLETE_REFRESH], QC_TEXT, &q->opts.complete_refresh, NULL, 0) &&
		query_col(rel, slot, att[QA_STATE], QC_TEXT, &q->state, NULL, 0) &&
		query_col(rel, slot, att[QA_QUERY_TREE], QC_TEXT, &q->query_tree, NULL, 0) &&
		query_col(rel, slot, att[QA_STATE_TABLE], QC_OID, &dummy, &n[5], 0) &&
		query_col(rel, slot, att[QA_START_OFFSET], QC_TEXT, &q->start_offset, NULL, 0) &&
		query_col(rel, slot, att[QA_RUN_ID], QC_TEXT, &q->run_id, NULL, 0) &&
		query_col(rel, slot, att[QA_CLUSTER_ID], QC_TEXT, &q->cluster_id, NULL, 0) &&
		query_col(rel, slot, att[QA_TIMEZONE], QC_TEXT, &q->timezone, NULL, 0);
	if (ok && v02)
		ok = query_col(rel, slot, att[QA_SCHEMA], QC_TEXT, &q->schema, NULL, 0) &&
			query_col(rel, slot, att[QA_JOIN_SOURCE], QC_OID, &dummy, &n[6], 0) &&
			query_col(rel, slot, att[QA_JOIN_EVENT_TIME], QC_TEXT, &q->opts.join_event_time, NULL, 0) &&
			query_col(rel, slot, att[QA_JOIN_WATERMARK_DELAY], QC_TEXT, &q->opts.join_watermark, NULL, 0) &&
			query_col(rel, slot, att[QA_STATE_PATH], QC_TEXT, &q->opts.state_path, NULL, 0) &&
			query_col(rel, slot, att[QA_SETTINGS], QC_LINES, &q->settings, NULL, 0);
	if (!ok)
		return NULL;
	q->id = (int32) n[0];
	q->owner = (Oid) n[1];
	q->source = (Oid) n[2];
	q->target = (Oid) n[3];
	q->opts.max_rows_per_trigger = n[4];
	q->state_table = (Oid) n[5];
	if (v02)
		q->opts.join_source_relid = (Oid) n[6];
	return q;
}

/*
 * query_from_slot
 *	  The CqQuery of the cq.queries row in slot, as fetch_query makes it;
 *	  NULL when a column is missing or of another type.  What this made of
 *	  the same row bytes before is copied instead (rowcache.c; the text of
 *	  an interval column follows IntervalStyle, the columns read the
 *	  catalog's version): the finished options too, unless a default of
 *	  theirs comes from a setting (a row without state_storage).
 */
static CqQuery *
query_from_slot(Relation rel, TupleTableSlot *slot, bool v02)
{
	CqQuery    *q;
	const AttrNumber *att = cq_colmap_get(&query_cols, rel, query_col_names,
										  v02 ? QA_COUNT : QA_COUNT_01);
	int64		id;
	char	   *dummy;
	HeapTuple	tup = NULL;
	bool		should_free = false;
	CqRowCacheEntry *e = NULL;
	uint32		variant = (uint32) v02 | ((uint32) IntervalStyle << 1);
	bool		hit = false;
	bool		keep;
	MemoryContext cxt;

	if (query_col(rel, slot, att[QA_ID], QC_INT, &dummy, &id, 0))
	{
		HeapTuple	stored = ExecFetchSlotHeapTuple(slot, false, &should_free);

		/* a long query's row: its TOASTed values fetched, compared as they are stored */
		tup = cq_rowcache_inline(stored, RelationGetDescr(rel));
		if (tup != stored)
		{
			if (should_free)
				heap_freetuple(stored);
			should_free = true;
		}
		e = cq_rowcache_lookup(RelationGetRelid(rel), (int32) id, variant, tup, &hit);
	}
	if (hit && e->payload != NULL)
	{
		q = query_copy(CurrentMemoryContext, e->payload);
		if (should_free)
			heap_freetuple(tup);
		return q;
	}
	q = query_read(rel, slot, v02, att);
	if (q == NULL)
		return NULL;
	keep = q->opts.state_storage != NULL;
	cq_options_finish(&q->opts);
	q->opts.source_relid = q->source;
	cxt = e ? cq_rowcache_fill(e, variant, tup) : NULL;
	if (cxt != NULL && keep)
		e->payload = query_copy(cxt, q);
	if (should_free)
		heap_freetuple(tup);
	return q;
}

/*
 * unique_btree_index
 *	  The valid unique btree index of rel on exactly the columns atts (in
 *	  that order, of operator classes for types when types is not NULL; no
 *	  expressions, no predicate), opened with AccessShareLock; NULL if none.
 */
static Relation
unique_btree_index(Relation rel, int nkeys, const AttrNumber *atts, const Oid *types)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Relation	idx = NULL;

	foreach(lc, indexes)
	{
		Relation	i = index_open(lfirst_oid(lc), AccessShareLock);
		bool		match = i->rd_index->indisunique && i->rd_index->indisvalid &&
			i->rd_index->indnkeyatts == nkeys && i->rd_rel->relam == BTREE_AM_OID &&
			RelationGetIndexExpressions(i) == NIL && RelationGetIndexPredicate(i) == NIL;

		for (int k = 0; match && k < nkeys; k++)
			match = i->rd_index->indkey.values[k] == atts[k] &&
				(types == NULL || i->rd_opcintype[k] == types[k]);
		if (match)
		{
			idx = i;
			break;
		}
		index_close(i, AccessShareLock);
	}
	list_free(indexes);
	return idx;
}

/*
 * The index a direct read of cq.queries found last, per call site: kept
 * until cq.queries' or the index's relation cache entry is invalidated
 * (inval.c), which any change of the table's index list or of the
 * index's definition does; then unique_btree_index looks again.  Opening
 * the table's other indexes (and locking them) to find it was ~3k
 * instructions a read.
 */
typedef struct FoundIndex
{
	Oid			rel;			/* cq.queries, or InvalidOid: look again */
	Oid			idx;
	int			nkeys;
	AttrNumber	atts[2];
} FoundIndex;

static FoundIndex found_by_id;
static FoundIndex found_by_name;

/* Relation cache callback: forget what relid's invalidation may change. */
static void
found_index_inval(Datum arg, Oid relid)
{
	FoundIndex *fs[] = {&found_by_id, &found_by_name};

	for (int i = 0; i < lengthof(fs); i++)
		if (!OidIsValid(relid) || relid == fs[i]->rel || relid == fs[i]->idx)
			fs[i]->rel = InvalidOid;
}

/*
 * found_unique_index
 *	  unique_btree_index through f: the index found before for the same
 *	  columns, when nothing about it or rel was invalidated since.
 */
static Relation
found_unique_index(FoundIndex *f, Relation rel, int nkeys, const AttrNumber *atts,
				   const Oid *types)
{
	Relation	idx;

	Assert(nkeys <= lengthof(f->atts));
	if (f->rel == RelationGetRelid(rel) && f->nkeys == nkeys &&
		memcmp(f->atts, atts, sizeof(AttrNumber) * nkeys) == 0)
		return index_open(f->idx, AccessShareLock);
	idx = unique_btree_index(rel, nkeys, atts, types);
	if (idx == NULL)
		return NULL;
	cq_relcache_callback(found_index_inval, (Datum) 0);
	f->rel = RelationGetRelid(rel);
	f->idx = RelationGetRelid(idx);
	f->nkeys = nkeys;
	memcpy(f->atts, atts, sizeof(AttrNumber) * nkeys);
	return idx;
}

/*
 * push_statement_snapshot
 *	  Push a snapshot as SPI takes one for a statement (seeing this
 *	  transaction's earlier commands), for the direct catalog reads below
 *	  that replace statements; PopActiveSnapshot ends it.
 */
static void
push_statement_snapshot(void)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
}

/*
 * fetch_query_by_id_direct
 *	  fetch_query for "id = id" read directly (see above).  Returns false,
 *	  having read and locked nothing, when the statement must do it; else
 *	  true with *result the query or NULL.
 */
static bool
fetch_query_by_id_direct(int32 id, bool lock, bool v02, CqQuery **result)
{
	Oid			relid = cq_colmap_cq_relid("queries");
	AttrNumber	idatt;
	Relation	rel;
	Relation	idx = NULL;
	ScanKeyData key;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snap;
	bool		found;
	CqQuery    *q = NULL;

	if (!OidIsValid(relid))
		return false;
	/* the table lock of the statement: RowShareLock with FOR ... UPDATE */
	rel = table_open(relid, lock ? RowShareLock : AccessShareLock);
	idatt = cq_rel_column(rel, "id", INT4OID);
	idx = idatt == InvalidAttrNumber ? NULL : found_unique_index(&found_by_id, rel, 1, &idatt, NULL);
	if (idx == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}

	push_statement_snapshot();
	snap = GetActiveSnapshot();

	slot = table_slot_create(rel, NULL);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(id));
	scan = index_beginscan(rel, idx, snap, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);

	if (found && lock)
	{
		TM_FailureData tmfd;
		TM_Result	res;
		int			flags = TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS;

		/* as ExecLockRows for a row mark of FOR NO KEY UPDATE */
		if (!IsolationUsesXactSnapshot())
			flags |= TUPLE_LOCK_FLAG_FIND_LAST_VERSION;
		res = table_tuple_lock(rel, &slot->tts_tid, snap, slot, GetCurrentCommandId(true),
							   LockTupleNoKeyExclusive, LockWaitBlock, flags, &tmfd);
		switch (res)
		{
			case TM_Ok:
				/* a newer version: the condition is checked again, as EvalPlanQual does */
				if (tmfd.traversed)
				{
					bool		isnull;
					Datum		d = slot_getattr(slot, idatt, &isnull);

					found = !isnull && DatumGetInt32(d) == id;
				}
				break;
			case TM_SelfModified:
				/* changed by this very transaction since the snapshot: skipped, as there */
				found = false;
				break;
			case TM_Updated:
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to concurrent update")));
				elog(ERROR, "pg_cq: unexpected table_tuple_lock status: %u", res);
				break;
			case TM_Deleted:
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to concurrent delete")));
				found = false;
				break;
			default:
				elog(ERROR, "pg_cq: unrecognized table_tuple_lock status: %u", res);
		}
	}
	if (found)
		q = query_from_slot(rel, slot, v02);
	ExecDropSingleTupleTableSlot(slot);
	PopActiveSnapshot();
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	if (found && q == NULL)
	{
		/* columns not as expected: the statement reads the row (locked already) */
		return false;
	}
	*result = q;
	return true;
}

/*
 * fetch_query_by_name_direct
 *	  fetch_query for "schema = nsp AND name = name" (0.2; "name = name"
 *	  on 0.1), unlocked, read directly as fetch_query_by_id_direct reads by
 *	  id: through the unique index on exactly those columns (the primary
 *	  key), with a snapshot as SPI takes one for a statement.  The name
 *	  look-up is the first statement of CALL cq.run; in a new backend (how
 *	  pg_cron runs it) its parse and plan were a warm-up that nothing else
 *	  needed.  Returns false, having read nothing, when the statement must
 *	  do it (no such index, columns of other types); else true with
 *	  *result the query or NULL.
 */
static Datum name_datum(const char *s);

static bool
fetch_query_by_name_direct(const char *nspname, const char *name, bool v02, CqQuery **result)
{
	Oid			relid = cq_colmap_cq_relid("queries");
	AttrNumber	atts[2];
	Oid			types[2] = {NAMEOID, TEXTOID};
	RegProcedure eqs[2] = {F_NAMEEQ, F_TEXTEQ};
	Datum		values[2];
	int			nkeys = v02 ? 2 : 1;
	int			first = v02 ? 0 : 1;
	Relation	rel;
	Relation	idx = NULL;
	ScanKeyData keys[2];
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found;
	CqQuery    *q = NULL;

	if (!OidIsValid(relid) || (v02 && nspname == NULL))
		return false;
	rel = table_open(relid, AccessShareLock);
	atts[0] = cq_rel_column(rel, "schema", types[0]);
	atts[1] = cq_rel_column(rel, "name", types[1]);
	if (atts[first] != InvalidAttrNumber && atts[1] != InvalidAttrNumber)
		idx = found_unique_index(&found_by_name, rel, nkeys, atts + first, types + first);
	if (idx == NULL)
	{
		table_close(rel, NoLock);
		return false;
	}

	values[0] = v02 ? name_datum(nspname) : (Datum) 0;
	values[1] = CStringGetTextDatum(name);
	for (int k = 0; k < nkeys; k++)
		ScanKeyEntryInitialize(&keys[k], 0, k + 1, BTEqualStrategyNumber, InvalidOid,
							   idx->rd_indcollation[k], eqs[first + k], values[first + k]);

	push_statement_snapshot();

	slot = table_slot_create(rel, NULL);
	scan = index_beginscan(rel, idx, GetActiveSnapshot(), nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	if (found)
		q = query_from_slot(rel, slot, v02);
	ExecDropSingleTupleTableSlot(slot);
	PopActiveSnapshot();
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	if (found && q == NULL)
		return false;			/* columns not as expected: the statement reads it */
	*result = q;
	return true;
}

/*
 * name_datum
 *	  A C string as a datum of type name.
 */
static Datum
name_datum(const char *s)
{
	return DirectFunctionCall1(namein, CStringGetDatum(s));
}

/*
 * cq_catalog_get_query_in
 *	  Load the query named `name` (exactly) of schema nsp; no privilege
 *	  is checked.  On a 0.1 catalog the schema does not matter.  With
 *	  lock, see fetch_query; without, read directly
 *	  (fetch_query_by_name_direct) when the catalog allows.
 */
CqQuery *
cq_catalog_get_query_in(Oid nsp, const char *name, bool missing_ok, bool lock)
{
	Oid			types[2] = {TEXTOID, NAMEOID};
	Datum		values[2];
	char	   *nspname = get_namespace_name(nsp);
	bool		v02 = cq_catalog_version() >= CQ_CATALOG_0_2;
	CqQuery    *q = NULL;

	values[0] = CStringGetTextDatum(name);
	/* unlocked: read directly when the catalog is as expected */
	if (lock || !fetch_query_by_name_direct(nspname, name, v02, &q))
	{
		if (!v02)
			q = fetch_query("name OPERATOR(pg_catalog.=) $1", 1, types, values, lock);
		else if (nspname != NULL)
		{
			values[1] = name_datum(nspname);
			q = fetch_query("schema OPERATOR(pg_catalog.=) $2 AND name OPERATOR(pg_catalog.=) $1",
							2, types, values, lock);
		}
	}
	if (q == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous query \"%s\" does not exist", name)));
	return q;
}

/*
 * cq_catalog_get_query_by_id
 *	  Load the query with internal id `id`: how pg_cq finds a query again
 *	  once a name was resolved (a later transaction of CALL cq.run, a
 *	  worker).  With lock, see fetch_query.  Read directly
 *	  (fetch_query_by_id_direct), else by the statement.
 */
CqQuery *
cq_catalog_get_query_by_id(int32 id, bool missing_ok, bool lock)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	CqQuery    *q = NULL;

	if (!fetch_query_by_id_direct(id, lock, cq_catalog_version() >= CQ_CATALOG_0_2, &q))
		q = fetch_query("id OPERATOR(pg_catalog.=) $1", 1, types, values, lock);

	if (q == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("continuous query with id %d does not exist", id),
				 errdetail("It was dropped meanwhile.")));
	return q;
}

/*
 * cq_catalog_rows_of
 *	  The condition that picks one query's rows of cq.offsets or
 *	  cq.progress (as `alias`): its name is parameter $name_param and,
 *	  since 0.2, its schema (type name) $schema_param.  On a 0.1 catalog,
 *	  where names are unique, $schema_param is not used (pass NULL).
 */
char *
cq_catalog_rows_of(const char *alias, int name_param, int schema_param)
{
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return psprintf("%s.name OPERATOR(pg_catalog.=) $%d", alias, name_param);
	return psprintf("%s.schema OPERATOR(pg_catalog.=) $%d AND %s.name OPERATOR(pg_catalog.=) $%d",
					alias, schema_param, alias, name_param);
}

/*
 * cq_catalog_key_values
 *	  The parameters of cq_catalog_rows_of for query q: its name as text
 *	  and its schema as name (null on a 0.1 catalog).
 */
void
cq_catalog_key_values(CqQuery *q, Datum *name, Datum *schema, char *schema_null)
{
	*name = CStringGetTextDatum(q->name);
	*schema = q->schema ? name_datum(q->schema) : (Datum) 0;
	*schema_null = q->schema ? ' ' : 'n';
}

/*
 * direct_open
 *	  Open pg_cq's table cq.<relname> for a heap scan (the caller's) with a
 *	  snapshot pushed as SPI takes one for a statement, *att its column
 *	  <column>; NULL, having opened nothing, unless the table is there with
 *	  that column of that type (callers then read it by a statement).
 *	  direct_close ends it.
 */
static Relation
direct_open(const char *relname, const char *column, Oid type, AttrNumber *att)
{
	Oid			relid = cq_colmap_cq_relid(relname);
	Relation	rel;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return NULL;
	rel = table_open(relid, AccessShareLock);
	*att = cq_rel_column(rel, column, type);
	if (*att == InvalidAttrNumber)
	{
		table_close(rel, AccessShareLock);
		return NULL;
	}
	push_statement_snapshot();
	return rel;
}

/*
 * direct_close
 *	  Pop direct_open's snapshot and close the table (its lock kept).
 */
static void
direct_close(Relation rel)
{
	PopActiveSnapshot();
	table_close(rel, NoLock);
}

/*
 * installation_id_direct
 *	  The id of cq.installation's row as text, read with a heap scan and a
 *	  snapshot as SPI takes one for a statement (a statement to parse and
 *	  plan in every new backend otherwise); *id NULL when there is no row.
 *	  False, having read nothing, when the table is not as expected (the
 *	  statement reads it then).
 */
static bool
installation_id_direct(char **id)
{
	AttrNumber	att;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	*id = NULL;
	if ((rel = direct_open("installation", "id", UUIDOID, &att)) == NULL)
		return false;
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	if ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, att, RelationGetDescr(rel), &isnull);

		if (!isnull)
			*id = DatumGetCString(DirectFunctionCall1(uuid_out, d));
	}
	table_endscan(scan);
	direct_close(rel);
	return true;
}

/*
 * cq_catalog_cluster_id
 *	  The identifier of the installation a query's offsets (transaction
 *	  ids) belong to, as text.  Catalog 0.2: the id in cq.installation, made
 *	  by CREATE EXTENSION and carried over with the database's files by
 *	  pg_upgrade, but not by pg_dump (a restored database gets a new one,
 *	  and its queries start over: restore.c).  Catalog 0.1: the system
 *	  identifier, which pg_upgrade changes too.  Cached per backend for the
 *	  extension's OID (DROP and CREATE EXTENSION make a new one).  Caller
 *	  has SPI connected.
 */
char *
cq_catalog_cluster_id(void)
{
	static Oid	cached_ext = InvalidOid;
	static char *cached_id = NULL;
	Oid			ext;
	CqSecurity	sec;
	char	   *id = NULL;

	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return psprintf(UINT64_FORMAT, GetSystemIdentifier());
	/* the extension's OID as cq_catalog_version read it (DROP EXTENSION makes it read again) */
	ext = version_ext;
	if (cached_id != NULL && ext == cached_ext)
		return pstrdup(cached_id);

	if (!installation_id_direct(&id))
	{
		cq_security_superuser(&sec);
		cq_spi_exec("SELECT id::pg_catalog.text FROM cq.installation", SPI_OK_SELECT, 0, NULL, NULL, NULL);
		cq_security_restore(&sec);
		if (SPI_processed > 0)
			id = spi_text(1);
	}
	if (id == NULL)
		return psprintf(UINT64_FORMAT, GetSystemIdentifier());	/* row deleted by hand */
	if (cached_id)
		pfree(cached_id);
	cached_id = MemoryContextStrdup(TopMemoryContext, id);
	cached_ext = ext;
	return id;
}

/*
 * cq_catalog_name_for_relation
 *	  Name of the query whose target (as_target) or state table is relid,
 *	  or NULL: since 0.2 schema-qualified and quoted, as cq_catalog_get_query
 *	  finds it whatever the search_path.
 */
char *
cq_catalog_name_for_relation(Oid relid, bool as_target)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	bool		v02 = cq_catalog_version() >= CQ_CATALOG_0_2;
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT name, %s FROM cq.queries WHERE %s OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
						 v02 ? "schema" : "NULL", as_target ? "target" : "state_table"),
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	if (SPI_processed == 0)
		return NULL;
	if (!v02)
		return spi_text(1);
	return quote_qualified_identifier(spi_text(2), spi_text(1));
}

/*
 * cq_catalog_id_for_relation
 *	  Internal id of the query whose target (as_target) or state table is
 *	  relid, or 0.
 */
int32
cq_catalog_id_for_relation(Oid relid, bool as_target)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec(as_target ? "SELECT id FROM cq.queries WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass"
				: "SELECT id FROM cq.queries WHERE state_table OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	return SPI_processed > 0 ? (int32) spi_int64(1, 0) : 0;
}

/*
 * cq_catalog_sync_schema
 *	  Relation relid now lives in schema nsp (ALTER TABLE ... SET SCHEMA),
 *	  or, with relid invalid, schema nsp has a new name (ALTER SCHEMA ...
 *	  RENAME): the queries whose target it is, or whose target is in nsp,
 *	  live in that schema under its current name (their offsets and
 *	  progress rows follow by ON UPDATE CASCADE).  A query whose name is
 *	  taken in the new schema is refused, as a table would be.  Only on a
 *	  0.2 catalog.
 */
void
cq_catalog_sync_schema(Oid relid, Oid nsp)
{
	Oid			types[3] = {OIDOID, OIDOID, NAMEOID};
	Datum		values[3];
	char	   *nspname;
	CqSecurity	sec;

	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return;
	values[0] = ObjectIdGetDatum(relid);
	values[1] = ObjectIdGetDatum(nsp);
	cq_security_superuser(&sec);
	/* the namespace's name as this very command left it */
	cq_spi_exec("SELECT nspname FROM pg_catalog.pg_namespace WHERE oid OPERATOR(pg_catalog.=) $2",
				SPI_OK_SELECT, 2, types, values, NULL);
	if (SPI_processed == 0)
	{
		cq_security_restore(&sec);
		return;
	}
	nspname = spi_text(1);
	values[2] = name_datum(nspname);
	cq_spi_exec("SELECT q.name FROM cq.queries q JOIN pg_catalog.pg_class c "
				"  ON c.oid OPERATOR(pg_catalog.=) q.target::pg_catalog.oid "
				"WHERE (c.oid OPERATOR(pg_catalog.=) $1 OR $1 OPERATOR(pg_catalog.=) 0::pg_catalog.oid) "
				"  AND c.relnamespace OPERATOR(pg_catalog.=) $2 "
				"  AND q.schema OPERATOR(pg_catalog.<>) $3 "
				"  AND EXISTS (SELECT 1 FROM cq.queries o WHERE o.schema OPERATOR(pg_catalog.=) $3 "
				"              AND o.name OPERATOR(pg_catalog.=) q.name "
				"              AND o.id OPERATOR(pg_catalog.<>) q.id) LIMIT 1",
				SPI_OK_SELECT, 3, types, values, NULL);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("continuous query \"%s\" already exists in schema \"%s\"",
						spi_text(1), nspname),
				 errdetail("A continuous query lives in the schema of its target.")));
	cq_wakeup_catalog_changed();
	cq_spi_exec("UPDATE cq.queries q SET schema = $3 FROM pg_catalog.pg_class c "
				"WHERE c.oid OPERATOR(pg_catalog.=) q.target::pg_catalog.oid "
				"  AND (c.oid OPERATOR(pg_catalog.=) $1 OR $1 OPERATOR(pg_catalog.=) 0::pg_catalog.oid) "
				"  AND c.relnamespace OPERATOR(pg_catalog.=) $2 "
				"  AND q.schema OPERATOR(pg_catalog.<>) $3",
				SPI_OK_UPDATE, 3, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * sentinel_direct
 *	  Has cq.state_sentinel a row for query id (*found)?  Read with a heap
 *	  scan and a snapshot as SPI takes one for a statement (a statement to
 *	  parse and plan in every new backend otherwise: the first batch of a
 *	  pg_cron CALL).  False, having read nothing, when the table is not as
 *	  expected (the statement reads it then).
 */
static bool
sentinel_direct(int32 id, bool *found)
{
	AttrNumber	att;
	Relation	rel;
	TableScanDesc scan;
	ScanKeyData key;

	if ((rel = direct_open("state_sentinel", "query_id", INT4OID, &att)) == NULL)
		return false;
	ScanKeyInit(&key, att, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(id));
	scan = table_beginscan(rel, GetActiveSnapshot(), 1, &key);
	*found = heap_getnext(scan, ForwardScanDirection) != NULL;
	table_endscan(scan);
	direct_close(rel);
	return true;
}

/*
 * cq_catalog_state_lost
 *	  Has the query's unlogged state been emptied by a crash-restart?
 */
bool
cq_catalog_state_lost(int32 id)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	CqSecurity	sec;
	bool		found;

	if (sentinel_direct(id, &found))
		return !found;
	cq_security_superuser(&sec);
	cq_spi_exec_cached("SELECT 1 FROM cq.state_sentinel WHERE query_id OPERATOR(pg_catalog.=) $1",
					   SPI_OK_SELECT, 1, types, values, NULL);
	cq_security_restore(&sec);
	return SPI_processed == 0;
}

/*
 * cq_catalog_state_valid
 *	  Mark the query's state as complete (after creation or a rebuild), and
 *	  record a rebuild's duration when rebuild_ms >= 0.
 */
void
cq_catalog_state_valid(int32 id, double rebuild_ms)
{
	Oid			types[2] = {INT4OID, FLOAT8OID};
	Datum		values[2] = {Int32GetDatum(id), Float8GetDatum(rebuild_ms)};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	cq_spi_exec("INSERT INTO cq.state_sentinel VALUES ($1) ON CONFLICT DO NOTHING",
				SPI_OK_INSERT, 1, types, values, NULL);
	if (rebuild_ms >= 0)
		cq_spi_exec("UPDATE cq.queries SET state_rebuilt_at = pg_catalog.now(), state_rebuild_ms = $2 "
					"WHERE id OPERATOR(pg_catalog.=) $1", SPI_OK_UPDATE, 2, types, values, NULL);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_query_value
 *	  Column `column` (a fixed name) of query id's cq.queries row as text,
 *	  or NULL (null, no such query).  For the 0.2 columns read only where
 *	  needed.  Caller has SPI connected.
 */
char *
cq_catalog_query_value(int32 id, const char *column)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(id)};
	CqSecurity	sec;
	char	   *value = NULL;

	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("SELECT %s FROM cq.queries WHERE id OPERATOR(pg_catalog.=) $1", column),
				SPI_OK_SELECT, 1, types, values, NULL);
	if (SPI_processed == 1)
		value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	cq_security_restore(&sec);
	return value;
}

/*
 * cq_catalog_state_path
 *	  Where query id keeps its state and why (cq.queries.state_path), or
 *	  NULL: a stateless query, one created before 0.2 or a 0.1 catalog.
 */
char *
cq_catalog_state_path(int32 id)
{
	if (cq_catalog_version() < CQ_CATALOG_0_2)
		return NULL;
	return cq_catalog_query_value(id, "state_path");
}

/*
 * cq_catalog_set_state_storage
 *	  Record where query id keeps its state (state_storage) and why
 *	  (state_path, since 0.2).
 */
void
cq_catalog_set_state_storage(int32 id, const char *storage, const char *path)
{
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int32GetDatum(id), CStringGetTextDatum(storage),
		path ? CStringGetTextDatum(path) : (Datum) 0};
	char		nulls[3] = {' ', ' ', path ? ' ' : 'n'};
	CqSecurity	sec;

	cq_security_superuser(&sec);
	if (cq_catalog_version() >= CQ_CATALOG_0_2)
		cq_spi_exec("UPDATE cq.queries SET state_storage = $2, state_path = $3 "
					"WHERE id OPERATOR(pg_catalog.=) $1", SPI_OK_UPDATE, 3, types, values, nulls);
	else
		cq_spi_exec("UPDATE cq.queries SET state_storage = $2 WHERE id OPERATOR(pg_catalog.=) $1",
					SPI_OK_UPDATE, 2, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_update_query
 *	  Store a changed query text and tree (already validated).
 */
void
cq_catalog_update_query(int32 id, const char *query_text, const char *query_tree)
{
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int32GetDatum(id),
		query_text ? CStringGetTextDatum(query_text) : (Datum) 0,
	CStringGetTextDatum(query_tree)};
	char		nulls[3] = {' ', query_text ? ' ' : 'n', ' '};
	CqSecurity	sec;

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET query = coalesce($2, query), query_tree = $3 WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 3, types, values, nulls);
	cq_security_restore(&sec);
}

/* ---- background execution (issue 4): query state and live status ---- */

/*
 * cq_catalog_set_state
 *	  Set a query's state ('active', 'paused', 'failed') and last_error
 *	  (NULL clears it).  With only_if, only a query in that state changes.
 *	  The scheduler re-reads the catalog at commit.
 */
void
cq_catalog_set_state(int32 id, const char *state, const char *error,
					 const char *only_if)
{
	Oid			types[4] = {INT4OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	CqSecurity	sec;

	values[0] = Int32GetDatum(id);
	values[1] = CStringGetTextDatum(state);
	values[2] = error ? CStringGetTextDatum(error) : (Datum) 0;
	nulls[2] = error ? ' ' : 'n';
	values[3] = only_if ? CStringGetTextDatum(only_if) : (Datum) 0;
	nulls[3] = only_if ? ' ' : 'n';

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET state = $2, last_error = $3 "
				"WHERE id OPERATOR(pg_catalog.=) $1 AND ($4 IS NULL OR state OPERATOR(pg_catalog.=) $4)",
				SPI_OK_UPDATE, 4, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_reset
 *	  Start a query over: forget its offsets and progress, new run id,
 *	  batch 0 starts from `start_offset`, state 'active'.
 */
void
cq_catalog_reset(CqQuery *q, const char *start_offset)
{
	Oid			types[4] = {TEXTOID, TEXTOID, NAMEOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	CqSecurity	sec;

	cq_catalog_key_values(q, &values[0], &values[2], &nulls[2]);
	values[1] = CStringGetTextDatum(start_offset);
	values[3] = Int32GetDatum(q->id);
	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec(psprintf("WITH o AS (DELETE FROM cq.offsets WHERE %s), "
						 "p AS (DELETE FROM cq.progress WHERE %s) "
						 "UPDATE cq.queries SET run_id = pg_catalog.gen_random_uuid(), state = 'active', "
						 "last_error = NULL, start_offset = $2::pg_catalog.pg_snapshot WHERE id OPERATOR(pg_catalog.=) $4",
						 cq_catalog_rows_of("offsets", 1, 3), cq_catalog_rows_of("progress", 1, 3)),
				SPI_OK_UPDATE, 4, types, values, nulls);
	cq_security_restore(&sec);
}

/*
 * cq_catalog_set_start_offset
 *	  The offset batch 0 of a query starts from (before it has run).
 */
void
cq_catalog_set_start_offset(CqQuery *q, const char *start_offset)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(q->id), CStringGetTextDatum(start_offset)};
	CqSecurity	sec;

	cq_wakeup_catalog_changed();
	cq_security_superuser(&sec);
	cq_spi_exec("UPDATE cq.queries SET start_offset = $2::pg_catalog.pg_snapshot "
				"WHERE id OPERATOR(pg_catalog.=) $1",
				SPI_OK_UPDATE, 2, types, values, NULL);
	cq_security_restore(&sec);
}
