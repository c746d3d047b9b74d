/*
 * planner.c - in-memory schedule of one shard and the decisions of a tick
 * (see include/palisade/planner.h for the contract).
 *
 * Data: every job sits in a binary min-heap keyed by `next`, its first
 * unplanned instant.  A tick finds the due jobs by walking only the part of
 * the heap whose keys are <= the horizon (heap order lets it skip whole
 * subtrees), works on tentative copies of their cursors, and merges their
 * instants in time order through a small temporary heap so that a row cap
 * cuts the tick at a clean instant.  pal_planner_commit() makes the
 * tentative cursors real and re-sifts those jobs: O(k log n) for k due jobs.
 *
 * `by_id` indexes the same jobs by id (key: the job's own id string, value:
 * the job; the table owns neither), so put/remove find a job in O(1) and
 * loading a shard of n jobs costs O(n log n), not O(n^2).  Membership
 * changes in two places only, pal_planner_put_job() (insert) and
 * heap_remove(), and each updates both.
 *
 * Memory per job: one allocation holding the job, its compact versions and
 * its id.  A version keeps its shared schedule (pal_schedule_acquire: one
 * per distinct cron/zone/policy in the process), its policy numbers and its
 * tenant and group interned in the planner's string chunk - not the spec:
 * 1M jobs cost a few hundred bytes each.
 *
 * A reload puts every job again.  A stored version never changes once
 * written (job_versions is immutable but for its activation), so a put whose
 * (version, effective_from) list equals the loaded one keeps the loaded job,
 * its compiled schedules and its cursor; a put that adds or activates a
 * version reuses the compiled schedules of the versions it already had.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/misfire.h"
#include "palisade/planner.h"
#include "palisade/schedule.h"

#define NEVER INT64_MAX

typedef struct pversion {
	int64_t eff; /* PAL_NO_TIME: pending activation */
	/* A version never activated: when it was stored; for one stored
	 * between the active one and the latest, where this tick activates
	 * it (switch_point; PAL_NO_TIME: it does not) */
	int64_t stored, t_eff;
	int64_t catchup_window_ms;
	pal_schedule *sched; /* shared: pal_schedule_release */
	const char *tenant, *group; /* interned in the planner's `strings` */
	int32_t version, partitions, priority, max_catchup;
	int32_t job_ref; /* jobs.ref, 0 when the load had none */
	pal_misfire_policy misfire;
	bool has_end; /* its schedule has an `end` (a retiring version's has) */
	bool moves;   /* its schedule has spread or jitter (pal_schedule_moves) */
} pversion;

typedef struct pjob {
	const char *id; /* points after v[nv], in the same allocation */
	int64_t cursor; /* every instant <= cursor is planned (PAL_NO_TIME: none yet) */
	int64_t next;   /* first instant > cursor, NEVER when none */
	/* a brand-new job awaiting activation: the tick that first saw it (or
	 * when it was stored: first_sight) and
	 * its first instant from then (PAL_NO_TIME until seen) */
	int64_t pend_since, pend_next;
	/* when its last version, awaiting activation, was stored (PAL_NO_TIME:
	 * unknown, or none awaits) */
	int64_t pend_created;
	/* tentative state of the current tick */
	int64_t t_cursor, t_next, t_eff;
	uint32_t hidx; /* index in the main heap */
	uint32_t nv;
	/* this tick's slot in batch->refs and the version it is for */
	uint32_t t_ref;
	int32_t t_ref_version;
	bool next_excl, touched, t_next_excl;
	/* this tick activates a version that takes over below the watermark
	 * (switch_point): its instants after t_eff were never planned, and
	 * the tick plans them up to the watermark at least */
	bool t_fresh;
	bool quarantined; /* its instants become misfires (reason quarantined) */
	/* loaded anew at a committed watermark and not yet checked against the
	 * database (pal_planner_loaded_due()): valid while equal to the
	 * planner's load_gen */
	uint32_t loaded_gen;
	pversion v[]; /* nv of them, then the id */
} pjob;

struct pal_planner {
	int shard;
	pal_planner_config cfg;
	pjob **heap;
	size_t n, cap;
	GHashTable *by_id; /* id -> pjob, the heap's members exactly */
	GStringChunk *strings; /* tenants and groups, interned; freed with the planner */
	size_t n_pending;      /* jobs whose last version awaits activation */
	int64_t horizon_cap;   /* ticks plan no later than this (PAL_NO_TIME: no cap) */
	bool hold_deferred;    /* pal_planner_hold_deferred(): no deferred activation */
	uint32_t load_gen;     /* see pjob.loaded_gen; starts at 1 */
	bool loaded_unchecked; /* some job may carry the current load_gen */
	int64_t inherited;     /* pal_planner_inherit() (first_sight) */
	pjob **touched; /* jobs of the last tick */
	size_t n_touched, cap_touched;
};

/* ---- heap ---------------------------------------------------------------- */

static void heap_swap(pjob **h, size_t a, size_t b)
{
	pjob *t = h[a];
	h[a] = h[b];
	h[b] = t;
	h[a]->hidx = a;
	h[b]->hidx = b;
}

static void sift_up(pjob **h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h[p]->next <= h[i]->next)
			break;
		heap_swap(h, p, i);
		i = p;
	}
}

static void sift_down(pjob **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l]->next < h[m]->next)
			m = l;
		if (r < n && h[r]->next < h[m]->next)
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

static void heap_fix(pal_planner *p, size_t i)
{
	sift_up(p->heap, i);
	sift_down(p->heap, p->n, p->heap[i]->hidx);
}

/* Temporary heap of the tick, keyed by t_next. */
typedef struct theap {
	pjob **h;
	size_t n;
} theap;

static void t_swap(theap *t, size_t a, size_t b)
{
	pjob *x = t->h[a];
	t->h[a] = t->h[b];
	t->h[b] = x;
}

static void t_push(theap *t, pjob *j)
{
	size_t i = t->n++;
	t->h[i] = j;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (t->h[p]->t_next <= t->h[i]->t_next)
			break;
		t_swap(t, p, i);
		i = p;
	}
}

static pjob *t_pop(theap *t)
{
	pjob *top = t->h[0];
	t->h[0] = t->h[--t->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < t->n && t->h[l]->t_next < t->h[m]->t_next)
			m = l;
		if (r < t->n && t->h[r]->t_next < t->h[m]->t_next)
			m = r;
		if (m == i)
			break;
		t_swap(t, i, m);
		i = m;
	}
	return top;
}

/* ---- instants -------------------------------------------------------------- */

static int64_t eff_of(const pjob *j, size_t i, bool tentative)
{
	if (j->v[i].eff != PAL_NO_TIME)
		return j->v[i].eff;
	if (!tentative)
		return PAL_NO_TIME;
	return i + 1 == j->nv ? j->t_eff : j->v[i].t_eff;
}

/* Forget what a tick decided for J's versions (touch, a failed or
 * quarantined job). */
static void t_reset(pjob *j)
{
	j->t_eff = PAL_NO_TIME;
	j->t_fresh = false;
	for (size_t i = 0; i < j->nv; i++)
		j->v[i].t_eff = PAL_NO_TIME;
}

/* The instants version I of J owns: (*lo, *hi] (hi NEVER for the last
 * activated one).  False when I is not activated (in the TENTATIVE view). */
static bool owned_span(const pjob *j, size_t i, bool tentative, int64_t *lo, int64_t *hi)
{
	*lo = eff_of(j, i, tentative);
	if (*lo == PAL_NO_TIME)
		return false;
	*hi = NEVER;
	for (size_t k = i + 1; k < j->nv; k++) {
		int64_t e = eff_of(j, k, tentative);
		if (e != PAL_NO_TIME) {
			*hi = e;
			break;
		}
	}
	return true;
}

/*
 * First instant of job J strictly after T, across its versions: instant x
 * belongs to version i when eff(i) < x <= eff(i+1).  Versions not activated
 * (and, when TENTATIVE, not activated by this tick) are ignored.
 */
