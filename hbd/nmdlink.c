/*
 * What hbd takes from nmd and gives it, through common/nmdclient.c: the
 * whole configuration (nodes, heartbeat tunables, regions) each time it
 * may have changed, which hbd reconciles its regions with; node pins and
 * the regions' pid attribute.
 *
 * nmd is the authority on which regions exist. Local mode: a region
 * starts when its item has `dev` (ocfs2_hb_ctl, o2ctl heartbeat start or
 * a mount made it) and stops cleanly when the item goes. Global mode:
 * hbd itself acquires every region of cluster.conf's heartbeat: stanzas,
 * with the device found by devscan, and the same path starts them.
 *
 * If nmd goes away we keep heartbeating as we are (stopping would look
 * like a crash to peers while the filesystem still writes) and reconnect.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbd.h"
#include "log.h"
#include "nmdclient.h"
#include "util.h"
#include "volume.h"

#define NMD_RETRY_MS	1000
#define GLOBAL_RETRY_MS	5000

void
nmd_pin(struct hbd *h, unsigned node, int pin)
{
	if (h->node_names[node] == NULL || h->pinned[node] == pin ||
	    !nmd_client_connected(h->nmd))
		return;
	h->pinned[node] = (uint8_t)pin;
	nmd_client_pin(h->nmd, h->node_names[node], "heartbeat", pin);
}

void
nmd_set_pid(struct hbd *h, const char *region, int pid)
{
	char *path, val[16];

	if (h->cluster[0] == '\0')
		return;
	xasprintf(&path, "cluster/%s/heartbeat/%s/pid", h->cluster, region);
	snprintf(val, sizeof(val), "%d", pid);
	nmd_client_set_attr(h->nmd, path, val);
	free(path);
}

static const Nmd__Region *
cfg_region(const Nmd__Config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->n_regions; i++)
		if (strcmp(cfg->regions[i]->name, name) == 0)
			return cfg->regions[i];
	return NULL;
}

/*
 * Global mode: find the volume of each heartbeat: stanza and acquire its
 * region for as long as we live (the reference dies with our connection).
 * Returns how many are still without a device.
 */
static unsigned
acquire_global(struct hbd *h, const Nmd__Config *cfg)
{
	struct hb_region_desc d;
	struct volume v;
	Envelope req = ENVELOPE__INIT;
	Nmd__RegionAcquire ra = NMD__REGION_ACQUIRE__INIT;
	char dev[4096], err[512];
	unsigned missing = 0;
	size_t i;

	for (i = 0; i < cfg->n_global_regions; i++) {
		const char *uuid = cfg->global_regions[i];

		if (cfg_region(cfg, uuid) != NULL || region_find(h, uuid) != NULL)
			continue;
		if (devscan_find(uuid, dev, sizeof(dev)) == -1) {
			log_warnx("global heartbeat region %s: no device with that "
			    "volume UUID (set OCFS2_DEVICES to the candidates)", uuid);
			missing++;
			continue;
		}
		if (volume_open(dev, O_RDONLY, &v, err, sizeof(err)) == -1 ||
		    volume_heartbeat_region(&v, &d, err, sizeof(err)) == -1) {
			log_warnx("global heartbeat region %s: %s", uuid, err);
			if (v.fd >= 0)
				volume_close(&v);
			missing++;
			continue;
		}
		volume_close(&v);
		ra.name = (char *)uuid;
		ra.block_bytes = d.block_bytes;
		ra.start_block = d.start_block;
		ra.blocks = d.blocks;
		ra.dev = dev;
		req.type = MSG_TYPE__MSG_NMD_REGION_ACQUIRE;
		req.payload_case = ENVELOPE__PAYLOAD_REGION_ACQUIRE;
		req.region_acquire = &ra;
		log_info("global heartbeat region %s is on %s", uuid, dev);
		nmd_client_send(h->nmd, &req, "acquire global region %s on %s", uuid, dev);
	}
	return missing;
}

static void
global_retry(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	nmd_client_refetch(((struct hbd *)arg)->nmd);
}

/* nmd lost our pid (it restarted, or raced with a stop): say it again. */
static int
pid_unset(const Nmd__Config *cfg, const char *name)
{
	const Nmd__Region *cr = cfg_region(cfg, name);

	return cr != NULL && cr->pid != (int)getpid();
}

