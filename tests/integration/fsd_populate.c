/*
 * Test fixture maker: populates an OCFS2 image through ocfs2-tools'
 * libocfs2, so that fsd is checked against files written by another
 * implementation. debugfs.ocfs2 is read-only, hence this helper. Built
 * by the fsd integration tests themselves (not by the Makefile):
 *   cc -o populate fsd_populate.c -locfs2 -l:libcom_err.so.2
 *
 * Commands, one per line on stdin (paths absolute, parents must exist):
 *   mkdir PATH
 *   file PATH HOSTFILE          copy a host file's bytes
 *   symlink PATH TARGET         fast or slow, by the target's length
 *   mknod PATH c|b|p|s MAJOR MINOR
 *   link NEWPATH EXISTINGPATH
 *   attr PATH MODE UID GID MTIME MTIME_NSEC   (mode octal, permission bits)
 *   interleave PATH1 PATH2 CLUSTERS
 *       two files grown one cluster at a time in turn, so that each gets
 *       CLUSTERS separate extents (deep extent trees on small blocks);
 *       byte i of file k is (i * 7 + k * 13 + i / 4096) & 0xff
 *   many DIR COUNT              COUNT empty files DIR/f00000...
 *   quotadelta user|group SLOT ID SPACE INODES
 *       the slot's local quota file as a kernel node that crashed leaves
 *       it: not clean, chunk 0's first entry in use, holding ID's usage
 *       not yet added to the global file (fs/ocfs2/quota_local.c layout)
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ocfs2/ocfs2.h>

static ocfs2_filesys *fs;

static void
die(const char *what, errcode_t ret)
{
	fprintf(stderr, "populate: %s: %s\n", what, error_message(ret));
	exit(1);
}

/* Split PATH into its parent's inode and its last component. */
static void
resolve_parent(const char *path, uint64_t *parent, char *name)
{
	char buf[4096], *p, *slash, *comp;
	uint64_t dir = fs->fs_root_blkno, ino;
	errcode_t ret;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (slash == NULL)
		die(path, OCFS2_ET_INVALID_ARGUMENT);
	snprintf(name, 256, "%s", slash + 1);
	*slash = '\0';
	for (p = buf; (comp = strsep(&p, "/")) != NULL;) {
		if (*comp == '\0')
			continue;
		ret = ocfs2_lookup(fs, dir, comp, strlen(comp), NULL, &ino);
		if (ret)
			die(path, ret);
		dir = ino;
	}
	*parent = dir;
}

static uint64_t
lookup_path(const char *path)
{
	uint64_t parent, ino;
	char name[256];
	errcode_t ret;

	resolve_parent(path, &parent, name);
	ret = ocfs2_lookup(fs, parent, name, strlen(name), NULL, &ino);
	if (ret)
		die(path, ret);
	return ino;
}

static void
add_links(uint64_t ino, int delta)
{
	char *buf;
	struct ocfs2_dinode *di;
	errcode_t ret;

	if ((ret = ocfs2_malloc_block(fs->fs_io, &buf)))
		die("malloc", ret);
	if ((ret = ocfs2_read_inode(fs, ino, buf)))
		die("read inode", ret);
	di = (struct ocfs2_dinode *)buf;
	di->i_links_count += delta;
	if ((ret = ocfs2_write_inode(fs, ino, buf)))
		die("write inode", ret);
	ocfs2_free(&buf);
}

/* ocfs2_link does not grow a full directory: expand and retry, as fsck does. */
static void
link_into(uint64_t dir, const char *name, uint64_t ino, int type)
{
	errcode_t ret;

	ret = ocfs2_link(fs, dir, name, ino, type);
	if (ret == OCFS2_ET_DIR_NO_SPACE) {
		if ((ret = ocfs2_expand_dir(fs, dir)))
			die("expand dir", ret);
		ret = ocfs2_link(fs, dir, name, ino, type);
	}
	if (ret)
		die(name, ret);
}

static uint64_t
new_inode(const char *path, int mode, int type, uint64_t *parentp)
{
	uint64_t parent, ino;
	char name[256];
	errcode_t ret;

	resolve_parent(path, &parent, name);
	if ((ret = ocfs2_new_inode(fs, &ino, mode)))
		die(path, ret);
	if (type == OCFS2_FT_DIR && (ret = ocfs2_init_dir(fs, ino, parent)))
		die(path, ret);
	link_into(parent, name, ino, type);
	if (parentp)
		*parentp = parent;
	return ino;
}

