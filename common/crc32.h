/* Linux's crc32_le: o2hb's block checksum and o2dlm's domain key. */
#ifndef OCFS2_CRC32_H
#define OCFS2_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Reflected polynomial 0xEDB88320, no final inversion: not zlib's crc32. */
uint32_t crc32_le(uint32_t crc, const void *buf, size_t len);

#endif
