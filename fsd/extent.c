/*
 * Extent trees (doc/ondisk.md, Extent lists and trees): the root list
 * lives in the inode (or another container), interior records point at
 * extent blocks one level down, leaf records map clusters. Lookups walk
 * one path from the root, checking at each step what the kernel and fsck
 * rely on (depth, bounds, alignment), so a damaged tree gives EIO instead
 * of a wild read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

/* The kernel's OCFS2_MAX_PATH_DEPTH: deeper trees are never built. */
#define EXTENT_MAX_DEPTH	5

/*
 * leaf_blocks: the leaf records name one metadata block each (a refcount
 * tree's leaves, ocfs2_refcount_tree_et), not clusters of data.
 */
static int
list_check(struct fsd *fs, const struct ocfs2_extent_list *el, unsigned capacity,
    int leaf_blocks, char *why, size_t whylen)
{
	unsigned depth = LE16(el->l_tree_depth), count = LE16(el->l_count);
	unsigned used = LE16(el->l_next_free_rec), i;
	uint64_t prev_end = 0, blk, len;
	const struct ocfs2_extent_rec *r;

	if (count > capacity || used > count || depth > EXTENT_MAX_DEPTH) {
		snprintf(why, whylen, "impossible extent list (depth %u, count %u of %u, used %u)",
		    depth, count, capacity, used);
		return -1;
	}
	for (i = 0; i < used; i++) {
		r = &el->l_recs[i];
		blk = LE64(r->e_blkno);
		if (depth == 0) {
			len = LE16(r->e_leaf_clusters);
			if (len == 0)
				continue;	/* an empty leftmost record */
			if (leaf_blocks) {
				if (len != 1 || blk <= OCFS2_SUPER_BLOCK_BLKNO ||
				    !block_in_volume(fs, blk, 1)) {
					snprintf(why, whylen, "refcount leaf record %u (%llu "
					    "clusters at block %llu) is not one block of the "
					    "volume", i, (unsigned long long)len,
					    (unsigned long long)blk);
					return -1;
				}
			} else if (blk % fs->bpc != 0) {
				snprintf(why, whylen, "extent %u starts at unaligned block %llu",
				    i, (unsigned long long)blk);
				return -1;
			} else if (blk <= OCFS2_SUPER_BLOCK_BLKNO ||
			    !block_in_volume(fs, blk, len * fs->bpc)) {
				snprintf(why, whylen, "extent %u (%llu clusters at block %llu) "
				    "is outside the volume", i, (unsigned long long)len,
				    (unsigned long long)blk);
				return -1;
			}
		} else {
			len = LE32(r->e_int_clusters);
			if (blk <= OCFS2_SUPER_BLOCK_BLKNO || !block_in_volume(fs, blk, 1)) {
				snprintf(why, whylen, "extent record %u points outside the "
				    "volume (block %llu)", i, (unsigned long long)blk);
				return -1;
			}
		}
		if (LE32(r->e_cpos) < prev_end) {
			snprintf(why, whylen, "extent record %u (cpos %u) overlaps the one before",
			    i, LE32(r->e_cpos));
			return -1;
		}
		prev_end = (uint64_t)LE32(r->e_cpos) + len;
	}
	return 0;
}

int
extent_list_check(struct fsd *fs, const struct ocfs2_extent_list *el, unsigned capacity,
    char *why, size_t whylen)
{
	return list_check(fs, el, capacity, 0, why, whylen);
}

void
extent_register_checks(struct fsd *fs)
{
	fs->check_extent_list = list_check;
}

int
extent_map(struct fsd *fs, uint64_t owner, const struct ocfs2_extent_list *el,
    uint64_t lblk, struct fsd_extent *ex)
{
	uint64_t cpos = lblk >> (fs->cbits - fs->bbits);
	uint64_t inoff = lblk & (fs->bpc - 1);
	uint64_t limit = UINT32_MAX, child, start, len;
	struct fsd_buf *b = NULL, *nb;
	const struct ocfs2_extent_rec *r;
	unsigned depth = LE16(el->l_tree_depth), want, i, used;
	int found, rc;
	char why[128];

	memset(ex, 0, sizeof(*ex));
	if (cpos >= UINT32_MAX) {
		/* past the last cluster a record can map (a sparse file's size may be) */
		ex->nblocks = UINT64_MAX - lblk;
		return 0;
	}
	for (;;) {
		used = LE16(el->l_next_free_rec);
		if (depth == 0)
			break;
		/* The interior record with the largest e_cpos <= cpos. */
		found = -1;
		for (i = 0; i < used; i++) {
			r = &el->l_recs[i];
			if (LE32(r->e_cpos) > cpos) {
				if (LE32(r->e_cpos) < limit)
					limit = LE32(r->e_cpos);
				break;
			}
			found = (int)i;
		}
		if (found < 0) {
			/* before the first subtree: a hole */
			len = (used ? LE32(el->l_recs[0].e_cpos) : limit) - cpos;
			ex->nblocks = len * fs->bpc - inoff;
			block_put(fs, b);
			return 0;
		}
		child = LE64(el->l_recs[found].e_blkno);
		want = depth - 1;
		rc = block_read_owned(fs, child, BLK_EXTENT, owner, &nb);
		block_put(fs, b);
		if (rc != 0)
			return rc;
		b = nb;
		el = &((const struct ocfs2_extent_block *)b->data)->h_list;
		if (LE16(el->l_tree_depth) != want) {
			snprintf(why, sizeof(why), "extent block of inode %llu has depth %u, "
			    "expected %u", (unsigned long long)owner,
			    LE16(el->l_tree_depth), want);
			fsd_corrupt(fs, child, why);
			block_put(fs, b);
			return -EIO;
		}
		depth = want;
	}
	for (i = 0; i < used; i++) {
		r = &el->l_recs[i];
		start = LE32(r->e_cpos);
		len = LE16(r->e_leaf_clusters);
		if (len == 0)
			continue;
		if (cpos < start) {
			if (start < limit)
				limit = start;
			break;
		}
		if (cpos < start + len) {
			ex->pblk = LE64(r->e_blkno) + (cpos - start) * fs->bpc + inoff;
			ex->nblocks = (start + len - cpos) * fs->bpc - inoff;
			ex->unwritten = (r->e_flags & OCFS2_EXT_UNWRITTEN) != 0;
			ex->refcounted = (r->e_flags & OCFS2_EXT_REFCOUNTED) != 0;
			block_put(fs, b);
			return 0;
		}
	}
	ex->nblocks = (limit - cpos) * fs->bpc - inoff;
	block_put(fs, b);
	return 0;
}

