/*
 * File space on sparse volumes (doc/sparse-unwritten.md): a write
 * allocates only the clusters it touches, a write into an unwritten
 * extent converts the clusters it touches, fallocate(2) reserves
 * unwritten extents, punches holes and zeroes ranges, and lseek(2) finds
 * data and holes. As in fs/ocfs2/aops.c (ocfs2_write_cluster), what a
 * write leaves of a cluster it allocates or converts is zeroed on disk
 * before the commit that maps the cluster as written: data first, then
 * metadata, so that a crash never exposes stale bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"

#include "fsd.h"

/* Block-number shift between clusters and blocks. */
static unsigned
c2b(const struct fsd *fs)
{
	return fs->cbits - fs->bbits;
}

/*
 * The run of whole clusters from cpos that extent_map() sees as one
 * (same kind, same extent), at most max clusters.
 */
static int
cluster_run(struct fsd *fs, const struct ocfs2_dinode *di, uint32_t cpos, uint64_t max,
    struct fsd_extent *ex, uint64_t *n)
{
	int rc;

	rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, (uint64_t)cpos << c2b(fs), ex);
	if (rc != 0)
		return rc;
	*n = ex->nblocks >> c2b(fs);
	if (*n > max)
		*n = max;
	if (*n == 0) {
		fsd_corrupt(fs, LE64(di->i_blkno), "extent run of no cluster");
		return -EIO;
	}
	return 0;
}

/* Where a new cluster for cpos should go: right after the one before it. */
static uint32_t
cluster_goal(struct fsd *fs, const struct ocfs2_dinode *di, uint32_t cpos)
{
	struct fsd_extent ex;

	if (cpos == 0 || extent_map(fs, LE64(di->i_blkno), &di->id2.i_list,
	    ((uint64_t)cpos << c2b(fs)) - 1, &ex) != 0 || ex.pblk == 0)
		return 0;
	return (uint32_t)((ex.pblk >> c2b(fs)) + 1);
}

/*
 * Zero the blocks of [lblk, lblk+nblk) (on disk at pblk) outside the
 * blocks [keep_from, keep_to) that the write fills whole.
 */
static int
zero_outside(struct fsd *fs, uint64_t lblk, uint64_t pblk, uint64_t nblk, uint64_t keep_from,
    uint64_t keep_to)
{
	uint64_t end = lblk + nblk, a, b;
	int rc;

	if (keep_from >= keep_to || keep_to <= lblk || keep_from >= end)
		return block_zero(fs, pblk, nblk);
	a = keep_from > lblk ? keep_from : lblk;
	b = keep_to < end ? keep_to : end;
	if (a > lblk && (rc = block_zero(fs, pblk, a - lblk)) != 0)
		return rc;
	if (b < end && (rc = block_zero(fs, pblk + (b - lblk), end - b)) != 0)
		return rc;
	return 0;
}

int
sparse_prepare_write(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, size_t len)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	unsigned bs = fs->vol.block_bytes;
	uint64_t end = off + len, last = (end - 1) >> fs->cbits, n, pblk;
	uint64_t keep_from = (off + bs - 1) >> fs->bbits, keep_to = end >> fs->bbits;
	struct fsd_extent ex;
	uint32_t cpos = (uint32_t)(off >> fs->cbits), start;
	unsigned got;
	int rc;

	if (last >= UINT32_MAX)
		return -EFBIG;
	while (cpos <= last) {
		if ((rc = cluster_run(fs, di, cpos, last + 1 - cpos, &ex, &n)) != 0)
			return rc;
		if (ex.pblk != 0 && !ex.unwritten) {
			cpos += (uint32_t)n;
			continue;
		}
		if (ex.pblk == 0) {
			rc = la_claim(h, cluster_goal(fs, di, cpos), 1,
			    (unsigned)(n > 65535 ? 65535 : n), &start, &got);
			if (rc != 0)
				return rc;
			n = got;
			pblk = (uint64_t)start << c2b(fs);
			rc = extent_insert(h, ib, cpos, (uint32_t)n, pblk, 0);
		} else {
			pblk = ex.pblk;
			rc = extent_set_flags(h, ib, cpos, (uint32_t)n, 0);
		}
		if (rc != 0)
			return rc;
		/* the rest of these clusters reads as zeros once they count as written */
		rc = zero_outside(fs, (uint64_t)cpos << c2b(fs), pblk, n << c2b(fs), keep_from,
		    keep_to);
		if (rc != 0)
			return rc;
		cpos += (uint32_t)n;
	}
	return 0;
}

int
sparse_range_written(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off, size_t len)
{
	uint64_t lblk = off >> fs->bbits, last = (off + len - 1) >> fs->bbits;
	struct fsd_extent ex;

	while (lblk <= last) {
		if (extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex) != 0 ||
		    ex.pblk == 0 || ex.unwritten || ex.refcounted || ex.nblocks == 0)
			return 0;
		lblk += ex.nblocks;
	}
	return 1;
}

