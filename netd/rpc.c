/*
 * Requests in flight, o2net's send/receive semantics without blocking:
 * a local client's request to a node gets a message number on that
 * node's link and waits, with any number of others, for the peer's
 * status reply (in order on the link: TCP keeps per-link FIFO). A link
 * that dies fails all of its requests with EHOSTDOWN at once, and
 * nothing is sent twice. A request for a node whose heartbeat is up but
 * whose first link is still coming waits for it, as o2net's senders do,
 * but no longer than o2net's connect_expired: reconnect_delay_ms +
 * idle_timeout_ms after the heartbeat came up, when the requests still
 * waiting fail with ETIMEDOUT. Once a link has failed (or that time has
 * passed), new requests fail with ENOTCONN at once until a link is back.
 * Each such failure of waiting or sent requests is logged with the node. Messages from peers go to the local client that registered
 * their (type, key) and come back with its status.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "netd.h"
#include "util.h"

static unsigned
rpc_bucket(uint64_t v)
{
	return (unsigned)((v * 0x9e3779b97f4a7c15ull) >> 54) % RPC_HASH;
}

static void
rpc_send(struct netd *nd, struct link *l, struct rpc *r)
{
	struct wire_hdr h = { .magic = WIRE_REQUEST };

	/* 0 is never a message number: a reply of 0 is always bogus. */
	if (++l->next_msg_num == 0)
		l->next_msg_num = 1;
	r->msg_num = l->next_msg_num;
	h.type = r->type;
	h.key = r->key;
	h.msg_num = r->msg_num;
	r->sent = 1;
	TAILQ_INSERT_TAIL(&l->sent, r, node_entry);
	LIST_INSERT_HEAD(&l->hash[rpc_bucket(r->msg_num)], r, hash_entry);
	l->npending++;
	l->node->nsent++;
	link_send_frame(l, &h, r->payload, r->len);
	(void)nd;
}

void
rpc_submit(struct netd *nd, struct rpc *r)
{
	struct netd_node *n = nd->nodes[r->node];

	if (link_is_up(n)) {
		rpc_send(nd, n->link, r);
		return;
	}
	if (n->hb_up && !n->failed_since_up && !nd->fenced) {
		TAILQ_INSERT_TAIL(&n->waiting, r, node_entry);
		return;
	}
	rpc_complete(nd, r, ENOTCONN, 0, NULL, 0);
}

void
rpc_complete(struct netd *nd, struct rpc *r, int err, int32_t status,
    const uint8_t *payload, size_t len)
{
	if (r->all != NULL) {
		struct rpc_all *a = r->all;
		Netd__NetResult *res = &((Netd__NetResult *)a->results)[r->all_idx];

		res->err = err;
		res->status = status;
		if (len > 0) {
			res->payload.data = xmalloc(len);
			memcpy(res->payload.data, payload, len);
			res->payload.len = len;
		}
		if (--a->outstanding == 0)
			api_reply_all(nd, a);
	} else {
		api_reply_rpc(nd, r, err, status, payload, len);
	}
	free(r->payload);
	free(r);
}

void
rpc_link_up(struct netd *nd, struct netd_node *n)
{
	struct rpc *r;

	while ((r = TAILQ_FIRST(&n->waiting)) != NULL && link_is_up(n)) {
		TAILQ_REMOVE(&n->waiting, r, node_entry);
		rpc_send(nd, n->link, r);
	}
}

void
rpc_link_lost(struct netd *nd, struct link *l)
{
	struct rpc *r;

	if (l->npending > 0)
		log_warnx("%zu request%s in flight to node %u (%s) fail%s with "
		    "EHOSTDOWN: the link went", l->npending, l->npending == 1 ?
		    "" : "s", l->node->num, l->node->name, l->npending == 1 ? "s" : "");
	while ((r = TAILQ_FIRST(&l->sent)) != NULL) {
		TAILQ_REMOVE(&l->sent, r, node_entry);
		LIST_REMOVE(r, hash_entry);
		l->npending--;
		rpc_complete(nd, r, EHOSTDOWN, 0, NULL, 0);
	}
}

