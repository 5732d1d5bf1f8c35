/*
 * Indexed directories (doc/indexed-dirs.md). The names still live in the
 * directory's blocks, which readdir walks as before; an index maps each
 * name's hash to the block holding it. The index is a root block, which
 * keeps a short list of entries inline or else an extent tree of leaf
 * clusters keyed by the major hash (a leaf cluster's block is picked by
 * the minor hash), and a list of the directory blocks with room for a new
 * name (dr_free_blk, chained through each block's trailer).
 *
 * Everything here runs with the directory's META lock (PR to read, EX to
 * change, inside the caller's handle); index blocks belong to the
 * directory inode in the block cache, so a downconvert forgets them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

#include "fsd.h"

#define TRAILER_BYTES	((unsigned)sizeof(struct ocfs2_dir_block_trailer))

/* ---- the hash (fs/ocfs2/dir.c, ocfs2_dx_dir_name_hash) ------------------ */

#define TEA_DELTA	0x9E3779B9u

static void
tea_transform(uint32_t buf[4], const uint32_t in[4])
{
	uint32_t sum = 0, b0 = buf[0], b1 = buf[1];
	int n;

	for (n = 0; n < 16; n++) {
		sum += TEA_DELTA;
		b0 += ((b1 << 4) + in[0]) ^ (b1 + sum) ^ ((b1 >> 5) + in[1]);
		b1 += ((b0 << 4) + in[2]) ^ (b0 + sum) ^ ((b0 >> 5) + in[3]);
	}
	buf[0] += b0;
	buf[1] += b1;
}

/*
 * Up to 16 bytes of the name as four words, padded with a pattern of
 * the length. The kernel adds the bytes as (signed) char, as x86 has it:
 * a byte of 0x80 or more counts as negative.
 */
static void
name_words(const char *name, size_t len, uint32_t out[4])
{
	uint32_t pad = (uint32_t)len | ((uint32_t)len << 8), val;
	size_t i, n = len > 16 ? 16 : len;
	unsigned w = 0;

	pad |= pad << 16;
	val = pad;
	for (i = 0; i < n; i++) {
		if (i % 4 == 0)
			val = pad;
		val = (uint32_t)(int32_t)(signed char)name[i] + (val << 8);
		if (i % 4 == 3) {
			out[w++] = val;
			val = pad;
		}
	}
	if (w < 4 && n % 4 != 0)
		out[w++] = val;
	while (w < 4)
		out[w++] = pad;
}

void
dx_name_hash(const uint32_t seed[4], const char *name, size_t len, struct dx_hash *hv)
{
	uint32_t buf[4], in[4];

	/* "." and ".." hash to zero */
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		hv->major = hv->minor = 0;
		return;
	}
	memcpy(buf, seed, sizeof(buf));
	for (;;) {
		name_words(name, len, in);
		tea_transform(buf, in);
		if (len <= 16)
			break;
		len -= 16;
		name += 16;
	}
	hv->major = buf[0];
	hv->minor = buf[1];
}

/*
 * s_dx_seed and s_uuid_hash of the superblock, as ocfs2_initialize_super
 * keeps them; read on first use (the cache refuses the volume header).
 */
static int
dx_seed(struct fsd *fs, const uint32_t **seedp)
{
	const struct ocfs2_super_block *sb;
	uint32_t seed[4];
	uint8_t *buf;

	if (!__atomic_load_n(&fs->dx_seed_known, __ATOMIC_ACQUIRE)) {
		if ((buf = volume_alloc(fs->vol.block_bytes)) == NULL)
			return -ENOMEM;
		if (volume_read_blocks(&fs->vol, OCFS2_SUPER_BLOCK_BLKNO, 1, buf) == -1) {
			free(buf);
			return -EIO;
		}
		sb = &((const struct ocfs2_dinode *)buf)->id2.i_super;
		seed[0] = LE32(sb->s_dx_seed[0]);
		seed[1] = LE32(sb->s_dx_seed[1]);
		seed[2] = LE32(sb->s_dx_seed[2]);
		seed[3] = LE32(sb->s_uuid_hash);
		free(buf);
		/* every thread computes the same words: a race only repeats them */
		memcpy(fs->dx_seed, seed, sizeof(seed));
		__atomic_store_n(&fs->dx_seed_known, 1, __ATOMIC_RELEASE);
	}
	*seedp = fs->dx_seed;
	return 0;
}

/* ---- block checks ------------------------------------------------------- */

int
dx_volume(const struct fsd *fs)
{
	return (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS) != 0;
}

/*
 * Directory blocks end in a trailer with indexed-dirs or metaecc, whose
 * check lives there (ocfs2_supports_dir_trailer, fs/ocfs2/dir.c).
 */
int
dir_has_trailers(const struct fsd *fs)
{
	return (fs->vol.incompat & (OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS |
	    OCFS2_FEATURE_INCOMPAT_META_ECC)) != 0;
}

int
dx_indexed(const struct ocfs2_dinode *di)
{
	return (LE16(di->i_dyn_features) & OCFS2_INDEXED_DIR_FL) != 0;
}

static unsigned
entries_per_root(const struct fsd *fs)
{
	return (fs->vol.block_bytes - offsetof(struct ocfs2_dx_root_block, dr_entries.de_entries)) /
	    sizeof(struct ocfs2_dx_entry);
}

static unsigned
entries_per_leaf(const struct fsd *fs)
{
	return (fs->vol.block_bytes - offsetof(struct ocfs2_dx_leaf, dl_list.de_entries)) /
	    sizeof(struct ocfs2_dx_entry);
}

static unsigned
recs_per_root(const struct fsd *fs)
{
	return (fs->vol.block_bytes - offsetof(struct ocfs2_dx_root_block, dr_list.l_recs)) /
	    sizeof(struct ocfs2_extent_rec);
}

