/*
 * The block layer: O_DIRECT I/O on the shared device and a cache of
 * metadata blocks. A block is validated against its expected type the
 * first time it is read; a block that fails stays in the cache marked
 * bad, so the reason is logged once and every later user gets EIO
 * without touching the disk again.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#include "fsd.h"

/*
 * The default: a 64th of the machine's memory, so that a directory of a
 * million names keeps its index and blocks cached (doc/indexed-dirs.md),
 * between the 16,384 blocks it used to be and 1 GiB. A buffer takes a
 * page at least (O_DIRECT alignment) besides its header.
 */
#define CACHE_MIN_BLOCKS	16384u
#define CACHE_MAX_BYTES		(1ull << 30)

unsigned
cache_default_blocks(unsigned block_bytes)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t each = (block_bytes < 4096 ? 4096 : block_bytes) + sizeof(struct fsd_buf);
	uint64_t n = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 64 / each : 0;

	if (n > CACHE_MAX_BYTES / each)
		n = CACHE_MAX_BYTES / each;
	return n < CACHE_MIN_BLOCKS ? CACHE_MIN_BLOCKS : (unsigned)n;
}

int
cache_init(struct fsd_cache *c, unsigned max_bufs)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mtx, NULL);
	c->max_bufs = max_bufs < 64 ? 64 : max_bufs;
	/* Power of two, about one chain per cached block. */
	for (c->nhash = 64; c->nhash < c->max_bufs; c->nhash <<= 1)
		;
	c->hash = xcalloc(c->nhash, sizeof(*c->hash));
	c->owners = xcalloc(c->nhash, sizeof(*c->owners));
	c->lru.lru_next = c->lru.lru_prev = &c->lru;
	return 0;
}

static void
buf_free(struct fsd_buf *b)
{
	pthread_mutex_destroy(&b->lock);
	free(b->data);
	free(b);
}

void
cache_destroy(struct fsd_cache *c)
{
	struct fsd_buf *b, *n;
	unsigned i;

	if (c->hash == NULL)
		return;
	for (i = 0; i < c->nhash; i++) {
		for (b = c->hash[i]; b != NULL; b = n) {
			n = b->hnext;
			buf_free(b);
		}
	}
	free(c->hash);
	free(c->owners);
	c->hash = c->owners = NULL;
	pthread_mutex_destroy(&c->mtx);
}

static unsigned
hash_blk(const struct fsd_cache *c, uint64_t blkno)
{
	return (unsigned)((blkno * 0x9E3779B97F4A7C15ULL) >> 32) & (c->nhash - 1);
}

/*
 * An unreferenced buffer is on the LRU and, with an owner, on its owner's
 * chain, where block_forget_owner finds it without a walk of the whole
 * cache: a cluster lock's refresh drops an inode's blocks, and the cache
 * may hold a quarter of a million. Its owner stays while it is there (only
 * a reference's holder changes it). Cache mutex held.
 */
static void
lru_unlink(struct fsd_cache *c, struct fsd_buf *b)
{
	b->lru_prev->lru_next = b->lru_next;
	b->lru_next->lru_prev = b->lru_prev;
	b->lru_next = b->lru_prev = NULL;
	if (b->owner == 0)
		return;
	if (b->oprev != NULL)
		b->oprev->onext = b->onext;
	else
		c->owners[hash_blk(c, b->owner)] = b->onext;
	if (b->onext != NULL)
		b->onext->oprev = b->oprev;
	b->onext = b->oprev = NULL;
}

static void
lru_append(struct fsd_cache *c, struct fsd_buf *b)
{
	struct fsd_buf **head;

	b->lru_prev = c->lru.lru_prev;
	b->lru_next = &c->lru;
	c->lru.lru_prev->lru_next = b;
	c->lru.lru_prev = b;
	if (b->owner == 0)
		return;
	head = &c->owners[hash_blk(c, b->owner)];
	b->oprev = NULL;
	b->onext = *head;
	if (*head != NULL)
		(*head)->oprev = b;
	*head = b;
}

static void
hash_remove(struct fsd_cache *c, struct fsd_buf *b)
{
	struct fsd_buf **pp;

	for (pp = &c->hash[hash_blk(c, b->blkno)]; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == b) {
			*pp = b->hnext;
			break;
		}
	}
	c->nbufs--;
}

