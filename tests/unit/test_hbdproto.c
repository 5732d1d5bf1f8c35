/*
 * The parts of hbd.sock's protocol hbd and pcmkd share, against real
 * sockets: common/subscribers.c (subscribe, ack, and a request that
 * queues a node event) and common/writers.c (register, unregister,
 * status). A forked child serves them on its own event loop, as a
 * daemon would; the test's clients are blocking sockets. Every wait has
 * a timeout, so a hung server fails a test instead of hanging.
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "subscribers.h"
#include "util.h"
#include "writers.h"

#define ACK_TIMEOUT_MS	1000	/* the server's */
#define TIMEOUT_MS	5000	/* any single wait for the server */
#define QUIET_MS	300	/* "nothing arrives" means within this */

static struct subscribers child_subs;
static struct disk_writers child_writers = LIST_HEAD_INITIALIZER(child_writers);
static const char *child_fence_reason;	/* NULL: not fenced */

/* A client record as a daemon keeps it: subscribers.c's part first. */
struct test_client {
	struct sub_client	 sub;
	struct disk_writer	*writer;
};

static struct test_client *
test_client_of(struct ipc_conn *c)
{
	return (struct test_client *)subs_client_of(&child_subs, c, sizeof(struct test_client));
}

static struct sub_client *
client_of(struct ipc_conn *c)
{
	return &test_client_of(c)->sub;
}

static void
h_subscribe(struct ipc_conn *c, const Envelope *req)
{
	if (subs_subscribe(&child_subs, client_of(c), req) == 0)
		ipc_reply_status(c, req, 0, NULL);
}

static void
h_ack(struct ipc_conn *c, const Envelope *req)
{
	subs_ack(&child_subs, client_of(c), req->hb_ack->seq);
	ipc_reply_status(c, req, 0, NULL);
}

/* MSG_HBD_FENCE stands in for whatever a daemon decides: node 7 up, its reason. */
static void
h_event(struct ipc_conn *c, const Envelope *req)
{
	subs_node_event(&child_subs, 1, 7, 1, "", req->fenced_event->reason, 0, 0);
	ipc_reply_status(c, req, 0, NULL);
}

static void
h_register(struct ipc_conn *c, const Envelope *req)
{
	struct test_client *cl = test_client_of(c);
	struct disk_writer *w;

	w = writer_register(&child_writers, c, req, cl->writer, child_fence_reason);
	if (w == NULL)
		return;
	cl->writer = w;
	ipc_reply_status(c, req, 0, NULL);
}

static void
h_unregister(struct ipc_conn *c, const Envelope *req)
{
	if (writer_unregister(c, req, &test_client_of(c)->writer) == 0)
		ipc_reply_status(c, req, 0, NULL);
}

static void
h_status(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Hbd__HbStatus st;

	hbd__hb_status__init(&st);
	writers_fill_status(&child_writers, &st);
	rep.payload_case = ENVELOPE__PAYLOAD_HB_STATUS;
	rep.hb_status = &st;
	ipc_reply(c, req, &rep);
	writers_free_status(&st);
}

/* MSG_HBD_CLEAR_FENCE stands in for this node fencing itself. */
static void
h_fence(struct ipc_conn *c, const Envelope *req)
{
	child_fence_reason = "a test";
	ipc_reply_status(c, req, 0, NULL);
}

static void
closed(struct ipc_conn *c)
{
	struct test_client *cl = ipc_conn_data(c);

	if (cl == NULL)
		return;
	subs_client_remove(&child_subs, &cl->sub);
	if (cl->writer != NULL)
		writer_gone(cl->writer);
	subs_client_drop_ack(&child_subs, &cl->sub);
	free(cl);
}

