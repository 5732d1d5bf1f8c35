/*
 * The heartbeat lease: hbd's word to this node's disk writers that the
 * other nodes cannot yet have declared this node dead. hbd keeps it in
 * <rundir>/hbd.lease, a file both map; writers read it before every
 * disk I/O, hbd renews it after every heartbeat write that completes.
 * The file also carries what a restarted hbd needs to go on as the same
 * incarnation (doc/heartbeat-lease.md gives the timing argument).
 *
 * Times are CLOCK_BOOTTIME microseconds: it runs through a suspend, as
 * the other nodes' clocks do.
 */
#ifndef HBLEASE_H
#define HBLEASE_H

#include <stddef.h>
#include <stdint.h>

#include "clusterconf.h"

#define HBLEASE_FILE		"hbd.lease"	/* hbd's; pcmkd keeps pcmkd.lease */
#define HBLEASE_MAGIC		0x4c48324fu	/* "O2HL" */
#define HBLEASE_VERSION		2
#define HBLEASE_MAX_NODES	255
#define HBLEASE_DEV_MAX		1024
#define HBLEASE_MAX_HOLDERS	32

struct hblease_region {
	char		name[CC_REGION_NAME_LEN + 1];
	uint8_t		in_use;		/* a running region of this hbd */
	uint8_t		used;		/* writers or lock holders depend on it */
	uint8_t		pad[5];
	uint64_t	expires_us;	/* writers stop here; 0: revoked */
	uint64_t	issued_us;	/* issue time of the last completed write */
	uint64_t	completed_us;	/* and when it completed */
	uint64_t	generation;
	uint64_t	next_generation;	/* being switched to; 0: none */
	uint64_t	seq;		/* of the last completed write */
	uint64_t	start_block;
	uint32_t	block_bytes;
	uint32_t	blocks;
	char		dev[HBLEASE_DEV_MAX];
	uint64_t	live_gen[HBLEASE_MAX_NODES];	/* 0: not live in this region */
};

/*
 * A process the incarnation depends on: a disk writer, or a lock manager
 * holding this node's cluster locks. A restarted hbd goes on with the
 * incarnation only if each is still the same live process.
 */
struct hblease_holder {
	int32_t		pid;		/* 0: a free entry */
	uint8_t		writer;
	uint8_t		guard;
	uint8_t		pad[2];
	uint64_t	starttime;	/* /proc/<pid>/stat field 22: this process */
};

struct hblease {
	uint32_t	magic;
	uint32_t	version;
	uint32_t	local_node;
	uint32_t	interval_ms;
	uint32_t	dead_threshold;
	uint32_t	holders_cur;	/* which of the two tables is whole */
	struct hblease_region regions[CC_MAX_REGIONS];
	/* Written whole into the other table, then switched to: a hbd
	 * killed while writing one leaves the last whole one. */
	struct hblease_holder holders[2][HBLEASE_MAX_HOLDERS];
};

/* A writer's read-only view of one region's lease. */
struct hblease_view {
	int			 fd;
	const struct hblease	*map;
	unsigned		 idx;
	char			 name[CC_REGION_NAME_LEN + 1];
};

uint64_t hblease_now_us(void);

/*
 * Map the lease file daemon keeps in rundir (<daemon>.lease: hbd's, or
 * pcmkd's on the pcmk stack) and find region's entry; -1 with err set.
 */
int	hblease_open(const char *rundir, const char *daemon, const char *region,
	    struct hblease_view *, char *err, size_t errlen);
void	hblease_close(struct hblease_view *);

/*
 * The keeper's side (hbd, pcmkd): map <rundir>/<daemon>.lease read-write,
 * keeping what an earlier keeper left in it when that is a lease file of
 * this version; else it starts zeroed, and *stale says whether it held
 * something else before (not merely nothing). Fatal when it cannot.
 */
struct hblease *hblease_keep(const char *rundir, const char *daemon, int *stale);

/* When the lease ends (0: revoked or the entry no longer names the region). */
uint64_t hblease_expires_us(const struct hblease_view *);
/* Past this, the others may have declared us dead: no renewal can come. */
uint64_t hblease_final_us(const struct hblease_view *, uint64_t expires_us);

/*
 * The arithmetic both sides share: the others can declare us dead no
 * earlier than (dead_threshold - 1) intervals after the issue of our last
 * write they saw; writers stop one interval (half the window, when
 * shorter) before that.
 */
uint64_t hblease_death(uint64_t issued_us, unsigned interval_ms, unsigned dead_threshold);
uint64_t hblease_margin_us(unsigned interval_ms, unsigned dead_threshold);

#endif
