/* Clocks, and the one derived timing value that goes on disk. */
#include <time.h>

#include "hbd.h"

uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * hb_dead_ms: the kernel writes dead_threshold * 2000. Ours has a
 * configurable interval, so this also differs between nodes whose
 * intervals differ: peers compare it with theirs and report either
 * misconfiguration, while the block keeps o2hb's layout.
 */
uint32_t
hbd_dead_ms(const struct hbd *h)
{
	return h->dead_threshold * h->interval_ms;
}
