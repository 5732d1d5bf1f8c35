/*
 * nmd's socket (nmd/api.c): every request of its dispatch table, on a
 * tree loaded from a three-node cluster.conf, as o2ctl and the other
 * daemons send them. The input is a series of Envelopes (fuzz.h).
 */
#include "fuzz.h"
#include "nmd/nmd.h"

static struct nmd nm;
static struct fuzz_client fc;

static const char conf[] =
	"cluster:\n\tname = lc\n\tnode_count = 3\n\theartbeat_mode = global\n\n"
	"node:\n\tname = node1\n\tcluster = lc\n\tnumber = 1\n\tip_address = 127.0.0.2\n\tip_port = 7790\n\n"
	"node:\n\tname = node2\n\tcluster = lc\n\tnumber = 2\n\tip_address = 127.0.0.3\n\tip_port = 7790\n\n"
	"node:\n\tname = node3\n\tcluster = lc\n\tnumber = 3\n\tip_address = 127.0.0.4\n\tip_port = 7790\n\n"
	"heartbeat:\n\tregion = 0123456789ABCDEF0123456789ABCDEF\n\tcluster = lc\n";

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char conf_path[256], tunables_path[256], sock[256];
	char err[CC_ERR_MAX], **ok, **bad;
	size_t nok, nbad;

	(void)argc;
	(void)argv;
	nm.rundir = fuzz_rundir();
	snprintf(conf_path, sizeof(conf_path), "%s/cluster.conf", nm.rundir);
	snprintf(tunables_path, sizeof(tunables_path), "%s/o2cb", nm.rundir);
	fuzz_write_file(conf_path, conf);
	fuzz_write_file(tunables_path, "O2CB_BOOTCLUSTER=lc\n");
	nm.conf_path = conf_path;
	nm.tunables_path = tunables_path;
	nm.node_name = "node1";
	if ((nm.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	nm_tree_init(&nm);
	if (nm_load(&nm, 1, &ok, &nok, &bad, &nbad, err, sizeof(err)) == -1)
		fatalx("%s", err);
	nm_lines_free(ok, nok);
	nm_lines_free(bad, nbad);
	nm_api_start(&nm);
	snprintf(sock, sizeof(sock), "%s/nmd.sock", nm.rundir);
	fuzz_client_init(&fc, nm.base, sock);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_client_send_all(&fc, data, size);
	return 0;
}
