/*
 * A handler's answer to a message netd delivered (MSG_NETD_MESSAGE):
 * one MSG_NETD_REPLY with the message's handle, sent one-way, since
 * netd has nothing to tell the handler back (it logs a reply it cannot
 * match). netd carries the status and payload to the sender.
 */
#ifndef OCFS2_NETDANSWER_H
#define OCFS2_NETDANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

/* The most payload netd carries in one message or reply, either way
 * (o2net's is 4072): a client splits what may be larger. */
#define NETD_MAX_PAYLOAD	8192u

/* On an event-loop connection to netd; 0, or -1 if c is closed. */
int	netd_answer(struct ipc_conn *c, uint64_t handle, int32_t status,
	    const uint8_t *payload, size_t len);
/* On a blocking connection (ipc_sync_connect); 0, or -1 with errno. */
int	netd_answer_fd(int fd, uint64_t handle, int32_t status,
	    const uint8_t *payload, size_t len);

#endif
