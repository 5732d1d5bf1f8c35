/*
 * ackwriter: fsync'ed records whose acknowledgements outlive the volume,
 * for the fault-injection tests (tests/integration/fault_daemons.sh).
 *
 *   ackwriter write NODE NODES DIR ACKLOG
 *	Until SIGTERM or SIGINT, record SEQ = 0, 1, ... is written to
 *	DIR/nodeNODE at offset SEQ * 64 and fsync'ed, then to DIR/shared at
 *	(SEQ * NODES + NODE - 1) * 64 and fsync'ed: every node's writer
 *	extends the shared file, none overwrites another's records. Each
 *	record whose fsync returned 0 is acknowledged: the line
 *	"A FILE SEQ MS" (MS: the time of day in ms) is written to ACKLOG,
 *	a file outside the volume, and ACKLOG is fsync'ed. A failed open,
 *	write or fsync is logged as "E FILE SEQ MS CALL: ERROR" (once for a
 *	run of the same error), and the writer goes on: it opens its files
 *	again and writes the same record again, so that what counts is what
 *	was acknowledged. DIR must be on a FUSE mount: while the volume is not
 *	mounted, the writer waits rather than write below the mountpoint.
 *
 *   ackwriter check NODES ACKDIR DIR...
 *	Reads each writer's acknowledgements (ACKDIR/ack.nodeK, K = 1..NODES;
 *	a missing log is a writer that acknowledged nothing), then, in each
 *	DIR (a node's view of the volume, or a copy of its files), every
 *	acknowledged record must be in its place, whole and intact. Prints a
 *	line per DIR, the first lost records of each, and the summary
 *	"ackcheck: acknowledged A checked C lost L unreadable U": A records
 *	acknowledged, C reads of them, L records that some DIR lost, U DIRs
 *	whose files could not be read.
 *
 * Exit status: 0 (check: nothing lost, everything read), 1 (check: a
 * record lost or a DIR unreadable), 2 usage or an error of the writer's
 * own log.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546	/* linux/magic.h */
#define MAX_NODES 255
#define MAGIC "ACKREC1"
#define RETRY_US 100000		/* between attempts after an error */
#define SHOW_LOST 5		/* lost records described per file and DIR */

enum file_kind { OWN, SHARED, FILE_KINDS };

/* One record, 64 bytes: who wrote it, where, and a checksum of the rest. */
struct record {
	char magic[8];
	uint32_t node;
	uint32_t kind;		/* enum file_kind */
	uint64_t seq;
	uint64_t written_ms;	/* when it was written, for the reader of a report */
	uint8_t fill[28];	/* derived from seq, so that damage anywhere shows */
	uint32_t sum;		/* FNV-1a of every byte before it */
};
_Static_assert(sizeof(struct record) == 64, "a record is 64 bytes");

static volatile sig_atomic_t stopping;

static void
usage(void)
{
	fprintf(stderr, "usage: ackwriter write NODE NODES DIR ACKLOG\n"
	    "       ackwriter check NODES ACKDIR DIR...\n");
	exit(2);
}

static unsigned
node_number(const char *s, unsigned max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > max)
		usage();
	return (unsigned)v;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t
fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;

	while (n-- > 0)
		h = (h ^ *b++) * 16777619u;
	return h;
}

static void
record_fill(struct record *r, unsigned node, enum file_kind kind, uint64_t seq)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	memcpy(r->magic, MAGIC, sizeof(MAGIC));
	r->node = node;
	r->kind = kind;
	r->seq = seq;
	r->written_ms = now_ms();
	for (i = 0; i < sizeof(r->fill); i++)
		r->fill[i] = (uint8_t)(seq * 131 + i * 7 + node);
	r->sum = fnv1a(r, offsetof(struct record, sum));
}

static off_t
record_offset(enum file_kind kind, unsigned node, unsigned nodes, uint64_t seq)
{
	uint64_t index = kind == OWN ? seq : seq * nodes + node - 1;

	return (off_t)(index * sizeof(struct record));
}

