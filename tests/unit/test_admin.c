/*
 * test_admin.c - the admin HTTP endpoint over real loopback sockets: routes,
 * status codes, content types, bodies, readiness switching, the status page,
 * drain, 404/405/413, address parsing and the bound port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include "palisade/admin.h"
#include "palisade/log.h"
#include "palisade/metrics.h"

/* What the fake node reports and records; touched by the admin thread. */
typedef struct node {
	atomic_bool ready;
	atomic_bool broken; /* status() returns NULL */
	atomic_int drain_rc;
	atomic_int drains;
	atomic_int status_calls;
	const char *name;
} node;

typedef struct fixture {
	node n;
	pal_metrics *m;
	pal_admin *a;
	int port;
} fixture;

static json_t *node_status(void *arg)
{
	node *n = arg;
	atomic_fetch_add(&n->status_calls, 1);
	if (atomic_load(&n->broken))
		return NULL;
	return json_pack("{s:s, s:b, s:[s,s], s:i, s:[{s:i, s:s, s:I, s:s, s:f}, "
			 "{s:i, s:n, s:I, s:s, s:i, s:s}], s:{s:i, s:i}, s:[]}",
			 "node", n->name, "ready", atomic_load(&n->ready), "roles", "controller",
			 "executor", "stale_rejections", 4, "shards", "shard", 0, "leader", "n1",
			 "epoch", (json_int_t)4294967299LL, "watermark", "2026-11-30T08:00:00Z",
			 "lag_seconds", 1.5, "shard", 1, "leader", "epoch", (json_int_t)0,
			 "watermark", "2026-11-30T07:59:00Z", "backlog", 12, "note",
			 "<script>alert('x')</script> & \"more\"", "leases", "held", 3, "expiring",
			 0, "tickets");
}

#define TOKEN "s3cret-token"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static int node_action(void *arg, const char *action, const char *client)
{
	node *n = arg;
	if (strcmp(action, "drain") != 0)
		return -1;
	assert_true(strncmp(client, "127.0.0.1:", 10) == 0);
	atomic_fetch_add(&n->drains, 1);
	return atomic_load(&n->drain_rc);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	f->n.name = "n1<b>";
	f->m = pal_metrics_new();
	pal_metric_declare(f->m, "palisade_up", PAL_METRIC_GAUGE, "Always 1.");
	pal_metric_set(f->m, "palisade_up", NULL, 1);
	char err[256] = "";
	pal_admin_config cfg = {.listen = "127.0.0.1:0",
				.metrics = f->m,
				.status = node_status,
				.action = node_action,
				.arg = &f->n,
				.token = TOKEN,
				.host = "test"};
	int rc = pal_admin_start(&cfg, &f->a, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "pal_admin_start: %s\n", err);
		return -1;
	}
	f->port = pal_admin_port(f->a);
	if (f->port <= 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	pal_admin_stop(f->a);
	pal_metrics_free(f->m);
	free(f);
	return 0;
}

/* ---- a minimal HTTP/1.1 client ------------------------------------------ */

typedef struct reply {
	int code;
	char head[4096]; /* status line and headers */
	char *body;	 /* malloc()ed, NUL-terminated */
	size_t body_len;
} reply;

