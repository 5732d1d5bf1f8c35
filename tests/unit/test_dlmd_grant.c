/*
 * dlmd's granting rules (grant.c) on one hand-built resource: the mode
 * matrix, queue order, new locks, converts, cancel, unlock, the value
 * block, one BAST per blocking episode, a blocked EX not starved by new
 * readers, and two NL->EX converts that drain one after the other.
 * Deliveries are recorded through grant_hooks and checked in order.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "dlmd/dlmd.h"

#define NLOCKS	6
#define NSEEN	64

/* One call of a grant_hooks callback. */
struct delivery {
	int		 bast;		/* 0 AST, 1 BAST */
	struct dlm_lock	*lk;
	int		 arg;		/* AST status or BAST blocked mode */
};

#define AST(l, st)	{ 0, (l), (st) }
#define BAST(l, m)	{ 1, (l), (m) }
#define EXPECT(...)	expect((const struct delivery[]){ __VA_ARGS__ },		\
	    sizeof((const struct delivery[]){ __VA_ARGS__ }) / sizeof(struct delivery))
#define EXPECT_NONE()	expect(NULL, 0)

static struct dlm_res	 res;
static struct dlm_lock	 locks[NLOCKS];
static struct delivery	 seen[NSEEN];
static size_t		 nseen;

/* Short names: every test plays with the same few locks. */
static struct dlm_lock *const a = &locks[0];
static struct dlm_lock *const b = &locks[1];
static struct dlm_lock *const c = &locks[2];
static struct dlm_lock *const d = &locks[3];
static struct dlm_lock *const x = &locks[4];
static struct dlm_lock *const y = &locks[5];

static const char *
name(const struct dlm_lock *lk)
{
	static const char *const names[NLOCKS] = { "a", "b", "c", "d", "x", "y" };

	return lk == NULL ? "none" : names[lk - locks];
}

static void
record(int bast, struct dlm_lock *lk, int arg)
{
	cr_assert_lt(nseen, NSEEN, "too many deliveries");
	seen[nseen].bast = bast;
	seen[nseen].lk = lk;
	seen[nseen].arg = arg;
	nseen++;
}

static void
record_ast(struct dlm_lock *lk, int status)
{
	record(0, lk, status);
}

static void
record_bast(struct dlm_lock *lk, int blocked)
{
	record(1, lk, blocked);
}

/* The deliveries since the last check are exactly these; forget them. */
static void
expect(const struct delivery *want, size_t n)
{
	size_t i;

	cr_assert_eq(nseen, n, "%zu deliveries, expected %zu", nseen, n);
	for (i = 0; i < n; i++) {
		cr_assert_eq(seen[i].bast, want[i].bast, "delivery %zu to %s: %s, expected %s",
		    i, name(seen[i].lk), seen[i].bast ? "BAST" : "AST",
		    want[i].bast ? "BAST" : "AST");
		cr_assert_eq(seen[i].lk, want[i].lk, "delivery %zu: to %s, expected %s", i,
		    name(seen[i].lk), name(want[i].lk));
		cr_assert_eq(seen[i].arg, want[i].arg, "delivery %zu to %s: %d, expected %d",
		    i, name(seen[i].lk), seen[i].arg, want[i].arg);
	}
	nseen = 0;
}

static int
on_queue(int q, const struct dlm_lock *lk)
{
	struct dlm_lock *o;

	TAILQ_FOREACH(o, &res.queue[q], q_entry)
		if (o == lk)
			return 1;
	return 0;
}

/* Queue q holds exactly the locks given (NULL-terminated), in this order. */
static void
queue_is(int q, ...)
{
	struct dlm_lock *lk, *want;
	va_list ap;
	int i = 0;

	va_start(ap, q);
	TAILQ_FOREACH(lk, &res.queue[q], q_entry) {
		want = va_arg(ap, struct dlm_lock *);
		cr_assert_eq(lk, want, "queue %d position %d: %s, expected %s", q, i,
		    name(lk), name(want));
		cr_assert_eq((int)lk->queue, q, "%s: queue field %d", name(lk), lk->queue);
		i++;
	}
	want = va_arg(ap, struct dlm_lock *);
	cr_assert_null(want, "queue %d ends at %d, %s missing", q, i, name(want));
	va_end(ap);
}

