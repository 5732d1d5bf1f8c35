#!/usr/bin/env bash
# Fencing on the pcmk stack: survivors recover a node corosync lost only
# once its fence is confirmed. Three nodes with real corosync, fencing =
# agent with tests/integration/pcmk_fence_agent (it records each request
# and kills the node's processes through localcluster). pcmkd refuses to
# start without a fencing choice. A kill -9 of node3 (corosync, daemons,
# fsd) while the agent is made to fail: the survivors show the fence
# pending (status, heartbeat) and recover nothing; node1's pcmkd killed
# and started again keeps the fence pending; then the agent succeeds,
# node3's slot is recovered and written, and the agent's record names
# node3. node3 comes back. node3 dies again while node1's pcmkd is down:
# the pcmkd started again knew node3 up and fences it too. node1's pcmkd
# starts again with fencing =
# pacemaker (pcmkd-stonith, a stand-in libstonithd). A partition 2|1:
# node3 alone fences itself and asks no fence of anyone, the majority
# fences it (node1 through pcmkd-stonith, node2 through the agent, which
# kills it) and recovers. fsck.ocfs2 finds the volume clean. Skipped only
# when corosync cannot run here.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

require_pcmk_stack

export LOCALCLUSTER_NAME=lc
export LOCALCLUSTER_FENCE_AGENT=$TOP/tests/integration/pcmk_fence_agent
lc_setup
trap 'cluster_cleanup 3 corosync pcmkd netd dlmd fsd' EXIT
REQ=$LOCALCLUSTER_DIR/fence/requests

M=()
o2() { lc exec "$1" "$O2CTL" "${@:2}"; }
live_is() { [[ $(o2 "$1" --json status | jq -c '[.nodes[] | select(.heartbeat == "up") | .num]') == "$2" ]]; }
log_has() { lc log "$1" "$2" | grep -q -- "$3"; }
recoveries() { { lc log 1 fsd; lc log 2 fsd; } | grep -c "slot 2 recovered"; }
recovered_n() { (($(recoveries) >= $1)); }
requests() { grep -c "^target $1 .* $2\$" "$REQ" 2>/dev/null; }
requests_n() { (($(requests "$1" "$2") >= $3)); }
fence_pending() { o2 "$1" --json status | jq -e ".nodes[] | select(.num == $2) | .fence_pending" >/dev/null; }
no_fence_pending() { ! fence_pending "$@"; }

check "3 nodes up on the pcmk stack, fencing = agent" lc up 3 --netns --stack pcmk
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
check_eq "o2ctl status: fencing agent" agent "$(o2 1 --json status | jq -r .fencing)"
check "pcmkd logs who confirms fences" log_has 1 pcmkd "fencing = agent: a node corosync loses"
sed '/fencing = /d; /fence_agent = /d' "$(lc conf)" >"$FSD_DIR/nofence.conf"
expect_error "pcmkd -n refuses a pcmk configuration without fencing" "no fencing is configured" \
    "$BUILD/pcmkd" -n -c "$FSD_DIR/nofence.conf" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1
expect_error "pcmkd refuses to start on pcmk without fencing, saying what to set" \
    "fencing = none to accept that risk" lc exec 1 timeout 20 "$BUILD/pcmkd" \
    -c "$FSD_DIR/nofence.conf" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1 \
    --rundir "$FSD_DIR/run1"
sed 's|fencing = agent|fencing = pacemaker|; /fence_agent = /d' "$(lc conf)" >"$FSD_DIR/pcmk.conf"
check "pcmkd -n accepts fencing = pacemaker (pcmkd-stonith beside it)" \
    "$BUILD/pcmkd" -n -c "$FSD_DIR/pcmk.conf" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1
for k in 1 2 3; do
	check "node$k sees nodes 1 2 3 up" wait_for 20 live_is "$k" "[1,2,3]"
done
for k in 1 2 3; do
	run_check "node$k mounts" node_mount "$k"
done
check "node3 writes and fsyncs g" sh -c "echo from3 >'${M[3]}/g' && sync '${M[3]}/g'"

echo "-- kill -9 of node3; the agent fails until told otherwise"
mkdir -p "$LOCALCLUSTER_DIR/fence"
echo 1000 >"$LOCALCLUSTER_DIR/fence/fail_first"
check "kill node3" lc kill 3
check "node1's pcmkd holds node3 until it is fenced" \
    wait_for 20 log_has 1 pcmkd "node 3 failed: gone from corosync's membership"
check "the agent is asked twice and fails" wait_for 20 requests_n node3 failed 2
check "node1's status shows node3's fence pending" fence_pending 1 3
check "pcmkd's own status lists it with its failed attempts" sh -c \
    "$(printf '%q ' "$LOCALCLUSTER" exec 1 "$O2CTL") --json heartbeat | jq -e '.fences_pending[] | select(.node == 3) | .tries >= 1 and (.last_error | test(\"exit status 1\"))'"
check "and its text form says FENCE PENDING" sh -c \
    "$(printf '%q ' "$LOCALCLUSTER" exec 1 "$O2CTL") status | grep -q 'node3 .*FENCE PENDING'"
check "node1's log says the attempt failed and is retried" \
    log_has 1 pcmkd "fencing node 3 (node3): attempt .* failed (exit status 1)"
check_eq "nothing of node3 recovered while its fence is pending" 0 "$(recoveries)"
echo "   node1's pcmkd killed and started again while the fence is pending"
kill -KILL "$(<"$LOCALCLUSTER_DIR/node1/pids/pcmkd.pid")"
check "node1's pcmkd starts again" lc start 1 pcmkd
check "it knows the pending fence from its predecessor" \
    wait_for 10 log_has 1 pcmkd "node 3: its fence was pending when an earlier pcmkd stopped"
