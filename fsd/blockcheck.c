/*
 * OCFS2's metadata block check (metaecc): a CRC32 of the block, and a
 * Hamming code over its bits that locates one flipped bit so it can be
 * put back. Both are computed with the check field itself zeroed, as
 * fs/ocfs2/blockcheck.c does; doc/metaecc.md has the rules.
 */
#include <endian.h>
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
 * The code is the xor of the code positions of the set data bits.
 * Positions 64k .. 64k+63 (k >= 1) lie above the parity positions 1, 2,
 * 4 .. 2^(6+L), L = floor(log2 k), and 64k is itself one when k is a
 * power of two; so position 64k + j holds data bit 64k + j - 8 - L: the
 * code word k is the 64 data bits from bit 56 - L of data word k - 1 on.
 * Since 64k + j = 64k | j, a word adds 64k if it has an odd number of
 * set bits, and the xor of its set bits' j, which over all words is the
 * xor of the j of the xor of all words: six parities at the end.
 * Positions 0..63 (data bits 0..56) mix in six parity positions: bit by
 * bit.
 */
uint32_t
blockcheck_hamming(const uint8_t *data, size_t len)
{
	static const uint64_t j_bit[6] = {
		0xAAAAAAAAAAAAAAAAull, 0xCCCCCCCCCCCCCCCCull, 0xF0F0F0F0F0F0F0F0ull,
		0xFF00FF00FF00FF00ull, 0xFFFF0000FFFF0000ull, 0xFFFFFFFF00000000ull,
	};
	uint64_t words[BLOCKCHECK_MAX / 8 + 1], w, all = 0;
	size_t nbits = len * 8, nwords = len / 8, i;
	uint32_t parity = 0, k, log2k = 0;
	unsigned b, s;

	for (i = 0; i < nwords; i++) {
		memcpy(&w, data + 8 * i, sizeof(w));
		words[i] = le64toh(w);
	}
	words[nwords] = 0;		/* past the end: no bits */
	for (i = 0; i < 57; i++)
		if (words[0] & (1ull << i))
			parity ^= blockcheck_code_pos((uint32_t)i);
	for (k = 1; 64 * (size_t)k - 8 - log2k < nbits; k++) {
		s = 56 - log2k;
		w = (words[k - 1] >> s) | (words[k] << (64 - s));
		if (k == 1u << log2k)
			w &= ~1ull;		/* position 64k is parity */
		all ^= w;
		if (__builtin_parityll(w))
			parity ^= 64 * k;
		if (k + 1 == 2u << log2k)
			log2k++;
	}
	for (b = 0; b < 6; b++)
		if (__builtin_parityll(all & j_bit[b]))
			parity ^= 1u << b;
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
