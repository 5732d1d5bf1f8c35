/*
 * What a lock leaving EX writes home (journal_write_home,
 * doc/lock-handoff.md), seen on the disk of a local volume: nothing for a
 * lock none of whose blocks changed, while another's changes wait; the
 * commit and the checkpoint for one whose change is still running; the
 * checkpoint alone for one whose change is committed; and every lock
 * writes home a change of a block of no known owner, or of a block also
 * reached under another owner. The volume stays clean for fsck.ocfs2.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

static void
make_volume(void)
{
	make_volume_of("64M", 4096, "");
}

static struct fsd fs;

static void
mount_volume(void)
{
	struct fsd_mount_opts o = { .cache_blocks = 1024, .commit_ms = 600000, .nocluster = 1 };
	char err[256];

	make_volume();
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
}

static void
unmount_volume(void)
{
	super_unmount(&fs);
	cr_expect(fsck_clean(), "fsck.ocfs2 -fn finds problems");
	remove_volume();
}

/* Free blocks at the end of the volume (mkfs leaves it empty): changed as raw blocks. */
static uint64_t
spare(unsigned i)
{
	return fs.nblocks - 16 + i;
}

/* Fill block blkno with c in a handle, the buffer owned by owner (0: none). */
static void
change(uint64_t blkno, uint64_t owner, int c, struct fsd_lockres *held)
{
	struct fsd_handle h;
	struct fsd_buf *b;

	cr_assert_eq(journal_start(&fs, &h), 0);
	if (held != NULL)
		cr_assert_eq(handle_lock(&h, held), 0);
	cr_assert_eq(block_read_owned(&fs, blkno, BLK_RAW, owner, &b), 0);
	cr_assert_eq(journal_access(&h, b), 0);
	memset(b->data, c, fs.vol.block_bytes);
	journal_dirty(&h, b);
	block_put(&fs, b);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

/* The first byte of blkno's home location. */
static int
home(uint64_t blkno)
{
	uint8_t *buf = volume_alloc(fs.vol.block_bytes);
	int c;

	cr_assert_not_null(buf);
	cr_assert_eq(block_io(&fs, 0, blkno, 1, buf), 0);
	c = buf[0];
	free(buf);
	return c;
}

static struct fsd_lockres *
meta(uint64_t owner)
{
	return lockres_get(&fs, FSD_LOCK_META, owner, 0, owner);
}

/* Owners that are no inodes of the volume: blocks past any it has. */
#define OWNER_A	(1ull << 40)
#define OWNER_B	((1ull << 40) + 1)

Test(fsd_handoff, writes_home_what_the_lock_changed_and_nothing_else,
    .init = mount_volume, .fini = unmount_volume, .timeout = 60)
{
	struct fsd_lockres *a = meta(OWNER_A), *b = meta(OWNER_B);
	uint64_t c0;

	change(spare(0), OWNER_A, 'a', NULL);
	c0 = journal_commits(&fs, NULL);
	cr_assert_eq(journal_write_home(&fs, b), 0);
	cr_assert_eq(journal_commits(&fs, NULL), c0, "B changed nothing, yet its handoff committed");
	cr_assert_neq(home(spare(0)), 'a', "B's handoff wrote home A's change");

	cr_assert_eq(journal_write_home(&fs, a), 0);
	cr_assert_eq(journal_commits(&fs, NULL), c0 + 1, "A's running change was not committed");
	cr_assert_eq(home(spare(0)), 'a', "A's change is not home after its handoff");

	/* committed, not home: the checkpoint alone */
	change(spare(0), OWNER_A, 'b', NULL);
	cr_assert_eq(journal_commit(&fs), 0);
	c0 = journal_commits(&fs, NULL);
	cr_assert_neq(home(spare(0)), 'b');
	cr_assert_eq(journal_write_home(&fs, a), 0);
	cr_assert_eq(journal_commits(&fs, NULL), c0, "nothing was running, yet A's handoff committed");
	cr_assert_eq(home(spare(0)), 'b', "A's committed change is not home after its handoff");

	/* home already: nothing */
	cr_assert_eq(journal_write_home(&fs, a), 0);
	cr_assert_eq(journal_commits(&fs, NULL), c0);
	lockres_put(&fs, a);
	lockres_put(&fs, b);
}

Test(fsd_handoff, a_handle_stamps_the_locks_it_holds,
    .init = mount_volume, .fini = unmount_volume, .timeout = 60)
{
	struct fsd_lockres *b = meta(OWNER_B);

	/* A's block changed in a handle holding B: B's handoff writes it */
	change(spare(1), OWNER_A, 'c', b);
	cr_assert_eq(journal_write_home(&fs, b), 0);
	cr_assert_eq(home(spare(1)), 'c', "the change made under B is not home after B's handoff");
	lockres_put(&fs, b);
}

Test(fsd_handoff, every_lock_writes_home_blocks_of_no_known_owner,
    .init = mount_volume, .fini = unmount_volume, .timeout = 60)
{
	struct fsd_lockres *b = meta(OWNER_B);
	struct fsd_buf *buf;

	change(spare(2), 0, 'd', NULL);
	cr_assert_eq(journal_write_home(&fs, b), 0);
	cr_assert_eq(home(spare(2)), 'd', "an ownerless change is not home after a handoff");

	/* A's block, cached, then reached as B's: whose lock guards it is unsure */
	change(spare(3), OWNER_A, 'e', NULL);
	cr_assert_eq(block_read_owned(&fs, spare(3), BLK_RAW, OWNER_B, &buf), 0);
	block_put(&fs, buf);
	change(spare(3), OWNER_A, 'f', NULL);
	cr_assert_eq(journal_write_home(&fs, b), 0);
	cr_assert_eq(home(spare(3)), 'f', "a change of a block reached under two owners is "
	    "not home after the other owner's handoff");
	lockres_put(&fs, b);
}

/*
 * A one-block transaction that changes only an inode's times goes home in
 * place (commit_in_place): no log write, the block at home at once.
 */

static void
mount_metaecc_volume(void)
{
	struct fsd_mount_opts o = { .cache_blocks = 1024, .commit_ms = 600000, .nocluster = 1 };
	char err[256];

	make_volume_of("64M", 4096, "--fs-features=metaecc");
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
}

/* In one handle: the root's mtime to mtime, its uid to uid, block `also` filled with 'x'. */
static void
touch_root(uint64_t mtime, uint32_t uid, uint64_t also)
{
	struct ocfs2_dinode *di;
	struct fsd_handle h;
	struct fsd_buf *b, *x;

	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &b), 0);
	cr_assert_eq(journal_access(&h, b), 0);
	di = (struct ocfs2_dinode *)b->data;
	di->i_mtime = htole64(mtime);
	di->i_mtime_nsec = htole32(12345);
	di->i_uid = htole32(uid);
	journal_dirty(&h, b);
	block_put(&fs, b);
	if (also != 0) {
		cr_assert_eq(block_read(&fs, also, BLK_RAW, &x), 0);
		cr_assert_eq(journal_access(&h, x), 0);
		memset(x->data, 'x', fs.vol.block_bytes);
		journal_dirty(&h, x);
		block_put(&fs, x);
	}
	cr_assert_eq(journal_stop(&h, 0), 0);
}

