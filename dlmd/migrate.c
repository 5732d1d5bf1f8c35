/*
 * Leaving a domain (o2dlm's dlm_migrate_all_locks): a resource we master
 * on which other nodes hold locks goes, queues and value block, to the
 * first of them (MIGRATE); the directory is told the new master. The
 * rest is dropped: other nodes that remember us as master are told
 * NOT_MASTER, or lose us with EXIT_DOMAIN, and ask the directory again.
 * A directory that leaves hands its entries to the lowest other member,
 * answering RETRY to lookups until the last chunk is in.
 */
#include <stdlib.h>
#include <string.h>

#include "dlmd.h"
#include "log.h"
#include "util.h"

#define HANDOFF_CHUNK	128	/* entries per message: well under netd's 8 KiB */

Dlmwire__Lock *
wire_lock(const struct dlm_lock *lk, int mode)
{
	Dlmwire__Lock *wl = xmalloc(sizeof(*wl));

	dlmwire__lock__init(wl);
	wl->cookie = lk->cookie;
	wl->node = lk->node;
	wl->mode = mode;
	wl->lvb.data = (uint8_t *)lk->lvb;
	wl->lvb.len = DLM_LVB_LEN;
	wl->lvb_version = lk->lvb_version;
	wl->lvb_valid = lk->lvb_valid;
	wl->op_seq = lk->op_seq;
	return wl;
}

