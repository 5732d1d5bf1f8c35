/* o2ctl: the admin's view of one node's cluster stack. */
#ifndef O2CTL_H
#define O2CTL_H

#include <stdio.h>

#include "envelope.pb-c.h"

struct o2ctl {
	const char	*rundir;
	int		 json;
	int		 timeout_ms;
};

/* Exit codes. */
#define EX_OK		0
#define EX_FAIL		1	/* the daemon refused or the check failed */
#define EX_USAGE	2
#define EX_DOWN		3	/* the daemon is not running */

struct o2ctl_cmd {
	const char	*name;
	const char	*args;
	const char	*help;
	int		(*run)(struct o2ctl *, int argc, char **argv);
	/* argv index from which the arguments are a program's that o2ctl
	 * runs, and no --json of ours; 0: none are. */
	int		 program_args;
};

/* Prints one reply of a daemon (its payload). */
typedef void ctl_print_fn(const Envelope *rep);

/* Prints one event; 1 when it was one the command counts. */
typedef int ctl_event_fn(struct o2ctl *, const Envelope *ev);

/* o2ctl.c */
int	ctl_call(struct o2ctl *, const char *daemon, Envelope *req, Envelope **rep);
int	ctl_connect(struct o2ctl *, const char *daemon);
/* "hbd", or "pcmkd" on a pcmk node: who serves hbd's protocol here. */
const char *ctl_membership(struct o2ctl *);
int	ctl_show(struct o2ctl *, const char *daemon, MsgType type,
	    Envelope__PayloadCase payload, ctl_print_fn *json, ctl_print_fn *text);
int	ctl_watch(struct o2ctl *, const char *daemon, uint32_t topics,
	    unsigned long count, ctl_event_fn *fn);

/* json.c: a minimal streaming writer. */
void	json_str(FILE *, const char *);
void	json_key(FILE *, int *first, const char *key);
/* `"key":value`, comma first unless it is the first of its object. */
void	json_field_str(FILE *, int *first, const char *key, const char *v);
void	json_field_uint(FILE *, int *first, const char *key, unsigned long long v);
void	json_field_int(FILE *, int *first, const char *key, long long v);
void	json_field_bool(FILE *, int *first, const char *key, int v);

/* status_cmd.c */
int	cmd_status(struct o2ctl *, int, char **);

/* mounts_cmd.c: the fsd status sockets of the runtime directory */
enum mount_state { MOUNT_UP, MOUNT_MOUNTING, MOUNT_STALE, MOUNT_ERROR };
struct mount_entry {
	char		*uuid;		/* from the socket's name */
	char		*path;
	enum mount_state state;
	char		*error;		/* MOUNT_ERROR: why */
	Envelope	*rep;		/* MOUNT_UP: the fsd_status reply */
};
struct mounts {
	struct mount_entry *v;
	size_t		 n;
};
/* Query every socket (sorted by UUID); -1 when the runtime dir is unreadable. */
int	mounts_collect(struct o2ctl *, struct mounts *);
void	mounts_free(struct mounts *);
/* The JSON array; the text lines (detail: counters too). */
void	mounts_json(FILE *, const struct mounts *);
void	mounts_text(FILE *, const struct mounts *, int detail);
int	cmd_mounts(struct o2ctl *, int, char **);

/* quota_cmd.c */
int	cmd_quota(struct o2ctl *, int, char **);

/* reflink_cmd.c */
int	cmd_reflink(struct o2ctl *, int, char **);

/* nmd_cmds.c */
/*
 * The nodes as nmd holds them, a JSON array, for `config` and `status`;
 * more (NULL: none) adds fields of its own to each.
 */
typedef void config_node_more_fn(FILE *, int *first, const Nmd__Node *,
	    const void *arg);
void	config_nodes_json(FILE *, const Nmd__Config *, config_node_more_fn *more,
	    const void *arg);
int	cmd_config(struct o2ctl *, int, char **);
int	cmd_reload(struct o2ctl *, int, char **);
int	cmd_check_config(struct o2ctl *, int, char **);
int	cmd_set(struct o2ctl *, int, char **);
int	cmd_mkdir(struct o2ctl *, int, char **);
int	cmd_rmdir(struct o2ctl *, int, char **);
int	cmd_watch(struct o2ctl *, int, char **);
int	cmd_ping(struct o2ctl *, int, char **);

/* hbd_cmds.c */
int	cmd_heartbeat(struct o2ctl *, int, char **);
int	cmd_clear_fence(struct o2ctl *, int, char **);
int	cmd_hbwatch(struct o2ctl *, int, char **);
int	cmd_writer(struct o2ctl *, int, char **);
int	cmd_guard(struct o2ctl *, int, char **);

/* netd_cmds.c */
int	cmd_net_status(struct o2ctl *, int, char **);
int	cmd_net_echo(struct o2ctl *, int, char **);
int	cmd_net_send(struct o2ctl *, int, char **);
int	cmd_net_watch(struct o2ctl *, int, char **);
int	cmd_keygen(struct o2ctl *, int, char **);

/* dlmd_cmds.c */
int	cmd_dlm(struct o2ctl *, int, char **);
int	cmd_locks(struct o2ctl *, int, char **);

#endif
