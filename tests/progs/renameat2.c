/*
 * renameat2: the bare system call, which coreutils' mv and perl do not
 * offer with flags.
 *
 *   renameat2 [-n] [-x] OLD NEW
 *
 * -n is RENAME_NOREPLACE, -x RENAME_EXCHANGE (both may be given: the
 * kernel must refuse that). On failure it prints strerror(errno).
 * Exit 0, 1 when the call failed, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
usage(void)
{
	fprintf(stderr, "usage: renameat2 [-n] [-x] OLD NEW\n");
	_exit(2);
}

int
main(int argc, char **argv)
{
	unsigned flags = 0;
	int ch;

	while ((ch = getopt(argc, argv, "nx")) != -1) {
		switch (ch) {
		case 'n':
			flags |= RENAME_NOREPLACE;
			break;
		case 'x':
			flags |= RENAME_EXCHANGE;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (renameat2(AT_FDCWD, argv[optind], AT_FDCWD, argv[optind + 1], flags) == -1) {
		fprintf(stderr, "renameat2: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
