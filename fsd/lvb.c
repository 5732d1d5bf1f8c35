/*
 * META's value block: ocfs2_meta_lvb (dlmglue.h, OCFS2_LVB_VERSION 5), the
 * inode's attributes as its last EX holder left them, big-endian, which
 * the next node granted the lock from NL may trust without reading the
 * inode block.
 *
 * fsd also numbers, in the two fields ocfs2 leaves reserved, the versions
 * of everything in the inode block but its times (doc/lock-handoff.md,
 * "The inode block across a handoff"): a node that saw version S and is
 * granted the lock again with S still in the value block knows that
 * another node changed at most the times, which the value block carries,
 * and puts its own copy back into the cache instead of reading the block.
 */
#include <string.h>
#include <stdlib.h>
#include <sys/random.h>

#include "log.h"
#include "o2dlm.h"
#include "util.h"

#include "glue.h"
#include "lockres.h"

/* ocfs2_pack_timespec: seconds in the high 34 bits, nanoseconds below. */
static uint64_t
pack_time(uint64_t sec, uint32_t nsec)
{
	if (sec > (1ULL << 34) - 1)
		sec = (1ULL << 34) - 1;
	return sec << 30 | (nsec & ((1u << 30) - 1));
}

const struct dinode_range dinode_time_ranges[DINODE_TIME_RANGES] = {
	{ offsetof(struct ocfs2_dinode, i_atime), 3 * sizeof(__le64) },
	{ offsetof(struct ocfs2_dinode, i_atime_nsec), 3 * sizeof(__le32) },
	{ offsetof(struct ocfs2_dinode, i_check), sizeof(struct ocfs2_block_check) },
};

/* commit_in_place's torn-write argument (journal.c): the times and check lie in the first sector */
_Static_assert(offsetof(struct ocfs2_dinode, i_check) + sizeof(struct ocfs2_block_check) <= 512,
    "an inode's times and check span more than one sector");
_Static_assert(offsetof(struct ocfs2_dinode, i_ctime) == offsetof(struct ocfs2_dinode, i_atime) + 8 &&
    offsetof(struct ocfs2_dinode, i_mtime) == offsetof(struct ocfs2_dinode, i_atime) + 16 &&
    offsetof(struct ocfs2_dinode, i_mtime_nsec) ==
    offsetof(struct ocfs2_dinode, i_atime_nsec) + 8, "the times are not where expected");

static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
dinode_untimed_hash(const uint8_t *blk, unsigned bs)
{
	uint64_t words[4096 / sizeof(uint64_t)], h = bs;
	unsigned i;

	if (bs > sizeof(words))
		bs = sizeof(words);
	memcpy(words, blk, bs);
	for (i = 0; i < DINODE_TIME_RANGES; i++)
		memset((uint8_t *)words + dinode_time_ranges[i].off, 0, dinode_time_ranges[i].len);
	for (i = 0; i < bs / sizeof(uint64_t); i++)
		h = mix64(h ^ words[i]);
	return h;
}

/* The version number in the value block's reserved fields: 40 bits, 0 for none. */
#define SEQ_MASK	((1ULL << 40) - 1)

static uint64_t
lvb_seq(const uint8_t *lvb)
{
	if (lvb[0] != 5)
		return 0;
	return (uint64_t)lvb[1] << 32 | (uint64_t)lvb[60] << 24 | (uint64_t)lvb[61] << 16 |
	    (uint64_t)lvb[62] << 8 | lvb[63];
}

static uint64_t
seq_fresh(void)
{
	uint64_t seq = 0;

	while ((seq & SEQ_MASK) == 0)
		if (getrandom(&seq, sizeof(seq), 0) != sizeof(seq))
			seq = mix64((uint64_t)(uintptr_t)&seq ^ hold_now_us());
	return seq & SEQ_MASK;
}

void
meta_lvb_pack(const struct ocfs2_dinode *di, uint64_t seq, uint8_t *lvb)
{
	uint8_t *p = lvb;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

#define PUT(off, bits, val) do { v##bits = htobe##bits(val); memcpy(p + (off), &v##bits, sizeof(v##bits)); } while (0)
	memset(lvb, 0, 64);
	lvb[0] = 5;	/* OCFS2_LVB_VERSION */
	PUT(2, 16, LE16(di->i_dyn_features));
	PUT(4, 32, LE32(di->i_clusters));
	PUT(8, 32, LE32(di->i_uid));
	PUT(12, 32, LE32(di->i_gid));
	PUT(16, 64, pack_time(LE64(di->i_atime), LE32(di->i_atime_nsec)));
	PUT(24, 64, pack_time(LE64(di->i_ctime), LE32(di->i_ctime_nsec)));
	PUT(32, 64, pack_time(LE64(di->i_mtime), LE32(di->i_mtime_nsec)));
	PUT(40, 64, LE64(di->i_size));
	PUT(48, 16, LE16(di->i_mode));
	PUT(50, 16, LE16(di->i_links_count));
	PUT(52, 32, LE32(di->i_attr));
	PUT(56, 32, LE32(di->i_generation));
	lvb[1] = (uint8_t)(seq >> 32);
	PUT(60, 32, (uint32_t)seq);
#undef PUT
}

