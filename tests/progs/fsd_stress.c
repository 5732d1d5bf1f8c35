/*
 * fsd_stress: random namespace operations on every kind of inode, from
 * several processes, meant to run on several nodes at once over one
 * directory of a shared volume (each node through its own mountpoint).
 *
 * A small pool of names, at the top of DIR and one directory down, takes
 * regular files (small, and large enough for many extents), directories,
 * fast and slow symlinks, fifos, sockets and device nodes; they are
 * created, written, truncated, renamed (over each other and across
 * directories), hard linked, unlinked, removed, opened with O_CREAT, held
 * open while others unlink them, and read back. Every process keeps one
 * file of its own that it opens, unlinks, then checks through the open
 * descriptor.
 *
 *   fsd_stress [-n OPS] [-p PROCS] [-s SEED] [-v] DIR
 *	-n	operations per process (1000)	-p	processes (2)
 *	-s	seed (1): process i uses SEED * 1000 + i
 *	-v	print every operation
 *
 * Other processes and nodes change the same names meanwhile, so an
 * operation may find its name gone, taken, of another kind or a non-empty
 * directory: each operation accepts the errors such races give (ENOENT,
 * EEXIST, ENOTEMPTY, EISDIR, ...). Anything else fails the run: EIO,
 * EROFS, ENOTCONN (the file system went away), ESTALE, EEXIST from
 * open(O_CREAT) without O_EXCL, data read back wrong. Exit status 0 when
 * nothing failed, 1 otherwise (each failure printed), 2 usage.
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL		12		/* names at each of the two levels */
#define HELD_MAX	4		/* descriptors a process keeps open */
#define SMALL_MAX	8192
#define LARGE_MAX	(768 << 10)	/* a few hundred clusters at 4 KiB */
/* device numbers of the experimental range: nothing to reach through them */
#define DEV_MAJOR	240

enum op {
	OP_CREATE, OP_WRITE, OP_APPEND, OP_TRUNCATE, OP_OPEN_TRUNC, OP_MKDIR,
	OP_RMDIR, OP_SYMLINK, OP_MKNOD, OP_UNLINK, OP_RENAME, OP_LINK, OP_HOLD,
	OP_RELEASE, OP_PRIVATE, OP_READ, OP_READDIR, OP_FSYNC, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	[OP_CREATE] = "create",		[OP_WRITE] = "write",
	[OP_APPEND] = "append",		[OP_TRUNCATE] = "truncate",
	[OP_OPEN_TRUNC] = "open-trunc",	[OP_MKDIR] = "mkdir",
	[OP_RMDIR] = "rmdir",		[OP_SYMLINK] = "symlink",
	[OP_MKNOD] = "mknod",		[OP_UNLINK] = "unlink",
	[OP_RENAME] = "rename",		[OP_LINK] = "link",
	[OP_HOLD] = "hold",		[OP_RELEASE] = "release",
	[OP_PRIVATE] = "open-unlinked",	[OP_READ] = "read",
	[OP_READDIR] = "readdir",	[OP_FSYNC] = "fsync",
};

static const int op_weight[OP_COUNT] = {
	[OP_CREATE] = 10,	[OP_WRITE] = 8,		[OP_APPEND] = 5,
	[OP_TRUNCATE] = 6,	[OP_OPEN_TRUNC] = 4,	[OP_MKDIR] = 7,
	[OP_RMDIR] = 6,		[OP_SYMLINK] = 8,	[OP_MKNOD] = 8,
	[OP_UNLINK] = 12,	[OP_RENAME] = 10,	[OP_LINK] = 4,
	[OP_HOLD] = 4,		[OP_RELEASE] = 4,	[OP_PRIVATE] = 2,
	[OP_READ] = 5,		[OP_READDIR] = 3,	[OP_FSYNC] = 1,
};

/* Errors a race with the other processes explains, for any operation. */
static const int race_errnos[] = {
	ENOENT, EEXIST, ENOTEMPTY, EISDIR, ENOTDIR, ELOOP, ENAMETOOLONG, EMLINK,
	EINVAL,		/* a directory renamed below itself; truncate of a special file */
	EPERM,		/* a hard link to a directory */
	ENXIO, ENODEV,	/* opening a socket, a device without a driver */
	EACCES,		/* opening a device on a nodev mount */
};

static const char	*dir;
static int		 verbose;
static uint64_t		 rng;
static int		 proc;
static unsigned long	 opno, failures, done[OP_COUNT];
static int		 held[HELD_MAX];
static char		 slow_target[PATH_MAX / 2];
static uint8_t		*data;

