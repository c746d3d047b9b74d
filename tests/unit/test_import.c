/*
 * test_import.c - the importers (src/import/): what a crontab line or a
 * CronJob becomes, read back through the job loader and the template
 * renderer as apply and the executor read it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <glib.h>
#include <jansson.h>
#include "palisade/importer.h"
#include "palisade/jobfile.h"
#include "palisade/template.h"

static const pal_import_opts opts = {.target_url = "http://runner:8080/run/{job}?d={digest}",
				     .timezone = "Europe/Berlin",
				     .now = 1780000000 /* 2026-05-28 */};

/* Import TEXT with IMPORTER and load the result as apply would; the set is
 * the caller's (pal_jobset_free), the result too. */
static pal_import_result *import(bool crontab, const char *text, const pal_import_opts *o,
				 pal_jobset *set)
{
	pal_import_result *r = pal_import_result_new();
	pal_diags d = {0};
	const char *y;
	int rc = crontab ? pal_import_crontab(r, "tab", text, strlen(text), o)
			 : pal_import_kubernetes(r, "k.yaml", text, strlen(text), o);

	assert_int_equal(rc, 0);
	y = pal_import_yaml(r);
	rc = pal_jobfile_load_buffer("out.yaml", y, strlen(y), set, &d);
	if (rc || d.n)
		pal_diags_print(&d, stderr);
	assert_int_equal(rc, 0);
	pal_diags_free(&d);
	return r;
}

/* The body of JOB rendered as the executor renders it, parsed as JSON. */
static json_t *body(const pal_job_spec *job)
{
	pal_tpl_vars v = {.job = job->id,
			  .scheduled_at = 1780000000,
			  .scheduled_date = "2026-05-28",
			  .request_id = ""};
	char *out = NULL, err[256];
	json_t *j;

	assert_int_equal(pal_tpl_render(job->body, &v, 0, &out, err, sizeof err), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	return j;
}

static void test_import_crontab_command_survives_templates(void **st)
{
	pal_jobset set = {0};
	pal_import_result *r = import(
	    true, "SHELL=/bin/bash\n0 22 * * 1-5 echo ${HOME} {job} $x \\% 9%line one%two\\%\n",
	    &opts, &set);
	json_t *b;

	assert_int_equal(set.n, 1);
	b = body(&set.jobs[0]);
	assert_string_equal(json_string_value(json_object_get(b, "command")),
			    "echo ${HOME} {job} $x % 9");
	assert_string_equal(json_string_value(json_object_get(b, "stdin")), "line one\ntwo%");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "env"), "SHELL")),
			    "/bin/bash");
	assert_string_equal(json_string_value(json_object_get(b, "scheduled_at")),
			    "2026-05-28T20:26:40Z");
	assert_string_equal(set.jobs[0].cron, "0 22 * * 1-5");
	assert_string_equal(set.jobs[0].timezone, "Europe/Berlin");
	assert_int_equal(pal_import_issues(r), 0);
	json_decref(b);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

static void test_import_crontab_ids_stable_and_unique(void **st)
{
	pal_jobset a = {0}, b = {0};
	pal_import_result *ra = import(true, "0 1 * * * backup\n0 2 * * 6 other\n", &opts, &a);
	pal_import_result *rb = import(true, "# moved\n\n5 3 * * * backup\n", &opts, &b);

	assert_int_equal(a.n, 2);
	assert_string_equal(a.jobs[0].id, b.jobs[0].id); /* schedule and line changed */
	assert_int_equal(strncmp(a.jobs[0].id, "tab.backup-", 11), 0);
	assert_null(strchr(a.jobs[0].id, '_'));
	assert_string_not_equal(a.jobs[0].id, a.jobs[1].id);
	/* {job} in the URL is the id, {digest} the entry's (its line differs) */
	assert_int_equal(strncmp(a.jobs[0].url, "http://runner:8080/run/tab.backup-", 34), 0);
	assert_string_not_equal(a.jobs[0].url + strlen(a.jobs[0].url) - 16,
				b.jobs[0].url + strlen(b.jobs[0].url) - 16);
	pal_jobset_free(&a);
	pal_jobset_free(&b);
	pal_import_result_free(ra);
	pal_import_result_free(rb);
}

