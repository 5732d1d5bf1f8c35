/*
 * pcmkd's node states from corosync's word (pcmkd/members.c): up once in
 * a quorate membership with its pcmkd in the group; down only once
 * corosync removed it or its pcmkd left on purpose; nothing decided
 * without quorum.
 */
#include <criterion/criterion.h>

#include "pcmkd/pcmkd.h"

static struct pm_members m;

static enum pm_change
decide(unsigned node)
{
	const char *why = NULL;
	enum pm_change c = pm_decide(&m, node, &why);

	cr_assert((c == PM_SAME) == (why == NULL), "a change says why, no change nothing");
	return c;
}

/* The quorum service's notification, and CPG's totem change of the same ring. */
static void
quorum(int quorate, uint64_t ring, const uint32_t *ids, size_t n)
{
	pm_quorum(&m, quorate, ring, ids, n);
	pm_cpg_ring(&m, ring);
}

static void
setup(void)
{
	memset(&m, 0, sizeof(m));
}

TestSuite(pcmkd_members, .init = setup);

Test(pcmkd_members, up_needs_quorum_membership_and_group)
{
	const uint32_t ids[] = { 1, 2, 3 };

	quorum(0, 4, ids, 3);
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_SAME, "not quorate: nobody comes up");
	quorum(1, 8, ids, 2);
	cr_assert_eq(decide(1), PM_SAME, "no pcmkd of node 1 in the group yet");
	cr_assert_eq(decide(2), PM_UP);
	cr_assert_eq(m.gen[2], 8, "the ring it came up in");
	cr_assert_eq(decide(2), PM_SAME, "told once");
	pm_group(&m, 3, PM_JOINED);
	cr_assert_eq(decide(3), PM_SAME, "node 3 is not in corosync's membership");
	quorum(1, 12, ids, 3);
	cr_assert_eq(decide(3), PM_UP);
}

Test(pcmkd_members, down_once_corosync_removes_it)
{
	const uint32_t all[] = { 1, 2 }, one[] = { 1 };

	quorum(1, 4, all, 2);
	pm_group(&m, 1, PM_JOINED);
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP);
	quorum(1, 8, one, 1);
	cr_assert_eq(decide(2), PM_FAILED, "gone without leaving the group: to be fenced");
	cr_assert_eq(decide(2), PM_SAME);
	cr_assert(!m.up[2]);
}

Test(pcmkd_members, the_quorum_service_says_who_died)
{
	const uint32_t all[] = { 1, 2, 3 }, one[] = { 1 }, two[] = { 1, 2 };

	quorum(1, 4, all, 3);
	pm_group(&m, 2, PM_JOINED);
	pm_group(&m, 3, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP);
	cr_assert_eq(decide(3), PM_UP);
	/* node 1 cut off: the group's NODEDOWN comes before it learns it lost quorum */
	pm_group(&m, 2, PM_NODE_DIED);
	cr_assert_eq(decide(2), PM_SAME, "not before the quorum service says so");
	quorum(0, 8, one, 1);
	cr_assert_eq(decide(2), PM_SAME, "and a minority decides nothing");
	/* on the majority's side */
	memset(&m, 0, sizeof(m));
	quorum(1, 4, all, 3);
	pm_group(&m, 3, PM_JOINED);
	cr_assert_eq(decide(3), PM_UP);
	pm_group(&m, 3, PM_NODE_DIED);
	quorum(1, 8, two, 2);
	cr_assert_eq(decide(3), PM_FAILED);
}

Test(pcmkd_members, a_dead_pcmkd_is_no_dead_node)
{
	const uint32_t all[] = { 1, 2 };

	quorum(1, 4, all, 2);
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP);
	pm_group(&m, 2, PM_PROC_DIED);
	cr_assert_eq(decide(2), PM_SAME, "its node is still in corosync's membership");
	quorum(1, 8, all, 2);
	cr_assert_eq(decide(2), PM_SAME);
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_SAME, "a restarted pcmkd goes on as the same node");
	cr_assert(m.up[2]);
}

