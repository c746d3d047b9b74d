/*
 * tz.c - IANA time zones read from the system's TZif files (RFC 8536).
 *
 * A zone is loaded once by pal_tz_open() into an immutable table: the
 * explicit transitions of the file's 64-bit (v2+) data block, plus the POSIX
 * TZ rule of its footer, which governs every instant after the last explicit
 * transition (slim TZif files stop listing transitions early; fat ones at
 * 2037).  No libc time function (localtime, setenv("TZ")) and no global state
 * is involved, so a pal_tz may be shared between threads.
 *
 * Why not GLib's GTimeZone (the first implementation): GLib 2.74 expands the
 * footer rule itself and gets negative DST wrong - Europe/Dublin
 * ("IST-1GMT0,M10.5.0,M3.5.0/1") comes out at UTC+2 every winter after 2037,
 * which tests/reference/cron_reference.py caught against zoneinfo; its
 * interval look-up is also a linear scan.  tests/unit/test_tz.c still
 * compares this reader with GLib for every zone where GLib is right.
 *
 * Everything the cron engine needs reduces to two primitives: offset_at(t)
 * (binary search, or the rule) and next_change(t) (the first instant after t
 * at which the offset changes).  pal_tz_resolve() maps a wall time back to
 * UTC by trying the offsets in force within a day of it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/timefmt.h"
#include "palisade/tz.h"

/* RFC 8536 bounds UTC offsets to -25h..+26h; a wall time's UTC candidates
 * therefore all lie within this distance of it. */
#define TZ_WINDOW ((int64_t)26 * 3600)
/* Instants are clamped to +-2^50 s (about 35 million years): no overflow in
 * window arithmetic, and no year the calendar code cannot represent. */
#define TZ_CLAMP ((int64_t)1 << 50)
#define TZ_NAME_MAX 255
#define TZ_FILE_MAX (1 << 20)
#define TZ_TIMECNT_MAX 100000

/* One date of a POSIX TZ rule: Jn, n or Mm.w.d, at SECS local seconds. */
struct rule_date {
	char kind; /* 'J' (1-365, no Feb 29), 'N' (0-365), 'M' (month.week.day) */
	int a, b, c;
	int32_t secs; /* -167h..167h (RFC 8536 extension of POSIX) */
};

/* The footer rule: std_off all year, or dst_off between start and end. */
struct posix_rule {
	int32_t std_off, dst_off; /* seconds east of UTC */
	bool has_dst;
	struct rule_date start, end; /* start in standard time, end in DST */
};

struct pal_tz {
	int64_t *trans;	    /* owned: explicit transition instants, ascending */
	int32_t *trans_off; /* owned: offset in force from trans[i] on */
	size_t ntrans;
	int32_t first_off; /* offset before trans[0] (time type 0) */
	bool has_rule;	   /* footer present: governs t >= trans[ntrans - 1] */
	struct posix_rule rule;
	char name[]; /* as given to pal_tz_open() */
};

static int64_t clamp_instant(int64_t t)
{
	return t < -TZ_CLAMP ? -TZ_CLAMP : t > TZ_CLAMP ? TZ_CLAMP : t;
}

/* ---------------------------------------------------------------- POSIX rule */

/* Zone abbreviation: <...> quoted, or three or more letters. */
static bool parse_tz_name(const char **p)
{
	const char *s = *p;
	if (*s == '<') {
		s++;
		const char *b = s;
		while (*s && *s != '>') {
			if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
			      (*s >= '0' && *s <= '9') || *s == '+' || *s == '-'))
				return false;
			s++;
		}
		if (*s != '>' || s == b)
			return false;
		*p = s + 1;
		return true;
	}
	const char *b = s;
	while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
		s++;
	if (s - b < 3)
		return false;
	*p = s;
	return true;
}

/* [+-]hh[:mm[:ss]] with hh <= MAXH, as signed seconds (POSIX sign). */
static bool parse_hms(const char **p, int maxh, int32_t *out)
{
	const char *s = *p;
	int sign = 1;
	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	int v[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++) {
		if (i > 0) {
			if (*s != ':')
				break;
			s++;
		}
		if (*s < '0' || *s > '9')
			return false;
		int n = 0, digits = 0;
		while (*s >= '0' && *s <= '9' && digits < 3) {
			n = n * 10 + (*s++ - '0');
			digits++;
		}
		v[i] = n;
	}
	if (v[0] > maxh || v[1] > 59 || v[2] > 59)
		return false;
	*out = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
	*p = s;
	return true;
}

