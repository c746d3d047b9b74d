/*
 * cron.c - cron expressions: parsing and the next fire instant in a zone.
 *
 * Place in the flow: the job loader parses each job's `cron:` with
 * pal_cron_parse(); the controller asks pal_cron_next() for the instants it
 * plans; `palisade cron next` previews them.  docs/cron.md is the user-facing
 * description of the syntax and of the DST policies implemented here.
 *
 * A parsed expression is a set of bit masks (one per field) plus the Quartz
 * day specials (L, L-n, nW, LW, nL, n#k), immutable after parsing.
 *
 * pal_cron_next() works in local wall time (tz.h): it enumerates matching
 * wall times in increasing order, jumping over non-matching years, months,
 * days, hours and minutes (never scanning second by second), maps each to
 * UTC with pal_tz_resolve() and applies the DST policy.  Because a fall-back
 * makes wall time run backwards, "the next instant" is not always produced by
 * the next wall time; the search therefore starts at the smallest wall time
 * any later instant can show and keeps the smallest UTC result, stopping once
 * no further wall time can produce a smaller one.  All loops are bounded by
 * the year range 1970-2099.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "palisade/cron.h"
#include "palisade/timefmt.h"

#define YEAR_MIN 1970
#define YEAR_MAX 2099
#define EXPR_MAX 1024		       /* longer expressions are rejected */
#define TZ_SPAN ((int64_t)26 * 3600) /* bound on |UTC offset| (RFC 8536) */

/* Local wall time range of the search: 1970-01-01T00:00:00 ..
 * 2099-12-31T23:59:59 (days_from_civil(2100, 1, 1) = 47482). */
#define LOCAL_MIN ((int64_t)0)
#define LOCAL_MAX ((int64_t)47482 * 86400 - 1)

enum field_kind { F_SEC, F_MIN, F_HOUR, F_DOM, F_MONTH, F_DOW, F_YEAR };

enum dom_kind {
	DOM_SET,	  /* bits in dom */
	DOM_ANY,	  /* Quartz '?' */
	DOM_LAST,	  /* L or L-n: last day minus dom_arg */
	DOM_WEEKDAY,	  /* nW: weekday nearest to day dom_arg, same month */
	DOM_LAST_WEEKDAY, /* LW */
};

enum dow_kind {
	DOW_SET,  /* bits in dow */
	DOW_ANY,  /* Quartz '?' */
	DOW_LAST, /* nL: last weekday dow_arg of the month */
	DOW_NTH,  /* n#k: k-th weekday dow_arg of the month */
};

struct pal_cron {
	uint64_t sec;	   /* bit s: second s (0-59) */
	uint64_t min;	   /* bit m: minute m (0-59) */
	uint32_t hour;	   /* bit h: hour h (0-23) */
	uint32_t dom;	   /* bit d: day of month d (1-31) */
	uint16_t month;	   /* bit m: month m (1-12) */
	uint8_t dow;	   /* bit w: weekday w (0 = Sunday .. 6 = Saturday) */
	uint64_t year[3];  /* bit y - 1970: year y (1970-2099) */
	enum dom_kind dom_kind;
	int dom_arg;
	enum dow_kind dow_kind;
	int dow_arg; /* weekday 0-6 for nL and n#k */
	int dow_nth; /* k of n#k, 1-5 */
	bool quartz;
	bool dom_star, dow_star; /* Vixie: field starts with '*' (or '?') */
	bool wall_clock;	 /* pal_cron_follows_wall_clock() */
};

struct field_spec {
	const char *name;
	enum field_kind kind;
	int lo, hi; /* accepted values as written */
};

static const struct field_spec vixie_fields[5] = {
	{ "minute", F_MIN, 0, 59 },	    { "hour", F_HOUR, 0, 23 },	{ "day-of-month", F_DOM, 1, 31 },
	{ "month", F_MONTH, 1, 12 },	    { "day-of-week", F_DOW, 0, 7 },
};

