#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clusterconf.h"
#include "daemon.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define DAEMON_OPTS_MAX		8	/* beyond the common ones */
#define STOP_POLL_MS		20

struct daemon {
	struct event_base	*base;
	daemon_stop_fn		*stop;
	daemon_reload_fn	*reload;
	void			*arg;
	struct event		*sigterm, *sigint, *sighup;
	struct event		*poll, *deadline;
	int			 stopping;
	int			 (*done)(void *);
	void			*done_arg;
	const char		*late;
};

static void
daemon_usage(const char *daemon, const struct daemon_opt *extra, size_t nextra)
{
	size_t i;
	int indent = (int)strlen("usage: ") + (int)strlen(daemon) + 1;

	fprintf(stderr, "usage: %s [-nv] [-c cluster.conf] [-t o2cb-defaults] "
	    "[--node NAME]\n%*s[--rundir DIR]", daemon, indent, "");
	for (i = 0; i < nextra; i++)
		fprintf(stderr, " [--%s%s%s]", extra[i].name,
		    extra[i].arg != NULL ? " " : "",
		    extra[i].arg != NULL ? extra[i].arg : "");
	fprintf(stderr, "\n");
	exit(2);
}

void
daemon_args_parse(const char *daemon, int argc, char *argv[],
    const struct daemon_opt *extra, size_t nextra, struct daemon_args *a)
{
	struct option longopts[2 + DAEMON_OPTS_MAX + 1];
	size_t i;
	int ch, idx;

	if (nextra > DAEMON_OPTS_MAX)
		fatalx("%s: %zu options beyond the common ones", daemon, nextra);
	memset(longopts, 0, sizeof(longopts));
	longopts[0] = (struct option){ "node", required_argument, NULL, 'N' };
	longopts[1] = (struct option){ "rundir", required_argument, NULL, 'R' };
	for (i = 0; i < nextra; i++)
		longopts[2 + i] = (struct option){ extra[i].name,
		    extra[i].arg != NULL ? required_argument : no_argument, NULL, 0 };
	memset(a, 0, sizeof(*a));
	a->conf_path = "/etc/ocfs2/cluster.conf";
	a->tunables_path = "/etc/default/o2cb";
	a->rundir = rundir_default();
	while ((ch = getopt_long(argc, argv, "c:t:nv", longopts, &idx)) != -1) {
		switch (ch) {
		case 'c': a->conf_path = optarg; break;
		case 't': a->tunables_path = optarg; break;
		case 'n': a->check_only = 1; break;
		case 'v': a->verbose++; break;
		case 'N': a->node_name = optarg; break;
		case 'R': a->rundir = optarg; break;
		case 0:
			if (extra[idx - 2].arg != NULL)
				*extra[idx - 2].value = optarg;
			else
				*extra[idx - 2].flag = 1;
			break;
		default: daemon_usage(daemon, extra, nextra);
		}
	}
	if (optind != argc)
		daemon_usage(daemon, extra, nextra);
	log_init(daemon, a->verbose);
}

struct cluster_conf *
daemon_check_config(const struct daemon_args *a, const char *node,
    const struct cc_node **self)
{
	struct cluster_conf *cc;
	char err[CC_ERR_MAX];

	if ((cc = cc_load(a->conf_path, a->tunables_path, 0, NULL,
	    node != NULL ? node : host_node_name(), self, err, sizeof(err),
	    cc_warn_stderr, NULL)) == NULL)
		fprintf(stderr, "%s\n", err);
	return cc;
}

int
daemon_check_stack(const struct daemon_args *a, const struct cluster_conf *cc,
    enum cc_stack serves)
{
	if (cc->stack == serves)
		return 0;
	fprintf(stderr, "%s: cluster %s runs stack %s: %s serves only stack = %s\n",
	    a->conf_path, cc->name, cc_stack_name(cc->stack), cc_stack_daemon(serves),
	    cc_stack_name(serves));
	return -1;
}

