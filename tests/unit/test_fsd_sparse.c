/*
 * Extent trees of sparse files on a real volume (mkfs.ocfs2 with the
 * sparse and unwritten features, 512-byte blocks: 19 records in an
 * inode, 28 per extent block): inserts into holes merge with the
 * records they continue, flags set on part of an extent split it and
 * merge back, overlaps and holes are refused, and a tree grown by
 * inserts in the middle to depth 2 maps every cluster, then punched
 * empty, leaves fsck.ocfs2 -fn clean.
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
make_sparse_volume(void)
{
	make_volume_of("256M", 512, "--fs-features=sparse,unwritten -J size=4M");
}

static struct fsd fs;

/* A new empty file linked in the root; its inode buffer referenced. */
static struct fsd_buf *
new_file(const char *name)
{
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_add(&h, rb, name, strlen(name), ib->blkno, OCFS2_FT_REG_FILE), 0);
	block_put(&fs, rb);
	cr_assert_eq(journal_stop(&h, 0), 0);
	return ib;
}

/* n free clusters in one run: its first cluster. */
static uint32_t
clusters(unsigned n)
{
	struct fsd_handle h;
	uint32_t start;
	unsigned got;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(alloc_clusters(&h, 0, n, n, &start, &got), 0);
	cr_assert_eq(got, n);
	cr_assert_eq(journal_stop(&h, 0), 0);
	return start;
}

static uint64_t
blk(uint32_t cluster)
{
	return (uint64_t)cluster << (fs.cbits - fs.bbits);
}

enum change { INSERT, WRITTEN, UNWRITTEN, PUNCH };

/*
 * One change in a handle of its own, aborted when it fails: its status.
 * A punch that filled the truncate log (-EAGAIN) keeps what it did.
 */
static int
change(struct fsd_buf *ib, enum change c, uint32_t cpos, uint32_t len, uint64_t pblk,
    uint8_t flags)
{
	struct fsd_handle h;
	int rc;

	cr_assert_eq(journal_start(&fs, &h), 0);
	switch (c) {
	case INSERT:
		rc = extent_insert(&h, ib, cpos, len, pblk, flags);
		break;
	case WRITTEN:
		rc = extent_set_flags(&h, ib, cpos, len, 0);
		break;
	case UNWRITTEN:
		rc = extent_set_flags(&h, ib, cpos, len, OCFS2_EXT_UNWRITTEN);
		break;
	default:
		rc = extent_punch(&h, ib, cpos, cpos + len);
		break;
	}
	journal_stop(&h, rc != 0 && rc != -EAGAIN);
	return rc;
}

/* The inode's (depth 0) records as "cpos+len@cluster[u] ...". */
static const char *
records(struct fsd_buf *ib)
{
	static char out[512];
	const struct ocfs2_extent_list *el = &((struct ocfs2_dinode *)ib->data)->id2.i_list;
	const struct ocfs2_extent_rec *r;
	size_t n = 0;
	unsigned i;

	out[0] = '\0';
	cr_assert_eq(le16toh(el->l_tree_depth), 0);
	for (i = 0; i < le16toh(el->l_next_free_rec); i++) {
		r = &el->l_recs[i];
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%u+%u@%llu%s", i ? " " : "",
		    le32toh(r->e_cpos), le16toh(r->e_leaf_clusters),
		    (unsigned long long)(le64toh(r->e_blkno) >> (fs.cbits - fs.bbits)),
		    (r->e_flags & OCFS2_EXT_UNWRITTEN) ? "u" : "");
	}
	return out;
}

