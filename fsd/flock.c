/*
 * flock(2) across the cluster, as ocfs2_flock does it: every open file
 * description that flocks gets its own DLM lock on the inode's FLOCK
 * resource ('F' + block + generation), PR for LOCK_SH and EX for LOCK_EX,
 * a trylock for LOCK_NB. dlmd decides between files on this node and on
 * others alike; a signal ends a wait (its request cancelled). Never cached: LOCK_UN converts to NL at once; the last
 * close of the description (FUSE's flock_release) drops the lock.
 *
 * Without a cluster fsd does not offer flock, and the kernel keeps
 * flock locks itself, as for any local filesystem.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/file.h>

#include "log.h"
#include "util.h"

#include "ops.h"
#include "glue.h"

#define FLOCK_HASH	256

/* One open file description's lock, found by FUSE's lock_owner. */
struct file_flock {
	uint64_t		 owner;
	struct fsd_lockres	*lr;
	int			 level;		/* held: LKM_PR or LKM_EX; 0 none */
	int			 busy;		/* a request of this owner is running */
	struct file_flock	*next;
};

static pthread_mutex_t flock_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flock_cv = PTHREAD_COND_INITIALIZER;
static struct file_flock *flock_hash[FLOCK_HASH];

static struct file_flock **
slot_of(uint64_t owner)
{
	return &flock_hash[(owner * 0x9E3779B97F4A7C15ULL) >> 56];
}

/* The owner's entry, made if need be, marked busy (one request at a time). */
static struct file_flock *
flock_get(struct fsd *fs, uint64_t owner, uint64_t blkno, uint32_t gen)
{
	struct file_flock *f;

	pthread_mutex_lock(&flock_mtx);
	for (;;) {
		for (f = *slot_of(owner); f != NULL; f = f->next)
			if (f->owner == owner)
				break;
		if (f == NULL || !f->busy)
			break;
		pthread_cond_wait(&flock_cv, &flock_mtx);
	}
	if (f == NULL) {
		f = xcalloc(1, sizeof(*f));
		f->owner = owner;
		f->lr = lockres_private(fs, FSD_LOCK_FLOCK, blkno, gen);
		f->next = *slot_of(owner);
		*slot_of(owner) = f;
	}
	f->busy = 1;
	pthread_mutex_unlock(&flock_mtx);
	return f;
}

static void
flock_put(struct file_flock *f)
{
	pthread_mutex_lock(&flock_mtx);
	f->busy = 0;
	pthread_cond_broadcast(&flock_cv);
	pthread_mutex_unlock(&flock_mtx);
}

static void
flock_unlock(struct fsd *fs, struct file_flock *f)
{
	if (f->level != 0)
		lockres_unlock(fs, f->lr, f->level);
	f->level = 0;
}

static void
flock_interrupted(fuse_req_t req, void *arg)
{
	(void)req;
	lockres_interrupt(arg, 1);
}

void
fsd_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct fsd *fs = fsd_of(req);
	struct file_flock *f;
	struct fsd_inode *ip;
	int level, rc = 0;

	if (fs->glue == NULL)
		return (void)fuse_reply_err(req, ENOSYS);
	if ((rc = inode_get(fs, fsd_ino_to_blkno(fs, ino), &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	f = flock_get(fs, fi->lock_owner, ip->blkno, ip->generation);
	inode_put(fs, ip);
	level = (op & LOCK_EX) ? LKM_EX : (op & LOCK_SH) ? LKM_PR : 0;
	/* as flock(2): a conversion gives up the old lock first */
	if (f->level != level)
		flock_unlock(fs, f);
	if (level != 0 && f->level == 0 && (op & LOCK_NB)) {
		rc = lockres_lock_flags(fs, f->lr, level, LKF_TRY);
		if (rc == -EAGAIN)
			rc = -EWOULDBLOCK;
	} else if (level != 0 && f->level == 0) {
		/*
		 * A signal makes the kernel send FUSE_INTERRUPT: the wait ends
		 * with EINTR and its request leaves dlmd's queue, as a
		 * fcntl(F_SETLKW) wait does. Unregistering waits for a
		 * callback under way, so none touches f->lr after.
		 */
		lockres_interrupt(f->lr, 0);
		fuse_req_interrupt_func(req, flock_interrupted, f->lr);
		rc = lockres_lock_flags(fs, f->lr, level, LKF_INTR);
		fuse_req_interrupt_func(req, NULL, NULL);
		lockres_interrupt(f->lr, 0);
	}
	if (rc == 0 && level != 0)
		f->level = level;
	flock_put(f);
	fuse_reply_err(req, -rc);
}

void
flock_release(struct fsd *fs, uint64_t owner)
{
	struct file_flock **pp, *f;

	f = flock_get(fs, owner, 0, 0);
	flock_unlock(fs, f);
	pthread_mutex_lock(&flock_mtx);
	for (pp = slot_of(owner); *pp != f; pp = &(*pp)->next)
		;
	*pp = f->next;
	pthread_cond_broadcast(&flock_cv);
	pthread_mutex_unlock(&flock_mtx);
	lockres_private_free(fs, f->lr);
	free(f);
}

/* FLOCK: one private resource per flock()ing open file, guarding nothing on disk. */
const struct fsd_lock_ops flock_lock_ops = { .letter = 'F' };
