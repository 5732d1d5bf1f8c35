/*
 * fsx: a random-operation file exerciser in the spirit of the fsx of old.
 * One file takes writes (some far past the end, leaving holes), reads,
 * reads and writes through mmap, truncates down and up, fallocate, fsync,
 * close and reopen, and O_DIRECT reads and writes through a second
 * descriptor; with -H also punched holes, zeroed ranges and SEEK_DATA /
 * SEEK_HOLE (sparse volumes). Every byte read is checked against a model
 * of the file kept in memory.
 *
 *   fsx [-N OPS] [-S SEED] [-l MAXLEN] [-o MAXOP] [-m MODEL] [-DFMv] FILE
 *	-N	operations (1000)		-S	seed (1)
 *	-l	largest file size (3M)		-o	largest single I/O (256K)
 *	-m	write the model's bytes to MODEL at the end (and on a failure),
 *		for comparing the file after a remount or with other readers
 *	-D	no O_DIRECT			-F	no fallocate
 *	-M	no mmap				-v	print every operation
 *	-H	punch holes, zero ranges, seek data and holes
 *
 * Sizes take a K or M suffix. A seed always gives the same operations
 * (own generator), as long as the same operation kinds are enabled.
 * Exit status: 0 the file matched the model throughout, 1 it did not or
 * a call failed (the last operations are printed), 2 usage.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* O_DIRECT offsets, lengths and buffers: a page covers every block size. */
#define DIO_ALIGN	4096
/* with the two lines of fail(), the 20 lines the test scripts show */
#define LOG_SIZE	18

enum op {
	OP_WRITE, OP_READ, OP_MAPREAD, OP_MAPWRITE, OP_TRUNCATE, OP_FALLOCATE,
	OP_FSYNC, OP_REOPEN, OP_STAT, OP_DIOREAD, OP_DIOWRITE, OP_PUNCH, OP_ZERO,
	OP_SEEK, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	[OP_WRITE] = "write",		[OP_READ] = "read",
	[OP_MAPREAD] = "mapread",	[OP_MAPWRITE] = "mapwrite",
	[OP_TRUNCATE] = "truncate",	[OP_FALLOCATE] = "fallocate",
	[OP_FSYNC] = "fsync",		[OP_REOPEN] = "reopen",
	[OP_STAT] = "stat",		[OP_DIOREAD] = "dioread",
	[OP_DIOWRITE] = "diowrite",	[OP_PUNCH] = "punch",
	[OP_ZERO] = "zerorange",	[OP_SEEK] = "seek",
};

/* How often each operation is picked, out of the sum of the enabled ones. */
static int op_weight[OP_COUNT] = {
	[OP_WRITE] = 24,	[OP_READ] = 18,		[OP_MAPREAD] = 10,
	[OP_MAPWRITE] = 10,	[OP_TRUNCATE] = 8,	[OP_FALLOCATE] = 6,
	[OP_FSYNC] = 3,		[OP_REOPEN] = 4,	[OP_STAT] = 5,
	[OP_DIOREAD] = 6,	[OP_DIOWRITE] = 6,
	/* -H turns these on */
	[OP_PUNCH] = 0,		[OP_ZERO] = 0,		[OP_SEEK] = 0,
};

/* One done operation, for the log printed on a failure. */
struct logent {
	unsigned long	 num;
	enum op		 op;
	uint64_t	 off;
	uint64_t	 len;
	uint64_t	 size;		/* the model's size after it */
	const char	*note;		/* the variant: "keep-size", "msync", ... */
};

static const char	*path;
static const char	*model_out;
static int		 fd = -1;
static int		 dfd = -1;	/* O_DIRECT; -1 when not in use */
static int		 verbose;
static uint8_t		*model;		/* maxlen + a page; zero past size */
static uint64_t		 size;
static uint64_t		 maxlen = 3 << 20;
static uint64_t		 maxop = 256 << 10;
static uint8_t		*buf;		/* maxop bytes, DIO_ALIGN aligned */
static uint8_t		*readbuf;	/* maxop + a page, for what the file holds */
static size_t		 pagesz;
static unsigned long	 opnum;
static uint64_t		 seed = 1;
static uint64_t		 rng;
static struct logent	 oplog[LOG_SIZE];
static sigjmp_buf	 map_fault;

