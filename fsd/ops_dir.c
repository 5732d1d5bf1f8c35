/*
 * FUSE directory reading. The offset FUSE hands back is the directory
 * position of the next entry (dir.c), so a listing resumes where it
 * stopped even when the directory changed in between.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#include "ops.h"

void
fsd_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;
	struct fsd_buf *b;
	int rc, isdir;

	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if ((rc = inode_lock_kernel(fs, ip, LKM_PR, &b)) != 0) {
		inode_put(fs, ip);
		return (void)fuse_reply_err(req, -rc);
	}
	isdir = S_ISDIR(LE16(((const struct ocfs2_dinode *)b->data)->i_mode));
	inode_unlock_block(fs, ip, LKM_PR, b);
	/*
	 * Open as a file is (its OPEN lock PR, in a cluster): another node
	 * that removes it meanwhile leaves its deletion to our last close,
	 * rather than having our next READDIR find the block freed.
	 */
	rc = isdir ? inode_open(fs, ip) : -ENOTDIR;
	inode_put(fs, ip);
	if (rc != 0)
		return (void)fuse_reply_err(req, -rc);
	fi->fh = 0;
	fi->cache_readdir = 0;
	fuse_reply_open(req, fi);
}

/* Undo the lookup count of an entry that did not fit after all. */
static void
forget_entry(struct fsd *fs, uint64_t blkno)
{
	if (inode_forget(fs, blkno, 1) && fs->journal != NULL)
		orphan_wipe(fs, blkno);
}

static unsigned
ft_to_dt(uint8_t ft)
{
	switch (ft) {
	case OCFS2_FT_REG_FILE:	return DT_REG;
	case OCFS2_FT_DIR:	return DT_DIR;
	case OCFS2_FT_CHRDEV:	return DT_CHR;
	case OCFS2_FT_BLKDEV:	return DT_BLK;
	case OCFS2_FT_FIFO:	return DT_FIFO;
	case OCFS2_FT_SOCK:	return DT_SOCK;
	case OCFS2_FT_SYMLINK:	return DT_LNK;
	}
	return DT_UNKNOWN;
}

/* What one directory block pass yields, copied out under the lock. */
struct pending {
	struct fsd_dirent	*d;
	unsigned		 n, cap;
	size_t			 bytes, max;
};

static int
readdir_collect(void *arg, const struct fsd_dirent *d)
{
	struct pending *p = arg;

	/* stop once the entries surely fill the reply buffer */
	if (p->bytes >= p->max)
		return 1;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 32;
		p->d = realloc(p->d, p->cap * sizeof(*p->d));
		if (p->d == NULL)
			return -ENOMEM;
	}
	p->d[p->n++] = *d;
	p->bytes += 24 + d->name_len;	/* at least a fuse_dirent each */
	return 0;
}

static int
is_dots(const struct fsd_dirent *d)
{
	return (d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.');
}

/*
 * Collect entries under the directory's lock, then (without it) pack
 * them, with attributes for readdirplus: a reader never holds two inode
 * locks at once, so writers may take theirs in any order.
 */
static void
do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct fsd *fs = fsd_of(req);
	struct pending p = { NULL, 0, 0, 0, size };
	struct fuse_entry_param e;
	struct fsd_inode *ip;
	struct fsd_buf *b;
	struct timespec now;
	struct stat st;
	size_t used = 0, n;
	char *buf;
	unsigned i;
	int rc, err = 0, touch = 0;

	if (off < 0)
		return (void)fuse_reply_err(req, EINVAL);
	if ((buf = malloc(size)) == NULL)
		return (void)fuse_reply_err(req, ENOMEM);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		goto out;
	if ((rc = inode_lock_block(fs, ip, LKM_PR, &b)) == 0) {
		rc = dir_iterate(fs, (const struct ocfs2_dinode *)b->data, (uint64_t)off,
		    readdir_collect, &p);
		clock_gettime(CLOCK_REALTIME, &now);
		touch = rc >= 0 && inode_atime_due(fs, (const struct ocfs2_dinode *)b->data, &now);
		inode_unlock_block(fs, ip, LKM_PR, b);
	}
	if (touch)
		inode_touch_atime(fs, ip);
	inode_put(fs, ip);
	if (rc < 0)
		goto out;
	rc = 0;
	for (i = 0; i < p.n; i++) {
		const struct fsd_dirent *d = &p.d[i];

		if (!plus) {
			memset(&st, 0, sizeof(st));
			st.st_ino = d->ino;
			st.st_mode = DTTOIF(ft_to_dt(d->type));
			n = fuse_add_direntry(req, buf + used, size - used, d->name, &st,
			    (off_t)d->next);
			if (n > size - used)
				break;	/* full: the next call resumes at d->pos */
			used += n;
			continue;
		}
		if (is_dots(d)) {
			/* "." and ".." carry no lookup count (libfuse's rule) */
			memset(&e, 0, sizeof(e));
			e.attr.st_ino = d->ino;
			e.attr.st_mode = DTTOIF(ft_to_dt(d->type));
		} else if ((err = fsd_make_entry(fs, d->ino, &e)) == -ESTALE) {
			/* another node deleted it since we read the block: gone by now */
			err = 0;
			continue;
		} else if (err != 0)
			break;
		else if (S_ISDIR(e.attr.st_mode))
			inode_dir_named(fs, d->ino, fsd_ino_to_blkno(fs, ino), d->name, d->name_len);
		n = fuse_add_direntry_plus(req, buf + used, size - used, d->name, &e,
		    (off_t)d->next);
		if (n > size - used) {
			if (!is_dots(d))
				forget_entry(fs, d->ino);	/* not handed out after all */
			break;
		}
		used += n;
	}
out:
	/* Entries already packed are still a valid answer after an error. */
	if (rc < 0 && used == 0)
		fuse_reply_err(req, -rc);
	else if (err != 0 && used == 0)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
	free(p.d);
}

void
fsd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

void
fsd_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

void
fsd_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_inode *ip;

	(void)fi;
	if ((ip = inode_find(fs, fsd_ino_to_blkno(fs, ino))) != NULL) {
		inode_put(fs, ip);	/* the open's own pin keeps it */
		inode_close(fs, ip);
	}
	fuse_reply_err(req, 0);
}
