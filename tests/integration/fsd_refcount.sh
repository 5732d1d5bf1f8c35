#!/usr/bin/env bash
# Refcount trees and shared extents on volumes of mkfs.ocfs2's default
# feature level (doc/refcount.md).
#
# One node: o2ctl reflink shares a file's clusters (no space taken) and
# keeps its mode, owner, times and xattrs; copy_file_range of
# cluster-aligned ranges shares, of others copies; both files then take
# random writes, truncates, punches, zeroed ranges and copies between
# them, each checked against its own model (fsd_refcount_model.py),
# again after a remount; deleting one copy, then the other, gives every
# cluster back: the volume's free space is what it was before. Hundreds
# of copy-on-writes split the refcount records until the root's list
# overflows and the tree grows leaves. fsd killed with SIGKILL while it
# copies on write, and while the tree grows: every fsync'ed write is
# there after the replay, the source is untouched, fsck clean. Freeing
# more runs than the truncate log holds goes in several handles. A damaged
# refcount block gives EIO to a write that needs it, logged with its
# number; reads go on, and the mount refuses writes from then on.
#
# Two nodes: node1 reflinks a file while node2 reads the source; each
# node writes its own copy (copy-on-write under the tree's 'T' lock) and
# reads what the other wrote; the source never changes. fsck.ocfs2 -fn
# judges every volume (counts, records, rf_count).
#
# o2ctl reflink is one transaction: fsd killed once the new file is
# complete in the orphan dir but not yet named (FSD_TEST_REFLINK_PAUSE)
# leaves no target; recovery deletes the orphan and the space comes back.
#
# A tree deeper than its root: a file written every other cluster (its
# clusters apart on disk, one record each) reflinked, then copy-on-write
# into both copies, checked against models, the root's list of leaves
# grown into extent blocks; deleting both gives every cluster back.
#
# FSD_REFCOUNT_OPS (default 250) operations per model run, one per seed
# of FSD_REFCOUNT_SEEDS (default 1), and FSD_REFCOUNT_ROUNDS (default 1)
# crash rounds each; the deep tree has FSD_REFCOUNT_TREE_RECORDS records
# (default 4000) in FSD_REFCOUNT_TREE_BLOCK-byte blocks (default 1024:
# 55 records a leaf, 55 leaves in the root); make soak runs more.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

D=$FSD_DIR
MNT=$D/mnt
CS=4096
OPS=${FSD_REFCOUNT_OPS:-250}
SEEDS=${FSD_REFCOUNT_SEEDS:-1}
ROUNDS=${FSD_REFCOUNT_ROUNDS:-1}
MODEL_PY=$TOP/tests/integration/fsd_refcount_model.py

