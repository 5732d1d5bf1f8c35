/*
 * An in-memory index of a directory's names: name -> position of its
 * entry. OCFS2 without indexed-dirs has only linear directory blocks, so
 * without this every lookup and create scans the whole directory. Built
 * on first use from the blocks, kept up to date by the operations that
 * change the directory (under its EX lock), and dropped whenever it may
 * be wrong: a handle that touched the directory aborted, or another node
 * changed it (our lock on it came down). A hit is always checked against
 * the block.
 */
#include <stdlib.h>
#include <string.h>

#include "util.h"

#include "fsd.h"

struct dname {
	struct dname	*next;
	uint64_t	 pos;
	uint32_t	 hash;
	uint8_t		 len;
	char		 name[];
};

struct dir_index {
	struct dname	**b;
	unsigned	  nb, count;
};

static uint32_t
name_hash(const char *name, size_t len)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

struct dir_index *
dindex_new(void)
{
	struct dir_index *x = xcalloc(1, sizeof(*x));

	x->nb = 64;
	x->b = xcalloc(x->nb, sizeof(*x->b));
	return x;
}

void
dindex_free(struct dir_index *x)
{
	struct dname *d, *n;
	unsigned i;

	if (x == NULL)
		return;
	for (i = 0; i < x->nb; i++)
		for (d = x->b[i]; d != NULL; d = n) {
			n = d->next;
			free(d);
		}
	free(x->b);
	free(x);
}

static void
grow(struct dir_index *x)
{
	struct dname **nb, *d, *n;
	unsigned i, nn = x->nb * 4;

	nb = xcalloc(nn, sizeof(*nb));
	for (i = 0; i < x->nb; i++)
		for (d = x->b[i]; d != NULL; d = n) {
			n = d->next;
			d->next = nb[d->hash & (nn - 1)];
			nb[d->hash & (nn - 1)] = d;
		}
	free(x->b);
	x->b = nb;
	x->nb = nn;
}

int
dindex_find(struct dir_index *x, const char *name, size_t len, uint64_t *pos)
{
	uint32_t h = name_hash(name, len);
	struct dname *d;

	for (d = x->b[h & (x->nb - 1)]; d != NULL; d = d->next)
		if (d->hash == h && d->len == len && memcmp(d->name, name, len) == 0) {
			*pos = d->pos;
			return 1;
		}
	return 0;
}

void
dindex_insert(struct dir_index *x, const char *name, size_t len, uint64_t pos)
{
	uint32_t h = name_hash(name, len);
	struct dname *d;

	if (x->count >= 2 * x->nb)
		grow(x);
	d = xmalloc(sizeof(*d) + len);
	d->hash = h;
	d->len = (uint8_t)len;
	d->pos = pos;
	memcpy(d->name, name, len);
	d->next = x->b[h & (x->nb - 1)];
	x->b[h & (x->nb - 1)] = d;
	x->count++;
}

void
dindex_remove(struct dir_index *x, const char *name, size_t len)
{
	uint32_t h = name_hash(name, len);
	struct dname **pp, *d;

	for (pp = &x->b[h & (x->nb - 1)]; (d = *pp) != NULL; pp = &d->next)
		if (d->hash == h && d->len == len && memcmp(d->name, name, len) == 0) {
			*pp = d->next;
			free(d);
			x->count--;
			return;
		}
}