static void
free_locks(Dlmwire__Lock **l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void
wire_free_resource(Dlmwire__Resource *e)
{
	free_locks(e->locks, e->n_locks);
	free_locks(e->converting, e->n_converting);
	free_locks(e->blocked, e->n_blocked);
	free(e->convert_from);
	free(e);
}

void
wire_free_resources(Dlmwire__Resource **rs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		wire_free_resource(rs[i]);
	free(rs);
}

static Dlmwire__Lock **
queue_locks(struct lock_list *q, size_t *n, int converting, int32_t **from)
{
	struct dlm_lock *lk;
	Dlmwire__Lock **out;
	size_t count = 0;

	TAILQ_FOREACH(lk, q, q_entry)
		count++;
	out = xcalloc(count + 1, sizeof(*out));
	if (from != NULL)
		*from = xcalloc(count + 1, sizeof(**from));
	*n = 0;
	TAILQ_FOREACH(lk, q, q_entry) {
		if (from != NULL)
			(*from)[*n] = lk->mode;
		out[(*n)++] = wire_lock(lk, converting ? lk->convert_mode :
		    lk->queue == Q_BLOCKED ? lk->convert_mode : lk->mode);
	}
	return out;
}

/* The node to hand r to: the first other node with a lock on it. */
static int
migrate_target(const struct dlm_res *r)
{
	const struct dlm_domain *d = r->dom;
	const struct dlm_lock *lk;
	int q;

	for (q = 0; q < 3; q++)
		TAILQ_FOREACH(lk, &r->queue[q], q_entry)
			if (lk->node != d->dlmd->local_node && domain_is_member(d, lk->node))
				return lk->node;
	return -1;
}

struct migrate_ctx {
	uint8_t		 name[DLM_NAME_MAX];
	size_t		 namelen;
	unsigned	 target;
	unsigned	*outstanding;
	wire_reply_fn	*fn;
};

static void
res_drop(struct dlm_res *r)
{
	struct dlm_lock *lk;
	int q;

	for (q = 0; q < 3; q++)
		while ((lk = TAILQ_FIRST(&r->queue[q])) != NULL)
			lock_free(lk);
	res_free(r);
}

static void
migrated(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct migrate_ctx *mc = arg;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct dlm_res *r;

	if (d != NULL && (r = res_find(d, mc->name, mc->namelen)) != NULL &&
	    r->migrating == 2) {
		if (err == 0 && rep->status == WS_OK) {
			log_debug("domain %s: %s now mastered by node %u", d->logname,
			    res_printable(r), mc->target);
			if (d->directory == d->dlmd->local_node)
				dir_set(d, mc->name, mc->namelen, mc->target);
			else {
				m.name.data = mc->name;
				m.name.len = mc->namelen;
				m.master = mc->target;
				wire_send(d, d->directory, WIRE_DIR_SET, &m, NULL, NULL);
			}
			res_drop(r);
		} else
			r->migrating = 0;	/* the next pass tries again */
	}
	if (mc->fn != NULL)
		mc->fn(d, err, rep, NULL);
	free(mc);
}

static void
migrate_one(struct dlm_res *r, unsigned target, unsigned *outstanding,
    wire_reply_fn *fn)
{
	struct dlm_domain *d = r->dom;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	Dlmwire__Resource res = DLMWIRE__RESOURCE__INIT, *rp = &res;
	struct migrate_ctx *mc = xcalloc(1, sizeof(*mc));

	res.name.data = r->name;
	res.name.len = r->namelen;
	res.master = target;
	res.locks = queue_locks(&r->queue[Q_GRANTED], &res.n_locks, 0, NULL);
	res.converting = queue_locks(&r->queue[Q_CONVERTING], &res.n_converting, 1,
	    &res.convert_from);
	res.n_convert_from = res.n_converting;
	res.blocked = queue_locks(&r->queue[Q_BLOCKED], &res.n_blocked, 0, NULL);
	res.lvb.data = r->lvb;
	res.lvb.len = DLM_LVB_LEN;
	res.lvb_version = r->lvb_version;
	res.lvb_valid = r->lvb_valid;
	m.resources = &rp;
	m.n_resources = 1;
	memcpy(mc->name, r->name, r->namelen);
	mc->namelen = r->namelen;
	mc->target = target;
	mc->outstanding = outstanding;
	mc->fn = fn;
	r->migrating = 2;
	/* Deliveries first: what we granted reaches the holders from us. */
	ast_queue_flush(d);
	(*outstanding)++;
	wire_send(d, target, WIRE_MIGRATE, &m, migrated, mc);
	free_locks(res.locks, res.n_locks);
	free_locks(res.converting, res.n_converting);
	free_locks(res.blocked, res.n_blocked);
	free(res.convert_from);
}

void
migrate_all(struct dlm_domain *d, unsigned *outstanding, wire_reply_fn *fn)
{
	struct dlm_res *r, *next;
	int target;
	size_t b;

	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		for (r = LIST_FIRST(&d->res_hash[b]); r != NULL; r = next) {
			next = LIST_NEXT(r, hash_entry);
			if (r->migrating || r->lookup_sent)
				continue;
			if (r->master != d->dlmd->local_node ||
			    (target = migrate_target(r)) == -1) {
				if (r->master == d->dlmd->local_node &&
				    d->directory == d->dlmd->local_node)
					dir_drop(d, r->name, r->namelen);
				res_drop(r);
				continue;
			}
			migrate_one(r, (unsigned)target, outstanding, fn);
		}
}

/* ---------------------------------------------------------- directory handoff */

struct handoff_ctx {
	unsigned	 target;
	int		 last;
	wire_reply_fn	*fn;
};

static void
handed(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct handoff_ctx *hc = arg;

	if (d != NULL && hc->last) {
		d->handing_off = 0;
		if (err == 0)
			d->directory = (uint8_t)hc->target;
		else
			log_warnx("domain %s: directory handoff to node %u failed: "
			    "the next recovery rebuilds it", d->logname, hc->target);
	}
	if (hc->fn != NULL)
		hc->fn(d, err, rep, NULL);
	free(hc);
}

static void
send_chunk(struct dlm_domain *d, unsigned target, Dlmwire__Resource **rs, size_t n,
    int last, unsigned *outstanding, wire_reply_fn *fn)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct handoff_ctx *hc = xcalloc(1, sizeof(*hc));

	m.resources = rs;
	m.n_resources = n;
	m.done = last;
	hc->target = target;
	hc->last = last;
	hc->fn = fn;
	(*outstanding)++;
	wire_send(d, target, WIRE_DIR_HANDOFF, &m, handed, hc);
}

/* 1 when a handoff went out (replies counted in *outstanding). */
int
dir_handoff(struct dlm_domain *d, unsigned *outstanding, wire_reply_fn *fn)
{
	struct dlm_dirent *e;
	Dlmwire__Resource **rs;
	unsigned target;
	size_t b, n = 0;

	if (d->directory != d->dlmd->local_node || d->handing_off)
		return 0;
	for (target = 0; target < DLM_MAX_NODES; target++)
		if (d->members[target] && target != d->dlmd->local_node)
			break;
	if (target == DLM_MAX_NODES)
		return 0;
	d->handing_off = 1;
	rs = xcalloc(HANDOFF_CHUNK, sizeof(*rs));
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		LIST_FOREACH(e, &d->dir_hash[b], entry) {
			rs[n] = xmalloc(sizeof(**rs));
			dlmwire__resource__init(rs[n]);
			rs[n]->name.data = e->name;
			rs[n]->name.len = e->namelen;
			rs[n]->master = e->master;
			if (++n == HANDOFF_CHUNK) {
				send_chunk(d, target, rs, n, 0, outstanding, fn);
				wire_free_resources(rs, n);
				rs = xcalloc(HANDOFF_CHUNK, sizeof(*rs));
				n = 0;
			}
		}
	send_chunk(d, target, rs, n, 1, outstanding, fn);
	wire_free_resources(rs, n);
	log_info("domain %s: directory handed to node %u", d->logname, target);
	return 1;
}

