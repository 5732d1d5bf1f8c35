/*
 * Domains: joining with the live nodes' agreement, leaving with the
 * resources we master handed over, and the bookkeeping of members.
 *
 * Join (o2dlm's dlm_try_to_join_domain): register our handlers with
 * netd, then ask every node hbd sees alive with QUERY_JOIN, sending our
 * live map. A member answers OK (and notes us as the one joiner) only
 * when it sees us alive, our map covers its domain, nobody else is
 * joining and no recovery runs; a node outside the domain answers
 * NO_MAP (or has no handler: ENOPROTOOPT). Any refusal, unreachable node
 * or change of the live map cancels the attempt (CANCEL_JOIN to those
 * that said OK) and retries after a random 0-600 ms, for up to 90 s.
 * Then ASSERT_JOINED makes it final. The domain's directory is whatever
 * the members say; a node alone is its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "crc32.h"
#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#define JOIN_WAIT_HBD_MS	500

struct join_state {
	uint64_t	 started_ms;
	uint8_t		 live[DLM_MAX_NODES];	/* as sent */
	uint8_t		 ok[DLM_MAX_NODES];
	unsigned	 outstanding;
	int		 refused;
	int		 fatal;			/* protocol mismatch */
	unsigned	 directory;
	unsigned	 attempt;
	int		 waiting_logged;
	struct event	*timer;
};

struct dlm_domain *
domain_find(struct dlmd *dd, const char *name)
{
	struct dlm_domain *d;

	TAILQ_FOREACH(d, &dd->domains, entry)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

struct dlm_domain *
domain_find_key(struct dlmd *dd, uint32_t key)
{
	struct dlm_domain *d;

	TAILQ_FOREACH(d, &dd->domains, entry)
		if (d->key == key)
			return d;
	return NULL;
}

int
domain_is_member(const struct dlm_domain *d, unsigned node)
{
	return node < DLM_MAX_NODES && d->members[node];
}

int
domain_lowest_member(const struct dlm_domain *d)
{
	int n;

	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->members[n])
			return n;
	return -1;
}

void
domain_info(struct dlm_domain *d, Dlmd__DomainInfo *di, uint32_t *members_buf)
{
	unsigned n;

	di->name = d->name;
	di->key = d->key;
	di->n_members = 0;
	di->members = members_buf;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->members[n])
			members_buf[di->n_members++] = n;
	di->directory = d->directory;
	di->recovering = d->recovering != 0;
	di->protocol_major = DLM_PROTO_MAJOR;
	di->protocol_minor = DLM_PROTO_MINOR;
}

/* Tell every client of the domain. */
void
domain_publish(struct dlm_domain *d, int kind, unsigned node)
{
	Envelope ev = ENVELOPE__INIT;
	Dlmd__DomainEvent de = DLMD__DOMAIN_EVENT__INIT;
	struct dlm_member *mb;

	de.domain = d->name;
	de.kind = kind;
	de.node = node;
	ev.type = MSG_TYPE__MSG_DLMD_DOMAIN_EVENT;
	ev.kind = KIND__KIND_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_DOMAIN_EVENT;
	ev.domain_event = &de;
	LIST_FOREACH(mb, &d->clients, dom_entry)
		if (mb->client != NULL)
			api_send_event(mb->client->conn, &ev);
}

/* ---------------------------------------------------------- members (clients) */

static void
reply_join(struct dlm_member *mb, int status, const char *why)
{
	Envelope rep = ENVELOPE__INIT;
	Dlmd__DomainInfo di = DLMD__DOMAIN_INFO__INIT;
	uint32_t members[DLM_MAX_NODES];

	if (mb->join_req == NULL)
		return;
	if (mb->join_conn != NULL) {
		if (status == 0) {
			domain_info(mb->dom, &di, members);
			rep.payload_case = ENVELOPE__PAYLOAD_DOMAIN_INFO;
			rep.domain_info = &di;
			ipc_reply(mb->join_conn, mb->join_req, &rep);
		} else
			ipc_reply_status(mb->join_conn, mb->join_req, status, "%s", why);
	}
	free(mb->join_req);
	mb->join_req = NULL;
	mb->join_conn = NULL;
}

