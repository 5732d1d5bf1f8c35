/*
 * Refcount trees on a real volume (mkfs.ocfs2 with sparse, unwritten and
 * refcount, 512-byte blocks: 23 records in a refcount block, 23 leaves
 * listed by a root): counts added and taken over ranges split and merge
 * records, a count taken from a cluster without one is refused as
 * corruption, the root's records move into leaves once they outgrow it
 * and back when none is left, a tree needing more leaves than the
 * root lists grows levels of extent blocks and loses them again, and the
 * emptied tree leaves fsck.ocfs2 -fn clean.
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
make_refcount_volume(void)
{
	make_volume_of("64M", 512, "--fs-features=sparse,unwritten,refcount -J size=4M");
}

/* Room for 20000 clusters of records past cluster 9000. */
static void
make_big_refcount_volume(void)
{
	make_volume_of("256M", 512, "--fs-features=sparse,unwritten,refcount -J size=4M");
}

static struct fsd fs;
static struct fsd_buf *ib;	/* the file whose tree it is */

static void
mount_with_file(void)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096 };
	struct fsd_handle h;
	struct fsd_buf *rb;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(fs.refcount);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_add(&h, rb, "f", 1, ib->blkno, OCFS2_FT_REG_FILE), 0);
	block_put(&fs, rb);
	cr_assert_eq(refcount_tree_of(&h, ib), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

/* +1 (delta 1) or -1 over physical clusters [cpos, cpos+len), in a handle of its own. */
static int
change(uint64_t cpos, uint32_t len, int delta)
{
	struct fsd_handle h;
	int rc;

	cr_assert_eq(journal_start(&fs, &h), 0);
	rc = delta > 0 ? refcount_increase(&h, ib, cpos, len) :
	    refcount_decrease(&h, ib, cpos, len, 0);
	cr_assert_eq(journal_stop(&h, rc != 0), 0);
	return rc;
}

/* The count of cluster cpos and how far it lasts. */
static uint32_t
count_at(uint64_t cpos, uint32_t *run)
{
	struct fsd_handle h;
	uint32_t count, r;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(refcount_lookup(&h, ib, cpos, 100000, &count, &r), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	if (run != NULL)
		*run = r;
	return count;
}

/* The tree's root block as on disk now. */
static struct ocfs2_refcount_block
root(void)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)ib->data;
	struct ocfs2_refcount_block rb;
	struct fsd_buf *b;

	cr_assert_eq(block_read_owned(&fs, le64toh(di->i_refcount_loc), BLK_REFCOUNT,
	    le64toh(di->i_refcount_loc), &b), 0);
	memcpy(&rb, b->data, sizeof(rb));
	block_put(&fs, b);
	return rb;
}

static void
unmount(void)
{
	block_put(&fs, ib);
	super_unmount(&fs);
}

