#!/usr/bin/env bash
# A restarted hbd goes on with the heartbeat incarnation only while every
# process it depends on is the same live process: node1 has a disk writer
# (o2ctl writer) and a holder of its cluster locks (o2ctl guard, as dlmd);
# its region is persistent, so it stays whoever dies. hbd is killed and
# started again within the dead time:
# - the holders alive: the same generation goes on, node2 sees nothing;
#   the lock holder dying later, before it ever spoke to the new hbd,
#   ends the incarnation (its writer killed, a new generation: node2
#   sees node1 die and come back);
# - the lock holder killed while no hbd runs: the new hbd does not
#   resume the incarnation: the writer is killed and a new generation
#   written, so node2 sees node1 die and recovers what it held.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hbd_lib.inc"

lc_setup
DIR=$LOCALCLUSTER_DIR
HOLDERS=()
cleanup() {
	local p
	for p in "${HOLDERS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${HOLDERS[@]}"; do wait "$p" 2>/dev/null; done
	watch_stop_all
	lc down >/dev/null 2>&1 || true
}
trap cleanup EXIT

gen1() { hb_status 1 | jq -r '.regions[0].generation'; }
steady1() { [[ $(hb_status 1 | jq -r '.regions[0].state') == steady ]]; }
hbd1() { cat "$DIR/node1/pids/hbd.pid"; }
# gone PID: dead, reaped or not (W and G are this shell's children: a
# zombie of them answers kill -0 until the shell has waited for it)
gone() { ! kill -0 "$1" 2>/dev/null || [[ $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]]; }
# holders: a writer (W) and a lock holder (G) on node1, registered.
holders() {
	local n
	n=$(lc log 1 hbd | grep -c 'holds cluster locks for this node')
	# Not through lc, a function: $! must be the process that becomes sleep.
	"$LOCALCLUSTER" exec 1 "$O2CTL" writer "test writer" sleep 600 &
	W=$!
	"$LOCALCLUSTER" exec 1 "$O2CTL" guard "test locks" sleep 600 &
	G=$!
	HOLDERS+=("$W" "$G")
	check "node1: a writer registers" wait_for 5 sh -c \
	    "$(printf '%q ' "$LOCALCLUSTER" exec 1 "$O2CTL" --json heartbeat) | jq -e '.writers | length == 1'"
	check "node1: a lock holder tells hbd" wait_for 5 sh -c \
	    "test \$($(printf '%q ' "$LOCALCLUSTER") log 1 hbd | grep -c 'holds cluster locks for this node') -gt $n"
}
# restart_hbd: node1's hbd killed and started again within the dead time.
restart_hbd() {
	kill -KILL "$(hbd1)"
	sleep 0.2
	lc start 1 hbd >/dev/null
}
node1_events() { grep -v subscribed "$1" | jq -c 'select(.node == 1 and (.event | startswith("node")))'; }

check "2 nodes up" lc up 2 --hb-interval-ms $IVL --dead-threshold $THR
IMAGE=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in 1 2; do check "node$k heartbeats" hb_start $k; done
check "node2 sees 1 2" wait_for 10 live_is 2 "1 2"

echo "-- hbd restarted, its writer and lock holder alive: the incarnation goes on"
holders
g0=$(gen1)
watch_start 2 "$DIR/watch-a.json"
restart_hbd
check "node1's region is steady again" wait_for 5 steady1
check_eq "node1 resumed its generation" "$g0" "$(gen1)"
check "the writer lives" kill -0 "$W"
sleep $(( (THR + 2) * IVL / 1000 + 1 ))
check_eq "node2 saw nothing of node1" "" "$(node1_events "$DIR/watch-a.json")"
check "node1's hbd watches the writer it inherited" sh -c \
    "$(printf '%q ' "$LOCALCLUSTER" exec 1 "$O2CTL" --json heartbeat) | jq -e '.writers | length == 1'"

echo "-- the lock holder dies before it spoke to the new hbd: the incarnation ends"
kill -KILL "$G"
check "the writer is killed" wait_for 5 gone "$W"
check "node1 heartbeats as a new generation" wait_for 5 sh -c "g=\$($(printf '%q ' "$LOCALCLUSTER") exec 1 $(printf '%q' "$O2CTL") --json heartbeat | jq -r '.regions[0].generation'); [ \"\$g\" != $g0 ]"
check "node2 sees node1 die" wait_for 5 has_event "$DIR/watch-a.json" '.event=="node-down" and .node==1'
check "and come back" wait_for 5 has_event "$DIR/watch-a.json" '.event=="node-up" and .node==1'
check_eq "node1 is not fenced" false "$(hb_status 1 | jq .fenced)"
watch_stop_all

echo "-- the lock holder killed while no hbd runs: the restarted hbd does not resume the incarnation"
holders
check "node1's region is steady" wait_for 5 steady1
g0=$(gen1)
watch_start 2 "$DIR/watch-b.json"
kill -KILL "$(hbd1)"
kill -KILL "$G"
sleep 0.2
lc start 1 hbd >/dev/null
check "the writer is killed" wait_for 5 gone "$W"
check "node1's region is steady again" wait_for 5 steady1
check "node1 heartbeats as a new generation" test "$(gen1)" != "$g0"
check "node2 sees node1 die" wait_for 5 has_event "$DIR/watch-b.json" '.event=="node-down" and .node==1'
check "and come back" wait_for 5 has_event "$DIR/watch-b.json" '.event=="node-up" and .node==1'
check "hbd's log says why" sh -c "$(printf '%q ' "$LOCALCLUSTER") log 1 hbd | grep -q 'died while no hbd ran'"

cleanup
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMAGE"
finish
