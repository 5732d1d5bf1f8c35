/*
 * Loading cluster.conf into the tree, at start and on reload, as
 * `o2cb register-cluster` does: parse everything first, then apply only
 * the difference through the tree's own rules. A file that does not
 * parse changes nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "log.h"
#include "nmd.h"
#include "notify.h"
#include "util.h"

struct lines {
	char	**v;
	size_t	  n;
};

static void __attribute__((__format__(printf, 2, 3)))
line_add(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatal("vasprintf");
	va_end(ap);
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = s;
}

void
nm_lines_free(char **lines, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

static void
warn_line(const char *msg, void *arg)
{
	(void)arg;
	log_warnx("%s", msg);
}

static int
node_matches(const struct nm_node *n, const struct cc_node *cn)
{
	return n->num_set && n->num == cn->num && n->addr_set &&
	    n->addr == cn->addr && n->port_set && n->port == cn->port;
}

/* mkdir and the attributes in o2cb's order; rmdir again on failure. */
static void
node_add(struct nmd *nm, const struct cc_node *cn, struct lines *ok, struct lines *bad)
{
	struct in_addr a = { cn->addr };
	struct nm_item *it;
	int rc;

	if ((rc = nm_mkdir(nm, nm_node_group(nm), cn->name, &it)) != 0) {
		line_add(bad, "node %s: mkdir: %s", cn->name, strerror(rc));
		return;
	}
	if ((rc = nm_attr_setf(nm, it, "ipv4_port", "%u", cn->port)) != 0 ||
	    (rc = nm_attr_setf(nm, it, "ipv4_address", "%s", inet_ntoa(a))) != 0 ||
	    (rc = nm_attr_setf(nm, it, "num", "%u", cn->num)) != 0) {
		line_add(bad, "node %s: %s", cn->name, strerror(rc));
		nm_rmdir(nm, it);
		return;
	}
	line_add(ok, "node %s added (number %u, %s:%u)", cn->name, cn->num,
	    inet_ntoa(a), cn->port);
}

static void
apply_nodes(struct nmd *nm, const struct cluster_conf *cc, const struct cc_node *self,
    struct lines *ok, struct lines *bad)
{
	struct nm_item *g = nm_node_group(nm), *it, *next;
	const struct cc_node *cn;
	struct nm_node *n;
	char name[CC_NODE_NAME_MAX + 1];
	size_t i;
	int rc;

	/* Gone or changed nodes first, so that numbers and addresses free up. */
	for (it = TAILQ_FIRST(&g->children); it != NULL; it = next) {
		next = TAILQ_NEXT(it, sibling);
		n = it->obj;
		cn = cc_node_by_name(cc, it->name);
		if (cn != NULL && node_matches(n, cn))
			continue;
		if (n->local) {
			line_add(bad, "node %s: the local node cannot be %s while "
			    "the stack runs", it->name, cn ? "changed" : "removed");
			continue;
		}
		/* nm_rmdir frees the item. */
		snprintf(name, sizeof(name), "%s", it->name);
		if ((rc = nm_rmdir(nm, it)) != 0) {
			line_add(bad, "node %s: not %s: %s", name,
			    cn ? "changed" : "removed",
			    rc == EBUSY ? "it is alive (heartbeat or link)" : strerror(rc));
			continue;
		}
		if (cn == NULL)
			line_add(ok, "node %s removed", name);
	}
	for (i = 0; i < cc->nnodes; i++) {
		cn = &cc->nodes[i];
		if (nm_item_child(g, cn->name) == NULL)
			node_add(nm, cn, ok, bad);
	}
	it = nm_item_child(g, self->name);
	if (it != NULL && !((struct nm_node *)it->obj)->local) {
		if ((rc = nm_attr_setf(nm, it, "local", "1")) != 0)
			line_add(bad, "node %s: local: %s", self->name, strerror(rc));
		else
			line_add(ok, "node %s is the local node", self->name);
	}
}