/* Drop the oldest unreferenced buffers while over the limit. Cache mutex held. */
static void
cache_shrink(struct fsd_cache *c)
{
	struct fsd_buf *b;

	while (c->nbufs > c->max_bufs && c->lru.lru_next != &c->lru) {
		b = c->lru.lru_next;
		lru_unlink(c, b);
		hash_remove(c, b);
		buf_free(b);
	}
}

void *
io_alloc(size_t bytes)
{
	void *p;

	/* O_DIRECT alignment; not zeroed: callers fill every byte they write */
	if (posix_memalign(&p, 4096, bytes ? bytes : 4096) != 0)
		return NULL;
	return p;
}

int
block_in_volume(struct fsd *fs, uint64_t blkno, uint64_t count)
{
	return blkno < fs->nblocks && count <= fs->nblocks - blkno;
}

/* A failed read or write of the volume: logged, -errno. */
static int
io_failed(struct fsd *fs, int write, uint64_t blkno, unsigned count)
{
	int rc = errno ? -errno : -EIO;

	log_warnx("%s: %s of %u blocks at %llu: %s", fs->vol.path, write ? "write" : "read",
	    count, (unsigned long long)blkno, strerror(-rc));
	return rc;
}

int
block_io(struct fsd *fs, int write, uint64_t blkno, unsigned count, void *buf)
{
	int rc;

	if (!block_in_volume(fs, blkno, count))
		return -EIO;
	rc = write ? volume_write_blocks(&fs->vol, blkno, count, buf) :
	    volume_read_blocks(&fs->vol, blkno, count, buf);
	return rc == -1 ? io_failed(fs, write, blkno, count) : 0;
}

/*
 * Alone on the volume, in-place overwrites of file data go through the
 * host's page cache (doc/overwrites.md): the host writes them back in
 * large sorted runs, where an O_DIRECT write per request cost a device
 * round trip each. Nobody else reads the device meanwhile but our own
 * O_DIRECT reads, which the kernel serves after writing back the dirty
 * pages of their range; every fdatasync of the device (each commit,
 * each fsync) covers these pages too, and a killed fsd leaves them to the
 * host. Only when a block fills whole pages: a page holding a file's
 * block and a metadata block written with O_DIRECT meanwhile would be
 * written back stale.
 */
void
block_overwrite_open(struct fsd *fs)
{
	long page = sysconf(_SC_PAGESIZE);

	if (fs->glue != NULL || fs->readonly || page <= 0 ||
	    fs->vol.block_bytes % (unsigned long)page != 0)
		return;
	if ((fs->overwrite_fd = open(fs->vol.path, O_RDWR | O_CLOEXEC)) == -1)
		log_warn("%s: overwrites go with O_DIRECT", fs->vol.path);
}

void
block_overwrite_close(struct fsd *fs)
{
	if (fs->overwrite_fd >= 0)
		close(fs->overwrite_fd);
	fs->overwrite_fd = -1;
}

int
block_overwrite(struct fsd *fs, uint64_t blkno, unsigned count, const void *buf)
{
	if (fs->overwrite_fd < 0)
		return block_io(fs, 1, blkno, count, (void *)buf);
	if (!block_in_volume(fs, blkno, count))
		return -EIO;
	if (volume_write_blocks_via(&fs->vol, fs->overwrite_fd, blkno, count, buf) == -1)
		return io_failed(fs, 1, blkno, count);
	return 0;
}

#define ZERO_CHUNK	(1u << 20)

int
block_zero(struct fsd *fs, uint64_t blkno, uint64_t count)
{
	static const int modes[] = { FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE };
	uint64_t n, max = ZERO_CHUNK >> fs->bbits;
	uint8_t *buf;
	size_t i;
	int rc = 0;

	if (!block_in_volume(fs, blkno, count))
		return -EIO;
	/*
	 * Let the device zero the range itself: an image file gets a hole
	 * (and stays sparse), a block device zeroes in the kernel. Only
	 * where neither works do the zeros cross over as writes, which
	 * then report any real error.
	 */
	for (i = 0; i < nitems(modes); i++)
		if (fallocate(fs->vol.fd, modes[i], (off_t)(blkno << fs->bbits),
		    (off_t)(count << fs->bbits)) == 0)
			return 0;
	if ((buf = volume_alloc((count < max ? count : max) << fs->bbits)) == NULL)
		return -ENOMEM;
	for (; rc == 0 && count > 0; blkno += n, count -= n) {
		n = count < max ? count : max;
		rc = block_io(fs, 1, blkno, (unsigned)n, buf);
	}
	free(buf);
	return rc;
}

