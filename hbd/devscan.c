/*
 * Global mode names its regions by volume UUID only; this finds the
 * device that carries one. Candidates: $OCFS2_DEVICES (colon-separated
 * paths: block devices or image files), else every block device the
 * kernel lists in /sys/class/block, as /dev/NAME. Each is probed as an
 * OCFS2 volume; the first whose superblock UUID matches wins.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbd.h"
#include "log.h"
#include "util.h"
#include "volume.h"

static int
matches(const char *path, const char *uuid)
{
	struct volume v;
	char err[512];
	int ok;

	if (volume_open(path, O_RDONLY, &v, err, sizeof(err)) == -1) {
		log_debug("devscan: %s", err);
		return 0;
	}
	ok = strcmp(v.uuid, uuid) == 0;
	volume_close(&v);
	return ok;
}

int
devscan_find(const char *uuid, char *path, size_t len)
{
	const char *env = getenv("OCFS2_DEVICES");
	struct dirent *de;
	char *list, *p, *save = NULL;
	DIR *d;

	if (env != NULL && *env != '\0') {
		list = xstrdup(env);
		for (p = strtok_r(list, ":", &save); p != NULL; p = strtok_r(NULL, ":", &save)) {
			if (matches(p, uuid)) {
				snprintf(path, len, "%s", p);
				free(list);
				return 0;
			}
		}
		free(list);
		return -1;
	}
	if ((d = opendir("/sys/class/block")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, len, "/dev/%s", de->d_name);
		if (matches(path, uuid)) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -1;
}
