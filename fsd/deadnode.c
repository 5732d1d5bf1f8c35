/*
 * Node death in the filesystem (the kernel's journal.c recovery thread).
 *
 * dlmd tells us of a death before it recovers the dead node's locks, so
 * a lock the dead node held reaches us only after we know. dlmd marks the
 * value block of a lock whose EX holder died invalid (as o2dlm does, and
 * when the lock's master died it cannot tell, so marks it so too): a lock
 * granted afresh without a valid value block is used only once every dead
 * node's journal is replayed (glue_recovery_pending, in dlmglue.c). Locks
 * the dead node did not hold at EX are read at once: what it changed
 * under them went home when it gave them up.
 *
 * The recovery thread: under SUPER EX, for each dead node with a slot,
 * take that slot's journal lock EX (granted once dlmd has recovered it)
 * and replay the journal; then whoever waited for that goes on, and the
 * thread gives back the slot's local alloc window and truncate log and
 * frees the slot; once SUPER is given back, it deletes the slot's orphans
 * nobody has open and ends the appending O_DIRECT writes the node left
 * half done (dio_recover). Whichever
 * survivor gets the journal lock first does it; the others find the slot
 * free. A mount does the same for slots whose owner is gone without
 * anyone noticing (recover_offline_slots).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "fsd.h"
#include "glue.h"

/* Set in threads that run recovery (and the mount): they never wait for it. */
static __thread int in_recovery;

void
glue_recovery_thread(int on)
{
	in_recovery = on;
}

void
glue_node_down(struct fsd_glue *g, unsigned node)
{
	pthread_mutex_lock(&g->mtx);
	if (!g->dead[node]) {
		g->dead[node] = 1;
		g->ndead++;
	}
	pthread_cond_broadcast(&g->reco_cv);
	pthread_cond_signal(&g->dc_cv);		/* held BASTs are honoured now (holdtime.c) */
	pthread_mutex_unlock(&g->mtx);
}

int
glue_recovery_pending(struct fsd_glue *g)
{
	return g != NULL && g->ndead > 0 && !g->reco_stop && !in_recovery;
}

int
slot_note_reco_gen(struct fsd *fs, int slot)
{
	struct fsd_buf *b;
	uint32_t gen;
	int moved;

	block_forget(fs, fs->slots[slot].journal);
	if (block_read(fs, fs->slots[slot].journal, BLK_INODE, &b) != 0)
		return 0;	/* the locked read that follows reports it */
	gen = LE32(((const struct ocfs2_dinode *)b->data)->id1.journal1.ij_recovery_generation);
	block_put(fs, b);
	moved = gen != fs->slots[slot].reco_gen;
	fs->slots[slot].reco_gen = gen;
	return moved;
}

/* Take slot's journal lock EX and replay its journal; the lock stays held. */
static int
slot_replay(struct fsd *fs, int slot, unsigned lkf, unsigned *replayed)
{
	struct fsd_lockres *jl = fs->slots[slot].journal_lock;
	char err[256];
	int rc;

	if ((rc = lockres_lock_flags(fs, jl, LKM_EX, lkf | LKF_RECOVERY)) != 0)
		return rc;
	/*
	 * The slot's owner changed its journal inode (dirty flag), local
	 * alloc and truncate log under no lock of ours, maybe after an
	 * earlier recovery of the slot by us left them in our cache: read
	 * them afresh, as the kernel reads them under the journal's lock.
	 */
	block_forget(fs, fs->slots[slot].journal);
	block_forget(fs, fs->slots[slot].local_alloc);
	block_forget(fs, fs->slots[slot].truncate_log);
	if (recovery_replay_slot(fs, slot, replayed, err, sizeof(err)) == -1) {
		log_warnx("recovering slot %d: %s; the volume needs fsck", slot, err);
		lockres_unlock(fs, jl, LKM_EX);
		return -EIO;
	}
	slot_note_reco_gen(fs, slot);
	return 0;
}

/*
 * After the replay: give back the slot's local alloc window, take its
 * truncate log into ours, free the slot and let its journal lock go. These take their locks
 * as any change does. A freed slot may be claimed at once by a mounting
 * node, which must find its window and log empty.
 */
