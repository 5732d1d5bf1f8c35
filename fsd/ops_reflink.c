/*
 * FSD_IOC_REFLINK (common/fsd_ioctl.h), what o2ctl reflink asks
 * (doc/refcount.md): a new file that shares an open file's clusters,
 * made as the kernel's ocfs2_reflink (fs/ocfs2/refcounttree.c) with
 * preserve set. The new inode is born in our orphan dir with no link
 * (ocfs2_create_inode_in_orphan), gets the clusters, the extended
 * attributes and the times, and only then leaves the orphan dir for its
 * name, in one transaction (ocfs2_mv_orphaned_inode_to_new). A crash
 * before that leaves an orphan that recovery deletes: the name never
 * leads to part of a file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsd_ioctl.h"
#include "log.h"

#include "ops.h"

/* What the new file takes from the source, read under its META lock. */
struct origin {
	unsigned	 mode;
	uint32_t	 uid, gid;
	uint64_t	 size, atime, mtime;
	uint32_t	 atime_nsec, mtime_nsec;
};

static int
origin_of(struct fsd *fs, struct fsd_inode *src, struct origin *o)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *b;
	int rc;

	if ((rc = inode_lock_block(fs, src, LKM_PR, &b)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)b->data;
	*o = (struct origin){ LE16(di->i_mode), LE32(di->i_uid), LE32(di->i_gid),
	    LE64(di->i_size), LE64(di->i_atime), LE64(di->i_mtime), LE32(di->i_atime_nsec),
	    LE32(di->i_mtime_nsec) };
	inode_unlock_block(fs, src, LKM_PR, b);
	return S_ISREG(o->mode) ? 0 : -EINVAL;
}

/*
 * May the caller put name in the directory di (locked)? A live
 * directory it may write and search, the name free.
 */
static int
dir_takes(fuse_req_t req, const struct ocfs2_dinode *di, const char *name)
{
	struct fsd *fs = fsd_of(req);
	uint64_t existing;
	int rc;

	if (!S_ISDIR(LE16(di->i_mode)))
		return -ENOTDIR;
	if (LE16(di->i_links_count) == 0)
		return -ENOENT;
	if ((rc = fsd_permission(req, LE16(di->i_mode), LE32(di->i_uid), LE32(di->i_gid),
	    W_OK | X_OK)) != 0)
		return rc;
	rc = dir_lookup(fs, di, name, strlen(name), &existing);
	return rc == 0 ? -EEXIST : rc == -ENOENT ? 0 : rc;
}

/* The same asked before any work, under a PR lock of its own. */
static int
dir_ready(fuse_req_t req, struct fsd_inode *dp, const char *name)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_buf *b;
	int rc;

	if ((rc = inode_lock_block(fs, dp, LKM_PR, &b)) != 0)
		return gone_is_enoent(rc);
	rc = dir_takes(req, (const struct ocfs2_dinode *)b->data, name);
	inode_unlock_block(fs, dp, LKM_PR, b);
	return rc;
}

/* A new inode in our orphan dir, open here (its last close deletes it while unnamed). */
static int
orphan_born(struct fsd *fs, const struct fuse_ctx *ctx, const struct origin *o,
    struct fsd_inode **ipp)
{
	/* another owner only for root or the owner, as cp -p; set-id bits with the owner */
	int keep = ctx->uid == 0 || ctx->uid == o->uid;
	unsigned mode = S_IFREG | (o->mode & (keep ? 07777u : 0777u));
	struct fsd_handle h;
	struct fsd_buf *ib;
	uint64_t blkno;
	int rc;

	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = orphan_create(&h, mode, keep ? o->uid : ctx->uid, keep ? o->gid : ctx->gid,
	    &ib)) == 0) {
		blkno = ib->blkno;
		block_put(fs, ib);
	}
	if ((rc = journal_stop(&h, rc != 0) ?: rc) != 0)
		return rc;
	if ((rc = inode_get(fs, blkno, ipp)) != 0)
		return rc;
	/*
	 * Open before anything else: an orphan scan deletes an unnamed inode
	 * nobody has open; one that came between finds it gone (ESTALE).
	 */
	if ((rc = inode_open(fs, *ipp)) != 0)
		inode_put(fs, *ipp);
	return rc;
}