static bool parse_uint_max(const char **p, int max, int *out)
{
	const char *s = *p;
	int n = 0;
	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9') {
		n = n * 10 + (*s++ - '0');
		if (n > max)
			return false;
	}
	*out = n;
	*p = s;
	return true;
}

static bool parse_rule_date(const char **p, struct rule_date *d)
{
	const char *s = *p;
	if (*s == 'M') {
		s++;
		d->kind = 'M';
		if (!parse_uint_max(&s, 12, &d->a) || d->a < 1 || *s++ != '.' ||
		    !parse_uint_max(&s, 5, &d->b) || d->b < 1 || *s++ != '.' ||
		    !parse_uint_max(&s, 6, &d->c))
			return false;
	} else if (*s == 'J') {
		s++;
		d->kind = 'J';
		if (!parse_uint_max(&s, 365, &d->a) || d->a < 1)
			return false;
	} else {
		d->kind = 'N';
		if (!parse_uint_max(&s, 365, &d->a))
			return false;
	}
	d->secs = 2 * 3600;
	if (*s == '/') {
		s++;
		if (!parse_hms(&s, 167, &d->secs))
			return false;
	}
	*p = s;
	return true;
}

/* Parses a TZif footer such as "CET-1CEST,M3.5.0,M10.5.0/3". */
static bool parse_posix_rule(const char *s, struct posix_rule *r)
{
	int32_t v;
	memset(r, 0, sizeof *r);
	if (!parse_tz_name(&s) || !parse_hms(&s, 24, &v))
		return false;
	r->std_off = -v;
	if (!*s)
		return true;
	if (!parse_tz_name(&s))
		return false;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (*s && *s != ',') {
		if (!parse_hms(&s, 24, &v))
			return false;
		r->dst_off = -v;
	}
	if (!*s) { /* POSIX leaves the default rule to the implementation: tzcode's */
		r->start = (struct rule_date){ 'M', 3, 2, 0, 7200 };
		r->end = (struct rule_date){ 'M', 11, 1, 0, 7200 };
		return true;
	}
	if (*s++ != ',' || !parse_rule_date(&s, &r->start) || *s++ != ',' ||
	    !parse_rule_date(&s, &r->end))
		return false;
	return *s == '\0';
}

/* Local seconds (since 1970, wall time) at which rule date D falls in year Y. */
static int64_t rule_local(const struct rule_date *d, int64_t y)
{
	int64_t days;
	if (d->kind == 'J') {
		days = pal_days_from_civil(y, 1, 1) + d->a - 1 + (pal_is_leap(y) && d->a >= 60);
	} else if (d->kind == 'N') {
		days = pal_days_from_civil(y, 1, 1) + d->a;
	} else {
		int mdays = (int)pal_days_in_month(y, (unsigned)d->a);
		int64_t first = pal_days_from_civil(y, (unsigned)d->a, 1);
		int wd1 = pal_weekday(first);
		int day = 1 + (d->c - wd1 + 7) % 7 + 7 * (d->b - 1);
		while (day > mdays)
			day -= 7;
		days = first + day - 1;
	}
	return days * 86400 + d->secs;
}

/* The rule's transitions in years Y-2..Y+2, ascending: at[i] switches to
 * off[i].  At equal instants the switch to DST sorts last, so a rule that is
 * DST all year ("EST5EDT,0/0,J365/25") stays in DST. */
static int rule_transitions(const struct posix_rule *r, int64_t y, int64_t at[10], int32_t off[10])
{
	int n = 0;
	for (int64_t yy = y - 2; yy <= y + 2; yy++) {
		at[n] = rule_local(&r->end, yy) - r->dst_off;
		off[n++] = r->std_off;
		at[n] = rule_local(&r->start, yy) - r->std_off;
		off[n++] = r->dst_off;
	}
	for (int i = 1; i < n; i++) /* insertion sort, stable */
		for (int j = i; j > 0; j--) {
			bool swap = at[j] < at[j - 1] ||
				    (at[j] == at[j - 1] && off[j - 1] == r->dst_off && off[j] == r->std_off);
			if (!swap)
				break;
			int64_t ta = at[j];
			at[j] = at[j - 1];
			at[j - 1] = ta;
			int32_t to = off[j];
			off[j] = off[j - 1];
			off[j - 1] = to;
		}
	return n;
}

static int64_t year_of(int64_t t)
{
	int64_t y;
	unsigned m, d;
	pal_civil_from_days(pal_floor_div(t, 86400), &y, &m, &d);
	return y;
}

