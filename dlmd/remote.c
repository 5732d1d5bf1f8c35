/*
 * The other nodes' requests: on the directory node, who masters what;
 * on a master, their locks. Each handler answers at once. A master that
 * is migrating or purging a resource answers RETRY; one that does not
 * know it (purged, handed over) answers NOT_MASTER. Requests are
 * idempotent by lock cookie: one sent again after a lost reply finds the
 * lock as the first left it; one that arrives after a newer request of
 * the same lock (its op_seq is older) changes nothing.
 */
#include <errno.h>
#include <string.h>

#include "dlmd.h"
#include "log.h"
#include "util.h"

static int
name_ok(const Dlmwire__Msg *m)
{
	return m->name.len > 0 && m->name.len <= DLM_NAME_MAX;
}

/* ---------------------------------------------------------- directory */

/* 1 when m names a resource and we are the directory; else rep says why not. */
static int
directory_here(struct dlm_domain *d, const Dlmwire__Msg *m, Dlmwire__Msg *rep)
{
	if (!name_ok(m)) {
		rep->status = WS_BAD;
		return 0;
	}
	if (d->directory != d->dlmd->local_node) {
		rep->status = WS_NOT_DIR;
		rep->directory = d->directory;
		return 0;
	}
	return 1;
}

static void
h_lookup(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_dirent *e;

	if (name_ok(m) && d->recovering) {
		rep->status = WS_RETRY;
		return;
	}
	if (!directory_here(d, m, rep))
		return;
	if ((e = dir_find(d, m->name.data, m->name.len)) == NULL) {
		dir_set(d, m->name.data, m->name.len, from);
		e = dir_find(d, m->name.data, m->name.len);
	}
	rep->status = WS_OK;
	rep->master = e->master;
}

static void
h_dir_set(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	(void)from;
	if (m->master >= DLM_MAX_NODES) {
		rep->status = WS_BAD;
		return;
	}
	if (!directory_here(d, m, rep))
		return;
	dir_set(d, m->name.data, m->name.len, m->master);
	rep->status = WS_OK;
}

static void
h_dir_drop(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_dirent *e;

	if (!directory_here(d, m, rep))
		return;
	/* Only the master it records may drop an entry. */
	if ((e = dir_find(d, m->name.data, m->name.len)) != NULL && e->master == from)
		dir_drop(d, m->name.data, m->name.len);
	rep->status = WS_OK;
}

/* ---------------------------------------------------------- master */

/* The resource, if we master it and may act on it now; else rep says why not. */
static struct dlm_res *
mastered(struct dlm_domain *d, const Dlmwire__Msg *m, Dlmwire__Msg *rep)
{
	struct dlm_res *r;

	if (!name_ok(m)) {
		rep->status = WS_BAD;
		return NULL;
	}
	if (d->recovering) {
		rep->status = WS_RETRY;
		return NULL;
	}
	r = res_find(d, m->name.data, m->name.len);
	if (r == NULL || r->master != d->dlmd->local_node) {
		rep->status = WS_NOT_MASTER;
		return NULL;
	}
	if (r->migrating) {
		rep->status = WS_RETRY;
		return NULL;
	}
	return r;
}

/* A grant decided now travels in the reply, not in a PROXY_AST. */
static void
reply_grant(struct dlm_lock *lk, Dlmwire__Msg *rep)
{
	ast_take(lk);
	rep->status = WS_GRANTED;
	rep->mode = lk->mode;
	if ((lk->flags & DLM_FL_VALBLK) && lk->mode >= DLM_PR) {
		rep->lvb.data = lk->lvb;
		rep->lvb.len = DLM_LVB_LEN;
		rep->lvb_version = lk->lvb_version;
		rep->lvb_valid = lk->lvb_valid;
	}
}

