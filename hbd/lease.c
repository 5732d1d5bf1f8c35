/*
 * The heartbeat lease (common/hblease.h): this node's disk writers may
 * write only while its heartbeat is alive and fresh. After each of our
 * heartbeat writes completes we tell them until when they may go on:
 * one interval before the earliest moment another node could declare us
 * dead, counted from the issue of that write. Should hbd die, hang or
 * lose its disk, the lease simply runs out and they stop, before
 * anybody replays our journal. doc/heartbeat-lease.md has the argument.
 *
 * The same file lets a restarted hbd go on as the same incarnation: the
 * regions it ran, their generation and sequence, the nodes each saw
 * live. If it comes back before the others could have declared us dead
 * it resumes, and nobody notices; if not, it fences this node.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbd.h"
#include "hblease.h"
#include "log.h"
#include "util.h"

static struct hblease *lease;

/* Map <rundir>/hbd.lease, keeping what an earlier hbd left in it. */
void
lease_open(struct hbd *h)
{
	int stale;

	lease = hblease_keep(h->rundir, "hbd", &stale);
	if (stale)
		log_warnx("%s/%s: not a lease file of this version; starting afresh",
		    h->rundir, HBLEASE_FILE);
}

static struct hblease_region *
entry_of(const struct hb_region *r)
{
	return r->lease_idx < CC_MAX_REGIONS ? &lease->regions[r->lease_idx] : NULL;
}

static void
set_expiry(struct hblease_region *e, uint64_t us)
{
	__atomic_store_n(&e->expires_us, us, __ATOMIC_RELEASE);
}

/* A new region takes a free entry; nothing is promised before its first write. */
void
lease_region_add(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hblease_region *e;
	unsigned i;

	r->lease_idx = CC_MAX_REGIONS;
	if (strlen(r->dev) >= HBLEASE_DEV_MAX)
		log_warnx("region %s: device path too long to record; a restarted "
		    "hbd could not resume it", r->name);
	for (i = 0; i < CC_MAX_REGIONS; i++)
		if (!lease->regions[i].in_use)
			break;
	if (i == CC_MAX_REGIONS)
		fatalx("region %s: no free lease entry", r->name);
	e = &lease->regions[i];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", r->name);
	snprintf(e->dev, sizeof(e->dev), "%s", strlen(r->dev) < HBLEASE_DEV_MAX ? r->dev : "");
	e->block_bytes = r->block_bytes;
	e->start_block = r->start_block;
	e->blocks = r->blocks;
	e->generation = r->generation;
	lease->local_node = h->local_node;
	lease->interval_ms = h->interval_ms;
	lease->dead_threshold = h->dead_threshold;
	__atomic_store_n(&e->in_use, 1, __ATOMIC_RELEASE);
	r->lease_idx = i;
}

/*
 * Our write issued at issued_us completed at done_us; its iteration was
 * handed to the I/O thread at submitted_us. Slow storage is o2hb's
 * write timeout's business (region.c, and the negotiation when
 * everybody's storage hangs, whose reads hang too). But an iteration
 * this hbd itself only started a whole dead time after the previous
 * write completed (stopped, starved) renews nothing: the others may
 * have declared the incarnation dead, our writers have already stopped
 * and must never start again: we fence, -1.
 */
int
lease_renew(struct hb_region *r, uint64_t issued_us, uint64_t done_us,
    uint64_t submitted_us)
{
	struct hbd *h = r->hbd;
	struct hblease_region *e = entry_of(r);
	uint64_t death;

	if (e == NULL)
		return 0;
	if (e->completed_us != 0 && !r->nego_approved && submitted_us >=
	    hblease_death(e->completed_us, h->interval_ms, h->dead_threshold)) {
		fence(h, "heartbeat iteration on %s started %llu ms after the last write "
		    "completed (region %s): the other nodes may have declared this node "
		    "dead", r->dev, (unsigned long long)((submitted_us - e->completed_us) /
		    1000), r->name);
		return -1;
	}
	r->nego_approved = 0;
	e->issued_us = issued_us;
	e->completed_us = done_us;
	e->seq = r->written.seq;
	e->generation = r->written.generation;
	if (e->next_generation == e->generation)
		e->next_generation = 0;
	death = hblease_death(issued_us, h->interval_ms, h->dead_threshold);
	set_expiry(e, death - hblease_margin_us(h->interval_ms, h->dead_threshold));
	return 0;
}

/* Microseconds the writers may still go on, 0 when they may not. */
uint64_t
lease_left_us(const struct hb_region *r)
{
	const struct hblease_region *e = entry_of(r);
	uint64_t now = hblease_now_us();

	return e != NULL && e->expires_us > now ? e->expires_us - now : 0;
}

void
lease_set_live(struct hb_region *r, unsigned node, uint64_t gen)
{
	struct hblease_region *e = entry_of(r);

	if (e != NULL && node < HBLEASE_MAX_NODES)
		e->live_gen[node] = gen;
}

/* The region is gone: its writers' lease ends now. */
void
lease_region_drop(struct hb_region *r)
{
	struct hblease_region *e = entry_of(r);

	if (e == NULL)
		return;
	set_expiry(e, 0);
	__atomic_store_n(&e->in_use, 0, __ATOMIC_RELEASE);
	r->lease_idx = CC_MAX_REGIONS;
}

/* Fencing: every writer's lease ends now, before anything else happens. */
void
lease_revoke_all(void)
{
	unsigned i;

	if (lease == NULL)
		return;
	for (i = 0; i < CC_MAX_REGIONS; i++)
		set_expiry(&lease->regions[i], 0);
}

/*
 * The region switches to a new generation (fence_reincarnate): recorded
 * before its first write, so that an hbd killed before that write never
 * resumes the old one.
 */
