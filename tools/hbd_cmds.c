/*
 * o2ctl commands served by hbd: heartbeat regions (start and stop as
 * ocfs2_hb_ctl -S/-K do, through nmd), the heartbeat status, fencing,
 * and a live view of hbd's events.
 */
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterconf.h"
#include "ipc.h"
#include "o2ctl.h"
#include "util.h"
#include "volume.h"

/* A start waits for steady state: about 10 intervals; give it 20. */
#define START_WAIT_INTERVALS	20


/* Subscribe to hbd; *st gets the membership we start from. -1: hbd is down. */
static int
hbd_subscribe_sync(struct o2ctl *ctl, Hbd__Role role, Envelope **st)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;
	int fd;

	if ((fd = ctl_connect(ctl, ctl_membership(ctl))) == -1)
		return -1;
	sub.role = role;
	req.type = MSG_TYPE__MSG_HBD_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_HB_SUBSCRIBE;
	req.hb_subscribe = &sub;
	if (ipc_sync_call(fd, &req, st, ctl->timeout_ms) == -1 || (*st)->status != 0 ||
	    (*st)->payload_case != ENVELOPE__PAYLOAD_HB_STATUS) {
		fprintf(stderr, "o2ctl: hbd: subscribe failed\n");
		close(fd);
		return -1;
	}
	return fd;
}

static const Hbd__RegionStatus *
status_region(const Hbd__HbStatus *st, const char *uuid)
{
	size_t i;

	for (i = 0; i < st->n_regions; i++)
		if (strcmp(st->regions[i]->name, uuid) == 0)
			return st->regions[i];
	return NULL;
}

/*
 * Wait for a region event of `uuid`; returns its kind, or -1 on timeout
 * or a lost connection. *why gets the reason (malloc'd).
 */
static int
wait_region_event(int fd, const char *uuid, int timeout_ms, char **why)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	Envelope *ev;
	int kind;

	while (now_ms() < deadline) {
		if (ipc_sync_recv(fd, &ev, (int)(deadline - now_ms())) == -1)
			return -1;
		if (ev->kind == KIND__KIND_EVENT &&
		    ev->payload_case == ENVELOPE__PAYLOAD_REGION_EVENT &&
		    strcmp(ev->region_event->region, uuid) == 0) {
			kind = ev->region_event->kind;
			*why = xstrdup(ev->region_event->reason);
			envelope__free_unpacked(ev, NULL);
			return kind;
		}
		envelope__free_unpacked(ev, NULL);
	}
	return -1;
}

static int
nmd_region_release(struct o2ctl *ctl, const char *uuid)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	Nmd__ItemPath ip = NMD__ITEM_PATH__INIT;
	int rc;

	ip.path = (char *)uuid;
	req.type = MSG_TYPE__MSG_NMD_REGION_RELEASE;
	req.payload_case = ENVELOPE__PAYLOAD_ITEM;
	req.item = &ip;
	rc = ctl_call(ctl, "nmd", &req, &rep);
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}

