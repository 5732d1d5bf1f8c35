/*
 * Directories (doc/ondisk.md, Directories): blocks of variable-length
 * entries that tile each block exactly, or one inline area inside the
 * inode that moves to a block when full (doc/inline-data.md). An entry's
 * position (byte offset in the directory) is its readdir cookie: resuming
 * walks the block from its start to the first entry at or after the
 * cookie, so offsets stay valid while entries come and go, and across an
 * expansion, which keeps every entry at its offset.
 *
 * On a volume with indexed-dirs or metaecc each block ends with a trailer,
 * a record that looks like an unused entry to older readers
 * (doc/indexed-dirs.md, doc/metaecc.md): new entries never go into it. Indexed directories find names through
 * dxdir.c; the others through the in-memory index of dirindex.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "util.h"

#include "fsd.h"

int
dir_block_check(const uint8_t *p, size_t len, char *why, size_t whylen)
{
	const struct ocfs2_dir_entry *de;
	size_t off = 0;
	unsigned rec;

	while (off < len) {
		if (len - off < OCFS2_DIR_REC_LEN(1)) {
			snprintf(why, whylen, "directory entry at offset %zu runs past the end", off);
			return -1;
		}
		de = (const struct ocfs2_dir_entry *)(p + off);
		rec = LE16(de->rec_len);
		if (rec < OCFS2_DIR_REC_LEN(1) || rec % 4 != 0 || rec > len - off ||
		    (de->inode != 0 && rec < OCFS2_DIR_REC_LEN(de->name_len))) {
			snprintf(why, whylen, "directory entry at offset %zu has impossible "
			    "length %u (name length %u)", off, rec, de->name_len);
			return -1;
		}
		if (de->inode != 0 && de->name_len == 0) {
			snprintf(why, whylen, "directory entry at offset %zu has an empty name", off);
			return -1;
		}
		off += rec;
	}
	return 0;
}

void
dir_register_checks(struct fsd *fs)
{
	fs->check_dir_entries = dir_block_check;
	dx_register_checks(fs);
}

/* Walk the entries of one block (or the inline area) starting at base. */
static int
walk_area(const uint8_t *p, size_t len, uint64_t base, uint64_t pos,
    dir_iter_fn fn, void *arg)
{
	const struct ocfs2_dir_entry *de;
	struct fsd_dirent d;
	size_t off = 0;
	int r;

	while (off < len) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		d.pos = base + off;
		off += LE16(de->rec_len);	/* tiling was checked on read */
		if (de->inode == 0 || d.pos < pos)
			continue;
		d.ino = LE64(de->inode);
		d.type = de->file_type;
		d.name_len = de->name_len;
		memcpy(d.name, de->name, de->name_len);
		d.name[de->name_len] = '\0';
		d.next = base + off;
		if ((r = fn(arg, &d)) != 0)
			return r;
	}
	return 0;
}

/*
 * Blocks a (non-inline) directory spans: its size rounded up to whole
 * blocks. mkfs.ocfs2 leaves lost+found one trailer short of a block on a
 * volume with trailers (4032 bytes in 4K blocks); the kernel reads such a
 * last block whole, and ocfs2_extend_dir puts the next block after it,
 * adding a block's bytes to i_size.
 */
static uint64_t
dir_blocks(const struct fsd *fs, const struct ocfs2_dinode *di)
{
	return (LE64(di->i_size) + fs->vol.block_bytes - 1) >> fs->bbits;
}

