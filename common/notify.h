/*
 * sd_notify: readiness, reload and stop, a status line, and the watchdog
 * fed from a libevent timer at half of WatchdogSec. All are no-ops when
 * systemd did not start us.
 */
#ifndef OCFS2_NOTIFY_H
#define OCFS2_NOTIFY_H

struct event_base;

void	notify_ready(void);
void	notify_reloading(void);
void	notify_stopping(void);
void	notify_status(const char *fmt, ...) __attribute__((__format__(printf, 1, 2)));
/* Arms the watchdog timer when WATCHDOG_USEC names us; returns its period in us (0: off). */
unsigned long long notify_watchdog_start(struct event_base *base);

#endif
