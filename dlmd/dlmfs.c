/*
 * The dlmfs tree at <rundir>/dlm, with the kernel's ocfs2_dlmfs rules: a
 * directory at the root is a joined domain, a file in it is a cluster
 * lock that open() takes (O_RDONLY PR, else EX; O_NONBLOCK a trylock
 * failing with ETXTBSY), whose contents are the 64-byte LVB and whose
 * poll() says another node wants it.
 *
 * It runs on a thread of its own with its own event loop, as one more
 * client of dlmd.sock. A FUSE request that waits for the cluster (mkdir
 * for the join, open for the grant) is parked and answered from the IPC
 * callback, so nothing ever blocks the loop.
 *
 * As userdlm does, each lock file has one cluster lock shared by all of
 * its open files through holder counts. Its level stays cached after
 * close; it drops only when a BAST asks and no local holder is in the
 * way, and a new local request waits while a BAST is pending and the
 * level it wants is above the one we will drop to, so that remote
 * waiters are not starved.
 */
#define FUSE_USE_VERSION 34

#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "dlmfs.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#define DOMAIN_NAME_MAX	64	/* a name is shorter: the kernel's GROUP_NAME_MAX */
#define LOCK_NAME_MAX	32	/* USER_DLM_LOCK_ID_MAX_LEN, likewise */
#define LVB_LEN		64
#define LOCK_HASH	1024
#define RECONNECT_MS	500

#define LVL_IV		(-1)	/* no cluster lock */
#define LVL_NL		DLMD__MODE__MODE_NL
#define LVL_PR		DLMD__MODE__MODE_PR
#define LVL_EX		DLMD__MODE__MODE_EX

/* Lock state, userdlm's flags. */
#define LK_BUSY		0x01	/* a lock or convert request awaits its Ast */
#define LK_BLOCKED	0x02	/* a BAST asks for a level compatible with `blocking` */
#define LK_CANCEL	0x04	/* the busy request is being cancelled */
#define LK_TEARDOWN	0x08	/* unlink waits to unlock it */
#define LK_UNLOCKING	0x10	/* its unlock is sent */

enum node_kind { N_ROOT, N_DOMAIN, N_LOCK };

enum dom_state {
	DOM_JOINING,		/* mkdir waits for the join; not visible yet */
	DOM_JOINED,
	DOM_REJOINING,		/* the connection was lost: join again */
	DOM_LOST,		/* the join after a reconnect failed */
	DOM_LEAVING,		/* rmdir waits for the leave */
};

struct dlmfs_req;
TAILQ_HEAD(reqq, dlmfs_req);

/* What a FUSE inode number points to (domains and locks begin with it). */
struct dlmfs_node {
	enum node_kind		 kind;
	TAILQ_ENTRY(dlmfs_node)	 all;
	uint64_t		 ino;		/* st_ino, never reused */
	uint64_t		 nlookup;	/* the kernel's references */
	int			 removed;	/* unlinked or rmdir'ed */
	mode_t			 mode;
	uid_t			 uid;
	gid_t			 gid;
	struct timespec		 atime, mtime, ctime;
};

struct dlmfs_dom {
	struct dlmfs_node	 node;
	TAILQ_ENTRY(dlmfs_dom)	 entry;
	char			 name[DOMAIN_NAME_MAX];
	enum dom_state		 state;
	int			 inflight;	/* IPC requests naming it */
	struct reqq		 mkdirs;
	fuse_req_t		 rmdir;
	TAILQ_HEAD(, dlmfs_lock) locks;
};

struct dlmfs_lock {
	struct dlmfs_node	 node;
	TAILQ_ENTRY(dlmfs_lock)	 entry;
	LIST_ENTRY(dlmfs_lock)	 hash;		/* by node.ino, the `user` of its events */
	struct dlmfs_dom	*dom;		/* NULL once removed */
	char			 name[LOCK_NAME_MAX];
	uint64_t		 lockid;
	int			 level;		/* granted */
	int			 requested;	/* by the busy request */
	int			 blocking;	/* highest mode a BAST asked for */
	int			 noqueue;	/* the busy request is a trylock */
	unsigned int		 flags;
	int			 ro_holders, ex_holders;
	int			 inflight;	/* IPC requests naming it */
	int			 lock_replies;	/* LOCK replies still due */
	uint8_t			 lvb[LVB_LEN];
	int			 lvb_valid;
	struct reqq		 waiters;	/* opens waiting for a level */
	TAILQ_HEAD(, dlmfs_fh)	 fhs;
	fuse_req_t		 unlink;
};

/* A parked FUSE request: an open waiting for its level, or a mkdir. */
struct dlmfs_req {
	TAILQ_ENTRY(dlmfs_req)	 entry;
	TAILQ_ENTRY(dlmfs_req)	 all;
	struct reqq		*queue;
	fuse_req_t		 req;
	struct dlmfs_lock	*lk;
	struct fuse_file_info	 fi;
	int			 create;
	int			 level;
	int			 trylock;
	int			 attempt;	/* its trylock is the busy request */
	int			 interrupted;
};

/* One open file: a holder of its lock at `level`. */
struct dlmfs_fh {
	TAILQ_ENTRY(dlmfs_fh)	 entry;
	struct dlmfs_lock	*lk;
	int			 level;
	uint64_t		 gen;		/* of the connection it was granted on */
	struct fuse_pollhandle	*ph;
};

struct dlmfs {
	struct event_base	*base;
	struct fuse_session	*se;
	struct fuse_buf		 buf;
	struct event		*fuse_ev;
	struct event		*stop_ev;
	struct event		*retry_ev;
	struct event		*kick_ev;	/* answers interrupted requests */
	int			 stopfd;
	pthread_t		 thread;
	char			*sock_path;
	char			*mountpoint;
	struct ipc_conn		*conn;
	uint64_t		 gen;		/* bumped when the connection is lost */
	int			 warned;
	int			 stopping;
	uint64_t		 next_ino;
	struct dlmfs_node	 root;
	TAILQ_HEAD(, dlmfs_node) nodes;
	TAILQ_HEAD(, dlmfs_dom)	 doms;
	struct reqq		 reqs;
	LIST_HEAD(, dlmfs_lock)	 hash[LOCK_HASH];
};

static struct dlmfs *dfs;

static void	lock_process(struct dlmfs_lock *);
static int	dom_send(struct dlmfs_dom *, MsgType, ipc_reply_fn *);
static void	join_replied(const Envelope *, void *);

