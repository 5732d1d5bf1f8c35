#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "log.h"
#include "stream.h"
#include "util.h"

#define IN_DEFAULT	(16u << 10)	/* input buffer between large frames */
#define OUT_IOV		16		/* chains of the backlog per write */

struct stream {
	int		 fd;
	struct event	*rev;		/* persistent, from stream_start */
	struct event	*wev;		/* added while connecting or backlogged */
	struct event	*reaper;
	struct evbuffer	*out;
	uint8_t		*in;
	size_t		 in_cap, in_off, in_end;
	int		 reading;
	int		 waiting;	/* wev is added */
	int		 connecting;
	int		 connect_err;	/* refused at once: reported from the loop */
	int		 dead;
	stream_fn	*on_read;
	stream_fn	*on_connected;
	stream_error_fn	*on_error;
	void		*arg;
};

static void
wait_writable(struct stream *s)
{
	if (s->waiting)
		return;
	if (event_add(s->wev, NULL) == -1)
		fatalx("stream: cannot watch a socket for writing");
	s->waiting = 1;
}

/*
 * Write as much of the backlog as the socket takes, in one sendmsg.
 * 0: done or EAGAIN; -1: a hard error (errno), the caller reports it.
 */
static int
write_backlog(struct stream *s)
{
	struct evbuffer_iovec v[OUT_IOV];
	struct iovec iov[OUT_IOV];
	struct msghdr mh = { .msg_iov = iov };
	ssize_t n;
	int i, nv;

	if (evbuffer_get_length(s->out) == 0)
		return 0;
	nv = evbuffer_peek(s->out, -1, NULL, v, OUT_IOV);
	if (nv > OUT_IOV)
		nv = OUT_IOV;
	for (i = 0; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	mh.msg_iovlen = (size_t)nv;
	n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == -1)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	evbuffer_drain(s->out, (size_t)n);
	return 0;
}

static void
stream_writable(evutil_socket_t fd, short ev, void *arg)
{
	struct stream *s = arg;
	socklen_t len = sizeof(int);
	int err;

	(void)fd;
	(void)ev;
	if (s->connecting) {
		s->connecting = 0;
		s->waiting = 0;
		event_del(s->wev);
		err = s->connect_err;
		if (err == 0 && getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0) {
			s->on_error(s, err, s->arg);
			return;
		}
		stream_start(s);
		s->on_connected(s, s->arg);
		stream_flush(s);
		return;
	}
	if (write_backlog(s) == -1) {
		s->on_error(s, errno, s->arg);
		return;
	}
	if (evbuffer_get_length(s->out) == 0) {
		event_del(s->wev);
		s->waiting = 0;
	}
}

static void
stream_readable(evutil_socket_t fd, short ev, void *arg)
{
	struct stream *s = arg;
	ssize_t n;

	(void)fd;
	(void)ev;
	/* Room for what a wakeup may bring: keep the partial frame, move it down. */
	if (s->in_off > 0 && s->in_cap - s->in_end < s->in_cap / 4) {
		memmove(s->in, s->in + s->in_off, s->in_end - s->in_off);
		s->in_end -= s->in_off;
		s->in_off = 0;
	}
	if (s->in_end == s->in_cap) {
		s->in_cap *= 2;
		s->in = xrealloc(s->in, s->in_cap);
	}
	n = read(s->fd, s->in + s->in_end, s->in_cap - s->in_end);
	if (n == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			s->on_error(s, errno, s->arg);
		return;
	}
	if (n == 0) {
		s->on_error(s, 0, s->arg);
		return;
	}
	s->in_end += (size_t)n;
	s->on_read(s, s->arg);
	/* A large frame's buffer goes once it is consumed. */
	if (!s->dead && s->in_off == s->in_end && s->in_cap > IN_DEFAULT) {
		free(s->in);
		s->in_cap = IN_DEFAULT;
		s->in = xmalloc(s->in_cap);
		s->in_off = s->in_end = 0;
	}
}

