/*
 * Node death (o2dlm's dlmrecovery.c, with a directory to rebuild).
 *
 * Every survivor, when hbd reports the death: freezes the domain (no
 * request goes out, other nodes' requests get RETRY), drops the dead
 * node's locks from the resources it masters (a value block the dead
 * node may have changed under EX is marked not valid: we keep the last
 * value written back, where o2dlm zeroes it), and puts back what it had
 * in flight to the dead master: a convert or new lock is sent again
 * later, an unlock is done (the lock died with its master).
 *
 * The recovery master is the lowest-numbered survivor. It asks everyone
 * to BEGIN_RECO; a node agrees only when it has seen the same members
 * (so views converge first). It then pulls from every survivor
 * (RECO_DATA, in chunks) the names that survivor masters and its own
 * granted locks on resources whose master is gone; it becomes the master
 * of those, rebuilds the directory as its own, and sends FINALIZE_RECO:
 * everyone points the orphaned resources at it, unfreezes, tells its
 * clients RECOVERY_DONE and sends again what waited. A recovery master
 * that dies is just one more death: the next lowest starts over.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "log.h"
#include "netdanswer.h"
#include "util.h"

#define RECO_RETRY_MS	100
/* A RECO_DATA reply's resources, at most: netd's limit less room for
 * the message's own fields. */
#define RECO_REPLY_BUDGET	(NETD_MAX_PAYLOAD - 256)
/* A RECO_DATA cursor: the bucket to go on with and, within it, the
 * serial of the first resource not sent yet (0: the whole bucket).
 * Buckets list their resources newest first, so what a node creates
 * meanwhile never shifts what is left to send. */
#define CURSOR_SERIAL_BITS	48
#define CURSOR(b, serial)	(((uint64_t)(b) << CURSOR_SERIAL_BITS) | (serial))
#define CURSOR_BUCKET(c)	((c) >> CURSOR_SERIAL_BITS)
#define CURSOR_SERIAL(c)	((c) & ((1ull << CURSOR_SERIAL_BITS) - 1))

struct reco_state {
	uint64_t	 epoch;
	uint8_t		 members[DLM_MAX_NODES];
	unsigned	 outstanding;
	int		 failed;
	int		 stage;		/* 0 begin, 1 data, 2 finalize */
	Dlmwire__Msg	**chunks;
	size_t		 nchunks;
};

struct reco_call {
	uint64_t	 epoch;
	unsigned	 node;
};

static uint64_t epoch_seq;

static void	reco_start(struct dlm_domain *);

static void
reco_free(struct dlm_domain *d)
{
	struct reco_state *rs = d->reco;
	size_t i;

	if (rs == NULL)
		return;
	for (i = 0; i < rs->nchunks; i++)
		dlmwire__msg__free_unpacked(rs->chunks[i], NULL);
	free(rs->chunks);
	free(rs);
	d->reco = NULL;
}

static void
reco_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	reco_begin_if_master(arg);
}

static void
reco_later(struct dlm_domain *d)
{
	struct timeval tv = { 0, RECO_RETRY_MS * 1000 };

	if (d->reco_ev == NULL &&
	    (d->reco_ev = evtimer_new(d->dlmd->base, reco_timer, d)) == NULL)
		fatalx("out of memory");
	evtimer_add(d->reco_ev, &tv);
}

void
reco_begin_if_master(struct dlm_domain *d)
{
	if (!d->recovering || d->reco != NULL)
		return;
	if (domain_lowest_member(d) != (int)d->dlmd->local_node)
		return;
	reco_start(d);
}

/* ---------------------------------------------------------- local cleanup */

