/*
 * faults.c - the sink's run-time fault settings: delay inside the
 * transaction, error rate, drop-after-commit rate and pause.
 *
 * The settings start from the command line and change through POST
 * /admin/faults.  They live in ctx->faults under ctx->mu; request threads
 * take a snapshot once per request, so one request sees one consistent set.
 * ctx->cv is broadcast on every change and on stop, which wakes requests
 * waiting for an unpause and cuts injected delays short at shutdown.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "sink_int.h"

void pal__sink_faults_get(sink_ctx *ctx, sink_faults *out)
{
	pthread_mutex_lock(&ctx->mu);
	*out = ctx->faults;
	pthread_mutex_unlock(&ctx->mu);
}

void pal__sink_faults_publish(sink_ctx *ctx, const sink_faults *f)
{
	pal_metric_set(ctx->metrics, SINK_M_FAULT, "name=\"delay_ms\"", (double)f->delay_ms);
	pal_metric_set(ctx->metrics, SINK_M_FAULT, "name=\"error_rate\"", f->error_rate);
	pal_metric_set(ctx->metrics, SINK_M_FAULT, "name=\"drop_after_commit_rate\"", f->drop_rate);
	pal_metric_set(ctx->metrics, SINK_M_FAULT, "name=\"paused\"", f->paused ? 1 : 0);
}

static int rate_of(const json_t *v, const char *name, double *out, char *err, size_t errlen)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
	    json_number_value(v) > 1) {
		snprintf(err, errlen, "\"%s\" must be a number between 0 and 1", name);
		return PAL_EINVAL;
	}
	*out = json_number_value(v);
	return PAL_OK;
}

int pal__sink_faults_update(sink_ctx *ctx, const char *text, size_t len, sink_faults *out,
			    char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(j)) {
		if (j == NULL)
			snprintf(err, errlen,
				 "fault settings are not JSON: %s (line %d, column %d)", jerr.text,
				 jerr.line, jerr.column);
		else
			snprintf(err, errlen, "fault settings must be a JSON object");
		json_decref(j);
		return PAL_EINVAL;
	}

	/* Validate a copy under the lock (cheap, nothing blocks) and swap it in
	 * only when every field is valid: all or nothing. */
	pthread_mutex_lock(&ctx->mu);
	sink_faults f = ctx->faults;
	int rc = PAL_OK;
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		if (strcmp(k, "delay_ms") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > SINK_DELAY_MAX_MS) {
				snprintf(err, errlen,
					 "\"delay_ms\" must be an integer between 0 and %d",
					 SINK_DELAY_MAX_MS);
				rc = PAL_EINVAL;
			} else {
				f.delay_ms = json_integer_value(v);
			}
		} else if (strcmp(k, "error_rate") == 0) {
			rc = rate_of(v, k, &f.error_rate, err, errlen);
		} else if (strcmp(k, "error_status") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 500 ||
			    json_integer_value(v) > 599) {
				snprintf(err, errlen,
					 "\"error_status\" must be an integer between 500 and 599");
				rc = PAL_EINVAL;
			} else {
				f.error_status = (int)json_integer_value(v);
			}
		} else if (strcmp(k, "drop_after_commit_rate") == 0) {
			rc = rate_of(v, k, &f.drop_rate, err, errlen);
		} else if (strcmp(k, "paused") == 0) {
			if (!json_is_boolean(v)) {
				snprintf(err, errlen, "\"paused\" must be true or false");
				rc = PAL_EINVAL;
			} else {
				f.paused = json_is_true(v);
			}
		} else {
			snprintf(err, errlen,
				 "unknown fault setting \"%s\" (expected delay_ms, error_rate, "
				 "error_status, "
				 "drop_after_commit_rate, paused)",
				 k);
			rc = PAL_EINVAL;
		}
		if (rc != PAL_OK)
			break;
	}
	if (rc == PAL_OK) {
		ctx->faults = f;
		pthread_cond_broadcast(&ctx->cv);
	}
	pthread_mutex_unlock(&ctx->mu);
	json_decref(j);
	if (rc != PAL_OK)
		return rc;
	pal__sink_faults_publish(ctx, &f);
	*out = f;
	return PAL_OK;
}

bool pal__sink_wait_unpaused(sink_ctx *ctx)
{
	pthread_mutex_lock(&ctx->mu);
	while (ctx->faults.paused && !ctx->stopping)
		pthread_cond_wait(&ctx->cv, &ctx->mu);
	bool ok = !ctx->stopping;
	pthread_mutex_unlock(&ctx->mu);
	return ok;
}

void pal__sink_sleep_ms(sink_ctx *ctx, int64_t ms)
{
	if (ms <= 0)
		return;
	/* ctx->cv uses CLOCK_MONOTONIC (main.c), so wall-clock steps do not matter */
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&ctx->mu);
	while (!ctx->stopping) {
		if (pthread_cond_timedwait(&ctx->cv, &ctx->mu, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&ctx->mu);
}
