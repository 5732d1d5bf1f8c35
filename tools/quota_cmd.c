/*
 * o2ctl quota MOUNTPOINT report | set user|group ID [limits] |
 * grace user|group [times]: disk quotas
 * of a volume fsd mounts (doc/quota.md). quotactl(2) names a block device
 * and FUSE passes no quota command, so quota(1), repquota(8) and
 * setquota(8) cannot reach fsd: the limits and the usage go through the
 * mount's status socket (fsd/ctl.c), found by its mountpoint.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "o2ctl.h"

/* The status socket of the fsd mounted on mountpoint (malloc'ed), or NULL. */
static char *
socket_of(struct o2ctl *ctl, const char *mountpoint)
{
	char want[PATH_MAX], *path = NULL;
	struct mounts ms;
	size_t i;

	if (realpath(mountpoint, want) == NULL) {
		fprintf(stderr, "o2ctl: %s: %s\n", mountpoint, strerror(errno));
		return NULL;
	}
	if (mounts_collect(ctl, &ms) == -1)
		return NULL;
	for (i = 0; i < ms.n && path == NULL; i++)
		if (ms.v[i].rep != NULL && strcmp(ms.v[i].rep->fsd_status->mountpoint, want) == 0)
			path = strdup(ms.v[i].path);
	mounts_free(&ms);
	if (path == NULL)
		fprintf(stderr, "o2ctl: no fsd of %s answers on %s mounted there\n", ctl->rundir,
		    want);
	return path;
}

/* One request to the mount's fsd: 0 and *rep, or an exit code (reported). */
static int
quota_call(struct o2ctl *ctl, const char *mountpoint, Envelope *req, Envelope **rep)
{
	char *path;
	int fd, rc = EX_OK;

	if ((path = socket_of(ctl, mountpoint)) == NULL)
		return EX_DOWN;
	if ((fd = ipc_sync_connect(path)) == -1 ||
	    ipc_sync_call(fd, req, rep, ctl->timeout_ms) == -1) {
		fprintf(stderr, "o2ctl: %s: %s\n", path, strerror(errno));
		rc = EX_DOWN;
	} else if ((*rep)->status != 0) {
		fprintf(stderr, "o2ctl: quota: %s\n", (*rep)->error[0] ? (*rep)->error :
		    strerror((*rep)->status));
		envelope__free_unpacked(*rep, NULL);
		rc = EX_FAIL;
	}
	if (fd != -1)
		close(fd);
	free(path);
	return rc;
}

/* A size: digits with an optional K, M, G or T (powers of 1024). -1: not one. */
static int
parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'T': shift += 10; /* FALLTHROUGH */
	case 'G': shift += 10; /* FALLTHROUGH */
	case 'M': shift += 10; /* FALLTHROUGH */
	case 'K': shift += 10; end++; break;
	case '\0': break;
	default: return -1;
	}
	if (*end != '\0' || (shift && v > (~0ULL >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "user" or "group": 0 or 1; -1 otherwise. */
static int
parse_type(const char *s)
{
	return strcmp(s, "user") == 0 ? 0 : strcmp(s, "group") == 0 ? 1 : -1;
}

/* Send a QuotaSet; the reply carries only a status. */
static int
quota_send(struct o2ctl *ctl, const char *mountpoint, Fsd__QuotaSet *qs)
{
	Envelope req = ENVELOPE__INIT, *rep;
	int rc;

	req.type = MSG_TYPE__MSG_FSD_QUOTA_SET;
	req.payload_case = ENVELOPE__PAYLOAD_QUOTA_SET;
	req.quota_set = qs;
	if ((rc = quota_call(ctl, mountpoint, &req, &rep)) != EX_OK)
		return rc;
	envelope__free_unpacked(rep, NULL);
	return EX_OK;
}

/* A user or group by number or name. */
static int
parse_id(int type, const char *s, uint32_t *id)
{
	unsigned long v;
	struct passwd *pw;
	struct group *gr;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno == 0 && end != s && *end == '\0' && *s != '-' && v <= UINT32_MAX) {
		*id = (uint32_t)v;
		return 0;
	}
	if (type == 0 && (pw = getpwnam(s)) != NULL) {
		*id = pw->pw_uid;
		return 0;
	}
	if (type == 1 && (gr = getgrnam(s)) != NULL) {
		*id = gr->gr_gid;
		return 0;
	}
	return -1;
}

static int
quota_set(struct o2ctl *ctl, const char *mountpoint, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block-soft", required_argument, NULL, 'b' },
		{ "block-hard", required_argument, NULL, 'B' },
		{ "inode-soft", required_argument, NULL, 'i' },
		{ "inode-hard", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	Fsd__QuotaSet qs = FSD__QUOTA_SET__INIT;
	uint64_t v;
	int c, t;

	/* argv: set user|group ID [options] */
	if (argc < 3 || (t = parse_type(argv[1])) == -1)
		return EX_USAGE;
	qs.type = (uint32_t)t;
	if (parse_id((int)qs.type, argv[2], &qs.id) == -1) {
		fprintf(stderr, "o2ctl: no such %s: %s\n", argv[1], argv[2]);
		return EX_USAGE;
	}
	/* the options after ID: it stands as their argv[0]; 0 restarts getopt */
	argc -= 2;
	argv += 2;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == '?' || parse_size(optarg, &v) == -1) {
			if (c != '?')
				fprintf(stderr, "o2ctl: not a size or count: %s\n", optarg);
			return EX_USAGE;
		}
		switch (c) {
		case 'b':
			qs.block_soft = v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_BLOCK_SOFT;
			break;
		case 'B':
			qs.block_hard = v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_BLOCK_HARD;
			break;
		case 'i':
			qs.inode_soft = v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_INODE_SOFT;
			break;
		case 'I':
			qs.inode_hard = v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_INODE_HARD;
			break;
		}
	}
	if (optind != argc || qs.mask == 0) {
		fprintf(stderr, "o2ctl: quota set: name at least one limit\n");
		return EX_USAGE;
	}
	return quota_send(ctl, mountpoint, &qs);
}

/* grace user|group [--block SECONDS] [--inode SECONDS]: the file's grace times. */
static int
quota_grace(struct o2ctl *ctl, const char *mountpoint, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "inode", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	Fsd__QuotaSet qs = FSD__QUOTA_SET__INIT;
	uint64_t v;
	int c, t;

	if (argc < 2 || (t = parse_type(argv[1])) == -1)
		return EX_USAGE;
	qs.type = (uint32_t)t;
	/* the options after the type: it stands as their argv[0] */
	argc -= 1;
	argv += 1;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == '?' || parse_size(optarg, &v) == -1 || v > UINT32_MAX) {
			if (c != '?')
				fprintf(stderr, "o2ctl: not a number of seconds: %s\n", optarg);
			return EX_USAGE;
		}
		if (c == 'b') {
			qs.block_grace = (uint32_t)v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_BLOCK_GRACE;
		} else {
			qs.inode_grace = (uint32_t)v;
			qs.mask |= FSD__QUOTA_SET_MASK__QUOTA_SET_INODE_GRACE;
		}
	}
	if (optind != argc || qs.mask == 0) {
		fprintf(stderr, "o2ctl: quota grace: name --block or --inode\n");
		return EX_USAGE;
	}
	return quota_send(ctl, mountpoint, &qs);
}