static uint64_t
lvb_get(const uint8_t *lvb, unsigned off, unsigned len)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < len; i++)
		v = v << 8 | lvb[off + i];
	return v;
}

int
meta_lvb_stat(struct fsd *fs, struct fsd_lockres *lr, uint32_t generation, struct stat *st)
{
	struct fsd_glue *g = fs->glue;
	uint8_t lvb[DLMC_LVB_LEN];
	uint64_t t;
	int i, fresh;
	struct timespec *ts[3] = { &st->st_atim, &st->st_ctim, &st->st_mtim };

	if (g == NULL)
		return -1;
	pthread_mutex_lock(&g->mtx);
	fresh = (lr->flags & LR_LVB_FRESH) != 0;
	if (fresh)
		memcpy(lvb, lr->lvb, sizeof(lvb));
	pthread_mutex_unlock(&g->mtx);
	/* the layout meta_lvb_pack writes */
	if (!fresh || lvb[0] != 5 || lvb_get(lvb, 56, 4) != generation ||
	    !S_ISREG(lvb_get(lvb, 48, 2)))
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_ino = lr->owner;
	st->st_mode = (mode_t)lvb_get(lvb, 48, 2);
	st->st_nlink = (nlink_t)lvb_get(lvb, 50, 2);
	st->st_uid = (uid_t)lvb_get(lvb, 8, 4);
	st->st_gid = (gid_t)lvb_get(lvb, 12, 4);
	st->st_size = (off_t)lvb_get(lvb, 40, 8);
	st->st_blocks = (blkcnt_t)(lvb_get(lvb, 4, 4) << (fs->cbits - 9));
	st->st_blksize = fs->vol.cluster_bytes;
	for (i = 0; i < 3; i++) {
		t = lvb_get(lvb, 16 + 8 * (unsigned)i, 8);
		ts[i]->tv_sec = (time_t)(t >> 30);
		ts[i]->tv_nsec = (long)(t & ((1u << 30) - 1));
	}
	pthread_mutex_lock(&g->mtx);
	g->lvb_stats++;
	pthread_mutex_unlock(&g->mtx);
	return 0;
}

/* ---- the inode block across a handoff -------------------------------- */

/* The most inode blocks kept while their locks are at NL. */
#define STASH_MAX	1024

static unsigned stashes;

uint64_t
meta_seq_leaving(struct fsd_lockres *lr, const uint8_t *blk, unsigned bs)
{
	uint64_t h = dinode_untimed_hash(blk, bs), seq;

	if (lr->ino_seq == 0)
		seq = seq_fresh();
	else if (!lr->ino_hash_ok || h != lr->ino_hash)
		seq = (lr->ino_seq + 1) & SEQ_MASK ? (lr->ino_seq + 1) & SEQ_MASK : 1;
	else
		seq = lr->ino_seq;
	/* a fresh number says nothing of what others saw before: keep nothing */
	lr->ino_hash_ok = lr->ino_seq != 0;
	lr->ino_seq = seq;
	lr->ino_hash = h;
	return seq;
}

void
meta_stash_free(struct fsd_lockres *lr)
{
	if (lr->ino_stash == NULL)
		return;
	free(lr->ino_stash);
	lr->ino_stash = NULL;
	__atomic_sub_fetch(&stashes, 1, __ATOMIC_RELAXED);
}

void
meta_stash(struct fsd *fs, struct fsd_lockres *lr)
{
	unsigned bs = fs->vol.block_bytes;
	struct fsd_buf *b;

	meta_stash_free(lr);
	if (lr->ino_seq == 0 || !lr->ino_hash_ok || lr->owner == 0 ||
	    (b = block_cached(fs, lr->owner)) == NULL)
		return;
	/* as the disk has it at ino_seq, but maybe for its times */
	if (b->type != BLK_INODE || b->jrun || dinode_untimed_hash(b->data, bs) != lr->ino_hash) {
		block_put(fs, b);
		return;
	}
	if (__atomic_add_fetch(&stashes, 1, __ATOMIC_RELAXED) <= STASH_MAX) {
		lr->ino_stash = xmalloc(bs);
		memcpy(lr->ino_stash, b->data, bs);
		pthread_mutex_lock(&fs->glue->mtx);
		lr->ino_epoch = fs->glue->deaths;
		pthread_mutex_unlock(&fs->glue->mtx);
	} else
		__atomic_sub_fetch(&stashes, 1, __ATOMIC_RELAXED);
	block_put(fs, b);
}

