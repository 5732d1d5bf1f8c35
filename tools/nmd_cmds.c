/* o2ctl commands served by nmd: the configuration and its changes. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterconf.h"
#include "ipc.h"
#include "o2ctl.h"
#include "util.h"

static void
node_json(FILE *f, int *first, const Nmd__Node *n)
{
	json_field_str(f, first, "name", n->name);
	json_field_uint(f, first, "num", n->num);
	json_field_str(f, first, "ipv4_address", n->ipv4_address);
	json_field_uint(f, first, "ipv4_port", n->ipv4_port);
	json_field_bool(f, first, "local", n->local);
	json_field_uint(f, first, "pins", n->pins);
}

void
config_nodes_json(FILE *f, const Nmd__Config *c, config_node_more_fn *more,
    const void *arg)
{
	size_t i;
	int first;

	fputc('[', f);
	for (i = 0; i < c->n_nodes; i++) {
		first = 1;
		fprintf(f, "%s{", i ? "," : "");
		node_json(f, &first, c->nodes[i]);
		if (more != NULL)
			more(f, &first, c->nodes[i], arg);
		fputc('}', f);
	}
	fputc(']', f);
}

static void
region_json(FILE *f, const Nmd__Region *r)
{
	int first = 1;

	fputc('{', f);
	json_field_str(f, &first, "name", r->name);
	json_field_uint(f, &first, "block_bytes", r->block_bytes);
	json_field_uint(f, &first, "start_block", r->start_block);
	json_field_uint(f, &first, "blocks", r->blocks);
	json_field_str(f, &first, "dev", r->dev);
	json_field_int(f, &first, "pid", r->pid);
	json_field_uint(f, &first, "refs", r->refs);
	fputc('}', f);
}

static void
print_config_json(const Envelope *rep)
{
	const Nmd__Config *c = rep->config;
	int first = 1;
	size_t i;

	printf("{");
	json_field_str(stdout, &first, "cluster", c->cluster);
	json_field_str(stdout, &first, "config_file", c->config_file);
	json_field_str(stdout, &first, "stack", c->stack);
	json_field_uint(stdout, &first, "idle_timeout_ms", c->idle_timeout_ms);
	json_field_uint(stdout, &first, "keepalive_delay_ms", c->keepalive_delay_ms);
	json_field_uint(stdout, &first, "reconnect_delay_ms", c->reconnect_delay_ms);
	json_field_str(stdout, &first, "fence_method", c->fence_method);
	json_field_uint(stdout, &first, "dead_threshold", c->dead_threshold);
	json_field_str(stdout, &first, "heartbeat_mode", c->heartbeat_mode);
	json_field_uint(stdout, &first, "heartbeat_interval_ms", c->heartbeat_interval_ms);
	json_key(stdout, &first, "local_node");
	if (c->local_node == CC_INVALID_NODE)
		printf("null");
	else
		printf("%u", c->local_node);
	json_field_str(stdout, &first, "last_reload_error", c->last_reload_error);
	json_key(stdout, &first, "nodes");
	config_nodes_json(stdout, c, NULL, NULL);
	json_key(stdout, &first, "regions");
	printf("[");
	for (i = 0; i < c->n_regions; i++) {
		printf("%s", i ? "," : "");
		region_json(stdout, c->regions[i]);
	}
	printf("]");
	json_key(stdout, &first, "global_regions");
	printf("[");
	for (i = 0; i < c->n_global_regions; i++) {
		printf("%s", i ? "," : "");
		json_str(stdout, c->global_regions[i]);
	}
	printf("]}\n");
}

static void
print_config_text(const Envelope *rep)
{
	const Nmd__Config *c = rep->config;
	size_t i;

	if (c->cluster[0] == '\0') {
		printf("no cluster configured\n");
		return;
	}
	printf("cluster %s (from %s)\n", c->cluster, c->config_file);
	printf("  stack       %s\n", c->stack);
	printf("  heartbeat   mode %s, dead_threshold %u, interval %u ms\n",
	    c->heartbeat_mode, c->dead_threshold, c->heartbeat_interval_ms);
	printf("  network     idle timeout %u ms, keepalive %u ms, reconnect %u ms\n",
	    c->idle_timeout_ms, c->keepalive_delay_ms, c->reconnect_delay_ms);
	printf("  fencing     %s\n", c->fence_method);
	if (c->last_reload_error[0] != '\0')
		printf("  last reload FAILED: %s\n", c->last_reload_error);
	printf("\n  %-4s %-20s %-22s %-6s %s\n", "NUM", "NODE", "ADDRESS", "LOCAL", "PINS");
	for (i = 0; i < c->n_nodes; i++) {
		const Nmd__Node *n = c->nodes[i];
		char addr[40], num[8];

		snprintf(addr, sizeof(addr), "%s:%u", n->ipv4_address, n->ipv4_port);
		snprintf(num, sizeof(num), n->num == CC_INVALID_NODE ? "-" : "%u", n->num);
		printf("  %-4s %-20s %-22s %-6s %u\n", num, n->name, addr,
		    n->local ? "yes" : "", n->pins);
	}
	if (c->n_regions > 0)
		printf("\n  %-32s %-6s %-10s %-6s %-6s %-5s %s\n", "REGION", "BLOCK",
		    "START", "BLOCKS", "PID", "REFS", "DEVICE");
	for (i = 0; i < c->n_regions; i++) {
		const Nmd__Region *r = c->regions[i];

		printf("  %-32s %-6u %-10llu %-6u %-6d %-5u %s\n", r->name,
		    r->block_bytes, (unsigned long long)r->start_block, r->blocks,
		    r->pid, r->refs, r->dev);
	}
	for (i = 0; i < c->n_global_regions; i++)
		printf("  global heartbeat region %s\n", c->global_regions[i]);
}

int
cmd_config(struct o2ctl *ctl, int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	return ctl_show(ctl, "nmd", MSG_TYPE__MSG_NMD_GET_CONFIG,
	    ENVELOPE__PAYLOAD_CONFIG, print_config_json, print_config_text);
}

static void
print_lines(const char *key, char **v, size_t n, int *first)
{
	size_t i;

	json_key(stdout, first, key);
	printf("[");
	for (i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		json_str(stdout, v[i]);
	}
	printf("]");
}

int
cmd_reload(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	const Nmd__ReloadResult *r;
	int rc, first = 1;
	size_t i;

	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	req.type = MSG_TYPE__MSG_NMD_RELOAD;
	rc = ctl_call(ctl, "nmd", &req, &rep);
	if (rc == EX_FAIL && ctl->json) {
		printf("{\"ok\":false,\"error\":");
		json_str(stdout, rep->error);
		printf("}\n");
	}
	if (rc == EX_OK && rep->payload_case == ENVELOPE__PAYLOAD_RELOAD) {
		r = rep->reload;
		if (ctl->json) {
			printf("{");
			json_key(stdout, &first, "ok");
			printf("true");
			print_lines("applied", r->applied, r->n_applied, &first);
			print_lines("refused", r->refused, r->n_refused, &first);
			printf("}\n");
		} else {
			printf("reloaded: %zu changes applied, %zu refused\n",
			    r->n_applied, r->n_refused);
			for (i = 0; i < r->n_applied; i++)
				printf("  applied: %s\n", r->applied[i]);
			for (i = 0; i < r->n_refused; i++)
				printf("  refused: %s\n", r->refused[i]);
		}
		if (r->n_refused > 0)
			rc = EX_FAIL;
	}
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}

/* Everything nmd -n checks, without a daemon: for ExecStartPre and admins. */
int
cmd_check_config(struct o2ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "node", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tunables = "/etc/default/o2cb", *node = NULL;
	int tunables_given = 0, ch, first = 1, rc;
	struct cluster_conf *cc;
	const struct cc_node *self = NULL;
	char err[CC_ERR_MAX] = "";

	optind = 0;	/* glibc: 0 re-initialises getopt after main's "+" scan */
	while ((ch = getopt_long(argc, argv, "t:", longopts, NULL)) != -1) {
		switch (ch) {
		case 't': tunables = optarg; tunables_given = 1; break;
		case 'N': node = optarg; break;
		default: return EX_USAGE;
		}
	}
	if (optind != argc - 1)
		return EX_USAGE;
	cc = cc_load(argv[optind], tunables, tunables_given, NULL,
	    node != NULL ? node : host_node_name(), &self, err, sizeof(err),
	    cc_warn_stderr, NULL);
	if (ctl->json) {
		printf("{");
		json_key(stdout, &first, "ok");
		printf("%s", err[0] ? "false" : "true");
		json_key(stdout, &first, "error");
		json_str(stdout, err);
		if (!err[0]) {
			json_key(stdout, &first, "cluster");
			json_str(stdout, cc->name);
			json_key(stdout, &first, "nodes");
			printf("%zu", cc->nnodes);
			json_key(stdout, &first, "local_node");
			json_str(stdout, self->name);
		}
		printf("}\n");
	} else if (err[0]) {
		fprintf(stderr, "%s\n", err);
	} else {
		printf("%s: configuration OK (cluster %s, %zu nodes, local node %s)\n",
		    argv[optind], cc->name, cc->nnodes, self->name);
	}
	rc = cc == NULL ? EX_FAIL : EX_OK;
	free(cc);
	return rc;
}

