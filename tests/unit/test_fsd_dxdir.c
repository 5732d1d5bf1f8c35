/*
 * fsd's indexed directories, the pure parts: the name hash against
 * what ocfs2-tools' libocfs2 stored in an index, the checks that turn
 * a damaged index root, leaf or directory trailer into EIO, a block's
 * free space as its trailer records it, and the feature accepted.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <string.h>

#include "fsd/fsd.h"

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

TestSuite(fsd_dxdir, .init = setup);

/*
 * A volume made by mkfs.ocfs2 --fs-features=indexed-dirs (s_dx_seed
 * 0xed304f6b 0x411ec664 0x447e6cbc, s_uuid_hash 0x2edd18c7), one name
 * per directory created by libocfs2 (tests/integration/fsd_populate.c),
 * the hashes as debugfs.ocfs2 -R "dx_dump DIR" printed them.
 */
Test(fsd_dxdir, hash_matches_libocfs2)
{
	static const uint32_t seed[4] = { 0xed304f6b, 0x411ec664, 0x447e6cbc, 0x2edd18c7 };
	static const struct { const char *name; uint32_t major, minor; } v[] = {
		{ "a", 0xd894c250, 0xd8aa9df9 },
		{ "hello", 0x0c9f158a, 0xd731d691 },
		{ "exactly16chars__", 0x10fd85da, 0xa9a9353f },
		{ "a_name_longer_than_sixteen_bytes_for_two_rounds", 0x9d27632e, 0x6fde72cb },
		{ "caf\xc3\xa9-\xff", 0x80e73aa2, 0x1324b8e0 },	/* bytes past 0x7f */
		{ "f00042", 0xcea83670, 0x98140d57 },
	};
	struct dx_hash hv;
	unsigned i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		dx_name_hash(seed, v[i].name, strlen(v[i].name), &hv);
		cr_assert_eq(hv.major, v[i].major, "%s: major %#x, libocfs2 %#x", v[i].name,
		    hv.major, v[i].major);
		cr_assert_eq(hv.minor, v[i].minor, "%s: minor %#x, libocfs2 %#x", v[i].name,
		    hv.minor, v[i].minor);
	}
	/* "." and ".." are indexed under hash 0 */
	dx_name_hash(seed, "..", 2, &hv);
	cr_assert(hv.major == 0 && hv.minor == 0);
}

/* A block of an indexed directory: "." and ".." then the trailer at 4032. */
static void
dir_block(uint64_t blkno)
{
	struct ocfs2_dir_entry *de = (struct ocfs2_dir_entry *)blk;
	struct ocfs2_dir_block_trailer *t = (struct ocfs2_dir_block_trailer *)(blk + 4032);

	de->inode = htole64(77);
	de->rec_len = htole16(16);
	de->name_len = 1;
	de->name[0] = '.';
	de = (struct ocfs2_dir_entry *)(blk + 16);
	de->inode = htole64(70);
	de->rec_len = htole16(4032 - 16);
	de->name_len = 2;
	memcpy(de->name, "..", 2);
	memcpy(t->db_signature, OCFS2_DIR_TRAILER_SIGNATURE, 7);
	t->db_compat_rec_len = htole16(64);
	t->db_blkno = htole64(blkno);
	t->db_parent_dinode = htole64(77);
	t->db_free_rec_len = htole16(4032 - 32);
}

Test(fsd_dxdir, trailer_is_checked)
{
	char why[128];
	struct ocfs2_dir_block_trailer *t = (struct ocfs2_dir_block_trailer *)(blk + 4032);
	struct ocfs2_dir_entry *dotdot = (struct ocfs2_dir_entry *)(blk + 16);

	dir_block(400);
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 400, blk, why, sizeof(why)), 0, "%s", why);
	/* the same block is a plain directory block to readers without the index */
	cr_assert_eq(block_validate(&fs, BLK_DIR, 400, blk, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 401, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "trailer") != NULL, "%s", why);
	t->db_signature[0] = 'X';
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 400, blk, why, sizeof(why)), -1);
	dir_block(400);
	t->db_compat_rec_len = htole16(48);
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 400, blk, why, sizeof(why)), -1);
	/* entries running into the trailer */
	dir_block(400);
	dotdot->rec_len = htole16(4032);
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 400, blk, why, sizeof(why)), -1);
	dir_block(400);
	t->db_free_rec_len = htole16(4040);
	cr_assert_eq(block_validate(&fs, BLK_DXDIR, 400, blk, why, sizeof(why)), -1);
}

