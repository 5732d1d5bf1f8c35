/*
 * The orphan directory (doc/ondisk.md, Orphan directories): an inode
 * whose last name goes away is moved into our slot's orphan_dir, named by
 * its block number in 16 hex digits, and deleted only when nothing uses
 * it any more (the kernel forgot it, or at mount/unmount for what a crash
 * or an unmount left behind). Deleting it: its clusters go through the
 * truncate log, then the orphan entry, the inode and its allocator bit go
 * in one transaction.
 *
 * The same directory holds the records of appending O_DIRECT writes
 * (dio.c, doc/append-dio.md): "dio-" and the block number, for inodes
 * that keep their links. Those are never deleted here: only when the
 * slot's owner no longer runs does dio_recover end them.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "util.h"

#include "fsd.h"

static uint8_t
ft_of(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:	return OCFS2_FT_REG_FILE;
	case S_IFDIR:	return OCFS2_FT_DIR;
	case S_IFCHR:	return OCFS2_FT_CHRDEV;
	case S_IFBLK:	return OCFS2_FT_BLKDEV;
	case S_IFIFO:	return OCFS2_FT_FIFO;
	case S_IFSOCK:	return OCFS2_FT_SOCK;
	case S_IFLNK:	return OCFS2_FT_SYMLINK;
	}
	return OCFS2_FT_UNKNOWN;
}

/* An orphan (unlinked, in a slot's orphan dir) that still waits for its deletion? */
static int
is_orphan(struct fsd *fs, const struct ocfs2_dinode *di)
{
	return (LE32(di->i_flags) & OCFS2_ORPHANED_FL) && LE16(di->i_links_count) == 0 &&
	    LE16(di->i_orphaned_slot) < fs->vol.max_slots;
}

/* Inside h: slot's orphan dir under EX, which h keeps (orphan_dir_put). */
static int
orphan_dir_get(struct fsd_handle *h, int slot, struct fsd_inode **op, struct fsd_buf **ob)
{
	struct fsd *fs = h->fs;
	int rc;

	/* a system file: after every inode lock but the orphan's, one handle at a time */
	handle_serialize(h);
	if ((rc = inode_get(fs, fs->slots[slot].orphan_dir, op)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, *op, LKM_EX, ob)) != 0)
		inode_put(fs, *op);
	return rc;
}

/* Inside the handle that changed it: h keeps its lock. */
static void
orphan_dir_put(struct fsd_handle *h, struct fsd_inode *op, struct fsd_buf *ob)
{
	inode_unlock_block_in(h, op, ob);
	inode_put(h->fs, op);
}

/*
 * ib's inode into our orphan dir ob under its block number's name,
 * flagged orphaned by this slot; ib already open for change in h.
 */
static int
orphan_enter(struct fsd_handle *h, struct fsd_buf *ob, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct ocfs2_dinode *odi = (struct ocfs2_dinode *)ob->data;
	char name[17];
	int rc;

	snprintf(name, sizeof(name), "%016" PRIx64, ib->blkno);
	if ((rc = journal_access(h, ob)) != 0 ||
	    (rc = dir_add(h, ob, name, 16, ib->blkno, ft_of(LE16(di->i_mode)))) != 0)
		return rc;
	/* a directory in the orphan dir counts as a subdirectory of it */
	if (S_ISDIR(LE16(di->i_mode)))
		odi->i_links_count = htole16(LE16(odi->i_links_count) + 1);
	di->i_flags = htole32(LE32(di->i_flags) | OCFS2_ORPHANED_FL);
	di->i_orphaned_slot = htole16((uint16_t)fs->slot);
	journal_dirty(h, ib);
	journal_dirty(h, ob);
	return 0;
}

int
orphan_add(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd_inode *op;
	struct fsd_buf *ob;
	int rc;

	if ((rc = orphan_dir_get(h, h->fs->slot, &op, &ob)) != 0)
		return rc;
	if ((rc = journal_access(h, ib)) == 0)
		rc = orphan_enter(h, ob, ib);
	orphan_dir_put(h, op, ob);
	return rc;
}

int
orphan_create(struct fsd_handle *h, unsigned mode, uint32_t uid, uint32_t gid,
    struct fsd_buf **ibp)
{
	struct fsd_inode *op;
	struct fsd_buf *ob, *ib;
	int rc;

