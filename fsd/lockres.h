/*
 * The lock layer's own view of a lock resource, shared by lockres.c (the
 * table of resources and their idle list), dlmglue.c (requests to dlmd
 * and the downconvert) and lvb.c (what META's value block says).
 */
#ifndef FSD_LOCKRES_H
#define FSD_LOCKRES_H

#include <pthread.h>

#include "fsd.h"

/* lr->flags, under the state mutex */
#define LR_BUSY		0x01	/* a request to dlmd is in flight */
#define LR_BLOCKED	0x02	/* another node waits for us to come down */
#define LR_QUEUED	0x04	/* on the downconvert queue */
#define LR_REFRESH	0x08	/* granted from NL: cached state is stale */
#define LR_REFRESHING	0x10
#define LR_CANCEL	0x20	/* our in-flight upconvert is being cancelled */
#define LR_UNSURE	0x40	/* granted afresh with no valid value block: a dead
				   node may have held it at EX */
#define LR_IDLE		0x80	/* on the idle list */
#define LR_DROPPING	0x100	/* out of the table, its lock going: no more queueing */
#define LR_LVB_FRESH	0x200	/* META granted from NL with the value block its last
				   EX holder left (in lvb); no EX here since */
#define LR_INTR		0x400	/* lockres_interrupt(): an LKF_INTR wait gives up */
#define LR_FLUSHING	0x800	/* on the flush queue or flushing (flush_loop) */
#define LR_FLUSHED	0x1000	/* flushed: the downconvert goes on */
#define LR_HELD		0x2000	/* a BAST waits for the hold time to end (holdtime.c) */
#define LR_DOWNCONVERTING 0x4000 /* a thread runs its downconvert (downconvert_begin to
				   _end): only that thread lets LR_BLOCKED go */

/*
 * The mutex over every lock resource's state: the glue's, or one for the
 * whole process without a cluster.
 */
pthread_mutex_t *lockres_mutex(struct fsd *fs);
/* A resource outside the table, not referenced (lockres_private). */
struct fsd_lockres *lockres_alloc(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno,
	    uint32_t generation, uint64_t owner);
/* Nobody refers to lr nor holds it: free it, or keep it idle (state mutex held). */
void	 lockres_maybe_drop(struct fsd *fs, struct fsd_lockres *lr);
/* The oldest idle resource, out of the table and the idle list (glue->mtx held). */
struct fsd_lockres *lockres_take_idle(struct fsd *fs);

/*
 * holdtime.c: the minimum hold time before a BAST is honoured. glue->mtx
 * held for all but hold_now_us.
 */
uint64_t hold_now_us(void);		/* the monotonic clock, us */
/* lr rose to a higher level now: a re-grant soon after a BAST tunes its hold up. */
void	 hold_granted(struct fsd_glue *g, struct fsd_lockres *lr, uint64_t now);
/*
 * A holder here took (take) or let go of lr (its count already down). 1:
 * the last holder of a held lock let go, its hold may end sooner than the
 * downconvert thread waits for (hold_expired).
 */
int	 hold_used(struct fsd_lockres *lr, int take);
/* A BAST on lr (blocking set): 1 if it waits for lr's hold (LR_HELD, on the hold list). */
int	 hold_bast(struct fsd_glue *g, struct fsd_lockres *lr);
/* lr's held BAST is honoured now (off the hold list); a hold nobody used shrinks. */
void	 hold_end(struct fsd_glue *g, struct fsd_lockres *lr);
/* A BAST took lr down now. */
void	 hold_gave(struct fsd_lockres *lr);
/* lr leaves: off the hold list. */
void	 hold_forget(struct fsd_glue *g, struct fsd_lockres *lr);
/*
 * A held lock whose hold is over (every one while unmounting or while a
 * dead node waits for recovery), or NULL; *next: the earliest deadline
 * of the others (hold_now_us's clock), 0 if none.
 */
struct fsd_lockres *hold_expired(struct fsd_glue *g, uint64_t *next);

#endif
