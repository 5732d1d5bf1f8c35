/*
 * What the libFuzzer harnesses share: taking a fuzzed input apart, a
 * scratch runtime directory, and a client on a daemon's socket that
 * writes frames and turns the daemon's loop until it has served them.
 * Each harness is one tests/fuzz/fuzz_<name>.c; tests/fuzz/run runs them.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int	LLVMFuzzerInitialize(int *argc, char ***argv);

/* An input read front to back; past its end every read gives zeros. */
struct fuzz_in {
	const uint8_t	*p;
	size_t		 n;
};

static inline uint8_t
fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->n > 0) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

static inline uint32_t
fuzz_u16(struct fuzz_in *in)
{
	uint32_t v = fuzz_u8(in);

	return v << 8 | fuzz_u8(in);
}

static inline uint32_t
fuzz_u32(struct fuzz_in *in)
{
	uint32_t v = fuzz_u16(in);

	return v << 16 | fuzz_u16(in);
}

/* Up to want bytes: *len says how many there were. */
static inline const uint8_t *
fuzz_take(struct fuzz_in *in, size_t want, size_t *len)
{
	const uint8_t *p = in->p;

	*len = want < in->n ? want : in->n;
	in->p += *len;
	in->n -= *len;
	return p;
}

/* The messages of an input: each a 2-byte big-endian length and its bytes. */
static inline const uint8_t *
fuzz_next_msg(struct fuzz_in *in, size_t *len)
{
	if (in->n < 2)
		return NULL;
	return fuzz_take(in, fuzz_u16(in), len);
}

/* A runtime directory of our own, removed with what is in it at exit. */
static char fuzz_rundir_path[] = "/tmp/ocfs2-fuzz-XXXXXX";

static void
fuzz_rundir_remove(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fuzz_rundir_path);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz: cannot remove %s\n", fuzz_rundir_path);
}

static inline const char *
fuzz_rundir(void)
{
	if (mkdtemp(fuzz_rundir_path) == NULL) {
		perror("fuzz: mkdtemp");
		exit(1);
	}
	atexit(fuzz_rundir_remove);
	return fuzz_rundir_path;
}

static inline void
fuzz_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(text, f) == EOF || fclose(f) == EOF) {
		fprintf(stderr, "fuzz: cannot write %s\n", path);
		exit(1);
	}
}

/*
 * A connection to a server of this process (its loop is `base`), made
 * again whenever the server closed it (a message it refused).
 */
struct fuzz_client {
	struct event_base	*base;
	char			 path[256];
	int			 fd;
	/* connections made by another process (fuzz_client_standin) */
	pid_t			 standin;
	int			 standin_ctl;
};

/*
 * The stand-in: a child that connects for us and hands over the socket,
 * so that the server sees its pid, not ours. hbd kills the processes
 * that registered as disk writers when it fences: the stand-in, never
 * the fuzzer. A new one is made when the last one was killed.
 */
static inline void
fuzz_standin_start(struct fuzz_client *fc)
{
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } cm;
	struct iovec iov;
	struct msghdr mh;
	int sv[2], fd;
	char c;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1 ||
	    (fc->standin = fork()) == -1) {
		perror("fuzz: stand-in");
		exit(1);
	}
	if (fc->standin != 0) {
		close(sv[1]);
		fc->standin_ctl = sv[0];
		return;
	}
	close(sv[0]);
	while (read(sv[1], &c, 1) == 1) {
		if ((fd = ipc_sync_connect(fc->path)) == -1)
			_exit(1);
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = &c;
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		cm.h.cmsg_level = SOL_SOCKET;
		cm.h.cmsg_type = SCM_RIGHTS;
		cm.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&cm.h), &fd, sizeof(int));
		if (sendmsg(sv[1], &mh, 0) != 1)
			_exit(1);
		close(fd);
	}
	_exit(0);
}

