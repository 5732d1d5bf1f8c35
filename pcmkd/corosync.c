/*
 * The local corosync: its quorum service (quorate, the membership and
 * its ring), cmap (totem.cluster_name, the nodelist: node ids and
 * names) and CPG, where the group "ocfs2:<cluster>" holds one pcmkd per
 * node that runs the stack. Each service's descriptor is on our event
 * loop; a dispatch that fails means corosync is gone, and with it every
 * guarantee about the others: pcmkd fences this node and exits.
 *
 * Node numbers are corosync node ids (as the kernel's pcmk stack does):
 * corosync's id of this node must be cluster.conf's number of it
 * (nmdlink.c refuses to start otherwise); a nodelist entry whose id
 * cluster.conf does not have, or has under another name, is logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corosync/cmap.h>
#include <corosync/cpg.h>
#include <corosync/quorum.h>
#include <event2/event.h>

#include "log.h"
#include "util.h"

#include "pcmkd.h"

#define GROUP_PREFIX	"ocfs2:"

struct pm_corosync {
	quorum_handle_t		 quorum;
	cpg_handle_t		 cpg;
	cmap_handle_t		 cmap;
	int			 have_quorum, have_cpg, have_cmap;
	struct event		*quorum_ev, *cpg_ev;
	struct cpg_name		 group;
	int			 joined;	/* cpg_join done, no cpg_leave since */
};

static struct pcmkd *pcmkd_of_callbacks;	/* corosync's callbacks carry no argument of ours */

static void
on_quorum(quorum_handle_t h, uint32_t quorate, struct quorum_ring_id ring,
    uint32_t n, const uint32_t *ids)
{
	struct pcmkd *p = pcmkd_of_callbacks;

	(void)h;
	log_info("corosync: %s, ring %u/%llu, %u members", quorate ? "quorate" : "NOT quorate",
	    ring.nodeid, (unsigned long long)ring.seq, n);
	pm_quorum(&p->m, quorate != 0, ring.seq, ids, n);
	state_update(p);
}

static enum pm_group_why
group_why(uint32_t reason)
{
	switch (reason) {
	case CPG_REASON_LEAVE:
		return PM_LEFT;
	case CPG_REASON_NODEDOWN:
		return PM_NODE_DIED;
	case CPG_REASON_PROCDOWN:
		return PM_PROC_DIED;
	default:
		return PM_JOINED;
	}
}

static void
on_confchg(cpg_handle_t h, const struct cpg_name *group,
    const struct cpg_address *members, size_t nmembers,
    const struct cpg_address *left, size_t nleft,
    const struct cpg_address *joined, size_t njoined)
{
	struct pcmkd *p = pcmkd_of_callbacks;
	size_t i;

	(void)h;
	(void)group;
	(void)joined;
	(void)njoined;
	for (i = 0; i < nleft; i++) {
		log_info("group: node %u left (reason %u)", left[i].nodeid, left[i].reason);
		if (left[i].nodeid == p->nodeid && left[i].pid == (uint32_t)getpid())
			p->in_group = 0;
		pm_group(&p->m, left[i].nodeid, group_why(left[i].reason));
	}
	for (i = 0; i < nmembers; i++) {
		pm_group(&p->m, members[i].nodeid, PM_JOINED);
		if (members[i].nodeid == p->nodeid && members[i].pid == (uint32_t)getpid())
			p->in_group = 1;
	}
	state_update(p);
}

static void
on_totem(cpg_handle_t h, struct cpg_ring_id ring, uint32_t n, const uint32_t *ids)
{
	struct pcmkd *p = pcmkd_of_callbacks;

	(void)h;
	(void)ids;
	log_info("corosync: CPG ring %u/%llu, %u members", ring.nodeid,
	    (unsigned long long)ring.seq, n);
	pm_cpg_ring(&p->m, ring.seq);
	state_update(p);
}

static void
on_deliver(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid, uint32_t pid,
    void *msg, size_t len)
{
	(void)h;
	(void)group;
	(void)msg;
	/* the group carries membership only: messages go over netd */
	log_debug("group: unexpected %zu-byte message from node %u pid %u", len, nodeid, pid);
}

static void
corosync_lost(struct pcmkd *p, const char *service, cs_error_t rc)
{
	state_fence(p, "lost corosync's %s service (%s)", service, cs_strerror(rc));
	fatalx("corosync went away: this node's disk writers were fenced");
}

static void
quorum_readable(evutil_socket_t fd, short ev, void *arg)
{
	struct pcmkd *p = arg;
	cs_error_t rc;

	(void)fd;
	(void)ev;
	if ((rc = quorum_dispatch(p->cs->quorum, CS_DISPATCH_ALL)) != CS_OK)
		corosync_lost(p, "quorum", rc);
}

