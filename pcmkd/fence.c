/*
 * Fencing of the nodes corosync lost (pure, unit-tested): what is
 * pending, when the next attempt is due, and whether a confirmation
 * counts. The rules, as dlm_controld's (dlm_controld/daemon_cpg.c):
 * a node that left the membership uncleanly is reported dead only once
 * a fence of it is confirmed at a time no earlier than when it left; a
 * partition without quorum starts no attempt; failed attempts are
 * retried with a doubling delay. Running the attempts is fenceexec.c's.
 */
#include <stdio.h>
#include <string.h>

#include "pcmkd.h"

void
fence_begin(struct pm_fencing *f, unsigned node, time_t left_at, uint64_t now_ms)
{
	struct pm_fence_node *n = &f->n[node];

	/* lost again before the last fence was confirmed: still that one's wait */
	if (n->state != PF_IDLE)
		return;
	memset(n, 0, sizeof(*n));
	n->state = PF_WAITING;
	n->left_at = left_at;
	n->next_ms = now_ms;
}

int
fence_pending(const struct pm_fencing *f, unsigned node)
{
	return node < PM_MAX_NODES && f->n[node].state != PF_IDLE;
}

int
fence_due(const struct pm_fencing *f, unsigned node, int quorate, uint64_t now_ms)
{
	const struct pm_fence_node *n = &f->n[node];

	return quorate && n->state == PF_WAITING && now_ms >= n->next_ms;
}

void
fence_started(struct pm_fencing *f, unsigned node)
{
	f->n[node].state = PF_RUNNING;
	f->n[node].tries++;
}

static uint64_t
backoff_ms(unsigned tries)
{
	uint64_t ms = PM_FENCE_RETRY_MS;

	while (--tries > 0 && ms < PM_FENCE_RETRY_MAX_MS)
		ms *= 2;
	return ms < PM_FENCE_RETRY_MAX_MS ? ms : PM_FENCE_RETRY_MAX_MS;
}

void
fence_failed(struct pm_fencing *f, unsigned node, uint64_t now_ms, const char *why)
{
	struct pm_fence_node *n = &f->n[node];

	n->state = PF_WAITING;
	n->next_ms = now_ms + backoff_ms(n->tries ? n->tries : 1);
	snprintf(n->last_error, sizeof(n->last_error), "%s", why);
}

int
fence_confirmed(struct pm_fencing *f, unsigned node, time_t fenced_at, uint64_t now_ms)
{
	struct pm_fence_node *n = &f->n[node];
	char why[sizeof(n->last_error)];

	if (n->state != PF_RUNNING)
		return -1;
	if (fenced_at < n->left_at) {
		snprintf(why, sizeof(why), "the fence confirmed is from %lld, before the node "
		    "left at %lld", (long long)fenced_at, (long long)n->left_at);
		fence_failed(f, node, now_ms, why);
		return -1;
	}
	n->state = PF_CONFIRMED;
	n->fenced_at = fenced_at;
	return 0;
}

int
fence_take_confirmed(struct pm_fencing *f, unsigned node, int quorate)
{
	if (!quorate || f->n[node].state != PF_CONFIRMED)
		return 0;
	f->n[node].state = PF_IDLE;
	return 1;
}

uint64_t
fence_next_due_ms(const struct pm_fencing *f)
{
	uint64_t next = UINT64_MAX;
	unsigned i;

	for (i = 0; i < PM_MAX_NODES; i++)
		if (f->n[i].state == PF_WAITING && f->n[i].next_ms < next)
			next = f->n[i].next_ms;
	return next;
}
