/*
 * o2hb's liveness rules driven by synthetic samples: up after two
 * changes, dead after dead_threshold unchanged samples, a new generation
 * kills the old incarnation at once, a clean stop (generation 0) too,
 * bad checksums are missed samples, steady state, and membership across
 * regions in local and global mode.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "hbd/hbd.h"

#define T	10	/* dead_threshold */
#define DEAD_MS	2000

struct writer {
	uint64_t	seq;
	uint64_t	gen;
};

static struct hb_sample
write_one(struct writer *w)
{
	struct hb_sample s = { .crc_ok = 1, .seq = ++w->seq, .generation = w->gen,
	    .dead_ms = DEAD_MS };

	return s;
}

static struct hb_sample
stale(const struct writer *w)
{
	struct hb_sample s = { .crc_ok = 1, .seq = w->seq, .generation = w->gen,
	    .dead_ms = DEAD_MS };

	return s;
}

static enum hb_transition
feed(struct hb_slot *sl, struct hb_sample s, uint64_t now, struct hb_verdict *v)
{
	hb_slot_sample(sl, &s, T, DEAD_MS, now, v);
	return v->transition;
}

/* Seed with what is on disk, then bring the writer up. */
static void
bring_up(struct hb_slot *sl, struct writer *w)
{
	struct hb_verdict v;
	struct hb_sample s = stale(w);

	hb_slot_seed(sl, 3, &s);
	cr_assert_eq(feed(sl, write_one(w), 1, &v), HB_SAME);
	cr_assert_eq(feed(sl, write_one(w), 2, &v), HB_UP);
	cr_assert(sl->live);
}

Test(hbd_liveness, stale_slot_never_comes_up)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample s = stale(&w);
	int i;

	hb_slot_seed(&sl, 3, &s);
	for (i = 0; i < 100; i++)
		cr_assert_eq(feed(&sl, stale(&w), (uint64_t)i, &v), HB_SAME);
	cr_assert_not(sl.live);
}

Test(hbd_liveness, up_after_two_changes)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample s = stale(&w);

	hb_slot_seed(&sl, 3, &s);
	cr_assert_eq(feed(&sl, write_one(&w), 10, &v), HB_SAME);
	cr_assert_not(sl.live);
	cr_assert_eq(feed(&sl, write_one(&w), 20, &v), HB_UP);
	cr_assert_eq(v.why, HB_WHY_CHANGED_SAMPLES);
	cr_assert_eq(v.generation, 0x77);
	cr_assert_eq(sl.last_change_ms, 20);
}

Test(hbd_liveness, changes_accumulate_while_dead)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample s = stale(&w);
	int i;

	/* o2hb counts changes at any time during the dead time. */
	hb_slot_seed(&sl, 3, &s);
	cr_assert_eq(feed(&sl, write_one(&w), 1, &v), HB_SAME);
	for (i = 0; i < 50; i++)
		cr_assert_eq(feed(&sl, stale(&w), 2, &v), HB_SAME);
	cr_assert_eq(feed(&sl, write_one(&w), 3, &v), HB_UP);
}

Test(hbd_liveness, dead_after_threshold_equal_samples)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	int i;

	bring_up(&sl, &w);
	cr_assert_eq(feed(&sl, write_one(&w), 3, &v), HB_SAME);
	for (i = 1; i < T; i++) {
		cr_assert_eq(feed(&sl, stale(&w), 3 + (uint64_t)i, &v), HB_SAME,
		    "dead after only %d missed samples", i);
		cr_assert_eq(sl.equal, (unsigned)i);
	}
	cr_assert_eq(feed(&sl, stale(&w), 100, &v), HB_DOWN);
	cr_assert_eq(v.why, HB_WHY_MISSED_SAMPLES);
	cr_assert_eq(v.missed, T);
	cr_assert_eq(v.generation, 0x77);
	cr_assert_not(sl.live);
}

Test(hbd_liveness, any_change_resets_the_count)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	int round, i;

	bring_up(&sl, &w);
	/* T-1 missed, one write, again and again: never dead. */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < T - 1; i++)
			cr_assert_eq(feed(&sl, stale(&w), 5, &v), HB_SAME);
		cr_assert_eq(feed(&sl, write_one(&w), 6, &v), HB_SAME);
		cr_assert_eq(sl.equal, 0);
	}
	cr_assert(sl.live);
}

Test(hbd_liveness, new_generation_is_a_death)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample s;

	bring_up(&sl, &w);
	w.gen = 0x88;
	s = write_one(&w);
	cr_assert_eq(feed(&sl, s, 5, &v), HB_DOWN);
	cr_assert_eq(v.why, HB_WHY_NEW_GENERATION);
	cr_assert_eq(v.generation, 0x77, "the event names the incarnation that died");
	/* Its changes were kept: one more and the new incarnation is up. */
	cr_assert_eq(feed(&sl, write_one(&w), 6, &v), HB_UP);
	cr_assert_eq(v.generation, 0x88);
}

Test(hbd_liveness, clean_stop_is_down_at_once)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	int i;

	bring_up(&sl, &w);
	w.gen = 0;
	cr_assert_eq(feed(&sl, write_one(&w), 5, &v), HB_DOWN);
	cr_assert_eq(v.why, HB_WHY_CLEAN_STOP);
	cr_assert_eq(v.generation, 0x77);
	/* The clean-stop block itself never brings the node back. */
	for (i = 0; i < 3 * T; i++)
		cr_assert_eq(feed(&sl, stale(&w), 6, &v), HB_SAME);
	cr_assert_not(sl.live);
}