static int
check_sig(const uint8_t *at, const char *sig, char *why, size_t whylen)
{
	if (memcmp(at, sig, strlen(sig)) != 0) {
		snprintf(why, whylen, "bad signature (expected %s)", sig);
		return -1;
	}
	return 0;
}

static int
check_list(const struct ocfs2_dx_entry_list *l, unsigned cap, const char *what, char *why,
    size_t whylen)
{
	if (LE16(l->de_count) == 0 || LE16(l->de_count) > cap ||
	    LE16(l->de_num_used) > LE16(l->de_count)) {
		snprintf(why, whylen, "impossible %s entry list (count %u of %u, used %u)", what,
		    LE16(l->de_count), cap, LE16(l->de_num_used));
		return -1;
	}
	return 0;
}

const struct ocfs2_dir_block_trailer *
dir_trailer(const struct fsd *fs, const uint8_t *blk)
{
	return (const struct ocfs2_dir_block_trailer *)(blk + fs->vol.block_bytes - TRAILER_BYTES);
}

/* Checks of what the block itself says; dxdir.c checks the owner where it reads. */
static int
dx_check_block(struct fsd *fs, enum blk_type type, uint64_t blkno, const uint8_t *p,
    char *why, size_t whylen)
{
	const struct ocfs2_dx_root_block *dr = (const void *)p;
	const struct ocfs2_dx_leaf *dl = (const void *)p;
	const struct ocfs2_dir_block_trailer *t = dir_trailer(fs, p);
	unsigned bs = fs->vol.block_bytes;

	switch (type) {
	case BLK_DXDIR:
		if (check_sig(t->db_signature, OCFS2_DIR_TRAILER_SIGNATURE, why, whylen) == -1)
			return -1;
		if (LE64(t->db_blkno) != blkno || LE16(t->db_compat_rec_len) != TRAILER_BYTES ||
		    t->db_compat_inode != 0 || LE16(t->db_free_rec_len) > bs - TRAILER_BYTES) {
			snprintf(why, whylen, "impossible directory trailer (block %llu, length %u, "
			    "free %u)", (unsigned long long)LE64(t->db_blkno),
			    LE16(t->db_compat_rec_len), LE16(t->db_free_rec_len));
			return -1;
		}
		return dir_block_check(p, bs - TRAILER_BYTES, why, whylen);
	case BLK_DX_ROOT:
		if (check_sig(dr->dr_signature, OCFS2_DX_ROOT_SIGNATURE, why, whylen) == -1)
			return -1;
		if (LE64(dr->dr_blkno) != blkno || LE32(dr->dr_fs_generation) != fs->fs_generation) {
			snprintf(why, whylen, "index root claims block %llu, generation %#x",
			    (unsigned long long)LE64(dr->dr_blkno), LE32(dr->dr_fs_generation));
			return -1;
		}
		if (dr->dr_flags & OCFS2_DX_FLAG_INLINE)
			return check_list(&dr->dr_entries, entries_per_root(fs), "index root", why,
			    whylen);
		return fs->check_extent_list(fs, &dr->dr_list, recs_per_root(fs), 0, why, whylen);
	case BLK_DX_LEAF:
		if (check_sig(dl->dl_signature, OCFS2_DX_LEAF_SIGNATURE, why, whylen) == -1)
			return -1;
		if (LE64(dl->dl_blkno) != blkno || LE32(dl->dl_fs_generation) != fs->fs_generation) {
			snprintf(why, whylen, "index leaf claims block %llu, generation %#x",
			    (unsigned long long)LE64(dl->dl_blkno), LE32(dl->dl_fs_generation));
			return -1;
		}
		return check_list(&dl->dl_list, entries_per_leaf(fs), "index leaf", why, whylen);
	default:
		snprintf(why, whylen, "not a block of an indexed directory");
		return -1;
	}
}

void
dx_register_checks(struct fsd *fs)
{
	fs->check_dx_block = dx_check_block;
}

/* ---- reading ------------------------------------------------------------ */

int
dir_block_read(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t pblk, struct fsd_buf **bp)
{
	uint64_t dir = LE64(di->i_blkno);
	char why[96];
	int rc;

	if (!dx_indexed(di))
		return block_read_owned(fs, pblk, BLK_DIR, dir, bp);
	if ((rc = block_read_owned(fs, pblk, BLK_DXDIR, dir, bp)) != 0)
		return rc;
	if (LE64(dir_trailer(fs, (*bp)->data)->db_parent_dinode) != dir) {
		snprintf(why, sizeof(why), "directory block of inode %llu found in directory %llu",
		    (unsigned long long)LE64(dir_trailer(fs, (*bp)->data)->db_parent_dinode),
		    (unsigned long long)dir);
		fsd_corrupt(fs, pblk, why);
		block_put(fs, *bp);
		*bp = NULL;
		return -EIO;
	}
	return 0;
}

static int
root_read(struct fsd *fs, const struct ocfs2_dinode *di, struct fsd_buf **bp)
{
	uint64_t dir = LE64(di->i_blkno), blk = LE64(di->i_dx_root);
	int rc;

	if (blk == 0) {
		fsd_corrupt(fs, dir, "indexed directory without an index root");
		return -EIO;
	}
	if ((rc = block_read_owned(fs, blk, BLK_DX_ROOT, dir, bp)) != 0)
		return rc;
	if (LE64(((struct ocfs2_dx_root_block *)(*bp)->data)->dr_dir_blkno) != dir) {
		fsd_corrupt(fs, blk, "index root belongs to another directory");
		block_put(fs, *bp);
		*bp = NULL;
		return -EIO;
	}
	return 0;
}

static int
root_inline(const struct fsd_buf *rb)
{
	return (((const struct ocfs2_dx_root_block *)rb->data)->dr_flags & OCFS2_DX_FLAG_INLINE) != 0;
}

/*
 * The leaf record of the index tree where major belongs: the last whose
 * start is at or below it (ocfs2_dx_dir_lookup_rec).
 */
