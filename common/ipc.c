#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "ipc.h"
#include "log.h"
#include "stream.h"
#include "util.h"

#define PACK_STACK	2048	/* frames up to this size are packed on the stack */

struct pending {
	TAILQ_ENTRY(pending)	 entry;
	uint64_t		 id;
	ipc_reply_fn		*fn;
	void			*arg;
};

struct ipc_conn {
	TAILQ_ENTRY(ipc_conn)	 entry;
	struct ipc_server	*server;	/* NULL on the client side */
	struct stream		*st;
	struct event		*reaper;	/* frees a closed conn outside its callbacks */
	struct event		*flush_ev;	/* writes the replies of one wakeup */
	int			 reading;	/* in its read callback (server side) */
	int			 flush_pending;
	uint64_t		 id;
	struct ucred		 cred;
	uint32_t		 topics;
	int			 subscribed;
	int			 dead;
	uint64_t		 next_req;
	TAILQ_HEAD(, pending)	 pending;
	ipc_event_fn		*on_event;
	ipc_close_fn		*on_close;
	void			*arg;
	void			*data;
};

struct ipc_server {
	struct event_base	*base;
	struct evconnlistener	*listener;
	struct event		*resume;	/* re-enables accept after EMFILE */
	char			*path;
	const char		*daemon;
	const struct ipc_handler *table;
	size_t			 ntable;
	ipc_close_fn		*on_close;
	void			*arg;
	uint64_t		 next_conn;
	size_t			 nconns;
	TAILQ_HEAD(, ipc_conn)	 conns;
};

static void	conn_read(struct stream *, void *);
static void	conn_error(struct stream *, int, void *);

/*
 * A peer that closes while we write must cost us that connection, not
 * the process: every user of the IPC layer ignores SIGPIPE.
 */
static void
ignore_sigpipe(void)
{
	static int done;

	if (!done) {
		signal(SIGPIPE, SIG_IGN);
		done = 1;
	}
}

static void
conn_reap(evutil_socket_t fd, short ev, void *arg)
{
	struct ipc_conn *c = arg;

	(void)fd;
	(void)ev;
	event_free(c->reaper);
	event_free(c->flush_ev);
	free(c);
}

/*
 * Tear a connection down at once (no more reads or writes), tell its
 * owner, fail its pending requests, and free the memory from the event
 * loop so that callers up the stack may still look at c->dead.
 */
void
ipc_conn_close(struct ipc_conn *c)
{
	struct pending *p;

	if (c->dead)
		return;
	c->dead = 1;
	/* Replies held for the end of this wakeup still go, if they can. */
	event_del(c->flush_ev);
	stream_flush(c->st);
	stream_free(c->st);
	if (c->server != NULL) {
		TAILQ_REMOVE(&c->server->conns, c, entry);
		c->server->nconns--;
		if (c->server->on_close != NULL)
			c->server->on_close(c);
	} else if (c->on_close != NULL) {
		c->on_close(c);
	}
	while ((p = TAILQ_FIRST(&c->pending)) != NULL) {
		TAILQ_REMOVE(&c->pending, p, entry);
		if (p->fn != NULL)
			p->fn(NULL, p->arg);
		free(p);
	}
	event_active(c->reaper, 0, 0);
}

static void
conn_flush(evutil_socket_t fd, short ev, void *arg)
{
	struct ipc_conn *c = arg;

	(void)fd;
	(void)ev;
	c->flush_pending = 0;
	if (!c->dead)
		stream_flush(c->st);
}

static struct ipc_conn *
conn_new(struct event_base *base, int fd, struct ipc_server *s)
{
	struct ipc_conn *c;

	c = xcalloc(1, sizeof(*c));
	c->server = s;
	TAILQ_INIT(&c->pending);
	c->st = stream_new(base, fd, conn_read, conn_error, c);
	c->reaper = event_new(base, -1, 0, conn_reap, c);
	c->flush_ev = event_new(base, -1, 0, conn_flush, c);
	if (c->reaper == NULL || c->flush_ev == NULL)
		fatalx("ipc: out of memory for a connection");
	stream_start(c->st);
	return c;
}

/* The frame of env into buf, which has room for 4 + n bytes. */
static void
frame_fill(const Envelope *env, size_t n, uint8_t *buf)
{
	uint32_t be = htonl((uint32_t)n);

	memcpy(buf, &be, 4);
	envelope__pack(env, buf + 4);
}

