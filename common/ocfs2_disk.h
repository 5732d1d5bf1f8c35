/*
 * The on-disk structures, from Debian's ocfs2-tools-dev headers, with
 * the includes they expect before them (the layout is described in
 * doc/ondisk.md).
 */
#ifndef OCFS2_DISK_H
#define OCFS2_DISK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>
#include <ocfs2-kernel/sparse_endian_types.h>
#include <ocfs2-kernel/ocfs2_fs.h>
#include <ocfs2-kernel/quota_tree.h>

#endif