void
fsd_corrupt(struct fsd *fs, uint64_t blkno, const char *why)
{
	log_warnx("%s: corrupt metadata at block %llu: %s", fs->vol.path,
	    (unsigned long long)blkno, why);
	pthread_mutex_lock(&fs->err_mtx);
	fs->errors++;
	pthread_mutex_unlock(&fs->err_mtx);
}

/*
 * Where each structure keeps its check (fs/ocfs2's ocfs2_validate_*
 * functions name the same fields). A directory block's is in its trailer,
 * which every directory block of a metaecc volume has
 * (ocfs2_supports_dir_trailer). Slot map and journal blocks (BLK_RAW)
 * have none; an xattr bucket's, spanning its blocks, is xattr.c's.
 */
struct ocfs2_block_check *
block_check_of(struct fsd *fs, enum blk_type type, uint8_t *data)
{
	unsigned bs = fs->vol.block_bytes;

	if (!fs->metaecc)
		return NULL;
	switch (type) {
	case BLK_INODE:
		return &((struct ocfs2_dinode *)data)->i_check;
	case BLK_EXTENT:
	case BLK_REFCOUNT_EXTENT:
		return &((struct ocfs2_extent_block *)data)->h_check;
	case BLK_GROUP:
		return &((struct ocfs2_group_desc *)data)->bg_check;
	case BLK_DIR:
	case BLK_DXDIR:
		return &((struct ocfs2_dir_block_trailer *)(data + bs -
		    sizeof(struct ocfs2_dir_block_trailer)))->db_check;
	case BLK_DX_ROOT:
		return &((struct ocfs2_dx_root_block *)data)->dr_check;
	case BLK_DX_LEAF:
		return &((struct ocfs2_dx_leaf *)data)->dl_check;
	case BLK_XATTR:
		return &((struct ocfs2_xattr_block *)data)->xb_check;
	case BLK_REFCOUNT:
		return &((struct ocfs2_refcount_block *)data)->rf_check;
	case BLK_QUOTA:
		return &ocfs2_block_dqtrailer((int)bs, data)->dq_check;
	case BLK_RAW:
	case BLK_NTYPES:
		break;
	}
	return NULL;
}

void
block_set_check(struct fsd *fs, enum blk_type type, uint8_t *data)
{
	struct ocfs2_block_check *bc = block_check_of(fs, type, data);

	if (bc != NULL)
		blockcheck_compute(data, fs->vol.block_bytes, bc);
}

int
block_verify_check(struct fsd *fs, enum blk_type type, uint64_t blkno, uint8_t *data,
    char *why, size_t whylen)
{
	struct ocfs2_block_check *bc = block_check_of(fs, type, data);
	int rc;

	if (bc == NULL)
		return 0;
	rc = blockcheck_verify(data, fs->vol.block_bytes, bc);
	if (rc == 1) {
		log_warnx("%s: block %llu: metaecc corrected a single-bit error", fs->vol.path,
		    (unsigned long long)blkno);
		pthread_mutex_lock(&fs->err_mtx);
		fs->ecc_fixed++;
		pthread_mutex_unlock(&fs->err_mtx);
	} else if (rc == -1) {
		snprintf(why, whylen, "metaecc check fails (crc32e %#x, ecc %#x) and the "
		    "error is not a single bit", le32toh(bc->bc_crc32e), le16toh(bc->bc_ecc));
		return -1;
	}
	return 0;
}

/* Signature, self block number and fs generation, the kernel's first checks. */
static int
check_header(struct fsd *fs, uint64_t blkno, const char *sig, const uint8_t *at_sig,
    uint64_t self, uint32_t gen, char *why, size_t whylen)
{
	if (memcmp(at_sig, sig, strlen(sig)) != 0) {
		snprintf(why, whylen, "bad signature (expected %s)", sig);
		return -1;
	}
	if (self != blkno) {
		snprintf(why, whylen, "%s claims to be block %llu", sig,
		    (unsigned long long)self);
		return -1;
	}
	if (gen != fs->fs_generation) {
		snprintf(why, whylen, "%s generation %#x is not the volume's %#x",
		    sig, gen, fs->fs_generation);
		return -1;
	}
	return 0;
}

