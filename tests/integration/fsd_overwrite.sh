#!/usr/bin/env bash
# Overwrites inside a file, which go in place without a transaction while
# the file's times are of the current tick of the coarse clock
# (doc/overwrites.md). Alone on a volume, where they go through the
# host's page cache: random overwrites fsync'ed just before fsd is
# killed (-9) are all there after the remount. On two nodes of the local
# cluster: node2's 4 KiB overwrites are what node1 reads, block by block
# in turns; node1's stat sees the mtime and ctime of node2's latest
# write, of a later tick than the writes before it; a write fsync'ed on
# node2 just before its fsd is killed (-9) keeps its bytes and its times,
# as the survivor's recovery finds them. fsck.ocfs2 finds both volumes
# clean at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()

# scatter FILE MODEL: 300 overwrites of 4 KiB at random blocks of FILE
# (1 MiB), each of its own bytes, then fsync; MODEL gets what FILE holds.
scatter() {
	python3 - "$@" <<'EOF'
import os, random, sys
path, model = sys.argv[1], sys.argv[2]
random.seed(7)
want = bytearray(b"x" * (256 * 4096))
fd = os.open(path, os.O_WRONLY)
for i in range(300):
    blk = random.randrange(256)
    data = bytes([random.randrange(256)]) * 4096
    if os.pwrite(fd, data, blk * 4096) != 4096:
        sys.exit("short write")
    want[blk * 4096:(blk + 1) * 4096] = data
os.fsync(fd)
os.close(fd)
with open(model, "wb") as f:
    f.write(want)
EOF
}

echo "-- alone: kill -9 after fsync"
L=$FSD_DIR/local
check "mkfs (local, 4K blocks)" mkfs_img "$FSD_DIR/local.img" -M local -b 4096 -C 4096
run_check "fsd mounts it" fsd_mount "$FSD_DIR/local.img" "$L"
head -c $((256 * 4096)) /dev/zero | tr '\0' x >"$L/f"
check "a 1 MiB file, fsync'ed" sync "$L/f"
check "300 random overwrites, fsync'ed" scatter "$L/f" "$FSD_DIR/model"
{ kill -9 "$FSD_PID" && wait "$FSD_PID"; } 2>/dev/null
umount -l "$L" 2>/dev/null
run_check "fsd mounts it again (replaying the journal)" fsd_mount "$FSD_DIR/local.img" "$L"
check "every fsync'ed overwrite is there" cmp "$L/f" "$FSD_DIR/model"
run_check "fsd unmounts" fsd_umount "$L"
check "fsck.ocfs2 -fn finds that volume clean" fsck_clean "$FSD_DIR/local.img"

echo "-- two nodes"
mount_two

# ow FILE BLOCK BYTE [fsync]: 4 KiB of BYTE over block BLOCK of FILE, in a
# tick of the coarse clock after the one it started in; prints the start
# of the write's tick (ns): its mtime and ctime may be no older.
ow() {
	python3 - "$@" <<'EOF'
import os, sys, time
path, blk, byte = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
# CLOCK_REALTIME_COARSE, 5 in <linux/time.h>: Python does not name it
coarse = lambda: time.clock_gettime_ns(5)
t = coarse()
while coarse() == t:
    time.sleep(0.001)
fd = os.open(path, os.O_WRONLY)
tick = coarse()
if os.pwrite(fd, byte * 4096, blk * 4096) != 4096:
    sys.exit("short write")
if len(sys.argv) > 4:
    os.fsync(fd)
os.close(fd)
print(tick)
EOF
}
# block_is FILE BLOCK BYTE: block BLOCK of FILE holds BYTE only.
block_is() {
	local got
	got=$(dd if="$1" bs=4096 skip="$2" count=1 status=none | tr -d "$3" | wc -c)
	[[ $got == 0 ]] || { echo "block $2: $got bytes are not $3"; return 1; }
}
# times_since FILE NS: FILE's mtime and ctime are NS or later.
times_since() {
	python3 -c '
import os, sys
st = os.stat(sys.argv[1])
t = int(sys.argv[2])
if st.st_mtime_ns < t or st.st_ctime_ns < t:
    sys.exit(f"mtime {st.st_mtime_ns}, ctime {st.st_ctime_ns}, write at {t}")' "$1" "$2"
}
# recoveries: the slots node1's fsd recovered so far.
recoveries() { grep -c 'slot [0-9]* recovered' "$LOCALCLUSTER_DIR/node1/log/fsd.log"; }
# turns: node2 overwrites a block, node1 reads it, 16 times.
turns() {
	local k b
	for k in $(seq 0 15); do
		b=$(printf "\\x$(printf %x $((97 + k)))")
		ow "${M[2]}/f" $(((k * 7) % 64)) "$b" >/dev/null || return 1
		block_is "${M[1]}/f" $(((k * 7) % 64)) "$b" || return 1
	done
}

head -c $((64 * 4096)) /dev/zero | tr '\0' x >"${M[1]}/f"
check "node1 writes a 256 KiB file" sync "${M[1]}/f"

echo "-- overwrites in turns"
check "node1 reads each of node2's overwrites" turns
check "the rest of the file is as node1 wrote it" block_is "${M[1]}/f" 1 x
t=$(ow "${M[2]}/f" 9 m)
check "node1's stat shows the times of node2's latest write" times_since "${M[1]}/f" "$t"
check "node1 reads that write" block_is "${M[1]}/f" 9 m

echo "-- kill -9 after fsync"
r0=$(recoveries)
t=$(ow "${M[2]}/f" 5 z fsync)
lc kill 2 >/dev/null
check "node1 recovers node2's slot" wait_for 20 sh -c "test \$(grep -c 'slot [0-9]* recovered' \
    '$LOCALCLUSTER_DIR/node1/log/fsd.log') -gt $r0"
check "the fsync'ed overwrite survives" block_is "${M[1]}/f" 5 z
check "... and so do its times" times_since "${M[1]}/f" "$t"
check_eq "the file keeps its size" $((64 * 4096)) "$(stat -c %s "${M[1]}/f")"

echo "-- end"
check "node1 unmounts" lc umount 1
# fsck wants no heartbeat on the volume: node2 mounts and leaves cleanly
lc start 2 >/dev/null
run_check "node2 mounts again" node_mount 2
check "node2 unmounts" lc umount 2
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no fsd reported a sanitizer error or a crash" sh -c \
    "! grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer' '$LOCALCLUSTER_DIR'/node*/log/fsd.log"
finish