int
ipc_frame_pack(const Envelope *env, uint8_t **buf, size_t *len)
{
	size_t n = envelope__get_packed_size(env);

	if (n > IPC_FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	*buf = xmalloc(4 + n);
	frame_fill(env, n, *buf);
	*len = 4 + n;
	return 0;
}

/*
 * Straight to the socket when nothing is queued (stream.c): no epoll
 * round for writability, which would be a good part of a local round
 * trip. A server's replies to the requests of one read wait for the end
 * of the wakeup instead, after what the requests made it send elsewhere
 * (netd's frame to another node goes before the handler's
 * acknowledgement), and go out in one write. A small frame is packed on
 * the stack, with no malloc.
 */
int
ipc_send(struct ipc_conn *c, const Envelope *env)
{
	uint8_t stackbuf[PACK_STACK], *buf = stackbuf;
	size_t n;

	if (c->dead)
		return -1;
	if (stream_queued(c->st) > IPC_OUTQ_MAX) {
		log_warnx("ipc: peer pid %d reads too slowly (%zu bytes queued), "
		    "dropping it", (int)c->cred.pid, stream_queued(c->st));
		ipc_conn_close(c);
		return -1;
	}
	n = envelope__get_packed_size(env);
	if (n > IPC_FRAME_MAX) {
		log_warnx("ipc: message type %d too large to send", env->type);
		return -1;
	}
	if (4 + n > sizeof(stackbuf))
		buf = xmalloc(4 + n);
	frame_fill(env, n, buf);
	if (c->reading) {
		stream_queue(c->st, buf, 4 + n);
		if (!c->flush_pending) {
			c->flush_pending = 1;
			event_active(c->flush_ev, 0, 0);
		}
	} else {
		stream_write(c->st, buf, 4 + n);
	}
	if (buf != stackbuf)
		free(buf);
	return 0;
}

/*
 * Nobody waits for the reply to a one-way request, so none is sent; a
 * refusal goes to our log instead, where it is not lost.
 */
void
ipc_reply(struct ipc_conn *c, const Envelope *req, Envelope *rep)
{
	if (req->kind == KIND__KIND_ONE_WAY) {
		if (rep->status != 0)
			log_warnx("ipc: refused one-way message type %d from pid "
			    "%d: %s", req->type, (int)c->cred.pid,
			    rep->error != NULL && *rep->error != '\0' ? rep->error :
			    strerror(rep->status));
		return;
	}
	rep->type = req->type;
	rep->id = req->id;
	rep->kind = KIND__KIND_REPLY;
	ipc_send(c, rep);
}

void
ipc_reply_status(struct ipc_conn *c, const Envelope *req, int status,
    const char *fmt, ...)
{
	Envelope rep = ENVELOPE__INIT;
	char msg[512] = "";
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	rep.status = status;
	rep.error = msg;
	ipc_reply(c, req, &rep);
}

static void
on_ping(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Ping ping = PING__INIT;

	ping.daemon = (char *)c->server->daemon;
	ping.pid = (uint32_t)getpid();
	rep.payload_case = ENVELOPE__PAYLOAD_PING;
	rep.ping = &ping;
	ipc_reply(c, req, &rep);
}

/* Events from now on; the topics narrow them (none given: all). */
static void
on_subscribe(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;

	c->subscribed = 1;
	c->topics = req->payload_case == ENVELOPE__PAYLOAD_SUBSCRIBE ? req->subscribe->topics : 0;
	ipc_reply(c, req, &rep);
}

/* Requests every daemon answers the same way, before its own table. */
static const struct ipc_handler common_requests[] = {
	{ MSG_TYPE__MSG_PING, ENVELOPE__PAYLOAD__NOT_SET, on_ping },
	{ MSG_TYPE__MSG_SUBSCRIBE, ENVELOPE__PAYLOAD__NOT_SET, on_subscribe },
};

static const struct ipc_handler *
handler_for(const struct ipc_handler *table, size_t ntable, MsgType type)
{
	size_t i;

	for (i = 0; i < ntable; i++)
		if (table[i].type == type)
			return &table[i];
	return NULL;
}

static void
dispatch_request(struct ipc_conn *c, const Envelope *req)
{
	const struct ipc_handler *h;

	if (c->server == NULL) {
		ipc_reply_status(c, req, EOPNOTSUPP, "clients take no requests");
		return;
	}
	h = handler_for(common_requests, nitems(common_requests), req->type);
	if (h == NULL)
		h = handler_for(c->server->table, c->server->ntable, req->type);
	if (h == NULL) {
		ipc_reply_status(c, req, EOPNOTSUPP, "%s does not handle message type %d",
		    c->server->daemon, req->type);
		return;
	}
	if (h->payload != ENVELOPE__PAYLOAD__NOT_SET && h->payload != req->payload_case) {
		log_warnx("ipc: pid %d sent type %d with payload %d, closing its connection",
		    (int)c->cred.pid, req->type, req->payload_case);
		ipc_conn_close(c);
		return;
	}
	h->fn(c, req);
}

static void
dispatch_reply(struct ipc_conn *c, const Envelope *rep)
{
	struct pending *p;

	TAILQ_FOREACH(p, &c->pending, entry)
		if (p->id == rep->id)
			break;
	if (p == NULL) {
		log_warnx("ipc: reply to unknown request %llu, closing",
		    (unsigned long long)rep->id);
		ipc_conn_close(c);
		return;
	}
	TAILQ_REMOVE(&c->pending, p, entry);
	if (p->fn != NULL)
		p->fn(rep, p->arg);
	free(p);
}

static void
dispatch(struct ipc_conn *c, const Envelope *env)
{
	switch (env->kind) {
	case KIND__KIND_REQUEST:
	case KIND__KIND_ONE_WAY:
		dispatch_request(c, env);
		break;
	case KIND__KIND_REPLY:
		dispatch_reply(c, env);
		break;
	case KIND__KIND_EVENT:
		if (c->on_event != NULL)
			c->on_event(c, env);
		break;
	default:
		log_warnx("ipc: frame of unknown kind %d, closing", env->kind);
		ipc_conn_close(c);
	}
}

/* Every whole frame in the input, decoded in place. */
static void
read_frames(struct ipc_conn *c, struct stream *st)
{
	const uint8_t *data;
	size_t len;
	uint32_t n;
	Envelope *env;

	while (!c->dead) {
		data = stream_data(st, &len);
		if (len < 4)
			return;
		n = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
		    (uint32_t)data[2] << 8 | data[3];
		if (n > IPC_FRAME_MAX) {
			log_warnx("ipc: pid %d sent a %u-byte frame (limit %u), "
			    "closing its connection", (int)c->cred.pid, n,
			    IPC_FRAME_MAX);
			ipc_conn_close(c);
			return;
		}
		if (len < 4 + (size_t)n) {
			stream_expect(st, 4 + (size_t)n);
			return;
		}
		env = envelope__unpack(NULL, n, data + 4);
		stream_consume(st, 4 + (size_t)n);
		if (env == NULL) {
			log_warnx("ipc: pid %d sent a frame that does not decode, "
			    "closing its connection", (int)c->cred.pid);
			ipc_conn_close(c);
			return;
		}
		dispatch(c, env);
		envelope__free_unpacked(env, NULL);
	}
}

static void
conn_read(struct stream *st, void *arg)
{
	struct ipc_conn *c = arg;

	c->reading = c->server != NULL;
	read_frames(c, st);
	c->reading = 0;
}

static void
conn_error(struct stream *st, int err, void *arg)
{
	struct ipc_conn *c = arg;

	(void)st;
	if (err != 0)
		log_debug("ipc: connection of pid %d: %s", (int)c->cred.pid,
		    strerror(err));
	ipc_conn_close(c);
}

/* Root, or our own user: nobody else may drive a cluster daemon. */
static int
peer_allowed(const struct ucred *cr)
{
	return cr->uid == 0 || cr->uid == geteuid();
}

static void
server_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct ipc_server *s = arg;
	struct ipc_conn *c;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);

	(void)l;
	(void)sa;
	(void)salen;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == -1) {
		log_warn("ipc: SO_PEERCRED");
		close(fd);
		return;
	}
	if (!peer_allowed(&cr)) {
		log_warnx("ipc: refusing pid %d uid %u on %s", (int)cr.pid,
		    (unsigned)cr.uid, s->path);
		close(fd);
		return;
	}
	evutil_make_socket_nonblocking(fd);
	c = conn_new(s->base, fd, s);
	c->cred = cr;
	c->id = ++s->next_conn;
	c->arg = s->arg;
	TAILQ_INSERT_TAIL(&s->conns, c, entry);
	s->nconns++;
}