static const struct field_spec quartz_fields[7] = {
	{ "second", F_SEC, 0, 59 },	    { "minute", F_MIN, 0, 59 },	 { "hour", F_HOUR, 0, 23 },
	{ "day-of-month", F_DOM, 1, 31 }, { "month", F_MONTH, 1, 12 }, { "day-of-week", F_DOW, 1, 7 },
	{ "year", F_YEAR, YEAR_MIN, YEAR_MAX },
};

static const char *const month_names[12] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
					     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
static const char *const dow_names[7] = { "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT" };

static const struct {
	const char *name;
	const char *expansion;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },	  { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

/* ---------------------------------------------------------------- errors */

/* Where a parse error is reported: the caller's buffer and field number. */
struct perr {
	char *buf;
	size_t len;
	int *field;
};

/* Copies up to 40 bytes of S into OUT for quoting, non-printables as '?'. */
static void quote_text(const char *s, size_t n, char out[48])
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < 40; i++) {
		unsigned char ch = (unsigned char)s[i];
		out[k++] = ch >= 0x20 && ch < 0x7f && ch != '"' ? (char)ch : '?';
	}
	if (n > 40) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
}

/* Reports a problem in field NO (1-based) whose text is TEXT[0..n). */
__attribute__((format(printf, 6, 7))) static int field_error(const struct perr *pe, int no,
							      const struct field_spec *spec,
							      const char *text, size_t n,
							      const char *fmt, ...)
{
	if (pe->field)
		*pe->field = no;
	if (pe->buf && pe->len) {
		char q[48];
		quote_text(text, n, q);
		int k = snprintf(pe->buf, pe->len, "field %d (%s) \"%s\": ", no, spec->name, q);
		if (k >= 0 && (size_t)k < pe->len) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(pe->buf + k, pe->len - (size_t)k, fmt, ap);
			va_end(ap);
		}
	}
	return PAL_EINVAL;
}

__attribute__((format(printf, 2, 3))) static int expr_error(const struct perr *pe, const char *fmt,
							     ...)
{
	if (pe->field)
		*pe->field = 0;
	if (pe->buf && pe->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(pe->buf, pe->len, fmt, ap);
		va_end(ap);
	}
	return PAL_EINVAL;
}

/* ---------------------------------------------------------------- parsing */

/* The field being parsed: its text, position and rules. */
struct field_ctx {
	const struct perr *pe;
	int no;
	const struct field_spec *spec;
	const char *text;
	size_t len;
	bool quartz;
};

#define FERR(fc, ...) field_error((fc)->pe, (fc)->no, (fc)->spec, (fc)->text, (fc)->len, __VA_ARGS__)

static char upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Case-insensitive: does S[0..n) equal the upper-case word W? */
static bool word_eq(const char *s, size_t n, const char *w)
{
	size_t wl = strlen(w);
	if (n != wl)
		return false;
	for (size_t i = 0; i < n; i++)
		if (upper(s[i]) != w[i])
			return false;
	return true;
}

static bool has_char_ci(const char *s, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (upper(s[i]) == c)
			return true;
	return false;
}

/* Parses decimal digits S[0..n) (n > 0) into *v; false when not all digits.
 * Values above 999999 saturate, so range checks still reject them. */
static bool parse_uint(const char *s, size_t n, int *v)
{
	if (n == 0)
		return false;
	int x = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		if (x < 1000000)
			x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return true;
}

/* One value of the field: a number or, for month and day-of-week, a name.
 * Returns 0 or a field error. */
