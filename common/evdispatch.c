/*
 * A client's events, dispatched as a server's requests are: by a table
 * keyed by message type, each entry naming the payload it needs.
 */
#include "ipc.h"
#include "log.h"

int
ipc_event_dispatch(struct ipc_conn *c, const Envelope *ev,
    const struct ipc_handler *table, size_t ntable, const char *from)
{
	size_t i;

	for (i = 0; i < ntable; i++) {
		if (table[i].type != ev->type)
			continue;
		if (table[i].payload != ENVELOPE__PAYLOAD__NOT_SET &&
		    ev->payload_case != table[i].payload) {
			log_warnx("%s sent event %d without its payload; "
			    "reconnecting", from, ev->type);
			ipc_conn_close(c);
			return -1;
		}
		table[i].fn(c, ev);
		return 1;
	}
	return 0;
}
