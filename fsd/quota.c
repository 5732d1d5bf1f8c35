/*
 * Disk quotas (usrquota, grpquota; doc/quota.md). What fsck.ocfs2
 * recomputes is the truth kept here: an id's space is the sum of i_clusters
 * of the inodes it owns, in bytes, and its inodes their count (the root
 * directory included, other system files not; libocfs2/quota.c,
 * ocfs2_compute_quota_usage).
 *
 * A handle notes its usage changes (quota_charge) and, when it ends, adds
 * them to the global quota files under their META locks, in the same
 * transaction as the change itself (quota_apply): a crash or a dead node
 * leaves the files exact once its journal is replayed. fsd leaves nothing
 * in the per-slot local quota files; what a crashed kernel node left there
 * a read-write mount moves into the global files (quota_recover_local).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "util.h"
#include "fsd.h"

struct quota_delta {
	int		 type;
	uint32_t	 id;
	int64_t		 space;		/* bytes */
	int64_t		 inodes;
	uint32_t	 release;	/* references of dead kernel nodes to drop (use_count) */
};

/* Does d change anything in the global file? */
static int
delta_pending(const struct quota_delta *d, int type)
{
	return d->type == type && (d->space != 0 || d->inodes != 0 || d->release != 0);
}

static const char *const qfile_names[FSD_MAXQUOTAS] = { "aquota.user", "aquota.group" };
static const uint32_t qfile_magics[FSD_MAXQUOTAS] = OCFS2_GLOBAL_QMAGICS;
static const uint32_t local_magics[FSD_MAXQUOTAS] = OCFS2_LOCAL_QMAGICS;
static const uint32_t qfile_features[FSD_MAXQUOTAS] = {
	OCFS2_FEATURE_RO_COMPAT_USRQUOTA, OCFS2_FEATURE_RO_COMPAT_GRPQUOTA
};

/* Limits are checked with the rights of this thread's FUSE caller; 0: root. */
static __thread uint32_t caller_uid;

void
quota_set_caller(uint32_t uid)
{
	caller_uid = uid;
}

int
quota_enabled(const struct fsd *fs)
{
	return fs->quota[FSD_USRQUOTA].ino != 0 || fs->quota[FSD_GRPQUOTA].ino != 0;
}

/* One global file opened under its lock: its inode and header block. */
struct qfile {
	struct fsd_quota *q;
	int		  type;
	struct fsd_buf	 *ib, *hb;
	struct ocfs2_global_disk_dqinfo *info;
	uint32_t	  blocks;	/* dqi_blocks */
};

static int
qfile_corrupt(struct fsd *fs, uint64_t blkno, const char *what, int type)
{
	char why[160];

	snprintf(why, sizeof(why), "global %s quota file: %s",
	    type == FSD_USRQUOTA ? "user" : "group", what);
	fsd_corrupt(fs, blkno, why);
	return -EIO;
}

/* File block blk of the open quota file (referenced). */
static int
qfile_block(struct fsd *fs, struct qfile *qf, uint32_t blk, struct fsd_buf **bp)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)qf->ib->data;
	struct fsd_extent ex;
	int rc;

	if (blk >= qf->blocks)
		return qfile_corrupt(fs, qf->q->ino, "a reference past the file's blocks",
		    qf->type);
	if ((rc = extent_map(fs, qf->q->ino, &di->id2.i_list, blk, &ex)) != 0)
		return rc;
	if (ex.pblk == 0)
		return qfile_corrupt(fs, qf->q->ino, "a hole inside the file", qf->type);
	return block_read_owned(fs, ex.pblk, BLK_QUOTA, qf->q->ino, bp);
}

static void
qfile_close(struct fsd *fs, struct qfile *qf)
{
	if (qf->hb != NULL)
		block_put(fs, qf->hb);
	if (qf->ib != NULL)
		block_put(fs, qf->ib);
	qf->hb = qf->ib = NULL;
}

/* The file's inode and header, checked as fsck.ocfs2's pass 5 checks them. */
static int
qfile_open(struct fsd *fs, int type, struct qfile *qf)
{
	const struct ocfs2_disk_dqheader *hdr;
	const struct ocfs2_dinode *di;
	uint32_t want = OCFS2_VALID_FL | OCFS2_SYSTEM_FL | OCFS2_QUOTA_FL;
	unsigned bs = fs->vol.block_bytes;
	int rc;

	memset(qf, 0, sizeof(*qf));
	qf->q = &fs->quota[type];
	qf->type = type;
	if ((rc = block_read_owned(fs, qf->q->ino, BLK_INODE, qf->q->ino, &qf->ib)) != 0)
		return rc;
	di = (const struct ocfs2_dinode *)qf->ib->data;
	if ((LE32(di->i_flags) & want) != want || LE64(di->i_size) % bs != 0 ||
	    LE64(di->i_size) / bs > ((uint64_t)LE32(di->i_clusters) << (fs->cbits - fs->bbits))) {
		qfile_close(fs, qf);
		return qfile_corrupt(fs, qf->q->ino, "not a quota file, or a size beyond its "
		    "clusters", type);
	}
	qf->blocks = (uint32_t)(LE64(di->i_size) / bs);
	if (qf->blocks <= QT_TREEOFF) {
		qfile_close(fs, qf);
		return qfile_corrupt(fs, qf->q->ino, "no tree root", type);
	}
	if ((rc = qfile_block(fs, qf, 0, &qf->hb)) != 0) {
		qfile_close(fs, qf);
		return rc;
	}
	hdr = (const struct ocfs2_disk_dqheader *)qf->hb->data;
	qf->info = (struct ocfs2_global_disk_dqinfo *)(qf->hb->data + OCFS2_GLOBAL_INFO_OFF);
	if (LE32(hdr->dqh_magic) != qfile_magics[type] || LE32(hdr->dqh_version) != 0 ||
	    LE32(qf->info->dqi_blocks) != qf->blocks ||
	    LE32(qf->info->dqi_free_blk) >= qf->blocks ||
	    LE32(qf->info->dqi_free_entry) >= qf->blocks) {
		rc = qfile_corrupt(fs, qf->hb->blkno, "bad magic, version or block counts", type);
		qfile_close(fs, qf);
		return rc;
	}
	return 0;
}

