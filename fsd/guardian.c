/*
 * fsd's guardian: a child process that aborts fsd's FUSE connection when
 * fsd dies without unmounting.
 *
 * A killed fsd cannot end while one of its threads is inside the kernel
 * waiting for a page that a request only fsd could answer holds locked (a
 * notify-inval or notify-store behind a READ, or behind a write(2) whose
 * partial last page stays locked until its WRITE is answered). That
 * thread keeps the process's files, so /dev/fuse is never closed, nothing
 * fails the requests, and the dead fsd keeps its cluster locks: the other
 * nodes wait for them for ever. Writing to the connection's abort file
 * (fusectl) fails every request: the page is let go, the thread leaves the
 * kernel, the process ends, and its lock manager sees it go.
 *
 * The guardian learns of the death from PR_SET_PDEATHSIG, which signals it
 * when the *thread* that forked it exits: fsd's main thread, which only
 * waits in the FUSE loop and serves no request, so it is never the thread
 * stuck, and exits at once on SIGKILL. The socket to fsd would only say so
 * once every thread is gone.
 *
 * It is forked at start-up, before fsd opens the volume or starts a
 * thread: it holds none of fsd's files, sockets, locks or cache (it closes
 * what fsd inherited too, keeping stderr for its one line of log), sits in
 * a session of its own (a kill of fsd's process group does not reach it),
 * and keeps no directory busy. fsd waits until the signal is armed before
 * going on: fsd's main thread cannot die unnoticed between fork and prctl
 * (if it died before, the whole process did, having no other thread yet:
 * the guardian then has another parent, which getppid() tells).
 *
 * Once mounted, fsd sends the connection's number; the guardian opens that
 * connection's abort file at once and keeps it: the open file stays bound
 * to that connection (fs/fuse/control.c clears its link when the
 * connection goes, and a later mount reusing the number gets files of its
 * own), so a late abort can never hit another mount. On a clean unmount
 * fsd says so and the guardian exits without aborting anything.
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "ops.h"

#define GUARDIAN_SIG	SIGUSR1		/* fsd's main thread exited */
#define GUARDIAN_FD	3		/* its socket, in the guardian */

enum {
	GUARD_ARMED = 'a',	/* guardian -> fsd: the death signal is set */
	GUARD_WATCH = 'w',	/* fsd -> guardian: mounted, connection conn */
	GUARD_CLEAN = 'c',	/* fsd -> guardian: unmounted cleanly, exit */
};

struct guardian_msg {
	char		what;
	uint32_t	conn;
};

/* In the guardian: its socket as GUARDIAN_FD, stderr, nothing else. */
static void
keep_only_socket(int sock)
{
	int null;

	if (sock != GUARDIAN_FD && dup2(sock, GUARDIAN_FD) == -1)
		_exit(1);
	close_range(GUARDIAN_FD + 1, ~0U, 0);
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
}

static int
open_abort(uint32_t conn)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", conn);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		log_warn("guardian: %s: fsd's connection cannot be aborted if fsd dies stuck",
		    path);
	return fd;
}

static __attribute__((noreturn)) void
guardian_run(int sock, pid_t fsd)
{
	const char armed = GUARD_ARMED;
	struct guardian_msg m;
	struct pollfd pfd[2];
	sigset_t sig;
	uint32_t conn = 0;
	int abort_fd = -1;
	ssize_t n;

	keep_only_socket(sock);
	sock = GUARDIAN_FD;
	prctl(PR_SET_NAME, "fsd-guardian");
	setsid();
	if (chdir("/") == -1)
		_exit(1);
	/* fsd stops on these and tells us; we stay until it is gone */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* blocked first: a death signal from now on waits in the signalfd */
	sigemptyset(&sig);
	sigaddset(&sig, GUARDIAN_SIG);
	sigprocmask(SIG_BLOCK, &sig, NULL);
	pfd[1].fd = signalfd(-1, &sig, SFD_CLOEXEC);
	if (pfd[1].fd == -1 || prctl(PR_SET_PDEATHSIG, GUARDIAN_SIG) == -1) {
		log_warn("guardian: cannot watch fsd (pid %d)", (int)fsd);
		_exit(1);
	}
	if (getppid() != fsd)
		_exit(0);	/* fsd died before it mounted anything */
	if (send(sock, &armed, 1, MSG_NOSIGNAL) != 1)
		_exit(0);
	pfd[0].fd = sock;
	pfd[0].events = pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("guardian of fsd (pid %d): poll", (int)fsd);
			break;
		}
		/* fsd's word first: a clean unmount may come with the signal */
		if (pfd[0].revents != 0) {
			n = recv(sock, &m, sizeof(m), 0);
			if (n == -1 && errno == EINTR)
				continue;
			if (n != (ssize_t)sizeof(m))
				break;		/* fsd is gone */
			if (m.what == GUARD_CLEAN)
				_exit(0);
			if (m.what == GUARD_WATCH && abort_fd == -1) {
				conn = m.conn;
				abort_fd = open_abort(conn);
			}
			continue;
		}
		if (pfd[1].revents != 0)
			break;		/* fsd's main thread exited */
	}
	if (abort_fd == -1)
		_exit(0);
	if (write(abort_fd, "1", 1) != 1)
		log_warn("guardian: fsd (pid %d) died without unmounting; aborting its FUSE "
		    "connection %u", (int)fsd, conn);
	else
		log_warnx("guardian: fsd (pid %d) died without unmounting: its FUSE connection %u "
		    "aborted, so that no thread of it stays blocked in the kernel and whatever "
		    "waits for the mount gets an error", (int)fsd, conn);
	_exit(0);
}

int
guardian_start(struct fsd_guardian *gd)
{
	pid_t me = getpid(), pid;
	ssize_t n;
	int sv[2];
	char c;

	gd->pid = -1;
	gd->fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("cannot start the guardian: socketpair");
		return -1;
	}
	if ((pid = fork()) == -1) {
		log_warn("cannot start the guardian: fork");
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		guardian_run(sv[1], me);
	}
	close(sv[1]);
	do
		n = recv(sv[0], &c, 1, 0);
	while (n == -1 && errno == EINTR);
	if (n != 1 || c != GUARD_ARMED) {
		log_warnx("the guardian (pid %d) did not start", (int)pid);
		close(sv[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	gd->pid = pid;
	gd->fd = sv[0];
	return 0;
}

static void
tell(struct fsd_guardian *gd, char what, uint32_t conn)
{
	struct guardian_msg m;

	memset(&m, 0, sizeof(m));
	m.what = what;
	m.conn = conn;
	if (send(gd->fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		log_warn("guardian (pid %d): telling it '%c'", (int)gd->pid, what);
}

void
guardian_watch(struct fsd_guardian *gd, const struct fsd *fs)
{
	if (gd->fd == -1)
		return;
	if (!fs->fuse_conn_known) {
		log_warnx("our FUSE connection's number is not known: if fsd dies stuck, "
		    "nothing aborts it");
		guardian_release(gd);
		return;
	}
	tell(gd, GUARD_WATCH, fs->fuse_conn);
}

void
guardian_release(struct fsd_guardian *gd)
{
	pid_t r;
	int status;

	if (gd->fd == -1)
		return;
	tell(gd, GUARD_CLEAN, 0);
	close(gd->fd);
	gd->fd = -1;
	while ((r = waitpid(gd->pid, &status, 0)) == -1 && errno == EINTR)
		;
	if (r == gd->pid && WIFSIGNALED(status))
		log_warnx("the guardian (pid %d) had been killed (signal %d)", (int)gd->pid,
		    WTERMSIG(status));
	gd->pid = -1;
}
