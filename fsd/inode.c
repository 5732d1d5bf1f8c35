/*
 * In-memory inodes: one per inode block that FUSE knows about or that an
 * operation is using. Each carries its META lock resource, through which
 * every read or change of the inode block and its extent tree goes. The
 * inode block itself lives in the block cache, not here, so dropping a
 * cached block (another node changed it) is all it takes to refresh.
 * The lock types of an inode (META, RW, OPEN) are defined here, at the
 * end: what dlmglue.c does to an inode's cache when its lock comes down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "o2dlm.h"
#include "util.h"

#include "glue.h"
/* the kernel's cache of a file is dropped through FUSE (meta_invalidate) */
#include "ops.h"

/* buckets at first; the table grows as the kernel keeps more inodes (a huge directory's) */
#define ITABLE_HASH	4096

struct fsd_itable {
	pthread_mutex_t	  mtx;
	pthread_cond_t	  loaded;	/* an inode's loading or opening ended */
	pthread_rwlock_t  se_lock;	/* fs->se while a notification uses it */
	struct fsd_inode **hash;
	unsigned	  nhash;	/* a power of two */
	unsigned	  count;
};

int
itable_init(struct fsd *fs)
{
	fs->itable = xcalloc(1, sizeof(*fs->itable));
	fs->itable->nhash = ITABLE_HASH;
	fs->itable->hash = xcalloc(ITABLE_HASH, sizeof(*fs->itable->hash));
	pthread_mutex_init(&fs->itable->mtx, NULL);
	pthread_cond_init(&fs->itable->loaded, NULL);
	pthread_rwlock_init(&fs->itable->se_lock, NULL);
	return 0;
}

void
itable_destroy(struct fsd *fs)
{
	struct fsd_inode *ip, *n;
	unsigned i;

	if (fs->itable == NULL)
		return;
	for (i = 0; i < fs->itable->nhash; i++) {
		for (ip = fs->itable->hash[i]; ip != NULL; ip = n) {
			n = ip->hnext;
			dindex_free(ip->dindex);
			dxfree_free(ip->dxfree);
			pthread_mutex_destroy(&ip->dmtx);
			free(ip->kname);
			free(ip);
		}
	}
	pthread_mutex_destroy(&fs->itable->mtx);
	pthread_cond_destroy(&fs->itable->loaded);
	pthread_rwlock_destroy(&fs->itable->se_lock);
	free(fs->itable->hash);
	free(fs->itable);
	fs->itable = NULL;
}

static unsigned
ihash_in(uint64_t blkno, unsigned nhash)
{
	return (unsigned)((blkno * 0x9E3779B97F4A7C15ULL) >> 32) & (nhash - 1);
}

/* The bucket of blkno's inode. itable mutex held. */
static struct fsd_inode **
ibucket(struct fsd_itable *t, uint64_t blkno)
{
	return &t->hash[ihash_in(blkno, t->nhash)];
}

/* Four times the buckets once chains average two inodes: lookups stay O(1). itable mutex held. */
static void
itable_grow(struct fsd_itable *t)
{
	unsigned i, nn = t->nhash * 4;
	struct fsd_inode **nh, *ip, *n;

	if (t->count < 2 * t->nhash || nn < t->nhash)
		return;
	nh = xcalloc(nn, sizeof(*nh));
	for (i = 0; i < t->nhash; i++)
		for (ip = t->hash[i]; ip != NULL; ip = n) {
			n = ip->hnext;
			ip->hnext = nh[ihash_in(ip->blkno, nn)];
			nh[ihash_in(ip->blkno, nn)] = ip;
		}
	free(t->hash);
	t->hash = nh;
	t->nhash = nn;
}

uint64_t
fsd_ino_to_blkno(struct fsd *fs, uint64_t ino)
{
	return ino == 1 ? fs->root_blkno : ino;
}

uint64_t
fsd_blkno_to_ino(struct fsd *fs, uint64_t blkno)
{
	/* Block 1 is the OCFS1 label, never an inode, so 1 is free for the root. */
	return blkno == fs->root_blkno ? 1 : blkno;
}

/* Unlink and free an inode nobody refers to. itable mutex held. */
static void
inode_maybe_free(struct fsd *fs, struct fsd_inode *ip)
{
	struct fsd_inode **pp;

	if (ip->pins != 0 || ip->nlookup != 0)
		return;
	for (pp = ibucket(fs->itable, ip->blkno); *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == ip) {
			*pp = ip->hnext;
			break;
		}
	}
	fs->itable->count--;
	/* its locks leave dlmd once nobody holds them (OCFS2 drops them at clear_inode) */
	lockres_put(fs, ip->meta);
	if (ip->open_lock != NULL)
		lockres_put(fs, ip->open_lock);
	if (ip->rw != NULL)
		lockres_put(fs, ip->rw);
	dindex_free(ip->dindex);
	dxfree_free(ip->dxfree);
	pthread_mutex_destroy(&ip->dmtx);
	free(ip->kname);
	free(ip);
}

/* System files (named with their generation in lock names) of this volume. */
static int
is_system_inode(struct fsd *fs, uint64_t blkno)
{
	unsigned i;

	if (blkno == fs->sysdir_blkno || blkno == fs->global_bitmap ||
	    blkno == fs->global_inode_alloc || blkno == fs->slot_map)
		return 1;
	for (i = 0; fs->slots != NULL && i < fs->vol.max_slots; i++)
		if (blkno == fs->slots[i].journal || blkno == fs->slots[i].local_alloc ||
		    blkno == fs->slots[i].truncate_log || blkno == fs->slots[i].orphan_dir ||
		    blkno == fs->slots[i].inode_alloc || blkno == fs->slots[i].extent_alloc)
			return 1;
	return 0;
}