static void
cpg_readable(evutil_socket_t fd, short ev, void *arg)
{
	struct pcmkd *p = arg;
	cs_error_t rc;

	(void)fd;
	(void)ev;
	if ((rc = cpg_dispatch(p->cs->cpg, CS_DISPATCH_ALL)) != CS_OK)
		corosync_lost(p, "CPG", rc);
}

static struct event *
watch_fd(struct pcmkd *p, int fd, event_callback_fn fn)
{
	struct event *e;

	if ((e = event_new(p->base, fd, EV_READ | EV_PERSIST, fn, p)) == NULL ||
	    event_add(e, NULL) == -1)
		fatalx("out of memory for corosync's events");
	return e;
}

/* A CPG connection, on the event loop. */
static int
cpg_open(struct pcmkd *p, char *err, size_t errlen)
{
	struct pm_corosync *cs = p->cs;
	cpg_model_v1_data_t cm;
	cs_error_t rc;
	int fd;

	memset(&cm, 0, sizeof(cm));
	cm.model = CPG_MODEL_V1;
	cm.cpg_deliver_fn = on_deliver;
	cm.cpg_confchg_fn = on_confchg;
	cm.cpg_totem_confchg_fn = on_totem;
	/* the current ring at once, then every change's */
	cm.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF;
	if ((rc = cpg_model_initialize(&cs->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&cm,
	    NULL)) != CS_OK) {
		snprintf(err, errlen, "cannot connect to corosync's CPG service: %s",
		    cs_strerror(rc));
		return -1;
	}
	cs->have_cpg = 1;
	if (cpg_fd_get(cs->cpg, &fd) != CS_OK)
		fatalx("corosync's CPG service has no descriptor");
	cs->cpg_ev = watch_fd(p, fd, cpg_readable);
	return 0;
}

static void
cpg_close(struct pm_corosync *cs)
{
	if (cs->cpg_ev != NULL)
		event_free(cs->cpg_ev);
	cs->cpg_ev = NULL;
	if (cs->have_cpg)
		cpg_finalize(cs->cpg);
	cs->have_cpg = 0;
	cs->joined = 0;
}

/* The three connections, and what cmap knows; -1 with err saying which failed. */
int
cs_connect(struct pcmkd *p, char *err, size_t errlen)
{
	struct pm_corosync *cs = p->cs = xcalloc(1, sizeof(*cs));
	quorum_model_v1_data_t qm;
	uint32_t type;
	char *name = NULL;
	cs_error_t rc;
	int fd;

	pcmkd_of_callbacks = p;
	if ((rc = cmap_initialize(&cs->cmap)) != CS_OK) {
		snprintf(err, errlen, "corosync is not running here (cannot connect to its "
		    "cmap service: %s)", cs_strerror(rc));
		return -1;
	}
	cs->have_cmap = 1;
	if ((rc = cmap_get_string(cs->cmap, "totem.cluster_name", &name)) != CS_OK) {
		snprintf(err, errlen, "corosync has no totem.cluster_name (%s)", cs_strerror(rc));
		return -1;
	}
	snprintf(p->cs_cluster, sizeof(p->cs_cluster), "%s", name);
	free(name);

	memset(&qm, 0, sizeof(qm));
	qm.model = QUORUM_MODEL_V1;
	qm.quorum_notify_fn = on_quorum;
	if ((rc = quorum_model_initialize(&cs->quorum, QUORUM_MODEL_V1,
	    (quorum_model_data_t *)&qm, &type, NULL)) != CS_OK) {
		snprintf(err, errlen, "cannot connect to corosync's quorum service: %s",
		    cs_strerror(rc));
		return -1;
	}
	cs->have_quorum = 1;
	if (type != QUORUM_SET) {
		snprintf(err, errlen, "corosync runs without a quorum provider: pcmkd needs "
		    "one (quorum { provider: corosync_votequorum })");
		return -1;
	}
	if (cpg_open(p, err, errlen) == -1)
		return -1;
	if ((rc = cpg_local_get(cs->cpg, &p->nodeid)) != CS_OK) {
		snprintf(err, errlen, "corosync does not say which node this is: %s",
		    cs_strerror(rc));
		return -1;
	}
	if (quorum_fd_get(cs->quorum, &fd) != CS_OK)
		fatalx("corosync's quorum service has no descriptor");
	cs->quorum_ev = watch_fd(p, fd, quorum_readable);
	return 0;
}

