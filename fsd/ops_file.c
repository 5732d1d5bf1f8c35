/* FUSE operations on open files. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "ops.h"

int
fsd_open_inode(struct fsd *fs, struct fsd_inode *ip, int flags)
{
	int rc;

	if ((rc = inode_open(fs, ip)) != 0 || !(flags & O_TRUNC))
		return rc;
	/* as the kernel's handle_truncate: always, so mtime and ctime move */
	if ((rc = file_setsize(fs, ip, 0)) != 0)
		inode_close(fs, ip);
	else
		kernsize_set(ip, 0);
	return rc;
}

void
fsd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct fsd_buf *b;
	unsigned mode;
	int rc;

	if (fs->readonly && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)))
		return (void)fuse_reply_err(req, EROFS);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = inode_lock_kernel(fs, ip, LKM_PR, &b)) != 0) {
		inode_put(fs, ip);
		return (void)fuse_reply_err(req, -rc);
	}
	mode = LE16(((const struct ocfs2_dinode *)b->data)->i_mode);
	inode_unlock_block(fs, ip, LKM_PR, b);
	if (!S_ISREG(mode)) {
		/* the kernel opens only regular files through us */
		inode_put(fs, ip);
		return (void)fuse_reply_err(req, S_ISDIR(mode) ? EISDIR : EINVAL);
	}
	if ((rc = fsd_open_inode(fs, ip, fi->flags)) == 0)
		lockres_file_open(ip->meta, 1, fsd_open_writes(fi));
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fsd_open_flags(fs, fi);
	fuse_reply_open(req, fi);
}

int
fsd_open_writes(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) != O_RDONLY;
}

void
fsd_open_flags(struct fsd *fs, struct fuse_file_info *fi)
{
	/*
	 * The kernel passes O_DIRECT in the open's flags and then sends such
	 * a file's writes straight to us; one set later with fcntl(F_SETFL)
	 * is not seen here, and its writes take the ordinary path.
	 */
	fi->fh = ((fi->flags & O_APPEND) ? FH_APPEND : 0) | ((fi->flags & O_DIRECT) ? FH_DIRECT : 0);
	/*
	 * Alone on the volume, the kernel's page cache stays right between
	 * opens. In a cluster each open starts afresh (close-to-open), reads
	 * revalidate attributes first (attr_timeout 0, auto_inval_data), and
	 * a downconvert to NL invalidates the pages of long-lived mappings.
	 * Appends go straight to us: the kernel's idea of the size may be
	 * stale, we append at the size the EX lock shows.
	 */
	fi->keep_cache = fs->glue == NULL;
	fi->direct_io = fs->glue != NULL && (fi->flags & O_APPEND);
}

void
fsd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct fsd_buf *b;
	const struct ocfs2_dinode *di;
	const char *p = NULL;
	struct timespec now;
	size_t len = 0;
	void *base = NULL;
	int rc, touch = 0, want, level;

	(void)fi;
	if (off < 0)
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	want = lockres_read_level(ip->meta);
	if (want < LKM_EX)
		want = inode_read_level(fs, ip);
	if ((rc = inode_lock_block_read(fs, ip, want, &level, &b)) == 0) {
		di = (const struct ocfs2_dinode *)b->data;
		if (!S_ISREG(LE16(di->i_mode)))
			rc = -EINVAL;
		else
			rc = data_read(fs, di, (uint64_t)off, size, &base, &p, &len);
		clock_gettime(CLOCK_REALTIME, &now);
		touch = rc == 0 && inode_atime_due(fs, di, &now);
		if (touch)
			inode_read_moved_atime(ip);
		inode_unlock_block(fs, ip, level, b);
	}
	/* before the reply: the kernel asks for the atime again once it has it */
	if (touch)
		inode_touch_atime(fs, ip);
	if (rc == 0 && len < size)
		kernsize_reported(ip, (uint64_t)off + len);	/* FUSE takes a short read for the end */
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_buf(req, p, len);
	free(base);
}

void
fsd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;

	if (fi->flock_release)
		flock_release(fs, fi->lock_owner);
	if ((ip = inode_find(fs, fsd_ino_to_blkno(fs, ino))) != NULL) {
		inode_put(fs, ip);	/* the open's own pin keeps it */
		lockres_file_open(ip->meta, -1, fsd_open_writes(fi));
		inode_close(fs, ip);
	}
	fuse_reply_err(req, 0);
}

