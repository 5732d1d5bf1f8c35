/*
 * Refcount trees (doc/refcount.md): how many files map each shared
 * physical cluster. An inode with OCFS2_HAS_REFCOUNT_FL points at its
 * tree's root block (i_refcount_loc); the root counts the inodes that
 * point at it (rf_count) and holds the records itself until they
 * outgrow it. Then, as fs/ocfs2/refcounttree.c's
 * ocfs2_expand_inline_ref_root, the records move into leaf blocks and
 * the root's list becomes an extent tree of any depth listing the leaves
 * (e_cpos the low 32 bits of where a leaf's span starts, the first
 * leaf's 0; one "cluster" each, rf_clusters their number), grown and
 * searched by extent.c's code. Every refcount block and every extent
 * block of the tree comes from the slot's extent allocator.
 *
 * A change is one edit of the sorted records over a range of physical
 * clusters, leaf by leaf along it: a leaf changes in place while its
 * records fit, splits in two when they outgrow it, and leaves the tree
 * when it has none left (ocfs2_new_leaf_refcount_block,
 * ocfs2_remove_refcount_extent). All of it under the tree's 'T' cluster
 * lock, EX until the handle ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

/* A refcount record in memory. */
struct rrec {
	uint64_t	 cpos;
	uint64_t	 len;
	uint32_t	 count;
};

static void
refcount_refresh(struct fsd *fs, struct fsd_lockres *lr)
{
	if (lr->owner != 0)
		block_forget_owner(fs, lr->owner);
}

/* What changed under EX goes home before another node reads the tree. */
static int
refcount_write_home(struct fsd *fs, struct fsd_lockres *lr)
{
	return journal_write_home(fs, lr);
}

/* The tree's blocks (dlmglue.c's ocfs2_refcount_lock: 'T', root block, generation). */
const struct fsd_lock_ops refcount_lock_ops = {
	.letter		= 'T',
	.flags		= LOCK_TYPE_REQUIRES_REFRESH,
	.refresh	= refcount_refresh,
	.write_home	= refcount_write_home,
};

static unsigned
recs_per_block(const struct fsd *fs)
{
	return (unsigned)ocfs2_refcount_recs_per_rb((int)fs->vol.block_bytes);
}

static struct ocfs2_refcount_block *
rb_of(struct fsd_buf *b)
{
	return (struct ocfs2_refcount_block *)b->data;
}

static int
is_tree(const struct ocfs2_refcount_block *rb)
{
	return (LE32(rb->rf_flags) & OCFS2_REFCOUNT_TREE_FL) != 0;
}

/*
 * Inside a handle: lock the tree rooted at blkno EX until the handle
 * ends and read its root. The root's generation names the lock and never
 * changes, so a read before the lock finds it (as ocfs2_get_refcount_tree).
 */
static int
root_lock(struct fsd_handle *h, uint64_t blkno, struct fsd_buf **rbp)
{
	struct fsd *fs = h->fs;
	struct fsd_lockres *lr;
	struct fsd_buf *b;
	uint32_t gen;
	int rc;

	if ((rc = block_read_owned(fs, blkno, BLK_REFCOUNT, blkno, &b)) != 0)
		return rc;
	gen = LE32(rb_of(b)->rf_generation);
	block_put(fs, b);
	lr = lockres_get(fs, FSD_LOCK_REFCOUNT, blkno, gen, blkno);
	rc = handle_lock(h, lr);
	lockres_put(fs, lr);
	if (rc != 0)
		return rc;
	if ((rc = block_read_owned(fs, blkno, BLK_REFCOUNT, blkno, &b)) != 0)
		return rc;
	if (LE32(rb_of(b)->rf_flags) & OCFS2_REFCOUNT_LEAF_FL || LE32(rb_of(b)->rf_count) == 0) {
		fsd_corrupt(fs, blkno, "refcount tree root is a leaf or counts no inode");
		block_put(fs, b);
		return -EIO;
	}
	*rbp = b;
	return 0;
}

