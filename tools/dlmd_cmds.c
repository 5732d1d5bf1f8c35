/*
 * o2ctl commands served by dlmd: its domains (dlm) and one domain's lock
 * resources with their queues (locks), for admins and for the tests.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "o2ctl.h"

#define NODE_UNKNOWN	255	/* dlmd's "no such node yet" */

static const char *
mode_name(int mode)
{
	switch (mode) {
	case DLMD__MODE__MODE_NL: return "NL";
	case DLMD__MODE__MODE_PR: return "PR";
	case DLMD__MODE__MODE_EX: return "EX";
	default: return "-";
	}
}

/* Lock names are bytes: printable ones as they are, others as \xNN. */
static void
name_text(const ProtobufCBinaryData *b, char *out, size_t outlen)
{
	size_t i, n = 0;

	for (i = 0; i < b->len && n + 5 < outlen; i++) {
		if (isprint(b->data[i]) && b->data[i] != '\\')
			out[n++] = (char)b->data[i];
		else
			n += (size_t)snprintf(out + n, outlen - n, "\\x%02x", b->data[i]);
	}
	out[n] = '\0';
}

static void
hex_text(const ProtobufCBinaryData *b, char *out)
{
	size_t i;

	for (i = 0; i < b->len && i < 64; i++)
		sprintf(out + 2 * i, "%02x", b->data[i]);
	out[2 * i] = '\0';
}

