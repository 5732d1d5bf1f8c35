/*
 * One heartbeat region: its device, its I/O thread and its iterations.
 *
 * Every interval the event loop hands the thread one job: read all
 * slots in one aligned O_DIRECT read, then write our own block. The
 * thread does the I/O and pokes a pipe; the event loop then checks our
 * slot, evaluates every other slot and re-arms the write timeout. The
 * I/O never runs on the event loop, so a disk that hangs stalls only
 * the thread, and the write timeout still fires and fences us.
 *
 * Before our first write we read our slot HB_PROBE_SAMPLES times: if it
 * changes, another process heartbeats with our node number, and we
 * refuse the region rather than fight over the slot (the kernel only
 * finds out after both have written, and fences).
 */
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/ioprio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbd.h"
#include "hblease.h"
#include "log.h"
#include "util.h"

#define DIO_ALIGN	4096

static void	region_tick(evutil_socket_t, short, void *);
static void	region_io_done(evutil_socket_t, short, void *);
static void	region_write_timeout(evutil_socket_t, short, void *);

/* Full transfer at an offset; a short one is EIO. Returns 0 or an errno. */
static int
xfer(int fd, int write, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write ? pwrite(fd, (char *)buf + done, len - done, off + (off_t)done) :
		    pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno;
		if (n == 0)
			return EIO;
		done += (size_t)n;
	}
	return 0;
}

/*
 * The heartbeat thread does nothing but wait for a job and do its I/O,
 * in the real-time I/O class so that a busy disk queue delays it least
 * (ocfs2_hb_ctl -P does the same for the kernel's thread).
 */
static void *
io_thread(void *arg)
{
	struct hb_region *r = arg;
	struct hb_io *io = &r->io;
	enum hb_io_job job;
	uint64_t t0, issued;
	int rerr, werr;
	char one = 1;

	if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
	    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 0)) == -1)
		log_debug("region %s: real-time I/O priority: %s", r->name,
		    strerror(errno));
	for (;;) {
		pthread_mutex_lock(&io->mu);
		while (io->job == IO_NONE)
			pthread_cond_wait(&io->cv, &io->mu);
		job = io->job;
		pthread_mutex_unlock(&io->mu);
		if (job == IO_EXIT)
			break;

		rerr = werr = 0;
		if (job == IO_READ || job == IO_ITERATE)
			rerr = xfer(r->fd, 0, r->rbuf, (size_t)io->nslots * r->block_bytes,
			    (off_t)(r->start_block * r->block_bytes));
		t0 = mono_us();
		issued = hblease_now_us();
		if ((job == IO_ITERATE || job == IO_LEAVE) && !atomic_load(&io->no_writes))
			werr = xfer(r->fd, 1, r->wbuf, r->block_bytes,
			    (off_t)((r->start_block + r->hbd->local_node) * r->block_bytes));

		pthread_mutex_lock(&io->mu);
		io->rerr = rerr;
		io->werr = werr;
		io->write_us = mono_us() - t0;
		io->issued_us = issued;
		io->done_us = hblease_now_us();
		io->done = job;
		io->job = IO_NONE;
		pthread_mutex_unlock(&io->mu);
		if (write(io->pipe[1], &one, 1) == -1)
			log_warn("region %s: waking the event loop", r->name);
	}
	return NULL;
}

static void
io_submit(struct hb_region *r, enum hb_io_job job, unsigned nslots)
{
	pthread_mutex_lock(&r->io.mu);
	r->io.job = job;
	r->io.submitted_us = hblease_now_us();
	r->io.nslots = nslots;
	r->io.busy = job != IO_EXIT;
	pthread_cond_signal(&r->io.cv);
	pthread_mutex_unlock(&r->io.mu);
}

static int
io_busy(struct hb_region *r)
{
	int busy;

	pthread_mutex_lock(&r->io.mu);
	busy = r->io.busy;
	pthread_mutex_unlock(&r->io.mu);
	return busy;
}