/*
 * libocfs2 writes whole blocks inside i_size only: grow i_size first
 * (ocfs2_extend_file), then write block-padded data; the pad is zeros.
 */
static void
write_at(uint64_t ino, const void *data, uint32_t len, uint64_t off)
{
	ocfs2_cached_inode *ci;
	uint32_t wrote, padded;
	errcode_t ret;
	char *buf;

	padded = (len + fs->fs_blocksize - 1) / fs->fs_blocksize * fs->fs_blocksize;
	if ((ret = ocfs2_malloc_blocks(fs->fs_io, padded / fs->fs_blocksize, &buf)))
		die("malloc", ret);
	memset(buf, 0, padded);
	memcpy(buf, data, len);
	if ((ret = ocfs2_read_cached_inode(fs, ino, &ci)))
		die("read cached inode", ret);
	if (ci->ci_inode->i_size < off + len) {
		ocfs2_free_cached_inode(fs, ci);
		if ((ret = ocfs2_extend_file(fs, ino, off + len)))
			die("extend file", ret);
		if ((ret = ocfs2_read_cached_inode(fs, ino, &ci)))
			die("read cached inode", ret);
	}
	if ((ret = ocfs2_file_write(ci, buf, padded, off, &wrote)))
		die("file write", ret);
	if (wrote != len)
		die("short write", OCFS2_ET_SHORT_WRITE);
	ocfs2_free_cached_inode(fs, ci);
	ocfs2_free(&buf);
}

static void
cmd_file(const char *path, const char *host)
{
	struct stat st;
	uint64_t ino;
	char *data;
	int fd;

	if ((fd = open(host, O_RDONLY)) == -1 || fstat(fd, &st) == -1) {
		perror(host);
		exit(1);
	}
	data = malloc(st.st_size + 1);
	if (data == NULL || read(fd, data, st.st_size) != st.st_size) {
		perror(host);
		exit(1);
	}
	close(fd);
	ino = new_inode(path, S_IFREG | 0644, OCFS2_FT_REG_FILE, NULL);
	if (st.st_size > 0)
		write_at(ino, data, st.st_size, 0);
	free(data);
}

static void
cmd_symlink(const char *path, const char *target)
{
	struct ocfs2_dinode *di;
	size_t len = strlen(target);
	uint64_t ino;
	errcode_t ret;
	char *buf;

	ino = new_inode(path, S_IFLNK | 0777, OCFS2_FT_SYMLINK, NULL);
	if (len + 1 > fs->fs_blocksize - offsetof(struct ocfs2_dinode, id2)) {
		/* slow: the NUL-terminated target in a cluster */
		write_at(ino, target, len + 1, 0);
	}
	if ((ret = ocfs2_malloc_block(fs->fs_io, &buf)))
		die("malloc", ret);
	if ((ret = ocfs2_read_inode(fs, ino, buf)))
		die("read inode", ret);
	di = (struct ocfs2_dinode *)buf;
	if (len + 1 <= fs->fs_blocksize - offsetof(struct ocfs2_dinode, id2)) {
		/* fast: the target sits where the extent list would be */
		memset(&di->id2, 0, fs->fs_blocksize - offsetof(struct ocfs2_dinode, id2));
		memcpy(di->id2.i_symlink, target, len);
	}
	di->i_size = len;
	if ((ret = ocfs2_write_inode(fs, ino, buf)))
		die("write inode", ret);
	ocfs2_free(&buf);
}

