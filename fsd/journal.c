/*
 * The JBD2 writer (doc/ondisk.md, Journal), as the kernel lays out a log in the
 * slot's journal file, so that fsck.ocfs2 or a kernel node could replay
 * what we leave behind.
 *
 * Metadata changes happen inside handles. A handle records an undo copy
 * of each block it touches (so a failed operation leaves no trace) and
 * adds the block to the running transaction. A commit writes descriptor
 * blocks and copies, syncs, writes the commit block and syncs again:
 * only then may a home location be written (checkpoint), from the copy
 * frozen at commit time. Until checkpointed, a block stays pinned in the
 * cache so nobody re-reads its stale home copy.
 *
 * A handle holds the EX locks of what it changes (handle_lock, or given
 * by handle_hold) until journal_stop has put its blocks in the running
 * transaction: a downconvert in between would checkpoint them
 * half-changed for another node to read.
 *
 * A lock leaving EX makes home what changed under it, and nothing more
 * (journal_write_home, doc/lock-handoff.md): each lock, each block owner
 * and blocks of no known owner carry the number of the last transaction
 * that changed them; the handoff commits and checkpoints only when that
 * transaction is not home yet.
 *
 * Ordered mode: file data is written in place before the commit that
 * points at it; the fdatasync at the start of every commit makes it
 * durable first.
 *
 * Concurrency: many handles are open at once, one per thread, all
 * joining the running transaction. A block belongs to at most one open
 * handle, from its journal_access to the handle's end (fsd_buf.jh): the
 * EX locks a handle holds keep the others away from what they guard, as
 * cluster locks exclude this node's other holders too. What no such lock
 * guards, each node's allocation state (the allocators of its slot and
 * their locks, the local alloc window, the truncate log, the orphan dir,
 * the quota files), a handle reaches only after handle_serialize, which
 * takes hmtx until the handle ends: one handle at a time works there, and
 * no handle waits there for the inode and directory locks others hold
 * (the lock order at the top of ops_namei.c puts all of these last). A
 * block wanted by two open handles at once is a broken rule: the second
 * waits for the first to end, and says so (a build with FSD_LOCK_CHECKS
 * aborts instead).
 *
 * The journal's state has its own mutex (mtx), held only briefly,
 * because a thread inside a handle may wait long for a cluster lock
 * while another (downconvert, fsync) must commit and checkpoint what the
 * closed handles changed. Such a commit logs, for each block an open
 * handle has touched, that handle's undo copy: the block as the closed
 * handles left it. A handle changes a block only after journal_access,
 * which takes mtx, so a commit never sees half a handle. Lock order:
 * cluster locks, then hmtx, then mtx.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#include "fsd.h"
/* after fsd.h: it needs the kernel types ocfs2_disk.h brings in */
#include <ocfs2/jbd2.h>

struct jundo {
	struct fsd_buf	*b;
	uint8_t		*copy;
	int		 committed;	/* copy is in a commit already: skip it */
};

/* A committed block waiting for its checkpoint. */
struct jcp {
	struct fsd_buf	*b;		/* pinned */
	uint8_t		*frozen;	/* contents as committed, O_DIRECT aligned */
	struct jcp	*hnext;
};

#define JCP_HASH	1024

/*
 * The last transaction that changed a block of one owner, kept until the
 * next full checkpoint makes it home (journal_write_home).
 */
struct jstamp {
	uint64_t	 owner;
	uint64_t	 txn;
	struct jstamp	*next;
};

#define JST_HASH	1024

struct jextent {
	uint32_t	lblk;
	uint32_t	count;
	uint64_t	pblk;
};

struct fsd_journal {
	struct fsd	*fs;
	uint64_t	 inode;
	struct jbd2_info ji;
	struct jextent	*ext;
	unsigned	 next;
	uint8_t		*jsb;		/* its superblock as last written, O_DIRECT aligned */
	pthread_mutex_t	 hmtx;		/* a handle's from handle_serialize to its end */
	pthread_mutex_t	 mtx;		/* everything below */
	pthread_cond_t	 owner_cv;	/* an open handle ended: its blocks are free */
	unsigned	 nopen;		/* open handles */
	unsigned	 peak;		/* the most open at once */
	uint64_t	 handles;	/* handles begun this mount */
	uint64_t	 owner_waits;	/* journal_access waits for another handle's block */
	uint32_t	 head;		/* next log block to write */
	uint32_t	 used;		/* log blocks holding un-checkpointed transactions */
	uint32_t	 next_seq;	/* tid of the running transaction */
	uint64_t	 commits;	/* transactions committed this mount */
	uint64_t	 in_place;	/* of which written home in place (commit_in_place) */
	uint32_t	 run_limit;	/* commit when the running transaction is this big */
	struct fsd_buf	**run;
	unsigned	 nrun, run_cap;
	struct jcp	*cp[JCP_HASH];
	unsigned	 ncp;
	int		 failed;	/* a log write failed: no more commits */
	uint64_t	 flushes;	/* device_flush calls this mount */
	int		 unflushed;	/* commit_in_place wrote since the last flush */
	/*
	 * Transactions by number, which unlike next_seq never wraps: txn is
	 * the running one's, every one below home_txn is home and out of the
	 * log, anon_txn last changed a block of no known owner.
	 */
	uint64_t	 txn, home_txn, anon_txn;
	struct jstamp	*st[JST_HASH];
	/*
	 * An inode block that joined an empty run while the log was empty,
	 * and its contents then, which were its home's: what commit_in_place
	 * compares it with. NULL once anything else happens to the run.
	 */
	struct fsd_buf	*solo;
	uint8_t		*solo_home;
};

/* ---- the format (pure) ------------------------------------------------ */

