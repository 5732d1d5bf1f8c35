#!/usr/bin/env bash
# Sparse files and unwritten extents (mkfs.ocfs2 --fs-features=sparse,unwritten
# on top of max-compat). The images are filled with 0xAA bytes before
# mkfs, so that a cluster handed out without zeroing, or an unwritten
# extent read from disk, shows up as 0xAA instead of passing as zeros.
#
# One node: holes at the start, middle and end; a write into a hole
# allocates one cluster and zeroes the rest of it; truncate up leaves a
# hole, truncate down frees what lies past the new end; SEEK_DATA and
# SEEK_HOLE on several layouts; st_blocks; fallocate in every mode fsd
# takes (mode 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE) and EOPNOTSUPP for
# the others; writes at the start, middle and end of an unwritten extent;
# a punch gives its clusters back to statfs; sizes past the 2^32 clusters
# a record maps. Every file is compared with a model built on the host,
# again after a remount and by debugfs.ocfs2. SEEK_DATA sees what the
# writeback cache still held. A depth-2 tree (512-byte blocks) under
# random fallocate modes and writes. A crash during writes into an
# unwritten extent exposes no stale byte. Sparse without unwritten
# refuses fallocate (as the kernel); a max-compat volume keeps
# allocating on truncate up. Two nodes: what one fallocates, punches and
# writes, the other reads. Every volume ends clean under fsck.ocfs2 -fn.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
CS=4096

# garbage_img IMG SIZE MKFS-ARGS...: an image full of 0xAA, then formatted.
garbage_img() {
	local img=$1 size=$2
	shift 2
	head -c "$size" /dev/zero | tr '\0' '\252' >"$img"
	mkfs.ocfs2 -q -F "$@" "$img" </dev/null >/dev/null 2>&1
	debugfs.ocfs2 -R stats "$img" 2>/dev/null | grep -q 'Block Size Bits'
}

# segments FILE: the data ranges SEEK_DATA/SEEK_HOLE report, "start-end ...".
segments() {
	python3 - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size, off, out = os.fstat(fd).st_size, 0, []
while off < size:
    try:
        start = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    end = os.lseek(fd, start, os.SEEK_HOLE)
    out.append("%d-%d" % (start, end))
    off = end
print(" ".join(out))
EOF
}

# seek_errno FILE OFF WHENCE: the errno name lseek fails with, or the offset.
seek_at() {
	python3 - "$@" <<'EOF'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    print(os.lseek(fd, int(sys.argv[2]), getattr(os, sys.argv[3])))
except OSError as e:
    print(errno.errorcode[e.errno])
EOF
}

# pwrite FILE OFF BYTE COUNT [MODEL]: COUNT bytes BYTE at OFF, in FILE and the model.
pwrite() {
	local f
	for f in "$1" "${5:-}"; do
		[[ -n $f ]] || continue
		python3 - "$f" "$2" "$3" "$4" <<'EOF' || return 1
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, sys.argv[3].encode() * int(sys.argv[4]), int(sys.argv[2]))
os.close(fd)
EOF
	done
}

blocks() { stat -c %b "$1"; }
free_blocks() { stat -f -c %f "$MNT"; }
free_at_least() { (($(free_blocks) >= $1)); }
no_garbage() { ! LC_ALL=C grep -q $'\xaa' "$1"; }

echo "-- one node, sparse + unwritten (1K blocks, 4K clusters)"
IMG=$D/v.img
check "mkfs --fs-features=sparse,unwritten" garbage_img "$IMG" 64M -M local \
    --fs-feature-level=max-compat --fs-features=sparse,unwritten -b 1024 -C $CS
check "the volume has exactly those features" sh -c "debugfs.ocfs2 -R stats '$IMG' |
    grep -q 'Feature Incompat: 24 local sparse' &&
    debugfs.ocfs2 -R stats '$IMG' | grep -q 'Feature RO compat: 1 unwritten'"
# Without the writeback cache a write reaches fsd as it was made, not as
# whole pages that would carry the kernel's zeros over the rest of a cluster.
run_check "mount" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
MD=$D/model
mkdir -p "$MD"

