/* Small helpers every daemon uses: allocation that cannot fail, full I/O. */
#ifndef OCFS2_UTIL_H
#define OCFS2_UTIL_H

#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

void	*xmalloc(size_t n);
void	*xcalloc(size_t nmemb, size_t size);
void	*xrealloc(void *p, size_t n);
char	*xstrdup(const char *s);
int	 xasprintf(char **ret, const char *fmt, ...) __attribute__((__format__(printf, 2, 3)));

/* Write all of buf, retrying on EINTR and short writes. */
int	write_full(int fd, const void *buf, size_t len);
/* Read exactly len bytes, waiting at most timeout_ms for each (-1: forever). */
int	read_full_timeout(int fd, void *buf, size_t len, int timeout_ms);

/* Parse an unsigned decimal (or 0x hex when base is 0) with nothing trailing. */
int	parse_ulong(const char *s, int base, unsigned long max, unsigned long *out);

/* The runtime directory: --rundir, else $OCFS2_RUNDIR, else /run/ocfs2. */
const char *rundir_default(void);
/* Monotonic milliseconds: timeouts never jump with the clock. */
uint64_t now_ms(void);
/* This host's name as o2cb matches it against cluster.conf's nodes. */
const char *host_node_name(void);
int	mkdir_p(const char *path, mode_t mode);
/* A process's start time, which with its pid names it across pid reuse; 0 unknown. */
uint64_t proc_starttime(int pid);

#endif