static const struct ipc_handler table[] = {
	{ MSG_TYPE__MSG_HBD_SUBSCRIBE, ENVELOPE__PAYLOAD_HB_SUBSCRIBE, h_subscribe },
	{ MSG_TYPE__MSG_HBD_EVENT_ACK, ENVELOPE__PAYLOAD_HB_ACK, h_ack },
	{ MSG_TYPE__MSG_HBD_FENCE, ENVELOPE__PAYLOAD_FENCED_EVENT, h_event },
	{ MSG_TYPE__MSG_HBD_REGISTER_WRITER, ENVELOPE__PAYLOAD_REGISTER_WRITER, h_register },
	{ MSG_TYPE__MSG_HBD_UNREGISTER_WRITER, ENVELOPE__PAYLOAD__NOT_SET, h_unregister },
	{ MSG_TYPE__MSG_HBD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, h_status },
	{ MSG_TYPE__MSG_HBD_CLEAR_FENCE, ENVELOPE__PAYLOAD__NOT_SET, h_fence },
};

static struct {
	char	dir[64];
	char	path[128];
	pid_t	pid;
} srv;

static __attribute__((noreturn)) void
server_main(pid_t parent, int ready)
{
	struct event_base *base;
	struct ipc_server *s;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGPIPE, SIG_IGN);
	log_init("test_hbdproto-server", 0);
	if ((base = event_base_new()) == NULL)
		_exit(2);
	subs_init(&child_subs, base, ACK_TIMEOUT_MS);
	if ((s = ipc_server_listen(base, srv.path, "testd", table, nitems(table), NULL)) == NULL)
		_exit(3);
	ipc_server_on_close(s, closed);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	close(ready);
	event_base_dispatch(base);
	_exit(5);
}

static void
setup(void)
{
	struct pollfd pfd;
	pid_t parent = getpid();
	int ready[2];
	char c;

	signal(SIGPIPE, SIG_IGN);
	strcpy(srv.dir, "/tmp/test_hbdproto.XXXXXX");
	cr_assert_not_null(mkdtemp(srv.dir));
	snprintf(srv.path, sizeof(srv.path), "%s/testd.sock", srv.dir);
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
	cr_assert_eq(read(ready[0], &c, 1), 1, "server failed to listen");
	close(ready[0]);
}

static void
teardown(void)
{
	int st;

	if (srv.pid > 0) {
		kill(srv.pid, SIGKILL);
		waitpid(srv.pid, &st, 0);
	}
	unlink(srv.path);
	rmdir(srv.dir);
}

TestSuite(hbdproto, .init = setup, .fini = teardown, .timeout = 30);

/* req's reply, whose status must be `status`. */
static Envelope *
call_status(int fd, Envelope *req, int status)
{
	Envelope *rep = NULL;

	cr_assert_eq(ipc_sync_call(fd, req, &rep, TIMEOUT_MS), 0, "no reply to type %d: %s",
	    req->type, strerror(errno));
	cr_assert_eq(rep->status, status, "type %d: status %d (%s), not %d", req->type,
	    rep->status, rep->error, status);
	return rep;
}

static void
call(int fd, Envelope *req)
{
	envelope__free_unpacked(call_status(fd, req, 0), NULL);
}

/* A request of type with no payload; its reply's status must be `status`. */
static Envelope *
bare(int fd, MsgType type, int status)
{
	Envelope req = ENVELOPE__INIT;

	req.type = type;
	return call_status(fd, &req, status);
}

static int
subscriber(Hbd__Role role)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;
	int fd = ipc_sync_connect(srv.path);

	cr_assert_geq(fd, 0, "connect: %s", strerror(errno));
	sub.role = role;
	req.type = MSG_TYPE__MSG_HBD_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_HB_SUBSCRIBE;
	req.hb_subscribe = &sub;
	call(fd, &req);
	return fd;
}

static void
decide(int fd, const char *reason)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__FencedEvent fe = HBD__FENCED_EVENT__INIT;

	fe.reason = (char *)reason;
	req.type = MSG_TYPE__MSG_HBD_FENCE;
	req.payload_case = ENVELOPE__PAYLOAD_FENCED_EVENT;
	req.fenced_event = &fe;
	call(fd, &req);
}

static void
ack(int fd, uint64_t seq)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbAck a = HBD__HB_ACK__INIT;

	a.seq = seq;
	req.type = MSG_TYPE__MSG_HBD_EVENT_ACK;
	req.payload_case = ENVELOPE__PAYLOAD_HB_ACK;
	req.hb_ack = &a;
	call(fd, &req);
}

