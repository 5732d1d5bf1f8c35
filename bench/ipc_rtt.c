/*
 * Round trip of one request through the IPC layer (libevent server,
 * protobuf-c envelope, dispatch table) against the baseline of a raw
 * Unix-socket echo of the same bytes, in the same run. Prints medians of
 * several rounds and their ratio, pinned to one CPU and unpinned.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#define ROUNDS	7
#define ITERS	5000

static pid_t
spawn_ipc_server(const char *path, int cpu)
{
	pid_t pid = fork();
	struct event_base *base;

	if (pid != 0)
		return pid;
	pin(cpu);
	base = event_base_new();
	if (ipc_server_listen(base, path, "bench", NULL, 0, NULL) == NULL)
		_exit(1);
	event_base_dispatch(base);
	_exit(0);
}

/* The baseline: read a frame's worth of bytes, write them back. */
static pid_t
spawn_echo_server(const char *path, int cpu)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char buf[4096];
	ssize_t n;
	pid_t pid;
	int lfd, fd;

	strcpy(sun.sun_path, path);
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd == -1 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(lfd, 1) == -1)
		fatal("echo server");
	if ((pid = fork()) != 0) {
		close(lfd);
		return pid;
	}
	pin(cpu);
	if ((fd = accept(lfd, NULL, NULL)) == -1)
		_exit(1);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write_full(fd, buf, (size_t)n) == -1)
			break;
	_exit(0);
}

/* Median over ROUNDS of the mean round trip of ITERS pings, in us. */
static double
bench_ipc(const char *path)
{
	Envelope req = ENVELOPE__INIT, *rep;
	double r[ROUNDS], t0;
	int fd, i, k;

	if ((fd = ipc_sync_connect(path)) == -1)
		fatal("connect %s", path);
	req.type = MSG_TYPE__MSG_PING;
	for (k = 0; k < ROUNDS; k++) {
		t0 = now_us();
		for (i = 0; i < ITERS; i++) {
			if (ipc_sync_call(fd, &req, &rep, 5000) == -1)
				fatal("ping");
			envelope__free_unpacked(rep, NULL);
		}
		r[k] = (now_us() - t0) / ITERS;
	}
	close(fd);
	return median(r, ROUNDS);
}

static double
bench_echo(const char *path)
{
	Envelope req = ENVELOPE__INIT;
	double r[ROUNDS], t0;
	uint8_t *frame, back[64];
	size_t len;
	int fd, i, k;

	if ((fd = ipc_sync_connect(path)) == -1)
		fatal("connect %s", path);
	req.type = MSG_TYPE__MSG_PING;
	req.id = 1;
	if (ipc_frame_pack(&req, &frame, &len) == -1 || len > sizeof(back))
		fatalx("frame");
	for (k = 0; k < ROUNDS; k++) {
		t0 = now_us();
		for (i = 0; i < ITERS; i++) {
			if (write_full(fd, frame, len) == -1 ||
			    read_full_timeout(fd, back, len, 5000) == -1)
				fatal("echo");
		}
		r[k] = (now_us() - t0) / ITERS;
	}
	free(frame);
	close(fd);
	return median(r, ROUNDS);
}

static void
run(const char *dir, int cpu, const char *label)
{
	char ipc_path[256], echo_path[256];
	double ipc, echo;
	pid_t a, b;

	snprintf(ipc_path, sizeof(ipc_path), "%s/ipc.sock", dir);
	snprintf(echo_path, sizeof(echo_path), "%s/echo.sock", dir);
	pin(cpu);
	a = spawn_ipc_server(ipc_path, cpu);
	b = spawn_echo_server(echo_path, cpu);
	usleep(100000);
	echo = bench_echo(echo_path);
	ipc = bench_ipc(ipc_path);
	kill(a, SIGTERM);
	kill(b, SIGTERM);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	printf("ipc round trip (%s): %.1f us, raw unix echo %.1f us, ratio %.2f "
	    "(median of %d rounds x %d)\n", label, ipc, echo, ipc / echo, ROUNDS, ITERS);
}

int
main(void)
{
	char dir[] = "/tmp/ipc-bench.XXXXXX";
	cpu_set_t all;

	log_init("ipc_rtt", 0);
	if (mkdtemp(dir) == NULL)
		fatal("mkdtemp");
	sched_getaffinity(0, sizeof(all), &all);
	run(dir, 0, "both ends pinned to cpu0");
	sched_setaffinity(0, sizeof(all), &all);
	run(dir, -1, "unpinned");
	unlink(dir);
	rmdir(dir);
	return 0;
}