int
dir_iterate(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t pos,
    dir_iter_fn fn, void *arg)
{
	unsigned bs = fs->vol.block_bytes;
	uint64_t size = LE64(di->i_size), nblocks, lblk, blkno = LE64(di->i_blkno);
	struct fsd_extent ex = { 0, 0, 0, 0 };
	uint64_t ex_start = 0;
	struct fsd_buf *b;
	char why[96];
	int r;

	if (LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL)
		return walk_area(di->id2.i_data.id_data, size, 0, pos, fn, arg);
	nblocks = dir_blocks(fs, di);
	for (lblk = pos / bs; lblk < nblocks; lblk++) {
		if (lblk >= ex_start + ex.nblocks || ex.nblocks == 0) {
			if ((r = extent_map(fs, blkno, &di->id2.i_list, lblk, &ex)) != 0)
				return r;
			ex_start = lblk;
			if (ex.pblk == 0 || ex.unwritten) {
				snprintf(why, sizeof(why), "directory has a hole at block %llu",
				    (unsigned long long)lblk);
				fsd_corrupt(fs, blkno, why);
				return -EIO;
			}
		}
		if ((r = dir_block_read(fs, di, ex.pblk + (lblk - ex_start), &b)) != 0)
			return r;
		r = walk_area(b->data, bs, lblk * bs, pos, fn, arg);
		block_put(fs, b);
		if (r != 0)
			return r;
	}
	return 0;
}

struct lookup_arg {
	const char	*name;
	size_t		 len;
	uint64_t	 ino;
};

static int
lookup_cb(void *arg, const struct fsd_dirent *d)
{
	struct lookup_arg *la = arg;

	if (d->name_len == la->len && memcmp(d->name, la->name, la->len) == 0) {
		la->ino = d->ino;
		return 1;
	}
	return 0;
}

/* The entry at byte position pos of a directory, read from its block. */
static int
entry_at(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t pos, struct fsd_buf **bp,
    const struct ocfs2_dir_entry **dep)
{
	struct fsd_extent ex;
	unsigned bs = fs->vol.block_bytes, off = (unsigned)(pos % bs);
	int rc;

	if (pos >= LE64(di->i_size) || (LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL))
		return -ENOENT;
	if ((rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, pos / bs, &ex)) != 0)
		return rc;
	if (ex.pblk == 0)
		return -ENOENT;
	if ((rc = dir_block_read(fs, di, ex.pblk, bp)) != 0)
		return rc;
	*dep = (const struct ocfs2_dir_entry *)((*bp)->data + off);
	return 0;
}

static int
index_cb(void *arg, const struct fsd_dirent *d)
{
	dindex_insert(arg, d->name, d->name_len, d->pos);
	return 0;
}

/*
 * Where the index puts name: 1 and *pos, 0 when absent, -1 when there is
 * no index to ask (no in-memory inode, or an inline directory).
 */
static int
index_find(struct fsd *fs, const struct ocfs2_dinode *di, const char *name, size_t len,
    uint64_t *pos)
{
	struct fsd_inode *ip;
	int r;

	if ((LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL) || dx_indexed(di))
		return -1;
	if ((ip = inode_find(fs, LE64(di->i_blkno))) == NULL)
		return -1;
	pthread_mutex_lock(&ip->dmtx);
	if (ip->dindex == NULL) {
		ip->dindex = dindex_new();
		if (dir_iterate(fs, di, 0, index_cb, ip->dindex) != 0) {
			dindex_free(ip->dindex);
			ip->dindex = NULL;
		}
	}
	r = ip->dindex ? dindex_find(ip->dindex, name, len, pos) : -1;
	pthread_mutex_unlock(&ip->dmtx);
	inode_put(fs, ip);
	return r;
}

/* Keep an existing index in step with a change (the directory is locked EX). */
static void
index_update(struct fsd_handle *h, const struct ocfs2_dinode *di, const char *name, size_t len,
    int64_t pos)
{
	struct fsd_inode *ip;
	uint64_t blkno = LE64(di->i_blkno);

	if (dx_indexed(di))
		return;
	if (journal_note_dir(h, blkno) != 0) {
		inode_drop_dindex(h->fs, blkno);	/* cannot track an abort: rebuild later */
		return;
	}
	if ((ip = inode_find(h->fs, blkno)) == NULL)
		return;
	pthread_mutex_lock(&ip->dmtx);
	if (ip->dindex != NULL) {
		if (pos < 0)
			dindex_remove(ip->dindex, name, len);
		else
			dindex_insert(ip->dindex, name, len, (uint64_t)pos);
	}
	pthread_mutex_unlock(&ip->dmtx);
	inode_put(h->fs, ip);
}

