/*
 * The wire layer of libo2dlm: one connection to dlmd.sock. Requests get
 * ids; a blocking call sends its request and reads frames until its own
 * reply is in, queueing every event and every other reply it reads on
 * the way, so that nothing is lost and callbacks never run in the
 * middle of a blocking call. dlmc_dispatch() and dlmc_wait_ast() run
 * the queue in arrival order.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "log.h"
#include "o2dlm.h"
#include "util.h"

#define READ_CHUNK		(64u << 10)
#define CANCEL_WAIT_MS		30000	/* for the Ast of a cancelled request */

struct dlmc_req {
	TAILQ_ENTRY(dlmc_req)	 entry;
	uint64_t		 id;
	dlmc_reply_fn		*fn;	/* NULL: a blocking caller waits for rep */
	void			*arg;
	Envelope		*rep;
};

/* An event, or the reply of an asynchronous request, waiting to be run. */
struct dlmc_item {
	TAILQ_ENTRY(dlmc_item)	 entry;
	Envelope		*env;	/* NULL: req failed with `status` */
	struct dlmc_req		*req;	/* the asynchronous request it answers */
	int			 status;
};

/* A dlmc_wait_ast() in progress: its Ast is not for the callbacks. */
struct dlmc_waiter {
	SLIST_ENTRY(dlmc_waiter) entry;
	uint64_t		 lockid;
};

struct dlmc {
	int			 fd;
	int			 dead;		/* 0, or why the connection is gone */
	int			 timeout_ms;
	uint64_t		 next_id;
	uint8_t			*rbuf;
	size_t			 rlen;
	size_t			 rcap;
	TAILQ_HEAD(, dlmc_req)	 reqs;
	TAILQ_HEAD(, dlmc_item)	 items;
	size_t			 nitems;
	SLIST_HEAD(, dlmc_waiter) waiters;
	struct dlmc_callbacks	 cb;
	void			*arg;
	char			 error[256];
};

static int64_t
deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : (int64_t)now_ms() + timeout_ms;
}

static int
remaining(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - (int64_t)now_ms();
	return left > 0 ? (int)left : 0;
}

static int
fail_with(struct dlmc *c, int err, const char *why)
{
	snprintf(c->error, sizeof(c->error), "%s", why);
	errno = err;
	return -1;
}

static void
queue_item(struct dlmc *c, Envelope *env, struct dlmc_req *req, int status)
{
	struct dlmc_item *it = xcalloc(1, sizeof(*it));

	it->env = env;
	it->req = req;
	it->status = status;
	TAILQ_INSERT_TAIL(&c->items, it, entry);
	c->nitems++;
}

/*
 * The connection is gone: asynchronous requests fail through the queue,
 * after what was read before; blocking callers see c->dead.
 */
static void
conn_lost(struct dlmc *c, int err)
{
	struct dlmc_req *r, *next;

	if (c->dead)
		return;
	c->dead = err;
	snprintf(c->error, sizeof(c->error), "connection to dlmd lost: %s",
	    strerror(err));
	for (r = TAILQ_FIRST(&c->reqs); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->fn == NULL)
			continue;
		TAILQ_REMOVE(&c->reqs, r, entry);
		queue_item(c, NULL, r, ECONNRESET);
	}
}

static int
is_event(const Envelope *env)
{
	switch (env->type) {
	case MSG_TYPE__MSG_DLMD_AST:
		return env->payload_case == ENVELOPE__PAYLOAD_AST;
	case MSG_TYPE__MSG_DLMD_BAST:
		return env->payload_case == ENVELOPE__PAYLOAD_BAST;
	case MSG_TYPE__MSG_DLMD_DOMAIN_EVENT:
		return env->payload_case == ENVELOPE__PAYLOAD_DOMAIN_EVENT;
	default:
		return 0;
	}
}

