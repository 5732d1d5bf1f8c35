/*
 * The volume's status socket, <rundir>/fsd-<UUID>.sock (README.md,
 * fsd; o2ctl(8)): what o2ctl mounts asks a mounted fsd.
 *
 * It is claimed as soon as the volume's UUID is known, before the mount
 * touches the cluster stack or the disk: a socket another fsd answers on
 * means that fsd serves this volume from this runtime directory already,
 * and the mount is refused; one nobody answers on was left by a killed
 * fsd and is replaced. The runtime directory is the cluster stack's
 * (--rundir, $OCFS2_RUNDIR, /run/ocfs2). A local or nocluster mount uses
 * it too when it exists, and goes without a socket when it does not: fsd
 * does not make the stack's directory, its daemons (or systemd) do.
 *
 * Only that live answer stops a mount: a socket that cannot be served
 * (a user's mount beside root's runtime directory) costs a warning. The
 * status is an aid, not a reason for the volume to stay unmounted.
 *
 * The socket has a thread and an event loop of its own, so a status
 * request never waits behind FUSE or cluster locks; it takes only the
 * mutexes that guard each counter (the journal's is held across a
 * commit's writes). Until the mount is complete it answers EAGAIN rather
 * than read state that is still being built.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "util.h"

#include "fsd.h"
#include "glue.h"

struct fsd_ctl {
	struct fsd		*fs;
	char			*path;
	char			*mountpoint;
	struct event_base	*base;
	struct ipc_server	*server;
	struct event		*wake;		/* the stop pipe: ends the loop */
	int			 stop_pipe[2];
	pthread_t		 thread;
	pthread_mutex_t		 mtx;
	int			 ready;		/* mounted: fs may be read (mtx) */
};

void
ctl_status_fill(struct fsd *fs, const char *mountpoint, Fsd__FsdStatus *st)
{
	struct fsd_glue *g = fs->glue;
	struct lockres_census lc;

	st->uuid = fs->vol.uuid;
	st->label = fs->vol.label;
	st->device = fs->vol.path;
	st->mountpoint = (char *)mountpoint;
	st->cluster = g != NULL;
	st->readonly = fs->readonly != 0;
	st->node = fs->node_num;
	st->slot = fs->slot;
	st->cluster_name = fs->vol.cluster_name;
	st->journal_commits = journal_commits(fs, &st->journal_in_place);
	journal_handle_stats(fs, &st->journal_handles, &st->journal_handles_peak,
	    &st->journal_owner_waits);
	st->pid = (uint32_t)getpid();
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mtx);
	st->recovering = g->ndead > 0;
	st->recoveries = g->recoveries;
	st->attrs_from_lvb = g->lvb_stats;
	st->lock_upconverts = g->upconverts;
	pthread_mutex_unlock(&g->mtx);
	if (g->os_running) {
		pthread_mutex_lock(&g->os_mtx);
		st->orphan_scans = g->os_scans;
		st->orphans_deleted = g->os_deleted;
		pthread_mutex_unlock(&g->os_mtx);
	}
	lockres_census(fs, &lc);
	st->locks = lc.total;
	st->locks_ex = lc.ex;
	st->locks_pr = lc.pr;
	st->locks_nl = lc.nl;
}

/* Mounted? Else the request is refused, EAGAIN. */
static int
ctl_mounted(struct ipc_conn *c, const Envelope *req)
{
	struct fsd_ctl *ctl = ipc_conn_arg(c);
	int ready;

	pthread_mutex_lock(&ctl->mtx);
	ready = ctl->ready;
	pthread_mutex_unlock(&ctl->mtx);
	if (!ready)
		ipc_reply_status(c, req, EAGAIN, "volume %s is still being mounted",
		    ctl->fs->vol.uuid);
	return ready;
}

static void
handle_status(struct ipc_conn *c, const Envelope *req)
{
	struct fsd_ctl *ctl = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Fsd__FsdStatus st = FSD__FSD_STATUS__INIT;

	if (!ctl_mounted(c, req))
		return;
	ctl_status_fill(ctl->fs, ctl->mountpoint, &st);
	rep.payload_case = ENVELOPE__PAYLOAD_FSD_STATUS;
	rep.fsd_status = &st;
	ipc_reply(c, req, &rep);
}

