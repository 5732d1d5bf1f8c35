#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "log.h"

static const char	*log_name = "ocfs2";
static int		 log_verbose;
static int		 log_to_journal;

/*
 * systemd sets JOURNAL_STREAM to the device:inode of the stream it gave
 * us as stderr; only then is the journal the right place (a redirected
 * stderr of a child inherits the variable but not the stream).
 */
static int
stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

void
log_init(const char *name, int verbose)
{
	log_name = name;
	log_verbose = verbose;
	log_to_journal = stderr_is_journal();
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

int
log_getverbose(void)
{
	return log_verbose;
}

void
log_vlog(enum log_level lvl, int with_errno, const char *fmt, va_list ap)
{
	static const char *lvlname[] = {
		[LOG_LVL_CRIT] = "fatal", [LOG_LVL_ERR] = "error",
		[LOG_LVL_WARN] = "warning", 
		[LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
	};
	int saved = errno;
	char msg[2048];
	int n;

	if (lvl == LOG_LVL_DEBUG && !log_verbose) {
		errno = saved;
		return;
	}
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (with_errno && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));

	if (log_to_journal) {
		sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", (int)lvl,
		    "SYSLOG_IDENTIFIER=%s", log_name, NULL);
	} else {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s[%d]: %s: %s\n", when,
		    ts.tv_nsec / 1000000, log_name, (int)getpid(),
		    lvlname[lvl], msg);
	}
	errno = saved;
}

/* One byte as log_escape shows it; the length of that. */
static size_t
escape_one(unsigned char c, char out[4])
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '\\': memcpy(out, "\\\\", 2); return 2;
	case '\n': memcpy(out, "\\n", 2); return 2;
	case '\t': memcpy(out, "\\t", 2); return 2;
	case '\r': memcpy(out, "\\r", 2); return 2;
	}
	if (c >= 0x20 && c < 0x7f) {
		out[0] = (char)c;
		return 1;
	}
	out[0] = '\\';
	out[1] = 'x';
	out[2] = hex[c >> 4];
	out[3] = hex[c & 0xf];
	return 4;
}

const char *
log_escape_mem(char *buf, size_t size, const void *s, size_t len)
{
	const unsigned char *p = s;
	size_t i, o = 0, n, total = 0, room;
	char one[4];

	if (size == 0)
		return buf;
	for (i = 0; i < len; i++)
		total += escape_one(p[i], one);
	/* Cut short: keep room for the "..." that says so. */
	room = total <= size - 1 || size - 1 < 3 ? size - 1 : size - 4;
	for (i = 0; i < len; i++) {
		n = escape_one(p[i], one);
		if (o + n > room)
			break;
		memcpy(buf + o, one, n);
		o += n;
	}
	if (i < len && size - 1 >= 3) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

const char *
log_escape(char *buf, size_t size, const char *s)
{
	return log_escape_mem(buf, size, s, s == NULL ? 0 : strlen(s));
}

#define LOG_FN(fn, lvl, with_errno)				\
void								\
fn(const char *fmt, ...)					\
{								\
	va_list ap;						\
	va_start(ap, fmt);					\
	log_vlog(lvl, with_errno, fmt, ap);			\
	va_end(ap);						\
}

LOG_FN(log_warn, LOG_LVL_WARN, 1)
LOG_FN(log_warnx, LOG_LVL_WARN, 0)
LOG_FN(log_err, LOG_LVL_ERR, 0)
LOG_FN(log_info, LOG_LVL_INFO, 0)
LOG_FN(log_debug, LOG_LVL_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_CRIT, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlog(LOG_LVL_CRIT, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