int
dir_lookup(struct fsd *fs, const struct ocfs2_dinode *di, const char *name, size_t len,
    uint64_t *ino)
{
	struct lookup_arg la = { name, len, 0 };
	const struct ocfs2_dir_entry *de;
	struct dx_found f;
	struct fsd_buf *b;
	uint64_t pos;
	int r;

	if (len == 0 || len > OCFS2_MAX_FILENAME_LEN)
		return -ENOENT;
	if (dx_indexed(di)) {
		if ((r = dx_find(fs, di, name, len, &f)) != 0)
			return r;
		*ino = LE64(((const struct ocfs2_dir_entry *)(f.blk->data + f.off))->inode);
		dx_release(fs, &f);
		return 0;
	}
	r = index_find(fs, di, name, len, &pos);
	if (r == 0)
		return -ENOENT;
	if (r == 1) {
		if ((r = entry_at(fs, di, pos, &b, &de)) < 0 && r != -ENOENT)
			return r;
		if (r == 0 && de->inode != 0 && de->name_len == len &&
		    memcmp(de->name, name, len) == 0) {
			*ino = LE64(de->inode);
			block_put(fs, b);
			return 0;
		}
		if (r == 0)
			block_put(fs, b);
		/* the index was wrong: forget it and look the slow way */
		inode_drop_dindex(fs, LE64(di->i_blkno));
	}
	r = dir_iterate(fs, di, 0, lookup_cb, &la);
	if (r < 0)
		return r;
	if (r == 0)
		return -ENOENT;
	*ino = la.ino;
	return 0;
}

/* ---- changing directories (inside a handle, directory locked EX) -------- */

/*
 * Visit every directory block of di with its physical block number; fn
 * returns nonzero to stop. The last visited block stays referenced in
 * *bp when fn stops on it.
 */
static int
for_each_block(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t from,
    int (*fn)(void *, struct fsd_buf *, uint64_t), void *arg, struct fsd_buf **bp)
{
	uint64_t nblocks = dir_blocks(fs, di), lblk, ex_start = 0;
	struct fsd_extent ex = { 0, 0, 0, 0 };
	struct fsd_buf *b;
	int r;

	*bp = NULL;
	for (lblk = from; lblk < nblocks; lblk++) {
		if (ex.nblocks == 0 || lblk >= ex_start + ex.nblocks) {
			if ((r = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex)) != 0)
				return r;
			ex_start = lblk;
			if (ex.pblk == 0) {
				fsd_corrupt(fs, LE64(di->i_blkno), "directory has a hole");
				return -EIO;
			}
		}
		if ((r = dir_block_read(fs, di, ex.pblk + (lblk - ex_start), &b)) != 0)
			return r;
		if ((r = fn(arg, b, lblk)) != 0) {
			*bp = b;
			return r;
		}
		block_put(fs, b);
	}
	return 0;
}

struct find_arg {
	const char	*name;
	size_t		 len;
	unsigned	 bs;
	unsigned	 off, prev;	/* entry found and the one before it (or ~0) */
};

int
dir_block_find(const uint8_t *p, unsigned len, const char *name, size_t namelen,
    unsigned *offp, unsigned *prevp)
{
	const struct ocfs2_dir_entry *de;
	unsigned off = 0, prev = ~0u;

	while (off < len) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		if (de->inode != 0 && de->name_len == namelen &&
		    memcmp(de->name, name, namelen) == 0) {
			*offp = off;
			*prevp = prev;
			return 1;
		}
		prev = off;
		off += LE16(de->rec_len);
	}
	return 0;
}

/* Look for fa's name among the entries tiling p[0, len): 1 when found. */
static int
find_in(struct find_arg *fa, const uint8_t *p, unsigned len)
{
	return dir_block_find(p, len, fa->name, fa->len, &fa->off, &fa->prev);
}

static int
find_cb(void *arg, struct fsd_buf *b, uint64_t lblk)
{
	struct find_arg *fa = arg;

	(void)lblk;
	return find_in(fa, b->data, fa->bs);
}