/* splitmix64: small, fast, and the same on every platform. */
static uint64_t
rnd(void)
{
	uint64_t z;

	z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number in [0, n); 0 when n is 0. The bias of % is of no concern here. */
static uint64_t
rnd_below(uint64_t n)
{
	return n == 0 ? 0 : rnd() % n;
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void
usage(void)
{
	fprintf(stderr, "usage: fsx [-N OPS] [-S SEED] [-l MAXLEN] [-o MAXOP] [-m MODEL] "
	    "[-DFHMv] FILE\n");
	exit(2);
}

static uint64_t
number(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *s == '-')
		usage();
	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else
		end--;
	if (*++end != '\0')
		usage();
	return v;
}

static void
log_print(const struct logent *e, uint64_t mark)
{
	/* '*' flags the operations that touched the byte in question */
	int hit = mark != UINT64_MAX && e->len > 0 && mark >= e->off &&
	    mark - e->off < e->len;

	fprintf(stderr, "%c op %-7lu %-9s %#9" PRIx64 " +%#-8" PRIx64 " size %#" PRIx64 "%s%s\n",
	    hit ? '*' : ' ', e->num, op_names[e->op], e->off, e->len, e->size,
	    e->note[0] != '\0' ? "  " : "", e->note);
}

static void
log_add(enum op op, uint64_t off, uint64_t len, const char *note)
{
	struct logent *e = &oplog[opnum % LOG_SIZE];

	*e = (struct logent){ .num = opnum, .op = op, .off = off, .len = len,
	    .size = size, .note = note };
}

/* The operation changed the size: the log shows the size after it. */
static void
log_size(void)
{
	oplog[opnum % LOG_SIZE].size = size;
}

static void
dump_model(void)
{
	FILE *f;

	if (model_out == NULL)
		return;
	if ((f = fopen(model_out, "w")) == NULL ||
	    fwrite(model, 1, size, f) != size || fclose(f) != 0)
		fprintf(stderr, "fsx: %s: %s\n", model_out, strerror(errno));
}

/*
 * The end: list the last operations (those touching byte mark flagged),
 * then say what went wrong in operation opnum, last because that is the
 * line a log's tail must keep; keep the model, exit 1.
 */
static void __attribute__((noreturn, format(printf, 2, 3)))
fail(uint64_t mark, const char *fmt, ...)
{
	va_list ap;
	unsigned long i, first;

	fprintf(stderr, "fsx: the last operations (offsets, lengths and sizes in hex):\n");
	first = opnum >= LOG_SIZE ? opnum - LOG_SIZE + 1 : 1;
	for (i = first; i <= opnum; i++)
		if (oplog[i % LOG_SIZE].num == i)
			log_print(&oplog[i % LOG_SIZE], mark);
	fprintf(stderr, "fsx: %s seed %" PRIu64 ": op %lu: ", path, seed, opnum);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	dump_model();
	exit(1);
}

/* got holds n bytes read at off; want them to be the model's, all of them. */
static void
compare(const char *what, uint64_t off, const uint8_t *got, uint64_t n, uint64_t want)
{
	uint64_t i;

	for (i = 0; i < n && i < want; i++)
		if (got[i] != model[off + i])
			fail(off + i, "%s: byte %#" PRIx64 " is 0x%02x, the model has 0x%02x "
			    "(%#" PRIx64 " bytes at %#" PRIx64 ")", what, off + i, got[i],
			    model[off + i], want, off);
	if (n != want)
		fail(off + n, "%s: %#" PRIx64 " bytes at %#" PRIx64 ", the model has %#" PRIx64
		    " (size %#" PRIx64 ")", what, n, off, want, size);
}

/* What a read of len bytes at off returns, per the model. */
static uint64_t
expect_len(uint64_t off, uint64_t len)
{
	return off >= size ? 0 : min_u64(len, size - off);
}

static void
fill(uint8_t *p, uint64_t len)
{
	uint64_t v = 0;
	uint64_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = rnd();
		p[i] = (uint8_t)(v >> (i % 8 * 8));
	}
}