/* The root of the inode's tree, locked (the inode must have one). */
static int
inode_root(struct fsd_handle *h, struct fsd_buf *ib, struct fsd_buf **rbp)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)ib->data;

	if (!(LE16(di->i_dyn_features) & OCFS2_HAS_REFCOUNT_FL) || LE64(di->i_refcount_loc) == 0) {
		fsd_corrupt(h->fs, ib->blkno,
		    "refcounted extent in an inode without a refcount tree");
		return -EIO;
	}
	return root_lock(h, LE64(di->i_refcount_loc), rbp);
}

/* A new refcount block from our slot's extent allocator, accessed in h. */
static int
new_block(struct fsd_handle *h, uint64_t root, uint32_t gen, struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct ocfs2_refcount_block *rb;
	struct fsd_subbit sb;
	uint64_t blkno;
	int rc;

	if ((rc = suballoc_claim(h, SUBALLOC_EXTENT, &sb)) != 0)
		return rc;
	blkno = sb.blkno;
	if ((rc = block_new_owned(fs, blkno, BLK_REFCOUNT, root ? root : blkno, bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	rb = rb_of(*bp);
	memcpy(rb->rf_signature, OCFS2_REFCOUNT_BLOCK_SIGNATURE,
	    sizeof(OCFS2_REFCOUNT_BLOCK_SIGNATURE));
	rb->rf_suballoc_slot = htole16(sb.slot);
	rb->rf_suballoc_bit = htole16(sb.bit);
	rb->rf_suballoc_loc = htole64(sb.group);
	rb->rf_fs_generation = htole32(fs->fs_generation);
	rb->rf_blkno = htole64(blkno);
	rb->rf_generation = htole32(gen);
	rb->rf_records.rl_count = htole16((uint16_t)recs_per_block(fs));
	if (root != 0) {
		rb->rf_parent = htole64(root);
		rb->rf_flags = htole32(OCFS2_REFCOUNT_LEAF_FL);
	}
	return 0;
}

static int
free_block(struct fsd_handle *h, struct fsd_buf *b)
{
	const struct ocfs2_refcount_block *rb = rb_of(b);
	unsigned slot = LE16(rb->rf_suballoc_slot);
	uint64_t group = LE64(rb->rf_suballoc_loc);

	if (slot >= h->fs->vol.max_slots) {
		fsd_corrupt(h->fs, b->blkno, "refcount block from an impossible slot");
		return -EIO;
	}
	if (group == 0)
		group = b->blkno - LE16(rb->rf_suballoc_bit);
	return suballoc_free(h, h->fs->slots[slot].extent_alloc, group, LE16(rb->rf_suballoc_bit));
}

/* ---- records ------------------------------------------------------------ */

static unsigned
list_records(const struct ocfs2_refcount_block *rb, struct rrec *out)
{
	const struct ocfs2_refcount_rec *r;
	unsigned i, n = LE16(rb->rf_records.rl_used);

	for (i = 0; i < n; i++) {
		r = &rb->rf_records.rl_recs[i];
		out[i] = (struct rrec){ LE64(r->r_cpos), LE32(r->r_clusters), LE32(r->r_refcount) };
	}
	return n;
}

static void
list_store(struct fsd *fs, struct ocfs2_refcount_block *rb, const struct rrec *r, unsigned n)
{
	struct ocfs2_refcount_rec *er;
	unsigned i;

	memset(&rb->rf_records, 0, fs->vol.block_bytes - offsetof(struct ocfs2_refcount_block,
	    rf_records));
	rb->rf_records.rl_count = htole16((uint16_t)recs_per_block(fs));
	rb->rf_records.rl_used = htole16((uint16_t)n);
	for (i = 0; i < n; i++) {
		er = &rb->rf_records.rl_recs[i];
		er->r_cpos = htole64(r[i].cpos);
		er->r_clusters = htole32((uint32_t)r[i].len);
		er->r_refcount = htole32(r[i].count);
	}
}

/* Append a run to out[0..*m), merged into the one before when it continues it. */
static void
rpush(struct rrec *out, unsigned *m, uint64_t cpos, uint64_t len, uint32_t count)
{
	struct rrec *prev = *m ? &out[*m - 1] : NULL;

	if (len == 0 || count == 0)
		return;
	if (prev != NULL && prev->cpos + prev->len == cpos && prev->count == count &&
	    prev->len + len <= UINT32_MAX) {
		prev->len += len;
		return;
	}
	out[(*m)++] = (struct rrec){ cpos, len, count };
}

/* Runs whose count reached zero, to free: at most room of them (the truncate log's). */
struct zeroed {
	struct rrec	*runs;
	unsigned	 n, cap, room;
};

/* Room in z for extra more runs. */
static int
zeroed_reserve(struct zeroed *z, unsigned extra)
{
	struct rrec *nr;

	if (z->n + extra <= z->cap)
		return 0;
	if ((nr = realloc(z->runs, (size_t)(z->n + extra) * sizeof(*nr))) == NULL)
		return -ENOMEM;
	z->runs = nr;
	z->cap = z->n + extra;
	return 0;
}

/*
 * Add delta (+1 or -1) to the count of every cluster of [a, a+len) in the
 * sorted records in[0..n), into out (room for 4n + 4): the new number of
 * records, or -ENOENT when a cluster to decrease has no record.
 */
static int
rapply(const struct rrec *in, unsigned n, uint64_t a, uint64_t len, int delta, struct rrec *out,
    struct zeroed *z)
{
	uint64_t b = a + len, at = a, rs, re, ms, me;
	uint32_t c;
	unsigned i, m = 0;

	for (i = 0; i < n; i++) {
		rs = in[i].cpos;
		re = rs + in[i].len;
		if (re <= a || rs >= b) {
			if (rs >= b && at < b) {
				if (delta < 0)
					return -ENOENT;
				rpush(out, &m, at, b - at, 1);
				at = b;
			}
			rpush(out, &m, rs, in[i].len, in[i].count);
			continue;
		}
		if (rs > at) {
			if (delta < 0)
				return -ENOENT;
			rpush(out, &m, at, rs - at, 1);
		}
		if (rs < a)
			rpush(out, &m, rs, a - rs, in[i].count);
		ms = rs > a ? rs : a;
		me = re < b ? re : b;
		c = (uint32_t)((int64_t)in[i].count + delta);
		if (c == 0 && z != NULL)
			rpush(z->runs, &z->n, ms, me - ms, 1);
		rpush(out, &m, ms, me - ms, c);
		if (re > b)
			rpush(out, &m, b, re - b, in[i].count);
		at = me;
	}
	if (at < b) {
		if (delta < 0)
			return -ENOENT;
		rpush(out, &m, at, b - at, 1);
	}
	return (int)m;
}

/* ---- the tree's leaves ---------------------------------------------------- */

/*
 * A tree root's rf_list is an ordinary extent tree (extent.c) of any
 * depth, its interior blocks extent blocks from the extent allocator
 * (ocfs2_refcount_tree_et): each leaf record names one refcount leaf,
 * e_cpos the low 32 bits of where the leaf's span starts, and a leaf
 * holds the records of its span, from its e_cpos (the first leaf's is 0)
 * up to the next leaf's.
 */

/* The leaf at blkno of the tree at root, read and checked to belong to it. */
static int
leaf_read(struct fsd *fs, struct fsd_buf *root, uint64_t blkno, struct fsd_buf **bp)
{
	int rc;

	if ((rc = block_read_owned(fs, blkno, BLK_REFCOUNT, root->blkno, bp)) != 0)
		return rc;
	if (!(LE32(rb_of(*bp)->rf_flags) & OCFS2_REFCOUNT_LEAF_FL) ||
	    LE64(rb_of(*bp)->rf_parent) != root->blkno) {
		fsd_corrupt(fs, (*bp)->blkno, "refcount leaf of another tree, or not a leaf");
		block_put(fs, *bp);
		return -EIO;
	}
	return 0;
}

/*
 * The leaf whose span holds physical cluster cpos, read (*bp), with its
 * record in the root's tree (*ptr) and where its span ends (*end).
 */
static int
leaf_find(struct fsd *fs, struct fsd_buf *root, uint64_t cpos, struct xrec *ptr, uint64_t *end,
    struct fsd_buf **bp)
{
	int rc;

	rc = extent_find(fs, root, (uint32_t)(cpos & OCFS2_32BIT_POS_MASK), ptr, end);
	if (rc == -ENOENT) {
		fsd_corrupt(fs, root->blkno, "refcount tree without leaves");
		return -EIO;
	}
	if (rc != 0)
		return rc;
	if (*end > UINT32_MAX)
		*end = UINT64_MAX;
	return leaf_read(fs, root, ptr->pblk, bp);
}

/* A new leaf of the tree at root holding recs[0..n), its span from start. */
static int
leaf_new(struct fsd_handle *h, struct fsd_buf *root, uint64_t start, const struct rrec *recs,
    unsigned n, struct fsd_buf **bp)
{
	int rc;

	if ((rc = new_block(h, root->blkno, LE32(rb_of(root)->rf_generation), bp)) != 0)
		return rc;
	list_store(h->fs, rb_of(*bp), recs, n);
	rb_of(*bp)->rf_cpos = htole32((uint32_t)(start & OCFS2_32BIT_POS_MASK));
	journal_dirty(h, *bp);
	return 0;
}

/*
 * The records outgrew the root (accessed in h): they move into new leaves
 * filled to three quarters (room for splits later), and the root lists
 * them (ocfs2_expand_inline_ref_root).
 */
static int
root_expand(struct fsd_handle *h, struct fsd_buf *root, const struct rrec *recs, unsigned n)
{
	struct fsd *fs = h->fs;
	struct ocfs2_refcount_block *rb = rb_of(root);
	unsigned per = recs_per_block(fs), fill = per - per / 4, k, i, from, take;
	struct xrec *ptrs;
	struct fsd_buf *b;
	int rc = 0;

	k = (n + fill - 1) / fill;
	if ((ptrs = calloc(k, sizeof(*ptrs))) == NULL)
		return -ENOMEM;
	for (i = 0, from = 0; i < k && rc == 0; i++, from += take) {
		take = n / k + (i < n % k);
		if ((rc = leaf_new(h, root, i == 0 ? 0 : recs[from].cpos, recs + from, take,
		    &b)) == 0) {
			ptrs[i] = (struct xrec){ LE32(rb_of(b)->rf_cpos), 1, b->blkno, 0 };
			block_put(fs, b);
		}
	}
	if (rc == 0) {
		memset(&rb->rf_list, 0, fs->vol.block_bytes - offsetof(struct ocfs2_refcount_block,
		    rf_list));
		rb->rf_flags = htole32(OCFS2_REFCOUNT_TREE_FL);
		rb->rf_last_eb_blk = 0;
		rb->rf_clusters = htole32(k);
		rb->rf_list.l_count = htole16((uint16_t)ocfs2_extent_recs_per_rb(
		    (int)fs->vol.block_bytes));
		rc = extent_replace(h, root, ptrs, k);
	}
	free(ptrs);
	return rc;
}

/*
 * A leaf's records outgrew it: the upper half moves into a new leaf that
 * joins the root's tree (ocfs2_new_leaf_refcount_block). leaf is accessed in h.
 */
static int
leaf_split(struct fsd_handle *h, struct fsd_buf *root, struct fsd_buf *leaf,
    const struct rrec *recs, unsigned n)
{
	unsigned half = n / 2;
	struct fsd_buf *b;
	int rc;

	if ((rc = leaf_new(h, root, recs[half].cpos, recs + half, n - half, &b)) != 0)
		return rc;
	list_store(h->fs, rb_of(leaf), recs, half);
	journal_dirty(h, leaf);
	rc = extent_insert(h, root, LE32(rb_of(b)->rf_cpos), 1, b->blkno, 0);
	block_put(h->fs, b);
	return rc;
}

/*
 * A leaf lost its last record: it leaves the tree and is freed
 * (ocfs2_remove_refcount_extent). The next leaf's span then starts at 0
 * when it becomes the first; with no leaf left the root holds records
 * again, none yet.
 */
static int
leaf_drop(struct fsd_handle *h, struct fsd_buf *root, struct fsd_buf *leaf,
    const struct xrec *ptr)
{
	struct fsd *fs = h->fs;
	struct ocfs2_refcount_block *rb = rb_of(root);
	struct fsd_buf *next;
	struct xrec first;
	uint64_t end;
	int rc;

	if ((rc = free_block(h, leaf)) != 0 || (rc = extent_remove(h, root, ptr->cpos, 1)) != 0)
		return rc;
	if (LE32(rb->rf_clusters) == 0) {
		rb->rf_flags = 0;
		rb->rf_last_eb_blk = 0;
		list_store(fs, rb, NULL, 0);
		journal_dirty(h, root);
		return 0;
	}
	if (ptr->cpos != 0)
		return 0;
	if ((rc = leaf_find(fs, root, 0, &first, &end, &next)) != 0)
		return rc;
	if ((rc = extent_remove(h, root, first.cpos, 1)) == 0 &&
	    (rc = extent_insert(h, root, 0, 1, first.pblk, 0)) == 0 &&
	    (rc = journal_access(h, next)) == 0) {
		rb_of(next)->rf_cpos = 0;
		journal_dirty(h, next);
	}
	block_put(fs, next);
	return rc;
}

/*
 * Add delta to the counts of [cpos, cpos+len) in a tree, leaf by leaf
 * along the range; dry: only gather the runs reaching zero into z.
 */
static int
leaves_change(struct fsd_handle *h, struct fsd_buf *root, uint64_t cpos, uint64_t len, int delta,
    struct zeroed *z, int dry)
{
	struct fsd *fs = h->fs;
	unsigned n, per = recs_per_block(fs);
	struct rrec *in = NULL, *out = NULL;
	struct fsd_buf *leaf;
	uint64_t end, piece;
	struct xrec ptr;
	int m, rc = 0;

	if ((in = calloc(per, sizeof(*in))) == NULL ||
	    (out = calloc(4 * per + 4, sizeof(*out))) == NULL) {
		free(in);
		return -ENOMEM;
	}
	while (len > 0 && rc == 0) {
		if ((rc = leaf_find(fs, root, cpos, &ptr, &end, &leaf)) != 0)
			break;
		piece = cpos + len <= end ? len : end - cpos;
		n = list_records(rb_of(leaf), in);
		if (z != NULL && (rc = zeroed_reserve(z, n + 1)) != 0)
			goto next;
		if ((m = rapply(in, n, cpos, piece, delta, out, z)) < 0) {
			rc = m;
			goto next;
		}
		if (dry)
			goto next;
		if (m == 0)
			rc = leaf_drop(h, root, leaf, &ptr);
		else if ((rc = journal_access(h, leaf)) != 0)
			goto next;
		else if ((unsigned)m <= per) {
			list_store(fs, rb_of(leaf), out, (unsigned)m);
			journal_dirty(h, leaf);
		} else
			rc = leaf_split(h, root, leaf, out, (unsigned)m);
next:
		block_put(fs, leaf);
		cpos += piece;
		len -= piece;
	}
	free(in);
	free(out);
	return rc;
}

/*
 * Add delta to the counts of physical clusters [cpos, cpos+len) of the
 * tree at root (locked, accessed in h). z: where the runs that reached
 * zero go (or NULL); more of them than z->room: -EAGAIN, nothing changed.
 */
static int
tree_change(struct fsd_handle *h, struct fsd_buf *root, uint64_t cpos, uint64_t len, int delta,
    struct zeroed *z)
{
	struct fsd *fs = h->fs;
	unsigned n, per = recs_per_block(fs);
	struct rrec *in = NULL, *out = NULL;
	char why[128];
	int m, rc;

	if (is_tree(rb_of(root))) {
		if (z != NULL) {
			/* all or nothing: count the runs a change would free first */
			rc = leaves_change(h, root, cpos, len, delta, z, 1);
			if (rc == 0 && z->n > z->room)
				rc = -EAGAIN;
			z->n = 0;
			if (rc != 0)
				goto done;
		}
		rc = leaves_change(h, root, cpos, len, delta, z, 0);
		goto done;
	}
	if ((in = calloc(per, sizeof(*in))) == NULL ||
	    (out = calloc(4 * per + 4, sizeof(*out))) == NULL ||
	    (z != NULL && zeroed_reserve(z, per + 1) != 0)) {
		rc = -ENOMEM;
		goto out;
	}
	n = list_records(rb_of(root), in);
	if ((m = rapply(in, n, cpos, len, delta, out, z)) < 0) {
		rc = m;
		goto done;
	}
	if (z != NULL && z->n > z->room)
		rc = -EAGAIN;
	else if ((rc = journal_access(h, root)) != 0)
		goto out;
	else if ((unsigned)m <= per) {
		list_store(fs, rb_of(root), out, (unsigned)m);
		journal_dirty(h, root);
	} else
		rc = root_expand(h, root, out, (unsigned)m);
	goto out;
done:
	if (rc == -ENOENT) {
		snprintf(why, sizeof(why), "refcount tree has no record for shared clusters "
		    "%llu..%llu", (unsigned long long)cpos, (unsigned long long)(cpos + len - 1));
		fsd_corrupt(fs, root->blkno, why);
		rc = -EIO;
	}
out:
	free(in);
	free(out);
	return rc;
}

/* ---- what the rest of fsd asks ----------------------------------------------- */

int
refcount_lookup(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t max,
    uint32_t *count, uint32_t *run)
{
	struct fsd *fs = h->fs;
	struct fsd_buf *root, *leaf = NULL, *where;
	const struct ocfs2_refcount_rec *r;
	uint64_t end = UINT64_MAX, rs, re;
	struct xrec ptr;
	unsigned i, n;
	int rc;

	if ((rc = inode_root(h, ib, &root)) != 0)
		return rc;
	where = root;
	if (is_tree(rb_of(root))) {
		if ((rc = leaf_find(fs, root, cpos, &ptr, &end, &leaf)) != 0)
			goto out;
		where = leaf;
	}
	*count = 0;
	*run = cpos + max <= end ? max : (uint32_t)(end - cpos);
	n = LE16(rb_of(where)->rf_records.rl_used);
	for (i = 0; i < n; i++) {
		r = &rb_of(where)->rf_records.rl_recs[i];
		rs = LE64(r->r_cpos);
		re = rs + LE32(r->r_clusters);
		if (re <= cpos)
			continue;
		if (rs > cpos) {
			if (rs - cpos < *run)
				*run = (uint32_t)(rs - cpos);
			break;
		}
		*count = LE32(r->r_refcount);
		if (re - cpos < *run)
			*run = (uint32_t)(re - cpos);
		break;
	}
out:
	if (leaf != NULL)
		block_put(fs, leaf);
	block_put(fs, root);
	return rc;
}

int
refcount_increase(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t len)
{
	struct fsd_buf *root;
	int rc;

	if ((rc = inode_root(h, ib, &root)) != 0)
		return rc;
	rc = tree_change(h, root, cpos, len, 1, NULL);
	block_put(h->fs, root);
	return rc;
}

int
refcount_decrease(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t len,
    int free_at_zero)
{
	struct fsd *fs = h->fs;
	struct zeroed z = { NULL, 0, 0, 0 };
	struct fsd_buf *root;
	unsigned i;
	int rc, room;

	if ((rc = inode_root(h, ib, &root)) != 0)
		return rc;
	/*
	 * Freed clusters wait in the truncate log until this commits; when it
	 * cannot hold them all, nothing changes (-EAGAIN) and the caller
	 * flushes it.
	 */
	room = free_at_zero ? tl_room(fs) : 0;
	z.room = room > 0 ? (unsigned)room : 0;
	rc = tree_change(h, root, cpos, len, -1, free_at_zero ? &z : NULL);
	for (i = 0; rc == 0 && i < z.n; i++)
		rc = tl_append(h, (uint32_t)z.runs[i].cpos, (unsigned)z.runs[i].len);
	free(z.runs);
	block_put(fs, root);
	return rc;
}

int
refcount_tree_of(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd *fs = h->fs;
	struct fsd_lockres *lr;
	struct fsd_buf *b;
	uint32_t gen;
	int rc;

	if (LE16(di->i_dyn_features) & OCFS2_HAS_REFCOUNT_FL)
		return 0;
	/* ocfs2_create_refcount_tree: an empty root counting this inode */
	gen = fsd_new_generation();
	if ((rc = new_block(h, 0, gen, &b)) != 0)
		return rc;
	rb_of(b)->rf_count = htole32(1);
	journal_dirty(h, b);
	lr = lockres_get(fs, FSD_LOCK_REFCOUNT, b->blkno, gen, b->blkno);
	rc = handle_lock(h, lr);
	lockres_put(fs, lr);
	if (rc == 0 && (rc = journal_access(h, ib)) == 0) {
		di->i_refcount_loc = htole64(b->blkno);
		di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_HAS_REFCOUNT_FL);
		journal_dirty(h, ib);
	}
	block_put(fs, b);
	return rc;
}

int
refcount_join(struct fsd_handle *h, struct fsd_buf *dst, const struct fsd_buf *src)
{
	const struct ocfs2_dinode *sdi = (const struct ocfs2_dinode *)src->data;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dst->data;
	struct fsd_buf *root;
	int rc;

	if (LE16(di->i_dyn_features) & OCFS2_HAS_REFCOUNT_FL)
		return di->i_refcount_loc == sdi->i_refcount_loc ? 0 : -EXDEV;
	if ((rc = root_lock(h, LE64(sdi->i_refcount_loc), &root)) != 0)
		return rc;
	if ((rc = journal_access(h, root)) == 0 && (rc = journal_access(h, dst)) == 0) {
		rb_of(root)->rf_count = htole32(LE32(rb_of(root)->rf_count) + 1);
		journal_dirty(h, root);
		di->i_refcount_loc = sdi->i_refcount_loc;
		di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_HAS_REFCOUNT_FL);
		journal_dirty(h, dst);
	}
	block_put(h->fs, root);
	return rc;
}

/* Free every leaf of the tree at root and the extent blocks listing them. */
static int
free_leaves(struct fsd_handle *h, struct fsd_buf *root)
{
	struct xrec *ptrs = NULL;
	struct fsd_buf *leaf;
	unsigned i, n;
	int rc;

	if ((rc = extent_records(h->fs, root, &ptrs, &n)) != 0)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		if ((rc = leaf_read(h->fs, root, ptrs[i].pblk, &leaf)) == 0) {
			rc = free_block(h, leaf);
			block_put(h->fs, leaf);
		}
	}
	free(ptrs);
	return rc != 0 ? rc : extent_replace(h, root, NULL, 0);
}

