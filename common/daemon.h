/*
 * What every daemon's main does besides its own wiring: the options all
 * of them take, the signals (a stop, and a reload or nothing on SIGHUP),
 * systemd's watchdog, and a stop that may take its time to finish.
 */
#ifndef OCFS2_DAEMON_H
#define OCFS2_DAEMON_H

#include <stddef.h>

#include "clusterconf.h"

struct event_base;
struct daemon;

/* The options every daemon takes. */
struct daemon_args {
	const char	*conf_path;	/* -c, /etc/ocfs2/cluster.conf */
	const char	*tunables_path;	/* -t, /etc/default/o2cb */
	const char	*node_name;	/* --node; NULL when not given */
	const char	*rundir;	/* --rundir, else rundir_default() */
	int		 check_only;	/* -n */
	int		 verbose;	/* -v, repeated */
};

/* One more long option of a daemon: --name ARG, or a flag without arg. */
struct daemon_opt {
	const char	*name;
	const char	*arg;		/* ARG as the usage shows it; NULL: a flag */
	const char	**value;	/* receives ARG */
	int		*flag;		/* a flag: set to 1 */
};

/* Parse argv (a usage message and exit 2 on a bad one), then log_init. */
void	daemon_args_parse(const char *daemon, int argc, char *argv[],
	    const struct daemon_opt *extra, size_t nextra, struct daemon_args *);

/*
 * -n: the configuration files as nmd would load them, for node (NULL:
 * this host's name), warnings on stderr; NULL once it printed why they
 * are bad. The caller frees it.
 */
struct cluster_conf *daemon_check_config(const struct daemon_args *,
	    const char *node, const struct cc_node **self);
/*
 * -n of a membership daemon: 0 when cc runs the stack it serves, else -1
 * once it printed that the other stack's daemon serves it.
 */
int	daemon_check_stack(const struct daemon_args *, const struct cluster_conf *,
	    enum cc_stack serves);

/*
 * The daemon that tells this node's membership, by the stack the
 * configuration files choose: "hbd" (o2cb) or "pcmkd" (pcmk). Files
 * that cannot be loaded mean hbd, the stack that needs no choosing
 * (logged); -n and nmd report what is wrong with them.
 */
const char *daemon_membership(const struct daemon_args *, const char *node);

/*
 * Stopping takes a while (hbd leaves its regions, dlmd its domains): the
 * daemon's stop starts it and calls daemon_stop_when(); NULL ends the
 * loop at once. SIGHUP runs reload, or is ignored when it is NULL: the
 * configuration is nmd's, and a hangup must not stop anyone.
 */
typedef void daemon_stop_fn(struct daemon *d, void *arg, int sig);
typedef void daemon_reload_fn(void *arg);

/* Signals and the watchdog, on base; SIGPIPE is ignored. */
struct daemon *daemon_start(struct event_base *base, daemon_stop_fn *stop,
	    daemon_reload_fn *reload, void *arg);
/* Run the loop until stopped; d is freed. */
void	daemon_run(struct daemon *d);
/* End the loop once done(arg) says so, or after grace_ms, logging `late`. */
void	daemon_stop_when(struct daemon *d, int (*done)(void *), void *arg,
	    unsigned grace_ms, const char *late);
/* End the loop now. */
void	daemon_stop_now(struct daemon *d);

#endif
