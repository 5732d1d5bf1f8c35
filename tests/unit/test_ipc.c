/*
 * The IPC layer against a real server: each test forks a child that runs
 * ipc_server_listen() on its own event loop with a small dispatch table,
 * and talks to it over real sockets, raw where it needs to send bad
 * bytes. Every test ends with server_stop(), which fails the test if the
 * server did not survive until then. Every wait in this process has a
 * timeout, so a hung server fails a test instead of hanging it.
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "util.h"

#define TIMEOUT_MS	5000		/* any single wait for the server */
#define QUIET_MS	200		/* "nothing arrives" means within this */
#define DAEMON		"testd"
#define TOPIC_A		1u
#define TOPIC_B		2u
#define NCLIENTS	1000
#define NOBODY		65534
#define FLOOD_EVENTS	(IPC_OUTQ_MAX / (1u << 20) + 2)

/*
 * The server child's dispatch table. Message types are borrowed from
 * nmd's range; what they do here is the test's own:
 *   SET_ATTR   (SetAttr)  reply with the value in `error` (an echo)
 *   GET_CONFIG (any)      reply with ipc_server_nconns() in `error`
 *   MKDIR      (ItemPath) publish CONFIG_CHANGED(path) to TOPIC_A, reply
 *   RMDIR      (ItemPath) no reply now: kept until RELOAD
 *   RELOAD     (any)      answer this connection's kept RMDIRs, newest
 *                         first (so replies come out of order), then reply
 *   REGION_RELEASE (any)  publish FLOOD_EVENTS events of 1 MiB to TOPIC_B
 *                         in one go (more than IPC_OUTQ_MAX), then reply
 *   UNPIN                 not in the table
 */
static struct ipc_server *child_srv;

static struct ipc_server *
srv_of(struct ipc_conn *c)
{
	/* The server's arg points at child_srv: checks arg plumbing too. */
	return *(struct ipc_server **)ipc_conn_arg(c);
}

static void
h_echo(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;

	rep.error = req->set_attr->value;
	ipc_reply(c, req, &rep);
}

static void
h_nconns(struct ipc_conn *c, const Envelope *req)
{
	ipc_reply_status(c, req, 0, "%zu", ipc_server_nconns(srv_of(c)));
}

static void
h_publish(struct ipc_conn *c, const Envelope *req)
{
	Envelope ev = ENVELOPE__INIT;
	Nmd__ConfigChange ch = NMD__CONFIG_CHANGE__INIT;

	ch.path = req->item->path;
	ev.type = MSG_TYPE__MSG_NMD_CONFIG_CHANGED;
	ev.payload_case = ENVELOPE__PAYLOAD_CHANGE;
	ev.change = &ch;
	ipc_publish(srv_of(c), TOPIC_A, &ev);
	ipc_reply_status(c, req, 0, NULL);
}

static void
h_flood(struct ipc_conn *c, const Envelope *req)
{
	Envelope ev = ENVELOPE__INIT;
	Nmd__ConfigChange ch = NMD__CONFIG_CHANGE__INIT;
	size_t i;

	ch.path = (char *)"flood";
	ch.value = xmalloc(1u << 20);
	memset(ch.value, 'f', (1u << 20) - 1);
	ch.value[(1u << 20) - 1] = '\0';
	ev.type = MSG_TYPE__MSG_NMD_CONFIG_CHANGED;
	ev.payload_case = ENVELOPE__PAYLOAD_CHANGE;
	ev.change = &ch;
	for (i = 0; i < FLOOD_EVENTS; i++)
		ipc_publish(srv_of(c), TOPIC_B, &ev);
	free(ch.value);
	ipc_reply_status(c, req, 0, NULL);
}

static struct kept {
	uint64_t	 conn;
	MsgType		 type;
	uint64_t	 id;
	char		*path;
} kept[64];
static size_t nkept;

static void
h_keep(struct ipc_conn *c, const Envelope *req)
{
	if (nkept == nitems(kept))
		fatalx("test server: too many kept requests");
	kept[nkept].conn = ipc_conn_id(c);
	kept[nkept].type = req->type;
	kept[nkept].id = req->id;
	kept[nkept].path = xstrdup(req->item->path);
	nkept++;
}

static void
h_flush(struct ipc_conn *c, const Envelope *req)
{
	size_t i = nkept;

	while (i-- > 0) {
		Envelope old = ENVELOPE__INIT, rep = ENVELOPE__INIT;

		if (kept[i].conn != ipc_conn_id(c))
			continue;
		old.type = kept[i].type;
		old.id = kept[i].id;
		rep.error = kept[i].path;
		ipc_reply(c, &old, &rep);
		free(kept[i].path);
		kept[i] = kept[--nkept];
	}
	ipc_reply_status(c, req, 0, NULL);
}

