/*
 * remote.c - the operator commands through a node's HTTP API (--server URL,
 * docs/api.md) instead of PostgreSQL: one blocking libcurl request per
 * command, the answer printed and mapped to the command's exit codes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <glib.h>
#include "palisade/err.h"
#include "cli_int.h"

#define REMOTE_TIMEOUT_S 30

const char *pal_cli_server(const pal_cli_common *c)
{
	if (c->server && *c->server)
		return c->server;
	const char *e = getenv("PALISADE_SERVER");
	return e && *e ? e : NULL;
}

/* The API token: --token-file's first line, else $PALISADE_TOKEN; NULL when
 * neither (message printed).  g_free. */
static char *token(const pal_cli_common *c, const char *cmd)
{
	if (c->token_file) {
		char *text = NULL;
		GError *ge = NULL;
		if (!g_file_get_contents(c->token_file, &text, NULL, &ge)) {
			pal_cli_err(cmd, "--token-file: %s", ge->message);
			g_error_free(ge);
			return NULL;
		}
		text[strcspn(text, "\r\n")] = '\0';
		return text;
	}
	const char *e = getenv("PALISADE_TOKEN");
	if (e && *e)
		return g_strdup(e);
	pal_cli_err(cmd, "--server needs an API token: --token-file FILE or PALISADE_TOKEN "
			 "(`palisade token create`)");
	return NULL;
}

/* The largest answer read from a server: a node's largest answer (a page
 * of a list) is far smaller; past it the transfer is cut (CURLE_WRITE_ERROR)
 * rather than held in memory. */
#define ANSWER_MAX ((size_t)64 << 20)

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	GString *s = ctx;
	if (s->len + size * n > ANSWER_MAX)
		return 0;
	g_string_append_len(s, p, (gssize)(size * n));
	return size * n;
}

/* A JSON value as a table cell: strings bare, anything else compact. */
static void print_value(const json_t *v)
{
	if (json_is_string(v)) {
		fputs(json_string_value(v), stdout);
		return;
	}
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	fputs(s ? s : "?", stdout);
	free(s);
}

void pal_cli_print_answer(const pal_cli_common *c, const json_t *o)
{
	if (c->json) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		return;
	}
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		if (!strcmp(k, "items") && json_is_array(v)) {
			size_t i;
			const json_t *e;
			json_array_foreach(v, i, e)
			{
				print_value(e);
				putchar('\n');
			}
			continue;
		}
		if (!strcmp(k, "next_cursor") && json_is_null(v))
			continue;
		printf("%s: ", k);
		print_value(v);
		putchar('\n');
	}
}

static int exit_for(long status)
{
	if (status >= 200 && status < 300)
		return PAL_EXIT_OK;
	switch (status) {
	case 400:
		return PAL_EXIT_USAGE;
	case 401:
	case 403:
		return PAL_EXIT_NOPERM;
	case 404:
		return PAL_EXIT_NOTFOUND;
	case 409:
		return PAL_EXIT_REFUSED;
	case 415:
	case 422:
		return PAL_EXIT_DATAERR;
	case 503:
		return PAL_EXIT_UNAVAIL;
	default:
		return PAL_EXIT_SOFTWARE;
	}
}

/* A handle for SERVER's PATH, its URL into *URL (g_free): the timeout and
 * PALISADE_CACERT set; NULL when curl has none. */
static CURL *handle(const char *server, const char *path, char **url)
{
	CURL *h = curl_easy_init();
	if (!h)
		return NULL;
	size_t n = strlen(server);
	while (n && server[n - 1] == '/')
		n--;
	*url = g_strdup_printf("%.*s%s", (int)n, server, path);
	curl_easy_setopt(h, CURLOPT_URL, *url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)REMOTE_TIMEOUT_S);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	/* an https:// server whose certificate the system does not trust */
	const char *ca = getenv("PALISADE_CACERT");
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	return h;
}

/* The request of pal_cli_remote(); the answer of a 2xx goes to *OUT
 * (json_decref) instead of being printed. */
