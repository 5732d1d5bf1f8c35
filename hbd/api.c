/*
 * hbd.sock: subscriptions, disk writers, lock guards, status and the
 * fence switch. The ordered delivery of events to subscribers by role,
 * with acks, is common/subscribers.c's, the writers' records are
 * common/writers.c's (both shared with pcmkd).
 */
#include <sys/queue.h>
#include <sys/syscall.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbd.h"
#include "hblease.h"
#include "ipc.h"
#include "log.h"
#include "nmdclient.h"
#include "subscribers.h"
#include "util.h"
#include "writers.h"

/* A subscriber, and what this daemon keeps of it besides. */
struct hb_client {
	struct sub_client	 sub;		/* first: subscribers.c's part */
	struct disk_writer	*writer;
	char			*guard;		/* MSG_HBD_GUARD on: what */
	uint64_t		 starttime;	/* of its process, once it writes or guards */
};

static struct hb_client *
client_of(struct ipc_conn *c)
{
	struct hbd *h = ipc_conn_arg(c);

	return (struct hb_client *)subs_client_of(h->subs, c, sizeof(struct hb_client));
}

void
api_node_event(struct hbd *h, int up, unsigned node, uint64_t gen,
    const char *region, const char *reason, uint64_t time_ms,
    uint64_t last_change_ms)
{
	if (h->subs != NULL)
		subs_node_event(h->subs, up, node, gen, region, reason, time_ms,
		    last_change_ms);
}

void
api_region_event(struct hbd *h, Hbd__RegionEventKind kind, const char *region,
    const char *reason)
{
	if (h->subs != NULL)
		subs_region_event(h->subs, kind, region, reason, wall_ms());
}

void
api_fenced_event(struct hbd *h, const char *reason, const char *method)
{
	if (h->subs != NULL)
		subs_fenced_event(h->subs, reason, method, wall_ms());
}

void
api_unfenced_event(struct hbd *h, const char *reason)
{
	if (h->subs != NULL)
		subs_unfenced_event(h->subs, reason, wall_ms());
}

static void
fill_status(struct hbd *h, Hbd__HbStatus *st)
{
	struct hb_region *r;
	size_t n;
	unsigned i;

	hbd__hb_status__init(st);
	st->local_node = h->local_node;
	st->interval_ms = h->interval_ms;
	st->dead_threshold = h->dead_threshold;
	st->fenced = h->fenced;
	st->fence_reason = h->fence_reason;
	st->mode = h->global ? "global" : "local";
	st->fence_method = (char *)cc_fence_method_name(h->fence_method);
	st->live_nodes = xcalloc(HB_MAX_NODES, sizeof(*st->live_nodes));
	for (i = 0; i < HB_MAX_NODES; i++)
		if (h->members.up[i])
			st->live_nodes[st->n_live_nodes++] = i;
	n = 0;
	TAILQ_FOREACH(r, &h->regions, entry)
		n++;
	st->regions = xcalloc(n + 1, sizeof(*st->regions));
	TAILQ_FOREACH(r, &h->regions, entry) {
		st->regions[st->n_regions] = xcalloc(1, sizeof(Hbd__RegionStatus));
		region_fill_status(r, st->regions[st->n_regions++]);
	}
	writers_fill_status(&h->writers, st);
}

static void
free_status(Hbd__HbStatus *st)
{
	size_t i;

	for (i = 0; i < st->n_regions; i++) {
		region_free_status(st->regions[i]);
		free(st->regions[i]);
	}
	free(st->regions);
	writers_free_status(st);
	free(st->live_nodes);
}

static void
reply_status(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Hbd__HbStatus st;

	fill_status(ipc_conn_arg(c), &st);
	rep.payload_case = ENVELOPE__PAYLOAD_HB_STATUS;
	rep.hb_status = &st;
	ipc_reply(c, req, &rep);
	free_status(&st);
}

/* The reply is the membership the subscriber starts from. */
static void
handle_subscribe(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);

	if (subs_subscribe(h->subs, &client_of(c)->sub, req) == 0)
		reply_status(c, req);
}

static void
handle_ack(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);

	subs_ack(h->subs, &client_of(c)->sub, req->hb_ack->seq);
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_register_writer(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);
	struct hb_client *cl = client_of(c);
	struct disk_writer *w;

	w = writer_register(&h->writers, c, req, cl->writer,
	    h->fenced ? h->fence_reason : NULL);
	if (w == NULL)
		return;
	cl->writer = w;
	cl->starttime = proc_starttime(w->pid);
	holders_claim(h, w->pid, 1, 0);
	lease_note_users(h);
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_unregister_writer(struct ipc_conn *c, const Envelope *req)
{
	struct hb_client *cl = client_of(c);

	if (writer_unregister(c, req, &cl->writer) == -1)
		return;
	lease_note_users(ipc_conn_arg(c));
	ipc_reply_status(c, req, 0, NULL);
}

/*
 * Who depends on region: its disk writers (and those of every region),
 * and the lock managers holding cluster locks. 0 when nobody; else
 * USERS_WRITERS and/or USERS_LOCKS, and who, in words.
 */
int
api_region_users(struct hbd *h, const char *region, char *who, size_t len)
{
	struct sub_client *sc;
	size_t n = 0;
	int users = 0;

	who[0] = '\0';
	TAILQ_FOREACH(sc, &h->subs->clients, entry) {
		struct hb_client *cl = (struct hb_client *)sc;

		if (cl->writer != NULL && (cl->writer->region[0] == '\0' ||
		    strcmp(cl->writer->region, region) == 0)) {
			n += (size_t)snprintf(who + n, n < len ? len - n : 0, "%s%s pid %d "
			    "writes", users ? ", " : "", cl->writer->what, (int)cl->writer->pid);
			users |= USERS_WRITERS;
		}
		if (cl->guard != NULL) {
			n += (size_t)snprintf(who + n, n < len ? len - n : 0, "%s%s pid %d "
			    "holds cluster locks", users ? ", " : "", cl->guard,
			    (int)ipc_conn_pid(sc->conn));
			users |= USERS_LOCKS;
		}
	}
	return holders_users(h, who, len, &n, users);
}

