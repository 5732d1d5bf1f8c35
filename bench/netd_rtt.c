/*
 * netd round trip and message rate: a client on node1 sends a 64-byte
 * message through netd.sock -> netd -> TCP -> netd -> a handler process
 * on node2, which answers it, and back; against the baseline of a raw
 * TCP ping-pong of the same 64 bytes between the same two addresses, in
 * the same run. Reports the median over rounds of each, their ratios,
 * with the two ends unpinned, pinned to different CPUs (the daemons
 * unpinned), and "by node": each node's netd pinned with its end, node1's
 * on one CPU and node2's on the other, as two one-CPU machines would run
 * them (the raw TCP ends pinned the same way).
 *
 * It runs its own two-node local cluster (scripts/localcluster, found
 * above this binary) on a private directory and port, and takes it
 * down at the end.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "ipc.h"
#include "log.h"
#include "netdanswer.h"
#include "util.h"

#define ROUNDS		7
#define ITERS		2000	/* round trips per round */
#define RATE_MSGS	20000	/* messages per rate round */
#define WINDOW		64	/* in flight during the rate rounds */
#define MSG		64
#define BENCH_TYPE	0x4254	/* "BT" */

static char top[PATH_MAX], build[PATH_MAX], dir[PATH_MAX];
static int port;

static int
lc(const char *args)
{
	char *cmd;
	int rc;

	xasprintf(&cmd, "'%s/scripts/localcluster' %s >>'%s.log' 2>&1", top, args, dir);
	rc = system(cmd);
	free(cmd);
	return rc;
}

static char *
sock(int node)
{
	char *p;

	xasprintf(&p, "%s/node%d/run/netd.sock", dir, node);
	return p;
}

/* Wait until node1's netd reports its link to node2 up. */
static int
wait_link(void)
{
	Envelope req = ENVELOPE__INIT, *rep;
	char *path = sock(1);
	int i, fd, up = 0;
	size_t k;

	for (i = 0; i < 300 && !up; i++) {
		usleep(100000);
		if ((fd = ipc_sync_connect(path)) == -1)
			continue;
		req.type = MSG_TYPE__MSG_NETD_STATUS;
		if (ipc_sync_call(fd, &req, &rep, 2000) == 0) {
			if (rep->payload_case == ENVELOPE__PAYLOAD_NET_STATUS)
				for (k = 0; k < rep->net_status->n_links; k++)
					if (rep->net_status->links[k]->node == 2 &&
					    rep->net_status->links[k]->state == NETD__LINK_STATE__LINK_UP)
						up = 1;
			envelope__free_unpacked(rep, NULL);
		}
		close(fd);
	}
	free(path);
	return up ? 0 : -1;
}

/* The handler on node2: answer every message with its bytes. */
static pid_t
spawn_handler(int cpu)
{
	Envelope req = ENVELOPE__INIT, *ev, *rep;
	Netd__NetRegister reg = NETD__NET_REGISTER__INIT;
	char *path = sock(2);
	int fd, ready[2];
	pid_t pid;
	char c;

	if (pipe(ready) == -1)
		fatal("pipe");
	if ((pid = fork()) != 0) {
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			fatalx("the handler did not register");
		close(ready[0]);
		free(path);
		return pid;
	}
	pin(cpu);
	if ((fd = ipc_sync_connect(path)) == -1)
		_exit(1);
	reg.type = BENCH_TYPE;
	req.type = MSG_TYPE__MSG_NETD_REGISTER;
	req.payload_case = ENVELOPE__PAYLOAD_NET_REGISTER;
	req.net_register = &reg;
	if (ipc_sync_call(fd, &req, &rep, 5000) == -1 || rep->status != 0)
		_exit(1);
	write_full(ready[1], "r", 1);
	while (ipc_sync_recv(fd, &ev, -1) == 0) {
		if (ev->payload_case == ENVELOPE__PAYLOAD_NET_MESSAGE &&
		    netd_answer_fd(fd, ev->net_message->handle, 0,
		    ev->net_message->payload.data, ev->net_message->payload.len) == -1)
			_exit(1);
		envelope__free_unpacked(ev, NULL);
	}
	_exit(0);
}

