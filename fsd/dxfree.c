/*
 * An in-memory copy of an indexed directory's free-space list
 * (doc/indexed-dirs.md, "The free-space list"): each listed block with
 * its db_free_rec_len, in list order, also filed by that length.
 *
 * On disk a block stays listed while it has a hole of 16 bytes or more,
 * as the kernel keeps it (ocfs2_find_max_rec_len). A block full of
 * names longer than that keeps such a hole for good, so in a directory
 * filled with 40-byte entries every block is listed, and the kernel's
 * search (ocfs2_search_dx_free_list) walks all of them, whenever no block
 * has room, before a new one is added: creates in a directory of N names
 * cost O(N). The copy answers "a block with room for need bytes" in time
 * independent of the list's length; the disk keeps the kernel's list.
 *
 * The copy lives beside the directory's name index in its in-memory inode
 * and goes with it (inode_drop_dindex): when our lock on the directory
 * comes down or a handle that changed the directory aborts.
 */
#include <stdlib.h>

#include "util.h"

#include "fsd.h"

/* hole lengths are multiples of OCFS2_DIR_ROUND (4): one class each */
#define CLASS_OF(len)	((len) / OCFS2_DIR_ROUND)

struct dxf_node {
	uint64_t	 blkno;
	unsigned	 free;			/* db_free_rec_len as on disk */
	struct dxf_node	*prev, *next;		/* list order, as on disk */
	struct dxf_node	*cprev, *cnext;		/* the class of its length */
	struct dxf_node	*hnext;			/* by blkno */
};

struct dx_free_map {
	struct dxf_node	 *head, *tail;
	struct dxf_node	**hash;
	unsigned	  nhash, count;		/* nhash a power of two */
	struct dxf_node	**cls;			/* by CLASS_OF(free) */
	unsigned	  ncls, top;		/* top: no class above holds a block */
};

static unsigned
node_hash(uint64_t blkno, unsigned nhash)
{
	return (unsigned)((blkno * 0x9E3779B97F4A7C15ULL) >> 32) & (nhash - 1);
}

struct dx_free_map *
dxfree_new(unsigned block_bytes)
{
	struct dx_free_map *m = xcalloc(1, sizeof(*m));

	m->nhash = 64;
	m->hash = xcalloc(m->nhash, sizeof(*m->hash));
	m->ncls = CLASS_OF(block_bytes) + 1;
	m->cls = xcalloc(m->ncls, sizeof(*m->cls));
	return m;
}

void
dxfree_free(struct dx_free_map *m)
{
	struct dxf_node *n, *next;

	if (m == NULL)
		return;
	for (n = m->head; n != NULL; n = next) {
		next = n->next;
		free(n);
	}
	free(m->hash);
	free(m->cls);
	free(m);
}

static struct dxf_node *
node_find(const struct dx_free_map *m, uint64_t blkno)
{
	struct dxf_node *n;

	for (n = m->hash[node_hash(blkno, m->nhash)]; n != NULL && n->blkno != blkno; n = n->hnext)
		;
	return n;
}

static void
hash_grow(struct dx_free_map *m)
{
	unsigned i, nn = m->nhash * 4;
	struct dxf_node **nh, *n, *next;

	nh = xcalloc(nn, sizeof(*nh));
	for (i = 0; i < m->nhash; i++)
		for (n = m->hash[i]; n != NULL; n = next) {
			next = n->hnext;
			n->hnext = nh[node_hash(n->blkno, nn)];
			nh[node_hash(n->blkno, nn)] = n;
		}
	free(m->hash);
	m->hash = nh;
	m->nhash = nn;
}

static void
class_add(struct dx_free_map *m, struct dxf_node *n)
{
	unsigned c = CLASS_OF(n->free);

	n->cprev = NULL;
	n->cnext = m->cls[c];
	if (n->cnext != NULL)
		n->cnext->cprev = n;
	m->cls[c] = n;
	if (c > m->top)
		m->top = c;
}

static void
class_del(struct dx_free_map *m, struct dxf_node *n)
{
	if (n->cprev != NULL)
		n->cprev->cnext = n->cnext;
	else
		m->cls[CLASS_OF(n->free)] = n->cnext;
	if (n->cnext != NULL)
		n->cnext->cprev = n->cprev;
}

/* A block not yet listed joins the list, at its head or its tail. */
static void
node_add(struct dx_free_map *m, uint64_t blkno, unsigned free_len, int at_head)
{
	struct dxf_node *n = xcalloc(1, sizeof(*n));
	unsigned h;

	if (m->count >= 2 * m->nhash)
		hash_grow(m);
	n->blkno = blkno;
	n->free = free_len;
	h = node_hash(blkno, m->nhash);
	n->hnext = m->hash[h];
	m->hash[h] = n;
	if (at_head) {
		n->next = m->head;
		if (m->head != NULL)
			m->head->prev = n;
		m->head = n;
		if (m->tail == NULL)
			m->tail = n;
	} else {
		n->prev = m->tail;
		if (m->tail != NULL)
			m->tail->next = n;
		m->tail = n;
		if (m->head == NULL)
			m->head = n;
	}
	class_add(m, n);
	m->count++;
}

int
dxfree_add(struct dx_free_map *m, uint64_t blkno, unsigned free_len, int at_head)
{
	if (free_len < OCFS2_DIR_MIN_REC_LEN || CLASS_OF(free_len) >= m->ncls ||
	    node_find(m, blkno) != NULL)
		return -1;
	node_add(m, blkno, free_len, at_head);
	return 0;
}

void
dxfree_set(struct dx_free_map *m, uint64_t blkno, unsigned free_len)
{
	struct dxf_node *n = node_find(m, blkno), **pp;

	if (n == NULL)
		return;
	class_del(m, n);
	if (free_len != 0) {
		n->free = free_len;
		class_add(m, n);
		return;
	}
	/* full: off the list */
	if (n->prev != NULL)
		n->prev->next = n->next;
	else
		m->head = n->next;
	if (n->next != NULL)
		n->next->prev = n->prev;
	else
		m->tail = n->prev;
	for (pp = &m->hash[node_hash(blkno, m->nhash)]; *pp != n; pp = &(*pp)->hnext)
		;
	*pp = n->hnext;
	m->count--;
	free(n);
}

int
dxfree_pick(struct dx_free_map *m, unsigned need, uint64_t *blkno, uint64_t *prev)
{
	struct dxf_node *n;
	long c;

	while (m->top > 0 && m->cls[m->top] == NULL)
		m->top--;	/* emptied since it became the top */
	for (c = m->top; c >= (long)CLASS_OF(need); c--)
		for (n = m->cls[c]; n != NULL; n = n->cnext)
			if (n->free >= need) {
				*blkno = n->blkno;
				*prev = n->prev != NULL ? n->prev->blkno : 0;
				return 1;
			}
	return 0;
}