/* The writers and lock holders connected to us, for the lease file. */
void
api_holders_fill(struct hbd *h, struct hblease_holder *tab, unsigned max, unsigned *n)
{
	struct sub_client *sc;

	TAILQ_FOREACH(sc, &h->subs->clients, entry) {
		struct hb_client *cl = (struct hb_client *)sc;

		if (cl->writer == NULL && cl->guard == NULL)
			continue;
		if (*n == max)
			return;
		memset(&tab[*n], 0, sizeof(tab[*n]));
		tab[*n].pid = (int32_t)ipc_conn_pid(sc->conn);
		tab[*n].starttime = cl->starttime;
		tab[*n].writer = cl->writer != NULL;
		tab[*n].guard = cl->guard != NULL;
		(*n)++;
	}
}

static void
handle_guard(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);
	struct hb_client *cl = client_of(c);
	const Hbd__HbGuard *g = req->hb_guard;

	if (cl->guard != NULL && !g->on)
		nmd_client_refetch(h->nmd);	/* a region kept for it may stop now */
	free(cl->guard);
	cl->guard = NULL;
	if (g->on) {
		cl->guard = xstrdup(g->what[0] ? g->what : "a lock manager");
		log_info("pid %d (%s) holds cluster locks for this node",
		    (int)ipc_conn_pid(c), cl->guard);
	}
	cl->starttime = proc_starttime((int)ipc_conn_pid(c));
	holders_claim(h, ipc_conn_pid(c), 0, 1);
	lease_note_users(ipc_conn_arg(c));
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_status(struct ipc_conn *c, const Envelope *req)
{
	reply_status(c, req);
}

static void
handle_clear_fence(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);
	int rc;

	if (!h->fenced) {
		ipc_reply_status(c, req, EALREADY, "this node is not fenced");
		return;
	}
	switch (rc = fence_clear(h)) {
	case 0:
		break;
	case EBUSY:
		ipc_reply_status(c, req, EBUSY, "I/O of the fenced incarnation is "
		    "still in flight (%u regions); try again when the disk answers",
		    h->hung_regions);
		return;
	default:
		ipc_reply_status(c, req, rc, "cannot remove %s/hbd.fenced: %s",
		    h->rundir, strerror(rc));
		return;
	}
	ipc_reply_status(c, req, 0, NULL);
}

/* netd's quorum says we are on the losing side: run the fence method. */
static void
handle_fence(struct ipc_conn *c, const Envelope *req)
{
	struct hbd *h = ipc_conn_arg(c);

	log_warnx("pid %d asks us to fence: %s", (int)ipc_conn_pid(c),
	    req->fenced_event->reason);
	fence(h, "asked by pid %d: %s", (int)ipc_conn_pid(c), req->fenced_event->reason);
	ipc_reply_status(c, req, 0, NULL);
}

static void
client_closed(struct ipc_conn *c)
{
	struct hbd *h = ipc_conn_arg(c);
	struct hb_client *cl = ipc_conn_data(c);

	if (cl == NULL)
		return;
	subs_client_remove(h->subs, &cl->sub);
	if (cl->guard != NULL) {
		char why[256];

		snprintf(why, sizeof(why), "pid %d (%s) went away holding cluster "
		    "locks", (int)ipc_conn_pid(c), cl->guard);
		fence_reincarnate(h, why);
		free(cl->guard);
		nmd_client_refetch(h->nmd);
	}
	if (cl->writer != NULL)
		writer_gone(cl->writer);
	subs_client_drop_ack(h->subs, &cl->sub);
	free(cl);
	lease_note_users(h);
}

static const struct ipc_handler hbd_handlers[] = {
	{ MSG_TYPE__MSG_HBD_SUBSCRIBE, ENVELOPE__PAYLOAD_HB_SUBSCRIBE, handle_subscribe },
	{ MSG_TYPE__MSG_HBD_EVENT_ACK, ENVELOPE__PAYLOAD_HB_ACK, handle_ack },
	{ MSG_TYPE__MSG_HBD_REGISTER_WRITER, ENVELOPE__PAYLOAD_REGISTER_WRITER, handle_register_writer },
	{ MSG_TYPE__MSG_HBD_UNREGISTER_WRITER, ENVELOPE__PAYLOAD__NOT_SET, handle_unregister_writer },
	{ MSG_TYPE__MSG_HBD_GUARD, ENVELOPE__PAYLOAD_HB_GUARD, handle_guard },
	{ MSG_TYPE__MSG_HBD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, handle_status },
	{ MSG_TYPE__MSG_HBD_CLEAR_FENCE, ENVELOPE__PAYLOAD__NOT_SET, handle_clear_fence },
	{ MSG_TYPE__MSG_HBD_FENCE, ENVELOPE__PAYLOAD_FENCED_EVENT, handle_fence },
};

void
api_start(struct hbd *h)
{
	char *path;

	h->subs = xcalloc(1, sizeof(*h->subs));
	subs_init(h->subs, h->base, HB_ACK_TIMEOUT_MS);
	xasprintf(&path, "%s/hbd.sock", h->rundir);
	h->ipc = ipc_server_listen(h->base, path, "hbd", hbd_handlers,
	    nitems(hbd_handlers), h);
	if (h->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(h->ipc, client_closed);
	free(path);
}
