/*
 * coord_probe.c - drives one pal_coord against a real ZooKeeper for
 * tests/integration/test_coord.sh.
 *
 *   coord_probe --zk HOSTS --node-id ID --shards N [--session-ms MS]
 *               [--cluster C] [--root R] [--no-balance] [--no-controller]
 *               [--log-level L]
 *       Opens a pal_coord and prints one line per change of its snapshot:
 *         t=<unix ms> gen=<g> connected=<0|1> since=0:<ms>,3:<ms>,5:<ms>
 *           leading=0,3 epochs=0:123,3:456
 *       t is when the line was printed; since holds, per shard, when its
 *       entry last changed in the module's published view (a step-down too).
 *       Commands on stdin, one per line: resign N | handoff | stats | nodes |
 *       dropcreate N | quit.  SIGTERM/SIGINT: pal_coord_handoff, then close.
 *       JSON logs (pal_log) go to stderr.  Exit 3 when the node id is taken
 *       (PAL_EBUSY), 1 on other open failures.
 *   coord_probe --dump --zk HOSTS --shards N [--cluster C] [--root R]
 *       Independent read of the layout with its own session: one line per
 *       registered node and per election znode with its czxid and owner.
 *   coord_probe --intrude OP --path P --zk HOSTS [--auth user:password]
 *       One operation in a session of its own, as another process would do
 *       it: OP is children, get, create (persistent, world ACL; its data "x",
 *       or --data STR), delete,
 *       plant-persistent or plant-ephemeral (a protected-form election znode
 *       "P/_c_<random uuid>-n_<seq>" whose data is "ghost"; the ephemeral one
 *       lives until stdin closes; missing parents are created first).
 *       Prints "intrude OP rc=<code> (<text>) [name=<created>]".
 *   --auth user:password (every mode): digest credentials; a node's pal_coord
 *       then creates its znodes with the creator-only ACL.  --auth-file F: the
 *       same, read from F by pal_coord_auth_load() (as a node reads
 *       zookeeper.auth_file); a bad file exits 1 with its message.
 *   coord_probe --selftest
 *       Unit checks of the pure election helpers (coord_int.h): sequence
 *       parsing, finding our znode by uuid, predecessor choice.
 *
 * Threading: main thread only; signal handlers set a flag.  stdout lines are
 * flushed one by one so that the test can follow them live.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper.h>
#include "palisade/coord.h"
#include "palisade/log.h"
#include "palisade/metrics.h"
#include "../../src/coord/coord_int.h"

static volatile sig_atomic_t g_term;
static const char *g_auth; /* --auth */
static const char *g_data = "x"; /* --data: what --intrude create writes */
static char *g_loaded_auth; /* --auth-file's, owned */

static void free_loaded_auth(void)
{
	free(g_loaded_auth);
}

static void add_auth(zhandle_t *zh)
{
	if (g_auth != NULL)
		(void)zoo_add_auth(zh, "digest", g_auth, (int)strlen(g_auth), NULL, NULL);
}

static void on_term(int sig)
{
	(void)sig;
	g_term = 1;
}

static long long now_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void print_snapshot(pal_coord *c, int n)
{
	pal_shard_lead *v = calloc((size_t)n, sizeof *v);
	bool conn = false;
	uint64_t gen = pal_coord_snapshot(c, v, &conn);
	printf("t=%lld gen=%llu connected=%d since=", now_unix_ms(), (unsigned long long)gen,
	       conn ? 1 : 0);
	/* When each shard's entry last changed, as the module stamped it: this
	 * line may be printed well after a step-down was published. */
	const char *sep = "";
	for (int i = 0; i < n; i++)
		if (v[i].since_ms != 0) {
			printf("%s%d:%lld", sep, i, (long long)v[i].since_ms);
			sep = ",";
		}
	printf(" leading=");
	sep = "";
	for (int i = 0; i < n; i++)
		if (v[i].leading) {
			printf("%s%d", sep, i);
			sep = ",";
		}
	printf(" epochs=");
	sep = "";
	for (int i = 0; i < n; i++)
		if (v[i].leading) {
			printf("%s%d:%lld", sep, i, (long long)v[i].epoch);
			sep = ",";
		}
	printf("\n");
	fflush(stdout);
	free(v);
}

