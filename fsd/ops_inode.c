/*
 * FUSE operations on inodes: lookup and forget, attributes, symlink
 * targets, permission checks, statfs. Each handler ends in exactly one
 * fuse_reply_*.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "ops.h"

int
fsd_make_entry(struct fsd *fs, uint64_t blkno, struct fuse_entry_param *e)
{
	struct fsd_inode *ip;
	struct fsd_buf *b;
	const struct ocfs2_dinode *di;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = inode_get(fs, blkno, &ip)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &b)) != 0) {
		inode_put(fs, ip);
		return rc;
	}
	di = (const struct ocfs2_dinode *)b->data;
	if (LE32(di->i_flags) & OCFS2_SYSTEM_FL) {
		/* a name in a user directory must not lead to a system file */
		fsd_corrupt(fs, blkno, "directory entry points at a system file");
		inode_unlock_block(fs, ip, LKM_PR, b);
		inode_put(fs, ip);
		return -EIO;
	}
	inode_check_generation(fs, ip, LE32(di->i_generation));
	inode_note_linked(fs, ip, di);
	inode_to_stat(fs, di, &e->attr);
	e->ino = fsd_blkno_to_ino(fs, blkno);
	e->generation = LE32(di->i_generation);
	e->attr_timeout = fs->opts.attr_timeout;
	e->entry_timeout = fs->opts.entry_timeout;
	inode_unlock_block(fs, ip, LKM_PR, b);
	if (inode_lookup_ref(fs, ip))
		kernsize_set(ip, (uint64_t)e->attr.st_size);
	else
		kernsize_reported(ip, (uint64_t)e->attr.st_size);
	inode_put(fs, ip);
	return 0;
}

/* The inode the name in directory blkno leads to now. */
static int
lookup_name(struct fsd *fs, uint64_t dir, const char *name, uint64_t *ino)
{
	struct fsd_inode *dp;
	struct fsd_buf *b;
	int rc;

	if ((rc = inode_get(fs, dir, &dp)) != 0)
		return gone_is_enoent(rc);
	if ((rc = inode_lock_kernel(fs, dp, LKM_PR, &b)) != 0) {
		inode_put(fs, dp);
		return gone_is_enoent(rc);
	}
	if (!S_ISDIR(LE16(((const struct ocfs2_dinode *)b->data)->i_mode)))
		rc = -ENOTDIR;
	else
		rc = dir_lookup(fs, (const struct ocfs2_dinode *)b->data, name, strlen(name), ino);
	inode_unlock_block(fs, dp, LKM_PR, b);
	inode_put(fs, dp);
	return rc;
}

void
fsd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fsd *fs = fsd_of(req);
	struct fuse_entry_param e;
	uint64_t ino;
	int rc, tries = 0;

	if (strlen(name) > OCFS2_MAX_FILENAME_LEN)
		return (void)fuse_reply_err(req, ENAMETOOLONG);
	/*
	 * Between the directory's lock and the inode's, another node may
	 * have removed the name and deleted the inode: read the name again,
	 * which is gone by then or leads elsewhere.
	 */
	do {
		rc = lookup_name(fs, fsd_ino_to_blkno(fs, parent), name, &ino);
		if (rc == 0)
			rc = fsd_make_entry(fs, ino, &e);
	} while (rc == -ESTALE && ++tries < 3);
	if (rc == -ESTALE)
		rc = -ENOENT;	/* each time the name led to an inode deleted meanwhile */
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	if (S_ISDIR(e.attr.st_mode)) {
		inode_dir_named(fs, ino, fsd_ino_to_blkno(fs, parent), name, strlen(name));
		inode_dir_wait_named(fs, ino);
	}
	fuse_reply_entry(req, &e);
}

/*
 * When the kernel lets go of an inode whose last name is gone, it is
 * deleted (the kernel's final iput of an orphan).
 */
static void
forget_one(struct fsd *fs, uint64_t blkno, uint64_t n)
{
	if (inode_forget(fs, blkno, n) && fs->journal != NULL)
		orphan_wipe(fs, blkno);
}

void
fsd_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fsd *fs = fsd_of(req);

	forget_one(fs, fsd_ino_to_blkno(fs, ino), nlookup);
	fuse_reply_none(req);
}

