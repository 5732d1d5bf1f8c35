/*
 * libo2dlm for dlmd: the client side of dlmd.sock, in two layers.
 *
 * struct dlmc is the wire layer: one connection to dlmd, requests sent
 * with ids and matched to their replies, events (Ast, Bast, domain
 * events) kept in arrival order until the caller dispatches them. Many
 * requests may be in flight; no event is ever dropped. Plain poll(2),
 * read(2) and send(2): it fits any event loop through dlmc_fd().
 *
 * struct o2dlm_ctxt is ocfs2-tools' libo2dlm API (o2dlm_initialize,
 * o2dlm_lock, ...) on top of it: one domain per context, locks named by
 * strings, blocking calls, errcode_t results.
 *
 * Neither layer is thread-safe: use one handle per thread. A connection
 * that closes loses every lock it held, so keep the handle open for as
 * long as the locks are needed (and out of fork()ed children: the
 * socket is close-on-exec).
 */
#ifndef O2DLM_H
#define O2DLM_H

#include <stddef.h>
#include <stdint.h>

#define DLMC_LVB_LEN		64
#define DLMC_NAME_MAX		32	/* bytes of a lock name */
#define DLMC_DOMAIN_MAX		64	/* bytes of a domain name */
#define DLMC_MAX_NODES		255

/* Modes and flags: o2dlm's values, as dlmd.proto carries them. */
#define DLMC_NL			0
#define DLMC_PR			3
#define DLMC_EX			5

#define DLMC_F_VALBLK		0x100	/* get the LVB on grant, put it from EX */
#define DLMC_F_NOQUEUE		0x200	/* trylock: the Ast says EAGAIN */
#define DLMC_F_CONVERT		0x400	/* convert the lock args.lockid */
#define DLMC_F_CANCEL		0x2000	/* unlock: cancel a waiting request */

/* Domain event kinds, dlmd.proto's DomainEventKind. */
#define DLMC_NODE_DOWN		0
#define DLMC_RECOVERY_DONE	1
#define DLMC_NODE_JOINED	2
#define DLMC_NODE_LEFT		3

struct dlmc;

/* A lock or convert request completed. */
struct dlmc_ast {
	uint64_t	lockid;
	uint64_t	user;
	int		status;		/* 0 granted, EAGAIN (NOQUEUE), ECANCELED */
	int		mode;		/* the mode now held */
	int		has_lvb;	/* VALBLK and granted PR or EX */
	int		lvb_valid;	/* 0: an EX holder died, it may be stale */
	uint8_t		lvb[DLMC_LVB_LEN];
};

/* Another request waits for this lock to come down to `blocked`. */
struct dlmc_bast {
	uint64_t	lockid;
	uint64_t	user;
	int		blocked;
};

struct dlmc_domain_event {
	char		domain[DLMC_DOMAIN_MAX + 1];
	int		kind;		/* DLMC_NODE_DOWN ... */
	unsigned	node;
};

struct dlmc_domain_info {
	uint32_t	key;
	uint32_t	directory;
	int		recovering;
	unsigned	protocol_major;
	unsigned	protocol_minor;
	size_t		nmembers;
	uint32_t	members[DLMC_MAX_NODES];
};

/*
 * Callbacks for events, run only from dlmc_dispatch() and while
 * dlmc_wait_ast() waits; any may be NULL (the event is then discarded).
 * They may call every dlmc function but dlmc_close().
 */
struct dlmc_callbacks {
	void	(*ast)(struct dlmc *, const struct dlmc_ast *, void *arg);
	void	(*bast)(struct dlmc *, const struct dlmc_bast *, void *arg);
	void	(*domain_event)(struct dlmc *, const struct dlmc_domain_event *,
		    void *arg);
};

/* The reply to a request sent with a dlmc_*_send function. */
typedef void dlmc_reply_fn(struct dlmc *, int status, uint64_t lockid, void *arg);

/* A lock request, as dlmd.proto's LockRequest. */
struct dlmc_lock_args {
	const char	*domain;
	const void	*name;		/* 1-32 bytes, binary allowed */
	size_t		 namelen;
	int		 mode;		/* DLMC_NL, DLMC_PR or DLMC_EX */
	uint32_t	 flags;		/* DLMC_F_* */
	uint64_t	 lockid;	/* DLMC_F_CONVERT: the lock to convert */
	const uint8_t	*lvb;		/* down-convert from EX: 64 bytes, or NULL */
	uint64_t	 user;		/* echoed in the lock's Ast and Bast */
};

