/*
 * The minimum hold time of contended locks (doc/lock-hold.md), after
 * GFS2's (fs/gfs2/glock.c: gl_hold_time, GL_GLOCK_HOLD_INCR/DECR,
 * the demote delay of gfs2_glock_cb).
 *
 * Handing a META lock from EX to another node writes home what changed
 * under it (a commit and a checkpoint, doc/lock-handoff.md). Nodes that
 * create and unlink in one directory want its lock for every operation:
 * given up at each BAST, it changes hands (and is written home) once per
 * operation. So a BAST on a lock granted here not long ago waits: until
 * the lock has been ours for its hold time, and no longer than this node
 * goes on using it (an idle gap with no holder gives it up at once).
 * Meanwhile holders here still come in, and a burst of operations runs
 * under one grant.
 *
 * Each lock tunes its own hold time: a lock asked for again soon after a
 * BAST took it holds longer (up to the mount's lock_hold), one that
 * nobody here wanted soon after holds less (down to lock_hold_min). A
 * hold that let no holder in shrinks it. When the grant it ended had few
 * uses (a file written here and read there in turns, not a pause within
 * a burst of operations), two or more such holds in a row send it back to
 * lock_hold_min, and the lock grows again only after twice as many
 * re-grants as the last time: the other node waits for nothing ever more
 * rarely. Everything here runs under the state mutex.
 */
#include <time.h>

#include "glue.h"
#include "lockres.h"

/* Without a holder for this long (and at most the hold time) it goes. */
#define HOLD_IDLE_MAX_US	4000u
/* Wasted holds in a row beyond which the re-grants to wait stop doubling. */
#define HOLD_BACKOFF_MAX	6
/*
 * Takes by holders under one grant that make a burst (a write and the
 * kernel's requests around it take a file's lock a few times).
 */
#define HOLD_BURST_USES		32

uint64_t
hold_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A re-grant this long after a BAST took the lock counts as contention. */
static uint64_t
regrant_window_us(const struct fsd_glue *g)
{
	return 4 * (uint64_t)g->hold_max_us + 20000u;
}

static unsigned
idle_gap_us(const struct fsd_lockres *lr)
{
	return lr->hold_us < HOLD_IDLE_MAX_US ? lr->hold_us : HOLD_IDLE_MAX_US;
}

/*
 * Only META locks hold: the inode and directory blocks that every
 * operation in a shared directory changes. Not while our own request is
 * in flight (the downconvert withdraws it), nor while a dead node's slot
 * waits for recovery, which may need the lock.
 */
static int
hold_applies(struct fsd_glue *g, const struct fsd_lockres *lr)
{
	return g->hold_max_us > 0 && lr->type == FSD_LOCK_META && !lr->private &&
	    !lr->nocache && lr->level > LKM_NL &&
	    !(lr->flags & (LR_BUSY | LR_BLOCKED | LR_DROPPING | LR_CANCEL)) && !g->stopping &&
	    g->ndead == 0;
}

/* When a BAST on lr may be honoured: the hold ends, or its use does. */
static uint64_t
hold_deadline(const struct fsd_lockres *lr)
{
	uint64_t held = lr->granted_us + lr->hold_us;
	uint64_t idle = lr->used_us + idle_gap_us(lr);

	if (lr->ro + lr->ex > 0)
		return held;		/* in use: the holders end first anyway */
	return idle < held ? idle : held;
}

/* By lock_hold / 8, down to lock_hold_min. */
static void
hold_shrink(const struct fsd_glue *g, struct fsd_lockres *lr)
{
	unsigned decr = g->hold_max_us / 8;

	lr->hold_us = lr->hold_us > g->hold_min_us + decr ? lr->hold_us - decr : g->hold_min_us;
}

void
hold_granted(struct fsd_glue *g, struct fsd_lockres *lr, uint64_t now)
{
	unsigned incr = g->hold_max_us / 4;

	if (lr->gave_us != 0 && now - lr->gave_us < regrant_window_us(g)) {
		if (lr->hold_skip > 0)
			lr->hold_skip--;
		else
			lr->hold_us = lr->hold_us + incr < g->hold_max_us ?
			    lr->hold_us + incr : g->hold_max_us;
	} else if (lr->gave_us != 0)
		hold_shrink(g, lr);
	lr->gave_us = 0;
	lr->grant_uses = 0;
	lr->granted_us = lr->used_us = now;
}

int
hold_used(struct fsd_lockres *lr, int take)
{
	lr->used_us = hold_now_us();
	if (!take)	/* one that took it before the BAST is no new use */
		return (lr->flags & LR_HELD) && lr->ro + lr->ex == 0;
	lr->grant_uses++;
	if (lr->flags & LR_HELD)
		lr->held_uses++;
	return 0;
}

int
hold_bast(struct fsd_glue *g, struct fsd_lockres *lr)
{
	if ((lr->flags & LR_HELD) || !hold_applies(g, lr) || hold_deadline(lr) <= hold_now_us())
		return lr->flags & LR_HELD;
	lr->flags |= LR_HELD;
	lr->held_uses = 0;
	lr->hold_next = g->hold_head;
	g->hold_head = lr;
	return 1;
}

static void
hold_unlink(struct fsd_glue *g, struct fsd_lockres *lr)
{
	struct fsd_lockres **pp;

	for (pp = &g->hold_head; *pp != NULL; pp = &(*pp)->hold_next)
		if (*pp == lr) {
			*pp = lr->hold_next;
			break;
		}
	lr->flags &= ~LR_HELD;
}

void
hold_end(struct fsd_glue *g, struct fsd_lockres *lr)
{
	if (!(lr->flags & LR_HELD))
		return;
	hold_unlink(g, lr);
	if (lr->held_uses > 0) {
		lr->hold_wastes = 0;
		return;
	}
	/* the other node waited for nothing: after a burst, or once, that may
	   be a pause in this node's work; twice in a row after a few uses is a
	   lock this node takes once per turn */
	if (lr->grant_uses >= HOLD_BURST_USES) {
		lr->hold_wastes = 0;
		hold_shrink(g, lr);
		return;
	}
	if (lr->hold_wastes < HOLD_BACKOFF_MAX)
		lr->hold_wastes++;
	if (lr->hold_wastes == 1) {
		hold_shrink(g, lr);
		return;
	}
	lr->hold_us = g->hold_min_us;
	lr->hold_skip = 1u << (lr->hold_wastes - 1);
}

void
hold_gave(struct fsd_lockres *lr)
{
	lr->gave_us = hold_now_us();
	if (lr->gave_us == 0)
		lr->gave_us = 1;
}

void
hold_forget(struct fsd_glue *g, struct fsd_lockres *lr)
{
	if (lr->flags & LR_HELD)
		hold_unlink(g, lr);
}

struct fsd_lockres *
hold_expired(struct fsd_glue *g, uint64_t *next)
{
	struct fsd_lockres *lr;
	uint64_t now = hold_now_us(), d;

	*next = 0;
	for (lr = g->hold_head; lr != NULL; lr = lr->hold_next) {
		d = hold_deadline(lr);
		if (d <= now || g->stopping || g->ndead > 0)
			return lr;
		if (*next == 0 || d < *next)
			*next = d;
	}
	return NULL;
}
