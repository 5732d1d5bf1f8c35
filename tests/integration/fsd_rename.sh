#!/usr/bin/env bash
# fsd renameat2 flags: RENAME_NOREPLACE refuses an existing target,
# RENAME_EXCHANGE swaps two names of any mix of files and directories,
# in one directory and across two, and refuses to put a directory below
# itself. The same exchanges run on a host directory and on fsd, and
# the two trees (contents, link counts, where ".." leads) are compared;
# then fsck.ocfs2 -fn after a clean unmount, and again after a kill -9
# that replays exchanges from the journal.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
MIRROR=$D/mirror
R2=$BUILD/progs/renameat2

# exchanges ROOT: the same swaps on the host mirror and on fsd.
exchanges() {
	local r=$1
	set -e
	mkdir -p "$r/p/d1/inner" "$r/q/d2" "$r/q/d3"
	printf one >"$r/p/f1"
	printf two >"$r/p/f2"
	printf three >"$r/q/f3"
	printf in1 >"$r/p/d1/inner/x"
	printf in2 >"$r/q/d2/y"
	"$R2" -x "$r/p/f1" "$r/p/f2"		# two files, one directory
	"$R2" -x "$r/p/f1" "$r/q/f3"		# two files, two directories
	"$R2" -x "$r/p/d1" "$r/q/d2"		# two directories across parents
	"$R2" -x "$r/p/f2" "$r/q/d3"		# a file and a directory across parents
	"$R2" -x "$r/p/d1" "$r/p/f2"		# a dir and a dir in one parent
	"$R2" -n "$r/q/f3" "$r/q/new"		# no-replace onto a free name
	set +e
}

# Type, size (not of directories), links, and for a directory the inode
# its ".." names, as a path: those must agree with the host.
tree_state() {
	local root=$1 f
	(cd "$root" && find . -mindepth 1 -printf '%P %y %s %n\n' | grep -v '^lost+found' |
	    awk '$2 == "d" {$3 = "-"} {print}' | sort)
	(cd "$root" && find . -mindepth 1 -type d ! -path './lost+found*' -printf '%P\n' | sort) |
	    while read -r f; do
		printf '%s/.. = %s\n' "$f" \
		    "$(cd "$root" && find . -inum "$(stat -c %i "$root/$f/..")" -printf '%P\n' | head -n 1)"
	    done
}
same_tree() {
	diff <(tree_state "$1") <(tree_state "$2")
}

check "mkfs" mkfs_img "$D/v.img" -M local --fs-feature-level=max-compat -b 4096 -C 4096
mkdir -p "$MIRROR"
check "the exchanges run on the host" exchanges "$MIRROR"
run_check "mount read-write" fsd_mount "$D/v.img" "$MNT"
check "the exchanges run on fsd" exchanges "$MNT"
check "same tree (types, sizes, links, where .. leads)" same_tree "$MIRROR" "$MNT"
check "same contents" diff -r "$MIRROR" "$MNT" -x lost+found
check_eq "a file and a dir traded places" "file directory" \
    "$(stat -c %F "$MNT/q/d3" "$MNT/p/f2" | sed 's/regular //' | xargs)"
check_eq "parents' link counts follow the dirs" "$(stat -c %h "$MIRROR/p" "$MIRROR/q" | xargs)" \
    "$(stat -c %h "$MNT/p" "$MNT/q" | xargs)"

expect_error "no-replace onto an existing file" "File exists" "$R2" -n "$MNT/p/f1" "$MNT/q/new"
expect_error "no-replace onto an existing dir" "File exists" "$R2" -n "$MNT/p/d1" "$MNT/p/f2"
expect_error "exchange with a missing name" "No such file" "$R2" -x "$MNT/p/f1" "$MNT/p/nothing"
expect_error "exchange a dir with one below it" "Invalid argument" \
    "$R2" -x "$MNT/q/d2" "$MNT/q/d2/inner"
check "nothing moved on refusal" same_tree "$MIRROR" "$MNT"
check "exchange two hard links of one file" bash -c "ln '$MNT/p/f1' '$MNT/p/f1-link' &&
    '$R2' -x '$MNT/p/f1' '$MNT/p/f1-link' && rm '$MNT/p/f1-link'"
check "still the same tree" same_tree "$MIRROR" "$MNT"
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean after the exchanges" fsck_clean "$D/v.img"
check_eq "debugfs: the moved dir's .. is its new parent" \
    "$(dbg_ino "$D/v.img" /p)" "$(dbg_ino "$D/v.img" /p/d1/..)"
check_eq "debugfs: the other dir's .. too" \
    "$(dbg_ino "$D/v.img" /q)" "$(dbg_ino "$D/v.img" /q/d2/..)"

echo "-- remount, exchange, kill -9: replay"
run_check "mount again" fsd_mount "$D/v.img" "$MNT"
check "same tree after remount" same_tree "$MIRROR" "$MNT"
check "exchange on the host" "$R2" -x "$MIRROR/p/d1" "$MIRROR/q/new"
check "exchange on fsd" "$R2" -x "$MNT/p/d1" "$MNT/q/new"
check "fsync" sync "$MNT/q"
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "remount replays" fsd_mount "$D/v.img" "$MNT"
check "the exchange survived" same_tree "$MIRROR" "$MNT"
check "contents too" diff -r "$MIRROR" "$MNT" -x lost+found
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean after replay" fsck_clean "$D/v.img"

finish
