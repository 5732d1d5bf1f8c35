/*
 * Extended attributes: OCFS2's name hash and the sizes and checks of
 * xattr headers (pure), then attributes set, replaced and removed on the
 * root of a volume made by mkfs.ocfs2 --fs-features=xattr: the block,
 * then buckets, each value read back; fsck.ocfs2 -fn clean at the end.
 * POSIX ACLs: OCFS2's form and the kernel's, the mode an ACL gives, the
 * creation and chmod rules (pure).
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

Test(fsd_xattr, name_hash)
{
	/* rotate left by 5, xor the next char: worked by hand */
	cr_assert_eq(xattr_name_hash(0, "a", 1), 97u);
	cr_assert_eq(xattr_name_hash(0, "ab", 2), (97u << 5) ^ 98u);
	cr_assert_eq(xattr_name_hash(0x80000000u, "", 0), 0x80000000u);
	/* the top 5 bits come round to the bottom */
	cr_assert_eq(xattr_name_hash(0xf8000001u, "\x01", 1), (0x00000020u | 0x1fu) ^ 1u);
	/* the kernel's char is signed: a byte past 0x7f is sign-extended */
	cr_assert_eq(xattr_name_hash(0, "\xff", 1), 0xffffffffu);
	cr_assert_eq(xattr_name_hash(1, "\x80", 1), 32u ^ 0xffffff80u);
}

Test(fsd_xattr, sizes_and_names)
{
	const char *suffix;
	int index;

	/* names and values round to 4; past 80 bytes a 48-byte value root */
	cr_assert_eq(xattr_namevalue_size(1, 0), 4u);
	cr_assert_eq(xattr_namevalue_size(5, 80), 8u + 80u);
	cr_assert_eq(xattr_namevalue_size(5, 81), 8u + 48u);
	cr_assert_eq(xattr_namevalue_size(255, 65536), 256u + 48u);
	cr_assert_eq(xattr_parse_name("user.foo", &index, &suffix), 0);
	cr_assert_eq(index, XATTR_INDEX_USER);
	cr_assert_str_eq(suffix, "foo");
	cr_assert_eq(xattr_parse_name("trusted.x", &index, &suffix), 0);
	cr_assert_eq(index, 4);
	cr_assert_eq(xattr_parse_name("security.selinux", &index, &suffix), 0);
	cr_assert_eq(index, 5);
	cr_assert_eq(xattr_parse_name("system.posix_acl_access", &index, &suffix), 0);
	cr_assert_eq(index, 2);
	cr_assert_str_eq(suffix, "");
	cr_assert_eq(xattr_parse_name("system.posix_acl_default", &index, &suffix), 0);
	cr_assert_eq(index, 3);
	cr_assert_eq(xattr_parse_name("system.posix_acl_accessX", &index, &suffix), -EOPNOTSUPP);
	cr_assert_eq(xattr_parse_name("user.", &index, &suffix), -EINVAL);
	cr_assert_eq(xattr_parse_name("bogus.x", &index, &suffix), -EOPNOTSUPP);
	cr_assert_eq(xattr_parse_name("user", &index, &suffix), -EOPNOTSUPP);
	cr_assert_str_eq(xattr_prefix(XATTR_INDEX_TRUSTED), "trusted.");
	cr_assert_null(xattr_prefix(7));
}

/* A header of size bytes in buf with one entry: name "ab", a value of vsize. */
static struct ocfs2_xattr_header *
one_entry(uint8_t *buf, size_t size, uint64_t vsize)
{
	struct ocfs2_xattr_header *xh = (struct ocfs2_xattr_header *)buf;
	struct ocfs2_xattr_entry *xe = &xh->xh_entries[0];
	size_t nv = xattr_namevalue_size(2, vsize);

	memset(buf, 0, size);
	xh->xh_count = htole16(1);
	xe->xe_name_offset = htole16((uint16_t)(size - nv));
	xe->xe_name_len = 2;
	xe->xe_type = XATTR_INDEX_USER | (vsize <= OCFS2_XATTR_INLINE_SIZE ? OCFS2_XATTR_ENTRY_LOCAL : 0);
	xe->xe_value_size = htole64(vsize);
	memcpy(buf + size - nv, "ab", 2);
	if (vsize > OCFS2_XATTR_INLINE_SIZE) {
		struct ocfs2_xattr_value_root *xv = (void *)(buf + size - nv + 4);

		xv->xr_list.l_count = htole16(1);
	}
	return xh;
}

