/*
 * Region references and node pins, each held by someone. A client holds
 * through its connection to nmd.sock, and the hold dies with it, as
 * ocfs2_hb_ctl's SEM_UNDO references die with their process.
 *
 * A restart of nmd must not end what its clients hold: fsd keeps the
 * connection that holds its volume's region for the whole mount and
 * never dials again. So every hold is recorded with the holder's pid
 * (SO_PEERCRED) and start time; a restarted nmd gives the holds of a
 * process still alive to a process holder, which keeps them while that
 * process lives (a pidfd watched in the event loop). The process takes
 * them over again by holding the same item on a new connection (no
 * second count), or releases them from one. Pins are re-taken by hbd and
 * netd as soon as they reconnect, so a process holder's pins bridge only
 * that reconnection: they lapse after NM_REPIN_GRACE_MS.
 */
#include <sys/pidfd.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ipc.h"
#include "log.h"
#include "nmd.h"
#include "util.h"

#define NM_REPIN_GRACE_MS	10000	/* hbd and netd redial every second */

static const char *const kind_names[] = {
	[NM_HOLD_REGION] = "region",
	[NM_HOLD_PIN_HEARTBEAT] = "heartbeat",
	[NM_HOLD_PIN_LINK] = "link",
};

const char *
nm_hold_kind_name(enum nm_hold_kind k)
{
	return kind_names[k];
}

int
nm_hold_kind_parse(const char *s, enum nm_hold_kind *k)
{
	size_t i;

	for (i = 0; i < nitems(kind_names); i++) {
		if (strcmp(s, kind_names[i]) == 0) {
			*k = (enum nm_hold_kind)i;
			return 0;
		}
	}
	return -1;
}

static struct nm_item *
held_item(struct nmd *nm, enum nm_hold_kind kind, const char *name)
{
	struct nm_item *g = kind == NM_HOLD_REGION ? nm_hb_group(nm) : nm_node_group(nm);

	return g != NULL ? nm_item_child(g, name) : NULL;
}

/* The last reference on a region removes it. */
void
nm_region_unref(struct nmd *nm, struct nm_item *it, int persistent)
{
	struct nm_region *r = it->obj;

	if (persistent && r->persistent_refs > 0)
		r->persistent_refs--;
	if (r->refs > 0 && --r->refs == 0)
		nm_rmdir(nm, it);
	nm_state_changed(nm);
}

/* Count a hold on its item (delta +1) or uncount it (-1). */
static void
count_hold(struct nmd *nm, enum nm_hold_kind kind, const char *name, int delta)
{
	struct nm_item *it = held_item(nm, kind, name);
	struct nm_node *n;
	unsigned *pins;

	if (it == NULL)
		return;
	if (kind == NM_HOLD_REGION) {
		if (delta > 0)
			((struct nm_region *)it->obj)->refs++;
		else
			nm_region_unref(nm, it, 0);
		return;
	}
	n = it->obj;
	pins = kind == NM_HOLD_PIN_HEARTBEAT ? &n->pins_heartbeat : &n->pins_link;
	if (delta > 0)
		(*pins)++;
	else if (*pins > 0)
		(*pins)--;
}

static struct nm_hold *
hold_find(struct nm_holder *hd, enum nm_hold_kind kind, const char *name)
{
	struct nm_hold *h;

	LIST_FOREACH(h, &hd->holds, entry)
		if (h->kind == kind && strcmp(h->name, name) == 0)
			return h;
	return NULL;
}

static struct nm_holder *
holder_new(struct nmd *nm, int pid, uint64_t starttime)
{
	struct nm_holder *hd = xcalloc(1, sizeof(*hd));

	hd->nm = nm;
	hd->pid = pid;
	hd->starttime = starttime;
	hd->pidfd = -1;
	LIST_INIT(&hd->holds);
	LIST_INSERT_HEAD(&nm->holders, hd, entry);
	return hd;
}

