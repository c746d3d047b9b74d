/*
 * test_tz.c - zone loading, offsets and wall-time resolution (src/tz/tz.c).
 *
 * Expected instants come from `zdump -v` of Debian 12's tzdata.  The last
 * test cross-checks every zone of zone1970.tab against GLib's GTimeZone for
 * 1970-2037, where GLib reads the explicit transitions correctly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <glib.h>
#include "palisade/timefmt.h"
#include "palisade/tz.h"

static pal_tz *open_zone(const char *name)
{
	pal_tz *tz = NULL;
	char err[256];
	if (pal_tz_open(name, &tz, err, sizeof err))
		fail_msg("open %s: %s", name, err);
	return tz;
}

static int64_t at(const char *rfc3339)
{
	int64_t t;
	if (pal_parse_rfc3339(rfc3339, &t))
		fail_msg("bad instant %s", rfc3339);
	return t;
}

/* Local wall time "YYYY-MM-DDTHH:MM:SS" as seconds since 1970 local. */
static int64_t wall(const char *s)
{
	char buf[40];
	snprintf(buf, sizeof buf, "%sZ", s);
	return at(buf);
}

static void test_tz_rejects_unknown_and_malformed_names(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "Mars/Olympus_Mons", "../etc/passwd", "/etc/localtime", "Europe", "Europe/",
		"zone.tab", "tzdata.zi", "+02:00", "UTC+2", "Europe/../Europe/Berlin", ".hidden",
		"Europe//Berlin", "EST5EDT,M3.2.0,M11.1.0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		pal_tz *tz = (pal_tz *)1;
		char err[256] = "";
		int rc = pal_tz_open(bad[i], &tz, err, sizeof err);
		if (rc != PAL_ENOENT)
			fail_msg("\"%s\": rc %d", bad[i], rc);
		assert_null(tz);
		assert_non_null(strstr(err, "unknown time zone"));
	}
	pal_tz *tz;
	assert_int_equal(pal_tz_open(NULL, &tz, NULL, 0), PAL_EINVAL);
}

/* "localtime" and "posixrules" are files under the zone directory that
 * name the host's own zone: refused for a name being defined, in any
 * directory; an IANA name still opens. */
static void test_tz_open_iana_refuses_host_zones(void **state)
{
	(void)state;
	static const char *const host[] = {"localtime", "posixrules", "posix/localtime",
					   "Europe/localtime"};
	for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
		pal_tz *tz = (pal_tz *)1;
		char err[256] = "";
		if (pal_tz_open_iana(host[i], &tz, err, sizeof err) != PAL_EINVAL)
			fail_msg("\"%s\" accepted", host[i]);
		assert_null(tz);
		assert_non_null(strstr(err, "the host's own zone"));
		assert_non_null(strstr(err, "IANA zone such as"));
	}
	pal_tz *tz = NULL;
	assert_int_equal(pal_tz_open_iana("Europe/Berlin", &tz, NULL, 0), PAL_OK);
	assert_string_equal(pal_tz_name(tz), "Europe/Berlin");
	pal_tz_close(tz);
	assert_int_equal(pal_tz_open_iana("UTC", &tz, NULL, 0), PAL_OK);
	pal_tz_close(tz);
	assert_int_equal(pal_tz_open_iana("Mars/Olympus_Mons", &tz, NULL, 0), PAL_ENOENT);
}

static void test_tz_utc_and_name(void **state)
{
	(void)state;
	pal_tz *tz = open_zone("UTC");
	assert_string_equal(pal_tz_name(tz), "UTC");
	assert_int_equal(pal_tz_offset_at(tz, at("2026-07-01T00:00:00Z")), 0);
	int64_t out[2];
	assert_int_equal(pal_tz_resolve(tz, wall("2026-03-29T02:30:00"), out, NULL), 1);
	assert_int_equal(out[0], at("2026-03-29T02:30:00Z"));
	pal_tz_close(tz);
	pal_tz_close(NULL);
}

