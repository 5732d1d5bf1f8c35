/*
 * nmd.sock: the configuration for daemons and tools. Every change goes
 * through the same rules as a write in the tree. Region references and
 * node pins are held by the connection that took them (holds.c says how
 * they outlive a restart of nmd); a persistent region reference
 * (ocfs2_hb_ctl -S without SEM_UNDO, o2ctl heartbeat start) belongs to
 * nobody and lives until a release from any connection.
 */
#include <sys/queue.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "log.h"
#include "nmd.h"
#include "util.h"

static void
fill_node(Nmd__Node *n, struct nmd *nm, struct nm_item *it)
{
	struct nm_node *nd = it->obj;
	struct in_addr a = { nd->addr };

	(void)nm;
	nmd__node__init(n);
	n->name = it->name;
	n->num = nd->num_set ? nd->num : NM_NODE_UNSET;
	n->ipv4_address = nd->addr_set ? xstrdup(inet_ntoa(a)) : xstrdup("");
	n->ipv4_port = nd->port_set ? nd->port : 0;
	n->local = nd->local;
	n->pins = nd->pins_heartbeat + nd->pins_link;
}

static void
fill_region(Nmd__Region *r, struct nm_item *it)
{
	struct nm_region *rg = it->obj;

	nmd__region__init(r);
	r->name = it->name;
	r->block_bytes = rg->block_bytes;
	r->start_block = rg->start_block;
	r->blocks = rg->blocks;
	r->dev = rg->dev != NULL ? rg->dev : "";
	r->pid = rg->pid;
	r->refs = rg->refs;
}

static void
handle_get_config(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Nmd__Config cfg = NMD__CONFIG__INIT;
	struct nm_item *ci = nm_cluster_item(nm), *g, *it, *local;
	struct nm_cluster *cl = nm_cluster(nm);
	Nmd__Node *nodes = NULL;
	Nmd__Region *regions = NULL;
	size_t i, n;

	cfg.cluster = ci != NULL ? ci->name : "";
	cfg.config_file = (char *)nm->conf_path;
	cfg.last_reload_error = nm->last_reload_error;
	cfg.local_node = NM_NODE_UNSET;
	cfg.fence_method = "";
	cfg.heartbeat_mode = "";
	cfg.stack = "";
	if (cl != NULL) {
		cfg.idle_timeout_ms = cl->idle_timeout_ms;
		cfg.keepalive_delay_ms = cl->keepalive_delay_ms;
		cfg.reconnect_delay_ms = cl->reconnect_delay_ms;
		cfg.fence_method = (char *)cc_fence_method_name(cl->fence_method);
		cfg.dead_threshold = cl->dead_threshold;
		cfg.heartbeat_mode = cl->hb_mode == CC_HB_GLOBAL ? "global" : "local";
		cfg.heartbeat_interval_ms = cl->hb_interval_ms;
		cfg.stack = (char *)cc_stack_name(cl->stack);
		cfg.n_global_regions = cl->nglobal_regions;
		cfg.global_regions = cl->global_regions;
		if ((local = nm_local_node(nm)) != NULL)
			cfg.local_node = ((struct nm_node *)local->obj)->num;

		g = nm_node_group(nm);
		n = 0;
		TAILQ_FOREACH(it, &g->children, sibling)
			n++;
		nodes = xcalloc(n + 1, sizeof(*nodes));
		cfg.nodes = xcalloc(n + 1, sizeof(*cfg.nodes));
		i = 0;
		TAILQ_FOREACH(it, &g->children, sibling) {
			fill_node(&nodes[i], nm, it);
			cfg.nodes[i] = &nodes[i];
			i++;
		}
		cfg.n_nodes = n;

		g = nm_hb_group(nm);
		n = nm_nregions(nm);
		regions = xcalloc(n + 1, sizeof(*regions));
		cfg.regions = xcalloc(n + 1, sizeof(*cfg.regions));
		i = 0;
		TAILQ_FOREACH(it, &g->children, sibling) {
			fill_region(&regions[i], it);
			cfg.regions[i] = &regions[i];
			i++;
		}
		cfg.n_regions = n;
	}
	rep.payload_case = ENVELOPE__PAYLOAD_CONFIG;
	rep.config = &cfg;
	ipc_reply(c, req, &rep);
	for (i = 0; i < cfg.n_nodes; i++)
		free(nodes[i].ipv4_address);
	free(nodes);
	free(cfg.nodes);
	free(regions);
	free(cfg.regions);
}

