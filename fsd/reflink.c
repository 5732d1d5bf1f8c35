/*
 * Shared extents (doc/refcount.md). copy_file_range(2) between two files
 * of the volume shares the source's clusters instead of copying them:
 * both files map them with OCFS2_EXT_REFCOUNTED and the refcount tree
 * they share counts the files mapping each one (ocfs2_reflink's
 * ocfs2_attach_refcount_tree and ocfs2_duplicate_extent_to_target). A
 * write, a size change or a fallocate(2) into a shared cluster makes it
 * the file's own first (ocfs2_refcount_cow): a copy into new clusters
 * when others still map it, or, for the last file, the flag cleared and
 * the record dropped (ocfs2_clear_ext_refcount). Removing a shared
 * cluster from a file takes a reference away; the last one frees it
 * (extent.c, release_clusters).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

/*
 * A handle shares at most this many runs, and stops taking more once it
 * has changed this many blocks: each run may rebuild the refcount tree
 * into new blocks, and a transaction must fit the journal.
 */
#define RUNS_PER_HANDLE		64
#define BLOCKS_PER_HANDLE	256

static unsigned
c2b(const struct fsd *fs)
{
	return fs->cbits - fs->bbits;
}

static int
has_tree(const struct ocfs2_dinode *di)
{
	return (LE16(di->i_dyn_features) & OCFS2_HAS_REFCOUNT_FL) != 0;
}

/* Copy n clusters from physical cluster from to physical cluster to. */
static int
copy_clusters(struct fsd *fs, uint64_t from, uint64_t to, uint32_t n)
{
	uint64_t left = (uint64_t)n << c2b(fs), src = from << c2b(fs), dst = to << c2b(fs), k;
	uint64_t chunk = (1u << 20) >> fs->bbits;
	uint8_t *buf;
	int rc = 0;

	if (chunk == 0)
		chunk = 1;
	if ((buf = io_alloc(chunk << fs->bbits)) == NULL)
		return -ENOMEM;
	while (left > 0 && rc == 0) {
		k = left < chunk ? left : chunk;
		if ((rc = block_io(fs, 0, src, (unsigned)k, buf)) == 0)
			rc = block_io(fs, 1, dst, (unsigned)k, buf);
		src += k;
		dst += k;
		left -= k;
	}
	free(buf);
	return rc;
}

/* The run of clusters from cpos that one extent record maps (or a hole), at most max. */
static int
cluster_run(struct fsd *fs, const struct ocfs2_dinode *di, uint32_t cpos, uint64_t max,
    struct fsd_extent *ex, uint32_t *n)
{
	uint64_t k;
	int rc;

	rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, (uint64_t)cpos << c2b(fs), ex);
	if (rc != 0)
		return rc;
	k = ex->nblocks >> c2b(fs);
	if (k == 0) {
		fsd_corrupt(fs, LE64(di->i_blkno), "extent run of no cluster");
		return -EIO;
	}
	*n = (uint32_t)(k < max ? k : max);
	return 0;
}