static int
lookup_rec(struct fsd *fs, uint64_t dir, struct fsd_buf *rb, uint32_t major, uint32_t *cpos,
    uint64_t *pblk, unsigned *clen)
{
	const struct ocfs2_extent_list *el = &((struct ocfs2_dx_root_block *)rb->data)->dr_list;
	const struct ocfs2_extent_rec *r = NULL;
	struct fsd_buf *b = NULL, *nb;
	uint64_t at = rb->blkno;
	unsigned depth = LE16(el->l_tree_depth);
	int i, rc;

	for (;;) {
		for (i = LE16(el->l_next_free_rec) - 1; i >= 0; i--)
			if (LE32(el->l_recs[i].e_cpos) <= major)
				break;
		if (i < 0 || (depth == 0 && LE16(el->l_recs[i].e_leaf_clusters) == 0)) {
			fsd_corrupt(fs, at, "index tree has no record for a hash");
			rc = -EIO;
			break;
		}
		r = &el->l_recs[i];
		if (depth == 0) {
			*cpos = LE32(r->e_cpos);
			*pblk = LE64(r->e_blkno);
			*clen = LE16(r->e_leaf_clusters);
			rc = 0;
			break;
		}
		if ((rc = block_read_owned(fs, LE64(r->e_blkno), BLK_EXTENT, dir, &nb)) != 0)
			break;
		block_put(fs, b);
		b = nb;
		at = b->blkno;
		el = &((struct ocfs2_extent_block *)b->data)->h_list;
		if (LE16(el->l_tree_depth) != --depth) {
			fsd_corrupt(fs, at, "extent block at the wrong depth");
			rc = -EIO;
			break;
		}
	}
	block_put(fs, b);
	return rc;
}

/* The leaf block for hv (ocfs2_dx_dir_lookup): *cpos the start of its cluster's range. */
static int
leaf_for(struct fsd *fs, uint64_t dir, struct fsd_buf *rb, const struct dx_hash *hv,
    uint32_t *cpos, uint64_t *blk)
{
	unsigned clen;
	uint64_t pblk;
	uint32_t start;
	int rc;

	if ((rc = lookup_rec(fs, dir, rb, hv->major, &start, &pblk, &clen)) != 0)
		return rc;
	if ((uint64_t)hv->major >= (uint64_t)start + clen) {
		pblk += (uint64_t)(clen - 1) * fs->bpc;
		start += clen - 1;
	} else {
		pblk += (uint64_t)(hv->major - start) * fs->bpc;
		start = hv->major;
	}
	*cpos = start;
	*blk = pblk + (hv->minor & (fs->bpc - 1));
	return 0;
}

static struct ocfs2_dx_entry_list *
list_of(struct fsd_buf *rb, struct fsd_buf *lb)
{
	if (lb == NULL)
		return &((struct ocfs2_dx_root_block *)rb->data)->dr_entries;
	return &((struct ocfs2_dx_leaf *)lb->data)->dl_list;
}

void
dx_release(struct fsd *fs, struct dx_found *f)
{
	block_put(fs, f->root);
	block_put(fs, f->leaf);
	block_put(fs, f->blk);
	memset(f, 0, sizeof(*f));
}

/* The root and, for a tree, the leaf where hv belongs, into f. */
static int
find_list(struct fsd *fs, const struct ocfs2_dinode *di, struct dx_found *f, uint32_t *leaf_cpos)
{
	uint64_t dir = LE64(di->i_blkno), blk;
	uint32_t cpos = 0;
	int rc;

	if ((rc = root_read(fs, di, &f->root)) != 0)
		return rc;
	if (!root_inline(f->root)) {
		if ((rc = leaf_for(fs, dir, f->root, &f->hv, &cpos, &blk)) != 0 ||
		    (rc = block_read_owned(fs, blk, BLK_DX_LEAF, dir, &f->leaf)) != 0)
			return rc;
	}
	if (leaf_cpos != NULL)
		*leaf_cpos = cpos;
	return 0;
}

int
dx_find(struct fsd *fs, const struct ocfs2_dinode *di, const char *name, size_t len,
    struct dx_found *f)
{
	const struct ocfs2_dx_entry_list *l;
	const struct ocfs2_dx_entry *e;
	const uint32_t *seed;
	struct fsd_buf *b;
	unsigned i, n;
	int rc;

	memset(f, 0, sizeof(*f));
	if ((rc = dx_seed(fs, &seed)) != 0)
		return rc;
	dx_name_hash(seed, name, len, &f->hv);
	if ((rc = find_list(fs, di, f, NULL)) != 0)
		goto fail;
	l = list_of(f->root, f->leaf);
	n = LE16(l->de_num_used);
	for (i = 0; i < n; i++) {
		e = &l->de_entries[i];
		if (LE32(e->dx_major_hash) != f->hv.major || LE32(e->dx_minor_hash) != f->hv.minor)
			continue;
		if ((rc = dir_block_read(fs, di, LE64(e->dx_dirent_blk), &b)) != 0)
			goto fail;
		if (dir_block_find(b->data, fs->vol.block_bytes - TRAILER_BYTES, name, len,
		    &f->off, &f->prev)) {
			f->blk = b;
			f->idx = i;
			return 0;
		}
		block_put(fs, b);
	}
	rc = -ENOENT;
fail:
	dx_release(fs, f);
	return rc;
}

/* ---- the free-space list ------------------------------------------------ */

/* The largest hole for a new entry in p[0, end), or 0 below the smallest (ocfs2_find_max_rec_len). */
unsigned
dir_block_max_hole(const uint8_t *p, unsigned end)
{
	const struct ocfs2_dir_entry *de;
	unsigned off = 0, hole, best = 0;

	while (off < end) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		hole = LE16(de->rec_len) - (de->inode ? OCFS2_DIR_REC_LEN(de->name_len) : 0);
		if (hole > best)
			best = hole;
		off += LE16(de->rec_len);
	}
	return best >= OCFS2_DIR_MIN_REC_LEN ? best : 0;
}

