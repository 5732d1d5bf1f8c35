/*
 * POSIX ACLs (doc/xattr.md, ACLs; fs/ocfs2/acl.c): kept in the
 * system.posix_acl_access and system.posix_acl_default attributes
 * (indexes 2 and 3, empty suffix) as bare arrays of ocfs2_acl_entry
 * (le16 tag, le16 perm, le32 id; id -1 but for named users and groups).
 * The kernel enforces them (FUSE's POSIX ACL capability) and asks for
 * them in its own form, posix_acl_xattr_header (le32 version 2) and the
 * same entries; fsd converts, keeps the mode in step with the access
 * ACL, applies a directory's default ACL to what is created in it, and
 * carries a chmod into the ACL's mask.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fsd.h"

#define ACL_VFS_VERSION	2		/* POSIX_ACL_XATTR_VERSION */
#define ACL_ENTRY_SIZE	8		/* struct ocfs2_acl_entry, and the VFS's entry */
#define ACL_NO_ID	0xffffffffu	/* ACL_UNDEFINED_ID */

/* Tags (linux/posix_acl.h) */
#define TAG_USER_OBJ	0x01
#define TAG_USER	0x02
#define TAG_GROUP_OBJ	0x04
#define TAG_GROUP	0x08
#define TAG_MASK	0x10
#define TAG_OTHER	0x20

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static uint32_t
get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

/* Are n bytes of entries an ACL the kernel would accept (posix_acl_valid)? */
static int
entries_valid(const uint8_t *e, size_t n)
{
	unsigned seen = 0, named = 0, prev = 0, i;

	if (n % ACL_ENTRY_SIZE != 0 || n == 0)
		return 0;
	for (i = 0; i < n / ACL_ENTRY_SIZE; i++) {
		unsigned tag = get16(e + i * ACL_ENTRY_SIZE), perm = get16(e + i * ACL_ENTRY_SIZE + 2);

		/* in tag order, as posix_acl_valid wants them */
		if (perm > 7 || tag < prev)
			return 0;
		prev = tag;
		switch (tag) {
		case TAG_USER_OBJ: case TAG_GROUP_OBJ: case TAG_MASK: case TAG_OTHER:
			if (seen & tag)
				return 0;
			seen |= tag;
			break;
		case TAG_USER: case TAG_GROUP:
			named = 1;
			break;
		default:
			return 0;
		}
	}
	if ((seen & (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER)) !=
	    (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER))
		return 0;
	return !named || (seen & TAG_MASK);
}

int
acl_from_vfs(const void *v, size_t n, uint8_t *out, size_t cap, size_t *outlen)
{
	const uint8_t *p = v;
	size_t i;

	if (n < 4 || get32(p) != ACL_VFS_VERSION || !entries_valid(p + 4, n - 4))
		return -EINVAL;
	if (n - 4 > cap)
		return -E2BIG;
	for (i = 4; i < n; i += ACL_ENTRY_SIZE) {
		unsigned tag = get16(p + i);

		memcpy(out + i - 4, p + i, 4);
		/* as ocfs2_acl_to_xattr: an id only for named users and groups */
		put32(out + i, tag == TAG_USER || tag == TAG_GROUP ? get32(p + i + 4) : ACL_NO_ID);
	}
	*outlen = n - 4;
	return 0;
}

int
acl_to_vfs(const uint8_t *d, size_t n, void *out, size_t cap, size_t *outlen)
{
	uint8_t *p = out;

	if (!entries_valid(d, n))
		return -EIO;
	*outlen = n + 4;
	if (out == NULL)
		return 0;
	if (n + 4 > cap)
		return -ERANGE;
	put32(p, ACL_VFS_VERSION);
	memcpy(p + 4, d, n);
	return 0;
}

