#!/usr/bin/env bash
# fsx (tests/progs/fsx.c) on fsd: random writes (also far past the end,
# leaving holes), reads, mapped reads and writes, truncates down and up,
# fallocate, fsync, close/reopen and O_DIRECT I/O on one file per seed,
# each checked against an in-memory model of the contents; on a second,
# sparse volume (sparse,unwritten) with punched holes, zeroed ranges and
# SEEK_DATA/SEEK_HOLE too (fsx -H). Each volume is then checked by
# fsck.ocfs2 -fn, remounted and every file compared with its model
# again, and read by debugfs.ocfs2 too.
#
# Knobs (make soak turns them up):
#   FSD_FSX_OPS           operations per seed
#   FSD_FSX_SEEDS         the seeds (a seed that finds a bug joins the default list)
#   FSD_FSX_SPARSE_SEEDS  the seeds of the sparse volume
#   FSD_FSX_MKFS          mkfs.ocfs2 geometry, e.g. "-b 4096 -C 1M" or "-b 512 -C 4096"
#   FSD_FSX_FSD           fsd options, e.g. "-o writeback_cache=0"
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
FSX=$BUILD/progs/fsx
OPS=${FSD_FSX_OPS:-2000}
SEEDS=${FSD_FSX_SEEDS:-"1 2 3 4"}
SPARSE_SEEDS=${FSD_FSX_SPARSE_SEEDS:-"5 6"}
# mkfs.ocfs2's default feature level and max-features (refcount, xattr,
# indexed dirs, metaecc, quotas...): what users' volumes have
LEVEL_SEEDS=${FSD_FSX_LEVEL_SEEDS:-"7"}
# 1K blocks and 4K clusters by default: many extents for a 3 MiB file
GEOMETRY=${FSD_FSX_MKFS:-"-b 1024 -C 4096"}
read -ra FSD_OPTS <<<"${FSD_FSX_FSD:-}"

# fsx_volume NAME MKFS-FEATURES FSX-FLAGS SEEDS: one volume, one file per seed.
fsx_volume() {
	local name=$1 features=$2 flags=$3 seeds=$4 img=$D/$1.img s f
	echo "-- $name volume"
	# shellcheck disable=SC2086	# the geometry and the features are several words
	check "mkfs ($GEOMETRY${features:+ $features})" mkfs_img "$img" -M local \
	    $features $GEOMETRY
	run_check "mount${FSD_FSX_FSD:+ ($FSD_FSX_FSD)}" fsd_mount "$img" "$MNT" "${FSD_OPTS[@]}"
	for s in $seeds; do
		# shellcheck disable=SC2086	# no flags or one
		check "seed $s: $OPS operations match the model" \
		    "$FSX" $flags -N "$OPS" -S "$s" -m "$D/model$s" "$MNT/f$s"
	done
	if [[ -n $flags ]]; then
		# fsck.ocfs2 takes clusters reserved past the size (fallocate
		# --keep-size, as the kernel makes them too) for a wrong size
		# (INODE_SPARSE_SIZE): cut them off first.
		for s in $seeds; do
			f=$MNT/f$s
			truncate -s "$(stat -c %s "$f")" "$f"
		done
	fi
	run_check "unmount" fsd_umount "$MNT"
	check "fsck clean" fsck_clean "$img"
	run_check "mount again" fsd_mount "$img" "$MNT" "${FSD_OPTS[@]}"
	for s in $seeds; do
		check "seed $s: contents after remount" cmp "$MNT/f$s" "$D/model$s"
	done
	run_check "unmount" fsd_umount "$MNT"
	for s in $seeds; do
		debugfs.ocfs2 -R "cat /f$s" "$img" >"$D/dbg" 2>/dev/null
		check "seed $s: debugfs reads the same bytes" cmp "$D/dbg" "$D/model$s"
	done
}

fsx_volume max-compat --fs-feature-level=max-compat "" "$SEEDS"
fsx_volume sparse "--fs-feature-level=max-compat --fs-features=sparse,unwritten" -H "$SPARSE_SEEDS"
fsx_volume default "" -H "$LEVEL_SEEDS"
fsx_volume max-features --fs-feature-level=max-features -H "$LEVEL_SEEDS"

finish