static const char *
level_name(int level)
{
	switch (level) {
	case LVL_NL:
		return "NL";
	case LVL_PR:
		return "PR";
	case LVL_EX:
		return "EX";
	default:
		return "IV";
	}
}

/* The highest level compatible with a request for `blocking`. */
static int
compat_level(int blocking)
{
	return blocking == LVL_EX ? LVL_NL : LVL_PR;
}

/* A dlmd status as the errno to give a caller. */
static int
dlmd_errno(int status)
{
	return status > 0 && status < 4096 ? status : EIO;
}

static void
node_init(struct dlmfs_node *n, enum node_kind kind, mode_t mode, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	n->kind = kind;
	n->ino = ++dfs->next_ino;
	n->mode = mode & 07777;
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	clock_gettime(CLOCK_REALTIME, &n->mtime);
	n->atime = n->ctime = n->mtime;
	TAILQ_INSERT_TAIL(&dfs->nodes, n, all);
}

static struct dlmfs_node *
node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &dfs->root : (struct dlmfs_node *)(uintptr_t)ino;
}

static fuse_ino_t
node_ino(struct dlmfs_node *n)
{
	return n == &dfs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static struct dlmfs_dom *
as_dom(struct dlmfs_node *n)
{
	return n->kind == N_DOMAIN ? (struct dlmfs_dom *)n : NULL;
}

static struct dlmfs_lock *
as_lock(struct dlmfs_node *n)
{
	return n->kind == N_LOCK ? (struct dlmfs_lock *)n : NULL;
}

/* A removed node lives until the kernel forgets it and dlmd answered. */
static void
node_maybe_free(struct dlmfs_node *n)
{
	if (!n->removed || n->nlookup > 0)
		return;
	if (n->kind == N_DOMAIN && ((struct dlmfs_dom *)n)->inflight > 0)
		return;
	if (n->kind == N_LOCK && ((struct dlmfs_lock *)n)->inflight > 0)
		return;
	TAILQ_REMOVE(&dfs->nodes, n, all);
	free(n);
}

static void
fill_stat(const struct dlmfs_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	st->st_blksize = 4096;
	if (n->kind == N_LOCK) {
		st->st_mode = S_IFREG | n->mode;
		st->st_nlink = n->removed ? 0 : 1;
		st->st_size = LVB_LEN;
	} else {
		st->st_mode = S_IFDIR | n->mode;
		st->st_nlink = n->removed ? 0 : 2;
	}
}

static void
entry_param(struct dlmfs_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	fill_stat(n, &e->attr);
	e->ino = node_ino(n);
	/* Other processes and nodes change the tree: cache nothing. */
	e->attr_timeout = 0;
	e->entry_timeout = 0;
}

static void
reply_entry(fuse_req_t req, struct dlmfs_node *n)
{
	struct fuse_entry_param e;

	entry_param(n, &e);
	if (fuse_reply_entry(req, &e) == 0)
		n->nlookup++;
}

static struct dlmfs_dom *
dom_find(const char *name)
{
	struct dlmfs_dom *dom;

	TAILQ_FOREACH(dom, &dfs->doms, entry)
		if (strcmp(dom->name, name) == 0)
			return dom;
	return NULL;
}

static struct dlmfs_lock *
lock_find(struct dlmfs_dom *dom, const char *name)
{
	struct dlmfs_lock *lk;

	TAILQ_FOREACH(lk, &dom->locks, entry)
		if (strcmp(lk->name, name) == 0)
			return lk;
	return NULL;
}

static struct dlmfs_lock *
lock_by_user(uint64_t user)
{
	struct dlmfs_lock *lk;

	LIST_FOREACH(lk, &dfs->hash[user % LOCK_HASH], hash)
		if (lk->node.ino == user)
			return lk;
	return NULL;
}

/*
 * Parked requests. The interrupt callback only marks them: it may run
 * inside fuse_req_interrupt_func, where replying would free the request
 * under libfuse's feet.
 */
static void
req_interrupted(fuse_req_t req, void *arg)
{
	struct dlmfs_req *r = arg;

	(void)req;
	r->interrupted = 1;
	event_active(dfs->kick_ev, 0, 0);
}

static struct dlmfs_req *
req_park(fuse_req_t req, struct reqq *q)
{
	struct dlmfs_req *r;

	r = xcalloc(1, sizeof(*r));
	r->req = req;
	r->queue = q;
	TAILQ_INSERT_TAIL(q, r, entry);
	TAILQ_INSERT_TAIL(&dfs->reqs, r, all);
	fuse_req_interrupt_func(req, req_interrupted, r);
	return r;
}

/* Forget a parked request once it is answered. */
static void
req_done(struct dlmfs_req *r)
{
	TAILQ_REMOVE(r->queue, r, entry);
	TAILQ_REMOVE(&dfs->reqs, r, all);
	free(r);
}

static void
req_fail(struct dlmfs_req *r, int err)
{
	fuse_reply_err(r->req, err);
	req_done(r);
}

static struct dlmfs_dom *
dom_new(const char *name, mode_t mode, fuse_req_t req)
{
	struct dlmfs_dom *dom;

	dom = xcalloc(1, sizeof(*dom));
	node_init(&dom->node, N_DOMAIN, mode, req);
	strcpy(dom->name, name);
	dom->state = DOM_JOINING;
	TAILQ_INIT(&dom->mkdirs);
	TAILQ_INIT(&dom->locks);
	TAILQ_INSERT_TAIL(&dfs->doms, dom, entry);
	return dom;
}

static void
dom_remove(struct dlmfs_dom *dom)
{
	TAILQ_REMOVE(&dfs->doms, dom, entry);
	dom->node.removed = 1;
	node_maybe_free(&dom->node);
}

static struct dlmfs_lock *
lock_new(struct dlmfs_dom *dom, const char *name, mode_t mode, fuse_req_t req)
{
	struct dlmfs_lock *lk;

	lk = xcalloc(1, sizeof(*lk));
	node_init(&lk->node, N_LOCK, mode, req);
	lk->dom = dom;
	strcpy(lk->name, name);
	lk->level = lk->requested = LVL_IV;
	lk->blocking = LVL_NL;
	/* A new resource's LVB is zeroes, and valid. */
	lk->lvb_valid = 1;
	TAILQ_INIT(&lk->waiters);
	TAILQ_INIT(&lk->fhs);
	TAILQ_INSERT_TAIL(&dom->locks, lk, entry);
	LIST_INSERT_HEAD(&dfs->hash[lk->node.ino % LOCK_HASH], lk, hash);
	return lk;
}

/* The lock left its domain: answer the unlink that removed it. */
static void
lock_remove(struct dlmfs_lock *lk)
{
	TAILQ_REMOVE(&lk->dom->locks, lk, entry);
	LIST_REMOVE(lk, hash);
	lk->dom = NULL;
	lk->node.removed = 1;
	if (lk->unlink != NULL) {
		fuse_reply_err(lk->unlink, 0);
		lk->unlink = NULL;
	}
	node_maybe_free(&lk->node);
}

static int
lock_holders(const struct dlmfs_lock *lk)
{
	return lk->ro_holders + lk->ex_holders;
}

/* Local holders in the way of dropping to compat_level(blocking). */
static int
lock_incompat_holders(const struct dlmfs_lock *lk)
{
	if (lk->blocking == LVL_EX)
		return lock_holders(lk) > 0;
	return lk->ex_holders > 0;
}

/* Does a live waiter want `level` or more? */
static int
lock_wanted(const struct dlmfs_lock *lk, int level)
{
	const struct dlmfs_req *r;

	TAILQ_FOREACH(r, &lk->waiters, entry)
		if (!r->interrupted && r->level >= level)
			return 1;
	return 0;
}

static void
lock_notify_pollers(struct dlmfs_lock *lk)
{
	struct dlmfs_fh *fh;

	TAILQ_FOREACH(fh, &lk->fhs, entry) {
		if (fh->ph == NULL)
			continue;
		fuse_lowlevel_notify_poll(fh->ph);
		fuse_pollhandle_destroy(fh->ph);
		fh->ph = NULL;
	}
}

/* Fail the waiters that want more than the level held. */
static void
lock_fail_waiters(struct dlmfs_lock *lk, int err, int attempts_only)
{
	struct dlmfs_req *r, *next;

	for (r = TAILQ_FIRST(&lk->waiters); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->level > lk->level && (!attempts_only || r->attempt))
			req_fail(r, err);
	}
}

