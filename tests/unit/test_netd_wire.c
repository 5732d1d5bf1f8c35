/*
 * netd's wire framing: the header layout byte for byte, frames found in
 * a stream however it is split, and every way a stream is condemned
 * (bad magic, unknown flags, oversize, MAC where none belongs or missing).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "netd/netd.h"

static char why[256];

/* A frame as a peer would send it (no MAC). */
static size_t
make_frame(uint8_t *out, uint16_t magic, uint32_t type, uint32_t msg_num,
    const uint8_t *payload, uint32_t len)
{
	struct wire_hdr h = { .magic = magic, .type = type, .key = 0xabcd0001,
	    .msg_num = msg_num, .sys_status = 1, .status = -5, .len = len };

	wire_hdr_encode(&h, out);
	if (len > 0)
		memcpy(out + WIRE_HDR_LEN, payload, len);
	return WIRE_HDR_LEN + len;
}

Test(wire, header_layout_is_fixed_big_endian)
{
	static const uint8_t want[WIRE_HDR_LEN] = {
		0xfa, 0x55, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x02, 0xff, 0xff, 0xff, 0xfe,
		0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	struct wire_hdr h = { .magic = WIRE_REQUEST, .flags = WIRE_F_MAC,
	    .type = 7, .key = 0x1234, .msg_num = 1, .sys_status = 2,
	    .status = -2, .len = 5, .seq = 0x0102030405060708ull }, back;
	uint8_t raw[WIRE_HDR_LEN];

	wire_hdr_encode(&h, raw);
	cr_assert_arr_eq(raw, want, WIRE_HDR_LEN);
	wire_hdr_decode(raw, &back);
	cr_assert_eq(back.magic, h.magic);
	cr_assert_eq(back.flags, h.flags);
	cr_assert_eq(back.type, 7);
	cr_assert_eq(back.key, 0x1234);
	cr_assert_eq(back.msg_num, 1);
	cr_assert_eq(back.sys_status, 2);
	cr_assert_eq(back.status, -2);
	cr_assert_eq(back.len, 5);
	cr_assert_eq(back.seq, 0x0102030405060708ull);
}

/* Feed `stream` in pieces of `step` bytes; expect the three frames back. */
static void
split_run(const uint8_t *stream, size_t total, size_t step, const uint32_t *lens,
    const uint8_t *payload)
{
	struct wire_hdr h;
	size_t flen, fed = 0, n, got = 0, off = 0;
	int rc;

	while (fed < total || got < 3) {
		n = total - fed < step ? total - fed : step;
		fed += n;
		while ((rc = wire_peek(stream + off, fed - off, 0, &h, &flen, why,
		    sizeof(why))) == 1) {
			cr_assert_lt(got, 3);
			cr_assert_eq(h.len, lens[got], "frame %zu: len %u", got, h.len);
			cr_assert_eq(h.msg_num, got + 1);
			cr_assert_eq(h.status, -5);
			cr_assert_eq(flen, WIRE_HDR_LEN + lens[got]);
			cr_assert_eq(memcmp(stream + off + WIRE_HDR_LEN, payload,
			    lens[got]), 0);
			off += flen;
			got++;
		}
		cr_assert_eq(rc, 0, "stream condemned at %zu bytes: %s", fed, why);
		if (fed == total)
			break;
	}
	cr_assert_eq(got, 3, "step %zu: got %zu frames", step, got);
	cr_assert_eq(off, total);
}

Test(wire, frames_survive_any_split)
{
	static const uint32_t lens[3] = { 0, NETD_MAX_PAYLOAD, 17 };
	uint8_t *payload = malloc(NETD_MAX_PAYLOAD), *stream;
	size_t total = 0, i;
	static const size_t steps[] = { 1, 2, 3, 7, 39, 40, 41, 1000, 4096, 100000 };

	for (i = 0; i < NETD_MAX_PAYLOAD; i++)
		payload[i] = (uint8_t)(i * 31 + 7);
	stream = malloc(3 * (WIRE_HDR_LEN + NETD_MAX_PAYLOAD));
	for (i = 0; i < 3; i++)
		total += make_frame(stream + total, WIRE_REQUEST, 9, (uint32_t)i + 1,
		    payload, lens[i]);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		split_run(stream, total, steps[i], lens, payload);
	free(stream);
	free(payload);
}

Test(wire, partial_header_waits)
{
	uint8_t f[WIRE_HDR_LEN + 4];
	struct wire_hdr h;
	size_t flen;

	make_frame(f, WIRE_REPLY, 3, 1, (const uint8_t *)"abcd", 4);
	cr_assert_eq(wire_peek(f, WIRE_HDR_LEN - 1, 0, &h, &flen, why, sizeof(why)), 0);
	cr_assert_eq(flen, WIRE_HDR_LEN);
	cr_assert_eq(wire_peek(f, WIRE_HDR_LEN + 3, 0, &h, &flen, why, sizeof(why)), 0);
	cr_assert_eq(flen, WIRE_HDR_LEN + 4, "the whole frame's length, once the header is there");
	cr_assert_eq(wire_peek(f, WIRE_HDR_LEN + 4, 0, &h, &flen, why, sizeof(why)), 1);
	cr_assert_eq(flen, WIRE_HDR_LEN + 4);
}

static int
peek_raw(const uint8_t *raw, size_t len, int mac_required)
{
	struct wire_hdr h;
	size_t flen;

	why[0] = '\0';
	return wire_peek(raw, len, mac_required, &h, &flen, why, sizeof(why));
}

Test(wire, bad_magic_condemns_the_stream)
{
	uint8_t f[WIRE_HDR_LEN];

	make_frame(f, 0x1234, 1, 1, NULL, 0);
	cr_assert_eq(peek_raw(f, sizeof(f), 0), -1);
	cr_assert_str_eq(why, "bad magic 0x1234");
	/* Garbage as a scanner would send it. */
	cr_assert_eq(peek_raw((const uint8_t *)"GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxx",
	    WIRE_HDR_LEN, 0), -1);
	cr_assert_str_eq(why, "bad magic 0x4745");
}

Test(wire, oversize_is_refused_from_the_header_alone)
{
	struct wire_hdr h = { .magic = WIRE_REQUEST, .len = NETD_MAX_PAYLOAD + 1 };
	uint8_t raw[WIRE_HDR_LEN];

	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, sizeof(raw), 0), -1);
	cr_assert_str_eq(why, "request frame of 8193 bytes (limit 8192)");
	h.len = 0xffffffff;
	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, sizeof(raw), 0), -1);
	/* Keepalives carry nothing; handshakes are small. */
	h.magic = WIRE_KA_REQ;
	h.len = 1;
	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, sizeof(raw), 0), -1);
	cr_assert_str_eq(why, "keepalive frame of 1 bytes (limit 0)");
	h.magic = WIRE_HANDSHAKE;
	h.len = NETD_HANDSHAKE_MAX + 1;
	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, sizeof(raw), 0), -1);
}

