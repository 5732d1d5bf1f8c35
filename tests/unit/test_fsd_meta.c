/*
 * fsd's pure metadata checks: lock names, feature refusal, directory
 * block tiling, extent list bounds and the per-type block validation
 * that turns corruption into EIO.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <string.h>

#include "fsd/fsd.h"
#include <ocfs2-kernel/ocfs2_lockid.h>

/* A 4K/4K volume of 1000 clusters with fs generation 0x1234. */
static struct fsd fs;
static uint8_t blk[4096];

static void
setup(void)
{
	memset(&fs, 0, sizeof(fs));
	fs.vol.block_bytes = 4096;
	fs.vol.cluster_bytes = 4096;
	fs.vol.path = "unit";
	fs.bbits = fs.cbits = 12;
	fs.bpc = 1;
	fs.clusters = 1000;
	fs.nblocks = 1000;
	fs.fs_generation = 0x1234;
	dir_register_checks(&fs);
	extent_register_checks(&fs);
	pthread_mutex_init(&fs.err_mtx, NULL);
	memset(blk, 0, sizeof(blk));
}

TestSuite(fsd_meta, .init = setup);

Test(fsd_meta, lock_names_follow_ocfs2_lockid)
{
	char name[FSD_LOCK_NAME_LEN];

	/* doc/cluster-stack.md, Lock names: blkno 0x66720, generation 0x78b84822 */
	lockres_name(name, sizeof(name), FSD_LOCK_META, 0x66720, 0);
	cr_assert_str_eq(name, "M000000000000000006672000000000");
	lockres_name(name, sizeof(name), FSD_LOCK_RW, 0x66720, 0x78b84822);
	cr_assert_str_eq(name, "W000000000000000006672078b84822");
	lockres_name(name, sizeof(name), FSD_LOCK_SUPER, 2, 0);
	cr_assert_str_eq(name, "S000000000000000000000200000000");
	cr_assert_eq(strlen(name), 31);
}

/* Each lock type's table names it with the kernel's letter (POSIX locks: ours). */
Test(fsd_meta, lock_types_use_the_kernels_letters)
{
	static const struct { enum fsd_lock_type t; int kernel; } types[] = {
		{ FSD_LOCK_META, OCFS2_LOCK_TYPE_META },
		{ FSD_LOCK_RW, OCFS2_LOCK_TYPE_RW },
		{ FSD_LOCK_OPEN, OCFS2_LOCK_TYPE_OPEN },
		{ FSD_LOCK_SUPER, OCFS2_LOCK_TYPE_SUPER },
		{ FSD_LOCK_RENAME, OCFS2_LOCK_TYPE_RENAME },
		{ FSD_LOCK_ORPHAN_SCAN, OCFS2_LOCK_TYPE_ORPHAN_SCAN },
		{ FSD_LOCK_FLOCK, OCFS2_LOCK_TYPE_FLOCK },
	};
	char name[FSD_LOCK_NAME_LEN];
	unsigned i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		lockres_name(name, sizeof(name), types[i].t, 7, 0);
		cr_assert_eq(name[0], ocfs2_lock_type_char(types[i].kernel), "type %u", i);
	}
	lockres_name(name, sizeof(name), FSD_LOCK_PLOCK, 7, 0);
	cr_assert_eq(name[0], 'X');
}

Test(fsd_meta, features)
{
	char err[256];

	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_LOCAL_MOUNT, 0, 0,
	    err, sizeof(err)), 0);
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_EXTENDED_SLOT_MAP |
	    OCFS2_FEATURE_INCOMPAT_CLUSTERINFO, 0, 0, err, sizeof(err)), 0);
	/* sparse files with unwritten extents, read-write */
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC,
	    OCFS2_FEATURE_RO_COMPAT_UNWRITTEN, 0, err, sizeof(err)), 0);
	/* inline data and discontiguous groups */
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_INLINE_DATA |
	    OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG, 0, 0, err, sizeof(err)), 0);
	/* extended attributes */
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_XATTR, 0, 0, err, sizeof(err)), 0);
	/* append-dio, with the other allocation features */
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_APPEND_DIO |
	    OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC | OCFS2_FEATURE_INCOMPAT_INLINE_DATA |
	    OCFS2_FEATURE_INCOMPAT_DISCONTIG_BG, OCFS2_FEATURE_RO_COMPAT_UNWRITTEN, 0, err,
	    sizeof(err)), 0);
	/* the default level, refcount trees included (doc/refcount.md), read-write */
	cr_assert_eq(super_check_features(3, 0xB750, 1, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_REFCOUNT_TREE |
	    OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC, 0, 0, err, sizeof(err)), 0, "%s", err);
	/* metaecc (doc/metaecc.md) */
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_META_ECC, 0, 0,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(super_check_features(3, 0x10000, 0, 1, err, sizeof(err)), -1);
	cr_assert(strstr(err, "unknown incompat feature 0x10000") != NULL, "%s", err);
	/* max-features of a local volume (0xBF58), quotas included (doc/quota.md) */
	cr_assert_eq(super_check_features(3, 0xBF58, OCFS2_FEATURE_RO_COMPAT_UNWRITTEN |
	    OCFS2_FEATURE_RO_COMPAT_USRQUOTA | OCFS2_FEATURE_RO_COMPAT_GRPQUOTA, 0,
	    err, sizeof(err)), 0, "%s", err);
	/* an unknown ro-compat feature: refused read-write, fine read-only */
	cr_assert_eq(super_check_features(3, 0, 0x8, 0, err, sizeof(err)), -1);
	cr_assert(strstr(err, "unknown ro-compat feature 0x8") != NULL, "%s", err);
	cr_assert_eq(super_check_features(3, 0, 0x8, 1, err, sizeof(err)), 0);
}

