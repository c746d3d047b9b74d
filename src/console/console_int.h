/* console_int.h - what the files of src/console share: HTML escaping. */
#ifndef PALISADE_CONSOLE_INT_H
#define PALISADE_CONSOLE_INT_H

#include <glib.h>
#include <jansson.h>

/* S as HTML text or attribute value: & < > " ' escaped, control characters
 * other than tab and newline as U+FFFD, invalid UTF-8 replaced; NULL as
 * nothing.  Safe inside elements and quoted attributes. */
void pal__html_text(GString *out, const char *s);
/* S percent-encoded for a URL query value (everything but A-Z a-z 0-9 - . _ ~). */
void pal__html_urlarg(GString *out, const char *s);
/* A JSON value as text (escaped): strings as they are, null as "-", numbers
 * as printed by jansson, anything else as compact JSON. */
void pal__html_value(GString *out, const json_t *v);
/* S quoted for a POSIX shell (single quotes), not escaped: for the CLI
 * commands the page shows (which then go through pal__html_text). */
void pal__shell_quote(GString *out, const char *s);

#endif
