/*
 * fuzz_cron.c - libFuzzer target for the cron parser and pal_cron_next().
 *
 * Input layout: byte 0 picks the DST policy, bytes 1-4 the start instant
 * (spread over 1960-2110 so both ends of the supported range get hit), the
 * rest is the expression (NUL-terminated copy; embedded NULs end it early).
 * Every parsed expression is walked a few steps in three zones with
 * transitions of different kinds; the walk must be strictly increasing and
 * stay within the local years 1970-2099.  The same bytes also go through the
 * RFC 3339, duration and DST-policy parsers, which must not crash either.
 *
 * Build and run: tests/fuzz/run.sh (FUZZ_SECONDS=60 by default).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/cron.h"
#include "palisade/timefmt.h"
#include "palisade/tz.h"

#define MAX_INPUT 2048

/* Opened once for the whole run and never freed: the harness's only state. */
static pal_tz *zones[3];

static void open_zones(void)
{
	static const char *const names[3] = { "Europe/Berlin", "Pacific/Apia", "Australia/Lord_Howe" };
	for (int i = 0; i < 3; i++)
		if (pal_tz_open(names[i], &zones[i], NULL, 0))
			abort(); /* tzdata missing: nothing to fuzz */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		return 0;
	if (!zones[0])
		open_zones();

	uint8_t pol = size > 0 ? data[0] : 0;
	uint32_t u = 0;
	for (size_t i = 1; i < 5 && i < size; i++)
		u = u << 8 | data[i];
	size_t off = size < 5 ? size : 5;
	char expr[MAX_INPUT + 1];
	memcpy(expr, data + off, size - off);
	expr[size - off] = '\0';

	/* -315619200 = 1960-01-01, 4417977600 = 2110-01-01 */
	int64_t start = INT64_C(-315619200) + (int64_t)(u % UINT32_C(4733596800u / 2)) * 2;
	pal_dst_policy policy = PAL_DST_AUTO;
	if (pol & 1) {
		policy.is_auto = false;
		policy.gap = (pol >> 1) & 1 ? PAL_DST_GAP_SKIP : PAL_DST_GAP_SHIFT;
		policy.overlap = (pal_dst_overlap)((pol >> 2) % 3);
	}

	pal_cron *c = NULL;
	char err[256];
	int field = -1;
	if (pal_cron_parse(expr, &c, err, sizeof err, &field) == 0) {
		(void)pal_cron_follows_wall_clock(c);
		(void)pal_cron_effective_dst(c, policy);
		for (int z = 0; z < 3; z++) {
			int64_t t = start;
			for (int step = 0; step < 4; step++) {
				int64_t next;
				if (pal_cron_next(c, zones[z], policy, t, &next))
					break;
				/* strictly after, and no later than 2099-12-31T23:59:59 in
				 * the furthest-behind zone (UTC-12) */
				if (next <= t || next > INT64_C(4102444799) + 12 * 3600)
					__builtin_trap();
				t = next;
			}
		}
		pal_cron_free(c);
	} else if (field < 0 || field > 7 || !err[0]) {
		__builtin_trap(); /* a failure must say where and why */
	}

	int64_t v;
	(void)pal_parse_rfc3339(expr, &v);
	(void)pal_parse_duration_ms(expr, &v);
	(void)pal_parse_date(expr, &v);
	pal_dst_policy p;
	(void)pal_dst_policy_parse(expr, &p, err, sizeof err);
	return 0;
}
