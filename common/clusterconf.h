/*
 * /etc/ocfs2/cluster.conf and /etc/default/o2cb, parsed and validated
 * with the rules of ocfs2-tools' o2cb_ctl and the kernel's o2nm.
 */
#ifndef OCFS2_CLUSTERCONF_H
#define OCFS2_CLUSTERCONF_H

#include <stdint.h>
#include <stddef.h>

#define CC_MAX_NODES		255	/* node numbers 0..254 (O2NM_MAX_NODES) */
#define CC_INVALID_NODE		255
#define CC_CLUSTER_NAME_MAX	16	/* OCFS2_CLUSTER_NAME_LEN */
#define CC_NODE_NAME_MAX	64	/* O2NM_MAX_NAME_LEN */
#define CC_REGION_NAME_LEN	32	/* volume UUID, upper-case hex */
#define CC_MAX_REGIONS		32	/* O2NM_MAX_REGIONS */
#define CC_ERR_MAX		512

enum cc_hb_mode { CC_HB_LOCAL = 0, CC_HB_GLOBAL = 1 };
enum cc_fence_method { CC_FENCE_KILL = 0, CC_FENCE_RESET = 1, CC_FENCE_PANIC = 2 };
/* Who says which nodes are alive: hbd's disk heartbeat, or corosync (pcmkd). */
enum cc_stack { CC_STACK_O2CB = 0, CC_STACK_PCMK = 1 };
/*
 * pcmk: who confirms that a node corosync lost is reset before the
 * survivors recover it (cluster: fencing = ...). Unset: pcmkd refuses
 * to start; none: the admin accepts recovery without confirmation.
 */
enum cc_pcmk_fencing {
	CC_PCMK_FENCING_UNSET = 0,
	CC_PCMK_FENCING_NONE,
	CC_PCMK_FENCING_AGENT,		/* fence_agent = PATH, run by pcmkd */
	CC_PCMK_FENCING_PACEMAKER,	/* pacemaker's fencer (stonith API) */
};
#define CC_FENCE_AGENT_MAX	255

struct cc_node {
	char		name[CC_NODE_NAME_MAX + 1];
	unsigned	num;
	uint32_t	addr;		/* IPv4, network byte order */
	uint16_t	port;		/* host byte order */
	int		line;		/* where its stanza starts */
};

struct cc_region {
	char		uuid[CC_REGION_NAME_LEN + 1];
	int		line;
};

/* o2cb tunables (/etc/default/o2cb), with the kernel's defaults. */
struct cc_tunables {
	unsigned	dead_threshold;		/* O2CB_HEARTBEAT_THRESHOLD, 31 */
	unsigned	idle_timeout_ms;	/* O2CB_IDLE_TIMEOUT_MS, 30000 */
	unsigned	keepalive_delay_ms;	/* O2CB_KEEPALIVE_DELAY_MS, 2000 */
	unsigned	reconnect_delay_ms;	/* O2CB_RECONNECT_DELAY_MS, 2000 */
	enum cc_fence_method fence_method;	/* O2CB_FENCE_METHOD, kill (ours) */
};

/* One cluster: the one named by O2CB_BOOTCLUSTER, or the file's only one. */
struct cluster_conf {
	char		name[CC_CLUSTER_NAME_MAX + 1];
	unsigned	node_count;
	enum cc_hb_mode	hb_mode;
	size_t		nnodes;
	struct cc_node	nodes[CC_MAX_NODES];
	size_t		nregions;
	struct cc_region regions[CC_MAX_REGIONS];
	struct cc_tunables tun;
	unsigned	hb_interval_ms;		/* cluster: heartbeat_interval_ms (ours), 2000 */
	enum cc_stack	stack;			/* cluster: stack (ours), o2cb */
	enum cc_pcmk_fencing fencing;		/* cluster: fencing (ours), unset */
	char		fence_agent[CC_FENCE_AGENT_MAX + 1];	/* cluster: fence_agent */
};

/*
 * Parse a cluster.conf. `cluster` selects the cluster when the file
 * describes several (NULL: the only one, or "ocfs2" when there are several).
 * On error returns -1 and writes "file:line: what is wrong" into err.
 * Unknown keys are accepted, as ocfs2-tools accepts them, and reported
 * through warn (one line each, same format) when warn is non-NULL.
 * cc_parse_file fails with errno set when the file cannot be read.
 */
int	cc_parse_file(const char *path, const char *cluster, struct cluster_conf *cc,
	    char *err, size_t errlen,
	    void (*warn)(const char *msg, void *arg), void *warnarg);
int	cc_parse_buf(const char *name, const char *buf, size_t len,
	    const char *cluster, struct cluster_conf *cc, char *err, size_t errlen,
	    void (*warn)(const char *msg, void *arg), void *warnarg);
/* A warn for the checks run from a terminal (-n, o2ctl check-config). */
void	cc_warn_stderr(const char *msg, void *arg);

/*
 * Defaults of the tunables; then /etc/default/o2cb style KEY=VALUE overrides
 * (an empty value keeps the current one; t is untouched on error).
 * *bootcluster: strdup'd O2CB_BOOTCLUSTER, NULL when absent or empty.
 * An unreadable file fails with errno set: ENOENT means "use the defaults".
 */
void	cc_tunables_default(struct cc_tunables *t);
int	cc_parse_tunables_file(const char *path, struct cc_tunables *t,
	    char **bootcluster, char *err, size_t errlen);

/*
 * Everything a daemon loads at start and on reload: the tunables (a
 * missing file means defaults unless tunables_required), then cluster.conf
 * (the cluster `cluster` when non-NULL, else O2CB_BOOTCLUSTER's, else the
 * file's only one), with cc->tun filled, and the local node. Returns a
 * cluster_conf the caller frees, or NULL with "file:line: why" in err.
 */
struct cluster_conf *cc_load(const char *conf, const char *tunables,
	    int tunables_required, const char *cluster, const char *node_name,
	    const struct cc_node **self, char *err, size_t errlen,
	    void (*warn)(const char *msg, void *arg), void *warnarg);

/* Node lookups; NULL when absent. */
const struct cc_node *cc_node_by_name(const struct cluster_conf *cc, const char *name);
const struct cc_node *cc_node_by_num(const struct cluster_conf *cc, unsigned num);

/* The node that names this host, as o2cb does: case-insensitive, up to '.'. */
const struct cc_node *cc_local_node(const struct cluster_conf *cc, const char *nodename);

/* Name syntax checks shared by the parser and nmd's tree. */
int	cc_valid_cluster_name(const char *name);
int	cc_valid_node_name(const char *name);	/* 1-64 of [A-Za-z0-9._-] */
int	cc_valid_region_name(const char *name);

const char *cc_fence_method_name(enum cc_fence_method m);
const char *cc_stack_name(enum cc_stack s);
int	cc_stack_parse(const char *s, enum cc_stack *out);
/* The daemon that serves membership on <rundir>/<name>.sock: "hbd" or "pcmkd". */
const char *cc_stack_daemon(enum cc_stack s);
int	cc_fence_method_parse(const char *s, enum cc_fence_method *m);
const char *cc_pcmk_fencing_name(enum cc_pcmk_fencing f);

#endif