/* lk holds mode, wants nothing more; where it sits on the granted queue does not matter. */
static void
granted(const struct dlm_lock *lk, int mode)
{
	cr_assert_eq(lk->queue, Q_GRANTED, "%s: queue %d", name(lk), lk->queue);
	cr_assert(on_queue(Q_GRANTED, lk), "%s not on the granted queue", name(lk));
	cr_assert_eq(lk->mode, mode, "%s: mode %d, expected %d", name(lk), lk->mode, mode);
	cr_assert_eq(lk->convert_mode, DLM_IV, "%s: still wants %d", name(lk),
	    lk->convert_mode);
}

static void
not_queued(const struct dlm_lock *lk)
{
	int q;

	cr_assert_eq(lk->queue, Q_NONE, "%s: queue %d", name(lk), lk->queue);
	for (q = Q_GRANTED; q <= Q_BLOCKED; q++)
		cr_assert_not(on_queue(q, lk), "%s still on queue %d", name(lk), q);
}

/* A lock granted at once, its AST consumed: the starting state of a test. */
static void
hold(struct dlm_lock *lk, uint32_t flags, int mode)
{
	cr_assert_eq(grant_new(&res, lk, flags, mode), WS_GRANTED, "%s not granted %d",
	    name(lk), mode);
	EXPECT(AST(lk, 0));
}

/* By hand rather than res_get/lock_new: those need a whole domain. */
static void
setup(void)
{
	struct dlm_lock *lk;
	int q;

	memset(&res, 0, sizeof(res));
	for (q = 0; q < 3; q++)
		TAILQ_INIT(&res.queue[q]);
	TAILQ_INIT(&res.local);
	res.lvb_valid = 1;
	for (lk = locks; lk < locks + NLOCKS; lk++) {
		memset(lk, 0, sizeof(*lk));
		lk->res = &res;
		lk->mode = lk->convert_mode = lk->highest_blocked = DLM_IV;
		lk->queue = Q_NONE;
	}
	grant_hooks.ast = record_ast;
	grant_hooks.bast = record_bast;
	nseen = 0;
}

TestSuite(dlmd_grant, .init = setup);

Test(dlmd_grant, compatibility_matrix)
{
	static const int modes[3] = { DLM_NL, DLM_PR, DLM_EX };
	/* held (row) against wanted (column), as in dlmapi.h */
	static const int ok[3][3] = {
		{ 1, 1, 1 },
		{ 1, 1, 0 },
		{ 1, 0, 0 },
	};
	int i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			cr_assert_eq(!!dlm_compatible(modes[i], modes[j]), ok[i][j],
			    "held %d wanted %d", modes[i], modes[j]);
}

Test(dlmd_grant, only_nl_pr_ex_are_valid)
{
	/* IV, o2dlm's unsupported CR/CW/PW, and out of range */
	static const int bad[] = { DLM_IV, 1, 2, 4, 6, -2, 255 };
	size_t i;

	cr_assert(dlm_mode_valid(DLM_NL));
	cr_assert(dlm_mode_valid(DLM_PR));
	cr_assert(dlm_mode_valid(DLM_EX));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(dlm_mode_valid(bad[i]), "mode %d accepted", bad[i]);
}

Test(dlmd_grant, compatible_new_locks_are_granted_at_once)
{
	cr_assert_eq(grant_new(&res, a, 0, DLM_PR), WS_GRANTED);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_GRANTED);
	cr_assert_eq(grant_new(&res, c, 0, DLM_NL), WS_GRANTED);
	EXPECT(AST(a, 0), AST(b, 0), AST(c, 0));
	granted(a, DLM_PR);
	granted(b, DLM_PR);
	granted(c, DLM_NL);
	queue_is(Q_CONVERTING, NULL);
	queue_is(Q_BLOCKED, NULL);
}

