/*
 * The slot map (doc/ondisk.md, Slot map): which node uses which slot's journal,
 * allocators and orphan dir. It is written in place, never through the
 * log, under the SUPER lock in a cluster. Without a cluster (a local or
 * nocluster mount) fsd can neither share a volume with a live node nor
 * recover a dead one, so it then refuses any volume where another slot
 * is taken or another journal needs replay.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "fsd.h"

struct slotmap {
	uint8_t		*buf;		/* the map's blocks, O_DIRECT aligned */
	uint64_t	 pblk[8];	/* where each of its blocks lives */
	unsigned	 nblocks;
	int		 extended;
};

static int
map_load(struct fsd *fs, struct slotmap *m, char *err, size_t errlen)
{
	unsigned entry, i;
	struct fsd_extent ex;
	struct fsd_buf *b;
	uint64_t size;
	int rc;

	memset(m, 0, sizeof(*m));
	m->extended = (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_EXTENDED_SLOT_MAP) != 0;
	entry = m->extended ? sizeof(struct ocfs2_extended_slot) : sizeof(uint16_t);
	m->nblocks = (fs->vol.max_slots * entry + fs->vol.block_bytes - 1) / fs->vol.block_bytes;
	if ((rc = block_read(fs, fs->slot_map, BLK_INODE, &b)) != 0) {
		snprintf(err, errlen, "the slot map inode is unreadable");
		return -1;
	}
	size = LE64(((const struct ocfs2_dinode *)b->data)->i_size);
	if (m->nblocks > 8 || (uint64_t)m->nblocks * fs->vol.block_bytes > size) {
		snprintf(err, errlen, "the slot map (%llu bytes) cannot hold %u slots",
		    (unsigned long long)size, fs->vol.max_slots);
		block_put(fs, b);
		return -1;
	}
	for (i = 0; i < m->nblocks; i++) {
		rc = extent_map(fs, fs->slot_map, &((const struct ocfs2_dinode *)b->data)->id2.i_list,
		    i, &ex);
		if (rc != 0 || ex.pblk == 0) {
			snprintf(err, errlen, "the slot map has no block %u", i);
			block_put(fs, b);
			return -1;
		}
		m->pblk[i] = ex.pblk;
	}
	block_put(fs, b);
	if ((m->buf = volume_alloc((size_t)m->nblocks * fs->vol.block_bytes)) == NULL)
		fatal("out of memory");
	for (i = 0; i < m->nblocks; i++) {
		if (block_io(fs, 0, m->pblk[i], 1, m->buf + (size_t)i * fs->vol.block_bytes) != 0) {
			snprintf(err, errlen, "the slot map is unreadable");
			free(m->buf);
			return -1;
		}
	}
	return 0;
}

static int
map_store(struct fsd *fs, struct slotmap *m)
{
	unsigned i;
	int rc;

	for (i = 0; i < m->nblocks; i++)
		if ((rc = block_io(fs, 1, m->pblk[i], 1, m->buf + (size_t)i * fs->vol.block_bytes)) != 0)
			return rc;
	return fdatasync(fs->vol.fd) == -1 ? -errno : 0;
}

/* Is slot i taken, and by which node? */
static int
map_get(const struct slotmap *m, unsigned i, unsigned *node)
{
	if (m->extended) {
		const struct ocfs2_extended_slot *es = (const void *)m->buf;

		*node = LE32(es[i].es_node_num);
		return es[i].es_valid != 0;
	}
	*node = LE16(((const uint16_t *)m->buf)[i]);
	return *node != 0xFFFF;	/* OCFS2_INVALID_SLOT marks a free slot */
}

static void
map_set(struct slotmap *m, unsigned i, int valid, unsigned node)
{
	if (m->extended) {
		struct ocfs2_extended_slot *es = (void *)m->buf;

		es[i].es_valid = valid ? 1 : 0;
		es[i].es_node_num = htole32(valid ? node : 0);
	} else
		((uint16_t *)m->buf)[i] = htole16(valid ? node : 0xFFFF);
}

static int
slot_journal_dirty(struct fsd *fs, unsigned slot, int *dirty)
{
	struct fsd_buf *b;
	int rc;

	if ((rc = block_read(fs, fs->slots[slot].journal, BLK_INODE, &b)) != 0)
		return rc;
	*dirty = (LE32(((const struct ocfs2_dinode *)b->data)->id1.journal1.ij_flags) &
	    OCFS2_JOURNAL_DIRTY_FL) != 0;
	block_put(fs, b);
	return 0;
}

/*
 * Two fsd on this machine with the same node number would take the same
 * slot. An open-file-description lock on a byte far past the volume's
 * end, one per node number, keeps them apart (released when fsd dies).
 */
