/*
 * name.c - the name rule of name.h, in one place.
 */
#include <string.h>
#include "palisade/name.h"

size_t pal_name_bad_byte(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		      (i > 0 && (ch == '.' || ch == '_' || ch == '-'))))
			return i;
	}
	return len;
}

bool pal_name_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= max && pal_name_bad_byte(s, n) == n;
}
