/*
 * o2hb's write-timeout negotiation (Linux 4.6 on), through netd.
 *
 * Our write timeout fences us when our heartbeat write has not
 * completed for dead_threshold - 1 intervals, because our peers will
 * soon call us dead. But when the shared storage hangs for every node at
 * once, nobody's reads complete either, so nobody can call anybody dead,
 * and fencing the whole cluster would only turn a storage hiccup into an
 * outage. So a second timer, armed with the write timeout at half of it,
 * asks the others first:
 *
 *  - On its expiry, if our last iteration's I/O succeeded (a failing
 *    disk is not negotiated: the write timeout fences), we send
 *    NEGO_TIMEOUT (o2net type 1, payload: our node number) to the
 *    lowest-numbered live node, the master, and that is all: only a
 *    completed iteration or the master's approval arms the timer again.
 *  - The master's own expiry counts itself in, and then, every
 *    min(1 s, half an interval) until its write timeout fires, it looks
 *    whether every live node has asked. Once every one has, it re-arms
 *    its own timers and sends NEGO_APPROVE (type 2) to each of the
 *    others, which re-arm theirs.
 *
 * A node whose storage alone hangs therefore gets no approval (the
 * others' iterations complete, so they never ask), and fences as before,
 * one interval before its peers call it dead.
 *
 * The messages' key is o2hb's: crc32_le(seed = region number + 32, region
 * name), the region number being 0 in local mode (so that it differs from
 * the DLM's key of the same name) and in global mode the lowest one free
 * when the region started, as o2hb numbers its regions.
 *
 * Where we differ from o2hb: the master's recheck is min(1 s, interval/2)
 * rather than 1 s, which is the same at the default 2 s interval but
 * leaves a fast-failover cluster (200 ms: 900 ms between the expiry and
 * the write timeout) more than one look; and it approves once every live
 * node has asked, where o2hb compares the two node maps for equality, so
 * that a request from a node that has since died does not stop it.
 *
 * hbd is a client of netd.sock: it registers both (type, key) handlers
 * for each running region, answers them, and sends through netd. netd
 * absent or gone only turns negotiation off (a hung write fences, as
 * without it); we keep trying to connect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "crc32.h"
#include "hbd.h"
#include "ipc.h"
#include "log.h"
#include "netdanswer.h"
#include "util.h"

#define NETD_RETRY_MS	1000
/* A netd away longer than this (twice the dead time, at least) fences. */
#define NETD_GRACE_MIN_MS	5000
#define NEGO_SEED_BASE	CC_MAX_REGIONS	/* O2NM_MAX_REGIONS */

/* ---------------------------------------------------------- the rules */

uint32_t
hb_nego_key(unsigned region_num, const char *name)
{
	return crc32_le(region_num + NEGO_SEED_BASE, name, strlen(name));
}

/* O2HB_NEGO_TIMEOUT_MS: half the write timeout. */
unsigned
hb_nego_timeout_ms(unsigned interval_ms, unsigned dead_threshold)
{
	return interval_ms * (dead_threshold - 1) / 2;
}

unsigned
hb_nego_recheck_ms(unsigned interval_ms)
{
	unsigned ms = interval_ms / 2;

	return ms > 1000 ? 1000 : ms > 0 ? ms : 1;
}

/*
 * o2hb_nego_timeout: what our negotiation timer's expiry asks of us,
 * given who has asked us (master only), who is live and whether our own
 * last iteration succeeded. The master counts itself in `asked`.
 */
enum hb_nego_action
hb_nego_decide(uint8_t asked[HB_MAX_NODES], const uint8_t live[HB_MAX_NODES],
    unsigned self, int last_ok, unsigned *master)
{
	unsigned n;

	if (!last_ok)
		return HB_NEGO_NONE;
	for (n = 0; n < HB_MAX_NODES && !live[n]; n++)
		;
	if (n == HB_MAX_NODES)
		return HB_NEGO_NONE;	/* nobody to ask */
	*master = n;
	if (n != self)
		return HB_NEGO_ASK;
	asked[self] = 1;
	for (n = 0; n < HB_MAX_NODES; n++)
		if (live[n] && !asked[n])
			return HB_NEGO_WAIT;
	return HB_NEGO_APPROVE;
}

/* struct o2hb_nego_msg: one byte, the sender's node number; -1 if bad. */
int
hb_nego_sender(const uint8_t *payload, size_t len)
{
	if (len != 1 || payload[0] >= HB_MAX_NODES)
		return -1;
	return payload[0];
}

/* ---------------------------------------------------------- netd */

static const char *
type_name(uint32_t type)
{
	return type == HB_NEGO_TIMEOUT_MSG ? "NEGO_TIMEOUT" : "NEGO_APPROVE";
}

