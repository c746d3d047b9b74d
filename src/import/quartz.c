/*
 * quartz.c - the triggers of a Quartz 2.x JDBC job store to palisade jobs
 * (docs/migrating.md).  Pure: the rows come from pal_quartz_read()
 * (quartz_read.c).
 *
 * A cron trigger keeps its expression (palisade reads Quartz's 6/7-field
 * form) and its zone, its start and end time, its priority; its misfire
 * instruction maps as Quartz resolves it for a cron trigger (the smart
 * policy is "fire once now"); a paused trigger or trigger group is
 * `suspend: true`.  A simple trigger becomes `every` from its start time
 * (or `at` when it does not repeat), its repeat count an `end` just after
 * its last instant, its misfire instruction mapped as Quartz resolves it
 * for a simple trigger (the smart policy depends on the repeat count).
 * Calendar-interval, daily-interval and blob triggers need schedule forms
 * palisade does not have and are named, as are calendars and
 * Java-serialized job data.  A job's id comes from its trigger's key and
 * whether another trigger's key reduces alike (trigger_id()), never from
 * the order of the rows, and no key takes an id another key had.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "palisade/sha256.h"
#include "import_int.h"

typedef struct qrow {
	pal_import_result *r;
	const char *sched;
	char where[512];
} qrow;

static void issue(qrow *q, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void issue(qrow *q, const char *what, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	pal__import_issue(q->r, "qrtz_triggers", q->where, what, "%s", msg);
	g_free(msg);
}

/* -1 IGNORE_MISFIRE_POLICY, the same for every trigger type. */
static const char *ignore_misfire_policy(qrow *q)
{
	issue(q, "approximated",
	      "misfire instruction -1 (ignore misfire policy: fire every missed time): "
	      "fire_all, but palisade catches up within 1h and at most 100 instants");
	return "fire_all";
}

/* Quartz's misfire instructions of a cron trigger (CronTrigger):
 * -1 IGNORE_MISFIRE_POLICY, 0 SMART_POLICY (= 1 for cron triggers),
 * 1 FIRE_ONCE_NOW, 2 DO_NOTHING. */
static const char *misfire(qrow *q, int instr)
{
	switch (instr) {
	case -1:
		return ignore_misfire_policy(q);
	case 0:
	case 1:
		issue(q, "approximated",
		      "misfire instruction %d (%s): fire_once, but palisade catches up within 1h "
		      "where "
		      "Quartz fires however late",
		      instr,
		      instr ? "fire once now" : "smart policy, for a cron trigger fire once now");
		return "fire_once";
	case 2:
		return "skip";
	default:
		issue(q, "not translated", "misfire instruction %d (unknown for a cron trigger)",
		      instr);
		return NULL;
	}
}

/* Quartz's misfire instructions of a simple trigger (SimpleTrigger), as
 * updateAfterMisfire() resolves them: 0 SMART_POLICY is 1 FIRE_NOW for a
 * trigger that does not repeat, 4 RESCHEDULE_NEXT_WITH_REMAINING_COUNT for
 * one that repeats forever, 2 RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT
 * otherwise.  palisade never moves a schedule: the "reschedule now"
 * instructions fire the latest missed instant once and keep the grid. */
static const char *simple_misfire(qrow *q, int instr, long long repeat)
{
	if (instr == 0)
		instr = repeat == 0 ? 1 : repeat < 0 ? 4 : 2;
	switch (instr) {
	case -1:
		return ignore_misfire_policy(q);
	case 1:
		issue(q, "approximated",
		      "misfire instruction 1 (fire now): fire_once, but palisade catches up "
		      "within 1h where Quartz fires however late");
		return "fire_once";
	case 2:
	case 3:
		issue(q, "approximated",
		      "misfire instruction %d (reschedule now with the %s repeat count): "
		      "fire_once, and the later instants keep their times where Quartz moves "
		      "them to start from the late firing",
		      instr, instr == 2 ? "existing" : "remaining");
		return "fire_once";
	case 4:
	case 5:
		if (instr == 5)
			issue(q, "approximated",
			      "misfire instruction 5 (reschedule next with the existing count): "
			      "skip, and the end stays after the last planned instant where "
			      "Quartz would add the missed ones at the end");
		return "skip";
	default:
		issue(q, "not translated", "misfire instruction %d (unknown for a simple trigger)",
		      instr);
		return NULL;
	}
}

