/*
 * The heartbeat lease file, as its writers read it and as its keeper
 * maps it (hbd/lease.c, pcmkd/lease.c say what goes in).
 */
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hblease.h"
#include "log.h"
#include "util.h"

uint64_t
hblease_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t
hblease_death(uint64_t issued_us, unsigned interval_ms, unsigned dead_threshold)
{
	unsigned n = dead_threshold > 1 ? dead_threshold - 1 : 1;

	return issued_us + (uint64_t)n * interval_ms * 1000;
}

uint64_t
hblease_margin_us(unsigned interval_ms, unsigned dead_threshold)
{
	uint64_t window = hblease_death(0, interval_ms, dead_threshold);
	uint64_t one = (uint64_t)interval_ms * 1000;

	return one < window / 2 ? one : window / 2;
}

struct hblease *
hblease_keep(const char *rundir, const char *daemon, int *stale)
{
	struct hblease *l;
	char *path;
	int fd;

	xasprintf(&path, "%s/%s.lease", rundir, daemon);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) == -1 ||
	    ftruncate(fd, sizeof(*l)) == -1)
		fatal("%s", path);
	l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (l == MAP_FAILED)
		fatal("mmap %s", path);
	close(fd);
	*stale = 0;
	if (l->magic != HBLEASE_MAGIC || l->version != HBLEASE_VERSION) {
		*stale = l->magic != 0;
		memset(l, 0, sizeof(*l));
		l->magic = HBLEASE_MAGIC;
		l->version = HBLEASE_VERSION;
	}
	free(path);
	return l;
}

int
hblease_open(const char *rundir, const char *daemon, const char *region,
    struct hblease_view *v, char *err, size_t errlen)
{
	char path[4096];
	const struct hblease *l;
	unsigned i;

	memset(v, 0, sizeof(*v));
	v->fd = -1;
	snprintf(path, sizeof(path), "%s/%s.lease", rundir, daemon);
	if ((v->fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	l = mmap(NULL, sizeof(*l), PROT_READ, MAP_SHARED, v->fd, 0);
	if (l == MAP_FAILED) {
		snprintf(err, errlen, "mmap %s: %s", path, strerror(errno));
		close(v->fd);
		v->fd = -1;
		return -1;
	}
	v->map = l;
	if (l->magic != HBLEASE_MAGIC || l->version != HBLEASE_VERSION) {
		snprintf(err, errlen, "%s: not a lease file of this %s version", path, daemon);
		hblease_close(v);
		return -1;
	}
	for (i = 0; i < CC_MAX_REGIONS; i++) {
		if (l->regions[i].in_use && strncmp(l->regions[i].name, region,
		    sizeof(l->regions[i].name)) == 0) {
			v->idx = i;
			snprintf(v->name, sizeof(v->name), "%s", region);
			return 0;
		}
	}
	snprintf(err, errlen, "%s: %s holds no lease for region %s", path, daemon, region);
	hblease_close(v);
	return -1;
}

void
hblease_close(struct hblease_view *v)
{
	if (v->map != NULL)
		munmap((void *)v->map, sizeof(*v->map));
	if (v->fd != -1)
		close(v->fd);
	v->map = NULL;
	v->fd = -1;
}

/*
 * hbd renews in place, and a restarted hbd keeps each running region's
 * entry where it was; an entry that now names another region is no
 * lease of ours.
 */
uint64_t
hblease_expires_us(const struct hblease_view *v)
{
	const struct hblease_region *r = &v->map->regions[v->idx];
	uint64_t exp = __atomic_load_n(&r->expires_us, __ATOMIC_ACQUIRE);

	if (!__atomic_load_n(&r->in_use, __ATOMIC_ACQUIRE) ||
	    strncmp(r->name, v->name, sizeof(r->name)) != 0)
		return 0;
	return exp;
}

uint64_t
hblease_final_us(const struct hblease_view *v, uint64_t expires_us)
{
	return expires_us + hblease_margin_us(v->map->interval_ms, v->map->dead_threshold);
}
