/*
 * The o2hb disk heartbeat block, bit for bit as the kernel writes it
 * (struct o2hb_disk_heartbeat_block, little-endian):
 *
 *	 0  le64 hb_seq		writer's clock, never 0
 *	 8  u8   hb_node
 *	 9  u8   hb_pad1[3]
 *	12  le32 hb_cksum	crc32_le(0, block, block_bytes), field zeroed
 *	16  le64 hb_generation	random per start, 0 on a clean stop
 *	24  le32 hb_dead_ms
 *	28  zero up to block_bytes
 *
 * The checksum is Linux's crc32_le (common/crc32.c), seed 0.
 */
#include <endian.h>
#include <string.h>

#include "crc32.h"
#include "crc32.h"
#include "hbd.h"

#define OFF_SEQ		0
#define OFF_NODE	8
#define OFF_CKSUM	12
#define OFF_GEN		16
#define OFF_DEAD_MS	24

static void
put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint32_t
get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* The checksum of a block as it stands, its own field counted as zero. */
static uint32_t
block_crc(const uint8_t *p, unsigned block_bytes)
{
	static const uint8_t zero[4];
	uint32_t crc;

	crc = crc32_le(0, p, OFF_CKSUM);
	crc = crc32_le(crc, zero, 4);
	return crc32_le(crc, p + OFF_CKSUM + 4, block_bytes - OFF_CKSUM - 4);
}

void
hb_block_encode(void *buf, unsigned block_bytes, const struct hb_block *b)
{
	uint8_t *p = buf;

	memset(p, 0, block_bytes);
	put_le64(p + OFF_SEQ, b->seq);
	p[OFF_NODE] = b->node;
	put_le64(p + OFF_GEN, b->generation);
	put_le32(p + OFF_DEAD_MS, b->dead_ms);
	put_le32(p + OFF_CKSUM, block_crc(p, block_bytes));
}

int
hb_block_decode(const void *buf, unsigned block_bytes, struct hb_block *b)
{
	const uint8_t *p = buf;

	b->seq = get_le64(p + OFF_SEQ);
	b->node = p[OFF_NODE];
	b->cksum = get_le32(p + OFF_CKSUM);
	b->generation = get_le64(p + OFF_GEN);
	b->dead_ms = get_le32(p + OFF_DEAD_MS);
	return b->cksum == block_crc(p, block_bytes);
}
