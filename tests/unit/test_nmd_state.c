/*
 * nmd's state file format: a full state survives format and parse
 * unchanged (names that need escaping included); a file cut anywhere, or
 * with any byte changed, is refused whole, as are an unknown version,
 * unknown records and values out of range under a valid checksum.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "nmd/nmd.h"

static char *global_regions[] = { "00112233445566778899AABBCCDDEEFF", NULL };

static struct nm_state_node nodes[] = {
	{ .name = "node1", .num_set = 1, .num = 1, .addr_set = 1, .port_set = 1,
	  .port = 7777, .local = 1 },
	{ .name = "we ird%name", .num_set = 0, .addr_set = 0, .port_set = 1, .port = 1 },
	{ .name = "-", .num_set = 1, .num = 254, .addr_set = 1, .port_set = 0 },
};

static struct nm_state_region regions[] = {
	{ .name = "0123456789ABCDEF0123456789ABCDEF", .block_bytes = 512,
	  .start_block = 0x123456789ULL, .blocks = 255, .dev = "/dev/disk/by-id/a b%c",
	  .pid = 4242, .persistent_refs = 2 },
	{ .name = "FEDCBA9876543210FEDCBA9876543210", .block_bytes = 4096 },
};

static struct nm_state_hold holds[] = {
	{ .kind = NM_HOLD_REGION, .name = "0123456789ABCDEF0123456789ABCDEF", .pid = 77,
	  .starttime = 18446744073709551615ULL },
	{ .kind = NM_HOLD_PIN_HEARTBEAT, .name = "node1", .pid = 88, .starttime = 0 },
	{ .kind = NM_HOLD_PIN_LINK, .name = "-", .pid = 2147483647, .starttime = 5 },
};

static struct nm_state
sample(void)
{
	struct nm_state st = {
		.config_fingerprint = 0xfedcba9876543210ULL,
		.has_cluster = 1,
		.cluster = "alpha",
		.idle_timeout_ms = 30000,
		.keepalive_delay_ms = 2000,
		.reconnect_delay_ms = 4294967295u,
		.fence_method = CC_FENCE_PANIC,
		.dead_threshold = 31,
		.hb_mode = CC_HB_GLOBAL,
		.hb_interval_ms = 200,
		.stack = CC_STACK_PCMK,
		.global_regions = global_regions,
		.nglobal_regions = 1,
		.nodes = nodes,
		.nnodes = 3,
		.regions = regions,
		.nregions = 2,
		.holds = holds,
		.nholds = 3,
	};

	inet_pton(AF_INET, "127.0.0.2", &nodes[0].addr);
	inet_pton(AF_INET, "255.255.255.255", &nodes[2].addr);
	return st;
}

static void
assert_same(const struct nm_state *a, const struct nm_state *b)
{
	size_t i;

	cr_assert_eq(a->config_fingerprint, b->config_fingerprint);
	cr_assert_eq(a->has_cluster, b->has_cluster);
	cr_assert_str_eq(a->cluster, b->cluster);
	cr_assert_eq(a->idle_timeout_ms, b->idle_timeout_ms);
	cr_assert_eq(a->keepalive_delay_ms, b->keepalive_delay_ms);
	cr_assert_eq(a->reconnect_delay_ms, b->reconnect_delay_ms);
	cr_assert_eq(a->fence_method, b->fence_method);
	cr_assert_eq(a->dead_threshold, b->dead_threshold);
	cr_assert_eq(a->hb_mode, b->hb_mode);
	cr_assert_eq(a->hb_interval_ms, b->hb_interval_ms);
	cr_assert_eq(a->stack, b->stack);
	cr_assert_eq(a->nglobal_regions, b->nglobal_regions);
	for (i = 0; i < a->nglobal_regions; i++)
		cr_assert_str_eq(a->global_regions[i], b->global_regions[i]);
	cr_assert_eq(a->nnodes, b->nnodes);
	for (i = 0; i < a->nnodes; i++) {
		const struct nm_state_node *x = &a->nodes[i], *y = &b->nodes[i];

		cr_assert_str_eq(x->name, y->name);
		cr_assert_eq(x->num_set, y->num_set);
		cr_assert_eq(x->addr_set, y->addr_set);
		cr_assert_eq(x->port_set, y->port_set);
		cr_assert_eq(x->local, y->local);
		if (x->num_set)
			cr_assert_eq(x->num, y->num);
		if (x->addr_set)
			cr_assert_eq(x->addr, y->addr);
		if (x->port_set)
			cr_assert_eq(x->port, y->port);
	}
	cr_assert_eq(a->nregions, b->nregions);
	for (i = 0; i < a->nregions; i++) {
		const struct nm_state_region *x = &a->regions[i], *y = &b->regions[i];

		cr_assert_str_eq(x->name, y->name);
		cr_assert_eq(x->block_bytes, y->block_bytes);
		cr_assert_eq(x->start_block, y->start_block);
		cr_assert_eq(x->blocks, y->blocks);
		cr_assert_eq(x->pid, y->pid);
		cr_assert_eq(x->persistent_refs, y->persistent_refs);
		cr_assert_eq(x->dev == NULL, y->dev == NULL);
		if (x->dev != NULL)
			cr_assert_str_eq(x->dev, y->dev);
	}
	cr_assert_eq(a->nholds, b->nholds);
	for (i = 0; i < a->nholds; i++) {
		cr_assert_eq(a->holds[i].kind, b->holds[i].kind);
		cr_assert_str_eq(a->holds[i].name, b->holds[i].name);
		cr_assert_eq(a->holds[i].pid, b->holds[i].pid);
		cr_assert_eq(a->holds[i].starttime, b->holds[i].starttime);
	}
}

static int
parse(const char *buf, size_t len, struct nm_state *out, char *err, size_t errlen)
{
	return nm_state_parse(buf, len, out, err, errlen);
}

/* body + a valid trailer: for inputs well-formed but for their content. */
static char *
with_trailer(const char *body, size_t *len)
{
	size_t n = strlen(body);
	char *buf = malloc(n + 32);

	memcpy(buf, body, n);
	*len = n + (size_t)snprintf(buf + n, 32, "end %08x\n", crc32_le(0, body, n));
	return buf;
}

