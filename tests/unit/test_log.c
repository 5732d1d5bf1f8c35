/*
 * log_escape: a peer's or a client's text as it may appear in a log line.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "log.h"

Test(log_escape, printable_text_is_kept)
{
	char buf[LOG_ESC_SIZE(16)];

	cr_assert_str_eq(log_escape(buf, sizeof(buf), "node-1 lc.x"), "node-1 lc.x");
	cr_assert_str_eq(log_escape(buf, sizeof(buf), ""), "");
}

Test(log_escape, control_bytes_and_backslash_become_escapes)
{
	char buf[LOG_ESC_SIZE(16)];

	cr_assert_str_eq(log_escape(buf, sizeof(buf), "a\nb\x1b[31m"), "a\\nb\\x1b[31m");
	cr_assert_str_eq(log_escape(buf, sizeof(buf), "\t\r\\"), "\\t\\r\\\\");
	cr_assert_str_eq(log_escape(buf, sizeof(buf), "\x7f\xc3\xa9"), "\\x7f\\xc3\\xa9");
}

Test(log_escape, bytes_after_a_nul_count_in_the_mem_form)
{
	char buf[LOG_ESC_SIZE(4)];

	cr_assert_str_eq(log_escape_mem(buf, sizeof(buf), "a\0b", 3), "a\\x00b");
}

Test(log_escape, the_worst_case_fits_its_size)
{
	char in[16], buf[LOG_ESC_SIZE(16)];

	memset(in, 0x01, sizeof(in));
	log_escape_mem(buf, sizeof(buf), in, sizeof(in));
	cr_assert_eq(strlen(buf), 16 * 4);
	cr_assert_eq(strstr(buf, "..."), NULL);
}

Test(log_escape, a_cut_says_so_and_stays_in_bounds)
{
	char buf[10];

	/* 9 characters of room: 6 of text, then "...", never half an escape. */
	cr_assert_str_eq(log_escape(buf, sizeof(buf), "abcdefghijkl"), "abcdef...");
	cr_assert_str_eq(log_escape(buf, sizeof(buf), "abcde\x1b" "fgh"), "abcde...");
	cr_assert_str_eq(log_escape(buf, sizeof(buf), "abcdefghi"), "abcdefghi");
	cr_assert_str_eq(log_escape(buf, 3, "abcdef"), "ab");
	cr_assert_str_eq(log_escape(buf, 1, "abc"), "");
}
