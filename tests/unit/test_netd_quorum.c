/*
 * Quorum, driven synthetically: each case is a script of heartbeat and
 * link events and clock ticks, with the counts and the verdict expected
 * after every step (o2quo's rules, doc/cluster-stack.md, Quorum).
 */
#include <criterion/criterion.h>

#include <string.h>

#include "netd/netd.h"

#define DELAY	6600

enum op { HB_UP, HB_DOWN, CONN_UP, CONN_ERR, TICK, END };

struct step {
	enum op		op;
	unsigned	node;	/* for TICK: the time, ms */
	unsigned	h, c, holds;
	int		fenced;
};

/* Node numbers present, all heartbeating and connected to self. */
static void
cluster_up(struct quorum *q, unsigned self, const unsigned *nodes, size_t n)
{
	size_t i;

	quo_init(q, self, DELAY);
	for (i = 0; i < n; i++) {
		cr_assert_eq(quo_hb_up(q, nodes[i]), 0);
		if (nodes[i] != self)
			cr_assert_eq(quo_conn_up(q, nodes[i]), 0);
	}
	cr_assert_eq(q->heartbeating, n);
	cr_assert_eq(q->connected, n);
	cr_assert_eq(q->holds, 0);
}

static void
run(struct quorum *q, const struct step *s, const char *name)
{
	int i, fence = 0;

	for (i = 0; s[i].op != END; i++) {
		switch (s[i].op) {
		case HB_UP: fence = quo_hb_up(q, s[i].node); break;
		case HB_DOWN: fence = quo_hb_down(q, s[i].node); break;
		case CONN_UP: fence = quo_conn_up(q, s[i].node); break;
		case CONN_ERR: fence = quo_conn_err(q, s[i].node, 0); break;
		case TICK: fence = quo_tick(q, s[i].node); break;
		default: break;
		}
		cr_assert_eq(q->heartbeating, s[i].h, "%s step %d: H %u", name, i, q->heartbeating);
		cr_assert_eq(q->connected, s[i].c, "%s step %d: C %u", name, i, q->connected);
		cr_assert_eq(q->holds, s[i].holds, "%s step %d: holds %u", name, i, q->holds);
		cr_assert_eq(q->fenced, s[i].fenced, "%s step %d: fenced %d (%s)", name,
		    i, q->fenced, q->reason);
		cr_assert_eq(fence, s[i].fenced && (i == 0 || !s[i - 1].fenced),
		    "%s step %d: the verdict is reported once", name, i);
	}
}

static const unsigned three[] = { 1, 2, 3 }, four[] = { 1, 2, 3, 4 }, two[] = { 1, 2 };

Test(quorum, three_nodes_isolated_node_fences_after_the_delay)
{
	static const struct step s[] = {
		{ CONN_ERR, 2, 3, 2, 1, 0 },
		{ CONN_ERR, 3, 3, 1, 2, 0 },
		{ TICK, DELAY - 1, 3, 1, 2, 0 },	/* not before the delay */
		{ TICK, DELAY, 3, 1, 0, 1 },		/* 1 of 3: no majority */
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "isolated");
	cr_assert(strstr(q.reason, "connected to 1 of 3 heartbeating nodes, a majority needs 2") != NULL,
	    "%s", q.reason);
}

