/*
 * Extended attributes as OCFS2 stores them (doc/xattr.md, from
 * fs/ocfs2/xattr.c): entries in the inode's inline area at the end of
 * its block, in an external xattr block, or, once a block is indexed,
 * in 4 KiB buckets sorted by name hash. Values up to
 * OCFS2_XATTR_INLINE_SIZE sit next to their name; larger ones in
 * clusters mapped by a value root kept there instead.
 *
 * fsd reads, writes and frees every form. A full block is indexed into
 * buckets; a change in an indexed block rewrites its buckets, sorted,
 * into one new run of clusters (index_rebuild). Every change is one
 * handle under the inode's META lock EX, so it commits whole or not at
 * all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "log.h"

#include "fsd.h"

/* fs/ocfs2/xattr.c: a value root with room for one extent record */
#define XATTR_ROOT_SIZE	(sizeof(struct ocfs2_xattr_value_root) + sizeof(struct ocfs2_extent_rec))
/* fs/ocfs2/xattr.c OCFS2_XATTR_HEADER_GAP: kept free between entries and names */
#define XATTR_HEADER_GAP	4
#define XATTR_VALUE_MAX		65536	/* XATTR_SIZE_MAX */

/*
 * A value root copied out of the storage, where it sits after a name
 * and is only 4-byte aligned: every look at one goes through a copy.
 */
union xroot {
	struct ocfs2_xattr_value_root	xv;
	uint8_t				bytes[XATTR_ROOT_SIZE];
};
#define XATTR_SUFFIX_MAX	255	/* xe_name_len is one byte */

static const struct {
	const char	*prefix;
	int		 index;
} namespaces[] = {
	{ "user.", XATTR_INDEX_USER },
	{ "system.posix_acl_access", XATTR_INDEX_POSIX_ACL_ACCESS },
	{ "system.posix_acl_default", XATTR_INDEX_POSIX_ACL_DEFAULT },
	{ "trusted.", XATTR_INDEX_TRUSTED },
	{ "security.", XATTR_INDEX_SECURITY },
};

int
xattr_parse_name(const char *full, int *index, const char **suffix)
{
	size_t i, n;

	for (i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++) {
		n = strlen(namespaces[i].prefix);
		if (strncmp(full, namespaces[i].prefix, n) != 0)
			continue;
		*index = namespaces[i].index;
		*suffix = full + n;
		/* the ACL names are whole: stored with an empty suffix */
		if (namespaces[i].prefix[n - 1] != '.')
			return full[n] == '\0' ? 0 : -EOPNOTSUPP;
		return full[n] == '\0' ? -EINVAL : 0;
	}
	return -EOPNOTSUPP;
}

const char *
xattr_prefix(int index)
{
	size_t i;

	for (i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++)
		if (namespaces[i].index == index)
			return namespaces[i].prefix;
	return NULL;
}

uint32_t
xattr_name_hash(uint32_t seed, const char *name, size_t len)
{
	uint32_t hash = seed;
	size_t i;

	/* ocfs2_xattr_name_hash: rotate by OCFS2_HASH_SHIFT, xor each (signed) char */
	for (i = 0; i < len; i++)
		hash = (hash << OCFS2_HASH_SHIFT) ^ (hash >> (32 - OCFS2_HASH_SHIFT)) ^
		    (uint32_t)(int32_t)(signed char)name[i];
	return hash;
}

size_t
xattr_namevalue_size(unsigned name_len, uint64_t value_len)
{
	return OCFS2_XATTR_SIZE(name_len) + (value_len <= OCFS2_XATTR_INLINE_SIZE ?
	    OCFS2_XATTR_SIZE(value_len) : XATTR_ROOT_SIZE);
}

static size_t
entry_usage(unsigned name_len, uint64_t value_len)
{
	return sizeof(struct ocfs2_xattr_entry) + xattr_namevalue_size(name_len, value_len);
}

int
xattr_header_check(const struct ocfs2_xattr_header *xh, size_t size, unsigned bucket_bs,
    char *why, size_t whylen)
{
	unsigned count = LE16(xh->xh_count), i;
	size_t end = sizeof(*xh) + (size_t)count * sizeof(struct ocfs2_xattr_entry);

	if (end > size) {
		snprintf(why, whylen, "xattr header of %u entries overflows its %zu bytes", count, size);
		return -1;
	}
	for (i = 0; i < count; i++) {
		const struct ocfs2_xattr_entry *xe = &xh->xh_entries[i];
		uint64_t vs = LE64(xe->xe_value_size);
		size_t off = LE16(xe->xe_name_offset), nv;
		int local = (xe->xe_type & OCFS2_XATTR_ENTRY_LOCAL) != 0;

		if (xe->xe_name_len == 0 && (xe->xe_type & OCFS2_XATTR_TYPE_MASK) != 2 &&
		    (xe->xe_type & OCFS2_XATTR_TYPE_MASK) != 3) {
			snprintf(why, whylen, "xattr entry %u has an empty name", i);
			return -1;
		}
		if (vs > XATTR_VALUE_MAX || local != (vs <= OCFS2_XATTR_INLINE_SIZE)) {
			snprintf(why, whylen, "xattr entry %u: value of %llu bytes %s", i,
			    (unsigned long long)vs, local ? "marked local" : "marked external");
			return -1;
		}
		nv = xattr_namevalue_size(xe->xe_name_len, vs);
		if (off < end || off + nv > size) {
			snprintf(why, whylen, "xattr entry %u: name and value at %zu+%zu outside "
			    "[%zu, %zu)", i, off, nv, end, size);
			return -1;
		}
		if (bucket_bs != 0 && off / bucket_bs != (off + nv - 1) / bucket_bs) {
			snprintf(why, whylen, "xattr entry %u straddles a block of its bucket", i);
			return -1;
		}
		if (!local) {
			union xroot r;

			memcpy(r.bytes, (const uint8_t *)xh + off + OCFS2_XATTR_SIZE(xe->xe_name_len),
			    XATTR_ROOT_SIZE);
			if (LE16(r.xv.xr_list.l_count) != 1 || LE16(r.xv.xr_list.l_next_free_rec) > 1) {
				snprintf(why, whylen, "xattr entry %u: value root lists %u of %u records",
				    i, LE16(r.xv.xr_list.l_next_free_rec), LE16(r.xv.xr_list.l_count));
				return -1;
			}
		}
	}
	return 0;
}

void
xattr_register_checks(struct fsd *fs)
{
	fs->check_xattr_header = xattr_header_check;
}

void
xattr_mount(struct fsd *fs, const struct ocfs2_super_block *sb)
{
	fs->xattr = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_XATTR) != 0;
	/* as ocfs2_initialize_super: both only mean something with the feature */
	fs->xattr_inline_size = fs->xattr ? LE16(sb->s_xattr_inline_size) : 0;
	fs->xattr_uuid_hash = fs->xattr ? LE32(sb->s_uuid_hash) : 0;
	/* ocfs2's default: ACLs with the xattr feature, unless noacl (FUSE may still refuse) */
	fs->acl = fs->xattr && !fs->opts.noacl;
	xattr_register_checks(fs);
}

/* ---- one place entries are kept: the inline area, a block, a bucket -------- */

struct xstore {
	struct ocfs2_xattr_header *xh;
	size_t		 size;		/* bytes from xh on that name offsets may reach */
	struct fsd_buf	*buf;		/* to journal (inline area, block) */
};

static void
inline_store(struct fsd *fs, struct fsd_buf *ib, struct xstore *xs)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;

	xs->size = LE16(di->i_xattr_inline_size);
	xs->xh = (struct ocfs2_xattr_header *)(ib->data + fs->vol.block_bytes - xs->size);
	xs->buf = ib;
}

static void
block_store(struct fsd *fs, struct fsd_buf *xb, struct xstore *xs)
{
	struct ocfs2_xattr_block *x = (struct ocfs2_xattr_block *)xb->data;

	xs->xh = &x->xb_attrs.xb_header;
	xs->size = fs->vol.block_bytes - offsetof(struct ocfs2_xattr_block, xb_attrs.xb_header);
	xs->buf = xb;
}

