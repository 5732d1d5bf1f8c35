/*
 * Allocators (doc/ondisk.md, Allocators): the global bitmap of clusters,
 * the slot's chain suballocators for inodes and extent blocks (grown a
 * group at a time from the global bitmap), and the truncate log that
 * holds freed clusters until the transaction that freed them is on disk.
 *
 * Every change runs inside the caller's handle and updates, together,
 * the group bitmap and free count, the chain record and the allocator
 * inode's totals, as fsck's pass 0 checks them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

static int
bit_test(const uint8_t *map, unsigned bit)
{
	return (map[bit >> 3] >> (bit & 7)) & 1;
}

static void
bit_set(uint8_t *map, unsigned bit, int on)
{
	if (on)
		map[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	else
		map[bit >> 3] &= (uint8_t)~(1u << (bit & 7));
}

/* A group of allocator alloc, checked to belong where it claims. */
static int
group_read(struct fsd *fs, uint64_t blkno, uint64_t alloc, struct fsd_buf **bp)
{
	const struct ocfs2_group_desc *gd;
	char why[128];
	int rc;

	if ((rc = block_read_owned(fs, blkno, BLK_GROUP, alloc, bp)) != 0)
		return rc;
	gd = (const struct ocfs2_group_desc *)(*bp)->data;
	if (LE64(gd->bg_parent_dinode) != alloc) {
		snprintf(why, sizeof(why), "group belongs to inode %llu, not %llu",
		    (unsigned long long)LE64(gd->bg_parent_dinode), (unsigned long long)alloc);
		fsd_corrupt(fs, blkno, why);
		block_put(fs, *bp);
		return -EIO;
	}
	return 0;
}

/*
 * Find in a group's bitmap the first run of at least min clear bits at or
 * after from, taking up to want. 0 with the run in start and len, or -1.
 */
static int
find_run(const struct ocfs2_group_desc *gd, unsigned from, unsigned min, unsigned want,
    unsigned *start, unsigned *len, unsigned *longest)
{
	unsigned bits = LE16(gd->bg_bits), b, n;

	for (b = from; b < bits; b++) {
		if (bit_test(gd->bg_bitmap, b))
			continue;
		for (n = 0; b + n < bits && n < want && !bit_test(gd->bg_bitmap, b + n); n++)
			;
		if (n >= min) {
			*start = b;
			*len = n;
			return 0;
		}
		if (longest != NULL && n > *longest)
			*longest = n;
		b += n;
	}
	return -1;
}

/* Set or clear bits [start, start+n) of a group and every count above it. */
static int
group_change(struct fsd_handle *h, struct fsd_buf *ab, struct fsd_buf *gb, unsigned start,
    unsigned n, int set)
{
	struct ocfs2_dinode *adi = (struct ocfs2_dinode *)ab->data;
	struct ocfs2_group_desc *gd = (struct ocfs2_group_desc *)gb->data;
	struct ocfs2_chain_list *cl = &adi->id2.i_chain;
	unsigned chain = LE16(gd->bg_chain), i;
	int rc;

	if (chain >= LE16(cl->cl_next_free_rec) || start + n > LE16(gd->bg_bits)) {
		fsd_corrupt(h->fs, gb->blkno, "group's chain or bit range is impossible");
		return -EIO;
	}
	for (i = start; i < start + n; i++) {
		if (bit_test(gd->bg_bitmap, i) == set) {
			fsd_corrupt(h->fs, gb->blkno, set ? "allocating a bit already in use" :
			    "freeing a bit already free");
			return -EIO;
		}
	}
	if ((rc = journal_access(h, ab)) != 0 || (rc = journal_access(h, gb)) != 0)
		return rc;
	for (i = start; i < start + n; i++)
		bit_set(gd->bg_bitmap, i, set);
	if (set) {
		gd->bg_free_bits_count = htole16(LE16(gd->bg_free_bits_count) - n);
		cl->cl_recs[chain].c_free = htole32(LE32(cl->cl_recs[chain].c_free) - n);
		adi->id1.bitmap1.i_used = htole32(LE32(adi->id1.bitmap1.i_used) + n);
	} else {
		gd->bg_free_bits_count = htole16(LE16(gd->bg_free_bits_count) + n);
		cl->cl_recs[chain].c_free = htole32(LE32(cl->cl_recs[chain].c_free) + n);
		adi->id1.bitmap1.i_used = htole32(LE32(adi->id1.bitmap1.i_used) - n);
	}
	journal_dirty(h, ab);
	journal_dirty(h, gb);
	return 0;
}

