/*
 * fsd: serve one OCFS2 volume through FUSE.
 *
 *   fsd [-f] [-v] [-d] [--rundir DIR] [-o OPTIONS] DEVICE MOUNTPOINT
 *
 * Runs in the foreground (systemd supervises; -f is accepted for mount
 * helpers). Options may also follow the operands, as mount.fuse3 passes
 * them: `mount -t fuse.fsd DEVICE DIR` runs `fsd DEVICE DIR -o ...`.
 * This file only wires things together.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "util.h"

#include "ops.h"

struct cmdline {
	const char	*device;
	const char	*mountpoint;
	const char	*rundir;
	int		 verbose;
	int		 debug;
	struct fsd_mount_opts mo;
	char		*fuse_opts;	/* what FUSE gets from -o */
};

static void
usage(void)
{
	fprintf(stderr, "usage: fsd [-f] [-v] [-d] [--rundir DIR] [-o OPTIONS] DEVICE MOUNTPOINT\n"
	    "  -o ro|rw, nocluster, node=N (slot map owner without a cluster, 0), commit=S (5),\n"
	    "     link_wait=S (60), cache_blocks=N, lock_cache=N, threads=N,\n"
	    "     lock_hold=MS (50, at most 200), lock_hold_min=MS (0),\n"
	    "     relatime|noatime|strictatime, atime_quantum=S (60),\n"
	    "     attr_timeout=S, entry_timeout=S, writeback_cache=0, acl|noacl,\n"
	    "     and FUSE mount options (allow_other, ...)\n");
	exit(2);
}

static void
append_opt(char **list, const char *opt)
{
	char *n;

	if (*list == NULL)
		*list = xstrdup(opt);
	else {
		xasprintf(&n, "%s,%s", *list, opt);
		free(*list);
		*list = n;
	}
}

/* Split -o: ours are taken, mount(8) bookkeeping is dropped, the rest goes to FUSE. */
static void
parse_o(struct cmdline *c, const char *arg)
{
	static const char *dropped[] = { "defaults", "_netdev", "auto", "noauto", "user",
	    "nouser", "users", "nofail", "rw" };
	char *s = xstrdup(arg), *p = s, *opt;
	unsigned long v;
	size_t i;

	while ((opt = strsep(&p, ",")) != NULL) {
		if (*opt == '\0' || strncmp(opt, "x-", 2) == 0)
			continue;
		for (i = 0; i < nitems(dropped); i++)
			if (strcmp(opt, dropped[i]) == 0)
				break;
		if (i < nitems(dropped)) {
			if (strcmp(opt, "rw") == 0)
				c->mo.readonly = 0;
			continue;
		}
		if (strcmp(opt, "ro") == 0) {
			c->mo.readonly = 1;
			append_opt(&c->fuse_opts, "ro");
		} else if (strncmp(opt, "cache_blocks=", 13) == 0) {
			if (parse_ulong(opt + 13, 10, 1u << 24, &v) == -1 || v == 0)
				fatalx("bad cache_blocks: %s", opt + 13);
			c->mo.cache_blocks = (unsigned)v;
		} else if (strncmp(opt, "lock_cache=", 11) == 0) {
			if (parse_ulong(opt + 11, 10, 1u << 24, &v) == -1)
				fatalx("bad lock_cache: %s", opt + 11);
			c->mo.lock_cache = (unsigned)v;
		} else if (strncmp(opt, "lock_hold=", 10) == 0) {
			if (parse_ulong(opt + 10, 10, LOCK_HOLD_MAX_MS, &v) == -1)
				fatalx("bad lock_hold (ms, at most %u): %s", LOCK_HOLD_MAX_MS, opt + 10);
			c->mo.lock_hold_us = (unsigned)v * 1000;
		} else if (strncmp(opt, "lock_hold_min=", 14) == 0) {
			if (parse_ulong(opt + 14, 10, LOCK_HOLD_MAX_MS, &v) == -1)
				fatalx("bad lock_hold_min (ms, at most %u): %s", LOCK_HOLD_MAX_MS,
				    opt + 14);
			c->mo.lock_hold_min_us = (unsigned)v * 1000;
		} else if (strncmp(opt, "node=", 5) == 0) {
			if (parse_ulong(opt + 5, 10, 254, &v) == -1)
				fatalx("bad node number: %s", opt + 5);
			c->mo.node_num = (unsigned)v;
		} else if (strncmp(opt, "commit=", 7) == 0) {
			if (parse_ulong(opt + 7, 10, 3600, &v) == -1 || v == 0)
				fatalx("bad commit interval: %s", opt + 7);
			c->mo.commit_ms = (unsigned)v * 1000;
		} else if (strncmp(opt, "orphan_scan=", 12) == 0) {
			if (parse_ulong(opt + 12, 10, 86400, &v) == -1 || v == 0)
				fatalx("bad orphan scan interval: %s", opt + 12);
			c->mo.orphan_scan_ms = (unsigned)v * 1000;
		} else if (strncmp(opt, "threads=", 8) == 0) {
			if (parse_ulong(opt + 8, 10, 256, &v) == -1 || v == 0)
				fatalx("bad threads: %s", opt + 8);
			c->mo.threads = (unsigned)v;
		} else if (strcmp(opt, "relatime") == 0) {
			c->mo.atime = FSD_RELATIME;
		} else if (strcmp(opt, "noatime") == 0) {
			c->mo.atime = FSD_NOATIME;
			append_opt(&c->fuse_opts, "noatime");	/* shows in /proc/mounts */
		} else if (strcmp(opt, "strictatime") == 0) {
			c->mo.atime = FSD_STRICTATIME;
		} else if (strncmp(opt, "atime_quantum=", 14) == 0) {
			if (parse_ulong(opt + 14, 10, UINT_MAX, &v) == -1)
				fatalx("bad atime_quantum: %s", opt + 14);
			c->mo.atime_quantum = (unsigned)v;
		} else if (strncmp(opt, "link_wait=", 10) == 0) {
			if (parse_ulong(opt + 10, 10, 3600, &v) == -1 || v == 0)
				fatalx("bad link wait: %s", opt + 10);
			c->mo.link_wait_ms = (unsigned)v * 1000;
		} else if (strcmp(opt, "acl") == 0) {
			c->mo.noacl = 0;
		} else if (strcmp(opt, "noacl") == 0) {
			c->mo.noacl = 1;
		} else if (strcmp(opt, "nocluster") == 0) {
			c->mo.nocluster = 1;
		} else if (strcmp(opt, "writeback_cache=0") == 0 || strcmp(opt, "no_writeback_cache") == 0) {
			c->mo.writeback_cache = 0;
		} else if (strncmp(opt, "attr_timeout=", 13) == 0) {
			c->mo.attr_timeout = atof(opt + 13);
		} else if (strncmp(opt, "entry_timeout=", 14) == 0) {
			c->mo.entry_timeout = atof(opt + 14);
		} else
			append_opt(&c->fuse_opts, opt);
	}
	free(s);
}

