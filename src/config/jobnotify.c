/*
 * jobnotify.c - a job's `notify:`: the webhooks told of its events.
 */
#include <stdlib.h>
#include <string.h>
#include "jobfile_int.h"

#define MAX_NOTIFY 16

/* One `notify:` entry's "on": an event name or a list of them, each once. */
static unsigned notify_events(struct jctx *c, const pal_ynode *v)
{
	unsigned ev = 0;
	size_t n = v->kind == PAL_YNODE_SEQ ? v->n : 1;

	if (v->kind == PAL_YNODE_MAP) {
		pal__job_diag(c, v, "notify: on: expected an event or a list of events");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const pal_ynode *it = v->kind == PAL_YNODE_SEQ ? v->vals[i] : v;
		int e;

		if (pal_yget_enum(c->doc, it, "notify event", pal_notify_event_names,
				  PAL_NOTIFY_N_EVENTS, &e, c->diags) != 0) {
			c->errors++;
			return 0;
		}
		if (ev & (1u << e)) {
			pal__job_diag(c, it, "notify: on: \"%s\" is listed twice",
				      pal_notify_event_names[e]);
			return 0;
		}
		ev |= 1u << e;
	}
	if (!ev)
		pal__job_diag(c, v,
			      "notify: on: expected at least one event (failed, manual, misfire, "
			      "quarantined, recovered)");
	return ev;
}

/* The secret of a webhook: exactly one ${NAME} reference, resolved by the
 * delivering executor, so that no secret is ever stored or logged. */
static char *notify_secret(struct jctx *c, const pal_ynode *v)
{
	char *str = pal__job_str(c, v, "notify: secret", 256);
	size_t n;

	if (!str)
		return NULL;
	n = strlen(str);
	if (n < 4 || str[0] != '$' || str[1] != '{' || str[n - 1] != '}' ||
	    strspn(str + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n - 3 ||
	    (str[2] >= '0' && str[2] <= '9')) {
		pal__job_diag(
		    c, v,
		    "notify: secret must be one ${NAME} reference to an environment variable "
		    "holding a whsec_ secret, not the secret itself (it would be stored in the "
		    "job's version)");
		free(str);
		return NULL;
	}
	return str;
}

/*
 * `notify: [{on: [failed, ...], url: URL, secret: ${NAME}}]`: who is told
 * of which events of the job (docs/jobs.md).  Every entry needs all three
 * keys; the url is an http(s) url without placeholders or secrets.
 */
void pal__job_key_notify(struct jctx *c, const pal_ynode *v, pal_job_spec *s)
{
	static const char *const keys[] = {"on", "url", "secret"};
	pal_notify *out;
	size_t n = 0, idx[MAX_NOTIFY]; /* idx: the entry each of out came from */

	if (pal_yexpect_seq(c->doc, v, "notify", c->diags) != 0) {
		c->errors++;
		return;
	}
	if (v->n == 0 || v->n > MAX_NOTIFY) {
		pal__job_diag(c, v,
			      "notify: expected 1 to %d entries, got %zu; hint: leave the key out "
			      "for none",
			      MAX_NOTIFY, v->n);
		return;
	}
	out = calloc(v->n, sizeof *out);
	if (!out) {
		pal__job_diag(c, v, "notify: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *e = v->vals[i], *on, *url, *sec;
		pal_notify d = {0};
		int before = c->errors;

		if (pal_yexpect_map(c->doc, e, "notify entry", c->diags) != 0) {
			c->errors++;
			continue;
		}
		for (size_t k = 0; k < e->n; k++) {
			bool known = false;

			for (size_t x = 0; x < N(keys); x++)
				known = known || !strcmp(e->keys[k]->str, keys[x]);
			if (!known) {
				const char *hint = pal_suggest(e->keys[k]->str, keys, N(keys));

				if (hint)
					pal__job_diag(
					    c, e->keys[k],
					    "unknown key \"%s\" in notify (did you mean \"%s\"?)",
					    e->keys[k]->str, hint);
				else
					pal__job_diag(
					    c, e->keys[k],
					    "unknown key \"%s\" in notify (expected on, url, "
					    "secret)",
					    e->keys[k]->str);
			}
		}
		on = pal_ynode_get(e, "on");
		url = pal_ynode_get(e, "url");
		sec = pal_ynode_get(e, "secret");
		if (!on || !url || !sec) {
			pal__job_diag(
			    c, e, "notify: missing key \"%s\" (every entry has on, url and secret)",
			    !on	   ? "on"
			    : !url ? "url"
				   : "secret");
			continue;
		}
		d.events = notify_events(c, on);
		d.url = pal__job_str(c, url, "notify: url", URL_MAX_LEN);
		if (d.url && pal__job_url(c, url, "notify: url", d.url))
			pal__job_template(c, url, "notify: url", 0, false);
		d.secret = notify_secret(c, sec);
		/* one event, one request per receiver: the webhook id ends in the
		 * entry's index, so two entries of one url that share an event
		 * would send it twice under two ids, which no receiver can
		 * deduplicate */
		for (size_t j = 0; j < n && c->errors == before && d.events && d.url; j++) {
			unsigned both = out[j].events & d.events;
			if (!strcmp(out[j].url, d.url) && both) {
				int e = 0;
				while (!(both & (1u << e)))
					e++;
				pal__job_diag(
				    c, url,
				    "notify: url %s already gets \"%s\" from entry %zu: list "
				    "each event once per url",
				    d.url, pal_notify_event_names[e], idx[j]);
			}
		}
		if (c->errors != before || !d.events || !d.url || !d.secret) {
			free(d.url);
			free(d.secret);
			continue;
		}
		idx[n] = i;
		out[n++] = d;
	}
	for (size_t i = 0; i < s->n_notify; i++) {
		free(s->notify[i].url);
		free(s->notify[i].secret);
	}
	free(s->notify);
	s->notify = out;
	s->n_notify = n;
}
