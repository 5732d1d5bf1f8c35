/*
 * posixcheck DIR: named POSIX checks, each in its own subdirectory of DIR,
 * as a program meets the filesystem through the system calls: open flags,
 * the calls that make and remove names with their errors, rename, link
 * counts, modes, owners and timestamps, sizes, holes, readdir, permissions
 * as an unprivileged user, locks, mmap and xattrs. Each check prints
 * "ok NAME", "skip NAME: why" (a feature the filesystem refuses with
 * EOPNOTSUPP) or "FAIL NAME: what was expected, what happened"; the last
 * line is "posixcheck: N ok, N failed, N skipped".
 * posixcheck --list names the checks; posixcheck DIR NAME... runs some.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

enum { CK_OK, CK_FAIL, CK_SKIP };

/* The failing check's message; shared so that a forked child can set it. */
static char *msg;
#define MSGLEN 512

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSGLEN, fmt, ap);
	va_end(ap);
	return CK_FAIL;
}

static int
skipf(const char *why)
{
	snprintf(msg, MSGLEN, "%s", why);
	return CK_SKIP;
}

#define OK(e) do { \
	if ((long)(e) < 0) \
		return failf("%s: expected success, got %s (line %d)", #e, strerror(errno), __LINE__); \
} while (0)

#define ERR(e, E) do { \
	errno = 0; \
	long r_ = (long)(e); \
	if (r_ >= 0) \
		return failf("%s: expected %s, succeeded (line %d)", #e, strerrorname_np(E), __LINE__); \
	if (errno != (E)) \
		return failf("%s: expected %s, got %s (line %d)", #e, strerrorname_np(E), \
		    strerrorname_np(errno), __LINE__); \
} while (0)

/* Either of two errors POSIX allows. */
#define ERR2(e, E1, E2) do { \
	errno = 0; \
	long r_ = (long)(e); \
	if (r_ >= 0) \
		return failf("%s: expected %s or %s, succeeded (line %d)", #e, strerrorname_np(E1), \
		    strerrorname_np(E2), __LINE__); \
	if (errno != (E1) && errno != (E2)) \
		return failf("%s: expected %s or %s, got %s (line %d)", #e, strerrorname_np(E1), \
		    strerrorname_np(E2), strerrorname_np(errno), __LINE__); \
} while (0)

#define EXPECT(cond, ...) do { \
	if (!(cond)) { \
		char w_[256]; \
		snprintf(w_, sizeof(w_), __VA_ARGS__); \
		return failf("%s (line %d)", w_, __LINE__); \
	} \
} while (0)

#define EQ(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) \
		return failf("%s: expected %lld, got %lld (line %d)", #a, b_, a_, __LINE__); \
} while (0)

/* ---- helpers ---- */

static int
mkfile(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	if (data && write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static off_t
size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? -1 : st.st_size;
}

static long
nlink_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 ? -1 : (long)st.st_nlink;
}

static int
tscmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}

/*
 * Pushes PATH's atime and mtime an hour back (so that any later change is
 * seen) and waits past the kernel's coarse clock tick, so that a ctime
 * set from now differs from the one the caller reads next.
 */
static int
age(const char *path)
{
	struct stat st;
	struct timespec ts[2];

	if (lstat(path, &st) < 0)
		return -1;
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	ts[0].tv_sec -= 3600;
	ts[1].tv_sec -= 3600;
	if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	nanosleep(&(struct timespec){ 0, 30 * 1000 * 1000 }, NULL);
	return 0;
}

static void
tick(void)
{
	nanosleep(&(struct timespec){ 0, 30 * 1000 * 1000 }, NULL);
}

/* Which of mtime and ctime moved between two stats of one inode. */
#define MOVED(b, a, f) (tscmp((b).f, (a).f) < 0)
#define TIMES(b, a, want_m, want_c) do { \
	EXPECT(MOVED(b, a, st_mtim) == (want_m), "mtime %s", (want_m) ? "should move, did not" : "moved, should not"); \
	EXPECT(MOVED(b, a, st_ctim) == (want_c), "ctime %s", (want_c) ? "should move, did not" : "moved, should not"); \
} while (0)

static bool
has_entry(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, name))
			found = true;
	closedir(d);
	return found;
}

/* For checks that want only the error of a stat(2). */
static struct stat scratch_st;

#define NOBODY 65534

/*
 * Runs FN(ARG) in a child that has become uid and gid NOBODY with no
 * supplementary groups; its verdict and message are the check's.
 */
static int
as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return failf("fork: %s", strerror(errno));
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(failf("becoming nobody: %s", strerror(errno)));
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return failf("child as nobody did not exit normally");
	return WEXITSTATUS(status);
}

static int
need_root(void)
{
	return geteuid() == 0 ? CK_OK : skipf("needs root");
}

/* ---- open ---- */

static int
open_creat_mode(void)
{
	struct stat st;
	int fd;

	umask(022);
	OK(fd = open("f", O_WRONLY | O_CREAT, 0751));
	close(fd);
	OK(stat("f", &st));
	EXPECT(S_ISREG(st.st_mode), "not a regular file");
	EQ(st.st_mode & 07777, 0751 & ~022);
	EQ(st.st_size, 0);
	EQ(st.st_nlink, 1);
	EQ(st.st_uid, geteuid());
	EQ(st.st_gid, getegid());
	return CK_OK;
}

static int
open_creat_umask(void)
{
	struct stat st;
	int fd;

	umask(0077);
	fd = open("f", O_WRONLY | O_CREAT, 0666);
	umask(022);
	OK(fd);
	close(fd);
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 0600);
	return CK_OK;
}

static int
open_creat_existing(void)
{
	struct stat st;
	int fd;

	OK(mkfile("f", "hello"));
	OK(chmod("f", 0640));
	OK(fd = open("f", O_RDWR | O_CREAT, 0777));
	close(fd);
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 0640);
	EQ(st.st_size, 5);
	return CK_OK;
}

static int
open_creat_times(void)
{
	struct stat d0, d1, f;
	int fd;

	OK(age("."));
	OK(stat(".", &d0));
	OK(fd = open("f", O_WRONLY | O_CREAT, 0644));
	close(fd);
	OK(stat(".", &d1));
	OK(stat("f", &f));
	TIMES(d0, d1, true, true);
	EXPECT(tscmp(f.st_mtim, d0.st_ctim) > 0, "new file's mtime is older than the check");
	return CK_OK;
}

