/*
 * cron.h - cron expressions and their fire instants in a time zone.
 *
 * Forms (see docs/cron.md):
 *   5 fields  Vixie cron: min hour dom month dow; dow 0-7 (0 and 7 = Sunday);
 *             names, lists, ranges, steps; '?' reads as '*'; when both dom
 *             and dow are restricted (neither starts with '*'), a day matches
 *             if either matches.
 *   6/7 fields Quartz: sec min hour dom month dow [year]; dow 1-7 (1 = Sunday);
 *             exactly one of dom/dow is '?'; L, L-n, nW, LW in dom; nL, n#k and
 *             a lone L (= 7) in dow; years 1970-2099.
 *   macros    @yearly @annually @monthly @weekly @daily @midnight @hourly.
 *
 * A parsed pal_cron is immutable and thread-safe to share.
 */
#ifndef PALISADE_CRON_H
#define PALISADE_CRON_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "palisade/err.h"
#include "palisade/tz.h"

typedef struct pal_cron pal_cron;

typedef enum { PAL_DST_GAP_SHIFT, PAL_DST_GAP_SKIP } pal_dst_gap;
typedef enum { PAL_DST_OVERLAP_FIRST, PAL_DST_OVERLAP_LAST, PAL_DST_OVERLAP_BOTH } pal_dst_overlap;

/*
 * DST policy.  is_auto = true means: if the cron follows the wall clock
 * (pal_cron_follows_wall_clock) use gap=skip, overlap=both; otherwise
 * gap=shift, overlap=first.  When is_auto is false, gap/overlap apply as
 * given.  gap=shift fires a gap time once, at the transition instant.
 */
typedef struct pal_dst_policy {
	bool is_auto;
	pal_dst_gap gap;
	pal_dst_overlap overlap;
} pal_dst_policy;

#define PAL_DST_AUTO ((pal_dst_policy){ .is_auto = true })

/*
 * Parse EXPR.  On failure returns PAL_EINVAL and writes a message naming the
 * offending field, e.g. `field 3 (hour) "25": value out of range 0-23`.
 * If err_field is non-NULL it receives the 1-based field number at fault
 * (0 when the problem is not in one field, e.g. wrong field count).
 * Free with pal_cron_free().
 */
PAL_MUST_CHECK int pal_cron_parse(const char *expr, pal_cron **out, char *err, size_t errlen,
				  int *err_field);
void pal_cron_free(pal_cron *c);

/* True when the seconds (Quartz), minute or hour field starts with '*'. */
bool pal_cron_follows_wall_clock(const pal_cron *c);

/* The policy auto resolves to for C (is_auto false in the result). */
pal_dst_policy pal_cron_effective_dst(const pal_cron *c, pal_dst_policy p);

/*
 * Next fire instant strictly after UTC instant AFTER, as a UTC instant.
 * Returns 0 and sets *next; PAL_ENOENT when there is none (past year 2099
 * or an expression that can never match, e.g. Feb 30).  Never loops
 * unboundedly: the search is bounded by the year range.
 */
PAL_MUST_CHECK int pal_cron_next(const pal_cron *c, const pal_tz *tz, pal_dst_policy dst,
				 int64_t after, int64_t *next);

/* Parse a DST policy string for the CLI: "auto" or
 * "gap=shift|skip,overlap=first|last|both" (either key may be omitted; an
 * omitted key takes the default of a fixed-time job: shift / first). */
PAL_MUST_CHECK int pal_dst_policy_parse(const char *s, pal_dst_policy *out, char *err,
					size_t errlen);

#endif
