#!/usr/bin/env bash
# Inline data (mkfs.ocfs2 --fs-features=inline-data on top of max-compat):
# small files and directories inside the inode. Images are filled with
# 0xAA before mkfs, so that a cluster a conversion hands out without
# zeroing shows up instead of passing as zeros.
#
# One node (4K blocks: 3896 bytes inline): files of 0, 1, 100, 3896 and
# 3897 bytes, inline or not as the kernel makes them (debugfs.ocfs2 stat),
# read back byte for byte after a remount and by debugfs.ocfs2; appends
# across the boundary; truncate down and up inside the inline area and
# across it; O_TRUNC; a write through mmap; an unlinked open file;
# symlinks are never inline data; directories: the root and lost+found
# mkfs made inline take entries, a new directory starts inline, one with
# many entries expands to blocks, renames in and out of inline directories
# (a directory's ".." too), rmdir. fsd killed in the middle of such work:
# fsync'ed files intact after the replay. A sparse,unwritten,inline-data
# volume: holes, fallocate and SEEK_HOLE on inline files. 512-byte blocks,
# where an expanded directory's first block cannot take a long name. Two
# nodes: what one writes and creates inline, the other reads and lists,
# and the reverse across the conversions. fsck.ocfs2 -fn clean after each
# part.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
MD=$D/model
mkdir -p "$MD"

# garbage_img IMG SIZE MKFS-ARGS...: an image full of 0xAA, then formatted.
garbage_img() {
	local img=$1 size=$2
	shift 2
	head -c "$size" /dev/zero | tr '\0' '\252' >"$img"
	mkfs.ocfs2 -q -F "$@" "$img" </dev/null >/dev/null 2>&1
	debugfs.ocfs2 -R stats "$img" 2>/dev/null | grep -q 'Block Size Bits'
}

# dyn IMG PATH: the inode's dynamic features as debugfs.ocfs2 prints them ("0x1": inline).
dyn() {
	debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null |
	    sed -n 's/.*Dynamic Features: (\(0x[0-9a-f]*\)).*/\1/p'
}

# clusters IMG PATH: the inode's clusters as debugfs.ocfs2 reads them.
clusters() {
	debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p'
}

# rand FILE N: N random bytes.
rand() { head -c "$2" /dev/urandom >"$1"; }

# pwrite FILE OFF COUNT: COUNT random bytes at OFF, in FILE and its model.
pwrite() {
	python3 - "$1" "$MD/$(basename "$1")" "$2" "$3" <<'EOF'
import os, sys
data = os.urandom(int(sys.argv[4]))
for f in sys.argv[1:3]:
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(fd, data, int(sys.argv[3]))
    os.close(fd)
EOF
}

# same NAME...: each file under $MNT equals its model.
same() {
	local n
	for n in "$@"; do
		cmp "$MNT/$n" "$MD/$n" || return 1
	done
}

no_garbage() { ! LC_ALL=C grep -q $'\xaa' "$1"; }

remount() {
	fsd_umount "$MNT" && fsd_mount "$IMG" "$MNT" "$@"
}

echo "-- one node, inline-data (4K blocks, 4K clusters)"
IMG=$D/inline4k.img
CAP=3896
check "mkfs --fs-features=inline-data" garbage_img "$IMG" 96M -M local \
    --fs-feature-level=max-compat --fs-features=inline-data -b 4096 -C 4096
check_eq "mkfs made the root inline" 0x1 "$(dyn "$IMG" /)"
run_check "mount" fsd_mount "$IMG" "$MNT"
: >"$MNT/f0"
: >"$MD/f0"
for n in 1 100 $CAP $((CAP + 1)); do
	rand "$MD/f$n" "$n"
	cp "$MD/f$n" "$MNT/f$n"
