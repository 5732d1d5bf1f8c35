/*
 * The local alloc window (doc/ondisk.md, Local alloc; kernel
 * localalloc.c): a run of clusters taken from the global bitmap in one go
 * and recorded in our slot's local_alloc inode, from which file data
 * clusters are handed out without touching the global bitmap (in the
 * cluster, without taking its lock). Every cluster of the window stays
 * set in the global bitmap; inside the window a set bit is in use, a
 * clear bit is still free. Returning the window (unmount, recovery after
 * a crash, or when it is used up) clears the global bits of its
 * still-free clusters.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#include "fsd.h"

/* The kernel's default window: 8 MB worth of clusters. */
#define LA_DEFAULT_BYTES	(8u << 20)

static int
la_read(struct fsd *fs, int slot, struct fsd_buf **bp)
{
	int rc;

	if ((rc = block_read(fs, fs->slots[slot].local_alloc, BLK_INODE, bp)) != 0)
		return rc;
	if (!(LE32(((const struct ocfs2_dinode *)(*bp)->data)->i_flags) & OCFS2_LOCAL_ALLOC_FL)) {
		fsd_corrupt(fs, (*bp)->blkno, "local alloc inode without its flag");
		block_put(fs, *bp);
		return -EIO;
	}
	return 0;
}

static int
test_bit(const uint8_t *map, unsigned b)
{
	return (map[b >> 3] >> (b & 7)) & 1;
}

/* Give the window back: its free clusters return to the global bitmap. */
static int
window_return(struct fsd_handle *h, struct fsd_buf *lb)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)lb->data;
	struct ocfs2_local_alloc *la = &di->id2.i_lab;
	uint32_t off = LE32(la->la_bm_off);
	unsigned total = LE32(di->id1.bitmap1.i_total), b, n;
	int rc;

	if ((rc = journal_access(h, lb)) != 0)
		return rc;
	for (b = 0; b < total; b += n) {
		if (test_bit(la->la_bitmap, b)) {
			n = 1;
			continue;
		}
		for (n = 1; b + n < total && !test_bit(la->la_bitmap, b + n); n++)
			;
		if ((rc = free_clusters(h, off + b, n)) != 0)
			return rc;
	}
	/* unused state, as mkfs and a clean unmount leave it */
	memset(la->la_bitmap, 0, LE16(la->la_size));
	la->la_bm_off = 0;
	di->id1.bitmap1.i_total = 0;
	di->id1.bitmap1.i_used = 0;
	journal_dirty(h, lb);
	return 0;
}

/* Take a new window of up to the default size, at least min clusters. */
static int
window_new(struct fsd_handle *h, struct fsd_buf *lb, uint32_t goal, unsigned min)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)lb->data;
	struct ocfs2_local_alloc *la = &di->id2.i_lab;
	unsigned want = LA_DEFAULT_BYTES >> fs->cbits, got;
	uint32_t start;
	int rc;

	if (want > 8u * LE16(la->la_size))
		want = 8u * LE16(la->la_size);
	if (want < min || want == 0)
		return -ENOSPC;
	if ((rc = alloc_clusters(h, goal, min, want, &start, &got)) != 0)
		return rc;
	if ((rc = journal_access(h, lb)) != 0)
		return rc;
	memset(la->la_bitmap, 0, LE16(la->la_size));
	la->la_bm_off = htole32(start);
	di->id1.bitmap1.i_total = htole32(got);
	di->id1.bitmap1.i_used = 0;
	journal_dirty(h, lb);
	log_debug("local alloc window: %u clusters at %u", got, start);
	return 0;
}

/* A run of min..want free bits in the window, from bit from on. */
static int
window_find(const struct ocfs2_dinode *di, unsigned from, unsigned min, unsigned want,
    unsigned *start, unsigned *len)
{
	const struct ocfs2_local_alloc *la = &di->id2.i_lab;
	unsigned total = LE32(di->id1.bitmap1.i_total), b, n, pass;

	for (pass = 0; pass < 2; pass++) {
		for (b = pass ? 0 : from; b < total; b++) {
			if (test_bit(la->la_bitmap, b))
				continue;
			for (n = 0; b + n < total && n < want && !test_bit(la->la_bitmap, b + n); n++)
				;
			if (n >= min) {
				*start = b;
				*len = n;
				return 0;
			}
			b += n;
		}
		if (from == 0)
			break;
	}
	return -1;
}

int
la_claim(struct fsd_handle *h, uint32_t goal, unsigned min, unsigned want, uint32_t *startp,
    unsigned *got)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di;
	struct fsd_buf *lb;
	unsigned start, len, i, tries;
	uint32_t off;
	int rc;

	handle_serialize(h);
	if ((rc = la_read(fs, fs->slot, &lb)) != 0)
		return rc;
	di = (struct ocfs2_dinode *)lb->data;
	for (tries = 0; tries < 2; tries++) {
		off = LE32(di->id2.i_lab.la_bm_off);
		if (LE32(di->id1.bitmap1.i_total) != 0 &&
		    window_find(di, goal >= off ? goal - off : 0, min, want, &start, &len) == 0) {
			if ((rc = journal_access(h, lb)) != 0)
				goto out;
			for (i = start; i < start + len; i++)
				di->id2.i_lab.la_bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
			di->id1.bitmap1.i_used = htole32(LE32(di->id1.bitmap1.i_used) + len);
			journal_dirty(h, lb);
			*startp = off + start;
			*got = len;
			goto out;
		}
		/* Used up (or none yet): hand it back and take a fresh one. */
		if (tries == 0) {
			if (LE32(di->id1.bitmap1.i_total) != 0 && (rc = window_return(h, lb)) != 0)
				goto out;
			if (window_new(h, lb, goal, min) != 0)
				break;
		}
	}
	/* No room for a window: straight from the global bitmap, as the kernel does. */
	rc = alloc_clusters(h, goal, min, want, startp, got);
out:
	block_put(fs, lb);
	return rc;
}

int
la_release(struct fsd *fs)
{
	return la_release_slot(fs, fs->slot);
}

int
la_release_slot(struct fsd *fs, int slot)
{
	struct fsd_handle h;
	struct fsd_buf *lb;
	int rc, stop;

	if (fs->journal == NULL || slot < 0)
		return 0;
	if ((rc = la_read(fs, slot, &lb)) != 0)
		return rc;
	if (LE32(((const struct ocfs2_dinode *)lb->data)->id1.bitmap1.i_total) == 0) {
		block_put(fs, lb);
		return 0;
	}
	if ((rc = journal_start(fs, &h)) != 0) {
		block_put(fs, lb);
		return rc;
	}
	handle_serialize(&h);
	rc = window_return(&h, lb);
	block_put(fs, lb);
	stop = journal_stop(&h, rc != 0);
	return rc ? rc : stop;
}
