/*
 * nmd: the node manager. Holds the cluster's configuration as a
 * configfs-like tree of items (directories) and attributes (files),
 * with the kernel o2nm/o2hb rules for every write; serves that tree
 * through FUSE and nmd.sock; loads and reloads /etc/ocfs2/cluster.conf.
 */
#ifndef NMD_H
#define NMD_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "clusterconf.h"

struct nmd;
struct nm_item;
struct ipc_conn;

/* One attribute of an item type: the kernel's configfs_attribute. */
struct nm_attr {
	const char	*name;
	int		 writable;	/* from the tree; the API may also set ro ones marked api_only */
	int		 api_writable;
	/* Fill buf with the value as cat shows it (with its newline). */
	void		(*show)(struct nmd *, struct nm_item *, char *buf, size_t len);
	/* Apply a written value; 0 or a positive errno. */
	int		(*store)(struct nmd *, struct nm_item *, const char *val);
};

/* What kind of directory an item is, and what may be made inside it. */
struct nm_item_type {
	const char		*name;
	const struct nm_attr	*attrs;
	size_t			 nattrs;
	/* mkdir in this item: 0 and *out, or a positive errno. NULL: EPERM. */
	int			(*make_item)(struct nmd *, struct nm_item *parent,
				    const char *name, struct nm_item **out);
	/* rmdir of an item of this type: 0 to allow, else a positive errno. */
	int			(*drop_item)(struct nmd *, struct nm_item *);
	void			(*release)(struct nm_item *);
};

struct nm_item {
	TAILQ_ENTRY(nm_item)	 sibling;
	TAILQ_ENTRY(nm_item)	 all;
	TAILQ_HEAD(, nm_item)	 children;
	struct nm_item		*parent;
	const struct nm_item_type *type;
	char			 name[CC_NODE_NAME_MAX + 1];
	uint64_t		 ino;
	int			 default_group;	/* made with its parent; no rmdir */
	void			*obj;
};

#define NM_NODE_UNSET	255

struct nm_node {
	unsigned	num;		/* NM_NODE_UNSET until written */
	uint32_t	addr;		/* network order */
	uint16_t	port;
	int		addr_set, port_set, num_set;
	int		local;
	unsigned	pins_heartbeat;	/* hbd sees it alive */
	unsigned	pins_link;	/* netd has a link to it */
};

struct nm_region {
	unsigned	block_bytes;
	uint64_t	start_block;
	unsigned	blocks;
	char		*dev;		/* device path; set = started */
	int		pid;		/* heartbeating process */
	unsigned	refs;		/* acquirers through nmd.sock */
	unsigned	persistent_refs;	/* of refs: not tied to a connection */
};

struct nm_cluster {
	unsigned	idle_timeout_ms;
	unsigned	keepalive_delay_ms;
	unsigned	reconnect_delay_ms;
	enum cc_fence_method fence_method;
	unsigned	dead_threshold;
	enum cc_hb_mode	hb_mode;
	unsigned	hb_interval_ms;
	enum cc_stack	stack;		/* chosen at start: changing it needs a restart */
	char		**global_regions;	/* heartbeat: stanzas (global mode) */
	size_t		nglobal_regions;
};

/*
 * What keeps an ephemeral item alive: a region reference (the region goes
 * with its last one) or a pin on a node (a node in use cannot be removed).
 */
enum nm_hold_kind { NM_HOLD_REGION, NM_HOLD_PIN_HEARTBEAT, NM_HOLD_PIN_LINK };

struct nm_hold {
	LIST_ENTRY(nm_hold)	 entry;
	enum nm_hold_kind	 kind;
	char			 name[CC_NODE_NAME_MAX + 1];	/* region or node */
};

/*
 * Who holds: a client connection, or, after nmd restarted, the process
 * that held through its connection to the previous nmd (conn NULL): its
 * holds last while it lives, unless it takes or releases them again.
 */
struct nm_holder {
	LIST_ENTRY(nm_holder)	 entry;
	struct nmd		*nm;
	struct ipc_conn		*conn;
	int			 pid;
	uint64_t		 starttime;	/* /proc/<pid>/stat field 22; 0 unknown */
	int			 pidfd;		/* a process holder's; -1 otherwise */
	struct event		*exited;
	LIST_HEAD(, nm_hold)	 holds;
};

struct nmd {
	struct event_base	*base;
	const char		*rundir;
	const char		*conf_path;
	const char		*tunables_path;
	const char		*node_name;	/* --node or the host name */
	char			 last_reload_error[CC_ERR_MAX];
	time_t			 started;	/* the tree's timestamps */

	/* The tree: root/cluster/<name>/{node,heartbeat}/... */
	struct nm_item		*root;
	struct nm_item		*subsys;	/* "cluster" */
	TAILQ_HEAD(, nm_item)	 items;		/* every item, for inode lookups */
	uint64_t		 next_ino;

	struct ipc_server	*ipc;
	struct nm_configfs	*configfs;

	LIST_HEAD(, nm_holder)	 holders;
	struct event		*repin_grace;	/* process holders' pins expire */

	/* persist.c: <rundir>/nmd.state, rewritten after every change. */
	char			*state_path;
	uint64_t		 config_fingerprint;	/* of the files last loaded */
	int			 state_batch;	/* > 0: changes are written at its end */
	int			 state_dirty;
	int			 state_frozen;	/* stopping: the file keeps what it has */
	int			 state_failing;	/* the last write failed (logged once) */
};