done
check "files read back as written" same f0 f1 f100 f$CAP f$((CAP + 1))
# appends across the boundary
rand "$MD/app" 3000
cp "$MD/app" "$MNT/app"
head -c 800 /dev/urandom | tee -a "$MD/app" >>"$MNT/app"
check "an append inside the inline area" same app
head -c 200 /dev/urandom | tee -a "$MD/app" >>"$MNT/app"
check "an append past it" same app
# truncate inside and across
rand "$MD/tr" 3800
cp "$MD/tr" "$MNT/tr"
truncate -s 100 "$MNT/tr" "$MD/tr"
truncate -s 2000 "$MNT/tr" "$MD/tr"
check "truncate down then up inside the inline area: zeros past the old end" same tr
rand "$MD/tu" 1000
cp "$MD/tu" "$MNT/tu"
truncate -s 20000 "$MNT/tu" "$MD/tu"
check "truncate up past the inline area" same tu
check "... zeros, not what the disk held" no_garbage <(tail -c +1001 "$MNT/tu")
rand "$MD/td" 9000
cp "$MD/td" "$MNT/td"
truncate -s 50 "$MNT/td" "$MD/td"
check "truncate down of a converted file" same td
# O_TRUNC over an inline file, and over a converted one
rand "$MD/ot" 3000
cp "$MD/ot" "$MNT/ot"
rand "$MD/ot" 40
cp "$MD/ot" "$MNT/ot"
check "O_TRUNC rewrite of an inline file" same ot
rand "$MD/ot2" 6000
cp "$MD/ot2" "$MNT/ot2"
rand "$MD/ot2" 10
cp "$MD/ot2" "$MNT/ot2"
check "O_TRUNC rewrite of a converted file" same ot2
# mmap: a store into an inline file's page
rand "$MD/mm" 500
cp "$MD/mm" "$MNT/mm"
check "a store through mmap" python3 - "$MNT/mm" "$MD/mm" <<'EOF'
import mmap, os, sys
for f in sys.argv[1:]:
    fd = os.open(f, os.O_RDWR)
    m = mmap.mmap(fd, 500)
    m[10:20] = b"mmap-store"
    m.flush()
    m.close()
    os.close(fd)
EOF
check "... read back" same mm
# a write at an offset leaves zeros before it
pwrite "$MNT/gap" 1000 50
check "a write past the end of an inline file reads zeros before it" same gap
ln -s target-of-a-fast-symlink "$MNT/sl"
LONGT=$(printf 'x%.0s' $(seq 1 4000))
ln -s "$LONGT" "$MNT/slow"
# directories: the root and lost+found are inline (mkfs), a new one starts inline
mkdir "$MNT/small" "$MNT/big" "$MNT/sub"
for n in a b c; do rand "$MD/small-$n" 10; cp "$MD/small-$n" "$MNT/small/$n"; done
for n in $(seq 1 150); do : >"$MNT/big/entry-with-a-longish-name-$n"; done
check_eq "an inline directory lists its entries" "a b c" "$(ls "$MNT/small" | xargs)"
check_eq "an expanded directory lists all of them" 150 "$(ls "$MNT/big" | wc -l)"
touch "$MNT/lost+found/lf"
mv "$MNT/small/a" "$MNT/big/a"
mv "$MNT/big/entry-with-a-longish-name-7" "$MNT/small/seven"
mv "$MNT/sub" "$MNT/small/sub"
check_eq "renames out of and into an inline directory" "b c seven sub" "$(ls "$MNT/small" | xargs)"
check "a directory moved into an inline one: its .. follows" \
    test "$(stat -c %i "$MNT/small/sub/..")" = "$(stat -c %i "$MNT/small")"
mkdir "$MNT/gone"
touch "$MNT/gone/x"
expect_error "rmdir of a non-empty inline directory" "not empty" rmdir "$MNT/gone"
rm "$MNT/gone/x"
check "rmdir of an emptied inline directory" rmdir "$MNT/gone"
rm "$MNT/f100"
# unlinked while open: the inode goes through the (inline) orphan directory
rand "$MD/op" 200
cp "$MD/op" "$MNT/op"
exec 7<"$MNT/op"
rm "$MNT/op"
check "an unlinked inline file is still read through its descriptor" cmp /dev/fd/7 "$MD/op"
exec 7<&-
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "empty file: no inline data (no write made it so)" 0x0 "$(dyn "$IMG" /f0)"
check_eq "1 byte: inline" 0x1 "$(dyn "$IMG" /f1)"
check_eq "$CAP bytes: inline" 0x1 "$(dyn "$IMG" /f$CAP)"
check_eq "$((CAP + 1)) bytes: extents" 0x0 "$(dyn "$IMG" /f$((CAP + 1)))"
check_eq "... one cluster" 1 "$(clusters "$IMG" /f$((CAP + 1)))"
check_eq "appended past the capacity: extents" 0x0 "$(dyn "$IMG" /app)"
check_eq "truncated inside: inline" 0x1 "$(dyn "$IMG" /tr)"
check_eq "truncated up past it: extents, every cluster (no sparse)" "0x0 5" \
    "$(dyn "$IMG" /tu) $(clusters "$IMG" /tu)"
