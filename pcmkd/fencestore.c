/*
 * The pending fences outlive a pcmkd: <rundir>/pcmkd.fences holds one
 * line "NODE LEFT_AT" per node lost and not yet fenced. A pcmkd that
 * died and started again while a fence was pending would otherwise
 * forget the node (corosync no longer lists it), leave it out of the
 * live nodes, and its subscribers, resubscribing, would take it for dead
 * and recover it unfenced. The file goes with the node's /run when the
 * node itself goes down, as the subscribers do.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#include "pcmkd.h"

#define FENCES_FILE	"pcmkd.fences"

static char *
store_path(const struct pcmkd *p)
{
	char *path;

	xasprintf(&path, "%s/" FENCES_FILE, p->rundir);
	return path;
}

void
fencestore_save(const struct pcmkd *p)
{
	char *path = store_path(p), *tmp, line[64];
	unsigned i;
	int fd, n, ok;

	xasprintf(&tmp, "%s.tmp", path);
	ok = (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) != -1;
	for (i = 0; ok && i < PM_MAX_NODES; i++) {
		if (!fence_pending(&p->fences, i))
			continue;
		n = snprintf(line, sizeof(line), "%u %lld\n", i,
		    (long long)p->fences.n[i].left_at);
		ok = write_full(fd, line, (size_t)n) == 0;
	}
	if (!ok || fsync(fd) == -1 || rename(tmp, path) == -1)
		log_warn("cannot record the pending fences in %s: a pcmkd started again "
		    "would not know them", path);
	if (fd != -1)
		close(fd);
	free(tmp);
	free(path);
}

/* At configuration, before anyone subscribes: the pending fences again. */
void
fencestore_load(struct pcmkd *p)
{
	char *path = store_path(p), buf[64];
	unsigned long long left;
	unsigned node;
	int lineno = 0;
	FILE *f;

	if (p->fencing == CC_PCMK_FENCING_NONE) {
		/* the admin chose no fencing since: those nodes go down unfenced */
		if (unlink(path) == 0)
			log_warnx("fencing = none: the fences pending in %s are dropped", path);
		free(path);
		return;
	}
	if ((f = fopen(path, "re")) == NULL) {
		if (errno != ENOENT)
			fatal("%s", path);
		free(path);
		return;
	}
	while (fgets(buf, sizeof(buf), f) != NULL) {
		lineno++;
		if (sscanf(buf, "%u %llu", &node, &left) != 2 || node >= PM_MAX_NODES ||
		    !p->node_known[node]) {
			log_warnx("%s:%d: not a pending fence of a node of cluster.conf "
			    "(ignored): %s", path, lineno, buf);
			continue;
		}
		fence_begin(&p->fences, node, (time_t)left, now_ms());
		log_warnx("node %u: its fence was pending when an earlier pcmkd stopped: it "
		    "stays unrecovered until fenced", node);
	}
	fclose(f);
	free(path);
}
