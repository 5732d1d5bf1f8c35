/*
 * One cluster lock per lock file, as userdlm keeps it: shared by the
 * file's open files through holder counts, its level cached after the
 * last close. It drops only when a BAST asks and no local holder is in
 * the way (the rules of o2dlm's dlmc_compat_level and
 * dlmc_holders_conflict, which fsd's dlmglue follows too), and a new
 * local request waits while a BAST is pending and the level it wants is
 * above the one we will drop to, so that remote waiters are not starved.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dlmfs.h"
#include "log.h"
#include "o2dlm.h"
#include "util.h"

_Static_assert(LVL_NL == DLMC_NL && LVL_PR == DLMC_PR && LVL_EX == DLMC_EX,
    "dlmd's modes are o2dlm's");

/* Does a live waiter want `level` or more? */
static int
waiter_wants(const struct dlmfs_lock *lk, int level)
{
	const struct dlmfs_req *r;

	TAILQ_FOREACH(r, &lk->waiters, entry)
		if (!r->interrupted && r->level >= level)
			return 1;
	return 0;
}

static void
pollers_notify(struct dlmfs_lock *lk)
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
void
cache_fail_waiters(struct dlmfs_lock *lk, int err, int attempts_only)
{
	struct dlmfs_req *r, *next;

	for (r = TAILQ_FIRST(&lk->waiters); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->level > lk->level && (!attempts_only || r->attempt))
			req_fail(r, err);
	}
}

static void
request_replied(const Envelope *rep, void *arg)
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
		log_warnx("%s/%s: dlmd refused %s: %s", lk->dom->name,
		    lk->name, dlmc_level_name(lk->requested),
		    rep->error[0] ? rep->error : strerror(dlmd_errno(rep->status)));
		lk->flags &= ~(LK_BUSY | LK_CANCEL);
		cache_fail_waiters(lk, EIO, 0);
	} else if (lk->lock_replies == 0 && (lk->flags & LK_BUSY) &&
	    lk->level == LVL_IV && lk->lockid == 0 &&
	    rep->payload_case == ENVELOPE__PAYLOAD_LOCK_ACCEPTED) {
		/* A new lock's id, which a cancel needs. */
		lk->lockid = rep->lock_accepted->lockid;
	}
	cache_process(lk);
}

/* Ask for `level`: a new lock, an up-convert or a down-convert. */
static int
request_send(struct dlmfs_lock *lk, int level, uint32_t flags)
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
	if (ipc_request(dfs->conn, &env, request_replied, lk) == -1)
		return -1;
	log_debug("%s/%s: %s -> %s%s", lk->dom->name, lk->name,
	    dlmc_level_name(lk->level), dlmc_level_name(level),
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
		log_debug("%s: cancel refused: %s", lk->name, rep->error);
	node_maybe_free(&lk->node);
}

static int
request_cancel(struct dlmfs_lock *lk)
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
	log_debug("%s/%s: cancelling %s", lk->dom->name, lk->name,
	    dlmc_level_name(lk->requested));
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
		log_warnx("%s/%s: unlock refused: %s", lk->dom->name,
		    lk->name, rep->error);
		lk->flags &= ~(LK_TEARDOWN | LK_UNLOCKING);
		fuse_reply_err(lk->unlink, dlmd_errno(rep->status));
		lk->unlink = NULL;
		cache_process(lk);
		return;
	}
	lockfile_remove(lk);
}

