/* netd: wiring only. Configuration from nmd, membership from hbd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "notify.h"
#include "util.h"

/* -n: what netd would run with, from the files, without any daemon. */
static int
check_config(const struct daemon_args *args, const struct netd *nd)
{
	struct cluster_conf *cc;
	const struct cc_node *self;

	if ((cc = daemon_check_config(args, nd->node_name, &self)) == NULL)
		return 1;
	printf("%s: configuration OK (cluster %s, %zu nodes, local node %s "
	    "number %u; idle %u ms, keepalive %u ms, reconnect %u ms%s)\n",
	    args->conf_path, cc->name, cc->nnodes, self->name, self->num,
	    cc->tun.idle_timeout_ms, cc->tun.keepalive_delay_ms,
	    cc->tun.reconnect_delay_ms, nd->auth ? "; cluster key loaded" : "");
	free(cc);
	return 0;
}

/* The key: --keyfile, else O2CB_AUTHKEY, else the default path if present. */
static void
load_key(struct netd *nd)
{
	char why[512], *from_tun = NULL;
	const char *path = nd->keyfile;

	if (path == NULL && (from_tun = config_keyfile_from_tunables(nd->tunables_path)) != NULL)
		path = from_tun;
	if (path == NULL) {
		if (access(AUTH_DEFAULT_KEYFILE, F_OK) == -1)
			return;
		path = AUTH_DEFAULT_KEYFILE;
	}
	if (auth_init() == -1)
		fatalx("libsodium does not initialise");
	if (auth_load_key(path, nd->key, why, sizeof(why)) == -1)
		fatalx("cluster key: %s", why);
	nd->auth = 1;
	log_info("links authenticated with the cluster key %s", path);
	free(from_tun);
}

/* The rest of the wiring needs to know which node we are. */
static void
serve(struct netd *nd)
{
	fence_start(nd);
	refusal_start(nd);
	if (link_listen(nd) == -1)
		fatalx("cannot listen for links");
	api_start(nd);
	hb_start(nd);
	log_info("serving cluster %s as node %u on %s", nd->cluster, nd->self,
	    nd->rundir);
	notify_ready();
}

int
main(int argc, char *argv[])
{
	/* Static: what netd holds lasts as long as it runs, its exit included. */
	static struct netd nd = { .listen_fd = -1 };
	struct daemon_args args;
	const struct daemon_opt keyfile = { "keyfile", "FILE", &nd.keyfile, NULL };
	struct daemon *d;

	daemon_args_parse("netd", argc, argv, &keyfile, 1, &args);
	nd.tunables_path = args.tunables_path;
	nd.node_name = args.node_name;
	nd.rundir = args.rundir;
	load_key(&nd);
	if (args.check_only)
		return check_config(&args, &nd);
	nd.membership = daemon_membership(&args, args.node_name);

	if ((nd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	d = daemon_start(nd.base, NULL, NULL, &nd);
	config_start(&nd, serve);
	daemon_run(d);

	if (nd.ipc != NULL)	/* stopped before nmd configured us */
		ipc_server_free(nd.ipc);
	return 0;
}