/* The root inode's home copy: its mtime and uid. */
static void
root_home(uint64_t *mtime, uint32_t *uid)
{
	uint8_t *buf = volume_alloc(fs.vol.block_bytes);
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)buf;

	cr_assert_not_null(buf);
	cr_assert_eq(block_io(&fs, 0, fs.root_blkno, 1, buf), 0);
	*mtime = LE64(di->i_mtime);
	*uid = LE32(di->i_uid);
	free(buf);
}

/* Handoffs of the root's lock after changes of its times, and of more than them. */
static void
times_go_home_in_place(void)
{
	struct fsd_lockres *root = meta(fs.root_blkno);
	uint64_t c0, p0, p, mtime;
	uint32_t uid;

	c0 = journal_commits(&fs, &p0);
	touch_root(1000000001, 0, 0);
	cr_assert_eq(journal_write_home(&fs, root), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 1);
	cr_assert_eq(p, p0 + 1, "a change of times alone went through the log");
	root_home(&mtime, &uid);
	cr_assert_eq(mtime, 1000000001, "the new mtime is not home after the handoff");

	/* the same times again: nothing to write, still a commit */
	touch_root(1000000001, 0, 0);
	cr_assert_eq(journal_commit(&fs), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 2);
	cr_assert_eq(p, p0 + 2);

	/* more than the times: the log */
	touch_root(1000000002, 7, 0);
	cr_assert_eq(journal_write_home(&fs, root), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 3);
	cr_assert_eq(p, p0 + 2, "a change of the uid went home in place");
	root_home(&mtime, &uid);
	cr_assert(mtime == 1000000002 && uid == 7, "the logged change is not home after the handoff");

	/* times, and another block in the same transaction: the log */
	touch_root(1000000003, 7, spare(4));
	cr_assert_eq(journal_write_home(&fs, root), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 4);
	cr_assert_eq(p, p0 + 2, "a transaction of two blocks went home in place");

	/* times while the log holds a transaction: the log, which may hold the block */
	change(spare(5), OWNER_A, 'g', NULL);
	cr_assert_eq(journal_commit(&fs), 0);
	touch_root(1000000004, 0, 0);
	cr_assert_eq(journal_write_home(&fs, root), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 6);
	cr_assert_eq(p, p0 + 2, "times went home in place past a transaction in the log");
	root_home(&mtime, &uid);
	cr_assert(mtime == 1000000004 && uid == 0);
	cr_assert_eq(home(spare(5)), 'g');

	/* log empty again: in place */
	touch_root(1000000005, 0, 0);
	cr_assert_eq(journal_write_home(&fs, root), 0);
	cr_assert_eq(journal_commits(&fs, &p), c0 + 7);
	cr_assert_eq(p, p0 + 3);
	root_home(&mtime, &uid);
	cr_assert_eq(mtime, 1000000005);
	lockres_put(&fs, root);
}