static double metric_sum_shards(pal_metrics *m, const char *name, const char *outcome, int n)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		char labels[64];
		snprintf(labels, sizeof labels, "shard=\"%d\",outcome=\"%s\"", i, outcome);
		sum += pal_metric_get(m, name, labels);
	}
	return sum;
}

static double foreign_sum(pal_metrics *m, int n)
{
	static const char *const reasons[] = {"persistent", "acl", "owner"};
	double sum = 0;
	for (int i = 0; i < n; i++)
		for (int r = 0; r < 3; r++) {
			char labels[64];
			snprintf(labels, sizeof labels, "shard=\"%d\",reason=\"%s\"", i, reasons[r]);
			sum += pal_metric_get(m, "palisade_coord_foreign_znodes_total", labels);
		}
	return sum;
}

static void print_stats(pal_metrics *m, int n)
{
	printf("stats watches=%.0f watch_events=%.0f won=%.0f lost=%.0f handoffs_balance=%.0f "
	       "handoffs_resign=%.0f handoffs_drain=%.0f suspensions=%.0f expiries=%.0f "
	       "recoveries=%.0f foreign=%.0f "
	       "led=%.0f connected=%.0f\n",
	       pal_metric_get(m, "palisade_coord_watches_total", NULL),
	       pal_metric_get(m, "palisade_coord_watch_events_total", NULL),
	       metric_sum_shards(m, "palisade_coord_elections_total", "won", n),
	       metric_sum_shards(m, "palisade_coord_elections_total", "lost", n),
	       pal_metric_get(m, "palisade_coord_handoffs_total", "reason=\"balance\""),
	       pal_metric_get(m, "palisade_coord_handoffs_total", "reason=\"resign\""),
	       pal_metric_get(m, "palisade_coord_handoffs_total", "reason=\"drain\""),
	       pal_metric_get(m, "palisade_coord_suspensions_total", NULL),
	       pal_metric_get(m, "palisade_coord_session_expiries_total", NULL),
	       pal_metric_get(m, "palisade_coord_create_recoveries_total", NULL),
	       foreign_sum(m, n), pal_metric_get(m, "palisade_coord_shards_led", NULL),
	       pal_metric_get(m, "palisade_coord_connected", NULL));
	fflush(stdout);
}

/* pal_coord_handoff() blocks; it runs on its own thread so that the main
 * loop keeps printing the snapshot, in particular the step-down that the
 * module publishes before its first delete. */
typedef struct {
	pal_coord *c;
	pthread_t th;
	bool running;
	atomic_bool done;
	int rc;
	long long t0, t1;
} probe_handoff;

static void *handoff_main(void *arg)
{
	probe_handoff *h = arg;
	h->rc = pal_coord_handoff(h->c, 5000);
	h->t1 = now_unix_ms();
	atomic_store(&h->done, true);
	return NULL;
}

static void handoff_start(probe_handoff *h, pal_coord *c)
{
	if (h->running)
		return;
	h->c = c;
	h->t0 = now_unix_ms();
	atomic_store(&h->done, false);
	h->running = pthread_create(&h->th, NULL, handoff_main, h) == 0;
}

/* Reap a finished handoff; true when one was reaped. */
static bool handoff_reap(probe_handoff *h)
{
	if (!h->running || !atomic_load(&h->done))
		return false;
	pthread_join(h->th, NULL);
	h->running = false;
	printf("handoff rc=%d ms=%lld\n", h->rc, h->t1 - h->t0);
	fflush(stdout);
	return true;
}

/* One command line from stdin; returns false on "quit". */
static bool command(pal_coord *c, pal_metrics *m, int n, probe_handoff *h, const char *line)
{
	int arg;
	if (sscanf(line, "resign %d", &arg) == 1) {
		pal_coord_resign(c, arg);
	} else if (sscanf(line, "dropcreate %d", &arg) == 1) {
		pal_coord_debug_drop_create_replies(c, arg);
	} else if (strncmp(line, "handoff", 7) == 0) {
		handoff_start(h, c);
	} else if (strncmp(line, "stats", 5) == 0) {
		print_stats(m, n);
	} else if (strncmp(line, "nodes", 5) == 0) {
		char **list = pal_coord_nodes(c);
		printf("nodes ");
		for (char **p = list; p && *p; p++)
			printf("%s%s", p == list ? "" : ",", *p);
		printf("\n");
		fflush(stdout);
		pal_coord_free_list(list);
	} else if (strncmp(line, "quit", 4) == 0) {
		return false;
	} else if (line[0] != '\0') {
		fprintf(stderr, "coord_probe: unknown command: %s\n", line);
	}
	return true;
}

