/*
 * /etc/ocfs2/cluster.conf (o2cb_ctl's jconfig grammar) and /etc/default/o2cb
 * parsing.  Pure: no logging, errors go to the caller's buffer.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "clusterconf.h"

enum st_type { ST_CLUSTER, ST_NODE, ST_HEARTBEAT };

static const char *const st_names[] = { "cluster", "node", "heartbeat" };

struct attr {
	const char	*key;
	const char	*val;
	int		 line;
};

struct stanza {
	enum st_type	 type;
	int		 line;
	struct attr	*attrs;
	size_t		 nattrs;
};

/* A validated cluster: stanza; one of them is selected afterwards. */
struct clinfo {
	const char	*name;
	unsigned	 node_count;
	int		 count_line;
	enum cc_hb_mode	 mode;
	unsigned	 interval;
	enum cc_stack	 stack;
	enum cc_pcmk_fencing fencing;
	const char	*fence_agent;	/* NULL: none */
	int		 line;
};

struct parser {
	const char	*file;
	char		*err;
	size_t		 errlen;
	void		(*warn)(const char *, void *);
	void		*warnarg;
	struct attr	*attrs;
	size_t		 nattrs;
	struct stanza	*st;
	size_t		 nst;
	struct clinfo	*cl;
	size_t		 ncl;
};

static const char *const cluster_keys[] = {
	"name", "node_count", "heartbeat_mode", "heartbeat_interval_ms", "stack", "fencing",
	"fence_agent", NULL
};
static const char *const node_keys[] = {
	"name", "number", "ip_address", "ip_port", "cluster", NULL
};
static const char *const heartbeat_keys[] = { "region", "cluster", NULL };
static const char *const *const st_keys[] = {
	cluster_keys, node_keys, heartbeat_keys
};

static const char *const fence_names[] = { "kill", "reset", "panic" };
/* As the stack names ocfs2-tools writes into a volume (OCFS2_STACK_LABEL_LEN). */
static const char *const stack_names[] = { "o2cb", "pcmk" };
static const char *const pcmk_fencing_names[] = { "", "none", "agent", "pacemaker" };

