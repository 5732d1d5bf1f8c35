#!/usr/bin/env bash
# fsd read-write: one workload (files of awkward sizes, holes filled by
# extension, appends, overwrites, truncates both ways, directories that
# grow past a block, hard links, fast and slow symlinks, device nodes,
# every kind of rename, unlink and rmdir, chmod/chown/utimens) run on a
# host directory and on fsd, and the two trees compared; then the volume
# after a clean unmount (fsck.ocfs2 -fn, debugfs.ocfs2 reads the same
# bytes and attributes), after a remount, after kill -9 following fsync,
# with a file unlinked while open, and a 512-byte-block volume whose
# fragmented files need depth-2 extent trees.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
MIRROR=$D/mirror
head -c 1500000 /dev/urandom >"$D/rand"

# workload ROOT: the same operations on the host mirror and on fsd.
workload() {
	local r=$1 i
	set -e
	: >"$r/empty"
	printf x >"$r/one"
	head -c 4095 "$D/rand" >"$r/b4095"
	head -c 4096 "$D/rand" >"$r/b4096"
	head -c 4097 "$D/rand" >"$r/b4097"
	cp "$D/rand" "$r/big"
	mkdir -p "$r/a/b/c"
	cp /etc/services "$r/a/b/c/services"
	for i in $(seq 1 400); do printf '%s\n' "$i" >"$r/a/many-$i-with-a-longer-name"; done
	for i in $(seq 1 100 400); do rm "$r/a/many-$i-with-a-longer-name"; done
	# extension leaves a zeroed gap; overwrite in the middle; append
	printf head >"$r/gap"
	dd if="$D/rand" of="$r/gap" bs=1 count=777 seek=100000 conv=notrunc status=none
	dd if="$D/rand" of="$r/big" bs=1000 count=3 seek=77 conv=notrunc status=none
	head -c 12345 "$D/rand" >>"$r/big"
	# truncate down and up (up must read back as zeros)
	cp "$D/rand" "$r/trunc"
	truncate -s 5000 "$r/trunc"
	truncate -s 70000 "$r/trunc"
	# links and special files
	ln "$r/one" "$r/a/one-again"
	ln -s one "$r/fastlink"
	ln -s "$(printf 'p%.0s' $(seq 1 3000))/$(printf 'q%.0s' $(seq 1 1200))" "$r/slowlink"
	mkfifo "$r/fifo"
	mknod "$r/chr" c 1 7
	chmod 0751 "$r/b4095"
	chown 1234:4321 "$r/b4096"
	touch -d '2001-02-03 04:05:06.123456789' "$r/b4097"
	# renames: in place, across dirs, over a file, over an empty dir, a dir across dirs
	mv "$r/b4095" "$r/renamed"
	mv "$r/renamed" "$r/a/b/moved"
	printf old >"$r/victim"
	mv "$r/one" "$r/victim"
	mkdir "$r/emptydir" "$r/srcdir"
	printf inside >"$r/srcdir/f"
	mv "$r/srcdir" "$r/emptydir"
	mkdir "$r/a/b/c/sub"
	mv "$r/a/b/c/sub" "$r/topsub"
	rmdir "$r/topsub"
	rm "$r/a/b/c/services"
	set +e
}

# What we compare: type, mode, size (not of directories: block sizes
# differ from the host's), link count, owner.
tree_state() {
	(cd "$1" && find . -mindepth 1 -printf '%P %y %m %s %n %u:%g\n' | grep -v '^lost+found' |
	    awk '$2 == "d" {$4 = "-"} {print}' | sort)
}
same_tree() {
	diff <(tree_state "$1") <(tree_state "$2")
}

