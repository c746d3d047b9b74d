/*
 * labels.c - the rule of a job's label keys and values (Kubernetes' own:
 * docs/jobs.md, "labels"), for the loader, the canonical form's reader and
 * the importers.
 */
#include <stdbool.h>
#include <string.h>
#include "palisade/jobspec.h"

#define LABEL_NAME_MAX 63
#define LABEL_PREFIX_MAX 253

static bool alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* A label name or value of N > 0 bytes: [A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])? */
static const char *name_problem(const char *s, size_t n)
{
	if (n > LABEL_NAME_MAX)
		return "longer than 63 bytes";
	if (!alnum(s[0]) || !alnum(s[n - 1]))
		return "must begin and end with a letter or digit";
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return "may hold only letters, digits, '-', '_' and '.'";
	return NULL;
}

/* A DNS subdomain (RFC 1123): lower-case dot-separated parts of letters,
 * digits and '-', each beginning and ending with a letter or digit. */
static const char *prefix_problem(const char *s, size_t n)
{
	size_t part = 0;

	if (n == 0)
		return "has an empty prefix before '/'";
	if (n > LABEL_PREFIX_MAX)
		return "has a prefix longer than 253 bytes";
	for (size_t i = 0; i <= n; i++) {
		char ch = i < n ? s[i] : '.';

		if (ch == '.') {
			if (part == 0 || s[i - 1] == '-')
				return "has a prefix that is not a DNS subdomain (lower-case "
				       "letters, digits, '-' and '.')";
			part = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
			   (ch == '-' && part > 0)) {
			part++;
		} else {
			return "has a prefix that is not a DNS subdomain (lower-case letters, "
			       "digits, '-' and '.')";
		}
	}
	return NULL;
}

const char *pal_label_key_problem(const char *key)
{
	const char *slash = strchr(key, '/'), *name = slash ? slash + 1 : key;
	const char *why;

	if (slash && (why = prefix_problem(key, (size_t)(slash - key))))
		return why;
	if (!*name)
		return "has an empty name";
	if (strchr(name, '/'))
		return "may hold one '/' at most";
	return name_problem(name, strlen(name));
}

const char *pal_label_value_problem(const char *value)
{
	return *value ? name_problem(value, strlen(value)) : NULL;
}
