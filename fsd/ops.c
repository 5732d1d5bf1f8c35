/* The FUSE lowlevel operations table and connection setup. */
#include "log.h"

#include "ops.h"

struct fsd_timeouts fsd_timeouts = { 1.0, 1.0 };
int fsd_writeback_cache = 1;
int fsd_writeback_active;

void
fsd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fsd *fs = userdata;

	/* Large reads go to the disk as one O_DIRECT request per run. */
	conn->max_readahead = 1u << 20;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	/* a cluster: every read() asks for attributes and drops stale pages */
	if (fs->glue != NULL && (conn->capable & FUSE_CAP_AUTO_INVAL_DATA))
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* flock(2) across nodes; alone, the kernel's own flock is right */
	if (fs->glue != NULL && (conn->capable & FUSE_CAP_FLOCK_LOCKS))
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* fcntl locks likewise */
	if (fs->plocks != NULL && (conn->capable & FUSE_CAP_POSIX_LOCKS))
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	/*
	 * Write-behind: the kernel gathers writes in its page cache and
	 * hands them to us in large requests; fsync still flushes them and
	 * then commits the journal, so what fsync acknowledged is on disk.
	 * Not in a cluster (main.c turns it off): pages another node must
	 * see cannot wait in this kernel.
	 */
	if (fsd_writeback_cache && !fs->readonly && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		fsd_writeback_active = 1;
	}
	log_debug("FUSE protocol %u.%u, max_read %u, max_write %u, %s", conn->proto_major,
	    conn->proto_minor, conn->max_read, conn->max_write,
	    fs->readonly ? "read-only" : "read-write");
}

const struct fuse_lowlevel_ops fsd_ops = {
	.init		= fsd_init,
	.lookup		= fsd_lookup,
	.forget		= fsd_forget,
	.forget_multi	= fsd_forget_multi,
	.getattr	= fsd_getattr,
	.readlink	= fsd_readlink,
	.access		= fsd_access,
	.statfs		= fsd_statfs,
	.opendir	= fsd_opendir,
	.readdir	= fsd_readdir,
	.readdirplus	= fsd_readdirplus,
	.releasedir	= fsd_releasedir,
	.open		= fsd_open,
	.read		= fsd_read,
	.release	= fsd_release,
	.flock		= fsd_flock,
	.getlk		= fsd_getlk,
	.setlk		= fsd_setlk,
	.write		= fsd_write,
	.fsync		= fsd_fsync,
	.fsyncdir	= fsd_fsync,
	.flush		= fsd_flush,
	.fallocate	= fsd_fallocate,
	.setattr	= fsd_setattr,
	.mknod		= fsd_mknod,
	.mkdir		= fsd_mkdir,
	.symlink	= fsd_symlink,
	.create		= fsd_create,
	.link		= fsd_link,
	.unlink		= fsd_unlink,
	.rmdir		= fsd_rmdir,
	.rename		= fsd_rename,
};
