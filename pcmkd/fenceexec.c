/*
 * Running the fencing program for the nodes fence.c says are due. One
 * attempt per node at a time, off the event loop: a child process
 * watched through its pidfd, killed past PM_FENCE_TIMEOUT_MS. The
 * program is cluster.conf's fence_agent (fencing = agent), or
 * pcmkd-stonith beside pcmkd (fencing = pacemaker), which asks
 * pacemaker's fencer as dlm_controld's dlm_stonith does. Its argv:
 * PROGRAM NODE_NAME NODE_ID LEFT_AT (Unix seconds when corosync lost the
 * node); exit status 0 is the fence confirmed.
 */
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "util.h"

#include "pcmkd.h"

#define STONITH_HELPER	"pcmkd-stonith"

struct pm_fence_run {
	struct pm_fence_run	*next;
	struct pcmkd		*p;
	unsigned		 node;
	pid_t			 pid;
	int			 pidfd;
	int			 timed_out;
	struct event		*exit_ev, *timeout_ev;
};

int
fenceexec_init(struct pcmkd *p, const char *self_path, char *err, size_t errlen)
{
	char self[PATH_MAX];
	ssize_t n;

	if (p->fencing == CC_PCMK_FENCING_PACEMAKER) {
		/* the helper is installed beside pcmkd, as in the build directory */
		if ((n = readlink(self_path, self, sizeof(self) - 1)) == -1) {
			snprintf(err, errlen, "cannot find pcmkd's own path (%s): %s", self_path,
			    strerror(errno));
			return -1;
		}
		self[n] = '\0';
		snprintf(p->fence_program, sizeof(p->fence_program), "%s/" STONITH_HELPER,
		    dirname(self));
	}
	if (access(p->fence_program, X_OK) == -1) {
		snprintf(err, errlen, "the fencing program %s cannot be run: %s",
		    p->fence_program, strerror(errno));
		return -1;
	}
	return 0;
}

static void
run_free(struct pcmkd *p, struct pm_fence_run *r)
{
	struct pm_fence_run **pp;

	for (pp = &p->fence_runs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	event_free(r->exit_ev);
	event_free(r->timeout_ev);
	close(r->pidfd);
	free(r);
}

static void
run_exited(evutil_socket_t fd, short ev, void *arg)
{
	struct pm_fence_run *r = arg;
	struct pcmkd *p = r->p;
	struct pm_fence_node *fn = &p->fences.n[r->node];
	char why[160];
	int status;

	(void)fd;
	(void)ev;
	if (waitpid(r->pid, &status, 0) == -1) {
		log_warn("fencing node %u: waitpid %d", r->node, (int)r->pid);
		status = -1;
	}
	if (status == 0 && !r->timed_out &&
	    fence_confirmed(&p->fences, r->node, time(NULL), now_ms()) == 0)
		log_warnx("fencing node %u (%s): confirmed by %s (attempt %u)", r->node,
		    p->node_names[r->node], p->fence_program, fn->tries);
	else {
		if (r->timed_out)
			snprintf(why, sizeof(why), "timed out after %d s (killed)",
			    PM_FENCE_TIMEOUT_MS / 1000);
		else if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 0)
			snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(status));
		else if (status != -1 && WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "no confirmation");
		if (fn->state == PF_RUNNING)
			fence_failed(&p->fences, r->node, now_ms(), why);
		log_warnx("fencing node %u (%s): attempt %u failed (%s): its journal and locks "
		    "stay untouched; retrying in %llu ms", r->node, p->node_names[r->node],
		    fn->tries, fn->last_error,
		    (unsigned long long)(fn->next_ms > now_ms() ? fn->next_ms - now_ms() : 0));
	}
	run_free(p, r);
	state_update(p);
}

static void
run_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct pm_fence_run *r = arg;

	(void)fd;
	(void)ev;
	r->timed_out = 1;
	if (syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0) == -1 && errno != ESRCH)
		log_warn("fencing node %u: pidfd_send_signal(%d)", r->node, (int)r->pid);
}

static void
run_start(struct pcmkd *p, unsigned node)
{
	struct pm_fence_run *r;
	struct timeval tv = { PM_FENCE_TIMEOUT_MS / 1000, 0 };
	char id[16], left[32];
	pid_t pid;
	int fd, pidfd;

	snprintf(id, sizeof(id), "%u", node);
	snprintf(left, sizeof(left), "%lld", (long long)p->fences.n[node].left_at);
	fence_started(&p->fences, node);
	log_warnx("fencing node %u (%s): attempt %u: %s %s %s %s", node, p->node_names[node],
	    p->fences.n[node].tries, p->fence_program, p->node_names[node], id, left);
	if ((pid = fork()) == -1) {
		log_warn("fencing node %u: fork", node);
		fence_failed(&p->fences, node, now_ms(), "cannot fork");
		return;
	}
	if (pid == 0) {
		/* the program's output goes to our log; nothing else of ours is its */
		if ((fd = open("/dev/null", O_RDONLY)) != -1 && fd != 0) {
			dup2(fd, 0);
			close(fd);
		}
		close_range(3, ~0U, 0);
		setsid();
		execl(p->fence_program, p->fence_program, p->node_names[node], id, left,
		    (char *)NULL);
		fprintf(stderr, "pcmkd: cannot run %s: %s\n", p->fence_program, strerror(errno));
		_exit(127);
	}
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1)
		fatal("pidfd_open of the fencing program");
	r = xcalloc(1, sizeof(*r));
	r->p = p;
	r->node = node;
	r->pid = pid;
	r->pidfd = pidfd;
	if ((r->exit_ev = event_new(p->base, pidfd, EV_READ, run_exited, r)) == NULL ||
	    (r->timeout_ev = evtimer_new(p->base, run_timeout, r)) == NULL ||
	    event_add(r->exit_ev, NULL) == -1 || evtimer_add(r->timeout_ev, &tv) == -1)
		fatalx("out of memory for the fencing program's events");
	r->next = p->fence_runs;
	p->fence_runs = r;
}

static void
due_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	fenceexec_update(arg);
}

/* Start what is due, and wake up when the next retry is. */
void
fenceexec_update(struct pcmkd *p)
{
	struct timeval tv;
	uint64_t next, now = now_ms();
	unsigned i;

	for (i = 0; i < PM_MAX_NODES; i++)
		if (fence_due(&p->fences, i, p->m.quorate, now))
			run_start(p, i);
	if (p->fence_ev == NULL && (p->fence_ev = evtimer_new(p->base, due_timer, p)) == NULL)
		fatalx("out of memory for the fencing timer");
	evtimer_del(p->fence_ev);
	if ((next = fence_next_due_ms(&p->fences)) == UINT64_MAX || !p->m.quorate)
		return;
	next = next > now ? next - now : 0;
	tv.tv_sec = (time_t)(next / 1000);
	tv.tv_usec = (suseconds_t)(next % 1000) * 1000;
	evtimer_add(p->fence_ev, &tv);
}
