/*
 * libo2dlm without dlmd: the wire layer against a scripted peer on a
 * socketpair (events before replies, replies out of order, refusals, a
 * peer that dies or sends a bad frame), and the libo2dlm API against a
 * small fake dlmd on a real dlmd.sock. The peers run in a thread and
 * use the blocking IPC helpers; every wait has a timeout.
 */
#include <criterion/criterion.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "o2dlm.h"

#define TIMEOUT_MS	5000
#define NFLIGHT		200

/* What the callbacks saw. */
struct seen {
	int			 asts, basts, domain_events;
	struct dlmc_ast		 ast;
	struct dlmc_bast	 bast;
	struct dlmc_domain_event de;
	int			 replies;
	int			 reply_status[NFLIGHT];
	uint64_t		 reply_lockid[NFLIGHT];
};

static void
on_ast(struct dlmc *c, const struct dlmc_ast *a, void *arg)
{
	struct seen *s = arg;

	(void)c;
	s->asts++;
	s->ast = *a;
}

static void
on_bast(struct dlmc *c, const struct dlmc_bast *b, void *arg)
{
	struct seen *s = arg;

	(void)c;
	s->basts++;
	s->bast = *b;
}

static void
on_domain_event(struct dlmc *c, const struct dlmc_domain_event *de, void *arg)
{
	struct seen *s = arg;

	(void)c;
	s->domain_events++;
	s->de = *de;
}

static const struct dlmc_callbacks callbacks = { on_ast, on_bast, on_domain_event };

/* Peer side: send one frame of each kind. */
static void
peer_send(int fd, Envelope *env)
{
	cr_assert_eq(ipc_sync_send(fd, env), 0);
}

static Envelope *
peer_recv(int fd)
{
	Envelope *env = NULL;

	cr_assert_eq(ipc_sync_recv(fd, &env, TIMEOUT_MS), 0, "peer: %s", strerror(errno));
	return env;
}

static void
send_ast(int fd, uint64_t lockid, uint64_t user, int status, int mode,
    const uint8_t *lvb, int valid)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__Ast a = DLMD__AST__INIT;

	a.lockid = lockid;
	a.user = user;
	a.status = status;
	a.mode = (Dlmd__Mode)mode;
	if (lvb != NULL) {
		a.lvb.data = (uint8_t *)lvb;
		a.lvb.len = DLMC_LVB_LEN;
	}
	a.lvb_valid = valid;
	env.type = MSG_TYPE__MSG_DLMD_AST;
	env.kind = KIND__KIND_EVENT;
	env.payload_case = ENVELOPE__PAYLOAD_AST;
	env.ast = &a;
	peer_send(fd, &env);
}

static void
send_bast(int fd, uint64_t lockid, int blocked)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__Bast b = DLMD__BAST__INIT;

	b.lockid = lockid;
	b.blocked = (Dlmd__Mode)blocked;
	env.type = MSG_TYPE__MSG_DLMD_BAST;
	env.kind = KIND__KIND_EVENT;
	env.payload_case = ENVELOPE__PAYLOAD_BAST;
	env.bast = &b;
	peer_send(fd, &env);
}

static void
send_domain_event(int fd, const char *domain, int kind, unsigned node)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__DomainEvent de = DLMD__DOMAIN_EVENT__INIT;

	de.domain = (char *)domain;
	de.kind = (Dlmd__DomainEventKind)kind;
	de.node = node;
	env.type = MSG_TYPE__MSG_DLMD_DOMAIN_EVENT;
	env.kind = KIND__KIND_EVENT;
	env.payload_case = ENVELOPE__PAYLOAD_DOMAIN_EVENT;
	env.domain_event = &de;
	peer_send(fd, &env);
}