void
fsd_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fsd *fs = fsd_of(req);
	size_t i;

	for (i = 0; i < count; i++)
		forget_one(fs, fsd_ino_to_blkno(fs, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Run fn on the inode block of ino under a PR lock. */
static int
with_inode(struct fsd *fs, fuse_ino_t ino, int (*fn)(struct fsd *, const struct ocfs2_dinode *,
    void *), void *arg)
{
	struct fsd_inode *ip;
	struct fsd_buf *b;
	int rc;

	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return rc;
	if ((rc = inode_lock_kernel(fs, ip, LKM_PR, &b)) == 0) {
		rc = fn(fs, (const struct ocfs2_dinode *)b->data, arg);
		inode_unlock_block(fs, ip, LKM_PR, b);
	}
	inode_put(fs, ip);
	return rc;
}

static int
stat_cb(struct fsd *fs, const struct ocfs2_dinode *di, void *arg)
{
	inode_to_stat(fs, di, arg);
	return 0;
}

void
fsd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct stat st;
	int rc;

	(void)fi;
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = inode_stat(fs, ip, &st)) == 0 && S_ISREG(st.st_mode)) {
		kernsize_catch_up(fs, ip, ino, (uint64_t)st.st_size);
		kernsize_reported(ip, (uint64_t)st.st_size);
	}
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_attr(req, &st, fs->opts.attr_timeout);
}

static int
readlink_cb(struct fsd *fs, const struct ocfs2_dinode *di, void *arg)
{
	if (!S_ISLNK(LE16(di->i_mode)))
		return -EINVAL;
	return data_readlink(fs, di, arg, PATH_MAX + 1);
}

void
fsd_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX + 1];
	int rc;

	if ((rc = with_inode(fsd_of(req), ino, readlink_cb, target)) != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_readlink(req, target);
}

struct access_arg {
	fuse_req_t		 req;
	int			 mask;
};

static int
in_groups(fuse_req_t req, gid_t gid)
{
	gid_t groups[64];
	int n, i;

	n = fuse_req_getgroups(req, 64, groups);
	for (i = 0; i < n && i < 64; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/* generic_permission() without ACLs: owner, then group, then other bits. */
int
fsd_permission(fuse_req_t req, unsigned mode, uint32_t uid, uint32_t gid, int mask)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	unsigned bits;

	if (ctx->uid == 0) {
		/* root may execute only what someone may execute */
		if ((mask & X_OK) && !S_ISDIR(mode) && !(mode & 0111))
			return -EACCES;
		return 0;
	}
	if (ctx->uid == uid)
		bits = mode >> 6;
	else if (ctx->gid == gid || in_groups(req, gid))
		bits = mode >> 3;
	else
		bits = mode;
	return ((unsigned)mask & ~bits & 7) ? -EACCES : 0;
}

static int
access_cb(struct fsd *fs, const struct ocfs2_dinode *di, void *arg)
{
	struct access_arg *a = arg;
	unsigned mode = LE16(di->i_mode);

	if (fs->readonly && (a->mask & W_OK) && !S_ISCHR(mode) && !S_ISBLK(mode) &&
	    !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EROFS;
	return fsd_permission(a->req, mode, LE32(di->i_uid), LE32(di->i_gid), a->mask);
}

void
fsd_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct access_arg a = { req, mask };
	int rc;

	rc = with_inode(fsd_of(req), ino, access_cb, &a);
	fuse_reply_err(req, -rc);
}

void
fsd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fsd *fs = fsd_of(req);
	const struct ocfs2_dinode *di;
	struct statvfs sv;
	struct fsd_buf *b;
	uint64_t total, used;
	int rc;

	(void)ino;
	/* Like ocfs2_statfs: the global bitmap counts clusters, reported in blocks. */
	if ((rc = lockres_lock(fs, fs->gb_lock, LKM_PR)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = block_read(fs, fs->global_bitmap, BLK_INODE, &b)) != 0) {
		lockres_unlock(fs, fs->gb_lock, LKM_PR);
		return (void)fuse_reply_err(req, -rc);
	}
	di = (const struct ocfs2_dinode *)b->data;
	total = LE32(di->id1.bitmap1.i_total);
	used = LE32(di->id1.bitmap1.i_used);
	block_put(fs, b);
	lockres_unlock(fs, fs->gb_lock, LKM_PR);
	if (used > total)
		used = total;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = fs->vol.block_bytes;
	sv.f_frsize = fs->vol.block_bytes;
	sv.f_blocks = total * fs->bpc;
	sv.f_bfree = (total - used) * fs->bpc;
	sv.f_bavail = sv.f_bfree;
	sv.f_files = total;
	sv.f_ffree = total - used;
	sv.f_favail = sv.f_ffree;
	sv.f_namemax = OCFS2_MAX_FILENAME_LEN;
	fuse_reply_statfs(req, &sv);
}