Test(fsd_xattr, header_check)
{
	uint8_t buf[4096];
	struct ocfs2_xattr_header *xh;
	char why[160];

	xh = one_entry(buf, 256, 10);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), 0, "%s", why);
	xh = one_entry(buf, 256, 100);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), 0, "%s", why);
	/* more entries than the area holds */
	xh = one_entry(buf, 256, 10);
	xh->xh_count = htole16(20);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	/* a name running past the end */
	xh = one_entry(buf, 256, 10);
	xh->xh_entries[0].xe_name_offset = htole16(250);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	cr_assert(strstr(why, "outside") != NULL, "%s", why);
	/* a name over the entries */
	xh->xh_entries[0].xe_name_offset = htole16(8);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	/* a short value marked external, a long one marked local */
	xh = one_entry(buf, 256, 10);
	xh->xh_entries[0].xe_type &= (uint8_t)~OCFS2_XATTR_ENTRY_LOCAL;
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	xh = one_entry(buf, 256, 100);
	xh->xh_entries[0].xe_type |= OCFS2_XATTR_ENTRY_LOCAL;
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	/* a value past 64 KiB */
	xh = one_entry(buf, 256, 65537);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	/* a value root claiming two records */
	xh = one_entry(buf, 256, 100);
	((struct ocfs2_xattr_value_root *)(buf + 256 - 52 + 4))->xr_list.l_next_free_rec = htole16(2);
	cr_assert_eq(xattr_header_check(xh, 256, 0, why, sizeof(why)), -1);
	/* in a bucket of 1K blocks a name and value may not straddle two */
	xh = one_entry(buf, 4096, 10);
	xh->xh_entries[0].xe_name_offset = htole16(1020);
	cr_assert_eq(xattr_header_check(xh, 4096, 0, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(xattr_header_check(xh, 4096, 1024, why, sizeof(why)), -1);
	cr_assert(strstr(why, "straddles") != NULL, "%s", why);
}

static void
make_volume(void)
{
	make_volume_of("64M", 1024, "--fs-features=xattr,inline-data -J size=4M");
}

static const struct ocfs2_dinode *
dinode(const struct fsd_buf *b)
{
	return (const struct ocfs2_dinode *)b->data;
}

/* The value of user.NAME on ip into out: its length, or -errno. */
static long
get(struct fsd *fs, struct fsd_inode *ip, const char *name, uint8_t *out, size_t cap)
{
	size_t len = 0;
	int rc = xattr_get(fs, ip, XATTR_INDEX_USER, name, out, cap, &len);

	return rc != 0 ? rc : (long)len;
}

Test(fsd_xattr, inline_block_buckets, .init = make_volume, .fini = remove_volume, .timeout = 120)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	static uint8_t vals[300][120], out[70000];
	struct fsd fs;
	struct fsd_inode *ip;
	struct fsd_buf *ib;
	char err[256], name[32], list[16384];
	size_t len;
	unsigned i;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(fs.xattr);
	cr_assert_eq(fs.xattr_inline_size, 256u);
	cr_assert_eq(inode_get(&fs, fs.root_blkno, &ip), 0);
	for (i = 0; i < 300; i++)
		memset(vals[i], (int)i, sizeof(vals[i]));

	/* one small attribute, and the flags' errors */
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "a", "1", 1, 0), 0);
	cr_assert_eq(get(&fs, ip, "a", out, sizeof(out)), 1);
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "a", "2", 1, XATTR_CREATE), -EEXIST);
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "zz", "2", 1, XATTR_REPLACE), -ENODATA);
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "zz", NULL, 0, XATTR_REPLACE), -ENODATA);
	cr_assert_eq(inode_lock_block(&fs, ip, LKM_PR, &ib), 0);
	/* the root is an inline directory: i_size = id_count leaves no room inline */
	cr_assert_eq(LE16(dinode(ib)->i_dyn_features) & OCFS2_INLINE_XATTR_FL, 0);
	cr_assert_neq(LE64(dinode(ib)->i_xattr_loc), 0u);
	inode_unlock_block(&fs, ip, LKM_PR, ib);

	/* many: the block fills and becomes the root of a bucket tree */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "n%03u", i);
		cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, name, vals[i], i % 120, 0), 0,
		    "set %s", name);
	}
	/* a third removed, the rest read back */
	for (i = 0; i < 300; i += 3) {
		snprintf(name, sizeof(name), "n%03u", i);
		cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, name, NULL, 0, XATTR_REPLACE), 0);
	}
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "n%03u", i);
		if (i % 3 == 0) {
			cr_assert_eq(get(&fs, ip, name, out, sizeof(out)), -ENODATA, "%s", name);
			continue;
		}
		cr_assert_eq(get(&fs, ip, name, out, sizeof(out)), (long)(i % 120), "%s", name);
		cr_assert_eq(memcmp(out, vals[i], i % 120), 0, "%s", name);
	}
	/* the size alone, and a buffer too small */
	cr_assert_eq(xattr_get(&fs, ip, XATTR_INDEX_USER, "n005", NULL, 0, &len), 0);
	cr_assert_eq(len, 5u);
	cr_assert_eq(xattr_get(&fs, ip, XATTR_INDEX_USER, "n005", out, 4, &len), -ERANGE);
	cr_assert_eq(xattr_list(&fs, ip, list, sizeof(list), &len), 0);
	cr_assert_eq(len, sizeof("user.a") + 200u * sizeof("user.n000"));	/* with their NULs */
	cr_assert_eq(inode_lock_block(&fs, ip, LKM_PR, &ib), 0);
	{
		struct fsd_buf *xb;

		cr_assert_eq(block_read_owned(&fs, LE64(dinode(ib)->i_xattr_loc), BLK_XATTR, ib->blkno,
		    &xb), 0);
		cr_assert(LE16(((const struct ocfs2_xattr_block *)xb->data)->xb_flags) &
		    OCFS2_XATTR_INDEXED, "300 attributes made the block an index");
		block_put(&fs, xb);
	}
	inode_unlock_block(&fs, ip, LKM_PR, ib);
	/* a 64 KiB value among the buckets, replaced by a short one */
	memset(out, 'v', 65536);
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "big", out, 65536, 0), 0);
	memset(out, 0, 65536);
	cr_assert_eq(get(&fs, ip, "big", out, sizeof(out)), 65536);
	cr_assert_eq(out[0], 'v');
	cr_assert_eq(out[65535], 'v');
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "big", "s", 1, XATTR_REPLACE), 0);
	cr_assert_eq(get(&fs, ip, "big", out, sizeof(out)), 1);
	inode_put(&fs, ip);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

