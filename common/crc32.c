#include <pthread.h>

#include "crc32.h"

/*
 * Slicing by 8: tab[k][b] is the CRC of byte b followed by k zero bytes,
 * so eight bytes fold in with eight lookups (metaecc checks whole blocks).
 */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_table_init(void)
{
	uint32_t c;
	unsigned i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0xEDB88320u : 0);
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^
			    crc_table[0][crc_table[k - 1][i] & 0xff];
}

uint32_t
crc32_le(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t lo, hi;

	pthread_once(&crc_once, crc_table_init);
	while (len >= 8) {
		lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		    (uint32_t)p[3] << 24);
		hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
		    (uint32_t)p[7] << 24;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return crc;
}
