/*
 * Inline data (doc/inline-data.md): on a volume with INLINE_DATA a small
 * file keeps its bytes in the inode block, where id2 would hold the
 * extent list: id_count bytes of room, i_size of them used, the rest
 * zeros. The inode's META lock covers them like the rest of the inode
 * block, and every change is journaled with it. A file becomes inline at
 * its first write when it is empty and the write fits (as the kernel's
 * ocfs2_try_to_write_inline_data); when it outgrows the area its bytes
 * move to a cluster and id2 becomes an extent list, in the transaction
 * of the write or truncate that needed the room (as
 * ocfs2_convert_inline_data_to_extents). Directories: dir.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fsd.h"

/* Bytes of an inode's inline xattr area at the end of its block (doc/xattr.md). */
static unsigned
xattr_bytes(const struct ocfs2_dinode *di)
{
	return (LE16(di->i_dyn_features) & OCFS2_INLINE_XATTR_FL) ? LE16(di->i_xattr_inline_size) : 0;
}

unsigned
inline_capacity(const struct fsd *fs, const struct ocfs2_dinode *di)
{
	/* ocfs2_max_inline_data_with_xattr: the inline xattr area is not ours */
	return (unsigned)ocfs2_max_inline_data_with_xattr((int)fs->vol.block_bytes, NULL) -
	    xattr_bytes(di);
}

/* Bytes of the block from id2 on, up to the inline xattr area: what id2 may use. */
static size_t
id2_bytes(const struct fsd *fs, const struct ocfs2_dinode *di)
{
	return fs->vol.block_bytes - offsetof(struct ocfs2_dinode, id2) - xattr_bytes(di);
}

void
inline_start(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;

	memset(&di->id2, 0, id2_bytes(h->fs, di));
	di->id2.i_data.id_count = htole16((uint16_t)inline_capacity(h->fs, di));
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) | OCFS2_INLINE_DATA_FL);
	journal_dirty(h, ib);
}

void
inline_write(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, const void *data,
    size_t len)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;

	uint64_t size = LE64(di->i_size);

	/* a gap after the size reads as zeros (they should be there already) */
	if (off > size)
		memset(di->id2.i_data.id_data + size, 0, off - size);
	memcpy(di->id2.i_data.id_data + off, data, len);
	if (off + len > size)
		di->i_size = htole64(off + len);
	journal_dirty(h, ib);
}

void
inline_truncate(struct fsd_handle *h, struct fsd_buf *ib, uint64_t newsize)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t size = LE64(di->i_size);

	/* as ocfs2_truncate_inline: what the file no longer holds reads as zeros later */
	if (newsize < size)
		memset(di->id2.i_data.id_data + newsize, 0, size - newsize);
	di->i_size = htole64(newsize);
	journal_dirty(h, ib);
}

int
inline_file_to_extents(struct fsd_handle *h, struct fsd_buf *ib)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)ib->data;
	uint64_t size = LE64(di->i_size), pblk = 0;
	unsigned bs = fs->vol.block_bytes, got;
	uint32_t start;
	uint8_t *buf;
	int rc;

	if (size > 0) {
		/*
		 * One cluster for the bytes, the rest of it zeros (the
		 * kernel zeroes the pages of the cluster it maps): written
		 * now, before the commit that points the inode at it.
		 */
		if ((rc = la_claim(h, 0, 1, 1, &start, &got)) != 0)
			return rc;
		pblk = (uint64_t)start << (fs->cbits - fs->bbits);
		if ((buf = volume_alloc(bs)) == NULL)
			return -ENOMEM;
		memcpy(buf, di->id2.i_data.id_data, size);
		rc = block_io(fs, 1, pblk, 1, buf);
		free(buf);
		if (rc == 0 && fs->bpc > 1)
			rc = block_zero(fs, pblk + 1, fs->bpc - 1);
		if (rc != 0)
			return rc;
	}
	memset(&di->id2, 0, id2_bytes(fs, di));
	di->id2.i_list.l_count = htole16((uint16_t)(ocfs2_extent_recs_per_inode(bs) -
	    xattr_bytes(di) / sizeof(struct ocfs2_extent_rec)));
	di->i_dyn_features = htole16(LE16(di->i_dyn_features) & ~OCFS2_INLINE_DATA_FL);
	if (size > 0 && (rc = extent_append(h, ib, 0, pblk, 1)) != 0)
		return rc;
	journal_dirty(h, ib);
	return 0;
}

int
inline_convert(struct fsd *fs, struct fsd_inode *ip)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	int rc, is_inline;

	/* most files are not: a look under PR spares them a handle and an EX lock */
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &ib)) != 0)
		return rc;
	is_inline = inline_has((const struct ocfs2_dinode *)ib->data);
	inode_unlock_block(fs, ip, LKM_PR, ib);
	if (!is_inline)
		return 0;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = inode_lock_block(fs, ip, LKM_EX, &ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	if (inline_has((const struct ocfs2_dinode *)ib->data) &&
	    (rc = journal_access(&h, ib)) == 0)
		rc = inline_file_to_extents(&h, ib);
	inode_unlock_block_in(&h, ip, ib);
	journal_stop(&h, rc != 0);
	return rc;
}