static const char *
entry_name(const struct xstore *xs, const struct ocfs2_xattr_entry *xe)
{
	return (const char *)xs->xh + LE16(xe->xe_name_offset);
}

static uint8_t *
entry_value(const struct xstore *xs, const struct ocfs2_xattr_entry *xe)
{
	return (uint8_t *)xs->xh + LE16(xe->xe_name_offset) + OCFS2_XATTR_SIZE(xe->xe_name_len);
}

static int
store_find(const struct xstore *xs, int index, const char *name, size_t len)
{
	unsigned i;

	for (i = 0; i < LE16(xs->xh->xh_count); i++) {
		const struct ocfs2_xattr_entry *xe = &xs->xh->xh_entries[i];

		if ((xe->xe_type & OCFS2_XATTR_TYPE_MASK) == index && xe->xe_name_len == len &&
		    memcmp(entry_name(xs, xe), name, len) == 0)
			return (int)i;
	}
	return -1;
}

/* The lowest name offset: where the names, growing down, end. */
static size_t
store_free_start(const struct xstore *xs)
{
	size_t start = xs->size, off;
	unsigned i;

	for (i = 0; i < LE16(xs->xh->xh_count); i++)
		if ((off = LE16(xs->xh->xh_entries[i].xe_name_offset)) < start)
			start = off;
	return start;
}

static long
store_free_space(const struct xstore *xs)
{
	return (long)store_free_start(xs) - (long)sizeof(struct ocfs2_xattr_header) -
	    (long)LE16(xs->xh->xh_count) * (long)sizeof(struct ocfs2_xattr_entry) -
	    XATTR_HEADER_GAP;
}

/* Drop entry i and its name and value, keeping the names packed at the end. */
static void
store_remove(struct xstore *xs, unsigned i)
{
	struct ocfs2_xattr_header *xh = xs->xh;
	struct ocfs2_xattr_entry *xe = &xh->xh_entries[i];
	size_t off = LE16(xe->xe_name_offset), first = store_free_start(xs);
	size_t nv = xattr_namevalue_size(xe->xe_name_len, LE64(xe->xe_value_size));
	unsigned count = LE16(xh->xh_count), j;

	memmove((uint8_t *)xh + first + nv, (uint8_t *)xh + first, off - first);
	memset((uint8_t *)xh + first, 0, nv);
	for (j = 0; j < count; j++)
		if (LE16(xh->xh_entries[j].xe_name_offset) < off)
			xh->xh_entries[j].xe_name_offset =
			    htole16((uint16_t)(LE16(xh->xh_entries[j].xe_name_offset) + nv));
	memmove(&xh->xh_entries[i], &xh->xh_entries[i + 1],
	    (count - i - 1) * sizeof(struct ocfs2_xattr_entry));
	memset(&xh->xh_entries[count - 1], 0, sizeof(struct ocfs2_xattr_entry));
	xh->xh_count = htole16((uint16_t)(count - 1));
}

/*
 * Append an entry (space checked by the caller); a value past
 * OCFS2_XATTR_INLINE_SIZE is the root given, its clusters written.
 */
static void
store_add(struct fsd *fs, struct xstore *xs, int index, const char *name, size_t len,
    const void *value, size_t vlen, const union xroot *root)
{
	struct ocfs2_xattr_header *xh = xs->xh;
	unsigned count = LE16(xh->xh_count);
	struct ocfs2_xattr_entry *xe = &xh->xh_entries[count];
	size_t nv = xattr_namevalue_size((unsigned)len, vlen);
	size_t off = store_free_start(xs) - nv;
	uint8_t *p = (uint8_t *)xh + off;

	memset(xe, 0, sizeof(*xe));
	xe->xe_name_hash = htole32(xattr_name_hash(fs->xattr_uuid_hash, name, len));
	xe->xe_name_offset = htole16((uint16_t)off);
	xe->xe_name_len = (uint8_t)len;
	xe->xe_type = (uint8_t)index | (vlen <= OCFS2_XATTR_INLINE_SIZE ? OCFS2_XATTR_ENTRY_LOCAL : 0);
	xe->xe_value_size = htole64(vlen);
	memset(p, 0, nv);
	memcpy(p, name, len);
	if (vlen <= OCFS2_XATTR_INLINE_SIZE)
		memcpy(p + OCFS2_XATTR_SIZE(len), value, vlen);
	else
		memcpy(p + OCFS2_XATTR_SIZE(len), root->bytes, XATTR_ROOT_SIZE);
	xh->xh_count = htole16((uint16_t)(count + 1));
}

/* ---- value trees ------------------------------------------------------ */

/*
 * A value's clusters go: into the truncate log, or, shared with another
 * inode's value by the kernel's reflink (ocfs2_reflink_xattrs), one
 * reference less in the owner's refcount tree. fsd never shares values
 * itself: it copies them.
 */
static int
value_release(struct fsd_handle *h, uint64_t owner, uint8_t flags, uint64_t cpos, unsigned n)
{
	struct fsd_buf *ib;
	int rc;

	if (!(flags & OCFS2_EXT_REFCOUNTED))
		return tl_append(h, (uint32_t)cpos, n);
	/* the owner's META lock is held EX inside h: its block is the cached one */
	if ((rc = block_read(h->fs, owner, BLK_INODE, &ib)) != 0)
		return rc;
	rc = refcount_decrease(h, ib, cpos, n, 1);
	block_put(h->fs, ib);
	return rc;
}

/*
 * Walk the tree under el: count its leaf records into *leaves, and with h
 * set, put every leaf's clusters into the truncate log and free every
 * extent block below el.
 */