/* A new size: the model's bytes past it are zero, as the invariant wants. */
static void
model_resize(uint64_t newsize)
{
	if (newsize < size)
		memset(model + newsize, 0, size - newsize);
	size = newsize;
}

static void
model_write(uint64_t off, const uint8_t *p, uint64_t len)
{
	memcpy(model + off, p, len);
	if (off + len > size)
		size = off + len;
}

/*
 * A length for one I/O: mostly small, as programs do, sometimes up to
 * maxop to cross clusters and extent records.
 */
static uint64_t
pick_len(void)
{
	uint64_t cap = rnd_below(4) == 0 ? maxop : min_u64(maxop, 9000);

	return 1 + rnd_below(cap);
}

/* Fit [*off, *off + *len) into the largest file. */
static void
clip(uint64_t *off, uint64_t *len)
{
	if (*len > maxlen)
		*len = maxlen;
	if (*off + *len > maxlen)
		*off = maxlen - *len;
}

static void
do_write(void)
{
	uint64_t off, len = pick_len();

	/*
	 * One write in eight lands anywhere below maxlen, usually far past
	 * the end: the gap must read back as zeros.
	 */
	off = rnd_below(rnd_below(8) == 0 ? maxlen : size + 16384);
	clip(&off, &len);
	fill(buf, len);
	log_add(OP_WRITE, off, len, off > size ? "past EOF" : "");
	if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		fail(UINT64_MAX, "pwrite: %s", strerror(errno));
	model_write(off, buf, len);
	log_size();
}

static void
do_read(void)
{
	uint64_t off = rnd_below(size + 8192), len = pick_len();
	ssize_t n;

	clip(&off, &len);
	log_add(OP_READ, off, len, "");
	if ((n = pread(fd, readbuf, len, (off_t)off)) < 0)
		fail(UINT64_MAX, "pread: %s", strerror(errno));
	compare("read", off, readbuf, (uint64_t)n, expect_len(off, len));
}

static void
on_fault(int sig)
{
	siglongjmp(map_fault, sig);
}

/* Map [off, off + len) of the file; *p points at byte off. Returns the base. */
static uint8_t *
map(uint64_t off, uint64_t len, int prot, uint8_t **p, size_t *maplen)
{
	uint64_t pg = off - off % pagesz;
	void *base;

	*maplen = off + len - pg;
	base = mmap(NULL, *maplen, prot, MAP_SHARED, fd, (off_t)pg);
	if (base == MAP_FAILED)
		fail(UINT64_MAX, "mmap: %s", strerror(errno));
	*p = (uint8_t *)base + (off - pg);
	return base;
}

/* memcpy to or from a mapping: a fault there is the file's failure. */
static void
map_copy(void *dst, const void *src, size_t n, const char *what)
{
	int sig;

	if ((sig = sigsetjmp(map_fault, 1)) != 0)
		fail(UINT64_MAX, "signal %d %s the mapping", sig, what);
	memcpy(dst, src, n);
}

static void
do_mapread(void)
{
	uint64_t off, len, eofpage;
	uint8_t *base, *p;
	size_t maplen;

	if (size == 0)
		return log_add(OP_MAPREAD, 0, 0, "empty: skipped");
	/*
	 * One in four runs to the end of the file and looks past it too:
	 * the rest of the last page must be zeros, whatever the file held
	 * there before a truncate or the disk held in the cluster.
	 */
	if (rnd_below(4) == 0) {
		len = 1 + rnd_below(min_u64(maxop, size));
		off = size - len;
	} else {
		off = rnd_below(size);
		len = 1 + rnd_below(min_u64(maxop, size - off));
	}
	eofpage = off + len == size ? (pagesz - size % pagesz) % pagesz : 0;
	log_add(OP_MAPREAD, off, len, eofpage != 0 ? "with EOF page" : "");
	base = map(off, len + eofpage, PROT_READ, &p, &maplen);
	map_copy(readbuf, p, len + eofpage, "reading");
	munmap(base, maplen);
	compare("mapread", off, readbuf, len, len);
	/* the model is zero past size: compare the EOF page's tail to it */
	compare("mapread past EOF", size, readbuf + len, eofpage, eofpage);
}

