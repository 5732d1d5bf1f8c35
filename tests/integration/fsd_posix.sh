#!/usr/bin/env bash
# fsd on one node and every kind of inode: regular files (small, and
# fragmented into an extent tree of depth 1), directories, fast and slow
# symlinks, fifos, sockets, character and block devices. Each is made as
# fsck.ocfs2 expects and deleted on every path: unlink or rmdir and the
# kernel's forget, rename over it, the last close, and the orphan
# recovery of the next mount after a crash. No path may fail, turn the
# volume read-only or leave an orphan behind. The kernel's forgets of
# 2000 linked inodes read none of their blocks. Then open(O_TRUNC), with
# and without the writeback cache: size 0 and a new mtime and ctime, on
# disk too.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
IMG=$D/v.img
head -c 1100000 /dev/urandom >"$D/rand"
LONG=$(printf 'p%.0s' $(seq 1 2000))/$(printf 'q%.0s' $(seq 1 1000))
KINDS="small frag frag2 dir fastlink slowlink fifo sock chr blk"

mksock() { python3 -c 'import os, stat, sys; os.mknod(sys.argv[1], stat.S_IFSOCK | 0o644)' "$1"; }

# make_kinds DIR: one inode of each kind in DIR (named as in KINDS).
make_kinds() {
	local d=$1
	mkdir -p "$d" || return 1
	printf small >"$d/small"
	# one 4 KiB write to each in turn: every cluster a new extent, more
	# than the inode's own list holds
	python3 - "$d/frag" "$d/frag2" "$D/rand" <<'EOF' || return 1
import os, sys
data = open(sys.argv[3], "rb").read()
fds = [os.open(p, os.O_WRONLY | os.O_CREAT, 0o644) for p in sys.argv[1:3]]
for i in range(260):
	for k, fd in enumerate(fds):
		os.write(fd, data[(i + k) * 4096:(i + k + 1) * 4096])
EOF
	mkdir "$d/dir" &&
	ln -s small "$d/fastlink" &&
	ln -s "$LONG" "$d/slowlink" &&
	mkfifo "$d/fifo" &&
	mksock "$d/sock" &&
	mknod "$d/chr" c 1 3 &&
	mknod "$d/blk" b 7 0
}

# remove_kinds DIR: unlink each, rmdir the directory.
remove_kinds() {
	local k
	for k in $KINDS; do
		if [[ $k == dir ]]; then rmdir "$1/$k"; else rm "$1/$k"; fi || return 1
	done
}

# fsd_sane: fsd alive, nothing went wrong in its log, the volume writable.
fsd_sane() {
	kill -0 "$FSD_PID" || { echo "fsd died"; return 1; }
	if grep -E 'warning|corrupt|error' "$MNT.log"; then return 1; fi
	: >"$MNT/.probe" && rm "$MNT/.probe"
}

orphans() {
	debugfs.ocfs2 -R 'ls //orphan_dir:0000' "$IMG" 2>/dev/null | awk '{print $NF}' | grep -vxE '\.|\.\.' | wc -l
}

# The kernel forgets what nobody uses; fsd deletes the unlinked ones then.
forget_all() { sync; echo 2 >/proc/sys/vm/drop_caches; sleep 0.5; }

check "mkfs (4K blocks, 4K clusters)" mkfs_img "$IMG" -M local --fs-feature-level=max-compat -b 4096 -C 4096

echo "-- every kind made as fsck.ocfs2 expects"
run_check "mount without the writeback cache" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
check "make one of each kind" make_kinds "$MNT/keep"
check_eq "each has its type" "regular file:regular file:regular file:directory:symbolic link:symbolic link:fifo:socket:character special file:block special file" \
    "$(cd "$MNT/keep" && stat -c %F $KINDS | paste -sd:)"
check_eq "the slow symlink reads back" "$LONG" "$(readlink "$MNT/keep/slowlink")"
check_eq "the devices keep their numbers" "1:3 7:0" "$(stat -c '%t:%T' "$MNT/keep/chr" "$MNT/keep/blk" | xargs)"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "the fragmented file has an extent tree of depth 1" 1 \
    "$(debugfs.ocfs2 -R 'stat /keep/frag' "$IMG" 2>/dev/null | sed -n 's/.*Tree Depth: \([0-9]*\).*/\1/p' | head -n 1)"
check_eq "the short target is a fast symlink" small \
    "$(debugfs.ocfs2 -R 'stat /keep/fastlink' "$IMG" 2>/dev/null | sed -n 's/.*Fast Symlink Destination: //p')"

echo "-- unlink, rmdir and the kernel's forget"
run_check "mount" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
check "make one of each kind" make_kinds "$MNT/u"
check "unlink each (rmdir the directory)" remove_kinds "$MNT/u"
forget_all
check "fsd deleted them without harm" fsd_sane

echo "-- rename over each kind"
check "make one of each kind" make_kinds "$MNT/r"
renames_over() {
	local k
	for k in $KINDS; do
		if [[ $k == dir ]]; then mkdir "$MNT/r/new-$k"; else printf new >"$MNT/r/new-$k"; fi
		mv -T "$MNT/r/new-$k" "$MNT/r/$k" || return 1
	done
}
check "a new file (or directory) renamed over each" renames_over
forget_all
check "fsd deleted the old ones without harm" fsd_sane
check_eq "the new ones took their names" 9 "$(cat "$MNT"/r/* 2>/dev/null | grep -o new | wc -l)"

