/*
 * POSIX (fcntl) byte-range locks across the cluster. OCFS2 on o2cb leaves
 * them to each node's kernel; here they hold between nodes.
 *
 * Every node keeps the locks its own processes hold: per inode, per FUSE
 * lock owner, an owner's ranges split and merged as POSIX says. To grant
 * one, a node holds the inode's PLOCK mutex (a DLM EX lock, cached like
 * any other, so that only contention costs messages) and asks every other
 * node through netd whether it holds a conflicting lock. Every grant on
 * every node happens under that mutex, so nothing conflicting appears
 * meanwhile. Giving locks up only makes room: it needs nobody. A waiter
 * (F_SETLKW) tries again when a lock on its inode goes on this node, and
 * after a growing pause for other nodes' (they do not tell). A node that
 * dies takes its locks with it: nobody asks it any more.
 *
 * Only in cluster mounts; alone, the kernel's own POSIX locks are right.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32.h"
#include "ipc.h"
#include "log.h"
#include "netdanswer.h"
#include "util.h"
#include "fsdwire.pb-c.h"

#include "ops.h"
#include "glue.h"

#define PLOCK_HASH		256
#define PLOCK_EOF		((uint64_t)INT64_MAX)	/* the kernel's OFFSET_MAX */
#define PLOCK_WAIT_MIN_MS	5
#define PLOCK_WAIT_MAX_MS	200
#define PLOCK_CALL_MS		10000
#define FSD_WIRE_PLOCK_QUERY	600	/* netd message type; dlmd's are 5xx */

struct plock {
	uint64_t	 owner;		/* FUSE lock_owner */
	uint32_t	 pid;
	int		 write;
	uint64_t	 start, end;	/* inclusive */
	struct plock	*next;
};

/* The locks held on one inode by this node's processes. */
struct plock_inode {
	uint64_t		 ino;
	struct plock		*locks;
	struct plock_inode	*next;
};

struct fsd_plocks {
	pthread_mutex_t		 mtx;
	pthread_cond_t		 released;	/* a lock went on this node */
	struct plock_inode	*hash[PLOCK_HASH];
	uint32_t		 key;		/* crc32 of the volume UUID */
	char			 netd[4096];	/* netd.sock */
	int			 serve_fd;	/* other nodes' queries come here */
	int			 ask_fd;	/* our queries go here, under ask_mtx */
	pthread_mutex_t		 ask_mtx;
	pthread_t		 thread;
	int			 stop;		/* under mtx */
};

/* ---- one node's table -------------------------------------------------- */

static struct plock_inode **
inode_bucket(struct fsd_plocks *pl, uint64_t ino)
{
	return &pl->hash[(ino * 0x9E3779B97F4A7C15ULL) >> 56];
}

static struct plock_inode *
inode_of(struct fsd_plocks *pl, uint64_t ino, int create)
{
	struct plock_inode **pp = inode_bucket(pl, ino), *pi;

	for (pi = *pp; pi != NULL; pi = pi->next)
		if (pi->ino == ino)
			return pi;
	if (!create)
		return NULL;
	pi = xcalloc(1, sizeof(*pi));
	pi->ino = ino;
	pi->next = *pp;
	*pp = pi;
	return pi;
}

/* An inode without locks here leaves the table (every close asks for it). */
static void
plock_inode_drop(struct fsd_plocks *pl, struct plock_inode *pi)
{
	struct plock_inode **pp = inode_bucket(pl, pi->ino);

	while (*pp != pi)
		pp = &(*pp)->next;
	*pp = pi->next;
	free(pi);
}

static int
overlaps(const struct plock *l, uint64_t start, uint64_t end)
{
	return l->start <= end && start <= l->end;
}

/* Overlapping or adjacent: one lock if they are of one owner and kind. */
static int
touches(const struct plock *l, uint64_t start, uint64_t end)
{
	return l->start <= end + 1 && start <= l->end + 1;
}

/* A lock that keeps owner from taking [start, end] (owner 0: anyone's). */
static const struct plock *
conflict(const struct plock_inode *pi, uint64_t owner, int write, uint64_t start,
    uint64_t end)
{
	const struct plock *l;

	for (l = pi != NULL ? pi->locks : NULL; l != NULL; l = l->next)
		if ((owner == 0 || l->owner != owner) && (write || l->write) &&
		    overlaps(l, start, end))
			return l;
	return NULL;
}