/*
 * A directory's entries and extent lists are checked by what dir.c and
 * extent.c registered; without it a block is refused, never let through.
 */
static int
check_dir_entries(struct fsd *fs, const uint8_t *p, size_t len, char *why, size_t whylen)
{
	if (fs->check_dir_entries == NULL) {
		snprintf(why, whylen, "no check of directory entries registered");
		return -1;
	}
	return fs->check_dir_entries(p, len, why, whylen);
}

static int
check_dx_block(struct fsd *fs, enum blk_type type, uint64_t blkno, const uint8_t *p,
    char *why, size_t whylen)
{
	if (fs->check_dx_block == NULL) {
		snprintf(why, whylen, "no check of indexed directory blocks registered");
		return -1;
	}
	return fs->check_dx_block(fs, type, blkno, p, why, whylen);
}

static int
check_extent_list(struct fsd *fs, const struct ocfs2_extent_list *el, unsigned capacity,
    int leaf_blocks, char *why, size_t whylen)
{
	if (fs->check_extent_list == NULL) {
		snprintf(why, whylen, "no check of extent lists registered");
		return -1;
	}
	return fs->check_extent_list(fs, el, capacity, leaf_blocks, why, whylen);
}

static int
check_xattr_header(struct fsd *fs, const struct ocfs2_xattr_header *xh, size_t size,
    char *why, size_t whylen)
{
	if (fs->check_xattr_header == NULL) {
		snprintf(why, whylen, "no check of xattr headers registered");
		return -1;
	}
	return fs->check_xattr_header(xh, size, 0, why, whylen);
}

/*
 * Bytes at the end of the inode block its inline xattr area takes (0:
 * none), checked to leave id2's header room and to hold an xattr header.
 */
static int
inline_xattr_bytes(struct fsd *fs, const struct ocfs2_dinode *di, unsigned *bytes,
    char *why, size_t whylen)
{
	unsigned bs = fs->vol.block_bytes, size = LE16(di->i_xattr_inline_size);

	*bytes = 0;
	if (!(LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL))
		return 0;
	if (size < sizeof(struct ocfs2_xattr_header) ||
	    size > bs - offsetof(struct ocfs2_dinode, id2.i_list.l_recs)) {
		snprintf(why, whylen, "impossible inline xattr size %u", size);
		return -1;
	}
	*bytes = size;
	return check_xattr_header(fs, (const void *)((const uint8_t *)di + bs - size), size,
	    why, whylen);
}

