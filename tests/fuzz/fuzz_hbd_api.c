/*
 * hbd's socket (hbd/api.c): subscriptions and their acks, disk writers,
 * guards, status, fences and their clearing. The connection comes from a
 * stand-in process (fuzz.h): a fence kills the registered writers, and
 * that must be the stand-in. hbd has no nmd here, so its fence method is
 * its default, kill, never a reboot. The input is a series of Envelopes.
 */
#include "fuzz.h"
#include "hbd/hbd.h"

static struct hbd h;
static struct fuzz_client fc;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char sock[256];

	(void)argc;
	(void)argv;
	h.rundir = fuzz_rundir();
	h.node_name = "node1";
	h.local_node = CC_INVALID_NODE;
	h.interval_ms = 2000;
	h.dead_threshold = 31;
	h.fence_method = CC_FENCE_KILL;
	TAILQ_INIT(&h.regions);
	LIST_INIT(&h.writers);
	if ((h.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	fence_restore(&h);
	api_start(&h);
	snprintf(sock, sizeof(sock), "%s/hbd.sock", h.rundir);
	fuzz_client_init_standin(&fc, h.base, sock);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_client_send_all(&fc, data, size);
	if (h.fence_method != CC_FENCE_KILL)
		abort();	/* nothing here may turn a fence into a reboot */
	return 0;
}
