/*
 * Links: one TCP connection per node pair, as o2net makes them. The
 * higher-numbered node connects, from its own configured address, as
 * soon as hbd reports the peer up, and again every reconnect_delay_ms
 * while it has no link; the lower-numbered node accepts, identifies the
 * peer by its source address alone and refuses anyone else. A link is up
 * once both handshakes agree (and, with a cluster key, both proofs
 * verify); then requests flow (rpc.c) and keepalive.c watches it.
 *
 * A connection that fails before that is refused alone: nothing about
 * its node changes, for anyone on the node's host (or, without a key,
 * anyone who can use its address) can make one. The connector tries
 * again every reconnect_delay_ms, so a real peer whose link dropped is
 * back at its next attempt, and a misconfigured one keeps being refused
 * with the reason on both sides, rate-limited (refusal.c).
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "stream.h"
#include "util.h"

static void	link_read(struct stream *, void *);
static void	link_error(struct stream *, int, void *);
static void	link_schedule_connect(struct netd *, struct netd_node *);
static void	expire_arm(struct netd *, struct netd_node *);

#define ATTEMPT_LOG_MS	5000	/* failed connects: one line at most this often */
#define ACCEPTING_MAX	4	/* unauthenticated connections per node */

static const char *
addr_str(uint32_t addr, char *buf, size_t len)
{
	struct in_addr a = { addr };

	return inet_ntop(AF_INET, &a, buf, (socklen_t)len);
}

int
link_is_up(const struct netd_node *n)
{
	return n->link != NULL && n->link->state == LS_UP;
}

