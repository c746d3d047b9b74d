/* html.h - escaping for the HTML pages the nodes serve (the console, the
 * admin status page).  Every value printed on a page comes from the
 * database, ZooKeeper or another node and goes through one of these. */
#ifndef PALISADE_HTML_H
#define PALISADE_HTML_H

#include <glib.h>
#include <jansson.h>

/* S as HTML text or attribute value: & < > " ' escaped, control characters
 * other than tab and newline as U+FFFD, invalid UTF-8 replaced; NULL as
 * nothing.  Safe inside elements and quoted attributes. */
void pal_html_text(GString *out, const char *s);
/* S percent-encoded for a URL query value (everything but A-Z a-z 0-9 - . _ ~). */
void pal_html_urlarg(GString *out, const char *s);
/* A JSON value as text (escaped): strings as they are, null as "-", numbers
 * as printed by jansson, anything else as compact JSON. */
void pal_html_value(GString *out, const json_t *v);
/* S quoted for a POSIX shell (single quotes), not escaped: for the CLI
 * commands a page shows (which then go through pal_html_text). */
void pal_shell_quote(GString *out, const char *s);

#endif