static unsigned
max_hole(const struct fsd *fs, const uint8_t *p)
{
	return dir_block_max_hole(p, fs->vol.block_bytes - TRAILER_BYTES);
}

static struct ocfs2_dir_block_trailer *
trailer_of(const struct fsd *fs, struct fsd_buf *b)
{
	return (struct ocfs2_dir_block_trailer *)(b->data + fs->vol.block_bytes - TRAILER_BYTES);
}

void
dir_trailer_init(const struct fsd *fs, struct fsd_buf *b, uint64_t dir, unsigned free_rec_len)
{
	struct ocfs2_dir_block_trailer *t = trailer_of(fs, b);

	memset(t, 0, TRAILER_BYTES);
	memcpy(t->db_signature, OCFS2_DIR_TRAILER_SIGNATURE, sizeof(OCFS2_DIR_TRAILER_SIGNATURE));
	t->db_compat_rec_len = htole16(TRAILER_BYTES);
	t->db_blkno = htole64(b->blkno);
	t->db_parent_dinode = htole64(dir);
	t->db_free_rec_len = htole16((uint16_t)free_rec_len);
}

/*
 * The directory's free-space list in memory (dxfree.c), built from the
 * disk's on first use in h: NULL (and *ipp NULL) without an in-memory
 * inode, or when the list on disk is not one dxfree.c can copy (the
 * walk of free_list_walk then reports what is wrong). Else ip->dmtx is
 * held: free_map_put() releases it.
 */
static struct dx_free_map *
free_map_get(struct fsd_handle *h, const struct ocfs2_dinode *di, struct fsd_buf *rb,
    struct fsd_inode **ipp)
{
	struct fsd *fs = h->fs;
	uint64_t dir = LE64(di->i_blkno), next, steps = (LE64(di->i_size) >> fs->bbits) + 1;
	struct dx_free_map *m;
	struct fsd_inode *ip;
	struct fsd_buf *b;
	int bad = 0;

	*ipp = NULL;
	if ((ip = inode_find(fs, dir)) == NULL)
		return NULL;
	pthread_mutex_lock(&ip->dmtx);
	if (ip->dxfree == NULL && journal_note_dir(h, dir) == 0) {
		m = dxfree_new(fs->vol.block_bytes);
		next = LE64(((struct ocfs2_dx_root_block *)rb->data)->dr_free_blk);
		while (next != 0 && !bad) {
			if (steps-- == 0 || dir_block_read(fs, di, next, &b) != 0) {
				bad = 1;
				break;
			}
			bad = dxfree_add(m, next, LE16(trailer_of(fs, b)->db_free_rec_len), 0) != 0;
			next = LE64(trailer_of(fs, b)->db_free_next);
			block_put(fs, b);
		}
		if (bad)
			dxfree_free(m);
		else
			ip->dxfree = m;
	}
	if (ip->dxfree == NULL) {
		pthread_mutex_unlock(&ip->dmtx);
		inode_put(fs, ip);
		return NULL;
	}
	*ipp = ip;
	return ip->dxfree;
}

static void
free_map_put(struct fsd *fs, struct fsd_inode *ip)
{
	if (ip == NULL)
		return;
	pthread_mutex_unlock(&ip->dmtx);
	inode_put(fs, ip);
}

/* The in-memory list is wrong (a bug, never the disk's fault): forget it. ip->dmtx held. */
static void
free_map_drop(struct fsd_inode *ip, uint64_t blkno, const char *why)
{
	log_warnx("directory %llu: in-memory free-space list dropped at block %llu: %s",
	    (unsigned long long)ip->blkno, (unsigned long long)blkno, why);
	dxfree_free(ip->dxfree);
	ip->dxfree = NULL;
}

/*
 * A block with room for need bytes by the disk's free list, first fit
 * (ocfs2_search_dx_free_list): 1 and *bp, *prevp (the block before it in
 * the list, NULL: the root), or 0. O(the list's length).
 */
static int
free_list_walk(struct fsd *fs, const struct ocfs2_dinode *di, struct fsd_buf *rb,
    unsigned need, struct fsd_buf **bp, struct fsd_buf **prevp)
{
	uint64_t next = LE64(((struct ocfs2_dx_root_block *)rb->data)->dr_free_blk);
	uint64_t steps = (LE64(di->i_size) >> fs->bbits) + 1;
	struct fsd_buf *b, *prev = NULL;
	int rc;

	*bp = *prevp = NULL;
	while (next != 0) {
		if (steps-- == 0) {
			fsd_corrupt(fs, rb->blkno, "free space list of the directory loops");
			block_put(fs, prev);
			return -EIO;
		}
		if ((rc = dir_block_read(fs, di, next, &b)) != 0) {
			block_put(fs, prev);
			return rc;
		}
		if (LE16(trailer_of(fs, b)->db_free_rec_len) >= need) {
			*bp = b;
			*prevp = prev;
			return 1;
		}
		block_put(fs, prev);
		prev = b;
		next = LE64(trailer_of(fs, b)->db_free_next);
	}
	block_put(fs, prev);
	return 0;
}

/*
 * A block with room for need bytes from the free list: 1 and *bp, *prevp
 * (the block before it in the list, NULL: the root), or 0. The in-memory
 * list answers in O(1); what it names is checked against the disk.
 */