static int remote_call(const pal_cli_common *c, const char *cmd, const char *method,
		       const char *path, const char *ctype, const char *body, size_t len,
		       json_t **out)
{
	*out = NULL;
	const char *server = pal_cli_server(c);
	char *tok = token(c, cmd);
	if (!tok)
		return PAL_EXIT_USAGE;
	char *url;
	CURL *h = handle(server, path, &url);
	if (!h) {
		g_free(tok);
		return PAL_EXIT_SOFTWARE;
	}
	char *auth = g_strdup_printf("Authorization: Bearer %s", tok);
	char *ct = ctype ? g_strdup_printf("Content-Type: %s", ctype) : NULL;
	struct curl_slist *hdr = curl_slist_append(NULL, auth);
	if (ct)
		hdr = curl_slist_append(hdr, ct);
	GString *resp = g_string_new(NULL);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	int ec;
	if (cc == CURLE_WRITE_ERROR) {
		pal_cli_err(cmd, "%s: the answer is larger than %zu MiB; not read", server,
			    ANSWER_MAX >> 20);
		ec = PAL_EXIT_UNAVAIL;
	} else if (cc != CURLE_OK) {
		pal_cli_err(cmd, "%s: %s", server, curl_easy_strerror(cc));
		ec = PAL_EXIT_UNAVAIL;
	} else {
		json_t *o = json_loadb(resp->str, resp->len, 0, NULL);
		ec = exit_for(status);
		if (!o) {
			pal_cli_err(cmd, "%s answered %ld without JSON", server, status);
			if (!ec)
				ec = PAL_EXIT_SOFTWARE;
		} else if (ec) {
			const char *d = json_string_value(json_object_get(o, "detail"));
			pal_cli_err(cmd, "%s (HTTP %ld)", d ? d : "refused", status);
			json_t *errs = json_object_get(o, "errors");
			size_t i;
			json_t *e;
			json_array_foreach(errs, i, e)
			{
				fprintf(stderr, "%s:%lld:%lld: error: %s\n",
					json_string_value(json_object_get(e, "file")),
					json_integer_value(json_object_get(e, "line")),
					json_integer_value(json_object_get(e, "column")),
					json_string_value(json_object_get(e, "message")));
			}
		} else {
			*out = json_incref(o);
		}
		json_decref(o);
	}
	g_string_free(resp, TRUE);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	g_free(ct);
	g_free(auth);
	g_free(url);
	g_free(tok);
	return ec;
}

/* A Palisade-Version header line P into CTX (char[64]); others skipped. */
static size_t version_header(char *p, size_t size, size_t n, void *ctx)
{
	static const char name[] = "palisade-version:";
	size_t len = size * n, l = len;
	if (l <= sizeof name - 1 || g_ascii_strncasecmp(p, name, sizeof name - 1))
		return len;
	const char *v = p + sizeof name - 1;
	l -= sizeof name - 1;
	while (l && (*v == ' ' || *v == '\t'))
		v++, l--;
	while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' '))
		l--;
	snprintf(ctx, 64, "%.*s", (int)l, v);
	return len;
}

int pal_cli_remote_needs(const pal_cli_common *c, const char *cmd, const char *what)
{
	const char *server = pal_cli_server(c);
	char *url;
	CURL *h = handle(server, "/api/v1/openapi.json", &url);
	if (!h)
		return PAL_EXIT_SOFTWARE;
	char version[64] = "";
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, version_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, version);
	CURLcode cc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	g_free(url);
	if (cc != CURLE_OK) {
		pal_cli_err(cmd, "%s: %s", server, curl_easy_strerror(cc));
		return PAL_EXIT_UNAVAIL;
	}
	if (status != 200) {
		pal_cli_err(cmd, "%s answered %ld to HEAD /api/v1/openapi.json; nothing was sent",
			    server, status);
		return PAL_EXIT_UNAVAIL;
	}
	if (!*version) {
		pal_cli_err(cmd,
			    "%s needs a node of release 0.4.0 or later: %s names no release "
			    "(no Palisade-Version header: 0.3.0 or older), and such a node drops "
			    "%s and acts for real; nothing was sent",
			    what, server, what);
		return PAL_EXIT_UNAVAIL;
	}
	return PAL_EXIT_OK;
}

int pal_cli_remote(const pal_cli_common *c, const char *cmd, const char *method, const char *path,
		   const char *ctype, const char *body, size_t len)
{
	json_t *o;
	int ec = remote_call(c, cmd, method, path, ctype, body, len, &o);
	if (!ec)
		pal_cli_print_answer(c, o);
	json_decref(o);
	return ec;
}

int pal_cli_remote_call(const pal_cli_common *c, const char *cmd, const char *method,
			const char *path, const char *ctype, const char *body, size_t len,
			json_t **out)
{
	return remote_call(c, cmd, method, path, ctype, body, len, out);
}

