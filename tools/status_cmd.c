/*
 * o2ctl status: one node's view of the cluster, from nmd (who is
 * configured), hbd (who heartbeats), netd (who is linked), dlmd
 * (which lock domains) and each fsd (which volumes are mounted). Scripts
 * read its JSON form (o2ctl(8)): fields are added to it, never renamed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "o2ctl.h"

struct view {
	Envelope	*cfg;		/* nmd: required */
	const char	*membership;	/* the daemon hb came from: hbd, or pcmkd on pcmk */
	Envelope	*hb;		/* it: NULL when it does not answer */
	Envelope	*net;		/* netd: NULL when it does not answer */
	Envelope	*dlm;		/* dlmd: NULL when it does not answer */
	struct mounts	 mounts;	/* every fsd's status socket */
};

static Envelope *
ask(struct o2ctl *ctl, const char *daemon, MsgType type, Envelope__PayloadCase want)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;

	req.type = type;
	if (ctl_call(ctl, daemon, &req, &rep) != EX_OK || rep->payload_case != want) {
		if (rep != NULL)
			envelope__free_unpacked(rep, NULL);
		return NULL;
	}
	return rep;
}

static const char *
heartbeat_of(const struct view *v, unsigned num)
{
	const Hbd__HbStatus *st;
	size_t i;

	if (v->hb == NULL)
		return "unknown";
	st = v->hb->hb_status;
	for (i = 0; i < st->n_live_nodes; i++)
		if (st->live_nodes[i] == num)
			return "up";
	return "down";
}

static const char *
link_of(const struct view *v, const Nmd__Node *n)
{
	const Netd__NetStatus *st;
	size_t i;

	if (n->local)
		return "self";
	if (v->net == NULL)
		return "down";
	st = v->net->net_status;
	for (i = 0; i < st->n_links; i++)
		if (st->links[i]->node == n->num)
			return st->links[i]->state == NETD__LINK_STATE__LINK_UP ?
			    "up" : "down";
	return "down";
}

/* pcmk: n was lost and waits for its fence (it counts as up meanwhile). */
static int
fence_pending_of(const struct view *v, unsigned num)
{
	size_t i;

	if (v->hb == NULL)
		return 0;
	for (i = 0; i < v->hb->hb_status->n_fences_pending; i++)
		if (v->hb->hb_status->fences_pending[i]->node == num)
			return 1;
	return 0;
}

/* What this node sees of n, after nmd's fields. */
static void
node_view_json(FILE *f, int *first, const Nmd__Node *n, const void *arg)
{
	const struct view *v = arg;

	json_field_str(f, first, "heartbeat", heartbeat_of(v, n->num));
	json_field_str(f, first, "link", link_of(v, n));
	json_field_bool(f, first, "fence_pending", fence_pending_of(v, n->num));
}

static void
print_json(const struct view *v)
{
	const Nmd__Config *c = v->cfg->config;
	int first = 1, f2;
	size_t i;

	printf("{");
	json_field_str(stdout, &first, "cluster", c->cluster);
	json_field_str(stdout, &first, "stack", c->stack);
	json_key(stdout, &first, "daemons");
	printf("{\"nmd\":true,\"%s\":%s,\"netd\":%s,\"dlmd\":%s}", v->membership,
	    v->hb ? "true" : "false", v->net ? "true" : "false",
	    v->dlm ? "true" : "false");
	json_field_bool(stdout, &first, "fenced", v->hb != NULL && v->hb->hb_status->fenced);
	json_field_str(stdout, &first, "fencing", v->hb != NULL ? v->hb->hb_status->fencing : "");
	json_key(stdout, &first, "nodes");
	config_nodes_json(stdout, c, node_view_json, v);
	json_key(stdout, &first, "regions");
	printf("[");
	for (i = 0; i < c->n_regions; i++) {
		printf("%s", i ? "," : "");
		json_str(stdout, c->regions[i]->name);
	}
	printf("]");
	/* Without dlmd there is no domain list, rather than an empty one. */
	if (v->dlm != NULL) {
		const Dlmd__DlmStatus *st = v->dlm->dlm_status;

		json_key(stdout, &first, "domains");
		printf("[");
		for (i = 0; i < st->n_domains; i++) {
			const Dlmd__DomainInfo *d = st->domains[i];
			size_t k;

			f2 = 1;
			printf("%s{", i ? "," : "");
			json_field_str(stdout, &f2, "name", d->name);
			json_key(stdout, &f2, "members");
			printf("[");
			for (k = 0; k < d->n_members; k++)
				printf("%s%u", k ? "," : "", d->members[k]);
			printf("]");
			json_field_uint(stdout, &f2, "directory", d->directory);
			json_field_bool(stdout, &f2, "recovering", d->recovering);
			printf("}");
		}
		printf("]");
	}
	json_key(stdout, &first, "mounts");
	mounts_json(stdout, &v->mounts);
	printf("}\n");
}

