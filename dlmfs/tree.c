/*
 * The tree's inodes: the root, a directory per domain, a file per lock.
 * A FUSE inode number is the node's address (the root's is FUSE_ROOT_ID);
 * st_ino is a counter, never reused. A removed node lives until the
 * kernel forgets it and dlmd answered every request naming it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlmfs.h"
#include "util.h"

void
tree_init(void)
{
	size_t i;

	TAILQ_INIT(&dfs->nodes);
	TAILQ_INIT(&dfs->doms);
	TAILQ_INIT(&dfs->reqs);
	for (i = 0; i < LOCK_HASH; i++)
		LIST_INIT(&dfs->hash[i]);
	dfs->root.kind = N_ROOT;
	dfs->root.ino = dfs->next_ino = FUSE_ROOT_ID;
	dfs->root.mode = 0755;
	dfs->root.uid = geteuid();
	dfs->root.gid = getegid();
	clock_gettime(CLOCK_REALTIME, &dfs->root.mtime);
	dfs->root.atime = dfs->root.ctime = dfs->root.mtime;
}

/* Frees every node and open file; the requests are answered already. */
void
tree_free(void)
{
	struct dlmfs_node *n;
	struct dlmfs_lock *lk;
	struct dlmfs_fh *fh;

	while ((n = TAILQ_FIRST(&dfs->nodes)) != NULL) {
		if ((lk = as_lock(n)) != NULL) {
			while ((fh = TAILQ_FIRST(&lk->fhs)) != NULL) {
				TAILQ_REMOVE(&lk->fhs, fh, entry);
				if (fh->ph != NULL)
					fuse_pollhandle_destroy(fh->ph);
				free(fh);
			}
		}
		TAILQ_REMOVE(&dfs->nodes, n, all);
		free(n);
	}
}

static void
node_init(struct dlmfs_node *n, enum node_kind kind, mode_t mode, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	n->kind = kind;
	n->ino = ++dfs->next_ino;
	n->mode = mode & 07777;
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	clock_gettime(CLOCK_REALTIME, &n->mtime);
	n->atime = n->ctime = n->mtime;
	TAILQ_INSERT_TAIL(&dfs->nodes, n, all);
}

struct dlmfs_node *
node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &dfs->root : (struct dlmfs_node *)(uintptr_t)ino;
}

