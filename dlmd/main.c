/* dlmd: the distributed lock manager; serve dlmd.sock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clusterconf.h"
#include "daemon.h"
#include "dlmd.h"
#include "ipc.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define STOP_GRACE_MS	5000	/* to hand our resources over when stopping */

/* -n: the configuration netd and nmd will serve us, checked alone. */
static int
check_config(const struct daemon_args *args, const char *node)
{
	struct cluster_conf *cc;
	const struct cc_node *self;

	if ((cc = daemon_check_config(args, node, &self)) == NULL)
		return 1;
	printf("%s: configuration OK (cluster %s, local node %s number %u)\n",
	    args->conf_path, cc->name, self->name, self->num);
	free(cc);
	return 0;
}

static int
domains_left(void *arg)
{
	return TAILQ_EMPTY(&((struct dlmd *)arg)->domains);
}

/* Leave every domain, handing over what we master, then exit. */
static void
on_stop(struct daemon *dmn, void *arg, int sig)
{
	struct dlmd *dd = arg;
	struct dlm_domain *d, *next;
	struct dlm_member *mb, *mnext;

	dd->stopping = 1;
	log_info("signal %d: leaving every domain", sig);
	for (d = TAILQ_FIRST(&dd->domains); d != NULL; d = next) {
		next = TAILQ_NEXT(d, entry);
		for (mb = LIST_FIRST(&d->clients); mb != NULL; mb = mnext) {
			mnext = LIST_NEXT(mb, dom_entry);
			if (!mb->releasing)
				member_release_locks(mb);
		}
		domain_reap_later(d);
	}
	daemon_stop_when(dmn, domains_left, dd, STOP_GRACE_MS, "domains not left");
}

int
main(int argc, char *argv[])
{
	struct daemon_args args;
	struct dlmd dd = { 0 };
	struct daemon *d;
	char *sock;
	int no_dlmfs = 0;
	/* Accepted as it always was: the tree is dlmfs's to mount. */
	const struct daemon_opt no_dlmfs_opt = { "no-dlmfs", NULL, NULL, &no_dlmfs };

	daemon_args_parse("dlmd", argc, argv, &no_dlmfs_opt, 1, &args);
	dd.rundir = args.rundir;
	dd.node_name = args.node_name != NULL ? args.node_name : host_node_name();
	if (args.check_only)
		return check_config(&args, dd.node_name);
	dd.membership = daemon_membership(&args, dd.node_name);

	srandom((unsigned)getpid() ^ (unsigned)now_ms());
	dd.local_node = DLM_NODE_NONE;
	dd.cookie_seq = ((uint64_t)random() << 24) & ((1ull << 55) - 1);
	TAILQ_INIT(&dd.domains);
	if (mkdir_p(dd.rundir, 0755) == -1)
		fatal("mkdir %s", dd.rundir);
	if ((dd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	d = daemon_start(dd.base, on_stop, NULL, &dd);
	dlmd_handlers_init();
	api_start(&dd);
	netd_link_start(&dd);
	hbd_link_start(&dd);
	xasprintf(&sock, "%s/dlmd.sock", dd.rundir);
	log_info("serving %s", sock);
	notify_ready();
	daemon_run(d);

	ipc_server_free(dd.ipc);
	hbd_link_free(&dd);
	free(sock);
	return dd.exit_status;
}
