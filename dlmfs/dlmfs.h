/*
 * dlmfs: the kernel's ocfs2_dlmfs as a FUSE daemon, a client of dlmd.
 *
 * A directory at the root is a joined domain, a file in it is a cluster
 * lock that open() takes (O_RDONLY PR, else EX; O_NONBLOCK a trylock
 * failing with ETXTBSY), whose contents are the 64-byte LVB and whose
 * poll() says another node wants it.
 *
 *   tree.c        the inodes: root, domains, lock files; parked requests
 *   levelcache.c  one cluster lock per lock file, its level cached after
 *                 close as userdlm caches it
 *   session.c     the connection to dlmd.sock: joins, leaves, ASTs, BASTs,
 *                 reconnecting and rejoining when it is lost
 *   ops.c         the FUSE operations
 *   main.c        options, the mount, the event loop, signals
 *
 * One event loop on one thread serves both FUSE and dlmd.sock. A FUSE
 * request that waits for the cluster (mkdir for the join, open for the
 * grant) is parked and answered from the IPC callback, so nothing ever
 * blocks the loop.
 */
#ifndef DLMFS_DLMFS_H
#define DLMFS_DLMFS_H

#define FUSE_USE_VERSION 34

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>
#include <time.h>

#include <event2/event.h>
#include <fuse_lowlevel.h>

#include "ipc.h"

#define DOMAIN_NAME_MAX	64	/* a name is shorter: the kernel's GROUP_NAME_MAX */
#define LOCK_NAME_MAX	32	/* USER_DLM_LOCK_ID_MAX_LEN, likewise */
#define LVB_LEN		64
#define LOCK_HASH	1024

#define LVL_IV		(-1)	/* no cluster lock */
#define LVL_NL		DLMD__MODE__MODE_NL
#define LVL_PR		DLMD__MODE__MODE_PR
#define LVL_EX		DLMD__MODE__MODE_EX

/* Lock state, userdlm's flags. */
#define LK_BUSY		0x01	/* a lock or convert request awaits its Ast */
#define LK_BLOCKED	0x02	/* a BAST asks for a level compatible with `blocking` */
#define LK_CANCEL	0x04	/* the busy request is being cancelled */
#define LK_TEARDOWN	0x08	/* unlink waits to unlock it */
#define LK_UNLOCKING	0x10	/* its unlock is sent */

enum node_kind { N_ROOT, N_DOMAIN, N_LOCK };

enum dom_state {
	DOM_JOINING,		/* mkdir waits for the join; not visible yet */
	DOM_JOINED,
	DOM_REJOINING,		/* the connection was lost: join again */
	DOM_LOST,		/* the join after a reconnect failed */
	DOM_LEAVING,		/* rmdir waits for the leave */
};

struct dlmfs_req;
TAILQ_HEAD(reqq, dlmfs_req);

/* What a FUSE inode number points to (domains and locks begin with it). */
struct dlmfs_node {
	enum node_kind		 kind;
	TAILQ_ENTRY(dlmfs_node)	 all;
	uint64_t		 ino;		/* st_ino, never reused */
	uint64_t		 nlookup;	/* the kernel's references */
	int			 removed;	/* unlinked or rmdir'ed */
	mode_t			 mode;
	uid_t			 uid;
	gid_t			 gid;
	struct timespec		 atime, mtime, ctime;
};

struct dlmfs_dom {
	struct dlmfs_node	 node;
	TAILQ_ENTRY(dlmfs_dom)	 entry;
	char			 name[DOMAIN_NAME_MAX];
	enum dom_state		 state;
	int			 inflight;	/* IPC requests naming it */
	struct reqq		 mkdirs;
	fuse_req_t		 rmdir;
	TAILQ_HEAD(, dlmfs_lock) locks;
};

/* A lock file and its one cluster lock, shared by its open files. */
struct dlmfs_lock {
	struct dlmfs_node	 node;
	TAILQ_ENTRY(dlmfs_lock)	 entry;
	LIST_ENTRY(dlmfs_lock)	 hash;		/* by node.ino, the `user` of its events */
	struct dlmfs_dom	*dom;		/* NULL once removed */
	char			 name[LOCK_NAME_MAX];
	uint64_t		 lockid;
	int			 level;		/* granted */
	int			 requested;	/* by the busy request */
	int			 blocking;	/* highest mode a BAST asked for */
	int			 noqueue;	/* the busy request is a trylock */
	unsigned int		 flags;
	int			 ro_holders, ex_holders;
	int			 inflight;	/* IPC requests naming it */
	int			 lock_replies;	/* LOCK replies still due */
	uint8_t			 lvb[LVB_LEN];
	int			 lvb_valid;
	struct reqq		 waiters;	/* opens waiting for a level */
	TAILQ_HEAD(, dlmfs_fh)	 fhs;
	fuse_req_t		 unlink;
};

