/*
 * FUSE operations on names: create, mknod, mkdir, symlink, link, unlink,
 * rmdir, rename. Each change is one handle (all or nothing), and takes
 * the META locks it needs EX. Readers never hold two locks at once, but
 * writers on different nodes do, so all of them keep one order (the
 * kernel's, fs/ocfs2/namei.c):
 *
 *   1. the RENAME lock, for a move between directories;
 *   2. directories that hold the names: of two, an ancestor before its
 *      descendant, else the lower block number first (ocfs2_double_lock);
 *   3. the inodes the names lead to, lower block number first;
 *   4. system files: the orphan dir, then the allocators (an orphan's
 *      deletion, orphan.c, takes the orphan dir before the orphan: with
 *      no name left, no writer here locks it);
 *   5. a new inode (inode_create): no node waits for it holding another.
 *
 * A lock asked for out of this order waits for another node that waits
 * for it: FUSE requests hang on both nodes for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#include "ops.h"

/* Without indexed dirs nlink is 16 bits; the kernel stops at 32000. */
#define FSD_LINK_MAX	32000

uint8_t
fsd_ft_of(unsigned mode)
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

static void
links_add(struct ocfs2_dinode *di, int d)
{
	di->i_links_count = htole16((uint16_t)(LE16(di->i_links_count) + d));
}

/* A locked inode for an operation: the in-memory inode and its block. */
struct locked {
	struct fsd_inode	*ip;
	struct fsd_buf		*b;
	struct ocfs2_dinode	*di;
};

/*
 * Lock an inode EX: one the kernel named by number (kernels: a parent, a
 * link's target), which must still be the inode it knows, or one a name
 * leads to now. Either gone is ENOENT (see gone_is_enoent).
 */
static int
lock_ino(struct fsd *fs, uint64_t blkno, int kernels, struct locked *l)
{
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = inode_get(fs, blkno, &l->ip)) != 0)
		return gone_is_enoent(rc);
	if ((rc = (kernels ? inode_lock_kernel : inode_lock_block)(fs, l->ip, LKM_EX, &l->b)) != 0) {
		inode_put(fs, l->ip);
		l->ip = NULL;
		return gone_is_enoent(rc);
	}
	l->di = (struct ocfs2_dinode *)l->b->data;
	return 0;
}

/* Inside the handle that may have changed it: h keeps its lock. */
static void
unlock_ino(struct fsd_handle *h, struct locked *l)
{
	if (l->ip == NULL)
		return;
	inode_unlock_block_in(h, l->ip, l->b);
	inode_put(h->fs, l->ip);
	l->ip = NULL;
}

static int
check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (len > OCFS2_MAX_FILENAME_LEN)
		return -ENAMETOOLONG;
	return 0;
}

/* What a new inode of *mode under parent takes from its default ACL (acl.c). */
static int
inherit_acls(struct fsd *fs, fuse_ino_t parent, unsigned *mode, unsigned umask,
    struct acl_inherit *a)
{
	struct fsd_inode *dp;
	int rc;

	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, parent), &dp)) != 0)
		return gone_is_enoent(rc);
	rc = gone_is_enoent(acl_inherit(fs, dp, mode, umask, a));
	inode_put(fs, dp);
	return rc;
}

/*
 * Make a new inode of mode under parent, named name: a directory gets
 * "." and "..", a symlink its target (fast in the inode, or slow in a
 * cluster). The entry for FUSE is filled on success. When the name
 * exists, -EEXIST, and *found (if asked for) is the inode it names.
 */