void
reco_node_down(struct dlm_domain *d, unsigned node)
{
	struct dlm_res *r;
	struct dlm_lock *lk, *next;
	size_t b;
	int q, held_ex;

	d->recovering = 1;
	d->lost_member = 1;
	if (d->directory == node)
		d->directory = DLM_NODE_NONE;
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		LIST_FOREACH(r, &d->res_hash[b], hash_entry) {
			if (r->master == d->dlmd->local_node) {
				held_ex = 0;
				for (q = 0; q < 3; q++)
					for (lk = TAILQ_FIRST(&r->queue[q]); lk != NULL; lk = next) {
						next = TAILQ_NEXT(lk, q_entry);
						if (lk->node != node)
							continue;
						held_ex |= lk->mode == DLM_EX;
						lock_free(lk);
					}
				if (held_ex)
					r->lvb_valid = 0;
				continue;
			}
			if (r->master == DLM_NODE_NONE || domain_is_member(d, r->master))
				continue;
			r->recovering = 1;
			for (lk = TAILQ_FIRST(&r->local); lk != NULL; lk = next) {
				next = TAILQ_NEXT(lk, local_entry);
				lock_master_lost(lk);
			}
		}
	if (d->reco != NULL) {
		log_info("domain %s: node %u died during recovery; starting over",
		    d->logname, node);
		reco_free(d);
	}
	reco_begin_if_master(d);
}

/* ---------------------------------------------------------- recovery master */

static int
reco_current(struct dlm_domain *d, const struct reco_call *rc)
{
	return d != NULL && d->reco != NULL && d->reco->epoch == rc->epoch;
}

static void
send_all(struct dlm_domain *d, enum wire_type type, Dlmwire__Msg *m,
    wire_reply_fn *fn)
{
	struct reco_state *rs = d->reco;
	struct reco_call *rc;
	unsigned n;

	rs->outstanding = 1;
	for (n = 0; n < DLM_MAX_NODES; n++) {
		if (!rs->members[n])
			continue;
		rc = xcalloc(1, sizeof(*rc));
		rc->epoch = rs->epoch;
		rc->node = n;
		rs->outstanding++;
		m->cursor = 0;
		wire_send(d, n, type, m, fn, rc);
	}
	rs->outstanding--;
}

static void	data_request(struct dlm_domain *, unsigned node, uint64_t cursor);
static void	reco_install(struct dlm_domain *);
static void	finalize_done(struct dlm_domain *, int, const Dlmwire__Msg *, void *);

static void
members_msg(struct dlm_domain *d, Dlmwire__Msg *m, uint32_t *buf)
{
	unsigned n;

	m->n_nodes = 0;
	m->nodes = buf;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->reco->members[n])
			buf[m->n_nodes++] = n;
	m->epoch = d->reco->epoch;
}

static void
begin_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct reco_call *rc = arg;
	struct reco_state *rs;
	unsigned n;

	if (!reco_current(d, rc)) {
		free(rc);
		return;
	}
	rs = d->reco;
	if (err != 0 || rep->status != WS_OK)
		rs->failed = 1;
	free(rc);
	if (--rs->outstanding > 0)
		return;
	if (rs->failed) {
		/* Somebody has not seen the death yet: ask again shortly. */
		reco_free(d);
		reco_later(d);
		return;
	}
	rs->stage = 1;
	rs->outstanding = 0;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (rs->members[n]) {
			rs->outstanding++;
			data_request(d, n, 0);
		}
}

static void
data_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct reco_call *rc = arg;
	struct reco_state *rs;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	uint32_t buf[DLM_MAX_NODES];
	uint8_t *packed;
	size_t len;

	if (!reco_current(d, rc)) {
		free(rc);
		return;
	}
	rs = d->reco;
	if (err != 0 || rep->status != WS_OK) {
		log_info("domain %s: node %u did not give its recovery data (%s); "
		    "asking again", d->logname, rc->node, err ? strerror(err) : "refused");
		free(rc);
		reco_free(d);
		reco_later(d);
		return;
	}
	/* Keep a copy: the reply is freed when we return. */
	len = dlmwire__msg__get_packed_size(rep);
	packed = xmalloc(len ? len : 1);
	dlmwire__msg__pack(rep, packed);
	rs->chunks = xrealloc(rs->chunks, (rs->nchunks + 1) * sizeof(*rs->chunks));
	rs->chunks[rs->nchunks++] = dlmwire__msg__unpack(NULL, len, packed);
	free(packed);
	if (!rep->done) {
		data_request(d, rc->node, rep->cursor);
		free(rc);
		return;
	}
	free(rc);
	if (--rs->outstanding > 0)
		return;
	reco_install(d);
	rs->stage = 2;
	members_msg(d, &m, buf);
	m.directory = d->dlmd->local_node;
	send_all(d, WIRE_FINALIZE_RECO, &m, finalize_done);
}

