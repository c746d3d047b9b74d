/*
 * election.c - one shard's leader election (docs/election.md).
 *
 * Layout: BASE/shards/NNNN/election/_c_<uuid>-n_<seq>, ephemeral-sequential,
 * data = our node id (for operators; the protocol never reads it).  The
 * lowest sequence leads; every other candidate watches only the znode
 * immediately before its own (no herd).  The epoch is the czxid of the
 * leader's znode as returned by zoo_create2() (or by zoo_exists() when the
 * znode was found again after a lost reply), never the sequence suffix.
 *
 * Protected create: the name carries the session's uuid, so after a
 * connection loss during a create (the server may or may not have created
 * the znode) the candidate lists the children and adopts its znode instead of
 * creating a second one.  Deletes whose outcome is unknown are resolved the
 * same way.
 *
 * Threading: the helpers at the top are pure.  pal_coord__reconcile() runs on
 * the coordination thread only and makes synchronous zoo_* calls; it takes
 * pal_coord.mu only through pal_coord__publish().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "palisade/log.h"
#include "coord_int.h"

#define PREFIX "_c_"
#define PREFIX_LEN 3
#define SEQ_MARK "-n_"
#define SEQ_MARK_LEN 3
#define RECONCILE_STEPS 12 /* bound on create/evaluate rounds per call */

/* ---- pure helpers --------------------------------------------------------- */

static bool is_hex_lower(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

int64_t pal_coord__parse_seq(const char *name)
{
	if (name == NULL || strncmp(name, PREFIX, PREFIX_LEN) != 0)
		return -1;
	const char *u = name + PREFIX_LEN;
	for (int i = 0; i < PAL_COORD_UUID_HEX; i++)
		if (!is_hex_lower(u[i]))
			return -1;
	const char *m = u + PAL_COORD_UUID_HEX;
	if (strncmp(m, SEQ_MARK, SEQ_MARK_LEN) != 0)
		return -1;
	const char *d = m + SEQ_MARK_LEN;
	if (*d == '\0')
		return -1;
	int64_t v = 0;
	for (; *d; d++) {
		if (*d < '0' || *d > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*d - '0');
	}
	return v;
}

bool pal_coord__name_has_uuid(const char *name, const char *uuid)
{
	return pal_coord__parse_seq(name) >= 0 && strlen(uuid) == PAL_COORD_UUID_HEX &&
	       strncmp(name + PREFIX_LEN, uuid, PAL_COORD_UUID_HEX) == 0;
}

int pal_coord__rank(char *const *names, int n, const char *uuid, const char **own,
		    const char **pred, int *n_dups, int *n_valid)
{
	const char *o = NULL, *p = NULL;
	int64_t oseq = -1, pseq = -1;
	int mine = 0, valid = 0;

	/* Our lowest znode first; then the highest foreign-or-own znode below it. */
	for (int i = 0; i < n; i++) {
		int64_t q = pal_coord__parse_seq(names[i]);
		if (q < 0)
			continue;
		valid++;
		if (pal_coord__name_has_uuid(names[i], uuid)) {
			mine++;
			if (o == NULL || q < oseq) {
				o = names[i];
				oseq = q;
			}
		}
	}
	if (o != NULL) {
		for (int i = 0; i < n; i++) {
			int64_t q = pal_coord__parse_seq(names[i]);
			if (q >= 0 && q < oseq && q > pseq) {
				p = names[i];
				pseq = q;
			}
		}
	}
	*own = o;
	*pred = p;
	*n_dups = mine > 0 ? mine - 1 : 0;
	*n_valid = valid;
	return o != NULL ? 0 : PAL_ENOENT;
}

static int cmp_queue(const void *a, const void *b)
{
	int64_t x = pal_coord__parse_seq(*(char *const *)a),
		y = pal_coord__parse_seq(*(char *const *)b);
	if (x < 0 || y < 0)
		return (x < 0) - (y < 0); /* foreign names last */
	return x < y ? -1 : x > y;
}

int pal_coord__sort_queue(char **names, int n)
{
	if (n <= 0)
		return 0;
	qsort(names, (size_t)n, sizeof *names, cmp_queue);
	int valid = 0;
	while (valid < n && pal_coord__parse_seq(names[valid]) >= 0)
		valid++;
	return valid;
}

/* ---- per-shard work (coordination thread) ---------------------------------- */

void pal_coord__election_path(const pal_coord *c, int idx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/shards/%04d/election", c->base, idx);
}

static const char *reason_name(coord_handoff_reason r)
{
	switch (r) {
	case HANDOFF_BALANCE:
		return "balance";
	case HANDOFF_RESIGN:
		return "resign";
	case HANDOFF_DRAIN:
		return "drain";
	default:
		return "none";
	}
}

/* DIR/NAME into BUF.  Paths are bounded by the validation in pal_coord_open()
 * (root and cluster lengths), so truncation cannot happen; if it did, the
 * empty path makes the ZooKeeper call fail with ZBADARGUMENTS. */
static void child_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0';
}

