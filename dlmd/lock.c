/*
 * A client's lock requests, wherever the resource's master is. A lock
 * of this node carries the operation it waits for (new, convert,
 * unlock, and maybe a cancel of the first two); lock_drive() moves it
 * on: it looks the master up when it is unknown, hands the request to
 * the granting rules when the master is us, or sends it to the master
 * and waits for the reply and, when queued there, for its PROXY_AST.
 *
 * A request that bounces (the master moved, is migrating, or left) is
 * driven again by the domain's retry timer; during recovery nothing is
 * sent, and recovery drives every lock again when it ends. A request to
 * a live member that netd cannot carry now waits in wire.c until it can
 * or the node is declared dead. The master deduplicates by cookie, so
 * sending twice never grants twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

static void	res_lookup(struct dlm_res *);

static uint64_t
next_cookie(struct dlmd *dd)
{
	return ((uint64_t)dd->local_node << 56) | (++dd->cookie_seq & ((1ull << 56) - 1));
}

/* ---------------------------------------------------------- retries */

static void
retry_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dlm_domain *d = arg;

	(void)fd;
	(void)ev;
	domain_retry(d);
}

static void
domain_retry_later(struct dlm_domain *d)
{
	struct timeval tv = { 0, DLM_RETRY_MS * 1000 };

	if (d->retry_ev == NULL &&
	    (d->retry_ev = evtimer_new(d->dlmd->base, retry_cb, d)) == NULL)
		fatalx("out of memory");
	if (!evtimer_pending(d->retry_ev, NULL))
		evtimer_add(d->retry_ev, &tv);
}

/* Drive every lock of this node that waits, and every unresolved lookup. */
void
domain_retry(struct dlm_domain *d)
{
	struct dlm_member *mb;
	struct dlm_lock *lk, *next;
	struct dlm_res *r, *rnext;

	if (d->recovering)
		return;
	for (r = TAILQ_FIRST(&d->lookups); r != NULL; r = rnext) {
		rnext = TAILQ_NEXT(r, wait_entry);
		TAILQ_REMOVE(&d->lookups, r, wait_entry);
		r->lookup_sent = 0;
		res_lookup(r);
	}
	LIST_FOREACH(mb, &d->clients, dom_entry)
		for (lk = TAILQ_FIRST(&mb->locks); lk != NULL; lk = next) {
			next = TAILQ_NEXT(lk, own_entry);
			if ((lk->op != OP_NONE && !lk->op_sent) || lk->cancel == 1)
				lock_drive(lk);
		}
}

/* ---------------------------------------------------------- lookups */

/* The master is known: send what waited for it. */
void
res_master_known(struct dlm_res *r)
{
	struct dlm_lock *lk, *next;

	for (lk = TAILQ_FIRST(&r->local); lk != NULL; lk = next) {
		next = TAILQ_NEXT(lk, local_entry);
		if (lk->op != OP_NONE || lk->cancel == 1)
			lock_drive(lk);
	}
	res_touch(r);
}

struct lookup_ctx {
	uint8_t		name[DLM_NAME_MAX];
	size_t		namelen;
};

static void
lookup_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct lookup_ctx *lc = arg;
	struct dlm_res *r;

	if (d == NULL || (r = res_find(d, lc->name, lc->namelen)) == NULL ||
	    !r->lookup_sent) {
		free(lc);
		return;
	}
	free(lc);
	if (err == 0 && rep->status == WS_NOT_DIR && rep->directory < DLM_MAX_NODES &&
	    domain_is_member(d, rep->directory))
		d->directory = (uint8_t)rep->directory;
	if (err != 0 || rep->status != WS_OK || rep->master >= DLM_MAX_NODES) {
		/* Directory dead, moving or recovering: later. */
		TAILQ_INSERT_TAIL(&d->lookups, r, wait_entry);
		domain_retry_later(d);
		return;
	}
	r->lookup_sent = 0;
	r->master = (uint8_t)rep->master;
	res_master_known(r);
}

/* Who masters r? The directory knows, or makes the asker master. */
static void
res_lookup(struct dlm_res *r)
{
	struct dlm_domain *d = r->dom;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct lookup_ctx *lc;

	if (r->lookup_sent || d->recovering)
		return;
	/*
	 * A directory that left cleanly handed its entries to the lowest
	 * other member (migrate.c); asking it again would wait forever.
	 */
	if (d->directory != d->dlmd->local_node && !domain_is_member(d, d->directory) &&
	    domain_lowest_member(d) >= 0)
		d->directory = (uint8_t)domain_lowest_member(d);
	r->lookup_sent = 1;
	lc = xcalloc(1, sizeof(*lc));
	memcpy(lc->name, r->name, r->namelen);
	lc->namelen = r->namelen;
	m.name.data = r->name;
	m.name.len = r->namelen;
	wire_send(d, d->directory, WIRE_LOOKUP, &m, lookup_done, lc);
}

