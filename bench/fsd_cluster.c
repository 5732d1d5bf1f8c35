/*
 * The clients of bench/fsd_cluster.sh, which runs the cluster, mounts
 * the volume on its nodes, starts these on the mounts and makes the
 * table; each prints its figures on stdout.
 *
 *   fsd_cluster meta DIR PREFIX FILES START_US
 *	at START_US (CLOCK_REALTIME, microseconds: $EPOCHREALTIME without
 *	the dot, so that clients on several nodes start together) create
 *	FILES empty files DIR/PREFIX.N (open O_CREAT|O_EXCL, close), then
 *	stat each, then unlink each: 3 * FILES operations. Prints
 *	"SECONDS OPS", the time from START_US to the last unlink
 *   fsd_cluster pingpong FILE_A FILE_B ROUNDS [BUSY_DIR]
 *	the same file through two nodes' mounts: A (this process) pwrites
 *	4 KiB at offset 0, then B (a child) preads it and checks it, then
 *	A writes again... each step strictly after the previous one, told
 *	through a pipe. Prints the mean us per handoff (a write followed
 *	by the other node's read is two handoffs of the block). With
 *	BUSY_DIR, A writes the file once, then each round creates a file
 *	in BUSY_DIR (a change of its own, under other locks) and preads
 *	the file, which it keeps open for writing (so its read takes the
 *	file's lock EX): the file's lock changes hands as often, with
 *	nothing of it changed
 *   fsd_cluster hold FILE
 *	create FILE, write 4 KiB and fsync (so that the file outlives a
 *	crash), write 4 KiB more (not fsync'ed), print "ready" and keep
 *	it open, an fstat every 5 ms, until the mount dies under it (its
 *	node was killed): then print "dead INSTANT_US ERROR" and exit
 *   fsd_cluster append FILE TIMEOUT_MS
 *	try an O_APPEND open + 64-byte write + close of FILE every 10 ms
 *	(each try may block) until one succeeds; prints "INSTANT_US
 *	ATTEMPTS", the instant of that success
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "log.h"
#include "util.h"

#define BLOCK		4096
#define WARMUP		10
#define HOLD_POLL_US	5000
#define APPEND_RETRY_US	10000
#define WAIT_MS		30000	/* nothing here should ever take this long */

static double
realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Sleep until START_US on the realtime clock (if it is still ahead). */
static void
sleep_until(double start_us)
{
	struct timespec ts = {
		.tv_sec = (time_t)(start_us / 1e6),
		.tv_nsec = (long)((start_us - (double)(time_t)(start_us / 1e6) * 1e6) * 1e3),
	};

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int
cmd_meta(const char *dir, const char *prefix, int files, double start_us)
{
	char path[4096];
	struct stat st;
	double t0;
	int i, fd;

	sleep_until(start_us);
	t0 = now_us() - (realtime_us() - start_us);	/* START_US on the monotonic clock */
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/%s.%d", dir, prefix, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) == -1)
			fatal("create %s", path);
		if (close(fd) == -1)
			fatal("close %s", path);
	}
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/%s.%d", dir, prefix, i);
		if (stat(path, &st) == -1)
			fatal("stat %s", path);
	}
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/%s.%d", dir, prefix, i);
		if (unlink(path) == -1)
			fatal("unlink %s", path);
	}
	printf("%.6f %d\n", (now_us() - t0) / 1e6, 3 * files);
	return 0;
}

static void
fill(uint8_t *buf, int round)
{
	int i;

	for (i = 0; i < BLOCK; i++)
		buf[i] = (uint8_t)(round * 131 + i);
}

/* One byte through a pipe: the other side may go. */
static void
tell(int fd, char c)
{
	if (write_full(fd, &c, 1) == -1)
		fatal("pipe write");
}

static char
hear(int fd)
{
	char c;

	if (read_full_timeout(fd, &c, 1, WAIT_MS) == -1)
		fatalx("pipe: no word from the other node's process");
	return c;
}

/*
 * B: read each round's block once A says it is written (round 0's in
 * every round when same is set); 'k' or 'x' back.
 */
static void
reader(const char *file, int rounds, int same, int from_a, int to_a)
{
	uint8_t want[BLOCK], got[BLOCK];
	int fd, i;

	if ((fd = open(file, O_RDONLY)) == -1)
		fatal("open %s", file);
	tell(to_a, 'k');
	for (i = 0; i < rounds; i++) {
		if (hear(from_a) != 'w')
			_exit(1);
		fill(want, same ? 0 : i);
		if (pread(fd, got, BLOCK, 0) != BLOCK) {
			log_warn("pread %s", file);
			tell(to_a, 'x');
			_exit(1);
		}
		if (memcmp(got, want, BLOCK) != 0) {
			log_warnx("round %d: %s does not hold what the other node wrote", i, file);
			tell(to_a, 'x');
			_exit(1);
		}
		tell(to_a, 'k');
	}
	close(fd);
	_exit(0);
}

