/*
 * dlmd: o2dlm's distributed lock manager, in userspace.
 *
 * Every lock resource has one master, the node that keeps its queues
 * and decides grants; the other nodes keep their own locks on it only.
 * Who masters what is recorded by one node of the domain, the
 * directory: the first node to ask about a resource becomes its master
 * (first touch, as o2dlm, but asked of one node instead of all), so a
 * resource used by one node only is mastered there and costs no message
 * after the first. A stale idea of the master is answered NOT_MASTER and
 * looked up again, which keeps purging and migration simple.
 *
 * When a node dies, the lowest-numbered survivor runs recovery: every
 * survivor freezes, reports its locks on resources the dead node
 * mastered and the resources it masters itself; the recovery master
 * takes over the dead node's resources and the directory, and releases
 * everybody.
 */
#ifndef DLMD_H
#define DLMD_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "clusterconf.h"
#include "log.h"
#include "dlmwire.pb-c.h"
#include "envelope.pb-c.h"

#define DLM_MAX_NODES		255
#define DLM_NODE_NONE		255	/* O2NM_MAX_NODES: unknown master */
#define DLM_NAME_MAX		32	/* DLM_LOCKID_NAME_MAX */
#define DLM_DOMAIN_MAX		64	/* O2NM_MAX_NAME_LEN */
#define DLM_LVB_LEN		64
#define DLM_PROTO_MAJOR		1
#define DLM_PROTO_MINOR		0
#define DLM_PURGE_MS		8000	/* DLM_PURGE_INTERVAL_MS */
#define DLM_RETRY_MS		20	/* a bounced request is sent again */
#define DLM_JOIN_TIMEOUT_MS	90000	/* DLM_JOIN_TIMEOUT_MSECS */

enum dlm_mode { DLM_IV = -1, DLM_NL = 0, DLM_PR = 3, DLM_EX = 5 };

/* Request flags, o2dlm's values (as in proto/dlmd.proto). */
#define DLM_FL_VALBLK		0x100
#define DLM_FL_NOQUEUE		0x200
#define DLM_FL_CONVERT		0x400
#define DLM_FL_CANCEL		0x2000
#define DLM_FL_CLIENT		(DLM_FL_VALBLK | DLM_FL_NOQUEUE | DLM_FL_CONVERT)

/*
 * Node-to-node messages: netd types (o2dlm's numbers where it has one).
 * One list makes both the enum and dlmwire.c's table of names, so that
 * no type goes without a name in the logs.
 */
#define DLMWIRE_TYPES(X)						\
	X(LOOKUP, 500)		/* directory: who masters name? (MASTER_REQUEST) */ \
	X(DIR_SET, 501)		/* directory: name is now mastered by master */ \
	X(DIR_DROP, 502)	/* directory: master purged name */	\
	X(CREATE_LOCK, 503)						\
	X(CONVERT_LOCK, 504)						\
	X(PROXY_AST, 505)						\
	X(UNLOCK_LOCK, 506)						\
	X(MIGRATE, 509)		/* MIG_LOCKRES: take over a resource */	\
	X(QUERY_JOIN, 510)						\
	X(ASSERT_JOINED, 511)						\
	X(CANCEL_JOIN, 512)						\
	X(EXIT_DOMAIN, 513)						\
	X(RECO_DATA, 515)	/* LOCK_REQUEST: send me your state */	\
	X(BEGIN_RECO, 517)						\
	X(FINALIZE_RECO, 518)						\
	X(DIR_HANDOFF, 523)	/* a leaving directory's entries */	\
	X(LVB_BACKUP, 524)	/* keep this copy of a value block */	\
	X(LVB_FORGET, 525)	/* the master purged it: drop your copy */

#define DLMWIRE_ENUM(name, num)	WIRE_##name = num,
enum wire_type { DLMWIRE_TYPES(DLMWIRE_ENUM) };
#undef DLMWIRE_ENUM

/* Reply statuses between nodes (beside 0 = done). */
enum wire_status {
	WS_OK = 0,
	WS_GRANTED = 1,		/* create/convert: granted at once (lvb in reply) */
	WS_QUEUED = 2,		/* create/convert: the AST comes later */
	WS_NOTQUEUED = 3,	/* NOQUEUE and not grantable */
	WS_NOT_MASTER = 4,	/* look the master up again */
	WS_RETRY = 5,		/* recovering or migrating: send again later */
	WS_NOT_DIR = 6,		/* lookup: ask `directory` instead */
	WS_BAD = 7,		/* malformed or impossible */
	WS_ALREADY = 8,		/* cancel: it was granted meanwhile */
	WS_BUSY = 9,		/* convert: one is pending already */
};