static void
print_nodes_json(const uint32_t *v, size_t n)
{
	size_t i;

	printf("[");
	for (i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", v[i]);
	printf("]");
}

static void
print_nodes_text(const uint32_t *v, size_t n)
{
	size_t i;

	if (n == 0)
		printf("-");
	for (i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", v[i]);
}

static void
print_node_json(uint32_t node)
{
	if (node == NODE_UNKNOWN)
		printf("null");
	else
		printf("%u", node);
}

static void
print_domain_json(const Dlmd__DomainInfo *d)
{
	int first = 1;

	printf("{");
	json_key(stdout, &first, "name"); json_str(stdout, d->name);
	json_key(stdout, &first, "key"); printf("%u", d->key);
	json_key(stdout, &first, "members"); print_nodes_json(d->members, d->n_members);
	json_key(stdout, &first, "directory"); print_node_json(d->directory);
	json_key(stdout, &first, "recovering"); printf("%s", d->recovering ? "true" : "false");
	json_key(stdout, &first, "protocol");
	printf("\"%u.%u\"", d->protocol_major, d->protocol_minor);
	printf("}");
}

static void
dlmd_status_json(const Envelope *rep)
{
	const Dlmd__DlmStatus *st = rep->dlm_status;
	int first = 1;
	size_t i;

	printf("{");
	json_key(stdout, &first, "local_node"); printf("%u", st->local_node);
	json_key(stdout, &first, "hbd_connected"); printf("%s", st->hbd_connected ? "true" : "false");
	json_key(stdout, &first, "netd_connected"); printf("%s", st->netd_connected ? "true" : "false");
	json_key(stdout, &first, "live_nodes"); print_nodes_json(st->live_nodes, st->n_live_nodes);
	json_key(stdout, &first, "domains");
	printf("[");
	for (i = 0; i < st->n_domains; i++) {
		printf("%s", i ? "," : "");
		print_domain_json(st->domains[i]);
	}
	printf("]}\n");
}

static void
dlmd_status_text(const Envelope *rep)
{
	const Dlmd__DlmStatus *st = rep->dlm_status;
	size_t i;

	printf("dlmd: node %u, hbd %s, netd %s, live nodes ", st->local_node,
	    st->hbd_connected ? "connected" : "NOT CONNECTED",
	    st->netd_connected ? "connected" : "NOT CONNECTED");
	print_nodes_text(st->live_nodes, st->n_live_nodes);
	printf("\n");
	if (st->n_domains == 0) {
		printf("no domains\n");
		return;
	}
	printf("\n  %-24s %-9s %-6s %-10s %s\n", "DOMAIN", "DIRECTORY", "PROTO",
	    "STATE", "MEMBERS");
	for (i = 0; i < st->n_domains; i++) {
		const Dlmd__DomainInfo *d = st->domains[i];
		char proto[24];

		snprintf(proto, sizeof(proto), "%u.%u", d->protocol_major,
		    d->protocol_minor);
		printf("  %-24s %-9u %-6s %-10s ", d->name, d->directory, proto,
		    d->recovering ? "recovering" : "ok");
		print_nodes_text(d->members, d->n_members);
		printf("\n");
	}
}

int
cmd_dlm(struct o2ctl *ctl, int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	return ctl_show(ctl, "dlmd", MSG_TYPE__MSG_DLMD_STATUS,
	    ENVELOPE__PAYLOAD_DLM_STATUS, dlmd_status_json, dlmd_status_text);
}

static const char *const queue_names[] = { "granted", "converting", "blocked" };

static void
print_lock_json(const Dlmd__LockInfo *l)
{
	int first = 1;

	printf("{");
	json_key(stdout, &first, "lockid"); printf("\"0x%016llx\"", (unsigned long long)l->lockid);
	json_key(stdout, &first, "node"); printf("%u", l->node);
	json_key(stdout, &first, "mode"); json_str(stdout, mode_name(l->mode));
	if (l->queue == 1) {
		json_key(stdout, &first, "convert_mode");
		json_str(stdout, mode_name(l->convert_mode));
	}
	json_key(stdout, &first, "bast_pending"); printf("%s", l->bast_pending ? "true" : "false");
	printf("}");
}

static void
print_resource_json(const Dlmd__ResourceInfo *r)
{
	char name[4 * 64 + 1], lvb[2 * 64 + 1], namehex[2 * 64 + 1];
	int first = 1, f2;
	size_t i, q;

	name_text(&r->name, name, sizeof(name));
	hex_text(&r->name, namehex);
	hex_text(&r->lvb, lvb);
	printf("{");
	json_key(stdout, &first, "name"); json_str(stdout, name);
	json_key(stdout, &first, "name_hex"); json_str(stdout, namehex);
	json_key(stdout, &first, "master"); print_node_json(r->master);
	json_key(stdout, &first, "recovering"); printf("%s", r->recovering ? "true" : "false");
	json_key(stdout, &first, "lvb"); json_str(stdout, lvb);
	json_key(stdout, &first, "lvb_valid"); printf("%s", r->lvb_valid ? "true" : "false");
	json_key(stdout, &first, "lvb_version"); printf("%llu", (unsigned long long)r->lvb_version);
	for (q = 0; q < 3; q++) {
		json_key(stdout, &first, queue_names[q]);
		printf("[");
		f2 = 1;
		for (i = 0; i < r->n_locks; i++) {
			if (r->locks[i]->queue != q)
				continue;
			printf("%s", f2 ? "" : ",");
			f2 = 0;
			print_lock_json(r->locks[i]);
		}
		printf("]");
	}
	printf("}");
}

static void
print_dump_json(const Dlmd__DomainDump *d)
{
	int first = 1;
	size_t i;

	printf("{");
	if (d->domain != NULL) {
		json_key(stdout, &first, "domain");
		print_domain_json(d->domain);
	}
	json_key(stdout, &first, "recovery_pending");
	print_nodes_json(d->recovery_pending, d->n_recovery_pending);
	json_key(stdout, &first, "recovery_master"); print_node_json(d->recovery_master);
	json_key(stdout, &first, "directory_entries");
	printf("%llu", (unsigned long long)d->directory_entries);
	json_key(stdout, &first, "resources");
	printf("[");
	for (i = 0; i < d->n_resources; i++) {
		printf("%s", i ? "," : "");
		print_resource_json(d->resources[i]);
	}
	printf("]}\n");
}

static void
print_dump_text(const Dlmd__DomainDump *d)
{
	char name[4 * 64 + 1], lvb[2 * 64 + 1];
	size_t i, k, q;

	if (d->domain != NULL) {
		printf("domain %s: directory %u, members ", d->domain->name,
		    d->domain->directory);
		print_nodes_text(d->domain->members, d->domain->n_members);
		printf("%s\n", d->domain->recovering ? ", RECOVERING" : "");
	}
	if (d->n_recovery_pending > 0 || d->recovery_master != NODE_UNKNOWN) {
		printf("recovery: dead nodes ");
		print_nodes_text(d->recovery_pending, d->n_recovery_pending);
		if (d->recovery_master != NODE_UNKNOWN)
			printf(", recovery master %u", d->recovery_master);
		printf("\n");
	}
	printf("%zu resources, %llu directory entries\n", d->n_resources,
	    (unsigned long long)d->directory_entries);
	for (i = 0; i < d->n_resources; i++) {
		const Dlmd__ResourceInfo *r = d->resources[i];

		name_text(&r->name, name, sizeof(name));
		printf("\nresource %s: master ", name);
		if (r->master == NODE_UNKNOWN)
			printf("unknown");
		else
			printf("%u", r->master);
		printf("%s\n", r->recovering ? ", RECOVERING" : "");
		if (r->lvb.len > 0) {
			hex_text(&r->lvb, lvb);
			printf("  lvb %s (%s, version %llu)\n", lvb,
			    r->lvb_valid ? "valid" : "INVALID",
			    (unsigned long long)r->lvb_version);
		}
		for (q = 0; q < 3; q++)
			for (k = 0; k < r->n_locks; k++) {
				const Dlmd__LockInfo *l = r->locks[k];

				if (l->queue != q)
					continue;
				printf("  %-11s 0x%016llx node %-3u %s", queue_names[q],
				    (unsigned long long)l->lockid, l->node,
				    mode_name(l->mode));
				if (q == 1)
					printf(" -> %s", mode_name(l->convert_mode));
				printf("%s\n", l->bast_pending ? " (bast pending)" : "");
			}
	}
}

int
cmd_locks(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	Dlmd__Domain dom = DLMD__DOMAIN__INIT;
	int rc;

	if (argc != 2)
		return EX_USAGE;
	dom.name = argv[1];
	req.type = MSG_TYPE__MSG_DLMD_DUMP;
	req.payload_case = ENVELOPE__PAYLOAD_DOMAIN;
	req.domain = &dom;
	if ((rc = ctl_call(ctl, "dlmd", &req, &rep)) == EX_OK) {
		if (rep->payload_case != ENVELOPE__PAYLOAD_DOMAIN_DUMP) {
			fprintf(stderr, "o2ctl: dlmd sent no dump\n");
			rc = EX_FAIL;
		} else if (ctl->json) {
			print_dump_json(rep->domain_dump);
		} else {
			print_dump_text(rep->domain_dump);
		}
	}
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}