/* A simple trigger's schedule into J: at, or every from START_TIME with an
 * end after the last repetition.  False (named) when it has no palisade form. */
static bool simple_schedule(qrow *q, const pal_quartz_trigger *t, pal__import_job *j)
{
	long long iv = t->repeat_interval_ms, rc = t->repeat_count;
	if (t->start_ms <= 0) {
		issue(q, "not translated", "a simple trigger without START_TIME");
		return false;
	}
	if (t->start_ms % 1000)
		issue(q, "approximated",
		      "START_TIME %lld ms: palisade's instants are whole seconds, the first is "
		      "the next second",
		      (long long)t->start_ms);
	if (rc == 0) {
		j->has_at = true;
		j->at = (t->start_ms + 999) / 1000;
		return true;
	}
	if (iv <= 0 || iv % 1000) {
		issue(q, "not translated",
		      "a simple trigger every %lld ms: palisade's intervals are whole seconds", iv);
		return false;
	}
	j->every_s = iv / 1000;
	j->has_start = true;
	j->start = (t->start_ms + 999) / 1000;
	if (rc > 0) {
		/* the last of its 1 + REPEAT_COUNT firings, and no later one */
		int64_t last = j->start + (int64_t)rc * j->every_s;
		if (!j->has_end || last + 1 < j->end) {
			j->has_end = true;
			j->end = last + 1;
		}
	}
	return true;
}

/* The reduction of the key GROUP/NAME: both reduced to id words (runs of
 * [a-z0-9] joined by single '-', at most 60 bytes each), "default" and
 * "trigger" for an empty one: the id palisade 0.3.0 gave a trigger (a key
 * already made of id words, and Quartz's DEFAULT group, reduce to
 * themselves).  g_free'd by the caller. */
static char *reduced_id(const char *group, const char *name)
{
	char *gs = pal__import_slug(group, 60), *ns = pal__import_slug(name, 60);
	char *id = g_strdup_printf("%s.%s", *gs ? gs : "default", *ns ? ns : "trigger");
	g_free(gs);
	g_free(ns);
	return id;
}

/*
 * The id of the trigger GROUP/NAME into ID, never from the order of the
 * rows: the key's reduction (reduced_id()) when no other trigger of the
 * scheduler reduces alike (REDUCED counts each reduction), so that every
 * such id is the one palisade 0.3.0 gave; else, for each of the keys that
 * share a reduction, both reduced to id words (at most 59 bytes each) and
 * '_' with 8 hex digits of the SHA-256 of GROUP, a NUL and NAME.  Two
 * triggers never share an id: a reduction stands for one key only, a hashed
 * id carries a '_', which no reduction holds, and a hash of the exact key.
 * No key ever takes the id another key had: a reduction that a second key
 * comes to share is left by both.  ROOM: the bytes the id may take (128, a
 * job id's, less a --prefix and its '.'): a reduction longer than that
 * takes the hashed form too, whose two parts are cut to fit.  True when
 * the id carries a hash.
 */
static bool trigger_id(GString *id, const char *group, const char *name, GHashTable *reduced,
		       size_t room)
{
	char hex[65], *gs, *ns, *r = reduced_id(group, name);
	GString *key;
	size_t part = room > 10 ? (room - 10) / 2 : 1; /* '.', '_' and 8 hex digits */

	if (GPOINTER_TO_UINT(g_hash_table_lookup(reduced, r)) == 1 && strlen(r) <= room) {
		g_string_assign(id, r);
		g_free(r);
		return false;
	}
	g_free(r);
	key = g_string_new(group);
	g_string_append_c(key, '\0');
	g_string_append(key, name);
	pal_sha256_hex(key->str, key->len, hex);
	gs = pal__import_slug(group, part < 59 ? part : 59);
	ns = pal__import_slug(name, part < 59 ? part : 59);
	g_string_printf(id, "%s.%s_%.8s", *gs ? gs : "default", *ns ? ns : "trigger", hex);
	g_free(gs);
	g_free(ns);
	g_string_free(key, TRUE);
	return true;
}

