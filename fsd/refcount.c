/*
 * Refcount trees (doc/refcount.md): how many files map each shared
 * physical cluster. An inode with OCFS2_HAS_REFCOUNT_FL points at its
 * tree's root block (i_refcount_loc); the root counts the inodes that
 * point at it (rf_count) and holds the records itself until they
 * outgrow it. Then, as fs/ocfs2/refcounttree.c's
 * ocfs2_expand_inline_ref_root, the records move into leaf blocks and
 * the root keeps an extent list with one record per leaf (e_cpos the low
 * 32 bits of the leaf's first cluster, the first leaf's 0; one "cluster"
 * each, rf_clusters their number). Every refcount block comes from the
 * slot's extent allocator.
 *
 * A change is one edit of the sorted records over a range of physical
 * clusters: made inside the leaf whose span holds the range when the
 * result fits there, and otherwise by laying all the records out again
 * in new leaves (new blocks first, the old ones freed after), as
 * extent.c rebuilds extent trees. All of it under the tree's 'T' cluster
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
	unsigned	 n, room;
};

/* Room for cap runs in z, emptied. */
static int
zeroed_room(struct zeroed *z, unsigned cap)
{
	free(z->runs);
	z->n = 0;
	return (z->runs = calloc(cap, sizeof(*z->runs))) == NULL ? -ENOMEM : 0;
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

/* Leaf i of a tree root: read and checked to belong to it. */
static int
leaf_read(struct fsd *fs, struct fsd_buf *root, unsigned i, struct fsd_buf **bp)
{
	const struct ocfs2_extent_rec *er = &rb_of(root)->rf_list.l_recs[i];
	int rc;

	if ((rc = block_read_owned(fs, LE64(er->e_blkno), BLK_REFCOUNT, root->blkno, bp)) != 0)
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
 * Which leaf's span holds cpos: the last record starting at or before it
 * (the first leaf's starts at 0). *end: where its span ends.
 */
static int
leaf_index(struct fsd *fs, struct fsd_buf *root, uint64_t cpos, unsigned *idx, uint64_t *end)
{
	const struct ocfs2_extent_list *el = &rb_of(root)->rf_list;
	unsigned k, n = LE16(el->l_next_free_rec);

	if (n == 0) {
		fsd_corrupt(fs, root->blkno, "refcount tree without leaves");
		return -EIO;
	}
	if (LE16(el->l_tree_depth) != 0) {
		/* the kernel grows the root's list into extent blocks past ~250 leaves */
		log_warnx("block %llu: refcount tree of depth %u: fsd changes only trees "
		    "whose root lists their leaves", (unsigned long long)root->blkno,
		    LE16(el->l_tree_depth));
		return -EOPNOTSUPP;
	}
	for (k = 0; k + 1 < n && LE32(el->l_recs[k + 1].e_cpos) <= (cpos & OCFS2_32BIT_POS_MASK);
	    k++)
		;
	*idx = k;
	*end = k + 1 < n ? LE32(el->l_recs[k + 1].e_cpos) : UINT64_MAX;
	return 0;
}

/* Every record of the tree, in order, into *recs (malloc'ed). */
static int
collect(struct fsd *fs, struct fsd_buf *root, struct rrec **recs, unsigned *n)
{
	const struct ocfs2_extent_list *el = &rb_of(root)->rf_list;
	unsigned i, nl, per = recs_per_block(fs);
	struct fsd_buf *b;
	uint64_t end;
	int rc;

	if (!is_tree(rb_of(root))) {
		if ((*recs = calloc(per, sizeof(**recs))) == NULL)
			return -ENOMEM;
		*n = list_records(rb_of(root), *recs);
		return 0;
	}
	if ((rc = leaf_index(fs, root, 0, &i, &end)) != 0)
		return rc;
	nl = LE16(el->l_next_free_rec);
	if ((*recs = calloc((size_t)nl * per, sizeof(**recs))) == NULL)
		return -ENOMEM;
	*n = 0;
	for (i = 0; i < nl; i++) {
		if ((rc = leaf_read(fs, root, i, &b)) != 0) {
			free(*recs);
			return rc;
		}
		*n += list_records(rb_of(b), *recs + *n);
		block_put(fs, b);
	}
	return 0;
}

/*
 * Lay recs[0..n) out anew: in the root when they fit, else in new leaves
 * filled to three quarters (room for splits without another rebuild);
 * the old leaves are freed after. root is accessed in h.
 */
static int
rebuild(struct fsd_handle *h, struct fsd_buf *root, const struct rrec *recs, unsigned n)
{
	struct fsd *fs = h->fs;
	struct ocfs2_refcount_block *rb = rb_of(root);
	unsigned per = recs_per_block(fs), fill = per - per / 4, maxleaves, k, i, from, take;
	unsigned oldn = is_tree(rb) ? LE16(rb->rf_list.l_next_free_rec) : 0;
	struct fsd_buf **old = NULL, **nb = NULL;
	struct ocfs2_extent_rec *er;
	int rc = 0;

	maxleaves = (unsigned)ocfs2_extent_recs_per_rb((int)fs->vol.block_bytes);
	k = n <= per ? 0 : (n + fill - 1) / fill;
	if (k > maxleaves) {
		log_warnx("block %llu: refcount tree would need %u leaves, more than its root "
		    "lists", (unsigned long long)root->blkno, k);
		return -ENOSPC;
	}
	if ((old = calloc(oldn + 1, sizeof(*old))) == NULL ||
	    (nb = calloc(k + 1, sizeof(*nb))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < oldn; i++)
		if ((rc = leaf_read(fs, root, i, &old[i])) != 0)
			goto out;
	for (i = 0, from = 0; i < k; i++, from += take) {
		take = n / k + (i < n % k);
		if ((rc = new_block(h, root->blkno, LE32(rb->rf_generation), &nb[i])) != 0)
			goto out;
		list_store(fs, rb_of(nb[i]), recs + from, take);
		rb_of(nb[i])->rf_cpos = htole32(i == 0 ? 0 : (uint32_t)recs[from].cpos);
		journal_dirty(h, nb[i]);
	}
	if (k == 0) {
		rb->rf_flags = 0;
		rb->rf_clusters = 0;
		rb->rf_last_eb_blk = 0;
		list_store(fs, rb, recs, n);
	} else {
		memset(&rb->rf_list, 0, fs->vol.block_bytes - offsetof(struct ocfs2_refcount_block,
		    rf_list));
		rb->rf_flags = htole32(OCFS2_REFCOUNT_TREE_FL);
		rb->rf_clusters = htole32(k);
		rb->rf_last_eb_blk = 0;
		rb->rf_list.l_count = htole16((uint16_t)maxleaves);
		rb->rf_list.l_next_free_rec = htole16((uint16_t)k);
		for (i = 0; i < k; i++) {
			er = &rb->rf_list.l_recs[i];
			er->e_cpos = rb_of(nb[i])->rf_cpos;
			er->e_leaf_clusters = htole16(1);
			er->e_blkno = htole64(nb[i]->blkno);
		}
	}
	journal_dirty(h, root);
	for (i = 0; i < oldn && rc == 0; i++)
		rc = free_block(h, old[i]);
out:
	for (i = 0; old != NULL && i < oldn; i++)
		if (old[i] != NULL)
			block_put(fs, old[i]);
	for (i = 0; nb != NULL && i < k; i++)
		if (nb[i] != NULL)
			block_put(fs, nb[i]);
	free(old);
	free(nb);
	return rc;
}

/*
 * Add delta to the counts of physical clusters [cpos, cpos+len) of the
 * tree at root (locked, accessed in h). z: where the runs that reached
 * zero go (or NULL).
 */
static int
tree_change(struct fsd_handle *h, struct fsd_buf *root, uint64_t cpos, uint64_t len, int delta,
    struct zeroed *z)
{
	struct fsd *fs = h->fs;
	struct fsd_buf *leaf = NULL, *where = root;
	struct rrec *in = NULL, *out = NULL;
	unsigned n, idx, per = recs_per_block(fs);
	uint64_t end = UINT64_MAX;
	char why[128];
	int m, rc;

	if ((in = calloc(per, sizeof(*in))) == NULL ||
	    (out = calloc(4 * per + 4, sizeof(*out))) == NULL ||
	    (z != NULL && (rc = zeroed_room(z, 4 * per + 4)) != 0)) {
		rc = -ENOMEM;
		goto out;
	}
	if (is_tree(rb_of(root))) {
		if ((rc = leaf_index(fs, root, cpos, &idx, &end)) != 0 ||
		    (rc = leaf_read(fs, root, idx, &leaf)) != 0)
			goto out;
		where = leaf;
	}
	n = list_records(rb_of(where), in);
	if (cpos + len <= end) {
		/* the whole range lies in this block's span: edit it in place if it fits */
		m = rapply(in, n, cpos, len, delta, out, z);
		if (m < 0)
			goto missing;
		if (z != NULL && z->n > z->room) {
			rc = -EAGAIN;
			goto out;
		}
		if ((unsigned)m <= per && (m > 0 || where == root)) {
			if ((rc = journal_access(h, where)) != 0)
				goto out;
			list_store(fs, rb_of(where), out, (unsigned)m);
			journal_dirty(h, where);
			rc = 0;
			goto out;
		}
	}
	free(in);
	free(out);
	in = out = NULL;
	if ((rc = collect(fs, root, &in, &n)) != 0)
		goto out;
	if ((out = calloc(4 * (size_t)n + 4, sizeof(*out))) == NULL ||
	    (z != NULL && zeroed_room(z, 4 * n + 4) != 0)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((m = rapply(in, n, cpos, len, delta, out, z)) < 0)
		goto missing;
	rc = z != NULL && z->n > z->room ? -EAGAIN : rebuild(h, root, out, (unsigned)m);
	goto out;
missing:
	snprintf(why, sizeof(why), "refcount tree has no record for shared clusters %llu..%llu",
	    (unsigned long long)cpos, (unsigned long long)(cpos + len - 1));
	fsd_corrupt(fs, root->blkno, why);
	rc = -EIO;
out:
	if (leaf != NULL)
		block_put(fs, leaf);
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
	unsigned i, idx, n;
	int rc;

	if ((rc = inode_root(h, ib, &root)) != 0)
		return rc;
	where = root;
	if (is_tree(rb_of(root))) {
		if ((rc = leaf_index(fs, root, cpos, &idx, &end)) != 0 ||
		    (rc = leaf_read(fs, root, idx, &leaf)) != 0)
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
	struct zeroed z = { NULL, 0, 0 };
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

int
refcount_leave(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd *fs = h->fs;
	struct ocfs2_refcount_block *rb;
	struct fsd_buf *root, *leaf;
	unsigned i, n;
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
		n = is_tree(rb) ? LE16(rb->rf_list.l_next_free_rec) : LE16(rb->rf_records.rl_used);
		if (n != 0 && !is_tree(rb))
			log_warnx("block %llu: refcount tree freed with %u records left",
			    (unsigned long long)root->blkno, n);
		for (i = 0; is_tree(rb) && i < n && rc == 0; i++) {
			if ((rc = leaf_read(fs, root, i, &leaf)) == 0) {
				rc = free_block(h, leaf);
				block_put(fs, leaf);
			}
		}
		if (rc == 0)
			rc = free_block(h, root);
	}
	di->i_refcount_loc = 0;
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_HAS_REFCOUNT_FL);
	journal_dirty(h, ib);
out:
	block_put(fs, root);
	return rc;
}
