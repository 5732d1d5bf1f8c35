/*
 * A daemon's client of nmd (hbd and netd), on common/redial.c: the one
 * way the configuration reaches a daemon is whole. Each connection
 * subscribes to nmd's changes, then fetches the configuration; a change
 * nmd announces asks for it again, coalesced: one fetch in flight at a
 * time, and whatever is announced meanwhile makes one more once it is
 * answered. The daemon reconciles itself with each configuration it is
 * given, as OpenBSD's daemons do with the configuration their parent
 * pushes; nmd's precise change events are for people (o2ctl watch).
 */
#ifndef OCFS2_NMDCLIENT_H
#define OCFS2_NMDCLIENT_H

#include "ipc.h"

struct event_base;
struct nmd_client;

struct nmd_client_ops {
	/* A whole configuration: at each connection and after changes. */
	void	(*config)(const Nmd__Config *cfg, void *arg);
	/* A new connection (NULL: nothing to do); what the last one held,
	 * pins and references, went with it. It may come before
	 * nmd_client_start() returns. */
	void	(*up)(struct nmd_client *, void *arg);
	/* The connection is lost (NULL: nothing to do); we redial. */
	void	(*down)(void *arg);
};

struct nmd_client *nmd_client_start(struct event_base *base, const char *rundir,
	    unsigned retry_ms, const struct nmd_client_ops *ops, void *arg);
/*
 * The calls below take a client not started yet (NULL) as one without a
 * connection. Fetch the configuration again (the daemon's own state
 * changed).
 */
void	nmd_client_refetch(struct nmd_client *);
int	nmd_client_connected(const struct nmd_client *);
/*
 * Fire and forget, on the connection of the moment: -1 without one. A
 * refusal is logged with what fmt says, except ENOENT (the item went away).
 */
int	nmd_client_send(struct nmd_client *, Envelope *req, const char *fmt, ...)
	    __attribute__((__format__(printf, 3, 4)));
/* Pin (or unpin) a node item as `kind` ("heartbeat", "link"). */
int	nmd_client_pin(struct nmd_client *, const char *node, const char *kind,
	    int pin);
/* Set an attribute by its path under the tree's root. */
int	nmd_client_set_attr(struct nmd_client *, const char *path,
	    const char *value);

#endif
