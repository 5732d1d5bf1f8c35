/*
 * hbd's view of the cluster: dlmd subscribes as ROLE_DLM, so it hears
 * of a death after netd has failed that node's messages and before the
 * filesystem does, and acknowledges each event once the domains have
 * acted on it (a death: its locks dropped here and recovery started).
 * Without hbd, nobody can join a domain (the live map is unknown) and a
 * death goes unnoticed until hbd is back; we keep trying.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "hbclient.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#define HBD_RETRY_MS	500

/*
 * Joining a domain before our heartbeat region is steady could miss a
 * node that is up but not yet seen, and two such nodes would each form
 * the domain alone. So a join waits until hbd has at least one region
 * and every one it knows of is steady (o2hb's region start waits so too).
 */
int
hbd_steady(const struct dlmd *dd)
{
	size_t i;

	if (!dd->hbd_up || dd->regions_unsteady)
		return 0;
	for (i = 0; i < CC_MAX_REGIONS; i++)
		if (dd->regions[i] != NULL)
			return 1;
	return 0;
}

static void
region_set(struct dlmd *dd, const char *name, int steady)
{
	size_t i, free_slot = CC_MAX_REGIONS;

	for (i = 0; i < CC_MAX_REGIONS; i++) {
		if (dd->regions[i] == NULL) {
			if (free_slot == CC_MAX_REGIONS)
				free_slot = i;
			continue;
		}
		if (strcmp(dd->regions[i], name) != 0)
			continue;
		if (!steady) {
			free(dd->regions[i]);
			dd->regions[i] = NULL;
		}
		return;
	}
	if (steady && free_slot < CC_MAX_REGIONS)
		dd->regions[free_slot] = xstrdup(name);
}

static void
node_down(struct dlmd *dd, unsigned node)
{
	struct dlm_domain *d, *next;

	dd->live[node] = 0;
	for (d = TAILQ_FIRST(&dd->domains); d != NULL; d = next) {
		next = TAILQ_NEXT(d, entry);
		domain_node_down(d, node);
	}
}

/*
 * The other nodes evict a fenced node and recover its locks; what this
 * dlmd holds is void from now on, and the deaths hbd reports next (its
 * regions stop) are not deaths to recover. Like o2cb's fence, which
 * resets the machine, the lock manager goes, and its clients with it
 * (a filesystem stops at once without its connection). A dlmd in no
 * domain holds nothing: it stays.
 */
static void
fenced(struct dlmd *dd)
{
	if (TAILQ_EMPTY(&dd->domains))
		return;
	log_warnx("this node's cluster locks are void: dlmd exits, to be started again "
	    "after o2ctl clear-fence");
	dd->exit_status = DLMD_EXIT_FENCED;
	event_base_loopbreak(dd->base);
}

static void
hblink_subscribed(const Envelope *rep, void *arg)
{
	struct dlmd *dd = arg;
	uint8_t live[DLM_MAX_NODES] = { 0 };
	const Hbd__HbStatus *st;
	size_t i;

	if (rep == NULL)
		return;
	if (rep->status != 0) {
		log_warnx("hbd refused our subscription: %s", rep->error);
		ipc_conn_close(dd->hbd);
		return;
	}
	dd->hbd_up = 1;
	/* Told on or off, whichever: a restarted hbd holds us to what we
	 * told the earlier one until we speak (hbd/holders.c). */
	dd->guarded = -1;
	log_info("subscribed to %s's node events", dd->membership);
	hbd_guard_update(dd);
	if (rep->payload_case != ENVELOPE__PAYLOAD_HB_STATUS)
		return;
	st = rep->hb_status;
	if (st->fenced) {
		log_warnx("hbd says this node is fenced: %s", st->fence_reason);
		fenced(dd);
		return;
	}
	dd->regions_unsteady = 0;
	for (i = 0; i < CC_MAX_REGIONS; i++) {
		free(dd->regions[i]);
		dd->regions[i] = NULL;
	}
	for (i = 0; i < st->n_regions; i++) {
		if (strcmp(st->regions[i]->state, "steady") == 0)
			region_set(dd, st->regions[i]->name, 1);
		else if (strcmp(st->regions[i]->state, "failed") != 0)
			dd->regions_unsteady = 1;
	}
	for (i = 0; i < st->n_live_nodes; i++)
		if (st->live_nodes[i] < DLM_MAX_NODES)
			live[st->live_nodes[i]] = 1;
	for (i = 0; i < DLM_MAX_NODES; i++) {
		if (live[i] == dd->live[i])
			continue;
		if (live[i])
			dd->live[i] = 1;
		else
			node_down(dd, (unsigned)i);
	}
}

