/*
 * The configuration tree and its rules, as the kernel's o2nm and o2hb
 * configfs items enforce them (doc/cluster-stack.md, Configfs tree). Both
 * the FUSE tree and nmd.sock go through nm_mkdir, nm_rmdir and
 * nm_attr_write, so an admin's echo and a daemon's request are judged
 * alike.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipc.h"
#include "log.h"
#include "nmd.h"
#include "util.h"

/* A store that was accepted but changed nothing, as the kernel ignores some. */
#define NM_IGNORED	(-1)

#define ITEM_NODE(it)	((struct nm_node *)(it)->obj)
#define ITEM_REGION(it)	((struct nm_region *)(it)->obj)

static const struct nm_item_type root_type, subsys_type, cluster_type,
    node_group_type, node_type, hb_group_type, region_type;

/*
 * configfs numbers: base auto-detected, one optional trailing newline.
 * EINVAL when it is no number, ERANGE past 64 bits.
 */
static int
attr_ulong(const char *val, unsigned long long *out)
{
	char *end;

	if (*val < '0' || *val > '9')
		return EINVAL;
	errno = 0;
	*out = strtoull(val, &end, 0);
	if (errno == ERANGE)
		return ERANGE;
	if (*end == '\n')
		end++;
	return *end == '\0' ? 0 : EINVAL;
}

/* The value without its trailing newline, for string attributes. */
static size_t
attr_len(const char *val)
{
	size_t n = strlen(val);

	return n > 0 && val[n - 1] == '\n' ? n - 1 : n;
}

static struct nm_item *
item_new(struct nmd *nm, struct nm_item *parent, const struct nm_item_type *type,
    const char *name, void *obj)
{
	struct nm_item *it = xcalloc(1, sizeof(*it));

	TAILQ_INIT(&it->children);
	it->type = type;
	it->parent = parent;
	it->obj = obj;
	snprintf(it->name, sizeof(it->name), "%s", name);
	/* Attributes take the inode numbers just after their directory's. */
	it->ino = nm->next_ino;
	nm->next_ino += 32;
	if (parent != NULL)
		TAILQ_INSERT_TAIL(&parent->children, it, sibling);
	TAILQ_INSERT_TAIL(&nm->items, it, all);
	return it;
}

static void
item_free(struct nmd *nm, struct nm_item *it)
{
	struct nm_item *c;

	while ((c = TAILQ_FIRST(&it->children)) != NULL)
		item_free(nm, c);
	if (it->parent != NULL)
		TAILQ_REMOVE(&it->parent->children, it, sibling);
	TAILQ_REMOVE(&nm->items, it, all);
	if (it->type->release != NULL)
		it->type->release(it);
	free(it);
}

void
nm_tree_init(struct nmd *nm)
{
	TAILQ_INIT(&nm->items);
	nm->next_ino = 32;
	nm->root = item_new(nm, NULL, &root_type, "", NULL);
	nm->subsys = item_new(nm, nm->root, &subsys_type, "cluster", NULL);
	nm->subsys->default_group = 1;
}

/* At exit: everything, so that leak checkers see only real leaks. */
void
nm_tree_free(struct nmd *nm)
{
	item_free(nm, nm->root);
	nm->root = nm->subsys = NULL;
}

struct nm_item *
nm_item_by_ino(struct nmd *nm, uint64_t ino)
{
	struct nm_item *it;

	TAILQ_FOREACH(it, &nm->items, all)
		if (it->ino == ino)
			return it;
	return NULL;
}

