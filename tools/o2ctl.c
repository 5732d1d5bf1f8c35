/*
 * o2ctl: print and change one node's cluster state through the daemons'
 * sockets. Each command is one entry of the table below.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterconf.h"
#include "ipc.h"
#include "log.h"
#include "o2ctl.h"
#include "util.h"

static const struct o2ctl_cmd commands[] = {
	{ "status", "", "nodes configured, heartbeating and linked; lock domains; mounts (nmd, hbd, netd, dlmd, fsd)", cmd_status, 0 },
	{ "mounts", "", "volumes mounted by fsd on this node: slot, recovery, journal, locks", cmd_mounts, 0 },
	{ "config", "", "print the live configuration (nmd)", cmd_config, 0 },
	{ "reload", "", "re-read cluster.conf; print what changed and what was refused", cmd_reload, 0 },
	{ "check-config", "FILE [--node NAME] [-t O2CB_DEFAULTS]",
	  "check a cluster.conf without a running daemon", cmd_check_config, 0 },
	{ "set", "PATH VALUE", "write an attribute of the config tree, e.g. cluster/c/idle_timeout_ms", cmd_set, 0 },
	{ "mkdir", "PATH", "make an item of the config tree, e.g. cluster/c/node/n9", cmd_mkdir, 0 },
	{ "rmdir", "PATH", "remove an item of the config tree", cmd_rmdir, 0 },
	{ "watch", "[COUNT]", "print configuration changes as they happen", cmd_watch, 0 },
	{ "ping", "DAEMON", "check that a daemon answers (nmd, hbd, netd, dlmd)", cmd_ping, 0 },
	{ "heartbeat", "[start DEVICE | stop DEVICE|UUID]",
	  "heartbeat status; start or stop a volume's region (ocfs2_hb_ctl -S/-K)", cmd_heartbeat, 0 },
	{ "clear-fence", "", "let a fenced node heartbeat again (only once it is safe)", cmd_clear_fence, 0 },
	{ "hbwatch", "[COUNT] [--role R] [--ack-delay MS]",
	  "print hbd's node, region and fence events as they happen", cmd_hbwatch, 0 },
	{ "writer", "WHAT CMD [ARGS]", "run CMD as a registered disk writer: fencing kills it",
	  cmd_writer, 2 },
	{ "guard", "WHAT CMD [ARGS]", "run CMD as a holder of this node's cluster locks: its death "
	  "ends the heartbeat incarnation", cmd_guard, 2 },
	{ "net-status", "", "links to the other nodes, quorum (netd)", cmd_net_status, 0 },
	{ "net-echo", "[--type T] [--key K] [--max-len N] [--count N] [--no-reply] [--reply-size N]",
	  "answer messages of (T, K) with their checksum and bytes; check order", cmd_net_echo, 0 },
	{ "net-send", "NODE|all [--type T] [--key K] [--size N|--sizes A-B] [--count N] "
	  "[--window W] [--expect-errno E] [--no-echo-check]",
	  "send messages to net-echo on NODE and check every answer", cmd_net_send, 0 },
	{ "net-watch", "[COUNT]", "print netd's link and quorum events as they happen", cmd_net_watch, 0 },
	{ "keygen", "FILE", "write a new cluster key for authenticated links (0600)", cmd_keygen, 0 },
	{ "dlm", "", "lock domains, their members and recovery (dlmd)", cmd_dlm, 0 },
	{ "locks", "DOMAIN", "a domain's lock resources: master, queues, LVB (dlmd)", cmd_locks, 0 },
	{ "reflink", "SRC DST", "a new file DST sharing SRC's data (copy-on-write), with its "
	  "mode, owner, times and xattrs", cmd_reflink, 0 },
	{ "quota", "MOUNTPOINT report | MOUNTPOINT set user|group ID [--block-soft SIZE] "
	  "[--block-hard SIZE] [--inode-soft N] [--inode-hard N] | "
	  "MOUNTPOINT grace user|group [--block S] [--inode S]",
	  "disk quotas of a mounted volume: usage and limits (SIZE in bytes, K, M, G, T)",
	  cmd_quota, 0 },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: o2ctl [--rundir DIR] [--json] [--timeout MS] COMMAND [ARGS]\n"
	    "--json may also follow COMMAND.\n\n"
	    "Commands:\n");
	for (i = 0; i < nitems(commands); i++) {
		/* Long argument lists push the help text to its own line. */
		if (strlen(commands[i].args) > 34)
			fprintf(f, "  %-13s %s\n  %-13s %-34s %s\n", commands[i].name,
			    commands[i].args, "", "", commands[i].help);
		else
			fprintf(f, "  %-13s %-34s %s\n", commands[i].name,
			    commands[i].args, commands[i].help);
	}
	fprintf(f, "\nExit status: 0 ok, 1 refused or failed, 2 usage, 3 daemon not running.\n"
	    "The runtime directory is --rundir, else $OCFS2_RUNDIR, else /run/ocfs2.\n");
}

int
ctl_connect(struct o2ctl *ctl, const char *daemon)
{
	char *path;
	int fd;

	xasprintf(&path, "%s/%s.sock", ctl->rundir, daemon);
	fd = ipc_sync_connect(path);
	if (fd == -1)
		fprintf(stderr, "o2ctl: %s is not running (%s: %s)\n", daemon,
		    path, strerror(errno));
	free(path);
	return fd;
}

/*
 * The daemon that tells this node's membership, by the stack nmd runs:
 * hbd, or pcmkd on pcmk. hbd when nmd does not answer or names no stack
 * (an nmd of before the choice).
 */