/* A tree reference read from block at: 0 (none) or a block of the file. */
static int
qfile_ref(struct fsd *fs, struct qfile *qf, const struct fsd_buf *at, unsigned idx,
    uint32_t *ref)
{
	*ref = LE32(((const __le32 *)at->data)[idx]);
	if (*ref != 0 && (*ref <= QT_TREEOFF || *ref >= qf->blocks))
		return qfile_corrupt(fs, at->blkno, "a tree reference out of the file", qf->type);
	return 0;
}

/*
 * id's entry: 0 with its block (referenced) and index, 1 when the tree
 * has none, or -errno.
 */
static int
qfile_find(struct fsd *fs, struct qfile *qf, uint32_t id, struct fsd_buf **bp, unsigned *idx)
{
	unsigned bs = fs->vol.block_bytes;
	int depth, i, rc;
	uint64_t blk = QT_TREEOFF;
	uint32_t ref;
	struct fsd_buf *b;

	for (depth = 0; depth < qtree_depth(bs); depth++) {
		if ((rc = qfile_block(fs, qf, (uint32_t)blk, &b)) != 0)
			return rc;
		rc = qfile_ref(fs, qf, b, qtree_index(bs, id, depth), &ref);
		block_put(fs, b);
		if (rc != 0)
			return rc;
		if (ref == 0)
			return 1;
		blk = ref;
	}
	if ((rc = qfile_block(fs, qf, (uint32_t)blk, &b)) != 0)
		return rc;
	if ((i = qtree_leaf_find(b->data, bs, id)) < 0) {
		blk = b->blkno;
		block_put(fs, b);
		return qfile_corrupt(fs, blk, "a leaf referenced for an id lacks its entry",
		    qf->type);
	}
	*bp = b;
	*idx = (unsigned)i;
	return 0;
}

/* A leaf header's free-list links. */
static struct qt_disk_dqdbheader *
leaf_header(struct fsd_buf *b)
{
	return (struct qt_disk_dqdbheader *)b->data;
}

/*
 * A block for the tree or a new leaf, zeroed and accessed in h: the
 * first of the free-block list, or one more at the file's end (a cluster
 * more from our local alloc when its clusters are used up).
 */
