/*
 * The JBD2 log: transactions laid out by the writer and replayed by the
 * recovery code, in memory (escaping, several descriptors, wrap-around,
 * revokes, a missing commit block, stale blocks past the end), then on
 * a real volume made by mkfs.ocfs2: a committed change survives a crash
 * and is replayed at the next mount, an uncommitted one never reaches its
 * home, a torn commit is ignored whole, a commit while a handle is open
 * takes only what the closed handles changed, and fsck.ocfs2 -fn stays
 * clean.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"
#include <ocfs2/jbd2.h>

#define BS	512
#define LOGLEN	64		/* journal blocks, block 0 = superblock */

static uint8_t jlog[LOGLEN][BS];	/* the journal file */
static uint8_t home[256][BS];		/* the volume */
static unsigned writes;

static int
mem_read(void *arg, uint32_t lblk, uint8_t *buf)
{
	(void)arg;
	cr_assert_lt(lblk, LOGLEN);
	memcpy(buf, jlog[lblk], BS);
	return 0;
}

static int
mem_write(void *arg, uint64_t blkno, const uint8_t *buf)
{
	(void)arg;
	cr_assert_lt(blkno, 256);
	memcpy(home[blkno], buf, BS);
	writes++;
	return 0;
}

static const struct jbd2_log_ops mem_ops = { mem_read, mem_write };

static struct jbd2_info
mem_journal(uint32_t start, uint32_t seq)
{
	struct jbd2_info ji;

	memset(&ji, 0, sizeof(ji));
	ji.blocksize = BS;
	ji.maxlen = LOGLEN;
	ji.first = 1;
	ji.start = start;
	ji.sequence = seq;
	memset(ji.uuid, 0xab, 16);
	memset(jlog, 0, sizeof(jlog));
	memset(home, 0, sizeof(home));
	writes = 0;
	return ji;
}

/* Write a transaction of n blocks (home 10+i, filled with fill+i) at pos. */
static unsigned
put_txn(const struct jbd2_info *ji, uint32_t pos, uint32_t tid, unsigned n, uint8_t fill)
{
	struct jbd2_block b[64];
	static uint8_t data[64][BS];
	unsigned need = jbd2_txn_blocks(ji, n), i;
	uint8_t *img = malloc((size_t)need * BS);

	for (i = 0; i < n; i++) {
		memset(data[i], fill + i, BS);
		b[i].blkno = 10 + i;
		b[i].data = data[i];
	}
	jbd2_build_txn(ji, tid, b, n, img);
	for (i = 0; i < need; i++)
		memcpy(jlog[(pos - 1 + i) % (LOGLEN - 1) + 1], img + (size_t)i * BS, BS);
	free(img);
	return need;
}

Test(fsd_jbd2, one_transaction_round_trip)
{
	struct jbd2_info ji = mem_journal(1, 7);
	struct jbd2_replay_result res;
	char why[128];

	put_txn(&ji, 1, 7, 3, 0x40);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(res.transactions, 1);
	cr_assert_eq(res.blocks, 3);
	cr_assert_eq(res.next_sequence, 9, "last committed (7) + 2");
	cr_assert_eq(home[10][0], 0x40);
	cr_assert_eq(home[12][BS - 1], 0x42);
}

Test(fsd_jbd2, layout_matches_the_format)
{
	struct jbd2_info ji = mem_journal(1, 5);
	const journal_header_t *h;
	const journal_block_tag_t *t;

	cr_assert_eq(put_txn(&ji, 1, 5, 2, 1), 4, "descriptor + 2 copies + commit");
	h = (const journal_header_t *)jlog[1];
	cr_assert_eq(be32toh(h->h_magic), JBD2_MAGIC_NUMBER);
	cr_assert_eq(be32toh(h->h_blocktype), JBD2_DESCRIPTOR_BLOCK);
	cr_assert_eq(be32toh(h->h_sequence), 5);
	/* first tag: no SAME_UUID, the UUID follows; second: SAME_UUID|LAST_TAG */
	t = (const journal_block_tag_t *)(jlog[1] + 12);
	cr_assert_eq(be32toh(t->t_blocknr), 10);
	cr_assert_eq(be32toh(t->t_flags), 0);
	cr_assert_eq(jlog[1][12 + 8], 0xab);
	t = (const journal_block_tag_t *)(jlog[1] + 12 + 8 + 16);
	cr_assert_eq(be32toh(t->t_blocknr), 11);
	cr_assert_eq(be32toh(t->t_flags), JBD2_FLAG_SAME_UUID | JBD2_FLAG_LAST_TAG);
	h = (const journal_header_t *)jlog[4];
	cr_assert_eq(be32toh(h->h_blocktype), JBD2_COMMIT_BLOCK);
	cr_assert_eq(be32toh(h->h_sequence), 5);
}