/* Read what stdin has (non-blocking) and run complete lines. */
static bool pump_stdin(pal_coord *c, pal_metrics *m, int n, probe_handoff *h, char *buf, size_t cap,
		       size_t *len, bool *eof)
{
	if (*eof)
		return true;
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	if (poll(&pfd, 1, 0) <= 0)
		return true;
	ssize_t r = read(0, buf + *len, cap - 1 - *len);
	if (r <= 0) {
		if (r == 0 || (errno != EINTR && errno != EAGAIN))
			*eof = true; /* no more commands; keep running until a signal */
		return true;
	}
	*len += (size_t)r;
	buf[*len] = '\0';
	char *nl;
	while ((nl = strchr(buf, '\n')) != NULL) {
		*nl = '\0';
		bool go_on = command(c, m, n, h, buf);
		size_t used = (size_t)(nl - buf) + 1;
		memmove(buf, nl + 1, *len - used + 1);
		*len -= used;
		if (!go_on)
			return false;
	}
	if (*len >= cap - 1)
		*len = 0; /* overlong line: drop it */
	return true;
}

/* ---- --dump: an independent reader with its own session ----------------- */

static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dump_cv = PTHREAD_COND_INITIALIZER;
static int dump_connected;

static void dump_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
		pthread_mutex_lock(&dump_mu);
		dump_connected = 1;
		pthread_cond_broadcast(&dump_cv);
		pthread_mutex_unlock(&dump_mu);
	}
}

static int cmp_seq(const void *a, const void *b)
{
	int64_t x = pal_coord__parse_seq(*(char *const *)a),
		y = pal_coord__parse_seq(*(char *const *)b);
	return x < y ? -1 : x > y;
}

/* A session of our own (with --auth's credentials), connected within 10 s. */
static zhandle_t *connect_own(const char *zk)
{
	zhandle_t *zh = zookeeper_init(zk, dump_watcher, 10000, NULL, NULL, 0);
	if (zh == NULL)
		return NULL;
	add_auth(zh);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&dump_mu);
	while (!dump_connected && pthread_cond_timedwait(&dump_cv, &dump_mu, &ts) == 0)
		;
	int ok = dump_connected;
	pthread_mutex_unlock(&dump_mu);
	if (!ok) {
		fprintf(stderr, "coord_probe: cannot connect to %s\n", zk);
		zookeeper_close(zh);
		return NULL;
	}
	return zh;
}

static int dump(const char *zk, const char *root, const char *cluster, int n)
{
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zhandle_t *zh = connect_own(zk);
	if (zh == NULL)
		return 1;
	char base[512], path[768];
	snprintf(base, sizeof base, "%s/%s", strcmp(root, "/") == 0 ? "" : root, cluster);
	struct String_vector kids = {0, NULL};
	snprintf(path, sizeof path, "%s/nodes", base);
	if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
		for (int i = 0; i < kids.count; i++) {
			char p2[1024];
			struct Stat st;
			snprintf(p2, sizeof p2, "%s/%s", path, kids.data[i]);
			if (zoo_exists(zh, p2, 0, &st) == ZOK)
				printf("node id=%s czxid=%lld owner=0x%llx\n", kids.data[i],
				       (long long)st.czxid, (unsigned long long)st.ephemeralOwner);
		}
		deallocate_String_vector(&kids);
	}
	for (int s = 0; s < n; s++) {
		snprintf(path, sizeof path, "%s/shards/%04d/election", base, s);
		if (zoo_get_children(zh, path, 0, &kids) != ZOK)
			continue;
		qsort(kids.data, (size_t)kids.count, sizeof *kids.data, cmp_seq);
		for (int i = 0; i < kids.count; i++) {
			char p2[1024], data[256];
			int len = sizeof data - 1;
			struct Stat st;
			snprintf(p2, sizeof p2, "%s/%s", path, kids.data[i]);
			if (zoo_get(zh, p2, 0, data, &len, &st) != ZOK)
				continue;
			data[len > 0 ? len : 0] = '\0';
			printf("znode shard=%d rank=%d name=%s czxid=%lld owner=0x%llx data=%s\n",
			       s, i, kids.data[i], (long long)st.czxid,
			       (unsigned long long)st.ephemeralOwner, data);
		}
		deallocate_String_vector(&kids);
	}
	printf("dump ok\n");
	zookeeper_close(zh);
	return 0;
}

