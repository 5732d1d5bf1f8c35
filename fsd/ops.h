/*
 * Shared by the FUSE handlers (ops_*.c): the libfuse API level, the
 * handler prototypes that ops.c puts in the table, and small accessors.
 */
#ifndef FSD_OPS_H
#define FSD_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fsd.h"

static inline struct fsd *
fsd_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Handlers that may allocate note their caller: quota limits spare root (quota.c). */
static inline void
fsd_caller(fuse_req_t req)
{
	quota_set_caller(fuse_req_ctx(req)->uid);
}

/* ops_reflink.c: FSD_IOC_REFLINK, a new file sharing an open one's clusters */
void	fsd_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, void *arg, struct fuse_file_info *fi,
	    unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz);

/* ops_inode.c */
void	fsd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void	fsd_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void	fsd_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void	fsd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void	fsd_readlink(fuse_req_t req, fuse_ino_t ino);
void	fsd_access(fuse_req_t req, fuse_ino_t ino, int mask);
/* May the caller of req access an inode of that mode and owner as mask (R_OK...) says? */
int	fsd_permission(fuse_req_t req, unsigned mode, uint32_t uid, uint32_t gid, int mask);
void	fsd_statfs(fuse_req_t req, fuse_ino_t ino);
/*
 * Fill e for the inode at blkno and count one FUSE lookup on it: 0 or
 * -errno. Used by lookup and readdirplus.
 */
int	fsd_make_entry(struct fsd *fs, uint64_t blkno, struct fuse_entry_param *e);

/*
 * An inode another node deleted after the kernel found it (ESTALE from
 * the block) is, for a change of names, what Linux calls a dead
 * directory or an inode without links: ENOENT, as the kernel's
 * vfs_mkdir, vfs_link and ocfs2_mknod's check of the parent's links say;
 * a lookup in such a directory finds nothing either.
 */
static inline int
gone_is_enoent(int rc)
{
	return rc == -ESTALE ? -ENOENT : rc;
}

/* kernsize.c: what the kernel may hold as a regular file's size */
void	kernsize_set(struct fsd_inode *ip, uint64_t size);	/* it holds size */
void	kernsize_reported(struct fsd_inode *ip, uint64_t size);	/* told it size */
void	kernsize_wrote(struct fsd_inode *ip);	/* wrote its data */
/*
 * Before a GETATTR answers size seen: raise the kernel's size to the
 * file's if it may be behind (nothing to do, and no lock taken, when seen
 * is not beyond what the kernel holds).
 */
void	kernsize_catch_up(struct fsd *fs, struct fsd_inode *ip, fuse_ino_t ino, uint64_t seen);
/* inode.c: the FUSE session while it lasts (NULL once gone), for notifications */
struct fuse_session *inode_session_get(struct fsd *fs);
void	inode_session_put(struct fsd *fs);

/* ops_dir.c */
void	fsd_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void	fsd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	    struct fuse_file_info *fi);
void	fsd_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	    struct fuse_file_info *fi);
void	fsd_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ops_file.c */
void	fsd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void	fsd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	    struct fuse_file_info *fi);
/* flock.c: flock(2) through FLOCK locks (cluster mounts only) */
void	fsd_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
/* The last close of a description that flock()ed drops its lock. */
void	flock_release(struct fsd *fs, uint64_t owner);
/* plock.c: fcntl locks (cluster mounts only) */
void	fsd_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl);
void	fsd_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl,
	    int sleep);
/* fi->fh of an open file */
#define FH_APPEND	0x1
#define FH_DIRECT	0x2	/* opened O_DIRECT: appends keep a dio record (dio.c) */
/*
 * Open a regular file here (inode_open) and, with O_TRUNC in flags, cut
 * it to size 0 with a new mtime and ctime: with atomic_o_trunc the
 * kernel leaves that to OPEN and sends no SETATTR. 0 or -errno.
 */
int	fsd_open_inode(struct fsd *fs, struct fsd_inode *ip, int flags);
/* What open and create tell the kernel about caching, and fi->fh. */
void	fsd_open_flags(struct fsd *fs, struct fuse_file_info *fi);
/* Was the file opened for writing? */
int	fsd_open_writes(const struct fuse_file_info *fi);
void	fsd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ops_namei.c */
uint8_t	fsd_ft_of(unsigned mode);
void	fsd_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void	fsd_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void	fsd_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void	fsd_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	    struct fuse_file_info *fi);
void	fsd_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void	fsd_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void	fsd_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void	fsd_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	    const char *newname, unsigned int flags);

/* ops_inode.c (writes) */
void	fsd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
	    struct fuse_file_info *fi);

/* ops_file.c (writes) */
void	fsd_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	    struct fuse_file_info *fi);
void	fsd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void	fsd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void	fsd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
	    struct fuse_file_info *fi);
void	fsd_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	    struct fuse_file_info *fi);
/* reflink.c shares the clusters of whole-cluster ranges; others the kernel copies */
void	fsd_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
	    struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
	    struct fuse_file_info *fi_out, size_t len, int flags);

/* ops_xattr.c */
void	fsd_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void	fsd_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void	fsd_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
	    size_t size, int flags);
void	fsd_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ops.c */
void	fsd_init(void *userdata, struct fuse_conn_info *conn);
/* Once mounted (MOUNTPOINT canonical): let the kernel read ahead as far
 * as max_readahead says. */
void	fsd_mount_setup(struct fsd *, const char *mountpoint);

/*
 * guardian.c: a child that aborts our FUSE connection if fsd dies without
 * unmounting. Started by the main thread before any other thread exists
 * (-1 if it could not be: logged, fsd goes on without it); told the
 * connection once mounted; released after a clean unmount.
 */
struct fsd_guardian {
	pid_t	pid;
	int	fd;	/* our end of its socket; -1: none */
};
int	guardian_start(struct fsd_guardian *);
void	guardian_watch(struct fsd_guardian *, const struct fsd *);
void	guardian_release(struct fsd_guardian *);

#endif
