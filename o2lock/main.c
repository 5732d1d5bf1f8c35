/*
 * o2lock: flock(1) across the cluster. Takes a lock of dlmd (EX, or PR
 * with -s), runs a command, and releases the lock when the command is
 * gone. The lock lives as long as our connection to dlmd: o2lock stays
 * in the foreground until the command exits, and passes SIGTERM and
 * SIGHUP on to it rather than die and drop the lock under it.
 */
#include <sys/pidfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "o2dlm.h"
#include "util.h"

#define EX_OK		0
#define EX_NOLOCK	1
#define EX_USAGE	2
#define EX_DOWN		3

#define DEFAULT_DOMAIN	"o2lock"
#define JOIN_WAIT_MS	100000	/* dlmd itself gives up on a join after 90 s */
#define REPLY_WAIT_MS	30000

static volatile sig_atomic_t child_pid;

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: o2lock [options] LOCKNAME CMD [ARGS...]\n"
	    "       o2lock [options] LOCKNAME -c 'SHELL COMMAND'\n"
	    "\n"
	    "Run a command while holding a cluster-wide lock of dlmd, as flock(1)\n"
	    "does with a file lock on one machine.\n"
	    "\n"
	    "  -x, --exclusive      take an exclusive (EX) lock (the default)\n"
	    "  -s, --shared         take a shared (PR) lock\n"
	    "  -n, --nonblock       fail at once if the lock is held elsewhere\n"
	    "  -w, --timeout SECS   give up after SECS seconds (fractions allowed)\n"
	    "  -d, --domain NAME    the lock domain (default \"" DEFAULT_DOMAIN "\")\n"
	    "  -c, --command CMD    run CMD with /bin/sh -c\n"
	    "  -v, --verbose        say when the lock is taken\n"
	    "      --rundir DIR     dlmd's runtime directory (default $OCFS2_RUNDIR,\n"
	    "                       else /run/ocfs2)\n"
	    "  -h, --help           this text\n"
	    "\n"
	    "LOCKNAME has 1 to 32 bytes. The lock is released when the command\n"
	    "exits. Exit status: the command's (128+N when killed by signal N), 1\n"
	    "if the lock was not obtained (busy with -n, or timed out), 2 usage, 3\n"
	    "dlmd not running.\n");
}

static void
forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static int
parse_seconds(const char *s, int *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0 ||
	    v > 86400.0 * 365)
		return -1;
	*ms = (int)(v * 1000 + 0.5);
	return 0;
}

/*
 * Run argv and wait for it, watching our dlmd connection meanwhile: if
 * it drops, the lock is gone, and the command should be told.
 */