static int
do_create_once(fuse_req_t req, fuse_ino_t parent, const char *name, unsigned mode, dev_t rdev,
    const char *target, struct fuse_entry_param *e, uint64_t *found)
{
	struct fsd *fs = fsd_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct fsd_handle h;
	struct locked dp;
	struct fsd_buf *ib = NULL;
	struct ocfs2_dinode *di;
	struct acl_inherit inh = { NULL, NULL, 0, 0 };
	uint64_t ino = 0, existing;
	uint32_t gid;
	size_t tlen;
	int rc;

	if ((rc = check_name(name)) != 0)
		return rc;
	if (fs->acl && (rc = inherit_acls(fs, parent, &mode, ctx->umask, &inh)) != 0)
		return rc;
	if ((rc = journal_start(fs, &h)) != 0) {
		acl_inherit_free(&inh);
		return rc;
	}
	if ((rc = lock_ino(fs, fsd_ino_to_blkno(fs, parent), 1, &dp)) != 0) {
		journal_stop(&h, 1);
		acl_inherit_free(&inh);
		return rc;
	}
	if (!S_ISDIR(LE16(dp.di->i_mode)) || LE16(dp.di->i_links_count) == 0) {
		rc = S_ISDIR(LE16(dp.di->i_mode)) ? -ENOENT : -ENOTDIR;
		goto out;
	}
	if ((rc = dir_lookup(fs, dp.di, name, strlen(name), &existing)) != -ENOENT) {
		if (rc == 0 && found != NULL)
			*found = existing;
		rc = rc == 0 ? -EEXIST : rc;
		goto out;
	}
	if (S_ISDIR(mode) && LE16(dp.di->i_links_count) >= FSD_LINK_MAX) {
		rc = -EMLINK;
		goto out;
	}
	/* BSD group semantics under a setgid directory, as the kernel does */
	gid = ctx->gid;
	if (LE16(dp.di->i_mode) & S_ISGID) {
		gid = LE32(dp.di->i_gid);
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	if ((rc = inode_create(&h, mode, ctx->uid, gid, rdev, &ib)) != 0)
		goto out;
	di = (struct ocfs2_dinode *)ib->data;
	ino = ib->blkno;
	if (S_ISDIR(mode)) {
		if ((rc = dir_init(&h, ib, dp.b->blkno)) != 0)
			goto out;
		if ((rc = journal_access(&h, dp.b)) != 0)
			goto out;
		links_add(dp.di, 1);	/* the new ".." */
	} else if (S_ISLNK(mode)) {
		tlen = strlen(target);
		if (tlen + 1 <= (size_t)ocfs2_fast_symlink_chars(fs->vol.block_bytes)) {
			memcpy(di->id2.i_symlink, target, tlen);
			di->i_size = htole64(tlen);
		} else {
			/* slow: NUL-terminated in a cluster, i_size without the NUL */
			di->id2.i_list.l_count = htole16(ocfs2_extent_recs_per_inode(fs->vol.block_bytes));
			if ((rc = file_write_locked(&h, ib, 0, target, tlen + 1)) != 0)
				goto out;
			di->i_size = htole64(tlen);
		}
	}
	if ((rc = dir_add(&h, dp.b, name, strlen(name), ino, fsd_ft_of(mode))) != 0)
		goto out;
	if ((rc = journal_access(&h, dp.b)) != 0)
		goto out;
	inode_now(dp.di, 0, 1, 1);
	journal_dirty(&h, dp.b);
	journal_dirty(&h, ib);
out:
	block_put(fs, ib);
	unlock_ino(&h, &dp);
	if (journal_stop(&h, rc != 0) != 0 && rc == 0)
		rc = -EIO;
	/* its ACLs in handles of their own: until then the mode limits it as they would */
	if (rc == 0 && fs->acl)
		rc = acl_apply(fs, ino, &inh);
	acl_inherit_free(&inh);
	if (rc == 0)
		rc = fsd_make_entry(fs, ino, e);
	if (rc == 0 && S_ISDIR(mode))
		inode_dir_named(fs, ino, fsd_ino_to_blkno(fs, parent), name, strlen(name));
	return rc;
}

/* Out of space: retry while fsd_reclaim finds room or a busy allocator comes free. */
static int
do_create(fuse_req_t req, fuse_ino_t parent, const char *name, unsigned mode, dev_t rdev,
    const char *target, struct fuse_entry_param *e, uint64_t *found)
{
	struct fsd_reclaim room = { 0 };
	int rc = do_create_once(req, parent, name, mode, rdev, target, e, found);

	while (rc == -ENOSPC && fsd_reclaim(fsd_of(req), &room))
		rc = do_create_once(req, parent, name, mode, rdev, target, e, found);
	return rc;
}

void
fsd_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fuse_entry_param e;
	int rc;

	fsd_caller(req);
	if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) &&
	    !S_ISSOCK(mode))
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = do_create(req, parent, name, mode, rdev, NULL, &e, NULL)) != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_entry(req, &e);
}

