/*
 * A non-blocking stream socket in a libevent loop, with our own input
 * buffer and an output queue: the transport under common/ipc.c and
 * netd's links. A wakeup costs one read() (no FIONREAD, no copy out of
 * a chain of buffers), the caller parses frames in place, and a write
 * goes straight to the socket unless a backlog waits for writability;
 * the write event is in epoll only while there is a backlog.
 *
 * Callbacks run from the loop, never from inside stream_write or
 * stream_flush. on_error's err is 0 for an orderly close by the peer.
 * stream_free may be called from any callback: the memory goes later.
 */
#ifndef OCFS2_STREAM_H
#define OCFS2_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct stream;

typedef void stream_fn(struct stream *, void *arg);
typedef void stream_error_fn(struct stream *, int err, void *arg);

/* Takes fd (closed by stream_free); reads only after stream_start. */
struct stream *stream_new(struct event_base *base, int fd, stream_fn *on_read,
	    stream_error_fn *on_error, void *arg);
void	stream_start(struct stream *);
/*
 * Connect fd to sa; on_connected runs once it is (then reading starts),
 * on_error if it fails. -1 with errno: it failed at once.
 */
int	stream_connect(struct stream *, const struct sockaddr *sa, socklen_t len,
	    stream_fn *on_connected);
void	stream_free(struct stream *);
int	stream_fd(const struct stream *);

/* Input: the unconsumed bytes, contiguous. */
const uint8_t *stream_data(const struct stream *, size_t *len);
void	stream_consume(struct stream *, size_t n);
/* Make room for a frame of n bytes at the front (n is the caller's limit). */
void	stream_expect(struct stream *, size_t n);

/* Output: queue only, or queue and write what the socket takes now. */
void	stream_queue(struct stream *, const void *buf, size_t len);
void	stream_flush(struct stream *);
void	stream_write(struct stream *, const void *buf, size_t len);
size_t	stream_queued(const struct stream *);

#endif