static void
lock_replied(const Envelope *rep, void *arg)
{
	struct dlmfs_lock *lk = arg;

	lk->inflight--;
	lk->lock_replies--;
	if (rep == NULL || lk->dom == NULL) {
		node_maybe_free(&lk->node);
		return;
	}
	if (rep->status != 0) {
		/* Refused: no Ast will come for it. */
		log_warnx("dlmfs: %s/%s: dlmd refused %s: %s", lk->dom->name,
		    lk->name, level_name(lk->requested),
		    rep->error[0] ? rep->error : strerror(dlmd_errno(rep->status)));
		lk->flags &= ~(LK_BUSY | LK_CANCEL);
		lock_fail_waiters(lk, EIO, 0);
	} else if (lk->lock_replies == 0 && (lk->flags & LK_BUSY) &&
	    lk->level == LVL_IV && lk->lockid == 0 &&
	    rep->payload_case == ENVELOPE__PAYLOAD_LOCK_ACCEPTED) {
		/* A new lock's id, which a cancel needs. */
		lk->lockid = rep->lock_accepted->lockid;
	}
	lock_process(lk);
}

/* Ask for `level`: a new lock, an up-convert or a down-convert. */
static int
lock_send(struct dlmfs_lock *lk, int level, uint32_t flags)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__LockRequest lr = DLMD__LOCK_REQUEST__INIT;

	lr.domain = lk->dom->name;
	lr.name.data = (uint8_t *)lk->name;
	lr.name.len = strlen(lk->name);
	lr.mode = level;
	lr.flags = flags | DLMD__FLAG__FLAG_VALBLK;
	lr.user = lk->node.ino;
	if (lk->level != LVL_IV) {
		lr.flags |= DLMD__FLAG__FLAG_CONVERT;
		lr.lockid = lk->lockid;
	}
	/* Dropping from EX publishes what the holders wrote. */
	if (lk->level == LVL_EX && level < LVL_EX) {
		lr.lvb.data = lk->lvb;
		lr.lvb.len = LVB_LEN;
	}
	env.type = MSG_TYPE__MSG_DLMD_LOCK;
	env.payload_case = ENVELOPE__PAYLOAD_LOCK_REQUEST;
	env.lock_request = &lr;
	if (ipc_request(dfs->conn, &env, lock_replied, lk) == -1)
		return -1;
	log_debug("dlmfs: %s/%s: %s -> %s%s", lk->dom->name, lk->name,
	    level_name(lk->level), level_name(level),
	    flags & DLMD__FLAG__FLAG_NOQUEUE ? " (trylock)" : "");
	if (lk->level == LVL_IV)
		lk->lockid = 0;
	lk->inflight++;
	lk->lock_replies++;
	lk->flags |= LK_BUSY;
	lk->requested = level;
	lk->noqueue = (flags & DLMD__FLAG__FLAG_NOQUEUE) != 0;
	return 0;
}

static void
cancel_replied(const Envelope *rep, void *arg)
{
	struct dlmfs_lock *lk = arg;

	lk->inflight--;
	/* EALREADY: granted meanwhile, and the Ast says so. */
	if (rep != NULL && rep->status != 0 && rep->status != EALREADY)
		log_debug("dlmfs: %s: cancel refused: %s", lk->name, rep->error);
	node_maybe_free(&lk->node);
}

static int
lock_cancel(struct dlmfs_lock *lk)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__UnlockRequest ur = DLMD__UNLOCK_REQUEST__INIT;

	ur.domain = lk->dom->name;
	ur.lockid = lk->lockid;
	ur.flags = DLMD__FLAG__FLAG_CANCEL;
	env.type = MSG_TYPE__MSG_DLMD_UNLOCK;
	env.payload_case = ENVELOPE__PAYLOAD_UNLOCK_REQUEST;
	env.unlock_request = &ur;
	if (ipc_request(dfs->conn, &env, cancel_replied, lk) == -1)
		return -1;
	log_debug("dlmfs: %s/%s: cancelling %s", lk->dom->name, lk->name,
	    level_name(lk->requested));
	lk->inflight++;
	lk->flags |= LK_CANCEL;
	return 0;
}

static void
unlock_replied(const Envelope *rep, void *arg)
{
	struct dlmfs_lock *lk = arg;

	lk->inflight--;
	if (lk->dom == NULL) {
		node_maybe_free(&lk->node);
		return;
	}
	/* A lost connection took the lock with it; EINVAL: it is gone too. */
	if (rep != NULL && rep->status != 0 && rep->status != EINVAL) {
		log_warnx("dlmfs: %s/%s: unlock refused: %s", lk->dom->name,
		    lk->name, rep->error);
		lk->flags &= ~(LK_TEARDOWN | LK_UNLOCKING);
		fuse_reply_err(lk->unlink, dlmd_errno(rep->status));
		lk->unlink = NULL;
		lock_process(lk);
		return;
	}
	lock_remove(lk);
}

