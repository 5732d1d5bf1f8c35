/*
 * Mount and unmount: read the superblock, refuse what we don't
 * implement by name, find the system files, and check the state the
 * volume was left in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "util.h"

#include "fsd.h"
#include "glue.h"

/* Feature names as mkfs.ocfs2 and tunefs.ocfs2 spell them. */
static const struct feature_name {
	int		 kind;	/* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t	 bit;
	const char	*name;
} feature_names[] = {
	{ 0, OCFS2_FEATURE_COMPAT_BACKUP_SB, "backup-super" },
	{ 0, OCFS2_FEATURE_COMPAT_JBD2_SB, "strict-journal-super" },
	{ 1, OCFS2_FEATURE_INCOMPAT_HEARTBEAT_DEV, "heartbeat-device" },
	{ 1, OCFS2_FEATURE_INCOMPAT_RESIZE_INPROG, "resize-in-progress" },
	{ 1, OCFS2_FEATURE_INCOMPAT_LOCAL_MOUNT, "local" },
	{ 1, OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC, "sparse" },
	{ 1, OCFS2_FEATURE_INCOMPAT_TUNEFS_INPROG, "tunefs-in-progress" },
	{ 1, OCFS2_FEATURE_INCOMPAT_INLINE_DATA, "inline-data" },
	{ 1, OCFS2_FEATURE_INCOMPAT_USERSPACE_STACK, "userspace-stack" },
	{ 1, OCFS2_FEATURE_INCOMPAT_EXTENDED_SLOT_MAP, "extended-slotmap" },
	{ 1, OCFS2_FEATURE_INCOMPAT_XATTR, "xattr" },
	{ 1, OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS, "indexed-dirs" },
	{ 1, OCFS2_FEATURE_INCOMPAT_META_ECC, "metaecc" },
	{ 1, OCFS2_FEATURE_INCOMPAT_REFCOUNT_TREE, "refcount" },
	{ 1, OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG, "discontig-bg" },
	{ 1, OCFS2_FEATURE_INCOMPAT_CLUSTERINFO, "clusterinfo" },
	{ 1, OCFS2_FEATURE_INCOMPAT_APPEND_DIO, "append-dio" },
	{ 2, OCFS2_FEATURE_RO_COMPAT_UNWRITTEN, "unwritten" },
	{ 2, OCFS2_FEATURE_RO_COMPAT_USRQUOTA, "usrquota" },
	{ 2, OCFS2_FEATURE_RO_COMPAT_GRPQUOTA, "grpquota" },
};

/*
 * What fsd implements. The max-compat feature level plus what a
 * clustered mkfs adds (extended-slotmap, clusterinfo; userspace-stack on
 * the pcmk stack, matched against this node's in stack.c), what a local
 * volume carries (local), sparse files with unwritten extents
 * (doc/sparse-unwritten.md), inline data (doc/inline-data.md) and
 * discontiguous suballocator groups (doc/discontig-bg.md), metadata
 * checks (doc/metaecc.md), refcount trees and shared extents
 * (doc/refcount.md). Other default-level features are refused.
 */
#define FSD_COMPAT_SUPP		(OCFS2_FEATURE_COMPAT_BACKUP_SB | OCFS2_FEATURE_COMPAT_JBD2_SB)
#define FSD_INCOMPAT_SUPP	(OCFS2_FEATURE_INCOMPAT_LOCAL_MOUNT | \
				 OCFS2_FEATURE_INCOMPAT_EXTENDED_SLOT_MAP | \
				 OCFS2_FEATURE_INCOMPAT_CLUSTERINFO | \
				 OCFS2_FEATURE_INCOMPAT_USERSPACE_STACK | \
				 OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC | \
				 OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG | \
				 OCFS2_FEATURE_INCOMPAT_INLINE_DATA | \
				 OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS | \
				 OCFS2_FEATURE_INCOMPAT_XATTR | \
				 OCFS2_FEATURE_INCOMPAT_APPEND_DIO | \
				 OCFS2_FEATURE_INCOMPAT_META_ECC | \
				 OCFS2_FEATURE_INCOMPAT_REFCOUNT_TREE)
#define FSD_RO_COMPAT_SUPP	(OCFS2_FEATURE_RO_COMPAT_UNWRITTEN | \
				 OCFS2_FEATURE_RO_COMPAT_USRQUOTA | \
				 OCFS2_FEATURE_RO_COMPAT_GRPQUOTA)

