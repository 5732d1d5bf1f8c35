#!/usr/bin/env bash
# Concurrent journal handles (fsd/journal.c): many threads of one node
# change metadata at once, each in a handle of its own, all joining one
# running transaction. On two nodes of the local cluster:
#  - fsd_stress on node1, PROCS processes at once, each in a directory of
#    its own (their handles meet in the allocators, the parent directory
#    and the orphan dir): no failure, no warning from fsd;
#  - o2ctl mounts: node1 really had handles open at once (its peak is
#    above 1), and no handle ever waited for a block another open handle
#    had changed (journal_owner_waits 0: the locks kept them apart);
#  - node1 killed (kill -9 of all its daemons) while PROCS processes
#    create, write, rename and unlink so and an ackwriter appends fsync'ed
#    records: node2 replays node1's journal, written by concurrent
#    handles, and every acknowledged record is there;
# fsck.ocfs2 finds the volume clean at the end. CI also runs it on the
# sanitizer build, whose fsd aborts where two open handles change one
# block (FSD_LOCK_CHECKS).
#
# Processes of one node racing for the same names are fsd_stress.sh's
# (two a node): with more, the kernel now and then finds an inode it
# still uses made bad (its FUSE node id given again with another
# generation) and fails a close with EIO, on builds before concurrent
# handles too. FSD_HANDLES_PROCS (default 8) and FSD_HANDLES_OPS (1500,
# per process) make it longer; FSD_HANDLES_LOAD_S (3) is the work before
# the kill.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

PROCS=${FSD_HANDLES_PROCS:-8}
OPS=${FSD_HANDLES_OPS:-1500}
LOAD_S=${FSD_HANDLES_LOAD_S:-3}
STRESS=$BUILD/progs/fsd_stress
ACKW=$BUILD/progs/ackwriter
ACKS=$FSD_DIR/acks
mkdir -p "$ACKS"

lc_setup
trap 'cluster_cleanup 2 fsd' EXIT

M=()
stat_of() { lc exec "$1" "$O2CTL" mounts --json | jq ".[0].$2"; }
fsd_quiet() { ! lc log "$1" fsd | grep -E 'corrupt|Input/output|read-only|open handles'; }
recovered() { lc log "$1" fsd | grep -c 'slot [0-9]* recovered'; }
recovered_since() { (($(recovered 2) > $1)); }
acked() { grep -c '^A ' "$ACKS/ack.node1" 2>/dev/null; }

# stress DIR SEED OPS: one fsd_stress process there (a hang fails too).
stress() {
	timeout $((60 + $3 / 20)) "$STRESS" -n "$3" -p 1 -s "$2" "$1" >"$FSD_DIR/stress.$2" 2>&1 ||
	    { grep -v ' 0 failures;' "$FSD_DIR/stress.$2" | head -n 8; return 1; }
}

echo "-- setup"
if ! netd_up 2; then fail "localcluster up 2"; finish; exit 1; fi
for k in 1 2; do run_check "node$k mounts the volume" node_mount "$k"; done
note_dev 1
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
mkdir "${M[1]}/acked"
for ((p = 0; p < PROCS; p++)); do mkdir -p "${M[1]}/p$p" "${M[1]}/crash/p$p"; done

echo "-- node1: $PROCS processes at once, each in a directory of its own"
h0=$(stat_of 1 journal_handles)
pids=()
for ((p = 0; p < PROCS; p++)); do
	stress "${M[1]}/p$p" $((p + 1)) "$OPS" &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
check_eq "processes that saw a failure" 0 "$failed"
h1=$(stat_of 1 journal_handles)
peak=$(stat_of 1 journal_handles_peak)
echo "  $((h1 - h0)) handles, at most $peak open at once"
check "handles were open at once (peak $peak)" test "$peak" -gt 1
check_eq "no handle waited for another's block" 0 "$(stat_of 1 journal_owner_waits)"
check "node1's fsd logged no problem" fsd_quiet 1
check "node2 sees what node1 made" test -d "${M[2]}/p0"

echo "-- node1 killed while its handles are open"
for ((p = 0; p < PROCS; p++)); do
	"$STRESS" -n 1000000 -p 1 -s $((p + 100)) "${M[1]}/crash/p$p" >/dev/null 2>&1 &
	BG+=($!)
done
"$ACKW" write 1 1 "${M[1]}/acked" "$ACKS/ack.node1" 2>>"$FSD_DIR/writer.log" &
BG+=($!)
sleep "$LOAD_S"
check "node1 acknowledges records under load" test "$(acked)" -gt 0
before=$(recovered 2)
lc kill 1 >/dev/null
abort_mount 1
bg_stop_all
check "node2 recovers node1's slot" wait_for 30 recovered_since "$before"
echo "  records acknowledged: $(acked)"
check "every acknowledged record is on node2" "$ACKW" check 1 "$ACKS" "${M[2]}/acked"
check "node2 lists node1's last directory" ls "${M[2]}/crash"
check "node2's fsd logged no problem" fsd_quiet 2

echo "-- the volume"
lc umount 1 >/dev/null 2>&1	# the dead fsd's mount, which fsck.ocfs2 would stumble on
check "node2 unmounts" lc umount 2
check "fsck clean" fsck_clean "$IMG"

finish