static int connect_to(int family, int port)
{
	int fd = socket(family, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		s6->sin6_addr = in6addr_loopback;
		len = sizeof *s6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *s4;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send RAW (a whole request) and read the reply until the server closes. */
static void exchange(int family, int port, const char *raw, reply *r)
{
	int fd = connect_to(family, port);
	assert_true(fd >= 0);
	size_t len = strlen(raw);
	assert_int_equal(send(fd, raw, len, MSG_NOSIGNAL), (ssize_t)len);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t k = recv(fd, buf + n, cap - n - 1, 0);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	close(fd);
	char *sep = strstr(buf, "\r\n\r\n");
	if (sep == NULL)
		fail_msg("no complete HTTP reply to \"%.40s\": \"%s\"", raw, buf);
	size_t hlen = (size_t)(sep - buf);
	assert_true(hlen < sizeof r->head);
	memcpy(r->head, buf, hlen);
	r->head[hlen] = '\0';
	assert_int_equal(sscanf(buf, "HTTP/1.%*d %d", &r->code), 1);
	r->body_len = n - hlen - 4;
	r->body = malloc(r->body_len + 1);
	memcpy(r->body, sep + 4, r->body_len + 1);
	free(buf);
}

static void request(int port, const char *method, const char *path, const char *extra, reply *r)
{
	char raw[1024];
	snprintf(raw, sizeof raw, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s\r\n",
		 method, path, extra ? extra : "");
	exchange(AF_INET, port, raw, r);
}

/* Value of header NAME in R (case-insensitive), or NULL; static buffer. */
static const char *header(const reply *r, const char *name)
{
	static char val[512];
	size_t nlen = strlen(name);
	for (const char *l = strstr(r->head, "\r\n"); l; l = strstr(l, "\r\n")) {
		l += 2;
		if (strncasecmp(l, name, nlen) == 0 && l[nlen] == ':') {
			const char *v = l + nlen + 1;
			while (*v == ' ')
				v++;
			size_t k = strcspn(v, "\r\n");
			snprintf(val, sizeof val, "%.*s", (int)k, v);
			return val;
		}
	}
	return NULL;
}

static void expect_header(const reply *r, const char *name, const char *want)
{
	const char *got = header(r, name);
	if (got == NULL || strcmp(got, want) != 0)
		fail_msg("header %s: got \"%s\", want \"%s\"", name, got ? got : "(none)", want);
}

/* ---- tests -------------------------------------------------------------- */

static void test_admin_healthz_ok(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "ok\n");
	expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
	free(r.body);
	request(f->port, "HEAD", "/healthz", NULL, &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.body_len, 0);
	free(r.body);
	request(f->port, "GET", "/healthz?verbose=1", NULL, &r); /* query ignored */
	assert_int_equal(r.code, 200);
	free(r.body);
}

/* Remove from TEXT (in place) every line that starts with PREFIX. */
static void drop_sample(char *text, const char *prefix)
{
	char *out = text;
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
		if (strncmp(line, prefix, strlen(prefix)) != 0) {
			memmove(out, line, n);
			out += n;
		}
		line += n;
	}
	*out = '\0';
}

static void test_admin_metrics_serves_registry_text(void **state)
{
	fixture *f = *state;
	pal_metric_declare(f->m, "palisade_requests_total", PAL_METRIC_COUNTER, "Requests.");
	pal_metric_inc(f->m, "palisade_requests_total", "route=\"x\"", 3);
	reply r;
	request(f->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.code, 200);
	expect_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	char *want = pal_metrics_render(f->m);
	/* the endpoint's own open connections were 1 while it answered */
	drop_sample(r.body, "palisade_http_connections{");
	drop_sample(want, "palisade_http_connections{");
	assert_string_equal(r.body, want);
	assert_non_null(strstr(r.body, "palisade_requests_total{route=\"x\"} 3\n"));
	assert_non_null(strstr(r.body, "palisade_up 1\n"));
	free(want);
	free(r.body);
}

static void test_admin_readyz_follows_status(void **state)
{
	fixture *f = *state;
	reply r;
	atomic_store(&f->n.ready, false);
	request(f->port, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.code, 503);
	assert_string_equal(r.body, "not ready\n");
	free(r.body);

	atomic_store(&f->n.ready, true);
	request(f->port, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "ready\n");
	free(r.body);

	atomic_store(&f->n.broken, true);
	request(f->port, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.code, 503);
	free(r.body);

	atomic_store(&f->n.broken, false);
	atomic_store(&f->n.ready, false);
	request(f->port, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.code, 503);
	free(r.body);
}

