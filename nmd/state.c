/*
 * The state file's format: what a restarted nmd needs to serve the tree
 * its clients saw. Version 1, one record a line, fields separated by one
 * space; strings are %XX-escaped (bytes up to the space, '%' and from
 * 0x7f up), "-" is an unset value. The last line is "end" and the CRC32
 * of every byte before it: a torn or altered file is refused whole.
 *
 *   ocfs2-nmd-state 1
 *   config FINGERPRINT                  (hex: cluster.conf + tunables last loaded)
 *   cluster NAME IDLE KEEPALIVE RECONNECT FENCE
 *   heartbeat DEAD_THRESHOLD MODE INTERVAL_MS
 *   global-region UUID
 *   node NAME NUM|- ADDRESS|- PORT|- LOCAL
 *   region NAME BLOCK_BYTES START_BLOCK BLOCKS PID PERSISTENT_REFS DEV|-
 *   hold region|heartbeat|link NAME PID STARTTIME
 *   end CRC32
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "log.h"
#include "nmd.h"
#include "util.h"

#define STATE_MAGIC	"ocfs2-nmd-state"
#define MAX_FIELDS	9
#define MAX_FIELD	4096	/* a device path, unescaped */

static int
needs_escape(unsigned char ch)
{
	return ch <= ' ' || ch == '%' || ch >= 0x7f;
}

static void
put_str(FILE *f, const char *s)
{
	const unsigned char *p;

	/* No item name, device or UUID is empty: "" is unset, as NULL. */
	if (s == NULL || s[0] == '\0') {
		fputc('-', f);
		return;
	}
	/* A name "-" must not read back as unset. */
	if (strcmp(s, "-") == 0) {
		fputs("%2D", f);
		return;
	}
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (needs_escape(*p))
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
}

static void
put_opt_uint(FILE *f, int set, unsigned v)
{
	if (set)
		fprintf(f, " %u", v);
	else
		fputs(" -", f);
}

char *
nm_state_format(const struct nm_state *st, size_t *len)
{
	char *buf = NULL, addr[INET_ADDRSTRLEN];
	size_t n = 0, i;
	FILE *f;

	if ((f = open_memstream(&buf, &n)) == NULL)
		fatal("open_memstream");
	fprintf(f, "%s %d\n", STATE_MAGIC, NM_STATE_VERSION);
	fprintf(f, "config %016" PRIx64 "\n", st->config_fingerprint);
	if (st->has_cluster) {
		fputs("cluster ", f);
		put_str(f, st->cluster);
		fprintf(f, " %u %u %u %s\n", st->idle_timeout_ms, st->keepalive_delay_ms,
		    st->reconnect_delay_ms, cc_fence_method_name(st->fence_method));
		fprintf(f, "heartbeat %u %s %u\n", st->dead_threshold,
		    st->hb_mode == CC_HB_GLOBAL ? "global" : "local", st->hb_interval_ms);
		fprintf(f, "stack %s\n", cc_stack_name(st->stack));
	}
	for (i = 0; i < st->nglobal_regions; i++) {
		fputs("global-region ", f);
		put_str(f, st->global_regions[i]);
		fputc('\n', f);
	}
	for (i = 0; i < st->nnodes; i++) {
		const struct nm_state_node *nd = &st->nodes[i];
		struct in_addr a = { nd->addr };

		fputs("node ", f);
		put_str(f, nd->name);
		put_opt_uint(f, nd->num_set, nd->num);
		if (nd->addr_set && inet_ntop(AF_INET, &a, addr, sizeof(addr)) != NULL)
			fprintf(f, " %s", addr);
		else
			fputs(" -", f);
		put_opt_uint(f, nd->port_set, nd->port);
		fprintf(f, " %d\n", nd->local ? 1 : 0);
	}
	for (i = 0; i < st->nregions; i++) {
		const struct nm_state_region *r = &st->regions[i];

		fputs("region ", f);
		put_str(f, r->name);
		fprintf(f, " %u %" PRIu64 " %u %d %u ", r->block_bytes, r->start_block,
		    r->blocks, r->pid, r->persistent_refs);
		put_str(f, r->dev);
		fputc('\n', f);
	}
	for (i = 0; i < st->nholds; i++) {
		const struct nm_state_hold *h = &st->holds[i];

		fprintf(f, "hold %s ", nm_hold_kind_name(h->kind));
		put_str(f, h->name);
		fprintf(f, " %d %" PRIu64 "\n", h->pid, h->starttime);
	}
	if (fclose(f) != 0)
		fatal("open_memstream");
	/* The trailer covers every byte before it. */
	buf = xrealloc(buf, n + 32);
	n += (size_t)snprintf(buf + n, 32, "end %08x\n", crc32_le(0, buf, n));
	*len = n;
	return buf;
}