static void
do_mapwrite(void)
{
	uint64_t off = rnd_below(size + 16384), len = pick_len();
	uint8_t *base, *p;
	size_t maplen;
	int flush = rnd_below(3) == 0;

	clip(&off, &len);
	/* a mapping cannot extend a file: grow it first, as fsx always did */
	if (off + len > size) {
		log_add(OP_MAPWRITE, off, len, flush ? "extend, msync" : "extend");
		if (ftruncate(fd, (off_t)(off + len)) == -1)
			fail(UINT64_MAX, "ftruncate: %s", strerror(errno));
		model_resize(off + len);
		log_size();
	} else
		log_add(OP_MAPWRITE, off, len, flush ? "msync" : "");
	fill(buf, len);
	base = map(off, len, PROT_READ | PROT_WRITE, &p, &maplen);
	map_copy(p, buf, len, "writing");
	if (flush && msync(base, maplen, MS_SYNC) == -1)
		fail(UINT64_MAX, "msync: %s", strerror(errno));
	munmap(base, maplen);
	model_write(off, buf, len);
}

static void
do_truncate(void)
{
	/* half of them shrink (or keep) the file, half go anywhere */
	uint64_t newsize = rnd_below(2) == 0 ? rnd_below(size + 1) : rnd_below(maxlen + 1);

	log_add(OP_TRUNCATE, newsize, 0, newsize > size ? "up" : "down");
	if (ftruncate(fd, (off_t)newsize) == -1)
		fail(UINT64_MAX, "ftruncate: %s", strerror(errno));
	model_resize(newsize);
	log_size();
}

static void
do_fallocate(void)
{
	uint64_t off = rnd_below(size + 65536), len = pick_len();
	int keep = rnd_below(2) == 0;

	clip(&off, &len);
	log_add(OP_FALLOCATE, off, len, keep ? "keep-size" : "");
	/* fsd has both modes: EOPNOTSUPP is a failure like any other */
	if (fallocate(fd, keep ? FALLOC_FL_KEEP_SIZE : 0, (off_t)off, (off_t)len) == -1)
		fail(UINT64_MAX, "fallocate: %s", strerror(errno));
	if (!keep && off + len > size)
		model_resize(off + len);
	log_size();
}

static void
do_punch(void)
{
	uint64_t off = rnd_below(size + 65536), len = pick_len();

	clip(&off, &len);
	log_add(OP_PUNCH, off, len, "");
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
	    (off_t)len) == -1)
		fail(UINT64_MAX, "fallocate punch: %s", strerror(errno));
	if (off < size)
		memset(model + off, 0, min_u64(len, size - off));
}

static void
do_zero(void)
{
	uint64_t off = rnd_below(size + 65536), len = pick_len();
	int keep = rnd_below(2) == 0;

	clip(&off, &len);
	log_add(OP_ZERO, off, len, keep ? "keep-size" : "");
	if (fallocate(fd, FALLOC_FL_ZERO_RANGE | (keep ? FALLOC_FL_KEEP_SIZE : 0), (off_t)off,
	    (off_t)len) == -1)
		fail(UINT64_MAX, "fallocate zero range: %s", strerror(errno));
	if (off < size)
		memset(model + off, 0, min_u64(len, size - off));
	if (!keep && off + len > size)
		model_resize(off + len);
	log_size();
}

/*
 * SEEK_DATA and SEEK_HOLE from a random offset: what they skip must read
 * as zeros in the model, and both stay within the file.
 */
