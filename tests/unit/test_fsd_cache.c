/*
 * The block cache: block_forget_owner drops every unreferenced block of
 * one owner and nothing else, however the blocks came and went (owners
 * changed, buffers evicted, referenced ones kept); its default size
 * follows the machine's memory within its bounds.
 */
#include <criterion/criterion.h>

#include <string.h>
#include <unistd.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

/* far past what mkfs.ocfs2 puts in a 64 MB volume's first groups */
#define FIRST	12000

static void
make_volume(void)
{
	make_volume_of("64M", 4096, "");
}

static void
read_put(struct fsd *fs, uint64_t blkno, uint64_t owner)
{
	struct fsd_buf *b;

	cr_assert_eq(block_read_owned(fs, blkno, BLK_RAW, owner, &b), 0, "block %llu",
	    (unsigned long long)blkno);
	block_put(fs, b);
}

/* How many of [first, first+n) a read finds in the cache (each read once). */
static unsigned
cached(struct fsd *fs, uint64_t first, unsigned n, uint64_t owner)
{
	uint64_t hits = fs->cache.hits;
	unsigned i;

	for (i = 0; i < n; i++)
		read_put(fs, first + i, owner);
	return (unsigned)(fs->cache.hits - hits);
}

Test(fsd_cache, forget_owner_drops_its_idle_blocks_only,
    .init = make_volume, .fini = remove_volume, .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd_buf *held;
	struct fsd fs;
	char err[256];
	unsigned i;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	/* 100 blocks of inode 5000, 100 of 6000, one of 5000's held */
	for (i = 0; i < 100; i++) {
		read_put(&fs, FIRST + i, 5000);
		read_put(&fs, FIRST + 100 + i, 6000);
	}
	cr_assert_eq(block_read_owned(&fs, FIRST, BLK_RAW, 5000, &held), 0);
	/* block FIRST+200 read for 5000, then for 6000: re-read, now 6000's */
	read_put(&fs, FIRST + 200, 5000);
	read_put(&fs, FIRST + 200, 6000);

	block_forget_owner(&fs, 5000);
	cr_assert_eq(cached(&fs, FIRST + 1, 99, 5000), 0, "5000's idle blocks are gone");
	cr_assert_eq(cached(&fs, FIRST, 1, 5000), 1, "the held one stays");
	cr_assert_eq(cached(&fs, FIRST + 100, 101, 6000), 101, "6000's all stay");
	block_put(&fs, held);

	block_forget_owner(&fs, 6000);
	cr_assert_eq(cached(&fs, FIRST + 100, 101, 6000), 0, "then 6000's go, the moved one too");
	cr_assert_eq(cached(&fs, FIRST, 100, 5000), 100, "and 5000's, read again, stay");
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_cache, owners_survive_eviction, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 64, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	char err[256];
	unsigned i;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	/* ten times the cache, of three owners in turn: most are evicted */
	for (i = 0; i < 640; i++)
		read_put(&fs, FIRST + i, 7000 + i % 3);
	cr_assert_leq(fs.cache.nbufs, 64);
	block_forget_owner(&fs, 7001);
	/* the last 64 are cached; 21 of them 7001's, gone: the 10 misses below evict nothing */
	cr_assert_eq(cached(&fs, FIRST + 640 - 30, 30, 0), 20,
	    "of the last 30, 7001's 10 are gone and the rest stay");
	block_forget_owner(&fs, 7000);
	block_forget_owner(&fs, 7002);
	super_unmount(&fs);
}

Test(fsd_cache, default_size_follows_memory_within_bounds)
{
	uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t each = 4096 + sizeof(struct fsd_buf);
	uint64_t want = mem / 64 / each;
	unsigned n = cache_default_blocks(4096);

	if (want < 16384)
		want = 16384;
	if (want > (1ull << 30) / each)
		want = (1ull << 30) / each;
	cr_assert_eq(n, want, "%u blocks for %llu bytes of memory", n, (unsigned long long)mem);
	cr_assert_geq(n, 16384);
	cr_assert_leq((uint64_t)n * each, 1ull << 30);
	/* small blocks take a page each all the same */
	cr_assert_eq(cache_default_blocks(512), n);
	cr_assert_leq((uint64_t)cache_default_blocks(65536) * 65536, 1ull << 30);
}