/* Join answers (o2dlm's values). */
enum join_code {
	JOIN_DISALLOW = 0,
	JOIN_OK = 1,
	JOIN_OK_NO_MAP = 2,
	JOIN_PROTOCOL_MISMATCH = 3,
};

struct dlm_res;
struct dlm_domain;
struct dlmd;
struct ipc_conn;

enum lock_queue { Q_GRANTED = 0, Q_CONVERTING = 1, Q_BLOCKED = 2, Q_NONE = 3 };

/* What a lock owned on this node waits for from a remote master. */
enum lock_op { OP_NONE, OP_NEW, OP_CONVERT, OP_UNLOCK };

/* A client's membership of a domain: its locks there. */
struct dlm_member {
	LIST_ENTRY(dlm_member)	 dom_entry;
	LIST_ENTRY(dlm_member)	 client_entry;
	struct dlm_domain	*dom;
	struct dlm_client	*client;
	unsigned		 refs;
	int			 releasing;	/* client gone or leaving: locks go */
	int			 guards_disk;	/* a filesystem's: never released on its death */
	TAILQ_HEAD(, dlm_lock)	 locks;
	struct ipc_conn		*join_conn;	/* join reply pending */
	Envelope		*join_req;
	struct leave_reply	*leave_reply;	/* leave reply pending */
};

/*
 * A client's LEAVE is answered once it is really out: its locks gone and,
 * if it was the last client, the node gone from the cluster's domain (a
 * filesystem stops its heartbeat right after; a goodbye sent later would
 * look like a death to the others). By connection id: it may close first.
 */
struct leave_reply {
	LIST_ENTRY(leave_reply)	 entry;
	uint64_t		 conn_id;
	Envelope		 req;		/* type and id */
};

/* A connection to dlmd.sock. */
struct dlm_client {
	struct ipc_conn		*conn;
	LIST_HEAD(, dlm_member)	 members;
};

struct dlm_lock {
	TAILQ_ENTRY(dlm_lock)	 q_entry;	/* in res->queue[queue] */
	TAILQ_ENTRY(dlm_lock)	 own_entry;	/* in member->locks (local locks) */
	TAILQ_ENTRY(dlm_lock)	 local_entry;	/* in res->local (local locks) */
	LIST_ENTRY(dlm_lock)	 hash_entry;	/* in dom->locks by cookie */
	TAILQ_ENTRY(dlm_lock)	 ast_entry;	/* in dom->asts while delivery pends */
	struct dlm_res		*res;
	uint64_t		 cookie;
	uint8_t			 node;
	int			 mode;		/* granted; DLM_IV until first grant */
	int			 convert_mode;	/* DLM_IV unless converting/blocked */
	uint32_t		 flags;		/* of the pending request */
	enum lock_queue		 queue;
	int			 highest_blocked;	/* BAST sent for; DLM_IV none */
	uint64_t		 request_seq;	/* when it started waiting */
	/* deliveries pending (master side) */
	int			 ast_pending;
	int			 ast_status;
	int			 bast_pending;
	int			 bast_mode;
	int			 in_asts;
	/* local locks */
	struct dlm_member	*owner;
	uint64_t		 user;
	enum lock_op		 op;		/* waiting for the master */
	int			 op_sent;	/* in flight to op_master */
	uint8_t			 op_master;
	int			 cancel;	/* 1 wanted, 2 sent to the master */
	struct ipc_conn		*reply_conn;	/* unlock or cancel reply pending */
	Envelope		*reply_req;
	uint8_t			 lvb[DLM_LVB_LEN];	/* our copy */
	uint64_t		 lvb_version;
	int			 lvb_valid;
	int			 lvb_put;	/* lvb holds a value to push */
	int			 bk_state;	/* master: 1 backup sent, 2 kept elsewhere */
	int			 ast_held;	/* master: its deliveries wait for the backup */
	/*
	 * The number of the holder's latest create or convert: a request,
	 * reply or AST that a resend delivers late, after a newer request,
	 * is told from the newer one's by it (seq_older) and ignored.
	 */
	uint32_t		 op_seq;
};

TAILQ_HEAD(lock_list, dlm_lock);