static void
feature_name(int kind, uint32_t bit, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; i < nitems(feature_names); i++) {
		if (feature_names[i].kind == kind && feature_names[i].bit == bit) {
			snprintf(out, outlen, "%s", feature_names[i].name);
			return;
		}
	}
	snprintf(out, outlen, "unknown %s feature %#x",
	    kind == 0 ? "compat" : kind == 1 ? "incompat" : "ro-compat", bit);
}

int
super_check_features(uint32_t compat, uint32_t incompat, uint32_t ro_compat, int readonly,
    char *err, size_t errlen)
{
	uint32_t bad, bit;
	char name[64];

	(void)compat;	/* compat features never stop a mount */
	if ((bad = incompat & ~FSD_INCOMPAT_SUPP) != 0) {
		bit = bad & -bad;
		feature_name(1, bit, name, sizeof(name));
		snprintf(err, errlen, "the volume uses the incompatible feature \"%s\", "
		    "which fsd does not implement", name);
		return -1;
	}
	/*
	 * ro-compat features are, by definition, safe to ignore when
	 * nothing is written (the kernel mounts such volumes read-only).
	 */
	if (!readonly && (bad = ro_compat & ~FSD_RO_COMPAT_SUPP) != 0) {
		bit = bad & -bad;
		feature_name(2, bit, name, sizeof(name));
		snprintf(err, errlen, "the volume uses the read-only-compatible feature "
		    "\"%s\", which fsd does not implement: mount it with -o ro", name);
		return -1;
	}
	return 0;
}

/* A system file's inode number by name ("journal" + slot 3 -> "journal:0003"). */
static int
sysfile(struct fsd *fs, const char *name, int slot, uint64_t *blkno, char *err, size_t errlen)
{
	struct fsd_buf *b;
	char full[64];
	int rc;

	if (slot >= 0)
		snprintf(full, sizeof(full), "%s:%04d", name, slot);
	else
		snprintf(full, sizeof(full), "%s", name);
	if ((rc = block_read(fs, fs->sysdir_blkno, BLK_INODE, &b)) != 0) {
		snprintf(err, errlen, "the system directory (inode %llu) is unreadable",
		    (unsigned long long)fs->sysdir_blkno);
		return -1;
	}
	rc = dir_lookup(fs, (const struct ocfs2_dinode *)b->data, full, strlen(full), blkno);
	block_put(fs, b);
	if (rc != 0) {
		snprintf(err, errlen, "system file %s: %s", full,
		    rc == -ENOENT ? "missing" : strerror(-rc));
		return -1;
	}
	return 0;
}

static int
find_system_files(struct fsd *fs, char *err, size_t errlen)
{
	struct fsd_slot *s;
	unsigned i;

	if (sysfile(fs, "global_bitmap", -1, &fs->global_bitmap, err, errlen) == -1 ||
	    sysfile(fs, "global_inode_alloc", -1, &fs->global_inode_alloc, err, errlen) == -1 ||
	    sysfile(fs, "slot_map", -1, &fs->slot_map, err, errlen) == -1)
		return -1;
	fs->slots = xcalloc(fs->vol.max_slots, sizeof(*fs->slots));
	for (i = 0; i < fs->vol.max_slots; i++) {
		s = &fs->slots[i];
		if (sysfile(fs, "journal", (int)i, &s->journal, err, errlen) == -1 ||
		    sysfile(fs, "local_alloc", (int)i, &s->local_alloc, err, errlen) == -1 ||
		    sysfile(fs, "truncate_log", (int)i, &s->truncate_log, err, errlen) == -1 ||
		    sysfile(fs, "orphan_dir", (int)i, &s->orphan_dir, err, errlen) == -1 ||
		    sysfile(fs, "inode_alloc", (int)i, &s->inode_alloc, err, errlen) == -1 ||
		    sysfile(fs, "extent_alloc", (int)i, &s->extent_alloc, err, errlen) == -1)
			return -1;
	}
	return 0;
}

/*
 * Did a node that is gone leave slot i's journal dirty? In a cluster the
 * slot's journal lock tells: a live node holds it EX, so a trylock fails.
 * The lock is private (uncached): kept, it would make the next node's
 * trylock take the slot's node for alive.
 */