static int64_t next_after(const pjob *j, int64_t t, bool tentative, bool *excl)
{
	for (size_t i = 0; i < j->nv; i++) {
		int64_t lo, hi;
		if (!owned_span(j, i, tentative, &lo, &hi))
			continue;
		if (t != PAL_NO_TIME && t >= hi)
			continue;
		int64_t start = (t == PAL_NO_TIME || t < lo) ? lo : t;
		int64_t x;
		bool ex = false;
		if (pal_schedule_next_from(j->v[i].sched, lo, start, &x, &ex) != PAL_OK)
			continue;
		if (x <= hi) {
			*excl = ex;
			return x;
		}
	}
	*excl = false;
	return NEVER;
}

/* Version owning instant X (tentative view). */
static const pversion *version_of(const pjob *j, int64_t x)
{
	const pversion *best = NULL;
	for (size_t i = 0; i < j->nv; i++) {
		int64_t e = eff_of(j, i, true);
		if (e != PAL_NO_TIME && e < x)
			best = &j->v[i];
	}
	return best ? best : &j->v[j->nv - 1];
}

static bool has_pending(const pjob *j)
{
	return j->nv && j->v[j->nv - 1].eff == PAL_NO_TIME;
}

static bool has_active(const pjob *j)
{
	for (size_t i = 0; i < j->nv; i++)
		if (j->v[i].eff != PAL_NO_TIME)
			return true;
	return false;
}

/* Whether version S, taking over at FROM, has no instant after it: a stop
 * (the retiring version of `delete`, one applied with its `end` reached). */
static bool is_stop(const pversion *s, int64_t from)
{
	int64_t x;
	bool ex;
	return s->has_end && pal_schedule_next_from(s->sched, from, from, &x, &ex) != PAL_OK;
}

/* When J's versions awaiting activation were stored (PAL_NO_TIME: none
 * awaits): the latest one's created_at for a job with a version activated
 * (where the new version takes over).  For a brand-new job, the first
 * one's after the last stop among them: the first that a tick could have
 * seen of the job as it is now (a re-apply while it waits changes what
 * is activated, not since when). */
static int64_t pending_created(const pjob *j)
{
	if (!has_pending(j))
		return PAL_NO_TIME;
	if (has_active(j))
		return j->v[j->nv - 1].stored;
	int64_t t = j->v[0].stored;
	for (size_t i = 0; i + 1 < j->nv; i++)
		if (is_stop(&j->v[i], j->v[i].stored))
			t = j->v[i + 1].stored;
	return t;
}

/* ---- batch ----------------------------------------------------------------- */

#define GROW(arr, n, cap)                                                                          \
	do {                                                                                       \
		if ((n) == (cap)) {                                                                \
			size_t nc = (cap) ? (cap) * 2 : 64;                                        \
			void *np = realloc((arr), nc * sizeof *(arr));                             \
			if (!np)                                                                   \
				return PAL_ENOMEM;                                                 \
			(arr) = np;                                                                \
			(cap) = nc;                                                                \
		}                                                                                  \
	} while (0)

static int add_trigger(pal_plan_batch *b, pjob *j, const pversion *v, int64_t at,
		       pal_plan_source src)
{
	/* One ref per job version of the batch: a job's instants come in time
	 * order, so once it moves to a newer version it never returns. */
	if (j->t_ref_version != v->version) {
		GROW(b->refs, b->n_refs, b->cap_refs);
		j->t_ref = (uint32_t)b->n_refs;
		j->t_ref_version = v->version;
		b->refs[b->n_refs++] = (pal_plan_jobref){ .job_id = j->id,
							  .version = v->version,
							  .priority = v->priority,
							  .tenant = v->tenant,
							  .group = v->group,
							  .job_ref = v->job_ref };
	}
	/* the instant the old system fires, for a shadow scope's boundaries */
	int64_t eff = v->moves ? eff_of(j, (size_t)(v - j->v), true) : PAL_NO_TIME;
	int64_t nominal = v->moves ? pal_schedule_nominal(v->sched, eff, at) : at;
	for (int part = 0; part < v->partitions; part++) {
		GROW(b->trig, b->n_trig, b->cap_trig);
		b->trig[b->n_trig++] = (pal_plan_trigger){ .job_id = j->id,
							   .version = v->version,
							   .at = at,
							   .nominal = nominal,
							   .partition = part,
							   .source = src,
							   .priority = v->priority,
							   .tenant = v->tenant,
							   .group = v->group,
							   .ref = j->t_ref,
							   /* a brand-new job has no older
							    * version's record to supersede */
							   .fresh = j->t_fresh && at > j->t_eff &&
								    has_active(j) };
	}
	return PAL_OK;
}

static int add_misfire(pal_plan_batch *b, const pjob *j, int version, int64_t from, int64_t to,
		       int count, const char *policy, const char *reason)
{
	if (count <= 0)
		return PAL_OK;
	GROW(b->mis, b->n_mis, b->cap_mis);
	b->mis[b->n_mis++] = (pal_plan_misfire){ .job_id = j->id,
						 .version = version,
						 .from = from,
						 .to = to,
						 .count = count,
						 .policy = policy,
						 .reason = reason };
	return PAL_OK;
}

/* A manual policy's ticket for the missed run FROM..TO of COUNT instants. */
static int add_ticket(pal_plan_batch *b, const pjob *j, int version, int64_t from, int64_t to,
		      int count)
{
	GROW(b->tick, b->n_tick, b->cap_tick);
	b->tick[b->n_tick++] = (pal_plan_ticket){
		.job_id = j->id, .version = version, .from = from, .to = to, .count = count
	};
	return PAL_OK;
}

static const char *policy_name(pal_misfire_policy p)
{
	return pal_misfire_policy_name(p);
}

/* Excluded instants FROM..TO of version V: one misfire row, naming the
 * shared calendar CAL (NULL: the job's own `exclude:` dates). */
static int add_excluded(pal_plan_batch *b, const pjob *j, int version, int64_t from, int64_t to,
			int count, const pal_calendar *cal)
{
	int rc = add_misfire(b, j, version, from, to, count, "exclude", "excluded");
	if (!rc && count > 0 && cal) {
		b->mis[b->n_mis - 1].calendar = cal->name;
		b->mis[b->n_mis - 1].calendar_version = cal->version;
	}
	return rc;
}

/* Run-length of excluded instants of one job, flushed as one misfire row. */
typedef struct excl_run {
	int64_t from, to;
	int count, version;
	const pal_calendar *cal; /* that excluded them; NULL: the job's own dates */
} excl_run;

static int flush_excl(pal_plan_batch *b, const pjob *j, excl_run *r)
{
	int rc = add_excluded(b, j, r->version, r->from, r->to, r->count, r->cal);
	r->count = 0;
	return rc;
}

static int note_excl(pal_plan_batch *b, const pjob *j, excl_run *r, int64_t at,
		     const pversion *v)
{
	int version = v->version;
	const pal_calendar *cal = pal_schedule_excluding(v->sched, at);
	if (r->count && (r->version != version || r->cal != cal)) {
		int rc = flush_excl(b, j, r);
		if (rc)
			return rc;
	}
	if (!r->count) {
		r->from = at;
		r->version = version;
		r->cal = cal;
	}
	r->to = at;
	r->count++;
	return PAL_OK;
}

/*
 * Instants of J (tentative view) in (A, B], across its versions, counted
 * without visiting each (pal_schedule_count): *n, the first and the last,
 * and the version owning the last.  False when a version in the way has
 * exclusions: the caller walks instead.
 */
static bool count_run(const pjob *j, int64_t a, int64_t b, int64_t *n, int64_t *first,
		      int64_t *last, const pversion **lastv)
{
	*n = 0;
	*first = *last = PAL_NO_TIME;
	*lastv = NULL;
	for (size_t i = 0; i < j->nv; i++) {
		int64_t lo, hi;
		if (!owned_span(j, i, true, &lo, &hi))
			continue;
		int64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
		if (s >= e)
			continue;
		if (!pal_schedule_countable(j->v[i].sched))
			return false;
		int64_t c, f, l;
		if (pal_schedule_count_from(j->v[i].sched, lo, s, e, &c, &f, &l) != PAL_OK)
			return false;
		if (!c)
			continue;
		if (!*n)
			*first = f;
		*last = l;
		*lastv = &j->v[i];
		*n += c;
	}
	return true;
}

