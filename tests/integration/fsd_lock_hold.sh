#!/usr/bin/env bash
# The minimum hold time of contended locks (fsd/holdtime.c,
# doc/lock-hold.md), on two nodes of the local cluster:
#  - two nodes creating and unlinking in one directory at once hand its
#    lock over (each handoff a journal commit) far less often with the
#    hold time (default lock_hold) than without (lock_hold=0), and each
#    sees every name the other made;
#  - with the hold pinned at its maximum (lock_hold_min = lock_hold =
#    200 ms), a lock this node no longer uses still goes at once: a file
#    written on one node and read on the other, in turns, takes far less
#    than 200 ms a turn; and what was written is what is read;
#  - bad values of the options refuse the mount with a clear message.
# fsck.ocfs2 finds the volume clean at the end.
#
# FSD_HOLD_FILES (default 150) names per node in the shared directory,
# FSD_HOLD_TURNS (default 10) write/read turns.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

FILES=${FSD_HOLD_FILES:-150}
TURNS=${FSD_HOLD_TURNS:-10}

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()
commits() { lc exec "$1" "$O2CTL" mounts --json | jq '.[0].journal_commits'; }
remount() {
	local k
	for k in 1 2; do lc umount "$k" >/dev/null || return 1; done
	for k in 1 2; do node_mount "$k" "$@" || return 1; done
}

# churn DIR1 DIR2 FILES TAG: the same directory through both nodes'
# mounts; each node creates FILES names (open O_CREAT|O_EXCL, close),
# then unlinks every other one, both at once (each starts once it sees
# the other's start mark). Prints the journal commits both nodes made
# meanwhile.
churn() {
	local c0 c1 rc=0 pids=() k
	c0=$(($(commits 1) + $(commits 2)))
	for k in 1 2; do
		python3 - "${M[$k]}/shared" "n$k-$4" "$3" "n$((3 - k))-$4" <<'PY' &
import os, sys, time
d, prefix, n, other = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
open(os.path.join(d, "start." + prefix), "w").close()
end = time.time() + 60
while not os.path.exists(os.path.join(d, "start." + other)):
    if time.time() > end:
        sys.exit("the other node never started")
    time.sleep(0.001)
for i in range(n):
    os.close(os.open(os.path.join(d, "%s.%d" % (prefix, i)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
for i in range(0, n, 2):
    os.unlink(os.path.join(d, "%s.%d" % (prefix, i)))
PY
		pids+=($!)
	done
	for k in "${pids[@]}"; do wait "$k" || rc=1; done
	((rc == 0)) || return 1
	c1=$(($(commits 1) + $(commits 2)))
	echo $((c1 - c0))
}

# names_seen K TAG: node K lists exactly the names both nodes kept.
names_seen() {
	local want got
	want=$( (for k in 1 2; do for ((i = 1; i < FILES; i += 2)); do echo "n$k-$2.$i"; done; done) |
	    sort)
	got=$(ls "${M[$1]}/shared" | grep -v '^start\.' | grep -- "-$2\." | sort)
	[[ $want == "$got" ]]
}

echo "-- setup"
mount_two
mkdir "${M[1]}/shared"

echo "-- one directory, two nodes: with (the default lock_hold) and without the hold time"
held=$(churn "${M[1]}/shared" "${M[2]}/shared" "$FILES" hold) || fail "the churn with hold time failed"
for k in 1 2; do check "node$k sees every name both kept (hold)" names_seen "$k" hold; done
run_check "both nodes mount with lock_hold=0" remount -o lock_hold=0
none=$(churn "${M[1]}/shared" "${M[2]}/shared" "$FILES" nohold) || fail "the churn without hold time failed"
for k in 1 2; do check "node$k sees every name both kept (no hold)" names_seen "$k" nohold; done
echo "   journal commits of $((3 * FILES)) creates and unlinks: ${none:-?} without hold time, ${held:-?} with"
check "the hold time at least halves the directory's handoffs" test "$((2 * ${held:-0}))" -lt "${none:-0}"

echo "-- the hold pinned at its maximum: an unused lock still goes at once"
run_check "both nodes mount with lock_hold_min=200,lock_hold=200" \
    remount -o lock_hold=200,lock_hold_min=200
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((t / 1000)); }
turns() {
	local i t0
	t0=$(now_ms)
	for ((i = 0; i < TURNS; i++)); do
		echo "turn $i" >"${M[1]}/pingpong" || return 1
		[[ $(cat "${M[2]}/pingpong") == "turn $i" ]] || { echo "turn $i: node2 read $(cat "${M[2]}/pingpong")"; return 1; }
	done
	echo $(($(now_ms) - t0))
}
ms=$(turns) || fail "node2 did not read what node1 wrote: $ms"
echo "   $TURNS write/read turns took ${ms:-?} ms (at least $((TURNS * 2 * 200)) ms if each waited out the hold)"
check "the turns take less than half the pinned hold time each" \
    test "${ms:-999999}" -lt "$((TURNS * 2 * 100))"

echo "-- bad option values"
lc umount 2 >/dev/null
expect_error "lock_hold above 200 ms is refused" "" lc mount 2 -o lock_hold=201
says() { lc log 2 fsd | grep -qF -- "$1"; }
check "fsd says why (lock_hold)" says 'bad lock_hold (ms, at most 200): 201'
expect_error "lock_hold_min above lock_hold is refused" "" lc mount 2 -o lock_hold=10,lock_hold_min=50
check "fsd says why (lock_hold_min)" says 'lock_hold_min (50 ms) is above lock_hold (10 ms)'

echo "-- end"
check "node1 removes everything" rm -rf "${M[1]}/shared" "${M[1]}/pingpong"
check "node1 unmounts" lc umount 1
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
