#include <sys/ioctl.h>
#include <sys/stat.h>

#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocfs2_disk.h"
#include "volume.h"

#define DIO_ALIGN	4096

void *
volume_alloc(size_t bytes)
{
	void *p;

	if (posix_memalign(&p, DIO_ALIGN, bytes ? bytes : DIO_ALIGN) != 0)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

static int
pio(struct volume *v, int fd, int write, uint64_t off, size_t len, void *buf)
{
	ssize_t n;
	size_t done = 0;

	if (v->io_gate != NULL && v->io_gate(v->io_gate_arg, write) == -1)
		return -1;
	while (done < len) {
		n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done)) :
		    pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

int
volume_read_blocks(struct volume *v, uint64_t blkno, unsigned count, void *buf)
{
	if ((blkno + count) * v->block_bytes > v->size_bytes) {
		errno = EIO;
		return -1;
	}
	return pio(v, v->fd, 0, blkno * v->block_bytes, (size_t)count * v->block_bytes, buf);
}

int
volume_write_blocks_via(struct volume *v, int fd, uint64_t blkno, unsigned count,
    const void *buf)
{
	if ((blkno + count) * v->block_bytes > v->size_bytes) {
		errno = EIO;
		return -1;
	}
	return pio(v, fd, 1, blkno * v->block_bytes, (size_t)count * v->block_bytes, (void *)buf);
}

int
volume_write_blocks(struct volume *v, uint64_t blkno, unsigned count, const void *buf)
{
	return volume_write_blocks_via(v, v->fd, blkno, count, buf);
}

static void
hex_upper(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Copy a fixed-size on-disk name, stopping at NUL or the field's end. */
static void
copy_name(char *dst, size_t dstlen, const uint8_t *src, size_t srclen)
{
	size_t i;

	for (i = 0; i < srclen && i + 1 < dstlen && src[i] != '\0'; i++)
		dst[i] = isprint(src[i]) ? (char)src[i] : '?';
	dst[i] = '\0';
}

/* The superblock sits at block 2 of whatever block size the volume has. */
static int
probe_superblock(struct volume *v, char *err, size_t errlen)
{
	struct ocfs2_dinode *di;
	struct ocfs2_super_block *sb;
	unsigned bs;
	uint8_t *buf;

	buf = volume_alloc(OCFS2_MAX_BLOCKSIZE);
	if (buf == NULL) {
		snprintf(err, errlen, "%s: out of memory", v->path);
		return -1;
	}
	for (bs = OCFS2_MIN_BLOCKSIZE; bs <= OCFS2_MAX_BLOCKSIZE; bs <<= 1) {
		if ((uint64_t)(OCFS2_SUPER_BLOCK_BLKNO + 1) * bs > v->size_bytes)
			break;
		/* O_DIRECT wants aligned reads: read the 4K around it. */
		if (pio(v, v->fd, 0, (OCFS2_SUPER_BLOCK_BLKNO * bs) & ~(uint64_t)(DIO_ALIGN - 1),
		    DIO_ALIGN, buf) == -1) {
			snprintf(err, errlen, "%s: read: %s", v->path, strerror(errno));
			free(buf);
			return -1;
		}
		di = (struct ocfs2_dinode *)(buf + ((OCFS2_SUPER_BLOCK_BLKNO * bs) & (DIO_ALIGN - 1)));
		if (memcmp(di->i_signature, OCFS2_SUPER_BLOCK_SIGNATURE,
		    sizeof(OCFS2_SUPER_BLOCK_SIGNATURE) - 1) != 0)
			continue;
		sb = &di->id2.i_super;
		if (le32toh(sb->s_blocksize_bits) >= 32 ||
		    (1u << le32toh(sb->s_blocksize_bits)) != bs)
			continue;
		v->block_bytes = bs;
		if (le32toh(sb->s_clustersize_bits) < 12 || le32toh(sb->s_clustersize_bits) > 20) {
			snprintf(err, errlen, "%s: superblock: bad cluster size bits %u",
			    v->path, le32toh(sb->s_clustersize_bits));
			free(buf);
			return -1;
		}
		v->cluster_bytes = 1u << le32toh(sb->s_clustersize_bits);
		v->max_slots = le16toh(sb->s_max_slots);
		v->compat = le32toh(sb->s_feature_compat);
		v->incompat = le32toh(sb->s_feature_incompat);
		v->ro_compat = le32toh(sb->s_feature_ro_compat);
		v->root_blkno = le64toh(sb->s_root_blkno);
		v->system_dir_blkno = le64toh(sb->s_system_dir_blkno);
		hex_upper(sb->s_uuid, OCFS2_VOL_UUID_LEN, v->uuid);
		copy_name(v->label, sizeof(v->label), sb->s_label, sizeof(sb->s_label));
		if (v->incompat & (OCFS2_FEATURE_INCOMPAT_CLUSTERINFO |
		    OCFS2_FEATURE_INCOMPAT_USERSPACE_STACK)) {
			copy_name(v->cluster_stack, sizeof(v->cluster_stack),
			    sb->s_cluster_info.ci_stack, OCFS2_STACK_LABEL_LEN);
			copy_name(v->cluster_name, sizeof(v->cluster_name),
			    sb->s_cluster_info.ci_cluster, OCFS2_CLUSTER_NAME_LEN);
		}
		free(buf);
		if (v->system_dir_blkno == 0 || v->system_dir_blkno * bs >= v->size_bytes) {
			snprintf(err, errlen, "%s: superblock: system directory at "
			    "block %llu is outside the volume", v->path,
			    (unsigned long long)v->system_dir_blkno);
			return -1;
		}
		return 0;
	}
	free(buf);
	snprintf(err, errlen, "%s: no OCFS2 superblock found", v->path);
	return -1;
}

int
volume_open(const char *path, int flags, struct volume *v, char *err, size_t errlen)
{
	struct stat st;
	int ssz;

	memset(v, 0, sizeof(*v));
	v->fd = open(path, flags | O_DIRECT | O_CLOEXEC);
	if (v->fd == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	v->path = strdup(path);
	if (v->path == NULL || fstat(v->fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		volume_close(v);
		return -1;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(v->fd, BLKGETSIZE64, &v->size_bytes) == -1 ||
		    ioctl(v->fd, BLKSSZGET, &ssz) == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			volume_close(v);
			return -1;
		}
		v->sector_bytes = (unsigned)ssz;
	} else if (S_ISREG(st.st_mode)) {
		v->size_bytes = (uint64_t)st.st_size;
		v->sector_bytes = 512;	/* what libocfs2 assumes for an image */
	} else {
		snprintf(err, errlen, "%s: not a block device or an image file", path);
		volume_close(v);
		return -1;
	}
	if (probe_superblock(v, err, errlen) == -1) {
		volume_close(v);
		return -1;
	}
	return 0;
}

void
volume_close(struct volume *v)
{
	if (v->fd >= 0)
		close(v->fd);
	v->fd = -1;
	free(v->path);
	v->path = NULL;
}

int
volume_read_inode(struct volume *v, uint64_t blkno, void *buf, char *err, size_t errlen)
{
	struct ocfs2_dinode *di = buf;

	if (blkno == 0 || volume_read_blocks(v, blkno, 1, buf) == -1) {
		snprintf(err, errlen, "%s: inode %llu: %s", v->path,
		    (unsigned long long)blkno, blkno ? strerror(errno) : "block 0");
		return -1;
	}
	if (memcmp(di->i_signature, OCFS2_INODE_SIGNATURE,
	    sizeof(OCFS2_INODE_SIGNATURE) - 1) != 0) {
		snprintf(err, errlen, "%s: block %llu is not an inode (bad signature)",
		    v->path, (unsigned long long)blkno);
		return -1;
	}
	if (le64toh(di->i_blkno) != blkno) {
		snprintf(err, errlen, "%s: inode at block %llu claims block %llu",
		    v->path, (unsigned long long)blkno,
		    (unsigned long long)le64toh(di->i_blkno));
		return -1;
	}
	return 0;
}

/* Records an extent list of this many bytes can hold, for bounds checks. */
static int
list_sane(const struct ocfs2_extent_list *el, size_t room)
{
	size_t max = (room - offsetof(struct ocfs2_extent_list, l_recs)) /
	    sizeof(struct ocfs2_extent_rec);

	return le16toh(el->l_count) <= max &&
	    le16toh(el->l_next_free_rec) <= le16toh(el->l_count);
}

int
volume_map_block(struct volume *v, const void *dinode, uint64_t lblk,
    uint64_t *pblk, char *err, size_t errlen)
{
	const struct ocfs2_dinode *di = dinode;
	const struct ocfs2_extent_list *el = &di->id2.i_list;
	const struct ocfs2_extent_rec *rec;
	unsigned bpc = v->cluster_bytes / v->block_bytes;
	uint64_t cpos = lblk / bpc;
	uint8_t *eb = NULL;
	size_t room = v->block_bytes - offsetof(struct ocfs2_dinode, id2);
	int depth, i, found;

	*pblk = 0;
	for (depth = 0; depth < 8; depth++) {
		if (!list_sane(el, room)) {
			snprintf(err, errlen, "%s: corrupt extent list in inode %llu",
			    v->path, (unsigned long long)le64toh(di->i_blkno));
			free(eb);
			return -1;
		}
		found = -1;
		for (i = 0; i < le16toh(el->l_next_free_rec); i++) {
			rec = &el->l_recs[i];
			uint32_t len = le16toh(el->l_tree_depth) ?
			    le32toh(rec->e_int_clusters) : le16toh(rec->e_leaf_clusters);
			if (cpos >= le32toh(rec->e_cpos) && cpos < le32toh(rec->e_cpos) + (uint64_t)len)
				found = i;
		}
		if (found < 0) {
			free(eb);
			return 0;	/* a hole */
		}
		rec = &el->l_recs[found];
		if (le16toh(el->l_tree_depth) == 0) {
			*pblk = le64toh(rec->e_blkno) +
			    (cpos - le32toh(rec->e_cpos)) * bpc + lblk % bpc;
			free(eb);
			return 0;
		}
		if (eb == NULL && (eb = volume_alloc(v->block_bytes)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (volume_read_blocks(v, le64toh(rec->e_blkno), 1, eb) == -1 ||
		    memcmp(eb, OCFS2_EXTENT_BLOCK_SIGNATURE,
		    sizeof(OCFS2_EXTENT_BLOCK_SIGNATURE) - 1) != 0) {
			snprintf(err, errlen, "%s: bad extent block %llu",
			    v->path, (unsigned long long)le64toh(rec->e_blkno));
			free(eb);
			return -1;
		}
		el = &((struct ocfs2_extent_block *)eb)->h_list;
		room = v->block_bytes - offsetof(struct ocfs2_extent_block, h_list);
	}
	snprintf(err, errlen, "%s: extent tree too deep in inode %llu", v->path,
	    (unsigned long long)le64toh(di->i_blkno));
	free(eb);
	return -1;
}

/* Walk the entries of one directory block (or inline area) for name. */
static int
dirent_find(const uint8_t *p, size_t len, const char *name, uint64_t *ino)
{
	size_t off = 0, nlen = strlen(name);
	const struct ocfs2_dir_entry *de;
	uint16_t rec;

	while (off + OCFS2_DIR_REC_LEN(1) <= len) {
		de = (const struct ocfs2_dir_entry *)(p + off);
		rec = le16toh(de->rec_len);
		if (rec < OCFS2_DIR_REC_LEN(1) || off + rec > len)
			return -1;
		if (de->inode != 0 && de->name_len == nlen &&
		    OCFS2_DIR_REC_LEN(de->name_len) <= rec &&
		    memcmp(de->name, name, nlen) == 0) {
			*ino = le64toh(de->inode);
			return 1;
		}
		off += rec;
	}
	return 0;
}

int
volume_system_inode(struct volume *v, const char *name, int slot, uint64_t *blkno,
    char *err, size_t errlen)
{
	struct ocfs2_dinode *di;
	uint8_t *blk = NULL;
	uint64_t nblocks, lb, pb;
	char full[64];
	int rc = -1, r;

	if (slot >= 0)
		snprintf(full, sizeof(full), "%s:%04d", name, slot);
	else
		snprintf(full, sizeof(full), "%s", name);
	di = volume_alloc(v->block_bytes);
	blk = volume_alloc(v->block_bytes);
	if (di == NULL || blk == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (volume_read_inode(v, v->system_dir_blkno, di, err, errlen) == -1)
		goto out;
	if (le16toh(di->i_dyn_features) & OCFS2_INLINE_DATA_FL) {
		size_t room = v->block_bytes - offsetof(struct ocfs2_dinode, id2.i_data.id_data);
		size_t count = le16toh(di->id2.i_data.id_count);

		r = dirent_find(di->id2.i_data.id_data, count < room ? count : room, full, blkno);
		goto found;
	}
	nblocks = (le64toh(di->i_size) + v->block_bytes - 1) / v->block_bytes;
	r = 0;
	for (lb = 0; lb < nblocks && r == 0; lb++) {
		if (volume_map_block(v, di, lb, &pb, err, errlen) == -1)
			goto out;
		if (pb == 0)
			continue;
		if (volume_read_blocks(v, pb, 1, blk) == -1) {
			snprintf(err, errlen, "%s: system directory block %llu: %s",
			    v->path, (unsigned long long)pb, strerror(errno));
			goto out;
		}
		r = dirent_find(blk, v->block_bytes, full, blkno);
	}
found:
	if (r < 0)
		snprintf(err, errlen, "%s: corrupt entry in the system directory", v->path);
	else if (r == 0)
		snprintf(err, errlen, "%s: no system file %s", v->path, full);
	else
		rc = 0;
out:
	free(di);
	free(blk);
	return rc;
}

int
volume_heartbeat_region(struct volume *v, struct hb_region_desc *d, char *err, size_t errlen)
{
	struct ocfs2_dinode *di;
	const struct ocfs2_extent_list *el;
	uint64_t blkno, clusters;
	int rc = -1;

	if (volume_system_inode(v, "heartbeat", -1, &blkno, err, errlen) == -1)
		return -1;
	if ((di = volume_alloc(v->block_bytes)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (volume_read_inode(v, blkno, di, err, errlen) == -1)
		goto out;
	el = &di->id2.i_list;
	/* ocfs2_fill_heartbeat_desc: one extent, directly in the inode. */
	if (!(le32toh(di->i_flags) & OCFS2_HEARTBEAT_FL) || le16toh(el->l_tree_depth) != 0 ||
	    le16toh(el->l_next_free_rec) != 1) {
		snprintf(err, errlen, "%s: the heartbeat file is not one extent", v->path);
		goto out;
	}
	clusters = le16toh(el->l_recs[0].e_leaf_clusters);
	if (clusters * v->cluster_bytes < 255ULL * v->block_bytes) {
		snprintf(err, errlen, "%s: the heartbeat file is too small", v->path);
		goto out;
	}
	d->block_bytes = v->sector_bytes;
	d->start_block = le64toh(el->l_recs[0].e_blkno) * (v->block_bytes / v->sector_bytes);
	d->blocks = 255;
	rc = 0;
out:
	free(di);
	return rc;
}