static const struct ipc_handler table[] = {
	{ MSG_TYPE__MSG_NMD_SET_ATTR, ENVELOPE__PAYLOAD_SET_ATTR, h_echo },
	{ MSG_TYPE__MSG_NMD_GET_CONFIG, ENVELOPE__PAYLOAD__NOT_SET, h_nconns },
	{ MSG_TYPE__MSG_NMD_MKDIR, ENVELOPE__PAYLOAD_ITEM, h_publish },
	{ MSG_TYPE__MSG_NMD_RMDIR, ENVELOPE__PAYLOAD_ITEM, h_keep },
	{ MSG_TYPE__MSG_NMD_RELOAD, ENVELOPE__PAYLOAD__NOT_SET, h_flush },
	{ MSG_TYPE__MSG_NMD_REGION_RELEASE, ENVELOPE__PAYLOAD__NOT_SET, h_flood },
};

/* The test's view of its server child. */
static struct {
	char	dir[64];
	char	path[128];
	char	log[128];
	pid_t	pid;		/* 0 once reaped */
} srv;

static __attribute__((noreturn)) void
server_main(pid_t parent, int ready)
{
	struct event_base *base;
	int fd;

	/* Die with the test, even if Criterion kills it on a timeout. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	/* As every daemon's main() does: a vanished reader is not fatal. */
	signal(SIGPIPE, SIG_IGN);
	if ((fd = open(srv.log, O_WRONLY | O_CREAT | O_APPEND, 0600)) != -1) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	log_init("test_ipc-server", 0);
	if ((base = event_base_new()) == NULL)
		_exit(2);
	child_srv = ipc_server_listen(base, srv.path, DAEMON, table,
	    nitems(table), &child_srv);
	if (child_srv == NULL)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	close(ready);
	event_base_dispatch(base);
	_exit(5);	/* the loop ended: the listener is gone */
}

/* waitpid with a deadline: pid when reaped, 0 on timeout. */
static pid_t
wait_child(pid_t pid, int *status, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	pid_t r;

	while ((r = waitpid(pid, status, WNOHANG)) == 0 && now_ms() < end)
		usleep(2000);
	return r == pid ? pid : 0;
}

/* The server's log, to explain a failure. */
static const char *
server_log(void)
{
	static char buf[4096];
	ssize_t n = 0;
	int fd;

	buf[0] = '\0';
	if ((fd = open(srv.log, O_RDONLY)) != -1) {
		off_t sz = lseek(fd, 0, SEEK_END);
		off_t from = sz > (off_t)sizeof(buf) - 1 ? sz - (off_t)sizeof(buf) + 1 : 0;

		n = pread(fd, buf, sizeof(buf) - 1, from);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/*
 * "" while the server runs, else how it ended and its log: appended to
 * client-side failure messages. WNOWAIT leaves it for server_stop().
 */
static const char *
srv_health(void)
{
	static char buf[4200];
	siginfo_t si = { 0 };

	if (srv.pid <= 0 || waitid(P_PID, (id_t)srv.pid, &si,
	    WEXITED | WNOHANG | WNOWAIT) == -1 || si.si_pid == 0)
		return "";
	snprintf(buf, sizeof(buf), "\n(the server has died: %s %d; its log:\n%s)",
	    si.si_code == CLD_EXITED ? "exit status" : "signal", si.si_status,
	    server_log());
	return buf;
}

static void
setup(void)
{
	struct rlimit rl;
	struct pollfd pfd;
	pid_t parent = getpid();
	int ready[2];
	char c;

	/* A test that dies must not die of SIGPIPE, nor hang on a socket. */
	signal(SIGPIPE, SIG_IGN);
	/* 1000 clients need more descriptors, here and in the child. */
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 4096) {
		rl.rlim_cur = 4096;
		if (rl.rlim_max < 4096)
			rl.rlim_max = 4096;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
			/* Not root: as far as the hard limit goes. */
			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}

	strcpy(srv.dir, "/tmp/test_ipc.XXXXXX");
	cr_assert_not_null(mkdtemp(srv.dir));
	snprintf(srv.path, sizeof(srv.path), "%s/" DAEMON ".sock", srv.dir);
	snprintf(srv.log, sizeof(srv.log), "%s/server.log", srv.dir);

	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	srv.pid = fork();
	cr_assert_neq(srv.pid, -1);
	if (srv.pid == 0) {
		close(ready[0]);
		server_main(parent, ready[1]);
	}
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, TIMEOUT_MS), 1, "server did not start");
	cr_assert_eq(read(ready[0], &c, 1), 1, "server failed to listen:\n%s",
	    server_log());
	close(ready[0]);
}

/*
 * The check every test ends with: the server must still be running (not
 * crashed, not exited), and must die of our SIGKILL.
 */
static void
server_stop(void)
{
	int st = 0;

	cr_assert_neq(srv.pid, 0, "server already stopped");
	cr_assert_eq(waitpid(srv.pid, &st, WNOHANG), 0,
	    "server died during the test (%s %d); its log:\n%s",
	    WIFSIGNALED(st) ? "signal" : "exit status",
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), server_log());
	cr_assert_eq(kill(srv.pid, SIGKILL), 0);
	cr_assert_eq(wait_child(srv.pid, &st, TIMEOUT_MS), srv.pid,
	    "server did not die of SIGKILL");
	srv.pid = 0;
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "server ended otherwise than by our SIGKILL (status %#x)", st);
}