Test(fsd_dxdir, index_root_is_checked)
{
	struct ocfs2_dx_root_block *dr = (struct ocfs2_dx_root_block *)blk;
	char why[128];

	memcpy(dr->dr_signature, OCFS2_DX_ROOT_SIGNATURE, 7);
	dr->dr_blkno = htole64(300);
	dr->dr_fs_generation = htole32(0x1234);
	dr->dr_flags = OCFS2_DX_FLAG_INLINE;
	dr->dr_entries.de_count = htole16(ocfs2_dx_entries_per_root(4096));
	dr->dr_entries.de_num_used = htole16(2);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 301, blk, why, sizeof(why)), -1);
	dr->dr_entries.de_num_used = htole16(ocfs2_dx_entries_per_root(4096) + 1);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), -1);
	dr->dr_entries.de_num_used = 0;
	dr->dr_entries.de_count = htole16(ocfs2_dx_entries_per_root(4096) + 1);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), -1);
	/* a tree: its extent list is checked as any other */
	memset(&dr->dr_list, 0, sizeof(blk) - offsetof(struct ocfs2_dx_root_block, dr_list));
	dr->dr_flags = 0;
	dr->dr_list.l_count = htole16(ocfs2_extent_recs_per_dx_root(4096));
	dr->dr_list.l_next_free_rec = htole16(1);
	dr->dr_list.l_recs[0].e_blkno = htole64(500);
	dr->dr_list.l_recs[0].e_leaf_clusters = htole16(1);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), 0, "%s", why);
	dr->dr_list.l_recs[0].e_blkno = htole64(5000);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), -1);
	memcpy(dr->dr_signature, "DXLEAF1", 7);
	cr_assert_eq(block_validate(&fs, BLK_DX_ROOT, 300, blk, why, sizeof(why)), -1);
}

Test(fsd_dxdir, index_leaf_is_checked)
{
	struct ocfs2_dx_leaf *dl = (struct ocfs2_dx_leaf *)blk;
	char why[128];

	memcpy(dl->dl_signature, OCFS2_DX_LEAF_SIGNATURE, 7);
	dl->dl_blkno = htole64(500);
	dl->dl_fs_generation = htole32(0x1234);
	dl->dl_list.de_count = htole16(ocfs2_dx_entries_per_leaf(4096));
	dl->dl_list.de_num_used = htole16(ocfs2_dx_entries_per_leaf(4096));
	cr_assert_eq(block_validate(&fs, BLK_DX_LEAF, 500, blk, why, sizeof(why)), 0, "%s", why);
	dl->dl_fs_generation = htole32(0x1235);
	cr_assert_eq(block_validate(&fs, BLK_DX_LEAF, 500, blk, why, sizeof(why)), -1);
	dl->dl_fs_generation = htole32(0x1234);
	dl->dl_list.de_num_used = htole16(ocfs2_dx_entries_per_leaf(4096) + 1);
	cr_assert_eq(block_validate(&fs, BLK_DX_LEAF, 500, blk, why, sizeof(why)), -1);
	cr_assert(strstr(why, "index leaf") != NULL, "%s", why);
	/* a leaf that holds nothing would always be full */
	dl->dl_list.de_num_used = 0;
	dl->dl_list.de_count = 0;
	cr_assert_eq(block_validate(&fs, BLK_DX_LEAF, 500, blk, why, sizeof(why)), -1);
}

/* The largest hole for a new entry, as the trailer's db_free_rec_len keeps it. */
Test(fsd_dxdir, free_space_of_a_block)
{
	struct ocfs2_dir_entry *dotdot = (struct ocfs2_dir_entry *)(blk + 16);

	dir_block(400);
	cr_assert_eq(dir_block_max_hole(blk, 4032), 4032 - 32);
	/* a full block: ".." keeps exactly what its name needs */
	dotdot->rec_len = htole16(16);
	cr_assert_eq(dir_block_max_hole(blk, 32), 0);
}

/* Volumes with indexed-dirs mount, with metaecc too (which checks the same blocks). */
Test(fsd_dxdir, the_feature_is_accepted)
{
	char err[256];

	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS |
	    OCFS2_FEATURE_INCOMPAT_INLINE_DATA | OCFS2_FEATURE_INCOMPAT_SPARSE_ALLOC, 0, 0, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(super_check_features(3, OCFS2_FEATURE_INCOMPAT_INDEXED_DIRS |
	    OCFS2_FEATURE_INCOMPAT_META_ECC, 0, 0, err, sizeof(err)), 0, "%s", err);
}
