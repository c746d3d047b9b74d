/*
 * proto.c - pure helpers of the sink's HTTP protocol: header values,
 * percent-decoding of the status URL, the payload digest and the JSON
 * bodies the sink answers with.
 *
 * No I/O, no state: every function may be called from any thread.  The
 * unit test tests/unit/test_sink_proto.c compiles this file directly (the
 * sink's objects are not part of libpalisade.a).
 *
 * Ownership: functions returning char * return malloc()ed memory the caller
 * frees; everything else writes into caller buffers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include <jansson.h>
#include "sink_int.h"

int pal__sink_parse_token(const char *s, int64_t *out)
{
	if (s == NULL || *s == '\0')
		return PAL_EINVAL;
	uint64_t v = 0;
	size_t n = 0;
	for (const char *p = s; *p; p++, n++) {
		if (*p < '0' || *p > '9' || n >= 20)
			return PAL_EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return PAL_ETOOBIG; /* beyond u64 */
		v = v * 10 + d;
	}
	if (v > (uint64_t)INT64_MAX)
		return PAL_ETOOBIG;
	*out = (int64_t)v;
	return PAL_OK;
}

int pal__sink_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (s == NULL || *s == '\0')
		return PAL_EINVAL;
	bool neg = false;
	const char *p = s;
	if (*p == '-' && min < 0) {
		neg = true;
		p++;
	}
	if (*p == '\0' || strlen(p) > 19)
		return PAL_EINVAL;
	int64_t v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return PAL_EINVAL;
		int d = *p - '0';
		if (v > (INT64_MAX - d) / 10)
			return PAL_EINVAL;
		v = v * 10 + d;
	}
	if (neg)
		v = -v;
	if (v < min || v > max)
		return PAL_EINVAL;
	*out = v;
	return PAL_OK;
}

int pal__sink_parse_checkpoint(const char *s, int64_t max, int64_t *out)
{
	char buf[24];
	size_t n = strlen(s);
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		if (n - 2 >= sizeof buf)
			return PAL_EINVAL;
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
		s = buf;
	}
	return pal__sink_parse_int(s, 0, max, out);
}

const char *pal__sink_check_key(const char *key)
{
	if (key == NULL || key[0] == '\0')
		return "missing or empty Idempotency-Key header";
	if (strlen(key) > SINK_KEY_MAX)
		return "Idempotency-Key is longer than " SINK_STR(SINK_KEY_MAX) " bytes";
	if (!g_utf8_validate(key, -1, NULL))
		return "Idempotency-Key is not valid UTF-8";
	return NULL;
}

int pal__sink_pct_decode(const char *in, char *out, size_t outlen)
{
	size_t n = 0;
	if (outlen == 0)
		return PAL_ETOOBIG;
	for (const char *p = in; *p; p++) {
		int c = (unsigned char)*p;
		if (c == '%') {
			int hi = g_ascii_xdigit_value(p[1]);
			int lo = hi < 0 ? -1 : g_ascii_xdigit_value(p[2]);
			if (hi < 0 || lo < 0)
				return PAL_EINVAL;
			c = hi * 16 + lo;
			if (c == 0)
				return PAL_EINVAL;
			p += 2;
		}
		if (n + 1 >= outlen)
			return PAL_ETOOBIG;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return g_utf8_validate(out, (gssize)n, NULL) ? PAL_OK : PAL_EINVAL;
}

char *pal__sink_pct_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t len = strlen(s);
	char *out = malloc(3 * len + 1);
	if (out == NULL)
		return NULL;
	char *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

void pal__sink_digest(const char *method, const char *target, const void *body, size_t len,
		      char hex[65])
{
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
	/* method and target cannot contain a newline, so the framing is unambiguous */
	g_checksum_update(c, (const guchar *)method, (gssize)strlen(method));
	g_checksum_update(c, (const guchar *)"\n", 1);
	g_checksum_update(c, (const guchar *)target, (gssize)strlen(target));
	g_checksum_update(c, (const guchar *)"\n", 1);
	if (len > 0)
		g_checksum_update(c, body, (gssize)len);
	snprintf(hex, 65, "%s", g_checksum_get_string(c));
	g_checksum_free(c);
}

/* Serialise and release J (NULL in, NULL out). */
static char *dump(json_t *j)
{
	if (j == NULL)
		return NULL;
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

char *pal__sink_body_applied(const char *key, int64_t fence)
{
	return dump(
	    json_pack("{s:b, s:s, s:I}", "applied", 1, "key", key, "fence", (json_int_t)fence));
}

char *pal__sink_body_chunk(const char *key, int done, int total)
{
	char cp[16];
	snprintf(cp, sizeof cp, "%d", done);
	json_t *j =
	    json_pack("{s:b, s:s, s:{s:i, s:i}, s:i, s:s}", "has_more", done < total, "checkpoint",
		      cp, "progress", "done", done, "of", total, "next_delay_s", 0, "key", key);
	if (j != NULL && done >= total)
		json_object_set_new(j, "applied", json_true());
	return dump(j);
}

char *pal__sink_body_error(const char *code, const char *detail)
{
	json_t *j = json_pack("{s:s}", "error", code);
	if (j != NULL && detail != NULL)
		json_object_set_new(j, "detail", json_string(detail));
	return dump(j);
}
