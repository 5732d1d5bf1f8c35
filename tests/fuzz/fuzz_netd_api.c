/*
 * netd's socket (netd/api.c): handler registration, sends to one node
 * and to all, replies to messages, status; three configured nodes (we
 * are node 1), none heartbeating, so no link is ever made. The input is
 * a series of Envelopes (fuzz.h).
 */
#include "fuzz.h"
#include "netd/netd.h"

static struct netd nd = { .listen_fd = -1 };
static struct fuzz_client fc;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char sock[256];
	struct netd_node *n;
	unsigned i;

	(void)argc;
	(void)argv;
	nd.rundir = fuzz_rundir();
	if ((nd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	snprintf(nd.cluster, sizeof(nd.cluster), "lc");
	nd.self = 1;
	nd.idle_timeout_ms = 30000;
	nd.keepalive_delay_ms = 2000;
	nd.reconnect_delay_ms = 2000;
	nd.dead_threshold = 31;
	nd.hb_interval_ms = 2000;
	for (i = 1; i <= 3; i++) {
		n = xcalloc(1, sizeof(*n));
		n->num = i;
		snprintf(n->name, sizeof(n->name), "node%u", i);
		n->addr = htonl(0x7f000001 + i);
		n->port = 7790;
		n->configured = 1;
		link_node_init(&nd, n);
		nd.nodes[i] = n;
	}
	fence_start(&nd);
	api_start(&nd);
	snprintf(sock, sizeof(sock), "%s/netd.sock", nd.rundir);
	fuzz_client_init(&fc, nd.base, sock);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_client_send_all(&fc, data, size);
	return 0;
}
