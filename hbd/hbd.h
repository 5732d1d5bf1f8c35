/*
 * hbd: the disk heartbeat daemon. It writes this node's o2hb block to
 * its slot of every heartbeat region, reads everybody else's, decides
 * which nodes are alive, tells the other daemons in a fixed order, and
 * fences this node when it can no longer prove to its peers that it is
 * alive.
 */
#ifndef HBD_H
#define HBD_H

#include <sys/queue.h>
#include <sys/types.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "clusterconf.h"
#include "envelope.pb-c.h"
#include "writers.h"

#define HB_MAX_NODES		255	/* O2NM_MAX_NODES: slots 0..254 */
#define HB_LIVE_THRESHOLD	2	/* O2HB_LIVE_THRESHOLD */
#define HB_PROBE_SAMPLES	2	/* read-only samples before our first write */
#define HB_LAT_RING		4096	/* write latencies kept for percentiles */
#define HB_ACK_TIMEOUT_MS	5000	/* a subscriber that does not ack in time is skipped */

struct event;
struct event_base;
struct hblease_holder;
struct ipc_conn;
struct ipc_server;
struct nmd_client;

/* block.c: the on-disk block. */
struct hb_block {
	uint64_t	seq;
	uint8_t		node;
	uint32_t	cksum;		/* as found on disk (decode only) */
	uint64_t	generation;
	uint32_t	dead_ms;
};

/* Fill a whole block: fields, zeroes, checksum. */
void	hb_block_encode(void *buf, unsigned block_bytes, const struct hb_block *b);
/* The fields; returns 1 when the checksum matches, 0 when it does not. */
int	hb_block_decode(const void *buf, unsigned block_bytes, struct hb_block *b);

/* liveness.c: o2hb's rules, pure. */
struct hb_sample {
	int		crc_ok;
	uint64_t	seq;
	uint64_t	generation;
	uint32_t	dead_ms;
};

struct hb_slot {
	unsigned	num;
	int		live;
	uint64_t	last_seq;
	uint64_t	last_gen;
	unsigned	changed;	/* ds_changed_samples */
	unsigned	equal;		/* ds_equal_samples */
	uint64_t	last_change_ms;	/* caller's clock at the last change */
	uint64_t	missed_total;	/* unchanged or bad samples while live */
	uint32_t	dead_ms;	/* as last read */
	int		bad_crc_seen;
};

enum hb_transition { HB_SAME, HB_UP, HB_DOWN };
enum hb_reason {
	HB_WHY_CHANGED_SAMPLES,
	HB_WHY_MISSED_SAMPLES,
	HB_WHY_NEW_GENERATION,
	HB_WHY_CLEAN_STOP,
	HB_WHY_REGION_STOPPED,
};

struct hb_verdict {
	enum hb_transition transition;
	enum hb_reason	why;
	uint64_t	generation;	/* of the incarnation that came or went */
	unsigned	missed;		/* HB_WHY_MISSED_SAMPLES: how many */
	int		bad_crc;	/* first bad block of a run: log it */
	int		dead_ms_mismatch;	/* came up with another dead time */
};

void	hb_slot_seed(struct hb_slot *, unsigned num, const struct hb_sample *);
void	hb_slot_sample(struct hb_slot *, const struct hb_sample *,
	    unsigned dead_threshold, uint32_t our_dead_ms, uint64_t now_ms,
	    struct hb_verdict *);
const char *hb_reason_text(const struct hb_verdict *, char *buf, size_t len);

struct hb_steady {
	unsigned	left;		/* hr_steady_iterations */
	unsigned	unsteady_left;	/* hr_unsteady_iterations */
};
enum hb_steady_state {
	HB_STEADY_WAITING, HB_STEADY_REACHED, HB_STEADY_ALREADY, HB_STEADY_GAVE_UP,
};
void	hb_steady_init(struct hb_steady *, int first_global);
enum hb_steady_state hb_steady_step(struct hb_steady *, int iteration_ok,
	    int membership_change);

struct hb_membership {
	uint8_t		live_in[HB_MAX_NODES];	/* regions that see it live */
	uint8_t		up[HB_MAX_NODES];
};
int	hb_member_rule(unsigned live_in, unsigned nregions, int global);
enum hb_transition hb_member_slot(struct hb_membership *, unsigned node, int live,
	    unsigned nregions, int global);
enum hb_transition hb_member_recheck(struct hb_membership *, unsigned node,
	    unsigned nregions, int global);

/* region.c: one heartbeat region and its I/O thread. */
enum hb_region_state {
	RS_PROBING,	/* reading only: is somebody else writing our slot? */
	RS_STARTING,	/* writing, not yet steady */
	RS_STEADY,
	RS_STOPPING,
	RS_FAILED,	/* kept for the status until its nmd item goes */
};

enum hb_io_job { IO_NONE, IO_READ, IO_ITERATE, IO_LEAVE, IO_EXIT };

