/*
 * err.h - the one return convention of palisade.
 *
 * Every fallible function returns int: 0 (PAL_OK) on success, a negative
 * PAL_E* code on failure.  Results travel through out-parameters.  Functions
 * that can explain a failure take a caller-provided buffer (char *err,
 * size_t errlen) and fill it with a lower-case message: what was attempted,
 * why it failed, then a hint where one helps (PostgreSQL's style guide).
 */
#ifndef PALISADE_ERR_H
#define PALISADE_ERR_H

#include <stddef.h>

#define PAL_MUST_CHECK __attribute__((warn_unused_result))

enum {
	PAL_OK = 0,
	PAL_EINVAL = -1,   /* bad input: syntax, range, type */
	PAL_ENOMEM = -2,   /* allocation failed */
	PAL_ENOENT = -3,   /* no such thing: zone, job, no further instant */
	PAL_EIO = -4,      /* file or socket error */
	PAL_EDB = -5,      /* PostgreSQL error */
	PAL_EZK = -6,      /* ZooKeeper error */
	PAL_ESTALE = -7,   /* fenced: a newer epoch or token exists */
	PAL_ESCHEMA = -8,  /* database schema newer than this binary */
	PAL_ETOOBIG = -9,  /* input over a size or expansion limit */
	PAL_EBUSY = -10,   /* resource held elsewhere; try later */
	PAL_EPERM = -11,   /* not permitted: a secret a job may not name */
	PAL_ENOGRANT = -12, /* a secret this node's policy does not give the tenant */
	PAL_ENOHOST = -13,  /* a target host this node's policy does not give the tenant */
};

/* Static string naming the code; never NULL. */
const char *pal_strerror(int code);

/* Exit codes of the CLI (sysexits.h values where one fits). */
enum {
	PAL_EXIT_OK = 0,
	PAL_EXIT_FAIL = 1,      /* the check ran and found a problem (verify) */
	PAL_EXIT_BROKEN = 2,    /* audit verify: the audit log's chain is broken */
	PAL_EXIT_USAGE = 64,    /* EX_USAGE: bad command line */
	PAL_EXIT_DATAERR = 65,  /* EX_DATAERR: invalid job file or expression */
	PAL_EXIT_UNAVAIL = 69,  /* EX_UNAVAILABLE: database or ZooKeeper down */
	PAL_EXIT_SOFTWARE = 70, /* EX_SOFTWARE: internal error, schema too new */
	PAL_EXIT_TEMPFAIL = 75, /* EX_TEMPFAIL: try again (a migration's locks) */
};

#endif
