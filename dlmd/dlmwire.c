/*
 * Messages between the dlmd of each node, through netd.sock: every
 * domain registers one netd handler per message type under its key;
 * each message and each reply is a dlmwire.Msg. A reply comes back
 * through a callback that gets the domain again by key, so that a
 * domain that went away meanwhile is seen as NULL rather than freed
 * memory. A message to this node is handled here directly, a turn of the
 * event loop later, as if it had gone round.
 *
 * Errors given to callbacks: netd's transport errno (ENOTCONN no link,
 * ETIMEDOUT the link did not come back in time, EHOSTDOWN the node died
 * with it in flight, ENOPROTOOPT not in that domain), ECONNRESET when
 * netd itself went away, EPROTO for a reply that does not decode.
 *
 * A message to a live member of the domain is delivered or that node
 * dies, as over o2net: while its dlmd or netd, or ours, restarts, or its
 * link is down, the message is sent again every WIRE_RESEND_MS until the
 * node takes it, leaves the domain or is declared dead, and only that
 * outcome reaches the callback. Handlers are idempotent (a request sent
 * again after a lost reply finds what the first one did), so a resend is
 * harmless; a lost one would leave a lock waiting forever for its AST.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "netdanswer.h"
#include "util.h"

#define NETD_RETRY_MS	500
#define WIRE_MAX_TYPES	32
#define WIRE_RESEND_MS	100
#define UNREACHABLE_LOG_MS	10000

static struct wire_handler handlers[WIRE_MAX_TYPES];
static size_t nhandlers;

#define DLMWIRE_NAME(name, num)	{ WIRE_##name, #name },
static const struct {
	uint32_t	 type;
	const char	*name;
} type_names[] = { DLMWIRE_TYPES(DLMWIRE_NAME) };
#undef DLMWIRE_NAME

const char *
wire_type_name(uint32_t type)
{
	size_t i;

	for (i = 0; i < nitems(type_names); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return "?";
}

void
wire_register_handlers(const struct wire_handler *h, size_t n)
{
	if (nhandlers + n > WIRE_MAX_TYPES)
		fatalx("too many wire handlers");
	memcpy(handlers + nhandlers, h, n * sizeof(*h));
	nhandlers += n;
}

const struct wire_handler *
wire_handler_find(uint32_t type)
{
	size_t i;

	for (i = 0; i < nhandlers; i++)
		if (handlers[i].type == type)
			return &handlers[i];
	return NULL;
}

/* ---------------------------------------------------------- sending */

struct wire_call {
	struct dlmd	*dlmd;
	uint32_t	 key;
	uint32_t	 type;
	unsigned	 node;
	wire_reply_fn	*fn;
	void		*arg;
	int		 err;		/* a failure before netd took it */
	uint8_t		*payload;	/* packed, kept for resending */
	size_t		 len;
};

static void	call_send(struct wire_call *);

/* Failures that say nothing about the message, only about the way. */
static int
transient(int err)
{
	return err == ENOTCONN || err == ECONNRESET || err == ETIMEDOUT ||
	    err == ENOPROTOOPT;
}

/*
 * One line per node per UNREACHABLE_LOG_MS while messages to it fail,
 * naming the resource of the first: resent here, or (for a failure that
 * may be the message's own) ended for the caller, whose lock waits.
 */
static void
note_unreachable(struct dlm_domain *d, const struct wire_call *wc, int err,
    int resent)
{
	unsigned node = wc->node;
	uint64_t now = now_ms();
	Dlmwire__Msg *m;

	if (d->unreachable_at[node] != 0 &&
	    now - d->unreachable_at[node] < UNREACHABLE_LOG_MS) {
		d->unreachable_more[node]++;
		return;
	}
	m = dlmwire__msg__unpack(NULL, wc->len, wc->payload);
	log_warnx("domain %s: %s of %s to node %u failed: %s; it waits, %s "
	    "(%u more such failures since the last line)", d->logname,
	    wire_type_name(wc->type),
	    m != NULL && m->name.len > 0 ? name_printable(m->name.data, m->name.len) : "-",
	    node, strerror(err), resent ? "sent again while the node is a live member" :
	    "until the node is linked again or recovered", d->unreachable_more[node]);
	if (m != NULL)
		dlmwire__msg__free_unpacked(m, NULL);
	d->unreachable_at[node] = now;
	d->unreachable_more[node] = 0;
}