static int32_t rule_offset_at(const struct posix_rule *r, int64_t t)
{
	if (!r->has_dst)
		return r->std_off;
	int64_t at[10];
	int32_t off[10];
	int n = rule_transitions(r, year_of(t + r->std_off), at, off);
	int32_t o = off[0] == r->std_off ? r->dst_off : r->std_off;
	for (int i = 0; i < n && at[i] <= t; i++)
		o = off[i];
	return o;
}

/* First rule transition strictly after T (whether or not it changes the
 * offset); false for a rule without DST. */
static bool rule_next(const struct posix_rule *r, int64_t t, int64_t *at_out)
{
	if (!r->has_dst)
		return false;
	int64_t at[10];
	int32_t off[10];
	int n = rule_transitions(r, year_of(t + r->std_off), at, off);
	for (int i = 0; i < n; i++)
		if (at[i] > t) {
			*at_out = at[i];
			return true;
		}
	return false;
}

/* ---------------------------------------------------------------- TZif */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_counts {
	uint32_t isut, isstd, leap, time, type, chr;
};

static bool read_header(const unsigned char *p, size_t len, struct tzif_counts *c, int *version)
{
	if (len < 44 || memcmp(p, "TZif", 4))
		return false;
	*version = p[4] ? p[4] - '0' : 1;
	c->isut = be32(p + 20);
	c->isstd = be32(p + 24);
	c->leap = be32(p + 28);
	c->time = be32(p + 32);
	c->type = be32(p + 36);
	c->chr = be32(p + 40);
	return c->type >= 1 && c->type <= 256 && c->time <= TZ_TIMECNT_MAX && c->chr <= 65536 &&
	       c->leap <= 65536 && (c->isut == 0 || c->isut == c->type) &&
	       (c->isstd == 0 || c->isstd == c->type);
}

static size_t block_len(const struct tzif_counts *c, size_t tsize)
{
	return (size_t)c->time * tsize + c->time + (size_t)c->type * 6 + c->chr +
	       (size_t)c->leap * (tsize + 4) + c->isstd + c->isut;
}

/*
 * Fills TZ from TZif bytes BUF[0..len).  Uses the 64-bit block and footer
 * of v2+ files, the 32-bit block of v1 files.  Zones with leap seconds
 * ("right/...") are rejected: palisade's time has none.  On success TZ owns
 * trans and trans_off.
 */
static int load_tzif(pal_tz *tz, const unsigned char *buf, size_t len, char *err, size_t errlen)
{
	struct tzif_counts c;
	int version, rc = PAL_EIO;
	const char *why = "not a valid TZif file";
	if (!read_header(buf, len, &c, &version))
		goto bad;
	size_t tsize = 4, off = 44;
	if (version >= 2) {
		off += block_len(&c, 4);
		if (off > len || !read_header(buf + off, len - off, &c, &version))
			goto bad;
		off += 44;
		tsize = 8;
	}
	if (c.leap) {
		why = "zone files with leap seconds (right/...) are not supported";
		goto bad;
	}
	size_t need = block_len(&c, tsize);
	if (off + need > len)
		goto bad;
	const unsigned char *times = buf + off, *idx = times + c.time * tsize;
	const unsigned char *types = idx + c.time;

	tz->trans = malloc((c.time ? c.time : 1) * sizeof *tz->trans);
	tz->trans_off = malloc((c.time ? c.time : 1) * sizeof *tz->trans_off);
	if (!tz->trans || !tz->trans_off) {
		why = "out of memory";
		rc = PAL_ENOMEM;
		goto bad;
	}
	tz->first_off = (int32_t)be32(types);
	for (uint32_t i = 0; i < c.time; i++) {
		int64_t t = tsize == 8 ? be64(times + 8 * i) : (int64_t)(int32_t)be32(times + 4 * i);
		if (idx[i] >= c.type || (tz->ntrans && t <= tz->trans[tz->ntrans - 1]))
			goto bad;
		tz->trans[tz->ntrans] = clamp_instant(t);
		tz->trans_off[tz->ntrans] = (int32_t)be32(types + 6 * idx[i]);
		tz->ntrans++;
	}
	for (uint32_t i = 0; i < c.type; i++) {
		int32_t o = (int32_t)be32(types + 6 * i);
		if (o <= -25 * 3600 || o >= 26 * 3600)
			goto bad;
	}

	if (version >= 2) { /* footer: "\n" rule "\n" */
		const unsigned char *f = buf + off + need;
		size_t flen = len - off - need;
		if (flen < 2 || f[0] != '\n')
			goto bad;
		const unsigned char *nl = memchr(f + 1, '\n', flen - 1);
		if (!nl || nl - f - 1 > 255)
			goto bad;
		if (nl > f + 1) {
			char rule[256];
			memcpy(rule, f + 1, (size_t)(nl - f - 1));
			rule[nl - f - 1] = '\0';
			if (!parse_posix_rule(rule, &tz->rule)) {
				why = "unsupported TZ rule in the zone file's footer";
				goto bad;
			}
			tz->has_rule = true;
		}
	}
	return PAL_OK;
bad:
	if (err && errlen)
		snprintf(err, errlen, "time zone \"%.64s\": %s", tz->name, why);
	return rc;
}

