/*
 * Log lines about connections that never became links (refused at
 * accept, or failed before they authenticated), at most REFUSAL_BURST
 * per source address per REFUSAL_WINDOW_MS: anyone who can reach our
 * port can make such connections as fast as the kernel accepts them,
 * and each one must not cost a line. The refusals left out are counted
 * and summed up in one line when the address's window ends. Addresses
 * beyond the table's size share one last entry, so that the lines per
 * window stay bounded whatever the number of sources.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "log.h"
#include "netd.h"
#include "util.h"

void
refusal_init(struct refusals *rf)
{
	memset(rf, 0, sizeof(*rf));
}

/* The entry of addr, or a free or finished one, or the shared last one. */
static struct refusal_src *
src_of(struct refusals *rf, uint32_t addr, uint64_t now)
{
	struct refusal_src *s, *spare = NULL;
	size_t i;

	for (i = 0; i < REFUSAL_SOURCES; i++) {
		s = &rf->src[i];
		if (s->used && s->addr == addr)
			return s;
		if (spare == NULL && (!s->used || (s->suppressed == 0 &&
		    now - s->window_start >= REFUSAL_WINDOW_MS)))
			spare = s;
	}
	if (spare == NULL)
		return &rf->src[REFUSAL_SOURCES];
	memset(spare, 0, sizeof(*spare));
	spare->used = 1;
	spare->addr = addr;
	spare->window_start = now;
	return spare;
}

int
refusal_admit(struct refusals *rf, uint32_t addr, uint64_t now)
{
	struct refusal_src *s = src_of(rf, addr, now);

	if (!s->used) {
		s->used = 1;
		s->window_start = now;
	}
	if (now - s->window_start >= REFUSAL_WINDOW_MS && s->suppressed == 0) {
		s->window_start = now;
		s->logged = 0;
	}
	if (s->logged < REFUSAL_BURST) {
		s->logged++;
		return 1;
	}
	s->suppressed++;
	return 0;
}

void
refusal_expire(struct refusals *rf, uint64_t now, refusal_summary_fn *fn, void *arg)
{
	struct refusal_src *s;
	size_t i;

	for (i = 0; i <= REFUSAL_SOURCES; i++) {
		s = &rf->src[i];
		if (!s->used || s->suppressed == 0 ||
		    now - s->window_start < REFUSAL_WINDOW_MS)
			continue;
		fn(i == REFUSAL_SOURCES ? NULL : &s->addr, s->suppressed,
		    now - s->window_start, arg);
		s->suppressed = 0;
		s->logged = 0;
		s->window_start = now;
	}
}

uint64_t
refusal_next_due(const struct refusals *rf)
{
	uint64_t next = 0, due;
	size_t i;

	for (i = 0; i <= REFUSAL_SOURCES; i++) {
		if (!rf->src[i].used || rf->src[i].suppressed == 0)
			continue;
		due = rf->src[i].window_start + REFUSAL_WINDOW_MS;
		if (next == 0 || due < next)
			next = due;
	}
	return next;
}

/* ---------------------------------------------------------- netd's use */

static void
summary_line(const uint32_t *addr, unsigned n, uint64_t ms, void *arg)
{
	struct in_addr a;
	char s[INET_ADDRSTRLEN];

	(void)arg;
	if (addr == NULL) {
		log_warnx("%u more refused connections from other addresses in "
		    "the last %.1f s were not logged", n, (double)ms / 1000.0);
		return;
	}
	a.s_addr = *addr;
	inet_ntop(AF_INET, &a, s, sizeof(s));
	log_warnx("%u more refused connections from %s in the last %.1f s were "
	    "not logged", n, s, (double)ms / 1000.0);
}

static void
summary_arm(struct netd *nd)
{
	uint64_t due = refusal_next_due(&nd->refusals), now = now_ms();
	struct timeval tv = { 0, 0 };

	if (due == 0 || evtimer_pending(nd->refusal_timer, NULL))
		return;
	if (due > now) {
		tv.tv_sec = (time_t)((due - now) / 1000);
		tv.tv_usec = (suseconds_t)((due - now) % 1000) * 1000;
	}
	evtimer_add(nd->refusal_timer, &tv);
}

static void
summary_fire(evutil_socket_t fd, short ev, void *arg)
{
	struct netd *nd = arg;

	(void)fd;
	(void)ev;
	refusal_expire(&nd->refusals, now_ms(), summary_line, NULL);
	summary_arm(nd);
}

void
refusal_start(struct netd *nd)
{
	refusal_init(&nd->refusals);
	nd->refusal_timer = evtimer_new(nd->base, summary_fire, nd);
	if (nd->refusal_timer == NULL)
		fatalx("out of memory for the refusal timer");
}

void
refusal_log(struct netd *nd, uint32_t addr, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!refusal_admit(&nd->refusals, addr, now_ms())) {
		summary_arm(nd);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("%s", msg);
}
