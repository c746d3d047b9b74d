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
 * One webhook entry E of `notify:` or of `notify_rules:` (WHAT names it in
 * messages) into *D: the keys KEYS[0..nk) are allowed, of which on, url and
 * secret are read here (SCOPE more, checked by the caller).  Every entry
 * needs the three (on and secret not with REMOVE); the url is an http(s)
 * url without placeholders or secrets.  False (D freed) on a problem.
 */
static bool notify_entry(struct jctx *c, const pal_ynode *e, const char *const *keys, size_t nk,
			 const char *what, bool remove, pal_notify *d)
{
	const pal_ynode *on, *url, *sec;
	int before = c->errors;

	*d = (pal_notify){0};
	if (pal_yexpect_map(c->doc, e, what, c->diags) != 0) {
		c->errors++;
		return false;
	}
	for (size_t k = 0; k < e->n; k++) {
		bool known = false;

		for (size_t x = 0; x < nk; x++)
			known = known || !strcmp(e->keys[k]->str, keys[x]);
		if (!known) {
			const char *hint = pal_suggest(e->keys[k]->str, keys, nk);

			if (hint)
				pal__job_diag(c, e->keys[k],
					      "unknown key \"%s\" in %s (did you mean \"%s\"?)",
					      e->keys[k]->str, what, hint);
			else
				pal__job_diag(
				    c, e->keys[k],
				    "unknown key \"%s\" in %s (expected on, url, secret%s)",
				    e->keys[k]->str, what,
				    nk > 3 ? ", group or tenant, remove" : "");
		}
	}
	on = pal_ynode_get(e, "on");
	url = pal_ynode_get(e, "url");
	sec = pal_ynode_get(e, "secret");
	if (remove && (on || sec)) {
		pal__job_diag(c, on ? on : sec,
			      "%s: \"%s\" with remove: true; hint: a removal names its scope and "
			      "url only",
			      what, on ? "on" : "secret");
		return false;
	}
	if (!url || (!remove && (!on || !sec))) {
		pal__job_diag(c, e, "%s: missing key \"%s\" (every entry has on, url and secret)",
			      what,
			      !url  ? "url"
			      : !on ? "on"
				    : "secret");
		return false;
	}
	d->events = remove ? 0 : notify_events(c, on);
	d->url = pal__job_str(c, url, "notify: url", URL_MAX_LEN);
	if (d->url && pal__job_url(c, url, "notify: url", d->url))
		pal__job_template(c, url, "notify: url", 0, false);
	d->secret = remove ? NULL : notify_secret(c, sec);
	if (c->errors != before || (!remove && (!d->events || !d->secret)) || !d->url) {
		free(d->url);
		free(d->secret);
		*d = (pal_notify){0};
		return false;
	}
	return true;
}

/*
 * `notify: [{on: [failed, ...], url: URL, secret: ${NAME}}]`: who is told
 * of which events of the job (docs/jobs.md).  `notify: []` says none, not
 * even what the job's group and tenant rules name.
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
	if (v->n > MAX_NOTIFY) {
		pal__job_diag(c, v,
			      "notify: expected at most %d entries, got %zu; hint: notify: [] for "
			      "none",
			      MAX_NOTIFY, v->n);
		return;
	}
	out = calloc(v->n ? v->n : 1, sizeof *out);
	if (!out) {
		pal__job_diag(c, v, "notify: out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const pal_ynode *url = pal_ynode_get(v->vals[i], "url");
		pal_notify d;
		bool dup = false;

		if (!notify_entry(c, v->vals[i], keys, N(keys), "notify entry", false, &d))
			continue;
		/* one event, one request per receiver: the webhook id ends in the
		 * entry's index, so two entries of one url that share an event
		 * would send it twice under two ids, which no receiver can
		 * deduplicate */
		for (size_t j = 0; j < n && !dup; j++) {
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
				dup = true;
			}
		}
		if (dup) {
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
	s->notify_none = v->n == 0;
}

int pal__notify_rule_parse(const pal_ydoc *doc, const pal_ynode *n, pal_notify_rule *out,
			   pal_diags *diags)
{
	static const char *const keys[] = {"on", "url", "secret", "group", "tenant", "remove"};
	struct jctx c = {.doc = doc, .diags = diags, .tz_ok = true};
	const pal_ynode *g, *t, *rm;
	bool remove = false;

	*out = (pal_notify_rule){0};
	if (n->kind != PAL_YNODE_MAP) {
		pal_ydiag(diags, doc, n,
			  "notify rule: expected a mapping with group or tenant, on, "
			  "url and secret, got %s",
			  pal_ynode_describe(n));
		return 1;
	}
	g = pal_ynode_get(n, "group");
	t = pal_ynode_get(n, "tenant");
	rm = pal_ynode_get(n, "remove");
	if (rm) {
		static const char *const tf[] = {"false", "true"};
		int e = 0;

		CHECK(&c, pal_yget_enum(doc, rm, "notify rule: remove (true or false)", tf, 2, &e,
					diags));
		remove = e == 1;
	}
	if (!g == !t)
		pal__job_diag(&c, g && t ? t : n,
			      "notify rule: expected exactly one of \"group\" and \"tenant\" (the "
			      "jobs the rule is for)");
	else
		pal__job_name(&c, g ? g : t, g ? "notify rule: group" : "notify rule: tenant",
			      NAME_MAX_LEN, &out->name);
	out->tenant = t != NULL;
	out->remove = remove;
	if (!notify_entry(&c, n, keys, N(keys), "notify rule", remove, &out->n) && !c.errors)
		c.errors++;
	if (c.errors)
		pal_notify_rule_clear(out);
	return c.errors;
}
