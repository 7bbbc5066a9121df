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

extern bool cq_delta_page_read(TableScanDesc scan, TBMIterateResult *tbmres);

#endif							/* CQ_DELTA_PAGE_H */