static void
assert_refused(const char *body, const char *why)
{
	struct nm_state out;
	char err[256], *buf;
	size_t len;

	buf = with_trailer(body, &len);
	cr_assert_eq(parse(buf, len, &out, err, sizeof(err)), -1, "accepted: %s", body);
	cr_assert(strstr(err, why) != NULL, "\"%s\" does not say \"%s\"", err, why);
	free(buf);
}

Test(nmd_state, round_trip)
{
	struct nm_state st = sample(), out;
	char err[256], *buf;
	size_t len;

	buf = nm_state_format(&st, &len);
	cr_assert_eq(strlen(buf), len);
	cr_assert(strncmp(buf, "ocfs2-nmd-state 1\n", 18) == 0);
	cr_assert(strstr(buf, "node we%20ird%25name - - 1 0\n") != NULL, "%s", buf);
	cr_assert(strstr(buf, "node %2D 254 255.255.255.255 - 0\n") != NULL, "%s", buf);
	cr_assert_eq(parse(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	assert_same(&st, &out);
	nm_state_free(&out);
	free(buf);
}

Test(nmd_state, round_trip_without_cluster)
{
	struct nm_state st = { .config_fingerprint = 1 }, out;
	char err[256], *buf;
	size_t len;

	buf = nm_state_format(&st, &len);
	cr_assert_eq(parse(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	assert_same(&st, &out);
	free(buf);
}

/* A write cut short anywhere leaves a file that is refused, never half taken. */
Test(nmd_state, every_truncation_is_refused)
{
	struct nm_state st = sample(), out;
	char err[256], *buf;
	size_t len, cut;

	buf = nm_state_format(&st, &len);
	for (cut = 0; cut < len; cut++)
		cr_assert_eq(parse(buf, cut, &out, err, sizeof(err)), -1,
		    "a file cut at %zu of %zu bytes was accepted", cut, len);
	free(buf);
}

Test(nmd_state, every_changed_byte_is_refused)
{
	struct nm_state st = sample(), out;
	char err[256], *buf;
	size_t len, i;

	buf = nm_state_format(&st, &len);
	for (i = 0; i < len; i++) {
		buf[i] ^= 0x04;
		cr_assert_eq(parse(buf, len, &out, err, sizeof(err)), -1,
		    "byte %zu changed was accepted", i);
		buf[i] ^= 0x04;
	}
	cr_assert_eq(parse(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	nm_state_free(&out);
	free(buf);
}

Test(nmd_state, checksum_and_trailer)
{
	struct nm_state out;
	char err[256];
	const char *nul = "ocfs2-nmd-state 1\nconfig 0000000000000000\n\0end 00000000\n";

	cr_assert_eq(parse("", 0, &out, err, sizeof(err)), -1);
	cr_assert_str_eq(err, "empty");
	cr_assert_eq(parse("ocfs2-nmd-state 1\nconfig 0000000000000000\nend 00000000\n", 55,
	    &out, err, sizeof(err)), -1);
	cr_assert(strstr(err, "checksum") != NULL, "%s", err);
	cr_assert_eq(parse("ocfs2-nmd-state 1\n", 18, &out, err, sizeof(err)), -1);
	cr_assert(strstr(err, "truncated") != NULL, "%s", err);
	cr_assert_eq(parse(nul, 56, &out, err, sizeof(err)), -1);
}

Test(nmd_state, refused_contents)
{
	assert_refused("ocfs2-nmd-state 2\nconfig 0000000000000000\n", "version 2");
	assert_refused("something else 1\n", "not an nmd state file");
	assert_refused("ocfs2-nmd-state 1\n", "no config line");
	assert_refused("ocfs2-nmd-state 1\nconfig 00\n", "bad fingerprint");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\nfrobnicate 1\n",
	    "unknown record");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\nnode n1 1 127.0.0.2 7777 0\n",
	    "before the cluster");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "cluster a 1 2 3 kill\ncluster b 1 2 3 kill\n", "a second cluster");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "cluster a 1 2 3 zap\n", "fence method");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "cluster a 4294967296 2 3 kill\n", "bad timeout");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n1 255 127.0.0.2 7777 0\n", "bad node number");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n1 1 127.0.0.256 7777 0\n", "bad address");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n1 1 127.0.0.2 65536 0\n", "bad port");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n1 1 127.0.0.2 7777\n", "4 fields, not 5");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n%4 1 127.0.0.2 7777 0\n", "bad field 2");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node n%00 1 127.0.0.2 7777 0\n", "bad field 2");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "node  1 127.0.0.2 7777 0\n", "bad field 2");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "region R 512 3 255 0 0 dev\n", "bad device");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "region R 512 3 255 -1 0 -\n", "bad region value");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "hold region R 0 1\n", "bad holder");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "hold lease R 1 1\n", "bad hold kind");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "global-region notauuid\n", "bad region UUID");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\n"
	    "stack pcmk\n", "stack before the cluster");
	assert_refused("ocfs2-nmd-state 1\nconfig 0000000000000000\ncluster a 1 2 3 kill\n"
	    "stack cman\n", "bad stack \"cman\"");
}
