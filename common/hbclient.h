/*
 * What every subscriber of hbd's node events does: subscribe with its
 * role, and acknowledge each event (by its sequence number) once it has
 * acted on it, since hbd hands an event to the next role only then.
 */
#ifndef OCFS2_HBCLIENT_H
#define OCFS2_HBCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

/* Subscribe on c as `role`; the reply (HbStatus) goes to fn. */
void	hb_subscribe(struct ipc_conn *c, Hbd__Role role, ipc_reply_fn *fn, void *arg);
/* The sequence number hbd waits for in our ack; 0 for none. */
uint64_t hb_event_seq(const Envelope *ev);
/* Acknowledge ev if it wants it. */
void	hb_ack(struct ipc_conn *c, const Envelope *ev);
/*
 * Hand ev to its handler in table (by type; none: ignored), then ack it,
 * ignored ones included. One without its payload closes c instead, and
 * the redial subscribes afresh (ipc_event_dispatch).
 */
void	hb_dispatch(struct ipc_conn *c, const Envelope *ev, const struct ipc_handler *table,
	    size_t ntable);

#endif
