/*
 * apply_int.h - what the files of an apply share (apply.c, apply_takeover.c,
 * apply_rules.c, apply_followers.c, apply_retire.c) and nobody else needs:
 * the apply itself (pal_apply), one job of a chunk (struct item) and the
 * steps one file runs for another.  Every function runs on the apply's
 * connection; those taking ERR fill it on failure.
 */
#ifndef PALISADE_APPLY_INT_H
#define PALISADE_APPLY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "palisade/jobspec.h"
#include "palisade/secrets.h"
#include "palisade/store.h"
#include "store_int.h"

/* Jobs per set of statements: large enough that the round trips vanish
 * (~4 per chunk), small enough that a chunk's arrays stay a few MiB. */
#define CHUNK 5000

/* The rules' lock: taken shared by an apply that reads the rules (until
 * its commit), exclusive by one that changes them, so that the jobs an
 * apply creates with the rules it read are seen by the followers' scan of
 * a change of them, whichever commits first.  Every apply takes it in its
 * first statement (pal_store_apply_begin_rules), before any other lock:
 * an apply that took it later, after a calendar's or a job's audit row
 * (which holds the audit seal's lock until commit, palisade_audit_seal)
 * or a job's row lock, deadlocked with an apply of a rule that held it
 * and waited for those. */
#define RULES_LOCK "hashtextextended('palisade.notify_rules', 0)"

struct pal_apply {
	pal_store *st;
	char *actor, *reason;
	int nshards;
	bool pending;	/* statement 4 (or the jobs COPY) sent, result not read yet */
	bool jobs_copy; /* the pending result is the jobs COPY's (a savepoint open) */
	/* the last chunk's jobs were all new: the next chunk skips the probe
	 * and is assumed new too (see apply_chunk) */
	bool all_new;
	/* retiring (pal_store_apply_retire): statement 4 audits job.retire,
	 * and the jobs' owner and description are left as they are */
	bool retiring;
	/* the specs being added were read back from the store (retiring, a
	 * calendar's followers): their calendar copies keep the versions they
	 * carry, but for the calendars this apply stored (see stamp_calendars) */
	bool stored_specs;
	size_t meta_changed; /* jobs whose owner or description apply changed */
	/* calendar name -> pal_calendar (a copy, with its version): the
	 * calendars this apply stored */
	GHashTable *cals;
	bool cals_changed; /* one of them got a new version here */
	bool followed;	   /* apply_followers ran */
	/* the stored notify rules (pal__apply_load_rules), merged into every
	 * job added but a retiring one; reloaded after
	 * pal_store_apply_notify_rules changed one, whose scopes ("g NAME",
	 * "t NAME") rule_scopes holds */
	pal_notify_rule *rules;
	size_t n_rules;
	bool rules_loaded;
	bool rules_excl; /* the rules' lock is held exclusive (else shared) */
	/* the policy the inherited entries are checked under
	 * (pal_store_apply_secret_policy; NULL: not checked), borrowed */
	const pal_secret_policy *secrets;
	GHashTable *rule_scopes;
	int64_t now; /* the apply's time (apply_time), PAL_NO_TIME until read */
	/* the versions that take over at the apply (N_STORED: jobs, versions)
	 * and, for each, the clock read once their old rows were locked
	 * (pal__apply_takeover_sweep): their created_at at the commit */
	pal_pgarr stored_ids, stored_vers, stored_ats;
	size_t n_stored;
	/* the jobs its takeover sweeps cut (pal__apply_takeover_sweep),
	 * handed to the store at the commit for pal_store_apply_settle */
	struct pal__takeover *tk;
	/* the existing jobs it gave a version with an entry listing failed
	 * or manual, and those versions: told of a failure at the commit
	 * (TELL_SQL) */
	pal_pgarr told_ids, told_vers;
	size_t n_told;
	bool unmarks; /* it gave an existing job a version listing neither */
};

/* One job of a chunk: its spec, canonical form and what happens to it. */
struct item {
	const pal_job_spec *s;
	pal_apply_result *res;
	char *canon;
	char hex[65];
	pal_canon_spans sp; /* of retry and target in canon */
	int latest;	    /* latest_version before this apply, 0 for a new job */
	bool fresh;	    /* its jobs row was inserted by this apply */
	bool meta;	    /* an existing job whose owner or description differ */
	bool moved;	    /* an existing job whose tenant or group differ */
	bool retired;	    /* an existing job retired before this apply */
};

/* Read the result of the statement in flight, if any (apply.c). */
int pal__apply_collect(pal_apply *a, char *err, size_t errlen);

/* Statements 4e and 4f for a chunk: the old versions' rows that a version
 * taking over at its apply cuts (apply_takeover.c). */
/* The versions that took over at the apply are stored when their old rows
 * were locked (a->stored_at), not when the apply began: set at the commit,
 * once their rows are in. */
int pal__apply_takeover_stored(pal_apply *a, char *err, size_t errlen);
int pal__apply_takeover_sweep(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen);

/* Statement 4r for a chunk: retired jobs applied again, and jobs whose
 * latest version may have taken over at its apply (apply_retire.c). */
int pal__apply_reapply_retired(pal_apply *a, struct item *it, size_t n, char *err, size_t errlen);

/* The spec of job ID from the canonical TEXT of its stored version
 * (apply_retire.c). */
int pal__apply_stored_spec(const char *text, const char *id, pal_job_spec *out, char *err,
			   size_t errlen);

/* The stored notify rules into A, unless loaded since their last change
 * (apply_rules.c). */
int pal__apply_load_rules(pal_apply *a, char *err, size_t errlen);

#endif
