/*
 * What pcmkd does with corosync's word: node events in the order they
 * are decided, regions steady once this node is a member of a quorate
 * partition, and fencing when it may no longer write.
 *
 * Fencing here is this node's own: its registered disk writers are
 * killed, its lease revoked and it leaves the group (so that the others
 * see it go and recover what it held), until `o2ctl clear-fence` while
 * quorate. The fencing of other nodes, before they are reported down,
 * is fence.c's and fenceexec.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "util.h"

#include "pcmkd.h"

int
state_writing_allowed(const struct pcmkd *p)
{
	return !p->fenced && p->configured && p->m.quorate && p->in_group &&
	    p->local_node < PM_MAX_NODES && p->m.up[p->local_node];
}

static void
regions_update(struct pcmkd *p)
{
	struct pm_region *r;

	TAILQ_FOREACH(r, &p->regions, entry) {
		if (r->steady || !state_writing_allowed(p))
			continue;
		r->steady = 1;
		lease_renew_all(p);
		log_info("region %s steady: this node is a member of a quorate partition",
		    r->name);
		api_region_event(p, HBD__REGION_EVENT_KIND__REGION_STARTED, r->name,
		    "member of a quorate partition");
	}
}

/*
 * A node corosync lost without its pcmkd leaving the group: fenced
 * before it is reported down (dlmd and fsd recover it on that word),
 * unless the admin chose fencing = none.
 */
static void
node_failed(struct pcmkd *p, unsigned node, const char *why)
{
	if (p->fencing == CC_PCMK_FENCING_NONE) {
		log_warnx("node %u down: %s; not fenced (fencing = none)", node, why);
		runstate_save(p);
		api_node_event(p, 0, node, p->m.gen[node], why);
		return;
	}
	log_warnx("node %u failed: %s; its journal and locks wait until it is fenced", node,
	    why);
	fence_begin(&p->fences, node, time(NULL), now_ms());
	runstate_save(p);
}

void
state_update(struct pcmkd *p)
{
	const char *why = "";
	unsigned i;

	if (!p->configured)
		return;
	if (pm_quorum_lost(&p->m) && !LIST_EMPTY(&p->writers) && !p->fenced)
		state_fence(p, "this partition lost quorum");
	else if (pm_quorum_lost(&p->m))
		lease_revoke_all(p);
	for (i = 0; i < PM_MAX_NODES; i++) {
		if (!p->node_known[i])
			continue;
		if (fence_pending(&p->fences, i)) {
			if (!fence_take_confirmed(&p->fences, i, p->m.quorate))
				continue;
			runstate_save(p);
			log_warnx("node %u down: fenced", i);
			api_node_event(p, 0, i, p->m.gen[i],
			    "gone from corosync's membership, and fenced");
		}
		switch (pm_decide(&p->m, i, &why)) {
		case PM_UP:
			log_info("node %u up: %s", i, why);
			runstate_save(p);
			api_node_event(p, 1, i, p->m.gen[i], why);
			break;
		case PM_DOWN:
			log_warnx("node %u down: %s", i, why);
			runstate_save(p);
			api_node_event(p, 0, i, p->m.gen[i], why);
			break;
		case PM_FAILED:
			node_failed(p, i, why);
			break;
		case PM_SAME:
			break;
		}
	}
	regions_update(p);
	if (p->fencing != CC_PCMK_FENCING_NONE)
		fenceexec_update(p);
}

void
state_fence(struct pcmkd *p, const char *fmt, ...)
{
	struct pm_region *r;
	va_list ap;
	int left;

	if (p->fenced)
		return;
	va_start(ap, fmt);
	vsnprintf(p->fence_reason, sizeof(p->fence_reason), fmt, ap);
	va_end(ap);
	p->fenced = 1;
	log_err("fencing this node: %s", p->fence_reason);
	lease_revoke_all(p);
	if ((left = api_writers_kill(p)) > 0)
		log_err("fencing: %d disk writers may still be alive", left);
	TAILQ_FOREACH(r, &p->regions, entry)
		r->steady = 0;
	cs_leave(p);
	api_fenced_event(p, p->fence_reason);
}

int
state_clear_fence(struct pcmkd *p, char *err, size_t errlen)
{
	char was[sizeof(p->fence_reason)];

	if (!p->fenced) {
		snprintf(err, errlen, "this node is not fenced");
		return -1;
	}
	if (!p->m.quorate) {
		snprintf(err, errlen, "this partition has no quorum: the fence stays");
		return -1;
	}
	if (cs_rejoin(p, err, errlen) == -1)
		return -1;
	snprintf(was, sizeof(was), "%s", p->fence_reason);
	p->fenced = 0;
	p->fence_reason[0] = '\0';
	log_info("fence cleared (was: %s)", was);
	api_unfenced_event(p, was);
	state_update(p);
	return 0;
}