static int parse_value(const struct field_ctx *fc, const char *s, size_t n, int *v)
{
	const struct field_spec *sp = fc->spec;
	if (n == 0)
		return FERR(fc, "missing value");
	if (parse_uint(s, n, v)) {
		if (*v < sp->lo || *v > sp->hi)
			return FERR(fc, "value %d out of range %d-%d", *v, sp->lo, sp->hi);
		return 0;
	}
	if (sp->kind == F_MONTH) {
		for (int i = 0; i < 12; i++)
			if (word_eq(s, n, month_names[i])) {
				*v = i + 1;
				return 0;
			}
		return FERR(fc, "unknown month \"%.*s\" (expected 1-12 or JAN-DEC)", (int)(n > 16 ? 16 : n),
			    s);
	}
	if (sp->kind == F_DOW) {
		for (int i = 0; i < 7; i++)
			if (word_eq(s, n, dow_names[i])) {
				*v = fc->quartz ? i + 1 : i;
				return 0;
			}
		return FERR(fc, "unknown day of week \"%.*s\" (expected %s or SUN-SAT)",
			    (int)(n > 16 ? 16 : n), s, fc->quartz ? "1-7 with 1 = Sunday" : "0-7");
	}
	return FERR(fc, "invalid value \"%.*s\" (expected a number %d-%d)", (int)(n > 16 ? 16 : n), s,
		    sp->lo, sp->hi);
}

/* A 130-bit set of field values, indexed by value - spec->lo. */
struct valset {
	uint64_t w[3];
};

static void valset_add(struct valset *vs, int idx)
{
	vs->w[idx / 64] |= (uint64_t)1 << (idx % 64);
}

/*
 * One list element: "*", "a", "a-b", each optionally "/step".  Quartz
 * ranges may wrap ("22-2" hours, "FRI-MON"); Vixie ranges may not.
 */
static int parse_element(const struct field_ctx *fc, const char *s, size_t n, struct valset *vs)
{
	const struct field_spec *sp = fc->spec;
	int size = sp->hi - sp->lo + 1;
	if (n == 0)
		return FERR(fc, "empty list element");
	const char *slash = memchr(s, '/', n);
	size_t left = slash ? (size_t)(slash - s) : n;
	int step = 1;
	if (slash) {
		size_t sl = n - left - 1;
		if (!parse_uint(slash + 1, sl, &step))
			return FERR(fc, "invalid step \"%.*s\" (expected a number 1-%d)", (int)(sl > 16 ? 16 : sl),
				    slash + 1, size);
		if (step < 1 || step > size)
			return FERR(fc, "step %d out of range 1-%d", step, size);
	}
	int a, b;
	if (left == 1 && s[0] == '*') {
		a = sp->lo;
		b = sp->hi;
	} else {
		const char *dash = memchr(s, '-', left);
		int rc;
		if (dash) {
			if ((rc = parse_value(fc, s, (size_t)(dash - s), &a)) ||
			    (rc = parse_value(fc, dash + 1, left - (size_t)(dash - s) - 1, &b)))
				return rc;
		} else {
			if ((rc = parse_value(fc, s, left, &a)))
				return rc;
			b = slash ? sp->hi : a;
		}
	}
	if (a <= b) {
		for (int v = a; v <= b; v += step)
			valset_add(vs, v - sp->lo);
		return 0;
	}
	if (!fc->quartz || sp->kind == F_YEAR)
		return FERR(fc, "range %d-%d is reversed (expected low-high)", a, b);
	int span = b - a + size; /* wrapping range, Quartz style: a..hi, lo..b */
	for (int k = 0; k <= span; k += step)
		valset_add(vs, (a - sp->lo + k) % size);
	return 0;
}

/* Stores value set VS into the field's mask in C. */
static void store_values(struct pal_cron *c, const struct field_spec *sp, bool quartz,
			 const struct valset *vs)
{
	for (int i = 0; i <= sp->hi - sp->lo; i++) {
		if (!(vs->w[i / 64] >> (i % 64) & 1))
			continue;
		int v = sp->lo + i;
		switch (sp->kind) {
		case F_SEC: c->sec |= (uint64_t)1 << v; break;
		case F_MIN: c->min |= (uint64_t)1 << v; break;
		case F_HOUR: c->hour |= (uint32_t)1 << v; break;
		case F_DOM: c->dom |= (uint32_t)1 << v; break;
		case F_MONTH: c->month |= (uint16_t)(1u << v); break;
		case F_DOW: c->dow |= (uint8_t)(1u << (quartz ? v - 1 : v % 7)); break;
		case F_YEAR: c->year[(v - YEAR_MIN) / 64] |= (uint64_t)1 << ((v - YEAR_MIN) % 64); break;
		}
	}
}