int
reflink_cow(struct fsd_handle *h, struct fsd_buf *ib, uint64_t from, uint64_t to)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t cend = (to + fs->vol.cluster_bytes - 1) >> fs->cbits, p;
	uint32_t c = (uint32_t)(from >> fs->cbits), n, count, run, start;
	struct fsd_extent ex;
	uint8_t flags;
	unsigned got;
	char why[96];
	int rc;

	if (from >= to || !has_tree(di) || inline_has(di))
		return 0;
	if (cend > UINT32_MAX)
		cend = UINT32_MAX;
	while (c < cend) {
		if ((rc = cluster_run(fs, di, c, cend - c, &ex, &n)) != 0)
			return rc;
		if (ex.pblk == 0 || !ex.refcounted) {
			c += n;
			continue;
		}
		p = ex.pblk >> c2b(fs);
		if ((rc = refcount_lookup(h, ib, p, n, &count, &run)) != 0)
			return rc;
		if (count == 0) {
			snprintf(why, sizeof(why), "shared cluster %llu has no refcount record",
			    (unsigned long long)p);
			fsd_corrupt(fs, ib->blkno, why);
			return -EIO;
		}
		flags = ex.unwritten ? OCFS2_EXT_UNWRITTEN : 0;
		if (count == 1) {
			/* nobody else maps them any more: they are the file's own */
			if ((rc = extent_set_flags(h, ib, c, run, flags)) != 0 ||
			    (rc = refcount_decrease(h, ib, p, run, 0)) != 0)
				return rc;
		} else {
			if ((rc = la_claim(h, (uint32_t)(p + run), 1, run, &start, &got)) != 0)
				return rc;
			run = got;
			/* the copy is on disk before the commit that maps it (ordered) */
			if (!ex.unwritten && (rc = copy_clusters(fs, p, start, run)) != 0)
				return rc;
			if ((rc = extent_remap(h, ib, c, run, (uint64_t)start << c2b(fs),
			    flags)) != 0 ||
			    (rc = refcount_decrease(h, ib, p, run, 1)) != 0)
				return rc;
		}
		c += run;
	}
	return 0;
}

/* Physical runs a file maps with the REFCOUNTED flag. */
struct pruns {
	struct { uint64_t start; uint32_t len; } *v;
	unsigned	 n, cap;
};

static int
shared_runs(struct fsd *fs, const struct ocfs2_dinode *di, struct pruns *pr)
{
	struct fsd_extent ex;
	uint64_t cpos = 0;
	uint32_t n;
	void *nv;
	int rc;

	while (cpos < UINT32_MAX) {
		if ((rc = cluster_run(fs, di, (uint32_t)cpos, UINT32_MAX - cpos, &ex, &n)) != 0)
			return rc;
		if (ex.pblk != 0 && ex.refcounted) {
			if (pr->n == pr->cap) {
				pr->cap = pr->cap ? 2 * pr->cap : 64;
				if ((nv = realloc(pr->v, pr->cap * sizeof(*pr->v))) == NULL)
					return -ENOMEM;
				pr->v = nv;
			}
			pr->v[pr->n].start = ex.pblk >> c2b(fs);
			pr->v[pr->n++].len = n;
		}
		cpos += n;
	}
	return 0;
}

static int
overlaps(const struct pruns *pr, uint64_t p, uint32_t n)
{
	unsigned i;

	for (i = 0; i < pr->n; i++)
		if (pr->v[i].start < p + n && p < pr->v[i].start + pr->v[i].len)
			return 1;
	return 0;
}

/* The bytes of the source to share and the clusters they span. */
struct share {
	uint32_t	 cin, cout, nc;	/* src clusters [cin, cin+nc) to dst at cout */
	uint64_t	 end_out;		/* dst's size at least this once shared */
};

/*
 * One handle's worth of sharing: from src cluster *at on, at most
 * RUNS_PER_HANDLE runs; *at moves past what is done. *stop is set where
 * a copy must do instead (dst has data where the range goes, written
 * meanwhile, or maps some of those clusters already); -EAGAIN when it
 * cannot share at all (inline data, another tree).
 */