struct hb_region *
region_find(struct hbd *h, const char *name)
{
	struct hb_region *r;

	TAILQ_FOREACH(r, &h->regions, entry)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

unsigned
region_nrunning(struct hbd *h)
{
	struct hb_region *r;
	unsigned n = 0;

	TAILQ_FOREACH(r, &h->regions, entry)
		if (r->state != RS_FAILED && r->state != RS_STOPPING)
			n++;
	return n;
}

static uint64_t
random_generation(void)
{
	uint64_t g = 0;

	while (g == 0)
		if (getrandom(&g, sizeof(g), 0) != sizeof(g))
			fatal("getrandom");
	return g;
}

/* A new incarnation: peers see the old one die at their next read. */
void
region_new_generation(struct hb_region *r)
{
	r->generation = random_generation();
	lease_next_generation(r);
	log_warnx("region %s: heartbeating as a new incarnation, generation 0x%llx",
	    r->name, (unsigned long long)r->generation);
}

/* Each live slot of a region that stops leaves the membership. */
static void
drop_live_slots(struct hb_region *r)
{
	struct hb_verdict v = { .transition = HB_DOWN, .why = HB_WHY_REGION_STOPPED };
	unsigned n;

	for (n = 0; n < HB_MAX_NODES; n++) {
		if (!r->slots[n].live)
			continue;
		r->slots[n].live = 0;
		v.generation = r->slots[n].last_gen;
		member_slot(r->hbd, r, n, 0, &v, wall_ms());
	}
}

static void
region_release_io(struct hb_region *r)
{
	if (r->tick_ev != NULL)
		event_free(r->tick_ev);
	if (r->timeout_ev != NULL)
		event_free(r->timeout_ev);
	if (r->nego_ev != NULL)
		event_free(r->nego_ev);
	r->tick_ev = r->timeout_ev = r->nego_ev = NULL;
	if (r->io.started) {
		io_submit(r, IO_EXIT, 0);
		pthread_join(r->io.thread, NULL);
		r->io.started = 0;
	}
	if (r->done_ev != NULL)
		event_free(r->done_ev);
	r->done_ev = NULL;
	if (r->io.pipe[0] >= 0) {
		close(r->io.pipe[0]);
		close(r->io.pipe[1]);
		r->io.pipe[0] = r->io.pipe[1] = -1;
	}
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static void
region_free(struct hb_region *r)
{
	region_release_io(r);
	pthread_mutex_destroy(&r->io.mu);
	pthread_cond_destroy(&r->io.cv);
	free(r->rbuf);
	free(r->wbuf);
	free(r->dev);
	free(r);
}

/*
 * The region is gone from the membership: unlink it, and free it now if
 * its thread is idle, else when the thread's job completes (a hung
 * write may never complete; then the thread and this memory stay).
 */
static void
region_finish(struct hb_region *r, Hbd__RegionEventKind kind, const char *why)
{
	struct hbd *h = r->hbd;

	if (r->tick_ev != NULL)
		event_del(r->tick_ev);
	if (r->timeout_ev != NULL)
		event_del(r->timeout_ev);
	if (r->nego_ev != NULL)
		event_del(r->nego_ev);
	nego_region_stop(r);
	lease_region_drop(r);
	drop_live_slots(r);
	api_region_event(h, kind, r->name, why);
	if (kind != HBD__REGION_EVENT_KIND__REGION_FAILED) {
		TAILQ_REMOVE(&h->regions, r, entry);
		r->unlinked = 1;
		r->zombie = 1;
		nmd_set_pid(h, r->name, 0);
		member_recheck_all(h, NULL);
		if (!io_busy(r))
			region_free(r);
		else
			h->hung_regions++;
		return;
	}
	r->state = RS_FAILED;
	snprintf(r->why, sizeof(r->why), "%s", why);
	nmd_set_pid(h, r->name, 0);
	member_recheck_all(h, NULL);
	if (!io_busy(r))
		region_release_io(r);
	else
		r->zombie = 1;	/* release the thread once it is idle */
}

static void
region_fail(struct hb_region *r, const char *fmt, ...)
    __attribute__((__format__(printf, 2, 3)));

static void
region_fail(struct hb_region *r, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_err("region %s on %s failed: %s", r->name, r->dev, why);
	if (fence_if_used(r->hbd, r, USERS_WRITERS | USERS_LOCKS, why))
		return;
	region_finish(r, HBD__REGION_EVENT_KIND__REGION_FAILED, why);
}

static int
region_open(struct hb_region *r, char *why, size_t len)
{
	struct stat st;
	int ssz;

	r->fd = open(r->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (r->fd == -1 || fstat(r->fd, &st) == -1) {
		snprintf(why, len, "open %s: %s", r->dev, strerror(errno));
		return -1;
	}
	/* o2hb wants whole device sectors: anything else tears. */
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(r->fd, BLKSSZGET, &ssz) == -1) {
			snprintf(why, len, "%s: BLKSSZGET: %s", r->dev, strerror(errno));
			return -1;
		}
		if ((unsigned)ssz != r->block_bytes) {
			snprintf(why, len, "block_bytes %u is not the sector size %d of %s",
			    r->block_bytes, ssz, r->dev);
			return -1;
		}
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s is not a block device or an image file", r->dev);
		return -1;
	}
	return 0;
}

static struct hb_region *
region_new(struct hbd *h, const char *name, const char *dev,
    unsigned block_bytes, uint64_t start_block, unsigned blocks)
{
	struct hb_region *r = xcalloc(1, sizeof(*r));

	r->hbd = h;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->dev = xstrdup(dev);
	r->block_bytes = block_bytes;
	r->start_block = start_block;
	r->blocks = blocks;
	r->fd = -1;
	r->io.pipe[0] = r->io.pipe[1] = -1;
	r->lease_idx = CC_MAX_REGIONS;
	pthread_mutex_init(&r->io.mu, NULL);
	pthread_cond_init(&r->io.cv, NULL);
	TAILQ_INSERT_TAIL(&h->regions, r, entry);
	return r;
}

/* The device, the buffers, the events and the I/O thread; -1 with why. */
static int
region_setup(struct hb_region *r, char *why, size_t len)
{
	struct hbd *h = r->hbd;

	if (h->fenced) {
		snprintf(why, len, "this node is fenced (%s); o2ctl clear-fence first",
		    h->fence_reason);
		return -1;
	}
	if (h->local_node >= r->blocks) {
		snprintf(why, len, "local node %u has no slot among %u blocks",
		    h->local_node, r->blocks);
		return -1;
	}
	if (r->block_bytes < 512 || r->block_bytes > 4096 ||
	    (r->block_bytes & (r->block_bytes - 1))) {
		snprintf(why, len, "bad block_bytes %u", r->block_bytes);
		return -1;
	}
	if (region_open(r, why, len) == -1)
		return -1;
	if (posix_memalign((void **)&r->rbuf, DIO_ALIGN, (size_t)r->blocks * r->block_bytes) ||
	    posix_memalign((void **)&r->wbuf, DIO_ALIGN, r->block_bytes))
		fatalx("region %s: out of memory", r->name);
	if (pipe2(r->io.pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		fatal("pipe");
	r->done_ev = event_new(h->base, r->io.pipe[0], EV_READ | EV_PERSIST,
	    region_io_done, r);
	r->tick_ev = event_new(h->base, -1, EV_PERSIST, region_tick, r);
	r->timeout_ev = evtimer_new(h->base, region_write_timeout, r);
	r->nego_ev = evtimer_new(h->base, nego_timeout, r);
	if (r->done_ev == NULL || r->tick_ev == NULL || r->timeout_ev == NULL ||
	    r->nego_ev == NULL)
		fatalx("region %s: out of memory for events", r->name);
	if (pthread_create(&r->io.thread, NULL, io_thread, r) != 0)
		fatalx("region %s: cannot start its I/O thread", r->name);
	r->io.started = 1;
	return 0;
}

/* The first iteration at once, then one every interval. */
static void
region_go(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct timeval tv;

	tv.tv_sec = h->interval_ms / 1000;
	tv.tv_usec = (h->interval_ms % 1000) * 1000;
	event_add(r->done_ev, NULL);
	event_add(r->tick_ev, &tv);
	event_active(r->tick_ev, EV_TIMEOUT, 0);
	nego_region_start(r);
	nmd_set_pid(h, r->name, (int)getpid());
}

static struct hb_region *
region_refused(struct hb_region *r, const char *why)
{
	log_err("region %s on %s: not started: %s", r->name, r->dev, why);
	r->state = RS_FAILED;
	snprintf(r->why, sizeof(r->why), "%s", why);
	region_release_io(r);
	api_region_event(r->hbd, HBD__REGION_EVENT_KIND__REGION_FAILED, r->name, why);
	return r;
}

struct hb_region *
region_start(struct hbd *h, const char *name, const char *dev,
    unsigned block_bytes, uint64_t start_block, unsigned blocks)
{
	int first_global = h->global && region_nrunning(h) == 0;
	struct hb_region *r = region_new(h, name, dev, block_bytes, start_block, blocks);
	char why[256] = "";

	r->state = RS_PROBING;
	if (region_setup(r, why, sizeof(why)) == -1)
		return region_refused(r, why);
	r->generation = random_generation();
	r->probes_left = HB_PROBE_SAMPLES;
	hb_steady_init(&r->steady, first_global);
	lease_region_add(r);
	region_go(r);
	log_info("region %s on %s: heartbeating as node %u, generation 0x%llx, "
	    "slots at %llu x %u bytes, every %u ms, dead after %u", name, dev,
	    h->local_node, (unsigned long long)r->generation,
	    (unsigned long long)start_block, block_bytes, h->interval_ms,
	    h->dead_threshold);
	return r;
}

/*
 * A region an earlier hbd ran, as the same incarnation: no probing (the
 * slot is ours, and the first read checks that it still holds our
 * generation), steady at once (the others never saw us go), and the
 * sequence moved past anything the old hbd may have had in flight.
 */
struct hb_region *
region_resume(struct hbd *h, const struct hblease_region *e, unsigned idx)
{
	struct hb_region *r = region_new(h, e->name, e->dev, e->block_bytes,
	    e->start_block, e->blocks);
	char why[256] = "";

	r->state = RS_STEADY;
	r->lease_idx = idx;
	if (region_setup(r, why, sizeof(why)) == -1) {
		lease_region_drop(r);
		return region_refused(r, why);
	}
	r->generation = e->generation;
	r->resume_gen[0] = e->generation;
	r->resume_gen[1] = e->next_generation;
	r->pending.seq = e->seq + 1;
	r->resuming = r->resumed = 1;
	region_go(r);
	region_arm_timeouts(r);
	return r;
}

/* A node the earlier hbd saw live: live here too, until its slot says otherwise. */
void
region_restore_live(struct hb_region *r, unsigned node, uint64_t gen)
{
	struct hbd *h = r->hbd;
	struct hb_slot *s = &r->slots[node];

	memset(s, 0, sizeof(*s));
	s->num = node;
	s->live = 1;
	s->last_gen = gen;
	lease_set_live(r, node, gen);
	if (hb_member_slot(&h->members, node, 1, region_nrunning(h), h->global) == HB_UP) {
		h->member_gen[node] = gen;
		log_info("node %u is up as before this hbd started, generation 0x%llx",
		    node, (unsigned long long)gen);
	}
}

/* Slots to read: up to the highest configured, live or local node. */
static unsigned
slots_to_read(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	unsigned n, hi = h->local_node;

	if (!r->seeded)
		return r->blocks;	/* seed every slot, as o2hb_populate_slot_data */
	for (n = 0; n < HB_MAX_NODES && n < r->blocks; n++)
		if (h->configured[n] || r->slots[n].live)
			hi = n > hi ? n : hi;
	return hi + 1;
}

/* Never 0, and always moving: the wall clock's seconds while they do. */
static uint64_t
next_seq(struct hb_region *r)
{
	uint64_t now = (uint64_t)time(NULL);

	return now > r->pending.seq ? now : r->pending.seq + 1;
}

static void
region_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct hb_region *r = arg;
	struct hbd *h = r->hbd;
	struct hb_block b;

	(void)fd;
	(void)ev;
	if (r->state != RS_PROBING && r->state != RS_STARTING && r->state != RS_STEADY)
		return;
	if (io_busy(r)) {
		r->skipped++;
		if (!r->skip_logged)
			log_warnx("region %s: heartbeat I/O still in flight after %u ms, "
			    "skipping a sample", r->name, h->interval_ms);
		r->skip_logged = 1;
		return;
	}
	r->skip_logged = 0;
	r->tick_ms = wall_ms();
	if (r->state == RS_PROBING || (!r->seeded && !r->resuming)) {
		io_submit(r, IO_READ, slots_to_read(r));
		return;
	}
	memset(&b, 0, sizeof(b));
	b.seq = next_seq(r);
	b.node = (uint8_t)h->local_node;
	b.generation = r->generation;
	b.dead_ms = hbd_dead_ms(h);
	hb_block_encode(r->wbuf, r->block_bytes, &b);
	r->pending = b;		/* becomes `written` once the write completes */
	io_submit(r, IO_ITERATE, slots_to_read(r));
}

static void
sample_of(struct hb_region *r, unsigned n, struct hb_sample *s, struct hb_block *b)
{
	s->crc_ok = hb_block_decode(r->rbuf + (size_t)n * r->block_bytes,
	    r->block_bytes, b);
	s->seq = b->seq;
	s->generation = b->generation;
	s->dead_ms = b->dead_ms;
}

/*
 * o2hb_check_own_slot: after a write that completed, our slot must hold
 * exactly that block. Anything else is another writer with our number,
 * or a stale incarnation of us: we cannot prove we are alive, so fence.
 */
static int
check_own_slot(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hb_sample s;
	struct hb_block b;
	const char *what;

	if (!r->check_own)
		return 1;
	sample_of(r, h->local_node, &s, &b);
	if (b.node == r->written.node && b.generation == r->written.generation &&
	    b.seq == r->written.seq)
		return 1;
	if (b.node != r->written.node)
		what = "Another node is heartbeating in our slot";
	else if (b.generation != r->written.generation)
		what = "Heartbeat generation mismatch";
	else
		what = "Heartbeat sequence mismatch";
	fence(h, "%s on region %s (%s): expected node %u generation 0x%llx seq %llu, "
	    "found node %u generation 0x%llx seq %llu", what, r->name, r->dev,
	    r->written.node, (unsigned long long)r->written.generation,
	    (unsigned long long)r->written.seq, b.node,
	    (unsigned long long)b.generation, (unsigned long long)b.seq);
	return 0;
}

/* Someone else writes our slot while we only read: refuse the region. */
static int
probe_own_slot(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hb_slot *own = &r->slots[h->local_node];
	struct hb_sample s;
	struct hb_block b;

	sample_of(r, h->local_node, &s, &b);
	if (!s.crc_ok || (s.seq == own->last_seq && s.generation == own->last_gen) ||
	    s.generation == 0)
		return 1;
	region_fail(r, "node %u is already heartbeating on this region "
	    "(generation 0x%llx): another process or machine uses our node number",
	    h->local_node, (unsigned long long)s.generation);
	return 0;
}

static void
log_verdict(struct hb_region *r, unsigned n, const struct hb_verdict *v,
    const struct hb_sample *s)
{
	struct hbd *h = r->hbd;

	if (v->bad_crc)
		log_warnx("region %s: node %u has written a bad crc to %s; counted "
		    "as a missed sample", r->name, n, r->dev);
	if (v->dead_ms_mismatch)
		log_err("region %s: node %u on %s has a dead time of %u ms, but ours "
		    "is %u ms (heartbeat dead_threshold %u x interval_ms %u): the "
		    "cluster is misconfigured, check O2CB_HEARTBEAT_THRESHOLD and "
		    "heartbeat_interval_ms on every node", r->name, n, r->dev,
		    s->dead_ms, hbd_dead_ms(h), h->dead_threshold, h->interval_ms);
}

/* Evaluate every slot we care about; returns whether membership changed. */
static int
evaluate_slots(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hb_verdict v;
	struct hb_sample s;
	struct hb_block b;
	unsigned n;
	int changed = 0;

	for (n = 0; n < r->io.nslots; n++) {
		if (!h->configured[n] && !r->slots[n].live && n != h->local_node)
			continue;
		if (n == h->local_node && r->state == RS_PROBING)
			continue;
		sample_of(r, n, &s, &b);
		hb_slot_sample(&r->slots[n], &s, h->dead_threshold, hbd_dead_ms(h),
		    r->tick_ms, &v);
		if (n == h->local_node && v.transition == HB_DOWN &&
		    v.why == HB_WHY_NEW_GENERATION) {
			/* Our own new incarnation: to us, we never died. */
			r->slots[n].live = 1;
			continue;
		}
		log_verdict(r, n, &v, &s);
		if (v.transition == HB_SAME)
			continue;
		changed = 1;
		member_slot(h, r, n, v.transition == HB_UP, &v, r->tick_ms);
	}
	return changed;
}

/*
 * o2hb_arm_timeout, from steady state on: the write timeout, and the
 * negotiation timer at half of it, which forgets who asked to negotiate.
 */
void
region_arm_timeouts(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	unsigned ms = h->interval_ms * (h->dead_threshold - 1);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (r->state != RS_STEADY)
		return;
	r->timed_out = 0;
	evtimer_add(r->timeout_ev, &tv);
	ms = hb_nego_timeout_ms(h->interval_ms, h->dead_threshold);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(r->nego_ev, &tv);
	memset(r->nego_asked, 0, sizeof(r->nego_asked));
}

/*
 * O2HB_MAX_WRITE_TIMEOUT_MS: no completed iteration for dead_threshold-1
 * intervals, and no approval either (nego.c: the storage does not hang
 * for every node), so our peers will call us dead about one interval
 * from now. Global mode tolerates a minority of slow regions.
 */
static void
region_write_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct hb_region *r = arg, *o;
	struct hbd *h = r->hbd;
	unsigned failed = 0, ms = h->interval_ms * (h->dead_threshold - 1);

	(void)fd;
	(void)ev;
	log_err("Heartbeat write timeout to device %s after %u milliseconds "
	    "(region %s)", r->dev, ms, r->name);
	r->timed_out = 1;
	if (h->global) {
		TAILQ_FOREACH(o, &h->regions, entry)
			failed += o->timed_out;
		if (failed * 2 < region_nrunning(h)) {
			log_warnx("%u of %u global regions timed out: not fencing yet",
			    failed, region_nrunning(h));
			return;
		}
	}
	fence(h, "heartbeat write timeout to %s after %u ms (region %s)", r->dev,
	    ms, r->name);
}

/*
 * The first read of a resumed region: our slot must still hold our
 * incarnation (the earlier hbd's last block, or the one it had in
 * flight, maybe of the generation it was switching to), or somebody
 * took it over while no hbd watched: fence.
 */
static int
resume_own_slot(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hb_sample s;
	struct hb_block b;

	sample_of(r, h->local_node, &s, &b);
	if (s.crc_ok && b.node == h->local_node && b.generation != 0 &&
	    (b.generation == r->resume_gen[0] || b.generation == r->resume_gen[1]))
		return 1;
	fence(h, "region %s (%s): while no hbd ran, our slot changed to node %u "
	    "generation 0x%llx (ours 0x%llx)", r->name, r->dev, b.node,
	    (unsigned long long)b.generation, (unsigned long long)r->resume_gen[0]);
	return 0;
}

/*
 * Slots the earlier hbd saw live are sampled against what it knew, so a
 * node that died or restarted meanwhile goes down now; the others are
 * seeded as a fresh region seeds them.
 */
static int
resume_slots(struct hb_region *r)
{
	struct hbd *h = r->hbd;
	struct hb_verdict v;
	struct hb_sample s;
	struct hb_block b;
	unsigned n;
	int changed = 0;

	for (n = 0; n < r->io.nslots && n < HB_MAX_NODES; n++) {
		sample_of(r, n, &s, &b);
		if (n == h->local_node || !r->slots[n].live) {
			hb_slot_seed(&r->slots[n], n, &s);
			continue;
		}
		hb_slot_sample(&r->slots[n], &s, h->dead_threshold, hbd_dead_ms(h),
		    r->tick_ms, &v);
		if (v.transition == HB_SAME)
			continue;
		changed = 1;
		member_slot(h, r, n, v.transition == HB_UP, &v, r->tick_ms);
	}
	return changed;
}

static void
record_latency(struct hb_region *r, uint64_t us)
{
	r->lat_last_us = us;
	if (us > r->lat_max_us)
		r->lat_max_us = us;
	r->lat[r->writes % HB_LAT_RING] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	r->writes++;
}

static void
iteration_done(struct hb_region *r, enum hb_io_job job, int rerr, int werr,
    uint64_t write_us, uint64_t issued_us, uint64_t done_us, uint64_t submitted_us)
{
	struct hbd *h = r->hbd;
	struct hb_sample s;
	struct hb_block b;
	unsigned n;
	int ok = 1, own_ok = 1, changed = 0;

	if (rerr != 0) {
		if (!r->rerr_logged)
			log_err("region %s: read error on %s: %s", r->name, r->dev,
			    strerror(rerr));
		r->rerr_logged = 1;
		ok = 0;
	} else if (!r->seeded) {
		r->seeded = 1;
		r->rerr_logged = 0;
		if (!r->resuming) {
			for (n = 0; n < r->blocks && n < HB_MAX_NODES; n++) {
				sample_of(r, n, &s, &b);
				hb_slot_seed(&r->slots[n], n, &s);
			}
			return;
		}
		r->resuming = 0;
		if (!resume_own_slot(r))
			return;		/* fenced */
		changed = resume_slots(r);
	} else {
		r->rerr_logged = 0;
		if (r->state == RS_PROBING && !probe_own_slot(r))
			return;
		if (!(own_ok = check_own_slot(r)))
			return;		/* fenced */
		changed = evaluate_slots(r);
	}
	if (job == IO_ITERATE) {
		if (werr != 0) {
			if (!r->werr_logged)
				log_err("region %s: write error on %s: %s", r->name,
				    r->dev, strerror(werr));
			r->werr_logged = 1;
			r->check_own = 0;	/* we cannot know what is on disk */
			ok = 0;
		} else {
			r->werr_logged = 0;
			r->written = r->pending;
			r->check_own = 1;
			record_latency(r, write_us);
			if (lease_renew(r, issued_us, done_us, submitted_us) == -1)
				return;		/* fenced */
		}
	}
	if (r->state == RS_PROBING) {
		if (ok && --r->probes_left == 0)
			r->state = RS_STARTING;
		return;
	}
	r->last_ok = ok && own_ok;
	if (ok && own_ok)
		region_arm_timeouts(r);
	switch (hb_steady_step(&r->steady, ok && own_ok && job == IO_ITERATE, changed)) {
	case HB_STEADY_REACHED:
		r->state = RS_STEADY;
		region_arm_timeouts(r);
		log_info("region %s on %s: steady", r->name, r->dev);
		api_region_event(h, HBD__REGION_EVENT_KIND__REGION_STARTED, r->name,
		    "steady");
		break;
	case HB_STEADY_GAVE_UP:
		region_fail(r, "unable to stabilize heartbeat");
		break;
	default:
		break;
	}
}

static void
region_io_done(evutil_socket_t fd, short ev, void *arg)
{
	struct hb_region *r = arg;
	enum hb_io_job job;
	uint64_t write_us, issued_us, done_us, submitted_us;
	int rerr, werr;
	char buf[16];

	(void)ev;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&r->io.mu);
	if (r->io.job != IO_NONE) {	/* already given the next one */
		pthread_mutex_unlock(&r->io.mu);
		return;
	}
	job = r->io.done;
	rerr = r->io.rerr;
	werr = r->io.werr;
	write_us = r->io.write_us;
	issued_us = r->io.issued_us;
	done_us = r->io.done_us;
	submitted_us = r->io.submitted_us;
	r->io.done = IO_NONE;
	r->io.busy = 0;
	pthread_mutex_unlock(&r->io.mu);
	if (job == IO_NONE)
		return;

	if (r->zombie) {
		if (r->unlinked) {
			r->hbd->hung_regions--;
			log_info("region %s: the I/O of a stopped incarnation completed",
			    r->name);
			region_free(r);
		} else {
			region_release_io(r);
			r->zombie = 0;
		}
		return;
	}
	if (job == IO_LEAVE) {
		if (werr != 0)
			log_err("region %s: writing the clean-stop block to %s: %s",
			    r->name, r->dev, strerror(werr));
		log_info("region %s on %s: stopped", r->name, r->dev);
		region_finish(r, HBD__REGION_EVENT_KIND__REGION_STOPPED,
		    werr ? "stopped, clean-stop block not written" : "clean stop");
		return;
	}
	if (r->state == RS_STOPPING) {
		/* A stop came while this iteration ran: finish it now. */
		region_stop(r, r->stop_clean);
		return;
	}
	iteration_done(r, job, rerr, werr, write_us, issued_us, done_us, submitted_us);
}

