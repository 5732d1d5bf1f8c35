/*
 * metaecc's codec against blocks mkfs.ocfs2 --fs-features=metaecc wrote:
 * the superblock, the root directory's inode and its first directory
 * block (the check in its trailer) verify, and computing their checks
 * again gives the bytes mkfs stored; every single bit of the root inode
 * flipped in turn is found and put back; two flipped bits are refused.
 * Then fsd itself: the volume mounts, a flipped bit in the root inode is
 * corrected on the way into the cache, two give EIO and a logged reason.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32.h"
#include "fsd/fsd.h"
#include "fsd_volume.h"

#define BS	4096u

static void
make_volume(void)
{
	make_volume_of("64M", BS, "--fs-features=metaecc -J size=4M");
}

static void
read_block(uint64_t blkno, uint8_t *out)
{
	int fd = open(vol_img, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, out, BS, (off_t)(blkno * BS)), (ssize_t)BS);
	close(fd);
}

static void
write_block(uint64_t blkno, const uint8_t *in)
{
	int fd = open(vol_img, O_WRONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, in, BS, (off_t)(blkno * BS)), (ssize_t)BS);
	close(fd);
}

/* The root inode's block number and its first directory block's, from the image. */
static void
root_blocks(uint64_t *root, uint64_t *dirblk)
{
	uint8_t sb[BS], ri[BS];
	const struct ocfs2_dinode *di = (const void *)sb, *rdi = (const void *)ri;

	read_block(OCFS2_SUPER_BLOCK_BLKNO, sb);
	*root = le64toh(di->id2.i_super.s_root_blkno);
	read_block(*root, ri);
	cr_assert_eq(le16toh(rdi->id2.i_list.l_next_free_rec), 1, "root dir has one extent");
	*dirblk = le64toh(rdi->id2.i_list.l_recs[0].e_blkno);
}

/* The check stored in blk at bc verifies, and computing it again gives the same bytes. */
static void
same_check(uint8_t *blk, struct ocfs2_block_check *bc, const char *what)
{
	struct ocfs2_block_check stored = *bc;

	cr_assert_neq(stored.bc_crc32e, 0, "%s has a check", what);
	cr_assert_eq(blockcheck_verify(blk, BS, bc), 0, "%s verifies", what);
	cr_assert_eq(memcmp(bc, &stored, sizeof(stored)), 0, "%s: verify leaves the field", what);
	blockcheck_compute(blk, BS, bc);
	cr_assert_eq(le32toh(bc->bc_crc32e), le32toh(stored.bc_crc32e), "%s crc32e", what);
	cr_assert_eq(le16toh(bc->bc_ecc), le16toh(stored.bc_ecc), "%s ecc", what);
}

Test(fsd_metaecc, crc32_is_linux_crc32_le)
{
	/* zlib's CRC of "123456789" is 0xcbf43926; crc32_le(~0) lacks its final inversion */
	cr_assert_eq(crc32_le(~0u, "123456789", 9), ~0xcbf43926u);
}

Test(fsd_metaecc, code_positions_skip_parity)
{
	cr_assert_eq(blockcheck_code_pos(0), 3);
	cr_assert_eq(blockcheck_code_pos(1), 5);
	cr_assert_eq(blockcheck_code_pos(3), 7);
	cr_assert_eq(blockcheck_code_pos(4), 9);
	/* 4K: 32768 data bits and 16 parity positions below them */
	cr_assert_eq(blockcheck_code_pos(32767), 32768 + 16);
}

/* The code as its definition says: the xor of each set data bit's position. */
static uint32_t
hamming_by_bits(const uint8_t *data, size_t len)
{
	uint32_t parity = 0;
	size_t i;

	for (i = 0; i < len * 8; i++)
		if (data[i / 8] & (1u << (i % 8)))
			parity ^= blockcheck_code_pos((uint32_t)i);
	return parity;
}

