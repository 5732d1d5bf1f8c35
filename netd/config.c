/*
 * The configuration, as nmd holds it: nodes, addresses, the cluster's
 * network timeouts. netd fetches it at start, follows nmd's change
 * events (nodes added and removed), and pins the node item of every
 * node it has a link to, so that nmd refuses to change timeouts or
 * remove a node while a link depends on them, as the kernel does.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "netd.h"
#include "util.h"

#define NMD_WAIT_MS	10000	/* nmd starts first; give it this long */
#define NMD_RETRY_MS	1000

static void	nmd_connect(struct netd *);

static char *
nmd_path(struct netd *nd)
{
	char *path;

	xasprintf(&path, "%s/nmd.sock", nd->rundir);
	return path;
}

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

static int
fetch_sync(struct netd *nd, char *why, size_t len)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	char *path = nmd_path(nd);
	uint64_t deadline = now_ms() + NMD_WAIT_MS;
	int fd, rc;

	while ((fd = ipc_sync_connect(path)) == -1) {
		if (now_ms() >= deadline) {
			snprintf(why, len, "nmd does not answer on %s: %s", path,
			    strerror(errno));
			free(path);
			return -1;
		}
		usleep(100 * 1000);
	}
	free(path);
	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if (ipc_sync_call(fd, &req, &rep, NMD_WAIT_MS) == -1) {
		snprintf(why, len, "nmd: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_CONFIG) {
		snprintf(why, len, "nmd sent no configuration: %s", rep->error);
		envelope__free_unpacked(rep, NULL);
		return -1;
	}
	rc = apply_config(nd, rep->config, 1, why, len);
	envelope__free_unpacked(rep, NULL);
	return rc;
}

static void
on_config(const Envelope *rep, void *arg)
{
	struct netd *nd = arg;
	char why[256];

	if (rep == NULL)
		return;
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_CONFIG) {
		log_warnx("nmd: cannot fetch the configuration: %s", rep->error);
		return;
	}
	if (apply_config(nd, rep->config, 0, why, sizeof(why)) == -1)
		log_warnx("ignoring nmd's new configuration: %s", why);
}

static void
refetch(struct netd *nd)
{
	Envelope req = ENVELOPE__INIT;

	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if (nd->nmd != NULL && ipc_request(nd->nmd, &req, on_config, nd) == -1)
		log_warnx("nmd: cannot ask for the configuration");
}

static void
on_nmd_event(struct ipc_conn *c, const Envelope *ev)
{
	(void)ev;
	refetch(ipc_conn_arg(c));
}

static void
on_pin(const Envelope *rep, void *arg)
{
	struct netd_node *n = arg;

	/* rep NULL: nmd went away; the pin went with it and comes back
	 * with the reconnection. */
	if (rep != NULL && rep->status != 0)
		log_warnx("nmd refused a link pin on node %s: %s", n->name,
		    rep->error);
}

static void
send_pin(struct netd *nd, struct netd_node *n, int pin)
{
	Envelope req = ENVELOPE__INIT;
	Nmd__Pin p = NMD__PIN__INIT;

	if (nd->nmd == NULL)
		return;
	p.node = n->name;
	p.kind = "link";
	req.type = pin ? MSG_TYPE__MSG_NMD_PIN : MSG_TYPE__MSG_NMD_UNPIN;
	req.payload_case = ENVELOPE__PAYLOAD_PIN;
	req.pin = &p;
	ipc_request(nd->nmd, &req, on_pin, n);
}

void
config_pin(struct netd *nd, struct netd_node *n, int pin)
{
	if (n->pinned == pin)
		return;
	n->pinned = pin;
	send_pin(nd, n, pin);
}

static void
nmd_retry(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	nmd_connect(arg);
}

static void
on_nmd_close(struct ipc_conn *c)
{
	struct netd *nd = ipc_conn_arg(c);
	struct timeval tv = { NMD_RETRY_MS / 1000, 0 };

	log_warnx("lost nmd; reconnecting");
	nd->nmd = NULL;
	evtimer_add(nd->nmd_retry, &tv);
}

static void
on_subscribed(const Envelope *rep, void *arg)
{
	(void)rep;
	(void)arg;
}

static void
nmd_connect(struct netd *nd)
{
	Envelope req = ENVELOPE__INIT;
	Subscribe sub = SUBSCRIBE__INIT;
	struct timeval tv = { NMD_RETRY_MS / 1000, 0 };
	char *path = nmd_path(nd);
	unsigned i;

	nd->nmd = ipc_connect(nd->base, path, on_nmd_event, on_nmd_close, nd);
	free(path);
	if (nd->nmd == NULL) {
		evtimer_add(nd->nmd_retry, &tv);
		return;
	}
	req.type = MSG_TYPE__MSG_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_SUBSCRIBE;
	req.subscribe = &sub;
	ipc_request(nd->nmd, &req, on_subscribed, nd);
	refetch(nd);
	/* Pins belong to the connection: a new one must take them again. */
	for (i = 0; i < CC_MAX_NODES; i++)
		if (nd->nodes[i] != NULL && nd->nodes[i]->pinned)
			send_pin(nd, nd->nodes[i], 1);
}

int
config_start(struct netd *nd)
{
	char why[512];

	if (fetch_sync(nd, why, sizeof(why)) == -1) {
		log_warnx("%s", why);
		return -1;
	}
	nd->nmd_retry = evtimer_new(nd->base, nmd_retry, nd);
	if (nd->nmd_retry == NULL)
		fatalx("out of memory for a timer");
	nmd_connect(nd);
	return 0;
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

static void
print_warning(const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "warning: %s\n", msg);
}

/* -n: what netd would run with, from the files, without any daemon. */
int
config_check_file(struct netd *nd)
{
	struct cluster_conf *cc;
	const struct cc_node *self;
	char err[CC_ERR_MAX];

	if ((cc = cc_load(nd->conf_path, nd->tunables_path, 0, NULL,
	    nd->node_name != NULL ? nd->node_name : host_node_name(), &self, err,
	    sizeof(err), print_warning, NULL)) == NULL) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	printf("%s: configuration OK (cluster %s, %zu nodes, local node %s "
	    "number %u; idle %u ms, keepalive %u ms, reconnect %u ms%s)\n",
	    nd->conf_path, cc->name, cc->nnodes, self->name, self->num,
	    cc->tun.idle_timeout_ms, cc->tun.keepalive_delay_ms,
	    cc->tun.reconnect_delay_ms, nd->auth ? "; cluster key loaded" : "");
	free(cc);
	return 0;
}