	/* the orphan dir before the allocator inode_create takes (ops_namei.c's order) */
	if ((rc = orphan_dir_get(h, h->fs->slot, &op, &ob)) != 0)
		return rc;
	if ((rc = inode_create(h, mode, uid, gid, 0, &ib)) != 0)
		goto out;
	((struct ocfs2_dinode *)ib->data)->i_links_count = 0;
	if ((rc = orphan_enter(h, ob, ib)) != 0) {
		block_put(h->fs, ib);
		goto out;
	}
	*ibp = ib;
out:
	orphan_dir_put(h, op, ob);
	return rc;
}

int
orphan_adopt(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd_inode *op;
	struct fsd_buf *ob;
	char name[17];
	int rc;

	if (!is_orphan(fs, di) || LE16(di->i_orphaned_slot) != fs->slot ||
	    S_ISDIR(LE16(di->i_mode)))
		return -ESTALE;
	snprintf(name, sizeof(name), "%016" PRIx64, ib->blkno);
	if ((rc = orphan_dir_get(h, fs->slot, &op, &ob)) != 0)
		return rc;
	if ((rc = journal_access(h, ib)) == 0 && (rc = dir_remove(h, ob, name, 16)) == 0) {
		di->i_links_count = htole16(1);
		di->i_flags = htole32(LE32(di->i_flags) & ~OCFS2_ORPHANED_FL);
		di->i_orphaned_slot = 0;
		journal_dirty(h, ib);
	}
	orphan_dir_put(h, op, ob);
	return rc;
}

/* as the kernel's OCFS2_DIO_ORPHAN_PREFIX (fs/ocfs2/namei.h) */
#define DIO_PREFIX	"dio-"
#define DIO_PREFIX_LEN	4
#define DIO_NAME_LEN	(DIO_PREFIX_LEN + 16)

static void
dio_name(char *out, size_t outlen, uint64_t blkno)
{
	snprintf(out, outlen, DIO_PREFIX "%016" PRIx64, blkno);
}

int
orphan_dio_add(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd_inode *op;
	struct fsd_buf *ob;
	char name[DIO_NAME_LEN + 1];
	int rc;

	dio_name(name, sizeof(name), ib->blkno);
	if ((rc = orphan_dir_get(h, fs->slot, &op, &ob)) != 0)
		return rc;
	if ((rc = journal_access(h, ib)) != 0 || (rc = journal_access(h, ob)) != 0)
		goto out;
	if ((rc = dir_add(h, ob, name, DIO_NAME_LEN, ib->blkno, ft_of(LE16(di->i_mode)))) != 0)
		goto out;
	di->i_flags = htole32(LE32(di->i_flags) | OCFS2_DIO_ORPHANED_FL);
	di->i_dio_orphaned_slot = htole16((uint16_t)fs->slot);
	journal_dirty(h, ib);
	journal_dirty(h, ob);
out:
	orphan_dir_put(h, op, ob);
	return rc;
}

int
orphan_dio_del(struct fsd_handle *h, struct fsd_buf *ib, int slot)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd_inode *op;
	struct fsd_buf *ob;
	char name[DIO_NAME_LEN + 1];
	int rc;

	dio_name(name, sizeof(name), ib->blkno);
	if ((rc = orphan_dir_get(h, slot, &op, &ob)) != 0)
		return rc;
	if ((rc = journal_access(h, ib)) != 0)
		goto out;
	/* a record another node's write already ended is simply gone */
	if ((rc = dir_remove(h, ob, name, DIO_NAME_LEN)) != 0 && rc != -ENOENT)
		goto out;
	rc = 0;
	if ((LE32(di->i_flags) & OCFS2_DIO_ORPHANED_FL) && LE16(di->i_dio_orphaned_slot) == slot) {
		di->i_flags = htole32(LE32(di->i_flags) & ~OCFS2_DIO_ORPHANED_FL);
		di->i_dio_orphaned_slot = 0;
		journal_dirty(h, ib);
	}
out:
	orphan_dir_put(h, op, ob);
	return rc;
}

/* Is the inode an orphan, read under META PR? Its slot, kind and generation with it. */
static int
orphan_pending(struct fsd *fs, struct fsd_inode *ip, unsigned *slot, int *isdir, uint32_t *gen)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib;
	int rc;

	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	*slot = LE16(di->i_orphaned_slot);
	*isdir = S_ISDIR(LE16(di->i_mode));
	*gen = LE32(di->i_generation);
	rc = is_orphan(fs, di);
	inode_unlock_block(fs, ip, LKM_PR, ib);
	return rc;
}