static int
lock_unlock(struct dlmfs_lock *lk)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__UnlockRequest ur = DLMD__UNLOCK_REQUEST__INIT;

	ur.domain = lk->dom->name;
	ur.lockid = lk->lockid;
	if (lk->level == LVL_EX) {
		ur.flags = DLMD__FLAG__FLAG_VALBLK;
		ur.lvb.data = lk->lvb;
		ur.lvb.len = LVB_LEN;
	}
	env.type = MSG_TYPE__MSG_DLMD_UNLOCK;
	env.payload_case = ENVELOPE__PAYLOAD_UNLOCK_REQUEST;
	env.unlock_request = &ur;
	if (ipc_request(dfs->conn, &env, unlock_replied, lk) == -1)
		return -1;
	lk->inflight++;
	lk->flags |= LK_UNLOCKING;
	return 0;
}

/* Give a waiter its open file; the lock is held at its level or above. */
static void
lock_grant(struct dlmfs_lock *lk, struct dlmfs_req *r)
{
	struct fuse_entry_param e;
	struct dlmfs_fh *fh;
	int rc;

	fh = xcalloc(1, sizeof(*fh));
	fh->lk = lk;
	fh->level = r->level;
	fh->gen = dfs->gen;
	TAILQ_INSERT_TAIL(&lk->fhs, fh, entry);
	if (r->level == LVL_EX)
		lk->ex_holders++;
	else
		lk->ro_holders++;
	r->fi.fh = (uintptr_t)fh;
	/* Every read and write is the LVB of the moment, never a page. */
	r->fi.direct_io = 1;
	if (r->create) {
		entry_param(&lk->node, &e);
		if ((rc = fuse_reply_create(r->req, &e, &r->fi)) == 0)
			lk->node.nlookup++;
	} else
		rc = fuse_reply_open(r->req, &r->fi);
	req_done(r);
	if (rc != 0) {
		/* The opener is gone: this holder never was. */
		if (fh->level == LVL_EX)
			lk->ex_holders--;
		else
			lk->ro_holders--;
		TAILQ_REMOVE(&lk->fhs, fh, entry);
		free(fh);
	}
}

/*
 * One step of a lock's state machine: drop a level a BAST asks for,
 * cancel a request nobody wants or that blocks another node, unlock for
 * unlink, then serve the waiters. Returns 1 when it changed something
 * (look again), 0 when nothing more can happen until an answer comes.
 */
static int
lock_step(struct dlmfs_lock *lk)
{
	struct dlmfs_req *r;
	int compat;

	if (lk->dom == NULL || lk->dom->state != DOM_JOINED ||
	    dfs->conn == NULL || (lk->flags & LK_UNLOCKING))
		return 0;
	compat = compat_level(lk->blocking);
	if ((lk->flags & (LK_BLOCKED | LK_BUSY)) == LK_BLOCKED) {
		if (lk->level <= compat) {
			/* Already as low as asked (a stale BAST). */
			lk->flags &= ~LK_BLOCKED;
			lk->blocking = LVL_NL;
			return 1;
		}
		if (!lock_incompat_holders(lk))
			return lock_send(lk, compat, 0) == 0;
	}
	if ((lk->flags & (LK_BUSY | LK_CANCEL)) == LK_BUSY && !lk->noqueue &&
	    lk->requested > lk->level && lk->lockid != 0 &&
	    ((lk->flags & LK_BLOCKED) || !lock_wanted(lk, lk->requested)))
		return lock_cancel(lk) == 0;
	if ((lk->flags & (LK_TEARDOWN | LK_BUSY)) == LK_TEARDOWN) {
		if (lk->level == LVL_IV) {
			lock_remove(lk);
			return 0;
		}
		return lock_unlock(lk) == 0;
	}
	TAILQ_FOREACH(r, &lk->waiters, entry) {
		if (r->interrupted)
			continue;
		if ((lk->flags & LK_BLOCKED) && r->level > compat) {
			/* Another node is owed this lock first. */
			if (!r->trylock)
				continue;
			req_fail(r, ETXTBSY);
			return 1;
		}
		if (r->level <= lk->level) {
			lock_grant(lk, r);
			return 1;
		}
		if (lk->flags & LK_BUSY) {
			/* A trylock waits only behind requests that cannot wait. */
			if (r->trylock && !r->attempt && !lk->noqueue &&
			    lk->requested > lk->level) {
				req_fail(r, ETXTBSY);
				return 1;
			}
			continue;
		}
		if (lock_send(lk, r->level, r->trylock ?
		    DLMD__FLAG__FLAG_NOQUEUE : 0) == -1)
			return 0;
		r->attempt = r->trylock;
		return 1;
	}
	return 0;
}

/* Run the lock's state machine; the caller must not touch lk afterwards. */
static void
lock_process(struct dlmfs_lock *lk)
{
	while (lock_step(lk))
		;
}

/* The connection is gone and the cluster lock with it. */
static void
lock_reset(struct dlmfs_lock *lk)
{
	struct dlmfs_req *r;

	while ((r = TAILQ_FIRST(&lk->waiters)) != NULL)
		req_fail(r, EIO);
	lk->level = lk->requested = LVL_IV;
	lk->lockid = 0;
	lk->blocking = LVL_NL;
	lk->noqueue = 0;
	lk->ro_holders = lk->ex_holders = 0;
	lk->flags &= LK_TEARDOWN | LK_UNLOCKING;
	/* Pollers see POLLERR now. */
	lock_notify_pollers(lk);
	/* An unlink waiting for a busy lock has nothing left to unlock. */
	if (lk->flags == LK_TEARDOWN)
		lock_remove(lk);
}