static int
open_excl_exists(void)
{
	OK(mkfile("f", NULL));
	ERR(open("f", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	OK(mkdir("d", 0755));
	ERR(open("d", O_RDONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	return CK_OK;
}

static int
open_excl_symlink(void)
{
	/* O_EXCL with a symlink in the last place fails even when dangling */
	OK(symlink("nowhere", "l"));
	ERR(open("l", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	EXPECT(access("nowhere", F_OK) < 0, "the link's target was created");
	return CK_OK;
}

static int
open_excl_new(void)
{
	int fd;

	OK(fd = open("f", O_WRONLY | O_CREAT | O_EXCL, 0644));
	close(fd);
	EQ(size_of("f"), 0);
	return CK_OK;
}

static int
open_creat_dangling_symlink(void)
{
	int fd;

	/* without O_EXCL, O_CREAT through a dangling symlink makes its target */
	OK(symlink("target", "l"));
	OK(fd = open("l", O_WRONLY | O_CREAT, 0644));
	close(fd);
	EXPECT(access("target", F_OK) == 0, "target was not created");
	return CK_OK;
}

static int
open_trunc_size(void)
{
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(fd = open("f", O_WRONLY | O_TRUNC));
	close(fd);
	EQ(size_of("f"), 0);
	return CK_OK;
}

static int
open_trunc_times(void)
{
	struct stat a, b;
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(age("f"));
	OK(stat("f", &a));
	OK(fd = open("f", O_WRONLY | O_TRUNC));
	close(fd);
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
open_trunc_empty_keeps_times(void)
{
	/* POSIX leaves this open; Linux moves the times of an empty file too */
	struct stat a, b;
	int fd;

	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(fd = open("f", O_WRONLY | O_TRUNC));
	close(fd);
	OK(stat("f", &b));
	EQ(b.st_size, 0);
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
open_trunc_rdonly_keeps(void)
{
	/* O_TRUNC without write access: unspecified, but never an error on Linux for the owner */
	int fd;

	OK(mkfile("f", "abc"));
	OK(fd = open("f", O_WRONLY | O_TRUNC));
	close(fd);
	OK(fd = open("f", O_RDONLY));
	char b[4];
	EQ(read(fd, b, 4), 0);
	close(fd);
	return CK_OK;
}

static int
open_trunc_reads_zero(void)
{
	char b[16];
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(fd = open("f", O_RDWR | O_TRUNC));
	EQ(pread(fd, b, sizeof(b), 0), 0);
	OK(write(fd, "ab", 2));
	close(fd);
	EQ(size_of("f"), 2);
	return CK_OK;
}

static int
open_append(void)
{
	char b[32];
	int fd;

	OK(mkfile("f", "head"));
	OK(fd = open("f", O_WRONLY | O_APPEND));
	OK(lseek(fd, 0, SEEK_SET));
	OK(write(fd, "tail", 4));
	EQ(lseek(fd, 0, SEEK_CUR), 8);
	close(fd);
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, sizeof(b)), 8);
	close(fd);
	EXPECT(!memcmp(b, "headtail", 8), "content is %.8s", b);
	return CK_OK;
}

static int
open_append_two_fds(void)
{
	char b[32];
	int f1, f2;

	OK(mkfile("f", NULL));
	OK(f1 = open("f", O_WRONLY | O_APPEND));
	OK(f2 = open("f", O_WRONLY | O_APPEND));
	OK(write(f1, "aa", 2));
	OK(write(f2, "bb", 2));
	OK(write(f1, "cc", 2));
	close(f1);
	close(f2);
	OK(f1 = open("f", O_RDONLY));
	EQ(read(f1, b, sizeof(b)), 6);
	close(f1);
	EXPECT(!memcmp(b, "aabbcc", 6), "content is %.6s", b);
	return CK_OK;
}

static int
open_directory_flag(void)
{
	int fd;

	OK(mkdir("d", 0755));
	OK(mkfile("f", NULL));
	OK(fd = open("d", O_RDONLY | O_DIRECTORY));
	close(fd);
	ERR(open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
	return CK_OK;
}

static int
open_dir_for_write(void)
{
	OK(mkdir("d", 0755));
	ERR(open("d", O_WRONLY), EISDIR);
	ERR(open("d", O_RDWR), EISDIR);
	return CK_OK;
}

static int
open_nofollow(void)
{
	int fd;

	OK(mkfile("f", NULL));
	OK(symlink("f", "l"));
	ERR(open("l", O_RDONLY | O_NOFOLLOW), ELOOP);
	OK(fd = open("f", O_RDONLY | O_NOFOLLOW));
	close(fd);
	return CK_OK;
}

static int
open_path_symlink(void)
{
	struct stat st;
	int fd;

	OK(symlink("f", "l"));
	OK(fd = open("l", O_PATH | O_NOFOLLOW));
	OK(fstatat(fd, "", &st, AT_EMPTY_PATH));
	close(fd);
	EXPECT(S_ISLNK(st.st_mode), "O_PATH|O_NOFOLLOW did not open the link itself");
	return CK_OK;
}

static int
open_rdonly_write(void)
{
	int fd;

	OK(mkfile("f", "x"));
	OK(fd = open("f", O_RDONLY));
	ERR(write(fd, "y", 1), EBADF);
	ERR(ftruncate(fd, 0), EINVAL);
	close(fd);
	EQ(size_of("f"), 1);
	return CK_OK;
}

static int
open_wronly_read(void)
{
	char b[4];
	int fd;

	OK(mkfile("f", "x"));
	OK(fd = open("f", O_WRONLY));
	ERR(read(fd, b, 1), EBADF);
	close(fd);
	return CK_OK;
}

static int
open_enoent(void)
{
	ERR(open("none", O_RDONLY), ENOENT);
	ERR(open("none/f", O_RDONLY | O_CREAT, 0644), ENOENT);
	ERR(open("", O_RDONLY), ENOENT);
	return CK_OK;
}

static int
open_enotdir(void)
{
	OK(mkfile("f", NULL));
	ERR(open("f/x", O_RDONLY), ENOTDIR);
	ERR(open("f/x", O_RDONLY | O_CREAT, 0644), ENOTDIR);
	return CK_OK;
}

static int
open_trailing_slash(void)
{
	OK(mkfile("f", NULL));
	ERR(open("f/", O_RDONLY), ENOTDIR);
	ERR(open("g/", O_RDONLY | O_CREAT, 0644), EISDIR);
	return CK_OK;
}

static char *
longname(size_t n, char ch)
{
	static char b[PATH_MAX * 2];

	memset(b, ch, n);
	b[n] = 0;
	return b;
}

static int
open_name_255(void)
{
	char *n = longname(255, 'a');
	int fd;

	OK(fd = open(n, O_WRONLY | O_CREAT, 0644));
	close(fd);
	EXPECT(has_entry(".", n), "255-byte name not listed");
	OK(unlink(n));
	return CK_OK;
}

static int
open_name_256(void)
{
	ERR(open(longname(256, 'a'), O_WRONLY | O_CREAT, 0644), ENAMETOOLONG);
	return CK_OK;
}

static int
path_max_long(void)
{
	/* a path of PATH_MAX bytes (its NUL makes PATH_MAX + 1) is too long */
	char p[PATH_MAX + 8];
	size_t n = 0;

	while (n < PATH_MAX) {
		p[n++] = 'x';
		if (n % 100 == 0 && n < PATH_MAX)
			p[n++] = '/';
	}
	p[PATH_MAX] = 0;
	ERR(open(p, O_RDONLY), ENAMETOOLONG);
	ERR(mkdir(p, 0755), ENAMETOOLONG);
	return CK_OK;
}

static int
path_deep_ok(void)
{
	/* many short components: the path stays under PATH_MAX and works */
	char p[PATH_MAX];
	size_t n = 0;

	for (int i = 0; i < 200; i++) {
		p[n++] = 'd';
		p[n] = 0;
		OK(mkdir(p, 0755));
		p[n++] = '/';
	}
	strcpy(p + n, "f");
	OK(mkfile(p, "deep"));
	EQ(size_of(p), 4);
	return CK_OK;
}

static int
open_tmpfile(void)
{
	char path[64];
	int fd = open(".", O_TMPFILE | O_RDWR, 0600);

	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return skipf("O_TMPFILE not supported");
	OK(fd);
	OK(write(fd, "tmp", 3));
	EXPECT(!has_entry(".", "t"), "unexpected entry");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	OK(linkat(AT_FDCWD, path, AT_FDCWD, "t", AT_SYMLINK_FOLLOW));
	close(fd);
	EQ(size_of("t"), 3);
	EQ(nlink_of("t"), 1);
	return CK_OK;
}

static int
open_tmpfile_unlinked(void)
{
	struct stat st;
	int fd = open(".", O_TMPFILE | O_RDWR, 0600);

	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return skipf("O_TMPFILE not supported");
	OK(fd);
	OK(fstat(fd, &st));
	EQ(st.st_nlink, 0);
	OK(write(fd, "gone", 4));
	close(fd);
	DIR *d = opendir(".");
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		n++;
	closedir(d);
	EQ(n, 2);
	return CK_OK;
}

/* ---- creat, mkdir, mknod, symlink, link ---- */

static int
creat_truncates(void)
{
	int fd;

	OK(mkfile("f", "data"));
	OK(fd = creat("f", 0644));
	OK(write(fd, "x", 1));
	close(fd);
	EQ(size_of("f"), 1);
	return CK_OK;
}

static int
creat_write_only(void)
{
	char b[2];
	int fd;

	OK(fd = creat("f", 0644));
	ERR(read(fd, b, 1), EBADF);
	close(fd);
	return CK_OK;
}

static int
mkdir_basic(void)
{
	struct stat st;

	umask(022);
	OK(mkdir("d", 0777));
	OK(stat("d", &st));
	EXPECT(S_ISDIR(st.st_mode), "not a directory");
	EQ(st.st_mode & 07777, 0755);
	EQ(st.st_nlink, 2);
	EXPECT(has_entry("d", ".") && has_entry("d", ".."), ". or .. missing");
	return CK_OK;
}

static int
mkdir_errors(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("f", NULL));
	OK(symlink("nowhere", "l"));
	ERR(mkdir("d", 0755), EEXIST);
	ERR(mkdir("f", 0755), EEXIST);
	ERR(mkdir("l", 0755), EEXIST);
	ERR(mkdir("none/d", 0755), ENOENT);
	ERR(mkdir("f/d", 0755), ENOTDIR);
	ERR(mkdir(longname(256, 'd'), 0755), ENAMETOOLONG);
	ERR(mkdir(".", 0755), EEXIST);
	return CK_OK;
}

static int
mkdir_parent_nlink(void)
{
	OK(mkdir("p", 0755));
	EQ(nlink_of("p"), 2);
	OK(mkdir("p/a", 0755));
	OK(mkdir("p/b", 0755));
	EQ(nlink_of("p"), 4);
	OK(mkfile("p/f", NULL));
	EQ(nlink_of("p"), 4);
	OK(rmdir("p/a"));
	EQ(nlink_of("p"), 3);
	return CK_OK;
}

static int
mkdir_times(void)
{
	struct stat a, b;

	OK(age("."));
	OK(stat(".", &a));
	OK(mkdir("d", 0755));
	OK(stat(".", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
mkdir_dotdot(void)
{
	struct stat a, b;

	OK(mkdir("d", 0755));
	OK(stat(".", &a));
	OK(stat("d/..", &b));
	EQ(a.st_ino, b.st_ino);
	return CK_OK;
}

static int
mknod_fifo(void)
{
	struct stat st;

	OK(mkfifo("p", 0644));
	OK(lstat("p", &st));
	EXPECT(S_ISFIFO(st.st_mode), "not a fifo");
	EQ(st.st_mode & 07777, 0644);
	ERR(mkfifo("p", 0644), EEXIST);
	OK(mknod("q", S_IFIFO | 0600, 0));
	OK(lstat("q", &st));
	EXPECT(S_ISFIFO(st.st_mode), "mknod S_IFIFO: not a fifo");
	return CK_OK;
}

static int
fifo_io(void)
{
	char b[8];
	int r, w;

	OK(mkfifo("p", 0644));
	OK(r = open("p", O_RDONLY | O_NONBLOCK));
	OK(w = open("p", O_WRONLY));
	EQ(write(w, "pipe", 4), 4);
	EQ(read(r, b, sizeof(b)), 4);
	close(r);
	close(w);
	EQ(size_of("p"), 0);
	return CK_OK;
}

static int
mknod_socket(void)
{
	struct stat st;

	OK(mknod("s", S_IFSOCK | 0644, 0));
	OK(lstat("s", &st));
	EXPECT(S_ISSOCK(st.st_mode), "not a socket");
	return CK_OK;
}

static int
socket_bind(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int s;

	strcpy(a.sun_path, "sock");
	OK(s = socket(AF_UNIX, SOCK_STREAM, 0));
	OK(bind(s, (struct sockaddr *)&a, sizeof(a)));
	close(s);
	OK(lstat("sock", &st));
	EXPECT(S_ISSOCK(st.st_mode), "bound name is not a socket");
	OK(unlink("sock"));
	return CK_OK;
}

static int
mknod_chr(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mknod("c", S_IFCHR | 0644, makedev(1, 3)));
	OK(lstat("c", &st));
	EXPECT(S_ISCHR(st.st_mode), "not a character device");
	EQ(major(st.st_rdev), 1);
	EQ(minor(st.st_rdev), 3);
	return CK_OK;
}

static int
mknod_blk(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mknod("b", S_IFBLK | 0600, makedev(7, 300)));
	OK(lstat("b", &st));
	EXPECT(S_ISBLK(st.st_mode), "not a block device");
	EQ(major(st.st_rdev), 7);
	EQ(minor(st.st_rdev), 300);
	return CK_OK;
}

static int
mknod_big_dev(void)
{
	/* major and minor numbers beyond the old 8-bit ones */
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mknod("c", S_IFCHR | 0644, makedev(300, 70000)));
	OK(lstat("c", &st));
	EQ(major(st.st_rdev), 300);
	EQ(minor(st.st_rdev), 70000);
	return CK_OK;
}

static int
mknod_errors(void)
{
	OK(mkfile("f", NULL));
	ERR(mknod("f", S_IFIFO | 0644, 0), EEXIST);
	ERR(mknod("none/p", S_IFIFO | 0644, 0), ENOENT);
	ERR(mknod("f/p", S_IFIFO | 0644, 0), ENOTDIR);
	ERR(mknod(longname(256, 'p'), S_IFIFO | 0644, 0), ENAMETOOLONG);
	return CK_OK;
}

static int
mknod_reg(void)
{
	struct stat st;

	OK(mknod("r", S_IFREG | 0640, 0));
	OK(lstat("r", &st));
	EXPECT(S_ISREG(st.st_mode), "not a regular file");
	EQ(st.st_size, 0);
	return CK_OK;
}

static int
symlink_basic(void)
{
	char b[64];
	struct stat st;

	OK(mkfile("f", "target"));
	OK(symlink("f", "l"));
	OK(lstat("l", &st));
	EXPECT(S_ISLNK(st.st_mode), "not a symlink");
	EQ(st.st_size, 1);
	EQ(readlink("l", b, sizeof(b)), 1);
	EXPECT(b[0] == 'f', "readlink gave %c", b[0]);
	EQ(size_of("l"), 6);
	return CK_OK;
}

static int
symlink_long_target(void)
{
	/* a target longer than a block: a symlink with data outside the inode */
	static char t[4096], b[4096];
	struct stat st;

	memset(t, 'z', 4000);
	t[4000] = 0;
	OK(symlink(t, "l"));
	OK(lstat("l", &st));
	EQ(st.st_size, 4000);
	EQ(readlink("l", b, sizeof(b)), 4000);
	EXPECT(!memcmp(b, t, 4000), "target differs");
	return CK_OK;
}

static int
symlink_errors(void)
{
	OK(mkfile("f", NULL));
	ERR(symlink("x", "f"), EEXIST);
	ERR(symlink("x", "none/l"), ENOENT);
	ERR(symlink("x", "f/l"), ENOTDIR);
	ERR(symlink("x", longname(256, 'l')), ENAMETOOLONG);
	ERR(symlink("", "e"), ENOENT);
	return CK_OK;
}

static int
symlink_loop(void)
{
	OK(symlink("b", "a"));
	OK(symlink("a", "b"));
	ERR(open("a", O_RDONLY), ELOOP);
	ERR(stat("a", &scratch_st), ELOOP);
	OK(symlink("self", "self"));
	ERR(open("self/x", O_RDONLY), ELOOP);
	return CK_OK;
}

static int
symlink_chain(void)
{
	char name[16], prev[16];

	/* 30 links to a file: within the kernel's limit of 40 */
	OK(mkfile("f", "x"));
	strcpy(prev, "f");
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		OK(symlink(prev, name));
		strcpy(prev, name);
	}
	EQ(size_of(prev), 1);
	return CK_OK;
}

static int
symlink_dir_traverse(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("d/f", "abc"));
	OK(symlink("d", "l"));
	EQ(size_of("l/f"), 3);
	OK(mkfile("l/g", NULL));
	EXPECT(has_entry("d", "g"), "file made through the link is not in its target");
	return CK_OK;
}

static int
symlink_lchown(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(symlink("f", "l"));
	OK(lchown("l", 123, 456));
	OK(lstat("l", &st));
	EQ(st.st_uid, 123);
	EQ(st.st_gid, 456);
	OK(stat("l", &st));
	EQ(st.st_uid, 0);
	return CK_OK;
}

static int
link_basic(void)
{
	struct stat a, b;

	OK(mkfile("f", "data"));
	OK(link("f", "g"));
	OK(stat("f", &a));
	OK(stat("g", &b));
	EQ(a.st_ino, b.st_ino);
	EQ(a.st_nlink, 2);
	OK(unlink("f"));
	EQ(nlink_of("g"), 1);
	EQ(size_of("g"), 4);
	return CK_OK;
}

static int
link_errors(void)
{
	OK(mkfile("f", NULL));
	OK(mkfile("g", NULL));
	OK(mkdir("d", 0755));
	ERR(link("f", "g"), EEXIST);
	ERR(link("none", "h"), ENOENT);
	ERR(link("f", "none/h"), ENOENT);
	ERR(link("f/x", "h"), ENOTDIR);
	ERR(link("f", "g/h"), ENOTDIR);
	ERR(link("f", longname(256, 'h')), ENAMETOOLONG);
	ERR(link("d", "d2"), EPERM);
	ERR(link("f", "d"), EEXIST);
	return CK_OK;
}

static int
link_times(void)
{
	struct stat f0, f1, d0, d1;

	OK(mkdir("d", 0755));
	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(age("d"));
	OK(stat("f", &f0));
	OK(stat("d", &d0));
	OK(link("f", "d/g"));
	OK(stat("f", &f1));
	OK(stat("d", &d1));
	TIMES(f0, f1, false, true);
	TIMES(d0, d1, true, true);
	return CK_OK;
}

static int
link_symlink_nofollow(void)
{
	struct stat st;

	/* link(2) on Linux links the symlink itself, not its target */
	OK(mkfile("f", NULL));
	OK(symlink("f", "l"));
	OK(link("l", "l2"));
	OK(lstat("l2", &st));
	EXPECT(S_ISLNK(st.st_mode), "link of a symlink is not a symlink");
	EQ(st.st_nlink, 2);
	return CK_OK;
}

static int
link_many(void)
{
	char n[16];

	OK(mkfile("f", NULL));
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "l%d", i);
		OK(link("f", n));
	}
	EQ(nlink_of("f"), 101);
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "l%d", i);
		OK(unlink(n));
	}
	EQ(nlink_of("f"), 1);
	return CK_OK;
}

static int
link_fifo(void)
{
	OK(mkfifo("p", 0644));
	OK(link("p", "q"));
	EQ(nlink_of("p"), 2);
	return CK_OK;
}

/* ---- unlink, rmdir ---- */

static int
unlink_basic(void)
{
	OK(mkfile("f", NULL));
	OK(unlink("f"));
	ERR(access("f", F_OK), ENOENT);
	EXPECT(!has_entry(".", "f"), "still listed");
	return CK_OK;
}

static int
unlink_errors(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("f", NULL));
	ERR(unlink("none"), ENOENT);
	ERR(unlink("f/x"), ENOTDIR);
	ERR(unlink("d"), EISDIR);
	ERR(unlink(longname(256, 'u')), ENAMETOOLONG);
	return CK_OK;
}

static int
unlink_open_file(void)
{
	char b[16];
	struct stat st;
	int fd;

	OK(mkfile("f", "still here"));
	OK(fd = open("f", O_RDWR));
	OK(unlink("f"));
	ERR(access("f", F_OK), ENOENT);
	EQ(pread(fd, b, sizeof(b), 0), 10);
	EXPECT(!memcmp(b, "still here", 10), "content changed");
	OK(pwrite(fd, "more", 4, 10));
	OK(fstat(fd, &st));
	EQ(st.st_nlink, 0);
	EQ(st.st_size, 14);
	close(fd);
	return CK_OK;
}

static int
unlink_symlink_only(void)
{
	OK(mkfile("f", NULL));
	OK(symlink("f", "l"));
	OK(unlink("l"));
	OK(access("f", F_OK));
	return CK_OK;
}

static int
unlink_times(void)
{
	struct stat f0, f1, d0, d1;

	OK(mkfile("f", NULL));
	OK(link("f", "g"));
	OK(age("f"));
	OK(age("."));
	OK(stat("f", &f0));
	OK(stat(".", &d0));
	OK(unlink("g"));
	OK(stat("f", &f1));
	OK(stat(".", &d1));
	TIMES(f0, f1, false, true);
	TIMES(d0, d1, true, true);
	return CK_OK;
}

static int
unlink_fifo_sock(void)
{
	OK(mkfifo("p", 0644));
	OK(mknod("s", S_IFSOCK | 0644, 0));
	OK(unlink("p"));
	OK(unlink("s"));
	EXPECT(!has_entry(".", "p") && !has_entry(".", "s"), "still listed");
	return CK_OK;
}

static int
rmdir_basic(void)
{
	OK(mkdir("d", 0755));
	OK(rmdir("d"));
	ERR(access("d", F_OK), ENOENT);
	EQ(nlink_of("."), 2);
	return CK_OK;
}

static int
rmdir_errors(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("d/f", NULL));
	OK(mkfile("f", NULL));
	OK(symlink("d", "l"));
	ERR2(rmdir("d"), ENOTEMPTY, EEXIST);
	ERR(rmdir("none"), ENOENT);
	ERR(rmdir("f"), ENOTDIR);
	ERR(rmdir("l"), ENOTDIR);
	ERR(rmdir("f/x"), ENOTDIR);
	ERR(rmdir("d/."), EINVAL);
	ERR2(rmdir("d/.."), ENOTEMPTY, EEXIST);
	return CK_OK;
}

static int
rmdir_subdir_not_empty(void)
{
	OK(mkdir("d", 0755));
	OK(mkdir("d/e", 0755));
	ERR2(rmdir("d"), ENOTEMPTY, EEXIST);
	OK(rmdir("d/e"));
	OK(rmdir("d"));
	return CK_OK;
}

static int
rmdir_after_unlinks(void)
{
	char n[16];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 50; i++) {
		snprintf(n, sizeof(n), "d/f%d", i);
		OK(mkfile(n, NULL));
	}
	for (int i = 0; i < 50; i++) {
		snprintf(n, sizeof(n), "d/f%d", i);
		OK(unlink(n));
	}
	OK(rmdir("d"));
	return CK_OK;
}