/* Forget the master we had: the next request asks the directory. */
static void
res_forget_master(struct dlm_res *r)
{
	r->master = DLM_NODE_NONE;
}

/* ---------------------------------------------------------- replies to clients */

static void
client_reply(struct dlm_lock *lk, int status, const char *why)
{
	if (lk->reply_req == NULL)
		return;
	if (lk->reply_conn != NULL)
		ipc_reply_status(lk->reply_conn, lk->reply_req, status, "%s", why ? why : "");
	free(lk->reply_req);
	lk->reply_req = NULL;
	lk->reply_conn = NULL;
}

static void
keep_reply(struct dlm_lock *lk, struct ipc_conn *c, const Envelope *req)
{
	lk->reply_conn = c;
	lk->reply_req = xcalloc(1, sizeof(*lk->reply_req));
	envelope__init(lk->reply_req);
	lk->reply_req->type = req->type;
	lk->reply_req->id = req->id;
}

/* ---------------------------------------------------------- local master */

static void
drive_local(struct dlm_lock *lk)
{
	struct dlm_res *r = lk->res;
	enum lock_op op = lk->op;
	int st;

	if (lk->cancel == 1) {
		lk->cancel = 0;
		st = grant_cancel(r, lk);
		client_reply(lk, st == WS_OK ? 0 : EALREADY,
		    st == WS_OK ? NULL : "the request was granted meanwhile");
		return;
	}
	if (op == OP_UNLOCK && lvb_backup_first(lk))
		return;
	if (op == OP_CONVERT)
		lvb_backup_hold_ast(lk);
	lk->op = OP_NONE;
	switch (op) {
	case OP_NEW:
		if (grant_new(r, lk, lk->flags, lk->convert_mode) == WS_NOTQUEUED) {
			ast_client(lk, EAGAIN);
			lock_free(lk);
		}
		break;
	case OP_CONVERT:
		st = grant_convert(r, lk, lk->flags, lk->convert_mode,
		    lk->lvb_put ? lk->lvb : NULL);
		lk->lvb_put = 0;
		if (st == WS_NOTQUEUED) {
			lk->convert_mode = DLM_IV;
			ast_client(lk, EAGAIN);
		}
		break;
	case OP_UNLOCK:
		grant_unlock(r, lk, lk->lvb_put ? lk->lvb : NULL);
		client_reply(lk, 0, NULL);
		lock_free(lk);
		break;
	case OP_NONE:
		break;
	}
}

/* ---------------------------------------------------------- remote master */

struct op_ctx {
	uint64_t	cookie;
	enum lock_op	op;
	int		cancel;
	uint32_t	op_seq;		/* the request it answers */
};

/* A reply that says to go elsewhere or later; 1 when it was one. */
static int
bounced(struct dlm_lock *lk, int err, const Dlmwire__Msg *rep)
{
	struct dlm_domain *d = lk->res->dom;

	if (err == 0 && rep->status == WS_NOT_MASTER) {
		res_forget_master(lk->res);
		domain_retry_later(d);
		return 1;
	}
	if (err == 0 && rep->status == WS_RETRY) {
		domain_retry_later(d);
		return 1;
	}
	if (err != 0) {
		/* The master left (ENOPROTOOPT) or died: if it died,
		 * recovery drives us again; otherwise look again. */
		if (err == ENOPROTOOPT)
			res_forget_master(lk->res);
		domain_retry_later(d);
		return 1;
	}
	return 0;
}