/* Write one attribute as `echo VALUE > path` would: with a newline. */
static int
write_attr_path(struct nmd *nm, const char *path, const char *value)
{
	const struct nm_attr *a;
	struct nm_item *it;
	const char *attr;
	char *val;
	int rc;

	it = nm_item_by_path(nm, path, &attr);
	if (it == NULL || attr == NULL)
		return ENOENT;
	a = nm_item_attr(it, attr, NULL);
	xasprintf(&val, "%s%s", value,
	    value[0] != '\0' && value[strlen(value) - 1] == '\n' ? "" : "\n");
	rc = nm_attr_write(nm, it, a, val, 1);
	free(val);
	return rc;
}

static void
handle_set_attr(struct ipc_conn *c, const Envelope *req)
{
	int rc = write_attr_path(ipc_conn_arg(c), req->set_attr->path,
	    req->set_attr->value);

	ipc_reply_status(c, req, rc, rc ? "%s: %s" : NULL, req->set_attr->path,
	    strerror(rc));
}

/* Split "a/b/c" into the item "a/b" and the new name "c". */
static int
parent_and_name(struct nmd *nm, const char *path, struct nm_item **parent,
    char *name, size_t len)
{
	const char *slash = strrchr(path, '/');
	char dir[512];

	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir) ||
	    strlen(slash + 1) >= len || slash[1] == '\0')
		return EINVAL;
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	strcpy(name, slash + 1);
	if ((*parent = nm_item_by_path(nm, dir, NULL)) == NULL)
		return ENOENT;
	return 0;
}

static void
handle_mkdir(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	struct nm_item *parent;
	char name[256];
	int rc;

	rc = parent_and_name(nm, req->item->path, &parent, name, sizeof(name));
	if (rc == 0)
		rc = nm_mkdir(nm, parent, name, NULL);
	ipc_reply_status(c, req, rc, rc ? "mkdir %s: %s" : NULL, req->item->path,
	    strerror(rc));
}

static void
handle_rmdir(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	struct nm_item *it = nm_item_by_path(nm, req->item->path, NULL);
	int rc = it != NULL ? nm_rmdir(nm, it) : ENOENT;

	ipc_reply_status(c, req, rc, rc ? "rmdir %s: %s" : NULL, req->item->path,
	    strerror(rc));
}

static void
handle_reload(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Nmd__ReloadResult res = NMD__RELOAD_RESULT__INIT;
	char err[CC_ERR_MAX];

	if (nm_load(nm, 0, &res.applied, &res.n_applied, &res.refused,
	    &res.n_refused, err, sizeof(err)) == -1) {
		ipc_reply_status(c, req, EINVAL, "%s", err);
		return;
	}
	rep.payload_case = ENVELOPE__PAYLOAD_RELOAD;
	rep.reload = &res;
	ipc_reply(c, req, &rep);
	nm_lines_free(res.applied, res.n_applied);
	nm_lines_free(res.refused, res.n_refused);
}

static struct nm_item *
region_item(struct nmd *nm, const char *name)
{
	struct nm_item *g = nm_hb_group(nm);

	return g != NULL ? nm_item_child(g, name) : NULL;
}

static int
region_matches(const struct nm_region *r, const Nmd__RegionAcquire *ra)
{
	return r->block_bytes == ra->block_bytes &&
	    r->start_block == ra->start_block && r->blocks == ra->blocks &&
	    r->dev != NULL && strcmp(r->dev, ra->dev) == 0;
}

