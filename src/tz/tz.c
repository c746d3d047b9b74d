/*
 * tz.c - IANA time zones on top of GLib's GTimeZone (see include/palisade/tz.h).
 *
 * GTimeZone reads the system TZif file, including the POSIX footer rule that
 * governs instants after the last listed transition, and expands it into a
 * list of intervals (consecutive runs of one offset).  Everything here is
 * expressed with two GLib calls: g_time_zone_find_interval(UNIVERSAL, t),
 * which is monotonic in t, and g_time_zone_get_offset(interval).  Interval
 * boundaries (the transitions) are found by binary search on the interval
 * index, so no zone data is copied and no libc time function (localtime,
 * setenv("TZ")) is used: a pal_tz is immutable and thread-safe.
 *
 * The cron engine calls pal_tz_resolve() for every candidate wall time, so it
 * has a fast path: when no transition lies within a day of the local time,
 * the answer costs two interval look-ups.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/tz.h"

/* RFC 8536 bounds UTC offsets to -25h..+26h; a wall time's UTC candidates
 * therefore all lie within this distance of it. */
#define TZ_WINDOW ((int64_t)26 * 3600)
/* Instants are clamped to +-2^50 s (about 35 million years) before they reach
 * GLib, so window arithmetic can never overflow. */
#define TZ_CLAMP ((int64_t)1 << 50)
#define TZ_NAME_MAX 255

struct pal_tz {
	GTimeZone *gtz; /* owned: one reference, dropped by pal_tz_close() */
	char name[];	/* as given to pal_tz_open() */
};

static int64_t clamp_instant(int64_t t)
{
	return t < -TZ_CLAMP ? -TZ_CLAMP : t > TZ_CLAMP ? TZ_CLAMP : t;
}

static int find_iv(const pal_tz *tz, int64_t t)
{
	return g_time_zone_find_interval(tz->gtz, G_TIME_TYPE_UNIVERSAL, clamp_instant(t));
}

static int32_t iv_offset(const pal_tz *tz, int iv)
{
	return g_time_zone_get_offset(tz->gtz, iv);
}

/*
 * A zone name must be a relative path of ordinary components under the zone
 * directory: no "..", no hidden files, nothing GLib might read as a POSIX TZ
 * rule or a fixed offset ("+02:00", "EST5").
 */
static bool name_is_well_formed(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > TZ_NAME_MAX || name[0] == '/' || name[len - 1] == '/')
		return false;
	bool at_component_start = true;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (at_component_start && (c == '.' || c == '/' || c == '-' || c == '+'))
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '/' || c == '_' || c == '-' || c == '+' || c == '.'))
			return false;
		at_component_start = c == '/';
	}
	return true;
}

/* True when NAME names a TZif file in the zone directory GLib reads. */
static bool name_is_tzif_file(const char *name)
{
	const char *dir = getenv("TZDIR");
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	char path[4096];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return false;
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return false;
	char magic[4];
	bool ok = fread(magic, 1, sizeof magic, fp) == sizeof magic && !memcmp(magic, "TZif", 4);
	fclose(fp);
	return ok;
}

/*
 * Opens NAME.  Returns PAL_EINVAL for NULL arguments, PAL_ENOENT (message in
 * err) for a name that is not an IANA zone on this system, PAL_ENOMEM when
 * allocation fails.  *out is owned by the caller: free with pal_tz_close().
 */
int pal_tz_open(const char *name, pal_tz **out, char *err, size_t errlen)
{
	if (!out)
		return PAL_EINVAL;
	*out = NULL;
	if (!name) {
		if (err && errlen)
			snprintf(err, errlen, "time zone missing");
		return PAL_EINVAL;
	}
	bool ok = !strcmp(name, "UTC") || (name_is_well_formed(name) && name_is_tzif_file(name));
	GTimeZone *gtz = ok ? g_time_zone_new_identifier(name) : NULL;
	if (!gtz) {
		if (err && errlen)
			snprintf(err, errlen,
				 "unknown time zone \"%.*s\" (expected an IANA name such as "
				 "\"Europe/Berlin\" or \"UTC\")",
				 64, name);
		return PAL_ENOENT;
	}
	size_t len = strlen(name);
	pal_tz *tz = malloc(sizeof *tz + len + 1);
	if (!tz) {
		g_time_zone_unref(gtz);
		return PAL_ENOMEM;
	}
	tz->gtz = gtz;
	memcpy(tz->name, name, len + 1);
	*out = tz;
	return PAL_OK;
}

