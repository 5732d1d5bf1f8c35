/*
 * pcmkd.sock: hbd's protocol (proto/hbd.proto) on the pcmk stack.
 *
 * Events go to subscribers as hbd hands them out, by role with acks
 * (common/subscribers.c, shared with hbd, as are the writers' records:
 * common/writers.c).
 *
 * Disk writers register and are killed when this node fences itself; a
 * lock manager's guard (MSG_HBD_GUARD) that goes away while on means
 * its locks died with it: this node fences itself, so that the others
 * see it leave and recover them.
 */
#include <sys/queue.h>
#include <sys/syscall.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "subscribers.h"
#include "util.h"
#include "writers.h"

#include "pcmkd.h"

#define KILL_CONFIRM_MS		5000

/* A subscriber, and what this daemon keeps of it besides. */
struct pm_client {
	struct sub_client	 sub;		/* first: subscribers.c's part */
	struct disk_writer	*writer;
	char			*guard;
};

static struct pm_client *
client_of(struct ipc_conn *c)
{
	struct pcmkd *p = ipc_conn_arg(c);

	return (struct pm_client *)subs_client_of(p->subs, c, sizeof(struct pm_client));
}

static uint64_t
event_time_ms(void)
{
	return (uint64_t)time(NULL) * 1000;
}

void
api_node_event(struct pcmkd *p, int up, unsigned node, uint64_t gen, const char *reason)
{
	if (p->subs != NULL)
		subs_node_event(p->subs, up, node, gen, "", reason, event_time_ms(), 0);
}

void
api_region_event(struct pcmkd *p, Hbd__RegionEventKind kind, const char *region,
    const char *reason)
{
	if (p->subs != NULL)
		subs_region_event(p->subs, kind, region, reason, event_time_ms());
}

void
api_fenced_event(struct pcmkd *p, const char *reason)
{
	if (p->subs != NULL)
		subs_fenced_event(p->subs, reason, "kill", event_time_ms());
}

void
api_unfenced_event(struct pcmkd *p, const char *reason)
{
	if (p->subs != NULL)
		subs_unfenced_event(p->subs, reason, event_time_ms());
}

/*
 * SIGKILL to every registered writer, then wait (bounded) for each to
 * be gone: nothing else matters before that. Returns how many are left.
 */
int
api_writers_kill(struct pcmkd *p)
{
	struct disk_writer *w;
	struct pollfd pfd;
	uint64_t deadline = now_ms() + KILL_CONFIRM_MS;
	int left = 0;

	LIST_FOREACH(w, &p->writers, entry) {
		log_err("fencing: killing disk writer pid %d (%s)", (int)w->pid, w->what);
		if (syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0) == -1 &&
		    errno != ESRCH)
			log_warn("fencing: pidfd_send_signal(%d)", (int)w->pid);
	}
	LIST_FOREACH(w, &p->writers, entry) {
		pfd.fd = w->pidfd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline > now_ms() ? deadline - now_ms() : 0)) == 1)
			continue;
		log_err("fencing: disk writer pid %d did not die within %d ms", (int)w->pid,
		    KILL_CONFIRM_MS);
		left++;
	}
	return left;
}

/* Who depends on this incarnation: its disk writers and lock holders, in words; 0 none. */
int
api_users(struct pcmkd *p, char *who, size_t len)
{
	struct sub_client *sc;
	size_t n = 0;
	int users = 0;

	who[0] = '\0';
	TAILQ_FOREACH(sc, &p->subs->clients, entry) {
		struct pm_client *cl = (struct pm_client *)sc;

		if (cl->writer == NULL && cl->guard == NULL)
			continue;
		n += (size_t)snprintf(who + n, n < len ? len - n : 0, "%s%s pid %d %s",
		    users++ ? ", " : "", cl->writer != NULL ? cl->writer->what : cl->guard,
		    (int)ipc_conn_pid(sc->conn), cl->writer != NULL ? "writes" :
		    "holds cluster locks");
	}
	return users;
}