static void
op_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct op_ctx *oc = arg;
	struct dlm_lock *lk;

	if (d == NULL || (lk = lock_find(d, oc->cookie)) == NULL ||
	    lk->owner == NULL) {
		free(oc);
		return;
	}
	if (oc->cancel) {
		if (lk->cancel != 2 || oc->op_seq != lk->op_seq) {
			free(oc);
			return;
		}
		lk->cancel = 1;
		if (!bounced(lk, err, rep)) {
			lk->cancel = 0;
			client_reply(lk, rep->status == WS_ALREADY ? EALREADY : 0,
			    rep->status == WS_ALREADY ? "the request was granted "
			    "meanwhile" : NULL);
			lock_unlock_if_orphan(lk);
		}
		free(oc);
		return;
	}
	if (lk->op != oc->op || !lk->op_sent || oc->op_seq != lk->op_seq) {
		free(oc);
		return;		/* answered already, by a PROXY_AST */
	}
	lk->op_sent = 0;
	if (bounced(lk, err, rep)) {
		free(oc);
		return;
	}
	free(oc);
	switch (lk->op) {
	case OP_NEW:
	case OP_CONVERT:
		switch (rep->status) {
		case WS_GRANTED:
			lk->op = OP_NONE;
			lk->mode = lk->convert_mode;
			lk->convert_mode = DLM_IV;
			if (lk->lvb_put)
				lvb_keep_copy(lk);
			lk->lvb_put = 0;
			if (rep->lvb.len == DLM_LVB_LEN) {
				memcpy(lk->lvb, rep->lvb.data, DLM_LVB_LEN);
				lk->lvb_version = rep->lvb_version;
				lk->lvb_valid = rep->lvb_valid;
			}
			ast_client(lk, 0);
			lock_unlock_if_orphan(lk);
			break;
		case WS_QUEUED:
			lk->op_sent = 1;	/* the PROXY_AST completes it */
			break;
		case WS_NOTQUEUED:
			lk->op = OP_NONE;
			lk->convert_mode = DLM_IV;
			ast_client(lk, EAGAIN);
			if (lk->mode == DLM_IV)
				lock_free(lk);
			else
				lock_unlock_if_orphan(lk);
			break;
		default:
			log_warnx("domain %s: %s of %s refused by node %u (%d)",
			    d->logname, lk->op == OP_NEW ? "lock" : "convert",
			    res_printable(lk->res), lk->res->master, rep->status);
			lk->op = OP_NONE;
			lk->convert_mode = DLM_IV;
			ast_client(lk, EINVAL);
			if (lk->mode == DLM_IV)
				lock_free(lk);
			break;
		}
		break;
	case OP_UNLOCK:
		lk->op = OP_NONE;
		if (lk->lvb_put)
			lvb_keep_copy(lk);
		client_reply(lk, 0, NULL);
		lock_free(lk);
		break;
	case OP_NONE:
		break;
	}
}

static void
drive_remote(struct dlm_lock *lk)
{
	struct dlm_res *r = lk->res;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct op_ctx *oc;
	enum wire_type type;

	m.name.data = r->name;
	m.name.len = r->namelen;
	m.cookie = lk->cookie;
	m.op_seq = lk->op_seq;
	if (lk->cancel == 1 && lk->op_sent) {
		oc = xcalloc(1, sizeof(*oc));
		oc->cookie = lk->cookie;
		oc->cancel = 1;
		oc->op_seq = lk->op_seq;
		lk->cancel = 2;
		m.flags = DLM_FL_CANCEL;
		wire_send(r->dom, r->master, WIRE_UNLOCK_LOCK, &m, op_done, oc);
		return;
	}
	if (lk->op == OP_NONE || lk->op_sent)
		return;
	switch (lk->op) {
	case OP_NEW:
		type = WIRE_CREATE_LOCK;
		m.mode = lk->convert_mode;
		m.flags = lk->flags;
		break;
	case OP_CONVERT:
		type = WIRE_CONVERT_LOCK;
		m.mode = lk->convert_mode;
		m.flags = lk->flags;
		break;
	default:
		type = WIRE_UNLOCK_LOCK;
		m.flags = DLM_FL_VALBLK;
		break;
	}
	if (lk->lvb_put) {
		m.lvb.data = lk->lvb;
		m.lvb.len = DLM_LVB_LEN;
	}
	oc = xcalloc(1, sizeof(*oc));
	oc->cookie = lk->cookie;
	oc->op = lk->op;
	oc->op_seq = lk->op_seq;
	lk->op_sent = 1;
	lk->op_master = r->master;
	wire_send(r->dom, r->master, type, &m, op_done, oc);
}

/* A cancel of a request no master has seen yet completes here. */
static void
cancel_unsent(struct dlm_lock *lk)
{
	lk->cancel = 0;
	client_reply(lk, 0, NULL);
	ast_client(lk, ECANCELED);
	if (lk->op == OP_NEW) {
		lock_free(lk);
		return;
	}
	lk->op = OP_NONE;
	lk->convert_mode = DLM_IV;
	lock_unlock_if_orphan(lk);
}

