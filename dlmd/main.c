/* dlmd: the distributed lock manager; serve dlmd.sock. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clusterconf.h"
#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define STOP_GRACE_MS	5000	/* to hand our resources over when stopping */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: dlmd [-nv] [-c cluster.conf] [-t o2cb-defaults] [--node NAME]\n"
	    "            [--rundir DIR]\n");
	exit(2);
}


/* -n: the configuration netd and nmd will serve us, checked alone. */
static int
check_config(const char *conf, const char *tunables, const char *node)
{
	struct cluster_conf *cc;
	const struct cc_node *self;
	char err[CC_ERR_MAX];

	if ((cc = cc_load(conf, tunables, 0, NULL, node, &self, err, sizeof(err),
	    NULL, NULL)) == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%s: configuration OK (cluster %s, local node %s number %u)\n",
	    conf, cc->name, self->name, self->num);
	free(cc);
	return 0;
}

static void
stop_poll(evutil_socket_t fd, short ev, void *arg)
{
	struct dlmd *dd = arg;

	(void)fd;
	(void)ev;
	if (TAILQ_EMPTY(&dd->domains))
		event_base_loopbreak(dd->base);
}

static void
stop_deadline(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	log_warnx("domains not left in time; exiting anyway");
	event_base_loopbreak(((struct dlmd *)arg)->base);
}

/* Leave every domain, handing over what we master, then exit. */
static void
on_stop(evutil_socket_t sig, short ev, void *arg)
{
	struct dlmd *dd = arg;
	struct dlm_domain *d, *next;
	struct dlm_member *mb, *mnext;
	struct timeval poll = { 0, 20000 };
	struct timeval grace = { STOP_GRACE_MS / 1000, 0 };

	(void)ev;
	if (dd->stopping)
		return;
	dd->stopping = 1;
	log_info("signal %d: leaving every domain", (int)sig);
	notify_stopping();
	for (d = TAILQ_FIRST(&dd->domains); d != NULL; d = next) {
		next = TAILQ_NEXT(d, entry);
		for (mb = LIST_FIRST(&d->clients); mb != NULL; mb = mnext) {
			mnext = LIST_NEXT(mb, dom_entry);
			if (!mb->releasing)
				member_release_locks(mb);
		}
		domain_reap_later(d);
	}
	event_add(event_new(dd->base, -1, EV_PERSIST, stop_poll, dd), &poll);
	event_base_once(dd->base, -1, EV_TIMEOUT, stop_deadline, dd, &grace);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "node", required_argument, NULL, 'N' },
		{ "rundir", required_argument, NULL, 'R' },
		{ "no-dlmfs", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	struct dlmd dd = { 0 };
	struct event *sigterm, *sigint;
	const char *conf = "/etc/ocfs2/cluster.conf", *tunables = "/etc/default/o2cb";
	char *sock;
	int ch, check_only = 0, verbose = 0;

	dd.rundir = rundir_default();
	while ((ch = getopt_long(argc, argv, "c:t:nv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 't': tunables = optarg; break;
		case 'n': check_only = 1; break;
		case 'v': verbose++; break;
		case 'N': dd.node_name = optarg; break;
		case 'R': dd.rundir = optarg; break;
		/* Accepted as it always was: the tree is dlmfs's to mount. */
		case 'F': break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	log_init("dlmd", verbose);
	if (dd.node_name == NULL)
		dd.node_name = host_node_name();
	if (check_only)
		return check_config(conf, tunables, dd.node_name);

	signal(SIGPIPE, SIG_IGN);
	/* Our configuration comes from nmd, which reloads on SIGHUP; a hangup
	 * must not stop us. */
	signal(SIGHUP, SIG_IGN);
	srandom((unsigned)getpid() ^ (unsigned)now_ms());
	dd.local_node = DLM_NODE_NONE;
	dd.cookie_seq = ((uint64_t)random() << 24) & ((1ull << 55) - 1);
	TAILQ_INIT(&dd.domains);
	if (mkdir_p(dd.rundir, 0755) == -1)
		fatal("mkdir %s", dd.rundir);
	if ((dd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	dlmd_handlers_init();
	api_start(&dd);
	netd_link_start(&dd);
	hbd_link_start(&dd);
	xasprintf(&sock, "%s/dlmd.sock", dd.rundir);

	sigterm = evsignal_new(dd.base, SIGTERM, on_stop, &dd);
	sigint = evsignal_new(dd.base, SIGINT, on_stop, &dd);
	if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) == -1 ||
	    evsignal_add(sigint, NULL) == -1)
		fatalx("cannot install signal handlers");
	notify_watchdog_start(dd.base);
	log_info("serving %s", sock);
	notify_ready();
	event_base_dispatch(dd.base);

	ipc_server_free(dd.ipc);
	event_free(sigterm);
	event_free(sigint);
	free(sock);
	return dd.exit_status;
}
