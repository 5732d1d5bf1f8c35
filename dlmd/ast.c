/*
 * Deliveries. The granting rules queue ASTs and BASTs on the lock
 * (grant_hooks); one pass per turn of the event loop hands them out: to
 * this node's clients as events on their connection, to other nodes as
 * PROXY_AST. A lock gets its AST before its BAST. A remote AST that
 * cannot be sent while its node is still in the domain is sent again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

static void	flush_cb(evutil_socket_t, short, void *);

static void
schedule_flush(struct dlm_domain *d)
{
	if (d->ast_ev == NULL &&
	    (d->ast_ev = event_new(d->dlmd->base, -1, 0, flush_cb, d)) == NULL)
		fatalx("out of memory");
	event_active(d->ast_ev, EV_TIMEOUT, 0);
}

static void
ast_enqueue(struct dlm_lock *lk)
{
	struct dlm_domain *d = lk->res->dom;

	if (!lk->in_asts) {
		TAILQ_INSERT_TAIL(&d->asts, lk, ast_entry);
		lk->in_asts = 1;
	}
	schedule_flush(d);
}

static void
hook_ast(struct dlm_lock *lk, int status)
{
	lk->ast_pending = 1;
	lk->ast_status = status;
	ast_enqueue(lk);
}

static void
hook_bast(struct dlm_lock *lk, int blocked)
{
	lk->bast_pending = 1;
	lk->bast_mode = blocked;
	ast_enqueue(lk);
}

void
ast_hooks_init(void)
{
	grant_hooks.ast = hook_ast;
	grant_hooks.bast = hook_bast;
}

/* A pending AST answered in a reply instead (remote grant at once). */
void
ast_take(struct dlm_lock *lk)
{
	lk->ast_pending = 0;
	if (lk->in_asts && !lk->bast_pending) {
		TAILQ_REMOVE(&lk->res->dom->asts, lk, ast_entry);
		lk->in_asts = 0;
	}
}

/* A lock the master gave up on (NOQUEUE failed, cancelled while new). */
static int
lock_dead(const struct dlm_lock *lk)
{
	return lk->mode == DLM_IV && lk->queue == Q_NONE;
}

void
ast_client(struct dlm_lock *lk, int status)
{
	Envelope ev = ENVELOPE__INIT;
	Dlmd__Ast a = DLMD__AST__INIT;

	a.lockid = lk->cookie;
	a.user = lk->user;
	a.status = status;
	a.mode = lk->mode == DLM_IV ? DLM_NL : lk->mode;
	if (status == 0 && (lk->flags & DLM_FL_VALBLK) && lk->mode >= DLM_PR) {
		a.lvb.data = lk->lvb;
		a.lvb.len = DLM_LVB_LEN;
		a.lvb_valid = lk->lvb_valid;
	}
	ev.type = MSG_TYPE__MSG_DLMD_AST;
	ev.kind = KIND__KIND_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_AST;
	ev.ast = &a;
	if (lk->owner != NULL && lk->owner->client != NULL)
		api_send_event(lk->owner->client->conn, &ev);
}

void
bast_client(struct dlm_lock *lk, int blocked)
{
	Envelope ev = ENVELOPE__INIT;
	Dlmd__Bast b = DLMD__BAST__INIT;

	b.lockid = lk->cookie;
	b.user = lk->user;
	b.blocked = blocked;
	ev.type = MSG_TYPE__MSG_DLMD_BAST;
	ev.kind = KIND__KIND_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_BAST;
	ev.bast = &b;
	if (lk->owner != NULL && lk->owner->client != NULL)
		api_send_event(lk->owner->client->conn, &ev);
}

/* ---------------------------------------------------------- remote */

/* What a PROXY_AST said, to say it again. */
struct proxy_ctx {
	uint64_t	cookie;
	unsigned	node;
	int		kind, status, mode;
};

static void	send_proxy(struct dlm_lock *, int, int, int);

/*
 * netd answers EHOSTDOWN for what was in flight when a link went, also
 * when only the peer's netd restarted: while hbd still sees the node
 * alive, the AST or BAST goes again (its receiver ignores a stale one by
 * op_seq); a dead node's recovery redoes it otherwise.
 */
static void
proxy_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct proxy_ctx *pc = arg;
	struct dlm_lock *lk;

	(void)rep;
	if (err == EHOSTDOWN && d != NULL && domain_is_member(d, pc->node) &&
	    d->dlmd->live[pc->node] && (lk = lock_find(d, pc->cookie)) != NULL &&
	    lk->node == pc->node)
		send_proxy(lk, pc->kind, pc->status, pc->mode);
	else if (err != 0 && d != NULL)
		log_warnx("domain %s: PROXY_AST to node %u lost: %s", d->logname,
		    pc->node, strerror(err));
	free(pc);
}

static void
send_proxy(struct dlm_lock *lk, int kind, int status, int mode)
{
	struct dlm_res *r = lk->res;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct proxy_ctx *pc;

	m.name.data = r->name;
	m.name.len = r->namelen;
	m.cookie = lk->cookie;
	m.kind = (uint32_t)kind;
	m.status = status;
	m.mode = mode;
	m.op_seq = lk->op_seq;
	if (kind == 0 && status == 0 && (lk->flags & DLM_FL_VALBLK) && mode >= DLM_PR) {
		m.lvb.data = lk->lvb;
		m.lvb.len = DLM_LVB_LEN;
		m.lvb_version = lk->lvb_version;
		m.lvb_valid = lk->lvb_valid;
	}
	pc = xcalloc(1, sizeof(*pc));
	pc->cookie = lk->cookie;
	pc->node = lk->node;
	pc->kind = kind;
	pc->status = status;
	pc->mode = mode;
	wire_send(r->dom, lk->node, WIRE_PROXY_AST, &m, proxy_done, pc);
}

void
ast_release(struct dlm_lock *lk)
{
	lk->ast_held = 0;
	if (lk->ast_pending || lk->bast_pending)
		ast_enqueue(lk);
}

static void
ast_deliver(struct dlm_domain *d, struct dlm_lock *lk)
{
	int local = lk->node == d->dlmd->local_node;

	/* in order, after the backup of the value it wrote (lvb.c) */
	if (lk->ast_held)
		return;
	if (lk->ast_pending) {
		lk->ast_pending = 0;
		if (local)
			ast_client(lk, lk->ast_status);
		else
			send_proxy(lk, 0, lk->ast_status, lk->mode);
	}
	if (lk->bast_pending) {
		lk->bast_pending = 0;
		/* A BAST for a lock that has since left the way is moot. */
		if (lk->mode != DLM_IV && !dlm_compatible(lk->mode, lk->bast_mode)) {
			if (local)
				bast_client(lk, lk->bast_mode);
			else
				send_proxy(lk, 1, 0, lk->bast_mode);
		}
	}
	if (lock_dead(lk))
		lock_free(lk);
}

void
ast_queue_flush(struct dlm_domain *d)
{
	struct dlm_lock *lk;

	while ((lk = TAILQ_FIRST(&d->asts)) != NULL) {
		TAILQ_REMOVE(&d->asts, lk, ast_entry);
		lk->in_asts = 0;
		ast_deliver(d, lk);
	}
}

static void
flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	ast_queue_flush(arg);
}