/* One frame read: a reply goes to its request, an event to the queue. */
static void
route(struct dlmc *c, Envelope *env)
{
	struct dlmc_req *r;

	if (env->kind == KIND__KIND_EVENT && is_event(env)) {
		queue_item(c, env, NULL, 0);
		return;
	}
	if (env->kind == KIND__KIND_REPLY) {
		TAILQ_FOREACH(r, &c->reqs, entry)
			if (r->id == env->id)
				break;
		if (r != NULL) {
			TAILQ_REMOVE(&c->reqs, r, entry);
			if (r->fn == NULL)
				r->rep = env;
			else
				queue_item(c, env, r, 0);
			return;
		}
	}
	/* A reply whose blocking caller gave up, or a message dlmd does
	 * not send to clients. */
	log_debug("dlmc: dropped message type %d kind %d id %llu", env->type,
	    env->kind, (unsigned long long)env->id);
	envelope__free_unpacked(env, NULL);
}

static void
parse_frames(struct dlmc *c)
{
	size_t off = 0;
	uint32_t n;
	Envelope *env;

	while (!c->dead && c->rlen - off >= 4) {
		const uint8_t *p = c->rbuf + off;

		n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		    (uint32_t)p[2] << 8 | p[3];
		if (n > IPC_FRAME_MAX) {
			conn_lost(c, EPROTO);
			break;
		}
		if (c->rlen - off - 4 < n)
			break;
		if ((env = envelope__unpack(NULL, n, p + 4)) == NULL) {
			conn_lost(c, EPROTO);
			break;
		}
		off += 4 + n;
		route(c, env);
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
}

/* Read whatever the socket holds now and route the complete frames. */
static void
read_available(struct dlmc *c)
{
	ssize_t n;
	int err = 0;

	while (!c->dead) {
		if (c->rcap - c->rlen < READ_CHUNK) {
			c->rcap = c->rlen + READ_CHUNK;
			c->rbuf = xrealloc(c->rbuf, c->rcap);
		}
		n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
		if (n > 0) {
			c->rlen += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		err = n == 0 ? ECONNRESET : errno;
		break;
	}
	/* Frames that came before a close are still delivered. */
	parse_frames(c);
	if (err != 0)
		conn_lost(c, err);
}

/* Wait up to timeout_ms for the socket, then read; 0 even when nothing came. */
static int
read_wait(struct dlmc *c, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int r;

	if (c->dead) {
		errno = c->dead;
		return -1;
	}
	r = poll(&pfd, 1, timeout_ms);
	if (r == -1)
		return errno == EINTR ? 0 : -1;
	if (r == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	read_available(c);
	if (c->dead) {
		errno = c->dead;
		return -1;
	}
	return 0;
}

/*
 * Write one frame whole. While the socket is full, read too: dlmd may
 * be blocked writing events to us, and would never drain our requests.
 */
static int
send_env(struct dlmc *c, const Envelope *env)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLOUT };
	uint8_t *buf;
	size_t len, off = 0;
	ssize_t n;

	if (ipc_frame_pack(env, &buf, &len) == -1)
		return -1;
	while (off < len && !c->dead) {
		n = send(c->fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			read_available(c);
			conn_lost(c, ECONNRESET);
			break;
		}
		if (poll(&pfd, 1, -1) > 0 && (pfd.revents & (POLLIN | POLLHUP)))
			read_available(c);
	}
	free(buf);
	if (c->dead) {
		errno = c->dead;
		return -1;
	}
	return 0;
}

/* Send a request; it joins c->reqs only once written, so a failed send
 * is reported once, by the return value. */
static int
request(struct dlmc *c, Envelope *env, struct dlmc_req *r)
{
	if (c->dead) {
		errno = c->dead;
		return -1;
	}
	r->id = ++c->next_id;
	env->id = r->id;
	env->kind = KIND__KIND_REQUEST;
	if (send_env(c, env) == -1)
		return -1;
	TAILQ_INSERT_TAIL(&c->reqs, r, entry);
	return 0;
}

/* A blocking request: 0 with *rep (the caller frees it), or -1. */
static int
call_wait(struct dlmc *c, Envelope *env, Envelope **rep)
{
	struct dlmc_req *r = xcalloc(1, sizeof(*r));
	int64_t deadline = deadline_of(c->timeout_ms);
	Envelope *got;
	int err;

	if (request(c, env, r) == -1) {
		free(r);
		return -1;
	}
	while (r->rep == NULL) {
		if (read_wait(c, remaining(deadline)) == -1) {
			err = errno;
			TAILQ_REMOVE(&c->reqs, r, entry);
			free(r);
			if (err == ETIMEDOUT)
				snprintf(c->error, sizeof(c->error),
				    "no reply from dlmd");
			errno = err;
			return -1;
		}
	}
	got = r->rep;
	free(r);
	if (got->status != 0) {
		err = got->status > 0 ? got->status : EPROTO;
		snprintf(c->error, sizeof(c->error), "%s", got->error[0] ?
		    got->error : strerror(err));
		envelope__free_unpacked(got, NULL);
		errno = err;
		return -1;
	}
	*rep = got;
	return 0;
}

static void
ast_from(const Dlmd__Ast *a, struct dlmc_ast *ast)
{
	memset(ast, 0, sizeof(*ast));
	ast->lockid = a->lockid;
	ast->user = a->user;
	ast->status = a->status;
	ast->mode = a->mode;
	ast->has_lvb = a->lvb.len > 0;
	ast->lvb_valid = a->lvb_valid;
	if (ast->has_lvb)
		memcpy(ast->lvb, a->lvb.data, a->lvb.len < DLMC_LVB_LEN ?
		    a->lvb.len : DLMC_LVB_LEN);
}

static void
deliver_item(struct dlmc *c, struct dlmc_item *it)
{
	Envelope *env = it->env;
	struct dlmc_ast ast;
	struct dlmc_bast bast;
	struct dlmc_domain_event de;
	uint64_t lockid = 0;

	if (it->req != NULL) {
		int status = env == NULL ? it->status : env->status;

		if (env != NULL && status != 0)
			snprintf(c->error, sizeof(c->error), "%s", env->error[0] ?
			    env->error : strerror(status));
		if (env != NULL && env->payload_case == ENVELOPE__PAYLOAD_LOCK_ACCEPTED)
			lockid = env->lock_accepted->lockid;
		it->req->fn(c, status, lockid, it->req->arg);
		free(it->req);
	} else if (env->payload_case == ENVELOPE__PAYLOAD_AST) {
		ast_from(env->ast, &ast);
		if (c->cb.ast != NULL)
			c->cb.ast(c, &ast, c->arg);
	} else if (env->payload_case == ENVELOPE__PAYLOAD_BAST) {
		bast.lockid = env->bast->lockid;
		bast.user = env->bast->user;
		bast.blocked = env->bast->blocked;
		if (c->cb.bast != NULL)
			c->cb.bast(c, &bast, c->arg);
	} else {
		snprintf(de.domain, sizeof(de.domain), "%s", env->domain_event->domain);
		de.kind = env->domain_event->kind;
		de.node = env->domain_event->node;
		if (c->cb.domain_event != NULL)
			c->cb.domain_event(c, &de, c->arg);
	}
	if (env != NULL)
		envelope__free_unpacked(env, NULL);
	free(it);
}

static int
awaited(const struct dlmc *c, uint64_t lockid)
{
	const struct dlmc_waiter *w;

	SLIST_FOREACH(w, &c->waiters, entry)
		if (w->lockid == lockid)
			return 1;
	return 0;
}

/*
 * Run the queue in order, passing over the Asts some dlmc_wait_ast()
 * waits for. With `want`, stop at that lock's Ast, take it into *ast
 * and return 1. *ran counts what was run.
 */
static int
run_queue(struct dlmc *c, const uint64_t *want, struct dlmc_ast *ast, int *ran)
{
	struct dlmc_item *it;

again:
	TAILQ_FOREACH(it, &c->items, entry) {
		if (it->req == NULL && it->env->payload_case == ENVELOPE__PAYLOAD_AST) {
			uint64_t id = it->env->ast->lockid;

			if (want != NULL && id == *want) {
				TAILQ_REMOVE(&c->items, it, entry);
				c->nitems--;
				ast_from(it->env->ast, ast);
				envelope__free_unpacked(it->env, NULL);
				free(it);
				return 1;
			}
			if (awaited(c, id))
				continue;
		}
		TAILQ_REMOVE(&c->items, it, entry);
		c->nitems--;
		deliver_item(c, it);
		(*ran)++;
		/* The callback may have run the queue itself. */
		goto again;
	}
	return 0;
}

struct dlmc *
dlmc_open_fd(int fd, const struct dlmc_callbacks *cb, void *arg)
{
	struct dlmc *c;
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->timeout_ms = -1;
	TAILQ_INIT(&c->reqs);
	TAILQ_INIT(&c->items);
	SLIST_INIT(&c->waiters);
	if (cb != NULL)
		c->cb = *cb;
	c->arg = arg;
	return c;
}

struct dlmc *
dlmc_open(const char *rundir, const struct dlmc_callbacks *cb, void *arg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct dlmc *c;
	int fd, err;

	if (rundir == NULL)
		rundir = rundir_default();
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dlmd.sock",
	    rundir) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return NULL;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    (c = dlmc_open_fd(fd, cb, arg)) == NULL) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	return c;
}

