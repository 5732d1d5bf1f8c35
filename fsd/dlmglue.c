/*
 * Cluster locks, cached as the kernel's dlmglue caches them.
 *
 * A lock resource keeps the level dlmd granted us after its last holder
 * on this node is gone; only another node's request, arriving as a BAST,
 * takes it down, once the lock's minimum hold time is over (holdtime.c).
 * The downconvert thread then waits until no holder here conflicts and
 * converts, calling the lock type's ops (struct
 * fsd_lock_ops, each defined by the module that owns what the lock
 * guards) on the way: the flush of cached pages its needs_flush asks for
 * (by the flush thread), write_home and set_lvb when leaving EX, refresh
 * and invalidate when going to NL. A downconvert that starts with a
 * flush goes from the BAST straight to the flush thread, which then
 * converts too (bast_queue, flush_loop): no downconvert thread wakeups
 * on a file's handoff. A holder that needs a higher level
 * than granted converts up and waits for the AST; the first holder after
 * a grant from NL waits for any fs recovery of a dead node to finish
 * (LOCK_TYPE_REQUIRES_REFRESH), and the type's refresh forgets what was
 * cached.
 *
 * A resource lives while referenced (an inode in memory) or held. Once
 * neither, it joins the idle list with its level still cached (lockres.c);
 * beyond lock_cache idle resources the downconvert thread takes the
 * oldest one's lock out of dlmd (writing home what EX protected) and
 * frees it, so that neither fsd nor dlmd grows with every inode ever
 * touched.
 *
 * Local mounts (and nocluster) have no glue: the holder counts alone
 * serialise this node's users, the level is always EX.
 *
 * Threads: the dispatch thread reads dlmd's socket and runs the Ast/Bast
 * callbacks; the downconvert thread; the flush thread, which has the
 * kernel write back and drop a file's pages before its META lock comes
 * down (see flush_loop for why that cannot deadlock); the inval thread,
 * which runs the invalidates of locks gone to NL (the kernel may wait
 * for pages that a reader locked while it waits for one of our locks, so
 * they never run where a lock waits for them).
 * One mutex (glue->mtx) covers every lock resource's state; dlmc calls go
 * under glue->cmtx, never while holding glue->mtx waiting for anything.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "o2dlm.h"
#include "util.h"

#include "glue.h"
#include "lockres.h"

_Static_assert(LKM_NL == DLMC_NL && LKM_PR == DLMC_PR && LKM_EX == DLMC_EX, "o2dlm's modes");

/* Flushes of one downconvert while holders keep coming in (flush_loop). */
#define FLUSH_ROUNDS	3
/* How long the downconvert waits for one flush (flush_overdue). */
#define FLUSH_WAIT_MS	2000
/* Downconverts handled in one pass (downconvert_batch). */
#define DC_BATCH	32

/* The highest level compatible with another node's request for `wanted`
 * (o2dlm's rule, which dlmfs follows too). */
static int
compat_level(int wanted)
{
	return dlmc_compat_level(wanted);
}

static int
holders_conflict(const struct fsd_lockres *lr, int level)
{
	return dlmc_holders_conflict(lr->ro, lr->ex, level);
}

/*
 * A downconvert of lr below level is in flight (an unlock of a lock that
 * is not cached): the level granted now is about to go, and a holder
 * counted now would hold what dlmd no longer grants us.
 */
static int
going_below(const struct fsd_lockres *lr, int level)
{
	return (lr->flags & LR_BUSY) && lr->requested < level;
}

/*
 * While lr's file's pages are flushed, holders at the level we still have
 * come in although another node waits: the flush may wait for their
 * pages (flush_loop).
 */
static int
flush_lets_in(const struct fsd_lockres *lr, int level)
{
	return (lr->flags & LR_FLUSHING) && level <= lr->level;
}

static void
unlock_reply(struct dlmc *dc, int status, uint64_t lockid, void *arg)
{
	struct fsd_lockres *lr = arg;

	(void)dc;
	(void)lockid;
	pthread_mutex_lock(&lr->glue->mtx);
	lr->status = status;
	lr->flags &= ~LR_BUSY;
	pthread_cond_broadcast(&lr->cv);
	pthread_mutex_unlock(&lr->glue->mtx);
}

/*
 * Take lr's lock out of dlmd and wait for the answer; lr is BUSY (ours),
 * glue->mtx not held, held on return. Once the reply is in, no Ast or
 * Bast naming lr can follow (one ordered connection).
 */
static void
unlock_wait(struct fsd_glue *g, struct fsd_lockres *lr, uint32_t flags, const uint8_t *lvb)
{
	int rc;

	pthread_mutex_lock(&g->cmtx);
	rc = dlmc_unlock_send(g->dc, g->domain, lr->lockid, flags, lvb, unlock_reply, lr);
	pthread_mutex_unlock(&g->cmtx);
	pthread_mutex_lock(&g->mtx);
	if (rc == -1)
		lr->flags &= ~LR_BUSY;
	while (lr->flags & LR_BUSY)
		pthread_cond_wait(&lr->cv, &g->mtx);
	if (rc == -1 || lr->status != 0)
		log_warnx("lock %s: unlock: %s", lr->name, strerror(rc == -1 ? errno : lr->status));
}

/*
 * Drop a private resource's lock from dlmd, then free it: once the reply
 * is in, no Ast or Bast naming it can follow (one ordered connection).
 */
void
lockres_private_free(struct fsd *fs, struct fsd_lockres *lr)
{
	struct fsd_glue *g = fs->glue;

	if (g != NULL && lr->level >= 0 && !g->dead_conn) {
		pthread_mutex_lock(&g->mtx);
		while (lr->flags & LR_BUSY)
			pthread_cond_wait(&lr->cv, &g->mtx);
		lr->flags |= LR_BUSY;
		pthread_mutex_unlock(&g->mtx);
		unlock_wait(g, lr, 0, NULL);
		pthread_mutex_unlock(&g->mtx);
	}
	pthread_cond_destroy(&lr->cv);
	free(lr);
}

