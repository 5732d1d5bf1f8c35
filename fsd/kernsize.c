/*
 * The kernel's idea of a file's size, in a cluster.
 *
 * The kernel reads through its page cache only up to the size it holds
 * (i_size), and learns a larger one from our GETATTR replies. But FUSE
 * throws a GETATTR's attributes away when anything touched the inode's
 * attributes while the request was out: a local write's reply, our own
 * notify-inval, another reply (fuse_change_attributes' attr_version
 * check in the kernel's fs/fuse/inode.c). On a node that appends to a
 * file another node appends to as well, that happens often: a read then
 * ends at an old end of file, though the GETATTR before it answered the
 * new one, and records the other node acknowledged are missing from it.
 *
 * One way to raise i_size is not subject to that check: a notify-store
 * that ends beyond it (fuse_notify_store). So before a GETATTR answers a
 * size larger than the kernel may hold, we store the file's last byte
 * there, read under the lock. What the kernel may hold is kept as a lower
 * bound per inode: raised by what surely reached it (a new inode's entry,
 * a store), lowered by any size we answer.
 *
 * A size in the reply to a WRITE, SETATTR or COPY_FILE_RANGE is not sure
 * to have reached it: the kernel applies it in the thread that made the
 * request, when that thread runs again, and until then it drops every
 * other reply's attributes (FUSE_I_SIZE_UNSTABLE, attr_version). Counting
 * such a size as known let a reader on this node, while its own extending
 * write waited to be scheduled, read up to an end of file older than what
 * another node had acknowledged.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops.h"

static void
bound_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED,
	    __ATOMIC_RELAXED))
		;
}

static void
bound_min(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur > v && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED,
	    __ATOMIC_RELAXED))
		;
}

void
kernsize_set(struct fsd_inode *ip, uint64_t size)
{
	__atomic_store_n(&ip->kernel_size, size, __ATOMIC_RELAXED);
}

void
kernsize_reported(struct fsd_inode *ip, uint64_t size)
{
	bound_min(&ip->kernel_size, size);
}

void
kernsize_wrote(struct fsd_inode *ip)
{
	__atomic_add_fetch(&ip->writes, 1, __ATOMIC_RELEASE);
}

/* The last byte of the file and its size, under PR; 0: nothing to store. */
static int
last_byte(struct fsd *fs, struct fsd_inode *ip, uint64_t *size, char *byte)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *b;
	const char *p = NULL;
	void *base = NULL;
	size_t len = 0;
	int rc;

	if ((rc = inode_lock_block(fs, ip, LKM_PR, &b)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)b->data;
	*size = LE64(di->i_size);
	if (!S_ISREG(LE16(di->i_mode)) ||
	    *size <= __atomic_load_n(&ip->kernel_size, __ATOMIC_RELAXED))
		rc = 0;
	else if ((rc = data_read(fs, di, *size - 1, 1, &base, &p, &len)) == 0)
		rc = len == 1 ? 1 : -EIO;
	if (rc == 1)
		*byte = p[0];
	inode_unlock_block(fs, ip, LKM_PR, b);
	free(base);
	return rc;
}

void
kernsize_catch_up(struct fsd *fs, struct fsd_inode *ip, fuse_ino_t ino, uint64_t seen)
{
	struct fuse_session *se;
	unsigned long downconverts, writes;
	uint64_t size = 0;
	char byte;
	int rc;

	if (fs->glue == NULL || fs->opts.threads < 2 ||
	    seen <= __atomic_load_n(&ip->kernel_size, __ATOMIC_RELAXED))
		return;
	/*
	 * A store waits for the page's lock, which a READ served by another
	 * worker may hold: never let stores take every worker.
	 */
	if (__atomic_add_fetch(&fs->size_stores, 1, __ATOMIC_ACQUIRE) > fs->opts.threads / 2)
		goto out;
	downconverts = __atomic_load_n(&ip->meta->downconverts, __ATOMIC_ACQUIRE);
	writes = __atomic_load_n(&ip->writes, __ATOMIC_ACQUIRE);
	if (last_byte(fs, ip, &size, &byte) != 1)
		goto out;
	/* without our locks: a write holding that page may wait for them */
	if ((se = inode_session_get(fs)) != NULL) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(1);

		bv.buf[0].mem = &byte;
		rc = fuse_lowlevel_notify_store(se, ino, (off_t)(size - 1), &bv, 0);
		if (__atomic_load_n(&ip->meta->downconverts, __ATOMIC_ACQUIRE) != downconverts) {
			/* another node may have changed the file since: what we stored is stale */
			fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
		} else if (__atomic_load_n(&ip->writes, __ATOMIC_ACQUIRE) != writes) {
			/* a write of ours may have landed on that byte before the store */
			uint64_t page = (uint64_t)getpagesize();

			fuse_lowlevel_notify_inval_inode(se, ino,
			    (off_t)((size - 1) & ~(page - 1)), (off_t)page);
		} else if (rc == 0) {
			bound_max(&ip->kernel_size, size);
		}
	}
	inode_session_put(fs);
out:
	__atomic_sub_fetch(&fs->size_stores, 1, __ATOMIC_RELEASE);
}