struct nm_item *
nm_item_child(struct nm_item *dir, const char *name)
{
	struct nm_item *c;

	TAILQ_FOREACH(c, &dir->children, sibling)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

const struct nm_attr *
nm_item_attr(const struct nm_item *it, const char *name, size_t *idx)
{
	size_t i;

	for (i = 0; i < it->type->nattrs; i++) {
		if (strcmp(it->type->attrs[i].name, name) == 0) {
			if (idx != NULL)
				*idx = i;
			return &it->type->attrs[i];
		}
	}
	return NULL;
}

/*
 * Resolve "cluster/alpha/node/n1" to its item, or ".../n1/num" to the
 * item with *attr pointing at "num" (attr may be NULL when only items
 * are wanted). Empty components and a leading '/' are tolerated.
 */
struct nm_item *
nm_item_by_path(struct nmd *nm, const char *path, const char **attr)
{
	struct nm_item *it = nm->root, *c;
	char buf[512], *p, *next;

	if (attr != NULL)
		*attr = NULL;
	if (strlen(path) >= sizeof(buf))
		return NULL;
	strcpy(buf, path);
	for (p = buf; p != NULL; p = next) {
		next = strchr(p, '/');
		if (next != NULL)
			*next++ = '\0';
		if (*p == '\0')
			continue;
		if ((c = nm_item_child(it, p)) != NULL) {
			it = c;
			continue;
		}
		/* The last component may name an attribute. */
		if (attr == NULL || next != NULL || nm_item_attr(it, p, NULL) == NULL)
			return NULL;
		*attr = path + (p - buf);
	}
	return it;
}

int
nm_item_path(const struct nm_item *it, char *buf, size_t len)
{
	char tmp[512];

	if (it->parent == NULL) {
		buf[0] = '\0';
		return 0;
	}
	nm_item_path(it->parent, tmp, sizeof(tmp));
	return snprintf(buf, len, "%s%s%s", tmp, tmp[0] ? "/" : "", it->name) >= (int)len ? -1 : 0;
}

struct nm_item *
nm_cluster_item(struct nmd *nm)
{
	return TAILQ_FIRST(&nm->subsys->children);
}

struct nm_cluster *
nm_cluster(struct nmd *nm)
{
	struct nm_item *c = nm_cluster_item(nm);

	return c != NULL ? c->obj : NULL;
}

struct nm_item *
nm_node_group(struct nmd *nm)
{
	struct nm_item *c = nm_cluster_item(nm);

	return c != NULL ? nm_item_child(c, "node") : NULL;
}

struct nm_item *
nm_hb_group(struct nmd *nm)
{
	struct nm_item *c = nm_cluster_item(nm);

	return c != NULL ? nm_item_child(c, "heartbeat") : NULL;
}

int
nm_is_node(const struct nm_item *it)
{
	return it->type == &node_type;
}

int
nm_is_region(const struct nm_item *it)
{
	return it->type == &region_type;
}

struct nm_item *
nm_local_node(struct nmd *nm)
{
	struct nm_item *g = nm_node_group(nm), *n;

	if (g == NULL)
		return NULL;
	TAILQ_FOREACH(n, &g->children, sibling)
		if (ITEM_NODE(n)->local)
			return n;
	return NULL;
}

/* Nodes we have a network link to: the kernel's connected-peer count. */
size_t
nm_linked_nodes(struct nmd *nm)
{
	struct nm_item *g = nm_node_group(nm), *n;
	size_t count = 0;

	if (g == NULL)
		return 0;
	TAILQ_FOREACH(n, &g->children, sibling)
		if (ITEM_NODE(n)->pins_link > 0)
			count++;
	return count;
}

size_t
nm_nregions(struct nmd *nm)
{
	struct nm_item *g = nm_hb_group(nm), *r;
	size_t count = 0;

	if (g == NULL)
		return 0;
	TAILQ_FOREACH(r, &g->children, sibling)
		count++;
	return count;
}

int
nm_mkdir(struct nmd *nm, struct nm_item *parent, const char *name, struct nm_item **out)
{
	struct nm_item *it;
	int rc;

	if (parent->type->make_item == NULL)
		return EPERM;
	if (nm_item_child(parent, name) != NULL ||
	    nm_item_attr(parent, name, NULL) != NULL)
		return EEXIST;
	if ((rc = parent->type->make_item(nm, parent, name, &it)) != 0)
		return rc;
	nm_api_publish_change(nm, NMD__CHANGE_OP__CHANGE_MKDIR, it, NULL, NULL);
	nm_state_changed(nm);
	if (out != NULL)
		*out = it;
	return 0;
}

int
nm_rmdir(struct nmd *nm, struct nm_item *it)
{
	struct nm_item *c;
	int rc;

	if (it->default_group || it->parent == NULL)
		return EPERM;
	/* configfs: a directory holding items of its own is not empty. */
	TAILQ_FOREACH(c, &it->children, sibling)
		if (!TAILQ_EMPTY(&c->children))
			return ENOTEMPTY;
	if (it->type->drop_item != NULL && (rc = it->type->drop_item(nm, it)) != 0)
		return rc;
	nm_api_publish_change(nm, NMD__CHANGE_OP__CHANGE_RMDIR, it, NULL, NULL);
	item_free(nm, it);
	nm_state_changed(nm);
	return 0;
}

int
nm_attr_write(struct nmd *nm, struct nm_item *it, const struct nm_attr *a,
    const char *val, int from_api)
{
	char shown[256];
	int rc;

	if (!(a->writable || (from_api && a->api_writable)) || a->store == NULL)
		return EACCES;
	rc = a->store(nm, it, val);
	if (rc == NM_IGNORED) {
		log_info("%s/%s: write of \"%.*s\" ignored while heartbeat regions exist",
		    it->name, a->name, (int)attr_len(val), val);
		return 0;
	}
	if (rc != 0)
		return rc;
	nm_attr_read(nm, it, a, shown, sizeof(shown));
	shown[attr_len(shown)] = '\0';
	nm_api_publish_change(nm, NMD__CHANGE_OP__CHANGE_ATTR, it, a, shown);
	nm_state_changed(nm);
	return 0;
}

/* Write an attribute from nmd itself (cluster.conf, the state file), as echo would. */
int
nm_attr_setf(struct nmd *nm, struct nm_item *it, const char *name, const char *fmt, ...)
{
	const struct nm_attr *a = nm_item_attr(it, name, NULL);
	char val[4096];
	va_list ap;

	if (a == NULL)
		return ENOENT;
	va_start(ap, fmt);
	vsnprintf(val, sizeof(val) - 1, fmt, ap);
	va_end(ap);
	strcat(val, "\n");
	return nm_attr_write(nm, it, a, val, 1);
}

void
nm_attr_read(struct nmd *nm, struct nm_item *it, const struct nm_attr *a,
    char *buf, size_t len)
{
	buf[0] = '\0';
	a->show(nm, it, buf, len);
}

/* --- cluster --- */

static void
show_idle(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ((struct nm_cluster *)it->obj)->idle_timeout_ms);
}

