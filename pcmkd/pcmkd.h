/*
 * pcmkd: the membership daemon of the pcmk stack. corosync says which
 * nodes are alive (its quorum service), whether this partition may
 * write (quorate), and which nodes run the stack (one CPG group per
 * cluster); pcmkd serves that to netd, dlmd and fsd over pcmkd.sock in
 * hbd's protocol (proto/hbd.proto), with hbd's writer lease in
 * pcmkd.lease, so that they need nothing but the socket's name.
 * doc/pcmk-stack.md gives the rules and why.
 */
#ifndef PCMKD_H
#define PCMKD_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "clusterconf.h"
#include "envelope.pb-c.h"
#include "writers.h"

#define PM_MAX_NODES		255	/* OCFS2 node numbers 0..254 */
#define PM_ACK_TIMEOUT_MS	5000	/* a subscriber that does not ack in time is skipped */
#define PM_LEASE_MS		1000	/* one renewal's worth of writing */
#define PM_RENEW_MS		250	/* renewal period */
#define PM_FENCE_RETRY_MS	1000	/* first retry of a failed fence, then doubling */
#define PM_FENCE_RETRY_MAX_MS	30000
#define PM_FENCE_TIMEOUT_MS	330000	/* an attempt that runs longer is killed (failed) */

struct event_base;
struct nmd_client;
struct ipc_server;
struct hblease;
struct pm_fence_run;

/*
 * members.c: what corosync says, and the node states decided from it
 * (pure, unit-tested). A node is up once it is in corosync's membership
 * of a quorate partition and its pcmkd has joined our group; it is down
 * only once corosync has removed it from the membership, or its pcmkd
 * left the group on purpose (stopped with nothing to recover, or fenced
 * itself). A pcmkd that merely died (the group says PROCDOWN) leaves its
 * node up: its disk writers stop with their lease, its lock manager
 * still runs, and a restarted pcmkd goes on.
 */
enum pm_group_why { PM_JOINED, PM_LEFT, PM_PROC_DIED, PM_NODE_DIED };

struct pm_members {
	int		quorum_known;	/* a notification came since start */
	int		quorate;
	uint64_t	ring_seq;	/* of the last quorum notification */
	int		cpg_ring_known;	/* a CPG totem change came since (re)connecting */
	uint64_t	cpg_ring_seq;	/* of CPG's last totem change */
	uint8_t		in_membership[PM_MAX_NODES];
	uint8_t		in_group[PM_MAX_NODES];
	uint8_t		up[PM_MAX_NODES];
	uint8_t		left_clean[PM_MAX_NODES];	/* its pcmkd left the group on purpose */
	uint64_t	gen[PM_MAX_NODES];	/* ring_seq when it came up */
};

/* PM_FAILED: down without leaving the group: to be fenced before it is told. */
enum pm_change { PM_SAME, PM_UP, PM_DOWN, PM_FAILED };

/* The quorum service's notification: quorate, ring, the members' node ids. */
void	pm_quorum(struct pm_members *, int quorate, uint64_t ring_seq,
	    const uint32_t *ids, size_t n);
/*
 * Quorum lost: said so by corosync. Before its first notification a
 * (re)started pcmkd knows nothing, and the lease an earlier pcmkd left
 * runs on until it is renewed or runs out.
 */
int	pm_quorum_lost(const struct pm_members *);
/*
 * CPG's totem change: its ring. Nothing is decided while it is not the
 * quorum service's ring, as dlm_controld waits (its check_ringid_done):
 * the two services' news of one membership change come separately.
 */
void	pm_cpg_ring(struct pm_members *, uint64_t ring_seq);
void	pm_cpg_ring_forget(struct pm_members *);
int	pm_rings_agree(const struct pm_members *);
/* A change of our group: id joined, left, its pcmkd died or its node died. */
void	pm_group(struct pm_members *, uint32_t id, enum pm_group_why);
/* Decide node: its new state (m->up updated); why says why when it changed. */
enum pm_change pm_decide(struct pm_members *, unsigned node, const char **why);

/*
 * fence.c: fencing of the nodes that failed (pure, unit-tested). A
 * node is WAITING for an attempt (due at next_ms, only while quorate),
 * RUNNING one, or CONFIRMED (fenced at a time no earlier than it left)
 * until it is reported down; then IDLE again.
 */
enum pm_fence_state { PF_IDLE, PF_WAITING, PF_RUNNING, PF_CONFIRMED };

struct pm_fence_node {
	enum pm_fence_state	state;
	time_t			left_at;	/* wall clock, s: when it failed */
	time_t			fenced_at;	/* wall clock, s: the confirmation's */
	uint64_t		next_ms;	/* monotonic: next attempt not before */
	unsigned		tries;
	char			last_error[256];
};

struct pm_fencing {
	struct pm_fence_node	n[PM_MAX_NODES];
};