/* The next event on fd, which must be the node event with this reason; its seq. */
static uint64_t
expect_event(int fd, const char *reason)
{
	Envelope *ev = NULL;
	uint64_t seq;

	cr_assert_eq(ipc_sync_recv(fd, &ev, TIMEOUT_MS), 0, "no event: %s", strerror(errno));
	cr_assert_eq(ev->kind, KIND__KIND_EVENT);
	cr_assert_eq(ev->type, MSG_TYPE__MSG_HBD_NODE_EVENT);
	cr_assert_eq(ev->node_event->node, 7);
	cr_assert_str_eq(ev->node_event->reason, reason);
	seq = ev->node_event->seq;
	envelope__free_unpacked(ev, NULL);
	return seq;
}

static void
expect_nothing(int fd)
{
	Envelope *ev = NULL;

	cr_assert_eq(ipc_sync_recv(fd, &ev, QUIET_MS), -1, "got type %d too early",
	    ev != NULL ? (int)ev->type : -1);
	cr_assert_eq(errno, ETIMEDOUT);
}

Test(hbdproto, role_by_role_after_acks_observers_at_once)
{
	int ctl = ipc_sync_connect(srv.path);
	int fs = subscriber(HBD__ROLE__ROLE_FS);
	int dlm = subscriber(HBD__ROLE__ROLE_DLM);
	int net = subscriber(HBD__ROLE__ROLE_NET);
	int obs = subscriber(HBD__ROLE__ROLE_OBSERVER);
	uint64_t seq;

	cr_assert_geq(ctl, 0);
	decide(ctl, "first");
	decide(ctl, "second");
	cr_assert_eq(expect_event(obs, "first"), 1);
	cr_assert_eq(expect_event(obs, "second"), 2);
	seq = expect_event(net, "first");
	cr_assert_eq(seq, 1);
	expect_nothing(dlm);
	ack(net, seq);
	cr_assert_eq(expect_event(dlm, "first"), 1);
	expect_nothing(fs);
	expect_nothing(net);	/* the second waits for the first to pass fs */
	ack(dlm, 1);
	cr_assert_eq(expect_event(fs, "first"), 1);
	ack(fs, 1);
	cr_assert_eq(expect_event(net, "second"), 2);
}

Test(hbdproto, unacked_event_moves_on_after_the_timeout)
{
	int ctl = ipc_sync_connect(srv.path);
	int net = subscriber(HBD__ROLE__ROLE_NET);
	int dlm = subscriber(HBD__ROLE__ROLE_DLM);
	uint64_t start;

	decide(ctl, "slow");
	start = now_ms();
	expect_event(net, "slow");
	expect_event(dlm, "slow");
	cr_assert_geq(now_ms() - start, ACK_TIMEOUT_MS - 50,
	    "passed on after %llu ms, before the ack timeout",
	    (unsigned long long)(now_ms() - start));
}

Test(hbdproto, closed_subscriber_does_not_hold_the_queue)
{
	int ctl = ipc_sync_connect(srv.path);
	int net = subscriber(HBD__ROLE__ROLE_NET);
	int dlm = subscriber(HBD__ROLE__ROLE_DLM);
	uint64_t start;

	decide(ctl, "gone");
	expect_event(net, "gone");
	start = now_ms();
	close(net);
	expect_event(dlm, "gone");
	cr_assert_lt(now_ms() - start, ACK_TIMEOUT_MS,
	    "the queue waited for the ack timeout of a closed subscriber");
}

Test(hbdproto, late_subscriber_gets_only_later_events)
{
	int ctl = ipc_sync_connect(srv.path);
	int net = subscriber(HBD__ROLE__ROLE_NET);
	int late;

	decide(ctl, "before");
	late = subscriber(HBD__ROLE__ROLE_NET);
	cr_assert_eq(expect_event(net, "before"), 1);
	expect_nothing(late);
	ack(net, 1);
	decide(ctl, "after");
	cr_assert_eq(expect_event(late, "after"), 2);
	cr_assert_eq(expect_event(net, "after"), 2);
}

