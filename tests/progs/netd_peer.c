/*
 * netd_peer: a hostile or misconfigured peer for netd's integration
 * tests. It connects to a netd's listening port from a chosen source
 * address and plays one part: garbage, a slow-loris, a handshake with
 * chosen values, an oversized frame, (with a cluster key) a replayed
 * frame, or a flood of --count connections, each until netd closes it. It reports whether netd closed the connection, and how fast:
 *
 *   netd_peer MODE --from ADDR --to ADDR:PORT [options]
 *   exit 0: netd did what --expect says (closed / open), 1: it did not.
 *
 * It builds its frames with netd's own wire and auth code, so what it
 * sends is exactly what a real peer with those values would send.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netd/netd.h"
#include "util.h"

struct peer {
	int		 fd;
	struct hs_params hs;
	unsigned	 from_node, to_node;
	int		 auth;
	uint8_t		 key[AUTH_KEY_LEN];
	uint8_t		 nonce[AUTH_NONCE_LEN], peer_nonce[AUTH_NONCE_LEN];
	struct auth_session s;
	int		 tx_keyed, rx_keyed;
	int		 wait_ms;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
dial(const char *from, const char *to)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	char host[64], *colon;
	int fd;

	snprintf(host, sizeof(host), "%s", to);
	if ((colon = strchr(host, ':')) == NULL)
		fatalx("--to ADDR:PORT");
	*colon = '\0';
	dst.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &dst.sin_addr) != 1 ||
	    inet_pton(AF_INET, from, &src.sin_addr) != 1)
		fatalx("bad address");
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) == -1)
		fatal("bind %s", from);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) == -1)
		fatal("connect %s", to);
	return fd;
}

/* Wait up to ms for netd to close: 1 closed, 0 still open. Data is read and dropped. */
static int
closed_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double end = now() + ms / 1000.0;
	char buf[4096];
	ssize_t n;

	while (now() < end) {
		if (poll(&p, 1, (int)((end - now()) * 1000) + 1) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n == -1 && errno == ECONNRESET))
			return 1;
	}
	return 0;
}

static void
send_frame(struct peer *p, struct wire_hdr *h, const uint8_t *payload, size_t len,
    uint8_t *copy, size_t *copylen)
{
	uint8_t buf[WIRE_HDR_LEN + NETD_MAX_PAYLOAD + WIRE_MAC_LEN];
	size_t n;

	h->len = (uint32_t)len;
	h->flags = p->tx_keyed ? WIRE_F_MAC : 0;
	h->seq = p->tx_keyed ? ++p->s.tx_seq : 0;
	wire_hdr_encode(h, buf);
	if (len)
		memcpy(buf + WIRE_HDR_LEN, payload, len);
	n = WIRE_HDR_LEN + len;
	if (p->tx_keyed) {
		auth_mac(p->s.tx_key, buf, n, buf + n);
		n += WIRE_MAC_LEN;
	}
	if (write_full(p->fd, buf, n) == -1)
		fatal("write");
	if (copy != NULL) {
		memcpy(copy, buf, n);
		*copylen = n;
	}
}

/* Read one frame; -1 when netd closed the connection or sent nonsense. */
static int
recv_frame(struct peer *p, struct wire_hdr *h, uint8_t *payload)
{
	uint8_t raw[WIRE_HDR_LEN], mac[WIRE_MAC_LEN];

	if (read_full_timeout(p->fd, raw, WIRE_HDR_LEN, p->wait_ms) == -1)
		return -1;
	wire_hdr_decode(raw, h);
	if (h->len > NETD_MAX_PAYLOAD ||
	    read_full_timeout(p->fd, payload, h->len, p->wait_ms) == -1)
		return -1;
	if (p->rx_keyed && read_full_timeout(p->fd, mac, WIRE_MAC_LEN, p->wait_ms) == -1)
		return -1;
	return 0;
}

static void
send_msg(struct peer *p, uint16_t magic, const ProtobufCMessage *m)
{
	struct wire_hdr h = { .magic = magic };
	uint8_t buf[NETD_HANDSHAKE_MAX];
	size_t n = protobuf_c_message_get_packed_size(m);

	protobuf_c_message_pack(m, buf);
	send_frame(p, &h, buf, n, NULL, NULL);
}