/* Instants of J in [T, LAST] (count_run over (T - 1, LAST]). */
static int64_t count_from(const pjob *j, int64_t t, int64_t last)
{
	int64_t n, f, l;
	const pversion *v;
	if (!count_run(j, t - 1, last, &n, &f, &l, &v))
		return -1;
	return n;
}

/* Rows of the brand-new job J, activated at pend_since, up to the
 * WATERMARK: its instants there (counted; walked, until past MAX rows,
 * when its schedule has exclusions) times its partitions, a row each. */
static int64_t fresh_rows(pjob *j, int64_t watermark, int64_t max)
{
	int64_t keep = j->t_eff, n = 0, f, l, parts = j->v[j->nv - 1].partitions;
	const pversion *v;
	j->t_eff = j->pend_since;
	if (!count_run(j, j->pend_since, watermark, &n, &f, &l, &v)) {
		bool ex;
		n = 0;
		for (int64_t t = next_after(j, j->pend_since, true, &ex);
		     t <= watermark && n * parts <= max; t = next_after(j, t, true, &ex))
			n++;
	}
	j->t_eff = keep;
	return n * parts;
}

/* Up to N catch-up triggers: the instants of J after A, in order. */
static int add_catchups(pal_plan_batch *b, pjob *j, int64_t a, int64_t n)
{
	bool ex;
	int64_t x = a;
	for (int64_t k = 0; k < n; k++) {
		x = next_after(j, x, true, &ex);
		if (x == NEVER)
			break;
		int rc = add_trigger(b, j, version_of(j, x), x, PAL_SOURCE_CATCHUP);
		if (rc)
			return rc;
	}
	return PAL_OK;
}

/*
 * The missed run of job J, (t_cursor, LIMIT], decided from counts instead of
 * a walk: the cost does not grow with the length of the outage (30 days of
 * an every-second job are a few hundred cron probes, not 2.6 million), so a
 * planning transaction stays short however long every node was down.  The
 * rows are those the walk made: one per range and reason.  Returns 1 (and
 * changes nothing) when a version has exclusions: the caller walks.
 */
static int plan_missed_counted(pal_plan_batch *b, pjob *j, int64_t now, int64_t limit)
{
	int64_t c0 = j->t_cursor, n, first, last;
	const pversion *lastv, *v;
	if (!count_run(j, c0, limit, &n, &first, &last, &lastv))
		return 1;
	if (!n)
		return 1;
	j->t_cursor = last;
	j->t_next = next_after(j, last, true, &j->t_next_excl);
	const char *pol = policy_name(lastv->misfire);
	bool all = lastv->misfire == PAL_MISFIRE_FIRE_ALL;
	bool windowed = all || lastv->misfire == PAL_MISFIRE_FIRE_ONCE;
	int64_t ws = now - lastv->catchup_window_ms / 1000;
	/* the run's instants before the window: (c0, ws - 1], never past LAST
	 * (the next version's instants are not this run's) */
	int64_t we = ws - 1 < last ? ws - 1 : last;
	int64_t on = 0, of = 0, ol = 0;
	if (windowed && we > c0 && !count_run(j, c0, we, &on, &of, &ol, &v))
		return PAL_EINVAL;
	pal_misfire_split s = pal_misfire_decide(lastv->misfire, n, on, lastv->max_catchup);
	int rc = PAL_OK;
	if (s.missed) {
		/* the run but its newest instant when that one fires */
		int64_t m = n, f = first, prev = last;
		if (s.fire && !count_run(j, c0, last - 1, &m, &f, &prev, &v))
			return PAL_EINVAL;
		rc = add_misfire(b, j, lastv->version, f, prev, (int)m, pol, "missed");
	}
	if (!rc && s.ticket)
		rc = add_ticket(b, j, lastv->version, first, last, (int)n);
	if (rc || !all)
		return rc || !s.fire
			   ? rc
			   : add_trigger(b, j, version_of(j, last), last, PAL_SOURCE_CATCHUP);
	int64_t a0 = we > c0 ? we : c0, ni, fi, li;
	if (!count_run(j, a0, last, &ni, &fi, &li, &v))
		return PAL_EINVAL;
	rc = add_misfire(b, j, lastv->version, of, ol, (int)on, pol, "outside_window");
	if (rc || !ni)
		return rc;
	if (!s.fire)
		return add_misfire(b, j, lastv->version, fi, li, (int)ni, pol, "over_max_catchup");
	if (!s.over)
		return add_catchups(b, j, a0, ni);
	/* The first kept instant: the latest t with s.fire instants in
	 * [t, li].  lo has at least that many after it, hi fewer: gallop back
	 * from li, then bisect. */
	int64_t cap = s.fire;
	int64_t lo = fi, hi = li + 1;
	for (int64_t d = 1;; d *= 2) {
		int64_t t = li - d;
		if (t <= fi)
			break;
		int64_t g = count_from(j, t, li);
		if (g < 0)
			return PAL_EINVAL;
		if (g >= cap) {
			lo = t;
			break;
		}
		hi = t;
	}
	while (hi - lo > 1) {
		int64_t m = lo + (hi - lo) / 2;
		int64_t g = count_from(j, m, li);
		if (g < 0)
			return PAL_EINVAL;
		if (g >= cap)
			lo = m;
		else
			hi = m;
	}
	int64_t mo, mf, ml;
	if (!count_run(j, a0, lo - 1, &mo, &mf, &ml, &v))
		return PAL_EINVAL;
	rc = add_misfire(b, j, lastv->version, mf, ml, (int)mo, pol, "over_max_catchup");
	return rc ? rc : add_catchups(b, j, lo - 1, cap);
}

/*
 * The part of a missed run of job J owned by one version: instants in
 * (W, LIMIT] starting at j->t_next, all of the version owning the last one
 * (plan_missed cuts LIMIT at that version's end).  Decides per that
 * version's policy, emits catch-up triggers and misfire ranges, and leaves
 * j->t_cursor / t_next after the part.
 */
static int plan_missed_part(pal_planner *p, pal_plan_batch *b, pjob *j, int64_t now, int64_t limit)
{
	int fast = plan_missed_counted(b, j, now, limit);
	if (fast != 1)
		return fast;
	excl_run ex = { 0 };
	int64_t first = PAL_NO_TIME, last = PAL_NO_TIME;
	int count = 0, rc;
	const pversion *lastv = version_of(j, j->t_next);
	int64_t x = j->t_next;
	bool xe = j->t_next_excl;
	/* The version of the part's instants decides; find it as we go. */
	while (x != NEVER && x <= limit) {
		const pversion *v = version_of(j, x);
		if (xe) {
			if ((rc = note_excl(b, j, &ex, x, v)))
				goto out;
		} else {
			if (first == PAL_NO_TIME)
				first = x;
			last = x;
			lastv = v;
			count++;
		}
		j->t_cursor = x;
		x = next_after(j, x, true, &xe);
	}
	j->t_next = x;
	j->t_next_excl = xe;
	if ((rc = flush_excl(b, j, &ex)))
		goto out;
	if (!count)
		goto out;
	const pversion *s = lastv;
	const char *pol = policy_name(s->misfire);
	int64_t window_start = now - s->catchup_window_ms / 1000;
	/* the run is before the window whole or its newest instant is in it:
	 * all fire_once asks (fire_all's split is redone below, per instant) */
	pal_misfire_split sp = pal_misfire_decide(s->misfire, count,
						  last < window_start ? count : 0, s->max_catchup);
	if (sp.missed) {
		/* the run but its newest instant when that one fires */
		int64_t prev = last;
		if (sp.fire) {
			bool e2;
			int64_t y = first;
			prev = first;
			while ((y = next_after(j, y, true, &e2)) < last)
				if (!e2)
					prev = y;
		}
		rc = add_misfire(b, j, lastv->version, first, prev, (int)sp.missed, pol, "missed");
	}
	if (!rc && sp.ticket)
		rc = add_ticket(b, j, lastv->version, first, last, count);
	if (rc || s->misfire != PAL_MISFIRE_FIRE_ALL) {
		if (!rc && sp.fire)
			rc = add_trigger(b, j, version_of(j, last), last, PAL_SOURCE_CATCHUP);
		goto out;
	}
	/* Second pass over the run: the instants before the window are its
	 * prefix, so the split is known at the first one inside it. */
	int64_t out_from = PAL_NO_TIME, out_to = 0, cap_from = PAL_NO_TIME, cap_to = 0;
	int64_t out_n = 0, cap_n = 0;
	bool e2 = false, decided = false;
	for (int64_t y = first; !rc && y != NEVER && y <= last; y = next_after(j, y, true, &e2)) {
		if (e2)
			continue;
		if (y < window_start) {
			if (out_from == PAL_NO_TIME)
				out_from = y;
			out_to = y, out_n++;
			continue;
		}
		if (!decided) {
			sp = pal_misfire_decide(s->misfire, count, out_n, s->max_catchup);
			decided = true;
		}
		if (cap_n < sp.over) {
			if (cap_from == PAL_NO_TIME)
				cap_from = y;
			cap_to = y, cap_n++;
			continue;
		}
		rc = add_trigger(b, j, version_of(j, y), y, PAL_SOURCE_CATCHUP);
	}
	if (!rc)
		rc = add_misfire(b, j, lastv->version, out_from, out_to, (int)out_n, pol,
				 "outside_window");
	if (!rc)
		rc = add_misfire(b, j, lastv->version, cap_from, cap_to, (int)cap_n, pol,
				 "over_max_catchup");
out:
	(void)p;
	return rc;
}