/*
 * A new in-memory inode whose generation its creator reads first: until
 * then (loaded) nobody else may use it, as every request from the kernel
 * compares that generation with the block's. The table's mutex held.
 */
static void
itable_wait_loaded(struct fsd_itable *t, struct fsd_inode *ip)
{
	while (ip->loading)
		pthread_cond_wait(&t->loaded, &t->mtx);
}

static void
itable_loaded(struct fsd *fs, struct fsd_inode *ip, uint32_t generation)
{
	pthread_mutex_lock(&fs->itable->mtx);
	ip->generation = generation;
	ip->loading = 0;
	pthread_cond_broadcast(&fs->itable->loaded);
	pthread_mutex_unlock(&fs->itable->mtx);
}

/* The in-memory inode, pinned, if there is one; loaded first if wait. */
static struct fsd_inode *
itable_find(struct fsd *fs, uint64_t blkno, int wait)
{
	struct fsd_inode *ip;

	pthread_mutex_lock(&fs->itable->mtx);
	for (ip = *ibucket(fs->itable, blkno); ip != NULL; ip = ip->hnext)
		if (ip->blkno == blkno) {
			ip->pins++;
			if (wait)
				itable_wait_loaded(fs->itable, ip);
			break;
		}
	pthread_mutex_unlock(&fs->itable->mtx);
	return ip;
}

/*
 * Find or add the in-memory inode, pinned; *created when it is new, and
 * then loading until itable_loaded if so asked.
 */
static struct fsd_inode *
itable_add(struct fsd *fs, uint64_t blkno, uint32_t gen, uint32_t lockgen, int loading,
    int *created)
{
	struct fsd_itable *t = fs->itable;
	struct fsd_inode *ip;

	*created = 0;
	pthread_mutex_lock(&t->mtx);
	for (ip = *ibucket(t, blkno); ip != NULL; ip = ip->hnext)
		if (ip->blkno == blkno)
			break;
	if (ip == NULL) {
		itable_grow(t);
		ip = xcalloc(1, sizeof(*ip));
		ip->blkno = blkno;
		ip->generation = gen;
		ip->loading = loading;
		ip->meta = lockres_get(fs, FSD_LOCK_META, blkno, lockgen, blkno);
		pthread_mutex_init(&ip->dmtx, NULL);
		ip->hnext = *ibucket(t, blkno);
		*ibucket(t, blkno) = ip;
		t->count++;
		*created = 1;
	}
	ip->pins++;
	if (!*created)
		itable_wait_loaded(t, ip);
	pthread_mutex_unlock(&t->mtx);
	return ip;
}

int
inode_get(struct fsd *fs, uint64_t blkno, struct fsd_inode **ipp)
{
	struct fsd_inode *ip;
	struct fsd_buf *b;
	uint32_t gen = 0;
	int rc, created;

	*ipp = NULL;
	if ((ip = itable_find(fs, blkno, 1)) != NULL) {
		*ipp = ip;
		return 0;
	}
	if (is_system_inode(fs, blkno)) {
		/* dlmglue names their META locks with the generation, which never changes */
		if ((rc = block_read(fs, blkno, BLK_INODE, &b)) != 0)
			return rc;
		gen = LE32(((const struct ocfs2_dinode *)b->data)->i_generation);
		block_put(fs, b);
		*ipp = itable_add(fs, blkno, gen, gen, 0, &created);
		return 0;
	}
	/*
	 * Others' META locks are named with generation 0: lock first, then
	 * read the block once, to refuse garbage before FUSE sees an inode
	 * number (and, in a cluster, to read what its last writer left).
	 */
	ip = itable_add(fs, blkno, 0, 0, 1, &created);
	if (!created) {
		*ipp = ip;
		return 0;
	}
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &b)) != 0) {
		itable_loaded(fs, ip, 0);
		inode_put(fs, ip);
		return rc;
	}
	gen = LE32(((const struct ocfs2_dinode *)b->data)->i_generation);
	inode_unlock_block(fs, ip, LKM_PR, b);
	itable_loaded(fs, ip, gen);
	*ipp = ip;
	return 0;
}

struct fsd_inode *
inode_find(struct fsd *fs, uint64_t blkno)
{
	return itable_find(fs, blkno, 0);
}

void
inode_put(struct fsd *fs, struct fsd_inode *ip)
{
	if (ip == NULL)
		return;
	pthread_mutex_lock(&fs->itable->mtx);
	ip->pins--;
	inode_maybe_free(fs, ip);
	pthread_mutex_unlock(&fs->itable->mtx);
}

/* The OPEN lock (cluster only). itable mutex held. */
static void
open_lock_get(struct fsd *fs, struct fsd_inode *ip)
{
	if (ip->open_lock == NULL && fs->glue != NULL) {
		ip->open_lock = lockres_get(fs, FSD_LOCK_OPEN, ip->blkno, 0, 0);
		ip->open_lock->nocache = 1;
	}
}