void	fence_begin(struct pm_fencing *, unsigned node, time_t left_at, uint64_t now_ms);
int	fence_pending(const struct pm_fencing *, unsigned node);
/* An attempt should start now: waiting, due, and this partition quorate. */
int	fence_due(const struct pm_fencing *, unsigned node, int quorate, uint64_t now_ms);
void	fence_started(struct pm_fencing *, unsigned node);
/* The attempt failed: the next is due after a doubling delay. */
void	fence_failed(struct pm_fencing *, unsigned node, uint64_t now_ms, const char *why);
/* The attempt says fenced at fenced_at: 0 when that counts, else -1 (failed). */
int	fence_confirmed(struct pm_fencing *, unsigned node, time_t fenced_at, uint64_t now_ms);
/* 1 once: confirmed and quorate, the node is to be reported down now. */
int	fence_take_confirmed(struct pm_fencing *, unsigned node, int quorate);
/* The earliest next_ms of a waiting node; UINT64_MAX when none. */
uint64_t fence_next_due_ms(const struct pm_fencing *);

struct pm_region {
	TAILQ_ENTRY(pm_region)	 entry;
	char			 name[CC_REGION_NAME_LEN + 1];
	unsigned		 lease_idx;
	int			 steady;	/* REGION_STARTED told */
	int			 seen;		/* in the last configuration */
};

struct pcmkd {
	struct event_base	*base;
	const char		*rundir;

	/* nmd (nmdlink.c) */
	struct nmd_client	*nmd;
	int			 configured;
	char			 cluster[CC_CLUSTER_NAME_MAX + 1];
	unsigned		 local_node;
	uint8_t			 node_known[PM_MAX_NODES];	/* in cluster.conf */
	char			 node_names[PM_MAX_NODES][CC_NODE_NAME_MAX + 1];

	/* corosync (corosync.c) */
	struct pm_corosync	*cs;
	uint32_t		 nodeid;	/* corosync's, = our node number */
	char			 cs_cluster[CC_CLUSTER_NAME_MAX + 1];	/* totem.cluster_name */
	int			 in_group;	/* we joined and corosync said so */

	struct pm_members	 m;
	TAILQ_HEAD(, pm_region)	 regions;
	struct disk_writers	 writers;	/* common/writers.c */

	int			 fenced;
	char			 fence_reason[512];
	int			 stopping;

	/* fencing of failed nodes (fence.c, fenceexec.c) */
	enum cc_pcmk_fencing	 fencing;	/* cluster.conf: fencing */
	char			 fence_program[CC_FENCE_AGENT_MAX + 1];
	struct pm_fencing	 fences;
	struct pm_fence_run	*fence_runs;
	struct event		*fence_ev;

	/* lease.c */
	int			 lease_fd;
	struct hblease		*lease;
	struct event		*renew_ev;

	/* api.c */
	struct ipc_server	*ipc;
	struct subscribers	*subs;
};

/* corosync.c */
int	cs_connect(struct pcmkd *, char *err, size_t errlen);
void	cs_check_nodes(struct pcmkd *);
int	cs_join(struct pcmkd *, char *err, size_t errlen);
void	cs_track(struct pcmkd *);
void	cs_leave(struct pcmkd *);
int	cs_rejoin(struct pcmkd *, char *err, size_t errlen);
void	cs_close(struct pcmkd *);

/* state.c: act on what corosync said. */
void	state_update(struct pcmkd *);
void	state_fence(struct pcmkd *, const char *fmt, ...) __attribute__((__format__(printf, 2, 3)));
int	state_clear_fence(struct pcmkd *, char *err, size_t errlen);
int	state_writing_allowed(const struct pcmkd *);

/*
 * fenceexec.c: the fencing program (cluster.conf's fence_agent, or
 * pcmkd-stonith for pacemaker's fencer) run for each due node: argv
 * PROGRAM NODE_NAME NODE_ID LEFT_AT; exit 0 is a fence confirmed now.
 */
int	fenceexec_init(struct pcmkd *, const char *self_path, char *err, size_t errlen);
void	fenceexec_update(struct pcmkd *);

/*
 * runstate.c: the nodes up and the pending fences in <rundir>/pcmkd.state,
 * across restarts; dropped when pcmkd leaves the group on purpose.
 */
void	runstate_save(const struct pcmkd *);
void	runstate_load(struct pcmkd *);
void	runstate_drop(const struct pcmkd *);

/* nmdlink.c */
void	nmdlink_start(struct pcmkd *, void (*configured)(struct pcmkd *));

/* lease.c */
void	lease_open(struct pcmkd *);
void	lease_region_add(struct pcmkd *, struct pm_region *);
void	lease_region_drop(struct pcmkd *, struct pm_region *);
void	lease_renew_all(struct pcmkd *);
void	lease_revoke_all(struct pcmkd *);
uint64_t lease_left_ms(const struct pcmkd *, const struct pm_region *);

/* api.c */
void	api_start(struct pcmkd *);
void	api_node_event(struct pcmkd *, int up, unsigned node, uint64_t gen, const char *reason);
void	api_region_event(struct pcmkd *, Hbd__RegionEventKind, const char *region,
	    const char *reason);
void	api_fenced_event(struct pcmkd *, const char *reason);
void	api_unfenced_event(struct pcmkd *, const char *reason);
int	api_writers_kill(struct pcmkd *);
int	api_users(struct pcmkd *, char *who, size_t len);

#endif