static int
slot_finish(struct fsd *fs, int slot, unsigned replayed)
{
	int rc;

	/*
	 * Home, not only committed, before the slot is free: its next owner
	 * reads its local alloc and truncate log under its journal lock,
	 * whose handoff writes home only what is stamped with that lock
	 * (journal_write_home), not these. The kernel writes them in place
	 * (fs/ocfs2/localalloc.c ocfs2_begin_local_alloc_recovery).
	 */
	if ((rc = la_release_slot(fs, slot)) != 0 || (rc = tl_adopt_slot(fs, slot)) != 0 ||
	    (rc = journal_checkpoint(fs)) != 0 || (rc = slot_free(fs, slot)) != 0)
		log_warnx("recovering slot %d: %s", slot, strerror(-rc));
	else {
		log_info("slot %d recovered (%u transactions replayed)", slot, replayed);
		pthread_mutex_lock(&fs->glue->mtx);
		fs->glue->recoveries++;
		pthread_mutex_unlock(&fs->glue->mtx);
	}
	lockres_unlock(fs, fs->slots[slot].journal_lock, LKM_EX);
	return rc;
}

/*
 * Last, the dead slot's orphans nobody has open. No slot ownership is
 * needed for that (each deletion takes the inode's OPEN lock EX), so it
 * runs after the superblock lock is given back, as the kernel's recovery
 * completion does.
 */
static void
slot_orphans(struct fsd *fs, int slot)
{
	int rc;

	if ((rc = orphan_recover(fs, slot, 1)) < 0)
		log_warnx("orphans of recovered slot %d: %s", slot, strerror(-rc));
}

int
slot_recover(struct fsd *fs, int slot, unsigned lkf)
{
	unsigned replayed;
	int rc;

	if ((rc = slot_replay(fs, slot, lkf, &replayed)) != 0 ||
	    (rc = slot_finish(fs, slot, replayed)) != 0)
		return rc;
	slot_orphans(fs, slot);
	return 0;
}

/* One pass of the recovery thread over the nodes found dead. */
struct reco_pass {
	uint8_t		 dead[GLUE_MAX_NODES];		/* the nodes this pass is for */
	uint8_t		 waiting[GLUE_MAX_NODES];	/* their slot is left to a rw mount */
	uint8_t		 told[GLUE_MAX_NODES];		/* that was logged (kept across passes) */
	unsigned	 nwaiting;
};

/*
 * The pass's dead nodes whose journal is replayed (or who had no slot, or
 * whose slot another node recovered) no longer hold anyone up.
 */
static void
release_waiters(struct fsd_glue *g, struct reco_pass *p)
{
	unsigned n;

	pthread_mutex_lock(&g->mtx);
	p->nwaiting = 0;
	for (n = 0; n < GLUE_MAX_NODES; n++) {
		if (p->waiting[n]) {
			if (!p->told[n])
				log_warnx("node %u died: its slot waits for a read-write "
				    "mount to recover it (this one is read-only)", n);
			p->told[n] = 1;
			p->nwaiting++;
		} else if (p->dead[n] && g->dead[n]) {
			if (p->told[n])
				log_info("node %u's slot was recovered by another node", n);
			p->told[n] = 0;
			g->dead[n] = 0;
			g->ndead--;
		}
	}
	pthread_cond_broadcast(&g->reco_cv);
	pthread_mutex_unlock(&g->mtx);
}

/*
 * Recover the slots of the pass's dead nodes, as the kernel does: the
 * journals first, then those waiting for them go on, then the rest of
 * each slot's recovery, which takes its locks as they do, and after the
 * superblock lock the orphans. A read-only
 * mount cannot write: it leaves the slots to a read-write node and marks
 * them waiting.
 */
