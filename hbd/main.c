/* hbd: heartbeat on the regions nmd describes; serve hbd.sock. */
#include <sys/resource.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "hbd.h"
#include "ipc.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define STOP_GRACE_MS	3000	/* on top of two intervals for clean-stop blocks */

/* -n: what nmd will serve us, checked without any daemon. */
static int
check_config(const struct daemon_args *args, const char *node)
{
	struct cluster_conf *cc;
	const struct cc_node *self;

	int rc = 0;

	if ((cc = daemon_check_config(args, node, &self)) == NULL)
		return 1;
	if (daemon_check_stack(args, cc, CC_STACK_O2CB) == -1)
		rc = 1;
	else
		printf("%s: configuration OK (cluster %s, local node %s number %u, heartbeat "
		    "every %u ms, dead after %u, %s mode)\n", args->conf_path, cc->name,
		    self->name, self->num, cc->hb_interval_ms, cc->tun.dead_threshold,
		    cc->hb_mode == CC_HB_GLOBAL ? "global" : "local");
	free(cc);
	return rc;
}

static int
regions_stopped(void *arg)
{
	struct hbd *h = arg;
	struct hb_region *r;

	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state != RS_FAILED)
			return 0;
	return 1;
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
on_stop(struct daemon *d, void *arg, int sig)
{
	struct hbd *h = arg;
	struct hb_region *r, *next;

	h->stopping = 1;
	if (regions_in_use(h)) {
		daemon_stop_now(d);
		return;
	}
	log_info("signal %d: leaving every region", sig);
	for (r = TAILQ_FIRST(&h->regions); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->state != RS_STOPPING)
			region_stop(r, 1);
	}
	daemon_stop_when(d, regions_stopped, h, 2 * h->interval_ms + STOP_GRACE_MS,
	    "regions did not stop");
}

int
main(int argc, char *argv[])
{
	struct daemon_args args;
	struct hbd h = { 0 };
	struct daemon *d;

	daemon_args_parse("hbd", argc, argv, NULL, 0, &args);
	h.rundir = args.rundir;
	h.node_name = args.node_name != NULL ? args.node_name : host_node_name();
	if (args.check_only)
		return check_config(&args, h.node_name);

	/* The kernel's heartbeat thread runs at nice -20; so do we. */
	if (setpriority(PRIO_PROCESS, 0, -20) == -1)
		log_warn("setpriority -20 (heartbeats may be late under load)");
	h.local_node = CC_INVALID_NODE;
	h.interval_ms = 2000;
	h.dead_threshold = 31;
	TAILQ_INIT(&h.regions);
	LIST_INIT(&h.writers);
	LIST_INIT(&h.inherited);
	if (mkdir_p(h.rundir, 0755) == -1)
		fatal("mkdir %s", h.rundir);
	if ((h.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	d = daemon_start(h.base, on_stop, NULL, &h);
	fence_restore(&h);
	api_start(&h);
	lease_open(&h);
	lease_restore(&h);
	nmd_link_start(&h);
	nego_start(&h);

	log_info("serving %s/hbd.sock as node %s", h.rundir, h.node_name);
	notify_ready();
	daemon_run(d);

	ipc_server_free(h.ipc);
	return 0;
}
