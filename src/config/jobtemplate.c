/*
 * jobtemplate.c - templates and secrets in a job's strings, and the
 * idempotency key.
 *
 * A url, header value, body or key may hold ${SECRET} references (resolved
 * by the executor, never stored) and {placeholder}s (expanded per attempt);
 * pal__job_template() says which each field allows.  The idempotency key is
 * checked once the whole job is read: it must tell jobs, instants and
 * partitions apart, and fit the protocol's Idempotency-Key at its longest.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "jobfile_int.h"
#include "palisade/name.h"
#include "palisade/template.h"

#define TEMPLATE_MAX_LEN 1024
/*
 * The longest idempotency key a template may expand to, in bytes: the
 * protocol's limit on Idempotency-Key (docs/protocol.md), which the reference
 * sink enforces as SINK_KEY_MAX (src/sink/sink_int.h; the two are tied by
 * tests/unit/test_sink_proto.c).  It stays below what the executor can put
 * in its 1024-byte header line ("Idempotency-Key: " + key + NUL: 1006).
 */
#define IDEM_KEY_MAX 1000
/* Placeholders at their longest: a request id (`palisade trigger` and
 * `backfill --request-id`: 1-128 characters), a positive bigint trigger id,
 * an RFC 3339 UTC instant of a four-digit year, a partition below 1024. */
#define REQUEST_ID_MAX_LEN PAL_TPL_REQUEST_ID_MAX
#define TRIGGER_ID_MAX_LEN 19
#define SCHEDULED_AT_LEN 20
#define SCHEDULED_DATE_LEN 10
#define PARTITION_MAX_LEN 4

static const char *const placeholder_names[] = {
    "job",     "scheduled_at", "scheduled_date",  "partition",
    "trigger", "request_id",   "idempotency_key",
};

static bool is_upper_ident(char ch, bool first)
{
	return (ch >= 'A' && ch <= 'Z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
}

static bool is_lower_ident(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
}

/*
 * Check a string that may hold ${SECRET} references (when SECRETS) and
 * {placeholder}s from ALLOWED (a PH_* mask; 0 means placeholders are not
 * expanded in this field, so one that looks like a placeholder is refused
 * rather than sent literally).  A '{' not followed by identifier + '}' is a
 * literal brace (JSON bodies are full of them).  Returns the mask of the
 * placeholders used.
 */
unsigned pal__job_template(struct jctx *c, const pal_ynode *v, const char *what, unsigned allowed,
			   bool secrets)
{
	const char *s = v->str;
	unsigned used = 0;

	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '$' && s[i + 1] == '{') {
			size_t j = i + 2;

			while (s[j] && is_upper_ident(s[j], j == i + 2))
				j++;
			if (j == i + 2 || s[j] != '}') {
				size_t close = strcspn(s + i, "}");
				int shown = (int)(s[i + close] ? close + 1 : close);

				pal__job_diag_at(
				    c, v, i,
				    "%s: malformed secret reference \"%.*s\"%s (expected "
				    "${NAME} with NAME made of A-Z, 0-9 and _, not starting "
				    "with a digit)",
				    what, shown > 40 ? 40 : shown, s + i, shown > 40 ? "..." : "");
				return used;
			}
			if (!secrets) {
				pal__job_diag_at(
				    c, v, i,
				    "%s: secret references such as \"%.*s\" are not allowed "
				    "here; hint: secrets belong in target.headers, url, body "
				    "or status_url",
				    what, (int)(j - i + 1), s + i);
			}
			i = j;
			continue;
		}
		if (s[i] == '{' && is_lower_ident(s[i + 1], true)) {
			size_t j = i + 1;
			int found = -1;

			while (s[j] && is_lower_ident(s[j], false))
				j++;
			if (s[j] != '}')
				continue; /* a literal brace */
			for (size_t p = 0; p < N(placeholder_names); p++)
				if (strlen(placeholder_names[p]) == j - i - 1 &&
				    !strncmp(placeholder_names[p], s + i + 1, j - i - 1))
					found = (int)p;
			if (found >= 0 && (allowed & (1u << found))) {
				used |= 1u << found;
			} else if (!allowed) {
				pal__job_diag_at(
				    c, v, i,
				    "%s: placeholders such as \"%.*s\" are not expanded here; "
				    "hint: they work in idempotency_key, body and status_url",
				    what, (int)(j - i + 1), s + i);
			} else {
				GString *list = g_string_new(NULL);
				char word[64];
				const char *cands[N(placeholder_names)];
				size_t nc = 0;
				const char *hint;

				for (size_t p = 0; p < N(placeholder_names); p++) {
					if (!(allowed & (1u << p)))
						continue;
					g_string_append_printf(list, "%s{%s}", nc ? ", " : "",
							       placeholder_names[p]);
					cands[nc++] = placeholder_names[p];
				}
				snprintf(word, sizeof word, "%.*s", (int)(j - i - 1), s + i + 1);
				hint = pal_suggest(word, cands, nc);
				if (hint)
					pal__job_diag_at(
					    c, v, i,
					    "%s: unknown placeholder \"{%s}\" (did you mean "
					    "\"{%s}\"?)",
					    what, word, hint);
				else
					pal__job_diag_at(
					    c, v, i,
					    "%s: unknown placeholder \"{%s}\" (expected %s)", what,
					    word, list->str);
				g_string_free(list, TRUE);
			}
			i = j;
		}
	}
	return used;
}