/* ---- --selftest ---------------------------------------------------------------- */

/* ---- --intrude ------------------------------------------------------------------ */

static int intrude(const char *zk, const char *op, const char *path)
{
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	zhandle_t *zh = connect_own(zk);
	if (zh == NULL)
		return 1;
	const struct ACL_vector *acl = g_auth ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
	char created[1024] = "";
	int rc;
	bool hold = false;
	if (strcmp(op, "children") == 0) {
		struct String_vector kids = {0, NULL};
		rc = zoo_get_children(zh, path, 0, &kids);
		deallocate_String_vector(&kids);
	} else if (strcmp(op, "get") == 0) {
		char buf[1024];
		int len = sizeof buf;
		rc = zoo_get(zh, path, 0, buf, &len, NULL);
	} else if (strcmp(op, "create") == 0) {
		rc = zoo_create(zh, path, g_data, (int)strlen(g_data), &ZOO_OPEN_ACL_UNSAFE,
				ZOO_PERSISTENT, created, sizeof created);
	} else if (strcmp(op, "delete") == 0) {
		rc = zoo_delete(zh, path, -1);
	} else if (strcmp(op, "plant-persistent") == 0 || strcmp(op, "plant-ephemeral") == 0) {
		char buf[1024];
		snprintf(buf, sizeof buf, "%s", path);
		for (char *q = buf + 1; *q; q++) { /* parents, like a node would */
			if (*q != '/')
				continue;
			*q = '\0';
			(void)zoo_create(zh, buf, NULL, -1, acl, ZOO_PERSISTENT, NULL, 0);
			*q = '/';
		}
		(void)zoo_create(zh, path, NULL, -1, acl, ZOO_PERSISTENT, NULL, 0);
		hold = strcmp(op, "plant-ephemeral") == 0;
		snprintf(buf, sizeof buf, "%s/_c_%08x%08x%08x%08x-n_", path, (unsigned)random(),
			 (unsigned)random(), (unsigned)getpid(), (unsigned)time(NULL));
		rc = zoo_create(zh, buf, "ghost", 5, acl,
				hold ? ZOO_EPHEMERAL_SEQUENTIAL : ZOO_PERSISTENT_SEQUENTIAL, created,
				sizeof created);
	} else {
		fprintf(stderr, "coord_probe: unknown --intrude operation %s\n", op);
		zookeeper_close(zh);
		return 64;
	}
	printf("intrude %s rc=%d (%s)%s%s\n", op, rc, zerror(rc), *created ? " name=" : "",
	       *created ? (strrchr(created, '/') ? strrchr(created, '/') + 1 : created) : "");
	fflush(stdout);
	if (hold && rc == ZOK) {
		char b[64];
		while (fgets(b, sizeof b, stdin) != NULL)
			;
	}
	zookeeper_close(zh);
	return 0;
}

static int st_fail, st_pass;
#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (cond) {                                                                        \
			st_pass++;                                                                 \
		} else {                                                                           \
			st_fail++;                                                                 \
			fprintf(stderr, "selftest: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
		}                                                                                  \
	} while (0)

