/*
 * Logging: to the journal when systemd runs us (stderr is the journal
 * stream), to stderr otherwise. Every call saves and restores errno.
 */
#ifndef OCFS2_LOG_H
#define OCFS2_LOG_H

#include <stdarg.h>
#include <stddef.h>

#define PRINTF_LIKE(f, a)	__attribute__((__format__(printf, f, a)))

enum log_level { LOG_LVL_CRIT = 2, LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

void	log_init(const char *name, int verbose);
void	log_setverbose(int verbose);
int	log_getverbose(void);

/* log_warn appends strerror(errno); log_warnx does not. */
void	log_warn(const char *fmt, ...) PRINTF_LIKE(1, 2);
void	log_warnx(const char *fmt, ...) PRINTF_LIKE(1, 2);
void	log_err(const char *fmt, ...) PRINTF_LIKE(1, 2);
void	log_info(const char *fmt, ...) PRINTF_LIKE(1, 2);
void	log_debug(const char *fmt, ...) PRINTF_LIKE(1, 2);
void	log_vlog(enum log_level lvl, int with_errno, const char *fmt, va_list ap);

/*
 * Text a peer or a client supplied, made fit for a log line: backslash,
 * control bytes and every byte outside printable ASCII become C escapes
 * (\\, \n, \t, \r, \xHH), so that nobody can forge lines or send the
 * terminal escape sequences. At most size - 1 characters; a cut ends
 * with "...". Returns buf. LOG_ESC_SIZE(n) fits all of n input bytes.
 */
#define LOG_ESC_SIZE(n)	((n) * 4 + 1)
const char *log_escape(char *buf, size_t size, const char *s);
const char *log_escape_mem(char *buf, size_t size, const void *s, size_t len);

/* Log at LOG_CRIT and exit(1). */
__attribute__((noreturn)) void fatal(const char *fmt, ...) PRINTF_LIKE(1, 2);
__attribute__((noreturn)) void fatalx(const char *fmt, ...) PRINTF_LIKE(1, 2);

#endif
