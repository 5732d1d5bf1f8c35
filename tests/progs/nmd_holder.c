/*
 * nmd_holder: a client of nmd.sock that holds region references and node
 * pins through its connection, as fsd, hbd and netd do, driven one
 * command a line on standard input, so that a test can restart nmd under
 * it and see what its holds become.
 *
 *   nmd_holder RUNDIR
 *     acquire UUID BLOCK_BYTES START_BLOCK BLOCKS DEV
 *     release UUID
 *     pin NODE heartbeat|link
 *     reconnect                (a new connection; the old one is closed)
 *
 * Each command prints "ok" or "error: WHY" on a line of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"

#define CALL_TIMEOUT_MS	5000

static int
dial(const char *rundir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/nmd.sock", rundir);
	if ((fd = ipc_sync_connect(path)) == -1)
		printf("error: %s: %s\n", path, strerror(errno));
	return fd;
}

static void
call(int fd, Envelope *req)
{
	Envelope *rep = NULL;

	if (fd == -1)
		printf("error: not connected\n");
	else if (ipc_sync_call(fd, req, &rep, CALL_TIMEOUT_MS) == -1)
		printf("error: %s\n", strerror(errno));
	else if (rep->status != 0)
		printf("error: %s\n", rep->error);
	else
		printf("ok\n");
	if (rep != NULL)
		envelope__free_unpacked(rep, NULL);
}

int
main(int argc, char **argv)
{
	char line[8192], a[5][4096];
	int fd, n;

	if (argc != 2) {
		fprintf(stderr, "usage: nmd_holder RUNDIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = dial(argv[1]);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		Envelope req = ENVELOPE__INIT;
		Nmd__RegionAcquire ra = NMD__REGION_ACQUIRE__INIT;
		Nmd__ItemPath item = NMD__ITEM_PATH__INIT;
		Nmd__Pin pin = NMD__PIN__INIT;

		n = sscanf(line, "%4095s %4095s %4095s %4095s %4095s", a[0], a[1], a[2], a[3], a[4]);
		if (n == 1 && strcmp(a[0], "reconnect") == 0) {
			if (fd != -1)
				close(fd);
			if ((fd = dial(argv[1])) != -1)
				printf("ok\n");
		} else if (sscanf(line, "acquire %4095s %4095s %4095s %4095s %4095s",
		    a[0], a[1], a[2], a[3], a[4]) == 5) {
			ra.name = a[0];
			ra.block_bytes = (uint32_t)strtoul(a[1], NULL, 10);
			ra.start_block = strtoull(a[2], NULL, 10);
			ra.blocks = (uint32_t)strtoul(a[3], NULL, 10);
			ra.dev = a[4];
			req.type = MSG_TYPE__MSG_NMD_REGION_ACQUIRE;
			req.payload_case = ENVELOPE__PAYLOAD_REGION_ACQUIRE;
			req.region_acquire = &ra;
			call(fd, &req);
		} else if (n == 2 && strcmp(a[0], "release") == 0) {
			item.path = a[1];
			req.type = MSG_TYPE__MSG_NMD_REGION_RELEASE;
			req.payload_case = ENVELOPE__PAYLOAD_ITEM;
			req.item = &item;
			call(fd, &req);
		} else if (n == 3 && strcmp(a[0], "pin") == 0) {
			pin.node = a[1];
			pin.kind = a[2];
			req.type = MSG_TYPE__MSG_NMD_PIN;
			req.payload_case = ENVELOPE__PAYLOAD_PIN;
			req.pin = &pin;
			call(fd, &req);
		} else {
			printf("error: unknown command\n");
		}
	}
	return 0;
}
