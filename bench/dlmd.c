/*
 * The clients of bench/dlmd.sh, which runs the cluster, starts them on
 * its nodes and makes the table; each prints its figures on stdout.
 *
 *   dlmd hold RUNDIR NAME
 *	take NAME at EX, come down to NL and keep it (first touch makes
 *	this node its master, the NL lock keeps it from the purge);
 *	prints "ready", then serves events until killed
 *   dlmd ops RUNDIR NAME ITERS CPU
 *	mean us of a new EX lock + unlock, then of a convert
 *	NL->EX->NL of a held lock, ITERS of each
 *   dlmd pingpong RUNDIR NAME GRANTS CPU
 *	EX handoffs with a peer running the same on another node: hold
 *	EX until a Bast, then come down to NL and ask for EX again.
 *	Prints "ready" after the first grant (start the peer then), then
 *	the mean us per handoff from our second grant to our last
 *   dlmd tcp PORT ITERS CPU_A CPU_B
 *	the baseline: mean us of a raw TCP round trip of 64 bytes from
 *	127.0.0.2 (node1's address) to an echo on 127.0.0.3:PORT (node2's)
 *
 * CPU < 0 leaves a client unpinned. The domain is "bench".
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "log.h"
#include "o2dlm.h"
#include "util.h"

#define DOMAIN		"bench"
#define WARMUP		20
#define WAIT_MS		10000	/* nothing here should ever take this long */
#define MSG		64

struct client {
	struct dlmc	*c;
	const char	*name;
	uint64_t	 lockid;
	int		 basted;
};

static void
on_bast(struct dlmc *c, const struct dlmc_bast *b, void *arg)
{
	struct client *cl = arg;

	(void)c;
	if (b->lockid == cl->lockid)
		cl->basted = 1;
}

static void
client_open(struct client *cl, const char *rundir, const char *name, int cpu)
{
	static const struct dlmc_callbacks cb = { .bast = on_bast };

	pin(cpu);
	memset(cl, 0, sizeof(*cl));
	cl->name = name;
	if ((cl->c = dlmc_open(rundir, &cb, cl)) == NULL)
		fatal("connect to %s/dlmd.sock", rundir);
	if (dlmc_join(cl->c, DOMAIN, 0, NULL) == -1)
		fatalx("join: %s", dlmc_error(cl->c));
}

/* A new lock (*lockid 0) or a convert of *lockid, granted or exit. */
static void
take(struct client *cl, uint64_t *lockid, int mode)
{
	struct dlmc_lock_args a = { .domain = DOMAIN, .mode = mode };
	struct dlmc_ast ast;

	if (*lockid != 0) {
		a.flags = DLMC_F_CONVERT;
		a.lockid = *lockid;
	} else {
		a.name = cl->name;
		a.namelen = strlen(cl->name);
	}
	if (dlmc_lock_wait(cl->c, &a, WAIT_MS, lockid, &ast) == -1)
		fatalx("%s %s: %s", mode == DLMC_EX ? "EX" : "NL", cl->name,
		    dlmc_error(cl->c));
}

static void
drop(struct client *cl, uint64_t lockid)
{
	if (dlmc_unlock(cl->c, DOMAIN, lockid, 0, NULL) == -1)
		fatalx("unlock %s: %s", cl->name, dlmc_error(cl->c));
}

/* Run events until the Bast of our lock; events that came during a
 * blocking call are queued without making the socket readable. */
static void
wait_bast(struct client *cl)
{
	struct pollfd pfd = { .fd = dlmc_fd(cl->c), .events = POLLIN };

	while (!cl->basted) {
		if (dlmc_queued(cl->c) == 0 && poll(&pfd, 1, WAIT_MS) != 1)
			fatalx("no Bast for %s", cl->name);
		if (dlmc_dispatch(cl->c) == -1)
			fatalx("dlmd: %s", dlmc_error(cl->c));
	}
}

static void
ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

static int
cmd_hold(const char *rundir, const char *name)
{
	struct client cl;
	struct pollfd pfd;

	client_open(&cl, rundir, name, -1);
	take(&cl, &cl.lockid, DLMC_EX);
	take(&cl, &cl.lockid, DLMC_NL);
	ready();
	pfd = (struct pollfd){ .fd = dlmc_fd(cl.c), .events = POLLIN };
	while (dlmc_dispatch(cl.c) != -1)
		poll(&pfd, 1, -1);
	fatalx("dlmd: %s", dlmc_error(cl.c));
}

