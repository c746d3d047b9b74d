/*
 * retry.c - exponential backoff with jitter under attempt, age and deadline
 * budgets (docs/executor.md).
 */
#include <math.h>
#include "palisade/callpolicy.h"

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ULL;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

int64_t pal_backoff_ms(const pal_retry_policy *s, int attempts)
{
	double b = (double)s->backoff_initial_ms;
	double m = s->backoff_multiplier > 1 ? s->backoff_multiplier : 1;
	for (int i = 1; i < attempts && b < (double)s->backoff_max_ms; i++)
		b *= m;
	if (b > (double)s->backoff_max_ms)
		b = (double)s->backoff_max_ms;
	return (int64_t)b;
}

pal_retry_decision pal_retry_decide(const pal_retry_policy *s, int attempts, int64_t now_ms,
				    int64_t scheduled_ms, int64_t retry_after_ms, uint64_t *rng)
{
	pal_retry_decision d = { 0 };
	if (attempts >= s->max_attempts) {
		d.reason = "max_attempts";
		return d;
	}
	int64_t b = pal_backoff_ms(s, attempts), delay;
	switch (s->jitter) {
	case PAL_JITTER_NONE:
		delay = b;
		break;
	case PAL_JITTER_EQUAL:
		delay = b / 2 + (b / 2 > 0 ? (int64_t)(xorshift(rng) % (uint64_t)(b / 2 + 1)) : 0);
		break;
	case PAL_JITTER_FULL:
	default:
		delay = b > 0 ? (int64_t)(xorshift(rng) % (uint64_t)(b + 1)) : 0;
		break;
	}
	if (retry_after_ms > delay)
		delay = retry_after_ms;
	int64_t at = now_ms + delay;
	if (s->max_age_ms > 0 && at - scheduled_ms > s->max_age_ms) {
		d.reason = "max_age";
		return d;
	}
	if (s->deadline_ms > 0 && at - scheduled_ms > s->deadline_ms) {
		d.reason = "deadline";
		return d;
	}
	d.retry = true;
	d.at_ms = at;
	d.delay_ms = delay;
	return d;
}