struct dlm_res {
	LIST_ENTRY(dlm_res)	 hash_entry;
	TAILQ_ENTRY(dlm_res)	 wait_entry;	/* in dom->lookups */
	struct dlm_domain	*dom;
	uint8_t			 name[DLM_NAME_MAX];
	size_t			 namelen;
	uint8_t			 master;	/* DLM_NODE_NONE: unknown */
	uint64_t		 serial;	/* order of creation in its domain */
	int			 lookup_sent;
	int			 migrating;	/* handing over: requests RETRY */
	int			 recovering;	/* master died: frozen */
	struct lock_list	 queue[3];
	struct lock_list	 local;		/* the locks of this node's clients */
	uint8_t			 lvb[DLM_LVB_LEN];
	uint64_t		 lvb_version;
	int			 lvb_valid;
	uint64_t		 idle_since_ms;	/* 0 while in use */
	/* a copy of the value block kept for recovery (lvb.c) */
	uint8_t			 bk_lvb[DLM_LVB_LEN];
	uint64_t		 bk_version;
	int			 has_bk;
	uint8_t			 bk_master;	/* who mastered it when we got it */
	uint8_t			 bk_holders[(DLM_MAX_NODES + 7) / 8];	/* master: who has one */
	int			 reco_seen;	/* recovery master: rebuilt this round */
	int			 reco_strong;	/* a PR/EX holder vouches for its LVB */
	int			 reco_have;	/* some copy of its LVB was reported */
};

/* A directory entry (on the directory node). */
struct dlm_dirent {
	LIST_ENTRY(dlm_dirent)	 entry;
	uint8_t			 name[DLM_NAME_MAX];
	size_t			 namelen;
	uint8_t			 master;
};

#define DLM_HASH_BUCKETS	4096

/* Fenced while in a domain: its locks are void, a restart must wait for
 * the admin's clear-fence (the unit does not restart on this status). */
#define DLMD_EXIT_FENCED	3
/* A client died holding locks that guard its journal (a filesystem): the
 * node's incarnation ends with us, so that the others recover them; the
 * unit restarts us. */
#define DLMD_EXIT_CLIENT_DIED	4

enum domain_state { DS_REGISTERING, DS_JOINING, DS_JOINED, DS_LEAVING, DS_GONE };

struct dlm_domain {
	TAILQ_ENTRY(dlm_domain)	 entry;
	struct dlmd		*dlmd;
	char			 name[DLM_DOMAIN_MAX + 1];
	char			 logname[LOG_ESC_SIZE(DLM_DOMAIN_MAX)];	/* a client's: escaped */
	uint32_t		 key;
	enum domain_state	 state;
	uint8_t			 members[DLM_MAX_NODES];	/* domain map */
	uint8_t			 directory;
	uint8_t			 joining;	/* a node we said JOIN_OK to, or NONE */
	LIST_HEAD(, dlm_member)	 clients;
	LIST_HEAD(, dlm_res)	 res_hash[DLM_HASH_BUCKETS];
	LIST_HEAD(, dlm_lock)	 lock_hash[DLM_HASH_BUCKETS];
	LIST_HEAD(, dlm_dirent)	 dir_hash[DLM_HASH_BUCKETS];
	uint64_t		 nres, ndirents;
	uint64_t		 res_serial;	/* the last dlm_res.serial given */
	TAILQ_HEAD(, dlm_lock)	 asts;		/* deliveries pending */
	struct event		*ast_ev;
	TAILQ_HEAD(, dlm_res)	 lookups;	/* waiting for a master */
	struct event		*retry_ev;	/* resend bounced requests */
	struct event		*purge_ev;
	/* join, leave */
	struct join_state	*join;
	struct leave_state	*leave;
	LIST_HEAD(, leave_reply) leave_replies;	/* answered when out */
	int			 handing_off;	/* directory moving: lookups RETRY */
	/* recovery */
	uint8_t			 dead[DLM_MAX_NODES];	/* to recover */
	int			 recovering;	/* frozen */
	/* a member died since we joined: a resource that looks new may have
	   lived, with its value, only on that node */
	int			 lost_member;
	uint8_t			 reco_master;
	uint64_t		 reco_epoch;	/* accepted BEGIN_RECO */
	struct reco_state	*reco;		/* we are the recovery master */
	struct event		*reco_ev;
	int			 registered;	/* netd handlers */
	unsigned		 pending_regs;
	/* wire.c: the last "cannot reach node N" line, and failures since */
	uint64_t		 unreachable_at[DLM_MAX_NODES];
	unsigned		 unreachable_more[DLM_MAX_NODES];
};