/* ---- requests to dlmd ------------------------------------------------- */

static void
request_reply(struct dlmc *dc, int status, uint64_t lockid, void *arg)
{
	struct fsd_lockres *lr = arg;
	struct fsd_glue *g = lr->glue;

	(void)dc;
	pthread_mutex_lock(&g->mtx);
	if (status != 0) {
		/* refused outright: no Ast will come */
		lr->status = status;
		lr->flags &= ~(LR_BUSY | LR_CANCEL);
		pthread_cond_broadcast(&lr->cv);
	} else if (lr->level < 0) {
		lr->lockid = lockid;
		pthread_cond_broadcast(&lr->cv);	/* an interrupted waiter may cancel it now */
	}
	pthread_mutex_unlock(&g->mtx);
}

/* Send a lock or convert request for lr; glue->mtx NOT held. */
static void
send_request(struct fsd_glue *g, struct fsd_lockres *lr, int level, int attached,
    uint64_t lockid, uint32_t flags, const uint8_t *lvb)
{
	struct dlmc_lock_args a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.domain = g->domain;
	a.name = lr->name;
	a.namelen = FSD_LOCK_NAME_LEN - 1;
	a.mode = level;
	a.flags = flags | (attached ? DLMC_F_CONVERT : 0) |
	    ((lr->ops->flags & LOCK_TYPE_USES_LVB) ? DLMC_F_VALBLK : 0);
	a.lockid = lockid;
	a.lvb = lvb;
	a.user = (uint64_t)(uintptr_t)lr;
	log_debug("lock %s: request %d%s%s", lr->name, level, attached ? " convert" : "",
	    (flags & DLMC_F_NOQUEUE) ? " noqueue" : "");
	pthread_mutex_lock(&g->cmtx);
	rc = dlmc_lock_send(g->dc, &a, request_reply, lr);
	pthread_mutex_unlock(&g->cmtx);
	if (rc == -1)
		request_reply(g->dc, errno ? errno : EIO, 0, lr);
}

static void cancel_reply(struct dlmc *dc, int status, uint64_t lockid, void *arg);

/*
 * Withdraw lr's request in flight: its Ast then says ECANCELED, or grants
 * it when the cancel came too late. glue->mtx held, released meanwhile.
 */
static void
send_cancel(struct fsd_glue *g, struct fsd_lockres *lr)
{
	uint64_t lockid = lr->lockid;

	lr->flags |= LR_CANCEL;
	pthread_mutex_unlock(&g->mtx);
	pthread_mutex_lock(&g->cmtx);
	if (dlmc_unlock_send(g->dc, g->domain, lockid, DLMC_F_CANCEL, NULL, cancel_reply, lr) == -1)
		log_warnx("lock %s: cancel: %s", lr->name, strerror(errno));
	pthread_mutex_unlock(&g->cmtx);
	pthread_mutex_lock(&g->mtx);
}

/*
 * Ask dlmd for level (request_start), and wait for the answer (the Ast,
 * or a refusal in lr->status). Called and return with m (the state
 * mutex) held. With LKF_INTR, lockres_interrupt() cancels the request
 * (once dlmd has told its id, for a new lock).
 */
static void
request_start(struct fsd_glue *g, pthread_mutex_t *m, struct fsd_lockres *lr, int level,
    uint32_t flags, const uint8_t *lvb)
{
	int attached = lr->level >= 0;
	uint64_t lockid = lr->lockid;

	lr->flags |= LR_BUSY;
	lr->requested = level;
	lr->status = 0;
	if (level > lr->level)
		g->upconverts++;
	if (!attached)
		lr->lockid = 0;		/* request_reply tells the new lock's */
	pthread_mutex_unlock(m);
	send_request(g, lr, level, attached, lockid, flags, lvb);
	pthread_mutex_lock(m);
}

static void
request_wait(struct fsd_glue *g, pthread_mutex_t *m, struct fsd_lockres *lr, int level,
    uint32_t flags, const uint8_t *lvb, unsigned lkf)
{
	request_start(g, m, lr, level, flags, lvb);
	while (lr->flags & LR_BUSY) {
		if ((lkf & LKF_INTR) && (lr->flags & (LR_INTR | LR_CANCEL)) == LR_INTR &&
		    lr->lockid != 0)
			send_cancel(g, lr);
		else
			pthread_cond_wait(&lr->cv, m);
	}
}

static void
queue_downconvert(struct fsd_glue *g, struct fsd_lockres *lr)
{
	if (lr->flags & LR_QUEUED)
		return;
	lr->flags |= LR_QUEUED;
	lr->dcnext = NULL;
	if (g->dc_tail != NULL)
		g->dc_tail->dcnext = lr;
	else
		g->dc_head = lr;
	g->dc_tail = lr;
	pthread_cond_signal(&g->dc_cv);
}

/* lr's held BAST is honoured now. glue->mtx held. */
static void
hold_honour(struct fsd_glue *g, struct fsd_lockres *lr)
{
	hold_end(g, lr);
	lr->flags |= LR_BLOCKED;
	queue_downconvert(g, lr);
}

static void
dc_unqueue(struct fsd_glue *g, struct fsd_lockres *lr)
{
	struct fsd_lockres **pp, *prev = NULL;

	for (pp = &g->dc_head; *pp != NULL; prev = *pp, pp = &(*pp)->dcnext)
		if (*pp == lr) {
			*pp = lr->dcnext;
			if (g->dc_tail == lr)
				g->dc_tail = prev;
			break;
		}
	lr->flags &= ~LR_QUEUED;
}

/* ---- holders ---------------------------------------------------------- */

/* Forget what this node cached under lr: it may have changed elsewhere. */
static void
refresh(struct fsd *fs, struct fsd_lockres *lr)
{
	if (lr->ops->refresh != NULL)
		lr->ops->refresh(fs, lr);
}

