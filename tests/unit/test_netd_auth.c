/*
 * Link authentication against fixed vectors computed independently
 * (Python's hashlib.blake2b, keyed): the key file, the proof, the
 * per-direction MAC keys, and frames that are tampered with, replayed,
 * out of sequence or from another session.
 */
#include <criterion/criterion.h>

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netd/netd.h"

static char why[512];

static void
unhex(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sscanf(s + 2 * i, "%2hhx", &out[i]);
}

static char keypath[64];

static void
write_key(mode_t mode, size_t len)
{
	uint8_t buf[64];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	strcpy(keypath, "/tmp/netd-test-key.XXXXXX");
	fd = mkstemp(keypath);
	cr_assert_neq(fd, -1);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
}

static void
setup(void)
{
	cr_assert_eq(auth_init(), 0);
}

static void
teardown(void)
{
	if (keypath[0])
		unlink(keypath);
}

TestSuite(auth, .init = setup, .fini = teardown);

static void
vector_key(uint8_t key[AUTH_KEY_LEN])
{
	write_key(0600, 64);
	cr_assert_eq(auth_load_key(keypath, key, why, sizeof(why)), 0, "%s", why);
}

Test(auth, key_file_is_hashed_to_the_key)
{
	uint8_t key[AUTH_KEY_LEN], want[AUTH_KEY_LEN];

	vector_key(key);
	unhex("10d8e6d534b00939843fe9dcc4dae48cdf008f6b8b2b82b156f5404d874887f5", want, 32);
	cr_assert_arr_eq(key, want, AUTH_KEY_LEN);
}

Test(auth, key_file_others_can_read_is_refused)
{
	uint8_t key[AUTH_KEY_LEN];

	write_key(0644, 64);
	cr_assert_eq(auth_load_key(keypath, key, why, sizeof(why)), -1);
	cr_assert(strstr(why, "mode 0644 lets others read the cluster key") != NULL, "%s", why);
}

Test(auth, key_file_too_short_is_refused)
{
	uint8_t key[AUTH_KEY_LEN];

	write_key(0600, 31);
	cr_assert_eq(auth_load_key(keypath, key, why, sizeof(why)), -1);
	cr_assert(strstr(why, "this file 31") != NULL, "%s", why);
}