/* o2ctl heartbeat start DEVICE: ocfs2_hb_ctl -S -d DEVICE, persistent. */
static int
heartbeat_start(struct o2ctl *ctl, const char *dev)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL, *st = NULL;
	Nmd__RegionAcquire ra = NMD__REGION_ACQUIRE__INIT;
	const Hbd__RegionStatus *rs;
	struct hb_region_desc d;
	struct volume v;
	char err[512], path[4096], *why = NULL;
	int fd, rc, kind, wait_ms;

	if (realpath(dev, path) == NULL) {
		fprintf(stderr, "o2ctl: %s: %s\n", dev, strerror(errno));
		return EX_FAIL;
	}
	if (volume_open(path, O_RDONLY, &v, err, sizeof(err)) == -1 ||
	    volume_heartbeat_region(&v, &d, err, sizeof(err)) == -1) {
		fprintf(stderr, "o2ctl: %s\n", err);
		if (v.fd >= 0)
			volume_close(&v);
		return EX_FAIL;
	}
	/* Subscribe before the region exists: its start cannot slip past us. */
	fd = hbd_subscribe_sync(ctl, HBD__ROLE__ROLE_OBSERVER, &st);
	ra.name = v.uuid;
	ra.block_bytes = d.block_bytes;
	ra.start_block = d.start_block;
	ra.blocks = d.blocks;
	ra.dev = path;
	ra.persistent = 1;
	req.type = MSG_TYPE__MSG_NMD_REGION_ACQUIRE;
	req.payload_case = ENVELOPE__PAYLOAD_REGION_ACQUIRE;
	req.region_acquire = &ra;
	rc = ctl_call(ctl, "nmd", &req, &rep);
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	if (rc != EX_OK)
		goto out;
	if (fd == -1) {
		fprintf(stderr, "o2ctl: hbd is not running: the region starts with it\n");
		printf("%s\n", v.uuid);
		goto out;
	}
	rs = status_region(st->hb_status, v.uuid);
	if (rs != NULL && strcmp(rs->state, "steady") == 0) {
		printf("%s\n", v.uuid);		/* already heartbeating: one more reference */
		goto out;
	}
	wait_ms = (int)st->hb_status->interval_ms * START_WAIT_INTERVALS;
	if (wait_ms < ctl->timeout_ms)
		wait_ms = ctl->timeout_ms;
	kind = wait_region_event(fd, v.uuid, wait_ms, &why);
	if (kind == HBD__REGION_EVENT_KIND__REGION_STARTED) {
		printf("%s\n", v.uuid);
	} else {
		fprintf(stderr, "o2ctl: heartbeat on %s (region %s) did not start: %s\n",
		    path, v.uuid, kind == -1 ? "no answer from hbd in time" : why);
		nmd_region_release(ctl, v.uuid);	/* undo our reference */
		rc = EX_FAIL;
	}
out:
	free(why);
	if (st != NULL)
		envelope__free_unpacked(st, NULL);
	if (fd != -1)
		close(fd);
	volume_close(&v);
	return rc;
}

static int
is_uuid(const char *s)
{
	return strlen(s) == VOLUME_UUID_HEX && strspn(s, "0123456789ABCDEF") == VOLUME_UUID_HEX;
}

/* Is the region still an item of nmd's tree (somebody else holds it)? */
static int
nmd_has_region(struct o2ctl *ctl, const char *uuid)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	size_t i;
	int found = 0;

	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if (ctl_call(ctl, "nmd", &req, &rep) == EX_OK &&
	    rep->payload_case == ENVELOPE__PAYLOAD_CONFIG)
		for (i = 0; i < rep->config->n_regions; i++)
			found |= strcmp(rep->config->regions[i]->name, uuid) == 0;
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return found;
}

/* o2ctl heartbeat stop DEVICE|UUID: drop one persistent reference. */
static int
heartbeat_stop(struct o2ctl *ctl, const char *arg)
{
	Envelope *st = NULL;
	struct volume v;
	char err[512], uuid[VOLUME_UUID_HEX + 1], *why = NULL;
	int fd, rc, running, kind;

	if (is_uuid(arg)) {
		snprintf(uuid, sizeof(uuid), "%s", arg);
	} else if (volume_open(arg, O_RDONLY, &v, err, sizeof(err)) == 0) {
		snprintf(uuid, sizeof(uuid), "%s", v.uuid);
		volume_close(&v);
	} else {
		fprintf(stderr, "o2ctl: %s\n", err);
		return EX_FAIL;
	}
	fd = hbd_subscribe_sync(ctl, HBD__ROLE__ROLE_OBSERVER, &st);
	running = fd != -1 && status_region(st->hb_status, uuid) != NULL;
	if ((rc = nmd_region_release(ctl, uuid)) != EX_OK)
		goto out;
	if (!running)
		goto out;
	if (nmd_has_region(ctl, uuid)) {
		printf("region %s still has other references: heartbeat goes on\n", uuid);
		goto out;
	}
	kind = wait_region_event(fd, uuid, (int)st->hb_status->interval_ms * 4 +
	    ctl->timeout_ms, &why);
	if (kind == -1) {
		fprintf(stderr, "o2ctl: hbd did not report region %s stopped\n", uuid);
		rc = EX_FAIL;
	}
out:
	free(why);
	if (st != NULL)
		envelope__free_unpacked(st, NULL);
	if (fd != -1)
		close(fd);
	return rc;
}