int
lockres_lock_flags(struct fsd *fs, struct fsd_lockres *lr, int level, unsigned lkf)
{
	struct fsd_glue *g = fs->glue;
	pthread_mutex_t *m = lockres_mutex(fs);
	int rc;

	pthread_mutex_lock(m);
	for (;;) {
		/* another node waits: let it have its turn first */
		if ((lr->flags & LR_BLOCKED) && level > compat_level(lr->blocking) &&
		    !flush_lets_in(lr, level)) {
			if ((lkf & LKF_TRY) ||
			    ((lkf & LKF_NOFLUSHWAIT) && (lr->flags & LR_FLUSHING))) {
				pthread_mutex_unlock(m);
				return -EAGAIN;
			}
			pthread_cond_wait(&lr->cv, m);
			continue;
		}
		if (holders_conflict(lr, level)) {
			if (lkf & LKF_TRY) {
				pthread_mutex_unlock(m);
				return -EAGAIN;
			}
			pthread_cond_wait(&lr->cv, m);
			continue;
		}
		if (lr->level >= level && !(lr->flags & LR_REFRESHING) && !going_below(lr, level)) {
			/*
			 * What a dead node may have held at EX is read only after
			 * its journal is replayed. We wait holding no count on it,
			 * so that recovery, or another node, can still have it.
			 */
			if ((lr->flags & LR_UNSURE) && lr->owner != 0 &&
			    (lr->ops->flags & LOCK_TYPE_REQUIRES_REFRESH) && !(lkf & LKF_RECOVERY) &&
			    glue_recovery_pending(g)) {
				if (lkf & (LKF_TRY | LKF_NORECOWAIT)) {
					pthread_mutex_unlock(m);
					return -EAGAIN;
				}
				pthread_cond_wait(&g->reco_cv, m);
				continue;
			}
			break;
		}
		/* not granted yet: an interrupted waiter stops here (a grant that
		   beat its cancel was taken above) */
		if ((lkf & LKF_INTR) && (lr->flags & LR_INTR)) {
			pthread_mutex_unlock(m);
			return -EINTR;
		}
		if (lr->flags & (LR_BUSY | LR_REFRESHING)) {
			pthread_cond_wait(&lr->cv, m);
			continue;
		}
		if (g == NULL || g->dead_conn) {
			pthread_mutex_unlock(m);
			return -EIO;
		}
		if (lr->flags & LR_HELD) {
			/* another node waits for what we hold: it goes first */
			hold_honour(g, lr);
			continue;
		}
		request_wait(g, m, lr, level, (lkf & LKF_TRY) ? DLMC_F_NOQUEUE : 0, NULL, lkf);
		if (lr->status == ECANCELED)
			continue;	/* gave way to another node, or interrupted */
		if (lr->status != 0) {
			rc = lr->status;
			if (rc != EAGAIN)
				log_warnx("lock %s: dlmd refused %s: %s", lr->name,
				    level == LKM_EX ? "EX" : "PR", strerror(rc));
			pthread_mutex_unlock(m);
			return rc == EAGAIN ? -EAGAIN : -EIO;
		}
	}
	if (level == LKM_EX) {
		lr->ex++;
		lr->flags &= ~LR_LVB_FRESH;	/* this holder changes what it says */
	} else
		lr->ro++;
	if (g != NULL)
		hold_used(lr, 1);
	if (lr->flags & LR_FLUSHING)
		lr->flush_passes++;
	if (lr->flags & LR_REFRESH) {
		lr->flags = (lr->flags & ~(LR_REFRESH | LR_UNSURE)) | LR_REFRESHING;
		pthread_mutex_unlock(m);
		refresh(fs, lr);
		pthread_mutex_lock(m);
		lr->flags &= ~LR_REFRESHING;
		pthread_cond_broadcast(&lr->cv);
	}
	pthread_mutex_unlock(m);
	return 0;
}

void
lockres_file_open(struct fsd_lockres *lr, int delta, int writer)
{
	struct fsd_glue *g = lr->glue;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mtx);
	lr->pages = 1;
	/* a flush without writers may go on only while none comes (must_flush) */
	while (writer && delta > 0 && (lr->flags & LR_FLUSHING))
		pthread_cond_wait(&lr->cv, &g->mtx);
	if (writer)
		lr->writers += (unsigned)delta;
	pthread_mutex_unlock(&g->mtx);
}

int
lockres_granted(struct fsd_lockres *lr, int level)
{
	struct fsd_glue *g = lr->glue;
	int granted;

	if (g == NULL)
		return 1;
	pthread_mutex_lock(&g->mtx);
	granted = lr->level >= level;
	pthread_mutex_unlock(&g->mtx);
	return granted;
}

int
lockres_read_level(struct fsd_lockres *lr)
{
	struct fsd_glue *g = lr->glue;
	int writers;

	if (g == NULL)
		return LKM_PR;
	pthread_mutex_lock(&g->mtx);
	writers = lr->writers > 0;
	pthread_mutex_unlock(&g->mtx);
	return writers ? LKM_EX : LKM_PR;
}

void
lockres_interrupt(struct fsd_lockres *lr, int on)
{
	struct fsd_glue *g = lr->glue;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mtx);
	if (on)
		lr->flags |= LR_INTR;
	else
		lr->flags &= ~LR_INTR;
	pthread_cond_broadcast(&lr->cv);
	pthread_mutex_unlock(&g->mtx);
}

int
lockres_lock(struct fsd *fs, struct fsd_lockres *lr, int level)
{
	return lockres_lock_flags(fs, lr, level, 0);
}