Test(dlmd_grant, incompatible_new_lock_waits_and_basts_the_holder)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	queue_is(Q_BLOCKED, b, NULL);
	cr_assert_eq(b->mode, DLM_IV);
	cr_assert_eq(b->convert_mode, DLM_PR);
	granted(a, DLM_EX);
}

Test(dlmd_grant, noqueue_new_lock)
{
	cr_assert_eq(grant_new(&res, a, DLM_FL_NOQUEUE, DLM_EX), WS_GRANTED);
	EXPECT(AST(a, 0));
	/*
	 * A failed trylock leaves no trace: no AST (the reply says it),
	 * and no BAST, as in o2dlm: nobody waits, so the holder has no
	 * reason to give the lock up.
	 */
	cr_assert_eq(grant_new(&res, b, DLM_FL_NOQUEUE, DLM_PR), WS_NOTQUEUED);
	EXPECT_NONE();
	not_queued(b);
	cr_assert_eq(b->mode, DLM_IV);
	cr_assert_eq(b->convert_mode, DLM_IV);
	cr_assert_eq(a->highest_blocked, DLM_IV);
	/* and it did not use up the holder's BAST for a real waiter */
	cr_assert_eq(grant_new(&res, c, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
}

/*
 * New locks go in order: d, although compatible with b, waits behind
 * c; each head BASTs what stands in its way.
 */
Test(dlmd_grant, blocked_queue_is_fifo)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_QUEUED);
	cr_assert_eq(grant_new(&res, c, 0, DLM_EX), WS_QUEUED);
	cr_assert_eq(grant_new(&res, d, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	queue_is(Q_BLOCKED, b, c, d, NULL);

	grant_unlock(&res, a, NULL);
	EXPECT(AST(b, 0), BAST(b, DLM_EX));
	granted(b, DLM_PR);
	queue_is(Q_BLOCKED, c, d, NULL);

	grant_unlock(&res, b, NULL);
	EXPECT(AST(c, 0), BAST(c, DLM_PR));
	granted(c, DLM_EX);
	queue_is(Q_BLOCKED, d, NULL);

	grant_unlock(&res, c, NULL);
	EXPECT(AST(d, 0));
	granted(d, DLM_PR);
	queue_is(Q_BLOCKED, NULL);
}

/* Converts go in order, and all of them before the new locks. */
Test(dlmd_grant, converting_queue_is_fifo_and_goes_first)
{
	hold(a, 0, DLM_EX);
	hold(b, 0, DLM_NL);
	hold(c, 0, DLM_NL);
	cr_assert_eq(grant_convert(&res, b, 0, DLM_EX, NULL), WS_QUEUED);
	cr_assert_eq(grant_convert(&res, c, 0, DLM_PR, NULL), WS_QUEUED);
	cr_assert_eq(grant_new(&res, d, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	queue_is(Q_CONVERTING, b, c, NULL);
	queue_is(Q_BLOCKED, d, NULL);
	cr_assert_eq(b->mode, DLM_NL);
	cr_assert_eq(b->convert_mode, DLM_EX);

	grant_unlock(&res, a, NULL);
	EXPECT(AST(b, 0), BAST(b, DLM_PR));
	granted(b, DLM_EX);
	queue_is(Q_CONVERTING, c, NULL);
	queue_is(Q_BLOCKED, d, NULL);

	cr_assert_eq(grant_convert(&res, b, 0, DLM_NL, NULL), WS_GRANTED);
	EXPECT(AST(b, 0), AST(c, 0), AST(d, 0));
	granted(b, DLM_NL);
	granted(c, DLM_PR);
	granted(d, DLM_PR);
}

Test(dlmd_grant, down_convert_is_granted_in_place)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, x, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	cr_assert_eq(grant_convert(&res, a, 0, DLM_PR, NULL), WS_GRANTED);
	EXPECT(AST(a, 0), AST(x, 0));
	granted(a, DLM_PR);
	granted(x, DLM_PR);
	cr_assert_eq(a->highest_blocked, DLM_IV);
}

/* A down-convert does not queue behind a waiting up-convert: it is what frees it. */
Test(dlmd_grant, down_convert_passes_the_converting_queue)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, b, 0, DLM_EX, NULL), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(grant_convert(&res, a, 0, DLM_NL, NULL), WS_GRANTED);
	EXPECT(AST(a, 0), AST(b, 0));
	granted(a, DLM_NL);
	granted(b, DLM_EX);
}

Test(dlmd_grant, compatible_up_convert_is_granted_at_once)
{
	hold(a, 0, DLM_NL);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_PR, NULL), WS_GRANTED);
	EXPECT(AST(a, 0));
	granted(a, DLM_PR);
	granted(b, DLM_PR);
}