# holes at the start, in the middle and at the end
pwrite "$MNT/h" 10000 A 100 "$MD/h"
pwrite "$MNT/h" 40000 B 5000 "$MD/h"
truncate -s 100000 "$MNT/h" "$MD/h"
check "holes read as zeros, data where written" cmp "$MNT/h" "$MD/h"
check_eq "three clusters allocated (st_blocks)" 24 "$(blocks "$MNT/h")"
check_eq "SEEK_DATA/SEEK_HOLE: two data ranges" "8192-12288 36864-45056" "$(segments "$MNT/h")"
check_eq "SEEK_HOLE at 0 is 0 (a hole at the start)" 0 "$(seek_at "$MNT/h" 0 SEEK_HOLE)"
check_eq "SEEK_DATA past the last data: ENXIO" ENXIO "$(seek_at "$MNT/h" 50000 SEEK_DATA)"
check_eq "SEEK_HOLE inside data: the end of its cluster" 12288 "$(seek_at "$MNT/h" 9000 SEEK_HOLE)"
check_eq "SEEK_DATA at the size: ENXIO" ENXIO "$(seek_at "$MNT/h" 100000 SEEK_DATA)"

# a write into a hole allocates one cluster and zeroes the rest of it
pwrite "$MNT/h" 20005 C 10 "$MD/h"
check_eq "a 10-byte write into a hole allocates one cluster" 32 "$(blocks "$MNT/h")"
check "... whose other bytes read as zeros" cmp "$MNT/h" "$MD/h"
check_eq "... and SEEK_DATA finds it" "8192-12288 16384-20480 36864-45056" "$(segments "$MNT/h")"

# truncate up leaves a hole, down frees what lies past the end
FREE=$(free_blocks)
truncate -s 5000000 "$MNT/h" "$MD/h"
check_eq "truncate up allocates nothing (st_blocks)" 32 "$(blocks "$MNT/h")"
check_eq "... nor takes space from statfs" "$FREE" "$(free_blocks)"
check "... and reads zeros" cmp "$MNT/h" "$MD/h"
truncate -s 30000 "$MNT/h" "$MD/h"
check_eq "truncate down into a hole frees the clusters past it" 16 "$(blocks "$MNT/h")"
truncate -s 20010 "$MNT/h" "$MD/h"
truncate -s 60000 "$MNT/h" "$MD/h"
check "truncate down inside a cluster, then up: zeros past the old end" cmp "$MNT/h" "$MD/h"
check_eq "... the layout after both" "8192-12288 16384-20480" "$(segments "$MNT/h")"

# sizes past the last cluster a record can map (2^32 clusters: 16 TiB here)
pwrite "$MNT/huge" 1228800000000 D 1
truncate -s 20T "$MNT/huge"
check_eq "truncate up to 20 TiB: a hole" "21990232555520 8" "$(stat -c '%s %b' "$MNT/huge")"
check "truncate down to 17 TiB" truncate -s 17T "$MNT/huge"
check_eq "... keeps the cluster at 1.2 TB" "D" "$(dd if="$MNT/huge" bs=1 skip=1228800000000 \
    count=1 status=none)"
check_eq "... and SEEK_DATA finds it" 1228800000000 "$(seek_at "$MNT/huge" 0 SEEK_DATA)"
check "reads past 16 TiB give zeros" cmp <(head -c 4096 /dev/zero) \
    <(dd if="$MNT/huge" bs=4096 skip=$(((33 << 39) / 4096)) count=1 status=none)
rm "$MNT/huge"

# other layouts
head -c 50000 /dev/urandom | tee "$MNT/full" >"$MD/full"
check_eq "a file written whole: one data range to its size" "0-50000" "$(segments "$MNT/full")"
check_eq "... SEEK_HOLE finds only the end" 50000 "$(seek_at "$MNT/full" 100 SEEK_HOLE)"
truncate -s 70000 "$MNT/allhole" "$MD/allhole"
check_eq "a file that is all hole: no data" "" "$(segments "$MNT/allhole")"
check_eq "... and no cluster" 0 "$(blocks "$MNT/allhole")"
pwrite "$MNT/tail" 65536 T 4096 "$MD/tail"
check_eq "a hole then data to the end" "65536-69632" "$(segments "$MNT/tail")"
check "... reads right" cmp "$MNT/tail" "$MD/tail"