/* Reserve unwritten extents over the holes among clusters [cpos, cend). */
static int
alloc_unwritten(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t cend)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd_extent ex;
	uint32_t start;
	unsigned got;
	uint64_t n;
	int rc;

	while (cpos < cend) {
		if ((rc = cluster_run(fs, di, cpos, cend - cpos, &ex, &n)) != 0)
			return rc;
		if (ex.pblk != 0) {
			cpos += (uint32_t)n;
			continue;
		}
		rc = la_claim(h, cluster_goal(fs, di, cpos), 1, (unsigned)(n > 65535 ? 65535 : n),
		    &start, &got);
		if (rc != 0 || (rc = extent_insert(h, ib, cpos, got,
		    (uint64_t)start << c2b(fs), OCFS2_EXT_UNWRITTEN)) != 0)
			return rc;
		cpos += got;
	}
	return 0;
}

/* Mark the written clusters among [cpos, cend) unwritten: they read as zeros. */
static int
unwrite_clusters(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t cend)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct fsd_extent ex;
	uint64_t n;
	int rc;

	while (cpos < cend) {
		if ((rc = cluster_run(fs, di, cpos, cend - cpos, &ex, &n)) != 0)
			return rc;
		if (ex.pblk != 0 && !ex.unwritten &&
		    (rc = extent_set_flags(h, ib, cpos, (uint32_t)n, OCFS2_EXT_UNWRITTEN)) != 0)
			return rc;
		cpos += (uint32_t)n;
	}
	return 0;
}

/* Zero bytes [from, to) of clusters the range covers only in part. */
static int
zero_partial_clusters(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t from, uint64_t to)
{
	uint64_t cs = fs->vol.cluster_bytes;
	uint64_t a = (from + cs - 1) / cs * cs, b = to / cs * cs;
	int rc;

	if (a >= b)
		return file_zero(fs, di, from, to);
	if ((rc = file_zero(fs, di, from, a)) != 0)
		return rc;
	return file_zero(fs, di, b, to);
}

/* Clusters [first whole, past last whole) of bytes [off, end), within 32 bits. */
static void
whole_clusters(struct fsd *fs, uint64_t off, uint64_t end, uint32_t *a, uint32_t *b)
{
	uint64_t ca = (off + fs->vol.cluster_bytes - 1) >> fs->cbits, cb = end >> fs->cbits;

	*a = ca > UINT32_MAX ? UINT32_MAX : (uint32_t)ca;
	*b = cb > UINT32_MAX ? UINT32_MAX : (uint32_t)cb;
}

enum space_op { SPACE_RESERVE, SPACE_ZERO };

/*
 * fallocate mode 0 / KEEP_SIZE (reserve) and ZERO_RANGE (zero) in one
 * handle: unwritten extents over the holes of the range, and for zero
 * the written clusters it covers whole turned unwritten and the bytes of
 * the others zeroed. Without keep_size the size grows to the range's end.
 */
static int
space_change(struct fsd *fs, struct fsd_inode *ip, enum space_op op, uint64_t off,
    uint64_t end, int keep_size)
{
	uint64_t cend = (end + fs->vol.cluster_bytes - 1) >> fs->cbits, size;
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct fsd_buf *ib;
	uint32_t a, b;
	int rc;

	if (cend > UINT32_MAX)
		return -EFBIG;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	di = (struct ocfs2_dinode *)ib->data;
	size = LE64(di->i_size);
	if (!S_ISREG(LE16(di->i_mode))) {
		rc = -ENODEV;
		goto out;
	}
	if ((rc = journal_access(&h, ib)) != 0)
		goto out;
	/* what gets zeroed or unwritten in shared clusters happens to the file's own copy */
	if ((op == SPACE_ZERO && (rc = reflink_cow(&h, ib, off, end)) != 0) ||
	    (!keep_size && (rc = reflink_cow(&h, ib, size, end)) != 0))
		goto out;
	if (op == SPACE_ZERO) {
		whole_clusters(fs, off, end, &a, &b);
		if (a < b && (rc = unwrite_clusters(&h, ib, a, b)) != 0)
			goto out;
	}
	if ((rc = alloc_unwritten(&h, ib, (uint32_t)(off >> fs->cbits), (uint32_t)cend)) != 0)
		goto out;
	if (op == SPACE_ZERO && (rc = zero_partial_clusters(fs, di, off, end)) != 0)
		goto out;
	if (!keep_size && end > size) {
		/* what lay past the old size in its cluster is exposed now */
		if ((rc = file_zero(fs, di, size, end)) != 0)
			goto out;
		di->i_size = htole64(end);
	}
	inode_now(di, 0, 1, 1);
	journal_dirty(&h, ib);
out:
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

struct punch {
	uint64_t	 off, end;
	uint32_t	 a, b;		/* the clusters covered whole */
	int		 zeroed;
};

static int
cow_partial_clusters(struct fsd_handle *h, struct fsd_buf *ib, const struct punch *p)
{
	uint64_t cs = h->fs->vol.cluster_bytes;
	int rc;

	if (p->a >= p->b)
		return reflink_cow(h, ib, p->off, p->end);
	if ((rc = reflink_cow(h, ib, p->off, (uint64_t)p->a * cs)) != 0)
		return rc;
	return reflink_cow(h, ib, (uint64_t)p->b * cs, p->end);
}

/* One step of a punch (file_change_in_steps). */
static int
punch_step(struct fsd_handle *h, struct fsd_buf *ib, void *arg)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct punch *p = arg;
	int rc = 0;

	if (!S_ISREG(LE16(di->i_mode)))
		return -ENODEV;
	/* the clusters zeroed in part become the file's own first */
	if (!p->zeroed && (rc = cow_partial_clusters(h, ib, p)) != 0)
		return rc;
	if (!p->zeroed && (rc = zero_partial_clusters(h->fs, di, p->off, p->end)) != 0)
		return rc;
	p->zeroed = 1;
	/* -EAGAIN: the log is full; what is done commits, and on */
	if (p->a < p->b && (rc = extent_punch(h, ib, p->a, p->b)) != 0 && rc != -EAGAIN)
		return rc;
	inode_now(di, 0, 1, 1);
	journal_dirty(h, ib);
	return rc;
}