static int selftest(void)
{
	const char *A = "0123456789abcdef0123456789abcdef";
	const char *B = "fedcba9876543210fedcba9876543210";
	const char *C = "00000000000000000000000000000000";

	/* parse_seq: only the protected form counts */
	EXPECT(pal_coord__parse_seq("_c_0123456789abcdef0123456789abcdef-n_0000000042") == 42);
	EXPECT(pal_coord__parse_seq("_c_0123456789abcdef0123456789abcdef-n_") == -1);
	EXPECT(pal_coord__parse_seq("_c_0123456789ABCDEF0123456789abcdef-n_0000000001") == -1);
	EXPECT(pal_coord__parse_seq("_c_0123456789abcdef-n_0000000001") == -1);
	EXPECT(pal_coord__parse_seq("lock-0000000001") == -1);
	EXPECT(pal_coord__parse_seq("_c_0123456789abcdef0123456789abcdef-n_00000x0001") == -1);
	EXPECT(pal_coord__parse_seq("_c_0123456789abcdef0123456789abcdef-n_2147483648") ==
	       2147483648LL);

	/* name_has_uuid: the whole uuid, not a prefix of it */
	EXPECT(pal_coord__name_has_uuid("_c_0123456789abcdef0123456789abcdef-n_0000000001", A));
	EXPECT(!pal_coord__name_has_uuid("_c_0123456789abcdef0123456789abcdef-n_0000000001", B));
	EXPECT(!pal_coord__name_has_uuid("_c_0123456789abcdef0123456789abcdef-n_0000000001",
					 "0123456789abcdef"));

	const char *own, *pred;
	int dups, valid;
	/* lowest leads; the order is by sequence, not by listing order or uuid */
	char *l1[] = {"_c_fedcba9876543210fedcba9876543210-n_0000000007",
		      "_c_0123456789abcdef0123456789abcdef-n_0000000003",
		      "_c_00000000000000000000000000000000-n_0000000005"};
	EXPECT(pal_coord__rank(l1, 3, A, &own, &pred, &dups, &valid) == 0);
	EXPECT(own == l1[1] && pred == NULL && dups == 0 && valid == 3);
	/* a waiter's predecessor is the next lower sequence only (no herd) */
	EXPECT(pal_coord__rank(l1, 3, B, &own, &pred, &dups, &valid) == 0);
	EXPECT(own == l1[0] && pred == l1[2]);
	EXPECT(pal_coord__rank(l1, 3, C, &own, &pred, &dups, &valid) == 0);
	EXPECT(own == l1[2] && pred == l1[1]);
	/* after a lost create reply: our znode is found by uuid, or reported absent */
	char *l2[] = {"_c_fedcba9876543210fedcba9876543210-n_0000000010"};
	EXPECT(pal_coord__rank(l2, 1, A, &own, &pred, &dups, &valid) == PAL_ENOENT);
	EXPECT(own == NULL && pred == NULL && valid == 1);
	EXPECT(pal_coord__rank(NULL, 0, A, &own, &pred, &dups, &valid) == PAL_ENOENT);
	/* duplicates of ours: the lowest is kept, the others are reported */
	char *l3[] = {"_c_0123456789abcdef0123456789abcdef-n_0000000012",
		      "_c_fedcba9876543210fedcba9876543210-n_0000000011",
		      "_c_0123456789abcdef0123456789abcdef-n_0000000009", "foreign-0000000001"};
	EXPECT(pal_coord__rank(l3, 4, A, &own, &pred, &dups, &valid) == 0);
	EXPECT(own == l3[2] && pred == NULL && dups == 1 && valid == 3);
	EXPECT(pal_coord__rank(l3, 4, B, &own, &pred, &dups, &valid) == 0);
	EXPECT(own == l3[1] && pred == l3[2]);
	/* queue order for balance: by sequence, foreign names after the queue */
	char *q[] = {l3[3], l3[0], l3[1], l3[2]};
	EXPECT(pal_coord__sort_queue(q, 4) == 3);
	EXPECT(q[0] == l3[2] && q[1] == l3[1] && q[2] == l3[0] && q[3] == l3[3]);
	char *q1[] = {l1[0], l1[1], l1[2]};
	EXPECT(pal_coord__sort_queue(q1, 3) == 3);
	EXPECT(q1[0] == l1[1] && q1[1] == l1[2] && q1[2] == l1[0]);
	EXPECT(pal_coord__sort_queue(NULL, 0) == 0);

	printf("selftest %d checks, %d failed\n", st_pass + st_fail, st_fail);
	return st_fail ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: coord_probe --zk HOSTS --node-id ID --shards N [--session-ms MS] "
		"[--cluster C]\n"
		"                   [--root R] [--no-balance] [--no-controller] [--log-level L]\n"
		"       coord_probe --dump --zk HOSTS --shards N [--cluster C] [--root R]\n"
		"       coord_probe --intrude OP --path P --zk HOSTS [--auth user:password]\n"
		"       coord_probe --selftest\n");
	exit(64);
}