# fallocate: mode 0 extends with unwritten extents that read as zeros
check "fallocate (mode 0)" fallocate -l 100000 "$MNT/u"
head -c 100000 /dev/zero >"$MD/u"
check_eq "... sets the size and allocates 25 clusters" "100000 200" "$(stat -c '%s %b' "$MNT/u")"
check "... which read as zeros (not the disk's 0xAA)" cmp "$MNT/u" "$MD/u"
check_eq "... and count as a hole for SEEK_DATA" "" "$(segments "$MNT/u")"
check "fallocate --keep-size past the end" fallocate -n -o 100000 -l 50000 "$MNT/u"
check_eq "... keeps the size, allocates 12 more clusters" "100000 296" "$(stat -c '%s %b' "$MNT/u")"
for opt in -c -i; do
	expect_error "fallocate $opt is not supported" "not supported" \
	    fallocate $opt -o 0 -l $CS "$MNT/u"
done
# writes at the start, in the middle and at the end of one unwritten extent
pwrite "$MNT/u" 0 S 1 "$MD/u"
pwrite "$MNT/u" 50000 M 3000 "$MD/u"
pwrite "$MNT/u" 99999 E 1 "$MD/u"
check "writes into an unwritten extent at its start, middle and end" cmp "$MNT/u" "$MD/u"
check_eq "... convert only the clusters they touch" "0-4096 49152-53248 98304-100000" \
    "$(segments "$MNT/u")"
check_eq "... and allocate nothing more" 296 "$(blocks "$MNT/u")"
truncate -s 150000 "$MNT/u" "$MD/u"
check "the kept-size extent reads as zeros once the size covers it" cmp "$MNT/u" "$MD/u"

# punch a hole: partial clusters zeroed, whole ones freed
head -c 200000 /dev/urandom | tee "$MNT/p" >"$MD/p"
sync "$MNT/p"
FREE=$(free_blocks)
check "fallocate --punch-hole" fallocate -p -o 10000 -l 50000 "$MNT/p"
python3 - "$MD/p" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, bytes(50000), 10000)
EOF
check "... reads zeros in the range, the rest intact" cmp "$MNT/p" "$MD/p"
check_eq "... frees the 11 clusters it covers whole (st_blocks)" $(((49 - 11) * 8)) "$(blocks "$MNT/p")"
check_eq "... leaves a hole SEEK_HOLE finds" 12288 "$(seek_at "$MNT/p" 0 SEEK_HOLE)"
check "... and statfs gets the clusters back" wait_for 15 free_at_least $((FREE + 11 * CS / 1024))
# zero a range: data gone, space kept
head -c 60000 /dev/urandom | tee "$MNT/z" >"$MD/z"
check "fallocate --zero-range" fallocate -z -o 5000 -l 20000 "$MNT/z"
python3 - "$MD/z" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, bytes(20000), 5000)
EOF
check "... reads zeros there, the rest intact" cmp "$MNT/z" "$MD/z"
check_eq "... keeps every cluster" 120 "$(blocks "$MNT/z")"
check_eq "... the clusters it covers whole count as a hole" "0-8192 24576-60000" "$(segments "$MNT/z")"
check "fallocate --zero-range past the end extends the file" fallocate -z -o 60000 -l 10000 "$MNT/z"
head -c 10000 /dev/zero >>"$MD/z"
check "... with zeros" cmp "$MNT/z" "$MD/z"

# many small writes far apart: a tree deeper than the inode's list
python3 - "$MNT/frag" "$MD/frag" <<'EOF'
import os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(400):
        # backwards: every write lands before the extents already there
        os.pwrite(fd, b"%05d" % i, (399 - i) * 2 * 4096 + 7)
    for i in range(0, 400, 3):
        os.pwrite(fd, b"x" * 4096, ((399 - i) * 2 + 1) * 4096)
    os.close(fd)
EOF
check "a fragmented file (hundreds of extents, written backwards) reads right" \
    cmp "$MNT/frag" "$MD/frag"
check "... and punched in the middle" fallocate -p -o 800000 -l 1200000 "$MNT/frag"
python3 - "$MD/frag" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, bytes(1200000), 800000)
EOF
check "... still reads right" cmp "$MNT/frag" "$MD/frag"

# directories have no holes
mkdir "$MNT/dir"
for i in $(seq 1 150); do : >"$MNT/dir/entry-with-a-long-name-$i"; done
check_eq "a directory that grew keeps every entry" 150 "$(ls "$MNT/dir" | wc -l)"

truncate -s 100000 "$MNT/u" "$MD/u"	# nothing allocated past the size for fsck
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"
run_check "mount again" fsd_mount "$IMG" "$MNT" -o writeback_cache=0
for f in h full allhole tail u p z frag; do
	check "$f: the same bytes after a remount" cmp "$MNT/$f" "$MD/$f"