/* A reply to req: status 0 with LockAccepted{lockid} for locks. */
static void
send_reply(int fd, const Envelope *req, int status, const char *error,
    uint64_t lockid)
{
	Envelope env = ENVELOPE__INIT;
	Dlmd__LockAccepted la = DLMD__LOCK_ACCEPTED__INIT;
	Dlmd__DomainInfo di = DLMD__DOMAIN_INFO__INIT;
	uint32_t members[2] = { 1, 2 };

	env.type = req->type;
	env.id = req->id;
	env.kind = KIND__KIND_REPLY;
	env.status = status;
	env.error = (char *)(error != NULL ? error : "");
	if (status == 0 && req->type == MSG_TYPE__MSG_DLMD_LOCK) {
		la.lockid = lockid;
		env.payload_case = ENVELOPE__PAYLOAD_LOCK_ACCEPTED;
		env.lock_accepted = &la;
	} else if (status == 0 && req->type == MSG_TYPE__MSG_DLMD_JOIN) {
		di.name = req->domain->name;
		di.key = 0x1234;
		di.members = members;
		di.n_members = 2;
		di.directory = 1;
		di.protocol_major = 1;
		di.protocol_minor = 3;
		env.payload_case = ENVELOPE__PAYLOAD_DOMAIN_INFO;
		env.domain_info = &di;
	}
	peer_send(fd, &env);
}

/* A scripted peer on the other end of a socketpair, in a thread. */
struct peer {
	pthread_t	 thread;
	int		 fd;
	void		(*script)(int fd);
};

static void *
peer_main(void *arg)
{
	struct peer *p = arg;

	p->script(p->fd);
	return NULL;
}

static struct dlmc *
start_peer(struct peer *p, void (*script)(int), struct seen *s)
{
	int sv[2];
	struct dlmc *c;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p->fd = sv[1];
	p->script = script;
	cr_assert_eq(pthread_create(&p->thread, NULL, peer_main, p), 0);
	c = dlmc_open_fd(sv[0], &callbacks, s);
	cr_assert_not_null(c);
	dlmc_set_timeout(c, TIMEOUT_MS);
	return c;
}

static void
stop_peer(struct peer *p, struct dlmc *c)
{
	dlmc_close(c);
	pthread_join(p->thread, NULL);
	close(p->fd);
}

static void
lock_args(struct dlmc_lock_args *a, const char *name, int mode, uint32_t flags)
{
	memset(a, 0, sizeof(*a));
	a->domain = "dom";
	a->name = name;
	a->namelen = strlen(name);
	a->mode = mode;
	a->flags = flags;
}

/* Every kind of event arrives between the lock request and its reply. */
static void
script_events_first(int fd)
{
	Envelope *req = peer_recv(fd);
	uint8_t lvb[DLMC_LVB_LEN];

	cr_assert_eq(req->type, MSG_TYPE__MSG_DLMD_LOCK);
	cr_assert_eq(req->lock_request->mode, DLMD__MODE__MODE_EX);
	cr_assert_eq(req->lock_request->flags, DLMC_F_VALBLK);
	cr_assert_eq(req->lock_request->name.len, 4);
	memset(lvb, 0xab, sizeof(lvb));
	send_bast(fd, 99, DLMC_PR);
	send_domain_event(fd, "dom", DLMC_NODE_DOWN, 3);
	send_ast(fd, 7, 42, 0, DLMC_EX, lvb, 1);
	send_ast(fd, 98, 0, 0, DLMC_PR, NULL, 1);
	send_reply(fd, req, 0, NULL, 7);
	envelope__free_unpacked(req, NULL);
}

Test(dlmc, events_before_reply_are_queued_then_delivered, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_events_first, &s);
	struct dlmc_lock_args a;
	struct dlmc_ast ast;
	uint64_t id = 0;

	lock_args(&a, "res1", DLMC_EX, DLMC_F_VALBLK);
	a.user = 42;
	cr_assert_eq(dlmc_lock(c, &a, &id), 0, "%s", dlmc_error(c));
	cr_assert_eq(id, 7);
	/* Nothing ran inside the blocking call. */
	cr_assert_eq(s.basts + s.asts + s.domain_events, 0);
	cr_assert_eq(dlmc_queued(c), 4);
	/* Waiting runs what came before the Ast, and takes the Ast. */
	cr_assert_eq(dlmc_wait_ast(c, 7, TIMEOUT_MS, &ast), 0);
	cr_assert_eq(ast.lockid, 7);
	cr_assert_eq(ast.user, 42);
	cr_assert_eq(ast.status, 0);
	cr_assert_eq(ast.mode, DLMC_EX);
	cr_assert(ast.has_lvb && ast.lvb_valid);
	cr_assert_eq(ast.lvb[63], 0xab);
	cr_assert_eq(s.basts, 1);
	cr_assert_eq(s.bast.lockid, 99);
	cr_assert_eq(s.bast.blocked, DLMC_PR);
	cr_assert_eq(s.domain_events, 1);
	cr_assert_str_eq(s.de.domain, "dom");
	cr_assert_eq(s.de.kind, DLMC_NODE_DOWN);
	cr_assert_eq(s.de.node, 3);
	/* The Ast of another lock is still queued, for dispatch. */
	cr_assert_eq(s.asts, 0);
	cr_assert_eq(dlmc_queued(c), 1);
	cr_assert_eq(dlmc_dispatch(c), 1);
	cr_assert_eq(s.asts, 1);
	cr_assert_eq(s.ast.lockid, 98);
	cr_assert_not(s.ast.has_lvb);
	stop_peer(&p, c);
}