static void
hbd_status_json(const Envelope *rep)
{
	const Hbd__HbStatus *s = rep->hb_status;
	int first = 1, f2, f3;
	size_t i, j;

	printf("{");
	json_key(stdout, &first, "local_node"); printf("%u", s->local_node);
	json_key(stdout, &first, "interval_ms"); printf("%u", s->interval_ms);
	json_key(stdout, &first, "dead_threshold"); printf("%u", s->dead_threshold);
	json_key(stdout, &first, "mode"); json_str(stdout, s->mode);
	json_key(stdout, &first, "fence_method"); json_str(stdout, s->fence_method);
	json_key(stdout, &first, "fenced"); printf("%s", s->fenced ? "true" : "false");
	json_key(stdout, &first, "fence_reason"); json_str(stdout, s->fence_reason);
	json_key(stdout, &first, "live_nodes");
	printf("[");
	for (i = 0; i < s->n_live_nodes; i++)
		printf("%s%u", i ? "," : "", s->live_nodes[i]);
	printf("]");
	json_key(stdout, &first, "fencing"); json_str(stdout, s->fencing);
	json_key(stdout, &first, "fences_pending");
	printf("[");
	for (i = 0; i < s->n_fences_pending; i++) {
		const Hbd__FencePending *fp = s->fences_pending[i];

		f2 = 1;
		printf("%s{", i ? "," : "");
		json_key(stdout, &f2, "node"); printf("%u", fp->node);
		json_key(stdout, &f2, "left_at"); printf("%llu", (unsigned long long)fp->left_at);
		json_key(stdout, &f2, "tries"); printf("%u", fp->tries);
		json_key(stdout, &f2, "running"); printf("%s", fp->running ? "true" : "false");
		json_key(stdout, &f2, "last_error"); json_str(stdout, fp->last_error);
		printf("}");
	}
	printf("]");
	json_key(stdout, &first, "writers");
	printf("[");
	for (i = 0; i < s->n_writers; i++) {
		f2 = 1;
		printf("%s{", i ? "," : "");
		json_key(stdout, &f2, "pid"); printf("%d", s->writers[i]->pid);
		json_key(stdout, &f2, "what"); json_str(stdout, s->writers[i]->what);
		printf("}");
	}
	printf("]");
	json_key(stdout, &first, "regions");
	printf("[");
	for (i = 0; i < s->n_regions; i++) {
		const Hbd__RegionStatus *r = s->regions[i];

		f2 = 1;
		printf("%s{", i ? "," : "");
		json_key(stdout, &f2, "name"); json_str(stdout, r->name);
		json_key(stdout, &f2, "dev"); json_str(stdout, r->dev);
		json_key(stdout, &f2, "state"); json_str(stdout, r->state);
		json_key(stdout, &f2, "generation"); printf("\"0x%llx\"", (unsigned long long)r->generation);
		json_key(stdout, &f2, "block_bytes"); printf("%u", r->block_bytes);
		json_key(stdout, &f2, "start_block"); printf("%llu", (unsigned long long)r->start_block);
		json_key(stdout, &f2, "writes"); printf("%llu", (unsigned long long)r->writes);
		json_key(stdout, &f2, "iterations_skipped"); printf("%llu", (unsigned long long)r->iterations_skipped);
		json_key(stdout, &f2, "write_latency_last_us"); printf("%llu", (unsigned long long)r->write_latency_last_us);
		json_key(stdout, &f2, "write_latency_max_us"); printf("%llu", (unsigned long long)r->write_latency_max_us);
		json_key(stdout, &f2, "write_latency_p50_us"); printf("%llu", (unsigned long long)r->write_latency_p50_us);
		json_key(stdout, &f2, "write_latency_p99_us"); printf("%llu", (unsigned long long)r->write_latency_p99_us);
		json_key(stdout, &f2, "nodes");
		printf("[");
		for (j = 0; j < r->n_slots; j++) {
			const Hbd__SlotStatus *n = r->slots[j];

			f3 = 1;
			printf("%s{", j ? "," : "");
			json_key(stdout, &f3, "node"); printf("%u", n->node);
			json_key(stdout, &f3, "state"); json_str(stdout, n->state);
			json_key(stdout, &f3, "seq"); printf("%llu", (unsigned long long)n->seq);
			json_key(stdout, &f3, "generation"); printf("\"0x%llx\"", (unsigned long long)n->generation);
			json_key(stdout, &f3, "ms_since_change"); printf("%llu", (unsigned long long)n->ms_since_change);
			json_key(stdout, &f3, "missed_samples"); printf("%u", n->missed_samples);
			json_key(stdout, &f3, "missed_total"); printf("%llu", (unsigned long long)n->missed_total);
			json_key(stdout, &f3, "dead_ms"); printf("%u", n->dead_ms);
			printf("}");
		}
		printf("]}");
	}
	printf("]}\n");
}

