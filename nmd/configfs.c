/*
 * The tree as a filesystem at <rundir>/config, shaped like the kernel's
 * /sys/kernel/config/cluster: directories are items (mkdir makes one,
 * rmdir drops it), files are attributes (cat shows, echo stores). FUSE
 * lowlevel API, served from nmd's event loop: a request is handled to
 * completion before the next, as configfs serialises on its mutex.
 */
#define FUSE_USE_VERSION 34

#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "nmd.h"
#include "util.h"

struct nm_configfs {
	struct fuse_session	*se;
	struct event		*ev;
	struct fuse_buf		 buf;
	char			*mountpoint;
};

/* Directories own inode numbers in steps of 32; their attributes follow. */
#define ATTR_INO(it, idx)	((it)->ino + 1 + (idx))

static uint64_t
to_fuse(const struct nmd *nm, uint64_t ino)
{
	return ino == nm->root->ino ? FUSE_ROOT_ID : ino;
}

/* The item an inode is, or holds (*idx = attribute), or NULL. */
static struct nm_item *
resolve(struct nmd *nm, fuse_ino_t fino, long *idx)
{
	uint64_t ino = fino == FUSE_ROOT_ID ? nm->root->ino : fino;
	struct nm_item *it = nm_item_by_ino(nm, ino & ~31ULL);

	*idx = (long)(ino & 31) - 1;
	if (it == NULL || (*idx >= 0 && (size_t)*idx >= it->type->nattrs))
		return NULL;
	return it;
}

static void
fill_stat(struct nmd *nm, struct nm_item *it, long idx, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = nm->started;
	if (idx < 0) {
		st->st_ino = to_fuse(nm, it->ino);
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_ino = ATTR_INO(it, idx);
		st->st_mode = S_IFREG | (it->type->attrs[idx].writable ? 0644 : 0444);
		st->st_nlink = 1;
		st->st_size = 4096;	/* as configfs shows it */
	}
}

static void
reply_entry(fuse_req_t req, struct nmd *nm, struct nm_item *it, long idx)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	fill_stat(nm, it, idx, &e.attr);
	e.ino = e.attr.st_ino;
	/* Other processes change the tree through nmd.sock: cache nothing. */
	e.attr_timeout = 0;
	e.entry_timeout = 0;
	fuse_reply_entry(req, &e);
}

static void
cfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *dir, *c;
	long idx;
	size_t a;

	if ((dir = resolve(nm, parent, &idx)) == NULL || idx >= 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((c = nm_item_child(dir, name)) != NULL)
		reply_entry(req, nm, c, -1);
	else if (nm_item_attr(dir, name, &a) != NULL)
		reply_entry(req, nm, dir, (long)a);
	else
		fuse_reply_err(req, ENOENT);
}

static void
cfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *it;
	struct stat st;
	long idx;

	(void)fi;
	if ((it = resolve(nm, ino, &idx)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(nm, it, idx, &st);
	fuse_reply_attr(req, &st, 0);
}

/* Only the truncate of `echo > attr` is meaningful; ownership is fixed. */
static void
cfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	(void)attr;
	if (to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME |
	    FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
	    FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	cfs_getattr(req, ino, fi);
}

static void
cfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *dir, *c;
	struct stat st;
	char *buf;
	size_t len = 0, n;
	off_t pos = 0;
	long idx;

	(void)fi;
	if ((dir = resolve(nm, ino, &idx)) == NULL || idx >= 0) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = xcalloc(1, size);
	memset(&st, 0, sizeof(st));
#define EMIT(name, mode, inum) do {					\
	if (pos++ >= off) {						\
		st.st_mode = (mode);					\
		st.st_ino = (inum);					\
		n = fuse_add_direntry(req, buf + len, size - len, (name), &st, pos); \
		if (n > size - len)					\
			goto full;					\
		len += n;						\
	}								\
} while (0)
	EMIT(".", S_IFDIR, to_fuse(nm, dir->ino));
	EMIT("..", S_IFDIR, to_fuse(nm, dir->parent ? dir->parent->ino : dir->ino));
	for (size_t i = 0; i < dir->type->nattrs; i++)
		EMIT(dir->type->attrs[i].name, S_IFREG, ATTR_INO(dir, i));
	TAILQ_FOREACH(c, &dir->children, sibling)
		EMIT(c->name, S_IFDIR, c->ino);
#undef EMIT
full:
	fuse_reply_buf(req, buf, len);
	free(buf);
}

static void
cfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *dir, *it;
	long idx;
	int rc;

	(void)mode;
	if ((dir = resolve(nm, parent, &idx)) == NULL || idx >= 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((rc = nm_mkdir(nm, dir, name, &it)) != 0) {
		fuse_reply_err(req, rc);
		return;
	}
	reply_entry(req, nm, it, -1);
}