void
fsd_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fuse_entry_param e;
	int rc;

	fsd_caller(req);
	if ((rc = do_create(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, &e, NULL)) != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_entry(req, &e);
}

void
fsd_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int rc;

	fsd_caller(req);
	if (strlen(link) == 0 || strlen(link) >= PATH_MAX)
		return (void)fuse_reply_err(req, strlen(link) ? ENAMETOOLONG : ENOENT);
	if ((rc = do_create(req, parent, name, S_IFLNK | 0777, 0, link, &e, NULL)) != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_entry(req, &e);
}

/*
 * open(O_CREAT) without O_EXCL of a name that another node made after
 * this kernel's LOOKUP found nothing: open(2) opens what is there. The
 * kernel takes our reply as a creation, so it checks no permission and
 * leaves O_TRUNC to us. Only a regular file can be the answer to a
 * CREATE. A directory is EISDIR, as open(2) of one with O_CREAT says;
 * for any other kind, ESTALE makes the kernel's path walk look the name
 * up afresh (do_filp_open's LOOKUP_REVAL retry), and it opens that as
 * open(2) would (follows a symlink, opens a fifo...).
 */
static int
entry_of_existing(fuse_req_t req, uint64_t blkno, int flags, struct fuse_entry_param *e)
{
	struct fsd *fs = fsd_of(req);
	int rc, mask;

	if ((rc = fsd_make_entry(fs, blkno, e)) != 0)
		return rc;
	switch (flags & O_ACCMODE) {
	case O_RDONLY:	mask = R_OK; break;
	case O_WRONLY:	mask = W_OK; break;
	default:	mask = R_OK | W_OK; break;
	}
	if (flags & O_TRUNC)
		mask |= W_OK;
	if (S_ISDIR(e->attr.st_mode))
		rc = -EISDIR;
	else if (!S_ISREG(e->attr.st_mode))
		rc = -ESTALE;
	else
		rc = fsd_permission(req, e->attr.st_mode, e->attr.st_uid, e->attr.st_gid, mask);
	if (rc != 0)
		inode_forget(fs, blkno, 1);
	return rc;
}

/* Create (or find) the file and open it: e filled and the file open here on success. */
static int
create_open(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi, struct fuse_entry_param *e)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	uint64_t found = 0;
	int rc, created = 1;

	fsd_caller(req);
	rc = do_create(req, parent, name, S_IFREG | (mode & 07777), 0, NULL, e, &found);
	if (rc == -EEXIST && found != 0 && !(fi->flags & O_EXCL)) {
		created = 0;
		rc = entry_of_existing(req, found, fi->flags, e);
	}
	if (rc != 0)
		return rc;
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, e->ino), &ip)) == 0) {
		/* a file we just made is empty: O_TRUNC is for one that was there */
		rc = fsd_open_inode(fs, ip, created ? fi->flags & ~O_TRUNC : fi->flags);
		if (rc == 0)
			lockres_file_open(ip->meta, 1, fsd_open_writes(fi));
		inode_put(fs, ip);
	}
	if (rc != 0)
		inode_forget(fs, fsd_ino_to_blkno(fs, e->ino), 1);
	return rc;
}

/* Tries of an operation whose inode another node deleted meanwhile. */
#define STALE_TRIES	3

void
fsd_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fuse_entry_param e;
	int rc, tries = 0;

	/*
	 * Another node may delete the file between its creation (or our
	 * finding it) and its OPEN lock: the name is gone or new by then,
	 * and the creation starts again, as open(2) would have made it.
	 */
	do
		rc = create_open(req, parent, name, mode, fi, &e);
	while (rc == -ESTALE && ++tries < STALE_TRIES);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fsd_open_flags(fs, fi);
	fuse_reply_create(req, &e, fi);
}