static void
apply_timeout(struct nmd *nm, struct nm_item *it, const char *name, unsigned cur,
    unsigned want, struct lines *ok, struct lines *bad)
{
	int rc;

	if (cur == want)
		return;
	if ((rc = nm_attr_setf(nm, it, name, "%u", want)) != 0)
		line_add(bad, "%s %u -> %u refused: %s", name, cur, want,
		    rc == EINVAL && nm_linked_nodes(nm) > 0 ?
		    "peers are connected" : strerror(rc));
	else
		line_add(ok, "%s %u -> %u", name, cur, want);
}

static void
apply_cluster(struct nmd *nm, const struct cluster_conf *cc, struct lines *ok,
    struct lines *bad)
{
	struct nm_item *ci = nm_cluster_item(nm);
	struct nm_cluster *c = ci->obj;
	const struct cc_tunables *t = &cc->tun;
	int rc;

	/* Keep keepalive < idle at every step. */
	if (t->keepalive_delay_ms < c->idle_timeout_ms) {
		apply_timeout(nm, ci, "keepalive_delay_ms", c->keepalive_delay_ms,
		    t->keepalive_delay_ms, ok, bad);
		apply_timeout(nm, ci, "idle_timeout_ms", c->idle_timeout_ms,
		    t->idle_timeout_ms, ok, bad);
	} else {
		apply_timeout(nm, ci, "idle_timeout_ms", c->idle_timeout_ms,
		    t->idle_timeout_ms, ok, bad);
		apply_timeout(nm, ci, "keepalive_delay_ms", c->keepalive_delay_ms,
		    t->keepalive_delay_ms, ok, bad);
	}
	apply_timeout(nm, ci, "reconnect_delay_ms", c->reconnect_delay_ms,
	    t->reconnect_delay_ms, ok, bad);
	if (c->fence_method != t->fence_method) {
		if ((rc = nm_attr_setf(nm, ci, "fence_method", "%s",
		    cc_fence_method_name(t->fence_method))) != 0)
			line_add(bad, "fence_method: %s", strerror(rc));
		else
			line_add(ok, "fence_method %s", cc_fence_method_name(t->fence_method));
	}
}

/*
 * The stack decides which daemons run (hbd or pcmkd) and which volumes
 * mount: taken when the cluster is made, changed only by a restart.
 */
static void
apply_stack(struct nmd *nm, const struct cluster_conf *cc, int created, struct lines *ok,
    struct lines *bad)
{
	struct nm_cluster *c = nm_cluster(nm);

	if (created) {
		c->stack = cc->stack;
		line_add(ok, "stack %s", cc_stack_name(cc->stack));
	} else if (c->stack != cc->stack)
		line_add(bad, "stack %s -> %s refused: the stack changes only when the node's "
		    "daemons restart", cc_stack_name(c->stack), cc_stack_name(cc->stack));
}

/* Heartbeat settings can change only while no region runs. */
static void
apply_heartbeat(struct nmd *nm, const struct cluster_conf *cc, struct lines *ok,
    struct lines *bad)
{
	struct nm_item *hb = nm_hb_group(nm);
	struct nm_cluster *c = nm_cluster(nm);
	size_t i, nreg = nm_nregions(nm);
	const char *mode = cc->hb_mode == CC_HB_GLOBAL ? "global" : "local";
	int rc;

	struct { const char *name; unsigned cur, want; } v[] = {
		{ "dead_threshold", c->dead_threshold, cc->tun.dead_threshold },
		{ "interval_ms", c->hb_interval_ms, cc->hb_interval_ms },
		{ "mode", c->hb_mode, cc->hb_mode },
	};