Test(fsd_jbd2, escaped_blocks_come_back_whole)
{
	struct jbd2_info ji = mem_journal(1, 1);
	struct jbd2_replay_result res;
	struct jbd2_block b;
	uint8_t data[BS], img[3 * BS];
	char why[128];

	memset(data, 0x77, BS);
	*(uint32_t *)data = htobe32(JBD2_MAGIC_NUMBER);
	b.blkno = 20;
	b.data = data;
	jbd2_build_txn(&ji, 1, &b, 1, img);
	cr_assert_eq(*(uint32_t *)(img + BS), 0, "the copy's magic is zeroed in the log");
	memcpy(jlog[1], img, sizeof(img));
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0);
	cr_assert_eq(memcmp(home[20], data, BS), 0);
}

Test(fsd_jbd2, uncommitted_transaction_is_ignored_whole)
{
	struct jbd2_info ji = mem_journal(1, 3);
	struct jbd2_replay_result res;
	unsigned used;
	char why[128];

	used = put_txn(&ji, 1, 3, 2, 0x10);
	used += put_txn(&ji, 1 + used, 4, 2, 0x20);
	/* tear the second one: its commit block never made it */
	memset(jlog[used], 0, BS);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0);
	cr_assert_eq(res.transactions, 1);
	cr_assert_eq(home[10][0], 0x10, "from transaction 3, not 4");
	cr_assert_eq(home[11][0], 0x11);
	cr_assert_eq(res.next_sequence, 5);
}

Test(fsd_jbd2, stale_blocks_after_the_end_are_not_replayed)
{
	struct jbd2_info ji = mem_journal(1, 10);
	struct jbd2_replay_result res;
	unsigned used;
	char why[128];

	/* an old transaction (tid 2) lies right after the live one (tid 10) */
	used = put_txn(&ji, 1, 10, 1, 0x30);
	put_txn(&ji, 1 + used, 2, 1, 0x99);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0);
	cr_assert_eq(res.transactions, 1);
	cr_assert_eq(home[10][0], 0x30);
}

Test(fsd_jbd2, many_blocks_and_wrap_around)
{
	struct jbd2_info ji = mem_journal(50, 100);
	struct jbd2_replay_result res;
	unsigned used;
	char why[128];

	/* 40 blocks need 2 descriptors at 512 bytes (60 tags each? no: 60) */
	used = put_txn(&ji, 50, 100, 40, 0);
	cr_assert_eq(used, 42);
	put_txn(&ji, (50 - 1 + used) % (LOGLEN - 1) + 1, 101, 5, 0x80);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(res.transactions, 2);
	cr_assert_eq(home[49][0], 39, "wrapped copy of the first transaction");
	cr_assert_eq(home[10][0], 0x80, "the later transaction wins");
	cr_assert_eq(home[14][0], 0x84);
	cr_assert_eq(home[15][0], 5);
	cr_assert_eq(res.next_sequence, 103);
}

Test(fsd_jbd2, revoked_blocks_are_skipped)
{
	struct jbd2_info ji = mem_journal(1, 1);
	struct jbd2_replay_result res;
	journal_revoke_header_t *rh;
	unsigned used;
	char why[128];

	used = put_txn(&ji, 1, 1, 2, 0x50);	/* blocks 10, 11 */
	/* transaction 2: a revoke of block 11, then its commit */
	rh = (journal_revoke_header_t *)jlog[1 + used];
	rh->r_header.h_magic = htobe32(JBD2_MAGIC_NUMBER);
	rh->r_header.h_blocktype = htobe32(JBD2_REVOKE_BLOCK);
	rh->r_header.h_sequence = htobe32(2);
	rh->r_count = (int)htobe32(16 + 4);
	*(uint32_t *)(jlog[1 + used] + 16) = htobe32(11);
	((journal_header_t *)jlog[2 + used])->h_magic = htobe32(JBD2_MAGIC_NUMBER);
	((journal_header_t *)jlog[2 + used])->h_blocktype = htobe32(JBD2_COMMIT_BLOCK);
	((journal_header_t *)jlog[2 + used])->h_sequence = htobe32(2);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 256, &res, why, sizeof(why)), 0);
	cr_assert_eq(home[10][0], 0x50);
	cr_assert_eq(home[11][0], 0, "revoked by a later transaction");
	cr_assert_eq(res.transactions, 2);
}