static unsigned
tag_bytes(const struct jbd2_info *ji)
{
	return (ji->incompat & JBD2_FEATURE_INCOMPAT_64BIT) ? JBD2_TAG_SIZE64 : JBD2_TAG_SIZE32;
}

/* Tags one descriptor block holds: the first tag carries the 16-byte UUID. */
static unsigned
tags_per_desc(const struct jbd2_info *ji)
{
	return (ji->blocksize - sizeof(journal_header_t) - 16) / tag_bytes(ji);
}

unsigned
jbd2_txn_blocks(const struct jbd2_info *ji, unsigned n)
{
	unsigned k = tags_per_desc(ji);

	return (n + k - 1) / k + n + 1;
}

static void
put_header(uint8_t *blk, uint32_t type, uint32_t tid)
{
	journal_header_t *h = (journal_header_t *)blk;

	h->h_magic = htobe32(JBD2_MAGIC_NUMBER);
	h->h_blocktype = htobe32(type);
	h->h_sequence = htobe32(tid);
}

void
jbd2_build_txn(const struct jbd2_info *ji, uint32_t tid, const struct jbd2_block *b,
    unsigned n, uint8_t *out)
{
	unsigned bs = ji->blocksize, k = tags_per_desc(ji), tb = tag_bytes(ji);
	unsigned i, j, chunk;
	struct commit_header *ch;
	journal_block_tag_t *tag;
	struct timespec now;
	uint8_t *desc, *p;
	uint32_t flags;
	size_t off;

	p = out;
	for (i = 0; i < n; i += chunk) {
		chunk = n - i < k ? n - i : k;
		desc = p;
		memset(desc, 0, bs);
		put_header(desc, JBD2_DESCRIPTOR_BLOCK, tid);
		p += bs;
		off = sizeof(journal_header_t);
		for (j = 0; j < chunk; j++) {
			memcpy(p, b[i + j].data, bs);
			flags = 0;
			/* a copy must not look like a log block: escape it */
			if (be32toh(*(uint32_t *)p) == JBD2_MAGIC_NUMBER) {
				memset(p, 0, 4);
				flags |= JBD2_FLAG_ESCAPE;
			}
			if (j > 0)
				flags |= JBD2_FLAG_SAME_UUID;
			if (j == chunk - 1)
				flags |= JBD2_FLAG_LAST_TAG;
			tag = (journal_block_tag_t *)(desc + off);
			tag->t_blocknr = htobe32((uint32_t)b[i + j].blkno);
			tag->t_flags = htobe32(flags);
			if (tb == JBD2_TAG_SIZE64)
				tag->t_blocknr_high = htobe32((uint32_t)(b[i + j].blkno >> 32));
			off += tb;
			if (j == 0) {
				memcpy(desc + off, ji->uuid, 16);
				off += 16;
			}
			p += bs;
		}
	}
	memset(p, 0, bs);
	put_header(p, JBD2_COMMIT_BLOCK, tid);
	ch = (struct commit_header *)p;
	clock_gettime(CLOCK_REALTIME, &now);
	ch->h_commit_sec = htobe64((uint64_t)now.tv_sec);
	ch->h_commit_nsec = htobe32((uint32_t)now.tv_nsec);
}

int
jbd2_parse_super(const uint8_t *blk, unsigned fs_block_bytes, struct jbd2_info *ji,
    char *why, size_t whylen)
{
	const journal_superblock_t *sb = (const journal_superblock_t *)blk;
	uint32_t type = be32toh(sb->s_header.h_blocktype);

	memset(ji, 0, sizeof(*ji));
	if (be32toh(sb->s_header.h_magic) != JBD2_MAGIC_NUMBER ||
	    (type != JBD2_SUPERBLOCK_V1 && type != JBD2_SUPERBLOCK_V2)) {
		snprintf(why, whylen, "not a JBD2 journal superblock");
		return -1;
	}
	ji->blocksize = be32toh(sb->s_blocksize);
	ji->maxlen = be32toh(sb->s_maxlen);
	ji->first = be32toh(sb->s_first);
	ji->sequence = be32toh(sb->s_sequence);
	ji->start = be32toh(sb->s_start);
	memcpy(ji->uuid, sb->s_uuid, 16);
	if (type == JBD2_SUPERBLOCK_V2) {
		if (be32toh(sb->s_feature_compat) != 0 || be32toh(sb->s_feature_ro_compat) != 0 ||
		    (be32toh(sb->s_feature_incompat) & ~JBD2_KNOWN_INCOMPAT_FEATURES) != 0) {
			snprintf(why, whylen, "journal features %#x/%#x/%#x are not supported",
			    be32toh(sb->s_feature_compat), be32toh(sb->s_feature_incompat),
			    be32toh(sb->s_feature_ro_compat));
			return -1;
		}
		ji->incompat = be32toh(sb->s_feature_incompat);
	}
	/*
	 * s_start may be below s_first: mkfs leaves 1 even where the
	 * superblock takes two blocks; replay finds no magic there.
	 */
	if (ji->blocksize != fs_block_bytes || ji->first == 0 || ji->first >= ji->maxlen ||
	    ji->maxlen - ji->first < 64 ||
	    ji->start >= ji->maxlen) {
		snprintf(why, whylen, "impossible journal geometry (block size %u, first %u, "
		    "length %u, start %u)", ji->blocksize, ji->first, ji->maxlen, ji->start);
		return -1;
	}
	return 0;
}

void
jbd2_write_super(uint8_t *blk, const struct jbd2_info *ji)
{
	journal_superblock_t *sb = (journal_superblock_t *)blk;

	sb->s_sequence = htobe32(ji->sequence);
	sb->s_start = htobe32(ji->start);
}

