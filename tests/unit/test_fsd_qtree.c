/*
 * The quota tree's arithmetic (fsd/qtree.c): how deep a global quota
 * file's tree is for each block size, which reference each level follows
 * for an id (the references, read as digits, spell the id back), and how
 * ids are found in, and given room in, a leaf block.
 */
#include <criterion/criterion.h>

#include "fsd/fsd.h"

Test(fsd_qtree, geometry_of_each_block_size)
{
	/* (bs - 8) / 4 references; enough levels to reach 2^32 ids */
	cr_assert_eq(qtree_refs_per_block(4096), 1022);
	cr_assert_eq(qtree_depth(4096), 4);
	cr_assert_eq(qtree_refs_per_block(512), 126);
	cr_assert_eq(qtree_depth(512), 5);
	/* 254^4 ids fall just short of 2^32: one level more */
	cr_assert_eq(qtree_depth(1024), 5);
	cr_assert_eq(qtree_depth(2048), 4);
	/* (bs - 8 reserved - 16 header) / 88-byte entries */
	cr_assert_eq(qtree_entries_per_leaf(4096), 46);
	cr_assert_eq(qtree_entries_per_leaf(512), 5);
	cr_assert_eq(sizeof(struct ocfs2_global_disk_dqblk), 88);
}

/* The indexes from the root down are id's digits in base refs_per_block. */
static void
check_digits(unsigned bs, uint32_t id)
{
	unsigned long long epb = qtree_refs_per_block(bs), back = 0;
	int d;

	for (d = 0; d < qtree_depth(bs); d++) {
		unsigned idx = qtree_index(bs, id, d);

		cr_assert_lt(idx, epb, "index %u at depth %d for id %u", idx, d, id);
		back = back * epb + idx;
	}
	cr_assert_eq(back, id, "bs %u: id %u spelled back as %llu", bs, id, back);
}

Test(fsd_qtree, indexes_spell_the_id)
{
	static const unsigned sizes[] = { 512, 1024, 2048, 4096 };
	static const uint32_t ids[] = { 0, 1, 1000, 1021, 1022, 1023, 65534, 65535, 1044484,
		123456789, 0x7fffffff, 0xfffffffe, 0xffffffff };
	size_t i, j;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(ids) / sizeof(ids[0]); j++)
			check_digits(sizes[i], ids[j]);
	/* ids below one block's reach share the path down to the last level */
	cr_assert_eq(qtree_index(4096, 1000, 0), 0);
	cr_assert_eq(qtree_index(4096, 1000, 2), 0);
	cr_assert_eq(qtree_index(4096, 1000, 3), 1000);
	cr_assert_eq(qtree_index(4096, 1022, 2), 1);
	cr_assert_eq(qtree_index(4096, 1022, 3), 0);
}

Test(fsd_qtree, leaf_find_and_free_slots)
{
	uint8_t leaf[4096] = { 0 };
	struct ocfs2_global_disk_dqblk *e;
	unsigned i;

	cr_assert_eq(qtree_leaf_find(leaf, 4096, 0), -1, "an empty leaf has no id 0");
	cr_assert_eq(qtree_leaf_free_slot(leaf, 4096), 0);
	for (i = 0; i < 46; i++) {
		e = qtree_leaf_entry(leaf, i);
		e->dqb_id = htole32(2000 + i);
	}
	cr_assert_eq(qtree_leaf_free_slot(leaf, 4096), -1, "46 entries fill a 4 KiB leaf");
	cr_assert_eq(qtree_leaf_find(leaf, 4096, 2045), 45);
	cr_assert_eq(qtree_leaf_find(leaf, 4096, 2046), -1);
	/* the entries stop before the block's 8 reserved bytes */
	cr_assert_leq((uint8_t *)(qtree_leaf_entry(leaf, 45) + 1) - leaf,
	    4096 - OCFS2_QBLK_RESERVED_SPACE);
	memset(qtree_leaf_entry(leaf, 7), 0, sizeof(*e));
	cr_assert_eq(qtree_leaf_free_slot(leaf, 4096), 7);
	cr_assert_eq(qtree_leaf_find(leaf, 4096, 2007), -1);
}

Test(fsd_qtree, empty_id_0_stays_in_use)
{
	struct ocfs2_global_disk_dqblk e;

	memset(&e, 0, sizeof(e));
	cr_assert(qtree_entry_unused(&e));
	qtree_entry_keep_used(&e);
	cr_assert_not(qtree_entry_unused(&e), "id 0 with nothing counted is still an entry");
	cr_assert_eq(LE64(e.dqb_itime), 1);
	/* an entry with anything in it is left as it is */
	memset(&e, 0, sizeof(e));
	e.dqb_curinodes = htole64(3);
	qtree_entry_keep_used(&e);
	cr_assert_eq(e.dqb_itime, 0);
}