static int
slot_left_dirty(struct fsd *fs, unsigned i, int *dirty)
{
	struct fsd_lockres *lr = NULL;
	struct fsd_buf *b;
	uint32_t gen;
	int rc;

	*dirty = 0;
	if (fs->glue != NULL) {
		/* the lock's name carries the generation */
		if ((rc = block_read(fs, fs->slots[i].journal, BLK_INODE, &b)) != 0)
			return rc;
		gen = LE32(((const struct ocfs2_dinode *)b->data)->i_generation);
		block_put(fs, b);
		lr = lockres_private(fs, FSD_LOCK_META, fs->slots[i].journal, gen);
		if ((rc = lockres_lock_flags(fs, lr, LKM_EX, LKF_TRY)) != 0) {
			lockres_private_free(fs, lr);
			return rc == -EAGAIN ? 0 : rc;
		}
		/* what we read before holding the lock may predate a recovery */
		block_forget(fs, fs->slots[i].journal);
	}
	if ((rc = block_read(fs, fs->slots[i].journal, BLK_INODE, &b)) == 0) {
		*dirty = (LE32(((const struct ocfs2_dinode *)b->data)->id1.journal1.ij_flags) &
		    OCFS2_JOURNAL_DIRTY_FL) != 0;
		block_put(fs, b);
	}
	if (lr != NULL) {
		lockres_unlock(fs, lr, LKM_EX);
		lockres_private_free(fs, lr);
	}
	return rc;
}

/*
 * A read-only mount replays nothing, so it refuses a journal that needs
 * recovery: what it would read may be what recovery would change. In a
 * cluster that is the journal of a node that is gone (a live node's is
 * dirty while it is mounted), checked under the superblock lock, which
 * every recovery holds EX.
 */
static int
check_journals_clean(struct fsd *fs, char *err, size_t errlen)
{
	unsigned i;
	int rc = 0, dirty = 0;

	if (fs->glue != NULL && (rc = lockres_lock(fs, fs->super_lock, LKM_PR)) != 0) {
		snprintf(err, errlen, "superblock lock: %s", strerror(-rc));
		return -1;
	}
	for (i = 0; i < fs->vol.max_slots && rc == 0 && !dirty; i++)
		rc = slot_left_dirty(fs, i, &dirty);
	if (fs->glue != NULL)
		lockres_unlock(fs, fs->super_lock, LKM_PR);
	if (rc != 0)
		snprintf(err, errlen, "journal:%04u: %s", i - 1, strerror(-rc));
	else if (dirty)
		snprintf(err, errlen, "the journal of slot %u needs recovery; a read-only mount "
		    "cannot replay it%s", i - 1, fs->glue != NULL ? " (a read-write mount on any "
		    "node will)" : "");
	return rc != 0 || dirty ? -1 : 0;
}

/* jbd2's commit interval: what was not fsync'ed is at most this old. */
static void *
commit_loop(void *arg)
{
	struct fsd *fs = arg;
	struct timespec ts;
	int rc;

	pthread_mutex_lock(&fs->commit_mtx);
	while (!fs->commit_stop) {
		fsd_deadline(CLOCK_REALTIME, fs->commit_ms, &ts);
		pthread_cond_timedwait(&fs->commit_cv, &fs->commit_mtx, &ts);
		if (fs->commit_stop)
			break;
		pthread_mutex_unlock(&fs->commit_mtx);
		/* tl_flush commits first, then frees what the log holds */
		if ((rc = tl_flush(fs)) != 0 || (rc = journal_commit(fs)) != 0)
			log_warnx("periodic commit: %s", strerror(-rc));
		pthread_mutex_lock(&fs->commit_mtx);
	}
	pthread_mutex_unlock(&fs->commit_mtx);
	return NULL;
}

/* Locks of the system files that nodes share (with a cluster). */
static void
system_locks(struct fsd *fs)
{
	unsigned i;

	fs->super_lock = lockres_get(fs, FSD_LOCK_SUPER, OCFS2_SUPER_BLOCK_BLKNO, 0, fs->slot_map);
	fs->rename_lock = lockres_get(fs, FSD_LOCK_RENAME, 0, 0, 0);
	fs->gb_lock = sysinode_lockres(fs, fs->global_bitmap);
	for (i = 0; i < fs->vol.max_slots; i++)
		fs->slots[i].journal_lock = sysinode_lockres(fs, fs->slots[i].journal);
}