/* An ACL in OCFS2's form from (tag, perm, id) triples. */
static size_t
acl_of(uint8_t *out, const unsigned (*e)[3], unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		uint8_t *p = out + 8 * i;

		p[0] = (uint8_t)e[i][0];
		p[1] = (uint8_t)(e[i][0] >> 8);
		p[2] = (uint8_t)e[i][1];
		p[3] = 0;
		memcpy(p + 4, &(uint32_t){ htole32(e[i][2]) }, 4);
	}
	return 8 * n;
}

static unsigned
perm_of(const uint8_t *d, unsigned i)
{
	return d[8 * i + 2];
}

Test(fsd_xattr, acl_forms)
{
	static const unsigned base[][3] = { { 1, 6, ~0u }, { 4, 4, ~0u }, { 0x20, 4, ~0u } };
	static const unsigned named[][3] = { { 1, 7, ~0u }, { 2, 6, 1000 }, { 4, 5, ~0u },
	    { 0x10, 7, ~0u }, { 0x20, 1, ~0u } };
	uint8_t d[64], v[64], back[64];
	size_t n, vn, bn;
	unsigned mode;

	/* OCFS2's form is the VFS's without its 4-byte version header */
	n = acl_of(d, named, 5);
	cr_assert_eq(acl_to_vfs(d, n, NULL, 0, &vn), 0);
	cr_assert_eq(vn, n + 4);
	cr_assert_eq(acl_to_vfs(d, n, v, 8, &vn), -ERANGE);
	cr_assert_eq(acl_to_vfs(d, n, v, sizeof(v), &vn), 0);
	cr_assert_eq(v[0], 2);
	cr_assert_eq(memcmp(v + 4, d, n), 0);
	cr_assert_eq(acl_from_vfs(v, vn, back, sizeof(back), &bn), 0);
	cr_assert_eq(bn, n);
	cr_assert_eq(memcmp(back, d, n), 0);
	/* ids only for named entries; a bad version, tag or order is refused */
	memset(v + 4 + 4, 0, 4);	/* user_obj's id given as 0 */
	cr_assert_eq(acl_from_vfs(v, vn, back, sizeof(back), &bn), 0);
	cr_assert_eq(memcmp(back + 4, "\xff\xff\xff\xff", 4), 0);
	v[0] = 1;
	cr_assert_eq(acl_from_vfs(v, vn, back, sizeof(back), &bn), -EINVAL);
	v[0] = 2;
	v[4 + 8 * 4] = 0x40;	/* other's tag */
	cr_assert_eq(acl_from_vfs(v, vn, back, sizeof(back), &bn), -EINVAL);
	v[4 + 8 * 4] = 0x20;
	memcpy(v + 4, d + 8, 8);	/* a named user before the owner */
	cr_assert_eq(acl_from_vfs(v, vn, back, sizeof(back), &bn), -EINVAL);
	/* a named entry needs a mask */
	memcpy(v + 4, d, n);
	v[4 + 8 * 3] = 0x20;
	cr_assert_eq(acl_from_vfs(v, vn - 8, back, sizeof(back), &bn), -EINVAL);

	/* the mode an ACL gives: the mask stands for the group */
	mode = S_IFREG | 0777;
	cr_assert_eq(acl_equiv_mode(d, n, &mode), 1);
	cr_assert_eq(mode, S_IFREG | 0771u);
	n = acl_of(d, base, 3);
	cr_assert_eq(acl_equiv_mode(d, n, &mode), 0);
	cr_assert_eq(mode, S_IFREG | 0644u);

	/* created under a default ACL: mode 0666 limits owner, mask and other */
	n = acl_of(d, named, 5);
	mode = S_IFREG | 0666;
	cr_assert_eq(acl_create_masq(d, n, &mode), 1);
	cr_assert_eq(mode, S_IFREG | 0660u);
	cr_assert_eq(perm_of(d, 0), 6u);
	cr_assert_eq(perm_of(d, 1), 6u, "a named entry keeps its bits");
	cr_assert_eq(perm_of(d, 3), 6u);
	cr_assert_eq(perm_of(d, 4), 0u);
	/* chmod: owner, mask and other follow; the group entry stays */
	acl_chmod(d, n, 0754);
	cr_assert_eq(perm_of(d, 0), 7u);
	cr_assert_eq(perm_of(d, 2), 5u);
	cr_assert_eq(perm_of(d, 3), 5u);
	cr_assert_eq(perm_of(d, 4), 4u);
	/* without a mask the group entry follows */
	n = acl_of(d, base, 3);
	acl_chmod(d, n, 0705);
	cr_assert_eq(perm_of(d, 1), 0u);
	mode = S_IFDIR | 0777;
	cr_assert_eq(acl_create_masq(d, n, &mode), 0);
	cr_assert_eq(mode, S_IFDIR | 0705u);
}