void
fsd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct fsd_reclaim room = { 0 };
	int rc;
	uint64_t at;

	/*
	 * The kernel writing back its cache sends the write as root: the
	 * writer is not known, so the file's owner's limits hold (the error
	 * then reaches the writer's fsync or close, as ENOSPC would).
	 */
	if (fi->writepage)
		quota_set_caller(QUOTA_CALLER_UNKNOWN);
	else
		fsd_caller(req);
	if (off < 0)
		return (void)fuse_reply_err(req, EINVAL);
	at = (fi->fh & FH_APPEND) && fs->glue != NULL ? FILE_APPEND : (uint64_t)off;
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if (fi->writepage && fs->glue != NULL) {
		/* the kernel writes back its page (of a shared mapping) */
		rc = file_writepage(fs, ip, (uint64_t)off, buf, size);
		while (rc == -ENOSPC && fsd_reclaim(fs, &room))
			rc = file_writepage(fs, ip, (uint64_t)off, buf, size);
	} else if (fi->fh & FH_DIRECT) {
		rc = dio_write(fs, ip, at, buf, size, !fs->writeback_active);
		while (rc == -ENOSPC && fsd_reclaim(fs, &room))
			rc = dio_write(fs, ip, at, buf, size, !fs->writeback_active);
	} else {
		rc = file_write(fs, ip, at, buf, size, !fs->writeback_active);
		while (rc == -ENOSPC && fsd_reclaim(fs, &room))
			rc = file_write(fs, ip, at, buf, size, !fs->writeback_active);
		if (rc == 0)
			kernsize_wrote(ip);
	}
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_write(req, size);
}

/*
 * Everything of ours is in one log: making this file durable commits it
 * all, and data written in place is made durable by the commit's flushes
 * or, when there was nothing to log, a flush of its own (journal_fsync).
 */
void
fsd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	int rc;

	(void)ino;
	(void)datasync;
	(void)fi;
	rc = journal_fsync(fs);
	fuse_reply_err(req, -rc);
}

void
fsd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* every close(2), of any descriptor: POSIX drops the process's locks */
	plock_flush(fsd_of(req), fsd_ino_to_blkno(fsd_of(req), ino), fi->lock_owner);
	fuse_reply_err(req, 0);
}

/*
 * Without the sparse feature mode 0 and KEEP_SIZE, allocating and
 * zeroing; with it, the modes sparse_fallocate_modes() names.
 */
void
fsd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
    struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct fsd_reclaim room = { 0 };
	int rc;

	fsd_caller(req);
	(void)fi;
	if (fs->sparse ? !sparse_fallocate_modes(fs, mode) : (mode & ~FALLOC_FL_KEEP_SIZE) != 0)
		return (void)fuse_reply_err(req, EOPNOTSUPP);
	if (offset < 0 || length <= 0)
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	rc = file_fallocate(fs, ip, mode, (uint64_t)offset, (uint64_t)length);
	while (rc == -ENOSPC && fsd_reclaim(fs, &room))
		rc = file_fallocate(fs, ip, mode, (uint64_t)offset, (uint64_t)length);
	inode_put(fs, ip);
	fuse_reply_err(req, -rc);
}

/* SEEK_DATA and SEEK_HOLE; the kernel does the other kinds itself. */
void
fsd_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	uint64_t res = 0;
	int rc;

	(void)fi;
	if (off < 0)
		return (void)fuse_reply_err(req, ENXIO);
	/*
	 * The kernel asks without writing its dirty pages back first: they
	 * would pass for holes. Invalidating the file's pages launders them,
	 * written back through another worker before this returns; with one
	 * worker, ENOSYS has the kernel answer by itself from now on (data up
	 * to the size, then a hole), as without lseek.
	 */
	if (fs->writeback_active && fs->opts.threads < 2)
		return (void)fuse_reply_err(req, ENOSYS);
	if (fs->writeback_active && fs->se != NULL)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	rc = file_seek(fs, ip, (uint64_t)off, whence, &res);
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_lseek(req, (off_t)res);
}

/*
 * EOPNOTSUPP has the kernel copy the range itself (fuse_copy_file_range
 * falls back to a splice copy), as it does for a range reflink.c cannot
 * share.
 */
void
fsd_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
    fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *src, *dst;
	struct fsd_reclaim room = { 0 };
	int64_t done;
	int rc;

	fsd_caller(req);
	(void)fi_in;
	(void)fi_out;
	if (flags != 0 || off_in < 0 || off_out < 0)
		return (void)fuse_reply_err(req, EINVAL);
	if (fs->readonly)
		return (void)fuse_reply_err(req, EROFS);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino_in), &src)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino_out), &dst)) != 0) {
		inode_put(fs, src);
		return (void)fuse_reply_err(req, -rc);
	}
	done = reflink_range(fs, src, (uint64_t)off_in, dst, (uint64_t)off_out, len);
	while (done == -ENOSPC && fsd_reclaim(fs, &room))
		done = reflink_range(fs, src, (uint64_t)off_in, dst, (uint64_t)off_out, len);
	if (done > 0)
		kernsize_wrote(dst);
	inode_put(fs, dst);
	inode_put(fs, src);
	if (done < 0)
		return (void)fuse_reply_err(req, (int)-done);
	fuse_reply_write(req, (size_t)done);
}