static void
recover_nodes(struct fsd_glue *g, struct reco_pass *p)
{
	struct fsd *fs = g->fs;
	int slots[OCFS2_MAX_SLOTS], replayed_slot[OCFS2_MAX_SLOTS];
	unsigned replayed[OCFS2_MAX_SLOTS], n, i, nreplayed = 0;
	int rc;

	memset(p->waiting, 0, sizeof(p->waiting));
	if ((rc = lockres_lock_flags(fs, fs->super_lock, LKM_EX, LKF_RECOVERY)) != 0) {
		log_warnx("node recovery: superblock lock: %s", strerror(-rc));
		release_waiters(g, p);
		return;
	}
	if ((rc = slot_map_nodes(fs, slots)) != 0)
		log_warnx("node recovery: reading the slot map: %s", strerror(-rc));
	for (i = 0; rc == 0 && i < fs->vol.max_slots; i++) {
		if (slots[i] < 0 || (int)i == fs->slot)
			continue;
		n = (unsigned)slots[i];
		if (n >= GLUE_MAX_NODES || !p->dead[n])
			continue;
		if (fs->readonly) {
			p->waiting[n] = 1;
			continue;
		}
		/*
		 * Recovered since we last looked, by another survivor or by
		 * the node itself mounting again (which then holds the
		 * journal lock for as long as it is mounted): nothing left
		 * for us, as ocfs2_replay_journal checks before its lock.
		 */
		if (slot_note_reco_gen(fs, (int)i)) {
			log_info("slot %u of dead node %u was recovered meanwhile", i, n);
			continue;
		}
		log_info("recovering slot %u of dead node %u", i, n);
		if (slot_replay(fs, (int)i, 0, &replayed[nreplayed]) == 0)
			replayed_slot[nreplayed++] = (int)i;
	}
	release_waiters(g, p);
	for (i = 0; i < nreplayed; i++)
		if (slot_finish(fs, replayed_slot[i], replayed[i]) != 0)
			replayed_slot[i] = -1;
	/* other survivors' recovery threads wait for this lock: not for orphans */
	lockres_unlock(fs, fs->super_lock, LKM_EX);
	for (i = 0; i < nreplayed; i++)
		if (replayed_slot[i] >= 0)
			slot_orphans(fs, replayed_slot[i]);
}

/*
 * Until a dead node's journal is replayed, what it held waits: on a
 * read-only mount that lasts until a read-write node has recovered its
 * slot, which this thread looks for every second.
 */
static void *
reco_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct reco_pass p = { .nwaiting = 0 };
	struct timespec again;

	glue_recovery_thread(1);
	pthread_mutex_lock(&g->mtx);
	for (;;) {
		while ((g->ndead == 0 || p.nwaiting > 0) && !g->reco_stop) {
			if (p.nwaiting == 0) {
				pthread_cond_wait(&g->reco_cv, &g->mtx);
				continue;
			}
			clock_gettime(CLOCK_REALTIME, &again);
			again.tv_sec += 1;
			if (pthread_cond_timedwait(&g->reco_cv, &g->mtx, &again) == ETIMEDOUT)
				break;
		}
		if (g->reco_stop)
			break;
		memcpy(p.dead, g->dead, sizeof(p.dead));
		pthread_mutex_unlock(&g->mtx);
		recover_nodes(g, &p);
		pthread_mutex_lock(&g->mtx);
	}
	pthread_mutex_unlock(&g->mtx);
	return NULL;
}

int
glue_reco_start(struct fsd_glue *g)
{
	if (pthread_create(&g->reco_thread, NULL, reco_loop, g) != 0)
		return -1;
	g->reco_running = 1;
	return 0;
}

void
glue_reco_stop(struct fsd_glue *g)
{
	if (!g->reco_running)
		return;
	pthread_mutex_lock(&g->mtx);
	g->reco_stop = 1;
	pthread_cond_broadcast(&g->reco_cv);
	pthread_mutex_unlock(&g->mtx);
	pthread_join(g->reco_thread, NULL);
	g->reco_running = 0;
}

void
glue_fence(struct fsd *fs)
{
	/* As a fenced node: not one more write. The journal replays elsewhere. */
	log_warnx("fsd stops now without writing anything more");
	fsd_abort_connection(fs);
	_exit(3);
}