	for (i = 0; i < nitems(v); i++) {
		if (v[i].cur == v[i].want)
			continue;
		if (nreg > 0) {
			line_add(bad, "heartbeat %s not changed: %zu heartbeat "
			    "regions are active", v[i].name, nreg);
			continue;
		}
		if (i == 2)
			rc = nm_attr_setf(nm, hb, v[i].name, "%s", mode);
		else
			rc = nm_attr_setf(nm, hb, v[i].name, "%u", v[i].want);
		if (rc != 0)
			line_add(bad, "heartbeat %s: %s", v[i].name, strerror(rc));
		else if (i == 2)
			line_add(ok, "heartbeat mode %s", mode);
		else
			line_add(ok, "heartbeat %s %u -> %u", v[i].name, v[i].cur, v[i].want);
	}
	nm_lines_free(c->global_regions, c->nglobal_regions);
	c->global_regions = xcalloc(cc->nregions + 1, sizeof(char *));
	for (i = 0; i < cc->nregions; i++)
		c->global_regions[i] = xstrdup(cc->regions[i].uuid);
	c->nglobal_regions = cc->nregions;
}

/* Parse the tunables and cluster.conf; NULL with err set when either is bad. */
struct cluster_conf *
nm_parse_config(struct nmd *nm, const struct cc_node **self, char *err, size_t errlen)
{
	struct nm_item *ci = nm->subsys != NULL ? nm_cluster_item(nm) : NULL;

	/* A running cluster keeps its name; O2CB_BOOTCLUSTER picks the first. */
	return cc_load(nm->conf_path, nm->tunables_path, 0,
	    ci != NULL ? ci->name : NULL, nm->node_name, self, err, errlen,
	    warn_line, NULL);
}

int
nm_load(struct nmd *nm, int initial, char ***applied, size_t *napplied,
    char ***refused, size_t *nrefused, char *err, size_t errlen)
{
	struct lines ok = { 0 }, bad = { 0 };
	const struct cc_node *self;
	struct cluster_conf *cc;
	struct nm_item *ci;
	uint64_t fingerprint;
	int created = 0, rc;

	if (!initial)
		notify_reloading();
	/* Taken before parsing: a file changed meanwhile is applied again at restart. */
	fingerprint = nm_config_files_fingerprint(nm);
	if ((cc = nm_parse_config(nm, &self, err, errlen)) == NULL) {
		snprintf(nm->last_reload_error, sizeof(nm->last_reload_error), "%s", err);
		log_err("%s: configuration not loaded: %s", initial ? "start" : "reload", err);
		notify_status("reload failed, running on the previous configuration: %s", err);
		if (!initial)
			notify_ready();
		return -1;
	}
	nm_state_batch_begin(nm);
	if ((ci = nm_cluster_item(nm)) == NULL) {
		if ((rc = nm_mkdir(nm, nm->subsys, cc->name, &ci)) != 0)
			line_add(&bad, "cluster %s: %s", cc->name, strerror(rc));
		else {
			created = 1;
			line_add(&ok, "cluster %s created", cc->name);
		}
	}
	if (ci != NULL) {
		apply_stack(nm, cc, created, &ok, &bad);
		apply_cluster(nm, cc, &ok, &bad);
		apply_heartbeat(nm, cc, &ok, &bad);
		apply_nodes(nm, cc, self, &ok, &bad);
	}
	free(cc);
	nm->config_fingerprint = fingerprint;
	nm_state_changed(nm);
	nm_state_batch_end(nm);

	nm->last_reload_error[0] = '\0';
	nm_api_publish_change(nm, NMD__CHANGE_OP__CHANGE_RELOADED, NULL, NULL, NULL);
	for (size_t i = 0; i < bad.n; i++)
		log_warnx("%s: %s", initial ? "start" : "reload", bad.v[i]);
	notify_status("%s %s: %zu changes applied, %zu refused", nm->conf_path,
	    initial ? "loaded" : "reloaded", ok.n, bad.n);
	if (!initial)
		notify_ready();
	*applied = ok.v;
	*napplied = ok.n;
	*refused = bad.v;
	*nrefused = bad.n;
	return 0;
}