static void
stream_reap(evutil_socket_t fd, short ev, void *arg)
{
	struct stream *s = arg;

	(void)fd;
	(void)ev;
	event_free(s->rev);
	event_free(s->wev);
	event_free(s->reaper);
	evbuffer_free(s->out);
	free(s->in);
	free(s);
}

struct stream *
stream_new(struct event_base *base, int fd, stream_fn *on_read,
    stream_error_fn *on_error, void *arg)
{
	struct stream *s = xcalloc(1, sizeof(*s));

	s->fd = fd;
	s->on_read = on_read;
	s->on_error = on_error;
	s->arg = arg;
	s->in_cap = IN_DEFAULT;
	s->in = xmalloc(s->in_cap);
	s->rev = event_new(base, fd, EV_READ | EV_PERSIST, stream_readable, s);
	s->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, stream_writable, s);
	s->reaper = event_new(base, -1, 0, stream_reap, s);
	s->out = evbuffer_new();
	if (s->rev == NULL || s->wev == NULL || s->reaper == NULL || s->out == NULL)
		fatalx("stream: out of memory for a connection");
	return s;
}

void
stream_start(struct stream *s)
{
	if (s->reading || s->dead)
		return;
	if (event_add(s->rev, NULL) == -1)
		fatalx("stream: cannot watch a socket for reading");
	s->reading = 1;
}

int
stream_connect(struct stream *s, const struct sockaddr *sa, socklen_t len,
    stream_fn *on_connected)
{
	s->on_connected = on_connected;
	if (connect(s->fd, sa, len) == -1) {
		/* Refused at once on loopback: a failed attempt like any other. */
		if (errno == ECONNREFUSED)
			s->connect_err = errno;
		else if (errno != EINPROGRESS && errno != EINTR)
			return -1;
	}
	s->connecting = 1;
	if (s->connect_err != 0)
		event_active(s->wev, EV_WRITE, 1);
	else
		wait_writable(s);
	return 0;
}

void
stream_free(struct stream *s)
{
	if (s->dead)
		return;
	s->dead = 1;
	event_del(s->rev);
	event_del(s->wev);
	close(s->fd);
	event_active(s->reaper, 0, 0);
}

int
stream_fd(const struct stream *s)
{
	return s->fd;
}

const uint8_t *
stream_data(const struct stream *s, size_t *len)
{
	*len = s->in_end - s->in_off;
	return s->in + s->in_off;
}

void
stream_consume(struct stream *s, size_t n)
{
	s->in_off += n;
	if (s->in_off >= s->in_end)
		s->in_off = s->in_end = 0;
}

void
stream_expect(struct stream *s, size_t n)
{
	if (s->in_cap - s->in_off >= n)
		return;
	memmove(s->in, s->in + s->in_off, s->in_end - s->in_off);
	s->in_end -= s->in_off;
	s->in_off = 0;
	if (s->in_cap < n) {
		s->in_cap = n;
		s->in = xrealloc(s->in, s->in_cap);
	}
}

void
stream_queue(struct stream *s, const void *buf, size_t len)
{
	if (s->dead)
		return;
	if (evbuffer_add(s->out, buf, len) == -1)
		fatalx("stream: out of memory queueing %zu bytes", len);
}

/* A hard error waits for the write event, which reports it from the loop. */
void
stream_flush(struct stream *s)
{
	if (s->dead || s->waiting || s->connecting)
		return;
	if (write_backlog(s) == -1 || evbuffer_get_length(s->out) > 0)
		wait_writable(s);
}

void
stream_write(struct stream *s, const void *buf, size_t len)
{
	ssize_t n = 0;

	if (s->dead)
		return;
	if (!s->waiting && !s->connecting && evbuffer_get_length(s->out) == 0) {
		n = send(s->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			n = 0;
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				stream_queue(s, buf, len);
				wait_writable(s);
				return;
			}
		}
		if ((size_t)n == len)
			return;
	}
	/* The socket is full, or a backlog or a connect is in the way. */
	stream_queue(s, (const uint8_t *)buf + n, len - (size_t)n);
	if (!s->connecting)
		wait_writable(s);
}

size_t
stream_queued(const struct stream *s)
{
	return evbuffer_get_length(s->out);
}
