/*
 * o2ctl mounts: the volumes fsd mounts on this node, one status socket
 * each (<rundir>/fsd-<UUID>.sock, fsd/ctl.c). A socket file nobody
 * answers on is a killed fsd's: listed as stale, the next mount of that
 * volume replaces it. o2ctl status shows the same list.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "o2ctl.h"
#include "util.h"

#define SOCK_PREFIX	"fsd-"
#define SOCK_SUFFIX	".sock"

/* Ask one socket; the entry's state says what came back. */
static void
mount_query(struct o2ctl *ctl, struct mount_entry *m)
{
	Envelope req = ENVELOPE__INIT, *rep = NULL;
	int fd;

	if ((fd = ipc_sync_connect(m->path)) == -1) {
		if (errno == ECONNREFUSED)
			m->state = MOUNT_STALE;
		else {
			m->state = MOUNT_ERROR;
			m->error = xstrdup(strerror(errno));
		}
		return;
	}
	req.type = MSG_TYPE__MSG_FSD_STATUS;
	if (ipc_sync_call(fd, &req, &rep, ctl->timeout_ms) == -1) {
		m->state = MOUNT_ERROR;
		xasprintf(&m->error, "no answer: %s", strerror(errno));
	} else if (rep->status == EAGAIN) {
		m->state = MOUNT_MOUNTING;
	} else if (rep->status != 0 || rep->payload_case != ENVELOPE__PAYLOAD_FSD_STATUS) {
		m->state = MOUNT_ERROR;
		m->error = xstrdup(rep->status != 0 && rep->error[0] ? rep->error :
		    rep->status != 0 ? strerror(rep->status) : "no status in the reply");
	} else {
		m->state = MOUNT_UP;
		m->rep = rep;
		rep = NULL;
	}
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
	close(fd);
}

static int
by_uuid(const void *a, const void *b)
{
	return strcmp(((const struct mount_entry *)a)->uuid, ((const struct mount_entry *)b)->uuid);
}

int
mounts_collect(struct o2ctl *ctl, struct mounts *ms)
{
	size_t plen = strlen(SOCK_PREFIX), slen = strlen(SOCK_SUFFIX), n;
	struct mount_entry *m;
	struct dirent *de;
	DIR *d;

	memset(ms, 0, sizeof(*ms));
	if ((d = opendir(ctl->rundir)) == NULL) {
		if (errno == ENOENT)
			return 0;	/* no stack, no mount of ours either */
		fprintf(stderr, "o2ctl: %s: %s\n", ctl->rundir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n <= plen + slen || strncmp(de->d_name, SOCK_PREFIX, plen) != 0 ||
		    strcmp(de->d_name + n - slen, SOCK_SUFFIX) != 0)
			continue;
		ms->v = xrealloc(ms->v, (ms->n + 1) * sizeof(*ms->v));
		m = &ms->v[ms->n++];
		memset(m, 0, sizeof(*m));
		xasprintf(&m->uuid, "%.*s", (int)(n - plen - slen), de->d_name + plen);
		xasprintf(&m->path, "%s/%s", ctl->rundir, de->d_name);
		mount_query(ctl, m);
	}
	closedir(d);
	if (ms->n > 1)
		qsort(ms->v, ms->n, sizeof(*ms->v), by_uuid);
	return 0;
}

void
mounts_free(struct mounts *ms)
{
	size_t i;

	for (i = 0; i < ms->n; i++) {
		if (ms->v[i].rep != NULL)
			envelope__free_unpacked(ms->v[i].rep, NULL);
		free(ms->v[i].uuid);
		free(ms->v[i].path);
		free(ms->v[i].error);
	}
	free(ms->v);
	memset(ms, 0, sizeof(*ms));
}

static const char *const state_names[] = {
	[MOUNT_UP] = "mounted",
	[MOUNT_MOUNTING] = "mounting",
	[MOUNT_STALE] = "stale",
	[MOUNT_ERROR] = "error",
};

