/*
 * fsd's side of the cluster stack: the dlmd connection and its threads
 * (dlmglue.c), node death (deadnode.c) and the attachment to nmd, hbd and
 * netd made at mount (stack.c).
 */
#ifndef FSD_GLUE_H
#define FSD_GLUE_H

#include <pthread.h>
#include <stdint.h>

#define GLUE_MAX_NODES	255

struct dlmc;
struct fsd;

/*
 * For the inval thread: an invalidate (struct fsd_lock_ops) of owner, or
 * (name set) the kernel's dentry of name in directory owner to drop, an
 * old name of directory dir.
 */
struct inval {
	const struct fsd_lock_ops *ops;
	uint64_t	 owner;
	char		*name;
	uint64_t	 dir;
	struct inval	*next;
};

struct fsd_glue {
	struct fsd	*fs;
	char		 domain[40];		/* the volume UUID, as o2cb names it */
	struct dlmc	*dc;
	pthread_mutex_t	 cmtx;			/* the dlmc handle */
	pthread_mutex_t	 mtx;			/* every lockres' state, the queues */
	pthread_t	 dispatch_thread, dc_thread, iv_thread, fl_thread, reco_thread;
	struct fsd_lockres *dc_head, *dc_tail;	/* downconvert queue */
	/* resources nobody refers to or holds, least recently used first:
	   beyond idle_max the downconvert thread takes their locks out of dlmd */
	struct fsd_lockres *idle_head, *idle_tail;
	unsigned	 nidle, idle_max;
	/* BASTs waiting for their lock's hold time to end (holdtime.c) */
	struct fsd_lockres *hold_head;
	unsigned	 hold_max_us, hold_min_us;
	pthread_cond_t	 dc_cv;
	pthread_mutex_t	 iv_mtx;		/* inval queue */
	pthread_cond_t	 iv_cv;
	struct inval	*iv_head, *iv_tail;
	struct inval	*iv_cur;		/* being done by the inval thread */
	pthread_cond_t	 iv_done_cv;		/* an item is done */
	/* META locks whose file's pages go back and out before they come
	   down (flush_loop), under mtx */
	struct fsd_lockres *fl_head, *fl_tail;
	pthread_cond_t	 fl_cv;
	struct fsd_lockres *fl_cur;		/* being flushed */
	struct timespec	 fl_deadline;		/* when the downconvert stops waiting */
	/* nodes whose slot waits for recovery (deadnode.c), under mtx */
	uint8_t		 dead[GLUE_MAX_NODES];
	unsigned	 ndead;
	int		 reco_running;
	int		 reco_stop;		/* unmount: recovery ends, nobody waits for it */
	pthread_cond_t	 reco_cv;
	unsigned	 recoveries;		/* slots this node recovered, under mtx */
	uint64_t	 lvb_stats;		/* stats answered from a META LVB, under mtx */
	uint64_t	 upconverts;		/* requests for a higher level, under mtx */
	int		 stopping;
	int		 dead_conn;		/* dlmd is gone */
	/* the periodic orphan scan (orphanscan.c) */
	struct fsd_lockres *os_lock;		/* ORPHAN_SCAN */
	pthread_t	 os_thread;
	pthread_mutex_t	 os_mtx;
	pthread_cond_t	 os_cv;
	int		 os_running, os_stop;
	unsigned	 os_interval_ms;
	uint32_t	 os_seqno;		/* the scan count we last saw */
	unsigned	 os_scans;		/* scans this node ran, under os_mtx */
	uint64_t	 os_deleted;		/* orphans they deleted, under os_mtx */
};

/* dlmglue.c */
/*
 * Join domain; lock_cache: idle lock resources kept (their locks cached);
 * hold_max_us, hold_min_us: the bounds of the locks' minimum hold times.
 */
int	 glue_start(struct fsd *fs, const char *rundir, const char *domain, unsigned lock_cache,
	    unsigned hold_max_us, unsigned hold_min_us, char *err, size_t errlen);
/* Leave the domain (after unmount work), stop the threads. */
void	 glue_stop(struct fsd *fs);
/*
 * Have the inval thread drop the kernel's dentry of name in directory
 * parent, an old name of directory dir.
 */
void	 glue_drop_dentry(struct fsd_glue *g, uint64_t dir, uint64_t parent, const char *name,
	    size_t len);
/* Wait up to ms until no old name of directory dir is still to be dropped. */
void	 glue_wait_dentry_drops(struct fsd_glue *g, uint64_t dir, unsigned ms);

/* deadnode.c */
void	 glue_node_down(struct fsd_glue *g, unsigned node);
/* A dead node's journal is still to be replayed, and this thread would
 * wait for it (not recovery's own). glue->mtx held; reco_cv tells of a change. */
int	 glue_recovery_pending(struct fsd_glue *g);
int	 glue_reco_start(struct fsd_glue *g);
void	 glue_reco_stop(struct fsd_glue *g);
/* Lost dlmd: this node may no longer touch the disk. Does not return. */
void	 glue_fence(struct fsd *fs) __attribute__((__noreturn__));

/* orphanscan.c: every interval (0: ocfs2's 300 s), one node deletes the
 * orphans of every slot that no node has open. */
int	 glue_orphan_scan_start(struct fsd *fs, unsigned interval_ms);
void	 glue_orphan_scan_stop(struct fsd_glue *g);

/* stack.c */
struct fsd_stack;
struct fsd_stack_info {
	unsigned	 node;			/* our node number */
};
/*
 * Before a cluster mount: check the volume's cluster against the running
 * one, start its heartbeat region (held while the returned handle lives),
 * wait until it is steady and every heartbeating node is linked, and
 * register as one of this node's disk writers (fencing kills us).
 */
struct fsd_stack *stack_attach(struct fsd *fs, const char *rundir, unsigned wait_ms,
	    struct fsd_stack_info *si, char *err, size_t errlen);
void	 stack_detach(struct fsd_stack *st);

/*
 * lease.c: registered as a disk writer, every transfer under the lease
 * of the membership daemon (hbd, or pcmkd on the pcmk stack).
 */
struct fsd_lease;
struct fsd_lease *lease_start(struct fsd *fs, const char *rundir, const char *daemon,
	    char *err, size_t errlen);
void	 lease_stop(struct fsd *fs, struct fsd_lease *l);

#endif