static double
lock_unlock(struct client *cl, int iters)
{
	uint64_t id;
	double t0 = now_us();
	int i;

	for (i = 0; i < iters; i++) {
		id = 0;
		take(cl, &id, DLMC_EX);
		drop(cl, id);
	}
	return (now_us() - t0) / iters;
}

static double
convert(struct client *cl, uint64_t id, int iters)
{
	double t0 = now_us();
	int i;

	for (i = 0; i < iters; i++) {
		take(cl, &id, DLMC_EX);
		take(cl, &id, DLMC_NL);
	}
	return (now_us() - t0) / iters;
}

static int
cmd_ops(const char *rundir, const char *name, int iters, int cpu)
{
	struct client cl;
	uint64_t id = 0;
	double lu, cv;

	client_open(&cl, rundir, name, cpu);
	lock_unlock(&cl, WARMUP);
	lu = lock_unlock(&cl, iters);
	take(&cl, &id, DLMC_NL);
	convert(&cl, id, WARMUP);
	cv = convert(&cl, id, iters);
	drop(&cl, id);
	printf("%.2f %.2f\n", lu, cv);
	return 0;
}

/*
 * The peers alternate strictly: each grant of ours follows one of
 * theirs. Our last grant is an unlock, not a down-convert on Bast, so
 * that the peer's last request is granted whether or not it has seen
 * a Bast.
 */
static int
cmd_pingpong(const char *rundir, const char *name, int grants, int cpu)
{
	struct client cl;
	double t1 = 0;
	int i;

	if (grants < 3)
		fatalx("pingpong needs 3 grants or more");
	client_open(&cl, rundir, name, cpu);
	for (i = 0; i < grants; i++) {
		cl.basted = 0;
		take(&cl, &cl.lockid, DLMC_EX);
		if (i == 0)
			ready();
		else if (i == 1)
			t1 = now_us();
		if (i == grants - 1)
			break;
		wait_bast(&cl);
		take(&cl, &cl.lockid, DLMC_NL);
	}
	printf("%.2f\n", (now_us() - t1) / (2.0 * (grants - 2)));
	drop(&cl, cl.lockid);
	return 0;
}

static int
tcp_socket(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		fatal("bind %s:%d", addr, port);
	return fd;
}

/* As netd_rtt's baseline: node1's address to node2's, TCP_NODELAY. */
static int
cmd_tcp(int port, int iters, int cpu_a, int cpu_b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int lfd = tcp_socket("127.0.0.3", port), fd, one = 1, i;
	uint8_t buf[MSG] = { 0 };
	double t0 = 0;
	pid_t pid;

	if (listen(lfd, 1) == -1)
		fatal("listen");
	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		pin(cpu_b);
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			_exit(1);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (read_full_timeout(fd, buf, MSG, -1) == 0)
			if (write_full(fd, buf, MSG) == -1)
				break;
		_exit(0);
	}
	close(lfd);
	pin(cpu_a);
	fd = tcp_socket("127.0.0.2", 0);
	inet_pton(AF_INET, "127.0.0.3", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		fatal("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (i = -WARMUP; i < iters; i++) {
		if (i == 0)
			t0 = now_us();
		if (write_full(fd, buf, MSG) == -1 ||
		    read_full_timeout(fd, buf, MSG, WAIT_MS) == -1)
			fatal("ping-pong");
	}
	printf("%.2f\n", (now_us() - t0) / iters);
	close(fd);
	waitpid(pid, NULL, 0);
	return 0;
}

int
main(int argc, char **argv)
{
	log_init("bench/dlmd", 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 4 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argv[2], argv[3]);
	if (argc == 6 && strcmp(argv[1], "ops") == 0)
		return cmd_ops(argv[2], argv[3], bench_num(argv[4], 1, 10000000),
		    bench_num(argv[5], -1, CPU_SETSIZE - 1));
	if (argc == 6 && strcmp(argv[1], "pingpong") == 0)
		return cmd_pingpong(argv[2], argv[3], bench_num(argv[4], 3, 10000000),
		    bench_num(argv[5], -1, CPU_SETSIZE - 1));
	if (argc == 6 && strcmp(argv[1], "tcp") == 0)
		return cmd_tcp(bench_num(argv[2], 1, 65535), bench_num(argv[3], 1, 10000000),
		    bench_num(argv[4], -1, CPU_SETSIZE - 1), bench_num(argv[5], -1, CPU_SETSIZE - 1));
	fprintf(stderr, "usage: dlmd hold RUNDIR NAME | ops RUNDIR NAME ITERS CPU |\n"
	    "       pingpong RUNDIR NAME GRANTS CPU | tcp PORT ITERS CPU_A CPU_B\n"
	    "(the clients of bench/dlmd.sh)\n");
	return 2;
}
