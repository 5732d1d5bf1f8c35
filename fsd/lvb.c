/*
 * META's value block: ocfs2_meta_lvb (dlmglue.h, OCFS2_LVB_VERSION 5), the
 * inode's attributes as its last EX holder left them, big-endian, which
 * the next node granted the lock from NL may trust without reading the
 * inode block.
 */
#include <string.h>

#include "o2dlm.h"

#include "glue.h"
#include "lockres.h"

/* ocfs2_pack_timespec: seconds in the high 34 bits, nanoseconds below. */
static uint64_t
pack_time(uint64_t sec, uint32_t nsec)
{
	if (sec > (1ULL << 34) - 1)
		sec = (1ULL << 34) - 1;
	return sec << 30 | (nsec & ((1u << 30) - 1));
}

void
meta_lvb_pack(const struct ocfs2_dinode *di, uint8_t *lvb)
{
	uint8_t *p = lvb;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

#define PUT(off, bits, val) do { v##bits = htobe##bits(val); memcpy(p + (off), &v##bits, sizeof(v##bits)); } while (0)
	memset(lvb, 0, 64);
	lvb[0] = 5;	/* OCFS2_LVB_VERSION */
	PUT(2, 16, LE16(di->i_dyn_features));
	PUT(4, 32, LE32(di->i_clusters));
	PUT(8, 32, LE32(di->i_uid));
	PUT(12, 32, LE32(di->i_gid));
	PUT(16, 64, pack_time(LE64(di->i_atime), LE32(di->i_atime_nsec)));
	PUT(24, 64, pack_time(LE64(di->i_ctime), LE32(di->i_ctime_nsec)));
	PUT(32, 64, pack_time(LE64(di->i_mtime), LE32(di->i_mtime_nsec)));
	PUT(40, 64, LE64(di->i_size));
	PUT(48, 16, LE16(di->i_mode));
	PUT(50, 16, LE16(di->i_links_count));
	PUT(52, 32, LE32(di->i_attr));
	PUT(56, 32, LE32(di->i_generation));
#undef PUT
}

static uint64_t
lvb_get(const uint8_t *lvb, unsigned off, unsigned len)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < len; i++)
		v = v << 8 | lvb[off + i];
	return v;
}

int
meta_lvb_stat(struct fsd *fs, struct fsd_lockres *lr, uint32_t generation, struct stat *st)
{
	struct fsd_glue *g = fs->glue;
	uint8_t lvb[DLMC_LVB_LEN];
	uint64_t t;
	int i, fresh;
	struct timespec *ts[3] = { &st->st_atim, &st->st_ctim, &st->st_mtim };

	if (g == NULL)
		return -1;
	pthread_mutex_lock(&g->mtx);
	fresh = (lr->flags & LR_LVB_FRESH) != 0;
	if (fresh)
		memcpy(lvb, lr->lvb, sizeof(lvb));
	pthread_mutex_unlock(&g->mtx);
	/* the layout meta_lvb_pack writes */
	if (!fresh || lvb[0] != 5 || lvb_get(lvb, 56, 4) != generation ||
	    !S_ISREG(lvb_get(lvb, 48, 2)))
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_ino = lr->owner;
	st->st_mode = (mode_t)lvb_get(lvb, 48, 2);
	st->st_nlink = (nlink_t)lvb_get(lvb, 50, 2);
	st->st_uid = (uid_t)lvb_get(lvb, 8, 4);
	st->st_gid = (gid_t)lvb_get(lvb, 12, 4);
	st->st_size = (off_t)lvb_get(lvb, 40, 8);
	st->st_blocks = (blkcnt_t)(lvb_get(lvb, 4, 4) << (fs->cbits - 9));
	st->st_blksize = fs->vol.cluster_bytes;
	for (i = 0; i < 3; i++) {
		t = lvb_get(lvb, 16 + 8 * (unsigned)i, 8);
		ts[i]->tv_sec = (time_t)(t >> 30);
		ts[i]->tv_nsec = (long)(t & ((1u << 30) - 1));
	}
	pthread_mutex_lock(&g->mtx);
	g->lvb_stats++;
	pthread_mutex_unlock(&g->mtx);
	return 0;
}
