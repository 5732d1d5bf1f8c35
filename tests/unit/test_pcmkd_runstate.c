/*
 * What a restarted pcmkd knows again (pcmkd/runstate.c): the nodes up,
 * with their generation, and the pending fences come back as they were;
 * a line of a node not in cluster.conf, or of another kind, is ignored;
 * with fencing = none the pending fences are dropped; a clean leave drops
 * the file, and a pcmkd started after it knows nothing.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pcmkd/pcmkd.h"

static char dir[64];
static char path[96];

static void
pcmkd_init(struct pcmkd *p, enum cc_pcmk_fencing fencing)
{
	memset(p, 0, sizeof(*p));
	p->rundir = dir;
	p->fencing = fencing;
	p->node_known[1] = p->node_known[2] = p->node_known[3] = 1;
}

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pcmkd-runstate.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pcmkd.state", dir);
}

static void
teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(pcmkd_runstate, .init = setup, .fini = teardown);

Test(pcmkd_runstate, up_nodes_and_pending_fences_come_back)
{
	static struct pcmkd before, after;

	pcmkd_init(&before, CC_PCMK_FENCING_AGENT);
	before.m.up[1] = before.m.up[2] = 1;
	before.m.gen[1] = 5;
	before.m.gen[2] = 9;
	fence_begin(&before.fences, 3, 1234, 0);
	runstate_save(&before);

	pcmkd_init(&after, CC_PCMK_FENCING_AGENT);
	runstate_load(&after);
	cr_assert(after.m.up[1] && after.m.up[2] && !after.m.up[3]);
	cr_assert_eq(after.m.gen[1], 5);
	cr_assert_eq(after.m.gen[2], 9);
	cr_assert(fence_pending(&after.fences, 3));
	cr_assert_eq(after.fences.n[3].left_at, 1234);
	cr_assert(!fence_pending(&after.fences, 1));
}

Test(pcmkd_runstate, strangers_and_other_lines_ignored)
{
	static struct pcmkd p;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f, "up 7 3\nup 2 4\nbogus 1 1\nfence 9 100\nup\n");
	fclose(f);
	pcmkd_init(&p, CC_PCMK_FENCING_AGENT);
	runstate_load(&p);
	cr_assert(p.m.up[2] && p.m.gen[2] == 4);
	cr_assert(!p.m.up[1] && !p.m.up[7], "only nodes of cluster.conf");
	cr_assert(!fence_pending(&p.fences, 9));
}

Test(pcmkd_runstate, fencing_none_drops_pending_fences)
{
	static struct pcmkd before, after;

	pcmkd_init(&before, CC_PCMK_FENCING_AGENT);
	before.m.up[1] = 1;
	fence_begin(&before.fences, 3, 1234, 0);
	runstate_save(&before);
	pcmkd_init(&after, CC_PCMK_FENCING_NONE);
	runstate_load(&after);
	cr_assert(after.m.up[1]);
	cr_assert(!fence_pending(&after.fences, 3));
}

Test(pcmkd_runstate, a_clean_leave_forgets)
{
	static struct pcmkd before, after;

	pcmkd_init(&before, CC_PCMK_FENCING_AGENT);
	before.m.up[2] = 1;
	runstate_save(&before);
	runstate_drop(&before);
	cr_assert_neq(access(path, F_OK), 0);
	pcmkd_init(&after, CC_PCMK_FENCING_AGENT);
	runstate_load(&after);
	cr_assert(!after.m.up[2]);
}
