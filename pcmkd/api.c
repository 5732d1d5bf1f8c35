/*
 * pcmkd.sock: hbd's protocol (proto/hbd.proto) on the pcmk stack.
 *
 * Events leave in the order decided, role by role as hbd hands them
 * out: each goes to every net subscriber, then once all have acked (or
 * PM_ACK_TIMEOUT_MS passed, logged) to the dlm ones, then to fs, so that
 * dlmd never hears of a node netd has not been told of. Observers get
 * each at once and do not ack.
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
#include "util.h"

#include "pcmkd.h"

#define ROLE_MAX		HBD__ROLE__ROLE_FS
#define KILL_CONFIRM_MS		5000

struct pm_event {
	TAILQ_ENTRY(pm_event)	 entry;
	uint64_t		 seq;
	Envelope		 env;
	Hbd__NodeEvent		 node;
	Hbd__RegionEvent	 region;
	Hbd__FencedEvent	 fenced;
	Hbd__UnfencedEvent	 unfenced;
	char			*s1, *s2;
};

struct pm_client {
	TAILQ_ENTRY(pm_client)	 entry;
	struct ipc_conn		*conn;
	int			 subscribed;
	Hbd__Role		 role;
	uint64_t		 since_seq;
	uint64_t		 awaiting;	/* the event it must ack, 0 none */
	struct pm_writer	*writer;
	char			*guard;
};

struct pm_api {
	TAILQ_HEAD(, pm_event)	 events;	/* head: being handed out */
	TAILQ_HEAD(, pm_client)	 clients;
	uint64_t		 next_seq;
	Hbd__Role		 stage;
	unsigned		 unacked;
	struct event		*ack_timer;
};

static struct pm_client *
client_of(struct ipc_conn *c)
{
	struct pcmkd *p = ipc_conn_arg(c);
	struct pm_client *cl = ipc_conn_data(c);

	if (cl == NULL) {
		cl = xcalloc(1, sizeof(*cl));
		cl->conn = c;
		ipc_conn_set_data(c, cl);
		TAILQ_INSERT_TAIL(&p->api->clients, cl, entry);
	}
	return cl;
}

static void
event_free_one(struct pm_event *e)
{
	free(e->s1);
	free(e->s2);
	free(e);
}

/* The head event to the next role with subscribers; stops while acks are due. */
static void
deliver(struct pcmkd *p)
{
	struct pm_api *a = p->api;
	struct timeval tv = { PM_ACK_TIMEOUT_MS / 1000, (PM_ACK_TIMEOUT_MS % 1000) * 1000 };
	struct pm_client *cl, *next;
	struct pm_event *e;

	while ((e = TAILQ_FIRST(&a->events)) != NULL) {
		if (a->unacked > 0)
			return;
		for (; a->stage <= ROLE_MAX; a->stage++) {
			for (cl = TAILQ_FIRST(&a->clients); cl != NULL; cl = next) {
				next = TAILQ_NEXT(cl, entry);
				if (!cl->subscribed || cl->role != a->stage || cl->since_seq > e->seq)
					continue;
				cl->awaiting = e->seq;
				a->unacked++;
				ipc_send(cl->conn, &e->env);	/* may close it */
			}
			if (a->unacked > 0) {
				a->stage++;
				evtimer_add(a->ack_timer, &tv);
				return;
			}
		}
		TAILQ_REMOVE(&a->events, e, entry);
		event_free_one(e);
		a->stage = HBD__ROLE__ROLE_NET;
	}
}

static void
ack_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct pcmkd *p = arg;
	struct pm_client *cl;

	(void)fd;
	(void)ev;
	TAILQ_FOREACH(cl, &p->api->clients, entry) {
		if (cl->awaiting == 0)
			continue;
		log_warnx("subscriber pid %d (role %d) did not ack event %llu within %d ms; "
		    "passing it on", (int)ipc_conn_pid(cl->conn), cl->role,
		    (unsigned long long)cl->awaiting, PM_ACK_TIMEOUT_MS);
		cl->awaiting = 0;
	}
	p->api->unacked = 0;
	deliver(p);
}

static void
deliver_later(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	deliver(arg);
}

static void
client_acked(struct pcmkd *p, struct pm_client *cl)
{
	cl->awaiting = 0;
	if (p->api->unacked > 0 && --p->api->unacked == 0) {
		evtimer_del(p->api->ack_timer);
		deliver(p);
	}
}

static struct pm_event *
event_new_seq(struct pcmkd *p)
{
	struct pm_event *e = xcalloc(1, sizeof(*e));

	envelope__init(&e->env);
	e->seq = ++p->api->next_seq;
	e->env.kind = KIND__KIND_EVENT;
	return e;
}

