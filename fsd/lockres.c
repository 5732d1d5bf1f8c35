/*
 * Lock resources. Each one carries the name OCFS2 gives it on the DLM
 * (ocfs2_lockid.h) and a local reader/writer lock for the holders on
 * this node. Without a cluster stack (a local mount, or until issue 7
 * connects dlmd) the local lock is all there is, exactly as the kernel
 * skips the DLM for local mounts; with the stack, lockres_lock will first
 * obtain the cluster level from dlmd and cache it until a BAST.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <ocfs2-kernel/ocfs2_lockid.h>

#include "log.h"

#include "fsd.h"

_Static_assert(FSD_LOCK_NAME_LEN == OCFS2_LOCK_ID_MAX_LEN, "lock name length");

static enum ocfs2_lock_type
ocfs2_type(enum fsd_lock_type t)
{
	switch (t) {
	case FSD_LOCK_META:		return OCFS2_LOCK_TYPE_META;
	case FSD_LOCK_RW:		return OCFS2_LOCK_TYPE_RW;
	case FSD_LOCK_OPEN:		return OCFS2_LOCK_TYPE_OPEN;
	case FSD_LOCK_SUPER:		return OCFS2_LOCK_TYPE_SUPER;
	case FSD_LOCK_RENAME:		return OCFS2_LOCK_TYPE_RENAME;
	case FSD_LOCK_ORPHAN_SCAN:	return OCFS2_LOCK_TYPE_ORPHAN_SCAN;
	}
	return OCFS2_LOCK_TYPE_META;
}

void
lockres_name(char *out, size_t outlen, enum fsd_lock_type type, uint64_t blkno,
    uint32_t generation)
{
	/* dlmglue's ocfs2_build_lock_name: %c%s%016llx%08x */
	snprintf(out, outlen, "%c%s%016" PRIx64 "%08x",
	    ocfs2_lock_type_char(ocfs2_type(type)), OCFS2_LOCK_ID_PAD, blkno, generation);
}

void
lockres_init(struct fsd_lockres *lr, enum fsd_lock_type type, uint64_t blkno,
    uint32_t generation)
{
	lockres_name(lr->name, sizeof(lr->name), type, blkno, generation);
	pthread_rwlock_init(&lr->local, NULL);
	log_debug("lockres %s (%s)", lr->name, ocfs2_lock_type_strings[ocfs2_type(type)]);
}

void
lockres_destroy(struct fsd_lockres *lr)
{
	pthread_rwlock_destroy(&lr->local);
}

int
lockres_lock(struct fsd *fs, struct fsd_lockres *lr, int level)
{
	(void)fs;
	if (level == LKM_EX)
		pthread_rwlock_wrlock(&lr->local);
	else
		pthread_rwlock_rdlock(&lr->local);
	return 0;
}

void
lockres_unlock(struct fsd *fs, struct fsd_lockres *lr, int level)
{
	(void)fs;
	(void)level;
	pthread_rwlock_unlock(&lr->local);
}