/* Slots whose node is gone without anyone noticing: recover them now. */
static int
recover_offline_slots(struct fsd *fs)
{
	int nodes[OCFS2_MAX_SLOTS];
	unsigned i;
	int rc;

	if ((rc = slot_map_nodes(fs, nodes)) != 0)
		return rc;
	for (i = 0; i < fs->vol.max_slots; i++) {
		if (nodes[i] < 0 || (int)i == fs->slot)
			continue;
		rc = slot_recover(fs, (int)i, LKF_TRY);
		if (rc == 0)
			log_info("slot %u (node %d) was left by a node that is gone: recovered", i,
			    nodes[i]);
		else if (rc != -EAGAIN)
			return rc;
	}
	return 0;
}

/*
 * Read-write: take a slot, replay its journal if a crash left it dirty,
 * then open it for this session and mark it dirty (doc/ondisk.md, When a
 * journal is replayed, and Mount state). With a cluster all of it runs
 * under SUPER EX (doc/cluster-stack.md, Mount and unmount), and our
 * journal lock is held EX for as long as we are mounted: other
 * nodes' trylock of it is how they tell we are alive.
 */
static int
mount_rw(struct fsd *fs, const struct fsd_mount_opts *o, char *err, size_t errlen)
{
	unsigned replayed, i;
	int rc;

	if (fs->glue == NULL)
		fs->node_num = o->node_num;
	if (slot_claim(fs, err, errlen) == -1)
		return -1;
	if (fs->glue != NULL && (rc = lockres_lock_flags(fs, fs->slots[fs->slot].journal_lock,
	    LKM_EX, LKF_RECOVERY)) != 0) {
		snprintf(err, errlen, "journal:%04d lock: %s", fs->slot, strerror(-rc));
		return -1;
	}
	if (recovery_replay_slot(fs, fs->slot, &replayed, err, errlen) == -1)
		return -1;
	if (journal_open(fs, fs->slot, &fs->journal, err, errlen) == -1)
		return -1;
	if ((rc = journal_load(fs->journal)) != 0 ||
	    (rc = journal_set_dirty(fs, fs->slots[fs->slot].journal, 1, 0)) != 0) {
		snprintf(err, errlen, "journal:%04d: %s", fs->slot, strerror(-rc));
		return -1;
	}
	/* what a crash left in our local alloc, truncate log and orphan dir */
	if ((rc = la_release(fs)) != 0 || (rc = tl_flush(fs)) != 0 ||
	    (rc = orphan_recover(fs, fs->slot, 1)) < 0 ||
	    (rc = journal_commit(fs)) != 0) {
		snprintf(err, errlen, "recovering slot %d: %s", fs->slot, strerror(-rc));
		return -1;
	}
	if (fs->glue != NULL && (rc = recover_offline_slots(fs)) != 0) {
		snprintf(err, errlen, "recovering the slots of nodes that are gone: %s",
		    strerror(-rc));
		return -1;
	}
	if ((rc = quota_recover_local(fs)) != 0) {
		snprintf(err, errlen, "recovering the local quota files: %s", strerror(-rc));
		return -1;
	}
	/* what later recoveries compare with: the kernel's ocfs2_mark_dead_nodes */
	for (i = 0; fs->glue != NULL && i < fs->vol.max_slots; i++)
		slot_note_reco_gen(fs, (int)i);
	fs->commit_ms = o->commit_ms ? o->commit_ms : 5000;
	pthread_mutex_init(&fs->commit_mtx, NULL);
	pthread_cond_init(&fs->commit_cv, NULL);
	if (pthread_create(&fs->commit_thread, NULL, commit_loop, fs) != 0) {
		snprintf(err, errlen, "cannot start the commit thread");
		return -1;
	}
	fs->commit_running = 1;
	return 0;
}

/* Where the stack's sockets are, and our status socket goes. */
static const char *
mount_rundir(const struct fsd_mount_opts *o)
{
	return o->rundir != NULL ? o->rundir : rundir_default();
}

/* A local volume, or -o nocluster, mounts without the cluster stack. */
static int
cluster_mount(const struct fsd *fs, const struct fsd_mount_opts *o)
{
	return !(fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_LOCAL_MOUNT) && !o->nocluster;
}

