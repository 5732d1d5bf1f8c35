/*
 * The minimum hold time's policy (fsd/holdtime.c, doc/lock-hold.md) on
 * lock resources of its own, with the real clock: a BAST on a lock in
 * use is held while its hold time runs and honoured once it is over, one
 * on a lock idle for the idle gap is not held, a hold ends at once while
 * a dead node waits for recovery or at unmount; the hold time grows when
 * the lock is wanted again soon after a BAST took it, shrinks when a
 * hold let nobody in or the lock was wanted again only late, and backs
 * off when holds let nobody in again and again after grants of few uses.
 */
#include <criterion/criterion.h>

#include <string.h>
#include <unistd.h>

#include "fsd/fsd.h"
#include "fsd/glue.h"
#include "fsd/lockres.h"

#define MAX_US	200000u		/* lock_hold's bound: what a loaded machine delays stays well inside */

static struct fsd_glue g;
static struct fsd_lockres lr;

/* A META lock granted EX now, with this hold time. */
static void
granted(unsigned hold_us)
{
	memset(&g, 0, sizeof(g));
	memset(&lr, 0, sizeof(lr));
	g.hold_max_us = MAX_US;
	lr.type = FSD_LOCK_META;
	lr.level = LKM_EX;
	lr.glue = &g;
	lr.hold_us = hold_us;
	hold_granted(&g, &lr, hold_now_us());
}

static void
bast(void)
{
	lr.blocking = LKM_EX;
}

Test(holdtime, bast_on_a_lock_in_use_waits_out_its_hold)
{
	uint64_t next;

	granted(MAX_US);
	lr.ex = 1;		/* a holder has it */
	bast();
	cr_assert_eq(hold_bast(&g, &lr), 1);
	cr_assert(lr.flags & LR_HELD);
	cr_assert_eq(hold_expired(&g, &next), NULL, "honoured before its hold is over");
	cr_assert_gt(next, hold_now_us());
	cr_assert_leq(next, lr.granted_us + MAX_US);
	cr_assert_eq(hold_used(&lr, 1), 0);
	lr.ex = 1;
	cr_assert_eq(hold_used(&lr, 0), 0, "a release that leaves a holder wakes the downconvert");
	lr.ex = 0;
	cr_assert_eq(hold_used(&lr, 0), 1, "the last release of a held lock does not end its wait");
	cr_assert_eq(hold_expired(&g, &next), NULL);
	cr_assert_leq(next, hold_now_us() + 4000, "no holder left, yet held past the idle gap");
	lr.ex = 1;
	lr.held_uses = 0;
	hold_used(&lr, 0);	/* the holder of before the BAST lets go: no new use */
	cr_assert_eq(lr.held_uses, 0);
	hold_used(&lr, 1);	/* holders still come in meanwhile, and count */
	cr_assert_eq(lr.held_uses, 1);
	usleep(MAX_US + 5000);
	cr_assert_eq(hold_expired(&g, &next), &lr, "still held after its hold time");
	hold_end(&g, &lr);
	cr_assert_eq(lr.flags & LR_HELD, 0);
	cr_assert_eq(g.hold_head, NULL);
	cr_assert_eq(lr.hold_us, MAX_US, "a hold that let a holder in does not shrink");
}

Test(holdtime, idle_lock_goes_at_once)
{
	granted(MAX_US);
	usleep(8000);		/* more than the idle gap (4 ms), no holder */
	bast();
	cr_assert_eq(hold_bast(&g, &lr), 0, "a lock nobody uses here is held");
	cr_assert_eq(g.hold_head, NULL);
}

/* A BAST held right after a use, and honoured with no holder let in. */
static void
wasted_hold(void)
{
	uint64_t next, t0;

	hold_used(&lr, 0);	/* a holder let go just now */
	bast();
	cr_assert_eq(hold_bast(&g, &lr), 1);
	t0 = hold_now_us();
	cr_assert_eq(hold_expired(&g, &next), NULL);
	cr_assert_leq(next, t0 + 4000, "an idle lock is held beyond the idle gap");
	usleep(5000);
	cr_assert_eq(hold_expired(&g, &next), &lr);
	hold_end(&g, &lr);
	hold_gave(&lr);
}

/* Re-granted soon after the BAST: the hold time it has then. */
static unsigned
regrant(void)
{
	hold_granted(&g, &lr, hold_now_us());
	return lr.hold_us;
}

