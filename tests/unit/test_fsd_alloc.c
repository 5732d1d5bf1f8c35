/*
 * Allocators and extent trees on a real volume made by mkfs.ocfs2 with
 * 512-byte blocks (19 records in an inode, 28 per extent block): a file
 * of one-cluster extents grown to a depth-3 tree and cut back, every
 * cluster mapped where it was put, suballocators grown (in one run, or
 * with discontig-bg in several when the global bitmap is fragmented),
 * counts that add up, and fsck.ocfs2 -fn clean at the end.
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
	make_volume_of("256M", 512, "");
}

/* Walk every chain: c_total/c_free and the inode's totals must agree (fsck pass 0). */
static void
check_chains(struct fsd *fs, uint64_t alloc)
{
	const struct ocfs2_dinode *di;
	const struct ocfs2_chain_list *cl;
	struct fsd_buf *ab, *gb;
	uint64_t g, next, itotal = 0, iused = 0, ct, cf;
	unsigned i;

	cr_assert_eq(block_read(fs, alloc, BLK_INODE, &ab), 0);
	di = (const struct ocfs2_dinode *)ab->data;
	cl = &di->id2.i_chain;
	for (i = 0; i < le16toh(cl->cl_next_free_rec); i++) {
		ct = cf = 0;
		for (g = le64toh(cl->cl_recs[i].c_blkno); g != 0; g = next) {
			cr_assert_eq(block_read(fs, g, BLK_GROUP, &gb), 0);
			ct += le16toh(((const struct ocfs2_group_desc *)gb->data)->bg_bits);
			cf += le16toh(((const struct ocfs2_group_desc *)gb->data)->bg_free_bits_count);
			next = le64toh(((const struct ocfs2_group_desc *)gb->data)->bg_next_group);
			block_put(fs, gb);
		}
		cr_assert_eq(ct, le32toh(cl->cl_recs[i].c_total), "chain %u total", i);
		cr_assert_eq(cf, le32toh(cl->cl_recs[i].c_free), "chain %u free", i);
		itotal += ct;
		iused += ct - cf;
	}
	cr_assert_eq(itotal, le32toh(di->id1.bitmap1.i_total));
	cr_assert_eq(iused, le32toh(di->id1.bitmap1.i_used));
	block_put(fs, ab);
}

