/*
 * The ioctl(2)s fsd answers on its files (doc/refcount.md). FUSE passes
 * a file system's own ioctls in restricted form only: the argument is
 * one fixed-size structure, copied as the command's size and direction
 * say, with no pointer to follow. So unlike OCFS2_IOC_REFLINK (two path
 * pointers) the request names the new file by its directory's inode
 * number and a name.
 */
#ifndef FSD_IOCTL_H
#define FSD_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

/* ioctl(SRC, FSD_IOC_REFLINK, &arg): a new file sharing SRC's clusters. */
struct fsd_reflink_arg {
	uint64_t	dir;		/* the new file's directory: its st_ino */
	char		name[256];	/* its name in dir, NUL-terminated */
};

/* 'o' as ocfs2's own ioctls, past their numbers (ocfs2_ioctl.h) */
#define FSD_IOC_REFLINK	_IOW('o', 0x40, struct fsd_reflink_arg)

#endif