static void
server_resume(evutil_socket_t fd, short ev, void *arg)
{
	struct ipc_server *s = arg;

	(void)fd;
	(void)ev;
	evconnlistener_enable(s->listener);
}

/* Out of descriptors: pause accepting for a second instead of spinning. */
static void
server_error(struct evconnlistener *l, void *arg)
{
	struct ipc_server *s = arg;
	struct timeval one = { 1, 0 };
	int e = EVUTIL_SOCKET_ERROR();

	if (e == EMFILE || e == ENFILE) {
		log_warnx("ipc: out of file descriptors on %s, pausing accept",
		    s->path);
		evconnlistener_disable(l);
		evtimer_add(s->resume, &one);
		return;
	}
	log_warnx("ipc: accept on %s: %s", s->path, strerror(e));
}

struct ipc_server *
ipc_server_listen(struct event_base *base, const char *path, const char *daemon,
    const struct ipc_handler *table, size_t ntable, void *arg)
{
	struct ipc_server *s;
	struct sockaddr_un sun;
	mode_t old;
	int fd;

	ignore_sigpipe();
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return NULL;
	/* A socket file left by a killed daemon is ours to replace. */
	if (unlink(path) == -1 && errno != ENOENT) {
		close(fd);
		return NULL;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		close(fd);
		return NULL;
	}
	umask(old);
	if (chmod(path, 0600) == -1 || listen(fd, 128) == -1) {
		close(fd);
		return NULL;
	}

	s = xcalloc(1, sizeof(*s));
	s->base = base;
	s->path = xstrdup(path);
	s->daemon = daemon;
	s->table = table;
	s->ntable = ntable;
	s->arg = arg;
	TAILQ_INIT(&s->conns);
	s->resume = evtimer_new(base, server_resume, s);
	s->listener = evconnlistener_new(base, server_accept, s,
	    LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (s->listener == NULL || s->resume == NULL)
		fatalx("ipc: cannot create listener for %s", path);
	evconnlistener_set_error_cb(s->listener, server_error);
	return s;
}

void
ipc_server_on_close(struct ipc_server *s, ipc_close_fn *fn)
{
	s->on_close = fn;
}

void
ipc_server_free(struct ipc_server *s)
{
	struct ipc_conn *c;

	while ((c = TAILQ_FIRST(&s->conns)) != NULL)
		ipc_conn_close(c);
	evconnlistener_free(s->listener);
	event_free(s->resume);
	unlink(s->path);
	free(s->path);
	free(s);
}

void *
ipc_server_arg(const struct ipc_server *s)
{
	return s->arg;
}

size_t
ipc_server_nconns(const struct ipc_server *s)
{
	return s->nconns;
}

void
ipc_publish(struct ipc_server *s, uint32_t topics, Envelope *ev)
{
	struct ipc_conn *c, *next;

	ev->kind = KIND__KIND_EVENT;
	ev->id = 0;
	/* ipc_send may drop a slow subscriber from the list. */
	for (c = TAILQ_FIRST(&s->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (!c->subscribed)
			continue;
		if (c->topics != 0 && topics != 0 && (c->topics & topics) == 0)
			continue;
		ipc_send(c, ev);
	}
}

struct ipc_conn *
ipc_server_find(struct ipc_server *s, uint64_t conn_id)
{
	struct ipc_conn *c;

	TAILQ_FOREACH(c, &s->conns, entry)
		if (c->id == conn_id)
			return c;
	return NULL;
}

static int
unix_connect(const char *path, int flags)
{
	struct sockaddr_un sun;
	int fd;

	ignore_sigpipe();
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct ipc_conn *
ipc_connect(struct event_base *base, const char *path, ipc_event_fn *on_event,
    ipc_close_fn *on_close, void *arg)
{
	struct ipc_conn *c;
	socklen_t crlen = sizeof(struct ucred);
	int fd;

	if ((fd = unix_connect(path, SOCK_NONBLOCK)) == -1)
		return NULL;
	c = conn_new(base, fd, NULL);
	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &crlen);
	c->on_event = on_event;
	c->on_close = on_close;
	c->arg = arg;
	return c;
}

int
ipc_request(struct ipc_conn *c, Envelope *req, ipc_reply_fn *fn, void *arg)
{
	struct pending *p;

	if (c->dead) {
		errno = ENOTCONN;
		return -1;
	}
	req->kind = fn != NULL ? KIND__KIND_REQUEST : KIND__KIND_ONE_WAY;
	req->id = fn != NULL ? ++c->next_req : 0;
	if (ipc_send(c, req) == -1) {
		errno = ENOTCONN;
		return -1;
	}
	if (fn == NULL)
		return 0;
	p = xcalloc(1, sizeof(*p));
	p->id = req->id;
	p->fn = fn;
	p->arg = arg;
	TAILQ_INSERT_TAIL(&c->pending, p, entry);
	return 0;
}

uint64_t ipc_conn_id(const struct ipc_conn *c) { return c->id; }
pid_t ipc_conn_pid(const struct ipc_conn *c) { return c->cred.pid; }
uid_t ipc_conn_uid(const struct ipc_conn *c) { return c->cred.uid; }
void *ipc_conn_arg(const struct ipc_conn *c) { return c->arg; }
void ipc_conn_set_data(struct ipc_conn *c, void *data) { c->data = data; }
void *ipc_conn_data(const struct ipc_conn *c) { return c->data; }
uint32_t ipc_conn_topics(const struct ipc_conn *c) { return c->topics; }

int
ipc_sync_connect(const char *path)
{
	return unix_connect(path, 0);
}

int
ipc_sync_send(int fd, const Envelope *env)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (ipc_frame_pack(env, &buf, &len) == -1)
		return -1;
	rc = write_full(fd, buf, len);
	free(buf);
	return rc;
}

/*
 * len bytes: what recv with flags gets at once, then read_full_timeout
 * for the rest. MSG_DONTWAIT for a body, there as a rule once its header
 * is; MSG_WAITALL when there is no timeout, so that a blocking socket
 * waits in recv without a poll first. Each saves a syscall per frame.
 */
static int
sync_read(int fd, uint8_t *p, size_t len, int flags, int timeout_ms)
{
	ssize_t n = recv(fd, p, len, flags);

	if (n == (ssize_t)len)
		return 0;
	if (n == 0) {
		errno = ECONNRESET;
		return -1;
	}
	if (n == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ENOTSOCK)
			return -1;
		n = 0;
	}
	return read_full_timeout(fd, p + n, len - (size_t)n, timeout_ms);
}