static void
member_free(struct dlm_member *mb)
{
	LIST_REMOVE(mb, dom_entry);
	if (mb->client != NULL)
		LIST_REMOVE(mb, client_entry);
	/* the domain answers it when the node is out (or stays in) */
	if (mb->leave_reply != NULL)
		LIST_INSERT_HEAD(&mb->dom->leave_replies, mb->leave_reply, entry);
	free(mb->join_req);
	free(mb);
}

static void
answer_leaves(struct dlm_domain *d)
{
	struct leave_reply *lr;
	struct ipc_conn *c;

	while ((lr = LIST_FIRST(&d->leave_replies)) != NULL) {
		LIST_REMOVE(lr, entry);
		if ((c = ipc_server_find(d->dlmd->ipc, lr->conn_id)) != NULL)
			ipc_reply_status(c, &lr->req, 0, NULL);
		free(lr);
	}
}

static void
domain_free(struct dlm_domain *d)
{
	struct dlm_res *r;
	struct dlm_lock *lk;
	size_t b;

	answer_leaves(d);
	TAILQ_REMOVE(&d->dlmd->domains, d, entry);
	for (b = 0; b < DLM_HASH_BUCKETS; b++) {
		while ((lk = LIST_FIRST(&d->lock_hash[b])) != NULL) {
			lk->owner = NULL;
			lock_free(lk);
		}
	}
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		while ((r = LIST_FIRST(&d->res_hash[b])) != NULL)
			res_free(r);
	dir_clear(d);
	if (d->join != NULL) {
		if (d->join->timer != NULL)
			event_free(d->join->timer);
		free(d->join);
	}
	if (d->retry_ev != NULL)
		event_free(d->retry_ev);
	if (d->purge_ev != NULL)
		event_free(d->purge_ev);
	if (d->ast_ev != NULL)
		event_free(d->ast_ev);
	if (d->reco_ev != NULL)
		event_free(d->reco_ev);
	free(d->reco);
	free(d);
}

static void	domain_start_leave(struct dlm_domain *);

/* The last member gone and its locks released: leave the cluster's domain. */
void
domain_maybe_destroy(struct dlm_domain *d)
{
	struct dlm_member *mb, *next;

	for (mb = LIST_FIRST(&d->clients); mb != NULL; mb = next) {
		next = LIST_NEXT(mb, dom_entry);
		if (mb->releasing && TAILQ_EMPTY(&mb->locks))
			member_free(mb);
	}
	if (!LIST_EMPTY(&d->clients)) {
		answer_leaves(d);
		return;
	}
	switch (d->state) {
	case DS_JOINED:
		domain_start_leave(d);
		break;
	case DS_REGISTERING:
	case DS_JOINING:
		/* Nobody waits for it any more: the join goes on to the end
		 * (members may have noted us as joiner) and leaves then. */
		break;
	default:
		break;
	}
}

struct reap_ctx {
	struct dlmd	*dlmd;
	uint32_t	 key;
};

static void
reap_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct reap_ctx *rc = arg;
	struct dlm_domain *d = domain_find_key(rc->dlmd, rc->key);

	(void)fd;
	(void)ev;
	if (d != NULL)
		domain_maybe_destroy(d);
	free(rc);
}

/*
 * Locks go away in callbacks of all kinds: look for empty members later,
 * by key, as the domain may be gone by then.
 */
void
domain_reap_later(struct dlm_domain *d)
{
	struct timeval now = { 0, 0 };
	struct reap_ctx *rc = xcalloc(1, sizeof(*rc));

	rc->dlmd = d->dlmd;
	rc->key = d->key;
	if (event_base_once(d->dlmd->base, -1, EV_TIMEOUT, reap_cb, rc, &now) == -1)
		fatalx("event_base_once");
}

void
domain_leave(struct dlm_member *mb, struct ipc_conn *c, const Envelope *req)
{
	struct dlm_domain *d = mb->dom;

	if (mb->refs > 1) {
		mb->refs--;
		if (c != NULL)
			ipc_reply_status(c, req, 0, NULL);
		return;
	}
	if (c != NULL) {
		mb->leave_reply = xcalloc(1, sizeof(*mb->leave_reply));
		mb->leave_reply->conn_id = ipc_conn_id(c);
		envelope__init(&mb->leave_reply->req);
		mb->leave_reply->req.type = req->type;
		mb->leave_reply->req.id = req->id;
	}
	reply_join(mb, ECANCELED, "left the domain before the join finished");
	member_release_locks(mb);
	domain_maybe_destroy(d);
}

/* ---------------------------------------------------------- join */

