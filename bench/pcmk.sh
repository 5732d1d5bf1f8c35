#!/usr/bin/env bash
# Node death to the survivors writing again: the pcmk stack (corosync's
# token timeout TOKEN_MS) beside o2cb (heartbeat every 200 ms, dead after
# 10), in one run. Three nodes mount; node3 writes and fsyncs a file, so
# that it holds its locks, and is killed (kill -9 of its daemons, corosync
# included, and fsd); the figure is the time from the kill until node1's
# append to that file returns (it waits for node3's recovery). Medians
# and maxima of --kills N kills per stack, and the ratio pcmk / o2cb.
# pcmk fences through tests/integration/pcmk_fence_agent before recovery.
# Before the kills, the DLM's EX ping-pong between node1 and node2 on each
# stack (bench/dlmd's client; medians of 5 rounds): dlmd's messages go
# over netd's links on both stacks, pcmk taking only membership, quorum
# and fencing from corosync (doc/pcmk-stack.md says why). Both clusters
# run in network namespaces (veth pairs), as corosync needs one each.
#   bench/pcmk.sh [--kills N] [--token-ms MS]      (defaults 5 and 1000)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"

KILLS=5
TOKEN_MS=1000
source "$TOP/bench/options.inc"
bench_options "bench/pcmk.sh [--kills N] [--token-ms MS]" kills token-ms -- "$@"
DLMCLIENT=$BUILD/bench/dlmd
[[ -x $DLMCLIENT ]] || { echo "pcmk bench: $DLMCLIENT missing (make bench builds it)"; exit 1; }
if ! command -v corosync >/dev/null; then
	echo "pcmk bench: corosync is not installed: nothing measured"
	exit 0
fi

export LOCALCLUSTER_DIR=/tmp/ocfs2-bench-pcmk-$$
export LOCALCLUSTER_TOKEN_MS=$TOKEN_MS
# fencing = agent: survivors recover only once the test's agent (a power
# switch that kills the node's processes) confirms, as in production
export LOCALCLUSTER_FENCE_AGENT=$TOP/tests/integration/pcmk_fence_agent
source "$TOP/bench/lib.inc" pcmk

# median and max (ms) of the numbers on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%d %d", v[int((NR + 1) / 2)], v[NR] }'; }

# deaths STACK UP-ARGS...: KILLS kills of node3, one time (ms) each into $W/STACK.
deaths() {
	local stack=$1 i m1 m3 t0
	shift
	lc up 3 "$@" >/dev/null || { echo "pcmk bench: $stack cluster did not come up"; return 1; }
	m1=$(lc mount 1) || return 1
	lc mount 2 >/dev/null || return 1
	: >"$W/$stack.pp"
	for ((i = 1; i <= 5; i++)); do
		dlm_pingpong "$DLMCLIENT" 1000 -1 -1 >>"$W/$stack.pp" ||
		    { echo "pcmk bench: DLM ping-pong failed on $stack"; return 1; }
	done
	: >"$W/$stack"
	for ((i = 1; i <= KILLS; i++)); do
		m3=$(lc mount 3 2>/dev/null) || return 1
		echo "$i" >"$m3/held" && sync "$m3/held"
		t0=$(date +%s%N)
		lc kill 3 >/dev/null
		echo "$i" >>"$m1/held"
		echo $((($(date +%s%N) - t0) / 1000000)) >>"$W/$stack"
		lc start 3 >/dev/null || return 1
	done
	lc down >/dev/null
}

deaths o2cb --netns --hb-interval-ms 200 --dead-threshold 10 || exit 1
deaths pcmk --netns --stack pcmk || exit 1
read -r om ox < <(stats <"$W/o2cb")
read -r pm px < <(stats <"$W/pcmk")
echo "kill -9 of a node to a survivor's write to its file returning ($KILLS kills each):"
echo "  o2cb, heartbeat 200 ms x 10: median $om ms, max $ox ms"
echo "  pcmk, corosync token $TOKEN_MS ms: median $pm ms, max $px ms"
awk -v p="$pm" -v o="$om" 'BEGIN { printf "  pcmk / o2cb (medians): %.2f\n", p / o }'
po=$(awk '{ print $1 }' "$W/o2cb.pp" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
pp=$(awk '{ print $1 }' "$W/pcmk.pp" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "DLM EX ping-pong node1 <-> node2 (dlmd over netd on both stacks, median of 5 x 1000):"
awk -v p="$pp" -v o="$po" 'BEGIN {
	printf "  o2cb %.0f us, pcmk %.0f us a handoff: pcmk / o2cb %.2f\n", o, p, p / o }'