/* ---- the journal file ------------------------------------------------- */

int
journal_io(struct fsd_journal *j, int write, uint32_t lblk, unsigned count, void *buf)
{
	uint8_t *p = buf;
	unsigned i, n;
	int rc;

	while (count > 0) {
		for (i = 0; i < j->next; i++)
			if (lblk >= j->ext[i].lblk && lblk < j->ext[i].lblk + j->ext[i].count)
				break;
		if (i == j->next)
			return -EIO;
		n = j->ext[i].lblk + j->ext[i].count - lblk;
		if (n > count)
			n = count;
		rc = block_io(j->fs, write, j->ext[i].pblk + (lblk - j->ext[i].lblk), n, p);
		if (rc != 0)
			return rc;
		lblk += n;
		count -= n;
		p += (size_t)n * j->fs->vol.block_bytes;
	}
	return 0;
}

const struct jbd2_info *
journal_info(struct fsd_journal *j)
{
	return &j->ji;
}

int
journal_open(struct fsd *fs, int slot, struct fsd_journal **jp, char *err, size_t errlen)
{
	struct fsd_journal *j;
	struct fsd_extent ex;
	struct fsd_buf *b;
	uint64_t nblocks, lb;
	char why[128];
	int rc;

	*jp = NULL;
	j = xcalloc(1, sizeof(*j));
	j->fs = fs;
	j->inode = fs->slots[slot].journal;
	pthread_mutex_init(&j->hmtx, NULL);
	pthread_mutex_init(&j->mtx, NULL);
	pthread_cond_init(&j->owner_cv, NULL);
	/* 0 stamps what never changed */
	j->txn = j->home_txn = 1;
	j->solo_home = xmalloc(fs->vol.block_bytes);
	if ((rc = block_read(fs, j->inode, BLK_INODE, &b)) != 0) {
		snprintf(err, errlen, "journal:%04d is unreadable", slot);
		goto fail;
	}
	nblocks = LE64(((const struct ocfs2_dinode *)b->data)->i_size) >> fs->bbits;
	if (nblocks > UINT32_MAX)
		nblocks = UINT32_MAX;
	/* The whole mapping up front: the log is written on every commit. */
	for (lb = 0; lb < nblocks; lb += ex.nblocks) {
		rc = extent_map(fs, j->inode, &((const struct ocfs2_dinode *)b->data)->id2.i_list,
		    lb, &ex);
		if (rc != 0 || ex.pblk == 0 || ex.unwritten) {
			snprintf(err, errlen, "journal:%04d: %s at block %llu", slot,
			    rc ? "unreadable extent tree" : "hole", (unsigned long long)lb);
			block_put(fs, b);
			goto fail;
		}
		if (ex.nblocks > nblocks - lb)
			ex.nblocks = nblocks - lb;
		j->ext = xrealloc(j->ext, (j->next + 1) * sizeof(*j->ext));
		j->ext[j->next].lblk = (uint32_t)lb;
		j->ext[j->next].count = (uint32_t)ex.nblocks;
		j->ext[j->next].pblk = ex.pblk;
		j->next++;
	}
	block_put(fs, b);
	if ((j->jsb = volume_alloc(fs->vol.block_bytes)) == NULL)
		fatal("out of memory");
	if (journal_io(j, 0, 0, 1, j->jsb) != 0) {
		snprintf(err, errlen, "journal:%04d: cannot read its superblock", slot);
		goto fail;
	}
	rc = jbd2_parse_super(j->jsb, fs->vol.block_bytes, &j->ji, why, sizeof(why));
	if (rc != 0 || j->ji.maxlen > nblocks) {
		snprintf(err, errlen, "journal:%04d: %s", slot,
		    rc ? why : "longer than its file");
		goto fail;
	}
	j->run_limit = (j->ji.maxlen - j->ji.first) / 4;
	*jp = j;
	return 0;
fail:
	journal_close(j);
	return -1;
}

static unsigned
st_hash(uint64_t owner)
{
	return (unsigned)((owner * 0x9E3779B97F4A7C15ULL) >> 32) & (JST_HASH - 1);
}

/* b goes into the running transaction: its owner's stamp, or the ownerless one. */
static void
stamp_block(struct fsd_journal *j, const struct fsd_buf *b)
{
	struct jstamp *s, **head;

	if (b->owner == 0 || b->owner_unsure) {
		j->anon_txn = j->txn;
		return;
	}
	head = &j->st[st_hash(b->owner)];
	for (s = *head; s != NULL && s->owner != b->owner; s = s->next)
		;
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		s->owner = b->owner;
		s->next = *head;
		*head = s;
	}
	s->txn = j->txn;
}

static uint64_t
owner_txn(const struct fsd_journal *j, uint64_t owner)
{
	const struct jstamp *s;

	for (s = j->st[st_hash(owner)]; s != NULL; s = s->next)
		if (s->owner == owner)
			return s->txn;
	return 0;
}

/* Forget the stamps of transactions numbered below `below`. */
static void
stamps_drop(struct fsd_journal *j, uint64_t below)
{
	struct jstamp *s, **pp;
	unsigned i;

	for (i = 0; i < JST_HASH; i++) {
		for (pp = &j->st[i]; (s = *pp) != NULL;) {
			if (s->txn >= below) {
				pp = &s->next;
				continue;
			}
			*pp = s->next;
			free(s);
		}
	}
}

/*
 * Everything committed is home: only the stamps of the running
 * transaction (or of one being committed, when a full log is
 * checkpointed in its commit) still matter.
 */
static void
stamps_home(struct fsd_journal *j)
{
	j->home_txn = j->txn;
	stamps_drop(j, j->home_txn);
}