static void
reconcile_regions(struct hbd *h, const Nmd__Config *cfg)
{
	struct hb_region *r, *next;
	const Nmd__Region *cr;
	size_t i;

	TAILQ_FOREACH(r, &h->regions, entry) {
		cr = cfg_region(cfg, r->name);
		if ((cr == NULL || cr->dev[0] == '\0') && r->state != RS_FAILED &&
		    r->state != RS_STOPPING && fence_if_used(h, r, USERS_WRITERS, "its nmd item is gone"))
			return;
	}
	for (r = TAILQ_FIRST(&h->regions); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		cr = cfg_region(cfg, r->name);
		if ((cr != NULL && cr->dev[0] != '\0') ||
		    (r->state != RS_FAILED && region_kept_for_locks(h, r)))
			continue;
		if (r->state == RS_FAILED) {
			region_forget(r);
		} else if (r->state != RS_STOPPING) {
			log_info("region %s: its nmd item is gone, stopping", r->name);
			region_stop(r, 1);
		}
	}
	if (h->fenced || h->stopping || h->local_node == CC_INVALID_NODE)
		return;
	for (i = 0; i < cfg->n_regions; i++) {
		cr = cfg->regions[i];
		if (cr->dev[0] == '\0' || region_find(h, cr->name) != NULL)
			continue;
		region_start(h, cr->name, cr->dev, cr->block_bytes, cr->start_block,
		    cr->blocks);
	}
}

static void
apply_config(const Nmd__Config *cfg, void *arg)
{
	static struct event *retry;
	struct hbd *h = arg;
	enum cc_fence_method fm;
	struct hb_region *r;
	unsigned n;
	size_t i;

	/*
	 * Two membership daemons on one node would each answer for it: on
	 * the pcmk stack pcmkd does (nmd keeps the stack it started with).
	 */
	if (TAILQ_EMPTY(&h->regions) && strcmp(cfg->stack, cc_stack_name(CC_STACK_PCMK)) == 0)
		fatalx("cluster %s runs stack %s: pcmkd serves it, not hbd "
		    "(hbd serves only stack = o2cb)", cfg->cluster, cfg->stack);
	snprintf(h->cluster, sizeof(h->cluster), "%s", cfg->cluster);
	for (n = 0; n < HB_MAX_NODES; n++) {
		free(h->node_names[n]);
		h->node_names[n] = NULL;
		h->configured[n] = 0;
	}
	for (i = 0; i < cfg->n_nodes; i++) {
		n = cfg->nodes[i]->num;
		if (n >= HB_MAX_NODES)
			continue;
		h->configured[n] = 1;
		h->node_names[n] = xstrdup(cfg->nodes[i]->name);
	}
	if (cfg->cluster[0] == '\0') {
		h->have_config = 1;
		return;
	}
	/* Like nmd, the timing stays fixed while any region runs. */
	if (TAILQ_EMPTY(&h->regions)) {
		if (cfg->local_node != h->local_node)
			log_info("local node is %u", cfg->local_node);
		h->local_node = cfg->local_node;
		h->interval_ms = cfg->heartbeat_interval_ms;
		h->dead_threshold = cfg->dead_threshold;
		h->global = strcmp(cfg->heartbeat_mode, "global") == 0;
	}
	if (cc_fence_method_parse(cfg->fence_method, &fm) == 0)
		h->fence_method = fm;
	h->have_config = 1;
	/* Pins and pids die with a lost connection: say them again. */
	for (n = 0; n < HB_MAX_NODES; n++)
		if (h->members.up[n] && !h->pinned[n])
			nmd_pin(h, n, 1);
	reconcile_regions(h, cfg);
	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state != RS_FAILED && r->state != RS_STOPPING &&
		    pid_unset(cfg, r->name))
			nmd_set_pid(h, r->name, (int)getpid());
	if (h->global && !h->fenced && !h->stopping && acquire_global(h, cfg) > 0) {
		struct timeval tv = { GLOBAL_RETRY_MS / 1000, 0 };

		if (retry == NULL)
			retry = evtimer_new(h->base, global_retry, h);
		evtimer_add(retry, &tv);
	}
}

/* Pins and pids die with a lost connection: apply_config says them again. */
static void
nmd_down(void *arg)
{
	struct hbd *h = arg;

	log_warnx("without nmd, heartbeating on as we are");
	memset(h->pinned, 0, sizeof(h->pinned));
}

static const struct nmd_client_ops nmd_ops = {
	.config = apply_config,
	.down = nmd_down,
};

void
nmd_link_start(struct hbd *h)
{
	h->nmd = nmd_client_start(h->base, h->rundir, NMD_RETRY_MS, &nmd_ops, h);
}
