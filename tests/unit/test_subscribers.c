/*
 * common/subscribers.c against real sockets: a forked child serves the
 * event queue (subscribe, ack, and a request that queues a node event)
 * on its own event loop; the test's clients are blocking sockets. Every
 * wait has a timeout, so a hung server fails a test instead of hanging.
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

#define ACK_TIMEOUT_MS	1000	/* the server's */
#define TIMEOUT_MS	5000	/* any single wait for the server */
#define QUIET_MS	300	/* "nothing arrives" means within this */

static struct subscribers child_subs;

static struct sub_client *
client_of(struct ipc_conn *c)
{
	return subs_client_of(&child_subs, c, sizeof(struct sub_client));
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
closed(struct ipc_conn *c)
{
	struct sub_client *cl = ipc_conn_data(c);

	if (cl == NULL)
		return;
	subs_client_remove(&child_subs, cl);
	subs_client_drop_ack(&child_subs, cl);
	free(cl);
}

static const struct ipc_handler table[] = {
	{ MSG_TYPE__MSG_HBD_SUBSCRIBE, ENVELOPE__PAYLOAD_HB_SUBSCRIBE, h_subscribe },
	{ MSG_TYPE__MSG_HBD_EVENT_ACK, ENVELOPE__PAYLOAD_HB_ACK, h_ack },
	{ MSG_TYPE__MSG_HBD_FENCE, ENVELOPE__PAYLOAD_FENCED_EVENT, h_event },
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
	log_init("test_subscribers-server", 0);
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
	strcpy(srv.dir, "/tmp/test_subscribers.XXXXXX");
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

TestSuite(subscribers, .init = setup, .fini = teardown, .timeout = 30);

static void
call(int fd, Envelope *req)
{
	Envelope *rep = NULL;

	cr_assert_eq(ipc_sync_call(fd, req, &rep, TIMEOUT_MS), 0, "no reply to type %d: %s",
	    req->type, strerror(errno));
	cr_assert_eq(rep->status, 0, "type %d refused: %s", req->type, rep->error);
	envelope__free_unpacked(rep, NULL);
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

Test(subscribers, role_by_role_after_acks_observers_at_once)
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

Test(subscribers, unacked_event_moves_on_after_the_timeout)
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

Test(subscribers, closed_subscriber_does_not_hold_the_queue)
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

Test(subscribers, late_subscriber_gets_only_later_events)
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

Test(subscribers, unknown_role_refused)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;
	int fd = ipc_sync_connect(srv.path);

	sub.role = HBD__ROLE__ROLE_FS + 1;
	req.type = MSG_TYPE__MSG_HBD_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_HB_SUBSCRIBE;
	req.hb_subscribe = &sub;
	cr_assert_eq(ipc_sync_call(fd, &req, &rep, TIMEOUT_MS), 0);
	cr_assert_eq(rep->status, EINVAL);
	envelope__free_unpacked(rep, NULL);
}