void
lockres_unlock(struct fsd *fs, struct fsd_lockres *lr, int level)
{
	pthread_mutex_t *m = lockres_mutex(fs);

	pthread_mutex_lock(m);
	if (level == LKM_EX)
		lr->ex--;
	else
		lr->ro--;
	if (fs->glue != NULL && hold_used(lr, 0))
		pthread_cond_signal(&fs->glue->dc_cv);
	if (fs->glue != NULL && (lr->flags & LR_BLOCKED) &&
	    !holders_conflict(lr, lr->blocking))
		queue_downconvert(fs->glue, lr);
	/* not cached: others test it with trylocks, which send no BAST */
	if (fs->glue != NULL && lr->nocache && lr->ro + lr->ex == 0 && lr->level > LKM_NL &&
	    !(lr->flags & (LR_BUSY | LR_BLOCKED)))
		request_wait(fs->glue, m, lr, LKM_NL, 0, NULL, 0);
	pthread_cond_broadcast(&lr->cv);
	lockres_maybe_drop(fs, lr);
	pthread_mutex_unlock(m);
}

/* ---- events from dlmd ------------------------------------------------- */

static void
on_ast(struct dlmc *dc, const struct dlmc_ast *ast, void *arg)
{
	struct fsd_glue *g = arg;
	struct fsd_lockres *lr = (struct fsd_lockres *)(uintptr_t)ast->user;

	(void)dc;
	pthread_mutex_lock(&g->mtx);
	log_debug("lock %s: ast status %d mode %d (was %d, flags %#x)", lr->name, ast->status,
	    ast->mode, lr->level, lr->flags);
	lr->status = ast->status;
	if (ast->status == 0) {
		if (lr->level <= LKM_NL && ast->mode >= LKM_PR) {
			lr->flags |= LR_REFRESH;
			if (!(ast->has_lvb && ast->lvb_valid))
				lr->flags |= LR_UNSURE;
			else if (lr->ops->set_lvb != NULL) {
				memcpy(lr->lvb, ast->lvb, sizeof(lr->lvb));
				lr->flags |= LR_LVB_FRESH;
			}
		}
		if (ast->has_lvb && lr->ops->set_lvb == NULL) {
			memcpy(lr->lvb, ast->lvb, sizeof(lr->lvb));
			lr->lvb_valid = ast->lvb_valid;
		}
		if (ast->mode < lr->level)
			__atomic_add_fetch(&lr->downconverts, 1, __ATOMIC_RELEASE);
		else if (ast->mode > lr->level)
			hold_granted(g, lr, hold_now_us());
		lr->level = ast->mode;
		lr->lockid = ast->lockid;
	} else if (lr->level < 0)
		lr->lockid = 0;		/* a refused or cancelled new lock is gone */
	lr->flags &= ~(LR_BUSY | LR_CANCEL);
	/* (the answer to a downconvert: its own thread looks again, downconvert_end) */
	if ((lr->flags & LR_BLOCKED) && !(lr->flags & (LR_DROPPING | LR_DOWNCONVERTING)) &&
	    !holders_conflict(lr, lr->blocking))
		queue_downconvert(g, lr);
	pthread_cond_broadcast(&lr->cv);
	pthread_mutex_unlock(&g->mtx);
}

static void bast_queue(struct fsd_glue *g, struct fsd_lockres *lr);

static void
on_bast(struct dlmc *dc, const struct dlmc_bast *b, void *arg)
{
	struct fsd_glue *g = arg;
	struct fsd_lockres *lr = (struct fsd_lockres *)(uintptr_t)b->user;

	(void)dc;
	pthread_mutex_lock(&g->mtx);
	log_debug("lock %s: bast %d (level %d, flags %#x, holders %u/%u)", lr->name, b->blocked,
	    lr->level, lr->flags, lr->ro, lr->ex);
	if (lr->private || (lr->flags & LR_DROPPING)) {
		/* a flock: its holder lets go when the user unlocks, not before;
		   a resource on its way out: its unlock answers the BAST */
		pthread_mutex_unlock(&g->mtx);
		return;
	}
	if (b->blocked > lr->blocking)
		lr->blocking = b->blocked;
	if (hold_bast(g, lr))
		pthread_cond_signal(&g->dc_cv);		/* it watches the hold's end */
	else {
		lr->flags |= LR_BLOCKED;
		bast_queue(g, lr);
	}
	pthread_mutex_unlock(&g->mtx);
}

static void
on_domain_event(struct dlmc *dc, const struct dlmc_domain_event *ev, void *arg)
{
	struct fsd_glue *g = arg;

	(void)dc;
	if (ev->kind == DLMC_NODE_DOWN && ev->node < DLMC_MAX_NODES) {
		log_warnx("node %u died: its slot will be recovered", ev->node);
		glue_node_down(g, ev->node);
	}
}

static void *
dispatch_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct pollfd pfd;
	int n;

	pfd.fd = dlmc_fd(g->dc);
	pfd.events = POLLIN;
	for (;;) {
		pthread_mutex_lock(&g->cmtx);
		n = dlmc_dispatch(g->dc);
		pthread_mutex_unlock(&g->cmtx);
		if (n == -1)
			break;
		if (g->stopping)
			return NULL;
		if (poll(&pfd, 1, 200) == -1 && errno != EINTR)
			break;
	}
	if (!g->stopping) {
		/*
		 * Without dlmd our cached locks mean nothing: other nodes
		 * will recover us. Stop writing at once, as a fenced node.
		 */
		log_warnx("lost the connection to dlmd: stopping all disk I/O");
		pthread_mutex_lock(&g->mtx);
		g->dead_conn = 1;
		pthread_mutex_unlock(&g->mtx);
		glue_fence(g->fs);
	}
	return NULL;
}

/* ---- downconvert ------------------------------------------------------- */

static void
queue_inval_item(struct fsd_glue *g, struct inval *iv)
{
	pthread_mutex_lock(&g->iv_mtx);
	/* in order: a lookup waits for its drop, which later ones must not pass */
	iv->next = NULL;
	if (g->iv_head == NULL)
		g->iv_head = iv;
	else
		g->iv_tail->next = iv;
	g->iv_tail = iv;
	pthread_cond_signal(&g->iv_cv);
	pthread_mutex_unlock(&g->iv_mtx);
}

/* lr's invalidate for its owner, by the inval thread. */
static void
queue_inval(struct fsd_glue *g, const struct fsd_lockres *lr)
{
	struct inval *iv = xcalloc(1, sizeof(*iv));

	iv->ops = lr->ops;
	iv->owner = lr->owner;
	queue_inval_item(g, iv);
}

