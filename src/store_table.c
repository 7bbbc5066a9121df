/*-------------------------------------------------------------------------
 *
 * store_table.c
 *	  The group table of a query's shared-memory state store: one array of
 *	  slots (hash, head of the chain of the groups with that hash) in the
 *	  store's DSA area, open addressing with linear probing, kept at most
 *	  85 % full, and a control block with its size and a lock.
 *
 * Why not a dshash: a lookup in a dshash reads its bucket array, then the
 * item (a separate allocation), then the group's node; a lookup here reads
 * one slot (the probes that follow are in the same or the next cache
 * line), then the node.  A backend pays for the first touch of every page
 * of shared memory it reads (the page-table entries of a new process; on
 * a virtual machine with shadow page tables some 8-20 us a page, in a DSM
 * segment or in the main shared memory alike), and a batch run in a new
 * session (pg_cron's CALL cq.run) reads a page or more per group it looks
 * up: one place fewer per group, and 2 MB of slots at 100k groups where a
 * dshash's buckets and items take 5 MB, are that many pages fewer to touch
 * (bench/README.md, Cold first batch; sql/82_store_table.sql tests the
 * table).
 *
 * Locking: the table's lock is taken exclusively by the backend that
 * changes it (a batch of the query at pre-commit and commit, a drop) and
 * shared by the readers of other backends (cq_store_read).  The batch's
 * own lookups take no lock: batches of a query are serialized and only
 * the batch itself changes the table until it commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "store_table.h"
#include "prefault.h"

/* the shared control block */
typedef struct GroupTableCtl
{
	LWLock		lock;
	int			size_log2;
	uint64		used;
	dsa_pointer slots;			/* CqGroupSlot[1 << size_log2] */
} GroupTableCtl;

struct CqGroupTable
{
	dsa_area   *area;
	dsa_pointer ctlp;
	GroupTableCtl *ctl;
};

#define GT_MIN_LOG2 8
/* cq_gt_sort_by_slot's buckets: at most 2^16 (256 kB of counts) */
#define GT_SORT_MAX_BITS 16
/* grow when more than GT_FILL_NUM / GT_FILL_DEN of the slots would be used */
#define GT_FILL_NUM 17
#define GT_FILL_DEN 20

/*
 * home
 *	  The first slot to probe for a hash (its bits mixed again: the keys'
 *	  hash functions need not spread the low bits well).
 */
static inline uint64
home(uint64 hash, uint64 mask)
{
	hash ^= hash >> 33;
	hash *= UINT64CONST(0xff51afd7ed558ccd);
	hash ^= hash >> 33;
	return hash & mask;
}

/*
 * alloc_slots
 *	  A zeroed (all empty) slot array of 2^size_log2 slots; out of memory,
 *	  an error after freeing also (when valid) the control block ctlp.
 */
static dsa_pointer
alloc_slots(dsa_area *area, int size_log2, dsa_pointer ctlp)
{
	size_t		size = sizeof(CqGroupSlot) << size_log2;
	dsa_pointer p = dsa_allocate_extended(area, size, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);

	if (!DsaPointerIsValid(p))
	{
		if (DsaPointerIsValid(ctlp))
			dsa_free(area, ctlp);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of shared memory for the group table of the state store"),
				 errdetail("Failed on a request of size %zu.", size),
				 errhint("Free memory on the server, or keep the state of large queries in tables (state_storage = 'unlogged').")));
	}
	/* its pages mapped in one go (mappings seen before forgotten), then zeroed */
	cq_prefault_reset();
	cq_prefault(dsa_get_address(area, p), size, size);
	memset(dsa_get_address(area, p), 0, size);
	return p;
}

/*
 * size_log2_for
 *	  The log2 of the slots a table of expected groups starts with.
 */
static int
size_log2_for(uint64 expected)
{
	int			size_log2 = GT_MIN_LOG2;

	while (expected * GT_FILL_DEN > (UINT64CONST(1) << size_log2) * GT_FILL_NUM)
		size_log2++;
	return size_log2;
}

/*
 * cq_gt_bytes_for
 *	  The bytes of the slot array a table created for expected groups
 *	  starts with.
 */