static int
free_list_search(struct fsd_handle *h, const struct ocfs2_dinode *di, struct fsd_buf *rb,
    unsigned need, struct fsd_buf **bp, struct fsd_buf **prevp)
{
	struct fsd *fs = h->fs;
	struct dx_free_map *m;
	struct fsd_inode *ip;
	uint64_t blk, pblk, linked;
	int rc;

	*bp = *prevp = NULL;
	if ((m = free_map_get(h, di, rb, &ip)) == NULL)
		return free_list_walk(fs, di, rb, need, bp, prevp);
	if (!dxfree_pick(m, need, &blk, &pblk)) {
		free_map_put(fs, ip);
		return 0;
	}
	if ((rc = dir_block_read(fs, di, blk, bp)) != 0 ||
	    (pblk != 0 && (rc = dir_block_read(fs, di, pblk, prevp)) != 0))
		goto fail;
	linked = *prevp != NULL ? LE64(trailer_of(fs, *prevp)->db_free_next) :
	    LE64(((struct ocfs2_dx_root_block *)rb->data)->dr_free_blk);
	if (LE16(trailer_of(fs, *bp)->db_free_rec_len) >= need && linked == blk) {
		free_map_put(fs, ip);
		return 1;
	}
	free_map_drop(ip, blk, "the block's trailer disagrees");
	free_map_put(fs, ip);
	block_put(fs, *bp);
	block_put(fs, *prevp);
	return free_list_walk(fs, di, rb, need, bp, prevp);
fail:
	free_map_put(fs, ip);
	block_put(fs, *bp);
	*bp = NULL;
	return rc;
}

/*
 * Tell the in-memory list (if any) that block blkno now has free_len
 * bytes free: on the list (listed: it was there before), off it (0).
 */
static void
free_map_note(struct fsd_handle *h, uint64_t dir, uint64_t blkno, unsigned free_len, int listed)
{
	struct fsd_inode *ip;

	if ((ip = inode_find(h->fs, dir)) == NULL)
		return;
	pthread_mutex_lock(&ip->dmtx);
	if (ip->dxfree != NULL) {
		if (journal_note_dir(h, dir) != 0) {
			/* an abort could not be tracked: rebuild later */
			dxfree_free(ip->dxfree);
			ip->dxfree = NULL;
		} else if (listed)
			dxfree_set(ip->dxfree, blkno, free_len);
		else if (dxfree_add(ip->dxfree, blkno, free_len, 1) != 0)
			free_map_drop(ip, blkno, "listed twice");
	}
	pthread_mutex_unlock(&ip->dmtx);
	inode_put(h->fs, ip);
}

/* Link a new block (accessed in h) at the head of the list. */
int
dx_link_free_block(struct fsd_handle *h, const struct ocfs2_dinode *di, struct fsd_buf *b)
{
	struct ocfs2_dx_root_block *dr;
	struct fsd_buf *rb;
	int rc;

	if ((rc = root_read(h->fs, di, &rb)) != 0)
		return rc;
	if ((rc = journal_access(h, rb)) == 0) {
		dr = (struct ocfs2_dx_root_block *)rb->data;
		trailer_of(h->fs, b)->db_free_next = dr->dr_free_blk;
		dr->dr_free_blk = htole64(b->blkno);
		journal_dirty(h, rb);
		journal_dirty(h, b);
		free_map_note(h, LE64(di->i_blkno), b->blkno,
		    LE16(trailer_of(h->fs, b)->db_free_rec_len), 0);
	}
	block_put(h->fs, rb);
	return rc;
}

/* ---- changing the index ------------------------------------------------- */

static void
list_append(struct ocfs2_dx_entry_list *l, const struct dx_hash *hv, uint64_t blk)
{
	struct ocfs2_dx_entry *e = &l->de_entries[LE16(l->de_num_used)];

	memset(e, 0, sizeof(*e));
	e->dx_major_hash = htole32(hv->major);
	e->dx_minor_hash = htole32(hv->minor);
	e->dx_dirent_blk = htole64(blk);
	l->de_num_used = htole16(LE16(l->de_num_used) + 1);
}

static void
list_remove(struct ocfs2_dx_entry_list *l, unsigned i)
{
	unsigned n = LE16(l->de_num_used);

	memmove(&l->de_entries[i], &l->de_entries[i + 1], (n - i - 1) * sizeof(l->de_entries[0]));
	memset(&l->de_entries[n - 1], 0, sizeof(l->de_entries[0]));
	l->de_num_used = htole16(n - 1);
}

static void
put_leaves(struct fsd *fs, struct fsd_buf **leaves)
{
	unsigned i;

	for (i = 0; i < fs->bpc; i++) {
		block_put(fs, leaves[i]);
		leaves[i] = NULL;
	}
}

/* A fresh cluster of empty leaves, each accessed in h (ocfs2_dx_dir_format_cluster). */
static int
new_leaf_cluster(struct fsd_handle *h, uint64_t dir, uint64_t *pblk, struct fsd_buf **leaves)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dx_leaf *dl;
	uint32_t start;
	unsigned got, i;
	int rc;

	if ((rc = la_claim(h, 0, 1, 1, &start, &got)) != 0)
		return rc;
	*pblk = (uint64_t)start << (fs->cbits - fs->bbits);
	for (i = 0; i < fs->bpc; i++) {
		if ((rc = block_new_owned(fs, *pblk + i, BLK_DX_LEAF, dir, &leaves[i])) != 0 ||
		    (rc = journal_access(h, leaves[i])) != 0) {
			put_leaves(fs, leaves);
			return rc;
		}
		dl = (struct ocfs2_dx_leaf *)leaves[i]->data;
		memcpy(dl->dl_signature, OCFS2_DX_LEAF_SIGNATURE, sizeof(OCFS2_DX_LEAF_SIGNATURE));
		dl->dl_fs_generation = htole32(fs->fs_generation);
		dl->dl_blkno = htole64(leaves[i]->blkno);
		dl->dl_list.de_count = htole16((uint16_t)entries_per_leaf(fs));
		journal_dirty(h, leaves[i]);
	}
	return 0;
}