int main(int argc, char **argv)
{
	const char *zk = NULL, *node = NULL, *cluster = "default", *root = "/palisade",
		   *level = "info", *intrude_op = NULL, *intrude_path = NULL, *auth_file = NULL;
	int shards = 0, session_ms = 4000, do_dump = 0, do_selftest = 0, no_balance = 0,
	    no_controller = 0;
	const struct option opts[] = {
	    {"zk", required_argument, NULL, 'z'},
	    {"node-id", required_argument, NULL, 'n'},
	    {"shards", required_argument, NULL, 's'},
	    {"session-ms", required_argument, NULL, 't'},
	    {"cluster", required_argument, NULL, 'c'},
	    {"root", required_argument, NULL, 'r'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"no-balance", no_argument, &no_balance, 1},
	    {"no-controller", no_argument, &no_controller, 1},
	    {"dump", no_argument, &do_dump, 1},
	    {"selftest", no_argument, &do_selftest, 1},
	    {"auth", required_argument, NULL, 'a'},
	    {"auth-file", required_argument, NULL, 'A'},
	    {"intrude", required_argument, NULL, 'i'},
	    {"path", required_argument, NULL, 'p'},
	    {"data", required_argument, NULL, 'D'},
	    {NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 0:
			break;
		case 'z':
			zk = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 's':
			shards = atoi(optarg);
			break;
		case 't':
			session_ms = atoi(optarg);
			break;
		case 'c':
			cluster = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'l':
			level = optarg;
			break;
		case 'a':
			g_auth = optarg;
			break;
		case 'A':
			auth_file = optarg;
			break;
		case 'i':
			intrude_op = optarg;
			break;
		case 'p':
			intrude_path = optarg;
			break;
		case 'D':
			g_data = optarg;
			break;
		default:
			usage();
		}
	}
	if (do_selftest)
		return selftest();
	if (auth_file != NULL) {
		char aerr[256];
		char *loaded = NULL;
		if (pal_coord_auth_load(auth_file, "", &loaded, aerr, sizeof aerr) != 0) {
			fprintf(stderr, "coord_probe: %s\n", aerr);
			printf("open failed auth\n");
			return 1;
		}
		g_auth = g_loaded_auth = loaded;
		atexit(free_loaded_auth);
	}
	if (intrude_op != NULL) {
		if (zk == NULL || intrude_path == NULL)
			usage();
		return intrude(zk, intrude_op, intrude_path);
	}
	if (zk == NULL || shards <= 0)
		usage();
	if (do_dump)
		return dump(zk, root, cluster, shards);
	if (node == NULL)
		usage();

	int lvl = pal_log_level_parse(level);
	pal_log_init(node, lvl < 0 ? PAL_LOG_INFO : (pal_log_level)lvl);
	pal_log_set_fd(2);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	pal_metrics *m = pal_metrics_new();
	char info[256], err[512];
	snprintf(info, sizeof info, "{\"version\":\"coord_probe\",\"roles\":[%s]}",
		 no_controller ? "\"executor\"" : "\"controller\",\"executor\"");
	pal_coord_config cfg = {
	    .connect = zk,
	    .session_timeout_ms = session_ms,
	    .root = root,
	    .cluster = cluster,
	    .node_id = node,
	    .node_info = info,
	    .n_shards = shards,
	    .controller = !no_controller,
	    .balance = !no_balance,
	    .auth = g_auth,
	};
	pal_coord *c = NULL;
	int rc = pal_coord_open(&cfg, m, &c, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "coord_probe: %s (%s)\n", err, pal_strerror(rc));
		printf("open failed rc=%d\n", rc);
		pal_metrics_free(m);
		return rc == PAL_EBUSY ? 3 : 1;
	}
	printf("open ok node=%s\n", node);
	fflush(stdout);

	char buf[1024];
	size_t len = 0;
	bool eof = false;
	uint64_t gen = 0;
	probe_handoff h = {0};
	bool draining = false;
	for (;;) {
		uint64_t g = pal_coord_wait(c, gen, 20);
		if (g != gen) {
			gen = g;
			print_snapshot(c, shards);
		}
		if (g_term && !draining) {
			draining = true;
			handoff_start(&h, c);
		}
		if (handoff_reap(&h) && draining)
			break; /* SIGTERM: handed off, now close */
		if (draining && !h.running)
			break; /* the handoff thread could not start: close anyway */
		if (!draining && !pump_stdin(c, m, shards, &h, buf, sizeof buf, &len, &eof))
			break;
	}
	while (h.running && !handoff_reap(&h))
		usleep(10000);
	pal_coord_close(c);
	printf("bye\n");
	fflush(stdout);
	pal_metrics_free(m);
	return 0;
}