/* ---- the global bitmap -------------------------------------------------- */

static unsigned
cluster_cpg(struct fsd *fs, const struct ocfs2_dinode *bm)
{
	(void)fs;
	return LE16(bm->id2.i_chain.cl_cpg);
}

/* Group i of the global bitmap sits at a fixed place (doc/ondisk.md,
 * The global bitmap). */
static uint64_t
cluster_group_blkno(struct fsd *fs, unsigned cpg, unsigned i)
{
	return i == 0 ? fs->first_cluster_group : ((uint64_t)i * cpg) << (fs->cbits - fs->bbits);
}

/*
 * alloc_clusters, and on ENOSPC in *longest (when not NULL) a bound no
 * free run is longer than, so that a caller ready to take less knows
 * what is worth asking for.
 */
static int
claim_clusters(struct fsd_handle *h, uint32_t goal, unsigned min, unsigned want,
    uint32_t *startp, unsigned *got, unsigned *longest)
{
	struct fsd *fs = h->fs;
	const struct ocfs2_group_desc *gd;
	struct fsd_buf *ab, *gb;
	unsigned cpg, ngroups, g, k, from, start, len;
	int rc;

	if ((rc = handle_lock_alloc(h, fs->gb_lock)) != 0 ||
	    (rc = block_read(fs, fs->global_bitmap, BLK_INODE, &ab)) != 0)
		return rc;
	cpg = cluster_cpg(fs, (const struct ocfs2_dinode *)ab->data);
	if (cpg == 0 || goal >= fs->clusters)
		goal = 0;
	ngroups = (unsigned)(((uint64_t)fs->clusters + cpg - 1) / cpg);	/* 2^32 - 1 clusters at most */
	/* From the goal's group on, wrapping round, the goal's bit first. */
	for (k = 0; k <= ngroups; k++) {
		g = (goal / cpg + k) % ngroups;
		from = k == 0 ? goal % cpg : 0;
		if ((rc = group_read(fs, cluster_group_blkno(fs, cpg, g), fs->global_bitmap, &gb)) != 0)
			goto out;
		gd = (const struct ocfs2_group_desc *)gb->data;
		/* a group not searched has no run longer than its free bits */
		if (LE16(gd->bg_free_bits_count) < min && longest != NULL &&
		    LE16(gd->bg_free_bits_count) > *longest)
			*longest = LE16(gd->bg_free_bits_count);
		if (LE16(gd->bg_free_bits_count) >= min &&
		    find_run(gd, from, min, want, &start, &len, longest) == 0) {
			rc = group_change(h, ab, gb, start, len, 1);
			block_put(fs, gb);
			if (rc == 0) {
				*startp = g * cpg + start;
				*got = len;
			}
			goto out;
		}
		block_put(fs, gb);
	}
	rc = -ENOSPC;
out:
	block_put(fs, ab);
	return rc;
}

int
alloc_clusters(struct fsd_handle *h, uint32_t goal, unsigned min, unsigned want,
    uint32_t *startp, unsigned *got)
{
	return claim_clusters(h, goal, min, want, startp, got, NULL);
}

int
free_clusters(struct fsd_handle *h, uint32_t start, unsigned count)
{
	struct fsd *fs = h->fs;
	struct fsd_buf *ab, *gb;
	unsigned cpg, g, n;
	int rc = 0;

	if ((rc = handle_lock_alloc(h, fs->gb_lock)) != 0 ||
	    (rc = block_read(fs, fs->global_bitmap, BLK_INODE, &ab)) != 0)
		return rc;
	cpg = cluster_cpg(fs, (const struct ocfs2_dinode *)ab->data);
	if (cpg == 0 || (uint64_t)start + count > fs->clusters) {
		block_put(fs, ab);
		return -EIO;
	}
	while (count > 0 && rc == 0) {
		g = start / cpg;
		n = cpg - start % cpg;
		if (n > count)
			n = count;
		if ((rc = group_read(fs, cluster_group_blkno(fs, cpg, g), fs->global_bitmap, &gb)) != 0)
			break;
		rc = group_change(h, ab, gb, start % cpg, n, 0);
		block_put(fs, gb);
		start += n;
		count -= n;
	}
	block_put(fs, ab);
	return rc;
}

/* ---- suballocators ------------------------------------------------------ */

/*
 * A group made of several extents (doc/discontig-bg.md): its bitmap stops
 * where bg_list starts, and bg_list has records.
 */