struct dlmd {
	struct event_base	*base;
	const char		*rundir;
	const char		*node_name;
	const char		*conf, *tunables;
	unsigned		 local_node;
	struct ipc_server	*ipc;
	struct ipc_conn		*netd;
	const char		*membership;	/* hbd, or pcmkd on the pcmk stack */
	struct ipc_conn		*hbd;		/* to it */
	int			 netd_up;
	int			 hbd_up;
	int			 guarded;	/* hbd guards our locks; -1: not told yet */
	uint8_t			 live[DLM_MAX_NODES];	/* hbd's view */
	char			*regions[CC_MAX_REGIONS];	/* steady heartbeat regions */
	int			 regions_unsteady;	/* some region still starting */
	TAILQ_HEAD(, dlm_domain) domains;
	uint64_t		 cookie_seq;
	int			 stopping;
	int			 exit_status;	/* DLMD_EXIT_FENCED once fenced */
};

/* grant.c: o2dlm's granting rules on a mastered resource, pure. */
int	dlm_compatible(int held, int wanted);
int	dlm_mode_valid(int mode);
/* Returns WS_GRANTED, WS_QUEUED or WS_NOTQUEUED. */
int	grant_new(struct dlm_res *, struct dlm_lock *, uint32_t flags, int mode);
int	grant_convert(struct dlm_res *, struct dlm_lock *, uint32_t flags, int mode,
	    const uint8_t *lvb);
/* Unlock a granted lock (lvb: EX holder's new value, or NULL). */
void	grant_unlock(struct dlm_res *, struct dlm_lock *, const uint8_t *lvb);
/* WS_OK (cancelled) or WS_ALREADY (granted, nothing to cancel). */
int	grant_cancel(struct dlm_res *, struct dlm_lock *);
/* Grant what can be granted, queue ASTs and BASTs. */
void	grant_shuffle(struct dlm_res *);
void	grant_remove(struct dlm_res *, struct dlm_lock *);
/* Delivery hooks, set by the daemon (tests set their own). */
struct grant_hooks {
	void	(*ast)(struct dlm_lock *, int status);
	void	(*bast)(struct dlm_lock *, int blocked);
};
extern struct grant_hooks grant_hooks;

/* lockres.c: resources, locks and directory entries of a domain. */
uint64_t res_hash(const uint8_t *name, size_t len);
struct dlm_res *res_find(struct dlm_domain *, const uint8_t *name, size_t len);
struct dlm_res *res_get(struct dlm_domain *, const uint8_t *name, size_t len);
int	res_in_use(const struct dlm_res *);
void	res_touch(struct dlm_res *);
void	res_free(struct dlm_res *);
struct dlm_lock *lock_new(struct dlm_res *, uint64_t cookie, unsigned node);
struct dlm_lock *lock_find(struct dlm_domain *, uint64_t cookie);
void	lock_free(struct dlm_lock *);
struct dlm_dirent *dir_find(struct dlm_domain *, const uint8_t *name, size_t len);
void	dir_set(struct dlm_domain *, const uint8_t *name, size_t len, unsigned master);
void	dir_drop(struct dlm_domain *, const uint8_t *name, size_t len);
void	dir_clear(struct dlm_domain *);
void	domain_purge_start(struct dlm_domain *);
const char *name_printable(const uint8_t *, size_t);
const char *res_printable(const struct dlm_res *);

/* ast.c: delivering grants and BASTs to clients and other nodes. */
void	ast_hooks_init(void);
void	ast_queue_flush(struct dlm_domain *);
void	ast_take(struct dlm_lock *);
/* The AST and BAST lk's ast_held kept back go out now. */
void	ast_release(struct dlm_lock *);
void	ast_client(struct dlm_lock *, int status);
void	bast_client(struct dlm_lock *, int blocked);

/* lock.c: client requests, wherever the master is. */
int	lock_request(struct dlm_member *, const Dlmd__LockRequest *, uint64_t *lockid,
	    const char **why);
int	unlock_request(struct dlm_member *, struct ipc_conn *, const Envelope *req,
	    const char **why);
void	lock_drive(struct dlm_lock *);
void	domain_retry(struct dlm_domain *);
void	member_release_locks(struct dlm_member *);
void	lock_unlock_if_orphan(struct dlm_lock *);
void	lock_master_lost(struct dlm_lock *);
void	lock_handlers_init(void);
void	res_master_known(struct dlm_res *);

/* remote.c: the master's side of other nodes' requests. */
void	remote_handlers_init(void);