static const char *
file_name(enum file_kind kind, unsigned node, char *buf, size_t len)
{
	if (kind == SHARED)
		return "shared";
	snprintf(buf, len, "node%u", node);
	return buf;
}

/* ------------------------------------------------------------- write */

struct writer {
	unsigned node, nodes;
	const char *dir;
	int ackfd;
	int fd[FILE_KINDS];	/* -1 until opened (again) */
	uint64_t acked[FILE_KINDS];
	uint64_t errors;
	char last_error[256];	/* the last error logged, to log a run of it once */
};

static void
ack_line(struct writer *w, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Lines are a few names, numbers and an strerror(): they fit. */
	if (n < 0 || (size_t)n >= sizeof(line) || write(w->ackfd, line, (size_t)n) != n || fsync(w->ackfd) != 0) {
		fprintf(stderr, "ackwriter: the acknowledgement log: %s\n", strerror(errno));
		exit(2);
	}
}

static void
close_files(struct writer *w)
{
	int k;

	for (k = 0; k < FILE_KINDS; k++) {
		if (w->fd[k] >= 0)
			close(w->fd[k]);
		w->fd[k] = -1;
	}
}

/* An error: logged unless it repeats the last one; the files are opened again. */
static void
failed(struct writer *w, const char *file, uint64_t seq, const char *call, const char *why)
{
	char error[sizeof(w->last_error)];

	close_files(w);
	if (stopping)
		return;
	w->errors++;
	snprintf(error, sizeof(error), "%s %s: %s", file, call, why);
	if (strcmp(error, w->last_error) != 0) {
		ack_line(w, "E %s %" PRIu64 " %" PRIu64 " %s: %s\n", file, seq, now_ms(), call, why);
		memcpy(w->last_error, error, sizeof(error));
	}
	usleep(RETRY_US);
}

