/*
 * pcmkd-stonith NODE_NAME NODE_ID LEFT_AT: pcmkd's fencing program for
 * fencing = pacemaker. It asks pacemaker's fencer to power NODE_ID off
 * and exits 0 only when the fencer's history has that node fenced at
 * LEFT_AT (Unix seconds, when corosync lost it) or later, as
 * dlm_controld's dlm_stonith does. The stonith API's helpers in
 * <crm/stonith-ng.h> load libstonithd at run time: without pacemaker,
 * every attempt fails, saying so, and pcmkd retries.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <crm/stonith-ng.h>

#define FENCE_TIMEOUT_S	300	/* the fencer's own limit, as dlm_controld gives it */
#define FENCE_OFF	1	/* power off, not reboot: as dlm_controld asks */

static int
parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' || *out > max ? -1 : 0;
}

int
main(int argc, char *argv[])
{
	uint64_t id, left;
	time_t last;
	int rc;

	if (argc != 4 || parse_num(argv[2], 254, &id) == -1 ||
	    parse_num(argv[3], INT64_MAX, &left) == -1) {
		fprintf(stderr, "usage: pcmkd-stonith NODE_NAME NODE_ID(0-254) LEFT_AT(Unix s)\n");
		return 2;
	}
	last = stonith_api_time_helper((uint32_t)id, false);
	if (last > 0 && (uint64_t)last >= left) {
		printf("pcmkd-stonith: node %s (%" PRIu64 ") was fenced at %lld, after it left "
		    "at %" PRIu64 "\n", argv[1], id, (long long)last, left);
		return 0;
	}
	rc = stonith_api_kick_helper((uint32_t)id, FENCE_TIMEOUT_S, FENCE_OFF);
	if (rc != 0) {
		fprintf(stderr, "pcmkd-stonith: pacemaker's fencer did not fence node %s "
		    "(%" PRIu64 "): %s (%d)%s\n", argv[1], id, strerror(rc < 0 ? -rc : rc), rc,
		    rc == -ELIBACC ? ": libstonithd cannot be loaded (is pacemaker installed?)" :
		    "");
		return 1;
	}
	last = stonith_api_time_helper((uint32_t)id, false);
	if (last <= 0 || (uint64_t)last < left) {
		fprintf(stderr, "pcmkd-stonith: the fencer said node %s (%" PRIu64 ") is fenced, "
		    "but its history's last fence of it is at %lld, before it left at %" PRIu64
		    "\n", argv[1], id, (long long)last, left);
		return 1;
	}
	printf("pcmkd-stonith: node %s (%" PRIu64 ") fenced at %lld\n", argv[1], id,
	    (long long)last);
	return 0;
}