static void	join_attempt(struct dlm_domain *);

static void
join_finish(struct dlm_domain *d, int status, const char *why)
{
	struct dlm_member *mb;

	LIST_FOREACH(mb, &d->clients, dom_entry)
		reply_join(mb, status, why);
	if (d->join != NULL) {
		if (d->join->timer != NULL)
			event_free(d->join->timer);
		free(d->join);
		d->join = NULL;
	}
	if (status != 0) {
		log_warnx("domain %s: cannot join: %s", d->logname, why);
		if (d->registered)
			wire_domain_register(d, 0);
		d->state = DS_GONE;
		while ((mb = LIST_FIRST(&d->clients)) != NULL)
			member_free(mb);
		domain_free(d);
		return;
	}
	if (LIST_EMPTY(&d->clients))
		domain_maybe_destroy(d);
}

static void
join_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	join_attempt(arg);
}

static void
join_later(struct dlm_domain *d, unsigned ms)
{
	struct join_state *js = d->join;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (now_ms() - js->started_ms > DLM_JOIN_TIMEOUT_MS) {
		join_finish(d, ETIMEDOUT, "the live nodes did not agree within 90 s");
		return;
	}
	evtimer_add(js->timer, &tv);
}

static void
send_simple(struct dlm_domain *d, unsigned node, enum wire_type type)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;

	wire_send(d, node, type, &m, NULL, NULL);
}

static void
join_decide(struct dlm_domain *d)
{
	struct join_state *js = d->join;
	struct dlmd *dd = d->dlmd;
	unsigned n, count = 0;
	int changed = 0;

	for (n = 0; n < DLM_MAX_NODES; n++)
		if (n != dd->local_node && js->live[n] != dd->live[n])
			changed = 1;
	if (js->fatal) {
		for (n = 0; n < DLM_MAX_NODES; n++)
			if (js->ok[n])
				send_simple(d, n, WIRE_CANCEL_JOIN);
		join_finish(d, EPROTO, "a member speaks another DLM protocol");
		return;
	}
	if (js->refused || changed) {
		for (n = 0; n < DLM_MAX_NODES; n++)
			if (js->ok[n])
				send_simple(d, n, WIRE_CANCEL_JOIN);
		log_debug("domain %s: join attempt %u %s; backing off", d->logname,
		    js->attempt, changed ? "saw the live map change" : "was refused");
		d->joining = DLM_NODE_NONE;
		join_later(d, 200 * (unsigned)(random() % 4));
		return;
	}
	d->joining = DLM_NODE_NONE;
	memset(d->members, 0, sizeof(d->members));
	d->members[dd->local_node] = 1;
	d->directory = js->directory < DLM_MAX_NODES ? js->directory : dd->local_node;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (js->ok[n]) {
			d->members[n] = 1;
			count++;
			send_simple(d, n, WIRE_ASSERT_JOINED);
		}
	d->state = DS_JOINED;
	hbd_guard_update(dd);
	domain_purge_start(d);
	log_info("domain %s: joined with %u other node%s; directory is node %u",
	    d->logname, count, count == 1 ? "" : "s", d->directory);
	join_finish(d, 0, NULL);
}

static void
query_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	unsigned node = (unsigned)(uintptr_t)arg;
	struct join_state *js;

	if (d == NULL || d->join == NULL || d->state != DS_JOINING)
		return;
	js = d->join;
	if (err == ENOPROTOOPT) {
		/* no such domain there */
	} else if (err != 0) {
		log_debug("domain %s: QUERY_JOIN to node %u: %s", d->logname, node,
		    strerror(err));
		js->refused = 1;
	} else if (rep->status == JOIN_OK) {
		js->ok[node] = 1;
		if (rep->directory < DLM_MAX_NODES)
			js->directory = rep->directory;
	} else if (rep->status == JOIN_PROTOCOL_MISMATCH) {
		log_warnx("domain %s: node %u speaks DLM protocol %u.%u, we %u.%u",
		    d->logname, node, rep->proto_major, rep->proto_minor,
		    DLM_PROTO_MAJOR, DLM_PROTO_MINOR);
		js->fatal = 1;
	} else if (rep->status != JOIN_OK_NO_MAP)
		js->refused = 1;
	if (--js->outstanding == 0)
		join_decide(d);
}

