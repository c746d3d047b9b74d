/*
 * trace.c - W3C Trace Context (https://www.w3.org/TR/trace-context/) as
 * palisade sends it: trace ids derived from the trigger, span ids from the
 * attempt, and the parsers of both headers.  See trace.h for the rule and
 * docs/protocol.md for what a service sees.  Pure functions, no allocation.
 */
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "palisade/sha256.h"
#include "palisade/trace.h"

static const char hexd[] = "0123456789abcdef";

static void put_hex64(uint64_t v, char *out)
{
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = hexd[v & 15];
}

/* N hex digits of S into *V; false on any other character. */
static bool get_hex(const char *s, int n, uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < n; i++) {
		int d = g_ascii_xdigit_value(s[i]);
		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

uint64_t pal_trace_cluster(const char *cluster)
{
	char buf[128];
	uint8_t h[32];
	int n = snprintf(buf, sizeof buf, "palisade:%s", cluster ? cluster : "");
	pal_sha256(buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1, h);
	uint64_t p = 0;
	for (int i = 0; i < 8; i++)
		p = p << 8 | h[i];
	return p;
}

void pal_trace_id(uint64_t prefix, int64_t trigger, char out[PAL_TRACE_ID_HEX + 1])
{
	put_hex64(prefix, out);
	put_hex64((uint64_t)trigger, out + 16);
	out[PAL_TRACE_ID_HEX] = '\0';
}

int pal_trace_id_parse(const char *s, uint64_t *prefix, int64_t *trigger, char *err, size_t errlen)
{
	uint64_t hi, lo;
	if (!s || strlen(s) != PAL_TRACE_ID_HEX || !get_hex(s, 16, &hi) ||
	    !get_hex(s + 16, 16, &lo)) {
		snprintf(err, errlen, "\"%.64s\" is not a trace id (expected 32 hex digits)",
			 s ? s : "");
		return PAL_EINVAL;
	}
	if (lo == 0 || lo > (uint64_t)INT64_MAX) {
		snprintf(err, errlen,
			 "trace id %.32s names no trigger (its last 16 digits are the trigger id); "
			 "hint: was it sent by palisade?",
			 s);
		return PAL_EINVAL;
	}
	*prefix = hi;
	*trigger = (int64_t)lo;
	return PAL_OK;
}

uint64_t pal_span_id(pal_span_kind kind, int attempt, int64_t fence)
{
	return (uint64_t)(kind & 0xff) << 56 | ((uint64_t)attempt & 0xffff) << 40 |
	       ((uint64_t)fence & 0xffffffffffULL);
}

void pal_traceparent(uint64_t prefix, int64_t trigger, uint64_t span, bool sampled,
		     char out[PAL_TRACEPARENT_LEN + 1])
{
	memcpy(out, "00-", 3);
	pal_trace_id(prefix, trigger, out + 3);
	out[35] = '-';
	put_hex64(span, out + 36);
	memcpy(out + 52, sampled ? "-01" : "-00", 4);
}

static bool lowhex(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int pal_traceparent_parse(const char *s, char trace[PAL_TRACE_ID_HEX + 1], uint64_t *span,
			  uint8_t *flags)
{
	if (!s)
		return PAL_EINVAL;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	/* version "-" trace-id "-" parent-id "-" flags, lower-case hex only */
	if (n < PAL_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-' ||
	    !lowhex(s, 2) || !lowhex(s + 3, 32) || !lowhex(s + 36, 16) || !lowhex(s + 53, 2))
		return PAL_EINVAL;
	if (!memcmp(s, "ff", 2))
		return PAL_EINVAL;
	/* version 00 is exactly 55 characters; a later one may add "-..." */
	if (!memcmp(s, "00", 2) ? n != PAL_TRACEPARENT_LEN
				: n > PAL_TRACEPARENT_LEN && s[PAL_TRACEPARENT_LEN] != '-')
		return PAL_EINVAL;
	if (!memcmp(s + 3, "00000000000000000000000000000000", 32) ||
	    !memcmp(s + 36, "0000000000000000", 16))
		return PAL_EINVAL;
	uint64_t f = 0;
	memcpy(trace, s + 3, PAL_TRACE_ID_HEX);
	trace[PAL_TRACE_ID_HEX] = '\0';
	(void)get_hex(s + 36, 16, span);
	(void)get_hex(s + 53, 2, &f);
	*flags = (uint8_t)f;
	return PAL_OK;
}

void pal_trace_ids_json(json_t *triggers, uint64_t prefix)
{
	size_t i;
	json_t *t;
	json_array_foreach(triggers, i, t)
	{
		char id[PAL_TRACE_ID_HEX + 1];
		json_t *v = json_object_get(t, "id");
		if (!json_is_integer(v))
			continue;
		pal_trace_id(prefix, (int64_t)json_integer_value(v), id);
		json_object_set_new(t, "trace_id", json_string(id));
	}
}

/* ---- tracestate ---------------------------------------------------------------- */

static bool key_chr(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       c == '*' || c == '/';
}

/* Whether K (length N) is a list-member key: a simple key, or
 * tenant-id@system-id. */
static bool key_ok(const char *k, size_t n)
{
	const char *at = memchr(k, '@', n);
	if (!at) {
		if (n < 1 || n > 256 || !(k[0] >= 'a' && k[0] <= 'z'))
			return false;
		for (size_t i = 1; i < n; i++)
			if (!key_chr(k[i]))
				return false;
		return true;
	}
	size_t t = (size_t)(at - k), sys = n - t - 1;
	if (t < 1 || t > 241 || sys < 1 || sys > 14)
		return false;
	if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9')) ||
	    !(at[1] >= 'a' && at[1] <= 'z'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (k + i != at && !key_chr(k[i]))
			return false;
	return true;
}

bool pal_tracestate_valid(const char *s, char *err, size_t errlen)
{
	size_t len = s ? strlen(s) : 0;
	if (len == 0 || len > PAL_TRACESTATE_MAX) {
		snprintf(err, errlen, "tracestate must be 1 to %d characters (it has %zu)",
			 PAL_TRACESTATE_MAX, len);
		return false;
	}
	struct {
		const char *k;
		size_t n;
	} keys[32];
	int members = 0;
	const char *p = s;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *end = strchr(p, ',');
		if (!end)
			end = s + len;
		const char *q = end;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
			q--;
		const char *eq = memchr(p, '=', (size_t)(q - p));
		if (q == p) {
			snprintf(err, errlen, "tracestate: empty list member at character %d",
				 (int)(p - s) + 1);
			return false;
		}
		if (!eq || !key_ok(p, (size_t)(eq - p))) {
			snprintf(
			    err, errlen,
			    "tracestate: \"%.*s\" is not key=value with a key of a-z 0-9 _ - * / "
			    "(starting with a-z; tenant@system allowed)",
			    (int)(q - p) > 80 ? 80 : (int)(q - p), p);
			return false;
		}
		size_t vn = (size_t)(q - eq - 1);
		bool vok = vn >= 1 && vn <= 256;
		for (const char *v = eq + 1; vok && v < q; v++)
			vok = *v >= 0x20 && *v <= 0x7e && *v != ',' && *v != '=';
		if (!vok) {
			snprintf(
			    err, errlen,
			    "tracestate: the value of \"%.*s\" must be 1 to 256 printable ASCII "
			    "characters without ',' or '='",
			    (int)(eq - p) > 80 ? 80 : (int)(eq - p), p);
			return false;
		}
		if (members == 32) {
			snprintf(err, errlen, "tracestate: more than 32 list members");
			return false;
		}
		for (int i = 0; i < members; i++)
			if (keys[i].n == (size_t)(eq - p) && !memcmp(keys[i].k, p, keys[i].n)) {
				snprintf(err, errlen, "tracestate: key \"%.*s\" appears twice",
					 (int)keys[i].n > 80 ? 80 : (int)keys[i].n, p);
				return false;
			}
		keys[members].k = p;
		keys[members].n = (size_t)(eq - p);
		members++;
		if (!*end)
			return true;
		p = end + 1;
	}
}
