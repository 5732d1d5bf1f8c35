#!/usr/bin/env bash
# Self-fencing on a slow and on a failing disk: node3's I/O goes through
# an LD_PRELOAD shim; when its heartbeat write stalls or fails, node3
# kills its registered disk writers and fences itself before its peers
# declare it dead. Fenced, it stays out until the admin clears it; then
# it rejoins, links included, without a restart of its daemons.
# (With every node's disk stalled nobody fences, by netd's negotiation:
# hbd_nego.sh.)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

# Links are checked: a port of our own, as the netd tests pick theirs.

lc_setup
DIR=$LOCALCLUSTER_DIR
trap 'watch_stop_all; lc down >/dev/null 2>&1 || true' EXIT

check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
CTL=$DIR/iofault.ctl
: >"$CTL"
# start_shimmed: start node3's daemons that are not running, behind the shim.
start_shimmed() {
	LD_PRELOAD=$BUILD/tests/libiofault.so IOFAULT_PATH=$IMAGE IOFAULT_CTL=$CTL lc start 3
}
check "node3 restarted behind the fault shim" lc stop 3
start_shimmed >/dev/null
for k in 1 2 3; do check "node$k heartbeats" hb_start $k; done
check "node1 sees 1 2 3" wait_for 10 live_is 1 "1 2 3"

# fault_round NAME FAULT: inject FAULT on node3; it must fence before
# node1 and node2 call it dead; then clear the fault and the fence.
fault_round() {
	local name=$1 fault=$2 writer ev fenced_ms k down_ms
	for k in 1 2 3; do watch_start $k "$DIR/$name$k.json"; done
	lc exec 3 "$O2CTL" writer "test writer" sleep 600 &
	writer=$!
	check "$name: a disk writer registers on node3" \
	    wait_for 5 sh -c "$(printf '%q ' "$LOCALCLUSTER" exec 3 "$O2CTL" --json heartbeat) | jq -e '.writers | length == 1'"
	echo "$fault" >"$CTL"
	check "$name: node3 fences itself" wait_for $(( (THR + 5) * IVL / 1000 + 3 )) \
	    has_event "$DIR/${name}3.json" '.event=="fenced"'
	ev=$(event "$DIR/${name}3.json" '.event=="fenced"')
	[[ -n $ev ]] || return
	fenced_ms=$(jq .time_ms <<<"$ev")
	echo "   node3: $(jq -r .reason <<<"$ev")"
	for k in 1 2; do
		if ! wait_for $(( (THR + 5) * IVL / 1000 + 3 )) has_event "$DIR/$name$k.json" '.event=="node-down" and .node==3'; then
			fail "$name: node$k declares node3 dead"
			continue
		fi
		down_ms=$(jq .time_ms <<<"$(event "$DIR/$name$k.json" '.event=="node-down" and .node==3')")
		check "$name: node3 fenced before node$k declared it dead ($((down_ms - fenced_ms)) ms before)" \
		    test "$fenced_ms" -lt "$down_ms"
	done
	check "$name: the writer was killed" wait_for 2 sh -c "! kill -0 $writer 2>/dev/null"
	wait $writer 2>/dev/null
	check_eq "$name: node3 reports fenced" true "$(hb_status 3 | jq .fenced)"
	check "$name: node3's netd is fenced too" \
	    sh -c "$(printf '%q ' "$LOCALCLUSTER" exec 3 "$O2CTL" --json net-status) | jq -e .quorum.fenced"
	: >"$CTL"
	sleep $((2 * IVL / 1000 + 1))
	check_eq "$name: fenced node3 does not rejoin on its own" "1 2" "$(live_nodes 1)"
	expect_error "$name: a fenced node takes no writer" "fenced" \
	    lc exec 3 "$O2CTL" writer again true
	# A crashed and restarted hbd (systemd restarts it) is still fenced.
	kill -9 "$(cat "$DIR/node3/pids/hbd.pid")"
	check "$name: node3's hbd restarted after kill -9" start_shimmed
	watch_start 3 "$DIR/${name}3b.json"
	check_eq "$name: the restarted hbd is still fenced" true "$(hb_status 3 | jq .fenced)"
	sleep $((2 * IVL / 1000 + 1))
	check_eq "$name: and node3 still does not rejoin" "1 2" "$(live_nodes 1)"
	# A write stalled by the shim still sleeps: clear-fence waits for it.
	check "$name: o2ctl clear-fence (once the stalled write is over)" \
	    wait_for 10 lc exec 3 "$O2CTL" clear-fence
	t0=$SECONDS
	# Subscribers hear of the clear before any node of the new incarnation.
	check "$name: node3's hbd publishes the clear" \
	    wait_for 5 has_event "$DIR/${name}3b.json" '.event=="unfenced"'
	check_eq "$name: ... before any node-up" unfenced "$(grep -v subscribed "$DIR/${name}3b.json" |
	    jq -r 'select(.event=="unfenced" or .event=="node-up") | .event' | head -n 1)"
	check "$name: node3 rejoins" wait_for 10 live_is 1 "1 2 3"
	for k in 3 1 2; do
		check "$name: node$k: o2ctl status shows every node heartbeating and linked" \
		    wait_for 20 status_linked $k 3
	done
	echo "   $((SECONDS - t0)) s from clear-fence to these checks"
	# The write timeout is armed from steady state on, as o2hb's.
	check "$name: node3's region is steady again" \
	    wait_for 10 sh -c "$(printf '%q ' "$LOCALCLUSTER" exec 3 "$O2CTL" --json heartbeat) | jq -e '.regions[0].state == \"steady\"'"
	watch_stop_all
}

fault_round slow "pwrite delay 5000"
fault_round failing "pwrite eio"

lc down >/dev/null 2>&1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