static int
simple_call(struct o2ctl *ctl, Envelope *req)
{
	Envelope *rep = NULL;
	int rc = ctl_call(ctl, "nmd", req, &rep);

	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}

int
cmd_set(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT;
	Nmd__SetAttr sa = NMD__SET_ATTR__INIT;

	if (argc != 3)
		return EX_USAGE;
	sa.path = argv[1];
	sa.value = argv[2];
	req.type = MSG_TYPE__MSG_NMD_SET_ATTR;
	req.payload_case = ENVELOPE__PAYLOAD_SET_ATTR;
	req.set_attr = &sa;
	return simple_call(ctl, &req);
}

static int
item_call(struct o2ctl *ctl, MsgType type, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT;
	Nmd__ItemPath ip = NMD__ITEM_PATH__INIT;

	if (argc != 2)
		return EX_USAGE;
	ip.path = argv[1];
	req.type = type;
	req.payload_case = ENVELOPE__PAYLOAD_ITEM;
	req.item = &ip;
	return simple_call(ctl, &req);
}

int
cmd_mkdir(struct o2ctl *ctl, int argc, char **argv)
{
	return item_call(ctl, MSG_TYPE__MSG_NMD_MKDIR, argc, argv);
}

int
cmd_rmdir(struct o2ctl *ctl, int argc, char **argv)
{
	return item_call(ctl, MSG_TYPE__MSG_NMD_RMDIR, argc, argv);
}