free_blocks() { stat -f -c %f "$1"; }
# freed_since BEFORE BYTES: $MNT has BYTES more free than BEFORE blocks (statfs) said.
freed_since() { (( ($(free_blocks "$MNT") - $1) * $(stat -f -c %S "$MNT") >= $2 )); }
# refcount_loc IMG PATH: the inode's refcount block; ext_flags IMG PATH: its extents' flags (debugfs).
refcount_loc() { debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Refcount Block: \([0-9]*\).*/\1/p'; }
ext_flags() { debugfs.ocfs2 -R "stat $2" "$1" 2>/dev/null | awk '/^\t## Offset/ {on=1; next} on && NF>=5 {print $5}' | sort -u | tr '\n' ' '; }

echo "-- one node: reflink, copy_file_range, models"
IMG=$D/v.img
check "mkfs at the default feature level" mkfs_img "$IMG" -b 4096 -C $CS
check "the volume has refcount trees" \
    bash -c "debugfs.ocfs2 -R stats '$IMG' | grep -q 'Feature Incompat:.*refcount'"
run_check "mount read-write" fsd_mount "$IMG" "$MNT"
sync "$MNT"
FREE0=$(free_blocks "$MNT")
head -c $((2 << 20)) /dev/urandom >"$D/a.data"
cp "$D/a.data" "$MNT/A" && sync "$MNT/A"
chmod 640 "$MNT/A"
setfattr -n user.colour -v blue "$MNT/A"
touch -d '2001-02-03 04:05:06' "$MNT/A"
FREE1=$(free_blocks "$MNT")
check "o2ctl reflink A B" "$O2CTL" reflink "$MNT/A" "$MNT/B"
check "B has A's bytes" cmp "$MNT/A" "$MNT/B"
check_eq "B has A's mode, owner and mtime" "$(stat -c '%a %u %g %Y' "$MNT/A")" \
    "$(stat -c '%a %u %g %Y' "$MNT/B")"
check_eq "B has A's xattrs" "blue" "$(getfattr --only-values -n user.colour "$MNT/B" 2>/dev/null)"
sync "$MNT"
check "the reflink took no data space (free $FREE1 -> $(free_blocks "$MNT"))" \
    test $((FREE1 - $(free_blocks "$MNT"))) -le 8
expect_error "reflink onto an existing name is refused" "File exists" \
    "$O2CTL" reflink "$MNT/A" "$MNT/B"
check "... and B is untouched" cmp "$MNT/A" "$MNT/B"
expect_error "reflink of a directory is refused" "not a regular file" \
    "$O2CTL" reflink "$MNT" "$MNT/dirlink"
check "... and leaves nothing" test ! -e "$MNT/dirlink"
expect_error "reflink onto another volume is refused" "not on the same volume" \
    "$O2CTL" reflink "$MNT/A" "$D/elsewhere"
check "... and leaves nothing" test ! -e "$D/elsewhere"
# FSD_IOC_REFLINK naming a directory by a number that is no inode the kernel knows
check "a reflink into a bogus directory number is refused (ENOENT)" python3 - "$MNT/A" <<'EOF'
import errno, fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
cmd = (1 << 30) | (264 << 16) | (ord('o') << 8) | 0x40  # _IOW('o', 0x40, 264 bytes)
try:
    fcntl.ioctl(fd, cmd, struct.pack('<Q256s', 12345, b'x'))
except OSError as e:
    sys.exit(0 if e.errno == errno.ENOENT else "errno %d" % e.errno)
sys.exit("accepted")
EOF
check "... and the volume still takes writes" touch "$MNT/after-bogus"
rm -f "$MNT/after-bogus"

# copy_file_range: aligned ranges share, an unaligned one copies
python3 - "$MNT/A" "$MNT/C" "$MNT/D" $CS <<'EOF'
import os, sys
a, c, d, cs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fa = os.open(a, os.O_RDONLY)
fc = os.open(c, os.O_WRONLY | os.O_CREAT, 0o644)
fd = os.open(d, os.O_WRONLY | os.O_CREAT, 0o644)
assert os.copy_file_range(fa, fc, 16 * cs, 4 * cs, 8 * cs) == 16 * cs
assert os.copy_file_range(fa, fd, 5000, 1234, 77) == 5000
EOF
python3 - "$D/a.data" "$D/c.model" "$D/d.model" $CS <<'EOF'
import sys
a = open(sys.argv[1], 'rb').read(); cs = int(sys.argv[4])
open(sys.argv[2], 'wb').write(bytes(8 * cs) + a[4 * cs:20 * cs])
open(sys.argv[3], 'wb').write(bytes(77) + a[1234:6234])
EOF
check "an aligned copy_file_range gives the range" cmp "$MNT/C" "$D/c.model"
check "an unaligned one too" cmp "$MNT/D" "$D/d.model"
# a copy past the end of a file whose last cluster holds old bytes past its size
head -c $((2 * CS)) /dev/urandom >"$MNT/E"
sync "$MNT/E"
truncate -s 5000 "$MNT/E"
python3 - "$MNT/A" "$MNT/E" $CS <<'EOF'
import os, sys
fa, fe, cs = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_WRONLY), int(sys.argv[3])
assert os.copy_file_range(fa, fe, cs, 0, 2 * cs) == cs
EOF
check_eq "the gap between the old end and the copy reads as zeros" "0" \
    "$(cmp -n $((2 * CS - 5000)) -i 5000:0 "$MNT/E" /dev/zero >/dev/null 2>&1; echo $?)"
run_check "unmount" fsd_umount "$MNT"
check_eq "A and B share one refcount tree" "$(refcount_loc "$IMG" /A)" "$(refcount_loc "$IMG" /B)"
check "A, B and C are refcounted" test -n "$(refcount_loc "$IMG" /A)" -a -n "$(refcount_loc "$IMG" /C)"
check_eq "B's extents are shared (debugfs)" "0x2 " "$(ext_flags "$IMG" /B)"
check_eq "the unaligned copy D has extents of its own" "0x0 " "$(ext_flags "$IMG" /D)"
check "debugfs sees count 3 on the clusters A, B and C map" \
    bash -c "debugfs.ocfs2 -R 'refcount -e /A' '$IMG' | grep -qE '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+3\$'"
