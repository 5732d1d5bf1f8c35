/* Disk writers registered with the membership daemon (see writers.h). */
#include <sys/syscall.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"
#include "writers.h"

struct disk_writer *
writer_register(struct disk_writers *list, struct ipc_conn *c, const Envelope *req,
    const struct disk_writer *mine, const char *fence_reason)
{
	pid_t pid = ipc_conn_pid(c);
	struct disk_writer *w;
	int pidfd;

	if (fence_reason != NULL) {
		ipc_reply_status(c, req, EPERM, "this node is fenced (%s)", fence_reason);
		return NULL;
	}
	if (mine != NULL) {
		ipc_reply_status(c, req, EEXIST, "pid %d is already registered", (int)pid);
		return NULL;
	}
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		ipc_reply_status(c, req, errno, "pidfd_open(%d): %s", (int)pid, strerror(errno));
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->pid = pid;
	w->pidfd = pidfd;
	w->what = xstrdup(req->register_writer->what);
	w->region = xstrdup(req->register_writer->region);
	LIST_INSERT_HEAD(list, w, entry);
	log_info("disk writer pid %d registered (%s%s%s)", (int)pid, w->what,
	    w->region[0] ? ", region " : "", w->region);
	return w;
}

void
writer_free(struct disk_writer *w)
{
	LIST_REMOVE(w, entry);
	close(w->pidfd);
	free(w->what);
	free(w->region);
	free(w);
}

/* An orderly goodbye (an unmount): answered once the writer is off the list. */
int
writer_unregister(struct ipc_conn *c, const Envelope *req, struct disk_writer **mine)
{
	if (*mine == NULL) {
		ipc_reply_status(c, req, ENOENT, "pid %d is not registered",
		    (int)ipc_conn_pid(c));
		return -1;
	}
	log_info("disk writer pid %d (%s) unregistered", (int)(*mine)->pid, (*mine)->what);
	writer_free(*mine);
	*mine = NULL;
	return 0;
}

void
writer_gone(struct disk_writer *w)
{
	log_info("disk writer pid %d (%s) is gone", (int)w->pid, w->what);
	writer_free(w);
}

void
writers_fill_status(const struct disk_writers *list, Hbd__HbStatus *st)
{
	struct disk_writer *w;
	size_t n = 0;

	LIST_FOREACH(w, list, entry)
		n++;
	st->writers = xcalloc(n + 1, sizeof(*st->writers));
	LIST_FOREACH(w, list, entry) {
		Hbd__Writer *hw = xcalloc(1, sizeof(*hw));

		hbd__writer__init(hw);
		hw->pid = w->pid;
		hw->what = w->what;
		hw->region = w->region;
		st->writers[st->n_writers++] = hw;
	}
}

void
writers_free_status(Hbd__HbStatus *st)
{
	size_t i;

	for (i = 0; i < st->n_writers; i++)
		free(st->writers[i]);
	free(st->writers);
}
