/* pcmkd: membership from corosync for the pcmk stack; serve pcmkd.sock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon.h"
#include "ipc.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#include "pcmkd.h"

/*
 * Who confirms that a node corosync lost is reset: cluster.conf says,
 * or pcmkd does not run (recovering a node that may still write
 * corrupts the volume). -1 with err saying what to write.
 */
static int
fencing_choose(struct pcmkd *p, const struct cluster_conf *cc, char *err, size_t errlen)
{
	p->fencing = cc->fencing;
	switch (cc->fencing) {
	case CC_PCMK_FENCING_UNSET:
		snprintf(err, errlen, "cluster %s: no fencing is configured: the survivors "
		    "would recover a lost node that may still write. Set fencing = pacemaker "
		    "(pacemaker's fencer) or fencing = agent with fence_agent = PATH in "
		    "cluster.conf's cluster stanza, or fencing = none to accept that risk",
		    cc->name);
		return -1;
	case CC_PCMK_FENCING_NONE:
		log_warnx("fencing = none: a node corosync removes is recovered without "
		    "confirmation that it was reset; the pcmk stack is not safe for production "
		    "this way");
		return 0;
	case CC_PCMK_FENCING_AGENT:
		snprintf(p->fence_program, sizeof(p->fence_program), "%s", cc->fence_agent);
		break;
	case CC_PCMK_FENCING_PACEMAKER:
		break;
	}
	if (fenceexec_init(p, "/proc/self/exe", err, errlen) == -1)
		return -1;
	log_info("fencing = %s: a node corosync loses is reported down once %s confirms "
	    "its fence", cc_pcmk_fencing_name(cc->fencing), p->fence_program);
	return 0;
}

/* -n: what nmd will serve us, checked without any daemon. */
static int
check_config(const struct daemon_args *args, const char *node)
{
	struct cluster_conf *cc;
	const struct cc_node *self;
	struct pcmkd p;
	char err[CC_ERR_MAX];
	int rc = 0;

	if ((cc = daemon_check_config(args, node, &self)) == NULL)
		return 1;
	memset(&p, 0, sizeof(p));
	if (daemon_check_stack(args, cc, CC_STACK_PCMK) == -1)
		rc = 1;
	else if (fencing_choose(&p, cc, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s: %s\n", args->conf_path, err);
		rc = 1;
	} else
		printf("%s: configuration OK (cluster %s, stack pcmk, local node %s number %u)\n",
		    args->conf_path, cc->name, self->name, self->num);
	free(cc);
	return rc;
}

/*
 * Stopping while this node's writers or lock manager depend on us: we
 * exit without leaving the group, as a crash does (a pcmkd started again
 * goes on; otherwise the writers' lease runs out and the node stays a
 * member until corosync removes it). Otherwise we leave the group, and
 * the others see this node go at once.
 */
static void
on_stop(struct daemon *d, void *arg, int sig)
{
	struct pcmkd *p = arg;
	char who[512];

	p->stopping = 1;
	if (p->subs != NULL && api_users(p, who, sizeof(who)) > 0)
		log_warnx("signal %d while %s: exiting without leaving the group", sig, who);
	else {
		log_info("signal %d: leaving the group", sig);
		cs_leave(p);
		runstate_drop(p);
	}
	daemon_stop_now(d);
}

static void
configured(struct pcmkd *p)
{
	char err[512];

	cs_check_nodes(p);
	lease_open(p);
	runstate_load(p);
	api_start(p);
	if (cs_join(p, err, sizeof(err)) == -1)
		fatalx("%s", err);
	cs_track(p);
	log_info("serving %s/pcmkd.sock: cluster %s, node %u", p->rundir, p->cluster,
	    p->local_node);
	notify_ready();
}

int
main(int argc, char *argv[])
{
	static struct pcmkd p;
	struct daemon_args args;
	struct cluster_conf *cc;
	const struct cc_node *self;
	struct daemon *d;
	char err[CC_ERR_MAX];

	daemon_args_parse("pcmkd", argc, argv, NULL, 0, &args);
	p.rundir = args.rundir;
	if (args.check_only)
		return check_config(&args, args.node_name != NULL ? args.node_name :
		    host_node_name());
	p.local_node = CC_INVALID_NODE;
	TAILQ_INIT(&p.regions);
	LIST_INIT(&p.writers);
	if (mkdir_p(p.rundir, 0755) == -1)
		fatal("mkdir %s", p.rundir);
	if ((p.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (cs_connect(&p, err, sizeof(err)) == -1)
		fatalx("%s", err);
	if ((cc = cc_load(args.conf_path, args.tunables_path, 0, NULL, args.node_name != NULL ?
	    args.node_name : host_node_name(), &self, err, sizeof(err), NULL, NULL)) == NULL)
		fatalx("%s", err);
	if (fencing_choose(&p, cc, err, sizeof(err)) == -1)
		fatalx("%s", err);
	free(cc);
	d = daemon_start(p.base, on_stop, NULL, &p);
	nmdlink_start(&p, configured);
	daemon_run(d);

	cs_close(&p);
	if (p.ipc != NULL)
		ipc_server_free(p.ipc);
	return 0;
}
