/*
 * A node's answers to the recovery master's RECO_DATA requests: what it
 * knows of the resources a dead node mastered, in chunks that netd can
 * carry, each resource exactly once even while the node makes new ones
 * between two chunks.
 *
 * The chunks were once counted in resources (96), not bytes: with value
 * blocks and fsd's lock names that is more than netd's 8192 bytes, netd
 * refused the reply (EOVERFLOW) and the master asked again every 100 ms
 * for ever, while every lock of the domain waited for the recovery.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "crc32.h"
#include "dlmd/dlmd.h"
#include "netdanswer.h"

#define NRES	20000	/* about five to a bucket: chunks end inside them */
#define EPOCH	0x4201

static struct dlmd dd;

/* A resource mastered by node 3, dead, where we (node 2) hold an EX. */
static void
held_resource(struct dlm_domain *d, unsigned i)
{
	char name[32];
	struct dlm_res *r;
	struct dlm_lock *lk;

	snprintf(name, sizeof(name), "M%015u%015x", i, i * 2654435761u);
	r = res_get(d, (const uint8_t *)name, strlen(name));
	r->master = 3;
	lk = lock_new(r, (uint64_t)2 << 56 | i, 2);
	lk->mode = DLM_EX;
	lk->lvb_valid = 1;
	memset(lk->lvb, (int)i, sizeof(lk->lvb));
	TAILQ_INSERT_TAIL(&r->local, lk, local_entry);
}

static unsigned
name_index(const ProtobufCBinaryData *name)
{
	char digits[16] = "";

	cr_assert_eq(name->len, 31);
	memcpy(digits, name->data + 1, 15);	/* the index, before its hash */
	return (unsigned)strtoul(digits, NULL, 10);
}

Test(dlmd_recodata, chunks_fit_netd_and_report_each_resource_once)
{
	static unsigned char seen[NRES + 1000];
	Dlmwire__Msg m = DLMWIRE__MSG__INIT, *rep;
	struct dlm_domain *d;
	uint8_t buf[64], *out;
	uint64_t cursor = 0;
	unsigned i, chunks = 0, extra = 0, n_seen = 0;
	size_t n;
	int status, done = 0;

	memset(&dd, 0, sizeof(dd));
	dd.local_node = 2;
	dd.live[1] = dd.live[2] = 1;
	TAILQ_INIT(&dd.domains);
	cr_assert_not_null(dd.base = event_base_new());
	dlmd_handlers_init();
	d = domain_new(&dd, "reco", crc32_le(0, "reco", 4));
	d->members[1] = d->members[2] = 1;
	d->state = DS_JOINED;
	d->recovering = 1;
	d->reco_master = 1;
	d->reco_epoch = EPOCH;
	for (i = 0; i < NRES; i++)
		held_resource(d, i);

	while (!done) {
		m.epoch = EPOCH;
		m.cursor = cursor;
		n = dlmwire__msg__pack(&m, buf);
		n = wire_handle(d, WIRE_RECO_DATA, 1, buf, n, &out, &status);
		cr_assert_eq(status, 0);
		cr_assert_leq(n, NETD_MAX_PAYLOAD, "chunk %u: %zu bytes", chunks, n);
		rep = dlmwire__msg__unpack(NULL, n, out);
		cr_assert_not_null(rep);
		cr_assert_eq(rep->status, WS_OK);
		cr_assert(rep->n_resources > 0 || rep->done);
		for (i = 0; i < rep->n_resources; i++) {
			unsigned k = name_index(&rep->resources[i]->name);

			cr_assert_lt(k, sizeof(seen));
			cr_assert_eq(seen[k], 0, "resource %u reported twice", k);
			seen[k] = 1;
			n_seen++;
			cr_assert_eq(rep->resources[i]->n_locks, 1);
		}
		cursor = rep->cursor;
		done = rep->done;
		dlmwire__msg__free_unpacked(rep, NULL);
		free(out);
		chunks++;
		/* New resources between chunks, some in buckets half sent. */
		if (extra < 1000)
			held_resource(d, NRES + extra++);
	}
	for (i = 0; i < NRES; i++)
		cr_assert_eq(seen[i], 1, "resource %u never reported", i);
	cr_assert_gt(chunks, NRES / 100, "%u chunks for %u resources", chunks, NRES);
	cr_assert_leq(n_seen, NRES + extra);
}
