/*-------------------------------------------------------------------------
 *
 * store_private.h
 *	  The shared-memory state store's data structures and the helpers its
 *	  parts share: store.c (the area, the group tables, lookups, the
 *	  overlay), store_xact.c (its publication) and store_fold.c (a batch's fold, the
 *	  image, recovery).  Not for other modules: they use store.h and
 *	  store_fold.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_STORE_PRIVATE_H
#define CQ_STORE_PRIVATE_H

#include "postgres.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "aggregates.h"
#include "fmgr.h"
#include "lib/dshash.h"
#include "store_table.h"
#include "nodes/pg_list.h"
#include "storage/condition_variable.h"
#include "utils/dsa.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

/*
 * New groups put_built links into its table together, ordered by slot
 * (store.c, link_pending): at most this many, whose (hash, node) pairs
 * take 16 bytes each, twice (the sort's copy)
 */
#define STORE_LINK_MAX 262144

/* ENR names the generated statements read */
#define STORE_ENR_PAIRS "cq_mp"
#define STORE_ENR_ALL "cq_all"

/* Directory key: a query of a database. */
typedef struct StoreKey
{
	Oid			dboid;
	int32		query_id;
} StoreKey;

typedef struct StoreDirEntry
{
	StoreKey	key;
	dsa_pointer header;			/* StoreHeader, or InvalidDsaPointer */
} StoreDirEntry;

/* A query's store; fields guarded by its directory entry's lock. */
typedef struct StoreHeader
{
	bool		valid;			/* table reflects batch `published` */
	Oid			rowtype;		/* its rows' type: the state table's of the query
								 * that published it (valid only; a query that got
								 * a dropped one's id has another) */
	dsa_pointer table;			/* groups, a CqGroupTable (valid only) */
	int64		published;		/* batch id the table reflects, -1: before batch 0 */
	int64		inflight;		/* batch being published, -1: none */
	int64		rows;
	int64		bytes;
	bool		has_evict_wm;	/* rows with e <= evict_wm were evicted */
	TimestampTz evict_wm;
	int64		image_batch;	/* batch of the last image written, -1: none known */
	TimestampTz image_at;		/* when it was written (none: when the store was built) */
	int64		image_base;		/* none: the batch before the store's first */
	TimestampTz min_e;			/* no row has e < min_e (PG_INT64_MAX: none has e) */
} StoreHeader;

typedef struct StoreNode
{
	dsa_pointer next;
	dsa_pointer tuple;			/* MinimalTuple right after the node
								 * (alloc_node); invalid until published */
} StoreNode;

/*
 * A changed group in the overlay (session 31: in the area, not in the
 * backend's memory).  Items are allocated OV_ITEM_CHUNK at a time in the
 * area (item_slot); a group's new row is a node of its own in the area
 * (newnode, alloc_node: the row right after the node), not linked into
 * any table until pre-commit (prepare_item) and reached by no other
 * backend before publish, so the backend's private memory does not grow
 * with the groups a batch changes (bench/README.md, "Round 10").  tup is
 * a header over that row (as shared_tuple makes one) or, for a group
 * deleted without a row of its own, over its published row, which does
 * not change before this transaction publishes.
 */
typedef struct OvItem
{
	uint64		hash;
	HeapTupleData tup;			/* its row now (deleted: its last row) */
	dsa_pointer node;			/* its node in the published table, or invalid */
	dsa_pointer newnode;		/* its own node with tup's row, or invalid */
	struct OvItem *next;		/* next item of the same hash (once indexed) */
	bool		deleted;
	bool		linked;			/* newnode linked into a table (prepare_item) */
} OvItem;

/* Items per chunk: 64 kB of the area */
#define OV_ITEM_CHUNK 1024

typedef struct OvEntry
{
	uint64		hash;
	OvItem	   *first;			/* its items, chained by next */
} OvEntry;

typedef struct TouchedEntry
{
	dsa_pointer node;
} TouchedEntry;