void
lock_drive(struct dlm_lock *lk)
{
	struct dlm_res *r = lk->res;
	struct dlm_domain *d = r->dom;

	if (d->recovering)
		return;
	if (lk->cancel == 1 && !lk->op_sent && lk->op != OP_NONE &&
	    r->master != d->dlmd->local_node) {
		cancel_unsent(lk);
		return;
	}
	if (r->master == DLM_NODE_NONE) {
		res_lookup(r);
		return;
	}
	if (r->master == d->dlmd->local_node) {
		if (r->migrating) {
			domain_retry_later(d);
			return;
		}
		drive_local(lk);
		return;
	}
	drive_remote(lk);
}

/*
 * The master of lk's resource died: an unlock is done (the lock died
 * with it) unless it writes a value back, which recovery decides; a new
 * lock, a convert or a cancel goes to the next master.
 */
void
lock_master_lost(struct dlm_lock *lk)
{
	if (lk->op == OP_UNLOCK && !lk->lvb_put) {
		client_reply(lk, 0, NULL);
		lock_free(lk);
		return;
	}
	if (lk->cancel == 2)
		lk->cancel = 1;
	lk->op_sent = 0;
}

/* ---------------------------------------------------------- client entry points */

int
lock_request(struct dlm_member *mb, const Dlmd__LockRequest *rq, uint64_t *lockid,
    const char **why)
{
	struct dlm_domain *d = mb->dom;
	struct dlm_lock *lk;
	struct dlm_res *r;

	if (!dlm_mode_valid(rq->mode)) {
		*why = "mode must be NL, PR or EX";
		return EINVAL;
	}
	if (rq->flags & ~DLM_FL_CLIENT) {
		*why = "unsupported flags";
		return EINVAL;
	}
	if (rq->lvb.len > DLM_LVB_LEN) {
		*why = "the lock value block is 64 bytes";
		return EINVAL;
	}
	if (rq->flags & DLM_FL_CONVERT) {
		if ((lk = lock_find(d, rq->lockid)) == NULL || lk->owner != mb) {
			*why = "no such lock on this connection";
			return EINVAL;
		}
		if (lk->op != OP_NONE || lk->cancel || lk->queue == Q_CONVERTING ||
		    lk->queue == Q_BLOCKED || lk->mode == DLM_IV) {
			*why = "a request on this lock is pending";
			return EBUSY;
		}
		lk->flags = rq->flags & ~DLM_FL_CONVERT;
		lk->convert_mode = rq->mode;
		lk->user = rq->user;
		if (rq->lvb.len > 0 && (rq->flags & DLM_FL_VALBLK) && lk->mode == DLM_EX &&
		    (int)rq->mode < DLM_EX)
			lvb_write(lk, rq->lvb.data, rq->lvb.len);
		lk->op = OP_CONVERT;
		lk->op_seq++;
	} else {
		if (rq->name.len == 0 || rq->name.len > DLM_NAME_MAX) {
			*why = "a lock name is 1 to 32 bytes";
			return EINVAL;
		}
		r = res_get(d, rq->name.data, rq->name.len);
		lk = lock_new(r, next_cookie(d->dlmd), d->dlmd->local_node);
		lk->owner = mb;
		lk->user = rq->user;
		lk->flags = rq->flags;
		lk->convert_mode = rq->mode;
		TAILQ_INSERT_TAIL(&mb->locks, lk, own_entry);
		TAILQ_INSERT_TAIL(&r->local, lk, local_entry);
		lk->op = OP_NEW;
		lk->op_seq = 1;
	}
	*lockid = lk->cookie;
	lock_drive(lk);
	return 0;
}

int
unlock_request(struct dlm_member *mb, struct ipc_conn *c, const Envelope *req,
    const char **why)
{
	const Dlmd__UnlockRequest *ur = req->unlock_request;
	struct dlm_lock *lk;
	int pending;

	if ((lk = lock_find(mb->dom, ur->lockid)) == NULL || lk->owner != mb) {
		*why = "no such lock on this connection";
		return EINVAL;
	}
	if (lk->reply_req != NULL || lk->op == OP_UNLOCK) {
		*why = "an unlock or cancel of this lock is pending";
		return EBUSY;
	}
	pending = lk->op == OP_NEW || lk->op == OP_CONVERT ||
	    lk->queue == Q_BLOCKED || lk->queue == Q_CONVERTING;
	if (ur->flags & DLM_FL_CANCEL) {
		if (!pending) {
			*why = "nothing to cancel: the lock is granted";
			return EALREADY;
		}
		keep_reply(lk, c, req);
		lk->cancel = 1;
		lock_drive(lk);
		return 0;
	}
	if (pending) {
		*why = "the lock is not granted; cancel it instead";
		return EBUSY;
	}
	if (ur->lvb.len > DLM_LVB_LEN) {
		*why = "the lock value block is 64 bytes";
		return EINVAL;
	}
	if (ur->lvb.len > 0 && lk->mode == DLM_EX)
		lvb_write(lk, ur->lvb.data, ur->lvb.len);
	keep_reply(lk, c, req);
	lk->op = OP_UNLOCK;
	lock_drive(lk);
	return 0;
}

