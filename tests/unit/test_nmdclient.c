/*
 * common/nmdclient.c against a stand-in nmd in the same event loop: a
 * server on <dir>/nmd.sock that answers GET_CONFIG with a configuration
 * naming how many changes it has published ("gen<N>"), and counts the
 * fetches. Every wait has a timeout.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "nmdclient.h"
#include "util.h"

#define TIMEOUT_MS	5000
#define QUIET_MS	300
#define RETRY_MS	50

static struct {
	char			 dir[64];
	struct event_base	*base;
	struct ipc_server	*srv;
	struct event		*tick;
	unsigned		 generation;	/* changes published */
	unsigned		 fetches;	/* GET_CONFIG served */
} nmd;

static struct {
	unsigned		 configs, ups, downs;
	char			 last[64];
} seen;

static void
h_get_config(struct ipc_conn *c, const Envelope *req)
{
	Envelope rep = ENVELOPE__INIT;
	Nmd__Config cfg = NMD__CONFIG__INIT;
	char name[32];

	snprintf(name, sizeof(name), "gen%u", nmd.generation);
	cfg.cluster = name;
	rep.payload_case = ENVELOPE__PAYLOAD_CONFIG;
	rep.config = &cfg;
	nmd.fetches++;
	ipc_reply(c, req, &rep);
}

static const struct ipc_handler nmd_table[] = {
	{ MSG_TYPE__MSG_NMD_GET_CONFIG, ENVELOPE__PAYLOAD__NOT_SET, h_get_config },
};

static void
publish_change(int with_payload)
{
	Envelope ev = ENVELOPE__INIT;
	Nmd__ConfigChange ch = NMD__CONFIG_CHANGE__INIT;

	nmd.generation++;
	ch.op = NMD__CHANGE_OP__CHANGE_ATTR;
	ch.path = "cluster/c/idle_timeout_ms";
	ch.value = "1";
	ev.type = MSG_TYPE__MSG_NMD_CONFIG_CHANGED;
	if (with_payload) {
		ev.payload_case = ENVELOPE__PAYLOAD_CHANGE;
		ev.change = &ch;
	}
	ipc_publish(nmd.srv, 0, &ev);
}

static void
on_config(const Nmd__Config *cfg, void *arg)
{
	(void)arg;
	seen.configs++;
	snprintf(seen.last, sizeof(seen.last), "%s", cfg->cluster);
}

static void
on_up(struct nmd_client *cl, void *arg)
{
	(void)cl;
	(void)arg;
	seen.ups++;
}

static void
on_down(void *arg)
{
	(void)arg;
	seen.downs++;
}

static const struct nmd_client_ops ops = {
	.config = on_config,
	.up = on_up,
	.down = on_down,
};

static void
tick(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
}

#define RUN_UNTIL(cond) do {							\
	uint64_t end_ = now_ms() + TIMEOUT_MS;				\
	while (!(cond)) {							\
		cr_assert_lt(now_ms(), end_, "timed out waiting for " #cond);	\
		event_base_loop(nmd.base, EVLOOP_ONCE);				\
	}									\
} while (0)

static void
run_quiet(void)
{
	uint64_t end = now_ms() + QUIET_MS;

	while (now_ms() < end)
		event_base_loop(nmd.base, EVLOOP_ONCE);
}

static struct nmd_client *
setup(void)
{
	struct timeval ten_ms = { 0, 10000 };
	char *path;

	memset(&nmd, 0, sizeof(nmd));
	memset(&seen, 0, sizeof(seen));
	log_init("test_nmdclient", 0);
	snprintf(nmd.dir, sizeof(nmd.dir), "/tmp/test_nmdclient.XXXXXX");
	cr_assert_not_null(mkdtemp(nmd.dir));
	nmd.base = event_base_new();
	cr_assert_not_null(nmd.base);
	nmd.tick = event_new(nmd.base, -1, EV_PERSIST, tick, NULL);
	event_add(nmd.tick, &ten_ms);
	xasprintf(&path, "%s/nmd.sock", nmd.dir);
	nmd.srv = ipc_server_listen(nmd.base, path, "nmd", nmd_table,
	    nitems(nmd_table), NULL);
	cr_assert_not_null(nmd.srv);
	free(path);
	return nmd_client_start(nmd.base, nmd.dir, RETRY_MS, &ops, NULL);
}

static void
teardown(void)
{
	char *path;

	xasprintf(&path, "%s/nmd.sock", nmd.dir);
	unlink(path);
	rmdir(nmd.dir);
	free(path);
}

Test(nmdclient, first_configuration_on_connection)
{
	struct nmd_client *cl = setup();

	RUN_UNTIL(seen.configs == 1);
	cr_assert(nmd_client_connected(cl));
	cr_assert_eq(seen.ups, 1);
	cr_assert_str_eq(seen.last, "gen0");
	teardown();
}

/* Ten changes in a row cost two fetches, the last seeing all of them. */
Test(nmdclient, changes_coalesce_into_one_more_fetch)
{
	int i;

	setup();
	RUN_UNTIL(seen.configs == 1);
	for (i = 0; i < 10; i++)
		publish_change(1);
	RUN_UNTIL(strcmp(seen.last, "gen10") == 0);
	run_quiet();
	cr_assert_str_eq(seen.last, "gen10");
	cr_assert_leq(nmd.fetches, 3, "%u fetches for 10 changes", nmd.fetches);
	cr_assert_eq(seen.configs, nmd.fetches);
	teardown();
}

/* nmd's event without its payload: the client drops the connection,
 * redials, and starts over with a whole configuration. */
Test(nmdclient, malformed_event_reconnects)
{
	setup();
	RUN_UNTIL(seen.configs == 1);
	publish_change(0);
	RUN_UNTIL(seen.downs == 1 && seen.ups == 2 && seen.configs == 2);
	cr_assert_str_eq(seen.last, "gen1");
	teardown();
}

/* nmd restarts: the client comes back by itself and fetches again. */
Test(nmdclient, reconnects_to_a_restarted_nmd)
{
	struct nmd_client *cl = setup();
	char *path;

	RUN_UNTIL(seen.configs == 1);
	ipc_server_free(nmd.srv);
	RUN_UNTIL(seen.downs == 1);
	cr_assert(!nmd_client_connected(cl));
	cr_assert_eq(nmd_client_pin(cl, "n1", "link", 1), -1);
	nmd.generation = 7;
	xasprintf(&path, "%s/nmd.sock", nmd.dir);
	unlink(path);
	nmd.srv = ipc_server_listen(nmd.base, path, "nmd", nmd_table,
	    nitems(nmd_table), NULL);
	cr_assert_not_null(nmd.srv);
	free(path);
	RUN_UNTIL(seen.ups == 2 && seen.configs == 2);
	cr_assert(nmd_client_connected(cl));
	cr_assert_str_eq(seen.last, "gen7");
	teardown();
}