Test(dlmd_grant, pr_to_ex_with_another_reader_waits_and_basts_it)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_QUEUED);
	EXPECT(BAST(b, DLM_EX));
	queue_is(Q_CONVERTING, a, NULL);
	cr_assert_eq(a->mode, DLM_PR);
	cr_assert_eq(a->convert_mode, DLM_EX);
	cr_assert_eq(a->highest_blocked, DLM_IV);
	granted(b, DLM_PR);

	grant_unlock(&res, b, NULL);
	EXPECT(AST(a, 0));
	granted(a, DLM_EX);
	queue_is(Q_CONVERTING, NULL);
}

/*
 * c's PR lets a have EX at once no more than b have PR; b and the new
 * d are also kept out by a's wanted EX, not only by held modes.
 */
Test(dlmd_grant, requests_respect_modes_wanted_by_converting_locks)
{
	hold(a, 0, DLM_NL);
	hold(b, 0, DLM_NL);
	hold(c, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_QUEUED);
	EXPECT(BAST(c, DLM_EX));
	cr_assert_eq(grant_convert(&res, b, 0, DLM_PR, NULL), WS_QUEUED);
	cr_assert_eq(grant_new(&res, d, 0, DLM_PR), WS_QUEUED);
	EXPECT_NONE();
	queue_is(Q_CONVERTING, a, b, NULL);
	queue_is(Q_BLOCKED, d, NULL);

	grant_unlock(&res, c, NULL);
	EXPECT(AST(a, 0), BAST(a, DLM_PR));
	granted(a, DLM_EX);
	queue_is(Q_CONVERTING, b, NULL);
	queue_is(Q_BLOCKED, d, NULL);
}

Test(dlmd_grant, noqueue_up_convert)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, a, DLM_FL_NOQUEUE, DLM_EX, NULL), WS_NOTQUEUED);
	EXPECT_NONE();
	granted(a, DLM_PR);
	granted(b, DLM_PR);
	cr_assert_eq(b->highest_blocked, DLM_IV);
}

/* One request at a time: only a granted lock may convert. */
Test(dlmd_grant, convert_of_a_lock_not_granted_is_busy)
{
	hold(a, 0, DLM_EX);
	hold(b, 0, DLM_NL);
	cr_assert_eq(grant_convert(&res, b, 0, DLM_EX, NULL), WS_QUEUED);
	cr_assert_eq(grant_new(&res, c, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));

	cr_assert_eq(grant_convert(&res, b, 0, DLM_NL, NULL), WS_BUSY);
	cr_assert_eq(grant_convert(&res, c, 0, DLM_EX, NULL), WS_BUSY);
	cr_assert_eq(grant_convert(&res, d, 0, DLM_PR, NULL), WS_BUSY);
	EXPECT_NONE();
	queue_is(Q_CONVERTING, b, NULL);
	cr_assert_eq(b->mode, DLM_NL);
	cr_assert_eq(b->convert_mode, DLM_EX);
	queue_is(Q_BLOCKED, c, NULL);
	cr_assert_eq(c->convert_mode, DLM_PR);
	not_queued(d);
	granted(a, DLM_EX);
}