/*
 * The missed run of job J: instants in (W, LIMIT] (LIMIT = now - threshold)
 * starting at j->t_next.  A run that crosses a version switch (a controller
 * away past a switch to or from a one-shot, whose new version takes over
 * above W) is split there: each version's instants are decided by that
 * version's own misfire policy, window and max_catchup, and its rows name
 * it.  Leaves j->t_cursor / t_next after the run.
 */
static int plan_missed(pal_planner *p, pal_plan_batch *b, pjob *j, int64_t now, int64_t limit)
{
	while (j->t_next != NEVER && j->t_next <= limit) {
		int64_t end = limit;
		for (size_t i = 0; i < j->nv; i++) {
			int64_t lo, hi;
			if (owned_span(j, i, true, &lo, &hi) && lo < j->t_next && j->t_next <= hi) {
				end = hi < limit ? hi : limit;
				break;
			}
		}
		int rc = plan_missed_part(p, b, j, now, end);
		if (rc)
			return rc;
	}
	return PAL_OK;
}

/*
 * A quarantined job plans nothing: its instants after its cursor up to the
 * horizon are recorded as one misfire range with reason "quarantined" (a
 * job flagged when loaded re-records the re-scan below the watermark: an
 * instant may then have both a trigger and a misfire, never neither).  Counted where the
 * versions allow it, else walked (every instant up to the horizon, at most
 * one tick's worth once caught up).  Its pending activation waits.
 */
static int plan_quarantined(pal_plan_batch *b, pjob *j, int64_t horizon)
{
	int64_t from = j->t_cursor;
	if (from == PAL_NO_TIME || !has_active(j))
		return PAL_OK;
	int64_t n = 0, first = PAL_NO_TIME, last = PAL_NO_TIME;
	const pversion *lastv = NULL;
	if (!count_run(j, from, horizon, &n, &first, &last, &lastv)) {
		n = 0;
		bool ex;
		for (int64_t x = next_after(j, from, true, &ex); x != NEVER && x <= horizon;
		     x = next_after(j, x, true, &ex)) {
			if (ex)
				continue;
			if (!n)
				first = x;
			last = x;
			lastv = version_of(j, x);
			n++;
		}
	}
	j->t_cursor = horizon;
	j->t_next = next_after(j, horizon, true, &j->t_next_excl);
	if (!n)
		return PAL_OK;
	return add_misfire(b, j, lastv->version, first, last, (int)n,
			   policy_name(lastv->misfire), "quarantined");
}

/* ---- API ------------------------------------------------------------------- */

pal_planner *pal_planner_new(int shard, const pal_planner_config *cfg)
{
	pal_planner *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	/* Keys are the jobs' own id strings: freed with the job, never by the table. */
	p->by_id = g_hash_table_new(g_str_hash, g_str_equal);
	p->strings = g_string_chunk_new(1024);
	p->shard = shard;
	p->horizon_cap = PAL_NO_TIME;
	p->inherited = PAL_NO_TIME;
	p->load_gen = 1;
	p->cfg = *cfg;
	if (p->cfg.max_rows_per_tick <= 0)
		p->cfg.max_rows_per_tick = 50000;
	if (p->cfg.max_activations_per_tick <= 0)
		p->cfg.max_activations_per_tick = PAL_PLANNER_ACTIVATIONS_PER_TICK;
	return p;
}

void pal_planner_inherit(pal_planner *p, int64_t last_write)
{
	p->inherited = last_write;
}

static void job_free(pjob *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nv; i++)
		pal_schedule_release(j->v[i].sched);
	free(j);
}

void pal_planner_free(pal_planner *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		job_free(p->heap[i]);
	g_hash_table_destroy(p->by_id);
	g_string_chunk_free(p->strings);
	free(p->heap);
	free(p->touched);
	free(p);
}

void pal_planner_set_config(pal_planner *p, const pal_planner_config *cfg)
{
	int cap = p->cfg.max_rows_per_tick, acts = p->cfg.max_activations_per_tick;
	const char *fault = p->cfg.fault_job;
	p->cfg = *cfg;
	if (!p->cfg.fault_job)
		p->cfg.fault_job = fault;
	if (p->cfg.max_rows_per_tick <= 0)
		p->cfg.max_rows_per_tick = cap;
	if (p->cfg.max_activations_per_tick <= 0)
		p->cfg.max_activations_per_tick = acts;
}

void pal_planner_hold_deferred(pal_planner *p, bool hold)
{
	p->hold_deferred = hold;
}

int pal_planner_shard(const pal_planner *p)
{
	return p->shard;
}

size_t pal_planner_jobs(const pal_planner *p)
{
	/* The index and the heap hold the same jobs; counting through the index
	 * lets a test see an index that missed an insert or a removal. */
	return g_hash_table_size(p->by_id);
}

static pjob *find(const pal_planner *p, const char *id)
{
	return g_hash_table_lookup(p->by_id, id);
}

/* Take J out of the heap and the index; J itself is left to the caller. */
static void heap_remove(pal_planner *p, pjob *j)
{
	g_hash_table_remove(p->by_id, j->id);
	if (has_pending(j))
		p->n_pending--;
	size_t i = j->hidx;
	p->n--;
	if (i != p->n) {
		p->heap[i] = p->heap[p->n];
		p->heap[i]->hidx = i;
		heap_fix(p, i);
	}
}

/* Version VERSION of loaded job J, or NULL. */
static pversion *version_no(pjob *j, int version)
{
	for (size_t i = 0; i < j->nv; i++)
		if (j->v[i].version == version)
			return &j->v[i];
	return NULL;
}

/* J holds exactly VERSIONS[0..n): same numbers, same activations. */
static bool same_versions(const pjob *j, const pal_plan_version *versions, size_t n)
{
	if (j->nv != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (j->v[i].version != versions[i].version ||
		    j->v[i].eff != versions[i].effective_from)
			return false;
	return true;
}

/* J, holding VERSIONS[0..n), was loaded without the job reference they
 * carry: the job got its jobs.ref from the backfill after the load. */
static bool ref_gained(const pjob *j, const pal_plan_version *versions, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!j->v[i].job_ref && versions[i].job_ref)
			return true;
	return false;
}

bool pal_planner_job_current(const pal_planner *p, const char *job_id,
			     const pal_plan_version *versions, size_t n)
{
	const pjob *j = find(p, job_id);
	return j && n && same_versions(j, versions, n) && !ref_gained(j, versions, n);
}

void pal_planner_remove_job(pal_planner *p, const char *job_id)
{
	pjob *j = find(p, job_id);
	if (!j)
		return;
	heap_remove(p, j);
	p->n_touched = 0; /* a pending tick may point at it: drop that tick */
	job_free(j);
}

/* Brand-new job J (no version activated) was first seen at SINCE: it is
 * activated as of then, its first instant from then recomputed. */
static void seen_at(pjob *j, int64_t since)
{
	bool ex;
	int64_t keep = j->t_eff;
	j->pend_since = j->t_eff = since;
	j->pend_next = next_after(j, j->pend_since, true, &ex);
	j->t_eff = keep;
}