check "fsck clean (reflinked)" fsck_clean "$IMG"

run_check "mount again" fsd_mount "$IMG" "$MNT"
rm -f "$MNT/C" "$MNT/D" "$MNT/E"
cp "$MNT/A" "$D/a.data"
# B copies back into A a range A still shares with B at another offset:
# A may not map those clusters twice, so that part is copied
python3 - "$MNT/A" "$MNT/B" $CS <<'EOF'
import os, sys
fa, fb, cs = os.open(sys.argv[1], os.O_RDWR), os.open(sys.argv[2], os.O_RDONLY), int(sys.argv[3])
assert os.copy_file_range(fb, fa, 8 * cs, 0, 32 * cs) == 8 * cs
EOF
python3 - "$D/a.data" "$D/a2.model" $CS <<'EOF'
import sys
a, cs = bytearray(open(sys.argv[1], 'rb').read()), int(sys.argv[3])
a[32 * cs:40 * cs] = a[0:8 * cs]
open(sys.argv[2], 'wb').write(a)
EOF
check "a copy of shared clusters to another place of a sharing file" cmp "$MNT/A" "$D/a2.model"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean: no file maps a cluster twice" fsck_clean "$IMG"
for seed in $SEEDS; do
	run_check "mount (model run $seed)" fsd_mount "$IMG" "$MNT"
	rm -f "$MNT/B"
	"$O2CTL" reflink "$MNT/A" "$MNT/B"
	check "model run $seed: $OPS random operations on A and B" \
	    python3 "$MODEL_PY" "$seed" "$OPS" $CS "$MNT/A" "$MNT/B"
	md5sum <"$MNT/A" >"$D/A.md5"
	md5sum <"$MNT/B" >"$D/B.md5"
	run_check "unmount after model run $seed" fsd_umount "$MNT"
	check "fsck clean after model run $seed" fsck_clean "$IMG"
done
run_check "remount" fsd_mount "$IMG" "$MNT"
check_eq "A as the model left it, after the remount" "$(cat "$D/A.md5")" "$(md5sum <"$MNT/A")"
check_eq "B as the model left it, after the remount" "$(cat "$D/B.md5")" "$(md5sum <"$MNT/B")"
rm "$MNT/A"
run_check "unmount with A deleted" fsd_umount "$MNT"
check "fsck clean with B alone" fsck_clean "$IMG"
run_check "remount" fsd_mount "$IMG" "$MNT"
check_eq "B intact after A went" "$(cat "$D/B.md5")" "$(md5sum <"$MNT/B")"
rm "$MNT/B"
run_check "unmount with both deleted" fsd_umount "$MNT"
run_check "remount" fsd_mount "$IMG" "$MNT"
check_eq "every cluster is free again" "$FREE0" "$(free_blocks "$MNT")"

echo "-- the tree grows leaves"
head -c $((700 * CS)) /dev/urandom >"$MNT/T"
sync "$MNT/T"
"$O2CTL" reflink "$MNT/T" "$MNT/U"
# a byte into every other cluster of U: ~700 records, more than the root holds
python3 - "$MNT/U" $CS <<'EOF'
import os, sys
fd, cs = os.open(sys.argv[1], os.O_WRONLY), int(sys.argv[2])
for i in range(0, 700, 2):
    os.pwrite(fd, b'\xff', i * cs + 7)
os.fsync(fd)
EOF
python3 - "$MNT/T" "$D/u.model" $CS <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read()); cs = int(sys.argv[3])
for i in range(0, 700, 2):
    d[i * cs + 7] = 0xff
open(sys.argv[2], 'wb').write(d)
EOF
check "U has its 350 writes, T none" cmp "$MNT/U" "$D/u.model"
run_check "unmount" fsd_umount "$MNT"
check "the refcount root lists leaf blocks now (debugfs)" \
    bash -c "debugfs.ocfs2 -R 'refcount /T' '$IMG' | grep -q 'Flags: 0x2'"
check "fsck clean with a tree of leaves" fsck_clean "$IMG"
run_check "remount" fsd_mount "$IMG" "$MNT"
check "U read back" cmp "$MNT/U" "$D/u.model"
rm "$MNT/T" "$MNT/U"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean after both went" fsck_clean "$IMG"
run_check "remount" fsd_mount "$IMG" "$MNT"
check_eq "every cluster is free again" "$FREE0" "$(free_blocks "$MNT")"
run_check "unmount" fsd_umount "$MNT"