/* domain.c */
struct dlm_domain *domain_find(struct dlmd *, const char *name);
struct dlm_domain *domain_find_key(struct dlmd *, uint32_t key);
struct dlm_domain *domain_new(struct dlmd *, const char *name, uint32_t key);
void	domain_join(struct dlmd *, struct dlm_client *, struct ipc_conn *,
	    const Envelope *req);
void	domain_leave(struct dlm_member *, struct ipc_conn *, const Envelope *req);
void	domain_info(struct dlm_domain *, Dlmd__DomainInfo *, uint32_t *members_buf);
int	domain_is_member(const struct dlm_domain *, unsigned node);
void	domain_publish(struct dlm_domain *, int kind, unsigned node);
void	domain_node_down(struct dlm_domain *, unsigned node);
void	domain_registered(struct dlm_domain *, int ok);
int	domain_lowest_member(const struct dlm_domain *);
void	domain_maybe_destroy(struct dlm_domain *);
void	domain_reap_later(struct dlm_domain *);
void	domain_leave_resume(struct dlm_domain *);
void	domain_handlers_init(void);


/* recovery.c */
void	reco_node_down(struct dlm_domain *, unsigned node);
void	reco_begin_if_master(struct dlm_domain *);
void	reco_handlers_init(void);

/* dlmwire.c: dlmd-to-dlmd messages through netd. */
typedef void wire_reply_fn(struct dlm_domain *, int err, const Dlmwire__Msg *rep,
	    void *arg);
typedef void wire_handler_fn(struct dlm_domain *, unsigned from, const Dlmwire__Msg *m,
	    Dlmwire__Msg *rep);
struct wire_handler {
	enum wire_type	 type;
	wire_handler_fn	*fn;
};
void	wire_register_handlers(const struct wire_handler *, size_t n);
/* Every table of node-to-node handlers, and the AST hooks: dlmd's start. */
void	dlmd_handlers_init(void);
void	wire_send(struct dlm_domain *, unsigned node, enum wire_type, const Dlmwire__Msg *,
	    wire_reply_fn *, void *arg);
void	wire_domain_register(struct dlm_domain *, int reg);
/*
 * Run our handler of `type` in domain d on a message from node `from`
 * (from netd, or one to ourselves): the packed reply in *out (free it),
 * its length returned and *status 0; or *status ENOPROTOOPT (no such
 * handler) or EBADMSG (it does not decode) and no reply.
 */
size_t	wire_handle(struct dlm_domain *d, uint32_t type, unsigned from,
	    const uint8_t *payload, size_t len, uint8_t **out, int *status);
void	netd_link_start(struct dlmd *);
/* The name of a message type for the logs; "?" for one we do not know. */
const char *wire_type_name(uint32_t type);
/* Our handler of a message type, or NULL. */
const struct wire_handler *wire_handler_find(uint32_t type);

/* migrate.c: handing resources and the directory over when leaving. */
void	migrate_all(struct dlm_domain *, unsigned *outstanding, wire_reply_fn *);
int	dir_handoff(struct dlm_domain *, unsigned *outstanding, wire_reply_fn *);
void	migrate_handlers_init(void);
void	wire_free_resource(Dlmwire__Resource *);
void	wire_free_resources(Dlmwire__Resource **, size_t);
Dlmwire__Lock *wire_lock(const struct dlm_lock *, int mode);

/* 1 when request number a came before b; 0 (a peer that sends none) never does. */
static inline int
seq_older(uint32_t a, uint32_t b)
{
	return a != 0 && (int32_t)(a - b) < 0;
}

/* lvb.c: value blocks that survive the death of their master. */
void	lvb_write(struct dlm_lock *, const uint8_t *data, size_t len);
int	lvb_backup_first(struct dlm_lock *);
void	lvb_backup_hold_ast(struct dlm_lock *);
void	lvb_applied(struct dlm_res *, unsigned writer);
void	lvb_keep_copy(struct dlm_lock *);
void	lvb_forget(struct dlm_res *);
void	lvb_handlers_init(void);

/* hblink.c: hbd's node events. */
void	hbd_link_start(struct dlmd *);
/* At exit: what the link keeps of the membership daemon's regions. */
void	hbd_link_free(struct dlmd *);
int	hbd_steady(const struct dlmd *);
void	hbd_guard_update(struct dlmd *);

/* api.c: dlmd.sock */
void	api_start(struct dlmd *);
void	api_send_event(struct ipc_conn *, Envelope *);


#endif
