/*
 * The configuration, as nmd holds it: nodes, addresses, the cluster's
 * network timeouts. netd serves once nmd gave it a first one, applies
 * each one after (nodes added and removed), and pins the node item of
 * every node it has a link to, so that nmd refuses to change timeouts or
 * remove a node while a link depends on them, as the kernel does.
 */

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "nmdclient.h"
#include "util.h"

#define NMD_WAIT_MS	10000	/* nmd starts first; give it this long */
#define NMD_RETRY_MS	1000

static const Nmd__Node *
cfg_node_by_name(const Nmd__Config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->n_nodes; i++)
		if (strcasecmp(cfg->nodes[i]->name, name) == 0)
			return cfg->nodes[i];
	return NULL;
}

static int
node_usable(const Nmd__Node *cn, uint32_t *addr)
{
	struct in_addr a;

	if (cn->num >= CC_MAX_NODES || cn->ipv4_port == 0 ||
	    inet_pton(AF_INET, cn->ipv4_address, &a) != 1)
		return 0;
	*addr = a.s_addr;
	return 1;
}

/* Apply a configuration: 0, or -1 with why when netd cannot run on it. */
static int
apply_config(struct netd *nd, const Nmd__Config *cfg, int initial, char *why,
    size_t len)
{
	const Nmd__Node *me;
	struct netd_node *n;
	uint8_t seen[CC_MAX_NODES] = { 0 };
	uint32_t addr;
	size_t i;

	if (cfg->cluster[0] == '\0') {
		snprintf(why, len, "nmd has no cluster configured");
		return -1;
	}
	if (initial) {
		me = nd->node_name != NULL ? cfg_node_by_name(cfg, nd->node_name) : NULL;
		if (me == NULL && cfg->local_node < CC_MAX_NODES)
			for (i = 0; i < cfg->n_nodes; i++)
				if (cfg->nodes[i]->num == cfg->local_node)
					me = cfg->nodes[i];
		if (me == NULL || !node_usable(me, &addr)) {
			snprintf(why, len, "node %s is not in cluster %s, or has no "
			    "number and address", nd->node_name ? nd->node_name :
			    "(local)", cfg->cluster);
			return -1;
		}
		nd->self = me->num;
		snprintf(nd->cluster, sizeof(nd->cluster), "%s", cfg->cluster);
	} else if (strcmp(cfg->cluster, nd->cluster) != 0) {
		log_warnx("nmd now serves cluster %s; netd stays in %s until "
		    "restarted", cfg->cluster, nd->cluster);
		return 0;
	}
	if (!initial && (cfg->idle_timeout_ms != nd->idle_timeout_ms ||
	    cfg->keepalive_delay_ms != nd->keepalive_delay_ms))
		log_info("network timeouts now idle %u ms, keepalive %u ms; new "
		    "links use them", cfg->idle_timeout_ms, cfg->keepalive_delay_ms);
	nd->idle_timeout_ms = cfg->idle_timeout_ms;
	nd->keepalive_delay_ms = cfg->keepalive_delay_ms;
	nd->reconnect_delay_ms = cfg->reconnect_delay_ms;
	nd->dead_threshold = cfg->dead_threshold;
	nd->hb_interval_ms = cfg->heartbeat_interval_ms ? cfg->heartbeat_interval_ms : 2000;
	nd->hs.protocol_version = NETD_PROTOCOL_VERSION;
	snprintf(nd->hs.cluster, sizeof(nd->hs.cluster), "%s", nd->cluster);
	/* o2hb's write timeout, (threshold - 1) intervals: what peers compare. */
	nd->hs.hb_write_timeout_ms = nd->hb_interval_ms * (nd->dead_threshold - 1);
	nd->hs.idle_timeout_ms = nd->idle_timeout_ms;
	nd->hs.keepalive_delay_ms = nd->keepalive_delay_ms;
	nd->hs.reconnect_delay_ms = nd->reconnect_delay_ms;
	nd->hs.auth = nd->auth;
	if (nd->quo_timer != NULL)
		nd->quo.delay_ms = (nd->dead_threshold + 2) * nd->hb_interval_ms;

	for (i = 0; i < cfg->n_nodes; i++) {
		const Nmd__Node *cn = cfg->nodes[i];

		if (!node_usable(cn, &addr))
			continue;
		seen[cn->num] = 1;
		if ((n = nd->nodes[cn->num]) != NULL)
			continue;
		n = xcalloc(1, sizeof(*n));
		n->num = cn->num;
		snprintf(n->name, sizeof(n->name), "%s", cn->name);
		n->addr = addr;
		n->port = (uint16_t)cn->ipv4_port;
		n->configured = 1;
		link_node_init(nd, n);
		nd->nodes[n->num] = n;
		if (!initial)
			log_info("node %u (%s) added at %s:%u", n->num, n->name,
			    cn->ipv4_address, n->port);
	}
	for (i = 0; i < CC_MAX_NODES; i++) {
		if ((n = nd->nodes[i]) == NULL || seen[i])
			continue;
		if (i == nd->self) {
			log_warnx("this node was removed from the configuration; "
			    "netd keeps its address until restarted");
			continue;
		}
		log_info("node %u (%s) removed", n->num, n->name);
		link_node_free(nd, n);
	}
	return 0;
}