static void
on_ast(const Dlmd__Ast *ast)
{
	struct dlmfs_lock *lk = lock_by_user(ast->user);
	int old;

	if (lk == NULL || !(lk->flags & LK_BUSY)) {
		log_debug("dlmfs: Ast for no request (lock %llx)",
		    (unsigned long long)ast->lockid);
		return;
	}
	lk->flags &= ~(LK_BUSY | LK_CANCEL);
	if (ast->lockid != 0)
		lk->lockid = ast->lockid;
	switch (ast->status) {
	case 0:
		old = lk->level;
		lk->level = ast->mode;
		if (lk->level >= LVL_PR && ast->lvb.len == LVB_LEN) {
			memcpy(lk->lvb, ast->lvb.data, LVB_LEN);
			lk->lvb_valid = ast->lvb_valid;
		}
		if ((lk->flags & LK_BLOCKED) && lk->level < old &&
		    lk->level <= compat_level(lk->blocking)) {
			lk->flags &= ~LK_BLOCKED;
			lk->blocking = LVL_NL;
		}
		log_debug("dlmfs: %s/%s: granted %s", lk->dom->name, lk->name,
		    level_name(lk->level));
		break;
	case ECANCELED:
		/* A cancelled new lock is no lock; a convert keeps its level. */
		if (lk->level == LVL_IV)
			lk->lockid = 0;
		break;
	case EAGAIN:
		if (lk->noqueue) {
			if (lk->level == LVL_IV)
				lk->lockid = 0;
			lock_fail_waiters(lk, ETXTBSY, 1);
			break;
		}
		/* FALLTHROUGH */
	default:
		log_warnx("dlmfs: %s/%s: request for %s failed: %s",
		    lk->dom->name, lk->name, level_name(lk->requested),
		    strerror(dlmd_errno(ast->status)));
		if (lk->level == LVL_IV)
			lk->lockid = 0;
		lock_fail_waiters(lk, EIO, 0);
	}
	lock_process(lk);
}

static void
on_bast(const Dlmd__Bast *bast)
{
	struct dlmfs_lock *lk = lock_by_user(bast->user);

	if (lk == NULL || lk->level == LVL_IV || bast->blocked < LVL_PR)
		return;
	log_debug("dlmfs: %s/%s: BAST, %s blocked", lk->dom->name, lk->name,
	    level_name(bast->blocked));
	if (!(lk->flags & LK_BLOCKED)) {
		lk->flags |= LK_BLOCKED;
		lk->blocking = bast->blocked;
		lock_notify_pollers(lk);
	} else if ((int)bast->blocked > lk->blocking)
		lk->blocking = bast->blocked;
	lock_process(lk);
}

static void
on_event(struct ipc_conn *c, const Envelope *ev)
{
	(void)c;
	if (ev->type == MSG_TYPE__MSG_DLMD_AST &&
	    ev->payload_case == ENVELOPE__PAYLOAD_AST)
		on_ast(ev->ast);
	else if (ev->type == MSG_TYPE__MSG_DLMD_BAST &&
	    ev->payload_case == ENVELOPE__PAYLOAD_BAST)
		on_bast(ev->bast);
	/* Domain events: dlmfs ignores recovery, as the kernel's does. */
}

static void
on_close(struct ipc_conn *c)
{
	struct timeval tv = { 0, RECONNECT_MS * 1000 };
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk, *next;

	(void)c;
	dfs->conn = NULL;
	dfs->gen++;
	if (!dfs->stopping)
		log_warnx("dlmfs: lost %s; the locks held through it are lost",
		    dfs->sock_path);
	TAILQ_FOREACH(dom, &dfs->doms, entry) {
		if (dom->state == DOM_JOINED)
			dom->state = DOM_REJOINING;
		for (lk = TAILQ_FIRST(&dom->locks); lk != NULL; lk = next) {
			next = TAILQ_NEXT(lk, entry);
			lock_reset(lk);
		}
	}
	if (!dfs->stopping)
		evtimer_add(dfs->retry_ev, &tv);
}

static void
dlmd_connect(void)
{
	struct timeval tv = { 0, RECONNECT_MS * 1000 };
	struct dlmfs_dom *dom;

	dfs->conn = ipc_connect(dfs->base, dfs->sock_path, on_event, on_close,
	    NULL);
	if (dfs->conn == NULL) {
		if (!dfs->warned)
			log_warn("dlmfs: connect %s (retrying)", dfs->sock_path);
		dfs->warned = 1;
		evtimer_add(dfs->retry_ev, &tv);
		return;
	}
	if (dfs->warned)
		log_info("dlmfs: connected to %s", dfs->sock_path);
	dfs->warned = 0;
	TAILQ_FOREACH(dom, &dfs->doms, entry) {
		if (dom->state != DOM_REJOINING && dom->state != DOM_LOST)
			continue;
		dom->state = DOM_REJOINING;
		if (dom_send(dom, MSG_TYPE__MSG_DLMD_JOIN, join_replied) == -1)
			return;
	}
}

static void
retry_connect(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	dlmd_connect();
}

static int
dom_send(struct dlmfs_dom *dom, MsgType type, ipc_reply_fn *fn)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__Domain d = DLMD__DOMAIN__INIT;

	d.name = dom->name;
	env.type = type;
	env.payload_case = ENVELOPE__PAYLOAD_DOMAIN;
	env.domain = &d;
	if (dfs->conn == NULL || ipc_request(dfs->conn, &env, fn, dom) == -1)
		return -1;
	dom->inflight++;
	return 0;
}

static void
leave_replied(const Envelope *rep, void *arg)
{
	struct dlmfs_dom *dom = arg;

	dom->inflight--;
	if (dom->node.removed) {
		node_maybe_free(&dom->node);
		return;
	}
	/* Whatever dlmd says, the domain is of no more use to us. */
	if (rep != NULL && rep->status != 0)
		log_warnx("dlmfs: leaving domain %s: %s", dom->name, rep->error);
	if (dom->rmdir != NULL)
		fuse_reply_err(dom->rmdir, 0);
	dom->rmdir = NULL;
	dom_remove(dom);
}

static void
join_replied(const Envelope *rep, void *arg)
{
	struct dlmfs_dom *dom = arg;
	struct dlmfs_lock *lk, *next;
	struct dlmfs_req *r;
	int err;

	dom->inflight--;
	if (dom->node.removed) {
		node_maybe_free(&dom->node);
		return;
	}
	err = rep == NULL ? ENOTCONN : rep->status;
	if (err != 0 && rep != NULL)
		log_warnx("dlmfs: cannot join domain %s: %s", dom->name,
		    rep->error[0] ? rep->error : strerror(dlmd_errno(err)));
	if (dom->state == DOM_JOINING) {
		if (err != 0) {
			while ((r = TAILQ_FIRST(&dom->mkdirs)) != NULL)
				req_fail(r, dlmd_errno(err));
			dom_remove(dom);
			return;
		}
		if ((r = TAILQ_FIRST(&dom->mkdirs)) == NULL) {
			/* Every mkdir was interrupted: undo the join. */
			dom->state = DOM_LEAVING;
			if (dom_send(dom, MSG_TYPE__MSG_DLMD_LEAVE, leave_replied) == -1)
				dom_remove(dom);
			return;
		}
		dom->state = DOM_JOINED;
		reply_entry(r->req, &dom->node);
		req_done(r);
		/* Concurrent mkdirs lost the race, as on the kernel's i_mutex. */
		while ((r = TAILQ_FIRST(&dom->mkdirs)) != NULL)
			req_fail(r, EEXIST);
		log_info("dlmfs: joined domain %s", dom->name);
		return;
	}
	/* A rejoin after a reconnect; without a connection, the next one retries. */
	if (rep == NULL)
		return;
	dom->state = err == 0 ? DOM_JOINED : DOM_LOST;
	for (lk = TAILQ_FIRST(&dom->locks); lk != NULL; lk = next) {
		next = TAILQ_NEXT(lk, entry);
		if (err != 0)
			lock_fail_waiters(lk, EIO, 0);
		else
			lock_process(lk);
	}
}