/* splitmix64: the same sequence for a seed everywhere. */
static uint64_t
rnd(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static uint64_t
rnd_below(uint64_t n)
{
	return rnd() % n;
}

/* A name of the pool: "nI" at the top or "nI/nJ" one directory down. */
static void
pick(char *out, size_t outlen)
{
	if (rnd_below(3) == 0)
		snprintf(out, outlen, "%s/n%u/n%u", dir, (unsigned)rnd_below(POOL),
		    (unsigned)rnd_below(POOL));
	else
		snprintf(out, outlen, "%s/n%u", dir, (unsigned)rnd_below(POOL));
}

static void
failure(enum op op, const char *path, const char *fmt, ...)
{
	va_list ap;

	failures++;
	fprintf(stderr, "fsd_stress: process %d, op %lu (%s %s): ", proc, opno, op_names[op],
	    path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int
race_errno(int e)
{
	size_t i;

	for (i = 0; i < sizeof(race_errnos) / sizeof(race_errnos[0]); i++)
		if (race_errnos[i] == e)
			return 1;
	return 0;
}

/* rc of a system call: a failure unless it succeeded or a race explains it. */
static int
judge(enum op op, const char *path, int rc)
{
	if (rc != -1) {
		done[op]++;
		return 0;
	}
	if (!race_errno(errno))
		failure(op, path, "%s", strerror(errno));
	return -1;
}

/* Write len bytes at off; only regular files get data. */
static void
write_at(enum op op, const char *path, int fd, off_t off, size_t len)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) == -1) {
		failure(op, path, "fstat: %s", strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode))
		return;
	n = pwrite(fd, data + rnd_below(SMALL_MAX), len, off);
	if (n == -1)
		failure(op, path, "pwrite: %s", strerror(errno));
	else if ((size_t)n != len)
		failure(op, path, "pwrite: %zd of %zu bytes", n, len);
}

static size_t
some_length(void)
{
	return rnd_below(4) == 0 ? (size_t)rnd_below(LARGE_MAX) + 1 : (size_t)rnd_below(SMALL_MAX) + 1;
}

/*
 * open(2) with O_CREAT and without O_EXCL: whatever another node made
 * under the name meanwhile is opened, never EEXIST.
 */
static void
op_open(enum op op, const char *path, int flags, off_t off, size_t len)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0644);

	if (fd == -1) {
		if (errno == EEXIST && !(flags & O_EXCL))
			failure(op, path, "EEXIST from open(O_CREAT) without O_EXCL");
		else
			judge(op, path, -1);
		return;
	}
	done[op]++;
	if (len > 0)
		write_at(op, path, fd, off, len);
	if (close(fd) == -1)
		failure(op, path, "close: %s", strerror(errno));
}

static void
op_mknod(const char *path)
{
	static const mode_t kinds[] = { S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK };
	mode_t kind = kinds[rnd_below(4)];

	judge(OP_MKNOD, path, mknod(path, kind | 0644, makedev(DEV_MAJOR, rnd_below(8))));
}

static void
op_hold(const char *path)
{
	unsigned i = (unsigned)rnd_below(HELD_MAX);
	int fd;

	if (held[i] != -1)
		close(held[i]);
	held[i] = -1;
	if ((fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) == -1) {
		judge(OP_HOLD, path, -1);
		return;
	}
	held[i] = fd;
	done[OP_HOLD]++;
	/* write through it now and then, whoever unlinked the name */
	if (rnd_below(2) == 0)
		write_at(OP_HOLD, path, fd, (off_t)rnd_below(SMALL_MAX), some_length());
}

static void
op_release(void)
{
	unsigned i = (unsigned)rnd_below(HELD_MAX);

	if (held[i] == -1)
		return;
	if (close(held[i]) == -1)
		failure(OP_RELEASE, "-", "close: %s", strerror(errno));
	else
		done[OP_RELEASE]++;
	held[i] = -1;
}

/* A file of our own: made, unlinked while open, then read back whole. */
static void
op_private(void)
{
	char path[PATH_MAX];
	size_t len = some_length(), got = 0;
	uint8_t *back;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/private-%d-%d", dir, (int)getpid(), proc);
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) == -1) {
		failure(OP_PRIVATE, path, "open: %s", strerror(errno));
		return;
	}
	if (unlink(path) == -1)
		failure(OP_PRIVATE, path, "unlink: %s", strerror(errno));
	if ((n = pwrite(fd, data, len, 0)) != (ssize_t)len)
		failure(OP_PRIVATE, path, "pwrite: %s", n == -1 ? strerror(errno) : "short");
	if ((back = malloc(len)) == NULL) {
		close(fd);
		return;
	}
	while (got < len && (n = pread(fd, back + got, len - got, (off_t)got)) > 0)
		got += (size_t)n;
	if (got != len || memcmp(back, data, len) != 0)
		failure(OP_PRIVATE, path, "read back %zu of %zu bytes, %s", got, len,
		    got == len ? "different" : "short");
	free(back);
	if (close(fd) == -1)
		failure(OP_PRIVATE, path, "close: %s", strerror(errno));
	done[OP_PRIVATE]++;
}

static void
op_read(const char *path)
{
	char buf[4096];
	struct stat st;
	int fd;

	if (judge(OP_READ, path, lstat(path, &st)) != 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		judge(OP_READ, path, (int)readlink(path, buf, sizeof(buf)));
		return;
	}
	if (!S_ISREG(st.st_mode))
		return;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		judge(OP_READ, path, -1);
		return;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static void
op_readdir(const char *path)
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(path)) == NULL) {
		judge(OP_READDIR, path, -1);
		return;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL)
		;
	if (errno != 0)
		judge(OP_READDIR, path, -1);
	else
		done[OP_READDIR]++;
	closedir(d);
}