static void
cfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *dir, *it;
	long idx;

	if ((dir = resolve(nm, parent, &idx)) == NULL || idx >= 0 ||
	    (it = nm_item_child(dir, name)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_err(req, nm_rmdir(nm, it));
}

static void
cfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *it;
	long idx;

	if ((it = resolve(nm, ino, &idx)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (idx < 0) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY && !it->type->attrs[idx].writable) {
		fuse_reply_err(req, EACCES);
		return;
	}
	/* Every read shows the current value; every write is one store. */
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void
cfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *it;
	char buf[4096];
	size_t len;
	long idx;

	(void)fi;
	if ((it = resolve(nm, ino, &idx)) == NULL || idx < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	nm_attr_read(nm, it, &it->type->attrs[idx], buf, sizeof(buf));
	len = strlen(buf);
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, buf + off, len - off < size ? len - off : size);
}

static void
cfs_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct nmd *nm = fuse_req_userdata(req);
	struct nm_item *it;
	char buf[4096];
	long idx;
	int rc;

	(void)fi;
	(void)off;
	if ((it = resolve(nm, ino, &idx)) == NULL || idx < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (size >= sizeof(buf)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	if ((rc = nm_attr_write(nm, it, &it->type->attrs[idx], buf, 0)) != 0)
		fuse_reply_err(req, rc);
	else
		fuse_reply_write(req, size);
}

/* configfs has no files but attributes and no links at all. */
static void
cfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EPERM);
}

static void
cfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void
cfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void
cfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

static const struct fuse_lowlevel_ops cfs_ops = {
	.lookup = cfs_lookup,
	.getattr = cfs_getattr,
	.setattr = cfs_setattr,
	.readdir = cfs_readdir,
	.mkdir = cfs_mkdir,
	.rmdir = cfs_rmdir,
	.open = cfs_open,
	.read = cfs_read,
	.write = cfs_write,
	.create = cfs_create,
	.mknod = cfs_mknod,
	.unlink = cfs_unlink,
	.rename = cfs_rename,
};

static void
cfs_readable(evutil_socket_t fd, short ev, void *arg)
{
	struct nmd *nm = arg;
	struct nm_configfs *cfs = nm->configfs;
	int rc;

	(void)fd;
	(void)ev;
	rc = fuse_session_receive_buf(cfs->se, &cfs->buf);
	if (rc == -EINTR || rc == -EAGAIN)
		return;
	if (rc <= 0) {
		log_warnx("configfs: %s unmounted (%s), stopping",
		    cfs->mountpoint, rc ? strerror(-rc) : "end of session");
		event_base_loopbreak(nm->base);
		return;
	}
	fuse_session_process_buf(cfs->se, &cfs->buf);
}

/* A mount left behind by a killed nmd answers ENOTCONN: detach it. */
static void
clear_stale_mount(const char *mp)
{
	struct stat st;

	if (stat(mp, &st) == -1 && errno == ENOTCONN) {
		log_info("configfs: detaching the stale mount on %s", mp);
		if (umount2(mp, MNT_DETACH) == -1)
			log_warn("configfs: umount %s", mp);
	}
}

int
nm_configfs_mount(struct nmd *nm, const char *mountpoint)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct nm_configfs *cfs;

	clear_stale_mount(mountpoint);
	if (mkdir_p(mountpoint, 0755) == -1) {
		log_warn("configfs: mkdir %s", mountpoint);
		return -1;
	}
	cfs = xcalloc(1, sizeof(*cfs));
	cfs->mountpoint = xstrdup(mountpoint);
	if (fuse_opt_add_arg(&args, "nmd") == -1 ||
	    fuse_opt_add_arg(&args, "-o") == -1 ||
	    fuse_opt_add_arg(&args, "fsname=ocfs2_config,subtype=ocfs2_config") == -1)
		fatalx("configfs: out of memory");
	cfs->se = fuse_session_new(&args, &cfs_ops, sizeof(cfs_ops), nm);
	fuse_opt_free_args(&args);
	if (cfs->se == NULL || fuse_session_mount(cfs->se, mountpoint) == -1) {
		log_warnx("configfs: cannot mount %s", mountpoint);
		if (cfs->se != NULL)
			fuse_session_destroy(cfs->se);
		free(cfs->mountpoint);
		free(cfs);
		return -1;
	}
	cfs->ev = event_new(nm->base, fuse_session_fd(cfs->se), EV_READ | EV_PERSIST,
	    cfs_readable, nm);
	if (cfs->ev == NULL || event_add(cfs->ev, NULL) == -1)
		fatalx("configfs: cannot watch the FUSE channel");
	nm->configfs = cfs;
	return 0;
}

void
nm_configfs_unmount(struct nmd *nm)
{
	struct nm_configfs *cfs = nm->configfs;

	if (cfs == NULL)
		return;
	event_free(cfs->ev);
	fuse_session_unmount(cfs->se);
	fuse_session_destroy(cfs->se);
	free(cfs->buf.mem);
	free(cfs->mountpoint);
	free(cfs);
	nm->configfs = NULL;
}
