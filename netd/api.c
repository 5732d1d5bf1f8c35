/*
 * netd.sock: the local API. A client registers (type, key) handlers and
 * receives the messages other nodes send to them as MSG_NETD_MESSAGE
 * events, answering each with a one-way MSG_NETD_REPLY (we log one we
 * cannot take, since nobody waits for our word on it); it sends messages to one
 * node (MSG_NETD_SEND) or to every node with a live link
 * (MSG_NETD_SEND_ALL) and gets the remote handler's status back as the
 * reply, as late as it comes, with any number in flight. Handlers,
 * requests and unanswered messages belong to the connection: when it
 * closes, its handlers go, answers to its requests are dropped, and the
 * messages it had not answered are answered "handler gone".
 */
#include <sys/queue.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "util.h"

struct handler {
	LIST_ENTRY(handler)	 entry;
	uint32_t		 type, key, max_len;
	struct api_client	*cl;
};

struct api_client {
	struct ipc_conn		*conn;
	TAILQ_HEAD(, rpc)	 rpcs;
	TAILQ_HEAD(, inbound)	 inbound;
	TAILQ_HEAD(, rpc_all)	 alls;
};

static struct api_client *
client_of(struct ipc_conn *c)
{
	struct api_client *cl = ipc_conn_data(c);

	if (cl == NULL) {
		cl = xcalloc(1, sizeof(*cl));
		cl->conn = c;
		TAILQ_INIT(&cl->rpcs);
		TAILQ_INIT(&cl->inbound);
		TAILQ_INIT(&cl->alls);
		ipc_conn_set_data(c, cl);
	}
	return cl;
}

static struct handler *
handler_find(struct netd *nd, uint32_t type, uint32_t key)
{
	struct handler *h;

	LIST_FOREACH(h, &nd->handlers, entry)
		if (h->key == key && h->type == type)
			return h;
	return NULL;
}