/* Shared with the I/O thread, under mu. */
struct hb_io {
	pthread_t	 thread;
	int		 started;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	enum hb_io_job	 job;		/* queued for the thread */
	enum hb_io_job	 done;		/* what just completed */
	int		 busy;		/* a job is queued or running */
	int		 pipe[2];	/* thread -> event loop: "done" */
	unsigned	 nslots;	/* read slots 0..nslots-1 */
	int		 rerr, werr;	/* errno of the last job, 0 ok */
	uint64_t	 write_us;
	uint64_t	 issued_us, done_us;	/* CLOCK_BOOTTIME, of the last write */
	uint64_t	 submitted_us;	/* when the event loop handed over the job */
	atomic_int	 no_writes;	/* fenced: the thread must not write again */
};

struct hb_region {
	TAILQ_ENTRY(hb_region)	 entry;
	struct hbd		*hbd;
	char			 name[CC_REGION_NAME_LEN + 1];
	char			*dev;
	unsigned		 block_bytes;
	uint64_t		 start_block;
	unsigned		 blocks;
	int			 fd;
	uint64_t		 generation;
	enum hb_region_state	 state;
	char			 why[256];	/* failed: why */
	int			 seeded;
	unsigned		 probes_left;
	struct hb_steady	 steady;
	int			 timed_out;	/* write timeout fired (global mode) */
	int			 last_ok;	/* the last iteration's I/O succeeded */
	unsigned		 num;		/* o2hb's region number (0 in local mode) */
	uint32_t		 nego_key;	/* netd key of its negotiation messages */
	uint8_t			 nego_asked[HB_MAX_NODES];	/* sent us NEGO_TIMEOUT */
	struct hb_slot		 slots[HB_MAX_NODES];
	uint8_t			*rbuf;		/* all slots, O_DIRECT-aligned */
	uint8_t			*wbuf;		/* our block */
	struct hb_block		 pending;	/* the block being written */
	struct hb_block		 written;	/* last block whose write completed */
	int			 check_own;	/* written is on disk: expect it */
	uint64_t		 tick_ms;	/* wall clock of the sample in flight */
	int			 stop_clean;	/* stopping: write the clean-stop block */
	int			 zombie;	/* its thread is busy: clean up when idle */
	int			 unlinked;	/* off the list: free it then */
	int			 resuming;	/* restored from the lease file: first iteration */
	int			 resumed;	/* taken over from an earlier hbd */
	uint64_t		 resume_gen[2];	/* what our slot may hold when resumed */
	int			 kept_logged;	/* region_kept_for_locks said so */
	int			 nego_approved;	/* since our last completed write */
	unsigned		 lease_idx;	/* its entry in the lease file */
	struct event		*tick_ev;
	struct event		*timeout_ev;
	struct event		*nego_ev;
	struct event		*done_ev;
	struct hb_io		 io;
	uint64_t		 lat_last_us, lat_max_us, writes, skipped;
	uint32_t		 lat[HB_LAT_RING];
	int			 rerr_logged, werr_logged, skip_logged;
};

struct hb_region *region_start(struct hbd *, const char *name, const char *dev,
	    unsigned block_bytes, uint64_t start_block, unsigned blocks);
struct hblease_region;
struct hb_region *region_resume(struct hbd *, const struct hblease_region *, unsigned idx);
void	region_restore_live(struct hb_region *, unsigned node, uint64_t gen);
void	region_stop(struct hb_region *, int clean);
void	region_new_generation(struct hb_region *);
void	region_forget(struct hb_region *);	/* a failed one */
struct hb_region *region_find(struct hbd *, const char *name);
unsigned region_nrunning(struct hbd *);
void	region_arm_timeouts(struct hb_region *);
void	region_fill_status(struct hb_region *, Hbd__RegionStatus *);
void	region_free_status(Hbd__RegionStatus *);

/* membership.c: nodes up or down across regions. */
void	member_slot(struct hbd *, struct hb_region *, unsigned node, int live,
	    const struct hb_verdict *, uint64_t time_ms);
void	member_recheck_all(struct hbd *, struct hb_region *why);
int	member_region_needed(struct hbd *, struct hb_region *);

/* lease.c: the writers' lease and what a restarted hbd resumes from. */
void	lease_open(struct hbd *);
void	lease_restore(struct hbd *);
void	lease_region_add(struct hb_region *);
int	lease_renew(struct hb_region *, uint64_t issued_us, uint64_t done_us,
	    uint64_t submitted_us);
uint64_t lease_left_us(const struct hb_region *);
void	lease_set_live(struct hb_region *, unsigned node, uint64_t gen);
void	lease_region_drop(struct hb_region *);
void	lease_revoke_all(void);
void	lease_note_users(struct hbd *);
void	lease_approved(struct hb_region *);
void	lease_next_generation(struct hb_region *);
unsigned lease_holders(struct hblease_holder *, unsigned max);

/* holders.c: the processes the incarnation depends on, across a restart of hbd. */
int	holders_restore(struct hbd *, char *why, size_t len);
void	holders_claim(struct hbd *, pid_t, int writer, int guard);
int	holders_users(struct hbd *, char *who, size_t len, size_t *n, int users);
void	holders_fill(struct hbd *, struct hblease_holder *, unsigned max, unsigned *n);