/* The kernel's ocfs2_validate_inode_block, plus bounds on what id2 holds. */
static int
validate_inode(struct fsd *fs, uint64_t blkno, const struct ocfs2_dinode *di,
    char *why, size_t whylen)
{
	unsigned bs = fs->vol.block_bytes;
	uint32_t flags = LE32(di->i_flags);
	uint16_t mode = LE16(di->i_mode);
	unsigned xbytes;

	if (check_header(fs, blkno, OCFS2_INODE_SIGNATURE, di->i_signature,
	    LE64(di->i_blkno), LE32(di->i_fs_generation), why, whylen) == -1)
		return -1;
	if (!(flags & OCFS2_VALID_FL)) {
		snprintf(why, whylen, "inode is not in use (VALID flag clear)");
		return -1;
	}
	if (LE64(di->i_dtime) != 0 && !(flags & OCFS2_ORPHANED_FL)) {
		snprintf(why, whylen, "live inode has a deletion time");
		return -1;
	}
	if (flags & OCFS2_CHAIN_FL) {
		const struct ocfs2_chain_list *cl = &di->id2.i_chain;

		if (LE16(cl->cl_count) > (unsigned)ocfs2_chain_recs_per_inode(bs) ||
		    LE16(cl->cl_next_free_rec) > LE16(cl->cl_count) ||
		    LE16(cl->cl_cpg) == 0 || LE16(cl->cl_bpc) == 0) {
			snprintf(why, whylen, "impossible chain list (count %u, next free %u, cpg %u, bpc %u)",
			    LE16(cl->cl_count), LE16(cl->cl_next_free_rec),
			    LE16(cl->cl_cpg), LE16(cl->cl_bpc));
			return -1;
		}
		return 0;
	}
	if (flags & OCFS2_LOCAL_ALLOC_FL) {
		const struct ocfs2_local_alloc *la = &di->id2.i_lab;

		if (LE16(la->la_size) > (unsigned)ocfs2_local_alloc_size(bs) ||
		    LE32(di->id1.bitmap1.i_total) > 8u * LE16(la->la_size) ||
		    LE32(di->id1.bitmap1.i_used) > LE32(di->id1.bitmap1.i_total)) {
			snprintf(why, whylen, "impossible local alloc (size %u, total %u, used %u)",
			    LE16(la->la_size), LE32(di->id1.bitmap1.i_total),
			    LE32(di->id1.bitmap1.i_used));
			return -1;
		}
		return 0;
	}
	if (flags & OCFS2_DEALLOC_FL) {
		const struct ocfs2_truncate_log *tl = &di->id2.i_dealloc;

		if (LE16(tl->tl_count) > (unsigned)ocfs2_truncate_recs_per_inode(bs) ||
		    LE16(tl->tl_used) > LE16(tl->tl_count)) {
			snprintf(why, whylen, "impossible truncate log (count %u, used %u)",
			    LE16(tl->tl_count), LE16(tl->tl_used));
			return -1;
		}
		return 0;
	}
	if (flags & OCFS2_SUPER_BLOCK_FL)
		return 0;
	if (inline_xattr_bytes(fs, di, &xbytes, why, whylen) == -1)
		return -1;
	if (LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL) {
		unsigned max = ocfs2_max_inline_data_with_xattr(bs, NULL) - xbytes;

		if (LE16(di->id2.i_data.id_count) > max ||
		    LE64(di->i_size) > LE16(di->id2.i_data.id_count)) {
			snprintf(why, whylen, "impossible inline data (count %u, size %llu)",
			    LE16(di->id2.i_data.id_count), (unsigned long long)LE64(di->i_size));
			return -1;
		}
		if (S_ISDIR(mode))
			return check_dir_entries(fs, di->id2.i_data.id_data, LE64(di->i_size),
			    why, whylen);
		return 0;
	}
	switch (mode & S_IFMT) {
	case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		/*
		 * an empty extent list in id2 (the kernel's ocfs2_mknod_locked
		 * makes one; fsck.ocfs2 checks it): deleting the inode walks it
		 */
		break;
	case S_IFLNK:
		if (fsd_fast_symlink(di)) {
			if (LE64(di->i_size) >= (uint64_t)ocfs2_fast_symlink_chars(bs) - xbytes) {
				snprintf(why, whylen, "fast symlink of impossible length %llu",
				    (unsigned long long)LE64(di->i_size));
				return -1;
			}
			return 0;
		}
		break;
	case S_IFREG: case S_IFDIR: case 0:
		break;	/* mode 0: system files (journal, heartbeat, ...) */
	default:
		snprintf(why, whylen, "impossible mode %#o", mode);
		return -1;
	}
	/* the inline xattr area takes its bytes from the list's records (fs/ocfs2/xattr.c) */
	return check_extent_list(fs, &di->id2.i_list,
	    ocfs2_extent_recs_per_inode(bs) - xbytes / sizeof(struct ocfs2_extent_rec), 0, why,
	    whylen);
}

static int
validate_xattr_block(struct fsd *fs, uint64_t blkno, const struct ocfs2_xattr_block *xb,
    char *why, size_t whylen)
{
	unsigned bs = fs->vol.block_bytes;

	if (check_header(fs, blkno, OCFS2_XATTR_BLOCK_SIGNATURE, xb->xb_signature,
	    LE64(xb->xb_blkno), LE32(xb->xb_fs_generation), why, whylen) == -1)
		return -1;
	if (LE16(xb->xb_flags) & OCFS2_XATTR_INDEXED)
		return check_extent_list(fs, &xb->xb_attrs.xb_root.xt_list,
		    ocfs2_xattr_recs_per_xb(bs), 0, why, whylen);
	return check_xattr_header(fs, &xb->xb_attrs.xb_header,
	    bs - offsetof(struct ocfs2_xattr_block, xb_attrs.xb_header), why, whylen);
}

/* leaf_blocks: a refcount tree's (BLK_REFCOUNT_EXTENT) */
static int
validate_extent_block(struct fsd *fs, uint64_t blkno, const struct ocfs2_extent_block *eb,
    int leaf_blocks, char *why, size_t whylen)
{
	if (check_header(fs, blkno, OCFS2_EXTENT_BLOCK_SIGNATURE, eb->h_signature,
	    LE64(eb->h_blkno), LE32(eb->h_fs_generation), why, whylen) == -1)
		return -1;
	return check_extent_list(fs, &eb->h_list,
	    ocfs2_extent_recs_per_eb(fs->vol.block_bytes), leaf_blocks, why, whylen);
}

