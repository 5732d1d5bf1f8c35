/*
 * The o2hb disk block: the checksum is Linux's crc32_le (seed 0, no
 * final inversion), checked against an independent bitwise version and
 * against fixed values computed outside this code (Python's zlib:
 * crc32_le(0, d) = zlib.crc32(d) ^ zlib.crc32(zeros(len(d)))); the layout
 * byte by byte; round trips; bad checksums.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "crc32.h"
#include "hbd/hbd.h"

/* The textbook one-bit-at-a-time reflected CRC, init 0, no final xor. */
static uint32_t
crc_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = 0;
	int k;

	while (len-- > 0) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ ((crc & 1) ? 0xEDB88320u : 0);
	}
	return crc;
}

static const struct hb_block sample = {
	.seq = 0x0123456789abcdefull,
	.node = 7,
	.generation = 0xfedcba9876543210ull,
	.dead_ms = 62000,
};

Test(hbd_block, crc_check_value)
{
	/* Linux crc32_le(0, "123456789", 9); zlib's check value is 0xCBF43926. */
	cr_assert_eq(crc32_le(0, "123456789", 9), 0x2DFD2D88u);
	cr_assert_eq(crc32_le(0, "", 0), 0);
}

Test(hbd_block, crc_matches_bitwise_reference)
{
	uint8_t buf[4096];
	size_t i, len;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (len = 0; len <= sizeof(buf); len += 97)
		cr_assert_eq(crc32_le(0, buf, len), crc_bitwise(buf, len),
		    "length %zu", len);
	/* Chaining over pieces equals one pass. */
	cr_assert_eq(crc32_le(crc32_le(0, buf, 100), buf + 100, 900),
	    crc_bitwise(buf, 1000));
}

Test(hbd_block, layout_is_o2hb)
{
	uint8_t b[512];
	size_t i;

	memset(b, 0xaa, sizeof(b));
	hb_block_encode(b, sizeof(b), &sample);
	/* hb_seq le64 at 0 */
	cr_assert_eq(b[0], 0xef);
	cr_assert_eq(b[7], 0x01);
	/* hb_node at 8, pad 9..11 zero */
	cr_assert_eq(b[8], 7);
	cr_assert_eq(b[9] | b[10] | b[11], 0);
	/* hb_generation le64 at 16 */
	cr_assert_eq(b[16], 0x10);
	cr_assert_eq(b[23], 0xfe);
	/* hb_dead_ms le32 at 24: 62000 = 0x0000f230 */
	cr_assert_eq(b[24], 0x30);
	cr_assert_eq(b[25], 0xf2);
	cr_assert_eq(b[26] | b[27], 0);
	for (i = 28; i < sizeof(b); i++)
		cr_assert_eq(b[i], 0, "byte %zu not zeroed", i);
}

Test(hbd_block, checksum_fixed_vector)
{
	uint8_t b[512], z[512];
	uint32_t ck;

	hb_block_encode(b, sizeof(b), &sample);
	memcpy(&ck, b + 12, 4);
	/* Computed with Python's zlib from the same 512 bytes. */
	cr_assert_eq(le32toh(ck), 0x19afce90u);
	/* And the definition: the CRC of the block with the field zeroed. */
	memcpy(z, b, sizeof(z));
	memset(z + 12, 0, 4);
	cr_assert_eq(le32toh(ck), crc_bitwise(z, sizeof(z)));
}

Test(hbd_block, round_trip_every_block_size)
{
	uint8_t b[4096];
	struct hb_block out;
	unsigned bs;

	for (bs = 512; bs <= 4096; bs <<= 1) {
		hb_block_encode(b, bs, &sample);
		cr_assert_eq(hb_block_decode(b, bs, &out), 1, "block size %u", bs);
		cr_assert_eq(out.seq, sample.seq);
		cr_assert_eq(out.node, sample.node);
		cr_assert_eq(out.generation, sample.generation);
		cr_assert_eq(out.dead_ms, sample.dead_ms);
	}
}

Test(hbd_block, bad_checksum_detected)
{
	uint8_t b[512];
	struct hb_block out;
	size_t i;

	/* Any single flipped bit, in the header or the zero tail, is caught. */
	for (i = 0; i < sizeof(b) * 8; i += 37) {
		hb_block_encode(b, sizeof(b), &sample);
		b[i / 8] ^= (uint8_t)(1u << (i % 8));
		cr_assert_eq(hb_block_decode(b, sizeof(b), &out), 0, "bit %zu", i);
	}
}

Test(hbd_block, zeroed_slot)
{
	uint8_t b[512];
	struct hb_block out;

	/* crc32_le(0, zeros) is 0, so a freshly formatted slot "verifies":
	 * it reads as seq 0 generation 0 and never looks alive. */
	memset(b, 0, sizeof(b));
	cr_assert_eq(hb_block_decode(b, sizeof(b), &out), 1);
	cr_assert_eq(out.seq, 0);
	cr_assert_eq(out.generation, 0);
}