/*
 * A brand-new job J stored (its first version's created_at, the apply's
 * transaction start) at or before the shard's last fenced write before
 * this leader claimed it (p->inherited: a previous leader's last committed
 * tick, or a later write of it): that leader may have seen it and deferred
 * its activation (the row cap), keeping that first sight in its memory
 * only.  Such a job is activated as of when it was stored, at or before
 * any tick's first sight, so a leader change while it waits loses none of
 * its instants (those before this leader's first tick are planned as never
 * planned, by the misfire policy past the threshold).  One stored after
 * that write (applied while no controller ran, or during the leader
 * change) starts when a tick of this leader first sees it.
 */
static void first_sight(const pal_planner *p, pjob *j)
{
	if (p->inherited == PAL_NO_TIME || has_active(j) || !has_pending(j) ||
	    j->pend_created == PAL_NO_TIME || j->pend_created > p->inherited)
		return;
	seen_at(j, j->pend_created);
}

/* A brand-new job J replacing OLD (re-applied while it waits for
 * activation) keeps OLD's first sight when it is earlier: the instants
 * from there are still its own, planned by no one.  Not when the job as
 * it is now was stored after that sight (a stop in between: deleted and
 * applied again). */
static void keep_first_sight(pjob *j, const pjob *old)
{
	if (has_active(j) || has_active(old) || old->pend_since == PAL_NO_TIME ||
	    (j->pend_created != PAL_NO_TIME && j->pend_created > old->pend_since))
		return;
	if (j->pend_since == PAL_NO_TIME || old->pend_since < j->pend_since)
		seen_at(j, old->pend_since);
}

int pal_planner_put_job(pal_planner *p, const char *job_id, const pal_plan_version *versions,
			size_t n, int64_t watermark, char *err, size_t errlen)
{
	if (n == 0) {
		snprintf(err, errlen, "job %s: no versions", job_id);
		return PAL_EINVAL;
	}
	pjob *old = find(p, job_id);
	if (old && same_versions(old, versions, n)) {
		/* Nothing changed (a reload): keep the loaded job, its schedules
		 * and its cursor; WATERMARK is not needed.  A replacement would
		 * only raise the cursor to watermark - overlap, below which the
		 * loaded job has nothing left to plan (its next instant is past
		 * the watermark of its last committed tick): the same instants.
		 * A job loaded before the backfill gave it a ref takes it here:
		 * its rows carry it from the next tick on instead of going
		 * through the database's fill trigger (a ref never changes once
		 * given, so one loaded is kept). */
		for (size_t i = 0; i < n; i++)
			if (!old->v[i].job_ref)
				old->v[i].job_ref = versions[i].job_ref;
		return PAL_OK;
	}
	if (p->n >= UINT32_MAX) {
		snprintf(err, errlen, "job %s: too many jobs in one shard", job_id);
		return PAL_EINVAL;
	}
	size_t idlen = strlen(job_id) + 1;
	pjob *j = calloc(1, sizeof *j + n * sizeof(pversion) + idlen);
	if (!j)
		return PAL_ENOMEM;
	memcpy((char *)&j->v[n], job_id, idlen);
	j->id = (const char *)&j->v[n];
	j->pend_since = j->pend_next = PAL_NO_TIME;
	for (size_t i = 0; i < n; i++) {
		const pal_plan_version *in = &versions[i];
		pversion *v = &j->v[j->nv];
		v->version = in->version;
		v->eff = in->effective_from;
		v->partitions = in->partitions > 0 ? in->partitions : 1;
		v->priority = in->priority;
		v->job_ref = in->job_ref;
		v->max_catchup = in->max_catchup;
		v->catchup_window_ms = in->catchup_window_ms;
		v->misfire = in->misfire;
		v->has_end = in->has_end;
		v->stored = in->effective_from == PAL_NO_TIME ? in->created_at : PAL_NO_TIME;
		v->t_eff = PAL_NO_TIME;
		v->tenant = g_string_chunk_insert_const(p->strings, in->tenant ? in->tenant : "");
		v->group = g_string_chunk_insert_const(p->strings, in->group ? in->group : "");
		j->nv++;
		/* Compiled already: taken from OLD below, once nothing can fail. */
		if (old && version_no(old, v->version))
			continue;
		int rc = pal_schedule_acquire(in, job_id, &v->sched, err, errlen);
		if (rc) {
			job_free(j);
			return rc;
		}
	}
	if (p->n == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 64;
		pjob **nh = realloc(p->heap, nc * sizeof *nh);
		if (!nh) {
			job_free(j);
			return PAL_ENOMEM;
		}
		p->heap = nh;
		p->cap = nc;
	}
	if (old) {
		for (size_t i = 0; i < j->nv; i++) {
			pversion *ov = j->v[i].sched ? NULL : version_no(old, j->v[i].version);
			if (ov) {
				j->v[i].sched = ov->sched;
				ov->sched = NULL;
			}
		}
	}
	for (size_t i = 0; i < j->nv; i++)
		j->v[i].moves = pal_schedule_moves(j->v[i].sched);
	j->pend_created = pending_created(j);
	/* Resume at watermark - overlap; instants at or below the cursor count
	 * as planned.  A job none of whose versions was ever activated was
	 * planned by nobody: no cursor, so that the tick activating it plans
	 * from its activation on (plan_due), not from watermark - overlap,
	 * which is above the activation when the lookahead is longer than the
	 * overlap. */
	j->cursor = watermark == PAL_NO_TIME || !has_active(j) ? PAL_NO_TIME
							       : watermark - p->cfg.overlap_s;
	j->next = next_after(j, j->cursor, false, &j->next_excl);
	first_sight(p, j);
	if ((!old && watermark != PAL_NO_TIME) || (old && old->loaded_gen == p->load_gen)) {
		j->loaded_gen = p->load_gen; /* an unchecked job replaced stays unchecked */
		p->loaded_unchecked = true;
	}

	if (old) {
		keep_first_sight(j, old);
		/* Keep the old cursor if it is further: a reload must not re-plan. */
		if (old->cursor != PAL_NO_TIME && (j->cursor == PAL_NO_TIME || old->cursor > j->cursor)) {
			j->cursor = old->cursor;
			j->next = next_after(j, j->cursor, false, &j->next_excl);
		}
		heap_remove(p, old);
		p->n_touched = 0;
		job_free(old);
	}
	j->hidx = (uint32_t)p->n;
	p->heap[p->n++] = j;
	g_hash_table_insert(p->by_id, (gpointer)j->id, j);
	if (has_pending(j))
		p->n_pending++;
	sift_up(p->heap, j->hidx);
	return PAL_OK;
}

size_t pal_planner_pending(const pal_planner *p)
{
	return p->n_pending;
}

static int touch(pal_planner *p, pjob *j)
{
	if (j->touched)
		return PAL_OK;
	if (p->n_touched == p->cap_touched) {
		size_t nc = p->cap_touched ? p->cap_touched * 2 : 64;
		pjob **nt = realloc(p->touched, nc * sizeof *nt);
		if (!nt)
			return PAL_ENOMEM;
		p->touched = nt;
		p->cap_touched = nc;
	}
	j->touched = true;
	j->t_ref_version = -1;
	j->t_cursor = j->cursor;
	j->t_next = j->next;
	j->t_next_excl = j->next_excl;
	t_reset(j);
	p->touched[p->n_touched++] = j;
	return PAL_OK;
}

/*
 * Collect jobs due by HORIZON (heap keys <= horizon) and the new versions of
 * active jobs the walk meets.  A brand-new job (its key is NEVER until it is
 * activated) is left to the pending scan of pal_planner_tick(), which bounds
 * how many of them a tick activates: touched here, the ones at the walk's
 * frontier were activated outside that bound.
 */
static int collect(pal_planner *p, size_t i, int64_t horizon)
{
	if (i >= p->n)
		return PAL_OK;
	pjob *j = p->heap[i];
	bool due = j->next <= horizon;
	if (due || (has_pending(j) && has_active(j))) {
		int rc = touch(p, j);
		if (rc)
			return rc;
	}
	if (!due)
		return PAL_OK; /* the subtree's keys are >= this one */
	int rc = collect(p, 2 * i + 1, horizon);
	return rc ? rc : collect(p, 2 * i + 2, horizon);
}