/*
 * A refcount block (doc/refcount.md): its list is an extent list when
 * OCFS2_REFCOUNT_TREE_FL says it is a tree's root, records otherwise;
 * records are sorted and never overlap (fsck.ocfs2/refcount.c, check_rl).
 */
static int
validate_refcount_block(struct fsd *fs, uint64_t blkno, const struct ocfs2_refcount_block *rb,
    char *why, size_t whylen)
{
	unsigned bs = fs->vol.block_bytes, i, used;
	const struct ocfs2_refcount_rec *r;
	uint64_t prev_end = 0;

	if (check_header(fs, blkno, OCFS2_REFCOUNT_BLOCK_SIGNATURE, rb->rf_signature,
	    LE64(rb->rf_blkno), LE32(rb->rf_fs_generation), why, whylen) == -1)
		return -1;
	if (LE32(rb->rf_flags) & OCFS2_REFCOUNT_TREE_FL)
		return check_extent_list(fs, &rb->rf_list, ocfs2_extent_recs_per_rb(bs), 1, why,
		    whylen);
	used = LE16(rb->rf_records.rl_used);
	if (LE16(rb->rf_records.rl_count) > ocfs2_refcount_recs_per_rb(bs) ||
	    used > LE16(rb->rf_records.rl_count)) {
		snprintf(why, whylen, "impossible refcount list (count %u, used %u)",
		    LE16(rb->rf_records.rl_count), used);
		return -1;
	}
	for (i = 0; i < used; i++) {
		r = &rb->rf_records.rl_recs[i];
		if (LE32(r->r_clusters) == 0 || LE32(r->r_refcount) == 0 ||
		    LE64(r->r_cpos) < prev_end ||
		    !block_in_volume(fs, LE64(r->r_cpos) * fs->bpc,
		    (uint64_t)LE32(r->r_clusters) * fs->bpc)) {
			snprintf(why, whylen, "refcount record %u (%u clusters at %llu, count %u) "
			    "is empty, overlaps or lies outside the volume", i,
			    LE32(r->r_clusters), (unsigned long long)LE64(r->r_cpos),
			    LE32(r->r_refcount));
			return -1;
		}
		prev_end = LE64(r->r_cpos) + LE32(r->r_clusters);
	}
	return 0;
}

static int
validate_group(struct fsd *fs, uint64_t blkno, const struct ocfs2_group_desc *gd,
    char *why, size_t whylen)
{
	unsigned max = fs->vol.block_bytes - offsetof(struct ocfs2_group_desc, bg_bitmap);

	if (check_header(fs, blkno, OCFS2_GROUP_DESC_SIGNATURE, gd->bg_signature,
	    LE64(gd->bg_blkno), LE32(gd->bg_generation), why, whylen) == -1)
		return -1;
	if (LE16(gd->bg_size) > max || LE16(gd->bg_bits) > 8u * LE16(gd->bg_size) ||
	    LE16(gd->bg_free_bits_count) > LE16(gd->bg_bits)) {
		snprintf(why, whylen, "impossible group (size %u, bits %u, free %u)",
		    LE16(gd->bg_size), LE16(gd->bg_bits), LE16(gd->bg_free_bits_count));
		return -1;
	}
	return 0;
}

int
block_validate(struct fsd *fs, enum blk_type type, uint64_t blkno, const uint8_t *data,
    char *why, size_t whylen)
{
	switch (type) {
	case BLK_INODE:
		return validate_inode(fs, blkno, (const void *)data, why, whylen);
	case BLK_EXTENT:
	case BLK_REFCOUNT_EXTENT:
		return validate_extent_block(fs, blkno, (const void *)data,
		    type == BLK_REFCOUNT_EXTENT, why, whylen);
	case BLK_GROUP:
		return validate_group(fs, blkno, (const void *)data, why, whylen);
	case BLK_DIR:
		return check_dir_entries(fs, data, fs->vol.block_bytes, why, whylen);
	case BLK_DXDIR:
	case BLK_DX_ROOT:
	case BLK_DX_LEAF:
		return check_dx_block(fs, type, blkno, data, why, whylen);
	case BLK_XATTR:
		return validate_xattr_block(fs, blkno, (const void *)data, why, whylen);
	case BLK_REFCOUNT:
		return validate_refcount_block(fs, blkno, (const void *)data, why, whylen);
	case BLK_QUOTA:		/* no signature: quota.c checks what it follows */
	case BLK_RAW:
	case BLK_NTYPES:
		break;
	}
	return 0;
}