static void
print_text(const struct view *v)
{
	const Nmd__Config *c = v->cfg->config;
	size_t i;

	printf("cluster %s (stack %s): nmd up, %s %s, netd %s, dlmd %s%s\n", c->cluster,
	    c->stack, v->membership, v->hb ? "up" : "DOWN", v->net ? "up" : "DOWN", v->dlm ? "up" : "DOWN",
	    v->hb != NULL && v->hb->hb_status->fenced ? ", this node is FENCED" : "");
	printf("  %-4s %-20s %-6s %-10s %s\n", "NUM", "NODE", "LOCAL", "HEARTBEAT", "LINK");
	for (i = 0; i < c->n_nodes; i++) {
		const Nmd__Node *n = c->nodes[i];

		printf("  %-4u %-20s %-6s %-10s %s%s\n", n->num, n->name,
		    n->local ? "yes" : "", heartbeat_of(v, n->num), link_of(v, n),
		    fence_pending_of(v, n->num) ? "  FENCE PENDING" : "");
	}
	for (i = 0; i < c->n_regions; i++)
		printf("  heartbeat region %s on %s\n", c->regions[i]->name,
		    c->regions[i]->dev);
	mounts_text(stdout, &v->mounts, 0);
	if (v->dlm == NULL)
		return;
	for (i = 0; i < v->dlm->dlm_status->n_domains; i++) {
		const Dlmd__DomainInfo *d = v->dlm->dlm_status->domains[i];
		size_t k;

		printf("  lock domain %s: directory %u, members ", d->name, d->directory);
		for (k = 0; k < d->n_members; k++)
			printf("%s%u", k ? "," : "", d->members[k]);
		printf("%s\n", d->recovering ? ", RECOVERING" : "");
	}
}

int
cmd_status(struct o2ctl *ctl, int argc, char **argv)
{
	struct view v = { 0 };

	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	v.cfg = ask(ctl, "nmd", MSG_TYPE__MSG_NMD_GET_CONFIG, ENVELOPE__PAYLOAD_CONFIG);
	if (v.cfg == NULL)
		return EX_DOWN;
	v.membership = ctl_membership(ctl);
	v.hb = ask(ctl, v.membership, MSG_TYPE__MSG_HBD_STATUS, ENVELOPE__PAYLOAD_HB_STATUS);
	v.net = ask(ctl, "netd", MSG_TYPE__MSG_NETD_STATUS, ENVELOPE__PAYLOAD_NET_STATUS);
	v.dlm = ask(ctl, "dlmd", MSG_TYPE__MSG_DLMD_STATUS, ENVELOPE__PAYLOAD_DLM_STATUS);
	/* an unreadable runtime directory was reported; the rest still shows */
	mounts_collect(ctl, &v.mounts);
	(ctl->json ? print_json : print_text)(&v);
	mounts_free(&v.mounts);
	envelope__free_unpacked(v.cfg, NULL);
	if (v.hb != NULL)
		envelope__free_unpacked(v.hb, NULL);
	if (v.net != NULL)
		envelope__free_unpacked(v.net, NULL);
	if (v.dlm != NULL)
		envelope__free_unpacked(v.dlm, NULL);
	return EX_OK;
}