check "mkfs (4K blocks, 4K clusters)" mkfs_img "$D/v.img" -M local --fs-feature-level=max-compat -b 4096 -C 4096
mkdir -p "$MIRROR"
check "the workload runs on the host" workload "$MIRROR"
run_check "mount read-write" fsd_mount "$D/v.img" "$MNT" -v
check "the workload runs on fsd" workload "$MNT"
check "same tree (types, modes, sizes, links, owners)" same_tree "$MIRROR" "$MNT"
check "same contents" diff -r --no-dereference "$MIRROR" "$MNT" -x lost+found -x chr -x fifo
check_eq "ns mtime" "2001-02-03 04:05:06.123456789" "$(stat -c %y "$MNT/b4097" | cut -c1-29)"
check_eq "zeros after truncate up" "$(head -c 5000 "$D/rand" | md5sum)" "$(head -c 5000 "$MNT/trunc" | md5sum)"
check_eq "dir link counts" "$(stat -c %h "$MIRROR/a" "$MIRROR/emptydir")" "$(stat -c %h "$MNT/a" "$MNT/emptydir")"
check_eq "moved dir's .. follows it" "$(stat -c %i "$MNT/emptydir")" "$(stat -c %i "$MNT/emptydir/srcdir/..")"
expect_error "rmdir of a non-empty dir" "not empty" rmdir "$MNT/a"
# perl (Essential in Debian) makes the bare system calls coreutils would check first
sys_rename() { perl -e 'rename($ARGV[0], $ARGV[1]) or die "$!\n"' "$@"; }
sys_link() { perl -e 'link($ARGV[0], $ARGV[1]) or die "$!\n"' "$@"; }
expect_error "a dir into its own subtree" "Invalid argument" sys_rename "$MNT/a" "$MNT/a/b/c/a"
expect_error "rename a dir over a file" "Not a directory" sys_rename "$MNT/emptydir" "$MNT/big"
expect_error "rename a file over a dir" "Is a directory" sys_rename "$MNT/big" "$MNT/emptydir"
expect_error "rename a dir over a non-empty dir" "not empty" sys_rename "$MNT/emptydir" "$MNT/a"
expect_error "create over an existing name" "File exists" mkdir "$MNT/a"
expect_error "hard link to a dir" "Operation not permitted" sys_link "$MNT/a" "$MNT/alink"
expect_error "name too long" "File name too long" touch "$MNT/$(printf 'n%.0s' $(seq 1 256))"
check "fsync" sync "$MNT/big"
check "fallocate extends with zeros" fallocate -l 100000 "$MNT/fa"
check_eq "... to the size asked" "100000" "$(stat -c %s "$MNT/fa")"
check "fallocate --keep-size allocates past the end" fallocate -n -l 300000 "$MNT/fa"
check_eq "... without changing the size" "100000 592" "$(stat -c '%s %b' "$MNT/fa")"
check "a later size increase reads zeros" bash -c "truncate -s 250000 '$MNT/fa' && cmp '$MNT/fa' <(head -c 250000 /dev/zero)"
expect_error "punching holes needs the sparse feature" "unsupported" fallocate -p -o 0 -l 4096 "$MNT/fa"
head -c 655360 "$D/rand" >"$D/direct"
check "O_DIRECT write" dd if="$D/direct" of="$MNT/direct" bs=64k oflag=direct status=none
check "O_DIRECT read" cmp <(dd if="$MNT/direct" bs=64k iflag=direct status=none) "$D/direct"
rm -f "$MNT/fa" "$MNT/direct"
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean after the workload" fsck_clean "$D/v.img"
la_total() {
	debugfs.ocfs2 -R "stat //local_alloc:0000" "$1" 2>/dev/null | sed -n 's/.*Bitmap Total: \([0-9]*\).*/\1/p'
}
check "the data came from a local alloc window" grep -q "local alloc window" "$MNT.log"
check_eq "the window was returned at unmount" "0" "$(la_total "$D/v.img")"

echo "-- what debugfs.ocfs2 sees"
for f in big gap trunc a/b/moved a/b/c/../../many-2-with-a-longer-name; do
	debugfs.ocfs2 -R "cat /$f" "$D/v.img" >"$D/dbg" 2>/dev/null
	check "debugfs cat /$f" cmp "$D/dbg" "$MIRROR/$f"
done
check_eq "debugfs stat: mode and owner" "Mode: 0644 User: 1234 Group: 4321" \
    "$(debugfs.ocfs2 -R 'stat /b4096' "$D/v.img" 2>/dev/null | grep -oE 'Mode: [0-9]+|User: [0-9]+|Group: [0-9]+' | xargs)"
check_eq "debugfs stat: links" "Links: 2" \
    "$(debugfs.ocfs2 -R 'stat /victim' "$D/v.img" 2>/dev/null | grep -oE 'Links: [0-9]+')"
check_eq "debugfs ls" "$(cd "$MIRROR/a/b" && ls -a | sort | xargs)" \
    "$(debugfs.ocfs2 -R 'ls /a/b' "$D/v.img" 2>/dev/null | awk '{print $NF}' | sort | xargs)"