/* fcntl's F_SETLK on one owner's ranges: type F_UNLCK, F_RDLCK or F_WRLCK. */
static void
set_range(struct plock_inode *pi, uint64_t owner, uint32_t pid, int type, uint64_t start,
    uint64_t end)
{
	struct plock **pp, *l, *n;
	int write = type == F_WRLCK;

	/* cut [start, end] out of the owner's locks */
	for (pp = &pi->locks; (l = *pp) != NULL;) {
		if (l->owner != owner || !overlaps(l, start, end)) {
			pp = &l->next;
		} else if (l->start < start && l->end > end) {
			n = xmalloc(sizeof(*n));
			*n = *l;
			n->start = end + 1;
			l->end = start - 1;
			l->next = n;
			pp = &n->next;
		} else if (l->start < start) {
			l->end = start - 1;
			pp = &l->next;
		} else if (l->end > end) {
			l->start = end + 1;
			pp = &l->next;
		} else {
			*pp = l->next;
			free(l);
		}
	}
	if (type == F_UNLCK)
		return;
	/* one lock with the owner's neighbours of its kind */
	for (pp = &pi->locks; (l = *pp) != NULL;) {
		if (l->owner == owner && l->write == write && touches(l, start, end)) {
			start = l->start < start ? l->start : start;
			end = l->end > end ? l->end : end;
			*pp = l->next;
			free(l);
		} else
			pp = &l->next;
	}
	n = xmalloc(sizeof(*n));
	n->owner = owner;
	n->pid = pid;
	n->write = write;
	n->start = start;
	n->end = end;
	n->next = pi->locks;
	pi->locks = n;
}

static void
release(struct fsd_plocks *pl, uint64_t ino, uint64_t owner, uint64_t start, uint64_t end)
{
	struct plock_inode *pi;

	pthread_mutex_lock(&pl->mtx);
	if ((pi = inode_of(pl, ino, 0)) != NULL) {
		set_range(pi, owner, 0, F_UNLCK, start, end);
		if (pi->locks == NULL)
			plock_inode_drop(pl, pi);
	}
	pthread_cond_broadcast(&pl->released);
	pthread_mutex_unlock(&pl->mtx);
}

/* ---- the other nodes --------------------------------------------------- */

/* F_GETLK's answer. Another node's holder has no pid here: it shows as 0. */
static void
holder_to_flock(int write, uint64_t start, uint64_t end, pid_t pid, struct flock *fl)
{
	fl->l_type = write ? F_WRLCK : F_RDLCK;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)start;
	fl->l_len = end >= PLOCK_EOF ? 0 : (off_t)(end - start + 1);
	fl->l_pid = pid;
}

/*
 * Does another node hold a lock in the way? 0 no, 1 yes (in *fl if not
 * NULL), -errno when netd cannot ask. A node whose fsd has not this
 * volume (no handler), or went away meanwhile, holds nothing of it.
 */