/* Cleanup only: Criterion ignores assertions in .fini. */
static void
teardown(void)
{
	int st;

	if (srv.pid > 0) {
		kill(srv.pid, SIGKILL);
		wait_child(srv.pid, &st, TIMEOUT_MS);
		srv.pid = 0;
	}
	unlink(srv.path);
	unlink(srv.log);
	rmdir(srv.dir);
}

TestSuite(ipc, .init = setup, .fini = teardown, .timeout = 30);

/* Client helpers. */

static void
set_timeouts(int fd)
{
	struct timeval tv = { TIMEOUT_MS / 1000, 0 };

	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

/* A connected client; SO_SNDTIMEO bounds connect() on a full backlog. */
static int
cli(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	set_timeouts(fd);
	strcpy(sun.sun_path, srv.path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0,
	    "connect: %s%s", strerror(errno), srv_health());
	return fd;
}

static void
send_raw(int fd, const void *buf, size_t len)
{
	cr_assert_eq(write_full(fd, buf, len), 0, "write: %s", strerror(errno));
}

static void
send_hdr(int fd, uint32_t n)
{
	uint8_t hdr[4] = { n >> 24, n >> 16, n >> 8, n };

	send_raw(fd, hdr, 4);
}

static Envelope *
call(int fd, Envelope *req)
{
	Envelope *rep = NULL;

	cr_assert_eq(ipc_sync_call(fd, req, &rep, TIMEOUT_MS), 0,
	    "no reply to type %d: %s%s", req->type, strerror(errno), srv_health());
	cr_assert_eq(rep->kind, KIND__KIND_REPLY);
	cr_assert_eq(rep->type, req->type);
	cr_assert_eq(rep->id, req->id);
	return rep;
}

static Envelope *
recv_env(int fd)
{
	Envelope *env = NULL;

	cr_assert_eq(ipc_sync_recv(fd, &env, TIMEOUT_MS), 0,
	    "nothing received: %s%s", strerror(errno), srv_health());
	return env;
}

/* Request builders: the envelope and its payload in one struct. */
struct req {
	Envelope	env;
	Nmd__SetAttr	sa;
	Nmd__ItemPath	item;
	Subscribe	sub;
};

static Envelope *
req_echo(struct req *r, const char *value)
{
	*r = (struct req){ .env = ENVELOPE__INIT, .sa = NMD__SET_ATTR__INIT };
	r->env.type = MSG_TYPE__MSG_NMD_SET_ATTR;
	r->env.payload_case = ENVELOPE__PAYLOAD_SET_ATTR;
	r->env.set_attr = &r->sa;
	r->sa.path = (char *)"cluster/x";
	r->sa.value = (char *)value;
	return &r->env;
}

static Envelope *
req_item(struct req *r, MsgType type, const char *path)
{
	*r = (struct req){ .env = ENVELOPE__INIT, .item = NMD__ITEM_PATH__INIT };
	r->env.type = type;
	r->env.payload_case = ENVELOPE__PAYLOAD_ITEM;
	r->env.item = &r->item;
	r->item.path = (char *)path;
	return &r->env;
}

static Envelope *
req_plain(struct req *r, MsgType type)
{
	*r = (struct req){ .env = ENVELOPE__INIT };
	r->env.type = type;
	return &r->env;
}

/* A whole frame of an echo request with a chosen id. */
static uint8_t *
frame_echo(uint64_t id, const char *value, size_t *len)
{
	struct req r;
	uint8_t *buf;

	req_echo(&r, value);
	r.env.id = id;
	cr_assert_eq(ipc_frame_pack(&r.env, &buf, len), 0);
	return buf;
}

static void
expect_echo(int fd, uint64_t id, const char *value)
{
	Envelope *rep = recv_env(fd);

	cr_assert_eq(rep->kind, KIND__KIND_REPLY);
	cr_assert_eq(rep->type, MSG_TYPE__MSG_NMD_SET_ATTR);
	cr_assert_eq(rep->id, id, "reply id %llu, want %llu",
	    (unsigned long long)rep->id, (unsigned long long)id);
	cr_assert_eq(rep->status, 0);
	cr_assert_str_eq(rep->error, value);
	envelope__free_unpacked(rep, NULL);
}

static void
echo(int fd, const char *value)
{
	struct req r;
	Envelope *rep = call(fd, req_echo(&r, value));

	cr_assert_eq(rep->status, 0);
	cr_assert_str_eq(rep->error, value);
	envelope__free_unpacked(rep, NULL);
}

static void
ping(int fd)
{
	struct req r;
	Envelope *rep = call(fd, req_plain(&r, MSG_TYPE__MSG_PING));

	cr_assert_eq(rep->status, 0);
	cr_assert_eq(rep->payload_case, ENVELOPE__PAYLOAD_PING);
	cr_assert_str_eq(rep->ping->daemon, DAEMON);
	cr_assert_eq(rep->ping->pid, (uint32_t)srv.pid);
	envelope__free_unpacked(rep, NULL);
}

/* A fresh client is served: the server is up and accepting. */
static void
ping_new_client(void)
{
	int fd = cli();

	ping(fd);
	close(fd);
}

static void
subscribe(int fd, uint32_t topics)
{
	struct req r;
	Envelope *rep;

	req_plain(&r, MSG_TYPE__MSG_SUBSCRIBE);
	r.sub = (Subscribe)SUBSCRIBE__INIT;
	r.sub.topics = topics;
	r.env.payload_case = ENVELOPE__PAYLOAD_SUBSCRIBE;
	r.env.subscribe = &r.sub;
	rep = call(fd, &r.env);
	cr_assert_eq(rep->status, 0);
	envelope__free_unpacked(rep, NULL);
}

static unsigned long
nconns(int fd)
{
	struct req r;
	Envelope *rep = call(fd, req_plain(&r, MSG_TYPE__MSG_NMD_GET_CONFIG));
	unsigned long n = strtoul(rep->error, NULL, 10);

	envelope__free_unpacked(rep, NULL);
	return n;
}

/*
 * Wait until the server counts `want` connections, the asking one
 * included: closes are seen asynchronously, so poll for a while.
 */
static void
wait_nconns(unsigned long want)
{
	uint64_t end = now_ms() + TIMEOUT_MS;
	unsigned long n;
	int fd = cli();

	while ((n = nconns(fd)) != want && now_ms() < end)
		usleep(5000);
	close(fd);
	cr_assert_eq(n, want, "server holds %lu connections, want %lu", n, want);
}

/* The server closed this connection: EOF (or a reset), never data. */
static void
expect_closed(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b;
	ssize_t n;

	cr_assert_eq(poll(&pfd, 1, TIMEOUT_MS), 1, "connection not closed%s",
	    srv_health());
	n = read(fd, &b, 1);
	cr_assert(n == 0 || (n == -1 && errno == ECONNRESET),
	    "want EOF, read returned %zd (%s)", n, n == -1 ? strerror(errno) : "data");
	close(fd);
}

/* Nothing arrives (no data, no close) on any of these for QUIET_MS. */
static void
expect_quiet(const int *fds, int n)
{
	struct pollfd pfd[8];
	int i;

	cr_assert_leq(n, 8);
	for (i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	cr_assert_eq(poll(pfd, (nfds_t)n, QUIET_MS), 0, "unexpected data or close");
}

/* Deterministic noise (xorshift), so a failure reproduces. */
static uint32_t
rnd(void)
{
	static uint32_t x = 0x9e3779b9;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* Requests and replies. */

Test(ipc, round_trip_ids_matched)
{
	static const uint64_t ids[] = { 7, (1ull << 40) | 5, 3 };
	static const char *vals[] = { "first", "second", "third" };
	struct req r;
	size_t i;
	int fd;

	/* A fresh server's backlog is empty: this connect cannot block. */
	fd = ipc_sync_connect(srv.path);
	cr_assert_geq(fd, 0, "ipc_sync_connect: %s", strerror(errno));
	set_timeouts(fd);
	echo(fd, "hello");
	echo(fd, "");

	/* Pipelined requests with ids of our choosing: each id echoed. */
	for (i = 0; i < nitems(ids); i++) {
		req_echo(&r, vals[i]);
		r.env.id = ids[i];
		cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	}
	for (i = 0; i < nitems(ids); i++)
		expect_echo(fd, ids[i], vals[i]);
	close(fd);
	server_stop();
}

Test(ipc, ping_names_daemon_and_pid)
{
	int fd = cli();

	ping(fd);
	ping(fd);
	close(fd);
	server_stop();
}

Test(ipc, unknown_type_gets_eopnotsupp)
{
	/* One the table lacks, one outside the enum (proto3 enums are open). */
	static const MsgType types[] = { MSG_TYPE__MSG_NMD_UNPIN, (MsgType)4242 };
	struct req r;
	Envelope *rep;
	size_t i;
	int fd = cli();

	for (i = 0; i < nitems(types); i++) {
		rep = call(fd, req_plain(&r, types[i]));
		cr_assert_eq(rep->status, EOPNOTSUPP, "type %d: status %d",
		    types[i], rep->status);
		cr_assert_not_null(strstr(rep->error, DAEMON));
		envelope__free_unpacked(rep, NULL);
	}
	/* The connection survives an unknown type. */
	ping(fd);
	close(fd);
	server_stop();
}

Test(ipc, wrong_payload_closes_only_that_connection)
{
	struct req r;
	int other = cli(), fd;

	/* SET_ATTR requires a SetAttr: an ItemPath closes the connection... */
	fd = cli();
	cr_assert_eq(ipc_sync_send(fd, req_item(&r, MSG_TYPE__MSG_NMD_SET_ATTR, "x")), 0);
	expect_closed(fd);
	/* ...and so does no payload at all. */
	fd = cli();
	cr_assert_eq(ipc_sync_send(fd, req_plain(&r, MSG_TYPE__MSG_NMD_SET_ATTR)), 0);
	expect_closed(fd);

	/* Other clients, old and new, are still served. */
	ping(other);
	close(other);
	ping_new_client();
	wait_nconns(1);
	server_stop();
}

/* Framing. */

Test(ipc, frames_split_across_reads)
{
	uint8_t *a, *b, *ab;
	size_t alen, blen, i, k;
	char *big;
	int fd = cli();

	/* One byte per write: the header itself arrives in pieces. */
	a = frame_echo(11, "one byte at a time", &alen);
	for (i = 0; i < alen; i++) {
		send_raw(fd, a + i, 1);
		usleep(1000);
	}
	expect_echo(fd, 11, "one byte at a time");
	free(a);

	/* Two frames in one write. */
	a = frame_echo(21, "first", &alen);
	b = frame_echo(22, "second", &blen);
	ab = xmalloc(alen + blen);
	memcpy(ab, a, alen);
	memcpy(ab + alen, b, blen);
	send_raw(fd, ab, alen + blen);
	expect_echo(fd, 21, "first");
	expect_echo(fd, 22, "second");

	/* Both again in 3-byte writes: one write ends a frame and starts the next. */
	for (i = 0; i < alen + blen; i += k) {
		k = alen + blen - i < 3 ? alen + blen - i : 3;
		send_raw(fd, ab + i, k);
		usleep(500);
	}
	expect_echo(fd, 21, "first");
	expect_echo(fd, 22, "second");
	free(a);
	free(b);
	free(ab);

	/* A 1 MiB frame takes many reads on the server. */
	big = xmalloc(1 << 20);
	memset(big, 'x', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	echo(fd, big);
	free(big);
	close(fd);
	server_stop();
}

Test(ipc, oversized_frame_closed_on_header)
{
	int fd, quiet[1];

	/* At the limit the server waits for the body... */
	fd = cli();
	send_hdr(fd, IPC_FRAME_MAX);
	quiet[0] = fd;
	expect_quiet(quiet, 1);
	close(fd);

	/* ...one byte over, it closes on the header alone: no body is sent. */
	fd = cli();
	send_hdr(fd, IPC_FRAME_MAX + 1);
	expect_closed(fd);
	fd = cli();
	send_hdr(fd, 0xffffffffu);
	expect_closed(fd);

	ping_new_client();
	/* The half-sent maximum frame's connection is gone too. */
	wait_nconns(1);
	server_stop();
}

Test(ipc, garbage_closes_connection)
{
	struct req r;
	uint8_t body[64], noise[4096];
	Envelope *rep;
	size_t i;
	int fd;

	/* A length-prefixed frame that does not decode (checked here first). */
	for (;;) {
		for (i = 0; i < sizeof(body); i++)
			body[i] = (uint8_t)rnd();
		if ((rep = envelope__unpack(NULL, sizeof(body), body)) == NULL)
			break;
		envelope__free_unpacked(rep, NULL);
	}
	fd = cli();
	send_hdr(fd, sizeof(body));
	send_raw(fd, body, sizeof(body));
	expect_closed(fd);

	/* A well-formed envelope of an unknown kind. */
	fd = cli();
	req_plain(&r, MSG_TYPE__MSG_PING);
	r.env.kind = (Kind)42;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	expect_closed(fd);

	/* A reply to a request the server never made. */
	fd = cli();
	req_plain(&r, MSG_TYPE__MSG_PING);
	r.env.kind = KIND__KIND_REPLY;
	r.env.id = 99;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	expect_closed(fd);

	/* Unframed noise: closed or ignored; either way the server lives. */
	for (i = 0; i < sizeof(noise); i++)
		noise[i] = (uint8_t)rnd();
	fd = cli();
	(void)!write(fd, noise, sizeof(noise));
	usleep(50000);
	close(fd);

	/* An empty frame decodes to an all-default request: type MSG_NONE. */
	fd = cli();
	send_hdr(fd, 0);
	rep = recv_env(fd);
	cr_assert_eq(rep->kind, KIND__KIND_REPLY);
	cr_assert_eq(rep->status, EOPNOTSUPP);
	envelope__free_unpacked(rep, NULL);
	close(fd);

	ping_new_client();
	wait_nconns(1);
	server_stop();
}

Test(ipc, peer_vanishes)
{
	uint8_t *f;
	size_t len;
	struct req r;
	int fd;

	/* Header and half the body, then gone. */
	f = frame_echo(1, "a value long enough to cut in half", &len);
	fd = cli();
	send_raw(fd, f, 4 + (len - 4) / 2);
	close(fd);
	free(f);

	/* A whole request, gone before the reply: the server writes to a dead peer. */
	fd = cli();
	cr_assert_eq(ipc_sync_send(fd, req_echo(&r, "nobody reads this")), 0);
	close(fd);

	ping_new_client();
	wait_nconns(1);
	server_stop();
}

/* Many clients. */

Test(ipc, thousand_clients)
{
	static int fds[NCLIENTS];
	Envelope *rep;
	struct req r;
	uint8_t *f;
	size_t len;
	int i, fd;

	/* All connected at once: the server counts them (and the asker). */
	for (i = 0; i < NCLIENTS; i++)
		fds[i] = cli();
	wait_nconns(NCLIENTS + 1);

	/* Every one pings before any reply is read. */
	for (i = 0; i < NCLIENTS; i++) {
		req_plain(&r, MSG_TYPE__MSG_PING);
		r.env.id = (uint64_t)i + 1;
		cr_assert_eq(ipc_frame_pack(&r.env, &f, &len), 0);
		send_raw(fds[i], f, len);
		free(f);
	}
	for (i = 0; i < NCLIENTS; i++) {
		rep = recv_env(fds[i]);
		cr_assert_eq(rep->id, (uint64_t)i + 1);
		cr_assert_eq(rep->payload_case, ENVELOPE__PAYLOAD_PING);
		cr_assert_eq(rep->ping->pid, (uint32_t)srv.pid);
		envelope__free_unpacked(rep, NULL);
	}
	for (i = 0; i < NCLIENTS; i++)
		close(fds[i]);
	wait_nconns(1);

	/* One after another. */
	for (i = 0; i < NCLIENTS; i++) {
		fd = cli();
		ping(fd);
		close(fd);
	}
	wait_nconns(1);
	server_stop();
}

/* Events. */

static void
expect_event(int fd, const char *path)
{
	Envelope *ev = recv_env(fd);

	cr_assert_eq(ev->kind, KIND__KIND_EVENT);
	cr_assert_eq(ev->type, MSG_TYPE__MSG_NMD_CONFIG_CHANGED);
	cr_assert_eq(ev->id, 0);
	cr_assert_eq(ev->payload_case, ENVELOPE__PAYLOAD_CHANGE);
	cr_assert_str_eq(ev->change->path, path);
	envelope__free_unpacked(ev, NULL);
}

Test(ipc, events_reach_subscribers_only)
{
	struct req r;
	Envelope *rep;
	int a = cli(), b = cli(), other = cli(), plain = cli(), trig = cli();
	int quiet[3];

	subscribe(a, TOPIC_A);
	subscribe(b, 0);		/* 0: every topic */
	subscribe(other, TOPIC_B);	/* subscribed, but not to TOPIC_A */
	ping(plain);			/* connected, never subscribed */

	rep = call(trig, req_item(&r, MSG_TYPE__MSG_NMD_MKDIR, "cluster/c1"));
	cr_assert_eq(rep->status, 0);
	envelope__free_unpacked(rep, NULL);

	expect_event(a, "cluster/c1");
	expect_event(b, "cluster/c1");
	quiet[0] = other;
	quiet[1] = plain;
	quiet[2] = trig;
	expect_quiet(quiet, 3);

	/* Subscribers still take requests after an event. */
	ping(a);
	close(a);
	close(b);
	close(other);
	close(plain);
	close(trig);
	server_stop();
}

Test(ipc, slow_subscriber_dropped)
{
	struct req r;
	Envelope *rep, *ev;
	unsigned got = 0;
	int slow = cli(), trig = cli();

	subscribe(slow, TOPIC_B);
	/* More than IPC_OUTQ_MAX queued for a reader that is not reading. */
	rep = call(trig, req_plain(&r, MSG_TYPE__MSG_NMD_REGION_RELEASE));
	cr_assert_eq(rep->status, 0);
	envelope__free_unpacked(rep, NULL);

	/* It gets at most part of the flood, then EOF. */
	while (ipc_sync_recv(slow, &ev, TIMEOUT_MS) == 0) {
		cr_assert_eq(ev->kind, KIND__KIND_EVENT);
		envelope__free_unpacked(ev, NULL);
		got++;
	}
	cr_assert_eq(errno, ECONNRESET, "slow subscriber: %s after %u events%s",
	    strerror(errno), got, srv_health());
	cr_assert_lt(got, FLOOD_EVENTS);
	close(slow);

	ping(trig);
	close(trig);
	wait_nconns(1);
	server_stop();
}

/*
 * One-way requests are served but never answered, not even when
 * refused (the server logs that), and the connection goes on.
 */
Test(ipc, one_way_requests_get_no_reply)
{
	struct req r;
	int fd = cli(), sub = cli();

	subscribe(sub, TOPIC_A);
	req_item(&r, MSG_TYPE__MSG_NMD_MKDIR, "cluster/oneway");
	r.env.kind = KIND__KIND_ONE_WAY;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	req_plain(&r, MSG_TYPE__MSG_NMD_UNPIN);
	r.env.kind = KIND__KIND_ONE_WAY;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	/* Served: its event is out before the echo's reply. */
	expect_event(sub, "cluster/oneway");
	/* The first frame back is the echo's: neither one-way was answered. */
	req_echo(&r, "after");
	r.env.id = 5;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	expect_echo(fd, 5, "after");
	cr_assert_not_null(strstr(server_log(), "refused one-way message type"),
	    "no refusal logged:\n%s", server_log());

	/* A one-way with the wrong payload still closes its connection. */
	req_item(&r, MSG_TYPE__MSG_NMD_SET_ATTR, "x");
	r.env.kind = KIND__KIND_ONE_WAY;
	cr_assert_eq(ipc_sync_send(fd, &r.env), 0);
	expect_closed(fd);
	close(sub);
	ping_new_client();
	server_stop();
}

/* The libevent client. */

struct slot {
	const char	*want;		/* expected reply `error` */
	int		 replies;
	int		 lost;		/* called with rep == NULL */
	int		 bad;		/* a reply that was not ours */
};

static void
on_reply(const Envelope *rep, void *arg)
{
	struct slot *s = arg;

	if (rep == NULL) {
		s->lost++;
		return;
	}
	s->replies++;
	if (rep->kind != KIND__KIND_REPLY || rep->status != 0 ||
	    strcmp(rep->error, s->want) != 0)
		s->bad++;
}

static struct {
	int	 events;
	int	 bad_events;
	int	 closed;
	int	 request_after_close;
	int	 errno_after_close;
} cs;

static void
on_event(struct ipc_conn *c, const Envelope *ev)
{
	(void)c;
	cs.events++;
	if (ev->kind != KIND__KIND_EVENT || ev->payload_case != ENVELOPE__PAYLOAD_CHANGE ||
	    strcmp(ev->change->path, "cluster/async") != 0)
		cs.bad_events++;
}

static void
on_close(struct ipc_conn *c)
{
	Envelope e = ENVELOPE__INIT;

	cr_assert_eq(ipc_conn_arg(c), &cs);
	cs.closed++;
	/* A closed connection takes no more requests. */
	e.type = MSG_TYPE__MSG_PING;
	cs.request_after_close = ipc_request(c, &e, on_reply, NULL);
	cs.errno_after_close = errno;
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Run the loop until cond holds; a 10 ms tick keeps each turn short. */
#define RUN_UNTIL(base, cond) do {						\
	uint64_t end_ = now_ms() + TIMEOUT_MS;				\
	while (!(cond)) {							\
		cr_assert_lt(now_ms(), end_, "timed out waiting for " #cond);	\
		event_base_loop((base), EVLOOP_ONCE);				\
	}									\
} while (0)

static int
all_answered(const struct slot *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (s[i].replies + s[i].lost == 0)
			return 0;
	return 1;
}

/* A loop that wakes every 10 ms (RUN_UNTIL checks then) and a client of the server. */
static struct ipc_conn *
client_loop(struct event_base **basep, struct event **tickp)
{
	struct timeval ten_ms = { 0, 10000 };
	struct ipc_conn *c;

	memset(&cs, 0, sizeof(cs));
	*basep = event_base_new();
	cr_assert_not_null(*basep);
	*tickp = event_new(*basep, -1, EV_PERSIST, tick, NULL);
	event_add(*tickp, &ten_ms);
	c = ipc_connect(*basep, srv.path, on_event, on_close, &cs);
	cr_assert_not_null(c, "ipc_connect: %s", strerror(errno));
	return c;
}

Test(ipc, async_client_matches_replies_and_fails_pending_on_close)
{
	static const char *vals[] = { "v0", "v1", "v2", "v3", "v4", "v5" };
	static const char *kept_paths[] = { "k0", "k1", "k2", "k3" };
	static const char *held_paths[] = { "h0", "h1", "h2" };
	struct slot echo_s[6], kept_s[4], held_s[3], sub_s, trig_s, flush_s, mark_s;
	struct event_base *base;
	struct event *t;
	struct ipc_conn *c;
	struct req r;
	size_t i;

	c = client_loop(&base, &t);

	/*
	 * All in flight at once: a subscription, echoes, requests the server
	 * keeps, an event trigger, then RELOAD, which answers the kept ones
	 * newest first. Replies out of order must still find their callers.
	 */
	sub_s = (struct slot){ .want = "" };
	req_plain(&r, MSG_TYPE__MSG_SUBSCRIBE);
	cr_assert_eq(ipc_request(c, &r.env, on_reply, &sub_s), 0);
	for (i = 0; i < nitems(vals); i++) {
		echo_s[i] = (struct slot){ .want = vals[i] };
		cr_assert_eq(ipc_request(c, req_echo(&r, vals[i]), on_reply, &echo_s[i]), 0);
	}
	for (i = 0; i < nitems(kept_paths); i++) {
		kept_s[i] = (struct slot){ .want = kept_paths[i] };
		req_item(&r, MSG_TYPE__MSG_NMD_RMDIR, kept_paths[i]);
		cr_assert_eq(ipc_request(c, &r.env, on_reply, &kept_s[i]), 0);
	}
	trig_s = (struct slot){ .want = "" };
	req_item(&r, MSG_TYPE__MSG_NMD_MKDIR, "cluster/async");
	cr_assert_eq(ipc_request(c, &r.env, on_reply, &trig_s), 0);
	flush_s = (struct slot){ .want = "" };
	cr_assert_eq(ipc_request(c, req_plain(&r, MSG_TYPE__MSG_NMD_RELOAD), on_reply,
	    &flush_s), 0);

	RUN_UNTIL(base, flush_s.replies + flush_s.lost > 0 && cs.events > 0);
	cr_assert(all_answered(echo_s, nitems(echo_s)));
	cr_assert(all_answered(kept_s, nitems(kept_s)));
	for (i = 0; i < nitems(echo_s); i++)
		cr_assert(echo_s[i].replies == 1 && echo_s[i].bad == 0,
		    "echo %zu: %d replies, %d wrong", i, echo_s[i].replies, echo_s[i].bad);
	for (i = 0; i < nitems(kept_s); i++)
		cr_assert(kept_s[i].replies == 1 && kept_s[i].bad == 0,
		    "kept %zu: %d replies, %d wrong", i, kept_s[i].replies, kept_s[i].bad);
	cr_assert(sub_s.replies == 1 && trig_s.replies == 1 && flush_s.replies == 1);
	cr_assert_eq(cs.events, 1);
	cr_assert_eq(cs.bad_events, 0);

	/* Requests never answered, then an echo to know they arrived. */
	for (i = 0; i < nitems(held_paths); i++) {
		held_s[i] = (struct slot){ .want = held_paths[i] };
		req_item(&r, MSG_TYPE__MSG_NMD_RMDIR, held_paths[i]);
		cr_assert_eq(ipc_request(c, &r.env, on_reply, &held_s[i]), 0);
	}
	mark_s = (struct slot){ .want = "marker" };
	cr_assert_eq(ipc_request(c, req_echo(&r, "marker"), on_reply, &mark_s), 0);
	RUN_UNTIL(base, mark_s.replies + mark_s.lost > 0);
	cr_assert_eq(mark_s.replies, 1);
	for (i = 0; i < nitems(held_s); i++)
		cr_assert_eq(held_s[i].replies + held_s[i].lost, 0);

	/* The server dies: pending requests fail with NULL, on_close runs. */
	server_stop();
	RUN_UNTIL(base, cs.closed > 0);
	for (i = 0; i < nitems(held_s); i++)
		cr_assert(held_s[i].lost == 1 && held_s[i].replies == 0,
		    "held %zu: %d lost, %d replies", i, held_s[i].lost, held_s[i].replies);
	cr_assert_eq(cs.closed, 1);
	cr_assert_eq(cs.request_after_close, -1);
	cr_assert_eq(cs.errno_after_close, ENOTCONN);

	/* Let the reaper free the connection if it has not run yet. */
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_free(t);
	event_base_free(base);
}

/* Without a callback, a request goes one-way: no reply comes to confuse the client. */
Test(ipc, async_client_one_way_request)
{
	struct event_base *base;
	struct event *t;
	struct ipc_conn *c;
	struct slot sub_s, mark_s;
	struct req r;

	c = client_loop(&base, &t);
	sub_s = (struct slot){ .want = "" };
	req_plain(&r, MSG_TYPE__MSG_SUBSCRIBE);
	cr_assert_eq(ipc_request(c, &r.env, on_reply, &sub_s), 0);
	req_item(&r, MSG_TYPE__MSG_NMD_MKDIR, "cluster/async");
	cr_assert_eq(ipc_request(c, &r.env, NULL, NULL), 0);
	cr_assert_eq(r.env.kind, KIND__KIND_ONE_WAY);
	cr_assert_eq(r.env.id, 0);
	mark_s = (struct slot){ .want = "marker" };
	cr_assert_eq(ipc_request(c, req_echo(&r, "marker"), on_reply, &mark_s), 0);
	RUN_UNTIL(base, mark_s.replies + mark_s.lost > 0 && cs.events > 0);
	cr_assert(sub_s.replies == 1 && mark_s.replies == 1 && mark_s.bad == 0);
	cr_assert_eq(cs.events, 1);
	cr_assert_eq(cs.closed, 0);

	server_stop();
	RUN_UNTIL(base, cs.closed > 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_free(t);
	event_base_free(base);
}

/* Credentials. */

enum { PEER_SERVED = 10, PEER_REFUSED, PEER_SETUID, PEER_CONNECT, PEER_SEND,
	PEER_TIMEOUT };

/*
 * A forked client, as `uid`, sends a PING: was it answered or shut out?
 * The exit status says which (no Criterion calls in the child).
 */
static int
peer_as(uid_t uid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 2, 0 };
	struct pollfd pfd;
	uint8_t *f, hdr[4];
	size_t len;
	ssize_t n;
	int st, fd;
	Envelope e = ENVELOPE__INIT;
	pid_t pid;

	e.type = MSG_TYPE__MSG_PING;
	e.id = 1;
	cr_assert_eq(ipc_frame_pack(&e, &f, &len), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		if (uid != 0 && (setgroups(0, NULL) == -1 || setgid(uid) == -1 ||
		    setuid(uid) == -1))
			_exit(PEER_SETUID);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		strcpy(sun.sun_path, srv.path);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
			_exit(PEER_CONNECT);
		/* Refused at accept: the write may already meet a closed socket. */
		if (write(fd, f, len) == -1 && errno != EPIPE && errno != ECONNRESET)
			_exit(PEER_SEND);
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 2000) != 1)
			_exit(PEER_TIMEOUT);
		n = read(fd, hdr, sizeof(hdr));
		_exit(n > 0 ? PEER_SERVED : PEER_REFUSED);
	}
	free(f);
	cr_assert_eq(wait_child(pid, &st, TIMEOUT_MS), pid, "client hung");
	cr_assert(WIFEXITED(st), "client status %#x", st);
	return WEXITSTATUS(st);
}

Test(ipc, peercred_refuses_other_users)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run a client as another user");
	/* Let nobody reach the socket: only SO_PEERCRED stands in the way. */
	cr_assert_eq(chmod(srv.dir, 0711), 0);
	cr_assert_eq(chmod(srv.path, 0666), 0);

	/* The same client as root is served, so a refusal means something. */
	cr_assert_eq(peer_as(0), PEER_SERVED);
	cr_assert_eq(peer_as(NOBODY), PEER_REFUSED);
	ping_new_client();
	wait_nconns(1);
	server_stop();
}