void
inode_check_generation(struct fsd *fs, struct fsd_inode *ip, uint32_t generation)
{
	struct fsd_lockres *rw = NULL;

	pthread_mutex_lock(&fs->itable->mtx);
	if (ip->generation != generation && ip->opens == 0) {
		ip->generation = generation;
		/* another file's reads, and links */
		__atomic_store_n(&ip->atime_moved_ms, 0, __ATOMIC_RELAXED);
		ip->unlinked_here = 0;
		rw = ip->rw;
		ip->rw = NULL;
	}
	pthread_mutex_unlock(&fs->itable->mtx);
	if (rw != NULL)
		lockres_put(fs, rw);
}

/*
 * Also without a cluster: it keeps the steps of one change to a file's
 * data and allocation (an O_DIRECT append's three handles, a fallocate)
 * from interleaving with another's, as the kernel's i_rwsem does.
 */
int
inode_rw_lock(struct fsd *fs, struct fsd_inode *ip, int level)
{
	pthread_mutex_lock(&fs->itable->mtx);
	if (ip->rw == NULL)
		ip->rw = lockres_get(fs, FSD_LOCK_RW, ip->blkno, ip->generation, 0);
	pthread_mutex_unlock(&fs->itable->mtx);
	return lockres_lock(fs, ip->rw, level);
}

void
inode_rw_unlock(struct fsd *fs, struct fsd_inode *ip, int level)
{
	if (ip->rw != NULL)
		lockres_unlock(fs, ip->rw, level);
}

/*
 * An open waits for a deletion under way here; one of what it deleted
 * fails at once. Else it would count as open until its OPEN lock showed
 * the inode gone, and while counted, the new inode in that block (one
 * FUSE node id for both) could not take its generation: every request
 * for it would fail with ESTALE meanwhile.
 */
static void
deleting_end(struct fsd *fs, struct fsd_inode *ip, uint32_t deleted)
{
	pthread_mutex_lock(&fs->itable->mtx);
	ip->deleting = 0;
	if (deleted != 0)
		ip->deleted_gen = deleted;
	pthread_cond_broadcast(&fs->itable->loaded);
	pthread_mutex_unlock(&fs->itable->mtx);
}

int
inode_try_delete_lock(struct fsd *fs, struct fsd_inode *ip)
{
	int rc;

	pthread_mutex_lock(&fs->itable->mtx);
	open_lock_get(fs, ip);
	rc = ip->opens > 0 || ip->deleting ? -EAGAIN : 0;
	ip->deleting = rc == 0;
	pthread_mutex_unlock(&fs->itable->mtx);
	if (rc == 0 && ip->open_lock != NULL &&
	    (rc = lockres_lock_flags(fs, ip->open_lock, LKM_EX, LKF_TRY)) != 0)
		deleting_end(fs, ip, 0);
	return rc;
}

void
inode_delete_unlock(struct fsd *fs, struct fsd_inode *ip, uint32_t deleted)
{
	if (ip->open_lock != NULL)
		lockres_unlock(fs, ip->open_lock, LKM_EX);
	deleting_end(fs, ip, deleted);
}

int
inode_open(struct fsd *fs, struct fsd_inode *ip)
{
	struct fsd_buf *b;
	int first, rc;

	pthread_mutex_lock(&fs->itable->mtx);
	while (ip->deleting)
		pthread_cond_wait(&fs->itable->loaded, &fs->itable->mtx);
	if (ip->deleted_gen != 0 && ip->deleted_gen == ip->generation) {
		pthread_mutex_unlock(&fs->itable->mtx);
		return -ESTALE;
	}
	ip->pins++;
	open_lock_get(fs, ip);
	/* a second open is safe only once the first has the OPEN lock */
	while (ip->opening)
		pthread_cond_wait(&fs->itable->loaded, &fs->itable->mtx);
	first = ip->opens++ == 0;
	ip->opening = first && ip->open_lock != NULL;
	pthread_mutex_unlock(&fs->itable->mtx);
	if (!first || ip->open_lock == NULL)
		return 0;
	/*
	 * Another node may have deleted it after our caller saw it and
	 * before the OPEN lock came: then it is not ours to open (ESTALE,
	 * and the kernel looks the name up again), as ocfs2_file_open
	 * refuses an inode wiped meanwhile.
	 */
	if ((rc = lockres_lock(fs, ip->open_lock, LKM_PR)) == 0) {
		if ((rc = inode_lock_kernel(fs, ip, LKM_PR, &b)) == 0)
			inode_unlock_block(fs, ip, LKM_PR, b);
		else
			lockres_unlock(fs, ip->open_lock, LKM_PR);
	}
	pthread_mutex_lock(&fs->itable->mtx);
	ip->opening = 0;
	if (rc != 0) {
		ip->opens--;
		ip->pins--;
	}
	pthread_cond_broadcast(&fs->itable->loaded);
	pthread_mutex_unlock(&fs->itable->mtx);
	return rc;
}

void
inode_close(struct fsd *fs, struct fsd_inode *ip)
{
	int last, forgotten, unlinked_here;

	pthread_mutex_lock(&fs->itable->mtx);
	last = --ip->opens == 0;
	forgotten = ip->nlookup == 0;
	unlinked_here = ip->unlinked_here;
	pthread_mutex_unlock(&fs->itable->mtx);
	if (last && ip->open_lock != NULL)
		lockres_unlock(fs, ip->open_lock, LKM_PR);
	/*
	 * The last close deletes an orphan when another node may have
	 * unlinked it meanwhile (our kernel then has no reason to forget
	 * it), or when the kernel's FORGET came first (FUSE sends RELEASE
	 * asynchronously) and found it still open.
	 */
	if (last && ((ip->open_lock != NULL && !unlinked_here) || forgotten) &&
	    fs->journal != NULL)
		orphan_wipe(fs, ip->blkno);
	inode_put(fs, ip);
}

