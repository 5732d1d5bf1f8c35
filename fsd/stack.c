/*
 * Joining the local cluster stack at mount (mount.ocfs2's "group join"):
 * nmd must run the volume's cluster on the volume's stack (o2cb or pcmk,
 * whose membership daemon, pcmkd, speaks hbd's protocol and stands for
 * hbd below), hbd heartbeats on the volume's
 * region (acquired through nmd on a connection that lives as long as the
 * mount, so the region goes when fsd goes), and netd links every node
 * that heartbeats. fsd then registers with hbd as a disk writer: if this
 * node is fenced, hbd kills fsd before anything more reaches the disk,
 * and every disk transfer is under hbd's lease (lease.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterconf.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#include "fsd.h"
#include "glue.h"

#define CALL_TIMEOUT_MS		5000
#define LINK_WAIT_MS		60000	/* as o2cb's wait for connections at mount */

struct fsd_stack {
	struct fsd		*fs;
	int			 nmd_fd;	/* holds our reference to the heartbeat region */
	struct fsd_lease	*lease;		/* our registration as a disk writer */
};


static int
connect_daemon(const char *rundir, const char *daemon, char *err, size_t errlen)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.sock", rundir, daemon);
	if ((fd = ipc_sync_connect(path)) == -1)
		snprintf(err, errlen, "%s is not running (%s: %s)", daemon, path, strerror(errno));
	return fd;
}

/* One request: the reply (status and, unless NOT_SET, payload checked), or NULL with err set. */
static Envelope *
daemon_call(int fd, const char *daemon, Envelope *req, Envelope__PayloadCase want, char *err,
    size_t errlen)
{
	Envelope *rep = NULL;

	if (ipc_sync_call(fd, req, &rep, CALL_TIMEOUT_MS) == -1) {
		snprintf(err, errlen, "%s: no answer: %s", daemon, strerror(errno));
		return NULL;
	}
	if (rep->status != 0) {
		snprintf(err, errlen, "%s: %s", daemon, rep->error && *rep->error ? rep->error :
		    strerror((int)rep->status));
		envelope__free_unpacked(rep, NULL);
		return NULL;
	}
	if (want != ENVELOPE__PAYLOAD__NOT_SET && rep->payload_case != want) {
		snprintf(err, errlen, "%s: unexpected reply", daemon);
		envelope__free_unpacked(rep, NULL);
		return NULL;
	}
	return rep;
}

/*
 * The volume's stack as mkfs.ocfs2 recorded it: pcmk volumes carry the
 * userspace-stack feature and its name; o2cb ones name o2cb, or nothing
 * when made before the cluster-info feature.
 */
static const char *
volume_stack(const struct fsd *fs)
{
	return fs->vol.cluster_stack[0] != '\0' ? fs->vol.cluster_stack :
	    cc_stack_name(CC_STACK_O2CB);
}

/* The volume against this node's stack and cluster; *stack: this node's. */
static int
check_cluster(struct fsd *fs, int nmd, enum cc_stack *stack, char *err, size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep;
	int rc = 0;

	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if ((rep = daemon_call(nmd, "nmd", &req, ENVELOPE__PAYLOAD_CONFIG, err, errlen)) == NULL)
		return -1;
	/* an nmd that names no stack knows only o2cb */
	if (cc_stack_parse(rep->config->stack, stack) == -1)
		*stack = CC_STACK_O2CB;
	if (rep->config->cluster[0] == '\0') {
		snprintf(err, errlen, "nmd has no cluster configured");
		rc = -1;
	} else if (strcmp(volume_stack(fs), cc_stack_name(*stack)) != 0) {
		snprintf(err, errlen, "the volume uses cluster stack \"%s\" (cluster \"%s\"); "
		    "this node runs stack \"%s\"", volume_stack(fs), fs->vol.cluster_name,
		    cc_stack_name(*stack));
		rc = -1;
	} else if (fs->vol.cluster_name[0] != '\0' &&
	    strcmp(fs->vol.cluster_name, rep->config->cluster) != 0) {
		snprintf(err, errlen, "the volume belongs to cluster \"%s\", this node runs \"%s\"",
		    fs->vol.cluster_name, rep->config->cluster);
		rc = -1;
	} else if (rep->config->local_node >= GLUE_MAX_NODES) {
		snprintf(err, errlen, "nmd does not know which node this is");
		rc = -1;
	}
	envelope__free_unpacked(rep, NULL);
	return rc;
}

static int
acquire_region(struct fsd *fs, int nmd, char *err, size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Nmd__RegionAcquire ra = NMD__REGION_ACQUIRE__INIT;
	struct hb_region_desc d;

	if (volume_heartbeat_region(&fs->vol, &d, err, errlen) == -1)
		return -1;
	ra.name = fs->vol.uuid;
	ra.block_bytes = d.block_bytes;
	ra.start_block = d.start_block;
	ra.blocks = d.blocks;
	ra.dev = fs->vol.path;
	ra.persistent = 0;
	req.type = MSG_TYPE__MSG_NMD_REGION_ACQUIRE;
	req.payload_case = ENVELOPE__PAYLOAD_REGION_ACQUIRE;
	req.region_acquire = &ra;
	if ((rep = daemon_call(nmd, "nmd", &req, ENVELOPE__PAYLOAD__NOT_SET, err, errlen)) == NULL)
		return -1;
	envelope__free_unpacked(rep, NULL);
	return 0;
}