Test(fsd_xattr, bad_value_root_frees_nothing, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	static uint8_t v[200], out[200];
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_inode *ip;
	struct fsd_buf *ib, *rb;
	uint8_t saved[8];
	uint64_t ino;
	char err[256];
	int room;

	memset(v, 'v', sizeof(v));
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	ino = ib->blkno;
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_add(&h, rb, "f", 1, ino, OCFS2_FT_REG_FILE), 0);
	block_put(&fs, rb);
	block_put(&fs, ib);
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(inode_get(&fs, ino, &ip), 0);
	/* one 200-byte value: its root inline, the only entry, its record's e_blkno last */
	cr_assert_eq(xattr_set(&fs, ip, XATTR_INDEX_USER, "v", v, sizeof(v), 0), 0);
	cr_assert_eq(inode_lock_block(&fs, ip, LKM_EX, &ib), 0);
	cr_assert(LE16(dinode(ib)->i_dyn_features) & OCFS2_INLINE_XATTR_FL);
	memcpy(saved, ib->data + 1024 - 8, 8);
	memset(ib->data + 1024 - 8, 0xff, 8);
	inode_unlock_block(&fs, ip, LKM_EX, ib);
	room = tl_room(&fs);
	/* deleting first: only the check of the root stands between it and the bitmap */
	cr_assert_eq(xattr_free_all(&fs, ip), -EIO, "a bad root is not freed");
	cr_assert_eq(tl_room(&fs), room, "no cluster went to the truncate log");
	cr_assert_eq(get(&fs, ip, "v", out, sizeof(out)), -EIO, "a root outside the volume");
	cr_assert_eq(inode_lock_block(&fs, ip, LKM_EX, &ib), 0);
	memcpy(ib->data + 1024 - 8, saved, 8);
	inode_unlock_block(&fs, ip, LKM_EX, ib);
	cr_assert_eq(get(&fs, ip, "v", out, sizeof(out)), (long)sizeof(v));
	inode_put(&fs, ip);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