check_eq "a converted file stays converted" 0x0 "$(dyn "$IMG" /td)"
check_eq "O_TRUNC rewrite: inline" 0x1 "$(dyn "$IMG" /ot)"
check_eq "mmap'd file: inline" 0x1 "$(dyn "$IMG" /mm)"
check_eq "the fast symlink: no inline data" 0x0 "$(dyn "$IMG" /sl)"
check_eq "a slow symlink: a cluster, not inline data" "0x0 1" \
    "$(dyn "$IMG" /slow) $(clusters "$IMG" /slow)"
check_eq "a new directory: inline" 0x1 "$(dyn "$IMG" /small)"
check_eq "a directory of 150 entries: blocks" 0x0 "$(dyn "$IMG" /big)"
check_eq "lost+found: still inline" 0x1 "$(dyn "$IMG" /lost+found)"
check "debugfs.ocfs2 reads an inline file as written" \
    cmp <(debugfs.ocfs2 -R "cat /f$CAP" "$IMG" 2>/dev/null) "$MD/f$CAP"
check_eq "debugfs.ocfs2 lists an inline directory" ". .. b c seven sub" \
    "$(debugfs.ocfs2 -R "ls /small" "$IMG" 2>/dev/null | awk '{print $NF}' | LC_ALL=C sort | xargs)"
run_check "remount" fsd_mount "$IMG" "$MNT"
check "after the remount, every file as written" \
    same f0 f1 f$CAP f$((CAP + 1)) app tr tu td ot ot2 mm gap
check "... in its directory" cmp "$MNT/small/b" "$MD/small-b"
check_eq "the symlink" target-of-a-fast-symlink "$(readlink "$MNT/sl")"
check_eq "the slow symlink" "$LONGT" "$(readlink "$MNT/slow")"
check_eq "the expanded directory" 150 "$(ls "$MNT/big" | wc -l)"
# the root outgrows its inline area
for n in $(seq 1 120); do : >"$MNT/root-entry-number-$n"; done
check_eq "the root expanded: every entry there" 120 "$(ls "$MNT" | grep -c root-entry)"
rm "$MNT"/root-entry-number-*
rm -r "$MNT/small" "$MNT/big"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "the root: blocks now" 0x0 "$(dyn "$IMG" /)"

echo "-- fsd killed while files and directories go inline and out"
IMG=$D/inlinecrash.img
LIST=$D/synced.list
: >"$LIST"
check "mkfs" garbage_img "$IMG" 96M -M local --fs-feature-level=max-compat \
    --fs-features=inline-data -b 4096 -C 4096
# fsync'ed files (inline, or converted by the append) are listed once
# fsync returned; directories fill past their inline area meanwhile.
crash_workload() {
	local round=$1 i=0 f k
	while :; do
		i=$((i + 1))
		f=r$round-f$i
		head -c $((RANDOM % CAP + 1)) /dev/urandom >"$D/a"
		head -c $((RANDOM % 3000 + 1)) /dev/urandom >"$D/b"
		cp "$D/a" "$MNT/$f" && cat "$D/b" >>"$MNT/$f" && sync "$MNT/$f" || return
		printf '%s %s\n' "$f" "$(cat "$D/a" "$D/b" | md5sum)" >>"$LIST"
		mkdir "$MNT/$f.d" || return
		for ((k = 0; k < i % 4 * 40; k++)); do : >"$MNT/$f.d/name-of-some-length-$k" || return; done
		truncate -s $((RANDOM % 8000)) "$MNT/$f" || return
		cat "$D/a" "$D/b" >"$MNT/$f" && sync "$MNT/$f" || return
	done
}
crash_verify() {
	local f sum bad=0
	while read -r f sum; do
		[[ "$(md5sum <"$MNT/$f" 2>&1)" == "$sum" ]] || { echo "lost or damaged: $f"; bad=1; }
	done <"$LIST"
	return $bad
}
for round in 1 2 3; do
	run_check "round $round: mount (replaying what the last kill left)" fsd_mount "$IMG" "$MNT" \
	    -o commit=1
	check "round $round: every fsync'ed file intact" crash_verify
	crash_workload "$round" >/dev/null 2>&1 &
	WL=$!
	sleep "0.$((RANDOM % 5 + 4))"
	kill -9 "$FSD_PID"
	wait "$FSD_PID" 2>/dev/null
	wait "$WL" 2>/dev/null
	umount -l "$MNT" 2>/dev/null