static int
rmdir_cwd(void)
{
	/* a removed current directory: its lookups fail, getcwd says so */
	char b[PATH_MAX];
	int back;

	OK(mkdir("d", 0755));
	OK(back = open(".", O_RDONLY | O_DIRECTORY));
	OK(chdir("d"));
	OK(rmdir("../d"));
	ERR(open("f", O_WRONLY | O_CREAT, 0644), ENOENT);
	ERR(getcwd(b, sizeof(b)) ? 0 : -1, ENOENT);
	OK(fchdir(back));
	close(back);
	return CK_OK;
}

static int
rmdir_open_dir(void)
{
	struct dirent *e;
	int n = 0;
	DIR *d;

	OK(mkdir("d", 0755));
	d = opendir("d");
	EXPECT(d, "opendir: %s", strerror(errno));
	OK(rmdir("d"));
	while ((e = readdir(d)))
		n++;
	closedir(d);
	EXPECT(n <= 2, "a removed directory lists %d entries", n);
	return CK_OK;
}

static int
rmdir_times(void)
{
	struct stat a, b;

	OK(mkdir("d", 0755));
	OK(age("."));
	OK(stat(".", &a));
	OK(rmdir("d"));
	OK(stat(".", &b));
	TIMES(a, b, true, true);
	EQ(b.st_nlink, 2);
	return CK_OK;
}

/* ---- rename ---- */

static int
rename_file(void)
{
	struct stat a, b;

	OK(mkfile("f", "data"));
	OK(stat("f", &a));
	OK(rename("f", "g"));
	ERR(access("f", F_OK), ENOENT);
	OK(stat("g", &b));
	EQ(a.st_ino, b.st_ino);
	EQ(b.st_size, 4);
	return CK_OK;
}

static int
rename_over_file(void)
{
	struct stat a, b;
	int fd;

	OK(mkfile("f", "new"));
	OK(mkfile("g", "old-old"));
	OK(stat("f", &a));
	OK(fd = open("g", O_RDONLY));
	OK(rename("f", "g"));
	OK(stat("g", &b));
	EQ(a.st_ino, b.st_ino);
	EQ(b.st_size, 3);
	OK(fstat(fd, &a));
	EQ(a.st_nlink, 0);
	close(fd);
	EXPECT(!has_entry(".", "f"), "old name still listed");
	return CK_OK;
}

static int
rename_over_hardlink(void)
{
	/* both names one inode: rename does nothing */
	OK(mkfile("f", NULL));
	OK(link("f", "g"));
	OK(rename("f", "g"));
	OK(access("f", F_OK));
	OK(access("g", F_OK));
	EQ(nlink_of("f"), 2);
	return CK_OK;
}

static int
rename_same_name(void)
{
	OK(mkfile("f", "x"));
	OK(mkdir("d", 0755));
	OK(rename("f", "f"));
	OK(rename("d", "d"));
	EQ(size_of("f"), 1);
	EQ(nlink_of("d"), 2);
	return CK_OK;
}

static int
rename_dir_over_empty_dir(void)
{
	struct stat a, b;

	OK(mkdir("a", 0755));
	OK(mkfile("a/f", NULL));
	OK(mkdir("b", 0755));
	OK(stat("a", &a));
	OK(rename("a", "b"));
	OK(stat("b", &b));
	EQ(a.st_ino, b.st_ino);
	OK(access("b/f", F_OK));
	EQ(nlink_of("."), 3);
	return CK_OK;
}

static int
rename_dir_over_nonempty(void)
{
	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkfile("b/f", NULL));
	ERR2(rename("a", "b"), ENOTEMPTY, EEXIST);
	OK(access("a", F_OK));
	OK(access("b/f", F_OK));
	return CK_OK;
}

static int
rename_file_over_dir(void)
{
	OK(mkfile("f", NULL));
	OK(mkdir("d", 0755));
	ERR(rename("f", "d"), EISDIR);
	return CK_OK;
}

static int
rename_dir_over_file(void)
{
	OK(mkfile("f", NULL));
	OK(mkdir("d", 0755));
	ERR(rename("d", "f"), ENOTDIR);
	return CK_OK;
}

static int
rename_into_own_subdir(void)
{
	OK(mkdir("a", 0755));
	OK(mkdir("a/b", 0755));
	ERR(rename("a", "a/b/c"), EINVAL);
	ERR(rename("a", "a/c"), EINVAL);
	OK(access("a/b", F_OK));
	return CK_OK;
}

static int
rename_dot(void)
{
	OK(mkdir("d", 0755));
	ERR2(rename("d/.", "e"), EINVAL, EBUSY);
	ERR2(rename("d/..", "e"), EINVAL, EBUSY);
	OK(mkdir("e", 0755));
	ERR2(rename("e", "d/."), EBUSY, EINVAL);
	return CK_OK;
}

static int
rename_errors(void)
{
	OK(mkfile("f", NULL));
	ERR(rename("none", "g"), ENOENT);
	ERR(rename("f", "none/g"), ENOENT);
	ERR(rename("f", "f/g"), ENOTDIR);
	ERR(rename("f/x", "g"), ENOTDIR);
	ERR(rename("f", longname(256, 'r')), ENAMETOOLONG);
	ERR(rename("", "g"), ENOENT);
	return CK_OK;
}

static int
rename_across_dirs(void)
{
	struct stat a, b;

	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkfile("a/f", "xyz"));
	OK(stat("a/f", &a));
	OK(rename("a/f", "b/g"));
	OK(stat("b/g", &b));
	EQ(a.st_ino, b.st_ino);
	EXPECT(!has_entry("a", "f"), "still in the old directory");
	EXPECT(has_entry("b", "g"), "not in the new directory");
	return CK_OK;
}

static int
rename_dir_across_parents(void)
{
	struct stat p, d;

	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkdir("a/d", 0755));
	EQ(nlink_of("a"), 3);
	EQ(nlink_of("b"), 2);
	OK(rename("a/d", "b/d"));
	EQ(nlink_of("a"), 2);
	EQ(nlink_of("b"), 3);
	OK(stat("b", &p));
	OK(stat("b/d/..", &d));
	EQ(p.st_ino, d.st_ino);
	return CK_OK;
}

static int
rename_dir_over_empty_across(void)
{
	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkdir("a/d", 0755));
	OK(mkdir("b/e", 0755));
	OK(rename("a/d", "b/e"));
	EQ(nlink_of("a"), 2);
	EQ(nlink_of("b"), 3);
	EXPECT(!has_entry("b", "d") && has_entry("b", "e"), "wrong names in b");
	return CK_OK;
}

static int
rename_ctime(void)
{
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(rename("f", "g"));
	OK(stat("g", &b));
	/* Linux file systems move the ctime of the renamed inode */
	TIMES(a, b, false, true);
	return CK_OK;
}

static int
rename_parent_times(void)
{
	struct stat a0, a1, b0, b1;

	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkfile("a/f", NULL));
	OK(age("a"));
	OK(age("b"));
	OK(stat("a", &a0));
	OK(stat("b", &b0));
	OK(rename("a/f", "b/f"));
	OK(stat("a", &a1));
	OK(stat("b", &b1));
	TIMES(a0, a1, true, true);
	TIMES(b0, b1, true, true);
	return CK_OK;
}

static int
rename_symlink(void)
{
	char b[16];
	struct stat st;

	OK(symlink("target", "l"));
	OK(rename("l", "m"));
	OK(lstat("m", &st));
	EXPECT(S_ISLNK(st.st_mode), "not a symlink after rename");
	EQ(readlink("m", b, sizeof(b)), 6);
	return CK_OK;
}

static int
rename_over_symlink(void)
{
	struct stat st;

	OK(mkfile("f", NULL));
	OK(mkfile("t", "t"));
	OK(symlink("t", "l"));
	OK(rename("f", "l"));
	OK(lstat("l", &st));
	EXPECT(S_ISREG(st.st_mode), "the symlink was not replaced");
	EQ(size_of("t"), 1);
	return CK_OK;
}

static int
rename_noreplace(void)
{
	OK(mkfile("f", "1"));
	OK(mkfile("g", "22"));
	if (renameat2(AT_FDCWD, "f", AT_FDCWD, "g", RENAME_NOREPLACE) < 0 && errno == EINVAL)
		return skipf("RENAME_NOREPLACE not supported");
	EXPECT(errno == EEXIST, "RENAME_NOREPLACE over a file: expected EEXIST, got %s",
	    strerrorname_np(errno));
	EQ(size_of("g"), 2);
	OK(renameat2(AT_FDCWD, "f", AT_FDCWD, "h", RENAME_NOREPLACE));
	EQ(size_of("h"), 1);
	return CK_OK;
}

static int
rename_exchange(void)
{
	OK(mkfile("f", "1"));
	OK(mkdir("d", 0755));
	if (renameat2(AT_FDCWD, "f", AT_FDCWD, "d", RENAME_EXCHANGE) < 0) {
		if (errno == EINVAL)
			return skipf("RENAME_EXCHANGE not supported");
		return failf("RENAME_EXCHANGE: %s", strerror(errno));
	}
	struct stat st;
	OK(stat("f", &st));
	EXPECT(S_ISDIR(st.st_mode), "f is not the directory after the exchange");
	EQ(size_of("d"), 1);
	return CK_OK;
}

static int
rename_many_in_dir(void)
{
	char a[32], b[32];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 100; i++) {
		snprintf(a, sizeof(a), "d/a%d", i);
		OK(mkfile(a, NULL));
	}
	for (int i = 0; i < 100; i++) {
		snprintf(a, sizeof(a), "d/a%d", i);
		snprintf(b, sizeof(b), "d/b%d", i);
		OK(rename(a, b));
	}
	int n = 0;
	DIR *d = opendir("d");
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] == 'b')
			n++;
		else if (e->d_name[0] == 'a')
			n += 1000;
	closedir(d);
	EQ(n, 100);
	return CK_OK;
}

static int
rename_open_file(void)
{
	char b[8];
	int fd;

	OK(mkfile("f", "opened"));
	OK(fd = open("f", O_RDONLY));
	OK(mkdir("d", 0755));
	OK(rename("f", "d/g"));
	EQ(pread(fd, b, 6, 0), 6);
	close(fd);
	EXPECT(!memcmp(b, "opened", 6), "content changed");
	return CK_OK;
}

/* ---- link counts ---- */

static int
nlink_dir_subdirs(void)
{
	char n[16];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 10; i++) {
		snprintf(n, sizeof(n), "d/s%d", i);
		OK(mkdir(n, 0755));
	}
	for (int i = 0; i < 5; i++) {
		snprintf(n, sizeof(n), "d/f%d", i);
		OK(mkfile(n, NULL));
	}
	EQ(nlink_of("d"), 12);
	EQ(nlink_of("d/s0"), 2);
	return CK_OK;
}

static int
nlink_file_links(void)
{
	OK(mkfile("f", NULL));
	EQ(nlink_of("f"), 1);
	OK(link("f", "g"));
	OK(link("f", "h"));
	EQ(nlink_of("f"), 3);
	OK(rename("g", "h"));
	EQ(nlink_of("f"), 3);
	OK(unlink("h"));
	EQ(nlink_of("f"), 2);
	return CK_OK;
}

static int
nlink_rename_over_link(void)
{
	OK(mkfile("f", NULL));
	OK(link("f", "g"));
	OK(mkfile("h", NULL));
	OK(rename("h", "g"));
	EQ(nlink_of("f"), 1);
	return CK_OK;
}

static int
nlink_fstat_open(void)
{
	struct stat st;
	int fd;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDONLY));
	OK(link("f", "g"));
	OK(fstat(fd, &st));
	EQ(st.st_nlink, 2);
	OK(unlink("f"));
	OK(unlink("g"));
	OK(fstat(fd, &st));
	EQ(st.st_nlink, 0);
	close(fd);
	return CK_OK;
}

/* ---- chmod, chown ---- */

static int
chmod_basic(void)
{
	struct stat st;

	OK(mkfile("f", NULL));
	OK(chmod("f", 0123));
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 0123);
	OK(chmod("f", 07777));
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 07777);
	EXPECT(S_ISREG(st.st_mode), "type changed");
	return CK_OK;
}

static int
chmod_dir(void)
{
	struct stat st;

	OK(mkdir("d", 0755));
	OK(chmod("d", 01777));
	OK(stat("d", &st));
	EQ(st.st_mode & 07777, 01777);
	EXPECT(S_ISDIR(st.st_mode), "type changed");
	return CK_OK;
}

static int
chmod_follows_symlink(void)
{
	struct stat st;

	OK(mkfile("f", NULL));
	OK(chmod("f", 0644));
	OK(symlink("f", "l"));
	OK(chmod("l", 0600));
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 0600);
	return CK_OK;
}

static int
chmod_errors(void)
{
	OK(mkfile("f", NULL));
	ERR(chmod("none", 0644), ENOENT);
	ERR(chmod("f/x", 0644), ENOTDIR);
	ERR(chmod(longname(256, 'c'), 0644), ENAMETOOLONG);
	return CK_OK;
}

static int
chmod_times(void)
{
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(chmod("f", 0600));
	OK(stat("f", &b));
	TIMES(a, b, false, true);
	return CK_OK;
}

static int
fchmod_basic(void)
{
	struct stat st;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(fchmod(fd, 0400));
	OK(fstat(fd, &st));
	EQ(st.st_mode & 07777, 0400);
	/* an open descriptor keeps its access after the mode changes */
	EQ(write(fd, "x", 1), 1);
	close(fd);
	EQ(size_of("f"), 1);
	return CK_OK;
}

static int
chown_basic(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(chown("f", 1234, 5678));
	OK(stat("f", &st));
	EQ(st.st_uid, 1234);
	EQ(st.st_gid, 5678);
	OK(chown("f", -1, 42));
	OK(stat("f", &st));
	EQ(st.st_uid, 1234);
	EQ(st.st_gid, 42);
	OK(chown("f", 77, -1));
	OK(stat("f", &st));
	EQ(st.st_uid, 77);
	EQ(st.st_gid, 42);
	return CK_OK;
}

static int
chown_big_ids(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(chown("f", 100000, 200000));
	OK(stat("f", &st));
	EQ(st.st_uid, 100000);
	EQ(st.st_gid, 200000);
	return CK_OK;
}

static int
chown_times(void)
{
	struct stat a, b;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(chown("f", 5, 5));
	OK(stat("f", &b));
	TIMES(a, b, false, true);
	return CK_OK;
}

static int
chown_noop_ctime(void)
{
	/* chown(-1, -1) still updates ctime on Linux */
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(chown("f", -1, -1));
	OK(stat("f", &b));
	TIMES(a, b, false, true);
	return CK_OK;
}

static int
chown_clears_suid(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(chmod("f", 06755));
	OK(chown("f", 1000, 1000));
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 0755);
	return CK_OK;
}

static int
chown_sgid_nogx(void)
{
	/* setgid without group execute is mandatory locking, not cleared */
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(chmod("f", 02644));
	OK(chown("f", 1000, 1000));
	OK(stat("f", &st));
	EQ(st.st_mode & 07777, 02644);
	return CK_OK;
}