static void
net_send(int fd, uint64_t id, uint8_t *payload)
{
	Envelope req = ENVELOPE__INIT;
	Netd__NetSend ns = NETD__NET_SEND__INIT;

	ns.node = 2;
	ns.type = BENCH_TYPE;
	ns.payload.data = payload;
	ns.payload.len = MSG;
	req.kind = KIND__KIND_REQUEST;
	req.id = id;
	req.type = MSG_TYPE__MSG_NETD_SEND;
	req.payload_case = ENVELOPE__PAYLOAD_NET_SEND;
	req.net_send = &ns;
	if (ipc_sync_send(fd, &req) == -1)
		fatal("send to netd");
}

/* One answer from netd; the benchmark is void unless every one is right. */
static void
net_recv(int fd)
{
	Envelope *rep;

	if (ipc_sync_recv(fd, &rep, 10000) == -1)
		fatal("netd's answer");
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_NET_RESULT ||
	    rep->net_result->payload.len != MSG)
		fatalx("netd answered %d (%s)", rep->status, rep->error);
	envelope__free_unpacked(rep, NULL);
}

/* One round: mean round trip (us) of ITERS, then the rate (messages/s). */
static void
netd_round(int fd, uint64_t *id, double *rtt, double *rate)
{
	uint8_t payload[MSG] = { 0 };
	double t0;
	int i, inflight;

	t0 = now_us();
	for (i = 0; i < ITERS; i++) {
		net_send(fd, ++*id, payload);
		net_recv(fd);
	}
	*rtt = (now_us() - t0) / ITERS;
	t0 = now_us();
	for (i = 0, inflight = 0; i < RATE_MSGS || inflight > 0;) {
		while (i < RATE_MSGS && inflight < WINDOW) {
			net_send(fd, ++*id, payload);
			i++;
			inflight++;
		}
		net_recv(fd);
		inflight--;
	}
	*rate = RATE_MSGS / ((now_us() - t0) / 1e6);
}

static int
tcp_socket(const char *addr, int p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		fatal("bind %s:%d", addr, p);
	return fd;
}

/* The baseline's server on node2's address: echo 64-byte messages. */
static pid_t
spawn_tcp_echo(int cpu)
{
	int lfd = tcp_socket("127.0.0.3", port + 1), fd, one = 1;
	uint8_t buf[MSG];
	pid_t pid;

	if (listen(lfd, 1) == -1)
		fatal("listen");
	if ((pid = fork()) != 0) {
		close(lfd);
		return pid;
	}
	pin(cpu);
	if ((fd = accept(lfd, NULL, NULL)) == -1)
		_exit(1);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (read_full_timeout(fd, buf, MSG, -1) == 0)
		if (write_full(fd, buf, MSG) == -1)
			break;
	_exit(0);
}