/*
 * Every int function returns 0, or -1 with errno: the daemon's errno
 * when it refused (the reason in dlmc_error()), ECONNRESET once the
 * connection is lost, ETIMEDOUT when a wait ran out.
 */

/* Connect to <rundir>/dlmd.sock (rundir NULL: the default one). */
struct dlmc *dlmc_open(const char *rundir, const struct dlmc_callbacks *cb,
	    void *arg);
/* Use a connected stream socket; it becomes the handle's. */
struct dlmc *dlmc_open_fd(int fd, const struct dlmc_callbacks *cb, void *arg);
/* Close the connection (dlmd drops its locks); pending replies are not run. */
void	dlmc_close(struct dlmc *);
/* The socket, to poll for POLLIN; then call dlmc_dispatch(). */
int	dlmc_fd(const struct dlmc *);
/* How long blocking calls wait for their reply (-1, the default: forever). */
void	dlmc_set_timeout(struct dlmc *, int timeout_ms);
/* The daemon's reason for the last refusal. */
const char *dlmc_error(const struct dlmc *);

/*
 * Read what the socket has without blocking, then run the callbacks of
 * every queued event and the reply functions of completed requests, in
 * arrival order. Events that arrived during a blocking call are queued
 * without making the socket readable: a poll loop calls this after each
 * blocking call too (or checks dlmc_queued()). Returns how many were
 * run, or -1 (ECONNRESET, EPROTO) once the connection is gone and
 * nothing is left to run.
 */
int	dlmc_dispatch(struct dlmc *);
size_t	dlmc_queued(const struct dlmc *);

/* Blocking requests: each returns when its reply is in. */
#define DLMC_JOIN_GUARDS_DISK	0x1	/* a filesystem: see dlmd.proto's Domain */
int	dlmc_join(struct dlmc *, const char *domain, unsigned flags,
	    struct dlmc_domain_info *info);
int	dlmc_leave(struct dlmc *, const char *domain);
/* Queue a lock or convert; *lockid is its id, completion its Ast. */
int	dlmc_lock(struct dlmc *, const struct dlmc_lock_args *, uint64_t *lockid);
int	dlmc_unlock(struct dlmc *, const char *domain, uint64_t lockid,
	    uint32_t flags, const uint8_t *lvb);

/* The same, asynchronous: fn runs from dlmc_dispatch() with the reply. */
int	dlmc_lock_send(struct dlmc *, const struct dlmc_lock_args *,
	    dlmc_reply_fn *fn, void *arg);
int	dlmc_unlock_send(struct dlmc *, const char *domain, uint64_t lockid,
	    uint32_t flags, const uint8_t *lvb, dlmc_reply_fn *fn, void *arg);

/*
 * Wait up to timeout_ms (-1: forever) for the Ast of lockid, running
 * the callbacks of other events meanwhile; the awaited Ast goes to
 * *ast, not to the ast callback.
 */
int	dlmc_wait_ast(struct dlmc *, uint64_t lockid, int timeout_ms,
	    struct dlmc_ast *ast);
/*
 * dlmc_lock() then dlmc_wait_ast(): 0 once granted. -1 with errno
 * EAGAIN (NOQUEUE and not grantable), ECANCELED, or ETIMEDOUT: the
 * request was then cancelled (a convert keeps its old mode; a grant
 * that won the race is kept and returned as success). *ast has the
 * last Ast seen, *lockid the lock's id.
 */
int	dlmc_lock_wait(struct dlmc *, const struct dlmc_lock_args *,
	    int timeout_ms, uint64_t *lockid, struct dlmc_ast *ast);

/*
 * Caching a lock's level after its last local holder is gone, as the
 * kernel's dlmglue (fsd) and userdlm (dlmfs) do: the rules both share.
 * Another node's request for `blocked`, arriving as a BAST, is satisfied
 * once this node is down to dlmc_compat_level(blocked); this node's
 * holders are in the way while dlmc_holders_conflict() says so.
 */