Test(fsd_refcount, records_split_merge_and_grow_leaves, .init = make_refcount_volume,
    .fini = remove_volume, .timeout = 120)
{
	uint64_t base = 8000;
	uint32_t run;
	unsigned i;

	mount_with_file();
	cr_assert_eq(change(base, 100, 1), 0);
	cr_assert_eq(count_at(base, &run), 1);
	cr_assert_eq(run, 100, "one record of 100 clusters, got a run of %u", run);
	/* a second reference to the middle splits it in three */
	cr_assert_eq(change(base + 40, 20, 1), 0);
	cr_assert_eq(count_at(base, &run), 1);
	cr_assert_eq(run, 40);
	cr_assert_eq(count_at(base + 40, &run), 2);
	cr_assert_eq(run, 20);
	cr_assert_eq(count_at(base + 60, &run), 1);
	cr_assert_eq(run, 40);
	cr_assert_eq(le16toh(root().rf_records.rl_used), 3);
	/* taken back, the three merge into one again */
	cr_assert_eq(change(base + 40, 20, -1), 0);
	cr_assert_eq(count_at(base, &run), 1);
	cr_assert_eq(run, 100);
	cr_assert_eq(le16toh(root().rf_records.rl_used), 1);
	/* no count to take: refused as corruption, nothing changed */
	cr_assert_eq(change(base + 200, 1, -1), -EIO);
	cr_assert_eq(fs.errors, 1);
	fs.errors = 0;	/* the mount would refuse changes from now on */
	cr_assert_eq(count_at(base + 200, NULL), 0);
	/* every other cluster counted twice: 100 records, past the root's 23 */
	for (i = 0; i < 100; i += 2)
		cr_assert_eq(change(base + i, 1, 1), 0, "cluster %u", i);
	cr_assert(le32toh(root().rf_flags) & OCFS2_REFCOUNT_TREE_FL, "the root became a tree");
	cr_assert_geq(le32toh(root().rf_clusters), 5);
	cr_assert_eq(le16toh(root().rf_list.l_next_free_rec), le32toh(root().rf_clusters));
	for (i = 0; i < 100; i++) {
		cr_assert_eq(count_at(base + i, &run), i % 2 ? 1 : 2, "cluster %u", i);
		cr_assert_eq(run, 1);
	}
	/* a range across leaves: one change, leaf by leaf */
	cr_assert_eq(change(base + 10, 60, 1), 0);
	for (i = 0; i < 100; i++)
		cr_assert_eq(count_at(base + i, NULL), (i % 2 ? 1 : 2) + (i >= 10 && i < 70),
		    "cluster %u", i);
	cr_assert_eq(change(base + 10, 60, -1), 0);
	/* taken back: one count again, then none; with no leaf left the root holds records */
	for (i = 0; i < 100; i += 2)
		cr_assert_eq(change(base + i, 1, -1), 0, "cluster %u", i);
	for (i = 0; i < 100; i++)
		cr_assert_eq(count_at(base + i, NULL), 1, "cluster %u", i);
	cr_assert_eq(change(base, 100, -1), 0);
	cr_assert_eq(le32toh(root().rf_flags) & OCFS2_REFCOUNT_TREE_FL, 0u);
	cr_assert_eq(le16toh(root().rf_records.rl_used), 0);
	cr_assert_eq(fs.errors, 0);
	unmount();
	cr_assert(fsck_clean());
}

Test(fsd_refcount, a_tree_past_the_roots_list_grows_extent_blocks,
    .init = make_big_refcount_volume, .fini = remove_volume, .timeout = 300)
{
	const unsigned n = 20000;
	uint64_t base = 9000;
	unsigned i, depth;

	mount_with_file();
	cr_assert_eq(change(base, n, 1), 0);
	/*
	 * alternating counts: 20000 records in leaves of 23, listed by
	 * extent blocks of 28 records: more than the root's 23, so two levels
	 */
	for (i = 0; i < n; i += 2)
		cr_assert_eq(change(base + i, 1, 1), 0, "cluster %u", i);
	depth = le16toh(root().rf_list.l_tree_depth);
	cr_assert_eq(depth, 2, "the root's list grew two levels, not %u", depth);
	cr_assert_neq(le64toh(root().rf_last_eb_blk), 0);
	cr_assert_gt(le32toh(root().rf_clusters), 23 * 28);
	for (i = 0; i < n; i++)
		cr_assert_eq(count_at(base + i, NULL), i % 2 ? 1 : 2, "cluster %u", i);
	/* a range across many leaves, up and back down */
	cr_assert_eq(change(base + 101, 15000, 1), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(count_at(base + i, NULL), (i % 2 ? 1 : 2) + (i >= 101 && i < 15101),
		    "cluster %u", i);
	cr_assert_eq(change(base + 101, 15000, -1), 0);
	/* taken back from the first cluster on: leaves go, the first one's span from 0 */
	for (i = 0; i < n; i += 2)
		cr_assert_eq(change(base + i, 1, -1), 0, "cluster %u", i);
	for (i = 0; i < n; i++)
		cr_assert_eq(count_at(base + i, NULL), 1, "cluster %u", i);
	cr_assert_eq(change(base, n, -1), 0);
	cr_assert_eq(le32toh(root().rf_flags) & OCFS2_REFCOUNT_TREE_FL, 0u, "no leaf is left");
	cr_assert_eq(le16toh(root().rf_records.rl_used), 0);
	cr_assert_eq(fs.errors, 0);
	unmount();
	cr_assert(fsck_clean());
}
