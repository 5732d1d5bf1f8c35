/*
 * A stand-in for pacemaker's libstonithd.so.26, for tests of
 * pcmkd-stonith without a running fencer: the two calls the stonith
 * API's helpers look up (stonith_api_kick, stonith_api_time), answering
 * as the environment says and recording each call.
 *
 *	FAKE_STONITH_LOG	file each call appends a line to:
 *				"kick NODEID TIMEOUT OFF" or "time NODEID IN_PROGRESS"
 *	FAKE_STONITH_KICK_RC	what the kick returns (default 0: fenced)
 *	FAKE_STONITH_LAST	the last fence time before a kick (default 0: never)
 *	FAKE_STONITH_AFTER	the last fence time once a kick returned 0
 *				(default: the time of the kick)
 *
 * A test links it in as libstonithd.so.26 through LD_LIBRARY_PATH.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static time_t fenced_at;	/* set by a successful kick */

static long long
env_num(const char *name, long long dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtoll(v, NULL, 10) : dflt;
}

static void record(const char *fmt, ...) __attribute__((__format__(printf, 1, 2)));

static void
record(const char *fmt, ...)
{
	const char *path = getenv("FAKE_STONITH_LOG");
	va_list ap;
	FILE *f;

	if (path == NULL || (f = fopen(path, "a")) == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

int stonith_api_kick(uint32_t nodeid, const char *uname, int timeout, bool off);
time_t stonith_api_time(uint32_t nodeid, const char *uname, bool in_progress);

int
stonith_api_kick(uint32_t nodeid, const char *uname, int timeout, bool off)
{
	int rc = (int)env_num("FAKE_STONITH_KICK_RC", 0);

	(void)uname;
	record("kick %u %d %d\n", nodeid, timeout, off);
	if (rc == 0)
		fenced_at = (time_t)env_num("FAKE_STONITH_AFTER", (long long)time(NULL));
	return rc;
}

time_t
stonith_api_time(uint32_t nodeid, const char *uname, bool in_progress)
{
	(void)uname;
	record("time %u %d\n", nodeid, in_progress);
	return fenced_at != 0 ? fenced_at : (time_t)env_num("FAKE_STONITH_LAST", 0);
}