void
fsd_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fsd *fs = fsd_of(req);
	struct fuse_entry_param e;
	struct fsd_handle h;
	struct locked dp, ip;
	uint64_t existing, blkno = fsd_ino_to_blkno(fs, ino);
	int rc;

	fsd_caller(req);
	memset(&ip, 0, sizeof(ip));
	if ((rc = check_name(newname)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = journal_start(fs, &h)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = lock_ino(fs, fsd_ino_to_blkno(fs, newparent), 1, &dp)) != 0)
		goto stop;
	if (!S_ISDIR(LE16(dp.di->i_mode))) {
		rc = -ENOTDIR;
		goto out;
	}
	if ((rc = dir_lookup(fs, dp.di, newname, strlen(newname), &existing)) != -ENOENT) {
		rc = rc == 0 ? -EEXIST : rc;
		goto out;
	}
	if ((rc = lock_ino(fs, blkno, 1, &ip)) != 0)
		goto out;
	if (S_ISDIR(LE16(ip.di->i_mode)))
		rc = -EPERM;
	else if (LE16(ip.di->i_links_count) == 0)
		rc = -ENOENT;
	else if (LE16(ip.di->i_links_count) >= FSD_LINK_MAX)
		rc = -EMLINK;
	if (rc != 0)
		goto out;
	if ((rc = dir_add(&h, dp.b, newname, strlen(newname), blkno,
	    fsd_ft_of(LE16(ip.di->i_mode)))) != 0)
		goto out;
	if ((rc = journal_access(&h, ip.b)) != 0 || (rc = journal_access(&h, dp.b)) != 0)
		goto out;
	links_add(ip.di, 1);
	inode_now(ip.di, 0, 0, 1);
	inode_now(dp.di, 0, 1, 1);
	journal_dirty(&h, ip.b);
	journal_dirty(&h, dp.b);
out:
	unlock_ino(&h, &ip);
	unlock_ino(&h, &dp);
stop:
	journal_stop(&h, rc != 0);
	if (rc == 0)
		rc = fsd_make_entry(fs, blkno, &e);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fuse_reply_entry(req, &e);
}

/*
 * Drop one name's reference to a locked inode: a directory loses its "."
 * too and its parent the "..". At zero links it goes to the orphan dir,
 * and *doomed names it (orphan_unexpect if the handle fails after all).
 */
static int
drop_link(struct fsd_handle *h, struct locked *parent, struct locked *victim, uint64_t *doomed)
{
	int rc, isdir = S_ISDIR(LE16(victim->di->i_mode));

	if ((rc = journal_access(h, victim->b)) != 0 || (rc = journal_access(h, parent->b)) != 0)
		return rc;
	if (isdir) {
		victim->di->i_links_count = 0;
		links_add(parent->di, -1);
	} else
		links_add(victim->di, -1);
	inode_note_unlinked(h->fs, victim->ip, LE16(victim->di->i_links_count) == 0);
	inode_now(victim->di, 0, 0, 1);
	journal_dirty(h, victim->b);
	journal_dirty(h, parent->b);
	if (LE16(victim->di->i_links_count) != 0)
		return 0;
	if ((rc = orphan_add(h, victim->b)) == 0) {
		*doomed = victim->b->blkno;
		orphan_expect(h->fs, *doomed);
	}
	return rc;
}

static void
do_remove(fuse_req_t req, fuse_ino_t parent, const char *name, int rmdir)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_handle h;
	struct locked dp, ip;
	uint64_t ino, doomed = 0;
	int rc, isdir;

	memset(&ip, 0, sizeof(ip));
	if ((rc = check_name(name)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = journal_start(fs, &h)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = lock_ino(fs, fsd_ino_to_blkno(fs, parent), 1, &dp)) != 0)
		goto stop;
	if ((rc = dir_lookup(fs, dp.di, name, strlen(name), &ino)) != 0)
		goto out;
	if ((rc = lock_ino(fs, ino, 0, &ip)) != 0)
		goto out;
	isdir = S_ISDIR(LE16(ip.di->i_mode));
	if (rmdir && !isdir)
		rc = -ENOTDIR;
	else if (!rmdir && isdir)
		rc = -EISDIR;
	else if (rmdir && (rc = dir_is_empty(fs, ip.di)) >= 0)
		rc = rc ? 0 : -ENOTEMPTY;
	if (rc != 0)
		goto out;
	if ((rc = dir_remove(&h, dp.b, name, strlen(name))) != 0)
		goto out;
	if ((rc = drop_link(&h, &dp, &ip, &doomed)) != 0)
		goto out;
	inode_now(dp.di, 0, 1, 1);
out:
	unlock_ino(&h, &ip);
	unlock_ino(&h, &dp);
