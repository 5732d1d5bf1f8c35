/*
 * ocfs2-tools' libo2dlm API on dlmd: a context is one connection that
 * joined one domain; a lock is a string id held at PR or EX until
 * unlocked. Locks always carry the LVB (VALBLK), as dlmfs's do: a grant
 * brings the resource's value, an EX holder's write goes back with its
 * unlock.
 *
 * BASTs: the poll fd handed out is an epoll set of the connection and
 * of an eventfd, so that it turns readable both for a Bast still on the
 * socket and for one already read during a blocking call.
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "o2dlm.h"

struct o2dlm_lock_res {
	TAILQ_ENTRY(o2dlm_lock_res) entry;
	char		 name[O2DLM_LOCK_ID_MAX_LEN + 1];
	uint64_t	 lockid;
	int		 level;
	uint8_t		 lvb[DLMC_LVB_LEN];
	int		 lvb_valid;
	int		 lvb_dirty;	/* written at EX: push it on unlock */
	void		(*bast_func)(void *);
	void		*bast_arg;
	int		 bast_pending;
};

struct o2dlm_ctxt {
	struct dlmc	*dlmc;
	char		 domain[O2DLM_DOMAIN_MAX_LEN + 1];
	int		 poll_fd;	/* epoll of the socket and `wake`, or -1 */
	int		 wake;		/* eventfd: a Bast was read */
	TAILQ_HEAD(, o2dlm_lock_res) locks;
};

static const char *const errmsgs[] = {
	[0] = "Success",
	[O2DLM_ET_NO_MEMORY] = "Unable to allocate memory",
	[O2DLM_ET_INVALID_ARGS] = "Invalid arguments",
	[O2DLM_ET_INVALID_DOMAIN_NAME] = "Invalid domain name",
	[O2DLM_ET_INVALID_LOCK_NAME] = "Invalid lock name",
	[O2DLM_ET_INVALID_LOCK_LEVEL] = "Invalid lock level",
	[O2DLM_ET_SERVICE_UNAVAILABLE] = "The lock manager (dlmd) is not running",
	[O2DLM_ET_DOMAIN_CREATE] = "Unable to join the lock domain",
	[O2DLM_ET_DOMAIN_DESTROY] = "Unable to leave the lock domain",
	[O2DLM_ET_RECURSIVE_LOCK] = "The lock is already held by this context",
	[O2DLM_ET_TRYLOCK_FAILED] = "Trylock failed: the lock is held elsewhere",
	[O2DLM_ET_LOCKING] = "Error while locking",
	[O2DLM_ET_UNLOCKING] = "Error while unlocking",
	[O2DLM_ET_UNKNOWN_LOCK] = "The lock is not held by this context",
	[O2DLM_ET_BUSY_LOCK] = "The lock is in use",
	[O2DLM_ET_LVB_READ] = "Unable to read the lock value block",
	[O2DLM_ET_LVB_WRITE] = "Writing the lock value block needs an EX lock",
	[O2DLM_ET_BAST_UNSUPPORTED] = "Blocking ASTs are not supported",
	[O2DLM_ET_CONNECTION_LOST] = "The connection to dlmd was lost: its locks are gone",
	[O2DLM_ET_INTERNAL_FAILURE] = "Internal failure",
};

const char *
o2dlm_errmsg(errcode_t err)
{
	if (err < 0 || (size_t)err >= sizeof(errmsgs) / sizeof(errmsgs[0]) ||
	    errmsgs[err] == NULL)
		return "Unknown o2dlm error";
	return errmsgs[err];
}

/* What an errno of the wire layer means here; `other` for the rest. */
static errcode_t
from_errno(int err, errcode_t other)
{
	switch (err) {
	case ENOMEM:
		return O2DLM_ET_NO_MEMORY;
	case EAGAIN:
		return O2DLM_ET_TRYLOCK_FAILED;
	case ECONNRESET:
	case EPIPE:
	case EPROTO:
		return O2DLM_ET_CONNECTION_LOST;
	case ENOENT:
	case ECONNREFUSED:
		return O2DLM_ET_SERVICE_UNAVAILABLE;
	default:
		return other;
	}
}