Test(pcmkd_members, a_pcmkd_leaving_on_purpose_takes_its_node_down)
{
	const uint32_t all[] = { 1, 2 };

	quorum(1, 4, all, 2);
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP);
	pm_group(&m, 2, PM_LEFT);
	cr_assert_eq(decide(2), PM_DOWN, "left on purpose: nothing to fence");
	quorum(1, 8, all, 2);
	cr_assert_eq(decide(2), PM_SAME, "in corosync, but not in the group: stays down");
	pm_group(&m, 2, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP, "back in the group");
	cr_assert_eq(m.gen[2], 8);
	quorum(1, 12, (const uint32_t[]){ 1 }, 1);
	cr_assert_eq(decide(2), PM_FAILED, "back in the group, then lost: not clean any more");
}

Test(pcmkd_members, no_quorum_no_decision)
{
	const uint32_t all[] = { 1, 2, 3 }, one[] = { 1 };

	quorum(1, 4, all, 3);
	pm_group(&m, 2, PM_JOINED);
	pm_group(&m, 3, PM_JOINED);
	cr_assert_eq(decide(2), PM_UP);
	cr_assert_eq(decide(3), PM_UP);
	quorum(0, 8, one, 1);
	cr_assert_eq(decide(2), PM_SAME, "a minority does not say who died");
	cr_assert_eq(decide(3), PM_SAME);
	quorum(1, 12, all, 3);
	cr_assert_eq(decide(2), PM_SAME, "quorum back with both: no change");
}

Test(pcmkd_members, ids_past_ocfs2_node_numbers)
{
	const uint32_t ids[] = { 255, 1000 };

	quorum(1, 4, ids, 2);
	pm_group(&m, 1000, PM_JOINED);
	cr_assert_eq(decide(255), PM_SAME);
	cr_assert_eq(decide(1000), PM_SAME);
}

/*
 * A restarted pcmkd hears from nmd before corosync's first quorum
 * notification: not knowing yet is not a lost quorum (it used to revoke
 * the lease its predecessor left, and stop its node's fsd).
 */
Test(pcmkd_members, quorum_unknown_until_corosync_says)
{
	const uint32_t ids[] = { 1, 2, 3 };

	cr_assert_not(pm_quorum_lost(&m), "nothing heard yet: not lost");
	quorum(1, 4, ids, 3);
	cr_assert_not(pm_quorum_lost(&m));
	quorum(0, 8, ids, 1);
	cr_assert(pm_quorum_lost(&m));
}

Test(pcmkd_members, nothing_decided_until_quorum_and_cpg_agree_on_the_ring)
{
	const uint32_t all[] = { 1, 2, 3 }, two[] = { 1, 2 };

	quorum(1, 4, all, 3);
	pm_group(&m, 3, PM_JOINED);
	cr_assert_eq(decide(3), PM_UP);
	/* the quorum service reports ring 8 first */
	pm_quorum(&m, 1, 8, two, 2);
	cr_assert_eq(decide(3), PM_SAME, "CPG has not seen ring 8 yet");
	pm_cpg_ring(&m, 8);
	cr_assert_eq(decide(3), PM_FAILED);
	/* and the other way round: CPG first */
	pm_group(&m, 3, PM_JOINED);
	pm_cpg_ring(&m, 12);
	cr_assert_eq(decide(3), PM_SAME, "the quorum service is still at ring 8");
	pm_quorum(&m, 1, 12, all, 3);
	cr_assert_eq(decide(3), PM_UP);
	pm_cpg_ring_forget(&m);
	pm_quorum(&m, 1, 16, two, 2);
	cr_assert_eq(decide(3), PM_SAME, "a new CPG connection has said no ring yet");
	pm_cpg_ring(&m, 16);
	cr_assert_eq(decide(3), PM_FAILED);
}
