/*
 * File contents: writes and size changes. On a volume without the sparse
 * feature every cluster from 0 to the end of the file is allocated, and
 * bytes past i_size inside the allocation are whatever the disk held:
 * whenever i_size grows, the range it exposes is zeroed first. Sparse
 * volumes allocate only what writes touch (sparse.c) and zero only what
 * is allocated and written. Data goes to disk in place with O_DIRECT
 * before the commit that records the new size or extents (ordered mode).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

/*
 * Each FUSE worker keeps one aligned buffer for writes: a fresh 1 MB
 * buffer per request costs more in page faults than the copy itself.
 */
struct wbuf {
	uint8_t	*p;
	size_t	 cap;
};
static pthread_key_t	wbuf_key;
static pthread_once_t	wbuf_once = PTHREAD_ONCE_INIT;

static void
wbuf_free(void *arg)
{
	struct wbuf *w = arg;

	free(w->p);
	free(w);
}

static void
wbuf_init(void)
{
	pthread_key_create(&wbuf_key, wbuf_free);
}

static uint8_t *
wbuf_get(size_t n)
{
	struct wbuf *w;

	pthread_once(&wbuf_once, wbuf_init);
	if ((w = pthread_getspecific(wbuf_key)) == NULL) {
		if ((w = calloc(1, sizeof(*w))) == NULL)
			return NULL;
		pthread_setspecific(wbuf_key, w);
	}
	if (w->cap < n) {
		free(w->p);
		w->cap = 0;
		if ((w->p = io_alloc(n)) == NULL)
			return NULL;
		w->cap = n;
	}
	return w->p;
}

/*
 * Read or write whole blocks [lblk, lblk+n) of a file through its
 * extents; a write without buf writes zeros. FILE_OVERWRITE: blocks the
 * file has written already (block_overwrite).
 */
enum file_io { FILE_READ, FILE_WRITE, FILE_OVERWRITE };

static int
file_blocks(struct fsd *fs, const struct ocfs2_dinode *di, enum file_io io, uint64_t lblk,
    uint64_t n, uint8_t *buf)
{
	struct fsd_extent ex;
	uint64_t k;
	int rc;

	while (n > 0) {
		if ((rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex)) != 0)
			return rc;
		k = ex.nblocks < n ? ex.nblocks : n;
		if (fs->sparse && k > 0 && buf == NULL && (ex.pblk == 0 || ex.unwritten)) {
			/* zeroing: holes and unwritten extents read as zeros already */
			lblk += k;
			n -= k;
			continue;
		}
		if (ex.pblk == 0 || k == 0 || ex.unwritten) {
			fsd_corrupt(fs, LE64(di->i_blkno), "hole inside the allocation of a "
			    "non-sparse file");
			return -EIO;
		}
		if (buf == NULL)
			rc = block_zero(fs, ex.pblk, k);
		else if (io == FILE_OVERWRITE)
			rc = block_overwrite(fs, ex.pblk, (unsigned)k, buf);
		else
			rc = block_io(fs, io == FILE_WRITE, ex.pblk, (unsigned)k, buf);
		if (rc != 0)
			return rc;
		lblk += k;
		n -= k;
		if (buf != NULL)
			buf += k << fs->bbits;
	}
	return 0;
}

/* Allocate clusters so that the file covers at least end bytes. */
static int
file_allocate(struct fsd_handle *h, struct fsd_buf *ib, uint64_t end)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t want = (end + fs->vol.cluster_bytes - 1) >> fs->cbits, have;
	struct fsd_extent ex;
	uint32_t goal = 0, start;
	unsigned got;
	int rc;

	if (want > UINT32_MAX)
		return -EFBIG;
	while ((have = LE32(di->i_clusters)) < want) {
		/* right after the file's last cluster, to stay contiguous */
		if (have > 0) {
			rc = extent_map(fs, ib->blkno, &di->id2.i_list,
			    (have << (fs->cbits - fs->bbits)) - 1, &ex);
			if (rc != 0)
				return rc;
			if (ex.pblk != 0)
				goal = (uint32_t)((ex.pblk >> (fs->cbits - fs->bbits)) + 1);
		}
		if ((rc = la_claim(h, goal, 1, (unsigned)(want - have > 65535 ? 65535 :
		    want - have), &start, &got)) != 0)
			return rc;
		if ((rc = extent_append(h, ib, (uint32_t)have,
		    (uint64_t)start << (fs->cbits - fs->bbits), got)) != 0)
			return rc;
	}
	return 0;
}

