/*
 * Appending O_DIRECT writes on append-dio volumes (doc/append-dio.md),
 * in the kernel's order (fs/ocfs2/aops.c, ocfs2_dio_wr_get_block and
 * ocfs2_dio_end_io_write): a write that extends the file first records
 * the inode in our orphan dir ("dio-<blkno>", OCFS2_DIO_ORPHANED_FL) in
 * a handle of its own; a second handle gives it clusters past i_size;
 * the data goes to them with no handle open; a third handle sets the new
 * size and removes the record. A crash after the first leaves the record,
 * and the recovery of our slot cuts the file back to its size, freeing
 * what was allocated past it (dio_recover, as ocfs2_recover_orphans).
 *
 * Between the handles the inode is unlocked: other nodes' writers and
 * truncates are kept out by the RW lock held EX throughout (as a truncate
 * holds it), this node's by the kernel's inode lock around each write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

struct dio_end_arg {
	int	 slot;		/* whose record */
	int	 done;		/* a record of that slot was ended */
};

/*
 * One step of ending a dio record (file_change_in_steps): the clusters
 * past i_size go, then the record and the flag, as the kernel's
 * ocfs2_truncate_file then ocfs2_del_inode_from_orphan. A flag that
 * points at another slot (a later write made its own record) leaves the
 * file alone: only the stale name goes.
 */
static int
dio_end_step(struct fsd_handle *h, struct fsd_buf *ib, void *arg)
{
	struct fsd *fs = h->fs;
	struct dio_end_arg *a = arg;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t keep;
	int rc;

	if ((LE32(di->i_flags) & OCFS2_DIO_ORPHANED_FL) &&
	    LE16(di->i_dio_orphaned_slot) == a->slot) {
		if (S_ISREG(LE16(di->i_mode)) && !inline_has(di)) {
			keep = (LE64(di->i_size) + fs->vol.cluster_bytes - 1) >> fs->cbits;
			rc = extent_truncate(h, ib, keep > UINT32_MAX ? UINT32_MAX : (uint32_t)keep);
			if (rc != 0) {
				if (rc == -EAGAIN)
					journal_dirty(h, ib);
				return rc;
			}
		}
		a->done = 1;
	}
	return orphan_dio_del(h, ib, a->slot);
}

static int
dio_end(struct fsd *fs, struct fsd_inode *ip, int slot, int *done)
{
	struct dio_end_arg a = { slot, 0 };
	int rc;

	rc = file_change_in_steps(fs, ip, dio_end_step, &a);
	*done = a.done;
	return rc;
}

int
dio_recover(struct fsd *fs, int slot, uint64_t blkno)
{
	struct fsd_inode *ip;
	int rc, done = 0;

	if ((rc = inode_get(fs, blkno, &ip)) != 0) {
		log_warnx("orphan_dir:%04d: dio record of inode %llu: %s", slot,
		    (unsigned long long)blkno, strerror(-rc));
		return rc == -ESTALE ? 0 : rc;
	}
	rc = dio_end(fs, ip, slot, &done);
	inode_put(fs, ip);
	if (rc < 0) {
		log_warnx("orphan_dir:%04d: ending the dio record of inode %llu: %s", slot,
		    (unsigned long long)blkno, strerror(-rc));
		return rc;
	}
	if (done)
		log_info("inode %llu: appending O_DIRECT write of slot %d undone past its size",
		    (unsigned long long)blkno, slot);
	return done;
}

/* What the write does, looked at under the META lock. */
enum dio_plan { DIO_PLAIN, DIO_APPEND };

/*
 * Does the write extend a file that keeps its data in clusters? An
 * inline file, or an empty one the write would make inline, is written
 * as any other (the kernel falls back to buffered I/O for them).
 */
static enum dio_plan
dio_plan(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off, size_t len)
{
	uint64_t size = LE64(di->i_size), end = off + len;

	if (!S_ISREG(LE16(di->i_mode)) || end <= size || inline_has(di))
		return DIO_PLAIN;
	if (fs->inline_data && size == 0 && LE32(di->i_clusters) == 0 &&
	    end <= inline_capacity(fs, di))
		return DIO_PLAIN;
	return DIO_APPEND;
}

/* A handle of its own with the inode's block under META EX, which the handle keeps. */
static int
dio_handle_start(struct fsd *fs, struct fsd_inode *ip, struct fsd_handle *h, struct fsd_buf **ib)
{
	int rc;

	if ((rc = journal_start(fs, h)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_EX, ib)) != 0)
		journal_stop(h, 1);
	return rc;
}

/*
 * Handle 1: the record. Decides again under EX (the file may have
 * changed since the caller looked) and resolves an O_APPEND offset.
 */
