#!/usr/bin/env bash
# dlmd's lvb_torture: clients on three nodes take EX on one resource,
# read a counter from its LVB, increment it and write it back, while PR
# readers check it never goes back or tears. The counter must equal the
# acknowledged increments and no two EX holds may overlap, also when a
# whole node dies (the counter's master), when dlmd alone dies, and when
# a client dies, in the middle of it all.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"

lc_setup
TORTURE=$BUILD/progs/dlm_torture
OUT=$(mktemp -d /tmp/dlmd_torture.XXXXXX)
KEEPERS=()
cleanup() {
	local p
	for p in "${KEEPERS[@]}" "${CLIENTS[@]}"; do kill "$p" 2>/dev/null; done
	lc down >/dev/null 2>&1 || true
	rm -rf "$OUT"
}
trap cleanup EXIT

N=3
DOM=tort

# keep K: a client on node K holding NL on the counter, so that the
# domain and the counter's resource outlive the phases' clients.
keep() {
	local f=$OUT/keep-$1.${#KEEPERS[@]}

	lc exec "$1" "$TORTURE" --mode keep -d "$DOM" -l counter >"$f" 2>&1 &
	KEEPERS+=($!)
	if wait_for 30 grep -q holding "$f"; then
		pass "node$1 keeps the counter"
	else
		fail "node$1 keeps the counter"
	fi
}

# node_up K: start node K's heartbeat and wait until it is linked to all.
node_up() {
	hb_start "$1" || return 1
	wait_for 15 mesh_up "$N"
}

# clients PHASE ITER: two EX clients and one PR reader on every live node.
CLIENTS=()
clients() {
	local phase=$1 iter=$2 k c
	CLIENTS=()
	for k in "${LIVE[@]}"; do
		for c in a b; do
			lc exec "$k" "$TORTURE" --mode incr -i "$iter" -d "$DOM" -l counter \
			    --convert --timeout 30 --id "$phase-$k$c" \
			    --log "$OUT/$phase-$k$c.log" >"$OUT/$phase-$k$c.out" 2>&1 &
			CLIENTS+=($!)
		done
		lc exec "$k" "$TORTURE" --mode read -i "$iter" -d "$DOM" -l counter \
		    --timeout 30 --id "$phase-${k}r" --log "$OUT/$phase-${k}r.log" \
		    >"$OUT/$phase-${k}r.out" 2>&1 &
		CLIENTS+=($!)
	done
}

wait_clients() {
	local p
	for p in "${CLIENTS[@]}"; do wait "$p" 2>/dev/null; done
}

counter() { lc exec "$1" "$TORTURE" --mode print -d "$DOM" -l counter 2>/dev/null; }
acked() { cat "$OUT"/*.log | grep -c '^ack '; }

# no_overlap: no two EX grant intervals, of every client so far, overlap.
no_overlap() {
	cat "$OUT"/*.log | awk '/^grant / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["start"], v["end"] }' | sort -n |
	    awk 'NR > 1 && $1 < end { bad++ } { end = $2 } END { exit bad > 0 }'
}

# readers_ok PHASE: the PR readers never saw a value go back or tear.
readers_ok() { ! grep -hE '^error .*what=(torn|backwards|no_lvb)' "$OUT/$1"-*r.log; }

# survivors_done PHASE ITER K...: every client of those nodes did all.
survivors_done() {
	local phase=$1 iter=$2 k c
	shift 2
	for k in "$@"; do
		for c in a b; do
			grep -q "^$phase-$k$c: $iter increments acknowledged" \
			    "$OUT/$phase-$k$c.out" || { cat "$OUT/$phase-$k$c.out"; return 1; }
		done
	done
}

# final_between LO HI: the counter as node 1 reads it.
final_between() {
	local v
	v=$(counter 1)
	[[ $v =~ ^[0-9]+$ ]] && ((v >= $1 && v <= $2))
}

echo "-- setup: 3 nodes, heartbeat, links, a keeper on each"
netd_up "$N" || { fail "localcluster up $N"; finish; exit 1; }
LIVE=(1 2 3)
for k in "${LIVE[@]}"; do node_up "$k"; done
check "every node linked to every other" mesh_up "$N"
for k in "${LIVE[@]}"; do keep "$k"; done
# node3 increments first: it masters the counter.
check "node3 primes the counter" lc exec 3 "$TORTURE" --mode incr -i 1 -d "$DOM" \
    -l counter --convert --id prime --log "$OUT/prime.log"

echo "-- 3 nodes x (2 EX clients + 1 PR reader), 500 rounds each"
clients quiet 500
wait_clients
check "every client did its 500 increments" survivors_done quiet 500 1 2 3
check_eq "counter equals the acknowledged increments" "$(acked)" "$(counter 1)"
check "no two EX holds overlapped" no_overlap
check "readers saw no value go back or tear" readers_ok quiet

echo "-- kill -9 of node3, the counter's master, mid-torture"
clients nodekill 3000
sleep 0.5
lc kill 3 >/dev/null
LIVE=(1 2)
wait_clients
check "node1 and node2 clients finished all 3000" survivors_done nodekill 3000 1 2
killed=2
check "counter is the acknowledged increments (+ one in flight per killed client)" \
    final_between "$(acked)" "$(($(acked) + killed))"
check "no two EX holds overlapped" no_overlap
check "readers saw no value go back or tear" readers_ok nodekill
check "node1 recovered node3's locks" grep -q 'node 3 recovered' \
    "$LOCALCLUSTER_DIR/node1/log/dlmd.log"
base=$(counter 1)

echo "-- node3 back; kill -9 of dlmd alone on node2 mid-torture"
lc start 3 >/dev/null && node_up 3
keep 3
LIVE=(1 2 3)
check "node3 rejoins the domain" lc exec 3 "$BUILD/o2lock" -d "$DOM" -w 20 probe true
mark=$(acked)
clients dlmdkill 3000
sleep 0.5
kill -9 "$(cat "$LOCALCLUSTER_DIR/node2/pids/dlmd.pid")"
LIVE=(1 3)
wait_clients
check "node1 and node3 clients finished all 3000" survivors_done dlmdkill 3000 1 3
check "hbd on node2 restarted its incarnation" grep -q 'went away holding cluster locks' \
    "$LOCALCLUSTER_DIR/node2/log/hbd.log"
check "counter is the acknowledged increments (+ one in flight per killed client)" \
    final_between "$(acked)" "$(($(acked) + killed + 2))"
check "no two EX holds overlapped" no_overlap
lc start 2 >/dev/null
check "node2's restarted dlmd joins the domain again" wait_for 30 \
    lc exec 2 "$BUILD/o2lock" -d "$DOM" -n probe true
keep 2

echo "-- kill -9 of one client mid-torture"
LIVE=(1 2 3)
clients clientkill 1000
sleep 0.3
victim=$(pgrep -f -- "--id clientkill-1a" | head -n 1)
[[ -n $victim ]] && kill -9 "$victim"
wait_clients
check "the other clients finished" survivors_done clientkill 1000 2 3
check "counter is the acknowledged increments (+ one in flight per killed client)" \
    final_between "$(acked)" "$(($(acked) + killed + 3))"
check "no two EX holds overlapped" no_overlap
check "readers saw no value go back or tear" readers_ok clientkill

finish
