/*-------------------------------------------------------------------------
 *
 * prefault.c
 *	  Pages of shared memory mapped into this process in bulk before it
 *	  writes them for the first time (issue 12, goal 2).
 *
 * A process pays for the first touch of every page it maps, shared or
 * not, already used by another process or not: on this project's virtual
 * machine (shadow page tables) some 15 us a 4 kB page, of which about
 * half is the guest's page fault (bench/README.md, "Fold efficiency", round 12,
 * session 40: 128 MB of a shared mapping first written one page at a
 * time 500-530 ms; after madvise(MADV_POPULATE_WRITE) 47 ms for the
 * madvise and 260 ms for the writes).  Batch 0 of a query on the store
 * writes ~30k pages of its area at ~1M groups (the group table's slots,
 * then a node per group, allocated one after the other): cq_prefault
 * maps them in windows of a few hundred kB, one system call each,
 * instead of one fault a page.
 *
 * A window never leaves the mapping that holds the address (read from
 * /proc/self/maps when an address falls outside the mappings seen since
 * the last cq_prefault_reset), and populating changes no byte: it does
 * what the first write would do to the page tables, nothing else.  A
 * kernel without MADV_POPULATE_WRITE (before Linux 5.14), another
 * system, or cq.fold_page_economy = off: nothing is done, and the pages
 * fault as before.
 *
 * Only a fresh store's build calls it: the slot array of a group table
 * as it is allocated (store_table.c; batch 0, a rebuild, an image load,
 * and a table's growth in any batch) and the nodes of the groups such a
 * build puts (cq_store_alloc_node_values, called by put_built alone).
 * The mappings seen are forgotten whenever a slot array is allocated,
 * which starts every build, so the mappings cached are those of allocations
 * the current build holds (its slot array, its nodes: the segments of
 * the area that contain them stay mapped while they live).  A mapping
 * that went away (a segment of the area freed, another mapped at its
 * address) cannot be among them, so a stale entry cannot stretch a
 * window over memory this process does not map as that mapping; were
 * one ever wrong, the kernel would refuse an unmapped page (ENOMEM) and
 * populating a page of another mapping of the process writes no byte.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "storage/fd.h"

#include "prefault.h"
#include "guc.h"

#ifdef __linux__
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define PREFAULT_MAPS 16

/* a mapping of this process seen in /proc/self/maps */
typedef struct PfMap
{
	uintptr_t	start;
	uintptr_t	end;
} PfMap;

static PfMap maps[PREFAULT_MAPS];
static int	nmaps = 0;
static int	next_map = 0;		/* the entry replaced next when all are used */
static bool unsupported = false;	/* madvise said EINVAL */
/* the window populated last: [done_from, done_to) */
static uintptr_t done_from = 0;
static uintptr_t done_to = 0;

/*
 * find_map
 *	  The mapping that holds address a, from the ones seen or from
 *	  /proc/self/maps; NULL when none (or the file cannot be read).
 */
static PfMap *
find_map(uintptr_t a)
{
	FILE	   *f;
	char		line[512];
	PfMap	   *m = NULL;

	for (int i = 0; i < nmaps; i++)
		if (a >= maps[i].start && a < maps[i].end)
			return &maps[i];
	f = AllocateFile("/proc/self/maps", "r");
	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long s,
					e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
		{
			int			i = nmaps < PREFAULT_MAPS ? nmaps++ : next_map++ % PREFAULT_MAPS;

			maps[i].start = s;
			maps[i].end = e;
			m = &maps[i];
			break;
		}
		/* the rest of a longer line */
		while (strchr(line, '\n') == NULL && fgets(line, sizeof(line), f) != NULL)
			;
	}
	FreeFile(f);
	return m;
}
#endif

/*
 * cq_prefault_reset
 *	  Forget the mappings seen and the window populated: to be called
 *	  before a series of cq_prefault calls, since mappings come and go
 *	  (a DSM segment detached, another one mapped at its address).
 */
void
cq_prefault_reset(void)
{
#ifdef __linux__
	nmaps = 0;
	next_map = 0;
	done_from = done_to = 0;
#endif
}

/*
 * cq_prefault
 *	  [addr, addr + len) about to be written: unless the last window
 *	  covers it, map it and up to ahead bytes after it (within its
 *	  mapping) in one system call.
 */
void
cq_prefault(void *addr, Size len, Size ahead)
{
#ifdef __linux__
	uintptr_t	a = (uintptr_t) addr;
	uintptr_t	from;
	uintptr_t	to;
	PfMap	   *m;

	if (!cq_fold_page_economy || unsupported || len == 0 ||
		(a >= done_from && a + len <= done_to))
		return;
	m = find_map(a);
	if (m == NULL)
		return;
	from = a & ~((uintptr_t) sysconf(_SC_PAGESIZE) - 1);
	to = Min(Max(a + len, a + ahead), m->end);
	if (madvise((void *) from, to - from, MADV_POPULATE_WRITE) != 0)
	{
		/* an old kernel: never again; else (ENOMEM, EFAULT...) nothing to do */
		if (errno == EINVAL)
			unsupported = true;
		return;
	}
	done_from = from;
	done_to = to;
#endif
}
