/*
 * A resource migrated to a node whose own request on it crossed the
 * MIGRATE on the wire.
 *
 * Node 1 masters the resource and leaves the domain; node 2 holds PR on
 * it and has just sent node 1 a convert to EX. If node 1 took its
 * snapshot before that convert arrived, the MIGRATE shows node 2's lock
 * at PR with the previous request number, and node 1 answers the convert
 * NOT_MASTER afterwards: node 2, now the master, must do the convert
 * itself. If node 1 had queued the convert, the snapshot shows it
 * converting with the same request number, and node 2 grants it from
 * its queues. Either way node 2 ends at EX; before, the first case left
 * it at PR with nothing pending, and the caller waited forever.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "crc32.h"
#include "dlmd/dlmd.h"

#define RES	"Mmigrate-resource"

static struct dlmd dd;
static struct dlm_member owner;

static void
setup(void)
{
	memset(&dd, 0, sizeof(dd));
	memset(&owner, 0, sizeof(owner));
	dd.local_node = 2;
	dd.live[1] = dd.live[2] = 1;
	TAILQ_INIT(&dd.domains);
	cr_assert_not_null(dd.base = event_base_new());
	dlmd_handlers_init();
}

/* Node 2's PR lock on RES, mastered by node 1, converting to EX as request 3. */
static struct dlm_lock *
converting_lock(struct dlm_domain **dp)
{
	struct dlm_domain *d = domain_new(&dd, "migrate", crc32_le(0, "migrate", 7));
	struct dlm_res *r;
	struct dlm_lock *lk;

	d->directory = 1;
	d->members[1] = d->members[2] = 1;
	d->state = DS_JOINED;
	r = res_get(d, (const uint8_t *)RES, strlen(RES));
	r->master = 1;
	lk = lock_new(r, (uint64_t)2 << 56 | 1, 2);
	lk->owner = &owner;
	TAILQ_INSERT_TAIL(&r->local, lk, local_entry);
	lk->mode = DLM_PR;
	lk->convert_mode = DLM_EX;
	lk->op = OP_CONVERT;
	lk->op_sent = 1;
	lk->op_master = 1;
	lk->op_seq = 3;
	*dp = d;
	return lk;
}

/* Node 1's MIGRATE of RES: node 2's lock granted at PR as request seq, or converting. */
static void
migrate_from_node1(struct dlm_domain *d, const struct dlm_lock *lk, uint32_t seq,
    int converting)
{
	Dlmwire__Msg m = DLMWIRE__MSG__INIT, *rep;
	Dlmwire__Resource rs = DLMWIRE__RESOURCE__INIT, *rsp = &rs;
	Dlmwire__Lock wl = DLMWIRE__LOCK__INIT, *wlp = &wl;
	int32_t from = DLM_PR;
	uint8_t buf[512], *out;
	size_t n;
	int status;

	wl.cookie = lk->cookie;
	wl.node = 2;
	wl.op_seq = seq;
	rs.name.data = (uint8_t *)RES;
	rs.name.len = strlen(RES);
	rs.master = 2;
	if (converting) {
		wl.mode = DLM_EX;
		rs.converting = &wlp;
		rs.n_converting = 1;
		rs.convert_from = &from;
		rs.n_convert_from = 1;
	} else {
		wl.mode = DLM_PR;
		rs.locks = &wlp;
		rs.n_locks = 1;
	}
	m.resources = &rsp;
	m.n_resources = 1;
	n = dlmwire__msg__pack(&m, buf);
	n = wire_handle(d, WIRE_MIGRATE, 1, buf, n, &out, &status);
	cr_assert_eq(status, 0);
	rep = dlmwire__msg__unpack(NULL, n, out);
	cr_assert_not_null(rep);
	cr_assert_eq(rep->status, WS_OK);
	dlmwire__msg__free_unpacked(rep, NULL);
	free(out);
}

Test(dlmd_migrate, convert_the_old_master_never_saw_is_done_by_the_new_one)
{
	struct dlm_domain *d;
	struct dlm_lock *lk;

	setup();
	lk = converting_lock(&d);
	migrate_from_node1(d, lk, 2, 0);
	cr_assert_eq(lk->res->master, 2);
	cr_assert_eq(lk->mode, DLM_EX, "node 2's convert to EX was lost in the migration "
	    "(mode %d, op %d)", lk->mode, lk->op);
	cr_assert_eq(lk->op, OP_NONE);
}

Test(dlmd_migrate, convert_the_old_master_queued_is_granted_from_the_queues)
{
	struct dlm_domain *d;
	struct dlm_lock *lk;

	setup();
	lk = converting_lock(&d);
	migrate_from_node1(d, lk, 3, 1);
	cr_assert_eq(lk->mode, DLM_EX, "mode %d, op %d", lk->mode, lk->op);
	cr_assert_eq(lk->op, OP_NONE);
	cr_assert_eq(lk->queue, Q_GRANTED);
}
