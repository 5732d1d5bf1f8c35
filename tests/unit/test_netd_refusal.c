/*
 * netd's refusal lines, driven with a synthetic clock: at most
 * REFUSAL_BURST per source address per window, the rest summed up once
 * the window ends, and a bounded total however many addresses there are.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "netd/netd.h"

struct summaries {
	unsigned	calls;
	unsigned	total;
	unsigned	shared;		/* of the addresses beyond the table */
	uint32_t	last_addr;
};

static void
sum(const uint32_t *addr, unsigned n, uint64_t ms, void *arg)
{
	struct summaries *s = arg;

	cr_assert_geq(ms, REFUSAL_WINDOW_MS);
	s->calls++;
	s->total += n;
	if (addr == NULL)
		s->shared += n;
	else
		s->last_addr = *addr;
}

Test(refusal, a_burst_is_logged_then_counted)
{
	struct refusals rf;
	struct summaries s = { 0 };
	unsigned i, logged = 0;

	refusal_init(&rf);
	for (i = 0; i < 2000; i++)
		logged += refusal_admit(&rf, 0x6300007f, 1000 + i / 10);
	cr_assert_eq(logged, REFUSAL_BURST);
	cr_assert_eq(refusal_next_due(&rf), 1000 + REFUSAL_WINDOW_MS);
	refusal_expire(&rf, 1000 + REFUSAL_WINDOW_MS - 1, sum, &s);
	cr_assert_eq(s.calls, 0, "nothing before the window ends");
	refusal_expire(&rf, 1000 + REFUSAL_WINDOW_MS, sum, &s);
	cr_assert_eq(s.calls, 1);
	cr_assert_eq(s.total, 2000 - REFUSAL_BURST);
	cr_assert_eq(s.last_addr, 0x6300007f);
	cr_assert_eq(refusal_next_due(&rf), 0);
	/* A new window logs again. */
	cr_assert_eq(refusal_admit(&rf, 0x6300007f, 1000 + REFUSAL_WINDOW_MS + 1), 1);
}

Test(refusal, addresses_are_counted_apart)
{
	struct refusals rf;
	unsigned i;

	refusal_init(&rf);
	for (i = 0; i < REFUSAL_BURST + 3; i++)
		refusal_admit(&rf, 0x0100007f, 5);
	cr_assert_eq(refusal_admit(&rf, 0x0200007f, 5), 1,
	    "another address's flood does not silence this one");
}

Test(refusal, many_addresses_stay_bounded)
{
	struct refusals rf;
	struct summaries s = { 0 };
	unsigned i, logged = 0, n = 10000;

	refusal_init(&rf);
	for (i = 0; i < n; i++)
		logged += refusal_admit(&rf, 0x0a000000u + i, 50);
	cr_assert_leq(logged, (REFUSAL_SOURCES + 1) * REFUSAL_BURST);
	refusal_expire(&rf, 50 + REFUSAL_WINDOW_MS, sum, &s);
	cr_assert_eq(logged + s.total, n, "every refusal is logged or summed up");
	cr_assert_gt(s.shared, 0);
}

Test(refusal, a_quiet_address_frees_its_entry)
{
	struct refusals rf;
	unsigned i;

	refusal_init(&rf);
	for (i = 0; i < REFUSAL_SOURCES; i++)
		refusal_admit(&rf, 0x0a000000u + i, 0);
	/* Those windows ended with nothing left out: new addresses get entries. */
	for (i = 0; i < REFUSAL_SOURCES; i++)
		refusal_admit(&rf, 0x0b000000u + i, REFUSAL_WINDOW_MS);
	cr_assert_eq(rf.src[REFUSAL_SOURCES].used, 0, "nobody had to share");
}