void
dlmc_close(struct dlmc *c)
{
	struct dlmc_item *it;
	struct dlmc_req *r;

	if (c == NULL)
		return;
	close(c->fd);
	while ((it = TAILQ_FIRST(&c->items)) != NULL) {
		TAILQ_REMOVE(&c->items, it, entry);
		if (it->env != NULL)
			envelope__free_unpacked(it->env, NULL);
		free(it->req);
		free(it);
	}
	/* Only asynchronous requests can be left: callbacks, which run
	 * inside blocking calls, may not close. */
	while ((r = TAILQ_FIRST(&c->reqs)) != NULL) {
		TAILQ_REMOVE(&c->reqs, r, entry);
		free(r);
	}
	free(c->rbuf);
	free(c);
}

int
dlmc_fd(const struct dlmc *c)
{
	return c->fd;
}

void
dlmc_set_timeout(struct dlmc *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

const char *
dlmc_error(const struct dlmc *c)
{
	return c->error;
}

size_t
dlmc_queued(const struct dlmc *c)
{
	return c->nitems;
}

int
dlmc_dispatch(struct dlmc *c)
{
	int ran = 0;

	read_available(c);
	run_queue(c, NULL, NULL, &ran);
	if (ran == 0 && c->dead) {
		errno = c->dead;
		return -1;
	}
	return ran;
}

static int
check_domain(struct dlmc *c, const char *domain)
{
	size_t len = domain != NULL ? strlen(domain) : 0;

	if (len == 0 || len > DLMC_DOMAIN_MAX)
		return fail_with(c, EINVAL, "a domain name has 1 to 64 bytes");
	return 0;
}

int
dlmc_join(struct dlmc *c, const char *domain, unsigned flags, struct dlmc_domain_info *info)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Dlmd__Domain d = DLMD__DOMAIN__INIT;
	const Dlmd__DomainInfo *di;
	size_t i;

	if (check_domain(c, domain) == -1)
		return -1;
	d.name = (char *)domain;
	d.guards_disk = (flags & DLMC_JOIN_GUARDS_DISK) != 0;
	req.type = MSG_TYPE__MSG_DLMD_JOIN;
	req.payload_case = ENVELOPE__PAYLOAD_DOMAIN;
	req.domain = &d;
	if (call_wait(c, &req, &rep) == -1)
		return -1;
	if (rep->payload_case != ENVELOPE__PAYLOAD_DOMAIN_INFO) {
		envelope__free_unpacked(rep, NULL);
		return fail_with(c, EPROTO, "dlmd's join reply has no DomainInfo");
	}
	if (info != NULL) {
		di = rep->domain_info;
		memset(info, 0, sizeof(*info));
		info->key = di->key;
		info->directory = di->directory;
		info->recovering = di->recovering;
		info->protocol_major = di->protocol_major;
		info->protocol_minor = di->protocol_minor;
		for (i = 0; i < di->n_members && i < DLMC_MAX_NODES; i++)
			info->members[i] = di->members[i];
		info->nmembers = i;
	}
	envelope__free_unpacked(rep, NULL);
	return 0;
}