static int
qfile_new_block(struct fsd_handle *h, struct qfile *qf, uint32_t *blkp, struct fsd_buf **bp)
{
	struct fsd *fs = h->fs;
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)qf->ib->data;
	unsigned bs = fs->vol.block_bytes, got;
	uint32_t blk = LE32(qf->info->dqi_free_blk), start;
	struct fsd_extent ex;
	int rc;

	if ((rc = journal_access(h, qf->hb)) != 0)
		return rc;
	if (blk != 0) {
		if ((rc = qfile_block(fs, qf, blk, bp)) != 0)
			return rc;
		qf->info->dqi_free_blk = leaf_header(*bp)->dqdh_next_free;
	} else {
		if ((rc = journal_access(h, qf->ib)) != 0)
			return rc;
		blk = qf->blocks;
		if ((uint64_t)blk >= ((uint64_t)LE32(di->i_clusters) << (fs->cbits - fs->bbits))) {
			if ((rc = la_claim(h, 0, 1, 1, &start, &got)) != 0 ||
			    (rc = extent_append(h, qf->ib, LE32(di->i_clusters),
			    (uint64_t)start << (fs->cbits - fs->bbits), 1)) != 0)
				return rc;
		}
		if ((rc = extent_map(fs, qf->q->ino, &di->id2.i_list, blk, &ex)) != 0)
			return rc;
		if (ex.pblk == 0)
			return qfile_corrupt(fs, qf->q->ino, "a hole inside the file", qf->type);
		if ((rc = block_new_owned(fs, ex.pblk, BLK_QUOTA, qf->q->ino, bp)) != 0)
			return rc;
		qf->blocks++;
		qf->info->dqi_blocks = htole32(qf->blocks);
		di->i_size = htole64((uint64_t)qf->blocks * bs);
		journal_dirty(h, qf->ib);
	}
	journal_dirty(h, qf->hb);
	if ((rc = journal_access(h, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	memset((*bp)->data, 0, bs);
	journal_dirty(h, *bp);
	*blkp = blk;
	return 0;
}

/* Leaf blk of qf (b's neighbour in the free list) gets its prev or next link set to to. */
static int
qfile_set_link(struct fsd_handle *h, struct qfile *qf, struct fsd_buf *b, uint32_t blk,
    int prev_link, uint32_t to)
{
	struct qt_disk_dqdbheader *oh;
	struct fsd_buf *o;
	int rc;

	if (blk >= qf->blocks)
		return qfile_corrupt(h->fs, b->blkno, "a free-entry link out of the file", qf->type);
	if ((rc = qfile_block(h->fs, qf, blk, &o)) != 0)
		return rc;
	if ((rc = journal_access(h, o)) == 0) {
		oh = leaf_header(o);
		if (prev_link)
			oh->dqdh_prev_free = htole32(to);
		else
			oh->dqdh_next_free = htole32(to);
		journal_dirty(h, o);
	}
	block_put(h->fs, o);
	return rc;
}

/* Leaf blk (b) is full: out of the list of leaves with a free entry. */
static int
qfile_unlink_leaf(struct fsd_handle *h, struct qfile *qf, struct fsd_buf *b)
{
	struct qt_disk_dqdbheader *dh = leaf_header(b);
	uint32_t next = LE32(dh->dqdh_next_free), prev = LE32(dh->dqdh_prev_free);
	int rc;

	if (next != 0 && (rc = qfile_set_link(h, qf, b, next, 1, prev)) != 0)
		return rc;
	if (prev != 0) {
		if ((rc = qfile_set_link(h, qf, b, prev, 0, next)) != 0)
			return rc;
	} else {
		if ((rc = journal_access(h, qf->hb)) != 0)
			return rc;
		qf->info->dqi_free_entry = htole32(next);
		journal_dirty(h, qf->hb);
	}
	dh->dqdh_next_free = dh->dqdh_prev_free = 0;
	return 0;
}

/* A free entry for a new id: in the first leaf with room, or a new leaf. */
static int
qfile_free_entry(struct fsd_handle *h, struct qfile *qf, uint32_t *blkp, struct fsd_buf **bp,
    unsigned *idx)
{
	struct fsd *fs = h->fs;
	unsigned bs = fs->vol.block_bytes;
	uint32_t blk = LE32(qf->info->dqi_free_entry);
	struct qt_disk_dqdbheader *dh;
	int rc, i;

	if (blk != 0) {
		if ((rc = qfile_block(fs, qf, blk, bp)) != 0)
			return rc;
		if ((rc = journal_access(h, *bp)) != 0) {
			block_put(fs, *bp);
			return rc;
		}
	} else {
		if ((rc = qfile_new_block(h, qf, &blk, bp)) != 0)
			return rc;
		qf->info->dqi_free_entry = htole32(blk);
	}
	dh = leaf_header(*bp);
	if (LE16(dh->dqdh_entries) + 1u >= qtree_entries_per_leaf(bs) &&
	    (rc = qfile_unlink_leaf(h, qf, *bp)) != 0) {
		block_put(fs, *bp);
		return rc;
	}
	if ((i = qtree_leaf_free_slot((*bp)->data, bs)) < 0) {
		block_put(fs, *bp);
		return qfile_corrupt(fs, (*bp)->blkno, "a leaf on the free-entry list is full",
		    qf->type);
	}
	dh->dqdh_entries = htole16((uint16_t)(LE16(dh->dqdh_entries) + 1));
	journal_dirty(h, *bp);
	*blkp = blk;
	*idx = (unsigned)i;
	return 0;
}

/* A new entry for id, its references made along the tree (as ocfs2_insert_qtree). */
static int
qfile_insert(struct fsd_handle *h, struct qfile *qf, uint32_t id, struct fsd_buf **bp,
    unsigned *idx)
{
	struct fsd *fs = h->fs;
	unsigned bs = fs->vol.block_bytes, at;
	uint32_t blk = QT_TREEOFF, ref;
	struct ocfs2_global_disk_dqblk *e;
	struct fsd_buf *tb, *nb;
	int depth, last = qtree_depth(bs) - 1, rc;

	*bp = NULL;
	for (depth = 0; depth <= last; depth++) {
		if ((rc = qfile_block(fs, qf, blk, &tb)) != 0)
			return rc;
		at = qtree_index(bs, id, depth);
		if ((rc = qfile_ref(fs, qf, tb, at, &ref)) != 0)
			goto put;
		if (ref != 0 && depth == last) {
			rc = qfile_corrupt(fs, tb->blkno,
			    "an id's leaf reference without its entry", qf->type);
			goto put;
		}
		if (ref == 0) {
			if (depth == last)
				rc = qfile_free_entry(h, qf, &ref, bp, idx);
			else if ((rc = qfile_new_block(h, qf, &ref, &nb)) == 0)
				block_put(fs, nb);
			if (rc == 0 && (rc = journal_access(h, tb)) == 0) {
				((__le32 *)tb->data)[at] = htole32(ref);
				journal_dirty(h, tb);
			}
		}
put:
		block_put(fs, tb);
		if (rc != 0) {
			if (*bp != NULL)
				block_put(fs, *bp);
			return rc;
		}
		blk = ref;
	}
	e = qtree_leaf_entry((*bp)->data, *idx);
	memset(e, 0, sizeof(*e));
	e->dqb_id = htole32(id);
	qtree_entry_keep_used(e);
	journal_dirty(h, *bp);
	return 0;
}

/* ---- limits and usage -------------------------------------------------- */

static struct quota_delta *
delta_of(struct fsd_handle *h, int type, uint32_t id)
{
	unsigned i;

	for (i = 0; i < h->nqd; i++)
		if (h->qd[i].type == type && h->qd[i].id == id)
			return &h->qd[i];
	if (h->nqd == h->qd_cap) {
		h->qd_cap = h->qd_cap ? 2 * h->qd_cap : 4;
		h->qd = xrealloc(h->qd, h->qd_cap * sizeof(*h->qd));
	}
	h->qd[h->nqd] = (struct quota_delta){ type, id, 0, 0, 0 };
	return &h->qd[h->nqd++];
}

/*
 * Would usage + more pass a limit, as the kernel's dquot checks it
 * (fs/quota/dquot.c, check_idq and check_bdq)? A soft limit only once its
 * grace time, started when usage first went past it, is over.
 */
static int
over_limit(uint64_t usage, int64_t more, uint64_t hard, uint64_t soft, uint64_t grace_end)
{
	uint64_t want = (int64_t)usage + more < 0 ? 0 : (uint64_t)((int64_t)usage + more);

	if (more <= 0)
		return 0;
	if (hard != 0 && want > hard)
		return 1;
	return soft != 0 && want > soft && grace_end != 0 && (uint64_t)time(NULL) >= grace_end;
}

/*
 * May id of type grow by space bytes and inodes now, with what h already
 * noted for it? Read under the file's lock at PR, not kept: the check is
 * as good as the kernel's across nodes, whose local usage reaches the
 * global file only at the next sync. Not waiting inside the handle for a
 * dead node's recovery, which may need a lock the handle holds: -ENOSPC
 * then, and the operation runs again once the lock came
 * (handle_lock_or_restart, doc/allocation.md).
 */
static int
quota_check(struct fsd_handle *h, int type, uint32_t id, int64_t space, int64_t inodes)
{
	struct fsd *fs = h->fs;
	struct fsd_quota *q = &fs->quota[type];
	const struct ocfs2_global_disk_dqblk *e;
	const struct quota_delta *d;
	struct fsd_buf *b;
	struct qfile qf;
	unsigned idx;
	int rc, over = 0;

	if (q->ino == 0 || caller_uid == 0 || (space <= 0 && inodes <= 0))
		return 0;
	d = delta_of(h, type, id);
	if ((rc = lockres_lock_flags(fs, q->lock, LKM_PR, LKF_NORECOWAIT)) != 0)
		return rc == -EAGAIN ? handle_restart_for(h, q->lock) : rc;
	if ((rc = qfile_open(fs, type, &qf)) == 0) {
		if ((rc = qfile_find(fs, &qf, id, &b, &idx)) == 0) {
			e = qtree_leaf_entry(b->data, idx);
			over = over_limit(LE64(e->dqb_curspace), d->space + space,
			    LE64(e->dqb_bhardlimit), LE64(e->dqb_bsoftlimit), LE64(e->dqb_btime)) ||
			    over_limit(LE64(e->dqb_curinodes), d->inodes + inodes,
			    LE64(e->dqb_ihardlimit), LE64(e->dqb_isoftlimit), LE64(e->dqb_itime));
			block_put(fs, b);
		} else if (rc == 1)
			rc = 0;
		qfile_close(fs, &qf);
	}
	lockres_unlock(fs, q->lock, LKM_PR);
	if (rc != 0)
		return rc;
	return over ? -EDQUOT : 0;
}

/* Is this inode counted (fsck's rule: system files but the root are not)? */
static int
counted(const struct fsd *fs, const struct ocfs2_dinode *di, uint64_t blkno)
{
	return !(LE32(di->i_flags) & OCFS2_SYSTEM_FL) || blkno == fs->root_blkno;
}

int
quota_charge(struct fsd_handle *h, const struct ocfs2_dinode *di, uint64_t blkno,
    int64_t clusters, int64_t inodes)
{
	struct fsd *fs = h->fs;
	int64_t space = clusters * ((int64_t)1 << fs->cbits);
	uint32_t ids[FSD_MAXQUOTAS] = { LE32(di->i_uid), LE32(di->i_gid) };
	struct quota_delta *d;
	int type, rc;

	if (!quota_enabled(fs) || !counted(fs, di, blkno))
		return 0;
	for (type = 0; type < FSD_MAXQUOTAS; type++)
		if ((rc = quota_check(h, type, ids[type], space, inodes)) != 0)
			return rc;
	for (type = 0; type < FSD_MAXQUOTAS; type++) {
		if (fs->quota[type].ino == 0)
			continue;
		d = delta_of(h, type, ids[type]);
		d->space += space;
		d->inodes += inodes;
	}
	return 0;
}

int
quota_transfer(struct fsd_handle *h, const struct ocfs2_dinode *di, uint64_t blkno,
    uint32_t uid, uint32_t gid)
{
	struct fsd *fs = h->fs;
	int64_t space = (int64_t)LE32(di->i_clusters) << fs->cbits;
	uint32_t from[FSD_MAXQUOTAS] = { LE32(di->i_uid), LE32(di->i_gid) };
	uint32_t to[FSD_MAXQUOTAS] = { uid, gid };
	struct quota_delta *d;
	int type, rc;

	if (!quota_enabled(fs) || !counted(fs, di, blkno))
		return 0;
	for (type = 0; type < FSD_MAXQUOTAS; type++)
		if (from[type] != to[type] &&
		    (rc = quota_check(h, type, to[type], space, 1)) != 0)
			return rc;
	for (type = 0; type < FSD_MAXQUOTAS; type++) {
		if (fs->quota[type].ino == 0 || from[type] == to[type])
			continue;
		d = delta_of(h, type, to[type]);
		d->space += space;
		d->inodes++;
		d = delta_of(h, type, from[type]);
		d->space -= space;
		d->inodes--;
	}
	return 0;
}

/* usage + delta, never below 0 (a file fsck rebuilt or another writer's drift). */
static uint64_t
add_usage(uint64_t usage, int64_t delta, int *under)
{
	if (delta < 0 && (uint64_t)-delta > usage) {
		*under = 1;
		return 0;
	}
	return (uint64_t)((int64_t)usage + delta);
}

/* A grace time starts when usage first goes past the soft limit, ends below it. */
static __le64
grace_after(uint64_t usage, uint64_t soft, __le64 grace_end, uint32_t grace)
{
	if (soft == 0 || usage <= soft)
		return 0;
	if (grace_end != 0)
		return grace_end;
	return htole64((uint64_t)time(NULL) + grace);
}

static int
apply_one(struct fsd_handle *h, struct qfile *qf, const struct quota_delta *d)
{
	struct fsd *fs = h->fs;
	struct ocfs2_global_disk_dqblk *e;
	struct fsd_buf *b;
	unsigned idx;
	int rc, under = 0;

	if ((rc = qfile_find(fs, qf, d->id, &b, &idx)) == 1)
		rc = qfile_insert(h, qf, d->id, &b, &idx);
	if (rc != 0)
		return rc;
	if ((rc = journal_access(h, b)) == 0) {
		e = qtree_leaf_entry(b->data, idx);
		e->dqb_curspace = htole64(add_usage(LE64(e->dqb_curspace), d->space, &under));
		e->dqb_curinodes = htole64(add_usage(LE64(e->dqb_curinodes), d->inodes, &under));
		e->dqb_use_count = htole32(LE32(e->dqb_use_count) > d->release ?
		    LE32(e->dqb_use_count) - d->release : 0);
		e->dqb_btime = grace_after(LE64(e->dqb_curspace), LE64(e->dqb_bsoftlimit),
		    e->dqb_btime, LE32(qf->info->dqi_bgrace));
		e->dqb_itime = grace_after(LE64(e->dqb_curinodes), LE64(e->dqb_isoftlimit),
		    e->dqb_itime, LE32(qf->info->dqi_igrace));
		qtree_entry_keep_used(e);
		journal_dirty(h, b);
		if (under)
			log_warnx("%s quota of id %" PRIu32 ": usage would go below 0; kept "
			    "at 0 (fsck.ocfs2 recomputes it)",
			    qf->type == FSD_USRQUOTA ? "user" : "group", d->id);
	}
	block_put(fs, b);
	return rc;
}

int
quota_apply(struct fsd_handle *h)
{
	struct fsd *fs = h->fs;
	struct qfile qf;
	unsigned i;
	int type, rc = 0;

	for (type = 0; type < FSD_MAXQUOTAS && rc == 0; type++) {
		for (i = 0; i < h->nqd && !delta_pending(&h->qd[i], type); i++)
			;
		if (i == h->nqd)
			continue;
		if ((rc = handle_lock_alloc(h, fs->quota[type].lock)) != 0 ||
		    (rc = qfile_open(fs, type, &qf)) != 0)
			break;
		for (; i < h->nqd && rc == 0; i++)
			if (delta_pending(&h->qd[i], type))
				rc = apply_one(h, &qf, &h->qd[i]);
		qfile_close(fs, &qf);
	}
	quota_discard(h);
	return rc;
}

void
quota_discard(struct fsd_handle *h)
{
	free(h->qd);
	h->qd = NULL;
	h->nqd = h->qd_cap = 0;
}

int
quota_mount(struct fsd *fs, char *err, size_t errlen)
{
	struct fsd_buf *b;
	struct qfile qf;
	int type, rc;

	for (type = 0; type < FSD_MAXQUOTAS; type++) {
		if (!(fs->vol.ro_compat & qfile_features[type]))
			continue;
		if ((rc = block_read(fs, fs->sysdir_blkno, BLK_INODE, &b)) != 0) {
			snprintf(err, errlen, "the system directory is unreadable");
			return -1;
		}
		rc = dir_lookup(fs, (const struct ocfs2_dinode *)b->data, qfile_names[type],
		    strlen(qfile_names[type]), &fs->quota[type].ino);
		block_put(fs, b);
		if (rc != 0) {
			snprintf(err, errlen, "system file %s: %s", qfile_names[type],
			    rc == -ENOENT ? "missing" : strerror(-rc));
			return -1;
		}
		fs->quota[type].lock = sysinode_lockres(fs, fs->quota[type].ino);
		if ((rc = lockres_lock(fs, fs->quota[type].lock, LKM_PR)) != 0) {
			snprintf(err, errlen, "%s: cluster lock: %s", qfile_names[type],
			    strerror(-rc));
			return -1;
		}
		rc = qfile_open(fs, type, &qf);
		qfile_close(fs, &qf);
		lockres_unlock(fs, fs->quota[type].lock, LKM_PR);
		if (rc != 0) {
			snprintf(err, errlen, "%s (inode %" PRIu64 ") is corrupt: %s",
			    qfile_names[type], fs->quota[type].ino, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* ---- what o2ctl quota asks (ctl.c) ------------------------------------- */

/* A change of type's global file by o2ctl: a handle of its own, the file under its lock. */
static int
qfile_edit_start(struct fsd *fs, int type, struct fsd_handle *h, struct qfile *qf)
{
	int rc;

	if (type < 0 || type >= FSD_MAXQUOTAS || fs->quota[type].ino == 0)
		return -ENOTSUP;
	if ((rc = journal_start(fs, h)) != 0)
		return rc;
	if ((rc = handle_lock_alloc(h, fs->quota[type].lock)) != 0 ||
	    (rc = qfile_open(fs, type, qf)) != 0)
		journal_stop(h, 1);
	return rc;
}

int
quota_set_limits(struct fsd *fs, int type, uint32_t id, unsigned mask,
    const struct quota_entry *lim)
{
	struct ocfs2_global_disk_dqblk *e;
	struct fsd_handle h;
	struct fsd_buf *b;
	struct qfile qf;
	unsigned idx;
	int rc;

	if ((rc = qfile_edit_start(fs, type, &h, &qf)) != 0)
		return rc;
	if ((rc = qfile_find(fs, &qf, id, &b, &idx)) == 1)
		rc = qfile_insert(&h, &qf, id, &b, &idx);
	if (rc == 0) {
		if ((rc = journal_access(&h, b)) == 0) {
			e = qtree_leaf_entry(b->data, idx);
			if (mask & QUOTA_SET_BSOFT)
				e->dqb_bsoftlimit = htole64(lim->bsoft);
			if (mask & QUOTA_SET_BHARD)
				e->dqb_bhardlimit = htole64(lim->bhard);
			if (mask & QUOTA_SET_ISOFT)
				e->dqb_isoftlimit = htole64(lim->isoft);
			if (mask & QUOTA_SET_IHARD)
				e->dqb_ihardlimit = htole64(lim->ihard);
			/* a new soft limit already passed starts its grace now */
			e->dqb_btime = grace_after(LE64(e->dqb_curspace), LE64(e->dqb_bsoftlimit),
			    e->dqb_btime, LE32(qf.info->dqi_bgrace));
			e->dqb_itime = grace_after(LE64(e->dqb_curinodes), LE64(e->dqb_isoftlimit),
			    e->dqb_itime, LE32(qf.info->dqi_igrace));
			qtree_entry_keep_used(e);
			journal_dirty(&h, b);
		}
		block_put(fs, b);
	}
	qfile_close(fs, &qf);
	if (journal_stop(&h, rc != 0) != 0 && rc == 0)
		rc = -EIO;
	return rc;
}

int
quota_set_grace(struct fsd *fs, int type, unsigned mask, uint32_t bgrace, uint32_t igrace)
{
	struct fsd_handle h;
	struct qfile qf;
	int rc;

	if ((rc = qfile_edit_start(fs, type, &h, &qf)) != 0)
		return rc;
	/* grace times running keep their end, as the kernel's do */
	if ((rc = journal_access(&h, qf.hb)) == 0) {
		if (mask & QUOTA_SET_BGRACE)
			qf.info->dqi_bgrace = htole32(bgrace);
		if (mask & QUOTA_SET_IGRACE)
			qf.info->dqi_igrace = htole32(igrace);
		journal_dirty(&h, qf.hb);
	}
	qfile_close(fs, &qf);
	if (journal_stop(&h, rc != 0) != 0 && rc == 0)
		rc = -EIO;
	return rc;
}

struct report {
	struct quota_entry *v;
	size_t		 n, cap;
	uint8_t		*seen;		/* leaves listed already (ids share them) */
};

static void
report_leaf(struct fsd *fs, int type, uint8_t *leaf, struct report *r)
{
	unsigned i, n = qtree_entries_per_leaf(fs->vol.block_bytes);
	const struct ocfs2_global_disk_dqblk *e;

	for (i = 0; i < n; i++) {
		e = qtree_leaf_entry(leaf, i);
		if (qtree_entry_unused(e))
			continue;
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 32;
			r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
		}
		r->v[r->n++] = (struct quota_entry){
			.type = type, .id = LE32(e->dqb_id),
			.space = LE64(e->dqb_curspace), .inodes = LE64(e->dqb_curinodes),
			.bsoft = LE64(e->dqb_bsoftlimit), .bhard = LE64(e->dqb_bhardlimit),
			.isoft = LE64(e->dqb_isoftlimit), .ihard = LE64(e->dqb_ihardlimit),
			.btime = LE64(e->dqb_btime),
			/* the mark that keeps an empty id 0 in use is no grace time */
			.itime = LE64(e->dqb_isoftlimit) ? LE64(e->dqb_itime) : 0,
		};
	}
}

static int
report_tree(struct fsd *fs, struct qfile *qf, uint32_t blk, int depth, struct report *r)
{
	unsigned i, epb = qtree_refs_per_block(fs->vol.block_bytes);
	struct fsd_buf *b;
	uint32_t ref;
	int rc;

	if ((rc = qfile_block(fs, qf, blk, &b)) != 0)
		return rc;
	if (depth == qtree_depth(fs->vol.block_bytes)) {
		report_leaf(fs, qf->type, b->data, r);
		block_put(fs, b);
		return 0;
	}
	for (i = 0, rc = 0; i < epb && rc == 0; i++) {
		if ((rc = qfile_ref(fs, qf, b, i, &ref)) != 0 || ref == 0)
			continue;
		if (depth + 1 == qtree_depth(fs->vol.block_bytes)) {
			if (r->seen[ref / 8] & (1u << (ref % 8)))
				continue;
			r->seen[ref / 8] |= (uint8_t)(1u << (ref % 8));
		}
		rc = report_tree(fs, qf, ref, depth + 1, r);
	}
	block_put(fs, b);
	return rc;
}

static int
by_type_id(const void *a, const void *b)
{
	const struct quota_entry *x = a, *y = b;

	if (x->type != y->type)
		return x->type - y->type;
	return x->id < y->id ? -1 : x->id > y->id;
}

int
quota_report(struct fsd *fs, struct quota_entry **out, size_t *n, uint32_t *bgrace,
    uint32_t *igrace)
{
	struct report r = { 0 };
	struct qfile qf;
	int type, rc = 0, graced = 0;

	if (!quota_enabled(fs))
		return -ENOTSUP;
	for (type = 0; type < FSD_MAXQUOTAS && rc == 0; type++) {
		if (fs->quota[type].ino == 0)
			continue;
		if ((rc = lockres_lock(fs, fs->quota[type].lock, LKM_PR)) != 0)
			break;
		if ((rc = qfile_open(fs, type, &qf)) == 0) {
			if (!graced) {
				*bgrace = LE32(qf.info->dqi_bgrace);
				*igrace = LE32(qf.info->dqi_igrace);
				graced = 1;
			}
			r.seen = xcalloc((qf.blocks + 7) / 8, 1);
			rc = report_tree(fs, &qf, QT_TREEOFF, 0, &r);
			free(r.seen);
			qfile_close(fs, &qf);
		}
		lockres_unlock(fs, fs->quota[type].lock, LKM_PR);
	}
	if (rc != 0) {
		free(r.v);
		return rc;
	}
	qsort(r.v, r.n, sizeof(*r.v), by_type_id);
	*out = r.v;
	*n = r.n;
	return 0;
}

/* ---- local quota files a kernel node left dirty ------------------------ */

/*
 * A local quota file (fs/ocfs2/quota_local.c): block 0 the header and
 * info, then chunks, each a header block (free count and bitmap) and
 * the blocks of its entries; bit b of a chunk is entry b % per_block of
 * its block 1 + b / per_block.
 */
static unsigned
lq_per_block(unsigned bs)
{
	return (bs - OCFS2_QBLK_RESERVED_SPACE) / sizeof(struct ocfs2_local_disk_dqblk);
}

static unsigned
lq_chunk_blocks(unsigned bs)
{
	return (unsigned)((bs - sizeof(struct ocfs2_local_disk_chunk) -
	    OCFS2_QBLK_RESERVED_SPACE) * 8) / lq_per_block(bs);
}

/* Block blk of the locked system file ino (ib its inode), referenced. */
static int
sysfile_block(struct fsd *fs, struct fsd_buf *ib, uint32_t blk, struct fsd_buf **bp)
{
	const struct ocfs2_dinode *di = (const struct ocfs2_dinode *)ib->data;
	struct fsd_extent ex;
	int rc;

	if ((uint64_t)blk >= LE64(di->i_size) >> fs->bbits) {
		fsd_corrupt(fs, ib->blkno, "local quota file: a block past its size");
		return -EIO;
	}
	if ((rc = extent_map(fs, ib->blkno, &di->id2.i_list, blk, &ex)) != 0)
		return rc;
	if (ex.pblk == 0) {
		fsd_corrupt(fs, ib->blkno, "local quota file: a hole");
		return -EIO;
	}
	return block_read_owned(fs, ex.pblk, BLK_QUOTA, ib->blkno, bp);
}

/* Chunk c's entries in use, noted in h as deltas, their bits cleared. */
static int
lq_recover_chunk(struct fsd_handle *h, int type, struct fsd_buf *ib, uint32_t c,
    unsigned *moved)
{
	struct fsd *fs = h->fs;
	unsigned bs = fs->vol.block_bytes, per = lq_per_block(bs), bit;
	uint32_t first = 1 + (lq_chunk_blocks(bs) + 1) * c;
	const struct ocfs2_local_disk_dqblk *e;
	struct ocfs2_local_disk_chunk *ch;
	struct quota_delta *d;
	struct fsd_buf *hb, *eb;
	int rc;

	if ((rc = sysfile_block(fs, ib, first, &hb)) != 0)
		return rc;
	ch = (struct ocfs2_local_disk_chunk *)hb->data;
	for (bit = 0; bit < lq_chunk_blocks(bs) * per && rc == 0; bit++) {
		if (!(ch->dqc_bitmap[bit / 8] & (1u << (bit % 8))))
			continue;
		if ((rc = sysfile_block(fs, ib, first + 1 + bit / per, &eb)) != 0)
			break;
		e = (const struct ocfs2_local_disk_dqblk *)eb->data + bit % per;
		/* the ids are 32-bit; the deltas signed, as the kernel reads them */
		d = delta_of(h, type, (uint32_t)LE64(e->dqb_id));
		d->space += (int64_t)LE64(e->dqb_spacemod);
		d->inodes += (int64_t)LE64(e->dqb_inodemod);
		d->release++;
		block_put(fs, eb);
		if ((rc = journal_access(h, hb)) == 0) {
			ch->dqc_bitmap[bit / 8] &= (uint8_t)~(1u << (bit % 8));
			ch->dqc_free = htole32(LE32(ch->dqc_free) + 1);
			journal_dirty(h, hb);
			(*moved)++;
		}
	}
	block_put(fs, hb);
	return rc;
}

/*
 * A clean local file holds no entry: the kernel frees them all before it
 * sets OLQF_CLEAN at unmount, and clears the flag at mount. 1, 0 or -errno.
 */
static int
lq_clean(struct fsd *fs, uint64_t ino)
{
	const struct ocfs2_local_disk_dqinfo *info;
	struct fsd_buf *ib, *hb;
	int rc;

	if ((rc = block_read_owned(fs, ino, BLK_INODE, ino, &ib)) != 0)
		return rc;
	if ((rc = sysfile_block(fs, ib, 0, &hb)) == 0) {
		info = (const struct ocfs2_local_disk_dqinfo *)(hb->data + OCFS2_LOCAL_INFO_OFF);
		rc = (LE32(info->dqi_flags) & OLQF_CLEAN) != 0;
		block_put(fs, hb);
	}
	block_put(fs, ib);
	return rc;
}

/*
 * One slot's local file of type, not clean: what its entries hold goes
 * into the global file and the file is marked clean, in one transaction
 * (as the kernel's ocfs2_finish_quota_recovery does for a crashed slot).
 */
static int
lq_recover_file(struct fsd *fs, int type, uint64_t ino, unsigned *moved)
{
	struct ocfs2_local_disk_dqinfo *info;
	struct fsd_buf *ib, *hb;
	struct fsd_handle h;
	uint32_t c, chunks;
	int rc;

	if ((rc = lq_clean(fs, ino)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = journal_start(fs, &h)) != 0)
		return rc;
	if ((rc = handle_lock_sysinode(&h, ino)) != 0 ||
	    (rc = block_read_owned(fs, ino, BLK_INODE, ino, &ib)) != 0) {
		journal_stop(&h, 1);
		return rc;
	}
	if ((rc = sysfile_block(fs, ib, 0, &hb)) == 0) {
		info = (struct ocfs2_local_disk_dqinfo *)(hb->data + OCFS2_LOCAL_INFO_OFF);
		chunks = LE32(info->dqi_chunks);
		if (LE32(((const struct ocfs2_disk_dqheader *)hb->data)->dqh_magic) !=
		    local_magics[type]) {
			fsd_corrupt(fs, hb->blkno, "local quota file: bad magic");
			rc = -EIO;
		}
		for (c = 0; c < chunks && rc == 0; c++)
			rc = lq_recover_chunk(&h, type, ib, c, moved);
		if (rc == 0 && (rc = journal_access(&h, hb)) == 0) {
			info->dqi_flags = htole32(LE32(info->dqi_flags) | OLQF_CLEAN);
			journal_dirty(&h, hb);
		}
		block_put(fs, hb);
	}
	block_put(fs, ib);
	if (journal_stop(&h, rc != 0) != 0 && rc == 0)
		rc = -EIO;
	return rc;
}

int
quota_recover_local(struct fsd *fs)
{
	unsigned slot, moved;
	struct fsd_buf *b;
	uint64_t ino;
	char name[32];
	int type, rc;

	for (type = 0; type < FSD_MAXQUOTAS; type++) {
		if (fs->quota[type].ino == 0)
			continue;
		for (slot = 0; slot < fs->vol.max_slots; slot++) {
			snprintf(name, sizeof(name), "%s:%04u", qfile_names[type], slot);
			if ((rc = block_read(fs, fs->sysdir_blkno, BLK_INODE, &b)) != 0)
				return rc;
			rc = dir_lookup(fs, (const struct ocfs2_dinode *)b->data, name,
			    strlen(name), &ino);
			block_put(fs, b);
			if (rc != 0)
				return rc;
			moved = 0;
			if ((rc = lq_recover_file(fs, type, ino, &moved)) != 0)
				return rc;
			if (moved != 0)
				log_info("%s: %u ids' usage a node left unsynced moved to %s",
				    name, moved, qfile_names[type]);
		}
	}
	return 0;
}