/* ---------------------------------------------------------------- open/close */

/*
 * A zone name must be a relative path of ordinary components under the zone
 * directory: no "..", no hidden files, nothing that looks like a POSIX TZ
 * rule or a fixed offset ("+02:00", "EST5" is fine only as a file name).
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

/* Reads file NAME under the zone directory into a malloc'd buffer the caller
 * frees; NULL when it does not exist, is not a regular file or is too big. */
static unsigned char *read_zone_file(const char *name, size_t *len)
{
	const char *dir = getenv("TZDIR");
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	char path[4096];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return NULL;
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	unsigned char *buf = malloc(TZ_FILE_MAX);
	size_t n = buf ? fread(buf, 1, TZ_FILE_MAX, fp) : 0;
	bool ok = buf && !ferror(fp) && n > 0 && n < TZ_FILE_MAX;
	fclose(fp);
	if (!ok) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/*
 * Opens NAME.  Returns PAL_EINVAL for NULL arguments, PAL_ENOENT (message in
 * err) for a name that is not an IANA zone on this system, PAL_EIO for a
 * damaged or unsupported zone file, PAL_ENOMEM.  *out is owned by the caller:
 * free with pal_tz_close().  "UTC" works even without a zone file.
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
	size_t len = 0;
	unsigned char *buf = name_is_well_formed(name) ? read_zone_file(name, &len) : NULL;
	bool is_utc = !strcmp(name, "UTC");
	if (!buf && !is_utc) {
		if (err && errlen)
			snprintf(err, errlen,
				 "unknown time zone \"%.64s\" (expected an IANA name such as "
				 "\"Europe/Berlin\" or \"UTC\")",
				 name);
		return PAL_ENOENT;
	}
	size_t nlen = strlen(name);
	pal_tz *tz = calloc(1, sizeof *tz + nlen + 1);
	if (!tz) {
		free(buf);
		return PAL_ENOMEM;
	}
	memcpy(tz->name, name, nlen + 1);
	int rc = PAL_OK;
	if (buf) {
		rc = load_tzif(tz, buf, len, err, errlen);
		/* A non-TZif file in the zone directory (zone.tab, ...) is no zone. */
		if (rc && len >= 4 && memcmp(buf, "TZif", 4)) {
			if (err && errlen)
				snprintf(err, errlen,
					 "unknown time zone \"%.64s\" (expected an IANA name such as "
					 "\"Europe/Berlin\" or \"UTC\")",
					 name);
			rc = PAL_ENOENT;
		}
		free(buf);
	}
	if (rc) {
		pal_tz_close(tz);
		return rc;
	}
	*out = tz;
	return PAL_OK;
}

/*
 * Whether NAME names the host's own zone rather than one tzdata zone:
 * "localtime" (a link to the host's /etc/localtime) and "posixrules" (which
 * distributions point at different zones), in any directory.
 */
static bool name_is_host_zone(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return !strcmp(base, "localtime") || !strcmp(base, "posixrules");
}

/*
 * Opens NAME as pal_tz_open() does for a name being defined (a job file, a
 * calendar, an import, `cron next`): a host's own zone is refused as well
 * (PAL_EINVAL), since hosts set to different zones read it differently.
 */
int pal_tz_open_iana(const char *name, pal_tz **out, char *err, size_t errlen)
{
	if (out && name && name_is_host_zone(name)) {
		*out = NULL;
		if (err && errlen)
			snprintf(err, errlen,
				 "time zone \"%.64s\" is the host's own zone, not one IANA zone "
				 "(hosts set to different zones read it differently); name an "
				 "IANA zone such as \"Europe/Berlin\" or \"UTC\"",
				 name);
		return PAL_EINVAL;
	}
	return pal_tz_open(name, out, err, errlen);
}

void pal_tz_close(pal_tz *tz)
{
	if (!tz)
		return;
	free(tz->trans);
	free(tz->trans_off);
	free(tz);
}

