/*
 * The state file, <rundir>/nmd.state: the tree as it is (everything made
 * or set through the tree, the API or cluster.conf) and who holds what,
 * rewritten after every change (temporary file, fsync, rename), so that
 * a restarted nmd serves what its clients saw instead of a tree made
 * afresh from cluster.conf, where the heartbeat regions that mounts
 * created are missing (hbd would stop them: the node would look dead).
 *
 * At start the file is taken up before nmd.sock is served; cluster.conf
 * is then applied as a reload would, unless it is the file that was last
 * loaded (its fingerprint is in the state): an unchanged file must not
 * undo what was made through the tree. A file that cannot be read is
 * reported, kept aside as nmd.state.bad, and nmd starts from cluster.conf.
 *
 * A stop keeps the file: the runtime directory is a tmpfs, which a reboot
 * empties, and a stop of the stack while fsd has a volume mounted must
 * not take its region away.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nmd.h"
#include "util.h"

#define STATE_MAX_BYTES	(16 << 20)

void
nm_persist_init(struct nmd *nm)
{
	xasprintf(&nm->state_path, "%s/nmd.state", nm->rundir);
}

/* FNV-1a over a file's bytes; a missing file hashes unlike any content. */
static uint64_t
fingerprint_file(uint64_t h, const char *path)
{
	unsigned char buf[8192];
	ssize_t n, i;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (h ^ 0x100) * 0x100000001b3ULL;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++)
			h = (h ^ buf[i]) * 0x100000001b3ULL;
	close(fd);
	/* A separator: the split between the two files counts. */
	return (h ^ 0x101) * 0x100000001b3ULL;
}

uint64_t
nm_config_files_fingerprint(const struct nmd *nm)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fingerprint_file(h, nm->conf_path);
	return fingerprint_file(h, nm->tunables_path);
}

static void
snapshot_nodes(struct nmd *nm, struct nm_state *st)
{
	struct nm_item *g = nm_node_group(nm), *it;
	size_t n = 0;

	TAILQ_FOREACH(it, &g->children, sibling)
		n++;
	st->nodes = xcalloc(n + 1, sizeof(*st->nodes));
	TAILQ_FOREACH(it, &g->children, sibling) {
		const struct nm_node *nd = it->obj;
		struct nm_state_node *s = &st->nodes[st->nnodes++];

		snprintf(s->name, sizeof(s->name), "%s", it->name);
		s->num_set = nd->num_set;
		s->num = nd->num;
		s->addr_set = nd->addr_set;
		s->addr = nd->addr;
		s->port_set = nd->port_set;
		s->port = nd->port;
		s->local = nd->local;
	}
}

static void
snapshot_regions(struct nmd *nm, struct nm_state *st)
{
	struct nm_item *g = nm_hb_group(nm), *it;

	st->regions = xcalloc(nm_nregions(nm) + 1, sizeof(*st->regions));
	TAILQ_FOREACH(it, &g->children, sibling) {
		const struct nm_region *r = it->obj;
		struct nm_state_region *s = &st->regions[st->nregions++];

		snprintf(s->name, sizeof(s->name), "%s", it->name);
		s->block_bytes = r->block_bytes;
		s->start_block = r->start_block;
		s->blocks = r->blocks;
		s->dev = r->dev != NULL ? xstrdup(r->dev) : NULL;
		s->pid = r->pid;
		s->persistent_refs = r->persistent_refs;
	}
}

static void
snapshot_holds(struct nmd *nm, struct nm_state *st)
{
	struct nm_holder *hd;
	struct nm_hold *h;
	size_t n = 0;

	LIST_FOREACH(hd, &nm->holders, entry)
		LIST_FOREACH(h, &hd->holds, entry)
			n++;
	st->holds = xcalloc(n + 1, sizeof(*st->holds));
	LIST_FOREACH(hd, &nm->holders, entry) {
		LIST_FOREACH(h, &hd->holds, entry) {
			struct nm_state_hold *s;

			/* A holder we cannot name cannot be found again. */
			if (hd->pid <= 0)
				continue;
			s = &st->holds[st->nholds++];
			s->kind = h->kind;
			snprintf(s->name, sizeof(s->name), "%s", h->name);
			s->pid = hd->pid;
			s->starttime = hd->starttime;
		}
	}
}