/* A full inline root moves its entries to a leaf cluster (ocfs2_expand_inline_dx_root). */
static int
expand_root(struct fsd_handle *h, uint64_t dir, struct fsd_buf *rb)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dx_root_block *dr = (struct ocfs2_dx_root_block *)rb->data;
	struct ocfs2_dx_entry_list *l = &dr->dr_entries;
	struct fsd_buf **leaves;
	struct ocfs2_dx_leaf *dl;
	unsigned i, n = LE16(l->de_num_used), j;
	uint64_t pblk;
	int rc;

	if ((rc = journal_access(h, rb)) != 0)
		return rc;
	leaves = xcalloc(fs->bpc, sizeof(*leaves));
	if ((rc = new_leaf_cluster(h, dir, &pblk, leaves)) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		j = LE32(l->de_entries[i].dx_minor_hash) & (fs->bpc - 1);
		dl = (struct ocfs2_dx_leaf *)leaves[j]->data;
		if (LE16(dl->dl_list.de_num_used) >= LE16(dl->dl_list.de_count)) {
			rc = -ENOSPC;	/* only with more root entries than a leaf holds */
			goto out;
		}
		dl->dl_list.de_entries[LE16(dl->dl_list.de_num_used)] = l->de_entries[i];
		dl->dl_list.de_num_used = htole16(LE16(dl->dl_list.de_num_used) + 1);
		journal_dirty(h, leaves[j]);
	}
	dr->dr_flags &= (uint8_t)~OCFS2_DX_FLAG_INLINE;
	memset(&dr->dr_list, 0, fs->vol.block_bytes - offsetof(struct ocfs2_dx_root_block, dr_list));
	dr->dr_list.l_count = htole16((uint16_t)recs_per_root(fs));
	rc = extent_insert(h, rb, 0, 1, pblk, 0);
	journal_dirty(h, rb);
out:
	put_leaves(fs, leaves);
	free(leaves);
	return rc;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct ocfs2_dx_entry *x = a, *y = b;
	uint32_t xm = LE32(x->dx_major_hash), ym = LE32(y->dx_major_hash);
	uint32_t xn = LE32(x->dx_minor_hash), yn = LE32(y->dx_minor_hash);

	if (xm != ym)
		return xm < ym ? -1 : 1;
	if (xn != yn)
		return xn < yn ? -1 : 1;
	return 0;
}

/* Where to split a full, sorted leaf (ocfs2_dx_dir_find_leaf_split): 0 and *split, or -ENOSPC. */
static int
split_hash(const struct ocfs2_dx_entry_list *l, uint32_t leaf_cpos, uint32_t insert,
    uint32_t *split)
{
	unsigned n = LE16(l->de_num_used), i;
	uint32_t first = LE32(l->de_entries[0].dx_major_hash);

	for (i = 1; i < n && LE32(l->de_entries[i].dx_major_hash) == first; i++)
		;
	if (i == n) {
		/* one major hash for every entry: no split parts them */
		if (first == insert)
			return -ENOSPC;
		if (first == leaf_cpos)
			*split = leaf_cpos + 1;
		else if (first > insert)
			*split = first;
		else
			*split = insert;
		return 0;
	}
	for (i = n / 2; i < n; i++)
		if (LE32(l->de_entries[i].dx_major_hash) > leaf_cpos)
			break;
	if (i == n)
		return -EIO;
	*split = LE32(l->de_entries[i].dx_major_hash);
	return 0;
}

/*
 * Split the full leaf lb of the cluster whose range starts at leaf_cpos
 * (ocfs2_dx_dir_rebalance): a new cluster takes, block for block, the
 * entries at or past the split hash.
 */
static int
split_leaf(struct fsd_handle *h, uint64_t dir, struct fsd_buf *rb, struct fsd_buf *lb,
    uint32_t leaf_cpos, uint32_t insert)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dx_entry_list *l = &((struct ocfs2_dx_leaf *)lb->data)->dl_list, *ol, *nl;
	struct ocfs2_dx_entry *keep;
	struct fsd_buf **orig, **fresh;
	uint64_t start = lb->blkno - lb->blkno % fs->bpc, pblk;
	unsigned i, j, n, k;
	uint32_t split;
	int rc;

	if (LE32(((struct ocfs2_dx_root_block *)rb->data)->dr_clusters) == UINT32_MAX)
		return -ENOSPC;
	if ((rc = journal_access(h, lb)) != 0)
		return rc;
	qsort(l->de_entries, LE16(l->de_num_used), sizeof(l->de_entries[0]), entry_cmp);
	journal_dirty(h, lb);
	if ((rc = split_hash(l, leaf_cpos, insert, &split)) != 0) {
		if (rc == -EIO)
			fsd_corrupt(fs, lb->blkno, "index leaf holds hashes below its range");
		return rc;
	}
	orig = xcalloc(fs->bpc, sizeof(*orig));
	fresh = xcalloc(fs->bpc, sizeof(*fresh));
	keep = xmalloc(fs->vol.block_bytes);
	for (i = 0; i < fs->bpc; i++)
		if ((rc = block_read_owned(fs, start + i, BLK_DX_LEAF, dir, &orig[i])) != 0 ||
		    (rc = journal_access(h, orig[i])) != 0)
			goto out;
	if ((rc = new_leaf_cluster(h, dir, &pblk, fresh)) != 0 ||
	    (rc = extent_insert(h, rb, split, 1, pblk, 0)) != 0)
		goto out;
	journal_dirty(h, rb);
	for (i = 0; i < fs->bpc; i++) {
		ol = &((struct ocfs2_dx_leaf *)orig[i]->data)->dl_list;
		nl = &((struct ocfs2_dx_leaf *)fresh[i]->data)->dl_list;
		n = LE16(ol->de_num_used);
		for (j = 0, k = 0; j < n; j++) {
			if (LE32(ol->de_entries[j].dx_major_hash) >= split) {
				nl->de_entries[LE16(nl->de_num_used)] = ol->de_entries[j];
				nl->de_num_used = htole16(LE16(nl->de_num_used) + 1);
			} else
				keep[k++] = ol->de_entries[j];
		}
		memcpy(ol->de_entries, keep, k * sizeof(*keep));
		memset(&ol->de_entries[k], 0, (n - k) * sizeof(*keep));
		ol->de_num_used = htole16((uint16_t)k);
		journal_dirty(h, orig[i]);
		journal_dirty(h, fresh[i]);
	}
