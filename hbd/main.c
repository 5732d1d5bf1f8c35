/* hbd: heartbeat on the regions nmd describes; serve hbd.sock. */
#include <sys/resource.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbd.h"
#include "ipc.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define STOP_GRACE_MS	3000	/* on top of two intervals for clean-stop blocks */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: hbd [-nv] [-c cluster.conf] [-t o2cb-defaults] [--node NAME]\n"
	    "           [--rundir DIR]\n");
	exit(2);
}

/* -n: what nmd will serve us, checked without any daemon. */
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
	printf("%s: configuration OK (cluster %s, local node %s number %u, heartbeat "
	    "every %u ms, dead after %u, %s mode)\n", conf, cc->name, self->name,
	    self->num, cc->hb_interval_ms, cc->tun.dead_threshold,
	    cc->hb_mode == CC_HB_GLOBAL ? "global" : "local");
	free(cc);
	return 0;
}

static void
stop_poll(evutil_socket_t fd, short ev, void *arg)
{
	struct hbd *h = arg;
	struct hb_region *r;

	(void)fd;
	(void)ev;
	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state != RS_FAILED)
			return;
	event_base_loopbreak(h->base);
}

static void
stop_deadline(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	log_warnx("regions did not stop in time; exiting anyway");
	event_base_loopbreak(((struct hbd *)arg)->base);
}

/*
 * Stopping under a mount: leaving cleanly would tell the others we left
 * while our writers still write, and dropping their lease would fail a
 * mounted filesystem for a mere restart. So we exit as a crash does: a
 * hbd started again in time resumes every region, and otherwise the
 * writers' lease runs out before the others can declare us dead.
 */
static int
regions_in_use(struct hbd *h)
{
	struct hb_region *r;
	char who[256];

	TAILQ_FOREACH(r, &h->regions, entry) {
		if (r->state == RS_FAILED || r->state == RS_STOPPING ||
		    !api_region_users(h, r->name, who, sizeof(who)))
			continue;
		log_warnx("stopping while %s under region %s: exiting with every region "
		    "running; a hbd started within %llu ms goes on with them, else the "
		    "writers' lease runs out", who, r->name,
		    (unsigned long long)(lease_left_us(r) / 1000));
		return 1;
	}
	return 0;
}

/* Leave every region cleanly, so that peers see us go at once. */
static void
on_stop(evutil_socket_t sig, short ev, void *arg)
{
	struct hbd *h = arg;
	struct hb_region *r, *next;
	struct timeval poll = { 0, 20000 };
	struct timeval grace;
	unsigned ms = 2 * h->interval_ms + STOP_GRACE_MS;

	(void)ev;
	if (h->stopping)
		return;
	h->stopping = 1;
	notify_stopping();
	if (regions_in_use(h)) {
		event_base_loopbreak(h->base);
		return;
	}
	log_info("signal %d: leaving every region", (int)sig);
	for (r = TAILQ_FIRST(&h->regions); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->state != RS_STOPPING)
			region_stop(r, 1);
	}
	grace.tv_sec = ms / 1000;
	grace.tv_usec = (ms % 1000) * 1000;
	event_add(event_new(h->base, -1, EV_PERSIST, stop_poll, h), &poll);
	event_base_once(h->base, -1, EV_TIMEOUT, stop_deadline, h, &grace);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "node", required_argument, NULL, 'N' },
		{ "rundir", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct hbd h = { 0 };
	struct event *sigterm, *sigint;
	const char *conf = "/etc/ocfs2/cluster.conf", *tunables = "/etc/default/o2cb";
	int ch, check_only = 0, verbose = 0;

	h.rundir = rundir_default();
	while ((ch = getopt_long(argc, argv, "c:t:nv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 't': tunables = optarg; break;
		case 'n': check_only = 1; break;
		case 'v': verbose++; break;
		case 'N': h.node_name = optarg; break;
		case 'R': h.rundir = optarg; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	log_init("hbd", verbose);
	if (h.node_name == NULL)
		h.node_name = host_node_name();
	if (check_only)
		return check_config(conf, tunables, h.node_name);

	/* The kernel's heartbeat thread runs at nice -20; so do we. */
	if (setpriority(PRIO_PROCESS, 0, -20) == -1)
		log_warn("setpriority -20 (heartbeats may be late under load)");
	h.local_node = CC_INVALID_NODE;
	h.interval_ms = 2000;
	h.dead_threshold = 31;
	TAILQ_INIT(&h.regions);
	LIST_INIT(&h.writers);
	if (mkdir_p(h.rundir, 0755) == -1)
		fatal("mkdir %s", h.rundir);
	if ((h.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	/* Our configuration comes from nmd, which reloads on SIGHUP; a hangup
	 * must not stop the heartbeat. */
	signal(SIGHUP, SIG_IGN);
	fence_restore(&h);
	api_start(&h);
	lease_open(&h);
	lease_restore(&h);
	nmd_link_start(&h);
	nego_start(&h);

	sigterm = evsignal_new(h.base, SIGTERM, on_stop, &h);
	sigint = evsignal_new(h.base, SIGINT, on_stop, &h);
	if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) == -1 ||
	    evsignal_add(sigint, NULL) == -1)
		fatalx("cannot install signal handlers");
	notify_watchdog_start(h.base);
	log_info("serving %s/hbd.sock as node %s", h.rundir, h.node_name);
	notify_ready();
	event_base_dispatch(h.base);

	ipc_server_free(h.ipc);
	event_free(sigterm);
	event_free(sigint);
	return 0;
}