/*
 * From the inval thread, not the request's: the kernel takes the
 * directory's lock to drop the dentry, which a rename on this node may
 * hold while it waits for the directory the request is looking in.
 */
void
glue_drop_dentry(struct fsd_glue *g, uint64_t dir, uint64_t parent, const char *name, size_t len)
{
	struct inval *iv = xcalloc(1, sizeof(*iv));

	iv->dir = dir;
	iv->owner = parent;
	iv->name = xmalloc(len + 1);
	memcpy(iv->name, name, len);
	iv->name[len] = '\0';
	queue_inval_item(g, iv);
}

static int
drop_pending(const struct fsd_glue *g, uint64_t dir)
{
	const struct inval *iv;

	if (g->iv_cur != NULL && g->iv_cur->dir == dir)
		return 1;
	for (iv = g->iv_head; iv != NULL; iv = iv->next)
		if (iv->dir == dir)
			return 1;
	return 0;
}

void
glue_wait_dentry_drops(struct fsd_glue *g, uint64_t dir, unsigned ms)
{
	struct timespec until;

	fsd_deadline(CLOCK_REALTIME, ms, &until);
	pthread_mutex_lock(&g->iv_mtx);
	while (drop_pending(g, dir) &&
	    pthread_cond_timedwait(&g->iv_done_cv, &g->iv_mtx, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&g->iv_mtx);
}

static void *
inval_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct fsd *fs = g->fs;
	struct inval *iv;

	pthread_mutex_lock(&g->iv_mtx);
	for (;;) {
		while (g->iv_head == NULL && !g->stopping)
			pthread_cond_wait(&g->iv_cv, &g->iv_mtx);
		if (g->iv_head == NULL)
			break;
		iv = g->iv_head;
		if ((g->iv_head = iv->next) == NULL)
			g->iv_tail = NULL;
		g->iv_cur = iv;
		pthread_mutex_unlock(&g->iv_mtx);
		if (iv->name != NULL)
			inode_drop_dentry(fs, iv->owner, iv->name);
		else
			iv->ops->invalidate(fs, iv->owner);
		pthread_mutex_lock(&g->iv_mtx);
		g->iv_cur = NULL;
		pthread_cond_broadcast(&g->iv_done_cv);
		free(iv->name);
		free(iv);
	}
	pthread_mutex_unlock(&g->iv_mtx);
	return NULL;
}

/* Must lr's cached pages go back and out before it comes down to target? */
static int
must_flush(const struct fsd_lockres *lr, int target)
{
	return lr->ops->needs_flush != NULL && lr->ops->needs_flush(lr, target);
}

static void
queue_flush(struct fsd_glue *g, struct fsd_lockres *lr)
{
	lr->flags |= LR_FLUSHING;
	lr->flush_passes = 0;
	lr->flnext = NULL;
	if (g->fl_tail != NULL)
		g->fl_tail->flnext = lr;
	else
		g->fl_head = lr;
	g->fl_tail = lr;
	pthread_cond_signal(&g->fl_cv);
	pthread_cond_broadcast(&lr->cv);	/* LKF_NOFLUSHWAIT waiters give up */
}

static void downconvert_one(struct fsd_glue *g, struct fsd_lockres *lr);

/*
 * The flush thread: the lock type's invalidate has the kernel unmap the
 * file's pages, write back the dirty ones (WRITE requests, which our
 * other threads serve), and drop them all (meta_invalidate). Then the
 * downconvert goes on: here, when no other flush waits (a wakeup of the
 * downconvert thread less on the handoff's path), else in the downconvert
 * thread, lest the flushes queued behind wait for its write home.
 *
 * The kernel waits for every page a request of ours holds locked: a
 * READ reading it in, a write(2) or a writeback. Those requests must not
 * wait for the lock being flushed, so holders at the level we still have
 * come in meanwhile (flush_lets_in), and the writeback takes no RW lock
 * (file_writepage). Pages such holders bring in are flushed again, up to
 * FLUSH_ROUNDS times, lest a busy mapping here starve the other node.
 * Beyond the kernel, this thread waits only for what the downconvert
 * thread waits for, neither of which waits for the kernel's pages or
 * a lock of ours: the journal's write home (under the journal's own
 * mutex, never held across a lock wait) and dlmd's answer. The
 * downconvert thread hands over and goes on with other locks, and the
 * inval thread's waits are not ours either.
 *
 * One wait remains: a write(2) whose last page is partial keeps it locked
 * while its WRITE waits for the RW lock, which another node's truncate
 * may hold while it waits for this META lock. The downconvert thread
 * then gives up on the flush after FLUSH_WAIT_MS, or at most twice that
 * (flush_overdue; it looks at least that often, unasked, so that a flush
 * costs it no wakeup): the lock goes down, the truncate ends, and the
 * flush with it.
 */
static void *
flush_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct fsd *fs = g->fs;
	struct fsd_lockres *lr;
	unsigned round;

	pthread_mutex_lock(&g->mtx);
	for (;;) {
		while (g->fl_head == NULL && !g->stopping)
			pthread_cond_wait(&g->fl_cv, &g->mtx);
		if (g->fl_head == NULL)
			break;
		lr = g->fl_head;
		if ((g->fl_head = lr->flnext) == NULL)
			g->fl_tail = NULL;
		g->fl_cur = lr;
		for (round = 1;; round++) {
			lr->flush_passes = 0;
			fsd_deadline(CLOCK_REALTIME, FLUSH_WAIT_MS, &g->fl_deadline);
			pthread_mutex_unlock(&g->mtx);
			lr->ops->invalidate(fs, lr->owner);
			pthread_mutex_lock(&g->mtx);
			if (!(lr->flags & LR_FLUSHING) || lr->flush_passes == 0 ||
			    round == FLUSH_ROUNDS)
				break;
		}
		g->fl_cur = NULL;
		if (lr->flags & LR_FLUSHING) {
			lr->flags = (lr->flags & ~LR_FLUSHING) | LR_FLUSHED;
			pthread_cond_broadcast(&lr->cv);
			if (g->fl_head == NULL)
				downconvert_one(g, lr);
			else
				queue_downconvert(g, lr);
		}
		pthread_cond_broadcast(&lr->cv);
	}
	pthread_mutex_unlock(&g->mtx);
	return NULL;
}