void
lease_next_generation(struct hb_region *r)
{
	struct hblease_region *e = entry_of(r);

	if (e != NULL)
		e->next_generation = r->generation;
}

/* The holders the last whole table records; returns how many. */
unsigned
lease_holders(struct hblease_holder *tab, unsigned max)
{
	const struct hblease_holder *cur;
	unsigned i, n = 0;

	if (lease == NULL)
		return 0;
	cur = lease->holders[__atomic_load_n(&lease->holders_cur, __ATOMIC_ACQUIRE) & 1];
	for (i = 0; i < HBLEASE_MAX_HOLDERS && n < max; i++)
		if (cur[i].pid > 0)
			tab[n++] = cur[i];
	return n;
}

/* Written whole into the table not in use, then switched to. */
static void
save_holders(struct hbd *h)
{
	struct hblease_holder tab[HBLEASE_MAX_HOLDERS];
	unsigned n = 0, next;

	if (lease == NULL)
		return;		/* no lease file (hbd's fuzz harness) */
	memset(tab, 0, sizeof(tab));
	api_holders_fill(h, tab, HBLEASE_MAX_HOLDERS, &n);
	holders_fill(h, tab, HBLEASE_MAX_HOLDERS, &n);
	if (n == HBLEASE_MAX_HOLDERS)
		log_warnx("%d writers and lock holders or more: a restarted hbd may "
		    "not know them all", HBLEASE_MAX_HOLDERS);
	next = (__atomic_load_n(&lease->holders_cur, __ATOMIC_ACQUIRE) + 1) & 1;
	memcpy(lease->holders[next], tab, sizeof(tab));
	__atomic_store_n(&lease->holders_cur, next, __ATOMIC_RELEASE);
}

/*
 * At start, before anyone is served: the regions an earlier hbd left
 * running. In time, each resumes with the membership it had (the
 * subscribers that reconnect must not see the others die): as the same
 * incarnation if everything it depended on is still there (holders.c),
 * else as a new one, its writers killed first, so that the others
 * recover the locks that died; too late, the others may have recovered
 * us: fence.
 */
void
lease_restore(struct hbd *h)
{
	struct hblease_region *e;
	struct hb_region *r;
	uint64_t now = hblease_now_us(), death;
	unsigned i, n;
	char why[256] = "";
	int lost = 0;

	if (!h->fenced)
		lost = holders_restore(h, why, sizeof(why));
	for (i = 0; i < CC_MAX_REGIONS; i++) {
		e = &lease->regions[i];
		if (!e->in_use)
			continue;
		if (h->fenced || e->issued_us == 0 || e->dev[0] == '\0') {
			lease_revoke_all();
			memset(e, 0, sizeof(*e));
			continue;
		}
		death = hblease_death(e->issued_us, lease->interval_ms, lease->dead_threshold);
		if (now >= death && !e->used) {
			log_info("region %s: hbd was away for %llu ms, but nobody depended on "
			    "it: starting afresh", e->name,
			    (unsigned long long)((now - e->issued_us) / 1000));
			memset(e, 0, sizeof(*e));
			continue;
		}
		if (now >= death) {
			h->local_node = lease->local_node;
			fence(h, "hbd was away for %llu ms while region %s was live: the "
			    "other nodes may have declared this node dead",
			    (unsigned long long)((now - e->issued_us) / 1000), e->name);
			memset(e, 0, sizeof(*e));
			continue;
		}
		h->local_node = lease->local_node;
		h->interval_ms = lease->interval_ms;
		h->dead_threshold = lease->dead_threshold;
		log_warnx("region %s: resuming generation 0x%llx, %llu ms after its last "
		    "heartbeat (the others declare us dead after %llu)", e->name,
		    (unsigned long long)e->generation,
		    (unsigned long long)((now - e->issued_us) / 1000),
		    (unsigned long long)((death - e->issued_us) / 1000));
		if (e->next_generation != 0 && !lost) {
			snprintf(why, sizeof(why), "the earlier hbd was ending the "
			    "incarnation of region %s", e->name);
			lost = 1;
		}
		r = region_resume(h, e, i);
		if (r->state == RS_FAILED)
			continue;
		for (n = 0; n < HBLEASE_MAX_NODES && n < HB_MAX_NODES; n++)
			if (e->live_gen[n] != 0 && n != h->local_node)
				region_restore_live(r, n, e->live_gen[n]);
	}
	if (lost && region_nrunning(h) > 0)
		fence_reincarnate(h, why);
	save_holders(h);
}

/*
 * Whether each region has users, and who they are, for a restarted hbd to
 * know if it must fence, or end the incarnation.
 */
void
lease_note_users(struct hbd *h)
{
	struct hblease_region *e;
	struct hb_region *r;
	char who[256];

	TAILQ_FOREACH(r, &h->regions, entry)
		if ((e = entry_of(r)) != NULL)
			e->used = api_region_users(h, r->name, who, sizeof(who)) != 0;
	save_holders(h);
}

/*
 * Every live node's heartbeat write hangs and the negotiation says so
 * (nego.c): their reads hang with them, so nobody counts samples and
 * nobody can declare us dead; the clock of the death verdict starts
 * again now, as o2hb re-arms its write timeout, and the write in flight
 * renews when it completes, however late (the write timeout, re-armed
 * by the negotiation, is what fences then, as in o2hb).
 */
void
lease_approved(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hblease_region *e = entry_of(r);
	uint64_t now = hblease_now_us(), death;

	if (e == NULL || e->issued_us == 0)
		return;
	r->nego_approved = 1;
	e->issued_us = now;
	death = hblease_death(now, h->interval_ms, h->dead_threshold);
	set_expiry(e, death - hblease_margin_us(h->interval_ms, h->dead_threshold));
}
