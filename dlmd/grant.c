/*
 * o2dlm's granting rules, on a resource this node masters.
 *
 * Three queues: granted, converting (granted locks asking for another
 * mode) and blocked (new locks). A down-convert is granted in place. An
 * up-convert is granted at once when it is compatible with every other
 * granted lock and with every converting lock's current and wanted
 * modes; converts go before new locks, FIFO within each queue.
 *
 * Where we differ from o2dlm, it is to bound a waiting lock's wait: o2dlm
 * lets a new PR pass a blocked EX, and a cached NL lock up-convert to PR
 * past it, so readers that overlap starve the EX for as long as they
 * keep coming. Here a new lock (but NL) waits behind the blocked ones,
 * and an up-convert asked after the blocked head that does not stand in
 * its way now (its current mode is compatible) but would (its wanted
 * mode is not) defers to it: it waits, and the head is judged without
 * its wanted mode. A convert that already stands in the way (PR->EX against a
 * blocked EX) still goes first, or the two would wait for each other.
 *
 * Each lock that stands in the way of the head of a queue gets one BAST
 * per blocking episode, naming the strongest mode blocked by it.
 * Deliveries go through grant_hooks, which queue them: nothing here
 * sends anything.
 */
#include <errno.h>
#include <string.h>

#include "dlmd.h"

struct grant_hooks grant_hooks;
static uint64_t request_seq;	/* orders waiting requests across both queues */

int
dlm_mode_valid(int mode)
{
	return mode == DLM_NL || mode == DLM_PR || mode == DLM_EX;
}

/* The matrix of dlmapi.h for the three supported modes. */
int
dlm_compatible(int held, int wanted)
{
	if (held == DLM_IV || held == DLM_NL || wanted == DLM_NL)
		return 1;
	return held == DLM_PR && wanted == DLM_PR;
}

static void
queue_move(struct dlm_res *res, struct dlm_lock *lk, enum lock_queue q)
{
	if (lk->queue != Q_NONE)
		TAILQ_REMOVE(&res->queue[lk->queue], lk, q_entry);
	lk->queue = q;
	if (q != Q_NONE)
		TAILQ_INSERT_TAIL(&res->queue[q], lk, q_entry);
	if (q == Q_CONVERTING || q == Q_BLOCKED)
		lk->request_seq = ++request_seq;
}

/*
 * Does convert c (to `want`) wait for the blocked head, which asked
 * before it, rather than pass it? A convert not queued yet asks now.
 */
static int
defers(struct dlm_res *res, const struct dlm_lock *c, int want)
{
	struct dlm_lock *head = TAILQ_FIRST(&res->queue[Q_BLOCKED]);

	return head != NULL && (c->queue != Q_CONVERTING ||
	    head->request_seq < c->request_seq) &&
	    dlm_compatible(c->mode, head->convert_mode) &&
	    !dlm_compatible(want, head->convert_mode);
}

/*
 * Compatible with every other granted lock and every converting one:
 * with its wanted mode too, unless lk heads the converting queue (it
 * goes first; the others wait behind it holding their current mode) or
 * that convert defers to lk, the blocked head.
 */
static int
grantable(struct dlm_res *res, struct dlm_lock *lk, int mode, int targets)
{
	struct dlm_lock *o;
	int head = lk == TAILQ_FIRST(&res->queue[Q_BLOCKED]);

	TAILQ_FOREACH(o, &res->queue[Q_GRANTED], q_entry)
		if (o != lk && !dlm_compatible(o->mode, mode))
			return 0;
	TAILQ_FOREACH(o, &res->queue[Q_CONVERTING], q_entry) {
		if (o == lk)
			continue;
		if (!dlm_compatible(o->mode, mode))
			return 0;
		if (targets && !dlm_compatible(o->convert_mode, mode) &&
		    !(head && defers(res, o, o->convert_mode)))
			return 0;
	}
	return 1;
}

static void
grant(struct dlm_res *res, struct dlm_lock *lk, int mode)
{
	lk->mode = mode;
	lk->convert_mode = DLM_IV;
	lk->highest_blocked = DLM_IV;
	queue_move(res, lk, Q_GRANTED);
	if ((lk->flags & DLM_FL_VALBLK) && mode >= DLM_PR) {
		memcpy(lk->lvb, res->lvb, DLM_LVB_LEN);
		lk->lvb_version = res->lvb_version;
		lk->lvb_valid = res->lvb_valid;
	}
	if (grant_hooks.ast != NULL)
		grant_hooks.ast(lk, 0);
}

