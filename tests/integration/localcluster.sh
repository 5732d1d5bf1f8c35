#!/usr/bin/env bash
# The local-cluster harness: nodes start, crash, restart and stop one by
# one, commands run as a node, and `down` leaves no process and no mount.
source "$(dirname "$0")/../lib.sh"
lc_setup

node_state() {	# node_state NODE DAEMON -> running|dead
	lc status --json | python3 -c "
import json, sys
s = json.load(sys.stdin)
n = [n for n in s['nodes'] if n['name'] == sys.argv[1]][0]
print(n['daemons'][sys.argv[2]])" "$1" "$2"
}

check "up 3" lc up 3
for k in 1 2 3; do
	check_eq "node$k nmd running" running "$(node_state node$k nmd)"
	check_eq "node$k is its own local node" "node$k" \
	    "$(lc exec $k "$O2CTL" --json config | python3 -c 'import json,sys; c=json.load(sys.stdin); print([n["name"] for n in c["nodes"] if n["local"]][0])')"
done
check_eq "three nodes in the tree" "node1 node2 node3" \
    "$(ls "$(lc rundir 1)/config/cluster/lc/node" | xargs)"
check_eq "exec sets the runtime dir" "$(lc rundir 2)" "$(lc exec 2 sh -c 'echo $OCFS2_RUNDIR')"
check_eq "exec passes the exit status" 7 "$(lc exec 1 sh -c 'exit 7'; echo $?)"

check "kill node2" lc kill 2
check_eq "node2 is dead" dead "$(node_state node2 nmd)"
check_eq "node1 is untouched" running "$(node_state node1 nmd)"
check "start node2" lc start 2
check_eq "node2 runs again" running "$(node_state node2 nmd)"
check "node2's tree is back" test -d "$(lc rundir 2)/config/cluster/lc/node/node2"

check "stop node3" lc stop 3
check_eq "node3 is stopped" dead "$(node_state node3 nmd)"
check "node3's tree is unmounted" sh -c "! grep -q '$(lc rundir 3)/config' /proc/self/mountinfo"
check "restart node3" lc restart 3
check_eq "node3 runs again" running "$(node_state node3 nmd)"

lc exec 1 sleep 300 &
check "kill node1 (its tree goes stale)" lc kill 1
check "down" lc down
# [/] keeps the pattern from matching this check's own command line.
check "no process left" sh -c "! pgrep -f '[/]${LOCALCLUSTER_DIR#/}'"
check "no mount left" sh -c "! grep -q '$LOCALCLUSTER_DIR' /proc/self/mountinfo"
check "state removed" test ! -e "$LOCALCLUSTER_DIR"
check "down again is harmless" lc down
wait
finish