static void set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? strdup(src) : NULL;
}

bool pal_coord__is_foreign(const coord_shard *s, const char *name)
{
	for (int i = 0; i < s->n_foreign; i++)
		if (strcmp(s->foreign[i], name) == 0)
			return true;
	return false;
}

/* Record and report a foreign election znode (once per name). */
static void note_foreign(pal_coord *c, coord_shard *s, const char *name, const char *reason,
			 int64_t owner, const char *data)
{
	char **nf = realloc(s->foreign, (size_t)(s->n_foreign + 1) * sizeof *nf);
	if (nf != NULL) {
		s->foreign = nf;
		if ((nf[s->n_foreign] = strdup(name)) != NULL)
			s->n_foreign++;
	}
	char sid[24], labels[80];
	snprintf(sid, sizeof sid, "0x%llx", (unsigned long long)owner);
	pal_log(PAL_LOG_WARN, "election.foreign_znode", "{s:i, s:s, s:s, s:s, s:s}", "shard",
		s->idx, "znode", name, "reason", reason, "owner_session", sid, "data", data);
	snprintf(labels, sizeof labels, "shard=\"%d\",reason=\"%s\"", s->idx, reason);
	pal_coord__count(c, "palisade_coord_foreign_znodes_total", labels);
}

/*
 * Is NAME (protected form, a child of DIR) a palisade candidate?  ZOK with
 * *OK set, ZNONODE when it is gone, another code on a ZooKeeper failure.
 * A candidate is ephemeral, carries our ACL (with credentials), and its
 * data names a node whose nodes/ znode belongs to the same session.  Every
 * real candidate passes: a node registers before it joins, and the server
 * deletes a session's ephemerals together.  The verdict cannot change over
 * a znode's life, so foreign names are remembered and never looked at again.
 */
static int check_candidate(pal_coord *c, coord_shard *s, const char *dir, const char *name,
			   bool *ok)
{
	char path[PAL_COORD_PATH_MAX], data[160];
	struct ACL_vector acl = {0, NULL};
	struct Stat st;
	*ok = false;
	child_path(path, sizeof path, dir, name);
	int zrc = zoo_get_acl(c->zh, path, &acl, &st);
	if (zrc != ZOK)
		return zrc;
	bool acl_ok = pal_coord__acl_is_ours(c, &acl);
	deallocate_ACL_vector(&acl);
	int len = sizeof data - 1;
	zrc = zoo_get(c->zh, path, 0, data, &len, NULL);
	if (zrc != ZOK)
		return zrc;
	data[len > 0 ? len : 0] = '\0';
	if (st.ephemeralOwner == 0) {
		note_foreign(c, s, name, "persistent", 0, data);
		return ZOK;
	}
	if (!acl_ok) {
		note_foreign(c, s, name, "acl", st.ephemeralOwner, data);
		return ZOK;
	}
	struct Stat nst;
	char npath[PAL_COORD_PATH_MAX];
	zrc = ZNONODE;
	if (len > 0 && strchr(data, '/') == NULL) {
		child_path(npath, sizeof npath, c->nodes_path, data);
		zrc = zoo_exists(c->zh, npath, 0, &nst);
	}
	if (zrc != ZOK && zrc != ZNONODE)
		return zrc;
	if (zrc == ZOK && nst.ephemeralOwner == st.ephemeralOwner) {
		*ok = true;
		return ZOK;
	}
	/* Its node is not registered by its session: a planted znode, or the
	 * owner's session ended between our two reads (then both are gone). */
	struct Stat again;
	zrc = zoo_exists(c->zh, path, 0, &again);
	if (zrc != ZOK)
		return zrc;
	note_foreign(c, s, name, "owner", st.ephemeralOwner, data);
	return ZOK;
}

static int cmp_seq_desc(const void *a, const void *b)
{
	int64_t x = pal_coord__parse_seq(*(char *const *)a),
		y = pal_coord__parse_seq(*(char *const *)b);
	return x > y ? -1 : x < y;
}

/*
 * Our predecessor among the real candidates: the highest sequence below
 * OWN that passes check_candidate(); foreign znodes are skipped (they can
 * block nothing).  *PRED NULL: we are the lowest candidate.  COORD_DONE, or
 * the class of a ZooKeeper failure.
 */