int	dlmc_compat_level(int blocked);
int	dlmc_holders_conflict(int ro_holders, int ex_holders, int blocked);
const char *dlmc_level_name(int level);

/* The libo2dlm API. */
typedef long errcode_t;		/* as com_err's: the two headers may meet */

#define O2DLM_LOCK_ID_MAX_LEN	DLMC_NAME_MAX
#define O2DLM_DOMAIN_MAX_LEN	DLMC_DOMAIN_MAX
#define O2DLM_TRYLOCK		0x01
#define O2DLM_VALID_FLAGS	O2DLM_TRYLOCK

enum o2dlm_lock_level {
	O2DLM_LEVEL_PRMODE = DLMC_PR,
	O2DLM_LEVEL_EXMODE = DLMC_EX,
};

/* Error codes; 0 is success. */
enum {
	O2DLM_ET_NO_MEMORY = 1,
	O2DLM_ET_INVALID_ARGS,
	O2DLM_ET_INVALID_DOMAIN_NAME,
	O2DLM_ET_INVALID_LOCK_NAME,
	O2DLM_ET_INVALID_LOCK_LEVEL,
	O2DLM_ET_SERVICE_UNAVAILABLE,	/* dlmd is not running */
	O2DLM_ET_DOMAIN_CREATE,
	O2DLM_ET_DOMAIN_DESTROY,
	O2DLM_ET_RECURSIVE_LOCK,
	O2DLM_ET_TRYLOCK_FAILED,
	O2DLM_ET_LOCKING,
	O2DLM_ET_UNLOCKING,
	O2DLM_ET_UNKNOWN_LOCK,
	O2DLM_ET_BUSY_LOCK,
	O2DLM_ET_LVB_READ,
	O2DLM_ET_LVB_WRITE,
	O2DLM_ET_BAST_UNSUPPORTED,
	O2DLM_ET_CONNECTION_LOST,
	O2DLM_ET_INTERNAL_FAILURE,
};

struct o2dlm_ctxt;

/* The message of an errcode_t, for any value. */
const char *o2dlm_errmsg(errcode_t);

/* Connect to dlmd (rundir NULL: the default) and join the domain. */
errcode_t o2dlm_initialize(const char *rundir, const char *domain,
	    struct o2dlm_ctxt **ctxt);
/* Unlock every lock (pushing written LVBs), leave the domain, free ctxt. */
errcode_t o2dlm_destroy(struct o2dlm_ctxt *ctxt);
/* Take lockid at level, waiting for it unless O2DLM_TRYLOCK. */
errcode_t o2dlm_lock(struct o2dlm_ctxt *ctxt, const char *lockid, int lockflags,
	    enum o2dlm_lock_level level);
/*
 * The same, and run bast_func(bast_arg) from o2dlm_process_bast() once
 * another node wants the lock. *poll_fd turns readable then (it is the
 * context's, shared by its locks, and stays open until o2dlm_destroy).
 */
errcode_t o2dlm_lock_with_bast(struct o2dlm_ctxt *ctxt, const char *lockid,
	    int lockflags, enum o2dlm_lock_level level,
	    void (*bast_func)(void *bast_arg), void *bast_arg, int *poll_fd);
/* Run the bast functions of the locks that were asked to come down. */
void	o2dlm_process_bast(struct o2dlm_ctxt *ctxt, int poll_fd);
/* Release lockid; an LVB written at EX reaches the resource. */
errcode_t o2dlm_unlock(struct o2dlm_ctxt *ctxt, const char *lockid);
/* Forget an unlocked lock (dlmd purges unused resources by itself). */
errcode_t o2dlm_drop_lock(struct o2dlm_ctxt *ctxt, const char *lockid);
/*
 * The LVB of the last grant, or what this holder wrote; as dlmfs's
 * read(2), none (*bytes_read 0) when dlmd says it may be stale.
 */
errcode_t o2dlm_read_lvb(struct o2dlm_ctxt *ctxt, const char *lockid,
	    char *lvb, unsigned int len, unsigned int *bytes_read);
/* Needs EX; the value reaches the resource when the lock is unlocked. */
errcode_t o2dlm_write_lvb(struct o2dlm_ctxt *ctxt, const char *lockid,
	    const char *lvb, unsigned int len, unsigned int *bytes_written);
errcode_t o2dlm_supports_bast(int *supports);

#endif