static void trigger(qrow *q, const pal_quartz_trigger *t, const pal_import_opts *o,
		    GHashTable *reduced)
{
	GString *id = g_string_new(NULL), *body = g_string_new(NULL), *desc = g_string_new(NULL);
	GString *src = g_string_new(NULL);
	char *why = NULL, mis[64];
	const char *zone = t->time_zone, *m, *used;
	pal__import_job j = {0};
	bool hashed;

	bool simple = !strcmp(t->type, "SIMPLE");
	if (strcmp(t->type, "CRON") && !simple) {
		issue(q, "not translated", "a %s trigger: palisade has no schedule of that form",
		      t->type);
		goto out;
	}
	if (!strcmp(t->state, "COMPLETE")) {
		issue(q, "skipped", "state COMPLETE: the trigger will not fire again");
		goto out;
	}
	if (!strcmp(t->state, "ERROR"))
		issue(q, "not translated",
		      "state ERROR (Quartz stopped firing it): imported as live");
	if (!simple && !t->cron) {
		issue(q, "not translated", "no row in qrtz_cron_triggers");
		goto out;
	}
	if (!zone) {
		zone = o->timezone ? o->timezone : "UTC";
		if (!o->timezone && !simple) /* a simple trigger's instants have no zone */
			issue(q, "approximated",
			      "no TIME_ZONE_ID: Quartz uses the JVM's zone; taken as UTC");
	}
	/* Quartz fires at or after START_TIME (ms) and at or before END_TIME */
	j.has_end = t->end_ms > 0;
	j.end = t->end_ms / 1000 + 1;
	if (simple) {
		if (!simple_schedule(q, t, &j))
			goto out;
	} else if ((why = pal__import_check_schedule(t->cron, zone, o->now))) {
		issue(q, "not translated", "%s", why);
		goto out;
	}
	if (t->calendar)
		issue(q, "not translated",
		      "calendar %s: stored Java-serialized in qrtz_calendars, not read; hint: "
		      "write it as a shared calendar (calendars:) and name it with calendar: "
		      "in the job's schedule",
		      t->calendar);
	if (t->job_data || t->trigger_data)
		issue(q, "not translated", "%s JobDataMap: Java-serialized, not read",
		      t->job_data ? "the job's" : "the trigger's");
	if (t->nonconcurrent)
		issue(q, "approximated",
		      "job %s.%s is @DisallowConcurrentExecution: overlap queue (Quartz holds the "
		      "trigger until the running execution ends)",
		      t->job_group, t->job_name);
	if (t->priority < -100 || t->priority > 100)
		issue(q, "approximated", "priority %d: palisade's priorities are -100 to 100",
		      t->priority);

	m = simple ? simple_misfire(q, t->misfire_instr, t->repeat_count)
		   : misfire(q, t->misfire_instr);
	if (m && strcmp(m, "fire_once"))
		j.misfire = strcpy(mis, m);
	hashed = trigger_id(id, t->trigger_group, t->trigger_name, reduced,
			    128 - (o->prefix ? strlen(o->prefix) + 1 : 0));
	/* --prefix (the scheduler) before it tells two schedulers' triggers of
	 * one key apart, and gives `apply --prune-prefix` this import's jobs */
	if (o->prefix) {
		g_string_prepend_c(id, '.');
		g_string_prepend(id, o->prefix);
		if (id->len > 128) {
			issue(q, "not translated",
			      "id %s: %zu bytes with --prefix %s, over the 128 of a job id; hint: "
			      "a shorter --prefix",
			      id->str, id->len, o->prefix);
			goto out;
		}
	}
	g_string_append_printf(desc, "Quartz trigger %s.%s of job %s.%s (%s)", t->trigger_group,
			       t->trigger_name, t->job_group, t->job_name, t->job_class);
	if (t->job_description)
		g_string_append_printf(desc, ": %s", t->job_description);
	if (desc->len > 4000)
		g_string_truncate(desc, 4000);
	{
		const char *const kv[][2] = {
		    {"scheduler", q->sched},
		    {"job_group", t->job_group},
		    {"job_name", t->job_name},
		    {"job_class", t->job_class},
		    {"trigger_group", t->trigger_group},
		    {"trigger_name", t->trigger_name},
		};
		g_string_append(body, "{\"quartz\": {");
		for (size_t k = 0; k < G_N_ELEMENTS(kv); k++) {
			g_string_append_printf(body, "%s\"%s\": ", k ? ", " : "", kv[k][0]);
			pal__import_json_str(body, kv[k][1] ? kv[k][1] : "");
		}
	}
	g_string_append(body, "}, \"scheduled_at\": \"{scheduled_at}\"}");
	g_string_append_printf(src, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%lld\n%lld\n%d\n%d", q->sched,
			       t->trigger_group, t->trigger_name, t->job_group, t->job_name,
			       simple ? "" : t->cron, zone, (long long)t->start_ms,
			       (long long)t->end_ms, t->misfire_instr, t->priority);
	if (simple)
		g_string_append_printf(src, "\n%lld\n%lld", (long long)t->repeat_interval_ms,
				       (long long)t->repeat_count);

	j.id = id->str;
	j.cron = simple ? NULL : t->cron;
	j.timezone = zone;
	j.overlap = t->nonconcurrent ? "queue" : NULL;
	if (!simple) {
		j.has_start = t->start_ms > 0;
		j.start = (t->start_ms + 999) / 1000;
	}
	j.has_priority = true;
	j.priority = t->priority < -100 ? -100 : t->priority > 100 ? 100 : t->priority;
	j.suspend = !strncmp(t->state, "PAUSED", 6) || t->group_paused;
	j.description = desc->str;
	j.body = body->str;
	j.source = src->str;
	j.source_len = src->len;
	used = pal__import_emit(q->r, &j, o);
	if (strcmp(used, id->str)) /* two keys of one reduction and one hash */
		issue(q, "approximated",
		      "id %s: %s is another trigger's too (the first 32 bits of the hashes of "
		      "the two keys are equal), so this id depends on the order of the rows",
		      used, id->str);
	else if (hashed)
		pal__import_note(q->r, "qrtz_triggers", q->where, "id",
				 "%s: another trigger of the scheduler reduces to the same id, so "
				 "the id of each carries a hash of its exact key (an earlier "
				 "import may have given the reduction to one of them)",
				 used);
out:
	g_free(why);
	g_string_free(id, TRUE);
	g_string_free(body, TRUE);
	g_string_free(desc, TRUE);
	g_string_free(src, TRUE);
}

int pal_import_quartz(pal_import_result *r, const char *sched, const pal_quartz_trigger *t,
		      size_t n, const pal_import_opts *o)
{
	/* how many triggers of the scheduler each reduction stands for */
	GHashTable *reduced = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (size_t i = 0; i < n; i++) {
		char *k = reduced_id(t[i].trigger_group, t[i].trigger_name);
		guint c = GPOINTER_TO_UINT(g_hash_table_lookup(reduced, k));
		g_hash_table_replace(reduced, k, GUINT_TO_POINTER(c + 1));
	}
	for (size_t i = 0; i < n; i++) {
		qrow q = {.r = r, .sched = sched};
		snprintf(q.where, sizeof q.where, "%s/%s/%s", sched, t[i].trigger_group,
			 t[i].trigger_name);
		trigger(&q, &t[i], o, reduced);
	}
	g_hash_table_destroy(reduced);
	return 0;
}