static void
cp_release_all(struct fsd_journal *j)
{
	struct jcp *c, *n;
	unsigned i;

	for (i = 0; i < JCP_HASH; i++) {
		for (c = j->cp[i]; c != NULL; c = n) {
			n = c->hnext;
			block_put(j->fs, c->b);
			free(c->frozen);
			free(c);
		}
		j->cp[i] = NULL;
	}
	j->ncp = 0;
}

void
journal_close(struct fsd_journal *j)
{
	unsigned i;

	if (j == NULL)
		return;
	for (i = 0; i < j->nrun; i++) {
		j->run[i]->jrun = 0;
		block_put(j->fs, j->run[i]);
	}
	cp_release_all(j);
	stamps_drop(j, UINT64_MAX);
	free(j->run);
	free(j->ext);
	free(j->jsb);
	free(j->solo_home);
	pthread_cond_destroy(&j->owner_cv);
	pthread_mutex_destroy(&j->mtx);
	pthread_mutex_destroy(&j->hmtx);
	free(j);
}

/* Flush the device's cache: every write completed so far is durable. */
static int
device_flush(struct fsd_journal *j)
{
	if (fdatasync(j->fs->vol.fd) == -1)
		return -errno;
	j->flushes++;
	j->unflushed = 0;
	return 0;
}

/*
 * Rewrite the journal superblock with s_start/s_sequence, synchronously,
 * from the copy read at open: nothing else in it changes while the slot
 * is ours, so it is not read again before every write.
 */
static int
write_jsb(struct fsd_journal *j, uint32_t start, uint32_t seq)
{
	int rc;

	j->ji.start = start;
	j->ji.sequence = seq;
	jbd2_write_super(j->jsb, &j->ji);
	if ((rc = journal_io(j, 1, 0, 1, j->jsb)) == 0)
		rc = device_flush(j);
	return rc;
}

int
journal_load(struct fsd_journal *j)
{
	/* As jbd2's journal_reset: log from the first block, tail = head. */
	j->head = j->ji.first;
	j->used = 0;
	j->next_seq = j->ji.sequence;
	return write_jsb(j, j->head, j->next_seq);
}

int
journal_set_dirty(struct fsd *fs, uint64_t journal_inode, int dirty, int bump_recovery)
{
	struct ocfs2_dinode *di;
	struct fsd_buf *b;
	uint32_t flags;
	int rc;

	if ((rc = block_read(fs, journal_inode, BLK_INODE, &b)) != 0)
		return rc;
	di = (struct ocfs2_dinode *)b->data;
	flags = LE32(di->id1.journal1.ij_flags);
	flags = dirty ? flags | OCFS2_JOURNAL_DIRTY_FL : flags & ~OCFS2_JOURNAL_DIRTY_FL;
	di->id1.journal1.ij_flags = htole32(flags);
	if (bump_recovery)
		di->id1.journal1.ij_recovery_generation =
		    htole32(LE32(di->id1.journal1.ij_recovery_generation) + 1);
	/* Like ocfs2_journal_toggle_dirty: in place, not through the log, its check set. */
	block_set_check(fs, BLK_INODE, b->data);
	rc = block_io(fs, 1, journal_inode, 1, b->data);
	if (rc == 0 && fdatasync(fs->vol.fd) == -1)
		rc = -errno;
	block_put(fs, b);
	return rc;
}

/* ---- handles and commits ---------------------------------------------- */

/* The undo entry of the open handle that accessed b, or NULL. */
static struct jundo *
undo_of(struct fsd_buf *b)
{
	struct fsd_handle *h = b->jh;
	unsigned i;

	for (i = 0; h != NULL && i < h->nundo; i++)
		if (h->undo[i].b == b)
			return &h->undo[i];
	return NULL;
}

int
journal_start(struct fsd *fs, struct fsd_handle *h)
{
	struct fsd_journal *j = fs->journal;

	memset(h, 0, sizeof(*h));
	if (j == NULL)
		return -EROFS;
	pthread_mutex_lock(&j->mtx);
	/* After corruption or a failed log write, change nothing more. */
	if (fs->errors || j->failed) {
		pthread_mutex_unlock(&j->mtx);
		return -EROFS;
	}
	h->fs = fs;
	if (++j->nopen > j->peak)
		j->peak = j->nopen;
	j->handles++;
	pthread_mutex_unlock(&j->mtx);
	return 0;
}

/* This thread's handle holds hmtx (for FSD_LOCK_CHECKS's check of the lock order). */
static __thread int serialized;

void
handle_serialize(struct fsd_handle *h)
{
	if (h->serial)
		return;
	pthread_mutex_lock(&h->fs->journal->hmtx);
	h->serial = serialized = 1;
}

int
handle_serialized_here(void)
{
	return serialized;
}

void
handle_hold(struct fsd_handle *h, struct fsd_lockres *lr)
{
	if (h->nlocks == h->locks_cap) {
		h->locks_cap = h->locks_cap ? 2 * h->locks_cap : 8;
		h->locks = xrealloc(h->locks, h->locks_cap * sizeof(*h->locks));
	}
	h->locks[h->nlocks++] = lr;
}

static int
handle_lock_flags(struct fsd_handle *h, struct fsd_lockres *lr, unsigned lkf)
{
	unsigned i;
	int rc;

	for (i = 0; i < h->nlocks; i++)
		if (h->locks[i] == lr)
			return 0;
	if ((rc = lockres_lock_flags(h->fs, lr, LKM_EX, lkf)) != 0)
		return rc;
	handle_hold(h, lr);
	return 0;
}

int
handle_lock(struct fsd_handle *h, struct fsd_lockres *lr)
{
	return handle_lock_flags(h, lr, 0);
}