Test(dlmd_grant, cancel_of_a_blocked_lock)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	cr_assert_eq(grant_cancel(&res, b), WS_OK);
	EXPECT(AST(b, ECANCELED));
	not_queued(b);
	cr_assert_eq(b->mode, DLM_IV);
	cr_assert_eq(b->convert_mode, DLM_IV);
	granted(a, DLM_EX);
}

/* Cancelling the head re-runs the queue: c no longer waits behind x. */
Test(dlmd_grant, cancel_of_the_blocked_head_lets_the_next_in)
{
	hold(a, 0, DLM_PR);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	cr_assert_eq(grant_new(&res, c, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(grant_cancel(&res, x), WS_OK);
	EXPECT(AST(x, ECANCELED), AST(c, 0));
	not_queued(x);
	granted(c, DLM_PR);
	queue_is(Q_BLOCKED, NULL);
}

Test(dlmd_grant, cancel_of_a_convert_keeps_the_old_mode)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_QUEUED);
	EXPECT(BAST(b, DLM_EX));
	cr_assert_eq(grant_cancel(&res, a), WS_OK);
	EXPECT(AST(a, ECANCELED));
	granted(a, DLM_PR);
	queue_is(Q_CONVERTING, NULL);
	/* the cancelled EX is not granted later behind the caller's back */
	grant_unlock(&res, b, NULL);
	EXPECT_NONE();
	granted(a, DLM_PR);
}

Test(dlmd_grant, cancel_of_a_granted_lock_is_already)
{
	hold(a, 0, DLM_PR);
	cr_assert_eq(grant_cancel(&res, a), WS_ALREADY);
	EXPECT_NONE();
	granted(a, DLM_PR);
}