/*
 * The most bytes idempotency-key template TPL expands to for job JOB_ID, with
 * every placeholder at its longest, as the executor renders it
 * (pal_tpl_render_key): walks TPL as pal_tpl_render() does without flags (a
 * '{', lower-case letters or '_', and '}' naming a placeholder is replaced,
 * every other byte is copied), and when TPL has no {request_id}, adds the
 * "/<request id>" a manual run's or backfill's key ends with.
 */
static size_t idem_key_max_len(const char *tpl, const char *job_id)
{
	static const struct {
		const char *name;
		size_t len;
	} widths[] = {
	    {"scheduled_at", SCHEDULED_AT_LEN}, {"scheduled_date", SCHEDULED_DATE_LEN},
	    {"partition", PARTITION_MAX_LEN},	{"trigger", TRIGGER_ID_MAX_LEN},
	    {"request_id", REQUEST_ID_MAX_LEN},
	};
	size_t n = 0;

	for (const char *p = tpl; *p;) {
		if (*p == '{') {
			const char *e = p + 1;

			while ((*e >= 'a' && *e <= 'z') || *e == '_')
				e++;
			if (*e == '}' && e > p + 1) {
				size_t len = (size_t)(e - p - 1), w = SIZE_MAX;

				if (len == 3 && !memcmp(p + 1, "job", 3))
					w = job_id ? strlen(job_id) : NAME_MAX_LEN;
				for (size_t i = 0; i < N(widths); i++)
					if (strlen(widths[i].name) == len &&
					    !memcmp(p + 1, widths[i].name, len))
						w = widths[i].len;
				if (w != SIZE_MAX) {
					n += w;
					p = e + 1;
					continue;
				}
			}
		}
		n++;
		p++;
	}
	if (!pal_tpl_uses(tpl, "request_id"))
		n += PAL_TPL_KEY_SUFFIX_MAX;
	return n;
}

void pal__job_key_idem(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	char *str = pal__job_str(c, v, "idempotency_key", TEMPLATE_MAX_LEN);

	if (!str)
		return;
	if (!str[0]) {
		pal__job_diag(c, v,
			      "idempotency_key: must not be empty; hint: remove the key to use "
			      "the default {job}/{scheduled_at}/{partition}");
		free(str);
		return;
	}
	if (str[0] == ' ' || str[strlen(str) - 1] == ' ') {
		pal__job_diag(
		    c, v,
		    "idempotency_key: \"%.64s\" begins or ends with a space; HTTP drops "
		    "such spaces from a header value, so the sink would store another key "
		    "than the one palisade asks about; remove them",
		    str);
		free(str);
		return;
	}
	for (size_t i = 0; str[i]; i++) {
		unsigned char ch = (unsigned char)str[i];

		if (ch < 0x20 || ch == 0x7F) {
			pal__job_diag_at(
			    c, v, i,
			    "idempotency_key: control character 0x%02X; the key travels "
			    "in an HTTP header line and must be printable",
			    ch);
			free(str);
			return;
		}
	}
	free(s->idempotency_key);
	s->idempotency_key = str;
	c->n_idem = v; /* a scalar: checked as a template in pal__job_check_idem() */
}