static int
tree_walk(struct fsd *fs, struct fsd_handle *h, uint64_t owner, const struct ocfs2_extent_list *el,
    unsigned *leaves, unsigned level)
{
	unsigned depth = LE16(el->l_tree_depth), i;
	int rc;

	if (level > 6)
		return -EIO;
	for (i = 0; i < LE16(el->l_next_free_rec); i++) {
		const struct ocfs2_extent_rec *r = &el->l_recs[i];
		uint64_t blk = LE64(r->e_blkno);
		struct fsd_buf *b;

		if (depth == 0) {
			(*leaves)++;
			if (h != NULL && LE16(r->e_leaf_clusters) != 0 &&
			    (rc = value_release(h, owner, r->e_flags,
			    blk >> (fs->cbits - fs->bbits), LE16(r->e_leaf_clusters))) != 0)
				return rc;
			continue;
		}
		if ((rc = block_read_owned(fs, blk, BLK_EXTENT, owner, &b)) != 0)
			return rc;
		rc = tree_walk(fs, h, owner, &((const struct ocfs2_extent_block *)b->data)->h_list,
		    leaves, level + 1);
		if (rc == 0 && h != NULL)
			rc = free_extent_block(h, b);
		block_put(fs, b);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * A value root's one record checked as any extent list is (inside the
 * volume, aligned) before its clusters are read or freed: a bad one would
 * free clusters of others. 0, or -EIO logged against the inode.
 */
static int
value_root_check(struct fsd *fs, uint64_t owner, const union xroot *r)
{
	char why[160];

	if (extent_list_check(fs, &r->xv.xr_list, 1, why, sizeof(why)) == 0)
		return 0;
	fsd_corrupt(fs, owner, why);
	return -EIO;
}

/* Inside h: free a value's clusters and tree and empty its root (at p, in its storage). */
static int
value_free(struct fsd_handle *h, uint64_t owner, void *p)
{
	unsigned leaves = 0;
	union xroot r;
	int rc;

	memcpy(r.bytes, p, XATTR_ROOT_SIZE);
	if ((rc = value_root_check(h->fs, owner, &r)) != 0 ||
	    (rc = tree_walk(h->fs, h, owner, &r.xv.xr_list, &leaves, 0)) != 0)
		return rc;
	r.xv.xr_clusters = 0;
	r.xv.xr_last_eb_blk = 0;
	r.xv.xr_list.l_tree_depth = 0;
	r.xv.xr_list.l_next_free_rec = 0;
	memset(r.xv.xr_list.l_recs, 0, sizeof(struct ocfs2_extent_rec));
	memcpy(p, r.bytes, XATTR_ROOT_SIZE);
	return 0;
}

/* Read a value kept in clusters into out (vlen bytes). */
static int
value_read(struct fsd *fs, uint64_t owner, const void *p, void *out, size_t vlen)
{
	unsigned bs = fs->vol.block_bytes;
	uint64_t nblocks = (vlen + bs - 1) / bs, lblk = 0, n;
	struct fsd_extent ex;
	union xroot r;
	uint8_t *buf;
	int rc;

	memcpy(r.bytes, p, XATTR_ROOT_SIZE);
	if ((rc = value_root_check(fs, owner, &r)) != 0)
		return rc;
	if ((uint64_t)LE32(r.xv.xr_clusters) << fs->cbits < vlen) {
		fsd_corrupt(fs, owner, "xattr value has fewer clusters than its size needs");
		return -EIO;
	}
	if ((buf = io_alloc(nblocks * bs)) == NULL)
		return -ENOMEM;
	while (lblk < nblocks) {
		if ((rc = extent_map(fs, owner, &r.xv.xr_list, lblk, &ex)) != 0)
			break;
		if (ex.pblk == 0 || ex.nblocks == 0) {
			fsd_corrupt(fs, owner, "xattr value tree has a hole");
			rc = -EIO;
			break;
		}
		n = ex.nblocks < nblocks - lblk ? ex.nblocks : nblocks - lblk;
		if (!block_in_volume(fs, ex.pblk, n)) {
			fsd_corrupt(fs, owner, "xattr value maps blocks outside the volume");
			rc = -EIO;
			break;
		}
		if ((rc = block_io(fs, 0, ex.pblk, (unsigned)n, buf + lblk * bs)) != 0)
			break;
		lblk += n;
	}
	if (lblk == nblocks) {
		memcpy(out, buf, vlen);
		rc = 0;
	}
	free(buf);
	return rc;
}

/*
 * Inside h: clusters for a value of vlen bytes, written now (before the
 * commit that points at them) with the rest of the last cluster zeroed;
 * root describes them.
 */
static int
value_write_new(struct fsd_handle *h, const void *value, size_t vlen, union xroot *r)
{
	struct fsd *fs = h->fs;
	unsigned n = (unsigned)((vlen + fs->vol.cluster_bytes - 1) >> fs->cbits), got;
	uint64_t pblk;
	uint32_t start;
	uint8_t *buf;
	int rc;

	/* one run, so the root's single record maps it (doc/xattr.md) */
	if ((rc = la_claim(h, 0, n, n, &start, &got)) != 0)
		return rc;
	pblk = (uint64_t)start << (fs->cbits - fs->bbits);
	if ((buf = io_alloc((size_t)n << fs->cbits)) == NULL)
		return -ENOMEM;
	memset(buf, 0, (size_t)n << fs->cbits);
	memcpy(buf, value, vlen);
	rc = block_io(fs, 1, pblk, n * fs->bpc, buf);
	free(buf);
	if (rc != 0)
		return rc;
	memset(r->bytes, 0, XATTR_ROOT_SIZE);
	r->xv.xr_clusters = htole32(n);
	r->xv.xr_list.l_count = htole16(1);
	r->xv.xr_list.l_next_free_rec = htole16(1);
	r->xv.xr_list.l_recs[0].e_blkno = htole64(pblk);
	r->xv.xr_list.l_recs[0].e_leaf_clusters = htole16((uint16_t)n);
	return 0;
}

/* ---- buckets (read and free only) --------------------------------------- */

static unsigned
bucket_blocks(const struct fsd *fs)
{
	return OCFS2_XATTR_BUCKET_SIZE / fs->vol.block_bytes;
}

/*
 * metaecc: a bucket's check sits in its header and covers all of its
 * blocks as one (fs/ocfs2/xattr.c, ocfs2_validate_xattr_bucket). A bit
 * put back is put back in the cached block too, so a later change to
 * the bucket does not write the flipped bit home.
 */
static int
bucket_verify(struct fsd *fs, uint64_t owner, uint64_t blkno, uint8_t *bucket)
{
	struct ocfs2_xattr_header *xh = (struct ocfs2_xattr_header *)bucket;
	unsigned i, bs = fs->vol.block_bytes;
	struct fsd_buf *b;
	int rc;

	if (!fs->metaecc)
		return 0;
	rc = blockcheck_verify(bucket, OCFS2_XATTR_BUCKET_SIZE, &xh->xh_check);
	if (rc == -1) {
		fsd_corrupt(fs, blkno, "xattr bucket: metaecc check fails and the error is "
		    "not a single bit");
		return -EIO;
	}
	if (rc == 0)
		return 0;
	log_warnx("%s: xattr bucket at block %llu: metaecc corrected a single-bit error",
	    fs->vol.path, (unsigned long long)blkno);
	for (i = 0; i < bucket_blocks(fs); i++) {
		if (block_read_owned(fs, blkno + i, BLK_RAW, owner, &b) != 0)
			continue;
		pthread_mutex_lock(&b->lock);
		memcpy(b->data, bucket + (size_t)i * bs, bs);
		pthread_mutex_unlock(&b->lock);
		block_put(fs, b);
	}
	return 0;
}

/*
 * metaecc: after a change in place to one block of the bucket at blkno,
 * its check again, in the first block, which joins h.
 */
static int
bucket_recheck(struct fsd_handle *h, uint64_t owner, uint64_t blkno)
{
	struct fsd *fs = h->fs;
	unsigned i, bs = fs->vol.block_bytes;
	struct fsd_buf *first = NULL, *b;
	uint8_t *img;
	int rc = 0;

	if (!fs->metaecc)
		return 0;
	if ((img = malloc(OCFS2_XATTR_BUCKET_SIZE)) == NULL)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < bucket_blocks(fs); i++) {
		if ((rc = block_read_owned(fs, blkno + i, BLK_RAW, owner, &b)) != 0)
			break;
		memcpy(img + (size_t)i * bs, b->data, bs);
		if (i == 0)
			first = b;
		else
			block_put(fs, b);
	}
	if (rc == 0) {
		struct ocfs2_xattr_header *xh = (struct ocfs2_xattr_header *)img;

		blockcheck_compute(img, OCFS2_XATTR_BUCKET_SIZE, &xh->xh_check);
		if ((rc = journal_access(h, first)) == 0) {
			((struct ocfs2_xattr_header *)first->data)->xh_check = xh->xh_check;
			journal_dirty(h, first);
		}
	}
	block_put(fs, first);
	free(img);
	return rc;
}

/* The bucket at blkno, its blocks copied into out (OCFS2_XATTR_BUCKET_SIZE). */
static int
bucket_read(struct fsd *fs, uint64_t owner, uint64_t blkno, uint8_t *out)
{
	unsigned i, n = bucket_blocks(fs);
	struct fsd_buf *b;
	char why[160];
	int rc;

	if (!block_in_volume(fs, blkno, n)) {
		fsd_corrupt(fs, owner, "xattr bucket outside the volume");
		return -EIO;
	}
	for (i = 0; i < n; i++) {
		if ((rc = block_read_owned(fs, blkno + i, BLK_RAW, owner, &b)) != 0)
			return rc;
		memcpy(out + (size_t)i * fs->vol.block_bytes, b->data, fs->vol.block_bytes);
		block_put(fs, b);
	}
	if ((rc = bucket_verify(fs, owner, blkno, out)) != 0)
		return rc;
	if (xattr_header_check((const struct ocfs2_xattr_header *)out, OCFS2_XATTR_BUCKET_SIZE,
	    fs->vol.block_bytes, why, sizeof(why)) != 0) {
		fsd_corrupt(fs, blkno, why);
		return -EIO;
	}
	return 0;
}