static void
show_keepalive(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ((struct nm_cluster *)it->obj)->keepalive_delay_ms);
}

static void
show_reconnect(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ((struct nm_cluster *)it->obj)->reconnect_delay_ms);
}

static void
show_fence(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%s\n",
	    cc_fence_method_name(((struct nm_cluster *)it->obj)->fence_method));
}

/* Timeouts: 0 is EINVAL, 0xFFFFFFFF and up ERANGE. */
static int
timeout_value(const char *val, unsigned *out)
{
	unsigned long long v;
	int rc;

	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v == 0)
		return EINVAL;
	if (v >= 0xFFFFFFFFULL)
		return ERANGE;
	*out = (unsigned)v;
	return 0;
}

/* Peers compared idle timeout and keepalive at handshake: no change now. */
static int
store_idle(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_cluster *c = it->obj;
	unsigned v;
	int rc;

	if ((rc = timeout_value(val, &v)) != 0)
		return rc;
	if (v != c->idle_timeout_ms && nm_linked_nodes(nm) > 0) {
		log_warnx("idle_timeout_ms: cannot change while %zu nodes are "
		    "connected", nm_linked_nodes(nm));
		return EINVAL;
	}
	if (v <= c->keepalive_delay_ms) {
		log_warnx("idle_timeout_ms %u must be larger than "
		    "keepalive_delay_ms %u", v, c->keepalive_delay_ms);
		return EINVAL;
	}
	c->idle_timeout_ms = v;
	return 0;
}

static int
store_keepalive(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_cluster *c = it->obj;
	unsigned v;
	int rc;

	if ((rc = timeout_value(val, &v)) != 0)
		return rc;
	if (v != c->keepalive_delay_ms && nm_linked_nodes(nm) > 0) {
		log_warnx("keepalive_delay_ms: cannot change while %zu nodes "
		    "are connected", nm_linked_nodes(nm));
		return EINVAL;
	}
	if (v >= c->idle_timeout_ms) {
		log_warnx("keepalive_delay_ms %u must be smaller than "
		    "idle_timeout_ms %u", v, c->idle_timeout_ms);
		return EINVAL;
	}
	c->keepalive_delay_ms = v;
	return 0;
}

static int
store_reconnect(struct nmd *nm, struct nm_item *it, const char *val)
{
	(void)nm;
	return timeout_value(val, &((struct nm_cluster *)it->obj)->reconnect_delay_ms);
}

/* As the kernel: the value must end with a newline and name a method. */
static int
store_fence(struct nmd *nm, struct nm_item *it, const char *val)
{
	size_t n = strlen(val);
	char name[16];

	(void)nm;
	if (n < 2 || val[n - 1] != '\n' || n - 1 >= sizeof(name))
		return EINVAL;
	memcpy(name, val, n - 1);
	name[n - 1] = '\0';
	if (cc_fence_method_parse(name, &((struct nm_cluster *)it->obj)->fence_method) == -1)
		return EINVAL;
	return 0;
}

