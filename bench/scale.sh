#!/usr/bin/env bash
# Scale, in one run:
#  - NODES nodes (default 16) of a local cluster on this machine, every
#    daemon of every node, fsd mounted on each (heartbeat 500 ms, dead
#    threshold 20: 16 nodes' daemons share two cores): seconds to form
#    (localcluster up) and to mount everywhere; then a round of metadata
#    work on every node at once (each creates FILES files in a directory
#    of its own, then lists and stats the next node's), in seconds and
#    operations/s; then the last node is killed while it holds a file
#    open with fsync'ed data, and the ms until node1 appends to that file
#    (its journal recovered) are reported beside the dead threshold's
#    time; resident memory (VmRSS) of each daemon, median and largest
#    over the nodes.
#  - a volume of SIZE (default 16 TiB less 1 MiB: the 2^32 - 256 clusters
#    of 4 KiB are OCFS2's most) in a sparse image: mkfs.ocfs2's time
#    (for reference), fsd's mount time, its resident memory after the
#    mount and after writing 256 MiB and 2,000 files. fsck.ocfs2 cannot
#    judge at this size: it reports chain loops and wrong chain counts on
#    a volume fresh from mkfs.ocfs2 (ocfs2-tools 1.8.7), so its counts of
#    problem lines before and after fsd wrote are only reported.
#   bench/scale.sh [--nodes N] [--files N] [--size SIZE] [--no-volume] [--no-cluster]
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"

NODES=16
FILES=200
SIZE=$((16 * 1024 * 1024 * 1024 * 1024 - 1024 * 1024))
VOLUME=1
CLUSTER=1
usage() {
	echo "usage: bench/scale.sh [--nodes N] [--files N] [--size BYTES] [--no-volume] [--no-cluster]" >&2
	exit 2
}
while [[ $# -gt 0 ]]; do
	case $1 in
	--nodes) NODES=$2; shift 2 ;;
	--files) FILES=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--no-volume) VOLUME=0; shift ;;
	--no-cluster) CLUSTER=0; shift ;;
	*) usage ;;
	esac