/* Is block lblk of the file allocated and written (not a hole, not unwritten)? */
static int
block_written(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t lblk)
{
	struct fsd_extent ex;

	if (extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex) != 0)
		return 1;	/* let the read report it */
	return ex.pblk != 0 && !ex.unwritten;
}

/*
 * Write zeros over bytes [from, to) of an allocated range; on a sparse
 * volume, over what of it is allocated and written.
 */
int
file_zero(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t from, uint64_t to)
{
	unsigned bs = fs->vol.block_bytes;
	uint64_t lblk, nblk;
	uint8_t *buf;
	int rc = 0;

	if (from >= to)
		return 0;
	if ((buf = volume_alloc(bs)) == NULL)
		return -ENOMEM;
	if (from % bs != 0) {
		/* the head block keeps what lies before from */
		lblk = from >> fs->bbits;
		if (fs->sparse && !block_written(fs, di, lblk))
			from = to < (lblk + 1) * bs ? to : (lblk + 1) * bs;
		else if ((rc = file_blocks(fs, di, FILE_READ, lblk, 1, buf)) == 0) {
			uint64_t stop = to < (lblk + 1) * bs ? to : (lblk + 1) * bs;

			memset(buf + from % bs, 0, stop - from);
			rc = file_blocks(fs, di, FILE_WRITE, lblk, 1, buf);
			from = stop;
		}
	}
	if (rc == 0 && from + bs <= to) {
		nblk = (to - from) / bs;
		rc = file_blocks(fs, di, FILE_WRITE, from >> fs->bbits, nblk, NULL);
		from += nblk * bs;
	}
	if (rc == 0 && from < to && !(fs->sparse && !block_written(fs, di, from >> fs->bbits))) {
		/* the tail block keeps what lies after to */
		lblk = from >> fs->bbits;
		if ((rc = file_blocks(fs, di, FILE_READ, lblk, 1, buf)) == 0) {
			memset(buf, 0, to - from);
			rc = file_blocks(fs, di, FILE_WRITE, lblk, 1, buf);
		}
	}
	free(buf);
	return rc;
}

/*
 * The bytes themselves, into clusters already allocated: partial blocks
 * at either end keep their other bytes (a gap before off was zeroed on
 * disk by the caller); past the end of the file they get zeros, never
 * stale memory.
 */
static int
write_data(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t size, uint64_t off,
    const void *data, size_t len, enum file_io io)
{
	unsigned bs = fs->vol.block_bytes;
	uint64_t end = off + len, first = off >> fs->bbits, last = (end - 1) >> fs->bbits;
	uint8_t *buf;
	int rc;

	if ((buf = wbuf_get((last - first + 1) * bs)) == NULL)
		return -ENOMEM;
	if (off % bs != 0 && (rc = file_blocks(fs, di, FILE_READ, first, 1, buf)) != 0)
		return rc;
	if (end % bs != 0) {
		if (last * bs < size && (last != first || off % bs == 0)) {
			if ((rc = file_blocks(fs, di, FILE_READ, last, 1, buf + (last - first) * bs)) != 0)
				return rc;
		} else if (last * bs >= size)
			memset(buf + (end - first * bs), 0, (last + 1) * bs - end);
	}
	memcpy(buf + off % bs, data, len);
	return file_blocks(fs, di, io, first, last - first + 1, buf);
}

int
file_write_data(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t size, uint64_t off,
    const void *data, size_t len)
{
	return write_data(fs, di, size, off, data, len, FILE_WRITE);
}