/* Called for each bucket: nonzero stops the walk (and is returned). */
typedef int bucket_fn(struct fsd *fs, uint64_t blkno, uint8_t *bucket, void *arg);

/* Each bucket of the run a leaf record of the xattr tree maps. */
static int
bucket_run(struct fsd *fs, uint64_t owner, const struct ocfs2_extent_rec *r, uint8_t *bucket,
    bucket_fn *fn, void *arg)
{
	uint64_t blk = LE64(r->e_blkno);
	unsigned per_cluster = fs->vol.cluster_bytes / OCFS2_XATTR_BUCKET_SIZE;
	unsigned nb, i;
	int rc;

	if ((rc = bucket_read(fs, owner, blk, bucket)) != 0)
		return rc;
	/* xh_num_buckets of a run's first bucket: how many are in use */
	nb = LE16(((const struct ocfs2_xattr_header *)bucket)->xh_num_buckets);
	if (nb == 0 || nb > (unsigned)LE16(r->e_leaf_clusters) * per_cluster) {
		fsd_corrupt(fs, blk, "xattr bucket run counts an impossible number of buckets");
		return -EIO;
	}
	for (i = 0; i < nb; i++) {
		if (i > 0 && (rc = bucket_read(fs, owner, blk + (uint64_t)i * bucket_blocks(fs),
		    bucket)) != 0)
			return rc;
		if ((rc = fn(fs, blk + (uint64_t)i * bucket_blocks(fs), bucket, arg)) != 0)
			return rc;
	}
	return 0;
}

/* Each bucket of an indexed block's tree, in hash order. */
static int
bucket_walk(struct fsd *fs, uint64_t owner, const struct ocfs2_extent_list *el, unsigned level,
    bucket_fn *fn, void *arg)
{
	unsigned i, depth = LE16(el->l_tree_depth);
	uint8_t *bucket;
	int rc = 0;

	if (level > 6)
		return -EIO;
	if ((bucket = malloc(OCFS2_XATTR_BUCKET_SIZE)) == NULL)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < LE16(el->l_next_free_rec); i++) {
		const struct ocfs2_extent_rec *r = &el->l_recs[i];
		struct fsd_buf *b;

		if (depth == 0) {
			rc = bucket_run(fs, owner, r, bucket, fn, arg);
			continue;
		}
		if ((rc = block_read_owned(fs, LE64(r->e_blkno), BLK_EXTENT, owner, &b)) != 0)
			break;
		rc = bucket_walk(fs, owner, &((const struct ocfs2_extent_block *)b->data)->h_list,
		    level + 1, fn, arg);
		block_put(fs, b);
	}
	free(bucket);
	return rc;
}

/* ---- reading ------------------------------------------------------------- */

/* What a search found: where, and the value's size. */
struct xfound {
	int		 index;
	const char	*name;
	size_t		 len;
	uint64_t	 owner;
	void		*out;		/* value goes here when it fits */
	size_t		 outlen;
	int		 found;
	uint64_t	 vsize;
	int		 rc;
};

/* Found in xs: its size, and its value into f->out if there is room. */
static int
fetch(struct fsd *fs, const struct xstore *xs, struct xfound *f)
{
	int i = store_find(xs, f->index, f->name, f->len);
	const struct ocfs2_xattr_entry *xe;

	if (i < 0)
		return 0;
	xe = &xs->xh->xh_entries[i];
	f->found = 1;
	f->vsize = LE64(xe->xe_value_size);
	if (f->out == NULL || f->vsize > f->outlen)
		return 1;
	if (xe->xe_type & OCFS2_XATTR_ENTRY_LOCAL)
		memcpy(f->out, entry_value(xs, xe), f->vsize);
	else
		f->rc = value_read(fs, f->owner, entry_value(xs, xe), f->out, f->vsize);
	return 1;
}

static int
fetch_bucket(struct fsd *fs, uint64_t blkno, uint8_t *bucket, void *arg)
{
	struct xstore xs = { (struct ocfs2_xattr_header *)bucket, OCFS2_XATTR_BUCKET_SIZE, NULL };

	(void)blkno;
	return fetch(fs, &xs, arg);
}

/* Read the xattr block of a locked inode (validated as BLK_XATTR). */
static int
xblock_read(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t owner, struct fsd_buf **bp)
{
	uint64_t loc = LE64(di->i_xattr_loc);

	if (!block_in_volume(fs, loc, 1)) {
		fsd_corrupt(fs, owner, "i_xattr_loc points outside the volume");
		return -EIO;
	}
	return block_read_owned(fs, loc, BLK_XATTR, owner, bp);
}

static int
xblock_indexed(const struct fsd_buf *xb)
{
	return (LE16(((const struct ocfs2_xattr_block *)xb->data)->xb_flags) & OCFS2_XATTR_INDEXED) != 0;
}

/* Look for an attribute anywhere in the locked inode ib. */
static int
search(struct fsd *fs, struct fsd_buf *ib, struct xfound *f)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)ib->data;
	struct xstore xs;
	struct fsd_buf *xb;
	int rc = 0;

	f->owner = ib->blkno;
	if (LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL) {
		inline_store(fs, ib, &xs);
		if (fetch(fs, &xs, f))
			return f->rc;
	}
	if (LE64(di->i_xattr_loc) == 0)
		return 0;
	if ((rc = xblock_read(fs, di, ib->blkno, &xb)) != 0)
		return rc;
	if (!xblock_indexed(xb)) {
		block_store(fs, xb, &xs);
		fetch(fs, &xs, f);
		rc = f->rc;
	} else {
		rc = bucket_walk(fs, ib->blkno,
		    &((struct ocfs2_xattr_block *)xb->data)->xb_attrs.xb_root.xt_list, 0,
		    fetch_bucket, f);
		rc = rc == 1 ? f->rc : rc;
	}
	block_put(fs, xb);
	return rc;
}

int
xattr_get(struct fsd *fs, struct fsd_inode *ip, int index, const char *name, void *out,
    size_t outlen, size_t *vlen)
{
	struct xfound f = { index, name, strlen(name), 0, out, outlen, 0, 0, 0 };
	struct fsd_buf *ib;
	int rc, level;

	/*
	 * While the file is open for writing here, at the level its READs
	 * take: the kernel asks for security.capability before each write(2)
	 * (file_remove_privs), whose WRITE then finds EX here, where PR would
	 * cost a second handoff from the other node.
	 */
	if ((rc = inode_lock_block_read(fs, ip, lockres_read_level(ip->meta), &level, &ib)) != 0)
		return rc;
	rc = search(fs, ib, &f);
	inode_unlock_block(fs, ip, level, ib);
	if (rc != 0)
		return rc;
	if (!f.found)
		return -ENODATA;
	*vlen = f.vsize;
	return out != NULL && f.vsize > outlen ? -ERANGE : 0;
}

/* listxattr's buffer: names with their prefix, NUL after each. */
struct xlist {
	char	*out;
	size_t	 outlen, len;
	int	 acl;		/* list the ACL names */
};

static void
list_store(const struct xstore *xs, struct xlist *l)
{
	unsigned i;

	for (i = 0; i < LE16(xs->xh->xh_count); i++) {
		const struct ocfs2_xattr_entry *xe = &xs->xh->xh_entries[i];
		int type = xe->xe_type & OCFS2_XATTR_TYPE_MASK;
		const char *prefix = xattr_prefix(type);
		size_t pl, n;

		/* a noacl mount does not list ACLs */
		if (prefix == NULL || (!l->acl && (type == XATTR_INDEX_POSIX_ACL_ACCESS ||
		    type == XATTR_INDEX_POSIX_ACL_DEFAULT)))
			continue;
		pl = strlen(prefix);
		n = pl + xe->xe_name_len + 1;
		if (l->out != NULL && l->len + n <= l->outlen) {
			memcpy(l->out + l->len, prefix, pl);
			memcpy(l->out + l->len + pl, entry_name(xs, xe), xe->xe_name_len);
			l->out[l->len + n - 1] = '\0';
		}
		l->len += n;
	}
}