/* Our handshake, netd's; with a key, both proofs. 0: the link is up. */
static int
handshake(struct peer *p)
{
	Netd__Handshake hs, *theirs;
	Netd__AuthProof ap = NETD__AUTH_PROOF__INIT;
	struct wire_hdr h;
	uint8_t buf[NETD_MAX_PAYLOAD], proof[AUTH_KEY_LEN];

	p->hs.auth = p->auth;
	if (p->auth)
		auth_nonce(p->nonce);
	hs_fill(&p->hs, p->from_node, p->to_node, p->nonce, &hs);
	send_msg(p, WIRE_HANDSHAKE, &hs.base);
	if (recv_frame(p, &h, buf) == -1 || h.magic != WIRE_HANDSHAKE)
		return -1;
	if ((theirs = netd__handshake__unpack(NULL, h.len, buf)) == NULL)
		return -1;
	printf("netd's handshake: cluster %s, node %u, idle %u ms, keepalive %u ms, "
	    "hb write timeout %u ms%s\n", theirs->cluster, theirs->from_node,
	    theirs->idle_timeout_ms, theirs->keepalive_delay_ms,
	    theirs->hb_write_timeout_ms, theirs->auth ? ", keyed" : "");
	if (p->auth && theirs->nonce.len == AUTH_NONCE_LEN)
		memcpy(p->peer_nonce, theirs->nonce.data, AUTH_NONCE_LEN);
	netd__handshake__free_unpacked(theirs, NULL);
	if (!p->auth)
		return 0;
	auth_session_init(&p->s, p->key, p->from_node, p->to_node, p->nonce, p->peer_nonce);
	auth_proof(p->key, p->from_node, p->to_node, p->nonce, p->peer_nonce, proof);
	ap.proof.data = proof;
	ap.proof.len = sizeof(proof);
	send_msg(p, WIRE_AUTH, &ap.base);
	p->tx_keyed = 1;
	if (recv_frame(p, &h, buf) == -1 || h.magic != WIRE_AUTH)
		return -1;
	p->rx_keyed = 1;
	return 0;
}