static int
ask_others(struct fsd_plocks *pl, uint64_t ino, int write, uint64_t start, uint64_t end,
    struct flock *fl)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	Netd__NetSendAll sa = NETD__NET_SEND_ALL__INIT;
	Fsdwire__PlockQuery q = FSDWIRE__PLOCK_QUERY__INIT;
	Fsdwire__PlockHolder *h;
	uint8_t buf[64];
	size_t i;
	int rc = 0;

	q.ino = ino;
	q.start = start;
	q.end = end;
	q.write = write;
	sa.type = FSD_WIRE_PLOCK_QUERY;
	sa.key = pl->key;
	sa.payload.len = fsdwire__plock_query__pack(&q, buf);
	sa.payload.data = buf;
	req.type = MSG_TYPE__MSG_NETD_SEND_ALL;
	req.payload_case = ENVELOPE__PAYLOAD_NET_SEND_ALL;
	req.net_send_all = &sa;
	pthread_mutex_lock(&pl->ask_mtx);
	if (pl->ask_fd == -1 && (pl->ask_fd = ipc_sync_connect(pl->netd)) == -1)
		rc = -errno;
	else if (ipc_sync_call(pl->ask_fd, &req, &rep, PLOCK_CALL_MS) == -1) {
		rc = -errno;
		close(pl->ask_fd);
		pl->ask_fd = -1;
	}
	pthread_mutex_unlock(&pl->ask_mtx);
	if (rc != 0) {
		log_warnx("POSIX lock: cannot ask the other nodes: %s", strerror(-rc));
		return -EIO;
	}
	if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_NET_RESULTS) {
		log_warnx("POSIX lock: netd: %s", rep->error && *rep->error ? rep->error :
		    strerror((int)rep->status));
		envelope__free_unpacked(rep, NULL);
		return -EIO;
	}
	for (i = 0; rc == 0 && i < rep->net_results->n_results; i++) {
		const Netd__NetResult *r = rep->net_results->results[i];

		if (r->err != 0 || r->status != 0)
			continue;
		h = fsdwire__plock_holder__unpack(NULL, r->payload.len, r->payload.data);
		if (h == NULL) {
			log_warnx("POSIX lock: node %u answered garbage", r->node);
			rc = -EIO;
			continue;
		}
		if (h->conflict) {
			rc = 1;
			if (fl != NULL)
				holder_to_flock(h->write, h->start, h->end, 0, fl);
		}
		fsdwire__plock_holder__free_unpacked(h, NULL);
	}
	envelope__free_unpacked(rep, NULL);
	return rc;
}

/* Another node asks whether we hold a lock in its way. */
static void
answer(struct fsd_plocks *pl, const Netd__NetMessage *m)
{
	Fsdwire__PlockQuery *q;
	Fsdwire__PlockHolder h = FSDWIRE__PLOCK_HOLDER__INIT;
	const struct plock *l;
	uint8_t buf[64];
	size_t len = 0;
	int32_t status = 0;

	q = fsdwire__plock_query__unpack(NULL, m->payload.len, m->payload.data);
	if (q == NULL || q->start > q->end) {
		log_warnx("POSIX lock: node %u sent a bad query", m->from);
		status = EINVAL;
	} else {
		pthread_mutex_lock(&pl->mtx);
		if ((l = conflict(inode_of(pl, q->ino, 0), 0, q->write, q->start, q->end)) != NULL) {
			h.conflict = 1;
			h.write = l->write;
			h.start = l->start;
			h.end = l->end;
		}
		pthread_mutex_unlock(&pl->mtx);
		len = fsdwire__plock_holder__pack(&h, buf);
	}
	if (q != NULL)
		fsdwire__plock_query__free_unpacked(q, NULL);
	if (netd_answer_fd(pl->serve_fd, m->handle, status, buf, len) == -1)
		log_warn("POSIX lock: replying to node %u", m->from);
}