static void test_tz_berlin_offsets_and_transitions(void **state)
{
	(void)state;
	pal_tz *tz = open_zone("Europe/Berlin");
	assert_int_equal(pal_tz_offset_at(tz, at("2026-01-15T12:00:00Z")), 3600);
	assert_int_equal(pal_tz_offset_at(tz, at("2026-07-15T12:00:00Z")), 7200);
	assert_int_equal(pal_tz_offset_at(tz, at("2026-03-29T00:59:59Z")), 3600);
	assert_int_equal(pal_tz_offset_at(tz, at("2026-03-29T01:00:00Z")), 7200);
	assert_int_equal(pal_tz_to_local(tz, at("2026-03-29T01:00:00Z")), wall("2026-03-29T03:00:00"));

	int64_t out[2] = { 0, 0 }, gap = 0;
	/* spring forward: 02:00-03:00 does not exist */
	assert_int_equal(pal_tz_resolve(tz, wall("2026-03-29T02:30:00"), out, &gap), 0);
	assert_int_equal(gap, at("2026-03-29T01:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-03-29T02:00:00"), out, &gap), 0);
	assert_int_equal(gap, at("2026-03-29T01:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-03-29T03:00:00"), out, &gap), 1);
	assert_int_equal(out[0], at("2026-03-29T01:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-03-29T01:59:59"), out, &gap), 1);
	assert_int_equal(out[0], at("2026-03-29T00:59:59Z"));
	/* fall back: 02:00-03:00 happens twice */
	assert_int_equal(pal_tz_resolve(tz, wall("2026-10-25T02:30:00"), out, &gap), 2);
	assert_int_equal(out[0], at("2026-10-25T00:30:00Z"));
	assert_int_equal(out[1], at("2026-10-25T01:30:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-10-25T02:00:00"), out, NULL), 2);
	assert_int_equal(pal_tz_resolve(tz, wall("2026-10-25T03:00:00"), out, NULL), 1);
	assert_int_equal(out[0], at("2026-10-25T02:00:00Z"));
	pal_tz_close(tz);
}

static void test_tz_far_future_uses_footer_rule(void **state)
{
	(void)state;
	pal_tz *tz = open_zone("Europe/Berlin");
	int64_t out[2], gap;
	assert_int_equal(pal_tz_resolve(tz, wall("2099-03-29T02:30:00"), out, &gap), 0);
	assert_int_equal(gap, at("2099-03-29T01:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2099-10-25T02:30:00"), out, &gap), 2);
	assert_int_equal(out[0], at("2099-10-25T00:30:00Z"));
	assert_int_equal(pal_tz_offset_at(tz, at("2099-12-31T23:00:00Z")), 3600);
	pal_tz_close(tz);

	/* Negative DST: GMT is Dublin's "daylight" time in winter (GLib 2.74
	 * gets this wrong after 2037: it says UTC+2). */
	tz = open_zone("Europe/Dublin");
	assert_int_equal(pal_tz_offset_at(tz, at("2068-11-01T00:00:00Z")), 0);
	assert_int_equal(pal_tz_offset_at(tz, at("2068-07-01T00:00:00Z")), 3600);
	assert_int_equal(pal_tz_offset_at(tz, at("2068-10-28T00:59:59Z")), 3600);
	assert_int_equal(pal_tz_offset_at(tz, at("2068-10-28T01:00:00Z")), 0);
	assert_int_equal(pal_tz_resolve(tz, wall("2068-03-25T01:30:00"), out, &gap), 0);
	assert_int_equal(gap, at("2068-03-25T01:00:00Z"));
	pal_tz_close(tz);

	/* Rule with a transition time past 24h: Jerusalem's M3.4.4/26 (Friday
	 * before the last Sunday of March, 02:00). */
	tz = open_zone("Asia/Jerusalem");
	assert_int_equal(pal_tz_resolve(tz, wall("2090-03-24T02:30:00"), out, &gap), 0);
	assert_int_equal(gap, at("2090-03-24T00:00:00Z"));
	pal_tz_close(tz);

	/* Rule with a negative transition time: Nuuk's M3.5.0/-1 (Saturday 23:00). */
	tz = open_zone("America/Nuuk");
	assert_int_equal(pal_tz_offset_at(tz, at("2090-03-26T00:59:59Z")), -7200);
	assert_int_equal(pal_tz_offset_at(tz, at("2090-03-26T01:00:00Z")), -3600);
	pal_tz_close(tz);
}