/*
 * Stop heartbeating. Clean: write our block with generation 0 so that
 * peers see us leave at once (after any iteration in flight), but only
 * once we have written at all: while probing, the slot may be another
 * writer's. Unclean (fencing): write nothing more, peers find out after
 * dead_threshold samples.
 */
void
region_stop(struct hb_region *r, int clean)
{
	struct hb_block b;

	if (r->state == RS_FAILED) {
		region_forget(r);
		return;
	}
	if (r->state != RS_STOPPING) {
		r->state = RS_STOPPING;
		r->stop_clean = clean;
		event_del(r->tick_ev);
		event_del(r->timeout_ev);
		event_del(r->nego_ev);
	} else if (!clean) {
		r->stop_clean = 0;	/* fencing overrides a clean stop */
	}
	if (!r->stop_clean || r->hbd->fenced)
		atomic_store(&r->io.no_writes, 1);
	/* A clean stop waits for the I/O in flight; fencing does not (it may hang). */
	if (r->stop_clean && io_busy(r))
		return;		/* region_io_done calls us again */
	if (!r->stop_clean || r->hbd->fenced || r->writes == 0) {
		log_info("region %s on %s: stopped%s", r->name, r->dev,
		    r->stop_clean ? " before its first write" : " uncleanly");
		region_finish(r, HBD__REGION_EVENT_KIND__REGION_STOPPED,
		    r->stop_clean ? "stopped before its first write" :
		    "stopped uncleanly (fenced)");
		return;
	}
	memset(&b, 0, sizeof(b));
	b.seq = next_seq(r);
	b.node = (uint8_t)r->hbd->local_node;
	b.generation = 0;
	b.dead_ms = hbd_dead_ms(r->hbd);
	hb_block_encode(r->wbuf, r->block_bytes, &b);
	io_submit(r, IO_LEAVE, 0);
}