static void
handle_register(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	const Netd__NetRegister *r = req->net_register;
	struct handler *h;

	if (r->type == 0 || r->max_len > NETD_MAX_PAYLOAD) {
		ipc_reply_status(c, req, EINVAL, "type must be nonzero and max_len "
		    "at most %u", NETD_MAX_PAYLOAD);
		return;
	}
	if (handler_find(nd, r->type, r->key) != NULL) {
		ipc_reply_status(c, req, EEXIST, "a handler for type %u key 0x%08x "
		    "exists", r->type, r->key);
		return;
	}
	h = xcalloc(1, sizeof(*h));
	h->type = r->type;
	h->key = r->key;
	h->max_len = r->max_len ? r->max_len : NETD_MAX_PAYLOAD;
	h->cl = client_of(c);
	LIST_INSERT_HEAD(&nd->handlers, h, entry);
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_unregister(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	struct handler *h = handler_find(nd, req->net_register->type,
	    req->net_register->key);

	if (h == NULL || h->cl != client_of(c)) {
		ipc_reply_status(c, req, ENOENT, "no handler of ours for type %u "
		    "key 0x%08x", req->net_register->type, req->net_register->key);
		return;
	}
	LIST_REMOVE(h, entry);
	free(h);
	ipc_reply_status(c, req, 0, NULL);
}

/* What o2net's send refuses before anything goes on a link. */
static int
send_check(struct netd *nd, unsigned node, uint32_t type, size_t len,
    char *why, size_t whylen)
{
	if (node >= CC_MAX_NODES || nd->nodes[node] == NULL) {
		snprintf(why, whylen, "no node %u is configured", node);
		return EINVAL;
	}
	if (node == nd->self) {
		snprintf(why, whylen, "node %u is this node", node);
		return ELOOP;
	}
	if (type == 0) {
		snprintf(why, whylen, "message type 0 is invalid");
		return EINVAL;
	}
	if (len > NETD_MAX_PAYLOAD) {
		snprintf(why, whylen, "a %zu-byte message is over the %u-byte "
		    "limit", len, NETD_MAX_PAYLOAD);
		return EINVAL;
	}
	return 0;
}

static struct rpc *
rpc_new(unsigned node, uint32_t type, uint32_t key, const ProtobufCBinaryData *p)
{
	struct rpc *r = xcalloc(1, sizeof(*r));

	r->node = node;
	r->type = type;
	r->key = key;
	r->len = p->len;
	if (p->len > 0) {
		r->payload = xmalloc(p->len);
		memcpy(r->payload, p->data, p->len);
	}
	return r;
}

static void
handle_send(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	const Netd__NetSend *s = req->net_send;
	struct api_client *cl = client_of(c);
	struct rpc *r;
	char why[128];
	int err;

	if ((err = send_check(nd, s->node, s->type, s->payload.len, why,
	    sizeof(why))) != 0) {
		ipc_reply_status(c, req, err, "%s", why);
		return;
	}
	r = rpc_new(s->node, s->type, s->key, &s->payload);
	r->client = cl;
	r->req_id = req->id;
	r->req_type = req->type;
	TAILQ_INSERT_TAIL(&cl->rpcs, r, client_entry);
	rpc_submit(nd, r);
}

static void
handle_send_all(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	const Netd__NetSendAll *s = req->net_send_all;
	struct api_client *cl = client_of(c);
	Netd__NetResult *res;
	struct rpc_all *a;
	struct rpc *r;
	unsigned i, live[CC_MAX_NODES];
	size_t n = 0, k;

	if (s->type == 0 || s->payload.len > NETD_MAX_PAYLOAD) {
		ipc_reply_status(c, req, EINVAL, "type 0, or a payload over %u "
		    "bytes", NETD_MAX_PAYLOAD);
		return;
	}
	for (i = 0; i < CC_MAX_NODES; i++)
		if (nd->nodes[i] != NULL && i != nd->self && link_is_up(nd->nodes[i]))
			live[n++] = i;
	a = xcalloc(1, sizeof(*a));
	a->client = cl;
	a->req_id = req->id;
	a->n = n;
	a->outstanding = n;
	res = xcalloc(n + 1, sizeof(*res));
	a->results = res;
	TAILQ_INSERT_TAIL(&cl->alls, a, entry);
	if (n == 0) {
		api_reply_all(nd, a);
		return;
	}
	for (k = 0; k < n; k++) {
		netd__net_result__init(&res[k]);
		res[k].node = live[k];
	}
	for (k = 0; k < n; k++) {
		r = rpc_new(live[k], s->type, s->key, &s->payload);
		r->all = a;
		r->all_idx = k;
		rpc_submit(nd, r);
	}
}

static void
handle_reply(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	const Netd__NetReply *r = req->net_reply;
	struct inbound *ib = rpc_inbound_find(nd, r->handle);

	if (ib == NULL || ib->client != client_of(c)) {
		ipc_reply_status(c, req, ENOENT, "no message %llu awaits an "
		    "answer from this connection", (unsigned long long)r->handle);
		return;
	}
	/* The handler does not hear of it: answer the sender rather than leave it waiting. */
	if (r->payload.len > NETD_MAX_PAYLOAD) {
		rpc_answer(nd, ib, WIRE_SYS_OVERFLOW, 0, NULL, 0);
		ipc_reply_status(c, req, EINVAL, "a %zu-byte reply is over the "
		    "%u-byte limit", r->payload.len, NETD_MAX_PAYLOAD);
		return;
	}
	rpc_answer(nd, ib, WIRE_SYS_OK, r->status, r->payload.data, r->payload.len);
	ipc_reply_status(c, req, 0, NULL);
}

static Netd__LinkState
link_state_of(struct netd *nd, struct netd_node *n)
{
	if (n->num == nd->self)
		return NETD__LINK_STATE__LINK_SELF;
	if (n->link == NULL)
		return NETD__LINK_STATE__LINK_DOWN;
	switch (n->link->state) {
	case LS_CONNECTING: return NETD__LINK_STATE__LINK_CONNECTING;
	case LS_HANDSHAKE: return NETD__LINK_STATE__LINK_HANDSHAKE;
	default:
		return n->link->timed_out ? NETD__LINK_STATE__LINK_IDLE :
		    NETD__LINK_STATE__LINK_UP;
	}
}

static void
handle_status(struct ipc_conn *c, const Envelope *req)
{
	struct netd *nd = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Netd__NetStatus st = NETD__NET_STATUS__INIT;
	Netd__QuorumStatus qs = NETD__QUORUM_STATUS__INIT;
	Netd__LinkStatus *ls;
	struct netd_node *n;
	struct handler *h;
	char (*addrs)[INET_ADDRSTRLEN + 8];
	size_t k = 0;
	unsigned i;

	ls = xcalloc(CC_MAX_NODES, sizeof(*ls));
	addrs = xcalloc(CC_MAX_NODES, sizeof(*addrs));
	st.links = xcalloc(CC_MAX_NODES, sizeof(*st.links));
	for (i = 0; i < CC_MAX_NODES; i++) {
		struct in_addr a;

		if ((n = nd->nodes[i]) == NULL)
			continue;
		a.s_addr = n->addr;
		netd__link_status__init(&ls[k]);
		ls[k].node = n->num;
		ls[k].name = n->name;
		snprintf(addrs[k], sizeof(addrs[k]), "%s:%u", inet_ntoa(a), n->port);
		ls[k].address = addrs[k];
		ls[k].state = link_state_of(nd, n);
		ls[k].heartbeat = n->hb_up;
		ls[k].last_error = n->last_error;
		ls[k].sent = n->nsent;
		ls[k].received = n->nreceived;
		ls[k].pending = n->link != NULL ? (uint32_t)n->link->npending : 0;
		ls[k].up_since_ms = n->up_since_ms;
		ls[k].authenticated = nd->auth && link_is_up(n);
		st.links[k] = &ls[k];
		k++;
	}
	st.n_links = k;
	st.local_node = nd->self;
	st.cluster = nd->cluster;
	st.hbd_connected = nd->hbd_connected;
	st.auth = nd->auth;
	st.max_payload = NETD_MAX_PAYLOAD;
	LIST_FOREACH(h, &nd->handlers, entry)
		st.handlers++;
	qs.heartbeating = nd->quo.heartbeating;
	qs.connected = nd->quo.connected;
	qs.holds = nd->quo.holds;
	qs.pending = nd->quo.pending;
	qs.fenced = nd->fenced;
	qs.fence_reason = nd->quo.reason;
	qs.delay_ms = nd->quo.delay_ms;
	st.quorum = &qs;
	rep.payload_case = ENVELOPE__PAYLOAD_NET_STATUS;
	rep.net_status = &st;
	ipc_reply(c, req, &rep);
	free(st.links);
	free(ls);
	free(addrs);
}

/* ---------------------------------------------------------- from rpc.c */

int
api_deliver(struct netd *nd, struct inbound *ib, const uint8_t *payload,
    size_t len, uint32_t *sys)
{
	struct handler *h = handler_find(nd, ib->type, ib->key);
	Envelope ev = ENVELOPE__INIT;
	Netd__NetMessage m = NETD__NET_MESSAGE__INIT;

	if (h == NULL) {
		*sys = WIRE_SYS_NO_HANDLER;
		return -1;
	}
	if (len > h->max_len) {
		*sys = WIRE_SYS_OVERFLOW;
		return -1;
	}
	ib->client = h->cl;
	TAILQ_INSERT_TAIL(&h->cl->inbound, ib, client_entry);
	rpc_inbound_add(nd, ib);
	m.handle = ib->handle;
	m.from = ib->node;
	m.type = ib->type;
	m.key = ib->key;
	m.payload.data = (uint8_t *)payload;
	m.payload.len = len;
	ev.type = MSG_TYPE__MSG_NETD_MESSAGE;
	ev.kind = KIND__KIND_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_NET_MESSAGE;
	ev.net_message = &m;
	/* A handler too slow to read is dropped; its close answers ib. */
	ipc_send(h->cl->conn, &ev);
	return 0;
}

void
api_inbound_done(struct netd *nd, struct inbound *ib)
{
	(void)nd;
	if (ib->client != NULL)
		TAILQ_REMOVE(&ib->client->inbound, ib, client_entry);
	ib->client = NULL;
}

void
api_reply_rpc(struct netd *nd, struct rpc *r, int err, int32_t status,
    const uint8_t *payload, size_t len)
{
	Envelope req = ENVELOPE__INIT, rep = ENVELOPE__INIT;
	Netd__NetResult res = NETD__NET_RESULT__INIT;
	char why[128] = "";

	(void)nd;
	if (r->client == NULL)
		return;
	TAILQ_REMOVE(&r->client->rpcs, r, client_entry);
	res.node = r->node;
	res.err = err;
	res.status = status;
	res.payload.data = (uint8_t *)payload;
	res.payload.len = len;
	if (err != 0)
		snprintf(why, sizeof(why), "node %u: %s", r->node, strerror(err));
	req.type = r->req_type;
	req.id = r->req_id;
	rep.status = err;
	rep.error = why;
	rep.payload_case = ENVELOPE__PAYLOAD_NET_RESULT;
	rep.net_result = &res;
	ipc_reply(r->client->conn, &req, &rep);
}

void
api_reply_all(struct netd *nd, struct rpc_all *a)
{
	Envelope req = ENVELOPE__INIT, rep = ENVELOPE__INIT;
	Netd__NetResults rs = NETD__NET_RESULTS__INIT;
	Netd__NetResult *res = a->results, **ptrs;
	size_t i;

	(void)nd;
	ptrs = xcalloc(a->n + 1, sizeof(*ptrs));
	for (i = 0; i < a->n; i++)
		ptrs[i] = &res[i];
	if (a->client != NULL) {
		TAILQ_REMOVE(&a->client->alls, a, entry);
		rs.n_results = a->n;
		rs.results = ptrs;
		req.type = MSG_TYPE__MSG_NETD_SEND_ALL;
		req.id = a->req_id;
		rep.payload_case = ENVELOPE__PAYLOAD_NET_RESULTS;
		rep.net_results = &rs;
		ipc_reply(a->client->conn, &req, &rep);
	}
	for (i = 0; i < a->n; i++)
		free(res[i].payload.data);
	free(ptrs);
	free(res);
	free(a);
}

void
api_publish_link(struct netd *nd, unsigned node, int state, const char *reason)
{
	Envelope ev = ENVELOPE__INIT;
	Netd__LinkEvent le = NETD__LINK_EVENT__INIT;

	if (nd->ipc == NULL)
		return;
	le.node = node;
	le.state = state;
	le.reason = (char *)reason;
	ev.type = MSG_TYPE__MSG_NETD_LINK_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_LINK_EVENT;
	ev.link_event = &le;
	ipc_publish(nd->ipc, NETD_TOPIC_LINK, &ev);
}

void
api_publish_quorum(struct netd *nd, const char *reason)
{
	Envelope ev = ENVELOPE__INIT;
	Netd__QuorumEvent qe = NETD__QUORUM_EVENT__INIT;

	if (nd->ipc == NULL)
		return;
	qe.fenced = nd->fenced;
	qe.reason = (char *)reason;
	qe.heartbeating = nd->quo.heartbeating;
	qe.connected = nd->quo.connected;
	ev.type = MSG_TYPE__MSG_NETD_QUORUM_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_QUORUM_EVENT;
	ev.quorum_event = &qe;
	ipc_publish(nd->ipc, NETD_TOPIC_QUORUM, &ev);
}

static void
client_closed(struct ipc_conn *c)
{
	struct netd *nd = ipc_conn_arg(c);
	struct api_client *cl = ipc_conn_data(c);
	struct handler *h, *next;
	struct inbound *ib;
	struct rpc *r;
	struct rpc_all *a;

	if (cl == NULL)
		return;
	for (h = LIST_FIRST(&nd->handlers); h != NULL; h = next) {
		next = LIST_NEXT(h, entry);
		if (h->cl == cl) {
			LIST_REMOVE(h, entry);
			free(h);
		}
	}
	while ((r = TAILQ_FIRST(&cl->rpcs)) != NULL) {
		TAILQ_REMOVE(&cl->rpcs, r, client_entry);
		r->client = NULL;
	}
	while ((a = TAILQ_FIRST(&cl->alls)) != NULL) {
		TAILQ_REMOVE(&cl->alls, a, entry);
		a->client = NULL;
	}
	/* The senders must not wait for answers that will never come. */
	while ((ib = TAILQ_FIRST(&cl->inbound)) != NULL)
		rpc_answer(nd, ib, WIRE_SYS_HANDLER_GONE, 0, NULL, 0);
	free(cl);
}

static const struct ipc_handler netd_handlers[] = {
	{ MSG_TYPE__MSG_NETD_REGISTER, ENVELOPE__PAYLOAD_NET_REGISTER, handle_register },
	{ MSG_TYPE__MSG_NETD_UNREGISTER, ENVELOPE__PAYLOAD_NET_REGISTER, handle_unregister },
	{ MSG_TYPE__MSG_NETD_SEND, ENVELOPE__PAYLOAD_NET_SEND, handle_send },
	{ MSG_TYPE__MSG_NETD_SEND_ALL, ENVELOPE__PAYLOAD_NET_SEND_ALL, handle_send_all },
	{ MSG_TYPE__MSG_NETD_REPLY, ENVELOPE__PAYLOAD_NET_REPLY, handle_reply },
	{ MSG_TYPE__MSG_NETD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, handle_status },
};

void
api_start(struct netd *nd)
{
	char *path;

	xasprintf(&path, "%s/netd.sock", nd->rundir);
	nd->ipc = ipc_server_listen(nd->base, path, "netd", netd_handlers,
	    nitems(netd_handlers), nd);
	if (nd->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(nd->ipc, client_closed);
	free(path);
}