int
ipc_sync_recv(int fd, Envelope **env, int timeout_ms)
{
	uint8_t hdr[4], stackbuf[PACK_STACK], *data = stackbuf;
	uint32_t n;
	int rc;

	if (timeout_ms < 0)
		rc = sync_read(fd, hdr, 4, MSG_WAITALL, timeout_ms);
	else
		rc = read_full_timeout(fd, hdr, 4, timeout_ms);
	if (rc == -1)
		return -1;
	n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	    (uint32_t)hdr[2] << 8 | hdr[3];
	if (n > IPC_FRAME_MAX) {
		errno = EPROTO;
		return -1;
	}
	if (n > sizeof(stackbuf))
		data = xmalloc(n);
	rc = sync_read(fd, data, n, MSG_DONTWAIT, timeout_ms);
	if (rc == 0)
		*env = envelope__unpack(NULL, n, data);
	if (data != stackbuf)
		free(data);
	if (rc == -1)
		return -1;
	if (*env == NULL) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

int
ipc_sync_call(int fd, Envelope *req, Envelope **rep, int timeout_ms)
{
	static uint64_t next_id;
	Envelope *env;

	req->kind = KIND__KIND_REQUEST;
	req->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);	/* fsd calls from several threads */
	if (ipc_sync_send(fd, req) == -1)
		return -1;
	for (;;) {
		if (ipc_sync_recv(fd, &env, timeout_ms) == -1)
			return -1;
		if (env->kind == KIND__KIND_REPLY && env->id == req->id) {
			*rep = env;
			return 0;
		}
		envelope__free_unpacked(env, NULL);
	}
}