static int
share_step(struct fsd *fs, struct fsd_inode *src, struct fsd_inode *dst, const struct share *s,
    uint32_t *at, int *stop)
{
	struct fsd_inode *first = src->blkno < dst->blkno ? src : dst;
	struct fsd_inode *second = first == src ? dst : src;
	struct fsd_buf *b1 = NULL, *b2 = NULL, *sb, *db;
	struct ocfs2_dinode *sdi, *ddi;
	uint32_t end = s->cin + s->nc, cur = *at, n, dn, out;
	struct pruns held = { NULL, 0, 0 };
	struct fsd_extent ex, dex;
	struct fsd_handle h;
	unsigned runs = 0;
	uint64_t p, size;
	uint8_t flags;
	int rc;

	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	/* two inodes: in block order, as every node takes them */
	if ((rc = inode_lock_block(fs, first, LKM_EX, &b1)) != 0)
		goto out;
	if ((rc = inode_lock_block(fs, second, LKM_EX, &b2)) != 0)
		goto out;
	sb = first == src ? b1 : b2;
	db = first == src ? b2 : b1;
	sdi = (struct ocfs2_dinode *)sb->data;
	ddi = (struct ocfs2_dinode *)db->data;
	if (inline_has(sdi) || inline_has(ddi) || !S_ISREG(LE16(sdi->i_mode)) ||
	    !S_ISREG(LE16(ddi->i_mode))) {
		rc = -EAGAIN;
		goto out;
	}
	if ((rc = journal_access(&h, sb)) != 0 || (rc = journal_access(&h, db)) != 0 ||
	    (rc = refcount_tree_of(&h, sb)) != 0)
		goto out;
	/*
	 * A file maps a cluster once at most (fsck.ocfs2 counts files per
	 * cluster): what dst shares already of this tree stays out.
	 */
	if (has_tree(ddi) && (rc = shared_runs(fs, ddi, &held)) != 0)
		goto out;
	if ((rc = refcount_join(&h, db, sb)) != 0) {
		rc = rc == -EXDEV ? -EAGAIN : rc;
		goto out;
	}
	for (cur = *at; cur < end && runs < RUNS_PER_HANDLE && h.nundo < BLOCKS_PER_HANDLE;
	    cur += n) {
		if ((rc = cluster_run(fs, sdi, cur, end - cur, &ex, &n)) != 0)
			goto out;
		out = s->cout + (cur - s->cin);
		if ((rc = cluster_run(fs, ddi, out, n, &dex, &dn)) != 0)
			goto out;
		n = dn;
		if (dex.pblk != 0 || (ex.pblk != 0 && overlaps(&held, ex.pblk >> c2b(fs), n))) {
			*stop = 1;
			break;
		}
		if (ex.pblk != 0) {
			p = ex.pblk >> c2b(fs);
			flags = (ex.unwritten ? OCFS2_EXT_UNWRITTEN : 0) | OCFS2_EXT_REFCOUNTED;
			/* the source's own reference first, when it had none */
			if (!ex.refcounted &&
			    ((rc = extent_set_flags(&h, sb, cur, n, flags)) != 0 ||
			    (rc = refcount_increase(&h, sb, p, n)) != 0))
				goto out;
			if ((rc = refcount_increase(&h, sb, p, n)) != 0 ||
			    (rc = extent_insert(&h, db, out, n, ex.pblk, flags)) != 0)
				goto out;
			runs++;
		}
	}
	/* dst's size covers what is shared so far: a short copy is a true one */
	size = cur == end ? s->end_out : (uint64_t)(s->cout + (cur - s->cin)) << fs->cbits;
	if (size > LE64(ddi->i_size))
		ddi->i_size = htole64(size);
	inode_now(ddi, 0, 1, 1);
	journal_dirty(&h, db);
	journal_dirty(&h, sb);
out:
	if (b2 != NULL)
		inode_unlock_block_in(&h, second, b2);
	if (b1 != NULL)
		inode_unlock_block_in(&h, first, b1);
	if ((rc = journal_stop(&h, rc != 0) ?: rc) == 0)
		*at = cur;
	free(held.v);
	return rc;
}

/*
 * One step of making room in dst (file_change_in_steps): what lies
 * between its size and the range reads as zeros, what it has where the
 * shared clusters go is dropped.
 */
static int
clear_step(struct fsd_handle *h, struct fsd_buf *ib, void *arg)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	const struct share *s = arg;
	uint64_t size = LE64(di->i_size), start = (uint64_t)s->cout << h->fs->cbits;
	int rc;

	if (start > size && ((rc = reflink_cow(h, ib, size, start)) != 0 ||
	    (rc = file_zero(h->fs, di, size, start)) != 0))
		return rc;
	rc = extent_punch(h, ib, s->cout, s->cout + s->nc);
	journal_dirty(h, ib);
	return rc;
}

/*
 * What can be shared: whole clusters at cluster-aligned offsets, or up to
 * the source's end when nothing of dst lies past the range. 0 and *s, 1
 * for nothing to do, -EOPNOTSUPP for a copy.
 */
