/*
 * plock: fcntl (POSIX) record locks from the command line, for the tests.
 *
 *   plock FILE set|wait r|w START LEN [-u USTART ULEN] [-h UNTIL]
 *	F_SETLK or F_SETLKW; then unlock [USTART, +ULEN) if -u; then, with
 *	-h, print "locked" and keep the locks until the file UNTIL exists.
 *   plock FILE get r|w START LEN
 *	F_GETLK: prints "unlocked" or "r|w START LEN PID" of a holder.
 *   plock FILE count N
 *	N times: lock the whole file (F_SETLKW), add one to the number it
 *	holds, unlock.
 *
 * LEN 0 is "to the end of the file", as in struct flock. Exit status: 0
 * done, 1 the lock is held by someone else (EAGAIN or EACCES), 2 any
 * other error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
usage(void)
{
	fprintf(stderr, "usage: plock FILE set|wait|get r|w START LEN [-u USTART ULEN] "
	    "[-h UNTIL]\n       plock FILE count N\n");
	exit(2);
}

static long long
number(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		usage();
	return v;
}

static int
lock(int fd, int cmd, short type, long long start, long long len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
	    .l_len = len };

	return fcntl(fd, cmd, &fl);
}

static int
failed(const char *what)
{
	if (errno == EAGAIN || errno == EACCES) {
		fprintf(stderr, "plock: %s: held by another\n", what);
		return 1;
	}
	fprintf(stderr, "plock: %s: %s\n", what, strerror(errno));
	return 2;
}

static int
count(int fd, long long n)
{
	char buf[32];
	ssize_t len;

	while (n-- > 0) {
		if (lock(fd, F_SETLKW, F_WRLCK, 0, 0) == -1)
			return failed("F_SETLKW");
		if ((len = pread(fd, buf, sizeof(buf) - 1, 0)) < 0)
			return failed("read");
		buf[len] = '\0';
		len = snprintf(buf, sizeof(buf), "%lld\n", atoll(buf) + 1);
		if (pwrite(fd, buf, (size_t)len, 0) != len)
			return failed("write");
		if (lock(fd, F_SETLK, F_UNLCK, 0, 0) == -1)
			return failed("F_UNLCK");
	}
	return 0;
}

static int
get(int fd, short type, long long start, long long len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start,
	    .l_len = len };

	if (fcntl(fd, F_GETLK, &fl) == -1)
		return failed("F_GETLK");
	if (fl.l_type == F_UNLCK)
		printf("unlocked\n");
	else
		printf("%c %lld %lld %d\n", fl.l_type == F_WRLCK ? 'w' : 'r',
		    (long long)fl.l_start, (long long)fl.l_len, (int)fl.l_pid);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *until = NULL;
	long long start, len, ustart = -1, ulen = 0;
	short type;
	int fd, cmd, i;

	if (argc < 4)
		usage();
	if ((fd = open(argv[1], O_RDWR | O_CREAT, 0644)) == -1) {
		fprintf(stderr, "plock: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	if (strcmp(argv[2], "count") == 0)
		return count(fd, number(argv[3]));
	if (argc < 6 || (strcmp(argv[3], "r") != 0 && strcmp(argv[3], "w") != 0))
		usage();
	type = argv[3][0] == 'w' ? F_WRLCK : F_RDLCK;
	start = number(argv[4]);
	len = number(argv[5]);
	if (strcmp(argv[2], "get") == 0)
		return get(fd, type, start, len);
	if (strcmp(argv[2], "set") == 0)
		cmd = F_SETLK;
	else if (strcmp(argv[2], "wait") == 0)
		cmd = F_SETLKW;
	else
		usage();
	for (i = 6; i < argc; i++) {
		if (strcmp(argv[i], "-u") == 0 && i + 2 < argc) {
			ustart = number(argv[++i]);
			ulen = number(argv[++i]);
		} else if (strcmp(argv[i], "-h") == 0 && i + 1 < argc)
			until = argv[++i];
		else
			usage();
	}
	if (lock(fd, cmd, type, start, len) == -1)
		return failed(cmd == F_SETLK ? "F_SETLK" : "F_SETLKW");
	if (ustart >= 0 && lock(fd, F_SETLK, F_UNLCK, ustart, ulen) == -1)
		return failed("F_UNLCK");
	if (until != NULL) {
		printf("locked\n");
		fflush(stdout);
		while (access(until, F_OK) != 0)
			usleep(20000);
	}
	return 0;
}