const char *
daemon_membership(const struct daemon_args *a, const char *node)
{
	struct cluster_conf *cc;
	const struct cc_node *self;
	const char *d;
	char err[CC_ERR_MAX];

	if ((cc = cc_load(a->conf_path, a->tunables_path, 0, NULL,
	    node != NULL ? node : host_node_name(), &self, err, sizeof(err), NULL,
	    NULL)) == NULL) {
		log_info("stack unknown (%s): membership from hbd", err);
		return cc_stack_daemon(CC_STACK_O2CB);
	}
	d = cc_stack_daemon(cc->stack);
	free(cc);
	return d;
}

static void
stop_signal(evutil_socket_t sig, short ev, void *arg)
{
	struct daemon *d = arg;

	(void)ev;
	if (d->stopping)
		return;
	d->stopping = 1;
	notify_stopping();
	if (d->stop != NULL) {
		d->stop(d, d->arg, (int)sig);
		return;
	}
	log_info("signal %d: stopping", (int)sig);
	daemon_stop_now(d);
}

static void
on_hup(evutil_socket_t sig, short ev, void *arg)
{
	struct daemon *d = arg;

	(void)sig;
	(void)ev;
	d->reload(d->arg);
}

static struct event *
signal_event(struct daemon *d, int sig, event_callback_fn fn)
{
	struct event *ev = evsignal_new(d->base, sig, fn, d);

	if (ev == NULL || evsignal_add(ev, NULL) == -1)
		fatalx("cannot install a handler for signal %d", sig);
	return ev;
}

struct daemon *
daemon_start(struct event_base *base, daemon_stop_fn *stop,
    daemon_reload_fn *reload, void *arg)
{
	struct daemon *d = xcalloc(1, sizeof(*d));

	d->base = base;
	d->stop = stop;
	d->reload = reload;
	d->arg = arg;
	signal(SIGPIPE, SIG_IGN);
	if (reload != NULL)
		d->sighup = signal_event(d, SIGHUP, on_hup);
	else
		signal(SIGHUP, SIG_IGN);
	d->sigterm = signal_event(d, SIGTERM, stop_signal);
	d->sigint = signal_event(d, SIGINT, stop_signal);
	notify_watchdog_start(base);
	return d;
}

void
daemon_run(struct daemon *d)
{
	event_base_dispatch(d->base);
	if (!d->stopping)	/* ended by the daemon itself */
		notify_stopping();
	if (d->sighup != NULL)
		event_free(d->sighup);
	event_free(d->sigterm);
	event_free(d->sigint);
	if (d->poll != NULL)
		event_free(d->poll);
	if (d->deadline != NULL)
		event_free(d->deadline);
	free(d);
}

void
daemon_stop_now(struct daemon *d)
{
	event_base_loopbreak(d->base);
}

static void
stop_poll(evutil_socket_t fd, short ev, void *arg)
{
	struct daemon *d = arg;

	(void)fd;
	(void)ev;
	if (d->done(d->done_arg))
		daemon_stop_now(d);
}

static void
stop_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct daemon *d = arg;

	(void)fd;
	(void)ev;
	log_warnx("%s in time; exiting anyway", d->late);
	daemon_stop_now(d);
}

void
daemon_stop_when(struct daemon *d, int (*done)(void *), void *arg,
    unsigned grace_ms, const char *late)
{
	struct timeval poll = { 0, STOP_POLL_MS * 1000 };
	struct timeval grace = { grace_ms / 1000, (grace_ms % 1000) * 1000 };

	d->done = done;
	d->done_arg = arg;
	d->late = late;
	d->poll = event_new(d->base, -1, EV_PERSIST, stop_poll, d);
	d->deadline = evtimer_new(d->base, stop_deadline, d);
	if (d->poll == NULL || d->deadline == NULL || event_add(d->poll, &poll) == -1 ||
	    evtimer_add(d->deadline, &grace) == -1)
		fatalx("out of memory for the stop's timers");
}