int
file_prepare_range(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, size_t len)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t size = LE64(di->i_size);
	int rc;

	if (inline_has(di) && (rc = inline_file_to_extents(h, ib)) != 0)
		return rc;
	/* shared clusters the write or the zeros before it touch become the file's own */
	if ((rc = reflink_cow(h, ib, off > size ? size : off, off + len)) != 0)
		return rc;
	if (fs->sparse)
		rc = sparse_prepare_write(h, ib, off, len);
	else
		rc = file_allocate(h, ib, off + len);
	if (rc != 0)
		return rc;
	return off > size ? file_zero(fs, di, size, off) : 0;
}

int
file_write_locked(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, const void *data,
    size_t len)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t size = LE64(di->i_size), end = off + len;
	int rc;

	if (len == 0)
		return 0;
	if ((rc = journal_access(h, ib)) != 0)
		return rc;
	/* an empty regular file takes a write that fits inline (inline.c) */
	if (fs->inline_data && S_ISREG(LE16(di->i_mode)) && !inline_has(di) && size == 0 &&
	    LE32(di->i_clusters) == 0 && end <= inline_capacity(fs, di))
		inline_start(h, ib);
	if (inline_has(di) && end <= LE16(di->id2.i_data.id_count)) {
		inline_write(h, ib, off, data, len);
		return 0;
	}
	if ((rc = file_prepare_range(h, ib, off, len)) != 0)
		return rc;
	if ((rc = file_write_data(fs, di, size, off, data, len)) != 0)
		return rc;
	if (end > size)
		di->i_size = htole64(end);
	journal_dirty(h, ib);
	return 0;
}

/*
 * An overwrite of blocks the file owns and has written, inside its size,
 * changes no metadata when the times need no update either (touch_times
 * 0: the kernel keeps them; or they are of this clock tick already,
 * inode_mctime_current): the data goes in place with no transaction.
 * di: the inode block, locked.
 */
static int
overwrite_in_place(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off, size_t len,
    int touch_times)
{
	return off != FILE_APPEND && S_ISREG(LE16(di->i_mode)) && !inline_has(di) &&
	    off + len <= LE64(di->i_size) && (!touch_times || inode_mctime_current(di)) &&
	    (!(fs->sparse || fs->refcount) || sparse_range_written(fs, di, off, len));
}

/*
 * Alone on the volume, such an overwrite of whole blocks runs under META
 * PR, so that writes to the file run side by side (the kernel's writeback
 * sends several at once); what could move or free the blocks meanwhile
 * takes META EX (a reflink marking them shared, an extension) or the RW
 * lock EX (a truncate), which the caller's RW PR keeps out. A partial
 * block is read, changed and written back: under EX, so that no other
 * write of that block comes in between. Returns 1 when done so, 0 when
 * the write needs a transaction.
 */