static void
do_seek(void)
{
	uint64_t off = rnd_below(size + 4096), i;
	int hole = rnd_below(2) == 0;
	off_t r;

	log_add(OP_SEEK, off, 0, hole ? "hole" : "data");
	r = lseek(fd, (off_t)off, hole ? SEEK_HOLE : SEEK_DATA);
	if (off >= size) {
		if (r != -1 || errno != ENXIO)
			fail(UINT64_MAX, "lseek %s at or past the end: %jd, not ENXIO",
			    hole ? "SEEK_HOLE" : "SEEK_DATA", (intmax_t)r);
		return;
	}
	if (r == -1 && (hole || errno != ENXIO))
		fail(UINT64_MAX, "lseek %s: %s", hole ? "SEEK_HOLE" : "SEEK_DATA",
		    strerror(errno));
	if (hole) {
		if ((uint64_t)r < off || (uint64_t)r > size)
			fail(UINT64_MAX, "SEEK_HOLE from %#" PRIx64 " gave %#jx (size %#" PRIx64
			    ")", off, (intmax_t)r, size);
		return;
	}
	/* no data after off: all of it reads as zeros */
	if (r == -1)
		r = (off_t)size;
	if ((uint64_t)r < off || (uint64_t)r > size)
		fail(UINT64_MAX, "SEEK_DATA from %#" PRIx64 " gave %#jx (size %#" PRIx64 ")",
		    off, (intmax_t)r, size);
	for (i = off; i < (uint64_t)r; i++)
		if (model[i] != 0)
			fail(i, "SEEK_DATA from %#" PRIx64 " skipped to %#jx over data at %#"
			    PRIx64, off, (intmax_t)r, i);
}

static void
do_fsync(void)
{
	int data = rnd_below(2) == 0;

	log_add(OP_FSYNC, 0, 0, data ? "fdatasync" : "");
	if ((data ? fdatasync(fd) : fsync(fd)) == -1)
		fail(UINT64_MAX, "%s: %s", data ? "fdatasync" : "fsync", strerror(errno));
}

static void
open_file(int flags)
{
	if ((fd = open(path, O_RDWR | flags, 0644)) == -1)
		fail(UINT64_MAX, "open %s: %s", path, strerror(errno));
	if (op_weight[OP_DIOREAD] == 0)
		return;
	if ((dfd = open(path, O_RDWR | O_DIRECT)) == -1)
		fail(UINT64_MAX, "open %s O_DIRECT: %s", path, strerror(errno));
}

static void
do_reopen(void)
{
	log_add(OP_REOPEN, 0, 0, "");
	if (close(fd) == -1 || (dfd != -1 && close(dfd) == -1))
		fail(UINT64_MAX, "close: %s", strerror(errno));
	fd = dfd = -1;
	open_file(0);
}

static void
check_size(const char *what)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		fail(UINT64_MAX, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != size)
		fail(UINT64_MAX, "%s: st_size %#jx, the model has %#" PRIx64, what,
		    (uintmax_t)st.st_size, size);
}

static void
do_stat(void)
{
	log_add(OP_STAT, 0, 0, "");
	check_size("stat");
}

/* An aligned range for O_DIRECT, at least one DIO_ALIGN long; 0 if none fits. */
static int
dio_range(uint64_t around, uint64_t *off, uint64_t *len)
{
	uint64_t lim = maxlen - maxlen % DIO_ALIGN;
	uint64_t oplim = maxop - maxop % DIO_ALIGN;

	if (lim == 0 || oplim == 0)
		return 0;
	*len = DIO_ALIGN + pick_len() % oplim;
	*len -= *len % DIO_ALIGN;
	*off = rnd_below(around);
	*off -= *off % DIO_ALIGN;
	if (*len > lim)
		*len = lim;
	if (*off + *len > lim)
		*off = lim - *len;
	return 1;
}

static void
do_dioread(void)
{
	uint64_t off, len;
	ssize_t n;

	if (!dio_range(size + DIO_ALIGN, &off, &len))
		return log_add(OP_DIOREAD, 0, 0, "no aligned range: skipped");
	log_add(OP_DIOREAD, off, len, "");
	if ((n = pread(dfd, readbuf, len, (off_t)off)) < 0)
		fail(UINT64_MAX, "O_DIRECT pread: %s", strerror(errno));
	compare("dioread", off, readbuf, (uint64_t)n, expect_len(off, len));
}

static void
do_diowrite(void)
{
	uint64_t off, len;

	if (!dio_range(size + 4 * DIO_ALIGN, &off, &len))
		return log_add(OP_DIOWRITE, 0, 0, "no aligned range: skipped");
	log_add(OP_DIOWRITE, off, len, off > size ? "past EOF" : "");
	fill(buf, len);
	if (pwrite(dfd, buf, len, (off_t)off) != (ssize_t)len)
		fail(UINT64_MAX, "O_DIRECT pwrite: %s", strerror(errno));
	model_write(off, buf, len);
	log_size();
}