/* Find name's block: straight from the index when it knows, else by a scan. */
static int
find_entry(struct fsd *fs, const struct ocfs2_dinode *di, struct find_arg *fa, struct fsd_buf **bp)
{
	uint64_t pos;
	int r;

	if (index_find(fs, di, fa->name, fa->len, &pos) == 1) {
		/* names are unique: any match is the entry */
		if ((r = for_each_block(fs, di, pos / fa->bs, find_cb, fa, bp)) != 0)
			return r;
		inode_drop_dindex(fs, LE64(di->i_blkno));
	}
	return for_each_block(fs, di, 0, find_cb, fa, bp);
}

/* Drop the entry at off: fold it into the entry before, as the kernel does. */
void
dir_block_drop_entry(uint8_t *p, unsigned off, unsigned prev)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)(p + off), *pde;

	if (prev != ~0u) {
		pde = (struct ocfs2_dir_entry *)(p + prev);
		pde->rec_len = htole16(LE16(pde->rec_len) + LE16(de->rec_len));
	} else
		de->inode = 0;
}

static void
drop_entry(uint8_t *p, const struct find_arg *fa)
{
	dir_block_drop_entry(p, fa->off, fa->prev);
}

static void
retarget_entry(uint8_t *p, const struct find_arg *fa, uint64_t ino, uint8_t type)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)(p + fa->off);

	de->inode = htole64(ino);
	de->file_type = type;
}

/*
 * An inline directory's entries live in its inode block (locked EX by
 * the caller): found, dropped or retargeted and journaled there. 1 when
 * the directory is inline (*rc the result), 0 when it has blocks.
 */
static int
inline_change(struct fsd_handle *h, struct fsd_buf *dib, struct find_arg *fa, int drop,
    uint64_t ino, uint8_t type, int *rc)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;

	if (!inline_has(di))
		return 0;
	if (!find_in(fa, di->id2.i_data.id_data, (unsigned)LE64(di->i_size)))
		*rc = -ENOENT;
	else if ((*rc = journal_access(h, dib)) == 0) {
		if (drop)
			drop_entry(di->id2.i_data.id_data, fa);
		else
			retarget_entry(di->id2.i_data.id_data, fa, ino, type);
		journal_dirty(h, dib);
	}
	return 1;
}

int
dir_remove(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)dib->data;
	struct find_arg fa = { name, len, h->fs->vol.block_bytes, 0, 0 };
	struct dx_found f;
	struct fsd_buf *b;
	int r;

	if (inline_change(h, dib, &fa, 1, 0, 0, &r))
		return r;
	if (dx_indexed(di)) {
		if ((r = dx_find(h->fs, di, name, len, &f)) != 0)
			return r;
		r = dx_remove(h, dib, &f);
		dx_release(h->fs, &f);
		return r;
	}
	r = find_entry(h->fs, di, &fa, &b);
	if (r < 0)
		return r;
	if (r == 0)
		return -ENOENT;
	if ((r = journal_access(h, b)) == 0) {
		drop_entry(b->data, &fa);
		journal_dirty(h, b);
		index_update(h, di, name, len, -1);
	}
	block_put(h->fs, b);
	return r;
}

int
dir_retarget(struct fsd_handle *h, struct fsd_buf *dib, const char *name,
    size_t len, uint64_t ino, uint8_t type)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)dib->data;
	struct find_arg fa = { name, len, h->fs->vol.block_bytes, 0, 0 };
	struct dx_found f;
	struct fsd_buf *b;
	int r;

	if (inline_change(h, dib, &fa, 0, ino, type, &r))
		return r;
	if (dx_indexed(di)) {
		/* the name stays: its index entry too */
		if ((r = dx_find(h->fs, di, name, len, &f)) != 0)
			return r;
		fa.off = f.off;
		b = f.blk;
		block_ref(h->fs, b);
		dx_release(h->fs, &f);
		r = 1;
	} else
		r = find_entry(h->fs, di, &fa, &b);
	if (r < 0)
		return r;
	if (r == 0)
		return -ENOENT;
	if ((r = journal_access(h, b)) == 0) {
		retarget_entry(b->data, &fa, ino, type);
		journal_dirty(h, b);
	}
	block_put(h->fs, b);
	return r;
}

