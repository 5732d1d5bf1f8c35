#!/usr/bin/env bash
# Two nodes of the local cluster on one volume, where the kernel's waits
# meet the cluster locks: a flock(2) waiting for the other node ends with
# EINTR when a signal interrupts it, leaving no request queued behind.
# fsck.ocfs2 finds the volume clean at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()

echo "-- setup"
if ! netd_up 2; then fail "localcluster up 2"; finish; exit 1; fi
for k in 1 2; do run_check "node$k mounts the volume" node_mount "$k"; done
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')

echo "-- an interrupted flock wait"
: >"${M[1]}/fl"
exec 9<"${M[1]}/fl"
check "node1 holds flock EX" flock -x -n 9
exec 8<"${M[2]}/fl"
# flock(1) -w arms a timer: its SIGALRM must end the wait (KILL after 10 s
# shows a wait that no signal ends). fd 8 stays open in this shell, so a
# request left queued would be granted to it later.
t0=$SECONDS
timeout -s KILL 10 flock -x -w 1 8
rc=$?
check_eq "node2's flock wait ends when the timer's signal interrupts it" 1 "$rc"
check "... within a few seconds" test $((SECONDS - t0)) -le 4
flock -u 9
sleep 0.5
check "once node1 unlocks, nothing of node2's is queued: node1 takes it again" \
    flock -x -n "${M[1]}/fl" true
flock -s -n 8 && flock -u 8
check "node2 locked and unlocked LOCK_SH (its lock now converts)" test $? -eq 0
flock -x -n 9
t0=$SECONDS
timeout -s KILL 10 flock -x -w 1 8
rc=$?
check_eq "an interrupted conversion ends too" 1 "$rc"
flock -u 9
sleep 0.5
check "... and leaves nothing queued" flock -x -n "${M[1]}/fl" true
check "node2's flock still works afterwards" flock -x -w 5 8
flock -u 8
exec 8<&- 9<&-

echo "-- end"
for k in 1 2; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
