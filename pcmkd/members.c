/*
 * Node states from corosync's word (pcmkd.h gives the rule). Pure: the
 * callers feed it the quorum service's notifications and the group's
 * changes, then ask pm_decide() about each node.
 */
#include <string.h>

#include "pcmkd.h"

void
pm_quorum(struct pm_members *m, int quorate, uint64_t ring_seq, const uint32_t *ids, size_t n)
{
	size_t i;

	m->quorum_known = 1;
	m->quorate = quorate;
	m->ring_seq = ring_seq;
	memset(m->in_membership, 0, sizeof(m->in_membership));
	for (i = 0; i < n; i++)
		if (ids[i] < PM_MAX_NODES)
			m->in_membership[ids[i]] = 1;
}

int
pm_quorum_lost(const struct pm_members *m)
{
	return m->quorum_known && !m->quorate;
}

void
pm_cpg_ring(struct pm_members *m, uint64_t ring_seq)
{
	m->cpg_ring_known = 1;
	m->cpg_ring_seq = ring_seq;
}

void
pm_cpg_ring_forget(struct pm_members *m)
{
	m->cpg_ring_known = 0;
}

int
pm_rings_agree(const struct pm_members *m)
{
	return m->quorum_known && m->cpg_ring_known && m->cpg_ring_seq == m->ring_seq;
}

void
pm_group(struct pm_members *m, uint32_t id, enum pm_group_why why)
{
	if (id >= PM_MAX_NODES)
		return;
	switch (why) {
	case PM_JOINED:
		m->in_group[id] = 1;
		m->left_clean[id] = 0;
		break;
	case PM_PROC_DIED:
		/* still in corosync's membership: not a death by itself */
		m->in_group[id] = 0;
		break;
	case PM_LEFT:
		/* on purpose: nothing of it writes or holds locks any more */
		m->in_group[id] = 0;
		m->in_membership[id] = 0;
		m->left_clean[id] = 1;
		break;
	case PM_NODE_DIED:
		/*
		 * corosync has removed it, and the quorum notification that
		 * follows says so with whether we are still quorate: a
		 * minority must not take the others for dead in between.
		 */
		m->in_group[id] = 0;
		break;
	}
}

enum pm_change
pm_decide(struct pm_members *m, unsigned node, const char **why)
{
	/*
	 * A partition without quorum decides nothing: its writers have lost
	 * their lease, and whom it lost is for the quorate side to say. Nor
	 * does one whose quorum service and CPG have not both reported the
	 * same ring: half the news of a change is no change yet.
	 */
	if (node >= PM_MAX_NODES || !m->quorate || !pm_rings_agree(m))
		return PM_SAME;
	if (m->up[node]) {
		if (m->in_membership[node])
			return PM_SAME;
		m->up[node] = 0;
		if (m->left_clean[node]) {
			*why = "its pcmkd left the group: nothing of it writes or holds locks";
			return PM_DOWN;
		}
		*why = "gone from corosync's membership";
		return PM_FAILED;
	}
	if (!m->in_membership[node] || !m->in_group[node])
		return PM_SAME;
	m->up[node] = 1;
	m->gen[node] = m->ring_seq;
	*why = "in corosync's quorate membership, pcmkd in the group";
	return PM_UP;
}