check "node1's status shows it still pending" wait_for 10 fence_pending 1 3
check_eq "still nothing of node3 recovered" 0 "$(recoveries)"
echo 0 >"$LOCALCLUSTER_DIR/fence/fail_first"
check "the agent succeeds at last, naming node3" wait_for 20 requests_n node3 fenced 1
check "node1's pcmkd reports node3 down once fenced" wait_for 20 log_has 1 pcmkd "node 3 down: fenced"
check "a survivor recovers node3's slot" wait_for 30 recovered_n 1
check "node1 appends to node3's file" sh -c "echo from1 >>'${M[1]}/g'"
check_eq "node2 reads both" "$(printf 'from3\nfrom1')" "$(cat "${M[2]}/g")"
check "the pending fence is gone from node1's status" no_fence_pending 1 3

echo "-- node3 comes back"
check "node3 starts again" lc start 3
check "node1 sees node3 up again" wait_for 20 live_is 1 "[1,2,3]"
run_check "node3 mounts again" node_mount 3
check_eq "node3 reads g" "$(printf 'from3\nfrom1')" "$(cat "${M[3]}/g")"

echo "-- node3 dies while node1's pcmkd is down"
# A pcmkd started again must know who was up: else it would never see
# node3 fail, nor fence it, and the dlmd resubscribing to it would take
# every node missing from its first answer for dead. node1 unmounts
# first: its fsd would stop when the writers' lease ran out during the
# seconds corosync takes to drop node3.
check "node1 unmounts" lc umount 1
kill -KILL "$(<"$LOCALCLUSTER_DIR/node1/pids/pcmkd.pid")"
fenced_by1() { grep -c "^target node3 .* by [^ ]*-n1 try [0-9]* fenced\$" "$REQ" 2>/dev/null; }
before1=$(fenced_by1)
more_fenced_by1() { (($(fenced_by1) > before1)); }
before=$(requests node3 fenced)
check "kill node3 again" lc kill 3
check "node2 fences it" wait_for 20 requests_n node3 fenced $((before + 1))
check "node1's pcmkd starts again" lc start 1 pcmkd
check "it knew node3 up, and fences it too" wait_for 20 more_fenced_by1
check "node1 sees nodes 1 and 2 up" wait_for 20 live_is 1 "[1,2]"
check "node3 starts again" lc start 3
check "node1 sees node3 up again" wait_for 20 live_is 1 "[1,2,3]"
for k in 1 3; do
	run_check "node$k mounts again" node_mount "$k"
done
check "node1 writes node3's file" sh -c "echo again >>'${M[1]}/g' && sync '${M[1]}/g'"

echo "-- node1's pcmkd on fencing = pacemaker, with a stand-in fencer"
# pcmkd-stonith finds tests/helpers/fakestonithd.c as libstonithd.so.26;
# node2 keeps the agent, which resets node3 for real
STONITH_DIR=$FSD_DIR/stonith
mkdir -p "$STONITH_DIR"
ln -s "$BUILD/tests/libfakestonithd.so" "$STONITH_DIR/libstonithd.so.26"
sed -i 's|fencing = agent|fencing = pacemaker|; /fence_agent = /d' "$(lc conf)"
kill -KILL "$(<"$LOCALCLUSTER_DIR/node1/pids/pcmkd.pid")"
check "node1's pcmkd starts again with fencing = pacemaker" env LD_LIBRARY_PATH="$STONITH_DIR" \
    FAKE_STONITH_LOG="$STONITH_DIR/calls" "$LOCALCLUSTER" start 1 pcmkd
check "it says pcmkd-stonith confirms" wait_for 10 log_has 1 pcmkd "fencing = pacemaker: .*pcmkd-stonith"
check "node1 sees nodes 1 2 3 up" wait_for 20 live_is 1 "[1,2,3]"

echo "-- a partition 2|1: only the majority fences"
echo 0 >"$LOCALCLUSTER_DIR/fence/fail_first"
before=$(requests node3 fenced)
check "node3 writes and fsyncs p" sh -c "echo before >'${M[3]}/p' && sync '${M[3]}/p'"
check "cut node3 from node1" lc cut 1 3
check "cut node3 from node2" lc cut 2 3
check "the majority fences node3 through the agent" wait_for 30 requests_n node3 fenced $((before + 1))
check "and recovers its slot again" wait_for 30 recovered_n 2
check "node1's pcmkd had pacemaker's fencer power node3 off (id 3, 300 s)" \
    grep -q "^kick 3 300 1$" "$STONITH_DIR/calls"
check "node1's pcmkd took pcmkd-stonith's word" \
    log_has 1 pcmkd "fencing node 3 (node3): confirmed by .*pcmkd-stonith"
check "node1 appends to p" sh -c "echo after >>'${M[1]}/p'"
check_eq "node2 reads p" "$(printf 'before\nafter')" "$(cat "${M[2]}/p")"
check_eq "nobody asked to fence node1 or node2 (node3 had no quorum)" 0 \
    "$(grep -c '^target node[12] ' "$REQ")"
check_eq "every fence of node3 was asked by node1 or node2" 0 \
    "$(grep '^target node3 ' "$REQ" | grep -vc -- '-n[12] try')"
check "heal node3 and node1" lc heal 1 3
check "heal node3 and node2" lc heal 2 3

check "node3's dead mount (the agent killed its fsd) is detached" lc umount 3
for k in 2 1; do
	check "node$k unmounts" lc umount "$k"
done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no daemon or fsd reported a sanitizer error" sh -c \
    "! cat '$LOCALCLUSTER_DIR'/node*/log/*.log | grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer'"
finish
