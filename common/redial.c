/*
 * A client connection to another daemon that comes back by itself:
 * every daemon that depends on a neighbour (netd and dlmd on hbd, hbd
 * and dlmd on netd) keeps trying while it is away and starts over
 * (subscribe, register) each time it is back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "util.h"

struct ipc_redial {
	struct event_base	*base;
	char			*path;
	const char		*name;
	unsigned		 retry_ms;
	ipc_event_fn		*on_event;
	ipc_redial_fn		*on_up;
	ipc_redial_fn		*on_down;
	void			*arg;
	struct ipc_conn		*conn;
	struct event		*timer;
	int			 failing;	/* logged the first failed attempt */
};

static void	dial(struct ipc_redial *);

static void
retry_later(struct ipc_redial *rd)
{
	struct timeval tv = { rd->retry_ms / 1000, (rd->retry_ms % 1000) * 1000 };

	evtimer_add(rd->timer, &tv);
}

static void
on_close(struct ipc_conn *c)
{
	struct ipc_redial *rd = ipc_conn_data(c);

	log_warnx("lost %s; reconnecting", rd->name);
	rd->conn = NULL;
	if (rd->on_down != NULL)
		rd->on_down(NULL, rd->arg);
	retry_later(rd);
}

static void
dial(struct ipc_redial *rd)
{
	if ((rd->conn = ipc_connect(rd->base, rd->path, rd->on_event, on_close,
	    rd->arg)) == NULL) {
		if (!rd->failing)
			log_warn("%s at %s; retrying every %u ms", rd->name, rd->path,
			    rd->retry_ms);
		rd->failing = 1;
		retry_later(rd);
		return;
	}
	rd->failing = 0;
	ipc_conn_set_data(rd->conn, rd);
	log_info("connected to %s at %s", rd->name, rd->path);
	if (rd->on_up != NULL)
		rd->on_up(rd->conn, rd->arg);
}

static void
timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	dial(arg);
}

struct ipc_redial *
ipc_redial(struct event_base *base, const char *rundir, const char *daemon,
    unsigned retry_ms, ipc_event_fn *on_event, ipc_redial_fn *on_up,
    ipc_redial_fn *on_down, void *arg)
{
	struct ipc_redial *rd = xcalloc(1, sizeof(*rd));

	rd->base = base;
	xasprintf(&rd->path, "%s/%s.sock", rundir, daemon);
	rd->name = daemon;
	rd->retry_ms = retry_ms;
	rd->on_event = on_event;
	rd->on_up = on_up;
	rd->on_down = on_down;
	rd->arg = arg;
	if ((rd->timer = evtimer_new(base, timer_cb, rd)) == NULL)
		fatalx("out of memory for a timer");
	dial(rd);
	return rd;
}

struct ipc_conn *
ipc_redial_conn(const struct ipc_redial *rd)
{
	return rd->conn;
}
