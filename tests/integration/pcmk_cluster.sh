#!/usr/bin/env bash
# The pcmk stack with real corosync: three nodes, each in its own network
# namespace with its own corosync (knet over the veths), pcmkd, nmd,
# netd, dlmd and fsd on a volume made with --cluster-stack=pcmk. They
# form (corosync's quorate membership, pcmkd's group), mount, see each
# other's writes; node2's pcmkd alone killed and started again goes on
# (its fsd keeps writing); a kill -9 of node3 (corosync, daemons and fsd): the
# survivors see it leave corosync's membership, recover its journal and
# locks, and write again; node3 starts again and reads it all. pcmkd
# without corosync, and a mount without pcmkd, fail saying why. A
# partition 2|1: node3 alone loses quorum and fences itself (its fsd is
# killed), the two others recover it and write; healed, node3 clears the
# fence and mounts again. Every
# node unmounts and fsck.ocfs2 finds the volume clean. Skipped only when
# corosync cannot run here (fencing = none: pcmk_fence.sh fences). LOCALCLUSTER_TOKEN_MS (corosync's token
# timeout, default 1000) sets how soon a death is noticed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

require_pcmk_stack

export LOCALCLUSTER_NAME=lc
lc_setup
trap 'cluster_cleanup 3 corosync pcmkd netd dlmd fsd' EXIT

M=()
o2() { lc exec "$1" "$O2CTL" "${@:2}"; }
live_is() { [[ $(o2 "$1" --json status | jq -c '[.nodes[] | select(.heartbeat == "up") | .num]') == "$2" ]]; }
linked() { status_linked "$1" "$2"; }
log_has() { lc log "$1" "$2" | grep -q -- "$3"; }

check "3 nodes up on the pcmk stack, each with its corosync" lc up 3 --netns --stack pcmk
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
check "the volume was made for stack pcmk, cluster lc" \
    sh -c "debugfs.ocfs2 -R stats '$IMG' 2>/dev/null | grep -q 'Cluster stack: pcmk'"
check_eq "o2ctl status: stack pcmk" pcmk "$(o2 1 --json status | jq -r .stack)"
check_eq "o2ctl status: pcmkd is the membership daemon" true "$(o2 1 --json status | jq -r .daemons.pcmkd)"
check "pcmkd warns that fencing = none is not safe" log_has 1 pcmkd "not safe for production"
check "pcmkd -n accepts the pcmk configuration" \
    "$BUILD/pcmkd" -n -c "$(lc conf)" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1
sed 's/stack = pcmk/stack = o2cb/' "$(lc conf)" >"$FSD_DIR/o2cb.conf"
expect_error "pcmkd -n refuses an o2cb configuration" "pcmkd serves only stack = pcmk" \
    "$BUILD/pcmkd" -n -c "$FSD_DIR/o2cb.conf" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1
expect_error "hbd -n refuses a pcmk configuration" "hbd serves only stack = o2cb" \
    "$BUILD/hbd" -n -c "$(lc conf)" -t "$LOCALCLUSTER_DIR/node1/o2cb" --node node1
for k in 1 2 3; do
	check "node$k sees nodes 1 2 3 up (corosync's quorate membership)" wait_for 20 live_is "$k" "[1,2,3]"
done
for k in 1 2 3; do
	check "node$k is linked to the two others (netd)" wait_for 20 linked "$k" 3
done

for k in 1 2 3; do
	run_check "node$k mounts the pcmk volume" node_mount "$k"
done
echo one >"${M[1]}/f"
check_eq "node2 reads node1's write" one "$(cat "${M[2]}/f")"
echo two >>"${M[3]}/f"
check_eq "node1 reads node3's append" "$(printf 'one\ntwo')" "$(cat "${M[1]}/f")"
check "node3 writes and fsyncs g" sh -c "echo from3 >'${M[3]}/g' && sync '${M[3]}/g'"

echo "-- pcmkd alone dies on node2 and starts again: its node is no dead node"
kill -KILL "$(<"$LOCALCLUSTER_DIR/node2/pids/pcmkd.pid")"
check "node2's pcmkd starts again" lc start 2 pcmkd
check "node2's fsd registers again as a disk writer" \
    wait_for 10 log_has 2 fsd "registered again with pcmkd"
check "node2 writes on" sh -c "echo resumed >'${M[2]}/r' && sync '${M[2]}/r'"
check_eq "node1 reads it" resumed "$(cat "${M[1]}/r")"
check "node1 still counts node2 up" live_is 1 "[1,2,3]"
check "and never took it for dead" sh -c "! $(printf '%q ' "$LOCALCLUSTER") log 1 pcmkd | grep -q 'node 2 down'"