static int
list_bucket(struct fsd *fs, uint64_t blkno, uint8_t *bucket, void *arg)
{
	struct xstore xs = { (struct ocfs2_xattr_header *)bucket, OCFS2_XATTR_BUCKET_SIZE, NULL };

	(void)fs;
	(void)blkno;
	list_store(&xs, arg);
	return 0;
}

int
xattr_list(struct fsd *fs, struct fsd_inode *ip, char *out, size_t outlen, size_t *len)
{
	struct xlist l = { out, outlen, 0, fs->acl };
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib, *xb;
	struct xstore xs;
	int rc = 0;

	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)ib->data;
	if (LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL) {
		inline_store(fs, ib, &xs);
		list_store(&xs, &l);
	}
	if (LE64(di->i_xattr_loc) != 0 && (rc = xblock_read(fs, di, ib->blkno, &xb)) == 0) {
		if (!xblock_indexed(xb)) {
			block_store(fs, xb, &xs);
			list_store(&xs, &l);
		} else
			rc = bucket_walk(fs, ib->blkno,
			    &((struct ocfs2_xattr_block *)xb->data)->xb_attrs.xb_root.xt_list, 0,
			    list_bucket, &l);
		block_put(fs, xb);
	}
	inode_unlock_block(fs, ip, LKM_PR, ib);
	if (rc != 0)
		return rc;
	*len = l.len;
	return out != NULL && l.len > outlen ? -ERANGE : 0;
}

/* ---- changing ------------------------------------------------------------- */

/* May the inline area of di be made now (ocfs2_xattr_has_space_inline)? */
static int
inline_room(struct fsd *fs, const struct ocfs2_dinode *di)
{
	unsigned size = fs->xattr_inline_size;
	long free;

	if (size < OCFS2_MIN_XATTR_INLINE_SIZE || fs->vol.block_bytes <= OCFS2_MIN_BLOCKSIZE)
		return 0;
	/*
	 * A directory holding its entries inline has i_size = id_count
	 * (ocfs2_fill_new_dir_id): never room, as in the kernel, so dir.c
	 * may rebuild its id2 over the whole block tail when it expands.
	 */
	if (inline_has(di))
		free = (long)LE16(di->id2.i_data.id_count) - (long)LE64(di->i_size);
	else if (fsd_fast_symlink(di))
		free = (long)ocfs2_fast_symlink_chars((int)fs->vol.block_bytes) - (long)LE64(di->i_size);
	else
		free = ((long)LE16(di->id2.i_list.l_count) - (long)LE16(di->id2.i_list.l_next_free_rec)) *
		    (long)sizeof(struct ocfs2_extent_rec);
	return free >= (long)size;
}

/* Take the inline area out of what id2 holds (ocfs2_xattr_ibody_init). ib accessed. */
static void
inline_init(struct fsd *fs, struct fsd_buf *ib)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	unsigned size = fs->xattr_inline_size;

	if (inline_has(di))
		di->id2.i_data.id_count = htole16((uint16_t)(LE16(di->id2.i_data.id_count) - size));
	else if (!fsd_fast_symlink(di))
		di->id2.i_list.l_count = htole16((uint16_t)(LE16(di->id2.i_list.l_count) -
		    size / sizeof(struct ocfs2_extent_rec)));
	memset(ib->data + fs->vol.block_bytes - size, 0, size);
	di->i_xattr_inline_size = htole16((uint16_t)size);
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_INLINE_XATTR_FL |
	    OCFS2_HAS_XATTR_FL);
}

/* Inside h, xs's buffer accessed: remove entry i, freeing its value's clusters. */
static int
store_delete(struct fsd_handle *h, uint64_t owner, struct xstore *xs, unsigned i)
{
	struct ocfs2_xattr_entry *xe = &xs->xh->xh_entries[i];
	int rc;

	if (!(xe->xe_type & OCFS2_XATTR_ENTRY_LOCAL) &&
	    (rc = value_free(h, owner, entry_value(xs, xe))) != 0)
		return rc;
	store_remove(xs, i);
	return 0;
}

/*
 * Inside h, xs's buffer accessed: set the attribute in xs, replacing
 * entry old (-1: none). -ENOSPC when it does not fit, nothing changed.
 */
static int
store_set(struct fsd_handle *h, uint64_t owner, struct xstore *xs, int old, int index,
    const char *name, size_t len, const void *value, size_t vlen)
{
	long need = (long)entry_usage((unsigned)len, vlen), free = store_free_space(xs);
	union xroot rootbuf, *root = NULL;
	int rc;

	if (old >= 0)
		need -= (long)entry_usage(xs->xh->xh_entries[old].xe_name_len,
		    LE64(xs->xh->xh_entries[old].xe_value_size));
	if (free < 0) {
		fsd_corrupt(h->fs, xs->buf->blkno, "xattr entries overlap their names");
		return -EIO;
	}
	if (need > free)
		return -ENOSPC;
	if (vlen > OCFS2_XATTR_INLINE_SIZE) {
		root = &rootbuf;
		if ((rc = value_write_new(h, value, vlen, root)) != 0)
			return rc;
	}
	if (old >= 0 && (rc = store_delete(h, owner, xs, (unsigned)old)) != 0)
		return rc;
	store_add(h->fs, xs, index, name, len, value, vlen, root);
	return 0;
}

/* Inside h: a new, empty xattr block for the inode ib (accessed). */
static int
xblock_create(struct fsd_handle *h, struct fsd_buf *ib, struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct ocfs2_xattr_block *x;
	struct fsd_subbit sb;
	int rc;

	if ((rc = suballoc_claim(h, SUBALLOC_EXTENT, &sb)) != 0)
		return rc;
	if ((rc = block_new_owned(fs, sb.blkno, BLK_XATTR, ib->blkno, bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	x = (struct ocfs2_xattr_block *)(*bp)->data;
	memcpy(x->xb_signature, OCFS2_XATTR_BLOCK_SIGNATURE, sizeof(OCFS2_XATTR_BLOCK_SIGNATURE));
	x->xb_suballoc_slot = htole16(sb.slot);
	x->xb_suballoc_bit = htole16(sb.bit);
	x->xb_suballoc_loc = htole64(sb.group);
	x->xb_fs_generation = htole32(fs->fs_generation);
	x->xb_blkno = htole64(sb.blkno);
	di->i_xattr_loc = htole64(sb.blkno);
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_HAS_XATTR_FL);
	return 0;
}

/* What the change of one attribute found in the inode, under its EX lock. */
struct xchange {
	struct fsd_buf	*ib, *xb;	/* xb: the xattr block, if any */
	struct xstore	 in, blk;
	int		 has_in, has_blk, indexed;
	int		 in_at, blk_at, in_bucket;
};

static int
change_find(struct fsd *fs, struct xchange *c, int index, const char *name, size_t len)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)c->ib->data;
	int rc;

	c->in_at = c->blk_at = -1;
	if ((c->has_in = (LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL) != 0)) {
		inline_store(fs, c->ib, &c->in);
		c->in_at = store_find(&c->in, index, name, len);
	}
	if (LE64(di->i_xattr_loc) == 0)
		return 0;
	if ((rc = xblock_read(fs, di, c->ib->blkno, &c->xb)) != 0)
		return rc;
	c->has_blk = 1;
	if ((c->indexed = xblock_indexed(c->xb))) {
		struct xfound f = { index, name, len, c->ib->blkno, NULL, 0, 0, 0, 0 };

		rc = bucket_walk(fs, c->ib->blkno,
		    &((struct ocfs2_xattr_block *)c->xb->data)->xb_attrs.xb_root.xt_list, 0,
		    fetch_bucket, &f);
		if (rc < 0)
			return rc;
		c->in_bucket = f.found;
	} else {
		block_store(fs, c->xb, &c->blk);
		c->blk_at = store_find(&c->blk, index, name, len);
	}
	return 0;
}