/* The lock this thread's handle found busy (referenced), for handle_wait_busy. */
static __thread struct fsd_lockres *busy_lock;

int
handle_restart_for(struct fsd_handle *h, struct fsd_lockres *lr)
{
	if (busy_lock == NULL) {
		lockres_ref(h->fs, lr);
		busy_lock = lr;
	}
	return -ENOSPC;
}

int
handle_lock_or_restart(struct fsd_handle *h, struct fsd_lockres *lr, unsigned lkf)
{
	int rc;

	if ((rc = handle_lock_flags(h, lr, lkf)) != -EAGAIN)
		return rc;
	return handle_restart_for(h, lr);
}

int
handle_wait_busy(struct fsd *fs)
{
	struct fsd_lockres *lr = busy_lock;
	int rc;

	if (lr == NULL)
		return 0;
	busy_lock = NULL;
	if ((rc = lockres_lock(fs, lr, LKM_EX)) == 0)
		lockres_unlock(fs, lr, LKM_EX);
	lockres_put(fs, lr);
	return rc == 0;
}

int
handle_lock_alloc(struct fsd_handle *h, struct fsd_lockres *lr)
{
	handle_serialize(h);
	return handle_lock(h, lr);
}

int
handle_lock_sysinode(struct fsd_handle *h, uint64_t blkno)
{
	return handle_lock_alloc(h, sysinode_lockres(h->fs, blkno));
}

/* b is another open handle's: a lock that should keep them apart does not. */
static void
owner_wait(struct fsd_journal *j, struct fsd_handle *h, struct fsd_buf *b)
{
#ifdef FSD_LOCK_CHECKS
	fatalx("block %llu (type %d, owner %llu): two open handles change it at once",
	    (unsigned long long)b->blkno, b->type, (unsigned long long)b->owner);
#endif
	if (j->owner_waits++ == 0)
		log_warnx("block %llu (type %d, owner %llu): two open handles change it at "
		    "once; the second waits (reported once)", (unsigned long long)b->blkno,
		    b->type, (unsigned long long)b->owner);
	while (b->jh != NULL && b->jh != h)
		pthread_cond_wait(&j->owner_cv, &j->mtx);
}

int
journal_access(struct fsd_handle *h, struct fsd_buf *b)
{
	struct fsd_journal *j = h->fs->journal;
	unsigned bs = h->fs->vol.block_bytes;
	struct jundo *u;

	/* a commit reads the undo copies */
	pthread_mutex_lock(&j->mtx);
	if (b->jh != NULL && b->jh != h)
		owner_wait(j, h, b);
	if (b->jh == h) {
		pthread_mutex_unlock(&j->mtx);
		return 0;
	}
	b->jh = h;
	if (h->nundo == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 8;
		h->undo = xrealloc(h->undo, h->cap * sizeof(*h->undo));
	}
	u = &h->undo[h->nundo++];
	u->b = b;
	u->copy = xmalloc(bs);
	memcpy(u->copy, b->data, bs);
	/* outside the running transaction, b is as last committed */
	u->committed = !b->jrun;
	block_ref(h->fs, b);
	pthread_mutex_unlock(&j->mtx);
	return 0;
}

void
journal_dirty(struct fsd_handle *h, struct fsd_buf *b)
{
	struct fsd_journal *j = h->fs->journal;
	struct jundo *u;

	pthread_mutex_lock(&j->mtx);
	h->dirtied = 1;
	stamp_block(j, b);
	if (!b->jrun) {
		/*
		 * Outside the run at access, the undo copy is b as last
		 * committed; with the log empty, that is its home.
		 */
		j->solo = NULL;
		if (j->nrun == 0 && j->ncp == 0 && j->used == 0 && b->type == BLK_INODE &&
		    (u = undo_of(b)) != NULL && u->committed) {
			memcpy(j->solo_home, u->copy, h->fs->vol.block_bytes);
			j->solo = b;
		}
		if (j->nrun == j->run_cap) {
			j->run_cap = j->run_cap ? 2 * j->run_cap : 64;
			j->run = xrealloc(j->run, j->run_cap * sizeof(*j->run));
		}
		b->jrun = 1;
		block_ref(h->fs, b);
		j->run[j->nrun++] = b;
	}
	pthread_mutex_unlock(&j->mtx);
}

static int commit_locked(struct fsd_journal *j);

int
journal_note_dir(struct fsd_handle *h, uint64_t blkno)
{
	unsigned i;

	for (i = 0; i < h->ndirs && h->dirs[i] != blkno; i++)
		;
	if (i < h->ndirs)
		return 0;
	if (h->ndirs == nitems(h->dirs))
		return -1;
	h->dirs[h->ndirs++] = blkno;
	return 0;
}