/* items.c: the tree and its rules. */
void		 nm_tree_init(struct nmd *);
void		 nm_tree_free(struct nmd *);
struct nm_item	*nm_item_by_ino(struct nmd *, uint64_t ino);
struct nm_item	*nm_item_child(struct nm_item *, const char *name);
struct nm_item	*nm_item_by_path(struct nmd *, const char *path, const char **attr);
const struct nm_attr *nm_item_attr(const struct nm_item *, const char *name, size_t *idx);
int		 nm_item_path(const struct nm_item *, char *buf, size_t len);
int		 nm_mkdir(struct nmd *, struct nm_item *parent, const char *name, struct nm_item **out);
int		 nm_rmdir(struct nmd *, struct nm_item *);
int		 nm_attr_write(struct nmd *, struct nm_item *, const struct nm_attr *, const char *val, int from_api);
void		 nm_attr_read(struct nmd *, struct nm_item *, const struct nm_attr *, char *buf, size_t len);
struct nm_item	*nm_cluster_item(struct nmd *);
struct nm_cluster *nm_cluster(struct nmd *);
struct nm_item	*nm_node_group(struct nmd *);
struct nm_item	*nm_hb_group(struct nmd *);
struct nm_item	*nm_local_node(struct nmd *);
size_t		 nm_linked_nodes(struct nmd *);
size_t		 nm_nregions(struct nmd *);
int		 nm_is_node(const struct nm_item *);
int		 nm_is_region(const struct nm_item *);
int		 nm_attr_setf(struct nmd *, struct nm_item *, const char *attr,
		    const char *fmt, ...) __attribute__((__format__(printf, 4, 5)));

/* api.c: nmd.sock. */
void		 nm_api_start(struct nmd *);
void		 nm_api_publish_change(struct nmd *, int op, const struct nm_item *,
		    const struct nm_attr *, const char *value);

/* reload.c: cluster.conf into the tree. */
struct cluster_conf *nm_parse_config(struct nmd *, const struct cc_node **self,
		    char *err, size_t errlen);
int		 nm_load(struct nmd *, int initial, char ***applied, size_t *napplied,
		    char ***refused, size_t *nrefused, char *err, size_t errlen);
void		 nm_lines_free(char **lines, size_t n);

/* holds.c: region references and node pins, and who holds them. */
struct nm_holder *nm_holder_of_conn(struct nmd *, struct ipc_conn *);
void		 nm_holder_conn_closed(struct nmd *, struct ipc_conn *);
void		 nm_hold_take(struct nmd *, struct nm_holder *, enum nm_hold_kind,
		    const char *name);
int		 nm_hold_drop(struct nmd *, struct nm_holder *, enum nm_hold_kind,
		    const char *name);
int		 nm_hold_restore(struct nmd *, enum nm_hold_kind, const char *name,
		    int pid, uint64_t starttime);
void		 nm_holds_restored(struct nmd *);
void		 nm_holds_free(struct nmd *);
void		 nm_region_unref(struct nmd *, struct nm_item *, int persistent);
const char	*nm_hold_kind_name(enum nm_hold_kind);
int		 nm_hold_kind_parse(const char *, enum nm_hold_kind *);

/*
 * state.c: the state file's format, version 1: one record a line,
 * strings %XX-escaped, a CRC32 over everything before the "end" line.
 */
#define NM_STATE_VERSION	1

struct nm_state_node {
	char		 name[CC_NODE_NAME_MAX + 1];
	int		 num_set, addr_set, port_set, local;
	unsigned	 num;
	uint32_t	 addr;		/* network order */
	uint16_t	 port;
};

struct nm_state_region {
	char		 name[CC_NODE_NAME_MAX + 1];
	unsigned	 block_bytes;
	uint64_t	 start_block;
	unsigned	 blocks;
	char		*dev;		/* NULL: not started */
	int		 pid;
	unsigned	 persistent_refs;
};

struct nm_state_hold {
	enum nm_hold_kind kind;
	char		 name[CC_NODE_NAME_MAX + 1];
	int		 pid;
	uint64_t	 starttime;
};

struct nm_state {
	uint64_t	 config_fingerprint;
	int		 has_cluster;
	char		 cluster[CC_NODE_NAME_MAX + 1];
	unsigned	 idle_timeout_ms, keepalive_delay_ms, reconnect_delay_ms;
	enum cc_fence_method fence_method;
	unsigned	 dead_threshold;
	enum cc_hb_mode	 hb_mode;
	unsigned	 hb_interval_ms;
	enum cc_stack	 stack;
	char		**global_regions;
	size_t		 nglobal_regions;
	struct nm_state_node *nodes;
	size_t		 nnodes;
	struct nm_state_region *regions;
	size_t		 nregions;
	struct nm_state_hold *holds;
	size_t		 nholds;
};

char		*nm_state_format(const struct nm_state *, size_t *len);
int		 nm_state_parse(const char *buf, size_t len, struct nm_state *,
		    char *err, size_t errlen);
void		 nm_state_free(struct nm_state *);

/* persist.c: the state file kept up to date, and taken up at start. */
void		 nm_persist_init(struct nmd *);
void		 nm_state_changed(struct nmd *);
void		 nm_state_batch_begin(struct nmd *);
void		 nm_state_batch_end(struct nmd *);
void		 nm_state_freeze(struct nmd *);
int		 nm_persist_restore(struct nmd *);
uint64_t	 nm_config_files_fingerprint(const struct nmd *);

/* configfs.c: the FUSE tree at <rundir>/config. */
int		 nm_configfs_mount(struct nmd *, const char *mountpoint);
void		 nm_configfs_unmount(struct nmd *);

#endif
