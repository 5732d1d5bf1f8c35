#!/usr/bin/env bash
# dlmd against the network under it, on a real two-node local cluster:
# a new EX lock + unlock and a convert NL->EX->NL of a resource mastered
# on the client's node and of one mastered on the other node, and the
# handoff of EX between clients on the two nodes that hold it until a
# Bast (ping-pong). Each is timed against the raw TCP round trip between
# the nodes' addresses (netd_rtt's baseline) and netd's own round trip,
# measured in the same round; the ratios are medians of per-round ratios,
# ops/s is lock+unlock pairs, convert cycles, grants or round trips.
# Clients run unpinned, then node1's on CPU 0 and node2's on CPU 1; the
# daemons are never pinned.
#   bench/dlmd.sh [--rounds N]     (default 7)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
source "$TOP/tests/lib.sh"

ROUNDS=7
LOCAL_ITERS=2000	# of each local operation per round
REMOTE_ITERS=1000
GRANTS=1000		# per ping-pong client per round
TCP_ITERS=5000
NETD_ITERS=2000
source "$TOP/bench/options.inc"
bench_options "bench/dlmd.sh [--rounds N]" rounds -- "$@"
CLIENT=$BUILD/bench/dlmd
[[ -x $CLIENT ]] || { echo "dlmd bench: $CLIENT missing (make bench builds it)"; exit 1; }

export LOCALCLUSTER_DIR=/tmp/ocfs2-bench-dlmd-$$
export LOCALCLUSTER_PORT=$((20000 + RANDOM % 20000))
TCP_PORT=$((LOCALCLUSTER_PORT + 1))
source "$TOP/bench/lib.inc" dlmd
die() { echo "dlmd bench: $*"; exit 1; }

# Both nodes see both heartbeats and the link up.
both_up() {
	local k
	for k in 1 2; do
		"$O2CTL" --rundir "$(lc rundir $k)" --json status | jq -e \
		    '[.nodes[] | select(.heartbeat == "up" and (.link == "up" or .link == "self"))] | length == 2' \
		    >/dev/null || return 1
	done
}

lc up 2 --hb-interval-ms 200 --dead-threshold 10 >/dev/null || die "the cluster did not start"
for k in 1 2; do
	lc exec $k sh -c "\"$O2CTL\" heartbeat start \"\$OCFS2_IMAGE\"" >/dev/null ||
	    die "heartbeat did not start on node$k"
done
wait_for 30 both_up || die "the nodes never saw each other"
R1=$(lc rundir 1)
R2=$(lc rundir 2)

# bg NAME CMD...: start CMD with its output in $W/NAME, to be killed at exit.
bg() {
	local name=$1
	shift
	"$@" >"$W/$name" 2>&1 &
	PIDS+=($!)
}

# First touch masters "local" on node1 and "remote" on node2; the NL
# holders keep both resources (and both nodes in the domain) for the run.
bg hold1 "$CLIENT" hold "$R1" local
wait_for 30 grep -q ready "$W/hold1" || die "node1's holder: $(cat "$W/hold1")"
bg hold2 "$CLIENT" hold "$R2" remote
wait_for 30 grep -q ready "$W/hold2" || die "node2's holder: $(cat "$W/hold2")"


# netd_rtt CPU_A: us per round trip of 64 bytes through both netds to the
# net-echo on node2.
netd_rtt() {
	local pin=()
	[[ $1 -ge 0 ]] && pin=(taskset -c "$1")
	"${pin[@]}" "$O2CTL" --rundir "$R1" --json net-send 2 --count $NETD_ITERS --window 1 |
	    jq -e --argjson n $NETD_ITERS 'select(.ok == $n) | .seconds * 1e6 / $n'
}

# phase LABEL CPU_A CPU_B: ROUNDS rounds, one line of figures each in $W/LABEL.
phase() {
	local label=$1 ca=$2 cb=$3 pin=() r line v
	[[ $cb -ge 0 ]] && pin=(taskset -c "$cb")
	bg echo "${pin[@]}" "$O2CTL" --rundir "$R2" net-echo
	wait_for 10 grep -q echoing "$W/echo" || die "net-echo: $(cat "$W/echo")"
	: >"$W/$label"
	for ((r = 0; r < ROUNDS; r++)); do
		line=$("$CLIENT" ops "$R1" local $LOCAL_ITERS "$ca") || die "local ops failed"
		v=$("$CLIENT" ops "$R1" remote $REMOTE_ITERS "$ca") || die "remote ops failed"
		line+=" $v"
		v=$(dlm_pingpong "$CLIENT" "$GRANTS" "$ca" "$cb") || die "ping-pong failed"
		line+=" $v"
		v=$("$CLIENT" tcp $TCP_PORT $TCP_ITERS "$ca" "$cb") || die "TCP baseline failed"
		line+=" $v"
		v=$(netd_rtt "$ca") || die "netd round trip failed"
		echo "$line $v" >>"$W/$label"
	done
	kill "${PIDS[-1]}"
	wait "${PIDS[-1]}" 2>/dev/null
	unset 'PIDS[-1]'
}

# report TITLE FILE: medians of each column; ratios to the round's TCP (col 6) and netd (col 7).
report() {
	echo "$1"
	printf '  %-38s %9s %9s %7s %7s\n' "" "us/op" "ops/s" "x TCP" "x netd"
	awk '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return a[int((n + 1) / 2)]
	}
	{
		for (c = 1; c <= 7; c++) {
			v[c, NR] = $c; rt[c, NR] = $c / $6; rn[c, NR] = $c / $7
		}
	}
	END {
		split("local EX lock+unlock (master node1)|local convert NL->EX->NL|" \
		    "remote EX lock+unlock (master node2)|remote convert NL->EX->NL|" \
		    "EX ping-pong node1<->node2, per handoff|raw TCP round trip (baseline)|" \
		    "netd round trip", name, "|")
		for (c = 1; c <= 7; c++) {
			for (r = 1; r <= NR; r++) {
				x[r] = v[c, r]; y[r] = rt[c, r]; z[r] = rn[c, r]
			}
			m = med(x, NR)
			printf "  %-38s %9.1f %9.0f %7.2f %7.2f\n", name[c], m, 1e6 / m,
			    med(y, NR), med(z, NR)
		}
	}' "$2"
}

echo "dlmd on a two-node local cluster: median of $ROUNDS rounds ($LOCAL_ITERS local," \
    "$REMOTE_ITERS remote operations, $GRANTS grants per ping-pong client per round)"
phase unpinned -1 -1
report "clients unpinned:" "$W/unpinned"
if [[ $(nproc) -ge 2 ]]; then
	phase pinned 0 1
	report "clients pinned (node1's on CPU 0, node2's and the echoes on CPU 1):" "$W/pinned"
else
	echo "pinned: skipped, one CPU"
fi
