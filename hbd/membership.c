/*
 * Node membership across regions. Each region decides per slot; a node
 * is up cluster-wide by hb_member_rule (any region in local mode, at
 * least half of the running regions in global mode), like o2hb's live
 * slot lists: the first region to see a node fires NODE_UP, the last to
 * lose it NODE_DOWN. While a node is up it is pinned in nmd, so that
 * its item cannot be removed under us, as configfs depends pin it.
 */
#include <stdio.h>

#include "hbd.h"
#include "log.h"

static void
member_changed(struct hbd *h, unsigned node, enum hb_transition t,
    const char *region, const char *reason, uint64_t gen, uint64_t time_ms,
    uint64_t last_change_ms)
{
	const char *name = h->node_names[node] != NULL ? h->node_names[node] : "?";

	if (t == HB_UP) {
		h->member_gen[node] = gen;
		log_info("node %u (%s) is up, generation 0x%llx (region %s: %s)",
		    node, name, (unsigned long long)gen, region, reason);
	} else {
		log_info("node %u (%s) is down, generation 0x%llx (region %s: %s)",
		    node, name, (unsigned long long)h->member_gen[node], region, reason);
		gen = h->member_gen[node];
	}
	nmd_pin(h, node, t == HB_UP);
	api_node_event(h, t == HB_UP, node, gen, region, reason, time_ms,
	    last_change_ms);
}

void
member_slot(struct hbd *h, struct hb_region *r, unsigned node, int live,
    const struct hb_verdict *v, uint64_t time_ms)
{
	enum hb_transition t;
	char reason[64];

	lease_set_live(r, node, live ? v->generation : 0);
	t = hb_member_slot(&h->members, node, live, region_nrunning(h), h->global);
	if (t == HB_SAME) {
		log_debug("node %u %s region %s (%s); still %s elsewhere", node,
		    live ? "joined" : "left", r->name, hb_reason_text(v, reason,
		    sizeof(reason)), h->members.up[node] ? "up" : "down");
		return;
	}
	member_changed(h, node, t, r->name, hb_reason_text(v, reason, sizeof(reason)),
	    v->generation, time_ms, r->slots[node].last_change_ms);
}

/* The number of running regions changed: global mode's majority moves. */
void
member_recheck_all(struct hbd *h, struct hb_region *r)
{
	unsigned node, n = region_nrunning(h);
	enum hb_transition t;
	char reason[64];

	for (node = 0; node < HB_MAX_NODES; node++) {
		if (h->members.live_in[node] == 0 && !h->members.up[node])
			continue;
		t = hb_member_recheck(&h->members, node, n, h->global);
		if (t == HB_SAME)
			continue;
		snprintf(reason, sizeof(reason), "live in %u of %u regions",
		    h->members.live_in[node], n);
		member_changed(h, node, t, r != NULL ? r->name : "", reason,
		    h->member_gen[node], wall_ms(), 0);
	}
}

/*
 * Whether stopping region r would take a live node out of the
 * membership: then this node loses sight of it, though it lives.
 */
int
member_region_needed(struct hbd *h, struct hb_region *r)
{
	unsigned node, n = region_nrunning(h);

	for (node = 0; node < HB_MAX_NODES; node++) {
		if (node == h->local_node || !r->slots[node].live || !h->members.up[node])
			continue;
		if (!hb_member_rule(h->members.live_in[node] - 1, n > 0 ? n - 1 : 0,
		    h->global))
			return 1;
	}
	return 0;
}