static int
share_plan(struct fsd *fs, struct fsd_inode *src, uint64_t off_in, struct fsd_inode *dst,
    uint64_t off_out, uint64_t *len, struct share *s)
{
	uint64_t cs = fs->vol.cluster_bytes, ssize, dsize, cend;
	struct fsd_buf *b;
	int rc, inl, reg;

	if ((rc = inode_lock_block(fs, src, LKM_PR, &b)) != 0)
		return rc;
	ssize = LE64(((const struct ocfs2_dinode *)b->data)->i_size);
	inl = inline_has((const struct ocfs2_dinode *)b->data);
	reg = S_ISREG(LE16(((const struct ocfs2_dinode *)b->data)->i_mode));
	inode_unlock_block(fs, src, LKM_PR, b);
	if ((rc = inode_lock_block(fs, dst, LKM_PR, &b)) != 0)
		return rc;
	dsize = LE64(((const struct ocfs2_dinode *)b->data)->i_size);
	inl |= inline_has((const struct ocfs2_dinode *)b->data) && dsize > 0;
	reg &= S_ISREG(LE16(((const struct ocfs2_dinode *)b->data)->i_mode));
	inode_unlock_block(fs, dst, LKM_PR, b);
	/* the kernel sends regular files only (generic_copy_file_checks) */
	if (!reg)
		return -EINVAL;
	if (off_in >= ssize)
		return 1;
	if (*len > ssize - off_in)
		*len = ssize - off_in;
	if (inl || off_in % cs != 0 || off_out % cs != 0 ||
	    (*len % cs != 0 && (off_in + *len != ssize || off_out + *len < dsize)))
		return -EOPNOTSUPP;
	cend = (off_in + *len + cs - 1) / cs;
	if (cend > UINT32_MAX || (off_out + *len + cs - 1) / cs > UINT32_MAX)
		return -EFBIG;
	s->cin = (uint32_t)(off_in / cs);
	s->cout = (uint32_t)(off_out / cs);
	s->nc = (uint32_t)(cend - s->cin);
	s->end_out = off_out + *len;
	return 0;
}

int64_t
reflink_range(struct fsd *fs, struct fsd_inode *src, uint64_t off_in, struct fsd_inode *dst,
    uint64_t off_out, uint64_t len)
{
	struct fsd_inode *first = src->blkno < dst->blkno ? src : dst;
	struct fsd_inode *second = first == src ? dst : src;
	struct share s = { 0, 0, 0, 0 };
	uint32_t at = 0;
	int rc, stop = 0;

	/* one file cannot map a cluster twice (fsck.ocfs2 counts files per cluster) */
	if (!fs->refcount || src == dst || fs->readonly)
		return -EOPNOTSUPP;
	/* RW EX on both: no write lands in either between the handles */
	if ((rc = inode_rw_lock(fs, first, LKM_EX)) != 0)
		return rc;
	if ((rc = inode_rw_lock(fs, second, LKM_EX)) != 0) {
		inode_rw_unlock(fs, first, LKM_EX);
		return rc;
	}
	rc = share_plan(fs, src, off_in, dst, off_out, &len, &s);
	if (rc == 0 && (rc = inline_convert(fs, dst)) == 0)
		rc = file_change_in_steps(fs, dst, clear_step, &s);
	for (at = s.cin; rc == 0 && !stop && at < s.cin + s.nc;)
		rc = share_step(fs, src, dst, &s, &at, &stop);
	inode_rw_unlock(fs, second, LKM_EX);
	inode_rw_unlock(fs, first, LKM_EX);
	if (rc == 1)
		return 0;
	/* nothing shared: the kernel copies; some: a short copy, the caller goes on */
	if ((rc == -EAGAIN || rc == 0) && at == s.cin && s.nc > 0)
		return -EOPNOTSUPP;
	if (rc == -EAGAIN || (rc == 0 && at < s.cin + s.nc))
		return (int64_t)(((uint64_t)(at - s.cin)) << fs->cbits);
	return rc != 0 ? rc : (int64_t)len;
}