done
export LOCALCLUSTER_DIR=/tmp/ocfs2-bench-scale-$$
export LOCALCLUSTER_PORT=$((20000 + RANDOM % 20000))
source "$TOP/bench/lib.inc" scale
FSD_PID=
MNT=$W/mnt
scale_cleanup() {
	if [[ -n $FSD_PID ]]; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
		kill "$FSD_PID" 2>/dev/null
	fi
	bench_cleanup
}
trap scale_cleanup EXIT
die() { echo "scale bench: $*"; exit 1; }
ms_since() { echo $(((${EPOCHREALTIME//[.,]/} - $1) / 1000)); }
now() { echo "${EPOCHREALTIME//[.,]/}"; }

# rss_kb PID: its resident memory
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null; }

# median_max: of the numbers on stdin, "median largest"
median_max() { sort -n | awk '{ v[NR] = $1 } END { printf "%d %d\n", v[int((NR + 1) / 2)], v[NR] }'; }

cluster_scale() {
	local k t0 d pid n ops secs recovered dead_ms
	local -a M=()
	echo "-- $NODES nodes"
	t0=$(now)
	lc up "$NODES" --size 4G --hb-interval-ms 500 --dead-threshold 20 >"$W/up.log" 2>&1 ||
	    die "localcluster up $NODES failed: $(tail -n 5 "$W/up.log")"
	echo "formed in $(ms_since "$t0") ms"
	t0=$(now)
	for ((k = 1; k <= NODES; k++)); do
		M[k]=$(lc mount "$k") || die "node$k did not mount: $(lc log "$k" fsd | tail -n 5)"
	done
	echo "mounted on all $NODES nodes in $(ms_since "$t0") ms"
	for ((k = 1; k <= NODES; k++)); do mkdir "${M[k]}/d$k" || die "mkdir on node$k"; done
	t0=$(now)
	for ((k = 1; k <= NODES; k++)); do
		(
			cd "${M[k]}/d$k" || exit 1
			for ((i = 0; i < FILES; i++)); do : >"f$i" || exit 1; done
		) &
		PIDS+=($!)
	done
	wait "${PIDS[@]}" || die "creates failed"
	PIDS=()
	for ((k = 1; k <= NODES; k++)); do
		n=$((k % NODES + 1))
		(
			[[ $(ls -l "${M[k]}/d$n" | grep -c ' f[0-9]') -eq $FILES ]]
		) &
		PIDS+=($!)
	done
	wait "${PIDS[@]}" || die "a node did not see the next node's $FILES files"
	PIDS=()
	secs=$(ms_since "$t0")
	ops=$((NODES * FILES * 2))
	echo "metadata: $NODES nodes x $FILES creates, then each lists and stats the next node's:" \
	    "$secs ms, $((ops * 1000 / (secs > 0 ? secs : 1))) ops/s"
	echo "resident memory per node, median and largest (kB):"
	for d in nmd hbd netd dlmd fsd; do
		for ((k = 1; k <= NODES; k++)); do
			pid=$(cat "$LOCALCLUSTER_DIR/node$k/pids/$d.pid" 2>/dev/null) && rss_kb "$pid"
		done | median_max | awk -v d="$d" '{ printf "  %-5s %7d %7d\n", d, $1, $2 }'
	done
	# the last node dies holding a file open with fsync'ed data
	python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"before the crash\n")
os.fsync(fd)
print("ready", flush=True)
time.sleep(3600)' "${M[NODES]}/held" >"$W/holder" 2>&1 &
	PIDS+=($!)
	wait_for 20 grep -q ready "$W/holder" || die "the holder did not start: $(cat "$W/holder")"
	t0=$(now)
	lc kill "$NODES" >/dev/null 2>&1 || die "localcluster kill $NODES failed"
	until echo after >>"${M[1]}/held" 2>/dev/null; do
		(($(ms_since "$t0") < 120000)) || die "node1 could not write the dead node's file in 120 s"
		sleep 0.05
	done
	dead_ms=$(ms_since "$t0")
	grep -q "before the crash" "${M[1]}/held" || die "the dead node's fsync'ed data is gone"
	recovered=$(lc log 1 fsd | grep -c "recovered" || true)
	echo "node$NODES killed: node1 appends to its open file after $dead_ms ms" \
	    "(dead threshold: $((20 * 500)) ms; node1's fsd logged $recovered recoveries)"
	for ((k = 1; k < NODES; k++)); do lc umount "$k" >/dev/null 2>&1 || die "node$k unmount failed"; done
	lc down >/dev/null 2>&1
	PIDS=()
}

volume_scale() {
	local img=$W/big.img t0 fsck0 fsck1
	echo "-- a volume of $((SIZE >> 30)) GiB"
	truncate -s "$SIZE" "$img" || die "no sparse image of $SIZE bytes here"
	t0=$(now)
	mkfs.ocfs2 -q -F -N 4 -M local "$img" </dev/null >"$W/mkfs.log" 2>&1 ||
	    die "mkfs.ocfs2 failed: $(tail -n 5 "$W/mkfs.log")"
	echo "mkfs.ocfs2: $(ms_since "$t0") ms"
	fsck0=$(fsck.ocfs2 -fn "$img" 2>&1 | grep -c '^\[')
	mkdir -p "$MNT"
	t0=$(now)
	"$BUILD/fsd" -o nocluster "$img" "$MNT" >"$W/fsd.log" 2>&1 &
	FSD_PID=$!
	until mountpoint -q "$MNT"; do
		kill -0 "$FSD_PID" 2>/dev/null || die "fsd exited: $(tail -n 5 "$W/fsd.log")"
		sleep 0.01
	done
	echo "fsd mounted it in $(ms_since "$t0") ms, resident $(rss_kb "$FSD_PID") kB"
	dd if=/dev/zero of="$MNT/data" bs=1M count=256 conv=fsync status=none || die "writing 256 MiB failed"
	mkdir "$MNT/d" && (cd "$MNT/d" && for ((i = 0; i < 2000; i++)); do echo "$i" >"f$i" || exit 1; done) ||
	    die "creating 2,000 files failed"
	echo "after 256 MiB and 2,000 files: resident $(rss_kb "$FSD_PID") kB; df: $(df -h --output=size,used "$MNT" | tail -n 1)"
	umount "$MNT" || die "unmount failed"
	wait "$FSD_PID"
	FSD_PID=
	fsck1=$(fsck.ocfs2 -fn "$img" 2>&1 | grep -c '^\[')
	echo "fsck.ocfs2 -fn problem lines: $fsck0 fresh from mkfs.ocfs2, $fsck1 after fsd"
	rm -f "$img"
}

rc=0
((CLUSTER == 0)) || cluster_scale || rc=1
((VOLUME == 0)) || volume_scale || rc=1
exit $rc