static void
set_nodelay(int fd)
{
	int one = 1;

	/* Requests are small and latency-bound: never wait for Nagle. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		log_warn("TCP_NODELAY");
}

/*
 * Frames queued while handling one wakeup go out in one write at the end
 * of it, straight to the socket unless a backlog waits for writability
 * (stream.c). A peer that stopped reading must not make us queue
 * without end.
 */
static void
link_flush(evutil_socket_t fd, short ev, void *arg)
{
	struct link *l = arg;

	(void)fd;
	(void)ev;
	l->flush_pending = 0;
	if (l->closing)
		return;
	stream_flush(l->st);
	if (stream_queued(l->st) > LINK_OUTQ_MAX)
		link_close(l, "the peer stopped reading (send queue over the "
		    "limit)");
}

static struct link *
link_new(struct netd *nd, struct netd_node *node, int fd, int outgoing, uint32_t addr)
{
	struct link *l = xcalloc(1, sizeof(*l));
	size_t i;

	l->nd = nd;
	l->node = node;
	l->outgoing = outgoing;
	l->addr = addr;
	l->gen = ++nd->next_link_gen;
	l->state = outgoing ? LS_CONNECTING : LS_HANDSHAKE;
	TAILQ_INIT(&l->sent);
	for (i = 0; i < RPC_HASH; i++)
		LIST_INIT(&l->hash[i]);
	l->st = stream_new(nd->base, fd, link_read, link_error, l);
	l->flush_ev = event_new(nd->base, -1, 0, link_flush, l);
	if (l->flush_ev == NULL)
		fatalx("out of memory for a link");
	if (outgoing) {
		node->link = l;
	} else {
		TAILQ_INSERT_TAIL(&node->accepting, l, accept_entry);
		node->naccepting++;
	}
	return l;
}

static void
link_reap(evutil_socket_t fd, short ev, void *arg)
{
	struct link *l = arg;

	(void)fd;
	(void)ev;
	event_free(l->flush_ev);
	free(l);
}

/* Frames go out whole: header, payload, and the MAC over both. */
void
link_send_frame(struct link *l, struct wire_hdr *h, const uint8_t *payload, size_t len)
{
	static uint8_t buf[WIRE_HDR_LEN + NETD_MAX_PAYLOAD + WIRE_MAC_LEN];
	size_t n;

	if (l->closing || len > NETD_MAX_PAYLOAD)
		return;
	h->len = (uint32_t)len;
	h->flags = 0;
	h->seq = 0;
	if (l->tx_keyed) {
		h->flags |= WIRE_F_MAC;
		h->seq = ++l->auth.tx_seq;
	}
	wire_hdr_encode(h, buf);
	if (len > 0)
		memcpy(buf + WIRE_HDR_LEN, payload, len);
	n = WIRE_HDR_LEN + len;
	if (l->tx_keyed) {
		auth_mac(l->auth.tx_key, buf, n, buf + n);
		n += WIRE_MAC_LEN;
	}
	stream_queue(l->st, buf, n);
	if (!l->flush_pending) {
		l->flush_pending = 1;
		event_active(l->flush_ev, EV_WRITE, 0);
	}
}

static void
send_msg_frame(struct link *l, uint16_t magic, const ProtobufCMessage *m)
{
	struct wire_hdr h = { .magic = magic };
	uint8_t buf[NETD_HANDSHAKE_MAX];
	size_t n = protobuf_c_message_get_packed_size(m);

	if (n > sizeof(buf))
		fatalx("a %s frame of %zu bytes does not fit", wire_magic_name(magic), n);
	protobuf_c_message_pack(m, buf);
	link_send_frame(l, &h, buf, n);
}

static void
send_handshake(struct link *l)
{
	struct netd *nd = l->nd;
	Netd__Handshake hs;

	if (nd->auth)
		auth_nonce(l->nonce);
	hs_fill(&nd->hs, nd->self, l->node->num, l->nonce, &hs);
	send_msg_frame(l, WIRE_HANDSHAKE, &hs.base);
	ka_hs_start(l);
}

/*
 * Tear a connection down. A link's requests in flight fail with
 * EHOSTDOWN at once, and the connector tries again; an accepted
 * connection that never authenticated was nobody's link and just goes.
 */
void
link_close(struct link *l, const char *why)
{
	struct netd *nd = l->nd;
	struct netd_node *n = l->node;
	int was_up = l->state == LS_UP;

	if (l->closing)
		return;
	l->closing = 1;
	stream_free(l->st);
	event_del(l->flush_ev);
	ka_link_free(l);
	if (event_base_once(nd->base, -1, EV_TIMEOUT, link_reap, l, NULL) == -1)
		fatalx("cannot schedule freeing a link");
	if (n->link != l) {
		TAILQ_REMOVE(&n->accepting, l, accept_entry);
		n->naccepting--;
		return;
	}
	n->link = NULL;
	snprintf(n->last_error, sizeof(n->last_error), "%s", why);
	if (was_up) {
		log_warnx("no longer connected to node %u (%s): %s", n->num,
		    n->name, why);
		n->failed_since_up = 1;
		n->up_since_ms = 0;
		config_pin(nd, n, 0);
		fence_check(nd, quo_conn_err(&nd->quo, n->num, now_ms()));
	}
	rpc_link_lost(nd, l);
	if (was_up)
		api_publish_link(nd, n->num, NETD__LINK_STATE__LINK_DOWN, why);
	link_schedule_connect(nd, n);
	expire_arm(nd, n);
}

static void
link_established(struct link *l)
{
	struct netd *nd = l->nd;
	struct netd_node *n = l->node;
	char a[INET_ADDRSTRLEN];

	l->state = LS_UP;
	n->up_since_ms = now_ms();
	n->last_error[0] = '\0';
	n->failed_attempts = 0;
	n->attempt_logged_ms = 0;
	n->expired = 0;
	evtimer_del(n->expire_timer);
	ka_link_start(l);
	log_info("%s node %u (%s) at %s:%u%s", l->outgoing ? "connected to" :
	    "accepted a connection from", n->num, n->name,
	    addr_str(n->addr, a, sizeof(a)), n->port,
	    nd->auth ? ", authenticated" : "");
	config_pin(nd, n, 1);
	api_publish_link(nd, n->num, NETD__LINK_STATE__LINK_UP,
	    l->outgoing ? "connected" : "accepted");
	rpc_link_up(nd, n);
	/* Last: a verdict to fence closes every link, this one included. */
	fence_check(nd, quo_conn_up(&nd->quo, n->num));
}

/* Every unauthenticated connection of n goes, as one more has authenticated. */
static void
close_candidates(struct netd_node *n, const char *why)
{
	struct link *c;

	while ((c = TAILQ_FIRST(&n->accepting)) != NULL)
		link_close(c, why);
}

/*
 * l passed every check (with a key, proved it): only now may it speak
 * for its node. An accepted one becomes the node's link unless the node
 * has one already or stopped heartbeating meanwhile.
 */
static void
link_authenticated(struct link *l)
{
	struct netd_node *n = l->node;

	if (!l->outgoing) {
		if (n->link != NULL || !n->hb_up) {
			link_log_failure(l, "refusing a connection: node %u (%s) %s",
			    n->num, n->name, n->link != NULL ? "already has a link" :
			    "is not heartbeating");
			link_close(l, "refused");
			return;
		}
		TAILQ_REMOVE(&n->accepting, l, accept_entry);
		n->naccepting--;
		n->link = l;
		close_candidates(n, "another connection authenticated first");
	}
	link_established(l);
}

/* ---------------------------------------------------------- frames in */

static void
on_handshake(struct link *l, const struct wire_hdr *h, const uint8_t *p)
{
	struct netd *nd = l->nd;
	Netd__Handshake *hs;
	Netd__AuthProof ap = NETD__AUTH_PROOF__INIT;
	uint8_t proof[AUTH_KEY_LEN];
	char why[512];

	if (l->got_hs) {
		link_close(l, "a second handshake");
		return;
	}
	if ((hs = netd__handshake__unpack(NULL, h->len, p)) == NULL) {
		link_close(l, "a handshake that does not decode");
		return;
	}
	if (hs_check(&nd->hs, nd->self, l->node->num, hs, why, sizeof(why)) == -1) {
		link_log_failure(l, "%s. Disconnecting.", why);
		netd__handshake__free_unpacked(hs, NULL);
		link_close(l, why);
		return;
	}
	l->got_hs = 1;
	if (!nd->auth) {
		netd__handshake__free_unpacked(hs, NULL);
		link_authenticated(l);
		return;
	}
	memcpy(l->peer_nonce, hs->nonce.data, AUTH_NONCE_LEN);
	netd__handshake__free_unpacked(hs, NULL);
	auth_session_init(&l->auth, nd->key, nd->self, l->node->num, l->nonce,
	    l->peer_nonce);
	auth_proof(nd->key, nd->self, l->node->num, l->nonce, l->peer_nonce, proof);
	ap.proof.data = proof;
	ap.proof.len = sizeof(proof);
	send_msg_frame(l, WIRE_AUTH, &ap.base);
	l->tx_keyed = 1;
}

static void
on_auth(struct link *l, const struct wire_hdr *h, const uint8_t *p)
{
	struct netd *nd = l->nd;
	Netd__AuthProof *ap;
	uint8_t want[AUTH_KEY_LEN];
	char why[256];
	int ok;

	if (!nd->auth || !l->got_hs || l->got_proof) {
		link_close(l, "an unexpected auth frame");
		return;
	}
	if ((ap = netd__auth_proof__unpack(NULL, h->len, p)) == NULL) {
		link_close(l, "an auth frame that does not decode");
		return;
	}
	auth_proof(nd->key, l->node->num, nd->self, l->peer_nonce, l->nonce, want);
	ok = ap->proof.len == AUTH_KEY_LEN && auth_proof_ok(ap->proof.data, want);
	netd__auth_proof__free_unpacked(ap, NULL);
	if (!ok) {
		snprintf(why, sizeof(why), "node %u does not prove that it knows "
		    "the cluster key (a wrong key?)", l->node->num);
		link_log_failure(l, "%s. Disconnecting.", why);
		link_close(l, why);
		return;
	}
	l->got_proof = 1;
	l->rx_keyed = 1;
	link_authenticated(l);
}

static void
on_ka_req(struct link *l, const struct wire_hdr *h, const uint8_t *p)
{
	struct wire_hdr r = { .magic = WIRE_KA_RESP };

	(void)h;
	(void)p;
	link_send_frame(l, &r, NULL, 0);
}

static void
on_ka_resp(struct link *l, const struct wire_hdr *h, const uint8_t *p)
{
	/* Receiving it was the point: ka_link_rx has seen it. */
	(void)l;
	(void)h;
	(void)p;
}

/* Which frames each stage of a link takes. */
static const struct frame_handler {
	uint16_t	 magic;
	int		 up;		/* 1: only once up; 0: only before */
	void		(*fn)(struct link *, const struct wire_hdr *, const uint8_t *);
} frame_handlers[] = {
	{ WIRE_HANDSHAKE, 0, on_handshake },
	{ WIRE_AUTH, 0, on_auth },
	{ WIRE_REQUEST, 1, rpc_on_request },
	{ WIRE_REPLY, 1, rpc_on_reply },
	{ WIRE_KA_REQ, 1, on_ka_req },
	{ WIRE_KA_RESP, 1, on_ka_resp },
};

static void
dispatch_frame(struct link *l, const struct wire_hdr *h, const uint8_t *payload)
{
	const struct frame_handler *fh;
	char why[128];
	size_t i;

	for (i = 0; i < nitems(frame_handlers); i++) {
		fh = &frame_handlers[i];
		if (fh->magic != h->magic)
			continue;
		if (fh->up != (l->state == LS_UP)) {
			snprintf(why, sizeof(why), "a %s frame %s the handshake",
			    wire_magic_name(h->magic), fh->up ? "before" : "after");
			link_log_failure(l, "node %u sent %s, closing the link",
			    l->node->num, why);
			link_close(l, why);
			return;
		}
		fh->fn(l, h, payload);
		return;
	}
	/* wire_peek lets only known magics through. */
	link_close(l, "a frame of unknown kind");
}

/* Every whole frame in the input, checked and dispatched in place. */
static void
link_read(struct stream *st, void *arg)
{
	struct link *l = arg;
	struct wire_hdr h;
	const uint8_t *frame;
	size_t len, flen;
	char why[256];
	int rc;

	while (!l->closing) {
		frame = stream_data(st, &len);
		rc = wire_peek(frame, len, l->rx_keyed, &h, &flen, why, sizeof(why));
		if (rc == 0) {
			stream_expect(st, flen);
			return;
		}
		if (rc == -1) {
			link_log_failure(l, "node %u sent %s, closing the link",
			    l->node->num, why);
			link_close(l, why);
			return;
		}
		if (l->rx_keyed &&
		    auth_check_frame(&l->auth, frame, flen, &h, why, sizeof(why)) == -1) {
			link_log_failure(l, "node %u sent %s, closing the link",
			    l->node->num, why);
			link_close(l, why);
			return;
		}
		ka_link_rx(l);
		dispatch_frame(l, &h, frame + WIRE_HDR_LEN);
		if (l->closing)
			return;
		stream_consume(st, flen);
	}
}

/*
 * An attempt of ours that did not become a link. Each one shows in the
 * log, but at most one line per ATTEMPT_LOG_MS, counting those it
 * stands for: a peer that keeps refusing us must be visible without
 * flooding the log.
 */
static void
attempt_failed(struct netd *nd, struct netd_node *n, const char *why)
{
	uint64_t now = now_ms();

	n->failed_attempts++;
	if (n->attempt_logged_ms != 0 && now - n->attempt_logged_ms < ATTEMPT_LOG_MS)
		return;
	log_info("connecting to node %u (%s) failed: %s (%u failed attempt%s since "
	    "the last line; retrying every %u ms)", n->num, n->name, why,
	    n->failed_attempts, n->failed_attempts == 1 ? "" : "s",
	    nd->reconnect_delay_ms);
	n->attempt_logged_ms = now;
	n->failed_attempts = 0;
}

/*
 * Why a connection failed: for our own attempt, in attempt_failed's
 * lines; for one we accepted and that never authenticated, in
 * refusal.c's, by source address; for a link, always.
 */
void
link_log_failure(struct link *l, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->state == LS_UP)
		log_warnx("%s", msg);
	else if (l->outgoing)
		attempt_failed(l->nd, l->node, msg);
	else
		refusal_log(l->nd, l->addr, "%s", msg);
}