int
journal_stop(struct fsd_handle *h, int abort)
{
	struct fsd_journal *j = h->fs->journal;
	unsigned i;
	int rc = 0;

	/* the usage it changed goes into the quota files with it (quota.c) */
	if (!abort && h->nqd != 0 && (rc = quota_apply(h)) != 0)
		log_warnx("quota usage of a change could not be recorded: %s", strerror(-rc));
	quota_discard(h);
	pthread_mutex_lock(&j->mtx);
	/*
	 * Stamped again with the transaction the handle's last changes are
	 * in: a commit while it was open logged its blocks as they were
	 * before it. Its locks too: what it changed is theirs.
	 */
	for (i = 0; h->dirtied && i < h->nlocks; i++)
		h->locks[i]->jtxn = j->txn;
	for (i = 0; i < h->nundo; i++) {
		if (h->undo[i].b->jrun)
			stamp_block(j, h->undo[i].b);
		if (abort)
			memcpy(h->undo[i].b->data, h->undo[i].copy, h->fs->vol.block_bytes);
		h->undo[i].b->jh = NULL;
		free(h->undo[i].copy);
		block_put(h->fs, h->undo[i].b);
	}
	if (h->nundo != 0 && j->owner_waits != 0)
		pthread_cond_broadcast(&j->owner_cv);
	free(h->undo);
	h->undo = NULL;
	h->nundo = h->cap = 0;
	j->nopen--;
	if (j->nrun >= j->run_limit)
		rc = commit_locked(j);
	pthread_mutex_unlock(&j->mtx);
	/* restored directory blocks no longer match their name indexes */
	for (i = 0; abort && i < h->ndirs; i++)
		inode_drop_dindex(h->fs, h->dirs[i]);
	h->ndirs = 0;
	/*
	 * The EX locks kept for this handle: its changes are in the run now.
	 * Before hmtx, so that the next serialized handle finds the
	 * allocators' locks free here, not held by a handle that has ended.
	 */
	for (i = 0; i < h->nlocks; i++)
		lockres_unlock(h->fs, h->locks[i], LKM_EX);
	free(h->locks);
	h->locks = NULL;
	h->nlocks = h->locks_cap = 0;
	if (h->serial) {
		h->serial = serialized = 0;
		pthread_mutex_unlock(&j->hmtx);
	}
	return rc;
}

/* Write count log blocks at pos, wrapping from the end back to s_first. */
static int
write_log(struct fsd_journal *j, uint32_t pos, unsigned count, const uint8_t *buf)
{
	unsigned n;
	int rc;

	while (count > 0) {
		n = j->ji.maxlen - pos;
		if (n > count)
			n = count;
		if ((rc = journal_io(j, 1, pos, n, (void *)buf)) != 0)
			return rc;
		buf += (size_t)n * j->ji.blocksize;
		count -= n;
		pos += n;
		if (pos == j->ji.maxlen)
			pos = j->ji.first;
	}
	return 0;
}

static int
blkno_cmp(const void *a, const void *b)
{
	const struct jcp *x = *(struct jcp *const *)a, *y = *(struct jcp *const *)b;

	return x->b->blkno < y->b->blkno ? -1 : x->b->blkno > y->b->blkno;
}

/* The most blocks one home write carries. */
#define CP_RUN_MAX	256

/*
 * Write the committed copies of all[0..n) (sorted by block number) home,
 * each run of consecutive blocks in one write: a checkpoint after a burst
 * of creates holds thousands of neighbouring inode blocks, and one O_DIRECT
 * write each would cost a device round trip each.
 */
static int
write_home_runs(struct fsd_journal *j, struct jcp **all, unsigned n)
{
	unsigned bs = j->fs->vol.block_bytes, i, k, run;
	uint8_t *stage = NULL;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i += run) {
		for (run = 1; i + run < n && run < CP_RUN_MAX &&
		    all[i + run]->b->blkno == all[i]->b->blkno + run; run++)
			;
		if (run == 1) {
			rc = block_io(j->fs, 1, all[i]->b->blkno, 1, all[i]->frozen);
			continue;
		}
		if (stage == NULL && (stage = volume_alloc((size_t)CP_RUN_MAX * bs)) == NULL)
			fatal("out of memory");
		for (k = 0; k < run; k++)
			memcpy(stage + (size_t)k * bs, all[i + k]->frozen, bs);
		rc = block_io(j->fs, 1, all[i]->b->blkno, run, stage);
	}
	free(stage);
	return rc;
}

static int
checkpoint_locked(struct fsd_journal *j)
{
	struct jcp **all, *c;
	unsigned i, n = 0;
	int rc = 0;

	if (j->ncp == 0 && j->used == 0) {
		stamps_home(j);
		return 0;
	}
	all = xcalloc(j->ncp ? j->ncp : 1, sizeof(*all));
	for (i = 0; i < JCP_HASH; i++)
		for (c = j->cp[i]; c != NULL; c = c->hnext)
			all[n++] = c;
	qsort(all, n, sizeof(*all), blkno_cmp);
	rc = write_home_runs(j, all, n);
	free(all);
	if (rc == 0)
		rc = device_flush(j);
	if (rc != 0) {
		log_warnx("journal checkpoint failed: %s; no further changes", strerror(-rc));
		j->failed = 1;
		return rc;
	}
	cp_release_all(j);
	/* Everything is home: the log is empty from the head on. */
	j->used = 0;
	if ((rc = write_jsb(j, j->head, j->next_seq)) != 0) {
		j->failed = 1;
		return rc;
	}
	stamps_home(j);
	return 0;
}

/* b's committed contents are data (what was logged, not b->data). */
static void
cp_add(struct fsd_journal *j, struct fsd_buf *b, const uint8_t *data)
{
	unsigned h = (unsigned)(b->blkno % JCP_HASH), bs = j->fs->vol.block_bytes;
	struct jcp *c;

	for (c = j->cp[h]; c != NULL; c = c->hnext)
		if (c->b == b)
			break;
	if (c == NULL) {
		c = xcalloc(1, sizeof(*c));
		if ((c->frozen = volume_alloc(bs)) == NULL)
			fatal("out of memory");
		c->b = b;
		block_ref(j->fs, b);
		c->hnext = j->cp[h];
		j->cp[h] = c;
		j->ncp++;
	}
	memcpy(c->frozen, data, bs);
}