/* Mounted, and (for a change) asked by root or fsd's own user? Else refused. */
static int
ctl_allowed(struct ipc_conn *c, const Envelope *req, int change)
{
	struct fsd_ctl *ctl = ipc_conn_arg(c);
	uid_t uid = ipc_conn_uid(c);

	if (!ctl_mounted(c, req))
		return 0;
	if (change && uid != 0 && uid != geteuid()) {
		ipc_reply_status(c, req, EPERM, "only root sets quota limits");
		return 0;
	}
	if (!quota_enabled(ctl->fs)) {
		ipc_reply_status(c, req, ENOTSUP, "volume %s has no quota feature "
		    "(usrquota, grpquota)", ctl->fs->vol.uuid);
		return 0;
	}
	return 1;
}

/*
 * o2ctl quota MOUNTPOINT set: limits of one id, or grace times of a
 * file, each in a transaction of its own.
 */
static void
handle_quota_set(struct ipc_conn *c, const Envelope *req)
{
	struct fsd_ctl *ctl = ipc_conn_arg(c);
	const Fsd__QuotaSet *qs = req->quota_set;
	struct quota_entry lim = { 0 };
	int rc;

	if (!ctl_allowed(c, req, 1))
		return;
	if (qs->type >= FSD_MAXQUOTAS || ctl->fs->quota[qs->type].ino == 0) {
		ipc_reply_status(c, req, ENOTSUP, "the volume keeps no %s quota",
		    qs->type == FSD_USRQUOTA ? "user" : "group");
		return;
	}
	if (ctl->fs->readonly) {
		ipc_reply_status(c, req, EROFS, "mounted read-only");
		return;
	}
	lim.bsoft = qs->block_soft;
	lim.bhard = qs->block_hard;
	lim.isoft = qs->inode_soft;
	lim.ihard = qs->inode_hard;
	rc = 0;
	if (qs->mask & (QUOTA_SET_BSOFT | QUOTA_SET_BHARD | QUOTA_SET_ISOFT | QUOTA_SET_IHARD))
		rc = quota_set_limits(ctl->fs, (int)qs->type, qs->id, qs->mask, &lim);
	if (rc == 0 && (qs->mask & (QUOTA_SET_BGRACE | QUOTA_SET_IGRACE)))
		rc = quota_set_grace(ctl->fs, (int)qs->type, qs->mask, qs->block_grace,
		    qs->inode_grace);
	if (rc != 0)
		ipc_reply_status(c, req, -rc, "setting the limits: %s", strerror(-rc));
	else
		ipc_reply_status(c, req, 0, "%s", "");
}

/* o2ctl quota MOUNTPOINT report: every id of the global quota files. */
static void
handle_quota_report(struct ipc_conn *c, const Envelope *req)
{
	struct fsd_ctl *ctl = ipc_conn_arg(c);
	Envelope rep = ENVELOPE__INIT;
	Fsd__QuotaReport qr = FSD__QUOTA_REPORT__INIT;
	Fsd__QuotaEntry *pe, **pv;
	struct quota_entry *v;
	size_t i, n;
	int rc;

	if (!ctl_allowed(c, req, 0))
		return;
	if ((rc = quota_report(ctl->fs, &v, &n, &qr.block_grace, &qr.inode_grace)) != 0) {
		ipc_reply_status(c, req, -rc, "reading the quota files: %s", strerror(-rc));
		return;
	}
	pe = xcalloc(n ? n : 1, sizeof(*pe));
	pv = xcalloc(n ? n : 1, sizeof(*pv));
	for (i = 0; i < n; i++) {
		fsd__quota_entry__init(&pe[i]);
		pe[i].type = (uint32_t)v[i].type;
		pe[i].id = v[i].id;
		pe[i].space = v[i].space;
		pe[i].inodes = v[i].inodes;
		pe[i].block_soft = v[i].bsoft;
		pe[i].block_hard = v[i].bhard;
		pe[i].inode_soft = v[i].isoft;
		pe[i].inode_hard = v[i].ihard;
		pe[i].block_grace_end = v[i].btime;
		pe[i].inode_grace_end = v[i].itime;
		pv[i] = &pe[i];
	}
	qr.n_entries = n;
	qr.entries = pv;
	rep.payload_case = ENVELOPE__PAYLOAD_QUOTA_REPORT;
	rep.quota_report = &qr;
	ipc_reply(c, req, &rep);
	free(pv);
	free(pe);
	free(v);
}

static const struct ipc_handler ctl_handlers[] = {
	{ MSG_TYPE__MSG_FSD_STATUS, ENVELOPE__PAYLOAD__NOT_SET, handle_status },
	{ MSG_TYPE__MSG_FSD_QUOTA_SET, ENVELOPE__PAYLOAD_QUOTA_SET, handle_quota_set },
	{ MSG_TYPE__MSG_FSD_QUOTA_REPORT, ENVELOPE__PAYLOAD__NOT_SET, handle_quota_report },
};