static void
link_connected(struct stream *st, void *arg)
{
	struct link *l = arg;

	set_nodelay(stream_fd(st));
	l->state = LS_HANDSHAKE;
	send_handshake(l);
}

static void
link_error(struct stream *st, int err, void *arg)
{
	struct link *l = arg;
	char why[256];

	(void)st;
	if (err == 0)
		snprintf(why, sizeof(why), l->state == LS_HANDSHAKE ?
		    "closed by the peer during the handshake (see its log)" :
		    "closed by the peer");
	else
		snprintf(why, sizeof(why), "%s", strerror(err));
	if (l->outgoing && l->state != LS_UP)
		attempt_failed(l->nd, l->node, why);
	else if (l->state == LS_HANDSHAKE)
		link_log_failure(l, "link from node %u %s", l->node->num, why);
	link_close(l, why);
}

/* ---------------------------------------------------------- connecting */

static int
should_connect(struct netd *nd, struct netd_node *n)
{
	return n->configured && n->hb_up && n->link == NULL &&
	    !nd->fenced && nd->self > n->num && nd->listen_fd != -1;
}

static void
link_connect(struct netd *nd, struct netd_node *n)
{
	struct sockaddr_in local = { .sin_family = AF_INET }, peer = { .sin_family = AF_INET };
	struct link *l;
	char a[INET_ADDRSTRLEN];
	int fd;

	if (!should_connect(nd, n))
		return;
	n->last_attempt_ms = now_ms();
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("socket for node %u", n->num);
		link_schedule_connect(nd, n);
		return;
	}
	/* The acceptor knows us by this source address. */
	local.sin_addr.s_addr = nd->nodes[nd->self]->addr;
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) == -1) {
		log_warn("bind to %s for node %u", addr_str(local.sin_addr.s_addr,
		    a, sizeof(a)), n->num);
		close(fd);
		link_schedule_connect(nd, n);
		return;
	}
	set_nodelay(fd);
	peer.sin_addr.s_addr = n->addr;
	peer.sin_port = htons(n->port);
	l = link_new(nd, n, fd, 1, n->addr);
	/* A peer that never answers the SYN gets no more time than one
	 * that never finishes its handshake. */
	ka_hs_start(l);
	log_debug("connecting to node %u at %s:%u", n->num,
	    addr_str(n->addr, a, sizeof(a)), n->port);
	if (stream_connect(l->st, (struct sockaddr *)&peer, sizeof(peer),
	    link_connected) == -1) {
		/* Failures after the attempt started come to link_error. */
		link_close(l, "connect failed at once");
	}
}