static void
status_json(FILE *f, int *first, const Fsd__FsdStatus *st)
{
	int f2 = 1;

	json_field_str(f, first, "label", st->label);
	json_field_str(f, first, "device", st->device);
	json_field_str(f, first, "mountpoint", st->mountpoint);
	json_field_bool(f, first, "cluster", st->cluster);
	json_field_str(f, first, "cluster_name", st->cluster_name);
	json_field_bool(f, first, "readonly", st->readonly);
	json_field_uint(f, first, "node", st->node);
	json_field_int(f, first, "slot", st->slot);
	json_field_bool(f, first, "recovering", st->recovering);
	json_field_uint(f, first, "recoveries", st->recoveries);
	json_field_uint(f, first, "orphan_scans", st->orphan_scans);
	json_field_uint(f, first, "orphans_deleted", st->orphans_deleted);
	json_field_uint(f, first, "journal_commits", st->journal_commits);
	json_field_uint(f, first, "journal_in_place", st->journal_in_place);
	json_field_uint(f, first, "journal_handles", st->journal_handles);
	json_field_uint(f, first, "journal_handles_peak", st->journal_handles_peak);
	json_field_uint(f, first, "journal_owner_waits", st->journal_owner_waits);
	json_field_uint(f, first, "attrs_from_lvb", st->attrs_from_lvb);
	json_field_uint(f, first, "lock_upconverts", st->lock_upconverts);
	json_field_uint(f, first, "locks", st->locks);
	json_key(f, first, "locks_by_level");
	fputc('{', f);
	json_field_uint(f, &f2, "ex", st->locks_ex);
	json_field_uint(f, &f2, "pr", st->locks_pr);
	json_field_uint(f, &f2, "nl", st->locks_nl);
	fputc('}', f);
	json_field_uint(f, first, "pid", st->pid);
}

void
mounts_json(FILE *f, const struct mounts *ms)
{
	const struct mount_entry *m;
	size_t i;
	int first;

	fputc('[', f);
	for (i = 0; i < ms->n; i++) {
		m = &ms->v[i];
		first = 1;
		fprintf(f, "%s{", i ? "," : "");
		json_field_str(f, &first, "uuid", m->uuid);
		json_field_str(f, &first, "state", state_names[m->state]);
		json_field_str(f, &first, "socket", m->path);
		if (m->error != NULL)
			json_field_str(f, &first, "error", m->error);
		if (m->rep != NULL)
			status_json(f, &first, m->rep->fsd_status);
		fputc('}', f);
	}
	fputc(']', f);
}

void
mounts_text(FILE *f, const struct mounts *ms, int detail)
{
	const Fsd__FsdStatus *st;
	const struct mount_entry *m;
	size_t i;

	for (i = 0; i < ms->n; i++) {
		m = &ms->v[i];
		if (m->rep == NULL) {
			fprintf(f, "  volume %s: %s%s%s (%s)\n", m->uuid,
			    m->state == MOUNT_STALE ? "stale socket, no fsd answers" :
			    state_names[m->state], m->error ? ": " : "", m->error ? m->error : "",
			    m->path);
			continue;
		}
		st = m->rep->fsd_status;
		fprintf(f, "  volume %s \"%s\" on %s: %s, node %u, slot %d%s\n", st->uuid,
		    st->label, st->mountpoint, st->readonly ? "read-only" : "read-write",
		    st->node, st->slot, st->recovering ? ", RECOVERING a dead node's slot" : "");
		if (!detail)
			continue;
		fprintf(f, "    device %s, %s%s, fsd pid %u\n", st->device,
		    st->cluster ? "cluster " : "no cluster stack",
		    st->cluster ? st->cluster_name : "", st->pid);
		fprintf(f, "    journal commits %llu (%llu of times, in place), handles %llu "
		    "(at most %u at once); slots recovered %u; orphan scans %u (%llu orphans "
		    "deleted)\n", (unsigned long long)st->journal_commits,
		    (unsigned long long)st->journal_in_place,
		    (unsigned long long)st->journal_handles, st->journal_handles_peak,
		    st->recoveries, st->orphan_scans, (unsigned long long)st->orphans_deleted);
		if (st->journal_owner_waits != 0)
			fprintf(f, "    BUG: handles waited %llu times for a block another open "
			    "handle had\n", (unsigned long long)st->journal_owner_waits);
		if (st->cluster)
			fprintf(f, "    cluster locks cached %u: EX %u, PR %u, NL %u; "
			    "stats from a lock value block %llu; upconverts %llu\n", st->locks,
			    st->locks_ex, st->locks_pr, st->locks_nl,
			    (unsigned long long)st->attrs_from_lvb,
			    (unsigned long long)st->lock_upconverts);
	}
}

int
cmd_mounts(struct o2ctl *ctl, int argc, char **argv)
{
	struct mounts ms;

	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	if (mounts_collect(ctl, &ms) == -1)
		return EX_FAIL;
	if (ctl->json) {
		mounts_json(stdout, &ms);
		fputc('\n', stdout);
	} else if (ms.n == 0)
		printf("no volume mounted (no fsd socket in %s)\n", ctl->rundir);
	else
		mounts_text(stdout, &ms, 1);
	mounts_free(&ms);
	return EX_OK;
}