/*
 * Where the entries of a block end: at its trailer when it has one. The
 * kernel keeps trailers in indexed directories and on metaecc volumes,
 * but a block of another directory may carry one (fsd lays it on every
 * new block of an indexed-dirs volume): new entries stay out of it all
 * the same.
 */
static unsigned
entries_end(const struct fsd *fs, const uint8_t *p)
{
	const struct ocfs2_dir_block_trailer *t = dir_trailer(fs, p);
	const struct ocfs2_dir_entry *de;
	unsigned bs = fs->vol.block_bytes, toff = bs - (unsigned)sizeof(*t), off = 0;

	if (memcmp(t->db_signature, OCFS2_DIR_TRAILER_SIGNATURE,
	    sizeof(OCFS2_DIR_TRAILER_SIGNATURE) - 1) != 0 || t->db_compat_inode != 0 ||
	    LE16(t->db_compat_rec_len) != sizeof(*t))
		return bs;
	/* only a record of its own: an entry boundary must fall there */
	while (off < toff) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		off += LE16(de->rec_len);
	}
	return off == toff ? toff : bs;
}

struct space_arg {
	const struct fsd	*fs;
	unsigned		 need;
	unsigned		 off;
	uint64_t		 lblk;
};

/* An unused entry big enough, or a live one with enough slack to split, in p[0, len). */
static int
space_in(struct space_arg *sa, const uint8_t *p, unsigned len)
{
	const struct ocfs2_dir_entry *de;
	unsigned off = 0, rec, used;

	while (off < len) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		rec = LE16(de->rec_len);
		used = de->inode ? OCFS2_DIR_REC_LEN(de->name_len) : 0;
		if (rec >= used + sa->need) {
			sa->off = off;
			return 1;
		}
		off += rec;
	}
	return 0;
}

static int
space_cb(void *arg, struct fsd_buf *b, uint64_t lblk)
{
	struct space_arg *sa = arg;

	sa->lblk = lblk;
	return space_in(sa, b->data, entries_end(sa->fs, b->data));
}

static unsigned
put_entry(uint8_t *blk, unsigned off, uint64_t ino, const char *name, size_t len, uint8_t type)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)(blk + off);
	unsigned rec = LE16(de->rec_len), used;

	if (de->inode != 0) {
		/* split: the old entry keeps what it needs, we take the rest */
		used = OCFS2_DIR_REC_LEN(de->name_len);
		de->rec_len = htole16(used);
		de = (struct ocfs2_dir_entry *)(blk + off + used);
		rec -= used;
	}
	de->inode = htole64(ino);
	de->rec_len = htole16(rec);
	de->name_len = (uint8_t)len;
	de->file_type = type;
	memcpy(de->name, name, len);
	return (unsigned)((uint8_t *)de - blk);
}

int
dir_block_put_entry(struct fsd *fs, uint8_t *p, unsigned len, uint64_t ino, const char *name,
    size_t namelen, uint8_t type)
{
	struct space_arg sa = { fs, OCFS2_DIR_REC_LEN(namelen), 0, 0 };

	if (!space_in(&sa, p, len))
		return -ENOSPC;
	put_entry(p, sa.off, ino, name, namelen, type);
	return 0;
}

/* What type a new block of the directory is cached as (dir_block_read's). */
static enum blk_type
new_block_type(const struct fsd *fs, const struct ocfs2_dinode *di)
{
	/* a directory getting its first block on such a volume is indexed in the same handle */
	if (dx_indexed(di) || (dx_volume(fs) && LE64(di->i_size) == 0))
		return BLK_DXDIR;
	return BLK_DIR;
}

/*
 * Grow the directory by one block (a new cluster when the last is full),
 * one unused entry up to the trailer, which a volume with indexed-dirs
 * lays on every new block (ocfs2_extend_dir); in an indexed directory the
 * block joins the free-space list.
 */