/* nmdlink.c: our client connection to nmd. */
void	nmd_link_start(struct hbd *);
void	nmd_pin(struct hbd *, unsigned node, int pin);
void	nmd_set_pid(struct hbd *, const char *region, int pid);

/*
 * nego.c: o2hb's write-timeout negotiation, through netd. The decision
 * is pure (hb_nego_*); the rest talks to netd.sock.
 */
#define HB_NEGO_TIMEOUT_MSG	1	/* o2net type: "my write hangs too" */
#define HB_NEGO_APPROVE_MSG	2	/* the master: "everybody's does: re-arm" */

enum hb_nego_action {
	HB_NEGO_NONE,		/* our last iteration failed: let the write timeout fence */
	HB_NEGO_ASK,		/* send NEGO_TIMEOUT to the master */
	HB_NEGO_WAIT,		/* master: some live node has not asked yet: look again */
	HB_NEGO_APPROVE,	/* master: every live node has: re-arm and approve the rest */
};

uint32_t hb_nego_key(unsigned region_num, const char *name);
unsigned hb_nego_timeout_ms(unsigned interval_ms, unsigned dead_threshold);
unsigned hb_nego_recheck_ms(unsigned interval_ms);
enum hb_nego_action hb_nego_decide(uint8_t asked[HB_MAX_NODES],
	    const uint8_t live[HB_MAX_NODES], unsigned self, int last_ok,
	    unsigned *master);
int	hb_nego_sender(const uint8_t *payload, size_t len);

void	nego_start(struct hbd *);
void	nego_region_start(struct hb_region *);
void	nego_region_stop(struct hb_region *);
void	nego_timeout(evutil_socket_t, short, void *);

/* devscan.c: the device of a global heartbeat region. */
int	devscan_find(const char *uuid, char *path, size_t len);

/* fence.c */
void	fence(struct hbd *, const char *fmt, ...) __attribute__((__format__(printf, 2, 3)));
int	fence_clear(struct hbd *);
void	fence_restore(struct hbd *);
void	fence_reincarnate(struct hbd *, const char *why);
int	fence_if_used(struct hbd *, struct hb_region *, int users, const char *why);
int	region_kept_for_locks(struct hbd *, struct hb_region *);

/* api.c: hbd.sock. */
void	api_start(struct hbd *);
void	api_node_event(struct hbd *, int up, unsigned node, uint64_t gen,
	    const char *region, const char *reason, uint64_t time_ms,
	    uint64_t last_change_ms);
void	api_region_event(struct hbd *, Hbd__RegionEventKind, const char *region,
	    const char *reason);
void	api_fenced_event(struct hbd *, const char *reason, const char *method);
void	api_unfenced_event(struct hbd *, const char *reason);
#define USERS_WRITERS	0x1
#define USERS_LOCKS	0x2
int	api_region_users(struct hbd *, const char *region, char *who, size_t len);
void	api_holders_fill(struct hbd *, struct hblease_holder *, unsigned max, unsigned *n);

/* A writer or lock holder of an earlier hbd, alive when we started (holders.c). */
struct hb_inherited {
	LIST_ENTRY(hb_inherited) entry;
	struct hbd		*h;
	pid_t			 pid;
	uint64_t		 starttime;
	int			 pidfd;
	int			 guard;		/* held cluster locks */
	struct disk_writer	*writer;	/* on h->writers until it registers again */
	struct event		*exited;
};

struct hbd {
	struct event_base	*base;
	const char		*rundir;
	const char		*node_name;

	/* From nmd. */
	int			 have_config;
	char			 cluster[CC_CLUSTER_NAME_MAX + 1];
	unsigned		 local_node;	/* CC_INVALID_NODE: none */
	unsigned		 interval_ms;
	unsigned		 dead_threshold;
	int			 global;
	enum cc_fence_method	 fence_method;
	uint8_t			 configured[HB_MAX_NODES];
	char			*node_names[HB_MAX_NODES];

	struct nmd_client	*nmd;		/* nmdlink.c */
	struct ipc_conn		*netd;		/* nego.c; NULL while netd is away */
	struct event		*netd_gone_ev;	/* nego.c: netd away too long */
	uint8_t			 global_acquired[CC_MAX_REGIONS];

	TAILQ_HEAD(, hb_region)	 regions;
	unsigned		 hung_regions;	/* stopped, their I/O still in flight */
	struct hb_membership	 members;
	uint64_t		 member_gen[HB_MAX_NODES];
	uint8_t			 pinned[HB_MAX_NODES];

	int			 stopping;	/* SIGTERM: leaving, start nothing */
	int			 fenced;
	char			 fence_reason[512];
	struct disk_writers	 writers;	/* common/writers.c */
	LIST_HEAD(, hb_inherited) inherited;

	struct ipc_server	*ipc;
	struct subscribers	*subs;	/* api.c */
};

/* Clocks: wall for what we show and write, monotonic for durations. */
uint64_t wall_ms(void);
uint64_t mono_us(void);
uint32_t hbd_dead_ms(const struct hbd *);

#endif
