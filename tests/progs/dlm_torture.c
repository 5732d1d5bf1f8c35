/*
 * dlm_torture: an LVB torture client for dlmd, in the spirit of
 * ocfs2-test's lvb_torture. A 64-bit counter lives in a resource's LVB.
 *
 *   --mode incr  (default) take EX, read the counter, add one, write it
 *                back with the unlock (or with --convert the down-convert
 *                to NL), ITERATIONS times
 *   --mode read  take PR ITERATIONS times; the counter must never go
 *                backwards nor be torn
 *   --mode print take PR once and print the counter on stdout
 *   --mode keep  hold an NL lock until killed: as in o2dlm, a resource
 *                nobody holds may be purged with its LVB, so a test
 *                keeps one holder for its whole run
 *
 * With --log FILE every EX grant interval (CLOCK_REALTIME ns, taken
 * after the grant's Ast and before the release is sent, so inside the
 * real grant) and every acknowledged increment is one line, appended
 * with one write(2) to an O_APPEND file: a kill -9 loses nothing that
 * was acknowledged. Lines are "KIND key=value ...":
 *
 *   grant id= pid= iter= start= end= old= new= lvb_valid=
 *   ack id= pid= value=
 *   read id= pid= value= lvb_valid=
 *   error id= pid= what= ...
 *   event id= pid= domain= kind= node=
 *
 * The counter's 64 bytes: the value (little-endian), its complement,
 * then 48 bytes derived from it, so that a torn LVB shows; all zeros is
 * a resource never written (0).
 *
 * Exit 0, 1 on a failure or a check that failed, 2 usage, 3 dlmd down.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "o2dlm.h"
#include "util.h"

enum mode { MODE_INCR, MODE_READ, MODE_PRINT, MODE_KEEP };

struct torture {
	struct dlmc	*c;
	const char	*domain;
	const char	*lock;
	const char	*id;
	int		 logfd;
	int		 convert;
	int		 timeout_ms;
	unsigned long	 hold_us;
	unsigned long	 errors;
};

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One line, one write: O_APPEND keeps lines of several clients whole. */
static void __attribute__((__format__(printf, 3, 4)))
logline(struct torture *t, const char *kind, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, m;

	if (t->logfd == -1)
		return;
	n = snprintf(buf, sizeof(buf), "%s id=%s pid=%d ", kind, t->id, (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n += m;
	buf[n++] = '\n';
	if (write_full(t->logfd, buf, (size_t)n) == -1) {
		fprintf(stderr, "dlm_torture: log: %s\n", strerror(errno));
		exit(1);
	}
}

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
encode(uint8_t *lvb, uint64_t v)
{
	int i;

	put_le64(lvb, v);
	put_le64(lvb + 8, ~v);
	for (i = 0; i < 6; i++)
		put_le64(lvb + 16 + 8 * i, mix(v + (uint64_t)i));
}

/* 0 with *v, or -1 when the bytes are no counter (torn). */
static int
decode(const uint8_t *lvb, uint64_t *v)
{
	uint8_t want[DLMC_LVB_LEN];
	int i;

	for (i = 0; i < DLMC_LVB_LEN && lvb[i] == 0; i++)
		continue;
	if (i == DLMC_LVB_LEN) {
		*v = 0;
		return 0;
	}
	*v = get_le64(lvb);
	encode(want, *v);
	return memcmp(want, lvb, DLMC_LVB_LEN) == 0 ? 0 : -1;
}

static void
hex(const uint8_t *p, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void
on_domain_event(struct dlmc *c, const struct dlmc_domain_event *de, void *arg)
{
	static const char *const kinds[] = { "node_down", "recovery_done",
	    "node_joined", "node_left" };

	(void)c;
	logline(arg, "event", "domain=%s kind=%s node=%u", de->domain,
	    de->kind >= 0 && de->kind < 4 ? kinds[de->kind] : "unknown", de->node);
}

/* Take the lock at mode, new or (convert != 0) up from NL; 0 or exit. */
static int
take(struct torture *t, int mode, uint64_t *lockid, struct dlmc_ast *ast)
{
	struct dlmc_lock_args a = { 0 };

	a.domain = t->domain;
	a.name = t->lock;
	a.namelen = strlen(t->lock);
	a.mode = mode;
	a.flags = DLMC_F_VALBLK;
	if (t->convert && *lockid != 0) {
		a.flags |= DLMC_F_CONVERT;
		a.lockid = *lockid;
	}
	if (dlmc_lock_wait(t->c, &a, t->timeout_ms, lockid, ast) == -1) {
		fprintf(stderr, "dlm_torture: %s %s: %s\n", mode == DLMC_EX ? "EX" :
		    "PR", t->lock, dlmc_error(t->c));
		logline(t, "error", "what=lock mode=%d errno=%d", mode, errno);
		return -1;
	}
	return 0;
}

/* Release: unlock, or down-convert to NL; lvb goes with it (EX). */
static int
release(struct torture *t, uint64_t lockid, const uint8_t *lvb)
{
	struct dlmc_lock_args a = { 0 };
	struct dlmc_ast ast;
	uint64_t id;
	int rc;

	if (t->convert) {
		a.domain = t->domain;
		a.mode = DLMC_NL;
		a.flags = DLMC_F_CONVERT | (lvb != NULL ? DLMC_F_VALBLK : 0);
		a.lockid = lockid;
		a.lvb = lvb;
		rc = dlmc_lock_wait(t->c, &a, t->timeout_ms, &id, &ast);
	} else {
		rc = dlmc_unlock(t->c, t->domain, lockid,
		    lvb != NULL ? DLMC_F_VALBLK : 0, lvb);
	}
	if (rc == -1) {
		fprintf(stderr, "dlm_torture: release %s: %s\n", t->lock,
		    dlmc_error(t->c));
		logline(t, "error", "what=release errno=%d", errno);
	}
	return rc;
}

/* The LVB of a grant, checked: 0 with *v, or -1 (logged). */
static int
grant_value(struct torture *t, const struct dlmc_ast *ast, uint64_t *v)
{
	char h[2 * DLMC_LVB_LEN + 1];

	if (!ast->has_lvb) {
		fprintf(stderr, "dlm_torture: a VALBLK grant came without its LVB\n");
		logline(t, "error", "what=no_lvb");
		return -1;
	}
	if (decode(ast->lvb, v) == -1) {
		hex(ast->lvb, DLMC_LVB_LEN, h);
		fprintf(stderr, "dlm_torture: torn LVB %s\n", h);
		logline(t, "error", "what=torn lvb_valid=%d lvb=%s", ast->lvb_valid, h);
		return -1;
	}
	return 0;
}

static int
run_incr(struct torture *t, unsigned long iters)
{
	struct dlmc_ast ast;
	uint8_t lvb[DLMC_LVB_LEN];
	uint64_t lockid = 0, v, start, end, last = 0, acked = 0;
	unsigned long i;

	for (i = 0; i < iters; i++) {
		if (t->convert && lockid == 0 && take(t, DLMC_NL, &lockid, &ast) == -1)
			return 1;
		if (take(t, DLMC_EX, &lockid, &ast) == -1)
			return 1;
		start = realtime_ns();
		if (grant_value(t, &ast, &v) == -1)
			return 1;
		if (v < last) {
			logline(t, "error", "what=backwards value=%llu after=%llu lvb_valid=%d",
			    (unsigned long long)v, (unsigned long long)last, ast.lvb_valid);
			t->errors++;
		}
		encode(lvb, v + 1);
		if (t->hold_us > 0)
			usleep(t->hold_us);
		end = realtime_ns();
		logline(t, "grant", "iter=%lu start=%llu end=%llu old=%llu new=%llu lvb_valid=%d",
		    i, (unsigned long long)start, (unsigned long long)end,
		    (unsigned long long)v, (unsigned long long)(v + 1), ast.lvb_valid);
		if (release(t, lockid, lvb) == -1)
			return 1;
		if (!t->convert)
			lockid = 0;
		last = v + 1;
		acked++;
		logline(t, "ack", "value=%llu", (unsigned long long)last);
	}
	printf("%s: %llu increments acknowledged, last value %llu, %lu errors\n",
	    t->id, (unsigned long long)acked, (unsigned long long)last, t->errors);
	return t->errors == 0 ? 0 : 1;
}

static int
run_read(struct torture *t, unsigned long iters, int print)
{
	struct dlmc_ast ast;
	uint64_t lockid = 0, v, last = 0;
	unsigned long i;

	for (i = 0; i < iters; i++) {
		if (t->convert && lockid == 0 && take(t, DLMC_NL, &lockid, &ast) == -1)
			return 1;
		if (take(t, DLMC_PR, &lockid, &ast) == -1)
			return 1;
		if (grant_value(t, &ast, &v) == -1)
			return 1;
		logline(t, "read", "value=%llu lvb_valid=%d", (unsigned long long)v,
		    ast.lvb_valid);
		if (v < last) {
			logline(t, "error", "what=backwards value=%llu after=%llu lvb_valid=%d",
			    (unsigned long long)v, (unsigned long long)last, ast.lvb_valid);
			t->errors++;
		}
		last = v;
		if (print) {
			printf("%llu\n", (unsigned long long)v);
			if (!ast.lvb_valid)
				fprintf(stderr, "dlm_torture: dlmd says the LVB may be stale\n");
		}
		if (release(t, lockid, NULL) == -1)
			return 1;
		if (!t->convert)
			lockid = 0;
	}
	if (!print)
		printf("%s: %lu reads, last value %llu, %lu errors\n", t->id, iters,
		    (unsigned long long)last, t->errors);
	return t->errors == 0 ? 0 : 1;
}

/* Hold NL until killed; exit 1 if dlmd goes away first. */
static int
run_keep(struct torture *t)
{
	struct dlmc_ast ast;
	struct pollfd pfd = { .fd = dlmc_fd(t->c), .events = POLLIN };
	uint64_t lockid = 0;

	if (take(t, DLMC_NL, &lockid, &ast) == -1)
		return 1;
	printf("holding NL on %s\n", t->lock);
	fflush(stdout);
	for (;;) {
		if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
			break;
		if (dlmc_dispatch(t->c) == -1)
			break;
	}
	fprintf(stderr, "dlm_torture: lost the connection to dlmd\n");
	logline(t, "error", "what=keeper_lost");
	return 1;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: dlm_torture [--mode incr|read|print|keep] [-i ITERATIONS] "
	    "[-d DOMAIN] [-l LOCK]\n"
	    "                   [--log FILE] [--id TAG] [--convert] [--hold-us US] "
	    "[--timeout SECS]\n"
	    "                   [--rundir DIR]\n");
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "domain", required_argument, NULL, 'd' },
		{ "lock", required_argument, NULL, 'l' },
		{ "log", required_argument, NULL, 'L' },
		{ "id", required_argument, NULL, 'I' },
		{ "convert", no_argument, NULL, 'C' },
		{ "hold-us", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "rundir", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct dlmc_callbacks cb = { .domain_event = on_domain_event };
	struct torture t = { .domain = "torture", .lock = "lvb", .logfd = -1,
	    .timeout_ms = 120000 };
	const char *rundir = rundir_default(), *logpath = NULL;
	unsigned long iters = 100, v;
	enum mode mode = MODE_INCR;
	char idbuf[32];
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "m:i:d:l:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'm':
			if (strcmp(optarg, "incr") == 0)
				mode = MODE_INCR;
			else if (strcmp(optarg, "read") == 0)
				mode = MODE_READ;
			else if (strcmp(optarg, "print") == 0)
				mode = MODE_PRINT;
			else if (strcmp(optarg, "keep") == 0)
				mode = MODE_KEEP;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'i':
			if (parse_ulong(optarg, 10, 1UL << 40, &iters) == -1)
				return 2;
			break;
		case 'd': t.domain = optarg; break;
		case 'l': t.lock = optarg; break;
		case 'L': logpath = optarg; break;
		case 'I': t.id = optarg; break;
		case 'C': t.convert = 1; break;
		case 'H':
			if (parse_ulong(optarg, 10, 10000000, &t.hold_us) == -1)
				return 2;
			break;
		case 'T':
			if (parse_ulong(optarg, 10, 86400, &v) == -1)
				return 2;
			t.timeout_ms = (int)v * 1000;
			break;
		case 'R': rundir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || strlen(t.lock) == 0 || strlen(t.lock) > DLMC_NAME_MAX) {
		usage(stderr);
		return 2;
	}
	if (t.id == NULL) {
		snprintf(idbuf, sizeof(idbuf), "%d", (int)getpid());
		t.id = idbuf;
	}
	if (logpath != NULL &&
	    (t.logfd = open(logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) == -1) {
		fprintf(stderr, "dlm_torture: %s: %s\n", logpath, strerror(errno));
		return 1;
	}
	if ((t.c = dlmc_open(rundir, &cb, &t)) == NULL) {
		fprintf(stderr, "dlm_torture: dlmd is not running (%s/dlmd.sock: %s)\n",
		    rundir, strerror(errno));
		return 3;
	}
	dlmc_set_timeout(t.c, t.timeout_ms);
	if (dlmc_join(t.c, t.domain, 0, NULL) == -1) {
		fprintf(stderr, "dlm_torture: join %s: %s\n", t.domain, dlmc_error(t.c));
		logline(&t, "error", "what=join errno=%d", errno);
		dlmc_close(t.c);
		return 1;
	}
	if (mode == MODE_INCR)
		rc = run_incr(&t, iters);
	else if (mode == MODE_KEEP)
		rc = run_keep(&t);
	else
		rc = run_read(&t, mode == MODE_PRINT ? 1 : iters, mode == MODE_PRINT);
	fflush(stdout);
	dlmc_close(t.c);
	return rc;
}
