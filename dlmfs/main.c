/*
 * dlmfs: serve the dlmfs tree (normally <rundir>/dlm) as a client of
 * dlmd.sock. A process of its own rather than a thread of dlmd: it only
 * talks to dlmd through its socket, a fault in serving FUSE cannot take
 * the node's lock manager (and with it the node's membership) down, dlmd
 * needs no right to mount, and the tree stays mounted across a restart
 * of dlmd (session.c rejoins its domains).
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlmfs.h"
#include "log.h"
#include "notify.h"
#include "util.h"

struct dlmfs *dfs;

static void
usage(void)
{
	fprintf(stderr, "usage: dlmfs [-v] [--rundir DIR] [MOUNTPOINT]\n");
	exit(2);
}

/* A request from the kernel; the end of the session when it is unmounted. */
static void
fuse_readable(evutil_socket_t fd, short ev, void *arg)
{
	int rc;

	(void)fd;
	(void)ev;
	(void)arg;
	rc = fuse_session_receive_buf(dfs->se, &dfs->buf);
	if (rc == -EINTR || rc == -EAGAIN)
		return;
	if (rc <= 0) {
		/* As fsd: whoever unmounts the tree ends its server. */
		log_info("%s unmounted (%s)", dfs->mountpoint,
		    rc ? strerror(-rc) : "end of session");
		event_base_loopbreak(dfs->base);
		return;
	}
	fuse_session_process_buf(dfs->se, &dfs->buf);
}

/* A mount left by a killed dlmfs answers ENOTCONN: detach it. */
static void
detach_stale_mount(const char *mp)
{
	struct stat st;

	if (stat(mp, &st) == -1 && errno == ENOTCONN) {
		log_info("detaching the stale mount on %s", mp);
		if (umount2(mp, MNT_DETACH) == -1)
			log_warn("umount %s", mp);
	}
}

static int
tree_mount(void)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	const char *opts;
	int fd;

	/* Others may use the tree as its modes allow, as with the kernel's. */
	opts = geteuid() == 0 ?
	    "fsname=ocfs2_dlmfs,subtype=ocfs2_dlmfs,allow_other,default_permissions" :
	    "fsname=ocfs2_dlmfs,subtype=ocfs2_dlmfs,default_permissions";
	if (fuse_opt_add_arg(&args, "dlmfs") == -1 ||
	    fuse_opt_add_arg(&args, "-o") == -1 ||
	    fuse_opt_add_arg(&args, opts) == -1)
		fatalx("out of memory");
	dfs->se = fuse_session_new(&args, &dlmfs_ops, sizeof(dlmfs_ops), NULL);
	fuse_opt_free_args(&args);
	if (dfs->se == NULL) {
		log_warnx("cannot create the FUSE session");
		return -1;
	}
	if (fuse_session_mount(dfs->se, dfs->mountpoint) == -1) {
		log_warnx("cannot mount %s", dfs->mountpoint);
		fuse_session_destroy(dfs->se);
		dfs->se = NULL;
		return -1;
	}
	/* The loop reads only when told a request is there; never block it. */
	fd = fuse_session_fd(dfs->se);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1) {
		log_warn("O_NONBLOCK on the FUSE channel");
		return -1;
	}
	dfs->fuse_ev = event_new(dfs->base, fd, EV_READ | EV_PERSIST,
	    fuse_readable, NULL);
	if (dfs->fuse_ev == NULL || event_add(dfs->fuse_ev, NULL) == -1) {
		log_warnx("cannot watch the FUSE channel");
		return -1;
	}
	return 0;
}

/* Give our locks back to dlmd, answer every parked request, unmount. */
static void
dlmfs_teardown(void)
{
	dfs->stopping = 1;
	if (dfs->fuse_ev != NULL)
		event_free(dfs->fuse_ev);
	/* Closing fails every lock and request, and answers their callers. */
	if (dfs->conn != NULL)
		ipc_conn_close(dfs->conn);
	/* Let the IPC layer free the connection. */
	event_base_loop(dfs->base, EVLOOP_NONBLOCK);
	tree_free();
	if (dfs->se != NULL) {
		fuse_session_unmount(dfs->se);
		fuse_session_destroy(dfs->se);
	}
	event_free(dfs->retry_ev);
	event_free(dfs->interrupted_ev);
	event_base_free(dfs->base);
	free(dfs->buf.mem);
	free(dfs->sock_path);
	free(dfs->mountpoint);
	free(dfs);
	dfs = NULL;
}

static void
on_stop(evutil_socket_t sig, short ev, void *arg)
{
	(void)ev;
	(void)arg;
	log_info("signal %d: unmounting", (int)sig);
	event_base_loopbreak(dfs->base);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "rundir", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct event *sigterm, *sigint;
	const char *rundir;
	int ch, verbose = 0;

	rundir = rundir_default();
	while ((ch = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v': verbose++; break;
		case 'R': rundir = optarg; break;
		default: usage();
		}
	}
	if (argc - optind > 1)
		usage();
	log_init("dlmfs", verbose);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);

	dfs = xcalloc(1, sizeof(*dfs));
	xasprintf(&dfs->sock_path, "%s/dlmd.sock", rundir);
	if (optind < argc)
		dfs->mountpoint = xstrdup(argv[optind]);
	else
		xasprintf(&dfs->mountpoint, "%s/dlm", rundir);
	tree_init();
	if ((dfs->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	dfs->retry_ev = evtimer_new(dfs->base, session_retry, NULL);
	dfs->interrupted_ev = event_new(dfs->base, -1, 0, req_answer_interrupted, NULL);
	sigterm = evsignal_new(dfs->base, SIGTERM, on_stop, NULL);
	sigint = evsignal_new(dfs->base, SIGINT, on_stop, NULL);
	if (dfs->retry_ev == NULL || dfs->interrupted_ev == NULL || sigterm == NULL ||
	    sigint == NULL || evsignal_add(sigterm, NULL) == -1 ||
	    evsignal_add(sigint, NULL) == -1)
		fatalx("cannot set up events");
	detach_stale_mount(dfs->mountpoint);
	if (mkdir_p(dfs->mountpoint, 0755) == -1)
		fatal("mkdir %s", dfs->mountpoint);
	if (tree_mount() == -1) {
		dlmfs_teardown();
		return 1;
	}
	session_connect();

	notify_watchdog_start(dfs->base);
	log_info("serving %s for %s", dfs->mountpoint, dfs->sock_path);
	notify_ready();
	event_base_dispatch(dfs->base);

	notify_stopping();
	event_free(sigterm);
	event_free(sigint);
	dlmfs_teardown();
	log_info("stopped");
	return 0;
}
