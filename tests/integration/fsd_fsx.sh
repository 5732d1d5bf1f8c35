#!/usr/bin/env bash
# fsx (tests/progs/fsx.c) on fsd: random writes (also far past the end,
# leaving holes), reads, mapped reads and writes, truncates down and up,
# fallocate, fsync, close/reopen and O_DIRECT I/O on one file per seed,
# each checked against an in-memory model of the contents. The volume is
# then checked by fsck.ocfs2 -fn, remounted and every file compared with
# its model again, and read by debugfs.ocfs2 too.
#
# Knobs (make soak turns them up):
#   FSD_FSX_OPS    operations per seed
#   FSD_FSX_SEEDS  the seeds (a seed that finds a bug joins the default list)
#   FSD_FSX_MKFS   mkfs.ocfs2 geometry, e.g. "-b 4096 -C 1M" or "-b 512 -C 4096"
#   FSD_FSX_FSD    fsd options, e.g. "-o writeback_cache=0"
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
FSX=$BUILD/progs/fsx
OPS=${FSD_FSX_OPS:-2000}
SEEDS=${FSD_FSX_SEEDS:-"1 2 3 4"}
# 1K blocks and 4K clusters by default: many extents for a 3 MiB file
GEOMETRY=${FSD_FSX_MKFS:-"-b 1024 -C 4096"}
read -ra FSD_OPTS <<<"${FSD_FSX_FSD:-}"

# shellcheck disable=SC2086	# the geometry is several words
check "mkfs ($GEOMETRY)" mkfs_img "$D/v.img" -M local --fs-feature-level=max-compat $GEOMETRY
run_check "mount${FSD_FSX_FSD:+ ($FSD_FSX_FSD)}" fsd_mount "$D/v.img" "$MNT" "${FSD_OPTS[@]}"
for s in $SEEDS; do
	check "seed $s: $OPS operations match the model" \
	    "$FSX" -N "$OPS" -S "$s" -m "$D/model$s" "$MNT/f$s"
done
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$D/v.img"
run_check "mount again" fsd_mount "$D/v.img" "$MNT" "${FSD_OPTS[@]}"
for s in $SEEDS; do
	check "seed $s: contents after remount" cmp "$MNT/f$s" "$D/model$s"
done
run_check "unmount" fsd_umount "$MNT"
for s in $SEEDS; do
	debugfs.ocfs2 -R "cat /f$s" "$D/v.img" >"$D/dbg" 2>/dev/null
	check "seed $s: debugfs reads the same bytes" cmp "$D/dbg" "$D/model$s"
done

finish
