/*
 * The arithmetic of the quota tree that a global quota file holds (the
 * kernel's generic v2 tree, fs/quota/quota_tree.c, with OCFS2's entries and
 * 8 bytes kept at each block's end, fs/ocfs2/quota_global.c): which child
 * a tree block's reference names for an id, and where an id's entry is in
 * a leaf. Pure, so that tests/unit/test_fsd_qtree.c checks it alone.
 */
#include <string.h>

#include "fsd.h"

unsigned
qtree_refs_per_block(unsigned bs)
{
	return (bs - OCFS2_QBLK_RESERVED_SPACE) / sizeof(uint32_t);
}

/* Levels of tree blocks above the leaves: enough for every 32-bit id. */
int
qtree_depth(unsigned bs)
{
	unsigned long long reach = qtree_refs_per_block(bs);
	int depth = 1;

	while (reach < (1ULL << 32)) {
		reach *= qtree_refs_per_block(bs);
		depth++;
	}
	return depth;
}

unsigned
qtree_index(unsigned bs, uint32_t id, int depth)
{
	unsigned epb = qtree_refs_per_block(bs);
	int below = qtree_depth(bs) - depth - 1;

	while (below-- > 0)
		id /= epb;
	return id % epb;
}

unsigned
qtree_entries_per_leaf(unsigned bs)
{
	return (bs - OCFS2_QBLK_RESERVED_SPACE - sizeof(struct qt_disk_dqdbheader)) /
	    sizeof(struct ocfs2_global_disk_dqblk);
}

struct ocfs2_global_disk_dqblk *
qtree_leaf_entry(uint8_t *leaf, unsigned i)
{
	return (struct ocfs2_global_disk_dqblk *)(leaf + sizeof(struct qt_disk_dqdbheader)) + i;
}

int
qtree_entry_unused(const struct ocfs2_global_disk_dqblk *e)
{
	static const struct ocfs2_global_disk_dqblk zero;

	return memcmp(e, &zero, sizeof(zero)) == 0;
}

int
qtree_leaf_find(uint8_t *leaf, unsigned bs, uint32_t id)
{
	unsigned i, n = qtree_entries_per_leaf(bs);
	struct ocfs2_global_disk_dqblk *e;

	for (i = 0; i < n; i++) {
		e = qtree_leaf_entry(leaf, i);
		if (!qtree_entry_unused(e) && LE32(e->dqb_id) == id)
			return (int)i;
	}
	return -1;
}

int
qtree_leaf_free_slot(uint8_t *leaf, unsigned bs)
{
	unsigned i, n = qtree_entries_per_leaf(bs);

	for (i = 0; i < n; i++)
		if (qtree_entry_unused(qtree_leaf_entry(leaf, i)))
			return (int)i;
	return -1;
}

/*
 * Id 0 with no usage, no limits and no grace running is all zeros, which
 * reads as a free entry: the generic quota format keeps it in use with an
 * inode grace time of 1 (v2r1_mem2diskdqblk), which means nothing while
 * the inode soft limit is 0.
 */
void
qtree_entry_keep_used(struct ocfs2_global_disk_dqblk *e)
{
	if (qtree_entry_unused(e))
		e->dqb_itime = htole64(1);
}