/* NFLIGHT lock requests, answered newest first, events in between. */
static void
script_out_of_order(int fd)
{
	Envelope *reqs[NFLIGHT];
	int i;

	for (i = 0; i < NFLIGHT; i++)
		reqs[i] = peer_recv(fd);
	for (i = NFLIGHT - 1; i >= 0; i--) {
		if (i % 10 == 0)
			send_bast(fd, (uint64_t)i, DLMC_EX);
		/* The lock id is the request's user field, times 3. */
		send_reply(fd, reqs[i], 0, NULL, reqs[i]->lock_request->user * 3);
		envelope__free_unpacked(reqs[i], NULL);
	}
}

struct slot {
	struct seen	*s;
	int		 i;
};

static void
on_slot_reply(struct dlmc *c, int status, uint64_t lockid, void *arg)
{
	struct slot *sl = arg;

	(void)c;
	sl->s->replies++;
	sl->s->reply_status[sl->i] = status;
	sl->s->reply_lockid[sl->i] = lockid;
}

Test(dlmc, many_requests_in_flight, .timeout = 10)
{
	struct seen s = { 0 };
	struct slot slots[NFLIGHT];
	struct peer p;
	struct dlmc *c = start_peer(&p, script_out_of_order, &s);
	struct dlmc_lock_args a;
	struct pollfd pfd;
	int i, n;

	lock_args(&a, "r", DLMC_PR, 0);
	for (i = 0; i < NFLIGHT; i++) {
		slots[i].s = &s;
		slots[i].i = i;
		a.user = (uint64_t)i + 1;
		cr_assert_eq(dlmc_lock_send(c, &a, on_slot_reply, &slots[i]), 0);
	}
	pfd.fd = dlmc_fd(c);
	pfd.events = POLLIN;
	while (s.replies < NFLIGHT) {
		cr_assert_gt(poll(&pfd, 1, TIMEOUT_MS), 0, "replies stopped at %d", s.replies);
		n = dlmc_dispatch(c);
		cr_assert_geq(n, 0);
	}
	for (i = 0; i < NFLIGHT; i++) {
		cr_assert_eq(s.reply_status[i], 0);
		cr_assert_eq(s.reply_lockid[i], ((uint64_t)i + 1) * 3);
	}
	cr_assert_eq(s.basts, NFLIGHT / 10);
	stop_peer(&p, c);
}

static void
script_refuse(int fd)
{
	Envelope *req = peer_recv(fd);

	send_ast(fd, 5, 0, 0, DLMC_PR, NULL, 1);
	send_reply(fd, req, EBUSY, "a convert is already pending", 0);
	envelope__free_unpacked(req, NULL);
}

Test(dlmc, refusal_sets_errno_and_reason, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_refuse, &s);
	struct dlmc_lock_args a;
	uint64_t id;

	lock_args(&a, "r", DLMC_EX, DLMC_F_CONVERT);
	a.lockid = 5;
	errno = 0;
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_str_eq(dlmc_error(c), "a convert is already pending");
	/* The event read on the way is kept. */
	cr_assert_eq(dlmc_dispatch(c), 1);
	cr_assert_eq(s.asts, 1);
	stop_peer(&p, c);
}

/* Read two requests, answer none, and hang up. */
static void
script_hangup(int fd)
{
	Envelope *r1 = peer_recv(fd), *r2 = peer_recv(fd);

	send_domain_event(fd, "dom", DLMC_RECOVERY_DONE, 2);
	envelope__free_unpacked(r1, NULL);
	envelope__free_unpacked(r2, NULL);
	shutdown(fd, SHUT_RDWR);
}