static inline int
fuzz_standin_connect(struct fuzz_client *fc)
{
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } cm;
	struct iovec iov;
	struct msghdr mh;
	char c = 'c';
	int fd = -1;

	for (;;) {
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = &c;
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		if (send(fc->standin_ctl, &c, 1, MSG_NOSIGNAL) == 1 &&
		    recvmsg(fc->standin_ctl, &mh, 0) == 1 && mh.msg_controllen > 0) {
			memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
			return fd;
		}
		/* killed (a fence): reap it, make another */
		close(fc->standin_ctl);
		waitpid(fc->standin, NULL, 0);
		fuzz_standin_start(fc);
	}
}

static inline void
fuzz_client_connect(struct fuzz_client *fc)
{
	fc->fd = fc->standin > 0 ? fuzz_standin_connect(fc) : ipc_sync_connect(fc->path);
	if (fc->fd == -1 || fcntl(fc->fd, F_SETFL, O_NONBLOCK) == -1) {
		fprintf(stderr, "fuzz: cannot connect to %s: %s\n", fc->path,
		    strerror(errno));
		exit(1);
	}
	/* the server accepts it */
	event_base_loop(fc->base, EVLOOP_NONBLOCK);
}

static inline void
fuzz_client_init(struct fuzz_client *fc, struct event_base *base, const char *path)
{
	fc->base = base;
	snprintf(fc->path, sizeof(fc->path), "%s", path);
	fc->standin = 0;
	fuzz_client_connect(fc);
}

/* The same, connecting through a stand-in process. */
static inline void
fuzz_client_init_standin(struct fuzz_client *fc, struct event_base *base, const char *path)
{
	fc->base = base;
	snprintf(fc->path, sizeof(fc->path), "%s", path);
	fuzz_standin_start(fc);
	fuzz_client_connect(fc);
}

/* Read whatever the server sent; 0 once it closed the connection. */
static inline int
fuzz_client_drain(struct fuzz_client *fc)
{
	uint8_t buf[65536];
	ssize_t n;

	for (;;) {
		n = recv(fc->fd, buf, sizeof(buf), 0);
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n == -1 && errno == EINTR)
			continue;
		return 0;
	}
}

/* Write raw bytes, let the server serve them, take its answers. */
static inline void
fuzz_client_write(struct fuzz_client *fc, const uint8_t *buf, size_t len)
{
	ssize_t n;
	int i, open = 1;

	while (len > 0) {
		n = send(fc->fd, buf, len, MSG_NOSIGNAL);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			event_base_loop(fc->base, EVLOOP_NONBLOCK);
			if (!fuzz_client_drain(fc))
				break;
			continue;
		}
		if (n == -1)
			break;	/* closed by the server: reconnect below */
		buf += n;
		len -= (size_t)n;
	}
	/* reading, dispatching, replying, and freeing what was closed */
	for (i = 0; i < 3; i++) {
		event_base_loop(fc->base, EVLOOP_NONBLOCK);
		open = fuzz_client_drain(fc);
	}
	if (len > 0 || !open) {
		close(fc->fd);
		event_base_loop(fc->base, EVLOOP_NONBLOCK);
		fuzz_client_connect(fc);
	}
}

/*
 * One Envelope as a frame, if it decodes: frames that do not are
 * fuzz_ipc's (they close the connection before any handler runs).
 */
static inline void
fuzz_client_send_envelope(struct fuzz_client *fc, const uint8_t *msg, size_t len)
{
	Envelope *env;
	uint8_t *frame;
	size_t flen;

	if ((env = envelope__unpack(NULL, len, msg)) == NULL)
		return;
	if (ipc_frame_pack(env, &frame, &flen) == 0) {
		fuzz_client_write(fc, frame, flen);
		free(frame);
	}
	envelope__free_unpacked(env, NULL);
}

/* Every message of the input (fuzz_next_msg) to the server, in order. */
static inline void
fuzz_client_send_all(struct fuzz_client *fc, const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	const uint8_t *msg;
	size_t len;

	while ((msg = fuzz_next_msg(&in, &len)) != NULL)
		fuzz_client_send_envelope(fc, msg, len);
}

#endif
