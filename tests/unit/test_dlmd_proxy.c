/*
 * Messages between nodes that netd could not carry at once, and their
 * resends.
 *
 * A grant that must reach another node as a PROXY_AST while netd is
 * away is sent again later, not at once: an immediate resend failed at
 * once too, in the same pass of the event loop, which never came back
 * to epoll or its timers (not even to reconnect to netd): dlmd hung.
 * fuzz_dlmd_wire found it. Node 1 masters
 * a resource in a domain with nodes 2 and 3, live and members; node 2's
 * EX is unlocked, node 3's waiting EX is granted, and its PROXY_AST
 * fails with ENOTCONN. The loop then runs for 200 ms: it must come back
 * (the test's timeout) and wait between resends, not spin on them.
 *
 * A resend may arrive late, after the request that followed it: a
 * downconvert sent again after its reply was lost, or a grant's
 * PROXY_AST whose reply netd lost while the requester went on to its
 * next convert. Taken as new, the first hands out a second EX on the
 * master, the second makes the requester believe in an EX it does not
 * hold. The request numbers (op_seq) tell them apart.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "crc32.h"
#include "dlmd/dlmd.h"

#define RES	"Mproxy-resource"

static struct dlmd dd;

static struct dlm_domain *
proxy_domain(void)
{
	struct dlm_domain *d = domain_new(&dd, "proxy", crc32_le(0, "proxy", 5));
	struct dlm_res *r;

	d->directory = 1;
	d->members[1] = d->members[2] = d->members[3] = 1;
	d->state = DS_JOINED;
	r = res_get(d, (const uint8_t *)RES, strlen(RES));
	r->master = 1;
	return d;
}

/* A message from `node` about its lock on RES, its request number seq; the reply's status. */
static int
from_node_seq(struct dlm_domain *d, enum wire_type type, unsigned node, int mode,
    uint32_t seq)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT, *rep;
	uint8_t buf[256], *out;
	size_t n;
	int status, ws;

	m.node = node;
	m.name.data = (uint8_t *)RES;
	m.name.len = strlen(RES);
	m.cookie = (uint64_t)node << 56 | 1;
	m.mode = mode;
	m.op_seq = seq;
	n = dlmwire__msg__pack(&m, buf);
	n = wire_handle(d, type, node, buf, n, &out, &status);
	cr_assert_eq(status, 0);
	rep = dlmwire__msg__unpack(NULL, n, out);
	cr_assert_not_null(rep);
	ws = rep->status;
	dlmwire__msg__free_unpacked(rep, NULL);
	free(out);
	return ws;
}

static int
from_node(struct dlm_domain *d, enum wire_type type, unsigned node, int mode)
{
	return from_node_seq(d, type, node, mode, 0);
}

static void
setup(void)
{
	memset(&dd, 0, sizeof(dd));
	dd.local_node = 1;
	dd.live[1] = dd.live[2] = dd.live[3] = 1;
	TAILQ_INIT(&dd.domains);
	cr_assert_not_null(dd.base = event_base_new());
	dlmd_handlers_init();
}

static uint64_t
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

Test(dlmd_proxy, resent_later_without_netd, .timeout = 10)
{
	struct timeval run = { 0, 200000 };
	struct dlm_domain *d;
	uint64_t cpu;

	setup();
	d = proxy_domain();

	cr_assert_eq(from_node(d, WIRE_CREATE_LOCK, 2, DLM_EX), WS_GRANTED);
	cr_assert_eq(from_node(d, WIRE_CREATE_LOCK, 3, DLM_EX), WS_QUEUED);
	cr_assert_eq(from_node(d, WIRE_UNLOCK_LOCK, 2, DLM_NL), WS_OK);

	cpu = cpu_ms();
	event_base_loopexit(dd.base, &run);
	event_base_dispatch(dd.base);
	cpu = cpu_ms() - cpu;
	cr_expect_lt(cpu, 100, "%llu ms of CPU in 200 ms of loop: the PROXY_AST "
	    "is resent without a pause", (unsigned long long)cpu);
}

/* On the master: node 2's downconvert #2, sent again, arrives after its upconvert #3. */
Test(dlmd_proxy, late_downconvert_changes_nothing)
{
	struct dlm_domain *d;

	setup();
	d = proxy_domain();
	cr_assert_eq(from_node_seq(d, WIRE_CREATE_LOCK, 2, DLM_EX, 1), WS_GRANTED);
	cr_assert_eq(from_node_seq(d, WIRE_CONVERT_LOCK, 2, DLM_NL, 2), WS_GRANTED);
	cr_assert_eq(from_node_seq(d, WIRE_CONVERT_LOCK, 2, DLM_EX, 3), WS_GRANTED);
	cr_assert_eq(from_node_seq(d, WIRE_CONVERT_LOCK, 2, DLM_NL, 2), WS_BUSY);
	cr_assert_eq(from_node_seq(d, WIRE_CREATE_LOCK, 3, DLM_EX, 1), WS_QUEUED,
	    "node 3 got EX while node 2 holds it");
	/* The same request again is a duplicate, answered as the first was. */
	cr_assert_eq(from_node_seq(d, WIRE_CONVERT_LOCK, 2, DLM_EX, 3), WS_GRANTED);
}

/* On the requester: the AST of its convert #2 reaches it during its convert #3. */
Test(dlmd_proxy, late_ast_is_not_the_next_grant)
{
	struct dlm_member owner = { 0 };
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct dlm_domain *d;
	struct dlm_res *r;
	struct dlm_lock *lk;
	uint8_t buf[256], *out;
	size_t n;
	int status;

	setup();
	dd.local_node = 2;
	d = proxy_domain();
	r = res_get(d, (const uint8_t *)RES, strlen(RES));
	lk = lock_new(r, (uint64_t)2 << 56 | 1, 2);
	lk->owner = &owner;
	lk->mode = DLM_NL;
	lk->convert_mode = DLM_EX;
	lk->op = OP_CONVERT;
	lk->op_sent = 1;
	lk->op_seq = 3;

	m.node = 1;
	m.name.data = (uint8_t *)RES;
	m.name.len = strlen(RES);
	m.cookie = lk->cookie;
	m.kind = 0;
	m.status = 0;
	m.mode = DLM_EX;
	m.op_seq = 2;
	n = dlmwire__msg__pack(&m, buf);
	wire_handle(d, WIRE_PROXY_AST, 1, buf, n, &out, &status);
	free(out);
	cr_assert_eq(status, 0);
	cr_assert_eq(lk->op, OP_CONVERT, "an AST of request 2 granted request 3");
	cr_assert_eq(lk->mode, DLM_NL);

	m.op_seq = 3;
	n = dlmwire__msg__pack(&m, buf);
	wire_handle(d, WIRE_PROXY_AST, 1, buf, n, &out, &status);
	free(out);
	cr_assert_eq(lk->op, OP_NONE);
	cr_assert_eq(lk->mode, DLM_EX);
}