/* One command at several schedules: each entry's id carries its own
 * schedule's hash, so the ids do not depend on the order of the lines, and
 * removing one entry leaves the others' ids alone (but for the last twin,
 * which takes the command's id); equal entries get -2. */
static void test_import_crontab_twins_by_schedule(void **st)
{
	pal_jobset a = {0}, b = {0}, c = {0}, d = {0};
	pal_import_result *ra =
	    import(true, "0 1 * * * backup\n0 13 * * * backup\n0 7 * * 1 backup\n", &opts, &a);
	pal_import_result *rb =
	    import(true, "0 7 * * 1 backup\n0 13 * * * backup\n0 1 * * * backup\n", &opts, &b);
	pal_import_result *rc = import(true, "0 13 * * * backup\n0 7 * * 1 backup\n", &opts, &c);
	pal_import_result *rd = import(true, "0 13 * * * backup\n0 13 * * * backup\n", &opts, &d);

	assert_int_equal(a.n, 3);
	assert_int_equal(b.n, 3);
	for (size_t i = 0; i < 3; i++) {
		const pal_job_spec *x = &a.jobs[i], *y = &b.jobs[2 - i];
		assert_string_equal(x->cron, y->cron);
		assert_string_equal(x->id, y->id); /* the same entry, the same id */
		assert_non_null(strchr(x->id, '_'));
		assert_int_equal(strncmp(x->id, a.jobs[0].id, strlen(x->id) - 9), 0);
	}
	assert_string_not_equal(a.jobs[0].id, a.jobs[1].id);
	assert_string_not_equal(a.jobs[1].id, a.jobs[2].id);
	/* the 01:00 entry removed: the others keep their ids */
	assert_int_equal(c.n, 2);
	assert_string_equal(c.jobs[0].id, a.jobs[1].id);
	assert_string_equal(c.jobs[1].id, a.jobs[2].id);
	/* two equal entries: cron runs both, so two jobs */
	assert_int_equal(d.n, 2);
	assert_string_equal(d.jobs[0].id, a.jobs[1].id);
	assert_int_equal(strcmp(d.jobs[1].id + strlen(d.jobs[0].id), "-2"), 0);
	pal_jobset_free(&a);
	pal_jobset_free(&b);
	pal_jobset_free(&c);
	pal_jobset_free(&d);
	pal_import_result_free(ra);
	pal_import_result_free(rb);
	pal_import_result_free(rc);
	pal_import_result_free(rd);
}

/* Where the file is decides, by its resolved directory: a file of
 * /etc/cron.d named by a relative path has the user column; one whose name
 * cron ignores (a dot: a dpkg leftover) is skipped and named.  --group and
 * --mode shadow land in every job. */
static void test_import_crontab_where_and_scope(void **st)
{
	pal_jobset a = {0}, b = {0};
	pal_import_opts o = opts;
	pal_import_result *r;
	json_t *j;

	o.resolved = "/etc/cron.d/rotate";
	o.group = "host-a";
	o.shadow = true;
	r = pal_import_result_new();
	assert_int_equal(pal_import_crontab(r, "rotate", "15 4 * * * root rotate-it\n", strlen("15 4 * * * root rotate-it\n"), &o), 0);
	pal_diags dg = {0};
	const char *y = pal_import_yaml(r);
	assert_int_equal(pal_jobfile_load_buffer("out.yaml", y, strlen(y), &a, &dg), 0);
	pal_diags_free(&dg);
	assert_int_equal(a.n, 1);
	j = body(&a.jobs[0]);
	assert_string_equal(json_string_value(json_object_get(j, "user")), "root");
	assert_string_equal(json_string_value(json_object_get(j, "command")), "rotate-it");
	assert_string_equal(a.jobs[0].group, "host-a");
	assert_true(a.jobs[0].shadow);
	json_decref(j);
	pal_import_result_free(r);

	o.resolved = "/etc/cron.d/rotate.dpkg-old";
	r = import(true, "15 4 * * * root rotate-it\n", &o, &b);
	assert_int_equal(b.n, 0);
	assert_non_null(strstr(pal_import_report(r), "tab:1: not translated: skipped: cron reads"));
	assert_int_equal(pal_import_issues(r), 1);
	pal_import_result_free(r);
	pal_jobset_free(&a);
	pal_jobset_free(&b);
}