int
acl_equiv_mode(const uint8_t *d, size_t n, unsigned *mode)
{
	unsigned m = 0, i, not_equiv = 0;

	/* posix_acl_equiv_mode: the entries are in tag order, the mask after the group */
	for (i = 0; i < n / ACL_ENTRY_SIZE; i++) {
		unsigned perm = get16(d + i * ACL_ENTRY_SIZE + 2) & 7;

		switch (get16(d + i * ACL_ENTRY_SIZE)) {
		case TAG_USER_OBJ:
			m |= perm << 6;
			break;
		case TAG_GROUP_OBJ:
			m |= perm << 3;
			break;
		case TAG_OTHER:
			m |= perm;
			break;
		case TAG_MASK:
			m = (m & ~070u) | perm << 3;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	*mode = (*mode & ~0777u) | m;
	return (int)not_equiv;
}

int
acl_create_masq(uint8_t *d, size_t n, unsigned *modep)
{
	unsigned mode = *modep, i, not_equiv = 0;
	uint8_t *group = NULL, *mask = NULL;

	/* posix_acl_create_masq: the ACL and the requested mode limit each other */
	for (i = 0; i < n / ACL_ENTRY_SIZE; i++) {
		uint8_t *e = d + i * ACL_ENTRY_SIZE;
		unsigned perm = get16(e + 2);

		switch (get16(e)) {
		case TAG_USER_OBJ:
			perm &= (mode >> 6) & 7;
			put16(e + 2, (uint16_t)perm);
			mode &= (perm << 6) | ~0700u;
			break;
		case TAG_USER: case TAG_GROUP:
			not_equiv = 1;
			break;
		case TAG_GROUP_OBJ:
			group = e;
			break;
		case TAG_OTHER:
			perm &= mode & 7;
			put16(e + 2, (uint16_t)perm);
			mode &= perm | ~07u;
			break;
		case TAG_MASK:
			mask = e;
			not_equiv = 1;
			break;
		}
	}
	if (mask == NULL)
		mask = group;
	if (mask != NULL) {
		unsigned perm = get16(mask + 2) & ((mode >> 3) & 7);

		put16(mask + 2, (uint16_t)perm);
		mode &= (perm << 3) | ~070u;
	}
	*modep = mode;
	return not_equiv;
}

void
acl_chmod(uint8_t *d, size_t n, unsigned mode)
{
	uint8_t *group = NULL, *mask = NULL;
	unsigned i;

	/* posix_acl_chmod_masq: owner, mask (or group) and other follow the mode */
	for (i = 0; i < n / ACL_ENTRY_SIZE; i++) {
		uint8_t *e = d + i * ACL_ENTRY_SIZE;

		switch (get16(e)) {
		case TAG_USER_OBJ:
			put16(e + 2, (uint16_t)((mode >> 6) & 7));
			break;
		case TAG_GROUP_OBJ:
			group = e;
			break;
		case TAG_MASK:
			mask = e;
			break;
		case TAG_OTHER:
			put16(e + 2, (uint16_t)(mode & 7));
			break;
		}
	}
	if (mask == NULL)
		mask = group;
	if (mask != NULL)
		put16(mask + 2, (uint16_t)((mode >> 3) & 7));
}

/* The ACL of that index on ip in OCFS2's form, malloc'ed into *dp: its size, 0 if none, or -errno. */
static long
acl_read(struct fsd *fs, struct fsd_inode *ip, int index, uint8_t **dp)
{
	size_t len = 0;
	uint8_t *d;
	int rc;

	*dp = NULL;
	for (;;) {
		rc = xattr_get(fs, ip, index, "", NULL, 0, &len);
		if (rc == -ENODATA)
			return 0;
		if (rc != 0)
			return rc;
		if ((d = malloc(len ? len : 1)) == NULL)
			return -ENOMEM;
		rc = xattr_get(fs, ip, index, "", d, len, &len);
		if (rc == 0) {
			if (!entries_valid(d, len)) {
				fsd_corrupt(fs, ip->blkno, "a stored POSIX ACL is malformed");
				free(d);
				return -EIO;
			}
			*dp = d;
			return (long)len;
		}
		free(d);
		if (rc != -ERANGE)	/* -ERANGE: it grew meanwhile */
			return rc == -ENODATA ? 0 : rc;
	}
}

int
acl_get(struct fsd *fs, struct fsd_inode *ip, int index, void *out, size_t cap, size_t *len)
{
	uint8_t *d;
	long n = acl_read(fs, ip, index, &d);
	int rc;

	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ENODATA;
	rc = acl_to_vfs(d, (size_t)n, out, cap, len);
	free(d);
	return rc;
}

int
acl_set(struct fsd *fs, struct fsd_inode *ip, int index, const void *v, size_t n)
{
	unsigned mode = 0;
	uint8_t *d;
	size_t dlen;
	int rc;

	if (v == NULL)
		return xattr_set_mode(fs, ip, index, "", NULL, 0, 0, -1);
	if ((d = malloc(n)) == NULL)
		return -ENOMEM;
	if ((rc = acl_from_vfs(v, n, d, n, &dlen)) != 0)
		;
	else if (index == XATTR_INDEX_POSIX_ACL_DEFAULT)
		rc = xattr_set_mode(fs, ip, index, "", d, dlen, 0, -1);
	/*
	 * The access ACL sets the mode's permission bits; one the mode says
	 * all of is not kept (as ocfs2_set_acl with posix_acl_update_mode).
	 */
	else if (acl_equiv_mode(d, dlen, &mode) == 0)
		rc = xattr_set_mode(fs, ip, index, "", NULL, 0, 0, (int)(mode & 0777));
	else
		rc = xattr_set_mode(fs, ip, index, "", d, dlen, 0, (int)(mode & 0777));
	free(d);
	return rc;
}

void
acl_inherit_free(struct acl_inherit *a)
{
	free(a->access);
	free(a->dflt);
	memset(a, 0, sizeof(*a));
}

int
acl_inherit(struct fsd *fs, struct fsd_inode *dir, unsigned *mode, unsigned umask,
    struct acl_inherit *a)
{
	long n;

	memset(a, 0, sizeof(*a));
	if (S_ISLNK(*mode))
		return 0;
	if ((n = acl_read(fs, dir, XATTR_INDEX_POSIX_ACL_DEFAULT, &a->dflt)) < 0)
		return (int)n;
	if (n == 0) {
		/* no default ACL: the umask the kernel left to us (posix_acl_create) */
		*mode &= ~(umask & 0777);
		return 0;
	}
	a->dflt_len = (size_t)n;
	if ((a->access = malloc((size_t)n)) == NULL) {
		acl_inherit_free(a);
		return -ENOMEM;
	}
	memcpy(a->access, a->dflt, (size_t)n);
	a->access_len = (size_t)n;
	if (acl_create_masq(a->access, a->access_len, mode) == 0) {
		free(a->access);
		a->access = NULL;
		a->access_len = 0;
	}
	/* only a directory passes its default on */
	if (!S_ISDIR(*mode)) {
		free(a->dflt);
		a->dflt = NULL;
		a->dflt_len = 0;
	}
	return 0;
}

int
acl_apply(struct fsd *fs, uint64_t blkno, const struct acl_inherit *a)
{
	struct fsd_inode *ip;
	int rc = 0;

	if (a->access == NULL && a->dflt == NULL)
		return 0;
	if ((rc = inode_get(fs, blkno, &ip)) != 0)
		return rc;
	if (a->access != NULL)
		rc = xattr_set_mode(fs, ip, XATTR_INDEX_POSIX_ACL_ACCESS, "", a->access, a->access_len,
		    0, -1);
	if (rc == 0 && a->dflt != NULL)
		rc = xattr_set_mode(fs, ip, XATTR_INDEX_POSIX_ACL_DEFAULT, "", a->dflt, a->dflt_len,
		    0, -1);
	inode_put(fs, ip);
	return rc;
}

int
acl_chmod_inode(struct fsd *fs, struct fsd_inode *ip, unsigned mode)
{
	uint8_t *d;
	long n = acl_read(fs, ip, XATTR_INDEX_POSIX_ACL_ACCESS, &d);
	int rc;

	if (n <= 0)
		return (int)n;
	acl_chmod(d, (size_t)n, mode);
	rc = xattr_set_mode(fs, ip, XATTR_INDEX_POSIX_ACL_ACCESS, "", d, (size_t)n, XATTR_REPLACE, -1);
	free(d);
	/* removed meanwhile: nothing to carry the mode into */
	return rc == -ENODATA ? 0 : rc;
}