static void
cmd_mknod(const char *path, const char *kind, unsigned maj, unsigned min)
{
	struct ocfs2_dinode *di;
	int mode, type;
	uint64_t ino;
	errcode_t ret;
	char *buf;

	switch (kind[0]) {
	case 'c': mode = S_IFCHR; type = OCFS2_FT_CHRDEV; break;
	case 'b': mode = S_IFBLK; type = OCFS2_FT_BLKDEV; break;
	case 'p': mode = S_IFIFO; type = OCFS2_FT_FIFO; break;
	default: mode = S_IFSOCK; type = OCFS2_FT_SOCK; break;
	}
	ino = new_inode(path, mode | 0640, type, NULL);
	if ((ret = ocfs2_malloc_block(fs->fs_io, &buf)))
		die("malloc", ret);
	if ((ret = ocfs2_read_inode(fs, ino, buf)))
		die("read inode", ret);
	di = (struct ocfs2_dinode *)buf;
	/* the kernel's huge_encode_dev (new_encode_dev) */
	di->id1.dev1.i_rdev = (min & 0xff) | (maj << 8) | ((uint64_t)(min & ~0xffu) << 12);
	if ((ret = ocfs2_write_inode(fs, ino, buf)))
		die("write inode", ret);
	ocfs2_free(&buf);
}

static void
cmd_attr(const char *path, unsigned mode, unsigned uid, unsigned gid,
    unsigned long long mtime, unsigned nsec)
{
	struct ocfs2_dinode *di;
	uint64_t ino = lookup_path(path);
	errcode_t ret;
	char *buf;

	if ((ret = ocfs2_malloc_block(fs->fs_io, &buf)))
		die("malloc", ret);
	if ((ret = ocfs2_read_inode(fs, ino, buf)))
		die("read inode", ret);
	di = (struct ocfs2_dinode *)buf;
	di->i_mode = (di->i_mode & S_IFMT) | (mode & 07777);
	di->i_uid = uid;
	di->i_gid = gid;
	di->i_mtime = mtime;
	di->i_mtime_nsec = nsec;
	if ((ret = ocfs2_write_inode(fs, ino, buf)))
		die("write inode", ret);
	ocfs2_free(&buf);
}

static void
cmd_interleave(const char *p1, const char *p2, unsigned clusters)
{
	uint64_t ino[2], pos;
	unsigned c, k, i, cs = fs->fs_clustersize;
	unsigned char *chunk = malloc(cs);

	ino[0] = new_inode(p1, S_IFREG | 0644, OCFS2_FT_REG_FILE, NULL);
	ino[1] = new_inode(p2, S_IFREG | 0644, OCFS2_FT_REG_FILE, NULL);
	/* One cluster at a time, in turn: no two clusters of a file adjacent. */
	for (c = 0; c < clusters; c++) {
		for (k = 0; k < 2; k++) {
			for (i = 0; i < cs; i++) {
				pos = (uint64_t)c * cs + i;
				chunk[i] = (unsigned char)((pos * 7 + k * 13 + pos / 4096) & 0xff);
			}
			write_at(ino[k], chunk, cs, (uint64_t)c * cs);
		}
	}
	free(chunk);
}

static void
cmd_many(const char *dir, unsigned count)
{
	char path[4200];
	unsigned i;

	for (i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/f%05u", dir, i);
		new_inode(path, S_IFREG | 0644, OCFS2_FT_REG_FILE, NULL);
	}
}

/* Write one block of a file, its quota block check set (metaecc). */
static void
write_qblock(ocfs2_cached_inode *ci, char *buf, uint64_t blk)
{
	unsigned bs = fs->fs_blocksize, got;
	struct ocfs2_disk_dqtrailer *t = ocfs2_block_dqtrailer(bs, buf);
	errcode_t ret;

	ocfs2_compute_meta_ecc(fs, buf, &t->dq_check);
	if ((ret = ocfs2_file_write(ci, buf, bs, blk * bs, &got)) || got != bs)
		die("write local quota file", ret ? ret : OCFS2_ET_SHORT_WRITE);
}