/* Whether TPL's keys name their job unambiguously: {job} first, then a
 * literal character outside a job id's alphabet ([a-z0-9._-]), so a key's
 * text up to that character is its job's id and two jobs never share one.
 * Text before {job}, or a placeholder or id character right after it, lets
 * one job's key equal another's ("billing.{job}" for job invoice). */
static bool idem_key_names_job(const char *tpl)
{
	static const char job[] = "{job}";
	if (strncmp(tpl, job, sizeof job - 1))
		return false;
	unsigned char ch = (unsigned char)tpl[sizeof job - 1];
	return ch > ' ' && ch < 0x7f && !islower(ch) && !isdigit(ch) && !strchr("._-{}$", ch);
}

/* The idempotency key against the rest of the job (partitions, the id), for
 * the checks that span keys. */
void pal__job_check_idem(struct jctx *c, const pal_ynode *job, pal_job_spec *s)
{
	if (s->idempotency_key) {
		const pal_ynode *n = c->n_idem ? c->n_idem : job;
		unsigned used;
		int before = c->errors;

		if (c->n_idem) {
			used = pal__job_template(c, n, "idempotency_key", PH_COMMON, false);
		} else {
			/* the default template: always valid */
			used = PH_JOB | PH_SCHEDULED_AT | PH_PARTITION;
		}
		if (c->errors == before) {
			if (!(used & PH_JOB))
				pal__job_diag(
				    c, n,
				    "idempotency_key: must contain {job}: without it two jobs "
				    "can share a key and one effect would be suppressed");
			if (!(used & PH_SCHEDULED_AT))
				pal__job_diag(
				    c, n,
				    "idempotency_key: must contain {scheduled_at}: without "
				    "it every instant shares one key and only the first would "
				    "take effect");
			if (s->partitions > 1 && !(used & PH_PARTITION))
				pal__job_diag(c, n,
					      "idempotency_key: must contain {partition} when "
					      "partitions is %d: partitions would share one key",
					      (int)s->partitions);
			if (c->n_idem && !idem_key_names_job(s->idempotency_key))
				pal__job_diag(
				    c, n,
				    "idempotency_key: must begin with {job} and a character "
				    "a job id cannot hold (\"{job}/\", \"{job}:\"): otherwise "
				    "another job's keys can be this job's (\"billing.{job}\" "
				    "for job invoice makes job billing.invoice's keys) and the "
				    "service would take one job's effect for the other's");
		}
		if (c->errors == before && c->n_idem) {
			size_t max = idem_key_max_len(s->idempotency_key, s->id);

			if (max > IDEM_KEY_MAX)
				pal__job_diag(
				    c, n,
				    "idempotency_key: expands to up to %zu bytes, more than the "
				    "%d an Idempotency-Key may have (docs/protocol.md); "
				    "placeholders count at their longest: {job} %zu, "
				    "{scheduled_at} %d, {scheduled_date} %d, {partition} %d, "
				    "{trigger} %d, {request_id} %d, and without {request_id} the "
				    "\"/<request id>\" of a manual run's key %d; hint: shorten "
				    "the fixed text",
				    max, IDEM_KEY_MAX, s->id ? strlen(s->id) : (size_t)NAME_MAX_LEN,
				    SCHEDULED_AT_LEN, SCHEDULED_DATE_LEN, PARTITION_MAX_LEN,
				    TRIGGER_ID_MAX_LEN, REQUEST_ID_MAX_LEN, PAL_TPL_KEY_SUFFIX_MAX);
		}
	}
}