static void
join_attempt(struct dlm_domain *d)
{
	struct dlmd *dd = d->dlmd;
	struct join_state *js = d->join;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	uint32_t live[DLM_MAX_NODES];
	unsigned n;

	if (!hbd_steady(dd) || !dd->netd_up || !d->registered) {
		if (js->attempt == 0 && !js->waiting_logged) {
			log_info("domain %s: waiting for %s", d->logname, !dd->hbd_up ?
			    "hbd" : !hbd_steady(dd) ? "a steady heartbeat region" :
			    "netd");
			js->waiting_logged = 1;
		}
		join_later(d, JOIN_WAIT_HBD_MS);
		return;
	}
	js->attempt++;
	js->refused = 0;
	d->joining = (uint8_t)dd->local_node;
	js->directory = DLM_NODE_NONE;
	memset(js->ok, 0, sizeof(js->ok));
	memcpy(js->live, dd->live, sizeof(js->live));
	js->live[dd->local_node] = 1;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (js->live[n])
			live[m.n_nodes++] = n;
	m.nodes = live;
	m.proto_major = DLM_PROTO_MAJOR;
	m.proto_minor = DLM_PROTO_MINOR;
	js->outstanding = 1;	/* held until every query is out */
	for (n = 0; n < DLM_MAX_NODES; n++) {
		if (!js->live[n] || n == dd->local_node)
			continue;
		js->outstanding++;
		wire_send(d, n, WIRE_QUERY_JOIN, &m, query_done, (void *)(uintptr_t)n);
	}
	if (--js->outstanding == 0)
		join_decide(d);
}

void
domain_registered(struct dlm_domain *d, int ok)
{
	if (d->state == DS_REGISTERING) {
		if (!ok) {
			join_finish(d, EADDRINUSE, "netd refused our message handlers "
			    "(is netd running? another domain with the same key?)");
			return;
		}
		d->state = DS_JOINING;
		join_attempt(d);
		return;
	}
	if (!ok && d->state == DS_JOINED)
		log_warnx("domain %s: could not register with netd again; other "
		    "nodes cannot reach us in it", d->logname);
}

static struct dlm_member *
member_get(struct dlm_domain *d, struct dlm_client *cl)
{
	struct dlm_member *mb;

	LIST_FOREACH(mb, &cl->members, client_entry)
		if (mb->dom == d && !mb->releasing)
			return mb;
	mb = xcalloc(1, sizeof(*mb));
	mb->dom = d;
	mb->client = cl;
	TAILQ_INIT(&mb->locks);
	LIST_INSERT_HEAD(&d->clients, mb, dom_entry);
	LIST_INSERT_HEAD(&cl->members, mb, client_entry);
	return mb;
}

static int
domain_name_ok(const char *name)
{
	size_t len = strlen(name);

	return len > 0 && len <= DLM_DOMAIN_MAX && strchr(name, '/') == NULL;
}

/* An empty domain on dd's list: no members, no directory, no state yet. */
struct dlm_domain *
domain_new(struct dlmd *dd, const char *name, uint32_t key)
{
	struct dlm_domain *d = xcalloc(1, sizeof(*d));
	size_t b;

	d->dlmd = dd;
	snprintf(d->name, sizeof(d->name), "%s", name);
	log_escape(d->logname, sizeof(d->logname), d->name);
	d->key = key;
	d->joining = DLM_NODE_NONE;
	d->directory = DLM_NODE_NONE;
	d->reco_master = DLM_NODE_NONE;
	LIST_INIT(&d->clients);
	LIST_INIT(&d->leave_replies);
	for (b = 0; b < DLM_HASH_BUCKETS; b++) {
		LIST_INIT(&d->res_hash[b]);
		LIST_INIT(&d->lock_hash[b]);
		LIST_INIT(&d->dir_hash[b]);
	}
	TAILQ_INIT(&d->asts);
	TAILQ_INIT(&d->lookups);
	TAILQ_INSERT_TAIL(&dd->domains, d, entry);
	return d;
}