static coord_step find_pred(pal_coord *c, coord_shard *s, const char *dir, char *const *names,
			    int n, const char *own, const char **pred)
{
	*pred = NULL;
	int64_t oseq = pal_coord__parse_seq(own);
	const char **below = malloc((size_t)(n > 0 ? n : 1) * sizeof *below);
	if (below == NULL)
		return COORD_LATER;
	int nb = 0;
	for (int i = 0; i < n; i++) {
		int64_t q = pal_coord__parse_seq(names[i]);
		if (q >= 0 && q < oseq && !pal_coord__is_foreign(s, names[i]))
			below[nb++] = names[i];
	}
	qsort(below, (size_t)nb, sizeof *below, cmp_seq_desc);
	coord_step ret = COORD_DONE;
	for (int i = 0; i < nb && *pred == NULL; i++) {
		if (s->checked_pred != NULL && strcmp(s->checked_pred, below[i]) == 0) {
			*pred = below[i];
			break;
		}
		bool ok;
		int zrc = check_candidate(c, s, dir, below[i], &ok);
		if (zrc == ZNONODE)
			continue; /* gone meanwhile: the next lower one */
		if (zrc != ZOK) {
			ret = pal_coord__classify(zrc);
			break;
		}
		if (ok) {
			*pred = below[i];
			set_str(&s->checked_pred, below[i]);
		}
	}
	free(below);
	return ret;
}

/* Forget our znode (deleted, vanished or from a dead session). */
static void forget_node(coord_shard *s)
{
	set_str(&s->node, NULL);
	set_str(&s->watched, NULL);
	s->czxid = 0;
	s->leading = false;
	s->verified = false;
	s->counted_lost = false;
}

static void count_election(pal_coord *c, int shard, const char *outcome)
{
	char labels[64];
	snprintf(labels, sizeof labels, "shard=\"%d\",outcome=\"%s\"", shard, outcome);
	pal_coord__count(c, "palisade_coord_elections_total", labels);
}

/* Step down before the delete becomes visible, so that the controller stops
 * acting before a successor can start. */
static void step_down(pal_coord *c, coord_shard *s)
{
	if (s->leading) {
		s->leading = false;
		pal_coord__publish(c);
	}
}

/* Delete our znode.  DONE when it is gone (or was already), CONN when the
 * outcome is unknown. */
static coord_step delete_own(pal_coord *c, coord_shard *s)
{
	char path[PAL_COORD_PATH_MAX];
	char dir[PAL_COORD_PATH_MAX];
	pal_coord__election_path(c, s->idx, dir, sizeof dir);
	child_path(path, sizeof path, dir, s->node);
	bool was_leading = s->leading;
	int64_t epoch = s->czxid;
	step_down(c, s);
	int zrc = zoo_delete(c->zh, path, -1);
	if (zrc != ZOK && zrc != ZNONODE) {
		coord_step st = pal_coord__classify(zrc);
		if (st == COORD_CONN)
			s->uncertain = true;
		pal_log(PAL_LOG_WARN, "election.delete_failed", "{s:i, s:s, s:s}", "shard", s->idx,
			"znode", s->node, "error", zerror(zrc));
		return st;
	}
	if (s->rejoin != HANDOFF_NONE || c->draining) {
		coord_handoff_reason r = s->rejoin != HANDOFF_NONE ? s->rejoin : HANDOFF_DRAIN;
		/* A drain steps down on every shard before the first delete and
		 * marks the shards it led with rejoin = HANDOFF_DRAIN. */
		bool led = was_leading || s->rejoin == HANDOFF_DRAIN;
		pal_log(PAL_LOG_INFO, "election.handoff", "{s:i, s:I, s:s, s:b}", "shard", s->idx,
			"epoch", (json_int_t)epoch, "reason", reason_name(r), "was_leading", led);
		if (led) {
			char labels[48];
			snprintf(labels, sizeof labels, "reason=\"%s\"", reason_name(r));
			pal_coord__count(c, "palisade_coord_handoffs_total", labels);
		}
	}
	forget_node(s);
	return COORD_DONE;
}