int
dir_extend_block(struct fsd_handle *h, struct fsd_buf *dib, struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	uint64_t size = LE64(di->i_size), lblk = dir_blocks(fs, di);
	unsigned bs = fs->vol.block_bytes, end = bs;
	struct ocfs2_dir_entry *de;
	struct fsd_extent ex;
	uint32_t start;
	unsigned got;
	int rc;

	if ((rc = journal_access(h, dib)) != 0)
		return rc;
	if ((lblk << fs->bbits) >= ((uint64_t)LE32(di->i_clusters) << fs->cbits)) {
		rc = la_claim(h, 0, 1, 1, &start, &got);
		if (rc == 0)
			rc = extent_append(h, dib, LE32(di->i_clusters),
			    (uint64_t)start << (fs->cbits - fs->bbits), 1);
		if (rc != 0)
			return rc;
	}
	if ((rc = extent_map(fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex)) != 0)
		return rc;
	if (ex.pblk == 0)
		return -EIO;
	if ((rc = block_new_owned(fs, ex.pblk, new_block_type(fs, di), LE64(di->i_blkno), bp)) != 0)
		return rc;
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	if (dir_has_trailers(fs)) {
		end = bs - (unsigned)sizeof(struct ocfs2_dir_block_trailer);
		dir_trailer_init(fs, *bp, LE64(di->i_blkno), end);
	}
	de = (struct ocfs2_dir_entry *)(*bp)->data;
	de->rec_len = htole16(end);
	di->i_size = htole64(size + bs);
	journal_dirty(h, dib);
	journal_dirty(h, *bp);
	if (dx_indexed(di) && (rc = dx_link_free_block(h, di, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	return 0;
}

/*
 * A full inline directory moves to a block, as ocfs2_expand_inline_dir
 * does: a new cluster, its first block the inline entries with the last
 * one stretched to the end of the block (to its trailer on a volume with
 * indexed-dirs, where the directory is indexed at once), i_size one
 * block, id2 an extent list.
 */
static int
expand_inline(struct fsd_handle *h, struct fsd_buf *dib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	unsigned bs = fs->vol.block_bytes, size = (unsigned)LE64(di->i_size), off = 0, rec, got;
	unsigned end = dir_has_trailers(fs) ? bs - (unsigned)sizeof(struct ocfs2_dir_block_trailer) :
	    bs;
	struct ocfs2_dir_entry *de;
	struct fsd_buf *b;
	uint32_t start;
	uint64_t pblk;
	int rc;

	if ((rc = journal_access(h, dib)) != 0)
		return rc;
	if ((rc = la_claim(h, 0, 1, 1, &start, &got)) != 0)
		return rc;
	pblk = (uint64_t)start << (fs->cbits - fs->bbits);
	if ((rc = block_new_owned(fs, pblk, dx_volume(fs) ? BLK_DXDIR : BLK_DIR, dib->blkno,
	    &b)) != 0)
		return rc;
	if ((rc = journal_access(h, b)) != 0) {
		block_put(fs, b);
		return rc;
	}
	memcpy(b->data, di->id2.i_data.id_data, size);
	for (;;) {
		de = (struct ocfs2_dir_entry *)(b->data + off);
		rec = LE16(de->rec_len);	/* the entries tile size bytes (checked on read) */
		if (off + rec >= size)
			break;
		off += rec;
	}
	de->rec_len = htole16(end - off);
	if (dir_has_trailers(fs))
		dir_trailer_init(fs, b, dib->blkno, dir_block_max_hole(b->data, end));
	journal_dirty(h, b);
	memset(&di->id2, 0, bs - offsetof(struct ocfs2_dinode, id2));
	di->id2.i_list.l_count = htole16(ocfs2_extent_recs_per_inode(bs));
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_INLINE_DATA_FL);
	if ((rc = extent_append(h, dib, 0, pblk, 1)) == 0) {
		di->i_size = htole64(bs);
		journal_dirty(h, dib);
		if (dx_volume(fs))
			rc = dx_attach(h, dib, b);
	}
	block_put(fs, b);
	return rc;
}

int
dir_add(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len, uint64_t ino,
    uint8_t type)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	struct space_arg sa = { h->fs, OCFS2_DIR_REC_LEN(len), 0, 0 };
	uint64_t nblocks;
	struct fsd_buf *b;
	unsigned off;
	int r = 0;

	if (inline_has(di)) {
		if (space_in(&sa, di->id2.i_data.id_data, (unsigned)LE64(di->i_size))) {
			if ((r = journal_access(h, dib)) != 0)
				return r;
			put_entry(di->id2.i_data.id_data, sa.off, ino, name, len, type);
			journal_dirty(h, dib);
			return 0;
		}
		if ((r = expand_inline(h, dib)) != 0)
			return r;
	}
	if (dx_indexed(di))
		return dx_add(h, dib, name, len, ino, type);
	nblocks = dir_blocks(h->fs, di);
	/* The last block first: directories mostly grow at the end. */
	if (nblocks > 0)
		r = for_each_block(h->fs, di, nblocks - 1, space_cb, &sa, &b);
	if (r == 0)
		r = for_each_block(h->fs, di, 0, space_cb, &sa, &b);
	if (r < 0)
		return r;
	if (r == 0) {
		sa.lblk = dir_blocks(h->fs, di);
		if ((r = dir_extend_block(h, dib, &b)) != 0)
			return r;
		sa.off = 0;
	} else if ((r = journal_access(h, b)) != 0) {
		block_put(h->fs, b);
		return r;
	}
	off = put_entry(b->data, sa.off, ino, name, len, type);
	journal_dirty(h, b);
	block_put(h->fs, b);
	index_update(h, di, name, len, (int64_t)(sa.lblk * h->fs->vol.block_bytes + off));
	return 0;
}

/* "." and ".." at the start of p, ".." taking the rest of len. */
static void
fill_initial(uint8_t *p, unsigned len, uint64_t self, uint64_t parent)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)p;

	de->inode = htole64(self);
	de->rec_len = htole16(OCFS2_DIR_REC_LEN(1));
	de->name_len = 1;
	de->file_type = OCFS2_FT_DIR;
	de->name[0] = '.';
	de = (struct ocfs2_dir_entry *)(p + OCFS2_DIR_REC_LEN(1));
	de->inode = htole64(parent);
	de->rec_len = htole16(len - OCFS2_DIR_REC_LEN(1));
	de->name_len = 2;
	de->file_type = OCFS2_FT_DIR;
	memcpy(de->name, "..", 2);
}

