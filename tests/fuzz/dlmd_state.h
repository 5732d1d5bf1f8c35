/*
 * A dlmd for the dlmd harnesses: node 1 of three live nodes, no hbd, a
 * netd played by the harness on netd.sock in the same loop (it says we
 * are node 1, takes every handler and answers every message to another
 * node with an empty reply of status 0, as a peer may), and one lock
 * domain joined by all three with node 1 as
 * its directory, made as a successful join leaves it (dlmd/domain.c),
 * in which node 1 masters resource FUZZ_RES (seeds.c names it too).
 */
#include "crc32.h"
#include "dlmd/dlmd.h"

#define FUZZ_DOMAIN	"fuzz"
#define FUZZ_RES	"Mfuzz-resource"

static struct dlmd dd;

static void
netd_status(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Netd__NetStatus st = NETD__NET_STATUS__INIT;

	st.local_node = 1;
	st.cluster = "lc";
	rep.payload_case = ENVELOPE__PAYLOAD_NET_STATUS;
	rep.net_status = &st;
	ipc_reply(c, req, &rep);
}

static void
netd_ok(struct ipc_conn *c, const Envelope *req)
{
	ipc_reply_status(c, req, 0, NULL);
}

static void
netd_send(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Netd__NetResult nr = NETD__NET_RESULT__INIT;

	nr.node = req->net_send->node;
	rep.payload_case = ENVELOPE__PAYLOAD_NET_RESULT;
	rep.net_result = &nr;
	ipc_reply(c, req, &rep);
}

static const struct ipc_handler netd_table[] = {
	{ MSG_TYPE__MSG_NETD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, netd_status },
	{ MSG_TYPE__MSG_NETD_REGISTER, ENVELOPE__PAYLOAD_NET_REGISTER, netd_ok },
	{ MSG_TYPE__MSG_NETD_UNREGISTER, ENVELOPE__PAYLOAD_NET_REGISTER, netd_ok },
	{ MSG_TYPE__MSG_NETD_SEND, ENVELOPE__PAYLOAD_NET_SEND, netd_send },
	{ MSG_TYPE__MSG_NETD_REPLY, ENVELOPE__PAYLOAD_NET_REPLY, netd_ok },
};

static void
dlmd_state_init(void)
{
	char path[256];
	int i;

	dd.rundir = fuzz_rundir();
	dd.node_name = "node1";
	dd.local_node = 1;
	dd.live[1] = dd.live[2] = dd.live[3] = 1;
	dd.cookie_seq = 1ull << 24;
	TAILQ_INIT(&dd.domains);
	if ((dd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	dlmd_handlers_init();
	snprintf(path, sizeof(path), "%s/netd.sock", dd.rundir);
	if (ipc_server_listen(dd.base, path, "netd", netd_table, nitems(netd_table),
	    NULL) == NULL)
		fatal("listen on %s", path);
	netd_link_start(&dd);
	for (i = 0; i < 100 && !dd.netd_up; i++)
		event_base_loop(dd.base, EVLOOP_NONBLOCK);
	if (!dd.netd_up)
		fatalx("dlmd did not take our netd");
}

/* Node 1 masters FUZZ_RES again, if it was purged or handed over. */
static void
dlmd_mastered(struct dlm_domain *d)
{
	struct dlm_res *r = res_get(d, (const uint8_t *)FUZZ_RES, strlen(FUZZ_RES));

	if (r->master == DLM_NODE_NONE) {
		r->master = dd.local_node;
		dir_set(d, r->name, r->namelen, dd.local_node);
	}
}

/* The joined domain; made again if the messages so far made it go. */
static struct dlm_domain *
dlmd_domain(void)
{
	struct dlm_domain *d;

	if ((d = domain_find(&dd, FUZZ_DOMAIN)) != NULL) {
		dlmd_mastered(d);
		return d;
	}
	d = domain_new(&dd, FUZZ_DOMAIN, crc32_le(0, FUZZ_DOMAIN, strlen(FUZZ_DOMAIN)));
	d->directory = 1;
	d->members[1] = d->members[2] = d->members[3] = 1;
	d->state = DS_JOINED;
	domain_purge_start(d);
	dlmd_mastered(d);
	return d;
}
