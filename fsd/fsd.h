/*
 * fsd: one OCFS2 volume served through FUSE.
 *
 * Files, bottom up:
 *   fsd.h        this map; the volume, blocks, inodes and what each file exports
 *   glue.h       the cluster side: dlmd connection, recovery and stack state
 *   ops.h        what the FUSE handlers (ops*.c) share
 *   blockcheck.c metaecc's codec: CRC32 and Hamming code of a block
 *                (fs/ocfs2/blockcheck.c), a single flipped bit put back
 *   block.c      O_DIRECT block I/O and the metadata block cache; every
 *                metadata block is validated by type as it enters the cache
 *                (its metaecc check first), directory entries, extent lists
 *                and xattr headers by the checks dir.c, extent.c and xattr.c
 *                register at mount; block_set_check, where every metadata
 *                write sets the check of its type
 *   lease.c      registration with hbd as a disk writer: every transfer
 *                under the heartbeat lease
 *   lockres.c    lock resources named as ocfs2_lockid.h names them, their
 *                table and idle list; each lock type is a struct
 *                fsd_lock_ops defined by the module owning what it guards
 *                (META, RW, OPEN: inode.c; SUPER: super.c; ...)
 *   dlmglue.c    requests to dlmd, ASTs, BASTs and the downconvert thread:
 *                locks cached at the level granted until another node's
 *                BAST, the type's ops called on the way down; every access
 *                to an inode's metadata holds its META lockres
 *   lvb.c        META's value block (ocfs2_meta_lvb)
 *   stack.c      joining the node's cluster stack at mount (glue.h)
 *   deadnode.c   recovering a dead node: its slot's journal, local alloc,
 *                truncate log and slot, then its orphans
 *   flock.c      flock(2) across nodes
 *   plock.c      fcntl(2) byte-range locks across nodes
 *   journal.c    JBD2 writer: handles (all or nothing), commit, checkpoint;
 *                what a lock leaving EX must write home (doc/lock-handoff.md)
 *   replay.c     JBD2 replay of a slot's journal
 *   slot.c       the slot map
 *   super.c      mount/unmount: superblock, features, system inodes, the
 *                read-write session (slot, replay, DIRTY_FL, commit thread)
 *   ctl.c        the status socket o2ctl mounts asks
 *   alloc.c      global bitmap, suballocators, truncate log
 *   localalloc.c the slot's local alloc window for data clusters
 *   inode.c      in-memory inodes (FUSE lookup counts, per-inode locks),
 *                creating and wiping inodes
 *   kernsize.c   keeping the kernel's size of a file from falling behind
 *                another node's appends
 *   extent.c     extent trees of any depth: mapping, growth, truncation,
 *                edits anywhere (sparse files)
 *   dir.c        directory blocks: iteration, lookup, add/remove entries,
 *                block trailers; hands indexed directories to dxdir.c
 *   dirindex.c   in-memory name index of a directory without an on-disk one
 *   dxdir.c      indexed directories (indexed-dirs): the hash, dx root and
 *                leaf blocks, the free-space list of directory blocks
 *   orphan.c     the orphan directory: unlinked-while-used inodes
 *   orphanscan.c the periodic scan of every slot's orphan directory
 *   data.c       file data reads
 *   file.c       file writes and size changes
 *   inline.c     inline data: small files kept inside the inode, and their
 *                conversion to extents when they outgrow it
 *   sparse.c     holes, unwritten extents, fallocate modes, SEEK_DATA/HOLE
 *   refcount.c   refcount trees: how many files map each shared cluster,
 *                under the tree's 'T' cluster lock
 *   reflink.c    shared extents: copy_file_range shares clusters, writes
 *                copy them first (copy-on-write)
 *   qtree.c      the quota tree's arithmetic: where an id's entry lives
 *   quota.c      disk quotas: usage charged in the handle that changes it,
 *                added to the global quota files when the handle ends
 *   xattr.c      extended attributes: the inline area, xattr blocks, bucket
 *                trees, value trees; freeing them on delete
 *   acl.c        POSIX ACLs kept in xattrs: the kernel's form, the mode,
 *                inheritance, chmod
 *   dio.c        appending O_DIRECT writes: a record in the orphan dir
 *                while clusters past i_size wait for their data (append-dio)
 *   ops.c        the FUSE lowlevel table and connection setup
 *   ops_inode.c  FUSE handlers on inodes: lookup, forget, attributes, statfs
 *   ops_namei.c  FUSE handlers on names: create, mkdir, link, unlink, rename
 *   ops_dir.c    FUSE handlers reading directories
 *   ops_file.c   FUSE handlers on open files
 *   ops_xattr.c  FUSE handlers on extended attributes
 *   ops_reflink.c FSD_IOC_REFLINK: a new file sharing an open one's clusters,
 *                built in the orphan dir and named in one transaction
 *   main.c       options and wiring
 *
 * Nothing here assumes one node: all per-node state hangs off the slot
 * we claimed (struct fsd_slot), and metadata is reached through lock
 * resources; cached blocks carry the inode whose lock covers them, so a
 * downconvert forgets exactly those (block_forget_owner, inode_drop_dindex).
 */
#ifndef FSD_H
#define FSD_H

#include <endian.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "ocfs2_disk.h"
#include "volume.h"

struct fuse_session;

/* ---- block.c ---------------------------------------------------------- */

/* What a cached block was validated as (its first use decides). */
enum blk_type {
	BLK_RAW = 0,	/* no structure: slot map, journal */
	BLK_INODE,
	BLK_EXTENT,
	BLK_GROUP,
	BLK_DIR,	/* directory block: entries must tile it */
	BLK_DXDIR,	/* block of an indexed directory: entries, then a trailer */
	BLK_DX_ROOT,	/* directory index root */
	BLK_DX_LEAF,	/* directory index leaf */
	BLK_XATTR,	/* xattr block: its header or its bucket tree's root */
	BLK_REFCOUNT,	/* refcount block: a tree's root or leaf */
	BLK_REFCOUNT_EXTENT,	/* extent block of a refcount tree: its leaf records
				   point at refcount blocks */
	BLK_QUOTA,	/* block of a global quota file: its check in the last 8 bytes */
	BLK_NTYPES
};

struct fsd_buf {
	uint64_t	 blkno;
	uint8_t		*data;		/* one block, O_DIRECT aligned */
	enum blk_type	 type;
	int		 refs;		/* protected by the cache mutex */
	int		 state;		/* BUF_* below, under lock */
	pthread_mutex_t	 lock;		/* serialises the first read */
	struct fsd_buf	*hnext;		/* hash chain */
	struct fsd_buf	*lru_prev, *lru_next;	/* unreferenced buffers only */
	/* unreferenced buffers with an owner: its chain in the cache's owners */
	struct fsd_buf	*oprev, *onext;
	int		 jrun;		/* in the running transaction (journal mutex) */
	struct fsd_handle *jh;		/* the open handle that accessed it (journal mutex) */
	uint64_t	 owner;		/* inode whose META lock protects it; 0: none;
					   changed only by a holder of a reference */
	int		 owner_unsure;	/* also reached under another owner or none:
					   the journal counts its changes as ownerless */
};

#define BUF_EMPTY	0	/* not read yet */
#define BUF_VALID	1
#define BUF_BAD		2	/* failed validation; the reason was logged once */

/*
 * Checks of structures inside blocks that the layers above own, which
 * they register on the mount (dir_register_checks, extent_register_checks)
 * so that block_validate needs nothing above block.c: 0, or -1 + why.
 */
struct fsd;
typedef int (*blk_dir_check_fn)(const uint8_t *p, size_t len, char *why, size_t whylen);
/* leaf_blocks: the leaf records name one block each (a refcount tree's leaves) */
typedef int (*blk_extent_check_fn)(struct fsd *fs, const struct ocfs2_extent_list *el,
	    unsigned capacity, int leaf_blocks, char *why, size_t whylen);
/* The block types of indexed directories (BLK_DXDIR, BLK_DX_ROOT, BLK_DX_LEAF). */
typedef int (*blk_dx_check_fn)(struct fsd *fs, enum blk_type type, uint64_t blkno,
	    const uint8_t *p, char *why, size_t whylen);
/* xattr.c's check of an xattr header of size bytes (bucket_bs: a bucket's block size, or 0) */
typedef int (*blk_xattr_check_fn)(const struct ocfs2_xattr_header *xh, size_t size,
	    unsigned bucket_bs, char *why, size_t whylen);

struct fsd_cache {
	pthread_mutex_t	  mtx;
	struct fsd_buf	**hash;
	struct fsd_buf	**owners;	/* the same buckets, of the LRU's buffers by owner */
	unsigned	  nhash;
	unsigned	  nbufs, max_bufs;
	struct fsd_buf	  lru;		/* list head: lru.next is the oldest */
	uint64_t	  hits, misses;
};

/* ---- lockres.c -------------------------------------------------------- */

/* = OCFS2_LOCK_ID_MAX_LEN of ocfs2_lockid.h (checked in lockres.c) */
#define FSD_LOCK_NAME_LEN	32

/*
 * A lock resource, as dlmglue keeps one per (type, block, generation):
 * this node's holders and, with a cluster, the level dlmd granted us
 * (dlmglue.c). State is under the glue's mutex.
 */
struct fsd_lockres {
	char			 name[FSD_LOCK_NAME_LEN];	/* NUL-terminated */
	int			 type;		/* enum fsd_lock_type */
	uint64_t		 blkno;		/* in the name: compared before it */
	const struct fsd_lock_ops *ops;		/* what the type means (lock_ops) */
	uint64_t		 owner;		/* inode whose cached blocks it covers, or 0 */
	struct fsd_glue		*glue;		/* NULL: no cluster */
	unsigned		 ro, ex;	/* holders on this node */
	int			 level;		/* granted level; -1: no lock in dlmd */
	int			 requested;	/* level of the request in flight (LR_BUSY) */
	int			 blocking;	/* level another node waits for, 0: none */
	unsigned		 flags;
	int			 status;	/* errno of the last request */
	uint64_t		 lockid;
	unsigned long		 refs;		/* lockres_get()s not yet lockres_put() */
	unsigned		 bucket;	/* in the table's hash */
	int			 nocache;	/* OPEN: back to NL when the last holder goes */
	int			 private;	/* lockres_private: BASTs are not for us */
	/* META of a file the kernel opened: it may cache its pages */
	int			 pages;
	unsigned		 writers;	/* opens for writing on this node */
	unsigned		 flush_passes;	/* holders let in while it flushed */
	unsigned long		 downconverts;	/* times the granted level went down */
	struct fsd_lockres	*flnext;	/* glue's flush queue */
	/* value block: state its holders keep in it, or META's as granted */
	uint8_t			 lvb[64];
	int			 lvb_valid;	/* 0: an EX holder died since it was written */
	pthread_cond_t		 cv;
	struct fsd_lockres	*hnext, *dcnext;
	struct fsd_lockres	*idle_prev, *idle_next;	/* glue's idle list */
	/* the last transaction a handle holding it EX changed blocks in (journal.c,
	   under the journal's mutex); 0: none */
	uint64_t		 jtxn;
	/* the minimum hold time (holdtime.c), monotonic us, under the state mutex */
	struct fsd_lockres	*hold_next;	/* glue's list of held BASTs */
	uint64_t		 granted_us;	/* it last rose to a higher level */
	uint64_t		 used_us;	/* a holder here last took or let go of it */
	uint64_t		 gave_us;	/* a BAST took it down, 0: not since its grant */
	unsigned		 hold_us;	/* how long a BAST waits after a grant */
	unsigned		 held_uses;	/* holders that came in while a BAST waited */
	unsigned		 grant_uses;	/* holders that took it since its grant */
	unsigned		 hold_wastes;	/* holds in a row that let no holder in */
	unsigned		 hold_skip;	/* soon re-grants before it grows again */
};