static void test_admin_status_is_the_callback_json(void **state)
{
	fixture *f = *state;
	atomic_store(&f->n.ready, true);
	reply r;
	request(f->port, "GET", "/status", NULL, &r);
	assert_int_equal(r.code, 200);
	expect_header(&r, "Content-Type", "application/json");
	json_error_t jerr;
	json_t *got = json_loads(r.body, 0, &jerr);
	if (got == NULL)
		fail_msg("/status is not JSON (%s): %s", jerr.text, r.body);
	json_t *want = node_status(&f->n);
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);
	free(r.body);

	atomic_store(&f->n.broken, true);
	request(f->port, "GET", "/status", NULL, &r);
	assert_int_equal(r.code, 503);
	expect_header(&r, "Content-Type", "application/json");
	got = json_loads(r.body, 0, NULL);
	assert_non_null(got);
	json_decref(got);
	free(r.body);
}

static void test_admin_page_renders_tables_escaped(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "GET", "/", NULL, &r);
	assert_int_equal(r.code, 200);
	expect_header(&r, "Content-Type", "text/html; charset=utf-8");
	assert_non_null(header(&r, "Content-Security-Policy"));
	const char *b = r.body;
	assert_non_null(strstr(b, "<title>palisade n1&lt;b&gt;</title>"));
	/* top-level scalars and scalar arrays in the key/value table */
	assert_non_null(strstr(b, "<tr><th>roles</th><td>controller, executor</td></tr>"));
	assert_non_null(strstr(b, "<tr><th>stale_rejections</th><td>4</td></tr>"));
	/* shards: columns are the union of keys in first-seen order */
	assert_non_null(strstr(b, "<h2>shards</h2>"));
	assert_non_null(strstr(b, "<tr><th>shard</th><th>leader</th><th>epoch</th>"
				  "<th>watermark</th><th>lag_seconds</th><th>backlog</th>"
				  "<th>note</th></tr>"));
	assert_non_null(strstr(b, "<td>4294967299</td>"));
	assert_non_null(strstr(b, "<td>1.5</td>"));
	assert_non_null(strstr(b, "<td>12</td>"));
	assert_non_null(strstr(b, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; "
				  "&quot;more&quot;"));
	assert_null(strstr(b, "<script"));
	/* nested object and empty array sections */
	assert_non_null(strstr(b, "<h2>leases</h2>"));
	assert_non_null(strstr(b, "<tr><th>held</th><td>3</td></tr>"));
	assert_non_null(strstr(b, "<h2>tickets</h2>\n<p class=\"none\">none</p>"));
	free(r.body);

	atomic_store(&f->n.broken, true);
	request(f->port, "GET", "/", NULL, &r);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "status unavailable"));
	free(r.body);
}

static void test_admin_drain_calls_action(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "POST", "/drain", AUTH "Content-Length: 0\r\n", &r);
	assert_int_equal(r.code, 202);
	assert_int_equal(atomic_load(&f->n.drains), 1);
	free(r.body);

	atomic_store(&f->n.drain_rc, -1);
	request(f->port, "POST", "/drain", AUTH "Content-Length: 3\r\n\r\nx=1", &r);
	assert_int_equal(r.code, 409);
	assert_int_equal(atomic_load(&f->n.drains), 2);
	free(r.body);
}

static void test_admin_wrong_method_is_405(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "GET", "/drain", NULL, &r);
	assert_int_equal(r.code, 405);
	expect_header(&r, "Allow", "POST");
	free(r.body);
	assert_int_equal(atomic_load(&f->n.drains), 0);

	request(f->port, "POST", "/metrics", "Content-Length: 0\r\n", &r);
	assert_int_equal(r.code, 405);
	expect_header(&r, "Allow", "GET, HEAD");
	free(r.body);
	request(f->port, "DELETE", "/status", NULL, &r);
	assert_int_equal(r.code, 405);
	free(r.body);
}

static void test_admin_unknown_path_is_404(void **state)
{
	fixture *f = *state;
	static const char *const paths[] = {"/nope", "/metrics/", "/Metrics", "/status.json", "//"};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		reply r;
		request(f->port, "GET", paths[i], NULL, &r);
		if (r.code != 404)
			fail_msg("GET %s: %d, want 404", paths[i], r.code);
		free(r.body);
	}
	reply r;
	request(f->port, "POST", "/nope", "Content-Length: 0\r\n", &r);
	assert_int_equal(r.code, 404);
	free(r.body);
}