void
domain_join(struct dlmd *dd, struct dlm_client *cl, struct ipc_conn *c,
    const Envelope *req)
{
	const char *name = req->domain->name;
	struct dlm_domain *d;
	struct dlm_member *mb;
	uint32_t key;

	if (!domain_name_ok(name)) {
		ipc_reply_status(c, req, EINVAL, "a domain name is 1 to %d bytes "
		    "without '/'", DLM_DOMAIN_MAX);
		return;
	}
	if ((d = domain_find(dd, name)) != NULL && d->state == DS_LEAVING) {
		ipc_reply_status(c, req, EBUSY, "domain %s is being left; try again",
		    name);
		return;
	}
	if (d == NULL) {
		key = crc32_le(0, name, strlen(name));
		if ((d = domain_find_key(dd, key)) != NULL) {
			ipc_reply_status(c, req, EEXIST, "domain %s has the same key "
			    "(0x%08x) as domain %s", name, key, d->name);
			return;
		}
		d = domain_new(dd, name, key);
		d->join = xcalloc(1, sizeof(*d->join));
		d->join->started_ms = now_ms();
		if ((d->join->timer = evtimer_new(dd->base, join_timer, d)) == NULL)
			fatalx("out of memory");
		d->state = DS_REGISTERING;
		log_info("domain %s: joining (key 0x%08x)", d->logname, key);
	}
	mb = member_get(d, cl);
	mb->refs++;
	if (req->domain->guards_disk)
		mb->guards_disk = 1;
	if (d->state == DS_JOINED) {
		mb->join_conn = c;
		mb->join_req = xcalloc(1, sizeof(*mb->join_req));
		envelope__init(mb->join_req);
		mb->join_req->type = req->type;
		mb->join_req->id = req->id;
		reply_join(mb, 0, NULL);
		return;
	}
	if (mb->join_req == NULL) {
		mb->join_conn = c;
		mb->join_req = xcalloc(1, sizeof(*mb->join_req));
		envelope__init(mb->join_req);
		mb->join_req->type = req->type;
		mb->join_req->id = req->id;
	}
	if (d->state == DS_REGISTERING && !d->registered && d->pending_regs == 0)
		wire_domain_register(d, 1);
}

/* ---------------------------------------------------------- join, member side */

static void
h_query_join(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	uint8_t theirs[DLM_MAX_NODES] = { 0 };
	size_t i;
	unsigned n;

	rep->proto_major = DLM_PROTO_MAJOR;
	rep->proto_minor = DLM_PROTO_MINOR;
	if (d->state != DS_JOINED) {
		/* In the middle of our own attempt: both back off. Between
		 * attempts (or leaving), as if absent: the other one won. */
		rep->status = d->joining == d->dlmd->local_node ? JOIN_DISALLOW :
		    JOIN_OK_NO_MAP;
		return;
	}
	if (m->proto_major != DLM_PROTO_MAJOR) {
		rep->status = JOIN_PROTOCOL_MISMATCH;
		return;
	}
	for (i = 0; i < m->n_nodes; i++)
		if (m->nodes[i] < DLM_MAX_NODES)
			theirs[m->nodes[i]] = 1;
	rep->status = JOIN_DISALLOW;
	if (from >= DLM_MAX_NODES || !d->dlmd->live[from] || d->recovering ||
	    domain_is_member(d, from) ||
	    (d->joining != DLM_NODE_NONE && d->joining != from))
		return;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->members[n] && !theirs[n])
			return;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->dead[n])
			return;
	d->joining = (uint8_t)from;
	rep->status = JOIN_OK;
	rep->directory = d->directory;
}

static void
h_assert_joined(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	(void)m;
	if (d->joining == from)
		d->joining = DLM_NODE_NONE;
	if (from < DLM_MAX_NODES && !d->members[from]) {
		d->members[from] = 1;
		log_info("domain %s: node %u joins", d->logname, from);
		domain_publish(d, DLMD__DOMAIN_EVENT_KIND__NODE_JOINED, from);
	}
	rep->status = WS_OK;
}

static void
h_cancel_join(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	(void)m;
	if (d->joining == from)
		d->joining = DLM_NODE_NONE;
	rep->status = WS_OK;
}

/* ---------------------------------------------------------- leave */

struct leave_state {
	unsigned	outstanding;
	uint8_t		new_directory;
};

static void	leave_step(struct dlm_domain *);

static void
leave_done(struct dlm_domain *d)
{
	struct dlmd *dd = d->dlmd;

	log_info("domain %s: left", d->logname);
	wire_domain_register(d, 0);
	d->state = DS_GONE;
	/* before the leaver hears it is out: it may stop its heartbeat next */
	hbd_guard_update(dd);
	domain_free(d);
}

static void
exit_sent(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	(void)err;
	(void)rep;
	(void)arg;
	if (d != NULL && d->state == DS_LEAVING && d->leave != NULL &&
	    --d->leave->outstanding == 0) {
		free(d->leave);
		d->leave = NULL;
		leave_done(d);
	}
}

