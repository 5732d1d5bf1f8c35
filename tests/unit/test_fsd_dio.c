/*
 * Append-dio records on a volume made by mkfs.ocfs2
 * --fs-features=sparse,unwritten,append-dio with two slots: the state an
 * appending O_DIRECT write leaves after its allocation (record, flag,
 * clusters past i_size) is ended by dio_recover: the clusters past the
 * size freed, the record and the flag gone, the size and bytes kept; a
 * record whose inode's flag names another slot only loses its name; an
 * unlinked inode's deletion ends its record too; dio_write appends leave
 * no record. fsck.ocfs2 -fn clean at the end.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsd/fsd.h"
#include "fsd_volume.h"

#define CS	4096u

static void
make_volume(void)
{
	make_volume_of("64M", 4096, "-N 2 -J size=4M --fs-features=sparse,unwritten,append-dio");
}

static const struct ocfs2_dinode *
dinode(const struct fsd_buf *b)
{
	return (const struct ocfs2_dinode *)b->data;
}

/* Is "dio-<ino>" in slot's orphan dir? */
static int
has_record(struct fsd *fs, int slot, uint64_t ino)
{
	struct fsd_buf *ob;
	uint64_t found = 0;
	char name[32];
	int rc;

	snprintf(name, sizeof(name), "dio-%016" PRIx64, ino);
	cr_assert_eq(block_read(fs, fs->slots[slot].orphan_dir, BLK_INODE, &ob), 0);
	rc = dir_lookup(fs, dinode(ob), name, strlen(name), &found);
	block_put(fs, ob);
	cr_assert(rc == 0 || rc == -ENOENT, "dir_lookup: %d", rc);
	return rc == 0 && found == ino;
}

