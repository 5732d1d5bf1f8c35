/*
 * The writers' lease of the pcmk stack: hbd's file format
 * (common/hblease.h) in <rundir>/pcmkd.lease, so that fsd reads it as it
 * reads hbd's. An entry per heartbeat region nmd holds for a mount (the
 * volume's UUID), renewed every PM_RENEW_MS for PM_LEASE_MS while this
 * node may write: corosync answers, our partition is quorate, we are in
 * the group and not fenced. When pcmkd dies or hangs the lease runs out;
 * when quorum goes it is revoked at once. It does not replace fencing:
 * the quorate side may declare us dead (corosync's token timeout) while
 * our last renewal still runs (doc/pcmk-stack.md).
 *
 * A restarted pcmkd keeps the entries it finds, so that the writers of
 * the node go on under the same file.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "hblease.h"
#include "log.h"
#include "util.h"

#include "pcmkd.h"

static void
set_expiry(struct hblease_region *e, uint64_t us)
{
	__atomic_store_n(&e->expires_us, us, __ATOMIC_RELEASE);
}

static void
renew_tick(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	lease_renew_all(arg);
}

void
lease_open(struct pcmkd *p)
{
	struct timeval tv = { 0, PM_RENEW_MS * 1000 };
	struct hblease *l;
	int stale;

	/* pcmkd replaces a stale file without a word, as it always did. */
	l = hblease_keep(p->rundir, "pcmkd", &stale);
	/* A writer past its lease waits one more PM_LEASE_MS for a renewal. */
	l->interval_ms = PM_LEASE_MS;
	l->dead_threshold = 3;
	l->local_node = p->local_node;
	p->lease = l;
	if ((p->renew_ev = event_new(p->base, -1, EV_PERSIST, renew_tick, p)) == NULL ||
	    event_add(p->renew_ev, &tv) == -1)
		fatalx("out of memory for the lease timer");
}

/* The region's entry: the one already naming it (an earlier pcmkd's), else a free one. */
void
lease_region_add(struct pcmkd *p, struct pm_region *r)
{
	struct hblease_region *e;
	unsigned i, free_idx = CC_MAX_REGIONS;

	r->lease_idx = CC_MAX_REGIONS;
	for (i = 0; i < CC_MAX_REGIONS; i++) {
		e = &p->lease->regions[i];
		if (e->in_use && strncmp(e->name, r->name, sizeof(e->name)) == 0) {
			r->lease_idx = i;
			return;
		}
		if (!e->in_use && free_idx == CC_MAX_REGIONS)
			free_idx = i;
	}
	if (free_idx == CC_MAX_REGIONS) {
		log_warnx("region %s: no free lease entry; its writers cannot write", r->name);
		return;
	}
	e = &p->lease->regions[free_idx];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", r->name);
	__atomic_store_n(&e->in_use, 1, __ATOMIC_RELEASE);
	r->lease_idx = free_idx;
}

void
lease_region_drop(struct pcmkd *p, struct pm_region *r)
{
	struct hblease_region *e;

	if (r->lease_idx >= CC_MAX_REGIONS)
		return;
	e = &p->lease->regions[r->lease_idx];
	set_expiry(e, 0);
	__atomic_store_n(&e->in_use, 0, __ATOMIC_RELEASE);
	r->lease_idx = CC_MAX_REGIONS;
}

void
lease_renew_all(struct pcmkd *p)
{
	struct pm_region *r;
	uint64_t now = hblease_now_us();

	if (!state_writing_allowed(p))
		return;
	TAILQ_FOREACH(r, &p->regions, entry) {
		if (r->lease_idx >= CC_MAX_REGIONS)
			continue;
		p->lease->regions[r->lease_idx].issued_us = now;
		set_expiry(&p->lease->regions[r->lease_idx], now + PM_LEASE_MS * 1000ull);
	}
}

void
lease_revoke_all(struct pcmkd *p)
{
	unsigned i;

	if (p->lease == NULL)
		return;
	for (i = 0; i < CC_MAX_REGIONS; i++)
		set_expiry(&p->lease->regions[i], 0);
}

uint64_t
lease_left_ms(const struct pcmkd *p, const struct pm_region *r)
{
	uint64_t exp, now = hblease_now_us();

	if (r->lease_idx >= CC_MAX_REGIONS)
		return 0;
	exp = __atomic_load_n(&p->lease->regions[r->lease_idx].expires_us, __ATOMIC_ACQUIRE);
	return exp > now ? (exp - now) / 1000 : 0;
}