static void
on_status_reply(struct dlmc *c, int status, uint64_t lockid, void *arg)
{
	struct seen *s = arg;

	(void)c;
	(void)lockid;
	s->reply_status[s->replies++] = status;
}

Test(dlmc, lost_connection_fails_every_request, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_hangup, &s);
	struct dlmc_lock_args a;
	uint64_t id;

	lock_args(&a, "r", DLMC_EX, 0);
	cr_assert_eq(dlmc_lock_send(c, &a, on_status_reply, &s), 0);
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	cr_assert_eq(errno, ECONNRESET);
	/* What came before the hangup first, then the failed request. */
	cr_assert_eq(dlmc_dispatch(c), 2);
	cr_assert_eq(s.domain_events, 1);
	cr_assert_eq(s.de.kind, DLMC_RECOVERY_DONE);
	cr_assert_eq(s.replies, 1);
	cr_assert_eq(s.reply_status[0], ECONNRESET);
	cr_assert_eq(dlmc_dispatch(c), -1);
	cr_assert_eq(dlmc_lock_send(c, &a, on_status_reply, &s), -1);
	cr_assert_eq(errno, ECONNRESET);
	stop_peer(&p, c);
}

static void
script_huge_frame(int fd)
{
	Envelope *req = peer_recv(fd);
	uint8_t hdr[4] = { 0x7f, 0xff, 0xff, 0xff };

	cr_assert_eq(write(fd, hdr, sizeof(hdr)), 4);
	envelope__free_unpacked(req, NULL);
}

Test(dlmc, oversized_frame_is_a_protocol_error, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_huge_frame, &s);

	cr_assert_eq(dlmc_join(c, "dom", 0, NULL), -1);
	cr_assert_eq(errno, EPROTO);
	stop_peer(&p, c);
}

/* Accept the lock, never grant it; grant the cancel. */
static void
script_cancel(int fd)
{
	Envelope *req = peer_recv(fd), *un;

	send_reply(fd, req, 0, NULL, 11);
	un = peer_recv(fd);
	cr_assert_eq(un->type, MSG_TYPE__MSG_DLMD_UNLOCK);
	cr_assert_eq(un->unlock_request->lockid, 11);
	cr_assert_eq(un->unlock_request->flags, DLMC_F_CANCEL);
	send_reply(fd, un, 0, NULL, 0);
	send_ast(fd, 11, 0, ECANCELED, DLMC_NL, NULL, 1);
	envelope__free_unpacked(req, NULL);
	envelope__free_unpacked(un, NULL);
}

Test(dlmc, lock_wait_timeout_cancels, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_cancel, &s);
	struct dlmc_lock_args a;
	struct dlmc_ast ast;
	uint64_t id;

	lock_args(&a, "r", DLMC_EX, 0);
	cr_assert_eq(dlmc_lock_wait(c, &a, 100, &id, &ast), -1);
	cr_assert_eq(errno, ETIMEDOUT);
	cr_assert_eq(id, 11);
	cr_assert_eq(ast.status, ECANCELED);
	cr_assert_eq(s.asts, 0);
	stop_peer(&p, c);
}

/* The cancel comes too late: the grant won. */
static void
script_cancel_too_late(int fd)
{
	Envelope *req = peer_recv(fd), *un;

	send_reply(fd, req, 0, NULL, 12);
	un = peer_recv(fd);
	send_ast(fd, 12, 0, 0, DLMC_EX, NULL, 1);
	send_reply(fd, un, EALREADY, "granted meanwhile", 0);
	envelope__free_unpacked(req, NULL);
	envelope__free_unpacked(un, NULL);
}

Test(dlmc, lock_wait_keeps_a_grant_that_won_the_race, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_cancel_too_late, &s);
	struct dlmc_lock_args a;
	struct dlmc_ast ast;
	uint64_t id;

	lock_args(&a, "r", DLMC_EX, 0);
	cr_assert_eq(dlmc_lock_wait(c, &a, 100, &id, &ast), 0);
	cr_assert_eq(ast.status, 0);
	cr_assert_eq(ast.mode, DLMC_EX);
	stop_peer(&p, c);
}