/* Join the cluster: heartbeat, links, the lock domain named by the UUID. */
static int
cluster_join(struct fsd *fs, const struct fsd_mount_opts *o, char *err, size_t errlen)
{
	struct fsd_stack_info si;
	const char *rundir = mount_rundir(o);

	if ((fs->stack = stack_attach(fs, rundir, o->link_wait_ms, &si, err, errlen)) == NULL)
		return -1;
	fs->node_num = si.node;
	if (glue_start(fs, rundir, fs->vol.uuid, o->lock_cache, o->lock_hold_us,
	    o->lock_hold_min_us, err, errlen) == -1)
		return -1;
	return plock_start(fs, rundir, err, errlen);
}

int
super_mount(struct fsd *fs, const char *device, const struct fsd_mount_opts *o,
    char *err, size_t errlen)
{
	struct ocfs2_super_block *sb;
	struct ocfs2_dinode *di;
	struct fsd_buf *b;
	uint8_t *buf;
	int rc;

	memset(fs, 0, sizeof(*fs));
	/* the block cache checks what dir.c and extent.c own with their checks */
	dir_register_checks(fs);
	extent_register_checks(fs);
	fs->slot = -1;
	fs->overwrite_fd = -1;
	fs->opts = *o;
	fs->readonly = o->readonly;
	pthread_mutex_init(&fs->err_mtx, NULL);
	pthread_mutex_init(&fs->wipe_mtx, NULL);
	pthread_cond_init(&fs->wipe_cv, NULL);
	pthread_mutex_init(&fs->steal_mtx, NULL);
	fs->steal_slot[SUBALLOC_INODE] = fs->steal_slot[SUBALLOC_EXTENT] = -1;
	if (volume_open(device, o->readonly ? O_RDONLY : O_RDWR, &fs->vol, err, errlen) == -1)
		return -1;
	if (ctl_start(fs, mount_rundir(o), o->mountpoint, err, errlen) == -1)
		goto fail;
	if (super_check_features(fs->vol.compat, fs->vol.incompat, fs->vol.ro_compat,
	    fs->readonly, err, errlen) == -1)
		goto fail;

	if ((buf = volume_alloc(fs->vol.block_bytes)) == NULL)
		fatal("out of memory");
	if (volume_read_blocks(&fs->vol, OCFS2_SUPER_BLOCK_BLKNO, 1, buf) == -1) {
		snprintf(err, errlen, "%s: superblock: %s", device, strerror(errno));
		free(buf);
		goto fail;
	}
	di = (struct ocfs2_dinode *)buf;
	sb = &di->id2.i_super;
	/* the superblock carries a check too (ocfs2_verify_volume, fs/ocfs2/super.c) */
	fs->metaecc = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_META_ECC) != 0;
	if (fs->metaecc) {
		rc = blockcheck_verify(buf, fs->vol.block_bytes, &di->i_check);
		if (rc == -1) {
			snprintf(err, errlen, "%s: superblock: metaecc check fails", device);
			free(buf);
			goto fail;
		}
		if (rc == 1)
			log_warnx("%s: superblock: metaecc corrected a single-bit error", device);
	}
	if (LE16(sb->s_major_rev_level) != OCFS2_MAJOR_REV_LEVEL ||
	    LE16(sb->s_minor_rev_level) != OCFS2_MINOR_REV_LEVEL) {
		snprintf(err, errlen, "%s: unsupported revision %u.%u", device,
		    LE16(sb->s_major_rev_level), LE16(sb->s_minor_rev_level));
		free(buf);
		goto fail;
	}
	fs->fs_generation = LE32(di->i_fs_generation);
	fs->clusters = LE32(di->i_clusters);
	/* unwritten extents only on sparse volumes (ocfs2_writes_unwritten_extents) */
	fs->sparse = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC) != 0;
	fs->unwritten = fs->sparse && (fs->vol.ro_compat & OCFS2_FEATURE_RO_COMPAT_UNWRITTEN) != 0;
	fs->inline_data = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_INLINE_DATA) != 0;
	xattr_mount(fs, sb);
	fs->append_dio = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_APPEND_DIO) != 0;
	/* shared extents are edited as sparse files' are (reflink.c) */
	fs->refcount = fs->sparse && (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_REFCOUNT_TREE) != 0;
	fs->first_cluster_group = LE64(sb->s_first_cluster_group);
	memcpy(fs->uuid, sb->s_uuid, sizeof(fs->uuid));
	fs->bbits = LE32(sb->s_blocksize_bits);
	fs->cbits = LE32(sb->s_clustersize_bits);
	free(buf);
	fs->bpc = 1u << (fs->cbits - fs->bbits);
	fs->nblocks = (uint64_t)fs->clusters << (fs->cbits - fs->bbits);
	fs->root_blkno = fs->vol.root_blkno;
	fs->sysdir_blkno = fs->vol.system_dir_blkno;
	if (fs->nblocks << fs->bbits > fs->vol.size_bytes || fs->vol.max_slots == 0 ||
	    fs->vol.max_slots > OCFS2_MAX_SLOTS) {
		snprintf(err, errlen, "%s: superblock geometry is impossible (%u clusters, "
		    "%u slots, device of %llu bytes)", device, fs->clusters, fs->vol.max_slots,
		    (unsigned long long)fs->vol.size_bytes);
		goto fail;
	}
	cache_init(&fs->cache, o->cache_blocks != 0 ? o->cache_blocks :
	    cache_default_blocks(fs->vol.block_bytes));
	log_info("%s: block cache of %u blocks (%llu MiB at most)", device, fs->cache.max_bufs,
	    (unsigned long long)fs->cache.max_bufs *
	    (fs->vol.block_bytes < 4096 ? 4096 : fs->vol.block_bytes) >> 20);
	itable_init(fs);
	if (cluster_mount(fs, o) && cluster_join(fs, o, err, errlen) == -1)
		goto fail;
	if (find_system_files(fs, err, errlen) == -1)
		goto fail;
	system_locks(fs);
	/* a read-only mount changes no usage: it needs no quota file */
	if (!fs->readonly && quota_mount(fs, err, errlen) == -1)
		goto fail;
	if ((rc = block_read(fs, fs->root_blkno, BLK_INODE, &b)) != 0) {
		snprintf(err, errlen, "the root directory (inode %llu) is unreadable",
		    (unsigned long long)fs->root_blkno);
		goto fail;
	}
	rc = S_ISDIR(LE16(((const struct ocfs2_dinode *)b->data)->i_mode));
	block_put(fs, b);
	if (!rc) {
		snprintf(err, errlen, "the root inode %llu is not a directory",
		    (unsigned long long)fs->root_blkno);
		goto fail;
	}
	if (fs->readonly && check_journals_clean(fs, err, errlen) == -1)
		goto fail;
	if (!fs->readonly) {
		/* the mount is recovery's peer: it never waits for it (it holds SUPER) */
		glue_recovery_thread(1);
		if (fs->glue != NULL && (rc = lockres_lock_flags(fs, fs->super_lock, LKM_EX,
		    LKF_RECOVERY)) != 0) {
			snprintf(err, errlen, "superblock lock: %s", strerror(-rc));
			goto fail;
		}
		rc = mount_rw(fs, o, err, errlen);
		if (fs->glue != NULL)
			lockres_unlock(fs, fs->super_lock, LKM_EX);
		glue_recovery_thread(0);
		if (rc == -1)
			goto fail;
		block_overwrite_open(fs);
	}
	if (fs->glue != NULL && glue_reco_start(fs->glue) == -1) {
		snprintf(err, errlen, "cannot start the recovery thread");
		goto fail;
	}
	if (fs->glue != NULL && !fs->readonly &&
	    glue_orphan_scan_start(fs, o->orphan_scan_ms) == -1) {
		snprintf(err, errlen, "cannot start the orphan scan thread");
		goto fail;
	}
	log_info("%s: OCFS2 volume %s \"%s\", %u-byte blocks, %u-byte clusters, %u slots%s%s, %s",
	    device, fs->vol.uuid, fs->vol.label, fs->vol.block_bytes, fs->vol.cluster_bytes,
	    fs->vol.max_slots, fs->vol.cluster_stack[0] ? ", cluster stack " : "",
	    fs->vol.cluster_stack, fs->readonly ? "read-only" : "read-write");
	if (!fs->readonly)
		log_info("slot %d, node %u", fs->slot, fs->node_num);
	ctl_ready(fs);
	return 0;