Test(holdtime, wasted_holds_fall_back_and_back_off)
{
	unsigned i;

	granted(MAX_US);
	wasted_hold();
	cr_assert_eq(lr.hold_us, MAX_US - MAX_US / 8, "one wasted hold does not shrink it");
	cr_assert_eq(regrant(), MAX_US, "one wasted hold stops its growth");
	/* two in a row: back to lock_hold_min, 2 re-grants without growing */
	wasted_hold();
	cr_assert_eq(lr.hold_us, 0, "two wasted holds in a row keep it");
	cr_assert_eq(regrant(), 0);
	hold_gave(&lr);
	cr_assert_eq(regrant(), 0);
	hold_gave(&lr);
	cr_assert_eq(regrant(), MAX_US / 4);
	/* a third in a row: 4 re-grants before it grows */
	wasted_hold();
	cr_assert_eq(lr.hold_us, 0);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(regrant(), 0, "grew after %u re-grants", i + 1);
		hold_gave(&lr);
	}
	cr_assert_eq(regrant(), MAX_US / 4);
	/* a useful hold ends the run of wasted ones */
	lr.ex = 1;
	bast();
	cr_assert_eq(hold_bast(&g, &lr), 1);
	hold_used(&lr, 1);
	hold_end(&g, &lr);
	lr.ex = 0;
	hold_gave(&lr);
	cr_assert_eq(regrant(), MAX_US / 2);
	wasted_hold();
	cr_assert_eq(lr.hold_us, MAX_US / 2 - MAX_US / 8, "a first waste again sends it back");
	cr_assert_eq(regrant(), MAX_US / 2 - MAX_US / 8 + MAX_US / 4);
}

Test(holdtime, wasted_hold_after_a_burst_only_shrinks)
{
	unsigned i;

	granted(MAX_US);
	wasted_hold();
	cr_assert_eq(regrant(), MAX_US);
	for (i = 0; i < 32; i++)
		hold_used(&lr, 1);	/* a burst of operations under this grant */
	wasted_hold();		/* the second in a row, but after a burst: a pause */
	cr_assert_eq(lr.hold_us, MAX_US - MAX_US / 8);
	cr_assert_eq(regrant(), MAX_US, "a pause after a burst started the backoff");
}

Test(holdtime, regrant_soon_after_a_bast_grows_late_shrinks)
{
	granted(0);
	hold_gave(&lr);
	hold_granted(&g, &lr, hold_now_us());
	cr_assert_eq(lr.hold_us, MAX_US / 4);
	hold_gave(&lr);
	hold_granted(&g, &lr, hold_now_us());
	cr_assert_eq(lr.hold_us, MAX_US / 2);
	hold_gave(&lr);
	hold_granted(&g, &lr, lr.gave_us + 4 * (uint64_t)MAX_US + 20000 + 1);
	cr_assert_eq(lr.hold_us, MAX_US / 2 - MAX_US / 8);
	lr.hold_us = MAX_US;
	hold_gave(&lr);
	hold_granted(&g, &lr, hold_now_us());
	cr_assert_eq(lr.hold_us, MAX_US, "beyond lock_hold");
}

Test(holdtime, shrinks_no_lower_than_lock_hold_min)
{
	granted(MAX_US / 2);
	g.hold_min_us = MAX_US / 2;
	hold_gave(&lr);
	hold_granted(&g, &lr, lr.gave_us + 10 * (uint64_t)MAX_US);
	cr_assert_eq(lr.hold_us, MAX_US / 2);
}

Test(holdtime, recovery_and_unmount_end_holds)
{
	uint64_t next;

	granted(MAX_US);
	lr.ex = 1;
	bast();
	cr_assert_eq(hold_bast(&g, &lr), 1);
	g.ndead = 1;		/* a dead node's slot waits for recovery */
	cr_assert_eq(hold_expired(&g, &next), &lr);
	g.ndead = 0;
	cr_assert_eq(hold_expired(&g, &next), NULL);
	g.stopping = 1;
	cr_assert_eq(hold_expired(&g, &next), &lr);
	hold_forget(&g, &lr);
	cr_assert_eq(g.hold_head, NULL);
	g.stopping = 0;
	g.ndead = 1;
	lr.flags = 0;
	cr_assert_eq(hold_bast(&g, &lr), 0, "held while recovery waits");
}

Test(holdtime, only_meta_locks_at_a_level_hold)
{
	granted(MAX_US);
	lr.ex = 1;
	bast();
	lr.type = FSD_LOCK_OPEN;
	cr_assert_eq(hold_bast(&g, &lr), 0);
	lr.type = FSD_LOCK_META;
	lr.flags = LR_BUSY;	/* our own request in flight: the downconvert withdraws it */
	cr_assert_eq(hold_bast(&g, &lr), 0);
	lr.flags = 0;
	g.hold_max_us = 0;	/* lock_hold=0 */
	cr_assert_eq(hold_bast(&g, &lr), 0);
}