/* Give back clusters a refused change did not take. */
static void
unclaim(uint32_t start, unsigned n)
{
	struct fsd_handle h;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(free_clusters(&h, start, n), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

/* Set the size (fsck wants it to reach the last mapped cluster). */
static void
set_size(struct fsd_buf *ib, uint64_t size)
{
	struct fsd_handle h;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(journal_access(&h, ib), 0);
	((struct ocfs2_dinode *)ib->data)->i_size = htole64(size);
	journal_dirty(&h, ib);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

static uint32_t
iclusters(struct fsd_buf *ib)
{
	return le32toh(((struct ocfs2_dinode *)ib->data)->i_clusters);
}

Test(fsd_sparse, records_split_and_merge, .init = make_sparse_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd_buf *ib;
	uint32_t a, b, u, spare;
	char err[256], want[512];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(fs.sparse && fs.unwritten);
	ib = new_file("f");
	a = clusters(5);
	b = clusters(1);
	u = clusters(10);

	/* inserts land in order; one that continues a record merges into it */
	cr_assert_eq(change(ib, INSERT, 10, 1, blk(a), 0), 0);
	cr_assert_eq(change(ib, INSERT, 5, 1, blk(b), 0), 0);
	cr_assert_eq(change(ib, INSERT, 11, 1, blk(a + 1), 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+2@%u", b, a);
	cr_assert_str_eq(records(ib), want);
	/* and one that the next record continues too joins both */
	cr_assert_eq(change(ib, INSERT, 13, 2, blk(a + 3), 0), 0);
	cr_assert_eq(change(ib, INSERT, 12, 1, blk(a + 2), 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+5@%u", b, a);
	cr_assert_str_eq(records(ib), want);
	cr_assert_eq(iclusters(ib), 6);

	/* an unwritten extent split by a write in its middle, then made whole again */
	cr_assert_eq(change(ib, INSERT, 20, 10, blk(u), OCFS2_EXT_UNWRITTEN), 0);
	cr_assert_eq(change(ib, WRITTEN, 24, 2, 0, 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+5@%u 20+4@%uu 24+2@%u 26+4@%uu", b, a, u, u + 4,
	    u + 6);
	cr_assert_str_eq(records(ib), want);
	cr_assert_eq(change(ib, WRITTEN, 20, 4, 0, 0), 0);
	cr_assert_eq(change(ib, WRITTEN, 26, 4, 0, 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+5@%u 20+10@%u", b, a, u);
	cr_assert_str_eq(records(ib), want);
	/* at its start and end */
	cr_assert_eq(change(ib, UNWRITTEN, 20, 1, 0, 0), 0);
	cr_assert_eq(change(ib, UNWRITTEN, 29, 1, 0, 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+5@%u 20+1@%uu 21+8@%u 29+1@%uu", b, a, u, u + 1,
	    u + 9);
	cr_assert_str_eq(records(ib), want);
	cr_assert_eq(iclusters(ib), 16);

	/* refused, and nothing changed: an insert over a mapped cluster, flags on a hole */
	spare = clusters(2);
	cr_assert_eq(change(ib, INSERT, 14, 2, blk(spare), 0), -EEXIST);
	unclaim(spare, 2);
	cr_assert_eq(change(ib, WRITTEN, 15, 6, 0, 0), -ENOENT);
	cr_assert_str_eq(records(ib), want);
	cr_assert_eq(iclusters(ib), 16);

	/* punch across records, holes included */
	cr_assert_eq(change(ib, PUNCH, 12, 10, 0, 0), 0);
	snprintf(want, sizeof(want), "5+1@%u 10+2@%u 22+7@%u 29+1@%uu", b, a, u + 2, u + 9);
	cr_assert_str_eq(records(ib), want);
	cr_assert_eq(iclusters(ib), 11);
	cr_assert_eq(change(ib, PUNCH, 0, 100, 0, 0), 0);
	cr_assert_str_eq(records(ib), "");
	cr_assert_eq(iclusters(ib), 0);
	block_put(&fs, ib);
	cr_assert_eq(tl_flush(&fs), 0);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_sparse, inserts_in_the_middle_grow_a_deep_tree, .init = make_sparse_volume,
    .fini = remove_volume, .timeout = 120)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	enum { N = 700 };	/* > 19 leaves of 21: depth 2 */
	static uint32_t where[N];
	const struct ocfs2_extent_list *el;
	struct fsd_extent ex;
	struct fsd_buf *ib;
	uint64_t ino;
	unsigned k, i;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	ib = new_file("deep");
	ino = ib->blkno;
	/* every other cluster, inward from both ends: no two records merge */
	for (i = 0; i < N; i++) {
		k = i % 2 ? N - 1 - i / 2 : i / 2;
		where[k] = clusters(1);
		cr_assert_eq(change(ib, INSERT, 2 * k, 1, blk(where[k]), 0), 0, "extent %u", k);
	}
	set_size(ib, (uint64_t)2 * N << fs.cbits);
	el = &((struct ocfs2_dinode *)ib->data)->id2.i_list;
	cr_assert_eq(le16toh(el->l_tree_depth), 2);
	cr_assert_eq(iclusters(ib), N);
	for (k = 0; k < N; k++) {
		cr_assert_eq(extent_map(&fs, ib->blkno, el, blk(2 * k) + 3, &ex), 0);
		cr_assert_eq(ex.pblk, blk(where[k]) + 3, "cluster %u", 2 * k);
		cr_assert_eq(extent_map(&fs, ib->blkno, el, blk(2 * k + 1), &ex), 0);
		cr_assert_eq(ex.pblk, 0, "a hole at %u", 2 * k + 1);
	}
	/* half of it unwritten, every other record, splitting nothing */
	for (k = 0; k < N; k += 2)
		cr_assert_eq(change(ib, UNWRITTEN, 2 * k, 1, 0, 0), 0);
	for (k = 0; k < N; k++) {
		cr_assert_eq(extent_map(&fs, ib->blkno, el, blk(2 * k), &ex), 0);
		cr_assert_eq(ex.unwritten, k % 2 == 0, "cluster %u", 2 * k);
	}
	block_put(&fs, ib);
	super_unmount(&fs);
	cr_assert(fsck_clean());

	/* punched empty from the middle out, in as many handles as the truncate log needs */
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(block_read(&fs, ino, BLK_INODE, &ib), 0);
	for (k = N / 2; k < N; k += 50) {
		int rc;

		while ((rc = change(ib, PUNCH, 2 * (N - k), 4 * (k - N / 2) + 100, 0, 0)) == -EAGAIN)
			cr_assert_eq(tl_flush(&fs), 0);
		cr_assert_eq(rc, 0);
	}
	while (change(ib, PUNCH, 0, 2 * N, 0, 0) == -EAGAIN)
		cr_assert_eq(tl_flush(&fs), 0);
	cr_assert_eq(iclusters(ib), 0);
	el = &((struct ocfs2_dinode *)ib->data)->id2.i_list;
	cr_assert_eq(le16toh(el->l_next_free_rec), 0);
	block_put(&fs, ib);
	cr_assert_eq(tl_flush(&fs), 0);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