Test(quorum, three_nodes_majority_keeps_going)
{
	static const struct step s[] = {
		{ CONN_ERR, 3, 3, 2, 1, 0 },
		{ TICK, DELAY, 3, 2, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "majority");
}

Test(quorum, four_nodes_split_2_2_lowest_side_survives)
{
	static const struct step lose[] = {	/* node 3, with 4, without 1 */
		{ CONN_ERR, 1, 4, 3, 1, 0 },
		{ CONN_ERR, 2, 4, 2, 2, 0 },
		{ TICK, DELAY, 4, 2, 0, 1 },
		{ END, 0, 0, 0, 0, 0 },
	};
	static const struct step win[] = {	/* node 2, with 1 */
		{ CONN_ERR, 3, 4, 3, 1, 0 },
		{ CONN_ERR, 4, 4, 2, 2, 0 },
		{ TICK, DELAY, 4, 2, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 3, four, 4);
	run(&q, lose, "2|2 without node 1");
	cr_assert(strstr(q.reason, "without the lowest-numbered one (node 1)") != NULL, "%s", q.reason);
	cluster_up(&q, 2, four, 4);
	run(&q, win, "2|2 with node 1");
}

Test(quorum, four_nodes_split_3_1)
{
	static const struct step alone[] = {
		{ CONN_ERR, 1, 4, 3, 1, 0 },
		{ CONN_ERR, 2, 4, 2, 2, 0 },
		{ CONN_ERR, 3, 4, 1, 3, 0 },
		{ TICK, DELAY, 4, 1, 0, 1 },
		{ END, 0, 0, 0, 0, 0 },
	};
	static const struct step three_side[] = {
		{ CONN_ERR, 4, 4, 3, 1, 0 },
		{ TICK, DELAY, 4, 3, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 4, four, 4);
	run(&q, alone, "3|1 alone");
	cluster_up(&q, 1, four, 4);
	run(&q, three_side, "3|1 three");
}

Test(quorum, two_nodes_higher_number_fences)
{
	static const struct step hi[] = {
		{ CONN_ERR, 1, 2, 1, 1, 0 },
		{ TICK, DELAY, 2, 1, 0, 1 },
		{ END, 0, 0, 0, 0, 0 },
	};
	static const struct step lo[] = {
		{ CONN_ERR, 2, 2, 1, 1, 0 },
		{ TICK, DELAY, 2, 1, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 2, two, 2);
	run(&q, hi, "2 nodes, node 2");
	cluster_up(&q, 1, two, 2);
	run(&q, lo, "2 nodes, node 1");
}

Test(quorum, a_flap_shorter_than_the_delay_decides_nothing)
{
	static const struct step s[] = {
		{ CONN_ERR, 2, 3, 2, 1, 0 },
		{ CONN_ERR, 3, 3, 1, 2, 0 },
		{ CONN_UP, 2, 3, 2, 1, 0 },
		{ CONN_UP, 3, 3, 3, 0, 0 },
		{ TICK, DELAY, 3, 3, 0, 0 },
		{ TICK, 10 * DELAY, 3, 3, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "flap");
	cr_assert_eq(q.pending, 0);
	cr_assert_eq(quo_next_deadline(&q), 0);
}

Test(quorum, a_dead_node_is_no_partition)
{
	static const struct step s[] = {
		{ CONN_ERR, 3, 3, 2, 1, 0 },
		{ HB_DOWN, 3, 2, 2, 0, 0 },	/* its heartbeat stopped: released */
		{ CONN_ERR, 2, 2, 1, 1, 0 },
		{ HB_DOWN, 2, 1, 1, 0, 0 },
		{ TICK, DELAY, 1, 1, 0, 0 },	/* alone: nothing to lose to */
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "deaths");
}

/*
 * Two nodes; we stop heartbeating (an unmount) and start again at once
 * (a mount), before the link to node 1 is back: the links lost with the
 * heartbeats ask nothing, so the new heartbeat is held, not judged.
 */
Test(quorum, a_heartbeat_restarted_before_its_link_is_not_judged_by_the_old_link)
{
	static const struct step s[] = {
		{ HB_DOWN, 1, 1, 2, 0, 0 },	/* our region stops: so does node 1 for us */
		{ HB_DOWN, 2, 0, 2, 0, 0 },
		{ CONN_ERR, 1, 0, 1, 0, 0 },	/* and the link goes with it */
		{ HB_UP, 2, 1, 1, 0, 0 },	/* our region starts again */
		{ HB_UP, 1, 2, 1, 1, 0 },	/* node 1 without a link yet: held */
		{ TICK, DELAY, 2, 1, 1, 0 },
		{ CONN_UP, 1, 2, 2, 0, 0 },
		{ TICK, 10 * DELAY, 2, 2, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 2, two, 2);
	run(&q, s, "restarted");
	cr_assert_eq(quo_next_deadline(&q), 0);
}

/* A node heartbeating without a link holds the decision until it settles. */
Test(quorum, holds_defer_the_decision)
{
	static const struct step s[] = {
		{ CONN_ERR, 2, 3, 2, 1, 0 },
		{ CONN_ERR, 3, 3, 1, 2, 0 },
		{ HB_UP, 4, 4, 1, 3, 0 },	/* new node, no link yet: held */
		{ TICK, DELAY, 4, 1, 1, 0 },	/* 2 and 3 released; 4 still held */
		{ HB_DOWN, 4, 3, 1, 0, 1 },	/* last hold gone: the pending decision */
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "holds");
	cr_assert(strstr(q.reason, "connected to 1 of 3") != NULL, "%s", q.reason);
}

Test(quorum, a_link_to_a_node_not_heartbeating_is_held)
{
	static const struct step s[] = {
		{ CONN_UP, 4, 3, 4, 1, 0 },
		{ HB_UP, 4, 4, 4, 0, 0 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	run(&q, s, "conn before hb");
}

Test(quorum, not_heartbeating_ourselves_decides_nothing)
{
	struct quorum q;

	quo_init(&q, 1, DELAY);
	quo_hb_up(&q, 2);
	quo_hb_up(&q, 3);
	quo_conn_up(&q, 2);
	quo_conn_up(&q, 3);
	quo_conn_err(&q, 2, 0);
	quo_conn_err(&q, 3, 0);
	cr_assert_eq(quo_next_deadline(&q), DELAY);
	cr_assert_eq(quo_tick(&q, DELAY), 0);
	cr_assert_eq(q.fenced, 0);
}

Test(quorum, the_delay_counts_from_the_first_loss)
{
	struct quorum q;

	cluster_up(&q, 1, three, 3);
	quo_conn_err(&q, 2, 1000);
	quo_conn_err(&q, 3, 3000);
	cr_assert_eq(quo_next_deadline(&q), 1000 + DELAY);
	cr_assert_eq(quo_tick(&q, 1000 + DELAY), 0, "node 3 still held");
	cr_assert_eq(q.holds, 1);
	cr_assert_eq(quo_next_deadline(&q), 3000 + DELAY);
	cr_assert_eq(quo_tick(&q, 3000 + DELAY), 1);
}

/*
 * 2|2 fences node 3; its links stop (a check scheduled for node 4) and
 * hbd stops its heartbeat. Once the fence is cleared nothing of that
 * verdict is left, and the new incarnation is judged again.
 */
Test(quorum, a_cleared_fence_leaves_nothing_behind_and_decides_again)
{
	static const struct step fenced[] = {
		{ CONN_ERR, 1, 4, 3, 1, 0 },
		{ CONN_ERR, 2, 4, 2, 2, 0 },
		{ TICK, DELAY, 4, 2, 0, 1 },	/* half, without node 1 */
		{ CONN_ERR, 4, 4, 1, 1, 1 },	/* fenced: every link stops */
		{ HB_DOWN, 1, 3, 1, 1, 1 },
		{ HB_DOWN, 2, 2, 1, 1, 1 },
		{ HB_DOWN, 4, 1, 1, 0, 1 },
		{ HB_DOWN, 3, 0, 1, 0, 1 },
		{ END, 0, 0, 0, 0, 0 },
	};
	static const struct step again[] = {
		{ HB_UP, 1, 1, 1, 1, 0 },
		{ HB_UP, 2, 2, 1, 2, 0 },
		{ HB_UP, 3, 3, 1, 2, 0 },
		{ HB_UP, 4, 4, 1, 3, 0 },
		{ CONN_UP, 1, 4, 2, 2, 0 },
		{ CONN_UP, 2, 4, 3, 1, 0 },
		{ TICK, 3 * DELAY, 4, 3, 1, 0 },	/* node 4's old check is gone: still held */
		{ CONN_UP, 4, 4, 4, 0, 0 },
		{ CONN_ERR, 1, 4, 3, 1, 0 },
		{ CONN_ERR, 2, 4, 2, 2, 0 },
		{ TICK, 4 * DELAY, 4, 2, 0, 1 },
		{ END, 0, 0, 0, 0, 0 },
	};
	struct quorum q;

	cluster_up(&q, 3, four, 4);
	run(&q, fenced, "fenced");
	cr_assert_eq(quo_next_deadline(&q), 0, "node 4's check went with its heartbeat");
	quo_unfence(&q);
	cr_assert_eq(q.fenced, 0);
	cr_assert_eq(q.pending, 0);
	cr_assert_str_empty(q.reason);
	cr_assert_eq(quo_next_deadline(&q), 0);
	run(&q, again, "again");
}