/* A parked FUSE request: an open waiting for its level, or a mkdir. */
struct dlmfs_req {
	TAILQ_ENTRY(dlmfs_req)	 entry;
	TAILQ_ENTRY(dlmfs_req)	 all;
	struct reqq		*queue;
	fuse_req_t		 req;
	struct dlmfs_lock	*lk;
	struct fuse_file_info	 fi;
	int			 create;
	int			 level;
	int			 trylock;
	int			 attempt;	/* its trylock is the busy request */
	int			 interrupted;
};

/* One open file: a holder of its lock at `level`. */
struct dlmfs_fh {
	TAILQ_ENTRY(dlmfs_fh)	 entry;
	struct dlmfs_lock	*lk;
	int			 level;
	uint64_t		 gen;		/* of the connection it was granted on */
	struct fuse_pollhandle	*ph;
};

/* The daemon: one tree, one FUSE session, one connection to dlmd. */
struct dlmfs {
	struct event_base	*base;
	struct fuse_session	*se;
	struct fuse_buf		 buf;
	struct event		*fuse_ev;
	struct event		*retry_ev;
	struct event		*interrupted_ev;	/* answers interrupted requests */
	char			*sock_path;
	char			*mountpoint;
	struct ipc_conn		*conn;
	uint64_t		 gen;		/* bumped when the connection is lost */
	int			 warned;
	int			 stopping;
	uint64_t		 next_ino;
	struct dlmfs_node	 root;
	TAILQ_HEAD(, dlmfs_node) nodes;
	TAILQ_HEAD(, dlmfs_dom)	 doms;
	struct reqq		 reqs;
	LIST_HEAD(, dlmfs_lock)	 hash[LOCK_HASH];
};

/* The one instance, made by main.c. */
extern struct dlmfs *dfs;

/* tree.c */
void	tree_init(void);
void	tree_free(void);
struct dlmfs_node *node_of(fuse_ino_t);
struct dlmfs_dom *as_dom(struct dlmfs_node *);
struct dlmfs_lock *as_lock(struct dlmfs_node *);
void	node_maybe_free(struct dlmfs_node *);
void	node_forget(fuse_ino_t, uint64_t nlookup);
void	node_stat(const struct dlmfs_node *, struct stat *);
void	node_entry_param(struct dlmfs_node *, struct fuse_entry_param *);
void	node_reply_entry(fuse_req_t, struct dlmfs_node *);
struct dlmfs_dom *dom_find(const char *name);
struct dlmfs_dom *dom_new(const char *name, mode_t, fuse_req_t);
void	dom_remove(struct dlmfs_dom *);
struct dlmfs_lock *lockfile_find(struct dlmfs_dom *, const char *name);
struct dlmfs_lock *lockfile_by_user(uint64_t user);
struct dlmfs_lock *lockfile_new(struct dlmfs_dom *, const char *name, mode_t, fuse_req_t);
void	lockfile_remove(struct dlmfs_lock *);
struct dlmfs_req *req_park(fuse_req_t, struct reqq *);
void	req_done(struct dlmfs_req *);
void	req_fail(struct dlmfs_req *, int err);
void	req_answer_interrupted(evutil_socket_t, short, void *);

/* levelcache.c */
void	cache_open(fuse_req_t, struct dlmfs_lock *, struct fuse_file_info *, int create);
void	cache_release(struct dlmfs_fh *);
void	cache_process(struct dlmfs_lock *);
void	cache_fail_waiters(struct dlmfs_lock *, int err, int attempts_only);
void	cache_reset(struct dlmfs_lock *);
void	cache_ast(const Dlmd__Ast *);
void	cache_bast(const Dlmd__Bast *);

/* session.c */
int	dlmd_errno(int status);
void	session_connect(void);
void	session_retry(evutil_socket_t, short, void *);
int	session_join(struct dlmfs_dom *);
int	session_leave(struct dlmfs_dom *);

/* ops.c */
extern const struct fuse_lowlevel_ops dlmfs_ops;

#endif
