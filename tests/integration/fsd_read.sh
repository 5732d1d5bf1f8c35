#!/usr/bin/env bash
# fsd, read-only: volumes populated by ocfs2-tools (libocfs2) on a local
# and a clustered max-compat volume, with several block and cluster
# sizes, read back through a real FUSE mount and compared byte for byte
# with the originals and with debugfs.ocfs2; features fsd lacks are
# refused by name; the volume is untouched and fsck-clean afterwards.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

check "the libocfs2 fixture maker builds" build_populate

D=$FSD_DIR
head -c 300000 /dev/urandom >"$D/random.bin"
head -c 70000 /dev/urandom >"$D/r70k.bin"
printf 'hello\n' >"$D/small.txt"
: >"$D/empty"
LONG=$(printf 'l%.0s' $(seq 1 1000))/target

populate_cmds() {	# populate_cmds INTERLEAVE_CLUSTERS
	cat <<EOF
mkdir /d1
mkdir /d1/d2
mkdir /d1/d2/d3
file /d1/services /etc/services
file /random.bin $D/random.bin
file /d1/d2/d3/r70k $D/r70k.bin
file /small $D/small.txt
file /empty $D/empty
symlink /fast d1/services
symlink /slow $LONG
mknod /chr c 4 65
mknod /blk b 259 300000
mknod /fifo p 0 0
mknod /sock s 0 0
link /d1/hard /small
attr /small 0640 1234 5678 1234567890 123456789
interleave /i1 /i2 $1
many /d1/d2 300
EOF
}

# read_volume NAME MKFS-ARGS... : make, populate, mount read-only, compare.
read_volume() {
	local name=$1 img=$D/$1.img mnt=$D/$1.mnt sum1 sum2 f depth
	shift
	echo "-- $name: mkfs.ocfs2 $*"
	check "$name: mkfs" mkfs_img "$img" --fs-feature-level=max-compat "$@"
	check "$name: populate with libocfs2" bash -c "'$D/populate' '$img' < <(cat)" \
	    < <(populate_cmds "$INTERLEAVE")
	check "$name: fsck clean before" fsck_clean "$img"
	depth=$(debugfs.ocfs2 -R "stat /i1" "$img" 2>/dev/null | sed -n 's/.*Tree Depth: \([0-9]*\).*/\1/p' | head -n 1)
	check_eq "$name: /i1 has an extent tree of depth $WANT_DEPTH" "$WANT_DEPTH" "$depth"
	sum1=$(md5sum <"$img")

	run_check "$name: mount read-only" fsd_mount "$img" "$mnt" -o ro
	check "$name: services" cmp "$mnt/d1/services" /etc/services
	check "$name: random" cmp "$mnt/random.bin" "$D/random.bin"
	check "$name: three levels down" cmp "$mnt/d1/d2/d3/r70k" "$D/r70k.bin"
	check "$name: small" cmp "$mnt/small" "$D/small.txt"
	check "$name: hard link" cmp "$mnt/d1/hard" "$D/small.txt"
	check "$name: empty" cmp "$mnt/empty" "$D/empty"
	for f in i1 i2; do
		debugfs.ocfs2 -R "cat /$f" "$img" >"$D/$f.ref" 2>/dev/null
		check "$name: /$f (fragmented) matches debugfs cat" cmp "$mnt/$f" "$D/$f.ref"
	done
	check_eq "$name: /i1 size" $((INTERLEAVE * CLUSTER)) "$(stat -c %s "$mnt/i1")"
	check "$name: reads at odd offsets" bash -c \
	    "cmp <(tail -c +12346 '$mnt/i2' | head -c 99999) <(tail -c +12346 '$D/i2.ref' | head -c 99999)"
	check_eq "$name: fast symlink" "d1/services" "$(readlink "$mnt/fast")"
	check_eq "$name: slow symlink" "$LONG" "$(readlink "$mnt/slow")"
	check_eq "$name: follows a symlink" "$(md5sum </etc/services)" "$(md5sum <"$mnt/fast" 2>&1)"
	check_eq "$name: char device" "character special file 4 41" "$(stat -c '%F %t %T' "$mnt/chr")"
	check_eq "$name: block device (large minor)" "block special file 259 300000" \
	    "$(stat -c '%F %Hr %Lr' "$mnt/blk")"
	check_eq "$name: fifo" "fifo" "$(stat -c '%F' "$mnt/fifo")"
	check_eq "$name: socket" "socket" "$(stat -c '%F' "$mnt/sock")"
	check_eq "$name: attributes" "640 1234 5678 2 6 1234567890.123456789" \
	    "$(stat -c '%a %u %g %h %s %.9Y' "$mnt/small")"
	check_eq "$name: inode numbers are block numbers" "$(dbg_ino "$img" /d1/services)" \
	    "$(stat -c %i "$mnt/d1/services")"
	check_eq "$name: root listing" "blk chr d1 empty fast fifo i1 i2 lost+found random.bin slow small sock" \
	    "$(ls "$mnt" | xargs)"
	check_eq "$name: link counts of directories" "4 3 3 2" \
	    "$(stat -c %h "$mnt" "$mnt/d1" "$mnt/d1/d2" "$mnt/d1/d2/d3" | xargs)"
	check_eq "$name: 300 names in a multi-block directory" "301" "$(ls "$mnt/d1/d2" | wc -l)"
	check_eq "$name: names as debugfs lists them" \
	    "$(debugfs.ocfs2 -R 'ls /d1/d2' "$img" 2>/dev/null | awk '{print $NF}' | sort | xargs)" \
	    "$(ls -a "$mnt/d1/d2" | sort | xargs)"
	check_eq "$name: a whole subtree (find)" "306" "$(find "$mnt/d1" | wc -l)"
	check "$name: statfs" bash -c "df '$mnt' | grep -q '$mnt'"
	expect_error "$name: writes refused" "Read-only file system" touch "$mnt/new"
	expect_error "$name: missing name" "No such file" stat "$mnt/nope"
	run_check "$name: unmount" fsd_umount "$mnt"
	sum2=$(md5sum <"$img")
	check_eq "$name: a read-only mount writes nothing" "$sum1" "$sum2"
	check "$name: fsck clean after" fsck_clean "$img"
	rm -f "$img"
}