static void
hbd_status_text(const Envelope *rep)
{
	const Hbd__HbStatus *s = rep->hb_status;
	size_t i, j;

	printf("node %u, heartbeat every %u ms, dead after %u samples (%u ms), %s mode, "
	    "fence method %s\n", s->local_node, s->interval_ms, s->dead_threshold,
	    s->interval_ms * s->dead_threshold, s->mode, s->fence_method);
	if (s->fenced)
		printf("FENCED: %s (o2ctl clear-fence when the node is safe)\n",
		    s->fence_reason);
	printf("live nodes:");
	for (i = 0; i < s->n_live_nodes; i++)
		printf(" %u", s->live_nodes[i]);
	printf("%s\n", s->n_live_nodes ? "" : " none");
	for (i = 0; i < s->n_fences_pending; i++)
		printf("FENCE PENDING: node %u, lost at %llu, %u attempts%s%s%s\n",
		    s->fences_pending[i]->node,
		    (unsigned long long)s->fences_pending[i]->left_at, s->fences_pending[i]->tries,
		    s->fences_pending[i]->running ? ", one running" : "",
		    s->fences_pending[i]->last_error[0] ? "; last: " : "",
		    s->fences_pending[i]->last_error);
	for (i = 0; i < s->n_writers; i++)
		printf("disk writer pid %d: %s\n", s->writers[i]->pid, s->writers[i]->what);
	for (i = 0; i < s->n_regions; i++) {
		const Hbd__RegionStatus *r = s->regions[i];

		printf("\nregion %s on %s: %s, generation 0x%llx\n", r->name, r->dev,
		    r->state, (unsigned long long)r->generation);
		printf("  %llu writes; write latency last %llu us, worst %llu us, "
		    "median %llu us, p99 %llu us; %llu samples skipped\n",
		    (unsigned long long)r->writes,
		    (unsigned long long)r->write_latency_last_us,
		    (unsigned long long)r->write_latency_max_us,
		    (unsigned long long)r->write_latency_p50_us,
		    (unsigned long long)r->write_latency_p99_us,
		    (unsigned long long)r->iterations_skipped);
		if (r->n_slots > 0)
			printf("  %-4s %-5s %-12s %-18s %-10s %-7s %s\n", "NODE", "STATE",
			    "SEQ", "GENERATION", "SINCE(ms)", "MISSED", "DEAD_MS");
		for (j = 0; j < r->n_slots; j++) {
			const Hbd__SlotStatus *n = r->slots[j];

			printf("  %-4u %-5s %-12llu 0x%-16llx %-10llu %-7u %u\n", n->node,
			    n->state, (unsigned long long)n->seq,
			    (unsigned long long)n->generation,
			    (unsigned long long)n->ms_since_change, n->missed_samples,
			    n->dead_ms);
		}
	}
}

