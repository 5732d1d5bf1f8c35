/*
 * Ordered events delivered to subscribers by role, with acks (see
 * subscribers.h for the order and why).
 */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "subscribers.h"
#include "util.h"

#define ROLE_MAX	HBD__ROLE__ROLE_FS

struct sub_event {
	TAILQ_ENTRY(sub_event)	 entry;
	uint64_t		 seq;
	Envelope		 env;
	Hbd__NodeEvent		 node;
	Hbd__RegionEvent	 region;
	Hbd__FencedEvent	 fenced;
	Hbd__UnfencedEvent	 unfenced;
	char			*s1, *s2;	/* owned strings */
};

static void
event_free_one(struct sub_event *e)
{
	free(e->s1);
	free(e->s2);
	free(e);
}

/*
 * Move the head event along: to the next role that has subscribers, or
 * off the queue when every role has it. Stops while acks are awaited.
 */
static void
deliver(struct subscribers *s)
{
	struct timeval tv = { s->ack_timeout_ms / 1000, (s->ack_timeout_ms % 1000) * 1000 };
	struct sub_event *e;
	struct sub_client *cl, *next;

	while ((e = TAILQ_FIRST(&s->events)) != NULL) {
		if (s->unacked > 0)
			return;
		for (; s->stage <= ROLE_MAX; s->stage++) {
			for (cl = TAILQ_FIRST(&s->clients); cl != NULL; cl = next) {
				next = TAILQ_NEXT(cl, entry);
				if (!cl->subscribed || cl->role != s->stage ||
				    cl->since_seq > e->seq)
					continue;
				cl->awaiting = e->seq;
				s->unacked++;
				ipc_send(cl->conn, &e->env);	/* may close it */
			}
			if (s->unacked > 0) {
				s->stage++;
				evtimer_add(s->ack_timer, &tv);
				return;
			}
		}
		TAILQ_REMOVE(&s->events, e, entry);
		event_free_one(e);
		s->stage = HBD__ROLE__ROLE_NET;
	}
}

static void
ack_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct subscribers *s = arg;
	struct sub_client *cl;

	(void)fd;
	(void)ev;
	TAILQ_FOREACH(cl, &s->clients, entry) {
		if (cl->awaiting == 0)
			continue;
		log_warnx("subscriber pid %d (role %d) did not ack event %llu within "
		    "%u ms; passing it on", (int)ipc_conn_pid(cl->conn), cl->role,
		    (unsigned long long)cl->awaiting, s->ack_timeout_ms);
		cl->awaiting = 0;
	}
	s->unacked = 0;
	deliver(s);
}

static void
deliver_later(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	deliver(arg);
}

static void
client_acked(struct subscribers *s, struct sub_client *cl)
{
	cl->awaiting = 0;
	if (s->unacked > 0 && --s->unacked == 0) {
		evtimer_del(s->ack_timer);
		deliver(s);
	}
}

void
subs_init(struct subscribers *s, struct event_base *base, unsigned ack_timeout_ms)
{
	TAILQ_INIT(&s->events);
	TAILQ_INIT(&s->clients);
	s->next_seq = 0;
	s->stage = HBD__ROLE__ROLE_NET;
	s->unacked = 0;
	s->ack_timeout_ms = ack_timeout_ms;
	s->base = base;
	if ((s->ack_timer = evtimer_new(base, ack_timeout, s)) == NULL)
		fatalx("out of memory");
}

struct sub_client *
subs_client_of(struct subscribers *s, struct ipc_conn *c, size_t size)
{
	struct sub_client *cl = ipc_conn_data(c);

	if (cl == NULL) {
		cl = xcalloc(1, size);
		cl->conn = c;
		ipc_conn_set_data(c, cl);
		TAILQ_INSERT_TAIL(&s->clients, cl, entry);
	}
	return cl;
}

void
subs_client_remove(struct subscribers *s, struct sub_client *cl)
{
	TAILQ_REMOVE(&s->clients, cl, entry);
}

void
subs_client_drop_ack(struct subscribers *s, struct sub_client *cl)
{
	if (cl->awaiting != 0 && s->unacked > 0 && --s->unacked == 0) {
		evtimer_del(s->ack_timer);
		/* Not from inside ipc_send's loop in deliver(): later. */
		event_base_once(s->base, -1, EV_TIMEOUT, deliver_later, s, NULL);
	}
}