static int
run_command(struct dlmc *c, char **argv, const char *lockname)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward_signal };
	struct sigaction old_int, old_quit;
	struct pollfd pfd[2];
	int status, pidfd, lost = 0;
	pid_t pid, w;

	/* As system(3): the terminal's ^C and ^\ are for the command. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	fflush(NULL);
	if ((pid = fork()) == -1) {
		fprintf(stderr, "o2lock: fork: %s\n", strerror(errno));
		return EX_NOLOCK;
	}
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "o2lock: %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);

	pidfd = pidfd_open(pid, 0);
	pfd[0].fd = pidfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = dlmc_fd(c);
	pfd[1].events = POLLIN;
	while (pidfd != -1) {
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents != 0)
			break;
		/* Events for our lock are of no use here: only loss counts. */
		if (pfd[1].revents != 0 && dlmc_dispatch(c) == -1 && !lost) {
			fprintf(stderr, "o2lock: lost the connection to dlmd: "
			    "%s is no longer held while the command runs\n",
			    lockname);
			lost = 1;
			pfd[1].fd = -1;
		}
	}
	if (pidfd != -1)
		close(pidfd);
	while ((w = waitpid(pid, &status, 0)) == -1 && errno == EINTR)
		continue;
	if (w == -1) {
		fprintf(stderr, "o2lock: waitpid: %s\n", strerror(errno));
		return EX_NOLOCK;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "shared", no_argument, NULL, 's' },
		{ "exclusive", no_argument, NULL, 'x' },
		{ "nonblock", no_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "domain", required_argument, NULL, 'd' },
		{ "command", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "rundir", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rundir = rundir_default(), *domain = DEFAULT_DOMAIN;
	const char *lockname, *shell_cmd = NULL;
	char *sh_argv[4], **cmd;
	struct dlmc_lock_args a = { 0 };
	struct dlmc_ast ast;
	struct dlmc *c;
	uint64_t lockid;
	int ch, mode = DLMC_EX, nonblock = 0, timeout_ms = -1, verbose = 0, rc;

	/* '+': the options of CMD are CMD's. */
	while ((ch = getopt_long(argc, argv, "+sxenw:d:c:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 's': mode = DLMC_PR; break;
		case 'x': case 'e': mode = DLMC_EX; break;
		case 'n': nonblock = 1; break;
		case 'w':
			if (parse_seconds(optarg, &timeout_ms) == -1) {
				fprintf(stderr, "o2lock: bad timeout %s\n", optarg);
				return EX_USAGE;
			}
			break;
		case 'd': domain = optarg; break;
		case 'c': shell_cmd = optarg; break;
		case 'v': verbose = 1; break;
		case 'R': rundir = optarg; break;
		case 'h': usage(stdout); return EX_OK;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	lockname = argv[optind++];
	/* flock's form: LOCKNAME -c 'command'. */
	if (shell_cmd == NULL && optind < argc && (strcmp(argv[optind], "-c") == 0 ||
	    strcmp(argv[optind], "--command") == 0)) {
		if (argc - optind != 2) {
			fprintf(stderr, "o2lock: -c takes one shell command\n");
			return EX_USAGE;
		}
		shell_cmd = argv[optind + 1];
		optind = argc;
	}
	if (shell_cmd != NULL) {
		if (optind != argc) {
			fprintf(stderr, "o2lock: -c and CMD are exclusive\n");
			return EX_USAGE;
		}
		sh_argv[0] = (char *)"sh";
		sh_argv[1] = (char *)"-c";
		sh_argv[2] = (char *)shell_cmd;
		sh_argv[3] = NULL;
		cmd = sh_argv;
	} else if (optind < argc) {
		cmd = argv + optind;
	} else {
		fprintf(stderr, "o2lock: no command to run\n");
		usage(stderr);
		return EX_USAGE;
	}
	if (strlen(lockname) == 0 || strlen(lockname) > DLMC_NAME_MAX) {
		fprintf(stderr, "o2lock: a lock name has 1 to %d bytes\n", DLMC_NAME_MAX);
		return EX_USAGE;
	}
	if (strlen(domain) == 0 || strlen(domain) > DLMC_DOMAIN_MAX) {
		fprintf(stderr, "o2lock: a domain name has 1 to %d bytes\n",
		    DLMC_DOMAIN_MAX);
		return EX_USAGE;
	}
	if (timeout_ms == 0)
		nonblock = 1;

	if ((c = dlmc_open(rundir, NULL, NULL)) == NULL) {
		fprintf(stderr, "o2lock: dlmd is not running (%s/dlmd.sock: %s)\n",
		    rundir, strerror(errno));
		return EX_DOWN;
	}
	/* The join counts against -w too. */
	dlmc_set_timeout(c, timeout_ms >= 0 && timeout_ms < JOIN_WAIT_MS && !nonblock ?
	    timeout_ms : JOIN_WAIT_MS);
	if (dlmc_join(c, domain, 0, NULL) == -1) {
		rc = errno == ECONNRESET || errno == EPROTO ? EX_DOWN : EX_NOLOCK;
		fprintf(stderr, "o2lock: cannot join domain %s: %s\n", domain,
		    errno == ETIMEDOUT ? "timed out" : dlmc_error(c));
		dlmc_close(c);
		return rc;
	}
	dlmc_set_timeout(c, REPLY_WAIT_MS);
	a.domain = domain;
	a.name = lockname;
	a.namelen = strlen(lockname);
	a.mode = mode;
	a.flags = nonblock ? DLMC_F_NOQUEUE : 0;
	if (dlmc_lock_wait(c, &a, nonblock ? -1 : timeout_ms, &lockid, &ast) == -1) {
		if (errno == EAGAIN)
			fprintf(stderr, "o2lock: %s is busy: held elsewhere in "
			    "domain %s\n", lockname, domain);
		else if (errno == ETIMEDOUT)
			fprintf(stderr, "o2lock: timed out waiting for %s\n",
			    lockname);
		else
			fprintf(stderr, "o2lock: cannot lock %s: %s\n", lockname,
			    dlmc_error(c));
		rc = errno == ECONNRESET || errno == EPROTO ? EX_DOWN : EX_NOLOCK;
		dlmc_close(c);
		return rc;
	}
	if (verbose)
		fprintf(stderr, "o2lock: holding %s on %s in domain %s\n",
		    mode == DLMC_EX ? "EX" : "PR", lockname, domain);
	rc = run_command(c, cmd, lockname);
	/* Closing would release it too; unlocking says we meant to. */
	if (dlmc_unlock(c, domain, lockid, 0, NULL) == -1 && errno != ECONNRESET)
		fprintf(stderr, "o2lock: unlock %s: %s\n", lockname, dlmc_error(c));
	dlmc_close(c);
	return rc;
}
