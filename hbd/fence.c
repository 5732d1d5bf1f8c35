/*
 * Self-fencing. We fence when we can no longer prove to our peers that
 * we are alive (our heartbeat write did not complete within
 * dead_threshold - 1 intervals), or when our slot holds somebody else's
 * block. Peers will soon call us dead and recover our locks and
 * journal; before that, nothing of ours may write to the disk again.
 *
 * kill: SIGKILL every registered disk writer of this node, wait until
 *	each is gone, then stop heartbeating without the clean-stop block
 *	(the peers must see us die, not leave).
 * reset: reboot(2) at once, no sync, as the kernel's emergency_restart.
 * panic: crash the kernel through sysrq (kdump can catch it), else reset.
 *
 * A fenced hbd stays fenced, refusing regions and writers, until an
 * admin runs o2ctl clear-fence: it must not rejoin on its own. The state
 * is kept in <rundir>/hbd.fenced, so that an hbd restarted after a crash
 * (or by systemd) is fenced too. Subscribers hear of the clear
 * (MSG_HBD_UNFENCED), so that the node's other daemons rejoin without
 * a restart.
 */
#include <sys/reboot.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbd.h"
#include "log.h"
#include "nmdclient.h"
#include "util.h"

#define FENCE_CONFIRM_MS	5000
#define FENCE_FILE		"hbd.fenced"

static char *
fence_file(const struct hbd *h)
{
	char *path;

	xasprintf(&path, "%s/" FENCE_FILE, h->rundir);
	return path;
}

/* Written before the fence method runs: a crash in it must not unfence us. */
static void
fence_persist(const struct hbd *h)
{
	char *path = fence_file(h), *tmp;
	int fd;

	xasprintf(&tmp, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || write_full(fd, h->fence_reason, strlen(h->fence_reason)) == -1 ||
	    fsync(fd) == -1 || rename(tmp, path) == -1)
		log_warn("fencing: cannot record the fence in %s; a restarted "
		    "hbd would not know it", path);
	if (fd != -1)
		close(fd);
	free(tmp);
	free(path);
}

/* At start: an earlier incarnation fenced this node, so we are fenced. */
void
fence_restore(struct hbd *h)
{
	char *path = fence_file(h), buf[sizeof(h->fence_reason) - 64];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			fatal("%s", path);
		free(path);
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	h->fenced = 1;
	snprintf(h->fence_reason, sizeof(h->fence_reason),
	    "fenced before this hbd started: %s", buf);
	log_err("this node is fenced (%s); o2ctl clear-fence lets it rejoin", buf);
	free(path);
}

static void
fence_reboot(int panic)
{
	int fd;

	/* No sync: the disk may be what hangs, and nothing may reach it now. */
	if (panic && (fd = open("/proc/sysrq-trigger", O_WRONLY)) != -1) {
		if (write(fd, "c", 1) == -1)
			log_warn("sysrq crash");
		close(fd);
	}
	reboot(RB_AUTOBOOT);
	log_warn("reboot");
}

/*
 * Blocking on purpose: nothing else this daemon could do matters until
 * the writers are gone, and the wait is bounded.
 */
static int
kill_writers(struct hbd *h)
{
	struct disk_writer *w;
	struct pollfd pfd;
	uint64_t deadline = mono_us() + FENCE_CONFIRM_MS * 1000ull;
	int left = 0, ms;

	LIST_FOREACH(w, &h->writers, entry) {
		log_err("fencing: killing disk writer pid %d (%s)", (int)w->pid, w->what);
		if (syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0) == -1 &&
		    errno != ESRCH)
			log_warn("fencing: pidfd_send_signal(%d)", (int)w->pid);
	}
	/* A pidfd polls readable once its process has exited. */
	LIST_FOREACH(w, &h->writers, entry) {
		pfd.fd = w->pidfd;
		pfd.events = POLLIN;
		ms = (int)(deadline > mono_us() ? (deadline - mono_us()) / 1000 : 0);
		if (poll(&pfd, 1, ms) == 1) {
			log_info("fencing: disk writer pid %d is gone", (int)w->pid);
			continue;
		}
		log_err("fencing: disk writer pid %d did not die within %d ms",
		    (int)w->pid, FENCE_CONFIRM_MS);
		left++;
	}
	return left;
}