Test(fsd_jbd2, tags_outside_the_volume_stop_replay)
{
	struct jbd2_info ji = mem_journal(1, 1);
	struct jbd2_replay_result res;
	char why[128];

	put_txn(&ji, 1, 1, 1, 0);
	cr_assert_eq(jbd2_replay(&ji, &mem_ops, NULL, 10, &res, why, sizeof(why)), -EIO);
	cr_assert(strstr(why, "outside the volume") != NULL, "%s", why);
	cr_assert_eq(writes, 0);
}

Test(fsd_jbd2, superblock_features)
{
	uint8_t sb[1024];
	journal_superblock_t *j = (journal_superblock_t *)sb;
	struct jbd2_info ji;
	char why[128];

	memset(sb, 0, sizeof(sb));
	j->s_header.h_magic = htobe32(JBD2_MAGIC_NUMBER);
	j->s_header.h_blocktype = htobe32(JBD2_SUPERBLOCK_V2);
	j->s_blocksize = htobe32(4096);
	j->s_maxlen = htobe32(4096);
	j->s_first = htobe32(1);
	j->s_sequence = htobe32(1);
	j->s_start = htobe32(1);
	cr_assert_eq(jbd2_parse_super(sb, 4096, &ji, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(jbd2_parse_super(sb, 1024, &ji, why, sizeof(why)), -1);
	j->s_feature_compat = htobe32(JBD2_FEATURE_COMPAT_CHECKSUM);
	cr_assert_eq(jbd2_parse_super(sb, 4096, &ji, why, sizeof(why)), -1);
	j->s_feature_compat = 0;
	j->s_feature_incompat = htobe32(JBD2_FEATURE_INCOMPAT_64BIT);
	cr_assert_eq(jbd2_parse_super(sb, 4096, &ji, why, sizeof(why)), 0);
	cr_assert_eq(ji.incompat, JBD2_FEATURE_INCOMPAT_64BIT);
}

/* ---- on a real volume -------------------------------------------------- */

static void
make_volume(void)
{
	make_volume_of("64M", 1024, "");
}

static void
mount_rw(struct fsd *fs)
{
	struct fsd_mount_opts o = { .cache_blocks = 1024, .commit_ms = 60000, .nocluster = 1 };
	char err[256];

	cr_assert_eq(super_mount(fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
}

/* The uid field of inode blkno as the disk has it now. */
static uint32_t
disk_uid(uint64_t blkno)
{
	uint8_t buf[1024];
	int fd = open(vol_img, O_RDONLY);

	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), (off_t)(blkno * 1024)), 1024);
	close(fd);
	return le32toh(((struct ocfs2_dinode *)buf)->i_uid);
}

static uint32_t
disk_root_uid(struct fsd *fs)
{
	return disk_uid(fs->root_blkno);
}

static void
set_root_uid(struct fsd *fs, uint32_t uid)
{
	struct fsd_handle h;
	struct fsd_buf *b;

	cr_assert_eq(journal_start(fs, &h), 0);
	cr_assert_eq(block_read(fs, fs->root_blkno, BLK_INODE, &b), 0);
	cr_assert_eq(journal_access(&h, b), 0);
	((struct ocfs2_dinode *)b->data)->i_uid = htole32(uid);
	journal_dirty(&h, b);
	block_put(fs, b);
	cr_assert_eq(journal_stop(&h, 0), 0);
}

Test(fsd_journal_disk, committed_change_survives_a_crash, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;
	uint64_t root;

	mount_rw(&fs);
	root = fs.root_blkno;
	set_root_uid(&fs, 4242);
	cr_assert_eq(journal_commit(&fs), 0);
	cr_assert_eq(disk_root_uid(&fs), 0, "not checkpointed: the home block is untouched");
	super_abandon(&fs);	/* crash */

	mount_rw(&fs);
	cr_assert_eq(fs.root_blkno, root);
	cr_assert_eq(disk_root_uid(&fs), 4242, "replayed at mount");
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_journal_disk, uncommitted_change_never_reaches_home, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;

	mount_rw(&fs);
	set_root_uid(&fs, 1111);
	cr_assert_eq(journal_commit(&fs), 0);
	set_root_uid(&fs, 2222);	/* running, never committed */
	super_abandon(&fs);

	mount_rw(&fs);
	cr_assert_eq(disk_root_uid(&fs), 1111);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_journal_disk, aborted_handle_leaves_no_trace, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *b;

	mount_rw(&fs);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &b), 0);
	cr_assert_eq(journal_access(&h, b), 0);
	((struct ocfs2_dinode *)b->data)->i_uid = htole32(77);
	journal_dirty(&h, b);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)b->data)->i_uid), 0, "restored");
	block_put(&fs, b);
	super_unmount(&fs);
	cr_assert_eq(disk_root_uid(&fs), 0);
	cr_assert(fsck_clean());
}