stop:
	journal_stop(&h, rc != 0);
	if (rc != 0 && doomed != 0)
		orphan_unexpect(fs, doomed);
	fuse_reply_err(req, -rc);
}

void
fsd_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	do_remove(req, parent, name, 0);
}

void
fsd_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	do_remove(req, parent, name, 1);
}

struct dotdot {
	uint64_t	ino;
};

static int
dotdot_cb(void *arg, const struct fsd_dirent *d)
{
	if (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.') {
		((struct dotdot *)arg)->ino = d->ino;
		return 1;
	}
	return 0;
}

/* A directory and its ancestors up to the root, the directory first. */
struct lineage {
	uint64_t	*blk;
	unsigned	 n, cap;
};

/*
 * Walk ".." from dir up to the root, each directory read under its own
 * META PR lock and no other (as ocfs2_check_if_ancestor does). Taken
 * with the RENAME lock and no inode lock held, it stays true until the
 * rename ends: only a move between directories changes ancestry, and
 * every such move holds RENAME.
 */
static int
lineage_of(struct fsd *fs, uint64_t dir, struct lineage *l)
{
	struct fsd_inode *ip;
	struct fsd_buf *b;
	struct dotdot dd;
	int rc;

	for (l->n = 0; l->n < 4096; ) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 16;
			l->blk = xrealloc(l->blk, l->cap * sizeof(*l->blk));
		}
		l->blk[l->n++] = dir;
		if (dir == fs->root_blkno)
			return 0;
		if ((rc = inode_get(fs, dir, &ip)) != 0)
			return gone_is_enoent(rc);
		if ((rc = gone_is_enoent(inode_lock_block(fs, ip, LKM_PR, &b))) == 0) {
			dd.ino = 0;
			rc = dir_iterate(fs, (const struct ocfs2_dinode *)b->data, 0, dotdot_cb, &dd);
			inode_unlock_block(fs, ip, LKM_PR, b);
		}
		inode_put(fs, ip);
		if (rc < 0)
			return rc;
		if (dd.ino == 0 || dd.ino == dir)
			return -EIO;
		dir = dd.ino;
	}
	return -ELOOP;
}

/* Is blkno l's directory or one of its ancestors? */
static int
lineage_has(const struct lineage *l, uint64_t blkno)
{
	unsigned i;

	for (i = 0; i < l->n; i++)
		if (l->blk[i] == blkno)
			return 1;
	return 0;
}

/*
 * Lock a and b EX (two inodes, both the kernel's or both found by name),
 * b first when b_first: callers follow the lock order at the top of this
 * file.
 */
static int
lock_two(struct fsd_handle *h, uint64_t a, struct locked *la, uint64_t b, struct locked *lb,
    int kernels, int b_first)
{
	struct fsd *fs = h->fs;
	int rc;

	if (b_first) {
		if ((rc = lock_ino(fs, b, kernels, lb)) == 0 &&
		    (rc = lock_ino(fs, a, kernels, la)) != 0)
			unlock_ino(h, lb);
	} else if ((rc = lock_ino(fs, a, kernels, la)) == 0 &&
	    (rc = lock_ino(fs, b, kernels, lb)) != 0)
		unlock_ino(h, la);
	return rc;
}

/*
 * RENAME_EXCHANGE: both names exist and trade inodes. A directory that
 * changes parent takes its ".." along, and its link to the old parent
 * moves to the new one; dir and dir across parents leaves both counts
 * as they were. Either may not go below itself (EINVAL, as Linux): told
 * by the parents' lineages (lo, ln) before either inode is locked.
 */