/* A grace time's end as the report shows it: "-", "over" or what is left. */
static void
grace_text(uint64_t end, char *out, size_t outlen)
{
	time_t now = time(NULL);

	if (end == 0)
		snprintf(out, outlen, "-");
	else if ((time_t)end <= now)
		snprintf(out, outlen, "over");
	else
		snprintf(out, outlen, "%llus", (unsigned long long)((time_t)end - now));
}

static void
report_json(const Fsd__QuotaReport *qr)
{
	size_t i;
	int first = 1, f;

	printf("{");
	json_field_uint(stdout, &first, "block_grace", qr->block_grace);
	json_field_uint(stdout, &first, "inode_grace", qr->inode_grace);
	json_key(stdout, &first, "entries");
	printf("[");
	for (i = 0; i < qr->n_entries; i++) {
		const Fsd__QuotaEntry *e = qr->entries[i];

		f = 1;
		printf("%s{", i ? "," : "");
		json_field_str(stdout, &f, "type", e->type == 0 ? "user" : "group");
		json_field_uint(stdout, &f, "id", e->id);
		json_field_uint(stdout, &f, "space", e->space);
		json_field_uint(stdout, &f, "inodes", e->inodes);
		json_field_uint(stdout, &f, "block_soft", e->block_soft);
		json_field_uint(stdout, &f, "block_hard", e->block_hard);
		json_field_uint(stdout, &f, "inode_soft", e->inode_soft);
		json_field_uint(stdout, &f, "inode_hard", e->inode_hard);
		json_field_uint(stdout, &f, "block_grace_end", e->block_grace_end);
		json_field_uint(stdout, &f, "inode_grace_end", e->inode_grace_end);
		printf("}");
	}
	printf("]}\n");
}

static void
report_text(const Fsd__QuotaReport *qr)
{
	char bg[32], ig[32];
	size_t i;

	printf("grace times: space %us, inodes %us\n", qr->block_grace, qr->inode_grace);
	printf("%-5s %10s %14s %14s %14s %8s %10s %10s %10s %10s\n", "type", "id", "space",
	    "space-soft", "space-hard", "grace", "inodes", "ino-soft", "ino-hard", "grace");
	for (i = 0; i < qr->n_entries; i++) {
		const Fsd__QuotaEntry *e = qr->entries[i];

		grace_text(e->block_grace_end, bg, sizeof(bg));
		grace_text(e->inode_grace_end, ig, sizeof(ig));
		printf("%-5s %10u %14llu %14llu %14llu %8s %10llu %10llu %10llu %10s\n",
		    e->type == 0 ? "user" : "group", e->id, (unsigned long long)e->space,
		    (unsigned long long)e->block_soft, (unsigned long long)e->block_hard, bg,
		    (unsigned long long)e->inodes, (unsigned long long)e->inode_soft,
		    (unsigned long long)e->inode_hard, ig);
	}
}

int
cmd_quota(struct o2ctl *ctl, int argc, char **argv)
{
	Envelope req = ENVELOPE__INIT, *rep;
	int rc;

	/* argv: quota MOUNTPOINT report | quota MOUNTPOINT set ... */
	if (argc < 3)
		return EX_USAGE;
	if (strcmp(argv[2], "set") == 0)
		return quota_set(ctl, argv[1], argc - 2, argv + 2);
	if (strcmp(argv[2], "grace") == 0)
		return quota_grace(ctl, argv[1], argc - 2, argv + 2);
	if (strcmp(argv[2], "report") != 0 || argc != 3)
		return EX_USAGE;
	req.type = MSG_TYPE__MSG_FSD_QUOTA_REPORT;
	if ((rc = quota_call(ctl, argv[1], &req, &rep)) != EX_OK)
		return rc;
	if (rep->payload_case != ENVELOPE__PAYLOAD_QUOTA_REPORT) {
		fprintf(stderr, "o2ctl: quota: no report in the reply\n");
		envelope__free_unpacked(rep, NULL);
		return EX_FAIL;
	}
	if (ctl->json)
		report_json(rep->quota_report);
	else
		report_text(rep->quota_report);
	envelope__free_unpacked(rep, NULL);
	return EX_OK;
}
