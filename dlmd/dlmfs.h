/* The dlmfs-like tree at <rundir>/dlm, served from a thread of its own. */
#ifndef DLMD_DLMFS_H
#define DLMD_DLMFS_H

/*
 * Mounts the dlmfs tree at `mountpoint` (normally <rundir>/dlm) and
 * serves it from a thread of its own, as a client of dlmd.sock at
 * `sock_path`. Returns 0, or -1 with a logged reason.
 */
int	dlmfs_start(const char *sock_path, const char *mountpoint);
/* Unmounts and joins the thread. */
void	dlmfs_stop(void);

#endif