static void
snapshot(struct nmd *nm, struct nm_state *st)
{
	struct nm_item *ci = nm_cluster_item(nm);
	struct nm_cluster *c;
	size_t i;

	memset(st, 0, sizeof(*st));
	st->config_fingerprint = nm->config_fingerprint;
	if (ci != NULL) {
		c = ci->obj;
		st->has_cluster = 1;
		snprintf(st->cluster, sizeof(st->cluster), "%s", ci->name);
		st->idle_timeout_ms = c->idle_timeout_ms;
		st->keepalive_delay_ms = c->keepalive_delay_ms;
		st->reconnect_delay_ms = c->reconnect_delay_ms;
		st->fence_method = c->fence_method;
		st->dead_threshold = c->dead_threshold;
		st->hb_mode = c->hb_mode;
		st->hb_interval_ms = c->hb_interval_ms;
		st->stack = c->stack;
		st->global_regions = xcalloc(c->nglobal_regions + 1, sizeof(char *));
		for (i = 0; i < c->nglobal_regions; i++)
			st->global_regions[i] = xstrdup(c->global_regions[i]);
		st->nglobal_regions = c->nglobal_regions;
		snapshot_nodes(nm, st);
		snapshot_regions(nm, st);
	}
	snapshot_holds(nm, st);
}