/* A failed region whose nmd item went away. */
void
region_forget(struct hb_region *r)
{
	TAILQ_REMOVE(&r->hbd->regions, r, entry);
	r->unlinked = 1;
	if (r->zombie && io_busy(r))
		return;		/* freed by region_io_done */
	region_free(r);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static const char *
state_name(enum hb_region_state s)
{
	static const char *names[] = {
		[RS_PROBING] = "probing", [RS_STARTING] = "starting",
		[RS_STEADY] = "steady", [RS_STOPPING] = "stopping",
		[RS_FAILED] = "failed",
	};

	return names[s];
}

void
region_fill_status(struct hb_region *r, Hbd__RegionStatus *rs)
{
	struct hbd *h = r->hbd;
	uint64_t now = wall_ms();
	uint32_t *sorted;
	size_t n, i, k = 0;

	hbd__region_status__init(rs);
	rs->name = r->name;
	rs->dev = r->dev;
	if (r->state == RS_FAILED)
		xasprintf(&rs->state, "failed: %s", r->why);
	else
		rs->state = xstrdup(state_name(r->state));
	rs->block_bytes = r->block_bytes;
	rs->start_block = r->start_block;
	rs->generation = r->generation;
	rs->write_latency_last_us = r->lat_last_us;
	rs->write_latency_max_us = r->lat_max_us;
	rs->writes = r->writes;
	rs->iterations_skipped = r->skipped;
	rs->lease_ms_left = lease_left_us(r) / 1000;
	rs->resumed = r->resumed;
	n = r->writes < HB_LAT_RING ? r->writes : HB_LAT_RING;
	if (n > 0) {
		sorted = xmalloc(n * sizeof(*sorted));
		memcpy(sorted, r->lat, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), cmp_u32);
		rs->write_latency_p50_us = sorted[n / 2];
		rs->write_latency_p99_us = sorted[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
		free(sorted);
	}
	if (r->state == RS_FAILED || !r->seeded)
		return;
	rs->slots = xcalloc(HB_MAX_NODES, sizeof(*rs->slots));
	for (i = 0; i < HB_MAX_NODES && i < r->blocks; i++) {
		const struct hb_slot *s = &r->slots[i];
		Hbd__SlotStatus *ss;

		if (!h->configured[i] && !s->live && i != h->local_node)
			continue;
		ss = xcalloc(1, sizeof(*ss));
		hbd__slot_status__init(ss);
		ss->node = (uint32_t)i;
		ss->state = i == h->local_node ? "self" : s->live ? "up" : "down";
		ss->seq = s->last_seq;
		ss->generation = s->last_gen;
		ss->ms_since_change = s->last_change_ms ? now - s->last_change_ms : 0;
		ss->missed_samples = s->live ? s->equal : 0;
		ss->missed_total = s->missed_total;
		ss->dead_ms = s->dead_ms;
		rs->slots[k++] = ss;
	}
	rs->n_slots = k;
}

void
region_free_status(Hbd__RegionStatus *rs)
{
	size_t i;

	for (i = 0; i < rs->n_slots; i++)
		free(rs->slots[i]);
	free(rs->slots);
	free(rs->state);
}
