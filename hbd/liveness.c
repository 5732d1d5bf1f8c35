/*
 * o2hb's liveness rules, as pure functions of the samples a region
 * reads: no I/O and no clock, so that tests can drive them with
 * synthetic samples.
 *
 * A dead node comes to life after O2HB_LIVE_THRESHOLD changed samples,
 * counted at any time while it is dead. A live node dies after
 * dead_threshold unchanged samples in a row, or at once when its
 * generation changes: a new incarnation means the old one died, and a
 * generation of 0 is a clean stop. A bad checksum from a live node is a
 * missed sample; from a dead one it means nothing (a fresh slot).
 */
#include <stdio.h>
#include <string.h>

#include "hbd.h"

void
hb_slot_seed(struct hb_slot *s, unsigned num, const struct hb_sample *sm)
{
	memset(s, 0, sizeof(*s));
	s->num = num;
	/* Only what decides "changed" next time, as o2hb_populate_slot_data. */
	s->last_seq = sm->seq;
	s->last_gen = sm->generation;
}

static void
come_alive(struct hb_slot *s, const struct hb_sample *sm, uint32_t our_dead_ms,
    struct hb_verdict *v)
{
	s->live = 1;
	s->equal = 0;
	s->dead_ms = sm->dead_ms;
	v->transition = HB_UP;
	v->why = HB_WHY_CHANGED_SAMPLES;
	v->generation = s->last_gen;
	/* The peers' dead time must match ours, or one side calls the other
	 * dead before it has fenced itself; o2hb only logs it. */
	if (sm->dead_ms != 0 && sm->dead_ms != our_dead_ms)
		v->dead_ms_mismatch = 1;
}

void
hb_slot_sample(struct hb_slot *s, const struct hb_sample *sm,
    unsigned dead_threshold, uint32_t our_dead_ms, uint64_t now_ms,
    struct hb_verdict *v)
{
	int gen_changed = 0;
	uint64_t old_gen = s->last_gen;

	memset(v, 0, sizeof(*v));
	if (!sm->crc_ok) {
		if (!s->live)
			return;	/* a freshly formatted slot, or junk: no news */
		if (!s->bad_crc_seen)
			v->bad_crc = 1;	/* logged once per run of bad blocks */
		s->bad_crc_seen = 1;
		s->equal++;
		s->missed_total++;
		goto live_check;
	}
	s->bad_crc_seen = 0;
	if (sm->seq != s->last_seq) {
		s->changed++;
		s->last_change_ms = now_ms;
	} else {
		s->equal++;
		if (s->live)
			s->missed_total++;
	}
	s->last_seq = sm->seq;
	if (sm->generation != s->last_gen) {
		gen_changed = 1;
		/* Down for now, but keep the changes that bring it back. */
		s->equal = 0;
	}
	s->last_gen = sm->generation;
	s->dead_ms = sm->dead_ms;

	/* Unlike o2hb, a clean-stop block never brings a node to life. */
	if (!s->live && s->changed >= HB_LIVE_THRESHOLD && sm->generation != 0) {
		come_alive(s, sm, our_dead_ms, v);
		return;
	}
	if (!s->live)
		return;
	if (gen_changed) {
		s->live = 0;
		v->transition = HB_DOWN;
		v->why = sm->generation == 0 ? HB_WHY_CLEAN_STOP : HB_WHY_NEW_GENERATION;
		v->generation = old_gen;
		/* The node is still writing: its changes count toward coming back. */
		return;
	}
live_check:
	if (s->equal >= dead_threshold) {
		s->live = 0;
		s->changed = 0;
		v->transition = HB_DOWN;
		v->why = HB_WHY_MISSED_SAMPLES;
		v->generation = s->last_gen;
		v->missed = s->equal;
		return;
	}
	if (sm->crc_ok && s->changed > 0) {
		s->changed = 0;
		s->equal = 0;
	}
}

const char *
hb_reason_text(const struct hb_verdict *v, char *buf, size_t len)
{
	switch (v->why) {
	case HB_WHY_CHANGED_SAMPLES:
		snprintf(buf, len, "%u changed samples", HB_LIVE_THRESHOLD);
		break;
	case HB_WHY_MISSED_SAMPLES:
		snprintf(buf, len, "%u missed samples", v->missed);
		break;
	case HB_WHY_NEW_GENERATION:
		snprintf(buf, len, "new generation");
		break;
	case HB_WHY_CLEAN_STOP:
		snprintf(buf, len, "clean stop");
		break;
	case HB_WHY_REGION_STOPPED:
		snprintf(buf, len, "region stopped");
		break;
	}
	return buf;
}

/*
 * hr_steady_iterations: O2HB_LIVE_THRESHOLD + 1 quiet iterations (twice
 * the threshold for the first region of global mode), each with no
 * error, our own slot as we left it and no membership change; give up
 * after three times as many iterations.
 */
void
hb_steady_init(struct hb_steady *st, int first_global)
{
	st->left = HB_LIVE_THRESHOLD * (first_global ? 2 : 1) + 1;
	st->unsteady_left = 3 * st->left;
}

enum hb_steady_state
hb_steady_step(struct hb_steady *st, int iteration_ok, int membership_change)
{
	if (st->left == 0)
		return HB_STEADY_ALREADY;
	if (iteration_ok && !membership_change && --st->left == 0)
		return HB_STEADY_REACHED;
	if (--st->unsteady_left == 0) {
		st->left = 0;
		return HB_STEADY_GAVE_UP;
	}
	return HB_STEADY_WAITING;
}

/*
 * Across regions: local mode, a node is up while it is live in any
 * region (o2hb's live slot lists); global mode, it is dead once it has
 * stopped on a majority of the running regions, so up while live in at
 * least half of them.
 */
int
hb_member_rule(unsigned live_in, unsigned nregions, int global)
{
	if (live_in == 0)
		return 0;
	if (!global)
		return 1;
	return 2 * live_in >= nregions;
}

enum hb_transition
hb_member_recheck(struct hb_membership *m, unsigned node, unsigned nregions, int global)
{
	int up = hb_member_rule(m->live_in[node], nregions, global);

	if (up == m->up[node])
		return HB_SAME;
	m->up[node] = (uint8_t)up;
	return up ? HB_UP : HB_DOWN;
}

enum hb_transition
hb_member_slot(struct hb_membership *m, unsigned node, int live, unsigned nregions,
    int global)
{
	if (live)
		m->live_in[node]++;
	else if (m->live_in[node] > 0)
		m->live_in[node]--;
	return hb_member_recheck(m, node, nregions, global);
}