static void
connect_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct netd_node *n = arg;

	(void)fd;
	(void)ev;
	link_connect(n->nd, n);
}

/* No more often than reconnect_delay_ms after the last attempt. */
static void
link_schedule_connect(struct netd *nd, struct netd_node *n)
{
	struct timeval tv = { 0, 0 };
	uint64_t now = now_ms(), due;

	if (!should_connect(nd, n))
		return;
	due = n->last_attempt_ms + nd->reconnect_delay_ms;
	if (n->last_attempt_ms != 0 && due > now) {
		tv.tv_sec = (time_t)((due - now) / 1000);
		tv.tv_usec = (suseconds_t)((due - now) % 1000) * 1000;
	}
	evtimer_add(n->connect_timer, &tv);
}

static void
expire_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct netd_node *n = arg;

	(void)fd;
	(void)ev;
	if (link_is_up(n))
		return;
	n->expired = 1;
	log_warnx("no connection established with node %u (%s) after %.1f "
	    "seconds, check network and cluster configuration%s%s", n->num,
	    n->name, (double)(n->nd->reconnect_delay_ms +
	    n->nd->idle_timeout_ms) / 1000.0,
	    n->last_error[0] ? "; last error: " : "", n->last_error);
	/* As o2net_connect_expired: senders stop waiting for it. */
	rpc_node_expired(n->nd, n, (uint64_t)n->nd->reconnect_delay_ms +
	    n->nd->idle_timeout_ms);
}