static int
fchown_basic(void)
{
	struct stat st;
	int fd, r = need_root();

	if (r != CK_OK)
		return r;
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(fchown(fd, 11, 22));
	OK(fstat(fd, &st));
	EQ(st.st_uid, 11);
	EQ(st.st_gid, 22);
	close(fd);
	OK(stat("f", &st));
	EQ(st.st_uid, 11);
	return CK_OK;
}

static int
chown_dir_and_fifo(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkdir("d", 0755));
	OK(mkfifo("p", 0644));
	OK(chown("d", 3, 4));
	OK(chown("p", 5, 6));
	OK(stat("d", &st));
	EQ(st.st_uid, 3);
	OK(stat("p", &st));
	EQ(st.st_gid, 6);
	return CK_OK;
}

/* ---- timestamps ---- */

static int
utimens_set(void)
{
	struct timespec ts[2] = { { 1000000000, 123456789 }, { 1100000000, 987654321 } };
	struct stat st;

	OK(mkfile("f", NULL));
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &st));
	EQ(st.st_atim.tv_sec, 1000000000);
	EQ(st.st_atim.tv_nsec, 123456789);
	EQ(st.st_mtim.tv_sec, 1100000000);
	EQ(st.st_mtim.tv_nsec, 987654321);
	return CK_OK;
}

static int
utimens_now(void)
{
	struct timespec ts[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } }, before;
	struct stat st;

	OK(mkfile("f", NULL));
	OK(age("f"));
	clock_gettime(CLOCK_REALTIME, &before);
	before.tv_sec -= 1;
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &st));
	EXPECT(tscmp(st.st_atim, before) > 0 && tscmp(st.st_mtim, before) > 0,
	    "UTIME_NOW did not set now");
	return CK_OK;
}

static int
utimens_omit(void)
{
	struct timespec ts[2] = { { 5000, 0 }, { 0, UTIME_OMIT } };
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(age("f"));
	OK(stat("f", &a));
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &b));
	EQ(b.st_atim.tv_sec, 5000);
	EXPECT(tscmp(a.st_mtim, b.st_mtim) == 0, "UTIME_OMIT changed mtime");
	EXPECT(tscmp(a.st_ctim, b.st_ctim) < 0, "ctime did not move");
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1] = (struct timespec){ 6000, 1 };
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &a));
	EQ(a.st_atim.tv_sec, 5000);
	EQ(a.st_mtim.tv_sec, 6000);
	EQ(a.st_mtim.tv_nsec, 1);
	return CK_OK;
}

static int
utimens_both_omit(void)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(stat("f", &a));
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &b));
	EXPECT(tscmp(a.st_mtim, b.st_mtim) == 0 && tscmp(a.st_atim, b.st_atim) == 0, "times changed");
	return CK_OK;
}

static int
utimens_null(void)
{
	struct stat st;
	struct timespec before;

	OK(mkfile("f", NULL));
	OK(age("f"));
	clock_gettime(CLOCK_REALTIME, &before);
	before.tv_sec -= 1;
	OK(utimensat(AT_FDCWD, "f", NULL, 0));
	OK(stat("f", &st));
	EXPECT(tscmp(st.st_mtim, before) > 0, "NULL times did not set now");
	return CK_OK;
}

static int
utimens_nofollow(void)
{
	struct timespec ts[2] = { { 7000, 0 }, { 8000, 0 } };
	struct stat l, f;

	OK(mkfile("f", NULL));
	OK(symlink("f", "l"));
	OK(utimensat(AT_FDCWD, "l", ts, AT_SYMLINK_NOFOLLOW));
	OK(lstat("l", &l));
	OK(stat("f", &f));
	EQ(l.st_mtim.tv_sec, 8000);
	EXPECT(f.st_mtim.tv_sec != 8000, "the target's mtime changed");
	return CK_OK;
}

static int
utimens_old_and_future(void)
{
	struct timespec ts[2] = { { -1000, 0 }, { 4102444800LL, 500 } };
	struct stat st;

	OK(mkfile("f", NULL));
	OK(utimensat(AT_FDCWD, "f", ts, 0));
	OK(stat("f", &st));
	EQ(st.st_atim.tv_sec, -1000);
	EQ(st.st_mtim.tv_sec, 4102444800LL);
	EQ(st.st_mtim.tv_nsec, 500);
	return CK_OK;
}

static int
futimens_basic(void)
{
	struct timespec ts[2] = { { 12345, 6 }, { 23456, 7 } };
	struct stat st;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(futimens(fd, ts));
	OK(fstat(fd, &st));
	close(fd);
	EQ(st.st_mtim.tv_sec, 23456);
	EQ(st.st_mtim.tv_nsec, 7);
	OK(stat("f", &st));
	EQ(st.st_atim.tv_nsec, 6);
	return CK_OK;
}

static int
utimens_dir(void)
{
	struct timespec ts[2] = { { 111, 1 }, { 222, 2 } };
	struct stat st;

	OK(mkdir("d", 0755));
	OK(utimensat(AT_FDCWD, "d", ts, 0));
	OK(stat("d", &st));
	EQ(st.st_mtim.tv_sec, 222);
	EQ(st.st_mtim.tv_nsec, 2);
	return CK_OK;
}

static int
utimens_errors(void)
{
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };

	OK(mkfile("f", NULL));
	ERR(utimensat(AT_FDCWD, "none", NULL, 0), ENOENT);
	ERR(utimensat(AT_FDCWD, "f", bad, 0), EINVAL);
	return CK_OK;
}

static int
times_write(void)
{
	struct stat a, b;
	int fd;

	OK(mkfile("f", "abc"));
	OK(age("f"));
	OK(stat("f", &a));
	OK(fd = open("f", O_WRONLY));
	OK(write(fd, "x", 1));
	close(fd);
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
times_write_dir_unchanged(void)
{
	struct stat a, b;
	int fd;

	OK(mkfile("f", "abc"));
	OK(age("."));
	OK(stat(".", &a));
	OK(fd = open("f", O_WRONLY));
	OK(write(fd, "x", 1));
	close(fd);
	OK(stat(".", &b));
	TIMES(a, b, false, false);
	return CK_OK;
}

static int
times_read(void)
{
	struct stat a, b;
	char c[4];
	int fd;

	OK(mkfile("f", "abc"));
	OK(age("f"));
	OK(stat("f", &a));
	OK(fd = open("f", O_RDONLY));
	OK(read(fd, c, 3));
	close(fd);
	OK(stat("f", &b));
	TIMES(a, b, false, false);
	return CK_OK;
}

static int
times_truncate(void)
{
	struct stat a, b;

	OK(mkfile("f", "abcdef"));
	OK(age("f"));
	OK(stat("f", &a));
	OK(truncate("f", 2));
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	OK(age("f"));
	OK(stat("f", &a));
	OK(truncate("f", 100));
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
times_ftruncate(void)
{
	struct stat a, b;
	int fd;

	OK(mkfile("f", "abcdef"));
	OK(age("f"));
	OK(stat("f", &a));
	OK(fd = open("f", O_RDWR));
	OK(ftruncate(fd, 3));
	close(fd);
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
truncate_same_size(void)
{
	/*
	 * POSIX asks for new times only when the size changes (Linux file
	 * systems differ here), so only the content and size are checked.
	 */
	char b[8];
	int fd;

	OK(mkfile("f", "abc"));
	OK(truncate("f", 3));
	EQ(size_of("f"), 3);
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, sizeof(b)), 3);
	close(fd);
	EXPECT(!memcmp(b, "abc", 3), "content changed");
	return CK_OK;
}

static int
times_symlink_parent(void)
{
	struct stat a, b;

	OK(age("."));
	OK(stat(".", &a));
	OK(symlink("x", "l"));
	OK(stat(".", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
times_mknod_parent(void)
{
	struct stat a, b;

	OK(age("."));
	OK(stat(".", &a));
	OK(mkfifo("p", 0644));
	OK(stat(".", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

static int
times_nanoseconds_kept(void)
{
	/* a write stores a time with sub-second part on disk too */
	struct stat a;
	int fd, nonzero = 0;

	for (int i = 0; i < 3; i++) {
		char n[8];
		snprintf(n, sizeof(n), "f%d", i);
		OK(fd = open(n, O_WRONLY | O_CREAT, 0644));
		OK(write(fd, "x", 1));
		close(fd);
		OK(stat(n, &a));
		nonzero += a.st_mtim.tv_nsec != 0;
		tick();
	}
	EXPECT(nonzero > 0, "every mtime has zero nanoseconds");
	return CK_OK;
}

static int
times_readdir_no_mtime(void)
{
	struct stat a, b;
	DIR *d;

	OK(mkfile("f", NULL));
	OK(age("."));
	OK(stat(".", &a));
	d = opendir(".");
	while (readdir(d))
		;
	closedir(d);
	OK(stat(".", &b));
	TIMES(a, b, false, false);
	return CK_OK;
}

static int
times_link_count_change_ctime(void)
{
	/* the ctime of an inode moves when one of its names goes */
	struct stat a, b;

	OK(mkfile("f", NULL));
	OK(link("f", "g"));
	OK(age("g"));
	OK(stat("g", &a));
	OK(rename("f", "h"));
	OK(unlink("h"));
	OK(stat("g", &b));
	EXPECT(MOVED(a, b, st_ctim), "ctime did not move");
	return CK_OK;
}

static int
times_mmap_write(void)
{
	struct stat a, b;
	char *p;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(ftruncate(fd, 4096));
	OK(age("f"));
	OK(fstat(fd, &a));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	p[0] = 'x';
	OK(msync(p, 4096, MS_SYNC));
	munmap(p, 4096);
	close(fd);
	OK(stat("f", &b));
	TIMES(a, b, true, true);
	return CK_OK;
}

/* ---- sizes, truncate, holes ---- */

static int
truncate_up_zeros(void)
{
	char b[200];
	int fd;

	OK(mkfile("f", "abc"));
	OK(truncate("f", 200));
	EQ(size_of("f"), 200);
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, sizeof(b)), 200);
	close(fd);
	EXPECT(!memcmp(b, "abc", 3), "head changed");
	for (int i = 3; i < 200; i++)
		EXPECT(b[i] == 0, "byte %d is %d, not 0", i, b[i]);
	return CK_OK;
}

static int
truncate_down(void)
{
	char b[16];
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(truncate("f", 4));
	EQ(size_of("f"), 4);
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, sizeof(b)), 4);
	close(fd);
	EXPECT(!memcmp(b, "0123", 4), "content is %.4s", b);
	return CK_OK;
}

static int
truncate_down_up_zeros(void)
{
	/* bytes cut off and then grown back read as zeros, not the old data */
	char b[10];
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(truncate("f", 3));
	OK(truncate("f", 10));
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, 10), 10);
	close(fd);
	for (int i = 3; i < 10; i++)
		EXPECT(b[i] == 0, "byte %d is '%c' after shrink and grow", i, b[i]);
	return CK_OK;
}

static int
truncate_big_sparse(void)
{
	struct stat st;
	char b[8];
	int fd;

	OK(mkfile("f", NULL));
	OK(truncate("f", 1LL << 32));
	OK(stat("f", &st));
	EQ(st.st_size, 1LL << 32);
	EXPECT(st.st_blocks < 1024, "a hole of 4 GiB takes %lld blocks", (long long)st.st_blocks);
	OK(fd = open("f", O_RDONLY));
	EQ(pread(fd, b, 8, (1LL << 32) - 8), 8);
	close(fd);
	for (int i = 0; i < 8; i++)
		EXPECT(b[i] == 0, "not zero at the end");
	return CK_OK;
}

static int
truncate_to_zero_then_write(void)
{
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(fd = open("f", O_RDWR));
	OK(ftruncate(fd, 0));
	OK(pwrite(fd, "z", 1, 5));
	close(fd);
	EQ(size_of("f"), 6);
	return CK_OK;
}

static int
truncate_errors(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("f", NULL));
	ERR(truncate("d", 0), EISDIR);
	ERR(truncate("none", 0), ENOENT);
	ERR(truncate("f", -1), EINVAL);
	ERR(truncate("f/x", 0), ENOTDIR);
	return CK_OK;
}

static int
ftruncate_errors(void)
{
	int fd;

	OK(mkdir("d", 0755));
	OK(fd = open("d", O_RDONLY));
	ERR(ftruncate(fd, 0), EINVAL);
	close(fd);
	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDWR));
	ERR(ftruncate(fd, -1), EINVAL);
	close(fd);
	return CK_OK;
}

static int
truncate_block_edges(void)
{
	/* shrinking to inside a block zeroes the block's tail once grown again */
	static char b[16384];
	int fd;

	memset(b, 'q', sizeof(b));
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(write(fd, b, sizeof(b)), sizeof(b));
	OK(ftruncate(fd, 5000));
	OK(ftruncate(fd, 16384));
	EQ(pread(fd, b, sizeof(b), 0), sizeof(b));
	close(fd);
	for (int i = 0; i < 5000; i++)
		EXPECT(b[i] == 'q', "byte %d lost", i);
	for (int i = 5000; i < 16384; i++)
		EXPECT(b[i] == 0, "byte %d is not zero", i);
	return CK_OK;
}

static int
write_past_eof(void)
{
	char b[8192];
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(write(fd, "a", 1));
	EQ(pwrite(fd, "b", 1, 8000), 1);
	EQ(pread(fd, b, sizeof(b), 0), 8001);
	close(fd);
	EXPECT(b[0] == 'a' && b[8000] == 'b', "written bytes lost");
	for (int i = 1; i < 8000; i++)
		EXPECT(b[i] == 0, "byte %d is %d, not 0", i, b[i]);
	return CK_OK;
}

static int
write_far_past_eof(void)
{
	char b[4];
	struct stat st;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(pwrite(fd, "end", 3, 1LL << 30), 3);
	/* a write-back cache reports a write it could not place here */
	OK(fsync(fd));
	OK(fstat(fd, &st));
	EQ(st.st_size, (1LL << 30) + 3);
	EXPECT(st.st_blocks < 1024, "a 1 GiB hole takes %lld blocks", (long long)st.st_blocks);
	EQ(pread(fd, b, 3, 1 << 20), 3);
	EXPECT(!b[0] && !b[1] && !b[2], "hole not zero");
	EQ(pread(fd, b, 3, 1LL << 30), 3);
	close(fd);
	EXPECT(!memcmp(b, "end", 3), "data at 1 GiB lost");
	return CK_OK;
}

static int
lseek_past_eof_write(void)
{
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(lseek(fd, 100000, SEEK_SET), 100000);
	EQ(size_of("f"), 0);
	OK(write(fd, "x", 1));
	close(fd);
	EQ(size_of("f"), 100001);
	return CK_OK;
}

static int
lseek_end(void)
{
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(fd = open("f", O_RDONLY));
	EQ(lseek(fd, 0, SEEK_END), 10);
	EQ(lseek(fd, -3, SEEK_END), 7);
	EQ(lseek(fd, 5, SEEK_END), 15);
	ERR(lseek(fd, -20, SEEK_END), EINVAL);
	EQ(lseek(fd, 2, SEEK_SET), 2);
	EQ(lseek(fd, 3, SEEK_CUR), 5);
	close(fd);
	return CK_OK;
}

