/*
 * config_ref.c - the node config as the CLI sees it: connection settings and
 * cluster identity (precedence: flag > config file > environment).
 */
#include <stdio.h>
#include <stdlib.h>
#include "palisade/err.h"
#include "palisade/coord.h"
#include "palisade/keyhorizon.h"
#include "palisade/nodeconf.h"
#include "cli_int.h"

/* The config is loaded once per process and kept until exit. */
static pal_nodeconf *load(const char *path)
{
	static pal_nodeconf conf;
	static const char *loaded;
	if (loaded)
		return &conf;
	pal_diags d = { 0 };
	if (pal_nodeconf_load(path, &conf, &d)) {
		pal_diags_print(&d, stderr);
		pal_diags_free(&d);
		exit(PAL_EXIT_DATAERR);
	}
	pal_diags_free(&d);
	loaded = path;
	return &conf;
}

const char *pal__cli_config_pg(const char *path)
{
	/* An operator's command is one session (the migration lock, session
	 * settings at connect): behind a transaction pooler it goes direct. */
	const pal_nodeconf *c = load(path);
	return pal_nodeconf_pg_direct(c, c->pg_conninfo);
}

int pal__cli_config_shards(const pal_cli_common *c)
{
	return c->config ? load(c->config)->shards : 16;
}

int64_t pal__cli_config_key_retention(const char *path)
{
	if (path)
		return load(path)->sink_key_retention_ms;
	pal_nodeconf d;
	int64_t v = pal_nodeconf_defaults(&d) ? 0 : d.sink_key_retention_ms;
	pal_nodeconf_free(&d);
	return v;
}

void pal__cli_resume_opts(const char *config, pal_scope_kind kind, pal_resume_opts *o)
{
	pal_nodeconf d;
	const pal_nodeconf *c = &d;
	if (config)
		c = load(config);
	else if (pal_nodeconf_defaults(&d)) {
		fprintf(stderr, "palisade: out of memory\n");
		exit(PAL_EXIT_SOFTWARE);
	}
	const int64_t ramps[] = {[PAL_SCOPE_GLOBAL] = c->resume_ramp_all_ms,
				 [PAL_SCOPE_JOB] = c->resume_ramp_job_ms,
				 [PAL_SCOPE_GROUP] = c->resume_ramp_group_ms,
				 [PAL_SCOPE_TENANT] = c->resume_ramp_tenant_ms};
	*o = (pal_resume_opts){.misfire_threshold_ms = c->misfire_threshold_ms,
			       .ramp_ms = ramps[kind]};
	if (!config)
		pal_nodeconf_free(&d);
}

int pal__cli_check_key_horizons(const char *config, const pal_jobset *set, pal_diags *d)
{
	int64_t keep = pal__cli_config_key_retention(config);
	int bad = 0;
	for (size_t i = 0; i < set->n; i++)
		if (pal_job_key_horizon_check(&set->jobs[i], keep, d))
			bad++;
	return bad;
}

size_t pal__cli_check_tenant_policy(const char *config, const pal_jobset *set, pal_diags *d)
{
	pal_secret_policy p = {0};
	pal_target_policy t = {0};
	if (config) {
		p = pal_nodeconf_secret_policy(load(config));
		t = pal_nodeconf_target_policy(load(config));
	}
	size_t bad = 0;
	for (size_t i = 0; i < set->n; i++)
		bad += pal_job_secrets_check(&set->jobs[i], config ? &p : NULL, d) +
		       pal_job_targets_check(&set->jobs[i], &t, d);
	for (size_t i = 0; i < set->n_notify_rules; i++)
		bad += pal_notify_rule_secrets_check(&set->notify_rules[i], config ? &p : NULL, d) +
		       pal_notify_rule_targets_check(&set->notify_rules[i], &t, d);
	return bad;
}

const pal_secret_policy *pal__cli_config_secrets(const char *config)
{
	static pal_secret_policy p;
	if (!config)
		return NULL;
	p = pal_nodeconf_secret_policy(load(config));
	return &p;
}

const char *pal__cli_config_zk_root(const pal_cli_common *c)
{
	return c->config ? load(c->config)->zk_root : "/palisade";
}

const char *pal__cli_config_cluster(const pal_cli_common *c)
{
	return c->config ? load(c->config)->cluster : "default";
}

const char *pal__cli_zk(const pal_cli_common *c)
{
	const char *zk = c->zk && *c->zk ? c->zk : (c->config ? load(c->config)->zk_connect : NULL);
	if (!zk || !*zk)
		zk = getenv("PALISADE_ZK");
	return zk && *zk ? zk : NULL;
}

int pal__cli_older_nodes(const pal_cli_common *c, int min_schema, json_t **live, json_t **older,
			 char *err, size_t errlen)
{
	const char *zk = pal__cli_zk(c);
	*live = *older = NULL;
	if (!zk) {
		snprintf(err, errlen,
			 "no ZooKeeper connect string to read the live nodes from (pass --zk or "
			 "--config, or export PALISADE_ZK)");
		return PAL_EXIT_USAGE;
	}
	if (pal_coord_list_registered_nodes(zk, pal__cli_config_zk_root(c),
					    pal__cli_config_cluster(c), 5000, live, err, errlen))
		return PAL_EXIT_UNAVAIL;
	*older = pal_coord_older_of(*live, min_schema, NULL);
	return PAL_EXIT_OK;
}

void pal__cli_add_nodes(const pal_cli_common *c, json_t *status)
{
	const char *zk = pal__cli_zk(c);
	if (!zk)
		return;
	json_t *nodes;
	char err[512];
	if (pal_coord_list_nodes(zk, pal__cli_config_zk_root(c), pal__cli_config_cluster(c), 3000,
				 &nodes, err, sizeof err))
		json_object_set_new(status, "nodes_error", json_string(err));
	else
		pal_coord_status_nodes(status, nodes);
}
