/*
 * File data: read straight from the device into an aligned buffer with
 * O_DIRECT, one request per contiguous run of the extent tree. Data is
 * not cached here; the kernel's page cache above FUSE does that, and
 * dropping it is how another node's writes become visible in a cluster.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"

#include "fsd.h"

/*
 * Each worker thread reads into one buffer of its own, kept from read
 * to read, on one transparent huge page where the kernel has one.
 *
 * A fresh 1 MiB buffer per FUSE READ was an mmap, 256 page faults with
 * zeroing while the O_DIRECT read pinned it, and an munmap whose TLB
 * shootdown interrupted the other CPU. And a buffer of 4 KiB pages is
 * 256 segments: the device splits the read in two (254 segments at
 * most on virtio-blk) and a virtual disk may well serve each segment on
 * its own. One huge page is one segment: 1 MiB O_DIRECT reads of an
 * image on a Firecracker VM's disk went from 2.2-2.6 GB/s to 7.3-7.6.
 * Without a huge page (THP off, memory fragmented) this is still one
 * buffer, of small pages. Larger reads than it holds get their own.
 */
#define DATA_TBUF_BYTES	((size_t)2 << 20)	/* one x86-64 huge page; > 1 MiB + 2 blocks */

static __thread uint8_t *data_tbuf;
static pthread_key_t data_key;
static pthread_once_t data_once = PTHREAD_ONCE_INIT;

static void
data_key_init(void)
{
	if (pthread_key_create(&data_key, free) != 0)	/* frees at thread exit */
		fatalx("data: no thread key");
}

/* A buffer for bytes: the thread's own (*basep NULL) or a new one. */
static uint8_t *
data_buf(size_t bytes, void **basep)
{
	void *p;

	*basep = NULL;
	if (bytes > DATA_TBUF_BYTES)
		return *basep = io_alloc(bytes);
	if (data_tbuf == NULL) {
		pthread_once(&data_once, data_key_init);
		if (posix_memalign(&p, DATA_TBUF_BYTES, DATA_TBUF_BYTES) != 0)
			return NULL;
		(void)madvise(p, DATA_TBUF_BYTES, MADV_HUGEPAGE);	/* a hint */
		data_tbuf = p;
		pthread_setspecific(data_key, p);
	}
	return data_tbuf;
}

int
data_read(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off, size_t size,
    void **basep, const char **outp, size_t *outlen)
{
	unsigned bs = fs->vol.block_bytes;
	uint64_t isize = LE64(di->i_size), end, first, nblk, lblk, n;
	struct fsd_extent ex;
	uint8_t *buf;
	int rc;

	*basep = NULL;
	*outp = NULL;
	*outlen = 0;
	if (off >= isize || size == 0)
		return 0;
	end = isize - off < size ? isize : off + size;
	if (LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL) {
		if ((buf = data_buf(end - off, basep)) == NULL)
			return -ENOMEM;
		memcpy(buf, di->id2.i_data.id_data + off, end - off);
		*outp = (const char *)buf;
		*outlen = end - off;
		return 0;
	}
	first = off >> fs->bbits;
	nblk = ((end - 1) >> fs->bbits) - first + 1;
	/* every block is read or zeroed below: no need to clear it first */
	if ((buf = data_buf(nblk * bs, basep)) == NULL)
		return -ENOMEM;
	for (lblk = first; lblk < first + nblk; lblk += n) {
		rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex);
		if (rc != 0)
			goto fail;
		n = first + nblk - lblk;
		if (ex.nblocks < n)
			n = ex.nblocks;
		if (n == 0) {
			rc = -EIO;	/* extent_map never returns an empty run */
			goto fail;
		}
		if (ex.pblk == 0 || ex.unwritten)
			memset(buf + (lblk - first) * bs, 0, n * bs);
		else if ((rc = block_io(fs, 0, ex.pblk, (unsigned)n,
		    buf + (lblk - first) * bs)) != 0)
			goto fail;
	}
	*outp = (const char *)buf + (off - (first << fs->bbits));
	*outlen = end - off;
	return 0;
fail:
	free(*basep);
	*basep = NULL;
	return rc;
}

int
data_readlink(struct fsd *fs, const struct ocfs2_dinode *di, char *out, size_t outlen)
{
	uint64_t len = LE64(di->i_size);
	const char *p;
	size_t got;
	void *base;
	int rc;

	if (len == 0 || len >= outlen) {
		fsd_corrupt(fs, LE64(di->i_blkno), "symlink of impossible length");
		return -EIO;
	}
	if (fsd_fast_symlink(di)) {
		/* length bounded by block validation */
		memcpy(out, di->id2.i_symlink, len);
		out[len] = '\0';
		return 0;
	}
	if ((rc = data_read(fs, di, 0, len, &base, &p, &got)) != 0)
		return rc;
	if (got != len) {
		free(base);
		return -EIO;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	free(base);
	return 0;
}