static void test_tz_lord_howe_thirty_minute_dst(void **state)
{
	(void)state;
	pal_tz *tz = open_zone("Australia/Lord_Howe");
	int64_t out[2], gap;
	assert_int_equal(pal_tz_offset_at(tz, at("2026-01-01T00:00:00Z")), 39600);
	assert_int_equal(pal_tz_offset_at(tz, at("2026-06-01T00:00:00Z")), 37800);
	/* fall back 02:00 -> 01:30: 01:30-02:00 twice */
	assert_int_equal(pal_tz_resolve(tz, wall("2026-04-05T01:45:00"), out, &gap), 2);
	assert_int_equal(out[0], at("2026-04-04T14:45:00Z"));
	assert_int_equal(out[1], at("2026-04-04T15:15:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-04-05T01:29:59"), out, &gap), 1);
	/* spring forward 02:00 -> 02:30 */
	assert_int_equal(pal_tz_resolve(tz, wall("2026-10-04T02:15:00"), out, &gap), 0);
	assert_int_equal(gap, at("2026-10-03T15:30:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2026-10-04T02:30:00"), out, &gap), 1);
	assert_int_equal(out[0], at("2026-10-03T15:30:00Z"));
	pal_tz_close(tz);
}

static void test_tz_zones_whose_rules_changed(void **state)
{
	(void)state;
	int64_t out[2], gap;
	/* Sao Paulo: DST started at midnight until 2018, abolished in 2019. */
	pal_tz *tz = open_zone("America/Sao_Paulo");
	assert_int_equal(pal_tz_resolve(tz, wall("2018-11-04T00:00:00"), out, &gap), 0);
	assert_int_equal(gap, at("2018-11-04T03:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2019-11-03T00:00:00"), out, &gap), 1);
	assert_int_equal(out[0], at("2019-11-03T03:00:00Z"));
	assert_int_equal(pal_tz_offset_at(tz, at("2030-01-01T00:00:00Z")), -10800);
	pal_tz_close(tz);

	/* Moscow: +3 -> +4 for good in 2011 (a gap, no later overlap), back to
	 * +3 in 2014 (an overlap, no later gap). */
	tz = open_zone("Europe/Moscow");
	assert_int_equal(pal_tz_resolve(tz, wall("2011-03-27T02:30:00"), out, &gap), 0);
	assert_int_equal(gap, at("2011-03-26T23:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2011-10-30T02:30:00"), out, &gap), 1);
	assert_int_equal(out[0], at("2011-10-29T22:30:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2014-10-26T01:30:00"), out, &gap), 2);
	assert_int_equal(out[0], at("2014-10-25T21:30:00Z"));
	assert_int_equal(out[1], at("2014-10-25T22:30:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2015-03-29T02:30:00"), out, &gap), 1);
	pal_tz_close(tz);

	/* Apia skipped Friday 2011-12-30 entirely (-10 -> +14). */
	tz = open_zone("Pacific/Apia");
	assert_int_equal(pal_tz_resolve(tz, wall("2011-12-30T00:00:00"), out, &gap), 0);
	assert_int_equal(gap, at("2011-12-30T10:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2011-12-30T23:59:59"), out, &gap), 0);
	assert_int_equal(gap, at("2011-12-30T10:00:00Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2011-12-29T23:59:59"), out, &gap), 1);
	assert_int_equal(out[0], at("2011-12-30T09:59:59Z"));
	assert_int_equal(pal_tz_resolve(tz, wall("2011-12-31T00:00:00"), out, &gap), 1);
	assert_int_equal(out[0], at("2011-12-30T10:00:00Z"));
	pal_tz_close(tz);

	/* Kolkata: +05:30 all along. */
	tz = open_zone("Asia/Kolkata");
	assert_int_equal(pal_tz_offset_at(tz, at("1975-06-01T00:00:00Z")), 19800);
	assert_int_equal(pal_tz_offset_at(tz, at("2099-06-01T00:00:00Z")), 19800);
	assert_int_equal(pal_tz_min_offset(tz, 0, at("2099-12-31T00:00:00Z")), 19800);
	pal_tz_close(tz);
}