echo "-- the last close"
printf open >"$MNT/closing"
exec 7<"$MNT/closing"
rm "$MNT/closing"
check_eq "unlinked, still read" open "$(cat <&7)"
exec 7<&-
forget_all
check "the last close deleted it without harm" fsd_sane
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "no orphan left" 0 "$(orphans)"

echo "-- a crash with orphans of each kind: the next mount deletes them"
run_check "mount" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
check "make one of each kind" make_kinds "$MNT/c"
# keeps every one known to the kernel (regular files open) until killed
python3 - "$MNT/c" $KINDS >"$D/holder.out" <<'EOF' &
import os, sys, time
fds = []
for k in sys.argv[2:]:
	p = os.path.join(sys.argv[1], k)
	reg = os.path.isfile(p) and not os.path.islink(p)
	fds.append(os.open(p, os.O_RDONLY if reg else os.O_PATH | os.O_NOFOLLOW))
print("holding", flush=True)
time.sleep(600)
EOF
HOLDER=$!
wait_for 10 grep -q holding "$D/holder.out"
check "unlink each while held" remove_kinds "$MNT/c"
check "fsync: the unlinks are in the journal" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.fsync(fd)' "$MNT/sync"
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "the next mount recovers" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
check "it deleted the orphans" grep -q 'orphan_dir:0000: 10 inodes deleted' "$MNT.log"
check "without harm" fsd_sane
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "no orphan left" 0 "$(orphans)"

echo "-- forgetting linked inodes reads nothing"
# fsd's reads from the volume, and its CPU ticks beside them
fsd_reads() { awk '/^read_bytes/ {print $2}' "/proc/$FSD_PID/io"; }
fsd_work() { echo "$(fsd_reads) $(awk '{print $14 + $15}' "/proc/$FSD_PID/stat")"; }
# quiet: fsd read nothing and used no CPU for half a second (the forgets are done)
quiet() { local a; a=$(fsd_work); sleep 0.5; [[ $(fsd_work) == "$a" ]]; }
# A cache of 64 blocks holds none of 2000 inode blocks once they are looked up.
run_check "mount with cache_blocks=64" fsd_mount "$IMG" "$MNT" -o writeback_cache=0,cache_blocks=64
check "2000 files" python3 -c '
import os, sys
os.mkdir(sys.argv[1])
for i in range(2000):
	os.close(os.open("%s/f%04d" % (sys.argv[1], i), os.O_CREAT | os.O_WRONLY, 0o644))' "$MNT/many"
run_check "unmount" fsd_umount "$MNT"
run_check "mount with cache_blocks=64" fsd_mount "$IMG" "$MNT" -o writeback_cache=0,cache_blocks=64
check_eq "the kernel looks each up" 2000 "$(find "$MNT/many" -type f | xargs stat -c %i | wc -l)"
reads0=$(fsd_reads)
forget_all
check "fsd is done with the forgets" wait_for 30 quiet
reads=$(($(fsd_reads) - reads0))
echo "   bytes read while forgetting 2000 inodes: $reads"
check "it read under 100 blocks, not each inode's (they keep their links)" test "$reads" -lt $((100 * 4096))
check_eq "all still there" 2000 "$(ls "$MNT/many" | wc -l)"
check "unlink them: the forgets delete them" rm -r "$MNT/many"
forget_all
check "without harm" fsd_sane
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
check_eq "no orphan left" 0 "$(orphans)"

echo "-- open(O_TRUNC)"
IMG=$D/t.img
check "mkfs another volume" mkfs_img "$IMG" -M local --fs-feature-level=max-compat
# otrunc FILE FLAGS: open(2) with FLAGS (python's os.O_* names), nothing else
otrunc() { python3 -c 'import os, sys; os.close(os.open(sys.argv[1], eval(sys.argv[2])))' "$1" "$2"; }
# truncated HOW: HOW cuts "$MNT/t" (5 bytes, mtime in 2001) to size 0,
# with a new mtime and ctime
truncated() {
	local before after
	mountpoint -q "$MNT" || return 1
	echo test >"$MNT/t" && touch -d 2001-01-01 "$MNT/t" || return 1
	before=$(stat -c '%s %Y %z' "$MNT/t")
	# past the kernel's coarse clock, which stamps times with the writeback cache
	sleep 0.1
	"$@" || return 1
	after=$(stat -c '%s %Y %z' "$MNT/t")
	echo "before: $before, after: $after"
	read -r size mtime _ <<<"$after"
	[[ $size == 0 ]] && ((mtime > 978307200)) && [[ ${after#* * } != "${before#* * }" ]]
}
shell_trunc() { : >"$MNT/t"; }
for wb in 1 0; do
	opts=()
	((wb)) || opts=(-o writeback_cache=0)
	run_check "mount with writeback_cache=$wb" fsd_mount "$IMG" "$MNT" "${opts[@]}"
	check "writeback_cache=$wb: ': > f' truncates" truncated shell_trunc
	check "writeback_cache=$wb: open(O_WRONLY|O_TRUNC) truncates" truncated otrunc "$MNT/t" 'os.O_WRONLY | os.O_TRUNC'
	check "writeback_cache=$wb: open(O_RDWR|O_CREAT|O_TRUNC) of a file there truncates" \
	    truncated otrunc "$MNT/t" 'os.O_RDWR | os.O_CREAT | os.O_TRUNC'
	echo test >"$MNT/t"
	: >"$MNT/t"
	run_check "unmount" fsd_umount "$MNT"
	check_eq "writeback_cache=$wb: size 0 on disk" 0 \
	    "$(debugfs.ocfs2 -R 'stat /t' "$IMG" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p')"
done
check "fsck clean" fsck_clean "$IMG"

finish