/* The word-wise code against the definition, at every block size OCFS2 has. */
Test(fsd_metaecc, hamming_matches_definition)
{
	static uint8_t blk[4096];
	size_t len, i, n;

	srandom(7);
	for (len = 512; len <= sizeof(blk); len *= 2)
		for (n = 0; n < 20; n++) {
			for (i = 0; i < len; i++)
				blk[i] = (uint8_t)(n == 0 ? 0xff : n == 1 ? 0 : random());
			if (n == 2)	/* one bit, at each word's edge in turn */
				memset(blk, 0, len), blk[len - 1] = 0x80;
			cr_assert_eq(blockcheck_hamming(blk, len), hamming_by_bits(blk, len),
			    "%zu bytes, pattern %zu", len, n);
		}
	for (i = 0; i < 4096 * 8; i += 61) {
		memset(blk, 0, sizeof(blk));
		blk[i / 8] = (uint8_t)(1u << (i % 8));
		cr_assert_eq(blockcheck_hamming(blk, sizeof(blk)), blockcheck_code_pos((uint32_t)i),
		    "bit %zu", i);
	}
}

/*
 * One volume for the codec (mkfs.ocfs2 is the slow part): its checks
 * verify and recompute to the same bytes; every single bit of the root
 * inode flipped in turn is put back; pairs of bits are refused.
 */
Test(fsd_metaecc, mkfs_blocks)
{
	static const size_t pairs[][2] = { { 0, 1 }, { 100, 4000 }, { 8 * 200 + 3, 8 * 3000 },
	    { 8 * 4095 + 7, 9 } };
	size_t coff = offsetof(struct ocfs2_dinode, i_check), bit, i;
	uint8_t orig[BS], blk[BS];
	struct ocfs2_dinode *di = (struct ocfs2_dinode *)blk;
	uint64_t root, dirblk;

	make_volume();
	root_blocks(&root, &dirblk);
	read_block(OCFS2_SUPER_BLOCK_BLKNO, blk);
	same_check(blk, &((struct ocfs2_dinode *)blk)->i_check, "superblock");
	read_block(dirblk, blk);
	same_check(blk, &((struct ocfs2_dir_block_trailer *)(blk + BS -
	    sizeof(struct ocfs2_dir_block_trailer)))->db_check, "root dir block");
	read_block(root, blk);
	same_check(blk, &di->i_check, "root inode");

	memcpy(orig, blk, BS);
	for (bit = 0; bit < BS * 8; bit++) {
		/* the check field itself is not covered by the code */
		if (bit / 8 >= coff && bit / 8 < coff + sizeof(struct ocfs2_block_check))
			continue;
		blk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		cr_assert_eq(blockcheck_verify(blk, BS, &di->i_check), 1, "bit %zu", bit);
		cr_assert_eq(memcmp(blk, orig, BS), 0, "bit %zu put back", bit);
	}
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		memcpy(blk, orig, BS);
		blk[pairs[i][0] / 8] ^= (uint8_t)(1u << (pairs[i][0] % 8));
		blk[pairs[i][1] / 8] ^= (uint8_t)(1u << (pairs[i][1] % 8));
		cr_assert_eq(blockcheck_verify(blk, BS, &di->i_check), -1, "pair %zu", i);
	}
	remove_volume();
}

/* fsd's cache: one bit in the root inode is corrected, two make it EIO. */
Test(fsd_metaecc, the_cache_verifies)
{
	struct fsd_mount_opts o = { .nocluster = 1, .readonly = 1, .cache_blocks = 256 };
	uint8_t orig[BS], blk[BS];
	uint64_t root, dirblk;
	struct fsd fs;
	struct fsd_buf *b;
	char err[256];

	make_volume();
	root_blocks(&root, &dirblk);
	read_block(root, orig);
	memcpy(blk, orig, BS);
	blk[0x70] ^= 0x10;
	write_block(root, blk);
	memset(&fs, 0, sizeof(fs));
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fs.ecc_fixed, 1);
	cr_assert_eq(block_read(&fs, root, BLK_INODE, &b), 0);
	cr_assert_eq(memcmp(b->data, orig, BS), 0, "the cached root inode is the good one");
	block_put(&fs, b);
	cr_assert_eq(fs.errors, 0);
	super_unmount(&fs);

	blk[0x71] ^= 0x01;
	write_block(root, blk);
	memset(&fs, 0, sizeof(fs));
	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), -1,
	    "a root inode beyond repair fails the mount");
	cr_assert(strstr(err, "root directory") != NULL, "%s", err);
	write_block(root, orig);
	cr_assert(fsck_clean());
	remove_volume();
}