/* The name given to pal_tz_open(); owned by TZ, valid until pal_tz_close(). */
const char *pal_tz_name(const pal_tz *tz)
{
	return tz->name;
}

/* ---------------------------------------------------------------- queries */

/* Number of explicit transitions at or before T. */
static size_t trans_upto(const pal_tz *tz, int64_t t)
{
	size_t lo = 0, hi = tz->ntrans;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tz->trans[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool rule_governs(const pal_tz *tz, int64_t t)
{
	return tz->has_rule && (tz->ntrans == 0 || t >= tz->trans[tz->ntrans - 1]);
}

int32_t pal_tz_offset_at(const pal_tz *tz, int64_t t)
{
	t = clamp_instant(t);
	if (rule_governs(tz, t))
		return rule_offset_at(&tz->rule, t);
	size_t n = trans_upto(tz, t);
	return n ? tz->trans_off[n - 1] : tz->first_off;
}

int64_t pal_tz_to_local(const pal_tz *tz, int64_t t)
{
	t = clamp_instant(t);
	return t + pal_tz_offset_at(tz, t);
}

/* First transition instant strictly after T, explicit or by the rule; false
 * when there is none. */
static bool next_transition(const pal_tz *tz, int64_t t, int64_t *at)
{
	size_t n = trans_upto(tz, t);
	if (n < tz->ntrans) {
		*at = tz->trans[n];
		return true;
	}
	return tz->has_rule && rule_next(&tz->rule, t, at);
}

/* First instant in (T, LIMIT] at which the offset changes; false if none. */
static bool next_change(const pal_tz *tz, int64_t t, int64_t limit, int64_t *at)
{
	int32_t cur = pal_tz_offset_at(tz, t);
	for (int guard = 0; guard < 64; guard++) {
		int64_t c;
		if (!next_transition(tz, t, &c) || c > limit)
			return false;
		if (pal_tz_offset_at(tz, c) != cur) {
			*at = c;
			return true;
		}
		t = c;
	}
	return false;
}

int pal_tz_resolve(const pal_tz *tz, int64_t local, int64_t out[2], int64_t *gap_end)
{
	local = clamp_instant(local);
	int64_t lo = local - TZ_WINDOW, hi = local + TZ_WINDOW;

	/* The offsets in force over [lo, hi] as intervals [start[i], start[i+1]). */
	enum { MAXIV = 16 };
	int64_t start[MAXIV + 1];
	int32_t off[MAXIV];
	int niv = 0;
	start[0] = lo;
	off[0] = pal_tz_offset_at(tz, lo);
	niv = 1;
	int64_t t = lo, c;
	while (niv < MAXIV && next_change(tz, t, hi, &c)) {
		start[niv] = c;
		off[niv] = pal_tz_offset_at(tz, c);
		niv++;
		t = c;
	}
	start[niv] = hi + 1;

	/* Each interval whose offset maps LOCAL back into itself is one pass of
	 * the wall clock through LOCAL; intervals are in UTC order, so the
	 * instants come out ascending.  More than two passes would need two
	 * fall-backs within a day: keep the first and the last. */
	int n = 0;
	for (int i = 0; i < niv; i++) {
		int64_t u = local - off[i];
		if (u < start[i] || u >= start[i + 1])
			continue;
		if (n < 2)
			out[n++] = u;
		else
			out[1] = u;
	}
	if (n > 0)
		return n;

	/* A gap: the transition whose old offset ends the wall clock before
	 * LOCAL and whose new offset starts it after. */
	if (gap_end) {
		*gap_end = local - off[0];
		for (int i = 1; i < niv; i++)
			if (start[i] + off[i - 1] <= local && local < start[i] + off[i]) {
				*gap_end = start[i];
				break;
			}
	}
	return 0;
}

/* Smallest (or largest, when WANT_MAX) offset in force in [from, to]. */
static int32_t offset_extreme(const pal_tz *tz, int64_t from, int64_t to, bool want_max)
{
	from = clamp_instant(from);
	to = clamp_instant(to);
	if (to < from) {
		int64_t x = from;
		from = to;
		to = x;
	}
	int32_t best = pal_tz_offset_at(tz, from);
	int64_t t = from, c;
	/* about two changes a year: the bound only matters for absurd spans */
	for (int guard = 0; guard < 4096 && next_change(tz, t, to, &c); guard++) {
		int32_t o = pal_tz_offset_at(tz, c);
		if (want_max ? o > best : o < best)
			best = o;
		t = c;
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