static void (*const op_funcs[OP_COUNT])(void) = {
	[OP_WRITE] = do_write,		[OP_READ] = do_read,
	[OP_MAPREAD] = do_mapread,	[OP_MAPWRITE] = do_mapwrite,
	[OP_TRUNCATE] = do_truncate,	[OP_FALLOCATE] = do_fallocate,
	[OP_FSYNC] = do_fsync,		[OP_REOPEN] = do_reopen,
	[OP_STAT] = do_stat,		[OP_DIOREAD] = do_dioread,
	[OP_DIOWRITE] = do_diowrite,	[OP_PUNCH] = do_punch,
	[OP_ZERO] = do_zero,		[OP_SEEK] = do_seek,
};

static enum op
pick_op(int total)
{
	int r = (int)rnd_below((uint64_t)total);
	enum op op;

	for (op = 0; op < OP_COUNT - 1; op++) {
		if (r < op_weight[op])
			break;
		r -= op_weight[op];
	}
	return op;
}

/* After the last operation: the whole file, one byte past the end included. */
static void
final_check(void)
{
	uint64_t off, len;
	ssize_t n;

	log_add(OP_READ, 0, size + 1, "final, whole file");
	check_size("final stat");
	for (off = 0; off <= size; off += len) {
		len = min_u64(maxop, size + 1 - off);
		if ((n = pread(fd, readbuf, len, (off_t)off)) < 0)
			fail(UINT64_MAX, "pread: %s", strerror(errno));
		compare("final read", off, readbuf, (uint64_t)n, expect_len(off, len));
	}
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_fault };
	unsigned long ops = 1000;
	int c, total, i;

	while ((c = getopt(argc, argv, "N:S:l:o:m:DFHMv")) != -1) {
		switch (c) {
		case 'N': ops = (unsigned long)number(optarg); break;
		case 'S': seed = number(optarg); break;
		case 'l': maxlen = number(optarg); break;
		case 'o': maxop = number(optarg); break;
		case 'm': model_out = optarg; break;
		case 'D': op_weight[OP_DIOREAD] = op_weight[OP_DIOWRITE] = 0; break;
		case 'F': op_weight[OP_FALLOCATE] = 0; break;
		case 'H':
			op_weight[OP_PUNCH] = op_weight[OP_ZERO] = 4;
			op_weight[OP_SEEK] = 4;
			break;
		case 'M': op_weight[OP_MAPREAD] = op_weight[OP_MAPWRITE] = 0; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (argc - optind != 1 || maxlen == 0 || maxop == 0)
		usage();
	path = argv[optind];
	rng = seed;
	pagesz = (size_t)sysconf(_SC_PAGESIZE);
	/*
	 * A mapped read takes the tail of the EOF page too: readbuf has room
	 * for it, and the model the zeros to compare it with.
	 */
	if ((model = calloc(1, maxlen + pagesz)) == NULL ||
	    posix_memalign((void **)&buf, DIO_ALIGN, maxop) != 0 ||
	    posix_memalign((void **)&readbuf, DIO_ALIGN, maxop + pagesz) != 0) {
		fprintf(stderr, "fsx: out of memory\n");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	/* touching a mapping past the file's last page is a SIGBUS */
	sigaction(SIGBUS, &sa, NULL);

	open_file(O_CREAT | O_TRUNC);
	for (total = 0, i = 0; i < OP_COUNT; i++)
		total += op_weight[i];
	for (opnum = 1; opnum <= ops; opnum++) {
		op_funcs[pick_op(total)]();
		if (verbose)
			log_print(&oplog[opnum % LOG_SIZE], UINT64_MAX);
	}
	final_check();	/* as operation ops + 1 */
	if (close(fd) == -1 || (dfd != -1 && close(dfd) == -1))
		fail(UINT64_MAX, "close: %s", strerror(errno));
	dump_model();
	return 0;
}