/* A well-formed inode block that is free: what a stale inode number finds. */
static int
inode_deleted(const uint8_t *data)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)data;

	return memcmp(di->i_signature, OCFS2_INODE_SIGNATURE, sizeof(OCFS2_INODE_SIGNATURE) - 1) == 0 &&
	    !(LE32(di->i_flags) & OCFS2_VALID_FL);
}

/* The cache buffer for blkno, referenced, created if need be. Cache mutex held. */
static struct fsd_buf *
buf_get_locked(struct fsd *fs, uint64_t blkno)
{
	struct fsd_cache *c = &fs->cache;
	struct fsd_buf *b;
	unsigned h = hash_blk(c, blkno);

	for (b = c->hash[h]; b != NULL; b = b->hnext)
		if (b->blkno == blkno)
			break;
	if (b != NULL) {
		if (b->refs++ == 0)
			lru_unlink(c, b);
		c->hits++;
		return b;
	}
	b = xcalloc(1, sizeof(*b));
	b->data = volume_alloc(fs->vol.block_bytes);
	if (b->data == NULL)
		fatal("out of memory");
	b->blkno = blkno;
	b->refs = 1;
	pthread_mutex_init(&b->lock, NULL);
	b->hnext = c->hash[h];
	c->hash[h] = b;
	c->nbufs++;
	c->misses++;
	cache_shrink(c);
	return b;
}

/* Who a buffer belongs to: an inode block to itself, others to their inode. */
static uint64_t
owner_of(uint64_t blkno, enum blk_type type, uint64_t owner)
{
	return type == BLK_INODE ? blkno : owner;
}

int
block_new(struct fsd *fs, uint64_t blkno, enum blk_type type, struct fsd_buf **bp)
{
	return block_new_owned(fs, blkno, type, 0, bp);
}

int
block_new_owned(struct fsd *fs, uint64_t blkno, enum blk_type type, uint64_t owner,
    struct fsd_buf **bp)
{
	struct fsd_buf *b;

	*bp = NULL;
	if (blkno <= OCFS2_SUPER_BLOCK_BLKNO || !block_in_volume(fs, blkno, 1))
		return -EIO;
	pthread_mutex_lock(&fs->cache.mtx);
	b = buf_get_locked(fs, blkno);
	pthread_mutex_unlock(&fs->cache.mtx);
	/* A fresh block: whatever the disk holds there is garbage. */
	pthread_mutex_lock(&b->lock);
	memset(b->data, 0, fs->vol.block_bytes);
	b->type = type;
	b->owner = owner_of(blkno, type, owner);
	b->owner_unsure = 0;
	b->state = BUF_VALID;
	pthread_mutex_unlock(&b->lock);
	*bp = b;
	return 0;
}

int
block_read(struct fsd *fs, uint64_t blkno, enum blk_type type, struct fsd_buf **bp)
{
	return block_read_owned(fs, blkno, type, 0, bp);
}

int
block_read_owned(struct fsd *fs, uint64_t blkno, enum blk_type type, uint64_t owner,
    struct fsd_buf **bp)
{
	struct fsd_cache *c = &fs->cache;
	struct fsd_buf *b;
	char why[160];
	int rc = 0;

	*bp = NULL;
	if (blkno <= OCFS2_SUPER_BLOCK_BLKNO && type != BLK_RAW) {
		fsd_corrupt(fs, blkno, "metadata pointer into the volume header");
		return -EIO;
	}
	if (!block_in_volume(fs, blkno, 1)) {
		char msg[96];

		snprintf(msg, sizeof(msg), "pointer past the end of the volume (%llu blocks)",
		    (unsigned long long)fs->nblocks);
		fsd_corrupt(fs, blkno, msg);
		return -EIO;
	}
	pthread_mutex_lock(&c->mtx);
	b = buf_get_locked(fs, blkno);
	pthread_mutex_unlock(&c->mtx);

