/* What every benchmark needs: a clock, CPU pinning, medians. */
#ifndef OCFS2_BENCH_H
#define OCFS2_BENCH_H

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

static inline double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Pin the calling process to one CPU; cpu < 0 leaves it free. */
static inline void
pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static inline int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* A decimal argument in [min, max], or the program stops (log.h's fatalx). */
static inline int
bench_num(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
		fatalx("bad number %s", s);
	return (int)v;
}

#endif