static const struct nm_attr cluster_attrs[] = {
	{ "idle_timeout_ms", 1, 1, show_idle, store_idle },
	{ "keepalive_delay_ms", 1, 1, show_keepalive, store_keepalive },
	{ "reconnect_delay_ms", 1, 1, show_reconnect, store_reconnect },
	{ "fence_method", 1, 1, show_fence, store_fence },
};

static void
cluster_release(struct nm_item *it)
{
	struct nm_cluster *c = it->obj;

	nm_lines_free(c->global_regions, c->nglobal_regions);
	free(c);
}

/* mkdir cluster/<name>: only one cluster, made with the kernel's defaults. */
static int
cluster_make(struct nmd *nm, struct nm_item *parent, const char *name,
    struct nm_item **out)
{
	struct nm_cluster *c;
	struct nm_item *it, *g;
	struct cc_tunables t;

	if (!TAILQ_EMPTY(&parent->children))
		return ENOSPC;
	if (strlen(name) > CC_CLUSTER_NAME_MAX)
		return ENAMETOOLONG;
	if (!cc_valid_cluster_name(name))
		return EINVAL;
	cc_tunables_default(&t);
	c = xcalloc(1, sizeof(*c));
	c->idle_timeout_ms = t.idle_timeout_ms;
	c->keepalive_delay_ms = t.keepalive_delay_ms;
	c->reconnect_delay_ms = t.reconnect_delay_ms;
	c->fence_method = t.fence_method;
	c->dead_threshold = t.dead_threshold;
	c->hb_mode = CC_HB_LOCAL;
	c->hb_interval_ms = 2000;
	it = item_new(nm, parent, &cluster_type, name, c);
	g = item_new(nm, it, &node_group_type, "node", NULL);
	g->default_group = 1;
	g = item_new(nm, it, &hb_group_type, "heartbeat", c);
	g->default_group = 1;
	*out = it;
	return 0;
}

/* --- nodes --- */

static void
show_num(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	if (ITEM_NODE(it)->num_set)
		snprintf(b, l, "%u\n", ITEM_NODE(it)->num);
}

static void
show_port(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	if (ITEM_NODE(it)->port_set)
		snprintf(b, l, "%u\n", ITEM_NODE(it)->port);
}

static void
show_address(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	struct in_addr a = { ITEM_NODE(it)->addr };

	(void)nm;
	if (ITEM_NODE(it)->addr_set)
		snprintf(b, l, "%s\n", inet_ntoa(a));
}

static void
show_local(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%d\n", ITEM_NODE(it)->local);
}

static int
store_port(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_node *n = ITEM_NODE(it);
	unsigned long long v;
	int rc;

	(void)nm;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v == 0)
		return EINVAL;
	if (v >= 65535)
		return ERANGE;
	if (n->port_set)
		return EBUSY;
	n->port = (uint16_t)v;
	n->port_set = 1;
	return 0;
}

static int
store_address(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_node *n = ITEM_NODE(it);
	struct nm_item *o;
	unsigned oct[4];
	uint32_t addr;
	char tail;
	int i, k;

	(void)nm;
	k = sscanf(val, "%u.%u.%u.%u%c", &oct[0], &oct[1], &oct[2], &oct[3], &tail);
	if (k < 4 || (k == 5 && tail != '\n'))
		return EINVAL;
	for (i = 0; i < 4; i++)
		if (oct[i] > 255)
			return ERANGE;
	if (n->addr_set)
		return EBUSY;
	addr = htonl(oct[0] << 24 | oct[1] << 16 | oct[2] << 8 | oct[3]);
	/* The address identifies a connecting peer: it must be unique. */
	TAILQ_FOREACH(o, &it->parent->children, sibling)
		if (o != it && ITEM_NODE(o)->addr_set && ITEM_NODE(o)->addr == addr)
			return EEXIST;
	n->addr = addr;
	n->addr_set = 1;
	return 0;
}

static int
store_num(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_node *n = ITEM_NODE(it);
	struct nm_item *o;
	unsigned long long v;
	int rc;

	(void)nm;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v >= NM_NODE_UNSET)
		return ERANGE;
	/* The kernel indexes a node by number only once it can reach it. */
	if (!n->addr_set || !n->port_set)
		return EINVAL;
	if (n->num_set)
		return EBUSY;
	TAILQ_FOREACH(o, &it->parent->children, sibling)
		if (o != it && ITEM_NODE(o)->num_set && ITEM_NODE(o)->num == v)
			return EEXIST;
	n->num = (unsigned)v;
	n->num_set = 1;
	return 0;
}