static void
cmd_quotadelta(const char *type, unsigned slot, unsigned id, long long space, long long inodes)
{
	unsigned bs = fs->fs_blocksize, got;
	int grp = strcmp(type, "group") == 0;
	struct ocfs2_local_disk_dqinfo *info;
	struct ocfs2_local_disk_chunk *chunk;
	struct ocfs2_local_disk_dqblk *e;
	ocfs2_cached_inode *ci;
	char name[64], *buf;
	uint64_t ino;
	errcode_t ret;

	snprintf(name, sizeof(name), "%s:%04u", grp ? "aquota.group" : "aquota.user", slot);
	if ((ret = ocfs2_lookup(fs, fs->fs_sysdir_blkno, name, strlen(name), NULL, &ino)))
		die(name, ret);
	if ((ret = ocfs2_read_cached_inode(fs, ino, &ci)) ||
	    (ret = ocfs2_malloc_blocks(fs->fs_io, 3, &buf)))
		die(name, ret);
	/* mkfs leaves the header and chunk 0's header: one block of entries more */
	if ((ret = ocfs2_file_read(ci, buf, 2 * bs, 0, &got)) || got != 2 * bs)
		die("read local quota file", ret ? ret : OCFS2_ET_SHORT_READ);
	if ((ret = ocfs2_cached_inode_extend_allocation(ci, ocfs2_clusters_in_blocks(fs, 3) -
	    ci->ci_inode->i_clusters)))
		die("extend local quota file", ret);
	ci->ci_inode->i_size = 3 * bs;
	if ((ret = ocfs2_write_cached_inode(fs, ci)))
		die("write local quota inode", ret);
	info = (struct ocfs2_local_disk_dqinfo *)(buf + OCFS2_LOCAL_INFO_OFF);
	info->dqi_flags &= ~OLQF_CLEAN;
	info->dqi_blocks = 3;
	chunk = (struct ocfs2_local_disk_chunk *)(buf + bs);
	chunk->dqc_free = (bs - OCFS2_QBLK_RESERVED_SPACE) / sizeof(*e) - 1;
	chunk->dqc_bitmap[0] |= 1;
	memset(buf + 2 * bs, 0, bs);
	e = (struct ocfs2_local_disk_dqblk *)(buf + 2 * bs);
	e->dqb_id = id;
	e->dqb_spacemod = (uint64_t)space;
	e->dqb_inodemod = (uint64_t)inodes;
	write_qblock(ci, buf, 0);
	write_qblock(ci, buf + bs, 1);
	write_qblock(ci, buf + 2 * bs, 2);
	ocfs2_free(&buf);
	ocfs2_free_cached_inode(fs, ci);
}

int
main(int argc, char **argv)
{
	char line[8192], a[4096], b[4096], c[64];
	unsigned x, y, z, w;
	unsigned long long t;
	long long q1, q2;
	uint64_t parent, ino;
	errcode_t ret;

	if (argc != 2) {
		fprintf(stderr, "usage: populate IMAGE < commands\n");
		return 2;
	}
	initialize_ocfs_error_table();
	if ((ret = ocfs2_open(argv[1], OCFS2_FLAG_RW, 0, 0, &fs)))
		die(argv[1], ret);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "mkdir %4095s", a) == 1) {
			/* ocfs2_init_dir counts the parent's new ".." link */
			new_inode(a, S_IFDIR | 0755, OCFS2_FT_DIR, &parent);
		} else if (sscanf(line, "file %4095s %4095s", a, b) == 2) {
			cmd_file(a, b);
		} else if (sscanf(line, "symlink %4095s %4095s", a, b) == 2) {
			cmd_symlink(a, b);
		} else if (sscanf(line, "mknod %4095s %63s %u %u", a, c, &x, &y) == 4) {
			cmd_mknod(a, c, x, y);
		} else if (sscanf(line, "link %4095s %4095s", a, b) == 2) {
			char name[256];

			ino = lookup_path(b);
			resolve_parent(a, &parent, name);
			link_into(parent, name, ino, OCFS2_FT_REG_FILE);
			add_links(ino, 1);
		} else if (sscanf(line, "attr %4095s %o %u %u %llu %u", a, &x, &y, &z, &t, &w) == 6) {
			cmd_attr(a, x, y, z, t, w);
		} else if (sscanf(line, "interleave %4095s %4095s %u", a, b, &x) == 3) {
			cmd_interleave(a, b, x);
		} else if (sscanf(line, "many %4095s %u", a, &x) == 2) {
			cmd_many(a, x);
		} else if (sscanf(line, "quotadelta %63s %u %u %lld %lld", c, &x, &y, &q1, &q2) == 5) {
			cmd_quotadelta(c, x, y, q1, q2);
		} else if (line[0] != '\0' && line[0] != '#') {
			fprintf(stderr, "populate: bad command: %s\n", line);
			return 1;
		}
	}
	if ((ret = ocfs2_close(fs)))
		die("close", ret);
	return 0;
}