int
dir_init(struct fsd_handle *h, struct fsd_buf *dib, uint64_t parent)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)dib->data;
	unsigned end = fs->vol.block_bytes;
	struct fsd_buf *b;
	int rc;

	if (fs->inline_data) {
		/* as ocfs2_fill_new_dir_id: i_size is the whole inline area */
		if ((rc = journal_access(h, dib)) != 0)
			return rc;
		inline_start(h, dib);
		fill_initial(di->id2.i_data.id_data, LE16(di->id2.i_data.id_count),
		    dib->blkno, parent);
		di->i_size = htole64(LE16(di->id2.i_data.id_count));
		journal_dirty(h, dib);
		return 0;
	}
	if ((rc = dir_extend_block(h, dib, &b)) != 0)
		return rc;
	if (dir_has_trailers(fs))
		end -= (unsigned)sizeof(struct ocfs2_dir_block_trailer);
	fill_initial(b->data, end, dib->blkno, parent);
	if (dir_has_trailers(fs))
		dir_trailer_init(fs, b, dib->blkno, dir_block_max_hole(b->data, end));
	/* indexed from the start, as ocfs2_fill_new_dir_dx */
	if (dx_volume(fs))
		rc = dx_attach(h, dib, b);
	journal_dirty(h, b);
	block_put(fs, b);
	return rc;
}

static int
empty_cb(void *arg, const struct fsd_dirent *d)
{
	(void)arg;
	if ((d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	return 1;
}

int
dir_is_empty(struct fsd *fs, const struct ocfs2_dinode *di)
{
	int r = dir_iterate(fs, di, 0, empty_cb, NULL);

	return r < 0 ? r : r == 0;
}
