/*
 * What a peer's netd sends on a TCP link (netd/wire.c, handshake.c,
 * auth.c): frames found in the byte stream as link.c's link_read finds
 * them, the MAC and sequence of each once the link is keyed, the
 * Handshake checked against ours (node 1 of cluster "lc", the peer
 * being node 2), the AuthProof against the cluster key. The first input
 * byte says whether we have a cluster key; the rest is the stream.
 */
#include "fuzz.h"
#include "netd/netd.h"

/* The key and our nonce; tests/fuzz/seeds.c makes a peer that knows both. */
static const uint8_t key[AUTH_KEY_LEN] = "fuzz cluster key, 32 bytes long";
static const uint8_t our_nonce[AUTH_NONCE_LEN] = "our nonce, also 32 bytes long..";

static const struct hs_params ours_plain = {
	.protocol_version = NETD_PROTOCOL_VERSION, .cluster = "lc",
	.hb_write_timeout_ms = 60000, .idle_timeout_ms = 30000,
	.keepalive_delay_ms = 2000, .reconnect_delay_ms = 2000,
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (auth_init() == -1)
		fatalx("libsodium does not initialise");
	return 0;
}

/* The handshake frames; 0: the link goes on, -1: it closes. */
static int
on_handshake(const struct hs_params *ours, const struct wire_hdr *h, const uint8_t *p,
    struct auth_session *as, uint8_t peer_nonce[AUTH_NONCE_LEN])
{
	Netd__Handshake *hs;
	char why[512];
	int rc;

	if ((hs = netd__handshake__unpack(NULL, h->len, p)) == NULL)
		return -1;
	rc = hs_check(ours, 1, 2, hs, why, sizeof(why));
	if (rc == 0 && ours->auth) {
		memcpy(peer_nonce, hs->nonce.data, AUTH_NONCE_LEN);
		auth_session_init(as, key, 1, 2, our_nonce, peer_nonce);
	}
	netd__handshake__free_unpacked(hs, NULL);
	return rc;
}

static int
on_auth(const struct wire_hdr *h, const uint8_t *p, const uint8_t peer_nonce[AUTH_NONCE_LEN])
{
	Netd__AuthProof *ap;
	uint8_t want[AUTH_KEY_LEN];
	int ok;

	if ((ap = netd__auth_proof__unpack(NULL, h->len, p)) == NULL)
		return -1;
	auth_proof(key, 2, 1, peer_nonce, our_nonce, want);
	ok = ap->proof.len == AUTH_KEY_LEN && auth_proof_ok(ap->proof.data, want);
	netd__auth_proof__free_unpacked(ap, NULL);
	return ok ? 0 : -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_params ours = ours_plain;
	struct auth_session as;
	struct wire_hdr h;
	uint8_t peer_nonce[AUTH_NONCE_LEN];
	size_t flen;
	char why[256];
	int got_hs = 0, keyed = 0, up = 0;

	if (size == 0)
		return 0;
	ours.auth = data[0] & 1;
	data++;
	size--;
	memset(&as, 0, sizeof(as));
	while (wire_peek(data, size, keyed, &h, &flen, why, sizeof(why)) == 1) {
		if (keyed && auth_check_frame(&as, data, flen, &h, why, sizeof(why)) == -1)
			return 0;
		switch (h.magic) {
		case WIRE_HANDSHAKE:
			if (up || got_hs || on_handshake(&ours, &h, data + WIRE_HDR_LEN, &as,
			    peer_nonce) == -1)
				return 0;
			got_hs = 1;
			up = !ours.auth;
			break;
		case WIRE_AUTH:
			if (up || !ours.auth || !got_hs ||
			    on_auth(&h, data + WIRE_HDR_LEN, peer_nonce) == -1)
				return 0;
			keyed = up = 1;
			break;
		default:
			if (!up)
				return 0;
			wire_errno(h.sys_status);
			break;
		}
		data += flen;
		size -= flen;
	}
	return 0;
}