/* Write path through a temporary file: a crash leaves the old or the new one. */
static int
write_atomic(const char *path, const char *buf, size_t len)
{
	char *tmp, *dir, *slash;
	int fd, rc = -1, saved;

	xasprintf(&tmp, "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) == -1)
		goto out;
	if (write_full(fd, buf, len) == -1 || fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		errno = saved;
		goto out;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		goto out;
	}
	/* The rename itself is durable once the directory is. */
	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((fd = open(slash != NULL ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		fsync(fd);
		close(fd);
	}
	free(dir);
	rc = 0;
out:
	free(tmp);
	return rc;
}

static void
save(struct nmd *nm)
{
	struct nm_state st;
	size_t len;
	char *buf;

	snapshot(nm, &st);
	buf = nm_state_format(&st, &len);
	nm_state_free(&st);
	if (write_atomic(nm->state_path, buf, len) == -1) {
		/* Once per failing streak: every change would say it again. */
		if (!nm->state_failing)
			log_warn("cannot write %s; a restart of nmd would lose the "
			    "changes since", nm->state_path);
		nm->state_failing = 1;
	} else if (nm->state_failing) {
		log_info("%s written again", nm->state_path);
		nm->state_failing = 0;
	}
	free(buf);
}

void
nm_state_changed(struct nmd *nm)
{
	if (nm->state_path == NULL || nm->state_frozen)
		return;
	if (nm->state_batch > 0) {
		nm->state_dirty = 1;
		return;
	}
	save(nm);
}

/* Changes between begin and end are written once, at the end. */
void
nm_state_batch_begin(struct nmd *nm)
{
	nm->state_batch++;
}

void
nm_state_batch_end(struct nmd *nm)
{
	if (--nm->state_batch == 0 && nm->state_dirty) {
		nm->state_dirty = 0;
		nm_state_changed(nm);
	}
}

/* Stopping: what the connections drop as they close is not a change. */
void
nm_state_freeze(struct nmd *nm)
{
	nm->state_frozen = 1;
}

/* --- taking the state up at start --- */

/* Set one attribute while restoring; log and return non-zero if refused. */
static int __attribute__((__format__(printf, 4, 5)))
restore_attr(struct nmd *nm, struct nm_item *it, const char *attr, const char *fmt, ...)
{
	char val[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	if ((rc = nm_attr_setf(nm, it, attr, "%s", val)) != 0)
		log_warnx("state: %s/%s = %s refused: %s", it->name, attr, val, strerror(rc));
	return rc;
}

/* As reload.c orders them: keepalive stays below idle at every step. */
static void
restore_cluster(struct nmd *nm, struct nm_item *ci, const struct nm_state *st)
{
	struct nm_cluster *c = ci->obj;
	struct nm_item *hb = nm_hb_group(nm);
	size_t i;

	if (st->keepalive_delay_ms < c->idle_timeout_ms) {
		if (st->keepalive_delay_ms != c->keepalive_delay_ms)
			restore_attr(nm, ci, "keepalive_delay_ms", "%u", st->keepalive_delay_ms);
		if (st->idle_timeout_ms != c->idle_timeout_ms)
			restore_attr(nm, ci, "idle_timeout_ms", "%u", st->idle_timeout_ms);
	} else {
		if (st->idle_timeout_ms != c->idle_timeout_ms)
			restore_attr(nm, ci, "idle_timeout_ms", "%u", st->idle_timeout_ms);
		if (st->keepalive_delay_ms != c->keepalive_delay_ms)
			restore_attr(nm, ci, "keepalive_delay_ms", "%u", st->keepalive_delay_ms);
	}
	if (st->reconnect_delay_ms != c->reconnect_delay_ms)
		restore_attr(nm, ci, "reconnect_delay_ms", "%u", st->reconnect_delay_ms);
	if (st->fence_method != c->fence_method)
		restore_attr(nm, ci, "fence_method", "%s", cc_fence_method_name(st->fence_method));
	/* Before any region exists: afterwards these are ignored. */
	if (st->dead_threshold != c->dead_threshold)
		restore_attr(nm, hb, "dead_threshold", "%u", st->dead_threshold);
	if (st->hb_mode != c->hb_mode)
		restore_attr(nm, hb, "mode", "%s", st->hb_mode == CC_HB_GLOBAL ? "global" : "local");
	if (st->hb_interval_ms != c->hb_interval_ms)
		restore_attr(nm, hb, "interval_ms", "%u", st->hb_interval_ms);
	c->stack = st->stack;
	c->global_regions = xcalloc(st->nglobal_regions + 1, sizeof(char *));
	for (i = 0; i < st->nglobal_regions; i++)
		c->global_regions[i] = xstrdup(st->global_regions[i]);
	c->nglobal_regions = st->nglobal_regions;
}

/* Nodes in o2cb's order of attributes; the local one once all exist. */
static void
restore_nodes(struct nmd *nm, const struct nm_state *st)
{
	const struct nm_state_node *s;
	struct nm_item *g = nm_node_group(nm), *it;
	char addr[INET_ADDRSTRLEN];
	size_t i;
	int rc;

	for (i = 0; i < st->nnodes; i++) {
		struct in_addr a;

		s = &st->nodes[i];
		a.s_addr = s->addr;
		if ((rc = nm_mkdir(nm, g, s->name, &it)) != 0) {
			log_warnx("state: node %s: %s", s->name, strerror(rc));
			continue;
		}
		inet_ntop(AF_INET, &a, addr, sizeof(addr));
		if ((s->port_set && restore_attr(nm, it, "ipv4_port", "%u", s->port) != 0) ||
		    (s->addr_set && restore_attr(nm, it, "ipv4_address", "%s", addr) != 0) ||
		    (s->num_set && restore_attr(nm, it, "num", "%u", s->num) != 0))
			nm_rmdir(nm, it);
	}
	for (i = 0; i < st->nnodes; i++)
		if (st->nodes[i].local && (it = nm_item_child(g, st->nodes[i].name)) != NULL)
			restore_attr(nm, it, "local", "1");
}

static void
restore_regions(struct nmd *nm, const struct nm_state *st)
{
	const struct nm_state_region *s;
	struct nm_item *g = nm_hb_group(nm), *it;
	struct nm_region *r;
	size_t i;
	int rc;

	for (i = 0; i < st->nregions; i++) {
		s = &st->regions[i];
		if ((rc = nm_mkdir(nm, g, s->name, &it)) != 0) {
			log_warnx("state: region %s: %s", s->name, strerror(rc));
			continue;
		}
		if ((s->block_bytes != 0 &&
		    restore_attr(nm, it, "block_bytes", "%u", s->block_bytes) != 0) ||
		    (s->start_block != 0 && restore_attr(nm, it, "start_block", "%llu",
		    (unsigned long long)s->start_block) != 0) ||
		    (s->blocks != 0 && restore_attr(nm, it, "blocks", "%u", s->blocks) != 0) ||
		    (s->dev != NULL && restore_attr(nm, it, "dev", "%s", s->dev) != 0) ||
		    (s->pid > 0 && restore_attr(nm, it, "pid", "%d", s->pid) != 0)) {
			nm_rmdir(nm, it);
			continue;
		}
		r = it->obj;
		r->persistent_refs = s->persistent_refs;
		r->refs = s->persistent_refs;
	}
}

static void
proc_name(int pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	if ((n = read(fd, buf, len - 1)) > 0) {
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
	}
	close(fd);
}

/* Holds of live processes come back; a region whose holders all died goes. */
static void
restore_holds(struct nmd *nm, const struct nm_state *st, size_t *kept, size_t *gone)
{
	const struct nm_state_hold *h;
	struct nm_item *g, *it;
	char comm[32];
	size_t i, j, held;

	for (i = 0; i < st->nholds; i++) {
		h = &st->holds[i];
		g = h->kind == NM_HOLD_REGION ? nm_hb_group(nm) : nm_node_group(nm);
		if (g == NULL || nm_item_child(g, h->name) == NULL) {
			log_warnx("state: %s %s, held by pid %d, was not restored",
			    nm_hold_kind_name(h->kind), h->name, h->pid);
			(*gone)++;
		} else if (nm_hold_restore(nm, h->kind, h->name, h->pid, h->starttime) == 0) {
			proc_name(h->pid, comm, sizeof(comm));
			log_info("state: %s %s stays held by pid %d (%s)",
			    nm_hold_kind_name(h->kind), h->name, h->pid, comm);
			(*kept)++;
		} else {
			log_info("state: %s %s was held by pid %d, which is gone",
			    nm_hold_kind_name(h->kind), h->name, h->pid);
			(*gone)++;
		}
	}
	g = nm_hb_group(nm);
	for (i = 0; g != NULL && i < st->nregions; i++) {
		held = st->regions[i].persistent_refs;
		for (j = 0; j < st->nholds; j++)
			if (st->holds[j].kind == NM_HOLD_REGION &&
			    strcmp(st->holds[j].name, st->regions[i].name) == 0)
				held++;
		it = nm_item_child(g, st->regions[i].name);
		if (held > 0 && it != NULL && ((struct nm_region *)it->obj)->refs == 0) {
			log_info("state: region %s: every holder is gone, removing it", it->name);
			nm_rmdir(nm, it);
		}
	}
}

static void
restore(struct nmd *nm, const struct nm_state *st)
{
	struct nm_item *ci = NULL;
	size_t kept = 0, gone = 0;
	int rc;

	nm_state_batch_begin(nm);
	nm->config_fingerprint = st->config_fingerprint;
	if (st->has_cluster) {
		if ((rc = nm_mkdir(nm, nm->subsys, st->cluster, &ci)) != 0)
			log_warnx("state: cluster %s: %s", st->cluster, strerror(rc));
	}
	if (ci != NULL) {
		restore_cluster(nm, ci, st);
		restore_nodes(nm, st);
		restore_regions(nm, st);
	}
	restore_holds(nm, st, &kept, &gone);
	nm_holds_restored(nm);
	nm_state_changed(nm);
	nm_state_batch_end(nm);
	log_info("restored %s: cluster %s, %zu nodes, %zu heartbeat regions, %zu holds "
	    "of live processes (%zu dropped)", nm->state_path,
	    ci != NULL ? ci->name : "(none)", ci != NULL ? st->nnodes : 0,
	    ci != NULL ? nm_nregions(nm) : 0, kept, gone);
}

static char *
read_state(const char *path, size_t *len)
{
	struct stat sb;
	char *buf;
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &sb) == -1 || sb.st_size > STATE_MAX_BYTES) {
		saved = sb.st_size > STATE_MAX_BYTES ? EFBIG : errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	if (read_full_timeout(fd, buf, (size_t)sb.st_size, -1) == -1) {
		saved = errno;
		free(buf);
		close(fd);
		errno = saved;
		return NULL;
	}
	close(fd);
	*len = (size_t)sb.st_size;
	return buf;
}

/* 1 when the state file was taken up, 0 when nmd starts afresh. */
int
nm_persist_restore(struct nmd *nm)
{
	struct nm_state st;
	char err[256], *buf, *aside;
	size_t len = 0;

	if ((buf = read_state(nm->state_path, &len)) == NULL) {
		if (errno == ENOENT)
			log_info("no %s: starting from %s", nm->state_path, nm->conf_path);
		else
			log_warn("cannot read %s; starting from %s", nm->state_path,
			    nm->conf_path);
		return 0;
	}
	if (nm_state_parse(buf, len, &st, err, sizeof(err)) == -1) {
		xasprintf(&aside, "%s.bad", nm->state_path);
		log_warnx("%s is not usable (%s); kept as %s, starting from %s",
		    nm->state_path, err, aside, nm->conf_path);
		if (rename(nm->state_path, aside) == -1)
			log_warn("rename %s", nm->state_path);
		free(aside);
		free(buf);
		return 0;
	}
	free(buf);
	restore(nm, &st);
	nm_state_free(&st);
	return 1;
}