static int
wipe(struct fsd *fs, uint64_t blkno, int *busy)
{
	struct fsd_inode *ip, *op;
	struct fsd_buf *ib, *ob;
	struct fsd_handle h;
	char name[17];
	uint32_t gen;
	unsigned slot;
	int rc, isdir;

	if ((rc = inode_get(fs, blkno, &ip)) != 0)
		goto gone;
	/* Still linked somewhere (or never orphaned): nothing to do. */
	if ((rc = orphan_pending(fs, ip, &slot, &isdir, &gen)) <= 0)
		goto out;
	/* open here or on another node: its last close deletes it */
	if ((rc = inode_try_delete_lock(fs, ip)) != 0) {
		*busy = rc == -EAGAIN;
		rc = *busy ? 0 : rc;
		goto out;
	}
	/*
	 * Another node may have deleted it between our look and the trylock
	 * (the block may even hold a new inode by now): look again, under the
	 * OPEN EX lock that every deleter holds.
	 */
	if ((rc = orphan_pending(fs, ip, &slot, &isdir, &gen)) <= 0)
		goto out_unlock;
	/* unlinked in the middle of an O_DIRECT append that never ended */
	if ((rc = dio_end_leftover(fs, ip)) != 0)
		goto out_unlock;
	if ((rc = file_free_all(fs, ip)) != 0 || (rc = xattr_free_all(fs, ip)) != 0)
		goto out_unlock;
	if ((rc = journal_start(fs, &h)) != 0)
		goto out_unlock;
	if ((rc = orphan_dir_get(&h, (int)slot, &op, &ob)) != 0) {
		journal_stop(&h, 1);
		goto out_unlock;
	}
	/*
	 * Between the look under PR and this EX lock, another thread of
	 * ours that held the OPEN lock too may have deleted it, and another
	 * node made a new inode in its block: that one is not ours to wipe.
	 */
	if ((rc = inode_lock_block_flags(fs, ip, LKM_EX, LKF_ORPHAN, &ib)) == 0 &&
	    (LE32(((struct ocfs2_dinode *)ib->data)->i_generation) != gen ||
	    !is_orphan(fs, (struct ocfs2_dinode *)ib->data))) {
		inode_unlock_block(fs, ip, LKM_EX, ib);
		rc = -ESTALE;
	} else if (rc == 0) {
		snprintf(name, sizeof(name), "%016" PRIx64, blkno);
		rc = dir_remove(&h, ob, name, 16);
		if (rc == 0 && isdir && (rc = journal_access(&h, ob)) == 0) {
			struct ocfs2_dinode *odi = (struct ocfs2_dinode *)ob->data;

			odi->i_links_count = htole16(LE16(odi->i_links_count) - 1);
			journal_dirty(&h, ob);
		}
		if (rc == 0)
			rc = inode_wipe(&h, ib);
		inode_unlock_block_in(&h, ip, ib);
	}
	orphan_dir_put(&h, op, ob);
	journal_stop(&h, rc != 0);
	if (rc == 0) {
		log_debug("inode %llu deleted", (unsigned long long)blkno);
		rc = 1;
	}
out_unlock:
	inode_delete_unlock(fs, ip, rc == 1 ? gen : 0);
out:
	inode_put(fs, ip);
gone:
	if (rc == -ESTALE)
		rc = 0;		/* another node deleted it first */
	if (rc < 0)
		log_warnx("deleting orphan inode %llu: %s", (unsigned long long)blkno, strerror(-rc));
	return rc;
}

static void
unexpect(struct fsd *fs, uint64_t blkno)
{
	unsigned i;

	for (i = fs->nexpected; i-- > 0; )
		if (fs->expected[i] == blkno) {
			fs->expected[i] = fs->expected[--fs->nexpected];
			break;
		}
}

