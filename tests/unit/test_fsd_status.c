/*
 * fsd's status (ctl.c): what a mount reports, taken from its state and
 * counters, survives the status socket's framing and decodes as o2ctl
 * reads it: local and read-only mounts, and a cluster mount with dead
 * nodes, orphan scans and cached locks at each level.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "fsd/fsd.h"
#include "fsd/glue.h"

static struct fsd fs;

static void
setup(void)
{
	memset(&fs, 0, sizeof(fs));
	strcpy(fs.vol.uuid, "0123456789ABCDEF0123456789ABCDEF");
	strcpy(fs.vol.label, "vol\"1");
	fs.vol.path = "/dev/unit";
	fs.slot = -1;
}

TestSuite(fsd_status, .init = setup);

/* The status as the socket carries it: framed, then decoded again. */
static Envelope *
round_trip(const char *mountpoint)
{
	Fsd__FsdStatus st = FSD__FSD_STATUS__INIT;
	Envelope rep = ENVELOPE__INIT, *back;
	uint8_t *buf;
	uint32_t be;
	size_t len;

	ctl_status_fill(&fs, mountpoint, &st);
	rep.type = MSG_TYPE__MSG_FSD_STATUS;
	rep.kind = KIND__KIND_REPLY;
	rep.payload_case = ENVELOPE__PAYLOAD_FSD_STATUS;
	rep.fsd_status = &st;
	cr_assert_eq(ipc_frame_pack(&rep, &buf, &len), 0);
	memcpy(&be, buf, 4);
	cr_assert_eq(ntohl(be), len - 4);
	back = envelope__unpack(NULL, len - 4, buf + 4);
	free(buf);
	cr_assert_not_null(back);
	cr_assert_eq(back->type, MSG_TYPE__MSG_FSD_STATUS);
	cr_assert_eq(back->payload_case, ENVELOPE__PAYLOAD_FSD_STATUS);
	return back;
}

Test(fsd_status, local_read_only_mount)
{
	Envelope *e;
	const Fsd__FsdStatus *st;

	fs.readonly = 1;
	e = round_trip("/mnt/x");
	st = e->fsd_status;
	cr_assert_str_eq(st->uuid, "0123456789ABCDEF0123456789ABCDEF");
	cr_assert_str_eq(st->label, "vol\"1");
	cr_assert_str_eq(st->device, "/dev/unit");
	cr_assert_str_eq(st->mountpoint, "/mnt/x");
	cr_assert_str_eq(st->cluster_name, "");
	cr_assert(st->readonly);
	cr_assert(!st->cluster);
	cr_assert_eq(st->slot, -1);
	cr_assert_eq(st->journal_commits, 0);
	cr_assert_eq(st->locks, 0);
	cr_assert_eq(st->pid, (uint32_t)getpid());
	envelope__free_unpacked(e, NULL);
}

Test(fsd_status, cluster_mount_counters_and_locks)
{
	static const int levels[] = { LKM_EX, LKM_PR, LKM_PR, LKM_NL, -1 };
	struct fsd_glue g;
	struct fsd_lockres *lr;
	const Fsd__FsdStatus *st;
	Envelope *e;
	size_t i;

	memset(&g, 0, sizeof(g));
	pthread_mutex_init(&g.mtx, NULL);
	pthread_mutex_init(&g.os_mtx, NULL);
	g.fs = &fs;
	g.ndead = 1;
	g.recoveries = 2;
	g.os_running = 1;
	g.os_scans = 3;
	g.os_deleted = 7;
	fs.glue = &g;
	fs.slot = 2;
	fs.node_num = 5;
	strcpy(fs.vol.cluster_name, "lc");
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		lr = lockres_get(&fs, FSD_LOCK_META, 100 + i, 1, 100 + i);
		lr->level = levels[i];
	}
	e = round_trip("/m");
	st = e->fsd_status;
	cr_assert(st->cluster);
	cr_assert(!st->readonly);
	cr_assert_str_eq(st->cluster_name, "lc");
	cr_assert_eq(st->node, 5);
	cr_assert_eq(st->slot, 2);
	cr_assert(st->recovering);
	cr_assert_eq(st->recoveries, 2);
	cr_assert_eq(st->orphan_scans, 3);
	cr_assert_eq(st->orphans_deleted, 7);
	cr_assert_eq(st->locks, 5);
	cr_assert_eq(st->locks_ex, 1);
	cr_assert_eq(st->locks_pr, 2);
	cr_assert_eq(st->locks_nl, 1);
	envelope__free_unpacked(e, NULL);
	lockres_free_all(&fs);
}