int
refcount_leave(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct ocfs2_refcount_block *rb;
	struct fsd_buf *root;
	int rc;

	if (!(LE16(di->i_dyn_features) & OCFS2_HAS_REFCOUNT_FL))
		return 0;
	if ((rc = inode_root(h, ib, &root)) != 0)
		return rc;
	rb = rb_of(root);
	if ((rc = journal_access(h, root)) != 0 || (rc = journal_access(h, ib)) != 0)
		goto out;
	rb->rf_count = htole32(LE32(rb->rf_count) - 1);
	journal_dirty(h, root);
	/* ocfs2_remove_refcount_tree: the last inode takes the tree with it */
	if (rb->rf_count == 0) {
		if (is_tree(rb))
			log_warnx("block %llu: refcount tree freed with %u leaves left",
			    (unsigned long long)root->blkno, LE32(rb->rf_clusters));
		else if (LE16(rb->rf_records.rl_used) != 0)
			log_warnx("block %llu: refcount tree freed with %u records left",
			    (unsigned long long)root->blkno, LE16(rb->rf_records.rl_used));
		if (is_tree(rb))
			rc = free_leaves(h, root);
		if (rc == 0)
			rc = free_block(h, root);
	}
	di->i_refcount_loc = 0;
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_HAS_REFCOUNT_FL);
	journal_dirty(h, ib);
out:
	block_put(h->fs, root);
	return rc;
}