/* fsd commits its journal: everything so far is durable. */
static void
op_fsync(const char *path)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		judge(OP_FSYNC, path, -1);
		return;
	}
	if (fsync(fd) == 0 || errno == EINVAL)	/* EINVAL: a special file */
		done[OP_FSYNC]++;
	else
		failure(OP_FSYNC, path, "fsync: %s", strerror(errno));
	close(fd);
}

static void
one_op(void)
{
	char path[PATH_MAX], other[PATH_MAX];
	int w = 0, total = 0, i;
	enum op op;

	for (i = 0; i < OP_COUNT; i++)
		total += op_weight[i];
	w = (int)rnd_below((uint64_t)total);
	for (op = 0; w >= op_weight[op]; op++)
		w -= op_weight[op];
	pick(path, sizeof(path));
	pick(other, sizeof(other));
	if (verbose)
		printf("%d.%lu %s %s\n", proc, opno, op_names[op], path);
	switch (op) {
	case OP_CREATE:
		op_open(op, path, O_WRONLY | O_CREAT | (rnd_below(4) == 0 ? O_EXCL : 0), 0,
		    some_length());
		break;
	case OP_WRITE:
		op_open(op, path, O_WRONLY, (off_t)rnd_below(LARGE_MAX), some_length());
		break;
	case OP_APPEND:
		op_open(op, path, O_WRONLY | O_CREAT | O_APPEND, 0, some_length());
		break;
	case OP_TRUNCATE:
		judge(op, path, truncate(path, (off_t)rnd_below(LARGE_MAX)));
		break;
	case OP_OPEN_TRUNC:
		op_open(op, path, O_WRONLY | O_TRUNC | (rnd_below(2) ? O_CREAT : 0), 0,
		    rnd_below(2) ? some_length() : 0);
		break;
	case OP_MKDIR:
		judge(op, path, mkdir(path, 0755));
		break;
	case OP_RMDIR:
		judge(op, path, rmdir(path));
		break;
	case OP_SYMLINK:
		judge(op, path, symlink(rnd_below(2) ? "n0" : slow_target, path));
		break;
	case OP_MKNOD:
		op_mknod(path);
		break;
	case OP_UNLINK:
		judge(op, path, unlink(path));
		break;
	case OP_RENAME:
		judge(op, path, rename(path, other));
		break;
	case OP_LINK:
		judge(op, path, link(path, other));
		break;
	case OP_HOLD:
		op_hold(path);
		break;
	case OP_RELEASE:
		op_release();
		break;
	case OP_PRIVATE:
		op_private();
		break;
	case OP_READ:
		op_read(path);
		break;
	case OP_READDIR:
		op_readdir(rnd_below(2) ? dir : path);
		break;
	case OP_FSYNC:
		op_fsync(path);
		break;
	case OP_COUNT:
		break;
	}
}

static int
run(unsigned long ops, uint64_t seed)
{
	unsigned long i;

	rng = seed;
	for (i = 0; i < HELD_MAX; i++)
		held[i] = -1;
	for (opno = 0; opno < ops; opno++)
		one_op();
	for (i = 0; i < HELD_MAX; i++)
		if (held[i] != -1)
			close(held[i]);
	/* how many of each went through: a run of nothing but races proves nothing */
	printf("fsd_stress: process %d: %lu operations, %lu failures; done:", proc, ops, failures);
	for (i = 0; i < OP_COUNT; i++)
		printf(" %s %lu", op_names[i], done[i]);
	printf("\n");
	return failures != 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: fsd_stress [-n OPS] [-p PROCS] [-s SEED] [-v] DIR\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	unsigned long ops = 1000, procs = 2, seed = 1, i;
	int c, status, rc = 0;
	char *end;
	pid_t pid;

	while ((c = getopt(argc, argv, "n:p:s:v")) != -1) {
		switch (c) {
		case 'n': ops = strtoul(optarg, &end, 10); break;
		case 'p': procs = strtoul(optarg, &end, 10); break;
		case 's': seed = strtoul(optarg, &end, 10); break;
		case 'v': verbose = 1; continue;
		default: usage();
		}
		if (*end != '\0' || end == optarg)
			usage();
	}
	if (optind != argc - 1 || procs == 0)
		usage();
	dir = argv[optind];
	if ((data = malloc(LARGE_MAX + SMALL_MAX)) == NULL)
		return 1;
	rng = seed;
	for (i = 0; i < LARGE_MAX + SMALL_MAX; i++)
		data[i] = (uint8_t)rnd();
	/* longer than a fast symlink holds in any block size */
	memset(slow_target, 's', sizeof(slow_target) - 1);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < procs; i++) {
		if ((pid = fork()) == -1) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			proc = (int)i;
			_exit(run(ops, (uint64_t)seed * 1000 + i));
		}
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rc = 1;
	return rc;
}