static struct ocfs2_dir_entry *
put_dirent(uint8_t *p, size_t off, uint64_t ino, const char *name, unsigned rec)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)(p + off);

	de->inode = htole64(ino);
	de->rec_len = htole16(rec);
	de->name_len = strlen(name);
	memcpy(de->name, name, strlen(name));
	return de;
}

Test(fsd_meta, dir_blocks_must_tile)
{
	char why[128];

	put_dirent(blk, 0, 5, ".", 16);
	put_dirent(blk, 16, 5, "..", 16);
	put_dirent(blk, 32, 77, "hello", 4096 - 32);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), 0, "%s", why);

	/* too short for its name */
	put_dirent(blk, 32, 77, "a-much-longer-name", 16);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), -1);
	/* not a multiple of 4, past the end, below the minimum */
	put_dirent(blk, 32, 77, "hello", 4096 - 31);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), -1);
	put_dirent(blk, 32, 77, "hello", 4096);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), -1);
	cr_assert(strstr(why, "offset 32") != NULL, "%s", why);
	put_dirent(blk, 32, 77, "hello", 8);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), -1);
	/* a free entry may be as short as its rec_len allows */
	put_dirent(blk, 32, 0, "", 4096 - 32);
	cr_assert_eq(dir_block_check(blk, 4096, why, sizeof(why)), 0, "%s", why);
}

/* The cache checks a directory block with what dir.c registered, and refuses it without. */
Test(fsd_meta, dir_blocks_need_the_registered_check)
{
	char why[128];

	put_dirent(blk, 0, 5, ".", 16);
	put_dirent(blk, 16, 5, "..", 4096 - 16);
	cr_assert_eq(block_validate(&fs, BLK_DIR, 400, blk, why, sizeof(why)), 0, "%s", why);
	put_dirent(blk, 16, 5, "..", 8);
	cr_assert_eq(block_validate(&fs, BLK_DIR, 400, blk, why, sizeof(why)), -1);
	put_dirent(blk, 16, 5, "..", 4096 - 16);
	fs.check_dir_entries = NULL;
	cr_assert_eq(block_validate(&fs, BLK_DIR, 400, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "registered") != NULL, "%s", why);
}

static struct ocfs2_dinode *
make_inode(uint64_t blkno, uint16_t mode)
{
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)blk;

	memcpy(di->i_signature, OCFS2_INODE_SIGNATURE, sizeof(OCFS2_INODE_SIGNATURE));
	di->i_blkno = htole64(blkno);
	di->i_fs_generation = htole32(0x1234);
	di->i_flags = htole32(OCFS2_VALID_FL);
	di->i_mode = htole16(mode);
	di->id2.i_list.l_count = htole16(ocfs2_extent_recs_per_inode(4096));
	return di;
}

Test(fsd_meta, inode_validation)
{
	struct ocfs2_dinode *di;
	char why[160];

	di = make_inode(100, S_IFREG | 0644);
	di->id2.i_list.l_next_free_rec = htole16(1);
	di->id2.i_list.l_recs[0].e_blkno = htole64(500);
	di->id2.i_list.l_recs[0].e_leaf_clusters = htole16(10);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), 0, "%s", why);

	cr_assert_eq(block_validate(&fs, BLK_INODE, 101, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "claims to be block 100") != NULL, "%s", why);

	di->i_fs_generation = htole32(0x999);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "generation") != NULL, "%s", why);
	di->i_fs_generation = htole32(0x1234);

	di->i_flags = 0;
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	di->i_flags = htole32(OCFS2_VALID_FL);

	/* an extent running past the volume's 1000 blocks */
	di->id2.i_list.l_recs[0].e_blkno = htole64(995);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "outside the volume") != NULL, "%s", why);
	di->id2.i_list.l_recs[0].e_blkno = htole64(500);

	di->id2.i_list.l_next_free_rec = htole16(300);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "impossible extent list") != NULL, "%s", why);

	/* a fast symlink whose length cannot fit */
	di = make_inode(100, S_IFLNK | 0777);
	di->i_size = htole64(4000);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	di->i_size = htole64(10);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), 0, "%s", why);

	memcpy(blk, "garbage!", 8);
	cr_assert_eq(block_validate(&fs, BLK_INODE, 100, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "bad signature") != NULL, "%s", why);
}