static int
heartbeat_status(struct o2ctl *ctl)
{
	return ctl_show(ctl, ctl_membership(ctl), MSG_TYPE__MSG_HBD_STATUS,
	    ENVELOPE__PAYLOAD_HB_STATUS, hbd_status_json, hbd_status_text);
}

/* heartbeat | heartbeat start DEVICE | heartbeat stop DEVICE|UUID */
int
cmd_heartbeat(struct o2ctl *ctl, int argc, char **argv)
{
	if (argc == 1)
		return heartbeat_status(ctl);
	if (argc == 3 && strcmp(argv[1], "start") == 0)
		return heartbeat_start(ctl, argv[2]);
	if (argc == 3 && strcmp(argv[1], "stop") == 0)
		return heartbeat_stop(ctl, argv[2]);
	return EX_USAGE;
}

int
cmd_clear_fence(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	int rc;

	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	req.type = MSG_TYPE__MSG_HBD_CLEAR_FENCE;
	rc = ctl_call(ctl, ctl_membership(ctl), &req, &rep);
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	return rc;
}

static const char *
region_kind_name(int k)
{
	switch (k) {
	case HBD__REGION_EVENT_KIND__REGION_STARTED: return "region-started";
	case HBD__REGION_EVENT_KIND__REGION_STOPPED: return "region-stopped";
	case HBD__REGION_EVENT_KIND__REGION_FAILED: return "region-failed";
	default: return "region-unknown";
	}
}

/* One line per event; returns its sequence number (0: not an hbd event). */
static uint64_t
print_event(struct o2ctl *ctl, const Envelope *ev, uint64_t recv)
{
	int first = 1;

	switch (ev->payload_case) {
	case ENVELOPE__PAYLOAD_NODE_EVENT: {
		const Hbd__NodeEvent *n = ev->node_event;
		const char *what = n->kind == HBD__NODE_EVENT_KIND__NODE_UP ? "node-up" : "node-down";

		if (!ctl->json) {
			printf("%s %u gen 0x%llx region %s time %llu last-change %llu "
			    "reason %s\n", what, n->node, (unsigned long long)n->generation,
			    n->region, (unsigned long long)n->time_ms,
			    (unsigned long long)n->last_change_ms, n->reason);
			return n->seq;
		}
		printf("{");
		json_key(stdout, &first, "event"); json_str(stdout, what);
		json_key(stdout, &first, "seq"); printf("%llu", (unsigned long long)n->seq);
		json_key(stdout, &first, "node"); printf("%u", n->node);
		json_key(stdout, &first, "generation"); printf("\"0x%llx\"", (unsigned long long)n->generation);
		json_key(stdout, &first, "region"); json_str(stdout, n->region);
		json_key(stdout, &first, "reason"); json_str(stdout, n->reason);
		json_key(stdout, &first, "time_ms"); printf("%llu", (unsigned long long)n->time_ms);
		json_key(stdout, &first, "last_change_ms"); printf("%llu", (unsigned long long)n->last_change_ms);
		json_key(stdout, &first, "recv_ms"); printf("%llu", (unsigned long long)recv);
		printf("}\n");
		return n->seq;
	}
	case ENVELOPE__PAYLOAD_REGION_EVENT: {
		const Hbd__RegionEvent *r = ev->region_event;

		if (!ctl->json) {
			printf("%s %s time %llu reason %s\n", region_kind_name(r->kind),
			    r->region, (unsigned long long)r->time_ms, r->reason);
			return r->seq;
		}
		printf("{");
		json_key(stdout, &first, "event"); json_str(stdout, region_kind_name(r->kind));
		json_key(stdout, &first, "seq"); printf("%llu", (unsigned long long)r->seq);
		json_key(stdout, &first, "region"); json_str(stdout, r->region);
		json_key(stdout, &first, "reason"); json_str(stdout, r->reason);
		json_key(stdout, &first, "time_ms"); printf("%llu", (unsigned long long)r->time_ms);
		json_key(stdout, &first, "recv_ms"); printf("%llu", (unsigned long long)recv);
		printf("}\n");
		return r->seq;
	}
	case ENVELOPE__PAYLOAD_FENCED_EVENT: {
		const Hbd__FencedEvent *f = ev->fenced_event;

		if (!ctl->json) {
			printf("fenced method %s time %llu reason %s\n", f->method,
			    (unsigned long long)f->time_ms, f->reason);
			return f->seq;
		}
		printf("{");
		json_key(stdout, &first, "event"); json_str(stdout, "fenced");
		json_key(stdout, &first, "seq"); printf("%llu", (unsigned long long)f->seq);
		json_key(stdout, &first, "method"); json_str(stdout, f->method);
		json_key(stdout, &first, "reason"); json_str(stdout, f->reason);
		json_key(stdout, &first, "time_ms"); printf("%llu", (unsigned long long)f->time_ms);
		json_key(stdout, &first, "recv_ms"); printf("%llu", (unsigned long long)recv);
		printf("}\n");
		return f->seq;
	}
	case ENVELOPE__PAYLOAD_UNFENCED_EVENT: {
		const Hbd__UnfencedEvent *u = ev->unfenced_event;

		if (!ctl->json) {
			printf("unfenced time %llu was %s\n",
			    (unsigned long long)u->time_ms, u->reason);
			return u->seq;
		}
		printf("{");
		json_key(stdout, &first, "event"); json_str(stdout, "unfenced");
		json_key(stdout, &first, "seq"); printf("%llu", (unsigned long long)u->seq);
		json_key(stdout, &first, "reason"); json_str(stdout, u->reason);
		json_key(stdout, &first, "time_ms"); printf("%llu", (unsigned long long)u->time_ms);
		json_key(stdout, &first, "recv_ms"); printf("%llu", (unsigned long long)recv);
		printf("}\n");
		return u->seq;
	}
	default:
		return 0;
	}
}

