/*
 * A scratch OCFS2 volume for fsd's unit tests: made by mkfs.ocfs2 in a
 * temporary directory, checked with fsck.ocfs2 -fn, removed. Included
 * once per test program.
 */
#ifndef FSD_TEST_VOLUME_H
#define FSD_TEST_VOLUME_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char vol_dir[64], vol_img[128];

/*
 * A local max-compat volume of SIZE (truncate's syntax), BLOCK-byte
 * blocks, 4K clusters, with more mkfs.ocfs2 options in EXTRA ("" for none).
 */
static void
make_volume_of(const char *size, unsigned block, const char *extra)
{
	char cmd[512];

	strcpy(vol_dir, "/tmp/fsd-unit.XXXXXX");
	cr_assert_not_null(mkdtemp(vol_dir));
	snprintf(vol_img, sizeof(vol_img), "%s/v.img", vol_dir);
	snprintf(cmd, sizeof(cmd), "truncate -s %s %s && mkfs.ocfs2 -q -F -M local "
	    "--fs-feature-level=max-compat -b %u -C 4096 %s %s </dev/null >/dev/null 2>&1",
	    size, vol_img, block, extra, vol_img);
	cr_assert_eq(system(cmd), 0, "mkfs.ocfs2");
}

static void
remove_volume(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", vol_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", vol_dir);
}

/* fsck.ocfs2's status is 0 even with problems: look for [CODE] lines. */
static int
fsck_clean(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "out=$(fsck.ocfs2 -fn %s 2>&1); echo \"$out\" | "
	    "grep -q 'All passes succeeded' && ! echo \"$out\" | grep '^\\['", vol_img);
	return system(cmd) == 0;
}

#endif
