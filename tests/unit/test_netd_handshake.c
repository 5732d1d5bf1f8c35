/*
 * The handshake checks: what must agree between two nodes, each refusal
 * with a line naming both values, and the handshake surviving its
 * protobuf encoding.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "netd/netd.h"

static struct hs_params ours;
static char why[512];

static void
setup(void)
{
	memset(&ours, 0, sizeof(ours));
	ours.protocol_version = NETD_PROTOCOL_VERSION;
	strcpy(ours.cluster, "alpha");
	ours.hb_write_timeout_ms = 60000;
	ours.idle_timeout_ms = 30000;
	ours.keepalive_delay_ms = 2000;
	ours.reconnect_delay_ms = 2000;
}

TestSuite(handshake, .init = setup);

/* Node 3's handshake to node 1 with our parameters, through the wire encoding. */
static Netd__Handshake *
theirs_from(const struct hs_params *p, unsigned from, unsigned to, const uint8_t *nonce)
{
	Netd__Handshake hs;
	uint8_t buf[NETD_HANDSHAKE_MAX];
	size_t n;

	hs_fill(p, from, to, nonce, &hs);
	n = netd__handshake__get_packed_size(&hs);
	cr_assert_leq(n, sizeof(buf));
	netd__handshake__pack(&hs, buf);
	return netd__handshake__unpack(NULL, n, buf);
}

static int
check(const struct hs_params *p, unsigned from, unsigned to)
{
	Netd__Handshake *t = theirs_from(p, from, to, NULL);
	int rc;

	why[0] = '\0';
	rc = hs_check(&ours, 1, 3, t, why, sizeof(why));
	netd__handshake__free_unpacked(t, NULL);
	return rc;
}

Test(handshake, agreeing_peers_connect)
{
	struct hs_params p = ours;

	p.reconnect_delay_ms = 5000;	/* not compared, as in o2net */
	cr_assert_eq(check(&p, 3, 1), 0, "%s", why);
}

Test(handshake, protocol_version)
{
	struct hs_params p = ours;

	p.protocol_version = 99;
	cr_assert_eq(check(&p, 3, 1), -1);
	cr_assert_str_eq(why, "node 3 uses netd protocol version 99, but we use 1");
}

Test(handshake, cluster_name)
{
	struct hs_params p = ours;

	strcpy(p.cluster, "beta");
	cr_assert_eq(check(&p, 3, 1), -1);
	cr_assert_str_eq(why, "node 3 is in cluster \"beta\", but we are in cluster \"alpha\"");
}

Test(handshake, node_numbers)
{
	cr_assert_eq(check(&ours, 2, 1), -1);
	cr_assert_str_eq(why, "the peer at node 3's address says it is node 2");
	cr_assert_eq(check(&ours, 3, 4), -1);
	cr_assert_str_eq(why, "node 3 thinks it is talking to node 4, but we are node 1");
}

Test(handshake, every_timeout_must_match)
{
	struct hs_params p;

	p = ours;
	p.hb_write_timeout_ms = 3600;
	cr_assert_eq(check(&p, 3, 1), -1);
	cr_assert_str_eq(why, "node 3 uses a heartbeat write timeout of 3600 ms, but we use 60000 ms locally");
	p = ours;
	p.idle_timeout_ms = 10000;
	cr_assert_eq(check(&p, 3, 1), -1);
	cr_assert_str_eq(why, "node 3 uses a network idle timeout of 10000 ms, but we use 30000 ms locally");
	p = ours;
	p.keepalive_delay_ms = 1000;
	cr_assert_eq(check(&p, 3, 1), -1);
	cr_assert_str_eq(why, "node 3 uses a keepalive delay of 1000 ms, but we use 2000 ms locally");
}

Test(handshake, cluster_key_on_one_side_only)
{
	struct hs_params p = ours;
	uint8_t nonce[AUTH_NONCE_LEN] = { 1 };
	Netd__Handshake *t;

	p.auth = 1;
	t = theirs_from(&p, 3, 1, nonce);
	cr_assert_eq(hs_check(&ours, 1, 3, t, why, sizeof(why)), -1);
	cr_assert_str_eq(why, "node 3 uses a cluster key, but we have none");
	netd__handshake__free_unpacked(t, NULL);

	ours.auth = 1;
	cr_assert_eq(check(&ours, 3, 1), -1, "a keyed peer without a nonce");
	t = theirs_from(&p, 3, 1, nonce);
	cr_assert_eq(hs_check(&ours, 1, 3, t, why, sizeof(why)), 0, "%s", why);
	netd__handshake__free_unpacked(t, NULL);
	p.auth = 0;
	t = theirs_from(&p, 3, 1, NULL);
	cr_assert_eq(hs_check(&ours, 1, 3, t, why, sizeof(why)), -1);
	cr_assert_str_eq(why, "node 3 has no cluster key, but we use one");
	netd__handshake__free_unpacked(t, NULL);
}