Test(fsd_journal_disk, torn_commit_is_ignored_and_log_wraps, .init = make_volume,
    .fini = remove_volume, .timeout = 120)
{
	struct fsd_mount_opts ro = { .readonly = 1, .cache_blocks = 64, .nocluster = 1 };
	struct fsd fs, probe;
	uint8_t *zero;
	char err[256];
	uint32_t i;

	/* Enough commits (3 log blocks each) to checkpoint and wrap the 4 MB log. */
	mount_rw(&fs);
	for (i = 1; i <= 1500; i++) {
		set_root_uid(&fs, i);
		cr_assert_eq(journal_commit(&fs), 0);
	}
	super_abandon(&fs);
	cr_assert_eq(super_mount(&probe, vol_img, &ro, err, sizeof(err)), -1,
	    "a read-only mount refuses a dirty journal");
	cr_assert(strstr(err, "needs recovery") != NULL, "%s", err);
	mount_rw(&fs);
	cr_assert_eq(disk_root_uid(&fs), 1500, "replayed across the wrap");

	/*
	 * One more commit, then tear off its commit block: the session logs
	 * from s_first, so descriptor 1, copy 2, commit 3.
	 */
	set_root_uid(&fs, 9999);
	cr_assert_eq(journal_commit(&fs), 0);
	zero = volume_alloc(1024);
	cr_assert_eq(journal_io(fs.journal, 1, 3, 1, zero), 0);
	free(zero);
	super_abandon(&fs);
	mount_rw(&fs);
	cr_assert_eq(disk_root_uid(&fs), 1500, "the torn transaction is ignored whole");
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

/*
 * Open a handle that sets the uid of the root inode and of the system
 * directory inode (both accessed and dirtied); *rb and *sb referenced.
 */
static void
open_two_block_handle(struct fsd *fs, struct fsd_handle *h, uint32_t root_uid,
    uint32_t sys_uid, struct fsd_buf **rb, struct fsd_buf **sb)
{
	cr_assert_eq(journal_start(fs, h), 0);
	cr_assert_eq(block_read(fs, fs->root_blkno, BLK_INODE, rb), 0);
	cr_assert_eq(block_read(fs, fs->sysdir_blkno, BLK_INODE, sb), 0);
	cr_assert_eq(journal_access(h, *rb), 0);
	cr_assert_eq(journal_access(h, *sb), 0);
	((struct ocfs2_dinode *)(*rb)->data)->i_uid = htole32(root_uid);
	((struct ocfs2_dinode *)(*sb)->data)->i_uid = htole32(sys_uid);
	journal_dirty(h, *rb);
	journal_dirty(h, *sb);
}

/*
 * A handle may wait for a cluster lock while another thread commits and
 * checkpoints (same thread here: a commit must not need the handle).
 */
Test(fsd_journal_disk, commit_inside_a_handle_takes_only_closed_handles, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *rb, *sb;
	uint32_t sys0, seq;

	mount_rw(&fs);
	sys0 = disk_uid(fs.sysdir_blkno);
	set_root_uid(&fs, 100);			/* closed, running transaction */
	open_two_block_handle(&fs, &h, 200, sys0 + 300, &rb, &sb);
	cr_assert_eq(journal_checkpoint(&fs), 0);
	cr_assert_eq(disk_root_uid(&fs), 100, "the closed handle's change is home");
	cr_assert_eq(disk_uid(fs.sysdir_blkno), sys0, "the open handle's is not");
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)rb->data)->i_uid), 200,
	    "the cache keeps the open handle's change");
	/* nothing new: a second commit has nothing to log */
	seq = journal_info(fs.journal)->sequence;
	cr_assert_eq(journal_checkpoint(&fs), 0);
	cr_assert_eq(journal_info(fs.journal)->sequence, seq, "no transaction");
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(&fs, rb);
	block_put(&fs, sb);
	cr_assert_eq(journal_checkpoint(&fs), 0);
	cr_assert_eq(disk_root_uid(&fs), 200, "logged once the handle closed");
	cr_assert_eq(disk_uid(fs.sysdir_blkno), sys0 + 300);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_journal_disk, abort_after_a_commit_inside_the_handle, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *rb, *sb;
	uint32_t sys0;

	mount_rw(&fs);
	sys0 = disk_uid(fs.sysdir_blkno);
	set_root_uid(&fs, 100);
	open_two_block_handle(&fs, &h, 200, sys0 + 300, &rb, &sb);
	cr_assert_eq(journal_commit(&fs), 0);
	cr_assert_eq(journal_stop(&h, 1), 0);
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)rb->data)->i_uid), 100, "restored");
	cr_assert_eq(le32toh(((struct ocfs2_dinode *)sb->data)->i_uid), sys0);
	block_put(&fs, rb);
	block_put(&fs, sb);
	cr_assert_eq(disk_root_uid(&fs), 0, "committed, not checkpointed");
	super_abandon(&fs);	/* crash: only the log speaks */

	mount_rw(&fs);
	cr_assert_eq(disk_root_uid(&fs), 100, "the first handle, replayed");
	cr_assert_eq(disk_uid(fs.sysdir_blkno), sys0, "nothing of the aborted one");
	super_unmount(&fs);
	cr_assert_eq(disk_root_uid(&fs), 100);
	cr_assert(fsck_clean());
}