void pal_tz_close(pal_tz *tz)
{
	if (!tz)
		return;
	g_time_zone_unref(tz->gtz);
	free(tz);
}

/* The name given to pal_tz_open(); owned by TZ, valid until pal_tz_close(). */
const char *pal_tz_name(const pal_tz *tz)
{
	return tz->name;
}

int32_t pal_tz_offset_at(const pal_tz *tz, int64_t t)
{
	return iv_offset(tz, find_iv(tz, t));
}

int64_t pal_tz_to_local(const pal_tz *tz, int64_t t)
{
	t = clamp_instant(t);
	return t + pal_tz_offset_at(tz, t);
}

/*
 * First instant of interval IV, known to start within (lo, hi]:
 * find_iv(lo) < iv <= find_iv(hi).  Binary search on the monotonic index.
 */
static int64_t iv_start(const pal_tz *tz, int iv, int64_t lo, int64_t hi)
{
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (find_iv(tz, mid) >= iv)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

int pal_tz_resolve(const pal_tz *tz, int64_t local, int64_t out[2], int64_t *gap_end)
{
	local = clamp_instant(local);
	int64_t lo = local - TZ_WINDOW, hi = local + TZ_WINDOW;
	int i0 = find_iv(tz, lo), i1 = find_iv(tz, hi);

	if (i0 == i1) { /* no transition nearby: the common case */
		out[0] = local - iv_offset(tz, i0);
		return 1;
	}

	/* Each interval whose offset maps LOCAL back into itself is one pass of
	 * the wall clock through LOCAL; intervals are in UTC order, so the
	 * instants come out ascending.  More than two passes would need two
	 * fall-backs within a day: keep the first and the last. */
	int n = 0;
	for (int i = i0; i <= i1; i++) {
		int64_t t = local - iv_offset(tz, i);
		if (find_iv(tz, t) != i)
			continue;
		if (n < 2)
			out[n++] = t;
		else
			out[1] = t;
	}
	if (n > 0)
		return n;

	/* A gap: find the transition whose local end of one interval and local
	 * start of the next straddle LOCAL. */
	if (gap_end) {
		*gap_end = local - iv_offset(tz, i0);
		int64_t from = lo;
		for (int i = i0; i < i1; i++) {
			int64_t t = iv_start(tz, i + 1, from, hi);
			int32_t before = iv_offset(tz, i), after = iv_offset(tz, i + 1);
			if (t + before <= local && local < t + after) {
				*gap_end = t;
				break;
			}
			from = t - 1; /* find_iv(t - 1) <= i < i + 1, even for empty intervals */
		}
	}
	return 0;
}

/* Smallest (or largest, when WANT_MAX) offset of the intervals meeting [from, to]. */
static int32_t offset_extreme(const pal_tz *tz, int64_t from, int64_t to, bool want_max)
{
	if (to < from) {
		int64_t x = from;
		from = to;
		to = x;
	}
	int i0 = find_iv(tz, from), i1 = find_iv(tz, to);
	int32_t best = iv_offset(tz, i0);
	for (int i = i0 + 1; i <= i1; i++) {
		int32_t o = iv_offset(tz, i);
		if (want_max ? o > best : o < best)
			best = o;
	}
	return best;
}

int32_t pal_tz_min_offset(const pal_tz *tz, int64_t from, int64_t to)
{
	return offset_extreme(tz, from, to, false);
}

int32_t pal_tz_max_offset(const pal_tz *tz, int64_t from, int64_t to)
{
	return offset_extreme(tz, from, to, true);
}