/* A keepalive answered proves the link is up and our frames verify. */
static int
keepalive_answered(struct peer *p, uint8_t *copy, size_t *copylen)
{
	struct wire_hdr h = { .magic = WIRE_KA_REQ };
	uint8_t buf[NETD_MAX_PAYLOAD];

	send_frame(p, &h, NULL, 0, copy, copylen);
	for (;;) {
		if (recv_frame(p, &h, buf) == -1)
			return 0;
		if (h.magic == WIRE_KA_RESP)
			return 1;
	}
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: netd_peer connect|garbage|slowloris|handshake|oversize|replay|flood\n"
	    "         --from ADDR --to ADDR:PORT [--expect closed|open] [--wait MS]\n"
	    "         [--cluster NAME] [--from-node N] [--to-node N] [--idle MS]\n"
	    "         [--keepalive MS] [--hb-write MS] [--reconnect MS]\n"
	    "         [--version V] [--keyfile FILE] [--byte-ms MS] [--count N]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "expect", required_argument, NULL, 'e' },
		{ "wait", required_argument, NULL, 'w' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "from-node", required_argument, NULL, 'F' },
		{ "to-node", required_argument, NULL, 'T' },
		{ "idle", required_argument, NULL, 'i' },
		{ "keepalive", required_argument, NULL, 'k' },
		{ "hb-write", required_argument, NULL, 'h' },
		{ "reconnect", required_argument, NULL, 'r' },
		{ "version", required_argument, NULL, 'V' },
		{ "keyfile", required_argument, NULL, 'K' },
		{ "byte-ms", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct peer p = { .wait_ms = 3000 };
	const char *from = NULL, *to = NULL, *expect = "closed", *mode, *keyfile = NULL;
	int ch, closed = 0, byte_ms = 500, count = 1, k;
	double t0;
	char why[256];

	log_init("netd_peer", 0);
	p.hs.protocol_version = NETD_PROTOCOL_VERSION;
	strcpy(p.hs.cluster, "lc");
	p.hs.idle_timeout_ms = 30000;
	p.hs.keepalive_delay_ms = 2000;
	p.hs.reconnect_delay_ms = 2000;
	p.hs.hb_write_timeout_ms = 60000;
	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f': from = optarg; break;
		case 't': to = optarg; break;
		case 'e': expect = optarg; break;
		case 'w': p.wait_ms = atoi(optarg); break;
		case 'c': snprintf(p.hs.cluster, sizeof(p.hs.cluster), "%s", optarg); break;
		case 'F': p.from_node = (unsigned)atoi(optarg); break;
		case 'T': p.to_node = (unsigned)atoi(optarg); break;
		case 'i': p.hs.idle_timeout_ms = (unsigned)atoi(optarg); break;
		case 'k': p.hs.keepalive_delay_ms = (unsigned)atoi(optarg); break;
		case 'h': p.hs.hb_write_timeout_ms = (unsigned)atoi(optarg); break;
		case 'r': p.hs.reconnect_delay_ms = (unsigned)atoi(optarg); break;
		case 'V': p.hs.protocol_version = (uint32_t)atoi(optarg); break;
		case 'K': keyfile = optarg; break;
		case 'b': byte_ms = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		default: usage();
		}
	}
	if (from == NULL || to == NULL)
		usage();
	if (keyfile != NULL) {
		if (auth_init() == -1 || auth_load_key(keyfile, p.key, why, sizeof(why)) == -1)
			fatalx("%s", why);
		p.auth = 1;
	}
	p.fd = dial(from, to);
	t0 = now();

	if (strcmp(mode, "connect") == 0) {
		closed = closed_within(p.fd, p.wait_ms);
	} else if (strcmp(mode, "flood") == 0) {
		/* Closed, every one: each was refused, not left waiting. */
		closed = closed_within(p.fd, p.wait_ms);
		for (k = 1; k < count && closed; k++) {
			close(p.fd);
			p.fd = dial(from, to);
			closed = closed_within(p.fd, p.wait_ms);
		}
		printf("%d connection%s\n", k, k == 1 ? "" : "s");
	} else if (strcmp(mode, "garbage") == 0) {
		static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		    "\x00\x01\x02\x03\xff\xfe\xfd\xfc garbage garbage garbage";

		write_full(p.fd, junk, sizeof(junk));
		closed = closed_within(p.fd, p.wait_ms);
	} else if (strcmp(mode, "slowloris") == 0) {
		/* A valid handshake header, one byte at a time. */
		struct wire_hdr h = { .magic = WIRE_HANDSHAKE, .len = 100 };
		uint8_t raw[WIRE_HDR_LEN];
		size_t i;

		wire_hdr_encode(&h, raw);
		for (i = 0; i < sizeof(raw) && !closed; i++) {
			if (write(p.fd, raw + i, 1) != 1) {
				closed = 1;
				break;
			}
			closed = closed_within(p.fd, byte_ms);
		}
		if (!closed)
			closed = closed_within(p.fd, p.wait_ms);
	} else if (strcmp(mode, "handshake") == 0) {
		if (handshake(&p) == -1)
			closed = 1;
		else
			closed = !keepalive_answered(&p, NULL, NULL) ||
			    closed_within(p.fd, p.wait_ms);
	} else if (strcmp(mode, "oversize") == 0) {
		struct wire_hdr h = { .magic = WIRE_REQUEST, .type = 1,
		    .len = NETD_MAX_PAYLOAD + 1 };
		uint8_t raw[WIRE_HDR_LEN];

		if (handshake(&p) == -1 || !keepalive_answered(&p, NULL, NULL))
			fatalx("the link did not come up");
		printf("link up; sending a %u-byte frame header\n", h.len);
		wire_hdr_encode(&h, raw);
		write_full(p.fd, raw, sizeof(raw));
		t0 = now();
		closed = closed_within(p.fd, p.wait_ms);
	} else if (strcmp(mode, "replay") == 0) {
		uint8_t copy[WIRE_HDR_LEN + WIRE_MAC_LEN];
		size_t copylen = 0;

		if (handshake(&p) == -1 || !keepalive_answered(&p, copy, &copylen))
			fatalx("the authenticated link did not come up");
		printf("link up and authenticated; replaying a %zu-byte frame\n", copylen);
		write_full(p.fd, copy, copylen);
		t0 = now();
		closed = closed_within(p.fd, p.wait_ms);
	} else {
		usage();
	}
	printf("%s after %.3f s\n", closed ? "closed by netd" : "still open", now() - t0);
	close(p.fd);
	return (strcmp(expect, "closed") == 0) == closed ? 0 : 1;
}
