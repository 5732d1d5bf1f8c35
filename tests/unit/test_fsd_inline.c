/*
 * Inline data on a volume made by mkfs.ocfs2 --fs-features=inline-data
 * with 512-byte blocks (312 bytes inline): a conversion or a directory
 * expansion in a handle that is aborted leaves the inode inline as it
 * was, with no cluster taken; committed, it maps one cluster with the
 * bytes or entries in place; fsck.ocfs2 -fn clean at the end.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

static void
make_volume(void)
{
	make_volume_of("64M", 512, "--fs-features=inline-data -J size=4M");
}

static const struct ocfs2_dinode *
dinode(const struct fsd_buf *b)
{
	return (const struct ocfs2_dinode *)b->data;
}

/* Read the file's bytes [0, size) into out; how many. */
static size_t
read_all(struct fsd *fs, struct fsd_buf *ib, uint8_t *out, size_t cap)
{
	const char *p;
	size_t got;
	void *base;

	cr_assert_eq(data_read(fs, dinode(ib), 0, cap, &base, &p, &got), 0);
	memcpy(out, p, got);
	free(base);
	return got;
}

Test(fsd_inline, file_conversion_is_all_or_nothing, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	uint8_t a[100], b[400], got[1024], want[1024];
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	uint64_t ino;
	char err[256];

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(fs.inline_data);
	cr_assert_eq(inline_capacity(&fs, &(struct ocfs2_dinode){ 0 }), 312u);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	ino = ib->blkno;
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_add(&h, rb, "f", 1, ino, OCFS2_FT_REG_FILE), 0);
	cr_assert_not(inline_has(dinode(ib)), "a new file starts with an extent list");
	cr_assert_eq(file_write_locked(&h, ib, 0, a, sizeof(a)), 0);
	cr_assert(inline_has(dinode(ib)), "its first small write makes it inline");
	cr_assert_eq(journal_stop(&h, 0), 0);

	/* a write that outgrows the area, aborted: inline as before */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(file_write_locked(&h, ib, 50, b, sizeof(b)), 0);
	cr_assert_not(inline_has(dinode(ib)));
	cr_assert_eq(le32toh(dinode(ib)->i_clusters), 1u);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert(inline_has(dinode(ib)), "the abort gave the inline area back");
	cr_assert_eq(le32toh(dinode(ib)->i_clusters), 0u);
	cr_assert_eq(le64toh(dinode(ib)->i_size), sizeof(a));
	cr_assert_eq(read_all(&fs, ib, got, sizeof(got)), sizeof(a));
	cr_assert_eq(memcmp(got, a, sizeof(a)), 0);

	/* the same committed: one cluster, the old bytes kept under the new */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(file_write_locked(&h, ib, 50, b, sizeof(b)), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	memcpy(want, a, sizeof(a));
	memcpy(want + 50, b, sizeof(b));
	cr_assert_not(inline_has(dinode(ib)));
	cr_assert_eq(le32toh(dinode(ib)->i_clusters), 1u);
	cr_assert_eq(read_all(&fs, ib, got, sizeof(got)), 450u);
	cr_assert_eq(memcmp(got, want, 450), 0);
	block_put(&fs, ib);
	block_put(&fs, rb);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

struct names {
	unsigned	n;
	char		seen[64];
};

static int
count_cb(void *arg, const struct fsd_dirent *d)
{
	struct names *nm = arg;

	if (d->name_len > 200)
		nm->seen[d->name[d->name_len - 1] - '0'] = 1;
	nm->n++;
	return 0;
}

Test(fsd_inline, directory_expansion_is_all_or_nothing, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *rb;
	struct names nm;
	uint64_t lf, ino;
	char err[256], name[256];
	unsigned k;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert(inline_has(dinode(rb)), "mkfs made the root inline");
	cr_assert_eq(dir_lookup(&fs, dinode(rb), "lost+found", 10, &lf), 0);
	/* 230-byte names: one fits in what mkfs left, the second needs a block */
	memset(name, 'n', 229);
	name[229] = '0';
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(dir_add(&h, rb, name, 230, lf, OCFS2_FT_DIR), 0);
	cr_assert(inline_has(dinode(rb)));
	cr_assert_eq(journal_stop(&h, 0), 0);

	cr_assert_eq(journal_start(&fs, &h), 0);
	name[229] = '1';
	cr_assert_eq(dir_add(&h, rb, name, 230, lf, OCFS2_FT_DIR), 0);
	cr_assert_not(inline_has(dinode(rb)), "expanded");
	cr_assert_eq(dir_lookup(&fs, dinode(rb), name, 230, &ino), 0);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert(inline_has(dinode(rb)), "the abort left the root inline");
	cr_assert_eq(le32toh(dinode(rb)->i_clusters), 0u);
	cr_assert_eq(dir_lookup(&fs, dinode(rb), name, 230, &ino), -ENOENT);

	/* committed this time, then three more: blocks after the first */
	for (k = 1; k < 5; k++) {
		name[229] = (char)('0' + k);
		cr_assert_eq(journal_start(&fs, &h), 0);
		cr_assert_eq(dir_add(&h, rb, name, 230, lf, OCFS2_FT_DIR), 0);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	cr_assert_not(inline_has(dinode(rb)));
	cr_assert_gt(le64toh(dinode(rb)->i_size), 512u);
	memset(&nm, 0, sizeof(nm));
	cr_assert_eq(dir_iterate(&fs, dinode(rb), 0, count_cb, &nm), 0);
	cr_assert_eq(nm.n, 3u + 5u, ". .. lost+found and the five");
	for (k = 0; k < 5; k++)
		cr_assert(nm.seen[k], "name %u", k);
	/* take them away again so that lost+found's link count stays right */
	for (k = 0; k < 5; k++) {
		name[229] = (char)('0' + k);
		cr_assert_eq(journal_start(&fs, &h), 0);
		cr_assert_eq(dir_remove(&h, rb, name, 230), 0);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	cr_assert_eq(dir_lookup(&fs, dinode(rb), "lost+found", 10, &ino), 0);
	block_put(&fs, rb);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