/* Opens both files through a descriptor of DIR, which must be on FUSE. */
static int
open_files(struct writer *w, uint64_t seq)
{
	struct statfs sf;
	char buf[32];
	int dirfd, k;

	if ((dirfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		failed(w, "-", seq, "open", strerror(errno));
		return -1;
	}
	if (fstatfs(dirfd, &sf) != 0 || sf.f_type != FUSE_SUPER_MAGIC) {
		close(dirfd);
		failed(w, "-", seq, "statfs", "the directory is not on a FUSE mount");
		return -1;
	}
	for (k = 0; k < FILE_KINDS; k++) {
		const char *name = file_name(k, w->node, buf, sizeof(buf));

		w->fd[k] = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (w->fd[k] < 0) {
			int err = errno;

			close(dirfd);
			failed(w, name, seq, "open", strerror(err));
			return -1;
		}
	}
	close(dirfd);
	return 0;
}

/* Writes record SEQ to one file and fsyncs it; 0 once acknowledged. */
static int
write_record(struct writer *w, enum file_kind kind, uint64_t seq)
{
	struct record r;
	char buf[32];
	const char *name = file_name(kind, w->node, buf, sizeof(buf));
	ssize_t n;

	if (w->fd[kind] < 0 && open_files(w, seq) != 0)
		return -1;
	record_fill(&r, w->node, kind, seq);
	n = pwrite(w->fd[kind], &r, sizeof(r), record_offset(kind, w->node, w->nodes, seq));
	if (n != (ssize_t)sizeof(r)) {
		failed(w, name, seq, "pwrite", n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	if (fsync(w->fd[kind]) != 0) {
		failed(w, name, seq, "fsync", strerror(errno));
		return -1;
	}
	ack_line(w, "A %s %" PRIu64 " %" PRIu64 "\n", name, seq, now_ms());
	w->acked[kind]++;
	w->last_error[0] = '\0';
	return 0;
}

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static int
cmd_write(int argc, char **argv)
{
	struct writer w = { .fd = { -1, -1 } };
	struct sigaction sa = { .sa_handler = on_stop };
	uint64_t seq;
	int k;

	if (argc != 6)
		usage();
	w.node = node_number(argv[2], MAX_NODES);
	w.nodes = node_number(argv[3], MAX_NODES);
	w.dir = argv[4];
	if (w.node > w.nodes)
		usage();
	if ((w.ackfd = open(argv[5], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "ackwriter: %s: %s\n", argv[5], strerror(errno));
		return 2;
	}
	/* No SA_RESTART: a stop interrupts a call blocked on the volume. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	for (seq = 0; !stopping; seq++) {
		for (k = 0; k < FILE_KINDS && !stopping; k++) {
			while (!stopping && write_record(&w, k, seq) != 0)
				;
		}
	}
	close_files(&w);
	fprintf(stderr, "ackwriter node%u: %" PRIu64 " records acknowledged in its file, %" PRIu64
	    " in the shared one, %" PRIu64 " errors\n", w.node, w.acked[OWN], w.acked[SHARED], w.errors);
	return 0;
}

/* ------------------------------------------------------------- check */

/* One acknowledged record. */
struct ack {
	uint64_t seq;
	uint64_t ms;
};

struct acks {
	struct ack *v;
	size_t n, cap;
};

/* ack[node][kind]: what each writer acknowledged in each file. */
static struct acks acked[MAX_NODES + 1][FILE_KINDS];
/* lost[node][kind][i]: acknowledged record i was lost by some DIR. */
static uint8_t *lost[MAX_NODES + 1][FILE_KINDS];

static void *
xrealloc(void *p, size_t n)
{
	if ((p = realloc(p, n)) == NULL) {
		fprintf(stderr, "ackwriter: out of memory\n");
		exit(2);
	}
	return p;
}

static void
acks_add(struct acks *a, uint64_t seq, uint64_t ms)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 1024;
		a->v = xrealloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n].seq = seq;
	a->v[a->n].ms = ms;
	a->n++;
}

/*
 * Reads writer NODE's log: only whole lines count, since the writer may be
 * writing the last one as it is read.
 */
static void
read_acks(const char *ackdir, unsigned node)
{
	char path[4096], own[32], file[32], line[512];
	unsigned long long seq, ms;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "%s/ack.node%u", ackdir, node);
	if ((f = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			return;
		fprintf(stderr, "ackwriter: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	file_name(OWN, node, own, sizeof(own));
	while (fgets(line, sizeof(line), f) != NULL) {
		len = strlen(line);
		if (len == 0 || line[len - 1] != '\n')
			break;
		if (sscanf(line, "A %31s %llu %llu", file, &seq, &ms) != 3)
			continue;
		if (strcmp(file, own) == 0)
			acks_add(&acked[node][OWN], seq, ms);
		else if (strcmp(file, "shared") == 0)
			acks_add(&acked[node][SHARED], seq, ms);
	}
	fclose(f);
}

/* Reads a whole file into *buf; a missing file is empty. -errno on error. */
static int
read_file(const char *path, uint8_t **buf, size_t *len)
{
	size_t cap = 1 << 20;
	ssize_t n;
	int fd;

	*len = 0;
	*buf = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	*buf = xrealloc(NULL, cap);
	for (;;) {
		if (*len == cap)
			*buf = xrealloc(*buf, cap *= 2);
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0) {
			int err = errno;

			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return 0;
}

/* Why the bytes at a record's place are not that record; NULL if they are. */
static const char *
record_problem(const uint8_t *data, size_t len, off_t off, unsigned node,
    enum file_kind kind, uint64_t seq, char *why, size_t whylen)
{
	struct record r, want;
	static const struct record zero;

	if ((size_t)off + sizeof(r) > len) {
		snprintf(why, whylen, "beyond the end of the file (%zu bytes)", len);
		return why;
	}
	memcpy(&r, data + off, sizeof(r));
	if (memcmp(&r, &zero, sizeof(r)) == 0)
		return "zeros";
	if (memcmp(r.magic, MAGIC, sizeof(MAGIC)) != 0 ||
	    r.sum != fnv1a(&r, offsetof(struct record, sum)))
		return "damaged (not a whole record)";
	if (r.node != node || r.kind != (uint32_t)kind || r.seq != seq) {
		snprintf(why, whylen, "another record there: node%u's record %" PRIu64 " of %s",
		    r.node, r.seq, r.kind == SHARED ? "the shared file" : "its file");
		return why;
	}
	record_fill(&want, node, kind, seq);
	if (memcmp(want.fill, r.fill, sizeof(r.fill)) != 0)
		return "damaged (its filler differs)";
	return NULL;
}

/* Checks one DIR; returns -1 if a file could not be read, else the reads made. */
static long long
check_dir(const char *dir, unsigned nodes)
{
	char path[4096], name[32], why[128];
	const char *problem;
	long long reads = 0, lost_here = 0;
	unsigned node, shown;
	uint8_t *data[MAX_NODES + 1];
	size_t len[MAX_NODES + 1];
	enum file_kind kind;
	size_t i;
	int rc;

	/* data[0]: the shared file; data[node]: that node's own file. */
	for (node = 0; node <= nodes; node++) {
		snprintf(path, sizeof(path), "%s/%s", dir,
		    node == 0 ? "shared" : file_name(OWN, node, name, sizeof(name)));
		if ((rc = read_file(path, &data[node], &len[node])) != 0) {
			printf("%s: unreadable: %s\n", path, strerror(-rc));
			while (node-- > 0)
				free(data[node]);
			return -1;
		}
	}
	for (node = 1; node <= nodes; node++) {
		for (kind = OWN; kind < FILE_KINDS; kind++) {
			const struct acks *a = &acked[node][kind];
			unsigned d = kind == OWN ? node : 0;

			shown = 0;
			for (i = 0; i < a->n; i++) {
				reads++;
				problem = record_problem(data[d], len[d],
				    record_offset(kind, node, nodes, a->v[i].seq), node, kind,
				    a->v[i].seq, why, sizeof(why));
				if (problem == NULL)
					continue;
				lost[node][kind][i] = 1;
				lost_here++;
				if (shown++ < SHOW_LOST)
					printf("%s/%s: node%u's record %" PRIu64 " (acknowledged at %"
					    PRIu64 " ms) lost: %s\n", dir,
					    kind == SHARED ? "shared" : file_name(OWN, node, name, sizeof(name)),
					    node, a->v[i].seq, a->v[i].ms, problem);
			}
			if (shown > SHOW_LOST)
				printf("%s: ... and %u more of node%u's records in %s\n", dir,
				    shown - SHOW_LOST, node, kind == SHARED ? "the shared file" : "its file");
		}
	}
	for (node = 0; node <= nodes; node++)
		free(data[node]);
	printf("%s: %lld records checked, %lld lost\n", dir, reads, lost_here);
	return reads;
}

static int
cmd_check(int argc, char **argv)
{
	unsigned nodes, node;
	long long reads = 0, r;
	unsigned long long total = 0, nlost = 0;
	unsigned unreadable = 0;
	enum file_kind kind;
	size_t i;
	int d;

	if (argc < 5)
		usage();
	nodes = node_number(argv[2], MAX_NODES);
	/* The acknowledgements first: each was made before the files are read. */
	for (node = 1; node <= nodes; node++) {
		read_acks(argv[3], node);
		for (kind = OWN; kind < FILE_KINDS; kind++) {
			total += acked[node][kind].n;
			lost[node][kind] = xrealloc(NULL, acked[node][kind].n + 1);
			memset(lost[node][kind], 0, acked[node][kind].n + 1);
		}
	}
	for (d = 4; d < argc; d++) {
		if ((r = check_dir(argv[d], nodes)) < 0)
			unreadable++;
		else
			reads += r;
	}
	for (node = 1; node <= nodes; node++)
		for (kind = OWN; kind < FILE_KINDS; kind++)
			for (i = 0; i < acked[node][kind].n; i++)
				nlost += lost[node][kind][i];
	printf("ackcheck: acknowledged %llu checked %lld lost %llu unreadable %u\n",
	    total, reads, nlost, unreadable);
	return nlost == 0 && unreadable == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "write") == 0)
		return cmd_write(argc, argv);
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc, argv);
	usage();
	return 2;
}
