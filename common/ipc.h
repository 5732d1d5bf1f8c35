/*
 * Local IPC between daemons and their clients: Unix stream sockets in
 * a libevent loop (common/stream.c), each frame a 4-byte big-endian length and one
 * protobuf-c Envelope. Requests carry ids and get exactly one reply,
 * one-way requests none (the server logs a refusal); events are pushed
 * to connections that subscribed to their topic.
 *
 * A frame over the size limit (checked before allocating), one that
 * does not decode, a request whose payload does not match its type, or
 * a peer whose credentials we refuse closes that one connection.
 * Connecting or listening makes the process ignore SIGPIPE, so that a
 * peer that vanishes costs only its connection.
 */
#ifndef OCFS2_IPC_H
#define OCFS2_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "envelope.pb-c.h"

#define IPC_FRAME_MAX		(4u << 20)
#define IPC_OUTQ_MAX		(32u << 20)	/* a slower reader is dropped */

struct event_base;
struct ipc_server;
struct ipc_conn;

typedef void ipc_request_fn(struct ipc_conn *c, const Envelope *req);
typedef void ipc_reply_fn(const Envelope *rep, void *arg);	/* rep NULL: connection lost */
typedef void ipc_event_fn(struct ipc_conn *c, const Envelope *ev);
typedef void ipc_close_fn(struct ipc_conn *c);

/* One entry of a daemon's dispatch table. */
struct ipc_handler {
	MsgType			 type;
	Envelope__PayloadCase	 payload;	/* required payload, or _NOT_SET */
	ipc_request_fn		*fn;
};

/* Server side. */
struct ipc_server *ipc_server_listen(struct event_base *base, const char *path,
	    const char *daemon, const struct ipc_handler *table, size_t ntable,
	    void *arg);
void	ipc_server_on_close(struct ipc_server *s, ipc_close_fn *fn);
void	ipc_server_free(struct ipc_server *s);
void	*ipc_server_arg(const struct ipc_server *s);
size_t	ipc_server_nconns(const struct ipc_server *s);
/* Push an event to every connection subscribed to one of `topics`. */
void	ipc_publish(struct ipc_server *s, uint32_t topics, Envelope *ev);
struct ipc_conn *ipc_server_find(struct ipc_server *s, uint64_t conn_id);

/* Client side: connect to a daemon's socket. */
struct ipc_conn *ipc_connect(struct event_base *base, const char *path,
	    ipc_event_fn *on_event, ipc_close_fn *on_close, void *arg);
/*
 * fn NULL: a one-way request, which the server does not answer; for
 * requests served at once (a reply a server builds later from the id
 * alone would come back to nobody).
 */
int	ipc_request(struct ipc_conn *c, Envelope *req, ipc_reply_fn *fn, void *arg);

/*
 * A client connection that redials: to <rundir>/<daemon>.sock now, and
 * again retry_ms after each failed attempt or lost connection. on_up
 * runs with each new connection, on_down (conn NULL) when one is lost;
 * events reach on_event with ipc_conn_arg() = arg.
 */
struct ipc_redial;
typedef void ipc_redial_fn(struct ipc_conn *c, void *arg);
struct ipc_redial *ipc_redial(struct event_base *base, const char *rundir,
	    const char *daemon, unsigned retry_ms, ipc_event_fn *on_event,
	    ipc_redial_fn *on_up, ipc_redial_fn *on_down, void *arg);
/* The connection, or NULL while there is none. */
struct ipc_conn *ipc_redial_conn(const struct ipc_redial *);

/*
 * Client side: run an event's entry of `table` (an ipc_handler's fn gets
 * the event). 1 when it ran, 0 for an event the table does not name;
 * -1 when the event lacks the entry's payload: logged as `from`'s, and c
 * is closed (a redialled connection comes back).
 */
int	ipc_event_dispatch(struct ipc_conn *c, const Envelope *ev,
	    const struct ipc_handler *table, size_t ntable, const char *from);

/* Either side. */
void	ipc_reply(struct ipc_conn *c, const Envelope *req, Envelope *rep);
void	ipc_reply_status(struct ipc_conn *c, const Envelope *req, int status,
	    const char *fmt, ...) __attribute__((__format__(printf, 4, 5)));
int	ipc_send(struct ipc_conn *c, const Envelope *env);
void	ipc_conn_close(struct ipc_conn *c);
uint64_t ipc_conn_id(const struct ipc_conn *c);
pid_t	ipc_conn_pid(const struct ipc_conn *c);
uid_t	ipc_conn_uid(const struct ipc_conn *c);
void	*ipc_conn_arg(const struct ipc_conn *c);	/* the server's or client's arg */
void	ipc_conn_set_data(struct ipc_conn *c, void *data);
void	*ipc_conn_data(const struct ipc_conn *c);
uint32_t ipc_conn_topics(const struct ipc_conn *c);

/* Framing shared with the blocking client. */
int	ipc_frame_pack(const Envelope *env, uint8_t **buf, size_t *len);

/*
 * Blocking client, for tools and tests: one request at a time, events
 * received while waiting for a reply are dropped.
 */
int	ipc_sync_connect(const char *path);
int	ipc_sync_send(int fd, const Envelope *env);
/* 0 ok, -1 with errno (ETIMEDOUT, EPROTO for a bad frame, ECONNRESET). */
int	ipc_sync_recv(int fd, Envelope **env, int timeout_ms);
int	ipc_sync_call(int fd, Envelope *req, Envelope **rep, int timeout_ms);

#endif