uint64
cq_gt_bytes_for(uint64 expected)
{
	return (uint64) sizeof(CqGroupSlot) << size_log2_for(expected);
}

/*
 * cq_gt_create
 *	  A new, empty group table, large enough for expected groups.
 */
CqGroupTable *
cq_gt_create(dsa_area *area, int tranche, uint64 expected)
{
	CqGroupTable *t = palloc(sizeof(CqGroupTable));
	int			size_log2 = size_log2_for(expected);
	dsa_pointer slots;

	if (expected > 0)
		elog(DEBUG1, "pg_cq: state store group table of " UINT64_FORMAT " slots for " UINT64_FORMAT " expected groups",
			 UINT64CONST(1) << size_log2, expected);
	t->area = area;
	t->ctlp = dsa_allocate(area, sizeof(GroupTableCtl));
	slots = alloc_slots(area, size_log2, t->ctlp);
	t->ctl = dsa_get_address(area, t->ctlp);
	LWLockInitialize(&t->ctl->lock, tranche);
	t->ctl->size_log2 = size_log2;
	t->ctl->used = 0;
	t->ctl->slots = slots;
	return t;
}

/*
 * cq_gt_attach
 *	  A backend's view of the group table with this handle.
 */
CqGroupTable *
cq_gt_attach(dsa_area *area, dsa_pointer handle)
{
	CqGroupTable *t = palloc(sizeof(CqGroupTable));

	t->area = area;
	t->ctlp = handle;
	t->ctl = dsa_get_address(area, handle);
	return t;
}

/*
 * cq_gt_handle
 *	  The handle other backends attach with.
 */
dsa_pointer
cq_gt_handle(CqGroupTable *t)
{
	return t->ctlp;
}

/*
 * cq_gt_destroy
 *	  Free the table (not the nodes its slots point to), and t.
 */
void
cq_gt_destroy(CqGroupTable *t)
{
	dsa_free(t->area, t->ctl->slots);
	dsa_free(t->area, t->ctlp);
	pfree(t);
}

/*
 * cq_gt_lock, cq_gt_unlock
 *	  The table's lock (see the file header).
 */
void
cq_gt_lock(CqGroupTable *t, LWLockMode mode)
{
	LWLockAcquire(&t->ctl->lock, mode);
}

void
cq_gt_unlock(CqGroupTable *t)
{
	LWLockRelease(&t->ctl->lock);
}

/*
 * cq_gt_slots
 *	  The slot array and its size, for scans (an empty slot's head is
 *	  invalid).
 */
CqGroupSlot *
cq_gt_slots(CqGroupTable *t, uint64 *nslots)
{
	*nslots = UINT64CONST(1) << t->ctl->size_log2;
	return dsa_get_address(t->area, t->ctl->slots);
}

/*
 * cq_gt_find
 *	  The head of the chain of hash, or NULL when the table has none.
 */
dsa_pointer *
cq_gt_find(CqGroupTable *t, uint64 hash)
{
	uint64		mask;
	CqGroupSlot *slots = cq_gt_slots(t, &mask);

	mask--;
	for (uint64 i = home(hash, mask);; i = (i + 1) & mask)
	{
		if (!DsaPointerIsValid(slots[i].head))
			return NULL;
		if (slots[i].hash == hash)
			return &slots[i].head;
	}
}

/*
 * place
 *	  The empty slot a new hash goes to (the table has one: it is never
 *	  full).
 */
static CqGroupSlot *
place(CqGroupSlot *slots, uint64 mask, uint64 hash)
{
	uint64		i = home(hash, mask);

	while (DsaPointerIsValid(slots[i].head))
		i = (i + 1) & mask;
	return &slots[i];
}

/*
 * grow
 *	  Double the slot array (may raise an error: out of memory).
 */