	owner = owner_of(blkno, type, owner);
	pthread_mutex_lock(&b->lock);
	/*
	 * Cached for another owner: the block was freed and allocated
	 * again, maybe by another node, under a lock we did not hold then.
	 */
	if (b->state != BUF_EMPTY && owner != 0 && b->owner != 0 && b->owner != owner &&
	    !b->jrun)
		b->state = BUF_EMPTY;
	/*
	 * Reached under another owner, or none: which lock guards what this
	 * user changes is not known, so the journal counts its changes as
	 * ownerless (journal_write_home).
	 */
	if (b->state != BUF_EMPTY && b->owner != owner)
		b->owner_unsure = 1;
	if (b->state == BUF_EMPTY) {
		rc = block_io(fs, 0, blkno, 1, b->data);
		if (rc == 0) {
			b->type = type;
			b->owner = owner;
			b->owner_unsure = 0;
			/* the check first: the type's checks read what it may have repaired */
			if (block_verify_check(fs, type, blkno, b->data, why, sizeof(why)) == -1) {
				fsd_corrupt(fs, blkno, why);
				b->state = BUF_BAD;
			} else if (block_validate(fs, type, blkno, b->data, why, sizeof(why)) == 0)
				b->state = BUF_VALID;
			else if (type == BLK_INODE && fs->glue != NULL && inode_deleted(b->data))
				rc = -ESTALE;	/* another node deleted it: not damage */
			else {
				fsd_corrupt(fs, blkno, why);
				b->state = BUF_BAD;
			}
		}
	} else if (b->state == BUF_VALID && b->type != type) {
		/*
		 * The same block read as another type: one of the two
		 * pointers is wrong. Check the block as what this reader
		 * expects; don't retype what others rely on.
		 */
		if (block_validate(fs, type, blkno, b->data, why, sizeof(why)) == -1) {
			fsd_corrupt(fs, blkno, why);
			rc = -EIO;
		}
	}
	if (rc == 0 && b->state == BUF_BAD)
		rc = -EIO;
	pthread_mutex_unlock(&b->lock);
	if (rc != 0) {
		block_put(fs, b);
		return rc;
	}
	*bp = b;
	return 0;
}

void
block_put(struct fsd *fs, struct fsd_buf *b)
{
	struct fsd_cache *c = &fs->cache;

	if (b == NULL)
		return;
	pthread_mutex_lock(&c->mtx);
	if (--b->refs == 0) {
		if (b->state == BUF_EMPTY) {
			/* a failed read: don't keep an empty buffer */
			hash_remove(c, b);
			buf_free(b);
		} else {
			lru_append(c, b);
			cache_shrink(c);
		}
	}
	pthread_mutex_unlock(&c->mtx);
}

void
block_ref(struct fsd *fs, struct fsd_buf *b)
{
	pthread_mutex_lock(&fs->cache.mtx);
	if (b->refs++ == 0)
		lru_unlink(&fs->cache, b);
	pthread_mutex_unlock(&fs->cache.mtx);
}

void
block_forget(struct fsd *fs, uint64_t blkno)
{
	struct fsd_cache *c = &fs->cache;
	struct fsd_buf *b;

	pthread_mutex_lock(&c->mtx);
	for (b = c->hash[hash_blk(c, blkno)]; b != NULL; b = b->hnext) {
		if (b->blkno != blkno)
			continue;
		if (b->refs == 0) {
			lru_unlink(c, b);
			hash_remove(c, b);
			buf_free(b);
		} else {
			/* in use: the next reader after the last put re-reads */
			pthread_mutex_lock(&b->lock);
			b->state = BUF_EMPTY;
			pthread_mutex_unlock(&b->lock);
		}
		break;
	}
	pthread_mutex_unlock(&c->mtx);
}

void
block_forget_owner(struct fsd *fs, uint64_t owner)
{
	struct fsd_cache *c = &fs->cache;
	struct fsd_buf *b, *next;

	/*
	 * The unreferenced ones: a referenced buffer is the journal's (logged,
	 * not home yet: ours, and newer than the disk) or a reader's.
	 */
	pthread_mutex_lock(&c->mtx);
	for (b = c->owners[hash_blk(c, owner)]; b != NULL; b = next) {
		next = b->onext;
		if (b->owner != owner)
			continue;
		lru_unlink(c, b);
		hash_remove(c, b);
		buf_free(b);
	}
	pthread_mutex_unlock(&c->mtx);
}