/* ---- writing buckets ---------------------------------------------------- */

/*
 * One attribute on its way into rebuilt buckets: its entry's facts and
 * its name and value (or value root) bytes as they are stored.
 */
struct xent {
	uint32_t	 hash;
	uint8_t		 type;		/* xe_type, the local flag included */
	uint8_t		 name_len;
	uint64_t	 vsize;
	size_t		 nv;
	uint8_t		 data[OCFS2_XATTR_SIZE(XATTR_SUFFIX_MAX) + OCFS2_XATTR_INLINE_SIZE];
};

struct xents {
	struct xent	*v;
	unsigned	 n, cap;
};

static int
xents_push(struct xents *a, const struct xstore *xs, const struct ocfs2_xattr_entry *xe)
{
	struct xent *e;

	if (a->n == a->cap) {
		unsigned cap = a->cap ? 2 * a->cap : 64;
		struct xent *v = realloc(a->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	e = &a->v[a->n++];
	e->hash = LE32(xe->xe_name_hash);
	e->type = xe->xe_type;
	e->name_len = xe->xe_name_len;
	e->vsize = LE64(xe->xe_value_size);
	e->nv = xattr_namevalue_size(xe->xe_name_len, e->vsize);
	memcpy(e->data, entry_name(xs, xe), e->nv);
	return 0;
}

static int
gather_store(struct xents *a, const struct xstore *xs)
{
	unsigned i;
	int rc;

	for (i = 0; i < LE16(xs->xh->xh_count); i++)
		if ((rc = xents_push(a, xs, &xs->xh->xh_entries[i])) != 0)
			return rc;
	return 0;
}

static int
gather_bucket(struct fsd *fs, uint64_t blkno, uint8_t *bucket, void *arg)
{
	struct xstore xs = { (struct ocfs2_xattr_header *)bucket, OCFS2_XATTR_BUCKET_SIZE, NULL };

	(void)fs;
	(void)blkno;
	return gather_store(arg, &xs);
}

static int
xent_cmp(const void *a, const void *b)
{
	const struct xent *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/*
 * Where a name and value of nv bytes go below free_start in a bucket: in
 * one block, as ocfs2_bucket_align_free_start keeps them.
 */
static size_t
bucket_place(unsigned bs, size_t free_start, size_t nv)
{
	if ((free_start - nv) / bs != (free_start - 1) / bs)
		free_start -= free_start % bs;
	return free_start - nv;
}

/*
 * Lay the sorted attributes out into buckets (out: nb buckets' room, or
 * NULL to count): each bucket full as the kernel's space check allows,
 * entries of one hash never split across two buckets. The number of
 * buckets, at least one; 0 when the entries of one hash do not fit in a
 * bucket on their own.
 */
static unsigned
bucket_pack(struct fsd *fs, const struct xents *a, uint8_t *out)
{
	unsigned bs = fs->vol.block_bytes, nb = 1, i = 0, j, k, count = 0;
	size_t free_start = OCFS2_XATTR_BUCKET_SIZE, nvlen = 0;
	struct ocfs2_xattr_header *xh = (void *)out;

	while (i < a->n) {
		size_t fs2 = free_start;

		/* the run of equal hashes from i goes whole into one bucket */
		for (j = i; j < a->n && a->v[j].hash == a->v[i].hash; j++)
			fs2 = fs2 > a->v[j].nv ? bucket_place(bs, fs2, a->v[j].nv) : 0;
		if ((long)fs2 - (long)sizeof(*xh) - (long)((count + j - i) *
		    sizeof(struct ocfs2_xattr_entry)) - XATTR_HEADER_GAP < 0) {
			if (count == 0)
				return 0;
			/* full: the next bucket */
			if (out != NULL) {
				xh->xh_free_start = htole16((uint16_t)free_start);
				xh->xh_name_value_len = htole16((uint16_t)nvlen);
				xh = (void *)(out + (size_t)nb * OCFS2_XATTR_BUCKET_SIZE);
			}
			nb++;
			count = 0;
			nvlen = 0;
			free_start = OCFS2_XATTR_BUCKET_SIZE;
			continue;
		}
		for (k = i; k < j; k++) {
			free_start = bucket_place(bs, free_start, a->v[k].nv);
			if (out != NULL) {
				struct ocfs2_xattr_entry *xe = &xh->xh_entries[count];

				xe->xe_name_hash = htole32(a->v[k].hash);
				xe->xe_name_offset = htole16((uint16_t)free_start);
				xe->xe_name_len = a->v[k].name_len;
				xe->xe_type = a->v[k].type;
				xe->xe_value_size = htole64(a->v[k].vsize);
				memcpy((uint8_t *)xh + free_start, a->v[k].data, a->v[k].nv);
			}
			nvlen += a->v[k].nv;
			count++;
			if (out != NULL)
				xh->xh_count = htole16((uint16_t)count);
		}
		i = j;
	}
	if (out != NULL) {
		xh->xh_free_start = htole16((uint16_t)free_start);
		xh->xh_name_value_len = htole16((uint16_t)nvlen);
		((struct ocfs2_xattr_header *)out)->xh_num_buckets = htole16((uint16_t)nb);
	}
	return nb;
}

/*
 * Inside h, c->xb accessed: the block's attributes (its header, or every
 * bucket of its tree) with name removed and, if value is set, the new
 * one added, written sorted into new buckets of one cluster run; the old
 * run and tree are freed and the block becomes (or stays) the root of a
 * one-record tree. As the kernel's trees: buckets in hash order, a run's
 * first bucket counting them, e_cpos of the first record 0.
 */
static int
index_rebuild(struct fsd_handle *h, struct xchange *c, int index, const char *name, size_t len,
    const void *value, size_t vlen)
{
	struct fsd *fs = h->fs;
	struct ocfs2_xattr_block *x = (struct ocfs2_xattr_block *)c->xb->data;
	struct ocfs2_xattr_tree_root *xt = &x->xb_attrs.xb_root;
	unsigned per_cluster = fs->vol.cluster_bytes / OCFS2_XATTR_BUCKET_SIZE, nb, n, got, i;
	unsigned leaves = 0;
	struct xents a = { NULL, 0, 0 };
	uint8_t *buf = NULL;
	uint64_t pblk;
	uint32_t start;
	int rc;

	if (per_cluster == 0)
		return -EIO;
	if (c->indexed)
		rc = bucket_walk(fs, c->ib->blkno, &xt->xt_list, 0, gather_bucket, &a);
	else
		rc = gather_store(&a, &c->blk);
	if (rc != 0)
		goto out;
	/* the old one out, its clusters freed with this handle */
	for (i = 0; i < a.n; i++) {
		struct xent *e = &a.v[i];

		if ((e->type & OCFS2_XATTR_TYPE_MASK) != index || e->name_len != len ||
		    memcmp(e->data, name, len) != 0)
			continue;
		if (!(e->type & OCFS2_XATTR_ENTRY_LOCAL) && (rc = value_free(h, c->ib->blkno,
		    e->data + OCFS2_XATTR_SIZE(e->name_len))) != 0)
			goto out;
		a.v[i] = a.v[--a.n];
		break;
	}
	if (value != NULL) {
		/* room for a header, one entry and the largest name and value */
		uint64_t tmp[(sizeof(struct ocfs2_xattr_header) + sizeof(struct ocfs2_xattr_entry) +
		    sizeof(((struct xent *)NULL)->data)) / 8 + 1];
		struct xstore one = { (struct ocfs2_xattr_header *)tmp, 0, NULL };
		union xroot rootbuf, *root = NULL;

		/* the new entry made as a block's would be, then taken from there */
		memset(tmp, 0, sizeof(tmp));
		one.size = sizeof(struct ocfs2_xattr_header) + sizeof(struct ocfs2_xattr_entry) +
		    xattr_namevalue_size((unsigned)len, vlen);
		if (vlen > OCFS2_XATTR_INLINE_SIZE) {
			root = &rootbuf;
			if ((rc = value_write_new(h, value, vlen, root)) != 0)
				goto out;
		}
		store_add(fs, &one, index, name, len, value, vlen, root);
		if ((rc = xents_push(&a, &one, &one.xh->xh_entries[0])) != 0)
			goto out;
	}
	qsort(a.v, a.n, sizeof(*a.v), xent_cmp);
	nb = bucket_pack(fs, &a, NULL);
	n = (nb + per_cluster - 1) / per_cluster;
	if (nb == 0 || n > UINT16_MAX) {
		rc = -ENOSPC;
		goto out;
	}
	/* the old tree's runs and blocks go to the truncate log with this handle */
	if (c->indexed) {
		if ((rc = tree_walk(fs, NULL, c->ib->blkno, &xt->xt_list, &leaves, 0)) != 0)
			goto out;
		if ((int)leaves > tl_room(fs)) {
			rc = -EAGAIN;
			goto out;
		}
	}
	if ((rc = la_claim(h, 0, n, n, &start, &got)) != 0)
		goto out;
	pblk = (uint64_t)start << (fs->cbits - fs->bbits);
	if ((buf = io_alloc((size_t)n << fs->cbits)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(buf, 0, (size_t)n << fs->cbits);
	bucket_pack(fs, &a, buf);
	for (i = 0; fs->metaecc && i < (n << fs->cbits) / OCFS2_XATTR_BUCKET_SIZE; i++) {
		uint8_t *bk = buf + (size_t)i * OCFS2_XATTR_BUCKET_SIZE;

		blockcheck_compute(bk, OCFS2_XATTR_BUCKET_SIZE,
		    &((struct ocfs2_xattr_header *)bk)->xh_check);
	}
	/*
	 * Written before the commit that points the block at them (new
	 * clusters, as value_write_new's); what the cache held of these
	 * blocks is forgotten.
	 */
	for (i = 0; i < n * fs->bpc; i++)
		block_forget(fs, pblk + i);
	if ((rc = block_io(fs, 1, pblk, n * fs->bpc, buf)) != 0)
		goto out;
	if (c->indexed && (rc = tree_walk(fs, h, c->ib->blkno, &xt->xt_list, &leaves, 0)) != 0)
		goto out;
	memset(&x->xb_attrs, 0, fs->vol.block_bytes - offsetof(struct ocfs2_xattr_block, xb_attrs));
	x->xb_flags = htole16(LE16(x->xb_flags) | OCFS2_XATTR_INDEXED);
	xt->xt_clusters = htole32(n);
	xt->xt_list.l_count = htole16((uint16_t)ocfs2_xattr_recs_per_xb((int)fs->vol.block_bytes));
	xt->xt_list.l_next_free_rec = htole16(1);
	xt->xt_list.l_recs[0].e_blkno = htole64(pblk);
	xt->xt_list.l_recs[0].e_leaf_clusters = htole16((uint16_t)n);
	c->indexed = 1;
	journal_dirty(h, c->xb);
out:
	free(buf);
	free(a.v);
	return rc;
}

/* Set in the external block, creating it; indexed into buckets when it is full. */
static int
set_in_block(struct fsd_handle *h, struct xchange *c, int index, const char *name, size_t len,
    const void *value, size_t vlen)
{
	int rc;

	if (!c->has_blk) {
		if ((rc = xblock_create(h, c->ib, &c->xb)) != 0)
			return rc;
		c->has_blk = 1;
		block_store(h->fs, c->xb, &c->blk);
	} else if ((rc = journal_access(h, c->xb)) != 0)
		return rc;
	if (c->indexed)
		return index_rebuild(h, c, index, name, len, value, vlen);
	rc = store_set(h, c->ib->blkno, &c->blk, c->blk_at, index, name, len, value, vlen);
	if (rc == -ENOSPC)
		/* full: its entries and this one into buckets (ocfs2_xattr_create_index_block) */
		return index_rebuild(h, c, index, name, len, value, vlen);
	if (rc == 0)
		journal_dirty(h, c->xb);
	return rc;
}

/* Remove from the external block (c->blk_at, or a bucket). */
static int
remove_in_block(struct fsd_handle *h, struct xchange *c, int index, const char *name, size_t len)
{
	int rc;

	if ((rc = journal_access(h, c->xb)) != 0)
		return rc;
	if (c->indexed)
		return index_rebuild(h, c, index, name, len, NULL, 0);
	if ((rc = store_delete(h, c->ib->blkno, &c->blk, (unsigned)c->blk_at)) == 0)
		journal_dirty(h, c->xb);
	return rc;
}

/* The change itself, in h, ib accessed (ocfs2_xattr_set's order of attempts). */
static int
change(struct fsd_handle *h, struct xchange *c, int index, const char *name, size_t len,
    const void *value, size_t vlen, int flags)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)c->ib->data;
	int in_blk = c->blk_at >= 0 || c->in_bucket;
	int exists = c->in_at >= 0 || in_blk;
	int rc;

	if (!exists && (flags & XATTR_REPLACE))
		return -ENODATA;
	if (exists && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!exists && value == NULL)
		return 0;
	if (value == NULL) {
		if (c->in_at >= 0)
			return store_delete(h, c->ib->blkno, &c->in, (unsigned)c->in_at);
		return remove_in_block(h, c, index, name, len);
	}
	/* inline first, as the kernel tries */
	rc = -ENOSPC;
	if (!c->has_in && inline_room(fs, di) &&
	    entry_usage((unsigned)len, vlen) + sizeof(struct ocfs2_xattr_header) + XATTR_HEADER_GAP <=
	    fs->xattr_inline_size) {
		inline_init(fs, c->ib);
		inline_store(fs, c->ib, &c->in);
		c->has_in = 1;
	}
	if (c->has_in)
		rc = store_set(h, c->ib->blkno, &c->in, c->in_at, index, name, len, value, vlen);
	if (rc == 0)
		return in_blk ? remove_in_block(h, c, index, name, len) : 0;
	if (rc != -ENOSPC)
		return rc;
	if ((rc = set_in_block(h, c, index, name, len, value, vlen)) != 0)
		return rc;
	if (c->in_at >= 0)
		return store_delete(h, c->ib->blkno, &c->in, (unsigned)c->in_at);
	return 0;
}

/* Room in the truncate log for what one change may free (a value's records). */
static int
tl_make_room(struct fsd *fs, int want)
{
	int rc;

	if (tl_room(fs) >= want)
		return 0;
	if ((rc = tl_flush(fs)) != 0)
		return rc;
	return tl_room(fs) >= want ? 0 : -ENOSPC;
}

/* A value tree the kernel wrote may have up to one record per cluster. */
#define XATTR_TL_NEED	(XATTR_VALUE_MAX / 4096 + 2)

static int
set_once(struct fsd *fs, struct fsd_inode *ip, int index, const char *name, size_t len,
    const void *value, size_t vlen, int flags, int mode)
{
	struct xchange c;
	struct fsd_handle h;
	struct ocfs2_dinode *di;
	int rc;

	if ((rc = tl_make_room(fs, XATTR_TL_NEED)) != 0)
		return rc;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	memset(&c, 0, sizeof(c));
	if ((rc = inode_lock_block(fs, ip, LKM_EX, &c.ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	di = (struct ocfs2_dinode *)c.ib->data;
	if ((rc = change_find(fs, &c, index, name, len)) == 0 &&
	    (rc = journal_access(&h, c.ib)) == 0) {
		rc = change(&h, &c, index, name, len, value, vlen, flags);
		if (rc == 0) {
			if (mode >= 0)
				di->i_mode = htole16((uint16_t)((LE16(di->i_mode) & ~0777u) |
				    ((unsigned)mode & 0777)));
			inode_now(di, 0, 0, 1);
			journal_dirty(&h, c.ib);
		}
	}
	if (c.xb != NULL)
		block_put(fs, c.xb);
	inode_unlock_block_in(&h, ip, c.ib);
	journal_stop(&h, rc != 0);
	return rc;
}

int
xattr_set(struct fsd *fs, struct fsd_inode *ip, int index, const char *name, const void *value,
    size_t vlen, int flags)
{
	return xattr_set_mode(fs, ip, index, name, value, vlen, flags, -1);
}

int
xattr_set_mode(struct fsd *fs, struct fsd_inode *ip, int index, const char *name,
    const void *value, size_t vlen, int flags, int mode)
{
	size_t len = strlen(name);
	struct fsd_reclaim room = { 0 };
	int rc;

	if (!fs->xattr)
		return -EOPNOTSUPP;
	if (fs->readonly)
		return -EROFS;
	if (len > XATTR_SUFFIX_MAX)
		return -ERANGE;
	if (value != NULL && vlen > XATTR_VALUE_MAX)
		return -E2BIG;
	rc = set_once(fs, ip, index, name, len, value, vlen, flags, mode);
	/* a bucket tree of more runs than the truncate log has room for now */
	if (rc == -EAGAIN && (rc = tl_flush(fs)) == 0)
		rc = set_once(fs, ip, index, name, len, value, vlen, flags, mode);
	while (rc == -ENOSPC && fsd_reclaim(fs, &room))
		rc = set_once(fs, ip, index, name, len, value, vlen, flags, mode);
	return rc == -EAGAIN ? -ENOSPC : rc;
}

/* ---- deleting an inode's attributes --------------------------------------- */

/* The first value in a bucket that still holds clusters: where its root is. */
struct xbucket_value {
	uint64_t	 blkno;		/* the bucket */
	size_t		 off;		/* of the value root in it */
	int		 found;
};

static int
find_bucket_value(struct fsd *fs, uint64_t blkno, uint8_t *bucket, void *arg)
{
	struct xstore xs = { (struct ocfs2_xattr_header *)bucket, OCFS2_XATTR_BUCKET_SIZE, NULL };
	struct xbucket_value *v = arg;
	unsigned i;

	(void)fs;
	for (i = 0; i < LE16(xs.xh->xh_count); i++) {
		const struct ocfs2_xattr_entry *xe = &xs.xh->xh_entries[i];
		union xroot r;

		if (xe->xe_type & OCFS2_XATTR_ENTRY_LOCAL)
			continue;
		memcpy(r.bytes, entry_value(&xs, xe), XATTR_ROOT_SIZE);
		if (LE16(r.xv.xr_list.l_next_free_rec) == 0)
			continue;
		v->blkno = blkno;
		v->off = (size_t)(entry_value(&xs, xe) - bucket);
		v->found = 1;
		return 1;
	}
	return 0;
}

/*
 * One step of freeing what an inode's attributes hold, in h with ib
 * accessed: 1 when a step was taken, 0 when nothing is left.
 */
static int
free_step(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	struct xstore xs;
	struct fsd_buf *xb;
	struct ocfs2_xattr_block *x;
	unsigned i, leaves = 0;
	int rc;

	/* values in clusters first, one per step: each step leaves a consistent inode */
	if (LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL) {
		inline_store(fs, ib, &xs);
		for (i = 0; i < LE16(xs.xh->xh_count); i++)
			if (!(xs.xh->xh_entries[i].xe_type & OCFS2_XATTR_ENTRY_LOCAL))
				return store_delete(h, ib->blkno, &xs, i) == 0 ? 1 : -EIO;
	}
	if (LE64(di->i_xattr_loc) == 0) {
		di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_HAS_XATTR_FL);
		return 0;
	}
	if ((rc = xblock_read(fs, di, ib->blkno, &xb)) != 0)
		return rc;
	x = (struct ocfs2_xattr_block *)xb->data;
	if ((rc = journal_access(h, xb)) != 0)
		goto out;
	if (!xblock_indexed(xb)) {
		block_store(fs, xb, &xs);
		for (i = 0; i < LE16(xs.xh->xh_count); i++)
			if (!(xs.xh->xh_entries[i].xe_type & OCFS2_XATTR_ENTRY_LOCAL)) {
				if ((rc = store_delete(h, ib->blkno, &xs, i)) == 0) {
					journal_dirty(h, xb);
					rc = 1;
				}
				goto out;
			}
	} else {
		struct xbucket_value v = { 0, 0, 0 };
		const struct ocfs2_extent_list *xl = &x->xb_attrs.xb_root.xt_list;
		struct fsd_buf *bb;

		if ((rc = bucket_walk(fs, ib->blkno, xl, 0, find_bucket_value, &v)) < 0)
			goto out;
		if (v.found) {
			/*
			 * One value a step, its root emptied in the bucket's
			 * block with the freeing (as ocfs2_xattr_value_truncate).
			 * The block goes home before its cluster is reused:
			 * tl_flush checkpoints first.
			 */
			uint64_t blk = v.blkno + v.off / fs->vol.block_bytes;

			if ((rc = block_read_owned(fs, blk, BLK_RAW, ib->blkno, &bb)) != 0)
				goto out;
			if ((rc = journal_access(h, bb)) == 0 &&
			    (rc = value_free(h, ib->blkno, bb->data +
			    v.off % fs->vol.block_bytes)) == 0) {
				journal_dirty(h, bb);
				rc = bucket_recheck(h, ib->blkno, v.blkno);
				rc = rc == 0 ? 1 : rc;
			}
			block_put(fs, bb);
			goto out;
		}
		/* every value is gone: the buckets' runs and the tree's blocks */
		if ((rc = tree_walk(fs, NULL, ib->blkno, xl, &leaves, 0)) != 0)
			goto out;
		if ((int)leaves > tl_room(fs)) {
			rc = -EAGAIN;
			goto out;
		}
		if ((rc = tree_walk(fs, h, ib->blkno, xl, &leaves, 0)) != 0)
			goto out;
	}
	/* the block itself, back to the extent_alloc it came from */
	if (LE16(x->xb_suballoc_slot) >= fs->vol.max_slots) {
		fsd_corrupt(fs, xb->blkno, "xattr block from an impossible slot");
		rc = -EIO;
		goto out;
	}
	rc = suballoc_free(h, fs->slots[LE16(x->xb_suballoc_slot)].extent_alloc,
	    LE64(x->xb_suballoc_loc) != 0 ? LE64(x->xb_suballoc_loc) :
	    xb->blkno - LE16(x->xb_suballoc_bit), LE16(x->xb_suballoc_bit));
	if (rc == 0) {
		di->i_xattr_loc = 0;
		rc = 1;
	}
out:
	block_put(fs, xb);
	return rc;
}

int
xattr_free_all(struct fsd *fs, struct fsd_inode *ip)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc, flushed = 0;

	for (;;) {
		if ((rc = tl_make_room(fs, XATTR_TL_NEED)) != 0)
			return rc;
		if ((rc = journal_start(fs, &h)) != 0)
			return rc;
		if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
			journal_stop(&h, 1);
			return rc;
		}
		if (!(LE16(((struct ocfs2_dinode *)ib->data)->i_dyn_features) & OCFS2_HAS_XATTR_FL) &&
		    LE64(((struct ocfs2_dinode *)ib->data)->i_xattr_loc) == 0) {
			inode_unlock_block(fs, ip, LKM_EX, ib);
			journal_stop(&h, 0);
			return 0;
		}
		if ((rc = journal_access(&h, ib)) == 0) {
			rc = free_step(&h, ib);
			journal_dirty(&h, ib);
		}
		inode_unlock_block_in(&h, ip, ib);
		journal_stop(&h, rc < 0);
		if (rc == -EAGAIN && !flushed) {
			/* a bucket tree of more runs than the log has room for now */
			flushed = 1;
			if ((rc = tl_flush(fs)) != 0)
				return rc;
			continue;
		}
		if (rc <= 0)
			return rc;
		flushed = 0;
	}
}