/* Once per outage, when no link came up in reconnect + idle time: warn, and fail the waiting requests. */
static void
expire_arm(struct netd *nd, struct netd_node *n)
{
	uint64_t ms = (uint64_t)nd->reconnect_delay_ms + nd->idle_timeout_ms;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	if (!n->hb_up || nd->fenced || link_is_up(n) || n->expired ||
	    evtimer_pending(n->expire_timer, NULL))
		return;
	evtimer_add(n->expire_timer, &tv);
}

/* ---------------------------------------------------------- accepting */

static void
refuse(struct netd *nd, int fd, uint32_t addr, const char *fmt, ...)
    __attribute__((__format__(printf, 4, 5)));

static void
refuse(struct netd *nd, int fd, uint32_t addr, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	refusal_log(nd, addr, "refusing a connection: %s", msg);
	close(fd);
}

static void
accept_one(struct netd *nd, int fd, const struct sockaddr_in *sa)
{
	uint32_t from = sa->sin_addr.s_addr;
	struct netd_node *n;
	struct link *l;
	char a[INET_ADDRSTRLEN];

	addr_str(from, a, sizeof(a));
	if (nd->fenced) {
		refuse(nd, fd, from, "from %s:%u: this node is fenced", a,
		    ntohs(sa->sin_port));
		return;
	}
	if ((n = config_node_by_addr(nd, from)) == NULL) {
		refuse(nd, fd, from, "attempt to connect from unknown node at %s:%u",
		    a, ntohs(sa->sin_port));
		return;
	}
	if (n->num <= nd->self) {
		refuse(nd, fd, from, "unexpected connect attempt from node %u (%s) "
		    "at %s: only higher-numbered nodes connect to node %u", n->num,
		    n->name, a, nd->self);
		return;
	}
	if (!n->hb_up) {
		refuse(nd, fd, from, "node %u (%s) at %s is not heartbeating",
		    n->num, n->name, a);
		return;
	}
	if (n->link != NULL) {
		refuse(nd, fd, from, "node %u (%s) at %s already has a link", n->num,
		    n->name, a);
		return;
	}
	/* The real peer finishes its handshake in a round trip: the oldest
	 * candidate is the one that is least likely to be it. */
	if (n->naccepting >= ACCEPTING_MAX) {
		l = TAILQ_FIRST(&n->accepting);
		link_log_failure(l, "node %u (%s) at %s: %u connections in their "
		    "handshake, closing the oldest", n->num, n->name, a,
		    n->naccepting + 1);
		link_close(l, "too many connections in their handshake");
	}
	set_nodelay(fd);
	l = link_new(nd, n, fd, 0, from);
	stream_start(l->st);
	send_handshake(l);
}

