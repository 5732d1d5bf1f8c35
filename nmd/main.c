/* nmd: parse the configuration, serve it, reload it on SIGHUP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "ipc.h"
#include "log.h"
#include "nmd.h"
#include "notify.h"
#include "util.h"

static void
on_reload(void *arg)
{
	char **ok, **bad, err[CC_ERR_MAX];
	size_t nok, nbad;

	log_info("SIGHUP: reloading %s", ((struct nmd *)arg)->conf_path);
	if (nm_load(arg, 0, &ok, &nok, &bad, &nbad, err, sizeof(err)) == 0) {
		nm_lines_free(ok, nok);
		nm_lines_free(bad, nbad);
	}
}

/* Another nmd answering on our socket owns this runtime directory. */
static void
refuse_second_instance(const char *rundir)
{
	char *path;
	int fd;

	xasprintf(&path, "%s/nmd.sock", rundir);
	if ((fd = ipc_sync_connect(path)) != -1)
		fatalx("another nmd already serves %s", path);
	free(path);
}

/*
 * --stack-is NAME, for a unit's ExecCondition=: 0 when cluster.conf
 * chooses that stack, 1 when another (systemd skips the unit), 255 when
 * the files are bad or NAME is unknown (the unit fails, saying why).
 */
static int
stack_matches(struct nmd *nm, const char *name)
{
	struct cluster_conf *cc;
	const struct cc_node *self;
	enum cc_stack want;
	char err[CC_ERR_MAX];
	int rc;

	if (cc_stack_parse(name, &want) == -1) {
		fprintf(stderr, "nmd: unknown stack \"%s\" (expected o2cb or pcmk)\n", name);
		return 255;
	}
	if ((cc = nm_parse_config(nm, &self, err, sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		return 255;
	}
	rc = cc->stack == want ? 0 : 1;
	if (rc != 0)
		printf("%s: cluster %s runs stack %s, not %s\n", nm->conf_path, cc->name,
		    cc_stack_name(cc->stack), name);
	free(cc);
	return rc;
}

int
main(int argc, char *argv[])
{
	static const char *stack_is;
	static const struct daemon_opt stack_is_opt = { "stack-is", "NAME", &stack_is, NULL };
	struct daemon_args args;
	struct nmd nm = { 0 };
	struct daemon *d;
	struct cluster_conf *cc;
	const struct cc_node *self;
	char err[CC_ERR_MAX], *mountpoint;
	char **ok, **bad;
	size_t nok, nbad;
	int restored;

	daemon_args_parse("nmd", argc, argv, &stack_is_opt, 1, &args);
	nm.conf_path = args.conf_path;
	nm.tunables_path = args.tunables_path;
	nm.rundir = args.rundir;
	nm.node_name = args.node_name != NULL ? args.node_name : host_node_name();

	if (stack_is != NULL)
		return stack_matches(&nm, stack_is);

	if (args.check_only) {
		if ((cc = nm_parse_config(&nm, &self, err, sizeof(err))) == NULL) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("%s: configuration OK (cluster %s, stack %s, %zu nodes, local node "
		    "%s number %u)\n", nm.conf_path, cc->name, cc_stack_name(cc->stack),
		    cc->nnodes, self->name, self->num);
		free(cc);
		return 0;
	}

	if (mkdir_p(nm.rundir, 0755) == -1)
		fatal("mkdir %s", nm.rundir);
	refuse_second_instance(nm.rundir);
	if ((nm.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	nm.started = time(NULL);
	LIST_INIT(&nm.holders);
	nm_tree_init(&nm);
	nm_persist_init(&nm);
	/* Before nmd.sock is served: clients must find what they held. */
	restored = nm_persist_restore(&nm);
	if (!restored || nm_config_files_fingerprint(&nm) != nm.config_fingerprint) {
		if (restored)
			log_info("%s changed since it was loaded: applying it as a reload would",
			    nm.conf_path);
		if (nm_load(&nm, 1, &ok, &nok, &bad, &nbad, err, sizeof(err)) == -1) {
			if (!restored)
				fatalx("%s", err);
		} else {
			nm_lines_free(ok, nok);
			nm_lines_free(bad, nbad);
		}
	}

	xasprintf(&mountpoint, "%s/config", nm.rundir);
	if (nm_configfs_mount(&nm, mountpoint) == -1)
		fatalx("cannot serve the configuration tree at %s", mountpoint);
	nm_api_start(&nm);
	d = daemon_start(nm.base, NULL, on_reload, &nm);

	log_info("serving cluster %s as node %s on %s",
	    nm_cluster_item(&nm) != NULL ? nm_cluster_item(&nm)->name : "(none)",
	    nm_local_node(&nm) != NULL ? nm_local_node(&nm)->name : "(none)", nm.rundir);
	notify_ready();
	daemon_run(d);

	/* The state file keeps what clients hold: a stop is not their release. */
	nm_state_freeze(&nm);
	ipc_server_free(nm.ipc);
	nm_holds_free(&nm);
	nm_configfs_unmount(&nm);
	nm_tree_free(&nm);
	free(mountpoint);
	free(nm.state_path);
	event_base_free(nm.base);
	return 0;
}
