/*
 * Optional authentication of links, beyond o2net (corosync's authkey is
 * the model). With a cluster key file, each side of a new link sends a
 * fresh nonce in its handshake and then proves it knows the key by a
 * keyed BLAKE2b over both node numbers and both nonces; every later
 * frame carries a keyed BLAKE2b MAC (per direction keys bound to the two
 * nonces, so a frame of another session never verifies) and a sequence
 * number that must grow by one (so a frame of this session replayed
 * never passes). libsodium's crypto_generichash is BLAKE2b.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "netd.h"
#include "util.h"

#define KEYFILE_MIN	32
#define KEYFILE_MAX	1024
#define KEYGEN_BYTES	64

int
auth_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

int
auth_load_key(const char *path, uint8_t key[AUTH_KEY_LEN], char *why, size_t len)
{
	uint8_t buf[KEYFILE_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	/* A key others can read is no secret: refuse it, as ssh does. */
	if (st.st_mode & 077) {
		snprintf(why, len, "%s: mode %04o lets others read the cluster "
		    "key (chmod 600 it)", path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < KEYFILE_MIN || n > KEYFILE_MAX) {
		snprintf(why, len, "%s: a cluster key has %d to %d bytes, this "
		    "file %zd", path, KEYFILE_MIN, KEYFILE_MAX, n);
		sodium_memzero(buf, sizeof(buf));
		return -1;
	}
	/* Any length of key material, one fixed-size key. */
	crypto_generichash(key, AUTH_KEY_LEN, buf, (size_t)n, NULL, 0);
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

int
auth_keygen(const char *path, char *why, size_t len)
{
	uint8_t buf[KEYGEN_BYTES];
	int fd, rc;

	if (auth_init() == -1) {
		snprintf(why, len, "libsodium does not initialise");
		return -1;
	}
	/* Never overwrite a key: the cluster's other nodes may use it. */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	randombytes_buf(buf, sizeof(buf));
	rc = write_full(fd, buf, sizeof(buf));
	sodium_memzero(buf, sizeof(buf));
	if (rc == -1 || fchmod(fd, 0600) == -1 || close(fd) == -1) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

void
auth_nonce(uint8_t nonce[AUTH_NONCE_LEN])
{
	randombytes_buf(nonce, AUTH_NONCE_LEN);
}

static void
put_be32(uint8_t *p, unsigned v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* label || from || to || nonce_a || nonce_b, hashed under the key. */
static void
derive(const uint8_t key[AUTH_KEY_LEN], const char *label, unsigned from,
    unsigned to, const uint8_t a[AUTH_NONCE_LEN], const uint8_t b[AUTH_NONCE_LEN],
    uint8_t out[AUTH_KEY_LEN])
{
	crypto_generichash_state st;
	uint8_t nums[8];

	put_be32(nums, from);
	put_be32(nums + 4, to);
	crypto_generichash_init(&st, key, AUTH_KEY_LEN, AUTH_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	crypto_generichash_update(&st, nums, sizeof(nums));
	crypto_generichash_update(&st, a, AUTH_NONCE_LEN);
	crypto_generichash_update(&st, b, AUTH_NONCE_LEN);
	crypto_generichash_final(&st, out, AUTH_KEY_LEN);
}

void
auth_proof(const uint8_t key[AUTH_KEY_LEN], unsigned from, unsigned to,
    const uint8_t from_nonce[AUTH_NONCE_LEN],
    const uint8_t to_nonce[AUTH_NONCE_LEN], uint8_t out[AUTH_KEY_LEN])
{
	derive(key, "netd proof", from, to, from_nonce, to_nonce, out);
}

int
auth_proof_ok(const uint8_t a[AUTH_KEY_LEN], const uint8_t b[AUTH_KEY_LEN])
{
	return sodium_memcmp(a, b, AUTH_KEY_LEN) == 0;
}

void
auth_session_init(struct auth_session *s, const uint8_t key[AUTH_KEY_LEN],
    unsigned self, unsigned peer, const uint8_t self_nonce[AUTH_NONCE_LEN],
    const uint8_t peer_nonce[AUTH_NONCE_LEN])
{
	derive(key, "netd mac", self, peer, self_nonce, peer_nonce, s->tx_key);
	derive(key, "netd mac", peer, self, peer_nonce, self_nonce, s->rx_key);
	s->tx_seq = 0;
	s->rx_seq = 0;
}

void
auth_mac(const uint8_t key[AUTH_KEY_LEN], const uint8_t *data, size_t len,
    uint8_t out[WIRE_MAC_LEN])
{
	crypto_generichash(out, WIRE_MAC_LEN, data, len, key, AUTH_KEY_LEN);
}

int
auth_check_frame(struct auth_session *s, const uint8_t *frame, size_t flen,
    const struct wire_hdr *h, char *why, size_t whylen)
{
	uint8_t mac[WIRE_MAC_LEN];

	if (flen < WIRE_HDR_LEN + WIRE_MAC_LEN || !(h->flags & WIRE_F_MAC)) {
		snprintf(why, whylen, "%s frame without a MAC",
		    wire_magic_name(h->magic));
		return -1;
	}
	/* The MAC first: only then is the sequence number the sender's. */
	auth_mac(s->rx_key, frame, flen - WIRE_MAC_LEN, mac);
	if (sodium_memcmp(mac, frame + flen - WIRE_MAC_LEN, WIRE_MAC_LEN) != 0) {
		snprintf(why, whylen, "%s frame with a bad MAC (wrong key, or "
		    "not from this session)", wire_magic_name(h->magic));
		return -1;
	}
	if (h->seq <= s->rx_seq) {
		snprintf(why, whylen, "replayed %s frame: sequence %llu, last "
		    "accepted %llu", wire_magic_name(h->magic),
		    (unsigned long long)h->seq, (unsigned long long)s->rx_seq);
		return -1;
	}
	if (h->seq != s->rx_seq + 1) {
		snprintf(why, whylen, "%s frame out of sequence: %llu after %llu",
		    wire_magic_name(h->magic), (unsigned long long)h->seq,
		    (unsigned long long)s->rx_seq);
		return -1;
	}
	s->rx_seq = h->seq;
	return 0;
}