/* Fire and forget; `what` (ours to free) names it in a failure. */
static void
request_done(const Envelope *rep, void *arg)
{
	char *what = arg;

	if (rep == NULL)
		log_warnx("netd: %s: connection lost", what);
	else if (rep->status != 0)
		log_warnx("netd: %s: %s", what, rep->error[0] ? rep->error :
		    strerror(rep->status));
	else if (rep->payload_case == ENVELOPE__PAYLOAD_NET_RESULT &&
	    rep->net_result->status != 0)
		log_warnx("netd: %s: the handler answered %d", what,
		    rep->net_result->status);
	free(what);
}

static void
netd_request(struct hbd *h, Envelope *req, char *what)
{
	if (h->netd == NULL) {
		log_warnx("%s: netd is not connected", what);
		free(what);
		return;
	}
	if (ipc_request(h->netd, req, request_done, what) == -1) {
		log_warn("netd: %s", what);
		free(what);
	}
}

static void
nego_register(struct hbd *h, struct hb_region *r, int reg)
{
	static const uint32_t types[] = { HB_NEGO_TIMEOUT_MSG, HB_NEGO_APPROVE_MSG };
	Envelope req = ENVELOPE__INIT;
	Netd__NetRegister nr = NETD__NET_REGISTER__INIT;
	char *what;
	size_t i;

	for (i = 0; i < nitems(types); i++) {
		nr.type = types[i];
		nr.key = r->nego_key;
		nr.max_len = 1;
		req.type = reg ? MSG_TYPE__MSG_NETD_REGISTER : MSG_TYPE__MSG_NETD_UNREGISTER;
		req.payload_case = ENVELOPE__PAYLOAD_NET_REGISTER;
		req.net_register = &nr;
		xasprintf(&what, "region %s: %sregister %s (key 0x%08x)", r->name,
		    reg ? "" : "un", type_name(types[i]), r->nego_key);
		netd_request(h, &req, what);
	}
}

static void
nego_send(struct hb_region *r, uint32_t type, unsigned node)
{
	struct hbd *h = r->hbd;
	Envelope req = ENVELOPE__INIT;
	Netd__NetSend ns = NETD__NET_SEND__INIT;
	uint8_t self = (uint8_t)h->local_node;
	char *what;

	ns.node = node;
	ns.type = type;
	ns.key = r->nego_key;
	ns.payload.data = &self;
	ns.payload.len = 1;
	req.type = MSG_TYPE__MSG_NETD_SEND;
	req.payload_case = ENVELOPE__PAYLOAD_NET_SEND;
	req.net_send = &ns;
	xasprintf(&what, "region %s: sending %s to node %u", r->name,
	    type_name(type), node);
	netd_request(h, &req, what);
}

/* Regions whose handlers we hold: started, and neither failed nor stopping. */
static int
region_negotiates(const struct hb_region *r)
{
	return r->state == RS_PROBING || r->state == RS_STARTING ||
	    r->state == RS_STEADY;
}

static struct hb_region *
region_by_key(struct hbd *h, uint32_t key)
{
	struct hb_region *r;

	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->nego_key == key && region_negotiates(r))
			return r;
	return NULL;
}

/* o2hb_nego_timeout_handler and o2hb_nego_approve_handler. */
static void
on_message(struct ipc_conn *c, const Envelope *ev)
{
	const Netd__NetMessage *m = ev->net_message;
	struct hb_region *r = region_by_key(ipc_conn_arg(c), m->key);
	int node = hb_nego_sender(m->payload.data, m->payload.len);

	if (r == NULL) {
		log_warnx("%s from node %u for key 0x%08x: no such region here",
		    type_name(m->type), m->from, m->key);
		netd_answer(c, m->handle, -ENOENT, NULL, 0);
		return;
	}
	if (node == -1) {
		log_warnx("region %s: a malformed %s from node %u", r->name,
		    type_name(m->type), m->from);
		netd_answer(c, m->handle, -EINVAL, NULL, 0);
		return;
	}
	if (m->type == HB_NEGO_TIMEOUT_MSG) {
		log_info("region %s: node %d asks to negotiate the heartbeat "
		    "write timeout", r->name, node);
		r->nego_asked[node] = 1;
	} else {
		log_warnx("region %s: node %d approved the heartbeat write "
		    "timeout: every live node's write hangs", r->name, node);
		region_arm_timeouts(r);
		lease_approved(r);
	}
	netd_answer(c, m->handle, 0, NULL, 0);
}

static const struct ipc_handler netd_events[] = {
	{ MSG_TYPE__MSG_NETD_MESSAGE, ENVELOPE__PAYLOAD_NET_MESSAGE, on_message },
};

static void
netd_event(struct ipc_conn *c, const Envelope *ev)
{
	ipc_event_dispatch(c, ev, netd_events, nitems(netd_events), "netd");
}

static void	netd_gone_watch(struct hbd *);

static unsigned
netd_grace_ms(const struct hbd *h)
{
	unsigned ms = 2 * hbd_dead_ms(h);

	return ms > NETD_GRACE_MIN_MS ? ms : NETD_GRACE_MIN_MS;
}

/*
 * Without netd this node cannot talk to the others, but they still see
 * it heartbeat: they wait for it (its locks, its replies) and cannot
 * recover it. o2quo would fence a node that lost every link; netd, which
 * applies its rules, is the one that is gone, so a netd not back within
 * its grace (systemd restarts it well before) fences the node if anyone
 * depends on a region with other nodes in it.
 */