int
inode_is_open(struct fsd *fs, struct fsd_inode *ip)
{
	int open;

	pthread_mutex_lock(&fs->itable->mtx);
	open = ip->opens > 0;
	pthread_mutex_unlock(&fs->itable->mtx);
	return open;
}

int
inode_lookup_ref(struct fsd *fs, struct fsd_inode *ip)
{
	int first;

	pthread_mutex_lock(&fs->itable->mtx);
	first = ip->nlookup++ == 0;
	pthread_mutex_unlock(&fs->itable->mtx);
	return first;
}

/*
 * Known to keep a link: no other node can have changed the inode since
 * (ours would have had to come down from the level it was read at).
 * Like ocfs2's OCFS2_INODE_MAYBE_ORPHANED (fs/ocfs2/inode.c,
 * ocfs2_evict_inode), it spares the final forget of a linked inode the
 * read of its block, which at a million forgotten inodes is a million
 * disk reads. itable mutex held.
 */
static int
still_linked(const struct fsd_inode *ip)
{
	return ip->linked_at != 0 &&
	    ip->linked_at == __atomic_load_n(&ip->meta->downconverts, __ATOMIC_ACQUIRE) + 1;
}

void
inode_note_linked(struct fsd *fs, struct fsd_inode *ip, const struct ocfs2_dinode *di)
{
	unsigned long at = 0;

	if (LE16(di->i_links_count) != 0 && !(LE32(di->i_flags) & OCFS2_ORPHANED_FL))
		at = __atomic_load_n(&ip->meta->downconverts, __ATOMIC_ACQUIRE) + 1;
	pthread_mutex_lock(&fs->itable->mtx);
	ip->linked_at = at;
	pthread_mutex_unlock(&fs->itable->mtx);
}

void
inode_note_unlinked(struct fsd *fs, struct fsd_inode *ip, int orphaned)
{
	pthread_mutex_lock(&fs->itable->mtx);
	ip->linked_at = 0;
	if (orphaned)
		ip->unlinked_here = 1;
	pthread_mutex_unlock(&fs->itable->mtx);
}

int
inode_forget(struct fsd *fs, uint64_t blkno, uint64_t n)
{
	struct fsd_inode *ip;
	int gone = 0;

	pthread_mutex_lock(&fs->itable->mtx);
	for (ip = *ibucket(fs->itable, blkno); ip != NULL; ip = ip->hnext) {
		if (ip->blkno != blkno)
			continue;
		ip->nlookup = n > ip->nlookup ? 0 : ip->nlookup - n;
		gone = ip->nlookup == 0 && !still_linked(ip);
		inode_maybe_free(fs, ip);
		break;
	}
	pthread_mutex_unlock(&fs->itable->mtx);
	return gone;
}

int
inode_lock_block_flags(struct fsd *fs, struct fsd_inode *ip, int level, unsigned lkf,
    struct fsd_buf **bp)
{
	int rc;

#ifdef FSD_LOCK_CHECKS
	/* past handle_serialize only system files' locks, and an orphan's in its deletion */
	if (handle_serialized_here() && !(lkf & LKF_ORPHAN) && !is_system_inode(fs, ip->blkno))
		fatalx("inode %llu: its lock asked for after the allocators' (handle_serialize): "
		    "the lock order (fsd/ops_namei.c) puts it before them",
		    (unsigned long long)ip->blkno);
#endif
	if ((rc = lockres_lock_flags(fs, ip->meta, level, lkf)) != 0)
		return rc;
	if ((rc = block_read(fs, ip->blkno, BLK_INODE, bp)) != 0) {
		lockres_unlock(fs, ip->meta, level);
		return rc;
	}
	return 0;
}

int
inode_lock_block(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf **bp)
{
	return inode_lock_block_flags(fs, ip, level, 0, bp);
}

/*
 * FUSE names an inode by its block number alone, and this node holds no
 * lock for an inode the kernel merely knows (the kernel's OCFS2 keeps the
 * OPEN lock of every in-core inode; fsd only of open ones), so another
 * node may delete it and allocate the block again meanwhile. The
 * generation tells the two apart: ip->generation is the one the kernel
 * was last told (fsd_make_entry).
 */
int
inode_lock_kernel(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf **bp)
{
	int rc;

	if ((rc = inode_lock_block(fs, ip, level, bp)) != 0)
		return rc;
	if (LE32(((const struct ocfs2_dinode *)(*bp)->data)->i_generation) != ip->generation) {
		inode_unlock_block(fs, ip, level, *bp);
		return -ESTALE;
	}
	return 0;
}

int
inode_lock_read(struct fsd *fs, struct fsd_inode *ip, int want, int *level)
{
	int rc;

	*level = want;
	if (want == LKM_EX &&
	    (rc = lockres_lock_flags(fs, ip->meta, LKM_EX, LKF_NOFLUSHWAIT)) != -EAGAIN)
		return rc;
	*level = LKM_PR;
	return lockres_lock(fs, ip->meta, LKM_PR);
}

int
inode_lock_block_read(struct fsd *fs, struct fsd_inode *ip, int want, int *level,
    struct fsd_buf **bp)
{
	int rc;