static void
fill_status(struct pcmkd *p, Hbd__HbStatus *st)
{
	struct pm_region *r;
	size_t n = 0;
	unsigned i;

	hbd__hb_status__init(st);
	st->local_node = p->local_node;
	st->interval_ms = PM_RENEW_MS;
	st->dead_threshold = 0;
	st->fenced = p->fenced;
	st->fence_reason = p->fence_reason;
	st->mode = "pcmk";
	st->fence_method = "kill";
	st->fencing = (char *)cc_pcmk_fencing_name(p->fencing);
	st->live_nodes = xcalloc(PM_MAX_NODES, sizeof(*st->live_nodes));
	st->fences_pending = xcalloc(PM_MAX_NODES, sizeof(*st->fences_pending));
	for (i = 0; i < PM_MAX_NODES; i++) {
		const struct pm_fence_node *fn = &p->fences.n[i];
		Hbd__FencePending *fp;

		/* a node waiting for its fence is alive to the subscribers still */
		if (p->m.up[i] || fence_pending(&p->fences, i))
			st->live_nodes[st->n_live_nodes++] = i;
		if (!fence_pending(&p->fences, i))
			continue;
		fp = xcalloc(1, sizeof(*fp));
		hbd__fence_pending__init(fp);
		fp->node = i;
		fp->left_at = (uint64_t)fn->left_at;
		fp->tries = fn->tries;
		fp->running = fn->state == PF_RUNNING;
		fp->last_error = (char *)fn->last_error;
		st->fences_pending[st->n_fences_pending++] = fp;
	}
	TAILQ_FOREACH(r, &p->regions, entry)
		n++;
	st->regions = xcalloc(n + 1, sizeof(*st->regions));
	TAILQ_FOREACH(r, &p->regions, entry) {
		Hbd__RegionStatus *rs = xcalloc(1, sizeof(*rs));

		hbd__region_status__init(rs);
		rs->name = r->name;
		rs->dev = "";
		rs->state = r->steady ? "steady" : "starting";
		rs->lease_ms_left = lease_left_ms(p, r);
		st->regions[st->n_regions++] = rs;
	}
	writers_fill_status(&p->writers, st);
}

static void
reply_status(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Hbd__HbStatus st;
	size_t i;

	fill_status(ipc_conn_arg(c), &st);
	rep.payload_case = ENVELOPE__PAYLOAD_HB_STATUS;
	rep.hb_status = &st;
	ipc_reply(c, req, &rep);
	for (i = 0; i < st.n_regions; i++)
		free(st.regions[i]);
	free(st.regions);
	writers_free_status(&st);
	free(st.live_nodes);
	for (i = 0; i < st.n_fences_pending; i++)
		free(st.fences_pending[i]);
	free(st.fences_pending);
}

static void
handle_subscribe(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);

	if (subs_subscribe(p->subs, &client_of(c)->sub, req) == 0)
		reply_status(c, req);
}

static void
handle_ack(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);

	subs_ack(p->subs, &client_of(c)->sub, req->hb_ack->seq);
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_register_writer(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);
	struct pm_client *cl = client_of(c);
	struct disk_writer *w;

	w = writer_register(&p->writers, c, req, cl->writer, p->fenced ? p->fence_reason : NULL);
	if (w == NULL)
		return;
	cl->writer = w;
	ipc_reply_status(c, req, 0, NULL);
}

static void
handle_unregister_writer(struct ipc_conn *c, const Envelope *req)
{
	struct pm_client *cl = client_of(c);

	if (writer_unregister(c, req, &cl->writer) == 0)
		ipc_reply_status(c, req, 0, NULL);
}

static void
handle_guard(struct ipc_conn *c, const Envelope *req)
{
	struct pm_client *cl = client_of(c);
	const Hbd__HbGuard *g = req->hb_guard;

	free(cl->guard);
	cl->guard = NULL;
	if (g->on) {
		cl->guard = xstrdup(g->what[0] ? g->what : "a lock manager");
		log_info("pid %d (%s) holds cluster locks for this node", (int)ipc_conn_pid(c),
		    cl->guard);
	}
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
	char err[256];

	if (state_clear_fence(ipc_conn_arg(c), err, sizeof(err)) == -1)
		ipc_reply_status(c, req, EALREADY, "%s", err);
	else
		ipc_reply_status(c, req, 0, NULL);
}

/* netd's quorum rules ask for it too; on this stack corosync's quorum rules. */
static void
handle_fence(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);

	state_fence(p, "asked by pid %d: %s", (int)ipc_conn_pid(c), req->fenced_event->reason);
	ipc_reply_status(c, req, 0, NULL);
}

static void
client_closed(struct ipc_conn *c)
{
	struct pcmkd *p = ipc_conn_arg(c);
	struct pm_client *cl = ipc_conn_data(c);

	if (cl == NULL)
		return;
	subs_client_remove(p->subs, &cl->sub);
	if (cl->writer != NULL)
		writer_gone(cl->writer);
	if (cl->guard != NULL) {
		state_fence(p, "pid %d (%s) went away holding cluster locks",
		    (int)ipc_conn_pid(c), cl->guard);
		free(cl->guard);
	}
	subs_client_drop_ack(p->subs, &cl->sub);
	free(cl);
}

static const struct ipc_handler pcmkd_handlers[] = {
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
api_start(struct pcmkd *p)
{
	char *path;

	p->subs = xcalloc(1, sizeof(*p->subs));
	subs_init(p->subs, p->base, PM_ACK_TIMEOUT_MS);
	xasprintf(&path, "%s/pcmkd.sock", p->rundir);
	p->ipc = ipc_server_listen(p->base, path, "pcmkd", pcmkd_handlers,
	    nitems(pcmkd_handlers), p);
	if (p->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(p->ipc, client_closed);
	free(path);
}