static void
set_time(__le64 *sec, __le32 *nsec, const struct timespec *ts)
{
	*sec = htole64((uint64_t)ts->tv_sec);
	*nsec = htole32((uint32_t)ts->tv_nsec);
}

void
fsd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct ocfs2_dinode *di;
	struct fsd_inode *ip;
	struct fsd_handle h;
	struct fsd_buf *b;
	struct timespec now;
	struct stat st;
	struct fsd_reclaim room = { 0 };
	int rc;

	fsd_caller(req);
	(void)fi;
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	/* The size first, in handles of its own (a big truncate takes several). */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if ((rc = with_inode(fs, ino, stat_cb, &st)) == 0 && !S_ISREG(st.st_mode))
			rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		if (rc == 0)
			rc = file_setsize(fs, ip, (uint64_t)attr->st_size);
		while (rc == -ENOSPC && fsd_reclaim(fs, &room))
			rc = file_setsize(fs, ip, (uint64_t)attr->st_size);
		if (rc != 0)
			goto out;
	}
	if ((rc = journal_start(fs, &h)) != 0)
		goto out;
	if ((rc = inode_lock_kernel(fs, ip, LKM_EX, &b)) != 0) {
		journal_stop(&h, 1);
		goto out;
	}
	di = (struct ocfs2_dinode *)b->data;
	/* chown and chgrp move the file's usage to its new owners */
	if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    (rc = quota_transfer(&h, di, b->blkno,
	    (to_set & FUSE_SET_ATTR_UID) ? (uint32_t)attr->st_uid : LE32(di->i_uid),
	    (to_set & FUSE_SET_ATTR_GID) ? (uint32_t)attr->st_gid : LE32(di->i_gid))) != 0)
		goto unlock;
	if ((rc = journal_access(&h, b)) == 0) {
		clock_gettime(CLOCK_REALTIME, &now);
		if (to_set & FUSE_SET_ATTR_MODE)
			di->i_mode = htole16((uint16_t)((LE16(di->i_mode) & S_IFMT) |
			    (attr->st_mode & 07777)));
		if (to_set & FUSE_SET_ATTR_UID)
			di->i_uid = htole32(attr->st_uid);
		if (to_set & FUSE_SET_ATTR_GID)
			di->i_gid = htole32(attr->st_gid);
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			set_time(&di->i_atime, &di->i_atime_nsec, &now);
		else if (to_set & FUSE_SET_ATTR_ATIME)
			set_time(&di->i_atime, &di->i_atime_nsec, &attr->st_atim);
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			set_time(&di->i_mtime, &di->i_mtime_nsec, &now);
		else if (to_set & FUSE_SET_ATTR_MTIME)
			set_time(&di->i_mtime, &di->i_mtime_nsec, &attr->st_mtim);
		if (to_set & FUSE_SET_ATTR_CTIME)
			set_time(&di->i_ctime, &di->i_ctime_nsec, &attr->st_ctim);
		else
			set_time(&di->i_ctime, &di->i_ctime_nsec, &now);
		journal_dirty(&h, b);
		inode_to_stat(fs, di, &st);
		kernsize_reported(ip, (uint64_t)st.st_size);
	}
unlock:
	inode_unlock_block_in(&h, ip, b);
	journal_stop(&h, rc != 0);
	/* the access ACL's mask follows a chmod (ocfs2_acl_chmod, its own transaction) */
	if (rc == 0 && (to_set & FUSE_SET_ATTR_MODE) && fs->acl)
		rc = acl_chmod_inode(fs, ip, st.st_mode);
out:
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_attr(req, &st, fs->opts.attr_timeout);
}
