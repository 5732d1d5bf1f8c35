#!/usr/bin/env bash
# ocf:ocfs2:fsd, the OCF resource agent of an fsd mount, run by hand as
# pacemaker would run it, on a local two-node cluster: ocf-tester's
# checks (meta-data valid against the OCF DTD, monitor when stopped,
# start, start again, monitor, stop, stop again); the exit codes of bad
# parameters; both nodes mounted through it see each other's writes; a
# stop unmounts even with a process in the mount; an fsd killed -9 is
# reported failed by monitor, refused by start until a stop clears the
# dead mount, and the other node recovers its slot; fsck.ocfs2 finds the
# volume clean. ocf-tester comes with Debian's resource-agents.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

AGENT=$BUILD/ocf/fsd
lc_setup
trap 'cluster_cleanup 2 fsd; fsd_cleanup' EXIT

check "2 nodes up (fast heartbeat: a death is seen in seconds)" netd_up 2
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
for k in 1 2; do
	mkdir -p "$FSD_DIR/m$k"
done
# agent K ACTION [NAME=VALUE...]: the agent as node K's pacemaker runs it
agent() {
	local k=$1 action=$2
	shift 2
	lc exec "$k" env FSD="$BUILD/fsd" FSD_LOG="$FSD_DIR/fsd$k.log" \
	    OCF_RESKEY_device="$IMG" OCF_RESKEY_directory="$FSD_DIR/m$k" \
	    OCF_RESKEY_mount_helper="$BUILD/mount.fuse.fsd" "$@" "$AGENT" "$action"
}
rc_is() {
	local want=$1 out rc
	shift
	out=$(agent "$@" 2>&1)
	rc=$?
	((rc == want)) && return 0
	printf 'exit %d, expected %d: %s\n' "$rc" "$want" "$out"
	return 1
}
reason_has() { agent "${@:2}" 2>&1 | grep -q "ocf-exit-reason:.*$1"; }

check "meta-data is valid XML naming its parameters" \
    sh -c "'$AGENT' meta-data | xmllint --noout - && '$AGENT' meta-data | grep -q 'parameter name=\"device\"'"
check "validate-all: the configuration is good" rc_is 0 1 validate-all
check "validate-all without device: not configured (6)" rc_is 6 1 validate-all OCF_RESKEY_device=
check "... saying why" reason_has "device and directory parameters are required" 1 validate-all OCF_RESKEY_device=
check "a device that does not exist: not configured (6)" rc_is 6 1 validate-all OCF_RESKEY_device=/nonexistent
check "no mount helper: not installed (5)" rc_is 5 1 validate-all OCF_RESKEY_mount_helper=/nonexistent
check "an unknown action: unimplemented (3)" rc_is 3 1 migrate_to
check "monitor before start: not running (7)" rc_is 7 1 monitor

check "ocf-tester (resource-agents, from scripts/install-deps) is here" command -v ocf-tester
check "ocf-tester passes it on node1" lc exec 1 env FSD="$BUILD/fsd" \
    FSD_LOG="$FSD_DIR/fsd1.log" ocf-tester -n fs1 -o device="$IMG" \
    -o directory="$FSD_DIR/m1" -o mount_helper="$BUILD/mount.fuse.fsd" "$AGENT"

for k in 1 2; do
	check "start on node$k" rc_is 0 "$k" start
	check "monitor on node$k: running" rc_is 0 "$k" monitor
done
check "node1 writes through the mount" sh -c "echo one >'$FSD_DIR/m1/f' && sync '$FSD_DIR/m1/f'"
check_eq "node2 reads it" one "$(cat "$FSD_DIR/m2/f")"

echo "-- node2's fsd killed"
check "node2 writes and fsyncs g" sh -c "echo two >'$FSD_DIR/m2/g' && sync '$FSD_DIR/m2/g'"
pid=$(lc exec 2 "$O2CTL" --json mounts | jq -r --arg d "$(realpath "$FSD_DIR/m2")" \
    '.[] | select(.mountpoint == $d) | .pid')
check "kill -9 node2's fsd (pid $pid)" kill -KILL "$pid"
check "monitor on node2: failed (1)" wait_for 10 rc_is 1 2 monitor
check "... saying the mount does not answer" reason_has "does not answer" 2 monitor
check "start on node2 refuses the dead mount (1), no configuration error" rc_is 1 2 start
check "stop on node2 clears it" rc_is 0 2 stop
check "monitor on node2: not running" rc_is 7 2 monitor
node1_recovered() { grep -q "recovered" "$FSD_DIR/fsd1.log"; }
check "node1 recovers node2's slot" wait_for 60 node1_recovered
check_eq "node1 reads g" two "$(cat "$FSD_DIR/m1/g")"

echo "-- node1 stopped with a process in its mount"
sleep 600 </dev/null >/dev/null 2>&1 &
holder=$!
(cd "$FSD_DIR/m1" && exec sleep 600) </dev/null >/dev/null 2>&1 &
user=$!
# their deaths are for the agent to cause, not for this shell to report
disown "$holder" "$user"
check "stop on node1" rc_is 0 1 stop
check "the process in the mount was killed" sh -c "! kill -0 $user 2>/dev/null"
check "another process was not" kill -0 "$holder"
kill "$holder" "$user" 2>/dev/null
check "monitor on node1: not running" rc_is 7 1 monitor
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
