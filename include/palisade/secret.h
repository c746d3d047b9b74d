/*
 * secret.h - comparing secrets (API tokens, the admin endpoint's token, a
 * console form's CSRF token) without a timing side channel.
 */
#ifndef PALISADE_SECRET_H
#define PALISADE_SECRET_H

#include <stdbool.h>

/* GIVEN equals WANT, compared in a time that depends on the lengths only
 * (a secret is never compared with strcmp). */
bool pal_secret_equal(const char *given, const char *want);

#endif
