/*
 * Another node's question about POSIX locks (fsd/plock.c): a PlockQuery
 * as netd delivers it to fsd's lock thread, which answers through netd.
 * The harness is netd: it takes fsd's handler registration, then hands
 * it each input as a message's payload and waits for the answer.
 */
#include <sys/un.h>

#include <pthread.h>

#include "fuzz.h"
#include "fsd/fsd.h"

#define PLOCK_QUERY	600	/* fsd/plock.c's netd message type */

static struct fsd fs;
static int listen_fd, netd_fd = -1;
static uint64_t handle;

/* netd's side of fsd's registration. */
static void *
accept_registration(void *arg)
{
	Envelope *req, rep = ENVELOPE__INIT;

	(void)arg;
	if ((netd_fd = accept(listen_fd, NULL, NULL)) == -1 ||
	    ipc_sync_recv(netd_fd, &req, 10000) == -1)
		fatal("fsd did not register");
	if (req->type != MSG_TYPE__MSG_NETD_REGISTER ||
	    req->payload_case != ENVELOPE__PAYLOAD_NET_REGISTER ||
	    req->net_register->type != PLOCK_QUERY)
		fatalx("fsd registered something else");
	rep.type = req->type;
	rep.id = req->id;
	rep.kind = KIND__KIND_REPLY;
	if (ipc_sync_send(netd_fd, &rep) == -1)
		fatal("answering fsd's registration");
	envelope__free_unpacked(req, NULL);
	return NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *rundir = fuzz_rundir();
	pthread_t t;
	char err[256];

	(void)argc;
	(void)argv;
	snprintf(fs.vol.uuid, sizeof(fs.vol.uuid), "0123456789ABCDEF0123456789ABCDEF");
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/netd.sock", rundir);
	if ((listen_fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(listen_fd, 4) == -1)
		fatal("listen on %s", sun.sun_path);
	if (pthread_create(&t, NULL, accept_registration, NULL) != 0)
		fatalx("pthread_create");
	if (plock_start(&fs, rundir, err, sizeof(err)) == -1)
		fatalx("plock_start: %s", err);
	pthread_join(t, NULL);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Envelope ev = ENVELOPE__INIT, *ans;
	Netd__NetMessage nm = NETD__NET_MESSAGE__INIT;

	nm.handle = ++handle;
	nm.from = 2;
	nm.type = PLOCK_QUERY;
	nm.payload.data = (uint8_t *)data;
	nm.payload.len = size;
	ev.type = MSG_TYPE__MSG_NETD_MESSAGE;
	ev.kind = KIND__KIND_EVENT;
	ev.payload_case = ENVELOPE__PAYLOAD_NET_MESSAGE;
	ev.net_message = &nm;
	if (ipc_sync_send(netd_fd, &ev) == -1 || ipc_sync_recv(netd_fd, &ans, 10000) == -1)
		abort();	/* fsd's lock thread went away or did not answer */
	if (ans->type != MSG_TYPE__MSG_NETD_REPLY ||
	    ans->payload_case != ENVELOPE__PAYLOAD_NET_REPLY ||
	    ans->net_reply->handle != handle)
		abort();	/* every query gets its answer, in order */
	envelope__free_unpacked(ans, NULL);
	return 0;
}
