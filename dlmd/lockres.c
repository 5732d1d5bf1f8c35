/*
 * A domain's tables: lock resources by name, locks by cookie and, on
 * the directory node, who masters which name. Unused resources are
 * purged after DLM_PURGE_MS; a master tells the directory first, and
 * answers RETRY until the directory has forgotten it, so that nobody is
 * sent to a master that no longer knows the resource.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "dlmd.h"
#include "log.h"
#include "util.h"

#define PURGE_SCAN_MS	1000

/* FNV-1a: names are short and often differ only at the end. */
uint64_t
res_hash(const uint8_t *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (len-- > 0) {
		h ^= *name++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#define BUCKET(n, l)	(res_hash((n), (l)) % DLM_HASH_BUCKETS)

struct dlm_res *
res_find(struct dlm_domain *d, const uint8_t *name, size_t len)
{
	struct dlm_res *r;

	LIST_FOREACH(r, &d->res_hash[BUCKET(name, len)], hash_entry)
		if (r->namelen == len && memcmp(r->name, name, len) == 0)
			return r;
	return NULL;
}

struct dlm_res *
res_get(struct dlm_domain *d, const uint8_t *name, size_t len)
{
	struct dlm_res *r;
	int q;

	if ((r = res_find(d, name, len)) != NULL)
		return r;
	r = xcalloc(1, sizeof(*r));
	r->dom = d;
	memcpy(r->name, name, len);
	r->namelen = len;
	r->master = DLM_NODE_NONE;
	/* A bucket lists its resources newest first (recovery.c's cursor). */
	r->serial = ++d->res_serial;
	/* all zeroes, as nobody has written it yet, unless a dead node did */
	r->lvb_valid = !d->lost_member;
	for (q = 0; q < 3; q++)
		TAILQ_INIT(&r->queue[q]);
	TAILQ_INIT(&r->local);
	LIST_INSERT_HEAD(&d->res_hash[BUCKET(name, len)], r, hash_entry);
	d->nres++;
	return r;
}

int
res_in_use(const struct dlm_res *r)
{
	int q;

	for (q = 0; q < 3; q++)
		if (!TAILQ_EMPTY(&r->queue[q]))
			return 1;
	return !TAILQ_EMPTY(&r->local) || r->lookup_sent || r->migrating ||
	    r->recovering || r->has_bk;
}

/* Note when a resource falls idle, for the purge. */
void
res_touch(struct dlm_res *r)
{
	r->idle_since_ms = res_in_use(r) ? 0 : now_ms();
}

void
res_free(struct dlm_res *r)
{
	LIST_REMOVE(r, hash_entry);
	r->dom->nres--;
	free(r);
}

/* Names are often text: print them so when they are, else in hex. */
const char *
name_printable(const uint8_t *name, size_t len)
{
	static char buf[2 * DLM_NAME_MAX + 1];
	size_t i;

	len = len < DLM_NAME_MAX ? len : DLM_NAME_MAX;
	for (i = 0; i < len; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			break;
	if (i == len) {
		memcpy(buf, name, len);
		buf[len] = '\0';
		return buf;
	}
	for (i = 0; i < len; i++)
		snprintf(buf + 2 * i, 3, "%02x", name[i]);
	return buf;
}

const char *
res_printable(const struct dlm_res *r)
{
	return name_printable(r->name, r->namelen);
}

#define COOKIE_BUCKET(c)	((c) % DLM_HASH_BUCKETS)

struct dlm_lock *
lock_new(struct dlm_res *r, uint64_t cookie, unsigned node)
{
	struct dlm_lock *lk = xcalloc(1, sizeof(*lk));

	lk->res = r;
	lk->cookie = cookie;
	lk->node = (uint8_t)node;
	lk->mode = DLM_IV;
	lk->convert_mode = DLM_IV;
	lk->highest_blocked = DLM_IV;
	lk->queue = Q_NONE;
	LIST_INSERT_HEAD(&r->dom->lock_hash[COOKIE_BUCKET(cookie)], lk, hash_entry);
	r->idle_since_ms = 0;
	return lk;
}

struct dlm_lock *
lock_find(struct dlm_domain *d, uint64_t cookie)
{
	struct dlm_lock *lk;

	LIST_FOREACH(lk, &d->lock_hash[COOKIE_BUCKET(cookie)], hash_entry)
		if (lk->cookie == cookie)
			return lk;
	return NULL;
}

/* Off every list; the caller has taken it out of its queue. */
void
lock_free(struct dlm_lock *lk)
{
	struct dlm_domain *d = lk->res->dom;

	if (lk->queue != Q_NONE)
		grant_remove(lk->res, lk);
	if (lk->in_asts)
		TAILQ_REMOVE(&d->asts, lk, ast_entry);
	if (lk->owner != NULL) {
		TAILQ_REMOVE(&lk->owner->locks, lk, own_entry);
		TAILQ_REMOVE(&lk->res->local, lk, local_entry);
		if (lk->owner->releasing && TAILQ_EMPTY(&lk->owner->locks))
			domain_reap_later(d);
	}
	LIST_REMOVE(lk, hash_entry);
	free(lk->reply_req);
	res_touch(lk->res);
	free(lk);
}

struct dlm_dirent *
dir_find(struct dlm_domain *d, const uint8_t *name, size_t len)
{
	struct dlm_dirent *e;

	LIST_FOREACH(e, &d->dir_hash[BUCKET(name, len)], entry)
		if (e->namelen == len && memcmp(e->name, name, len) == 0)
			return e;
	return NULL;
}

void
dir_set(struct dlm_domain *d, const uint8_t *name, size_t len, unsigned master)
{
	struct dlm_dirent *e;

	if ((e = dir_find(d, name, len)) == NULL) {
		e = xcalloc(1, sizeof(*e));
		memcpy(e->name, name, len);
		e->namelen = len;
		LIST_INSERT_HEAD(&d->dir_hash[BUCKET(name, len)], e, entry);
		d->ndirents++;
	}
	e->master = (uint8_t)master;
}

void
dir_drop(struct dlm_domain *d, const uint8_t *name, size_t len)
{
	struct dlm_dirent *e;

	if ((e = dir_find(d, name, len)) == NULL)
		return;
	LIST_REMOVE(e, entry);
	d->ndirents--;
	free(e);
}

void
dir_clear(struct dlm_domain *d)
{
	struct dlm_dirent *e;
	size_t b;

	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		while ((e = LIST_FIRST(&d->dir_hash[b])) != NULL) {
			LIST_REMOVE(e, entry);
			free(e);
		}
	d->ndirents = 0;
}

/* ---------------------------------------------------------- purge */

struct purge_ctx {
	uint8_t		name[DLM_NAME_MAX];
	size_t		namelen;
};

static void
dir_dropped(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct purge_ctx *p = arg;
	struct dlm_res *r;

	(void)rep;
	(void)err;
	/* Whatever the answer, the directory no longer sends anyone here:
	 * it forgot us, or it died (recovery rebuilds from the masters). */
	if (d != NULL && (r = res_find(d, p->name, p->namelen)) != NULL &&
	    r->migrating == 1) {
		r->migrating = 0;
		if (!res_in_use(r)) {
			res_free(r);
		} else {
			/* A local lock came meanwhile: we are no longer its
			 * master, so ask the directory like anybody else. */
			r->master = DLM_NODE_NONE;
			res_master_known(r);
		}
	}
	free(p);
}

static void
res_purge(struct dlm_res *r)
{
	struct dlm_domain *d = r->dom;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct purge_ctx *p;

	if (r->master != d->dlmd->local_node) {
		res_free(r);
		return;
	}
	lvb_forget(r);
	if (d->directory == d->dlmd->local_node) {
		dir_drop(d, r->name, r->namelen);
		res_free(r);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	memcpy(p->name, r->name, r->namelen);
	p->namelen = r->namelen;
	m.name.data = r->name;
	m.name.len = r->namelen;
	m.master = d->dlmd->local_node;
	r->migrating = 1;
	wire_send(d, d->directory, WIRE_DIR_DROP, &m, dir_dropped, p);
}

static void
purge_scan(evutil_socket_t fd, short ev, void *arg)
{
	struct dlm_domain *d = arg;
	struct dlm_res *r, *next;
	uint64_t now = now_ms();
	size_t b;

	(void)fd;
	(void)ev;
	if (d->recovering || d->state != DS_JOINED)
		return;
	for (b = 0; b < DLM_HASH_BUCKETS; b++)
		for (r = LIST_FIRST(&d->res_hash[b]); r != NULL; r = next) {
			next = LIST_NEXT(r, hash_entry);
			if (r->idle_since_ms != 0 && !res_in_use(r) &&
			    now - r->idle_since_ms >= DLM_PURGE_MS)
				res_purge(r);
		}
}

void
domain_purge_start(struct dlm_domain *d)
{
	struct timeval tv = { PURGE_SCAN_MS / 1000, (PURGE_SCAN_MS % 1000) * 1000 };

	d->purge_ev = event_new(d->dlmd->base, -1, EV_PERSIST, purge_scan, d);
	if (d->purge_ev == NULL || event_add(d->purge_ev, &tv) == -1)
		fatalx("out of memory");
}
