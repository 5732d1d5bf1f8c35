/*
 * Disk writers registered with the membership daemon (hbd, or pcmkd on
 * the pcmk stack): the processes it kills when this node fences itself.
 * A pidfd pins each: a pid reused after it exits is never killed by
 * mistake.
 */
#ifndef OCFS2_WRITERS_H
#define OCFS2_WRITERS_H

#include <sys/queue.h>
#include <sys/types.h>

#include "ipc.h"

struct disk_writer {
	LIST_ENTRY(disk_writer)	 entry;
	pid_t			 pid;
	int			 pidfd;
	char			*what;
	char			*region;	/* "": every region */
};
LIST_HEAD(disk_writers, disk_writer);

/*
 * MSG_HBD_REGISTER_WRITER from c, which has *mine registered (NULL none):
 * the new writer, on the list; NULL when refused, and answered. A fenced
 * node (fence_reason not NULL) takes none. The caller answers success.
 */
struct disk_writer *writer_register(struct disk_writers *, struct ipc_conn *c,
	    const Envelope *req, const struct disk_writer *mine, const char *fence_reason);
/* MSG_HBD_UNREGISTER_WRITER: 0 when *mine is gone (caller answers); -1 answered. */
int	writer_unregister(struct ipc_conn *c, const Envelope *req, struct disk_writer **mine);
/* Its connection closed. */
void	writer_gone(struct disk_writer *);
/* Off its list, and freed. */
void	writer_free(struct disk_writer *);

/* The writers of a status reply, and their release. */
void	writers_fill_status(const struct disk_writers *, Hbd__HbStatus *);
void	writers_free_status(Hbd__HbStatus *);

#endif
