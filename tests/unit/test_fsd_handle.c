/*
 * A handle's EX locks on a local volume: a lock the handle takes
 * (handle_lock) or is handed (handle_hold, inode_unlock_block_in) stays
 * held until the handle ends (its blocks are in the transaction),
 * however many locks the handle holds already, and no other thread gets
 * it meanwhile.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

static void
make_volume(void)
{
	make_volume_of("64M", 4096, "");
}

struct try_arg {
	struct fsd		*fs;
	struct fsd_lockres	*lr;
	int			 rc;
};

/* Another thread's EX trylock, released at once when it succeeds. */
static void *
try_ex(void *arg)
{
	struct try_arg *t = arg;

	t->rc = lockres_lock_flags(t->fs, t->lr, LKM_EX, LKF_TRY);
	if (t->rc == 0)
		lockres_unlock(t->fs, t->lr, LKM_EX);
	return NULL;
}

static int
other_thread_trylock(struct fsd *fs, struct fsd_lockres *lr)
{
	struct try_arg t = { fs, lr, 1 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, try_ex, &t), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	return t.rc;
}

Test(fsd_handle, ex_holds_last_until_the_handle_ends_however_many,
    .init = make_volume, .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 1024, .commit_ms = 600000, .nocluster = 1 };
	enum { HELD = 40 };	/* the handle's list once held 16 */
	struct fsd_lockres *held[HELD], *lr;
	struct fsd_handle h;
	struct fsd fs;
	char err[256];
	unsigned i;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(journal_start(&fs, &h), 0);
	/* locks the handle takes (allocators, the bitmap): more than a few */
	for (i = 0; i < HELD; i++) {
		held[i] = lockres_get(&fs, FSD_LOCK_META, 100000 + i, 0, 0);
		cr_assert_eq(handle_lock(&h, held[i]), 0, "handle lock %u", i);
	}
	/* an inode locked EX and handed to the handle */
	lr = lockres_get(&fs, FSD_LOCK_META, 200000, 0, 0);
	cr_assert_eq(lockres_lock(&fs, lr, LKM_EX), 0);
	handle_hold(&h, lr);
	cr_assert_eq(other_thread_trylock(&fs, lr), -EAGAIN,
	    "released while the handle that changed its blocks is open");
	for (i = 0; i < HELD; i++)
		cr_assert_eq(other_thread_trylock(&fs, held[i]), -EAGAIN, "lock %u", i);
	cr_assert_eq(journal_stop(&h, 0), 0);
	/* the handle's end lets them all go */
	cr_assert_eq(other_thread_trylock(&fs, lr), 0);
	for (i = 0; i < HELD; i++)
		cr_assert_eq(other_thread_trylock(&fs, held[i]), 0, "lock %u", i);
	lockres_put(&fs, lr);
	for (i = 0; i < HELD; i++)
		lockres_put(&fs, held[i]);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

/* An inode changed in a handle: its META lock goes when the handle ends. */
Test(fsd_handle, inode_unlocked_in_a_handle_stays_locked_until_its_end, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 1024, .commit_ms = 600000, .nocluster = 1 };
	struct fsd_inode *root;
	struct fsd_handle h;
	struct fsd_buf *b;
	struct fsd fs;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(inode_get(&fs, fs.root_blkno, &root), 0);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(inode_lock_block(&fs, root, LKM_EX, &b), 0);
	cr_assert_eq(journal_access(&h, b), 0);
	inode_now((struct ocfs2_dinode *)b->data, 0, 1, 1);
	journal_dirty(&h, b);
	inode_unlock_block_in(&h, root, b);
	cr_assert_eq(other_thread_trylock(&fs, root->meta), -EAGAIN);
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(other_thread_trylock(&fs, root->meta), 0);
	inode_put(&fs, root);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