	if ((rc = inode_lock_read(fs, ip, want, level)) != 0)
		return rc;
	if ((rc = block_read(fs, ip->blkno, BLK_INODE, bp)) != 0)
		lockres_unlock(fs, ip->meta, *level);
	return rc;
}

int
inode_stat(struct fsd *fs, struct fsd_inode *ip, struct stat *st)
{
	struct fsd_buf *b;
	int rc, level;

	/* the kernel's GETATTR before a READ: it may take the READ's level */
	if ((rc = inode_lock_read(fs, ip, inode_read_level(fs, ip), &level)) != 0)
		return rc;
	if (meta_lvb_stat(fs, ip->meta, ip->generation, st) != 0 &&
	    (rc = block_read(fs, ip->blkno, BLK_INODE, &b)) == 0) {
		/* as inode_lock_kernel: the kernel asks for the inode it knows */
		if (LE32(((const struct ocfs2_dinode *)b->data)->i_generation) != ip->generation)
			rc = -ESTALE;
		else
			inode_to_stat(fs, (const struct ocfs2_dinode *)b->data, st);
		block_put(fs, b);
	}
	lockres_unlock(fs, ip->meta, level);
	return rc;
}

void
inode_unlock_block(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf *b)
{
	block_put(fs, b);
	lockres_unlock(fs, ip->meta, level);
}

void
inode_unlock_block_in(struct fsd_handle *h, struct fsd_inode *ip, struct fsd_buf *b)
{
	block_put(h->fs, b);
	handle_hold(h, ip->meta);
}

void
inode_to_stat(struct fsd *fs, const struct ocfs2_dinode *di, struct stat *st)
{
	uint16_t mode = LE16(di->i_mode);
	uint64_t dev;
	unsigned nlink;

	memset(st, 0, sizeof(*st));
	st->st_ino = LE64(di->i_blkno);
	st->st_mode = mode;
	nlink = LE16(di->i_links_count);
	if (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS)
		nlink |= (unsigned)LE16(di->i_links_count_hi) << 16;
	st->st_nlink = nlink;
	st->st_uid = LE32(di->i_uid);
	st->st_gid = LE32(di->i_gid);
	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		/* the kernel's huge_decode_dev */
		dev = LE64(di->id1.dev1.i_rdev);
		st->st_rdev = makedev((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00));
	}
	st->st_size = (off_t)LE64(di->i_size);
	/* Like ocfs2_getattr: allocation in 512-byte units, I/O size = cluster. */
	st->st_blocks = (blkcnt_t)((uint64_t)LE32(di->i_clusters) << (fs->cbits - 9));
	st->st_blksize = fs->vol.cluster_bytes;
	st->st_atim.tv_sec = (time_t)LE64(di->i_atime);
	st->st_atim.tv_nsec = LE32(di->i_atime_nsec);
	st->st_mtim.tv_sec = (time_t)LE64(di->i_mtime);
	st->st_mtim.tv_nsec = LE32(di->i_mtime_nsec);
	st->st_ctim.tv_sec = (time_t)LE64(di->i_ctime);
	st->st_ctim.tv_nsec = LE32(di->i_ctime_nsec);
}

/* ---- access times -------------------------------------------------------- */

static int
time_cmp(uint64_t as, uint32_t ans, uint64_t bs, uint32_t bns)
{
	if (as != bs)
		return as < bs ? -1 : 1;
	if (ans != bns)
		return ans < bns ? -1 : 1;
	return 0;
}

/*
 * Are mtime and ctime of the current tick of the coarse clock? Linux
 * stamps a write with current_time(), that clock (a few ms a tick), and
 * skips the update when the inode has that time already (fs/inode.c,
 * inode_needs_update_time); ocfs2 stores the same value again at each
 * write_end (fs/ocfs2/aops.c, ocfs2_write_end_nolock). fsd stamps with
 * the fine clock (inode_now), so the times of a write are current when
 * they lie between the start of this tick and now: a later write of the
 * same tick shows the same times, as on Linux. The coarse clock may be
 * more than a tick behind the fine one (a late tick), hence now as the
 * end; a clock set back leaves the times in the future: not current.
 */
static int
time_between(uint64_t sec, uint32_t nsec, const struct timespec *from, const struct timespec *to)
{
	return time_cmp(sec, nsec, (uint64_t)from->tv_sec, (uint32_t)from->tv_nsec) >= 0 &&
	    time_cmp(sec, nsec, (uint64_t)to->tv_sec, (uint32_t)to->tv_nsec) <= 0;
}

int
inode_mctime_current(const struct ocfs2_dinode *di)
{
	struct timespec tick, now;

	if (clock_gettime(CLOCK_REALTIME_COARSE, &tick) != 0 ||
	    clock_gettime(CLOCK_REALTIME, &now) != 0)
		return 0;
	return time_between(LE64(di->i_mtime), LE32(di->i_mtime_nsec), &tick, &now) &&
	    time_between(LE64(di->i_ctime), LE32(di->i_ctime_nsec), &tick, &now);
}

int
inode_atime_due(struct fsd *fs, const struct ocfs2_dinode *di, const struct timespec *now)
{
	uint64_t as = LE64(di->i_atime);
	uint32_t ans = LE32(di->i_atime_nsec);
	int64_t age = (int64_t)((uint64_t)now->tv_sec - as);

	if (fs->readonly)
		return 0;
	switch (fs->opts.atime) {
	case FSD_NOATIME:
		return 0;
	case FSD_STRICTATIME:
		/* ocfs2's atime_quantum: each update costs an EX cluster lock */
		return age > (int64_t)fs->opts.atime_quantum;
	case FSD_RELATIME:
		break;
	}
	/* Linux's relatime: once after each change, and at least daily */
	if (time_cmp(as, ans, LE64(di->i_mtime), LE32(di->i_mtime_nsec)) <= 0 ||
	    time_cmp(as, ans, LE64(di->i_ctime), LE32(di->i_ctime_nsec)) <= 0)
		return 1;
	return age >= 24 * 60 * 60;
}