/* What reflink_range cannot share (inline data): copied. */
static int
copy_rest(struct fsd *fs, struct fsd_inode *src, struct fsd_inode *dst, uint64_t off,
    uint64_t size)
{
	const size_t chunk = 1u << 20;
	const char *p;
	struct fsd_buf *b;
	size_t got;
	void *base;
	char *buf;
	int rc = 0;

	if ((buf = malloc(chunk)) == NULL)
		return -ENOMEM;
	while (off < size && rc == 0) {
		if ((rc = inode_lock_block(fs, src, LKM_PR, &b)) != 0)
			break;
		base = NULL;
		rc = data_read(fs, (const struct ocfs2_dinode *)b->data, off,
		    size - off < chunk ? (size_t)(size - off) : chunk, &base, &p, &got);
		if (rc == 0)
			memcpy(buf, p, got);
		free(base);
		inode_unlock_block(fs, src, LKM_PR, b);
		if (rc != 0 || got == 0)
			break;	/* got 0: the source shrank meanwhile */
		rc = file_write(fs, dst, off, buf, got, 0);
		off += got;
	}
	free(buf);
	return rc;
}

/* The source's bytes into the new file: shared clusters, else a copy. */
static int
fill(struct fsd *fs, struct fsd_inode *src, struct fsd_inode *dst, uint64_t size)
{
	struct fsd_reclaim room = { 0 };
	uint64_t done = 0;
	int64_t n;

	while (done < size) {
		n = reflink_range(fs, src, done, dst, done, size - done);
		if (n == -ENOSPC && fsd_reclaim(fs, &room))
			continue;
		if (n == -EOPNOTSUPP)
			return copy_rest(fs, src, dst, done, size);
		if (n <= 0)
			return (int)n;	/* 0: the source shrank meanwhile */
		done += (uint64_t)n;
	}
	return 0;
}