done
check_eq "and the same layout" "8192-12288 16384-20480" "$(segments "$MNT/h")"
run_check "unmount" fsd_umount "$MNT"
for f in h u p z frag; do
	debugfs.ocfs2 -R "cat /$f" "$IMG" >"$D/dbg" 2>/dev/null
	check "$f: debugfs.ocfs2 reads the same bytes" cmp "$D/dbg" "$MD/$f"
done
check "debugfs.ocfs2 sees unwritten extents" sh -c \
    "debugfs.ocfs2 -R 'stat /u' '$IMG' 2>/dev/null | grep -q Unwritten"

echo "-- SEEK_DATA/SEEK_HOLE with the writeback cache"
run_check "mount (writeback cache)" fsd_mount "$IMG" "$MNT"
pwrite "$MNT/wb" 10000 W 1
check_eq "dirty pages are written back first: SEEK_DATA sees the cluster" 8192 \
    "$(seek_at "$MNT/wb" 0 SEEK_DATA)"
check_eq "... and SEEK_HOLE the hole before it" 0 "$(seek_at "$MNT/wb" 0 SEEK_HOLE)"
run_check "unmount" fsd_umount "$MNT"
run_check "mount with one FUSE worker" fsd_mount "$IMG" "$MNT" -o threads=1
pwrite "$MNT/wb1" 10000 W 1
# no second worker to take the written-back pages: the kernel's own answer
check_eq "SEEK_HOLE answers (data up to the size) instead of hanging" 10001 \
    "$(timeout 20 python3 -c 'import os,sys; print(os.lseek(os.open(sys.argv[1], os.O_RDONLY), 0, os.SEEK_HOLE))' "$MNT/wb1")"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG"

echo "-- a depth-2 tree (512-byte blocks): random fallocate modes and writes"
IMG4=$D/deep.img
check "mkfs -b 512" garbage_img "$IMG4" 64M -M local --fs-feature-level=max-compat \
    --fs-features=sparse,unwritten -b 512 -C $CS -J size=4M
run_check "mount" fsd_mount "$IMG4" "$MNT" -o writeback_cache=0
# 1500 extents one cluster apart, written in random order, then 300 rounds
# of a random fallocate (reserve, punch, zero range) and a random write;
# the model on the host gets the same bytes.
check "a file of 1500 extents after 300 random changes reads as its model" \
    python3 - "$MNT/deep" "$MD/deep" <<'EOF'
import ctypes, os, random, sys
random.seed(3)
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
model = bytearray(1500 * 2 * 4096)
os.ftruncate(fd, len(model))
order = list(range(1500))
random.shuffle(order)
for i in order:
    d = b"%06d" % i
    os.pwrite(fd, d, i * 8192 + 100)
    model[i * 8192 + 100:i * 8192 + 106] = d
for k in range(300):
    off, ln = random.randrange(0, len(model) - 40000), random.randrange(1, 40000)
    mode = random.choice([0x1, 0x3, 0x10, 0x11])	# keep, punch|keep, zero, zero|keep
    if libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(ln)) != 0:
        sys.exit("fallocate %#x: %s" % (mode, os.strerror(ctypes.get_errno())))
    if mode != 0x1:
        model[off:off + ln] = bytes(ln)
    d = os.urandom(random.randrange(1, 9000))
    o = random.randrange(0, len(model) - len(d))
    os.pwrite(fd, d, o)
    model[o:o + len(d)] = d
if os.pread(fd, len(model) + 1, 0) != bytes(model):
    sys.exit("the file differs from its model")