/* FUSE operations. */

static void
dlmfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_node *n = node_of(parent);
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk;

	if (n->kind == N_ROOT) {
		if ((dom = dom_find(name)) != NULL && dom->state != DOM_JOINING) {
			reply_entry(req, &dom->node);
			return;
		}
	} else if ((dom = as_dom(n)) != NULL && !n->removed &&
	    (lk = lock_find(dom, name)) != NULL) {
		reply_entry(req, &lk->node);
		return;
	}
	fuse_reply_err(req, ENOENT);
}

static void
node_forget(fuse_ino_t ino, uint64_t nlookup)
{
	struct dlmfs_node *n = node_of(ino);

	if (n == &dfs->root)
		return;
	n->nlookup -= nlookup < n->nlookup ? nlookup : n->nlookup;
	node_maybe_free(n);
}

static void
dlmfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(ino, nlookup);
	fuse_reply_none(req);
}

static void
dlmfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		node_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
dlmfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_stat(node_of(ino), &st);
	fuse_reply_attr(req, &st, 0);
}

/* Ownership, mode and times as any inode; the size stays 64 (dlmfs ignores it). */
static void
dlmfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(ino);
	struct timespec now;
	struct stat st;

	(void)fi;
	clock_gettime(CLOCK_REALTIME, &now);
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = attr->st_mode & 07777;
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		n->atime = now;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		n->mtime = now;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = attr->st_mtim;
	n->ctime = now;
	fill_stat(n, &st);
	fuse_reply_attr(req, &st, 0);
}

struct dirbuf {
	fuse_req_t	 req;
	char		*buf;
	size_t		 size, len;
	off_t		 off, pos;
	int		 full;
};

static void
dir_add(struct dirbuf *d, const char *name, mode_t type, uint64_t ino)
{
	struct stat st;
	size_t n;

	if (d->full || d->pos++ < d->off)
		return;
	memset(&st, 0, sizeof(st));
	st.st_mode = type;
	st.st_ino = ino;
	n = fuse_add_direntry(d->req, d->buf + d->len, d->size - d->len, name,
	    &st, d->pos);
	if (n > d->size - d->len)
		d->full = 1;
	else
		d->len += n;
}

static void
dlmfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(ino);
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk;
	struct dirbuf d = { .req = req, .size = size, .off = off };

	(void)fi;
	if (n->kind == N_LOCK) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d.buf = xcalloc(1, size);
	dir_add(&d, ".", S_IFDIR, n->ino);
	dir_add(&d, "..", S_IFDIR, dfs->root.ino);
	if (n->kind == N_ROOT) {
		TAILQ_FOREACH(dom, &dfs->doms, entry)
			if (dom->state != DOM_JOINING)
				dir_add(&d, dom->name, S_IFDIR, dom->node.ino);
	} else if (!n->removed) {
		TAILQ_FOREACH(lk, &as_dom(n)->locks, entry)
			dir_add(&d, lk->name, S_IFREG, lk->node.ino);
	}
	fuse_reply_buf(req, d.buf, d.len);
	free(d.buf);
}

/* mkdir at the root joins the domain of that name; elsewhere EPERM. */
static void
dlmfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct dlmfs_dom *dom;

	if (node_of(parent)->kind != N_ROOT) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strlen(name) >= DOMAIN_NAME_MAX) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((dom = dom_find(name)) != NULL) {
		if (dom->state == DOM_JOINING)
			req_park(req, &dom->mkdirs);
		else
			fuse_reply_err(req, EEXIST);
		return;
	}
	if (dfs->conn == NULL) {
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	dom = dom_new(name, mode, req);
	if (dom_send(dom, MSG_TYPE__MSG_DLMD_JOIN, join_replied) == -1) {
		dom_remove(dom);
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	req_park(req, &dom->mkdirs);
}

/* rmdir leaves the domain, once it has no lock file. */
static void
dlmfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_dom *dom;

	if (node_of(parent)->kind != N_ROOT || (dom = dom_find(name)) == NULL ||
	    dom->state == DOM_JOINING || dom->state == DOM_LEAVING) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!TAILQ_EMPTY(&dom->locks)) {
		fuse_reply_err(req, ENOTEMPTY);
		return;
	}
	if (dom->inflight > 0) {
		/* Its rejoin is on the way. */
		fuse_reply_err(req, EBUSY);
		return;
	}
	if (dom->state != DOM_JOINED ||
	    dom_send(dom, MSG_TYPE__MSG_DLMD_LEAVE, leave_replied) == -1) {
		/* Not joined through the current connection: nothing to leave. */
		dom_remove(dom);
		fuse_reply_err(req, 0);
		return;
	}
	dom->state = DOM_LEAVING;
	dom->rmdir = req;
}