/* ---- changing trees (inside a handle) ---------------------------------- */

/*
 * The root a tree hangs from: an inode's id2 list, the list of a
 * directory index root (doc/indexed-dirs.md), or the list of a refcount
 * tree's root (doc/refcount.md: its leaf records point at refcount leaf
 * blocks, one "cluster" each, and never merge, as the kernel's
 * ocfs2_refcount_tree_extent_contig says), with the cluster count and
 * last leaf each keeps beside it. Blocks of each belong to the buffer's
 * owner, whose lock covers them.
 */
struct xroot {
	struct ocfs2_extent_list	*el;
	__le32				*clusters;
	__le64				*last_eb;
	enum blk_type			 eb_type;	/* its extent blocks' */
	int				 merge;		/* contiguous records join */
};

static void
xroot_of(struct fsd_buf *b, struct xroot *r)
{
	struct ocfs2_dx_root_block *dx = (struct ocfs2_dx_root_block *)b->data;
	struct ocfs2_refcount_block *rb = (struct ocfs2_refcount_block *)b->data;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)b->data;

	r->eb_type = BLK_EXTENT;
	r->merge = 1;
	if (memcmp(dx->dr_signature, OCFS2_DX_ROOT_SIGNATURE,
	    sizeof(OCFS2_DX_ROOT_SIGNATURE) - 1) == 0) {
		r->el = &dx->dr_list;
		r->clusters = &dx->dr_clusters;
		r->last_eb = &dx->dr_last_eb_blk;
	} else if (memcmp(rb->rf_signature, OCFS2_REFCOUNT_BLOCK_SIGNATURE,
	    sizeof(OCFS2_REFCOUNT_BLOCK_SIGNATURE) - 1) == 0) {
		r->el = &rb->rf_list;
		r->clusters = &rb->rf_clusters;
		r->last_eb = &rb->rf_last_eb_blk;
		r->eb_type = BLK_REFCOUNT_EXTENT;
		r->merge = 0;
	} else {
		r->el = &di->id2.i_list;
		r->clusters = &di->i_clusters;
		r->last_eb = &di->i_last_eb_blk;
	}
}

static void
xroot_add_clusters(struct xroot *r, int64_t n)
{
	*r->clusters = htole32((uint32_t)((int64_t)LE32(*r->clusters) + n));
}

/*
 * The root's inode gains or loses n clusters in its owners' quotas (a
 * directory index's root: its clusters are not counted, as fsck counts).
 */
static int
xroot_charge(struct fsd_handle *h, struct fsd_buf *b, int64_t n)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)b->data;

	if (memcmp(di->i_signature, OCFS2_INODE_SIGNATURE, sizeof(OCFS2_INODE_SIGNATURE) - 1) != 0)
		return 0;
	return quota_charge(h, di, b->blkno, n, 0);
}

/* Clusters a record covers, at either kind of level. */
static uint32_t
rec_clusters(const struct ocfs2_extent_list *el, const struct ocfs2_extent_rec *r)
{
	return LE16(el->l_tree_depth) ? LE32(r->e_int_clusters) : LE16(r->e_leaf_clusters);
}

/* The rightmost path: bufs[0] is the root's container, bufs[depth] the leaf. */
struct xpath {
	struct fsd_buf			*b[EXTENT_MAX_DEPTH + 1];
	struct ocfs2_extent_list	*el[EXTENT_MAX_DEPTH + 1];
	unsigned			 depth;
};

static void
path_put(struct fsd *fs, struct xpath *p)
{
	unsigned i;

	for (i = 1; i <= p->depth; i++)
		block_put(fs, p->b[i]);
	memset(p, 0, sizeof(*p));
}

/* Level i of p: the extent block child, checked to sit at its depth;
 * on failure p is let go. */
static int
path_step(struct fsd *fs, struct xpath *p, unsigned i, uint64_t child, uint64_t owner,
    enum blk_type type)
{
	struct ocfs2_extent_list *el;
	int rc;

	if ((rc = block_read_owned(fs, child, type, owner, &p->b[i])) != 0) {
		p->depth = i - 1;
		path_put(fs, p);
		return rc;
	}
	el = &((struct ocfs2_extent_block *)p->b[i]->data)->h_list;
	if (LE16(el->l_tree_depth) != p->depth - i) {
		fsd_corrupt(fs, child, "extent block at the wrong depth");
		p->depth = i;
		path_put(fs, p);
		return -EIO;
	}
	p->el[i] = el;
	return 0;
}

static int
rightmost_path(struct fsd *fs, struct fsd_buf *root, const struct xroot *xr, struct xpath *p)
{
	struct ocfs2_extent_list *rel = xr->el, *el = rel;
	unsigned i, n;
	uint64_t child;
	int rc;

	memset(p, 0, sizeof(*p));
	p->b[0] = root;
	p->el[0] = rel;
	p->depth = LE16(rel->l_tree_depth);
	for (i = 1; i <= p->depth; i++) {
		n = LE16(el->l_next_free_rec);
		if (n == 0) {
			fsd_corrupt(fs, p->b[i - 1]->blkno, "interior extent list is empty");
			p->depth = i - 1;
			path_put(fs, p);
			return -EIO;
		}
		child = LE64(el->l_recs[n - 1].e_blkno);
		if ((rc = path_step(fs, p, i, child, p->b[0]->owner, xr->eb_type)) != 0)
			return rc;
		el = p->el[i];
	}
	return 0;
}