int pal_cli_remote_get(const pal_cli_common *c, const char *cmd, const char *path, json_t **out)
{
	return remote_call(c, cmd, "GET", path, NULL, NULL, 0, out);
}

int pal_cli_remote_items(const pal_cli_common *c, const char *cmd, const char *path, json_t **items)
{
	return pal_cli_remote_rows(c, cmd, path, 0, items);
}

#define PAGE_MAX 1000 /* rows of a page of the API */

int pal_cli_remote_rows(const pal_cli_common *c, const char *cmd, const char *path, long long max,
			json_t **items)
{
	return pal_cli_remote_pages(c, cmd, path, max, PAGE_MAX, items);
}

void pal_cli_whole_seconds(json_t *rows, const char *field)
{
	size_t i;
	json_t *j;
	json_array_foreach(rows, i, j)
	{
		const char *at = json_string_value(json_object_get(j, field));
		const char *dot = at ? strchr(at, '.') : NULL;
		if (dot) {
			char *whole = g_strdup_printf("%.*sZ", (int)(dot - at), at);
			json_object_set_new(j, field, json_string(whole));
			g_free(whole);
		}
	}
}

/* GET PATH (SEP: "?" or "&" to add to it) with ?limit=LIMIT and the
 * ?cursor= *CURSOR (taken and set to NULL; none when NULL) into *O. */
static int get_page(const pal_cli_common *c, const char *cmd, const char *path, const char *sep,
		    long long limit, char **cursor, json_t **o)
{
	char *q = *cursor ? g_uri_escape_string(*cursor, NULL, FALSE) : NULL;
	char *url = g_strdup_printf("%s%slimit=%lld%s%s", path, sep, limit, q ? "&cursor=" : "",
				    q ? q : "");
	int ec = remote_call(c, cmd, "GET", url, NULL, NULL, 0, o);
	g_free(url);
	g_free(q);
	g_free(*cursor);
	*cursor = NULL;
	return ec;
}

int pal_cli_remote_whole(const pal_cli_common *c, const char *cmd, const char *path,
			 const char *list, const char *cursor_key, json_t *first, json_t **out)
{
	json_t *whole = first ? json_deep_copy(first) : NULL;
	const char *sep = strchr(path, '?') ? "&" : "?";
	char *cursor = g_strdup(whole ? json_string_value(json_object_get(whole, cursor_key)) : NULL);
	int ec = PAL_EXIT_OK;
	while (!whole || cursor) {
		json_t *o;
		if ((ec = get_page(c, cmd, path, sep, PAGE_MAX, &cursor, &o)))
			break;
		cursor = g_strdup(json_string_value(json_object_get(o, cursor_key)));
		if (whole) {
			json_array_extend(json_object_get(whole, list), json_object_get(o, list));
			json_decref(o);
		} else {
			whole = o;
		}
	}
	g_free(cursor);
	if (ec) {
		json_decref(whole);
		whole = NULL;
	} else {
		json_object_del(whole, cursor_key);
	}
	*out = whole;
	return ec;
}

int pal_cli_remote_pages(const pal_cli_common *c, const char *cmd, const char *path, long long max,
			 int page, json_t **items)
{
	*items = json_array();
	const char *sep = strchr(path, '?') ? "&" : "?";
	char *cursor = NULL;
	int ec;
	do {
		long long left = max - (long long)json_array_size(*items);
		json_t *o;
		if ((ec = get_page(c, cmd, path, sep, max && left < page ? left : page, &cursor, &o)))
			break;
		json_array_extend(*items, json_object_get(o, "items"));
		const char *nc = json_string_value(json_object_get(o, "next_cursor"));
		cursor =
		    nc && (!max || (long long)json_array_size(*items) < max) ? g_strdup(nc) : NULL;
		json_decref(o);
	} while (cursor);
	if (ec) {
		json_decref(*items);
		*items = NULL;
	}
	return ec;
}

int pal_cli_remote_json(const pal_cli_common *c, const char *cmd, const char *path, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	int ec =
	    pal_cli_remote(c, cmd, "POST", path, "application/json", text, text ? strlen(text) : 0);
	free(text);
	return ec;
}

int pal_cli_remote_send(const pal_cli_common *c, const char *cmd, const char *method,
			const char *path, json_t *body, json_t **out)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	int ec = remote_call(c, cmd, method, path, "application/json", text,
			     text ? strlen(text) : 0, out);
	free(text);
	return ec;
}
