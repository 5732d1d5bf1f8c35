/* netd: wiring only. Configuration from nmd, membership from hbd. */
#include <sys/time.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "notify.h"
#include "util.h"

static void
usage(void)
{
	fprintf(stderr,
	    "usage: netd [-nv] [-c cluster.conf] [-t o2cb-defaults] [--node NAME]\n"
	    "            [--rundir DIR] [--keyfile FILE]\n");
	exit(2);
}

static void
on_stop(evutil_socket_t sig, short ev, void *arg)
{
	(void)ev;
	log_info("signal %d: stopping", (int)sig);
	event_base_loopbreak(((struct netd *)arg)->base);
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

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "node", required_argument, NULL, 'N' },
		{ "rundir", required_argument, NULL, 'R' },
		{ "keyfile", required_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 },
	};
	struct netd nd = { .listen_fd = -1 };
	struct event *sigterm, *sigint;
	int ch, check_only = 0, verbose = 0;

	nd.conf_path = "/etc/ocfs2/cluster.conf";
	nd.tunables_path = "/etc/default/o2cb";
	nd.rundir = rundir_default();
	while ((ch = getopt_long(argc, argv, "c:t:nv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': nd.conf_path = optarg; break;
		case 't': nd.tunables_path = optarg; break;
		case 'n': check_only = 1; break;
		case 'v': verbose++; break;
		case 'N': nd.node_name = optarg; break;
		case 'R': nd.rundir = optarg; break;
		case 'K': nd.keyfile = optarg; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	log_init("netd", verbose);
	load_key(&nd);
	if (check_only)
		return config_check_file(&nd) == 0 ? 0 : 1;

	signal(SIGPIPE, SIG_IGN);
	/* Our configuration comes from nmd, which reloads on SIGHUP; a hangup
	 * must not stop us. */
	signal(SIGHUP, SIG_IGN);
	if ((nd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (config_start(&nd) == -1)
		fatalx("cannot get the configuration from nmd");
	fence_start(&nd);
	refusal_start(&nd);
	if (link_listen(&nd) == -1)
		fatalx("cannot listen for links");
	api_start(&nd);
	hb_start(&nd);

	sigterm = evsignal_new(nd.base, SIGTERM, on_stop, &nd);
	sigint = evsignal_new(nd.base, SIGINT, on_stop, &nd);
	if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) == -1 ||
	    evsignal_add(sigint, NULL) == -1)
		fatalx("cannot install signal handlers");
	notify_watchdog_start(nd.base);
	log_info("serving cluster %s as node %u on %s", nd.cluster, nd.self,
	    nd.rundir);
	notify_ready();
	event_base_dispatch(nd.base);

	notify_stopping();
	ipc_server_free(nd.ipc);
	event_free(sigterm);
	event_free(sigint);
	return 0;
}