static void
listen_cb(evutil_socket_t lfd, short ev, void *arg)
{
	struct netd *nd = arg;
	struct sockaddr_in sa;
	socklen_t salen;
	int fd, i;

	(void)ev;
	/* A bounded batch per wakeup keeps the loop fair to live links. */
	for (i = 0; i < 16; i++) {
		salen = sizeof(sa);
		fd = accept4(lfd, (struct sockaddr *)&sa, &salen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("accept");
			return;
		}
		if (sa.sin_family != AF_INET) {
			close(fd);
			continue;
		}
		accept_one(nd, fd, &sa);
	}
}

int
link_listen(struct netd *nd)
{
	struct netd_node *self = nd->nodes[nd->self];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char a[INET_ADDRSTRLEN];
	int fd, one = 1;

	sa.sin_addr.s_addr = self->addr;
	sa.sin_port = htons(self->port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, 64) == -1) {
		log_warn("cannot listen on %s:%u", addr_str(self->addr, a,
		    sizeof(a)), self->port);
		close(fd);
		return -1;
	}
	nd->listen_fd = fd;
	nd->listen_ev = event_new(nd->base, fd, EV_READ | EV_PERSIST, listen_cb, nd);
	if (nd->listen_ev == NULL || event_add(nd->listen_ev, NULL) == -1)
		fatalx("cannot watch the listening socket");
	log_info("listening on %s:%u as node %u (%s)", addr_str(self->addr, a,
	    sizeof(a)), self->port, nd->self, self->name);
	return 0;
}