/* Create the region as ocfs2_hb_ctl does: mkdir, three attributes, dev. */
static int
region_create(struct nmd *nm, const Nmd__RegionAcquire *ra, char *why, size_t len)
{
	static const char *attrs[] = { "block_bytes", "start_block", "blocks", "dev" };
	char path[256], val[4096];
	struct nm_item *g = nm_hb_group(nm), *it;
	size_t i;
	int rc;

	if (g == NULL) {
		snprintf(why, len, "no cluster is configured");
		return ENOENT;
	}
	if ((rc = nm_mkdir(nm, g, ra->name, &it)) != 0) {
		snprintf(why, len, "mkdir region %s: %s", ra->name, strerror(rc));
		return rc;
	}
	for (i = 0; i < nitems(attrs); i++) {
		switch (i) {
		case 0: snprintf(val, sizeof(val), "%u", ra->block_bytes); break;
		case 1: snprintf(val, sizeof(val), "%llu", (unsigned long long)ra->start_block); break;
		case 2: snprintf(val, sizeof(val), "%u", ra->blocks); break;
		default: snprintf(val, sizeof(val), "%s", ra->dev); break;
		}
		nm_item_path(it, path, sizeof(path) - 16);
		strcat(path, "/");
		strcat(path, attrs[i]);
		if ((rc = write_attr_path(nm, path, val)) != 0) {
			snprintf(why, len, "region %s: %s = %s: %s", ra->name,
			    attrs[i], val, strerror(rc));
			nm_rmdir(nm, it);
			return rc;
		}
	}
	return 0;
}

static void
handle_region_acquire(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	const Nmd__RegionAcquire *ra = req->region_acquire;
	struct nm_item *it;
	struct nm_region *r;
	char why[512];
	int rc;

	if (!cc_valid_region_name(ra->name)) {
		ipc_reply_status(c, req, EINVAL, "region name %s is not a volume "
		    "UUID (32 upper-case hex digits)", ra->name);
		return;
	}
	if ((it = region_item(nm, ra->name)) != NULL && !region_matches(it->obj, ra)) {
		ipc_reply_status(c, req, EBUSY, "region %s exists with other parameters",
		    ra->name);
		return;
	}
	/* The state file has the reference before the client hears of it. */
	nm_state_batch_begin(nm);
	if (it == NULL && (rc = region_create(nm, ra, why, sizeof(why))) != 0) {
		nm_state_batch_end(nm);
		ipc_reply_status(c, req, rc, "%s", why);
		return;
	}
	if (ra->persistent) {
		r = region_item(nm, ra->name)->obj;
		r->refs++;
		r->persistent_refs++;
		nm_state_changed(nm);
	} else {
		nm_hold_take(nm, nm_holder_of_conn(nm, c), NM_HOLD_REGION, ra->name);
	}
	nm_state_batch_end(nm);
	ipc_reply_status(c, req, 0, NULL);
}

/* The connection's own reference goes first (or its process's), else a persistent one. */
static void
handle_region_release(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	const char *name = req->item->path;
	struct nm_item *it;

	if (nm_hold_drop(nm, nm_holder_of_conn(nm, c), NM_HOLD_REGION, name) != 0) {
		if ((it = region_item(nm, name)) == NULL ||
		    ((struct nm_region *)it->obj)->persistent_refs == 0) {
			ipc_reply_status(c, req, ENOENT, "no reference on region %s", name);
			return;
		}
		nm_region_unref(nm, it, 1);
	}
	ipc_reply_status(c, req, 0, NULL);
}

static int
pin_kind(const char *s, enum nm_hold_kind *k)
{
	if (strcmp(s, "heartbeat") == 0)
		*k = NM_HOLD_PIN_HEARTBEAT;
	else if (strcmp(s, "link") == 0)
		*k = NM_HOLD_PIN_LINK;
	else
		return -1;
	return 0;
}