static void test_tz_min_max_offset_over_ranges(void **state)
{
	(void)state;
	pal_tz *tz = open_zone("America/New_York");
	int64_t jan = at("2026-01-10T00:00:00Z"), feb = at("2026-02-10T00:00:00Z");
	assert_int_equal(pal_tz_min_offset(tz, jan, feb), -18000);
	assert_int_equal(pal_tz_max_offset(tz, jan, feb), -18000);
	assert_int_equal(pal_tz_max_offset(tz, jan, at("2026-03-08T07:00:00Z")), -14400);
	assert_int_equal(pal_tz_max_offset(tz, jan, at("2026-03-08T06:59:59Z")), -18000);
	assert_int_equal(pal_tz_min_offset(tz, at("2026-07-01T00:00:00Z"), at("2026-11-01T06:00:00Z")),
			 -18000);
	pal_tz_close(tz);
}

/* For every instant u, resolve(to_local(u)) must contain u. */
static void test_tz_resolve_inverts_to_local(void **state)
{
	(void)state;
	static const char *const zones[] = { "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia",
					     "America/Sao_Paulo", "Europe/Dublin", "Pacific/Chatham",
					     "Antarctica/Troll", "Asia/Tehran", "Africa/Casablanca" };
	uint64_t x = 88172645463325252ULL; /* xorshift: deterministic */
	for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
		pal_tz *tz = open_zone(zones[z]);
		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			int64_t u = (int64_t)(x % UINT64_C(4102444800));
			int64_t out[2], gap;
			int n = pal_tz_resolve(tz, pal_tz_to_local(tz, u), out, &gap);
			if (!(n >= 1 && (out[0] == u || (n == 2 && out[1] == u))))
				fail_msg("%s: instant %lld not recovered (n=%d)", zones[z], (long long)u, n);
		}
		pal_tz_close(tz);
	}
}

/* Every zone of zone1970.tab opens, and agrees with GLib up to 2037. */
static void test_tz_every_zone_agrees_with_glib_until_2037(void **state)
{
	(void)state;
	FILE *fp = fopen("/usr/share/zoneinfo/zone1970.tab", "r");
	if (!fp)
		skip();
	char line[512];
	int zones = 0;
	while (fgets(line, sizeof line, fp)) {
		if (line[0] == '#')
			continue;
		char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
		if (!f2)
			continue;
		char *name = f2 + 1;
		name[strcspn(name, "\t\n")] = '\0';
		pal_tz *tz = open_zone(name);
		GTimeZone *g = g_time_zone_new_identifier(name);
		assert_non_null(g);
		for (int64_t t = 0; t < INT64_C(2145916800); t += 13 * 86400 + 3607) {
			int iv = g_time_zone_find_interval(g, G_TIME_TYPE_UNIVERSAL, t);
			int32_t want = g_time_zone_get_offset(g, iv);
			if (pal_tz_offset_at(tz, t) != want)
				fail_msg("%s at %lld: %d, glib %d", name, (long long)t,
					 pal_tz_offset_at(tz, t), want);
		}
		g_time_zone_unref(g);
		pal_tz_close(tz);
		zones++;
	}
	fclose(fp);
	assert_true(zones > 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tz_rejects_unknown_and_malformed_names),
		cmocka_unit_test(test_tz_open_iana_refuses_host_zones),
		cmocka_unit_test(test_tz_utc_and_name),
		cmocka_unit_test(test_tz_berlin_offsets_and_transitions),
		cmocka_unit_test(test_tz_far_future_uses_footer_rule),
		cmocka_unit_test(test_tz_lord_howe_thirty_minute_dst),
		cmocka_unit_test(test_tz_zones_whose_rules_changed),
		cmocka_unit_test(test_tz_min_max_offset_over_ranges),
		cmocka_unit_test(test_tz_resolve_inverts_to_local),
		cmocka_unit_test(test_tz_every_zone_agrees_with_glib_until_2037),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