/* An EX holder leaving EX with VALBLK writes the value block. */
static void
lvb_put(struct dlm_res *res, struct dlm_lock *lk, uint32_t flags, const uint8_t *lvb)
{
	if (lvb == NULL || !(flags & DLM_FL_VALBLK) || lk->mode != DLM_EX)
		return;
	memcpy(res->lvb, lvb, DLM_LVB_LEN);
	res->lvb_version++;
	res->lvb_valid = 1;
}

int
grant_new(struct dlm_res *res, struct dlm_lock *lk, uint32_t flags, int mode)
{
	lk->flags = flags;
	lk->mode = DLM_IV;
	lk->convert_mode = mode;
	lk->queue = Q_NONE;
	if ((mode == DLM_NL || TAILQ_EMPTY(&res->queue[Q_BLOCKED])) &&
	    grantable(res, lk, mode, 1)) {
		grant(res, lk, mode);
		return WS_GRANTED;
	}
	if (flags & DLM_FL_NOQUEUE) {
		lk->convert_mode = DLM_IV;
		return WS_NOTQUEUED;
	}
	queue_move(res, lk, Q_BLOCKED);
	grant_shuffle(res);
	return lk->queue == Q_GRANTED ? WS_GRANTED : WS_QUEUED;
}

int
grant_convert(struct dlm_res *res, struct dlm_lock *lk, uint32_t flags, int mode,
    const uint8_t *lvb)
{
	if (lk->queue != Q_GRANTED)
		return WS_BUSY;
	lk->flags = flags;
	if (mode <= lk->mode) {
		lvb_put(res, lk, flags, lvb);
		grant(res, lk, mode);
		grant_shuffle(res);
		return WS_GRANTED;
	}
	if (!defers(res, lk, mode) && grantable(res, lk, mode, 1)) {
		grant(res, lk, mode);
		return WS_GRANTED;
	}
	if (flags & DLM_FL_NOQUEUE)
		return WS_NOTQUEUED;
	lk->convert_mode = mode;
	queue_move(res, lk, Q_CONVERTING);
	grant_shuffle(res);
	return lk->queue == Q_GRANTED ? WS_GRANTED : WS_QUEUED;
}

void
grant_unlock(struct dlm_res *res, struct dlm_lock *lk, const uint8_t *lvb)
{
	lvb_put(res, lk, DLM_FL_VALBLK, lvb);
	grant_remove(res, lk);
	grant_shuffle(res);
}

int
grant_cancel(struct dlm_res *res, struct dlm_lock *lk)
{
	switch (lk->queue) {
	case Q_BLOCKED:
		queue_move(res, lk, Q_NONE);
		lk->convert_mode = DLM_IV;
		break;
	case Q_CONVERTING:
		lk->convert_mode = DLM_IV;
		queue_move(res, lk, Q_GRANTED);
		break;
	default:
		return WS_ALREADY;
	}
	if (grant_hooks.ast != NULL)
		grant_hooks.ast(lk, ECANCELED);
	grant_shuffle(res);
	return WS_OK;
}

void
grant_remove(struct dlm_res *res, struct dlm_lock *lk)
{
	queue_move(res, lk, Q_NONE);
}

/* One BAST per blocking episode to each lock in the way of `mode`. */
static void
bast_blockers(struct dlm_res *res, struct dlm_lock *head, int mode)
{
	struct dlm_lock *o;
	int q;

	for (q = Q_GRANTED; q <= Q_CONVERTING; q++)
		TAILQ_FOREACH(o, &res->queue[q], q_entry) {
			if (o == head || dlm_compatible(o->mode, mode))
				continue;
			if (o->highest_blocked >= mode)
				continue;
			o->highest_blocked = mode;
			if (grant_hooks.bast != NULL)
				grant_hooks.bast(o, mode);
		}
}

void
grant_shuffle(struct dlm_res *res)
{
	struct dlm_lock *c, *head;

again:
	TAILQ_FOREACH(c, &res->queue[Q_CONVERTING], q_entry) {
		if (defers(res, c, c->convert_mode))
			continue;
		if (grantable(res, c, c->convert_mode, 0)) {
			grant(res, c, c->convert_mode);
			goto again;
		}
		bast_blockers(res, c, c->convert_mode);
		return;
	}
	if ((head = TAILQ_FIRST(&res->queue[Q_BLOCKED])) == NULL)
		return;
	if (grantable(res, head, head->convert_mode, 1)) {
		grant(res, head, head->convert_mode);
		goto again;
	}
	bast_blockers(res, head, head->convert_mode);
}
