#include <errno.h>
#include <string.h>

#include "hbclient.h"
#include "log.h"

void
hb_subscribe(struct ipc_conn *c, Hbd__Role role, ipc_reply_fn *fn, void *arg)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;

	sub.role = role;
	req.type = MSG_TYPE__MSG_HBD_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_HB_SUBSCRIBE;
	req.hb_subscribe = &sub;
	if (ipc_request(c, &req, fn, arg) == -1)
		log_warnx("hbd: cannot subscribe: %s", strerror(errno));
}

uint64_t
hb_event_seq(const Envelope *ev)
{
	switch (ev->payload_case) {
	case ENVELOPE__PAYLOAD_NODE_EVENT: return ev->node_event->seq;
	case ENVELOPE__PAYLOAD_REGION_EVENT: return ev->region_event->seq;
	case ENVELOPE__PAYLOAD_FENCED_EVENT: return ev->fenced_event->seq;
	case ENVELOPE__PAYLOAD_UNFENCED_EVENT: return ev->unfenced_event->seq;
	default: return 0;
	}
}

static void
on_acked(const Envelope *rep, void *arg)
{
	(void)arg;
	if (rep != NULL && rep->status != 0)
		log_warnx("hbd refused our acknowledgement: %s", rep->error);
}

void
hb_ack(struct ipc_conn *c, const Envelope *ev)
{
	Envelope req = ENVELOPE__INIT;
	Hbd__HbAck a = HBD__HB_ACK__INIT;

	if (c == NULL || (a.seq = hb_event_seq(ev)) == 0)
		return;
	req.type = MSG_TYPE__MSG_HBD_EVENT_ACK;
	req.payload_case = ENVELOPE__PAYLOAD_HB_ACK;
	req.hb_ack = &a;
	ipc_request(c, &req, on_acked, NULL);
}

void
hb_dispatch(struct ipc_conn *c, const Envelope *ev, const struct ipc_handler *table,
    size_t ntable)
{
	if (ipc_event_dispatch(c, ev, table, ntable, "hbd") != -1)
		hb_ack(c, ev);
}
