#ifndef PALISADE_NAME_H
#define PALISADE_NAME_H
/*
 * name.h - the one rule for the names of jobs, tenants, groups and API
 * tokens: lower-case letters, digits, '.', '_' and '-', starting with a
 * letter or digit (src/spec/name.c).  The job file loader, the CLI, the
 * HTTP API and the token store all check it here.
 */
#include <stdbool.h>
#include <stddef.h>

/* The index of the first byte of S (LEN bytes) the rule does not allow,
 * or LEN when every byte is allowed.  Length is not checked. */
size_t pal_name_bad_byte(const char *s, size_t len);

/* S (NUL-terminated; NULL is not a name) is 1 to MAX bytes and follows the
 * rule. */
bool pal_name_ok(const char *s, size_t max);

#endif