check_eq "debugfs: fast symlink" "one" \
    "$(debugfs.ocfs2 -R 'stat /fastlink' "$D/v.img" 2>/dev/null | sed -n 's/.*Fast Symlink Destination: //p')"
check_eq "orphan dir empty" ". .." \
    "$(debugfs.ocfs2 -R 'ls //orphan_dir:0000' "$D/v.img" 2>/dev/null | awk '{print $NF}' | xargs)"

echo "-- remount"
run_check "mount again" fsd_mount "$D/v.img" "$MNT"
check "same tree after remount" same_tree "$MIRROR" "$MNT"
check "same contents after remount" diff -r --no-dereference "$MIRROR" "$MNT" -x lost+found -x chr -x fifo

echo "-- unlinked while open"
exec 7<"$MNT/big"
check "unlink an open file" rm "$MNT/big"
check "still readable through the open descriptor" cmp /dev/fd/7 "$MIRROR/big"
exec 7<&-
# The kernel may keep the inode until unmount: the kill below then leaves
# it in the orphan dir, and the remount's orphan recovery must delete it.

echo "-- kill -9 after fsync"
head -c 300000 /dev/urandom >"$D/synced"
cp "$D/synced" "$MNT/synced"
check "fsync the new file" sync "$MNT/synced"
mkdir "$MNT/synced-dir"
check "fsync its directory" sync "$MNT/synced-dir"
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "remount replays" fsd_mount "$D/v.img" "$MNT"
check "fsync'ed file intact" cmp "$MNT/synced" "$D/synced"
check "fsync'ed directory there" test -d "$MNT/synced-dir"
check "the file unlinked while open is gone" test ! -e "$MNT/big"
check "the rest intact" cmp "$MNT/gap" "$MIRROR/gap"
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean after crash recovery" fsck_clean "$D/v.img"
check_eq "the crashed session's window was returned" "0" "$(la_total "$D/v.img")"
check_eq "orphan dir empty after recovery" ". .." \
    "$(debugfs.ocfs2 -R 'ls //orphan_dir:0000' "$D/v.img" 2>/dev/null | awk '{print $NF}' | xargs)"
rm -f "$D/v.img"

echo "-- 512-byte blocks: deep trees grow and shrink"
check "mkfs (512-byte blocks)" mkfs_img "$D/s.img" --fs-feature-level=max-compat \
    --cluster-stack=o2cb --cluster-name=fsdtest -N 2 -b 512 -C 4096
run_check "mount" fsd_mount "$D/s.img" "$MNT"
frag() {	# two files appended one cluster at a time, in turn
	local i
	for i in $(seq 0 599); do
		dd if="$D/rand" of="$1/f1" bs=4096 skip=$((i % 300)) seek="$i" count=1 conv=notrunc status=none || return 1
		dd if="$D/rand" of="$1/f2" bs=4096 skip=$(((i + 7) % 300)) seek="$i" count=1 conv=notrunc status=none || return 1
	done
}
mkdir -p "$D/m2"
check "fragmented files on the host" frag "$D/m2"
check "fragmented files on fsd" frag "$MNT"
check "f1 reads back" cmp "$MNT/f1" "$D/m2/f1"
check "f2 reads back" cmp "$MNT/f2" "$D/m2/f2"
check "truncate a deep file" truncate -s 100000 "$MNT/f1"
check "the rest of it reads back" cmp "$MNT/f1" <(head -c 100000 "$D/m2/f1")
run_check "unmount" fsd_umount "$MNT"
check_eq "f2 has a depth-2 tree" "2" \
    "$(debugfs.ocfs2 -R 'stat /f2' "$D/s.img" 2>/dev/null | sed -n 's/.*Tree Depth: \([0-9]*\).*/\1/p' | head -n 1)"
check "fsck clean with deep trees" fsck_clean "$D/s.img"
debugfs.ocfs2 -R "cat /f2" "$D/s.img" >"$D/dbg" 2>/dev/null
check "debugfs reads the deep file" cmp "$D/dbg" "$D/m2/f2"
run_check "mount" fsd_mount "$D/s.img" "$MNT"
check "delete the deep file" rm "$MNT/f2"
check "and the other" rm "$MNT/f1"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean after freeing deep trees" fsck_clean "$D/s.img"

finish