/*
 * The membership daemon's view (hbd's, or pcmkd's on the pcmk stack):
 * 1 when our region is steady, 0 not yet, -1 failed (err set).
 */
static int
region_state(int hbd, const char *daemon, const char *uuid, unsigned *interval_ms, char *err,
    size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep;
	const Hbd__HbStatus *st;
	size_t i;
	int state = 0;

	req.type = MSG_TYPE__MSG_HBD_STATUS;
	if ((rep = daemon_call(hbd, daemon, &req, ENVELOPE__PAYLOAD_HB_STATUS, err, errlen)) == NULL)
		return -1;
	st = rep->hb_status;
	*interval_ms = st->interval_ms;
	if (st->fenced) {
		snprintf(err, errlen, "this node is fenced: %s", st->fence_reason);
		state = -1;
	}
	for (i = 0; state == 0 && i < st->n_regions; i++) {
		if (strcmp(st->regions[i]->name, uuid) != 0)
			continue;
		if (strcmp(st->regions[i]->state, "steady") == 0)
			state = 1;
		else if (strcmp(st->regions[i]->state, "failed") == 0) {
			snprintf(err, errlen, "heartbeat on the volume failed to start");
			state = -1;
		}
	}
	envelope__free_unpacked(rep, NULL);
	return state;
}

/* netd: our node number, and whether every heartbeating node is linked. */
static int
links_state(int netd, unsigned *node, char *missing, size_t mlen, char *err, size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep;
	const Netd__NetStatus *st;
	size_t i, n = 0;
	int ok = 1;

	req.type = MSG_TYPE__MSG_NETD_STATUS;
	if ((rep = daemon_call(netd, "netd", &req, ENVELOPE__PAYLOAD_NET_STATUS, err, errlen)) == NULL)
		return -1;
	st = rep->net_status;
	*node = st->local_node;
	missing[0] = '\0';
	for (i = 0; i < st->n_links; i++) {
		const Netd__LinkStatus *l = st->links[i];

		if (l->node == st->local_node || !l->heartbeat ||
		    l->state == NETD__LINK_STATE__LINK_UP)
			continue;
		ok = 0;
		n += (size_t)snprintf(missing + n, n < mlen ? mlen - n : 0, "%s%s (%u)",
		    n ? ", " : "", l->name, l->node);
	}
	envelope__free_unpacked(rep, NULL);
	return ok;
}

struct fsd_stack *
stack_attach(struct fsd *fs, const char *rundir, unsigned wait_ms, struct fsd_stack_info *si,
    char *err, size_t errlen)
{
	struct fsd_stack *st = xcalloc(1, sizeof(*st));
	char missing[512];
	const char *membership = NULL;
	enum cc_stack stack;
	unsigned interval = 0;
	uint64_t deadline;
	int hbd = -1, netd = -1, s;

	st->fs = fs;
	st->nmd_fd = -1;
	if ((st->nmd_fd = connect_daemon(rundir, "nmd", err, errlen)) == -1 ||
	    check_cluster(fs, st->nmd_fd, &stack, err, errlen) == -1 ||
	    (hbd = connect_daemon(rundir, membership = cc_stack_daemon(stack), err,
	    errlen)) == -1 ||
	    (netd = connect_daemon(rundir, "netd", err, errlen)) == -1 ||
	    acquire_region(fs, st->nmd_fd, err, errlen) == -1)
		goto fail;
	/* heartbeat must be steady before anyone's liveness means anything */
	if (wait_ms == 0)
		wait_ms = LINK_WAIT_MS;
	deadline = now_ms() + wait_ms;
	while ((s = region_state(hbd, membership, fs->vol.uuid, &interval, err, errlen)) == 0) {
		if (now_ms() > deadline) {
			snprintf(err, errlen, "heartbeat on the volume is not steady after %u s",
			    wait_ms / 1000);
			goto fail;
		}
		usleep(interval ? interval * 250 : 50000);
	}
	if (s == -1)
		goto fail;
	while ((s = links_state(netd, &si->node, missing, sizeof(missing), err, errlen)) == 0) {
		if (now_ms() > deadline) {
			snprintf(err, errlen, "no network link to heartbeating node(s) %s after "
			    "%u s", missing, wait_ms / 1000);
			goto fail;
		}
		usleep(100000);
	}
	if (s == -1)
		goto fail;
	if ((st->lease = lease_start(fs, rundir, membership, err, errlen)) == NULL)
		goto fail;
	close(hbd);
	close(netd);
	log_info("heartbeat on region %s is steady; node %u", fs->vol.uuid, si->node);
	return st;
fail:
	if (hbd != -1)
		close(hbd);
	if (netd != -1)
		close(netd);
	stack_detach(st);
	return NULL;
}

void
stack_detach(struct fsd_stack *st)
{
	if (st == NULL)
		return;
	/* before the region reference: hbd must see us leave, not the region go under us */
	lease_stop(st->fs, st->lease);
	/* closing the connection drops our reference: the region stops if it was the last */
	if (st->nmd_fd != -1)
		close(st->nmd_fd);
	free(st);
}