static int
group_is_discontig(const struct ocfs2_group_desc *gd)
{
	return offsetof(struct ocfs2_group_desc, bg_bitmap) + LE16(gd->bg_size) ==
	    offsetof(struct ocfs2_group_desc, bg_list) && LE16(gd->bg_list.l_next_free_rec) != 0;
}

/* The block that bit stands for in a suballocator group of bpc bits per cluster. */
static int
group_bit_block(struct fsd *fs, uint64_t gblkno, const struct ocfs2_group_desc *gd, unsigned bpc,
    unsigned bit, uint64_t *blkno)
{
	const struct ocfs2_extent_rec *r;
	unsigned i, first, n;

	if (!group_is_discontig(gd)) {
		*blkno = gblkno + bit;
		return 0;
	}
	for (i = 0; i < LE16(gd->bg_list.l_next_free_rec); i++) {
		r = &gd->bg_list.l_recs[i];
		first = LE32(r->e_cpos) * bpc;
		n = LE16(r->e_leaf_clusters) * bpc;
		if (bit >= first && bit < first + n) {
			*blkno = LE64(r->e_blkno) + (bit - first);
			return 0;
		}
	}
	fsd_corrupt(fs, gblkno, "no extent of the discontiguous group holds the bit");
	return -EIO;
}

/*
 * A group of a suballocator of bpc bits per cluster. A discontiguous
 * one's extent list must be flat, start with the descriptor's run, have
 * each run follow the one before in the group and inside the volume,
 * and cover bg_bits exactly: then every bit maps to one block.
 */
static int
subgroup_read(struct fsd *fs, uint64_t blkno, uint64_t alloc, unsigned bpc, struct fsd_buf **bp)
{
	const struct ocfs2_group_desc *gd;
	const struct ocfs2_extent_list *el;
	const struct ocfs2_extent_rec *r;
	unsigned i, cshift = fs->cbits - fs->bbits;
	uint32_t cpos = 0;
	int rc, bad;

	if ((rc = group_read(fs, blkno, alloc, bp)) != 0)
		return rc;
	gd = (const struct ocfs2_group_desc *)(*bp)->data;
	if (!group_is_discontig(gd))
		return 0;
	el = &gd->bg_list;
	bad = !(fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG) ||
	    LE16(el->l_tree_depth) != 0 ||
	    LE16(el->l_count) > ocfs2_extent_recs_per_gd(fs->vol.block_bytes) ||
	    LE16(el->l_next_free_rec) > LE16(el->l_count) ||
	    LE64(el->l_recs[0].e_blkno) != blkno;
	for (i = 0; !bad && i < LE16(el->l_next_free_rec); i++) {
		r = &el->l_recs[i];
		bad = LE32(r->e_cpos) != cpos || LE16(r->e_leaf_clusters) == 0 ||
		    (LE64(r->e_blkno) & ((1u << cshift) - 1)) != 0 ||
		    (LE64(r->e_blkno) >> cshift) + LE16(r->e_leaf_clusters) > fs->clusters;
		cpos += LE16(r->e_leaf_clusters);
	}
	if (bad || cpos * bpc != LE16(gd->bg_bits)) {
		fsd_corrupt(fs, blkno, "discontiguous group with an impossible extent list");
		block_put(fs, *bp);
		return -EIO;
	}
	return 0;
}

/* Clusters [start, start+clusters) become the group's next bits. */
static void
group_add_extent(struct ocfs2_group_desc *gd, unsigned bpc, unsigned cshift, uint32_t start,
    unsigned clusters, unsigned block_bytes)
{
	struct ocfs2_extent_list *el = &gd->bg_list;
	struct ocfs2_extent_rec *r;

	if (LE16(el->l_next_free_rec) == 0)
		el->l_count = htole16(ocfs2_extent_recs_per_gd(block_bytes));
	r = &el->l_recs[LE16(el->l_next_free_rec)];
	r->e_cpos = htole32(LE16(gd->bg_bits) / bpc);
	r->e_leaf_clusters = htole16(clusters);
	r->e_blkno = htole64((uint64_t)start << cshift);
	gd->bg_bits = htole16(LE16(gd->bg_bits) + clusters * bpc);
	el->l_next_free_rec = htole16(LE16(el->l_next_free_rec) + 1);
}

/*
 * As ocfs2_block_group_claim_bits: a run of at least min clusters (up to
 * want), halving min each time none is free, down to one cluster. The
 * halvings a failed search shows to be hopeless are skipped: one search
 * of a big volume reads every group.
 */