/*
 * The stash, as the value block says the inode is now: the same but for
 * its times, which it carries. 0, or -1 if anything says otherwise.
 */
static int
stash_update(struct fsd *fs, struct fsd_lockres *lr, uint64_t seq)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)lr->ino_stash;
	const uint8_t *lvb = lr->lvb;
	__le64 *secs[3] = { &di->i_atime, &di->i_ctime, &di->i_mtime };
	__le32 *nsecs[3] = { &di->i_atime_nsec, &di->i_ctime_nsec, &di->i_mtime_nsec };
	unsigned epoch, i;
	uint64_t t;

	pthread_mutex_lock(&fs->glue->mtx);
	epoch = fs->glue->deaths;
	pthread_mutex_unlock(&fs->glue->mtx);
	/* a node died since: the numbering may have started again */
	if (seq == 0 || seq != lr->ino_seq || !lr->ino_hash_ok || epoch != lr->ino_epoch)
		return -1;
	if (lvb_get(lvb, 56, 4) != LE32(di->i_generation) ||
	    lvb_get(lvb, 2, 2) != LE16(di->i_dyn_features) ||
	    lvb_get(lvb, 4, 4) != LE32(di->i_clusters) ||
	    lvb_get(lvb, 8, 4) != LE32(di->i_uid) || lvb_get(lvb, 12, 4) != LE32(di->i_gid) ||
	    lvb_get(lvb, 40, 8) != LE64(di->i_size) || lvb_get(lvb, 48, 2) != LE16(di->i_mode) ||
	    lvb_get(lvb, 50, 2) != LE16(di->i_links_count) ||
	    lvb_get(lvb, 52, 4) != LE32(di->i_attr)) {
		log_warnx("lock %s: value block version %llu is the one kept, but not the "
		    "attributes: the block is read again", lr->name, (unsigned long long)seq);
		return -1;
	}
	for (i = 0; i < 3; i++) {
		t = lvb_get(lvb, 16 + 8 * i, 8);
		if (t >> 30 >= (1ULL << 34) - 1)
			return -1;	/* clamped by pack_time */
		*secs[i] = htole64(t >> 30);
		*nsecs[i] = htole32((uint32_t)(t & ((1u << 30) - 1)));
	}
	return 0;
}

#ifdef FSD_LOCK_CHECKS
/* A debug build reads back every block kept: it must be what the disk holds. */
static void
kept_check(struct fsd *fs, struct fsd_lockres *lr, uint64_t seq)
{
	unsigned bs = fs->vol.block_bytes;
	const struct dinode_range *t = dinode_time_ranges;
	struct fsd_buf *b;
	uint8_t *disk;

	if ((disk = volume_alloc(bs)) == NULL || block_io(fs, 0, lr->owner, 1, disk) != 0 ||
	    (b = block_cached(fs, lr->owner)) == NULL) {
		free(disk);
		return;
	}
	/* all of it but the check, times included */
	if (!journal_times_only(disk, b->data, bs) ||
	    memcmp(disk + t[0].off, b->data + t[0].off, t[0].len) != 0 ||
	    memcmp(disk + t[1].off, b->data + t[1].off, t[1].len) != 0)
		fatalx("lock %s: the inode block kept at version %llu is not the disk's",
		    lr->name, (unsigned long long)seq);
	block_put(fs, b);
	free(disk);
}
#endif

void
meta_regrant_block(struct fsd *fs, struct fsd_lockres *lr, int lvb_ok)
{
	uint64_t seq = lvb_ok ? lvb_seq(lr->lvb) : 0;
	struct fsd_buf *b;
	int kept = 0;

	if (lr->ino_stash != NULL && stash_update(fs, lr, seq) == 0 &&
	    block_install(fs, lr->owner, BLK_INODE, lr->owner, lr->ino_stash) == 0)
		kept = 1;
	meta_stash_free(lr);
	if (kept) {
#ifdef FSD_LOCK_CHECKS
		kept_check(fs, lr, seq);
#endif
		pthread_mutex_lock(&fs->glue->mtx);
		fs->glue->inodes_kept++;
		pthread_mutex_unlock(&fs->glue->mtx);
		return;
	}
	/* what the disk holds now is version seq */
	lr->ino_seq = seq;
	lr->ino_hash_ok = 0;
	if (seq != 0 && block_read(fs, lr->owner, BLK_INODE, &b) == 0) {
		lr->ino_hash = dinode_untimed_hash(b->data, fs->vol.block_bytes);
		lr->ino_hash_ok = 1;
		block_put(fs, b);
	}
}