echo "-- a crash inside o2ctl reflink"
mount_paused() { FSD_TEST_REFLINK_PAUSE=$D/rpause fsd_mount "$@"; }
run_check "mount (reflink crash point armed)" mount_paused "$IMG" "$MNT"
head -c $((8 << 20)) /dev/urandom >"$D/k.data"
cp "$D/k.data" "$MNT/K" && sync "$MNT/K"
setfattr -n user.big -v "0x$(head -c 2000 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$MNT/K"
run_check "unmount" fsd_umount "$MNT"
run_check "mount (armed again)" mount_paused "$IMG" "$MNT"
FREEK=$(free_blocks "$MNT")
touch "$D/rpause"
"$O2CTL" reflink "$MNT/K" "$MNT/KR" >/dev/null 2>&1 &
RL=$!
paused() { compgen -G "$D/rpause.*" >/dev/null; }
check "the reflink reaches the point before its name" wait_for 20 paused
check "... and the target has no name yet" test ! -e "$MNT/KR"
kill -9 "$FSD_PID"
wait "$FSD_PID" 2>/dev/null
wait "$RL"
check "o2ctl reports the failure" test $? -ne 0
umount -l "$MNT" 2>/dev/null
ORPH=$(basename "$(ls "$D"/rpause.* | head -n 1)")
ORPH=${ORPH#rpause.}
# the journal's images of the new inode's block (older ones may be of
# earlier inodes there), one a line: one is complete, an orphan without a link
debugfs.ocfs2 -R 'logdump 0' "$IMG" 2>/dev/null | awk -v ino="$ORPH" '
	$1 == "Inode:" { if (on) print img; on = $2 == ino; img = "" }
	on && /Flags:|Links:/ { img = img " " $0 }
	END { if (on) print img }' | tr -s ' \t' ' ' >"$D/orph"
check "the journal holds the new inode, an orphan with all 2048 clusters" \
    grep -q 'Flags: Valid Orphan Links: 0 Clusters: 2048' "$D/orph"
rm -f "$D/rpause" "$D"/rpause.*
run_check "mount after the kill (recovery)" fsd_mount "$IMG" "$MNT"
check "recovery deleted the orphan" grep -q "orphan_dir:0000: 1 inodes deleted" "$MNT.log"
check "no target after the crash" test ! -e "$MNT/KR"
check "the source is intact" cmp "$MNT/K" "$D/k.data"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean after the crash inside reflink" fsck_clean "$IMG"
run_check "mount" fsd_mount "$IMG" "$MNT"
check_eq "the orphan's space came back" "$FREEK" "$(free_blocks "$MNT")"
rm "$MNT/K"
run_check "unmount" fsd_umount "$MNT"

echo "-- a tree deeper than its root"
TREC=${FSD_REFCOUNT_TREE_RECORDS:-4000}
TBS=${FSD_REFCOUNT_TREE_BLOCK:-1024}
IMGT=$D/deep.img
check "mkfs ($TBS-byte blocks)" mkfs_img_size "$IMGT" $((TREC * 2 * CS * 3 / 1048576 + 64))M \
    -M local -b "$TBS" -C $CS
# clusters of the extent allocator: it grows for the tree's blocks, and
# ocfs2 never gives an allocator's groups back
ealloc() { debugfs.ocfs2 -R "stat //extent_alloc:0000" "$1" 2>/dev/null | sed -n 's/.*Clusters: \([0-9]*\).*/\1/p'; }
EA0=$(ealloc "$IMGT")
run_check "mount" fsd_mount "$IMGT" "$MNT"
sync "$MNT"
FREET=$(free_blocks "$MNT")
# X: written whole, then every other cluster punched: TREC clusters
# apart on disk, which no record can merge
python3 - "$MNT/X" "$TREC" $CS "$D/x.model" <<'EOF2'
import ctypes, os, sys
path, n, cs, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
m = bytearray(os.urandom((2 * n - 1) * cs))
os.pwrite(fd, m, 0)
os.fsync(fd)
for i in range(1, 2 * n - 1, 2):
    if libc.fallocate(fd, 3, i * cs, cs) != 0:  # PUNCH_HOLE | KEEP_SIZE
        sys.exit("punch: " + os.strerror(ctypes.get_errno()))
    m[i * cs:(i + 1) * cs] = bytes(cs)
os.fsync(fd)
open(model, 'wb').write(m)
EOF2
check "o2ctl reflink X Z ($TREC records)" "$O2CTL" reflink "$MNT/X" "$MNT/Z"
check "Z has X's bytes" cmp "$MNT/Z" "$D/x.model"
# cow FILE MODEL FIRST STEP: a byte into every STEP-th cluster from FIRST, in the file and its model
cow() {
	python3 - "$@" $CS <<'EOF2'
import os, sys
path, model, first, step, cs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
m = bytearray(open(model, 'rb').read())
fd = os.open(path, os.O_WRONLY)
for i in range(first, len(m) // cs, step):
    os.pwrite(fd, b'\x5a', i * cs + 9)
    m[i * cs + 9] = 0x5a
os.fsync(fd)
open(model, 'wb').write(m)
EOF2
}
cp "$D/x.model" "$D/z.model"
check "copy-on-write into every 4th cluster of Z" cow "$MNT/Z" "$D/z.model" 0 4
check "... and every 8th of X, from the 2nd" cow "$MNT/X" "$D/x.model" 2 8
check "X as its model" cmp "$MNT/X" "$D/x.model"
check "Z as its model" cmp "$MNT/Z" "$D/z.model"
run_check "unmount" fsd_umount "$MNT"
TROOT=$(refcount_loc "$IMGT" /X)
debugfs.ocfs2 -R "refcount <$TROOT>" "$IMGT" 2>/dev/null | head -8 >"$D/troot"
TLAST=$(sed -n 's/.*Last Leaf block: \([0-9]*\).*/\1/p' "$D/troot")
check "the root lists its leaves through extent blocks (last: ${TLAST:-none}, $(sed -n 's/.*Ref clusters: \([0-9]*\).*/\1/p' "$D/troot") leaves)" \
    bash -c "[[ ${TLAST:-0} -gt 0 ]] && debugfs.ocfs2 -R 'extent <$TLAST>' '$IMGT' | grep -q 'Tree Depth: 0'"
check "fsck clean with a deep tree" fsck_clean "$IMGT"
run_check "remount" fsd_mount "$IMGT" "$MNT"
check "X as its model after the remount" cmp "$MNT/X" "$D/x.model"
check "Z as its model after the remount" cmp "$MNT/Z" "$D/z.model"
rm "$MNT/X"
run_check "unmount with X deleted" fsd_umount "$MNT"
check "fsck clean with Z alone" fsck_clean "$IMGT"
run_check "remount" fsd_mount "$IMGT" "$MNT"
check "Z intact after X went" cmp "$MNT/Z" "$D/z.model"
rm "$MNT/Z"
run_check "unmount with both deleted" fsd_umount "$MNT"
check "fsck clean after both went" fsck_clean "$IMGT"
EGROW=$(($(ealloc "$IMGT") - EA0))
run_check "remount" fsd_mount "$IMGT" "$MNT"
check_eq "every cluster and block is free again (but the extent allocator's $EGROW new clusters)" \
    "$((FREET - EGROW * CS / $(stat -f -c %S "$MNT")))" "$(free_blocks "$MNT")"
run_check "unmount" fsd_umount "$MNT"

echo "-- more freed runs at once than the truncate log holds"
# 1 KiB blocks: the truncate log holds some 100 runs; deleting the
# source of a copy written every other cluster frees 200 runs
IMGS=$D/small.img
check "mkfs (1 KiB blocks)" mkfs_img_size "$IMGS" 64M -M local -b 1024 -C $CS
run_check "mount" fsd_mount "$IMGS" "$MNT"
head -c $((400 * CS)) /dev/urandom >"$MNT/P"
sync "$MNT/P"
"$O2CTL" reflink "$MNT/P" "$MNT/Q"
python3 - "$MNT/Q" $CS <<'EOF'
import os, sys
fd, cs = os.open(sys.argv[1], os.O_WRONLY), int(sys.argv[2])
for i in range(0, 400, 2):
    os.pwrite(fd, b'\xee', i * cs)
os.fsync(fd)
EOF
sync "$MNT"
FREEQ=$(free_blocks "$MNT")
rm "$MNT/P"
check "deleting the source frees its 200 runs (in several handles)" \
    wait_for 20 freed_since "$FREEQ" $((200 * CS))
check "punching the copy whole frees the rest" timeout 20 fallocate -p -o 0 -l $((400 * CS)) "$MNT/Q"
run_check "unmount" fsd_umount "$MNT"
check "fsck clean" fsck_clean "$IMGS"

echo "-- a damaged refcount block"
IMGC=$D/c.img
check "mkfs" mkfs_img_size "$IMGC" 64M -M local -b 4096 -C $CS
run_check "mount" fsd_mount "$IMGC" "$MNT"
head -c $((16 * CS)) /dev/urandom >"$D/f.data"
cp "$D/f.data" "$MNT/F" && sync "$MNT/F"
"$O2CTL" reflink "$MNT/F" "$MNT/G"
run_check "unmount" fsd_umount "$MNT"
RB=$(refcount_loc "$IMGC" /F)
poke "$IMGC" "$RB" 0 58	# the signature's first byte
run_check "mount with the refcount root damaged" fsd_mount "$IMGC" "$MNT"
check "the shared file still reads whole" cmp "$MNT/G" "$D/f.data"
expect_error "a write into a shared cluster fails with EIO" "Input/output error" \
    dd if=/dev/zero of="$MNT/G" bs=$CS count=1 conv=notrunc,fsync status=none
check "fsd logged the block and why" grep -q "corrupt metadata at block $RB: bad signature" "$MNT.log"
check "... and the source is unchanged" cmp "$MNT/F" "$D/f.data"
expect_error "then writes are refused, as after any corruption" "Read-only file system" \
    touch "$MNT/H"
run_check "unmount" fsd_umount "$MNT"

echo "-- crashes during copy-on-write and during tree growth"
# writer FILE STEP LIST: a byte pattern into every STEP-th cluster, each
# fsync'ed and then listed; runs until killed.
writer() {
	python3 - "$1" "$2" "$3" $CS <<'EOF'
import os, sys
path, step, lst, cs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
fd = os.open(path, os.O_WRONLY)
size = os.fstat(fd).st_size
with open(lst, 'a') as out:
    i = 0
    while i * cs < size:
        os.pwrite(fd, bytes([i % 251 + 1]) * 512, i * cs + 100)
        os.fsync(fd)
        out.write("%d\n" % i)
        out.flush()
        i += step
EOF
}
# listed LIST N: the writer listed N writes at least.
listed() { [[ $(wc -l <"$1") -ge $2 ]]; }
# verify_writes FILE LIST SRC: listed clusters carry their pattern, others SRC's bytes.
verify_writes() {
	python3 - "$1" "$2" "$3" $CS <<'EOF'
import sys
data, src, cs = open(sys.argv[1], 'rb').read(), open(sys.argv[3], 'rb').read(), int(sys.argv[4])
done = {int(l) for l in open(sys.argv[2])}
for i in range(len(src) // cs):
    piece = data[i * cs:(i + 1) * cs]
    if i in done:
        want = src[i * cs:i * cs + 100] + bytes([i % 251 + 1]) * 512 + src[i * cs + 612:(i + 1) * cs]
        if piece != want:
            sys.exit("cluster %d lost its fsync'ed write" % i)
    elif piece != src[i * cs:(i + 1) * cs] and (piece[:100] + piece[612:]) != (src[i * cs:i * cs + 100] + src[i * cs + 612:(i + 1) * cs]):
        sys.exit("cluster %d damaged" % i)
print(len(done), "fsync'ed writes")
EOF
}
head -c $((1200 * CS)) /dev/urandom >"$D/s.data"
for round in $(seq 1 "$ROUNDS"); do
	for what in "copy-on-write:1" "tree growth:2"; do
		name=${what%%:*}
		step=${what##*:}
		run_check "mount ($name, round $round)" fsd_mount "$IMG" "$MNT" -o commit=1
		rm -f "$MNT/S" "$MNT/R"
		cp "$D/s.data" "$MNT/S" && sync "$MNT/S"
		"$O2CTL" reflink "$MNT/S" "$MNT/R"
		: >"$D/list"
		writer "$MNT/R" "$step" "$D/list" >/dev/null 2>&1 &
		WL=$!
		# the tree's root overflows after some 120 writes every other cluster
		wait_for 15 listed "$D/list" $((step == 1 ? 20 : 130))
		sleep "0.$((RANDOM % 9 + 1))"
		kill -9 "$FSD_PID"
		wait "$FSD_PID" 2>/dev/null
		wait "$WL" 2>/dev/null
		umount -l "$MNT" 2>/dev/null
		run_check "mount after the kill during $name" fsd_mount "$IMG" "$MNT"
		check "every fsync'ed write into the copy survived ($name)" \
		    verify_writes "$MNT/R" "$D/list" "$D/s.data"
		check "the source is untouched ($name)" cmp "$MNT/S" "$D/s.data"
		run_check "clean unmount" fsd_umount "$MNT"
		check "fsck clean after the kill during $name" fsck_clean "$IMG"
		[[ $step == 2 ]] && check "the tree had grown leaves" \
		    bash -c "debugfs.ocfs2 -R 'refcount /S' '$IMG' | grep -q 'Flags: 0x2'"
	done
done

echo "-- two nodes"
lc_setup
trap 'cluster_cleanup 2 fsd' EXIT
IMG2=$D/shared.img
check "mkfs (cluster, default feature level)" mkfs_img "$IMG2" --cluster-stack=o2cb \
    --cluster-name=lc -N 2 -b 4096 -C $CS -J size=8M
if ! lc up 2 --image "$IMG2" --hb-interval-ms 200 --dead-threshold 20 >/dev/null; then
	fail "localcluster up 2"
	finish
	exit 1
fi
declare -a M=()
for k in 1 2; do run_check "node$k mounts" node_mount "$k"; done
head -c $((4 << 20)) /dev/urandom >"$D/src.data"
cp "$D/src.data" "${M[1]}/src" && sync "${M[1]}/src"
# node2 reads the source over and over while node1 reflinks it
python3 - "${M[2]}/src" "$D/src.data" "$D/reader.out" <<'EOF' &
import os, sys, time
want = open(sys.argv[2], 'rb').read()
reads, end = 0, time.time() + 2
while time.time() < end:
    with open(sys.argv[1], 'rb') as f:
        if f.read() != want:
            open(sys.argv[3], 'w').write("bad read after %d\n" % reads)
            sys.exit(1)
    reads += 1
open(sys.argv[3], 'w').write("ok %d\n" % reads)
EOF
RD=$!
ok=0
for i in 1 2 3; do
	lc exec 1 "$O2CTL" reflink "${M[1]}/src" "${M[1]}/copy$i" && ok=$((ok + 1))
done
check_eq "node1 reflinks the source three times" 3 "$ok"
wait "$RD"
check "node2 read the source whole meanwhile ($(cat "$D/reader.out" 2>/dev/null))" \
    grep -q '^ok' "$D/reader.out"
check "node2 reads node1's copy" cmp "${M[2]}/copy1" "$D/src.data"
# each node writes its own copy: copy-on-write on both under the tree's 'T' lock
cp "$D/src.data" "$D/copy1.model"
cp "$D/src.data" "$D/copy2.model"
cat >"$D/cow_writer.py" <<'EOF'
import os, random, sys
rnd = random.Random(int(sys.argv[3]))
fd, md = os.open(sys.argv[1], os.O_WRONLY), os.open(sys.argv[2], os.O_WRONLY)
for _ in range(150):
    off, buf = rnd.randrange(4 << 20), rnd.randbytes(rnd.choice([10, 4096, 9000]))
    off = min(off, (4 << 20) - len(buf))
    os.pwrite(fd, buf, off)
    os.pwrite(md, buf, off)
os.fsync(fd)
EOF
python3 "$D/cow_writer.py" "${M[2]}/copy1" "$D/copy1.model" 11 &
PY_W2=$!
python3 "$D/cow_writer.py" "${M[1]}/copy2" "$D/copy2.model" 12
wait "$PY_W2" 2>/dev/null
check "node1 reads node2's writes into copy1" cmp "${M[1]}/copy1" "$D/copy1.model"
check "node2 reads node1's writes into copy2" cmp "${M[2]}/copy2" "$D/copy2.model"
check "the source is unchanged on node1" cmp "${M[1]}/src" "$D/src.data"
check "... and on node2" cmp "${M[2]}/src" "$D/src.data"
check "copy3 still shares the source's bytes" cmp "${M[2]}/copy3" "$D/src.data"
check "node2 deletes the source" rm "${M[2]}/src"
check "node1 still reads copy3 whole" cmp "${M[1]}/copy3" "$D/src.data"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean (two nodes)" fsck_clean "$IMG2"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"

finish