static void
hblink_node_event(struct ipc_conn *c, const Envelope *ev)
{
	struct dlmd *dd = ipc_conn_arg(c);
	const Hbd__NodeEvent *ne = ev->node_event;

	if (ne->node >= DLM_MAX_NODES)
		return;
	if (ne->kind == HBD__NODE_EVENT_KIND__NODE_UP) {
		log_debug("hbd: node %u up", ne->node);
		dd->live[ne->node] = 1;
	} else {
		log_info("hbd: node %u down (%s)", ne->node, ne->reason);
		node_down(dd, ne->node);
	}
}

static void
hblink_region_event(struct ipc_conn *c, const Envelope *ev)
{
	struct dlmd *dd = ipc_conn_arg(c);
	int started = ev->region_event->kind == HBD__REGION_EVENT_KIND__REGION_STARTED;

	region_set(dd, ev->region_event->region, started);
	if (started)
		dd->regions_unsteady = 0;
}

static void
hblink_fenced(struct ipc_conn *c, const Envelope *ev)
{
	log_warnx("hbd fenced this node: %s", ev->fenced_event->reason);
	fenced(ipc_conn_arg(c));
}

/* The events we act on; an unfence is followed by the NODE_UPs that matter. */
static const struct ipc_handler hb_events[] = {
	{ MSG_TYPE__MSG_HBD_NODE_EVENT, ENVELOPE__PAYLOAD_NODE_EVENT, hblink_node_event },
	{ MSG_TYPE__MSG_HBD_REGION_EVENT, ENVELOPE__PAYLOAD_REGION_EVENT, hblink_region_event },
	{ MSG_TYPE__MSG_HBD_FENCED, ENVELOPE__PAYLOAD_FENCED_EVENT, hblink_fenced },
};

/* hbd hands an event to the filesystem only once we ack it (hb_dispatch). */
static void
hblink_event(struct ipc_conn *c, const Envelope *ev)
{
	hb_dispatch(c, ev, hb_events, nitems(hb_events));
}

/*
 * While this node holds cluster locks, hbd guards them: should we die,
 * it kills the disk writers and restarts the node's heartbeat, so that
 * the others recover what we held (MSG_HBD_GUARD).
 */
void
hbd_guard_update(struct dlmd *dd)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbGuard g = HBD__HB_GUARD__INIT;
	struct dlm_domain *d;
	int on = 0;

	TAILQ_FOREACH(d, &dd->domains, entry)
		if (d->state == DS_JOINED || d->state == DS_LEAVING)
			on = 1;
	if (dd->hbd == NULL || !dd->hbd_up || on == dd->guarded)
		return;
	g.on = on;
	g.what = "dlmd";
	req.type = MSG_TYPE__MSG_HBD_GUARD;
	req.payload_case = ENVELOPE__PAYLOAD_HB_GUARD;
	req.hb_guard = &g;
	if (ipc_request(dd->hbd, &req, NULL, NULL) == 0)
		dd->guarded = on;
}

/* We keep the last membership and reconcile it when hbd is back. */
static void
hblink_down(struct ipc_conn *c, void *arg)
{
	struct dlmd *dd = arg;

	(void)c;
	dd->hbd = NULL;
	dd->hbd_up = 0;
}

static void
hblink_up(struct ipc_conn *c, void *arg)
{
	struct dlmd *dd = arg;

	dd->hbd = c;
	hb_subscribe(c, HBD__ROLE__ROLE_DLM, hblink_subscribed, dd);
}

void
hbd_link_free(struct dlmd *dd)
{
	size_t i;

	for (i = 0; i < CC_MAX_REGIONS; i++) {
		free(dd->regions[i]);
		dd->regions[i] = NULL;
	}
}

void
hbd_link_start(struct dlmd *dd)
{
	ipc_redial(dd->base, dd->rundir, dd->membership, HBD_RETRY_MS, hblink_event, hblink_up,
	    hblink_down, dd);
}
