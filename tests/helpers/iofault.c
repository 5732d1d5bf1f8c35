/*
 * LD_PRELOAD shim that makes one file slow or failing, for tests of
 * self-fencing. It watches descriptors opened on a path that contains
 * $IOFAULT_PATH, and before each pread/pwrite on them reads the control
 * file $IOFAULT_CTL, whose lines are
 *
 *	pwrite delay MS		sleep MS before the write, then do it
 *	pwrite eio		fail the write with EIO
 *	pread delay MS / pread eio	the same for reads
 *	fallocate eopnotsupp	a device that can neither punch holes nor zero
 *
 * A missing or empty control file means no fault, so a test switches a
 * fault on and off by writing that file while the process runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS	1024

static char watched[MAX_FDS];

static int
path_matches(const char *path)
{
	const char *want = getenv("IOFAULT_PATH");

	return want != NULL && *want != '\0' && path != NULL && strstr(path, want) != NULL;
}

static void
track(int fd, const char *path)
{
	if (fd >= 0 && fd < MAX_FDS)
		watched[fd] = (char)path_matches(path);
}

/*
 * The fault configured for op ("pread"/"pwrite"/"fallocate"): 0 none,
 * -1 EIO, -2 EOPNOTSUPP, else delay ms.
 */
static long
fault_for(const char *op)
{
	const char *ctl = getenv("IOFAULT_CTL");
	char line[128], what[32], kind[32];
	long ms, r = 0;
	FILE *f;

	if (ctl == NULL || (f = fopen(ctl, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		ms = 0;
		if (sscanf(line, "%31s %31s %ld", what, kind, &ms) < 2 || strcmp(what, op) != 0)
			continue;
		if (strcmp(kind, "eio") == 0)
			r = -1;
		else if (strcmp(kind, "eopnotsupp") == 0)
			r = -2;
		else if (strcmp(kind, "delay") == 0 && ms > 0)
			r = ms;
	}
	fclose(f);
	return r;
}

static int
inject(int fd, const char *op)
{
	struct timespec ts;
	long f;

	if (fd < 0 || fd >= MAX_FDS || !watched[fd])
		return 0;
	if ((f = fault_for(op)) == 0)
		return 0;
	if (f < 0) {
		errno = f == -1 ? EIO : EOPNOTSUPP;
		return -1;
	}
	ts.tv_sec = f / 1000;
	ts.tv_nsec = (f % 1000) * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	return 0;
}

typedef int open_fn(const char *, int, ...);
typedef ssize_t pread_fn(int, void *, size_t, off_t);
typedef ssize_t pwrite_fn(int, const void *, size_t, off_t);
typedef int fallocate_fn(int, int, off_t, off_t);

/* The next definition of `name` (libc's), looked up once. */
#define REAL(name, type) \
	static type *real_##name; \
	if (real_##name == NULL) \
		real_##name = (type *)dlsym(RTLD_NEXT, #name)

int
open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int fd;
	REAL(open, open_fn);

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	fd = real_open(path, flags, mode);
	track(fd, path);
	return fd;
}

int
open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int fd;
	REAL(open64, open_fn);

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	fd = real_open64(path, flags, mode);
	track(fd, path);
	return fd;
}

ssize_t
pread(int fd, void *buf, size_t n, off_t off)
{
	REAL(pread, pread_fn);

	if (inject(fd, "pread") == -1)
		return -1;
	return real_pread(fd, buf, n, off);
}

ssize_t
pread64(int fd, void *buf, size_t n, off_t off)
{
	REAL(pread64, pread_fn);

	if (inject(fd, "pread") == -1)
		return -1;
	return real_pread64(fd, buf, n, off);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite, pwrite_fn);

	if (inject(fd, "pwrite") == -1)
		return -1;
	return real_pwrite(fd, buf, n, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	REAL(pwrite64, pwrite_fn);

	if (inject(fd, "pwrite") == -1)
		return -1;
	return real_pwrite64(fd, buf, n, off);
}

int
fallocate(int fd, int mode, off_t off, off_t len)
{
	REAL(fallocate, fallocate_fn);

	if (inject(fd, "fallocate") == -1)
		return -1;
	return real_fallocate(fd, mode, off, len);
}

int
fallocate64(int fd, int mode, off_t off, off_t len)
{
	REAL(fallocate64, fallocate_fn);

	if (inject(fd, "fallocate") == -1)
		return -1;
	return real_fallocate64(fd, mode, off, len);
}