/* ASCII only: the grammar must not depend on the caller's locale. */
static int
cc_alpha(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int
cc_alnum(int c)
{
	return cc_alpha(c) || (c >= '0' && c <= '9');
}

static int
cc_blank(int c)
{
	return c == ' ' || c == '\t';
}

static void
cc_vformat(char *buf, size_t len, const char *file, int line,
    const char *fmt, va_list ap)
{
	int n;

	if (buf == NULL || len == 0)
		return;
	if (line > 0)
		n = snprintf(buf, len, "%s:%d: ", file, line);
	else
		n = snprintf(buf, len, "%s: ", file);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(buf + n, len - n, fmt, ap);
}

/* "file:line: what"; line 0 for errors about the whole file.  Returns -1. */
static int __attribute__((format(printf, 3, 4)))
cc_fail(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cc_vformat(p->err, p->errlen, p->file, line, fmt, ap);
	va_end(ap);
	return -1;
}

static void __attribute__((format(printf, 3, 4)))
cc_warn(struct parser *p, int line, const char *fmt, ...)
{
	char buf[CC_ERR_MAX];
	va_list ap;

	if (p->warn == NULL)
		return;
	va_start(ap, fmt);
	cc_vformat(buf, sizeof(buf), p->file, line, fmt, ap);
	va_end(ap);
	p->warn(buf, p->warnarg);
}

/* Whole file into a NUL-terminated buffer; errno preserved on failure. */
static int
cc_read_all(const char *path, char **bufp, size_t *lenp)
{
	char *buf = NULL, *nbuf;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	for (;;) {
		if (cap - len < 2) {
			cap = cap ? cap * 2 : 4096;
			if ((nbuf = realloc(buf, cap)) == NULL)
				goto fail;
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	return 0;
fail:
	saved = errno;
	free(buf);
	close(fd);
	errno = saved;
	return -1;
}

/* Line number of the first NUL byte, 0 if none; a NUL would cut lines short. */
static int
cc_nul_line(const char *buf, size_t len)
{
	const char *nul, *s;
	int line = 1;

	if ((nul = memchr(buf, '\0', len)) == NULL)
		return 0;
	for (s = buf; s < nul; s++)
		if (*s == '\n')
			line++;
	return line;
}

static size_t
cc_count_lines(const char *s)
{
	size_t n = 1;

	for (; *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* Split the next line off in place, trailing whitespace (and \r) removed. */
static char *
cc_next_line(char **pos)
{
	char *line = *pos, *nl, *end;

	if (line == NULL)
		return NULL;
	if ((nl = strchr(line, '\n')) != NULL) {
		*nl = '\0';
		*pos = nl + 1;
	} else
		*pos = NULL;
	end = line + strlen(line);
	while (end > line && (cc_blank(end[-1]) || end[-1] == '\r' ||
	    end[-1] == '\v' || end[-1] == '\f'))
		*--end = '\0';
	return line;
}

static char *
cc_skip_blanks(char *s)
{
	while (cc_blank(*s))
		s++;
	return s;
}

/* Decimal only, no sign, no overflow, min..max. */
static int
cc_parse_ulong(const char *s, unsigned long min, unsigned long max,
    unsigned long *out)
{
	unsigned long v = 0, d;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		d = (unsigned long)(*s - '0');
		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

/* Exactly four decimal fields, each 0..255 (the kernel's "%u.%u.%u.%u"). */
static int
cc_parse_ipv4(const char *s, uint32_t *addr)
{
	uint32_t a = 0;
	unsigned v;
	int i, digits;

	for (i = 0; i < 4; i++) {
		for (v = 0, digits = 0; *s >= '0' && *s <= '9'; s++, digits++) {
			v = v * 10 + (unsigned)(*s - '0');
			if (v > 255)
				return -1;
		}
		if (digits == 0)
			return -1;
		if (*s != (i < 3 ? '.' : '\0'))
			return -1;
		s++;
		a = a << 8 | v;
	}
	*addr = htonl(a);
	return 0;
}

static int
cc_header(struct parser *p, char *line, int lineno)
{
	char *s = line;
	size_t i;

	if (cc_alpha(*s) || *s == '_')
		while (cc_alnum(*s) || *s == '_')
			s++;
	if (s == line || s[0] != ':' || s[1] != '\0')
		return cc_fail(p, lineno, "expected a stanza header such as "
		    "'node:' or an indented 'key = value'");
	*s = '\0';
	for (i = 0; i < sizeof(st_names) / sizeof(st_names[0]); i++)
		if (strcmp(line, st_names[i]) == 0)
			break;
	if (i == sizeof(st_names) / sizeof(st_names[0]))
		return cc_fail(p, lineno, "unknown stanza type '%s'", line);
	p->st[p->nst].type = i;
	p->st[p->nst].line = lineno;
	p->st[p->nst].attrs = p->attrs + p->nattrs;
	p->st[p->nst].nattrs = 0;
	p->nst++;
	return 0;
}

static int
cc_attribute(struct parser *p, struct stanza *st, char *line, int lineno)
{
	char *key, *end, *s;
	size_t i;

	if (st == NULL)
		return cc_fail(p, lineno, "attribute outside of a stanza "
		    "(no 'type:' header above it since the last blank line)");
	key = end = cc_skip_blanks(line);
	while (cc_alnum(*end) || *end == '_')
		end++;
	s = cc_skip_blanks(end);
	if (end == key || *s != '=')
		return cc_fail(p, lineno, "expected 'key = value'");
	*end = '\0';
	for (i = 0; i < st->nattrs; i++)
		if (strcmp(st->attrs[i].key, key) == 0)
			return cc_fail(p, lineno, "duplicate key '%s' "
			    "(first at line %d)", key, st->attrs[i].line);
	st->attrs[i].key = key;
	st->attrs[i].val = cc_skip_blanks(s + 1);
	st->attrs[i].line = lineno;
	st->nattrs++;
	p->nattrs++;
	return 0;
}

/* Pass 1: syntax only, into stanzas of key/value pairs. */
static int
cc_split(struct parser *p, char *text)
{
	struct stanza *cur = NULL;
	char *pos = text, *line, *s;
	int lineno = 0;

	while ((line = cc_next_line(&pos)) != NULL) {
		lineno++;
		s = cc_skip_blanks(line);
		if (*s == '\0') {
			cur = NULL;
			continue;
		}
		if (*s == '#')
			continue;
		if (s == line) {
			if (cc_header(p, line, lineno) == -1)
				return -1;
			cur = &p->st[p->nst - 1];
		} else if (cc_attribute(p, cur, line, lineno) == -1)
			return -1;
	}
	return 0;
}

static const struct attr *
cc_find(const struct stanza *st, const char *key)
{
	size_t i;

	for (i = 0; i < st->nattrs; i++)
		if (strcmp(st->attrs[i].key, key) == 0)
			return &st->attrs[i];
	return NULL;
}

static int
cc_need(struct parser *p, const struct stanza *st, const char *key,
    const struct attr **ap)
{
	const struct attr *a;

	if ((a = cc_find(st, key)) == NULL)
		return cc_fail(p, st->line, "%s stanza has no '%s'",
		    st_names[st->type], key);
	if (*a->val == '\0')
		return cc_fail(p, a->line, "'%s' is empty", key);
	*ap = a;
	return 0;
}

/* Optional key: absent or empty means the default. */
static const struct attr *
cc_optional(const struct stanza *st, const char *key)
{
	const struct attr *a = cc_find(st, key);

	return a != NULL && *a->val != '\0' ? a : NULL;
}

static int
cc_number(struct parser *p, const struct attr *a, unsigned long min,
    unsigned long max, unsigned *out)
{
	unsigned long v;

	if (cc_parse_ulong(a->val, min, max, &v) == -1)
		return cc_fail(p, a->line, "invalid %s '%s' (expected %lu..%lu)",
		    a->key, a->val, min, max);
	*out = v;
	return 0;
}

/* ocfs2-tools accepts unknown keys; say so, since they are often typos. */
static void
cc_check_keys(struct parser *p, const struct stanza *st)
{
	const char *const *k;
	size_t i;

	for (i = 0; i < st->nattrs; i++) {
		for (k = st_keys[st->type]; *k != NULL; k++)
			if (strcmp(*k, st->attrs[i].key) == 0)
				break;
		if (*k == NULL)
			cc_warn(p, st->attrs[i].line,
			    "unknown key '%s' in %s stanza (ignored)",
			    st->attrs[i].key, st_names[st->type]);
	}
}

/*
 * fencing and fence_agent: the pcmk stack's (o2cb fences with
 * O2CB_FENCE_METHOD and ignores them, so that a stack is switched by its
 * line alone), checked against each other.
 */
static int
cc_fencing(struct parser *p, const struct stanza *st, struct clinfo *ci)
{
	const struct attr *a, *agent;
	size_t i;

	ci->fencing = CC_PCMK_FENCING_UNSET;
	ci->fence_agent = NULL;
	agent = cc_optional(st, "fence_agent");
	if ((a = cc_optional(st, "fencing")) != NULL) {
		for (i = 1; i < sizeof(pcmk_fencing_names) / sizeof(pcmk_fencing_names[0]); i++)
			if (strcmp(a->val, pcmk_fencing_names[i]) == 0)
				ci->fencing = (enum cc_pcmk_fencing)i;
		if (ci->fencing == CC_PCMK_FENCING_UNSET)
			return cc_fail(p, a->line, "invalid fencing '%s' (expected pacemaker, "
			    "agent or none)", a->val);
	}
	if (ci->fencing == CC_PCMK_FENCING_AGENT && agent == NULL)
		return cc_fail(p, a->line, "fencing = agent needs fence_agent = PATH");
	if (agent == NULL)
		return 0;
	if (ci->fencing != CC_PCMK_FENCING_AGENT)
		return cc_fail(p, agent->line, "fence_agent is used only with fencing = agent");
	if (agent->val[0] != '/' || strlen(agent->val) > CC_FENCE_AGENT_MAX)
		return cc_fail(p, agent->line, "fence_agent '%s' must be an absolute path "
		    "(at most %d characters)", agent->val, CC_FENCE_AGENT_MAX);
	ci->fence_agent = agent->val;
	return 0;
}

static int
cc_cluster(struct parser *p, const struct stanza *st, struct clinfo *ci)
{
	const struct attr *a;
	size_t i;

	cc_check_keys(p, st);
	ci->line = st->line;
	if (cc_need(p, st, "name", &a) == -1)
		return -1;
	if (!cc_valid_cluster_name(a->val))
		return cc_fail(p, a->line, "invalid cluster name '%s' "
		    "(1-%d characters, [0-9A-Za-z])", a->val,
		    CC_CLUSTER_NAME_MAX);
	for (i = 0; i < p->ncl; i++)
		if (strcmp(p->cl[i].name, a->val) == 0)
			return cc_fail(p, a->line, "cluster '%s' already "
			    "described at line %d", a->val, p->cl[i].line);
	ci->name = a->val;
	if (cc_need(p, st, "node_count", &a) == -1 ||
	    cc_number(p, a, 1, CC_MAX_NODES, &ci->node_count) == -1)
		return -1;
	ci->count_line = a->line;
	ci->mode = CC_HB_LOCAL;
	if ((a = cc_optional(st, "heartbeat_mode")) != NULL) {
		if (strcasecmp(a->val, "global") == 0)
			ci->mode = CC_HB_GLOBAL;
		else if (strcasecmp(a->val, "local") != 0)
			return cc_fail(p, a->line, "invalid heartbeat_mode "
			    "'%s' (expected local or global)", a->val);
	}
	ci->interval = 2000;
	if ((a = cc_optional(st, "heartbeat_interval_ms")) != NULL &&
	    cc_number(p, a, 100, 60000, &ci->interval) == -1)
		return -1;
	ci->stack = CC_STACK_O2CB;
	if ((a = cc_optional(st, "stack")) != NULL &&
	    cc_stack_parse(a->val, &ci->stack) == -1)
		return cc_fail(p, a->line, "invalid stack '%s' (expected o2cb or pcmk)",
		    a->val);
	return cc_fencing(p, st, ci);
}

static const struct clinfo *
cc_cluster_named(const struct parser *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->ncl; i++)
		if (strcmp(p->cl[i].name, name) == 0)
			return &p->cl[i];
	return NULL;
}

static const struct clinfo *
cc_select(struct parser *p, const char *want)
{
	const struct clinfo *ci;
	char names[CC_ERR_MAX] = "";
	size_t i, n = 0;

	if (p->ncl == 0) {
		cc_fail(p, 0, "no cluster: stanza");
		return NULL;
	}
	if (want != NULL) {
		if ((ci = cc_cluster_named(p, want)) == NULL)
			cc_fail(p, 0, "no cluster named %s", want);
		return ci;
	}
	if (p->ncl == 1)
		return &p->cl[0];
	if ((ci = cc_cluster_named(p, "ocfs2")) != NULL)
		return ci;
	for (i = 0; i < p->ncl && n < sizeof(names); i++)
		n += snprintf(names + n, sizeof(names) - n, "%s%s",
		    i ? ", " : "", p->cl[i].name);
	cc_fail(p, 0, "%zu clusters are described (%s) and none is named "
	    "ocfs2; name the one to use", p->ncl, names);
	return NULL;
}

/*
 * Whether a node/heartbeat stanza belongs to the selected cluster (1) or to
 * another one (0: ignored); -1 on error.
 */
static int
cc_owner(struct parser *p, const struct stanza *st, const struct clinfo *sel)
{
	const struct attr *a;

	if (cc_need(p, st, "cluster", &a) == -1)
		return -1;
	if (cc_cluster_named(p, a->val) == NULL)
		return cc_fail(p, a->line, "%s stanza names cluster '%s', "
		    "which no cluster: stanza describes",
		    st_names[st->type], a->val);
	return strcmp(a->val, sel->name) == 0;
}

static int
cc_node(struct parser *p, const struct stanza *st, struct cluster_conf *cc)
{
	const struct attr *name, *num, *ip, *port;
	const struct cc_node *o;
	struct cc_node n;
	unsigned v = 0;
	size_t i;

	if (cc_need(p, st, "name", &name) == -1)
		return -1;
	if (!cc_valid_node_name(name->val))
		return cc_fail(p, name->line, "invalid node name '%s' "
		    "(1-%d characters, [A-Za-z0-9._-])", name->val,
		    CC_NODE_NAME_MAX);
	if (cc_need(p, st, "number", &num) == -1 ||
	    cc_number(p, num, 0, CC_MAX_NODES - 1, &n.num) == -1)
		return -1;
	if (cc_need(p, st, "ip_address", &ip) == -1)
		return -1;
	if (cc_parse_ipv4(ip->val, &n.addr) == -1)
		return cc_fail(p, ip->line, "invalid ip_address '%s' "
		    "(expected a dotted quad such as 192.168.0.1)", ip->val);
	/* The kernel refuses port 0 and anything >= 65535. */
	if (cc_need(p, st, "ip_port", &port) == -1 ||
	    cc_number(p, port, 1, 65534, &v) == -1)
		return -1;
	n.port = v;
	strcpy(n.name, name->val);
	n.line = st->line;

	for (i = 0; i < cc->nnodes; i++) {
		o = &cc->nodes[i];
		if (strcasecmp(o->name, n.name) == 0)
			return cc_fail(p, name->line, "node name %s already "
			    "used by node %s at line %d", n.name, o->name,
			    o->line);
		if (o->num == n.num)
			return cc_fail(p, num->line, "node number %u already "
			    "used by node %s at line %d", n.num, o->name,
			    o->line);
		if (o->addr == n.addr && o->port == n.port)
			return cc_fail(p, ip->line, "address %s:%u already "
			    "used by node %s at line %d", ip->val, n.port,
			    o->name, o->line);
		/* o2nm indexes nodes by IP alone: a second one is EEXIST. */
		if (o->addr == n.addr)
			return cc_fail(p, ip->line, "ip_address %s already "
			    "used by node %s at line %d (one node per address)",
			    ip->val, o->name, o->line);
	}
	/* Numbers are unique and below CC_MAX_NODES, so nodes[] has room. */
	cc->nodes[cc->nnodes++] = n;
	return 0;
}

static int
cc_heartbeat(struct parser *p, const struct stanza *st, struct cluster_conf *cc)
{
	const struct attr *a;
	size_t i;

	if (cc_need(p, st, "region", &a) == -1)
		return -1;
	if (!cc_valid_region_name(a->val))
		return cc_fail(p, a->line, "invalid region '%s' (expected %d "
		    "upper-case hex characters)", a->val, CC_REGION_NAME_LEN);
	for (i = 0; i < cc->nregions; i++)
		if (strcmp(cc->regions[i].uuid, a->val) == 0)
			return cc_fail(p, a->line, "region %s already "
			    "listed at line %d", a->val, cc->regions[i].line);
	if (cc->nregions == CC_MAX_REGIONS)
		return cc_fail(p, a->line, "more than %d heartbeat regions "
		    "for cluster %s", CC_MAX_REGIONS, cc->name);
	strcpy(cc->regions[cc->nregions].uuid, a->val);
	cc->regions[cc->nregions].line = st->line;
	cc->nregions++;
	return 0;
}

/* Pass 2: clusters, selection, then the selected cluster's members. */
static int
cc_build(struct parser *p, const char *want, struct cluster_conf *cc)
{
	const struct clinfo *sel;
	const struct stanza *st;
	size_t i;
	int mine;

	for (i = 0; i < p->nst; i++) {
		if (p->st[i].type != ST_CLUSTER)
			continue;
		if (cc_cluster(p, &p->st[i], &p->cl[p->ncl]) == -1)
			return -1;
		p->ncl++;
	}
	if ((sel = cc_select(p, want)) == NULL)
		return -1;
	strcpy(cc->name, sel->name);
	cc->node_count = sel->node_count;
	cc->hb_mode = sel->mode;
	cc->hb_interval_ms = sel->interval;
	cc->stack = sel->stack;
	cc->fencing = sel->fencing;
	if (sel->fence_agent != NULL)
		snprintf(cc->fence_agent, sizeof(cc->fence_agent), "%s", sel->fence_agent);

	for (i = 0; i < p->nst; i++) {
		st = &p->st[i];
		if (st->type == ST_CLUSTER)
			continue;
		if ((mine = cc_owner(p, st, sel)) == -1)
			return -1;
		if (!mine)
			continue;
		cc_check_keys(p, st);
		if (st->type == ST_NODE && cc_node(p, st, cc) == -1)
			return -1;
		if (st->type == ST_HEARTBEAT && cc_heartbeat(p, st, cc) == -1)
			return -1;
	}
	if (cc->nnodes != cc->node_count)
		return cc_fail(p, sel->count_line, "node_count = %u but %zu "
		    "nodes are defined for cluster %s", cc->node_count,
		    cc->nnodes, cc->name);
	return 0;
}

int
cc_parse_buf(const char *name, const char *buf, size_t len,
    const char *cluster, struct cluster_conf *cc, char *err, size_t errlen,
    void (*warn)(const char *msg, void *arg), void *warnarg)
{
	struct parser p = {
		.file = name, .err = err, .errlen = errlen,
		.warn = warn, .warnarg = warnarg,
	};
	char *text;
	size_t nlines;
	int line, rv = -1;

	memset(cc, 0, sizeof(*cc));
	cc_tunables_default(&cc->tun);
	cc->hb_interval_ms = 2000;

	if ((line = cc_nul_line(buf, len)) != 0)
		return cc_fail(&p, line, "NUL byte in file");
	if ((text = malloc(len + 1)) == NULL)
		return cc_fail(&p, 0, "%s", strerror(errno));
	memcpy(text, buf, len);
	text[len] = '\0';
	/* Each line holds at most one stanza or attribute. */
	nlines = cc_count_lines(text);
	p.attrs = calloc(nlines, sizeof(*p.attrs));
	p.st = calloc(nlines, sizeof(*p.st));
	p.cl = calloc(nlines, sizeof(*p.cl));
	if (p.attrs == NULL || p.st == NULL || p.cl == NULL)
		cc_fail(&p, 0, "%s", strerror(errno));
	else if (cc_split(&p, text) == 0 && cc_build(&p, cluster, cc) == 0)
		rv = 0;
	free(p.cl);
	free(p.st);
	free(p.attrs);
	free(text);
	return rv;
}

int
cc_parse_file(const char *path, const char *cluster, struct cluster_conf *cc,
    char *err, size_t errlen,
    void (*warn)(const char *msg, void *arg), void *warnarg)
{
	struct parser p = { .file = path, .err = err, .errlen = errlen };
	char *buf;
	size_t len;
	int rv, saved;

	if (cc_read_all(path, &buf, &len) == -1) {
		saved = errno;
		cc_fail(&p, 0, "cannot read: %s", strerror(saved));
		errno = saved;
		return -1;
	}
	rv = cc_parse_buf(path, buf, len, cluster, cc, err, errlen, warn,
	    warnarg);
	free(buf);
	return rv;
}

void
cc_tunables_default(struct cc_tunables *t)
{
	t->dead_threshold = 31;
	t->idle_timeout_ms = 30000;
	t->keepalive_delay_ms = 2000;
	t->reconnect_delay_ms = 2000;
	t->fence_method = CC_FENCE_KILL;
}

/*
 * The one shell word after '=', unquoted in place: "..." or '...' or bare,
 * optionally followed by a # comment.  NULL or a reason it is not.
 */
static const char *
cc_shell_word(char *s, char **word)
{
	char *end;

	if (*s == '"' || *s == '\'') {
		if ((end = strchr(s + 1, *s)) == NULL)
			return "unterminated quote";
		*word = s + 1;
		*end++ = '\0';
	} else {
		*word = s;
		end = s + strcspn(s, " \t");
	}
	if (*end == '\0')
		return NULL;
	if (!cc_blank(*end))
		return "unexpected text after the value";
	*end++ = '\0';
	end = cc_skip_blanks(end);
	if (*end != '\0' && *end != '#')
		return "unexpected text after the value";
	return NULL;
}

static int
cc_tunable(struct parser *p, struct cc_tunables *t, char **boot,
    const char *key, const char *val, int lineno)
{
	/* The kernel's limits: 0 is EINVAL, >= 2^32-1 ERANGE. */
	const struct {
		const char	*name;
		unsigned long	 min, max;
		unsigned	*dst;
	} vars[] = {
		{ "O2CB_HEARTBEAT_THRESHOLD", 3, 65535, &t->dead_threshold },
		{ "O2CB_IDLE_TIMEOUT_MS", 1, 0xFFFFFFFEUL, &t->idle_timeout_ms },
		{ "O2CB_KEEPALIVE_DELAY_MS", 1, 0xFFFFFFFEUL,
		    &t->keepalive_delay_ms },
		{ "O2CB_RECONNECT_DELAY_MS", 1, 0xFFFFFFFEUL,
		    &t->reconnect_delay_ms },
	};
	unsigned long v;
	size_t i;

	/* Empty means "the default", as in the init script. */
	if (*val == '\0')
		return 0;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (strcmp(key, vars[i].name) != 0)
			continue;
		if (cc_parse_ulong(val, vars[i].min, vars[i].max, &v) == -1)
			return cc_fail(p, lineno, "invalid %s '%s' (expected "
			    "%lu..%lu)", key, val, vars[i].min, vars[i].max);
		*vars[i].dst = v;
		return 0;
	}
	if (strcmp(key, "O2CB_FENCE_METHOD") == 0) {
		if (cc_fence_method_parse(val, &t->fence_method) == -1)
			return cc_fail(p, lineno, "invalid O2CB_FENCE_METHOD "
			    "'%s' (expected kill, reset or panic)", val);
	} else if (strcmp(key, "O2CB_BOOTCLUSTER") == 0) {
		if (!cc_valid_cluster_name(val))
			return cc_fail(p, lineno, "invalid O2CB_BOOTCLUSTER "
			    "'%s' (1-%d characters, [0-9A-Za-z])", val,
			    CC_CLUSTER_NAME_MAX);
		free(*boot);
		if ((*boot = strdup(val)) == NULL)
			return cc_fail(p, lineno, "%s", strerror(errno));
	}
	return 0;
}

static int
cc_tunables_text(struct parser *p, char *text, struct cc_tunables *t,
    char **boot)
{
	char *pos = text, *line, *key, *s, *val;
	const char *why;
	int lineno = 0, kaline = 0, idleline = 0;

	while ((line = cc_next_line(&pos)) != NULL) {
		lineno++;
		s = cc_skip_blanks(line);
		if (*s == '\0' || *s == '#')
			continue;
		if (strncmp(s, "export", 6) == 0 && cc_blank(s[6]))
			s = cc_skip_blanks(s + 6);
		key = s;
		if (cc_alpha(*s) || *s == '_')
			while (cc_alnum(*s) || *s == '_')
				s++;
		if (s == key || *s != '=')
			return cc_fail(p, lineno, "expected VARIABLE=value");
		*s++ = '\0';
		if ((why = cc_shell_word(s, &val)) != NULL)
			return cc_fail(p, lineno, "%s: %s", key, why);
		if (cc_tunable(p, t, boot, key, val, lineno) == -1)
			return -1;
		if (*val != '\0' && strcmp(key, "O2CB_KEEPALIVE_DELAY_MS") == 0)
			kaline = lineno;
		if (*val != '\0' && strcmp(key, "O2CB_IDLE_TIMEOUT_MS") == 0)
			idleline = lineno;
	}
	/* o2net refuses a keepalive delay that is not below the idle timeout. */
	if (t->keepalive_delay_ms >= t->idle_timeout_ms)
		return cc_fail(p, kaline > idleline ? kaline : idleline,
		    "O2CB_KEEPALIVE_DELAY_MS (%u) must be less than "
		    "O2CB_IDLE_TIMEOUT_MS (%u)", t->keepalive_delay_ms,
		    t->idle_timeout_ms);
	return 0;
}

int
cc_parse_tunables_file(const char *path, struct cc_tunables *t,
    char **bootcluster, char *err, size_t errlen)
{
	struct parser p = { .file = path, .err = err, .errlen = errlen };
	struct cc_tunables nt = *t;
	char *text, *boot = NULL;
	size_t len;
	int line, saved, rv = -1;

	if (bootcluster != NULL)
		*bootcluster = NULL;
	if (cc_read_all(path, &text, &len) == -1) {
		saved = errno;
		cc_fail(&p, 0, "cannot read: %s", strerror(saved));
		errno = saved;
		return -1;
	}
	if ((line = cc_nul_line(text, len)) != 0)
		cc_fail(&p, line, "NUL byte in file");
	else if (cc_tunables_text(&p, text, &nt, &boot) == 0) {
		*t = nt;
		if (bootcluster != NULL) {
			*bootcluster = boot;
			boot = NULL;
		}
		rv = 0;
	}
	free(boot);
	free(text);
	return rv;
}

const struct cc_node *
cc_node_by_name(const struct cluster_conf *cc, const char *name)
{
	size_t i;

	for (i = 0; i < cc->nnodes; i++)
		if (strcasecmp(cc->nodes[i].name, name) == 0)
			return &cc->nodes[i];
	return NULL;
}

const struct cc_node *
cc_node_by_num(const struct cluster_conf *cc, unsigned num)
{
	size_t i;

	for (i = 0; i < cc->nnodes; i++)
		if (cc->nodes[i].num == num)
			return &cc->nodes[i];
	return NULL;
}

/*
 * o2cb_ctl's node_is_local(): the node name is a case-insensitive prefix
 * of the hostname ending at its end or at a '.', so node "node1" is host
 * "node1.example.com".  An exact match wins over a domain match.
 */
const struct cc_node *
cc_local_node(const struct cluster_conf *cc, const char *nodename)
{
	const struct cc_node *domain = NULL;
	size_t i, n;

	for (i = 0; i < cc->nnodes; i++) {
		n = strlen(cc->nodes[i].name);
		if (strncasecmp(cc->nodes[i].name, nodename, n) != 0)
			continue;
		if (nodename[n] == '\0')
			return &cc->nodes[i];
		if (nodename[n] == '.' && domain == NULL)
			domain = &cc->nodes[i];
	}
	return domain;
}

int
cc_valid_cluster_name(const char *name)
{
	size_t n;

	for (n = 0; name[n] != '\0'; n++)
		if (!cc_alnum(name[n]) || n == CC_CLUSTER_NAME_MAX)
			return 0;
	return n > 0;
}

int
cc_valid_node_name(const char *name)
{
	size_t n;

	for (n = 0; name[n] != '\0'; n++)
		if (n == CC_NODE_NAME_MAX ||
		    !(cc_alnum(name[n]) || name[n] == '.' ||
		    name[n] == '_' || name[n] == '-'))
			return 0;
	return n > 0;
}

int
cc_valid_region_name(const char *name)
{
	size_t n;

	for (n = 0; name[n] != '\0'; n++)
		if (n == CC_REGION_NAME_LEN ||
		    !((name[n] >= '0' && name[n] <= '9') ||
		    (name[n] >= 'A' && name[n] <= 'F')))
			return 0;
	return n == CC_REGION_NAME_LEN;
}

const char *
cc_fence_method_name(enum cc_fence_method m)
{
	if ((unsigned)m >= sizeof(fence_names) / sizeof(fence_names[0]))
		return "unknown";
	return fence_names[m];
}

const char *
cc_stack_name(enum cc_stack s)
{
	if ((unsigned)s >= sizeof(stack_names) / sizeof(stack_names[0]))
		return "unknown";
	return stack_names[s];
}

const char *
cc_pcmk_fencing_name(enum cc_pcmk_fencing f)
{
	if ((unsigned)f >= sizeof(pcmk_fencing_names) / sizeof(pcmk_fencing_names[0]))
		return "";
	return pcmk_fencing_names[f];
}

const char *
cc_stack_daemon(enum cc_stack s)
{
	return s == CC_STACK_PCMK ? "pcmkd" : "hbd";
}

int
cc_stack_parse(const char *s, enum cc_stack *out)
{
	size_t i;

	for (i = 0; i < sizeof(stack_names) / sizeof(stack_names[0]); i++)
		if (strcmp(s, stack_names[i]) == 0) {
			*out = (enum cc_stack)i;
			return 0;
		}
	return -1;
}

int
cc_fence_method_parse(const char *s, enum cc_fence_method *m)
{
	size_t i;

	for (i = 0; i < sizeof(fence_names) / sizeof(fence_names[0]); i++)
		if (strcasecmp(s, fence_names[i]) == 0) {
			*m = i;
			return 0;
		}
	return -1;
}

struct cluster_conf *
cc_load(const char *conf, const char *tunables, int tunables_required,
    const char *cluster, const char *node_name, const struct cc_node **self,
    char *err, size_t errlen, void (*warn)(const char *msg, void *arg),
    void *warnarg)
{
	struct cluster_conf *cc = calloc(1, sizeof(*cc));
	struct cc_tunables tun;
	char *boot = NULL;

	if (cc == NULL) {
		snprintf(err, errlen, "%s: out of memory", conf);
		return NULL;
	}
	cc_tunables_default(&tun);
	if (tunables != NULL &&
	    cc_parse_tunables_file(tunables, &tun, &boot, err, errlen) == -1 &&
	    (errno != ENOENT || tunables_required))
		goto fail;
	if (cc_parse_file(conf, cluster != NULL ? cluster : boot, cc, err, errlen,
	    warn, warnarg) == -1)
		goto fail;
	cc->tun = tun;
	if ((*self = cc_local_node(cc, node_name)) == NULL) {
		snprintf(err, errlen, "%s: no node named %s in cluster %s "
		    "(use --node NAME)", conf, node_name, cc->name);
		goto fail;
	}
	free(boot);
	return cc;
fail:
	free(boot);
	free(cc);
	return NULL;
}

void
cc_warn_stderr(const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "warning: %s\n", msg);
}