static int
role_parse(const char *s, Hbd__Role *r)
{
	static const struct { const char *name; Hbd__Role role; } roles[] = {
		{ "observer", HBD__ROLE__ROLE_OBSERVER }, { "net", HBD__ROLE__ROLE_NET },
		{ "dlm", HBD__ROLE__ROLE_DLM }, { "fs", HBD__ROLE__ROLE_FS },
	};
	size_t i;

	for (i = 0; i < nitems(roles); i++)
		if (strcmp(s, roles[i].name) == 0) {
			*r = roles[i].role;
			return 0;
		}
	return -1;
}

/*
 * Print hbd's events as they come, flushed, one per line. With a role
 * other than observer we take part in the ordered delivery and ack each
 * event (after --ack-delay MS): that is how tests see the order.
 */
int
cmd_hbwatch(struct o2ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "role", required_argument, NULL, 'r' },
		{ "ack-delay", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	Envelope *st = NULL, *ev, ack = ENVELOPE__INIT;
	Hbd__HbAck hack = HBD__HB_ACK__INIT;
	Hbd__Role role = HBD__ROLE__ROLE_OBSERVER;
	unsigned long count = 0, seen = 0, delay = 0;
	uint64_t seq;
	size_t i;
	int fd, ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			if (role_parse(optarg, &role) == -1)
				return EX_USAGE;
			break;
		case 'd':
			if (parse_ulong(optarg, 10, 600000, &delay) == -1)
				return EX_USAGE;
			break;
		default:
			return EX_USAGE;
		}
	}
	if (argc - optind > 1 || (argc - optind == 1 &&
	    parse_ulong(argv[optind], 10, 1000000, &count) == -1))
		return EX_USAGE;
	if ((fd = hbd_subscribe_sync(ctl, role, &st)) == -1)
		return EX_DOWN;
	if (ctl->json) {
		printf("{\"subscribed\":true,\"live_nodes\":[");
		for (i = 0; i < st->hb_status->n_live_nodes; i++)
			printf("%s%u", i ? "," : "", st->hb_status->live_nodes[i]);
		printf("]}\n");
	} else {
		printf("watching\n");
	}
	envelope__free_unpacked(st, NULL);
	fflush(stdout);
	while (count == 0 || seen < count) {
		if (ipc_sync_recv(fd, &ev, -1) == -1) {
			fprintf(stderr, "o2ctl: hbd: %s\n", strerror(errno));
			close(fd);
			return EX_DOWN;
		}
		if (ev->kind != KIND__KIND_EVENT) {
			envelope__free_unpacked(ev, NULL);
			continue;	/* the reply to an ack */
		}
		seq = print_event(ctl, ev, now_ms());
		fflush(stdout);
		envelope__free_unpacked(ev, NULL);
		if (seq == 0)
			continue;
		seen++;
		if (role == HBD__ROLE__ROLE_OBSERVER)
			continue;
		if (delay > 0)
			usleep((useconds_t)delay * 1000);
		hack.seq = seq;
		ack.type = MSG_TYPE__MSG_HBD_EVENT_ACK;
		ack.kind = KIND__KIND_REQUEST;
		ack.payload_case = ENVELOPE__PAYLOAD_HB_ACK;
		ack.hb_ack = &hack;
		if (ipc_sync_send(fd, &ack) == -1) {
			fprintf(stderr, "o2ctl: hbd: %s\n", strerror(errno));
			close(fd);
			return EX_DOWN;
		}
	}
	close(fd);
	return EX_OK;
}