/*
 * Where the version awaiting activation of active job J takes over, given
 * the shard's watermark W (docs/jobs.md, "Where a new version takes over"):
 * at W, the end of what is planned, while the version active before it (P,
 * the last activated) has an instant after W.  When P has an `end` and no
 * instant after W - it ended: a retired job applied again, a job whose
 * `end` passed - nothing of P is left to plan and the instants between
 * P's last one and W were planned by no version: the new version takes
 * over at P's last instant, but never before it was stored (the instants
 * of a retirement are not caught up) nor before P's own activation.  A job
 * whose `end` passed long ago is activated at its apply; one that ends
 * between its apply and W at the end.  A P without an `end` that has no
 * instant (a job with `after`, whose dependent instants are decided up to
 * its shard's watermark by the version that owns them) keeps W.  A new
 * version that itself has no instant after it was stored (a retiring
 * version: its `end` is the retirement; a job applied with its `end`
 * reached) takes over when it was stored, not before P's activation:
 * nothing after that is planned for it, and the version applied after it
 * can take over at its own apply.  So does a version of which it or P is a
 * one-shot (`at`).
 */
static int64_t switch_between(const pversion *prev, const pversion *n, int64_t created, int64_t w)
{
	int64_t from = prev->eff > created ? prev->eff : created, x;
	bool ex;
	/* A version that has no instant after it was stored (a retiring
	 * version, one applied with its `end` reached) takes over then: the
	 * old version's rows after it were cancelled by the retirement's
	 * sweep or by the apply (its takeover sweep, src/store/apply_takeover.c)
	 * and are not its to keep. */
	if (n->has_end && from < w && pal_schedule_next_from(n->sched, from, from, &x, &ex) != PAL_OK)
		return from;
	/* A one-shot moved, or a job changed to or from one, takes over then
	 * too: at W the old instant up to W would still fire (a second
	 * effect) or the new one up to W would fire under no version; the
	 * apply cancelled the old version's rows after it but at the new
	 * version's own instants.  Also when W is below that (the shard had
	 * no controller for longer than the lookahead): P keeps the instants
	 * in (W, from] and plans them as missed by its misfire policy, and
	 * a version after a one-shot has no instant before it was stored. */
	if (pal_schedule_one_shot(n->sched) || pal_schedule_one_shot(prev->sched))
		return from;
	if (!prev->has_end)
		return w;
	if (from >= w || pal_schedule_next_from(prev->sched, prev->eff, w, &x, &ex) == PAL_OK)
		return w;
	/* P's last instant in (from, W], if any: at most a lookahead of them */
	int64_t at = from;
	while (pal_schedule_next_from(prev->sched, prev->eff, at, &x, &ex) == PAL_OK && x <= w)
		at = x;
	return at;
}

/* Where N, stored at CREATED, takes over after C, a never-activated
 * version this tick activates at C_EFF (switch_point): when N was stored
 * (not before C_EFF) where C is a stop (it has no instant after it was
 * stored, so nothing is planned for it that N would have to leave alone),
 * where N is one, or where either is a one-shot; otherwise by the rule
 * above, as if C had been activated at C_EFF. */
static int64_t switch_after(const pversion *c, int64_t c_eff, const pversion *n, int64_t created,
			    int64_t w)
{
	int64_t from = created > c_eff ? created : c_eff;
	if (is_stop(c, c->stored > c_eff ? c->stored : c_eff) || is_stop(n, from) ||
	    pal_schedule_one_shot(c->sched) || pal_schedule_one_shot(n->sched))
		return from;
	pversion cv = *c;
	cv.eff = c_eff;
	int64_t at = switch_between(&cv, n, created, w);
	return at < c_eff ? c_eff : at;
}

/* Where the version after J's version K (the next one no tick activated,
 * else the pending one) would take over from C, active since C_EFF, were K
 * left out. */
static int64_t next_takeover(const pjob *j, size_t k, const pversion *c, int64_t c_eff, int64_t w)
{
	const pversion *n = &j->v[j->nv - 1];
	int64_t created = j->pend_created;
	for (size_t m = k + 1; m + 1 < j->nv; m++)
		if (j->v[m].eff == PAL_NO_TIME && j->v[m].stored != PAL_NO_TIME) {
			n = &j->v[m];
			created = n->stored;
			break;
		}
	int64_t at = switch_between(c, n, created, w);
	return at < c_eff ? c_eff : at;
}

/*
 * switch_point for job J at watermark W.  The versions stored after the
 * active version P that no tick activated before the latest one was
 * stored (a `delete` and an apply within one scan, or while the shard had
 * no controller) are activated in this tick one after the other, each
 * where a tick that saw it in time would have: after P by the rule above
 * (where it was stored for a stop, a one-shot or a version after one,
 * else at W; a stop at W when W is below where it was stored), after such
 * a version by switch_after.  One that would take over from P at W and is
 * neither a stop nor a one-shot, nor follows a one-shot P, is left out
 * when the version after it takes over there too; when that one takes
 * over later (a one-shot, a stop), it is activated, so that the instants
 * between are its own and not P's.  So the instants before a stop
 * stay P's, those between a stop and the next apply belong to no version,
 * a version applied after a stop (or after or as a one-shot) has those
 * from its apply to the next switch, and
 * the latest version those after its own.  Sets their t_eff.
 */
static int64_t switch_point(pjob *j, int64_t w)
{
	size_t pi = j->nv;
	for (size_t i = 0; i + 1 < j->nv; i++)
		if (j->v[i].eff != PAL_NO_TIME)
			pi = i;
	if (pi == j->nv || j->pend_created == PAL_NO_TIME)
		return w;
	const pversion *c = &j->v[pi];
	int64_t c_eff = c->eff;
	for (size_t k = pi + 1; k + 1 < j->nv; k++) {
		pversion *s = &j->v[k];
		if (s->eff != PAL_NO_TIME || s->stored == PAL_NO_TIME)
			continue;
		int64_t at;
		if (c == &j->v[pi]) {
			at = switch_between(c, s, s->stored, w);
			if (at < c_eff)
				at = c_eff;
			if (at >= w && !is_stop(s, at > s->stored ? at : s->stored) &&
			    !pal_schedule_one_shot(s->sched) && !pal_schedule_one_shot(c->sched) &&
			    next_takeover(j, k, c, c_eff, w) <= at)
				continue;
		} else {
			at = switch_after(c, c_eff, s, s->stored, w);
		}
		s->t_eff = at;
		c = s;
		c_eff = at;
	}
	if (c == &j->v[pi])
		return switch_between(c, &j->v[j->nv - 1], j->pend_created, w);
	return switch_after(c, c_eff, &j->v[j->nv - 1], j->pend_created, w);
}

/* How far this tick plans J: the horizon, and at least the watermark for
 * a job whose new version took over below it (a watermark moves only
 * over what is planned). */
static int64_t job_horizon(const pjob *j, int64_t watermark, int64_t horizon)
{
	return j->t_fresh && watermark > horizon ? watermark : horizon;
}

/*
 * The part of a tick before the merge for one touched job J: a quarantined
 * job's misfires, an activation, the re-scan below the watermark and the
 * missed run.  *MERGE: J has an instant by the horizon left for the merge.
 * *HELD: J's activation waits for the next tick (see below); the caller
 * takes J back out of the batch, its activation with it.  A failure (ERR
 * filled when it has more to say than the code) concerns J alone but for
 * PAL_ENOMEM; the caller takes J's rows back out.
 */
