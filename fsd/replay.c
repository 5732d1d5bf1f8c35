/*
 * Journal replay (doc/ondisk.md, Replay), as jbd2's recovery.c does it in three
 * passes over the log from s_start: SCAN finds the last transaction
 * whose commit block is present (the first header with the wrong magic
 * or sequence ends the log), REVOKE gathers revoked blocks, REPLAY
 * writes every logged copy home unless a revoke at the same or a later
 * transaction covers it. A transaction without its commit block is
 * ignored whole. Replay is idempotent, so a crash during it is harmless.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#include "fsd.h"
/* after fsd.h: it needs the kernel types ocfs2_disk.h brings in */
#include <ocfs2/jbd2.h>

enum pass { PASS_SCAN, PASS_REVOKE, PASS_REPLAY };

struct revoke {
	uint64_t	 blkno;
	uint32_t	 seq;
	struct revoke	*next;
};

#define REVOKE_HASH	256

struct replay {
	const struct jbd2_info	 *ji;
	const struct jbd2_log_ops *ops;
	void			 *arg;
	uint64_t		  max_blkno;
	struct revoke		 *rv[REVOKE_HASH];
	uint8_t			 *buf, *data;
};

static uint32_t
wrap(const struct jbd2_info *ji, uint64_t pos)
{
	uint32_t logsize = ji->maxlen - ji->first;

	return (uint32_t)((pos - ji->first) % logsize + ji->first);
}

static void
revoke_add(struct replay *r, uint64_t blkno, uint32_t seq)
{
	struct revoke *v;
	unsigned h = (unsigned)(blkno % REVOKE_HASH);

	for (v = r->rv[h]; v != NULL; v = v->next) {
		if (v->blkno == blkno) {
			if ((int32_t)(seq - v->seq) > 0)
				v->seq = seq;
			return;
		}
	}
	v = xcalloc(1, sizeof(*v));
	v->blkno = blkno;
	v->seq = seq;
	v->next = r->rv[h];
	r->rv[h] = v;
}

static int
revoked(struct replay *r, uint64_t blkno, uint32_t seq)
{
	struct revoke *v;

	for (v = r->rv[blkno % REVOKE_HASH]; v != NULL; v = v->next)
		if (v->blkno == blkno)
			return (int32_t)(v->seq - seq) >= 0;
	return 0;
}

/*
 * One pass. SCAN returns the first sequence without a commit block in
 * *end; the other passes stop there.
 */
static int
do_pass(struct replay *r, enum pass pass, uint32_t *end, struct jbd2_replay_result *res,
    char *why, size_t whylen)
{
	const struct jbd2_info *ji = r->ji;
	unsigned bs = ji->blocksize, tb, off, count;
	int is64 = (ji->incompat & JBD2_FEATURE_INCOMPAT_64BIT) != 0;
	uint32_t pos = ji->start, seq = ji->sequence, flags, type, rcount;
	uint64_t visited = 0, blk;
	const journal_header_t *h;
	const journal_block_tag_t *tag;
	int rc;

	tb = is64 ? JBD2_TAG_SIZE64 : JBD2_TAG_SIZE32;
	for (;;) {
		if (pass != PASS_SCAN && seq == *end)
			break;
		if (++visited > ji->maxlen) {
			snprintf(why, whylen, "journal log loops");
			return -EIO;
		}
		if ((rc = r->ops->read(r->arg, pos, r->buf)) != 0)
			return rc;
		h = (const journal_header_t *)r->buf;
		if (be32toh(h->h_magic) != JBD2_MAGIC_NUMBER || be32toh(h->h_sequence) != seq)
			break;
		type = be32toh(h->h_blocktype);
		if (type == JBD2_DESCRIPTOR_BLOCK) {
			count = 0;
			for (off = sizeof(journal_header_t); off + tb <= bs; ) {
				tag = (const journal_block_tag_t *)(r->buf + off);
				blk = be32toh(tag->t_blocknr);
				if (is64)
					blk |= (uint64_t)be32toh(tag->t_blocknr_high) << 32;
				flags = be32toh(tag->t_flags);
				count++;
				if (pass == PASS_REPLAY && !revoked(r, blk, seq)) {
					if (blk <= OCFS2_SUPER_BLOCK_BLKNO || blk >= r->max_blkno) {
						snprintf(why, whylen, "transaction %u logs block %llu, "
						    "outside the volume", seq, (unsigned long long)blk);
						return -EIO;
					}
					rc = r->ops->read(r->arg, wrap(ji, (uint64_t)pos + count), r->data);
					if (rc != 0)
						return rc;
					if (flags & JBD2_FLAG_ESCAPE)
						*(uint32_t *)r->data = htobe32(JBD2_MAGIC_NUMBER);
					if ((rc = r->ops->write(r->arg, blk, r->data)) != 0)
						return rc;
					res->blocks++;
				}
				off += tb;
				if (!(flags & JBD2_FLAG_SAME_UUID))
					off += 16;
				if (flags & JBD2_FLAG_LAST_TAG)
					break;
			}
			pos = wrap(ji, (uint64_t)pos + 1 + count);
		} else if (type == JBD2_COMMIT_BLOCK) {
			if (pass == PASS_REPLAY)
				res->transactions++;
			seq++;
			pos = wrap(ji, (uint64_t)pos + 1);
		} else if (type == JBD2_REVOKE_BLOCK) {
			if (pass == PASS_REVOKE) {
				rcount = be32toh(((const journal_revoke_header_t *)r->buf)->r_count);
				if (rcount > bs)
					rcount = bs;
				for (off = sizeof(journal_revoke_header_t); off + (is64 ? 8 : 4) <= rcount;
				    off += is64 ? 8 : 4) {
					blk = is64 ? be64toh(*(const uint64_t *)(r->buf + off)) :
					    be32toh(*(const uint32_t *)(r->buf + off));
					revoke_add(r, blk, seq);
				}
			}
			pos = wrap(ji, (uint64_t)pos + 1);
		} else
			break;
	}
	if (pass == PASS_SCAN)
		*end = seq;
	return 0;
}