void
rpc_node_unreachable(struct netd *nd, struct netd_node *n, int err)
{
	struct rpc *r;

	while ((r = TAILQ_FIRST(&n->waiting)) != NULL) {
		TAILQ_REMOVE(&n->waiting, r, node_entry);
		rpc_complete(nd, r, err, 0, NULL, 0);
	}
}

/* The node's first link did not come in o2net's time: nobody waits longer. */
void
rpc_node_expired(struct netd *nd, struct netd_node *n, uint64_t waited_ms)
{
	struct rpc *r;
	size_t k = 0;

	TAILQ_FOREACH(r, &n->waiting, node_entry)
		k++;
	n->failed_since_up = 1;
	if (k == 0)
		return;
	log_warnx("%zu request%s to node %u (%s) waited %.1f secs for a link that "
	    "did not come; failing %s with ETIMEDOUT", k, k == 1 ? "" : "s",
	    n->num, n->name, (double)waited_ms / 1000.0, k == 1 ? "it" : "them");
	rpc_node_unreachable(nd, n, ETIMEDOUT);
}

void
rpc_on_reply(struct link *l, const struct wire_hdr *h, const uint8_t *payload)
{
	struct rpc *r;

	LIST_FOREACH(r, &l->hash[rpc_bucket(h->msg_num)], hash_entry)
		if (r->msg_num == h->msg_num)
			break;
	if (r == NULL) {
		/* Each request is answered once: a stray reply is a broken peer. */
		log_warnx("node %u answered message %u, which is not in flight; "
		    "closing the link", l->node->num, h->msg_num);
		link_close(l, "a reply to no request");
		return;
	}
	TAILQ_REMOVE(&l->sent, r, node_entry);
	LIST_REMOVE(r, hash_entry);
	l->npending--;
	rpc_complete(l->nd, r, wire_errno(h->sys_status), h->status, payload, h->len);
}

void
rpc_on_request(struct link *l, const struct wire_hdr *h, const uint8_t *payload)
{
	struct netd *nd = l->nd;
	struct inbound *ib = xcalloc(1, sizeof(*ib));
	uint32_t sys;

	l->node->nreceived++;
	ib->handle = ++nd->next_handle;
	ib->node = l->node->num;
	ib->link_gen = l->gen;
	ib->type = h->type;
	ib->key = h->key;
	ib->msg_num = h->msg_num;
	if (api_deliver(nd, ib, payload, h->len, &sys) == -1) {
		rpc_answer(nd, ib, sys, 0, NULL, 0);
		return;
	}
}

void
rpc_inbound_add(struct netd *nd, struct inbound *ib)
{
	LIST_INSERT_HEAD(&nd->inbound[rpc_bucket(ib->handle)], ib, hash_entry);
	ib->hashed = 1;
}

struct inbound *
rpc_inbound_find(struct netd *nd, uint64_t handle)
{
	struct inbound *ib;

	LIST_FOREACH(ib, &nd->inbound[rpc_bucket(handle)], hash_entry)
		if (ib->handle == handle)
			return ib;
	return NULL;
}

/*
 * The handler's answer goes back on the link the message came in on; if
 * that link died meanwhile the sender has had EHOSTDOWN already, and a
 * reply on a newer link would answer a message it never sent there.
 */
void
rpc_answer(struct netd *nd, struct inbound *ib, uint32_t sys, int32_t status,
    const uint8_t *payload, size_t len)
{
	struct netd_node *n = nd->nodes[ib->node];
	struct wire_hdr h = { .magic = WIRE_REPLY };

	if (n != NULL && link_is_up(n) && n->link->gen == ib->link_gen) {
		h.type = ib->type;
		h.key = ib->key;
		h.msg_num = ib->msg_num;
		h.sys_status = sys;
		h.status = status;
		link_send_frame(n->link, &h, payload, len);
	}
	if (ib->hashed)
		LIST_REMOVE(ib, hash_entry);
	api_inbound_done(nd, ib);
	free(ib);
}
