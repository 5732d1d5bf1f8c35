/*
 * fsd's checks of the metadata blocks it reads (fsd/block.c's
 * block_validate: inodes with their chain lists, local allocs, truncate
 * logs, inline data and extent lists (fsd/extent.c); extent blocks;
 * group descriptors; directory blocks (fsd/dir.c)), then what fsd does
 * with an inode that passed: its directory entries and its extent map.
 * The volume has no device: a read of any other block fails, as a bad
 * disk would. The input is a 16-byte header (the block's type, log2 of
 * the block and cluster sizes, the volume's generation, the block's
 * number, a logical block to map) and the block, zero-filled to the
 * block size.
 */
#include "fuzz.h"
#include "fsd/fsd.h"

#define VOLUME_BLOCKS	(1u << 20)

static struct fsd fs;
static uint8_t *block;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fs.vol.fd = -1;
	fs.vol.path = "fuzz";
	fs.nblocks = VOLUME_BLOCKS;
	dir_register_checks(&fs);
	extent_register_checks(&fs);
	pthread_mutex_init(&fs.err_mtx, NULL);
	if (posix_memalign((void **)&block, 4096, 4096) != 0)
		fatalx("out of memory");
	return 0;
}

static int
count_entry(void *arg, const struct fsd_dirent *d)
{
	unsigned *n = arg;

	if (d->name_len == 0 || d->name[d->name_len] != '\0')
		abort();	/* dir_iterate hands out names as C strings */
	(*n)++;
	return 0;
}

static void
use_inode(const struct ocfs2_dinode *di, uint32_t lblk)
{
	struct fsd_extent ex;
	unsigned entries = 0;
	uint32_t flags = LE32(di->i_flags);

	/* id2 holds an extent list in these, and only these, as validate_inode says */
	if (flags & (OCFS2_CHAIN_FL | OCFS2_LOCAL_ALLOC_FL | OCFS2_DEALLOC_FL |
	    OCFS2_SUPER_BLOCK_FL))
		return;
	switch (LE16(di->i_mode) & S_IFMT) {
	case S_IFDIR:
		dir_iterate(&fs, di, 0, count_entry, &entries);
		break;
	case S_IFLNK:
		if (LE32(di->i_clusters) == 0)
			return;	/* a fast symlink: its target is in id2 */
		break;
	case S_IFREG: case 0:
		break;
	default:
		return;
	}
	if (!(LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL)) {
		extent_map(&fs, LE64(di->i_blkno), &di->id2.i_list, 0, &ex);
		extent_map(&fs, LE64(di->i_blkno), &di->id2.i_list, lblk, &ex);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	enum blk_type type;
	uint64_t blkno;
	uint32_t lblk;
	size_t len;
	const uint8_t *p;
	char why[256];

	type = BLK_INODE + fuzz_u8(&in) % (BLK_NTYPES - BLK_INODE);
	fs.bbits = 9 + fuzz_u8(&in) % 4;
	fs.cbits = 12 + fuzz_u8(&in) % 9;
	fs.bpc = 1u << (fs.cbits - fs.bbits);
	fs.vol.block_bytes = 1u << fs.bbits;
	fs.vol.cluster_bytes = 1u << fs.cbits;
	fs.fs_generation = fuzz_u32(&in);
	blkno = (uint64_t)fuzz_u32(&in) << 32;
	blkno |= fuzz_u32(&in);
	lblk = fuzz_u8(&in);
	p = fuzz_take(&in, fs.vol.block_bytes, &len);
	memset(block, 0, 4096);
	memcpy(block, p, len);

	if (block_validate(&fs, type, blkno, block, why, sizeof(why)) == 0 && type == BLK_INODE) {
		cache_init(&fs.cache, 64);
		use_inode((const struct ocfs2_dinode *)block, lblk);
		cache_destroy(&fs.cache);
	}
	return 0;
}