static int plan_due(pal_planner *p, pal_plan_batch *b, pjob *j, int64_t watermark, int64_t now,
		    int64_t limit, int64_t horizon, int64_t *deferred, bool *merge, bool *held,
		    char *err, size_t errlen)
{
	int rc;
	*err = '\0';
	if (j->quarantined)
		return plan_quarantined(b, j, horizon);
	if (has_pending(j)) {
		/* A new job starts when a tick first saw it (now, unless its
		 * activation was deferred); a new version takes over at the
		 * watermark (it applies only to instants not planned yet), or
		 * at its apply for a one-shot or after one (above the watermark
		 * after a long absence: the old version keeps the instants up
		 * to it), or below it after a version that ended
		 * (switch_point): then the cursor goes back to it and the
		 * instants after it are planned now, as never planned (not a
		 * re-scan). */
		bool active = has_active(j);
		if (!active && j->pend_since == PAL_NO_TIME)
			j->pend_since = now;
		j->t_eff = active ? (watermark != PAL_NO_TIME ? switch_point(j, watermark) : now)
				  : j->pend_since;
		for (size_t k = 0; k + 1 < j->nv; k++)
			if (j->v[k].eff != PAL_NO_TIME && j->v[k].eff > j->t_eff)
				j->t_eff = j->v[k].eff;
		if (!active && (j->t_cursor == PAL_NO_TIME || j->t_cursor < j->t_eff))
			j->t_cursor = j->t_eff;
		/* A brand-new job activated below the watermark (the lookahead
		 * is ahead of now) has its instants from the activation on
		 * planned now, as never planned, like a version switching
		 * below it. */
		if (watermark != PAL_NO_TIME && j->t_eff < watermark) {
			j->t_fresh = true;
			if (active && j->t_cursor != PAL_NO_TIME && j->t_cursor > j->t_eff)
				j->t_cursor = j->t_eff;
		}
		for (size_t k = 0; k + 1 < j->nv; k++) {
			if (j->v[k].t_eff == PAL_NO_TIME)
				continue;
			/* a version activated here below what is planned has its
			 * instants planned now (the older version's rows there
			 * were cancelled, and those after an apply deleted by it) */
			if (active && j->t_cursor != PAL_NO_TIME && j->t_cursor > j->v[k].t_eff)
				j->t_cursor = j->v[k].t_eff;
			GROW(b->act, b->n_act, b->cap_act);
			b->act[b->n_act++] = (pal_plan_activation){ .job_id = j->id,
								    .version = j->v[k].version,
								    .effective_from = j->v[k].t_eff };
		}
		GROW(b->act, b->n_act, b->cap_act);
		b->act[b->n_act++] = (pal_plan_activation){ .job_id = j->id,
							    .version = j->v[j->nv - 1].version,
							    .effective_from = j->t_eff };
		j->t_next = next_after(j, j->t_cursor, true, &j->t_next_excl);
	}
	/* Instants never planned and already past the threshold: misfires. */
	if (watermark != PAL_NO_TIME && j->t_next != NEVER && j->t_next <= limit) {
		/* Re-planting below the watermark is a re-scan, not a misfire
		 * (but for the instants after a switch point below it). */
		while (j->t_next != NEVER && j->t_next <= watermark && j->t_next <= horizon &&
		       !(j->t_fresh && j->t_next > j->t_eff)) {
			/* Excluded instants here were recorded when first passed. */
			if (!j->t_next_excl && (rc = add_trigger(b, j, version_of(j, j->t_next),
								 j->t_next, PAL_SOURCE_SCHEDULE)))
				return rc;
			j->t_cursor = j->t_next;
			j->t_next = next_after(j, j->t_cursor, true, &j->t_next_excl);
		}
		if (j->t_next != NEVER && j->t_next <= limit) {
			/* Catch-up is done in slices: once the tick holds half its
			 * row cap (the other half is for current instants), the
			 * missed runs of the remaining jobs wait for the next tick
			 * (the watermark stays below them). */
			if (b->n_trig >= (size_t)p->cfg.max_rows_per_tick / 2) {
				if (j->t_next < *deferred)
					*deferred = j->t_next;
				/* A version taking over below the watermark (a
				 * brand-new job among them) is not activated
				 * without its missed run: committed alone, its
				 * instants from the activation on would have
				 * neither a trigger nor a misfire (a new leader
				 * resumes it at watermark - overlap), and the
				 * next tick would re-plant them as a re-scan,
				 * past the misfire policy.  It waits, pending, for
				 * a tick with room (a brand-new one as of the same
				 * pend_since). */
				*held = j->t_fresh;
				return PAL_OK;
			}
			if ((rc = plan_missed(p, b, j, now, limit))) {
				if (rc != PAL_ENOMEM)
					snprintf(err, errlen,
						 "job %s: planning its missed instants failed: %s", j->id,
						 pal_strerror(rc));
				return rc;
			}
		}
	}
	if (p->cfg.fault_job && !strcmp(j->id, p->cfg.fault_job)) {
		/* After its rows went into the batch, as a failure computing its
		 * next instant would: the caller must take them back out. */
		snprintf(err, errlen,
			 "job %s: computing its next instant failed (fault injection: "
			 "PALISADE_FAULT_PLAN_JOB)",
			 j->id);
		return PAL_EINVAL;
	}
	*merge = j->t_next <= job_horizon(j, watermark, horizon);
	return PAL_OK;
}

int pal_planner_tick(pal_planner *p, int64_t watermark, int64_t now, pal_plan_batch *b)
{
	b->n_trig = b->n_refs = b->n_mis = b->n_act = b->n_tick = b->n_failed = 0;
	b->complete = true;
	for (size_t i = 0; i < p->n_touched; i++)
		p->touched[i]->touched = false;
	p->n_touched = 0;

	int64_t horizon = now + p->cfg.lookahead_s;
	if (p->horizon_cap != PAL_NO_TIME && horizon > p->horizon_cap)
		horizon = p->horizon_cap;
	int64_t limit = now - p->cfg.misfire_threshold_s;
	int rc = collect(p, 0, horizon);
	/* Pending activations can sit anywhere in the heap (their key is the
	 * old version's next): a scan, only while there are any.  A new
	 * version of an active job is activated at once (it takes over at the
	 * watermark).  Brand-new jobs - a first start after a large apply has
	 * a whole shard of them - are activated at once when they have an
	 * instant by the horizon, the others at most max_activations_per_tick
	 * per tick: an activation rewrites its job_versions row (~1 KB), and a
	 * shard of 62 500 of them in one transaction took minutes of
	 * PostgreSQL time before the shard could plan anything.  A deferred
	 * job is activated as of the tick that first saw it (pend_since), so
	 * deferring changes when the row is written, not what is planned: it
	 * has no instant in (pend_since, horizon] until it is activated. */
	int quota = p->hold_deferred ? 0 : p->cfg.max_activations_per_tick;
	/* A brand-new job activated below the watermark has its instants up
	 * to the watermark planned in the activating tick, whole (the merge
	 * does not stop inside them: committed with its activation, a part
	 * of them would be all a new leader knows).  So that a large apply
	 * does not make one huge tick, new jobs are activated while their
	 * rows below the watermark (instants x partitions) fit in the row
	 * cap; the others wait for the next tick, activated as of pend_since
	 * all the same (their instants that come due meanwhile are planned
	 * late, or past the threshold through the misfire policy).  The
	 * first one of a tick is activated whatever its count: a job alone
	 * over the cap has a tick of its own. */
	int64_t fresh = 0, fresh_max = p->cfg.max_rows_per_tick;
	for (size_t i = 0; !rc && p->n_pending && i < p->n; i++) {
		pjob *j = p->heap[i];
		if (!has_pending(j))
			continue;
		if (!has_active(j)) {
			if (j->pend_since == PAL_NO_TIME) {
				bool ex;
				int64_t keep = j->t_eff;
				j->pend_since = now;
				j->t_eff = now;
				j->pend_next = next_after(j, now, true, &ex);
				j->t_eff = keep;
			}
			if (j->pend_next > horizon && !j->touched) {
				if (quota <= 0)
					continue;
				quota--;
			}
			if (!j->touched && watermark != PAL_NO_TIME && j->pend_since < watermark) {
				int64_t n = fresh_rows(j, watermark, fresh_max);
				if (fresh && fresh + n > fresh_max)
					continue;
				fresh += n ? n : 1;
			}
		}
		rc = touch(p, j);
	}
	if (rc)
		return rc;

	theap th = { .h = malloc((p->n_touched ? p->n_touched : 1) * sizeof(pjob *)), .n = 0 };
	int64_t deferred = NEVER; /* earliest missed instant left for the next tick */
	if (!th.h)
		return PAL_ENOMEM;
	for (size_t i = 0; i < p->n_touched; i++) {
		pjob *j = p->touched[i];
		/* Where the batch stood before J: a job's rows of this phase are
		 * contiguous, so a failure of J takes exactly its rows back. */
		size_t n_trig = b->n_trig, n_refs = b->n_refs, n_mis = b->n_mis, n_act = b->n_act,
		       n_tick = b->n_tick;
		int64_t was_deferred = deferred;
		bool merge = false, held = false;
		char e[sizeof b->failed->error];
		rc = plan_due(p, b, j, watermark, now, limit, horizon, &deferred, &merge, &held, e,
			      sizeof e);
		if (rc == PAL_ENOMEM)
			goto out;
		if (rc || held) {
			b->n_trig = n_trig;
			b->n_refs = n_refs;
			b->n_mis = n_mis;
			b->n_act = n_act;
			b->n_tick = n_tick;
			j->t_cursor = j->cursor;
			j->t_next = j->next;
			j->t_next_excl = j->next_excl;
			t_reset(j);
			j->t_ref_version = -1;
			if (held)
				continue; /* DEFERRED keeps the watermark below it */
			deferred = was_deferred;
			if (b->n_failed == b->cap_failed) {
				size_t nc = b->cap_failed ? b->cap_failed * 2 : 8;
				void *np = realloc(b->failed, nc * sizeof *b->failed);
				if (!np) {
					rc = PAL_ENOMEM;
					goto out;
				}
				b->failed = np;
				b->cap_failed = nc;
			}
			pal_plan_failed *f = &b->failed[b->n_failed++];
			f->job_id = j->id;
			f->since = watermark;
			if (!*e)
				snprintf(e, sizeof e, "planning failed: %s", pal_strerror(rc));
			memcpy(f->error, e, sizeof f->error);
			rc = PAL_OK;
			continue;
		}
		if (merge)
			t_push(&th, j);
	}

	/* Merge the remaining instants in time order, under the row cap; but
	 * for the instants up to the watermark of a version taking over below
	 * it (t_fresh), planned whole (see above). */
	while (th.n) {
		if (b->n_trig >= (size_t)p->cfg.max_rows_per_tick &&
		    (watermark == PAL_NO_TIME || !th.h[0]->t_fresh || th.h[0]->t_next > watermark)) {
			b->complete = false;
			break;
		}
		pjob *j = t_pop(&th);
		int64_t at = j->t_next;
		const pversion *v = version_of(j, at);
		if (j->t_next_excl) {
			/* Recorded once: not again when a re-scan passes it. */
			if ((watermark == PAL_NO_TIME || at > watermark ||
			     (j->t_fresh && at > j->t_eff)) &&
			    (rc = add_excluded(b, j, v->version, at, at, 1,
					       pal_schedule_excluding(v->sched, at))))
				goto out;
		} else if (!j->t_next_excl &&
			   (rc = add_trigger(b, j, v, at, PAL_SOURCE_SCHEDULE))) {
			goto out;
		}
		j->t_cursor = at;
		j->t_next = next_after(j, at, true, &j->t_next_excl);
		if (j->t_next <= job_horizon(j, watermark, horizon))
			t_push(&th, j);
	}
	b->watermark = horizon;
	if (!b->complete && th.n)
		b->watermark = th.h[0]->t_next - 1;
	if (deferred != NEVER) {
		b->complete = false;
		if (deferred - 1 < b->watermark)
			b->watermark = deferred - 1;
	}
	if (watermark != PAL_NO_TIME && b->watermark < watermark)
		b->watermark = watermark;
	rc = PAL_OK;
out:
	free(th.h);
	return rc;
}

