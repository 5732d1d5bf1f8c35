/*
 * FUSE handlers on extended attributes (xattr.c keeps them). The kernel
 * checked permissions (default_permissions: trusted.* needs
 * CAP_SYS_ADMIN, user.* read or write access) and the VFS limits (names
 * of 255 bytes, values of 64 KiB) before asking. POSIX ACL names go to
 * acl.c, or are refused as ocfs2 refuses them on a noacl mount.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "ops.h"

/* The index and suffix of a name fsd serves, or -errno (EOPNOTSUPP). */
static int
is_acl(int index)
{
	return index == XATTR_INDEX_POSIX_ACL_ACCESS || index == XATTR_INDEX_POSIX_ACL_DEFAULT;
}

static int
parse(struct fsd *fs, const char *name, int *index, const char **suffix)
{
	int rc;

	if ((rc = xattr_parse_name(name, index, suffix)) != 0)
		return rc;
	return is_acl(*index) && !fs->acl ? -EOPNOTSUPP : 0;
}

void
fsd_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	const char *suffix;
	size_t vlen = 0;
	void *buf = NULL;
	int index, rc;

	if (!fs->xattr)
		return (void)fuse_reply_err(req, EOPNOTSUPP);
	if ((rc = parse(fs, name, &index, &suffix)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if (size > 0 && (buf = malloc(size)) == NULL)
		return (void)fuse_reply_err(req, ENOMEM);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) == 0) {
		rc = is_acl(index) ? acl_get(fs, ip, index, buf, size, &vlen) :
		    xattr_get(fs, ip, index, suffix, buf, size, &vlen);
		inode_put(fs, ip);
	}
	if (rc != 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, vlen);
	else
		fuse_reply_buf(req, buf, vlen);
	free(buf);
}

void
fsd_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!fs->xattr)
		return (void)fuse_reply_err(req, EOPNOTSUPP);
	if (size > 0 && (buf = malloc(size)) == NULL)
		return (void)fuse_reply_err(req, ENOMEM);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) == 0) {
		rc = xattr_list(fs, ip, buf, size, &len);
		inode_put(fs, ip);
	}
	if (rc != 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static int
change(fuse_req_t req, fuse_ino_t ino, const char *name, const void *value, size_t size,
    int flags)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	const char *suffix;
	int index, rc;

	if (!fs->xattr)
		return -EOPNOTSUPP;
	if ((rc = parse(fs, name, &index, &suffix)) != 0)
		return rc;
	if (fs->readonly)
		return -EROFS;
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return rc;
	rc = is_acl(index) ? acl_set(fs, ip, index, value, size) :
	    xattr_set(fs, ip, index, suffix, value, size, flags);
	inode_put(fs, ip);
	return rc;
}

void
fsd_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
    int flags)
{
	fsd_caller(req);
	/* an empty value is still a value: never NULL, which removes */
	fuse_reply_err(req, -change(req, ino, name, value != NULL ? value : "", size,
	    flags & (XATTR_CREATE | XATTR_REPLACE)));
}

void
fsd_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	/* as the VFS removes: a set of no value that must replace (ENODATA if none) */
	fuse_reply_err(req, -change(req, ino, name, NULL, 0, XATTR_REPLACE));
}