/* The store of one query in this transaction. */
struct CqStore
{
	StoreKey	key;
	MemoryContext cxt;			/* lives as long as the transaction */
	TupleDesc	desc;			/* state row */
	int			ng;				/* keys: attributes 1..ng */
	AttrNumber	n_att;
	AttrNumber	e_att;			/* 0: none */
	int			nparts;
	AttrNumber *p_att;			/* per part */
	FmgrInfo   *eq;
	FmgrInfo   *hashfn;
	Oid		   *coll;
	AttrNumber	h_att;			/* the key hash h (0: none), computed in C */
	bool		keyless;		/* no grouping keys: h is hash_record(ROW()), 0 */
	FmgrInfo   *hproc;			/* per key: its type's hash function (hash_record's) */
	/* merge in C (store_fold.c): n and every part self-mergeable */
	bool		merge_ready;	/* cq_store_setup_merge ran */
	bool		cmerge;
	FmgrInfo	nplus;			/* n + n */
	CqMergeKind *pkind;			/* per part */
	FmgrInfo   *pfn;			/* per part: + or the type's comparison */
	Oid		   *pcoll;			/* per part: its collation */
	dsa_pointer header;
	CqGroupTable *table;		/* published table, or NULL */
	bool		replace;		/* publication replaces the whole table */
	CqGroupTable *newtable;		/* replace: built at pre-commit */
	bool		own_table;		/* table built by this transaction (see
								 * cq_store_put_built): the header's at
								 * publish, freed at abort */
	bool		building;		/* new groups may still go into own table */
	uint64		expect_groups;	/* groups own table is made for (cq_store_expect) */
	/*
	 * put_built's nodes as (hash, node) pairs, not linked into own table yet
	 * from nlinked on (link_pending); room for pending_max, and as many in
	 * pending_tmp for their sort
	 */
	int			npending;
	int			nlinked;
	int			pending_max;
	CqGroupSlot *pending;
	CqGroupSlot *pending_tmp;
	HeapTupleData built;		/* a header over put_built's last row (formed in its node) */
	HTAB	   *overlay;		/* uint64 -> OvEntry, of the first n_indexed items */
	HTAB	   *touched;		/* published nodes the overlay replaces (filled by scans) */
	int64		nitems;			/* items (OvItem), in order: item_at */
	int64		n_indexed;		/* items in overlay (indexed when a lookup needs it) */
	OvItem	  **chunks;			/* the items' chunks in the area (addresses) */
	dsa_pointer *chunk_dp;		/* and their pointers, to free them */
	int			nchunks;
	int			maxchunks;
	int64		batch_id;		/* to publish */
	bool		ran;			/* a batch was folded in (cq_store_batch_done) */
	int64		rows;
	int64		bytes;
	bool		has_evict_wm;
	TimestampTz evict_wm;
	int64		image_batch;
	TimestampTz image_at;
	int64		image_base;
	TimestampTz min_e;
	SubTransactionId subid;
	Oid			state_table;	/* the query's: another one may get its id (DROP EXTENSION) */
	bool		prepared;
	bool		switched;		/* moved to the table path: drop the store at commit */
};

/* A row found in the store. */
typedef struct StoreRef
{
	uint64		hash;
	HeapTuple	tup;			/* NULL: not found */
	dsa_pointer node;
	dsa_pointer tuple;			/* a published row (item NULL): where tup is */
	OvItem	   *item;
} StoreRef;

/* One visible row, for scans. */
typedef struct ScanRow
{
	StoreRef	ref;
} ScanRow;

extern HeapTuple cq_store_own_tuple(HeapTuple t);
extern bool cq_store_keys_match(struct CqStore *st, HeapTuple tup, Datum *values, bool *nulls);
extern uint64 cq_store_key_hash(struct CqStore *st, Datum *values, bool *nulls);
extern void cq_store_set_h(struct CqStore *st, Datum *values, bool *nulls);
extern void cq_store_lookup(struct CqStore *st, Datum *values, bool *nulls, StoreRef *ref);
extern void cq_store_lookup_published(struct CqStore *st, Datum *values, bool *nulls,
									  StoreRef *ref);
extern HeapTuple cq_store_put(struct CqStore *st, StoreRef *ref, HeapTuple tup);
extern List *cq_store_scan_all(struct CqStore *st);
extern HeapTuple cq_store_put_built(struct CqStore *st, Datum *values, bool *nulls);

/* store.c: the directory, the overlays of this transaction (their CqStore) */
extern dshash_table *cq_store_dir;
extern List *cq_store_xact_stores;
extern void cq_store_attach(void);
extern StoreDirEntry *cq_store_find_header(StoreKey *key, bool exclusive, bool create);
extern StoreHeader *cq_store_header_of(struct CqStore *st);
extern void cq_store_link_pending(struct CqStore *st);

/* store_xact.c: publication at commit, discard at abort, drops */
extern bool cq_store_dropped_here(Oid dboid, int32 query_id);
extern void cq_store_register_callbacks(void);

#endif							/* CQ_STORE_PRIVATE_H */