static void
leave_exit(struct dlm_domain *d)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	unsigned n;

	m.directory = d->directory;
	d->leave->outstanding = 1;
	for (n = 0; n < DLM_MAX_NODES; n++) {
		if (!d->members[n] || n == d->dlmd->local_node)
			continue;
		d->leave->outstanding++;
		wire_send(d, n, WIRE_EXIT_DOMAIN, &m, exit_sent, NULL);
	}
	exit_sent(d, 0, NULL, NULL);
}

static void
step_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	(void)err;
	(void)rep;
	(void)arg;
	if (d != NULL && d->state == DS_LEAVING && d->leave != NULL &&
	    --d->leave->outstanding == 0)
		leave_step(d);
}

/*
 * One pass: hand over every resource we master that other nodes hold
 * locks on; when none is left, hand over the directory; then say goodbye.
 */
static void
leave_step(struct dlm_domain *d)
{
	struct leave_state *ls = d->leave;

	if (d->recovering) {
		/* A death meanwhile: finish recovery first, it re-runs us. */
		return;
	}
	ls->outstanding = 1;
	migrate_all(d, &ls->outstanding, step_done);
	if (--ls->outstanding > 0)
		return;
	if (dir_handoff(d, &ls->outstanding, step_done)) {
		if (--ls->outstanding > 0)
			return;
	}
	leave_exit(d);
}

static void
domain_start_leave(struct dlm_domain *d)
{
	unsigned others = 0, n;

	d->state = DS_LEAVING;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->members[n] && n != d->dlmd->local_node)
			others++;
	log_info("domain %s: leaving (%u other member%s)", d->logname, others,
	    others == 1 ? "" : "s");
	d->leave = xcalloc(1, sizeof(*d->leave));
	leave_step(d);
}

void
domain_leave_resume(struct dlm_domain *d)
{
	if (d->state == DS_LEAVING && d->leave != NULL && d->leave->outstanding == 0)
		leave_step(d);
}

static void
h_exit_domain(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;
	struct dlm_dirent *e, *enext;
	size_t b;

	rep->status = WS_OK;
	if (from >= DLM_MAX_NODES || !d->members[from])
		return;
	d->members[from] = 0;
	if (d->joining == from)
		d->joining = DLM_NODE_NONE;
	if (m->directory < DLM_MAX_NODES && d->members[m->directory])
		d->directory = (uint8_t)m->directory;
	else if (d->directory == from && domain_lowest_member(d) >= 0)
		d->directory = (uint8_t)domain_lowest_member(d);	/* whom it handed it to */
	for (b = 0; b < DLM_HASH_BUCKETS; b++) {
		LIST_FOREACH(r, &d->res_hash[b], hash_entry)
			if (r->master == from)
				r->master = DLM_NODE_NONE;
		for (e = LIST_FIRST(&d->dir_hash[b]); e != NULL; e = enext) {
			enext = LIST_NEXT(e, entry);
			if (e->master == from)
				dir_drop(d, e->name, e->namelen);
		}
	}
	log_info("domain %s: node %u leaves", d->logname, from);
	domain_publish(d, DLMD__DOMAIN_EVENT_KIND__NODE_LEFT, from);
	domain_retry(d);
}

/* ---------------------------------------------------------- node death */

void
domain_node_down(struct dlm_domain *d, unsigned node)
{
	if (d->joining == node)
		d->joining = DLM_NODE_NONE;
	if (!domain_is_member(d, node) || node == d->dlmd->local_node)
		return;
	log_warnx("domain %s: node %u died; recovering its locks", d->logname, node);
	/* The filesystem hears of the death before recovery starts. */
	domain_publish(d, DLMD__DOMAIN_EVENT_KIND__NODE_DOWN, node);
	d->members[node] = 0;
	d->dead[node] = 1;
	reco_node_down(d, node);
}

static const struct wire_handler domain_handlers[] = {
	{ WIRE_QUERY_JOIN, h_query_join },
	{ WIRE_ASSERT_JOINED, h_assert_joined },
	{ WIRE_CANCEL_JOIN, h_cancel_join },
	{ WIRE_EXIT_DOMAIN, h_exit_domain },
};

void
domain_handlers_init(void)
{
	wire_register_handlers(domain_handlers, nitems(domain_handlers));
}
