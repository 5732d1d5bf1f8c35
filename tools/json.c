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
