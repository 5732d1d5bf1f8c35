/* The FUSE operations on the tree. */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dlmfs.h"
#include "util.h"

static void
dlmfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_node *n = node_of(parent);
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk;

	if (n->kind == N_ROOT) {
		if ((dom = dom_find(name)) != NULL && dom->state != DOM_JOINING) {
			node_reply_entry(req, &dom->node);
			return;
		}
	} else if ((dom = as_dom(n)) != NULL && !n->removed &&
	    (lk = lockfile_find(dom, name)) != NULL) {
		node_reply_entry(req, &lk->node);
		return;
	}
	fuse_reply_err(req, ENOENT);
}

static void
dlmfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(ino, nlookup);
	fuse_reply_none(req);
}

static void
dlmfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		node_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
dlmfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	node_stat(node_of(ino), &st);
	fuse_reply_attr(req, &st, 0);
}

/* Ownership, mode and times as any inode; the size stays 64 (dlmfs ignores it). */
static void
dlmfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(ino);
	struct timespec now;
	struct stat st;

	(void)fi;
	clock_gettime(CLOCK_REALTIME, &now);
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = attr->st_mode & 07777;
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		n->atime = now;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		n->mtime = now;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = attr->st_mtim;
	n->ctime = now;
	node_stat(n, &st);
	fuse_reply_attr(req, &st, 0);
}

/* A readdir reply being filled, from entry `off` on. */
struct dirbuf {
	fuse_req_t	 req;
	char		*buf;
	size_t		 size, len;
	off_t		 off, pos;
	int		 full;
};

static void
dirbuf_add(struct dirbuf *d, const char *name, mode_t type, uint64_t ino)
{
	struct stat st;
	size_t n;

	if (d->full || d->pos++ < d->off)
		return;
	memset(&st, 0, sizeof(st));
	st.st_mode = type;
	st.st_ino = ino;
	n = fuse_add_direntry(d->req, d->buf + d->len, d->size - d->len, name,
	    &st, d->pos);
	if (n > d->size - d->len)
		d->full = 1;
	else
		d->len += n;
}

static void
dlmfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(ino);
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk;
	struct dirbuf d = { .req = req, .size = size, .off = off };

	(void)fi;
	if (n->kind == N_LOCK) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d.buf = xcalloc(1, size);
	dirbuf_add(&d, ".", S_IFDIR, n->ino);
	dirbuf_add(&d, "..", S_IFDIR, dfs->root.ino);
	if (n->kind == N_ROOT) {
		TAILQ_FOREACH(dom, &dfs->doms, entry)
			if (dom->state != DOM_JOINING)
				dirbuf_add(&d, dom->name, S_IFDIR, dom->node.ino);
	} else if (!n->removed) {
		TAILQ_FOREACH(lk, &as_dom(n)->locks, entry)
			dirbuf_add(&d, lk->name, S_IFREG, lk->node.ino);
	}
	fuse_reply_buf(req, d.buf, d.len);
	free(d.buf);
}

/* mkdir at the root joins the domain of that name; elsewhere EPERM. */
static void
dlmfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct dlmfs_dom *dom;

	if (node_of(parent)->kind != N_ROOT) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strlen(name) >= DOMAIN_NAME_MAX) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((dom = dom_find(name)) != NULL) {
		if (dom->state == DOM_JOINING)
			req_park(req, &dom->mkdirs);
		else
			fuse_reply_err(req, EEXIST);
		return;
	}
	if (dfs->conn == NULL) {
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	dom = dom_new(name, mode, req);
	if (session_join(dom) == -1) {
		dom_remove(dom);
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	req_park(req, &dom->mkdirs);
}

/* rmdir leaves the domain, once it has no lock file. */
static void
dlmfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_dom *dom;

	if (node_of(parent)->kind != N_ROOT || (dom = dom_find(name)) == NULL ||
	    dom->state == DOM_JOINING || dom->state == DOM_LEAVING) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!TAILQ_EMPTY(&dom->locks)) {
		fuse_reply_err(req, ENOTEMPTY);
		return;
	}
	if (dom->inflight > 0) {
		/* Its rejoin is on the way. */
		fuse_reply_err(req, EBUSY);
		return;
	}
	if (dom->state != DOM_JOINED ||
	    session_leave(dom) == -1) {
		/* Not joined through the current connection: nothing to leave. */
		dom_remove(dom);
		fuse_reply_err(req, 0);
		return;
	}
	dom->state = DOM_LEAVING;
	dom->rmdir = req;
}