Test(fsd_alloc, deep_tree_grows_maps_and_shrinks, .init = make_volume, .fini = remove_volume,
    .timeout = 120)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	enum { N = 15000 };	/* > 19 * 28 * 28: depth 3 */
	static uint32_t where[N], spacer[N];
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	struct fsd_inode *ip;
	struct fsd_extent ex;
	uint64_t ino;
	uint32_t goal = 0, start;
	unsigned k, got;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	/* a file, linked in the root so that fsck sees it connected */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	ino = ib->blkno;
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_add(&h, rb, "deep", 4, ino, OCFS2_FT_REG_FILE), 0);
	block_put(&fs, rb);
	cr_assert_eq(journal_stop(&h, 0), 0);

	/* one cluster for the file, one spacer, so that no two extents merge */
	for (k = 0; k < N; k++) {
		cr_assert_eq(journal_start(&fs, &h), 0);
		cr_assert_eq(journal_access(&h, ib), 0);
		cr_assert_eq(alloc_clusters(&h, goal, 1, 1, &where[k], &got), 0);
		cr_assert_eq(alloc_clusters(&h, where[k] + 1, 1, 1, &spacer[k], &got), 0);
		goal = spacer[k] + 1;
		cr_assert_eq(extent_append(&h, ib, k, (uint64_t)where[k] << 3, 1), 0, "extent %u", k);
		((struct ocfs2_dinode *)ib->data)->i_size = htole64((uint64_t)(k + 1) * 4096);
		journal_dirty(&h, ib);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	cr_assert_eq(le16toh(((struct ocfs2_dinode *)ib->data)->id2.i_list.l_tree_depth), 3);
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)ib->data)->i_clusters), N);
	for (k = 0; k < N; k += 7) {
		cr_assert_eq(extent_map(&fs, ino, &((struct ocfs2_dinode *)ib->data)->id2.i_list,
		    (uint64_t)k * 8 + 3, &ex), 0);
		cr_assert_eq(ex.pblk, ((uint64_t)where[k] << 3) + 3, "cluster %u", k);
		cr_assert_eq(ex.nblocks, 5);
	}
	check_chains(&fs, fs.global_bitmap);
	check_chains(&fs, fs.slots[0].extent_alloc);
	block_put(&fs, ib);

	/* cut to 100 clusters through the truncate log, in several handles */
	cr_assert_eq(inode_get(&fs, ino, &ip), 0);
	cr_assert_eq(file_setsize(&fs, ip, 100 * 4096), 0);
	inode_put(&fs, ip);
	cr_assert_eq(block_read(&fs, ino, BLK_INODE, &ib), 0);
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)ib->data)->i_clusters), 100);
	for (k = 0; k < 100; k++) {
		cr_assert_eq(extent_map(&fs, ino, &((struct ocfs2_dinode *)ib->data)->id2.i_list,
		    (uint64_t)k * 8, &ex), 0);
		cr_assert_eq(ex.pblk, (uint64_t)where[k] << 3);
	}
	cr_assert_eq(extent_map(&fs, ino, &((struct ocfs2_dinode *)ib->data)->id2.i_list,
	    100 * 8, &ex), 0);
	cr_assert_eq(ex.pblk, 0, "nothing past the cut");
	block_put(&fs, ib);
	cr_assert_eq(tl_flush(&fs), 0);

	/* the spacers go back to the global bitmap */
	for (k = 0; k < N; k += 500) {
		unsigned j;

		cr_assert_eq(journal_start(&fs, &h), 0);
		for (j = k; j < k + 500 && j < N; j++) {
			start = spacer[j];
			cr_assert_eq(free_clusters(&h, start, 1), 0);
		}
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	check_chains(&fs, fs.global_bitmap);
	check_chains(&fs, fs.slots[0].extent_alloc);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_alloc, suballocators_grow, .init = make_volume, .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	const struct ocfs2_dinode *adi;
	struct fsd_buf *ab;
	uint32_t before, after;
	char err[256], name[32];
	unsigned k;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(block_read(&fs, fs.slots[0].inode_alloc, BLK_INODE, &ab), 0);
	adi = (const struct ocfs2_dinode *)ab->data;
	before = le32toh(adi->id1.bitmap1.i_total);
	block_put(&fs, ab);
	/* more inodes than the groups mkfs made hold */
	for (k = 0; k < before + 10; k++) {
		cr_assert_eq(journal_start(&fs, &h), 0);
		cr_assert_eq(inode_create(&h, S_IFREG | 0600, 0, 0, 0, &ib), 0, "inode %u", k);
		cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
		snprintf(name, sizeof(name), "i%u", k);
		cr_assert_eq(dir_add(&h, rb, name, strlen(name), ib->blkno, OCFS2_FT_REG_FILE), 0);
		block_put(&fs, rb);
		block_put(&fs, ib);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	cr_assert_eq(block_read(&fs, fs.slots[0].inode_alloc, BLK_INODE, &ab), 0);
	adi = (const struct ocfs2_dinode *)ab->data;
	after = le32toh(adi->id1.bitmap1.i_total);
	cr_assert_gt(after, before, "inode_alloc grew a group");
	cr_assert_eq(le64toh(adi->i_size), (uint64_t)le32toh(adi->i_clusters) * 4096);
	block_put(&fs, ab);
	check_chains(&fs, fs.slots[0].inode_alloc);
	check_chains(&fs, fs.global_bitmap);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_alloc, name_index_follows_changes_and_aborts, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_inode *root;
	struct fsd_buf *rb;
	uint64_t ino, lf;
	char err[256], name[32];
	unsigned k;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(inode_get(&fs, fs.root_blkno, &root), 0);	/* the index hangs off it */
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "lost+found", 10, &lf), 0);
	cr_assert_not_null(root->dindex, "built by the first lookup");

	/* names added in committed handles are found through the index */
	for (k = 0; k < 300; k++) {
		cr_assert_eq(journal_start(&fs, &h), 0);
		snprintf(name, sizeof(name), "name-%u", k);
		cr_assert_eq(dir_add(&h, rb, name, strlen(name), lf, OCFS2_FT_DIR), 0);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "name-299", 8, &ino), 0);
	cr_assert_eq(ino, lf);
	/* removed ones are not */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(dir_remove(&h, rb, "name-7", 6), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "name-7", 6, &ino), -ENOENT);
	/* an aborted add leaves neither the entry nor an index hit behind */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(dir_add(&h, rb, "ghost", 5, lf, OCFS2_FT_DIR), 0);
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "ghost", 5, &ino), 0);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "ghost", 5, &ino), -ENOENT);
	cr_assert_eq(dir_lookup(&fs, (const struct ocfs2_dinode *)rb->data, "name-100", 8, &ino), 0);
	/* take the extra names away again so that link counts stay right for fsck */
	for (k = 0; k < 300; k++) {
		if (k == 7)
			continue;
		cr_assert_eq(journal_start(&fs, &h), 0);
		snprintf(name, sizeof(name), "name-%u", k);
		cr_assert_eq(dir_remove(&h, rb, name, strlen(name)), 0);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	block_put(&fs, rb);
	inode_put(&fs, root);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

/*
 * Take the whole global bitmap in runs of at most run clusters, then give
 * every other run back: the free space is all in holes of at most run
 * clusters. The runs kept are in kept[0..*nkept).
 */
static void
fragment_global_bitmap(struct fsd *fs, unsigned run, uint32_t *kept, unsigned *nkept)
{
	struct fsd_handle h;
	unsigned got, n = 0, i;
	int rc;

	cr_assert_eq(journal_start(fs, &h), 0);
	while ((rc = alloc_clusters(&h, 0, 1, run, &kept[2 * n], &got)) == 0)
		kept[2 * n++ + 1] = got;
	cr_assert_eq(rc, -ENOSPC);
	for (i = 1; i < n; i += 2)
		cr_assert_eq(free_clusters(&h, kept[2 * i], kept[2 * i + 1]), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	for (i = 0; 2 * i < n; i++) {
		kept[2 * i] = kept[4 * i];
		kept[2 * i + 1] = kept[4 * i + 1];
	}
	*nkept = i;
}

static void
unfragment_global_bitmap(struct fsd *fs, const uint32_t *kept, unsigned nkept)
{
	struct fsd_handle h;
	unsigned i;

	cr_assert_eq(journal_start(fs, &h), 0);
	for (i = 0; i < nkept; i++)
		cr_assert_eq(free_clusters(&h, kept[2 * i], kept[2 * i + 1]), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

static uint32_t
free_bits(struct fsd *fs, uint64_t alloc)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *b;
	uint32_t n;

	cr_assert_eq(block_read(fs, alloc, BLK_INODE, &b), 0);
	di = (const struct ocfs2_dinode *)b->data;
	n = le32toh(di->id1.bitmap1.i_total) - le32toh(di->id1.bitmap1.i_used);
	block_put(fs, b);
	return n;
}

static void
make_discontig_volume(void)
{
	make_volume_of("128M", 512, "--fs-features=discontig-bg");
}

/*
 * 512-byte blocks: extent_alloc groups of 256 clusters, 11 extents at most
 * in a group's bg_list. With holes of 32 clusters the allocator grows a
 * group of 8 extents, and every block it hands out lies in one of them.
 */
Test(fsd_alloc, extent_alloc_grows_a_discontiguous_group, .init = make_discontig_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	enum { MORE = 100 };
	static uint32_t kept[2 * 16384];
	static struct fsd_subbit sb[4096];
	const struct ocfs2_group_desc *gd;
	const struct ocfs2_extent_rec *r;
	struct ocfs2_extent_rec *rec;
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *gb;
	uint64_t alloc, newgroup = 0;
	__le32 saved;
	unsigned nkept, n, k, i, inside;
	char err[256];
	int rc;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	alloc = fs.slots[0].extent_alloc;
	fragment_global_bitmap(&fs, 32, kept, &nkept);
	n = free_bits(&fs, alloc) + MORE;
	cr_assert_lt(n, 4096);
	for (k = 0; k < n; k++) {
		cr_assert_eq(journal_start(&fs, &h), 0);
		rc = suballoc_claim(&h, SUBALLOC_EXTENT, &sb[k]);
		cr_assert_eq(rc, 0, "block %u: %d", k, rc);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	newgroup = sb[n - 1].group;
	cr_assert_eq(block_read(&fs, newgroup, BLK_GROUP, &gb), 0);
	gd = (const struct ocfs2_group_desc *)gb->data;
	cr_assert_eq(le16toh(gd->bg_size), 256, "bg_size leaves room for bg_list");
	cr_assert_eq(le16toh(gd->bg_list.l_next_free_rec), 8, "eight runs of 32 clusters");
	cr_assert_eq(le16toh(gd->bg_list.l_count), ocfs2_extent_recs_per_gd(512));
	cr_assert_eq(le16toh(gd->bg_bits), 2048);
	cr_assert_eq(le64toh(gd->bg_list.l_recs[0].e_blkno), newgroup, "the descriptor first");
	for (k = 0; k < n; k++) {
		if (sb[k].group != newgroup)
			continue;
		for (i = 0, inside = 0; i < le16toh(gd->bg_list.l_next_free_rec); i++) {
			r = &gd->bg_list.l_recs[i];
			if (sb[k].bit >= le32toh(r->e_cpos) * 8 &&
			    sb[k].bit < (le32toh(r->e_cpos) + le16toh(r->e_leaf_clusters)) * 8) {
				cr_assert_eq(sb[k].blkno, le64toh(r->e_blkno) +
				    (sb[k].bit - le32toh(r->e_cpos) * 8), "bit %u", sb[k].bit);
				inside = 1;
			}
		}
		cr_assert(inside, "bit %u of the new group is in no extent", sb[k].bit);
		for (i = 0; i < k; i++)
			cr_assert_neq(sb[i].blkno, sb[k].blkno, "block handed out twice");
	}
	block_put(&fs, gb);
	check_chains(&fs, alloc);
	check_chains(&fs, fs.global_bitmap);
	for (k = 0; k + 1 < n; k++) {
		cr_assert_eq(journal_start(&fs, &h), 0);
		cr_assert_eq(suballoc_free(&h, alloc, sb[k].group, sb[k].bit), 0);
		cr_assert_eq(journal_stop(&h, 0), 0);
	}
	check_chains(&fs, alloc);
	unfragment_global_bitmap(&fs, kept, nkept);

	/*
	 * A run out of its place in bg_list (changed in the cache only): the
	 * group is refused as corrupt, its last bit stays allocated.
	 */
	cr_assert_eq(block_read(&fs, newgroup, BLK_GROUP, &gb), 0);
	rec = &((struct ocfs2_group_desc *)gb->data)->bg_list.l_recs[1];
	saved = rec->e_cpos;
	rec->e_cpos = htole32(le32toh(saved) + 1);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(suballoc_free(&h, alloc, sb[n - 1].group, sb[n - 1].bit), -EIO);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert_eq(fs.errors, 1);
	rec->e_cpos = saved;
	block_put(&fs, gb);
	super_unmount(&fs);

	/* mounted again (the disk was never wrong), the last bit goes back */
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(suballoc_free(&h, alloc, sb[n - 1].group, sb[n - 1].bit), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	check_chains(&fs, alloc);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

/*
 * With holes of 16 clusters a group would need 16 extents, more than
 * bg_list holds: ENOSPC, and the runs it took are back in the global
 * bitmap.
 */
Test(fsd_alloc, discontiguous_group_too_fragmented_is_enospc, .init = make_discontig_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	static uint32_t kept[2 * 16384];
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_subbit sb;
	uint64_t alloc;
	uint32_t global_free;
	unsigned nkept, n, k;
	char err[256];
	int rc;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	alloc = fs.slots[0].extent_alloc;
	fragment_global_bitmap(&fs, 16, kept, &nkept);
	global_free = free_bits(&fs, fs.global_bitmap);
	n = free_bits(&fs, alloc);
	cr_assert_eq(journal_start(&fs, &h), 0);
	for (k = 0; k < n; k++)
		cr_assert_eq(suballoc_claim(&h, SUBALLOC_EXTENT, &sb), 0);
	rc = suballoc_claim(&h, SUBALLOC_EXTENT, &sb);
	cr_assert_eq(rc, -ENOSPC);
	cr_assert_eq(free_bits(&fs, fs.global_bitmap), global_free, "every run given back");
	cr_assert_eq(journal_stop(&h, 1), 0);
	check_chains(&fs, alloc);
	check_chains(&fs, fs.global_bitmap);
	unfragment_global_bitmap(&fs, kept, nkept);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

static void
make_two_slot_volume(void)
{
	make_volume_of("128M", 512, "-N 2");
}

/*
 * Without discontig-bg, slot 0's extent_alloc full and the free space in
 * holes smaller than a group: the next blocks come from slot 1's
 * extent_alloc (grown beforehand) and say so, slot 1 serves first even
 * once ours has a free bit again, and everything freed goes back where
 * it came from; fsck.ocfs2 -fn clean.
 */
Test(fsd_alloc, steals_from_another_slot_when_ours_cannot_grow, .init = make_two_slot_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	enum { STOLEN = 40 };
	static uint32_t kept[2 * 32768];
	static struct fsd_subbit sb[4096];
	struct fsd_subbit theirs;
	struct fsd fs;
	struct fsd_handle h;
	uint64_t ours, other;
	uint32_t other_free;
	unsigned nkept, n, k;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fs.slot, 0);
	ours = fs.slots[0].extent_alloc;
	other = fs.slots[1].extent_alloc;
	/* slot 1's allocator gets a group, as its node's first extent block would */
	fs.slot = 1;
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(suballoc_claim(&h, SUBALLOC_EXTENT, &theirs), 0);
	cr_assert_eq(theirs.slot, 1);
	cr_assert_eq(suballoc_free(&h, other, theirs.group, theirs.bit), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	fs.slot = 0;
	other_free = free_bits(&fs, other);
	cr_assert_gt(other_free, STOLEN);

	fragment_global_bitmap(&fs, 32, kept, &nkept);
	n = free_bits(&fs, ours);
	cr_assert_lt(n + STOLEN, 4096);
	cr_assert_eq(journal_start(&fs, &h), 0);
	for (k = 0; k < n + STOLEN; k++) {
		cr_assert_eq(suballoc_claim(&h, SUBALLOC_EXTENT, &sb[k]), 0, "block %u", k);
		cr_assert_eq(sb[k].slot, k < n ? 0 : 1, "block %u from slot %u", k, sb[k].slot);
	}
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(free_bits(&fs, ours), 0, "ours did not grow");
	cr_assert_eq(free_bits(&fs, other), other_free - STOLEN);
	cr_assert_eq(fs.steal_slot[SUBALLOC_EXTENT], 1);

	/* one of ours freed: while stealing, slot 1 still serves first */
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(suballoc_free(&h, ours, sb[0].group, sb[0].bit), 0);
	cr_assert_eq(suballoc_claim(&h, SUBALLOC_EXTENT, &sb[0]), 0);
	cr_assert_eq(sb[0].slot, 1);
	cr_assert_eq(journal_stop(&h, 0), 0);

	/* every block back to the allocator it came from */
	cr_assert_eq(journal_start(&fs, &h), 0);
	for (k = 0; k < n + STOLEN; k++)
		cr_assert_eq(suballoc_free(&h, sb[k].slot ? other : ours, sb[k].group, sb[k].bit), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(free_bits(&fs, other), other_free);
	cr_assert_eq(free_bits(&fs, ours), n);
	check_chains(&fs, ours);
	check_chains(&fs, other);
	unfragment_global_bitmap(&fs, kept, nkept);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
