/*-------------------------------------------------------------------------
 *
 * aggregates.h
 *	  The aggregate table: decomposing aggregates into mergeable state
 *	  columns (aggregates.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef CQ_AGGREGATES_H
#define CQ_AGGREGATES_H

#include "postgres.h"
#include "nodes/primnodes.h"
#include "nodes/pg_list.h"

/* One state column p<N>: a partial aggregate of the new rows and its merge. */
typedef struct CqPart
{
	char	   *partial;		/* SQL over the inner columns: "sum(i.x1) FILTER (WHERE i.f1)" */
	const char *merge;			/* %1$s = stored value, %2$s = new value */
	char	   *type;			/* SQL type of the column */
	Oid			collation;		/* or InvalidOid */
} CqPart;

/* The binary merges of CqPart.merge the store merges in C (store_fold.c). */
typedef enum CqMergeKind
{
	CQ_MERGE_OTHER,
	CQ_MERGE_ADD,
	CQ_MERGE_SUM,
	CQ_MERGE_LEAST,
	CQ_MERGE_GREATEST
} CqMergeKind;

/* One aggregate of the query, decomposed into mergeable state columns. */
struct CqAggKind;
typedef struct CqAgg
{
	Aggref	   *aggref;
	const struct CqAggKind *kind;
	int			part[3];		/* index into CqAnalysis.parts per kind part; -1 = column n */
	int			arg_col;		/* inner column x<N> of the argument, or -1 */
	int			filter_col;		/* inner column f<N> of FILTER, or -1 */
	int			distinct_col;	/* DISTINCT: inner column y<N> of its new
								 * values, N = 1.. (CqAnalysis.distinct_sets);
								 * 0 = not DISTINCT */
	Oid			arg_type;
	bool		builtin_numeric;	/* keep PostgreSQL's sum/min/max over
									 * numeric, not cq.numeric_* (numagg.c) */
	/* generic path (kind == NULL): one cq.agg_state column, part[0] */
	List	   *arg_cols;		/* inner columns x<N> of every argument (int) */
	char	   *final;			/* final template; %1$s = the state column */
} CqAgg;

extern const struct CqAggKind *cq_agg_kind_find(Aggref *agg, Oid argtype);
extern int	cq_agg_add_part(List **parts, CqAgg *a, int k);
extern const char *cq_agg_kind_final(const struct CqAggKind *kind);
extern int	cq_agg_kind_nparts(const struct CqAggKind *kind);
extern void cq_agg_generic_check(Aggref *agg);
extern int	cq_agg_generic_add_part(List **parts, CqAgg *a);
extern const char *cq_agg_final_template(const CqAgg *a);
extern int	cq_agg_nparts(const CqAgg *a);
extern bool cq_agg_kind_idempotent(const struct CqAggKind *kind);
extern const char *cq_agg_part_merge_n(const CqPart *part);
extern CqMergeKind cq_agg_part_merge_kind(const CqPart *part);

#endif							/* CQ_AGGREGATES_H */
