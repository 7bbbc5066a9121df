/*-------------------------------------------------------------------------
 *
 * delta_page.h
 *	  One page of the bitmap of a batch's new rows, its visible rows
 *	  found with a run of one transaction's rows tested once (delta_page.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_DELTA_PAGE_H
#define CQ_DELTA_PAGE_H

#include "postgres.h"
#include "access/relscan.h"
#include "nodes/tidbitmap.h"

/*
 * The PostgreSQL versions whose heapam internals delta_page.c (a copy of
 * heapam_scan_bitmap_next_block's frame) and delta_scan.c (a reading of
 * HeapScanDescData's rs_vistuples, rs_ntuples, rs_cindex and rs_cbuf as
 * heapam_scan_bitmap_next_tuple reads them) were checked against, line by
 * line: 15 only.  Outside it delta_page.c falls back to heapam's own
 * reader and delta_scan.c stops the build (#error): both must be compared
 * with the new version's heapam_handler.c and heapam_visibility.c before
 * the range is widened.
 */
#define CQ_HEAPAM_CHECKED (PG_VERSION_NUM >= 150000 && PG_VERSION_NUM < 160000)

extern bool cq_delta_page_read(TableScanDesc scan, TBMIterateResult *tbmres);

#endif							/* CQ_DELTA_PAGE_H */
