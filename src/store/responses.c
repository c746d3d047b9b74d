/*
 * responses.c - what attempts kept of the service's answers
 * (attempt_responses, 034), as the read commands, the API and the console
 * show them: the stored bytes (already masked by the executor) shown
 * escaped beside their exact base64.
 */
#include <glib.h>
#include <jansson.h>
#include "palisade/excerpt.h"
#include "store_int.h"

void pal__store_show_bodies(json_t *attempts)
{
	size_t i;
	json_t *a;
	json_array_foreach(attempts, i, a)
	{
		json_t *r = json_object_get(a, "response");
		const char *b64 = json_string_value(json_object_get(r, "body_base64"));
		if (!json_is_object(r) || !b64)
			continue;
		gsize n = 0;
		guchar *raw = *b64 ? g_base64_decode(b64, &n) : NULL;
		GString *g = g_string_sized_new(n + 8);
		pal_excerpt_escape(g, (const char *)raw, n);
		json_object_set_new(r, "body", json_stringn(g->str, g->len));
		g_string_free(g, TRUE);
		g_free(raw);
	}
}