static void
handle_pin(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	struct nm_item *g = nm_node_group(nm);
	enum nm_hold_kind k;

	if (pin_kind(req->pin->kind, &k) == -1) {
		ipc_reply_status(c, req, EINVAL, "pin kind %s is not heartbeat "
		    "or link", req->pin->kind);
		return;
	}
	if (g == NULL || nm_item_child(g, req->pin->node) == NULL) {
		ipc_reply_status(c, req, ENOENT, "no node %s", req->pin->node);
		return;
	}
	nm_hold_take(nm, nm_holder_of_conn(nm, c), k, req->pin->node);
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_unpin(struct ipc_conn *c, const Envelope *req)
{
	struct nmd *nm = ipc_conn_arg(c);
	enum nm_hold_kind k;

	if (pin_kind(req->pin->kind, &k) == -1 ||
	    nm_hold_drop(nm, nm_holder_of_conn(nm, c), k, req->pin->node) != 0) {
		ipc_reply_status(c, req, ENOENT, "no %s pin on node %s",
		    req->pin->kind, req->pin->node);
		return;
	}
	ipc_reply_status(c, req, 0, NULL);
}

static void
client_closed(struct ipc_conn *c)
{
	nm_holder_conn_closed(ipc_conn_arg(c), c);
}

static const struct ipc_handler nmd_handlers[] = {
	{ MSG_TYPE__MSG_NMD_GET_CONFIG, ENVELOPE__PAYLOAD__NOT_SET, handle_get_config },
	{ MSG_TYPE__MSG_NMD_SET_ATTR, ENVELOPE__PAYLOAD_SET_ATTR, handle_set_attr },
	{ MSG_TYPE__MSG_NMD_MKDIR, ENVELOPE__PAYLOAD_ITEM, handle_mkdir },
	{ MSG_TYPE__MSG_NMD_RMDIR, ENVELOPE__PAYLOAD_ITEM, handle_rmdir },
	{ MSG_TYPE__MSG_NMD_RELOAD, ENVELOPE__PAYLOAD__NOT_SET, handle_reload },
	{ MSG_TYPE__MSG_NMD_REGION_ACQUIRE, ENVELOPE__PAYLOAD_REGION_ACQUIRE, handle_region_acquire },
	{ MSG_TYPE__MSG_NMD_REGION_RELEASE, ENVELOPE__PAYLOAD_ITEM, handle_region_release },
	{ MSG_TYPE__MSG_NMD_PIN, ENVELOPE__PAYLOAD_PIN, handle_pin },
	{ MSG_TYPE__MSG_NMD_UNPIN, ENVELOPE__PAYLOAD_PIN, handle_unpin },
};

void
nm_api_start(struct nmd *nm)
{
	char *path;

	xasprintf(&path, "%s/nmd.sock", nm->rundir);
	nm->ipc = ipc_server_listen(nm->base, path, "nmd", nmd_handlers,
	    nitems(nmd_handlers), nm);
	if (nm->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(nm->ipc, client_closed);
	free(path);
}

void
nm_api_publish_change(struct nmd *nm, int op, const struct nm_item *it,
    const struct nm_attr *a, const char *value)
{
	Envelope ev = ENVELOPE__INIT;
	Nmd__ConfigChange ch = NMD__CONFIG_CHANGE__INIT;
	char path[512] = "";

	if (it != NULL)
		nm_item_path(it, path, sizeof(path) - 64);
	if (a != NULL) {
		strcat(path, "/");
		strcat(path, a->name);
	}
	ch.op = op;
	ch.path = path;
	ch.value = (char *)(value != NULL ? value : "");
	log_info("config: %s%s%s%s%s", op == NMD__CHANGE_OP__CHANGE_MKDIR ? "mkdir" :
	    op == NMD__CHANGE_OP__CHANGE_RMDIR ? "rmdir" :
	    op == NMD__CHANGE_OP__CHANGE_RELOADED ? "reloaded" : "set",
	    path[0] ? " " : "", path,
	    a != NULL ? " = " : "", a != NULL ? ch.value : "");
	if (nm->ipc == NULL)
		return;
	ev.type = MSG_TYPE__MSG_NMD_CONFIG_CHANGED;
	ev.payload_case = ENVELOPE__PAYLOAD_CHANGE;
	ev.change = &ch;
	ipc_publish(nm->ipc, 0, &ev);
}