echo "-- kill -9 of node3: corosync, its daemons and fsd"
killed=$(date +%s%N)
check "kill node3" lc kill 3
check "node1's pcmkd sees node3 leave corosync's membership" \
    wait_for 20 log_has 1 pcmkd "node 3 down: gone from corosync's membership; not fenced"
recovered() { lc log 1 fsd | grep -q "slot 2 recovered" || lc log 2 fsd | grep -q "slot 2 recovered"; }
check "a survivor recovers node3's slot" wait_for 30 recovered
echo "   (node3 killed to its slot recovered: $((($(date +%s%N) - killed) / 1000000)) ms)"
check "node1 appends to node3's file" sh -c "echo from1 >>'${M[1]}/g'"
check_eq "node2 reads both" "$(printf 'from3\nfrom1')" "$(cat "${M[2]}/g")"
check "node2 writes a new file" sh -c "echo after >'${M[2]}/h'"

echo "-- a node without corosync"
expect_error "pcmkd refuses to start without corosync, saying so" "corosync is not running here" \
    lc exec 3 timeout 20 "$BUILD/pcmkd" -c "$(lc conf)" --node node3 --rundir "$FSD_DIR/run3"
check "node3's nmd alone" lc start 3 nmd
expect_error "hbd started by hand on a pcmk node exits, naming pcmkd" "pcmkd serves it, not hbd" \
    lc exec 3 timeout 20 "$BUILD/hbd" -c "$(lc conf)" -t "$LOCALCLUSTER_DIR/node3/o2cb" \
    --node node3 --rundir "$LOCALCLUSTER_DIR/node3/run"
mkdir -p "$FSD_DIR/m3"
expect_error "a mount without pcmkd fails, naming it" "pcmkd is not running" \
    lc exec 3 timeout 30 "$FSD" "$IMG" "$FSD_DIR/m3"

echo "-- node3 comes back"
check "node3 starts again" lc start 3
check "node1 sees node3 up again" wait_for 20 live_is 1 "[1,2,3]"
run_check "node3 mounts again" node_mount 3
check_eq "node3 reads what node1 appended" "$(printf 'from3\nfrom1')" "$(cat "${M[3]}/g")"
check_eq "node3 reads node2's file" after "$(cat "${M[3]}/h")"

expect_error "o2ctl clear-fence reaches pcmkd" "this node is not fenced" o2 3 clear-fence

echo "-- a partition 2|1: node3 alone loses quorum and stops writing"
check "node3 writes and fsyncs p" sh -c "echo before >'${M[3]}/p' && sync '${M[3]}/p'"
check "cut node3 from node1" lc cut 1 3
check "cut node3 from node2" lc cut 2 3
fenced() { [[ $(o2 "$1" --json status | jq -r .fenced) == true ]]; }
check "node3 fences itself: its partition lost quorum" wait_for 20 fenced 3
check "node3's pcmkd killed its fsd" wait_for 10 log_has 3 pcmkd "killing disk writer pid"
check "node1 sees node3 down" wait_for 20 live_is 1 "[1,2]"
recovered_twice() {
	local n
	n=$({ lc log 1 fsd; lc log 2 fsd; } | grep -c "slot 2 recovered")
	((n >= 2))
}
check "the majority recovers node3's slot again" wait_for 30 recovered_twice
check "node1 appends to p" sh -c "echo after >>'${M[1]}/p'"
check_eq "node2 reads p" "$(printf 'before\nafter')" "$(cat "${M[2]}/p")"
check "heal node3 and node1" lc heal 1 3
check "heal node3 and node2" lc heal 2 3
expect_error "clear-fence waits for quorum" "no quorum" o2 3 clear-fence
quorate3() { lc exec 3 corosync-quorumtool -s >/dev/null; }
# knet finds a link that came back within seconds, more on a loaded machine
check "node3's corosync is back in the quorate membership" wait_for 90 quorate3
check "o2ctl clear-fence on node3" wait_for 10 o2 3 clear-fence
check "node3's daemons start again (dlmd left when fenced)" lc start 3
check "node1 sees node3 up again" wait_for 20 live_is 1 "[1,2,3]"
run_check "node3 mounts again" node_mount 3
check_eq "node3 reads p" "$(printf 'before\nafter')" "$(cat "${M[3]}/p")"

for k in 3 2 1; do
	check "node$k unmounts" lc umount "$k"
done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
check "no daemon or fsd reported a sanitizer error" sh -c \
    "! cat '$LOCALCLUSTER_DIR'/node*/log/*.log | grep -aE 'ERROR: AddressSanitizer|runtime error|LeakSanitizer'"
finish
