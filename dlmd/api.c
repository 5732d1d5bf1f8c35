/*
 * dlmd.sock: clients join domains and take locks; completions (ASTs),
 * BASTs and domain events are pushed on the same connection. A
 * connection that closes leaves its domains and releases its locks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

static struct dlm_client *
client_of(struct ipc_conn *c)
{
	struct dlm_client *cl = ipc_conn_data(c);

	if (cl == NULL) {
		cl = xcalloc(1, sizeof(*cl));
		cl->conn = c;
		LIST_INIT(&cl->members);
		ipc_conn_set_data(c, cl);
	}
	return cl;
}

/* The client's live membership of the named domain, or NULL. */
static struct dlm_member *
member_of(struct ipc_conn *c, const char *domain)
{
	struct dlm_client *cl = client_of(c);
	struct dlm_member *mb;

	LIST_FOREACH(mb, &cl->members, client_entry)
		if (!mb->releasing && strcmp(mb->dom->name, domain) == 0 &&
		    mb->dom->state == DS_JOINED)
			return mb;
	return NULL;
}

void
api_send_event(struct ipc_conn *c, Envelope *ev)
{
	if (c != NULL)
		ipc_send(c, ev);
}

static void
handle_join(struct ipc_conn *c, const Envelope *req)
{
	struct dlmd *dd = ipc_conn_arg(c);

	domain_join(dd, client_of(c), c, req);
}

static void
handle_leave(struct ipc_conn *c, const Envelope *req)
{
	struct dlm_client *cl = client_of(c);
	struct dlm_member *mb;

	LIST_FOREACH(mb, &cl->members, client_entry)
		if (!mb->releasing && strcmp(mb->dom->name, req->domain->name) == 0)
			break;
	if (mb == NULL) {
		ipc_reply_status(c, req, ENOENT, "not in domain %s", req->domain->name);
		return;
	}
	domain_leave(mb, c, req);
}

static void
handle_lock_request(struct ipc_conn *c, const Envelope *req)
{
	const Dlmd__LockRequest *rq = req->lock_request;
	Envelope rep = ENVELOPE__INIT;
	Dlmd__LockAccepted la = DLMD__LOCK_ACCEPTED__INIT;
	struct dlm_member *mb;
	const char *why = NULL;
	int err;

	if ((mb = member_of(c, rq->domain)) == NULL) {
		ipc_reply_status(c, req, ENOENT, "not joined to domain %s", rq->domain);
		return;
	}
	if ((err = lock_request(mb, rq, &la.lockid, &why)) != 0) {
		ipc_reply_status(c, req, err, "%s", why);
		return;
	}
	rep.payload_case = ENVELOPE__PAYLOAD_LOCK_ACCEPTED;
	rep.lock_accepted = &la;
	ipc_reply(c, req, &rep);
}

static void
handle_unlock_request(struct ipc_conn *c, const Envelope *req)
{
	struct dlm_member *mb;
	const char *why = NULL;
	int err;

	if ((mb = member_of(c, req->unlock_request->domain)) == NULL) {
		ipc_reply_status(c, req, ENOENT, "not joined to domain %s",
		    req->unlock_request->domain);
		return;
	}
	if ((err = unlock_request(mb, c, req, &why)) != 0)
		ipc_reply_status(c, req, err, "%s", why);
}

