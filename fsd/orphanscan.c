/*
 * The periodic orphan scan (the kernel's ocfs2_orphan_scan_work).
 *
 * An orphan is deleted by the last close on any node, or when its slot is
 * recovered or unmounted. What slips through: the last node that had it
 * open crashed, while the node that unlinked it (whose orphan dir holds
 * it) lives on. So every interval one node of the cluster walks every
 * slot's orphan dir and deletes what no node has open (OPEN EX trylock).
 *
 * One node per interval, not all of them: the ORPHAN_SCAN lock's value
 * block carries a sequence number (ocfs2_orphan_scan_lvb). A node that
 * finds it changed since its own last look knows another node scanned
 * meanwhile, takes note and waits for the next interval; a node that
 * finds it unchanged scans and counts one up.
 *
 * The records of appending O_DIRECT writes (dio.c) are not the scan's:
 * their writer may be running on a live node, between its allocation and
 * its size update, and cutting the file back to its size then would free
 * clusters it is about to fill. Only the recovery of their slot ends them,
 * as the kernel's scan leaves them (ORPHAN_NO_NEED_TRUNCATE, fs/ocfs2/journal.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#include "fsd.h"
#include "glue.h"

#define ORPHAN_SCAN_DEFAULT_MS	300000	/* ORPHAN_SCAN_SCHEDULE_TIMEOUT */
#define ORPHAN_SCAN_JITTER_MS	5000	/* at most: so that nodes do not start in step */
#define ORPHAN_SCAN_LVB_VERSION	1

/* struct ocfs2_orphan_scan_lvb: u8 version, u8 pad[3], __be32 seqno */
static int
lvb_seqno(const struct fsd_lockres *lr, uint32_t *seqno)
{
	if (!lr->lvb_valid || lr->lvb[0] != ORPHAN_SCAN_LVB_VERSION)
		return -1;
	*seqno = (uint32_t)lr->lvb[4] << 24 | (uint32_t)lr->lvb[5] << 16 |
	    (uint32_t)lr->lvb[6] << 8 | lr->lvb[7];
	return 0;
}

static void
lvb_set_seqno(struct fsd_lockres *lr, uint32_t seqno)
{
	memset(lr->lvb, 0, sizeof(lr->lvb));
	lr->lvb[0] = ORPHAN_SCAN_LVB_VERSION;
	lr->lvb[4] = (uint8_t)(seqno >> 24);
	lr->lvb[5] = (uint8_t)(seqno >> 16);
	lr->lvb[6] = (uint8_t)(seqno >> 8);
	lr->lvb[7] = (uint8_t)seqno;
	lr->lvb_valid = 1;
}

static void
orphan_scan(struct fsd_glue *g)
{
	struct fsd *fs = g->fs;
	struct fsd_lockres *lr = g->os_lock;
	uint32_t seqno;
	unsigned deleted = 0;
	int slot, rc;

	if ((rc = lockres_lock(fs, lr, LKM_EX)) != 0) {
		log_warnx("orphan scan: its lock: %s", strerror(-rc));
		return;
	}
	if (lvb_seqno(lr, &seqno) == 0 && seqno != g->os_seqno) {
		/* another node scanned since we last looked */
		g->os_seqno = seqno;
		lockres_unlock(fs, lr, LKM_EX);
		return;
	}
	for (slot = 0; slot < (int)fs->vol.max_slots; slot++) {
		if ((rc = orphan_recover(fs, slot, 0)) < 0) {
			log_warnx("orphan scan: orphan_dir:%04d: %s", slot, strerror(-rc));
			continue;
		}
		deleted += (unsigned)rc;
	}
	if (deleted > 0)
		log_info("orphan scan: %u orphans deleted", deleted);
	pthread_mutex_lock(&g->os_mtx);
	g->os_scans++;
	g->os_deleted += deleted;
	pthread_mutex_unlock(&g->os_mtx);
	g->os_seqno++;
	lvb_set_seqno(lr, g->os_seqno);
	lockres_unlock(fs, lr, LKM_EX);
}

static void *
orphan_scan_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct timespec ts;
	unsigned ms, jitter;

	jitter = g->os_interval_ms / 10 < ORPHAN_SCAN_JITTER_MS ? g->os_interval_ms / 10 :
	    ORPHAN_SCAN_JITTER_MS;
	pthread_mutex_lock(&g->os_mtx);
	while (!g->os_stop) {
		ms = g->os_interval_ms + (unsigned)random() % (jitter + 1);
		fsd_deadline(CLOCK_MONOTONIC, ms, &ts);
		while (!g->os_stop && pthread_cond_timedwait(&g->os_cv, &g->os_mtx, &ts) != ETIMEDOUT)
			;
		if (g->os_stop)
			break;
		pthread_mutex_unlock(&g->os_mtx);
		orphan_scan(g);
		pthread_mutex_lock(&g->os_mtx);
	}
	pthread_mutex_unlock(&g->os_mtx);
	return NULL;
}

int
glue_orphan_scan_start(struct fsd *fs, unsigned interval_ms)
{
	struct fsd_glue *g = fs->glue;
	pthread_condattr_t ca;

	g->os_interval_ms = interval_ms ? interval_ms : ORPHAN_SCAN_DEFAULT_MS;
	g->os_lock = lockres_get(fs, FSD_LOCK_ORPHAN_SCAN, 0, 0, 0);
	pthread_mutex_init(&g->os_mtx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->os_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&g->os_thread, NULL, orphan_scan_loop, g) != 0)
		return -1;
	g->os_running = 1;
	return 0;
}

void
glue_orphan_scan_stop(struct fsd_glue *g)
{
	if (g == NULL || !g->os_running)
		return;
	pthread_mutex_lock(&g->os_mtx);
	g->os_stop = 1;
	pthread_cond_signal(&g->os_cv);
	pthread_mutex_unlock(&g->os_mtx);
	pthread_join(g->os_thread, NULL);
	g->os_running = 0;
}

/* ORPHAN_SCAN: its holders keep the scan count in the value block. */
const struct fsd_lock_ops orphan_scan_lock_ops = {
	.letter		= 'P',
	.flags		= LOCK_TYPE_USES_LVB,
};