/* Quartz day-of-month specials: L, L-n, LW, nW (alone in the field). */
static int parse_dom_special(const struct field_ctx *fc, struct pal_cron *c)
{
	const char *s = fc->text;
	size_t n = fc->len;
	if (memchr(s, ',', n) || memchr(s, '/', n))
		return FERR(fc, "L and W cannot be combined with lists or steps");
	if (word_eq(s, n, "L")) {
		c->dom_kind = DOM_LAST;
		c->dom_arg = 0;
		return 0;
	}
	if (word_eq(s, n, "LW")) {
		c->dom_kind = DOM_LAST_WEEKDAY;
		return 0;
	}
	if (n >= 2 && upper(s[0]) == 'L' && s[1] == '-') {
		int k;
		if (!parse_uint(s + 2, n - 2, &k))
			return FERR(fc, "invalid offset after L- (expected L-n with n 0-30)");
		if (k > 30)
			return FERR(fc, "offset %d out of range 0-30", k);
		c->dom_kind = DOM_LAST;
		c->dom_arg = k;
		return 0;
	}
	if (n >= 2 && upper(s[n - 1]) == 'W') {
		int d;
		if (!parse_uint(s, n - 1, &d))
			return FERR(fc, "invalid day before W (expected nW with n 1-31, or LW)");
		if (d < 1 || d > 31)
			return FERR(fc, "value %d out of range 1-31", d);
		c->dom_kind = DOM_WEEKDAY;
		c->dom_arg = d;
		return 0;
	}
	return FERR(fc, "invalid use of L or W (expected L, L-n, nW or LW)");
}

/* Quartz day-of-week specials: L (= Saturday), nL, n#k (alone in the field). */
static int parse_dow_special(const struct field_ctx *fc, struct pal_cron *c)
{
	const char *s = fc->text;
	size_t n = fc->len;
	int rc, v;
	if (memchr(s, ',', n) || memchr(s, '/', n) || memchr(s, '-', n))
		return FERR(fc, "L and # cannot be combined with lists, ranges or steps");
	if (word_eq(s, n, "L")) {
		c->dow |= 1u << 6;
		return 0;
	}
	const char *hash = memchr(s, '#', n);
	if (hash) {
		size_t vl = (size_t)(hash - s), kl = n - vl - 1;
		int k;
		if ((rc = parse_value(fc, s, vl, &v)))
			return rc;
		if (!parse_uint(hash + 1, kl, &k))
			return FERR(fc, "invalid occurrence after # (expected n#k with k 1-5)");
		if (k < 1 || k > 5)
			return FERR(fc, "occurrence %d out of range 1-5", k);
		c->dow_kind = DOW_NTH;
		c->dow_arg = v - 1;
		c->dow_nth = k;
		return 0;
	}
	if (n >= 2 && upper(s[n - 1]) == 'L') {
		if ((rc = parse_value(fc, s, n - 1, &v)))
			return rc;
		c->dow_kind = DOW_LAST;
		c->dow_arg = v - 1;
		return 0;
	}
	return FERR(fc, "invalid use of L (expected L, nL or n#k)");
}

/* One whole field into C. */
static int parse_field(const struct field_ctx *fc, struct pal_cron *c)
{
	const struct field_spec *sp = fc->spec;
	const char *s = fc->text;
	size_t n = fc->len;

	if (n == 1 && s[0] == '?') {
		if (sp->kind != F_DOM && sp->kind != F_DOW)
			return FERR(fc, "'?' is only allowed in the day-of-month and day-of-week fields");
		if (fc->quartz) {
			if (sp->kind == F_DOM)
				c->dom_kind = DOM_ANY;
			else
				c->dow_kind = DOW_ANY;
			return 0;
		}
		s = "*"; /* Vixie: '?' reads as '*' */
		n = 1;
	}
	if (sp->kind == F_DOM && (has_char_ci(s, n, 'L') || has_char_ci(s, n, 'W'))) {
		if (!fc->quartz)
			return FERR(fc, "L and W are only supported in 6/7-field Quartz expressions");
		return parse_dom_special(fc, c);
	}
	if (sp->kind == F_DOW && (has_char_ci(s, n, 'L') || memchr(s, '#', n))) {
		if (!fc->quartz)
			return FERR(fc, "L and # are only supported in 6/7-field Quartz expressions");
		return parse_dow_special(fc, c);
	}

	struct valset vs = { { 0, 0, 0 } };
	const char *p = s, *end = s + n;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		int rc = parse_element(fc, p, (size_t)(e - p), &vs);
		if (rc)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	store_values(c, sp, fc->quartz, &vs);
	return 0;
}