static void
resend(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	call_send(arg);
}

/* 1 when the call goes out again instead of ending with err. */
static int
resend_later(struct wire_call *wc, struct dlm_domain *d, int err)
{
	struct timeval tv = { 0, WIRE_RESEND_MS * 1000 };

	if (d == NULL || !transient(err) || wc->node == wc->dlmd->local_node ||
	    !domain_is_member(d, wc->node) || !wc->dlmd->live[wc->node])
		return 0;
	note_unreachable(d, wc, err, 1);
	wc->err = 0;
	if (event_base_once(wc->dlmd->base, -1, EV_TIMEOUT, resend, wc, &tv) == -1)
		fatalx("event_base_once");
	return 1;
}

static void
call_done(struct wire_call *wc, int err, const uint8_t *payload, size_t len)
{
	struct dlm_domain *d = domain_find_key(wc->dlmd, wc->key);
	Dlmwire__Msg *rep = NULL;

	if (resend_later(wc, d, err))
		return;
	if (err == 0 && (rep = dlmwire__msg__unpack(NULL, len, payload)) == NULL) {
		log_warnx("%s to node %u: a reply that does not decode",
		    wire_type_name(wc->type), wc->node);
		err = EPROTO;
	}
	if (d != NULL && err == 0)
		d->unreachable_at[wc->node] = 0;
	else if (d != NULL && wc->node != wc->dlmd->local_node)
		note_unreachable(d, wc, err, 0);
	if (wc->fn != NULL)
		wc->fn(d, err, rep, wc->arg);
	if (rep != NULL)
		dlmwire__msg__free_unpacked(rep, NULL);
	free(wc->payload);
	free(wc);
}

static void
on_reply(const Envelope *env, void *arg)
{
	struct wire_call *wc = arg;
	const Netd__NetResult *nr;

	if (env == NULL) {
		call_done(wc, ECONNRESET, NULL, 0);
		return;
	}
	if (env->status != 0) {
		call_done(wc, env->status, NULL, 0);
		return;
	}
	if (env->payload_case != ENVELOPE__PAYLOAD_NET_RESULT) {
		call_done(wc, EPROTO, NULL, 0);
		return;
	}
	nr = env->net_result;
	if (nr->status != 0) {
		call_done(wc, nr->status > 0 ? nr->status : -nr->status, NULL, 0);
		return;
	}
	call_done(wc, 0, nr->payload.data, nr->payload.len);
}

size_t
wire_handle(struct dlm_domain *d, uint32_t type, unsigned from,
    const uint8_t *payload, size_t len, uint8_t **out, int *status)
{
	const struct wire_handler *h = wire_handler_find(type);
	Dlmwire__Msg *m, rep = DLMWIRE__MSG__INIT;
	size_t n;

	*out = NULL;
	if (h == NULL) {
		*status = ENOPROTOOPT;
		return 0;
	}
	if ((m = dlmwire__msg__unpack(NULL, len, payload)) == NULL) {
		log_warnx("%s from node %u in domain %s: does not decode; refused",
		    wire_type_name(type), from, d->logname);
		*status = EBADMSG;
		return 0;
	}
	h->fn(d, from, m, &rep);
	dlmwire__msg__free_unpacked(m, NULL);
	n = dlmwire__msg__get_packed_size(&rep);
	*out = xmalloc(n ? n : 1);
	dlmwire__msg__pack(&rep, *out);
	/* handlers may hand out resources they allocated for the reply */
	wire_free_resources(rep.resources, rep.n_resources);
	*status = 0;
	return n;
}

static void
deliver_self(evutil_socket_t fd, short ev, void *arg)
{
	struct wire_call *wc = arg;
	struct dlm_domain *d = domain_find_key(wc->dlmd, wc->key);
	uint8_t *out;
	size_t n;
	int status;

	(void)fd;
	(void)ev;
	if (wc->err != 0 || d == NULL) {
		call_done(wc, wc->err ? wc->err : ENOPROTOOPT, NULL, 0);
		return;
	}
	n = wire_handle(d, wc->type, wc->dlmd->local_node, wc->payload, wc->len,
	    &out, &status);
	call_done(wc, status, out, n);
	free(out);
}