/*
 * Under relatime a file written on one node and read on another moves
 * atime at each read: PR for the read, then EX for atime, two requests
 * to dlmd and two handoffs from the writer (EX to PR, PR to NL) where
 * one does. So for a while after a READ here moved atime, a read that
 * must ask dlmd anyway asks for EX at once. A while, not a count of
 * reads: a write in the clock tick of the write before leaves mtime, and
 * so atime, as they were (inode_mctime_current), so reads faster than
 * the tick find atime not due however often the file is written. The
 * guess lasts ATIME_GUESS_TICKS ticks of the coarse clock after the last
 * read that moved atime. Only while the file is open here (a stat of a
 * file nobody reads here keeps PR) and the lock not held here: a cached
 * PR is not given up for a guess.
 */
#define ATIME_GUESS_TICKS	3

static uint64_t
atime_guess_ms(void)
{
	static uint64_t ms;
	struct timespec res;

	if (__atomic_load_n(&ms, __ATOMIC_RELAXED) == 0) {
		if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0)
			res.tv_nsec = 4000000;
		__atomic_store_n(&ms, ATIME_GUESS_TICKS * ((res.tv_nsec + 999999) / 1000000),
		    __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&ms, __ATOMIC_RELAXED);
}

int
inode_read_level(struct fsd *fs, struct fsd_inode *ip)
{
	uint64_t moved = __atomic_load_n(&ip->atime_moved_ms, __ATOMIC_RELAXED);
	int open;

	if (fs->readonly || fs->opts.atime == FSD_NOATIME || moved == 0 ||
	    now_ms() - moved >= atime_guess_ms() || lockres_granted(ip->meta, LKM_PR))
		return LKM_PR;
	pthread_mutex_lock(&fs->itable->mtx);
	open = ip->opens > 0;
	pthread_mutex_unlock(&fs->itable->mtx);
	return open ? LKM_EX : LKM_PR;
}

void
inode_read_moved_atime(struct fsd_inode *ip)
{
	__atomic_store_n(&ip->atime_moved_ms, now_ms(), __ATOMIC_RELAXED);
}

void
inode_touch_atime(struct fsd *fs, struct fsd_inode *ip)
{
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct timespec now;
	struct fsd_buf *b;
	int rc;

	if ((rc = journal_start(fs, &h)) != 0)
		goto fail;
	/*
	 * The READ holds its pages locked: behind a flush of them (another
	 * node wants the file) the access time waits for the next read.
	 */
	if ((rc = inode_lock_block_flags(fs, ip, LKM_EX, LKF_NOFLUSHWAIT, &b)) != 0) {
		journal_stop(&h, 1);
		if (rc == -EAGAIN)
			return;
		goto fail;
	}
	di = (struct ocfs2_dinode *)b->data;
	clock_gettime(CLOCK_REALTIME, &now);
	/* another reader may have been first */
	if (inode_atime_due(fs, di, &now) && (rc = journal_access(&h, b)) == 0) {
		di->i_atime = htole64((uint64_t)now.tv_sec);
		di->i_atime_nsec = htole32((uint32_t)now.tv_nsec);
		journal_dirty(&h, b);
	}
	inode_unlock_block_in(&h, ip, b);
	if (journal_stop(&h, rc != 0) != 0 && rc == 0)
		rc = -EIO;
	if (rc == 0)
		return;
fail:
	/* the read itself went well: it does not fail for its atime */
	log_warnx("inode %llu: atime not updated: %s", (unsigned long long)ip->blkno,
	    strerror(-rc));
}

/* ---- creating and wiping inodes (inside a handle) ------------------------ */

static uint32_t next_generation;

uint32_t
fsd_new_generation(void)
{
	uint32_t seed;
	struct timespec ts;

	if (__atomic_load_n(&next_generation, __ATOMIC_RELAXED) == 0) {
		/* like the kernel's per-mount random seed for NFS generations */
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint32_t)(ts.tv_nsec ^ (ts.tv_sec << 12) ^ getpid()) | 1;
		__atomic_compare_exchange_n(&next_generation, &(uint32_t){ 0 }, seed, 0,
		    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	return __atomic_add_fetch(&next_generation, 1, __ATOMIC_RELAXED);
}

void
inode_now(struct ocfs2_dinode *di, int atime, int mtime, int ctime)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (atime) {
		di->i_atime = htole64((uint64_t)ts.tv_sec);
		di->i_atime_nsec = htole32((uint32_t)ts.tv_nsec);
	}
	if (mtime) {
		di->i_mtime = htole64((uint64_t)ts.tv_sec);
		di->i_mtime_nsec = htole32((uint32_t)ts.tv_nsec);
	}
	if (ctime) {
		di->i_ctime = htole64((uint64_t)ts.tv_sec);
		di->i_ctime_nsec = htole32((uint32_t)ts.tv_nsec);
	}
}

