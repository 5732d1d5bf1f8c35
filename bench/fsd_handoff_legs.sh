#!/usr/bin/env bash
# The legs of one fsd write -> read handoff (doc/lock-handoff.md, "Where
# a handoff's time goes"): a two-node local cluster runs
# bench/fsd_cluster's ping-pong (node1 pwrites 4 KiB, node2 preads it)
# under `perf sched record`, and bench/handoff_legs.py times each leg
# from the wakeups that hand the handoff from thread to thread (fsd's,
# dlmd's, netd's, the clients'). Needs perf and the right to trace the
# scheduler (root): without them it says so and stops (exit 0, as `make
# bench` runs every script). Medians over the rounds; the figures include
# perf's own cost (the ping-pong's us per handoff is printed with and
# without it).
#   bench/fsd_handoff_legs.sh [--rounds N] [--mount-opts OPTS] [--lc-dir DIR] [--port PORT]
#   (defaults 200 rounds, a private state directory and a random port)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"

ROUNDS=200
MOUNT_OPTS=
LC_DIR=/tmp/ocfs2-bench-fsd-legs-$$
PORT=$((20000 + RANDOM % 20000))
source "$TOP/bench/options.inc"
bench_options "bench/fsd_handoff_legs.sh [--rounds N] [--mount-opts OPTS] [--lc-dir DIR] [--port PORT]" \
    rounds mount-opts lc-dir port -- "$@"
CLIENT=$BUILD/bench/fsd_cluster
[[ -x $CLIENT ]] || { echo "fsd_handoff_legs: $CLIENT missing (make bench builds it)"; exit 1; }
[[ ! -e $LC_DIR ]] || { echo "fsd_handoff_legs: $LC_DIR exists: choose another --lc-dir"; exit 1; }
export LOCALCLUSTER_DIR=$LC_DIR LOCALCLUSTER_PORT=$PORT
source "$TOP/bench/lib.inc" fsd-legs
die() { echo "fsd_handoff_legs: $*"; exit 1; }
if ! command -v perf >/dev/null || ! perf sched record -a -o "$W/probe" -- true >/dev/null 2>&1; then
	echo "fsd_handoff_legs: skipped: needs perf, allowed to record the scheduler (root)"
	exit 0
fi

lc up 2 >/dev/null || die "the cluster did not start"
M=()
for k in 1 2; do
	M[k]=$(lc mount "$k" ${MOUNT_OPTS:+-o "$MOUNT_OPTS"}) || die "node$k did not mount"
done
pid() { cat "$LC_DIR/node$1/pids/$2.pid"; }
pp() { "$CLIENT" pingpong "${M[1]}/legs" "${M[2]}/legs" "$1"; }
# the first rounds settle where each lock sits and how long it holds
pp 50 >/dev/null || die "the warm-up ping-pong failed"
plain=$(pp "$ROUNDS") || die "the ping-pong failed"
# Recording: longer than the ping-pong, stopped by SIGINT once it is done.
perf sched record -a -o "$W/sched.data" -- sleep 600 >"$W/perf.log" 2>&1 &
rec=$!
PIDS+=($rec)
sleep 1
traced=$(pp "$ROUNDS") || die "the traced ping-pong failed"
kill -INT "$rec"
wait "$rec" 2>/dev/null
[[ -s $W/sched.data ]] || die "perf recorded nothing: $(tail -n 3 "$W/perf.log")"
echo "fsd write -> other node read, $ROUNDS rounds${MOUNT_OPTS:+ (-o $MOUNT_OPTS)}: $plain us per handoff" \
    "($traced under perf); load average $(cut -d' ' -f1-3 /proc/loadavg)"
perf sched timehist -i "$W/sched.data" -w 2>/dev/null |
    python3 "$TOP/bench/handoff_legs.py" "$(pid 1 fsd)" "$(pid 1 dlmd)" "$(pid 1 netd)" \
    "$(pid 2 fsd)" "$(pid 2 dlmd)" "$(pid 2 netd)"
