#include <pthread.h>

#include "crc32.h"

static uint32_t crc_table[256];
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
		crc_table[i] = c;
	}
}

uint32_t
crc32_le(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_table_init);
	while (len-- > 0)
		crc = (crc >> 8) ^ crc_table[(crc ^ *p++) & 0xff];
	return crc;
}