fail:
	/* Leave the disk as the failure found it: no clean-unmount writes. */
	super_abandon(fs);
	return -1;
}

static void
stop_commit_thread(struct fsd *fs)
{
	if (!fs->commit_running)
		return;
	pthread_mutex_lock(&fs->commit_mtx);
	fs->commit_stop = 1;
	pthread_cond_signal(&fs->commit_cv);
	pthread_mutex_unlock(&fs->commit_mtx);
	pthread_join(fs->commit_thread, NULL);
	fs->commit_running = 0;
	pthread_cond_destroy(&fs->commit_cv);
	pthread_mutex_destroy(&fs->commit_mtx);
}

/* Free our slot, under SUPER EX with a cluster; then our journal lock goes. */
static int
release_slot(struct fsd *fs)
{
	int slot = fs->slot, rc;

	if (fs->glue == NULL)
		return slot_release(fs);
	if ((rc = lockres_lock_flags(fs, fs->super_lock, LKM_EX, LKF_RECOVERY)) != 0)
		return rc;
	rc = slot_release(fs);
	lockres_unlock(fs, fs->super_lock, LKM_EX);
	lockres_unlock(fs, fs->slots[slot].journal_lock, LKM_EX);
	return rc;
}

/* An unmount step that took long is named (it waits for other nodes' locks). */
static void
unmount_step_took(const char *step, uint64_t since)
{
	uint64_t ms = now_ms() - since;

	if (ms >= 1000)
		log_info("unmount: %s took %llu ms", step, (unsigned long long)ms);
}