static void test_admin_oversized_body_refused(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "POST", "/drain", "Content-Length: 1000000\r\n", &r);
	assert_int_equal(r.code, 413);
	assert_int_equal(atomic_load(&f->n.drains), 0);
	free(r.body);
}

static int start_bare(const char *addr, pal_admin **a, char *err, size_t errlen)
{
	pal_admin_config cfg = {.listen = addr, .host = "test"};
	return pal_admin_start(&cfg, a, err, errlen);
}

static void expect_bad_addr(const char *addr)
{
	pal_admin *a = (pal_admin *)1;
	char err[256] = "";
	int rc = start_bare(addr, &a, err, sizeof err);
	if (rc != PAL_EINVAL)
		fail_msg("address \"%s\": rc %d, want PAL_EINVAL", addr ? addr : "(null)", rc);
	assert_null(a);
	assert_true(strlen(err) > 0);
}

static void test_admin_rejects_bad_addresses(void **state)
{
	expect_bad_addr(NULL);
	expect_bad_addr("");
	expect_bad_addr("127.0.0.1");
	expect_bad_addr("127.0.0.1:");
	expect_bad_addr("127.0.0.1:65536");
	expect_bad_addr("127.0.0.1:80a");
	expect_bad_addr("127.0.0.1:-1");
	expect_bad_addr(":9464");
	expect_bad_addr("::1:9464");
	expect_bad_addr("[::1");
	expect_bad_addr("[::1]9464");
	expect_bad_addr("[]:9464");
	expect_bad_addr("[127.0.0.1]:9464");
	expect_bad_addr("host.invalid:9464");

	char err[256];
	pal_admin *a;
	assert_int_equal(start_bare("127.0.0.1", &a, err, sizeof err), PAL_EINVAL);
	assert_non_null(strstr(err, "no port"));
}

static void test_admin_port_in_use_fails_with_reason(void **state)
{
	fixture *f = *state;
	char addr[64], err[256] = "";
	snprintf(addr, sizeof addr, "127.0.0.1:%d", f->port);
	pal_admin *b = NULL;
	int rc = start_bare(addr, &b, err, sizeof err);
	assert_int_equal(rc, PAL_EIO);
	assert_null(b);
	if (strstr(err, addr) == NULL)
		fail_msg("error does not name the address: %s", err);
}

static void test_admin_no_callbacks(void **state)
{
	pal_admin *a = NULL;
	char err[256];
	pal_admin_config cfg = {.listen = "localhost:0", .host = "test", .token = "t"};
	assert_int_equal(pal_admin_start(&cfg, &a, err, sizeof err), 0);
	int port = pal_admin_port(a);
	reply r;
	request(port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "");
	free(r.body);
	request(port, "GET", "/readyz", NULL, &r);
	assert_int_equal(r.code, 503);
	free(r.body);
	request(port, "POST", "/drain", "Authorization: Bearer t\r\nContent-Length: 0\r\n", &r);
	assert_int_equal(r.code, 501);
	free(r.body);
	pal_admin_stop(a);
	pal_admin_stop(NULL);
	assert_int_equal(pal_admin_port(NULL), 0);
}

static void test_admin_stop_closes_the_port(void **state)
{
	fixture *f = *state;
	int port = f->port;
	pal_admin_stop(f->a);
	f->a = NULL;
	int fd = connect_to(AF_INET, port);
	if (fd >= 0) {
		close(fd);
		fail_msg("port %d still accepts connections after pal_admin_stop()", port);
	}
}