/* Park an open until its lock is held at the level the flags ask for. */
static void
lock_open(fuse_req_t req, struct dlmfs_lock *lk, struct fuse_file_info *fi,
    int create)
{
	struct dlmfs_req *r;

	if (lk->flags & LK_TEARDOWN) {
		/* userdlm's answer while unlink destroys the lock. */
		fuse_reply_err(req, EAGAIN);
		return;
	}
	if (dfs->conn == NULL) {
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	if (lk->dom->state == DOM_LOST) {
		fuse_reply_err(req, EIO);
		return;
	}
	r = req_park(req, &lk->waiters);
	r->lk = lk;
	r->fi = *fi;
	r->create = create;
	r->level = (fi->flags & O_ACCMODE) == O_RDONLY ? LVL_PR : LVL_EX;
	r->trylock = (fi->flags & O_NONBLOCK) != 0;
	lock_process(lk);
}

static void
dlmfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct dlmfs_node *n = node_of(parent);
	struct dlmfs_dom *dom = as_dom(n);
	struct dlmfs_lock *lk;

	if (dom == NULL) {
		/* The root takes directories only. */
		fuse_reply_err(req, EACCES);
		return;
	}
	if (n->removed || dom->state == DOM_LEAVING) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (strlen(name) >= LOCK_NAME_MAX || name[0] == '$') {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((lk = lock_find(dom, name)) != NULL && (fi->flags & O_EXCL)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	if (lk == NULL)
		lk = lock_new(dom, name, mode, req);
	lock_open(req, lk, fi, 1);
}

static void
dlmfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dlmfs_lock *lk = as_lock(node_of(ino));

	if (lk == NULL) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (lk->node.removed) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	lock_open(req, lk, fi, 0);
}

static struct dlmfs_fh *
fh_of(const struct fuse_file_info *fi)
{
	return (struct dlmfs_fh *)(uintptr_t)fi->fh;
}

/* close() drops a holder; the level stays cached until a BAST. */
static void
dlmfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dlmfs_fh *fh = fh_of(fi);
	struct dlmfs_lock *lk = fh->lk;

	(void)ino;
	if (fh->gen == dfs->gen) {
		if (fh->level == LVL_EX)
			lk->ex_holders--;
		else
			lk->ro_holders--;
	}
	TAILQ_REMOVE(&lk->fhs, fh, entry);
	if (fh->ph != NULL)
		fuse_pollhandle_destroy(fh->ph);
	free(fh);
	fuse_reply_err(req, 0);
	lock_process(lk);
}

/* The LVB; nothing when a dead holder may have left it stale. */
static void
dlmfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct dlmfs_fh *fh = fh_of(fi);
	struct dlmfs_lock *lk = fh->lk;

	(void)ino;
	if (fh->gen != dfs->gen) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (!lk->lvb_valid || off >= LVB_LEN) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > (size_t)(LVB_LEN - off))
		size = LVB_LEN - off;
	fuse_reply_buf(req, (const char *)lk->lvb + off, size);
}

/* Into the LVB, published when the EX level drops; past 64 bytes ENOSPC. */
static void
dlmfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct dlmfs_fh *fh = fh_of(fi);
	struct dlmfs_lock *lk = fh->lk;

	(void)ino;
	if (fh->gen != dfs->gen) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (fh->level != LVL_EX) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (off >= LVB_LEN) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size > (size_t)(LVB_LEN - off))
		size = LVB_LEN - off;
	memcpy(lk->lvb + off, buf, size);
	lk->lvb_valid = 1;
	fuse_reply_write(req, size);
}

/* POLLIN while another node waits for the lock (a BAST came). */
static void
dlmfs_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph)
{
	struct dlmfs_fh *fh = fh_of(fi);
	unsigned int revents = 0;

	(void)ino;
	if (ph != NULL) {
		if (fh->ph != NULL)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = ph;
	}
	if (fh->gen != dfs->gen)
		revents = POLLERR;
	else if (fh->lk->flags & LK_BLOCKED)
		revents = POLLIN | POLLRDNORM;
	fuse_reply_poll(req, revents);
}

/* unlink destroys the lock: EBUSY while it is open or waited for. */
static void
dlmfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dlmfs_dom *dom = as_dom(node_of(parent));
	struct dlmfs_lock *lk;

	if (dom == NULL) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (dom->node.removed || (lk = lock_find(dom, name)) == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!TAILQ_EMPTY(&lk->fhs) || !TAILQ_EMPTY(&lk->waiters) ||
	    (lk->flags & LK_TEARDOWN)) {
		fuse_reply_err(req, EBUSY);
		return;
	}
	lk->flags |= LK_TEARDOWN;
	lk->unlink = req;
	if (lk->level == LVL_IV && !(lk->flags & LK_BUSY)) {
		lock_remove(lk);
		return;
	}
	lock_process(lk);
}

static void
dlmfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EPERM);
}

static void
dlmfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops dlmfs_ops = {
	.lookup = dlmfs_lookup,
	.forget = dlmfs_forget,
	.forget_multi = dlmfs_forget_multi,
	.getattr = dlmfs_getattr,
	.setattr = dlmfs_setattr,
	.readdir = dlmfs_readdir,
	.mkdir = dlmfs_mkdir,
	.rmdir = dlmfs_rmdir,
	.create = dlmfs_create,
	.open = dlmfs_open,
	.release = dlmfs_release,
	.read = dlmfs_read,
	.write = dlmfs_write,
	.poll = dlmfs_poll,
	.unlink = dlmfs_unlink,
	.mknod = dlmfs_mknod,
	.symlink = dlmfs_symlink,
	.link = dlmfs_link,
	.rename = dlmfs_rename,
	.statfs = dlmfs_statfs,
};

/* Answer the requests whose callers took a signal, and cancel what they wanted. */
static void
kick(evutil_socket_t fd, short ev, void *arg)
{
	struct dlmfs_req *r;
	struct dlmfs_lock *lk;

	(void)fd;
	(void)ev;
	(void)arg;
	for (;;) {
		TAILQ_FOREACH(r, &dfs->reqs, all)
			if (r->interrupted)
				break;
		if (r == NULL)
			return;
		lk = r->lk;
		req_fail(r, EINTR);
		if (lk != NULL)
			lock_process(lk);
	}
}

static void
fuse_readable(evutil_socket_t fd, short ev, void *arg)
{
	int rc;

	(void)fd;
	(void)ev;
	(void)arg;
	rc = fuse_session_receive_buf(dfs->se, &dfs->buf);
	if (rc == -EINTR || rc == -EAGAIN)
		return;
	if (rc <= 0) {
		log_warnx("dlmfs: %s unmounted (%s)", dfs->mountpoint,
		    rc ? strerror(-rc) : "end of session");
		event_del(dfs->fuse_ev);
		return;
	}
	fuse_session_process_buf(dfs->se, &dfs->buf);
}

static void
stop_requested(evutil_socket_t fd, short ev, void *arg)
{
	uint64_t n;

	(void)ev;
	(void)arg;
	if (read(fd, &n, sizeof(n)) == -1 && errno != EAGAIN)
		log_warn("dlmfs: read stop event");
	event_base_loopbreak(dfs->base);
}

static void *
dlmfs_thread(void *arg)
{
	(void)arg;
	if (event_base_dispatch(dfs->base) == -1)
		log_warnx("dlmfs: event loop failed");
	return NULL;
}

/* A mount left by a killed dlmd answers ENOTCONN: detach it. */
static void
clear_stale_mount(const char *mp)
{
	struct stat st;

	if (stat(mp, &st) == -1 && errno == ENOTCONN) {
		log_info("dlmfs: detaching the stale mount on %s", mp);
		if (umount2(mp, MNT_DETACH) == -1)
			log_warn("dlmfs: umount %s", mp);
	}
}