int
dlmc_leave(struct dlmc *c, const char *domain)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Dlmd__Domain d = DLMD__DOMAIN__INIT;

	if (check_domain(c, domain) == -1)
		return -1;
	d.name = (char *)domain;
	req.type = MSG_TYPE__MSG_DLMD_LEAVE;
	req.payload_case = ENVELOPE__PAYLOAD_DOMAIN;
	req.domain = &d;
	if (call_wait(c, &req, &rep) == -1)
		return -1;
	envelope__free_unpacked(rep, NULL);
	return 0;
}

/* Check a lock request and fill the envelope that carries it. */
static int
lock_env(struct dlmc *c, const struct dlmc_lock_args *a, Envelope *env,
    Dlmd__LockRequest *lr)
{
	if (check_domain(c, a->domain) == -1)
		return -1;
	if (a->mode != DLMC_NL && a->mode != DLMC_PR && a->mode != DLMC_EX)
		return fail_with(c, EINVAL, "modes are NL, PR and EX");
	if (!(a->flags & DLMC_F_CONVERT) &&
	    (a->name == NULL || a->namelen == 0 || a->namelen > DLMC_NAME_MAX))
		return fail_with(c, EINVAL, "a lock name has 1 to 32 bytes");
	lr->domain = (char *)a->domain;
	lr->name.data = (uint8_t *)a->name;
	lr->name.len = a->name != NULL ? a->namelen : 0;
	lr->mode = (Dlmd__Mode)a->mode;
	lr->flags = a->flags;
	lr->lockid = a->lockid;
	lr->user = a->user;
	if (a->lvb != NULL) {
		lr->lvb.data = (uint8_t *)a->lvb;
		lr->lvb.len = DLMC_LVB_LEN;
	}
	env->type = MSG_TYPE__MSG_DLMD_LOCK;
	env->payload_case = ENVELOPE__PAYLOAD_LOCK_REQUEST;
	env->lock_request = lr;
	return 0;
}