/* A's step of a BUSY_DIR round: a file created there, then the file read and checked. */
static void
busy_step(int fd, const char *file, const char *busy_dir, int round)
{
	uint8_t want[BLOCK], got[BLOCK];
	char path[4096];
	int nfd;

	snprintf(path, sizeof(path), "%s/b.%d", busy_dir, round);
	if ((nfd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) == -1 || close(nfd) == -1)
		fatal("create %s", path);
	fill(want, 0);
	if (pread(fd, got, BLOCK, 0) != BLOCK)
		fatal("pread %s", file);
	if (memcmp(got, want, BLOCK) != 0)
		fatalx("round %d: %s changed", round, file);
}

static int
cmd_pingpong(const char *file_a, const char *file_b, int rounds, const char *busy_dir)
{
	int ab[2], ba[2], fd, i, status, total = WARMUP + rounds;
	uint8_t buf[BLOCK];
	double t0 = 0;
	pid_t pid;

	if ((fd = open(file_a, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1)
		fatal("open %s", file_a);
	fill(buf, 0);
	if (pwrite(fd, buf, BLOCK, 0) != BLOCK)
		fatal("pwrite %s", file_a);
	if (pipe(ab) == -1 || pipe(ba) == -1)
		fatal("pipe");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		close(fd);
		close(ab[1]);
		close(ba[0]);
		reader(file_b, total, busy_dir != NULL, ab[0], ba[1]);
	}
	close(ab[0]);
	close(ba[1]);
	if (hear(ba[0]) != 'k')
		fatalx("the reader did not open %s", file_b);
	for (i = 0; i < total; i++) {
		if (i == WARMUP)
			t0 = now_us();
		if (busy_dir != NULL)
			busy_step(fd, file_a, busy_dir, i);
		else {
			fill(buf, i);
			if (pwrite(fd, buf, BLOCK, 0) != BLOCK)
				fatal("pwrite %s", file_a);
		}
		tell(ab[1], 'w');
		if (hear(ba[0]) != 'k')
			fatalx("round %d: the reader failed", i);
	}
	printf("%.2f\n", (now_us() - t0) / (2.0 * rounds));
	close(ab[1]);
	if (waitpid(pid, &status, 0) == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fatalx("the reader failed");
	close(fd);
	return 0;
}

/*
 * The crash's instant as the dead node's own mount sees it: the first
 * fstat that fails once its fsd is gone (every daemon of the node gets
 * its SIGKILL from one kill(1), within microseconds).
 */
static int
cmd_hold(const char *file)
{
	uint8_t buf[BLOCK];
	struct stat st;
	int fd;

	if ((fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1)
		fatal("open %s", file);
	fill(buf, 7);
	if (pwrite(fd, buf, BLOCK, 0) != BLOCK || fsync(fd) == -1)
		fatal("write %s", file);
	fill(buf, 8);
	if (pwrite(fd, buf, BLOCK, BLOCK) != BLOCK)
		fatal("pwrite %s", file);
	printf("ready\n");
	fflush(stdout);
	while (fstat(fd, &st) == 0)
		usleep(HOLD_POLL_US);
	printf("dead %.0f %s\n", realtime_us(), strerror(errno));
	return 0;
}

static int
cmd_append(const char *file, int timeout_ms)
{
	static const char rec[64] = "written by a survivor after the crash ........................\n";
	double deadline = now_us() + timeout_ms * 1e3;
	int fd, attempts = 0, err = 0;
	ssize_t n;

	for (;;) {
		attempts++;
		if ((fd = open(file, O_WRONLY | O_APPEND)) != -1) {
			n = write(fd, rec, sizeof(rec));
			err = n == -1 ? errno : 0;
			if (close(fd) == -1 && err == 0)
				err = errno;
			if (n == (ssize_t)sizeof(rec) && err == 0)
				break;
			if (err == 0)
				err = EIO;	/* a short write */
		} else
			err = errno;
		if (now_us() > deadline) {
			errno = err;
			fatal("no write to %s in %d ms (%d attempts)", file, timeout_ms, attempts);
		}
		usleep(APPEND_RETRY_US);
	}
	printf("%.0f %d\n", realtime_us(), attempts);
	return 0;
}

/* A realtime instant in microseconds ($EPOCHREALTIME without its dot). */
static double
instant(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || end == s || v < 1e15)
		fatalx("bad instant %s (microseconds since the epoch)", s);
	return v;
}

int
main(int argc, char **argv)
{
	log_init("bench/fsd_cluster", 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 6 && strcmp(argv[1], "meta") == 0)
		return cmd_meta(argv[2], argv[3], bench_num(argv[4], 1, 10000000), instant(argv[5]));
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "pingpong") == 0)
		return cmd_pingpong(argv[2], argv[3], bench_num(argv[4], 1, 10000000),
		    argc == 6 ? argv[5] : NULL);
	if (argc == 3 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argv[2]);
	if (argc == 4 && strcmp(argv[1], "append") == 0)
		return cmd_append(argv[2], bench_num(argv[3], 1, 10000000));
	fprintf(stderr, "usage: fsd_cluster meta DIR PREFIX FILES START_US |\n"
	    "       pingpong FILE_A FILE_B ROUNDS [BUSY_DIR] | hold FILE |\n"
	    "       append FILE TIMEOUT_MS\n"
	    "(the clients of bench/fsd_cluster.sh)\n");
	return 2;
}
