/*
 * Value blocks that outlive their master. o2dlm loses (zeroes) an LVB
 * whose master dies; a counter kept in one then goes back to zero. Here
 * every acknowledged write-back has a copy on a second node:
 *
 *  - a writer on another node than the master keeps its own copy once
 *    the master has acknowledged the write (and, until then, its
 *    request itself stands for the value: recovery re-sends it);
 *  - a writer on the master's node has one other member keep a copy
 *    (LVB_BACKUP) before the master acknowledges the write. A convert
 *    down applies at once, so the locks it unblocks are granted (with the
 *    new value) without waiting for the copy; only the writer's AST waits
 *    (ast_held): until it has it, nothing was acknowledged, and a master
 *    that dies takes the writer's node with it, or leaves the value with
 *    whoever was granted it. An unlock waits for the copy before it
 *    applies: nobody else holds the value after it.
 *
 * Every write is numbered (lvb_version, as the master counts them), so
 * recovery takes the newest copy. A master that purges a resource tells
 * the nodes that keep copies to drop them (LVB_FORGET).
 */
#include <stdlib.h>
#include <string.h>

#include "dlmd.h"
#include "log.h"
#include "util.h"

#define BIT_SET(map, n)		((map)[(n) / 8] |= (uint8_t)(1u << ((n) % 8)))
#define BIT_ISSET(map, n)	((map)[(n) / 8] & (1u << ((n) % 8)))

/* An EX holder's new value, numbered as the master will number it. */
void
lvb_write(struct dlm_lock *lk, const uint8_t *data, size_t len)
{
	memset(lk->lvb, 0, DLM_LVB_LEN);
	memcpy(lk->lvb, data, len);
	lk->lvb_version++;
	lk->lvb_put = 1;
	lk->bk_state = 0;
}

struct backup_ctx {
	uint64_t	cookie;
};

static void
backup_done(struct dlm_domain *d, int err, const Dlmwire__Msg *rep, void *arg)
{
	struct backup_ctx *bc = arg;
	struct dlm_lock *lk;

	(void)rep;
	if (d != NULL && (lk = lock_find(d, bc->cookie)) != NULL && lk->bk_state == 1) {
		if (err != 0)
			log_debug("domain %s: no backup of the value block of %s (%s)",
			    d->logname, res_printable(lk->res), strerror(err));
		lk->bk_state = 2;
		if (lk->ast_held)
			ast_release(lk);
		else
			lock_drive(lk);
	}
	free(bc);
}

/*
 * A write-back by a client of the master's own node: 1 while another
 * member is asked to keep a copy and has not answered. An unlock waits
 * for that before it applies.
 */
int
lvb_backup_first(struct dlm_lock *lk)
{
	struct dlm_res *r = lk->res;
	struct dlm_domain *d = r->dom;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	struct backup_ctx *bc;
	unsigned n;

	if (!lk->lvb_put || lk->mode != DLM_EX || lk->bk_state == 2)
		return 0;
	if (lk->bk_state == 1)
		return 1;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (d->members[n] && n != d->dlmd->local_node)
			break;
	if (n == DLM_MAX_NODES)
		return 0;
	m.name.data = r->name;
	m.name.len = r->namelen;
	m.lvb.data = lk->lvb;
	m.lvb.len = DLM_LVB_LEN;
	m.lvb_version = lk->lvb_version;
	bc = xcalloc(1, sizeof(*bc));
	bc->cookie = lk->cookie;
	lk->bk_state = 1;
	BIT_SET(r->bk_holders, n);
	wire_send(d, n, WIRE_LVB_BACKUP, &m, backup_done, bc);
	return 1;
}

/* A convert that writes the value back: its AST waits for the copy, not the convert. */
void
lvb_backup_hold_ast(struct dlm_lock *lk)
{
	if (lvb_backup_first(lk))
		lk->ast_held = 1;
}

/* The master applied a write-back of `writer`, which keeps a copy. */
void
lvb_applied(struct dlm_res *r, unsigned writer)
{
	if (writer != r->dom->dlmd->local_node)
		BIT_SET(r->bk_holders, writer);
}

/* The master acknowledged our write-back: keep the value for recovery. */
void
lvb_keep_copy(struct dlm_lock *lk)
{
	struct dlm_res *r = lk->res;

	memcpy(r->bk_lvb, lk->lvb, DLM_LVB_LEN);
	r->bk_version = lk->lvb_version;
	r->bk_master = r->master;
	r->has_bk = 1;
}

/* A purge at the master: the copies kept elsewhere go too. */
void
lvb_forget(struct dlm_res *r)
{
	struct dlm_domain *d = r->dom;
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	unsigned n;

	m.name.data = r->name;
	m.name.len = r->namelen;
	for (n = 0; n < DLM_MAX_NODES; n++)
		if (BIT_ISSET(r->bk_holders, n) && d->members[n] &&
		    n != d->dlmd->local_node)
			wire_send(d, n, WIRE_LVB_FORGET, &m, NULL, NULL);
	memset(r->bk_holders, 0, sizeof(r->bk_holders));
}

static void
h_lvb_backup(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;

	if (m->name.len == 0 || m->name.len > DLM_NAME_MAX ||
	    m->lvb.len != DLM_LVB_LEN) {
		rep->status = WS_BAD;
		return;
	}
	r = res_get(d, m->name.data, m->name.len);
	if (!r->has_bk || m->lvb_version >= r->bk_version) {
		memcpy(r->bk_lvb, m->lvb.data, DLM_LVB_LEN);
		r->bk_version = m->lvb_version;
		r->bk_master = (uint8_t)from;
		r->has_bk = 1;
	}
	res_touch(r);
	rep->status = WS_OK;
}

static void
h_lvb_forget(struct dlm_domain *d, unsigned from, const Dlmwire__Msg *m,
    Dlmwire__Msg *rep)
{
	struct dlm_res *r;

	rep->status = WS_OK;
	if (m->name.len == 0 || m->name.len > DLM_NAME_MAX ||
	    (r = res_find(d, m->name.data, m->name.len)) == NULL)
		return;
	if (r->has_bk && r->bk_master == from) {
		r->has_bk = 0;
		res_touch(r);
	}
}

static const struct wire_handler lvb_handlers[] = {
	{ WIRE_LVB_BACKUP, h_lvb_backup },
	{ WIRE_LVB_FORGET, h_lvb_forget },
};

void
lvb_handlers_init(void)
{
	wire_register_handlers(lvb_handlers, nitems(lvb_handlers));
}
