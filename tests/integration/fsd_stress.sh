#!/usr/bin/env bash
# fsd_stress (tests/progs/fsd_stress.c) on the three nodes of a local
# cluster at once: random creates, writes, truncates,
# renames, links, unlinks and removals of every kind of inode (files
# small and large, directories, fast and slow symlinks, fifos, sockets,
# devices), files held open while other nodes unlink them, one node
# scanning orphans every 2 s. Every run must end without a failure, no
# fsd may die or log corruption or an I/O error, and the volume must be
# clean under fsck.ocfs2 at the end, with no orphan left.
#
# Each seed of FSD_STRESS_SEEDS (default "1 2") has each node work in
# a directory of its own (the nodes share the volume's allocators, the
# parent directory and the orphan scans, not names); each seed of
# FSD_STRESS_SHARED_SEEDS (default none in CI: an ESTALE still reaches a
# user there now and then, doc/cluster-cache.md; make soak runs four) then
# puts all of them in one
# directory, racing for the same names (lock order between nodes, inodes
# freed on one node and made again on another, directories moved while
# another node walks through them). FSD_STRESS_OPS (operations per
# process, 6000; FSD_STRESS_SHARED_OPS for the shared seeds, 1000) and
# FSD_STRESS_PROCS (processes per node, 2) make it longer: make soak runs
# many more.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

SEEDS=${FSD_STRESS_SEEDS-1 2}
SHARED_SEEDS=${FSD_STRESS_SHARED_SEEDS-}
OPS=${FSD_STRESS_OPS:-6000}
SHARED_OPS=${FSD_STRESS_SHARED_OPS:-1000}
PROCS=${FSD_STRESS_PROCS:-2}
STRESS=$BUILD/progs/fsd_stress

lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

M=()
pid=()
fsdlog() { lc log "$1" fsd; }
# sane K...: each node's fsd mounted and writable, no failure in its log.
sane() {
	local k
	for k in "$@"; do
		if fsdlog "$k" | grep -E 'corrupt|deleting orphan|Input/output|read-only'; then return 1; fi
		: >"${M[$k]}/probe$k" && rm "${M[$k]}/probe$k" || return 1
	done
}
orphans() {
	local s n=0
	for s in 0000 0001 0002; do
		n=$((n + $(debugfs.ocfs2 -R "ls //orphan_dir:$s" "$IMG" 2>/dev/null |
		    awk '{print $NF}' | grep -cvxE '\.|\.\.')))
	done
	echo "$n"
}

echo "-- setup"
if ! netd_up 3; then fail "localcluster up 3"; finish; exit 1; fi
run_check "node1 mounts the volume, scanning orphans every 2 s" node_mount 1 -o orphan_scan=2
for k in 2 3; do run_check "node$k mounts the volume" node_mount "$k"; done
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
check "every node sees the others' heartbeat and links" wait_for 20 mesh_up 3
mkdir "${M[1]}/stress" "${M[1]}/stress/shared"
for k in 1 2 3; do mkdir "${M[1]}/stress/node$k"; done

# run_seed SEED SHARED OPS: PROCS processes on each node, in the node's
# own directory or (SHARED 1) all in one.
run_seed() {
	local seed=$1 shared=$2 ops=$3 k start dir
	echo "-- seed $seed: $PROCS processes on each node, $ops operations each, $( ((shared)) && echo 'one directory' || echo 'a directory per node')"
	start=$SECONDS
	for k in 1 2 3; do
		if ((shared)); then dir=${M[$k]}/stress/shared; else dir=${M[$k]}/stress/node$k; fi
		# a run that hangs (a deadlock between nodes) fails too
		timeout $((60 + ops / 100)) "$STRESS" -n "$ops" -p "$PROCS" -s $((seed * 10 + k)) "$dir" \
		    >"$FSD_DIR/stress$k.out" 2>&1 &
		pid[k]=$!
		BG+=($!)
	done
	for k in 1 2 3; do
		if wait "${pid[k]}"; then
			pass "node$k's run has no failure"
		else
			fail "node$k's run has no failure"
			grep -v '^fsd_stress: process .*operations' "$FSD_DIR/stress$k.out" | head -n 20 | sed 's/^/       | /'
		fi
		grep '^fsd_stress: process 0:' "$FSD_DIR/stress$k.out" | sed "s/^/  node$k: /"
	done
	BG=()
	echo "  ($((SECONDS - start)) s)"
	check "every fsd stays sane" sane 1 2 3
}
for seed in $SEEDS; do run_seed "$seed" 0 "$OPS"; done
for seed in $SHARED_SEEDS; do run_seed "$seed" 1 "$SHARED_OPS"; done

echo "-- the end"
check "node2 removes everything" rm -rf "${M[2]}/stress"
sync
echo 2 >/proc/sys/vm/drop_caches
check "every fsd stays sane" sane 1 2 3
for k in 1 2 3; do check "node$k unmounts" lc umount "$k"; done
check "fsck clean" fsck_clean "$IMG"
check_eq "no orphan left" 0 "$(orphans)"

finish
