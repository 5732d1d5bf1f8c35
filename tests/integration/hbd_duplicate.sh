#!/usr/bin/env bash
# Two hbd processes with the same node number on one region: the second
# one sees our slot move while it only reads, refuses the region, and
# never writes; the first one and its peers notice nothing.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

lc_setup
DIR=$LOCALCLUSTER_DIR
DUP=$DIR/dup
DUP_PIDS=()
cleanup() {
	local p
	for p in "${DUP_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${DUP_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	umount -l "$DUP/run/config" 2>/dev/null
	watch_stop_all
	lc down >/dev/null 2>&1 || true
}
trap cleanup EXIT

check "3 nodes up" lc up 3 --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in 1 2 3; do check "node$k heartbeats" hb_start $k; done
check "node1 sees 1 2 3" wait_for 10 live_is 1 "1 2 3"
watch_start 1 "$DIR/watch1.json"
watch_start 2 "$DIR/watch2.json"

echo "-- a second node2 (its own nmd and hbd, same cluster.conf) on the same volume"
mkdir -p "$DUP/run"
"$BUILD/nmd" -c "$(lc conf)" -t "$DIR/node2/o2cb" --node node2 --rundir "$DUP/run" \
    >"$DUP/nmd.log" 2>&1 &
DUP_PIDS+=($!)
check "duplicate nmd answers" wait_for 10 "$O2CTL" --rundir "$DUP/run" ping nmd
"$BUILD/hbd" -c "$(lc conf)" -t "$DIR/node2/o2cb" --node node2 --rundir "$DUP/run" \
    >"$DUP/hbd.log" 2>&1 &
DUP_PIDS+=($!)
check "duplicate hbd answers" wait_for 10 "$O2CTL" --rundir "$DUP/run" ping hbd
expect_error "the duplicate refuses the region" "already heartbeating" \
    "$O2CTL" --rundir "$DUP/run" heartbeat start "$IMAGE"
check "its log names the problem" grep -q "node 2 is already heartbeating" "$DUP/hbd.log"
check "the duplicate released its reference" \
    test "$("$O2CTL" --rundir "$DUP/run" --json config | jq '.regions | length')" -eq 0

echo "-- the first node2 and its peers are undisturbed (a write of the duplicate would be a new generation)"
sleep $(( (THR + 2) * IVL / 1000 + 1 ))
check_eq "node2 not fenced" false "$(hb_status 2 | jq .fenced)"
check_eq "node2 still sees 1 2 3" "1 2 3" "$(live_nodes 2)"
check_eq "node1 still sees 1 2 3" "1 2 3" "$(live_nodes 1)"
check_eq "node2's region is steady" steady "$(hb_status 2 | jq -r '.regions[0].state')"
check_eq "no membership event on node1" "" "$(event "$DIR/watch1.json" '.event | startswith("node")')"
check_eq "no membership event on node2" "" "$(event "$DIR/watch2.json" '.event | startswith("node")')"

cleanup
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