static const char *
change_op_name(Nmd__ChangeOp op)
{
	switch (op) {
	case NMD__CHANGE_OP__CHANGE_ATTR: return "set";
	case NMD__CHANGE_OP__CHANGE_MKDIR: return "mkdir";
	case NMD__CHANGE_OP__CHANGE_RMDIR: return "rmdir";
	case NMD__CHANGE_OP__CHANGE_RELOADED: return "reloaded";
	default: return "unknown";
	}
}

static int
print_change(struct o2ctl *ctl, const Envelope *ev)
{
	const Nmd__ConfigChange *ch = ev->change;
	int first = 1;

	if (ev->payload_case != ENVELOPE__PAYLOAD_CHANGE)
		return 0;
	if (ctl->json) {
		printf("{");
		json_key(stdout, &first, "op");
		json_str(stdout, change_op_name(ch->op));
		json_key(stdout, &first, "path");
		json_str(stdout, ch->path);
		json_key(stdout, &first, "value");
		json_str(stdout, ch->value);
		printf("}\n");
	} else if (ch->op == NMD__CHANGE_OP__CHANGE_ATTR) {
		printf("set %s = %s\n", ch->path, ch->value);
	} else {
		printf("%s %s\n", change_op_name(ch->op), ch->path);
	}
	return 1;
}

/* Print each change nmd pushes, one line each. */
int
cmd_watch(struct o2ctl *ctl, int argc, char **argv)
{
	unsigned long count = 0;

	if (argc > 2 || (argc == 2 && parse_ulong(argv[1], 10, 1000000, &count) == -1))
		return EX_USAGE;
	return ctl_watch(ctl, "nmd", 0, count, print_change);
}

int
cmd_ping(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	int rc;

	if (argc != 2)
		return EX_USAGE;
	req.type = MSG_TYPE__MSG_PING;
	if ((rc = ctl_call(ctl, argv[1], &req, &rep)) == EX_OK &&
	    rep->payload_case == ENVELOPE__PAYLOAD_PING)
		printf("%s pid %u\n", rep->ping->daemon, rep->ping->pid);
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}
