/*
 * The handshake: the first frame each side sends on a new link. As in
 * o2net, values that must agree cluster-wide are compared here, and a
 * link that disagrees is refused with a line that names both values
 * (the peer's escaped: it is the peer's text). link.c refuses that one
 * connection only; the connector tries again until an admin fixes the
 * configuration.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "netd.h"

void
hs_fill(const struct hs_params *p, unsigned from, unsigned to,
    const uint8_t *nonce, Netd__Handshake *hs)
{
	netd__handshake__init(hs);
	hs->protocol_version = p->protocol_version;
	hs->cluster = (char *)p->cluster;
	hs->from_node = from;
	hs->to_node = to;
	hs->hb_write_timeout_ms = p->hb_write_timeout_ms;
	hs->idle_timeout_ms = p->idle_timeout_ms;
	hs->keepalive_delay_ms = p->keepalive_delay_ms;
	hs->reconnect_delay_ms = p->reconnect_delay_ms;
	hs->auth = p->auth;
	if (p->auth && nonce != NULL) {
		hs->nonce.data = (uint8_t *)nonce;
		hs->nonce.len = AUTH_NONCE_LEN;
	}
}

/* One timeout that must match, as o2net words it. */
struct hs_timeout {
	const char	*what;
	size_t		 ours, theirs;	/* offsets */
};

static const struct hs_timeout timeouts[] = {
	{ "heartbeat write timeout", offsetof(struct hs_params, hb_write_timeout_ms),
	  offsetof(Netd__Handshake, hb_write_timeout_ms) },
	{ "network idle timeout", offsetof(struct hs_params, idle_timeout_ms),
	  offsetof(Netd__Handshake, idle_timeout_ms) },
	{ "keepalive delay", offsetof(struct hs_params, keepalive_delay_ms),
	  offsetof(Netd__Handshake, keepalive_delay_ms) },
};

int
hs_check(const struct hs_params *ours, unsigned self, unsigned peer,
    const Netd__Handshake *theirs, char *why, size_t len)
{
	char name[LOG_ESC_SIZE(CC_CLUSTER_NAME_MAX)];
	unsigned a, b;
	size_t i;

	if (theirs->protocol_version != ours->protocol_version) {
		snprintf(why, len, "node %u uses netd protocol version %u, but we "
		    "use %u", peer, theirs->protocol_version, ours->protocol_version);
		return -1;
	}
	if (strcmp(theirs->cluster, ours->cluster) != 0) {
		snprintf(why, len, "node %u is in cluster \"%s\", but we are in "
		    "cluster \"%s\"", peer, log_escape_mem(name, sizeof(name),
		    theirs->cluster, strnlen(theirs->cluster, CC_CLUSTER_NAME_MAX)),
		    ours->cluster);
		return -1;
	}
	if (theirs->from_node != peer) {
		snprintf(why, len, "the peer at node %u's address says it is node "
		    "%u", peer, theirs->from_node);
		return -1;
	}
	if (theirs->to_node != self) {
		snprintf(why, len, "node %u thinks it is talking to node %u, but we "
		    "are node %u", peer, theirs->to_node, self);
		return -1;
	}
	for (i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		a = *(const uint32_t *)((const char *)theirs + timeouts[i].theirs);
		b = *(const unsigned *)((const char *)ours + timeouts[i].ours);
		if (a != b) {
			snprintf(why, len, "node %u uses a %s of %u ms, but we use "
			    "%u ms locally", peer, timeouts[i].what, a, b);
			return -1;
		}
	}
	if (ours->auth && !theirs->auth) {
		snprintf(why, len, "node %u has no cluster key, but we use one", peer);
		return -1;
	}
	if (!ours->auth && theirs->auth) {
		snprintf(why, len, "node %u uses a cluster key, but we have none", peer);
		return -1;
	}
	if (ours->auth && theirs->nonce.len != AUTH_NONCE_LEN) {
		snprintf(why, len, "node %u sent a %zu-byte nonce, not %d", peer,
		    theirs->nonce.len, AUTH_NONCE_LEN);
		return -1;
	}
	return 0;
}
