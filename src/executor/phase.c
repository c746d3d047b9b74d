/* phase.c - the one door for the phase of an executor call (k->ph,
 * k->parked_ph): the phases and their edges are the list in phase.def;
 * every change of phase is a move along one of them, made here with what
 * the edge implies (the host's count of parked calls).  Runs on the
 * executor thread, like everything that touches a call. */
#include "palisade/log.h"
#include "executor_int.h"

static const char *const names[PHASE__COUNT] = {
#define PAL_PHASE(e, name) [PHASE_##e] = #name,
#include "phase.def"
};

static const bool edges[PHASE__COUNT][PHASE__COUNT] = {
#define PAL_PHASE_EDGE(from, to) [PHASE_##from][PHASE_##to] = true,
#include "phase.def"
};

const char *pal__phase_name(pal__phase p)
{
	return (unsigned)p < PHASE__COUNT ? names[p] : "?";
}

bool pal__phase_edge_ok(pal__phase from, pal__phase to)
{
	return (unsigned)from < PHASE__COUNT && (unsigned)to < PHASE__COUNT && edges[from][to];
}

/* The move itself: every assignment of k->ph and k->parked_ph is here. */
static bool move(pal_executor *ex, pal__call *k, pal__phase to, pal__phase resume)
{
	pal__phase from = k->ph;
	bool ok = pal__phase_edge_ok(from, to) &&
		  (to != PHASE_PARKED || pal__phase_edge_ok(PHASE_PARKED, resume));
	if (!ok)
		pal_log(PAL_LOG_ERROR, "executor.phase_illegal", "{s:I, s:s, s:s, s:s}", "trigger",
			(json_int_t)k->c.id, "from", pal__phase_name(from), "to",
			pal__phase_name(to), "resume",
			to == PHASE_PARKED ? pal__phase_name(resume) : "");
	if (from == PHASE_PARKED)
		pal_breaker_parked(ex->breakers, k->host, -1);
	if (to == PHASE_PARKED) {
		k->parked_ph = resume;
		pal_breaker_parked(ex->breakers, k->host, +1);
	}
	k->ph = to;
	return ok;
}

bool pal__phase_set(pal_executor *ex, pal__call *k, pal__phase to)
{
	return move(ex, k, to, to == PHASE_PARKED ? PHASE__COUNT : to);
}

bool pal__phase_park(pal_executor *ex, pal__call *k, pal__phase resume)
{
	return move(ex, k, PHASE_PARKED, resume);
}

void pal__phase_unpark(pal_executor *ex, pal__call *k)
{
	if (k->ph == PHASE_PARKED)
		move(ex, k, k->parked_ph, PHASE__COUNT);
}