/* Create our znode at the tail of the queue (protected, ephemeral-sequential). */
static coord_step create_own(pal_coord *c, coord_shard *s)
{
	char dir[PAL_COORD_PATH_MAX], prefix[PAL_COORD_PATH_MAX], created[PAL_COORD_PATH_MAX];
	pal_coord__election_path(c, s->idx, dir, sizeof dir);
	char leaf[PREFIX_LEN + PAL_COORD_UUID_HEX + SEQ_MARK_LEN + 1];
	snprintf(leaf, sizeof leaf, PREFIX "%s" SEQ_MARK, c->uuid);
	child_path(prefix, sizeof prefix, dir, leaf);
	struct Stat st;
	memset(&st, 0, sizeof st);
	int zrc =
	    zoo_create2(c->zh, prefix, c->node_id, (int)strlen(c->node_id), c->acl,
			ZOO_EPHEMERAL_SEQUENTIAL, created, sizeof created, &st);
	if (zrc == ZNONODE) {
		int prc = pal_coord__ensure_path(c, dir);
		return prc == ZOK ? COORD_DONE : pal_coord__classify(prc);
	}
	if (zrc == ZOK && c->drop_creates > 0) {
		/* Test hook: the server created the znode but we act as if the
		 * reply had been lost on the way, exactly what a connection
		 * loss after the request was sent looks like. */
		c->drop_creates--;
		pal_log(PAL_LOG_WARN, "election.test_drop_reply", "{s:i, s:s}", "shard", s->idx,
			"znode", strrchr(created, '/') + 1);
		zrc = ZCONNECTIONLOSS;
	}
	if (zrc != ZOK) {
		coord_step step = pal_coord__classify(zrc);
		if (zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT)
			s->uncertain = true; /* may exist: find it by uuid, never blindly retry */
		pal_log(PAL_LOG_WARN, "election.create_failed", "{s:i, s:s, s:b}", "shard", s->idx,
			"error", zerror(zrc), "uncertain", s->uncertain);
		return step;
	}
	set_str(&s->node, strrchr(created, '/') + 1);
	s->czxid = st.czxid;
	s->counted_lost = false;
	pal_log(PAL_LOG_DEBUG, "election.joined", "{s:i, s:s, s:I}", "shard", s->idx, "znode",
		s->node, "czxid", (json_int_t)s->czxid);
	return COORD_DONE;
}

/* Read the czxid of our znode NAME (found by uuid after a lost reply). */
static int adopt(pal_coord *c, coord_shard *s, const char *dir, const char *name)
{
	char path[PAL_COORD_PATH_MAX];
	struct Stat st;
	child_path(path, sizeof path, dir, name);
	int zrc = zoo_exists(c->zh, path, 0, &st);
	if (zrc != ZOK)
		return zrc;
	set_str(&s->node, name);
	s->czxid = st.czxid;
	s->counted_lost = false;
	set_str(&s->watched, NULL);
	return ZOK;
}

/*
 * List the children and decide: find our znode by uuid (adopting it after an
 * uncertain create), delete duplicates, lead when lowest, otherwise watch the
 * predecessor.  *AGAIN is set when the caller should run another step (our
 * znode vanished or the predecessor went away before the watch was set).
 */
