/*
 * url.h - the one home of URL parsing outside libcurl (src/util/url.c).
 */
#ifndef PALISADE_URL_H
#define PALISADE_URL_H

#include <stddef.h>

/* The breaker identity of URL: host and explicit port ("http://h:1/x" ->
 * "h:1", "https://h/x" -> "h"), userinfo dropped; "" when unparsable.
 * Written to BUF (LEN bytes, cut to fit). */
void pal_url_host(const char *url, char *buf, size_t len);

/* URL as it may appear in a message or log: the password of its userinfo
 * replaced by "***" ("http://u:pw@h/x" -> "http://u:***@h/x"); everything
 * else as given.  Every message that shows a URL goes through this.
 * Written to BUF (LEN bytes, cut to fit). */
void pal_url_redact(const char *url, char *buf, size_t len);

/* TEXT (a message that may quote URLs, such as libpq's error for a bad
 * postgresql:// conninfo) with the password of every URL in it masked the
 * same way.  Written to BUF (LEN bytes, cut to fit). */
void pal_url_redact_text(const char *text, char *buf, size_t len);

#endif