int
dlmc_lock(struct dlmc *c, const struct dlmc_lock_args *a, uint64_t *lockid)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Dlmd__LockRequest lr = DLMD__LOCK_REQUEST__INIT;

	if (lock_env(c, a, &req, &lr) == -1 || call_wait(c, &req, &rep) == -1)
		return -1;
	if (rep->payload_case != ENVELOPE__PAYLOAD_LOCK_ACCEPTED) {
		envelope__free_unpacked(rep, NULL);
		return fail_with(c, EPROTO, "dlmd's lock reply has no lock id");
	}
	*lockid = rep->lock_accepted->lockid;
	envelope__free_unpacked(rep, NULL);
	return 0;
}

static void
unlock_env(const char *domain, uint64_t lockid, uint32_t flags,
    const uint8_t *lvb, Envelope *env, Dlmd__UnlockRequest *ur)
{
	ur->domain = (char *)domain;
	ur->lockid = lockid;
	ur->flags = flags;
	if (lvb != NULL) {
		ur->lvb.data = (uint8_t *)lvb;
		ur->lvb.len = DLMC_LVB_LEN;
	}
	env->type = MSG_TYPE__MSG_DLMD_UNLOCK;
	env->payload_case = ENVELOPE__PAYLOAD_UNLOCK_REQUEST;
	env->unlock_request = ur;
}

