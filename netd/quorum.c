/*
 * Quorum, with o2quo's rules (fs/ocfs2/cluster/quorum.c): who keeps
 * running when the network splits the cluster while the disk still
 * shows everybody heartbeating.
 *
 * H counts heartbeating nodes and C connected ones (ourselves included:
 * listening counts as connected to self). While a node's heartbeat and
 * link disagree it is "held", and no decision is taken while any node
 * is held: a node just coming up, or one whose link broke, gets time to
 * settle. A lost link to a heartbeating node schedules a "still up"
 * check `delay_ms` later (its heartbeat stopping cancels it),
 * which releases the hold and asks for a decision: odd H needs a
 * majority connected; even H needs half, and with exactly half, the
 * lowest-numbered heartbeating node must be on our side. A link that
 * comes back before the check cancels it, so a short flap fences nobody.
 *
 * Pure state: the caller passes the time in and acts on the result
 * (fence.c), so the unit tests drive every rule synthetically.
 */
#include <stdio.h>
#include <string.h>

#include "netd.h"

void
quo_init(struct quorum *q, unsigned self, unsigned delay_ms)
{
	memset(q, 0, sizeof(*q));
	q->self = self;
	q->delay_ms = delay_ms;
	/* We listen: connected to ourselves (o2net_start_listening). */
	q->conn[self] = 1;
	q->connected = 1;
}

static int
decide(struct quorum *q)
{
	unsigned lowest, need, h = q->heartbeating, c = q->connected;

	if (q->fenced)
		return 0;
	/* Not heartbeating ourselves, or alone: nothing to lose to. */
	if (!q->hb[q->self] || h == 1)
		return 0;
	for (lowest = 0; lowest < QUO_MAX_NODES && !q->hb[lowest]; lowest++)
		;
	if (h & 1) {
		need = (h + 1) / 2;
		if (c < need) {
			snprintf(q->reason, sizeof(q->reason), "quorum lost: "
			    "connected to %u of %u heartbeating nodes, a majority "
			    "needs %u", c, h, need);
			q->fenced = 1;
		}
	} else {
		need = h / 2;
		if (c < need) {
			snprintf(q->reason, sizeof(q->reason), "quorum lost: "
			    "connected to %u of %u heartbeating nodes, half needs "
			    "%u", c, h, need);
			q->fenced = 1;
		} else if (c == need && !q->conn[lowest]) {
			snprintf(q->reason, sizeof(q->reason), "quorum lost: "
			    "connected to half (%u of %u) of the heartbeating "
			    "nodes, without the lowest-numbered one (node %u)",
			    c, h, lowest);
			q->fenced = 1;
		}
	}
	return q->fenced;
}

static void
set_hold(struct quorum *q, unsigned n)
{
	if (!q->hold[n]) {
		q->hold[n] = 1;
		q->holds++;
	}
}

/* The last hold going while a decision is pending takes it. */
static int
clear_hold(struct quorum *q, unsigned n)
{
	if (!q->hold[n])
		return 0;
	q->hold[n] = 0;
	if (--q->holds == 0 && q->pending) {
		q->pending = 0;
		return decide(q);
	}
	return 0;
}

int
quo_hb_up(struct quorum *q, unsigned n)
{
	if (n >= QUO_MAX_NODES || q->hb[n])
		return 0;
	q->hb[n] = 1;
	q->heartbeating++;
	if (!q->conn[n]) {
		set_hold(q, n);
		return 0;
	}
	return clear_hold(q, n);
}

/*
 * As o2net_disconnect_node: a node that stops heartbeating has no
 * still-up check to come. Left, it would judge the node's next
 * heartbeat by a link lost before it (one not back yet would fence us).
 */
int
quo_hb_down(struct quorum *q, unsigned n)
{
	if (n >= QUO_MAX_NODES || !q->hb[n])
		return 0;
	q->hb[n] = 0;
	q->heartbeating--;
	q->still_up_at[n] = 0;
	return clear_hold(q, n);
}

int
quo_conn_up(struct quorum *q, unsigned n)
{
	if (n >= QUO_MAX_NODES || q->conn[n])
		return 0;
	q->conn[n] = 1;
	q->connected++;
	/* Back before the check: the flap decides nothing. */
	q->still_up_at[n] = 0;
	if (!q->hb[n]) {
		set_hold(q, n);
		return 0;
	}
	return clear_hold(q, n);
}

int
quo_conn_err(struct quorum *q, unsigned n, uint64_t now)
{
	if (n >= QUO_MAX_NODES || !q->conn[n])
		return 0;
	q->conn[n] = 0;
	q->connected--;
	/* the link that goes with a heartbeat stopping asks nothing */
	if (!q->hb[n])
		return 0;
	set_hold(q, n);
	if (q->still_up_at[n] == 0)
		q->still_up_at[n] = now + q->delay_ms;
	return 0;
}

/* o2quo_hb_still_up: the node still heartbeats a quorum delay later. */
static int
still_up(struct quorum *q, unsigned n)
{
	if (!q->hb[n])
		return 0;
	q->pending = 1;
	return clear_hold(q, n);
}

int
quo_tick(struct quorum *q, uint64_t now)
{
	unsigned n;
	int fence = 0;

	for (n = 0; n < QUO_MAX_NODES; n++) {
		if (q->still_up_at[n] == 0 || q->still_up_at[n] > now)
			continue;
		q->still_up_at[n] = 0;
		fence |= still_up(q, n);
	}
	return fence;
}

uint64_t
quo_next_deadline(const struct quorum *q)
{
	uint64_t next = 0;
	unsigned n;

	for (n = 0; n < QUO_MAX_NODES; n++)
		if (q->still_up_at[n] != 0 && (next == 0 || q->still_up_at[n] < next))
			next = q->still_up_at[n];
	return next;
}

/*
 * The fence was cleared: its verdict goes, and so do a pending decision
 * and the still-up checks that the fenced incarnation's lost links
 * scheduled, which would otherwise judge the new one by them.
 */
void
quo_unfence(struct quorum *q)
{
	q->fenced = 0;
	q->pending = 0;
	q->reason[0] = '\0';
	memset(q->still_up_at, 0, sizeof(q->still_up_at));
}
