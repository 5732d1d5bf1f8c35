/*
 * Lock resources: named as ocfs2_lockid.h names them, one per name in a
 * hash table while referenced or held, then kept on the glue's idle list
 * with their level still cached in dlmd until lock_cache of them are idle
 * (the downconvert thread then takes the oldest out, dlmglue.c). Without
 * a cluster a resource goes as soon as it is idle.
 */
#include <stdlib.h>
#include <string.h>

#include <ocfs2-kernel/ocfs2_lockid.h>

#include "util.h"

#include "glue.h"
#include "lockres.h"

_Static_assert(FSD_LOCK_NAME_LEN == OCFS2_LOCK_ID_MAX_LEN, "lock name length");

/* buckets at first; the table grows with the resources (an inode has up to three) */
#define LR_HASH		4096

/* Local holder state when there is no cluster: one mutex for all. */
static pthread_mutex_t local_mtx = PTHREAD_MUTEX_INITIALIZER;

/* The lock types, by enum fsd_lock_type. */
static const struct fsd_lock_ops *const lock_types[FSD_LOCK_NTYPES] = {
	[FSD_LOCK_META]		= &meta_lock_ops,
	[FSD_LOCK_RW]		= &rw_lock_ops,
	[FSD_LOCK_OPEN]		= &open_lock_ops,
	[FSD_LOCK_SUPER]	= &super_lock_ops,
	[FSD_LOCK_RENAME]	= &rename_lock_ops,
	[FSD_LOCK_ORPHAN_SCAN]	= &orphan_scan_lock_ops,
	[FSD_LOCK_FLOCK]	= &flock_lock_ops,
	[FSD_LOCK_PLOCK]	= &plock_lock_ops,
	[FSD_LOCK_REFCOUNT]	= &refcount_lock_ops,
};

static char *
put_hex(char *p, uint64_t v, unsigned digits)
{
	static const char hex[] = "0123456789abcdef";
	unsigned i;

	for (i = digits; i > 0; i--, v >>= 4)
		p[i - 1] = hex[v & 0xf];
	return p + digits;
}

/*
 * dlmglue's ocfs2_build_lock_name, "%c%s%016llx%08x", written by hand:
 * every lookup of a resource names it, and snprintf was a fifth of fsd's
 * instructions in a run of unlinks.
 */
void
lockres_name(char *out, size_t outlen, enum fsd_lock_type type, uint64_t blkno,
    uint32_t generation)
{
	char name[FSD_LOCK_NAME_LEN], *p = name;
	size_t pad = sizeof(OCFS2_LOCK_ID_PAD) - 1;

	*p++ = lock_types[type]->letter;
	memcpy(p, OCFS2_LOCK_ID_PAD, pad);
	p = put_hex(p + pad, blkno, 16);
	p = put_hex(p, generation, 8);
	*p = '\0';
	if (outlen > 0) {
		outlen = outlen < sizeof(name) ? outlen : sizeof(name);
		memcpy(out, name, outlen - 1);
		out[outlen - 1] = '\0';
	}
}

pthread_mutex_t *
lockres_mutex(struct fsd *fs)
{
	return fs->glue != NULL ? &fs->glue->mtx : &local_mtx;
}

struct fsd_lockres *
lockres_alloc(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno, uint32_t generation,
    uint64_t owner)
{
	struct fsd_lockres *lr = xcalloc(1, sizeof(*lr));

	lockres_name(lr->name, sizeof(lr->name), type, blkno, generation);
	lr->type = type;
	lr->blkno = blkno;
	lr->ops = lock_types[type];
	lr->owner = owner;
	lr->glue = fs->glue;
	lr->level = fs->glue != NULL ? -1 : LKM_EX;
	lr->hold_us = fs->glue != NULL ? fs->glue->hold_min_us : 0;
	pthread_cond_init(&lr->cv, NULL);
	return lr;
}

static void
idle_remove(struct fsd_glue *g, struct fsd_lockres *lr)
{
	if (lr->idle_prev != NULL)
		lr->idle_prev->idle_next = lr->idle_next;
	else
		g->idle_head = lr->idle_next;
	if (lr->idle_next != NULL)
		lr->idle_next->idle_prev = lr->idle_prev;
	else
		g->idle_tail = lr->idle_prev;
	lr->flags &= ~LR_IDLE;
	g->nidle--;
}

/*
 * The table's resource of that name, made if need be. It stays in the
 * table while referenced or held, and with a cluster its level is cached
 * in dlmd meanwhile; the last lockres_put() lets it go.
 */
static unsigned
lr_hash(enum fsd_lock_type type, uint64_t blkno, unsigned nhash)
{
	return (unsigned)(((blkno * 0x9E3779B97F4A7C15ULL) >> 32) ^ (uint64_t)type) & (nhash - 1);
}

/* Four times the buckets once chains average two resources. State mutex held. */
static void
lockres_grow(struct fsd *fs)
{
	unsigned i, nn = fs->lockres_nhash * 4;
	struct fsd_lockres **nh, *lr, *n;

	if (fs->lockres_count < 2 * fs->lockres_nhash || nn < fs->lockres_nhash)
		return;
	nh = xcalloc(nn, sizeof(*nh));
	for (i = 0; i < fs->lockres_nhash; i++)
		for (lr = fs->lockres_hash[i]; lr != NULL; lr = n) {
			n = lr->hnext;
			lr->bucket = lr_hash((enum fsd_lock_type)lr->type, lr->blkno, nn);
			lr->hnext = nh[lr->bucket];
			nh[lr->bucket] = lr;
		}
	free(fs->lockres_hash);
	fs->lockres_hash = nh;
	fs->lockres_nhash = nn;
}