int
dlmc_unlock(struct dlmc *c, const char *domain, uint64_t lockid,
    uint32_t flags, const uint8_t *lvb)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Dlmd__UnlockRequest ur = DLMD__UNLOCK_REQUEST__INIT;

	if (check_domain(c, domain) == -1)
		return -1;
	unlock_env(domain, lockid, flags, lvb, &req, &ur);
	if (call_wait(c, &req, &rep) == -1)
		return -1;
	envelope__free_unpacked(rep, NULL);
	return 0;
}

static int
send_async(struct dlmc *c, Envelope *env, dlmc_reply_fn *fn, void *arg)
{
	struct dlmc_req *r = xcalloc(1, sizeof(*r));

	r->fn = fn;
	r->arg = arg;
	if (request(c, env, r) == -1) {
		free(r);
		return -1;
	}
	return 0;
}

int
dlmc_lock_send(struct dlmc *c, const struct dlmc_lock_args *a,
    dlmc_reply_fn *fn, void *arg)
{
	Envelope req = ENVELOPE__INIT;
	Dlmd__LockRequest lr = DLMD__LOCK_REQUEST__INIT;

	if (fn == NULL)
		return fail_with(c, EINVAL, "an asynchronous request needs a reply function");
	if (lock_env(c, a, &req, &lr) == -1)
		return -1;
	return send_async(c, &req, fn, arg);
}

int
dlmc_unlock_send(struct dlmc *c, const char *domain, uint64_t lockid,
    uint32_t flags, const uint8_t *lvb, dlmc_reply_fn *fn, void *arg)
{
	Envelope req = ENVELOPE__INIT;
	Dlmd__UnlockRequest ur = DLMD__UNLOCK_REQUEST__INIT;

	if (fn == NULL)
		return fail_with(c, EINVAL, "an asynchronous request needs a reply function");
	if (check_domain(c, domain) == -1)
		return -1;
	unlock_env(domain, lockid, flags, lvb, &req, &ur);
	return send_async(c, &req, fn, arg);
}

int
dlmc_wait_ast(struct dlmc *c, uint64_t lockid, int timeout_ms,
    struct dlmc_ast *ast)
{
	struct dlmc_waiter w = { .lockid = lockid };
	int64_t deadline = deadline_of(timeout_ms);
	int ran = 0, rc;

	SLIST_INSERT_HEAD(&c->waiters, &w, entry);
	for (;;) {
		if (run_queue(c, &lockid, ast, &ran)) {
			rc = 0;
			break;
		}
		if (read_wait(c, remaining(deadline)) == -1) {
			rc = -1;
			break;
		}
	}
	SLIST_REMOVE(&c->waiters, &w, dlmc_waiter, entry);
	return rc;
}

int
dlmc_lock_wait(struct dlmc *c, const struct dlmc_lock_args *a, int timeout_ms,
    uint64_t *lockid, struct dlmc_ast *ast)
{
	int64_t deadline = deadline_of(timeout_ms);

	if (dlmc_lock(c, a, lockid) == -1)
		return -1;
	if (dlmc_wait_ast(c, *lockid, remaining(deadline), ast) == -1) {
		if (errno != ETIMEDOUT)
			return -1;
		/*
		 * Cancel, so that no late grant leaves a lock the caller
		 * does not know it holds. A grant that won the race makes
		 * the cancel fail with EALREADY; its Ast comes either way.
		 */
		if (dlmc_unlock(c, a->domain, *lockid, DLMC_F_CANCEL, NULL) == -1 &&
		    errno != EALREADY)
			return -1;
		if (dlmc_wait_ast(c, *lockid, CANCEL_WAIT_MS, ast) == -1)
			return -1;
		if (ast->status == ECANCELED)
			return fail_with(c, ETIMEDOUT, "timed out waiting for the lock");
	}
	if (ast->status != 0) {
		snprintf(c->error, sizeof(c->error), "%s", ast->status == EAGAIN ?
		    "the lock is held elsewhere" : strerror(ast->status));
		errno = ast->status;
		return -1;
	}
	return 0;
}