static void
on_config(const Nmd__Config *cfg, void *arg)
{
	struct netd *nd = arg;
	char why[256];

	if (nd->configured) {
		if (apply_config(nd, cfg, 0, why, sizeof(why)) == -1)
			log_warnx("ignoring nmd's new configuration: %s", why);
		return;
	}
	/* Without a node and a cluster to serve there is nothing to run. */
	if (apply_config(nd, cfg, 1, why, sizeof(why)) == -1)
		fatalx("%s", why);
	nd->configured = 1;
	event_free(nd->nmd_wait);
	nd->nmd_wait = NULL;
	nd->on_configured(nd);
}

/* Pins belong to the connection: a new one takes them again. */
static void
on_nmd_up(struct nmd_client *cl, void *arg)
{
	struct netd *nd = arg;
	unsigned i;

	for (i = 0; i < CC_MAX_NODES; i++)
		if (nd->nodes[i] != NULL && nd->nodes[i]->pinned)
			nmd_client_pin(cl, nd->nodes[i]->name, "link", 1);
}

static const struct nmd_client_ops nmd_ops = {
	.config = on_config,
	.up = on_nmd_up,
};

void
config_pin(struct netd *nd, struct netd_node *n, int pin)
{
	if (n->pinned == pin)
		return;
	n->pinned = pin;
	nmd_client_pin(nd->nmd, n->name, "link", pin);
}

static void
nmd_wait_over(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	fatalx("no configuration from nmd in %u ms", NMD_WAIT_MS);
}

void
config_start(struct netd *nd, void (*configured)(struct netd *))
{
	struct timeval tv = { NMD_WAIT_MS / 1000, (NMD_WAIT_MS % 1000) * 1000 };

	nd->on_configured = configured;
	if ((nd->nmd_wait = evtimer_new(nd->base, nmd_wait_over, nd)) == NULL ||
	    evtimer_add(nd->nmd_wait, &tv) == -1)
		fatalx("out of memory for a timer");
	nd->nmd = nmd_client_start(nd->base, nd->rundir, NMD_RETRY_MS, &nmd_ops, nd);
}

struct netd_node *
config_node_by_addr(struct netd *nd, uint32_t addr)
{
	unsigned i;

	for (i = 0; i < CC_MAX_NODES; i++)
		if (nd->nodes[i] != NULL && nd->nodes[i]->addr == addr)
			return nd->nodes[i];
	return NULL;
}

/*
 * O2CB_AUTHKEY=PATH in the o2cb defaults file names the cluster key
 * (ours, beyond o2cb; nmd's parser ignores keys it does not know).
 */
char *
config_keyfile_from_tunables(const char *path)
{
	char line[1024], *s, *v, *end, *found = NULL;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		s = line + strspn(line, " \t");
		if (strncmp(s, "export ", 7) == 0)
			s += 7 + strspn(s + 7, " \t");
		if (strncmp(s, "O2CB_AUTHKEY=", 13) != 0)
			continue;
		v = s + 13;
		v[strcspn(v, "\r\n")] = '\0';
		if ((*v == '"' || *v == '\'') && (end = strrchr(v + 1, *v)) != NULL) {
			*end = '\0';
			v++;
		}
		free(found);
		found = *v != '\0' ? xstrdup(v) : NULL;
	}
	fclose(f);
	return found;
}