struct parse {
	struct nm_state	*st;
	size_t		 lineno;
	char		*err;
	size_t		 errlen;
	int		 seen_header, seen_config;
};

static int __attribute__((__format__(printf, 2, 3)))
bad(struct parse *p, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "line %zu: %s", p->lineno, msg);
	return -1;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undo put_str in place; -1 on a bad escape or an escaped NUL. */
static int
unescape(char *s)
{
	char *in, *out;
	int hi, lo;

	for (in = out = s; *in != '\0'; in++) {
		if (*in != '%') {
			*out++ = *in;
			continue;
		}
		if ((hi = hexval(in[1])) < 0 || (lo = hexval(in[2])) < 0 ||
		    (hi == 0 && lo == 0))
			return -1;
		*out++ = (char)(hi << 4 | lo);
		in += 2;
	}
	*out = '\0';
	return 0;
}

/* Decimal digits only, up to max. */
static int
get_uint(const char *tok, uint64_t max, uint64_t *out)
{
	const char *c;
	char *end;

	if (tok == NULL || strlen(tok) > 20)
		return -1;
	for (c = tok; *c != '\0'; c++)
		if (*c < '0' || *c > '9')
			return -1;
	errno = 0;
	*out = strtoull(tok, &end, 10);
	return errno == 0 && *end == '\0' && *out <= max ? 0 : -1;
}

static int
get_name(struct parse *p, const char *tok, char *out, size_t len, const char *what)
{
	if (tok == NULL || strlen(tok) >= len)
		return bad(p, "bad %s \"%s\"", what, tok != NULL ? tok : "-");
	strcpy(out, tok);
	return 0;
}

static int
rec_config(struct parse *p, char **f)
{
	const char *c;

	if (f[0] == NULL || strlen(f[0]) != 16)
		return bad(p, "bad fingerprint");
	for (c = f[0]; *c != '\0'; c++)
		if (hexval(*c) < 0)
			return bad(p, "bad fingerprint");
	p->st->config_fingerprint = strtoull(f[0], NULL, 16);
	p->seen_config = 1;
	return 0;
}

static int
rec_cluster(struct parse *p, char **f)
{
	struct nm_state *st = p->st;
	uint64_t v[3];
	int i;

	if (st->has_cluster)
		return bad(p, "a second cluster");
	if (get_name(p, f[0], st->cluster, sizeof(st->cluster), "cluster name") == -1)
		return -1;
	for (i = 0; i < 3; i++)
		if (get_uint(f[1 + i], UINT32_MAX, &v[i]) == -1)
			return bad(p, "bad timeout");
	if (f[4] == NULL || cc_fence_method_parse(f[4], &st->fence_method) == -1)
		return bad(p, "bad fence method");
	st->idle_timeout_ms = (unsigned)v[0];
	st->keepalive_delay_ms = (unsigned)v[1];
	st->reconnect_delay_ms = (unsigned)v[2];
	st->has_cluster = 1;
	return 0;
}

static int
rec_heartbeat(struct parse *p, char **f)
{
	struct nm_state *st = p->st;
	uint64_t thr, ivl;

	if (!st->has_cluster)
		return bad(p, "heartbeat settings before the cluster");
	if (get_uint(f[0], UINT32_MAX, &thr) == -1 || get_uint(f[2], UINT32_MAX, &ivl) == -1)
		return bad(p, "bad heartbeat settings");
	if (f[1] != NULL && strcmp(f[1], "local") == 0)
		st->hb_mode = CC_HB_LOCAL;
	else if (f[1] != NULL && strcmp(f[1], "global") == 0)
		st->hb_mode = CC_HB_GLOBAL;
	else
		return bad(p, "bad heartbeat mode");
	st->dead_threshold = (unsigned)thr;
	st->hb_interval_ms = (unsigned)ivl;
	return 0;
}

/* Absent in a file of an older nmd: o2cb, the only stack it had. */
static int
rec_stack(struct parse *p, char **f)
{
	if (!p->st->has_cluster)
		return bad(p, "stack before the cluster");
	if (cc_stack_parse(f[0], &p->st->stack) == -1)
		return bad(p, "bad stack \"%s\"", f[0] != NULL ? f[0] : "-");
	return 0;
}