const char *
ctl_membership(struct o2ctl *ctl)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	enum cc_stack stack = CC_STACK_O2CB;
	char *path;
	int fd;

	xasprintf(&path, "%s/nmd.sock", ctl->rundir);
	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if ((fd = ipc_sync_connect(path)) != -1 &&
	    ipc_sync_call(fd, &req, &rep, ctl->timeout_ms) == 0 && rep->status == 0 &&
	    rep->payload_case == ENVELOPE__PAYLOAD_CONFIG)
		(void)cc_stack_parse(rep->config->stack, &stack);	/* unknown: o2cb */
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	if (fd != -1)
		close(fd);
	free(path);
	return cc_stack_daemon(stack);
}

/* One request, one reply; EX_* codes, with the daemon's reason printed. */
int
ctl_call(struct o2ctl *ctl, const char *daemon, Envelope *req, Envelope **rep)
{
	int fd = ctl_connect(ctl, daemon);

	if (fd == -1)
		return EX_DOWN;
	if (ipc_sync_call(fd, req, rep, ctl->timeout_ms) == -1) {
		fprintf(stderr, "o2ctl: %s: %s\n", daemon, strerror(errno));
		close(fd);
		return EX_DOWN;
	}
	close(fd);
	if ((*rep)->status != 0) {
		fprintf(stderr, "o2ctl: %s\n", (*rep)->error[0] ? (*rep)->error :
		    strerror((*rep)->status));
		return EX_FAIL;
	}
	return EX_OK;
}

/* Ask a daemon for its state and print the reply as JSON or as text. */
int
ctl_show(struct o2ctl *ctl, const char *daemon, MsgType type,
    Envelope__PayloadCase payload, ctl_print_fn *json, ctl_print_fn *text)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	int rc;

	req.type = type;
	if ((rc = ctl_call(ctl, daemon, &req, &rep)) == EX_OK) {
		if (rep->payload_case != payload) {
			fprintf(stderr, "o2ctl: %s sent no status\n", daemon);
			rc = EX_FAIL;
		} else {
			(ctl->json ? json : text)(rep);
		}
	}
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}

/*
 * Subscribe to a daemon's events and print them as they come, flushed
 * for scripts; fn prints one event and says whether it counted. Stops
 * after count events (0: never).
 */
int
ctl_watch(struct o2ctl *ctl, const char *daemon, uint32_t topics,
    unsigned long count, ctl_event_fn *fn)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL, *ev;
	Subscribe sub = SUBSCRIBE__INIT;
	unsigned long seen = 0;
	int fd;

	if ((fd = ctl_connect(ctl, daemon)) == -1)
		return EX_DOWN;
	sub.topics = topics;
	req.type = MSG_TYPE__MSG_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_SUBSCRIBE;
	req.subscribe = &sub;
	if (ipc_sync_call(fd, &req, &rep, ctl->timeout_ms) == -1) {
		fprintf(stderr, "o2ctl: subscribe: %s\n", strerror(errno));
		close(fd);
		return EX_DOWN;
	}
	envelope__free_unpacked(rep, NULL);
	printf("%s\n", ctl->json ? "{\"subscribed\":true}" : "watching");
	fflush(stdout);
	while (count == 0 || seen < count) {
		if (ipc_sync_recv(fd, &ev, -1) == -1) {
			fprintf(stderr, "o2ctl: %s: %s\n", daemon, strerror(errno));
			close(fd);
			return EX_DOWN;
		}
		if (ev->kind == KIND__KIND_EVENT && fn(ctl, ev))
			seen++;
		fflush(stdout);
		envelope__free_unpacked(ev, NULL);
	}
	close(fd);
	return EX_OK;
}

/*
 * --json may follow the command too, among its own arguments, as in
 * `o2ctl status --json`: take it out of them. Returns the new argc.
 */
static int
take_json(struct o2ctl *ctl, const struct o2ctl_cmd *cmd, int argc, char **argv)
{
	int i, n = 1;

	for (i = 1; i < argc; i++) {
		if ((cmd->program_args == 0 || i < cmd->program_args) &&
		    strcmp(argv[i], "--json") == 0) {
			ctl->json = 1;
			continue;
		}
		argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "rundir", required_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct o2ctl ctl = { .rundir = rundir_default(), .timeout_ms = 10000 };
	unsigned long ms;
	size_t i;
	int ch, rc, cmd_argc;

	log_init("o2ctl", 0);
	/* Options stop at the command, whose own flags follow it. */
	while ((ch = getopt_long(argc, argv, "+hj", longopts, NULL)) != -1) {
		switch (ch) {
		case 'R': ctl.rundir = optarg; break;
		case 'j': ctl.json = 1; break;
		case 'T':
			if (parse_ulong(optarg, 10, 3600000, &ms) == -1) {
				fprintf(stderr, "o2ctl: bad --timeout %s\n", optarg);
				return EX_USAGE;
			}
			ctl.timeout_ms = (int)ms;
			break;
		case 'h': usage(stdout); return EX_OK;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < nitems(commands); i++) {
		if (strcmp(commands[i].name, argv[optind]) != 0)
			continue;
		cmd_argc = take_json(&ctl, &commands[i], argc - optind, argv + optind);
		rc = commands[i].run(&ctl, cmd_argc, argv + optind);
		/* One place says how a command is called: its table entry. */
		if (rc == EX_USAGE)
			fprintf(stderr, "usage: o2ctl %s%s%s\n", commands[i].name,
			    commands[i].args[0] ? " " : "", commands[i].args);
		return rc;
	}
	fprintf(stderr, "o2ctl: unknown command %s\n", argv[optind]);
	usage(stderr);
	return EX_USAGE;
}