static void
h_create_lock(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;
	struct dlm_lock *lk;
	int st;

	if ((r = mastered(d, m, rep)) == NULL)
		return;
	if (!dlm_mode_valid(m->mode) || (m->flags & ~DLM_FL_CLIENT) ||
	    (m->cookie >> 56) != from) {
		rep->status = WS_BAD;
		return;
	}
	if ((lk = lock_find(d, m->cookie)) != NULL) {
		if (lk->res != r || lk->node != from) {
			rep->status = WS_BAD;
			return;
		}
		if (lk->queue == Q_GRANTED)
			reply_grant(lk, rep);
		else
			rep->status = WS_QUEUED;
		return;
	}
	lk = lock_new(r, m->cookie, from);
	lk->op_seq = m->op_seq;
	st = grant_new(r, lk, m->flags, m->mode);
	if (st == WS_GRANTED) {
		reply_grant(lk, rep);
		return;
	}
	rep->status = st;
	if (st == WS_NOTQUEUED)
		lock_free(lk);
}

static void
h_convert_lock(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;
	struct dlm_lock *lk;
	int st;

	if ((r = mastered(d, m, rep)) == NULL)
		return;
	if ((lk = lock_find(d, m->cookie)) == NULL || lk->res != r || lk->node != from ||
	    !dlm_mode_valid(m->mode) || (m->flags & ~DLM_FL_CLIENT) ||
	    (m->lvb.len != 0 && m->lvb.len != DLM_LVB_LEN)) {
		rep->status = WS_BAD;
		return;
	}
	if (seq_older(m->op_seq, lk->op_seq)) {
		rep->status = WS_BUSY;	/* a resend that lost to a newer request */
		return;
	}
	if (m->op_seq != 0)
		lk->op_seq = m->op_seq;
	if (lk->queue == Q_CONVERTING) {
		rep->status = lk->convert_mode == m->mode ? WS_QUEUED : WS_BUSY;
		return;
	}
	if (m->lvb.len != 0 && lk->mode == DLM_EX && (m->flags & DLM_FL_VALBLK))
		lvb_applied(r, from);
	st = grant_convert(r, lk, m->flags, m->mode, m->lvb.len ? m->lvb.data : NULL);
	if (st == WS_GRANTED)
		reply_grant(lk, rep);
	else
		rep->status = st;
}

static void
h_unlock_lock(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;
	struct dlm_lock *lk;

	if ((r = mastered(d, m, rep)) == NULL)
		return;
	if ((lk = lock_find(d, m->cookie)) == NULL) {
		/* Gone already: this is a repeat. */
		rep->status = (m->flags & DLM_FL_CANCEL) ? WS_ALREADY : WS_OK;
		return;
	}
	if (lk->res != r || lk->node != from ||
	    (m->lvb.len != 0 && m->lvb.len != DLM_LVB_LEN)) {
		rep->status = WS_BAD;
		return;
	}
	if (m->flags & DLM_FL_CANCEL) {
		/* A cancel of an older request finds nothing of it to cancel. */
		rep->status = seq_older(m->op_seq, lk->op_seq) ? WS_ALREADY :
		    grant_cancel(r, lk);
		return;
	}
	if (lk->queue != Q_GRANTED) {
		rep->status = WS_BUSY;
		return;
	}
	if (m->lvb.len != 0 && lk->mode == DLM_EX)
		lvb_applied(r, from);
	grant_unlock(r, lk, m->lvb.len ? m->lvb.data : NULL);
	lock_free(lk);
	rep->status = WS_OK;
}

static const struct wire_handler remote_handlers[] = {
	{ WIRE_LOOKUP, h_lookup },
	{ WIRE_DIR_SET, h_dir_set },
	{ WIRE_DIR_DROP, h_dir_drop },
	{ WIRE_CREATE_LOCK, h_create_lock },
	{ WIRE_CONVERT_LOCK, h_convert_lock },
	{ WIRE_UNLOCK_LOCK, h_unlock_lock },
};

void
remote_handlers_init(void)
{
	wire_register_handlers(remote_handlers, nitems(remote_handlers));
}