Test(wire, flags_and_mac_presence)
{
	struct wire_hdr h = { .magic = WIRE_REQUEST, .flags = 0x8000 };
	uint8_t raw[WIRE_HDR_LEN + WIRE_MAC_LEN] = { 0 };

	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, WIRE_HDR_LEN, 0), -1);
	cr_assert_str_eq(why, "unknown flags 0x8000 in a request frame");
	h.flags = 0;
	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, WIRE_HDR_LEN, 1), -1, "keyed link, no MAC");
	cr_assert_str_eq(why, "request frame without a MAC");
	h.flags = WIRE_F_MAC;
	wire_hdr_encode(&h, raw);
	cr_assert_eq(peek_raw(raw, WIRE_HDR_LEN, 0), -1, "unkeyed link, MAC");
	/* Keyed: the frame is whole only with its MAC. */
	cr_assert_eq(peek_raw(raw, WIRE_HDR_LEN, 1), 0);
	cr_assert_eq(peek_raw(raw, sizeof(raw), 1), 1);
}

Test(wire, sys_status_to_errno)
{
	cr_assert_eq(wire_errno(WIRE_SYS_OK), 0);
	cr_assert_eq(wire_errno(WIRE_SYS_NO_HANDLER), ENOPROTOOPT);
	cr_assert_eq(wire_errno(WIRE_SYS_OVERFLOW), EOVERFLOW);
	cr_assert_eq(wire_errno(WIRE_SYS_HANDLER_GONE), ECONNRESET);
	cr_assert_eq(wire_errno(77), EPROTO);
}