static void
defer(struct wire_call *wc)
{
	struct timeval now = { 0, 0 };

	if (event_base_once(wc->dlmd->base, -1, EV_TIMEOUT, deliver_self, wc, &now) == -1)
		fatalx("event_base_once");
}

/* Hand the call to netd, or to ourselves a turn of the loop later. */
static void
call_send(struct wire_call *wc)
{
	struct dlmd *dd = wc->dlmd;
	Envelope req = ENVELOPE__INIT;
	Netd__NetSend ns = NETD__NET_SEND__INIT;

	if (wc->node == dd->local_node) {
		defer(wc);
		return;
	}
	if (dd->netd == NULL || !dd->netd_up) {
		wc->err = ENOTCONN;
		defer(wc);
		return;
	}
	ns.node = wc->node;
	ns.type = wc->type;
	ns.key = wc->key;
	ns.payload.data = wc->payload;
	ns.payload.len = wc->len;
	req.type = MSG_TYPE__MSG_NETD_SEND;
	req.payload_case = ENVELOPE__PAYLOAD_NET_SEND;
	req.net_send = &ns;
	if (ipc_request(dd->netd, &req, on_reply, wc) == -1) {
		wc->err = errno ? errno : ECONNRESET;
		defer(wc);
	}
}

/*
 * Send `m` to `node` in domain d; `fn` (may be NULL) gets the outcome,
 * failures included, exactly once, never before wire_send returns.
 */
void
wire_send(struct dlm_domain *d, unsigned node, enum wire_type type,
    const Dlmwire__Msg *m, wire_reply_fn *fn, void *arg)
{
	struct wire_call *wc = xcalloc(1, sizeof(*wc));
	Dlmwire__Msg copy = *m;

	copy.node = d->dlmd->local_node;
	wc->len = dlmwire__msg__get_packed_size(&copy);
	wc->payload = xmalloc(wc->len ? wc->len : 1);
	dlmwire__msg__pack(&copy, wc->payload);
	wc->dlmd = d->dlmd;
	wc->key = d->key;
	wc->type = type;
	wc->node = node;
	wc->fn = fn;
	wc->arg = arg;
	call_send(wc);
}

/* ---------------------------------------------------------- receiving */

/* Another node's message for one of our domains: handled, then answered. */
static void
on_net_message(struct ipc_conn *c, const Envelope *ev)
{
	const Netd__NetMessage *nm = ev->net_message;
	struct dlm_domain *d = domain_find_key(ipc_conn_arg(c), nm->key);
	uint8_t *out;
	size_t n;
	int status;

	if (d == NULL || d->state == DS_GONE) {
		netd_answer(c, nm->handle, ENOPROTOOPT, NULL, 0);
		return;
	}
	n = wire_handle(d, nm->type, nm->from, nm->payload.data, nm->payload.len,
	    &out, &status);
	netd_answer(c, nm->handle, status, out, n);
	free(out);
}

/* netd's other events (links, quorum) are not dlmd's: deaths come from hbd. */
static const struct ipc_handler netd_events[] = {
	{ MSG_TYPE__MSG_NETD_MESSAGE, ENVELOPE__PAYLOAD_NET_MESSAGE, on_net_message },
};

static void
netd_link_event(struct ipc_conn *c, const Envelope *ev)
{
	ipc_event_dispatch(c, ev, netd_events, nitems(netd_events), "netd");
}

/* ---------------------------------------------------------- handlers */

struct reg_call {
	struct dlmd	*dlmd;
	uint32_t	 key;
	int		 reg;
};