/*
 * Splits BUF (modified in place) into at most 8 whitespace-separated fields;
 * returns their number (8 means "more than 7").
 */
static int split_fields(char *buf, const char *field[8], size_t flen[8])
{
	int nf = 0;
	char *p = buf;
	for (;;) {
		while (*p && is_space(*p))
			p++;
		if (!*p)
			break;
		if (nf == 8)
			return 8;
		field[nf] = p;
		while (*p && !is_space(*p))
			p++;
		flen[nf] = (size_t)(p - field[nf]);
		nf++;
	}
	return nf;
}

static bool starts_star(const char *s, size_t n)
{
	return n > 0 && (s[0] == '*' || s[0] == '?');
}

static int parse_fields(const char *expr, struct pal_cron *c, const struct perr *pe)
{
	char buf[EXPR_MAX + 1];
	size_t len = strlen(expr);
	if (len > EXPR_MAX)
		return expr_error(pe, "expression too long (%zu bytes, at most %d)", len, EXPR_MAX);
	memcpy(buf, expr, len + 1);

	const char *field[8];
	size_t flen[8];
	int nf = split_fields(buf, field, flen);
	if (nf == 1 && field[0][0] == '@') {
		for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
			if (flen[0] == strlen(macros[i].name) &&
			    !strncasecmp(field[0], macros[i].name, flen[0]))
				return parse_fields(macros[i].expansion, c, pe);
		char q[48];
		quote_text(field[0], flen[0], q);
		return expr_error(pe,
				  "unknown macro \"%s\" (expected @yearly, @annually, @monthly, @weekly, "
				  "@daily, @midnight or @hourly)",
				  q);
	}
	if (nf < 5 || nf > 7)
		return expr_error(pe,
				  "expected 5 fields (minute hour day-of-month month day-of-week) or 6-7 "
				  "Quartz fields (second minute hour day-of-month month day-of-week "
				  "[year]), got %s%d",
				  nf > 7 ? "more than " : "", nf > 7 ? 7 : nf);

	c->quartz = nf >= 6;
	const struct field_spec *specs = c->quartz ? quartz_fields : vixie_fields;
	if (!c->quartz)
		c->sec = 1; /* second 0 */
	if (nf < 7)
		for (int y = YEAR_MIN; y <= YEAR_MAX; y++)
			c->year[(y - YEAR_MIN) / 64] |= (uint64_t)1 << ((y - YEAR_MIN) % 64);
	for (int i = 0; i < nf; i++) {
		struct field_ctx fc = { pe, i + 1, &specs[i], field[i], flen[i], c->quartz };
		int rc = parse_field(&fc, c);
		if (rc)
			return rc;
	}

	int dom_i = c->quartz ? 3 : 2, dow_i = c->quartz ? 5 : 4;
	if (c->quartz) {
		bool dom_any = c->dom_kind == DOM_ANY, dow_any = c->dow_kind == DOW_ANY;
		if (dom_any && dow_any)
			return field_error(pe, dow_i + 1, &specs[dow_i], field[dow_i], flen[dow_i],
					   "day-of-month and day-of-week cannot both be '?' "
					   "(use '?' in exactly one of them)");
		if (!dom_any && !dow_any)
			return field_error(pe, dow_i + 1, &specs[dow_i], field[dow_i], flen[dow_i],
					   "one of day-of-month and day-of-week must be '?' in a "
					   "Quartz expression (e.g. \"0 0 12 ? * MON\" or \"0 0 12 1 * ?\")");
		c->wall_clock = starts_star(field[0], flen[0]) || starts_star(field[1], flen[1]) ||
				starts_star(field[2], flen[2]);
	} else {
		c->dom_star = starts_star(field[dom_i], flen[dom_i]);
		c->dow_star = starts_star(field[dow_i], flen[dow_i]);
		c->wall_clock = starts_star(field[0], flen[0]) || starts_star(field[1], flen[1]);
	}
	return 0;
}

