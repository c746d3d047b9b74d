/* err.c - names of the PAL_E* codes (see include/palisade/err.h). */
#include "palisade/err.h"

const char *pal_strerror(int code)
{
	switch (code) {
	case PAL_OK: return "success";
	case PAL_EINVAL: return "invalid input";
	case PAL_ENOMEM: return "out of memory";
	case PAL_ENOENT: return "not found";
	case PAL_EIO: return "i/o error";
	case PAL_EDB: return "database error";
	case PAL_EZK: return "zookeeper error";
	case PAL_ESTALE: return "fenced by a newer epoch or token";
	case PAL_ESCHEMA: return "database schema is newer than this binary";
	case PAL_ETOOBIG: return "input too large";
	case PAL_EBUSY: return "busy";
	case PAL_EPERM: return "not permitted";
	case PAL_ENOGRANT: return "not granted on this node";
	case PAL_ENOHOST: return "host not granted on this node";
	default: return "unknown error";
	}
}