static int
rec_global_region(struct parse *p, char **f)
{
	struct nm_state *st = p->st;

	if (f[0] == NULL || !cc_valid_region_name(f[0]))
		return bad(p, "bad region UUID");
	st->global_regions = xrealloc(st->global_regions,
	    (st->nglobal_regions + 2) * sizeof(char *));
	st->global_regions[st->nglobal_regions++] = xstrdup(f[0]);
	st->global_regions[st->nglobal_regions] = NULL;
	return 0;
}

static int
rec_node(struct parse *p, char **f)
{
	struct nm_state *st = p->st;
	struct nm_state_node nd;
	struct in_addr a;
	uint64_t v;

	if (!st->has_cluster)
		return bad(p, "a node before the cluster");
	memset(&nd, 0, sizeof(nd));
	if (get_name(p, f[0], nd.name, sizeof(nd.name), "node name") == -1)
		return -1;
	if ((nd.num_set = f[1] != NULL)) {
		if (get_uint(f[1], NM_NODE_UNSET - 1, &v) == -1)
			return bad(p, "bad node number");
		nd.num = (unsigned)v;
	}
	if ((nd.addr_set = f[2] != NULL)) {
		if (inet_pton(AF_INET, f[2], &a) != 1)
			return bad(p, "bad address");
		nd.addr = a.s_addr;
	}
	if ((nd.port_set = f[3] != NULL)) {
		if (get_uint(f[3], UINT16_MAX, &v) == -1)
			return bad(p, "bad port");
		nd.port = (uint16_t)v;
	}
	if (get_uint(f[4], 1, &v) == -1)
		return bad(p, "bad local flag");
	nd.local = (int)v;
	st->nodes = xrealloc(st->nodes, (st->nnodes + 1) * sizeof(*st->nodes));
	st->nodes[st->nnodes++] = nd;
	return 0;
}

static int
rec_region(struct parse *p, char **f)
{
	struct nm_state *st = p->st;
	struct nm_state_region r;
	uint64_t v[5];
	int i;

	if (!st->has_cluster)
		return bad(p, "a region before the cluster");
	memset(&r, 0, sizeof(r));
	if (get_name(p, f[0], r.name, sizeof(r.name), "region name") == -1)
		return -1;
	for (i = 0; i < 5; i++)
		if (get_uint(f[1 + i], i == 1 ? UINT64_MAX : i == 3 ? INT32_MAX : UINT32_MAX,
		    &v[i]) == -1)
			return bad(p, "bad region value");
	if (f[6] != NULL && f[6][0] != '/')
		return bad(p, "bad device");
	r.block_bytes = (unsigned)v[0];
	r.start_block = v[1];
	r.blocks = (unsigned)v[2];
	r.pid = (int)v[3];
	r.persistent_refs = (unsigned)v[4];
	r.dev = f[6] != NULL ? xstrdup(f[6]) : NULL;
	st->regions = xrealloc(st->regions, (st->nregions + 1) * sizeof(*st->regions));
	st->regions[st->nregions++] = r;
	return 0;
}

static int
rec_hold(struct parse *p, char **f)
{
	struct nm_state *st = p->st;
	struct nm_state_hold h;
	uint64_t pid;

	memset(&h, 0, sizeof(h));
	if (f[0] == NULL || nm_hold_kind_parse(f[0], &h.kind) == -1)
		return bad(p, "bad hold kind");
	if (get_name(p, f[1], h.name, sizeof(h.name), "held item") == -1)
		return -1;
	if (get_uint(f[2], INT32_MAX, &pid) == -1 || pid == 0 ||
	    get_uint(f[3], UINT64_MAX, &h.starttime) == -1)
		return bad(p, "bad holder");
	h.pid = (int)pid;
	st->holds = xrealloc(st->holds, (st->nholds + 1) * sizeof(*st->holds));
	st->holds[st->nholds++] = h;
	return 0;
}

static const struct {
	const char	*name;
	int		 nfields;
	int		(*parse)(struct parse *, char **);
} records[] = {
	{ "config", 1, rec_config },
	{ "cluster", 5, rec_cluster },
	{ "heartbeat", 3, rec_heartbeat },
	{ "stack", 1, rec_stack },
	{ "global-region", 1, rec_global_region },
	{ "node", 5, rec_node },
	{ "region", 7, rec_region },
	{ "hold", 4, rec_hold },
};