int pal_cron_parse(const char *expr, pal_cron **out, char *err, size_t errlen, int *err_field)
{
	struct perr pe = { err, errlen, err_field };
	if (err && errlen)
		err[0] = '\0';
	if (err_field)
		*err_field = 0;
	if (!out)
		return PAL_EINVAL;
	*out = NULL;
	if (!expr)
		return expr_error(&pe, "cron expression missing");
	pal_cron *c = calloc(1, sizeof *c);
	if (!c)
		return PAL_ENOMEM;
	int rc = parse_fields(expr, c, &pe);
	if (rc) {
		free(c);
		return rc;
	}
	*out = c;
	return PAL_OK;
}

void pal_cron_free(pal_cron *c)
{
	free(c);
}

bool pal_cron_follows_wall_clock(const pal_cron *c)
{
	return c->wall_clock;
}

pal_dst_policy pal_cron_effective_dst(const pal_cron *c, pal_dst_policy p)
{
	if (!p.is_auto)
		return p;
	if (pal_cron_follows_wall_clock(c))
		return (pal_dst_policy){ .is_auto = false, .gap = PAL_DST_GAP_SKIP,
					 .overlap = PAL_DST_OVERLAP_BOTH };
	return (pal_dst_policy){ .is_auto = false, .gap = PAL_DST_GAP_SHIFT,
				 .overlap = PAL_DST_OVERLAP_FIRST };
}

/* ---------------------------------------------------------------- matching */

/* Day of month of the weekday nearest to day D (D <= dim) without leaving
 * the month; WD1 is the weekday of day 1. */
static int nearest_weekday(int d, int dim, int wd1)
{
	int wd = (wd1 + d - 1) % 7;
	if (wd == 6) /* Saturday: Friday before, or Monday 3rd when D is the 1st */
		return d == 1 ? 3 : d - 1;
	if (wd == 0) /* Sunday: Monday after, or Friday before when D is the last */
		return d == dim ? d - 2 : d + 1;
	return d;
}

static bool dom_matches(const pal_cron *c, int d, int dim, int wd1)
{
	switch (c->dom_kind) {
	case DOM_SET: return c->dom >> d & 1;
	case DOM_ANY: return true;
	case DOM_LAST: return d == dim - c->dom_arg;
	case DOM_WEEKDAY: return c->dom_arg <= dim && d == nearest_weekday(c->dom_arg, dim, wd1);
	case DOM_LAST_WEEKDAY: return d == nearest_weekday(dim, dim, wd1);
	}
	return false;
}

static bool dow_matches(const pal_cron *c, int d, int dim, int wd1)
{
	int wd = (wd1 + d - 1) % 7;
	switch (c->dow_kind) {
	case DOW_SET: return c->dow >> wd & 1;
	case DOW_ANY: return true;
	case DOW_LAST: return wd == c->dow_arg && d + 7 > dim;
	case DOW_NTH: return wd == c->dow_arg && (d - 1) / 7 + 1 == c->dow_nth;
	}
	return false;
}

static bool day_matches(const pal_cron *c, int d, int dim, int wd1)
{
	if (c->quartz)
		return c->dom_kind == DOM_ANY ? dow_matches(c, d, dim, wd1) : dom_matches(c, d, dim, wd1);
	if (c->dom_star || c->dow_star)
		return dom_matches(c, d, dim, wd1) && dow_matches(c, d, dim, wd1);
	return dom_matches(c, d, dim, wd1) || dow_matches(c, d, dim, wd1);
}