static int
claim_region(struct fsd_handle *h, unsigned min, unsigned want, uint32_t *start, unsigned *got)
{
	unsigned longest;
	int rc;

	for (;;) {
		longest = 0;
		rc = claim_clusters(h, 0, min, want, start, got, &longest);
		if (rc != -ENOSPC || min <= 1 || longest == 0)
			return rc;
		for (min >>= 1; min > longest; min >>= 1)
			;
	}
}

/* A new descriptor at blkno for a group of ab's chain, formatted with no bits yet. */
static int
group_format(struct fsd_handle *h, struct fsd_buf *ab, uint64_t blkno, unsigned chain,
    struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	const struct ocfs2_chain_list *cl = &((const struct ocfs2_dinode *)ab->data)->id2.i_chain;
	struct ocfs2_group_desc *gd;
	int rc;

	if ((rc = block_new_owned(fs, blkno, BLK_GROUP, ab->blkno, bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	gd = (struct ocfs2_group_desc *)(*bp)->data;
	memcpy(gd->bg_signature, OCFS2_GROUP_DESC_SIGNATURE, sizeof(OCFS2_GROUP_DESC_SIGNATURE));
	gd->bg_size = htole16(ocfs2_group_bitmap_size(fs->vol.block_bytes, 1, fs->vol.incompat));
	gd->bg_chain = htole16(chain);
	gd->bg_generation = htole32(fs->fs_generation);
	gd->bg_next_group = cl->cl_recs[chain].c_blkno;
	gd->bg_parent_dinode = htole64(ab->blkno);
	gd->bg_blkno = htole64(blkno);
	return 0;
}

/*
 * The discontiguous group (as ocfs2_block_group_alloc_discontig): a first
 * run of at least half a group, or less as none is free, holds the
 * descriptor; more runs, each at least as long as the one before when
 * possible, until the group has cl_cpg clusters or its extent list is
 * full (then ENOSPC, the runs given back).
 */
static int
group_new_discontig(struct fsd_handle *h, struct fsd_buf *ab, unsigned chain, struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	const struct ocfs2_chain_list *cl = &((const struct ocfs2_dinode *)ab->data)->id2.i_chain;
	unsigned cpg = LE16(cl->cl_cpg), bpc = LE16(cl->cl_bpc), min = cpg / 2, got, needed, i;
	struct ocfs2_group_desc *gd;
	const struct ocfs2_extent_rec *r;
	uint32_t start;
	int rc, frc;

	if ((rc = claim_region(h, min, cpg, &start, &got)) != 0)
		return rc;
	if ((rc = group_format(h, ab, (uint64_t)start << (fs->cbits - fs->bbits), chain, bp)) != 0) {
		frc = free_clusters(h, start, got);
		return frc != 0 ? frc : rc;
	}
	gd = (struct ocfs2_group_desc *)(*bp)->data;
	group_add_extent(gd, bpc, fs->cbits - fs->bbits, start, got, fs->vol.block_bytes);
	for (min = got; (needed = cpg - LE16(gd->bg_bits) / bpc) > 0; min = got) {
		if (LE16(gd->bg_list.l_next_free_rec) >= LE16(gd->bg_list.l_count)) {
			rc = -ENOSPC;
			break;
		}
		if ((rc = claim_region(h, min < needed ? min : needed, needed, &start, &got)) != 0)
			break;
		group_add_extent(gd, bpc, fs->cbits - fs->bbits, start, got, fs->vol.block_bytes);
	}
	if (rc == 0)
		return 0;
	for (i = 0; i < LE16(gd->bg_list.l_next_free_rec); i++) {
		r = &gd->bg_list.l_recs[i];
		frc = free_clusters(h, (uint32_t)(LE64(r->e_blkno) >> (fs->cbits - fs->bbits)),
		    LE16(r->e_leaf_clusters));
		if (frc != 0 && rc == -ENOSPC)
			rc = frc;
	}
	block_put(fs, *bp);
	return rc;
}

/*
 * Add a group of cl_cpg clusters to a suballocator (doc/ondisk.md, Growing
 * a suballocator), linked at the head of a chain: the next unused chain
 * record, else the smallest chain. One contiguous run when the global
 * bitmap has one, else, with discontig-bg, a group of several runs.
 */
static int
suballoc_grow(struct fsd_handle *h, struct fsd_buf *ab)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *adi = (struct ocfs2_dinode *)ab->data;
	struct ocfs2_chain_list *cl = &adi->id2.i_chain;
	struct ocfs2_group_desc *gd;
	struct fsd_buf *gb;
	unsigned cpg = LE16(cl->cl_cpg), bpc = LE16(cl->cl_bpc), bits, chain, i, got;
	uint32_t start;
	int rc;

	bits = cpg * bpc;
	if (bits == 0 || bits > 8u * ocfs2_group_bitmap_size(fs->vol.block_bytes, 1, fs->vol.incompat)) {
		fsd_corrupt(fs, ab->blkno, "suballocator geometry is impossible");
		return -EIO;
	}
	if (LE16(cl->cl_next_free_rec) < LE16(cl->cl_count))
		chain = LE16(cl->cl_next_free_rec);
	else {
		for (chain = 0, i = 1; i < LE16(cl->cl_count); i++)
			if (LE32(cl->cl_recs[i].c_total) < LE32(cl->cl_recs[chain].c_total))
				chain = i;
	}
	rc = alloc_clusters(h, 0, cpg, cpg, &start, &got);
	if (rc == 0) {
		if ((rc = group_format(h, ab, (uint64_t)start << (fs->cbits - fs->bbits), chain,
		    &gb)) != 0)
			return rc;
		((struct ocfs2_group_desc *)gb->data)->bg_bits = htole16(bits);
	} else if (rc == -ENOSPC && (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG)) {
		if ((rc = group_new_discontig(h, ab, chain, &gb)) != 0)
			return rc;
	} else
		return rc;
	if ((rc = journal_access(h, ab)) != 0) {
		block_put(fs, gb);
		return rc;
	}
	gd = (struct ocfs2_group_desc *)gb->data;
	bit_set(gd->bg_bitmap, 0, 1);	/* the descriptor itself */
	gd->bg_free_bits_count = htole16(bits - 1);
	if (chain == LE16(cl->cl_next_free_rec))
		cl->cl_next_free_rec = htole16(chain + 1);
	cl->cl_recs[chain].c_blkno = gd->bg_blkno;
	cl->cl_recs[chain].c_total = htole32(LE32(cl->cl_recs[chain].c_total) + bits);
	cl->cl_recs[chain].c_free = htole32(LE32(cl->cl_recs[chain].c_free) + bits - 1);
	adi->id1.bitmap1.i_total = htole32(LE32(adi->id1.bitmap1.i_total) + bits);
	adi->id1.bitmap1.i_used = htole32(LE32(adi->id1.bitmap1.i_used) + 1);
	adi->i_clusters = htole32(LE32(adi->i_clusters) + cpg);
	adi->i_size = htole64((uint64_t)LE32(adi->i_clusters) << fs->cbits);
	journal_dirty(h, gb);
	journal_dirty(h, ab);
	log_debug("suballocator %llu: new %s group at block %llu, chain %u",
	    (unsigned long long)ab->blkno, group_is_discontig(gd) ? "discontiguous" : "contiguous",
	    (unsigned long long)LE64(gd->bg_blkno), chain);
	block_put(fs, gb);
	return 0;
}

/*
 * After this many blocks taken from another slot's allocator, ours is
 * tried first again (OCFS2_MAX_TO_STEAL in fs/ocfs2/suballoc.c).
 */
#define MAX_TO_STEAL	1024

static uint64_t
slot_allocator(struct fsd *fs, enum suballoc_kind kind, int slot)
{
	return kind == SUBALLOC_INODE ? fs->slots[slot].inode_alloc : fs->slots[slot].extent_alloc;
}

/*
 * A bit of slot's allocator of kind, which grows by a group when full if
 * grow is set. Its lock only if it comes at once (doc/allocation.md): a
 * handle must not wait for another slot's allocator, which a handle of
 * its owner or a dead owner's recovery holds, nor for ours, which a
 * handle stealing from us holds. -EAGAIN when busy (noted for fsd_reclaim).
 */
static int
claim_bit(struct fsd_handle *h, enum suballoc_kind kind, int slot, int grow, struct fsd_subbit *r)
{
	struct fsd *fs = h->fs;
	uint64_t alloc = slot_allocator(fs, kind, slot), g;
	const struct ocfs2_chain_list *cl;
	const struct ocfs2_group_desc *gd;
	struct fsd_lockres *lr;
	struct fsd_buf *ab, *gb;
	unsigned i, start, len, tries;
	int rc;

	handle_serialize(h);
	lr = sysinode_lockres(fs, alloc);
	if ((rc = handle_lock_or_restart(h, lr, LKF_TRY)) != 0) {
		lockres_put(fs, lr);
		return rc == -ENOSPC ? -EAGAIN : rc;
	}
	if ((rc = block_read(fs, alloc, BLK_INODE, &ab)) != 0)
		return rc;
	if (!(LE32(((const struct ocfs2_dinode *)ab->data)->i_flags) & OCFS2_CHAIN_FL)) {
		fsd_corrupt(fs, alloc, "allocator inode without a chain list");
		block_put(fs, ab);
		return -EIO;
	}
	for (tries = 0; tries < 2; tries++) {
		cl = &((const struct ocfs2_dinode *)ab->data)->id2.i_chain;
		for (i = 0; i < LE16(cl->cl_next_free_rec); i++) {
			if (LE32(cl->cl_recs[i].c_free) == 0)
				continue;
			for (g = LE64(cl->cl_recs[i].c_blkno); g != 0; ) {
				if ((rc = subgroup_read(fs, g, alloc, LE16(cl->cl_bpc), &gb)) != 0)
					goto out;
				gd = (const struct ocfs2_group_desc *)gb->data;
				if (LE16(gd->bg_free_bits_count) > 0 &&
				    find_run(gd, 1, 1, 1, &start, &len, NULL) == 0) {
					/* one block per bit, found through bg_list if discontiguous */
					rc = group_bit_block(fs, gb->blkno, gd, LE16(cl->cl_bpc), start,
					    &r->blkno);
					if (rc == 0)
						rc = group_change(h, ab, gb, start, 1, 1);
					if (rc == 0) {
						r->group = gb->blkno;
						r->bit = (uint16_t)start;
						r->slot = (uint16_t)slot;
					}
					block_put(fs, gb);
					goto out;
				}
				g = LE64(gd->bg_next_group);
				block_put(fs, gb);
			}
		}
		/* Full: one more group from the global bitmap, then retry. */
		if (!grow || (rc = suballoc_grow(h, ab)) != 0)
			break;
	}
	if (rc == 0)
		rc = -ENOSPC;
out:
	block_put(fs, ab);
	return rc;
}

/* The slot to steal from first: the one that served last, while it may. */
static int
steal_from(struct fsd *fs, enum suballoc_kind kind)
{
	int slot;

	pthread_mutex_lock(&fs->steal_mtx);
	if (fs->steal_slot[kind] >= 0 && fs->stolen[kind] >= MAX_TO_STEAL)
		fs->steal_slot[kind] = -1;
	slot = fs->steal_slot[kind];
	pthread_mutex_unlock(&fs->steal_mtx);
	return slot;
}

/* A block came from slot's allocator (-1: ours, which stops the stealing). */
static void
steal_note(struct fsd *fs, enum suballoc_kind kind, int slot)
{
	pthread_mutex_lock(&fs->steal_mtx);
	if (fs->steal_slot[kind] != slot) {
		if (slot >= 0)
			log_info("slot %d's %s allocator is full: taking from slot %d's", fs->slot,
			    kind == SUBALLOC_INODE ? "inode" : "extent block", slot);
		fs->steal_slot[kind] = slot;
		fs->stolen[kind] = 0;
	}
	if (slot >= 0)
		fs->stolen[kind]++;
	pthread_mutex_unlock(&fs->steal_mtx);
}

/*
 * As ocfs2_reserve_new_inode / ocfs2_reserve_new_metadata_blocks: our
 * slot's allocator, grown if full (a new group needs cl_cpg free
 * clusters in one run, or discontig-bg); else the other slots' in turn,
 * from the one that served last, never grown. Once a steal has served,
 * the next allocations steal at once (up to MAX_TO_STEAL), ours last.
 */
int
suballoc_claim(struct fsd_handle *h, enum suballoc_kind kind, struct fsd_subbit *r)
{
	struct fsd *fs = h->fs;
	int from, stealing, slot, i, rc;

	if (!(stealing = (from = steal_from(fs, kind)) >= 0)) {
		if ((rc = claim_bit(h, kind, fs->slot, 1, r)) != -ENOSPC)
			return rc == -EAGAIN ? -ENOSPC : rc;
		from = fs->slot + 1;
	}
	for (i = 0; i < (int)fs->vol.max_slots; i++) {
		slot = (from + i) % (int)fs->vol.max_slots;
		if (slot == fs->slot)
			continue;
		rc = claim_bit(h, kind, slot, 0, r);
		if (rc == 0) {
			steal_note(fs, kind, slot);
			return 0;
		}
		if (rc != -ENOSPC && rc != -EAGAIN)
			return rc;
	}
	/* stealing since a while, and nothing left elsewhere: ours may have room again */
	if (stealing) {
		if ((rc = claim_bit(h, kind, fs->slot, 1, r)) == 0)
			steal_note(fs, kind, -1);
		if (rc != -EAGAIN)
			return rc;
	}
	return -ENOSPC;
}

int
suballoc_free(struct fsd_handle *h, uint64_t alloc, uint64_t group, uint16_t bit)
{
	struct fsd_buf *ab, *gb;
	unsigned bpc;
	int rc;

	if ((rc = handle_lock_sysinode(h, alloc)) != 0 ||
	    (rc = block_read(h->fs, alloc, BLK_INODE, &ab)) != 0)
		return rc;
	bpc = LE16(((const struct ocfs2_dinode *)ab->data)->id2.i_chain.cl_bpc);
	if ((rc = subgroup_read(h->fs, group, alloc, bpc, &gb)) == 0) {
		rc = group_change(h, ab, gb, bit, 1, 0);
		block_put(h->fs, gb);
	}
	block_put(h->fs, ab);
	return rc;
}

/* ---- the truncate log --------------------------------------------------- */

int
tl_room(struct fsd *fs)
{
	const struct ocfs2_truncate_log *tl;
	struct fsd_buf *b;
	int room;

	if (block_read(fs, fs->slots[fs->slot].truncate_log, BLK_INODE, &b) != 0)
		return 0;
	tl = &((const struct ocfs2_dinode *)b->data)->id2.i_dealloc;
	room = LE16(tl->tl_count) - LE16(tl->tl_used);
	block_put(fs, b);
	return room;
}

int
tl_append(struct fsd_handle *h, uint32_t start, unsigned count)
{
	struct fsd *fs = h->fs;
	struct ocfs2_truncate_log *tl;
	struct ocfs2_truncate_rec *r;
	struct fsd_buf *b;
	unsigned used;
	int rc;

	handle_serialize(h);
	if ((rc = block_read(fs, fs->slots[fs->slot].truncate_log, BLK_INODE, &b)) != 0)
		return rc;
	tl = &((struct ocfs2_dinode *)b->data)->id2.i_dealloc;
	used = LE16(tl->tl_used);
	if ((rc = journal_access(h, b)) != 0)
		goto out;
	r = used ? &tl->tl_recs[used - 1] : NULL;
	/* As the kernel: extend the last record when the runs touch. */
	if (r != NULL && LE32(r->t_start) + LE32(r->t_clusters) == start)
		r->t_clusters = htole32(LE32(r->t_clusters) + count);
	else if (used < LE16(tl->tl_count)) {
		tl->tl_recs[used].t_start = htole32(start);
		tl->tl_recs[used].t_clusters = htole32(count);
		tl->tl_used = htole16(used + 1);
	} else {
		rc = -EAGAIN;	/* callers flush before they start */
		goto out;
	}
	journal_dirty(h, b);
out:
	block_put(fs, b);
	return rc;
}

/*
 * Hand slot's truncate log records to take inside h, the last first (as
 * ocfs2_replay_truncate_records), clearing each one taken. Stops at the
 * first error and returns it; what was taken before stays taken.
 */
static int
tl_drain(struct fsd_handle *h, int slot, int (*take)(struct fsd_handle *, uint32_t, unsigned))
{
	struct ocfs2_truncate_log *tl;
	struct ocfs2_truncate_rec *r;
	struct fsd_buf *b;
	unsigned used;
	int rc, taken = 0;

	handle_serialize(h);
	if ((rc = block_read(h->fs, h->fs->slots[slot].truncate_log, BLK_INODE, &b)) != 0)
		return rc;
	tl = &((struct ocfs2_dinode *)b->data)->id2.i_dealloc;
	rc = journal_access(h, b);
	while (rc == 0 && (used = LE16(tl->tl_used)) > 0) {
		r = &tl->tl_recs[used - 1];
		if (LE32(r->t_start) != 0 && LE32(r->t_clusters) != 0)
			rc = take(h, LE32(r->t_start), LE32(r->t_clusters));
		if (rc == 0) {
			memset(r, 0, sizeof(*r));
			tl->tl_used = htole16(used - 1);
			taken = 1;
		}
	}
	if (taken)
		journal_dirty(h, b);
	block_put(h->fs, b);
	return rc;
}

int
tl_flush(struct fsd *fs)
{
	struct fsd_handle h;
	struct fsd_buf *b;
	unsigned used;
	int rc, stop;

	if (fs->journal == NULL || fs->slot < 0)
		return 0;
	if ((rc = block_read(fs, fs->slots[fs->slot].truncate_log, BLK_INODE, &b)) != 0)
		return rc;
	used = LE16(((const struct ocfs2_dinode *)b->data)->id2.i_dealloc.tl_used);
	block_put(fs, b);
	if (used == 0)
		return 0;
	/*
	 * The global bitmap's lock is taken in the handle only if it comes
	 * at once: after a node's death it waits for its recovery, which
	 * needs a handle of its own, and other handles take it too. Else the
	 * handle goes, we wait for the lock holding nothing, and try again.
	 */
	for (;;) {
		if ((rc = journal_start(fs, &h)) != 0)
			return rc;
		handle_serialize(&h);
		/*
		 * Freed clusters may be handed out again (and written in place
		 * as file data) only once (1) their freeing is committed and
		 * (2) no logged or pending copy of a block in them (a deleted
		 * directory's blocks) can still be checkpointed or replayed
		 * over the new data. A checkpoint gives both: everything home,
		 * the log empty. Serialized first: no handle appends to the
		 * truncate log between the checkpoint and the drain.
		 */
		if ((rc = journal_checkpoint(fs)) != 0) {
			journal_stop(&h, 1);
			return rc;
		}
		if (fs->gb_lock == NULL ||
		    (rc = lockres_lock_flags(fs, fs->gb_lock, LKM_EX, LKF_TRY)) == 0)
			break;
		journal_stop(&h, 1);
		if (rc != -EAGAIN || (rc = lockres_lock(fs, fs->gb_lock, LKM_EX)) != 0)
			return rc;
		lockres_unlock(fs, fs->gb_lock, LKM_EX);
	}
	if (fs->gb_lock != NULL)
		handle_hold(&h, fs->gb_lock);
	rc = tl_drain(&h, fs->slot, free_clusters);
	stop = journal_stop(&h, rc != 0);
	return rc ? rc : stop;
}

int
tl_adopt_slot(struct fsd *fs, int slot)
{
	struct fsd_handle h;
	int rc, stop, full;

	do {
		if ((rc = journal_start(fs, &h)) != 0)
			return rc;
		rc = tl_drain(&h, slot, tl_append);
		/* ours is full: keep what moved, flush ours, go on */
		if ((full = rc == -EAGAIN))
			rc = 0;
		stop = journal_stop(&h, rc != 0);
		if (rc == 0)
			rc = stop;
		if (rc == 0 && full)
			rc = tl_flush(fs);
	} while (rc == 0 && full);
	return rc;
}

/*
 * How long a write out of space waits for the deletion of a file this
 * node unlinked (its close and FORGET arrive from FUSE asynchronously);
 * an unlinked file that a process keeps open costs that much per ENOSPC.
 */
#define RECLAIM_WAIT_MS	1000

/*
 * How many times one operation waits for a lock its handle found busy: each
 * wait leaves the lock cached here, and the retry finds it taken again
 * only if another node wanted it in between.
 */
#define RECLAIM_BUSY_WAITS	32

int
fsd_reclaim(struct fsd *fs, struct fsd_reclaim *r)
{
	const struct ocfs2_truncate_log *tl;
	struct fsd_buf *b;
	int used, waited;

	/* no handle is open: this wait holds nothing a handle or a recovery needs */
	if (r->waits < RECLAIM_BUSY_WAITS && handle_wait_busy(fs)) {
		r->waits++;
		return 1;
	}
	if (fs->journal == NULL || fs->slot < 0 || r->flushed)
		return 0;
	r->flushed = 1;
	/* a file just unlinked may be freeing its space now, or soon */
	waited = orphan_wait_deletes(fs, RECLAIM_WAIT_MS);
	if (block_read(fs, fs->slots[fs->slot].truncate_log, BLK_INODE, &b) != 0)
		return waited;
	tl = &((const struct ocfs2_dinode *)b->data)->id2.i_dealloc;
	used = LE16(tl->tl_used);
	block_put(fs, b);
	/* As ocfs2_try_to_free_truncate_log: free what the log holds back. */
	if (used > 0 && tl_flush(fs) != 0)
		return waited;
	/* or another thread's flush did, since our allocation failed */
	return 1;
}