/* A connection to netd on which other nodes' queries arrive; -1 on failure. */
static int
serve_connect(struct fsd_plocks *pl, char *err, size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep;
	Netd__NetRegister nr = NETD__NET_REGISTER__INIT;
	int fd;

	if ((fd = ipc_sync_connect(pl->netd)) == -1) {
		snprintf(err, errlen, "netd (%s): %s", pl->netd, strerror(errno));
		return -1;
	}
	nr.type = FSD_WIRE_PLOCK_QUERY;
	nr.key = pl->key;
	req.type = MSG_TYPE__MSG_NETD_REGISTER;
	req.payload_case = ENVELOPE__PAYLOAD_NET_REGISTER;
	req.net_register = &nr;
	if (ipc_sync_call(fd, &req, &rep, PLOCK_CALL_MS) == -1) {
		snprintf(err, errlen, "netd: no answer: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (rep->status != 0) {
		snprintf(err, errlen, "netd refused the POSIX lock handler: %s",
		    rep->error && *rep->error ? rep->error : strerror((int)rep->status));
		envelope__free_unpacked(rep, NULL);
		close(fd);
		return -1;
	}
	envelope__free_unpacked(rep, NULL);
	return fd;
}

static int
stopping(struct fsd_plocks *pl)
{
	int stop;

	pthread_mutex_lock(&pl->mtx);
	stop = pl->stop;
	pthread_mutex_unlock(&pl->mtx);
	return stop;
}

static void *
serve_loop(void *arg)
{
	struct fsd_plocks *pl = arg;
	char err[256];
	Envelope *ev;

	while (!stopping(pl)) {
		if (pl->serve_fd == -1) {
			/* netd restarted: until we are back, others cannot see our locks */
			if ((pl->serve_fd = serve_connect(pl, err, sizeof(err))) == -1)
				usleep(500000);
			else
				log_info("POSIX locks: serving the other nodes again");
			continue;
		}
		if (ipc_sync_recv(pl->serve_fd, &ev, 200) == -1) {
			if (errno == ETIMEDOUT)
				continue;
			log_warnx("POSIX locks: lost netd (%s): reconnecting", strerror(errno));
			close(pl->serve_fd);
			pl->serve_fd = -1;
			continue;
		}
		if (ev->type == MSG_TYPE__MSG_NETD_MESSAGE &&
		    ev->payload_case == ENVELOPE__PAYLOAD_NET_MESSAGE)
			answer(pl, ev->net_message);
		envelope__free_unpacked(ev, NULL);
	}
	return NULL;
}

int
plock_start(struct fsd *fs, const char *rundir, char *err, size_t errlen)
{
	struct fsd_plocks *pl = xcalloc(1, sizeof(*pl));

	pthread_mutex_init(&pl->mtx, NULL);
	pthread_cond_init(&pl->released, NULL);
	pthread_mutex_init(&pl->ask_mtx, NULL);
	pl->key = crc32_le(0, fs->vol.uuid, strlen(fs->vol.uuid));
	pl->ask_fd = -1;
	snprintf(pl->netd, sizeof(pl->netd), "%s/netd.sock", rundir);
	if ((pl->serve_fd = serve_connect(pl, err, errlen)) == -1 ||
	    pthread_create(&pl->thread, NULL, serve_loop, pl) != 0) {
		if (pl->serve_fd != -1) {
			close(pl->serve_fd);
			snprintf(err, errlen, "cannot start the POSIX lock thread");
		}
		free(pl);
		return -1;
	}
	fs->plocks = pl;
	return 0;
}

void
plock_stop(struct fsd *fs)
{
	struct fsd_plocks *pl = fs->plocks;
	struct plock_inode *pi;
	struct plock *l;
	size_t h;

	if (pl == NULL)
		return;
	pthread_mutex_lock(&pl->mtx);
	pl->stop = 1;
	pthread_mutex_unlock(&pl->mtx);
	pthread_join(pl->thread, NULL);
	if (pl->serve_fd != -1)
		close(pl->serve_fd);
	if (pl->ask_fd != -1)
		close(pl->ask_fd);
	for (h = 0; h < PLOCK_HASH; h++)
		while ((pi = pl->hash[h]) != NULL) {
			pl->hash[h] = pi->next;
			while ((l = pi->locks) != NULL) {
				pi->locks = l->next;
				free(l);
			}
			free(pi);
		}
	fs->plocks = NULL;
	free(pl);
}

/* ---- FUSE -------------------------------------------------------------- */

/* fcntl's range from FUSE's struct flock (whence is SEEK_SET there). */
static int
range_of(const struct flock *fl, uint64_t *start, uint64_t *end)
{
	if (fl->l_start < 0 || fl->l_len < 0)
		return -EINVAL;
	*start = (uint64_t)fl->l_start;
	*end = fl->l_len == 0 ? PLOCK_EOF : *start + (uint64_t)fl->l_len - 1;
	return *end < *start || *end > PLOCK_EOF ? -EINVAL : 0;
}

/* Under the inode's PLOCK mutex: nobody's lock in the way, then ours. */
static int
try_acquire(struct fsd *fs, struct fsd_lockres *mutex, uint64_t ino, uint64_t owner,
    uint32_t pid, int type, uint64_t start, uint64_t end)
{
	struct fsd_plocks *pl = fs->plocks;
	int rc, write = type == F_WRLCK;

	pthread_mutex_lock(&pl->mtx);
	rc = conflict(inode_of(pl, ino, 0), owner, write, start, end) != NULL;
	pthread_mutex_unlock(&pl->mtx);
	if (rc)
		return -EAGAIN;
	if ((rc = lockres_lock(fs, mutex, LKM_EX)) != 0)
		return rc;
	if ((rc = ask_others(pl, ino, write, start, end, NULL)) == 0) {
		pthread_mutex_lock(&pl->mtx);
		/* our own node's grants hold the mutex too: none came meanwhile */
		set_range(inode_of(pl, ino, 1), owner, pid, type, start, end);
		pthread_mutex_unlock(&pl->mtx);
	}
	lockres_unlock(fs, mutex, LKM_EX);
	return rc > 0 ? -EAGAIN : rc;
}

static void
wait_release(struct fsd_plocks *pl, unsigned ms)
{
	struct timespec ts;

	fsd_deadline(CLOCK_REALTIME, ms, &ts);
	pthread_mutex_lock(&pl->mtx);
	pthread_cond_timedwait(&pl->released, &pl->mtx, &ts);
	pthread_mutex_unlock(&pl->mtx);
}

void
fsd_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl,
    int sleep)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_plocks *pl = fs->plocks;
	struct fsd_lockres *mutex;
	struct fsd_inode *ip;
	uint64_t blkno = fsd_ino_to_blkno(fs, ino), start, end;
	unsigned wait = PLOCK_WAIT_MIN_MS;
	int rc;

	if (pl == NULL)
		return (void)fuse_reply_err(req, ENOLCK);
	if ((rc = range_of(fl, &start, &end)) != 0)
		return (void)fuse_reply_err(req, -rc);
	if (fl->l_type == F_UNLCK) {
		release(pl, blkno, fi->lock_owner, start, end);
		return (void)fuse_reply_err(req, 0);
	}
	if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK)
		return (void)fuse_reply_err(req, EINVAL);
	if ((rc = inode_get(fs, blkno, &ip)) != 0)
		return (void)fuse_reply_err(req, -rc);
	mutex = lockres_get(fs, FSD_LOCK_PLOCK, ip->blkno, ip->generation, 0);
	inode_put(fs, ip);
	while ((rc = try_acquire(fs, mutex, blkno, fi->lock_owner, (uint32_t)fl->l_pid,
	    fl->l_type, start, end)) == -EAGAIN && sleep) {
		if (fuse_req_interrupted(req)) {
			rc = -EINTR;
			break;
		}
		wait_release(pl, wait);
		wait = wait * 2 > PLOCK_WAIT_MAX_MS ? PLOCK_WAIT_MAX_MS : wait * 2;
	}
	lockres_put(fs, mutex);
	fuse_reply_err(req, -rc);
}

