/*
 * o2ctl reflink SRC DST: a new file DST that shares SRC's clusters, as
 * ocfs2-tools' reflink(1) through OCFS2_IOC_REFLINK with preserve set:
 * the data is not copied, and DST gets SRC's mode, owner (when the
 * caller may give it), times and extended attributes (ACLs included).
 * FUSE passes a file system's own ioctls with a fixed-size argument
 * only, so the request is fsd's FSD_IOC_REFLINK on SRC naming DST's
 * directory by inode number (common/fsd_ioctl.h). fsd makes it as the
 * kernel does: the new file is complete before DST names it, in one
 * transaction, and durable when the command returns; a crash before
 * leaves no DST (doc/refcount.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsd_ioctl.h"
#include "o2ctl.h"

int
cmd_reflink(struct o2ctl *ctl, int argc, char **argv)
{
	const char *src, *dst, *name, *what = "opening the source";
	struct fsd_reflink_arg arg;
	struct stat st, dir_st;
	char *dir = NULL, *slash;
	int sfd, dfd = -1, rc = EX_FAIL;

	(void)ctl;
	if (argc != 3)
		return EX_USAGE;
	src = argv[1];
	dst = argv[2];
	if ((sfd = open(src, O_RDONLY)) == -1 || fstat(sfd, &st) != 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "o2ctl: reflink: %s is not a regular file\n", src);
		goto out;
	}
	/* DST's directory and name */
	what = "finding the target's directory";
	if ((dir = strdup(dst)) == NULL)
		goto fail;
	if ((slash = strrchr(dir, '/')) == NULL) {
		name = dst;
		strcpy(dir, ".");
	} else {
		name = dst + (slash - dir) + 1;
		slash[slash == dir] = '\0';	/* "/x": the root */
	}
	if (*name == '\0' || strlen(name) >= sizeof(arg.name)) {
		errno = *name == '\0' ? EINVAL : ENAMETOOLONG;
		goto fail;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY)) == -1 || fstat(dfd, &dir_st) != 0)
		goto fail;
	if (dir_st.st_dev != st.st_dev) {
		fprintf(stderr, "o2ctl: reflink: %s and %s are not on the same volume\n", src, dst);
		goto out;
	}
	memset(&arg, 0, sizeof(arg));
	arg.dir = dir_st.st_ino;
	strcpy(arg.name, name);
	what = "sharing the data";
	if (ioctl(sfd, FSD_IOC_REFLINK, &arg) != 0) {
		if (errno == ENOTTY)
			what = "sharing the data (not a volume fsd serves)";
		goto fail;
	}
	rc = EX_OK;
	goto out;
fail:
	fprintf(stderr, "o2ctl: reflink %s %s: %s: %s\n", src, dst, what, strerror(errno));
out:
	if (dfd != -1)
		close(dfd);
	if (sfd != -1)
		close(sfd);
	free(dir);
	return rc;
}