/* Log transaction next_seq of the n blocks in blist and make it durable. */
static int
log_txn(struct fsd_journal *j, const struct jbd2_block *blist, unsigned n)
{
	unsigned bs = j->ji.blocksize, need, logsize;
	uint8_t *img;
	int rc;

	logsize = j->ji.maxlen - j->ji.first;
	need = jbd2_txn_blocks(&j->ji, n);
	if (need >= logsize) {
		log_warnx("transaction of %u blocks does not fit the journal", n);
		j->failed = 1;
		return -ENOSPC;
	}
	if (j->used + need >= logsize && (rc = checkpoint_locked(j)) != 0)
		return rc;
	if ((img = volume_alloc((size_t)need * bs)) == NULL)
		fatal("out of memory");
	jbd2_build_txn(&j->ji, j->next_seq, blist, n, img);
	/*
	 * Ordered data and the log body first, the commit block only once
	 * they are durable: a crash before it leaves a transaction that
	 * replay ignores.
	 */
	rc = write_log(j, j->head, need - 1, img);
	if (rc == 0)
		rc = device_flush(j);
	if (rc == 0)
		rc = write_log(j, (j->head + need - 1 - j->ji.first) % logsize + j->ji.first, 1,
		    img + (size_t)(need - 1) * bs);
	if (rc == 0)
		rc = device_flush(j);
	free(img);
	if (rc != 0) {
		log_warnx("journal commit %u failed: %s; no further changes", j->next_seq,
		    strerror(-rc));
		j->failed = 1;
		return rc;
	}
	j->head = (j->head - j->ji.first + need) % logsize + j->ji.first;
	j->used += need;
	j->next_seq++;
	j->txn++;
	j->commits++;
	return 0;
}

/* commit_in_place's torn-write argument: the times and check lie in the first sector */
_Static_assert(offsetof(struct ocfs2_dinode, i_check) + sizeof(struct ocfs2_block_check) <= 512,
    "an inode's times and check span more than one sector");

int
journal_times_only(const uint8_t *home, const uint8_t *now, unsigned bs)
{
	const size_t tfirst = offsetof(struct ocfs2_dinode, i_atime);
	const size_t tend = offsetof(struct ocfs2_dinode, i_dtime);
	const size_t nfirst = offsetof(struct ocfs2_dinode, i_atime_nsec);
	const size_t nend = offsetof(struct ocfs2_dinode, i_mtime_nsec) + sizeof(__le32);
	const size_t cfirst = offsetof(struct ocfs2_dinode, i_check);
	const size_t cend = cfirst + sizeof(struct ocfs2_block_check);

	return memcmp(home, now, tfirst) == 0 &&
	    memcmp(home + tend, now + tend, nfirst - tend) == 0 &&
	    memcmp(home + nend, now + nend, cfirst - nend) == 0 &&
	    memcmp(home + cend, now + cend, bs - cend) == 0;
}

/*
 * The running transaction is one inode block whose only change since its
 * home copy is in its times: write it home in place instead of through
 * the log, one write where a handoff's commit and checkpoint cost four
 * writes and four flushes. Safe because
 * - everything the block holds but the times, and their check, is the
 *   same at home, all of it inside its first 512-byte sector: a write
 *   torn by a power loss leaves the old block or the new one, the
 *   atomicity JBD2's own commit block relies on;
 * - the log is empty, so no replay can put an older copy over it;
 * - times point at no data, so no ordered write has to be durable first.
 * No flush here: once the write is done, any node reads the new block,
 * and a kill of any process leaves it on the storage. A power loss
 * before the next flush may lose it, and leaves the older times of a
 * consistent volume, as it does unsynced data; whatever another node
 * then builds on the block it commits behind a flush of its own, which
 * makes this write durable first. journal_commit and journal_fsync,
 * asked for durability, flush it.
 */
static int
commit_in_place(struct fsd_journal *j)
{
	struct fsd_buf *b = j->run[0];
	unsigned bs = j->ji.blocksize;
	uint8_t *copy;
	int rc = 0;

	if (memcmp(j->solo_home, b->data, bs) != 0) {
		if ((copy = volume_alloc(bs)) == NULL)
			fatal("out of memory");
		memcpy(copy, b->data, bs);
		block_set_check(j->fs, b->type, copy);
		rc = block_io(j->fs, 1, b->blkno, 1, copy);
		free(copy);
		j->unflushed = 1;
		if (rc != 0) {
			log_warnx("inode %llu: writing its times home failed: %s; no further "
			    "changes", (unsigned long long)b->blkno, strerror(-rc));
			j->failed = 1;
			return rc;
		}
	}
	b->jrun = 0;
	block_put(j->fs, b);
	j->nrun = 0;
	j->solo = NULL;
	j->txn++;
	j->commits++;
	j->in_place++;
	stamps_home(j);
	return 0;
}

/*
 * Commit what the closed handles changed. For a block an open handle
 * has accessed that is its undo copy, and the block stays in the running
 * transaction for the handle's own changes.
 */