/* One line, without its newline. Fields come unescaped; an unset one ("-") is NULL. */
static int
parse_line(struct parse *p, char *line)
{
	char *f[MAX_FIELDS + 1], *s, *sp;
	size_t i, n = 0;
	uint64_t version;

	for (s = line; ; s = sp + 1) {
		if (n == MAX_FIELDS + 1)
			return bad(p, "too many fields");
		f[n++] = s;
		if ((sp = strchr(s, ' ')) == NULL)
			break;
		*sp = '\0';
	}
	for (i = 0; i < n; i++) {
		if (strcmp(f[i], "-") == 0)
			f[i] = NULL;
		else if (f[i][0] == '\0' || strlen(f[i]) > 3 * MAX_FIELD || unescape(f[i]) == -1)
			return bad(p, "bad field %zu", i + 1);
	}
	if (f[0] == NULL)
		return bad(p, "unknown record \"-\"");
	if (!p->seen_header) {
		if (n != 2 || strcmp(f[0], STATE_MAGIC) != 0)
			return bad(p, "not an nmd state file");
		if (get_uint(f[1], INT32_MAX, &version) == -1 || version != NM_STATE_VERSION)
			return bad(p, "version %s; this nmd reads version %d", f[1],
			    NM_STATE_VERSION);
		p->seen_header = 1;
		return 0;
	}
	for (i = 0; i < nitems(records); i++) {
		if (strcmp(f[0], records[i].name) != 0)
			continue;
		if ((int)n - 1 != records[i].nfields)
			return bad(p, "%s: %zu fields, not %d", f[0], n - 1, records[i].nfields);
		return records[i].parse(p, f + 1);
	}
	return bad(p, "unknown record \"%.32s\"", f[0]);
}

/* The "end CRC" line closes the file and covers every byte before it. */
static int
check_trailer(const char *buf, size_t len, size_t *body, char *err, size_t errlen)
{
	const char *last;
	char line[32];
	size_t n;
	unsigned crc;
	char tail;

	if (len == 0) {
		snprintf(err, errlen, "empty");
		return -1;
	}
	if (buf[len - 1] != '\n') {
		snprintf(err, errlen, "truncated: no end line");
		return -1;
	}
	for (last = buf + len - 1; last > buf && last[-1] != '\n'; last--)
		;
	n = (size_t)(buf + len - last);
	if (n >= sizeof(line) || strncmp(last, "end ", 4) != 0) {
		snprintf(err, errlen, "truncated: no end line");
		return -1;
	}
	memcpy(line, last, n);
	line[n] = '\0';
	if (n != 13 || sscanf(line, "end %8x%c", &crc, &tail) != 2 || tail != '\n') {
		snprintf(err, errlen, "bad end line");
		return -1;
	}
	*body = (size_t)(last - buf);
	if (crc32_le(0, buf, *body) != crc) {
		snprintf(err, errlen, "checksum mismatch: the file was altered or torn");
		return -1;
	}
	return 0;
}

int
nm_state_parse(const char *buf, size_t len, struct nm_state *st, char *err, size_t errlen)
{
	struct parse p = { .st = st, .err = err, .errlen = errlen };
	size_t body, off, n;
	const char *nl;
	char *line;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (check_trailer(buf, len, &body, err, errlen) == -1)
		return -1;
	for (off = 0; rc == 0 && off < body; off += n + 1) {
		nl = memchr(buf + off, '\n', body - off);
		n = (size_t)(nl - (buf + off));
		p.lineno++;
		if (memchr(buf + off, '\0', n) != NULL) {
			rc = bad(&p, "a NUL byte");
			break;
		}
		line = xmalloc(n + 1);
		memcpy(line, buf + off, n);
		line[n] = '\0';
		rc = parse_line(&p, line);
		free(line);
	}
	if (rc == 0 && (!p.seen_header || !p.seen_config)) {
		snprintf(err, errlen, "no %s line", p.seen_header ? "config" : "header");
		rc = -1;
	}
	if (rc == -1)
		nm_state_free(st);
	return rc;
}

void
nm_state_free(struct nm_state *st)
{
	size_t i;

	for (i = 0; i < st->nglobal_regions; i++)
		free(st->global_regions[i]);
	free(st->global_regions);
	for (i = 0; i < st->nregions; i++)
		free(st->regions[i].dev);
	free(st->regions);
	free(st->nodes);
	free(st->holds);
	memset(st, 0, sizeof(*st));
}