static int
ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Is the flush thread still inside a flush begun FLUSH_WAIT_MS ago? glue->mtx held. */
static int
flush_stuck(struct fsd_glue *g)
{
	struct timespec now;

	if (g->fl_cur == NULL)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	return !ts_before(&now, &g->fl_deadline);
}

/*
 * Must lr's pages be flushed before it comes down to target, and may
 * that flush start? Not again while its last flush, given up on, is
 * still under way, nor behind a flush stuck in the kernel. glue->mtx held.
 */
static int
flush_first(struct fsd_glue *g, const struct fsd_lockres *lr, int target)
{
	return !(lr->flags & LR_FLUSHED) && must_flush(lr, target) && g->fl_cur != lr &&
	    !flush_stuck(g);
}

/*
 * lr leaves EX (lr BUSY, glue->mtx not held): what changed under it goes
 * home first, and its value block is filled. 1 if the request carries it.
 */
static int
leave_ex(struct fsd *fs, struct fsd_lockres *lr, uint8_t *lvb)
{
	const struct fsd_lock_ops *ops = lr->ops;

	if (ops->write_home != NULL && ops->write_home(fs, lr) != 0)
		log_warnx("lock %s: writing home what changed under EX failed", lr->name);
	/* unsure: we read nothing under it, so it stays invalid */
	if (!(ops->flags & LOCK_TYPE_USES_LVB) || (lr->flags & LR_UNSURE))
		return 0;
	if (ops->set_lvb != NULL)
		ops->set_lvb(fs, lr, lvb);
	else
		memcpy(lvb, lr->lvb, DLMC_LVB_LEN);	/* its holder wrote it */
	return 1;
}

/*
 * A refused cancel either lost the race with the grant (whose Ast then
 * queues the downconvert) or overtook the request it meant to cancel,
 * which dlmd had not seen yet: then it is tried again, by the downconvert
 * or by the interrupted waiter.
 */
static void
cancel_reply(struct dlmc *dc, int status, uint64_t lockid, void *arg)
{
	struct fsd_lockres *lr = arg;
	struct fsd_glue *g = lr->glue;

	(void)dc;
	(void)lockid;
	if (status == 0)
		return;
	log_debug("lock %s: cancel refused: %s", lr->name, strerror(status));
	pthread_mutex_lock(&g->mtx);
	if (lr->flags & LR_CANCEL) {
		lr->flags &= ~LR_CANCEL;
		if (lr->flags & LR_BLOCKED)
			queue_downconvert(g, lr);
		pthread_cond_broadcast(&lr->cv);
	}
	pthread_mutex_unlock(&g->mtx);
}

/* A downconvert of a batch (downconvert_batch). */
struct dc_item {
	struct fsd_lockres *lr;
	int		 target, from, flushed, has_lvb;
	uint8_t		 lvb[DLMC_LVB_LEN];
};

/*
 * One look at lr: 1 if it may come down now, BUSY (which keeps lockers
 * out while we write home and forget) and it in *it; else whatever it
 * waits for will queue it again. glue->mtx held.
 */
static int
downconvert_begin(struct fsd_glue *g, struct fsd_lockres *lr, struct dc_item *it)
{
	int target;

	if (!(lr->flags & LR_BLOCKED))
		return 0;
	/* the flush thread's, or the downconvert thread's: its end looks again */
	if (lr->flags & LR_DOWNCONVERTING)
		return 0;
	target = compat_level(lr->blocking);
	if (lr->flags & LR_BUSY) {
		/* our own upconvert would wait for the other node forever: withdraw it */
		if (!(lr->flags & LR_CANCEL) && lr->level >= 0) {
			log_debug("lock %s: cancelling our request", lr->name);
			send_cancel(g, lr);
		}
		return 0;	/* the Ast queues it again */
	}
	if (lr->flags & LR_FLUSHING)
		return 0;	/* flush_loop queues it again */
	if (lr->level <= target) {
		lr->flags &= ~(LR_BLOCKED | LR_FLUSHED);
		lr->blocking = 0;
		pthread_cond_broadcast(&lr->cv);
		return 0;
	}
	if (holders_conflict(lr, lr->blocking))
		return 0;	/* the last conflicting unlock queues it again */
	if (flush_first(g, lr, target)) {
		queue_flush(g, lr);
		return 0;
	}
	it->lr = lr;
	it->target = target;
	it->from = lr->level;
	it->flushed = (lr->flags & LR_FLUSHED) != 0;
	lr->flags = (lr->flags & ~LR_FLUSHED) | LR_BUSY | LR_DOWNCONVERTING;
	return 1;
}

/*
 * What lr's downconvert does before dlmd hears of it: write home and fill
 * the value block when leaving EX, forget what it cached when going to
 * NL. glue->mtx NOT held.
 */
static void
downconvert_prepare(struct fsd_glue *g, struct dc_item *it)
{
	struct fsd_lockres *lr = it->lr;

	it->has_lvb = it->from == LKM_EX && leave_ex(g->fs, lr, it->lvb);
	if (it->target == LKM_NL) {
		lr->flags &= ~LR_LVB_FRESH;
		refresh(g->fs, lr);
		if (lr->ops->invalidate != NULL && lr->owner != 0 && !it->flushed)
			queue_inval(g, lr);
	}
}