static fuse_ino_t
node_ino(struct dlmfs_node *n)
{
	return n == &dfs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

struct dlmfs_dom *
as_dom(struct dlmfs_node *n)
{
	return n->kind == N_DOMAIN ? (struct dlmfs_dom *)n : NULL;
}

struct dlmfs_lock *
as_lock(struct dlmfs_node *n)
{
	return n->kind == N_LOCK ? (struct dlmfs_lock *)n : NULL;
}

void
node_maybe_free(struct dlmfs_node *n)
{
	if (!n->removed || n->nlookup > 0)
		return;
	if (n->kind == N_DOMAIN && ((struct dlmfs_dom *)n)->inflight > 0)
		return;
	if (n->kind == N_LOCK && ((struct dlmfs_lock *)n)->inflight > 0)
		return;
	TAILQ_REMOVE(&dfs->nodes, n, all);
	free(n);
}

void
node_forget(fuse_ino_t ino, uint64_t nlookup)
{
	struct dlmfs_node *n = node_of(ino);

	if (n == &dfs->root)
		return;
	n->nlookup -= nlookup < n->nlookup ? nlookup : n->nlookup;
	node_maybe_free(n);
}

void
node_stat(const struct dlmfs_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	st->st_blksize = 4096;
	if (n->kind == N_LOCK) {
		st->st_mode = S_IFREG | n->mode;
		st->st_nlink = n->removed ? 0 : 1;
		st->st_size = LVB_LEN;
	} else {
		st->st_mode = S_IFDIR | n->mode;
		st->st_nlink = n->removed ? 0 : 2;
	}
}

void
node_entry_param(struct dlmfs_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	node_stat(n, &e->attr);
	e->ino = node_ino(n);
	/* Other processes and nodes change the tree: cache nothing. */
	e->attr_timeout = 0;
	e->entry_timeout = 0;
}

void
node_reply_entry(fuse_req_t req, struct dlmfs_node *n)
{
	struct fuse_entry_param e;

	node_entry_param(n, &e);
	if (fuse_reply_entry(req, &e) == 0)
		n->nlookup++;
}

struct dlmfs_dom *
dom_find(const char *name)
{
	struct dlmfs_dom *dom;

	TAILQ_FOREACH(dom, &dfs->doms, entry)
		if (strcmp(dom->name, name) == 0)
			return dom;
	return NULL;
}

struct dlmfs_dom *
dom_new(const char *name, mode_t mode, fuse_req_t req)
{
	struct dlmfs_dom *dom;

	dom = xcalloc(1, sizeof(*dom));
	node_init(&dom->node, N_DOMAIN, mode, req);
	strcpy(dom->name, name);
	dom->state = DOM_JOINING;
	TAILQ_INIT(&dom->mkdirs);
	TAILQ_INIT(&dom->locks);
	TAILQ_INSERT_TAIL(&dfs->doms, dom, entry);
	return dom;
}

void
dom_remove(struct dlmfs_dom *dom)
{
	TAILQ_REMOVE(&dfs->doms, dom, entry);
	dom->node.removed = 1;
	node_maybe_free(&dom->node);
}

struct dlmfs_lock *
lockfile_find(struct dlmfs_dom *dom, const char *name)
{
	struct dlmfs_lock *lk;

	TAILQ_FOREACH(lk, &dom->locks, entry)
		if (strcmp(lk->name, name) == 0)
			return lk;
	return NULL;
}

/* The lock file an AST or BAST is for: its `user` is the file's st_ino. */
struct dlmfs_lock *
lockfile_by_user(uint64_t user)
{
	struct dlmfs_lock *lk;

	LIST_FOREACH(lk, &dfs->hash[user % LOCK_HASH], hash)
		if (lk->node.ino == user)
			return lk;
	return NULL;
}

struct dlmfs_lock *
lockfile_new(struct dlmfs_dom *dom, const char *name, mode_t mode, fuse_req_t req)
{
	struct dlmfs_lock *lk;

	lk = xcalloc(1, sizeof(*lk));
	node_init(&lk->node, N_LOCK, mode, req);
	lk->dom = dom;
	strcpy(lk->name, name);
	lk->level = lk->requested = LVL_IV;
	lk->blocking = LVL_NL;
	/* A new resource's LVB is zeroes, and valid. */
	lk->lvb_valid = 1;
	TAILQ_INIT(&lk->waiters);
	TAILQ_INIT(&lk->fhs);
	TAILQ_INSERT_TAIL(&dom->locks, lk, entry);
	LIST_INSERT_HEAD(&dfs->hash[lk->node.ino % LOCK_HASH], lk, hash);
	return lk;
}

/* The lock left its domain: answer the unlink that removed it. */
void
lockfile_remove(struct dlmfs_lock *lk)
{
	TAILQ_REMOVE(&lk->dom->locks, lk, entry);
	LIST_REMOVE(lk, hash);
	lk->dom = NULL;
	lk->node.removed = 1;
	if (lk->unlink != NULL) {
		fuse_reply_err(lk->unlink, 0);
		lk->unlink = NULL;
	}
	node_maybe_free(&lk->node);
}

/*
 * Parked requests. The interrupt callback only marks them: it may run
 * inside fuse_req_interrupt_func, where replying would free the request
 * under libfuse's feet.
 */
static void
req_interrupted(fuse_req_t req, void *arg)
{
	struct dlmfs_req *r = arg;

	(void)req;
	r->interrupted = 1;
	event_active(dfs->interrupted_ev, 0, 0);
}

struct dlmfs_req *
req_park(fuse_req_t req, struct reqq *q)
{
	struct dlmfs_req *r;

	r = xcalloc(1, sizeof(*r));
	r->req = req;
	r->queue = q;
	TAILQ_INSERT_TAIL(q, r, entry);
	TAILQ_INSERT_TAIL(&dfs->reqs, r, all);
	fuse_req_interrupt_func(req, req_interrupted, r);
	return r;
}

/* Forget a parked request once it is answered. */
void
req_done(struct dlmfs_req *r)
{
	TAILQ_REMOVE(r->queue, r, entry);
	TAILQ_REMOVE(&dfs->reqs, r, all);
	free(r);
}

void
req_fail(struct dlmfs_req *r, int err)
{
	fuse_reply_err(r->req, err);
	req_done(r);
}

/* Answer the requests whose callers took a signal, and cancel what they wanted. */
void
req_answer_interrupted(evutil_socket_t fd, short ev, void *arg)
{
	struct dlmfs_req *r;
	struct dlmfs_lock *lk;

	(void)fd;
	(void)ev;
	(void)arg;
	for (;;) {
		TAILQ_FOREACH(r, &dfs->reqs, all)
			if (r->interrupted)
				break;
		if (r == NULL)
			return;
		lk = r->lk;
		req_fail(r, EINTR);
		if (lk != NULL)
			cache_process(lk);
	}
}
