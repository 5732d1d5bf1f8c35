/*
 * o2ctl reflink SRC DST: a new file DST that shares SRC's clusters, as
 * ocfs2-tools' reflink(1) through OCFS2_IOC_REFLINK with preserve set:
 * the data is not copied, and DST gets SRC's mode, owner, times and
 * extended attributes (ACLs included). FUSE passes no ioctl of a file
 * system's own, so the sharing goes through copy_file_range(2), which
 * fsd serves by sharing whole clusters (fsd/reflink.c). What fails
 * leaves no DST behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "o2ctl.h"

/* Every extended attribute of sfd onto dfd: 0, or -1 with errno and *what. */
static int
copy_xattrs(int sfd, int dfd, const char **what)
{
	char *names = NULL, *name, *val = NULL;
	ssize_t n, vlen;
	int rc = -1;

	*what = "listing the attributes";
	if ((n = flistxattr(sfd, NULL, 0)) <= 0)
		return n == 0 || errno == ENOTSUP ? 0 : -1;
	if ((names = malloc((size_t)n)) == NULL || (n = flistxattr(sfd, names, (size_t)n)) < 0)
		goto out;
	for (name = names; name < names + n; name += strlen(name) + 1) {
		*what = name;
		if ((vlen = fgetxattr(sfd, name, NULL, 0)) < 0)
			goto out;
		free(val);
		if ((val = malloc((size_t)vlen + 1)) == NULL ||
		    (vlen = fgetxattr(sfd, name, val, (size_t)vlen)) < 0 ||
		    fsetxattr(dfd, name, val, (size_t)vlen, 0) != 0)
			goto out;
	}
	rc = 0;
out:
	free(val);
	free(names);
	return rc;
}

int
cmd_reflink(struct o2ctl *ctl, int argc, char **argv)
{
	const char *src, *dst, *what = "opening the source";
	struct timespec times[2];
	struct stat st, dst_st;
	loff_t in = 0, out = 0;
	ssize_t n;
	int sfd, dfd = -1, saved;

	(void)ctl;
	if (argc != 3)
		return EX_USAGE;
	src = argv[1];
	dst = argv[2];
	if ((sfd = open(src, O_RDONLY)) == -1 || fstat(sfd, &st) != 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "o2ctl: reflink: %s is not a regular file\n", src);
		close(sfd);
		return EX_FAIL;
	}
	what = "creating the target";
	if ((dfd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1)
		goto fail;
	if (fstat(dfd, &dst_st) != 0)
		goto fail_dst;
	if (dst_st.st_dev != st.st_dev) {
		unlink(dst);
		close(dfd);
		close(sfd);
		fprintf(stderr, "o2ctl: reflink: %s and %s are not on the same volume\n", src, dst);
		return EX_FAIL;
	}
	what = "sharing the data";
	while (in < st.st_size) {
		if ((n = copy_file_range(sfd, &in, dfd, &out, (size_t)(st.st_size - in), 0)) < 0)
			goto fail_dst;
		if (n == 0)
			break;	/* the source shrank meanwhile */
	}
	if (copy_xattrs(sfd, dfd, &what) != 0)
		goto fail_dst;
	what = "setting the owner";
	/* as cp -p: another owner only for root; the group if we belong to it */
	if (fchown(dfd, st.st_uid, st.st_gid) != 0 && (errno != EPERM ||
	    fchown(dfd, (uid_t)-1, st.st_gid) != 0) && errno != EPERM)
		goto fail_dst;
	what = "setting the mode";
	if (fchmod(dfd, st.st_mode & 07777) != 0)
		goto fail_dst;
	what = "setting the times";
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (futimens(dfd, times) != 0 || fsync(dfd) != 0)
		goto fail_dst;
	close(dfd);
	close(sfd);
	return EX_OK;
fail_dst:
	saved = errno;
	unlink(dst);
	errno = saved;
fail:
	fprintf(stderr, "o2ctl: reflink %s %s: %s: %s\n", src, dst, what, strerror(errno));
	if (dfd != -1)
		close(dfd);
	if (sfd != -1)
		close(sfd);
	return EX_FAIL;
}