/* lr's downconvert is answered. glue->mtx held. */
static void
downconvert_end(struct fsd_glue *g, struct dc_item *it)
{
	struct fsd_lockres *lr = it->lr;

	if (lr->status != 0)
		log_warnx("lock %s: downconvert to %d failed: %s", lr->name, it->target,
		    strerror(lr->status));
	else if (lr->level < it->from)
		hold_gave(lr);
	lr->flags &= ~LR_DOWNCONVERTING;
	if (lr->level <= compat_level(lr->blocking)) {
		lr->flags &= ~LR_BLOCKED;
		lr->blocking = 0;
	} else if (lr->status == 0 && !holders_conflict(lr, lr->blocking))
		queue_downconvert(g, lr);	/* a BAST for a higher level came meanwhile */
	pthread_cond_broadcast(&lr->cv);
}

/*
 * The n downconverts begun in items: each is written home, then all
 * requests go to dlmd together and their answers are awaited together.
 * The first write home commits and checkpoints the journal; the others
 * then find their changes home already (journal_write_home) and cost no
 * I/O: one commit and checkpoint for the batch, not one each. glue->mtx
 * held, released meanwhile.
 */
static void
downconvert_run(struct fsd_glue *g, struct dc_item *items, unsigned n)
{
	unsigned i;

	pthread_mutex_unlock(&g->mtx);
	for (i = 0; i < n; i++)
		downconvert_prepare(g, &items[i]);
	pthread_mutex_lock(&g->mtx);
	for (i = 0; i < n; i++)
		request_start(g, &g->mtx, items[i].lr, items[i].target, 0,
		    items[i].has_lvb ? items[i].lvb : NULL);
	for (i = 0; i < n; i++) {
		while (items[i].lr->flags & LR_BUSY)
			pthread_cond_wait(&items[i].lr->cv, &g->mtx);
		downconvert_end(g, &items[i]);
	}
}

/* Every lock queued for a downconvert, at most DC_BATCH, in one pass. glue->mtx held. */
static void
downconvert_batch(struct fsd_glue *g)
{
	struct dc_item items[DC_BATCH];
	struct fsd_lockres *lr;
	unsigned n = 0;

	while (n < DC_BATCH && (lr = g->dc_head) != NULL) {
		if ((g->dc_head = lr->dcnext) == NULL)
			g->dc_tail = NULL;
		lr->flags &= ~LR_QUEUED;
		n += (unsigned)downconvert_begin(g, lr, &items[n]);
	}
	if (n > 0)
		downconvert_run(g, items, n);
}

/* lr's downconvert by this thread, if it may come down now. glue->mtx held. */
static void
downconvert_one(struct fsd_glue *g, struct fsd_lockres *lr)
{
	struct dc_item it;

	if (downconvert_begin(g, lr, &it))
		downconvert_run(g, &it, 1);
}

/*
 * A BAST's downconvert that starts with a flush of lr's pages goes
 * straight to the flush thread, which then converts too (flush_loop):
 * two wakeups of the downconvert thread less on the handoff's path.
 * Anything else is the downconvert thread's to decide. glue->mtx held.
 */
static void
bast_queue(struct fsd_glue *g, struct fsd_lockres *lr)
{
	int target = compat_level(lr->blocking);

	if (!(lr->flags & (LR_BUSY | LR_FLUSHING | LR_QUEUED)) && lr->level > target &&
	    !holders_conflict(lr, lr->blocking) && flush_first(g, lr, target))
		queue_flush(g, lr);
	else
		queue_downconvert(g, lr);
}

/*
 * Take the least recently used idle resource's lock out of dlmd and free
 * it. As a downconvert to nothing: what EX protected goes home first,
 * with the value block, and this node forgets what it cached under it.
 * glue->mtx held.
 */
static void
drop_idle(struct fsd_glue *g)
{
	struct fsd *fs = g->fs;
	struct fsd_lockres *lr = lockres_take_idle(fs);
	uint8_t lvb[DLMC_LVB_LEN];
	int has_lvb;

	hold_forget(g, lr);

	while ((lr->flags & (LR_BUSY | LR_REFRESHING | LR_FLUSHING | LR_DOWNCONVERTING)) ||
	    g->fl_cur == lr)
		pthread_cond_wait(&lr->cv, &g->mtx);
	lr->flags |= LR_DROPPING;
	if (lr->level >= 0 && !g->dead_conn) {
		lr->flags |= LR_BUSY;
		pthread_mutex_unlock(&g->mtx);
		has_lvb = lr->level == LKM_EX && leave_ex(fs, lr, lvb);
		refresh(fs, lr);
		unlock_wait(g, lr, has_lvb ? DLMC_F_VALBLK : 0, has_lvb ? lvb : NULL);
	}
	if (lr->flags & LR_QUEUED)
		dc_unqueue(g, lr);
	pthread_cond_destroy(&lr->cv);
	free(lr);
}

/* lr's downconvert goes on without (the rest of) its flush. glue->mtx held. */
static void
flush_give_up(struct fsd_glue *g, struct fsd_lockres *lr)
{
	log_warnx("lock %s: the kernel's writeback of the file's pages waits for a lock "
	    "another node holds: giving the lock up before it ends", lr->name);
	lr->flags = (lr->flags & ~LR_FLUSHING) | LR_FLUSHED;
	pthread_cond_broadcast(&lr->cv);
	queue_downconvert(g, lr);
}

/*
 * Has the flush under way outlasted FLUSH_WAIT_MS? Then its lock comes
 * down without it (see flush_loop); what it had not written back yet
 * reaches the other node at its next writeback. So do the locks queued
 * behind it: the flush thread may stay in the kernel for as long as a
 * lock they guard is not given up, and downconvert_begin() queues no more
 * meanwhile. glue->mtx held.
 */
static int
flush_overdue(struct fsd_glue *g)
{
	struct fsd_lockres *lr = g->fl_cur;

	if (lr == NULL || !flush_stuck(g) ||
	    (!(lr->flags & LR_FLUSHING) && g->fl_head == NULL))
		return 0;
	if (lr->flags & LR_FLUSHING)
		flush_give_up(g, lr);
	while ((lr = g->fl_head) != NULL) {
		if ((g->fl_head = lr->flnext) == NULL)
			g->fl_tail = NULL;
		flush_give_up(g, lr);
	}
	return 1;
}