void
fsd_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *fl)
{
	struct fsd *fs = fsd_of(req);
	struct fsd_plocks *pl = fs->plocks;
	const struct plock *l;
	uint64_t blkno = fsd_ino_to_blkno(fs, ino), start, end;
	int rc, write = fl->l_type == F_WRLCK;

	if (pl == NULL)
		return (void)fuse_reply_err(req, ENOLCK);
	if ((rc = range_of(fl, &start, &end)) != 0)
		return (void)fuse_reply_err(req, -rc);
	pthread_mutex_lock(&pl->mtx);
	if ((l = conflict(inode_of(pl, blkno, 0), fi->lock_owner, write, start, end)) != NULL)
		holder_to_flock(l->write, l->start, l->end, (pid_t)l->pid, fl);
	pthread_mutex_unlock(&pl->mtx);
	if (l == NULL) {
		if ((rc = ask_others(pl, blkno, write, start, end, fl)) < 0)
			return (void)fuse_reply_err(req, -rc);
		if (rc == 0)
			fl->l_type = F_UNLCK;
	}
	fuse_reply_lock(req, fl);
}

void
plock_flush(struct fsd *fs, uint64_t blkno, uint64_t owner)
{
	if (fs->plocks != NULL)
		release(fs->plocks, blkno, owner, 0, PLOCK_EOF);
}

/* PLOCK: the inode's POSIX lock mutex, a letter the kernel's dlmglue does not use. */
const struct fsd_lock_ops plock_lock_ops = { .letter = 'X' };