/* A lock of a client that has gone: unlock it once nothing is pending. */
void
lock_unlock_if_orphan(struct dlm_lock *lk)
{
	if (!lk->owner->releasing || lk->op != OP_NONE || lk->cancel)
		return;
	if (lk->mode == DLM_IV) {
		lock_free(lk);
		return;
	}
	lk->lvb_put = 0;
	lk->op = OP_UNLOCK;
	lock_drive(lk);
}

/*
 * A client went away or left the domain: its granted locks are
 * unlocked, its waiting requests cancelled, as when a process holding
 * dlmfs files dies. Nobody waits for the replies.
 */
void
member_release_locks(struct dlm_member *mb)
{
	struct dlm_lock *lk, *next;
	struct dlm_res *r;

	mb->releasing = 1;
	for (lk = TAILQ_FIRST(&mb->locks); lk != NULL; lk = next) {
		next = TAILQ_NEXT(lk, own_entry);
		r = lk->res;
		lk->reply_conn = NULL;
		free(lk->reply_req);
		lk->reply_req = NULL;
		if (lk->op == OP_UNLOCK)
			continue;
		if (lk->queue != Q_NONE) {
			/* In our own queues: out at once, whatever its state. */
			grant_unlock(r, lk, NULL);
			lock_free(lk);
			continue;
		}
		if ((lk->op == OP_NEW || lk->op == OP_CONVERT) && lk->op_sent) {
			/* At a remote master: cancel; its AST finishes the job. */
			if (lk->cancel == 0)
				lk->cancel = 1;
			lock_drive(lk);
			continue;
		}
		if (lk->op == OP_NEW) {
			lock_free(lk);
			continue;
		}
		lk->op = OP_NONE;
		lk->cancel = 0;
		lk->convert_mode = DLM_IV;
		lock_unlock_if_orphan(lk);
	}
}

/* ---------------------------------------------------------- PROXY_AST */

static void
h_proxy_ast(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_lock *lk = lock_find(d, m->cookie);

	if (lk == NULL || lk->owner == NULL) {
		log_debug("domain %s: PROXY_AST from node %u for unknown lock %016llx",
		    d->logname, from, (unsigned long long)m->cookie);
		rep->status = WS_BAD;
		return;
	}
	rep->status = WS_OK;
	if (m->kind == 1) {
		bast_client(lk, m->mode);
		return;
	}
	if ((lk->op != OP_NEW && lk->op != OP_CONVERT) || seq_older(m->op_seq, lk->op_seq))
		return;		/* a duplicate, or the answer to an older request */
	lk->op_sent = 0;
	if (m->status == 0) {
		lk->op = OP_NONE;
		lk->mode = m->mode;
		lk->convert_mode = DLM_IV;
		lk->lvb_put = 0;
		if (m->lvb.len == DLM_LVB_LEN) {
			memcpy(lk->lvb, m->lvb.data, DLM_LVB_LEN);
			lk->lvb_version = m->lvb_version;
			lk->lvb_valid = m->lvb_valid;
		}
		ast_client(lk, 0);
		if (lk->cancel == 1) {
			lk->cancel = 0;
			client_reply(lk, EALREADY, "the request was granted meanwhile");
		}
		lock_unlock_if_orphan(lk);
		return;
	}
	ast_client(lk, m->status);
	if (lk->op == OP_NEW) {
		lk->op = OP_NONE;
		lock_free(lk);
		return;
	}
	lk->op = OP_NONE;
	lk->convert_mode = DLM_IV;
	lock_unlock_if_orphan(lk);
}

static const struct wire_handler lock_handlers[] = {
	{ WIRE_PROXY_AST, h_proxy_ast },
};

void
lock_handlers_init(void)
{
	wire_register_handlers(lock_handlers, nitems(lock_handlers));
}