static void test_import_crontab_names_what_it_leaves_out(void **st)
{
	pal_jobset set = {0};
	pal_import_opts o = opts;
	pal_import_result *r;

	o.timezone = NULL;
	r = import(true,
		   "MAILTO=me@example.com\n@reboot start\n5/10 * * * * x\n@daily y\n"
		   "root-less line\n",
		   &o, &set);
	assert_int_equal(set.n, 1);
	assert_non_null(strstr(pal_import_report(r), "tab:1: not translated: MAILTO"));
	assert_non_null(strstr(pal_import_report(r), "tab:2: not translated: @reboot"));
	assert_non_null(strstr(pal_import_report(r), "tab:3: not translated: field 1 \"5/10\""));
	assert_non_null(strstr(pal_import_report(r), "tab:4: approximated: no CRON_TZ"));
	assert_non_null(strstr(pal_import_report(r), "tab:5: not translated: neither"));
	assert_int_equal(pal_import_issues(r), 5);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

/* Entries cron itself refuses never ran: named, not imported. */
static void test_import_crontab_names_what_cron_refuses(void **st)
{
	pal_jobset set = {0};
	pal_import_result *r;

	r = import(true,
		   "0 1 * * * ok\n@DAILY upper\n0 0 ? * * question\n@daily fine\n"
		   "0 10 * * * no-newline",
		   &opts, &set);
	assert_int_equal(set.n, 2);
	assert_non_null(strstr(pal_import_report(r), "tab:2: not translated: macro \"@DAILY\""));
	assert_non_null(strstr(pal_import_report(r), "tab:3: not translated: field 3 \"?\""));
	assert_non_null(strstr(pal_import_report(r),
			       "tab:5: not translated: the file's last line has no newline"));
	assert_int_equal(pal_import_issues(r), 3);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

static void test_import_crontab_system_user_and_gap(void **st)
{
	pal_jobset set = {0};
	pal_import_opts o = opts;
	pal_import_result *r;
	json_t *b;

	o.system = true;
	r = import(true, "30 2 * * * root once\n0,30 2 * * * www twice\n", &o, &set);
	assert_int_equal(set.n, 2);
	b = body(&set.jobs[1]);
	assert_string_equal(json_string_value(json_object_get(b, "user")), "www");
	assert_string_equal(json_string_value(json_object_get(b, "command")), "twice");
	/* only the entry with two times in the skipped hour differs from cron */
	assert_null(strstr(pal_import_report(r), "tab:1:"));
	assert_non_null(strstr(pal_import_report(r), "tab:2: approximated: on 2027-03-28"));
	json_decref(b);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

/* A system crontab's user is the job's label "user" (and stays in the body
 * and the description); a user that is no label value is named in the
 * report and gets no label. */
static void test_import_crontab_user_label(void **st)
{
	pal_jobset set = {0};
	pal_import_opts o = opts;
	pal_import_result *r;

	(void)st;
	o.system = true;
	r = import(true, "30 3 * * * www-data once\n15 3 * * * _apt twice\n", &o, &set);
	assert_int_equal(set.n, 2);
	assert_int_equal(set.jobs[0].n_labels, 1);
	assert_string_equal(set.jobs[0].labels[0].key, "user");
	assert_string_equal(set.jobs[0].labels[0].value, "www-data");
	assert_non_null(strstr(set.jobs[0].description, "user www-data"));
	assert_int_equal(set.jobs[1].n_labels, 0);
	assert_non_null(strstr(set.jobs[1].description, "user _apt"));
	assert_non_null(strstr(pal_import_report(r),
			       "tab:2: approximated: user \"_apt\" is not a label value"));
	assert_int_equal(pal_import_issues(r), 1);
	pal_jobset_free(&set);
	pal_import_result_free(r);

	/* a user crontab has no user column: no label */
	o.system = false;
	r = import(true, "30 3 * * * once\n", &o, &set);
	assert_int_equal(set.jobs[0].n_labels, 0);
	assert_int_equal(pal_import_issues(r), 0);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

/* A CronJob's metadata.labels are the job's labels, not reported; one that
 * is no valid label stays in the description and is reported, as the
 * annotations are. */
static void test_import_kubernetes_labels(void **st)
{
	pal_jobset set = {0};
	pal_import_result *r;

	(void)st;
	r = import(false,
		   "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: a\n  namespace: ns\n"
		   "  labels: {app.kubernetes.io/name: web, tier: batch, \"bad key\": x}\n"
		   "  annotations: {note: \"free text\"}\n"
		   "spec:\n  schedule: \"0 9 * * *\"\n  timeZone: UTC\n  startingDeadlineSeconds: 3600\n",
		   &opts, &set);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.jobs[0].n_labels, 2);
	assert_string_equal(set.jobs[0].labels[0].key, "app.kubernetes.io/name");
	assert_string_equal(set.jobs[0].labels[0].value, "web");
	assert_string_equal(set.jobs[0].labels[1].key, "tier");
	assert_non_null(strstr(set.jobs[0].description, "labels: bad key=x"));
	assert_null(strstr(set.jobs[0].description, "tier"));
	assert_non_null(strstr(set.jobs[0].description, "annotations: note=free text"));
	assert_non_null(strstr(pal_import_report(r), "metadata.labels (bad key=x): not valid"));
	assert_non_null(strstr(pal_import_report(r), "metadata.annotations (note=free text)"));
	assert_int_equal(pal_import_issues(r), 2);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

static const char cronjobs[] =
    "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"
    "---\n"
    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: a, namespace: ns}\n"
    "spec:\n  schedule: \"TZ=America/New_York 0 9 */2 * MON\"\n  concurrencyPolicy: Forbid\n"
    "  startingDeadlineSeconds: 120\n  suspend: true\n"
    "  jobTemplate: {spec: {backoffLimit: 3, template: {spec: {containers: [{name: c, "
    "args: [\"${X}\"]}]}}}}\n";

static void test_import_kubernetes_fields(void **st)
{
	pal_jobset set = {0};
	pal_import_result *r = import(false, cronjobs, &opts, &set);
	const pal_job_spec *j = &set.jobs[0];
	json_t *b;

	assert_int_equal(set.n, 1);
	assert_string_equal(j->id, "ns.a");
	assert_string_equal(j->tenant, "ns");
	assert_string_equal(j->cron, "0 9 1-31/2 * MON"); /* robfig: "*\/2" is restricted */
	assert_string_equal(j->timezone, "America/New_York");
	/* Forbid: the controller starts a time it skipped once the Job ends */
	assert_int_equal(j->overlap, PAL_OVERLAP_QUEUE);
	assert_int_equal(j->catchup_window_ms, 120000);
	assert_true(j->suspend);
	b = body(j);
	assert_int_equal(
	    json_integer_value(json_object_get(
		json_object_get(json_object_get(b, "jobTemplate"), "spec"), "backoffLimit")),
	    3);
	char *dump = json_dumps(b, 0);
	assert_non_null(strstr(dump, "\"${X}\""));
	free(dump);
	assert_non_null(strstr(pal_import_report(r), "k.yaml:1: document 1: skipped: Service s"));
	assert_non_null(
	    strstr(pal_import_report(r),
		   "k.yaml:10: document 2: approximated: spec.concurrencyPolicy Forbid"));
	assert_int_equal(pal_import_issues(r), 2);
	json_decref(b);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

/* The days, suspend and jobTemplate scalars as the controller reads them:
 * robfig/cron v3's day fields (a "*" item anywhere, "N/step" up to 6 in the
 * day of week) and kubectl's YAML 1.1 (go-yaml v2) scalars. */
static void test_import_kubernetes_controller_reading(void **st)
{
	static const struct {
		const char *schedule, *cron;
	} cases[] = {{"0 9 * * 1/2", "0 9 * * 1-6/2"},
		     {"0 9 * * mon/3", "0 9 * * 1-6/3"},
		     {"0 9 1 * 1,*", "0 9 1 * *"},
		     {"0 9 */01 * 5", "0 9 * * 5"},
		     {"0 9 */2 * ?/3", "0 9 1-31/2 * 0-6/3"},
		     {"0 9 5/10 * 1-5/2", "0 9 5/10 * 1-5/2"}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[512];
		snprintf(
		    text, sizeof text,
		    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: e, namespace: ns}\n"
		    "spec:\n  schedule: \"%s\"\n  timeZone: UTC\n"
		    "  startingDeadlineSeconds: 1_800\n  suspend: %s\n"
		    "  jobTemplate: {a: [0755, 0x1F, 08, .5, no, On, ~, \"1\", 12:30, 1e999]}\n",
		    cases[i].schedule, i % 2 ? "True" : "no");
		pal_jobset set = {0};
		pal_import_result *r = import(false, text, &opts, &set);
		assert_int_equal(set.n, 1);
		assert_string_equal(set.jobs[0].cron, cases[i].cron);
		assert_int_equal(set.jobs[0].suspend, i % 2 == 1);
		assert_int_equal(set.jobs[0].catchup_window_ms, 1800000);
		json_t *b = body(&set.jobs[0]);
		char *dump = json_dumps(json_object_get(b, "jobTemplate"), JSON_COMPACT);
		assert_string_equal(
		    dump, "{\"a\":[493,31,8,0.5,false,true,null,\"1\",\"12:30\",\"1e999\"]}");
		assert_int_equal(pal_import_issues(r), 0);
		free(dump);
		json_decref(b);
		pal_jobset_free(&set);
		pal_import_result_free(r);
	}
}

/* "@every D" (robfig/cron's fixed interval, which the API server accepts)
 * becomes `every`, D read as Go reads a duration and cut to whole seconds
 * (below 1s: 1s); with metadata.creationTimestamp, `start` is the
 * controller's first run, one interval after the creation. */
static void test_import_kubernetes_every(void **st)
{
	static const struct {
		const char *every;
		int64_t s;
	} cases[] = {{"10m", 600},   {"1h30m", 5400}, {"1.5h", 5400}, {"90s", 90},
		     {"2500ms", 2},  {"500ms", 1},    {"1m0.9s", 60}, {"36h", 129600},
		     {"1h1m1s", 3661}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[512];
		snprintf(text, sizeof text,
			 "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: e\n"
			 "  namespace: ns\n  creationTimestamp: \"2026-05-01T10:00:07Z\"\n"
			 "spec:\n  schedule: \"@every %s\"\n  timeZone: UTC\n"
			 "  startingDeadlineSeconds: 60\n  jobTemplate: {}\n",
			 cases[i].every);
		pal_jobset set = {0};
		pal_import_result *r = import(false, text, &opts, &set);
		assert_int_equal(set.n, 1);
		assert_null(set.jobs[0].cron);
		assert_int_equal(set.jobs[0].every_s, cases[i].s);
		assert_true(set.jobs[0].has_start);
		assert_int_equal(set.jobs[0].start, 1777629607 + cases[i].s);
		/* only the deadline's effect on the count is named */
		assert_int_equal(pal_import_issues(r), 1);
		assert_non_null(strstr(pal_import_report(r), "startingDeadlineSeconds"));
		pal_jobset_free(&set);
		pal_import_result_free(r);
	}
	/* no creation time: counted from the activation, named; no Go duration:
	 * not translated */
	static const char *const more[] = {
	    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: a, namespace: ns}\n"
	    "spec: {schedule: \"@every 5m\", startingDeadlineSeconds: 60, jobTemplate: {}}\n",
	    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: b, namespace: ns}\n"
	    "spec: {schedule: \"@every 5\", startingDeadlineSeconds: 60, jobTemplate: {}}\n",
	    "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c, namespace: ns}\n"
	    "spec: {schedule: \"@every 9000h\", startingDeadlineSeconds: 60, jobTemplate: {}}\n"};
	for (int k = 0; k < 3; k++) {
		pal_jobset set = {0};
		pal_import_result *r = import(false, more[k], &opts, &set);
		assert_int_equal(set.n, k ? 0 : 1);
		assert_non_null(strstr(pal_import_report(r), k == 0   ? "creationTimestamp"
							     : k == 1 ? "not a Go duration"
								      : "366d"));
		if (!k) {
			assert_int_equal(set.jobs[0].every_s, 300);
			assert_false(set.jobs[0].has_start);
		}
		pal_jobset_free(&set);
		pal_import_result_free(r);
	}
}

/* The items of a kind: List (what `kubectl get cronjobs -o yaml` prints)
 * each have the digest of their own text: an edit of one changes no
 * other's. */
static void test_import_kubernetes_list_digest_per_item(void **st)
{
	static const char *const fmt =
	    "apiVersion: v1\nkind: List\nitems:\n"
	    "- apiVersion: batch/v1\n  kind: CronJob\n  metadata: {name: a, namespace: ns}\n"
	    "  spec:\n    schedule: \"0 1 * * *\"\n    timeZone: Etc/UTC\n"
	    "    jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}\n"
	    "- apiVersion: batch/v1\n  kind: CronJob\n  metadata: {name: b, namespace: ns}\n"
	    "  spec:\n    schedule: \"%s\"\n    timeZone: Etc/UTC\n"
	    "    jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}\n";
	char one[1024], two[1024];
	pal_jobset a = {0}, b = {0};

	snprintf(one, sizeof one, fmt, "0 2 * * *");
	snprintf(two, sizeof two, fmt, "0 3 * * *");
	pal_import_result *ra = import(false, one, &opts, &a), *rb = import(false, two, &opts, &b);
	assert_int_equal(a.n, 2);
	assert_int_equal(b.n, 2);
	assert_string_not_equal(strstr(a.jobs[0].url, "d="), strstr(a.jobs[1].url, "d="));
	assert_string_equal(a.jobs[0].url, b.jobs[0].url);     /* a's own text did not change */
	assert_string_not_equal(a.jobs[1].url, b.jobs[1].url); /* b's did */
	pal_jobset_free(&a);
	pal_jobset_free(&b);
	pal_import_result_free(ra);
	pal_import_result_free(rb);
}

/* A manifest of the same CronJob read twice (two clusters' files, or one
 * file given twice) makes one job: a suffix for the second would depend on
 * the order of the files. */
static void test_import_kubernetes_same_cronjob_twice_refused(void **st)
{
	pal_import_result *r = pal_import_result_new();
	pal_jobset set = {0};
	pal_diags d = {0};
	const char *y;

	assert_int_equal(pal_import_kubernetes(r, "a.yaml", cronjobs, strlen(cronjobs), &opts), 0);
	assert_int_equal(pal_import_kubernetes(r, "b.yaml", cronjobs, strlen(cronjobs), &opts), 0);
	y = pal_import_yaml(r);
	assert_int_equal(pal_jobfile_load_buffer("out.yaml", y, strlen(y), &set, &d), 0);
	assert_int_equal(set.n, 1);
	assert_string_equal(set.jobs[0].id, "ns.a");
	assert_non_null(
	    strstr(pal_import_report(r), "document 2: not translated: CronJob ns/a again"));
	assert_int_equal(pal_import_issues(r), 4); /* and the Service twice, Forbid once */
	pal_diags_free(&d);
	pal_jobset_free(&set);
	pal_import_result_free(r);
}

/* Import the Quartz triggers GROUP/NAME (N of them, KEYS[2i], KEYS[2i+1])
 * of scheduler "s" as cron triggers; IDS[i] gets the id of row i (g_free).
 * The result is the caller's. */
static pal_import_result *quartz_ids(const char *const *keys, size_t n, char **ids)
{
	pal_quartz_trigger t[8];
	pal_import_result *r = pal_import_result_new();
	pal_jobset set = {0};
	pal_diags d = {0};
	const char *y;

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		t[i] = (pal_quartz_trigger){.trigger_group = keys[2 * i],
					    .trigger_name = keys[2 * i + 1],
					    .job_group = "g",
					    .job_name = "j",
					    .job_class = "com.example.J",
					    .type = "CRON",
					    .state = "WAITING",
					    .cron = "0 0 * * * ?",
					    .time_zone = "UTC",
					    .misfire_instr = 2,
					    .priority = 5};
	assert_int_equal(pal_import_quartz(r, "s", t, n, &opts), 0);
	y = pal_import_yaml(r);
	assert_int_equal(pal_jobfile_load_buffer("out.yaml", y, strlen(y), &set, &d), 0);
	assert_int_equal(set.n, n); /* every id valid, none twice */
	for (size_t i = 0; i < n; i++)
		ids[i] = g_strdup(set.jobs[i].id);
	pal_diags_free(&d);
	pal_jobset_free(&set);
	return r;
}

/* A Quartz trigger's id never depends on the order of the rows: keys
 * that reduce alike each carry a hash of their own key, so a third added
 * whose name reduces alike, sorting before the others, or the rows in
 * another order, change neither id; two keys never share one; the report
 * names each id that carries a hash, with its key. */
static void test_import_quartz_ids_from_the_key_alone(void **st)
{
	static const char *const two[] = {"DEFAULT", "Daily Report", "DEFAULT", "daily-report"};
	static const char *const three[] = {"DEFAULT",	    "DAILY_REPORT", "DEFAULT",
					    "Daily Report", "DEFAULT",	    "daily-report"};
	static const char *const back[] = {"DEFAULT",	   "daily-report", "DEFAULT",
					   "Daily Report", "DEFAULT",	   "DAILY_REPORT"};
	char *a[2], *b[3], *c[3], note[256];
	pal_import_result *ra = quartz_ids(two, 2, a), *rb = quartz_ids(three, 3, b),
			  *rc = quartz_ids(back, 3, c);

	/* two keys of one reduction: each id carries a hash of its own key */
	assert_int_equal(strncmp(a[0], "default.daily-report_", 21), 0);
	assert_int_equal(strlen(a[0]), 29);
	assert_int_equal(strncmp(a[1], "default.daily-report_", 21), 0);
	assert_string_not_equal(a[0], a[1]);
	assert_string_equal(b[1], a[0]);
	assert_string_equal(b[2], a[1]);
	assert_string_not_equal(b[0], b[1]);
	assert_string_not_equal(b[0], b[2]);
	assert_string_equal(c[0], b[2]);
	assert_string_equal(c[1], b[1]);
	assert_string_equal(c[2], b[0]);
	snprintf(note, sizeof note, "qrtz_triggers:s/DEFAULT/Daily Report: id: %s: ", b[1]);
	assert_non_null(strstr(pal_import_report(rb), note));
	assert_non_null(strstr(pal_import_report(rb), "s/DEFAULT/daily-report: id: "));
	assert_int_equal(pal_import_issues(rb), 0); /* a note, not an element left out */
	for (int i = 0; i < 3; i++) {
		g_free(b[i]);
		g_free(c[i]);
		if (i < 2)
			g_free(a[i]);
	}
	pal_import_result_free(ra);
	pal_import_result_free(rb);
	pal_import_result_free(rc);
}

/* The keys whose reductions meet: the group "default" and Quartz's
 * DEFAULT, names cut at 60 bytes, names without a letter or digit. */
static void test_import_quartz_ids_never_shared(void **st)
{
	char long1[80], long2[80], *ids[6];
	const char *keys[12] = {"DEFAULT", "x",	  "default", "x",  "DEFAULT", long1,
				"DEFAULT", long2, "DEFAULT", "!!", "DEFAULT", "??"};
	pal_import_result *r;

	memset(long1, 'a', 70);
	memcpy(long2, long1, 70);
	long1[70] = '1';
	long2[70] = '2';
	long1[71] = long2[71] = '\0';
	r = quartz_ids(keys, 6, ids);
	assert_int_equal(strncmp(ids[0], "default.x_", 10), 0);
	assert_int_equal(strncmp(ids[1], "default.x_", 10), 0);
	assert_int_equal(strncmp(ids[2], "default.aaa", 11), 0);
	assert_true(strlen(ids[2]) <= 128);
	assert_int_equal(strncmp(ids[4], "default.trigger_", 16), 0);
	for (int i = 0; i < 6; i++)
		for (int k = 0; k < i; k++)
			assert_string_not_equal(ids[i], ids[k]);
	assert_int_equal(pal_import_issues(r), 0);
	for (int i = 0; i < 6; i++)
		g_free(ids[i]);
	pal_import_result_free(r);
}

/* A key that is not an id as it stands, whose reduction no other trigger
 * shares, keeps the id palisade 0.3.0 gave it (its reduction, no hash): a
 * store that release imported, imported again, keeps its job ids. */
static void test_import_quartz_ids_keep_the_reduction(void **st)
{
	static const char *const keys[] = {"Reports", "Nightly Export", "DEFAULT", "daily-report",
					   "DEFAULT", "Weekly_Summary"};
	char *ids[3];
	pal_import_result *r = quartz_ids(keys, 3, ids);

	assert_string_equal(ids[0], "reports.nightly-export");
	assert_string_equal(ids[1], "default.daily-report");
	assert_string_equal(ids[2], "default.weekly-summary");
	assert_null(strstr(pal_import_report(r), "qrtz_triggers:"));
	assert_int_equal(pal_import_issues(r), 0);
	for (int i = 0; i < 3; i++)
		g_free(ids[i]);
	pal_import_result_free(r);
}

static void test_import_target_placeholders(void **st)
{
	char err[128];

	assert_int_equal(pal_import_check_target("http://r/{job}/{digest}", err, sizeof err), 0);
	assert_int_equal(pal_import_check_target("http://r/{scheduled_at}", err, sizeof err),
			 PAL_EINVAL);
	assert_non_null(strstr(err, "{scheduled_at}"));
	assert_int_equal(pal_import_check_target(NULL, err, sizeof err), PAL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_import_crontab_command_survives_templates),
	    cmocka_unit_test(test_import_crontab_ids_stable_and_unique),
	    cmocka_unit_test(test_import_crontab_twins_by_schedule),
	    cmocka_unit_test(test_import_crontab_where_and_scope),
	    cmocka_unit_test(test_import_crontab_names_what_it_leaves_out),
	    cmocka_unit_test(test_import_crontab_names_what_cron_refuses),
	    cmocka_unit_test(test_import_crontab_system_user_and_gap),
	    cmocka_unit_test(test_import_crontab_user_label),
	    cmocka_unit_test(test_import_kubernetes_labels),
	    cmocka_unit_test(test_import_kubernetes_fields),
	    cmocka_unit_test(test_import_kubernetes_controller_reading),
	    cmocka_unit_test(test_import_kubernetes_every),
	    cmocka_unit_test(test_import_kubernetes_list_digest_per_item),
	    cmocka_unit_test(test_import_kubernetes_same_cronjob_twice_refused),
	    cmocka_unit_test(test_import_quartz_ids_from_the_key_alone),
	    cmocka_unit_test(test_import_quartz_ids_never_shared),
	    cmocka_unit_test(test_import_quartz_ids_keep_the_reduction),
	    cmocka_unit_test(test_import_target_placeholders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
