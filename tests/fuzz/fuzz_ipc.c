/*
 * The IPC frame decoder (common/ipc.c over common/stream.c): a 4-byte
 * length and an Envelope, any number of them in one read, split
 * anywhere. The first input byte says which side reads the rest: a
 * server (requests, one-way requests, its dispatch table, the requests
 * every daemon answers) or a client (replies to its requests in
 * flight, events).
 */
#include <sys/un.h>

#include "fuzz.h"

static struct event_base *base;
static struct fuzz_client to_server;
static struct ipc_conn *client;		/* ours, reading what peer_fd writes */
static int listen_fd, peer_fd = -1;
static char client_path[256];

/* The dispatch table: one request with a payload, one without. */
static void
handle_status(struct ipc_conn *c, const Envelope *req)
{
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_register(struct ipc_conn *c, const Envelope *req)
{
	ipc_reply_status(c, req, req->net_register->type == 0 ? EINVAL : 0,
	    "type %u key %u", req->net_register->type, req->net_register->key);
}

static const struct ipc_handler table[] = {
	{ MSG_TYPE__MSG_NETD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, handle_status },
	{ MSG_TYPE__MSG_NETD_REGISTER, ENVELOPE__PAYLOAD_NET_REGISTER, handle_register },
};

static void
on_reply(const Envelope *rep, void *arg)
{
	/* whatever came back, or NULL for a connection lost */
	(void)rep;
	(void)arg;
}

static void
on_event(struct ipc_conn *c, const Envelope *ev)
{
	(void)c;
	(void)ev;
}

static void
on_close(struct ipc_conn *c)
{
	if (c == client)
		client = NULL;
}

/* A client connection to our own listener, with requests in flight (ids 1..4). */
static void
client_connect(void)
{
	Envelope req = ENVELOPE__INIT;
	int i;

	if (peer_fd != -1)
		close(peer_fd);
	if ((client = ipc_connect(base, client_path, on_event, on_close, NULL)) == NULL ||
	    (peer_fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK)) == -1) {
		perror("fuzz: client connection");
		exit(1);
	}
	req.type = MSG_TYPE__MSG_PING;
	for (i = 0; i < 4; i++)
		ipc_request(client, &req, on_reply, NULL);
	event_base_loop(base, EVLOOP_NONBLOCK);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *rundir = fuzz_rundir();
	char path[256];

	(void)argc;
	(void)argv;
	if ((base = event_base_new()) == NULL)
		fatalx("event_base_new");
	snprintf(path, sizeof(path), "%s/server.sock", rundir);
	if (ipc_server_listen(base, path, "fuzz", table, nitems(table), NULL) == NULL)
		fatal("listen on %s", path);
	fuzz_client_init(&to_server, base, path);

	snprintf(client_path, sizeof(client_path), "%s/peer.sock", rundir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", client_path);
	if ((listen_fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(listen_fd, 4) == -1)
		fatal("listen on %s", client_path);
	client_connect();
	return 0;
}

/* Bytes to our client, as a daemon we talk to would send them. */
static void
to_client(const uint8_t *data, size_t size)
{
	char buf[65536];
	ssize_t n;
	int i;

	if (client == NULL)
		client_connect();
	if (send(peer_fd, data, size, MSG_NOSIGNAL) != (ssize_t)size)
		fatal("fuzz: writing to the client");
	for (i = 0; i < 3; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		while ((n = recv(peer_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		to_client(data + 1, size - 1);
	else
		fuzz_client_write(&to_server, data + 1, size - 1);
	return 0;
}