/*
 * corosync's nodelist against cluster.conf, once nmd has told us ours:
 * the same number must be the same node. A mismatch is logged (netd
 * links by cluster.conf; the two must agree for membership to mean it).
 */
void
cs_check_nodes(struct pcmkd *p)
{
	cmap_iter_handle_t it;
	char key[CMAP_KEYNAME_MAXLEN + 1], k[CMAP_KEYNAME_MAXLEN + 64], *name;
	size_t len;
	cmap_value_types_t type;
	uint32_t id;
	unsigned idx;

	if (cmap_iter_init(p->cs->cmap, "nodelist.node.", &it) != CS_OK)
		return;
	while (cmap_iter_next(p->cs->cmap, it, key, &len, &type) == CS_OK) {
		if (sscanf(key, "nodelist.node.%u.nodeid", &idx) != 1 ||
		    strstr(key, ".nodeid") == NULL)
			continue;
		snprintf(k, sizeof(k), "nodelist.node.%u.nodeid", idx);
		if (cmap_get_uint32(p->cs->cmap, k, &id) != CS_OK)
			continue;
		if (id >= PM_MAX_NODES)
			log_warnx("corosync node id %u is past OCFS2's node numbers (0..254): "
			    "that node cannot take part", id);
		else if (!p->node_known[id])
			log_warnx("corosync node id %u is no node number of cluster.conf: that "
			    "node cannot take part", id);
		else {
			snprintf(k, sizeof(k), "nodelist.node.%u.name", idx);
			if (cmap_get_string(p->cs->cmap, k, &name) != CS_OK)
				continue;
			if (strcmp(name, p->node_names[id]) != 0)
				log_warnx("corosync calls node %u %s, cluster.conf %s: the same "
				    "number must be the same machine", id, name,
				    p->node_names[id]);
			free(name);
		}
	}
	cmap_iter_finalize(p->cs->cmap, it);
}

int
cs_join(struct pcmkd *p, char *err, size_t errlen)
{
	struct pm_corosync *cs = p->cs;
	cs_error_t rc;
	int tries;

	cs->group.length = (uint32_t)snprintf(cs->group.value, sizeof(cs->group.value),
	    GROUP_PREFIX "%s", p->cluster);
	/* corosync answers TRY_AGAIN while it syncs a membership change */
	for (tries = 0; (rc = cpg_join(cs->cpg, &cs->group)) == CS_ERR_TRY_AGAIN && tries < 20;
	    tries++)
		usleep(100000);
	if (rc != CS_OK) {
		snprintf(err, errlen, "cannot join corosync group %s: %s", cs->group.value,
		    cs_strerror(rc));
		return -1;
	}
	cs->joined = 1;
	log_info("joined corosync group %s as node %u", cs->group.value, p->nodeid);
	return 0;
}

void
cs_leave(struct pcmkd *p)
{
	cs_error_t rc;
	int tries;

	if (p->cs == NULL || !p->cs->joined)
		return;
	for (tries = 0; (rc = cpg_leave(p->cs->cpg, &p->cs->group)) == CS_ERR_TRY_AGAIN &&
	    tries < 20; tries++)
		usleep(100000);
	if (rc != CS_OK)
		log_warnx("cannot leave corosync group %s: %s", p->cs->group.value,
		    cs_strerror(rc));
	p->cs->joined = 0;
}

/*
 * Join again after a fence, on a new CPG connection: the old one may
 * still count itself in the group when its leave crossed a partition
 * (cpg_join then says CS_ERR_EXIST).
 */
int
cs_rejoin(struct pcmkd *p, char *err, size_t errlen)
{
	cpg_close(p->cs);
	/* the new connection says its ring anew */
	pm_cpg_ring_forget(&p->m);
	if (cpg_open(p, err, errlen) == -1)
		return -1;
	return cs_join(p, err, errlen);
}

void
cs_close(struct pcmkd *p)
{
	struct pm_corosync *cs = p->cs;

	if (cs == NULL)
		return;
	if (cs->quorum_ev != NULL)
		event_free(cs->quorum_ev);
	cpg_close(cs);
	if (cs->have_quorum)
		quorum_finalize(cs->quorum);
	if (cs->have_cmap)
		cmap_finalize(cs->cmap);
	free(cs);
	p->cs = NULL;
}

/* Track the membership from now on: the current one comes first. */
void
cs_track(struct pcmkd *p)
{
	cs_error_t rc;

	if ((rc = quorum_trackstart(p->cs->quorum, CS_TRACK_CHANGES | CS_TRACK_CURRENT)) != CS_OK)
		fatalx("corosync will not report its membership: %s", cs_strerror(rc));
}
