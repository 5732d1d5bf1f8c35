/*
 * What a restarted pcmkd must know again, in <rundir>/pcmkd.state:
 * "up NODE GEN" for each node it told its subscribers was up, and
 * "fence NODE LEFT_AT" for each node lost and not yet fenced. The
 * subscribers outlive a pcmkd: resubscribing, they take a node missing
 * from its live nodes for dead and recover it. Without the file a pcmkd
 * started again would list no node before corosync's first news (and
 * its subscribers would recover live nodes), then never see up a node
 * that died meanwhile (and its subscribers would recover it unfenced),
 * and forget a pending fence. With it, it starts from the membership its
 * subscribers know, and a node gone since fails as any other (members.c).
 * The file goes with the node's /run when the node itself goes down, as
 * the subscribers do, and when pcmkd leaves the group on purpose.
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

#define STATE_FILE	"pcmkd.state"

static char *
state_path(const struct pcmkd *p)
{
	char *path;

	xasprintf(&path, "%s/" STATE_FILE, p->rundir);
	return path;
}

void
runstate_save(const struct pcmkd *p)
{
	char *path = state_path(p), *tmp, line[64];
	unsigned i;
	int fd, n, ok;

	xasprintf(&tmp, "%s.tmp", path);
	ok = (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) != -1;
	for (i = 0; ok && i < PM_MAX_NODES; i++) {
		if (p->m.up[i]) {
			n = snprintf(line, sizeof(line), "up %u %" PRIu64 "\n", i, p->m.gen[i]);
			ok = write_full(fd, line, (size_t)n) == 0;
		}
		if (ok && fence_pending(&p->fences, i)) {
			n = snprintf(line, sizeof(line), "fence %u %lld\n", i,
			    (long long)p->fences.n[i].left_at);
			ok = write_full(fd, line, (size_t)n) == 0;
		}
	}
	if (!ok || fsync(fd) == -1 || rename(tmp, path) == -1)
		log_warn("cannot record the membership and pending fences in %s: a pcmkd "
		    "started again would not know them", path);
	if (fd != -1)
		close(fd);
	free(tmp);
	free(path);
}

void
runstate_drop(const struct pcmkd *p)
{
	char *path = state_path(p);

	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("%s", path);
	free(path);
}

/* At configuration, before anyone subscribes. */
void
runstate_load(struct pcmkd *p)
{
	char *path = state_path(p), buf[80], kind[8];
	unsigned long long v;
	unsigned node;
	int lineno = 0;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL) {
		if (errno != ENOENT)
			fatal("%s", path);
		free(path);
		return;
	}
	while (fgets(buf, sizeof(buf), f) != NULL) {
		lineno++;
		if (sscanf(buf, "%7s %u %llu", kind, &node, &v) != 3 || node >= PM_MAX_NODES ||
		    !p->node_known[node] || (strcmp(kind, "up") != 0 && strcmp(kind, "fence") != 0)) {
			log_warnx("%s:%d: not a node of cluster.conf up or to be fenced "
			    "(ignored): %s", path, lineno, buf);
			continue;
		}
		if (strcmp(kind, "up") == 0) {
			p->m.up[node] = 1;
			p->m.gen[node] = v;
		} else if (p->fencing == CC_PCMK_FENCING_NONE)
			/* the admin chose no fencing since: it goes down unfenced */
			log_warnx("node %u: its fence was pending when an earlier pcmkd stopped; "
			    "dropped (fencing = none)", node);
		else {
			fence_begin(&p->fences, node, (time_t)v, now_ms());
			log_warnx("node %u: its fence was pending when an earlier pcmkd stopped: "
			    "it stays unrecovered until fenced", node);
		}
	}
	fclose(f);
	free(path);
}