#define LKM_NL	0	/* dlm modes used (dlmapi.h values) */
#define LKM_PR	3
#define LKM_EX	5

#define LKF_TRY		0x1	/* fail with -EAGAIN rather than wait */
#define LKF_RECOVERY	0x2	/* node recovery's own locks: don't wait for it */
#define LKF_INTR	0x4	/* lockres_interrupt() ends the wait with -EINTR */
#define LKF_NOFLUSHWAIT	0x8	/* -EAGAIN rather than wait behind a flush of the
				   file's pages: the caller holds some locked */
#define LKF_NORECOWAIT	0x10	/* -EAGAIN rather than wait for a dead node's recovery */
#define LKF_ORPHAN	0x20	/* an orphan's inode, after the orphan dir (orphan.c): the
				   one inode lock a serialized handle asks for */

/* ---- the mount -------------------------------------------------------- */

/* A slot's two suballocators. */
enum suballoc_kind { SUBALLOC_INODE, SUBALLOC_EXTENT };

/* The system files of one slot. Ours are used now; recovery of a dead
 * node's slot (deadnode.c) walks the same table. */
struct fsd_slot {
	uint64_t	journal;
	uint64_t	local_alloc;
	uint64_t	truncate_log;
	uint64_t	orphan_dir;
	uint64_t	inode_alloc;
	uint64_t	extent_alloc;
	struct fsd_lockres *journal_lock;	/* its journal's META lock (cluster) */
	uint32_t	reco_gen;	/* its journal's recovery generation as we last saw it */
};

/* One global quota file (aquota.user, aquota.group), doc/quota.md. */
enum { FSD_USRQUOTA = 0, FSD_GRPQUOTA = 1, FSD_MAXQUOTAS = 2 };
struct fsd_quota {
	uint64_t	 ino;		/* 0: the volume has no quota of this type */
	struct fsd_lockres *lock;	/* its META lock: guards the whole file */
};

struct fsd_itable;
struct fsd_journal;
struct fsd_glue;
struct fsd_stack;
struct fsd_handle;

