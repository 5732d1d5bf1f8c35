#include <stdio.h>

#include "o2ctl.h"

void
json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* Emit `"key":`, with the comma that separates it from the previous one. */
void
json_key(FILE *f, int *first, const char *key)
{
	if (!*first)
		fputc(',', f);
	*first = 0;
	json_str(f, key);
	fputc(':', f);
}

void
json_field_str(FILE *f, int *first, const char *key, const char *v)
{
	json_key(f, first, key);
	json_str(f, v);
}

void
json_field_uint(FILE *f, int *first, const char *key, unsigned long long v)
{
	json_key(f, first, key);
	fprintf(f, "%llu", v);
}

void
json_field_int(FILE *f, int *first, const char *key, long long v)
{
	json_key(f, first, key);
	fprintf(f, "%lld", v);
}

void
json_field_bool(FILE *f, int *first, const char *key, int v)
{
	json_key(f, first, key);
	fputs(v ? "true" : "false", f);
}