/* Tear down whatever dlmfs_start built, answering every parked request. */
static void
dlmfs_free(void)
{
	struct dlmfs_node *n;
	struct dlmfs_lock *lk;
	struct dlmfs_fh *fh;

	dfs->stopping = 1;
	if (dfs->fuse_ev != NULL)
		event_free(dfs->fuse_ev);
	/* Closing fails every lock and request, and answers their callers. */
	if (dfs->conn != NULL)
		ipc_conn_close(dfs->conn);
	/* Let the IPC layer free the connection. */
	event_base_loop(dfs->base, EVLOOP_NONBLOCK);
	while ((n = TAILQ_FIRST(&dfs->nodes)) != NULL) {
		if ((lk = as_lock(n)) != NULL) {
			while ((fh = TAILQ_FIRST(&lk->fhs)) != NULL) {
				TAILQ_REMOVE(&lk->fhs, fh, entry);
				if (fh->ph != NULL)
					fuse_pollhandle_destroy(fh->ph);
				free(fh);
			}
		}
		TAILQ_REMOVE(&dfs->nodes, n, all);
		free(n);
	}
	if (dfs->se != NULL) {
		fuse_session_unmount(dfs->se);
		fuse_session_destroy(dfs->se);
	}
	if (dfs->stop_ev != NULL)
		event_free(dfs->stop_ev);
	if (dfs->retry_ev != NULL)
		event_free(dfs->retry_ev);
	if (dfs->kick_ev != NULL)
		event_free(dfs->kick_ev);
	if (dfs->base != NULL)
		event_base_free(dfs->base);
	if (dfs->stopfd != -1)
		close(dfs->stopfd);
	free(dfs->buf.mem);
	free(dfs->sock_path);
	free(dfs->mountpoint);
	free(dfs);
	dfs = NULL;
}

static int
dlmfs_mount(void)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *opts;
	int fd;

	/* Others may use the tree as its modes allow, as with the kernel's. */
	opts = geteuid() == 0 ?
	    "fsname=ocfs2_dlmfs,subtype=ocfs2_dlmfs,allow_other,default_permissions" :
	    "fsname=ocfs2_dlmfs,subtype=ocfs2_dlmfs,default_permissions";
	if (fuse_opt_add_arg(&args, "dlmd") == -1 ||
	    fuse_opt_add_arg(&args, "-o") == -1 ||
	    fuse_opt_add_arg(&args, opts) == -1)
		fatalx("dlmfs: out of memory");
	dfs->se = fuse_session_new(&args, &dlmfs_ops, sizeof(dlmfs_ops), NULL);
	fuse_opt_free_args(&args);
	if (dfs->se == NULL) {
		log_warnx("dlmfs: cannot create the FUSE session");
		return -1;
	}
	if (fuse_session_mount(dfs->se, dfs->mountpoint) == -1) {
		log_warnx("dlmfs: cannot mount %s", dfs->mountpoint);
		fuse_session_destroy(dfs->se);
		dfs->se = NULL;
		return -1;
	}
	/* The loop reads only when told a request is there; never block it. */
	fd = fuse_session_fd(dfs->se);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1) {
		log_warn("dlmfs: O_NONBLOCK on the FUSE channel");
		return -1;
	}
	dfs->fuse_ev = event_new(dfs->base, fd, EV_READ | EV_PERSIST,
	    fuse_readable, NULL);
	if (dfs->fuse_ev == NULL || event_add(dfs->fuse_ev, NULL) == -1) {
		log_warnx("dlmfs: cannot watch the FUSE channel");
		return -1;
	}
	return 0;
}

int
dlmfs_start(const char *sock_path, const char *mountpoint)
{
	sigset_t all, old;
	size_t i;
	int rc;

	if (dfs != NULL) {
		log_warnx("dlmfs: already started");
		return -1;
	}
	dfs = xcalloc(1, sizeof(*dfs));
	dfs->stopfd = -1;
	dfs->sock_path = xstrdup(sock_path);
	dfs->mountpoint = xstrdup(mountpoint);
	TAILQ_INIT(&dfs->nodes);
	TAILQ_INIT(&dfs->doms);
	TAILQ_INIT(&dfs->reqs);
	for (i = 0; i < LOCK_HASH; i++)
		LIST_INIT(&dfs->hash[i]);
	dfs->root.kind = N_ROOT;
	dfs->root.ino = dfs->next_ino = FUSE_ROOT_ID;
	dfs->root.mode = 0755;
	dfs->root.uid = geteuid();
	dfs->root.gid = getegid();
	clock_gettime(CLOCK_REALTIME, &dfs->root.mtime);
	dfs->root.atime = dfs->root.ctime = dfs->root.mtime;

	if ((dfs->base = event_base_new()) == NULL) {
		log_warnx("dlmfs: cannot create an event base");
		goto fail;
	}
	if ((dfs->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		log_warn("dlmfs: eventfd");
		goto fail;
	}
	dfs->stop_ev = event_new(dfs->base, dfs->stopfd, EV_READ | EV_PERSIST,
	    stop_requested, NULL);
	dfs->retry_ev = evtimer_new(dfs->base, retry_connect, NULL);
	dfs->kick_ev = event_new(dfs->base, -1, 0, kick, NULL);
	if (dfs->stop_ev == NULL || dfs->retry_ev == NULL ||
	    dfs->kick_ev == NULL || event_add(dfs->stop_ev, NULL) == -1) {
		log_warnx("dlmfs: cannot set up events");
		goto fail;
	}
	clear_stale_mount(mountpoint);
	if (mkdir_p(mountpoint, 0755) == -1) {
		log_warn("dlmfs: mkdir %s", mountpoint);
		goto fail;
	}
	if (dlmfs_mount() == -1)
		goto fail;
	dlmd_connect();

	/* Signals are the main thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&dfs->thread, NULL, dlmfs_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		log_warn("dlmfs: pthread_create");
		goto fail;
	}
	log_info("dlmfs: serving %s", mountpoint);
	return 0;
fail:
	dlmfs_free();
	return -1;
}

void
dlmfs_stop(void)
{
	uint64_t one = 1;

	if (dfs == NULL)
		return;
	if (write(dfs->stopfd, &one, sizeof(one)) == -1)
		log_warn("dlmfs: write stop event");
	pthread_join(dfs->thread, NULL);
	dlmfs_free();
	log_info("dlmfs: stopped");
}