Test(fsd_meta, extent_lists)
{
	struct ocfs2_extent_list *el = (struct ocfs2_extent_list *)blk;
	char why[160];

	el->l_count = htole16(10);
	el->l_next_free_rec = htole16(2);
	el->l_recs[0].e_cpos = htole32(0);
	el->l_recs[0].e_leaf_clusters = htole16(4);
	el->l_recs[0].e_blkno = htole64(100);
	el->l_recs[1].e_cpos = htole32(4);
	el->l_recs[1].e_leaf_clusters = htole16(4);
	el->l_recs[1].e_blkno = htole64(200);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(extent_list_check(&fs, el, 9, why, sizeof(why)), -1);
	/* overlapping records */
	el->l_recs[1].e_cpos = htole32(3);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), -1);
	cr_assert(strstr(why, "overlaps") != NULL, "%s", why);
	el->l_recs[1].e_cpos = htole32(4);
	/* a data extent into the volume header */
	el->l_recs[1].e_blkno = htole64(1);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), -1);
	el->l_recs[1].e_blkno = htole64(200);
	/* too deep */
	el->l_tree_depth = htole16(6);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), -1);
}

Test(fsd_meta, unaligned_extent_with_bigger_clusters)
{
	struct ocfs2_extent_list *el = (struct ocfs2_extent_list *)blk;
	char why[160];

	fs.cbits = 15;	/* 32K clusters of 4K blocks */
	fs.bpc = 8;
	fs.nblocks = 8000;
	el->l_count = htole16(10);
	el->l_next_free_rec = htole16(1);
	el->l_recs[0].e_leaf_clusters = htole16(1);
	el->l_recs[0].e_blkno = htole64(804);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), -1);
	cr_assert(strstr(why, "unaligned") != NULL, "%s", why);
	el->l_recs[0].e_blkno = htole64(800);
	cr_assert_eq(extent_list_check(&fs, el, 10, why, sizeof(why)), 0, "%s", why);
}

Test(fsd_meta, group_descriptors)
{
	struct ocfs2_group_desc *gd = (struct ocfs2_group_desc *)blk;
	char why[160];

	memcpy(gd->bg_signature, OCFS2_GROUP_DESC_SIGNATURE, sizeof(OCFS2_GROUP_DESC_SIGNATURE));
	gd->bg_blkno = htole64(300);
	gd->bg_generation = htole32(0x1234);
	gd->bg_size = htole16(4032);
	gd->bg_bits = htole16(1000);
	gd->bg_free_bits_count = htole16(999);
	cr_assert_eq(block_validate(&fs, BLK_GROUP, 300, blk, why, sizeof(why)), 0, "%s", why);
	gd->bg_free_bits_count = htole16(1001);
	cr_assert_eq(block_validate(&fs, BLK_GROUP, 300, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "impossible group") != NULL, "%s", why);
}

static void
set_time(__le64 *sec, __le32 *nsec, uint64_t s, uint32_t ns)
{
	*sec = htole64(s);
	*nsec = htole32(ns);
}

Test(fsd_meta, atime_rules)
{
	struct ocfs2_dinode *di = make_inode(100, S_IFREG | 0644);
	struct timespec now = { 1000000, 500 };

	/* relatime: atime not after mtime or ctime, or a day old */
	set_time(&di->i_mtime, &di->i_mtime_nsec, 900000, 7);
	set_time(&di->i_ctime, &di->i_ctime_nsec, 900000, 7);
	set_time(&di->i_atime, &di->i_atime_nsec, 900000, 7);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 1, "atime == mtime");
	set_time(&di->i_atime, &di->i_atime_nsec, 900000, 8);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 1, "a day old");
	set_time(&di->i_atime, &di->i_atime_nsec, now.tv_sec - 86399, 0);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 0, "newer than both, under a day");
	set_time(&di->i_ctime, &di->i_ctime_nsec, now.tv_sec - 86399, 1);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 1, "ctime a nanosecond later");
	set_time(&di->i_ctime, &di->i_ctime_nsec, 900000, 7);
	set_time(&di->i_atime, &di->i_atime_nsec, now.tv_sec + 100, 0);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 0, "atime in the future");

	/* strictatime: older than the quantum, whatever mtime says */
	fs.opts.atime = FSD_STRICTATIME;
	fs.opts.atime_quantum = 60;
	set_time(&di->i_atime, &di->i_atime_nsec, now.tv_sec - 60, 0);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 0);
	set_time(&di->i_atime, &di->i_atime_nsec, now.tv_sec - 61, 0);
	cr_assert_eq(inode_atime_due(&fs, di, &now), 1);
	set_time(&di->i_atime, &di->i_atime_nsec, 800000, 0);
	set_time(&di->i_mtime, &di->i_mtime_nsec, 900000, 0);
	fs.opts.atime = FSD_NOATIME;
	cr_assert_eq(inode_atime_due(&fs, di, &now), 0);
	fs.opts.atime = FSD_RELATIME;
	cr_assert_eq(inode_atime_due(&fs, di, &now), 1);
	fs.readonly = 1;
	cr_assert_eq(inode_atime_due(&fs, di, &now), 0, "never on a read-only mount");
}