static int
tcp_connect(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1)) };
	int fd, one = 1;

	fd = tcp_socket("127.0.0.2", 0);
	inet_pton(AF_INET, "127.0.0.3", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		fatal("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void
tcp_round(int fd, double *rtt, double *rate)
{
	uint8_t buf[MSG] = { 0 };
	double t0;
	int i, inflight;

	t0 = now_us();
	for (i = 0; i < ITERS; i++)
		if (write_full(fd, buf, MSG) == -1 ||
		    read_full_timeout(fd, buf, MSG, 10000) == -1)
			fatal("ping-pong");
	*rtt = (now_us() - t0) / ITERS;
	t0 = now_us();
	for (i = 0, inflight = 0; i < RATE_MSGS || inflight > 0;) {
		while (i < RATE_MSGS && inflight < WINDOW) {
			if (write_full(fd, buf, MSG) == -1)
				fatal("write");
			i++;
			inflight++;
		}
		if (read_full_timeout(fd, buf, MSG, 10000) == -1)
			fatal("read");
		inflight--;
	}
	*rate = RATE_MSGS / ((now_us() - t0) / 1e6);
}

static void
find_top(void)
{
	char exe[PATH_MAX], probe[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *d;

	if (n <= 0)
		fatal("readlink /proc/self/exe");
	exe[n] = '\0';
	snprintf(build, sizeof(build), "%s", dirname(dirname(exe)));	/* <build>/bench/x */
	snprintf(top, sizeof(top), "%s", build);
	for (d = top; strcmp(d, "/") != 0; d = dirname(d)) {
		snprintf(probe, sizeof(probe), "%s/scripts/localcluster", d);
		if (access(probe, X_OK) == 0) {
			memmove(top, d, strlen(d) + 1);
			return;
		}
	}
	fatalx("no scripts/localcluster above %s", build);
}

/* Pin node's netd (by its pid file) to cpu, or let it run anywhere (-1). */
static void
pin_netd(int node, int cpu, const cpu_set_t *all)
{
	cpu_set_t set;
	char *path;
	FILE *f;
	int pid = 0;

	xasprintf(&path, "%s/node%d/pids/netd.pid", dir, node);
	if ((f = fopen(path, "r")) == NULL || fscanf(f, "%d", &pid) != 1 || pid <= 0)
		fatal("no pid in %s", path);
	fclose(f);
	free(path);
	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	if (sched_setaffinity(pid, sizeof(set), cpu >= 0 ? &set : all) == -1)
		fatal("pinning node%d's netd", node);
}

/*
 * Rounds alternate between netd and the baseline, so that whatever else
 * the machine does weighs on both alike; the ratios are medians of the
 * per-round ratios.
 */
static void
run(const char *label, int cpu_a, int cpu_b)
{
	double nrtt[ROUNDS], nrate[ROUNDS], trtt[ROUNDS], trate[ROUNDS];
	double lat[ROUNDS], thr[ROUNDS], rl, rt;
	char *path = sock(1);
	uint64_t id = 0;
	int k, nfd, tfd;
	pid_t h, e;

	h = spawn_handler(cpu_b);
	e = spawn_tcp_echo(cpu_b);
	pin(cpu_a);
	if ((nfd = ipc_sync_connect(path)) == -1)
		fatal("connect %s", path);
	tfd = tcp_connect();
	for (k = 0; k < ROUNDS; k++) {
		netd_round(nfd, &id, &nrtt[k], &nrate[k]);
		tcp_round(tfd, &trtt[k], &trate[k]);
		lat[k] = nrtt[k] / trtt[k];
		thr[k] = nrate[k] / trate[k];
	}
	close(nfd);
	close(tfd);
	kill(h, SIGTERM);
	waitpid(h, NULL, 0);
	waitpid(e, NULL, 0);
	free(path);
	rl = median(lat, ROUNDS);
	rt = median(thr, ROUNDS);
	printf("%-9s round trip: netd %7.1f us, raw TCP %6.1f us, ratio %.2fx %s\n",
	    label, median(nrtt, ROUNDS), median(trtt, ROUNDS), rl,
	    rl <= 3.0 ? "(target <= 3x: met)" : "(target <= 3x: NOT met)");
	printf("%-9s rate (%d in flight): netd %8.0f msg/s, raw TCP %8.0f msg/s, "
	    "ratio %.2f\n", label, WINDOW, median(nrate, ROUNDS),
	    median(trate, ROUNDS), rt);
}

int
main(void)
{
	cpu_set_t all;
	char cmd[256];
	int rc = 0;

	log_init("netd_rtt", 0);
	find_top();
	srand((unsigned)getpid());
	port = 20000 + rand() % 20000;
	snprintf(dir, sizeof(dir), "/tmp/netd-bench-%d", (int)getpid());
	setenv("LOCALCLUSTER_DIR", dir, 1);
	snprintf(cmd, sizeof(cmd), "%d", port);
	setenv("LOCALCLUSTER_PORT", cmd, 1);
	setenv("OCFS2_BUILD", build, 1);
	signal(SIGPIPE, SIG_IGN);
	printf("netd round trip of %d-byte messages, median of %d rounds of %d; "
	    "rate: %d messages, %d in flight\n", MSG, ROUNDS, ITERS, RATE_MSGS, WINDOW);
	if (lc("up 2 --hb-interval-ms 200 --dead-threshold 10") != 0 ||
	    lc("exec 1 sh -c '\"$OCFS2_BUILD/o2ctl\" heartbeat start \"$OCFS2_IMAGE\"'") != 0 ||
	    lc("exec 2 sh -c '\"$OCFS2_BUILD/o2ctl\" heartbeat start \"$OCFS2_IMAGE\"'") != 0 ||
	    wait_link() == -1) {
		fprintf(stderr, "netd_rtt: the two-node cluster did not come up; see %s.log\n", dir);
		rc = 1;
		goto out;
	}
	sched_getaffinity(0, sizeof(all), &all);
	run("unpinned", -1, -1);
	if (CPU_COUNT(&all) >= 2) {
		run("pinned", 0, 1);
		pin_netd(1, 0, &all);
		pin_netd(2, 1, &all);
		run("by node", 0, 1);
		pin_netd(1, -1, &all);
		pin_netd(2, -1, &all);
	} else
		printf("pinned and by node skipped: one CPU\n");
out:
	lc("down");
	snprintf(cmd, sizeof(cmd), "%s.log", dir);
	if (rc == 0)
		unlink(cmd);
	return rc;
}
