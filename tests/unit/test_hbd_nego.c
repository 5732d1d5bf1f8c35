/*
 * o2hb's write-timeout negotiation, the decision alone: who is the
 * master, when a node asks it, when the master waits and when it
 * approves; that a failed iteration is never negotiated; the message
 * key (checked against values computed independently with zlib) and
 * payload; the timers.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "crc32.h"
#include "hbd/hbd.h"

static uint8_t live[HB_MAX_NODES], asked[HB_MAX_NODES];

static void
reset(void)
{
	memset(live, 0, sizeof(live));
	memset(asked, 0, sizeof(asked));
}

static void
set_live(const unsigned *nodes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		live[nodes[i]] = 1;
}

Test(hbd_nego, non_master_asks_the_lowest_live_node)
{
	unsigned nodes[] = { 3, 5, 9 }, master = 99;

	reset();
	set_live(nodes, 3);
	cr_assert_eq(hb_nego_decide(asked, live, 5, 1, &master), HB_NEGO_ASK);
	cr_assert_eq(master, 3);
	cr_assert_eq(hb_nego_decide(asked, live, 9, 1, &master), HB_NEGO_ASK);
	cr_assert_eq(master, 3);
	/* Asking records nothing locally: only the master keeps count. */
	cr_assert_eq(asked[5] + asked[9], 0);
}

Test(hbd_nego, master_waits_for_every_live_node_then_approves)
{
	unsigned nodes[] = { 1, 2, 3 }, master = 99;

	reset();
	set_live(nodes, 3);
	cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_WAIT);
	cr_assert_eq(master, 1);
	cr_assert(asked[1], "the master counts itself in");
	asked[3] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_WAIT);
	asked[2] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_APPROVE);
}

/* The others ask before the master's own timer expires: approved at once. */
Test(hbd_nego, requests_before_the_masters_expiry_count)
{
	unsigned nodes[] = { 0, 7 }, master = 99;

	reset();
	set_live(nodes, 2);
	asked[7] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 0, 1, &master), HB_NEGO_APPROVE);
	cr_assert_eq(master, 0);
}

/* One node's storage alone hangs: the others never ask, so no approval. */
Test(hbd_nego, lone_hung_master_never_approves)
{
	unsigned nodes[] = { 1, 2, 3 }, master = 99;
	int i;

	reset();
	set_live(nodes, 3);
	for (i = 0; i < 20; i++)
		cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_WAIT);
}

/* Requests from nodes no longer live neither count nor stop the approval. */
Test(hbd_nego, requests_from_dead_nodes_do_not_matter)
{
	unsigned nodes[] = { 1, 2 }, master = 99;

	reset();
	set_live(nodes, 2);
	asked[4] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_WAIT);
	asked[2] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 1, 1, &master), HB_NEGO_APPROVE);
}

/* A failed iteration (I/O error) is not negotiated, master or not. */
Test(hbd_nego, failed_iteration_is_not_negotiated)
{
	unsigned nodes[] = { 1, 2 }, master = 99;

	reset();
	set_live(nodes, 2);
	asked[2] = 1;
	cr_assert_eq(hb_nego_decide(asked, live, 1, 0, &master), HB_NEGO_NONE);
	cr_assert_eq(asked[1], 0);
	cr_assert_eq(hb_nego_decide(asked, live, 2, 0, &master), HB_NEGO_NONE);
	cr_assert_eq(master, 99);
}

/* As o2hb: alone in the cluster, the master approves itself. */
Test(hbd_nego, single_live_node_approves_itself)
{
	unsigned nodes[] = { 4 }, master = 99;

	reset();
	set_live(nodes, 1);
	cr_assert_eq(hb_nego_decide(asked, live, 4, 1, &master), HB_NEGO_APPROVE);
}

Test(hbd_nego, nobody_live_nobody_to_ask)
{
	unsigned master = 99;

	reset();
	cr_assert_eq(hb_nego_decide(asked, live, 4, 1, &master), HB_NEGO_NONE);
	cr_assert_eq(master, 99);
}

Test(hbd_nego, highest_node_number_can_be_master)
{
	unsigned nodes[] = { HB_MAX_NODES - 1 }, master = 0;

	reset();
	set_live(nodes, 1);
	cr_assert_eq(hb_nego_decide(asked, live, 3, 1, &master), HB_NEGO_ASK);
	cr_assert_eq(master, HB_MAX_NODES - 1);
}

/*
 * crc32_le(region_num + 32, name): python3 -c 'import zlib;
 * print(hex(zlib.crc32(NAME, SEED ^ 0xffffffff) ^ 0xffffffff))'.
 */
Test(hbd_nego, key_is_o2hbs)
{
	const char *uuid = "0A1B2C3D4E5F60718293A4B5C6D7E8F9";

	cr_assert_eq(hb_nego_key(0, uuid), 0xd0eba76du);
	cr_assert_eq(hb_nego_key(1, uuid), 0x2131a2c7u);
	cr_assert_eq(hb_nego_key(0, ""), 32u, "the seed alone");
	/* Not the DLM's key of the same name (seed 0). */
	cr_assert_neq(hb_nego_key(0, uuid), crc32_le(0, uuid, strlen(uuid)));
	cr_assert_eq(crc32_le(0, uuid, strlen(uuid)), 0xea597abfu);
}

Test(hbd_nego, payload_is_one_node_byte)
{
	uint8_t ok = 7, bad = HB_MAX_NODES, two[2] = { 1, 2 };

	cr_assert_eq(hb_nego_sender(&ok, 1), 7);
	cr_assert_eq(hb_nego_sender(&bad, 1), -1);
	cr_assert_eq(hb_nego_sender(two, 2), -1);
	cr_assert_eq(hb_nego_sender(&ok, 0), -1);
}

Test(hbd_nego, timers)
{
	/* o2hb's defaults: write timeout 60 s, negotiation at 30 s, recheck 1 s. */
	cr_assert_eq(hb_nego_timeout_ms(2000, 31), 30000);
	cr_assert_eq(hb_nego_recheck_ms(2000), 1000);
	cr_assert_eq(hb_nego_recheck_ms(10000), 1000);
	/* Fast failover: 1800 ms write timeout, negotiation at 900, recheck 100. */
	cr_assert_eq(hb_nego_timeout_ms(200, 10), 900);
	cr_assert_eq(hb_nego_recheck_ms(200), 100);
	cr_assert_eq(hb_nego_recheck_ms(1), 1);
}