out:
	for (i = 0; i < fs->bpc; i++)
		block_put(fs, orig[i]);
	put_leaves(fs, fresh);
	free(orig);
	free(fresh);
	free(keep);
	return rc;
}

/*
 * Room in the index for hv: the inline root expanded when full, a full
 * leaf split once (ocfs2_prepare_dx_dir_for_insert, ocfs2_find_dir_space_dx).
 * f->root and, for a tree, f->leaf are the list to append to.
 */
static int
index_room(struct fsd_handle *h, const struct ocfs2_dinode *di, struct dx_found *f)
{
	struct fsd *fs = h->fs;
	uint64_t dir = LE64(di->i_blkno);
	struct ocfs2_dx_entry_list *l;
	uint32_t cpos;
	int rc, split = 0;

	if ((rc = find_list(fs, di, f, &cpos)) != 0)
		return rc;
	if (LE32(((struct ocfs2_dx_root_block *)f->root->data)->dr_num_entries) ==
	    OCFS2_DX_ENTRIES_MAX)
		return -ENOSPC;
	if (root_inline(f->root)) {
		l = list_of(f->root, NULL);
		if (LE16(l->de_num_used) < LE16(l->de_count))
			return 0;
		if ((rc = expand_root(h, dir, f->root)) != 0)
			return rc;
		block_put(fs, f->root);
		f->root = NULL;
		if ((rc = find_list(fs, di, f, &cpos)) != 0)
			return rc;
	}
	for (;;) {
		l = list_of(f->root, f->leaf);
		if (LE16(l->de_num_used) < LE16(l->de_count))
			return 0;
		if (split)
			return -ENOSPC;
		if ((rc = split_leaf(h, dir, f->root, f->leaf, cpos, f->hv.major)) != 0)
			return rc;
		split = 1;
		block_put(fs, f->root);
		block_put(fs, f->leaf);
		f->root = f->leaf = NULL;
		if ((rc = find_list(fs, di, f, &cpos)) != 0)
			return rc;
	}
}

int
dx_add(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len, uint64_t ino,
    uint8_t type)
{
	struct fsd *fs = h->fs;
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)dib->data;
	unsigned need = OCFS2_DIR_REC_LEN(len), hole;
	struct ocfs2_dx_root_block *dr;
	struct ocfs2_dir_block_trailer *t;
	struct fsd_buf *b = NULL, *prev = NULL;
	const uint32_t *seed;
	struct dx_found f;
	int rc;

	memset(&f, 0, sizeof(f));
	if ((rc = dx_seed(fs, &seed)) != 0)
		return rc;
	dx_name_hash(seed, name, len, &f.hv);
	if ((rc = index_room(h, di, &f)) != 0)
		goto out;
	if ((rc = free_list_search(h, di, f.root, need, &b, &prev)) < 0)
		goto out;
	if (rc == 0) {
		/* a new block, at the head of the list */
		if ((rc = dir_extend_block(h, dib, &b)) != 0)
			goto out;
		prev = NULL;
	}
	if ((rc = journal_access(h, f.root)) != 0 || (rc = journal_access(h, b)) != 0 ||
	    (prev != NULL && (rc = journal_access(h, prev)) != 0) ||
	    (f.leaf != NULL && (rc = journal_access(h, f.leaf)) != 0))
		goto out;
	if ((rc = dir_block_put_entry(fs, b->data, fs->vol.block_bytes - TRAILER_BYTES, ino, name,
	    len, type)) != 0) {
		fsd_corrupt(fs, b->blkno, "directory trailer claims free space the block lacks");
		goto out;
	}
	dr = (struct ocfs2_dx_root_block *)f.root->data;
	t = trailer_of(fs, b);
	if ((hole = max_hole(fs, b->data)) != 0)
		t->db_free_rec_len = htole16((uint16_t)hole);
	else {
		/* full: out of the list (ocfs2_remove_block_from_free_list) */
		if (prev == NULL)
			dr->dr_free_blk = t->db_free_next;
		else {
			trailer_of(fs, prev)->db_free_next = t->db_free_next;
			journal_dirty(h, prev);
		}
		t->db_free_rec_len = 0;
		t->db_free_next = 0;
	}
	free_map_note(h, dib->blkno, b->blkno, hole, 1);
	journal_dirty(h, b);
	list_append(list_of(f.root, f.leaf), &f.hv, b->blkno);
	if (f.leaf != NULL)
		journal_dirty(h, f.leaf);
	dr->dr_num_entries = htole32(LE32(dr->dr_num_entries) + 1);
	journal_dirty(h, f.root);
	rc = 0;
out:
	block_put(fs, b);
	block_put(fs, prev);
	dx_release(fs, &f);
	return rc;
}

int
dx_remove(struct fsd_handle *h, struct fsd_buf *dib, struct dx_found *f)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dx_root_block *dr = (struct ocfs2_dx_root_block *)f->root->data;
	struct ocfs2_dir_block_trailer *t = trailer_of(fs, f->blk);
	int rc, was_full = t->db_free_rec_len == 0;

	if ((rc = journal_access(h, f->root)) != 0 || (rc = journal_access(h, f->blk)) != 0 ||
	    (f->leaf != NULL && (rc = journal_access(h, f->leaf)) != 0))
		return rc;
	dir_block_drop_entry(f->blk->data, f->off, f->prev);
	t->db_free_rec_len = htole16((uint16_t)max_hole(fs, f->blk->data));
	if (was_full) {
		/* room again: back on the list, at its head (ocfs2_delete_entry_dx) */
		t->db_free_next = dr->dr_free_blk;
		dr->dr_free_blk = htole64(f->blk->blkno);
	}
	free_map_note(h, dib->blkno, f->blk->blkno, LE16(t->db_free_rec_len), !was_full);
	journal_dirty(h, f->blk);
	list_remove(list_of(f->root, f->leaf), f->idx);
	if (f->leaf != NULL)
		journal_dirty(h, f->leaf);
	dr->dr_num_entries = htole32(LE32(dr->dr_num_entries) - 1);
	journal_dirty(h, f->root);
	return 0;
}