static struct o2dlm_lock_res *
find_lock(struct o2dlm_ctxt *ctxt, const char *lockid)
{
	struct o2dlm_lock_res *lr;

	TAILQ_FOREACH(lr, &ctxt->locks, entry)
		if (strcmp(lr->name, lockid) == 0)
			return lr;
	return NULL;
}

static void
ctxt_bast(struct dlmc *c, const struct dlmc_bast *b, void *arg)
{
	struct o2dlm_ctxt *ctxt = arg;
	struct o2dlm_lock_res *lr;

	(void)c;
	TAILQ_FOREACH(lr, &ctxt->locks, entry) {
		if (lr->lockid != b->lockid || lr->bast_func == NULL)
			continue;
		lr->bast_pending = 1;
		/* Fails only when the counter is full: readable anyway. */
		(void)eventfd_write(ctxt->wake, 1);
	}
}

/*
 * Run what blocking calls queued, so that Basts they read make the poll
 * fd readable; a lost connection shows in the next call instead.
 */
static void
flush_events(struct o2dlm_ctxt *ctxt)
{
	while (dlmc_queued(ctxt->dlmc) > 0 && dlmc_dispatch(ctxt->dlmc) > 0)
		continue;
}

static int
valid_lock_name(const char *lockid)
{
	size_t len = strlen(lockid);

	/* Names starting with '.' are reserved, as in libo2dlm. */
	return len > 0 && len <= O2DLM_LOCK_ID_MAX_LEN && lockid[0] != '.';
}

errcode_t
o2dlm_initialize(const char *rundir, const char *domain, struct o2dlm_ctxt **ctxt)
{
	static const struct dlmc_callbacks cb = { .bast = ctxt_bast };
	struct o2dlm_ctxt *x;
	size_t len;
	errcode_t ret;

	if (domain == NULL || ctxt == NULL)
		return O2DLM_ET_INVALID_ARGS;
	len = strlen(domain);
	if (len == 0 || len > O2DLM_DOMAIN_MAX_LEN || strchr(domain, '/') != NULL)
		return O2DLM_ET_INVALID_DOMAIN_NAME;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return O2DLM_ET_NO_MEMORY;
	memcpy(x->domain, domain, len + 1);
	x->poll_fd = x->wake = -1;
	TAILQ_INIT(&x->locks);
	if ((x->dlmc = dlmc_open(rundir, &cb, x)) == NULL) {
		ret = from_errno(errno, O2DLM_ET_SERVICE_UNAVAILABLE);
		free(x);
		return ret;
	}
	if (dlmc_join(x->dlmc, domain, 0, NULL) == -1) {
		ret = errno == EINVAL ? O2DLM_ET_INVALID_DOMAIN_NAME :
		    from_errno(errno, O2DLM_ET_DOMAIN_CREATE);
		dlmc_close(x->dlmc);
		free(x);
		return ret;
	}
	*ctxt = x;
	return 0;
}