Test(auth, keygen_makes_a_private_loadable_key)
{
	uint8_t a[AUTH_KEY_LEN], b[AUTH_KEY_LEN];
	char path2[64];
	struct stat st;

	strcpy(keypath, "/tmp/netd-test-gen.XXXXXX");
	cr_assert_neq(mkstemp(keypath), -1);
	unlink(keypath);
	cr_assert_eq(auth_keygen(keypath, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(stat(keypath, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(auth_keygen(keypath, why, sizeof(why)), -1, "never overwrites");
	cr_assert_eq(auth_load_key(keypath, a, why, sizeof(why)), 0, "%s", why);
	snprintf(path2, sizeof(path2), "%s.2", keypath);
	cr_assert_eq(auth_keygen(path2, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(auth_load_key(path2, b, why, sizeof(why)), 0, "%s", why);
	unlink(path2);
	cr_assert(memcmp(a, b, AUTH_KEY_LEN) != 0, "two keys are different");
}

static const uint8_t nonce3[AUTH_NONCE_LEN] = {
	0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
	0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
	0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
};
static const uint8_t nonce1[AUTH_NONCE_LEN] = {
	0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
	0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
	0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
};

Test(auth, proof_vector)
{
	uint8_t key[AUTH_KEY_LEN], proof[AUTH_KEY_LEN], want[AUTH_KEY_LEN];

	vector_key(key);
	auth_proof(key, 3, 1, nonce3, nonce1, proof);
	unhex("cb856f5f0a51c440fb1b4e54788a4850f49646adfc48edf5f4bc9d5f86c97064", want, 32);
	cr_assert_arr_eq(proof, want, AUTH_KEY_LEN);
	cr_assert(auth_proof_ok(proof, want));
	/* Bound to the direction: node 1's proof differs. */
	auth_proof(key, 1, 3, nonce1, nonce3, proof);
	cr_assert(!auth_proof_ok(proof, want));
}

/* Node 3 sends "hello" to node 1 with sequence 1. */
static size_t
frame3to1(struct auth_session *s3, uint8_t *f, uint64_t seq)
{
	struct wire_hdr h = { .magic = WIRE_REQUEST, .flags = WIRE_F_MAC,
	    .type = 7, .key = 0x1234, .msg_num = 1, .len = 5, .seq = seq };

	wire_hdr_encode(&h, f);
	memcpy(f + WIRE_HDR_LEN, "hello", 5);
	auth_mac(s3->tx_key, f, WIRE_HDR_LEN + 5, f + WIRE_HDR_LEN + 5);
	return WIRE_HDR_LEN + 5 + WIRE_MAC_LEN;
}

Test(auth, session_keys_and_mac_vector)
{
	uint8_t key[AUTH_KEY_LEN], want[AUTH_KEY_LEN], f[128], hdrwant[WIRE_HDR_LEN];
	struct auth_session s3, s1;
	struct wire_hdr h;
	size_t n;

	vector_key(key);
	auth_session_init(&s3, key, 3, 1, nonce3, nonce1);
	auth_session_init(&s1, key, 1, 3, nonce1, nonce3);
	unhex("1934c2a308423dbd12fca60513ac4204f4e3cd0bf65983d811442397a5dec521", want, 32);
	cr_assert_arr_eq(s3.tx_key, want, AUTH_KEY_LEN);
	cr_assert_arr_eq(s1.rx_key, want, AUTH_KEY_LEN, "each side derives the other's tx key");
	cr_assert_arr_eq(s1.tx_key, s3.rx_key, AUTH_KEY_LEN);
	n = frame3to1(&s3, f, 1);
	unhex("fa550001000000070000123400000001000000000000000000000005000000000000000000000001",
	    hdrwant, WIRE_HDR_LEN);
	cr_assert_arr_eq(f, hdrwant, WIRE_HDR_LEN);
	unhex("0c24d6cf46ab3464f770d46d04d808053ce6467af10263c88c40102c48a01370", want, 32);
	cr_assert_arr_eq(f + WIRE_HDR_LEN + 5, want, WIRE_MAC_LEN);
	wire_hdr_decode(f, &h);
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(s1.rx_seq, 1);
}

Test(auth, replayed_tampered_and_foreign_frames_are_refused)
{
	uint8_t key[AUTH_KEY_LEN], f[128], g[128];
	uint8_t other[AUTH_NONCE_LEN] = { 9 };
	struct auth_session s3, s1, old3;
	struct wire_hdr h;
	size_t n;

	vector_key(key);
	auth_session_init(&s3, key, 3, 1, nonce3, nonce1);
	auth_session_init(&s1, key, 1, 3, nonce1, nonce3);
	n = frame3to1(&s3, f, 1);
	wire_hdr_decode(f, &h);
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), 0, "%s", why);
	/* The same frame again. */
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), -1);
	cr_assert_str_eq(why, "replayed request frame: sequence 1, last accepted 1");
	/* One bit of the payload flipped. */
	n = frame3to1(&s3, f, 2);
	memcpy(g, f, n);
	g[WIRE_HDR_LEN] ^= 1;
	wire_hdr_decode(g, &h);
	cr_assert_eq(auth_check_frame(&s1, g, n, &h, why, sizeof(why)), -1);
	cr_assert(strstr(why, "bad MAC") != NULL, "%s", why);
	cr_assert_eq(s1.rx_seq, 1, "a refused frame does not advance the sequence");
	/* A sequence number skipped. */
	n = frame3to1(&s3, f, 3);
	wire_hdr_decode(f, &h);
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), -1);
	cr_assert_str_eq(why, "request frame out of sequence: 3 after 1");
	/* A frame of an earlier session (other nonces) never verifies. */
	auth_session_init(&old3, key, 3, 1, other, nonce1);
	n = frame3to1(&old3, f, 2);
	wire_hdr_decode(f, &h);
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), -1);
	cr_assert(strstr(why, "bad MAC") != NULL, "%s", why);
	/* The right next frame still passes. */
	n = frame3to1(&s3, f, 2);
	wire_hdr_decode(f, &h);
	cr_assert_eq(auth_check_frame(&s1, f, n, &h, why, sizeof(why)), 0, "%s", why);
}