int
jbd2_replay(const struct jbd2_info *ji, const struct jbd2_log_ops *ops, void *arg,
    uint64_t max_blkno, struct jbd2_replay_result *res, char *why, size_t whylen)
{
	struct replay r;
	struct revoke *v, *n;
	uint32_t end = ji->sequence;
	unsigned i;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&r, 0, sizeof(r));
	snprintf(why, whylen, "I/O error");
	res->next_sequence = ji->sequence;
	if (ji->start == 0)
		return 0;
	r.ji = ji;
	r.ops = ops;
	r.arg = arg;
	r.max_blkno = max_blkno;
	r.buf = xmalloc(ji->blocksize);
	r.data = xmalloc(ji->blocksize);
	rc = do_pass(&r, PASS_SCAN, &end, res, why, whylen);
	if (rc == 0)
		rc = do_pass(&r, PASS_REVOKE, &end, res, why, whylen);
	if (rc == 0)
		rc = do_pass(&r, PASS_REPLAY, &end, res, why, whylen);
	/* jbd2 skips the id of a possibly half-written transaction too */
	res->next_sequence = end + 1;
	for (i = 0; i < REVOKE_HASH; i++) {
		for (v = r.rv[i]; v != NULL; v = n) {
			n = v->next;
			free(v);
		}
	}
	free(r.buf);
	free(r.data);
	return rc;
}

/* ---- on a mounted volume ---------------------------------------------- */

struct slot_log {
	struct fsd_journal	*j;
	struct fsd		*fs;
	uint8_t			*bounce;	/* O_DIRECT aligned */
};

static int
slot_read(void *arg, uint32_t lblk, uint8_t *buf)
{
	struct slot_log *sl = arg;
	int rc;

	if ((rc = journal_io(sl->j, 0, lblk, 1, sl->bounce)) == 0)
		memcpy(buf, sl->bounce, sl->fs->vol.block_bytes);
	return rc;
}

static int
slot_write(void *arg, uint64_t blkno, const uint8_t *buf)
{
	struct slot_log *sl = arg;

	/* Whatever the cache holds of this block predates the replay. */
	block_forget(sl->fs, blkno);
	memcpy(sl->bounce, buf, sl->fs->vol.block_bytes);
	return block_io(sl->fs, 1, blkno, 1, sl->bounce);
}

int
recovery_replay_slot(struct fsd *fs, int slot, unsigned *replayed, char *err, size_t errlen)
{
	static const struct jbd2_log_ops ops = { slot_read, slot_write };
	struct jbd2_replay_result res;
	struct slot_log sl;
	struct fsd_buf *b;
	char why[160];
	uint32_t flags;
	int rc;

	*replayed = 0;
	if ((rc = block_read(fs, fs->slots[slot].journal, BLK_INODE, &b)) != 0) {
		snprintf(err, errlen, "journal:%04d is unreadable", slot);
		return -1;
	}
	flags = LE32(((const struct ocfs2_dinode *)b->data)->id1.journal1.ij_flags);
	block_put(fs, b);
	if (!(flags & OCFS2_JOURNAL_DIRTY_FL))
		return 0;
	memset(&sl, 0, sizeof(sl));
	sl.fs = fs;
	if (journal_open(fs, slot, &sl.j, err, errlen) == -1)
		return -1;
	if ((sl.bounce = volume_alloc(fs->vol.block_bytes)) == NULL)
		fatal("out of memory");
	rc = jbd2_replay(journal_info(sl.j), &ops, &sl, fs->nblocks, &res, why, sizeof(why));
	if (rc == 0 && fdatasync(fs->vol.fd) == -1)
		rc = -errno;
	free(sl.bounce);
	if (rc != 0) {
		snprintf(err, errlen, "replaying journal:%04d failed: %s", slot, why);
		journal_close(sl.j);
		return -1;
	}
	/* Log empty, then clean: a crash in between just replays again. */
	rc = 0;
	if (journal_info(sl.j)->start != 0) {
		struct jbd2_info ji = *journal_info(sl.j);
		uint8_t *sb = volume_alloc(fs->vol.block_bytes);

		if (sb == NULL)
			fatal("out of memory");
		ji.start = 0;
		ji.sequence = res.next_sequence;
		if ((rc = journal_io(sl.j, 0, 0, 1, sb)) == 0) {
			jbd2_write_super(sb, &ji);
			rc = journal_io(sl.j, 1, 0, 1, sb);
		}
		if (rc == 0 && fdatasync(fs->vol.fd) == -1)
			rc = -errno;
		free(sb);
	}
	journal_close(sl.j);
	if (rc == 0)
		rc = journal_set_dirty(fs, fs->slots[slot].journal, 0, 1);
	if (rc != 0) {
		snprintf(err, errlen, "journal:%04d: %s", slot, strerror(-rc));
		return -1;
	}
	log_info("journal:%04d: replayed %u transactions (%u blocks)", slot,
	    res.transactions, res.blocks);
	*replayed = res.transactions;
	return 0;
}