Test(fsd_handoff, a_change_of_times_alone_goes_home_in_place,
    .init = mount_volume, .fini = unmount_volume, .timeout = 60)
{
	times_go_home_in_place();
}

/* fsck.ocfs2 checks the metaecc of the block written in place */
Test(fsd_handoff, a_change_of_times_alone_goes_home_in_place_with_metaecc,
    .init = mount_metaecc_volume, .fini = unmount_volume, .timeout = 60)
{
	times_go_home_in_place();
}

Test(fsd_handoff, times_only_compares_all_but_the_times)
{
	enum { BS = 4096 };
	static uint8_t a[BS], b[BS];
	struct ocfs2_dinode *da = (struct ocfs2_dinode *)a, *db = (struct ocfs2_dinode *)b;

	memset(a, 0x5a, BS);
	memcpy(b, a, BS);
	cr_assert(journal_times_only(a, b, BS));
	db->i_atime = htole64(1);
	db->i_ctime = htole64(2);
	db->i_mtime = htole64(3);
	db->i_atime_nsec = htole32(4);
	db->i_ctime_nsec = htole32(5);
	db->i_mtime_nsec = htole32(6);
	db->i_check.bc_crc32e = htole32(7);
	db->i_check.bc_ecc = htole16(8);
	cr_assert(journal_times_only(a, b, BS), "times and check count as times");
	db->i_dtime = htole64(9);
	cr_assert_not(journal_times_only(a, b, BS), "dtime is not a time kept in place");
	db->i_dtime = da->i_dtime;
	b[BS - 1] ^= 1;
	cr_assert_not(journal_times_only(a, b, BS), "the block's last byte");
	b[BS - 1] ^= 1;
	db->i_size = htole64(10);
	cr_assert_not(journal_times_only(a, b, BS), "the size");
	db->i_size = da->i_size;
	b[offsetof(struct ocfs2_dinode, i_mtime_nsec) + 4] ^= 1;
	cr_assert_not(journal_times_only(a, b, BS), "the byte after the times");
}