/* us from now on clock clk, for pthread_cond_timedwait. */
static inline void
fsd_deadline_us(clockid_t clk, uint64_t us, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += (time_t)(us / 1000000);
	ts->tv_nsec += (long)(us % 1000000) * 1000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* ms from now on clock clk. */
static inline void
fsd_deadline(clockid_t clk, unsigned ms, struct timespec *ts)
{
	fsd_deadline_us(clk, (uint64_t)ms * 1000, ts);
}

/* When reads update atime. */
enum fsd_atime { FSD_RELATIME = 0, FSD_NOATIME, FSD_STRICTATIME };

/* The minimum hold time of contended locks (holdtime.c): lock_hold's default and
 * bound (GFS2's GL_GLOCK_MAX_HOLD, HZ / 5). */
#define LOCK_HOLD_DEFAULT_MS	50
#define LOCK_HOLD_MAX_MS	200

/* The mount options (-o), as main.c parsed them; struct fsd keeps a copy. */
struct fsd_mount_opts {
	int		 readonly;
	unsigned	 cache_blocks;		/* 0: cache_default_blocks() */
	unsigned	 lock_cache;		/* idle cluster locks kept cached */
	unsigned	 lock_hold_us;		/* the longest minimum hold (holdtime.c), 0: none */
	unsigned	 lock_hold_min_us;	/* ... and the shortest */
	unsigned	 node_num;
	unsigned	 commit_ms;		/* 0: the default, 5 s as jbd2 */
	unsigned	 orphan_scan_ms;	/* 0: the default, 300 s as ocfs2 */
	int		 nocluster;		/* a clustered volume without the stack */
	unsigned	 link_wait_ms;		/* 0: the default, 60 s as o2cb's */
	const char	*rundir;		/* the stack's sockets (NULL: the default) */
	const char	*mountpoint;		/* canonical: what the status socket reports */
	enum fsd_atime	 atime;
	unsigned	 atime_quantum;		/* strictatime: seconds atime may lag */
	double		 attr_timeout;		/* how long the kernel may trust attributes (s) */
	double		 entry_timeout;		/* ... and names (s) */
	int		 writeback_cache;	/* let the kernel gather writes */
	unsigned	 threads;		/* FUSE workers (-o threads) */
	int		 noacl;			/* -o noacl (ACLs are on with xattr, as ocfs2's) */
};

struct fsd {
	struct volume	 vol;
	struct fsd_mount_opts opts;		/* what the handlers read */
	int		 readonly;		/* opts.readonly: no slot, no journal */
	int		 writeback_active;	/* the kernel granted writeback_cache: it keeps mtime/ctime */
	unsigned	 size_stores;		/* kernsize_catch_up()s under way */
	int		 fuse_conn_known;	/* fuse_conn found in mountinfo */
	unsigned	 fuse_conn;		/* our FUSE connection's number in fusectl */
	unsigned	 bbits, cbits;		/* log2 block / cluster size */
	unsigned	 bpc;			/* blocks per cluster */
	uint32_t	 fs_generation;
	uint32_t	 clusters;		/* superblock i_clusters */
	int		 sparse;		/* files may have holes (sparse feature) */
	int		 unwritten;		/* extents may be unwritten (needs sparse) */
	int		 inline_data;		/* small files and dirs inside the inode */
	int		 xattr;			/* extended attributes (xattr feature) */
	int		 acl;			/* POSIX ACLs served and enforced (acl.c) */
	unsigned	 xattr_inline_size;	/* s_xattr_inline_size: a new inline area */
	uint32_t	 xattr_uuid_hash;	/* s_uuid_hash: seeds name hashes */
	int		 append_dio;		/* O_DIRECT appends keep a dio record */
	int		 metaecc;		/* metadata blocks carry checks (doc/metaecc.md) */
	int		 refcount;		/* files may share clusters (doc/refcount.md) */
	int		 overwrite_fd;		/* alone: the device through the page cache,
						   for in-place overwrites; else -1 */
	unsigned long	 ecc_fixed;		/* single-bit errors corrected on read */
	uint64_t	 nblocks;		/* blocks inside whole clusters */
	uint64_t	 root_blkno, sysdir_blkno;
	uint64_t	 first_cluster_group;
	uint8_t		 uuid[OCFS2_VOL_UUID_LEN];
	uint64_t	 global_bitmap;		/* system inodes (global) */
	uint64_t	 global_inode_alloc;
	uint64_t	 slot_map;
	struct fsd_slot	*slots;			/* max_slots entries */
	int		 slot;			/* ours, -1 on a read-only mount */
	struct fsd_cache cache;
	blk_dir_check_fn check_dir_entries;	/* dir.c's */
	blk_extent_check_fn check_extent_list;	/* extent.c's */
	blk_dx_check_fn	 check_dx_block;	/* dxdir.c's */
	uint32_t	 dx_seed[4];		/* the index's hash seed (dxdir.c) */
	int		 dx_seed_known;
	blk_xattr_check_fn check_xattr_header;	/* xattr.c's */
	struct fsd_itable *itable;
	struct fsd_journal *journal;		/* our slot's, NULL when read-only */
	unsigned	 node_num;		/* what we write in the slot map */
	pthread_t	 commit_thread;		/* commits every commit_ms */
	int		 commit_running, commit_stop;
	unsigned	 commit_ms;
	pthread_mutex_t	 commit_mtx;
	pthread_cond_t	 commit_cv;
	int		 errors;		/* metadata corruption was seen */
	pthread_mutex_t	 err_mtx;
	/* orphan deletions under way, and those this node's unlinks await (orphan.c) */
	unsigned	 wipes;
	uint64_t	*expected;
	unsigned	 nexpected, cexpected;
	pthread_mutex_t	 wipe_mtx;
	pthread_cond_t	 wipe_cv;
	/* while our allocator of a kind is full, the slot we take from (alloc.c) */
	pthread_mutex_t	 steal_mtx;
	int		 steal_slot[2];		/* enum suballoc_kind; -1: none */
	unsigned	 stolen[2];		/* taken from it since it was chosen */
	struct fuse_session *se;
	struct fsd_glue	*glue;			/* NULL: local or nocluster mount */
	struct fsd_plocks *plocks;		/* fcntl locks across nodes (plock.c) */
	struct fsd_stack *stack;		/* our hold on heartbeat (glue.h) */
	struct fsd_lockres **lockres_hash;
	unsigned	 lockres_nhash, lockres_count;	/* buckets (a power of two), resources */
	struct fsd_lockres *super_lock;		/* SUPER: the slot map */
	struct fsd_lockres *rename_lock;	/* RENAME: moves between directories */
	struct fsd_lockres *gb_lock;		/* META of the global bitmap */
	struct fsd_quota quota[FSD_MAXQUOTAS];	/* usrquota, grpquota (quota.c) */
	struct fsd_ctl	*ctl;			/* the status socket (ctl.c), or NULL */
};

/* block.c */
int	 cache_init(struct fsd_cache *c, unsigned max_bufs);
/* The cache's size in blocks when the mount does not say (cache_blocks=). */
unsigned cache_default_blocks(unsigned block_bytes);
void	 cache_destroy(struct fsd_cache *c);
/*
 * Get block blkno validated as type: 0 and *bp referenced, or -errno
 * (-EIO for corruption, with one logged reason naming the block).
 */
int	 block_read(struct fsd *fs, uint64_t blkno, enum blk_type type, struct fsd_buf **bp);
void	 block_put(struct fsd *fs, struct fsd_buf *b);
/* A buffer for a block being allocated now: zeroed, no disk read. */
int	 block_new(struct fsd *fs, uint64_t blkno, enum blk_type type, struct fsd_buf **bp);
/* One more reference to a buffer already held. */
void	 block_ref(struct fsd *fs, struct fsd_buf *b);
/*
 * The same for blocks that belong to an inode (its extent blocks, its
 * directory blocks, an allocator's groups): owner is that inode's block.
 * A cached block found under another owner is read again.
 */
int	 block_read_owned(struct fsd *fs, uint64_t blkno, enum blk_type type, uint64_t owner,
	    struct fsd_buf **bp);
int	 block_new_owned(struct fsd *fs, uint64_t blkno, enum blk_type type, uint64_t owner,
	    struct fsd_buf **bp);
/* Forget a cached block (another node changed it). */
void	 block_forget(struct fsd *fs, uint64_t blkno);
/* Forget every cached block of owner that nobody holds (the journal included). */
void	 block_forget_owner(struct fsd *fs, uint64_t owner);
/* Plain block I/O outside the cache (data, journal): -errno on failure. */
int	 block_io(struct fsd *fs, int write, uint64_t blkno, unsigned count, void *buf);
/* Alone and read-write: open fs->overwrite_fd where blocks fill whole pages; and close it. */
void	 block_overwrite_open(struct fsd *fs);
void	 block_overwrite_close(struct fsd *fs);
/* Data over blocks a file has written, through fs->overwrite_fd when open. */
int	 block_overwrite(struct fsd *fs, uint64_t blkno, unsigned count, const void *buf);
/* Make blocks [blkno, blkno+count) read as zeros, without a write where the device can. */
int	 block_zero(struct fsd *fs, uint64_t blkno, uint64_t count);
/* An O_DIRECT-aligned buffer that is NOT zeroed (large data I/O; free()). */
void	*io_alloc(size_t bytes);
/* Is the range [blkno, blkno+count) inside the volume's whole clusters? */
int	 block_in_volume(struct fsd *fs, uint64_t blkno, uint64_t count);
/* Validate a block image as type: 0, or -1 with a reason. Pure. */
int	 block_validate(struct fsd *fs, enum blk_type type, uint64_t blkno,
	    const uint8_t *data, char *why, size_t whylen);
/* Record a corruption: logs "block N: why" and marks the mount in error. */
void	 fsd_corrupt(struct fsd *fs, uint64_t blkno, const char *why);
/*
 * metaecc: where a block of that type keeps its check (NULL: the type
 * has none, or the volume has no metaecc).
 */
struct ocfs2_block_check *block_check_of(struct fsd *fs, enum blk_type type, uint8_t *data);
/* Set data's check for its type before it goes to the disk (journal or in place). */
void	 block_set_check(struct fsd *fs, enum blk_type type, uint8_t *data);
/*
 * Verify a block just read from the disk: 0 (good, or one bit put back
 * and logged), or -1 with why set.
 */
int	 block_verify_check(struct fsd *fs, enum blk_type type, uint64_t blkno, uint8_t *data,
	    char *why, size_t whylen);

/*
 * blockcheck.c: len bytes, a multiple of 8 and at most BLOCKCHECK_MAX
 * (OCFS2's blocks and xattr buckets: 512 to 4096 bytes; the parity of
 * so many bits fits the 16 stored).
 */
#define BLOCKCHECK_MAX	4096
/* Code position of data bit i: positions from 1, the powers of two are parity. */
uint32_t blockcheck_code_pos(uint32_t i);
/* The Hamming parity of all of data's bits (ocfs2_hamming_encode_block). */
uint32_t blockcheck_hamming(const uint8_t *data, size_t len);
/* Flip the data bit syndrome names: 1 flipped, 0 nothing to do (or a parity bit), -1 out of range. */
int	 blockcheck_hamming_fix(uint8_t *data, size_t len, uint32_t syndrome);
/* Fill bc (inside data) for data: computed with bc zeroed. */
void	 blockcheck_compute(uint8_t *data, size_t len, struct ocfs2_block_check *bc);
/* 0 good, 1 one bit corrected in data, -1 beyond repair. bc is left as found. */
int	 blockcheck_verify(uint8_t *data, size_t len, struct ocfs2_block_check *bc);

/* plock.c: fcntl locks across the cluster's nodes (cluster mounts only) */
int	 plock_start(struct fsd *fs, const char *rundir, char *err, size_t errlen);
void	 plock_stop(struct fsd *fs);
/* A close by this owner drops its POSIX locks on the inode, as close(2) does. */
void	 plock_flush(struct fsd *fs, uint64_t blkno, uint64_t owner);

/* lockres.c */
enum fsd_lock_type { FSD_LOCK_META, FSD_LOCK_RW, FSD_LOCK_OPEN, FSD_LOCK_SUPER,
	FSD_LOCK_RENAME, FSD_LOCK_ORPHAN_SCAN, FSD_LOCK_FLOCK, FSD_LOCK_PLOCK,
	FSD_LOCK_REFCOUNT, FSD_LOCK_NTYPES };

/* Requests carry the value block (DLM_LKF_VALBLK). */
#define LOCK_TYPE_USES_LVB		0x1
/*
 * What it guards is read from the disk under it: a dead node that may
 * have held it at EX is recovered before anyone here holds it again, and
 * refresh runs when it is granted afresh from NL.
 */
#define LOCK_TYPE_REQUIRES_REFRESH	0x2

/*
 * What one lock type means, as the kernel's struct ocfs2_lock_res_ops
 * (fs/ocfs2/dlmglue.c), defined by the module that owns what the lock
 * guards. dlmglue.c drives the requests, ASTs, BASTs and downconverts and
 * calls these without its mutex held; a NULL member does nothing.
 */
struct fsd_lock_ops {
	char	 letter;	/* of the lock name (ocfs2_lockid.h) */
	unsigned flags;		/* LOCK_TYPE_* */
	/* Forget what this node cached under lr: granted afresh, or going to NL. */
	void	(*refresh)(struct fsd *fs, struct fsd_lockres *lr);
	/* Leaving EX: what changed under it goes home first. 0 or -errno. */
	int	(*write_home)(struct fsd *fs, struct fsd_lockres *lr);
	/*
	 * Leaving EX: the value block from what lr guards (ocfs2's set_lvb);
	 * NULL: what its holders wrote into lr->lvb. A type with set_lvb
	 * trusts a value block granted from NL only until it takes EX.
	 */
	void	(*set_lvb)(struct fsd *fs, struct fsd_lockres *lr, uint8_t *lvb);
	/*
	 * Must the kernel's cached pages of lr's file go back and out before
	 * lr comes down to target (the downconvert worker, which the flush
	 * thread runs through invalidate)? State mutex held.
	 */
	int	(*needs_flush)(const struct fsd_lockres *lr, int target);
	/* Have the kernel write back and drop what it caches of owner. May wait. */
	void	(*invalidate)(struct fsd *fs, uint64_t owner);
};
/* Each in the file that owns what the lock guards. */
extern const struct fsd_lock_ops meta_lock_ops, rw_lock_ops, open_lock_ops;	/* inode.c */
extern const struct fsd_lock_ops super_lock_ops;	/* super.c */
extern const struct fsd_lock_ops rename_lock_ops;	/* ops_namei.c */
extern const struct fsd_lock_ops orphan_scan_lock_ops;	/* orphanscan.c */
extern const struct fsd_lock_ops flock_lock_ops;	/* flock.c */
extern const struct fsd_lock_ops plock_lock_ops;	/* plock.c */
extern const struct fsd_lock_ops refcount_lock_ops;	/* refcount.c */
/* The OCFS2 lock name: type + "000000" + 16 hex of blkno + 8 hex of generation. */
void	 lockres_name(char *out, size_t outlen, enum fsd_lock_type type,
	    uint64_t blkno, uint32_t generation);
/* The lock resource of that name, referenced; owner as in struct fsd_lockres. */
struct fsd_lockres *lockres_get(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno,
	    uint32_t generation, uint64_t owner);
/* One more reference to a resource already referenced. */
void	 lockres_ref(struct fsd *fs, struct fsd_lockres *lr);
/*
 * Drop a reference (an inode leaves memory). Once no reference and no
 * holder is left, the lock leaves dlmd (what it protected written home
 * first) and the resource is freed, unless it is wanted again meanwhile.
 */
void	 lockres_put(struct fsd *fs, struct fsd_lockres *lr);
void	 lockres_free_all(struct fsd *fs);
/* The table's resources by granted level (ctl.c's status). */
struct lockres_census {
	unsigned	 total, ex, pr, nl;	/* the rest have no lock in dlmd */
};
void	 lockres_census(struct fsd *fs, struct lockres_census *lc);
/* The META lock of a system inode (named with its generation). */
struct fsd_lockres *sysinode_lockres(struct fsd *fs, uint64_t blkno);
/* Not shared through the table, never cached: each its own lock in dlmd. */
struct fsd_lockres *lockres_private(struct fsd *fs, enum fsd_lock_type type, uint64_t blkno,
	    uint32_t generation);

/* dlmglue.c */
/* A private resource's lock leaves dlmd, then the resource is freed. */
void	 lockres_private_free(struct fsd *fs, struct fsd_lockres *lr);
/* level is LKM_PR or LKM_EX; 0 or -errno (-EAGAIN: LKF_TRY and busy). */
int	 lockres_lock(struct fsd *fs, struct fsd_lockres *lr, int level);
int	 lockres_lock_flags(struct fsd *fs, struct fsd_lockres *lr, int level, unsigned lkf);
/*
 * on: an LKF_INTR wait for lr (in a cluster) gives up with -EINTR, its
 * request to dlmd cancelled; off: forget that. Any thread may call it.
 */
void	 lockres_interrupt(struct fsd_lockres *lr, int on);
/*
 * A META lock's file was opened (delta 1) or closed (-1) by the kernel,
 * for writing when writer: its pages may be in the kernel's cache, dirty
 * through a shared mapping while opened for writing (see flush_loop).
 */
void	 lockres_file_open(struct fsd_lockres *lr, int delta, int writer);
/*
 * The level a READ of that file takes: EX while it is open for writing
 * here (a page read in may be written through a mapping without telling
 * us), else PR.
 */
int	 lockres_read_level(struct fsd_lockres *lr);
/*
 * Does this node hold lr's lock at level or above from dlmd (held or
 * cached)? A hint: it may go down right after.
 */
int	 lockres_granted(struct fsd_lockres *lr, int level);
void	 lockres_unlock(struct fsd *fs, struct fsd_lockres *lr, int level);

/* lvb.c */
/* ocfs2_meta_lvb from an inode: what other nodes could trust without a read. */
void	 meta_lvb_pack(const struct ocfs2_dinode *di, uint8_t *lvb);
/*
 * With META (lr) held PR and granted from NL: the stat of a regular file
 * of that generation from the value block its last EX holder left, as the
 * kernel refreshes an inode from a trustable LVB. 0, or -1 (read the block).
 */
int	 meta_lvb_stat(struct fsd *fs, struct fsd_lockres *lr, uint32_t generation,
	    struct stat *st);

/* super.c */
int	 super_mount(struct fsd *fs, const char *device, const struct fsd_mount_opts *o,
	    char *err, size_t errlen);
/* Clean unmount: checkpoint, clear DIRTY_FL, free the slot. */
void	 super_unmount(struct fsd *fs);
/*
 * Stop at once without writing anything more (the fencing path, and how
 * tests simulate a crash): the journal keeps whatever it holds.
 */
void	 super_abandon(struct fsd *fs);
/* Check features: 0, or -1 with the first unsupported feature named in err. */
int	 super_check_features(uint32_t compat, uint32_t incompat, uint32_t ro_compat,
	    int readonly, char *err, size_t errlen);

/* ctl.c: <rundir>/fsd-<UUID>.sock */
struct fsd_ctl;
struct Fsd__FsdStatus;
/*
 * Serve the status socket: -1 with err set when another fsd answers on
 * it, else 0 (without a socket, logged, when it cannot be served).
 */
int	 ctl_start(struct fsd *fs, const char *rundir, const char *mountpoint, char *err,
	    size_t errlen);
/* The mount is complete: status requests are answered from now on. */
void	 ctl_ready(struct fsd *fs);
/* Stop serving and remove the socket (unmount, failed mount). */
void	 ctl_stop(struct fsd *fs);
/* The status of the mount (strings point into fs). */
void	 ctl_status_fill(struct fsd *fs, const char *mountpoint, struct Fsd__FsdStatus *st);

/* inode.c */
struct dir_index;
struct dx_free_map;

struct fsd_inode {
	uint64_t	 blkno;
	uint32_t	 generation;
	uint64_t	 nlookup;	/* FUSE lookup count */
	unsigned	 pins;		/* internal references */
	struct fsd_lockres *meta;	/* guards the inode block and its tree */
	struct fsd_lockres *open_lock;	/* OPEN: PR while open here (cluster) */
	struct fsd_lockres *rw;		/* RW: write serialisation (cluster) */
	unsigned	 opens;		/* open files on this node */
	int		 loading;	/* generation not read yet: finders wait */
	int		 opening;	/* the first open waits for the OPEN lock */
	int		 deleting;	/* inode_try_delete_lock to inode_delete_unlock */
	uint32_t	 deleted_gen;	/* the generation deleted here last, 0: none */
	uint64_t	 kparent;	/* a directory's place in the kernel's */
	char		*kname;		/* dentry tree, as last told (inode_dir_named) */
	pthread_mutex_t	 dmtx;		/* guards dindex (readers build it under PR), dxfree */
	struct dir_index *dindex;	/* directories: names -> positions */
	struct dx_free_map *dxfree;	/* indexed directories: their free-space list */
	uint64_t	 kernel_size;	/* at most the kernel's size of it (kernsize.c) */
	unsigned long	 writes;	/* write(2)s of it served here */
	uint64_t	 atime_moved_ms; /* the last READ here that moved atime, now_ms(),
					   0: none (inode_read_level) */
	/*
	 * 1 + the META lock's downconverts when a name was last seen to lead
	 * here with links left (0: unknown, or this node dropped a link since):
	 * while the count stays, no node can have orphaned it.
	 */
	unsigned long	 linked_at;
	/*
	 * Its last link went through this node's kernel, which sends FORGET
	 * once nothing of it holds the inode: that deletes it, not the last
	 * close, after which a path walk may still open it (the block freed
	 * and made a new inode meanwhile, the kernel would fail the old one's
	 * every I/O with EIO: fuse_iget's check of the generation).
	 */
	int		 unlinked_here;
	struct fsd_inode *hnext;
};

int	 itable_init(struct fsd *fs);
void	 itable_destroy(struct fsd *fs);
/* The in-memory inode for blkno, pinned; reads and checks the block. */
int	 inode_get(struct fsd *fs, uint64_t blkno, struct fsd_inode **ip);
void	 inode_put(struct fsd *fs, struct fsd_inode *ip);
/* The in-memory inode if there is one (pinned), without reading or waiting for anything. */
struct fsd_inode *inode_find(struct fsd *fs, uint64_t blkno);
/*
 * An open file on this node: pins the inode and, with a cluster, holds
 * its OPEN lock PR so that no node deletes it meanwhile.
 */
int	 inode_open(struct fsd *fs, struct fsd_inode *ip);
/*
 * OCFS2's RW lock of an inode, in a cluster: PR around each write, EX
 * around a change of size that may take several transactions (a big
 * truncate, fallocate), so that no node's write lands between them. On
 * one node the kernel's inode lock already keeps them apart.
 */
int	 inode_rw_lock(struct fsd *fs, struct fsd_inode *ip, int level);
void	 inode_rw_unlock(struct fsd *fs, struct fsd_inode *ip, int level);
/* The last close of an inode whose last name is gone deletes it. */
void	 inode_close(struct fsd *fs, struct fsd_inode *ip);
/*
 * May an orphan be deleted now? Not while open here; with a cluster, not
 * while open on any node (OPEN EX trylock, held until inode_delete_unlock).
 * 0, or -EAGAIN when it is in use.
 */
int	 inode_try_delete_lock(struct fsd *fs, struct fsd_inode *ip);
/* The end of a deletion: deleted the generation it deleted, or 0 if it did not. */
void	 inode_delete_unlock(struct fsd *fs, struct fsd_inode *ip, uint32_t deleted);
/* Is it open on this node (its OPEN lock held, in a cluster)? */
int	 inode_is_open(struct fsd *fs, struct fsd_inode *ip);
/* FUSE lookup counting: lookup adds one, forget drops n. */
/* Count a FUSE lookup; 1 if it is the first, the kernel making its inode anew. */
int	 inode_lookup_ref(struct fsd *fs, struct fsd_inode *ip);
/*
 * Returns 1 when the kernel no longer knows the inode and it may have
 * lost its last link (the caller then deletes it if it is an orphan).
 */
int	 inode_forget(struct fsd *fs, uint64_t blkno, uint64_t n);
/*
 * A name leads to the inode whose block di is, read under its META lock:
 * noted when it has links, so that forgetting it needs no look at the disk.
 */
void	 inode_note_linked(struct fsd *fs, struct fsd_inode *ip, const struct ocfs2_dinode *di);
/*
 * This node drops one of its links (orphaned: the last): it may be an
 * orphan when forgotten.
 */
void	 inode_note_unlinked(struct fsd *fs, struct fsd_inode *ip, int orphaned);
/* The inode block, validated, with the META lock held at level. */
int	 inode_lock_block(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf **bp);
/* The same with lockres_lock_flags()'s LKF_ flags. */
int	 inode_lock_block_flags(struct fsd *fs, struct fsd_inode *ip, int level, unsigned lkf,
	    struct fsd_buf **bp);
/*
 * The same for an inode the kernel names by number: -ESTALE when the
 * block holds another inode than the one the kernel was told of (another
 * node deleted it and made a new one there since), so that a request for
 * the old inode never changes or shows the new one.
 */
int	 inode_lock_kernel(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf **bp);
/*
 * The block holds another inode than the one kept in memory: it was freed
 * and allocated again (maybe by another node) while the kernel still knew
 * the old one, which no file here has open. Names of locks that carry the
 * generation (RW, FLOCK, PLOCK) follow the new inode from now on.
 */
void	 inode_check_generation(struct fsd *fs, struct fsd_inode *ip, uint32_t generation);
/*
 * The kernel was told (lookup, readdirplus, mkdir) that directory blkno
 * is name in parent: when another node had moved it from where this
 * kernel last saw it, the old dentry is dropped (by the inval thread). A
 * directory has one dentry, and the kernel moves it to a lookup's place
 * only with locks it merely tries (d_splice_alias): while a rename runs
 * on this node the lookup failed with ESTALE instead.
 */
void	 inode_dir_named(struct fsd *fs, uint64_t blkno, uint64_t parent, const char *name,
	    size_t len);
/*
 * A rename on this node made directory blkno name in parent: the kernel
 * moves its dentry there itself, and a later move on another node must
 * drop that one, not the one before.
 */
void	 inode_dir_renamed(struct fsd *fs, uint64_t blkno, uint64_t parent, const char *name);
/*
 * Before a lookup answers with directory blkno: wait (a while at most)
 * until the kernel has dropped its old dentries of it, so that it finds
 * no other dentry to move, whichever of its tries (LOOKUP_REVAL) this is.
 */
void	 inode_dir_wait_named(struct fsd *fs, uint64_t blkno);
/* Drop the kernel's dentry of name in directory parent (FUSE notify-inval-entry). */
void	 inode_drop_dentry(struct fsd *fs, uint64_t parent, const char *name);
/* Forget a directory's in-memory name index and free-space list. */
void	 inode_drop_dindex(struct fsd *fs, uint64_t blkno);
/* The FUSE session is about to go: no notify-inval may use it any more. */
void	 inode_session_gone(struct fsd *fs);
/*
 * Its attributes under META PR (or EX, inode_read_level), from a
 * trustable value block or the block.
 */
int	 inode_stat(struct fsd *fs, struct fsd_inode *ip, struct stat *st);
/*
 * The META level a read of ip (GETATTR, READ) asks for, beside the
 * level the READ needs for itself: EX when this node must ask dlmd for
 * the lock anyway, the file is open here and its last READ here moved
 * atime, which the next one will most likely move again; else PR.
 */
int	 inode_read_level(struct fsd *fs, struct fsd_inode *ip);
/* A READ of ip found atime due: it moves. */
void	 inode_read_moved_atime(struct fsd_inode *ip);
/*
 * Lock ip's META for reading at want (PR or EX): EX only where it comes
 * without waiting behind a flush of the file's pages, which may wait for
 * the pages the kernel holds locked for this very request; else PR. The
 * level taken in *level.
 */
int	 inode_lock_read(struct fsd *fs, struct fsd_inode *ip, int want, int *level);
/* The same, and the inode block read (inode_lock_block). */
int	 inode_lock_block_read(struct fsd *fs, struct fsd_inode *ip, int want, int *level,
	    struct fsd_buf **bp);
void	 inode_unlock_block(struct fsd *fs, struct fsd_inode *ip, int level, struct fsd_buf *b);
/* The same for an EX hold inside a handle that changed it: h keeps the lock. */
void	 inode_unlock_block_in(struct fsd_handle *h, struct fsd_inode *ip, struct fsd_buf *b);
void	 inode_to_stat(struct fsd *fs, const struct ocfs2_dinode *di, struct stat *st);
/* FUSE inode numbers: the root is 1, every other inode its block number. */
uint64_t fsd_ino_to_blkno(struct fsd *fs, uint64_t ino);
uint64_t fsd_blkno_to_ino(struct fsd *fs, uint64_t blkno);

/* Inside a handle: a new inode from our slot's inode_alloc (ib referenced). */
int	 inode_create(struct fsd_handle *h, unsigned mode, uint32_t uid, uint32_t gid,
	    uint64_t rdev, struct fsd_buf **ib);
/* Free an inode whose clusters are gone: clear VALID, set dtime, free its bit. */
int	 inode_wipe(struct fsd_handle *h, struct fsd_buf *ib);
/* A generation for a new inode or refcount tree (never 0 twice in a row). */
uint32_t fsd_new_generation(void);
/* Stamp the current time into the chosen fields. */
void	 inode_now(struct ocfs2_dinode *di, int atime, int mtime, int ctime);
/* mtime and ctime lie in the coarse clock's current tick: a write need not touch them. */
int	 inode_mctime_current(const struct ocfs2_dinode *di);
/*
 * Does reading the locked inode di at now call for a new atime under
 * fs->atime? Never on a read-only mount. Pure but for fs's fields.
 */
int	 inode_atime_due(struct fsd *fs, const struct ocfs2_dinode *di,
	    const struct timespec *now);
/* Set atime to now in a handle of its own, if still due under the EX lock. */
void	 inode_touch_atime(struct fsd *fs, struct fsd_inode *ip);

/* extent.c */
struct fsd_extent {
	uint64_t	pblk;		/* 0: a hole */
	uint64_t	nblocks;	/* length of the run from lblk */
	int		unwritten;	/* reads as zeros */
	int		refcounted;	/* shared through the inode's refcount tree */
};
/* A leaf extent record in memory (pblk: its first block). */
struct xrec {
	uint32_t	 cpos, len;
	uint64_t	 pblk;
	uint8_t		 flags;
};
/*
 * Map logical block lblk through the extent list el (in an inode, or any
 * other root) to a physical run. owner names the root for messages.
 */
int	 extent_map(struct fsd *fs, uint64_t owner, const struct ocfs2_extent_list *el,
	    uint64_t lblk, struct fsd_extent *ex);
/* Inside a handle: give an extent block back to the extent_alloc it came from. */
int	 free_extent_block(struct fsd_handle *h, struct fsd_buf *b);
/* Check one extent list against its container's capacity: 0 or -1 + why. */
int	 extent_list_check(struct fsd *fs, const struct ocfs2_extent_list *el,
	    unsigned capacity, char *why, size_t whylen);
/* block_validate checks extent lists with extent_list_check. */
void	 extent_register_checks(struct fsd *fs);

/*
 * Append clusters [cpos, cpos+clusters) at pblk to the inode's tree (ib:
 * the inode buffer, accessed in h), growing the tree as the kernel does;
 * adds to i_clusters.
 */
int	 extent_append(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint64_t pblk,
	    uint32_t clusters);
/*
 * Drop every cluster at or past keep into the truncate log, freeing
 * emptied extent blocks; -EAGAIN when the truncate log is full (flush it
 * in a new handle and call again).
 */
int	 extent_truncate(struct fsd_handle *h, struct fsd_buf *ib, uint32_t keep);
/*
 * Sparse files (doc/sparse-unwritten.md), inside a handle. Map the hole
 * [cpos, cpos+len) to the clusters at pblk with OCFS2_EXT_* flags, adding
 * to i_clusters (-EEXIST: part of it is mapped).
 */
int	 extent_insert(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
	    uint64_t pblk, uint8_t flags);
/* Give the mapped range [cpos, cpos+len) these flags, splitting records as needed. */
int	 extent_set_flags(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
	    uint8_t flags);
/*
 * Unmap [cpos, end), its clusters into the truncate log; -EAGAIN when the
 * log is full: what was unmapped stays so (flush and call again).
 */
int	 extent_punch(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t end);

/*
 * Map [cpos, cpos+len), all of it mapped, to the clusters at pblk with
 * these flags instead (copy-on-write): i_clusters stays.
 */
int	 extent_remap(struct fsd_handle *h, struct fsd_buf *ib, uint32_t cpos, uint32_t len,
	    uint64_t pblk, uint8_t flags);
/*
 * Any tree's root (an inode, a directory index root, a refcount tree's
 * root, whose leaf records point at its leaf blocks): every leaf record
 * in order (*recs malloc'ed); the record whose span holds cpos, the last
 * starting at or before it, else the first, with *end where the next
 * starts (2^32: none; -ENOENT: no record at all).
 */
int	 extent_records(struct fsd *fs, struct fsd_buf *root, struct xrec **recs, unsigned *n);
int	 extent_find(struct fsd *fs, struct fsd_buf *root, uint32_t cpos, struct xrec *r,
	    uint64_t *end);
/*
 * Inside a handle: the whole tree replaced by recs[0..n) (new extent
 * blocks, the old ones freed); the mapped records of [cpos, cpos+len)
 * taken out of the tree (nothing freed but emptied extent blocks), its
 * cluster count lowered by len.
 */
int	 extent_replace(struct fsd_handle *h, struct fsd_buf *root, const struct xrec *recs,
	    unsigned n);
int	 extent_remove(struct fsd_handle *h, struct fsd_buf *root, uint32_t cpos, uint32_t len);

/* refcount.c: refcount trees (doc/refcount.md), inside a handle; ib an inode's buffer */
/*
 * The count of physical cluster cpos in the inode's tree (0: no record)
 * and *run, how many clusters from it (at most max) share that count.
 */
int	 refcount_lookup(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t max,
	    uint32_t *count, uint32_t *run);
/* One reference more to each of physical clusters [cpos, cpos+len). */
int	 refcount_increase(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t len);
/*
 * One reference less; the clusters that reach none go to the truncate
 * log when free_at_zero (-EAGAIN, nothing changed: the log lacks room).
 */
int	 refcount_decrease(struct fsd_handle *h, struct fsd_buf *ib, uint64_t cpos, uint32_t len,
	    int free_at_zero);
/* Give the inode a tree of its own if it has none. */
int	 refcount_tree_of(struct fsd_handle *h, struct fsd_buf *ib);
/* dst shares src's tree from now on (-EXDEV: dst has another). */
int	 refcount_join(struct fsd_handle *h, struct fsd_buf *dst, const struct fsd_buf *src);
/* The inode no longer counts in its tree (deleted); the last one frees the tree. */
int	 refcount_leave(struct fsd_handle *h, struct fsd_buf *ib);

/* reflink.c: shared extents, copy-on-write (doc/refcount.md) */
/*
 * Inside a handle, the inode locked EX and accessed: every shared cluster
 * that bytes [from, to) touch becomes the file's own (a copy, or the
 * last reference simply kept), before a write into them.
 */
int	 reflink_cow(struct fsd_handle *h, struct fsd_buf *ib, uint64_t from, uint64_t to);
/*
 * copy_file_range(2) between two files of the volume: the clusters of
 * [off_in, off_in+len) of src shared into dst at off_out (what dst had
 * there dropped first): len, or -EOPNOTSUPP when the range cannot be
 * shared (the kernel then copies), or -errno.
 */
int64_t	 reflink_range(struct fsd *fs, struct fsd_inode *src, uint64_t off_in, struct fsd_inode *dst,
	    uint64_t off_out, uint64_t len);

/* dir.c */
struct fsd_dirent {
	uint64_t	ino;
	uint8_t		type;		/* OCFS2_FT_* */
	uint8_t		name_len;
	char		name[OCFS2_MAX_FILENAME_LEN + 1];
	uint64_t	pos;		/* byte position of this entry */
	uint64_t	next;		/* position of the entry after it */
};
/*
 * Call fn for each live entry at or after pos; fn returns nonzero to
 * stop (that value is returned). di is the locked directory inode.
 */
typedef int (*dir_iter_fn)(void *arg, const struct fsd_dirent *de);
int	 dir_iterate(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t pos,
	    dir_iter_fn fn, void *arg);
/* 0 and *ino, -ENOENT, or -EIO. */
int	 dir_lookup(struct fsd *fs, const struct ocfs2_dinode *di, const char *name,
	    size_t len, uint64_t *ino);
/* Check the entries of one block (or inline area) tile it: 0 or -1 + why. */
int	 dir_block_check(const uint8_t *p, size_t len, char *why, size_t whylen);
/* block_validate checks directory entries with dir_block_check. */
void	 dir_register_checks(struct fsd *fs);

/* Inside a handle, with the directory locked EX (dib: its inode buffer): */
int	 dir_add(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len,
	    uint64_t ino, uint8_t type);
int	 dir_remove(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len);
/* Point an existing name at another inode (rename over it, "..") */
int	 dir_retarget(struct fsd_handle *h, struct fsd_buf *dib, const char *name,
	    size_t len, uint64_t ino, uint8_t type);
/* A new directory's "." and "..": inline when the volume has inline data, else a block. */
int	 dir_init(struct fsd_handle *h, struct fsd_buf *dib, uint64_t parent);
/* 1 when only "." and ".." are left, 0 if not, -errno. */
int	 dir_is_empty(struct fsd *fs, const struct ocfs2_dinode *di);

/*
 * Inside a directory block (p[0, len), entries tiling it): find a live
 * name (1, *off and the entry before it in *prev, ~0u: none), put an
 * entry in the first place with room (0, or -ENOSPC), drop one found.
 */
int	 dir_block_find(const uint8_t *p, unsigned len, const char *name, size_t namelen,
	    unsigned *off, unsigned *prev);
int	 dir_block_put_entry(struct fsd *fs, uint8_t *p, unsigned len, uint64_t ino,
	    const char *name, size_t namelen, uint8_t type);
void	 dir_block_drop_entry(uint8_t *p, unsigned off, unsigned prev);
/* Inside a handle: one more block at the directory's end, empty (trailer laid if due). */
int	 dir_extend_block(struct fsd_handle *h, struct fsd_buf *dib, struct fsd_buf **bp);

/* dxdir.c: indexed directories (doc/indexed-dirs.md) */
struct dx_hash {
	uint32_t	major, minor;
};
/* ocfs2_dx_dir_name_hash: seed is s_dx_seed[0..2] and s_uuid_hash. Pure. */
void	 dx_name_hash(const uint32_t seed[4], const char *name, size_t len, struct dx_hash *hv);
/* Does the volume index directories / is this directory indexed? */
int	 dx_volume(const struct fsd *fs);
/* New directory blocks get a trailer (indexed-dirs or metaecc). */
int	 dir_has_trailers(const struct fsd *fs);
int	 dx_indexed(const struct ocfs2_dinode *di);
/* A block of directory di, checked as its kind of directory keeps them. */
int	 dir_block_read(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t pblk,
	    struct fsd_buf **bp);
/* The largest hole for a new entry among the entries tiling p[0, end), 0 if none. */
unsigned dir_block_max_hole(const uint8_t *p, unsigned end);
/* The trailer at the end of a directory block. */
const struct ocfs2_dir_block_trailer *dir_trailer(const struct fsd *fs, const uint8_t *blk);
/* Lay a trailer at the end of b, a block of directory dir. */
void	 dir_trailer_init(const struct fsd *fs, struct fsd_buf *b, uint64_t dir,
	    unsigned free_rec_len);
/* block_validate checks the blocks of indexed directories with dxdir.c's checks. */
void	 dx_register_checks(struct fsd *fs);
/* A name found through the index: its dx entry and its directory entry. */
struct dx_found {
	struct dx_hash	 hv;
	struct fsd_buf	*root, *leaf;	/* leaf NULL: the entries are in the root */
	unsigned	 idx;		/* of the dx entry in its list */
	struct fsd_buf	*blk;		/* the directory block holding the name */
	unsigned	 off, prev;	/* the entry in blk and the one before (~0u: none) */
};
/* 0 and *f (dx_release it), -ENOENT, or -EIO. */
int	 dx_find(struct fsd *fs, const struct ocfs2_dinode *di, const char *name, size_t len,
	    struct dx_found *f);
void	 dx_release(struct fsd *fs, struct dx_found *f);
/* Inside a handle, the directory locked EX (dib its inode buffer): */
int	 dx_add(struct fsd_handle *h, struct fsd_buf *dib, const char *name, size_t len,
	    uint64_t ino, uint8_t type);
int	 dx_remove(struct fsd_handle *h, struct fsd_buf *dib, struct dx_found *f);
/* A new last block b of an indexed directory joins its free-space list. */
int	 dx_link_free_block(struct fsd_handle *h, const struct ocfs2_dinode *di, struct fsd_buf *b);
int	 dx_attach(struct fsd_handle *h, struct fsd_buf *dib, struct fsd_buf *b);
int	 dx_truncate(struct fsd_handle *h, struct fsd_buf *dib);

/* dirindex.c */
struct dir_index *dindex_new(void);
void	 dindex_free(struct dir_index *x);
int	 dindex_find(struct dir_index *x, const char *name, size_t len, uint64_t *pos);
void	 dindex_insert(struct dir_index *x, const char *name, size_t len, uint64_t pos);
void	 dindex_remove(struct dir_index *x, const char *name, size_t len);

/* dxfree.c: an indexed directory's free-space list in memory (under ip->dmtx) */
struct dx_free_map *dxfree_new(unsigned block_bytes);
void	 dxfree_free(struct dx_free_map *m);
/*
 * blkno, with free_len bytes free (16 or more), joins the list at its
 * head or tail; -1 when it is listed already or free_len is impossible.
 */
int	 dxfree_add(struct dx_free_map *m, uint64_t blkno, unsigned free_len, int at_head);
/* A listed block's free length is now free_len; 0: it left the list. */
void	 dxfree_set(struct dx_free_map *m, uint64_t blkno, unsigned free_len);
/* 1 and a listed block with need bytes free and the one before it (0: the root), or 0. */
int	 dxfree_pick(struct dx_free_map *m, unsigned need, uint64_t *blkno, uint64_t *prev);

/* data.c */
/*
 * Read up to size bytes at off of the locked inode di into an aligned
 * buffer: *outp points at the first byte, *outlen bytes valid, *basep
 * is what to free(). Reads up to 1 MiB use the calling thread's own
 * buffer (*basep NULL), valid until the thread's next data_read().
 * 0 or -errno.
 */
int	 data_read(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off, size_t size,
	    void **basep, const char **outp, size_t *outlen);
/* A symlink's target into buf (NUL-terminated). 0 or -errno. */
int	 data_readlink(struct fsd *fs, const struct ocfs2_dinode *di, char *buf, size_t buflen);

/* slot.c */
/* Claim a slot for fs->node_num: ours after a crash, else the first free. */
int	 slot_claim(struct fsd *fs, char *err, size_t errlen);
int	 slot_release(struct fsd *fs);
/* nodes[slot]: the node number in each slot, -1 when free. */
int	 slot_map_nodes(struct fsd *fs, int *nodes);
int	 slot_free(struct fsd *fs, int slot);

/* deadnode.c */
/* Recover slot of a node that is gone (lkf LKF_TRY: only if it is). 0 or -errno. */
int	 slot_recover(struct fsd *fs, int slot, unsigned lkf);
/*
 * Note slot's recovery generation (its journal inode's, read afresh);
 * 1 if it moved since we last noted it: someone recovered the slot.
 */
int	 slot_note_reco_gen(struct fsd *fs, int slot);
/* This thread runs recovery (or the mount): it must not wait for it. */
void	 glue_recovery_thread(int on);

/* journal.c: JBD2 in the slot's journal file (doc/ondisk.md, Journal) */
struct jbd2_info {			/* the journal superblock, host order */
	uint32_t	blocksize, maxlen, first, sequence, start;
	uint32_t	incompat;
	uint8_t		uuid[16];
};
/* One block to log: its home and its contents. */
struct jbd2_block {
	uint64_t	 blkno;
	const uint8_t	*data;
};
/* Log blocks one transaction of n blocks takes (descriptors + copies + commit). */
unsigned jbd2_txn_blocks(const struct jbd2_info *ji, unsigned n);
/*
 * Lay out transaction tid into out (jbd2_txn_blocks() blocks): descriptor
 * blocks with tags, escaped copies, and the commit block last. Pure.
 */
void	 jbd2_build_txn(const struct jbd2_info *ji, uint32_t tid, const struct jbd2_block *b,
	    unsigned n, uint8_t *out);
int	 jbd2_parse_super(const uint8_t *blk, unsigned fs_block_bytes, struct jbd2_info *ji,
	    char *why, size_t whylen);
void	 jbd2_write_super(uint8_t *blk, const struct jbd2_info *ji);

int	 journal_open(struct fsd *fs, int slot, struct fsd_journal **jp, char *err, size_t errlen);
void	 journal_close(struct fsd_journal *j);
/* Read or write journal blocks [lblk, lblk+count) (no wrap). */
int	 journal_io(struct fsd_journal *j, int write, uint32_t lblk, unsigned count, void *buf);
const struct jbd2_info *journal_info(struct fsd_journal *j);
/* Begin logging at the current head: write the journal superblock for this session. */
int	 journal_load(struct fsd_journal *j);
/* Set or clear OCFS2_JOURNAL_DIRTY_FL (written in place, synchronously). */
int	 journal_set_dirty(struct fsd *fs, uint64_t journal_inode, int dirty, int bump_recovery);

/*
 * A handle: one atomic metadata change, all or nothing. Many are open at
 * once, each changing blocks no other open handle changes (journal.c);
 * it may wait for cluster locks, and commits do not wait for it: they log
 * what the closed handles left. It holds the EX locks of what it changes
 * until it ends (handle_lock, handle_hold): a downconvert meanwhile would
 * checkpoint its blocks half-changed.
 */
struct fsd_handle {
	struct fsd	 *fs;
	struct jundo	 *undo;
	unsigned	  nundo, cap;
	uint64_t	  dirs[4];	/* directories changed: indexes to drop on abort */
	unsigned	  ndirs;
	struct fsd_lockres **locks;	/* EX holds kept until the handle ends */
	unsigned	  nlocks, locks_cap;
	struct quota_delta *qd;		/* usage changes, added to the quota files at the end */
	unsigned	  nqd, qd_cap;
	int		  dirtied;	/* a block went into the running transaction */
	int		  serial;	/* handle_serialize: alone among those that were */
};
/*
 * Before a handle reaches this node's allocation state (its slot's
 * allocators, local alloc, truncate log and orphan dir, the global
 * bitmap, the quota files): from here to its end it is the only handle
 * there. Take no inode or directory lock after it but a new inode's.
 */
void	 handle_serialize(struct fsd_handle *h);
/* Is this thread inside a handle past handle_serialize? (the lock order's check) */
int	 handle_serialized_here(void);
/* handle_serialize, then handle_lock: an allocator's, the global bitmap's, a quota file's. */
int	 handle_lock_alloc(struct fsd_handle *h, struct fsd_lockres *lr);
/* Inside a handle: lock EX until the handle ends (allocators, the bitmap). */
int	 handle_lock(struct fsd_handle *h, struct fsd_lockres *lr);
/* The caller's EX hold of lr passes to h: released when h ends. */
void	 handle_hold(struct fsd_handle *h, struct fsd_lockres *lr);
/*
 * Inside a handle: lock EX until the handle ends, without the waits lkf
 * rules out (LKF_TRY: any; LKF_NORECOWAIT: for a dead node's recovery),
 * for locks a handle must not wait for (doc/allocation.md). When it
 * would wait: -ENOSPC, the lock noted for handle_wait_busy; the caller
 * ends the handle, and its operation, through fsd_reclaim, waits and
 * runs again.
 */
int	 handle_lock_or_restart(struct fsd_handle *h, struct fsd_lockres *lr, unsigned lkf);
/* The same for a lock the caller found busy itself: -ENOSPC, lr noted. */
int	 handle_restart_for(struct fsd_handle *h, struct fsd_lockres *lr);
/*
 * With no handle open: wait for the lock this thread's
 * handle_lock_or_restart last found busy, to have it cached here when the operation runs again.
 * 1 if there was one (and it came), else 0.
 */
int	 handle_wait_busy(struct fsd *fs);
/* Inside a handle: a system inode's META lock EX until the handle ends. */
int	 handle_lock_sysinode(struct fsd_handle *h, uint64_t blkno);
int	 journal_start(struct fsd *fs, struct fsd_handle *h);
/* Declare intent to modify b (a referenced cache buffer) in this handle. */
int	 journal_access(struct fsd_handle *h, struct fsd_buf *b);
/* b was modified: log it with the running transaction. */
void	 journal_dirty(struct fsd_handle *h, struct fsd_buf *b);
/*
 * h changes directory blkno, whose in-memory indexes an abort must drop:
 * 0, or -1 when h notes no more directories (drop them now).
 */
int	 journal_note_dir(struct fsd_handle *h, uint64_t blkno);
/* End the handle; with abort set, every accessed buffer is restored. */
int	 journal_stop(struct fsd_handle *h, int abort);
/*
 * Make the running transaction durable (fsync, timer, unmount); with a
 * handle open, everything but that handle's changes.
 */
int	 journal_commit(struct fsd *fs);
/*
 * fsync: commit, and make durable every write done before the call (data
 * written in place too) with as few flushes of the device as that takes.
 */
int	 journal_fsync(struct fsd *fs);
/*
 * A test-only crash point: while the file the environment variable env
 * names exists, commit what is done, create NAME.<blkno>, log what
 * waits and wait to be killed. Nothing else reaches such windows
 * reliably (doc/append-dio.md, doc/refcount.md).
 */
void	 journal_test_pause(struct fsd *fs, const char *env, uint64_t blkno, const char *what);
/*
 * Transactions committed since the mount (0 when read-only); in_place, if
 * not NULL, gets how many of them went home in place, not through the log.
 */
uint64_t journal_commits(struct fsd *fs, uint64_t *in_place);
/*
 * Whether inode block now differs from home in its times (and their
 * metaecc check) only: such a one-block transaction is written home in
 * place (fsd/journal.c, commit_in_place).
 */
int	 journal_times_only(const uint8_t *home, const uint8_t *now, unsigned bs);
/* Handles begun since the mount, the most open at once, and journal_access's waits for another's block. */
void	 journal_handle_stats(struct fsd *fs, uint64_t *handles, unsigned *peak,
	    uint64_t *owner_waits);
/* Commit, then write committed blocks home and free the log. */
int	 journal_checkpoint(struct fsd *fs);
/*
 * lr leaves EX: what changed under it goes home before another node reads
 * it, and nothing more (doc/lock-handoff.md): no I/O if that is home
 * already, a checkpoint if it is committed, a commit first if it is still
 * in the running transaction. 0 or -errno.
 */
int	 journal_write_home(struct fsd *fs, struct fsd_lockres *lr);
/* Checkpoint everything and mark the log empty (s_start 0), for unmount. */
int	 journal_shutdown(struct fsd *fs);

/* qtree.c: the global quota file's tree (doc/quota.md), pure; bs the block size */
unsigned qtree_refs_per_block(unsigned bs);
int	 qtree_depth(unsigned bs);
/* The reference a tree block at depth (the root is 0) follows for id. */
unsigned qtree_index(unsigned bs, uint32_t id, int depth);
unsigned qtree_entries_per_leaf(unsigned bs);
struct ocfs2_global_disk_dqblk *qtree_leaf_entry(uint8_t *leaf, unsigned i);
int	 qtree_entry_unused(const struct ocfs2_global_disk_dqblk *e);
/* id's entry in a leaf block, or -1; the first unused entry, or -1. */
int	 qtree_leaf_find(uint8_t *leaf, unsigned bs, uint32_t id);
int	 qtree_leaf_free_slot(uint8_t *leaf, unsigned bs);
/* An entry that would read as unused (id 0, all zero) is marked used. */
void	 qtree_entry_keep_used(struct ocfs2_global_disk_dqblk *e);

/* quota.c: disk quotas (doc/quota.md) */
/* Find the global quota files of the volume's quota features: 0, or -1 and err. */
int	 quota_mount(struct fsd *fs, char *err, size_t errlen);
/*
 * Read-write mount, under SUPER: what a kernel node that crashed left in
 * any slot's local quota file goes into the global files (fsd itself
 * never leaves anything there). 0 or -errno.
 */
int	 quota_recover_local(struct fsd *fs);
/* Does the volume keep quotas? */
int	 quota_enabled(const struct fsd *fs);
/*
 * Inside a handle: inode di (block blkno) gains or loses clusters and
 * inodes (an inode itself: +1 created, -1 freed). Growth beyond the
 * owner's hard limit, or its soft limit past the grace time, is refused
 * with -EDQUOT unless the caller is root. System files are not counted.
 */
int	 quota_charge(struct fsd_handle *h, const struct ocfs2_dinode *di, uint64_t blkno,
	    int64_t clusters, int64_t inodes);
/* chown/chgrp of di (its usage goes from its owners to uid and gid): 0 or -EDQUOT. */
int	 quota_transfer(struct fsd_handle *h, const struct ocfs2_dinode *di, uint64_t blkno,
	    uint32_t uid, uint32_t gid);
/* The FUSE request's caller, whose rights the limits are checked with (this thread). */
void	 quota_set_caller(uint32_t uid);
/* A caller not known, never exempt: the kernel writing back its cache ((uid_t)-1). */
#define QUOTA_CALLER_UNKNOWN	0xffffffffu
/* One id's quota as the global file keeps it (space in bytes; limits 0: none). */
struct quota_entry {
	int		 type;		/* FSD_USRQUOTA, FSD_GRPQUOTA */
	uint32_t	 id;
	uint64_t	 space, inodes;
	uint64_t	 bsoft, bhard, isoft, ihard;
	uint64_t	 btime, itime;	/* when a soft limit's grace ends; 0: none */
};
#define QUOTA_SET_BSOFT	0x1	/* = fsd.proto's QuotaSetMask */
#define QUOTA_SET_BHARD	0x2
#define QUOTA_SET_ISOFT	0x4
#define QUOTA_SET_IHARD	0x8
#define QUOTA_SET_BGRACE 0x10
#define QUOTA_SET_IGRACE 0x20
/* Set the limits mask names of type's id to lim's (in a handle of its own): 0 or -errno. */
int	 quota_set_limits(struct fsd *fs, int type, uint32_t id, unsigned mask,
	    const struct quota_entry *lim);
/* Set the grace times (s) mask names in type's global file: 0 or -errno. */
int	 quota_set_grace(struct fsd *fs, int type, unsigned mask, uint32_t bgrace, uint32_t igrace);
/*
 * Every id of both files, by type then id: 0 with *out (free it) and
 * *n, and the user file's grace times (else the group file's); or -errno.
 */
int	 quota_report(struct fsd *fs, struct quota_entry **out, size_t *n, uint32_t *bgrace,
	    uint32_t *igrace);
/* journal_stop: the handle's usage changes into the global files (its last locks). */
int	 quota_apply(struct fsd_handle *h);
void	 quota_discard(struct fsd_handle *h);

/* alloc.c (all inside the caller's handle) */
/* Clusters from the global bitmap: a run of min..want, near goal. */
int	 alloc_clusters(struct fsd_handle *h, uint32_t goal, unsigned min, unsigned want,
	    uint32_t *start, unsigned *got);
int	 free_clusters(struct fsd_handle *h, uint32_t start, unsigned count);
/* A bit of a suballocator: the block it stands for, and where to give it back. */
struct fsd_subbit {
	uint64_t	blkno;
	uint64_t	group;		/* its group descriptor */
	uint16_t	bit;
	uint16_t	slot;		/* whose allocator it is (i_suballoc_slot...) */
};
/*
 * One block from our slot's allocator of kind, growing it if full, else
 * (as ocfs2_steal_resource) from another slot's. -ENOSPC also when an
 * allocator's lock was busy: fsd_reclaim then waits for it.
 */
int	 suballoc_claim(struct fsd_handle *h, enum suballoc_kind kind, struct fsd_subbit *r);
int	 suballoc_free(struct fsd_handle *h, uint64_t alloc, uint64_t group, uint16_t bit);
/* The truncate log: free records, append a freed run, flush (own handle). */
int	 tl_room(struct fsd *fs);
int	 tl_append(struct fsd_handle *h, uint32_t start, unsigned count);
int	 tl_flush(struct fsd *fs);
/*
 * Move a dead slot's truncate log into ours in recovery (as the kernel's
 * recovery does): no checkpoint while SUPER is held; our next flush
 * frees the clusters.
 */
int	 tl_adopt_slot(struct fsd *fs, int slot);
/* What an operation that failed with ENOSPC did to make room so far. */
struct fsd_reclaim {
	unsigned	waits;		/* for a busy allocator's lock */
	int		flushed;	/* deletions waited for, truncate log flushed */
};
/*
 * Out of space (the operation's handles ended): wait for the allocator
 * lock it found busy, or else (once) for orphan deletions under way or
 * due and flush the truncate log; 1 if a retry may find space.
 */
int	 fsd_reclaim(struct fsd *fs, struct fsd_reclaim *rc);

/* localalloc.c */
/* Data clusters from our slot's window (taking a new one as needed). */
int	 la_claim(struct fsd_handle *h, uint32_t goal, unsigned min, unsigned want,
	    uint32_t *start, unsigned *got);
/* Return the window to the global bitmap (unmount, crash recovery). */
int	 la_release(struct fsd *fs);
int	 la_release_slot(struct fsd *fs, int slot);

/* replay.c */
struct jbd2_log_ops {
	int	(*read)(void *arg, uint32_t lblk, uint8_t *buf);	/* one log block */
	int	(*write)(void *arg, uint64_t blkno, const uint8_t *buf);	/* one home block */
};
struct jbd2_replay_result {
	unsigned	transactions;	/* committed transactions replayed */
	unsigned	blocks;		/* home blocks written */
	uint32_t	next_sequence;	/* what s_sequence becomes: last committed + 2 */
};
/*
 * Replay the log described by ji (start != 0) the way jbd2 recovery does:
 * scan to the last committed transaction, gather revokes, write back
 * every logged block not revoked later. Pure but for ops. 0 or -errno
 * (-EIO for a malformed log).
 */
int	 jbd2_replay(const struct jbd2_info *ji, const struct jbd2_log_ops *ops, void *arg,
	    uint64_t max_blkno, struct jbd2_replay_result *res, char *why, size_t whylen);
/* Replay slot's journal if DIRTY_FL says so; *replayed = transactions. */
int	 recovery_replay_slot(struct fsd *fs, int slot, unsigned *replayed, char *err,
	    size_t errlen);

/* file.c: each in its own handle */
/* touch_times: update mtime/ctime (not when the kernel keeps them: writeback cache). */
int	 file_write(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len,
	    int touch_times);
/*
 * A page of the kernel's cache written back (in a cluster): within the
 * size it finds, under the META lock alone.
 */
int	 file_writepage(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data,
	    size_t len);
/* file_write's offset for O_APPEND: the size, as it is under the EX lock. */
#define FILE_APPEND	UINT64_MAX
int	 file_setsize(struct fsd *fs, struct fsd_inode *ip, uint64_t newsize);
/* The same inside a handle, inode locked EX (slow symlinks use it). */
int	 file_write_locked(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off,
	    const void *data, size_t len);
/* file_write by a caller that holds the inode's RW lock already (dio.c). */
int	 file_write_rw_held(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data,
	    size_t len, int touch_times);
/*
 * Inside a handle, inode locked EX and accessed: clusters for the bytes
 * [off, off+len) (an inline file gets an extent list first) and zeros on
 * disk between the size and off. The size stays.
 */
int	 file_prepare_range(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, size_t len);
/*
 * The bytes of a write into clusters file_prepare_range gave the range,
 * under the META lock; size is the file's size (partial blocks past it
 * get zeros).
 */
int	 file_write_data(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t size, uint64_t off,
	    const void *data, size_t len);
/*
 * fallocate(2) of [off, off+len) in a mode ops_file.c let through: mode 0
 * or KEEP_SIZE without the sparse feature, sparse_fallocate_modes() with it.
 */
int	 file_fallocate(struct fsd *fs, struct fsd_inode *ip, int mode, uint64_t off, uint64_t len);
/*
 * Write zeros over bytes [from, to) of an allocated range; on a sparse
 * volume over what of it is allocated and written (no handle needed).
 */
int	 file_zero(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t from, uint64_t to);

/* inline.c: inline data (doc/inline-data.md) */
/* What a new inline area of di holds: the block after id_data, less its inline xattrs. */
unsigned inline_capacity(const struct fsd *fs, const struct ocfs2_dinode *di);
/*
 * Inside a handle, inode buffer ib accessed in it: make an empty inode
 * inline (no clusters, size 0), its id2 an empty inline area.
 */
void	 inline_start(struct fsd_handle *h, struct fsd_buf *ib);
/* Write into the inline area (off + len within id_count). */
void	 inline_write(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, const void *data,
	    size_t len);
/* The new size of an inline file, within id_count: bytes past it zeroed. */
void	 inline_truncate(struct fsd_handle *h, struct fsd_buf *ib, uint64_t newsize);
/*
 * Give an inline file an extent list: its bytes move to a new cluster
 * (written before the handle commits), the flag goes. ib accessed in h.
 */
int	 inline_file_to_extents(struct fsd_handle *h, struct fsd_buf *ib);
/*
 * The same in a handle of its own, under the inode's META lock EX, if
 * the file is inline (fallocate, under the RW lock EX: nothing makes the
 * file inline meanwhile).
 */
int	 inline_convert(struct fsd *fs, struct fsd_inode *ip);

/* sparse.c: file space on sparse volumes */
/*
 * Inside the write's handle: allocate the holes among the clusters of
 * [off, off+len) and convert its unwritten clusters, zeroing on disk
 * what the write leaves of each such cluster.
 */
int	 sparse_prepare_write(struct fsd_handle *h, struct fsd_buf *ib, uint64_t off, size_t len);
/* Are the bytes [off, off+len) all in allocated, written clusters? */
int	 sparse_range_written(struct fsd *fs, const struct ocfs2_dinode *di, uint64_t off,
	    size_t len);
/* Does fallocate(2) take this mode on this volume (which has the sparse feature)? */
int	 sparse_fallocate_modes(const struct fsd *fs, int mode);
/* fallocate(2) on a sparse volume, under the RW lock EX. */
int	 sparse_fallocate_rw_locked(struct fsd *fs, struct fsd_inode *ip, int mode, uint64_t off,
	    uint64_t len);
/*
 * lseek(2) SEEK_DATA / SEEK_HOLE from off: 0 and *res, or -ENXIO (off at
 * or past the end; SEEK_DATA with no data after off).
 */
int	 file_seek(struct fsd *fs, struct fsd_inode *ip, uint64_t off, int whence, uint64_t *res);
/* Drop every cluster of a locked inode, in as many handles as it takes. */
int	 file_free_all(struct fsd *fs, struct fsd_inode *ip);
/* One step of a change that may free clusters: -EAGAIN for another. */
typedef int file_change_fn(struct fsd_handle *h, struct fsd_buf *ib, void *arg);
int	 file_change_in_steps(struct fsd *fs, struct fsd_inode *ip, file_change_fn *change,
	    void *arg);

/* xattr.c: extended attributes (doc/xattr.md) */
/* OCFS2's name indexes (fs/ocfs2/xattr.h enum ocfs2_xattr_type) */
enum { XATTR_INDEX_USER = 1, XATTR_INDEX_POSIX_ACL_ACCESS, XATTR_INDEX_POSIX_ACL_DEFAULT,
	XATTR_INDEX_TRUSTED, XATTR_INDEX_SECURITY };
/* The superblock's xattr facts (s_xattr_inline_size, s_uuid_hash), at mount. */
void	 xattr_mount(struct fsd *fs, const struct ocfs2_super_block *sb);
/* block_validate checks xattr headers with xattr_header_check. */
void	 xattr_register_checks(struct fsd *fs);
/*
 * Split "user.foo" into index and suffix: 0, -EOPNOTSUPP for an unknown
 * prefix, -EINVAL for an empty suffix. Pure.
 */
int	 xattr_parse_name(const char *full, int *index, const char **suffix);
/* The prefix of an index, NULL if none. Pure. */
const char *xattr_prefix(int index);
/* ocfs2_xattr_name_hash of a suffix, seeded with s_uuid_hash. Pure. */
uint32_t xattr_name_hash(uint32_t seed, const char *name, size_t len);
/* Bytes a name and value take in the storage (the value root past 80 bytes). Pure. */
size_t	 xattr_namevalue_size(unsigned name_len, uint64_t value_len);
/* Check a header of size bytes: entries, names and values inside it. Pure. */
int	 xattr_header_check(const struct ocfs2_xattr_header *xh, size_t size, unsigned bucket_bs,
	    char *why, size_t whylen);
/*
 * The value into out (outlen bytes, or out NULL to ask the size): 0 and
 * *vlen, -ENODATA, -ERANGE when it does not fit, -EIO.
 */
int	 xattr_get(struct fsd *fs, struct fsd_inode *ip, int index, const char *name, void *out,
	    size_t outlen, size_t *vlen);
/* Every name, prefixed and NUL-terminated, into out (NULL: the size): as xattr_get. */
int	 xattr_list(struct fsd *fs, struct fsd_inode *ip, char *out, size_t outlen, size_t *len);
/* Set (value != NULL) or remove an attribute in a handle of its own; XATTR_CREATE/REPLACE. */
int	 xattr_set(struct fsd *fs, struct fsd_inode *ip, int index, const char *name,
	    const void *value, size_t vlen, int flags);
/* The same, and with mode >= 0 the mode's permission bits set in the same handle. */
int	 xattr_set_mode(struct fsd *fs, struct fsd_inode *ip, int index, const char *name,
	    const void *value, size_t vlen, int flags, int mode);
/* Free every attribute of an inode being deleted (own handles), so it can be wiped. */
int	 xattr_free_all(struct fsd *fs, struct fsd_inode *ip);

/* acl.c: POSIX ACLs in system.posix_acl_* (doc/xattr.md) */
/* The kernel's form (posix_acl_xattr_header and entries) to OCFS2's: 0 or -EINVAL. Pure. */
int	 acl_from_vfs(const void *v, size_t n, uint8_t *out, size_t cap, size_t *outlen);
/* OCFS2's form to the kernel's (out NULL: the size only): 0, -ERANGE, -EIO. Pure. */
int	 acl_to_vfs(const uint8_t *d, size_t n, void *out, size_t cap, size_t *outlen);
/* posix_acl_equiv_mode: *mode's permission bits from the ACL; 0 if it says no more. Pure. */
int	 acl_equiv_mode(const uint8_t *d, size_t n, unsigned *mode);
/* posix_acl_create_masq: ACL and mode limit each other; 0 if the ACL says no more. Pure. */
int	 acl_create_masq(uint8_t *d, size_t n, unsigned *mode);
/* posix_acl_chmod_masq: the ACL follows a new mode. Pure. */
void	 acl_chmod(uint8_t *d, size_t n, unsigned mode);
/* The ACL of index (2 access, 3 default) in the kernel's form; as xattr_get. */
int	 acl_get(struct fsd *fs, struct fsd_inode *ip, int index, void *out, size_t cap, size_t *len);
/* Set (v NULL: remove) an ACL given in the kernel's form; the access ACL sets the mode. */
int	 acl_set(struct fsd *fs, struct fsd_inode *ip, int index, const void *v, size_t n);
/* What a new inode takes from its directory's default ACL. */
struct acl_inherit {
	uint8_t	*access, *dflt;		/* OCFS2's form, malloc'ed, or NULL */
	size_t	 access_len, dflt_len;
};
/*
 * Before creating an inode of *mode in dir: with a default ACL, the mode
 * and the new ACLs limited by each other; without, the umask applied.
 */
int	 acl_inherit(struct fsd *fs, struct fsd_inode *dir, unsigned *mode, unsigned umask,
	    struct acl_inherit *a);
/* Give the new inode blkno what acl_inherit found (own handles). */
int	 acl_apply(struct fsd *fs, uint64_t blkno, const struct acl_inherit *a);
void	 acl_inherit_free(struct acl_inherit *a);
/* After a chmod: the access ACL, if any, follows the mode. */
int	 acl_chmod_inode(struct fsd *fs, struct fsd_inode *ip, unsigned mode);

/* orphan.c */
/* Inside a handle: put an inode whose last link went into our orphan dir. */
int	 orphan_add(struct fsd_handle *h, struct fsd_buf *ib);
/*
 * Inside a handle: a new inode with no link, made in our orphan dir (the
 * kernel's ocfs2_create_inode_in_orphan): a crash before it gets a name
 * leaves an orphan that recovery deletes. *ib referenced.
 */
int	 orphan_create(struct fsd_handle *h, unsigned mode, uint32_t uid, uint32_t gid,
	    struct fsd_buf **ib);
/*
 * Inside a handle, with ib locked EX: such an inode leaves our orphan
 * dir with one link, for the name the caller adds in the same handle
 * (ocfs2_mv_orphaned_inode_to_new). -ESTALE if it is not one of ours.
 */
int	 orphan_adopt(struct fsd_handle *h, struct fsd_buf *ib);
/* Delete an orphaned inode nobody uses any more (own handles): 1 deleted,
 * 0 left (still linked, or open on some node), or -errno. */
int	 orphan_wipe(struct fsd *fs, uint64_t blkno);
/*
 * This node's unlink left blkno without links (inside its handle, undone
 * with orphan_unexpect if that fails): the last close or the kernel's
 * FORGET deletes it, and FUSE may send them after the next writes.
 */
void	 orphan_expect(struct fsd *fs, uint64_t blkno);
void	 orphan_unexpect(struct fsd *fs, uint64_t blkno);
/*
 * Out of space: wait for the deletions under way to end and the expected
 * ones to come, these at most ms (then they are forgotten). 1 if there
 * was any to wait for.
 */
int	 orphan_wait_deletes(struct fsd *fs, unsigned ms);
/*
 * Wipe every inode in slot's orphan dir that no node has open (mount,
 * unmount, recovery, orphan scan): how many, or -errno. With dio set
 * (nothing of the slot's owner runs any more), also end what appending
 * O_DIRECT writes left there (dio_recover); without, leave those alone.
 */
int	 orphan_recover(struct fsd *fs, int slot, int dio);
/*
 * Append-dio records (doc/append-dio.md), inside a handle with the inode
 * buffer ib locked EX: orphan_dio_add names it "dio-<blkno>" in our
 * orphan dir and sets OCFS2_DIO_ORPHANED_FL and i_dio_orphaned_slot;
 * orphan_dio_del takes the name out of slot's orphan dir and, if the
 * flag points there, clears it.
 */
int	 orphan_dio_add(struct fsd_handle *h, struct fsd_buf *ib);
int	 orphan_dio_del(struct fsd_handle *h, struct fsd_buf *ib, int slot);

/* dio.c: appending O_DIRECT writes on append-dio volumes (doc/append-dio.md) */
/*
 * A write through an O_DIRECT open: one that extends the file goes
 * through a dio record in our orphan dir, others as file_write.
 */
int	 dio_write(struct fsd *fs, struct fsd_inode *ip, uint64_t off, const void *data, size_t len,
	    int touch_times);
/*
 * End what a dio record of slot for inode blkno stands for: clusters
 * past i_size freed, the record and the flag gone. 1 when done, 0 if
 * there was nothing (the record was stale), or -errno.
 */
int	 dio_recover(struct fsd *fs, int slot, uint64_t blkno);
/*
 * End the dio record an inode still carries (OCFS2_DIO_ORPHANED_FL), as
 * above: before a new record, and before an unlinked inode is deleted,
 * so that no record outlives its inode. 0 or -errno.
 */
int	 dio_end_leftover(struct fsd *fs, struct fsd_inode *ip);

/* ops.c */
extern const struct fuse_lowlevel_ops fsd_ops;
/* Fail every request the kernel still waits for: before stopping unmounted. */
void	 fsd_abort_connection(struct fsd *);

/* Host-endian helpers for the little-endian OCFS2 fields. */
#define LE16(x)	le16toh(x)
#define LE32(x)	le32toh(x)
#define LE64(x)	le64toh(x)

/* inline.c: does the inode keep its data (or entries) inside itself? */
static inline int
inline_has(const struct ocfs2_dinode *di)
{
	return (LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL) != 0;
}

/*
 * A fast symlink keeps its target in id2 where other inodes have their
 * extent list: no list to walk or truncate. fsck.ocfs2 (pass1.c,
 * o2fsck_check_blocks) tells them apart by mode and i_clusters alone.
 */
static inline int
fsd_fast_symlink(const struct ocfs2_dinode *di)
{
	return S_ISLNK(LE16(di->i_mode)) && LE32(di->i_clusters) == 0 &&
	    !(LE16(di->i_dyn_features) & OCFS2_INLINE_DATA_FL);
}

#endif