/* Every extended attribute of src (ACLs among them) onto dst. */
static int
copy_xattrs(struct fsd *fs, struct fsd_inode *src, struct fsd_inode *dst)
{
	char *names = NULL, *name, *val = NULL, *nv;
	const char *suffix;
	size_t len, vlen;
	int rc, index;

	if (!fs->xattr)
		return 0;
	if ((rc = xattr_list(fs, src, NULL, 0, &len)) != 0 || len == 0)
		return rc;
	if ((names = malloc(len)) == NULL)
		return -ENOMEM;
	if ((rc = xattr_list(fs, src, names, len, &len)) != 0)
		goto out;
	for (name = names; name < names + len && rc == 0; name += strlen(name) + 1) {
		if ((rc = xattr_parse_name(name, &index, &suffix)) != 0 ||
		    (rc = xattr_get(fs, src, index, suffix, NULL, 0, &vlen)) != 0)
			break;
		if ((nv = realloc(val, vlen + 1)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		val = nv;
		if ((rc = xattr_get(fs, src, index, suffix, val, vlen, &vlen)) == 0)
			rc = xattr_set(fs, dst, index, suffix, val, vlen, 0);
	}
out:
	free(val);
	free(names);
	return rc;
}

/*
 * One transaction: the new inode leaves the orphan dir for name in the
 * directory dp, with the source's times (ctime now) and its link.
 */
static int
name_it(fuse_req_t req, struct fsd_inode *dp, const char *name, struct fsd_inode *ip,
    const struct origin *o)
{
	struct fsd *fs = fsd_of(req);
	struct ocfs2_dinode *ddi, *di;
	struct fsd_buf *db = NULL, *ib = NULL;
	struct fsd_handle h;
	int rc;

	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	/* ops_namei.c's order: the directory, the inode, then the orphan dir */
	if ((rc = inode_lock_block(fs, dp, LKM_EX, &db)) != 0) {
		rc = gone_is_enoent(rc);
		goto out;
	}
	ddi = (struct ocfs2_dinode *)db->data;
	if ((rc = dir_takes(req, ddi, name)) != 0 ||
	    (rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0 ||
	    (rc = orphan_adopt(&h, ib)) != 0 ||
	    (rc = dir_add(&h, db, name, strlen(name), ip->blkno, OCFS2_FT_REG_FILE)) != 0 ||
	    (rc = journal_access(&h, db)) != 0)
		goto out;
	di = (struct ocfs2_dinode *)ib->data;
	di->i_atime = htole64(o->atime);
	di->i_atime_nsec = htole32(o->atime_nsec);
	di->i_mtime = htole64(o->mtime);
	di->i_mtime_nsec = htole32(o->mtime_nsec);
	inode_now(di, 0, 0, 1);
	inode_now(ddi, 0, 1, 1);
	journal_dirty(&h, ib);
	journal_dirty(&h, db);
out:
	if (ib != NULL)
		inode_unlock_block_in(&h, ip, ib);
	if (db != NULL)
		inode_unlock_block_in(&h, dp, db);
	return journal_stop(&h, rc != 0) ?: rc;
}

static int
reflink_file(fuse_req_t req, uint64_t src_blkno, uint64_t dir, const char *name)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *src, *dp = NULL, *ip = NULL;
	struct origin o;
	int rc;

	if (fs->readonly)
		return -EROFS;
	if (!fs->refcount)
		return -EOPNOTSUPP;
	if ((rc = inode_get(fs, src_blkno, &src)) != 0)
		return rc;
	/*
	 * The directory is a number from the caller, who holds it open (o2ctl
	 * does): only an inode the kernel knows is taken, never a block read
	 * on a stranger's word (a bad number would look like damage).
	 */
	if ((dp = inode_find(fs, dir)) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	/* reading the source is what sharing it gives */
	if ((rc = origin_of(fs, src, &o)) != 0 ||
	    (rc = fsd_permission(req, o.mode, o.uid, o.gid, R_OK)) != 0 ||
	    (rc = dir_ready(req, dp, name)) != 0 ||
	    (rc = orphan_born(fs, fuse_req_ctx(req), &o, &ip)) != 0)
		goto out;
	if ((rc = fill(fs, src, ip, o.size)) != 0 || (rc = copy_xattrs(fs, src, ip)) != 0)
		goto out;
	/* test-only crash point: complete, unnamed (doc/refcount.md) */
	journal_test_pause(fs, "FSD_TEST_REFLINK_PAUSE", ip->blkno,
	    "reflink built in the orphan dir, not named yet");
	/* named and durable on return, as o2ctl's fsync of the new file was */
	if ((rc = name_it(req, dp, name, ip, &o)) == 0)
		rc = journal_commit(fs);
out:
	/* still unnamed (a failure): the close deletes it */
	if (ip != NULL)
		inode_close(fs, ip);
	if (rc == 0)
		inode_drop_dentry(fs, dir, name);
	if (dp != NULL)
		inode_put(fs, dp);
	inode_put(fs, src);
	return rc;
}

void
fsd_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, void *arg, struct fuse_file_info *fi,
    unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_reflink_arg a;
	size_t len;
	int rc;

	(void)arg;
	(void)fi;
	(void)out_bufsz;
	fsd_caller(req);
	if (cmd != FSD_IOC_REFLINK || (flags & FUSE_IOCTL_DIR))
		return (void)fuse_reply_err(req, ENOTTY);
	if (in_bufsz != sizeof(a))
		return (void)fuse_reply_err(req, EINVAL);
	memcpy(&a, in_buf, sizeof(a));
	len = strnlen(a.name, sizeof(a.name));
	if (len == sizeof(a.name) || len > OCFS2_MAX_FILENAME_LEN)
		return (void)fuse_reply_err(req, ENAMETOOLONG);
	if (len == 0 || strchr(a.name, '/') != NULL || strcmp(a.name, ".") == 0 ||
	    strcmp(a.name, "..") == 0)
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = reflink_file(req, fsd_ino_to_blkno(fs, ino), a.dir, a.name)) != 0) {
		log_debug("reflink of inode %llu to %s in %llu: %s", (unsigned long long)ino,
		    a.name, (unsigned long long)a.dir, strerror(-rc));
		return (void)fuse_reply_err(req, -rc);
	}
	fuse_reply_ioctl(req, 0, NULL, 0);
}