static int
exchange(struct fsd_handle *h, struct locked *op, struct locked *npp, int same,
    const char *name, const char *newname, const struct lineage *lo, const struct lineage *ln,
    uint64_t moved[2])
{
	struct fsd *fs = h->fs;
	struct locked sp, tp;
	uint64_t src, dst;
	int rc, sdir, tdir;

	memset(&sp, 0, sizeof(sp));
	memset(&tp, 0, sizeof(tp));
	if ((rc = dir_lookup(fs, op->di, name, strlen(name), &src)) != 0 ||
	    (rc = dir_lookup(fs, npp->di, newname, strlen(newname), &dst)) != 0)
		return rc;
	if (src == dst)
		return 0;	/* two names of one inode: nothing to swap */
	if (!same && (lineage_has(ln, src) || lineage_has(lo, dst)))
		return -EINVAL;
	if ((rc = lock_two(h, src, &sp, dst, &tp, 0, dst < src)) != 0)
		return rc;
	sdir = S_ISDIR(LE16(sp.di->i_mode));
	tdir = S_ISDIR(LE16(tp.di->i_mode));
	if (!same && ((sdir && !tdir && LE16(npp->di->i_links_count) >= FSD_LINK_MAX) ||
	    (tdir && !sdir && LE16(op->di->i_links_count) >= FSD_LINK_MAX))) {
		rc = -EMLINK;
		goto out;
	}
	if ((rc = dir_retarget(h, op->b, name, strlen(name), dst,
	    fsd_ft_of(LE16(tp.di->i_mode)))) != 0 ||
	    (rc = dir_retarget(h, npp->b, newname, strlen(newname), src,
	    fsd_ft_of(LE16(sp.di->i_mode)))) != 0)
		goto out;
	if ((rc = journal_access(h, sp.b)) != 0 || (rc = journal_access(h, tp.b)) != 0 ||
	    (rc = journal_access(h, op->b)) != 0 || (rc = journal_access(h, npp->b)) != 0)
		goto out;
	if (!same) {
		if (sdir && (rc = dir_retarget(h, sp.b, "..", 2, npp->b->blkno,
		    OCFS2_FT_DIR)) != 0)
			goto out;
		if (tdir && (rc = dir_retarget(h, tp.b, "..", 2, op->b->blkno,
		    OCFS2_FT_DIR)) != 0)
			goto out;
		links_add(op->di, tdir - sdir);
		links_add(npp->di, sdir - tdir);
	}
	inode_now(sp.di, 0, 0, 1);
	inode_now(tp.di, 0, 0, 1);
	inode_now(op->di, 0, 1, 1);
	inode_now(npp->di, 0, 1, 1);
	journal_dirty(h, sp.b);
	journal_dirty(h, tp.b);
	journal_dirty(h, op->b);
	journal_dirty(h, npp->b);
	moved[0] = sdir ? src : 0;
	moved[1] = tdir ? dst : 0;
out:
	unlock_ino(h, &tp);
	unlock_ino(h, &sp);
	return rc;
}