static int
unlock_send(struct dlmfs_lock *lk)
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
waiter_grant(struct dlmfs_lock *lk, struct dlmfs_req *r)
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
		node_entry_param(&lk->node, &e);
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
cache_step(struct dlmfs_lock *lk)
{
	struct dlmfs_req *r;
	int compat;

	if (lk->dom == NULL || lk->dom->state != DOM_JOINED ||
	    dfs->conn == NULL || (lk->flags & LK_UNLOCKING))
		return 0;
	compat = dlmc_compat_level(lk->blocking);
	if ((lk->flags & (LK_BLOCKED | LK_BUSY)) == LK_BLOCKED) {
		if (lk->level <= compat) {
			/* Already as low as asked (a stale BAST). */
			lk->flags &= ~LK_BLOCKED;
			lk->blocking = LVL_NL;
			return 1;
		}
		if (!dlmc_holders_conflict(lk->ro_holders, lk->ex_holders, lk->blocking))
			return request_send(lk, compat, 0) == 0;
	}
	if ((lk->flags & (LK_BUSY | LK_CANCEL)) == LK_BUSY && !lk->noqueue &&
	    lk->requested > lk->level && lk->lockid != 0 &&
	    ((lk->flags & LK_BLOCKED) || !waiter_wants(lk, lk->requested)))
		return request_cancel(lk) == 0;
	if ((lk->flags & (LK_TEARDOWN | LK_BUSY)) == LK_TEARDOWN) {
		if (lk->level == LVL_IV) {
			lockfile_remove(lk);
			return 0;
		}
		return unlock_send(lk) == 0;
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
			waiter_grant(lk, r);
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
		if (request_send(lk, r->level, r->trylock ?
		    DLMD__FLAG__FLAG_NOQUEUE : 0) == -1)
			return 0;
		r->attempt = r->trylock;
		return 1;
	}
	return 0;
}

/* Run the lock's state machine; the caller must not touch lk afterwards. */
void
cache_process(struct dlmfs_lock *lk)
{
	while (cache_step(lk))
		;
}

/* The connection is gone and the cluster lock with it. */
void
cache_reset(struct dlmfs_lock *lk)
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
	pollers_notify(lk);
	/* An unlink waiting for a busy lock has nothing left to unlock. */
	if (lk->flags == LK_TEARDOWN)
		lockfile_remove(lk);
}

void
cache_ast(const Dlmd__Ast *ast)
{
	struct dlmfs_lock *lk = lockfile_by_user(ast->user);
	int old;

	if (lk == NULL || !(lk->flags & LK_BUSY)) {
		log_debug("Ast for no request (lock %llx)",
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
		    lk->level <= dlmc_compat_level(lk->blocking)) {
			lk->flags &= ~LK_BLOCKED;
			lk->blocking = LVL_NL;
		}
		log_debug("%s/%s: granted %s", lk->dom->name, lk->name,
		    dlmc_level_name(lk->level));
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
			cache_fail_waiters(lk, ETXTBSY, 1);
			break;
		}
		/* FALLTHROUGH */
	default:
		log_warnx("%s/%s: request for %s failed: %s",
		    lk->dom->name, lk->name, dlmc_level_name(lk->requested),
		    strerror(dlmd_errno(ast->status)));
		if (lk->level == LVL_IV)
			lk->lockid = 0;
		cache_fail_waiters(lk, EIO, 0);
	}
	cache_process(lk);
}

void
cache_bast(const Dlmd__Bast *bast)
{
	struct dlmfs_lock *lk = lockfile_by_user(bast->user);

	if (lk == NULL || lk->level == LVL_IV || bast->blocked < LVL_PR)
		return;
	log_debug("%s/%s: BAST, %s blocked", lk->dom->name, lk->name,
	    dlmc_level_name(bast->blocked));
	if (!(lk->flags & LK_BLOCKED)) {
		lk->flags |= LK_BLOCKED;
		lk->blocking = bast->blocked;
		pollers_notify(lk);
	} else if ((int)bast->blocked > lk->blocking)
		lk->blocking = bast->blocked;
	cache_process(lk);
}

/* Park an open until its lock is held at the level the flags ask for. */
void
cache_open(fuse_req_t req, struct dlmfs_lock *lk, struct fuse_file_info *fi,
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
	cache_process(lk);
}

/* close() drops a holder; the level stays cached until a BAST. */
void
cache_release(struct dlmfs_fh *fh)
{
	struct dlmfs_lock *lk = fh->lk;

	/* A holder of a lost connection was forgotten with it (cache_reset). */
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
	cache_process(lk);
}