static void
on_registered(const Envelope *rep, void *arg)
{
	struct reg_call *rc = arg;
	struct dlm_domain *d = domain_find_key(rc->dlmd, rc->key);

	if (rc->reg && d != NULL && d->pending_regs > 0) {
		d->pending_regs--;
		if (rep == NULL || rep->status != 0) {
			log_warnx("domain %s: netd refused our handler (key 0x%08x): %s",
			    d->logname, d->key, rep == NULL ? "netd went away" :
			    rep->error[0] ? rep->error : strerror(rep->status));
			domain_registered(d, 0);
		} else if (d->pending_regs == 0)
			domain_registered(d, 1);
	}
	free(rc);
}

/* (Un)register every message type of domain d with netd. */
void
wire_domain_register(struct dlm_domain *d, int reg)
{
	struct dlmd *dd = d->dlmd;
	Envelope req = ENVELOPE__INIT;
	Netd__NetRegister nr = NETD__NET_REGISTER__INIT;
	struct reg_call *rc;
	size_t i;

	/* Without netd, registering waits for it (on_status). */
	if (dd->netd == NULL || !dd->netd_up)
		return;
	if (reg)
		d->pending_regs = (unsigned)nhandlers;
	for (i = 0; i < nhandlers; i++) {
		nr.type = handlers[i].type;
		nr.key = d->key;
		req.type = reg ? MSG_TYPE__MSG_NETD_REGISTER : MSG_TYPE__MSG_NETD_UNREGISTER;
		req.payload_case = ENVELOPE__PAYLOAD_NET_REGISTER;
		req.net_register = &nr;
		rc = xcalloc(1, sizeof(*rc));
		rc->dlmd = dd;
		rc->key = d->key;
		rc->reg = reg;
		if (ipc_request(dd->netd, &req, on_registered, rc) == -1)
			free(rc);
	}
	d->registered = reg;
}

/* ---------------------------------------------------------- connection */

/*
 * Without netd this node cannot talk to the others: every domain's
 * handlers went with the connection, and its peers see ENOPROTOOPT. We
 * reconnect and register again; a domain meanwhile has lost nothing
 * that the other nodes do not also see as lost messages.
 */
static void
netd_link_down(struct ipc_conn *c, void *arg)
{
	struct dlmd *dd = arg;
	struct dlm_domain *d;

	(void)c;
	dd->netd = NULL;
	dd->netd_up = 0;
	TAILQ_FOREACH(d, &dd->domains, entry)
		d->registered = 0;
}

/* netd tells us who we are: the node its links speak for. */
static void
on_status(const Envelope *rep, void *arg)
{
	struct dlmd *dd = arg;
	struct dlm_domain *d;

	if (rep == NULL)
		return;
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_NET_STATUS ||
	    rep->net_status->local_node >= DLM_MAX_NODES) {
		log_warnx("netd did not tell us our node number; reconnecting");
		ipc_conn_close(dd->netd);
		return;
	}
	if (dd->local_node != rep->net_status->local_node) {
		if (dd->local_node < DLM_MAX_NODES)
			fatalx("netd now speaks for node %u, we were node %u",
			    rep->net_status->local_node, dd->local_node);
		dd->local_node = rep->net_status->local_node;
		log_info("this is node %u of cluster %s", dd->local_node,
		    rep->net_status->cluster);
	}
	dd->netd_up = 1;
	TAILQ_FOREACH(d, &dd->domains, entry)
		if (d->state == DS_JOINED || d->state == DS_LEAVING)
			wire_domain_register(d, 1);
		else if (d->state == DS_REGISTERING && d->pending_regs == 0)
			wire_domain_register(d, 1);
}

static void
netd_link_up(struct ipc_conn *c, void *arg)
{
	struct dlmd *dd = arg;
	Envelope req = ENVELOPE__INIT;

	dd->netd = c;
	req.type = MSG_TYPE__MSG_NETD_STATUS;
	if (ipc_request(c, &req, on_status, dd) == -1)
		ipc_conn_close(c);
}

void
netd_link_start(struct dlmd *dd)
{
	ipc_redial(dd->base, dd->rundir, "netd", NETD_RETRY_MS, netd_link_event, netd_link_up,
	    netd_link_down, dd);
}

void
dlmd_handlers_init(void)
{
	ast_hooks_init();
	lock_handlers_init();
	remote_handlers_init();
	domain_handlers_init();
	migrate_handlers_init();
	reco_handlers_init();
	lvb_handlers_init();
}