struct fsd_lockres *
lockres_get(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno, uint32_t generation,
    uint64_t owner)
{
	struct fsd_lockres *lr, **table;
	pthread_mutex_t *m = lockres_mutex(fs);
	char name[FSD_LOCK_NAME_LEN];
	unsigned h;

	lockres_name(name, sizeof(name), type, blkno, generation);
	pthread_mutex_lock(m);
	if (fs->lockres_hash == NULL) {
		fs->lockres_nhash = LR_HASH;
		fs->lockres_hash = xcalloc(LR_HASH, sizeof(*fs->lockres_hash));
	}
	table = fs->lockres_hash;
	h = lr_hash(type, blkno, fs->lockres_nhash);
	for (lr = table[h]; lr != NULL; lr = lr->hnext)
		if (lr->blkno == blkno && lr->type == (int)type && strcmp(lr->name, name) == 0)
			break;
	if (lr == NULL) {
		lockres_grow(fs);
		lr = lockres_alloc(fs, type, blkno, generation, owner);
		lr->bucket = lr_hash(type, blkno, fs->lockres_nhash);
		lr->hnext = fs->lockres_hash[lr->bucket];
		fs->lockres_hash[lr->bucket] = lr;
		fs->lockres_count++;
	}
	lr->refs++;
	if (lr->flags & LR_IDLE)
		idle_remove(fs->glue, lr);
	pthread_mutex_unlock(m);
	return lr;
}

static void
lockres_unhash(struct fsd *fs, struct fsd_lockres *lr)
{
	struct fsd_lockres **pp;

	for (pp = &fs->lockres_hash[lr->bucket]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == lr) {
			*pp = lr->hnext;
			fs->lockres_count--;
			return;
		}
}

/*
 * Nobody refers to lr nor holds it. Alone, it goes at once. In a cluster
 * its lock stays cached, as long as the idle list is not full: OCFS2
 * keeps an inode's locks as long as the kernel keeps the inode. State
 * mutex held.
 */
void
lockres_maybe_drop(struct fsd *fs, struct fsd_lockres *lr)
{
	struct fsd_glue *g = fs->glue;

	if (lr->private || lr->refs > 0 || lr->ro + lr->ex > 0 || (lr->flags & LR_IDLE))
		return;		/* a private one goes with lockres_private_free() */
	if (g == NULL) {
		lockres_unhash(fs, lr);
		pthread_cond_destroy(&lr->cv);
		free(lr);
		return;
	}
	lr->flags |= LR_IDLE;
	lr->idle_next = NULL;
	lr->idle_prev = g->idle_tail;
	if (g->idle_tail != NULL)
		g->idle_tail->idle_next = lr;
	else
		g->idle_head = lr;
	g->idle_tail = lr;
	if (++g->nidle > g->idle_max)
		pthread_cond_signal(&g->dc_cv);
}

void
lockres_ref(struct fsd *fs, struct fsd_lockres *lr)
{
	pthread_mutex_t *m = lockres_mutex(fs);

	pthread_mutex_lock(m);
	lr->refs++;
	pthread_mutex_unlock(m);
}

void
lockres_put(struct fsd *fs, struct fsd_lockres *lr)
{
	pthread_mutex_t *m = lockres_mutex(fs);

	pthread_mutex_lock(m);
	if (lr->refs > 0 && --lr->refs == 0)
		lockres_maybe_drop(fs, lr);
	pthread_mutex_unlock(m);
}

/* A lock resource of its own, outside the table (one per flock()ing file). */
struct fsd_lockres *
lockres_private(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno, uint32_t generation)
{
	struct fsd_lockres *lr = lockres_alloc(fs, type, blkno, generation, 0);

	lr->nocache = 1;
	lr->private = 1;
	return lr;
}

void
lockres_free_all(struct fsd *fs)
{
	struct fsd_lockres *lr, *n;
	unsigned h;

	if (fs->lockres_hash == NULL)
		return;
	for (h = 0; h < fs->lockres_nhash; h++)
		for (lr = fs->lockres_hash[h]; lr != NULL; lr = n) {
			n = lr->hnext;
			pthread_cond_destroy(&lr->cv);
			free(lr);
		}
	free(fs->lockres_hash);
	fs->lockres_hash = NULL;
	fs->lockres_nhash = fs->lockres_count = 0;
}

void
lockres_census(struct fsd *fs, struct lockres_census *lc)
{
	const struct fsd_lockres *lr;
	unsigned h;

	memset(lc, 0, sizeof(*lc));
	pthread_mutex_lock(lockres_mutex(fs));
	for (h = 0; fs->lockres_hash != NULL && h < fs->lockres_nhash; h++)
		for (lr = fs->lockres_hash[h]; lr != NULL; lr = lr->hnext) {
			lc->total++;
			lc->ex += lr->level == LKM_EX;
			lc->pr += lr->level == LKM_PR;
			lc->nl += lr->level == LKM_NL;
		}
	pthread_mutex_unlock(lockres_mutex(fs));
}


/* The oldest idle resource leaves the table: its lock goes next (drop_idle). */
struct fsd_lockres *
lockres_take_idle(struct fsd *fs)
{
	struct fsd_lockres *lr = fs->glue->idle_head;

	idle_remove(fs->glue, lr);
	lockres_unhash(fs, lr);
	return lr;
}

struct fsd_lockres *
sysinode_lockres(struct fsd *fs, uint64_t blkno)
{
	struct fsd_buf *b;
	uint32_t gen = 0;

	/* a system inode's generation never changes: no lock needed to read it */
	if (block_read(fs, blkno, BLK_INODE, &b) == 0) {
		gen = LE32(((const struct ocfs2_dinode *)b->data)->i_generation);
		block_put(fs, b);
	}
	return lockres_get(fs, FSD_LOCK_META, blkno, gen, blkno);
}
