/*
 * Liveness of an established link, as modern o2net keeps it: every
 * frame received postpones both timers; after keepalive_delay_ms of
 * receive silence we send one keepalive (the peer answers); after
 * idle_timeout_ms of silence the link counts as lost for quorum, but the
 * socket stays, and traffic that resumes before quorum decides makes it
 * count again. Once the link has been silent for the quorum delay
 * beyond that too, quorum has decided (o2quo's still-up check) and this
 * node runs on: the link is closed, so that its requests fail with
 * EHOSTDOWN instead of waiting for a peer that may never answer on it
 * (a partition that leaves both sides in quorum), and the connector
 * dials again. A connection still in its handshake after idle_timeout_ms
 * is closed: a peer that cannot finish a handshake in the time a live
 * link may stay silent is dead or hostile (a slow-loris).
 */
#include <stdio.h>
#include <time.h>

#include <event2/event.h>

#include "log.h"
#include "util.h"
#include "netd.h"

static void
ms_tv(unsigned ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (suseconds_t)(ms % 1000) * 1000;
}

static void
ka_fire(evutil_socket_t fd, short ev, void *arg)
{
	struct link *l = arg;
	struct wire_hdr h = { .magic = WIRE_KA_REQ };

	(void)fd;
	(void)ev;
	link_send_frame(l, &h, NULL, 0);
}

static void
idle_fire(evutil_socket_t fd, short ev, void *arg)
{
	struct link *l = arg;
	struct netd *nd = l->nd;
	uint64_t idle = now_ms() - l->last_rx_ms;
	uint64_t give_up = (uint64_t)nd->idle_timeout_ms + nd->quo.delay_ms;
	struct timeval tv;
	char why[160];

	(void)fd;
	(void)ev;
	if (idle >= give_up) {
		snprintf(why, sizeof(why), "idle for %.3f secs, past the idle "
		    "timeout and the quorum delay (%u ms)", (double)idle / 1000.0,
		    nd->quo.delay_ms);
		link_close(l, why);
		return;
	}
	log_warnx("connection to node %u (%s) has been idle for %.3f secs",
	    l->node->num, l->node->name, (double)idle / 1000.0);
	if (!l->timed_out) {
		l->timed_out = 1;
		api_publish_link(nd, l->node->num, NETD__LINK_STATE__LINK_IDLE,
		    "idle timeout");
		fence_check(nd, quo_conn_err(&nd->quo, l->node->num, now_ms()));
		if (l->closing)
			return;		/* fenced: every link went */
	}
	ms_tv(give_up - idle < nd->idle_timeout_ms ? (unsigned)(give_up - idle) :
	    nd->idle_timeout_ms, &tv);
	evtimer_add(l->idle_timer, &tv);
}

static void
hs_fire(evutil_socket_t fd, short ev, void *arg)
{
	struct link *l = arg;
	char why[128];

	(void)fd;
	(void)ev;
	snprintf(why, sizeof(why), "no complete handshake within %u ms",
	    l->nd->idle_timeout_ms);
	link_log_failure(l, "node %u: %s, closing the link", l->node->num, why);
	link_close(l, why);
}

void
ka_hs_start(struct link *l)
{
	struct timeval tv;

	if (l->hs_timer == NULL &&
	    (l->hs_timer = evtimer_new(l->nd->base, hs_fire, l)) == NULL)
		fatalx("out of memory for a timer");
	ms_tv(l->nd->idle_timeout_ms, &tv);
	evtimer_add(l->hs_timer, &tv);
}

void
ka_link_start(struct link *l)
{
	if (l->hs_timer != NULL) {
		event_free(l->hs_timer);
		l->hs_timer = NULL;
	}
	l->ka_timer = evtimer_new(l->nd->base, ka_fire, l);
	l->idle_timer = evtimer_new(l->nd->base, idle_fire, l);
	if (l->ka_timer == NULL || l->idle_timer == NULL)
		fatalx("out of memory for link timers");
	ka_link_rx(l);
}

void
ka_link_rx(struct link *l)
{
	struct netd *nd = l->nd;
	struct timeval tv;

	l->last_rx_ms = now_ms();
	if (l->state != LS_UP || l->idle_timer == NULL)
		return;
	ms_tv(nd->keepalive_delay_ms, &tv);
	evtimer_add(l->ka_timer, &tv);
	ms_tv(nd->idle_timeout_ms, &tv);
	evtimer_add(l->idle_timer, &tv);
	if (l->timed_out) {
		l->timed_out = 0;
		log_info("connection to node %u (%s) is alive again",
		    l->node->num, l->node->name);
		api_publish_link(nd, l->node->num, NETD__LINK_STATE__LINK_UP,
		    "traffic resumed");
		fence_check(nd, quo_conn_up(&nd->quo, l->node->num));
	}
}

void
ka_link_free(struct link *l)
{
	if (l->hs_timer != NULL)
		event_free(l->hs_timer);
	if (l->ka_timer != NULL)
		event_free(l->ka_timer);
	if (l->idle_timer != NULL)
		event_free(l->idle_timer);
	l->hs_timer = l->ka_timer = l->idle_timer = NULL;
}