static void test_admin_ipv6_loopback(void **state)
{
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&s6, sizeof s6) == 0;
	if (probe >= 0)
		close(probe);
	if (!have_v6) {
		print_message("no IPv6 loopback here: skipped\n");
		skip();
	}
	pal_admin *a = NULL;
	char err[256] = "";
	pal_admin_config cfg = {.listen = "[::1]:0"};
	int rc = pal_admin_start(&cfg, &a, err, sizeof err);
	if (rc != 0)
		fail_msg("[::1]:0: %s", err);
	int port = pal_admin_port(a);
	assert_true(port > 0);
	reply r;
	char raw[256];
	/* no admin.host: the listen address with its port is the Host to name */
	snprintf(raw, sizeof raw, "GET /healthz HTTP/1.1\r\nHost: [::1]:%d\r\nConnection: close\r\n\r\n",
		 port);
	exchange(AF_INET6, port, raw, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "ok\n");
	free(r.body);
	pal_admin_stop(a);
}

/* ---- security -------------------------------------------------------- */

static int code_of(int port, const char *raw)
{
	reply r;
	exchange(AF_INET, port, raw, &r);
	free(r.body);
	return r.code;
}

static void test_admin_writes_need_the_token(void **state)
{
	fixture *f = *state;
	reply r;
	request(f->port, "POST", "/drain", "Content-Length: 0\r\n", &r);
	assert_int_equal(r.code, 401);
	expect_header(&r, "WWW-Authenticate", "Bearer realm=\"palisade\"");
	free(r.body);
	static const char *const wrong[] = {
	    "Authorization: Bearer s3cret\r\n",	      /* a prefix */
	    "Authorization: Bearer s3cret-token-and-more\r\n", /* longer */
	    "Authorization: Bearer S3CRET-TOKEN\r\n",	      /* case */
	    "Authorization: Basic czNjcmV0LXRva2Vu\r\n",	      /* another scheme */
	    "Authorization: Bearer \r\n",
	};
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
		char extra[256];
		snprintf(extra, sizeof extra, "%sContent-Length: 0\r\n", wrong[i]);
		request(f->port, "POST", "/drain", extra, &r);
		if (r.code != 401)
			fail_msg("%s: %d, want 401", wrong[i], r.code);
		free(r.body);
	}
	assert_int_equal(atomic_load(&f->n.drains), 0);
	/* reads stay open by default */
	request(f->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.code, 200);
	free(r.body);
}

static void test_admin_refuses_cross_site_requests(void **state)
{
	fixture *f = *state;
	char raw[1024];
	/* a foreign Host: DNS rebinding, reads included */
	snprintf(raw, sizeof raw, "GET /status HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
	assert_int_equal(code_of(f->port, raw), 421);
	snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: evil.example:%d\r\n" AUTH
		 "Content-Length: 0\r\nConnection: close\r\n\r\n", f->port);
	assert_int_equal(code_of(f->port, raw), 421);
	snprintf(raw, sizeof raw, "GET /status HTTP/1.1\r\nConnection: close\r\n\r\n");
	assert_int_equal(code_of(f->port, raw), 421); /* no Host at all */
	/* an auto-submitted form of another site: Origin, form type, no token */
	snprintf(raw, sizeof raw,
		 "POST /drain HTTP/1.1\r\nHost: test\r\nOrigin: http://evil.example\r\n"
		 "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n"
		 "Connection: close\r\n\r\nx=1");
	assert_int_equal(code_of(f->port, raw), 403);
	/* even with the token, another Origin or a cross-site fetch is refused */
	snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: test\r\nOrigin: null\r\n" AUTH
		 "Content-Length: 0\r\nConnection: close\r\n\r\n");
	assert_int_equal(code_of(f->port, raw), 403);
	snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: test\r\nSec-Fetch-Site: cross-site\r\n" AUTH
		 "Content-Length: 0\r\nConnection: close\r\n\r\n");
	assert_int_equal(code_of(f->port, raw), 403);
	/* a form content type is refused whatever the credentials */
	static const char *const forms[] = {"application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
					    "text/plain;charset=UTF-8", "TEXT/PLAIN"};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: test\r\nContent-Type: %s\r\n" AUTH
			 "Content-Length: 0\r\nConnection: close\r\n\r\n", forms[i]);
		if (code_of(f->port, raw) != 415)
			fail_msg("Content-Type %s not refused with 415", forms[i]);
	}
	assert_int_equal(atomic_load(&f->n.drains), 0);
	/* the same origin, the token, no body type: accepted */
	snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: TEST:%d\r\nOrigin: http://test:%d\r\n"
		 "Sec-Fetch-Site: same-origin\r\n" AUTH "Content-Type: application/json\r\n"
		 "Content-Length: 0\r\nConnection: close\r\n\r\n", f->port, f->port);
	assert_int_equal(code_of(f->port, raw), 202);
	assert_int_equal(atomic_load(&f->n.drains), 1);
}

