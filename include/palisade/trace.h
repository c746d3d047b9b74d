/*
 * trace.h - W3C Trace Context for side-effect calls (src/util/trace.c):
 * the `traceparent` an executor sends, built from ids it already holds,
 * and the parsers the sink and `palisade triggers --trace-id` use.
 *
 * The rule (docs/protocol.md, "Trace context"): the trace id is the
 * cluster's 8-byte prefix (the first 8 bytes of SHA-256 of "palisade:" and
 * cluster.name) followed by the trigger id as 8 bytes, big-endian, so every
 * attempt of one trigger shares it and the id names its trigger without an
 * index; the span id is the transfer's kind (request or status query), the
 * attempt number and the low 40 bits of the attempt's fencing token.
 * Everything here is pure and allocates nothing, but pal_trace_ids_json.
 */
#ifndef PALISADE_TRACE_H
#define PALISADE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "palisade/err.h"

/* Lengths of the hex forms, without the NUL. */
#define PAL_TRACE_ID_HEX 32
#define PAL_SPAN_ID_HEX 16
#define PAL_TRACEPARENT_LEN 55 /* "00-" 32 "-" 16 "-" 2 */
/* The longest tracestate a job may set (the specification's 32 members of
 * up to 256 characters would be longer; its advice is 512). */
#define PAL_TRACESTATE_MAX 512

typedef enum {
	PAL_SPAN_REQUEST = 1, /* the side-effect request (each chunk of it) */
	PAL_SPAN_QUERY = 2,   /* a GET of the status URL */
} pal_span_kind;

/* The 8-byte trace-id prefix of CLUSTER (cluster.name). */
uint64_t pal_trace_cluster(const char *cluster);

/* The trace id of TRIGGER in the cluster of PREFIX, as 32 lower-case hex
 * digits and a NUL into OUT. */
void pal_trace_id(uint64_t prefix, int64_t trigger, char out[PAL_TRACE_ID_HEX + 1]);

/* Parse a trace id written by pal_trace_id (32 hex digits, either case, not
 * all zero): its prefix and trigger id.  PAL_EINVAL with a message when S is
 * not a trace id, or its low half is not a trigger id (0 or >= 2^63). */
PAL_MUST_CHECK int pal_trace_id_parse(const char *s, uint64_t *prefix, int64_t *trigger, char *err,
				      size_t errlen);

/* The span id of a transfer of KIND by ATTEMPT (1-based) holding FENCE:
 * kind in the top byte, the attempt (mod 2^16) in the next two, the low 40
 * bits of the fence below; never zero. */
uint64_t pal_span_id(pal_span_kind kind, int attempt, int64_t fence);

/* "00-<trace id>-<span id>-01" (or -00 when not SAMPLED) and a NUL into
 * OUT. */
void pal_traceparent(uint64_t prefix, int64_t trigger, uint64_t span, bool sampled,
		     char out[PAL_TRACEPARENT_LEN + 1]);

/* Parse a received traceparent header value (surrounding blanks ignored):
 * version 00 exactly as the specification writes it, or a later version
 * whose first 55 characters have that shape.  Fills TRACE (32 lower-case
 * hex digits), SPAN and FLAGS; PAL_EINVAL when it is not one (then the
 * receiver starts a trace of its own, as the specification says). */
PAL_MUST_CHECK int pal_traceparent_parse(const char *s, char trace[PAL_TRACE_ID_HEX + 1],
					 uint64_t *span, uint8_t *flags);

/* Whether S is a tracestate a job may send: 1 to 32 comma-separated
 * list-members key=value, keys as the specification spells them (simple or
 * tenant@system), values of printable ASCII without ',' and '=' (1 to 256
 * characters, no trailing space), no key twice, at most PAL_TRACESTATE_MAX
 * characters.  On false, ERR says what is wrong. */
bool pal_tracestate_valid(const char *s, char *err, size_t errlen);

/* Set "trace_id" on every object of the JSON array TRIGGERS from its "id"
 * (for listings: the CLI's triggers, the console's job page). */
void pal_trace_ids_json(json_t *triggers, uint64_t prefix);

#endif
