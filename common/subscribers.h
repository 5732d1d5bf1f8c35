/*
 * Ordered events delivered to subscribers by role, with acks: the event
 * half of hbd's local protocol (proto/hbd.proto), served alike by hbd
 * and by pcmkd.
 *
 * Events go out strictly in the order they were decided. Each one is
 * given to every subscriber of the lowest role (net), and only when all
 * of them have acked it (or the ack timeout passed, which is logged) to
 * the next role (dlm), then fs: o2hb calls its callbacks in priority
 * order, net before dlm, so that dlm never hears of a node net does not
 * know about yet. Observers (o2ctl hbwatch) get each event at once and
 * never ack.
 *
 * A daemon's client record starts with a struct sub_client, so that the
 * daemon keeps its own per-client state (writers, guards) beside it.
 */
#ifndef OCFS2_SUBSCRIBERS_H
#define OCFS2_SUBSCRIBERS_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "ipc.h"

struct sub_event;

struct sub_client {
	TAILQ_ENTRY(sub_client)	 entry;
	struct ipc_conn		*conn;
	int			 subscribed;
	Hbd__Role		 role;
	uint64_t		 since_seq;	/* first event it gets */
	uint64_t		 awaiting;	/* event it has to ack, 0 none */
};

struct subscribers {
	TAILQ_HEAD(, sub_event)	 events;	/* head: being delivered */
	TAILQ_HEAD(, sub_client) clients;
	uint64_t		 next_seq;
	Hbd__Role		 stage;		/* role the head waits for */
	unsigned		 unacked;
	unsigned		 ack_timeout_ms;
	struct event_base	*base;
	struct event		*ack_timer;
};

void	subs_init(struct subscribers *, struct event_base *, unsigned ack_timeout_ms);

/* c's record (size bytes, a struct sub_client first), made on first use. */
struct sub_client *subs_client_of(struct subscribers *, struct ipc_conn *c, size_t size);
/* c closed: off the list first, then (its own goodbyes done) its ack given up. */
void	subs_client_remove(struct subscribers *, struct sub_client *);
void	subs_client_drop_ack(struct subscribers *, struct sub_client *);

/*
 * MSG_HBD_SUBSCRIBE: 0 when sc now gets the events after this point (the
 * caller replies with its status); -1 when refused, and answered.
 */
int	subs_subscribe(struct subscribers *, struct sub_client *, const Envelope *req);
/* MSG_HBD_EVENT_ACK for seq (not answered here). */
void	subs_ack(struct subscribers *, struct sub_client *, uint64_t seq);

/* Queue an event for every subscriber; strings are copied. */
void	subs_node_event(struct subscribers *, int up, unsigned node, uint64_t gen,
	    const char *region, const char *reason, uint64_t time_ms,
	    uint64_t last_change_ms);
void	subs_region_event(struct subscribers *, Hbd__RegionEventKind, const char *region,
	    const char *reason, uint64_t time_ms);
void	subs_fenced_event(struct subscribers *, const char *reason, const char *method,
	    uint64_t time_ms);
void	subs_unfenced_event(struct subscribers *, const char *reason, uint64_t time_ms);

#endif