static void
enqueue(struct pcmkd *p, struct pm_event *e)
{
	struct pm_client *cl, *next;

	for (cl = TAILQ_FIRST(&p->api->clients); cl != NULL; cl = next) {
		next = TAILQ_NEXT(cl, entry);
		if (cl->subscribed && cl->role == HBD__ROLE__ROLE_OBSERVER)
			ipc_send(cl->conn, &e->env);
	}
	TAILQ_INSERT_TAIL(&p->api->events, e, entry);
	if (TAILQ_FIRST(&p->api->events) == e)
		deliver(p);
}

void
api_node_event(struct pcmkd *p, int up, unsigned node, uint64_t gen, const char *reason)
{
	struct pm_event *e;

	if (p->api == NULL)
		return;
	e = event_new_seq(p);
	hbd__node_event__init(&e->node);
	e->node.seq = e->seq;
	e->node.kind = up ? HBD__NODE_EVENT_KIND__NODE_UP : HBD__NODE_EVENT_KIND__NODE_DOWN;
	e->node.node = node;
	e->node.generation = gen;
	e->node.region = e->s1 = xstrdup("");
	e->node.reason = e->s2 = xstrdup(reason);
	e->node.time_ms = (uint64_t)time(NULL) * 1000;
	e->env.type = MSG_TYPE__MSG_HBD_NODE_EVENT;
	e->env.payload_case = ENVELOPE__PAYLOAD_NODE_EVENT;
	e->env.node_event = &e->node;
	enqueue(p, e);
}

void
api_region_event(struct pcmkd *p, Hbd__RegionEventKind kind, const char *region,
    const char *reason)
{
	struct pm_event *e;

	if (p->api == NULL)
		return;
	e = event_new_seq(p);
	hbd__region_event__init(&e->region);
	e->region.seq = e->seq;
	e->region.kind = kind;
	e->region.region = e->s1 = xstrdup(region);
	e->region.reason = e->s2 = xstrdup(reason);
	e->region.time_ms = (uint64_t)time(NULL) * 1000;
	e->env.type = MSG_TYPE__MSG_HBD_REGION_EVENT;
	e->env.payload_case = ENVELOPE__PAYLOAD_REGION_EVENT;
	e->env.region_event = &e->region;
	enqueue(p, e);
}

void
api_fenced_event(struct pcmkd *p, const char *reason)
{
	struct pm_event *e;

	if (p->api == NULL)
		return;
	e = event_new_seq(p);
	hbd__fenced_event__init(&e->fenced);
	e->fenced.seq = e->seq;
	e->fenced.reason = e->s1 = xstrdup(reason);
	e->fenced.method = e->s2 = xstrdup("kill");
	e->fenced.time_ms = (uint64_t)time(NULL) * 1000;
	e->env.type = MSG_TYPE__MSG_HBD_FENCED;
	e->env.payload_case = ENVELOPE__PAYLOAD_FENCED_EVENT;
	e->env.fenced_event = &e->fenced;
	enqueue(p, e);
}

void
api_unfenced_event(struct pcmkd *p, const char *reason)
{
	struct pm_event *e;

	if (p->api == NULL)
		return;
	e = event_new_seq(p);
	hbd__unfenced_event__init(&e->unfenced);
	e->unfenced.seq = e->seq;
	e->unfenced.reason = e->s1 = xstrdup(reason);
	e->unfenced.time_ms = (uint64_t)time(NULL) * 1000;
	e->env.type = MSG_TYPE__MSG_HBD_UNFENCED;
	e->env.payload_case = ENVELOPE__PAYLOAD_UNFENCED_EVENT;
	e->env.unfenced_event = &e->unfenced;
	enqueue(p, e);
}

/*
 * SIGKILL to every registered writer, then wait (bounded) for each to
 * be gone: nothing else matters before that. Returns how many are left.
 */
int
api_writers_kill(struct pcmkd *p)
{
	struct pm_writer *w;
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
	struct pm_client *cl;
	size_t n = 0;
	int users = 0;

	who[0] = '\0';
	TAILQ_FOREACH(cl, &p->api->clients, entry) {
		if (cl->writer == NULL && cl->guard == NULL)
			continue;
		n += (size_t)snprintf(who + n, n < len ? len - n : 0, "%s%s pid %d %s",
		    users++ ? ", " : "", cl->writer != NULL ? cl->writer->what : cl->guard,
		    (int)ipc_conn_pid(cl->conn), cl->writer != NULL ? "writes" :
		    "holds cluster locks");
	}
	return users;
}

static void
fill_status(struct pcmkd *p, Hbd__HbStatus *st)
{
	struct pm_region *r;
	struct pm_writer *w;
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
	st->live_nodes = xcalloc(PM_MAX_NODES, sizeof(*st->live_nodes));
	for (i = 0; i < PM_MAX_NODES; i++)
		if (p->m.up[i])
			st->live_nodes[st->n_live_nodes++] = i;
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
	n = 0;
	LIST_FOREACH(w, &p->writers, entry)
		n++;
	st->writers = xcalloc(n + 1, sizeof(*st->writers));
	LIST_FOREACH(w, &p->writers, entry) {
		Hbd__Writer *hw = xcalloc(1, sizeof(*hw));

		hbd__writer__init(hw);
		hw->pid = w->pid;
		hw->what = w->what;
		hw->region = w->region;
		st->writers[st->n_writers++] = hw;
	}
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
	for (i = 0; i < st.n_writers; i++)
		free(st.writers[i]);
	free(st.regions);
	free(st.writers);
	free(st.live_nodes);
}

