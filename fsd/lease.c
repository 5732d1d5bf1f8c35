/*
 * fsd as one of this node's disk writers: registered with hbd (fencing
 * kills it), and writing only under hbd's heartbeat lease (on the pcmk
 * stack pcmkd stands for hbd here: same protocol, same lease format)
 * (common/hblease.h). Every transfer to or from the volume asks the
 * lease first (lease_gate, the volume's I/O gate): while it runs, at
 * the cost of a clock read; once it has run out, the transfer waits
 * for hbd to renew it, up to the moment the other nodes may have
 * declared us dead. Past that moment, or once hbd revokes it (fencing,
 * the region gone), the lease is lost for good, because another node may
 * already be replaying our journal: the transfer fails with EIO and fsd
 * stops at once, as a fenced node (glue_fence), so that no request goes
 * on waiting for a cluster lock that will never come.
 *
 * A thread watches the registration and the lease: when hbd goes away
 * (it may be restarting, and resume our incarnation in time), it
 * registers again with the next hbd, so that fencing can still kill us;
 * and when the lease is lost while no transfer asks (hbd dead or stopped,
 * every request waiting for a lock), it notices within LEASE_CHECK_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hblease.h"
#include "ipc.h"
#include "log.h"
#include "util.h"

#include "fsd.h"
#include "glue.h"

#define REGISTER_TIMEOUT_MS	5000
#define REDIAL_MS		50
#define RENEW_POLL_US		2000
#define LEASE_CHECK_MS		100

struct fsd_lease {
	struct fsd		*fs;
	struct hblease_view	 view;
	const char		*daemon;	/* hbd, or pcmkd on the pcmk stack */
	char			*sock;		/* its socket */
	char			 uuid[VOLUME_UUID_HEX + 1];
	int			 hbd_fd;	/* our registration; -1 while hbd is away */
	int			 stop[2];	/* unmount: the watcher ends */
	pthread_t		 watcher;
	int			 watching;
	atomic_int		 lost;		/* for good */
	atomic_int		 waiting;	/* an expiry is being waited out (logged once) */
};

static int
writer_call(const char *daemon, int fd, MsgType type, const char *uuid, char *err,
    size_t errlen)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	Hbd__RegisterWriter rw = HBD__REGISTER_WRITER__INIT;
	int rc = 0;

	req.type = type;
	if (type == MSG_TYPE__MSG_HBD_REGISTER_WRITER) {
		rw.what = (char *)"fsd";
		rw.region = (char *)uuid;
		req.payload_case = ENVELOPE__PAYLOAD_REGISTER_WRITER;
		req.register_writer = &rw;
	}
	if (ipc_sync_call(fd, &req, &rep, REGISTER_TIMEOUT_MS) == -1) {
		snprintf(err, errlen, "%s: no answer: %s", daemon, strerror(errno));
		return -1;
	}
	if (rep->status != 0) {
		snprintf(err, errlen, "%s: %s", daemon, rep->error && *rep->error ? rep->error :
		    strerror((int)rep->status));
		rc = -1;
	}
	envelope__free_unpacked(rep, NULL);
	return rc;
}

