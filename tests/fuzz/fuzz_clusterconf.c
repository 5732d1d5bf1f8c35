/*
 * /etc/ocfs2/cluster.conf and /etc/default/o2cb (common/clusterconf.c):
 * the input is parsed as each, then what a daemon does with a config it
 * accepted (the local node, lookups by name and number).
 */
#include <sys/mman.h>

#include "fuzz.h"
#include "clusterconf.h"

static int tunables_fd = -1;
static char tunables_path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* the tunables parser reads a file: this one, rewritten for each input */
	if ((tunables_fd = memfd_create("o2cb", 0)) == -1) {
		perror("memfd_create");
		exit(1);
	}
	snprintf(tunables_path, sizeof(tunables_path), "/proc/self/fd/%d", tunables_fd);
	return 0;
}

static void
ignore_warning(const char *msg, void *arg)
{
	(void)msg;
	(void)arg;
}

static void
parse_conf(const uint8_t *data, size_t size, const char *cluster)
{
	static struct cluster_conf cc;
	const struct cc_node *n;
	char err[CC_ERR_MAX];
	size_t i;

	if (cc_parse_buf("cluster.conf", (const char *)data, size, cluster, &cc,
	    err, sizeof(err), ignore_warning, NULL) == -1)
		return;
	cc_local_node(&cc, "node1.example.com");
	for (i = 0; i < cc.nnodes; i++) {
		n = &cc.nodes[i];
		if (cc_node_by_name(&cc, n->name) == NULL || cc_node_by_num(&cc, n->num) == NULL) {
			fprintf(stderr, "node %s (%u) accepted but not found\n", n->name, n->num);
			abort();
		}
	}
}

static void
parse_tunables(const uint8_t *data, size_t size)
{
	struct cc_tunables t;
	char err[CC_ERR_MAX], *boot = NULL;

	if (ftruncate(tunables_fd, 0) == -1 || pwrite(tunables_fd, data, size, 0) != (ssize_t)size) {
		perror("tunables file");
		exit(1);
	}
	cc_tunables_default(&t);
	if (cc_parse_tunables_file(tunables_path, &t, &boot, err, sizeof(err)) == 0)
		cc_fence_method_name(t.fence_method);
	free(boot);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_conf(data, size, NULL);
	parse_conf(data, size, "ocfs2");
	parse_tunables(data, size);
	return 0;
}