CLUSTER=4096 INTERLEAVE=300 WANT_DEPTH=1
read_volume local4k -M local -b 4096 -C 4096
# libocfs2 makes directories inline and expands those that fill up (/d1/d2)
read_volume inline4k -M local -b 4096 -C 4096 --fs-features=inline-data
# 512-byte blocks: 19 records in the inode, 28 per extent block, so 540
# (> 19 x 28) separate extents need a tree of depth 2.
CLUSTER=4096 INTERLEAVE=540 WANT_DEPTH=2
read_volume clustered512 --cluster-stack=o2cb --cluster-name=fsdtest -N 2 -b 512 -C 4096
CLUSTER=65536 INTERLEAVE=60 WANT_DEPTH=1
read_volume local1k64k -M local -b 1024 -C 65536

echo "-- feature checks"
IMG=$D/default.img
mkfs_img "$IMG" -M local
mkdir -p "$D/m"
run_check "a default-level volume mounts read-write" fsd_mount "$IMG" "$D/m"
check "... and takes a file" touch "$D/m/f"
run_check "... and unmounts" fsd_umount "$D/m"
mkfs_img "$IMG" -M local --fs-feature-level=max-compat
poke "$IMG" 2 $((0xE4)) 08	# s_feature_ro_compat: a bit no feature has yet
expect_error "unknown ro-compat feature refused read-write" 'unknown ro-compat feature 0x8' \
    "$FSD" "$IMG" "$D/m"
run_check "ro-compat feature accepted read-only" fsd_mount "$IMG" "$D/m" -o ro
run_check "... and unmounts" fsd_umount "$D/m"
poke "$IMG" 2 $((0xE4)) 02	# USRQUOTA on a volume mkfs made without its files
expect_error "usrquota without aquota.user: refused read-write, by name" \
    'system file aquota.user: missing' "$FSD" "$IMG" "$D/m"
run_check "... accepted read-only" fsd_mount "$IMG" "$D/m" -o ro
run_check "... and unmounts" fsd_umount "$D/m"
rm -f "$IMG"

finish
