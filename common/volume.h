/*
 * An OCFS2 volume opened with O_DIRECT: the superblock's facts, aligned
 * block reads, system inode lookup and extent mapping. Shared by hbd (to
 * find the heartbeat region), o2ctl and fsd.
 */
#ifndef OCFS2_VOLUME_H
#define OCFS2_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#define VOLUME_UUID_HEX	32

struct volume {
	int		 fd;
	char		*path;
	unsigned	 block_bytes;
	unsigned	 cluster_bytes;
	unsigned	 sector_bytes;	/* device logical sector (512 for an image file) */
	uint64_t	 size_bytes;
	char		 uuid[VOLUME_UUID_HEX + 1];	/* upper-case hex: region and DLM domain name */
	char		 label[65];
	unsigned	 max_slots;
	uint32_t	 compat, incompat, ro_compat;
	char		 cluster_stack[5];	/* "" unless the volume records one */
	char		 cluster_name[17];
	uint64_t	 root_blkno;
	uint64_t	 system_dir_blkno;
	/* Asked before every transfer when set: -1 with errno refuses it. */
	int		(*io_gate)(void *arg, int write);
	void		*io_gate_arg;
};

/*
 * Open and probe. flags: O_RDONLY or O_RDWR (O_DIRECT is added). On error
 * returns -1 with a reason in err (never crashes on a corrupt disk).
 */
int	volume_open(const char *path, int flags, struct volume *v, char *err, size_t errlen);
void	volume_close(struct volume *v);

/* Buffers for O_DIRECT I/O: aligned, zeroed, freed with free(). */
void	*volume_alloc(size_t bytes);
/* Read or write whole filesystem blocks; -1 with errno, EIO on a short transfer. */
int	volume_read_blocks(struct volume *v, uint64_t blkno, unsigned count, void *buf);
int	volume_write_blocks(struct volume *v, uint64_t blkno, unsigned count, const void *buf);
/* The same write through another descriptor of the device (one without O_DIRECT). */
int	volume_write_blocks_via(struct volume *v, int fd, uint64_t blkno, unsigned count,
	    const void *buf);

/*
 * Read the inode at blkno and check its signature and self-pointer:
 * -1 with err set (EIO-worthy corruption) otherwise. buf: one block.
 */
int	volume_read_inode(struct volume *v, uint64_t blkno, void *buf, char *err, size_t errlen);

/* The physical block behind logical block lblk of an inode; 0 for a hole. */
int	volume_map_block(struct volume *v, const void *dinode, uint64_t lblk,
	    uint64_t *pblk, char *err, size_t errlen);

/*
 * A system file by name, e.g. "heartbeat", or "journal" with slot 3 for
 * "journal:0003" (slot -1 for global ones).
 */
int	volume_system_inode(struct volume *v, const char *name, int slot, uint64_t *blkno,
	    char *err, size_t errlen);

/* The o2hb region of the volume, as ocfs2_fill_heartbeat_desc computes it. */
struct hb_region_desc {
	unsigned	block_bytes;	/* = sector size */
	uint64_t	start_block;	/* in block_bytes units */
	unsigned	blocks;		/* always 255 */
};
int	volume_heartbeat_region(struct volume *v, struct hb_region_desc *d, char *err, size_t errlen);

#endif