/* Counted, so that an allocation out of space can wait for what they free. */
int
orphan_wipe(struct fsd *fs, uint64_t blkno)
{
	int rc, busy = 0;

	pthread_mutex_lock(&fs->wipe_mtx);
	fs->wipes++;
	pthread_mutex_unlock(&fs->wipe_mtx);
	rc = wipe(fs, blkno, &busy);
	pthread_mutex_lock(&fs->wipe_mtx);
	fs->wipes--;
	if (!busy)
		unexpect(fs, blkno);
	pthread_cond_broadcast(&fs->wipe_cv);
	pthread_mutex_unlock(&fs->wipe_mtx);
	return rc;
}

/*
 * Expected deletions are hints for a write out of space. One that another
 * node does instead (the file was open there) leaves its hint here until
 * such a wait gives up on it, so past this many they are all dropped.
 */
#define EXPECTED_MAX	1024

void
orphan_expect(struct fsd *fs, uint64_t blkno)
{
	pthread_mutex_lock(&fs->wipe_mtx);
	if (fs->nexpected == EXPECTED_MAX)
		fs->nexpected = 0;
	if (fs->nexpected == fs->cexpected) {
		fs->cexpected = fs->cexpected ? 2 * fs->cexpected : 16;
		fs->expected = xrealloc(fs->expected, fs->cexpected * sizeof(*fs->expected));
	}
	fs->expected[fs->nexpected++] = blkno;
	pthread_mutex_unlock(&fs->wipe_mtx);
}

void
orphan_unexpect(struct fsd *fs, uint64_t blkno)
{
	pthread_mutex_lock(&fs->wipe_mtx);
	unexpect(fs, blkno);
	pthread_mutex_unlock(&fs->wipe_mtx);
}

int
orphan_wait_deletes(struct fsd *fs, unsigned ms)
{
	struct timespec until;
	int waited = 0;

	fsd_deadline(CLOCK_REALTIME, ms, &until);
	pthread_mutex_lock(&fs->wipe_mtx);
	while (fs->wipes > 0 || fs->nexpected > 0) {
		waited = 1;
		/* one under way is waited for to its end, expected ones until then */
		if (fs->wipes > 0)
			pthread_cond_wait(&fs->wipe_cv, &fs->wipe_mtx);
		else if (pthread_cond_timedwait(&fs->wipe_cv, &fs->wipe_mtx, &until) == ETIMEDOUT) {
			/* kept open, or deleted by another node: not worth waiting for again */
			fs->nexpected = 0;
			break;
		}
	}
	pthread_mutex_unlock(&fs->wipe_mtx);
	return waited;
}

struct orphan_ent {
	uint64_t	 ino;
	int		 dio;		/* a "dio-" record, not an unlinked inode */
};

struct collect {
	struct orphan_ent *ent;
	unsigned	 n, cap;
};

static int
orphan_collect(void *arg, const struct fsd_dirent *d)
{
	struct collect *c = arg;

	if ((d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->ent = xrealloc(c->ent, c->cap * sizeof(*c->ent));
	}
	c->ent[c->n].ino = d->ino;
	c->ent[c->n].dio = d->name_len == DIO_NAME_LEN &&
	    memcmp(d->name, DIO_PREFIX, DIO_PREFIX_LEN) == 0;
	c->n++;
	return 0;
}

int
orphan_recover(struct fsd *fs, int slot, int dio)
{
	struct collect c = { NULL, 0, 0 };
	struct fsd_inode *op;
	struct fsd_buf *ob;
	unsigned i, deleted = 0, ended = 0;
	int rc;

	if ((rc = inode_get(fs, fs->slots[slot].orphan_dir, &op)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, op, LKM_PR, &ob)) == 0) {
		rc = dir_iterate(fs, (const struct ocfs2_dinode *)ob->data, 0, orphan_collect, &c);
		inode_unlock_block(fs, op, LKM_PR, ob);
	}
	inode_put(fs, op);
	for (i = 0; rc >= 0 && i < c.n; i++) {
		if (!c.ent[i].dio && (rc = orphan_wipe(fs, c.ent[i].ino)) > 0)
			deleted++;
		/* the kernel's orphan scan leaves them too: their writer may run */
		else if (c.ent[i].dio && dio && (rc = dio_recover(fs, slot, c.ent[i].ino)) > 0)
			ended++;
	}
	if (deleted > 0)
		log_info("orphan_dir:%04d: %u inodes deleted", slot, deleted);
	if (ended > 0)
		log_info("orphan_dir:%04d: %u appending O_DIRECT writes ended", slot, ended);
	free(c.ent);
	return rc < 0 ? rc : (int)deleted;
}