static void
handle_status(struct ipc_conn *c, const Envelope *req)
{
	struct dlmd *dd = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Dlmd__DlmStatus st = DLMD__DLM_STATUS__INIT;
	Dlmd__DomainInfo *infos, **ptrs;
	uint32_t (*members)[DLM_MAX_NODES], live[DLM_MAX_NODES];
	struct dlm_domain *d;
	size_t n = 0, i;

	TAILQ_FOREACH(d, &dd->domains, entry)
		n++;
	infos = xcalloc(n + 1, sizeof(*infos));
	ptrs = xcalloc(n + 1, sizeof(*ptrs));
	members = xcalloc(n + 1, sizeof(*members));
	i = 0;
	TAILQ_FOREACH(d, &dd->domains, entry) {
		dlmd__domain_info__init(&infos[i]);
		domain_info(d, &infos[i], members[i]);
		ptrs[i] = &infos[i];
		i++;
	}
	st.local_node = dd->local_node;
	st.netd_connected = dd->netd_up;
	st.hbd_connected = dd->hbd_up;
	st.domains = ptrs;
	st.n_domains = n;
	st.live_nodes = live;
	for (i = 0; i < DLM_MAX_NODES; i++)
		if (dd->live[i] || i == dd->local_node)
			live[st.n_live_nodes++] = (uint32_t)i;
	rep.payload_case = ENVELOPE__PAYLOAD_DLM_STATUS;
	rep.dlm_status = &st;
	ipc_reply(c, req, &rep);
	free(infos);
	free(ptrs);
	free(members);
}

static Dlmd__LockInfo *
lock_info(const struct dlm_lock *lk)
{
	Dlmd__LockInfo *li = xmalloc(sizeof(*li));

	dlmd__lock_info__init(li);
	li->lockid = lk->cookie;
	li->node = lk->node;
	li->mode = lk->mode == DLM_IV ? DLM_NL : lk->mode;
	li->convert_mode = lk->convert_mode;
	li->queue = lk->queue == Q_NONE ? Q_GRANTED : lk->queue;
	li->bast_pending = lk->highest_blocked != DLM_IV;
	return li;
}

static Dlmd__ResourceInfo *
resource_info(struct dlm_res *r, int self)
{
	Dlmd__ResourceInfo *ri = xmalloc(sizeof(*ri));
	struct dlm_lock *lk;
	size_t n = 0;
	int q;

	dlmd__resource_info__init(ri);
	ri->name.data = r->name;
	ri->name.len = r->namelen;
	ri->master = r->master;
	ri->recovering = r->recovering;
	for (q = 0; q < 3; q++)
		TAILQ_FOREACH(lk, &r->queue[q], q_entry)
			n++;
	TAILQ_FOREACH(lk, &r->local, local_entry)
		n++;
	ri->locks = xcalloc(n + 1, sizeof(*ri->locks));
	if (r->master == self) {
		for (q = 0; q < 3; q++)
			TAILQ_FOREACH(lk, &r->queue[q], q_entry)
				ri->locks[ri->n_locks++] = lock_info(lk);
		ri->lvb.data = r->lvb;
		ri->lvb.len = DLM_LVB_LEN;
		ri->lvb_valid = r->lvb_valid;
		ri->lvb_version = r->lvb_version;
	} else {
		/* Not the master: our own locks, as we last heard of them. */
		TAILQ_FOREACH(lk, &r->local, local_entry) {
			ri->locks[ri->n_locks] = lock_info(lk);
			if (lk->op == OP_NEW)
				ri->locks[ri->n_locks]->queue = Q_BLOCKED;
			else if (lk->op == OP_CONVERT)
				ri->locks[ri->n_locks]->queue = Q_CONVERTING;
			ri->n_locks++;
		}
		if ((lk = TAILQ_FIRST(&r->local)) != NULL && lk->mode >= DLM_PR) {
			ri->lvb.data = lk->lvb;
			ri->lvb.len = DLM_LVB_LEN;
			ri->lvb_valid = lk->lvb_valid;
			ri->lvb_version = lk->lvb_version;
		}
	}
	return ri;
}