static void
parse_cmdline(struct cmdline *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rundir", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(c, 0, sizeof(*c));
	c->mo.lock_cache = 16384;
	c->mo.lock_hold_us = LOCK_HOLD_DEFAULT_MS * 1000;
	c->mo.threads = 8;
	c->mo.atime_quantum = 60;	/* ocfs2's default */
	c->mo.attr_timeout = c->mo.entry_timeout = 1.0;
	c->mo.writeback_cache = 1;
	while ((ch = getopt_long(argc, argv, "fvdo:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			break;	/* always in the foreground */
		case 'v':
			c->verbose++;
			break;
		case 'd':
			c->debug = 1;
			c->verbose++;
			break;
		case 'o':
			parse_o(c, optarg);
			break;
		case 'R':
			c->rundir = optarg;
			break;
		default:
			usage();
		}
	}
	if (c->mo.lock_hold_min_us > c->mo.lock_hold_us)
		fatalx("lock_hold_min (%u ms) is above lock_hold (%u ms)",
		    c->mo.lock_hold_min_us / 1000, c->mo.lock_hold_us / 1000);
	if (argc - optind != 2)
		usage();
	c->device = argv[optind];
	c->mountpoint = argv[optind + 1];
	if (c->rundir == NULL)
		c->rundir = rundir_default();
}

int
main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	struct fsd_guardian gd;
	struct fuse_session *se;
	struct cmdline c;
	struct fsd fs;
	char err[512], *fo, *canon = NULL;
	int rc = 1;

	parse_cmdline(&c, argc, argv);
	log_init("fsd", c.verbose);
	if (access(c.mountpoint, F_OK) == -1)
		fatal("%s", c.mountpoint);
	/* resolved now: once mounted, a lookup of it would wait for us */
	canon = realpath(c.mountpoint, NULL);
	c.mo.rundir = c.rundir;
	c.mo.mountpoint = canon != NULL ? canon : c.mountpoint;
	/* before super_mount opens the volume and starts our threads */
	guardian_start(&gd);
	if (super_mount(&fs, c.device, &c.mo, err, sizeof(err)) == -1) {
		log_warnx("cannot mount %s: %s", c.device, err);
		guardian_release(&gd);
		free(canon);
		return 1;
	}
	if (fs.glue != NULL) {
		/* what another node changes must show at once: the kernel keeps nothing */
		fs.opts.attr_timeout = fs.opts.entry_timeout = 0;
		fs.opts.writeback_cache = 0;
	}
	/*
	 * The kernel does the permission checks from our attributes, as for
	 * any local filesystem; root mounts are visible to every user.
	 */
	xasprintf(&fo, "fsname=%s,subtype=ocfs2,default_permissions%s%s%s", c.device,
	    getuid() == 0 ? ",allow_other" : "", c.fuse_opts ? "," : "",
	    c.fuse_opts ? c.fuse_opts : "");
	if (fuse_opt_add_arg(&args, argv[0]) == -1 || fuse_opt_add_arg(&args, "-o") == -1 ||
	    fuse_opt_add_arg(&args, fo) == -1 || (c.debug && fuse_opt_add_arg(&args, "-d") == -1))
		fatalx("out of memory");
	free(fo);
	se = fuse_session_new(&args, &fsd_ops, sizeof(fsd_ops), &fs);
	if (se == NULL)
		goto out_unmount;
	fs.se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, c.mountpoint) != 0)
		goto out_signals;
	log_info("%s mounted on %s", c.device, c.mountpoint);
	if (canon != NULL)
		fsd_mount_setup(&fs, canon);
	guardian_watch(&gd, &fs);
	notify_ready();
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(lc, c.mo.threads);
	fuse_loop_cfg_set_clone_fd(lc, 0);
	rc = fuse_session_loop_mt(se, lc) != 0;
	fuse_loop_cfg_destroy(lc);
	notify_stopping();
	inode_session_gone(&fs);
	fuse_session_unmount(se);
	guardian_release(&gd);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	inode_session_gone(&fs);
	fuse_session_destroy(se);
out_unmount:
	guardian_release(&gd);
	super_unmount(&fs);
	fuse_opt_free_args(&args);
	free(c.fuse_opts);
	free(canon);
	log_info("%s: unmounted", c.device);
	return rc;
}