static int
lseek_data_hole(void)
{
	static char blk[65536];
	off_t d, h;
	int fd;

	memset(blk, 'd', sizeof(blk));
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(pwrite(fd, blk, sizeof(blk), 1 << 20), sizeof(blk));
	OK(ftruncate(fd, 4 << 20));
	d = lseek(fd, 0, SEEK_DATA);
	h = lseek(fd, 0, SEEK_HOLE);
	/* a filesystem without hole reporting says data to EOF: allowed */
	EXPECT(d >= 0 && d <= 1 << 20, "SEEK_DATA from 0 gave %lld", (long long)d);
	EXPECT(h >= 0 && (h == 0 || h == (4 << 20)) && (h != 0 || d == 1 << 20),
	    "SEEK_HOLE from 0 gave %lld", (long long)h);
	h = lseek(fd, 1 << 20, SEEK_HOLE);
	EXPECT(h >= (1 << 20) + (off_t)sizeof(blk) && h <= 4 << 20,
	    "SEEK_HOLE inside data gave %lld", (long long)h);
	ERR(lseek(fd, 4 << 20, SEEK_DATA), ENXIO);
	ERR(lseek(fd, 5 << 20, SEEK_HOLE), ENXIO);
	d = lseek(fd, (1 << 20) + 100, SEEK_DATA);
	EQ(d, (1 << 20) + 100);
	close(fd);
	return CK_OK;
}

static int
lseek_data_empty(void)
{
	int fd;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDONLY));
	ERR(lseek(fd, 0, SEEK_DATA), ENXIO);
	ERR(lseek(fd, 0, SEEK_HOLE), ENXIO);
	close(fd);
	return CK_OK;
}

static int
lseek_hole_full(void)
{
	int fd;

	OK(mkfile("f", "all data here"));
	OK(fd = open("f", O_RDONLY));
	EQ(lseek(fd, 0, SEEK_DATA), 0);
	EQ(lseek(fd, 0, SEEK_HOLE), 13);
	EQ(lseek(fd, 5, SEEK_HOLE), 13);
	close(fd);
	return CK_OK;
}

static int
read_at_eof(void)
{
	char b[8];
	int fd;

	OK(mkfile("f", "abc"));
	OK(fd = open("f", O_RDONLY));
	EQ(pread(fd, b, 8, 3), 0);
	EQ(pread(fd, b, 8, 1000), 0);
	EQ(pread(fd, b, 8, 1), 2);
	close(fd);
	return CK_OK;
}

static int
write_read_large(void)
{
	static char w[300000], r[300000];
	int fd;

	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = (char)(i * 7 + i / 4096);
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(write(fd, w, sizeof(w)), sizeof(w));
	EQ(pread(fd, r, sizeof(r), 0), sizeof(r));
	close(fd);
	EXPECT(!memcmp(w, r, sizeof(w)), "content differs");
	EQ(size_of("f"), sizeof(w));
	return CK_OK;
}

static int
write_overwrite_middle(void)
{
	char b[16];
	int fd;

	OK(mkfile("f", "0123456789"));
	OK(fd = open("f", O_RDWR));
	EQ(pwrite(fd, "ab", 2, 4), 2);
	EQ(pread(fd, b, 16, 0), 10);
	close(fd);
	EXPECT(!memcmp(b, "0123ab6789", 10), "content is %.10s", b);
	return CK_OK;
}

static int
stat_blocks(void)
{
	static char b[65536];
	struct stat st;
	int fd;

	/* not zeros, which a filesystem may keep as a hole */
	memset(b, 'b', sizeof(b));
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(write(fd, b, sizeof(b)), sizeof(b));
	OK(fsync(fd));
	close(fd);
	/*
	 * stat(2) after the close: FUSE keeps the attributes it had at the
	 * create until they time out or a close flushes, so an fstat before
	 * it may still count no blocks (as on any FUSE passthrough).
	 */
	OK(stat("f", &st));
	EXPECT(st.st_blocks >= 128, "64 KiB written, st_blocks %lld", (long long)st.st_blocks);
	EXPECT(st.st_blksize > 0, "st_blksize %ld", (long)st.st_blksize);
	return CK_OK;
}

static int
fallocate_basic(void)
{
	struct stat st;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	if (fallocate(fd, 0, 0, 1 << 20) < 0) {
		close(fd);
		if (errno == EOPNOTSUPP)
			return skipf("fallocate not supported");
		return failf("fallocate: %s", strerror(errno));
	}
	OK(fstat(fd, &st));
	close(fd);
	EQ(st.st_size, 1 << 20);
	EXPECT(st.st_blocks >= 2048, "st_blocks %lld after fallocate of 1 MiB", (long long)st.st_blocks);
	return CK_OK;
}

static int
fallocate_keep_size(void)
{
	struct stat st;
	char b[4];
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(write(fd, "abc", 3));
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) < 0) {
		close(fd);
		if (errno == EOPNOTSUPP)
			return skipf("fallocate not supported");
		return failf("fallocate: %s", strerror(errno));
	}
	OK(fstat(fd, &st));
	EQ(st.st_size, 3);
	EQ(pread(fd, b, 4, 0), 3);
	/*
	 * The reservation past the size goes again: fsck.ocfs2 reports
	 * clusters mapped past i_size even when they are unwritten
	 * (doc/sparse-unwritten.md), and the volume must stay clean. The
	 * fsync first: with a write-back cache the filesystem may not have
	 * the 3 bytes yet, and a truncate from its size 0 to 3 grows.
	 */
	OK(fsync(fd));
	OK(ftruncate(fd, 3));
	close(fd);
	return CK_OK;
}

static int
punch_hole(void)
{
	static char b[65536];
	int fd;

	memset(b, 'p', sizeof(b));
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(write(fd, b, sizeof(b)), sizeof(b));
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 16384) < 0) {
		close(fd);
		if (errno == EOPNOTSUPP)
			return skipf("hole punching not supported");
		return failf("punch: %s", strerror(errno));
	}
	EQ(pread(fd, b, sizeof(b), 0), sizeof(b));
	close(fd);
	EQ(size_of("f"), 65536);
	for (int i = 0; i < 65536; i++)
		EXPECT(b[i] == ((i >= 8192 && i < 24576) ? 0 : 'p'), "byte %d wrong after punch", i);
	return CK_OK;
}

/* ---- readdir ---- */

static int
readdir_empty(void)
{
	struct dirent *e;
	int n = 0, dots = 0;
	DIR *d;

	OK(mkdir("d", 0755));
	d = opendir("d");
	EXPECT(d, "opendir: %s", strerror(errno));
	while ((e = readdir(d))) {
		n++;
		dots += !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	}
	closedir(d);
	EQ(n, 2);
	EQ(dots, 2);
	return CK_OK;
}

/* Counts DIR's entries other than . and .., and checks each of N names
 * PREFIX%d (those with index in [lo, hi)) is listed exactly once. */
static int
listing_is(const char *dir, const char *prefix, int lo, int hi, int total)
{
	static unsigned char seen[4096];
	struct dirent *e;
	int n = 0;
	size_t pl = strlen(prefix);
	DIR *d = opendir(dir);

	if (!d)
		return failf("opendir %s: %s", dir, strerror(errno));
	memset(seen, 0, sizeof(seen));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (strncmp(e->d_name, prefix, pl)) {
			closedir(d);
			return failf("unexpected entry %s", e->d_name);
		}
		int i = atoi(e->d_name + pl);
		if (i < lo || i >= hi || i >= 4096 || seen[i]++) {
			closedir(d);
			return failf("entry %s listed but %s", e->d_name,
			    seen[i] > 1 ? "twice" : "it should not be there");
		}
	}
	closedir(d);
	if (n != total)
		return failf("%d entries listed, expected %d", n, total);
	return CK_OK;
}

static int
readdir_1000(void)
{
	char n[32];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 1000; i++) {
		snprintf(n, sizeof(n), "d/entry-with-a-longer-name-%d", i);
		OK(mkfile(n, NULL));
	}
	return listing_is("d", "entry-with-a-longer-name-", 0, 1000, 1000);
}

static int
readdir_1000_unlink_half(void)
{
	char n[32];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 1000; i++) {
		snprintf(n, sizeof(n), "d/e%d", i);
		OK(mkfile(n, NULL));
	}
	for (int i = 0; i < 500; i++) {
		snprintf(n, sizeof(n), "d/e%d", i);
		OK(unlink(n));
	}
	int r = listing_is("d", "e", 500, 1000, 500);
	if (r != CK_OK)
		return r;
	for (int i = 0; i < 200; i++) {
		snprintf(n, sizeof(n), "d/e%d", i);
		OK(mkfile(n, NULL));
	}
	/* now names 0..199 and 500..999 */
	static unsigned char seen[1000];
	memset(seen, 0, sizeof(seen));
	DIR *d = opendir("d");
	struct dirent *e;
	int cnt = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'e')
			continue;
		int i = atoi(e->d_name + 1);
		EXPECT(i < 200 || i >= 500, "removed entry e%d listed", i);
		EXPECT(!seen[i]++, "e%d listed twice", i);
		cnt++;
	}
	closedir(d);
	EQ(cnt, 700);
	return CK_OK;
}

static int
readdir_d_type(void)
{
	struct dirent *e;
	int bad = 0;
	DIR *d;

	OK(mkfile("f", NULL));
	OK(mkdir("s", 0755));
	OK(symlink("f", "l"));
	OK(mkfifo("p", 0644));
	d = opendir(".");
	while ((e = readdir(d))) {
		unsigned char want = !strcmp(e->d_name, "f") ? DT_REG : !strcmp(e->d_name, "s") ? DT_DIR :
		    !strcmp(e->d_name, "l") ? DT_LNK : !strcmp(e->d_name, "p") ? DT_FIFO : DT_UNKNOWN;
		if (want != DT_UNKNOWN && e->d_type != DT_UNKNOWN && e->d_type != want)
			bad++;
	}
	closedir(d);
	EQ(bad, 0);
	return CK_OK;
}

static int
readdir_ino_matches(void)
{
	struct dirent *e;
	struct stat st;
	DIR *d;

	OK(mkfile("f", NULL));
	OK(stat("f", &st));
	d = opendir(".");
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, "f"))
			break;
	EXPECT(e, "f not listed");
	EQ(e->d_ino, st.st_ino);
	closedir(d);
	return CK_OK;
}

static int
readdir_rewind(void)
{
	char n[16];
	int a = 0, b = 0;
	DIR *d;

	OK(mkdir("d", 0755));
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "d/x%d", i);
		OK(mkfile(n, NULL));
	}
	d = opendir("d");
	while (readdir(d))
		a++;
	rewinddir(d);
	while (readdir(d))
		b++;
	closedir(d);
	EQ(a, 102);
	EQ(b, 102);
	return CK_OK;
}

static int
readdir_seekdir(void)
{
	char n[16], want[256];
	struct dirent *e;
	long pos = -1;
	DIR *d;

	OK(mkdir("d", 0755));
	for (int i = 0; i < 60; i++) {
		snprintf(n, sizeof(n), "d/y%d", i);
		OK(mkfile(n, NULL));
	}
	d = opendir("d");
	for (int i = 0; i < 30 && (e = readdir(d)); i++)
		pos = telldir(d);
	e = readdir(d);
	EXPECT(e, "listing ended early");
	snprintf(want, sizeof(want), "%s", e->d_name);
	seekdir(d, pos);
	e = readdir(d);
	EXPECT(e && !strcmp(e->d_name, want), "seekdir went to %s, not %s", e ? e->d_name : "(end)", want);
	closedir(d);
	return CK_OK;
}

static int
readdir_unlink_while_listing(void)
{
	/* removing every entry while listing: each is seen at most once */
	char n[300];
	struct dirent *e;
	int seen = 0;
	DIR *d;

	OK(mkdir("d", 0755));
	for (int i = 0; i < 300; i++) {
		snprintf(n, sizeof(n), "d/z%d", i);
		OK(mkfile(n, NULL));
	}
	d = opendir("d");
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'z')
			continue;
		snprintf(n, sizeof(n), "d/%s", e->d_name);
		if (unlink(n) < 0) {
			closedir(d);
			return failf("unlink %s while listing: %s", n, strerror(errno));
		}
		seen++;
	}
	closedir(d);
	EQ(seen, 300);
	return listing_is("d", "z", 0, 0, 0);
}

static int
readdir_long_names(void)
{
	char n[300];

	OK(mkdir("d", 0755));
	for (int i = 0; i < 40; i++) {
		snprintf(n, sizeof(n), "d/%d-%s", i, longname(240, 'n'));
		OK(mkfile(n, NULL));
	}
	int c = 0;
	DIR *d = opendir("d");
	struct dirent *e;
	while ((e = readdir(d)))
		c += strlen(e->d_name) > 240;
	closedir(d);
	EQ(c, 40);
	return CK_OK;
}

static int
readdir_after_rename(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("d/old", NULL));
	OK(rename("d/old", "d/new"));
	EXPECT(!has_entry("d", "old"), "old name listed");
	EXPECT(has_entry("d", "new"), "new name not listed");
	return CK_OK;
}

static int
readdir_special_names(void)
{
	const char *names[] = { " space", "tab\tname", "new\nline", "ütf-8 ✓", "-dash", "..." };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		OK(mkfile(names[i], NULL));
		EXPECT(has_entry(".", names[i]), "%s not listed", names[i]);
		OK(access(names[i], F_OK));
	}
	return CK_OK;
}

static int
lookup_case_sensitive(void)
{
	OK(mkfile("Name", "1"));
	OK(mkfile("name", "22"));
	EQ(size_of("Name"), 1);
	EQ(size_of("name"), 2);
	ERR(access("NAME", F_OK), ENOENT);
	return CK_OK;
}

/* ---- permissions as nobody ---- */

static int
nobody_dir_0700(void *arg)
{
	(void)arg;
	ERR(open("d/f", O_RDONLY), EACCES);
	ERR(opendir("d") ? 0 : -1, EACCES);
	ERR(open("d/new", O_WRONLY | O_CREAT, 0644), EACCES);
	ERR(stat("d/f", &scratch_st), EACCES);
	return CK_OK;
}

static int
perm_dir_0700(void)
{
	OK(mkdir("d", 0700));
	OK(mkfile("d/f", NULL));
	OK(chmod(".", 0755));
	return as_nobody(nobody_dir_0700, NULL);
}

static int
nobody_write_0444(void *arg)
{
	(void)arg;
	ERR(open("f", O_WRONLY), EACCES);
	ERR(open("f", O_RDWR), EACCES);
	ERR(open("f", O_WRONLY | O_TRUNC), EACCES);
	ERR(truncate("f", 0), EACCES);
	int fd = open("f", O_RDONLY);
	OK(fd);
	close(fd);
	return CK_OK;
}

