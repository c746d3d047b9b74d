/*
 * misfire.c - the split of a missed run by its misfire policy (misfire.h):
 * shared by the planner (instants never planned) and the resume of a pause
 * (instants held past the threshold), so both decide alike.
 */
#include "palisade/misfire.h"

pal_misfire_split pal_misfire_decide(pal_misfire_policy policy, int64_t n, int64_t n_outside,
				     int64_t max_catchup)
{
	pal_misfire_split s = {0};
	if (n <= 0)
		return s;
	switch (policy) {
	case PAL_MISFIRE_FIRE_ALL: {
		s.outside = n_outside < 0 ? 0 : n_outside > n ? n : n_outside;
		int64_t in = n - s.outside;
		s.fire = max_catchup <= 0 ? 0 : in < max_catchup ? in : max_catchup;
		s.over = in - s.fire;
		break;
	}
	case PAL_MISFIRE_FIRE_ONCE:
		/* the newest, unless it too lies before the window */
		s.fire = n_outside < n ? 1 : 0;
		s.missed = n - s.fire;
		break;
	case PAL_MISFIRE_MANUAL:
		s.ticket = true;
		s.missed = n;
		break;
	case PAL_MISFIRE_SKIP:
		s.missed = n;
		break;
	}
	return s;
}
