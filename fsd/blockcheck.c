/*
 * OCFS2's metadata block check (metaecc): a CRC32 of the block, and a
 * Hamming code over its bits that locates one flipped bit so it can be
 * put back. Both are computed with the check field itself zeroed, as
 * fs/ocfs2/blockcheck.c does; doc/metaecc.md has the rules.
 */
#include <endian.h>
#include <pthread.h>
#include <string.h>

#include "crc32.h"

#include "fsd.h"

/*
 * The code position of data bit i (0-based): code positions count from
 * 1 and every power of two among them is a parity bit, so data bit 0
 * sits at 3, bit 1 at 5, bits 2..4 at 6, 7, 9 ...
 */
uint32_t
blockcheck_code_pos(uint32_t i)
{
	uint32_t pos = i + 1, p;

	/* each power of two at or below the running position pushes it up */
	for (p = 1; p <= pos; p <<= 1)
		pos++;
	return pos;
}

static int
is_pow2(uint32_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/*
 * Eight data bits at consecutive code positions c .. c+7 (no parity
 * position among them) add the xor of c + j over their set bits j. With
 * c = 8q + r that is 8q or 8q + 8 (by whether j + r carries past 8, an
 * odd number of times each) and the low three bits of r + j: per r and
 * byte value, those three facts are a table.
 */
#define T_LOW		0x07	/* xor of (r + j) & 7 */
#define T_NOCARRY	0x08	/* odd count of set bits with r + j < 8 */
#define T_CARRY		0x10	/* odd count with r + j >= 8 */
static uint8_t byte_tab[8][256];
static pthread_once_t byte_tab_once = PTHREAD_ONCE_INIT;

static void
byte_tab_init(void)
{
	unsigned r, v, j;
	uint8_t t;

	for (r = 0; r < 8; r++)
		for (v = 0; v < 256; v++) {
			t = 0;
			for (j = 0; j < 8; j++) {
				if (!(v & (1u << j)))
					continue;
				t ^= (uint8_t)((r + j) & 7);
				t ^= r + j < 8 ? T_NOCARRY : T_CARRY;
			}
			byte_tab[r][v] = t;
		}
}

uint32_t
blockcheck_hamming(const uint8_t *data, size_t len)
{
	uint32_t parity = 0, pos = 3, next_pow = 4, base;
	size_t byte;
	unsigned bit;
	uint8_t v, t;

	pthread_once(&byte_tab_once, byte_tab_init);
	/* pos: the code position of the next data bit; next_pow: the next parity one */
	for (byte = 0; byte < len; byte++) {
		v = data[byte];
		if (pos + 7 < next_pow) {
			if (v != 0) {
				t = byte_tab[pos & 7][v];
				base = pos & ~7u;
				parity ^= (t & T_LOW) ^ (t & T_NOCARRY ? base : 0) ^
				    (t & T_CARRY ? base + 8 : 0);
			}
			pos += 8;
			if (pos == next_pow) {
				pos++;
				next_pow <<= 1;
			}
			continue;
		}
		for (bit = 0; bit < 8; bit++) {
			if (v & (1u << bit))
				parity ^= pos;
			pos++;
			if (pos == next_pow) {
				pos++;
				next_pow <<= 1;
			}
		}
	}
	return parity;
}

int
blockcheck_hamming_fix(uint8_t *data, size_t len, uint32_t syndrome)
{
	uint32_t i, log2 = 0;

	/*
	 * No syndrome: nothing to fix. One bit set: a parity bit flipped,
	 * the data is intact.
	 */
	if (syndrome == 0 || is_pow2(syndrome))
		return 0;
	if (syndrome >= blockcheck_code_pos((uint32_t)(len * 8)))
		return -1;
	while ((syndrome >> (log2 + 1)) != 0)
		log2++;
	/* the positions at or below it that are parity: 1, 2, 4 ... 2^log2 */
	i = syndrome - 1 - (log2 + 1);
	data[i / 8] ^= (uint8_t)(1u << (i % 8));
	return 1;
}

void
blockcheck_compute(uint8_t *data, size_t len, struct ocfs2_block_check *bc)
{
	uint32_t crc, ecc;

	memset(bc, 0, sizeof(*bc));
	crc = crc32_le(~0u, data, len);
	ecc = blockcheck_hamming(data, len);
	bc->bc_crc32e = htole32(crc);
	/* the parity of any block OCFS2 allows fits 16 bits */
	bc->bc_ecc = htole16((uint16_t)ecc);
}

int
blockcheck_verify(uint8_t *data, size_t len, struct ocfs2_block_check *bc)
{
	uint32_t want_crc = le32toh(bc->bc_crc32e), ecc;
	uint16_t want_ecc = le16toh(bc->bc_ecc);
	int rc = 0;

	memset(bc, 0, sizeof(*bc));
	if (crc32_le(~0u, data, len) != want_crc) {
		ecc = blockcheck_hamming(data, len);
		if (blockcheck_hamming_fix(data, len, ecc ^ want_ecc) == 1 &&
		    crc32_le(~0u, data, len) == want_crc)
			rc = 1;
		else
			rc = -1;
	}
	/*
	 * The field back as it was; a failed fix leaves one bit flipped,
	 * but a block that fails is never used.
	 */
	bc->bc_crc32e = htole32(want_crc);
	bc->bc_ecc = htole16(want_ecc);
	return rc;
}
