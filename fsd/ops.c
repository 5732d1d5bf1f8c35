/* The FUSE lowlevel operations table and connection setup. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "ops.h"

#define FSD_READAHEAD	(4u << 20)	/* bytes the kernel reads ahead of a reader */

void
fsd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fsd *fs = userdata;

	/* Large reads go to the disk as one O_DIRECT request per run. */
	conn->max_readahead = FSD_READAHEAD;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	/* a cluster: every read() asks for attributes and drops stale pages */
	if (fs->glue != NULL && (conn->capable & FUSE_CAP_AUTO_INVAL_DATA))
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/*
	 * flock(2) across nodes; alone, the kernel's own flock is right.
	 * libfuse asks for both kinds of lock whenever the operations are
	 * in the table, and the kernel then hands every lock call to fsd
	 * (ENOSYS from fsd_flock reaches the caller, it is no fallback):
	 * without a cluster the request is taken back here.
	 */
	if (fs->glue != NULL && (conn->capable & FUSE_CAP_FLOCK_LOCKS))
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	else
		conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	/* fcntl locks likewise */
	if (fs->plocks != NULL && (conn->capable & FUSE_CAP_POSIX_LOCKS))
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	else
		conn->want &= ~FUSE_CAP_POSIX_LOCKS;
	/*
	 * open(O_TRUNC) comes as an OPEN with O_TRUNC, which truncates
	 * (fsd_open_inode). libfuse asks for this by default; fsd does not
	 * rely on that default.
	 */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/*
	 * Write-behind: the kernel gathers writes in its page cache and
	 * hands them to us in large requests; fsync still flushes them and
	 * then commits the journal, so what fsync acknowledged is on disk.
	 * Not in a cluster (main.c turns it off): pages another node must
	 * see cannot wait in this kernel.
	 */
	if (fs->opts.writeback_cache && !fs->readonly && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		fs->writeback_active = 1;
	}
	/*
	 * POSIX ACLs: the kernel enforces them and stops applying the umask,
	 * which acl.c applies, or a directory's default ACL instead. A
	 * kernel without the capability leaves the mount noacl.
	 */
	if (fs->acl) {
		if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK))
			conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		else {
			log_warnx("the kernel's FUSE offers no POSIX ACLs: mounted noacl");
			fs->acl = 0;
		}
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
	.lseek		= fsd_lseek,
	.copy_file_range = fsd_copy_file_range,
	.ioctl		= fsd_ioctl,
	.setattr	= fsd_setattr,
	.mknod		= fsd_mknod,
	.mkdir		= fsd_mkdir,
	.symlink	= fsd_symlink,
	.create		= fsd_create,
	.link		= fsd_link,
	.unlink		= fsd_unlink,
	.rmdir		= fsd_rmdir,
	.rename		= fsd_rename,
	.setxattr	= fsd_setxattr,
	.getxattr	= fsd_getxattr,
	.listxattr	= fsd_listxattr,
	.removexattr	= fsd_removexattr,
};

/* mountinfo's form of a path: space, tab, newline and backslash as \ooo. */
static void
mountinfo_escape(const char *path, char *out, size_t outlen)
{
	size_t n = 0;

	for (; *path != '\0' && n + 5 < outlen; path++) {
		if (strchr(" \t\n\\", *path) != NULL)
			n += (size_t)snprintf(out + n, outlen - n, "\\%03o", (unsigned char)*path);
		else
			out[n++] = *path;
	}
	out[n] = '\0';
}

/*
 * The mount's device number, from mountinfo: a stat of the mountpoint
 * would wait for this very process to answer it. 0 if found.
 */
static int
mount_device(const char *mountpoint, unsigned *maj, unsigned *min)
{
	char want[4 * PATH_MAX], *line = NULL, *mp, *dev, *save;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	mountinfo_escape(mountpoint, want, sizeof(want));
	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		return -1;
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ...; the last match is on top */
	while (getline(&line, &cap, f) != -1) {
		if (strtok_r(line, " ", &save) == NULL || strtok_r(NULL, " ", &save) == NULL ||
		    (dev = strtok_r(NULL, " ", &save)) == NULL ||
		    strtok_r(NULL, " ", &save) == NULL || (mp = strtok_r(NULL, " ", &save)) == NULL)
			continue;
		if (strcmp(mp, want) == 0 && sscanf(dev, "%u:%u", maj, min) == 2)
			found = 1;
	}
	free(line);
	fclose(f);
	return found ? 0 : -1;
}

/*
 * Once mounted: the kernel takes max_readahead only up to the mount's
 * read-ahead window, 128 KiB unless someone raises it: sequential reads
 * then reach us 128 KiB at a time, one O_DIRECT read each, at a third of
 * what the disk gives (1 GiB: 460 MB/s, 1.8 GB/s with a 1 MiB window).
 * Raise it, as an admin would through sysfs; only root may, and a
 * failure costs just speed. And note the connection's number, for
 * fsd_abort_connection.
 */
void
fsd_mount_setup(struct fsd *fs, const char *mountpoint)
{
	char path[64], kb[16];
	unsigned maj, min;
	int fd, n;

	if (mount_device(mountpoint, &maj, &min) != 0)
		return;
	/* fusectl names a connection by its device number; FUSE's major is 0 */
	fs->fuse_conn = min;
	fs->fuse_conn_known = maj == 0;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	n = snprintf(kb, sizeof(kb), "%u\n", FSD_READAHEAD / 1024);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1 || write(fd, kb, (size_t)n) != n)
		log_debug("%s: %s: read-ahead stays at the kernel's default", path, strerror(errno));
	if (fd != -1)
		close(fd);
}

/*
 * Before fsd stops without unmounting (fenced, dlmd lost): a thread of
 * ours may be inside the kernel waiting for a page that a process keeps
 * locked while it waits for our answer, and a process cannot end while
 * one of its threads is there. Aborting the connection (fusectl, which
 * systemd mounts) fails every request still waiting: the page is let go.
 */
void
fsd_abort_connection(struct fsd *fs)
{
	char path[64];
	int fd;

	if (!fs->fuse_conn_known)
		return;
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", fs->fuse_conn);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1 || write(fd, "1", 1) != 1)
		log_warn("%s: cannot abort our FUSE connection; a process waiting "
		    "for it may keep fsd from ending", path);
	if (fd != -1)
		close(fd);
}
