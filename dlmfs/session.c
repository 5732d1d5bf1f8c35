/*
 * The connection to dlmd.sock: dlmfs is one more client of dlmd. When
 * dlmd goes away (a restart, a crash), every lock held through the
 * connection is lost with it: open files answer EIO and poll POLLERR,
 * and dlmfs connects again and rejoins every domain, so that new opens
 * work once dlmd is back.
 */
#include <errno.h>
#include <string.h>

#include "dlmfs.h"
#include "log.h"
#include "util.h"

#define RECONNECT_MS	500

static void	join_replied(const Envelope *, void *);
static void	leave_replied(const Envelope *, void *);

/* A dlmd status as the errno to give a caller. */
int
dlmd_errno(int status)
{
	return status > 0 && status < 4096 ? status : EIO;
}

static void
session_ast(struct ipc_conn *c, const Envelope *ev)
{
	(void)c;
	cache_ast(ev->ast);
}

static void
session_bast(struct ipc_conn *c, const Envelope *ev)
{
	(void)c;
	cache_bast(ev->bast);
}

/* Domain events are not here: dlmfs ignores recovery, as the kernel's does. */
static const struct ipc_handler dlmd_events[] = {
	{ MSG_TYPE__MSG_DLMD_AST, ENVELOPE__PAYLOAD_AST, session_ast },
	{ MSG_TYPE__MSG_DLMD_BAST, ENVELOPE__PAYLOAD_BAST, session_bast },
};

static void
session_event(struct ipc_conn *c, const Envelope *ev)
{
	ipc_event_dispatch(c, ev, dlmd_events, nitems(dlmd_events), "dlmd");
}

static void
session_lost(struct ipc_conn *c)
{
	struct timeval tv = { 0, RECONNECT_MS * 1000 };
	struct dlmfs_dom *dom;
	struct dlmfs_lock *lk, *next;

	(void)c;
	dfs->conn = NULL;
	dfs->gen++;
	if (!dfs->stopping)
		log_warnx("lost %s; the locks held through it are lost",
		    dfs->sock_path);
	TAILQ_FOREACH(dom, &dfs->doms, entry) {
		if (dom->state == DOM_JOINED)
			dom->state = DOM_REJOINING;
		for (lk = TAILQ_FIRST(&dom->locks); lk != NULL; lk = next) {
			next = TAILQ_NEXT(lk, entry);
			cache_reset(lk);
		}
	}
	if (!dfs->stopping)
		evtimer_add(dfs->retry_ev, &tv);
}

void
session_connect(void)
{
	struct timeval tv = { 0, RECONNECT_MS * 1000 };
	struct dlmfs_dom *dom;

	dfs->conn = ipc_connect(dfs->base, dfs->sock_path, session_event, session_lost,
	    NULL);
	if (dfs->conn == NULL) {
		if (!dfs->warned)
			log_warn("connect %s (retrying)", dfs->sock_path);
		dfs->warned = 1;
		evtimer_add(dfs->retry_ev, &tv);
		return;
	}
	if (dfs->warned)
		log_info("connected to %s", dfs->sock_path);
	dfs->warned = 0;
	TAILQ_FOREACH(dom, &dfs->doms, entry) {
		if (dom->state != DOM_REJOINING && dom->state != DOM_LOST)
			continue;
		dom->state = DOM_REJOINING;
		if (session_join(dom) == -1)
			return;
	}
}

void
session_retry(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	session_connect();
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

/* Join the domain dom names (again, after a reconnect); -1 without a connection. */
int
session_join(struct dlmfs_dom *dom)
{
	return dom_send(dom, MSG_TYPE__MSG_DLMD_JOIN, join_replied);
}

int
session_leave(struct dlmfs_dom *dom)
{
	return dom_send(dom, MSG_TYPE__MSG_DLMD_LEAVE, leave_replied);
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
		log_warnx("leaving domain %s: %s", dom->name, rep->error);
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
		log_warnx("cannot join domain %s: %s", dom->name,
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
			if (session_leave(dom) == -1)
				dom_remove(dom);
			return;
		}
		dom->state = DOM_JOINED;
		node_reply_entry(r->req, &dom->node);
		req_done(r);
		/* Concurrent mkdirs lost the race, as on the kernel's i_mutex. */
		while ((r = TAILQ_FIRST(&dom->mkdirs)) != NULL)
			req_fail(r, EEXIST);
		log_info("joined domain %s", dom->name);
		return;
	}
	/* A rejoin after a reconnect; without a connection, the next one retries. */
	if (rep == NULL)
		return;
	dom->state = err == 0 ? DOM_JOINED : DOM_LOST;
	for (lk = TAILQ_FIRST(&dom->locks); lk != NULL; lk = next) {
		next = TAILQ_NEXT(lk, entry);
		if (err != 0)
			cache_fail_waiters(lk, EIO, 0);
		else
			cache_process(lk);
	}
}