static void
script_notqueued(int fd)
{
	Envelope *req = peer_recv(fd);

	cr_assert_eq(req->lock_request->flags, DLMC_F_NOQUEUE);
	send_reply(fd, req, 0, NULL, 13);
	send_ast(fd, 13, 0, EAGAIN, DLMC_NL, NULL, 1);
	envelope__free_unpacked(req, NULL);
}

Test(dlmc, trylock_not_grantable_is_eagain, .timeout = 10)
{
	struct seen s = { 0 };
	struct peer p;
	struct dlmc *c = start_peer(&p, script_notqueued, &s);
	struct dlmc_lock_args a;
	struct dlmc_ast ast;
	uint64_t id;

	lock_args(&a, "r", DLMC_EX, DLMC_F_NOQUEUE);
	cr_assert_eq(dlmc_lock_wait(c, &a, -1, &id, &ast), -1);
	cr_assert_eq(errno, EAGAIN);
	stop_peer(&p, c);
}

/* An Ast awaited by an outer wait is not handed to the callbacks of a
 * nested one: the bast callback waits for another lock. */
static struct dlmc_ast nested_ast;
static int nested_rc = -2;

static void
on_bast_nested(struct dlmc *c, const struct dlmc_bast *b, void *arg)
{
	(void)b;
	(void)arg;
	nested_rc = dlmc_wait_ast(c, 21, TIMEOUT_MS, &nested_ast);
}

static void
script_nested(int fd)
{
	Envelope *req = peer_recv(fd);

	send_reply(fd, req, 0, NULL, 20);
	send_bast(fd, 1, DLMC_EX);
	send_ast(fd, 20, 0, 0, DLMC_EX, NULL, 1);
	send_ast(fd, 21, 0, 0, DLMC_PR, NULL, 1);
	envelope__free_unpacked(req, NULL);
}

Test(dlmc, nested_waits_keep_their_asts, .timeout = 10)
{
	static const struct dlmc_callbacks cb = { on_ast, on_bast_nested, NULL };
	struct seen s = { 0 };
	struct dlmc_lock_args a;
	struct dlmc_ast ast;
	struct peer p;
	struct dlmc *c;
	uint64_t id;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	p.fd = sv[1];
	p.script = script_nested;
	cr_assert_eq(pthread_create(&p.thread, NULL, peer_main, &p), 0);
	c = dlmc_open_fd(sv[0], &cb, &s);
	lock_args(&a, "r", DLMC_EX, 0);
	cr_assert_eq(dlmc_lock_wait(c, &a, TIMEOUT_MS, &id, &ast), 0);
	cr_assert_eq(ast.lockid, 20);
	cr_assert_eq(nested_rc, 0);
	cr_assert_eq(nested_ast.lockid, 21);
	cr_assert_eq(s.asts, 0);
	stop_peer(&p, c);
}