static int
perm_write_0444(void)
{
	OK(mkfile("f", "ro"));
	OK(chmod("f", 0444));
	OK(chmod(".", 0755));
	int r = as_nobody(nobody_write_0444, NULL);
	if (r != CK_OK)
		return r;
	EQ(size_of("f"), 2);
	return CK_OK;
}

static int
nobody_search(void *arg)
{
	(void)arg;
	/* read without execute: names are listed but not looked up */
	DIR *d = opendir("r");
	EXPECT(d, "opendir of a 0444 directory: %s", strerror(errno));
	closedir(d);
	ERR(stat("r/f", &scratch_st), EACCES);
	ERR(chdir("r"), EACCES);
	/* execute without read: lookups work, listing does not */
	ERR(opendir("x") ? 0 : -1, EACCES);
	OK(access("x/f", F_OK));
	return CK_OK;
}

static int
perm_search(void)
{
	OK(mkdir("r", 0755));
	OK(mkfile("r/f", NULL));
	OK(chmod("r", 0444));
	OK(mkdir("x", 0755));
	OK(mkfile("x/f", NULL));
	OK(chmod("x", 0111));
	OK(chmod(".", 0755));
	return as_nobody(nobody_search, NULL);
}

static int
nobody_sticky(void *arg)
{
	(void)arg;
	ERR(unlink("t/rootfile"), EPERM);
	ERR(rename("t/rootfile", "t/moved"), EPERM);
	ERR(rmdir("t/rootdir"), EPERM);
	/* its own files go */
	OK(mkfile("t/mine", NULL));
	OK(unlink("t/mine"));
	return CK_OK;
}

static int
perm_sticky(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkdir("t", 0755));
	OK(chmod("t", 01777));
	OK(mkfile("t/rootfile", NULL));
	OK(chmod("t/rootfile", 0666));
	OK(mkdir("t/rootdir", 0777));
	OK(chmod(".", 0755));
	r = as_nobody(nobody_sticky, NULL);
	if (r != CK_OK)
		return r;
	OK(access("t/rootfile", F_OK));
	return CK_OK;
}

static int
nobody_no_sticky(void *arg)
{
	(void)arg;
	OK(unlink("t/rootfile"));
	return CK_OK;
}

static int
perm_no_sticky(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkdir("t", 0777));
	OK(chmod("t", 0777));
	OK(mkfile("t/rootfile", NULL));
	OK(chmod(".", 0755));
	return as_nobody(nobody_no_sticky, NULL);
}

static int
nobody_write_suid(void *arg)
{
	(void)arg;
	int fd = open("f", O_WRONLY);
	OK(fd);
	OK(write(fd, "w", 1));
	close(fd);
	return CK_OK;
}

static int
perm_write_clears_suid(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", "x"));
	OK(chmod("f", 06777));
	OK(chmod(".", 0755));
	r = as_nobody(nobody_write_suid, NULL);
	if (r != CK_OK)
		return r;
	OK(stat("f", &st));
	EXPECT(!(st.st_mode & S_ISUID), "setuid kept after a write by another user (mode %o)", st.st_mode & 07777);
	EXPECT(!(st.st_mode & S_ISGID), "setgid kept after a write by another user (mode %o)", st.st_mode & 07777);
	return CK_OK;
}

static int
nobody_truncate_suid(void *arg)
{
	(void)arg;
	OK(truncate("f", 0));
	return CK_OK;
}

static int
perm_truncate_clears_suid(void)
{
	struct stat st;
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", "xyz"));
	OK(chmod("f", 04777));
	OK(chmod(".", 0755));
	r = as_nobody(nobody_truncate_suid, NULL);
	if (r != CK_OK)
		return r;
	OK(stat("f", &st));
	EXPECT(!(st.st_mode & S_ISUID), "setuid kept after truncate by another user");
	return CK_OK;
}

static int
nobody_chmod_other(void *arg)
{
	(void)arg;
	ERR(chmod("f", 0777), EPERM);
	ERR(chown("f", NOBODY, NOBODY), EPERM);
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	ERR(utimensat(AT_FDCWD, "f", ts, 0), EPERM);
	/* UTIME_NOW needs only write access */
	OK(utimensat(AT_FDCWD, "f", NULL, 0));
	return CK_OK;
}

static int
perm_chmod_not_owner(void)
{
	OK(mkfile("f", NULL));
	OK(chmod("f", 0666));
	OK(chmod(".", 0755));
	return as_nobody(nobody_chmod_other, NULL);
}

static int
nobody_own_file(void *arg)
{
	(void)arg;
	struct stat st;
	OK(mkfile("w/mine", "x"));
	OK(stat("w/mine", &st));
	EQ(st.st_uid, NOBODY);
	EQ(st.st_gid, NOBODY);
	OK(chmod("w/mine", 0600));
	ERR(chown("w/mine", 0, -1), EPERM);
	/* setgid is dropped for a group the user is not in */
	OK(chmod("w/mine", 02755));
	OK(stat("w/mine", &st));
	EQ(st.st_mode & 07777, 02755);
	return CK_OK;
}

static int
perm_owner_ops(void)
{
	OK(mkdir("w", 0777));
	OK(chmod("w", 0777));
	OK(chmod(".", 0755));
	return as_nobody(nobody_own_file, NULL);
}

static int
nobody_chmod_sgid_other_group(void *arg)
{
	(void)arg;
	struct stat st;
	OK(chmod("w/f", 02755));
	OK(stat("w/f", &st));
	EXPECT(!(st.st_mode & S_ISGID), "setgid kept for a group the user is not in");
	return CK_OK;
}

static int
perm_chmod_sgid_dropped(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkdir("w", 0777));
	OK(chmod("w", 0777));
	OK(mkfile("w/f", NULL));
	OK(chown("w/f", NOBODY, 0));
	OK(chmod(".", 0755));
	return as_nobody(nobody_chmod_sgid_other_group, NULL);
}

static int
nobody_dir_write(void *arg)
{
	(void)arg;
	ERR(mkfile("ro/new", NULL), EACCES);
	ERR(unlink("ro/f"), EACCES);
	ERR(mkdir("ro/d", 0755), EACCES);
	ERR(rename("ro/f", "ro/g"), EACCES);
	ERR(symlink("x", "ro/l"), EACCES);
	OK(mkfile("rw/new", NULL));
	OK(unlink("rw/f"));
	return CK_OK;
}

static int
perm_dir_write(void)
{
	OK(mkdir("ro", 0755));
	OK(mkfile("ro/f", NULL));
	OK(mkdir("rw", 0777));
	OK(chmod("rw", 0777));
	OK(mkfile("rw/f", NULL));
	OK(chmod(".", 0755));
	return as_nobody(nobody_dir_write, NULL);
}

static int
nobody_group_bits(void *arg)
{
	(void)arg;
	/* the group's bits apply to a member, the others' to the rest */
	ERR(open("g", O_RDONLY), EACCES);
	int fd = open("o", O_RDONLY);
	OK(fd);
	close(fd);
	ERR(open("u", O_RDONLY), EACCES);
	return CK_OK;
}

static int
perm_class_bits(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	/* g: group nobody, mode 0604 - nobody is in the group, which may not read */
	OK(mkfile("g", NULL));
	OK(chown("g", 0, NOBODY));
	OK(chmod("g", 0604));
	/* o: readable by others */
	OK(mkfile("o", NULL));
	OK(chmod("o", 0604));
	/* u: owner nobody, mode 0077 - the owner's bits deny */
	OK(mkfile("u", NULL));
	OK(chown("u", NOBODY, 0));
	OK(chmod("u", 0077));
	OK(chmod(".", 0755));
	return as_nobody(nobody_group_bits, NULL);
}

static int
nobody_access(void *arg)
{
	(void)arg;
	OK(access("r", R_OK));
	ERR(access("r", W_OK), EACCES);
	ERR(access("r", X_OK), EACCES);
	OK(access("x", X_OK));
	ERR(access("none", F_OK), ENOENT);
	return CK_OK;
}

static int
access_as_nobody(void)
{
	OK(mkfile("r", NULL));
	OK(chmod("r", 0444));
	OK(mkfile("x", NULL));
	OK(chmod("x", 0711));
	OK(chmod(".", 0755));
	return as_nobody(nobody_access, NULL);
}

static int
access_root(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkfile("f", NULL));
	OK(chmod("f", 0000));
	OK(access("f", R_OK | W_OK));
	ERR(access("f", X_OK), EACCES);
	OK(chmod("f", 0100));
	OK(access("f", X_OK));
	return CK_OK;
}

static int
access_errors(void)
{
	OK(mkfile("f", NULL));
	ERR(access("none", F_OK), ENOENT);
	ERR(access("f/x", F_OK), ENOTDIR);
	ERR(access(longname(256, 'a'), F_OK), ENAMETOOLONG);
	OK(access("f", F_OK));
	return CK_OK;
}

static int
nobody_setgid_dir(void *arg)
{
	(void)arg;
	struct stat st;
	OK(mkfile("s/f", NULL));
	OK(stat("s/f", &st));
	EQ(st.st_gid, 4321);
	OK(mkdir("s/d", 0755));
	OK(stat("s/d", &st));
	EQ(st.st_gid, 4321);
	EXPECT(st.st_mode & S_ISGID, "a subdirectory does not inherit setgid");
	return CK_OK;
}

static int
perm_setgid_dir_inherit(void)
{
	int r = need_root();

	if (r != CK_OK)
		return r;
	OK(mkdir("s", 0777));
	OK(chown("s", 0, 4321));
	OK(chmod("s", 02777));
	OK(chmod(".", 0755));
	return as_nobody(nobody_setgid_dir, NULL);
}

/* ---- statfs ---- */

static int
statfs_sane(void)
{
	struct statvfs a, b;
	static char buf[1 << 20];
	int fd;

	OK(statvfs(".", &a));
	EXPECT(a.f_bsize > 0 && a.f_frsize > 0, "block size 0");
	EXPECT(a.f_blocks > 0, "no blocks");
	EXPECT(a.f_bfree <= a.f_blocks && a.f_bavail <= a.f_bfree, "free > total");
	EXPECT(a.f_namemax >= 255, "f_namemax %lu", a.f_namemax);
	OK(fd = open("f", O_WRONLY | O_CREAT, 0644));
	memset(buf, 1, sizeof(buf));
	for (int i = 0; i < 4; i++)
		EQ(write(fd, buf, sizeof(buf)), sizeof(buf));
	OK(fsync(fd));
	close(fd);
	OK(statvfs(".", &b));
	/*
	 * Free space is not compared: OCFS2 counts a node's local
	 * allocation window as used already (fs/ocfs2/super.c,
	 * ocfs2_statfs), so 4 MiB taken from it leave the count as it was,
	 * and a passthrough's disk is shared with whatever else runs.
	 */
	EXPECT(b.f_bfree <= b.f_blocks && b.f_bavail <= b.f_bfree, "free > total after writing");
	EXPECT(b.f_files == 0 || b.f_ffree <= b.f_files, "f_ffree %lu > f_files %lu",
	    b.f_ffree, b.f_files);
	return CK_OK;
}

static int
statfs_fd(void)
{
	struct statvfs a, b;
	int fd;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDONLY));
	OK(fstatvfs(fd, &a));
	close(fd);
	OK(statvfs(".", &b));
	EQ(a.f_blocks, b.f_blocks);
	EQ(a.f_bsize, b.f_bsize);
	return CK_OK;
}

/* ---- fsync ---- */

static int
fsync_file(void)
{
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(write(fd, "sync", 4));
	OK(fsync(fd));
	OK(fdatasync(fd));
	close(fd);
	EQ(size_of("f"), 4);
	return CK_OK;
}

static int
fsync_dir(void)
{
	int fd;

	OK(mkdir("d", 0755));
	OK(mkfile("d/f", NULL));
	OK(fd = open("d", O_RDONLY | O_DIRECTORY));
	OK(fsync(fd));
	OK(fdatasync(fd));
	close(fd);
	return CK_OK;
}

static int
fsync_rdonly(void)
{
	int fd;

	OK(mkfile("f", "x"));
	OK(fd = open("f", O_RDONLY));
	OK(fsync(fd));
	close(fd);
	return CK_OK;
}

static int
sync_file_range_basic(void)
{
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(write(fd, "range", 5));
	OK(sync_file_range(fd, 0, 5, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
	    SYNC_FILE_RANGE_WAIT_AFTER));
	close(fd);
	return CK_OK;
}

static int
o_sync_write(void)
{
	char b[8];
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT | O_SYNC, 0644));
	EQ(write(fd, "osync", 5), 5);
	EQ(pread(fd, b, 8, 0), 5);
	close(fd);
	OK(fd = open("f", O_RDWR | O_DSYNC));
	EQ(pwrite(fd, "D", 1, 0), 1);
	close(fd);
	EQ(size_of("f"), 5);
	return CK_OK;
}

/* ---- mmap ---- */

static int
mmap_shared_write_read(void)
{
	char b[16];
	char *p;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(ftruncate(fd, 8192));
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	memcpy(p + 4100, "mapped", 6);
	EQ(pread(fd, b, 6, 4100), 6);
	EXPECT(!memcmp(b, "mapped", 6), "read(2) does not see the mapping's write");
	OK(msync(p, 8192, MS_SYNC));
	munmap(p, 8192);
	close(fd);
	OK(fd = open("f", O_RDONLY));
	EQ(pread(fd, b, 6, 4100), 6);
	close(fd);
	EXPECT(!memcmp(b, "mapped", 6), "content lost after munmap");
	return CK_OK;
}

static int
mmap_sees_write(void)
{
	char *p;
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	OK(ftruncate(fd, 4096));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	EQ(pwrite(fd, "later", 5, 10), 5);
	EXPECT(!memcmp(p + 10, "later", 5), "the mapping does not see write(2)");
	munmap(p, 4096);
	close(fd);
	return CK_OK;
}