static void
data_request(struct dlm_domain *d, unsigned node, uint64_t cursor)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct reco_call *rc = xcalloc(1, sizeof(*rc));

	rc->epoch = d->reco->epoch;
	rc->node = node;
	m.epoch = d->reco->epoch;
	m.cursor = cursor;
	wire_send(d, node, WIRE_RECO_DATA, &m, data_done, rc);
}

static void
finalize_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct reco_call *rc = arg;

	(void)err;
	(void)rep;
	if (!reco_current(d, rc)) {
		free(rc);
		return;
	}
	free(rc);
	if (--d->reco->outstanding > 0)
		return;
	log_info("domain %s: recovery finished", d->logname);
	reco_free(d);
	/* Deaths during the finalize: another round. */
	reco_begin_if_master(d);
}

static void
reco_start(struct dlm_domain *d)
{
	struct reco_state *rs;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	uint32_t buf[DLM_MAX_NODES];

	rs = d->reco = xcalloc(1, sizeof(*rs));
	epoch_seq = (d->reco_epoch >> 8) > epoch_seq ? d->reco_epoch >> 8 : epoch_seq;
	rs->epoch = (++epoch_seq << 8) | d->dlmd->local_node;
	memcpy(rs->members, d->members, sizeof(rs->members));
	log_info("domain %s: recovery master, epoch %llu", d->logname,
	    (unsigned long long)rs->epoch);
	members_msg(d, &m, buf);
	send_all(d, WIRE_BEGIN_RECO, &m, begin_done);
}

static int
lock_report_bad(const Dlmwire__Lock *wl)
{
	return wl->lvb.len != DLM_LVB_LEN || !dlm_mode_valid(wl->mode) ||
	    wl->node >= DLM_MAX_NODES;
}

/*
 * First pass over a recovered resource's reports: the newest value
 * block anybody kept (lock copies, kept copies; not the write-backs that
 * were in flight), and whether a PR/EX holder vouches for it.
 */
static void
reco_newest(struct dlm_res *r, const Dlmwire__Resource *e)
{
	const Dlmwire__Lock *wl;
	size_t k;

	if (e->has_copy && e->lvb.len == DLM_LVB_LEN &&
	    (!r->reco_have || e->lvb_version > r->lvb_version)) {
		memcpy(r->lvb, e->lvb.data, DLM_LVB_LEN);
		r->lvb_version = e->lvb_version;
		r->reco_have = 1;
	}
	for (k = 0; k < e->n_locks; k++) {
		wl = e->locks[k];
		if (lock_report_bad(wl) || wl->write_pending)
			continue;
		if (wl->mode >= DLM_PR)
			r->reco_strong = 1;
		if (!r->reco_have || wl->lvb_version > r->lvb_version) {
			memcpy(r->lvb, wl->lvb.data, DLM_LVB_LEN);
			r->lvb_version = wl->lvb_version;
			r->reco_have = 1;
		}
	}
}

/*
 * Second pass: the locks. A write-back that was in flight to the dead
 * master took effect if somebody has a value at least as new; then the
 * lock is as it asked (gone, or down-converted). Otherwise it is still
 * EX, and its holder sends the write-back again to us.
 */
static void
reco_locks(struct dlm_res *r, const Dlmwire__Resource *e)
{
	struct dlm_domain *d = r->dom;
	const Dlmwire__Lock *wl;
	struct dlm_lock *lk;
	size_t k;
	int mode;

	for (k = 0; k < e->n_locks; k++) {
		wl = e->locks[k];
		if (lock_report_bad(wl))
			continue;
		mode = wl->mode;
		if (wl->write_pending && r->reco_have && wl->lvb_version <= r->lvb_version) {
			if (wl->unlocking)
				continue;
			mode = dlm_mode_valid(wl->next_mode) ? wl->next_mode : DLM_NL;
		}
		if ((lk = lock_find(d, wl->cookie)) == NULL) {
			lk = lock_new(r, wl->cookie, wl->node);
			lk->op_seq = wl->op_seq;
		}
		if (lk->queue != Q_NONE)
			continue;
		lk->mode = mode;
		lk->flags |= DLM_FL_VALBLK;
		lk->queue = Q_GRANTED;
		TAILQ_INSERT_TAIL(&r->queue[Q_GRANTED], lk, q_entry);
		if (wl->write_pending || e->has_copy)
			lvb_applied(r, wl->node);
	}
}