static int
register_writer(struct fsd_lease *l, char *err, size_t errlen)
{
	int fd;

	if ((fd = ipc_sync_connect(l->sock)) == -1) {
		snprintf(err, errlen, "%s is not running (%s: %s)", l->daemon, l->sock,
		    strerror(errno));
		return -1;
	}
	if (writer_call(l->daemon, fd, MSG_TYPE__MSG_HBD_REGISTER_WRITER, l->uuid, err, errlen) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
lease_lose(struct fsd_lease *l, const char *why)
{
	if (atomic_exchange(&l->lost, 1))
		return;
	log_err("heartbeat lease of region %s lost (%s): another node may be recovering "
	    "this node's journal; no more disk I/O", l->uuid, why);
	glue_fence(l->fs);
}

/* Lost for good if revoked, or run out past the moment of our death. */
static void
lease_check(struct fsd_lease *l)
{
	uint64_t exp = hblease_expires_us(&l->view);

	if (exp == 0)
		lease_lose(l, "revoked: fenced, quorum lost, or the region stopped");
	else if (hblease_now_us() >= hblease_final_us(&l->view, exp))
		lease_lose(l, "not renewed before the other nodes could declare this "
		    "node dead");
}

/*
 * The volume's I/O gate. Cheap while the lease runs; otherwise waits
 * for a renewal within the window where the others cannot yet have
 * declared us dead.
 */
static int
lease_gate(void *arg, int write)
{
	struct fsd_lease *l = arg;
	uint64_t now = hblease_now_us(), exp, final;

	(void)write;
	if (!atomic_load(&l->lost) && hblease_expires_us(&l->view) > now)
		return 0;
	if ((exp = hblease_expires_us(&l->view)) == 0) {
		lease_lose(l, "revoked: fenced, quorum lost, or the region stopped");
	} else if (!atomic_load(&l->lost)) {
		final = hblease_final_us(&l->view, exp);
		if (!atomic_exchange(&l->waiting, 1))
			log_warnx("heartbeat lease of region %s ran out: disk I/O waits up "
			    "to %llu ms for %s to renew it", l->uuid,
			    (unsigned long long)(final > now ? (final - now) / 1000 : 0), l->daemon);
		while ((now = hblease_now_us()) < final) {
			if ((exp = hblease_expires_us(&l->view)) > now) {
				if (atomic_exchange(&l->waiting, 0))
					log_info("heartbeat lease of region %s renewed", l->uuid);
				return 0;
			}
			if (exp == 0)
				break;
			usleep(RENEW_POLL_US);
		}
		lease_lose(l, exp == 0 ? "revoked" : "not renewed before the other "
		    "nodes could declare this node dead");
	}
	errno = EIO;
	return -1;
}

/* Until unmount: register again with a restarted hbd (pcmkd); check the lease. */
static void *
watcher(void *arg)
{
	struct fsd_lease *l = arg;
	struct pollfd p[2];
	uint64_t now, exp;
	char err[256];
	int fd, logged = 0;

	p[0].fd = l->stop[0];
	p[0].events = POLLIN;
	for (;;) {
		p[1].fd = l->hbd_fd;
		p[1].events = POLLIN;
		if (poll(p, l->hbd_fd >= 0 ? 2 : 1, l->hbd_fd >= 0 ? LEASE_CHECK_MS : REDIAL_MS) == -1 &&
		    errno != EINTR)
			break;
		if (p[0].revents)
			break;
		lease_check(l);
		if (l->hbd_fd >= 0) {
			if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			close(l->hbd_fd);
			l->hbd_fd = -1;
			now = hblease_now_us();
			exp = hblease_expires_us(&l->view);
			log_warnx("%s went away; the heartbeat lease of region %s has %llu "
			    "ms left for a restarted %s to renew it", l->daemon, l->uuid,
			    (unsigned long long)(exp > now ? (exp - now) / 1000 : 0), l->daemon);
			logged = 0;
			continue;
		}
		if (atomic_load(&l->lost))
			continue;
		if ((fd = register_writer(l, err, sizeof(err))) == -1) {
			if (!logged++)
				log_warnx("registering again as a disk writer: %s", err);
			continue;
		}
		l->hbd_fd = fd;
		log_info("registered again with %s as a disk writer of region %s", l->daemon,
		    l->uuid);
	}
	return NULL;
}

struct fsd_lease *
lease_start(struct fsd *fs, const char *rundir, const char *daemon, char *err, size_t errlen)
{
	struct fsd_lease *l = xcalloc(1, sizeof(*l));

	l->fs = fs;
	l->hbd_fd = l->stop[0] = l->stop[1] = -1;
	l->view.fd = -1;
	snprintf(l->uuid, sizeof(l->uuid), "%s", fs->vol.uuid);
	l->daemon = daemon;
	xasprintf(&l->sock, "%s/%s.sock", rundir, daemon);
	if ((l->hbd_fd = register_writer(l, err, errlen)) == -1 ||
	    hblease_open(rundir, daemon, l->uuid, &l->view, err, errlen) == -1)
		goto fail;
	if (pipe2(l->stop, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	if (pthread_create(&l->watcher, NULL, watcher, l) != 0) {
		snprintf(err, errlen, "cannot start the lease watcher");
		goto fail;
	}
	l->watching = 1;
	fs->vol.io_gate_arg = l;
	fs->vol.io_gate = lease_gate;
	return l;
fail:
	lease_stop(fs, l);
	return NULL;
}

/* Unmount: no gate, and an orderly goodbye, so that hbd knows we did not die. */
void
lease_stop(struct fsd *fs, struct fsd_lease *l)
{
	char err[256];

	if (l == NULL)
		return;
	if (fs->vol.io_gate_arg == l) {
		fs->vol.io_gate = NULL;
		fs->vol.io_gate_arg = NULL;
	}
	if (l->watching) {
		if (write(l->stop[1], "", 1) == -1)
			log_warn("stopping the lease watcher");
		pthread_join(l->watcher, NULL);
	}
	if (l->hbd_fd >= 0) {
		if (writer_call(l->daemon, l->hbd_fd, MSG_TYPE__MSG_HBD_UNREGISTER_WRITER, NULL, err,
		    sizeof(err)) == -1)
			log_warnx("unregistering as a disk writer: %s", err);
		close(l->hbd_fd);
	}
	if (l->stop[0] >= 0) {
		close(l->stop[0]);
		close(l->stop[1]);
	}
	hblease_close(&l->view);
	free(l->sock);
	free(l);
}
