/*
 * nmd's configuration: our cluster and node number (checked against
 * corosync's once), the nodes of cluster.conf, and the heartbeat regions
 * nmd holds for this node's mounts. On the pcmk stack a region is no
 * disk heartbeat: it names a volume this node's writers use, and gets
 * an entry in the lease file while nmd holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hblease.h"
#include "log.h"
#include "nmdclient.h"
#include "util.h"

#include "pcmkd.h"

#define NMD_RETRY_MS	200

static void (*on_configured)(struct pcmkd *);

static struct pm_region *
region_find(struct pcmkd *p, const char *name)
{
	struct pm_region *r;

	TAILQ_FOREACH(r, &p->regions, entry)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

static void
regions_apply(struct pcmkd *p, const Nmd__Config *cfg)
{
	struct pm_region *r, *next;
	unsigned i;
	size_t k;

	TAILQ_FOREACH(r, &p->regions, entry)
		r->seen = 0;
	for (k = 0; k < cfg->n_regions; k++) {
		const Nmd__Region *nr = cfg->regions[k];

		/* nmd makes the item, then writes dev: started from then on */
		if (nr->dev[0] == '\0' || !cc_valid_region_name(nr->name))
			continue;
		if ((r = region_find(p, nr->name)) == NULL) {
			r = xcalloc(1, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", nr->name);
			TAILQ_INSERT_TAIL(&p->regions, r, entry);
			lease_region_add(p, r);
			log_info("region %s (%s) in use", r->name, nr->dev);
		}
		r->seen = 1;
	}
	for (r = TAILQ_FIRST(&p->regions); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->seen)
			continue;
		log_info("region %s no longer in use", r->name);
		lease_region_drop(p, r);
		api_region_event(p, HBD__REGION_EVENT_KIND__REGION_STOPPED, r->name,
		    "released");
		TAILQ_REMOVE(&p->regions, r, entry);
		free(r);
	}
	/* what an earlier pcmkd left for regions gone meanwhile */
	for (i = 0; i < CC_MAX_REGIONS; i++) {
		struct pm_region probe;

		if (!p->lease->regions[i].in_use)
			continue;
		memcpy(probe.name, p->lease->regions[i].name, sizeof(probe.name));
		probe.name[sizeof(probe.name) - 1] = '\0';
		if (region_find(p, probe.name) != NULL)
			continue;
		probe.lease_idx = i;
		lease_region_drop(p, &probe);
	}
}

static void
on_config(const Nmd__Config *cfg, void *arg)
{
	struct pcmkd *p = arg;
	size_t k;

	if (!p->configured) {
		if (cfg->cluster[0] == '\0')
			fatalx("nmd has no cluster configured");
		if (strcmp(cfg->stack, cc_stack_name(CC_STACK_PCMK)) != 0)
			fatalx("cluster %s runs stack %s, not pcmk: hbd serves it, not pcmkd "
			    "(cluster.conf: stack = pcmk)", cfg->cluster, cfg->stack);
		if (strcmp(cfg->cluster, p->cs_cluster) != 0)
			fatalx("cluster.conf names cluster %s, corosync %s "
			    "(totem.cluster_name): they must be the same", cfg->cluster,
			    p->cs_cluster);
		if (cfg->local_node >= PM_MAX_NODES)
			fatalx("nmd does not know which node this is");
		if (cfg->local_node != p->nodeid)
			fatalx("this node is number %u in cluster.conf but corosync's node id "
			    "%u: on the pcmk stack they must be the same", cfg->local_node,
			    p->nodeid);
		snprintf(p->cluster, sizeof(p->cluster), "%s", cfg->cluster);
		p->local_node = cfg->local_node;
	}
	memset(p->node_known, 0, sizeof(p->node_known));
	for (k = 0; k < cfg->n_nodes; k++) {
		if (cfg->nodes[k]->num >= PM_MAX_NODES)
			continue;
		p->node_known[cfg->nodes[k]->num] = 1;
		snprintf(p->node_names[cfg->nodes[k]->num], sizeof(p->node_names[0]), "%s",
		    cfg->nodes[k]->name);
	}
	if (!p->configured) {
		p->configured = 1;
		on_configured(p);
	}
	regions_apply(p, cfg);
	state_update(p);
}

static const struct nmd_client_ops nmd_ops = {
	.config = on_config,
};

void
nmdlink_start(struct pcmkd *p, void (*configured)(struct pcmkd *))
{
	on_configured = configured;
	p->nmd = nmd_client_start(p->base, p->rundir, NMD_RETRY_MS, &nmd_ops, p);
}