static int
mmap_private(void)
{
	char b[4];
	char *p;
	int fd;

	OK(mkfile("f", "orig"));
	OK(fd = open("f", O_RDWR));
	p = mmap(NULL, 4, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	memcpy(p, "priv", 4);
	EQ(pread(fd, b, 4, 0), 4);
	munmap(p, 4);
	close(fd);
	EXPECT(!memcmp(b, "orig", 4), "a private mapping's write reached the file");
	return CK_OK;
}

static int
mmap_beyond_eof(void)
{
	char *p;
	int fd;

	OK(mkfile("f", "abc"));
	OK(fd = open("f", O_RDWR));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	for (int i = 3; i < 4096; i++)
		EXPECT(p[i] == 0, "byte %d after EOF in the page is %d", i, p[i]);
	p[100] = 'z';
	munmap(p, 4096);
	close(fd);
	EQ(size_of("f"), 3);
	return CK_OK;
}

static int
mmap_rdonly_fd_shared_write(void)
{
	int fd;

	OK(mkfile("f", "abc"));
	OK(fd = open("f", O_RDONLY));
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	EXPECT(p == MAP_FAILED && errno == EACCES, "writable shared mapping of a read-only fd: %s",
	    p == MAP_FAILED ? strerrorname_np(errno) : "allowed");
	return CK_OK;
}

/* ---- locks ---- */

/*
 * A FUSE file system that implements flock keeps the only record of the
 * lock: the kernel lets go of it on the last close through FUSE's
 * RELEASE, which it sends after close(2) has returned (fs/fuse/file.c,
 * fuse_release_common). So a lock a close gave up is free soon after the
 * close: flock_soon tries for two seconds.
 */
static int
flock_soon(int fd, int op)
{
	int i, rc = -1;

	for (i = 0; i < 200; i++) {
		if ((rc = flock(fd, op | LOCK_NB)) == 0 || errno != EWOULDBLOCK)
			break;
		usleep(10000);
	}
	return rc;
}

static int
flock_basic(void)
{
	int a, b;

	OK(mkfile("f", NULL));
	OK(a = open("f", O_RDWR));
	OK(b = open("f", O_RDWR));
	OK(flock(a, LOCK_EX));
	ERR(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	ERR(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	OK(flock(a, LOCK_UN));
	OK(flock(b, LOCK_SH | LOCK_NB));
	OK(flock(a, LOCK_SH | LOCK_NB));
	ERR(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	close(b);
	OK(flock_soon(a, LOCK_EX));
	close(a);
	return CK_OK;
}

static int
flock_released_on_close(void)
{
	int a, b;

	OK(mkfile("f", NULL));
	OK(a = open("f", O_RDWR));
	OK(b = open("f", O_RDWR));
	OK(flock(a, LOCK_EX));
	close(a);
	OK(flock_soon(b, LOCK_EX));
	close(b);
	return CK_OK;
}

static int
fcntl_lock_basic(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd, status;
	pid_t pid;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDWR));
	OK(fcntl(fd, F_SETLK, &fl));
	/* another process sees the lock and cannot take it */
	pid = fork();
	if (pid == 0) {
		struct flock t = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
		int f2 = open("f", O_RDWR);
		if (fcntl(f2, F_GETLK, &t) < 0 || t.l_type != F_WRLCK || t.l_pid != getppid())
			_exit(1);
		t.l_type = F_WRLCK;
		t.l_start = 50;
		t.l_len = 10;
		if (fcntl(f2, F_SETLK, &t) == 0 || (errno != EAGAIN && errno != EACCES))
			_exit(2);
		t.l_start = 200;
		if (fcntl(f2, F_SETLK, &t) < 0)
			_exit(3);
		_exit(0);
	}
	OK(pid);
	waitpid(pid, &status, 0);
	close(fd);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child's view of the lock wrong (step %d)", WEXITSTATUS(status));
	return CK_OK;
}

static int
fcntl_lock_read_shared(void)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int fd, status;
	pid_t pid;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDWR));
	OK(fcntl(fd, F_SETLK, &fl));
	pid = fork();
	if (pid == 0) {
		struct flock t = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int f2 = open("f", O_RDWR);
		if (fcntl(f2, F_SETLK, &t) < 0)
			_exit(1);
		t.l_type = F_WRLCK;
		if (fcntl(f2, F_SETLK, &t) == 0)
			_exit(2);
		_exit(0);
	}
	OK(pid);
	waitpid(pid, &status, 0);
	close(fd);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read locks wrong (step %d)", WEXITSTATUS(status));
	return CK_OK;
}

static int
fcntl_lock_unlock(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd, status;
	pid_t pid;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDWR));
	OK(fcntl(fd, F_SETLK, &fl));
	fl.l_type = F_UNLCK;
	OK(fcntl(fd, F_SETLK, &fl));
	pid = fork();
	if (pid == 0) {
		struct flock t = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int f2 = open("f", O_RDWR);
		_exit(fcntl(f2, F_SETLK, &t) < 0);
	}
	OK(pid);
	waitpid(pid, &status, 0);
	close(fd);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the lock stayed after F_UNLCK");
	return CK_OK;
}

static int
fcntl_lock_close_releases(void)
{
	/* closing any descriptor of the file drops the process's locks */
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int a, b, status;
	pid_t pid;

	OK(mkfile("f", NULL));
	OK(a = open("f", O_RDWR));
	OK(b = open("f", O_RDONLY));
	OK(fcntl(a, F_SETLK, &fl));
	close(b);
	pid = fork();
	if (pid == 0) {
		struct flock t = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int f2 = open("f", O_RDWR);
		_exit(fcntl(f2, F_SETLK, &t) < 0);
	}
	OK(pid);
	waitpid(pid, &status, 0);
	close(a);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the lock stayed after a close");
	return CK_OK;
}

static int
fcntl_lock_badf(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	OK(mkfile("f", NULL));
	OK(fd = open("f", O_RDONLY));
	ERR(fcntl(fd, F_SETLK, &fl), EBADF);
	close(fd);
	return CK_OK;
}

static int
ofd_lock(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10 };
	int a, b;

	OK(mkfile("f", NULL));
	OK(a = open("f", O_RDWR));
	OK(b = open("f", O_RDWR));
	OK(fcntl(a, F_OFD_SETLK, &fl));
	ERR2(fcntl(b, F_OFD_SETLK, &fl), EAGAIN, EACCES);
	fl.l_start = 10;
	OK(fcntl(b, F_OFD_SETLK, &fl));
	close(a);
	close(b);
	return CK_OK;
}

/* ---- xattr ---- */

static int
xattr_supported(void)
{
	if (mkfile("probe", NULL) < 0)
		return -1;
	int r = setxattr("probe", "user.probe", "1", 1, 0);
	int e = errno;
	unlink("probe");
	errno = e;
	return r == 0 || (errno != ENOTSUP && errno != EOPNOTSUPP);
}

#define NEED_XATTR() do { \
	if (!xattr_supported()) \
		return skipf("xattrs not supported"); \
} while (0)

static int
xattr_set_get(void)
{
	char b[64];

	NEED_XATTR();
	OK(mkfile("f", NULL));
	OK(setxattr("f", "user.a", "value", 5, 0));
	EQ(getxattr("f", "user.a", b, sizeof(b)), 5);
	EXPECT(!memcmp(b, "value", 5), "value read back wrong");
	EQ(getxattr("f", "user.a", NULL, 0), 5);
	ERR(getxattr("f", "user.a", b, 2), ERANGE);
	ERR(getxattr("f", "user.none", b, sizeof(b)), ENODATA);
	return CK_OK;
}

static int
xattr_flags(void)
{
	NEED_XATTR();
	OK(mkfile("f", NULL));
	ERR(setxattr("f", "user.a", "1", 1, XATTR_REPLACE), ENODATA);
	OK(setxattr("f", "user.a", "1", 1, XATTR_CREATE));
	ERR(setxattr("f", "user.a", "2", 1, XATTR_CREATE), EEXIST);
	OK(setxattr("f", "user.a", "22", 2, XATTR_REPLACE));
	EQ(getxattr("f", "user.a", NULL, 0), 2);
	return CK_OK;
}

static int
xattr_list_remove(void)
{
	char b[256];
	ssize_t n;

	NEED_XATTR();
	OK(mkfile("f", NULL));
	OK(setxattr("f", "user.one", "1", 1, 0));
	OK(setxattr("f", "user.two", "2", 1, 0));
	n = listxattr("f", b, sizeof(b));
	OK(n);
	int found = 0;
	for (char *p = b; p < b + n; p += strlen(p) + 1)
		found += !strcmp(p, "user.one") + !strcmp(p, "user.two");
	EQ(found, 2);
	OK(removexattr("f", "user.one"));
	ERR(removexattr("f", "user.one"), ENODATA);
	ERR(getxattr("f", "user.one", b, sizeof(b)), ENODATA);
	EQ(getxattr("f", "user.two", b, sizeof(b)), 1);
	return CK_OK;
}

static int
xattr_empty_and_big(void)
{
	static char v[4000], r[4000];

	NEED_XATTR();
	OK(mkfile("f", NULL));
	OK(setxattr("f", "user.empty", "", 0, 0));
	EQ(getxattr("f", "user.empty", r, sizeof(r)), 0);
	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (char)i;
	OK(setxattr("f", "user.big", v, sizeof(v), 0));
	EQ(getxattr("f", "user.big", r, sizeof(r)), sizeof(v));
	EXPECT(!memcmp(v, r, sizeof(v)), "big value differs");
	return CK_OK;
}

static int
xattr_dir_and_ctime(void)
{
	struct stat a, b;

	NEED_XATTR();
	OK(mkdir("d", 0755));
	OK(age("d"));
	OK(stat("d", &a));
	OK(setxattr("d", "user.d", "x", 1, 0));
	OK(stat("d", &b));
	TIMES(a, b, false, true);
	return CK_OK;
}

static int
xattr_symlink_user(void)
{
	NEED_XATTR();
	OK(symlink("x", "l"));
	/* user.* on a symlink is refused by the VFS */
	ERR(lsetxattr("l", "user.a", "1", 1, 0), EPERM);
	return CK_OK;
}

static int
xattr_survives_rename(void)
{
	char b[8];

	NEED_XATTR();
	OK(mkfile("f", NULL));
	OK(setxattr("f", "user.k", "kept", 4, 0));
	OK(rename("f", "g"));
	EQ(getxattr("g", "user.k", b, sizeof(b)), 4);
	return CK_OK;
}

static int
xattr_trusted(void)
{
	char b[8];
	int r = need_root();

	if (r != CK_OK)
		return r;
	NEED_XATTR();
	OK(mkfile("f", NULL));
	OK(setxattr("f", "trusted.t", "tt", 2, 0));
	EQ(getxattr("f", "trusted.t", b, sizeof(b)), 2);
	return CK_OK;
}

/* ---- misc ---- */

static int
stat_kinds(void)
{
	struct stat st;

	OK(mkfile("f", NULL));
	OK(mkdir("d", 0755));
	OK(symlink("f", "l"));
	OK(lstat("f", &st));
	EXPECT(S_ISREG(st.st_mode), "f");
	OK(lstat("d", &st));
	EXPECT(S_ISDIR(st.st_mode), "d");
	OK(lstat("l", &st));
	EXPECT(S_ISLNK(st.st_mode), "l");
	OK(stat("l", &st));
	EXPECT(S_ISREG(st.st_mode), "l followed");
	return CK_OK;
}

static int
stat_ino_unique(void)
{
	struct stat a, b, c;

	OK(mkfile("f", NULL));
	OK(mkfile("g", NULL));
	OK(mkdir("d", 0755));
	OK(stat("f", &a));
	OK(stat("g", &b));
	OK(stat("d", &c));
	EXPECT(a.st_ino != b.st_ino && a.st_ino != c.st_ino && b.st_ino != c.st_ino, "inode numbers repeat");
	EXPECT(a.st_dev == b.st_dev && b.st_dev == c.st_dev, "st_dev differs");
	return CK_OK;
}

static int
dir_size_nonzero(void)
{
	struct stat st;

	OK(mkdir("d", 0755));
	OK(stat("d", &st));
	EXPECT(st.st_size > 0, "directory size 0");
	return CK_OK;
}

static int
read_dir_eisdir(void)
{
	char b[8];
	int fd;

	OK(mkdir("d", 0755));
	OK(fd = open("d", O_RDONLY));
	ERR(read(fd, b, 8), EISDIR);
	close(fd);
	return CK_OK;
}

static int
dup_shares_offset(void)
{
	char b[4];
	int a, d;

	OK(mkfile("f", "abcdef"));
	OK(a = open("f", O_RDONLY));
	OK(d = dup(a));
	EQ(read(a, b, 2), 2);
	EQ(read(d, b, 2), 2);
	close(a);
	close(d);
	EXPECT(!memcmp(b, "cd", 2), "dup does not share the offset");
	return CK_OK;
}

static int
at_calls(void)
{
	struct stat st;
	int dfd, fd;

	OK(mkdir("d", 0755));
	OK(dfd = open("d", O_RDONLY | O_DIRECTORY));
	OK(fd = openat(dfd, "f", O_WRONLY | O_CREAT, 0644));
	close(fd);
	OK(mkdirat(dfd, "s", 0755));
	OK(symlinkat("f", dfd, "l"));
	OK(linkat(dfd, "f", dfd, "h", 0));
	OK(fstatat(dfd, "h", &st, 0));
	EQ(st.st_nlink, 2);
	OK(renameat(dfd, "h", dfd, "h2"));
	OK(unlinkat(dfd, "h2", 0));
	OK(unlinkat(dfd, "s", AT_REMOVEDIR));
	ERR(unlinkat(dfd, "f", AT_REMOVEDIR), ENOTDIR);
	OK(fchmodat(dfd, "f", 0600, 0));
	OK(faccessat(dfd, "f", R_OK, 0));
	close(dfd);
	return CK_OK;
}

static int
statx_basic(void)
{
	struct statx sx;

	OK(mkfile("f", "abc"));
	OK(statx(AT_FDCWD, "f", 0, STATX_BASIC_STATS, &sx));
	EQ(sx.stx_size, 3);
	EXPECT((sx.stx_mask & (STATX_SIZE | STATX_MODE)) == (STATX_SIZE | STATX_MODE), "mask %x", sx.stx_mask);
	return CK_OK;
}

static int
copy_file_range_basic(void)
{
	char b[8];
	int in, out;

	OK(mkfile("a", "copyme"));
	OK(in = open("a", O_RDONLY));
	OK(out = open("b", O_WRONLY | O_CREAT, 0644));
	EQ(copy_file_range(in, NULL, out, NULL, 6, 0), 6);
	close(in);
	close(out);
	OK(in = open("b", O_RDONLY));
	EQ(read(in, b, 8), 6);
	close(in);
	EXPECT(!memcmp(b, "copyme", 6), "copied content differs");
	return CK_OK;
}

static int
many_files_stat(void)
{
	char n[16];

	for (int i = 0; i < 200; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		int fd = open(n, O_WRONLY | O_CREAT, 0644);
		OK(fd);
		EQ(write(fd, n, strlen(n)), strlen(n));
		close(fd);
	}
	for (int i = 0; i < 200; i++) {
		snprintf(n, sizeof(n), "f%d", i);
		EQ(size_of(n), strlen(n));
	}
	return CK_OK;
}

/* ---- more calls ---- */

static int
pwrite_append(void)
{
	/* on Linux pwrite(2) on an O_APPEND descriptor appends anyway */
	char b[16];
	int fd;

	OK(mkfile("f", "abc"));
	OK(fd = open("f", O_WRONLY | O_APPEND));
	EQ(pwrite(fd, "X", 1, 0), 1);
	close(fd);
	OK(fd = open("f", O_RDONLY));
	EQ(read(fd, b, sizeof(b)), 4);
	close(fd);
	EXPECT(!memcmp(b, "abcX", 4), "content is %.4s", b);
	return CK_OK;
}