/* The epoll set behind every poll fd of the context, made once. */
static errcode_t
make_poll_fd(struct o2dlm_ctxt *ctxt)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (ctxt->poll_fd != -1)
		return 0;
	if ((ctxt->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		return O2DLM_ET_INTERNAL_FAILURE;
	if ((ctxt->poll_fd = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    epoll_ctl(ctxt->poll_fd, EPOLL_CTL_ADD, ctxt->wake, &ev) == -1 ||
	    epoll_ctl(ctxt->poll_fd, EPOLL_CTL_ADD, dlmc_fd(ctxt->dlmc), &ev) == -1) {
		if (ctxt->poll_fd != -1)
			close(ctxt->poll_fd);
		close(ctxt->wake);
		ctxt->poll_fd = ctxt->wake = -1;
		return O2DLM_ET_INTERNAL_FAILURE;
	}
	return 0;
}

static errcode_t
lock_common(struct o2dlm_ctxt *ctxt, const char *lockid, int lockflags,
    enum o2dlm_lock_level level, void (*bast_func)(void *), void *bast_arg)
{
	struct dlmc_lock_args a = { 0 };
	struct dlmc_ast ast;
	struct o2dlm_lock_res *lr;
	uint64_t id;

	if (ctxt == NULL || lockid == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if (!valid_lock_name(lockid))
		return O2DLM_ET_INVALID_LOCK_NAME;
	if (level != O2DLM_LEVEL_PRMODE && level != O2DLM_LEVEL_EXMODE)
		return O2DLM_ET_INVALID_LOCK_LEVEL;
	if (find_lock(ctxt, lockid) != NULL)
		return O2DLM_ET_RECURSIVE_LOCK;
	if ((lr = calloc(1, sizeof(*lr))) == NULL)
		return O2DLM_ET_NO_MEMORY;
	a.domain = ctxt->domain;
	a.name = lockid;
	a.namelen = strlen(lockid);
	a.mode = level;
	a.flags = DLMC_F_VALBLK | ((lockflags & O2DLM_TRYLOCK) ? DLMC_F_NOQUEUE : 0);
	if (dlmc_lock_wait(ctxt->dlmc, &a, -1, &id, &ast) == -1) {
		free(lr);
		return from_errno(errno, O2DLM_ET_LOCKING);
	}
	memcpy(lr->name, lockid, a.namelen + 1);
	lr->lockid = id;
	lr->level = level;
	lr->lvb_valid = ast.has_lvb && ast.lvb_valid;
	memcpy(lr->lvb, ast.lvb, sizeof(lr->lvb));
	/* Before any event runs: a Bast may follow the grant at once. */
	lr->bast_func = bast_func;
	lr->bast_arg = bast_arg;
	TAILQ_INSERT_TAIL(&ctxt->locks, lr, entry);
	flush_events(ctxt);
	return 0;
}

errcode_t
o2dlm_lock(struct o2dlm_ctxt *ctxt, const char *lockid, int lockflags,
    enum o2dlm_lock_level level)
{
	return lock_common(ctxt, lockid, lockflags, level, NULL, NULL);
}

errcode_t
o2dlm_lock_with_bast(struct o2dlm_ctxt *ctxt, const char *lockid,
    int lockflags, enum o2dlm_lock_level level,
    void (*bast_func)(void *bast_arg), void *bast_arg, int *poll_fd)
{
	errcode_t ret;

	if (ctxt == NULL || bast_func == NULL || poll_fd == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if ((ret = make_poll_fd(ctxt)) != 0)
		return ret;
	if ((ret = lock_common(ctxt, lockid, lockflags, level, bast_func,
	    bast_arg)) != 0)
		return ret;
	*poll_fd = ctxt->poll_fd;
	return 0;
}

void
o2dlm_process_bast(struct o2dlm_ctxt *ctxt, int poll_fd)
{
	struct o2dlm_lock_res *lr;
	eventfd_t n;

	if (ctxt == NULL || poll_fd == -1 || poll_fd != ctxt->poll_fd)
		return;
	while (dlmc_dispatch(ctxt->dlmc) > 0)
		continue;
	/*
	 * Every Bast read so far is handled below, those this dispatch read
	 * too: consume their wakeups after it, or the fd stays readable.
	 * (Fails when empty.)
	 */
	(void)eventfd_read(ctxt->wake, &n);
	/* A bast function usually unlocks: look the list up again each time. */
	for (;;) {
		TAILQ_FOREACH(lr, &ctxt->locks, entry)
			if (lr->bast_pending)
				break;
		if (lr == NULL)
			break;
		lr->bast_pending = 0;
		lr->bast_func(lr->bast_arg);
	}
}

static void
free_lock(struct o2dlm_ctxt *ctxt, struct o2dlm_lock_res *lr)
{
	TAILQ_REMOVE(&ctxt->locks, lr, entry);
	free(lr);
}

static errcode_t
unlock_res(struct o2dlm_ctxt *ctxt, struct o2dlm_lock_res *lr)
{
	int push = lr->level == O2DLM_LEVEL_EXMODE && lr->lvb_dirty;
	int rc;

	rc = dlmc_unlock(ctxt->dlmc, ctxt->domain, lr->lockid,
	    push ? DLMC_F_VALBLK : 0, push ? lr->lvb : NULL);
	/* Refused or not, dlmd no longer holds it for us. */
	free_lock(ctxt, lr);
	flush_events(ctxt);
	return rc == -1 ? from_errno(errno, O2DLM_ET_UNLOCKING) : 0;
}

errcode_t
o2dlm_unlock(struct o2dlm_ctxt *ctxt, const char *lockid)
{
	struct o2dlm_lock_res *lr;

	if (ctxt == NULL || lockid == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if ((lr = find_lock(ctxt, lockid)) == NULL)
		return O2DLM_ET_UNKNOWN_LOCK;
	return unlock_res(ctxt, lr);
}

errcode_t
o2dlm_drop_lock(struct o2dlm_ctxt *ctxt, const char *lockid)
{
	if (ctxt == NULL || lockid == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if (!valid_lock_name(lockid))
		return O2DLM_ET_INVALID_LOCK_NAME;
	/* As dlmfs's unlink: refused while held. */
	return find_lock(ctxt, lockid) != NULL ? O2DLM_ET_BUSY_LOCK : 0;
}

errcode_t
o2dlm_read_lvb(struct o2dlm_ctxt *ctxt, const char *lockid, char *lvb,
    unsigned int len, unsigned int *bytes_read)
{
	struct o2dlm_lock_res *lr;
	unsigned int n;

	if (ctxt == NULL || lockid == NULL || lvb == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if ((lr = find_lock(ctxt, lockid)) == NULL)
		return O2DLM_ET_UNKNOWN_LOCK;
	n = lr->lvb_valid ? (len < DLMC_LVB_LEN ? len : DLMC_LVB_LEN) : 0;
	memcpy(lvb, lr->lvb, n);
	if (bytes_read != NULL)
		*bytes_read = n;
	return 0;
}

errcode_t
o2dlm_write_lvb(struct o2dlm_ctxt *ctxt, const char *lockid, const char *lvb,
    unsigned int len, unsigned int *bytes_written)
{
	struct o2dlm_lock_res *lr;
	unsigned int n = len < DLMC_LVB_LEN ? len : DLMC_LVB_LEN;

	if (ctxt == NULL || lockid == NULL || lvb == NULL)
		return O2DLM_ET_INVALID_ARGS;
	if ((lr = find_lock(ctxt, lockid)) == NULL)
		return O2DLM_ET_UNKNOWN_LOCK;
	if (lr->level != O2DLM_LEVEL_EXMODE)
		return O2DLM_ET_LVB_WRITE;
	memcpy(lr->lvb, lvb, n);
	lr->lvb_valid = 1;
	lr->lvb_dirty = 1;
	if (bytes_written != NULL)
		*bytes_written = n;
	return 0;
}

errcode_t
o2dlm_destroy(struct o2dlm_ctxt *ctxt)
{
	errcode_t ret = 0, r;

	if (ctxt == NULL)
		return O2DLM_ET_INVALID_ARGS;
	while (!TAILQ_EMPTY(&ctxt->locks))
		if ((r = unlock_res(ctxt, TAILQ_FIRST(&ctxt->locks))) != 0 && ret == 0)
			ret = r;
	if (dlmc_leave(ctxt->dlmc, ctxt->domain) == -1 && ret == 0)
		ret = from_errno(errno, O2DLM_ET_DOMAIN_DESTROY);
	dlmc_close(ctxt->dlmc);
	if (ctxt->poll_fd != -1) {
		close(ctxt->poll_fd);
		close(ctxt->wake);
	}
	free(ctxt);
	return ret;
}

errcode_t
o2dlm_supports_bast(int *supports)
{
	if (supports == NULL)
		return O2DLM_ET_INVALID_ARGS;
	*supports = 1;
	return 0;
}