Test(dlmc, arguments_are_checked_before_sending, .timeout = 10)
{
	struct seen s = { 0 };
	struct dlmc_lock_args a;
	struct dlmc *c;
	uint64_t id;
	int sv[2];
	char name[40];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c = dlmc_open_fd(sv[0], &callbacks, &s);
	memset(name, 'n', sizeof(name));
	name[33] = '\0';
	lock_args(&a, name, DLMC_EX, 0);
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	cr_assert_eq(errno, EINVAL);
	lock_args(&a, "", DLMC_EX, 0);
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	lock_args(&a, "ok", 4, 0);
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	cr_assert_eq(errno, EINVAL);
	lock_args(&a, "ok", DLMC_PR, 0);
	a.domain = "";
	cr_assert_eq(dlmc_lock(c, &a, &id), -1);
	cr_assert_eq(dlmc_join(c, NULL, 0, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(dlmc_lock_send(c, &a, NULL, NULL), -1);
	/* Nothing went out. */
	cr_assert_eq(recv(sv[1], name, sizeof(name), MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	dlmc_close(c);
	close(sv[1]);
}

/*
 * A fake dlmd for the libo2dlm API, on <dir>/dlmd.sock: grants every
 * lock at once with the resource's stored LVB, keeps an LVB that comes
 * with an unlock, refuses trylocks of "busy", and follows the grant of
 * "contended" with a Bast.
 */
struct fake {
	char		 dir[64];
	int		 lfd;
	pthread_t	 thread;
	uint8_t		 lvb[DLMC_LVB_LEN];	/* one resource is enough */
	int		 unlocks_with_lvb;
	int		 left;
};

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	uint64_t next = 100;
	Envelope *req;
	int fd = accept(f->lfd, NULL, NULL);

	cr_assert_geq(fd, 0);
	while (ipc_sync_recv(fd, &req, TIMEOUT_MS) == 0) {
		switch (req->type) {
		case MSG_TYPE__MSG_DLMD_JOIN:
			send_reply(fd, req, 0, NULL, 0);
			break;
		case MSG_TYPE__MSG_DLMD_LEAVE:
			f->left = 1;
			send_reply(fd, req, 0, NULL, 0);
			break;
		case MSG_TYPE__MSG_DLMD_LOCK: {
			const Dlmd__LockRequest *lr = req->lock_request;
			int busy = lr->name.len == 4 && memcmp(lr->name.data, "busy", 4) == 0;

			send_reply(fd, req, 0, NULL, ++next);
			if (busy && (lr->flags & DLMC_F_NOQUEUE)) {
				send_ast(fd, next, lr->user, EAGAIN, DLMC_NL, NULL, 1);
				break;
			}
			send_ast(fd, next, lr->user, 0, lr->mode,
			    (lr->flags & DLMC_F_VALBLK) ? f->lvb : NULL, 1);
			if (lr->name.len == 9 && memcmp(lr->name.data, "contended", 9) == 0)
				send_bast(fd, next, DLMC_EX);
			break;
		}
		case MSG_TYPE__MSG_DLMD_UNLOCK:
			if (req->unlock_request->lvb.len == DLMC_LVB_LEN) {
				memcpy(f->lvb, req->unlock_request->lvb.data, DLMC_LVB_LEN);
				f->unlocks_with_lvb++;
			}
			send_reply(fd, req, 0, NULL, 0);
			break;
		default:
			send_reply(fd, req, EINVAL, "not in the fake", 0);
			break;
		}
		envelope__free_unpacked(req, NULL);
	}
	close(fd);
	return NULL;
}

static void
fake_start(struct fake *f)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/test_o2dlm.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dlmd.sock", f->dir);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	cr_assert_eq(listen(f->lfd, 4), 0);
	cr_assert_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void
fake_stop(struct fake *f)
{
	char path[128];

	pthread_join(f->thread, NULL);
	close(f->lfd);
	snprintf(path, sizeof(path), "%s/dlmd.sock", f->dir);
	unlink(path);
	rmdir(f->dir);
}

static int bast_calls;

static void
count_bast(void *arg)
{
	(void)arg;
	bast_calls++;
}

Test(o2dlm, lock_lvb_bast_destroy, .timeout = 10)
{
	struct o2dlm_ctxt *ctxt;
	struct pollfd pfd;
	struct fake f;
	char buf[DLMC_LVB_LEN];
	unsigned int n;
	int fd;

	fake_start(&f);
	cr_assert_eq(o2dlm_initialize(f.dir, "dom", &ctxt), 0);
	cr_assert_eq(o2dlm_lock(ctxt, "a", 0, O2DLM_LEVEL_EXMODE), 0);
	cr_assert_eq(o2dlm_lock(ctxt, "a", 0, O2DLM_LEVEL_PRMODE), O2DLM_ET_RECURSIVE_LOCK);
	cr_assert_eq(o2dlm_drop_lock(ctxt, "a"), O2DLM_ET_BUSY_LOCK);
	cr_assert_eq(o2dlm_write_lvb(ctxt, "a", "hello", 5, &n), 0);
	cr_assert_eq(n, 5);
	cr_assert_eq(o2dlm_unlock(ctxt, "a"), 0);
	cr_assert_eq(f.unlocks_with_lvb, 1);
	cr_assert_eq(o2dlm_unlock(ctxt, "a"), O2DLM_ET_UNKNOWN_LOCK);
	cr_assert_eq(o2dlm_drop_lock(ctxt, "a"), 0);

	cr_assert_eq(o2dlm_lock(ctxt, "b", 0, O2DLM_LEVEL_PRMODE), 0);
	cr_assert_eq(o2dlm_read_lvb(ctxt, "b", buf, sizeof(buf), &n), 0);
	cr_assert_eq(n, DLMC_LVB_LEN);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	cr_assert_eq(o2dlm_write_lvb(ctxt, "b", "x", 1, &n), O2DLM_ET_LVB_WRITE);
	cr_assert_eq(o2dlm_unlock(ctxt, "b"), 0);
	/* A PR unlock pushes nothing. */
	cr_assert_eq(f.unlocks_with_lvb, 1);

	cr_assert_eq(o2dlm_lock(ctxt, "busy", O2DLM_TRYLOCK, O2DLM_LEVEL_EXMODE),
	    O2DLM_ET_TRYLOCK_FAILED);
	cr_assert_eq(o2dlm_unlock(ctxt, "busy"), O2DLM_ET_UNKNOWN_LOCK);

	cr_assert_eq(o2dlm_lock_with_bast(ctxt, "contended", 0, O2DLM_LEVEL_EXMODE,
	    count_bast, NULL, &fd), 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	cr_assert_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
	o2dlm_process_bast(ctxt, fd);
	cr_assert_eq(bast_calls, 1);
	/* Handled: no longer readable. */
	cr_assert_eq(poll(&pfd, 1, 100), 0);

	cr_assert_eq(o2dlm_destroy(ctxt), 0);
	fake_stop(&f);
	cr_assert(f.left);
}

Test(o2dlm, argument_checks, .timeout = 10)
{
	struct o2dlm_ctxt *ctxt;
	struct fake f;
	char name[40];
	int fd, sup = 0;

	cr_assert_eq(o2dlm_initialize(NULL, NULL, &ctxt), O2DLM_ET_INVALID_ARGS);
	cr_assert_eq(o2dlm_initialize(NULL, "", &ctxt), O2DLM_ET_INVALID_DOMAIN_NAME);
	cr_assert_eq(o2dlm_initialize("/nonexistent", "dom", &ctxt),
	    O2DLM_ET_SERVICE_UNAVAILABLE);
	fake_start(&f);
	cr_assert_eq(o2dlm_initialize(f.dir, "dom", &ctxt), 0);
	memset(name, 'n', sizeof(name));
	name[33] = '\0';
	cr_assert_eq(o2dlm_lock(ctxt, name, 0, O2DLM_LEVEL_EXMODE), O2DLM_ET_INVALID_LOCK_NAME);
	cr_assert_eq(o2dlm_lock(ctxt, "", 0, O2DLM_LEVEL_EXMODE), O2DLM_ET_INVALID_LOCK_NAME);
	cr_assert_eq(o2dlm_lock(ctxt, ".ctx", 0, O2DLM_LEVEL_EXMODE), O2DLM_ET_INVALID_LOCK_NAME);
	cr_assert_eq(o2dlm_lock(ctxt, "a", 0, 4), O2DLM_ET_INVALID_LOCK_LEVEL);
	cr_assert_eq(o2dlm_lock_with_bast(ctxt, "a", 0, O2DLM_LEVEL_EXMODE, NULL,
	    NULL, &fd), O2DLM_ET_INVALID_ARGS);
	name[32] = '\0';
	cr_assert_eq(o2dlm_lock(ctxt, name, 0, O2DLM_LEVEL_EXMODE), 0);
	cr_assert_eq(o2dlm_supports_bast(&sup), 0);
	cr_assert_eq(sup, 1);
	/* destroy unlocks what is held */
	cr_assert_eq(o2dlm_destroy(ctxt), 0);
	fake_stop(&f);
}

Test(o2dlm, every_error_has_a_message)
{
	errcode_t e;

	cr_assert_str_eq(o2dlm_errmsg(0), "Success");
	for (e = O2DLM_ET_NO_MEMORY; e <= O2DLM_ET_INTERNAL_FAILURE; e++)
		cr_assert_str_neq(o2dlm_errmsg(e), "Unknown o2dlm error", "code %ld", e);
	cr_assert_str_eq(o2dlm_errmsg(O2DLM_ET_INTERNAL_FAILURE + 1), "Unknown o2dlm error");
	cr_assert_str_eq(o2dlm_errmsg(-1), "Unknown o2dlm error");
}