void pal_planner_commit(pal_planner *p, const pal_plan_batch *b)
{
	(void)b;
	for (size_t i = 0; i < p->n_touched; i++) {
		pjob *j = p->touched[i];
		if (j->t_eff != PAL_NO_TIME && has_pending(j)) {
			for (size_t k = 0; k + 1 < j->nv; k++)
				if (j->v[k].eff == PAL_NO_TIME && j->v[k].t_eff != PAL_NO_TIME)
					j->v[k].eff = j->v[k].t_eff;
			j->v[j->nv - 1].eff = j->t_eff;
			p->n_pending--;
		}
		j->cursor = j->t_cursor;
		j->next = j->t_next;
		j->next_excl = j->t_next_excl;
		j->touched = false;
		heap_fix(p, j->hidx);
	}
	p->n_touched = 0;
}

int pal_planner_quarantine(pal_planner *p, const char *job_id)
{
	pjob *j = find(p, job_id);
	if (!j)
		return PAL_ENOENT;
	j->quarantined = true;
	if (j->touched) {
		/* Undo what the tick would have done for it (the rows it planned
		 * were not written). */
		j->t_cursor = j->cursor;
		j->t_next = j->next;
		j->t_next_excl = j->next_excl;
		t_reset(j);
	}
	return PAL_OK;
}

void pal_planner_set_quarantined(pal_planner *p, const char *const *ids, size_t n)
{
	for (size_t i = 0; i < p->n; i++)
		p->heap[i]->quarantined = false;
	for (size_t i = 0; i < n; i++) {
		pjob *j = find(p, ids[i]);
		if (j)
			j->quarantined = true;
	}
}

bool pal_planner_is_quarantined(const pal_planner *p, const char *job_id)
{
	const pjob *j = find(p, job_id);
	return j && j->quarantined;
}

/* ---- handoff (pal_planner_due_ids, pal_planner_cap_horizon) ---------------- */

/* Walk the heap part with keys <= T (as collect() does); false when more
 * than MAX jobs qualify. */
static bool due_walk(const pal_planner *p, size_t i, int64_t t, size_t max, GPtrArray *out)
{
	if (i >= p->n || p->heap[i]->next > t)
		return true;
	if (!has_pending(p->heap[i])) /* pending ones are added by the scan */
		g_ptr_array_add(out, (gpointer)p->heap[i]->id);
	if (out->len > max)
		return false;
	return due_walk(p, 2 * i + 1, t, max, out) && due_walk(p, 2 * i + 2, t, max, out);
}

int pal_planner_due_ids(const pal_planner *p, int64_t t, size_t max, GPtrArray *out)
{
	g_ptr_array_set_size(out, 0);
	if (!due_walk(p, 0, t, max, out))
		return PAL_ETOOBIG;
	for (size_t i = 0; p->n_pending && i < p->n; i++)
		if (has_pending(p->heap[i])) {
			g_ptr_array_add(out, (gpointer)p->heap[i]->id);
			if (out->len > max)
				return PAL_ETOOBIG;
		}
	return PAL_OK;
}

void pal_planner_cap_horizon(pal_planner *p, int64_t t)
{
	p->horizon_cap = t;
}

static void loaded_walk(const pal_planner *p, size_t i, int64_t t, GPtrArray *out)
{
	if (i >= p->n || p->heap[i]->next > t)
		return; /* the subtree's keys are >= this one */
	const pjob *j = p->heap[i];
	if (j->loaded_gen == p->load_gen && !j->quarantined)
		g_ptr_array_add(out, (gpointer)j->id);
	loaded_walk(p, 2 * i + 1, t, out);
	loaded_walk(p, 2 * i + 2, t, out);
}

bool pal_planner_loaded_due(const pal_planner *p, int64_t now, GPtrArray *out)
{
	g_ptr_array_set_size(out, 0);
	if (!p->loaded_unchecked)
		return false;
	int64_t horizon = now + p->cfg.lookahead_s;
	if (p->horizon_cap != PAL_NO_TIME && horizon > p->horizon_cap)
		horizon = p->horizon_cap;
	loaded_walk(p, 0, horizon, out);
	return true;
}

int pal_planner_resume_after(pal_planner *p, const char *job_id, int64_t decided)
{
	pjob *j = find(p, job_id);
	if (!j)
		return PAL_ENOENT;
	if (decided == PAL_NO_TIME || (j->cursor != PAL_NO_TIME && decided <= j->cursor))
		return PAL_OK;
	j->cursor = decided;
	j->next = next_after(j, j->cursor, false, &j->next_excl);
	heap_fix(p, j->hidx);
	return PAL_OK;
}

void pal_planner_loaded_checked(pal_planner *p)
{
	p->load_gen++;
	if (!p->load_gen) /* wrapped: 0 is what a job checked never had */
		p->load_gen = 1;
	p->loaded_unchecked = false;
}