int
inode_create(struct fsd_handle *h, unsigned mode, uint32_t uid, uint32_t gid, uint64_t rdev,
    struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct fsd_lockres *lr;
	struct ocfs2_dinode *di;
	struct fsd_subbit sb;
	int rc;

	if ((rc = suballoc_claim(h, SUBALLOC_INODE, &sb)) != 0)
		return rc;
	/*
	 * Its META lock, EX until the handle ends, before anything of it is
	 * cached, as ocfs2_create_new_inode_locks takes it: a node that kept
	 * the lock of the inode last freed in this block (named without a
	 * generation, as the kernel's) gives it up now, writing home what
	 * its journal holds of the old inode and forgetting what it cached,
	 * instead of serving the old inode for the new one later. Not if a
	 * dead node held it: waiting for its recovery inside a handle that
	 * may hold the global bitmap's lock (our allocator grew) stops that
	 * recovery (doc/allocation.md).
	 */
	lr = lockres_get(fs, FSD_LOCK_META, sb.blkno, 0, sb.blkno);
	rc = handle_lock_or_restart(h, lr, LKF_NORECOWAIT);
	lockres_put(fs, lr);
	if (rc != 0)
		return rc;
	if ((rc = block_new(fs, sb.blkno, BLK_INODE, bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	di = (struct ocfs2_dinode *)(*bp)->data;
	memcpy(di->i_signature, OCFS2_INODE_SIGNATURE, sizeof(OCFS2_INODE_SIGNATURE));
	di->i_generation = htole32(fsd_new_generation());
	di->i_suballoc_slot = htole16(sb.slot);
	di->i_suballoc_bit = htole16(sb.bit);
	di->i_suballoc_loc = htole64(sb.group);
	di->i_links_count = htole16(S_ISDIR(mode) ? 2 : 1);
	di->i_uid = htole32(uid);
	di->i_gid = htole32(gid);
	di->i_mode = htole16((uint16_t)mode);
	di->i_flags = htole32(OCFS2_VALID_FL);
	di->i_blkno = htole64(sb.blkno);
	di->i_fs_generation = htole32(fs->fs_generation);
	inode_now(di, 1, 1, 1);
	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		/* the kernel's huge_encode_dev */
		unsigned maj = major(rdev), min = minor(rdev);

		di->id1.dev1.i_rdev = htole64((min & 0xff) | (maj << 8) |
		    ((uint64_t)(min & ~0xffu) << 12));
	}
	if (!S_ISLNK(mode))
		di->id2.i_list.l_count = htole16(ocfs2_extent_recs_per_inode(fs->vol.block_bytes));
	journal_dirty(h, *bp);
	if ((rc = quota_charge(h, di, sb.blkno, 0, 1)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	return 0;
}

int
inode_wipe(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	unsigned slot = LE16(di->i_suballoc_slot);
	uint64_t group = LE64(di->i_suballoc_loc);
	uint16_t bit = LE16(di->i_suballoc_bit);
	struct timespec ts;
	int rc;

	if (LE32(di->i_clusters) != 0 || LE64(di->i_xattr_loc) != 0 || slot >= fs->vol.max_slots) {
		fsd_corrupt(fs, ib->blkno, "wiping an inode that still holds clusters, an xattr "
		    "block, or has an impossible slot");
		return -EIO;
	}
	if (group == 0)
		group = ib->blkno - bit;
	if ((rc = suballoc_free(h, fs->slots[slot].inode_alloc, group, bit)) != 0)
		return rc;
	if ((rc = journal_access(h, ib)) != 0 || (rc = quota_charge(h, di, ib->blkno, 0, -1)) != 0)
		return rc;
	/* as ocfs2_wipe_inode leaves it: not VALID, dtime set, no links */
	clock_gettime(CLOCK_REALTIME, &ts);
	di->i_flags = htole32(LE32(di->i_flags) & ~(OCFS2_VALID_FL | OCFS2_ORPHANED_FL));
	di->i_dtime = htole64((uint64_t)ts.tv_sec);
	di->i_links_count = 0;
	journal_dirty(h, ib);
	/* Nobody may read this block as an inode again until reallocated. */
	return 0;
}

void
inode_drop_dindex(struct fsd *fs, uint64_t blkno)
{
	struct fsd_inode *ip;

	if ((ip = inode_find(fs, blkno)) == NULL)
		return;
	pthread_mutex_lock(&ip->dmtx);
	dindex_free(ip->dindex);
	ip->dindex = NULL;
	dxfree_free(ip->dxfree);
	ip->dxfree = NULL;
	pthread_mutex_unlock(&ip->dmtx);
	inode_put(fs, ip);
}

void
inode_session_gone(struct fsd *fs)
{
	if (fs->itable == NULL) {
		fs->se = NULL;
		return;
	}
	pthread_rwlock_wrlock(&fs->itable->se_lock);
	fs->se = NULL;
	pthread_rwlock_unlock(&fs->itable->se_lock);
}

struct fuse_session *
inode_session_get(struct fsd *fs)
{
	pthread_rwlock_rdlock(&fs->itable->se_lock);
	return fs->se;
}

void
inode_session_put(struct fsd *fs)
{
	pthread_rwlock_unlock(&fs->itable->se_lock);
}

/* The kernel's dentry of directory blkno is name in parent: drop (if asked) the one it had. */
static void
dir_kname_set(struct fsd *fs, uint64_t blkno, uint64_t parent, const char *name, size_t len,
    int drop)
{
	struct fsd_inode *ip;
	uint64_t oldparent = 0;
	char *old = NULL;

	if (fs->glue == NULL || (ip = inode_find(fs, blkno)) == NULL)
		return;
	pthread_mutex_lock(&fs->itable->mtx);
	if (ip->kname == NULL || ip->kparent != parent || strlen(ip->kname) != len ||
	    memcmp(ip->kname, name, len) != 0) {
		old = ip->kname;
		oldparent = ip->kparent;
		ip->kparent = parent;
		ip->kname = xmalloc(len + 1);
		memcpy(ip->kname, name, len);
		ip->kname[len] = '\0';
	}
	pthread_mutex_unlock(&fs->itable->mtx);
	/* within one directory the kernel moves the dentry without a fight */
	if (drop && old != NULL && oldparent != parent)
		glue_drop_dentry(fs->glue, blkno, oldparent, old, strlen(old));
	free(old);
	inode_put(fs, ip);
}

void
inode_dir_named(struct fsd *fs, uint64_t blkno, uint64_t parent, const char *name, size_t len)
{
	dir_kname_set(fs, blkno, parent, name, len, 1);
}

void
inode_dir_renamed(struct fsd *fs, uint64_t blkno, uint64_t parent, const char *name)
{
	dir_kname_set(fs, blkno, parent, name, strlen(name), 0);
}

/*
 * Long enough for the inval thread on a loaded machine; short, as it may
 * wait for a directory lock that the kernel holds while it waits for the
 * lookup that waits here (a rename on this node).
 */
#define DENTRY_DROP_WAIT_MS	1000

void
inode_dir_wait_named(struct fsd *fs, uint64_t blkno)
{
	if (fs->glue != NULL)
		glue_wait_dentry_drops(fs->glue, blkno, DENTRY_DROP_WAIT_MS);
}

void
inode_drop_dentry(struct fsd *fs, uint64_t parent, const char *name)
{
	struct fuse_session *se;

	if ((se = inode_session_get(fs)) != NULL)
		fuse_lowlevel_notify_inval_entry(se, fsd_blkno_to_ino(fs, parent), name,
		    strlen(name));
	inode_session_put(fs);
}

/* ---- an inode's cluster locks (ocfs2's inode, rw and open lock ops) ---- */

/* Another node may have changed the inode, its tree and, for a directory, its names. */
static void
meta_refresh(struct fsd *fs, struct fsd_lockres *lr)
{
	if (lr->owner == 0)
		return;
	block_forget_owner(fs, lr->owner);
	inode_drop_dindex(fs, lr->owner);
}

/* The journal holds the changes made under EX: home before another node reads them. */
static int
meta_write_home(struct fsd *fs, struct fsd_lockres *lr)
{
	return journal_write_home(fs, lr);
}

/* ocfs2_set_meta_lvb: the inode as we leave it. */
static void
meta_set_lvb(struct fsd *fs, struct fsd_lockres *lr, uint8_t *lvb)
{
	struct fsd_buf *b;

	memset(lvb, 0, DLMC_LVB_LEN);
	if (lr->owner == 0 || block_read(fs, lr->owner, BLK_INODE, &b) != 0)
		return;
	meta_lvb_pack((const struct ocfs2_dinode *)b->data, lvb);
	block_put(fs, b);
}

/*
 * Must the kernel's pages of lr's file go back and out before lr comes
 * down to target? Leaving EX, always: a page written through a shared
 * mapping reaches us only when the kernel writes it back, and it may be
 * dirtied under EX alone (READs take EX while the file is open for
 * writing here, lockres_read_level). Going to NL, so that this node's
 * mappings see the other node's writes; but not while the file is open
 * for writing here, where a write(2) may hold pages locked while it waits
 * for EX, which the other node has first: no page can be dirty then (they
 * all went at the last EX), and the kernel drops them afterwards
 * (meta_invalidate, queued by the downconvert).
 */
static int
meta_needs_flush(const struct fsd_lockres *lr, int target)
{
	return lr->pages && lr->owner != 0 &&
	    (lr->level == LKM_EX || (target == LKM_NL && lr->writers == 0));
}

/*
 * FUSE's notify-inval-inode: the kernel unmaps the file's pages, writes
 * back the dirty ones (WRITE requests, which other threads serve) and
 * drops them all with the attributes it caches, as ocfs2's downconvert
 * of an inode lock writes back and truncates the inode's pages
 * (ocfs2_data_convert_worker).
 */
static void
meta_invalidate(struct fsd *fs, uint64_t owner)
{
	struct fuse_session *se;

	if ((se = inode_session_get(fs)) != NULL)
		fuse_lowlevel_notify_inval_inode(se, fsd_blkno_to_ino(fs, owner), 0, 0);
	inode_session_put(fs);
}

/* The inode block and its tree (an allocator's groups, a directory's blocks). */
const struct fsd_lock_ops meta_lock_ops = {
	.letter		= 'M',
	.flags		= LOCK_TYPE_USES_LVB | LOCK_TYPE_REQUIRES_REFRESH,
	.refresh	= meta_refresh,
	.write_home	= meta_write_home,
	.set_lvb	= meta_set_lvb,
	.needs_flush	= meta_needs_flush,
	.invalidate	= meta_invalidate,
};

/* Orders writes and size changes across nodes; its blocks are META's. */
const struct fsd_lock_ops rw_lock_ops = { .letter = 'W' };

/* Held PR while the file is open on a node: EX means nobody has it open. */
const struct fsd_lock_ops open_lock_ops = { .letter = 'O' };