/* ---------------------------------------------------------- receiving */

static struct dlm_lock *
install_lock(struct dlm_res *r, const Dlmwire__Lock *wl)
{
	struct dlm_domain *d = r->dom;
	struct dlm_lock *lk;

	if ((lk = lock_find(d, wl->cookie)) == NULL) {
		lk = lock_new(r, wl->cookie, wl->node);
		lk->op_seq = wl->op_seq;
	} else {
		/* Ours: a request the old master had seen is in the queues
		 * (its copy carries that request's number); one it had not,
		 * still on the wire, and an unlock are redone here. */
		if (lk->op != OP_UNLOCK && !seq_older(wl->op_seq, lk->op_seq))
			lk->op = OP_NONE;
		lk->op_sent = 0;
	}
	return lk;
}

static void
queue_tail(struct dlm_res *r, struct dlm_lock *lk, enum lock_queue q)
{
	lk->queue = q;
	TAILQ_INSERT_TAIL(&r->queue[q], lk, q_entry);
}

static void
h_migrate(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	const Dlmwire__Resource *rs;
	struct dlm_res *r;
	struct dlm_lock *lk;
	size_t i;

	if (d->state != DS_JOINED || d->recovering) {
		rep->status = WS_RETRY;
		return;
	}
	if (m->n_resources != 1 || (rs = m->resources[0])->name.len == 0 ||
	    rs->name.len > DLM_NAME_MAX || rs->n_convert_from != rs->n_converting) {
		rep->status = WS_BAD;
		return;
	}
	r = res_get(d, rs->name.data, rs->name.len);
	if (r->master == d->dlmd->local_node && res_in_use(r)) {
		rep->status = WS_BAD;
		return;
	}
	r->master = d->dlmd->local_node;
	r->has_bk = 0;
	for (i = 0; i < rs->n_locks; i++) {
		lk = install_lock(r, rs->locks[i]);
		lk->mode = rs->locks[i]->mode;
		queue_tail(r, lk, Q_GRANTED);
	}
	for (i = 0; i < rs->n_converting; i++) {
		lk = install_lock(r, rs->converting[i]);
		lk->mode = rs->convert_from[i];
		lk->convert_mode = rs->converting[i]->mode;
		queue_tail(r, lk, Q_CONVERTING);
	}
	for (i = 0; i < rs->n_blocked; i++) {
		lk = install_lock(r, rs->blocked[i]);
		lk->convert_mode = rs->blocked[i]->mode;
		queue_tail(r, lk, Q_BLOCKED);
	}
	if (rs->lvb.len == DLM_LVB_LEN) {
		memcpy(r->lvb, rs->lvb.data, DLM_LVB_LEN);
		r->lvb_version = rs->lvb_version;
		r->lvb_valid = rs->lvb_valid;
	}
	log_debug("domain %s: took over %s from node %u", d->logname, res_printable(r), from);
	grant_shuffle(r);
	res_master_known(r);
	rep->status = WS_OK;
}

static void
h_dir_handoff(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	size_t i;

	for (i = 0; i < m->n_resources; i++)
		if (m->resources[i]->name.len > 0 &&
		    m->resources[i]->name.len <= DLM_NAME_MAX &&
		    m->resources[i]->master < DLM_MAX_NODES)
			dir_set(d, m->resources[i]->name.data, m->resources[i]->name.len,
			    m->resources[i]->master);
	if (m->done) {
		d->directory = d->dlmd->local_node;
		log_info("domain %s: node %u handed us the directory (%llu entries)",
		    d->logname, from, (unsigned long long)d->ndirents);
	}
	rep->status = WS_OK;
}

static const struct wire_handler migrate_handlers[] = {
	{ WIRE_MIGRATE, h_migrate },
	{ WIRE_DIR_HANDOFF, h_dir_handoff },
};

void
migrate_handlers_init(void)
{
	wire_register_handlers(migrate_handlers, nitems(migrate_handlers));
}