static int
lock_node(struct fsd *fs, char *err, size_t errlen)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(1ULL << 62) + fs->node_num;
	fl.l_len = 1;
	if (fcntl(fs->vol.fd, F_OFD_SETLK, &fl) == -1) {
		if ((errno == EAGAIN || errno == EACCES) &&
		    (fs->vol.incompat & OCFS2_FEATURE_INCOMPAT_LOCAL_MOUNT)) {
			/* no node numbers there: whoever mounts it is node 0 */
			snprintf(err, errlen, "another fsd on this machine has this local volume "
			    "mounted: a local volume (mkfs.ocfs2 -M local) mounts on one node at a time");
			return -1;
		}
		snprintf(err, errlen, "node %u already has this volume mounted on this machine%s",
		    fs->node_num, errno == EAGAIN || errno == EACCES ? "" : " (cannot lock)");
		return -1;
	}
	return 0;
}

/* Every slot is taken: say by whom, and how the volume gets more. */
static void
no_free_slot(const struct fsd *fs, const struct slotmap *m, char *err, size_t errlen)
{
	unsigned i, node;
	size_t n;

	n = (size_t)snprintf(err, errlen, "no free slot: the volume has %u slot%s, in use by node%s",
	    fs->vol.max_slots, fs->vol.max_slots > 1 ? "s" : "", fs->vol.max_slots > 1 ? "s" : "");
	for (i = 0; i < fs->vol.max_slots && n < errlen; i++) {
		map_get(m, i, &node);
		n += (size_t)snprintf(err + n, errlen - n, "%s %u", i ? "," : "", node);
	}
	if (n < errlen)
		snprintf(err + n, errlen - n, " (tunefs.ocfs2 -N adds slots)");
}

int
slot_claim(struct fsd *fs, char *err, size_t errlen)
{
	struct slotmap m;
	unsigned i, node;
	int mine = -1, fre = -1, dirty, rc;

	if (lock_node(fs, err, errlen) == -1)
		return -1;
	if (map_load(fs, &m, err, errlen) == -1)
		return -1;
	for (i = 0; i < fs->vol.max_slots; i++) {
		if (!map_get(&m, i, &node)) {
			if (fre < 0)
				fre = (int)i;
			continue;
		}
		if (node == fs->node_num && mine < 0) {
			mine = (int)i;	/* ours, left by a crash: reuse it */
			continue;
		}
		if (fs->glue != NULL)
			continue;	/* a live node's, or recovery's business */
		snprintf(err, errlen, "slot %u is in use by node %u: another node has the volume "
		    "mounted or crashed with it mounted; sharing and recovering need the cluster "
		    "stack", i, node);
		free(m.buf);
		return -1;
	}
	for (i = 0; fs->glue == NULL && i < fs->vol.max_slots; i++) {
		if ((int)i == mine)
			continue;
		if ((rc = slot_journal_dirty(fs, i, &dirty)) != 0 || dirty) {
			snprintf(err, errlen, "the journal of slot %u %s", i, rc ? "is unreadable" :
			    "holds transactions of a node that is gone; recover it with fsck.ocfs2 "
			    "or a cluster mount");
			free(m.buf);
			return -1;
		}
	}
	if (mine < 0) {
		if (fre < 0) {
			no_free_slot(fs, &m, err, errlen);
			free(m.buf);
			return -1;
		}
		mine = fre;
		map_set(&m, (unsigned)mine, 1, fs->node_num);
		if ((rc = map_store(fs, &m)) != 0) {
			snprintf(err, errlen, "writing the slot map: %s", strerror(-rc));
			free(m.buf);
			return -1;
		}
	} else
		log_info("slot %d was already ours (node %u): recovering it", mine, fs->node_num);
	free(m.buf);
	fs->slot = mine;
	return 0;
}

int
slot_map_nodes(struct fsd *fs, int *nodes)
{
	struct slotmap m;
	char err[160];
	unsigned i, node;

	if (map_load(fs, &m, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return -EIO;
	}
	for (i = 0; i < fs->vol.max_slots; i++)
		nodes[i] = map_get(&m, i, &node) ? (int)node : -1;
	free(m.buf);
	return 0;
}

int
slot_free(struct fsd *fs, int slot)
{
	struct slotmap m;
	char err[160];
	int rc;

	if (map_load(fs, &m, err, sizeof(err)) == -1) {
		log_warnx("freeing slot %d: %s", slot, err);
		return -EIO;
	}
	map_set(&m, (unsigned)slot, 0, 0);
	rc = map_store(fs, &m);
	free(m.buf);
	return rc;
}

int
slot_release(struct fsd *fs)
{
	struct slotmap m;
	char err[160];
	int rc;

	if (fs->slot < 0)
		return 0;
	if (map_load(fs, &m, err, sizeof(err)) == -1) {
		log_warnx("releasing slot %d: %s", fs->slot, err);
		return -EIO;
	}
	map_set(&m, (unsigned)fs->slot, 0, 0);
	rc = map_store(fs, &m);
	free(m.buf);
	if (rc == 0)
		fs->slot = -1;
	return rc;
}