static void
handle_dump(struct ipc_conn *c, const Envelope *req)
{
	struct dlmd *dd = ipc_conn_arg(c);
	struct dlm_domain *d = domain_find(dd, req->domain->name);
	Envelope rep = ENVELOPE__INIT;
	Dlmd__DomainDump dump = DLMD__DOMAIN_DUMP__INIT;
	Dlmd__DomainInfo di = DLMD__DOMAIN_INFO__INIT;
	uint32_t members[DLM_MAX_NODES], dead[DLM_MAX_NODES];
	struct dlm_res *r;
	size_t b, i;
	unsigned n;

	if (d == NULL) {
		ipc_reply_status(c, req, ENOENT, "no domain %s on this node",
		    req->domain->name);
		return;
	}
	domain_info(d, &di, members);
	dump.domain = &di;
	dump.resources = xcalloc(d->nres + 1, sizeof(*dump.resources));
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		LIST_FOREACH(r, &d->res_hash[b], hash_entry)
			dump.resources[dump.n_resources++] = resource_info(r, dd->local_node);
	dump.recovery_pending = dead;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->dead[n])
			dead[dump.n_recovery_pending++] = n;
	dump.recovery_master = d->reco_master;
	dump.directory_entries = d->ndirents;
	rep.payload_case = ENVELOPE__PAYLOAD_DOMAIN_DUMP;
	rep.domain_dump = &dump;
	ipc_reply(c, req, &rep);
	for (i = 0; i < dump.n_resources; i++) {
		for (b = 0; b < dump.resources[i]->n_locks; b++)
			free(dump.resources[i]->locks[b]);
		free(dump.resources[i]->locks);
		free(dump.resources[i]);
	}
	free(dump.resources);
}

/*
 * A filesystem that dies holding locks may have changed what they guard
 * in its journal only: handing them on before another node replays that
 * journal would let it read stale blocks. We go as a node's lock manager
 * dies: hbd, which guards our locks, restarts the heartbeat, and the
 * others recover the node, journal first.
 */
static int
died_holding_disk_locks(struct dlmd *dd, struct dlm_client *cl, struct ipc_conn *c)
{
	struct dlm_member *mb;

	LIST_FOREACH(mb, &cl->members, client_entry) {
		if (!mb->guards_disk || mb->releasing || TAILQ_EMPTY(&mb->locks) ||
		    mb->dom->state == DS_GONE)
			continue;
		log_warnx("domain %s: pid %d went away holding locks that guard its "
		    "journal; ending this node's incarnation (dlmd exits%s) so that "
		    "another node replays that journal before anyone gets them",
		    mb->dom->name, (int)ipc_conn_pid(c), dd->guarded ? ", hbd restarts "
		    "the heartbeat" : "; hbd is away: a restarted one finds dlmd gone and restarts "
		    "the heartbeat");
		dd->exit_status = DLMD_EXIT_CLIENT_DIED;
		event_base_loopbreak(dd->base);
		return 1;
	}
	return 0;
}

/* A client gone: as if it left each of its domains. */
static void
client_closed(struct ipc_conn *c)
{
	struct dlm_client *cl = ipc_conn_data(c);
	struct dlm_member *mb;

	if (cl == NULL || died_holding_disk_locks(ipc_conn_arg(c), cl, c))
		return;
	while ((mb = LIST_FIRST(&cl->members)) != NULL) {
		LIST_REMOVE(mb, client_entry);
		mb->client = NULL;
		mb->join_conn = NULL;
		mb->refs = 1;
		domain_leave(mb, NULL, NULL);
	}
	free(cl);
}

static const struct ipc_handler dlmd_handlers[] = {
	{ MSG_TYPE__MSG_DLMD_JOIN, ENVELOPE__PAYLOAD_DOMAIN, handle_join },
	{ MSG_TYPE__MSG_DLMD_LEAVE, ENVELOPE__PAYLOAD_DOMAIN, handle_leave },
	{ MSG_TYPE__MSG_DLMD_LOCK, ENVELOPE__PAYLOAD_LOCK_REQUEST, handle_lock_request },
	{ MSG_TYPE__MSG_DLMD_UNLOCK, ENVELOPE__PAYLOAD_UNLOCK_REQUEST, handle_unlock_request },
	{ MSG_TYPE__MSG_DLMD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, handle_status },
	{ MSG_TYPE__MSG_DLMD_DUMP, ENVELOPE__PAYLOAD_DOMAIN, handle_dump },
};

void
api_start(struct dlmd *dd)
{
	char *path;

	xasprintf(&path, "%s/dlmd.sock", dd->rundir);
	dd->ipc = ipc_server_listen(dd->base, path, "dlmd", dlmd_handlers,
	    nitems(dlmd_handlers), dd);
	if (dd->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(dd->ipc, client_closed);
	free(path);
}
