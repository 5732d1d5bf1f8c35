/*
 * fsd's status socket, <rundir>/fsd-<UUID>.sock (fsd/ctl.c), served by
 * its own thread: its dispatch table on a mounted local volume. The
 * input is a series of Envelopes (fuzz.h), each sent as a request,
 * whose answer (a reply, or the connection closed) is awaited.
 */
#include "fuzz.h"
#include "fsd/fsd.h"

static struct fsd fs;
static char sock[256];
static int fd = -1;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *rundir = fuzz_rundir();
	char err[256];

	(void)argc;
	(void)argv;
	snprintf(fs.vol.uuid, sizeof(fs.vol.uuid), "0123456789ABCDEF0123456789ABCDEF");
	snprintf(fs.vol.label, sizeof(fs.vol.label), "fuzz");
	fs.vol.path = "/dev/fuzz";
	fs.slot = 0;
	if (ctl_start(&fs, rundir, "/mnt/fuzz", err, sizeof(err)) == -1 || fs.ctl == NULL)
		fatalx("no status socket: %s", err);
	ctl_ready(&fs);
	snprintf(sock, sizeof(sock), "%s/fsd-%s.sock", rundir, fs.vol.uuid);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	const uint8_t *msg;
	Envelope *req, *rep;
	size_t len;

	while ((msg = fuzz_next_msg(&in, &len)) != NULL) {
		if ((req = envelope__unpack(NULL, len, msg)) == NULL)
			continue;
		/* a request, so that an answer or a close always comes */
		req->kind = KIND__KIND_REQUEST;
		if (req->id == 0)
			req->id = 1;
		if (fd == -1 && (fd = ipc_sync_connect(sock)) == -1)
			fatal("connect %s", sock);
		if (ipc_sync_send(fd, req) == -1 || ipc_sync_recv(fd, &rep, 10000) == -1) {
			if (errno == ETIMEDOUT)
				abort();	/* the status thread did not answer */
			close(fd);
			fd = -1;
		} else {
			envelope__free_unpacked(rep, NULL);
		}
		envelope__free_unpacked(req, NULL);
	}
	return 0;
}