/*
 * PUNCH_HOLE (with KEEP_SIZE): the bytes of clusters the range covers in
 * part are zeroed, the clusters it covers whole are freed (as
 * ocfs2_remove_inode_range), in as many handles as the truncate log
 * needs.
 */
static int
punch_hole(struct fsd *fs, struct fsd_inode *ip, uint64_t off, uint64_t end)
{
	struct punch p = { .off = off, .end = end };

	whole_clusters(fs, off, end, &p.a, &p.b);
	return file_change_in_steps(fs, ip, punch_step, &p);
}

int
sparse_fallocate_modes(const struct fsd *fs, int mode)
{
	int keep = mode & FALLOC_FL_KEEP_SIZE, rest = mode & ~FALLOC_FL_KEEP_SIZE;

	/* ocfs2_fallocate: nothing without unwritten extents */
	if (!fs->unwritten)
		return 0;
	return rest == 0 || (rest == FALLOC_FL_PUNCH_HOLE && keep) ||
	    rest == FALLOC_FL_ZERO_RANGE;
}

int
sparse_fallocate_rw_locked(struct fsd *fs, struct fsd_inode *ip, int mode, uint64_t off,
    uint64_t len)
{
	int keep = (mode & FALLOC_FL_KEEP_SIZE) != 0;

	if (!sparse_fallocate_modes(fs, mode))
		return -EOPNOTSUPP;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		return punch_hole(fs, ip, off, off + len);
	return space_change(fs, ip, (mode & FALLOC_FL_ZERO_RANGE) ? SPACE_ZERO : SPACE_RESERVE,
	    off, off + len, keep);
}

int
file_seek(struct fsd *fs, struct fsd_inode *ip, uint64_t off, int whence, uint64_t *res)
{
	const struct ocfs2_dinode *di;
	struct fsd_extent ex;
	struct fsd_buf *ib;
	uint64_t size, lblk, at;
	int rc, data, holes, found = 0;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	size = LE64(di->i_size);
	if (off >= size) {
		rc = -ENXIO;
		goto out;
	}
	/* an inline file is all data, as a non-sparse one */
	holes = fs->sparse && !inline_has(di);
	/* as ocfs2_seek_data_hole_offset: an unwritten extent is a hole */
	for (lblk = off >> fs->bbits, at = off; holes && (lblk << fs->bbits) < size;
	    lblk += ex.nblocks) {
		if ((rc = extent_map(fs, ib->blkno, &di->id2.i_list, lblk, &ex)) != 0)
			goto out;
		if (ex.nblocks == 0) {
			rc = -EIO;
			goto out;
		}
		data = ex.pblk != 0 && !ex.unwritten;
		if (data == (whence == SEEK_DATA)) {
			at = (lblk << fs->bbits) > off ? lblk << fs->bbits : off;
			found = 1;
			break;
		}
	}
	if (!holes)
		found = whence == SEEK_DATA;	/* all data, and a hole at the end */
	if (whence == SEEK_DATA)
		rc = found && at < size ? 0 : -ENXIO;
	*res = whence == SEEK_HOLE && (!found || at > size) ? size : at;
out:
	inode_unlock_block(fs, ip, LKM_PR, ib);
	return rc;
}