/*
 * Send req on a new connection to hbd, then become argv[0]: the
 * connection, which the command inherits, and the pid, which exec keeps,
 * are what hbd knows it by.
 */
static int
hbd_request_then_exec(struct o2ctl *ctl, Envelope *req, char **argv)
{
	Envelope *rep = NULL;
	int fd;

	if ((fd = ctl_connect(ctl, ctl_membership(ctl))) == -1)
		return EX_DOWN;
	if (ipc_sync_call(fd, req, &rep, ctl->timeout_ms) == -1) {
		fprintf(stderr, "o2ctl: hbd: %s\n", strerror(errno));
		return EX_DOWN;
	}
	if (rep->status != 0) {
		fprintf(stderr, "o2ctl: %s\n", rep->error);
		envelope__free_unpacked(rep, NULL);
		return EX_FAIL;
	}
	envelope__free_unpacked(rep, NULL);
	if (fcntl(fd, F_SETFD, 0) == -1) {
		fprintf(stderr, "o2ctl: fcntl: %s\n", strerror(errno));
		return EX_FAIL;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "o2ctl: %s: %s\n", argv[0], strerror(errno));
	return EX_FAIL;
}

/* o2ctl writer WHAT CMD [ARGS]: CMD as one of this node's disk writers: fencing kills it. */
int
cmd_writer(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__RegisterWriter rw = HBD__REGISTER_WRITER__INIT;

	if (argc < 3)
		return EX_USAGE;
	rw.what = argv[1];
	req.type = MSG_TYPE__MSG_HBD_REGISTER_WRITER;
	req.payload_case = ENVELOPE__PAYLOAD_REGISTER_WRITER;
	req.register_writer = &rw;
	return hbd_request_then_exec(ctl, &req, argv + 2);
}

/*
 * o2ctl guard WHAT CMD [ARGS]: CMD as a holder of this node's cluster
 * locks, as dlmd is: its death ends the heartbeat incarnation.
 */
int
cmd_guard(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbGuard g = HBD__HB_GUARD__INIT;

	if (argc < 3)
		return EX_USAGE;
	g.on = 1;
	g.what = argv[1];
	req.type = MSG_TYPE__MSG_HBD_GUARD;
	req.payload_case = ENVELOPE__PAYLOAD_HB_GUARD;
	req.hb_guard = &g;
	return hbd_request_then_exec(ctl, &req, argv + 2);
}