/* Take over the resources of dead masters; the directory becomes ours. */
static void
reco_install(struct dlm_domain *d)
{
	struct reco_state *rs = d->reco;
	const Dlmwire__Resource *e;
	struct dlm_res *r;
	size_t c, i;
	unsigned self = d->dlmd->local_node, recovered = 0;
	int pass;

	dir_clear(d);
	for (pass = 0; pass < 2; pass++)
		for (c = 0; c < rs->nchunks; c++)
			for (i = 0; i < rs->chunks[c]->n_resources; i++) {
				e = rs->chunks[c]->resources[i];
				if (e->name.len == 0 || e->name.len > DLM_NAME_MAX)
					continue;
				if (e->master < DLM_MAX_NODES && rs->members[e->master]) {
					if (pass == 0)
						dir_set(d, e->name.data, e->name.len, e->master);
					continue;
				}
				r = res_get(d, e->name.data, e->name.len);
				if (!r->reco_seen) {
					r->reco_seen = 1;
					r->reco_strong = 0;
					r->reco_have = 0;
					r->master = (uint8_t)self;
					r->has_bk = 0;
					memset(r->lvb, 0, DLM_LVB_LEN);
					r->lvb_version = 0;
					dir_set(d, e->name.data, e->name.len, self);
					recovered++;
				}
				if (pass == 0)
					reco_newest(r, e);
				else
					reco_locks(r, e);
			}
	/* Only a PR/EX holder's copy proves the value is the last one. */
	for (c = 0; c < DLM_HASH_BUCKETS; c++)
		LIST_FOREACH(r, &d->res_hash[c], hash_entry)
			if (r->reco_seen)
				r->lvb_valid = r->reco_strong;
	log_info("domain %s: recovered %u resource%s; directory rebuilt "
	    "(%llu entries)", d->logname, recovered, recovered == 1 ? "" : "s",
	    (unsigned long long)d->ndirents);
}

/* ---------------------------------------------------------- survivors */

static int
same_members(const struct dlm_domain *d, const Dlmwire__Msg *m)
{
	uint8_t theirs[DLM_MAX_NODES] = { 0 };
	size_t i;

	for (i = 0; i < m->n_nodes; i++)
		if (m->nodes[i] < DLM_MAX_NODES)
			theirs[m->nodes[i]] = 1;
	return memcmp(theirs, d->members, sizeof(theirs)) == 0;
}

static void
h_begin_reco(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	if (domain_lowest_member(d) != (int)from || !same_members(d, m)) {
		rep->status = WS_RETRY;
		return;
	}
	/*
	 * Same members but no death seen here: we heard the node's goodbye,
	 * the master did not (the node's heartbeat stopped first). Freeze
	 * and take part; there is nothing of the node's left to drop here.
	 */
	d->recovering = 1;
	d->reco_epoch = m->epoch;
	d->reco_master = (uint8_t)from;
	rep->status = WS_OK;
}

static Dlmwire__Resource *
report(struct dlm_res *r, int with_locks)
{
	Dlmwire__Resource *e = xmalloc(sizeof(*e));
	Dlmwire__Lock *wl;
	struct dlm_lock *lk;
	size_t n = 0;

	dlmwire__resource__init(e);
	e->name.data = r->name;
	e->name.len = r->namelen;
	e->master = r->master;
	if (!with_locks)
		return e;
	if (r->has_bk) {
		e->has_copy = 1;
		e->lvb.data = r->bk_lvb;
		e->lvb.len = DLM_LVB_LEN;
		e->lvb_version = r->bk_version;
	}
	TAILQ_FOREACH(lk, &r->local, local_entry)
		n++;
	e->locks = xcalloc(n + 1, sizeof(*e->locks));
	TAILQ_FOREACH(lk, &r->local, local_entry) {
		if (lk->mode == DLM_IV)
			continue;
		wl = wire_lock(lk, lk->mode);
		if (lk->lvb_put && (lk->op == OP_UNLOCK || lk->op == OP_CONVERT)) {
			wl->write_pending = 1;
			wl->unlocking = lk->op == OP_UNLOCK;
			wl->next_mode = lk->convert_mode;
		}
		e->locks[e->n_locks++] = wl;
	}
	return e;
}