/* ---------------------------------------------------------- hbd's view */

void
link_node_init(struct netd *nd, struct netd_node *n)
{
	n->nd = nd;
	TAILQ_INIT(&n->waiting);
	TAILQ_INIT(&n->accepting);
	n->connect_timer = evtimer_new(nd->base, connect_timer_cb, n);
	n->expire_timer = evtimer_new(nd->base, expire_timer_cb, n);
	if (n->connect_timer == NULL || n->expire_timer == NULL)
		fatalx("out of memory for node timers");
}

void
link_node_up(struct netd *nd, struct netd_node *n)
{
	if (n->hb_up)
		return;
	n->hb_up = 1;
	n->failed_since_up = 0;
	n->expired = 0;
	log_info("node %u (%s) is heartbeating", n->num, n->name);
	fence_check(nd, quo_hb_up(&nd->quo, n->num));
	if (n->num == nd->self)
		return;
	expire_arm(nd, n);
	link_schedule_connect(nd, n);
}

void
link_node_down(struct netd *nd, struct netd_node *n)
{
	if (!n->hb_up)
		return;
	n->hb_up = 0;
	log_info("node %u (%s) stopped heartbeating", n->num, n->name);
	/* Quorum first, as o2net's node-down callback: the link that goes
	 * with it is no longer a disagreement to hold a decision for. */
	fence_check(nd, quo_hb_down(&nd->quo, n->num));
	if (n->num == nd->self)
		return;
	evtimer_del(n->connect_timer);
	evtimer_del(n->expire_timer);
	if (n->link != NULL)
		link_close(n->link, "its heartbeat went down");
	close_candidates(n, "its heartbeat went down");
	rpc_node_unreachable(nd, n, ENOTCONN);
}

/* Fenced: no link may carry anything for this node any more. */
void
link_stop_all(struct netd *nd, const char *why)
{
	struct netd_node *n;
	unsigned i;

	if (nd->listen_ev != NULL)
		event_del(nd->listen_ev);
	for (i = 0; i < CC_MAX_NODES; i++) {
		if ((n = nd->nodes[i]) == NULL || i == nd->self)
			continue;
		evtimer_del(n->connect_timer);
		evtimer_del(n->expire_timer);
		if (n->link != NULL)
			link_close(n->link, why);
		close_candidates(n, why);
		rpc_node_unreachable(nd, n, ENOTCONN);
	}
}

/*
 * The fence is cleared: listen again, and connect to every node hbd
 * reports heartbeating (the others as their NODE_UP comes).
 */
void
link_resume_all(struct netd *nd)
{
	struct netd_node *n;
	unsigned i;

	if (nd->listen_ev != NULL && event_add(nd->listen_ev, NULL) == -1)
		fatalx("cannot watch the listening socket");
	for (i = 0; i < CC_MAX_NODES; i++) {
		if ((n = nd->nodes[i]) == NULL || i == nd->self)
			continue;
		n->expired = 0;
		expire_arm(nd, n);
		link_schedule_connect(nd, n);
	}
}

/* A node removed from the configuration. */
void
link_node_free(struct netd *nd, struct netd_node *n)
{
	if (n->link != NULL)
		link_close(n->link, "removed from the configuration");
	close_candidates(n, "removed from the configuration");
	rpc_node_unreachable(nd, n, ENOTCONN);
	event_free(n->connect_timer);
	event_free(n->expire_timer);
	nd->nodes[n->num] = NULL;
	free(n);
}
