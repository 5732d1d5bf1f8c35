/*
 * Overwrites inside a file's written blocks on a local volume made by
 * mkfs.ocfs2 (file.c, write_in_place): one of whole blocks does not wait
 * for a reader holding the inode's META lock PR (writes to a file run
 * side by side), one of part of a block (read, changed, written back)
 * does;
 * with times to keep, a write in the coarse clock tick of the file's
 * mtime and ctime leaves them and the journal alone, and a write of a
 * later tick moves them in a transaction. The bytes read back;
 * fsck.ocfs2 -fn clean at the end.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

#define BS		4096u
#define FILE_BYTES	(16 * BS)

static void
make_volume(void)
{
	make_volume_of("64M", BS, "-J size=4M");
}

static struct fsd_mount_opts mount_opts = {
	.cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1
};

/* A regular file in the root with FILE_BYTES of 'x', written and committed. */
static struct fsd_inode *
make_file(struct fsd *fs, const char *name)
{
	static char data[FILE_BYTES];
	struct fsd_inode *ip;
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	uint64_t ino;

	memset(data, 'x', sizeof(data));
	cr_assert_eq(journal_start(fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	ino = ib->blkno;
	cr_assert_eq(block_read(fs, fs->root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(journal_access(&h, rb), 0);
	cr_assert_eq(dir_add(&h, rb, name, strlen(name), ino, OCFS2_FT_REG_FILE), 0);
	cr_assert_eq(file_write_locked(&h, ib, 0, data, sizeof(data)), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(fs, ib);
	block_put(fs, rb);
	cr_assert_eq(journal_commit(fs), 0);
	cr_assert_eq(inode_get(fs, ino, &ip), 0);
	return ip;
}

/* The file's bytes [off, off+len) equal c. */
static void
assert_bytes(struct fsd *fs, struct fsd_inode *ip, uint64_t off, size_t len, char c)
{
	struct fsd_buf *ib;
	const char *p;
	size_t got, i;
	void *base;

	cr_assert_eq(inode_lock_block(fs, ip, LKM_PR, &ib), 0);
	cr_assert_eq(data_read(fs, (const struct ocfs2_dinode *)ib->data, off, len, &base, &p,
	    &got), 0);
	inode_unlock_block(fs, ip, LKM_PR, ib);
	cr_assert_eq(got, len);
	for (i = 0; i < len; i++)
		cr_assert_eq(p[i], c, "byte %zu of the range at %llu", i, (unsigned long long)off);
	free(base);
}

/* mtime and ctime in ns. */
static void
times_of(struct fsd *fs, struct fsd_inode *ip, uint64_t *m, uint64_t *c)
{
	const struct ocfs2_dinode *di;
	struct fsd_buf *ib;

	cr_assert_eq(inode_lock_block(fs, ip, LKM_PR, &ib), 0);
	di = (const struct ocfs2_dinode *)ib->data;
	*m = LE64(di->i_mtime) * 1000000000u + LE32(di->i_mtime_nsec);
	*c = LE64(di->i_ctime) * 1000000000u + LE32(di->i_ctime_nsec);
	inode_unlock_block(fs, ip, LKM_PR, ib);
}

static uint64_t
coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct writer {
	struct fsd		*fs;
	struct fsd_inode	*ip;
	uint64_t		 off;
	size_t			 len;
	int			 rc;
};

static void *
overwrite(void *arg)
{
	struct writer *w = arg;
	char buf[BS];

	memset(buf, 'w', sizeof(buf));
	w->rc = file_write(w->fs, w->ip, w->off, buf, w->len, 0);
	return NULL;
}

Test(fsd_overwrite, waits_for_no_reader, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd fs;
	struct fsd_inode *ip;
	struct writer w = { &fs, NULL, 3 * BS, BS, -1 };
	struct timespec until;
	pthread_t t;
	char err[256];
	uint64_t commits;
	int rc;

	cr_assert_eq(super_mount(&fs, vol_img, &mount_opts, err, sizeof(err)), 0, "%s", err);
	ip = make_file(&fs, "f");
	w.ip = ip;
	commits = journal_commits(&fs, NULL);
	/* a reader inside the file: the overwrite must not wait for it */
	cr_assert_eq(lockres_lock(&fs, ip->meta, LKM_PR), 0);
	cr_assert_eq(pthread_create(&t, NULL, overwrite, &w), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	rc = pthread_timedjoin_np(t, NULL, &until);
	lockres_unlock(&fs, ip->meta, LKM_PR);
	if (rc != 0)
		pthread_join(t, NULL);
	cr_assert_eq(rc, 0, "the overwrite waited for the reader's PR lock");
	cr_assert_eq(w.rc, 0);
	cr_assert_eq(journal_commit(&fs), 0);
	cr_assert_eq(journal_commits(&fs, NULL), commits, "the overwrite made a transaction");
	assert_bytes(&fs, ip, 3 * BS, BS, 'w');
	assert_bytes(&fs, ip, 0, 3 * BS, 'x');
	assert_bytes(&fs, ip, 4 * BS, FILE_BYTES - 4 * BS, 'x');
	inode_put(&fs, ip);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_overwrite, a_partial_block_waits_for_readers, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;
	struct fsd_inode *ip;
	struct writer w = { &fs, NULL, 2 * BS + 100, 1000, -1 };
	struct timespec until;
	pthread_t t;
	char err[256];
	int rc;

	cr_assert_eq(super_mount(&fs, vol_img, &mount_opts, err, sizeof(err)), 0, "%s", err);
	ip = make_file(&fs, "f");
	w.ip = ip;
	cr_assert_eq(lockres_lock(&fs, ip->meta, LKM_PR), 0);
	cr_assert_eq(pthread_create(&t, NULL, overwrite, &w), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 300000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	rc = pthread_timedjoin_np(t, NULL, &until);
	lockres_unlock(&fs, ip->meta, LKM_PR);
	if (rc != 0)
		pthread_join(t, NULL);
	cr_assert_neq(rc, 0, "a write of part of a block went on beside a reader");
	cr_assert_eq(w.rc, 0);
	assert_bytes(&fs, ip, 2 * BS, 100, 'x');
	assert_bytes(&fs, ip, 2 * BS + 100, 1000, 'w');
	assert_bytes(&fs, ip, 2 * BS + 1100, BS - 1100, 'x');
	inode_put(&fs, ip);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_overwrite, times_move_once_a_tick, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct timespec res, pause;
	struct fsd fs;
	struct fsd_inode *ip;
	uint64_t m0, c0, m1, c1, tick, commits, k;
	char err[256], buf[BS];
	int same_tick = 0;

	clock_getres(CLOCK_REALTIME_COARSE, &res);
	cr_assert_eq(super_mount(&fs, vol_img, &mount_opts, err, sizeof(err)), 0, "%s", err);
	ip = make_file(&fs, "f");
	/*
	 * Write, commit, write again: the second write's tick must be the
	 * first one's for it to skip the times. A loaded machine may cross a
	 * tick between the two; try again then.
	 */
	for (k = 0; k < 200 && !same_tick; k++) {
		memset(buf, 'a' + (int)(k % 26), sizeof(buf));
		cr_assert_eq(file_write(&fs, ip, (k % 16) * BS, buf, sizeof(buf), 1), 0);
		cr_assert_eq(journal_commit(&fs), 0);
		commits = journal_commits(&fs, NULL);
		times_of(&fs, ip, &m0, &c0);
		tick = coarse_now();
		cr_assert_eq(file_write(&fs, ip, ((k + 1) % 16) * BS, buf, sizeof(buf), 1), 0);
		if (coarse_now() != tick || m0 < tick || c0 < tick)
			continue;
		same_tick = 1;
		times_of(&fs, ip, &m1, &c1);
		cr_assert_eq(m1, m0, "mtime moved inside one tick");
		cr_assert_eq(c1, c0, "ctime moved inside one tick");
		cr_assert_eq(journal_commit(&fs), 0);
		cr_assert_eq(journal_commits(&fs, NULL), commits, "the overwrite made a transaction");
		assert_bytes(&fs, ip, ((k + 1) % 16) * BS, BS, 'a' + (char)(k % 26));
	}
	cr_assert(same_tick, "never two writes in one tick of the coarse clock");

	/* a later tick: the write moves both times, in a transaction */
	pause.tv_sec = 0;
	pause.tv_nsec = 2 * res.tv_nsec + 1000000;
	nanosleep(&pause, NULL);
	tick = coarse_now();
	memset(buf, 'z', sizeof(buf));
	cr_assert_eq(file_write(&fs, ip, 5 * BS, buf, sizeof(buf), 1), 0);
	times_of(&fs, ip, &m1, &c1);
	cr_assert_gt(m1, m0);
	cr_assert_geq(m1, tick);
	cr_assert_eq(c1, m1);
	cr_assert_eq(journal_commit(&fs), 0);
	cr_assert_eq(journal_commits(&fs, NULL), commits + 1);
	assert_bytes(&fs, ip, 5 * BS, BS, 'z');
	inode_put(&fs, ip);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