static coord_step evaluate(pal_coord *c, coord_shard *s, bool *again)
{
	char dir[PAL_COORD_PATH_MAX];
	struct String_vector kids = {0, NULL};
	pal_coord__election_path(c, s->idx, dir, sizeof dir);
	*again = false;
	int zrc = zoo_get_children(c->zh, dir, 0, &kids);
	if (zrc == ZNONODE) {
		kids.count = 0; /* nothing there yet: we have no znode */
	} else if (zrc != ZOK) {
		return pal_coord__classify(zrc);
	}
	const char *own, *pred;
	int dups, valid;
	(void)pal_coord__rank(kids.data, kids.count, c->uuid, &own, &pred, &dups, &valid);
	coord_step ret = COORD_DONE;
	valid -= s->n_foreign < valid ? s->n_foreign : valid; /* roughly: queue length */

	bool was_uncertain = s->uncertain;
	s->uncertain = false;
	if (own == NULL) {
		if (s->node != NULL && !was_uncertain)
			pal_log(PAL_LOG_WARN, "election.znode_vanished", "{s:i, s:s}", "shard",
				s->idx, "znode", s->node);
		if (s->leading)
			step_down(c, s);
		forget_node(s);
		*again = true;
		goto out;
	}
	if (s->node == NULL || strcmp(s->node, own) != 0) {
		if ((zrc = adopt(c, s, dir, own)) != ZOK) {
			s->uncertain = true;
			ret = zrc == ZNONODE ? COORD_DONE : pal_coord__classify(zrc);
			*again = zrc == ZNONODE;
			goto out;
		}
		if (was_uncertain) {
			pal_log(PAL_LOG_INFO, "election.create_recovered", "{s:i, s:s, s:I}",
				"shard", s->idx, "znode", own, "czxid", (json_int_t)s->czxid);
			pal_coord__count(c, "palisade_coord_create_recoveries_total", NULL);
		}
	}
	if (dups > 0) {
		for (int i = 0; i < kids.count; i++) {
			if (kids.data[i] == own || !pal_coord__name_has_uuid(kids.data[i], c->uuid))
				continue;
			char path[PAL_COORD_PATH_MAX];
			child_path(path, sizeof path, dir, kids.data[i]);
			int drc = zoo_delete(c->zh, path, -1);
			pal_log(PAL_LOG_WARN, "election.duplicate_deleted", "{s:i, s:s, s:s}",
				"shard", s->idx, "znode", kids.data[i], "result", zerror(drc));
		}
	}
	if (was_uncertain && (s->rejoin != HANDOFF_NONE || !s->want)) {
		*again = true; /* the pending handoff or drain deletes it next */
		goto out;
	}
	/* The lexical predecessor may be foreign: the real one is below it. */
	if (pred != NULL && (ret = find_pred(c, s, dir, kids.data, kids.count, own, &pred)) !=
			       COORD_DONE)
		goto out;
	if (pred == NULL) {
		set_str(&s->watched, NULL);
		if (!s->leading) {
			s->leading = true;
			pal_log(PAL_LOG_INFO, "election.won", "{s:i, s:I, s:s}", "shard", s->idx,
				"epoch", (json_int_t)s->czxid, "znode", s->node);
			count_election(c, s->idx, "won");
		} else if (!s->verified) {
			pal_log(PAL_LOG_INFO, "election.resumed", "{s:i, s:I}", "shard", s->idx,
				"epoch", (json_int_t)s->czxid);
		}
		s->verified = true;
		goto out;
	}
	s->verified = true;
	if (s->leading) {
		/* Cannot happen with sequential names (a newer znode is never
		 * lower); if it does, the safe move is to step down loudly. */
		pal_log(PAL_LOG_ERROR, "election.lost_lead", "{s:i, s:I, s:s}", "shard", s->idx,
			"epoch", (json_int_t)s->czxid, "predecessor", pred);
		step_down(c, s);
	}
	if (!s->counted_lost) {
		s->counted_lost = true;
		pal_log(PAL_LOG_INFO, "election.lost", "{s:i, s:s, s:s, s:i}", "shard", s->idx,
			"znode", s->node, "predecessor", pred, "queue", valid);
		count_election(c, s->idx, "lost");
	}
	if (s->watched != NULL && strcmp(s->watched, pred) == 0)
		goto out; /* the watch set earlier is still armed */
	char ppath[PAL_COORD_PATH_MAX];
	struct Stat st;
	child_path(ppath, sizeof ppath, dir, pred);
	zrc = zoo_wexists(c->zh, ppath, pal_coord__shard_watcher, s, &st);
	if (zrc == ZNONODE) {
		set_str(&s->watched, NULL);
		*again = true; /* gone before we looked: re-evaluate now */
	} else if (zrc != ZOK) {
		set_str(&s->watched, NULL);
		ret = pal_coord__classify(zrc);
	} else {
		set_str(&s->watched, pred);
		pal_coord__count(c, "palisade_coord_watches_total", NULL);
		pal_log(PAL_LOG_DEBUG, "election.watch", "{s:i, s:s, s:s}", "shard", s->idx,
			"znode", s->node, "predecessor", pred);
	}
out:
	deallocate_String_vector(&kids);
	return ret;
}

coord_step pal_coord__reconcile(pal_coord *c, coord_shard *s)
{
	for (int step = 0; step < RECONCILE_STEPS; step++) {
		coord_step st;
		bool again = false;
		if (s->uncertain) {
			/* Resolve by uuid first: evaluate() adopts or forgets. */
			st = evaluate(c, s, &again);
			if (st != COORD_DONE)
				return st;
			continue;
		}
		if (s->node != NULL && (!s->want || s->rejoin != HANDOFF_NONE)) {
			if ((st = delete_own(c, s)) != COORD_DONE)
				return st;
			if (!s->want)
				s->rejoin = HANDOFF_NONE;
			continue;
		}
		s->rejoin = HANDOFF_NONE;
		if (!s->want) {
			s->leading = false;
			return COORD_DONE;
		}
		if (s->node == NULL) {
			if ((st = create_own(c, s)) != COORD_DONE)
				return st;
			continue;
		}
		st = evaluate(c, s, &again);
		if (st != COORD_DONE || !again)
			return st;
	}
	pal_log(PAL_LOG_WARN, "election.busy", "{s:i}", "shard", s->idx);
	return COORD_LATER;
}