static void
dlmfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(parent);
	struct dlmfs_dom *dom = as_dom(n);
	struct dlmfs_lock *lk;

	if (dom == NULL) {
		/* The root takes directories only. */
		fuse_reply_err(req, EACCES);
		return;
	}
	if (n->removed || dom->state == DOM_LEAVING) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (strlen(name) >= LOCK_NAME_MAX || name[0] == '$') {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((lk = lockfile_find(dom, name)) != NULL && (fi->flags & O_EXCL)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	if (lk == NULL)
		lk = lockfile_new(dom, name, mode, req);
	cache_open(req, lk, fi, 1);
}

static void
dlmfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dlmfs_lock *lk = as_lock(node_of(ino));

	if (lk == NULL) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (lk->node.removed) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	cache_open(req, lk, fi, 0);
}

static struct dlmfs_fh *
fh_of(const struct fuse_file_info *fi)
{
	return (struct dlmfs_fh *)(uintptr_t)fi->fh;
}

static void
dlmfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	/* Answered first: the release cannot fail, and may free the lock. */
	fuse_reply_err(req, 0);
	cache_release(fh_of(fi));
}

/* The LVB; nothing when a dead holder may have left it stale. */
static void
dlmfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct dlmfs_fh *fh = fh_of(fi);
	struct dlmfs_lock *lk = fh->lk;

	(void)ino;
	if (fh->gen != dfs->gen) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (!lk->lvb_valid || off >= LVB_LEN) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > (size_t)(LVB_LEN - off))
		size = LVB_LEN - off;
	fuse_reply_buf(req, (const char *)lk->lvb + off, size);
}

/* Into the LVB, published when the EX level drops; past 64 bytes ENOSPC. */
static void
dlmfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct dlmfs_fh *fh = fh_of(fi);
	struct dlmfs_lock *lk = fh->lk;

	(void)ino;
	if (fh->gen != dfs->gen) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (fh->level != LVL_EX) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (off >= LVB_LEN) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size > (size_t)(LVB_LEN - off))
		size = LVB_LEN - off;
	memcpy(lk->lvb + off, buf, size);
	lk->lvb_valid = 1;
	fuse_reply_write(req, size);
}

/* POLLIN while another node waits for the lock (a BAST came). */
static void
dlmfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph)
{
	struct dlmfs_fh *fh = fh_of(fi);
	unsigned int revents = 0;

	(void)ino;
	if (ph != NULL) {
		if (fh->ph != NULL)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = ph;
	}
	if (fh->gen != dfs->gen)
		revents = POLLERR;
	else if (fh->lk->flags & LK_BLOCKED)
		revents = POLLIN | POLLRDNORM;
	fuse_reply_poll(req, revents);
}

/* unlink destroys the lock: EBUSY while it is open or waited for. */
static void
dlmfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_dom *dom = as_dom(node_of(parent));
	struct dlmfs_lock *lk;

	if (dom == NULL) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (dom->node.removed || (lk = lockfile_find(dom, name)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!TAILQ_EMPTY(&lk->fhs) || !TAILQ_EMPTY(&lk->waiters) ||
	    (lk->flags & LK_TEARDOWN)) {
		fuse_reply_err(req, EBUSY);
		return;
	}
	lk->flags |= LK_TEARDOWN;
	lk->unlink = req;
	if (lk->level == LVL_IV && !(lk->flags & LK_BUSY)) {
		lockfile_remove(lk);
		return;
	}
	cache_process(lk);
}

static void
dlmfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops dlmfs_ops = {
	.lookup = dlmfs_lookup,
	.forget = dlmfs_forget,
	.forget_multi = dlmfs_forget_multi,
	.getattr = dlmfs_getattr,
	.setattr = dlmfs_setattr,
	.readdir = dlmfs_readdir,
	.mkdir = dlmfs_mkdir,
	.rmdir = dlmfs_rmdir,
	.create = dlmfs_create,
	.open = dlmfs_open,
	.release = dlmfs_release,
	.read = dlmfs_read,
	.write = dlmfs_write,
	.poll = dlmfs_poll,
	.unlink = dlmfs_unlink,
	.mknod = dlmfs_mknod,
	.symlink = dlmfs_symlink,
	.link = dlmfs_link,
	.rename = dlmfs_rename,
	.statfs = dlmfs_statfs,
};