/* Write requests the volume has seen (its io_gate). */
static unsigned gate_writes;

static int
count_writes(void *arg, int write)
{
	(void)arg;
	gate_writes += write != 0;
	return 0;
}

/*
 * A checkpoint writes neighbouring blocks home with one request per run
 * (write_home_runs): 16 neighbours plus one block apart, logged in one
 * transaction, cost two requests and the journal superblock's, not 18.
 */
Test(fsd_journal_disk, checkpoint_writes_a_run_of_neighbours_at_once, .init = make_volume,
    .fini = remove_volume, .timeout = 60)
{
	enum { RUN = 16, FIRST = 60000, APART = 60100 };
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *b;
	uint8_t buf[1024];
	unsigned i;
	int fd;

	mount_rw(&fs);
	cr_assert_eq(journal_start(&fs, &h), 0);
	for (i = 0; i <= RUN; i++) {
		cr_assert_eq(block_read(&fs, i < RUN ? FIRST + i : APART, BLK_RAW, &b), 0);
		cr_assert_eq(journal_access(&h, b), 0);
		memset(b->data, 0x5a + (int)i, 1024);
		journal_dirty(&h, b);
		block_put(&fs, b);
	}
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(journal_commit(&fs), 0);
	gate_writes = 0;
	fs.vol.io_gate = count_writes;
	cr_assert_eq(journal_checkpoint(&fs), 0);
	fs.vol.io_gate = NULL;
	cr_assert_eq(gate_writes, 3, "the run, the block apart, the journal superblock: %u requests",
	    gate_writes);
	fd = open(vol_img, O_RDONLY);
	cr_assert(fd >= 0);
	for (i = 0; i <= RUN; i++) {
		cr_assert_eq(pread(fd, buf, sizeof(buf), (off_t)(i < RUN ? FIRST + i : APART) * 1024),
		    1024);
		cr_assert_eq(buf[0], 0x5a + i);
		cr_assert_eq(buf[1023], 0x5a + i, "block %u is home whole", i);
	}
	close(fd);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