static bool sick(void *arg, char *why, size_t len)
{
	snprintf(why, len, "controller silent for 20000 ms (limit 15000)");
	return false;
}

static void test_admin_without_token_refuses_writes_and_guards_reads(void **state)
{
	pal_admin *a = NULL;
	char err[256];
	node n = {.name = "x"};
	/* no token: writes refused outright; listen address as Host */
	pal_admin_config cfg = {.listen = "127.0.0.1:0", .action = node_action, .arg = &n, .healthy = sick};
	assert_int_equal(pal_admin_start(&cfg, &a, err, sizeof err), 0);
	int port = pal_admin_port(a);
	char raw[512];
	snprintf(raw, sizeof raw, "POST /drain HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" AUTH
		 "Content-Length: 0\r\nConnection: close\r\n\r\n", port);
	assert_int_equal(code_of(port, raw), 403);
	/* localhost names with our port are accepted on loopback, others not */
	snprintf(raw, sizeof raw, "GET /metrics HTTP/1.1\r\nHost: localhost:%d\r\nConnection: close\r\n\r\n", port);
	assert_int_equal(code_of(port, raw), 200);
	snprintf(raw, sizeof raw, "GET /metrics HTTP/1.1\r\nHost: localhost:%d\r\nConnection: close\r\n\r\n", port + 1);
	assert_int_equal(code_of(port, raw), 421);
	/* a health callback saying no: 503 with its reason */
	reply r;
	snprintf(raw, sizeof raw, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", port);
	exchange(AF_INET, port, raw, &r);
	assert_int_equal(r.code, 503);
	assert_non_null(strstr(r.body, "controller silent"));
	free(r.body);
	pal_admin_stop(a);
	assert_int_equal(atomic_load(&n.drains), 0);

	/* reads protected */
	pal_admin_config pcfg = {.listen = "127.0.0.1:0", .token = TOKEN, .protect_reads = true, .host = "test"};
	assert_int_equal(pal_admin_start(&pcfg, &a, err, sizeof err), 0);
	port = pal_admin_port(a);
	request(port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.code, 401);
	free(r.body);
	request(port, "GET", "/healthz", AUTH, &r);
	assert_int_equal(r.code, 200);
	free(r.body);
	pal_admin_stop(a);
}

int main(void)
{
	pal_log_init("test", PAL_LOG_ERROR); /* keep the admin's info lines out of the report */
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_admin_healthz_ok),
	    T(test_admin_metrics_serves_registry_text),
	    T(test_admin_readyz_follows_status),
	    T(test_admin_status_is_the_callback_json),
	    T(test_admin_page_renders_tables_escaped),
	    T(test_admin_drain_calls_action),
	    T(test_admin_writes_need_the_token),
	    T(test_admin_refuses_cross_site_requests),
	    T(test_admin_without_token_refuses_writes_and_guards_reads),
	    T(test_admin_wrong_method_is_405),
	    T(test_admin_unknown_path_is_404),
	    T(test_admin_oversized_body_refused),
	    cmocka_unit_test(test_admin_rejects_bad_addresses),
	    T(test_admin_port_in_use_fails_with_reason),
	    cmocka_unit_test(test_admin_no_callbacks),
	    T(test_admin_stop_closes_the_port),
	    cmocka_unit_test(test_admin_ipv6_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