static void
ctl_wake(evutil_socket_t fd, short ev, void *arg)
{
	struct fsd_ctl *ctl = arg;

	(void)fd;
	(void)ev;
	event_base_loopbreak(ctl->base);
}

static void *
ctl_loop(void *arg)
{
	struct fsd_ctl *ctl = arg;

	event_base_dispatch(ctl->base);
	return NULL;
}

/*
 * Is another fsd serving path? Connecting tells: a listening socket
 * accepts even before its loop runs, a stale one refuses. 1 and *pid
 * (the listener's, from SO_PEERCRED), or 0.
 */
static int
ctl_live(const char *path, pid_t *pid)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	int fd;

	if ((fd = ipc_sync_connect(path)) == -1)
		return 0;
	*pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0 ? cr.pid : 0;
	close(fd);
	return 1;
}

static void
ctl_free(struct fsd_ctl *ctl)
{
	if (ctl->server != NULL) {
		ipc_server_free(ctl->server);	/* closes its connections, removes the file */
		/* the closed connections are freed by the loop: let it run once */
		event_base_loop(ctl->base, EVLOOP_NONBLOCK);
	}
	if (ctl->wake != NULL)
		event_free(ctl->wake);
	if (ctl->stop_pipe[0] != -1) {
		close(ctl->stop_pipe[0]);
		close(ctl->stop_pipe[1]);
	}
	if (ctl->base != NULL)
		event_base_free(ctl->base);
	pthread_mutex_destroy(&ctl->mtx);
	free(ctl->path);
	free(ctl->mountpoint);
	free(ctl);
}

int
ctl_start(struct fsd *fs, const char *rundir, const char *mountpoint, char *err,
    size_t errlen)
{
	char why[256];
	struct fsd_ctl *ctl;
	struct stat sb;
	sigset_t all, old;
	pid_t pid;
	int rc;

	if (stat(rundir, &sb) == -1 || !S_ISDIR(sb.st_mode)) {
		log_info("no runtime directory %s: no status socket", rundir);
		return 0;
	}
	ctl = xcalloc(1, sizeof(*ctl));
	ctl->fs = fs;
	ctl->stop_pipe[0] = ctl->stop_pipe[1] = -1;
	pthread_mutex_init(&ctl->mtx, NULL);
	xasprintf(&ctl->path, "%s/fsd-%s.sock", rundir, fs->vol.uuid);
	ctl->mountpoint = xstrdup(mountpoint != NULL ? mountpoint : "");
	if (ctl_live(ctl->path, &pid)) {
		snprintf(err, errlen, "fsd (pid %d) already serves volume %s from %s (%s answers)",
		    (int)pid, fs->vol.uuid, rundir, ctl->path);
		ctl_free(ctl);
		return -1;
	}
	if (access(ctl->path, F_OK) == 0)
		log_info("%s: nobody answers: a stale socket, replaced", ctl->path);
	if ((ctl->base = event_base_new()) == NULL || pipe2(ctl->stop_pipe, O_CLOEXEC) == -1 ||
	    (ctl->wake = event_new(ctl->base, ctl->stop_pipe[0], EV_READ, ctl_wake, ctl)) == NULL ||
	    event_add(ctl->wake, NULL) == -1) {
		snprintf(why, sizeof(why), "cannot set up its event loop");
		goto unserved;
	}
	ctl->server = ipc_server_listen(ctl->base, ctl->path, "fsd", ctl_handlers,
	    nitems(ctl_handlers), ctl);
	if (ctl->server == NULL) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		goto unserved;
	}
	/* signals are for the FUSE loop (fuse_set_signal_handlers), not this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&ctl->thread, NULL, ctl_loop, ctl);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(why, sizeof(why), "cannot start its thread");
		goto unserved;
	}
	fs->ctl = ctl;
	return 0;
unserved:
	log_warnx("no status socket %s: %s", ctl->path, why);
	ctl_free(ctl);
	return 0;
}

void
ctl_ready(struct fsd *fs)
{
	if (fs->ctl == NULL)
		return;
	pthread_mutex_lock(&fs->ctl->mtx);
	fs->ctl->ready = 1;
	pthread_mutex_unlock(&fs->ctl->mtx);
}

void
ctl_stop(struct fsd *fs)
{
	struct fsd_ctl *ctl = fs->ctl;

	if (ctl == NULL)
		return;
	fs->ctl = NULL;
	if (write(ctl->stop_pipe[1], "", 1) != 1)
		fatal("status socket: waking its thread");
	pthread_join(ctl->thread, NULL);
	ctl_free(ctl);
}
