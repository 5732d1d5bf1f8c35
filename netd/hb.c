/*
 * hbd's view of the cluster: netd subscribes to hbd.sock as ROLE_NET,
 * the first role served (as o2net's heartbeat callbacks run first), and
 * acknowledges each node event once it has acted on it, so that dlmd
 * hears of a death only after netd has failed that node's requests.
 * netd serves its socket whether or not hbd is there yet; it keeps
 * trying, and each (re)subscription starts from the membership that
 * hbd's reply carries. hbd's fence stops every link until hbd reports
 * it cleared; a fence of our quorum that never reached hbd is asked for
 * again when hbd is back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "hbclient.h"
#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "util.h"

#define HBD_RETRY_MS	500

static void
node_event(struct netd *nd, unsigned num, int up)
{
	struct netd_node *n;

	if (num >= CC_MAX_NODES || (n = nd->nodes[num]) == NULL) {
		log_debug("hbd: node %u is not configured here, ignored", num);
		return;
	}
	if (up)
		link_node_up(nd, n);
	else
		link_node_down(nd, n);
}

/* Membership as of the subscription: anything we missed is reconciled. */
static void
on_subscribed(const Envelope *rep, void *arg)
{
	struct netd *nd = arg;
	uint8_t live[CC_MAX_NODES] = { 0 };
	const Hbd__HbStatus *st;
	size_t i;

	if (rep == NULL)
		return;
	if (rep->status != 0) {
		log_warnx("hbd refused our subscription: %s", rep->error);
		ipc_conn_close(nd->hbd);
		return;
	}
	nd->hbd_connected = 1;
	log_info("subscribed to %s's node events", nd->membership);
	if (rep->payload_case != ENVELOPE__PAYLOAD_HB_STATUS)
		return;
	st = rep->hb_status;
	if (st->fenced) {
		log_warnx("hbd reports this node fenced: %s", st->fence_reason);
		nd->hbd_fenced = 1;
		nd->fenced = 1;
		link_stop_all(nd, "hbd fenced this node");
	} else if (nd->fenced && nd->hbd_fenced) {
		/* hbd had it: the admin cleared it while we were away. */
		nd->hbd_fenced = 0;
		fence_lift(nd, "while hbd was away");
	} else if (nd->fenced) {
		/* Quorum's verdict never reached hbd: it still must fence. */
		hb_fence(nd, nd->quo.reason);
	}
	for (i = 0; i < st->n_live_nodes; i++)
		if (st->live_nodes[i] < CC_MAX_NODES)
			live[st->live_nodes[i]] = 1;
	for (i = 0; i < CC_MAX_NODES; i++) {
		if (nd->nodes[i] == NULL || nd->nodes[i]->hb_up == live[i])
			continue;
		node_event(nd, (unsigned)i, live[i]);
	}
}

static void
on_node_event(struct ipc_conn *c, const Envelope *ev)
{
	const Hbd__NodeEvent *ne = ev->node_event;
	struct netd *nd = ipc_conn_arg(c);

	log_debug("hbd: node %u %s (%s)", ne->node,
	    ne->kind == HBD__NODE_EVENT_KIND__NODE_UP ? "up" : "down", ne->reason);
	node_event(nd, ne->node, ne->kind == HBD__NODE_EVENT_KIND__NODE_UP);
}

static void
on_fenced(struct ipc_conn *c, const Envelope *ev)
{
	struct netd *nd = ipc_conn_arg(c);

	log_warnx("hbd fenced this node: %s", ev->fenced_event->reason);
	nd->hbd_fenced = 1;
	if (nd->fenced)
		return;		/* our quorum's verdict: links are stopped */
	nd->fenced = 1;
	link_stop_all(nd, "hbd fenced this node");
}

/* Delivered before hbd restarts its regions: NODE_UPs follow. */
static void
on_unfenced(struct ipc_conn *c, const Envelope *ev)
{
	struct netd *nd = ipc_conn_arg(c);
	char how[600];

	snprintf(how, sizeof(how), "was: %s", ev->unfenced_event->reason);
	nd->hbd_fenced = 0;
	fence_lift(nd, how);
}

/* The events we act on; hbd's others (regions) are not netd's business. */
static const struct ipc_handler hb_events[] = {
	{ MSG_TYPE__MSG_HBD_NODE_EVENT, ENVELOPE__PAYLOAD_NODE_EVENT, on_node_event },
	{ MSG_TYPE__MSG_HBD_FENCED, ENVELOPE__PAYLOAD_FENCED_EVENT, on_fenced },
	{ MSG_TYPE__MSG_HBD_UNFENCED, ENVELOPE__PAYLOAD_UNFENCED_EVENT, on_unfenced },
};

/* hbd hands an event to the next role only once we ack it (hb_dispatch). */
static void
hbd_event(struct ipc_conn *c, const Envelope *ev)
{
	hb_dispatch(c, ev, hb_events, nitems(hb_events));
}

/*
 * hbd gone: we keep the last membership (links stay as they are; a dead
 * node's link breaks by itself) and resubscribe when hbd is back.
 */
static void
hbd_down(struct ipc_conn *c, void *arg)
{
	struct netd *nd = arg;

	(void)c;
	nd->hbd = NULL;
	nd->hbd_connected = 0;
}

static void
hbd_up(struct ipc_conn *c, void *arg)
{
	struct netd *nd = arg;

	nd->hbd = c;
	hb_subscribe(c, HBD__ROLE__ROLE_NET, on_subscribed, nd);
}

void
hb_start(struct netd *nd)
{
	ipc_redial(nd->base, nd->rundir, nd->membership, HBD_RETRY_MS, hbd_event, hbd_up,
	    hbd_down, nd);
}

static void
on_fence_reply(const Envelope *rep, void *arg)
{
	struct netd *nd = arg;

	if (rep == NULL)
		log_warnx("hbd went away before carrying out the fence");
	else if (rep->status != 0)
		log_warnx("hbd did not carry out the fence (%s); netd has "
		    "stopped every link", rep->error[0] ? rep->error :
		    strerror(rep->status));
	else {
		log_info("hbd is fencing this node");
		nd->hbd_fenced = 1;
	}
}

/* The fence method (killing disk writers, or a reboot) is hbd's to run. */
void
hb_fence(struct netd *nd, const char *reason)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__FencedEvent fe = HBD__FENCED_EVENT__INIT;

	if (nd->hbd == NULL) {
		log_warnx("hbd is not connected: it cannot fence this node "
		    "until it is back; netd has stopped every link");
		return;
	}
	fe.reason = (char *)reason;
	req.type = MSG_TYPE__MSG_HBD_FENCE;
	req.payload_case = ENVELOPE__PAYLOAD_FENCED_EVENT;
	req.fenced_event = &fe;
	ipc_request(nd->hbd, &req, on_fence_reply, nd);
}