/* Smallest set bit of MASK at or above FROM (0..63), or -1. */
static int next_bit(uint64_t mask, int from)
{
	if (from >= 64)
		return -1;
	uint64_t m = mask & (~(uint64_t)0 << from);
	return m ? __builtin_ctzll(m) : -1;
}

/* First matching second of the day at or after SOD, or -1. */
static int next_time_of_day(const pal_cron *c, int sod)
{
	int h = sod / 3600, mi = sod / 60 % 60, s = sod % 60;
	for (;;) {
		int h2 = next_bit(c->hour, h);
		if (h2 < 0)
			return -1;
		if (h2 != h) {
			h = h2;
			mi = 0;
			s = 0;
		}
		int m2 = next_bit(c->min, mi);
		if (m2 < 0) {
			h++;
			mi = 0;
			s = 0;
			continue;
		}
		if (m2 != mi) {
			mi = m2;
			s = 0;
		}
		int s2 = next_bit(c->sec, s);
		if (s2 < 0) {
			mi++;
			s = 0;
			if (mi == 60) {
				h++;
				mi = 0;
			}
			continue;
		}
		return h * 3600 + mi * 60 + s2;
	}
}

static bool year_matches(const pal_cron *c, int64_t y)
{
	if (y < YEAR_MIN || y > YEAR_MAX)
		return false;
	int i = (int)(y - YEAR_MIN);
	return c->year[i / 64] >> (i % 64) & 1;
}

/*
 * Smallest matching local wall time >= FROM into *out; false when there is
 * none up to 2099-12-31T23:59:59.  Visits at most one step per year, month
 * and day of the range, so it is bounded even for expressions that never
 * match.
 */
static bool next_local(const pal_cron *c, int64_t from, int64_t *out)
{
	if (from < LOCAL_MIN)
		from = LOCAL_MIN;
	if (from > LOCAL_MAX)
		return false;
	int64_t days = pal_floor_div(from, 86400);
	int sod = (int)(from - days * 86400);
	int64_t y;
	unsigned m, d;
	pal_civil_from_days(days, &y, &m, &d);
	for (;;) {
		if (y > YEAR_MAX)
			return false;
		if (!year_matches(c, y)) {
			y++;
			m = 1;
			d = 1;
			sod = 0;
			continue;
		}
		int dim = (int)pal_days_in_month(y, m);
		if (!(c->month >> m & 1) || (int)d > dim) {
			if (++m > 12) {
				m = 1;
				y++;
			}
			d = 1;
			sod = 0;
			continue;
		}
		int64_t day0 = pal_days_from_civil(y, m, 1);
		int wd1 = pal_weekday(day0);
		if (day_matches(c, (int)d, dim, wd1)) {
			int t = next_time_of_day(c, sod);
			if (t >= 0) {
				*out = (day0 + d - 1) * 86400 + t;
				return true;
			}
		}
		d++;
		sod = 0;
	}
}

/* ---------------------------------------------------------------- next */

/* The best (smallest) fire instant found so far that is > after. */
struct best {
	int64_t after;
	bool have;
	int64_t at;
};

static void consider(struct best *b, int64_t u)
{
	if (u > b->after && (!b->have || u < b->at)) {
		b->at = u;
		b->have = true;
	}
}