static void
holder_free(struct nm_holder *hd)
{
	struct nm_hold *h;

	while ((h = LIST_FIRST(&hd->holds)) != NULL) {
		LIST_REMOVE(h, entry);
		free(h);
	}
	if (hd->exited != NULL)
		event_free(hd->exited);
	if (hd->pidfd != -1)
		close(hd->pidfd);
	LIST_REMOVE(hd, entry);
	free(hd);
}

/* Uncount and free every hold of a holder, then the holder. */
static void
holder_release(struct nmd *nm, struct nm_holder *hd)
{
	struct nm_hold *h;

	nm_state_batch_begin(nm);
	while ((h = LIST_FIRST(&hd->holds)) != NULL) {
		LIST_REMOVE(h, entry);
		count_hold(nm, h->kind, h->name, -1);
		free(h);
	}
	holder_free(hd);
	nm_state_changed(nm);
	nm_state_batch_end(nm);
}

struct nm_holder *
nm_holder_of_conn(struct nmd *nm, struct ipc_conn *c)
{
	struct nm_holder *hd = ipc_conn_data(c);

	if (hd == NULL) {
		hd = holder_new(nm, (int)ipc_conn_pid(c), proc_starttime((int)ipc_conn_pid(c)));
		hd->conn = c;
		ipc_conn_set_data(c, hd);
	}
	return hd;
}

void
nm_holder_conn_closed(struct nmd *nm, struct ipc_conn *c)
{
	struct nm_holder *hd = ipc_conn_data(c);

	if (hd != NULL)
		holder_release(nm, hd);
}

/* The process holder standing for hd's process, which holds (kind, name). */
static struct nm_holder *
process_holder(struct nmd *nm, const struct nm_holder *hd, enum nm_hold_kind kind,
    const char *name, struct nm_hold **hold)
{
	struct nm_holder *p;

	LIST_FOREACH(p, &nm->holders, entry) {
		if (p->conn != NULL || p->pid != hd->pid ||
		    (p->starttime != 0 && hd->starttime != 0 && p->starttime != hd->starttime))
			continue;
		if ((*hold = hold_find(p, kind, name)) != NULL)
			return p;
	}
	return NULL;
}

void
nm_hold_take(struct nmd *nm, struct nm_holder *hd, enum nm_hold_kind kind, const char *name)
{
	struct nm_holder *p;
	struct nm_hold *h;

	if ((p = process_holder(nm, hd, kind, name, &h)) != NULL) {
		/* Taken again after our restart: the hold moves, the count stays. */
		LIST_REMOVE(h, entry);
		log_info("pid %d holds %s %s again", hd->pid, kind_names[kind], name);
		if (LIST_EMPTY(&p->holds))
			holder_free(p);
	} else {
		h = xcalloc(1, sizeof(*h));
		h->kind = kind;
		snprintf(h->name, sizeof(h->name), "%s", name);
		count_hold(nm, kind, name, +1);
	}
	LIST_INSERT_HEAD(&hd->holds, h, entry);
	nm_state_changed(nm);
}

/* hd's own hold goes first, else one its process held before our restart. */
int
nm_hold_drop(struct nmd *nm, struct nm_holder *hd, enum nm_hold_kind kind, const char *name)
{
	struct nm_holder *p = hd;
	struct nm_hold *h;

	if ((h = hold_find(hd, kind, name)) == NULL &&
	    (p = process_holder(nm, hd, kind, name, &h)) == NULL)
		return ENOENT;
	LIST_REMOVE(h, entry);
	free(h);
	if (p != hd && LIST_EMPTY(&p->holds))
		holder_free(p);
	nm_state_batch_begin(nm);
	count_hold(nm, kind, name, -1);
	nm_state_changed(nm);
	nm_state_batch_end(nm);
	return 0;
}