static int
commit_locked(struct fsd_journal *j)
{
	unsigned logsize = j->ji.maxlen - j->ji.first, bs = j->ji.blocksize, i, n, k, keep;
	struct jbd2_block *blist;
	struct fsd_buf *b;
	struct jundo *u;
	uint8_t *copies;
	int rc;

	if (j->nrun == 0)
		return 0;
	if (j->nrun == 1 && j->run[0] == j->solo && undo_of(j->solo) == NULL &&
	    j->ncp == 0 && j->used == 0 && !j->failed &&
	    journal_times_only(j->solo_home, j->solo->data, bs))
		return commit_in_place(j);
	j->solo = NULL;
	blist = xcalloc(j->nrun, sizeof(*blist));
	copies = xmalloc((size_t)j->nrun * bs);
	for (i = n = 0; i < j->nrun; i++) {
		b = j->run[i];
		if ((u = undo_of(b)) != NULL && u->committed)
			continue;
		/*
		 * What is logged carries its metaecc check, set here for
		 * every writer: replay and the checkpoint write it home as is.
		 */
		blist[n].blkno = b->blkno;
		blist[n].data = copies + (size_t)n * bs;
		memcpy(copies + (size_t)n * bs, u != NULL ? u->copy : b->data, bs);
		block_set_check(j->fs, b->type, copies + (size_t)n * bs);
		n++;
	}
	rc = n == 0 ? 0 : j->failed ? -EIO : log_txn(j, blist, n);
	free(blist);
	if (n == 0 || rc != 0) {
		free(copies);	/* n == 0: nothing but the open handle's changes */
		return rc;
	}
	/* the same blocks in the same order as logged */
	for (i = keep = k = 0; i < j->nrun; i++) {
		b = j->run[i];
		if ((u = undo_of(b)) == NULL) {
			cp_add(j, b, copies + (size_t)k++ * bs);
			b->jrun = 0;
			block_put(j->fs, b);
		} else {
			if (!u->committed)
				cp_add(j, b, copies + (size_t)k++ * bs);
			u->committed = 1;
			j->run[keep++] = b;
		}
	}
	free(copies);
	j->nrun = keep;
	/* Keep half the log free for the next transactions. */
	if (j->used > logsize / 2)
		return checkpoint_locked(j);
	return 0;
}

int
journal_commit(struct fsd *fs)
{
	struct fsd_journal *j = fs->journal;
	int rc;

	if (j == NULL)
		return 0;
	pthread_mutex_lock(&j->mtx);
	rc = commit_locked(j);
	if (rc == 0 && j->unflushed)
		rc = device_flush(j);
	pthread_mutex_unlock(&j->mtx);
	return rc;
}

int
journal_fsync(struct fsd *fs)
{
	struct fsd_journal *j = fs->journal;
	uint64_t flushes;
	int rc;

	if (j == NULL)
		return 0;
	pthread_mutex_lock(&j->mtx);
	flushes = j->flushes;
	rc = commit_locked(j);
	/* a commit's last flush came after every write done before this call */
	if (rc == 0 && (j->flushes == flushes || j->unflushed))
		rc = device_flush(j);
	pthread_mutex_unlock(&j->mtx);
	return rc;
}

void
journal_handle_stats(struct fsd *fs, uint64_t *handles, unsigned *peak, uint64_t *owner_waits)
{
	struct fsd_journal *j = fs->journal;

	*handles = *owner_waits = 0;
	*peak = 0;
	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mtx);
	*handles = j->handles;
	*peak = j->peak;
	*owner_waits = j->owner_waits;
	pthread_mutex_unlock(&j->mtx);
}

uint64_t
journal_commits(struct fsd *fs, uint64_t *in_place)
{
	uint64_t n;

	if (in_place != NULL)
		*in_place = 0;
	if (fs->journal == NULL)
		return 0;
	pthread_mutex_lock(&fs->journal->mtx);
	n = fs->journal->commits;
	if (in_place != NULL)
		*in_place = fs->journal->in_place;
	pthread_mutex_unlock(&fs->journal->mtx);
	return n;
}

int
journal_checkpoint(struct fsd *fs)
{
	int rc;

	if (fs->journal == NULL)
		return 0;
	pthread_mutex_lock(&fs->journal->mtx);
	rc = commit_locked(fs->journal);
	if (rc == 0)
		rc = checkpoint_locked(fs->journal);
	if (rc == 0 && fs->journal->unflushed)
		rc = device_flush(fs->journal);
	pthread_mutex_unlock(&fs->journal->mtx);
	return rc;
}

int
journal_write_home(struct fsd *fs, struct fsd_lockres *lr)
{
	struct fsd_journal *j = fs->journal;
	const char *why;
	uint64_t last;
	int rc = 0;

	if (j == NULL)
		return 0;
	pthread_mutex_lock(&j->mtx);
	last = lr->jtxn;
	why = "the lock's handles";
	if (lr->owner != 0 && owner_txn(j, lr->owner) > last) {
		last = owner_txn(j, lr->owner);
		why = "its blocks";
	}
	/* a block of unknown owner may be this lock's */
	if (j->anon_txn > last) {
		last = j->anon_txn;
		why = "a block of no known owner";
	}
	if (last >= j->home_txn) {
		log_debug("lock %s: leaving EX: transaction %llu (%s) is %s", lr->name,
		    (unsigned long long)last, why, last >= j->txn ? "running" : "not home");
		if (last >= j->txn)
			rc = commit_locked(j);
		if (rc == 0)
			rc = checkpoint_locked(j);
	}
	pthread_mutex_unlock(&j->mtx);
	return rc;
}

int
journal_shutdown(struct fsd *fs)
{
	struct fsd_journal *j = fs->journal;
	int rc;

	if (j == NULL)
		return 0;
	pthread_mutex_lock(&j->mtx);
	rc = commit_locked(j);
	if (rc == 0)
		rc = checkpoint_locked(j);
	/* s_start 0: nothing to replay, as a clean jbd2 unmount leaves it. */
	if (rc == 0)
		rc = write_jsb(j, 0, j->next_seq);
	pthread_mutex_unlock(&j->mtx);
	return rc;
}

void
journal_test_pause(struct fsd *fs, const char *env, uint64_t blkno, const char *what)
{
	const char *path = getenv(env);
	char paused[4096];
	int fd;

	if (path == NULL || *path == '\0' || access(path, F_OK) != 0)
		return;
	journal_commit(fs);
	snprintf(paused, sizeof(paused), "%s.%llu", path, (unsigned long long)blkno);
	if ((fd = open(paused, O_WRONLY | O_CREAT, 0644)) >= 0)
		close(fd);
	log_warnx("%s: inode %llu: %s", env, (unsigned long long)blkno, what);
	for (;;)
		pause();
}
