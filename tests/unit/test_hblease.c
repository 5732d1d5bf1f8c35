/*
 * The lease file's keeper side (hblease_keep) on a real file: made when
 * missing, kept when it is a lease file of this version, started afresh
 * (and said so) when it holds anything else; and what a writer maps
 * with hblease_open sees the keeper's entry.
 */
#include <criterion/criterion.h>

#include <sys/mman.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hblease.h"

static char dir[64];
static char path[128];

static void
setup(void)
{
	strcpy(dir, "/tmp/test_hblease.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/testd.lease", dir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(hblease, .init = setup, .fini = teardown);

static void
write_file(const char *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

Test(hblease, missing_file_made_fresh_not_stale)
{
	struct hblease *l;
	int stale = -1;

	l = hblease_keep(dir, "testd", &stale);
	cr_assert_eq(stale, 0);
	cr_assert_eq(l->magic, HBLEASE_MAGIC);
	cr_assert_eq(l->version, HBLEASE_VERSION);
	cr_assert_eq(access(path, F_OK), 0);
	munmap(l, sizeof(*l));
}

Test(hblease, lease_of_this_version_kept)
{
	struct hblease *l;
	int stale = -1;

	l = hblease_keep(dir, "testd", &stale);
	l->local_node = 5;
	l->regions[3].in_use = 1;
	snprintf(l->regions[3].name, sizeof(l->regions[3].name), "R3");
	l->regions[3].expires_us = 1234;
	munmap(l, sizeof(*l));
	l = hblease_keep(dir, "testd", &stale);
	cr_assert_eq(stale, 0);
	cr_assert_eq(l->local_node, 5);
	cr_assert_str_eq(l->regions[3].name, "R3");
	cr_assert_eq(l->regions[3].expires_us, 1234);
	munmap(l, sizeof(*l));
}

Test(hblease, other_content_started_afresh_and_stale)
{
	struct hblease *l;
	int stale = -1;

	write_file("not a lease at all", 18);
	l = hblease_keep(dir, "testd", &stale);
	cr_assert_eq(stale, 1);
	cr_assert_eq(l->magic, HBLEASE_MAGIC);
	cr_assert_eq(l->version, HBLEASE_VERSION);
	cr_assert_eq(l->regions[0].name[0], '\0');
	munmap(l, sizeof(*l));
}

Test(hblease, older_version_started_afresh_and_stale)
{
	struct hblease *l;
	int stale = -1;

	l = hblease_keep(dir, "testd", &stale);
	l->version = HBLEASE_VERSION - 1;
	l->local_node = 9;
	munmap(l, sizeof(*l));
	l = hblease_keep(dir, "testd", &stale);
	cr_assert_eq(stale, 1);
	cr_assert_eq(l->version, HBLEASE_VERSION);
	cr_assert_eq(l->local_node, 0);
	munmap(l, sizeof(*l));
}

Test(hblease, writer_view_finds_the_keepers_entry)
{
	struct hblease_view v;
	struct hblease *l;
	char err[256];
	int stale;

	l = hblease_keep(dir, "testd", &stale);
	l->regions[2].in_use = 1;
	snprintf(l->regions[2].name, sizeof(l->regions[2].name), "VOL");
	l->regions[2].expires_us = 777;
	cr_assert_eq(hblease_open(dir, "testd", "VOL", &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hblease_expires_us(&v), 777);
	hblease_close(&v);
	cr_assert_eq(hblease_open(dir, "testd", "OTHER", &v, err, sizeof(err)), -1);
	munmap(l, sizeof(*l));
}
