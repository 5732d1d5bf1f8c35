#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nmdclient.h"
#include "util.h"

struct nmd_client {
	struct ipc_conn			*conn;		/* NULL while nmd is away */
	const struct nmd_client_ops	*ops;
	void				*arg;
	int				 fetching;	/* a fetch is in flight */
	int				 stale;		/* changed since it was sent */
};

static void	fetch(struct nmd_client *);

static void
config_reply(const Envelope *rep, void *arg)
{
	struct nmd_client *cl = arg;

	cl->fetching = 0;
	if (rep == NULL)
		return;		/* the connection went; the next one fetches */
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_CONFIG)
		log_warnx("nmd: cannot fetch the configuration: %s",
		    rep->error[0] ? rep->error : strerror(rep->status));
	else
		cl->ops->config(rep->config, cl->arg);
	if (cl->stale)
		fetch(cl);
}

static void
fetch(struct nmd_client *cl)
{
	Envelope req = ENVELOPE__INIT;

	if (cl == NULL || cl->conn == NULL)
		return;
	if (cl->fetching) {
		cl->stale = 1;
		return;
	}
	cl->stale = 0;
	req.type = MSG_TYPE__MSG_NMD_GET_CONFIG;
	if (ipc_request(cl->conn, &req, config_reply, cl) == 0)
		cl->fetching = 1;
}

void
nmd_client_refetch(struct nmd_client *cl)
{
	fetch(cl);
}

static void
on_changed(struct ipc_conn *c, const Envelope *ev)
{
	(void)ev;
	fetch(ipc_conn_arg(c));
}

static const struct ipc_handler nmd_events[] = {
	{ MSG_TYPE__MSG_NMD_CONFIG_CHANGED, ENVELOPE__PAYLOAD_CHANGE, on_changed },
};

static void
nmd_event(struct ipc_conn *c, const Envelope *ev)
{
	ipc_event_dispatch(c, ev, nmd_events, nitems(nmd_events), "nmd");
}

static void
subscribed(const Envelope *rep, void *arg)
{
	(void)arg;
	if (rep != NULL && rep->status != 0)
		log_warnx("nmd: subscribe: %s", rep->error);
}

static void
on_up(struct ipc_conn *c, void *arg)
{
	struct nmd_client *cl = arg;
	Envelope req = ENVELOPE__INIT;
	Subscribe sub = SUBSCRIBE__INIT;

	cl->conn = c;
	cl->fetching = cl->stale = 0;
	if (cl->ops->up != NULL)
		cl->ops->up(cl, cl->arg);
	/* Subscribe first: no change can slip between the fetch and the events. */
	req.type = MSG_TYPE__MSG_SUBSCRIBE;
	req.payload_case = ENVELOPE__PAYLOAD_SUBSCRIBE;
	req.subscribe = &sub;
	ipc_request(c, &req, subscribed, NULL);
	fetch(cl);
}

static void
on_down(struct ipc_conn *c, void *arg)
{
	struct nmd_client *cl = arg;

	(void)c;
	cl->conn = NULL;
	cl->fetching = cl->stale = 0;
	if (cl->ops->down != NULL)
		cl->ops->down(cl->arg);
}

struct nmd_client *
nmd_client_start(struct event_base *base, const char *rundir, unsigned retry_ms,
    const struct nmd_client_ops *ops, void *arg)
{
	struct nmd_client *cl = xcalloc(1, sizeof(*cl));

	cl->ops = ops;
	cl->arg = arg;
	ipc_redial(base, rundir, "nmd", retry_ms, nmd_event, on_up, on_down, cl);
	return cl;
}

int
nmd_client_connected(const struct nmd_client *cl)
{
	return cl != NULL && cl->conn != NULL;
}

static void
sent(const Envelope *rep, void *arg)
{
	char *what = arg;

	if (rep == NULL)
		log_warnx("nmd: %s: connection lost", what);
	else if (rep->status != 0 && rep->status != ENOENT)
		log_warnx("nmd: %s: %s", what, rep->error[0] ? rep->error :
		    strerror(rep->status));
	free(what);
}

int
nmd_client_send(struct nmd_client *cl, Envelope *req, const char *fmt, ...)
{
	va_list ap;
	char *what;

	if (!nmd_client_connected(cl))
		return -1;
	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	if (ipc_request(cl->conn, req, sent, what) == -1) {
		free(what);
		return -1;
	}
	return 0;
}

int
nmd_client_pin(struct nmd_client *cl, const char *node, const char *kind, int pin)
{
	Envelope req = ENVELOPE__INIT;
	Nmd__Pin p = NMD__PIN__INIT;

	p.node = (char *)node;
	p.kind = (char *)kind;
	req.type = pin ? MSG_TYPE__MSG_NMD_PIN : MSG_TYPE__MSG_NMD_UNPIN;
	req.payload_case = ENVELOPE__PAYLOAD_PIN;
	req.pin = &p;
	return nmd_client_send(cl, &req, "%s node %s (%s)", pin ? "pin" : "unpin",
	    node, kind);
}

int
nmd_client_set_attr(struct nmd_client *cl, const char *path, const char *value)
{
	Envelope req = ENVELOPE__INIT;
	Nmd__SetAttr sa = NMD__SET_ATTR__INIT;

	sa.path = (char *)path;
	sa.value = (char *)value;
	req.type = MSG_TYPE__MSG_NMD_SET_ATTR;
	req.payload_case = ENVELOPE__PAYLOAD_SET_ATTR;
	req.set_attr = &sa;
	return nmd_client_send(cl, &req, "set %s = %s", path, value);
}