static int
dio_record(struct fsd *fs, struct fsd_inode *ip, uint64_t *off, size_t len, enum dio_plan *plan,
    uint64_t *size)
{
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc;

	if ((rc = dio_handle_start(fs, ip, &h, &ib)) != 0)
		return rc;
	di = (struct ocfs2_dinode *)ib->data;
	if (*off == FILE_APPEND)
		*off = LE64(di->i_size);
	*size = LE64(di->i_size);
	*plan = dio_plan(fs, di, *off, len);
	rc = *plan == DIO_APPEND ? orphan_dio_add(&h, ib) : 0;
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

/* Handle 2: clusters for [off, off+len) and zeros from the size to off; the size stays. */
static int
dio_allocate(struct fsd *fs, struct fsd_inode *ip, uint64_t off, size_t len)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc;

	if ((rc = dio_handle_start(fs, ip, &h, &ib)) != 0)
		return rc;
	if ((rc = journal_access(&h, ib)) == 0 && (rc = file_prepare_range(&h, ib, off, len)) == 0)
		journal_dirty(&h, ib);
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

/* The data, under META EX but in no handle: other files' changes go on meanwhile. */
static int
dio_data(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib;
	int rc;

	if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	rc = file_write_data(fs, di, LE64(di->i_size), off, data, len);
	inode_unlock_block(fs, ip, LKM_EX, ib);
	return rc;
}

/* Handle 3: the new size and times, and the record goes (ocfs2_del_inode_from_orphan). */
static int
dio_complete(struct fsd *fs, struct fsd_inode *ip, uint64_t end, int touch_times)
{
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc;

	if ((rc = dio_handle_start(fs, ip, &h, &ib)) != 0)
		return rc;
	di = (struct ocfs2_dinode *)ib->data;
	if ((rc = journal_access(&h, ib)) == 0 && (rc = orphan_dio_del(&h, ib, fs->slot)) == 0) {
		if (end > LE64(di->i_size))
			di->i_size = htole64(end);
		if (touch_times)
			inode_now(di, 0, 1, 1);
		journal_dirty(&h, ib);
	}
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

/* Is a dio record of some slot left on the inode (a write that failed, a crash)? */
static int
dio_leftover(struct fsd *fs, struct fsd_inode *ip, int *slot)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib;
	int rc;

	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	*slot = LE16(di->i_dio_orphaned_slot);
	rc = (LE32(di->i_flags) & OCFS2_DIO_ORPHANED_FL) && *slot < (int)fs->vol.max_slots;
	inode_unlock_block(fs, ip, LKM_PR, ib);
	return rc;
}

int
dio_end_leftover(struct fsd *fs, struct fsd_inode *ip)
{
	int rc, slot = 0, done;

	if ((rc = dio_leftover(fs, ip, &slot)) <= 0)
		return rc;
	return dio_end(fs, ip, slot, &done);
}

/* Under the RW lock EX. */
static int
dio_append_rw_locked(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data,
    size_t len, int touch_times)
{
	enum dio_plan plan;
	uint64_t size;
	int rc, done;

	/* as ocfs2_add_inode_to_orphan: an earlier record is ended first */
	if ((rc = dio_end_leftover(fs, ip)) != 0)
		return rc;
	if ((rc = dio_record(fs, ip, &off, len, &plan, &size)) != 0)
		return rc;
	if (plan == DIO_PLAIN)
		return file_write_rw_held(fs, ip, off, data, len, touch_times);
	if ((rc = dio_allocate(fs, ip, off, len)) == 0 &&
	    (rc = dio_data(fs, ip, off, data, len)) == 0) {
		/* test-only crash point (doc/append-dio.md, Testing the window) */
		journal_test_pause(fs, "FSD_TEST_DIO_PAUSE", ip->blkno,
		    "appending write paused before its size update");
		rc = dio_complete(fs, ip, off + len, touch_times);
	}
	if (rc != 0 && dio_end(fs, ip, fs->slot, &done) != 0)
		log_warnx("inode %llu: a failed O_DIRECT append keeps its dio record until "
		    "the slot's recovery", (unsigned long long)ip->blkno);
	return rc;
}

int
dio_write(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len,
    int touch_times)
{
	enum dio_plan plan;
	struct fsd_buf *ib;
	int rc;

	if (len == 0)
		return 0;
	if (!fs->append_dio)
		return file_write(fs, ip, off, data, len, touch_times);
	/* a write inside the file takes the ordinary path (RW PR, one handle) */
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	plan = off == FILE_APPEND ? DIO_APPEND :
	    dio_plan(fs, (const struct ocfs2_dinode *)ib->data, off, len);
	inode_unlock_block(fs, ip, LKM_PR, ib);
	if (plan == DIO_PLAIN)
		return file_write(fs, ip, off, data, len, touch_times);
	if ((rc = inode_rw_lock(fs, ip, LKM_EX)) != 0)
		return rc;
	rc = dio_append_rw_locked(fs, ip, off, data, len, touch_times);
	inode_rw_unlock(fs, ip, LKM_EX);
	return rc;
}