Test(hbdproto, unknown_role_refused)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;
	int fd = ipc_sync_connect(srv.path);

	sub.role = HBD__ROLE__ROLE_FS + 1;
	req.type = MSG_TYPE__MSG_HBD_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_HB_SUBSCRIBE;
	req.hb_subscribe = &sub;
	envelope__free_unpacked(call_status(fd, &req, EINVAL), NULL);
}

static Envelope *
register_writer(int fd, const char *what, const char *region, int status)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__RegisterWriter rw = HBD__REGISTER_WRITER__INIT;

	rw.what = (char *)what;
	rw.region = (char *)region;
	req.type = MSG_TYPE__MSG_HBD_REGISTER_WRITER;
	req.payload_case = ENVELOPE__PAYLOAD_REGISTER_WRITER;
	req.register_writer = &rw;
	return call_status(fd, &req, status);
}

/* How many writers the status lists; the first's fields when there is one. */
static size_t
status_writers(int fd, Hbd__Writer *first)
{
	Envelope *rep = bare(fd, MSG_TYPE__MSG_HBD_STATUS, 0);
	size_t n;

	cr_assert_eq(rep->payload_case, ENVELOPE__PAYLOAD_HB_STATUS);
	n = rep->hb_status->n_writers;
	if (n > 0) {
		first->pid = rep->hb_status->writers[0]->pid;
		snprintf(first->what, 64, "%s", rep->hb_status->writers[0]->what);
		snprintf(first->region, 64, "%s", rep->hb_status->writers[0]->region);
	}
	envelope__free_unpacked(rep, NULL);
	return n;
}

Test(hbdproto, writer_registered_once_listed_and_unregistered_once)
{
	int fd = ipc_sync_connect(srv.path);
	char what[64], region[64];
	Hbd__Writer w = { .what = what, .region = region };

	cr_assert_geq(fd, 0);
	envelope__free_unpacked(register_writer(fd, "fsd", "VOL", 0), NULL);
	envelope__free_unpacked(register_writer(fd, "fsd", "VOL", EEXIST), NULL);
	cr_assert_eq(status_writers(fd, &w), 1);
	cr_assert_eq(w.pid, (int32_t)getpid());
	cr_assert_str_eq(what, "fsd");
	cr_assert_str_eq(region, "VOL");
	envelope__free_unpacked(bare(fd, MSG_TYPE__MSG_HBD_UNREGISTER_WRITER, 0), NULL);
	envelope__free_unpacked(bare(fd, MSG_TYPE__MSG_HBD_UNREGISTER_WRITER, ENOENT), NULL);
	cr_assert_eq(status_writers(fd, &w), 0);
}

Test(hbdproto, writer_gone_with_its_connection)
{
	int fd = ipc_sync_connect(srv.path), other = ipc_sync_connect(srv.path);
	char what[64], region[64];
	Hbd__Writer w = { .what = what, .region = region };
	uint64_t end = now_ms() + TIMEOUT_MS;

	envelope__free_unpacked(register_writer(fd, "fsd", "", 0), NULL);
	cr_assert_eq(status_writers(other, &w), 1);
	close(fd);
	while (status_writers(other, &w) != 0 && now_ms() < end)
		usleep(10000);
	cr_assert_eq(status_writers(other, &w), 0, "a closed writer is still listed");
}

Test(hbdproto, fenced_node_takes_no_writer)
{
	int fd = ipc_sync_connect(srv.path);
	char what[64], region[64];
	Hbd__Writer w = { .what = what, .region = region };
	Envelope *rep;

	envelope__free_unpacked(bare(fd, MSG_TYPE__MSG_HBD_CLEAR_FENCE, 0), NULL);
	rep = register_writer(fd, "fsd", "VOL", EPERM);
	cr_assert_str_eq(rep->error, "this node is fenced (a test)");
	envelope__free_unpacked(rep, NULL);
	cr_assert_eq(status_writers(fd, &w), 0);
}