static int
write_in_place_alone(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data,
    size_t len, int touch_times)
{
	unsigned bs = fs->vol.block_bytes;
	int level = off % bs == 0 && len % bs == 0 ? LKM_PR : LKM_EX, rc;
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib;

	if ((rc = inode_lock_block(fs, ip, level, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	if (overwrite_in_place(fs, di, off, len, touch_times) &&
	    (rc = write_data(fs, di, LE64(di->i_size), off, data, len, FILE_OVERWRITE)) == 0)
		rc = 1;
	inode_unlock_block(fs, ip, level, ib);
	return rc;
}

/*
 * The write itself, under the META lock EX. within_size: a page the
 * kernel writes back from its cache, which never extends the file: what
 * lies past the size (cut off by a truncate meanwhile) is dropped, as the
 * kernel drops a page past i_size. In a cluster an overwrite in place
 * too is decided under the handle's EX: letting the lock go between the
 * check and the transaction would hand it to a node waiting for it, and
 * ask for it back at once.
 */
static int
write_rw_locked(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len,
    int touch_times, int within_size)
{
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc;

	if (fs->glue == NULL && off != FILE_APPEND &&
	    (rc = write_in_place_alone(fs, ip, off, data, len, touch_times)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	di = (struct ocfs2_dinode *)ib->data;
	if (off == FILE_APPEND)
		off = LE64(di->i_size);
	if (within_size && off + len > LE64(di->i_size))
		len = off >= LE64(di->i_size) ? 0 : (size_t)(LE64(di->i_size) - off);
	if (!S_ISREG(LE16(di->i_mode)))
		rc = -EINVAL;
	else if (len == 0)
		rc = 0;
	else if (fs->glue != NULL && overwrite_in_place(fs, di, off, len, touch_times))
		rc = write_data(fs, di, LE64(di->i_size), off, data, len, FILE_OVERWRITE);
	else if ((rc = file_write_locked(&h, ib, off, data, len)) == 0 && touch_times) {
		inode_now(di, 0, 1, 1);
		journal_dirty(&h, ib);
	}
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

int
file_write(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len,
    int touch_times)
{
	int rc;

	if (len == 0)
		return 0;
	if ((rc = inode_rw_lock(fs, ip, LKM_PR)) != 0)
		return rc;
	rc = write_rw_locked(fs, ip, off, data, len, touch_times, 0);
	inode_rw_unlock(fs, ip, LKM_PR);
	return rc;
}

int
file_write_rw_held(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data,
    size_t len, int touch_times)
{
	return len == 0 ? 0 : write_rw_locked(fs, ip, off, data, len, touch_times, 0);
}

/*
 * Without the RW lock: the downconvert of the META lock waits for these
 * writes (flush_loop in dlmglue.c), while another node's truncate may
 * hold RW EX and wait for that META lock. Nor is RW needed: a write
 * within the size, under META EX, cannot land in the part a truncate
 * frees (the size goes down first, setsize_rw_locked).
 */
int
file_writepage(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len)
{
	return len == 0 ? 0 : write_rw_locked(fs, ip, off, data, len, 1, 1);
}

/*
 * A change of ip's inode that may free more clusters than the truncate
 * log holds: change runs in a handle with the inode block locked EX and
 * open for change, and journals what it did; when it returns -EAGAIN
 * (the log filled), that commits, the log is flushed, and it runs again
 * in a new handle. Each step leaves the volume consistent.
 */
int
file_change_in_steps(struct fsd *fs, struct fsd_inode *ip, file_change_fn *change, void *arg)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc, again;

	do {
		if ((rc = journal_start(fs, &h)) != 0)
			return rc;
		if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
			journal_stop(&h, 1);
			return rc;
		}
		if ((rc = journal_access(&h, ib)) == 0)
			rc = change(&h, ib, arg);
		if ((again = rc == -EAGAIN))
			rc = 0;
		inode_unlock_block_in(&h, ip, ib);
		journal_stop(&h, rc != 0);
		if (rc == 0 && again)
			rc = tl_flush(fs);
	} while (rc == 0 && again);
	return rc;
}

struct setsize {
	struct fsd_inode	*ip;
	uint64_t		 newsize;
};

/* One step of a new size (file_change_in_steps). */
static int
setsize_step(struct fsd_handle *h, struct fsd_buf *ib, void *arg)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	const struct setsize *a = arg;
	uint64_t newsize = a->newsize, size = LE64(di->i_size), keep;
	int rc, more = 0;

	/*
	 * truncate(2) by name of a file another node unlinked since the
	 * kernel looked the name up: nothing has it open here, so it may be
	 * being deleted (orphan.c frees its clusters, then wipes it), and
	 * clusters given to it now would be left in a wiped inode. As if
	 * the unlink came first: no such file.
	 */
	if (LE16(di->i_links_count) == 0 && !inode_is_open(fs, a->ip))
		return -ENOENT;

	if (inline_has(di) && newsize <= LE16(di->id2.i_data.id_count)) {
		inode_now(di, 0, 1, 1);
		inline_truncate(h, ib, newsize);
		return 0;
	}
	if (inline_has(di) && (rc = inline_file_to_extents(h, ib)) != 0)
		return rc;
	if (newsize > size) {
		/* a sparse file grows by a hole: nothing to allocate */
		if ((!fs->sparse && (rc = file_allocate(h, ib, newsize)) != 0) ||
		    (rc = reflink_cow(h, ib, size, newsize)) != 0 ||
		    (rc = file_zero(fs, di, size, newsize)) != 0)
			return rc;
	} else {
		/*
		 * Shrink: the size first, then the clusters past it (the new
		 * size is in place when a full truncate log ends the step, so
		 * a crash in between is consistent).
		 */
		keep = (newsize + fs->vol.cluster_bytes - 1) >> fs->cbits;
		/* a sparse file's size may lie past the last cluster a record can map */
		rc = extent_truncate(h, ib, keep > UINT32_MAX ? UINT32_MAX : (uint32_t)keep);
		if (rc != 0 && rc != -EAGAIN)
			return rc;
		more = rc;
	}
	di->i_size = htole64(newsize);
	inode_now(di, 0, 1, 1);
	journal_dirty(h, ib);
	return more;
}

/* The new size, under the RW lock EX (see inode_rw_lock). */
static int
setsize_rw_locked(struct fsd *fs, struct fsd_inode *ip, uint64_t newsize)
{
	struct setsize a = { ip, newsize };

	return file_change_in_steps(fs, ip, setsize_step, &a);
}

int
file_setsize(struct fsd *fs, struct fsd_inode *ip, uint64_t newsize)
{
	int rc;

	if ((rc = inode_rw_lock(fs, ip, LKM_EX)) != 0)
		return rc;
	rc = setsize_rw_locked(fs, ip, newsize);
	inode_rw_unlock(fs, ip, LKM_EX);
	return rc;
}

/* One step of freeing every cluster of a file (file_change_in_steps). */
static int
free_all_step(struct fsd_handle *h, struct fsd_buf *ib, void *arg)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	int rc;

	(void)arg;
	/* nothing to free: the bytes go with the inode (ocfs2_truncate_inline) */
	if (inline_has(di)) {
		inline_truncate(h, ib, 0);
		return 0;
	}
	/* a fast symlink has no clusters (ocfs2_truncate_for_delete skips it) */
	if (fsd_fast_symlink(di))
		return 0;
	/* an indexed directory's index goes first (ocfs2_dx_dir_truncate) */
	if (S_ISDIR(LE16(di->i_mode)) && (rc = dx_truncate(h, ib)) != 0)
		return rc;
	rc = extent_truncate(h, ib, 0);
	if (rc != 0 && rc != -EAGAIN)
		return rc;
	/* no shared cluster left: the inode leaves its refcount tree */
	if (rc == 0 && (rc = refcount_leave(h, ib)) != 0)
		return rc;
	/* size first: never more bytes than clusters */
	di->i_size = 0;
	journal_dirty(h, ib);
	return rc;
}

int
file_free_all(struct fsd *fs, struct fsd_inode *ip)
{
	return file_change_in_steps(fs, ip, free_all_step, NULL);
}

static int
fallocate_rw_locked(struct fsd *fs, struct fsd_inode *ip, uint64_t end, int keep_size)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	uint64_t size;
	int rc;

	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	size = LE64(((const struct ocfs2_dinode *)ib->data)->i_size);
	inode_unlock_block(fs, ip, LKM_PR, ib);
	/*
	 * Without unwritten extents, allocated space must hold zeros to be
	 * readable: growing the size allocates and zeroes (setsize); with
	 * KEEP_SIZE the clusters are only allocated, and zeroed when a
	 * later size increase exposes them.
	 */
	if (!keep_size)
		return end > size ? setsize_rw_locked(fs, ip, end) : 0;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	if ((rc = journal_access(&h, ib)) == 0 && (rc = file_allocate(&h, ib, end)) == 0) {
		inode_now((struct ocfs2_dinode *)ib->data, 0, 0, 1);
		journal_dirty(&h, ib);
	}
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}

/* The size read and the allocation after it, with no write between. */
int
file_fallocate(struct fsd *fs, struct fsd_inode *ip, int mode, uint64_t off, uint64_t len)
{
	int rc;

	if ((rc = inode_rw_lock(fs, ip, LKM_EX)) != 0)
		return rc;
	/* space is reserved in clusters: an inline file gets an extent list first */
	rc = inline_convert(fs, ip);
	if (rc == 0 && fs->sparse)
		rc = sparse_fallocate_rw_locked(fs, ip, mode, off, len);
	else if (rc == 0)
		rc = fallocate_rw_locked(fs, ip, off + len, (mode & FALLOC_FL_KEEP_SIZE) != 0);
	inode_rw_unlock(fs, ip, LKM_EX);
	return rc;
}