static void
grow(CqGroupTable *t)
{
	uint64		n;
	CqGroupSlot *old = cq_gt_slots(t, &n);
	dsa_pointer oldp = t->ctl->slots;
	dsa_pointer newp = alloc_slots(t->area, t->ctl->size_log2 + 1, InvalidDsaPointer);
	CqGroupSlot *slots = dsa_get_address(t->area, newp);
	uint64		mask = n * 2 - 1;

	for (uint64 i = 0; i < n; i++)
		if (DsaPointerIsValid(old[i].head))
			*place(slots, mask, old[i].hash) = old[i];
	t->ctl->slots = newp;
	t->ctl->size_log2++;
	dsa_free(t->area, oldp);
	elog(DEBUG1, "pg_cq: state store group table grew to " UINT64_FORMAT " slots", n * 2);
}

/*
 * cq_gt_insert
 *	  The head of the chain of hash, a new slot if it has none (its head
 *	  invalid: the caller sets it, the table's lock held exclusively, or
 *	  the table not visible to other backends yet).  May raise an error (a
 *	  larger array is out of memory): call it before commit.
 */
dsa_pointer *
cq_gt_insert(CqGroupTable *t, uint64 hash)
{
	dsa_pointer *head = cq_gt_find(t, hash);
	uint64		n;
	CqGroupSlot *s;

	if (head)
		return head;
	n = UINT64CONST(1) << t->ctl->size_log2;
	if ((t->ctl->used + 1) * GT_FILL_DEN > n * GT_FILL_NUM)
		grow(t);
	s = cq_gt_slots(t, &n);
	s = place(s, n - 1, hash);
	s->hash = hash;
	t->ctl->used++;
	return &s->head;
}

/*
 * cq_gt_sort_by_slot
 *	  Put n (hash, head) pairs *items in the order of the slots their
 *	  probes start from in t (each hash's home), by one counting sort on
 *	  the home's top bits, about one pair a bucket, into *tmp (room for n);
 *	  then *items and *tmp are swapped (after what may fail).  Inserted in that order (cq_gt_insert), the pairs walk the
 *	  slot array from its start to its end, reading each page and cache
 *	  line of it once for all the pairs that go there, instead of one
 *	  random place each: at ~1M groups the array is 32 MB and each random
 *	  insert a cache and TLB miss (store.c, link_pending).  Any order is a
 *	  valid one for linear probing; this one is only faster.
 */
void
cq_gt_sort_by_slot(CqGroupTable *t, CqGroupSlot **items, CqGroupSlot **tmp, int n)
{
	CqGroupSlot *in = *items;
	CqGroupSlot *out = *tmp;
	int			size_log2 = t->ctl->size_log2;
	uint64		mask = (UINT64CONST(1) << size_log2) - 1;
	int			bits = Min(size_log2, GT_SORT_MAX_BITS);
	int			shift;
	uint32	   *start;

	while (bits > 1 && (1 << (bits - 1)) >= n)
		bits--;
	shift = size_log2 - bits;
	start = palloc0(sizeof(uint32) * ((1 << bits) + 1));
	for (int i = 0; i < n; i++)
		start[(home(in[i].hash, mask) >> shift) + 1]++;
	for (int b = 0; b < (1 << bits); b++)
		start[b + 1] += start[b];
	for (int i = 0; i < n; i++)
		out[start[home(in[i].hash, mask) >> shift]++] = in[i];
	pfree(start);
	*items = out;
	*tmp = in;
}

/*
 * cq_gt_delete
 *	  Remove a slot whose chain is now empty (head: what cq_gt_find or
 *	  cq_gt_insert returned for it, now invalid), moving back the slots
 *	  after it that would no longer be found (deletion without tombstones,
 *	  Knuth's algorithm R).  Allocates nothing, raises no error.
 */
void
cq_gt_delete(CqGroupTable *t, dsa_pointer *head)
{
	uint64		mask;
	CqGroupSlot *slots = cq_gt_slots(t, &mask);
	uint64		i = (CqGroupSlot *) ((char *) head - offsetof(CqGroupSlot, head)) - slots;
	uint64		j;

	Assert(!DsaPointerIsValid(*head));
	mask--;
	for (j = (i + 1) & mask; DsaPointerIsValid(slots[j].head); j = (j + 1) & mask)
	{
		uint64		k = home(slots[j].hash, mask);

		/* slot j stays when its home is cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		slots[i] = slots[j];
		i = j;
	}
	slots[i].hash = 0;
	slots[i].head = InvalidDsaPointer;
	t->ctl->used--;
}