/* A new extent block of type from our slot's extent_alloc, formatted at depth. */
static int
new_extent_block(struct fsd_handle *h, uint64_t owner, enum blk_type type, unsigned depth,
    struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct ocfs2_extent_block *eb;
	struct fsd_subbit sb;
	int rc;

	if ((rc = suballoc_claim(h, SUBALLOC_EXTENT, &sb)) != 0)
		return rc;
	if ((rc = block_new_owned(fs, sb.blkno, type, owner, bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	eb = (struct ocfs2_extent_block *)(*bp)->data;
	memcpy(eb->h_signature, OCFS2_EXTENT_BLOCK_SIGNATURE, sizeof(OCFS2_EXTENT_BLOCK_SIGNATURE));
	eb->h_suballoc_slot = htole16(sb.slot);
	eb->h_suballoc_bit = htole16(sb.bit);
	eb->h_fs_generation = htole32(fs->fs_generation);
	eb->h_blkno = htole64(sb.blkno);
	eb->h_suballoc_loc = htole64(sb.group);
	eb->h_list.l_tree_depth = htole16(depth);
	eb->h_list.l_count = htole16(ocfs2_extent_recs_per_eb(fs->vol.block_bytes));
	journal_dirty(h, *bp);
	return 0;
}

int
free_extent_block(struct fsd_handle *h, struct fsd_buf *b)
{
	const struct ocfs2_extent_block *eb = (const struct ocfs2_extent_block *)b->data;
	unsigned slot = LE16(eb->h_suballoc_slot);
	uint64_t group = LE64(eb->h_suballoc_loc);

	if (slot >= h->fs->vol.max_slots) {
		fsd_corrupt(h->fs, b->blkno, "extent block from an impossible slot");
		return -EIO;
	}
	if (group == 0)
		group = b->blkno - LE16(eb->h_suballoc_bit);
	return suballoc_free(h, h->fs->slots[slot].extent_alloc, group, LE16(eb->h_suballoc_bit));
}

/* Bring every interior record on the rightmost path up to date, bottom up. */
static void
path_fix_interior(struct xpath *p)
{
	struct ocfs2_extent_list *el, *child;
	struct ocfs2_extent_rec *r, *last;
	unsigned i, n, cn;
	uint64_t end;

	for (i = p->depth; i-- > 0;) {
		el = p->el[i];
		child = p->el[i + 1];
		n = LE16(el->l_next_free_rec);
		cn = LE16(child->l_next_free_rec);
		r = &el->l_recs[n - 1];
		if (cn == 0) {
			r->e_int_clusters = 0;
			continue;
		}
		last = &child->l_recs[cn - 1];
		end = (uint64_t)LE32(last->e_cpos) + rec_clusters(child, last);
		r->e_int_clusters = htole32((uint32_t)(end - LE32(r->e_cpos)));
	}
}

static int
path_access(struct fsd_handle *h, struct xpath *p)
{
	unsigned i;
	int rc;

	for (i = 0; i <= p->depth; i++)
		if ((rc = journal_access(h, p->b[i])) != 0)
			return rc;
	return 0;
}

static void
path_dirty(struct fsd_handle *h, struct xpath *p)
{
	unsigned i;

	for (i = 0; i <= p->depth; i++)
		journal_dirty(h, p->b[i]);
}

int
extent_append(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint64_t pblk,
    uint32_t clusters)
{
	struct fsd *fs = h->fs;
	struct xroot xr;
	struct ocfs2_extent_list *root, *leaf, *el;
	struct ocfs2_extent_rec *r;
	struct fsd_buf *nb[EXTENT_MAX_DEPTH + 1], *sb;
	struct xpath p;
	unsigned n, lvl, i, k, target;
	int rc;

	/* the owners may not grow: nothing is changed yet */
	if ((rc = xroot_charge(h, ib, clusters)) != 0)
		return rc;
	xroot_of(ib, &xr);
	root = xr.el;
	while (clusters > 0) {
		/* a leaf record holds at most 65535 clusters */
		uint32_t chunk = clusters > 65535 ? 65535 : clusters;

		if ((rc = rightmost_path(fs, ib, &xr, &p)) != 0)
			return rc;
		if ((rc = path_access(h, &p)) != 0)
			goto out;
		leaf = p.el[p.depth];
		n = LE16(leaf->l_next_free_rec);
		r = n ? &leaf->l_recs[n - 1] : NULL;
		if (r != NULL && LE16(r->e_leaf_clusters) == 0) {
			/* an empty leftmost record: reuse it */
			r->e_cpos = htole32(cpos);
			r->e_blkno = htole64(pblk);
			r->e_leaf_clusters = htole16((uint16_t)chunk);
			r->e_flags = 0;
		} else if (r != NULL && r->e_flags == 0 &&
		    LE32(r->e_cpos) + LE16(r->e_leaf_clusters) == cpos &&
		    LE64(r->e_blkno) + (uint64_t)LE16(r->e_leaf_clusters) * fs->bpc == pblk &&
		    LE16(r->e_leaf_clusters) + chunk <= 65535) {
			r->e_leaf_clusters = htole16((uint16_t)(LE16(r->e_leaf_clusters) + chunk));
		} else if (n < LE16(leaf->l_count)) {
			r = &leaf->l_recs[n];
			memset(r, 0, sizeof(*r));
			r->e_cpos = htole32(cpos);
			r->e_blkno = htole64(pblk);
			r->e_leaf_clusters = htole16((uint16_t)chunk);
			leaf->l_next_free_rec = htole16(n + 1);
		} else {
			/* The leaf is full: find the lowest level with room. */
			for (lvl = p.depth; lvl-- > 0;)
				if (LE16(p.el[lvl]->l_next_free_rec) < LE16(p.el[lvl]->l_count))
					break;
			if (lvl == (unsigned)-1) {
				/*
				 * Every level is full: move the root's list into
				 * a new block one level down (doc/ondisk.md, Growing a tree).
				 */
				if (p.depth >= EXTENT_MAX_DEPTH) {
					rc = -EFBIG;
					goto out;
				}
				if ((rc = new_extent_block(h, ib->owner, xr.eb_type, p.depth, &sb)) != 0)
					goto out;
				el = &((struct ocfs2_extent_block *)sb->data)->h_list;
				k = LE16(root->l_next_free_rec);
				memcpy(el->l_recs, root->l_recs, k * sizeof(*r));
				el->l_next_free_rec = htole16(k);
				if (p.depth == 0)
					*xr.last_eb = htole64(sb->blkno);
				memset(root->l_recs, 0, LE16(root->l_count) * sizeof(*r));
				root->l_tree_depth = htole16(p.depth + 1);
				root->l_next_free_rec = htole16(1);
				root->l_recs[0].e_cpos = 0;
				root->l_recs[0].e_blkno = htole64(sb->blkno);
				path_put(fs, &p);
				if ((rc = rightmost_path(fs, ib, &xr, &p)) == 0) {
					path_fix_interior(&p);
					path_dirty(h, &p);
					path_put(fs, &p);
				}
				block_put(fs, sb);
				if (rc != 0)
					return rc;
				continue;	/* retry: the root has room now */
			}
			/* New blocks for every level below lvl, the leaf last. */
			memset(nb, 0, sizeof(nb));
			for (i = lvl + 1; i <= p.depth; i++) {
				if ((rc = new_extent_block(h, ib->owner, xr.eb_type, p.depth - i,
				    &nb[i])) != 0) {
					while (--i > lvl)
						block_put(fs, nb[i]);
					goto out;
				}
			}
			for (i = lvl; i <= p.depth; i++) {
				el = i == lvl ? p.el[lvl] : &((struct ocfs2_extent_block *)nb[i]->data)->h_list;
				target = LE16(el->l_next_free_rec);
				r = &el->l_recs[target];
				memset(r, 0, sizeof(*r));
				r->e_cpos = htole32(cpos);
				if (i < p.depth) {
					r->e_int_clusters = htole32(chunk);
					r->e_blkno = htole64(nb[i + 1]->blkno);
				} else {
					r->e_blkno = htole64(pblk);
					r->e_leaf_clusters = htole16((uint16_t)chunk);
				}
				el->l_next_free_rec = htole16(target + 1);
			}
			/* Chain the leaves and point the inode at the new last one. */
			((struct ocfs2_extent_block *)p.b[p.depth]->data)->h_next_leaf_blk =
			    htole64(nb[p.depth]->blkno);
			*xr.last_eb = htole64(nb[p.depth]->blkno);
			for (i = lvl + 1; i <= p.depth; i++)
				block_put(fs, nb[i]);
			/* Levels above lvl now end at the new range. */
			for (i = lvl; i-- > 0;) {
				el = p.el[i];
				r = &el->l_recs[LE16(el->l_next_free_rec) - 1];
				r->e_int_clusters = htole32(cpos + chunk - LE32(r->e_cpos));
			}
			path_dirty(h, &p);
			path_put(fs, &p);
			goto next;
		}
		path_fix_interior(&p);
		path_dirty(h, &p);
		path_put(fs, &p);
next:
		xroot_add_clusters(&xr, chunk);
		cpos += chunk;
		pblk += (uint64_t)chunk * fs->bpc;
		clusters -= chunk;
	}
	return 0;
out:
	path_put(fs, &p);
	return rc;
}

/*
 * Make the rightmost path consistent: interior ends, the last leaf ends
 * the leaf chain and is the inode's i_last_eb_blk.
 */
static void
path_normalize(struct fsd_handle *h, struct xroot *xr, struct xpath *p)
{
	if (p->depth > 0 && LE16(p->el[p->depth]->l_next_free_rec) > 0) {
		path_fix_interior(p);
		((struct ocfs2_extent_block *)p->b[p->depth]->data)->h_next_leaf_blk = 0;
		*xr->last_eb = htole64(p->b[p->depth]->blkno);
	}
	path_dirty(h, p);
}

/*
 * Shared clusters to release at once: every other one may be the last
 * reference of a run of its own, and the truncate log must take every
 * run freed (refcount_decrease's -EAGAIN, when it cannot, must be cured
 * by a flush). Past that the record is cut again on the next turn.
 */
static uint32_t
release_limit(struct fsd *fs)
{
	int room = tl_room(fs);

	return room > 1 ? 2 * (uint32_t)(room - 1) : 1;
}

/*
 * Clusters leave a file: into the truncate log, or, shared through the
 * refcount tree, one reference less (freed when it was the last).
 */
static int
release_clusters(struct fsd_handle *h, struct fsd_buf *ib, uint8_t flags, uint64_t cpos,
    uint32_t n)
{
	if (flags & OCFS2_EXT_REFCOUNTED)
		return refcount_decrease(h, ib, cpos, n, 1);
	return tl_append(h, (uint32_t)cpos, n);
}

int
extent_truncate(struct fsd_handle *h, struct fsd_buf *ib, uint32_t keep)
{
	struct fsd *fs = h->fs;
	struct xroot xr;
	struct ocfs2_extent_list *root, *leaf, *parent;
	struct ocfs2_extent_rec *r;
	struct xpath p;
	uint32_t start, len, cut;
	uint64_t blk;
	unsigned n, i;
	int rc;

	xroot_of(ib, &xr);
	root = xr.el;
	for (;;) {
		if ((rc = rightmost_path(fs, ib, &xr, &p)) != 0)
			return rc;
		if ((rc = path_access(h, &p)) != 0)
			goto out;
		leaf = p.el[p.depth];
		n = LE16(leaf->l_next_free_rec);
		if (n == 0 && p.depth > 0) {
			/*
			 * An emptied leaf: free it, and every ancestor it
			 * leaves empty, dropping each one's record above.
			 */
			for (i = p.depth; i >= 1 && LE16(p.el[i]->l_next_free_rec) == 0; i--) {
				if ((rc = free_extent_block(h, p.b[i])) != 0)
					goto out;
				parent = p.el[i - 1];
				memset(&parent->l_recs[LE16(parent->l_next_free_rec) - 1], 0, sizeof(*r));
				parent->l_next_free_rec = htole16(LE16(parent->l_next_free_rec) - 1);
			}
			if (LE16(root->l_next_free_rec) == 0) {
				/* nothing left at all: an empty list in the inode */
				root->l_tree_depth = 0;
				*xr.last_eb = 0;
			}
			path_dirty(h, &p);
			path_put(fs, &p);
			continue;
		}
		path_normalize(h, &xr, &p);
		r = n ? &leaf->l_recs[n - 1] : NULL;
		if (r != NULL && LE16(r->e_leaf_clusters) == 0) {
			memset(r, 0, sizeof(*r));
			leaf->l_next_free_rec = htole16(n - 1);
			path_put(fs, &p);
			continue;
		}
		if (r == NULL || LE32(r->e_cpos) + LE16(r->e_leaf_clusters) <= keep)
			break;
		start = LE32(r->e_cpos);
		len = LE16(r->e_leaf_clusters);
		cut = start >= keep ? len : start + len - keep;
		if ((r->e_flags & OCFS2_EXT_REFCOUNTED) && cut > release_limit(fs))
			cut = release_limit(fs);	/* the rest on the next turn */
		blk = LE64(r->e_blkno) + (uint64_t)(len - cut) * fs->bpc;
		/* Freed clusters wait in the truncate log until this commits. */
		rc = release_clusters(h, ib, r->e_flags, blk >> (fs->cbits - fs->bbits), cut);
		if (rc != 0)
			goto out;
		if (cut == len) {
			memset(r, 0, sizeof(*r));
			leaf->l_next_free_rec = htole16(n - 1);
		} else
			r->e_leaf_clusters = htole16((uint16_t)(len - cut));
		xroot_add_clusters(&xr, -(int64_t)cut);
		if ((rc = xroot_charge(h, ib, -(int64_t)cut)) != 0)
			goto out;
		path_normalize(h, &xr, &p);
		path_put(fs, &p);
	}
	rc = 0;
out:
	path_put(fs, &p);
	return rc;
}

/*
 * ---- changing a tree anywhere (sparse files) ----------------------------
 *
 * A sparse file's extents start anywhere and change in the middle: a
 * write fills a hole, a write into an unwritten extent splits it, a punch
 * frees a range. Each change is one edit of the sorted leaf records over
 * a cluster range (doc/sparse-unwritten.md). It is made in the leaf whose
 * span holds the range when the result fits there, and otherwise by
 * building the whole tree again from its records: new blocks first, the
 * old ones freed after, so that no block is reused inside the handle.
 */

enum xedit_kind { XEDIT_INSERT, XEDIT_SETFLAGS, XEDIT_REMOVE };

struct xedit {
	enum xedit_kind	 kind;
	uint32_t	 cpos, len;
	uint64_t	 pblk;		/* XEDIT_INSERT */
	uint8_t		 flags;		/* XEDIT_INSERT, XEDIT_SETFLAGS */
};

/*
 * Append r to out[0..*n), merged into the record before when it continues
 * it and the tree merges (not a refcount tree's).
 */
static void
xrec_push(struct xrec *out, unsigned *n, unsigned bpc, int merge, const struct xrec *r)
{
	struct xrec *prev = *n ? &out[*n - 1] : NULL;

	if (r->len == 0)
		return;
	if (merge && prev != NULL && prev->cpos + prev->len == r->cpos && prev->flags == r->flags &&
	    prev->pblk + (uint64_t)prev->len * bpc == r->pblk && prev->len + r->len <= 65535) {
		prev->len += r->len;
		return;
	}
	out[(*n)++] = *r;
}

/*
 * Apply e to the sorted records in[0..n) into out (room for n + 2): the
 * new count, or -EEXIST when an insert meets a mapped cluster, -ENOENT
 * when flags are set on a hole.
 */
static int
xedit_apply(const struct xedit *e, unsigned bpc, int merge, const struct xrec *in, unsigned n,
    struct xrec *out)
{
	uint32_t a = e->cpos, b = e->cpos + e->len, rs, re, ms, me, covered = 0;
	struct xrec piece, ins = { e->cpos, e->len, e->pblk, e->flags };
	int inserted = e->kind != XEDIT_INSERT;
	unsigned i, m = 0;

	for (i = 0; i < n; i++) {
		rs = in[i].cpos;
		re = rs + in[i].len;
		if (!inserted && rs >= b) {
			xrec_push(out, &m, bpc, merge, &ins);
			inserted = 1;
		}
		if (re <= a || rs >= b) {
			xrec_push(out, &m, bpc, merge, &in[i]);
			continue;
		}
		if (e->kind == XEDIT_INSERT)
			return -EEXIST;
		if (rs < a) {
			piece = in[i];
			piece.len = a - rs;
			xrec_push(out, &m, bpc, merge, &piece);
		}
		ms = rs > a ? rs : a;
		me = re < b ? re : b;
		covered += me - ms;
		if (e->kind == XEDIT_SETFLAGS) {
			piece = (struct xrec){ ms, me - ms, in[i].pblk + (uint64_t)(ms - rs) * bpc,
			    e->flags };
			xrec_push(out, &m, bpc, merge, &piece);
		}
		if (re > b) {
			piece = (struct xrec){ b, re - b, in[i].pblk + (uint64_t)(b - rs) * bpc,
			    in[i].flags };
			xrec_push(out, &m, bpc, merge, &piece);
		}
	}
	if (!inserted)
		xrec_push(out, &m, bpc, merge, &ins);
	if (e->kind == XEDIT_SETFLAGS && covered != e->len)
		return -ENOENT;
	return (int)m;
}

/* The records of a leaf list, empty ones left out: their count. */
static unsigned
leaf_records(const struct ocfs2_extent_list *el, struct xrec *out)
{
	unsigned i, n = 0;
	const struct ocfs2_extent_rec *r;

	for (i = 0; i < LE16(el->l_next_free_rec); i++) {
		r = &el->l_recs[i];
		if (LE16(r->e_leaf_clusters) == 0)
			continue;
		out[n++] = (struct xrec){ LE32(r->e_cpos), LE16(r->e_leaf_clusters),
		    LE64(r->e_blkno), r->e_flags };
	}
	return n;
}

static void
leaf_store(struct ocfs2_extent_list *el, const struct xrec *r, unsigned n)
{
	struct ocfs2_extent_rec *er;
	unsigned i;

	memset(el->l_recs, 0, LE16(el->l_count) * sizeof(*er));
	for (i = 0; i < n; i++) {
		er = &el->l_recs[i];
		er->e_cpos = htole32(r[i].cpos);
		er->e_leaf_clusters = htole16((uint16_t)r[i].len);
		er->e_flags = r[i].flags;
		er->e_blkno = htole64(r[i].pblk);
	}
	el->l_next_free_rec = htole16((uint16_t)n);
}

/*
 * The path to the leaf whose span holds cpos: at each level the last
 * record starting at or before it (the first when none does). idx[i] is
 * the record taken in p->el[i]; *end where the leaf's span ends.
 */
static int
leaf_path(struct fsd *fs, struct fsd_buf *root, const struct xroot *xr, uint32_t cpos,
    struct xpath *p, unsigned *idx, uint64_t *end)
{
	struct ocfs2_extent_list *rel = xr->el, *el = rel;
	unsigned i, k, n;
	uint64_t child;
	int rc;

	memset(p, 0, sizeof(*p));
	p->b[0] = root;
	p->el[0] = rel;
	p->depth = LE16(rel->l_tree_depth);
	*end = (uint64_t)UINT32_MAX + 1;
	for (i = 1; i <= p->depth; i++) {
		n = LE16(el->l_next_free_rec);
		if (n == 0) {
			fsd_corrupt(fs, p->b[i - 1]->blkno, "interior extent list is empty");
			p->depth = i - 1;
			path_put(fs, p);
			return -EIO;
		}
		for (k = 0; k + 1 < n && LE32(el->l_recs[k + 1].e_cpos) <= cpos; k++)
			;
		if (k + 1 < n && LE32(el->l_recs[k + 1].e_cpos) < *end)
			*end = LE32(el->l_recs[k + 1].e_cpos);
		idx[i - 1] = k;
		child = LE64(el->l_recs[k].e_blkno);
		if ((rc = path_step(fs, p, i, child, root->owner, xr->eb_type)) != 0)
			return rc;
		el = p->el[i];
	}
	return 0;
}

/*
 * After an edit of the leaf at the end of p (never left empty): as the
 * kernel keeps interior records (alloc.c, ocfs2_adjust_adjacent_records),
 * each record on the path starts where its subtree's first record starts
 * and spans up to the next record of its list, or to the subtree's end
 * when it is the last, so that the spans of a list leave no gap.
 */
static void
path_fix_spans(struct xpath *p, const unsigned *idx)
{
	struct ocfs2_extent_list *el, *child;
	struct ocfs2_extent_rec *r, *last;
	uint32_t first, end;
	unsigned i, k, cn;

	for (i = p->depth; i-- > 0;) {
		el = p->el[i];
		child = p->el[i + 1];
		k = idx[i];
		r = &el->l_recs[k];
		cn = LE16(child->l_next_free_rec);
		first = LE32(child->l_recs[0].e_cpos);
		last = &child->l_recs[cn - 1];
		end = LE32(last->e_cpos) + rec_clusters(child, last);
		r->e_cpos = htole32(first);
		if (k > 0)
			el->l_recs[k - 1].e_int_clusters =
			    htole32(first - LE32(el->l_recs[k - 1].e_cpos));
		if (k + 1 < LE16(el->l_next_free_rec))
			end = LE32(el->l_recs[k + 1].e_cpos);
		r->e_int_clusters = htole32(end - LE32(r->e_cpos));
	}
}

/* Every leaf record under el, in order, and every extent block (referenced). */
struct xcollect {
	struct xrec	*recs;
	unsigned	 nrecs, crecs;
	struct fsd_buf	**blocks;
	unsigned	 nblocks, cblocks;
};

static int
grow(void **p, unsigned *cap, unsigned want, size_t size)
{
	unsigned ncap = *cap ? *cap : 64;
	void *np;

	if (want <= *cap)
		return 0;
	while (ncap < want)
		ncap *= 2;
	if ((np = realloc(*p, (size_t)ncap * size)) == NULL)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static int
tree_collect(struct fsd *fs, uint64_t owner, enum blk_type type,
    const struct ocfs2_extent_list *el, struct xcollect *c)
{
	unsigned depth = LE16(el->l_tree_depth), i, n = LE16(el->l_next_free_rec);
	const struct ocfs2_extent_list *cel;
	struct fsd_buf *b;
	int rc;

	if (depth == 0) {
		if ((rc = grow((void **)&c->recs, &c->crecs, c->nrecs + n + 2,
		    sizeof(*c->recs))) != 0)
			return rc;
		c->nrecs += leaf_records(el, c->recs + c->nrecs);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if ((rc = grow((void **)&c->blocks, &c->cblocks, c->nblocks + 1,
		    sizeof(*c->blocks))) != 0)
			return rc;
		rc = block_read_owned(fs, LE64(el->l_recs[i].e_blkno), type, owner, &b);
		if (rc != 0)
			return rc;
		c->blocks[c->nblocks++] = b;
		cel = &((const struct ocfs2_extent_block *)b->data)->h_list;
		if (LE16(cel->l_tree_depth) != depth - 1) {
			fsd_corrupt(fs, b->blkno, "extent block at the wrong depth");
			return -EIO;
		}
		if ((rc = tree_collect(fs, owner, type, cel, c)) != 0)
			return rc;
	}
	return 0;
}

/* A subtree built by tree_build: where it starts and ends, its block. */
struct xnode {
	uint32_t	 cpos;
	uint64_t	 end;
	uint64_t	 blkno;
};

/*
 * Fill the inode's tree with recs[0..n): in the inode when they fit, else
 * in leaves filled to three quarters (room for later inserts without a
 * rebuild) under as few interior levels as the inode's list needs.
 */
static int
tree_build(struct fsd_handle *h, struct fsd_buf *ib, const struct xrec *recs, unsigned n)
{
	struct fsd *fs = h->fs;
	struct xroot xr;
	struct ocfs2_extent_list *root, *el;
	struct ocfs2_extent_rec *er;
	unsigned per = ocfs2_extent_recs_per_eb(fs->vol.block_bytes), fill = per - per / 4;
	unsigned nn, k, i, j, from, take, depth = 0;
	struct xnode *nodes = NULL, *up = NULL;
	struct fsd_buf *b, *prev = NULL;
	int rc = 0;

	xroot_of(ib, &xr);
	root = xr.el;
	if (n <= LE16(root->l_count)) {
		root->l_tree_depth = 0;
		leaf_store(root, recs, n);
		*xr.last_eb = 0;
		return 0;
	}
	/* the leaves, chained, each with its share of the records */
	k = (n + fill - 1) / fill;
	if ((nodes = calloc(k, sizeof(*nodes))) == NULL)
		return -ENOMEM;
	for (i = 0, from = 0; i < k; i++, from += take) {
		take = n / k + (i < n % k);
		if ((rc = new_extent_block(h, ib->owner, xr.eb_type, 0, &b)) != 0)
			goto out;
		leaf_store(&((struct ocfs2_extent_block *)b->data)->h_list, recs + from, take);
		journal_dirty(h, b);
		if (prev != NULL) {
			((struct ocfs2_extent_block *)prev->data)->h_next_leaf_blk = htole64(b->blkno);
			journal_dirty(h, prev);
			block_put(fs, prev);
		}
		prev = b;
		nodes[i].cpos = recs[from].cpos;
		nodes[i].blkno = b->blkno;
		nodes[i].end = (uint64_t)recs[from + take - 1].cpos + recs[from + take - 1].len;
		if (i > 0)
			nodes[i - 1].end = nodes[i].cpos;
	}
	*xr.last_eb = htole64(prev->blkno);
	block_put(fs, prev);
	/* interior levels until the inode's list holds the top one */
	for (nn = k, depth = 1; nn > LE16(root->l_count); nn = k, depth++) {
		if (depth >= EXTENT_MAX_DEPTH) {
			rc = -EFBIG;
			goto out;
		}
		k = (nn + fill - 1) / fill;
		if ((up = calloc(k, sizeof(*up))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0, from = 0; i < k; i++, from += take) {
			take = nn / k + (i < nn % k);
			if ((rc = new_extent_block(h, ib->owner, xr.eb_type, depth, &b)) != 0)
				goto out;
			el = &((struct ocfs2_extent_block *)b->data)->h_list;
			for (j = 0; j < take; j++) {
				er = &el->l_recs[j];
				er->e_cpos = htole32(nodes[from + j].cpos);
				er->e_int_clusters = htole32((uint32_t)(nodes[from + j].end -
				    nodes[from + j].cpos));
				er->e_blkno = htole64(nodes[from + j].blkno);
			}
			el->l_next_free_rec = htole16((uint16_t)take);
			journal_dirty(h, b);
			up[i] = (struct xnode){ nodes[from].cpos, nodes[from + take - 1].end, b->blkno };
			block_put(fs, b);
		}
		free(nodes);
		nodes = up;
		up = NULL;
	}
	memset(root->l_recs, 0, LE16(root->l_count) * sizeof(*er));
	for (j = 0; j < nn; j++) {
		er = &root->l_recs[j];
		er->e_cpos = htole32(nodes[j].cpos);
		er->e_int_clusters = htole32((uint32_t)(nodes[j].end - nodes[j].cpos));
		er->e_blkno = htole64(nodes[j].blkno);
	}
	root->l_next_free_rec = htole16((uint16_t)nn);
	root->l_tree_depth = htole16((uint16_t)depth);
out:
	free(up);
	free(nodes);
	return rc;
}

static void
xcollect_release(struct fsd *fs, struct xcollect *c)
{
	unsigned i;

	for (i = 0; i < c->nblocks; i++)
		block_put(fs, c->blocks[i]);
	free(c->blocks);
	free(c->recs);
	memset(c, 0, sizeof(*c));
}

/* The tree's blocks, collected in c, give way to a new tree of recs[0..n). */
static int
tree_replace(struct fsd_handle *h, struct fsd_buf *ib, const struct xcollect *c,
    const struct xrec *recs, unsigned n)
{
	unsigned i;
	int rc;

	if ((rc = journal_access(h, ib)) != 0 || (rc = tree_build(h, ib, recs, n)) != 0)
		return rc;
	journal_dirty(h, ib);
	for (i = 0; i < c->nblocks && rc == 0; i++)
		rc = free_extent_block(h, c->blocks[i]);
	return rc;
}

/* The edit e over the whole tree: collected, edited, built anew. */
static int
tree_rebuild(struct fsd_handle *h, struct fsd_buf *ib, const struct xedit *e)
{
	struct fsd *fs = h->fs;
	struct xroot xr;
	struct xcollect c;
	struct xrec *out = NULL;
	int rc, m;

	memset(&c, 0, sizeof(c));
	xroot_of(ib, &xr);
	if ((rc = tree_collect(fs, ib->owner, xr.eb_type, xr.el, &c)) != 0)
		goto out;
	if ((out = calloc(c.nrecs + 2, sizeof(*out))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((m = xedit_apply(e, fs->bpc, xr.merge, c.recs, c.nrecs, out)) < 0) {
		rc = m;
		goto out;
	}
	rc = tree_replace(h, ib, &c, out, (unsigned)m);
out:
	xcollect_release(fs, &c);
	free(out);
	return rc;
}

int
extent_records(struct fsd *fs, struct fsd_buf *root, struct xrec **recs, unsigned *n)
{
	struct xroot xr;
	struct xcollect c;
	int rc;

	memset(&c, 0, sizeof(c));
	xroot_of(root, &xr);
	if ((rc = tree_collect(fs, root->owner, xr.eb_type, xr.el, &c)) == 0) {
		*recs = c.recs;
		*n = c.nrecs;
		c.recs = NULL;
	}
	xcollect_release(fs, &c);
	return rc;
}

int
extent_replace(struct fsd_handle *h, struct fsd_buf *root, const struct xrec *recs, unsigned n)
{
	struct xroot xr;
	struct xcollect c;
	int rc;

	memset(&c, 0, sizeof(c));
	xroot_of(root, &xr);
	if ((rc = tree_collect(h->fs, root->owner, xr.eb_type, xr.el, &c)) == 0)
		rc = tree_replace(h, root, &c, recs, n);
	xcollect_release(h->fs, &c);
	return rc;
}

int
extent_find(struct fsd *fs, struct fsd_buf *root, uint32_t cpos, struct xrec *r, uint64_t *end)
{
	unsigned idx[EXTENT_MAX_DEPTH], k, n;
	const struct ocfs2_extent_list *leaf;
	struct xroot xr;
	struct xpath p;
	int rc;

	xroot_of(root, &xr);
	if ((rc = leaf_path(fs, root, &xr, cpos, &p, idx, end)) != 0)
		return rc;
	leaf = p.el[p.depth];
	n = LE16(leaf->l_next_free_rec);
	if (n == 0) {
		path_put(fs, &p);
		return -ENOENT;
	}
	/* as at the levels above: the last record starting at or before cpos, else the first */
	for (k = 0; k + 1 < n && LE32(leaf->l_recs[k + 1].e_cpos) <= cpos; k++)
		;
	if (k + 1 < n)
		*end = LE32(leaf->l_recs[k + 1].e_cpos);
	*r = (struct xrec){ LE32(leaf->l_recs[k].e_cpos), rec_clusters(leaf, &leaf->l_recs[k]),
	    LE64(leaf->l_recs[k].e_blkno), leaf->l_recs[k].e_flags };
	path_put(fs, &p);
	return 0;
}

/* Apply e, leaf by leaf along the range. */
static int
tree_edit(struct fsd_handle *h, struct fsd_buf *ib, const struct xedit *whole)
{
	struct fsd *fs = h->fs;
	struct xroot xr;
	struct ocfs2_extent_list *leaf;
	struct xedit e = *whole, piece;
	struct xrec *in = NULL, *out = NULL;
	unsigned idx[EXTENT_MAX_DEPTH], n, cap;
	uint64_t end;
	struct xpath p;
	int rc = 0, m;

	xroot_of(ib, &xr);
	while (e.len > 0 && rc == 0) {
		if ((rc = leaf_path(fs, ib, &xr, e.cpos, &p, idx, &end)) != 0)
			break;
		piece = e;
		if ((uint64_t)e.cpos + e.len > end)
			piece.len = (uint32_t)(end - e.cpos);
		leaf = p.el[p.depth];
		cap = LE16(leaf->l_next_free_rec) + 2;
		if ((in = calloc(cap, sizeof(*in))) == NULL ||
		    (out = calloc(cap, sizeof(*out))) == NULL) {
			rc = -ENOMEM;
			goto next;
		}
		n = leaf_records(leaf, in);
		if ((m = xedit_apply(&piece, fs->bpc, xr.merge, in, n, out)) < 0) {
			rc = m;
			goto next;
		}
		if ((unsigned)m <= LE16(leaf->l_count) && (m > 0 || p.depth == 0)) {
			if ((rc = path_access(h, &p)) != 0)
				goto next;
			leaf_store(leaf, out, (unsigned)m);
			path_fix_spans(&p, idx);
			path_dirty(h, &p);
		} else {
			path_put(fs, &p);
			rc = tree_rebuild(h, ib, &piece);
		}
next:
		path_put(fs, &p);
		free(in);
		free(out);
		in = out = NULL;
		e.cpos += piece.len;
		e.len -= piece.len;
		if (e.kind == XEDIT_INSERT)
			e.pblk += (uint64_t)piece.len * fs->bpc;
	}
	return rc;
}

int
extent_insert(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
    uint64_t pblk, uint8_t flags)
{
	struct xedit e = { XEDIT_INSERT, cpos, len, pblk, flags };
	struct xroot xr;
	int rc;

	if ((rc = xroot_charge(h, ib, len)) != 0 ||
	    (rc = journal_access(h, ib)) != 0 || (rc = tree_edit(h, ib, &e)) != 0)
		return rc;
	xroot_of(ib, &xr);
	xroot_add_clusters(&xr, len);
	journal_dirty(h, ib);
	return 0;
}

int
extent_remove(struct fsd_handle *h, struct fsd_buf *root, uint32_t cpos, uint32_t len)
{
	struct xedit e = { XEDIT_REMOVE, cpos, len, 0, 0 };
	struct xroot xr;
	int rc;

	if ((rc = journal_access(h, root)) != 0 || (rc = tree_edit(h, root, &e)) != 0)
		return rc;
	xroot_of(root, &xr);
	xroot_add_clusters(&xr, -(int64_t)len);
	journal_dirty(h, root);
	return 0;
}

int
extent_set_flags(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
    uint8_t flags)
{
	struct xedit e = { XEDIT_SETFLAGS, cpos, len, 0, flags };

	return tree_edit(h, ib, &e);
}

int
extent_punch(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t end)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	unsigned shift = fs->cbits - fs->bbits;
	struct fsd_extent ex;
	struct xedit e;
	uint64_t n;
	int rc;

	if ((rc = journal_access(h, ib)) != 0)
		return rc;
	while (cpos < end) {
		if ((rc = extent_map(fs, ib->blkno, &di->id2.i_list, (uint64_t)cpos << shift,
		    &ex)) != 0)
			return rc;
		n = ex.nblocks >> shift;
		if (n > end - cpos)
			n = end - cpos;
		if (n == 0)
			return -EIO;
		if (ex.refcounted && n > release_limit(fs))
			n = release_limit(fs);
		if (ex.pblk != 0) {
			rc = release_clusters(h, ib, ex.refcounted ? OCFS2_EXT_REFCOUNTED : 0,
			    ex.pblk >> shift, (uint32_t)n);
			if (rc != 0)
				return rc;
			e = (struct xedit){ XEDIT_REMOVE, cpos, (uint32_t)n, 0, 0 };
			if ((rc = tree_edit(h, ib, &e)) != 0)
				return rc;
			di->i_clusters = htole32(LE32(di->i_clusters) - (uint32_t)n);
			journal_dirty(h, ib);
			if ((rc = xroot_charge(h, ib, -(int64_t)n)) != 0)
				return rc;
		}
		cpos += (uint32_t)n;
	}
	return 0;
}

int
extent_remap(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
    uint64_t pblk, uint8_t flags)
{
	struct xedit out = { XEDIT_REMOVE, cpos, len, 0, 0 };
	struct xedit in = { XEDIT_INSERT, cpos, len, pblk, flags };
	int rc;

	if ((rc = journal_access(h, ib)) != 0 || (rc = tree_edit(h, ib, &out)) != 0)
		return rc;
	return tree_edit(h, ib, &in);
}