/* Whether recovery must hear of r from us. */
static int
reco_reports(struct dlm_domain *d, const struct dlm_res *r)
{
	/* Ours, but the directory is forgetting it: the rebuilt one must
	 * not know it either. */
	if (r->master == d->dlmd->local_node)
		return r->migrating != 1;
	return r->master != DLM_NODE_NONE && !domain_is_member(d, r->master) &&
	    (!TAILQ_EMPTY(&r->local) || r->has_bk);
}

static void
h_reco_data(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	Dlmwire__Resource *e;
	struct dlm_res *r;
	uint64_t b, resume = CURSOR_SERIAL(m->cursor);
	size_t used = 0, len;

	if (!d->recovering || m->epoch != d->reco_epoch || from != d->reco_master) {
		rep->status = WS_RETRY;
		return;
	}
	rep->resources = xcalloc(1, sizeof(*rep->resources));
	for (b = CURSOR_BUCKET(m->cursor); b < DLM_HASH_BUCKETS; b++, resume = 0)
		LIST_FOREACH(r, &d->res_hash[b], hash_entry) {
			if ((resume != 0 && r->serial > resume) || !reco_reports(d, r))
				continue;
			e = report(r, r->master != d->dlmd->local_node);
			/* its field tag and length too */
			len = dlmwire__resource__get_packed_size(e) + 4;
			if (used + len > RECO_REPLY_BUDGET && rep->n_resources > 0) {
				wire_free_resource(e);
				rep->cursor = CURSOR(b, r->serial);
				rep->status = WS_OK;
				return;
			}
			if (len > RECO_REPLY_BUDGET)
				log_warnx("domain %s: %zu bytes of recovery data on one "
				    "resource, more than netd carries", d->logname, len);
			used += len;
			rep->resources = xrealloc(rep->resources,
			    (rep->n_resources + 1) * sizeof(*rep->resources));
			rep->resources[rep->n_resources++] = e;
		}
	rep->done = 1;
	rep->status = WS_OK;
}

static void
h_finalize_reco(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	uint8_t alive[DLM_MAX_NODES] = { 0 };
	struct dlm_res *r;
	size_t b, i;
	unsigned n;

	rep->status = WS_OK;
	if (m->epoch != d->reco_epoch || from != d->reco_master)
		return;
	for (i = 0; i < m->n_nodes; i++)
		if (m->nodes[i] < DLM_MAX_NODES)
			alive[m->nodes[i]] = 1;
	if (from != d->dlmd->local_node)
		dir_clear(d);
	d->directory = (uint8_t)from;
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		LIST_FOREACH(r, &d->res_hash[b], hash_entry) {
			r->reco_seen = 0;
			if (r->master != DLM_NODE_NONE && !alive[r->master])
				r->master = (uint8_t)from;
			r->recovering = 0;
			if (r->master == d->dlmd->local_node)
				grant_shuffle(r);
		}
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->dead[n] && !alive[n]) {
			d->dead[n] = 0;
			log_info("domain %s: node %u recovered", d->logname, n);
			domain_publish(d, DLMD__DOMAIN_EVENT_KIND__RECOVERY_DONE, n);
		}
	d->reco_master = DLM_NODE_NONE;
	/* Another death since the recovery began keeps us frozen. */
	if (!same_members(d, m))
		return;
	d->recovering = 0;
	domain_retry(d);
	domain_leave_resume(d);
}

static const struct wire_handler reco_handlers[] = {
	{ WIRE_BEGIN_RECO, h_begin_reco },
	{ WIRE_RECO_DATA, h_reco_data },
	{ WIRE_FINALIZE_RECO, h_finalize_reco },
};

void
reco_handlers_init(void)
{
	wire_register_handlers(reco_handlers, nitems(reco_handlers));
}