static int
writev_readv(void)
{
	struct iovec w[3] = { { "one", 3 }, { "-two-", 5 }, { "three", 5 } };
	char a[4] = { 0 }, c[16] = { 0 };
	struct iovec r[2] = { { a, 3 }, { c, sizeof(c) } };
	int fd;

	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(writev(fd, w, 3), 13);
	OK(lseek(fd, 0, SEEK_SET));
	EQ(readv(fd, r, 2), 13);
	close(fd);
	EXPECT(!memcmp(a, "one", 3) && !memcmp(c, "-two-three", 10), "read back %s|%s", a, c);
	return CK_OK;
}

static int
symlink_target_too_long(void)
{
	static char t[PATH_MAX + 2];

	memset(t, 't', PATH_MAX);
	t[PATH_MAX] = 0;
	ERR(symlink(t, "l"), ENAMETOOLONG);
	ERR(access("l", F_OK), ENOENT);
	return CK_OK;
}

static int
rmdir_dot_dotdot(void)
{
	OK(mkdir("d", 0755));
	OK(chdir("d"));
	errno = 0;
	int r1 = rmdir(".");
	int e1 = errno;
	int r2 = rmdir("..");
	int e2 = errno;
	OK(chdir(".."));
	EXPECT(r1 < 0 && e1 == EINVAL, "rmdir(\".\"): expected EINVAL, got %s", r1 < 0 ? strerrorname_np(e1) : "success");
	EXPECT(r2 < 0 && (e2 == ENOTEMPTY || e2 == EEXIST || e2 == EBUSY),
	    "rmdir(\"..\"): expected ENOTEMPTY, got %s", r2 < 0 ? strerrorname_np(e2) : "success");
	OK(access("d", F_OK));
	return CK_OK;
}

static int
rename_exchange_across(void)
{
	char b[4];
	int fd;

	OK(mkdir("a", 0755));
	OK(mkdir("b", 0755));
	OK(mkfile("a/f", "A"));
	OK(mkfile("b/g", "BB"));
	if (renameat2(AT_FDCWD, "a/f", AT_FDCWD, "b/g", RENAME_EXCHANGE) < 0) {
		if (errno == EINVAL)
			return skipf("RENAME_EXCHANGE not supported");
		return failf("RENAME_EXCHANGE: %s", strerror(errno));
	}
	EQ(size_of("a/f"), 2);
	EQ(size_of("b/g"), 1);
	OK(fd = open("b/g", O_RDONLY));
	EQ(read(fd, b, 4), 1);
	close(fd);
	EXPECT(b[0] == 'A', "b/g holds %c", b[0]);
	return CK_OK;
}

static int
nobody_mknod_dev(void *arg)
{
	(void)arg;
	ERR(mknod("w/c", S_IFCHR | 0644, makedev(1, 3)), EPERM);
	OK(mkfifo("w/p", 0644));
	return CK_OK;
}

static int
perm_mknod_device(void)
{
	OK(mkdir("w", 0777));
	OK(chmod("w", 0777));
	OK(chmod(".", 0755));
	return as_nobody(nobody_mknod_dev, NULL);
}

static int
nobody_chown_group(void *arg)
{
	(void)arg;
	struct stat st;
	OK(mkfile("w/f", NULL));
	/* to its own group: allowed, to another: not */
	OK(chown("w/f", -1, NOBODY));
	OK(chown("w/f", NOBODY, -1));
	ERR(chown("w/f", -1, 0), EPERM);
	OK(stat("w/f", &st));
	EQ(st.st_gid, NOBODY);
	return CK_OK;
}

static int
perm_chown_own_group(void)
{
	OK(mkdir("w", 0777));
	OK(chmod("w", 0777));
	OK(chmod(".", 0755));
	return as_nobody(nobody_chown_group, NULL);
}

static int
nobody_unlink_in_ro_parent(void *arg)
{
	(void)arg;
	/* removing needs write on the directory, not on the file */
	ERR(unlink("d/f"), EACCES);
	OK(unlink("w/f"));
	return CK_OK;
}

static int
perm_unlink_needs_dir_write(void)
{
	OK(mkdir("d", 0755));
	OK(mkfile("d/f", NULL));
	OK(chmod("d/f", 0666));
	OK(mkdir("w", 0777));
	OK(chmod("w", 0777));
	OK(mkfile("w/f", NULL));
	OK(chmod("w/f", 0400));
	OK(chmod(".", 0755));
	return as_nobody(nobody_unlink_in_ro_parent, NULL);
}

static int
two_fds_see_writes(void)
{
	char b[8];
	int a, r;

	OK(a = open("f", O_RDWR | O_CREAT, 0644));
	OK(r = open("f", O_RDONLY));
	EQ(write(a, "shared", 6), 6);
	EQ(read(r, b, 8), 6);
	EQ(pwrite(a, "S", 1, 0), 1);
	EQ(pread(r, b, 1, 0), 1);
	close(a);
	close(r);
	EXPECT(b[0] == 'S', "second descriptor reads %c", b[0]);
	return CK_OK;
}

static int
hole_in_middle_reads_zero(void)
{
	static char b[3 * 65536];
	int fd;

	memset(b, 'x', sizeof(b));
	OK(fd = open("f", O_RDWR | O_CREAT, 0644));
	EQ(pwrite(fd, b, 65536, 0), 65536);
	EQ(pwrite(fd, b, 65536, 2 * 65536), 65536);
	EQ(pread(fd, b, sizeof(b), 0), sizeof(b));
	close(fd);
	for (int i = 0; i < 3 * 65536; i++)
		EXPECT(b[i] == ((i >= 65536 && i < 2 * 65536) ? 0 : 'x'), "byte %d wrong", i);
	return CK_OK;
}

static int
symlink_max_target(void)
{
	/* the longest target: PATH_MAX - 1 bytes and its NUL */
	static char t[PATH_MAX], b[PATH_MAX];

	memset(t, 'm', PATH_MAX - 1);
	t[PATH_MAX - 1] = 0;
	OK(symlink(t, "l"));
	EQ(readlink("l", b, sizeof(b)), PATH_MAX - 1);
	EXPECT(!memcmp(b, t, PATH_MAX - 1), "target differs");
	return CK_OK;
}

static int
nobody_utimes_other(void *arg)
{
	(void)arg;
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	/* "now" needs write access (or ownership), other times ownership */
	ERR(utimensat(AT_FDCWD, "ro", NULL, 0), EACCES);
	ERR(utimensat(AT_FDCWD, "ro", now, 0), EACCES);
	OK(utimensat(AT_FDCWD, "rw", now, 0));
	return CK_OK;
}

static int
perm_utimes_not_owner(void)
{
	OK(mkfile("ro", NULL));
	OK(chmod("ro", 0644));
	OK(mkfile("rw", NULL));
	OK(chmod("rw", 0666));
	OK(chmod(".", 0755));
	return as_nobody(nobody_utimes_other, NULL);
}

/* ---- the table ---- */

struct check {
	const char *name;
	int (*fn)(void);
};

#define C(f) { #f, f }
static const struct check checks[] = {
	C(open_creat_mode), C(open_creat_umask), C(open_creat_existing), C(open_creat_times),
	C(open_excl_exists), C(open_excl_symlink), C(open_excl_new), C(open_creat_dangling_symlink),
	C(open_trunc_size), C(open_trunc_times), C(open_trunc_empty_keeps_times),
	C(open_trunc_rdonly_keeps), C(open_trunc_reads_zero), C(open_append), C(open_append_two_fds),
	C(open_directory_flag), C(open_dir_for_write), C(open_nofollow), C(open_path_symlink),
	C(open_rdonly_write), C(open_wronly_read), C(open_enoent), C(open_enotdir),
	C(open_trailing_slash), C(open_name_255), C(open_name_256), C(path_max_long), C(path_deep_ok),
	C(open_tmpfile), C(open_tmpfile_unlinked),
	C(creat_truncates), C(creat_write_only), C(mkdir_basic), C(mkdir_errors), C(mkdir_parent_nlink),
	C(mkdir_times), C(mkdir_dotdot), C(mknod_fifo), C(fifo_io), C(mknod_socket), C(socket_bind),
	C(mknod_chr), C(mknod_blk), C(mknod_big_dev), C(mknod_errors), C(mknod_reg),
	C(symlink_basic), C(symlink_long_target), C(symlink_errors), C(symlink_loop), C(symlink_chain),
	C(symlink_dir_traverse), C(symlink_lchown),
	C(link_basic), C(link_errors), C(link_times), C(link_symlink_nofollow), C(link_many), C(link_fifo),
	C(unlink_basic), C(unlink_errors), C(unlink_open_file), C(unlink_symlink_only), C(unlink_times),
	C(unlink_fifo_sock), C(rmdir_basic), C(rmdir_errors), C(rmdir_subdir_not_empty),
	C(rmdir_after_unlinks), C(rmdir_cwd), C(rmdir_open_dir), C(rmdir_times),
	C(rename_file), C(rename_over_file), C(rename_over_hardlink), C(rename_same_name),
	C(rename_dir_over_empty_dir), C(rename_dir_over_nonempty), C(rename_file_over_dir),
	C(rename_dir_over_file), C(rename_into_own_subdir), C(rename_dot), C(rename_errors),
	C(rename_across_dirs), C(rename_dir_across_parents), C(rename_dir_over_empty_across),
	C(rename_ctime), C(rename_parent_times), C(rename_symlink), C(rename_over_symlink),
	C(rename_noreplace), C(rename_exchange), C(rename_many_in_dir), C(rename_open_file),
	C(nlink_dir_subdirs), C(nlink_file_links), C(nlink_rename_over_link), C(nlink_fstat_open),
	C(chmod_basic), C(chmod_dir), C(chmod_follows_symlink), C(chmod_errors), C(chmod_times),
	C(fchmod_basic), C(chown_basic), C(chown_big_ids), C(chown_times), C(chown_noop_ctime),
	C(chown_clears_suid), C(chown_sgid_nogx), C(fchown_basic), C(chown_dir_and_fifo),
	C(utimens_set), C(utimens_now), C(utimens_omit), C(utimens_both_omit), C(utimens_null),
	C(utimens_nofollow), C(utimens_old_and_future), C(futimens_basic), C(utimens_dir),
	C(utimens_errors), C(times_write), C(times_write_dir_unchanged), C(times_read),
	C(times_truncate), C(times_ftruncate), C(truncate_same_size), C(times_symlink_parent),
	C(times_mknod_parent), C(times_nanoseconds_kept), C(times_readdir_no_mtime),
	C(times_link_count_change_ctime), C(times_mmap_write),
	C(truncate_up_zeros), C(truncate_down), C(truncate_down_up_zeros), C(truncate_big_sparse),
	C(truncate_to_zero_then_write), C(truncate_errors), C(ftruncate_errors), C(truncate_block_edges),
	C(write_past_eof), C(write_far_past_eof), C(lseek_past_eof_write), C(lseek_end),
	C(lseek_data_hole), C(lseek_data_empty), C(lseek_hole_full), C(read_at_eof), C(write_read_large),
	C(write_overwrite_middle), C(stat_blocks), C(fallocate_basic), C(fallocate_keep_size),
	C(punch_hole),
	C(readdir_empty), C(readdir_1000), C(readdir_1000_unlink_half), C(readdir_d_type),
	C(readdir_ino_matches), C(readdir_rewind), C(readdir_seekdir), C(readdir_unlink_while_listing),
	C(readdir_long_names), C(readdir_after_rename), C(readdir_special_names),
	C(lookup_case_sensitive),
	C(perm_dir_0700), C(perm_write_0444), C(perm_search), C(perm_sticky), C(perm_no_sticky),
	C(perm_write_clears_suid), C(perm_truncate_clears_suid), C(perm_chmod_not_owner),
	C(perm_owner_ops), C(perm_chmod_sgid_dropped), C(perm_dir_write), C(perm_class_bits),
	C(access_as_nobody), C(access_root), C(access_errors), C(perm_setgid_dir_inherit),
	C(statfs_sane), C(statfs_fd), C(fsync_file), C(fsync_dir), C(fsync_rdonly),
	C(sync_file_range_basic), C(o_sync_write),
	C(mmap_shared_write_read), C(mmap_sees_write), C(mmap_private), C(mmap_beyond_eof),
	C(mmap_rdonly_fd_shared_write),
	C(flock_basic), C(flock_released_on_close), C(fcntl_lock_basic), C(fcntl_lock_read_shared),
	C(fcntl_lock_unlock), C(fcntl_lock_close_releases), C(fcntl_lock_badf), C(ofd_lock),
	C(xattr_set_get), C(xattr_flags), C(xattr_list_remove), C(xattr_empty_and_big),
	C(xattr_dir_and_ctime), C(xattr_symlink_user), C(xattr_survives_rename), C(xattr_trusted),
	C(stat_kinds), C(stat_ino_unique), C(dir_size_nonzero), C(read_dir_eisdir), C(dup_shares_offset),
	C(at_calls), C(statx_basic), C(copy_file_range_basic), C(many_files_stat),
	C(pwrite_append), C(writev_readv), C(symlink_target_too_long), C(rmdir_dot_dotdot),
	C(rename_exchange_across), C(perm_mknod_device), C(perm_chown_own_group),
	C(perm_unlink_needs_dir_write), C(two_fds_see_writes), C(hole_in_middle_reads_zero),
	C(symlink_max_target), C(perm_utimes_not_owner),
};
#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

/* Runs one check inside TOP/NAME, a fresh directory open to everyone
 * (the checks that run as nobody narrow it themselves). */
static int
run_one(int top, const struct check *c)
{
	int r;

	if (mkdirat(top, c->name, 0755) < 0 || fchdir(top) < 0 || chdir(c->name) < 0)
		return failf("setting up its directory: %s", strerror(errno));
	umask(022);
	msg[0] = 0;
	r = c->fn();
	umask(022);
	if (fchdir(top) < 0)
		return failf("back to the top: %s", strerror(errno));
	return r;
}

int
main(int argc, char **argv)
{
	int ok = 0, failed = 0, skipped = 0, top;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < NCHECKS; i++)
			printf("%s\n", checks[i].name);
		return 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: posixcheck DIR [NAME...] | posixcheck --list\n");
		return 2;
	}
	msg = mmap(NULL, MSGLEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (msg == MAP_FAILED || (top = open(argv[1], O_RDONLY | O_DIRECTORY)) < 0) {
		fprintf(stderr, "posixcheck: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	/* children as nobody need to reach their check's directory */
	fchmod(top, 0755);
	for (size_t i = 0; i < NCHECKS; i++) {
		bool chosen = argc == 2;
		for (int k = 2; k < argc; k++)
			chosen |= !strcmp(argv[k], checks[i].name);
		if (!chosen)
			continue;
		switch (run_one(top, &checks[i])) {
		case CK_OK:
			printf("ok %s\n", checks[i].name);
			ok++;
			break;
		case CK_SKIP:
			printf("skip %s: %s\n", checks[i].name, msg);
			skipped++;
			break;
		default:
			printf("FAIL %s: %s\n", checks[i].name, msg[0] ? msg : "(no message)");
			failed++;
		}
	}
	printf("posixcheck: %d ok, %d failed, %d skipped\n", ok, failed, skipped);
	return failed ? 1 : 0;
}