void
fence(struct hbd *h, const char *fmt, ...)
{
	struct hb_region *r, *next;
	const char *method = cc_fence_method_name(h->fence_method);
	va_list ap;

	if (h->fenced)
		return;
	h->fenced = 1;
	va_start(ap, fmt);
	vsnprintf(h->fence_reason, sizeof(h->fence_reason), fmt, ap);
	va_end(ap);
	/* Before anything that may block: the writers stop at their next I/O. */
	lease_revoke_all();
	log_err("*** FENCING this node (method %s): %s", method, h->fence_reason);
	fence_persist(h);
	switch (h->fence_method) {
	case CC_FENCE_RESET:
		fence_reboot(0);
		break;
	case CC_FENCE_PANIC:
		fence_reboot(1);
		break;
	case CC_FENCE_KILL:
		if (kill_writers(h) > 0)
			log_err("fencing: some disk writers may still be alive; "
			    "this node must be reset by hand");
		break;
	}
	/* first: subscribers must not take the nodes going down next for deaths */
	api_fenced_event(h, h->fence_reason, method);
	for (r = TAILQ_FIRST(&h->regions); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		region_stop(r, 0);
	}
}

/*
 * The lock manager died holding this node's cluster locks: whatever the
 * disk writers do now is unprotected, so they die; and the other nodes
 * must recover those locks, which they do for a node they see die. A
 * new heartbeat generation is such a death, and at once a new node
 * that the restarted lock manager can join the domains with. The new
 * generations are chosen (and recorded in the lease file) first: an
 * hbd killed while the writers die must not leave the next one to
 * resume the old incarnation. None is written before the writers are
 * gone: this blocks the event loop, and only its tick starts a write.
 */
void
fence_reincarnate(struct hbd *h, const char *why)
{
	struct hb_region *r;

	if (h->fenced)
		return;
	log_err("%s: killing the disk writers and restarting this node's "
	    "heartbeat incarnation, so that the other nodes recover its locks", why);
	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state != RS_STOPPING && r->state != RS_FAILED)
			region_new_generation(r);
	if (kill_writers(h) > 0)
		fence(h, "%s, and disk writers would not die", why);
}

/*
 * A region is about to stop for some other reason than fencing (its nmd
 * item went, its device failed) while users of the given kinds depend
 * on it (writers, lock holders).
 * Stopping it would make us see every node it shows alive go down, and
 * recover their locks and journals while they run: our own loss of
 * sight is never their death. We are the ones who can no longer prove
 * we are alive, so we fence. Returns 1 when it fenced.
 */
int
fence_if_used(struct hbd *h, struct hb_region *r, int users, const char *why)
{
	char who[256];

	if (h->fenced || !member_region_needed(h, r) ||
	    !(api_region_users(h, r->name, who, sizeof(who)) & users))
		return 0;
	fence(h, "region %s must stop (%s) while %s", r->name, why, who);
	return 1;
}

/*
 * With only a lock manager holding cluster locks (no writer: a
 * filesystem that went, dlmfs users), a region whose item is gone keeps
 * beating until the locks are given up or the lock manager's death
 * ends the incarnation; stopping under them would likewise make it
 * recover the others' locks. 1 while it is kept.
 */
int
region_kept_for_locks(struct hbd *h, struct hb_region *r)
{
	char who[256];

	if (!member_region_needed(h, r) ||
	    !(api_region_users(h, r->name, who, sizeof(who)) & USERS_LOCKS))
		return 0;
	if (!r->kept_logged)
		log_warnx("region %s: its nmd item is gone, but %s: heartbeating on "
		    "until they are given up", r->name, who);
	r->kept_logged = 1;
	return 1;
}

/*
 * The admin says the node is safe again: rejoin with new generations.
 * Not while a write of the fenced incarnation may still land: it would
 * overwrite the new incarnation's slot. 0, EBUSY, or why the record of
 * the fence could not be removed.
 */
int
fence_clear(struct hbd *h)
{
	struct hb_region *r;
	char *path;
	int rc;

	if (h->hung_regions > 0)
		return EBUSY;
	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state == RS_STOPPING)
			return EBUSY;
	path = fence_file(h);
	if (unlink(path) == -1 && errno != ENOENT) {
		rc = errno;
		log_warn("clear-fence: %s", path);
		free(path);
		return rc;
	}
	free(path);
	log_info("fence cleared by the admin (was: %s)", h->fence_reason);
	h->fenced = 0;
	/* Before the regions restart: netd and dlmd hear of the clear
	 * before any node comes up in the new incarnation. */
	api_unfenced_event(h, h->fence_reason);
	h->fence_reason[0] = '\0';
	/* Failed leftovers of the fenced incarnation are started afresh. */
	while ((r = TAILQ_FIRST(&h->regions)) != NULL)
		region_forget(r);
	nmd_client_refetch(h->nmd);
	return 0;
}