static void
process_exited(evutil_socket_t fd, short ev, void *arg)
{
	struct nm_holder *hd = arg;
	struct nm_hold *h;

	(void)fd;
	(void)ev;
	LIST_FOREACH(h, &hd->holds, entry)
		log_info("pid %d exited: its %s hold on %s ends", hd->pid,
		    kind_names[h->kind], h->name);
	holder_release(hd->nm, hd);
}

/*
 * A hold of the state file: kept by a process holder if that very
 * process still runs, counted on its item. 0, or -1 when the holder or
 * the item is gone.
 */
int
nm_hold_restore(struct nmd *nm, enum nm_hold_kind kind, const char *name, int pid,
    uint64_t starttime)
{
	struct nm_holder *hd;
	struct nm_hold *h;
	uint64_t now;
	int pidfd;

	if (held_item(nm, kind, name) == NULL)
		return -1;
	/* The pidfd pins the process: checked after opening, the start time is its. */
	if ((pidfd = pidfd_open(pid, 0)) == -1) {
		if (errno != ESRCH)
			log_warn("pidfd_open %d", pid);
		return -1;
	}
	now = proc_starttime(pid);
	if (starttime != 0 && now != starttime) {
		close(pidfd);
		return -1;
	}
	LIST_FOREACH(hd, &nm->holders, entry)
		if (hd->conn == NULL && hd->pid == pid)
			break;
	if (hd == NULL) {
		hd = holder_new(nm, pid, starttime);
		hd->pidfd = pidfd;
		if ((hd->exited = event_new(nm->base, pidfd, EV_READ, process_exited, hd)) == NULL ||
		    event_add(hd->exited, NULL) == -1)
			fatalx("cannot watch pid %d", pid);
	} else {
		close(pidfd);
	}
	h = xcalloc(1, sizeof(*h));
	h->kind = kind;
	snprintf(h->name, sizeof(h->name), "%s", name);
	LIST_INSERT_HEAD(&hd->holds, h, entry);
	count_hold(nm, kind, name, +1);
	return 0;
}

/* Pins not taken again in time: their holder no longer means them. */
static void
repin_grace_over(evutil_socket_t fd, short ev, void *arg)
{
	struct nmd *nm = arg;
	struct nm_holder *hd, *next;
	struct nm_hold *h, *hn;

	(void)fd;
	(void)ev;
	nm_state_batch_begin(nm);
	for (hd = LIST_FIRST(&nm->holders); hd != NULL; hd = next) {
		next = LIST_NEXT(hd, entry);
		if (hd->conn != NULL)
			continue;
		for (h = LIST_FIRST(&hd->holds); h != NULL; h = hn) {
			hn = LIST_NEXT(h, entry);
			if (h->kind == NM_HOLD_REGION)
				continue;
			log_info("pid %d did not pin node %s (%s) again: unpinned",
			    hd->pid, h->name, kind_names[h->kind]);
			LIST_REMOVE(h, entry);
			count_hold(nm, h->kind, h->name, -1);
			free(h);
		}
		if (LIST_EMPTY(&hd->holds))
			holder_free(hd);
	}
	nm_state_changed(nm);
	nm_state_batch_end(nm);
}

void
nm_holds_restored(struct nmd *nm)
{
	struct timeval tv = { NM_REPIN_GRACE_MS / 1000, (NM_REPIN_GRACE_MS % 1000) * 1000 };

	if (LIST_EMPTY(&nm->holders))
		return;
	if ((nm->repin_grace = evtimer_new(nm->base, repin_grace_over, nm)) == NULL ||
	    evtimer_add(nm->repin_grace, &tv) == -1)
		fatalx("cannot arm the pin grace timer");
}

/* At exit: the process holders (connections' go with the server). */
void
nm_holds_free(struct nmd *nm)
{
	struct nm_holder *hd;

	while ((hd = LIST_FIRST(&nm->holders)) != NULL)
		holder_free(hd);
	if (nm->repin_grace != NULL)
		event_free(nm->repin_grace);
}
