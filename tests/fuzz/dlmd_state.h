/*
 * A dlmd for the dlmd harnesses: node 1 of three live nodes, no netd (a
 * message to another node fails with ENOTCONN, a turn of the loop later)
 * and no hbd, and one lock domain joined by all three with node 1 as
 * its directory, made as a successful join leaves it (dlmd/domain.c),
 * in which node 1 masters resource FUZZ_RES (seeds.c names it too).
 */
#include "crc32.h"
#include "dlmd/dlmd.h"

#define FUZZ_DOMAIN	"fuzz"
#define FUZZ_RES	"Mfuzz-resource"

static struct dlmd dd;

static void
dlmd_state_init(void)
{
	dd.rundir = fuzz_rundir();
	dd.node_name = "node1";
	dd.local_node = 1;
	dd.live[1] = dd.live[2] = dd.live[3] = 1;
	dd.cookie_seq = 1ull << 24;
	TAILQ_INIT(&dd.domains);
	if ((dd.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	ast_hooks_init();
	lock_handlers_init();
	remote_handlers_init();
	domain_handlers_init();
	migrate_handlers_init();
	reco_handlers_init();
	lvb_handlers_init();
}

/* Node 1 masters FUZZ_RES again, if it was purged or handed over. */
static void
dlmd_mastered(struct dlm_domain *d)
{
	struct dlm_res *r = res_get(d, (const uint8_t *)FUZZ_RES, strlen(FUZZ_RES));

	if (r->master == DLM_NODE_NONE) {
		r->master = dd.local_node;
		dir_set(d, r->name, r->namelen, dd.local_node);
	}
}

/* The joined domain; made again if the messages so far made it go. */
static struct dlm_domain *
dlmd_domain(void)
{
	struct dlm_domain *d;
	size_t b;

	if ((d = domain_find(&dd, FUZZ_DOMAIN)) != NULL) {
		dlmd_mastered(d);
		return d;
	}
	d = xcalloc(1, sizeof(*d));
	d->dlmd = &dd;
	snprintf(d->name, sizeof(d->name), "%s", FUZZ_DOMAIN);
	d->key = crc32_le(0, FUZZ_DOMAIN, strlen(FUZZ_DOMAIN));
	d->joining = DLM_NODE_NONE;
	d->reco_master = DLM_NODE_NONE;
	d->directory = 1;
	d->members[1] = d->members[2] = d->members[3] = 1;
	LIST_INIT(&d->clients);
	LIST_INIT(&d->leave_replies);
	for (b = 0; b < DLM_HASH_BUCKETS; b++) {
		LIST_INIT(&d->res_hash[b]);
		LIST_INIT(&d->lock_hash[b]);
		LIST_INIT(&d->dir_hash[b]);
	}
	TAILQ_INIT(&d->asts);
	TAILQ_INIT(&d->lookups);
	TAILQ_INSERT_TAIL(&dd.domains, d, entry);
	d->state = DS_JOINED;
	domain_purge_start(d);
	dlmd_mastered(d);
	return d;
}