/* A regular file NAME in the root holding len bytes of 'x'; its inode number. */
static uint64_t
make_file(struct fsd *fs, const char *name, size_t len)
{
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	uint64_t ino;
	char *data = malloc(len);

	cr_assert_not_null(data);
	memset(data, 'x', len);
	cr_assert_eq(journal_start(fs, &h), 0);
	cr_assert_eq(inode_create(&h, S_IFREG | 0644, 0, 0, 0, &ib), 0);
	ino = ib->blkno;
	cr_assert_eq(block_read(fs, fs->root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(journal_access(&h, rb), 0);
	cr_assert_eq(dir_add(&h, rb, name, strlen(name), ino, OCFS2_FT_REG_FILE), 0);
	cr_assert_eq(file_write_locked(&h, ib, 0, data, len), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(fs, ib);
	block_put(fs, rb);
	free(data);
	return ino;
}

/*
 * What an appending write leaves before its data and size: its record in
 * our slot and clusters for [size, size + len), committed.
 */
static void
half_append(struct fsd *fs, uint64_t ino, size_t len)
{
	struct fsd_handle h;
	struct fsd_buf *ib;
	uint64_t size;

	cr_assert_eq(block_read(fs, ino, BLK_INODE, &ib), 0);
	size = le64toh(dinode(ib)->i_size);
	cr_assert_eq(journal_start(fs, &h), 0);
	cr_assert_eq(orphan_dio_add(&h, ib), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	cr_assert_eq(journal_start(fs, &h), 0);
	cr_assert_eq(journal_access(&h, ib), 0);
	cr_assert_eq(file_prepare_range(&h, ib, size, len), 0);
	journal_dirty(&h, ib);
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(fs, ib);
}

static uint32_t
clusters_of(struct fsd *fs, uint64_t ino, uint64_t *size, uint32_t *flags)
{
	struct fsd_buf *ib;
	uint32_t c;

	cr_assert_eq(block_read(fs, ino, BLK_INODE, &ib), 0);
	c = le32toh(dinode(ib)->i_clusters);
	*size = le64toh(dinode(ib)->i_size);
	*flags = le32toh(dinode(ib)->i_flags);
	block_put(fs, ib);
	return c;
}

Test(fsd_dio, recovery_cuts_back_to_the_size, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	uint64_t ino, size;
	uint32_t flags;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(fs.append_dio);
	ino = make_file(&fs, "f", 3 * CS + 100);
	half_append(&fs, ino, 8 * CS);
	cr_assert(has_record(&fs, fs.slot, ino));
	cr_assert_eq(clusters_of(&fs, ino, &size, &flags), 12u, "4 clusters and 8 past the size");
	cr_assert(flags & OCFS2_DIO_ORPHANED_FL);
	cr_assert_eq(size, 3 * CS + 100);

	cr_assert_eq(dio_recover(&fs, fs.slot, ino), 1);
	cr_assert_not(has_record(&fs, fs.slot, ino));
	cr_assert_eq(clusters_of(&fs, ino, &size, &flags), 4u, "the clusters past the size are freed");
	cr_assert_not(flags & OCFS2_DIO_ORPHANED_FL);
	cr_assert_eq(size, 3 * CS + 100);
	cr_assert_eq(dio_recover(&fs, fs.slot, ino), 0, "nothing left to end");
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_dio, a_stale_record_only_loses_its_name, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	struct fsd_handle h;
	struct fsd_buf *ib;
	uint64_t ino, size;
	uint32_t flags;
	char err[256];

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	ino = make_file(&fs, "g", CS);
	half_append(&fs, ino, 2 * CS);
	/* as if another slot's later write had ended ours and made its own */
	cr_assert_eq(block_read(&fs, ino, BLK_INODE, &ib), 0);
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(journal_access(&h, ib), 0);
	((struct ocfs2_dinode *)ib->data)->i_dio_orphaned_slot = htole16((uint16_t)(1 - fs.slot));
	journal_dirty(&h, ib);
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(&fs, ib);

	cr_assert_eq(dio_recover(&fs, fs.slot, ino), 0);
	cr_assert_not(has_record(&fs, fs.slot, ino), "the stale name is gone");
	cr_assert_eq(clusters_of(&fs, ino, &size, &flags), 3u, "the other slot's clusters stay");
	cr_assert(flags & OCFS2_DIO_ORPHANED_FL, "the other slot's flag stays");

	/* that slot's recovery, with no name there: the file is cut back all the same */
	cr_assert_eq(dio_recover(&fs, 1 - fs.slot, ino), 1);
	cr_assert_eq(clusters_of(&fs, ino, &size, &flags), 1u);
	cr_assert_not(flags & OCFS2_DIO_ORPHANED_FL);
	super_unmount(&fs);
	cr_assert(fsck_clean());
}

Test(fsd_dio, appends_and_deletions_leave_no_record, .init = make_volume, .fini = remove_volume,
    .timeout = 60)
{
	struct fsd_mount_opts o = { .cache_blocks = 4096, .commit_ms = 600000, .nocluster = 1 };
	struct fsd fs;
	struct fsd_inode *ip;
	struct fsd_handle h;
	struct fsd_buf *ib, *rb;
	uint64_t ino, size;
	uint32_t flags;
	char err[256], buf[3 * CS];
	unsigned k;

	cr_assert_eq(super_mount(&fs, vol_img, &o, err, sizeof(err)), 0, "%s", err);
	ino = make_file(&fs, "a", 100);
	cr_assert_eq(inode_get(&fs, ino, &ip), 0);
	for (k = 0; k < 4; k++) {
		memset(buf, 'a' + k, sizeof(buf));
		cr_assert_eq(dio_write(&fs, ip, FILE_APPEND, buf, sizeof(buf), 1), 0);
	}
	cr_assert_not(has_record(&fs, fs.slot, ino));
	cr_assert_eq(clusters_of(&fs, ino, &size, &flags), 13u);
	cr_assert_eq(size, 100 + 4 * sizeof(buf));
	cr_assert_not(flags & OCFS2_DIO_ORPHANED_FL);

	/* unlinked with a record still on it: its deletion ends the record */
	half_append(&fs, ino, 4 * CS);
	cr_assert(has_record(&fs, fs.slot, ino));
	cr_assert_eq(journal_start(&fs, &h), 0);
	cr_assert_eq(block_read(&fs, fs.root_blkno, BLK_INODE, &rb), 0);
	cr_assert_eq(journal_access(&h, rb), 0);
	cr_assert_eq(dir_remove(&h, rb, "a", 1), 0);
	cr_assert_eq(block_read(&fs, ino, BLK_INODE, &ib), 0);
	cr_assert_eq(journal_access(&h, ib), 0);
	((struct ocfs2_dinode *)ib->data)->i_links_count = 0;
	journal_dirty(&h, ib);
	cr_assert_eq(orphan_add(&h, ib), 0);
	cr_assert_eq(journal_stop(&h, 0), 0);
	block_put(&fs, ib);
	block_put(&fs, rb);
	inode_put(&fs, ip);
	cr_assert_eq(orphan_wipe(&fs, ino), 1);
	cr_assert_not(has_record(&fs, fs.slot, ino), "no record outlives its inode");
	super_unmount(&fs);
	cr_assert(fsck_clean());
}