os.ftruncate(fd, len(model) // 3)
open(sys.argv[2], "wb").write(model[:len(model) // 3])
EOF
check "... and after a truncate down" cmp "$MNT/deep" "$MD/deep"
run_check "unmount" fsd_umount "$MNT"
check "the tree is two levels deep" sh -c \
    "debugfs.ocfs2 -R 'stat /deep' '$IMG4' 2>/dev/null | grep -q 'Tree Depth: 2'"
check "fsck clean" fsck_clean "$IMG4"
debugfs.ocfs2 -R "cat /deep" "$IMG4" >"$D/dbg" 2>/dev/null
check "debugfs.ocfs2 reads the same bytes" cmp "$D/dbg" "$MD/deep"

echo "-- crash while writing into an unwritten extent"
run_check "mount with a 1 s commit" fsd_mount "$IMG" "$MNT" -o commit=1,writeback_cache=0
check "fallocate 8 MiB" fallocate -l 8M "$MNT/crash"
sync "$MNT/crash"
python3 - "$MNT/crash" <<'EOF' >/dev/null 2>&1 &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(0, 8 << 20, 12288):
    os.pwrite(fd, b"W" * 5000, i + 3000)
    os.fsync(fd)
EOF
WL=$!
sleep 0.7
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
wait "$WL" 2>/dev/null
umount -l "$MNT" 2>/dev/null
run_check "mount after the kill (replay)" fsd_mount "$IMG" "$MNT"
check_eq "the size stayed" 8388608 "$(stat -c %s "$MNT/crash")"
check "no stale byte of the disk shows (only W and zeros)" no_garbage "$MNT/crash"
check "some writes were made durable" sh -c "LC_ALL=C grep -q W '$MNT/crash'"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean after the crash" fsck_clean "$IMG"

echo "-- sparse without unwritten extents"
IMG5=$D/sparseonly.img
check "mkfs --fs-features=sparse" garbage_img "$IMG5" 64M -M local \
    --fs-feature-level=max-compat --fs-features=sparse -b 1024 -C $CS
run_check "mount" fsd_mount "$IMG5" "$MNT" -o writeback_cache=0
pwrite "$MNT/s" 20000 S 10 "$MD/s"
check "holes work" cmp "$MNT/s" "$MD/s"
check_eq "... one cluster allocated" 8 "$(blocks "$MNT/s")"
for opt in "" -n -p -z; do
	# fallocate(1) words EOPNOTSUPP as "... mode is unsupported" for -n and -p
	expect_error "fallocate ${opt:-(mode 0)} is not supported (as the kernel)" "supported" \
	    fallocate $opt -o 0 -l $CS "$MNT/s"
done
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG5"

echo "-- max-compat: no holes"
IMG2=$D/compat.img
check "mkfs max-compat" garbage_img "$IMG2" 64M -M local --fs-feature-level=max-compat \
    -b 1024 -C $CS
run_check "mount" fsd_mount "$IMG2" "$MNT"
truncate -s 100000 "$MNT/t"
check_eq "truncate up allocates every cluster (st_blocks)" 200 "$(blocks "$MNT/t")"
check "... and zeroes them" cmp "$MNT/t" <(head -c 100000 /dev/zero)
check_eq "SEEK_DATA is the offset" 5000 "$(seek_at "$MNT/t" 5000 SEEK_DATA)"
check_eq "SEEK_HOLE is the size" 100000 "$(seek_at "$MNT/t" 5000 SEEK_HOLE)"
expect_error "punching needs the sparse feature" "unsupported" \
    fallocate -p -o 0 -l $CS "$MNT/t"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMG2"

echo "-- two nodes"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG3=$D/shared.img
check "mkfs (cluster, sparse + unwritten)" garbage_img "$IMG3" 256M --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C $CS -J size=8M --fs-feature-level=max-compat \
    --fs-features=sparse,unwritten
if ! lc up 2 --image "$IMG3" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
MODEL=$D/shared-model
check "node1: fallocate 64 KiB" fallocate -l 65536 "${M[1]}/s"
head -c 65536 /dev/zero >"$MODEL"
check_eq "node2 sees the size and the clusters" "65536 128" "$(stat -c '%s %b' "${M[2]}/s")"
check "node2 reads zeros (unwritten)" cmp "${M[2]}/s" "$MODEL"
pwrite "${M[1]}/s" 20000 N 100 "$MODEL"
check "node1 writes into the unwritten extent, node2 reads it" cmp "${M[2]}/s" "$MODEL"
check_eq "node2's SEEK_DATA sees the converted cluster" "16384-20480" "$(segments "${M[2]}/s")"
pwrite "${M[2]}/s" 100000 R 10 "$MODEL"
check "node2 writes past a hole, node1 reads it" cmp "${M[1]}/s" "$MODEL"
check "node1 punches a hole" fallocate -p -o 16384 -l 8192 "${M[1]}/s"
python3 - "$MODEL" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, bytes(8192), 16384)
EOF
check "node2 reads the hole" cmp "${M[2]}/s" "$MODEL"
check_eq "node2 sees the clusters gone" "100010 120" "$(stat -c '%s %b' "${M[2]}/s")"
check "node2 zeroes a range" fallocate -z -o 100000 -l 5 "${M[2]}/s"
python3 - "$MODEL" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, bytes(5), 100000)
EOF
check "node1 reads the zeroed range" cmp "${M[1]}/s" "$MODEL"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG3"

finish
