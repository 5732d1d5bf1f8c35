#!/usr/bin/env bash
# The lock directory's node leaves cleanly while the others keep working:
# three nodes mounted (fsd scanning orphans every second, so that lock
# requests are in flight when node1 leaves), each writes files of its own
# and node2 removes node1's; node1 (the directory) unmounts, handing the
# directory to node2; then node2 and node3 unmount, each within 10 s,
# ROUNDS times over. Once a node kept asking the node that had left for
# a lock's master (its directory stayed node1), so a lock request, and
# the unmount waiting for it, never ended. fsck.ocfs2 -fn is clean after
# each round.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

ROUNDS=${DLMD_LEAVE_ROUNDS:-3}
lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

# unmounted_within K S: node K's fsd exits within S seconds of its unmount
unmounted_within() {
	local k=$1 s=$2 pid i
	pid=$(cat "$LOCALCLUSTER_DIR/node$k/pids/fsd.pid") || return 1
	fusermount3 -u "${M[$k]}" || return 1
	for ((i = 0; i < s * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "node$k's fsd (pid $pid) still runs $s s after its unmount"
	return 1
}
directories() {
	local k
	for k in 2 3; do "$O2CTL" --rundir "$LOCALCLUSTER_DIR/node$k/run" dlm | awk 'NF == 5 && $1 != "DOMAIN" { print $2 }'; done | xargs
}
dir_is_node2() { [[ $(directories) == "2 2" ]]; }
work() {
	local k i
	for k in 1 2 3; do
		mkdir -p "${M[$k]}/d$k" || return 1
		for ((i = 0; i < 100; i++)); do echo "$i" >"${M[$k]}/d$k/f$i" || return 1; done
	done
	rm -rf "${M[2]}/d1"
}

declare -a M=()
for round in $(seq 1 "$ROUNDS"); do
	echo "-- round $round"
	lc down >/dev/null 2>&1
	rm -f "$LOCALCLUSTER_DIR/disk.img"
	if ! lc up 3 --hb-interval-ms "$IVL" --dead-threshold "$THR" >/dev/null; then
		fail "localcluster up 3"
		break
	fi
	for k in 1 2 3; do run_check "node$k mounts (orphan scan every second)" node_mount "$k" -o orphan_scan=1; done
	check "each node writes, node2 removes node1's files" work
	sleep "$((RANDOM % 3))"
	check "node1, the directory, unmounts" unmounted_within 1 10
	check "node2 and node3 both take node2 for the directory" wait_for 5 dir_is_node2
	check "node2 unmounts within 10 s" unmounted_within 2 10
	check "node3 unmounts within 10 s" unmounted_within 3 10
	check "fsck clean" fsck_clean "$LOCALCLUSTER_DIR/disk.img"
done
finish