void
fsd_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
    const char *newname, unsigned int flags)
{
	struct fsd *fs = fsd_of(req);
	struct lineage lo = { NULL, 0, 0 }, ln = { NULL, 0, 0 };
	struct locked op, np, sp, tp;
	struct fsd_handle h;
	struct locked *npp;
	uint64_t src, dst = 0, doomed = 0, moved[2] = { 0, 0 };
	uint64_t pblk = fsd_ino_to_blkno(fs, parent), npblk = fsd_ino_to_blkno(fs, newparent);
	int rc, sdir, same, r;

	fsd_caller(req);
	memset(&op, 0, sizeof(op));
	memset(&np, 0, sizeof(np));
	memset(&sp, 0, sizeof(sp));
	memset(&tp, 0, sizeof(tp));
	/* no RENAME_WHITEOUT: overlayfs's, and OCFS2 has no whiteouts */
	if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    (flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)) == (RENAME_NOREPLACE | RENAME_EXCHANGE))
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = check_name(name)) != 0 || (rc = check_name(newname)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = journal_start(fs, &h)) != 0)
		return (void)fuse_reply_err(req, -rc);
	same = pblk == npblk;
	if (same)
		rc = lock_ino(fs, pblk, 1, &op);
	else if ((rc = handle_lock(&h, fs->rename_lock)) == 0 &&
	    (rc = lineage_of(fs, pblk, &lo)) == 0 && (rc = lineage_of(fs, npblk, &ln)) == 0)
		rc = lock_two(&h, pblk, &op, npblk, &np, 1, lineage_has(&lo, npblk) ||
		    (!lineage_has(&ln, pblk) && npblk < pblk));
	if (rc != 0)
		goto stop;
	npp = same ? &op : &np;
	if (!S_ISDIR(LE16(npp->di->i_mode)) || LE16(npp->di->i_links_count) == 0) {
		rc = S_ISDIR(LE16(npp->di->i_mode)) ? -ENOENT : -ENOTDIR;
		goto out;
	}
	if (flags & RENAME_EXCHANGE) {
		rc = exchange(&h, &op, npp, same, name, newname, &lo, &ln, moved);
		goto out;
	}
	if ((rc = dir_lookup(fs, op.di, name, strlen(name), &src)) != 0)
		goto out;
	r = dir_lookup(fs, npp->di, newname, strlen(newname), &dst);
	if (r != 0 && r != -ENOENT) {
		rc = r;
		goto out;
	}
	if (r == 0 && (flags & RENAME_NOREPLACE)) {
		rc = -EEXIST;
		goto out;
	}
	if (r == 0 && dst == src)
		goto out;	/* two names of one inode: nothing to do */
	/* a directory below itself; a target above its source: as Linux says */
	if (!same && (lineage_has(&ln, src) || (r == 0 && lineage_has(&lo, dst)))) {
		rc = lineage_has(&ln, src) ? -EINVAL : -ENOTEMPTY;
		goto out;
	}
	if ((rc = r == 0 ? lock_two(&h, src, &sp, dst, &tp, 0, dst < src) :
	    lock_ino(fs, src, 0, &sp)) != 0)
		goto out;
	sdir = S_ISDIR(LE16(sp.di->i_mode));
	if (sdir && !same && r != 0 && LE16(npp->di->i_links_count) >= FSD_LINK_MAX) {
		rc = -EMLINK;
		goto out;
	}
	if (r == 0) {
		if (sdir && !S_ISDIR(LE16(tp.di->i_mode)))
			rc = -ENOTDIR;
		else if (!sdir && S_ISDIR(LE16(tp.di->i_mode)))
			rc = -EISDIR;
		else if (sdir && (rc = dir_is_empty(fs, tp.di)) >= 0)
			rc = rc ? 0 : -ENOTEMPTY;
		if (rc != 0)
			goto out;
		/* the new name now names src; the old target loses a link */
		if ((rc = dir_retarget(&h, npp->b, newname, strlen(newname), src,
		    fsd_ft_of(LE16(sp.di->i_mode)))) != 0 || (rc = drop_link(&h, npp, &tp, &doomed)) != 0)
			goto out;
	} else if ((rc = dir_add(&h, npp->b, newname, strlen(newname), src,
	    fsd_ft_of(LE16(sp.di->i_mode)))) != 0)
		goto out;
	if ((rc = dir_remove(&h, op.b, name, strlen(name))) != 0)
		goto out;
	if ((rc = journal_access(&h, sp.b)) != 0 || (rc = journal_access(&h, op.b)) != 0 ||
	    (rc = journal_access(&h, npp->b)) != 0)
		goto out;
	if (sdir && !same) {
		/* its ".." moves from the old parent to the new one */
		if ((rc = dir_retarget(&h, sp.b, "..", 2, npp->b->blkno, OCFS2_FT_DIR)) != 0)
			goto out;
		links_add(op.di, -1);
		links_add(npp->di, 1);
	}
	inode_now(sp.di, 0, 0, 1);
	inode_now(op.di, 0, 1, 1);
	inode_now(npp->di, 0, 1, 1);
	journal_dirty(&h, sp.b);
	journal_dirty(&h, op.b);
	journal_dirty(&h, npp->b);
	moved[0] = sdir ? src : 0;
out:
	unlock_ino(&h, &tp);
	unlock_ino(&h, &sp);
	unlock_ino(&h, &np);
	unlock_ino(&h, &op);
stop:
	if (journal_stop(&h, rc != 0) == 0 && rc == 0) {
		if (moved[0] != 0)
			inode_dir_renamed(fs, moved[0], npblk, newname);
		if (moved[1] != 0)
			inode_dir_renamed(fs, moved[1], pblk, name);
	}
	free(lo.blk);
	free(ln.blk);
	if (rc != 0 && doomed != 0)
		orphan_unexpect(fs, doomed);
	fuse_reply_err(req, -rc);
}

/* RENAME: one move between directories at a time across the cluster (the
 * directories' blocks are under their META locks). */
const struct fsd_lock_ops rename_lock_ops = { .letter = 'R' };