void
super_unmount(struct fsd *fs)
{
	uint64_t t;
	int rc;

	ctl_stop(fs);
	stop_commit_thread(fs);
	if (fs->glue != NULL)
		glue_orphan_scan_stop(fs->glue);
	if (fs->journal != NULL) {
		/*
		 * ocfs2_dismount_volume's order: make everything durable at
		 * home, empty the log, clear DIRTY_FL, then free the slot.
		 * A failure leaves the journal dirty for the next mount.
		 */
		t = now_ms();
		if ((rc = orphan_recover(fs, fs->slot, 1)) < 0)
			log_warnx("unmount: orphans: %s", strerror(-rc));
		unmount_step_took("deleting the slot's orphans", t);
		t = now_ms();
		if ((rc = la_release(fs)) != 0 || (rc = tl_flush(fs)) != 0 ||
		    (rc = journal_shutdown(fs)) != 0)
			log_warnx("unmount: journal: %s; it stays dirty", strerror(-rc));
		else if ((rc = journal_set_dirty(fs, fs->slots[fs->slot].journal, 0, 0)) != 0)
			log_warnx("unmount: clearing the journal's dirty flag: %s", strerror(-rc));
		else if ((rc = release_slot(fs)) != 0)
			log_warnx("unmount: releasing slot %d: %s", fs->slot, strerror(-rc));
		unmount_step_took("the allocation windows, the journal and the slot", t);
	}
	t = now_ms();
	super_abandon(fs);
	unmount_step_took("leaving the lock domain", t);
}

void
super_abandon(struct fsd *fs)
{
	ctl_stop(fs);
	stop_commit_thread(fs);
	plock_stop(fs);
	/* dlmd drops whatever we still hold when we leave (or vanish) */
	glue_stop(fs);
	stack_detach(fs->stack);
	fs->stack = NULL;
	journal_close(fs->journal);
	fs->journal = NULL;
	itable_destroy(fs);
	lockres_free_all(fs);
	cache_destroy(&fs->cache);
	free(fs->slots);
	fs->slots = NULL;
	block_overwrite_close(fs);
	if (fs->vol.fd >= 0 && fs->vol.path != NULL)
		volume_close(&fs->vol);
	pthread_mutex_destroy(&fs->err_mtx);
	free(fs->expected);
	fs->expected = NULL;
	pthread_mutex_destroy(&fs->wipe_mtx);
	pthread_cond_destroy(&fs->wipe_cv);
	pthread_mutex_destroy(&fs->steal_mtx);
}

/* The slot map, written in place under EX (no journal): forget our copy. */
static void
super_refresh(struct fsd *fs, struct fsd_lockres *lr)
{
	block_forget_owner(fs, lr->owner);
}

/* SUPER: mount, unmount and recovery take turns on the slot map. */
const struct fsd_lock_ops super_lock_ops = {
	.letter		= 'S',
	.flags		= LOCK_TYPE_REQUIRES_REFRESH,
	.refresh	= super_refresh,
};
