#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

void
notify_ready(void)
{
	sd_notify(0, "READY=1");
}

/* systemd >= 253 wants the monotonic time with RELOADING (Type=notify-reload). */
void
notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000);
}

void
notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void
notify_status(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", msg);
}

static void
watchdog_kick(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

unsigned long long
notify_watchdog_start(struct event_base *base)
{
	uint64_t usec;
	struct event *ev;
	struct timeval tv;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	ev = event_new(base, -1, EV_PERSIST, watchdog_kick, NULL);
	if (ev == NULL || event_add(ev, &tv) == -1)
		fatalx("notify: cannot arm the watchdog timer");
	log_debug("watchdog: kicking every %llu us", (unsigned long long)usec);
	return usec;
}
