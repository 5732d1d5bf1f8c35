#include "netdanswer.h"

static void
answer_fill(Envelope *env, Netd__NetReply *nr, uint64_t handle, int32_t status,
    const uint8_t *payload, size_t len)
{
	nr->handle = handle;
	nr->status = status;
	nr->payload.data = (uint8_t *)payload;
	nr->payload.len = len;
	env->type = MSG_TYPE__MSG_NETD_REPLY;
	env->payload_case = ENVELOPE__PAYLOAD_NET_REPLY;
	env->net_reply = nr;
}

int
netd_answer(struct ipc_conn *c, uint64_t handle, int32_t status,
    const uint8_t *payload, size_t len)
{
	Envelope env = ENVELOPE__INIT;
	Netd__NetReply nr = NETD__NET_REPLY__INIT;

	answer_fill(&env, &nr, handle, status, payload, len);
	return ipc_request(c, &env, NULL, NULL);
}

int
netd_answer_fd(int fd, uint64_t handle, int32_t status,
    const uint8_t *payload, size_t len)
{
	Envelope env = ENVELOPE__INIT;
	Netd__NetReply nr = NETD__NET_REPLY__INIT;

	answer_fill(&env, &nr, handle, status, payload, len);
	env.kind = KIND__KIND_ONE_WAY;
	return ipc_sync_send(fd, &env);
}