done
run_check "mount after the last kill" fsd_mount "$IMG" "$MNT"
check "every fsync'ed file intact ($(wc -l <"$LIST") files)" crash_verify
check "some files were fsync'ed" test "$(wc -l <"$LIST")" -ge 3
run_check "clean unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- one node, sparse,unwritten,inline-data"
IMG=$D/inlinesparse.img
check "mkfs --fs-features=sparse,unwritten,inline-data" garbage_img "$IMG" 96M -M local \
    --fs-feature-level=max-compat --fs-features=sparse,unwritten,inline-data -b 4096 -C 4096
run_check "mount" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
rand "$MD/s1" 2000
cp "$MD/s1" "$MNT/s1"
check_eq "SEEK_HOLE of an inline file is its size" 2000 "$(python3 -c '
import os, sys
print(os.lseek(os.open(sys.argv[1], os.O_RDONLY), 10, os.SEEK_HOLE))' "$MNT/s1")"
truncate -s 100000 "$MNT/s1" "$MD/s1"
check "truncate up across: the rest a hole" same s1
check_eq "... one cluster allocated (st_blocks)" 8 "$(stat -c %b "$MNT/s1")"
rand "$MD/s2" 300
cp "$MD/s2" "$MNT/s2"
check "fallocate on an inline file" fallocate -o 0 -l 65536 "$MNT/s2"
truncate -s 65536 "$MD/s2"
check "... keeps its bytes, zeros after" same s2
check_eq "... its clusters reserved" 128 "$(stat -c %b "$MNT/s2")"
rand "$MD/s3" 100
cp "$MD/s3" "$MNT/s3"
pwrite "$MNT/s3" 50000 10
check "a write far past an inline file" same s3
check_eq "... two clusters, a hole between" 16 "$(stat -c %b "$MNT/s3")"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "the files are no longer inline" "0x0 0x0 0x0" \
    "$(dyn "$IMG" /s1) $(dyn "$IMG" /s2) $(dyn "$IMG" /s3)"

echo "-- one node, 512-byte blocks"
IMG=$D/inline512.img
check "mkfs -b 512 --fs-features=inline-data" garbage_img "$IMG" 64M -M local \
    --fs-feature-level=max-compat --fs-features=inline-data -b 512 -C 4096 -J size=4M
run_check "mount" fsd_mount "$IMG" "$MNT"
mkdir "$MNT/d"
L=$(printf 'L%.0s' $(seq 1 250))
touch "$MNT/d/short" "$MNT/d/$L-1"
touch "$MNT/d/$L-2"
check_eq "long names past a 312-byte inline area" 3 "$(ls "$MNT/d" | wc -l)"
rand "$MD/b512" 312
cp "$MD/b512" "$MNT/b512"
rand "$MD/b513" 313
cp "$MD/b513" "$MNT/b513"
check "files at and past the capacity" same b512 b513
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "312 bytes inline, 313 not" "0x1 0x0" "$(dyn "$IMG" /b512) $(dyn "$IMG" /b513)"
check_eq "the directory expanded to blocks" 0x0 "$(dyn "$IMG" /d)"

echo "-- two nodes"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG=$D/inlineshared.img
check "mkfs (cluster, inline-data)" garbage_img "$IMG" 256M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C 4096 -J size=8M --fs-feature-level=max-compat \
    --fs-features=inline-data
if ! lc up 2 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
rand "$MD/c1" 700
cp "$MD/c1" "${M[1]}/c1"
mkdir "${M[1]}/cd"
touch "${M[1]}/cd/one" "${M[1]}/cd/two"
check "node1 writes an inline file, node2 reads it" cmp "${M[2]}/c1" "$MD/c1"
check_eq "node2 lists node1's inline directory" "one two" "$(ls "${M[2]}/cd" | xargs)"
head -c 5000 /dev/urandom | tee -a "$MD/c1" >>"${M[2]}/c1"
check "node2 appends past the inline area, node1 reads it" cmp "${M[1]}/c1" "$MD/c1"
for n in $(seq 1 100); do : >"${M[2]}/cd/from-node2-with-a-long-name-$n"; done
check_eq "node2 expands it, node1 lists it" 102 "$(ls "${M[1]}/cd" | wc -l)"
rm "${M[1]}/cd/one"
check "node1 removes an entry, node2 sees it gone" test ! -e "${M[2]}/cd/one"
truncate -s 10 "${M[1]}/c1"
truncate -s 10 "$MD/c1"
check "node1 truncates, node2 reads it" cmp "${M[2]}/c1" "$MD/c1"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"
check_eq "the directory expanded, the file converted" "0x0 0x0" \
    "$(dyn "$IMG" /cd) $(dyn "$IMG" /c1)"

finish