int pal_cron_next(const pal_cron *c, const pal_tz *tz, pal_dst_policy dst, int64_t after,
		  int64_t *next)
{
	if (!c || !tz || !next)
		return PAL_EINVAL;
	pal_dst_policy eff = pal_cron_effective_dst(c, dst);

	/* Every fire instant lies within TZ_SPAN of the local range. */
	if (after >= LOCAL_MAX + TZ_SPAN)
		return PAL_ENOENT;
	if (after < LOCAL_MIN - 2 * TZ_SPAN)
		after = LOCAL_MIN - 2 * TZ_SPAN;

	/*
	 * Smallest wall time any instant u > after can show: after + 1 + the
	 * smallest offset in effect shortly after AFTER.  A fall-back within
	 * (off_a - min) seconds is the only way to read an earlier wall time;
	 * beyond 52 h no zone's offset can bring the wall clock back that far.
	 */
	int32_t off_a = pal_tz_offset_at(tz, after);
	int32_t lowest = pal_tz_min_offset(tz, after, after + 2 * TZ_SPAN);
	if (lowest < off_a)
		lowest = pal_tz_min_offset(tz, after, after + (off_a - lowest));
	int64_t local = after + 1 + lowest;

	struct best b = { after, false, 0 };
	while (next_local(c, local, &local)) {
		if (b.have) {
			/* A later wall time L only yields instants >= L - max offset
			 * in force between L - TZ_SPAN and the best so far. */
			if (local - TZ_SPAN > b.at)
				break;
			int64_t from = local - TZ_SPAN > after ? local - TZ_SPAN : after;
			if (local >= b.at + pal_tz_max_offset(tz, from, b.at))
				break;
		}
		int64_t out[2], gap_end = 0;
		int n = pal_tz_resolve(tz, local, out, &gap_end);
		if (n == 0) {
			if (eff.gap == PAL_DST_GAP_SHIFT)
				consider(&b, gap_end);
			/* Every wall time of this gap behaves alike: skip to its end. */
			int64_t gap_local_end = pal_tz_to_local(tz, gap_end);
			local = gap_local_end > local ? gap_local_end : local + 1;
			continue;
		}
		if (n == 1) {
			consider(&b, out[0]);
		} else {
			if (eff.overlap != PAL_DST_OVERLAP_LAST)
				consider(&b, out[0]);
			if (eff.overlap != PAL_DST_OVERLAP_FIRST)
				consider(&b, out[1]);
		}
		local++;
	}
	if (!b.have)
		return PAL_ENOENT;
	*next = b.at;
	return PAL_OK;
}

/* ---------------------------------------------------------------- policy */

int pal_dst_policy_parse(const char *s, pal_dst_policy *out, char *err, size_t errlen)
{
	if (!s || !out)
		return PAL_EINVAL;
	if (!strcmp(s, "auto")) {
		*out = PAL_DST_AUTO;
		return PAL_OK;
	}
	pal_dst_policy p = { .is_auto = false, .gap = PAL_DST_GAP_SHIFT,
			     .overlap = PAL_DST_OVERLAP_FIRST };
	bool seen_gap = false, seen_overlap = false;
	const char *q = s;
	if (!*q)
		goto bad;
	for (;;) {
		const char *comma = strchr(q, ',');
		size_t n = comma ? (size_t)(comma - q) : strlen(q);
		if (n == 9 && !strncmp(q, "gap=shift", 9) && !seen_gap) {
			p.gap = PAL_DST_GAP_SHIFT;
			seen_gap = true;
		} else if (n == 8 && !strncmp(q, "gap=skip", 8) && !seen_gap) {
			p.gap = PAL_DST_GAP_SKIP;
			seen_gap = true;
		} else if (n == 13 && !strncmp(q, "overlap=first", 13) && !seen_overlap) {
			p.overlap = PAL_DST_OVERLAP_FIRST;
			seen_overlap = true;
		} else if (n == 12 && !strncmp(q, "overlap=last", 12) && !seen_overlap) {
			p.overlap = PAL_DST_OVERLAP_LAST;
			seen_overlap = true;
		} else if (n == 12 && !strncmp(q, "overlap=both", 12) && !seen_overlap) {
			p.overlap = PAL_DST_OVERLAP_BOTH;
			seen_overlap = true;
		} else {
			goto bad;
		}
		if (!comma)
			break;
		q = comma + 1;
	}
	*out = p;
	return PAL_OK;
bad:
	if (err && errlen)
		snprintf(err, errlen,
			 "invalid dst policy \"%.*s\" (expected \"auto\" or "
			 "\"gap=shift|skip,overlap=first|last|both\", each key at most once)",
			 64, s);
	return PAL_EINVAL;
}
