/*
 * Node death in the filesystem (the kernel's journal.c recovery thread).
 *
 * dlmd tells us of a death before it recovers the dead node's locks, so
 * a lock the dead node held reaches us only after we know: the first
 * holder of any lock granted afresh waits here until every dead node's
 * slot is recovered (glue_wait_recovery), then reads from disk.
 *
 * The recovery thread: under SUPER EX, for each dead node with a slot,
 * take that slot's journal lock EX (granted once dlmd has recovered it),
 * replay the journal, give back its local alloc window and truncate log,
 * delete its orphans nobody has open, and free the slot. Whichever
 * survivor gets the journal lock first does it; the others find the
 * journal clean and the slot free. A mount does the same for slots
 * whose owner is gone without anyone noticing (slot_recover_dead).
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
	pthread_mutex_unlock(&g->mtx);
}

void
glue_wait_recovery(struct fsd *fs)
{
	struct fsd_glue *g = fs->glue;

	if (g == NULL || in_recovery)
		return;
	pthread_mutex_lock(&g->mtx);
	while (g->ndead > 0 && !g->reco_stop)
		pthread_cond_wait(&g->reco_cv, &g->mtx);
	pthread_mutex_unlock(&g->mtx);
}

int
slot_recover(struct fsd *fs, int slot, unsigned lkf)
{
	struct fsd_lockres *jl = fs->slots[slot].journal_lock;
	unsigned replayed;
	char err[256];
	int rc;

	if ((rc = lockres_lock_flags(fs, jl, LKM_EX, lkf | LKF_RECOVERY)) != 0)
		return rc;
	if (recovery_replay_slot(fs, slot, &replayed, err, sizeof(err)) == -1) {
		log_warnx("recovering slot %d: %s; the volume needs fsck", slot, err);
		rc = -EIO;
	} else if ((rc = la_release_slot(fs, slot)) != 0 || (rc = tl_flush_slot(fs, slot)) != 0 ||
	    (rc = orphan_recover(fs, slot)) < 0 || (rc = journal_commit(fs)) != 0 ||
	    (rc = slot_free(fs, slot)) != 0)
		log_warnx("recovering slot %d: %s", slot, strerror(-rc));
	else {
		log_info("slot %d recovered (%u transactions replayed)", slot, replayed);
		pthread_mutex_lock(&fs->glue->mtx);
		fs->glue->recoveries++;
		pthread_mutex_unlock(&fs->glue->mtx);
	}
	lockres_unlock(fs, jl, LKM_EX);
	return rc;
}

/*
 * Recover the slots of the dead nodes. A read-only mount cannot write
 * them: it leaves them to a read-write node, and marks in waiting[n] the
 * dead nodes whose slot is still to be recovered.
 */
static void
recover_nodes(struct fsd *fs, const uint8_t *dead, uint8_t *waiting)
{
	int slots[OCFS2_MAX_SLOTS];
	unsigned n, i;
	int rc;

	memset(waiting, 0, GLUE_MAX_NODES);
	if ((rc = lockres_lock_flags(fs, fs->super_lock, LKM_EX, LKF_RECOVERY)) != 0) {
		log_warnx("node recovery: superblock lock: %s", strerror(-rc));
		return;
	}
	if ((rc = slot_map_nodes(fs, slots)) != 0)
		log_warnx("node recovery: reading the slot map: %s", strerror(-rc));
	for (i = 0; rc == 0 && i < fs->vol.max_slots; i++) {
		if (slots[i] < 0 || (int)i == fs->slot)
			continue;
		n = (unsigned)slots[i];
		if (n >= GLUE_MAX_NODES || !dead[n])
			continue;
		if (fs->readonly) {
			waiting[n] = 1;
			continue;
		}
		log_info("recovering slot %u of dead node %u", i, n);
		slot_recover(fs, (int)i, 0);
	}
	lockres_unlock(fs, fs->super_lock, LKM_EX);
}

/*
 * Until a dead node's slot is recovered, locks granted afresh wait
 * (glue_wait_recovery): on a read-only mount that lasts until a
 * read-write node has done it, which this thread looks for every second.
 */
static void *
reco_loop(void *arg)
{
	struct fsd_glue *g = arg;
	uint8_t dead[GLUE_MAX_NODES], waiting[GLUE_MAX_NODES], told[GLUE_MAX_NODES] = { 0 };
	struct timespec again;
	unsigned n, nwaiting = 0;

	glue_recovery_thread(1);
	pthread_mutex_lock(&g->mtx);
	for (;;) {
		while ((g->ndead == 0 || nwaiting > 0) && !g->reco_stop) {
			if (nwaiting == 0) {
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
		memcpy(dead, g->dead, sizeof(dead));
		pthread_mutex_unlock(&g->mtx);
		recover_nodes(g->fs, dead, waiting);
		pthread_mutex_lock(&g->mtx);
		nwaiting = 0;
		for (n = 0; n < GLUE_MAX_NODES; n++) {
			if (waiting[n]) {
				if (!told[n])
					log_warnx("node %u died: its slot waits for a read-write "
					    "mount to recover it (this one is read-only)", n);
				told[n] = 1;
				nwaiting++;
			} else if (dead[n] && g->dead[n]) {
				if (told[n])
					log_info("node %u's slot was recovered by another node", n);
				told[n] = 0;
				g->dead[n] = 0;
				g->ndead--;
			}
		}
		pthread_cond_broadcast(&g->reco_cv);
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
	(void)fs;
	/* As a fenced node: not one more write. The journal replays elsewhere. */
	log_warnx("fsd stops now without writing anything more");
	_exit(3);
}
