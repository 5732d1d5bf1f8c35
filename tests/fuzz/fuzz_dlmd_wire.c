/*
 * dlmd's node-to-node messages (dlmd/dlmwire.c and the handlers of
 * domain.c, lock.c, remote.c, migrate.c, recovery.c, lvb.c): each as
 * netd hands it over, a netd type and the sending node around a
 * dlmwire.Msg, in a domain the three nodes have joined (dlmd_state.h).
 * The input is a series of messages, each a 1-byte type (500 + n), a
 * 1-byte sender and a 2-byte length before the Msg.
 */
#include "fuzz.h"
#include "dlmd_state.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dlmd_state_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	const uint8_t *msg;
	uint8_t *out;
	uint32_t type;
	unsigned from;
	size_t len;
	int status, i;

	while (in.n >= 4) {
		type = WIRE_LOOKUP + fuzz_u8(&in) % 32;
		from = fuzz_u8(&in) % 5;
		msg = fuzz_next_msg(&in, &len);
		wire_handle(dlmd_domain(), type, from, msg, len, &out, &status);
		free(out);
		/* what the handlers deferred: ASTs, sends through netd and their replies */
		for (i = 0; i < 4; i++)
			event_base_loop(dd.base, EVLOOP_NONBLOCK);
	}
	return 0;
}
