/*
 * Acting on quorum: the timer that runs quorum's "still up" checks when
 * they fall due, and the verdict. A node on the losing side fences
 * itself: hbd is asked to carry out the cluster's fence method (it owns
 * the disk writers), and netd stops every link at once so that this node
 * takes part in nothing more; subscribers hear it as a quorum event.
 * Only the admin's clear-fence, which hbd reports, lifts it.
 */
#include <stdio.h>

#include <event2/event.h>

#include "log.h"
#include "util.h"
#include "netd.h"

static void
arm(struct netd *nd)
{
	uint64_t due = quo_next_deadline(&nd->quo), now = now_ms();
	struct timeval tv = { 0, 0 };

	if (due == 0) {
		evtimer_del(nd->quo_timer);
		return;
	}
	if (due > now) {
		tv.tv_sec = (time_t)((due - now) / 1000);
		tv.tv_usec = (suseconds_t)((due - now) % 1000) * 1000;
	}
	evtimer_add(nd->quo_timer, &tv);
}

static void
fence_now(struct netd *nd)
{
	if (nd->fenced)
		return;
	nd->fenced = 1;
	log_err("fencing this node: %s", nd->quo.reason);
	api_publish_quorum(nd, nd->quo.reason);
	hb_fence(nd, nd->quo.reason);
	link_stop_all(nd, "this node is fenced");
}

void
fence_check(struct netd *nd, int fence)
{
	if (fence)
		fence_now(nd);
	if (nd->quo_timer != NULL)
		arm(nd);
}

/*
 * The admin cleared the fence (o2ctl clear-fence, through hbd): this node
 * takes part again, as a new incarnation that hbd brings up. Links come
 * back as hbd reports each peer heartbeating.
 */
void
fence_lift(struct netd *nd, const char *how)
{
	if (!nd->fenced)
		return;
	nd->fenced = 0;
	quo_unfence(&nd->quo);
	log_info("the fence is cleared (%s): listening and connecting again", how);
	api_publish_quorum(nd, "the fence is cleared");
	link_resume_all(nd);
	fence_check(nd, 0);
}

static void
quo_fire(evutil_socket_t fd, short ev, void *arg)
{
	struct netd *nd = arg;

	(void)fd;
	(void)ev;
	fence_check(nd, quo_tick(&nd->quo, now_ms()));
}

/* o2net's quorum delay: past the time peers need to see a dead node die. */
void
fence_start(struct netd *nd)
{
	unsigned delay = (nd->dead_threshold + 2) * nd->hb_interval_ms;

	quo_init(&nd->quo, nd->self, delay);
	nd->quo_timer = evtimer_new(nd->base, quo_fire, nd);
	if (nd->quo_timer == NULL)
		fatalx("out of memory for the quorum timer");
	log_info("quorum delay %u ms ((dead threshold %u + 2) x %u ms)", delay,
	    nd->dead_threshold, nd->hb_interval_ms);
}
