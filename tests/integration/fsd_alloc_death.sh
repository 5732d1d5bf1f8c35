#!/usr/bin/env bash
# A node killed (lc kill: every daemon and its fsd at once) while all
# three nodes allocate hard must not stop the others: they write again
# within seconds of its recovery. The global bitmap is fragmented first
# (no free run of a whole group left, no discontig-bg), so that node2 and
# node3, whose slots have no inode group yet, steal every inode from
# node1's slot (doc/allocation.md): node3 dies holding, or waiting for,
# the lock of node1's inode allocator. On each node workers create,
# append to (fsync'ed) and unlink files, and an ackwriter
# (tests/progs/ackwriter.c) logs its acknowledged records. After the
# kill: node1 and node2 acknowledge new records within a bounded time,
# no worker of theirs saw an error, every record acknowledged by any node
# (node3 too) is there, and fsck.ocfs2 -fn is clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

D=$FSD_DIR
IMG=$D/shared.img
M=()
N=3
ACKW=$BUILD/progs/ackwriter
ACKS=$D/acks
LOAD_S=${FSD_ALLOC_DEATH_LOAD_S:-4}	# of load before the kill, and after the recovery
WORKERS=${FSD_ALLOC_DEATH_WORKERS:-4}	# per node
mkdir -p "$ACKS"

# churn DIR ERRLOG: WORKERS processes create a file, append 4 KiB to it
# and fsync, and unlink the one made 8 steps before, until SIGTERM; each
# failed call is a line "CALL ERROR" in ERRLOG.
churn() {
	python3 - "$1" "$2" "$WORKERS" <<'EOF' &
import os, signal, sys
d, errlog, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
def work(w):
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    log = open(errlog, "a", buffering=1)
    block, i = b"x" * 4096, 0
    while True:
        f = os.path.join(d, "w%d.%d" % (w, i))
        try:
            fd = os.open(f, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
            os.write(fd, block)
            os.fsync(fd)
            os.close(fd)
            if i >= 8:
                os.unlink(os.path.join(d, "w%d.%d" % (w, i - 8)))
        except OSError as e:
            log.write("%s %s\n" % (f, e.strerror))
        i += 1
kids = []
for w in range(workers):
    pid = os.fork()
    if pid == 0:
        work(w)
    kids.append(pid)
def stop(*_):
    for k in kids:
        os.kill(k, signal.SIGTERM)
signal.signal(signal.SIGTERM, stop)
for k in kids:
    os.waitpid(k, 0)
EOF
	BG+=($!)
}

acked_by() { grep -c '^A ' "$ACKS/ack.node$1" 2>/dev/null; }
writes_on() { (($(acked_by "$1") > $2)); }
recovered() { lc log "$1" fsd | grep -c 'slot [0-9]* recovered'; }
recovered_by_one() { (($(recovered 1) + $(recovered 2) > $1)); }

check "mkfs (cluster, 3 slots, no discontig-bg)" mkfs_img_size "$IMG" 128M --cluster-stack=o2cb \
    --cluster-name=lc -N 3 -b 4096 -C 4096 -J size=4M --fs-feature-level=max-compat \
    --fs-features=sparse,unwritten
if ! lc up 3 --image "$IMG" --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
	fail "localcluster up 3"
	finish
	exit 1
fi
for k in 1 2 3; do run_check "node$k mounts" node_mount "$k"; done
note_dev 3

echo "-- node1 fragments the global bitmap"
mkdir "${M[1]}/frag"
pieces=$(fragment "${M[1]}/frag/small" "${M[1]}/frag/big")
check "node1 fills the volume with small and big pieces ($pieces)" test "$pieces" -gt 300
check "and removes the big pieces" rm "${M[1]}/frag/big"
check "the space comes back" wait_for 20 sh -c "test \$(df --output=pcent '${M[1]}' | tail -n 1 | tr -d ' %') -lt 40"

echo "-- three nodes allocate at once, $WORKERS workers and an ackwriter each"
for k in 1 2 3; do
	mkdir -p "${M[$k]}/n$k"
	[[ -d ${M[$k]}/acked ]] || mkdir -p "${M[$k]}/acked"
	: >"$D/errors.node$k"
done
for k in 1 2 3; do
	churn "${M[$k]}/n$k" "$D/errors.node$k"
	CHURN[$k]=${BG[-1]}
	"$ACKW" write "$k" "$N" "${M[$k]}/acked" "$ACKS/ack.node$k" 2>>"$D/writers.log" &
	BG+=($!)
	ACKER[$k]=$!
done
sleep "$LOAD_S"
for k in 1 2 3; do
	check "node$k acknowledges records under load" writes_on "$k" 0
done
check "node2 or node3 takes inodes from another slot" \
    grep -q "allocator is full: taking from slot" <(lc log 2 fsd; lc log 3 fsd)

echo "-- node3 killed"
before=$(($(recovered 1) + $(recovered 2)))
killed_at=$SECONDS
lc kill 3 >/dev/null
abort_mount 3	# its writers end even if the killed fsd is stuck on its own mount
kill "${CHURN[3]}" "${ACKER[3]}" 2>/dev/null
check "node1 or node2 recovers node3's slot" wait_for 30 recovered_by_one "$before"
a1=$(acked_by 1)
a2=$(acked_by 2)
check "node1 writes again after the recovery" wait_for 10 writes_on 1 "$a1"
check "node2 writes again after the recovery" wait_for 10 writes_on 2 "$a2"
echo "  both writing again $((SECONDS - killed_at)) s after the kill"
sleep "$LOAD_S"
a1=$(acked_by 1)
a2=$(acked_by 2)
check "node1 still writes" wait_for 10 writes_on 1 "$a1"
check "node2 still writes" wait_for 10 writes_on 2 "$a2"
bg_stop_all
check_eq "node1's workers saw no error" "" "$(head -n 5 "$D/errors.node1")"
check_eq "node2's workers saw no error" "" "$(head -n 5 "$D/errors.node2")"
check "every acknowledged record (node3's too) is on node1 and node2" \
    "$ACKW" check "$N" "$ACKS" "${M[1]}/acked" "${M[2]}/acked"
echo "  records acknowledged: node1 $(acked_by 1), node2 $(acked_by 2), node3 $(acked_by 3)"

echo "-- the volume"
lc umount 3 >/dev/null 2>&1	# the dead fsd's mount, which fsck.ocfs2 would stumble on
check "node2 unmounts" lc umount 2
check "node1 unmounts" lc umount 1
check "fsck clean" fsck_clean "$IMG"

finish
