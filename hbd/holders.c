/*
 * The processes this node's heartbeat incarnation depends on: its disk
 * writers (fsd) and the lock managers holding its cluster locks (dlmd's
 * guard). While hbd runs it knows them by their connections; a
 * connection that closes holding locks ends the incarnation
 * (fence_reincarnate). A restarted hbd has no connections, so every
 * change is also recorded in the lease file: pid and start time, which
 * name one process across pid reuse.
 *
 * An hbd that resumes an incarnation (lease.c) goes on with it only if
 * it can prove nothing it depended on died meanwhile: each recorded lock
 * holder must be the same live process. One that is gone took this
 * node's locks with it, and the others recover them only for a node they
 * see die: the incarnation must end (doc/daemon-failures.md). Those still
 * alive are inherited: watched by a pidfd until they speak to this hbd
 * themselves (a writer registers again, a lock manager tells its guard
 * again); one that dies before that ends the incarnation too, and an
 * inherited writer is killed by fencing like a registered one.
 */
#include <sys/pidfd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbd.h"
#include "hblease.h"
#include "log.h"
#include "util.h"

static void
inherited_free(struct hb_inherited *in)
{
	LIST_REMOVE(in, entry);
	if (in->writer != NULL)
		writer_free(in->writer);
	if (in->exited != NULL)
		event_free(in->exited);
	close(in->pidfd);
	free(in);
}

/* An inherited holder died before it spoke to us. */
static void
inherited_exited(evutil_socket_t fd, short ev, void *arg)
{
	struct hb_inherited *in = arg;
	struct hbd *h = in->h;
	char why[256];
	int guard = in->guard;

	(void)fd;
	(void)ev;
	snprintf(why, sizeof(why), "pid %d, which held cluster locks when the earlier "
	    "hbd went, died before it told this hbd", (int)in->pid);
	if (!guard)
		log_info("disk writer pid %d, registered with the earlier hbd, is gone",
		    (int)in->pid);
	inherited_free(in);
	if (guard)
		fence_reincarnate(h, why);
	lease_note_users(h);
}

/* Watch a live holder of the earlier hbd; its writer joins h->writers. */
static void
inherit(struct hbd *h, const struct hblease_holder *e, int pidfd)
{
	struct hb_inherited *in = xcalloc(1, sizeof(*in));
	struct disk_writer *w;

	in->h = h;
	in->pid = e->pid;
	in->starttime = e->starttime;
	in->pidfd = pidfd;
	in->guard = e->guard;
	if (e->writer) {
		w = xcalloc(1, sizeof(*w));
		w->pid = e->pid;
		if ((w->pidfd = dup(pidfd)) == -1)
			fatal("dup pidfd");
		w->what = xstrdup("a disk writer of the earlier hbd");
		w->region = xstrdup("");
		LIST_INSERT_HEAD(&h->writers, w, entry);
		in->writer = w;
	}
	if ((in->exited = event_new(h->base, pidfd, EV_READ, inherited_exited, in)) == NULL ||
	    event_add(in->exited, NULL) == -1)
		fatalx("cannot watch pid %d", (int)e->pid);
	LIST_INSERT_HEAD(&h->inherited, in, entry);
	log_info("pid %d (%s%s%s) of the earlier hbd is alive: watched until it "
	    "speaks to us", (int)e->pid, e->writer ? "disk writer" : "",
	    e->writer && e->guard ? ", " : "", e->guard ? "holds cluster locks" : "");
}

/*
 * At start, before any region resumes: the holders the earlier hbd
 * recorded. Returns 1, with why, when a lock holder among them is gone
 * (the incarnation cannot go on), else 0.
 */
int
holders_restore(struct hbd *h, char *why, size_t len)
{
	struct hblease_holder tab[HBLEASE_MAX_HOLDERS];
	unsigned i, n;
	int pidfd, lost = 0;

	n = lease_holders(tab, HBLEASE_MAX_HOLDERS);
	for (i = 0; i < n; i++) {
		/* The pidfd pins the process: checked after opening, the start time is its. */
		pidfd = pidfd_open(tab[i].pid, 0);
		if (pidfd != -1 && (tab[i].starttime == 0 ||
		    proc_starttime(tab[i].pid) == tab[i].starttime)) {
			inherit(h, &tab[i], pidfd);
			continue;
		}
		if (pidfd != -1)
			close(pidfd);
		else if (errno != ESRCH)
			log_warn("pidfd_open %d", (int)tab[i].pid);
		if (!tab[i].guard) {
			log_info("disk writer pid %d of the earlier hbd is gone", (int)tab[i].pid);
			continue;
		}
		if (!lost)
			snprintf(why, len, "pid %d, which held this node's cluster locks, "
			    "died while no hbd ran", (int)tab[i].pid);
		lost = 1;
	}
	return lost;
}

/*
 * pid speaks for itself now (it registered as a writer, or told its
 * guard): what the earlier hbd recorded of it is superseded.
 */
void
holders_claim(struct hbd *h, pid_t pid, int writer, int guard)
{
	struct hb_inherited *in, *next;

	for (in = LIST_FIRST(&h->inherited); in != NULL; in = next) {
		next = LIST_NEXT(in, entry);
		if (in->pid != pid)
			continue;
		if (writer && in->writer != NULL) {
			writer_free(in->writer);
			in->writer = NULL;
		}
		if (guard)
			in->guard = 0;
		if (in->writer == NULL && !in->guard)
			inherited_free(in);
	}
}

/* The inherited holders that still count, as api_region_users words them. */
int
holders_users(struct hbd *h, char *who, size_t len, size_t *n, int users)
{
	struct hb_inherited *in;

	LIST_FOREACH(in, &h->inherited, entry) {
		if (in->writer != NULL) {
			*n += (size_t)snprintf(who + *n, *n < len ? len - *n : 0, "%sdisk "
			    "writer pid %d (of the earlier hbd) writes", users ? ", " : "",
			    (int)in->pid);
			users |= USERS_WRITERS;
		}
		if (in->guard) {
			*n += (size_t)snprintf(who + *n, *n < len ? len - *n : 0, "%spid %d "
			    "(of the earlier hbd) holds cluster locks", users ? ", " : "",
			    (int)in->pid);
			users |= USERS_LOCKS;
		}
	}
	return users;
}

/* Append the inherited holders to tab (of max), from *n on. */
void
holders_fill(struct hbd *h, struct hblease_holder *tab, unsigned max, unsigned *n)
{
	struct hb_inherited *in;

	LIST_FOREACH(in, &h->inherited, entry) {
		if (*n == max)
			return;
		memset(&tab[*n], 0, sizeof(tab[*n]));
		tab[*n].pid = in->pid;
		tab[*n].starttime = in->starttime;
		tab[*n].writer = in->writer != NULL;
		tab[*n].guard = (uint8_t)in->guard;
		(*n)++;
	}
}