static void
handle_subscribe(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);
	struct pm_client *cl = client_of(c);

	if ((int)req->hb_subscribe->role < HBD__ROLE__ROLE_OBSERVER ||
	    req->hb_subscribe->role > ROLE_MAX) {
		ipc_reply_status(c, req, EINVAL, "unknown role %d", (int)req->hb_subscribe->role);
		return;
	}
	if (cl->subscribed && cl->awaiting != 0)
		client_acked(p, cl);
	cl->subscribed = 1;
	cl->role = req->hb_subscribe->role;
	cl->since_seq = p->api->next_seq + 1;
	log_debug("pid %d subscribed as role %d", (int)ipc_conn_pid(c), cl->role);
	reply_status(c, req);
}

static void
handle_ack(struct ipc_conn *c, const Envelope *req)
{
	struct pm_client *cl = client_of(c);

	if (cl->awaiting != 0 && cl->awaiting == req->hb_ack->seq)
		client_acked(ipc_conn_arg(c), cl);
	ipc_reply_status(c, req, 0, NULL);
}

/* pidfd_open pins the process: a reused pid is never killed by mistake. */
static void
handle_register_writer(struct ipc_conn *c, const Envelope *req)
{
	struct pcmkd *p = ipc_conn_arg(c);
	struct pm_client *cl = client_of(c);
	pid_t pid = ipc_conn_pid(c);
	struct pm_writer *w;
	int pidfd;

	if (p->fenced) {
		ipc_reply_status(c, req, EPERM, "this node is fenced (%s)", p->fence_reason);
		return;
	}
	if (cl->writer != NULL) {
		ipc_reply_status(c, req, EEXIST, "pid %d is already registered", (int)pid);
		return;
	}
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		ipc_reply_status(c, req, errno, "pidfd_open(%d): %s", (int)pid, strerror(errno));
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->pid = pid;
	w->pidfd = pidfd;
	w->what = xstrdup(req->register_writer->what);
	w->region = xstrdup(req->register_writer->region);
	LIST_INSERT_HEAD(&p->writers, w, entry);
	cl->writer = w;
	log_info("disk writer pid %d registered (%s%s%s)", (int)pid, w->what,
	    w->region[0] ? ", region " : "", w->region);
	ipc_reply_status(c, req, 0, NULL);
}

static void
writer_free(struct pm_writer *w)
{
	LIST_REMOVE(w, entry);
	close(w->pidfd);
	free(w->what);
	free(w->region);
	free(w);
}

static void
handle_unregister_writer(struct ipc_conn *c, const Envelope *req)
{
	struct pm_client *cl = client_of(c);

	if (cl->writer == NULL) {
		ipc_reply_status(c, req, ENOENT, "pid %d is not registered", (int)ipc_conn_pid(c));
		return;
	}
	log_info("disk writer pid %d (%s) unregistered", (int)cl->writer->pid, cl->writer->what);
	writer_free(cl->writer);
	cl->writer = NULL;
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
	TAILQ_REMOVE(&p->api->clients, cl, entry);
	if (cl->writer != NULL) {
		log_info("disk writer pid %d (%s) is gone", (int)cl->writer->pid, cl->writer->what);
		writer_free(cl->writer);
	}
	if (cl->guard != NULL) {
		state_fence(p, "pid %d (%s) went away holding cluster locks",
		    (int)ipc_conn_pid(c), cl->guard);
		free(cl->guard);
	}
	if (cl->awaiting != 0 && p->api->unacked > 0 && --p->api->unacked == 0) {
		evtimer_del(p->api->ack_timer);
		/* not from inside deliver()'s ipc_send loop: later */
		event_base_once(p->base, -1, EV_TIMEOUT, deliver_later, p, NULL);
	}
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

	p->api = xcalloc(1, sizeof(*p->api));
	TAILQ_INIT(&p->api->events);
	TAILQ_INIT(&p->api->clients);
	p->api->stage = HBD__ROLE__ROLE_NET;
	if ((p->api->ack_timer = evtimer_new(p->base, ack_timeout, p)) == NULL)
		fatalx("out of memory");
	xasprintf(&path, "%s/pcmkd.sock", p->rundir);
	p->ipc = ipc_server_listen(p->base, path, "pcmkd", pcmkd_handlers,
	    nitems(pcmkd_handlers), p);
	if (p->ipc == NULL)
		fatal("cannot listen on %s", path);
	ipc_server_on_close(p->ipc, client_closed);
	free(path);
}