Test(dlmd_grant, unlock_reruns_the_queues)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_QUEUED);
	cr_assert_eq(grant_new(&res, c, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	grant_unlock(&res, a, NULL);
	EXPECT(AST(b, 0), AST(c, 0));
	not_queued(a);
	granted(b, DLM_PR);
	granted(c, DLM_PR);
	queue_is(Q_BLOCKED, NULL);
}

Test(dlmd_grant, lvb_written_by_ex_unlock_read_by_pr_with_valblk)
{
	uint8_t v[DLM_LVB_LEN], w[DLM_LVB_LEN], zero[DLM_LVB_LEN];

	memset(v, 0xa5, sizeof(v));
	memset(w, 0x5a, sizeof(w));
	memset(zero, 0, sizeof(zero));
	hold(a, DLM_FL_VALBLK, DLM_EX);
	grant_unlock(&res, a, v);
	cr_assert_eq(memcmp(res.lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(res.lvb_version, 1);
	cr_assert(res.lvb_valid);

	hold(b, DLM_FL_VALBLK, DLM_PR);
	cr_assert_eq(memcmp(b->lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(b->lvb_version, 1);
	cr_assert(b->lvb_valid);
	/* without VALBLK the holder asked for no value */
	hold(c, 0, DLM_PR);
	cr_assert_eq(memcmp(c->lvb, zero, DLM_LVB_LEN), 0);
	cr_assert_eq(c->lvb_version, 0);
	/* NL carries no value, VALBLK or not */
	hold(d, DLM_FL_VALBLK, DLM_NL);
	cr_assert_eq(memcmp(d->lvb, zero, DLM_LVB_LEN), 0);

	/* a reader may not write the value */
	grant_unlock(&res, b, w);
	cr_assert_eq(memcmp(res.lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(res.lvb_version, 1);
}

/* The value is written before the queues run, so the waiter gets the new one. */
Test(dlmd_grant, lvb_reaches_a_queued_pr)
{
	uint8_t v[DLM_LVB_LEN];

	memset(v, 0x3c, sizeof(v));
	hold(a, DLM_FL_VALBLK, DLM_EX);
	cr_assert_eq(grant_new(&res, b, DLM_FL_VALBLK, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	grant_unlock(&res, a, v);
	EXPECT(AST(b, 0));
	cr_assert_eq(memcmp(b->lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(b->lvb_version, 1);
}

Test(dlmd_grant, lvb_on_down_converts)
{
	uint8_t v[DLM_LVB_LEN], w[DLM_LVB_LEN];

	memset(v, 0x11, sizeof(v));
	memset(w, 0x22, sizeof(w));
	hold(a, DLM_FL_VALBLK, DLM_EX);
	/* leaving EX without VALBLK: the value is not the holder's to set */
	cr_assert_eq(grant_convert(&res, a, 0, DLM_NL, w), WS_GRANTED);
	cr_assert_eq(res.lvb_version, 0);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_GRANTED);
	/* EX -> PR with VALBLK writes, and the reader keeps what it wrote */
	cr_assert_eq(grant_convert(&res, a, DLM_FL_VALBLK, DLM_PR, v), WS_GRANTED);
	cr_assert_eq(memcmp(res.lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(res.lvb_version, 1);
	cr_assert_eq(memcmp(a->lvb, v, DLM_LVB_LEN), 0);
	/* PR -> NL does not */
	cr_assert_eq(grant_convert(&res, a, DLM_FL_VALBLK, DLM_NL, w), WS_GRANTED);
	cr_assert_eq(memcmp(res.lvb, v, DLM_LVB_LEN), 0);
	cr_assert_eq(res.lvb_version, 1);
	EXPECT(AST(a, 0), AST(a, 0), AST(a, 0), AST(a, 0));
}

Test(dlmd_grant, one_bast_per_blocking_episode)
{
	hold(a, 0, DLM_PR);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(a->highest_blocked, DLM_EX);
	cr_assert_eq(grant_new(&res, y, 0, DLM_EX), WS_QUEUED);
	grant_shuffle(&res);
	EXPECT_NONE();
}

/* A holder told about a PR waiter is told again when an EX waits. */
Test(dlmd_grant, bast_names_the_strongest_blocked_mode)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, b, 0, DLM_PR), WS_QUEUED);
	EXPECT(BAST(a, DLM_PR));
	cr_assert_eq(grant_cancel(&res, b), WS_OK);
	EXPECT(AST(b, ECANCELED));
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(a->highest_blocked, DLM_EX);
}

/* Going EX -> PR does not satisfy an EX waiter: a new episode, a new BAST. */
Test(dlmd_grant, bast_again_after_the_holder_changed_mode)
{
	hold(a, 0, DLM_EX);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(grant_convert(&res, a, 0, DLM_PR, NULL), WS_GRANTED);
	EXPECT(AST(a, 0), BAST(a, DLM_EX));
	cr_assert_eq(grant_convert(&res, a, 0, DLM_NL, NULL), WS_GRANTED);
	EXPECT(AST(a, 0), AST(x, 0));
	granted(x, DLM_EX);
}

/*
 * Readers arriving after a blocked EX wait behind it (a trylock fails)
 * so the EX waits only for the readers already in.
 */
Test(dlmd_grant, new_readers_do_not_starve_a_blocked_ex)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX), BAST(b, DLM_EX));
	cr_assert_eq(grant_new(&res, c, 0, DLM_PR), WS_QUEUED);
	cr_assert_eq(grant_new(&res, d, DLM_FL_NOQUEUE, DLM_PR), WS_NOTQUEUED);
	EXPECT_NONE();
	queue_is(Q_BLOCKED, x, c, NULL);
	not_queued(d);

	grant_unlock(&res, a, NULL);
	EXPECT_NONE();
	grant_unlock(&res, b, NULL);
	EXPECT(AST(x, 0), BAST(x, DLM_PR));
	granted(x, DLM_EX);
	queue_is(Q_BLOCKED, c, NULL);

	grant_unlock(&res, x, NULL);
	EXPECT(AST(c, 0));
	granted(c, DLM_PR);
}

/*
 * Regression: the head of the converting queue was once also checked
 * against the others' wanted modes, so two NL->EX converts each waited
 * for the other forever once the EX holder left.
 */
Test(dlmd_grant, two_nl_to_ex_converts_drain_in_turn)
{
	hold(c, 0, DLM_EX);
	hold(a, 0, DLM_NL);
	hold(b, 0, DLM_NL);
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_QUEUED);
	cr_assert_eq(grant_convert(&res, b, 0, DLM_EX, NULL), WS_QUEUED);
	EXPECT(BAST(c, DLM_EX));
	queue_is(Q_CONVERTING, a, b, NULL);

	/* grant_remove only takes the lock out: the caller runs the queues */
	grant_remove(&res, c);
	EXPECT_NONE();
	not_queued(c);
	queue_is(Q_CONVERTING, a, b, NULL);

	grant_shuffle(&res);
	EXPECT(AST(a, 0), BAST(a, DLM_EX));
	granted(a, DLM_EX);
	queue_is(Q_CONVERTING, b, NULL);
	grant_shuffle(&res);
	EXPECT_NONE();

	cr_assert_eq(grant_convert(&res, a, 0, DLM_NL, NULL), WS_GRANTED);
	EXPECT(AST(a, 0), AST(b, 0));
	granted(a, DLM_NL);
	granted(b, DLM_EX);
	queue_is(Q_CONVERTING, NULL);
}

/* NL conflicts with nothing: it never waits behind a blocked lock. */
Test(dlmd_grant, new_nl_passes_a_blocked_ex)
{
	hold(a, 0, DLM_PR);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(grant_new(&res, c, DLM_FL_NOQUEUE, DLM_NL), WS_GRANTED);
	EXPECT(AST(c, 0));
	granted(c, DLM_NL);
	queue_is(Q_BLOCKED, x, NULL);
}

/*
 * Readers that keep their lock cached at NL and up-convert to PR (as
 * dlmfs does) do not pass an EX that asked before them: the EX is
 * granted once the readers already in leave, and they come after it.
 */
Test(dlmd_grant, cached_readers_do_not_starve_a_blocked_ex)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_NL);
	hold(c, 0, DLM_NL);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX));
	cr_assert_eq(grant_convert(&res, b, 0, DLM_PR, NULL), WS_QUEUED);
	cr_assert_eq(grant_convert(&res, c, DLM_FL_NOQUEUE, DLM_PR, NULL), WS_NOTQUEUED);
	EXPECT_NONE();
	queue_is(Q_CONVERTING, b, NULL);

	grant_convert(&res, a, 0, DLM_NL, NULL);
	EXPECT(AST(a, 0), AST(x, 0), BAST(x, DLM_PR));
	granted(x, DLM_EX);
	queue_is(Q_CONVERTING, b, NULL);

	grant_unlock(&res, x, NULL);
	EXPECT(AST(b, 0));
	granted(b, DLM_PR);
}

/* A convert that already blocks the head (PR->EX against EX) goes first. */
Test(dlmd_grant, convert_in_the_heads_way_goes_first)
{
	hold(a, 0, DLM_PR);
	hold(b, 0, DLM_PR);
	cr_assert_eq(grant_new(&res, x, 0, DLM_EX), WS_QUEUED);
	EXPECT(BAST(a, DLM_EX), BAST(b, DLM_EX));
	cr_assert_eq(grant_convert(&res, a, 0, DLM_EX, NULL), WS_QUEUED);
	grant_unlock(&res, b, NULL);
	EXPECT(AST(a, 0), BAST(a, DLM_EX));
	granted(a, DLM_EX);
	queue_is(Q_BLOCKED, x, NULL);
	grant_unlock(&res, a, NULL);
	EXPECT(AST(x, 0));
	granted(x, DLM_EX);
}