static int
store_local(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_node *n = ITEM_NODE(it);
	struct nm_item *cur;
	unsigned long long v;
	int rc;

	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (!n->addr_set || !n->num_set || !n->port_set)
		return EINVAL;
	cur = nm_local_node(nm);
	if (v != 0 && cur != NULL && cur != it)
		return EBUSY;
	n->local = v != 0;
	return 0;
}

static const struct nm_attr node_attrs[] = {
	{ "num", 1, 1, show_num, store_num },
	{ "ipv4_port", 1, 1, show_port, store_port },
	{ "ipv4_address", 1, 1, show_address, store_address },
	{ "local", 1, 1, show_local, store_local },
};

static int
node_make(struct nmd *nm, struct nm_item *parent, const char *name,
    struct nm_item **out)
{
	struct nm_node *n;

	if (strlen(name) > CC_NODE_NAME_MAX)
		return ENAMETOOLONG;
	n = xcalloc(1, sizeof(*n));
	n->num = NM_NODE_UNSET;
	*out = item_new(nm, parent, &node_type, name, n);
	return 0;
}

/* A node that heartbeats or has a link is pinned, as configfs depends are. */
static int
node_drop(struct nmd *nm, struct nm_item *it)
{
	struct nm_node *n = ITEM_NODE(it);

	(void)nm;
	if (n->pins_heartbeat > 0 || n->pins_link > 0)
		return EBUSY;
	return 0;
}

static void
obj_release(struct nm_item *it)
{
	free(it->obj);
}

/* --- heartbeat group --- */

static void
show_dead_threshold(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ((struct nm_cluster *)it->obj)->dead_threshold);
}

static void
show_mode(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%s\n",
	    ((struct nm_cluster *)it->obj)->hb_mode == CC_HB_GLOBAL ? "global" : "local");
}

static void
show_interval(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ((struct nm_cluster *)it->obj)->hb_interval_ms);
}

/* Applied only above the minimum and while no region runs; else ignored. */
static int
store_dead_threshold(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v <= 2 || v > 65535 || nm_nregions(nm) > 0)
		return NM_IGNORED;
	((struct nm_cluster *)it->obj)->dead_threshold = (unsigned)v;
	return 0;
}

static int
store_mode(struct nmd *nm, struct nm_item *it, const char *val)
{
	size_t n = attr_len(val);
	enum cc_hb_mode m;

	if (n > 0 && strncasecmp(val, "local", n) == 0 && n <= 5)
		m = CC_HB_LOCAL;
	else if (n > 0 && strncasecmp(val, "global", n) == 0 && n <= 6)
		m = CC_HB_GLOBAL;
	else
		return EINVAL;
	if (nm_nregions(nm) > 0)
		return NM_IGNORED;
	((struct nm_cluster *)it->obj)->hb_mode = m;
	return 0;
}

/* Ours: the heartbeat period, cluster-wide; same rule as dead_threshold. */
static int
store_interval(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v < 100 || v > 60000)
		return ERANGE;
	if (nm_nregions(nm) > 0)
		return NM_IGNORED;
	((struct nm_cluster *)it->obj)->hb_interval_ms = (unsigned)v;
	return 0;
}

static const struct nm_attr hb_group_attrs[] = {
	{ "dead_threshold", 1, 1, show_dead_threshold, store_dead_threshold },
	{ "mode", 1, 1, show_mode, store_mode },
	{ "interval_ms", 1, 1, show_interval, store_interval },
};

/* --- regions --- */

static void
show_block_bytes(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ITEM_REGION(it)->block_bytes);
}

static void
show_start_block(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%llu\n", (unsigned long long)ITEM_REGION(it)->start_block);
}

static void
show_blocks(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	snprintf(b, l, "%u\n", ITEM_REGION(it)->blocks);
}

static void
show_dev(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	if (ITEM_REGION(it)->dev != NULL)
		snprintf(b, l, "%s\n", ITEM_REGION(it)->dev);
}

static void
show_pid(struct nmd *nm, struct nm_item *it, char *b, size_t l)
{
	(void)nm;
	if (ITEM_REGION(it)->pid > 0)
		snprintf(b, l, "%d\n", ITEM_REGION(it)->pid);
}

