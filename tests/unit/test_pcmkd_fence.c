/*
 * pcmkd's fencing of the nodes corosync lost (pcmkd/fence.c): attempts
 * only while quorate, retries with a doubling delay, a confirmation
 * older than the node's failure refused, the node reported down once.
 */
#include <criterion/criterion.h>

#include "pcmkd/pcmkd.h"

static struct pm_fencing f;

static void
setup(void)
{
	memset(&f, 0, sizeof(f));
}

TestSuite(pcmkd_fence, .init = setup);

Test(pcmkd_fence, nothing_pending_nothing_due)
{
	cr_assert(!fence_pending(&f, 3));
	cr_assert(!fence_due(&f, 3, 1, 1000));
	cr_assert_eq(fence_next_due_ms(&f), UINT64_MAX);
	cr_assert(!fence_take_confirmed(&f, 3, 1));
}

Test(pcmkd_fence, only_a_quorate_partition_fences)
{
	fence_begin(&f, 3, 500, 1000);
	cr_assert(fence_pending(&f, 3));
	cr_assert(!fence_due(&f, 3, 0, 1000), "without quorum no attempt starts");
	cr_assert(fence_due(&f, 3, 1, 1000));
	cr_assert_eq(fence_next_due_ms(&f), 1000);
}

Test(pcmkd_fence, retried_with_a_doubling_delay)
{
	fence_begin(&f, 3, 500, 1000);
	fence_started(&f, 3);
	cr_assert(!fence_due(&f, 3, 1, 1000), "one attempt at a time");
	cr_assert_eq(fence_next_due_ms(&f), UINT64_MAX, "a running attempt is no due one");
	fence_failed(&f, 3, 2000, "exit status 1");
	cr_assert_str_eq(f.n[3].last_error, "exit status 1");
	cr_assert(!fence_due(&f, 3, 1, 2000 + PM_FENCE_RETRY_MS - 1));
	cr_assert(fence_due(&f, 3, 1, 2000 + PM_FENCE_RETRY_MS));
	fence_started(&f, 3);
	fence_failed(&f, 3, 5000, "exit status 1");
	cr_assert_eq(f.n[3].next_ms, 5000 + 2 * PM_FENCE_RETRY_MS);
	fence_started(&f, 3);
	fence_failed(&f, 3, 9000, "exit status 1");
	cr_assert_eq(f.n[3].next_ms, 9000 + 4 * PM_FENCE_RETRY_MS);
	cr_assert_eq(f.n[3].tries, 3);
	while (f.n[3].tries < 20) {
		fence_started(&f, 3);
		fence_failed(&f, 3, 10000, "exit status 1");
	}
	cr_assert_eq(f.n[3].next_ms, 10000 + PM_FENCE_RETRY_MAX_MS, "the delay has a ceiling");
	cr_assert(fence_pending(&f, 3), "never given up: the node stays unrecovered");
}

Test(pcmkd_fence, confirmed_then_reported_down_once)
{
	fence_begin(&f, 3, 500, 1000);
	fence_started(&f, 3);
	cr_assert_eq(fence_confirmed(&f, 3, 500, 1100), 0, "fenced in the second it left counts");
	cr_assert(fence_pending(&f, 3), "not reported yet");
	cr_assert(!fence_take_confirmed(&f, 3, 0), "a minority reports nobody down");
	cr_assert(fence_take_confirmed(&f, 3, 1));
	cr_assert(!fence_pending(&f, 3));
	cr_assert(!fence_take_confirmed(&f, 3, 1), "told once");
}

Test(pcmkd_fence, a_fence_before_the_failure_does_not_count)
{
	fence_begin(&f, 3, 500, 1000);
	fence_started(&f, 3);
	cr_assert_eq(fence_confirmed(&f, 3, 499, 1100), -1);
	cr_assert_eq(f.n[3].state, PF_WAITING, "retried");
	cr_assert(strstr(f.n[3].last_error, "before the node left") != NULL);
	cr_assert(!fence_take_confirmed(&f, 3, 1));
	cr_assert_eq(fence_confirmed(&f, 3, 600, 1200), -1, "no attempt runs: nothing confirmed");
}

Test(pcmkd_fence, lost_again_while_pending_keeps_the_first_failure)
{
	fence_begin(&f, 3, 500, 1000);
	fence_started(&f, 3);
	fence_begin(&f, 3, 900, 3000);
	cr_assert_eq(f.n[3].left_at, 500);
	cr_assert_eq(f.n[3].state, PF_RUNNING);
	fence_confirmed(&f, 3, 700, 3100);
	cr_assert(fence_take_confirmed(&f, 3, 1));
	fence_begin(&f, 3, 900, 4000);
	cr_assert_eq(f.n[3].left_at, 900, "a new failure after the last was reported: a new fence");
	cr_assert_eq(f.n[3].tries, 0);
}

Test(pcmkd_fence, nodes_are_fenced_independently)
{
	fence_begin(&f, 2, 500, 1000);
	fence_begin(&f, 3, 500, 4000);
	cr_assert_eq(fence_next_due_ms(&f), 1000);
	fence_started(&f, 2);
	cr_assert_eq(fence_next_due_ms(&f), 4000);
	cr_assert(!fence_due(&f, 3, 1, 3999));
	fence_confirmed(&f, 2, 600, 1500);
	cr_assert(fence_take_confirmed(&f, 2, 1));
	cr_assert(fence_pending(&f, 3));
}