int
subs_subscribe(struct subscribers *s, struct sub_client *cl, const Envelope *req)
{
	if ((int)req->hb_subscribe->role < HBD__ROLE__ROLE_OBSERVER ||
	    req->hb_subscribe->role > ROLE_MAX) {
		ipc_reply_status(cl->conn, req, EINVAL, "unknown role %d",
		    (int)req->hb_subscribe->role);
		return -1;
	}
	if (cl->subscribed && cl->awaiting != 0)
		client_acked(s, cl);
	cl->subscribed = 1;
	cl->role = req->hb_subscribe->role;
	cl->since_seq = s->next_seq + 1;
	log_debug("pid %d subscribed as role %d", (int)ipc_conn_pid(cl->conn), cl->role);
	return 0;
}

void
subs_ack(struct subscribers *s, struct sub_client *cl, uint64_t seq)
{
	if (cl->awaiting != 0 && cl->awaiting == seq)
		client_acked(s, cl);
}

static struct sub_event *
event_new_seq(struct subscribers *s)
{
	struct sub_event *e = xcalloc(1, sizeof(*e));

	envelope__init(&e->env);
	e->seq = ++s->next_seq;
	e->env.kind = KIND__KIND_EVENT;
	return e;
}

/* Observers first, at once; then the head of the queue moves on if it is e. */
static void
enqueue(struct subscribers *s, struct sub_event *e)
{
	struct sub_client *cl, *next;

	for (cl = TAILQ_FIRST(&s->clients); cl != NULL; cl = next) {
		next = TAILQ_NEXT(cl, entry);
		if (cl->subscribed && cl->role == HBD__ROLE__ROLE_OBSERVER)
			ipc_send(cl->conn, &e->env);
	}
	TAILQ_INSERT_TAIL(&s->events, e, entry);
	if (TAILQ_FIRST(&s->events) == e)
		deliver(s);
}

void
subs_node_event(struct subscribers *s, int up, unsigned node, uint64_t gen,
    const char *region, const char *reason, uint64_t time_ms, uint64_t last_change_ms)
{
	struct sub_event *e = event_new_seq(s);

	hbd__node_event__init(&e->node);
	e->node.seq = e->seq;
	e->node.kind = up ? HBD__NODE_EVENT_KIND__NODE_UP : HBD__NODE_EVENT_KIND__NODE_DOWN;
	e->node.node = node;
	e->node.generation = gen;
	e->node.region = e->s1 = xstrdup(region);
	e->node.reason = e->s2 = xstrdup(reason);
	e->node.time_ms = time_ms;
	e->node.last_change_ms = last_change_ms;
	e->env.type = MSG_TYPE__MSG_HBD_NODE_EVENT;
	e->env.payload_case = ENVELOPE__PAYLOAD_NODE_EVENT;
	e->env.node_event = &e->node;
	enqueue(s, e);
}

void
subs_region_event(struct subscribers *s, Hbd__RegionEventKind kind, const char *region,
    const char *reason, uint64_t time_ms)
{
	struct sub_event *e = event_new_seq(s);

	hbd__region_event__init(&e->region);
	e->region.seq = e->seq;
	e->region.kind = kind;
	e->region.region = e->s1 = xstrdup(region);
	e->region.reason = e->s2 = xstrdup(reason);
	e->region.time_ms = time_ms;
	e->env.type = MSG_TYPE__MSG_HBD_REGION_EVENT;
	e->env.payload_case = ENVELOPE__PAYLOAD_REGION_EVENT;
	e->env.region_event = &e->region;
	enqueue(s, e);
}

void
subs_fenced_event(struct subscribers *s, const char *reason, const char *method,
    uint64_t time_ms)
{
	struct sub_event *e = event_new_seq(s);

	hbd__fenced_event__init(&e->fenced);
	e->fenced.seq = e->seq;
	e->fenced.reason = e->s1 = xstrdup(reason);
	e->fenced.method = e->s2 = xstrdup(method);
	e->fenced.time_ms = time_ms;
	e->env.type = MSG_TYPE__MSG_HBD_FENCED;
	e->env.payload_case = ENVELOPE__PAYLOAD_FENCED_EVENT;
	e->env.fenced_event = &e->fenced;
	enqueue(s, e);
}

void
subs_unfenced_event(struct subscribers *s, const char *reason, uint64_t time_ms)
{
	struct sub_event *e = event_new_seq(s);

	hbd__unfenced_event__init(&e->unfenced);
	e->unfenced.seq = e->seq;
	e->unfenced.reason = e->s1 = xstrdup(reason);
	e->unfenced.time_ms = time_ms;
	e->env.type = MSG_TYPE__MSG_HBD_UNFENCED;
	e->env.payload_case = ENVELOPE__PAYLOAD_UNFENCED_EVENT;
	e->env.unfenced_event = &e->unfenced;
	enqueue(s, e);
}