Test(hbd_liveness, bad_crc_is_a_missed_sample_logged_once)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample bad = { .crc_ok = 0, .seq = 12345, .generation = 99 };
	int i, logged = 0;

	bring_up(&sl, &w);
	for (i = 0; i < T - 1; i++) {
		cr_assert_eq(feed(&sl, bad, 5, &v), HB_SAME);
		logged += v.bad_crc;
	}
	cr_assert_eq(logged, 1);
	cr_assert_eq(sl.equal, T - 1);
	/* Junk fields of a bad block are not taken in. */
	cr_assert_eq(sl.last_seq, w.seq);
	cr_assert_eq(sl.last_gen, 0x77);
	cr_assert_eq(feed(&sl, bad, 6, &v), HB_DOWN);
	cr_assert_eq(v.why, HB_WHY_MISSED_SAMPLES);
}

Test(hbd_liveness, bad_crc_run_logged_again_after_a_good_block)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample bad = { .crc_ok = 0 };

	bring_up(&sl, &w);
	feed(&sl, bad, 5, &v);
	cr_assert(v.bad_crc);
	feed(&sl, write_one(&w), 6, &v);
	cr_assert_eq(sl.equal, 0, "a good change resets the missed count");
	feed(&sl, bad, 7, &v);
	cr_assert(v.bad_crc);
}

Test(hbd_liveness, bad_crc_of_a_dead_slot_is_ignored)
{
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample zero = { .crc_ok = 1 }, bad = { .crc_ok = 0, .seq = 5 };
	int i;

	hb_slot_seed(&sl, 4, &zero);
	for (i = 0; i < 10; i++) {
		cr_assert_eq(feed(&sl, bad, 1, &v), HB_SAME);
		cr_assert_not(v.bad_crc);
	}
	cr_assert_eq(sl.changed, 0);
}

Test(hbd_liveness, dead_ms_mismatch_reported_on_up)
{
	struct writer w = { 100, 0x77 };
	struct hb_slot sl;
	struct hb_verdict v;
	struct hb_sample s = stale(&w);

	hb_slot_seed(&sl, 3, &s);
	s = write_one(&w);
	s.dead_ms = 62000;
	feed(&sl, s, 1, &v);
	s = write_one(&w);
	s.dead_ms = 62000;
	cr_assert_eq(feed(&sl, s, 2, &v), HB_UP);
	cr_assert(v.dead_ms_mismatch);
	cr_assert_eq(sl.dead_ms, 62000);
}

Test(hbd_liveness, steady_after_quiet_iterations)
{
	struct hb_steady st;

	hb_steady_init(&st, 0);
	cr_assert_eq(st.left, HB_LIVE_THRESHOLD + 1);
	cr_assert_eq(hb_steady_step(&st, 1, 0), HB_STEADY_WAITING);
	/* A membership change or an error does not count. */
	cr_assert_eq(hb_steady_step(&st, 1, 1), HB_STEADY_WAITING);
	cr_assert_eq(hb_steady_step(&st, 0, 0), HB_STEADY_WAITING);
	cr_assert_eq(hb_steady_step(&st, 1, 0), HB_STEADY_WAITING);
	cr_assert_eq(hb_steady_step(&st, 1, 0), HB_STEADY_REACHED);
	cr_assert_eq(hb_steady_step(&st, 1, 1), HB_STEADY_ALREADY);
}

Test(hbd_liveness, steady_gives_up)
{
	struct hb_steady st;
	int i;

	hb_steady_init(&st, 1);
	cr_assert_eq(st.left, 2 * HB_LIVE_THRESHOLD + 1, "first global region waits longer");
	for (i = 0; i < 3 * (2 * HB_LIVE_THRESHOLD + 1) - 1; i++)
		cr_assert_eq(hb_steady_step(&st, 0, 0), HB_STEADY_WAITING);
	cr_assert_eq(hb_steady_step(&st, 0, 0), HB_STEADY_GAVE_UP);
}

Test(hbd_liveness, local_mode_up_while_live_in_any_region)
{
	struct hb_membership m;

	memset(&m, 0, sizeof(m));
	cr_assert_eq(hb_member_slot(&m, 5, 1, 2, 0), HB_UP);
	cr_assert_eq(hb_member_slot(&m, 5, 1, 2, 0), HB_SAME);
	cr_assert_eq(hb_member_slot(&m, 5, 0, 2, 0), HB_SAME, "still live in one region");
	cr_assert_eq(hb_member_slot(&m, 5, 0, 2, 0), HB_DOWN);
}

Test(hbd_liveness, global_mode_dead_on_a_majority)
{
	struct hb_membership m;

	memset(&m, 0, sizeof(m));
	/* Three regions: up once live in two, down once dead in two. */
	cr_assert_eq(hb_member_slot(&m, 5, 1, 3, 1), HB_SAME);
	cr_assert_eq(hb_member_slot(&m, 5, 1, 3, 1), HB_UP);
	cr_assert_eq(hb_member_slot(&m, 5, 1, 3, 1), HB_SAME);
	cr_assert_eq(hb_member_slot(&m, 5, 0, 3, 1), HB_SAME);
	cr_assert_eq(hb_member_slot(&m, 5, 0, 3, 1), HB_DOWN);
	/* Fewer regions running: the majority moves. */
	cr_assert_eq(hb_member_recheck(&m, 5, 2, 1), HB_UP);
}
