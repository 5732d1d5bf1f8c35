/*
 * dlmd's socket (dlmd/api.c): joins and leaves, lock and unlock
 * requests, status and dumps, from clients, in a domain the other nodes
 * are in too (dlmd_state.h). The input is a series of Envelopes (fuzz.h).
 */
#include "fuzz.h"
#include "dlmd_state.h"

static struct fuzz_client fc;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char sock[256];

	(void)argc;
	(void)argv;
	dlmd_state_init();
	dlmd_domain();
	api_start(&dd);
	snprintf(sock, sizeof(sock), "%s/dlmd.sock", dd.rundir);
	fuzz_client_init(&fc, dd.base, sock);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dlmd_domain();
	fuzz_client_send_all(&fc, data, size);
	return 0;
}
