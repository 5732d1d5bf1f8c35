/*
 * fsd's in-memory copy of an indexed directory's free-space list
 * (fsd/dxfree.c): a block with room is found whatever the list's length,
 * its predecessor is the one the disk's list has, blocks leave the list
 * when full and come back at its head.
 */
#include <criterion/criterion.h>

#include "fsd/fsd.h"

Test(fsd_dxfree, picks_a_block_with_room_and_its_predecessor)
{
	struct dx_free_map *m = dxfree_new(4096);
	uint64_t blk = 0, prev = 0, b;

	/* a long list of blocks keeping holes too small for a 40-byte entry */
	for (b = 100; b < 10100; b++)
		cr_assert_eq(dxfree_add(m, b, 16 + (unsigned)(b % 6) * 4, 0), 0);
	cr_assert_eq(dxfree_pick(m, 40, &blk, &prev), 0, "no block has 40 bytes");
	cr_assert_eq(dxfree_pick(m, 36, &blk, &prev), 1);
	cr_assert_eq(blk % 6, 5, "block %llu has 36 bytes", (unsigned long long)blk);
	cr_assert_eq(prev, blk - 1, "the block before it in the list");
	/* one in the middle gets room: it is found, after its list neighbour */
	dxfree_set(m, 5000, 400);
	cr_assert_eq(dxfree_pick(m, 40, &blk, &prev), 1);
	cr_assert_eq(blk, 5000);
	cr_assert_eq(prev, 4999);
	dxfree_free(m);
}

Test(fsd_dxfree, full_blocks_leave_and_come_back_at_the_head)
{
	struct dx_free_map *m = dxfree_new(4096);
	uint64_t blk = 0, prev = 0;

	cr_assert_eq(dxfree_add(m, 10, 100, 0), 0);
	cr_assert_eq(dxfree_add(m, 11, 200, 0), 0);
	cr_assert_eq(dxfree_add(m, 12, 300, 0), 0);
	cr_assert_eq(dxfree_pick(m, 250, &blk, &prev), 1);
	cr_assert(blk == 12 && prev == 11);
	/* 11 fills: 12 now follows 10 */
	dxfree_set(m, 11, 0);
	cr_assert_eq(dxfree_pick(m, 250, &blk, &prev), 1);
	cr_assert(blk == 12 && prev == 10);
	cr_assert_eq(dxfree_pick(m, 150, &blk, &prev), 1);
	cr_assert_eq(blk, 12, "the block with the most room");
	/* an unlink gives 11 room again: at the head, nothing before it */
	cr_assert_eq(dxfree_add(m, 11, 4032, 1), 0);
	cr_assert_eq(dxfree_pick(m, 4000, &blk, &prev), 1);
	cr_assert(blk == 11 && prev == 0);
	/* 10 now follows 11 */
	dxfree_set(m, 12, 0);
	dxfree_set(m, 11, 0);
	cr_assert_eq(dxfree_pick(m, 16, &blk, &prev), 1);
	cr_assert(blk == 10 && prev == 0);
	dxfree_set(m, 10, 0);
	cr_assert_eq(dxfree_pick(m, 16, &blk, &prev), 0, "the list is empty");
	dxfree_free(m);
}

Test(fsd_dxfree, refuses_what_the_list_cannot_hold)
{
	struct dx_free_map *m = dxfree_new(4096);

	cr_assert_eq(dxfree_add(m, 7, 12, 0), -1, "below the smallest entry");
	cr_assert_eq(dxfree_add(m, 7, 5000, 0), -1, "more than a block");
	cr_assert_eq(dxfree_add(m, 7, 64, 0), 0);
	cr_assert_eq(dxfree_add(m, 7, 64, 1), -1, "listed twice: a loop on disk");
	dxfree_free(m);
}