static void
netd_gone_check(evutil_socket_t fd, short ev, void *arg)
{
	struct hbd *h = arg;
	struct hb_region *r;
	char why[128];

	(void)fd;
	(void)ev;
	if (h->netd != NULL || h->fenced)
		return;
	snprintf(why, sizeof(why), "netd has been away for %u ms: the other nodes "
	    "see us heartbeat but cannot reach us", netd_grace_ms(h));
	TAILQ_FOREACH(r, &h->regions, entry)
		if (fence_if_used(h, r, USERS_WRITERS | USERS_LOCKS, why))
			return;
	/* nobody needed it yet: look again later */
	netd_gone_watch(h);
}

static void
netd_gone_watch(struct hbd *h)
{
	unsigned ms = netd_grace_ms(h);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(h->netd_gone_ev, &tv);
}

/* Our handlers went with the connection: a hung write fences unasked. */
static void
netd_down(struct ipc_conn *c, void *arg)
{
	struct hbd *h = arg;

	(void)c;
	log_warnx("without netd, a hung heartbeat write fences without "
	    "negotiation until it is back; if it is not back within %u ms, "
	    "this node fences", netd_grace_ms(h));
	h->netd = NULL;
	netd_gone_watch(h);
}

static void
netd_up(struct ipc_conn *c, void *arg)
{
	struct hbd *h = arg;
	struct hb_region *r;

	h->netd = c;
	evtimer_del(h->netd_gone_ev);
	TAILQ_FOREACH(r, &h->regions, entry)
		if (region_negotiates(r))
			nego_register(h, r, 1);
}

void
nego_start(struct hbd *h)
{
	if ((h->netd_gone_ev = evtimer_new(h->base, netd_gone_check, h)) == NULL)
		fatalx("evtimer_new");
	netd_gone_watch(h);
	ipc_redial(h->base, h->rundir, "netd", NETD_RETRY_MS, netd_event, netd_up,
	    netd_down, h);
}

/* ---------------------------------------------------------- regions */

/* o2hb's region number: the lowest one no other region holds (global mode). */
static unsigned
free_region_num(struct hb_region *r)
{
	uint8_t used[CC_MAX_REGIONS] = { 0 };
	struct hb_region *o;
	unsigned n;

	TAILQ_FOREACH(o, &r->hbd->regions, entry)
		if (o != r && o->num < CC_MAX_REGIONS)
			used[o->num] = 1;
	for (n = 0; n < CC_MAX_REGIONS && used[n]; n++)
		;
	return n;
}

void
nego_region_start(struct hb_region *r)
{
	struct hbd *h = r->hbd;

	r->num = h->global ? free_region_num(r) : 0;
	r->nego_key = hb_nego_key(r->num, r->name);
	if (h->netd != NULL)
		nego_register(h, r, 1);
}

void
nego_region_stop(struct hb_region *r)
{
	struct hbd *h = r->hbd;

	if (h->netd != NULL)
		nego_register(h, r, 0);
}

void
nego_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct hb_region *r = arg;
	struct hbd *h = r->hbd;
	unsigned n, master = 0, ms = hb_nego_timeout_ms(h->interval_ms,
	    h->dead_threshold);
	struct timeval tv;
	enum hb_nego_action act;
	int first = !r->nego_asked[h->local_node];

	(void)fd;
	(void)ev;
	if (r->state != RS_STEADY)
		return;
	act = hb_nego_decide(r->nego_asked, h->members.up, h->local_node,
	    r->last_ok, &master);
	if (first && (act == HB_NEGO_WAIT || act == HB_NEGO_APPROVE))
		log_warnx("region %s: node %u's heartbeat write to %s hung for %u "
		    "ms", r->name, h->local_node, r->dev, ms);
	switch (act) {
	case HB_NEGO_NONE:
		log_warnx("region %s: heartbeat I/O to %s failed: not negotiating "
		    "the write timeout", r->name, r->dev);
		break;
	case HB_NEGO_ASK:
		log_warnx("region %s: node %u's heartbeat write to %s hung for %u "
		    "ms; negotiating the timeout with node %u", r->name,
		    h->local_node, r->dev, ms, master);
		nego_send(r, HB_NEGO_TIMEOUT_MSG, master);
		break;
	case HB_NEGO_WAIT:
		ms = hb_nego_recheck_ms(h->interval_ms);
		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
		evtimer_add(r->nego_ev, &tv);
		break;
	case HB_NEGO_APPROVE:
		log_warnx("region %s: every live node's heartbeat write hangs, "
		    "%s may be down: approving the write timeout", r->name, r->dev);
		region_arm_timeouts(r);
		lease_approved(r);
		for (n = 0; n < HB_MAX_NODES; n++)
			if (h->members.up[n] && n != master)
				nego_send(r, HB_NEGO_APPROVE_MSG, n);
		break;
	}
}