/*
 * Honour the held BASTs whose hold is over. Else the realtime instant the
 * next one ends, in *until (1), or 0 if none is held. glue->mtx held.
 */
static int
holds_over(struct fsd_glue *g, struct timespec *until)
{
	struct fsd_lockres *lr;
	uint64_t next, now;

	while ((lr = hold_expired(g, &next)) != NULL)
		hold_honour(g, lr);
	if (next == 0)
		return 0;
	now = hold_now_us();
	fsd_deadline_us(CLOCK_REALTIME, next > now ? next - now : 0, until);
	return 1;
}

static void *
downconvert_loop(void *arg)
{
	struct fsd_glue *g = arg;
	struct timespec until;
	int timed;

	pthread_mutex_lock(&g->mtx);
	for (;;) {
		while (!flush_overdue(g) && g->dc_head == NULL && g->nidle <= g->idle_max &&
		    !g->stopping) {
			timed = holds_over(g, &until);
			if (g->dc_head != NULL)
				break;
			if (g->fl_cur != NULL && ((g->fl_cur->flags & LR_FLUSHING) ||
			    g->fl_head != NULL) && (!timed || ts_before(&g->fl_deadline, &until))) {
				until = g->fl_deadline;
				timed = 1;
			}
			/* a flush begun while we sleep is looked at within FLUSH_WAIT_MS */
			if (!timed)
				fsd_deadline(CLOCK_REALTIME, FLUSH_WAIT_MS, &until);
			pthread_cond_timedwait(&g->dc_cv, &g->mtx, &until);
		}
		holds_over(g, &until);
		if (g->dc_head == NULL) {
			if (g->stopping)
				break;
			drop_idle(g);
			continue;
		}
		downconvert_batch(g);
	}
	pthread_mutex_unlock(&g->mtx);
	return NULL;
}

/* ---- start and stop ---------------------------------------------------- */

int
glue_start(struct fsd *fs, const char *rundir, const char *domain, unsigned lock_cache,
    unsigned hold_max_us, unsigned hold_min_us, char *err, size_t errlen)
{
	static const struct dlmc_callbacks cb = { on_ast, on_bast, on_domain_event };
	struct dlmc_domain_info info;
	struct fsd_glue *g;

	g = xcalloc(1, sizeof(*g));
	g->fs = fs;
	g->idle_max = lock_cache;
	g->hold_max_us = hold_max_us;
	g->hold_min_us = hold_min_us;
	snprintf(g->domain, sizeof(g->domain), "%s", domain);
	pthread_mutex_init(&g->mtx, NULL);
	pthread_mutex_init(&g->cmtx, NULL);
	pthread_cond_init(&g->dc_cv, NULL);
	pthread_cond_init(&g->reco_cv, NULL);
	pthread_mutex_init(&g->iv_mtx, NULL);
	pthread_cond_init(&g->iv_cv, NULL);
	pthread_cond_init(&g->iv_done_cv, NULL);
	pthread_cond_init(&g->fl_cv, NULL);
	if ((g->dc = dlmc_open(rundir, &cb, g)) == NULL) {
		snprintf(err, errlen, "cannot reach dlmd in %s: %s", rundir, strerror(errno));
		free(g);
		return -1;
	}
	if (dlmc_join(g->dc, domain, DLMC_JOIN_GUARDS_DISK, &info) == -1) {
		snprintf(err, errlen, "joining lock domain %s: %s", domain,
		    errno == ECONNRESET ? "dlmd went away" : dlmc_error(g->dc));
		dlmc_close(g->dc);
		free(g);
		return -1;
	}
	log_info("joined lock domain %s (%zu members)", domain, info.nmembers);
	fs->glue = g;
	if (pthread_create(&g->dispatch_thread, NULL, dispatch_loop, g) != 0 ||
	    pthread_create(&g->dc_thread, NULL, downconvert_loop, g) != 0 ||
	    pthread_create(&g->iv_thread, NULL, inval_loop, g) != 0 ||
	    pthread_create(&g->fl_thread, NULL, flush_loop, g) != 0)
		fatalx("cannot start the lock threads");
	/* named for perf and top (bench/fsd_handoff_legs.sh tells them apart) */
	pthread_setname_np(g->dispatch_thread, "fsd-dispatch");
	pthread_setname_np(g->dc_thread, "fsd-downconv");
	pthread_setname_np(g->iv_thread, "fsd-inval");
	pthread_setname_np(g->fl_thread, "fsd-flush");
	return 0;
}

void
glue_stop(struct fsd *fs)
{
	struct fsd_glue *g = fs->glue;
	struct inval *iv;

	if (g == NULL)
		return;
	/*
	 * The recovery thread (and a downconvert) may be waiting for an Ast:
	 * they stop before the dispatch thread that delivers it.
	 */
	glue_orphan_scan_stop(g);
	glue_reco_stop(g);
	pthread_mutex_lock(&g->mtx);
	g->stopping = 1;
	pthread_cond_broadcast(&g->dc_cv);
	pthread_cond_broadcast(&g->fl_cv);
	pthread_mutex_unlock(&g->mtx);
	pthread_mutex_lock(&g->iv_mtx);
	pthread_cond_broadcast(&g->iv_cv);
	pthread_mutex_unlock(&g->iv_mtx);
	pthread_join(g->dc_thread, NULL);
	pthread_join(g->fl_thread, NULL);
	pthread_join(g->iv_thread, NULL);
	pthread_join(g->dispatch_thread, NULL);
	/* leaving the domain migrates what we master; closing drops our locks */
	if (!g->dead_conn && dlmc_leave(g->dc, g->domain) == -1)
		log_warnx("leaving lock domain %s: %s", g->domain, strerror(errno));
	dlmc_close(g->dc);
	while ((iv = g->iv_head) != NULL) {
		g->iv_head = iv->next;
		free(iv->name);
		free(iv);
	}
	fs->glue = NULL;
	free(g);
}