static int
store_block_bytes(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	(void)nm;
	if (ITEM_REGION(it)->dev != NULL)
		return EINVAL;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v > 4096 || v < 512)
		return ERANGE;
	if ((v & (v - 1)) != 0)
		return EINVAL;
	ITEM_REGION(it)->block_bytes = (unsigned)v;
	return 0;
}

static int
store_start_block(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	(void)nm;
	if (ITEM_REGION(it)->dev != NULL)
		return EINVAL;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	ITEM_REGION(it)->start_block = v;
	return 0;
}

static int
store_blocks(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	(void)nm;
	if (ITEM_REGION(it)->dev != NULL)
		return EINVAL;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v == 0 || v > CC_MAX_NODES)
		return ERANGE;
	ITEM_REGION(it)->blocks = (unsigned)v;
	return 0;
}

/*
 * The kernel takes an open fd; across processes we take the device's
 * path, which must name a block device or an image file. Writing it
 * commits the region: hbd starts heartbeating on it.
 */
static int
store_dev(struct nmd *nm, struct nm_item *it, const char *val)
{
	struct nm_region *r = ITEM_REGION(it);
	struct stat st;
	char path[4096];
	size_t n = attr_len(val);

	if (r->dev != NULL)
		return EINVAL;
	if (nm_local_node(nm) == NULL)
		return EINVAL;
	if (r->block_bytes == 0 || r->start_block == 0 || r->blocks == 0)
		return EINVAL;
	if (n == 0 || n >= sizeof(path) || val[0] != '/')
		return EINVAL;
	memcpy(path, val, n);
	path[n] = '\0';
	if (stat(path, &st) == -1)
		return errno;
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return EINVAL;
	r->dev = xstrdup(path);
	return 0;
}

/* Set by the heartbeat daemon through nmd.sock, never from the tree. */
static int
store_pid(struct nmd *nm, struct nm_item *it, const char *val)
{
	unsigned long long v;
	int rc;

	(void)nm;
	if ((rc = attr_ulong(val, &v)) != 0)
		return rc;
	if (v > 0x7fffffff)
		return ERANGE;
	ITEM_REGION(it)->pid = (int)v;
	return 0;
}

static const struct nm_attr region_attrs[] = {
	{ "block_bytes", 1, 1, show_block_bytes, store_block_bytes },
	{ "start_block", 1, 1, show_start_block, store_start_block },
	{ "blocks", 1, 1, show_blocks, store_blocks },
	{ "dev", 1, 1, show_dev, store_dev },
	{ "pid", 0, 1, show_pid, store_pid },
};

static int
region_make(struct nmd *nm, struct nm_item *parent, const char *name,
    struct nm_item **out)
{
	if (strlen(name) > CC_REGION_NAME_LEN)
		return ENAMETOOLONG;
	/* Global mode numbers its regions 0..31. */
	if (nm_nregions(nm) >= CC_MAX_REGIONS)
		return EFBIG;
	*out = item_new(nm, parent, &region_type, name,
	    xcalloc(1, sizeof(struct nm_region)));
	return 0;
}

/* A region acquired by a mount, fsck or tunefs stays until all release it. */
static int
region_drop(struct nmd *nm, struct nm_item *it)
{
	(void)nm;
	return ITEM_REGION(it)->refs > 0 ? EBUSY : 0;
}

static void
region_release(struct nm_item *it)
{
	free(ITEM_REGION(it)->dev);
	free(it->obj);
}

static const struct nm_item_type root_type = { .name = "root" };
static const struct nm_item_type subsys_type = {
	.name = "subsystem", .make_item = cluster_make,
};
static const struct nm_item_type cluster_type = {
	.name = "cluster", .attrs = cluster_attrs, .nattrs = nitems(cluster_attrs),
	.release = cluster_release,
};
static const struct nm_item_type node_group_type = {
	.name = "node group", .make_item = node_make,
};
static const struct nm_item_type node_type = {
	.name = "node", .attrs = node_attrs, .nattrs = nitems(node_attrs),
	.drop_item = node_drop, .release = obj_release,
};
static const struct nm_item_type hb_group_type = {
	.name = "heartbeat group", .attrs = hb_group_attrs,
	.nattrs = nitems(hb_group_attrs), .make_item = region_make,
};
static const struct nm_item_type region_type = {
	.name = "region", .attrs = region_attrs, .nattrs = nitems(region_attrs),
	.drop_item = region_drop, .release = region_release,
};