/*
 * Index a directory that just got its first block b (accessed in h, its
 * trailer laid): an inline root with an entry for every name in it, as
 * ocfs2_dx_dir_attach_index and ocfs2_dx_dir_index_root_block make it,
 * expanded to a leaf cluster when the names do not fit.
 */
int
dx_attach(struct fsd_handle *h, struct fsd_buf *dib, struct fsd_buf *b)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	const struct ocfs2_dir_entry *de;
	struct ocfs2_dx_root_block *dr;
	struct fsd_buf *rb, **leaves = NULL;
	struct fsd_subbit sb;
	uint64_t pblk = 0;
	unsigned off = 0, end = fs->vol.block_bytes - TRAILER_BYTES, count = 0, j;
	const uint32_t *seed;
	struct ocfs2_dx_entry_list *l;
	struct dx_hash hv;
	int rc;

	if ((rc = dx_seed(fs, &seed)) != 0)
		return rc;
	for (off = 0; off < end; off += LE16(de->rec_len)) {
		de = (const struct ocfs2_dir_entry *)(b->data + off);
		count += de->inode != 0 && de->name_len != 0;
	}
	if ((rc = suballoc_claim(h, SUBALLOC_EXTENT, &sb)) != 0)
		return rc;
	if ((rc = block_new_owned(fs, sb.blkno, BLK_DX_ROOT, dib->blkno, &rb)) != 0)
		return rc;
	if ((rc = journal_access(h, rb)) != 0 || (rc = journal_access(h, dib)) != 0)
		goto out;
	dr = (struct ocfs2_dx_root_block *)rb->data;
	memcpy(dr->dr_signature, OCFS2_DX_ROOT_SIGNATURE, sizeof(OCFS2_DX_ROOT_SIGNATURE));
	dr->dr_suballoc_slot = htole16(sb.slot);
	dr->dr_suballoc_loc = htole64(sb.group);
	dr->dr_suballoc_bit = htole16(sb.bit);
	dr->dr_fs_generation = htole32(fs->fs_generation);
	dr->dr_blkno = htole64(sb.blkno);
	dr->dr_dir_blkno = htole64(dib->blkno);
	if (LE16(trailer_of(fs, b)->db_free_rec_len) != 0)
		dr->dr_free_blk = htole64(b->blkno);
	/* an inline root keeps room for one more entry (ocfs2_new_dx_should_be_inline) */
	if (count < entries_per_root(fs)) {
		dr->dr_flags = OCFS2_DX_FLAG_INLINE;
		dr->dr_entries.de_count = htole16((uint16_t)entries_per_root(fs));
	} else {
		dr->dr_list.l_count = htole16((uint16_t)recs_per_root(fs));
		leaves = xcalloc(fs->bpc, sizeof(*leaves));
		if ((rc = new_leaf_cluster(h, dib->blkno, &pblk, leaves)) != 0)
			goto out;
	}
	for (off = 0; off < end; off += LE16(de->rec_len)) {
		de = (const struct ocfs2_dir_entry *)(b->data + off);
		if (de->inode == 0 || de->name_len == 0)
			continue;
		dx_name_hash(seed, de->name, de->name_len, &hv);
		if (leaves == NULL)
			l = &dr->dr_entries;
		else {
			j = hv.minor & (fs->bpc - 1);
			l = &((struct ocfs2_dx_leaf *)leaves[j]->data)->dl_list;
			if (LE16(l->de_num_used) >= LE16(l->de_count)) {
				rc = -ENOSPC;
				goto out;
			}
		}
		list_append(l, &hv, b->blkno);
		dr->dr_num_entries = htole32(LE32(dr->dr_num_entries) + 1);
	}
	if (leaves != NULL) {
		for (j = 0; j < fs->bpc; j++)
			journal_dirty(h, leaves[j]);
		if ((rc = extent_insert(h, rb, 0, 1, pblk, 0)) != 0)
			goto out;
	}
	journal_dirty(h, rb);
	di->i_dx_root = htole64(sb.blkno);
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_INDEXED_DIR_FL);
	journal_dirty(h, dib);
out:
	if (leaves != NULL) {
		put_leaves(fs, leaves);
		free(leaves);
	}
	block_put(fs, rb);
	return rc;
}

/*
 * Drop a deleted directory's index (ocfs2_dx_dir_truncate): the leaf
 * clusters into the truncate log (-EAGAIN: it is full, flush and call
 * again), then the root's bit, the flag and i_dx_root. dib accessed in h.
 */
int
dx_truncate(struct fsd_handle *h, struct fsd_buf *dib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	const struct ocfs2_dx_root_block *dr;
	unsigned slot;
	uint64_t group;
	struct fsd_buf *rb;
	int rc;

	if (!dx_indexed(di))
		return 0;
	if ((rc = root_read(fs, di, &rb)) != 0)
		return rc;
	dr = (const struct ocfs2_dx_root_block *)rb->data;
	if (!root_inline(rb) && (rc = extent_truncate(h, rb, 0)) != 0)
		goto out;
	slot = LE16(dr->dr_suballoc_slot);
	if (slot >= fs->vol.max_slots) {
		fsd_corrupt(fs, rb->blkno, "index root from an impossible slot");
		rc = -EIO;
		goto out;
	}
	group = LE64(dr->dr_suballoc_loc);
	if (group == 0)
		group = rb->blkno - LE16(dr->dr_suballoc_bit);
	if ((rc = suballoc_free(h, fs->slots[slot].extent_alloc, group,
	    LE16(dr->dr_suballoc_bit))) != 0)
		goto out;
	di->i_dx_root = 0;
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_INDEXED_DIR_FL);
	journal_dirty(h, dib);
out:
	block_put(fs, rb);
	return rc;
}
